# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Stopping (Ctrl-C, SIGTERM, --duration, the target exiting), detaching without a trace,
several targets at once, and loss that is counted instead of hidden."""
import os
import signal
import time

import pytest

import gp


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_detaches_everything_and_reports(tmp_path, sig):
    wl = gp.Workload("basic_ops", tmp_path, hold=True)
    try:
        tr = gp.Tracer(["--pid", str(wl.pid)], tmp_path / "out")
        tr.wait_tracing()
        assert gp.uprobe_links(held_by=tr.proc.pid)  # something really is attached
        wl.release()
        wl.wait_done()  # the workload is alive, holding, its work done
        tr.signal(sig)
        assert tr.wait() == 0, tr.stderr
        links, progs = tr.held.released()
        assert not links and not progs, f"links {links} and programs {progs} left behind after the signal"
        report, ref = tr.report(), wl.ref()
        proc = gp.process(report, wl.pid)
        assert not proc["exited"]
        gp.check_api(proc, ref)
        gp.check_leaks(proc, ref)  # still running: live at end, not leaks
        gp.check_no_loss(report)
        # the target is untouched: it goes on and exits normally
        wl.finish()
    finally:
        wl.kill()


def test_stop_mid_loop_cuts_whole_calls(tmp_path):
    """SIGTERM while the target launches as fast as it can: the cut is one instant (docs/design.md,
    "Stopping"). Every cudaLaunchKernel the report counts is whole — its driver call cuLaunchKernel is
    listed inside it exactly as often, never counted as an outermost call of its own — and the probes'
    own hit counters (kernel-side, independent of the ring) agree: entries of calls that were still
    running at the cut are the only difference."""
    wl = gp.Workload("bench_calls", tmp_path, args=("--iters", "1000000000", "--depth", "4"))
    try:
        tr = gp.Tracer(["--pid", str(wl.pid), "--no-stacks"], tmp_path / "out")
        tr.wait_tracing()
        wl.release()
        time.sleep(1.0)
        tr.signal(signal.SIGTERM)
        assert tr.wait() == 0, tr.stderr
    finally:
        wl.kill()
    report = tr.report()
    proc = gp.process(report, wl.pid)
    rows = {r["name"]: r for r in proc["cuda_api"]}
    assert set(rows) == {"cudaLaunchKernel"}, f"outermost rows {sorted(rows)}: only the launches were running"
    launches = rows["cudaLaunchKernel"]["calls"]
    assert launches > 100, f"{launches} launches in a second of tracing"
    nested = {r["name"]: r for r in proc["nested_api"]}
    assert set(nested) == {"cuLaunchKernel"}, sorted(nested)
    assert nested["cuLaunchKernel"]["calls"] == launches
    assert nested["cuLaunchKernel"]["implements"] == [{"api": "cudaLaunchKernel", "calls": launches}]
    left_out = proc["nested_left_out"]
    assert left_out in (0, 1), f"{left_out} inner calls left out: one thread makes one call at a time"
    hits = gp.instrumentation_hits(report, {lib["path"] for lib in proc["libraries"]})
    assert hits[("cudaLaunchKernel", "uretprobe")] == launches
    assert hits[("cudaLaunchKernel", "uprobe")] - launches in (0, 1)  # one call may have been running
    assert hits[("cuLaunchKernel", "uretprobe")] == launches + left_out
    gp.check_no_loss(report)


def untraced_run_s(tmp_path):
    """How long the workload's calls take on this machine now, from its go to its DONE, untraced."""
    wl = gp.Workload("basic_ops", tmp_path / "untraced", hold=True)
    try:
        t0 = time.monotonic()
        wl.release()
        wl.wait_done()
        return time.monotonic() - t0
    finally:
        wl.kill()


