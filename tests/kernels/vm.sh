#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vm.sh KERNEL_DIR RESULTS 'COMMAND': boots the kernel in KERNEL_DIR (fetch_kernel.sh's layout:
# vmlinux, release, root/lib/modules/RELEASE) under qemu, with this machine's root read-only as the
# guest's (KERNEL_DIR/modules may name another modules directory, KERNEL_IMAGE's), and runs COMMAND there as root from the current directory; its output comes to stdout and
# RESULTS/output, and vm.sh exits with its status.
# KVM where the CPU offers it (vmx/svm); software emulation (TCG) otherwise: a paravirtual KVM such
# as this kind of machine's cannot run a stock kernel. VM_CPUS (2), VM_MEMORY (4G), VM_TIMEOUT
# (seconds, 7200). VM_INIT=systemd boots systemd as the guest's PID 1 (this machine's, on its read-only
# root), which boots into a service of COMMAND (init.sh) that powers off after it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kdir=$(cd "$1" && pwd)
mkdir -p "$2"
results=$(cd "$2" && pwd)
command=$3
if ! command -v qemu-system-x86_64 >/dev/null; then
	echo "vm.sh: qemu-system-x86_64 is not installed (make deps)" >&2
	exit 1
fi
rel=$(cat "$kdir/release")
moddir=
if [ -s "$kdir/modules" ]; then
	moddir=$(cat "$kdir/modules")
elif [ -d "$kdir/root/lib/modules/$rel" ]; then
	moddir=$kdir/root/lib/modules/$rel
fi
initrd=$kdir/initrd.gz
if [ ! -s "$initrd" ] || [ "$here/init.sh" -nt "$initrd" ] || [ "$here/initramfs.py" -nt "$initrd" ]; then
	"${PYTHON:-/usr/bin/python3}" "$here/initramfs.py" "$moddir" "$here/init.sh" "$initrd"
fi
rm -f "$results/rc" "$results/rc.cmd" "$results/output"
printf '(\n%s\n)\necho $? >"%s/rc.cmd"\n' "$command" "$results" >"$results/cmd"
pwd >"$results/cwd"
boot="console=ttyS0 quiet panic=-1 mitigations=off tsc=reliable gp.results=$results gp.guest=$here/guest.sh gp.modules=$moddir"
if [ "${VM_INIT:-}" = systemd ]; then
	boot="$boot gp.init=systemd systemd.unit=gp-guest.service fstab=no"
fi
if grep -qwE 'vmx|svm' /proc/cpuinfo && [ -w /dev/kvm ]; then
	accel="-accel kvm -cpu host"
else
	accel="-accel tcg,thread=multi -cpu max"
fi
echo "vm.sh: Linux $rel (${accel%% -cpu*}), results in $results"
# shellcheck disable=SC2086
timeout "${VM_TIMEOUT:-7200}" qemu-system-x86_64 $accel -smp "${VM_CPUS:-2}" -m "${VM_MEMORY:-4G}" \
	-display none -monitor none -serial stdio -no-reboot -bios /usr/share/qemu/qboot.rom \
	-kernel "$kdir/vmlinux" -initrd "$initrd" \
	-append "$boot" \
	-fsdev local,id=root,path=/,security_model=passthrough,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=root,mount_tag=hostroot \
	-fsdev local,id=res,path="$results",security_model=passthrough \
	-device virtio-9p-pci,fsdev=res,mount_tag=results </dev/null || true
if [ ! -s "$results/rc" ]; then
	echo "vm.sh: the guest on Linux $rel gave no exit status (it crashed, or ran past VM_TIMEOUT=${VM_TIMEOUT:-7200} s)" >&2
	exit 1
fi
exit "$(cat "$results/rc")"
