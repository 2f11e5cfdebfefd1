#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""make bench: gpuprobed's overhead per traced call, against the uprobe floor and bpftrace.

One run, on this machine, side by side (each configuration repeated, interleaved, medians):
  untraced            the workload alone
  floor               empty bpftrace uprobe+uretprobe at the sites gpuprobed probes in the loops
  gpuprobed counting  gpuprobed --pid --no-stacks (counts, times, sizes)
  gpuprobed stacks    gpuprobed --pid (its default: a user stack at every launch and copy)
  bpftrace            bpftrace counting calls with a latency histogram at the same sites
  bpftrace ustack     bpftrace @[ustack] = count() at the same return probes (the obvious
                      bpftrace way to get call stacks)
The workload (tests/workloads/bench_calls.c) times its own loops of
cudaLaunchKernel and cudaMemcpyAsync, run --depth frames deep (16: a stack walk
walks a realistic stack). Added cost = traced - untraced. The kernel's own timing
of gpuprobed's two programs (bpf_stats), counting vs stacks, says where it goes.
Then the userspace side of stacks: gpuprobed -v -- bench_calls --distinct-stacks 17
(131,072 launches, each from a different stack): symbolization time, peak RSS,
the session's wall time, the distinct stacks and drops in its report.
Then the cost of gpuprobed's scheduler tracepoint on everybody else: a
ping-pong between two threads over pipes (tests/workloads/bench_pingpong.c),
in a process gpuprobed does NOT trace, next to an idle process that gpuprobed
traces or not, plus the kernel's own timing of the sched_switch program
(kernel.bpf_stats_enabled, restored afterwards) during the traced runs.
Writes docs/performance.md (or --out; and prints it); everything in that file from the line
ANALYSIS_MARKER on is kept as it is (the measured explanation of the numbers).
--quick: a short smoke run (1 rep, 20,000 calls; the symbolization run once) -- not for the page.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APIS = ("cudaLaunchKernel", "cudaMemcpyAsync")
ANALYSIS_MARKER = "<!-- analysis: kept by make bench -->"
# configuration -> its name in the tables, in the order of a rep
CONFIGS = {
    "untraced": "untraced",
    "floor": "floor",
    "counting": "gpuprobed counting",
    "stacks": "gpuprobed stacks",
    "bpftrace": "bpftrace",
    "ustack": "bpftrace ustack",
}
BPFTRACE = ("floor", "bpftrace", "ustack")
GPUPROBED = ("counting", "stacks")
# (configuration, most it may cost as a multiple of the floor, the bpftrace equivalent it must beat)
TARGETS = (("counting", 1.10, "bpftrace"), ("stacks", 1.5, "ustack"))
# drops{} counters that lose no record (docs/report-format.md "Loss")
NOT_LOSSES = {"switch_in_unseen"}
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


