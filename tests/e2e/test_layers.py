# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The layers below the runtime: the CUDA driver API called directly (a library-style workload),
runtime calls that the runtime implements with the driver counted once, driver launches named by
the handles that created them (and honestly unnamed when created before attach), and NCCL jobs
of several ranks in separate processes (exact per rank, and the straggler seen from its peers).

References: each workload's own accounting (wl.h, nccl_ranks' per-rank files: its clock around each
call, and the simulated library's clock inside it, so that a time is bounded by what the same run
measured, never by a constant that assumes an idle machine), the simulator's model (the modelled end of
the work a rank's synchronisation waited for), and the simulator's call log (SIMGPU_LOG=1: one line per
runtime, driver and NCCL call, from the libraries themselves) for what the runtime did below itself."""
import collections
import glob
import json
import os
import re

import pytest

import gp

LOG_LINE = re.compile(r"simgpu\[(\d+)/(\d+)\]: (\w+)\(")


def log_calls(stderr, pid):
    """Calls the simulated libraries logged for pid: {name: count}."""
    calls = collections.Counter()
    for line in stderr.splitlines():
        m = LOG_LINE.search(line)
        if m and int(m.group(1)) == pid:
            calls[m.group(3)] += 1
    return calls


def launched(tmp_path, argv, env):
    """gpuprobed -- argv: (report, the command's stderr) after checking both exited 0."""
    out = tmp_path / "out"
    tr = gp.Tracer(["--", *argv], out, env=env)
    rc = tr.wait(timeout=180)
    assert rc == 0, f"gpuprobed exited with {rc}: {tr.stderr}"
    return tr.report(), tr.stderr


def check_layers(report, proc, ref, logged):
    """Direct calls exact (wl.h); nested ones = what the libraries logged minus the direct ones
    (for the traced functions: the log also has cuInit & co.)."""
    gp.check_api(proc, ref)
    nested = {r["name"]: r for r in proc["nested_api"]}
    traced = {r["api"] for r in report["instrumentation"]}
    for name, count in logged.items():
        if name not in traced:
            continue
        direct = ref["cuda_api"].get(name, {"calls": 0})["calls"]
        if count > direct:
            assert name in nested, f"{name}: {count - direct} calls inside other calls not listed ({nested})"
            assert nested[name]["calls"] == count - direct, f"{name}: {nested[name]} vs log {count}, direct {direct}"
    for name, row in nested.items():
        assert logged[name] - ref["cuda_api"].get(name, {"calls": 0})["calls"] == row["calls"], name
    return nested


def test_driver_api_direct_and_through_the_runtime(tmp_path):
    ref_path = tmp_path / "ref.json"
    env = gp.sim_env(SIMGPU_LOG=1)
    report, stderr = launched(tmp_path, [os.path.join(gp.WORKLOADS, "driver_api"), "--ref", str(ref_path),
                                         "--early", "0"], env)
    with open(ref_path) as f:
        ref = json.load(f)
    proc = gp.process(report, ref["pid"])
    logged = log_calls(stderr, ref["pid"])
    nested = check_layers(report, proc, ref, logged)

    # the runtime's calls went down to the driver, and are counted once, as runtime calls
    impl = {name: {l["api"]: l["calls"] for l in row["implements"]} for name, row in nested.items()}
    assert impl["cuMemAlloc_v2"] == {"cudaMalloc": 1}
    assert impl["cuMemcpyHtoD_v2"] == {"cudaMemcpy": 1}
    assert impl["cuLaunchKernel"] == {"cudaLaunchKernel": 2}
    assert impl["cuCtxSynchronize"] == {"cudaDeviceSynchronize": 1}
    assert impl["cuMemFree_v2"] == {"cudaFree": 1}
    api = {r["name"]: r for r in proc["cuda_api"]}
    assert api["cudaMemcpy"]["implemented_by"] == [{"api": "cuMemcpyHtoD_v2", "calls": 1}]
    assert {r["family"] for r in proc["cuda_api"]} == {"cudart", "cuda"}

    # every copy, memset, launch and allocation once, driver ones included
    gp.check_transfers(proc, ref)
    gp.check_memory(proc, ref)
    gp.check_leaks(proc, ref)
    gp.check_kernels(proc, ref)
    gp.check_streams(proc, ref)
    gp.check_threads(proc, ref)
    gp.check_no_loss(report)
    work = proc["gpu_work"]
    assert work["cudart"]["launches"] == 2 and work["cuda"]["launches"] == 12
    assert work["total"]["launches"] == sum(ref["kernels"].values())
    assert (work["cudart"]["copies"], work["cuda"]["copies"]) == (1, 7)
    assert work["total"]["copy_bytes"] == sum(t["bytes"] for t in ref["transfers"])
    assert (work["cuda"]["memsets"], work["cuda"]["memset_bytes"]) == (2, 4096 + 512)
    vmm = proc["memory"]["vmm"]
    assert (vmm["create_calls"], vmm["release_calls"], vmm["peak_bytes"], vmm["live_bytes"]) == (1, 1, 2 << 20, 0)
    assert (vmm["map_calls"], vmm["unmap_calls"], vmm["mapped_live_bytes"]) == (1, 1, 0)

    # cuLaunchKernel's configuration, from registers and the stack
    gemm = next(k for k in proc["kernels"] if k["name"] == "gemm(float*, float*, int)")
    assert gemm["mangled"] == "_Z4gemmPfS_i"
    assert gemm["driver_launches"] == 5
    assert gemm["configs"] == [{"grid": [16, 1, 1], "block": [128, 2, 4], "smem_bytes": 1024, "launches": 5}]
    scale = next(k for k in proc["kernels"] if k["name"] == "scale")
    assert scale["configs"] == [{"grid": [8, 1, 1], "block": [64, 1, 1], "smem_bytes": 256, "launches": 2}]
    errs = {e["name"]: e["count"] for e in api["cuModuleGetFunction"]["error_codes"]}
    assert errs == {"CUDA_ERROR_NOT_FOUND": 1}

    # the kernel-side hit counters on libcuda.so.1 count direct and nested calls alike
    cuda_lib = [l["path"] for l in proc["libraries"] if l["family"] == "cuda"]
    assert len(cuda_lib) == 1
    hits = gp.instrumentation_hits(report, set(cuda_lib))
    for name in ("cuLaunchKernel", "cuMemcpyHtoD_v2", "cuModuleGetFunction", "cuMemCreate"):
        assert hits[(name, "uprobe")] == hits[(name, "uretprobe")] == logged[name], name

    md = (tmp_path / "out" / "report.md").read_text()
    assert "Calls made inside other traced calls" in md and "cudaMemcpy ×1" in md
    assert "GPU work queued, by the layer that queued it" in md


def test_driver_handles_created_before_attach(tmp_path):
    """A CUfunction made before gpuprobed attached is launched later: counted, never named by an address."""
    report, ref, _ = gp.trace(tmp_path, "driver_api", args=("--early", "3"))
    proc = gp.process(report, ref["pid"])
    unknown = [k for k in proc["kernels"] if not k["resolved"]]
    assert len(unknown) == 1, proc["kernels"]
    assert unknown[0]["unresolved_reason"] == "unknown (created before attach)"
    assert (unknown[0]["launches"], unknown[0]["driver_launches"], unknown[0]["name"]) == (3, 3, None)
    named = {k["name"]: k["launches"] for k in proc["kernels"] if k["resolved"]}
    assert named == ref["kernels"]
    gp.check_api(proc, ref)
    gp.check_no_loss(report)
    assert "unknown (created before attach)" in (tmp_path / "out" / "report.md").read_text()


# ---- NCCL: ranks in separate processes ------------------------------------------------------

OPS = {"ncclAllReduce": "AllReduce", "ncclAllGather": "AllGather", "ncclReduceScatter": "ReduceScatter",
       "ncclBroadcast": "Broadcast", "ncclSend": "Send", "ncclRecv": "Recv"}


def nccl_job(tmp_path, args, **knobs):
    """gpuprobed -- nccl_ranks ARGS: (report, {pid: rank reference})."""
    refs_dir = tmp_path / "refs"
    refs_dir.mkdir()
    report, _ = launched(tmp_path, [os.path.join(gp.WORKLOADS, "nccl_ranks"), "--ref-dir", str(refs_dir), *args],
                         gp.sim_env(**knobs))
    refs = {}
    for path in glob.glob(str(refs_dir / "*.json")):
        with open(path) as f:
            ref = json.load(f)
        refs[ref["pid"]] = ref
    return report, refs


def with_nccl_calls(ref):
    """The rank's reference with its NCCL calls in cuda_api, as the report lists every layer together."""
    merged = dict(ref)
    merged["cuda_api"] = dict(ref["cuda_api"])
    for name, c in ref["nccl"].items():
        merged["cuda_api"][name] = {"calls": c["calls"], "errors": c["errors"], "codes": {}}
    return merged


def bucket_calls(hist):
    return {(h["lo_bytes"], h["hi_bytes"]): h["calls"] for h in hist}


# A tracer's probes see a call between the rank's clock around it (read before the entry probe and
# after the return probe) and the simulated library's clock inside it (read after the entry probe and
# before the return probe; nccl_ranks sums each call's first to last read): so the tracer's time of a
# rank's calls lies between the two, exactly, whatever the machine did to the rank meanwhile.
def host_ns_bounds(want):
    """[lo, hi] for the tracer's host time in a rank's calls of one API: the simulator's clock inside them
    and the rank's around them."""
    assert want["host_in_ns"] is not None, f"no simulator's clock inside the calls: {want}"
    return want["host_in_ns"], want["host_ns"]


def blocked_bounds(ref):
    """[lo, hi] for the tracer's time in a rank's synchronisations (each waited for a collective)."""
    assert ref["blocked_in_ns_per_iter"] is not None, "no simulator's clock inside the synchronisations"
    return sum(ref["blocked_in_ns_per_iter"]), ref["blocked_ns_in_sync"]


def test_nccl_four_ranks_exact(tmp_path):
    report, refs = nccl_job(tmp_path, ["--ranks", "4", "--iters", "3"])
    assert len(refs) == 4
    gp.check_no_loss(report)
    for pid, ref in refs.items():
        proc = gp.process(report, pid)
        gp.check_api(proc, with_nccl_calls(ref))
        gp.check_transfers(proc, ref)
        gp.check_memory(proc, ref)
        gp.check_kernels(proc, ref)
        gp.check_streams(proc, ref)
        nccl = proc["nccl"]
        assert len(nccl["communicators"]) == 1
        comm = nccl["communicators"][0]
        assert (comm["handle"], comm["rank"], comm["nranks"], comm["device"]) == \
            (ref["comm"], ref["rank"], ref["nranks"], ref["device"])
        assert (comm["created_by"], comm["destroyed"]) == ("ncclCommInitRank", True)
        assert nccl["group_calls"] == ref["iters"]
        rows = {r["op"]: r for r in comm["ops"]}
        assert set(rows) == set(OPS.values())
        for api, op in OPS.items():
            want, row = ref["nccl"][api], rows[op]
            assert (row["calls"], row["errors"], row["elements"], row["bytes"], row["dtype"]) == \
                (want["calls"], 0, want["count"], want["bytes"], want["dtype"]), f"{op}: {row} vs {want}"
            got = bucket_calls(row["size_histogram"])
            for size, calls in want["sizes"].items():
                key = next(k for k in got if k[0] <= int(size) <= k[1])
                assert got[key] == calls, f"{op} size {size}"
            assert sum(got.values()) == want["calls"]
            # host time inside the calls: the probes' window lies within the rank's own clock readings
            # around each call and holds the simulator's inside it (host_ns_bounds)
            lo, hi = host_ns_bounds(want)
            assert lo <= row["host_ns"] <= hi, f"{op} host_ns {row['host_ns']} vs the rank's {want} (bounds [{lo}, {hi}])"
        assert rows["Send"]["peers"] == [(ref["rank"] + 1) % 4]
        assert rows["Recv"]["peers"] == [(ref["rank"] + 3) % 4]
        assert rows["Broadcast"]["roots"] == [0]
        stream = next(s for s in proc["streams"] if s["handle"] == ref["stream"])
        collectives = sum(ref["nccl"][api]["calls"] for api in OPS)
        assert stream["collectives"] == collectives
        work = proc["gpu_work"]["nccl"]
        assert (work["collectives"], work["collective_bytes"]) == \
            (collectives, sum(ref["nccl"][api]["bytes"] for api in OPS))
        # every synchronisation of this schedule waited for a collective (the ring exchange)
        assert rows["Recv"]["blocked_calls"] == ref["iters"]
        assert nccl["sync_blocked_ns_collectives"] == rows["Recv"]["blocked_ns"]
        lo, hi = blocked_bounds(ref)
        assert lo <= nccl["sync_blocked_ns_collectives"] <= hi, (nccl["sync_blocked_ns_collectives"], lo, hi)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "### NCCL" in md and "rank 0 of 4" in md


def test_nccl_straggler_makes_its_peers_wait(tmp_path):
    """Rank 2 enters every step 15 ms late: the others block in their synchronisations, it does not.
    It starts an iteration's steps only once its peers queued theirs and started their synchronisation
    (nccl_ranks), so each peer's waits for at least its late steps before the peer's last collective:
    the five steps for its ring neighbours, the four before the ring for the other. The references: each
    rank's own clock of its synchronisations, and the simulator's modelled end of the work each waited
    for (the rank reads it with simgpu_op_last), which a synchronisation never returns before."""
    iters, late_ms, late_rank, nranks = 3, 15, 2, 4
    report, refs = nccl_job(tmp_path, ["--ranks", str(nranks), "--iters", str(iters), "--late-rank",
                                       str(late_rank), "--late-ms", str(late_ms)])
    gp.check_no_loss(report)
    late_ns = late_ms * 1_000_000
    neighbours = {(late_rank + 1) % nranks, (late_rank - 1) % nranks}
    assert len(refs) == nranks
    for pid, ref in refs.items():
        rank, blocked = ref["rank"], gp.process(report, pid)["nccl"]["sync_blocked_ns_collectives"]
        # the tracer's blocked time is the rank's own, measured around the same calls
        lo, hi = blocked_bounds(ref)
        assert lo <= blocked <= hi, (rank, blocked, lo, hi)
        model_wait = [end - t0 for end, t0 in zip(ref["model_end_ns_per_iter"], ref["sync_t0_ns_per_iter"])]
        if rank == late_rank:
            # in the model it waits for nobody: its last item ends well within one of its late steps
            # after its synchronisation started (at the ring's modelled duration, µs)
            assert all(w < late_ns for w in model_wait), model_wait
            continue
        steps = 5 if rank in neighbours else 4
        assert all(w >= steps * late_ns for w in model_wait), (rank, model_wait)
        assert blocked >= iters * steps * late_ns - (hi - lo), \
            f"rank {rank} blocked only {blocked} ns waiting for the straggler ({model_wait} modelled)"


def test_nccl_host_side_bandwidth(tmp_path):
    """An AllReduce alone between two synchronisations is measured: its bus bandwidth is at most the
    modelled link's (the ring model, 2(n-1)/n: the simulator ends it at its modelled end, never
    earlier), and at least what the rank's own clock gives from just before the call to just after the
    synchronisation (the tracer's window, from the call's entry to the synchronisation's return, lies
    inside it); its algorithm bandwidth is busbw / 1.5 for 4 ranks. The link is slow (0.01 GB/s: 157 ms
    per 1 MiB AllReduce), so that the rank's clock is mostly the modelled time, but no bound assumes
    what the host adds (the enqueue, waiting for the ranks that entered later, the wake-up)."""
    iters, bw = 4, 0.01
    report, refs = nccl_job(tmp_path, ["--ranks", "4", "--iters", str(iters), "--allreduce-only"],
                            SIMGPU_NCCL_BW_GBPS=bw)
    gp.check_no_loss(report)
    for pid, ref in refs.items():
        row = gp.process(report, pid)["nccl"]["communicators"][0]["ops"][0]
        assert row["op"] == "AllReduce"
        assert (row["measured_calls"], row["measured_bytes"]) == (iters, ref["nccl"]["ncclAllReduce"]["bytes"])
        assert row["blocked_calls"] == iters
        assert row["bus_factor"] == 1.5
        window = sum(ref["call_to_sync_ns_per_iter"])
        assert row["measured_ns"] <= window, (row, window)
        # from the report's exact integers (its GB/s fields have two decimals)
        busbw = row["measured_bytes"] / row["measured_ns"] * 1.5
        assert row["measured_bytes"] / window * 1.5 <= busbw <= bw, (row, window)
        assert abs(row["busbw_gbps"] - busbw) <= 0.005 + 1e-9 and abs(row["algbw_gbps"] * 1.5 - busbw) <= 0.0075


def test_nccl_one_process_all_ranks_and_split(tmp_path):
    """ncclCommInitAll (its arrays read at return) and ncclCommSplit with the sizes the process asked."""
    ref_path = tmp_path / "ref.json"
    report, _ = launched(tmp_path, [os.path.join(gp.WORKLOADS, "nccl_clique"), "--ranks", "4", "--ref",
                                    str(ref_path)], gp.sim_env(SIMGPU_DEVICES=4))
    with open(ref_path) as f:
        ref = json.load(f)
    gp.check_no_loss(report)
    comms = {c["handle"]: c for c in gp.process(report, ref["pid"])["nccl"]["communicators"]}
    assert len(comms) == 8
    for want in ref["comms"]:
        got = comms[want["handle"]]
        assert (got["rank"], got["nranks"], got["device"], got["created_by"]) == \
            (want["rank"], want["nranks"], want["device"], "ncclCommInitAll")
        assert got["ops"][0]["op"] == "AllReduce" and got["ops"][0]["bytes"] == 4 * 64 * 1024
    for want in ref["halves"]:
        got = comms[want["handle"]]
        assert (got["rank"], got["nranks"], got["device"], got["split_from"], got["created_by"]) == \
            (want["rank"], want["nranks"], want["device"], want["parent"], "ncclCommSplit")
        assert got["destroyed"] and got["ops"][0]["calls"] == 1
