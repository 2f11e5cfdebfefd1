# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""gpuprobed replay: a captured multi-stream workload (tests/workloads/replay_streams.c) re-issued
on the simulator keeps each stream's operations in order (checked by tracing the replay itself and
planning that capture), takes the original's wall time, and each what-if change moves the time by
what the simulator's timing model predicts from its knobs. Bad input: one message, the right status."""
import json
import os

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


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """The workload traced from its start: its capture, its report and its own wall time."""
    out = tmp_path_factory.mktemp("replay-orig")
    rc, stdout, err = gp.run_gpuprobed(["-o", str(out), "--", os.path.join(gp.WORKLOADS, "replay_streams")],
                                       timeout=120, env=sim_env())
    assert rc == 0, err
    wall = [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("WALL_NS ")]
    assert len(wall) == 1, stdout
    with open(out / "report.json") as f:
        report = json.load(f)
    return str(out / "capture.gpz"), report, wall[0]


def test_plan_of_the_capture(captured, tmp_path):
    """--dry-run: the plan as the workload made it, stream by stream, with nothing issued."""
    capture, report, _ = captured
    rc, out, err = gp.run_gpuprobed(["replay", capture, "--dry-run", "-o", str(tmp_path)])
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
    kernels = {k["name"]: k for k in proc["kernels"]}
    # produce ran once alone on an idle stream before a synchronisation: its duration is inferred (2 ms
    # modelled, plus the launch and wakeup latency the host saw)
    assert kernels["produce"]["duration_source"] == "inferred" and kernels["produce"]["observations"] == 1
    assert 2_000_000 <= kernels["produce"]["duration_ns"] < 3_000_000
    assert kernels["consume"]["duration_source"] == "none"
    # the report of the same capture counts the same work on the same streams
    rep = gp.process(report, proc["pid"])
    assert sum(s["kernels"] for s in rep["streams"]) == sum(k["launches"] for k in proc["kernels"]) == 11


def test_replay_keeps_order_and_time(captured, tmp_path):
    """The replay, itself traced: its capture planned again gives each stream's operations in the same
    order; its wall time is the original's within 10 %, each stream's within 10 %."""
    capture, _, wall = captured
    rc, out, err = gp.run_gpuprobed(["-o", str(tmp_path / "retrace"), "--", gp.GPUPROBED, "replay", capture,
                                     "-o", str(tmp_path / "r")], timeout=180, env=sim_env())
    assert rc == 0, err
    assert "wall time: original" in out
    [proc] = replay_json(tmp_path / "r")["processes"]
    assert proc["replay"]["errors"] == 0 and proc["replay"]["kernels"] == "simulator names"
    assert abs(proc["replayed_ns"] - proc["original_ns"]) <= 0.10 * proc["original_ns"], proc
    # the workload's own measure brackets the traced one (its first and last calls)
    assert abs(proc["original_ns"] - wall) <= 0.10 * wall
    for s in proc["streams"]:
        assert abs(s["replayed_ns"] - s["original_ns"]) <= 0.10 * s["original_ns"] + 1_000_000, s
    rc, _, err = gp.run_gpuprobed(["replay", str(tmp_path / "retrace" / "capture.gpz"), "--dry-run",
                                   "-o", str(tmp_path / "again")])
    assert rc == 0, err
    [again] = [p for p in replay_json(tmp_path / "again")["processes"] if p["comm"] == "gpuprobed"]
    assert sequences(again) == sequences(proc)


def what_if(capture, tmp_path, what, check):
    """Replays with the change and runs check(proc, what_if); up to 3 times, as the simulator's own
    timing tests do: scheduling noise on a busy machine only ever adds time, to either run."""
    for attempt in range(3):
        rc, out, err = replay([capture, "--what-if", what, "-o", str(tmp_path)])
        assert rc == 0, err
        assert f"what-if {what}" in out
        [proc] = replay_json(tmp_path)["processes"]
        w = proc["what_if"]
        assert w["errors"] == 0 and proc["replay"]["errors"] == 0
        assert w["saving_ns"] == w["baseline_ns"] - w["changed_ns"]
        try:
            check(proc, w)
            return
        except AssertionError:
            if attempt == 2:
                raise


def test_what_if_pinned(captured, tmp_path):
    """main's ten 4 MiB pageable copies staged in pinned memory: each takes bytes / pinned bandwidth
    instead of bytes / pageable bandwidth, and main is the critical path before and after."""
    def check(proc, w):
        assert w["changed_ops"] == COPIES
        predicted = COPIES * (PAGEABLE_COPY_NS - PINNED_COPY_NS)  # 62.9 ms
        assert abs(w["saving_ns"] - predicted) <= 0.15 * predicted, (w, predicted)
        assert abs(w["streams_replayed_ns"]["legacy"] - (COPIES * (THINK_NS + PINNED_COPY_NS) - THINK_NS)) \
            <= 0.15 * COPIES * (THINK_NS + PINNED_COPY_NS)
    what_if(captured[0], tmp_path, "pinned", check)


def test_what_if_async_copies(captured, tmp_path):
    """The copies queued instead of waited for: the legacy stream runs them back to back (each is
    longer than main's think time), so every think time but the first is hidden."""
    def check(proc, w):
        assert w["changed_ops"] == COPIES
        predicted = (COPIES - 1) * THINK_NS  # 27 ms
        assert abs(w["saving_ns"] - predicted) <= 0.20 * predicted, (w, predicted)
    what_if(captured[0], tmp_path, "async-copies", check)


def test_what_if_no_redundant_sync(captured, tmp_path):
    """The synchronisations that wait for nothing are dropped; they cost (almost) nothing on the
    simulator, so the prediction is no change beyond the noise of two runs."""
    def check(proc, w):
        assert w["changed_ops"] == REDUNDANT_SYNCS
        assert abs(w["saving_ns"]) <= 3_000_000, w
    what_if(captured[0], tmp_path, "no-redundant-sync", check)


def test_what_if_combined(captured, tmp_path):
    """pinned and async-copies together: the copies, queued and fast, no longer set main's pace: the
    legacy stream's work ends a copy after main's last think time."""
    def check(proc, w):
        assert w["changed_ops"] == COPIES + REDUNDANT_SYNCS - 1  # the device sync waits for the async copies
        legacy = w["streams_replayed_ns"]["legacy"]
        predicted = COPIES * THINK_NS + PINNED_COPY_NS - THINK_NS  # first copy's start to last copy's end
        assert abs(legacy - predicted) <= 0.15 * predicted, (legacy, predicted)
    what_if(captured[0], tmp_path, "pinned,async-copies,no-redundant-sync", check)


def test_bad_input(captured, tmp_path):
    capture = captured[0]
    notcap = tmp_path / "not.gpz"
    notcap.write_text("hello\n")
    cases = [
        (["replay"], 2, "no capture file given"),
        (["replay", str(tmp_path / "missing.gpz")], 1, "missing.gpz"),
        (["replay", str(notcap)], 1, "not a gpuprobed capture"),
        (["replay", capture, "--what-if", "faster"], 2, "unknown --what-if change 'faster'"),
        (["replay", capture, "--what-if", "pinned,"], 2, "unknown --what-if change ''"),
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
