#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# compat.sh SIMGPU_DIR — compatibility of the simulated libcudart.so.13 with
# real CUDA binaries, run by `make simgpu-unit`. Each check prints PASS,
# FAIL or SKIP (with the reason) and needs the CUDA toolkit (CUDA_HOME,
# default /usr/local/cuda):
#   toolkit  a C program compiled by gcc against the toolkit's headers and
#            linked against the real libcudart.so.13 runs on the simulator
#            (LD_LIBRARY_PATH); the same program linked against the
#            simulator loads the real library (the version node matches).
#   nvcc     a .cu with two kernels (one a template) built by
#            `nvcc -cudart shared`, plain and with --default-stream
#            per-thread: the simulator sees the right kernel names and
#            launch counts through the CUDA 13 launch stubs.
#   driver   the toolkit's cuda.h and the simulator's agree on the sizes,
#            offsets and enum values a driver program uses; a driver
#            program built against the toolkit's cuda.h and stub libcuda.so
#            runs on the simulator's libcuda.so.1.
set -u
[ $# -eq 1 ] || { echo "usage: $0 SIMGPU_DIR" >&2; exit 2; }
sim=$(cd "$1" && pwd) || exit 2
src=$(cd "$(dirname "$0")" && pwd)
out="$sim/compat"
cuda=${CUDA_HOME:-/usr/local/cuda}
fails=0
mkdir -p "$out"

pass() { echo "PASS compat-$1"; }
skip_because() { echo "SKIP compat-$1"; }
fail() { echo "FAIL compat-$1"; fails=$((fails + 1)); }

# ---- toolkit headers, real library -------------------------------------------------
if [ ! -f "$cuda/include/cuda_runtime_api.h" ]; then
	skip_because "toolkit: no CUDA toolkit headers at $cuda/include (set CUDA_HOME)"
else
	real=""
	for d in "$cuda/lib64" "$cuda/lib" "$cuda/targets/x86_64-linux/lib"; do
		[ -e "$d/libcudart.so.13" ] && { real=$d; break; }
	done
	cflags="-std=gnu11 -O2 -Wall -Wextra -Werror -rdynamic -I$cuda/include"
	if [ -n "$real" ]; then
		lib="-L$real -l:libcudart.so.13"
	else
		lib="-L$sim -l:libcudart.so.13"
	fi
	if ! gcc $cflags "$src/compat_toolkit.c" -o "$out/compat_toolkit" $lib >"$out/compat_toolkit.build.log" 2>&1; then
		fail "toolkit: build failed (see $out/compat_toolkit.build.log)"
	elif env SIMGPU_DEVICE_MEM_MB=1234 SIMGPU_KERNEL_US=2000 SIMGPU_LOG=0 LD_LIBRARY_PATH="$sim" \
		"$out/compat_toolkit"; then
		pass "toolkit: gcc + toolkit headers${real:+ + real libcudart.so.13} -> simulator"
	else
		fail "toolkit: the program failed on the simulator"
	fi
	if [ -z "$real" ]; then
		skip_because "toolkit-reverse: no real libcudart.so.13 under $cuda"
	elif ! gcc $cflags "$src/compat_toolkit.c" -o "$out/compat_toolkit_sim" -L"$sim" -l:libcudart.so.13 \
		>>"$out/compat_toolkit.build.log" 2>&1; then
		fail "toolkit-reverse: build failed (see $out/compat_toolkit.build.log)"
	else
		# no GPU here: the real runtime answers cudaGetDeviceCount with an error (exit 3)
		env LD_LIBRARY_PATH="$real" "$out/compat_toolkit_sim" >"$out/compat_toolkit_sim.log" 2>&1
		rc=$?
		if [ $rc -eq 3 ] || [ $rc -eq 0 ]; then
			pass "toolkit-reverse: linked against the simulator, ran on the real library ($(tail -n1 "$out/compat_toolkit_sim.log"))"
		else
			fail "toolkit-reverse: exit $rc: $(cat "$out/compat_toolkit_sim.log")"
		fi
	fi
fi

# ---- nvcc -cudart shared ----------------------------------------------------------------
nvcc=$(command -v nvcc 2>/dev/null || true)
[ -z "$nvcc" ] && [ -x "$cuda/bin/nvcc" ] && nvcc="$cuda/bin/nvcc"
# count LOG PATTERN: lines of the call log that contain PATTERN
count() { grep -cF -- "$2" "$1" || true; }
check_nvcc() { # name, extra nvcc flags, launch symbol
	name=$1 flags=$2 sym=$3
	bin="$out/$name" log="$out/$name.log"
	if ! "$nvcc" -cudart shared $flags -o "$bin" "$src/compat_nvcc.cu" >"$log.build" 2>&1; then
		fail "$name: nvcc failed (see $log.build)"
		return
	fi
	if ! env SIMGPU_LOG=1 SIMGPU_KERNEL_TIMES=scale=3000 LD_LIBRARY_PATH="$sim" "$bin" 2>"$log"; then
		fail "$name: the program failed on the simulator (see $log)"
		return
	fi
	s=$(count "$log" "$sym(kernel=_Z5scalePffi ")
	f=$(count "$log" "$sym(kernel=_Z4fillIfEvPT_S0_i ")
	i=$(count "$log" "$sym(kernel=_Z4fillIiEvPT_S0_i ")
	all=$(count "$log" "cudaLaunchKernel")
	r=$(count "$log" "__cudaRegisterFunction(")
	if [ "$s" = 3 ] && [ "$f" = 1 ] && [ "$i" = 2 ] && [ "$all" = 6 ] && [ "$r" = 3 ]; then
		pass "$name: $sym saw scale x3, fill<float> x1, fill<int> x2, 3 kernels registered"
	else
		fail "$name: launches scale=$s fill<float>=$f fill<int>=$i total=$all registered=$r (see $log)"
	fi
}
if [ -z "$nvcc" ]; then
	skip_because "nvcc: nvcc not found (PATH or $cuda/bin)"
else
	check_nvcc nvcc "" cudaLaunchKernel
	check_nvcc nvcc-ptds "--default-stream per-thread" cudaLaunchKernel_ptsz
fi

# ---- the driver: toolkit cuda.h + stub libcuda.so -> simulator -------------------------------
stub=""
for d in "$cuda/lib64/stubs" "$cuda/targets/x86_64-linux/lib/stubs" "$cuda/lib/stubs"; do
	[ -e "$d/libcuda.so" ] && { stub=$d; break; }
done
if [ ! -f "$cuda/include/cuda.h" ] || [ -z "$stub" ]; then
	skip_because "driver: no toolkit cuda.h and stub libcuda.so under $cuda"
else
	dflags="-std=gnu11 -O2 -Wall -Wextra -Werror"
	log="$out/compat_driver.build.log"
	if ! gcc $dflags -I"$cuda/include" "$src/compat_driver.c" -o "$out/compat_driver" -L"$stub" -lcuda >"$log" 2>&1 ||
		! gcc $dflags -I"$src/../../include" "$src/compat_driver.c" -o "$out/compat_driver_sim" \
			-L"$sim" -l:libcuda.so.1 >>"$log" 2>&1; then
		fail "driver: build failed (see $log)"
	else
		LD_LIBRARY_PATH="$sim" "$out/compat_driver" --layout >"$out/layout.toolkit" 2>&1
		LD_LIBRARY_PATH="$sim" "$out/compat_driver_sim" --layout >"$out/layout.sim" 2>&1
		if ! diff -u "$out/layout.toolkit" "$out/layout.sim" >"$out/layout.diff"; then
			fail "driver-layout: the simulator's cuda.h differs from the toolkit's: $(head -c 600 "$out/layout.diff")"
		else
			pass "driver-layout: cuda.h sizes, offsets and enum values match the toolkit's ($(wc -l <"$out/layout.sim") facts)"
		fi
		if env SIMGPU_DEVICE_MEM_MB=1234 SIMGPU_KERNEL_TIMES=_Z9compat_fnPfi=3000 SIMGPU_LOG=0 \
			LD_LIBRARY_PATH="$sim" "$out/compat_driver"; then
			pass "driver: gcc + toolkit cuda.h + stub libcuda.so -> simulator"
		else
			fail "driver: the program failed on the simulator"
		fi
	fi
fi

[ $fails -eq 0 ] || { echo "compat: $fails check(s) failed" >&2; exit 1; }
