# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""--aggregate: hot calls (launches, synchronisations, event calls) counted in the kernel, not one
record each. The API table must equal the workload's own accounting and the same session traced
call by call; copies, allocations and everything else that changes tracked state stay records; the
capture of an aggregated session rebuilds its report.json byte for byte (but "source")."""
import os
import re

import gp
from test_capture import report_from, without_source

COUNTING = ["--no-stacks", "--no-timeline"]
# shapes counted in the kernel (src/probes/uprobes.c, gp_uprobes_aggregatable), as basic_ops calls them
AGGREGATED = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cudaGraphLaunch",
              "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventRecord", "cudaEventSynchronize",
              "cudaStreamWaitEvent"}


def recorded(stderr):
    """(calls recorded, counted in the kernel) from gpuprobed's closing line."""
    m = re.search(r"(\d+) calls recorded(?: \(and \d+ inside them\))?(?: \+ (\d+) counted in the kernel)?", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2) or 0)


def api_rows(report, pid):
    return {r["name"]: r for r in gp.process(report, pid)["cuda_api"]}


def test_aggregate_equals_per_call_records(tmp_path):
    """basic_ops with and without --aggregate: the same calls and errors per API, and the workload's own."""
    agg, ref, tr = gp.trace(tmp_path / "agg", "basic_ops", tracer_args=["--aggregate", *COUNTING])
    plain, pref, ptr = gp.trace(tmp_path / "plain", "basic_ops", tracer_args=COUNTING)
    proc = gp.process(agg, ref["pid"])
    gp.check_api(proc, ref)  # calls, errors and codes (each of these APIs fails with one code only)
    gp.check_transfers(proc, ref)
    gp.check_memory(proc, ref)
    gp.check_threads(proc, ref)
    gp.check_instrumentation(agg, ref["pid"], ref)
    gp.check_no_loss(agg)
    assert agg["drops"]["agg_table_full"] == 0
    rows, prows = api_rows(agg, ref["pid"]), api_rows(plain, pref["pid"])
    assert {n: (r["calls"], r["errors"]) for n, r in rows.items()} == \
        {n: (r["calls"], r["errors"]) for n, r in prows.items()}
    for name, r in rows.items():
        want = r["calls"] if name in AGGREGATED else 0
        assert r["aggregated_calls"] == want, f"{name}: {r['aggregated_calls']} aggregated of {r['calls']}"
        assert prows[name]["aggregated_calls"] == 0
        # exact in both modes: count, sum, min and max are the kernel's counters
        assert r["min_ns"] <= r["avg_ns"] <= r["max_ns"]
        assert r["min_ns"] <= r["med_ns"] <= r["max_ns"] and r["min_ns"] <= r["p99_ns"] <= r["max_ns"]
    assert AGGREGATED <= set(rows)
    # the work view counts the aggregated launches as the records did
    work = lambda rep, pid: {k: (w["launches"], w["graph_launches"]) for k, w in gp.process(rep, pid)["gpu_work"].items()}
    assert work(agg, ref["pid"]) == work(plain, pref["pid"])
    # the same calls, nested ones included, with far fewer records through the ring
    n_agg, in_kernel = recorded(tr.stderr)
    n_plain, none = recorded(ptr.stderr)
    assert none == 0 and in_kernel > 0
    outer_aggregated = sum(rows[n]["calls"] for n in AGGREGATED)
    assert n_agg == n_plain - outer_aggregated
    assert "counted in the kernel (--aggregate)" in tr.report_md()


def test_aggregate_capture_reproduces_report(tmp_path):
    """The aggregates are model operations: the capture's report.json equals the live one."""
    report, ref, tr = gp.trace(tmp_path, "basic_ops", tracer_args=["--aggregate", *COUNTING])
    assert sum(r["aggregated_calls"] for r in api_rows(report, ref["pid"]).values()) > 0
    out = os.path.join(tr.out_dir)
    # without a timeline, as the live session (session.timeline_files says which were written)
    rc, err = report_from(os.path.join(out, "capture.gpz"), tmp_path / "again", "--no-timeline")
    assert rc == 0, err
    with open(os.path.join(out, "report.json")) as f:
        live = f.read()
    with open(tmp_path / "again" / "report.json") as f:
        again = f.read()
    assert without_source(again) == without_source(live)


def test_aggregate_off_with_stacks_or_timeline(tmp_path):
    """Stacks and the timeline need a record per call: --aggregate says it is off, and counts nothing."""
    report, ref, tr = gp.trace(tmp_path, "basic_ops", tracer_args=["--aggregate", "--no-record"])
    assert "--aggregate is off: stacks and the timeline need a record per call" in tr.stderr
    assert all(r["aggregated_calls"] == 0 for r in api_rows(report, ref["pid"]).values())
    gp.check_api(gp.process(report, ref["pid"]), ref)
