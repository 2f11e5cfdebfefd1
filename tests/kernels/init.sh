#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The guest's /init (busybox): loads the modules that mounting this machine's root needs, mounts
# it read-only over virtio-9p (cache=loose: stable inodes, which uprobes need), the results share
# read-write at its own path (gp.results=), and hands over to gp.guest= on the real root.
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
exec switch_root /newroot /bin/sh "$guest" "$results"
