# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A timeline of any length: a file ends once it holds --timeline-file-mb MiB of events (256 by
default, well under the ~512 MiB string V8 can hold, past which neither Chrome nor speedscope opens a
file) and the timeline goes on in trace.1.json, trace.2.json ... Each file stands alone (its tracks
named, its metadata, its links to the files before and after it) and Chrome's trace engine opens
each whole; report.json and report.md name them; an earlier run's continuations are removed."""
import collections
import json
import os
import re
from decimal import Decimal

import pytest

import gp
import test_timeline as tlt

STREAM_TID_BASE = 0x40000000
LINE = re.compile(r'^\{"ph":"(\w)","pid":(\d+),"tid":(\d+),')


def names_on_disk(out):
    """The timeline files in out, in their order (trace.json, trace.1.json ...)."""
    found = [n for n in os.listdir(out) if n == "trace.json" or re.fullmatch(r"trace\.\d+\.json", n)]
    return sorted(found, key=lambda n: 0 if n == "trace.json" else int(n.split(".")[1]))


def check_links(other, k, n):
    """otherData's file number and its links to the files before and after it."""
    assert other["file"] == k
    assert other.get("continues") == (None if k == 0 else ("trace.json" if k == 1 else f"trace.{k - 1}.json"))
    assert other.get("continued_in") == (None if k == n - 1 else f"trace.{k + 1}.json")


def test_small_files_each_whole_in_the_engine(tmp_path):
    """multi_stream's timeline cut at 1 MiB: several files, each at most its size plus its names and
    metadata, each standing alone (every track it uses named, every slice nested, Chrome's engine keeps
    every slice and instant and binds every flow whose ends are in it: a flow never spans two files),
    together every call of the report once and its copied bytes; report.json and report.md name the
    files; a second run in one file removes the first one's continuations."""
    report, ref, tr = gp.trace(tmp_path, "multi_stream", args=("--threads", "4", "--iters", "400"),
                               env=gp.sim_env(SIMGPU_DEVICES=2, SIMGPU_KERNEL_US=5),
                               tracer_args=("--timeline-file-mb", "1"))
    gp.check_all(report, ref, exact_peak=False)
    names = report["session"]["timeline_files"]
    assert len(names) >= 3 and names == names_on_disk(tr.out_dir), (names, names_on_disk(tr.out_dir))
    assert f"- Timeline: {len(names)} files, `trace.json` to `{names[-1]}`" in tr.report_md()
    everything = []
    for k, name in enumerate(names):
        path = os.path.join(tr.out_dir, name)
        assert os.path.getsize(path) <= (1 << 20) + (64 << 10), f"{name}: {os.path.getsize(path)} bytes"
        with open(path) as f:
            trace = json.load(f, parse_float=Decimal)
        check_links(trace["otherData"], k, len(names))
        trace["traceEvents"] = tlt.spans_as_slices(trace["traceEvents"])
        tlt.check_names(trace)
        tlt.check_nesting(tlt.tracks(trace))
        tlt.check_in_trace_engine(path)
        everything += trace["traceEvents"]
    last = trace["otherData"]
    whole = {"traceEvents": everything}
    tlt.check_calls(whole, report)
    tlt.check_copy_bytes(whole, report)
    assert last["calls"] == last["calls_kept"] == len(tlt.call_slices(whole)) and last["calls_left_out"] == 0
    # the same session's capture, reported again in one file: the continuations go
    rc, _, err = gp.run_gpuprobed(["report", os.path.join(tr.out_dir, "capture.gpz"), "-o", tr.out_dir,
                                   "--timeline-file-mb", "500"], timeout=120)
    assert rc == 0, err
    assert names_on_disk(tr.out_dir) == ["trace.json"]
    with open(os.path.join(tr.out_dir, "report.json")) as f:
        assert json.load(f)["session"]["timeline_files"] == ["trace.json"]


def scan(path):
    """One pass over a file, a line at a time (one event per line): per track the slices and instants
    Chrome's engine takes for it (X, I, a B with its E), the call slices, and the ids of the flows
    each end of which is in the file."""
    entries, calls, flows = collections.Counter(), 0, {"s": set(), "f": set()}
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            ph, pid, tid = m.group(1), int(m.group(2)), int(m.group(3))
            if ph in ("X", "I", "B"):
                entries[f"{pid}/{tid}"] += 1
            if ph == "X" and tid < STREAM_TID_BASE and '"cat":"api"' in line:
                calls += 1
            if ph in ("s", "f"):
                flows[ph].add(int(re.search(r'"id":(\d+)', line).group(1)))
    return entries, calls, flows


def test_two_million_calls_in_files_the_engine_opens(tmp_path):
    """2,000,000 calls (a million launches and a million copies): more than one file of 256 MiB can
    hold; every file under its size plus its names (so under V8's string limit), Chrome's engine opens
    each and keeps every slice and instant of it, every flow it binds has both ends in that file;
    together the files hold every call the workload made, once."""
    iters = 1_000_000
    out = tmp_path / "out"
    try:
        rc, _, err = gp.run_gpuprobed(["--no-stacks", "--no-record", "-o", str(out), "--",
                                       os.path.join(gp.WORKLOADS, "bench_calls"), "--iters", str(iters),
                                       "--depth", "4"],
                                      env=gp.sim_env(SIMGPU_KERNEL_US=0, SIMGPU_RUNTIME_DIRECT=1), timeout=600)
        assert rc == 0, err
        with open(out / "report.json") as f:
            report = json.load(f)
        proc = next(p for p in report["processes"] if p["comm"] == "bench_calls")
        made = {r["name"]: r["calls"] for r in proc["cuda_api"]}
        assert made["cudaLaunchKernel"] == made["cudaMemcpyAsync"] == iters  # the workload's own loops
        names = report["session"]["timeline_files"]
        assert len(names) >= 4 and names == names_on_disk(out), names
        calls = 0
        for name in names:
            path = str(out / name)
            assert os.path.getsize(path) <= (256 << 20) + (1 << 20), f"{name}: {os.path.getsize(path)} bytes"
            entries, n, flows = scan(path)
            calls += n
            engine = tlt.load_in_trace_engine(path)
            if isinstance(engine, str):
                pytest.skip(f"{name} not loaded in Chrome's trace engine: {engine}")
            got = {k: t["entries"] for k, t in engine["tracks"].items()}
            assert got == dict(entries), (name, got, dict(entries))
            assert all(t["in_tree"] == t["entries"] for t in engine["tracks"].values()), name
            assert flows["f"] <= flows["s"], f"{name}: a flow's finish without its start"
            assert len(engine["flows"]) == len(flows["f"]), name
        assert calls == sum(made.values()) and report["drops"]["timeline_left_out"] == 0
    finally:  # a gigabyte: not left for pytest's kept temporary directories
        for name in names_on_disk(out) if out.exists() else []:
            os.unlink(out / name)
