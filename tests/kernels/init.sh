#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The guest's /init (busybox): loads the modules that mounting this machine's root needs, mounts
# it read-only over virtio-9p (cache=loose: stable inodes, which uprobes need), the results share
# read-write at its own path (gp.results=), and hands over to gp.guest= on the real root, or, with
# gp.init=systemd, to systemd as PID 1, which boots into a unit of gp.guest= (vm.sh VM_INIT=systemd).
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
while read -r m; do insmod "/modules/$m" || echo "init: insmod $m failed"; done </modules/order
for a in $(cat /proc/cmdline); do
	case $a in
	gp.results=*) results=${a#gp.results=} ;;
	gp.guest=*) guest=${a#gp.guest=} ;;
	gp.modules=*) modules=${a#gp.modules=} ;;
	gp.init=*) init=${a#gp.init=} ;;
	esac
done
fail() {
	echo "init: $*"
	poweroff -f
}
opts=trans=virtio,version=9p2000.L,cache=loose,msize=262144
mount -t 9p -o "$opts,ro" hostroot /newroot || fail "cannot mount this machine's root (9p)"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 results "/newroot$results" || fail "cannot mount the results share"
for d in tmp run var/tmp; do mount -t tmpfs -o mode=1777 tmpfs "/newroot/$d"; done
# the kernel's modules where modprobe looks, where this machine's root has that directory to mount on
[ -n "$modules" ] && [ -d /newroot/lib/modules ] && mount --bind "/newroot$modules" /newroot/lib/modules
mount --move /dev /newroot/dev
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
if [ "$init" = systemd ]; then
	# what a booted system writes beside /run and /tmp: units' state and logs directories
	for d in var/lib var/log var/cache; do mount -t tmpfs -o mode=755 tmpfs "/newroot/$d"; done
	# the command as the unit booted into (systemd.unit=gp-guest.service: vm.sh), in /run's units
	mkdir -p /newroot/run/systemd/system
	printf '%s\n' "[Unit]" "Description=gpuprobed's guest command (tests/kernels/guest.sh)" \
		"Wants=dbus.service" "After=dbus.service" \
		"[Service]" "Type=oneshot" "ExecStart=/bin/sh $guest $results" \
		"StandardOutput=journal+console" "StandardError=journal+console" \
		>/newroot/run/systemd/system/gp-guest.service
	# an empty $container says "no container": else the root's /.dockerenv (this kind of machine
	# has one) makes systemd take its options from its arguments, never the kernel command line
	container= exec switch_root /newroot /lib/systemd/systemd
fi
exec switch_root /newroot /bin/sh "$guest" "$results"
