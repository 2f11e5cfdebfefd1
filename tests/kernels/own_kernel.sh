#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# own_kernel.sh IMAGE MODULES DIR: a kernel a user brings (a bzImage or a vmlinux; MODULES: its
# lib/modules/RELEASE directory, or empty where 9p and virtio are built in) in vm.sh's layout.
set -eu
image=$1
modules=$2
dir=$3
mkdir -p "$dir"
if [ "$(head -c 4 "$image" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
	cp "$image" "$dir/vmlinux"
else
	"${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/vmlinux.py" "$image" "$dir/vmlinux"
fi
rel=$(grep -a -m1 -o 'Linux version [^ ]*' "$dir/vmlinux" | head -n1 | cut -d' ' -f3)
[ -n "$rel" ] || rel=unknown
echo "$rel" >"$dir/release"
if [ -n "$modules" ]; then (cd "$modules" && pwd) >"$dir/modules"; else rm -f "$dir/modules"; fi
rm -f "$dir/initrd.gz"
echo "own_kernel.sh: Linux $rel from $image in $dir"
