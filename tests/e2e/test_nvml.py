# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""NVML's side of the story (report.json "nvml" and "gpus"), against the simulated GPU's own state.

gpuprobed loads the simulated libnvidia-ml.so.1 through --nvml-lib (build/simgpu, never a machine
path); each test names its own board (SIMGPU_BOARD: the shared memory where the simulated processes
publish what NVML reads), so NVML sees only the test's own processes, whatever else runs.

References: the workload's own accounting (bytes it allocated and copied) and the simulator's
modelled times of its kernels (simgpu.h), read by the workload itself. Memory is exact; GPU
utilization, averaged over the sampled windows weighted by their length, is within 2 percentage
points of the kernels' busy share of the same windows (a sample is a whole percent)."""
import glob
import json
import os

import gp

NVML_LIB = os.path.join(gp.SIMGPU, "libnvidia-ml.so.1")
PHASES = os.path.join(gp.WORKLOADS, "nvml_phases")
MIB = 1 << 20
CTX_MB = 48


def nvml_env(**knobs):
    return gp.sim_env(SIMGPU_BOARD=gp.new_board(), SIMGPU_NVML_CTX_MB=CTX_MB,
                      SIMGPU_KERNEL_US=1000, **knobs)


def run(tmp_path, shell, env, args=()):
    out = os.path.join(str(tmp_path), "out")
    tr = gp.Tracer([*args, "--nvml-lib", NVML_LIB, "--nvml-interval", "50", "--", "sh", "-c", shell], out,
                   env=env)
    rc = tr.wait(timeout=120)
    assert rc == 0, f"gpuprobed exited with {rc}: {tr.stderr}"
    refs = {}
    for f in glob.glob(os.path.join(str(tmp_path), "ref.*")):
        with open(f) as fh:
            r = json.load(fh)
        refs[r["pid"]] = r
    return tr.report(), tr.report_md(), refs, tr


def phases(tmp_path, *args):
    return " ".join([PHASES, "--ref", os.path.join(str(tmp_path), "ref"), *map(str, args)])


def mallocs(proc):
    return sum(a["calls"] for a in proc["cuda_api"] if a["name"] == "cudaMalloc")


def busy_share(kernels, lo, hi):
    """The share of [lo, hi] covered by the union of the kernels' modelled intervals."""
    busy, end = 0, lo
    for s, e in sorted(kernels):
        s, e = max(s, end), min(e, hi)
        if e > s:
            busy += e - s
            end = e
    return busy / (hi - lo)


def test_memory_is_exact_and_utilization_follows_the_busy_phases(tmp_path):
    report, md, refs, _ = run(tmp_path, phases(tmp_path, "--alloc-mb", 40, "--copy-mb", 16, "--phases", 2,
                                               "--busy-ms", 400, "--idle-ms", 400, "--hold-ms", 300), nvml_env())
    assert report["nvml"]["state"] == "ok"
    (ref,) = refs.values()
    (gpu,) = report["gpus"]
    (row,) = [p for p in gpu["processes"] if p["pid"] == ref["pid"]]
    held = ref["allocated_bytes"] + ref["copied_htod_bytes"]  # the copy's device buffer
    assert row["memory_used_bytes_max"] == held + CTX_MB * MIB
    assert row["traced_allocated_peak_bytes"] == held
    assert row["not_allocated_by_traced_calls_bytes"] == CTX_MB * MIB
    assert gpu["metrics"]["memory_used_bytes"]["max"] == held + CTX_MB * MIB
    lo, hi = gpu["window_start_mono_ns"], gpu["last_mono_ns"]
    assert hi - lo == gpu["window_ns"]
    want = 100 * busy_share(ref["kernels"], lo, hi)
    got = gpu["metrics"]["gpu_util_pct"]["avg"]
    assert abs(got - want) <= 2, f"GPU utilization {got} %, the kernels kept it busy {want:.2f} %"
    assert gpu["metrics"]["gpu_util_pct"]["max"] == 100 and gpu["metrics"]["gpu_util_pct"]["min"] == 0
    # the bytes copied host to device, from the received throughput over the windows (KB/s of 1024 B)
    rx = gpu["metrics"]["pcie_rx_kbps"]["avg"] * 1024 * gpu["window_ns"] / 1e9
    assert abs(rx - ref["copied_htod_bytes"]) <= 0.01 * ref["copied_htod_bytes"]
    assert "## GPU devices" in md and "NVIDIA H100 80GB HBM3 (simgpu)" in md