def start_gpuprobed(build, pid, out_dir, extra=()):
    """gpuprobed --pid pid, returned once it says its probes are in place."""
    tracer = subprocess.Popen([os.path.join(build, "gpuprobed"), "--pid", str(pid), "-o", out_dir, *extra],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    buf = ""
    while "tracing" not in buf:
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


def new_progs(names, before):
    """{name: id} of the one program called name loaded since before (a prog_ids answer): ours,
    whatever else runs on the machine (bpftool here does not say which process holds a program)."""
    now = prog_ids(names)
    res = {}
    for n in names:
        new = now[n] - before[n]
        if len(new) != 1:
            raise RuntimeError(f"expected one new BPF program {n}, found {len(new)} (another gpuprobed started?)")
        res[n] = new.pop()
    return res


def prog_stats(ids):
    """{name: (run_time_ns, run_cnt)} of the programs {name: id}, from the kernel's bpf_stats."""
    progs = {p["id"]: p for p in loaded_progs()}
    return {n: (progs[i].get("run_time_ns", 0), progs[i].get("run_cnt", 0)) for n, i in ids.items()}


def foreign_tracers(lib):
    """What else may trace the library under test now: uprobes of other processes on it (perf events;
    uprobe_multi links do not show there) and another gpuprobed's programs (its probes sit on every
    copy of the runtime its targets map, and fire in any process that maps it)."""
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
            pre = prog_ids(GP_PROGS)
            tracer = start_gpuprobed(args.build, run.pid, out_dir, ["--no-stacks"] if name == "counting" else [])
        before_exit = None
        if stats:
            ids = new_progs(GP_PROGS, pre)
            before = prog_stats(ids)

            def before_exit():
                after = prog_stats(ids)
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


def capture_run(args, workload, env, tmp, iters):
    """gpuprobed -v -o DIR -- bench_calls --iters N (capture on, the default), then gpuprobed report of it:
    the rate the session kept up with, losses, the writer's waits, bytes per operation, and the time to
    rebuild every output from the capture."""
    out_dir = os.path.join(tmp, "cap")
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [os.path.join(args.build, "gpuprobed"), "-v", "-o", out_dir, "--", workload, "--iters", str(iters)]
    rc, out, err, wall, rss = run_measured(cmd, env, tmp, "cap")
    if rc != 0:
        sys.exit(f"bench: gpuprobed -- bench_calls --iters {iters} exited {rc}: {err}")
    m = re.search(r"capture \S+: (\d+) operations, ([0-9.]+) MiB \(([0-9.]+) MiB before compression\); "
                  r"the consumer waited (\d+) times", err)
    calls = re.search(r"after ([0-9.]+) s: .*?(\d+) calls recorded", err)
    if not m or not calls:
        sys.exit(f"bench: no capture line in gpuprobed -v's output: {err}")
    res = json_line(out, "launch_ns") or {}
    c = dict(ops=int(m.group(1)), file_mib=float(m.group(2)), raw_mib=float(m.group(3)), waits=int(m.group(4)),
             traced_s=float(calls.group(1)), calls=int(calls.group(2)), rss_mib=rss,
             launch_ns=res.get("launch_ns"), memcpy_ns=res.get("memcpy_ns"))
    c.update(report_summary(out_dir))
    capture = os.path.join(out_dir, "capture.gpz")
    rc, _, err, c["report_s"], c["report_rss_mib"] = run_measured(
        [os.path.join(args.build, "gpuprobed"), "report", capture, "-o", os.path.join(tmp, "cap-report")],
        env, tmp, "cap-report")
    if rc != 0:
        sys.exit(f"bench: gpuprobed report exited {rc}: {err}")
    with open(os.path.join(out_dir, "report.json")) as a, open(os.path.join(tmp, "cap-report", "report.json")) as b:
        ja, jb = json.load(a), json.load(b)
    ja.pop("source")
    jb.pop("source")
    c["equal"] = ja == jb
    shutil.rmtree(out_dir, ignore_errors=True)
    shutil.rmtree(os.path.join(tmp, "cap-report"), ignore_errors=True)
    return c


def pingpong_run(build, env, rounds, traced, tmp):
    """An untraced ping-pong next to an idle waiting process; with traced, gpuprobed traces that
    process (so only the tracer differs). Returns (ns per round trip, sched_switch BPF ns per
    round trip, sched_switch runs per round trip); the last two are None untraced."""
    tracer = None
    target = Run([os.path.join(build, "workloads", "bench_calls"), "--wait", "--iters", "1"], env)
    try:
        if traced:
            pre = prog_ids(("gp_sched_switch",))
            tracer = start_gpuprobed(build, target.pid, os.path.join(tmp, "pp"))
            ids = new_progs(("gp_sched_switch",), pre)
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


def fmt_drops(d):
    return ", ".join(f"{k} {v:,}" for k, v in sorted(d.items())) or "none"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--iters", type=int, help="calls of each API per run (default 200000)")
    ap.add_argument("--reps", type=int, help="runs per configuration (default 5)")
    ap.add_argument("--depth", type=int, default=16,
                    help="frames of the workload on the stack at each call (default 16)")
    ap.add_argument("--sweep-depths", default="2,8,16,32,64",
                    help="depths at which the kernel times the stacks mode's programs (default 2,8,16,32,64)")
    ap.add_argument("--distinct-levels", type=int, default=17,
                    help="the symbolization run makes 2^N launches from 2^N distinct stacks (default 17)")
    ap.add_argument("--sym-reps", type=int, help="symbolization runs (default 3)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance.md"),
                    help="the page to write (default docs/performance.md)")
    ap.add_argument("--pingpong-rounds", type=int, help="round trips per ping-pong run (default 50000)")
    ap.add_argument("--quick", action="store_true",
                    help="a short smoke run (1 rep, 20000 calls, one symbolization run, 5000 round trips) "
                         "unless given otherwise; its page says so")
    args = ap.parse_args()
    for k, full, quick in (("iters", 200000, 20000), ("reps", 5, 1), ("sym_reps", 3, 1),
                           ("pingpong_rounds", 50000, 5000)):
        if getattr(args, k) is None:
            setattr(args, k, quick if args.quick else full)
    try:
        depths = [int(d) for d in args.sweep_depths.split(",") if d]
    except ValueError:
        sys.exit(f"bench: --sweep-depths: not a list of numbers: {args.sweep_depths}")
    if os.geteuid() != 0:
        sys.exit("bench: needs root (uprobes)")
    for tool in ("bpftrace", "bpftool"):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} not found (make deps installs it)")

    workload = os.path.join(args.build, "workloads", "bench_calls")
    real = "/usr/local/cuda/lib64/libcudart.so.13"
    env = dict(os.environ)
    if os.path.exists(real):
        lib_dir, lib = os.path.dirname(real), os.path.realpath(real)
        target = f"the real CUDA runtime ({lib}); without a GPU each call fails fast"
    else:
        lib_dir = os.path.join(args.build, "simgpu")
        lib = os.path.realpath(os.path.join(lib_dir, "libcudart.so.13"))
        target = (f"the simulated runtime ({lib}) with zero-time kernels and copies, not going down to "
                  "the simulated driver (one probed layer, as bpftrace probes it)")
        env.update(SIMGPU_KERNEL_US="0", SIMGPU_COPY_LATENCY_US="0", SIMGPU_RUNTIME_DIRECT="1")
    env["LD_LIBRARY_PATH"] = lib_dir
    log(f"target: {target}")
    warnings = []
    others = foreign_tracers(lib)
    if others:
        warnings.append(f"when the bench started, other tracers were loaded ({', '.join(others)}): probes on "
                        f"{lib} tax every run, untraced ones too")
        log("WARNING: " + warnings[-1])

    samples = {n: {a: [] for a in APIS} for n in CONFIGS}
    gp_info = {n: [] for n in GPUPROBED}
    foreign = []
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            for name in CONFIGS:  # interleaved, so drift hits every configuration alike
                r, info = one_run(name, args, workload, lib, env, tmp)
                samples[name]["cudaLaunchKernel"].append(r["launch_ns"])
                samples[name]["cudaMemcpyAsync"].append(r["memcpy_async_ns"])
                msg = (f"rep {rep + 1}/{args.reps} {CONFIGS[name]:18s} launch {r['launch_ns']:8.1f} ns"
                       f"  memcpyAsync {r['memcpy_async_ns']:8.1f} ns")
                if info["foreign"]:
                    foreign.append(f"rep {rep + 1} {CONFIGS[name]}: {', '.join(info['foreign'])}")
                    msg += f"  (also loaded: {', '.join(info['foreign'])})"
                if name in GPUPROBED:
                    gp_info[name].append(info)
                    msg += f"  drops: {fmt_drops(info['drops'])}"
                    if name == "stacks":
                        msg += f"  frames per stack: {info['frames']}"
                log(msg)

        # the kernel's timing of gpuprobed's programs, counting vs stacks (separate runs: the
        # statistics' own clock reads would tax the timed runs above)
        bpf = {n: {p: [] for p in GP_PROGS} for n in GPUPROBED}
        with BpfStats():
            for rep in range(args.reps):
                for name in GPUPROBED:
                    _, info = one_run(name, args, workload, lib, env, tmp, stats=True)
                    for p in GP_PROGS:
                        bpf[name][p].append(info["bpf_ns"][p])
                    log(f"rep {rep + 1}/{args.reps} bpf_stats {CONFIGS[name]:18s} "
                        + "  ".join(f"{p} {info['bpf_ns'][p]:.0f} ns" for p in GP_PROGS))
            # what a frame costs: the return program of the stacks mode at other depths (one run each)
            sweep = []
            for d in depths:
                _, info = one_run("stacks", args, workload, lib, env, tmp, stats=True, depth=d)
                sweep.append(dict(depth=d, frames=info["frames"], exit_ns=info["bpf_ns"]["gp_api_exit"]))
                log(f"bpf_stats gpuprobed stacks at depth {d:3d} ({info['frames']} frames): "
                    f"gp_api_exit {info['bpf_ns']['gp_api_exit']:.0f} ns")

        # the end of a walk: bpftrace's ustack(n) stops after n frames; with one frame more than the
        # stack has, the walk reads the next frame pointer (main's saved rbp, which the C library did
        # not set up as one) and takes a fault
        nframes = max((f for i in gp_info["stacks"] for f in i["frames"]), default=0)
        walk_end = {n: [] for n in (nframes, nframes + 1)} if nframes else {}
        for rep in range(args.reps if walk_end else 0):
            for n in walk_end:
                bt = f"uretprobe:{lib}:{APIS[0]} {{ @[ustack({n})] = count(); }}\n", 1
                r, _ = one_run("walk_end", args, workload, lib, env, tmp, bt=bt)
                walk_end[n].append(r["launch_ns"])
                log(f"rep {rep + 1}/{args.reps} bpftrace ustack({n}) at {APIS[0]}'s return: launch {r['launch_ns']:8.1f} ns")

        sym = []
        for rep in range(args.sym_reps):
            s = symbolize_run(args, workload, env, tmp)
            sym.append(s)
            log(f"rep {rep + 1}/{args.sym_reps} distinct stacks: {s['distinct']:,} in the report, "
                f"symbolized in {s['sym_ms']:.1f} ms ({s['addresses']} addresses), peak RSS {s['rss_mib']:.0f} MiB "
                f"(workload alone {s['alone_rss_mib']:.0f} MiB), wall {s['wall_s']:.2f} s, drops: {fmt_drops(s['drops'])}, "
                f"truncated stacks {s['truncated']:,}")

        caps = []
        for iters in (args.iters, 5 * args.iters):
            c = capture_run(args, workload, env, tmp, iters)
            caps.append(c)
            log(f"capture: {c['calls']:,} calls in {c['traced_s']:.2f} s, {c['ops']:,} operations, "
                f"{c['file_mib']:.1f} MiB ({c['raw_mib']:.1f} MiB raw), writer waits {c['waits']}, "
                f"drops: {fmt_drops(losses(c['drops']))}; gpuprobed report: {c['report_s']:.2f} s, "
                f"{c['report_rss_mib']:.0f} MiB, equal: {c['equal']}")

        libs_dir = os.path.join(args.build, "many_libs")
        attach = [attach_run(args.build, env, libs_dir, tmp) for _ in range(args.reps)]
        for ms, files, maps in attach:
            log(f"attach to a process with {files} mapped files ({maps} mappings): {ms:.1f} ms")

        pp = {"untraced": [], "gpuprobed": [], "bpf_ns": [], "bpf_runs": []}
        for rep in range(args.reps):
            for traced in (False, True):
                v, bpf_ns, runs = pingpong_run(args.build, env, args.pingpong_rounds, traced, tmp)
                pp["gpuprobed" if traced else "untraced"].append(v)
                msg = f"rep {rep + 1}/{args.reps} ping-pong {'while tracing another process' if traced else 'no tracer'}: {v:.0f} ns/round trip"
                if traced:
                    pp["bpf_ns"].append(bpf_ns)
                    pp["bpf_runs"].append(runs)
                    msg += f", sched_switch BPF {bpf_ns:.0f} ns in {runs:.1f} runs per round trip"
                log(msg)

    med = {n: {a: statistics.median(v) for a, v in d.items()} for n, d in samples.items()}
    pp_med = {k: statistics.median(v) for k, v in pp.items()}
    add = {a: {n: med[n][a] - med["untraced"][a] for n in CONFIGS if n != "untraced"} for a in APIS}
    ratio = {a: {n: add[a][n] / add[a]["floor"] if add[a]["floor"] > 0 else float("nan") for n in add[a]}
             for a in APIS}
    missed = []
    for a in APIS:
        for n, limit, rival in TARGETS:
            if not ratio[a][n] <= limit:
                missed.append(f"`{a}` {CONFIGS[n]} {ratio[a][n]:.2f}x the floor (target <= {limit:.2f}x)")
            if not add[a][n] < add[a][rival]:
                missed.append(f"`{a}` {CONFIGS[n]} +{add[a][n]:.0f} ns, not below {CONFIGS[rival]} "
                              f"(+{add[a][rival]:.0f} ns)")
    for m in missed:
        log("MISSED: " + m)
    if foreign:
        warnings.append(f"another tracer was loaded during {len(foreign)} of {len(CONFIGS) * args.reps} timed runs "
                        f"({'; '.join(foreign[:3])}{'; …' if len(foreign) > 3 else ''}): those runs may be taxed by it")
    for n in GPUPROBED:
        lost = [i for i in gp_info[n] if losses(i["drops"])]
        if lost:
            warnings.append(f"{CONFIGS[n]} lost records in {len(lost)} of {len(gp_info[n])} timed runs "
                            f"({fmt_drops(losses(lost[0]['drops']))}): its cost is understated")
    frames = sorted({f for i in gp_info["stacks"] for f in i["frames"]})
    trunc = max(i["truncated"] for i in gp_info["stacks"])
    codes = gp_info["counting"][0]["codes"] if gp_info["counting"] else {}
    bpf_med = {n: {p: statistics.median(v) for p, v in d.items()} for n, d in bpf.items()}
    # least squares: gp_api_exit ns = fixed + per_frame * frames recorded
    pts = [(max(s["frames"]), s["exit_ns"]) for s in sweep if s["frames"]]
    per_frame = fixed = None
    if len({x for x, _ in pts}) >= 2:
        mx, my = statistics.mean(x for x, _ in pts), statistics.mean(y for _, y in pts)
        per_frame = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
        fixed = my - per_frame * mx

    want = 1 << args.distinct_levels
    sym_med = {k: statistics.median(s[k] for s in sym)
               for k in ("sym_ms", "rss_mib", "wall_s", "alone_wall_s", "alone_rss_mib", "report_mb", "output_mb")}
    for s in sym:
        s["untraced_part_s"] = s["wall_s"] - s["traced_s"] if s["traced_s"] is not None else None
    for k in ("traced_s", "untraced_part_s", "ns_per_launch", "alone_ns_per_launch"):
        vals = [s[k] for s in sym if s[k] is not None]
        sym_med[k] = statistics.median(vals) if vals else float("nan")
    sym_flags = []
    for i, s in enumerate(sym):
        if s["distinct"] != want:
            sym_flags.append(f"run {i + 1}: {s['distinct']:,} distinct stacks in report.json, not {want:,}")
        if losses(s["drops"]):
            sym_flags.append(f"run {i + 1}: records lost: {fmt_drops(losses(s['drops']))}")
        if s["truncated"]:
            sym_flags.append(f"run {i + 1}: {s['truncated']:,} of {s['distinct']:,} stacks marked truncated "
                             "(the workload's frame chain is complete down to the C library)")
    for f in sym_flags:
        log("FLAG: " + f)
    for w in warnings:
        log("WARNING: " + w)

    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    code_text = "; ".join(f"`{a}` {', '.join(map(str, c))}" for a, c in codes.items() if c)
    lines = [
        "# Performance: what gpuprobed costs a traced call",
        "",
        "Generated by `make bench` (scripts/bench.py); rerun it to refresh this page.",
        "",
    ]
    if args.quick:
        lines += [f"**A `--quick` smoke run ({args.reps} short run{'s' if args.reps != 1 else ''} per configuration): "
                  "not a measurement.**", ""]
    lines += [
        f"- date: {now}",
        f"- kernel: {platform.release()}",
        f"- CPU: {cpu_model()} ({os.cpu_count()} CPUs)",
        f"- target library: {target}" + (f" (error codes: {code_text})" if code_text else ""),
        f"- workload: `bench_calls --depth {args.depth}`, {args.iters:,} calls of each API per run, "
        f"{args.reps} run{'s' if args.reps != 1 else ''} per configuration (interleaved), medians",
    ]
    lines += [f"- **warning:** {w}" for w in warnings]
    lines += [
        "",
        "Added cost per call = the workload's own ns/call under the tracer minus untraced.",
        "The floor is empty bpftrace probes (entry + return) on the same functions: the price of a",
        "uprobe + uretprobe pair itself. gpuprobed counting is `--no-stacks`; gpuprobed stacks is its",
        "default, a user stack (frame pointers, walked by gpuprobed's return program a page of stack",
        "at a time) copied into each launch's and copy's record. bpftrace counts calls and keeps a latency histogram; bpftrace ustack counts",
        "`@[ustack]` at the same return probes (no entry probe: it needs none), the obvious way to get",
        "call stacks with bpftrace.",
        "",
        f"The loops run {args.depth} frames of `bench_calls` deep (main, {args.depth - 2} nesting frames, the loop",
        "function): a stack walk costs per frame, and a real program's launch sits well below main",
        "(framework dispatcher, operators, library layers: 15–40 frames in C++ code). The untraced",
        "baseline runs the same loops at the same depth. Stacks gpuprobed recorded in these runs: "
        f"{', '.join(map(str, frames)) or '?'} frames" + (f" ({trunc} marked truncated)" if trunc else "") + ".",
        "",
        "| API | untraced ns/call | floor +ns | gpuprobed counting +ns | gpuprobed stacks +ns | stack walk (stacks − counting) ns | bpftrace +ns | bpftrace ustack +ns |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for a in APIS:
        d = add[a]
        lines.append(f"| `{a}` | {med['untraced'][a]:.0f} | {d['floor']:.0f} | {d['counting']:.0f} | "
                     f"{d['stacks']:.0f} | {d['stacks'] - d['counting']:.0f} | {d['bpftrace']:.0f} | {d['ustack']:.0f} |")
    lines += [
        "",
        "| API | counting / floor | stacks / floor | bpftrace / floor | bpftrace ustack / floor | counting / bpftrace | stacks / bpftrace ustack |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for a in APIS:
        r, d = ratio[a], add[a]
        lines.append(f"| `{a}` | {r['counting']:.2f}x | {r['stacks']:.2f}x | {r['bpftrace']:.2f}x | "
                     f"{r['ustack']:.2f}x | {d['counting'] / d['bpftrace']:.2f}x | {d['stacks'] / d['ustack']:.2f}x |")
    lines += [
        "",
        "Targets: gpuprobed counting <= 1.10x the floor and below bpftrace (count + histogram); gpuprobed",
        "stacks <= 1.5x the floor and below bpftrace ustack. "
        + ("All met." if not missed else "Missed: " + "; ".join(missed) + "."),
        "",
        "The kernel's own timing of gpuprobed's two programs (`kernel.bpf_stats_enabled`, separate runs",
        "of the same loops; per program run, launches and copies together, including the statistics'",
        "own clock reads):",
        "",
        "| program | counting ns/run | stacks ns/run | difference |",
        "|---|---:|---:|---:|",
    ]
    for p in GP_PROGS:
        c, s = bpf_med["counting"][p], bpf_med["stacks"][p]
        lines.append(f"| `{p}` | {c:.0f} | {s:.0f} | {s - c:+.0f} |")
    lines += [
        "",
        "The stacks mode's return program at other depths (one run each; the walk copies the stack",
        "from each frame to the end of its page, one user-memory read per page, not per frame):",
        "",
        "| `bench_calls --depth` | frames recorded | `gp_api_exit` ns/run | over counting's |",
        "|---:|---:|---:|---:|",
    ]
    for s in sweep:
        lines.append(f"| {s['depth']} | {', '.join(map(str, s['frames']))} | {s['exit_ns']:.0f} | "
                     f"{s['exit_ns'] - bpf_med['counting']['gp_api_exit']:+.0f} |")
    if per_frame is not None:
        lines += ["", f"Fitted: about **{per_frame:.0f} ns per frame** on top of {fixed:.0f} ns per return "
                  f"(counting mode's return: {bpf_med['counting']['gp_api_exit']:.0f} ns)."]
    if walk_end:
        we = {n: statistics.median(v) - med["untraced"][APIS[0]] for n, v in walk_end.items()}
        n0, n1 = sorted(we)
        lines += [
            "",
            "Part of the fixed cost is how the kernel's walk ends. It stops only at a frame it cannot read:",
            f"after `main` it follows the frame pointer `main` was called with, which the C library (built",
            "without frame pointers) never set up as one (Debian 12's glibc leaves argc there), and reading it takes a page",
            "fault. bpftrace's `ustack(n)` stops after n frames, so the same stack read with exactly as many",
            "frames as it has, and with one more, prices that fault (a uretprobe on `cudaLaunchKernel` only;",
            "medians):",
            "",
            f"| bpftrace at `{APIS[0]}`'s return | +ns per call |",
            "|---|---:|",
            f"| `@[ustack({n0})] = count()` (the {n0} frames there are) | {we[n0]:.0f} |",
            f"| `@[ustack({n1})] = count()` (one read more: faults) | {we[n1]:.0f} |",
            f"| the faulting read at the end of each walk | **{we[n1] - we[n0]:.0f}** |",
        ]
    lines += [
        "",
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
        f"| symbolization (gpuprobed -v) | **{sym_med['sym_ms']:.1f} ms** for {sym[0]['symbolized_stacks']:,} stacks "
        f"({sym[0]['addresses']:,} distinct addresses) |",
        f"| peak RSS | **{sym_med['rss_mib']:.0f} MiB** (the workload alone: {sym_med['alone_rss_mib']:.0f} MiB) |",
        f"| session wall time, `gpuprobed -- …` start to exit | {sym_med['wall_s']:.2f} s (traced: {sym_med['traced_s']:.2f} s; "
        f"the workload alone: {sym_med['alone_wall_s']:.2f} s) |",
        f"| of which not tracing (start-up, symbolization, writing the reports) | {sym_med['untraced_part_s']:.2f} s |",
        f"| the workload's own ns per launch, traced / alone | {sym_med['ns_per_launch']:.0f} / {sym_med['alone_ns_per_launch']:.0f} |",
        f"| report.json; all output files | {sym_med['report_mb']:.0f} MB; {sym_med['output_mb']:.0f} MB |",
        "",
        "The stacks differ in every frame but share their addresses (two call sites per level), so the",
        "symbolizer names few addresses: this measures the per-stack work (deduplication, frame ids,",
        "the report), not ELF lookups.",
    ]
    if sym_flags:
        lines += ["", "**Flagged:** " + "; ".join(sym_flags) + "."]
    lines += [
        "",
        "## Capture file: keeping up, size, rebuilding the report",
        "",
        "`gpuprobed -v -- bench_calls --iters N` with the capture on (the default; stacks on), then",
        "`gpuprobed report` of its capture. The workload calls as fast as it can (both loops back to back);",
        "\"waits\" counts the times the ring buffer's consumer waited for the capture's compressing thread",
        "(back-pressure: with none, the capture cost the consumer only memcpys). Operations include the",
        "nested driver calls and the resolver's answers. \"equal\": the rebuilt report.json equals the live",
        "one but for `source`.",
        "",
        "| calls | call rate (calls/s) | drops | writer waits | operations | capture | bytes/operation "
        "(compressed / raw) | `gpuprobed report` | its peak RSS | equal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in caps:
        lines.append(f"| {c['calls']:,} | {c['calls'] / c['traced_s']:,.0f} | {fmt_drops(losses(c['drops']))} | "
                     f"{c['waits']} | {c['ops']:,} | {c['file_mib']:.1f} MiB | "
                     f"{c['file_mib'] * 1048576 / c['ops']:.1f} / {c['raw_mib'] * 1048576 / c['ops']:.1f} | "
                     f"{c['report_s']:.2f} s ({c['ops'] / c['report_s'] / 1e6:.2f} M operations/s) | "
                     f"{c['report_rss_mib']:.0f} MiB | {'yes' if c['equal'] else '**no**'} |")
    lines += [
        "",
        "## Cost to processes gpuprobed does not trace",
        "",
        "The scheduler tracepoint fires for every context switch on the machine; gpuprobed's program",
        "returns after one array lookup for tasks of untraced processes. A ping-pong between two threads",
        f"over pipes ({args.pingpong_rounds:,} round trips, two switches or wakeups each) in an untraced",
        "process, next to an idle process that gpuprobed traces or not (medians):",
        "",
        "| ping-pong | ns per round trip | ratio |",
        "|---|---:|---:|",
        f"| no tracer | {pp_med['untraced']:.0f} | 1.00x |",
        f"| gpuprobed tracing the other process | {pp_med['gpuprobed']:.0f} | "
        f"{pp_med['gpuprobed'] / pp_med['untraced']:.2f}x |",
        "",
        "The wall-clock ratio is dominated by run-to-run noise (wakeup latency on a VM). The direct",
        "measure is the kernel's own timing of gpuprobed's `sched_switch` program (bpf_stats) during",
        "the traced runs. It counts every switch on the machine in that time, so it is an upper bound",
        "for the ping-pong's share, and it includes the statistics' own clock reads:",
        "",
        "| sched_switch program | per round trip |",
        "|---|---:|",
        f"| runs | {pp_med['bpf_runs']:.1f} |",
        f"| BPF run time | {pp_med['bpf_ns']:.0f} ns |",
        f"| BPF run time / untraced round trip | {100 * pp_med['bpf_ns'] / pp_med['untraced']:.2f} % |",
        "",
        "## Attach time",
        "",
        f"`gpuprobed --pid` on `many_libs`, a process with {attach[0][1]} mapped files ({attach[0][2]} mappings):",
        "reading its maps, looking at every candidate file once (cached by dev/inode/mtime), placing",
        f"the probes and admitting it, as gpuprobed -v reports it. Median of {len(attach)}: "
        f"**{statistics.median(a[0] for a in attach):.1f} ms** (target: <= 200 ms).",
        "",
        "Raw samples (ns/call; BPF ns/run; symbolization runs; ping-pong ns/round trip):",
        "",
        "```",
        json.dumps({"calls": samples, "bpf_stats": bpf, "depth_sweep": sweep,
                    "walk_end": {f"ustack({n})": v for n, v in walk_end.items()},
                    "stacks_userspace": [{k: v for k, v in s.items() if k != "codes"} for s in sym],
                    "capture": [{k: v for k, v in c.items() if k != "codes"} for c in caps],
                    "pingpong": pp}, indent=1),
        "```",
        "",
    ]
    text = "\n".join(lines)
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


if __name__ == "__main__":
    main()
