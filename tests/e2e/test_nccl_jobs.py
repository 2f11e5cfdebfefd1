"""NCCL communicators across ranks (docs/report-format.md, "communicators"): every rank of a
communicator gets the same comm_id (the ncclUniqueId's hash, read from the caller's stack at
ncclCommInitRank's entry; a split's from its parent's id, the split and the colour; an
ncclCommInitAll clique's from its process), each rank's collectives are numbered, and where a report
holds every rank of a communicator, the rank that entered each collective last is named with its
lateness (its entry minus the entry of the rank before it).

References: nccl_ranks' per-rank files (rank -> pid, and the rank's own CLOCK_MONOTONIC just before
and just after each collective: collective_clock_ns). The tracer's entry time of a call lies between
those two, so for collective k the tracer's lateness of rank r lies between r's t0 minus the latest
t1 of the others and r's t1 minus the latest t0 of the others, exactly, whatever else the machine
runs. gpuprobed, and so the ranks it starts, run at a real-time priority (chrt --rr 1), as in
test_recommendations_nccl.py, so that the late rank is the one the schedule makes late."""
import json
import os
import re
import subprocess

import gp


def lateness_bounds(refs, seq):
    """{rank: (lo, hi)} of each rank's possible lateness at collective seq (1-based), and the ranks
    that may have entered it last."""
    clocks = {r: ref["collective_clock_ns"][seq - 1] for r, ref in refs.items()}
    out = {}
    for r, (t0, t1) in clocks.items():
        others = [c for q, c in clocks.items() if q != r]
        out[r] = (t0 - max(c[1] for c in others), t1 - max(c[0] for c in others))
    return out


def check_communicator(report, refs, collectives):
    comm_ids = set()
    for r, ref in refs.items():
        (c,) = gp.process(report, ref["pid"])["nccl"]["communicators"]
        assert re.fullmatch(r"[0-9a-f]{16}", c["comm_id"] or ""), c
        assert c["collectives"] == collectives == len(ref["collective_clock_ns"]), (c, r)
        comm_ids.add(c["comm_id"])
    assert len(comm_ids) == 1, comm_ids
    (job_,) = [j for j in report["communicators"] if j["comm_id"] in comm_ids]
    assert job_["nranks"] == len(refs) and job_["traced_ranks"] == len(refs) and job_["duplicate_ranks"] == 0
    assert [(x["rank"], x["pid"], x["collectives"]) for x in job_["ranks"]] == \
        [(r, refs[r]["pid"], collectives) for r in sorted(refs)]
    assert job_["collectives"] == job_["compared"] == collectives
    return job_


def test_comm_id_and_last_arrival(tmp_path):
    """4 ranks, 40 AllReduces alone between synchronisations, rank 3 late by 30 ms to each."""
    iters, late_ms = 40, 30
    report, refs, _ = gp.nccl_ranks_job(tmp_path, ["--ranks", "4", "--iters", str(iters), "--allreduce-only",
                                     "--late-rank", "3", "--late-ms", str(late_ms)])
    gp.check_no_loss(report)
    job_ = check_communicator(report, refs, iters)
    last = {x["rank"]: x for x in job_["last_arrival"]}
    assert sum(x["count"] for x in last.values()) == iters
    # exactly: the collectives rank 3 must have, and may have, entered last, and the lateness bounds
    surely = maybe = 0
    lo = hi = 0
    for seq in range(1, iters + 1):
        b = lateness_bounds(refs, seq)
        surely += b[3][0] > 0
        maybe += b[3][1] > 0
        lo += b[3][0]
        hi += b[3][1]
    assert surely <= last[3]["count"] <= maybe, (surely, last, maybe)
    assert last[3]["count"] >= 0.9 * iters, last
    if surely == maybe == iters:
        assert lo / iters - 1 <= last[3]["mean_late_ns"] <= hi / iters + 1, (lo / iters, last[3], hi / iters)
    assert abs(last[3]["mean_late_ns"] - late_ms * 1e6) <= 0.2 * late_ms * 1e6, last[3]
    md = (tmp_path / "out" / "report.md").read_text()
    assert f"Communicator `{job_['comm_id']}`: 4 of 4 ranks traced, {iters} collectives" in md
    # trace.json: each rank's collective slices carry the comm_id and their sequence numbers, in order
    with open(tmp_path / "out" / "trace.json") as f:
        events = json.load(f)["traceEvents"]
    for r, ref in refs.items():
        slices = sorted((e for e in events if e.get("ph") == "X" and e.get("pid") == ref["pid"]
                         and e.get("name") == "ncclAllReduce"), key=lambda e: e["ts"])
        assert [(e["args"].get("comm_id"), e["args"].get("seq")) for e in slices] == \
            [(job_["comm_id"], k) for k in range(1, iters + 1)], r


def test_collectives_numbered_without_send_recv(tmp_path):
    """The whole schedule: AllReduce, AllGather, ReduceScatter, Broadcast are sequence numbers,
    the Send/Recv ring is not; no late rank."""
    iters = 3
    report, refs, _ = gp.nccl_ranks_job(tmp_path, ["--ranks", "3", "--iters", str(iters)])
    gp.check_no_loss(report)
    job_ = check_communicator(report, refs, 4 * iters)
    assert sum(x["count"] for x in job_["last_arrival"]) == 4 * iters


def test_split_and_init_all_ids(tmp_path):
    """ncclCommInitAll: the clique's four communicators share one id; ncclCommSplit by colour i % 2:
    each half's members agree on its id, the halves differ from each other and from the parent."""
    ref_path = tmp_path / "ref.json"
    out = tmp_path / "out"
    p = subprocess.run([gp.GPUPROBED, "-o", str(out), "--", os.path.join(gp.WORKLOADS, "nccl_clique"),
                        "--ranks", "4", "--ref", str(ref_path)], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=120, env=gp.sim_env(SIMGPU_DEVICES=4))
    assert p.returncode == 0, p.stderr
    with open(ref_path) as f:
        ref = json.load(f)
    with open(out / "report.json") as f:
        report = json.load(f)
    comms = {c["handle"]: c for c in gp.process(report, ref["pid"])["nccl"]["communicators"]}
    parent_ids = {comms[c["handle"]]["comm_id"] for c in ref["comms"]}
    assert len(parent_ids) == 1 and None not in parent_ids
    half_ids = {}
    for i, h in enumerate(ref["halves"]):  # rank i of the clique split with colour i % 2
        half_ids.setdefault(i % 2, set()).add(comms[h["handle"]]["comm_id"])
    assert all(len(v) == 1 for v in half_ids.values()), half_ids
    ids = [next(iter(v)) for v in half_ids.values()]
    assert len(set(ids)) == 2 and not set(ids) & parent_ids, (ids, parent_ids)
    # the joined view: the clique (4 ranks, one process) and each half (2 ranks), all complete
    joined = {j["comm_id"]: j for j in report["communicators"]}
    assert joined[next(iter(parent_ids))]["traced_ranks"] == 4
    for i in ids:
        assert joined[i]["traced_ranks"] == 2 and joined[i]["compared"] == 1