def test_duration_stops_by_itself(tmp_path):
    # every call must fall inside the duration, on a busy machine too: a margin over the same work
    # timed untraced in this run (a few ms here; seconds under emulation beside another VM)
    (tmp_path / "untraced").mkdir()
    duration = 1.5 + 10 * untraced_run_s(tmp_path)
    wl = gp.Workload("basic_ops", tmp_path, hold=True)
    try:
        t0 = time.monotonic()
        tr = gp.Tracer(["--pid", str(wl.pid), "--duration", f"{duration:.3f}"], tmp_path / "out")
        tr.wait_tracing()
        wl.release()
        wl.wait_done()
        assert tr.wait(timeout=60) == 0, tr.stderr
        wall = time.monotonic() - t0
        # the probes' removal after the stop is the kernel's time, measured in the same run: ~50 ms a
        # perf-event link before Linux 6.6 (docs/report-format.md session.kernel.probe_removal)
        removal = tr.report()["session"]["kernel"]["probe_removal"]["ns"] / 1e9
        assert duration - 0.1 <= wall < duration + 13.5 + removal, (wall, duration, removal)
        assert "duration elapsed" in tr.stderr
        gp.check_api(gp.process(tr.report(), wl.pid), wl.ref())
        wl.finish()
    finally:
        wl.kill()


def test_two_targets_in_one_report(tmp_path):
    a = gp.Workload("basic_ops", tmp_path)
    b = gp.Workload("multi_stream", tmp_path, args=("--threads", "3", "--iters", "20"))
    try:
        tr = gp.Tracer(["--pid", str(a.pid), "--pid", str(b.pid)], tmp_path / "out")
        tr.wait_tracing()
        for w in (a, b):
            w.release()
        for w in (a, b):
            w.wait_done()
            w.finish()
        assert tr.wait() == 0, tr.stderr
        report = tr.report()
        assert sorted(p["pid"] for p in report["processes"]) == sorted([a.pid, b.pid])
        gp.check_all(report, a.ref())
        gp.check_all(report, b.ref(), exact_peak=False)
        # one set of probes on the shared library file serves both processes
        assert {r["pid"] for r in report["instrumentation"]} == {0}
        targets = {path for p in report["processes"] for path in gp.runtime_libs(p)}
        assert len(targets) == 1
        assert len(report["instrumentation"]) == len({(r["api"], r["kind"]) for r in report["instrumentation"]})
        gp.check_instrumentation_sum(report, targets, [a.ref(), b.ref()])
    finally:
        a.kill()
        b.kill()


def test_ring_buffer_loss_is_counted_exactly(tmp_path):
    """A 1 MiB ring drained once a second cannot hold a burst of 40,001 calls (20,000 launches,
    20,000 copies, one synchronisation; and as many driver calls implementing them): the records
    that did not fit are counted, and
    recorded + lost equals what the kernel saw, call for call."""
    wl = gp.Workload("bench_calls", tmp_path, args=("--iters", "20000"),
                     env=gp.sim_env(SIMGPU_KERNEL_US=0, SIMGPU_COPY_LATENCY_US=0))
    report, tr, _ = gp.trace_workload(wl, tmp_path, ["--ringbuf-mb", "1", "--poll-ms", "1000"],
                                      output_lines=1)  # the workload's own timing line
    proc = gp.process(report, wl.pid)
    lost = report["drops"]["ringbuf_full"]
    assert lost > 0, "expected a loss with a 1 MiB ring drained once a second"
    # calls made inside other traced calls (the runtime going down to the driver) are records too;
    # those whose outer call's record was lost are left out with it, and counted
    recorded = sum(r["calls"] for r in proc["cuda_api"]) + sum(r["calls"] for r in proc["nested_api"]) \
        + proc["nested_left_out"]
    returns = sum(r["hits"] for r in report["instrumentation"] if r["kind"] == "uretprobe")
    assert recorded + lost == returns
    assert returns == 2 * 40001  # each runtime call is implemented by one driver call
    # other records lost for the same reason are counted under their own cause
    assert report["drops_total"] == sum(report["drops"].values()) >= lost
    assert "ringbuf_full" in tr.report_md()


def test_perf_event_links_fallback(tmp_path):
    """--no-uprobe-multi uses one perf-event link per probe (kernels before 6.6): same answer."""
    report, ref, tr = gp.trace(tmp_path, "basic_ops", tracer_args=("--no-uprobe-multi",))
    gp.check_all(report, ref)
