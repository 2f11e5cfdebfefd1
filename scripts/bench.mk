# make bench — overhead against the uprobe floor and against bpftrace, in one run
# (scripts/bench.py); writes docs/performance.md.
BENCH_ARGS ?=
.PHONY: bench
bench: deps
	$(MAKE) all
	$(PYTHON) scripts/bench.py --build $(BUILD) $(BENCH_ARGS)
