# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""--timeline-sched (docs/report-format.md, "Timeline"): every traced thread gets a scheduling track in
trace.json. Checked against the kernel's own counters as report.json gives them (exact: one on-CPU slice
per context switch, of the kind the kernel counted it; page faults in the slices = the thread's), against
the workload's own getrusage(RUSAGE_THREAD) and CPU clock, and for internal consistency: slices never
overlap on a track, the on-CPU threads counter equals the slices that cover each of its samples and never
exceeds the CPUs. The capture rebuilds the same file; the cap leaves out an exact count; without the flag
there is none of it."""
import collections
import filecmp
import json
import os
import re
import subprocess

import gp
from test_timeline import check_nesting, load_trace, ns, tracks

SCHED_TID_BASE = 0x60000000
RACE_NS = 20_000  # two switches of one process closer than this may be counted in either order


def sched_tracks(trace):
    """{(pid, tid): [on-CPU slice events, by start]} with the thread id each track is named for."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name" and e["tid"] >= SCHED_TID_BASE}
    by = collections.defaultdict(list)
    for e in trace["traceEvents"]:
        if e.get("cat") == "sched":
            assert e["tid"] >= SCHED_TID_BASE and (e["pid"], e["tid"]) in names, e
            by[(e["pid"], e["tid"])].append(e)
    out = {}
    for track, evs in by.items():
        label = names[track]
        assert label.endswith("): on/off CPU"), label
        tid = int(label[label.rindex("(tid ") + 5:label.rindex(")")])
        evs.sort(key=lambda e: ns(e["ts"]))
        out[(track[0], tid)] = evs
    return out


def check_track(key, evs):
    """On-CPU slices and the off-CPU gaps between them follow each other without overlapping."""
    end = None
    prev_left = None
    for e in evs:
        start = ns(e["ts"])
        assert end is None or start >= end, f"{key}: {e} starts before {end}"
        if e["name"] != "on CPU":
            # a gap is the kind of the slice before it ended with
            assert prev_left == {"off CPU: blocked": "blocked",
                                 "off CPU: runnable (preempted)": "preempted"}[e["name"]], (key, e, prev_left)
            assert start == end, f"{key}: the gap {e} does not start where the slice before ended ({end})"
        else:
            assert e["args"]["left"] in ("blocked", "preempted", "exited")
            prev_left = e["args"]["left"]
        end = start + ns(e["dur"])
    on = [e for e in evs if e["name"] == "on CPU"]
    assert [e["args"]["left"] for e in on].count("exited") <= 1 and \
        all(e["args"]["left"] != "exited" for e in on[:-1]), f"{key}: a slice after the thread exited"
    return on


def check_oncpu_counter(trace, pid, on_slices):
    """Each sample = the counted slices of the process that cover it (switches of two threads within
    RACE_NS may be counted in either order); 0 ≤ value ≤ CPUs; the last sample is 0 (all exited)."""
    samples = sorted((ns(e["ts"]), e["args"]["threads"]) for e in trace["traceEvents"]
                     if e["ph"] == "C" and e["pid"] == pid and e["name"] == "on-CPU threads")
    counted = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in on_slices if e["args"].get("counted", True)]
    assert samples and len(samples) == 2 * len(counted), (len(samples), len(counted))
    for t, v in samples:
        assert 0 <= v <= os.cpu_count(), (t, v)
        surely = sum(1 for a, b in counted if a < t - RACE_NS and t + RACE_NS < b)
        maybe = sum(1 for a, b in counted if a <= t + RACE_NS and t - RACE_NS <= b)
        assert surely <= v <= maybe, f"on-CPU threads {v} at {t}: slices cover it {surely}..{maybe}"
    assert samples[-1][1] == 0, samples[-5:]
    return max(v for _, v in samples)


SCHED_DEBUG = "/sys/kernel/debug/sched/debug"


def cpu_unaccounted_ns():
    """({cpu: ns}, resolution in ns): wall time each CPU's running task was not charged for so far,
    what a hypervisor stole from the vCPU (and interrupts, where the kernel accounts their time
    apart), as the scheduler counts it: its rq clock minus its task clock (debugfs sched/debug,
    mounted if need be). Without that file, /proc/stat's steal, in ticks."""
    if not os.path.exists(SCHED_DEBUG) and not os.path.ismount("/sys/kernel/debug"):
        subprocess.run(["mount", "-t", "debugfs", "none", "/sys/kernel/debug"], check=False)
    try:
        with open(SCHED_DEBUG) as f:
            text = f.read()
        out = {}
        for cpu, body in re.findall(r"^cpu#(\d+),.*?\n(.*?)(?=^cpu#|\Z)", text, re.M | re.S):
            clock = re.search(r"^\s*\.clock\s*:\s*([\d.]+)", body, re.M)
            task = re.search(r"^\s*\.clock_task\s*:\s*([\d.]+)", body, re.M)
            out[int(cpu)] = round((float(clock.group(1)) - float(task.group(1))) * 1e6)  # ms -> ns
        return out, 1  # printed in ms with 6 decimals: ns
    except (OSError, AttributeError):
        tick = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
        with open("/proc/stat") as f:
            return {int(l.split()[0][3:]): int(l.split()[8]) * tick for l in f if re.match(r"cpu\d", l)}, tick


