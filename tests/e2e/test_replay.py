# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""gpuprobed replay: a captured multi-stream workload (tests/workloads/replay_streams.c) re-issued
on the simulator keeps each stream's operations in order (checked by tracing the replay itself and
planning that capture) and each thread's think times, its copies take the simulator's modelled time, and
each what-if change moves the time by what the simulator's timing model predicts from its knobs and the
think times of the capture. Every time is checked against a reference from the same run: the capture's
own timeline (trace.json), the simulator's modelled durations, the replay's measured lateness, the
spread of a what-if's rounds. Bad input: one message, the right status."""
import json
import os
import types

import pytest

import gp

MiB = 1024 * 1024
# replay_streams' constants (tests/workloads/replay_streams.c)
COPIES, COPY_BYTES, THINK_NS = 10, 4 * MiB, 3_000_000
# bandwidths in GB/s (1e9 bytes/s): pageable copies are slow, so main's synchronous copies dominate
KNOBS = dict(SIMGPU_KERNEL_TIMES="produce=2000,consume=3000",
             SIMGPU_BW_HTOD_PAGEABLE_GBPS=0.5, SIMGPU_BW_HTOD_PINNED_GBPS=2,
             SIMGPU_BW_DTOH_PAGEABLE_GBPS=0.5, SIMGPU_BW_DTOH_PINNED_GBPS=2)
PAGEABLE_COPY_NS = COPY_BYTES / 0.5      # bytes / (GB/s) = ns: 8.39 ms
PINNED_COPY_NS = COPY_BYTES / 2          # 2.10 ms
# one iteration of the consumer's GPU work: "consume" (3 ms), a 1 MiB memset (1000 GB/s) and a 1 MiB
# pinned device-to-host copy
CONSUMER_ITERATION_NS = 3_000_000 + MiB / 1000 + MiB / 2
# The workload's redundant synchronisations: the producer's second final stream sync, the consumer's
# second sync of each of its 5 iterations, main's device sync after the threads' final syncs.
REDUNDANT_SYNCS = 1 + 5 + 1


def sim_env():
    return gp.sim_env(**KNOBS)


def replay(args, timeout=120):
    return gp.run_gpuprobed(["replay", *args], timeout=timeout, env=sim_env())


def replay_json(out_dir):
    with open(os.path.join(str(out_dir), "replay.json")) as f:
        return json.load(f)


def sequences(proc):
    return {s["stream"]: s["operations"] for s in proc["streams"]}


# The workload's calls the replay issues again; the others (stream and event creation and destruction)
# are host time, part of the think time.
REPLAYED = {"cudaMalloc", "cudaMallocHost", "cudaFree", "cudaFreeHost", "cudaMemcpy", "cudaMemcpyAsync",
            "cudaMemsetAsync", "cudaLaunchKernel", "cudaEventRecord", "cudaStreamWaitEvent",
            "cudaStreamSynchronize", "cudaDeviceSynchronize"}


def timeline(out_dir):
    """tid -> the thread's replayed calls in the capture's own timeline (trace.json), in order:
    (name, entry ns, return ns)."""
    with open(os.path.join(str(out_dir), "trace.json")) as f:
        events = json.load(f)["traceEvents"]
    calls = {}
    for e in sorted(events, key=lambda e: e.get("ts", 0)):
        if e.get("ph") == "X" and e.get("args", {}).get("family") == "cudart" and e["name"] in REPLAYED:
            entry = round(e["ts"] * 1000)
            calls.setdefault(e["tid"], []).append((e["name"], entry, entry + round(e["dur"] * 1000)))
    return calls


def think_ns(calls):
    """A thread's think time as the replay plans it: from its first call's entry to its last call's
    return, less the time in its calls."""
    return calls[-1][2] - calls[0][1] - sum(end - entry for _, entry, end in calls)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """The workload traced from its start: its capture, its report, its own wall time, each thread's
    calls as captured, and main's think time before each of its copies but the first (~THINK_NS)."""
    out = tmp_path_factory.mktemp("replay-orig")
    rc, stdout, err = gp.run_gpuprobed(["-o", str(out), "--", os.path.join(gp.WORKLOADS, "replay_streams")],
                                       timeout=120, env=sim_env())
    assert rc == 0, err
    wall = [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("WALL_NS ")]
    assert len(wall) == 1, stdout
    with open(out / "report.json") as f:
        report = json.load(f)
    [proc] = report["processes"]
    calls = timeline(out)
    assert proc["pid"] in calls, ("no call of the workload in the capture", report["drops"])
    copies = [c for c in calls[proc["pid"]] if c[0] == "cudaMemcpy"]
    assert len(copies) == COPIES
    thinks = [b[1] - a[2] for a, b in zip(copies, copies[1:])]
    assert all(t >= THINK_NS for t in thinks), thinks  # main's usleep(THINK_US) between its copies
    return types.SimpleNamespace(path=str(out / "capture.gpz"), report=report, wall=wall[0], pid=proc["pid"],
                                 calls=calls, copy_thinks=thinks)


