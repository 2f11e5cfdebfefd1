"""gpuprobed merge (docs/report-format.md, "merge"): the captures of two gpuprobed sessions, each
tracing two ranks of one 4-rank job as two nodes would (each in a UTS namespace of its own, so with a
host name of its own), as one report: every process with its host, the communicator joined across
them by comm_id, who entered each collective last and how late on one time axis, and the clocks'
offsets with their uncertainty.

References: nccl_ranks' per-rank files (rank -> pid, and the rank's own CLOCK_MONOTONIC just before
and just after each collective: collective_clock_ns). Both "nodes" run on this machine, so their
clocks are the same and the true offset between them is 0: the merged lateness lies within the exact
bounds of test_nccl_jobs.py widened by the alignment's stated uncertainty, and a capture whose
recorded CLOCK_REALTIME relation is shifted by a known amount must have that shift found and undone
by the collectives. gpuprobed and the ranks run at a real-time priority (chrt --rr 1), as in
test_nccl_jobs.py, so that the late rank is the one the schedule makes late."""
import glob
import json
import os
import shutil
import struct
import subprocess
import zlib

import pytest

import gp
from test_nccl_jobs import lateness_bounds

CHRT = shutil.which("chrt")
UNSHARE = shutil.which("unshare")
ITERS, LATE_MS = 40, 30
NODES = (("gp-node-a", (0, 1)), ("gp-node-b", (2, 3)))
HDR_REALTIME, HDR_CRC = 32, 208  # struct gp_cap_header: start_realtime_ns, header_crc (capture_format.h)