def unaccounted_during(before):
    """{cpu: ns} the CPUs' tasks were not charged for since cpu_unaccounted_ns() gave `before`:
    at most this much (each side rounded down to the resolution)."""
    (was, _), (now, res) = before, cpu_unaccounted_ns()
    return {cpu: v - was.get(cpu, 0) + res for cpu, v in now.items()}


def most_at_once(on_slices):
    """The most counted slices that surely overlap (by more than RACE_NS at each end)."""
    edges = []
    for e in on_slices:
        a, b = ns(e["ts"]) + RACE_NS, ns(e["ts"]) + ns(e["dur"]) - RACE_NS
        if e["args"].get("counted", True) and a < b:
            edges += [(a, 1), (b, -1)]
    most = now = 0
    for _, step in sorted(edges):  # at a tie the end (-1) sorts first: touching is not overlapping
        now += step
        most = max(most, now)
    return most


def test_sched_slices_agree_with_the_kernel(tmp_path):
    wl = gp.Workload("cpu_mix", tmp_path,
                     args=("--sleepers", "2", "--spinners", "5", "--spin-ms", "150", "--pages", "3000"))
    before = cpu_unaccounted_ns()
    report, tr, lines = gp.trace_workload(wl, tmp_path, tracer_args=("--timeline-sched",), output_lines=1)
    unaccounted = unaccounted_during(before)
    ref = json.loads(lines[0])
    gp.check_no_loss(report)
    assert report["drops"]["sched_slice_lost"] == 0 and report["drops"]["timeline_sched_left_out"] == 0
    trace = load_trace(tr.out_dir)
    check_nesting(tracks(trace))
    proc = gp.process(report, wl.pid)
    threads = {t["tid"]: t for t in proc["threads"]}
    by_thread = sched_tracks(trace)
    assert {tid for pid, tid in by_thread} == {t["tid"] for t in proc["threads"] if t["ran"]}, \
        "a scheduling track per traced thread that ran"

    on_all, stolen = [], {}
    for (pid, tid), evs in by_thread.items():
        assert pid == wl.pid
        on = check_track((pid, tid), evs)
        on_all += on
        t = threads[tid]
        kinds = collections.Counter(e["args"]["left"] for e in on)
        # one slice per switch-out the kernel counted, and the exiting one
        assert kinds["blocked"] == t["voluntary_switches"], (tid, dict(kinds), t)
        assert kinds["preempted"] == t["involuntary_switches"], (tid, dict(kinds), t)
        assert kinds["exited"] == (1 if t["exited"] else 0), (tid, dict(kinds), t)
        if not any(e["args"].get("page_faults") == "unknown" for e in on):
            assert sum(e["args"]["minor_faults"] for e in on) == t["minor_faults"], tid
            assert sum(e["args"]["major_faults"] for e in on) == t["major_faults"], tid
        # on-CPU wall time in the slices vs the kernel's task clock, for threads that ran long stays (a
        # mean of 1 ms or more: the spinners, the toucher). The task clock is charged from the
        # scheduler's pick, a little before the sched_switch tracepoint a slice starts at, so each stay
        # has a gap outside its slice: ~8 us a stay seen here (a sleeper: 0.79 ms of task clock, 0.44 ms
        # in its 41 slices), ~35 us under software emulation, where a sleeper's task clock passes 5 ms
        # in stays of ~150 us. Threads of short stays are not compared.
        # The slices' wall time holds what the hypervisor stole meanwhile, the task clock does not: up
        # to what was stolen from the CPUs it ran on during the run (steal comes in bursts of ms).
        oncpu = sum(ns(e["dur"]) for e in on)
        stolen[tid] = sum(unaccounted.get(c, 0) for c in {e["args"]["cpu"] for e in on})
        if t["cpu_ns"] >= 5_000_000 and t["cpu_ns"] >= 1_000_000 * len(on):
            assert t["cpu_ns"] * 0.95 - 1_000_000 <= oncpu <= t["cpu_ns"] * 1.10 + 1_000_000 + stolen[tid], \
                (tid, oncpu, t["cpu_ns"], stolen[tid])
        assert oncpu <= t["wall_ns"], (tid, oncpu, t["wall_ns"])

    # against the workload's own accounting. Each worker measured itself from begin_mono_ns to
    # end_mono_ns, instants on the slices' clock (CLOCK_MONOTONIC) at which its counters were read:
    # a switch-out before begin_mono_ns is not in its numbers, one before end_mono_ns is. Its
    # start-up and exit (preemptions there too, under load) lie outside: only the slices that
    # ended inside its window are compared, exactly.
    for w in ref["workers"]:
        tid = next(k for k in w if k != "role")
        want = w[tid]
        begin, end = want["begin_mono_ns"], want["end_mono_ns"]
        on = [e for e in by_thread[(wl.pid, int(tid))] if e["name"] == "on CPU"]
        inside = [e for e in on if begin < ns(e["ts"]) + ns(e["dur"]) < end]
        kinds = collections.Counter(e["args"]["left"] for e in inside)
        assert kinds["blocked"] == want["voluntary_switches"], (w["role"], dict(kinds), want)
        assert kinds["preempted"] == want["involuntary_switches"], (w["role"], dict(kinds), want)
        assert kinds["exited"] == 0, (w["role"], dict(kinds), want)
        # A slice's faults are those taken since the switch-out before it (the counters are read
        # at switch-outs): the window's lie between the slices' after the first inside it and
        # those of the slices inside it and the next; the whole thread's add its start-up and exit
        ends = [ns(e["ts"]) + ns(e["dur"]) for e in on]
        first = next(i for i, t in enumerate(ends) if t > begin)
        after = next(i for i, t in enumerate(ends) if t >= end)  # the slice the window ends in
        faults = [e["args"].get("minor_faults") for e in on]
        if None not in faults[first:after + 1]:
            assert sum(faults[first + 1:after]) <= want["minor_faults"] <= sum(faults[first:after + 1]), \
                (w["role"], faults[first:after + 1], want)
        assert 0 <= sum(e["args"]["minor_faults"] for e in on) - want["minor_faults"] <= 8, (w["role"], want)
        # on-CPU wall time inside the window against the thread's CPU clock over it
        oncpu = sum(max(0, min(end, ns(e["ts"]) + ns(e["dur"])) - max(begin, ns(e["ts"]))) for e in on)
        if w["role"] != "sleeper":
            assert want["cpu_ns"] * 0.95 - 1_000_000 <= oncpu <= want["cpu_ns"] * 1.10 + 1_000_000 + stolen[int(tid)], \
                (w["role"], oncpu, want, stolen[int(tid)])
        if w["role"] == "toucher":
            faults = [e for e in trace["traceEvents"]
                      if e["ph"] == "C" and e["name"] == f"page faults, tid {tid}"]
            assert max(e["args"]["minor"] for e in faults) >= 3000

    busiest = check_oncpu_counter(trace, wl.pid, on_all)
    # the counter's peak is at least the most slices that ran at once, whatever else ran on the
    # machine meanwhile (how often the spinners met on the CPUs is up to the load)
    assert busiest >= most_at_once(on_all), (busiest, most_at_once(on_all))
    other = trace["otherData"]
    assert other["sched_slices"] == other["sched_slices_kept"] == len(on_all)
    assert other["sched_slices_left_out"] == 0

    # the capture carries the slices: the same trace.json from it, byte for byte
    rebuilt = tmp_path / "rebuilt"
    rc, _, err = gp.run_gpuprobed(["report", os.path.join(tr.out_dir, "capture.gpz"), "-o", str(rebuilt)])
    assert rc == 0, err
    assert filecmp.cmp(os.path.join(tr.out_dir, "trace.json"), rebuilt / "trace.json", shallow=False)