def test_plan_of_the_capture(captured, tmp_path):
    """--dry-run: the plan as the workload made it, stream by stream, with nothing issued."""
    rc, out, err = gp.run_gpuprobed(["replay", captured.path, "--dry-run", "-o", str(tmp_path)])
    assert rc == 0, err
    doc = replay_json(tmp_path)
    assert doc["schema"] == "gpuprobed.replay/1"
    [proc] = doc["processes"]
    assert proc["comm"] == "replay_streams" and len(proc["threads"]) == 3
    assert "replayed_ns" not in proc and proc["not_replayed"] == {}
    seq = sequences(proc)
    assert set(seq) == {"legacy", "s0", "s1"}
    assert seq["legacy"] == [f"copy HtoD pageable sync {COPY_BYTES}"] * COPIES
    assert seq["s0"] == ["kernel produce", "stream_sync"] + [
        op for i in range(5) for op in (f"copy HtoD pinned async {4 * MiB}", "kernel produce", f"event_record e{i}")
    ] + ["stream_sync", "stream_sync"]
    assert seq["s1"] == [op for i in range(5) for op in (
        f"stream_wait_event e{i}", "kernel consume", f"memset async {MiB}", f"copy DtoH pinned async {MiB}",
        "stream_sync", "stream_sync")]
    assert proc["redundant_syncs"] == REDUNDANT_SYNCS
    # each thread: its calls and its time as captured
    for t in proc["threads"]:
        calls = captured.calls[t["tid"]]
        assert t["ops"] == len(calls) and "replayed_ns" not in t
        assert t["original_ns"] == calls[-1][2] - calls[0][1], (t, calls)
    kernels = {k["name"]: k for k in proc["kernels"]}
    # produce ran once alone on an idle stream, then the producer synchronised: its inferred duration is
    # that launch's entry to that synchronisation's return as captured, at least the 2 ms modelled
    [producer] = [c for c in captured.calls.values() if c[0][0] == "cudaLaunchKernel"]
    assert [c[0] for c in producer[:2]] == ["cudaLaunchKernel", "cudaStreamSynchronize"]
    assert kernels["produce"]["duration_source"] == "inferred" and kernels["produce"]["observations"] == 1
    assert kernels["produce"]["duration_ns"] == producer[1][2] - producer[0][1]
    assert kernels["produce"]["duration_ns"] >= 2_000_000
    assert kernels["consume"]["duration_source"] == "none"
    # the report of the same capture counts the same work on the same streams
    rep = gp.process(captured.report, proc["pid"])
    assert sum(s["kernels"] for s in rep["streams"]) == sum(k["launches"] for k in proc["kernels"]) == 11


