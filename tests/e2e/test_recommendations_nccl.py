"""The nccl-straggler recommendation (docs/recommendations.md) on a 4-rank job of the simulated NCCL:
rank K reaches each of the five steps of every iteration D ms late, so each of its peers waits for it
at its synchronisation, and that wait is the saving the finding must estimate. A job without a late
rank has no straggler. References: nccl_ranks' schedule and its per-rank files (rank -> pid, and each
rank's own clock of its synchronisations).

The finding's impact is the peers' average b less the straggler's b, b being a rank's time in the
synchronisations that waited for its collectives (one per iteration here). The reference is the same
formula on the ranks' own clocks of those synchronisations (CLOCK_MONOTONIC just before and after
each), measured in the same run: the schedule only says how late the straggler means to be (usleep
sleeps at least that, and a busy machine adds its own delays to every rank). The tracer's time of a
call lies inside the workload's clock of it, and holds the simulated library's clock inside it (read
after the entry probe, before the return probe: blocked_in_ns_per_iter), synchronisation by
synchronisation, exactly, whatever the machine does meanwhile. Those bound the impact on both sides.

gpuprobed, and so the ranks it starts, run at a real-time priority (chrt --rr 1): whether a rank looks
like a straggler must not depend on which rank the machine's other load happens to delay, nor on how
long a busy machine keeps the tracer from letting a rank go on after it mapped a CUDA library. Each
job runs once."""
import json
from types import SimpleNamespace

import gp

STEPS = 5  # nccl_ranks: collectives/point-to-point steps per iteration, each preceded by the late sleep


def job(tmp_path, args):
    report, ranks, stderr = gp.nccl_ranks_job(tmp_path, args)
    with open(tmp_path / "out" / "trace.json") as f:
        events = json.load(f)["traceEvents"]
    # every rank's communicator was seen (what gpuprobed could not trace, if not, says why)
    warnings = [line for line in stderr.splitlines() if "not traced" in line or "attach" in line]
    seen = {r: len(gp.process(report, ref["pid"])["nccl"]["communicators"]) for r, ref in ranks.items()}
    assert len(ranks) == 4 and set(seen.values()) == {1}, (seen, warnings)
    return SimpleNamespace(report=report, refs=ranks, events=events)


def sync_slices(events, pid):
    """The tracer's slices of a rank's synchronisations, in order (ns)."""
    return [round(e["dur"] * 1000) for e in sorted((e for e in events if e.get("ph") == "X" and e.get("pid") == pid
                                                    and e.get("tid") == pid and e["name"] == "cudaStreamSynchronize"),
                                                   key=lambda e: e["ts"])]


def test_straggler_rank_is_found_with_its_cost(tmp_path):
    iters, late_ms, late_rank = 3, 10, 2
    run = job(tmp_path, ["--ranks", "4", "--iters", str(iters), "--late-rank", str(late_rank), "--late-ms",
                         str(late_ms)])
    report, refs = run.report, run.refs
    ranks = {r: ref["pid"] for r, ref in refs.items()}
    found = [f for f in report["recommendations"] if f["id"] == "nccl-straggler"]
    assert len(found) == 1, report["recommendations"]
    f = found[0]
    assert f["pid"] == ranks[late_rank]
    assert f["evidence"]["rank"] == late_rank and f["evidence"]["nranks"] == 4
    assert {r["rank"]: r["pid"] for r in f["evidence"]["ranks"]} == ranks
    # b of each rank: the tracer's time of its synchronisations, against the rank's own clock of them
    b, lo = {}, {}
    for r in f["evidence"]["ranks"]:
        ref = refs[r["rank"]]
        proc = gp.process(report, r["pid"])
        rows = [row for c in proc["nccl"]["communicators"] for row in c["ops"]]
        assert r["blocked_ns"] == sum(row["blocked_ns"] for row in rows), r
        slices = sync_slices(run.events, r["pid"])
        own, inner = ref["blocked_ns_per_iter"], ref["blocked_in_ns_per_iter"]
        assert inner is not None, f"rank {r['rank']}: no simulator's clock inside its synchronisations"
        assert len(slices) == len(own) == len(inner) == iters, (r, slices, own, inner)
        assert r["blocked_ns"] == sum(slices), (r, slices)
        assert all(i <= d <= w for i, d, w in zip(inner, slices, own)), \
            f"rank {r['rank']}: synchronisations {slices} ns, not between the simulator's clock inside them " \
            f"{inner} and the rank's around them {own}"
        b[r["rank"]], lo[r["rank"]] = r["blocked_ns"], sum(inner)
    peers = [k for k in refs if k != late_rank]
    own = {k: refs[k]["blocked_ns_in_sync"] for k in refs}
    want = sum(own[k] for k in peers) / len(peers) - own[late_rank]
    low = sum(lo[k] for k in peers) / len(peers) - own[late_rank]
    high = sum(own[k] for k in peers) / len(peers) - max(0, lo[late_rank])
    assert low <= f["impact_ns"] <= high, \
        f"impact {f['impact_ns']} ns, bounds [{low:.0f}, {high:.0f}] (the ranks' own clocks give {want:.0f}; " \
        f"the schedule {iters * STEPS * late_ms} ms of lateness)"
    assert abs(f["evidence"]["peers_blocked_avg_ns"] - sum(b[k] for k in peers) / len(peers)) <= 1, f["evidence"]
    assert f["estimate"] == "model" and f["action"] and f["method"]
    impacts = [x["impact_ns"] for x in report["recommendations"]]
    assert impacts == sorted(impacts, reverse=True)
    with open(tmp_path / "out" / "report.md") as md:
        assert "`nccl-straggler`" in md.read()


def test_no_straggler_without_a_late_rank(tmp_path):
    report = job(tmp_path, ["--ranks", "4", "--iters", "3"]).report
    assert not [f for f in report["recommendations"] if f["id"] == "nccl-straggler"], report["recommendations"]