def test_two_processes_on_one_device(tmp_path):
    barrier = os.path.join(str(tmp_path), "barrier")
    os.mkdir(barrier)
    a = phases(tmp_path, "--alloc-mb", 24, "--barrier", barrier, "--peers", 2, "--hold-ms", 400)
    b = phases(tmp_path, "--alloc-mb", 8, "--barrier", barrier, "--peers", 2, "--hold-ms", 400)
    report, _, refs, _ = run(tmp_path, f"{a} & {b}; wait", nvml_env())
    (gpu,) = report["gpus"]
    rows = {p["pid"]: p for p in gpu["processes"]}
    assert set(rows) == set(refs), f"NVML listed {sorted(rows)}, the workloads were {sorted(refs)}"
    for pid, ref in refs.items():
        assert rows[pid]["traced"] and rows[pid]["comm"] == "nvml_phases"
        assert rows[pid]["memory_used_bytes_max"] == ref["allocated_bytes"] + CTX_MB * MIB
        assert rows[pid]["traced_allocated_peak_bytes"] == ref["allocated_bytes"]
    # both held their memory at once (the barrier) for longer than a sample's interval
    assert gpu["metrics"]["memory_used_bytes"]["max"] == sum(r["allocated_bytes"] + CTX_MB * MIB
                                                             for r in refs.values())


def test_nvml_absent_is_one_line_and_nothing_else_is_lost(tmp_path):
    env = nvml_env()
    out = os.path.join(str(tmp_path), "out")
    missing = os.path.join(str(tmp_path), "none", "libnvidia-ml.so.1")
    tr = gp.Tracer(["--nvml-lib", missing, "--", "sh", "-c", phases(tmp_path, "--alloc-mb", 2)], out, env=env)
    assert tr.wait(timeout=120) == 0, tr.stderr
    report, md = tr.report(), tr.report_md()
    assert report["nvml"]["state"] == "absent" and report["gpus"] == []
    assert report["nvml"]["note"].startswith("no NVML: no NVIDIA driver on this machine")
    lines = [ln for ln in md.splitlines() if "NVML" in ln]
    assert len(lines) == 1 and lines[0].startswith("no NVML: no NVIDIA driver on this machine"), lines
    (proc,) = [p for p in report["processes"] if p["comm"] == "nvml_phases"]
    assert mallocs(proc) == 2


def test_nvml_init_failing_is_one_line(tmp_path):
    report, md, refs, _ = run(tmp_path, phases(tmp_path, "--alloc-mb", 2), nvml_env(SIMGPU_NVML_INIT_ERROR=9))
    assert report["nvml"]["state"] == "failed" and report["gpus"] == []
    assert report["nvml"]["note"] == "NVML failed: nvmlInit_v2: Driver Not Loaded (9)"
    assert "NVML failed: nvmlInit_v2: Driver Not Loaded (9)." in md
    (proc,) = [p for p in report["processes"] if p["pid"] in refs]
    assert mallocs(proc) == 2


def test_a_failing_call_is_named_and_counted_and_the_rest_is_sampled(tmp_path):
    report, md, refs, _ = run(tmp_path, phases(tmp_path, "--alloc-mb", 4, "--hold-ms", 400),
                              nvml_env(SIMGPU_NVML_FAIL="nvmlDeviceGetPowerUsage=3"))
    (gpu,) = report["gpus"]
    (err,) = gpu["errors"]
    assert (err["call"], err["code"], err["text"]) == ("nvmlDeviceGetPowerUsage", 3, "Not Supported")
    assert err["count"] == gpu["samples"]
    assert gpu["metrics"]["power_mw"] is None
    assert gpu["metrics"]["memory_used_bytes"]["max"] == 4 * MIB + CTX_MB * MIB
    assert sum("`nvmlDeviceGetPowerUsage` failed: Not Supported (3)" in ln for ln in md.splitlines()) == 1


