# tests/kernels — the suite on the kernels GPU nodes run, each in a VM (docs/testing.md "Kernels").
#   make test-kernel KERNEL=6.1        the whole e2e suite on Debian's 6.1 (5.10, 6.1, 6.12)
#   make test-kernel KERNEL_IMAGE=bzImage [KERNEL_MODULES=.../lib/modules/REL]   on a kernel of one's own
#   make test-kernels                  5.10, 6.1, 6.12 in VMs, then the host's kernel; a table at the end
#   make kernel-smoke                  make test's part: a few exact tests on Debian 12's 6.1 (SMOKE_KERNEL=5.10: the oldest)
#   make systemd-smoke                 make test's part: the unit under a real systemd (PID 1 of a 6.1 guest)
#   make bench-kernel KERNEL=6.1       make bench-quick in the VM: the stand-ins' costs there (docs/performance-kernels.md)
# KERNEL_TESTS narrows the suite (pytest's arguments); VM_CPUS, VM_MEMORY, VM_TIMEOUT go to vm.sh.
KERNELS        ?= 5.10 6.1 6.12
KERNEL         ?= 6.1
KERNEL_IMAGE   ?=
KERNEL_MODULES ?=
KERNEL_TESTS   ?= tests/e2e
# make test's: Debian 12's own 6.1. SMOKE_KERNEL=5.10, the oldest, runs every stand-in of bpf/common.bpf.h
# (docs/design.md "Kernels"); its guest once stalled inside make test (docs/testing.md), so not by default yet.
SMOKE_KERNEL   ?= 6.1
KERNEL_SMOKE   := tests/e2e/test_exact.py::test_every_api_once_exact \
                  tests/e2e/test_exact.py::test_attach_to_running_process_counts_only_what_follows \
                  tests/e2e/test_stacks_real.py::test_nofp_counts_exact \
                  tests/e2e/test_stacks_real.py::test_nofp_stacks_equal_backtrace \
                  tests/e2e/test_stacks_real.py::test_python_counts_exact \
                  tests/e2e/test_stacks_real.py::test_python_frames_in_native_stacks \
                  tests/e2e/test_stacks_real.py::test_code_replaced_at_one_address \
                  tests/e2e/test_lifecycle.py::test_duration_stops_by_itself \
                  tests/e2e/test_overlay_mounts.py \
                  tests/e2e/test_kernel.py
KERNEL_DIR      = $(BUILD)/kernels/$(if $(KERNEL_IMAGE),own,$(KERNEL))
KERNEL_PYTEST   = $(PYTHON) -m pytest -p no:cacheprovider -v -ra

.PHONY: test-kernel test-kernels kernel-smoke systemd-smoke kernel-fetch bench-kernel
kernel-fetch:
	@if [ -n "$(KERNEL_IMAGE)" ]; then tests/kernels/own_kernel.sh "$(KERNEL_IMAGE)" "$(KERNEL_MODULES)" $(KERNEL_DIR); \
	else tests/kernels/fetch_kernel.sh $(KERNEL) $(KERNEL_DIR); fi

test-kernel: deps
	$(MAKE) all unit-build
	$(MAKE) kernel-fetch
	tests/kernels/vm.sh $(KERNEL_DIR) $(KERNEL_DIR)/results "$(KERNEL_PYTEST) $(KERNEL_TESTS)"

# The guest's root is this machine's, read-only: the page goes to the results' share.
bench-kernel: deps
	$(MAKE) all $(BUILD)/unit/uwtable_tool
	$(MAKE) kernel-fetch
	tests/kernels/vm.sh $(KERNEL_DIR) $(KERNEL_DIR)/bench \
		"$(PYTHON) scripts/bench.py --build $(BUILD) --quick --out $(KERNEL_DIR)/bench/performance.md $(BENCH_ARGS)"

# One vCPU unless VM_CPUS says otherwise: under software emulation two vCPUs stall now and then while
# gpuprobed attaches (6.1: a soft lockup on one vCPU while the other's timer stops, 1 smoke run of 6 and
# once in a whole suite; 6.12: a stale int3 after text patching, 3 boots of 5; docs/testing.md).
kernel-smoke: all
	$(MAKE) kernel-fetch KERNEL=$(SMOKE_KERNEL)
	VM_CPUS=$${VM_CPUS:-1} VM_TIMEOUT=1200 tests/kernels/vm.sh $(BUILD)/kernels/$(SMOKE_KERNEL) $(BUILD)/kernels/$(SMOKE_KERNEL)/smoke \
		"$(KERNEL_PYTEST) $(KERNEL_SMOKE)"

# The unit (systemd/gpuprobed.service, with the drop-in `make install` adds for perf_event_paranoid 3)
# started by systemd itself: where PID 1 here is not systemd (a container), in a guest whose PID 1 is
# this machine's systemd (vm.sh VM_INIT=systemd): the one test that needs it (the others run on the host).
SYSTEMD_SMOKE := tests/e2e/test_systemd_sandbox.py::test_systemd_runs_the_unit_transiently
systemd-smoke: all
	$(MAKE) kernel-fetch KERNEL=$(SMOKE_KERNEL)
	VM_INIT=systemd VM_CPUS=$${VM_CPUS:-1} VM_TIMEOUT=1200 tests/kernels/vm.sh $(BUILD)/kernels/$(SMOKE_KERNEL) \
		$(BUILD)/kernels/$(SMOKE_KERNEL)/systemd "$(KERNEL_PYTEST) $(SYSTEMD_SMOKE)"

# Every kernel, whatever one of them gives; the summary line of each at the end, and the status of the worst.
test-kernels: deps
	$(MAKE) all
	@rc=0; for k in $(KERNELS); do \
		$(MAKE) --no-print-directory test-kernel KERNEL=$$k || rc=1; done; \
	mkdir -p $(BUILD)/kernels; $(KERNEL_PYTEST) $(KERNEL_TESTS) 2>&1 | tee $(BUILD)/kernels/host.output; \
	[ $${PIPESTATUS[0]} = 0 ] || rc=1; \
	echo "make test-kernels:"; for k in $(KERNELS); do \
		printf '  Linux %-6s %s\n' $$k "$$(tail -n1 $(BUILD)/kernels/$$k/results/output 2>/dev/null || echo 'no result')"; done; \
	printf '  host %-7s %s\n' "$$(uname -r)" "$$(tail -n1 $(BUILD)/kernels/host.output)"; exit $$rc
