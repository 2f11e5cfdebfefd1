#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""make bench: what gpuprobed costs, measured side by side in one run on this machine.

Every measurement is repeated with the configurations interleaved (drift hits all alike) and the
page gives medians. Before each repetition is kept, the bench checks what the rest of the machine
did meanwhile (CPU time of processes that are not the bench's, steal included; other tracers on the
library under test) and runs it again when that was more than --max-foreign of a core.

1. Added cost per hooked call (tests/workloads/bench_calls.c: loops of cudaLaunchKernel and
   cudaMemcpyAsync --depth frames deep, timed by the workload; added = traced - untraced):
     untraced            the workload alone
     floor               empty bpftrace uprobe+uretprobe at the same functions (the price of the probes)
     gpuprobed aggregated --aggregate --no-stacks --no-timeline --no-record (the daemon's mode: hot
                         calls counted in a kernel map, no ring-buffer record each)
     gpuprobed counting  --no-stacks --no-timeline --no-record (counts, times, sizes)
     gpuprobed stacks    --no-timeline --no-record (+ a user stack per launch and copy)
     gpuprobed timeline  --no-record (stacks + trace.json written as the records arrive)
     gpuprobed default   no option: stacks + timeline + capture file
     bpftrace            a count and a latency histogram at the same functions
     bpftrace ustack     @[ustack] = count() at the same return probes
   then the kernel's timing of gpuprobed's two programs (bpf_stats), counting vs stacks, at depths.
2. Throughput of a launch-heavy workload (bench_calls on the simulated runtime, SIMGPU_LAUNCH_US
   unset): launches per second untraced, under gpuprobed (default) and under gpuprobed --no-stacks.
3. Event rate and gpuprobed's own CPU: 1..N bench_calls processes calling as fast as they can, one
   gpuprobed tracing them all, per mode: events/s, records lost (report.json drops), gpuprobed's
   utime+stime (/proc/PID/stat) per 10k events/s; the floor's rate with the same callers.
4. 131,072 distinct stacks: symbolization time and peak RSS (gpuprobed -v -- bench_calls
   --distinct-stacks 17).
5. The capture file: bytes per record and `gpuprobed report` time for 1M and 10M records.
6. The scheduler tracepoint's cost to processes gpuprobed does not trace (ping-pong + bpf_stats).
7. Attach time for a process with ~300 mapped libraries (many_libs).
8. Unwind tables: build time and peak memory on the largest ELF files here (scripts/bench_unwind.py).
9. Call stacks by kind of walk: frame pointers, unwind tables, Python frames (scripts/bench_stack_kinds.py).
10. The NVML sampling thread's CPU at --nvml-interval 100 (scripts/bench_nvml.py).
Writes docs/performance.md (or --out; and prints it), with the targets met or missed and why;
everything in that file from the line ANALYSIS_MARKER on is kept as it is (hand-written analysis).
--quick: a short smoke run (1 rep, fewer calls, fewer configurations in 3, smaller 5) -- not for the page.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import bench_nvml
import bench_stack_kinds
import bench_unwind

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APIS = ("cudaLaunchKernel", "cudaMemcpyAsync")
ANALYSIS_MARKER = "<!-- analysis: kept by make bench -->"
# configuration -> its name in the tables, in the order of a rep
CONFIGS = {
    "untraced": "untraced",
    "floor": "floor",
    "aggregate": "gpuprobed aggregated",
    "counting": "gpuprobed counting",
    "stacks": "gpuprobed stacks",
    "timeline": "gpuprobed timeline",
    "default": "gpuprobed default",
    "bpftrace": "bpftrace",
    "ustack": "bpftrace ustack",
}
BPFTRACE = ("floor", "bpftrace", "ustack")
# gpuprobed's configurations: each adds one thing to the one before
GP_FLAGS = {
    "aggregate": ["--aggregate", "--no-stacks", "--no-timeline", "--no-record"],
    "counting": ["--no-stacks", "--no-timeline", "--no-record"],
    "stacks": ["--no-timeline", "--no-record"],
    "timeline": ["--no-record"],
    "default": [],
}
GP_WHAT = {
    "aggregate": "launches and syncs counted in a kernel map, no record each (the daemon's mode)",
    "counting": "counts, times and sizes only, a ring-buffer record per call",
    "stacks": "+ a user stack per launch and copy",
    "timeline": "+ trace.json, written as the records arrive",
    "default": "+ the capture file (all of gpuprobed's outputs: what it does with no option)",
}
GPUPROBED = tuple(GP_FLAGS)
# the kernel's timing of the programs (timeline and default run the same ones as stacks; aggregate's
# return takes another path: a kernel map's entry instead of a ring record)
GP_BPF = ("aggregate", "counting", "stacks")
# bpf_stats side by side: BPF ns per call beyond bpftrace's empty pair, as a share of what bpftrace's
# count() + hist() adds beyond it (the most each may be)
BPF_PAIR = ("floor", "bpftrace", "aggregate", "counting", "stacks")
BPF_TARGETS = (("counting", 0.33), ("stacks", 0.75))
# (configuration, most it may cost as a multiple of the floor, the bpftrace equivalent it must not exceed)
TARGETS = (("aggregate", 1.10, "bpftrace"), ("counting", 1.10, "bpftrace"), ("stacks", 1.25, "ustack"),
           ("default", 1.30, "ustack"))
CPU_TARGET = 2.0  # gpuprobed's own CPU, % of a core per 10k events/s
# the reader's CPU per record (µs), where the configuration writes per record in userspace
READER_TARGET_US = {"timeline": 0.4, "default": 0.6}
ATTACH_TARGET_MS = 200
# drops{} counters that lose no record (docs/report-format.md "Loss"): an estimate's input, and the
# timeline's own cap (the report is complete)
NOT_LOSSES = {"switch_in_unseen", "timeline_left_out", "timeline_sched_left_out"}
GP_PROGS = ("gp_api_enter", "gp_api_exit")


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def perf_list():
    out = subprocess.run(["bpftool", "-j", "perf", "list"], capture_output=True, text=True).stdout
    try:
        return json.loads(out or "[]")
    except json.JSONDecodeError:
        return []


def uprobe_count(pid):
    """Uprobes (perf events) a process holds, from bpftool perf list."""
    return sum(1 for e in perf_list() if e.get("pid") == pid and e.get("fd_type") in ("uprobe", "uretprobe"))


def foreign_uprobes(lib):
    """Uprobes someone else holds on the library under test (they would tax every run, untraced too)."""
    return sorted({(e.get("pid"), e.get("filename")) for e in perf_list()
                   if e.get("fd_type") in ("uprobe", "uretprobe") and e.get("filename")
                   and os.path.realpath(e["filename"]) == lib})


class Run:
    """Starts the workload waiting at its handshake; a tracer attaches; then it runs."""

    def __init__(self, args, env):
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("READY"):
            raise RuntimeError(f"workload did not start: {line!r} {self.proc.stderr.read()}")
        self.pid = self.proc.pid

    def go(self, before_exit=None):
        """Runs the workload; before_exit is called once it has printed its result (with --hold it
        is still alive then, and so is a tracer that stops when it exits)."""
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        out = self.proc.stdout.readline()
        if before_exit:
            before_exit()
        self.proc.stdin.close()
        self.proc.wait(timeout=300)
        return json.loads(out)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def start_gpuprobed(build, pid, out_dir, extra=(), env=None):
    """gpuprobed --pid pid (or each pid of a list), returned once it says its probes are in place."""
    pids = pid if isinstance(pid, (list, tuple)) else [pid]
    tracer = subprocess.Popen([os.path.join(build, "gpuprobed"), *(a for p in pids for a in ("--pid", str(p))),
                               "-o", out_dir, *extra],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    return wait_started(tracer, "tracing")


def wait_started(tracer, marker):
    """tracer once its stderr said marker (its start-up is over); RuntimeError when it exits first."""
    buf = ""
    while marker not in buf:
        line = tracer.stderr.readline()
        if not line:
            raise RuntimeError(f"gpuprobed did not start: {buf}")
        buf += line
    return tracer


def wait_for(pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def bpftrace_script(lib, kind):
    """(script, uprobes it places) for a bpftrace configuration."""
    if kind == "floor":
        return "".join(f"uprobe:{lib}:{a} {{ }} uretprobe:{lib}:{a} {{ }}\n" for a in APIS), 2 * len(APIS)
    if kind == "ustack":
        # where gpuprobed takes its stacks (the return); no entry probe: bpftrace needs none for this
        return "".join(f"uretprobe:{lib}:{a} {{ @stacks_{i}[ustack] = count(); }}\n"
                       for i, a in enumerate(APIS)), len(APIS)
    return "".join(
        f"uprobe:{lib}:{a} {{ @start_{i}[tid] = nsecs; }}\n"
        f"uretprobe:{lib}:{a} /@start_{i}[tid]/ {{ @calls_{i} = count(); "
        f"@lat_{i} = hist(nsecs - @start_{i}[tid]); delete(@start_{i}[tid]); }}\n"
        for i, a in enumerate(APIS)), 2 * len(APIS)


def report_summary(out_dir):
    """What the bench checks in a gpuprobed report: losses, the first process's stacks, error codes."""
    with open(os.path.join(out_dir, "report.json")) as f:
        r = json.load(f)
    procs = r.get("processes") or [{}]
    st = procs[0].get("stacks") or {}
    return {
        "drops": {k: v for k, v in r.get("drops", {}).items() if v},
        "distinct": st.get("distinct", 0),
        "stack_calls": st.get("calls", 0),
        "truncated": st.get("truncated_stacks", 0),
        # frames of the stacks of the measured calls (not of the final cudaStreamSynchronize)
        "frames": sorted({len(k.get("frames", [])) for k in st.get("stacks", [])
                          if any(o.get("api") in APIS for o in k.get("ops", []))}),
        "codes": {a["name"]: sorted(c["code"] for c in a.get("error_codes", []))
                  for a in procs[0].get("cuda_api", [])},
        "api_calls": (r.get("summary") or {}).get("api_calls", 0),
    }


def losses(drops):
    return {k: v for k, v in drops.items() if k not in NOT_LOSSES}


def loaded_progs():
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True, check=True).stdout
    return json.loads(out or "[]")


def prog_ids(names):
    """{name: {id, ...}} of the loaded BPF programs called names."""
    progs = loaded_progs()
    return {n: {p["id"] for p in progs if p.get("name") == n} for n in names}


def held_progs(pid):
    """The ids of the BPF programs process pid holds: the prog_id lines of its file descriptors'
    fdinfo (bpftool here does not say which process holds a program, and another tracer -- someone's
    tests -- may have loaded programs of the same names meanwhile)."""
    held = set()
    fd_dir = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fd_dir):
        try:
            with open(os.path.join(fd_dir, fd)) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        held.add(int(line.split()[1]))
        except OSError:
            continue
    return held


# a program's stand-in on kernels without bpf_loop (5.17), as the kernel names it (15 characters at most)
PROG_STANDINS = {"gp_api_exit_no_loop"[:15]: "gp_api_exit"}


def tracer_progs(pid, names):
    """{name: id} of the BPF programs called names (or their stand-ins) that process pid holds."""
    held = held_progs(pid)
    res = {}
    for p in loaded_progs():
        name = PROG_STANDINS.get(p.get("name"), p.get("name"))
        if p["id"] in held and name in names:
            if name in res:
                raise RuntimeError(f"gpuprobed (pid {pid}) holds two BPF programs called {name}")
            res[name] = p["id"]
    missing = [n for n in names if n not in res]
    if missing:
        raise RuntimeError(f"gpuprobed (pid {pid}) holds no BPF program called {', '.join(missing)}")
    return res