def test_replay_keeps_order_and_time(captured, tmp_path):
    """The replay, itself traced: its capture planned again gives each stream's operations in the same
    order. Each replayed thread took exactly the captured think times plus how late the replay issued its
    calls (as the replay measured it) plus the time in its calls; main's copies took at least the
    simulator's modelled time, so the legacy stream at least its think times and the copies' time.
    Nothing is compared with the original's wall time, which the host's load at either run moves."""
    rc, out, err = gp.run_gpuprobed(["-o", str(tmp_path / "retrace"), "--", gp.GPUPROBED, "replay",
                                     captured.path, "-o", str(tmp_path / "r")], timeout=180, env=sim_env())
    assert rc == 0, err
    assert "wall time: original" in out
    [proc] = replay_json(tmp_path / "r")["processes"]
    assert proc["replay"]["errors"] == 0 and proc["replay"]["kernels"] == "simulator names"
    # the workload's own clock, read before its first call and after its last, brackets the capture's
    assert proc["original_ns"] <= captured.wall
    threads = {t["tid"]: t for t in proc["threads"]}
    assert set(threads) == set(captured.calls)
    for tid, t in threads.items():
        calls = captured.calls[tid]
        assert t["ops"] == len(calls) and t["original_ns"] == calls[-1][2] - calls[0][1]
        # exact (to a ns of rounding per call): both clocks are CLOCK_MONOTONIC ns; trace.json keeps ns
        think = think_ns(calls)
        assert abs(t["replayed_ns"] - t["late_ns"] - t["calls_ns"] - think) <= len(calls), (t, think)
    main = threads[captured.pid]
    # main's first call is the process's first and its last the last (its frees); in the replay, the
    # process's time ends with whichever thread ended last
    assert proc["original_ns"] == main["original_ns"]
    assert proc["replayed_ns"] == max(ends(proc["threads"]).values())
    # the copies' modelled time bounds main's time in calls, as in the capture
    copies = [c for c in captured.calls[captured.pid] if c[0] == "cudaMemcpy"]
    assert all(end - entry >= PAGEABLE_COPY_NS for _, entry, end in copies)
    assert main["calls_ns"] >= COPIES * PAGEABLE_COPY_NS
    streams = {s["stream"]: s for s in proc["streams"]}
    floor = sum(captured.copy_thinks) + COPIES * PAGEABLE_COPY_NS
    assert streams["legacy"]["original_ns"] >= floor and streams["legacy"]["replayed_ns"] >= floor
    # each stream here is one thread's (legacy: main's, s0: the producer's, s1: the consumer's): its
    # operations lie within that thread's time
    issuer = {"legacy": "cudaMemcpy", "s0": "cudaLaunchKernel", "s1": "cudaStreamWaitEvent"}
    for name, first_call in issuer.items():
        if name == "legacy":
            tid = captured.pid
        else:
            [tid] = [tid for tid, calls in captured.calls.items() if calls[0][0] == first_call]
        assert streams[name]["replayed_ns"] <= threads[tid]["replayed_ns"], (name, threads[tid])
    rc, _, err = gp.run_gpuprobed(["replay", str(tmp_path / "retrace" / "capture.gpz"), "--dry-run",
                                   "-o", str(tmp_path / "again")])
    assert rc == 0, err
    [again] = [p for p in replay_json(tmp_path / "again")["processes"] if p["comm"] == "gpuprobed"]
    assert sequences(again) == sequences(proc)


# Rounds of a what-if. With 7, a change that does nothing has its median saving further from 0 than the
# range of the rounds' savings about once in 2,000 runs of independent, symmetric noise (docs/replay.md);
# the 3 ms floor makes it rarer on a quiet machine. Each round is two replays of ~0.12 s.
ROUNDS = 7


