#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The golden captures and their expected outputs (tests/e2e/test_golden.py):
#
#   tests/golden/make_golden.sh outputs    what `gpuprobed report` makes of each stored capture becomes
#                                          the expected output (after a deliberate change of a report's
#                                          content: review the diff before committing it)
#   tests/golden/make_golden.sh captures   records the captures anew (root: real BPF), then the outputs
#
# The captures are recorded with the simulated GPU's files copied under /tmp/gpuprobed-golden/ and the
# host named "golden" (a UTS namespace), so no path or name of the machine that made them is stored.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${GP_BUILD:-$root/build}
gp=$build/gpuprobed
cases=(demo nccl)

# Run in /tmp/gpuprobed-golden (bin/, lib/): each writes CASE.gpz and out/ there.
capture_demo() { # launch mode, call stacks, the timeline with scheduling tracks
	SIMGPU_KERNEL_US=400 bin/gpuprobed --timeline-sched --record demo.gpz -o out -- \
		env LD_LIBRARY_PATH=/tmp/gpuprobed-golden/lib bin/demo_train --steps 3
}
capture_nccl() { # two ranks in separate processes, in-kernel aggregation
	bin/gpuprobed --aggregate --no-stacks --no-timeline --record nccl.gpz -o out -- \
		env LD_LIBRARY_PATH=/tmp/gpuprobed-golden/lib bin/nccl_ranks --ranks 2 --iters 2 --ref-dir out
}

outputs() {
	for c in "${cases[@]}"; do
		rm -rf "$here/$c"
		mkdir -p "$here/$c"
		# run where the capture lies, so the report names it by its file name alone
		(cd "$here" && "$gp" report "$c.gpz" -o "$c" >/dev/null)
		[ -f "$here/$c/trace.json" ] && gzip -n -9 "$here/$c/trace.json"
		rm -f "$here/$c/capture.gpz"
		echo "make_golden: $c: $(cd "$here/$c" && echo *)"
	done
}

captures() {
	[ "$(id -u)" = 0 ] || { echo "make_golden: recording needs root (real BPF)" >&2; exit 1; }
	rm -rf /tmp/gpuprobed-golden
	mkdir -p /tmp/gpuprobed-golden/lib /tmp/gpuprobed-golden/bin
	cp -a "$build"/simgpu/*.so* /tmp/gpuprobed-golden/lib/
	cp "$gp" "$build"/workloads/{demo_train,nccl_ranks} /tmp/gpuprobed-golden/bin/
	for c in "${cases[@]}"; do
		rm -rf /tmp/gpuprobed-golden/out
		unshare --uts bash -c "hostname golden && cd /tmp/gpuprobed-golden && $(declare -f "capture_$c") && \
			capture_$c" >/dev/null
		cp "/tmp/gpuprobed-golden/$c.gpz" "$here/$c.gpz"
	done
	rm -rf /tmp/gpuprobed-golden
	outputs
}

case "${1:-}" in
outputs) outputs ;;
captures) captures ;;
*) echo "usage: $0 outputs|captures" >&2; exit 2 ;;
esac