def bpftrace_progs(pid):
    """{name: id} of the uprobe programs a bpftrace process holds (its names are per probe)."""
    held = held_progs(pid)
    return {f"{p.get('name', '?')}#{p['id']}": p["id"] for p in loaded_progs()
            if p["id"] in held and p.get("type") == "kprobe"}


def prog_stats(ids):
    """{name: (run_time_ns, run_cnt)} of the programs {name: id}, from the kernel's bpf_stats."""
    progs = {p["id"]: p for p in loaded_progs()}
    return {n: (progs[i].get("run_time_ns", 0), progs[i].get("run_cnt", 0)) for n, i in ids.items()}


def per_call_ns(before, after):
    """BPF ns per traced call between two prog_stats() of entry + return programs: every call runs
    one entry and one return program, so the calls are half the runs."""
    t = sum(after[p][0] - before[p][0] for p in after)
    n = sum(after[p][1] - before[p][1] for p in after)
    return 2 * t / n if n else float("nan")


REMOVER_COMM = "gpuprobed-rm"  # removes a session's perf-event links after it (src/probes/uprobes.h)


def wait_removers(timeout=300):
    """Until no gpuprobed-rm runs: the links of a run just ended are removed after it (kernels before
    6.6, or --no-uprobe-multi), which would tax the next run (and hold the lock its attach takes)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        busy = False
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/comm") as f:
                    busy = busy or f.read().strip() == REMOVER_COMM
            except OSError:
                pass
        if not busy:
            return
        time.sleep(0.1)


def foreign_tracers(lib):
    """What else may trace the library under test now: uprobes of other processes on it (perf events;
    uprobe_multi links do not show there) and another gpuprobed's programs (its probes sit on every
    copy of the runtime its targets map, and fire in any process that maps it). The removers of our
    own runs are waited for first."""
    wait_removers()
    for attempt in range(2):
        found = [f"uprobes of pid {p}" for p, _ in foreign_uprobes(lib)]
        n = len(prog_ids(("gp_api_enter",))["gp_api_enter"])
        if n:
            found.append(f"{n} other gpuprobed session{'s' if n > 1 else ''}")
        if not found or attempt:
            return found
        time.sleep(0.5)  # ours, just exited, may take a moment to unload


class BpfStats:
    """kernel.bpf_stats_enabled on for the block (the kernel then times every BPF program run)."""
    PATH = "/proc/sys/kernel/bpf_stats_enabled"

    def __enter__(self):
        with open(self.PATH) as f:
            self.old = f.read().strip()
        with open(self.PATH, "w") as f:
            f.write("1")

    def __exit__(self, *exc):
        with open(self.PATH, "w") as f:
            f.write(self.old)


def bpf_block(args, workload, lib, env, tmp, steady, depths):
    """The kernel's timing (bpf_stats, restored after) of the BPF programs per traced call:
    bpftrace's empty pair and its count + hist, gpuprobed counting and stacks, interleaved, args.reps
    each; then gpuprobed stacks' return program at each of depths (one run each). Returns
    ({gp config: {program: [ns/run]}}, {config: [ns per call, entry + return]}, [depth sweep])."""
    bpf = {n: {p: [] for p in GP_PROGS} for n in GP_BPF}
    pair = {n: [] for n in BPF_PAIR}
    sweep = []
    with BpfStats():
        for rep in range(args.reps):
            for name in BPF_PAIR:
                _, info = steady.run(f"bpf_stats {CONFIGS[name]}",
                                     lambda: (one_run(name, args, workload, lib, env, tmp, stats=True), None))
                pair[name].append(info["bpf_call_ns"])
                msg = f"rep {rep + 1}/{args.reps} bpf_stats {CONFIGS[name]:18s} {info['bpf_call_ns']:6.0f} ns per call"
                if name in GP_BPF:
                    for p in GP_PROGS:
                        bpf[name][p].append(info["bpf_ns"][p])
                    msg += "  (" + "  ".join(f"{p} {info['bpf_ns'][p]:.0f} ns" for p in GP_PROGS) + ")"
                log(msg)
        # what a frame costs: the return program of the stacks mode at other depths (one run each)
        for d in depths:
            _, info = steady.run(f"bpf_stats depth {d}", lambda: (
                one_run("stacks", args, workload, lib, env, tmp, stats=True, depth=d), None))
            sweep.append(dict(depth=d, frames=info["frames"], exit_ns=info["bpf_ns"]["gp_api_exit"]))
            log(f"bpf_stats gpuprobed stacks at depth {d:3d} ({info['frames']} frames): "
                f"gp_api_exit {info['bpf_ns']['gp_api_exit']:.0f} ns")
    return bpf, pair, sweep


def bpf_pair_ratios(pair):
    """{config: (median BPF ns per call, beyond the empty pair, / bpftrace's count + hist beyond it)}."""
    m = {n: med(v) for n, v in pair.items()}
    base = m["bpftrace"] - m["floor"]
    return {n: (m[n], m[n] - m["floor"], (m[n] - m["floor"]) / base if base > 0 else float("nan")) for n in m}


def one_run(name, args, workload, lib, env, tmp, stats=False, depth=None, bt=None):
    """One run of configuration name: (the workload's result, what the bench saw of the tracer).
    With stats (gpuprobed only), the kernel's ns per run of gpuprobed's programs during the loops;
    bt: (a bpftrace script, the uprobes it places) to run instead of name's."""
    run = Run([workload, "--wait", "--iters", str(args.iters), "--depth", str(depth or args.depth)]
              + (["--hold"] if stats else []), env)
    tracer = None
    info = {"foreign": foreign_tracers(lib)}
    out_dir = os.path.join(tmp, f"out-{name}")
    try:
        if name in BPFTRACE or bt:
            text, nprobes = bt or bpftrace_script(lib, name)
            script = os.path.join(tmp, f"{name}.bt")
            with open(script, "w") as f:
                f.write(text)
            tracer = subprocess.Popen(["bpftrace", "-p", str(run.pid), script],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            wait_for(lambda: uprobe_count(tracer.pid) >= nprobes, 60, "bpftrace to attach")
        elif name in GPUPROBED:
            shutil.rmtree(out_dir, ignore_errors=True)
            tracer = start_gpuprobed(args.build, run.pid, out_dir, GP_FLAGS[name])
        before_exit = None
        if stats:
            gp = name in GPUPROBED and not bt
            ids = tracer_progs(tracer.pid, GP_PROGS) if gp else bpftrace_progs(tracer.pid)
            before = prog_stats(ids)

            def before_exit():
                after = prog_stats(ids)
                info["bpf_call_ns"] = per_call_ns(before, after)
                if gp:
                    info["bpf_ns"] = {p: (after[p][0] - before[p][0]) / max(1, after[p][1] - before[p][1])
                                      for p in GP_PROGS}
        result = run.go(before_exit)
    finally:
        run.kill()
        if tracer:
            if name not in GPUPROBED or bt:
                tracer.terminate()
            tracer.wait(timeout=120)
    if name in GPUPROBED and not bt:
        info.update(report_summary(out_dir))
        shutil.rmtree(out_dir, ignore_errors=True)
    return result, info


# Runs argv[1:] and writes its peak RSS to stderr: for when GNU time is missing. (A child of the
# bench itself would not do: a process's peak RSS includes the memory of the process it was forked
# from, until its exec -- here a Python that has just parsed a 100 MB report.)
RUSAGE_HELPER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
sys.stderr.write(f"\\nBENCH_MAXRSS_KB {ru.ru_maxrss}\\n")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_measured(cmd, env, tmp, tag):
    """Runs cmd to its end: (exit status, stdout, stderr, wall s, peak RSS in MiB of cmd and of the
    children it waited for: GNU time's %M, else wait4 in a small helper, which adds its own few MiB)."""
    rss_file = os.path.join(tmp, f"{tag}.rss")
    if os.path.exists("/usr/bin/time"):
        wrap = ["/usr/bin/time", "-f", "%M", "-o", rss_file]
    else:
        wrap = [sys.executable, "-S", "-c", RUSAGE_HELPER]
    with open(os.path.join(tmp, f"{tag}.out"), "w+") as so, open(os.path.join(tmp, f"{tag}.err"), "w+") as se:
        t0 = time.monotonic()
        rc = subprocess.run(wrap + cmd, stdin=subprocess.DEVNULL, stdout=so, stderr=se, env=env).returncode
        wall = time.monotonic() - t0
        so.seek(0)
        se.seek(0)
        out, err = so.read(), se.read()
    m = re.search(r"BENCH_MAXRSS_KB (\d+)", err)
    if m:
        kib = int(m.group(1))
    else:
        with open(rss_file) as f:
            kib = int(f.read().split()[-1])
    return rc, out, err, wall, kib / 1024


def json_line(text, key):
    for line in text.splitlines():
        if line.startswith("{") and f'"{key}"' in line:
            return json.loads(line)
    return None


def symbolize_run(args, workload, env, tmp):
    """gpuprobed -v -o DIR -- bench_calls --distinct-stacks L, then the same workload alone."""
    out_dir = os.path.join(tmp, "sym")
    shutil.rmtree(out_dir, ignore_errors=True)
    wl = [workload, "--distinct-stacks", str(args.distinct_levels)]
    rc, out, err, wall, rss = run_measured([os.path.join(args.build, "gpuprobed"), "-v", "-o", out_dir, "--", *wl],
                                           env, tmp, "sym")
    if rc != 0:
        sys.exit(f"bench: gpuprobed -- bench_calls --distinct-stacks exited {rc}: {err}")
    m = re.search(r"symbolized (\d+) call stacks \((\d+) distinct addresses\) in ([0-9.]+) ms", err)
    if not m:
        sys.exit(f"bench: no 'symbolized ...' line in gpuprobed -v's output: {err}")
    traced = re.search(r"after ([0-9.]+) s: ", err)
    res = json_line(out, "distinct_stacks") or {}
    s = dict(symbolized_stacks=int(m.group(1)), addresses=int(m.group(2)), sym_ms=float(m.group(3)),
             rss_mib=rss, wall_s=wall, traced_s=float(traced.group(1)) if traced else None,
             ns_per_launch=res.get("ns_per_launch"), launches=res.get("launches"),
             report_mb=os.path.getsize(os.path.join(out_dir, "report.json")) / 1e6,
             output_mb=sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir)) / 1e6)
    s.update(report_summary(out_dir))
    shutil.rmtree(out_dir, ignore_errors=True)
    rc, out, err, wall, rss = run_measured(wl, env, tmp, "alone")
    if rc != 0:
        sys.exit(f"bench: bench_calls --distinct-stacks exited {rc}: {err}")
    s.update(alone_wall_s=wall, alone_rss_mib=rss, alone_ns_per_launch=(json_line(out, "distinct_stacks") or {}).get("ns_per_launch"))
    return s


def capture_run(args, workload, env, tmp, records):
    """gpuprobed -v --no-timeline -o DIR -- bench_calls --iters records/2 (stacks and capture on), then
    gpuprobed report of its capture twice, with --no-timeline and as it comes (trace.json too): the rate
    the session kept up with, losses, the writer's waits, bytes per record, and the time and peak RSS to
    rebuild the outputs from the capture. The live session writes no trace.json: the capture is the same
    either way, and 10M calls would make a timeline of 5M calls (its cap) and ~1 GB."""
    out_dir = os.path.join(tmp, "cap")
    shutil.rmtree(out_dir, ignore_errors=True)
    iters = max(1, records // 2)
    cmd = [os.path.join(args.build, "gpuprobed"), "-v", "--no-timeline", "-o", out_dir, "--",
           workload, "--iters", str(iters), "--depth", str(args.depth)]
    rc, out, err, wall, rss = run_measured(cmd, env, tmp, "cap")
    if rc != 0:
        sys.exit(f"bench: gpuprobed -- bench_calls --iters {iters} exited {rc}: {err}")
    m = re.search(r"capture \S+: (\d+) operations, ([0-9.]+) MiB \(([0-9.]+) MiB before compression\); "
                  r"the consumer waited (\d+) times", err)
    calls = re.search(r"after ([0-9.]+) s: .*?(\d+) calls recorded", err)
    if not m or not calls:
        sys.exit(f"bench: no capture line in gpuprobed -v's output: {err}")
    res = json_line(out, "launch_ns") or {}
    c = dict(records=records, ops=int(m.group(1)), file_mib=float(m.group(2)), raw_mib=float(m.group(3)),
             waits=int(m.group(4)), session_s=float(calls.group(1)), calls=int(calls.group(2)), rss_mib=rss,
             launch_ns=res.get("launch_ns"), memcpy_async_ns=res.get("memcpy_async_ns"))
    # the workload's own loops: the call rate while traced (the session's time includes start and end)
    if c["launch_ns"] and c["memcpy_async_ns"]:
        c["loop_rate"] = 2e9 / (c["launch_ns"] + c["memcpy_async_ns"])
    c.update(report_summary(out_dir))
    capture = os.path.join(out_dir, "capture.gpz")
    for tag, extra in (("no_tl", ["--no-timeline"]), ("tl", [])):
        rep_dir = os.path.join(tmp, f"cap-report-{tag}")
        shutil.rmtree(rep_dir, ignore_errors=True)
        # each timed command starts with no dirty pages of the one before (the kernel's writeback of a
        # gigabyte left by the last command would otherwise be timed in this one)
        os.sync()
        rc, _, err, c[f"report_s_{tag}"], c[f"report_rss_mib_{tag}"] = run_measured(
            [os.path.join(args.build, "gpuprobed"), "report", capture, "-o", rep_dir, *extra], env, tmp,
            f"cap-report-{tag}")
        if rc != 0:
            sys.exit(f"bench: gpuprobed report {' '.join(extra)} exited {rc}: {err}")
        with open(os.path.join(rep_dir, "report.json")) as f:
            jb = json.load(f)
        if tag == "no_tl":
            # the live session ran with --no-timeline too: the rebuilt report must equal it
            with open(os.path.join(out_dir, "report.json")) as f:
                ja = json.load(f)
            ja.pop("source", None)
            jb.pop("source", None)
            c["equal"] = ja == jb
        else:
            c["timeline_left_out"] = jb.get("drops", {}).get("timeline_left_out", 0)
            tj = os.path.join(rep_dir, "trace.json")
            c["trace_mb"] = os.path.getsize(tj) / 1e6 if os.path.exists(tj) else 0
        shutil.rmtree(rep_dir, ignore_errors=True)
    # the same capture as an SQLite database (gpuprobed export): its time beside the report's, its size
    db = os.path.join(tmp, "cap.sqlite")
    os.sync()
    rc, _, err, c["export_s"], c["export_rss_mib"] = run_measured(
        [os.path.join(args.build, "gpuprobed"), "export", capture, "-o", db, "--force"], env, tmp, "cap-export")
    if rc != 0:
        sys.exit(f"bench: gpuprobed export exited {rc}: {err}")
    c["sqlite_mib"] = os.path.getsize(db) / 1048576
    # with the lookup indices of calls too (--indices; what `gpuprobed query`'s cache has)
    os.sync()
    rc, _, err, c["export_idx_s"], _ = run_measured(
        [os.path.join(args.build, "gpuprobed"), "export", capture, "-o", db, "--force", "--indices"], env, tmp,
        "cap-export-idx")
    if rc != 0:
        sys.exit(f"bench: gpuprobed export --indices exited {rc}: {err}")
    c["sqlite_idx_mib"] = os.path.getsize(db) / 1048576
    os.unlink(db)
    shutil.rmtree(out_dir, ignore_errors=True)
    return c


def proc_cpu_s(pid):
    """utime + stime of process pid (all its threads), seconds, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    rest = s[s.rindex(")") + 2:].split()  # from field 3 (state) on: utime is field 14, stime 15
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def settled_cpu_s(pid, timeout=60):
    """proc_cpu_s(pid) once it stops growing (the reader has drained what the ring buffer held)."""
    prev = proc_cpu_s(pid)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        time.sleep(0.3)
        cur = proc_cpu_s(pid)
        if cur - prev <= 0.02:
            return cur
        prev = cur
    return prev


def _busy_s():
    """CPU seconds all CPUs spent not idle since boot (steal included: a neighbour of the VM)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def _ours_s():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Foreign:
    """How busy the rest of the machine kept its CPUs over a block: all CPUs' busy time minus the CPU
    time of the bench and of its children it waited for (workloads, tracers), in cores. Kernel threads
    working for the bench (writeback of the outputs) count as foreign: a few hundredths."""

    def __init__(self):
        self.b0, self.o0, self.t0 = _busy_s(), _ours_s(), time.monotonic()

    def load(self):
        return (_busy_s() - self.b0 - (_ours_s() - self.o0)) / max(1e-9, time.monotonic() - self.t0)


class Steady:
    """Runs a measurement again while the rest of the machine was busy meanwhile (someone else's tests on
    this 2-core machine), or another tracer was on the library under test: at most retries more times
    each, and at most budget repetitions in all; then keeps it and says so."""

    def __init__(self, max_foreign, retries, budget, max_wait):
        self.max_foreign, self.retries, self.budget, self.wait_left = max_foreign, retries, budget, max_wait
        self.redone = []  # what was run again, and why
        self.kept = []  # disturbed, kept anyway (out of tries)
        self.loads = []  # the rest of the machine's load during each kept run, in cores
        self.waited = 0.0

    def wait_quiet(self):
        """Waits until the rest of the machine kept less than max_foreign of a core busy for a second
        (at most max_wait seconds over the whole bench)."""
        t0 = time.monotonic()
        while self.wait_left > 0:
            f = Foreign()
            time.sleep(1.0)
            load = f.load()
            self.wait_left -= 1.0
            if load <= self.max_foreign:
                break
            if time.monotonic() - t0 < 1.5:
                log(f"the rest of the machine keeps {load:.2f} of a core busy: waiting (at most "
                    f"{self.wait_left:.0f} s more in all)")
        self.waited += time.monotonic() - t0

    def run(self, what, fn):
        """fn() -> (result, a reason it is disturbed or None); returns the result of a quiet run."""
        for attempt in range(self.retries + 1):
            f = Foreign()
            try:
                res, why = fn()
            except RuntimeError as e:  # e.g. another gpuprobed's programs loaded meanwhile
                if attempt == self.retries or len(self.redone) >= self.budget:
                    raise
                res, why = None, str(e)
            load = f.load()
            if load > self.max_foreign:
                why = (why + "; " if why else "") + f"the rest of the machine kept {load:.2f} of a core busy"
            if not why:
                self.loads.append(load)
                return res
            if res is not None and (attempt == self.retries or len(self.redone) >= self.budget):
                self.kept.append(f"{what}: {why}")
                self.loads.append(load)
                log(f"WARNING: {what}: {why}; kept (out of tries)")
                return res
            self.redone.append(f"{what}: {why}")
            log(f"{what}: {why}: running it again")
            self.wait_quiet()
        return res


def rate_run(args, workload, lib, env, tmp, mode, callers, total):
    """callers bench_calls processes (one thread each) calling as fast as they can, total calls in all,
    under mode: "floor" (empty bpftrace probes, system-wide) or a gpuprobed configuration (one gpuprobed
    --pid for them all). Returns the event rate, gpuprobed's CPU time (utime + stime, until its reader has
    drained the ring buffer) and its report's losses."""
    iters = max(1, total // (2 * callers))
    runs, tracer = [], None
    out_dir = os.path.join(tmp, "rate")
    shutil.rmtree(out_dir, ignore_errors=True)
    res = dict(mode=mode, callers=callers, calls=2 * iters * callers)
    try:
        for _ in range(callers):
            runs.append(Run([workload, "--wait", "--hold", "--iters", str(iters), "--depth", str(args.depth)], env))
        if mode == "floor":
            script = os.path.join(tmp, "rate-floor.bt")
            text, nprobes = bpftrace_script(lib, "floor")
            with open(script, "w") as f:
                f.write(text)
            tracer = subprocess.Popen(["bpftrace", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True)
            wait_for(lambda: uprobe_count(tracer.pid) >= nprobes, 60, "bpftrace to attach")
        else:
            tracer = start_gpuprobed(args.build, [r.pid for r in runs], out_dir, GP_FLAGS[mode])
        c0, t0 = proc_cpu_s(tracer.pid), time.monotonic()
        for r in runs:
            r.proc.stdin.write("go\n")
            r.proc.stdin.flush()
        outs = [json.loads(r.proc.stdout.readline()) for r in runs]
        res["wall_s"] = time.monotonic() - t0
        res["cpu_s"] = settled_cpu_s(tracer.pid) - c0
        for r in runs:
            r.proc.stdin.close()
        for r in runs:
            r.proc.wait(timeout=120)
        if mode == "floor":
            tracer.terminate()
        tracer.wait(timeout=600)
    finally:
        for r in runs:
            r.kill()
        if tracer and tracer.poll() is None:
            tracer.kill()
            tracer.wait()
    res["rate"] = res["calls"] / res["wall_s"]
    # each caller's own loops, for comparison with the wall-clock rate (start-up skew)
    res["loop_s"] = max(iters * (o["launch_ns"] + o["memcpy_async_ns"]) / 1e9 for o in outs)
    if mode != "floor":
        res.update({k: v for k, v in report_summary(out_dir).items() if k in ("drops", "api_calls")})
        res["lost"] = losses(res["drops"])
        res["cpu_pct"] = 100 * res["cpu_s"] / res["wall_s"]
        res["pct_per_10k"] = res["cpu_pct"] / (res["rate"] / 1e4)
        res["us_per_event"] = 1e6 * res["cpu_s"] / max(1, res["api_calls"])
        shutil.rmtree(out_dir, ignore_errors=True)
    return res


# the launch-heavy workload's scenarios: (key, description, environment, share of --iters)
TP_SCENARIOS = (
    ("layers", "launch-bound (kernels 0 µs); the runtime calls the driver: two probed functions per call",
     {"SIMGPU_KERNEL_US": "0", "SIMGPU_COPY_LATENCY_US": "0"}, 1),
    ("direct", "launch-bound (kernels 0 µs); `SIMGPU_RUNTIME_DIRECT=1`: one probed function per call",
     {"SIMGPU_KERNEL_US": "0", "SIMGPU_COPY_LATENCY_US": "0", "SIMGPU_RUNTIME_DIRECT": "1"}, 1),
    ("gpu", "GPU-bound: every kernel 20 µs (the simulator's default), the runtime calls the driver",
     {"SIMGPU_KERNEL_US": "20", "SIMGPU_COPY_LATENCY_US": "0"}, 0.25),
)
# configuration -> gpuprobed's options (None: untraced; a string: gpuprobed --daemon with that overhead_budget)
TP_CONFIGS = {"untraced": None, "default": [], "no-stacks": ["--no-stacks"], "daemon": "off", "daemon-budget": "1%"}


def start_daemon(build, state_dir, budget):
    """gpuprobed --daemon (no metrics endpoint) with overhead_budget = budget, once it traces."""
    os.makedirs(state_dir, exist_ok=True)
    conf = os.path.join(state_dir, "gpuprobed.conf")
    with open(conf, "w") as f:
        f.write(f"[metrics]\nlisten = off\n[reports]\nstate_dir = {state_dir}\ninterval = 0\n"
                f"[trace]\noverhead_budget = {budget}\n")
    tracer = subprocess.Popen([os.path.join(build, "gpuprobed"), "--daemon", "--config", conf, "--foreground"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return wait_started(tracer, "metrics endpoint off")


def throughput_run(args, env, tmp, scenario, config):
    """bench_calls on the simulated runtime (SIMGPU_LAUNCH_US unset: a launch costs what the runtime
    does), untraced or under gpuprobed --pid: (launches per second, copies per second, losses)."""
    key, _, extra, share = scenario
    env = dict(env, LD_LIBRARY_PATH=os.path.join(args.build, "simgpu"), **extra)
    env.pop("SIMGPU_LAUNCH_US", None)
    iters = max(1000, int(args.iters * share))
    tracer, out_dir = None, os.path.join(tmp, "tp")
    shutil.rmtree(out_dir, ignore_errors=True)
    flags = TP_CONFIGS[config]
    if isinstance(flags, str):  # the daemon finds the workload itself (it maps the runtime)
        tracer = start_daemon(args.build, out_dir, flags)
        out_dir = os.path.join(out_dir, "reports", "current")
    run = Run([os.path.join(args.build, "workloads", "bench_calls"), "--wait", "--iters", str(iters),
               "--depth", str(args.depth)], env)
    try:
        if isinstance(flags, list):
            tracer = start_gpuprobed(args.build, run.pid, out_dir, flags)
        r = run.go()
    finally:
        run.kill()
        if tracer:
            if isinstance(flags, str):
                tracer.send_signal(signal.SIGTERM)
            tracer.wait(timeout=300)
    lost = {}
    if tracer:
        lost = losses(report_summary(out_dir)["drops"])
        shutil.rmtree(os.path.join(tmp, "tp"), ignore_errors=True)
    return 1e9 / r["launch_ns"], 1e9 / r["memcpy_async_ns"], lost


def pingpong_run(build, env, rounds, traced, tmp):
    """An untraced ping-pong next to an idle waiting process; with traced, gpuprobed traces that
    process (so only the tracer differs). Returns (ns per round trip, sched_switch BPF ns per
    round trip, sched_switch runs per round trip); the last two are None untraced."""
    tracer = None
    target = Run([os.path.join(build, "workloads", "bench_calls"), "--wait", "--iters", "1"], env)
    try:
        if traced:
            tracer = start_gpuprobed(build, target.pid, os.path.join(tmp, "pp"))
            ids = tracer_progs(tracer.pid, ("gp_sched_switch",))
        with BpfStats():
            before = prog_stats(ids)["gp_sched_switch"] if traced else None
            out = subprocess.run([os.path.join(build, "workloads", "bench_pingpong"), "--rounds", str(rounds)],
                                 capture_output=True, text=True, check=True, env=env).stdout
            after = prog_stats(ids)["gp_sched_switch"] if traced else None
        rt = json.loads(out)["roundtrip_ns"]
        if not traced:
            return rt, None, None
        return rt, (after[0] - before[0]) / rounds, (after[1] - before[1]) / rounds
    finally:
        if tracer:
            tracer.send_signal(2)
            tracer.wait(timeout=60)
        target.proc.kill()
        target.proc.wait()


def attach_run(build, env, libs_dir, tmp):
    """Attach time (ms) for a process with ~300 mapped files, as gpuprobed -v measures it.
    On the simulator whatever the runtime under test: attaching does not depend on it, and
    the workload needs a runtime that works."""
    env = dict(env, LD_LIBRARY_PATH=os.path.join(build, "simgpu"))
    wl = subprocess.Popen([os.path.join(build, "workloads", "many_libs"), "--libs", libs_dir, "--wait",
                           "--launches", "10"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
    try:
        line = wl.stdout.readline()
        if not line.startswith("LOADED"):
            sys.exit(f"bench: many_libs did not start: {line!r}")
        files = int(line.split()[3])
        wl.stdout.readline()  # READY
        p = subprocess.run([os.path.join(build, "gpuprobed"), "-v", "--pid", str(wl.pid), "-d", "0.1", "-o",
                            os.path.join(tmp, "attach")], capture_output=True, text=True, timeout=60)
        m = re.search(r"attached in ([0-9.]+) ms \((\d+) mappings", p.stderr)
        if not m:
            sys.exit(f"bench: no attach time in gpuprobed's output: {p.stderr}")
        return float(m.group(1)), files, int(m.group(2))
    finally:
        wl.kill()
        wl.wait()


class Page:
    """docs/performance.md from the measurements (the targets first, then each section)."""

    def __init__(self, args, target, lib, warnings, steady, elapsed):
        self.args, self.target, self.lib, self.warnings, self.steady = args, target, lib, warnings, steady
        self.elapsed = elapsed
        self.targets = []  # (target, measured, met: True/False/None, why)

    def goal(self, what, measured, met, why=""):
        self.targets.append((what, measured, met, why))
        if met is False:
            log(f"MISSED: {what}: {measured}" + (f" ({why})" if why else ""))

    # -- 1. per call ---------------------------------------------------------------------------------
    def per_call(self, samples, gp_info, bpf, pair, sweep, walk_end):
        args = self.args
        med_ = {n: {a: med(v) for a, v in d.items()} for n, d in samples.items()}
        add = {a: {n: med_[n][a] - med_["untraced"][a] for n in CONFIGS if n != "untraced"} for a in APIS}
        ratio = {a: {n: add[a][n] / add[a]["floor"] if add[a]["floor"] > 0 else float("nan") for n in add[a]}
                 for a in APIS}
        bpf_med = {n: {p: med(v) for p, v in d.items()} for n, d in bpf.items()}
        prog_c = sum(bpf_med["counting"].values())
        walk = bpf_med["stacks"]["gp_api_exit"] - bpf_med["counting"]["gp_api_exit"]
        for n, limit, rival in TARGETS:
            vals = ", ".join(f"`{a}` {ratio[a][n]:.2f}x" for a in APIS)
            met = all(ratio[a][n] <= limit for a in APIS)
            if n == "aggregate":
                why = ("the same two programs as counting, whose return adds to a hash map entry instead of "
                       "writing a ring record: " + ", ".join(f"{add[a]['aggregate'] - add[a]['counting']:+.0f} ns per `{a}` "
                                                             "against counting" for a in APIS)
                       + "; most of the cost over the floor is the entry program's work (arguments, frame, "
                       "fault counters), which both modes share")
            elif n == "counting":
                why = (f"gpuprobed's two programs alone run {prog_c:.0f} ns per call (the kernel's timing, bpf_stats, "
                       f"its own clock reads included): {100 * prog_c / add[APIS[0]]['floor']:.0f} % of the floor's "
                       f"+{add[APIS[0]]['floor']:.0f} ns, where the target leaves {100 * (limit - 1):.0f} %")
            elif n == "stacks":
                why = ("counting's " + ", ".join(f"{ratio[a]['counting']:.2f}x" for a in APIS) + " plus the stack walk: "
                       
f"+{walk:.0f} ns in `gp_api_exit` (bpf_stats), "
                       + ", ".join(f"+{add[a]['stacks'] - add[a]['counting']:.0f} ns per `{a}`" for a in APIS))
            else:
                why = ("stacks' " + ", ".join(f"{ratio[a]['stacks']:.2f}x" for a in APIS) + " plus the timeline and "
                       "the capture, which cost the traced thread nothing directly (gpuprobed's reader does them, on "
                       "another CPU here): " + ", ".join(f"{add[a]['default'] - add[a]['stacks']:+.0f} ns per `{a}`"
                                                           for a in APIS))
            self.goal(f"{CONFIGS[n]} <= {limit:.2f}x the floor", vals, met, why)
            vals = ", ".join(f"`{a}` +{add[a][n]:.0f} vs +{add[a][rival]:.0f} ns ({add[a][n] / add[a][rival]:.2f}x)"
                             for a in APIS)
            self.goal(f"{CONFIGS[n]} <= {CONFIGS[rival]}", vals, all(add[a][n] <= add[a][rival] for a in APIS),
                      "" if all(add[a][n] <= add[a][rival] for a in APIS) else
                      f"gpuprobed's programs take {sum(bpf_med[n if n in bpf_med else 'stacks'].values()):.0f} ns "
                      "per call (bpf_stats); every record also carries times, sizes, CPU and fault counters")
        br = bpf_pair_ratios(pair)
        for n, limit in BPF_TARGETS:
            self.goal(f"{CONFIGS[n]}: BPF ns per call beyond an empty pair <= {limit:.2f}x bpftrace count() + hist()'s "
                      "(bpf_stats)",
                      f"+{br[n][1]:.0f} vs +{br['bpftrace'][1]:.0f} ns ({br[n][2]:.2f}x)", br[n][2] <= limit,
                      "" if br[n][2] <= limit else
                      "per call the programs take two clock reads, two task-storage lookups, a ring-buffer "
                      "record and the process's bit test" + (", and the stack walk" if n == "stacks" else "")
                      + f" (gp_api_enter {med(bpf[n]['gp_api_enter']):.0f} ns, gp_api_exit "
                      f"{med(bpf[n]['gp_api_exit']):.0f} ns per run, the statistics' own clock reads included)")
        for n in ("floor", *GPUPROBED, "bpftrace", "ustack"):
            for a in APIS:
                sp = spread(samples[n][a])
                if sp > 0.25:
                    self.warnings.append(f"{CONFIGS[n]} `{a}`: its runs spread over {100 * sp:.0f} % of their median "
                                         "(a disturbed run; the median is kept)")
        for n in GPUPROBED:
            lost = [i for i in gp_info[n] if losses(i["drops"])]
            if lost:
                self.warnings.append(f"{CONFIGS[n]} lost records in {len(lost)} of {len(gp_info[n])} timed runs "
                                     f"({fmt_drops(losses(lost[0]['drops']))}): its cost is understated")
        frames = sorted({f for i in gp_info["stacks"] for f in i["frames"]})
        trunc = max((i["truncated"] for i in gp_info["stacks"]), default=0)
        codes = gp_info["counting"][0]["codes"] if gp_info["counting"] else {}
        self.code_text = "; ".join(f"`{a}` {', '.join(map(str, c))}" for a, c in codes.items() if c)
        self.headline = {"ratio": ratio, "add": add}
        # least squares: gp_api_exit ns = fixed + per_frame * frames recorded
        pts = [(max(s["frames"]), s["exit_ns"]) for s in sweep if s["frames"]]
        per_frame = fixed = None
        if len({x for x, _ in pts}) >= 2:
            mx, my = statistics.mean(x for x, _ in pts), statistics.mean(y for _, y in pts)
            per_frame = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
            fixed = my - per_frame * mx

        L = [
            "## Added cost per hooked call",
            "",
            f"`bench_calls --depth {args.depth}`: {args.iters:,} calls of each API per run in tight loops that the",
            "workload times itself; added cost = the workload's ns/call under the tracer minus untraced. The floor",
            "is empty bpftrace probes (entry + return) on the same functions: the price of a uprobe + uretprobe",
            "pair itself. gpuprobed runs in four configurations, each adding one thing to the one before:",
            "",
            "| configuration | gpuprobed's options | what it does |",
            "|---|---|---|",
        ]
        for n in GPUPROBED:
            L.append(f"| {CONFIGS[n]} | {' '.join(f'`{o}`' for o in GP_FLAGS[n]) or '(none)'} | {GP_WHAT[n]} |")
        L += [
            "",
            "The stack is walked in gpuprobed's return program (frame pointers, a page of stack at a time) and",
            "copied into each launch's and copy's record. The timeline and the capture are written by gpuprobed's",
            "reader thread from the records in the ring buffer: the traced thread pays for them only through",
            "contention (the reader's CPU is measured in \"Event rate\" below). bpftrace counts calls and keeps a",
            "latency histogram; bpftrace ustack counts `@[ustack]` at the same return probes (no entry probe: it",
            "needs none), the obvious way to get call stacks with bpftrace.",
            "",
            f"The loops run {args.depth} frames of `bench_calls` deep (main, {args.depth - 2} nesting frames, the loop",
            "function): a stack walk costs per frame, and a real program's launch sits well below main",
            "(framework dispatcher, operators, library layers: 15–40 frames in C++ code). Stacks gpuprobed",
            f"recorded in these runs: {', '.join(map(str, frames)) or '?'} frames"
            + (f" ({trunc} marked truncated)" if trunc else "") + ".",
            "",
            "| API | untraced ns/call | floor +ns | " + " | ".join(f"{CONFIGS[n]} +ns" for n in GPUPROBED)
            + " | bpftrace +ns | bpftrace ustack +ns |",
            "|---|" + "---:|" * (4 + len(GPUPROBED)),
        ]
        for a in APIS:
            d = add[a]
            L.append(f"| `{a}` | {med_['untraced'][a]:.0f} | {d['floor']:.0f} | "
                     + " | ".join(f"{d[n]:.0f}" for n in GPUPROBED) + f" | {d['bpftrace']:.0f} | {d['ustack']:.0f} |")
        L += [
            "",
            "As multiples of the floor, and what each step adds:",
            "",
            "| API | " + " | ".join(f"{CONFIGS[n]} / floor" for n in GPUPROBED)
            + " | bpftrace / floor | bpftrace ustack / floor | stack walk +ns | timeline +ns | capture +ns |",
            "|---|" + "---:|" * (len(GPUPROBED) + 5),
        ]
        for a in APIS:
            r, d = ratio[a], add[a]
            L.append(f"| `{a}` | " + " | ".join(f"{r[n]:.2f}x" for n in GPUPROBED)
                     + f" | {r['bpftrace']:.2f}x | {r['ustack']:.2f}x | {d['stacks'] - d['counting']:+.0f} | "
                     f"{d['timeline'] - d['stacks']:+.0f} | {d['default'] - d['timeline']:+.0f} |")
        L += [
            "",
            "The kernel's own timing of the BPF programs per call (`kernel.bpf_stats_enabled`, turned on for",
            "these runs only and restored after; separate runs of the same loops, configurations interleaved,",
            f"median of {len(pair['floor'])}; entry + return programs per call, launches and copies together). Every",
            "number includes what the statistics themselves cost (two clock reads per program run): the empty",
            "pair is that price, and the ratio compares what each tracer's programs add beyond it:",
            "",
            "| configuration | BPF ns per call | beyond the empty pair | / bpftrace count() + hist() | runs |",
            "|---|---:|---:|---:|---|",
        ]
        for n in BPF_PAIR:
            tot, beyond, rat = br[n]
            label = {"floor": "bpftrace, empty entry + return", "bpftrace": "bpftrace `count()` + `hist()` of the latency"}
            L.append(f"| {label.get(n, CONFIGS[n])} | {tot:.0f} | {beyond:+.0f} | {rat:.2f}x | "
                     + ", ".join(f"{v:.0f}" for v in pair[n]) + " |")
        L += [
            "",
            "The kernel's own timing of gpuprobed's two programs (same runs; per program run,",
            "launches and copies together, including the statistics' own clock reads; the timeline and the",
            "capture change nothing in the kernel):",
            "",
            "| program | counting ns/run | stacks ns/run | difference |",
            "|---|---:|---:|---:|",
        ]
        for p in GP_PROGS:
            c, s = bpf_med["counting"][p], bpf_med["stacks"][p]
            L.append(f"| `{p}` | {c:.0f} | {s:.0f} | {s - c:+.0f} |")
        L += [
            "",
            "The stacks mode's return program at other depths (one run each; the walk copies the stack",
            "from each frame to the end of its page, one user-memory read per page, not per frame):",
            "",
            "| `bench_calls --depth` | frames recorded | `gp_api_exit` ns/run | over counting's |",
            "|---:|---:|---:|---:|",
        ]
        for s in sweep:
            L.append(f"| {s['depth']} | {', '.join(map(str, s['frames']))} | {s['exit_ns']:.0f} | "
                     f"{s['exit_ns'] - bpf_med['counting']['gp_api_exit']:+.0f} |")
        if per_frame is not None:
            L += ["", f"Fitted: about **{per_frame:.0f} ns per frame** on top of {fixed:.0f} ns per return "
                  f"(counting mode's return: {bpf_med['counting']['gp_api_exit']:.0f} ns)."]
        if walk_end:
            we = {n: med(v) - med_["untraced"][APIS[0]] for n, v in walk_end.items()}
            n0, n1 = sorted(we)
            L += [
                "",
                "Part of the fixed cost is how the kernel's walk ends. It stops only at a frame it cannot read:",
                "after `main` it follows the frame pointer `main` was called with, which the C library (built",
                "without frame pointers) never set up as one (Debian 12's glibc leaves argc there), and reading it",
                "takes a page fault. bpftrace's `ustack(n)` stops after n frames, so the same stack read with exactly",
                "as many frames as it has, and with one more, prices that fault (a uretprobe on `cudaLaunchKernel`",
                "only; medians):",
                "",
                f"| bpftrace at `{APIS[0]}`'s return | +ns per call |",
                "|---|---:|",
                f"| `@[ustack({n0})] = count()` (the {n0} frames there are) | {we[n0]:.0f} |",
                f"| `@[ustack({n1})] = count()` (one read more: faults) | {we[n1]:.0f} |",
                f"| the faulting read at the end of each walk | **{we[n1] - we[n0]:.0f}** |",
            ]
        return L

    # -- 2. throughput ---------------------------------------------------------------------------------
    def throughput(self, tp):
        args = self.args
        L = [
            "## Throughput of a launch-heavy workload",
            "",
            f"`bench_calls --depth {args.depth}` on the simulated runtime (`build/simgpu`), `SIMGPU_LAUNCH_US` unset: a",
            "launch costs what the runtime does to queue it for the simulated GPU's worker thread (which runs on the",
            "other CPU), nothing more. Launches per second of its launch loop, untraced and under `gpuprobed --pid`",
            f"as it comes (stacks, timeline, capture) and with `--no-stacks` (timeline and capture still on); median of "
            f"{args.tp_reps} interleaved run{'s' if args.tp_reps != 1 else ''}:",
            "",
            "| workload | untraced launches/s | gpuprobed | gpuprobed --no-stacks | gpuprobed --daemon | "
            "--daemon, overhead_budget 1% |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        self.tp_head = {}
        for key, what, _, share in TP_SCENARIOS:
            m = {c: med(tp[key][c]["launches"]) for c in TP_CONFIGS}
            u = m["untraced"]
            L.append(f"| {what} ({int(args.iters * share):,} launches) | {u:,.0f} | "
                     + " | ".join(f"{m[c]:,.0f} (**{100 * m[c] / u:.0f} %**)"
                                  for c in ("default", "no-stacks", "daemon", "daemon-budget")) + " |")
            self.tp_head[key] = (u, m["default"], m["no-stacks"])
            lost = [fmt_drops(x) for c in TP_CONFIGS for x in tp[key][c]["lost"] if x]
            if lost:
                self.warnings.append(f"throughput {key}: records lost ({'; '.join(lost)})")
        L += [
            "",
            "A launch that costs the runtime well under a microsecond is slowed by the probes' fixed cost (two",
            "uprobe + uretprobe pairs when the runtime calls the driver's exported function: both are probed); a",
            "workload whose launches wait for the GPU (the last row) hides it.",
            "",
            "`gpuprobed --daemon` traces it as the always-on daemon does (every CUDA process, launches counted in a",
            "kernel map); with `overhead_budget = 1%` the launch probes are attached only for the part of each second",
            "that keeps their estimated cost at 1 % of the traced CPU time (the counts are then scaled up and marked",
            "as estimates: docs/daemon.md, \"The probes' cost and the overhead budget\"). Its column, against the daemon's, is what the budget buys; the",
            "loops here last one or two seconds and the budget plans each second from the one before, so it acts on half",
            "of them at most, while its attach and detach cost every second: a longer job gains more.",
        ]
        return L

    # -- 3. event rate ---------------------------------------------------------------------------------
    def event_rate(self, rates, callers, modes):
        args = self.args
        ncpu = os.cpu_count()

        def pick(mode, k):
            return [r for r in rates if r["mode"] == mode and r["callers"] == k]

        floor_rate = {k: med(r["rate"] for r in pick("floor", k)) for k in callers}
        L = [
            "## Event rate, losses and gpuprobed's own CPU",
            "",
            f"1 to {max(callers)} `bench_calls` processes (one thread each) call as fast as they can, {args.rate_calls:,}",
            f"calls per run in all, on this machine's {ncpu} CPUs; one `gpuprobed --pid` traces them all. An event is",
            "one hooked call (one record). The rate is the calls over the wall time from the start signal to the",
            "last caller's end; gpuprobed's CPU is its utime + stime (/proc/PID/stat, all its threads) over the",
            "same run, read once its reader has drained the ring buffer (the BPF programs run in the callers and",
            "are in the per-call cost above, not here). Losses are report.json's `drops` (the timeline's own cap and",
            f"`switch_in_unseen` lose no record). The floor: empty bpftrace probes, the rate the probes allow. "
            f"{'Median of ' + str(args.rate_reps) + ' interleaved runs' if args.rate_reps > 1 else 'One run each'}:",
            "",
            "| configuration | callers | events/s | of the floor's rate | gpuprobed CPU, % of a core | "
            "% of a core per 10k events/s | µs of CPU per event | records lost |",
            "|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        self.rate_head = {}
        for mode in modes:
            for k in callers:
                rs = pick(mode, k)
                if not rs:
                    continue
                rate = med(r["rate"] for r in rs)
                if mode == "floor":
                    L.append(f"| floor | {k} | {rate:,.0f} | 100 % | | | | |")
                    continue
                lost_txt = "; ".join(
                    f"{fmt_drops(x)} ({100 * sum(x.values()) / r['calls']:.1f} %)" for r, x in
                    ((r, r["lost"]) for r in rs if r["lost"])) or "none"
                L.append(f"| {CONFIGS[mode]} | {k} | {rate:,.0f} | {100 * rate / floor_rate[k]:.0f} % | "
                         f"{med(r['cpu_pct'] for r in rs):.1f} | {med(r['pct_per_10k'] for r in rs):.2f} | "
                         f"{med(r['us_per_event'] for r in rs):.2f} | {lost_txt} |")
        # targets: zero losses at every rate; CPU per 10k events/s
        us = {}
        for mode in modes:
            if mode == "floor":
                continue
            rs = [r for r in rates if r["mode"] == mode]
            clean = [r for r in rs if not r["lost"]]
            best = max(clean, key=lambda r: r["rate"], default=None)
            lossy = sorted((r for r in rs if r["lost"]), key=lambda r: r["callers"])
            top = max(rs, key=lambda r: r["rate"])
            measured = (f"no loss up to {best['rate']:,.0f} events/s ({best['callers']} caller{'s' if best['callers'] > 1 else ''})"
                        if best else "losses in every run")
            why = ""
            if lossy:
                r = lossy[0]
                measured += (f"; lost {100 * sum(r['lost'].values()) / r['calls']:.1f} % with {r['callers']} callers "
                             f"({r['rate']:,.0f} events/s)")
                why = (f"{fmt_drops(r['lost'])} with {r['callers']} callers on {ncpu} CPUs: the reader needs "
                       f"{r['us_per_event']:.2f} µs of CPU per event in this configuration, "
                       f"{r['us_per_event'] * r['rate'] / 1e4:.0f} % of a core at that rate, and got "
                       f"{r['cpu_pct']:.0f} % beside {r['callers']} busy callers")
            self.goal(f"{CONFIGS[mode]}: no record lost at the highest rates the probes allow on {ncpu} CPUs "
                      f"(1–{max(callers)} callers)", measured, not lossy, why)
            self.rate_head[mode] = (best, top)
            sel = clean or rs
            us[mode] = med(r["us_per_event"] for r in sel)
            pct = med(r["pct_per_10k"] for r in sel)
            worst = max(r["pct_per_10k"] for r in sel)
            why = f"{us[mode]:.2f} µs of CPU per event"
            parts = [("the stacks", "stacks", "counting"), ("the timeline", "timeline", "stacks"),
                     ("the capture", "default", "timeline")]
            order = list(GP_FLAGS)
            steps = [f"{w} {us[a] - us[b]:+.2f}" for w, a, b in parts
                     if a in us and b in us and order.index(a) <= order.index(mode)]
            if steps and mode != "counting":
                why += f" (counting's {us.get('counting', float('nan')):.2f}, then {', '.join(steps)} µs)"
            self.goal(f"{CONFIGS[mode]}: gpuprobed's CPU <= {CPU_TARGET:g} % of a core per 10k events/s",
                      f"{pct:.2f} % (runs: up to {worst:.2f} %)", worst <= CPU_TARGET, why)
            if mode in READER_TARGET_US:
                lim = READER_TARGET_US[mode]
                self.goal(f"{CONFIGS[mode]}: gpuprobed's CPU <= {lim:g} µs per record", f"{us[mode]:.2f} µs "
                          f"(runs: up to {max(r['us_per_event'] for r in sel):.2f})", us[mode] <= lim,
                          "" if us[mode] <= lim else why)
        L += [
            "",
            "With more callers than CPUs the callers take most of both; gpuprobed's reader then gets its share of",
            "a CPU, and where that is less than its records need, the ring buffer (16 MiB) fills and records are",
            "lost (counted, never silently). Where the CPU per event goes is the difference between the",
            "configurations: the timeline is JSON written for every call, the capture a copy of every record",
            "compressed in a thread of its own.",
        ]
        return L

    # -- 4. distinct stacks ----------------------------------------------------------------------------
    def distinct(self, sym):
        args = self.args
        want = 1 << args.distinct_levels
        for s in sym:
            s["untraced_part_s"] = s["wall_s"] - s["traced_s"] if s["traced_s"] is not None else None
        sm = {k: med(s[k] for s in sym) for k in ("sym_ms", "rss_mib", "wall_s", "alone_wall_s", "alone_rss_mib",
                                                    "report_mb", "output_mb", "traced_s", "untraced_part_s",
                                                    "ns_per_launch", "alone_ns_per_launch")}
        self.sym_head = sm
        flags = []
        for i, s in enumerate(sym):
            if s["distinct"] != want:
                flags.append(f"run {i + 1}: {s['distinct']:,} distinct stacks in report.json, not {want:,}")
            if losses(s["drops"]):
                flags.append(f"run {i + 1}: records lost: {fmt_drops(losses(s['drops']))}")
            if s["truncated"]:
                flags.append(f"run {i + 1}: {s['truncated']:,} of {s['distinct']:,} stacks marked truncated "
                             "(the workload's frame chain is complete down to the C library)")
        for f in flags:
            log("FLAG: " + f)
        L = [
            f"## Call stacks in userspace: {want:,} distinct stacks",
            "",
            f"`gpuprobed -v -o DIR -- bench_calls --distinct-stacks {args.distinct_levels}`: {want:,} launches, each from",
            f"a different call stack ({args.distinct_levels} levels of two functions, chosen by the bits of the launch's index;",
            "on the real runtime without a GPU every launch fails fast but is probed and carries its stack). The",
            "symbolization time is what `gpuprobed -v` reports for naming every stack at the end; the peak RSS",
            "is the session's (GNU time's maximum resident set size: the larger of gpuprobed and the workload it",
            f"waited for; the workload alone is shown next to it). Median of {len(sym)}:",
            "",
            "| | value |",
            "|---|---:|",
            f"| distinct stacks in report.json | {', '.join(sorted({format(s['distinct'], ',') for s in sym}))} "
            f"(expected {want:,}) |",
            f"| frames per stack | {', '.join(map(str, sorted({f for s in sym for f in s['frames']})))} |",
            f"| stacks marked truncated | {', '.join(sorted({format(s['truncated'], ',') for s in sym}))} |",
            f"| drops | {'; '.join(sorted({fmt_drops(s['drops']) for s in sym}))} |",
            f"| symbolization (gpuprobed -v) | **{sm['sym_ms']:.1f} ms** for {sym[0]['symbolized_stacks']:,} stacks "
            f"({sym[0]['addresses']:,} distinct addresses) |",
            f"| peak RSS | **{sm['rss_mib']:.0f} MiB** (the workload alone: {sm['alone_rss_mib']:.0f} MiB) |",
            f"| session wall time, `gpuprobed -- …` start to exit | {sm['wall_s']:.2f} s (traced: {sm['traced_s']:.2f} s; "
            f"the workload alone: {sm['alone_wall_s']:.2f} s) |",
            f"| of which not tracing (start-up, symbolization, writing the reports) | {sm['untraced_part_s']:.2f} s |",
            f"| the workload's own ns per launch, traced / alone | {sm['ns_per_launch']:.0f} / {sm['alone_ns_per_launch']:.0f} |",
            f"| report.json; all output files | {sm['report_mb']:.0f} MB; {sm['output_mb']:.0f} MB |",
            "",
            "The stacks differ in every frame but share their addresses (two call sites per level), so the",
            "symbolizer names few addresses: this measures the per-stack work (deduplication, frame ids,",
            "the report), not ELF lookups.",
        ]
        if flags:
            L += ["", "**Flagged:** " + "; ".join(flags) + "."]
        return L

    # -- 5. capture ------------------------------------------------------------------------------------
    def capture(self, caps):
        L = [
            "## The capture file: bytes per record, rebuilding the report",
            "",
            "`gpuprobed -v --no-timeline -o DIR -- bench_calls --iters N/2` (stacks and capture on; N calls, each one",
            "record), then `gpuprobed report` of its capture, with `--no-timeline` and as it comes (trace.json too,",
            "which keeps at most 5,000,000 calls: `--timeline-max-events`). Records are the capture's operations",
            "(the calls, plus the session's processes, libraries and thread accounts). \"waits\": the times the",
            "live reader waited for the capture's compressing thread. \"equal\": the rebuilt report.json equals",
            "the live one but for `source`. Peak RSS: GNU time's.",
            "",
            "| records | call rate while traced | records lost | writer waits | capture | bytes per record "
            "(compressed / raw) | `gpuprobed report --no-timeline` | its peak RSS | `gpuprobed report` (with trace.json) "
            "| its peak RSS | equal |",
            "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for c in caps:
            tl_note = f", {c['timeline_left_out']:,} calls left out of trace.json" if c.get("timeline_left_out") else ""
            L.append(f"| {c['ops']:,} | {c.get('loop_rate', 0):,.0f}/s | {fmt_drops(losses(c['drops']))} | {c['waits']} | "
                     f"{c['file_mib']:.1f} MiB | {c['file_mib'] * 1048576 / c['ops']:.1f} / "
                     f"{c['raw_mib'] * 1048576 / c['ops']:.0f} | **{c['report_s_no_tl']:.2f} s** "
                     f"({1e6 * c['report_s_no_tl'] / c['ops']:.2f} µs/record) | {c['report_rss_mib_no_tl']:.0f} MiB | "
                     f"{c['report_s_tl']:.2f} s ({c['trace_mb']:.0f} MB{tl_note}) | {c['report_rss_mib_tl']:.0f} MiB | "
                     f"{'yes' if c['equal'] else '**no**'} |")
            if not c["equal"]:
                self.warnings.append(f"the report rebuilt from a capture of {c['ops']:,} records differs from the live one")
        L += [
            "",
            "The same captures as SQLite databases (`gpuprobed export CAPTURE -o FILE.sqlite`, docs/sql.md): every",
            "record a row, the model's tables, the views. Targets (issue 28): the export within 2x the time of",
            "`gpuprobed report` of the same capture, as it runs (its timeline included), the file within 2x the",
            "capture's uncompressed size. Beside them: the export against the report without its timeline (the",
            "model's work alone: the export's rows are SQLite's work on top of it, ~0.35 µs a call at the least,",
            "so this ratio cannot come near 2), and `export --indices` (calls indexed by time, process, API,",
            "kernel and outer call, as `gpuprobed query`'s cache has them). `gpuprobed export -v` splits the time.",
            "",
            "| records | `gpuprobed export` | x report (default) | x report --no-timeline | `--indices` | its peak RSS | "
            "database | x capture uncompressed |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for c in caps:
            t_ratio = c["export_s"] / c["report_s_tl"] if c["report_s_tl"] else float("inf")
            t_ratio_no_tl = c["export_s"] / c["report_s_no_tl"] if c["report_s_no_tl"] else float("inf")
            s_ratio = c["sqlite_mib"] / c["raw_mib"] if c["raw_mib"] else float("inf")
            L.append(f"| {c['ops']:,} | {c['export_s']:.2f} s ({1e6 * c['export_s'] / c['ops']:.2f} µs/record) | "
                     f"{'**' if t_ratio > 2 else ''}{t_ratio:.1f}x{'**' if t_ratio > 2 else ''} | "
                     f"{t_ratio_no_tl:.1f}x | {c['export_idx_s']:.2f} s ({c['sqlite_idx_mib']:.0f} MiB) | "
                     f"{c['export_rss_mib']:.0f} MiB | {c['sqlite_mib']:.1f} MiB | "
                     f"{'**' if s_ratio > 2 else ''}{s_ratio:.2f}x{'**' if s_ratio > 2 else ''} |")
            if t_ratio > 2:
                self.warnings.append(f"gpuprobed export of {c['ops']:,} records took {t_ratio:.1f}x the report's time "
                                     "(target: 2x)")
            if s_ratio > 2:
                self.warnings.append(f"the database of {c['ops']:,} records is {s_ratio:.2f}x the capture's "
                                     "uncompressed size (target: 2x)")
        self.cap_head = None
        if len(caps) >= 2:
            a, b = caps[0], caps[-1]
            lin = (b["report_s_no_tl"] / b["ops"]) / (a["report_s_no_tl"] / a["ops"])
            lin_tl = (b["report_s_tl"] / b["ops"]) / (a["report_s_tl"] / a["ops"])
            verdict = ("linear" if 0.8 <= lin <= 1.25 else
                       "less than linear (a fixed start-up cost weighs on the smaller one)" if lin < 0.8 else
                       "more than linear")
            self.cap_head = (a, b, lin, verdict)
            L += [
                "",
                f"From {a['ops']:,} to {b['ops']:,} records ({b['ops'] / a['ops']:.1f}x), `gpuprobed report --no-timeline` "
                f"took {b['report_s_no_tl'] / a['report_s_no_tl']:.1f}x as long: {lin:.2f}x the time per record, "
                f"**{verdict}**; its peak RSS went from {a['report_rss_mib_no_tl']:.0f} to {b['report_rss_mib_no_tl']:.0f} MiB. "
                f"With trace.json: {b['report_s_tl'] / a['report_s_tl']:.1f}x ({lin_tl:.2f}x per record; the timeline "
                "stops growing at its cap).",
            ]
        return L

    # -- 6, 7 ------------------------------------------------------------------------------------------
    def untraced_cost(self, pp):
        args = self.args
        pm = {k: med(v) for k, v in pp.items()}
        return [
            "## Cost to processes gpuprobed does not trace",
            "",
            "The scheduler tracepoint fires for every context switch on the machine; gpuprobed's program",
            "returns after one array lookup for tasks of untraced processes. A ping-pong between two threads",
            f"over pipes ({args.pingpong_rounds:,} round trips, two switches or wakeups each) in an untraced",
            "process, next to an idle process that gpuprobed traces or not (medians):",
            "",
            "| ping-pong | ns per round trip | ratio |",
            "|---|---:|---:|",
            f"| no tracer | {pm['untraced']:.0f} | 1.00x |",
            f"| gpuprobed tracing the other process | {pm['gpuprobed']:.0f} | {pm['gpuprobed'] / pm['untraced']:.2f}x |",
            "",
            "The wall-clock ratio is dominated by run-to-run noise (wakeup latency on a VM). The direct",
            "measure is the kernel's own timing of gpuprobed's `sched_switch` program (bpf_stats) during",
            "the traced runs. It counts every switch on the machine in that time, so it is an upper bound",
            "for the ping-pong's share, and it includes the statistics' own clock reads:",
            "",
            "| sched_switch program | per round trip |",
            "|---|---:|",
            f"| runs | {pm['bpf_runs']:.1f} |",
            f"| BPF run time | {pm['bpf_ns']:.0f} ns |",
            f"| BPF run time / untraced round trip | {100 * pm['bpf_ns'] / pm['untraced']:.2f} % |",
        ]

    def attach(self, attach):
        ms = med(a[0] for a in attach)
        self.goal(f"attach to a process with {attach[0][1]} mapped files <= {ATTACH_TARGET_MS} ms", f"{ms:.1f} ms",
                  ms <= ATTACH_TARGET_MS)
        self.attach_ms = ms
        return [
            "## Attach time",
            "",
            f"`gpuprobed --pid` on `many_libs`, a process with {attach[0][1]} mapped files ({attach[0][2]} mappings;",
            "the libraries made by scripts/gen_many_libs.sh): reading its maps, looking at every candidate file once",
            "(cached by dev/inode/mtime), placing the probes and admitting it, as gpuprobed -v reports it. Median of "
            f"{len(attach)}: **{ms:.1f} ms** (target: <= {ATTACH_TARGET_MS} ms).",
        ]

    # -- the page --------------------------------------------------------------------------------------
    def write(self, samples, gp_info, bpf, pair, sweep, walk_end, tp, rates, callers, modes, sym, caps, attach, pp,
              unwind, kinds, nvml):
        args = self.args
        body = (self.per_call(samples, gp_info, bpf, pair, sweep, walk_end) + [""] + self.throughput(tp) + [""]
                + self.event_rate(rates, callers, modes) + [""] + self.distinct(sym) + [""] + self.capture(caps)
                + [""] + self.untraced_cost(pp) + [""] + self.attach(attach) + [""]
                + bench_unwind.markdown(unwind).split("\n") + [""]
                + bench_stack_kinds.markdown(kinds).split("\n") + [""]
                + bench_nvml.markdown(nvml).split("\n"))
        self.targets.append(bench_nvml.target(nvml))
        st = self.steady
        if st.kept:
            self.warnings.append(f"{len(st.kept)} measurement{'s' if len(st.kept) > 1 else ''} ran while the machine "
                                 f"was busy and {'were' if len(st.kept) > 1 else 'was'} kept after {args.retries} reruns: "
                                 + "; ".join(st.kept[:4]) + ("; …" if len(st.kept) > 4 else ""))
        for w in self.warnings:
            log("WARNING: " + w)
        now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
        L = [
            "# Performance: what gpuprobed costs",
            "",
            "Generated by `make bench` (scripts/bench.py); rerun it to refresh this page. Everything on it was",
            "measured in one run, on this machine, side by side. On older kernels (the stand-ins' costs, measured",
            "in VMs by `make bench-kernel`): docs/performance-kernels.md.",
            "",
        ]
        if args.quick:
            L += [f"**A `--quick` smoke run ({args.reps} short run{'s' if args.reps != 1 else ''} per configuration): "
                  "not a measurement.**", ""]
        L += [
            f"- date: {now} (the run took {self.elapsed / 60:.0f} min)",
            f"- kernel: {platform.release()}",
            f"- CPU: {cpu_model()} ({os.cpu_count()} CPUs), {mem_gib:.0f} GiB of memory",
            f"- target library: {self.target}" + (f" (error codes: {self.code_text})" if self.code_text else ""),
            f"- every number is the **median of interleaved runs** ({args.reps} per configuration for the per-call "
            f"costs; counts below): configurations alternate, so drift hits them alike. The machine is shared (others' "
            f"tests run on it now and then): before keeping a run the bench checked the CPU time the rest of the "
            f"machine used meanwhile, and ran it again when that exceeded {args.max_foreign:g} of a core or another "
            f"tracer was loaded ({len(st.redone)} run{'s' if len(st.redone) != 1 else ''} redone, "
            f"{st.waited:.0f} s waited for quiet; the rest of the machine's load during the kept runs: median "
            f"{med(st.loads):.2f}, at most {max(st.loads, default=0):.2f} of a core).",
        ]
        L += [f"- **warning:** {w}" for w in self.warnings]
        h = self.headline
        L += [
            "",
            "## Targets",
            "",
            "| target | measured | | why |",
            "|---|---|---|---|",
        ]
        for what, measured, met, why in self.targets:
            L.append(f"| {what} | {measured} | {'met' if met else '**missed**'} | {why} |")
        L += [
            "",
            "Headlines: added cost per call as multiples of the floor (launch, copy): "
            + "; ".join(f"{CONFIGS[n]} {h['ratio'][APIS[0]][n]:.2f}x, {h['ratio'][APIS[1]][n]:.2f}x"
                        for n in ("bpftrace", "ustack", *GPUPROBED))
            + f" (the floor: +{h['add'][APIS[0]]['floor']:.0f} ns, +{h['add'][APIS[1]]['floor']:.0f} ns per call)."
        ]
        if "layers" in self.tp_head:
            u, d, n = self.tp_head["layers"]
            L[-1] += (f" A launch-bound loop on the simulated runtime keeps {100 * d / u:.0f} % of its launches per "
                      f"second under gpuprobed ({100 * n / u:.0f} % with --no-stacks).")
        if "default" in self.rate_head and self.rate_head["default"][0]:
            b = self.rate_head["default"][0]
            L[-1] += f" Highest rate with no record lost, as it comes: {b['rate']:,.0f} events/s."
        if self.cap_head:
            a, b, lin, verdict = self.cap_head
            L[-1] += (f" `gpuprobed report`: {a['report_s_no_tl']:.1f} s for {a['ops'] / 1e6:.1f}M records, "
                      f"{b['report_s_no_tl']:.1f} s for {b['ops'] / 1e6:.1f}M ({verdict}).")
        L += [""] + body
        L += [
            "",
            "The sections after the marker below are hand-written analysis kept across runs: their absolute",
            "numbers come from the machine they were measured on, when they were written.",
            "",
            "Raw samples (ns/call; BPF ns/run; launches/s; event-rate runs; symbolization runs; capture runs;",
            "ping-pong ns/round trip):",
            "",
            "```",
            json.dumps({"calls": samples, "bpf_stats": bpf, "bpf_per_call": pair, "depth_sweep": sweep,
                        "walk_end": {f"ustack({n})": v for n, v in walk_end.items()},
                        "throughput": tp, "event_rate": rates,
                        "stacks_userspace": [{k: v for k, v in s.items() if k != "codes"} for s in sym],
                        "capture": [{k: v for k, v in c.items() if k != "codes"} for c in caps],
                        "attach_ms": [a[0] for a in attach], "pingpong": pp,
                        "redone": st.redone}, indent=1, default=str),
            "```",
            "",
        ]
        return "\n".join(L)


def fmt_drops(d):
    return ", ".join(f"{k} {v:,}" for k, v in sorted(d.items())) or "none"


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else float("nan")


def spread(v):
    """(max - min) / median of samples."""
    m = med(v)
    return (max(v) - min(v)) / m if len(v) > 1 and m > 0 else 0.0


def ints(text, what):
    try:
        return [int(x) for x in text.split(",") if x]
    except ValueError:
        sys.exit(f"bench: {what}: not a list of numbers: {text}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--iters", type=int, help="calls of each API per run (default 200000)")
    ap.add_argument("--reps", type=int, help="runs per configuration (default 5)")
    ap.add_argument("--depth", type=int, default=16,
                    help="frames of the workload on the stack at each call (default 16)")
    ap.add_argument("--sweep-depths", default="2,8,16,32,64",
                    help="depths at which the kernel times the stacks mode's programs (default 2,8,16,32,64)")
    ap.add_argument("--tp-reps", type=int, help="runs per configuration of the throughput section (default 3)")
    ap.add_argument("--rate-callers", help="callers (processes) in the event-rate runs (default 1,2,3,4)")
    ap.add_argument("--rate-calls", type=int, help="calls per event-rate run, all callers together (default 3000000)")
    ap.add_argument("--rate-modes", help="configurations of the event-rate runs "
                    "(default floor,counting,stacks,timeline,default)")
    ap.add_argument("--rate-reps", type=int, help="event-rate runs per configuration and callers (default 2)")
    ap.add_argument("--capture-records", help="records of the capture runs (default 1000000,10000000)")
    ap.add_argument("--distinct-levels", type=int, default=17,
                    help="the symbolization run makes 2^N launches from 2^N distinct stacks (default 17)")
    ap.add_argument("--sym-reps", type=int, help="symbolization runs (default 3)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance.md"),
                    help="the page to write (default docs/performance.md)")
    ap.add_argument("--pingpong-rounds", type=int, help="round trips per ping-pong run (default 50000)")
    ap.add_argument("--max-foreign", type=float, default=0.25,
                    help="run a measurement again when the rest of the machine kept more than this much of a "
                         "core busy meanwhile (default 0.25)")
    ap.add_argument("--retries", type=int, help="at most this many reruns of one measurement (default 2; --quick: 0)")
    ap.add_argument("--max-wait", type=float,
                    help="seconds the bench may wait in all for the machine to be quiet before a rerun "
                         "(default 300; --quick: 0)")
    ap.add_argument("--only-bpf", action="store_true",
                    help="only the kernel's timing of the programs side by side (bpf_stats; --reps runs each, "
                         "no depth sweep): prints its table, writes no page")
    ap.add_argument("--quick", action="store_true",
                    help="a short smoke run (1 rep, 20000 calls, fewer event-rate runs, 100k and 1M capture "
                         "records, one symbolization run, 5000 round trips) unless given otherwise; its page says so")
    args = ap.parse_args()
    for k, full, quick in (("iters", 200000, 20000), ("reps", 5, 1), ("sym_reps", 3, 1), ("retries", 2, 0),
                           ("max_wait", 300, 0),
                           ("pingpong_rounds", 50000, 5000), ("tp_reps", 3, 1), ("rate_callers", "1,2,3,4", "1,2,4"),
                           ("rate_calls", 3000000, 300000), ("rate_modes", "floor,counting,stacks,timeline,default",
                                                             "floor,counting,default"),
                           ("rate_reps", 2, 1), ("capture_records", "1000000,10000000", "100000,1000000")):
        if getattr(args, k) is None:
            setattr(args, k, quick if args.quick else full)
    depths = ints(args.sweep_depths, "--sweep-depths")
    rate_callers = ints(args.rate_callers, "--rate-callers")
    cap_records = ints(args.capture_records, "--capture-records")
    rate_modes = [m for m in args.rate_modes.split(",") if m]
    for m in rate_modes:
        if m != "floor" and m not in GP_FLAGS:
            sys.exit(f"bench: --rate-modes: {m} is not floor, {', '.join(GP_FLAGS)}")
    if os.geteuid() != 0:
        sys.exit("bench: needs root (uprobes)")
    for tool in ("bpftrace", "bpftool"):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} not found (make deps installs it)")
    t_start = time.monotonic()

    workload = os.path.join(args.build, "workloads", "bench_calls")
    real = "/usr/local/cuda/lib64/libcudart.so.13"
    env = dict(os.environ)
    env.pop("SIMGPU_LAUNCH_US", None)
    if os.path.exists(real):
        lib_dir, lib = os.path.dirname(real), os.path.realpath(real)
        target = f"the real CUDA runtime ({lib}); without a GPU each call fails fast"
    else:
        lib_dir = os.path.join(args.build, "simgpu")
        lib = os.path.realpath(os.path.join(lib_dir, "libcudart.so.13"))
        target = (f"the simulated runtime ({lib}) with zero-time kernels and copies, not going down to "
                  "the simulated driver (one probed layer, as bpftrace probes it)")
        env.update(SIMGPU_KERNEL_US="0", SIMGPU_COPY_LATENCY_US="0", SIMGPU_RUNTIME_DIRECT="1")
    sim_env = dict(os.environ)
    sim_env.pop("SIMGPU_LAUNCH_US", None)
    env["LD_LIBRARY_PATH"] = lib_dir
    log(f"target: {target}")
    warnings = []
    others = foreign_tracers(lib)
    if others:
        warnings.append(f"when the bench started, other tracers were loaded ({', '.join(others)}): probes on "
                        f"{lib} tax every run, untraced ones too")
        log("WARNING: " + warnings[-1])
    steady = Steady(args.max_foreign, args.retries, budget=8 * args.reps + 20, max_wait=args.max_wait)

    if args.only_bpf:
        with tempfile.TemporaryDirectory() as tmp:
            _, pair, _ = bpf_block(args, workload, lib, env, tmp, steady, [])
        print(f"target: {target}")
        for n, (tot, beyond, rat) in bpf_pair_ratios(pair).items():
            print(f"{CONFIGS[n]:22s} {tot:6.0f} ns per call, {beyond:+6.0f} beyond the empty pair, "
                  f"{rat:.2f}x bpftrace's  (runs: {', '.join(f'{v:.0f}' for v in pair[n])})")
        return
    samples = {n: {a: [] for a in APIS} for n in CONFIGS}
    gp_info = {n: [] for n in GPUPROBED}
    with tempfile.TemporaryDirectory() as tmp:
        # 1. added cost per call: every configuration once per rep, interleaved
        for rep in range(args.reps):
            def per_call_rep():
                res, why = {}, []
                for name in CONFIGS:
                    r, info = one_run(name, args, workload, lib, env, tmp)
                    res[name] = (r, info)
                    msg = (f"rep {rep + 1}/{args.reps} {CONFIGS[name]:18s} launch {r['launch_ns']:8.1f} ns"
                           f"  memcpyAsync {r['memcpy_async_ns']:8.1f} ns")
                    if info["foreign"]:
                        why.append(f"{CONFIGS[name]} ran with {', '.join(info['foreign'])}")
                        msg += f"  (also loaded: {', '.join(info['foreign'])})"
                    if name in GPUPROBED:
                        msg += f"  drops: {fmt_drops(losses(info['drops']))}"
                        if info["frames"]:
                            msg += f"  frames per stack: {info['frames']}"
                    log(msg)
                return res, "; ".join(why) or None
            res = steady.run(f"per-call rep {rep + 1}", per_call_rep)
            for name, (r, info) in res.items():
                samples[name]["cudaLaunchKernel"].append(r["launch_ns"])
                samples[name]["cudaMemcpyAsync"].append(r["memcpy_async_ns"])
                if name in GPUPROBED:
                    gp_info[name].append(info)

        # the kernel's timing of the BPF programs (separate runs: the statistics' own clock reads would
        # tax the timed runs above): bpftrace's and gpuprobed's side by side, then gpuprobed's stacks at depths
        bpf, pair, sweep = bpf_block(args, workload, lib, env, tmp, steady, depths)

        # the end of a walk: bpftrace's ustack(n) stops after n frames; with one frame more than the
        # stack has, the walk reads the next frame pointer (main's saved rbp, which the C library did
        # not set up as one) and takes a fault
        nframes = max((f for i in gp_info["stacks"] for f in i["frames"]), default=0)
        walk_end = {n: [] for n in (nframes, nframes + 1)} if nframes else {}
        for rep in range(args.reps if walk_end else 0):
            for n in walk_end:
                bt = f"uretprobe:{lib}:{APIS[0]} {{ @[ustack({n})] = count(); }}\n", 1
                r, _ = steady.run(f"bpftrace ustack({n})",
                                  lambda: (one_run("walk_end", args, workload, lib, env, tmp, bt=bt), None))
                walk_end[n].append(r["launch_ns"])
                log(f"rep {rep + 1}/{args.reps} bpftrace ustack({n}) at {APIS[0]}'s return: launch {r['launch_ns']:8.1f} ns")

        # 2. a launch-heavy workload's throughput on the simulated runtime
        tp = {sc[0]: {c: {"launches": [], "copies": [], "lost": []} for c in TP_CONFIGS} for sc in TP_SCENARIOS}
        sim_lib = os.path.realpath(os.path.join(args.build, "simgpu", "libcudart.so.13"))
        for rep in range(args.tp_reps):
            for sc in TP_SCENARIOS:
                def tp_block():
                    res = {}
                    for c in TP_CONFIGS:
                        res[c] = throughput_run(args, sim_env, tmp, sc, c)
                        log(f"rep {rep + 1}/{args.tp_reps} throughput {sc[0]:6s} {c:9s}: "
                            f"{res[c][0]:10,.0f} launches/s {res[c][1]:10,.0f} copies/s  drops: {fmt_drops(res[c][2])}")
                    others = foreign_tracers(sim_lib)
                    return res, (f"other tracers on the simulated runtime: {', '.join(others)}" if others else None)
                res = steady.run(f"throughput {sc[0]} rep {rep + 1}", tp_block)
                for c, (l, cp, lost) in res.items():
                    tp[sc[0]][c]["launches"].append(l)
                    tp[sc[0]][c]["copies"].append(cp)
                    tp[sc[0]][c]["lost"].append(lost)

        # 3. event rate and gpuprobed's own CPU: callers x modes, interleaved
        rates = []
        for rep in range(args.rate_reps):
            for k in rate_callers:
                for mode in rate_modes:
                    r = steady.run(f"event rate {mode} {k} callers", lambda: (
                        rate_run(args, workload, lib, env, tmp, mode, k, args.rate_calls), None))
                    r["rep"] = rep
                    rates.append(r)
                    msg = f"rep {rep + 1}/{args.rate_reps} event rate {mode:8s} {k} callers: {r['rate']:10,.0f} calls/s"
                    if mode != "floor":
                        msg += (f"  gpuprobed CPU {r['cpu_pct']:5.1f} % of a core, {r['pct_per_10k']:.2f} % per 10k/s "
                                f"({r['us_per_event']:.2f} µs per event)  lost: {fmt_drops(r['lost'])}")
                    log(msg)

        # 4. the userspace side of stacks
        sym = []
        for rep in range(args.sym_reps):
            s = steady.run(f"distinct stacks run {rep + 1}", lambda: (symbolize_run(args, workload, env, tmp), None))
            sym.append(s)
            log(f"rep {rep + 1}/{args.sym_reps} distinct stacks: {s['distinct']:,} in the report, "
                f"symbolized in {s['sym_ms']:.1f} ms ({s['addresses']} addresses), peak RSS {s['rss_mib']:.0f} MiB "
                f"(workload alone {s['alone_rss_mib']:.0f} MiB), wall {s['wall_s']:.2f} s, drops: {fmt_drops(s['drops'])}, "
                f"truncated stacks {s['truncated']:,}")

        # 5. the capture file
        caps = []
        for n in cap_records:
            c = steady.run(f"capture of {n:,} records", lambda: (capture_run(args, workload, env, tmp, n), None))
            caps.append(c)
            log(f"capture: {c['calls']:,} calls, {c['ops']:,} operations, {c['file_mib']:.1f} MiB "
                f"({c['raw_mib']:.1f} MiB raw), writer waits {c['waits']}, drops: {fmt_drops(losses(c['drops']))}; "
                f"gpuprobed report --no-timeline {c['report_s_no_tl']:.2f} s ({c['report_rss_mib_no_tl']:.0f} MiB), "
                f"with trace.json {c['report_s_tl']:.2f} s ({c['report_rss_mib_tl']:.0f} MiB), equal: {c['equal']}")

        # 7. attach time
        libs_dir = os.path.join(args.build, "many_libs")
        attach = [steady.run("attach", lambda: (attach_run(args.build, env, libs_dir, tmp), None))
                  for _ in range(args.reps)]
        for ms, files, maps in attach:
            log(f"attach to a process with {files} mapped files ({maps} mappings): {ms:.1f} ms")

        # 6. the scheduler tracepoint's cost to everybody else
        pp = {"untraced": [], "gpuprobed": [], "bpf_ns": [], "bpf_runs": []}
        for rep in range(args.reps):
            for traced in (False, True):
                v, bpf_ns, runs = steady.run("ping-pong", lambda: (
                    pingpong_run(args.build, env, args.pingpong_rounds, traced, tmp), None))
                pp["gpuprobed" if traced else "untraced"].append(v)
                msg = f"rep {rep + 1}/{args.reps} ping-pong {'while tracing another process' if traced else 'no tracer'}: {v:.0f} ns/round trip"
                if traced:
                    pp["bpf_ns"].append(bpf_ns)
                    pp["bpf_runs"].append(runs)
                    msg += f", sched_switch BPF {bpf_ns:.0f} ns in {runs:.1f} runs per round trip"
                log(msg)

        # 8. unwind tables of the largest ELF files here
        unwind = bench_unwind.measure(args.build, reps=args.reps, quick=args.quick, log=log)
        # 9. call stacks by kind of walk
        kinds = bench_stack_kinds.measure(args.build, reps=min(args.reps, 3), quick=args.quick, log=log)
        # 10. the NVML sampling thread
        nvml = bench_nvml.measure(args.build, reps=min(args.reps, 3), quick=args.quick, log=log)
    elapsed = time.monotonic() - t_start

    page = Page(args, target, lib, warnings, steady, elapsed)
    text = page.write(samples, gp_info, bpf, pair, sweep, walk_end, tp, rates, rate_callers, rate_modes, sym, caps,
                      attach, pp, unwind, kinds, nvml)
    kept = ""
    if os.path.exists(args.out):
        with open(args.out) as f:
            old = f.read()
        if ANALYSIS_MARKER in old:
            kept = old[old.index(ANALYSIS_MARKER):]
    elif os.path.exists(os.path.join(ROOT, "docs", "performance.md")):
        # a new page elsewhere (--out) keeps the analysis of the checked-in one
        with open(os.path.join(ROOT, "docs", "performance.md")) as f:
            old = f.read()
        if ANALYSIS_MARKER in old:
            kept = old[old.index(ANALYSIS_MARKER):]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text + ("\n" + kept if kept else ""))
    print(text)
    log(f"wrote {args.out} ({elapsed / 60:.1f} min)")


if __name__ == "__main__":
    main()
