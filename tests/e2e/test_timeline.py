# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""trace.json, the timeline (docs/report-format.md, "Timeline"): valid Chrome trace JSON that agrees
with report.json exactly: one slice per call, slices that nest on every track, flows that start and
end inside slices, every pid and tid named, copy bytes equal to the transfer totals; the cap leaves
out an exact count; --no-timeline writes none and removes an earlier one."""
import bisect
import collections
import gzip
import json
import os
from decimal import Decimal

import pytest

import gp
import npm_packages

ENGINE_LOADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trace_engine_load.mjs")

FAMILIES = {"cudart", "cuda", "nccl"}
API_CAT = "api"  # call slices, stream windows and queue flows share it: Chrome's engine binds a flow within one cat


def spans_as_slices(events):
    """The events with each begin ("B") and its end ("E") made one complete slice ("X", dur the
    difference: exact, as decimals). The writer puts an end right after its begin (Chrome's trace
    engine pairs them on one stack for the whole file): checked here."""
    out, begin = [], None
    for e in events:
        if e["ph"] == "B":
            assert begin is None, f"{e} begins inside {begin}"
            begin = e
        elif e["ph"] == "E":
            assert begin is not None, f"an end without its begin: {e}"
            assert all(e[k] == begin[k] for k in ("pid", "tid", "cat", "name")), (begin, e)
            assert e["ts"] >= begin["ts"], (begin, e)
            out.append(dict(begin, ph="X", dur=e["ts"] - begin["ts"], spanned=True))
            begin = None
        else:
            assert begin is None, f"{e} between {begin} and its end"
            out.append(e)
    assert begin is None, f"no end: {begin}"
    return out


def load_trace(out_dir):
    with open(os.path.join(str(out_dir), "trace.json")) as f:
        # decimals kept exact: ts and dur are microseconds with three decimals (ns)
        trace = json.load(f, parse_float=Decimal)
    trace["traceEvents"] = spans_as_slices(trace["traceEvents"])
    return trace


def ns(us):
    return int(Decimal(us) * 1000)


def call_slices(trace):
    return [e for e in trace["traceEvents"]
            if e["ph"] == "X" and e.get("cat") == API_CAT and e["args"].get("family") in FAMILIES]


def check_calls(trace, report):
    """Slices per process and API equal report.json's call counts."""
    slices = call_slices(trace)
    for proc in report["processes"]:
        want = {r["name"]: r["calls"] for r in proc["cuda_api"]}
        got = collections.Counter(e["name"] for e in slices if e["pid"] == proc["pid"])
        assert dict(got) == want, f"pid {proc['pid']}: slices {dict(got)} != report {want}"
    assert {e["pid"] for e in slices} <= {p["pid"] for p in report["processes"]}


def tracks(trace):
    """{(pid, tid): [(start_ns, end_ns, event)]} of the complete slices, sorted."""
    by = collections.defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            by[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e))
    for v in by.values():
        v.sort(key=lambda s: (s[0], -s[1]))
    return by


def check_nesting(by_track):
    """On one track, two slices are disjoint or one contains the other."""
    for track, slices in by_track.items():
        stack = []
        for start, end, e in slices:
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], f"{track}: {e['name']} [{start}, {end}] overlaps a slice ending {stack[-1]}"
            stack.append(end)


def inside(by_track, pid, tid, t):
    slices = by_track.get((pid, tid), [])
    starts = [s[0] for s in slices]
    i = bisect.bisect_right(starts, t)
    return any(slices[j][0] <= t <= slices[j][1] for j in range(max(0, i - 8), i))


