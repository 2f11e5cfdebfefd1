"""The nccl-straggler recommendation (docs/recommendations.md) on a 4-rank job of the simulated NCCL:
rank K reaches each of the five steps of every iteration D ms late, so each of its peers waits
ITERS × 5 × D for it, and that is the saving the finding must estimate (within 15 %). A job without a
late rank has no straggler. References: nccl_ranks' schedule and its per-rank files (rank → pid)."""
import glob
import json
import os

import gp

STEPS = 5  # nccl_ranks: collectives/point-to-point steps per iteration, each preceded by the late sleep


def job(tmp_path, args):
    refs_dir = tmp_path / "refs"
    refs_dir.mkdir()
    tr = gp.Tracer(["--", os.path.join(gp.WORKLOADS, "nccl_ranks"), "--ref-dir", str(refs_dir), *args],
                   tmp_path / "out", env=gp.sim_env())
    rc = tr.wait(timeout=180)
    assert rc == 0, f"gpuprobed exited with {rc}: {tr.stderr}"
    ranks = {}
    for path in glob.glob(str(refs_dir / "*.json")):
        with open(path) as f:
            ref = json.load(f)
        ranks[ref["rank"]] = ref["pid"]
    return tr.report(), ranks


def test_straggler_rank_is_found_with_its_cost(tmp_path):
    iters, late_ms, late_rank = 3, 10, 2
    report, ranks = job(tmp_path, ["--ranks", "4", "--iters", str(iters), "--late-rank", str(late_rank),
                                   "--late-ms", str(late_ms)])
    found = [f for f in report["recommendations"] if f["id"] == "nccl-straggler"]
    assert len(found) == 1, report["recommendations"]
    f = found[0]
    assert f["pid"] == ranks[late_rank]
    assert f["evidence"]["rank"] == late_rank and f["evidence"]["nranks"] == 4
    assert {r["rank"]: r["pid"] for r in f["evidence"]["ranks"]} == ranks
    want = iters * STEPS * late_ms * 1_000_000
    assert abs(f["impact_ns"] - want) <= 0.15 * want, (f["impact_ns"], want)
    assert f["estimate"] == "model" and f["action"] and f["method"]
    # the blocked times it cites are the ranks' own NCCL rows
    for r in f["evidence"]["ranks"]:
        proc = gp.process(report, r["pid"])
        rows = [row for c in proc["nccl"]["communicators"] for row in c["ops"]]
        assert r["blocked_ns"] == sum(row["blocked_ns"] for row in rows), r
    impacts = [x["impact_ns"] for x in report["recommendations"]]
    assert impacts == sorted(impacts, reverse=True)
    with open(tmp_path / "out" / "report.md") as md:
        assert "`nccl-straggler`" in md.read()


def test_no_straggler_without_a_late_rank(tmp_path):
    report, _ = job(tmp_path, ["--ranks", "4", "--iters", "3"])
    assert not [f for f in report["recommendations"] if f["id"] == "nccl-straggler"], report["recommendations"]