def test_a_device_that_disappears_is_one_line_and_its_samples_stay(tmp_path):
    env = nvml_env(SIMGPU_DEVICES=2, SIMGPU_NVML_LOST="1@300")
    report, md, refs, _ = run(tmp_path, phases(tmp_path, "--alloc-mb", 4, "--hold-ms", 900), env)
    gpus = {g["index"]: g for g in report["gpus"]}
    assert gpus[1]["lost"] and not gpus[0]["lost"]
    assert gpus[1]["samples"] >= 1 and gpus[1]["last_mono_ns"] < gpus[1]["lost_mono_ns"]
    assert gpus[0]["last_mono_ns"] > gpus[1]["lost_mono_ns"]
    assert [(e["call"], e["code"], e["count"]) for e in gpus[1]["errors"]] == \
        [("nvmlDeviceGetUtilizationRates", 15, 1)]
    assert gpus[0]["metrics"]["memory_used_bytes"]["max"] == 4 * MIB + CTX_MB * MIB
    assert sum("GPU 1 disappeared" in ln for ln in md.splitlines()) == 1


def test_the_capture_reproduces_the_gpus(tmp_path):
    report, _, _, tr = run(tmp_path, phases(tmp_path, "--alloc-mb", 4, "--phases", 1, "--busy-ms", 200),
                           nvml_env())
    out = os.path.join(str(tmp_path), "again")
    rc, _, err = gp.run_gpuprobed(["report", os.path.join(tr.out_dir, "capture.gpz"), "-o", out])
    assert rc == 0, err
    with open(os.path.join(out, "report.json")) as f:
        again = json.load(f)
    assert again["gpus"] == report["gpus"] and again["nvml"] == report["nvml"]


def gpu_counters(out_dir, index):
    """trace.json's counter track of device index: (track name, {counter: [(ts_ns, {series: value})]})."""
    with open(os.path.join(out_dir, "trace.json")) as f:
        events = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    (pid,) = [p for p, n in names.items() if n.startswith(f"GPU {index}: ")]
    counters = {}
    for e in events:
        if e["ph"] == "C" and e["pid"] == pid:
            # ts: microseconds with three decimals, exactly the sample's nanoseconds
            counters.setdefault(e["name"], []).append((round(float(e["ts"]) * 1000), e["args"]))
    return names[pid], counters


# the report's metric -> trace.json's (counter, series)
TRACKS = {"gpu_util_pct": ("utilization (%)", "gpu"), "memory_util_pct": ("utilization (%)", "memory"),
          "memory_used_bytes": ("memory used (bytes)", "used"), "sm_clock_mhz": ("clocks (MHz)", "sm"),
          "memory_clock_mhz": ("clocks (MHz)", "memory"), "power_mw": ("power (mW)", "power"),
          "temperature_c": ("temperature (C)", "gpu"), "pcie_tx_kbps": ("PCIe throughput (KB/s)", "tx"),
          "pcie_rx_kbps": ("PCIe throughput (KB/s)", "rx"),
          "throttle_reasons": ("throttle reasons (bits)", "reasons")}


def test_trace_json_counter_tracks_hold_every_sample(tmp_path):
    report, _, _, tr = run(tmp_path, phases(tmp_path, "--alloc-mb", 8, "--copy-mb", 8, "--phases", 2,
                                            "--busy-ms", 200, "--idle-ms", 200, "--hold-ms", 200),
                           nvml_env(SIMGPU_NVML_FAIL="nvmlDeviceGetTemperature=3"))
    (gpu,) = report["gpus"]
    name, counters = gpu_counters(tr.out_dir, 0)
    assert name == f"GPU 0: {gpu['name']} (NVML samples)"
    assert "temperature (C)" not in counters  # the call failed every time: no track, no made-up value
    for key, (counter, series) in TRACKS.items():
        m = gpu["metrics"][key]
        if m is None:
            assert key == "temperature_c"
            continue
        pts = [(ts, args[series]) for ts, args in counters[counter]]
        assert len(pts) == m["samples"] == gpu["samples"], key
        assert pts[-1][0] == gpu["last_mono_ns"] and pts[0][0] == gpu["first_mono_ns"], key
        values = [v for _, v in pts]
        assert (min(values), max(values), values[-1]) == (m["min"], m["max"], m["last"]), key
        # the report's time-weighted mean, from the counter's own points: each weighs its window
        prev, wsum = gpu["window_start_mono_ns"], 0
        for ts, v in pts:
            wsum += v * (ts - prev)
            prev = ts
        assert abs(wsum / gpu["window_ns"] - m["avg"]) <= 0.005 + 1e-9 * abs(m["avg"]), key
    assert max(v for _, v in ((ts, a["used"]) for ts, a in counters["memory used (bytes)"])) == \
        gpu["metrics"]["memory_used_bytes"]["max"]


