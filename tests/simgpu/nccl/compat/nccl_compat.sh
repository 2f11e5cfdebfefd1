#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# nccl_compat.sh SIMGPU_DIR — the simulated libnccl.so.2 against the real NCCL
# (run by test_simgpu_nccl; needs the toolkit's nccl.h and libnccl.so.2 under
# CUDA_HOME, default /usr/local/cuda). Prints PASS, FAIL or SKIP lines; exits
# 1 when a check failed.
#   real->sim  nccl_compat.c built with the real nccl.h, cuda_runtime.h and
#              libraries runs on the simulator (LD_LIBRARY_PATH): 2 ranks
#   sim->real  built against the simulator, it loads the real libnccl.so.2
#              (unversioned symbols on both sides): version and error strings
set -u
[ $# -eq 1 ] || { echo "usage: $0 SIMGPU_DIR" >&2; exit 2; }
sim=$(cd "$1" && pwd) || exit 2
src=$(cd "$(dirname "$0")" && pwd)
inc=$(cd "$src/../../include" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
fails=0

if [ ! -f "$cuda/include/nccl.h" ] || [ ! -e "$cuda/lib64/libnccl.so.2" ] || [ ! -e "$cuda/lib64/libcudart.so" ]; then
	echo "SKIP nccl-compat: no nccl.h / libnccl.so.2 / libcudart.so under $cuda (set CUDA_HOME)"
	exit 0
fi

# a directory per run: concurrent runs do not share binaries; kept only when a check failed
out=$(mktemp -d "$sim/compat-nccl.XXXXXX") || exit 2

if gcc -std=gnu11 -O1 -I"$cuda/include" "$src/nccl_compat.c" -o "$out/real" -L"$cuda/lib64" -lnccl -lcudart \
	2>"$out/real.log"; then
	if got=$(LD_LIBRARY_PATH="$sim" SIMGPU_DEVICES=2 "$out/real" 2>>"$out/real.log") &&
		[ "$got" = "OK version 22809" ]; then
		echo "PASS nccl-compat real->sim: real nccl.h + libraries, run on the simulator ($got)"
	else
		echo "FAIL nccl-compat real->sim: '$got' (see $out/real.log)"; fails=$((fails + 1))
	fi
else
	echo "FAIL nccl-compat real->sim: does not compile with the real nccl.h (see $out/real.log)"; fails=$((fails + 1))
fi

if gcc -std=gnu11 -O1 -I"$inc" "$src/nccl_compat.c" -o "$out/sim" -L"$sim" -lnccl -lcudart 2>"$out/sim.log"; then
	want="version $(sed -n 's/^#define NCCL_VERSION_CODE \([0-9]*\).*/\1/p' "$cuda/include/nccl.h"): invalid usage (run with NCCL_DEBUG=WARN for details)"
	if got=$(LD_LIBRARY_PATH="$cuda/lib64" "$out/sim" version 2>>"$out/sim.log") && [ "$got" = "$want" ]; then
		echo "PASS nccl-compat sim->real: built against the simulator, ran on the real libnccl.so.2 ($got)"
	else
		echo "FAIL nccl-compat sim->real: '$got', want '$want' (see $out/sim.log)"; fails=$((fails + 1))
	fi
else
	echo "FAIL nccl-compat sim->real: does not compile with the simulator's nccl.h (see $out/sim.log)"; fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] && rm -rf "$out"
[ "$fails" -eq 0 ]
