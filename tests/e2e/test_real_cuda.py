# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Tracing the real CUDA runtime (libcudart.so.13 of the toolkit) and real nvcc-built programs.
Without a GPU every call fails fast (cudaErrorInsufficientDriver, 35), but the uprobes fire: call
counts and error codes must still be exact. Skipped, with the reason, where the toolkit is absent."""
import json
import os
import shutil
import subprocess

import pytest

import gp

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


def test_real_runtime_counts_and_error_codes(tmp_path, real_cudart):
    env = dict(os.environ, LD_LIBRARY_PATH=real_cudart)
    report, ref, _ = gp.trace(tmp_path, "basic_ops", env=env)
    proc = gp.check_all(report, ref)
    assert os.path.basename(proc["libraries"][0]["path"]).startswith("libcudart.so.13")
    assert os.path.realpath(proc["libraries"][0]["path"]) == os.path.realpath(os.path.join(real_cudart, "libcudart.so.13"))
    codes = {e["code"] for r in proc["cuda_api"] for e in r["error_codes"]}
    assert proc["api_calls"] > 60 and proc["api_errors"] == proc["api_calls"], "every call fails without a GPU"
    assert codes == {35}
    assert all(e["name"] == "cudaErrorInsufficientDriver" for r in proc["cuda_api"] for e in r["error_codes"])


def nvcc_build(tmp_path, cudart="shared"):
    if not os.path.exists(NVCC):
        pytest.skip("nvcc not installed (CUDA toolkit absent): cannot build a real CUDA program")
    exe = tmp_path / f"nvcc_kernels_{cudart}"
    src = os.path.join(gp.ROOT, "tests", "workloads", "nvcc_kernels.cu")
    subprocess.run([NVCC, "-cudart", cudart, "-o", str(exe), src], check=True, capture_output=True, timeout=300)
    return str(exe)


def trace_nvcc(tmp_path, exe, env):
    wl = gp.Workload(exe, tmp_path, env=env)
    report, _, lines = gp.trace_workload(wl, tmp_path, output_lines=1)
    return gp.process(report, wl.pid), json.loads(lines[0])


SCALE = "void ml::scale<float>(float*, float, int)"
SAXPY = "saxpy(int, float, float const*, float*)"


def test_nvcc_launch_stubs_name_kernels_on_the_simulator(tmp_path):
    """CUDA 13 stubs pass an opaque handle to cudaLaunchKernel: names come from the return
    address in __device_stub__*; launches succeed on the simulator and are counted exactly."""
    exe = nvcc_build(tmp_path)
    proc, did = trace_nvcc(tmp_path, exe, gp.sim_env())
    kernels = {k["name"]: k for k in proc["kernels"]}
    assert set(kernels) == {SCALE, SAXPY}
    assert kernels[SCALE]["launches"] == did["scale_ok"] == 5
    assert kernels[SAXPY]["launches"] == did["saxpy_ok"] == 3
    assert kernels[SCALE]["configs"] == [{"grid": [4, 2, 1], "block": [256, 1, 1], "smem_bytes": 128, "launches": 5}]
    # the stub and the host function spell it _ZN2ml5scale... or _ZN2mlL5scale... (internal linkage)
    assert kernels[SCALE]["mangled"] in ("_ZN2ml5scaleIfEEvPT_S1_i", "_ZN2mlL5scaleIfEEvPT_S1_i")
    calls = {r["name"]: r["calls"] for r in proc["cuda_api"]}
    assert calls["cudaLaunchKernel"] == 8  # __cudaLaunchKernel reaches it by a tail call: once each
    assert calls["__cudaGetKernel"] == 2  # once per kernel: the stub caches the handle


def test_nvcc_program_on_the_real_runtime(tmp_path, real_cudart):
    exe = nvcc_build(tmp_path)
    proc, did = trace_nvcc(tmp_path, exe, dict(os.environ, LD_LIBRARY_PATH=real_cudart))
    kernels = {k["name"]: k for k in proc["kernels"]}
    assert set(kernels) == {SCALE, SAXPY}
    assert kernels[SCALE]["calls"] == kernels[SCALE]["errors"] == did["scale_err"] == 5
    assert kernels[SAXPY]["calls"] == kernels[SAXPY]["errors"] == did["saxpy_err"] == 3
    calls = {r["name"]: (r["calls"], r["errors"]) for r in proc["cuda_api"]}
    assert calls["cudaLaunchKernel"] == (8, 8)


def test_stripped_program_names_kernels_from_their_registration(tmp_path):
    """A stripped nvcc program has no symbol to name its kernels by: the names come from
    __cudaRegisterFunction(handle, hostFun, deviceFun, deviceName), seen at start-up (-- CMD)."""
    exe = nvcc_build(tmp_path)
    subprocess.run(["strip", exe], check=True)
    out = tmp_path / "out"
    p = subprocess.run([gp.GPUPROBED, "-o", str(out), "--", exe], input="go\n", env=gp.sim_env(),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    did = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("{")][0])
    proc = json.load(open(out / "report.json"))["processes"][0]
    kernels = {k["name"]: k for k in proc["kernels"]}
    assert set(kernels) == {SCALE, SAXPY}
    assert kernels[SCALE]["launches"] == did["scale_ok"] == 5 and kernels[SAXPY]["launches"] == did["saxpy_ok"] == 3
    calls = {r["name"]: r["calls"] for r in proc["cuda_api"]}
    assert calls["__cudaRegisterFunction"] == 2
    # the leaves of the stacks carry the names too, without parameters
    leaves = {line.rsplit(" ", 1)[0].split(";")[-1]: int(line.rsplit(" ", 1)[1])
              for line in open(out / "stacks.folded").read().splitlines() if "[kernel]" in line}
    assert leaves == {"[kernel] ml::scale<float>": 5, "[kernel] saxpy": 3}


def test_runtime_linked_statically(tmp_path):
    """nvcc links cudart statically by default: the runtime's functions are local symbols of the
    executable, which gpuprobed finds and probes (libraries[].static)."""
    exe = nvcc_build(tmp_path, cudart="static")
    proc, did = trace_nvcc(tmp_path, exe, dict(os.environ))
    assert proc["libraries"] == [{"path": exe, "family": "cudart", "static": True, "build_id": gp.build_id(exe)}]
    kernels = {k["name"]: k["calls"] for k in proc["kernels"]}
    assert kernels == {SCALE: did["scale_ok"] + did["scale_err"], SAXPY: did["saxpy_ok"] + did["saxpy_err"]}
    calls = {r["name"]: r["calls"] for r in proc["cuda_api"]}
    assert calls["cudaLaunchKernel"] == 8 and calls["cudaMalloc"] == 1 and calls["cudaDeviceSynchronize"] == 1