def env():
    e = gp.sim_env()
    e.pop("SUDO_UID", None)
    e.pop("SUDO_GID", None)
    return e


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """The 4-rank job traced by two sessions: (captures, refs by rank)."""
    assert CHRT and UNSHARE, "chrt and unshare (util-linux) are needed"
    tmp = tmp_path_factory.mktemp("merge")
    gate, refs_dir = tmp / "gate", tmp / "refs"
    refs_dir.mkdir()
    launcher = subprocess.Popen([CHRT, "--rr", "1", os.path.join(gp.WORKLOADS, "nccl_ranks"), "--ranks", "4",
                                 "--allreduce-only", "--iters", str(ITERS), "--late-rank", "3", "--late-ms",
                                 str(LATE_MS), "--gate", str(gate), "--ref-dir", str(refs_dir)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    tracers = []
    try:
        out = gp.LineReader(launcher.stdout)
        pids = {}
        while len(pids) < 4:
            line = out.readline(60)
            assert line, f"nccl_ranks printed no RANK lines: {launcher.stderr.read()}"
            if line.startswith("RANK "):
                _, pid, rank = line.split()
                pids[int(rank)] = int(pid)
        for host, ranks in NODES:
            cmd = [UNSHARE, "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host, CHRT, "--rr", "1",
                   gp.GPUPROBED, "-o", str(tmp / host)]
            for r in ranks:
                cmd += ["-p", str(pids[r])]
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True, env=env())
            tracers.append((p, gp.LineReader(p.stderr)))
            err = ""
            while "tracing" not in err:
                line = tracers[-1][1].readline(60)
                assert line, f"gpuprobed ({host}) did not start tracing: {err}"
                err += line
        gate.touch()
        assert launcher.wait(timeout=180) == 0, launcher.stderr.read()
        for p, err in tracers:
            assert p.wait(timeout=60) == 0, err.rest()
    finally:
        for p in [launcher] + [t[0] for t in tracers]:
            if p.poll() is None:
                p.kill()
    refs = {}
    for path in glob.glob(str(refs_dir / "*.json")):
        with open(path) as f:
            ref = json.load(f)
        refs[ref["rank"]] = ref
    assert sorted(refs) == [0, 1, 2, 3]
    return [tmp / host / "capture.gpz" for host, _ in NODES], refs, tmp


def merge(out, *captures):
    p = subprocess.run([gp.GPUPROBED, "merge", "-o", str(out), *map(str, captures)], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=120)
    report = None
    if p.returncode == 0:
        with open(out / "report.json") as f:
            report = json.load(f)
    return p.returncode, report, p.stderr


def shifted(src, dst, shift_ns=None, zero=False):
    """A copy of capture src whose recorded CLOCK_REALTIME relation is moved by shift_ns (or removed)."""
    data = bytearray(src.read_bytes())
    (rt,) = struct.unpack_from("<Q", data, HDR_REALTIME)
    struct.pack_into("<Q", data, HDR_REALTIME, 0 if zero else rt + shift_ns)
    struct.pack_into("<I", data, HDR_CRC, zlib.crc32(bytes(data[:HDR_CRC])))
    dst.write_bytes(bytes(data))
    return dst


def communicator(report, refs):
    hosts = {r: host for host, ranks in NODES for r in ranks}
    (j,) = report["communicators"]
    assert j["nranks"] == 4 and j["traced_ranks"] == 4 and j["duplicate_ranks"] == 0
    assert [(x["rank"], x["host"], x["pid"], x["collectives"]) for x in j["ranks"]] == \
        [(r, hosts[r], refs[r]["pid"], ITERS) for r in range(4)]
    assert j["collectives"] == j["compared"] == ITERS
    for r in range(4):
        (p,) = [p for p in report["processes"] if p["pid"] == refs[r]["pid"] and p["host"] == hosts[r]]
        (c,) = p["nccl"]["communicators"]
        assert c["comm_id"] == j["comm_id"] and c["collectives"] == len(refs[r]["collective_clock_ns"]) == ITERS
    return j


def check_alignment(c, refs):
    """The collectives' estimate of node b's offset: the truth (0: one machine) lies within its stated
    uncertainty, and that is no wider than the spread of what it is estimated from, as the ranks' own
    clocks saw it: per collective, the difference of the two nodes' earliest returns (how close the
    ranks' releases are depends on the machine: tens of µs here, up to 20 ms under software emulation)."""
    assert c["uncertainty_ns"] is not None and abs(c["offset_ns"]) <= c["uncertainty_ns"], c
    releases = [min(refs[r]["collective_clock_ns"][k][1] for r in NODES[1][1]) -
                min(refs[r]["collective_clock_ns"][k][1] for r in NODES[0][1]) for k in range(ITERS)]
    assert c["uncertainty_ns"] <= max(releases) - min(releases), (c, min(releases), max(releases))


def check_lateness(j, refs, uncertainty_ns):
    last = {x["rank"]: x for x in j["last_arrival"]}
    assert sum(x["count"] for x in last.values()) == ITERS
    assert last[3]["count"] >= 0.9 * ITERS, last
    assert abs(last[3]["mean_late_ns"] - LATE_MS * 1e6) <= 0.2 * LATE_MS * 1e6, last[3]
    bounds = [lateness_bounds(refs, seq) for seq in range(1, ITERS + 1)]
    if all(b[3][0] > uncertainty_ns for b in bounds):  # rank 3 surely last of every one, even aligned so
        lo = sum(b[3][0] for b in bounds) / ITERS - uncertainty_ns
        hi = sum(b[3][1] for b in bounds) / ITERS + uncertainty_ns
        assert lo - 1 <= last[3]["mean_late_ns"] <= hi + 1, (lo, last[3], hi)


def test_merge_two_nodes(job, tmp_path):
    """Rank 3 named last with its lateness, the same comm_id on all four ranks, exact counts, each
    process with its host; the clocks aligned by the collectives; trace.json on one axis."""
    captures, refs, _ = job
    rc, report, err = merge(tmp_path / "out", *captures)
    assert rc == 0, err
    gp.check_no_loss(report)
    assert report["session"]["mode"] == "merge"
    assert sorted((p["host"], p["pid"]) for p in report["processes"]) == \
        sorted((host, refs[r]["pid"]) for host, ranks in NODES for r in ranks)
    clocks = report["merge"]["clocks"]
    assert [c["host"] for c in clocks] == [h for h, _ in NODES]
    assert clocks[0]["method"] == "reference" and clocks[0]["offset_ns"] == 0
    c = clocks[1]
    assert c["method"] == "collectives" and c["collectives"] >= 0.9 * ITERS, c
    # one machine: the true offset is 0; the recorded relation says so to within its two clock reads
    assert abs(c["realtime_offset_ns"]) < 1e6, c
    check_alignment(c, refs)
    assert c["bounds_ns"] is None or c["bounds_ns"][0] <= 0 <= c["bounds_ns"][1], c
    assert report["merge"]["notes"] == [], report["merge"]["notes"]
    j = communicator(report, refs)
    check_lateness(j, refs, c["uncertainty_ns"])
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Merged captures" in md and "gp-node-b" in md
    assert f"Communicator `{j['comm_id']}`: 4 of 4 ranks traced, {ITERS} collectives" in md
    check_trace(tmp_path / "out" / "trace.json", refs, [0, c["offset_ns"]])


def check_trace(path, refs, offsets):
    """Each rank's ncclAllReduce slices, moved back by its capture's offset, lie within the rank's own
    clock around each call (exact: the tracer's entry is between the two reads)."""
    with open(path) as f:
        trace = json.load(f)
    names = {}
    slices = {}
    for ev in trace["traceEvents"]:
        if ev["ph"] == "M" and ev["name"] == "process_name":
            names[ev["pid"]] = ev["args"]["name"]
        if ev["ph"] == "X" and ev["name"] == "ncclAllReduce":
            slices.setdefault(ev["pid"], []).append(round(ev["ts"] * 1000))
    for k, (host, ranks) in enumerate(NODES):
        for r in ranks:
            tpid = refs[r]["pid"] + k * 10000000
            assert names[tpid].startswith(f"{host}: ") and f"(pid {refs[r]['pid']})" in names[tpid], names
            ts = sorted(slices[tpid])
            assert len(ts) == ITERS
            for t, (t0, t1) in zip(ts, refs[r]["collective_clock_ns"]):
                # the µs text has 3 decimals: exact ns
                assert t0 <= t - offsets[k] <= t1, (r, t, offsets[k], t0, t1)


@pytest.mark.parametrize("shift_ms", [250, -1234.567891])
def test_merge_shifted_clock(job, tmp_path, shift_ms):
    """Node b's recorded CLOCK_REALTIME relation moved by a known amount: the collectives find it and
    undo it (within the alignment's stated uncertainty); the lateness stays right."""
    captures, refs, tmp = job
    shift = int(shift_ms * 1e6)
    b = shifted(captures[1], tmp_path / "b.gpz", shift)
    rc, report, err = merge(tmp_path / "out", captures[0], b)
    assert rc == 0, err
    c = report["merge"]["clocks"][1]
    assert c["method"] == "collectives", c
    assert abs(c["realtime_offset_ns"] - shift) < 1e6, c  # the recorded relation: two clock reads
    check_alignment(c, refs)
    assert abs(c["correction_ns"] + shift) <= c["uncertainty_ns"] + abs(c["realtime_offset_ns"] - shift), c
    check_lateness(communicator(report, refs), refs, c["uncertainty_ns"])
    check_trace(tmp_path / "out" / "trace.json", refs, [0, c["offset_ns"]])


def test_merge_capture_without_realtime(job, tmp_path):
    """A capture that recorded no CLOCK_REALTIME relation (as an old one): said, and aligned by the
    collectives alone."""
    captures, refs, _ = job
    b = shifted(captures[1], tmp_path / "b.gpz", zero=True)
    rc, report, err = merge(tmp_path / "out", captures[0], b)
    assert rc == 0, err
    c = report["merge"]["clocks"][1]
    assert c["method"] == "collectives" and c["realtime_offset_ns"] is None, c
    check_alignment(c, refs)
    assert any("no CLOCK_REALTIME relation" in n for n in report["merge"]["notes"]), report["merge"]["notes"]
    assert "no CLOCK_REALTIME relation" in err


def test_merge_same_capture_twice(job, tmp_path):
    """The same capture twice, by name or as a copy: refused with one message, nothing written."""
    captures, _, _ = job
    copy = tmp_path / "copy.gpz"
    shutil.copy(captures[0], copy)
    for twice in ([captures[0], captures[0]], [captures[0], captures[1], copy]):
        rc, _, err = merge(tmp_path / "out", *twice)
        assert rc == 2, err
        assert err.count("same capture") == 1, err
        assert not (tmp_path / "out" / "report.json").exists()


def test_merge_unrelated_jobs(job, tmp_path):
    """A capture of another job (the golden demo: no NCCL): merged, with a note that they share no
    communicator and that its clock is aligned by the recorded CLOCK_REALTIME only."""
    captures, refs, _ = job
    demo = os.path.join(gp.ROOT, "tests", "golden", "demo.gpz")
    rc, report, err = merge(tmp_path / "out", captures[0], demo)
    assert rc == 0, err
    c = report["merge"]["clocks"][1]
    assert c["method"] == "realtime" and c["uncertainty_ns"] is None and c["collectives"] == 0, c
    (note,) = [n for n in report["merge"]["notes"] if "share" in n]
    assert "no NCCL communicator" in note and "demo.gpz" in note
    assert "no NCCL communicator" in err
    assert {p["host"] for p in report["processes"]} == {"gp-node-a", "golden"}
    (j,) = report["communicators"]
    assert j["traced_ranks"] == 2 and j["last_arrival"] is None


def test_merge_truncated_capture(job, tmp_path):
    """Node b's capture cut short: merged for what it holds, and the cut said."""
    captures, refs, _ = job
    data = captures[1].read_bytes()
    cut = tmp_path / "cut.gpz"
    cut.write_bytes(data[:len(data) * 2 // 3])
    rc, report, err = merge(tmp_path / "out", captures[0], cut)
    assert rc == 0, err
    cap = report["merge"]["captures"][1]
    assert not cap["complete"] and cap["cut"], cap
    assert any("was cut" in n for n in report["merge"]["notes"]), report["merge"]["notes"]
    assert "was cut" in err
    full = merge(tmp_path / "full", *captures)[1]
    assert cap["ops"] < full["merge"]["captures"][1]["ops"]
    assert report["source"]["complete"] is False
