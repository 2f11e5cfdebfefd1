# make bench — overhead against the uprobe floor and against bpftrace (scripts/bench.sh).
.PHONY: bench
bench: deps
	$(MAKE) all
	scripts/bench.sh $(BUILD)