def check_flows(trace, by_track):
    """Each flow starts once, at the start of the call slice that queued its item (its thread, its
    cat), and ends at most once, at the start of the call slice of the synchronisation that covered
    it: bound as Chrome's engine binds (same ts, pid, tid and cat) and as Perfetto does (the
    enclosing slice). The items of a window no synchronisation closed have a start only, as many as
    those windows' items. Returns the number of flows with both ends."""
    ends = collections.defaultdict(lambda: {"s": [], "f": []})
    for e in trace["traceEvents"]:
        if e["ph"] in ("s", "f"):
            ends[e["id"]][e["ph"]].append(e)
    starts = {(e["pid"], e["tid"], ns(e["ts"])): e for e in call_slices(trace)}
    unfinished = 0
    for fid, se in ends.items():
        assert len(se["s"]) == 1 and len(se["f"]) <= 1, f"flow {fid}: {se}"
        unfinished += not se["f"]
        for e in se["s"] + se["f"]:
            assert e["cat"] == API_CAT and e["name"] == "waited for by", e
            assert (e["pid"], e["tid"], ns(e["ts"])) in starts, f"flow {fid} {e['ph']} not at a call's start: {e}"
            assert inside(by_track, e["pid"], e["tid"], ns(e["ts"])), f"flow {fid} {e['ph']} not inside a slice: {e}"
        if se["f"]:
            assert se["f"][0]["bp"] == "e"
            assert starts[(se["f"][0]["pid"], se["f"][0]["tid"], ns(se["f"][0]["ts"]))]["args"]["op"] == "sync"
    unsynced = sum(e["args"]["items"] for e in trace["traceEvents"]
                   if e["ph"] == "X" and e["name"] == "queued work, no synchronisation recorded")
    assert unfinished == unsynced, (unfinished, unsynced)
    return len(ends) - unfinished


