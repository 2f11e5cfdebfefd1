#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# fetch_kernel.sh VERSION DIR: Debian's own kernel VERSION (5.10, 6.1 or 6.12), downloaded, not
# installed, into DIR: DIR/vmlinux (the uncompressed image qemu boots through its PVH entry),
# DIR/root/lib/modules/RELEASE (its modules, depmod'ed) and DIR/release.
# The package comes through a private apt configuration (its own sources list, lists and cache
# under DIR/apt) from the mirror this machine's apt uses: nothing of the machine's apt changes.
# Idempotent: a DIR that has its release is left as it is.
set -eu
ver=$1
dir=$2
case $ver in
5.10) suite=bullseye ;;
6.1) suite=bookworm ;;
6.12) suite=bookworm-backports ;;
*)
	echo "fetch_kernel.sh: no Debian kernel '$ver' (5.10, 6.1 or 6.12; KERNEL_IMAGE=... boots any other)" >&2
	exit 2
	;;
esac
[ -s "$dir/release" ] && [ -s "$dir/vmlinux" ] && exit 0
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/apt/sources.list.d"
dir=$(cd "$dir" && pwd)
mirror=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
security=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian-security\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
[ -n "$security" ] || security=http://security.debian.org/debian-security
key=/usr/share/keyrings/debian-archive-keyring.gpg
{
	echo "deb [signed-by=$key] $mirror $suite main"
	# a release's kernel updates come through its security suite
	case $suite in *-backports) ;; *) echo "deb [signed-by=$key] $security $suite-security main" ;; esac
} >"$dir/apt/sources.list"
set -- -o Dir::Etc::sourcelist="$dir/apt/sources.list" -o Dir::Etc::sourceparts="$dir/apt/sources.list.d" \
	-o Dir::State::Lists="$dir/apt/lists" -o Dir::Cache="$dir/apt/cache" -o Dir::State::status=/dev/null \
	-o APT::Sandbox::User=root -qq
apt-get "$@" update
# the meta package names the suite's current kernel
pkg=$(apt-cache "$@" depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n1)
if [ -z "$pkg" ]; then
	echo "fetch_kernel.sh: $suite at $mirror names no linux-image package" >&2
	exit 1
fi
rm -rf "$dir/root" "$dir"/*.deb
(cd "$dir" && apt-get "$@" download "$pkg")
dpkg-deb -x "$dir"/"$pkg"_*.deb "$dir/root"
rel=${pkg#linux-image-}
rel=${rel%-unsigned}
depmod -b "$dir/root" "$rel"
"${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/vmlinux.py" "$dir/root/boot/vmlinuz-$rel" "$dir/vmlinux"
rm -f "$dir"/*.deb
echo "$rel" >"$dir/release"
echo "fetch_kernel.sh: $pkg ($suite) in $dir"