def small_run(tmp_path, *tracer_args):
    wl = gp.Workload("cpu_mix", tmp_path, args=("--sleepers", "2", "--spinners", "1", "--spin-ms", "20",
                                                "--pages", "16"))
    report, tr, _ = gp.trace_workload(wl, tmp_path, tracer_args=tracer_args, output_lines=1)
    return report, tr


def test_cap_leaves_out_an_exact_count_of_slices(tmp_path):
    report, tr = small_run(tmp_path, "--timeline-sched", "--timeline-max-events", "25")
    trace = load_trace(tr.out_dir)
    other = trace["otherData"]
    written = sum(1 for e in trace["traceEvents"] if e.get("cat") == "sched" and e["name"] == "on CPU")
    assert written == other["sched_slices_kept"] == 25
    assert other["sched_slices"] > 80, "two sleepers switch 40 times each"
    assert report["drops"]["timeline_sched_left_out"] == other["sched_slices"] - 25
    assert "on-CPU slices left out" in tr.stderr


def test_without_the_flag_no_scheduling(tmp_path):
    report, tr = small_run(tmp_path)
    trace = load_trace(tr.out_dir)
    assert not [e for e in trace["traceEvents"]
                if e.get("cat") == "sched" or (e["ph"] == "C" and e["name"] == "on-CPU threads")]
    assert trace["otherData"]["sched_slices"] == 0
    assert report["drops"]["sched_slice_lost"] == 0


def test_sched_needs_the_timeline(tmp_path):
    rc, _, err = gp.run_gpuprobed(["--timeline-sched", "--no-timeline", "-o", str(tmp_path), "--", "true"])
    assert rc == 2
    assert "--timeline-sched and --no-timeline contradict each other" in err
