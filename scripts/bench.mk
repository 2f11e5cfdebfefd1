# make bench — overhead against the uprobe floor and against bpftrace, in one run
# (scripts/bench.py): counting and stack-capture modes, the symbolization of 131,072
# distinct stacks, the scheduler tracepoint, attach time, unwind tables of the largest ELF files
# here (scripts/bench_unwind.py), the NVML sampling thread (scripts/bench_nvml.py); writes docs/performance.md.
# make bench-quick — a smoke run of the same (one short run each, ~15 s), written to
# $(BUILD)/bench/performance.md, leaving docs/performance.md alone.
# Both take BENCH_ARGS (scripts/bench.py --help), e.g. BENCH_ARGS="--reps 3 --depth 32".
BENCH_ARGS ?=
.PHONY: bench bench-quick
bench: deps
	$(MAKE) all $(BUILD)/unit/uwtable_tool
	$(PYTHON) scripts/bench.py --build $(BUILD) $(BENCH_ARGS)

bench-quick: deps
	$(MAKE) all $(BUILD)/unit/uwtable_tool
	$(PYTHON) scripts/bench.py --build $(BUILD) --quick --out $(BUILD)/bench/performance.md $(BENCH_ARGS)
