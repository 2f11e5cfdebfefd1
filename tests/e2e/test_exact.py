# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The report equals what the workload did, exactly: calls, error codes, bytes by direction and
memory kind, allocations, leaks, kernels, threads — and the kernel's own hit counters agree."""
import os

import gp


def test_every_api_once_exact(tmp_path):
    """basic_ops uses every traced runtime API; the report must equal its own accounting."""
    report, ref, tr = gp.trace(tmp_path, "basic_ops")
    proc = gp.check_all(report, ref)
    assert proc["exited"] and proc["comm"] == "basic_ops"
    assert not proc["traced_from_start"]  # attached with --pid
    assert gp.runtime_libs(proc) == [os.path.realpath(os.path.join(gp.SIMGPU, "libcudart.so.13"))]
    # the runtime loads the driver (as the real one does): probed too, its calls nested in the runtime's
    assert [l["path"] for l in proc["libraries"] if l["family"] == "cuda"] == \
        [os.path.realpath(os.path.join(gp.SIMGPU, "libcuda.so.1"))]
    assert proc["nested_api"] and all(i["api"].startswith("cuda") for r in proc["nested_api"] for i in r["implements"])
    # the failing calls carry their exact codes
    codes = {r["name"]: {e["code"] for e in r["error_codes"]} for r in proc["cuda_api"]}
    assert codes["cudaMalloc"] == {1, 2}
    assert codes["cudaMemcpy"] == {21}
    assert codes["cudaSetDevice"] == {101}
    assert codes["cudaStreamSynchronize"] == {400}
    assert codes["cudaFree"] == {1}
    # grid/block/smem decoded from the x86-64 ABI, ExC from its config struct
    k = {k["name"]: k for k in proc["kernels"]}
    cfg = {(tuple(c["grid"]), tuple(c["block"]), c["smem_bytes"]): c["launches"] for c in k["vector_add"]["configs"]}
    assert cfg == {((128, 2, 1), (256, 1, 1), 0): 7, ((16, 8, 2), (32, 4, 2), 1024): 1}
    cfg = {(tuple(c["grid"]), tuple(c["block"]), c["smem_bytes"]): c["launches"] for c in k["reduce_sum"]["configs"]}
    assert cfg == {((64, 1, 1), (512, 1, 1), 4096): 4, ((8, 1, 1), (128, 1, 1), 0): 1}
    assert sum(g["launches"] for g in proc["graph_launches"]) == 2
    md = tr.report_md()
    for needle in ("## Process", "cudaErrorMemoryAllocation", "Leaks", "## Loss counters", "vector_add"):
        assert needle in md


def test_attach_to_running_process_counts_only_what_follows(tmp_path):
    """--pre: the workload allocates, copies and frees before gpuprobed attaches; none of that
    may appear, and freeing an allocation made before attach is an untracked free."""
    report, ref, _ = gp.trace(tmp_path, "basic_ops", args=("--pre", "5"))
    proc = gp.check_all(report, ref)
    assert ref["untracked_frees"] == 1 and proc["memory"]["untracked_frees"] == 1


def test_threads_streams_and_devices(tmp_path):
    """Six threads on two simulated devices, three streams each plus per-thread default streams
    (_ptsz), and peer copies: exact per API, per thread, per device and per direction."""
    report, ref, _ = gp.trace(tmp_path, "multi_stream", args=("--threads", "6", "--iters", "80"),
                              env=gp.sim_env(SIMGPU_DEVICES=2, SIMGPU_KERNEL_US=5))
    proc = gp.check_all(report, ref, exact_peak=False)
    assert len(ref["threads"]) == 7 and set(ref["devices"]) == {"0", "1"}
    assert any(t["direction"] == "PtoP" for t in proc["transfers"])
    kinds = {s["kind"] for s in proc["streams"]}
    assert {"per_thread_default", "handle"} <= kinds
    per_thread = [s for s in proc["streams"] if s["kind"] == "per_thread_default"]
    assert len(per_thread) == 6 and all(s["kernels"] == 80 and s["memsets"] == 80 for s in per_thread)


def test_cpp_kernel_names_are_demangled(tmp_path):
    """Kernels that are C++ templates and namespaced functions get demangled names."""
    report, ref, _ = gp.trace(tmp_path, "kernels_cpp")
    proc = gp.check_all(report, ref)
    mangled = {k["name"]: k["mangled"] for k in proc["kernels"]}
    assert mangled["void ml::gemm<float>(float*, float const*, int)"].startswith("_ZN2ml4gemmIfEEvPT_PKS1_i")


def test_library_deleted_after_it_was_mapped(tmp_path):
    """A runtime replaced on disk under a running job (a pip upgrade): the mapped copy is
    probed through /proc/PID/map_files, and the counts are still exact."""
    import shutil
    libdir = tmp_path / "venv-lib"
    libdir.mkdir()
    for name in ("libcudart.so.13", "libsimgpu.so"):
        shutil.copy2(os.path.join(gp.SIMGPU, name), libdir / name)
    wl = gp.Workload("basic_ops", tmp_path, env=gp.sim_env(LD_LIBRARY_PATH=str(libdir)))
    try:
        os.unlink(libdir / "libcudart.so.13")
        tr = gp.Tracer(["--pid", str(wl.pid)], tmp_path / "out")
        tr.wait_tracing()
        wl.release()
        wl.wait_done()
        wl.finish()
        assert tr.wait() == 0, tr.stderr
        proc = gp.check_all(tr.report(), wl.ref())
        assert proc["libraries"][0]["path"] == str(libdir / "libcudart.so.13") + " (deleted)"
    finally:
        wl.kill()