def what_if(captured, tmp_path, what):
    """Replays with the change in ROUNDS rounds. Returns the process, its what_if, and the tolerance of a
    prediction: the larger of 3 ms and the range of the rounds' savings (their spread)."""
    rc, out, err = replay([captured.path, "--what-if", what, "--rounds", str(ROUNDS), "-o", str(tmp_path)])
    assert rc == 0, err
    assert f"what-if {what}: " in out and f"median of {ROUNDS} rounds" in out
    [proc] = replay_json(tmp_path)["processes"]
    w = proc["what_if"]
    assert w["errors_all_rounds"] == 0 and w["errors"] == 0 and proc["replay"]["errors"] == 0
    rounds = w["rounds"]
    assert [r["first"] for r in rounds] == ["changed" if i % 2 else "baseline" for i in range(ROUNDS)]
    assert all(r["saving_ns"] == r["baseline_ns"] - r["changed_ns"] for r in rounds)
    savings = sorted(r["saving_ns"] for r in rounds)
    median = rounds[w["median_round"]]
    assert w["saving_ns"] == savings[ROUNDS // 2] == median["saving_ns"]
    assert (w["baseline_ns"], w["changed_ns"]) == (median["baseline_ns"], median["changed_ns"])
    assert proc["replayed_ns"] == w["baseline_ns"] and w["wall_ns"] == w["changed_ns"]
    assert (w["saving_min_ns"], w["saving_max_ns"]) == (savings[0], savings[-1])
    assert w["saving_spread_ns"] == savings[-1] - savings[0]
    return proc, w, max(3_000_000, w["saving_spread_ns"])


def ends(threads):
    """tid -> when the thread's last call returned, after the process's first call, in a replay."""
    return {t["tid"]: t["start_ns"] + t["replayed_ns"] for t in threads}


def wall_saving(proc, w, pid, main_saving):
    """The wall time saved when main, whose calls are all the change touches, ends main_saving earlier
    and the other threads end when they did in the changed replay (the capture, taken on a busy host,
    may make another thread end after main's shortened end)."""
    base, chg = ends(proc["threads"]), ends(w["threads"])
    assert max(base.values()) == w["baseline_ns"] and max(chg.values()) == w["changed_ns"]
    others = max(e for tid, e in chg.items() if tid != pid)
    return w["baseline_ns"] - max(base[pid] - main_saving, others)


def main_thread(proc, w, pid):
    """main in the median round's baseline and changed replays: its replayed_ns, late_ns, calls_ns."""
    [base] = [t for t in proc["threads"] if t["tid"] == pid]
    [chg] = [t for t in w["threads"] if t["tid"] == pid]
    return base, chg


def wake_ns(proc):
    """The host's cost of a blocking call beyond the simulator's model, in the median round's baseline:
    main's synchronous copies (the legacy stream's) took their modelled time plus this, each. A change
    that stops main waiting for its copies saves it too, as much more on a busy host."""
    [legacy] = [s for s in proc["streams"] if s["stream"] == "legacy"]
    assert legacy["calls_ns"] >= COPIES * PAGEABLE_COPY_NS  # never faster than the model
    return (legacy["calls_ns"] - COPIES * PAGEABLE_COPY_NS) / COPIES


def test_what_if_none(captured, tmp_path):
    """Nothing changed: the plan replayed as baseline and as "changed". What the measurement adds by
    itself (a first replay paying one-off costs, the order of the two) must not look like a saving: the
    median saving is 0 within the rounds' spread."""
    proc, w, tol = what_if(captured, tmp_path, "none")
    assert w["changes"] == "none" and w["changed_ops"] == 0
    assert abs(w["saving_ns"]) <= tol, w


def test_what_if_pinned(captured, tmp_path):
    """main's ten 4 MiB pageable copies staged in pinned memory: each takes bytes / pinned bandwidth
    instead of bytes / pageable bandwidth, so main ends that much earlier and with it the process,
    unless another thread now ends later. In main's calls: the same saving (it wakes from ten copies
    in both replays), give or take its device synchronisation's wait, in either replay, for the
    consumer's iteration in flight (none while main is the critical path)."""
    proc, w, tol = what_if(captured, tmp_path, "pinned")
    assert w["changed_ops"] == COPIES
    model = COPIES * (PAGEABLE_COPY_NS - PINNED_COPY_NS)  # 62.9 ms
    predicted = wall_saving(proc, w, captured.pid, model)
    assert abs(w["saving_ns"] - predicted) <= tol, (w, model, predicted)
    base, chg = main_thread(proc, w, captured.pid)
    slack = CONSUMER_ITERATION_NS + wake_ns(proc)
    assert abs(base["calls_ns"] - chg["calls_ns"] - model) <= slack + tol, (base, chg, model, slack)
    assert w["streams_calls_ns"]["legacy"] >= COPIES * PINNED_COPY_NS  # never faster than the model
    assert w["streams_replayed_ns"]["legacy"] >= sum(captured.copy_thinks) + COPIES * PINNED_COPY_NS


# main's calls the change does not touch: its allocations and frees (which also wait, implicitly, for the
# other threads' work still queued when main reaches them: how much depends on where the shortened main
# meets their schedule, not on the change's model)
UNTOUCHED = ("cudaMalloc", "cudaMallocHost", "cudaFree", "cudaFreeHost")


def queued_copies_saved(proc, w, pid, queue_wait):
    """main's time in its copies and its device synchronisation, baseline less changed (measured per API
    in the same replay: calls_ns_by_api), and the range the model allows for it when the change queues
    main's copies instead of waiting for each: their time and the wake-ups from them saved, less the
    time queueing them took, less the device synchronisation's wait in the changed replay (for the
    queue, queue_wait at most, or for the consumer's iteration in flight, and one wake-up), plus that
    synchronisation's wait in the baseline (for the consumer's iteration, at most)."""
    base, chg = main_thread(proc, w, pid)
    wake, queued = wake_ns(proc), w["streams_calls_ns"]["legacy"]
    saved = COPIES * (PAGEABLE_COPY_NS + wake) - queued
    untouched = sum(base["calls_ns_by_api"].get(a, 0) - chg["calls_ns_by_api"].get(a, 0) for a in UNTOUCHED)
    return (base["calls_ns"] - chg["calls_ns"] - untouched,
            saved - max(queue_wait, CONSUMER_ITERATION_NS) - wake, saved + CONSUMER_ITERATION_NS + wake)


def test_what_if_async_copies(captured, tmp_path):
    """The copies queued instead of waited for: the legacy stream runs them back to back (each is
    longer than main's think time), so every think time but the first, as captured, is hidden, and
    main ends that much earlier. In main's calls: the copies' time and wake-ups saved, less the
    device synchronisation's wait for the queue."""
    proc, w, tol = what_if(captured, tmp_path, "async-copies")
    assert w["changed_ops"] == COPIES
    thinks = captured.copy_thinks
    model = sum(thinks)  # ~27 ms
    # and the host's wake-ups from the ten copies it no longer waits for (measured in the same replay: what
    # a blocking call costs beyond the model), as much more on a busy host
    least = wall_saving(proc, w, captured.pid, model)
    most = wall_saving(proc, w, captured.pid, model + COPIES * wake_ns(proc))
    assert least - tol <= w["saving_ns"] <= most + tol, (w, model, least, most)
    # the queue ends at the latest (COPIES - i) copies after copy i was queued, for some i
    queue_wait = max((COPIES - i) * PAGEABLE_COPY_NS - sum(thinks[i:]) for i in range(COPIES))
    saved, least, most = queued_copies_saved(proc, w, captured.pid, queue_wait)
    assert least - tol <= saved <= most + tol, (saved, least, most, tol)


def test_what_if_no_redundant_sync(captured, tmp_path):
    """The synchronisations that wait for nothing are dropped; they cost (almost) nothing on the
    simulator, so the prediction is no change."""
    proc, w, tol = what_if(captured, tmp_path, "no-redundant-sync")
    assert w["changed_ops"] == REDUNDANT_SYNCS
    assert abs(w["saving_ns"]) <= tol, w


def test_what_if_combined(captured, tmp_path):
    """pinned and async-copies together: main no longer waits for its copies (queueing them takes less
    than the copies take) but, at its device synchronisation, for the last one at most (a pinned
    copy is shorter than main's think time); the legacy stream's copies are issued a think time
    apart."""
    proc, w, tol = what_if(captured, tmp_path, "pinned,async-copies,no-redundant-sync")
    assert w["changed_ops"] == COPIES + REDUNDANT_SYNCS - 1  # the device sync waits for the async copies
    assert w["streams_calls_ns"]["legacy"] < COPIES * PINNED_COPY_NS, w  # what ten synchronous ones take
    saved, least, most = queued_copies_saved(proc, w, captured.pid, PINNED_COPY_NS)
    assert least - tol <= saved <= most + tol, (saved, least, most, tol)
    assert w["streams_replayed_ns"]["legacy"] >= sum(captured.copy_thinks)


def test_bad_input(captured, tmp_path):
    capture = captured.path
    notcap = tmp_path / "not.gpz"
    notcap.write_text("hello\n")
    cases = [
        (["replay"], 2, "no capture file given"),
        (["replay", str(tmp_path / "missing.gpz")], 1, "missing.gpz"),
        (["replay", str(notcap)], 1, "not a gpuprobed capture"),
        (["replay", capture, "--what-if", "faster"], 2, "unknown --what-if change 'faster'"),
        (["replay", capture, "--what-if", "pinned,"], 2, "unknown --what-if change ''"),
        (["replay", capture, "--what-if", "none,pinned"], 2, "--what-if none replays the plan unchanged"),
        (["replay", capture, "--what-if", "pinned", "--rounds", "4"], 2, "--rounds: '4' is not an odd number"),
        (["replay", capture, "--what-if", "pinned", "--rounds", "101"], 2, "--rounds: '101'"),
        (["replay", capture, "--rounds", "3"], 2, "it goes with --what-if"),
        (["replay", capture, "--speed", "0"], 2, "--speed: '0'"),
        (["replay", capture, "--speed", "fast"], 2, "--speed: 'fast'"),
        (["replay", capture, "--pid", "1"], 1, "pid 1 is not in"),
        (["replay", capture, "--pid", "x"], 2, "--pid: 'x'"),
        (["replay", capture, "--kernel-times", str(tmp_path / "none")], 1, "--kernel-times"),
        (["replay", capture, capture], 2, "one capture file at a time"),
    ]
    for args, status, needle in cases:
        rc, out, err = gp.run_gpuprobed([*args, "-o", str(tmp_path / "o")], env=sim_env())
        assert rc == status, (args, rc, err)
        assert needle in err, (args, err)
        assert len(err.strip().splitlines()) <= 2, (args, err)  # the message, and where to find help
    # without the simulator on the library path: no runtime, or (the toolkit's runtime found through
    # ld.so.cache) no driver on this GPU-less machine; either way one message saying which
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path))
    rc, _, err = gp.run_gpuprobed(["replay", capture, "-o", str(tmp_path / "o")], env=env)
    if rc == 0:
        pytest.skip("a CUDA runtime and driver are on this machine's default library path")
    assert rc == 1 and ("no CUDA runtime" in err or "no CUDA driver" in err), err
    assert len(err.strip().splitlines()) == 1, err