def check_names(trace):
    names = {(e["pid"], e["tid"]) for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    pnames = {e["pid"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    used = {(e["pid"], e["tid"]) for e in trace["traceEvents"] if e["ph"] in ("X", "I", "s", "f")}
    assert used <= names, f"tracks without a name: {used - names}"
    assert {p for p, _ in used} <= pnames


def check_copy_bytes(trace, report):
    """Bytes of the successful copy slices = the transfer totals, per process; so do the counters: the
    cumulative one's last sample, and the per-interval one's samples added up (each at the start of a
    10 ms interval, in order, with a 0 after the last one of a run)."""
    for proc in report["processes"]:
        pid = proc["pid"]
        got = sum(e["args"].get("bytes", 0) for e in call_slices(trace)
                  if e["pid"] == pid and e["args"]["op"] == "copy" and e["args"]["ret"] == 0)
        assert got == sum(t["bytes"] for t in proc["transfers"]), f"pid {pid}"
        by_dir = collections.Counter()
        for t in proc["transfers"]:
            by_dir[t["direction"]] += t["bytes"]
        by_dir = {d: b for d, b in by_dir.items() if b}
        cumulative = [e for e in trace["traceEvents"]
                      if e["ph"] == "C" and e["pid"] == pid and e["name"] == "bytes copied (cumulative)"]
        if by_dir:
            assert max(cumulative, key=lambda e: ns(e["ts"]))["args"] == by_dir, f"pid {pid}"
        interval = sorted((e for e in trace["traceEvents"]
                           if e["ph"] == "C" and e["pid"] == pid and e["name"] == "bytes copied per 10 ms"),
                          key=lambda e: ns(e["ts"]))
        summed = collections.Counter()
        for e in interval:
            assert ns(e["ts"]) % 10_000_000 == 0, e
            summed.update(e["args"])
        assert {d: b for d, b in summed.items() if b} == by_dir, f"pid {pid}: {dict(summed)} != {by_dir}"
        stamps = [ns(e["ts"]) for e in interval]
        assert stamps == sorted(set(stamps)), f"pid {pid}: one sample per interval"
        assert not interval or not any(interval[-1]["args"].values()), "the last interval is followed by a 0"


def load_in_trace_engine(path):
    """What Chrome DevTools' trace engine made of the file (trace_engine_load.mjs), or the reason it
    could not be run (a string)."""
    r = npm_packages.run(ENGINE_LOADER, "@paulirish/trace_engine", path)
    if isinstance(r, str):
        return r
    assert r.returncode == 0, f"trace_engine_load.mjs: exit {r.returncode}: {r.stderr.strip()}"
    return json.loads(r.stdout)


def check_in_trace_engine(path):
    """trace.json loaded by Chrome's trace engine: every slice (complete, or a begin and its end) and
    every instant kept on its track and held in the track's tree (the engine drops one that overlaps the
    slice before it), and every flow with both ends bound to the two call slices whose starts it sits
    on. Skips, saying why, where the engine cannot be had."""
    engine = load_in_trace_engine(path)
    if isinstance(engine, str):
        pytest.skip(f"trace.json not loaded in Chrome's trace engine: {engine}")
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        events = spans_as_slices(json.load(f, parse_float=Decimal)["traceEvents"])
    want = collections.Counter(f"{e['pid']}/{e['tid']}" for e in events if e["ph"] in ("X", "I", "i"))  # an instant in either case
    assert engine["generic"], "the engine took it for a Chrome trace"
    got = {k: t["entries"] for k, t in engine["tracks"].items()}
    assert got == dict(want), (got, dict(want))
    for key, t in engine["tracks"].items():
        assert t["in_tree"] == t["entries"], f"track {key}: the engine's tree left out {t['dropped']}"
    slices = {(e["pid"], e["tid"], float(e["ts"])): e["name"] for e in events
              if e["ph"] == "X" and e["cat"] == API_CAT and "family" in e["args"]}
    ends = collections.defaultdict(dict)
    for e in events:
        if e["ph"] in ("s", "f"):
            ends[e["id"]][e["ph"]] = (e["pid"], e["tid"], float(e["ts"]))
    flows = sorted([list(k) + [slices[k]] for k in (se["s"], se["f"])] for se in ends.values() if "f" in se)
    bound = sorted([[tuple(x[:3]), x[3]] for x in f] for f in engine["flows"])
    assert bound == sorted([[tuple(x[:3]), x[3]] for x in f] for f in flows), \
        f"{len(bound)} flows bound of {len(flows)}"
    return len(flows)


def check_trace(out_dir, report):
    trace = load_trace(out_dir)
    assert trace["displayTimeUnit"] == "ns"
    check_calls(trace, report)
    by_track = tracks(trace)
    check_nesting(by_track)
    nflows = check_flows(trace, by_track)
    check_names(trace)
    check_copy_bytes(trace, report)
    assert trace["otherData"]["calls_left_out"] == 0 and report["drops"]["timeline_left_out"] == 0
    return trace, nflows


def test_multi_stream_timeline_agrees_with_the_report(tmp_path):
    report, ref, tr = gp.trace(tmp_path, "multi_stream", args=("--threads", "4", "--iters", "40"),
                               env=gp.sim_env(SIMGPU_DEVICES=2, SIMGPU_KERNEL_US=5))
    proc = gp.check_all(report, ref, exact_peak=False)
    trace, nflows = check_trace(tr.out_dir, report)
    # every queued item has a flow; stream tracks are named as host-observed
    queued = [e for e in trace["traceEvents"] if e["ph"] == "I"]
    assert nflows == len(queued) > 0
    stream_names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
                    if e["ph"] == "M" and e["name"] == "thread_name" and e["tid"] >= 0x40000000}
    assert set(stream_names) == {e["tid"] for e in queued}
    assert all(n.endswith("(host-observed)") for n in stream_names.values())
    # one track per stream the workload queued work on, as its own accounting keys them (by handle: 4
    # threads x (3 streams + a per-thread default stream), and the main thread's stream of peer copies;
    # a handle freed by one thread and made again by another — they run one after another on a busy
    # machine — is one stream there, one row of streams[] and one track)
    kinds = collections.Counter(n.split(" ")[0] for n in stream_names.values())
    # (the legacy default stream only has the main thread's synchronous copies: they queue nothing)
    want = collections.Counter("per-thread" if k.startswith("ptds:") else "stream"
                               for k, w in ref["streams"].items()
                               if k != "legacy" and any(w[f] for f in ("kernels", "graph_launches", "copies", "memsets")))
    assert want["per-thread"] == 4 and 4 <= want["stream"] <= 13, ref["streams"]
    assert kinds == want, stream_names
    launches = [e for e in call_slices(trace) if e["name"] == "cudaLaunchKernel"]
    assert launches and all(e["args"]["kernel"] == "stream_kernel" for e in launches)
    # the device memory counter ends where the report's memory ends
    mem = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"].startswith("device memory")]
    assert max(mem, key=lambda e: ns(e["ts"]))["args"]["live_bytes"] == proc["memory"]["live_bytes"]
    # last (it skips where the engine cannot be had): Chrome's engine keeps and binds all of it
    assert check_in_trace_engine(os.path.join(tr.out_dir, "trace.json")) == nflows


def test_nccl_ranks_timeline(tmp_path):
    """Four rank processes (launched): one pid each, collectives on their streams, flows to their syncs."""
    refs_dir = tmp_path / "refs"
    refs_dir.mkdir()
    tr = gp.Tracer(["--", os.path.join(gp.WORKLOADS, "nccl_ranks"), "--ref-dir", str(refs_dir), "--ranks", "4",
                    "--iters", "3"], tmp_path / "out", env=gp.sim_env())
    assert tr.wait(timeout=180) == 0, tr.stderr
    report = tr.report()
    gp.check_no_loss(report)
    trace, nflows = check_trace(tr.out_dir, report)
    ranks = {p["pid"] for p in report["processes"] if any(r["name"].startswith("nccl") for r in p["cuda_api"])}
    assert len(ranks) == 4
    colls = [e for e in call_slices(trace) if e["args"]["family"] == "nccl" and e["args"]["op"] == "collective"]
    assert {e["pid"] for e in colls} == ranks and all(e["args"]["bytes"] > 0 and "stream" in e["args"] for e in colls)
    assert nflows >= len(colls)
    assert check_in_trace_engine(os.path.join(tr.out_dir, "trace.json")) == nflows


def test_cap_leaves_out_an_exact_count(tmp_path):
    report, _, tr = gp.trace(tmp_path, "multi_stream", args=("--threads", "2", "--iters", "30"),
                             tracer_args=("--timeline-max-events", "100"))
    trace = load_trace(tr.out_dir)
    total = sum(p["api_calls"] for p in report["processes"])
    kept = len(call_slices(trace))
    assert kept == 100 < total
    assert trace["otherData"]["calls_left_out"] == total - kept == report["drops"]["timeline_left_out"]
    by_track = tracks(trace)
    check_nesting(by_track)
    check_flows(trace, by_track)
    check_names(trace)
    assert "timeline_left_out" in tr.report_md()


def test_no_timeline_writes_none_and_removes_an_old_one(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "trace.json").write_text('{"traceEvents": []}')
    wl = gp.Workload("basic_ops", tmp_path)
    report, tr, _ = gp.trace_workload(wl, tmp_path, tracer_args=("--no-timeline",))
    assert report["drops"]["timeline_left_out"] == 0
    assert not os.path.exists(out / "trace.json") and not os.path.exists(out / "trace.json.tmp")


@pytest.mark.parametrize("case", ["demo", "nccl"])
def test_golden_timeline_in_chrome_trace_engine(case):
    """The golden captures' timelines (tests/golden/CASE/trace.json.gz: the demo's with its scheduling
    tracks) as Chrome's trace engine reads them: every slice, instant and flow kept and bound."""
    path = os.path.join(gp.ROOT, "tests", "golden", case, "trace.json.gz")
    with gzip.open(path, "rt") as f:
        trace = json.load(f, parse_float=Decimal)
    trace["traceEvents"] = spans_as_slices(trace["traceEvents"])
    nflows = check_flows(trace, tracks(trace))
    assert check_in_trace_engine(path) == nflows
