# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""py_bench_calls — a traced call from a given depth of Python frames, many times, for make bench.

Reaches the (simulated) runtime through ctypes like py_stacks.py and calls cudaStreamSynchronize on
an idle stream (a call that carries a stack and returns at once) --iters times from --depth nested
Python functions (the frames the stack walk records, the interpreter's <module> and the loop's own
frame beside). Protocol as bench_calls: --wait prints "READY <pid>" and runs on a line of stdin; the
result is one JSON line (ns per call on its own CLOCK_MONOTONIC); --hold then waits for stdin to close.

usage: python3 py_bench_calls.py [--iters N] [--depth D] [--wait] [--hold]
"""
import ctypes
import json
import os
import sys
import time

rt = ctypes.CDLL("libcudart.so.13")
sync = rt.cudaStreamSynchronize
sync.argtypes = [ctypes.c_void_p]
sync.restype = ctypes.c_int


def loop(iters):
    for _ in range(iters):
        err = sync(None)
        if err:
            sys.exit(f"cudaStreamSynchronize: error {err}")


def nest(levels, iters):
    """levels more Python frames, then the loop."""
    if levels > 0:
        return nest(levels - 1, iters)
    return loop(iters)


def main():
    args, iters, depth = sys.argv[1:], 200000, 16
    if "--iters" in args:
        iters = int(args[args.index("--iters") + 1])
    if "--depth" in args:
        depth = int(args[args.index("--depth") + 1])
    if not 3 <= depth <= 60:
        sys.exit("--depth must be between 3 and 60 (the Python frames of the calls: <module>, main, nest..., loop)")
    if "--wait" in args:
        print(f"READY {os.getpid()}", flush=True)
        sys.stdin.readline()
    t0 = time.monotonic_ns()
    nest(depth - 4, iters)  # <module> -> main -> nest x (depth - 3) -> loop: depth frames
    ns = (time.monotonic_ns() - t0) / iters
    print(json.dumps({"iters": iters, "depth": depth, "call_ns": round(ns, 1)}), flush=True)
    if "--hold" in args:
        sys.stdin.read()


if __name__ == "__main__":
    main()
