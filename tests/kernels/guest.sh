#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# guest.sh RESULTS: PID 1 of the guest (or systemd's service of it: VM_INIT=systemd), on this
# machine's root (read-only; tmpfs for /tmp, /run, /var/tmp): the file systems a tracer and its
# tests need, then RESULTS/cmd from RESULTS/cwd, its output on the console and in RESULTS/output,
# its exit status in RESULTS/rc; then power off.
results=$1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root PYTHONDONTWRITEBYTECODE=1
mkdir -p /dev/shm /dev/pts
# each unless mounted already (systemd as PID 1 mounts them itself: VM_INIT=systemd)
at() { mountpoint -q "$2" || mount -t "$1" -o "${3:-defaults}" "$1" "$2"; }
at tmpfs /dev/shm mode=1777
at devpts /dev/pts
at tracefs /sys/kernel/tracing
at debugfs /sys/kernel/debug
at bpf /sys/fs/bpf
at cgroup2 /sys/fs/cgroup
ip link set lo up
echo "guest: Linux $(uname -r), $(nproc) CPUs, kernel.perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)"
cd "$(cat "$results/cwd")" || exit 1
sh "$results/cmd" 2>&1 | tee "$results/output"
# the command's status, not tee's
rc=$(cat "$results/rc.cmd" 2>/dev/null || echo 255)
echo "$rc" >"$results/rc"
sync
poweroff -f
