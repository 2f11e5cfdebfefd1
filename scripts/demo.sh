#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# make demo: run the bundled demo workload (a small training loop on the simulated GPU),
# attach gpuprobed to it while it runs, and write ./profile_output/.
#   usage: scripts/demo.sh [BUILD_DIR]
set -euo pipefail

build=${1:-build}
out=${GP_DEMO_OUT:-profile_output}
if [ "$(id -u)" != 0 ]; then
	echo "demo: gpuprobed loads BPF programs and needs root: run 'sudo make demo'" >&2
	exit 1
fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing || true

tmp=$(mktemp -d)
wl_pid=
gp_pid=
cleanup() {
	[ -n "$wl_pid" ] && kill "$wl_pid" 2>/dev/null || true
	[ -n "$gp_pid" ] && kill -INT "$gp_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# The workload starts and waits at its handshake, as a job that is already running would be.
mkfifo "$tmp/go"
# Kernels take 400 us on the simulated GPU, copies move at PCIe-like speeds.
SIMGPU_KERNEL_US=400 LD_LIBRARY_PATH="$build/simgpu" \
	"$build/workloads/demo_train" --wait --steps 40 <"$tmp/go" >"$tmp/workload.out" 2>&1 &
wl_pid=$!
exec 3>"$tmp/go"
for _ in $(seq 100); do grep -q READY "$tmp/workload.out" && break; sleep 0.1; done
grep -q READY "$tmp/workload.out" || { echo "demo: the workload did not start:" >&2; cat "$tmp/workload.out" >&2; exit 1; }

: >"$tmp/gpuprobed.err"
echo "\$ sudo gpuprobed --pid $wl_pid -o $out"
"$build/gpuprobed" --pid "$wl_pid" -o "$out" 2> >(tee "$tmp/gpuprobed.err" >&2) &
gp_pid=$!
for _ in $(seq 300); do grep -q tracing "$tmp/gpuprobed.err" && break; sleep 0.1; done
grep -q tracing "$tmp/gpuprobed.err" || { echo "demo: gpuprobed did not start tracing" >&2; exit 1; }

echo go >&3
exec 3>&-
wait "$wl_pid"; wl_pid=
status=0
wait "$gp_pid" || status=$?
gp_pid=
sleep 0.2 # let the tee finish
[ "$status" = 0 ] || { echo "demo: gpuprobed exited with status $status" >&2; exit "$status"; }

echo
echo "== $out/report.md (first sections; the whole report is in the file) =="
sed -n '/^## Process/,/^### Memory/p' "$out/report.md"
echo
echo "== $out/report.md, who launches what (from the call stacks) =="
sed -n '/^### Who launches what/,/^#### Top call paths per kind of transfer/p' "$out/report.md" | sed '$d'
echo
echo "Reports: $out/report.md and $out/report.json"
echo "Call stacks: $out/flamegraph.svg (open it in a browser), $out/speedscope.json (speedscope.app),"
echo "             $out/stacks.folded, stacks.bytes.folded, stacks.host_ns.folded (flamegraph.pl / inferno)"
echo "             $out/profile.pb.gz (go tool pprof -http=:8080 $out/profile.pb.gz; Parca, Pyroscope)"
echo "Timeline:    $out/trace.json (ui.perfetto.dev, or Chrome DevTools' Performance panel)"