def finding(report, pid, rule, where="recommendations"):
    got = [f for f in report[where] if f["pid"] == pid and f["id"] == rule]
    assert len(got) <= 1
    return got[0] if got else None


def test_gpu_idle_while_the_host_copies_pageable_memory_is_a_verdict(tmp_path):
    """The GPU idle while the host copies pageable memory: a verdict (report.json verdicts[], report.md's
    opening "Verdict" line), not a ranked fix; it names the ranked findings that say why (pinning first)."""
    report, md, refs, _ = run(tmp_path, phases(tmp_path, "--alloc-mb", 4, "--phases", 1, "--busy-ms", 100,
                                               "--pageable-ms", 900), nvml_env(), args=("--no-stacks",))
    (ref,) = refs.values()
    assert ref["pageable_copies"] > 0
    f = finding(report, ref["pid"], "gpu-idle-host-busy", "verdicts")
    assert f is not None, [r["id"] for r in report["verdicts"]]
    assert finding(report, ref["pid"], "gpu-idle-host-busy") is None, "a verdict ranked among the fixes"
    ranked = report["recommendations"]
    causes = [ranked[r - 1]["id"] for r in f["explained_by"]]
    assert "pageable-copies" in causes, (causes, [r["id"] for r in ranked])
    assert all(ranked[r - 1]["pid"] == ref["pid"] for r in f["explained_by"])
    ev = f["evidence"]
    (gpu,) = report["gpus"]
    proc = gp.process(report, ref["pid"])
    # the host side: exactly the report's own pageable copy time
    pageable = sum(t["total_ns"] for t in proc["transfers"] if t["host_memory"] == "pageable")
    assert ev["pageable_copy_ns"] == pageable
    assert ev["host_share"] >= 0.5 and ev["gpu_busy_share"] < 0.5
    # the GPU side: busy time = the time-weighted utilization over the sampled windows
    assert ev["gpu_util_avg"] == gpu["metrics"]["gpu_util_pct"]["avg"]
    # (the report rounds the mean to 2 decimals: 0.005 points of the window)
    assert abs(ev["gpu_busy_ns"] - ev["gpu_util_avg"] / 100 * gpu["window_ns"]) <= 0.00005 * gpu["window_ns"] + 1
    # and that is the kernels' modelled busy time within the 2 points the samples allow
    want = busy_share(ref["kernels"], gpu["window_start_mono_ns"], gpu["last_mono_ns"]) * gpu["window_ns"]
    assert abs(ev["gpu_busy_ns"] - want) <= 0.02 * gpu["window_ns"]
    assert f["impact_ns"] == min(ev["host_side_ns"], ev["process_wall_ns"] - ev["gpu_busy_ns"])
    assert f["estimate"] == "upper_bound" and f["title"].startswith("GPU 0 busy ")
    assert "in pageable copies" in f["title"]
    assert ev["host_side_ns"] <= ev["threads_span_ns"] and ev["host_share"] <= 1, ev
    assert f"**Verdict (pid {ref['pid']}, " in md and f["title"] in md


def test_a_gpu_bound_run_is_not_a_gpu_idle_finding(tmp_path):
    report, _, refs, _ = run(tmp_path, phases(tmp_path, "--alloc-mb", 4, "--phases", 1, "--busy-ms", 900),
                             nvml_env(), args=("--no-stacks",))
    (ref,) = refs.values()
    assert finding(report, ref["pid"], "gpu-idle-host-busy", "verdicts") is None
    (gpu,) = report["gpus"]
    assert gpu["metrics"]["gpu_util_pct"]["avg"] >= 50
