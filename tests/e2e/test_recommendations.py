# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Recommendations (docs/recommendations.md) against independent references.

tests/workloads/advice_cases.c has one case per rule, built so that the rule must fire and what a fix
saves is known without the tracer: from the simulator's timing model (the knobs set here, which the
workload reads too) or from the workload's own clock around each of its calls (CLOCK_MONOTONIC,
CLOCK_THREAD_CPUTIME_ID for its CPU work, getrusage around calls for page faults). Its reference says,
under "advice", which findings must be there, which rules cannot fire, and its own counts and timings,
and under "calls" every call it made, as it saw it. Each case is run once under the real gpuprobed
(`-o DIR -- CMD`), and:

- the expected findings are in `recommendations[]` for the workload's pid, with `impact_ns` inside the
  bounds the run's own calls give (below); the rules whose condition the case makes false are not;
- every finding has every field of the spec, of the right type, the rule's estimate kind and evidence
  members, call sites through the case's own function, an impact over the reporting threshold; the
  list is sorted by impact_ns descending, then id, then pid;
- every call of the workload is one slice of trace.json, inside the workload's clock of that call;
- the evidence counts equal the workload's accounting exactly, and each of its times is the tracer's
  time of exactly the calls the workload says (the sum of their slices), inside the bounds below;
- every figure is the one the report's own tables give (the spec: "every figure in it can be checked
  against the tables it cites"), and impact_ns is the rule's formula on its evidence;
- report.md has a "Recommendations" section naming the rule, before the API tables;
- `gpuprobed report CAPTURE` gives the same recommendations.

Times: the tracer's time of a call against two clocks of the same call, both CLOCK_MONOTONIC (the clock
of the BPF timestamps), both read in the same run, around and inside the call:
- the workload's: t0 just before the call, t1 just after it. The tracer's entry program reads ts after
  t0 and its return program reads the return time before t1: t0 <= ts and ts + dur <= t1;
- the simulator's (include/simgpu.h, simgpu_call_clock): the simulated library reads the clock at its
  entry check and as it returns, after the entry probe fired and before the return probe does; the
  workload asks after each call for the first and the last of those reads (in_t0, in_t1):
  ts <= in_t0 <= in_t1 <= ts + dur.
Both hold exactly, call by call, whatever the load: a preemption, an interrupt, stolen time or cold
caches fall inside one of the windows or between them, never across one. What lies between the two
clocks is the probes' machinery (the int3 trap, the instruction stepped out of line, the return
trampoline), both programs' work, the way into and out of the library, and whatever the machine did to
the thread there (docs/testing.md has what it measured). So the tracer's time of a set of calls, the
sum of their slices, is at least the sum of max(model, in_t1 - in_t0) and at most the sum of t1 - t0,
model being the least time the simulator's model lets a call take (a synchronous copy its latency +
bytes / bandwidth, a launch its SIMGPU_LAUNCH_US spin). An impact is bounded by its rule's formula on
the bounds of its inputs (each formula is monotone in each of them); the outside time O is bounded
below, exactly, by the workload's own O.

Which rules a case makes fire must not depend on the machine's load either: cpu-feeding needs its
thread on a CPU 30 % of its wall time, most rules an impact of 1 % of the process's traced wall time,
and that includes the time the tracer holds the process at its exec and at each CUDA library's first
mapping while it places its probes (385 ms measured with the tracer at normal priority on a busy
machine, where the workload alone takes 10 ms). So gpuprobed runs at real-time priority 1 (chrt) and
the workload at 2 (advice_cases.c, main): other load shares neither. The bounds above do not rely on
that: both clocks are read around and inside each call as it ran. A case runs once: a check that misses
is a failure to explain, never a run to repeat."""
import collections
import itertools
import json
import os
import re
import shutil
import sqlite3
import subprocess

import pytest

import gp

MiB = 1024 * 1024
CHRT = shutil.which("chrt")

# The knobs of each case (the workload reads the same variables to compute its expectations).
CASES = {
    # slow links: each copy lasts milliseconds, so that the host's scheduling noise is small beside it
    "pageable-copies": dict(SIMGPU_BW_HTOD_PAGEABLE_GBPS=0.5, SIMGPU_BW_HTOD_PINNED_GBPS=2,
                            SIMGPU_BW_DTOH_PAGEABLE_GBPS=0.5),
    "sync-copies": dict(SIMGPU_BW_HTOD_PINNED_GBPS=1),
    "sync-wait": dict(SIMGPU_KERNEL_TIMES="advice_step=2000"),
    "redundant-sync": dict(SIMGPU_KERNEL_TIMES="advice_tiny=10"),
    "small-copies": dict(SIMGPU_COPY_LATENCY_US=100),
    "launch-bound": dict(SIMGPU_LAUNCH_US=40, SIMGPU_KERNEL_TIMES="advice_quick=2"),
    "alloc-churn": dict(),
    "cpu-feeding": dict(SIMGPU_KERNEL_TIMES="advice_feed=20"),
    "faults-in-calls": dict(),
    "failing-calls": dict(),
    "leak": dict(),
    # long enough that the host's own work (touching its fresh 256 KiB buffer: 0.4-0.9 ms on a virtual
    # machine here, where a page's first touch traps to the hypervisor) stays under 1 % of the wall time
    "clean": dict(SIMGPU_KERNEL_TIMES="advice_long=50000"),
    "two-rules": dict(SIMGPU_BW_HTOD_PAGEABLE_GBPS=0.5, SIMGPU_BW_HTOD_PINNED_GBPS=2),
    # a user's first try: 200 pageable 8 MiB copies, nothing else (~200 ms of host time)
    "pageable-idle": dict(SIMGPU_BW_HTOD_PAGEABLE_GBPS=8),
}

RULES = ("pageable-copies", "sync-copies", "sync-wait", "redundant-sync", "small-copies", "launch-bound",
         "alloc-churn", "cpu-feeding", "faults-in-calls", "nccl-straggler", "failing-calls", "leak",
         "gpu-idle-host-busy")
FIELDS = ("id", "pid", "comm", "title", "impact_ns", "impact_share", "estimate", "method", "evidence",
          "call_sites", "action", "about", "overlaps")
# Rules that describe a state other findings explain: reported in verdicts[], never ranked.
VERDICTS = ("gpu-idle-host-busy",)
# The kinds of host time a finding can be about (report.json "about") and the APIs of each.
ABOUT = ("copies", "synchronisations", "launches", "allocations", "nccl", "other-calls", "outside-calls")
# The spec's estimate kind of each rule (leak's is not stated: any of the three).
ESTIMATE = {"pageable-copies": "model", "sync-copies": "upper_bound", "sync-wait": "upper_bound",
            "redundant-sync": "exact", "small-copies": "model", "launch-bound": "model", "alloc-churn": "model",
            "cpu-feeding": "upper_bound", "faults-in-calls": "model", "nccl-straggler": "model",
            "failing-calls": "exact", "gpu-idle-host-busy": "upper_bound"}
EVIDENCE = {
    "pageable-copies": ("directions",),
    "sync-copies": ("calls", "bytes", "host_ns", "outside_ns"),
    "sync-wait": ("calls", "host_ns", "outside_ns", "by_api"),
    "redundant-sync": ("calls", "host_ns", "by_api"),
    "small-copies": ("rows",),
    "launch-bound": ("launches", "host_ns", "avg_launch_ns", "sync_windows", "blocked_on_kernels_ns"),
    "alloc-churn": ("alloc_calls", "free_calls", "peak_live_allocations", "churn", "alloc_host_ns", "free_host_ns"),
    "cpu-feeding": ("threads", "cpu_outside_calls_ns", "thread_wall_ns", "sync_blocked_ns"),
    "faults-in-calls": ("minor_faults", "major_faults", "by_api"),
    "nccl-straggler": ("rank", "nranks", "peers_blocked_avg_ns", "ranks"),
    "failing-calls": ("api", "calls", "errors", "error_host_ns", "codes"),
    "leak": ("allocations", "bytes", "by_kind"),
    "gpu-idle-host-busy": ("gpu", "gpu_util_avg", "gpu_samples", "gpu_window_ns", "gpu_busy_ns", "process_wall_ns",
                           "gpu_busy_share", "pageable_copy_ns", "alloc_free_ns", "cpu_outside_calls_ns",
                           "host_side_ns", "threads_span_ns", "host_share"),
}
DIRECTION_FIELDS = ("direction", "calls", "bytes", "host_ns", "pageable_gbps", "pinned_gbps", "ratio", "ratio_source")
ROW_FIELDS = ("direction", "host_memory", "sync", "calls", "bytes", "host_ns", "reference_gbps", "reference_source")
# Rules about calls that carry stacks: their call sites must be listed, through the case's function.
# Not redundant-sync and faults-in-calls: a stack's operations say neither which of its synchronisations
# were redundant nor how many faults its calls took, so their call sites may be [] (when listed, they are
# checked the same way).
STACKED_RULES = ("pageable-copies", "sync-copies", "sync-wait", "small-copies", "launch-bound", "alloc-churn")
# Rules under the reporting threshold (100 µs and 1 % of the process's wall time) are left out, but these.
OWN_CONDITIONS = ("leak", "failing-calls")
MIN_NS, MIN_SHARE = 100_000, 0.01
ERROR_NAMES = {1: "cudaErrorInvalidValue", 21: "cudaErrorInvalidMemcpyDirection", 101: "cudaErrorInvalidDevice",
               400: "cudaErrorInvalidResourceHandle"}
SYNC_APIS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaStreamSynchronize_ptsz", "cudaEventSynchronize",
             "cuCtxSynchronize", "cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuEventSynchronize")
LAUNCH_APIS = ("cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchCooperativeKernel",
               "cudaLaunchCooperativeKernel_ptsz", "cudaLaunchKernelExC", "cudaLaunchKernelExC_ptsz",
               "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
               "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz")
ALLOC_APIS = ("cudaMalloc", "cudaMallocManaged", "cudaMallocHost", "cudaHostAlloc", "cuMemAlloc_v2",
              "cuMemAllocManaged", "cuMemAllocHost_v2", "cuMemHostAlloc")
FREE_APIS = ("cudaFree", "cudaFreeHost", "cuMemFree_v2", "cuMemFreeHost")
# JSON reals of the evidence (bandwidths, ratios) have 2 decimals, as the report's other reals.
REAL2 = 0.0051
SMALL = 64 * 1024


# ---- running a case -------------------------------------------------------------------------------

class Call:
    """One call of the workload: its own record ("calls" of its reference) and the tracer's slice of it."""
    __slots__ = ("api", "site", "what", "bytes", "model", "t0", "t1", "in_t0", "in_t1", "err", "ts", "dur")

    def __init__(self, row, fields, slice_):
        rec = dict(zip(fields, row))
        self.api, self.site, self.what, self.bytes = rec["api"], rec["site"], rec["what"], rec["bytes"]
        self.model, self.t0, self.t1 = rec["model_ns"], rec["t0"], rec["t1"]
        self.in_t0, self.in_t1, self.err = rec["in_t0"], rec["in_t1"], rec["error"]
        # trace.json's times are µs with exactly three decimals: integer ns, exactly
        self.ts, self.dur = round(slice_["ts"] * 1000), round(slice_["dur"] * 1000)

    @property
    def wall(self):
        """The workload's clock of the call: at least the tracer's."""
        return self.t1 - self.t0

    @property
    def inner(self):
        """The simulator's clock inside the call: at most the tracer's."""
        return self.in_t1 - self.in_t0

    @property
    def floor(self):
        return max(self.model, self.inner)

    def __repr__(self):
        return f"{self.api} from {self.site}{' ' + self.what if self.what else ''} (error {self.err}): " \
               f"workload [{self.t0}, {self.t1}] ({self.wall} ns), simulator [{self.in_t0}, {self.in_t1}] " \
               f"({self.inner} ns), model {self.model} ns, tracer [{self.ts}, {self.ts + self.dur}] ({self.dur} ns)"


class Timing:
    """The workload's calls matched with the tracer's slices, and the bounds they give (see the top)."""

    def __init__(self, run):
        ref = run.ref
        with open(os.path.join(run.out_dir, "out", "trace.json")) as f:
            events = json.load(f)["traceEvents"]
        # the workload's calls are all on its main thread (tid = pid); its slices, in order
        slices = sorted((e for e in events if e.get("ph") == "X" and e.get("pid") == run.pid
                         and e.get("tid") == run.pid), key=lambda e: e["ts"])
        rows = ref["calls"]
        warnings = [line for line in run.stderr.splitlines() if "not traced" in line or "attach" in line]
        assert len(slices) == len(rows), \
            f"trace.json has {len(slices)} call slices on the workload's thread, the workload made {len(rows)} " \
            f"calls; gpuprobed said: {warnings}"
        self.calls = [Call(row, ref["calls_fields"], sl) for row, sl in zip(rows, slices)]
        for c, sl in zip(self.calls, slices):
            assert sl["name"] == c.api and sl["args"]["ret"] == c.err, \
                f"the slice {sl['name']} (ret {sl['args']['ret']}) at {c.ts} is not the workload's call {c}"

    def select(self, api=None, site=None, what=None, failed=None):
        """The calls that match every criterion given (api and site may be tuples)."""
        def ok(c):
            return ((api is None or c.api in ((api,) if isinstance(api, str) else api)) and
                    (site is None or c.site in ((site,) if isinstance(site, str) else site)) and
                    (what is None or c.what == what) and (failed is None or bool(c.err) == failed))
        return [c for c in self.calls if ok(c)]

    @staticmethod
    def bounds(calls):
        """(lo, hi): what the tracer's time of these calls may be, from the clocks around and inside them
        and the model (see the top)."""
        return sum(c.floor for c in calls), sum(c.wall for c in calls)

    @staticmethod
    def traced(calls):
        """The tracer's time of these calls: the sum of their slices."""
        return sum(c.dur for c in calls)

    def outside_bounds(self):
        """(lo, hi) of the tracer's outside time O (one thread): ts_last - (ts_first + dur_first) less the
        calls between, which by containment is at least the workload's own O, exactly, and at most the
        workload's span less the lower bound of all its calls."""
        first, last = self.calls[0], self.calls[-1]
        own = last.t1 - first.t0 - sum(c.wall for c in self.calls)
        return own, last.t1 - first.t0 - self.bounds(self.calls)[0]


class Run:
    """One traced run of a case: the report, the workload's reference, the output directory."""

    def __init__(self, case, out_dir):
        self.case, self.out_dir = case, str(out_dir)
        ref_path = os.path.join(self.out_dir, "ref.json")
        # the workload runs as root (under sudo gpuprobed would run it as the invoking user): it takes a
        # real-time priority, so that the machine's other load does not change which rules it makes fire
        env = gp.sim_env(**CASES[case])
        env.pop("SUDO_UID", None)
        env.pop("SUDO_GID", None)
        assert CHRT, "chrt (util-linux) is needed to run gpuprobed at a real-time priority"
        p = subprocess.run([CHRT, "--fifo", "1", gp.GPUPROBED, "-o", os.path.join(self.out_dir, "out"), "--",
                            os.path.join(gp.WORKLOADS, "advice_cases"), "--case", case, "--ref", ref_path],
                           capture_output=True, text=True, timeout=120, env=env)
        rc, self.stdout, self.stderr = p.returncode, p.stdout, p.stderr
        assert rc == 0, f"gpuprobed on advice_cases --case {case}: exit {rc}: {self.stderr}"
        with open(ref_path) as f:
            self.ref = json.load(f)
        with open(os.path.join(self.out_dir, "out", "report.json")) as f:
            self.report = json.load(f)
        with open(os.path.join(self.out_dir, "out", "report.md")) as f:
            self.md = f.read()
        self.advice = self.ref["advice"]
        self.numbers = self.advice["numbers"]
        self.pid = self.ref["pid"]
        self.proc = gp.process(self.report, self.pid)
        self._timing = None

    @property
    def capture(self):
        return os.path.join(self.out_dir, "out", "capture.gpz")

    @property
    def timing(self):
        if self._timing is None:
            self._timing = Timing(self)
        return self._timing

    def all_findings(self):
        assert "recommendations" in self.report, NO_ENGINE
        recs = self.report["recommendations"]
        assert isinstance(recs, list), f"recommendations is not a list: {type(recs).__name__}"
        return recs

    def findings(self, rule=None):
        return [f for f in self.all_findings() if f.get("pid") == self.pid and (rule is None or f.get("id") == rule)]

    def finding(self, rule, api=None):
        got = [f for f in self.findings(rule) if api is None or f["evidence"].get("api") == api]
        assert len(got) == 1, f"{self.case}: expected one {rule} finding{' for ' + api if api else ''}, " \
                              f"got {len(got)}; findings: {summary(self.findings())}"
        return got[0]


def summary(findings):
    return [(f.get("id"), f.get("impact_ns"), f.get("evidence", {}).get("api")) for f in findings]


def within(got, want, tolerance, abs_ns=0):
    return abs(got - want) <= tolerance * abs(want) + abs_ns


NO_ENGINE = "report.json has no recommendations[] (docs/recommendations.md: the engine is missing)"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Runs each case once, when first asked for, for the whole module."""
    cache = {}

    def get(case):
        if case not in cache:
            cache[case] = Run(case, tmp_path_factory.mktemp(f"advice-{case}"))
        return cache[case]
    return get


def check_time(got, t, calls, what):
    """A figure that is the tracer's time of these calls: the sum of their slices, inside the bounds."""
    lo, hi = t.bounds(calls)
    assert got == t.traced(calls), \
        f"{what}: {got} ns, but the tracer's slices of those {len(calls)} calls add up to {t.traced(calls)} ns"
    assert lo <= got <= hi, \
        f"{what}: tracer {got} ns for {len(calls)} calls, outside [{lo}, {hi}] (the workload's clock around " \
        f"them {hi} ns, the simulator's inside them {sum(c.inner for c in calls)} ns)"


def check_outside(got, t, what):
    lo, hi = t.outside_bounds()
    assert lo <= got <= hi, f"{what}: outside time {got} ns, bounds [{lo}, {hi}] (the workload's own: {lo})"


def in_bounds(got, lo, hi, abs_=0.0):
    return lo - abs_ <= got <= hi + abs_


# ---- what each finding may say, from the bounds of its inputs -----------------------------------------

def pageable_direction_bounds(t, direction, pinned):
    """(its calls, their bytes B, (impact lo, hi), (ratio lo, hi) or None) of one direction's pageable
    copies (time T; the pinned ones: Bp, Tp): the impact is T x (1 - r), with r = min(1, (B / T) / (Bp / Tp))
    when measured, which is max(0, T - B / Bp x Tp), rising with T and falling with Tp; r = 0.4 when
    assumed."""
    pg = t.select(what=f"{direction} pageable")
    lo, hi = t.bounds(pg)
    nbytes = sum(c.bytes for c in pg)
    if not pinned:
        return pg, nbytes, (0.6 * lo, 0.6 * hi), None
    pin = t.select(what=f"{direction} pinned")
    plo, phi = t.bounds(pin)
    k = nbytes / sum(c.bytes for c in pin)
    impact = (max(0.0, lo - k * phi), max(0.0, hi - k * plo))
    ratio = (min(1.0, k * plo / hi), min(1.0, k * phi / lo) if lo else 1.0)
    return pg, nbytes, impact, ratio


def small_copy_rows(t):
    """The workload's small-copy rows: {(direction, host): (small calls, large calls)}."""
    rows = {}
    for c in t.select(site="copy"):
        d, host = c.what.split()
        small, large = rows.setdefault((d, host), ([], []))
        (small if c.bytes <= SMALL else large).append(c)
    return {k: v for k, v in rows.items() if v[0]}


def impact_bounds(run, want):
    """(lo, hi) of a finding's impact_ns: its rule's formula on the bounds of what it sums."""
    t, n, rule = run.timing, run.numbers, want["id"]
    if rule == "leak":
        return 0, 0
    if rule == "faults-in-calls":  # minor faults x 1 µs (+ the off-CPU time in calls, with major faults)
        lo, hi = (n["minor_faults"] * 0.98 - 16) * 1000, (n["minor_faults"] * 1.02 + 16) * 1000
        if n["major_faults"]:  # the off-CPU time in the tracer's windows, inside the workload's
            # (not their wall less the thread's CPU time: the tracer's off-CPU time, from a sched_switch
            # to the next, was found up to ~20 µs a switch longer than that)
            hi += sum(c.wall for c in t.calls)
        return lo, hi
    if rule == "cpu-feeding":  # CPU time, not the probes': the workload's work, and the thread's start-up
        return 0.99 * n["work_cpu_ns"], 1.15 * n["work_cpu_ns"]
    if rule == "failing-calls":
        return t.bounds(t.select(api=want["api"], failed=True))
    if rule == "redundant-sync":
        return t.bounds(t.select(site=("stream_sync_again", "device_sync")))
    if rule in ("sync-copies", "sync-wait"):  # min(T, O)
        lo, hi = t.bounds(t.select(site="copy") if rule == "sync-copies" else t.select(site="stream_sync"))
        olo, ohi = t.outside_bounds()
        return min(lo, olo), min(hi, ohi)
    if rule == "pageable-copies":
        lo = hi = 0
        for direction in ("HtoD", "DtoH"):
            if t.select(what=f"{direction} pageable"):
                _, _, (a, b), _ = pageable_direction_bounds(t, direction, bool(t.select(what=f"{direction} pinned")))
                lo, hi = lo + a, hi + b
        return lo, hi
    if rule == "small-copies":  # per row max(0, S - b / bw), bw measured (large copies) or assumed
        lo = hi = 0
        for (d, host), (small, large) in small_copy_rows(t).items():
            slo, shi = t.bounds(small)
            b = sum(c.bytes for c in small)
            if sum(c.bytes for c in large) >= MiB:
                llo, lhi = t.bounds(large)
                per_byte = (llo / sum(c.bytes for c in large), lhi / sum(c.bytes for c in large))
            else:
                per_byte = (1 / (10 if host == "pageable" else 25),) * 2
            lo, hi = lo + max(0, slo - b * per_byte[1]), hi + max(0, shi - b * per_byte[0])
        return lo, hi
    if rule == "launch-bound":  # H (1 - n / L)
        lo, hi = t.bounds(t.select(api="cudaLaunchKernel"))
        keep = 1 - max(1, n["sync_windows"]) / n["launches"]
        return lo * keep, hi * keep
    if rule == "alloc-churn":  # c x alloc time / allocs + min(frees, c) x free time / frees
        allocs, frees = t.select(api=ALLOC_APIS), t.select(api=FREE_APIS)
        (alo, ahi), (flo, fhi) = t.bounds(allocs), t.bounds(frees)
        c = n["churn"]
        a, f = c / len(allocs), min(len(frees), c) / len(frees)
        return alo * a + flo * f, ahi * a + fhi * f
    raise AssertionError(f"no bounds for {rule}")


# ---- helpers on the report's own tables -------------------------------------------------------------

def api_row(proc, name):
    return next((r for r in proc["cuda_api"] if r["name"] == name), None)


def api_sum(proc, names, field):
    return sum(r[field] for r in proc["cuda_api"] if r["name"] in names)


def outside_time(proc):
    """O of the spec: per thread that made traced calls, its first call's entry to its last call's return,
    less its time in calls."""
    return sum(t["last_mono_ns"] - t["first_mono_ns"] - t["host_ns"] for t in proc["threads"] if t["calls"])


def gbps(nbytes, ns):
    return nbytes / ns  # bytes per ns = GB/s


def case_function(case):
    return "case_" + case.replace("-", "_")


# ---- the tests --------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", list(CASES))
def test_expected_findings(runs, case):
    """The rules the case is built for fire, with an impact inside what its rule's formula gives on the
    run's own calls (the workload's clock above, the simulator's clock inside and the model below); the rules
    whose condition the case makes false do not; the clean case has no finding at all."""
    run = runs(case)
    ids = {f["id"] for f in run.findings()}
    assert not ids & set(run.advice["absent"]), \
        f"{case}: rules whose condition is false fired: {sorted(ids & set(run.advice['absent']))}: " \
        f"{summary(run.findings())}"
    if case == "clean":
        assert run.findings() == [], f"clean: findings {summary(run.findings())}"
    for want in run.advice["expect"]:
        f = run.finding(want["id"], want.get("api"))
        lo, hi = impact_bounds(run, want)
        assert lo <= f["impact_ns"] <= hi, \
            f"{case}: {want['id']}{' ' + want['api'] if 'api' in want else ''}: impact_ns {f['impact_ns']}, " \
            f"bounds [{lo:.0f}, {hi:.0f}] (the workload expected {want['impact_ns']} from its {want['basis']})"


@pytest.mark.parametrize("case", list(CASES))
def test_findings_well_formed(runs, case):
    """Every field of the spec, with its type; the order; the threshold; call sites through the case."""
    run = runs(case)
    recs = run.all_findings()
    for f in recs:
        missing = [k for k in FIELDS if k not in f]
        assert not missing, f"{f.get('id')}: fields missing: {missing}"
    keys = [(-f["impact_ns"], f["id"], f["pid"]) for f in recs]
    assert keys == sorted(keys), f"recommendations not ordered by impact_ns desc, id, pid: {summary(recs)}"
    traced = run.proc["traced_ns"]
    for f in run.findings():
        rule = f["id"]
        assert rule in RULES, f"unknown rule {rule}"
        assert f["pid"] == run.pid and f["comm"] == run.proc["comm"] == "advice_cases", (f["pid"], f["comm"])
        for k in ("title", "method", "action"):
            assert isinstance(f[k], str) and f[k].strip(), f"{rule}: {k} {f[k]!r}"
        assert isinstance(f["impact_ns"], int) and not isinstance(f["impact_ns"], bool) and f["impact_ns"] >= 0, \
            f"{rule}: impact_ns {f['impact_ns']!r} is not a non-negative JSON integer"
        if traced is None:
            assert f["impact_share"] is None
        else:
            assert isinstance(f["impact_share"], (int, float)) and 0 <= f["impact_share"] <= 1, f["impact_share"]
            assert abs(f["impact_share"] - f["impact_ns"] / traced) <= 0.005, \
                f"{rule}: impact_share {f['impact_share']} != {f['impact_ns']} / traced_ns {traced}"
        if rule == "leak":
            assert f["impact_ns"] == 0 and f["estimate"] in ("exact", "model", "upper_bound"), f
        else:
            assert f["estimate"] == ESTIMATE[rule], f"{rule}: estimate {f['estimate']}, spec {ESTIMATE[rule]}"
        if rule not in OWN_CONDITIONS:
            assert f["impact_ns"] >= MIN_NS and f["impact_ns"] >= MIN_SHARE * traced, \
                f"{rule}: impact {f['impact_ns']} under the threshold (100 µs and 1 % of {traced})"
        ev = f["evidence"]
        assert isinstance(ev, dict), ev
        missing = [k for k in EVIDENCE[rule] if k not in ev]
        assert not missing, f"{rule}: evidence members missing: {missing} ({sorted(ev)})"
        for d in ev.get("directions", []) if rule == "pageable-copies" else []:
            assert not [k for k in DIRECTION_FIELDS if k not in d], f"{rule}: direction {d}"
        for r in ev.get("rows", []) if rule == "small-copies" else []:
            assert not [k for k in ROW_FIELDS if k not in r], f"{rule}: row {r}"
        sites = f["call_sites"]
        assert isinstance(sites, list) and len(sites) <= 3, f"{rule}: call_sites {sites}"
        for s in sites:
            assert set(s) >= {"path", "calls", "host_ns"}, s
            assert isinstance(s["path"], str) and s["path"], s
            assert isinstance(s["calls"], int) and s["calls"] > 0 and isinstance(s["host_ns"], int), s
        assert [s["host_ns"] for s in sites] == sorted((s["host_ns"] for s in sites), reverse=True), \
            f"{rule}: call sites not heaviest first: {sites}"
        if rule in STACKED_RULES and run.proc["stacks"]["captured"]:
            assert sites, f"{rule}: no call sites although stacks were captured"
        if sites and rule != "nccl-straggler":  # every call of a case is made under its function
            fn = case_function(case)
            for s in sites:
                frames = [fr.strip() for fr in s["path"].split(" → ")]
                mine = [i for i, fr in enumerate(frames) if fn in fr]
                assert mine, f"{rule}: call site {s['path']!r} is not through {fn}"
                if "main" in frames:  # outermost first: main before the case's function
                    assert frames.index("main") < mine[0], f"{rule}: {s['path']!r} is not outermost frame first"



@pytest.mark.parametrize("case", list(CASES))
def test_calls_inside_workload_clock(runs, case):
    """Every call the workload made is one slice of trace.json on its thread (same API, same return code,
    same order), and lies inside the workload's own clock of that call and around the simulator's clock
    inside it: t0 <= ts <= in_t0 <= in_t1 <= ts + dur <= t1. No call is shorter than the simulator's model
    lets it be."""
    t = runs(case).timing
    outside = [c for c in t.calls if not (c.t0 <= c.ts and c.ts + c.dur <= c.t1)]
    assert not outside, f"{len(outside)} of {len(t.calls)} calls outside the workload's clock, e.g. {outside[:3]}"
    unread = [c for c in t.calls if not 0 < c.in_t0 <= c.in_t1]
    assert not unread, f"{len(unread)} calls without the simulator's clock inside them, e.g. {unread[:3]}"
    inside = [c for c in t.calls if not (c.ts <= c.in_t0 and c.in_t1 <= c.ts + c.dur)]
    assert not inside, f"{len(inside)} of {len(t.calls)} calls do not hold the simulator's clock inside them, " \
                       f"e.g. {inside[:3]}"
    short = [c for c in t.calls if c.dur < c.model]
    assert not short, f"{len(short)} calls shorter than the model, e.g. {short[:3]}"


def check_pageable_direction(d, t, direction, pinned):
    pg, nbytes, _, ratio = pageable_direction_bounds(t, direction, pinned)
    assert (d["calls"], d["bytes"]) == (len(pg), nbytes), (d, len(pg), nbytes)
    check_time(d["host_ns"], t, pg, f"pageable {direction} host_ns")
    lo, hi = t.bounds(pg)
    assert in_bounds(d["pageable_gbps"], gbps(nbytes, hi), gbps(nbytes, lo) if lo else float("inf"), REAL2), \
        (d, lo, hi)
    if not pinned:
        assert d["ratio_source"] == "assumed" and d["pinned_gbps"] is None and d["ratio"] == pytest.approx(0.4), d
        return
    pin = t.select(what=f"{direction} pinned")
    plo, phi = t.bounds(pin)
    pbytes = sum(c.bytes for c in pin)
    assert d["ratio_source"] == "measured", d
    assert in_bounds(d["pinned_gbps"], gbps(pbytes, phi), gbps(pbytes, plo) if plo else float("inf"), REAL2), \
        (d, plo, phi)
    assert in_bounds(d["ratio"], *ratio, REAL2), (d, ratio)


@pytest.mark.parametrize("case", [c for c in CASES if c != "clean"])
def test_evidence_matches_workload(runs, case):
    """The rule's evidence: counts equal the workload's accounting; each time is the tracer's time of
    exactly the calls the workload names (their slices), inside the bounds of the workload's clock of
    those calls (see the top)."""
    run = runs(case)
    n, t = run.numbers, run.timing
    # the workload's own sums are its calls' (the reference agrees with itself)
    assert n["all_calls"] == len(t.calls) and n["inside_ns"] == sum(c.wall for c in t.calls), n
    if case in ("pageable-copies", "two-rules"):
        dirs = {d["direction"]: d for d in run.finding("pageable-copies")["evidence"]["directions"]}
        assert set(dirs) == ({"HtoD", "DtoH"} if case == "pageable-copies" else {"HtoD"}), dirs
        htod = n["htod"]
        assert (htod["host_ns"], htod["pinned_host_ns"]) == (sum(c.wall for c in t.select(what="HtoD pageable")),
                                                             sum(c.wall for c in t.select(what="HtoD pinned"))), htod
        check_pageable_direction(dirs["HtoD"], t, "HtoD", pinned=True)
        if case == "pageable-copies":
            assert n["dtoh"]["host_ns"] == sum(c.wall for c in t.select(what="DtoH pageable")), n["dtoh"]
            check_pageable_direction(dirs["DtoH"], t, "DtoH", pinned=False)
    if case in ("alloc-churn", "two-rules"):
        ev = run.finding("alloc-churn")["evidence"]
        for k in ("alloc_calls", "free_calls", "peak_live_allocations", "churn"):
            assert ev[k] == n[k], f"alloc-churn {k}: {ev[k]}, workload {n[k]}"
        if case == "alloc-churn":
            check_time(ev["alloc_host_ns"], t, t.select(api=ALLOC_APIS), "alloc_host_ns")
            check_time(ev["free_host_ns"], t, t.select(api=FREE_APIS), "free_host_ns")
    if case == "sync-copies":
        ev = run.finding("sync-copies")["evidence"]
        assert (ev["calls"], ev["bytes"]) == (n["calls"], n["bytes"]), ev
        copies = t.select(site="copy")
        assert n["copy_host_ns"] == sum(c.wall for c in copies), n
        check_time(ev["host_ns"], t, copies, "sync copies host_ns")
        check_outside(ev["outside_ns"], t, "sync-copies")
    if case == "sync-wait":
        ev = run.finding("sync-wait")["evidence"]
        assert ev["calls"] == n["sync_calls"], ev
        assert [(a["api"], a["calls"]) for a in ev["by_api"]] == [("cudaStreamSynchronize", n["sync_calls"])], ev
        syncs = t.select(site="stream_sync")
        assert n["sync_host_ns"] == sum(c.wall for c in syncs), n
        check_time(ev["host_ns"], t, syncs, "sync host_ns")
        check_outside(ev["outside_ns"], t, "sync-wait")
        # each synchronisation returned after the kernel it waited for could end: the model's kernel starts
        # no earlier than its launch's entry and lasts kernel_ns
        launches = t.select(site="launch")
        assert len(launches) == len(syncs), (len(launches), len(syncs))
        early = [(lc, sc) for lc, sc in zip(launches, syncs) if sc.ts + sc.dur < lc.ts + n["kernel_ns"]]
        assert not early, f"{len(early)} synchronisations returned before their kernel's modelled end: {early[:2]}"
    if case == "redundant-sync":
        ev = run.finding("redundant-sync")["evidence"]
        assert ev["calls"] == n["redundant_calls"], f"redundant calls {ev['calls']}, workload {n['redundant_calls']}"
        by = {a["api"]: a for a in ev["by_api"]}
        assert {k: v["calls"] for k, v in by.items()} == {k: v["calls"] for k, v in n["by_api"].items()}, ev["by_api"]
        for api, site in (("cudaStreamSynchronize", "stream_sync_again"), ("cudaDeviceSynchronize", "device_sync")):
            calls = t.select(api=api, site=site)
            assert n["by_api"][api]["host_ns"] == sum(c.wall for c in calls), n["by_api"]
            check_time(by[api]["host_ns"], t, calls, f"redundant {api} host_ns")
    if case == "small-copies":
        rows = {(r["direction"], r["host_memory"], r["sync"]): r
                for r in run.finding("small-copies")["evidence"]["rows"]}
        want = {(r["direction"], r["host_memory"], r["sync"]): r for r in n["rows"]}
        assert set(rows) == set(want), f"rows {sorted(rows)}, workload {sorted(want)}"
        mine = small_copy_rows(t)
        for k, w in want.items():
            r = rows[k]
            assert (r["calls"], r["bytes"], r["reference_source"]) == (w["calls"], w["bytes"], w["reference_source"]), \
                (r, w)
            small, large = mine[k[:2]]
            assert (len(small), sum(c.bytes for c in small), sum(c.wall for c in small)) == \
                (w["calls"], w["bytes"], w["host_ns"]), (k, w)
            check_time(r["host_ns"], t, small, f"small copies {k} host_ns")
            if w["reference_source"] == "assumed":
                assert r["reference_gbps"] == pytest.approx(w["reference_gbps"]), r
            else:  # the row's large copies' bandwidth, with their time inside its bounds
                lbytes = sum(c.bytes for c in large)
                llo, lhi = t.bounds(large)
                assert lbytes == w["large_bytes"] and sum(c.wall for c in large) == w["large_host_ns"], (k, w)
                assert in_bounds(r["reference_gbps"], gbps(lbytes, lhi), gbps(lbytes, llo), REAL2), (r, llo, lhi)
    if case == "launch-bound":
        ev = run.finding("launch-bound")["evidence"]
        assert (ev["launches"], ev["sync_windows"]) == (n["launches"], n["sync_windows"]), ev
        launches = t.select(api="cudaLaunchKernel")
        assert n["launch_host_ns"] == sum(c.wall for c in launches), n
        # the model's floor (each launch spins SIMGPU_LAUNCH_US) is in the bounds, exactly
        assert sum(c.model for c in launches) == n["launches"] * CASES[case]["SIMGPU_LAUNCH_US"] * 1000, n
        check_time(ev["host_ns"], t, launches, "launch host_ns")
    if case == "cpu-feeding":
        ev = run.finding("cpu-feeding")["evidence"]
        assert ev["threads"] == n["threads"], ev
        # the workload's CPU work, plus the little its thread did outside calls besides (start-up, exit):
        # CPU time, which neither the probes' window nor preemption moves
        assert n["work_cpu_ns"] * 0.99 <= ev["cpu_outside_calls_ns"] <= n["work_cpu_ns"] * 1.15, (ev, n)
        # its synchronisations returned at once: what blocked them is inside their slices, so inside the
        # workload's clock of them
        syncs = t.select(site="stream_sync")
        assert n["sync_host_ns"] == sum(c.wall for c in syncs), n
        assert ev["sync_blocked_ns"] <= t.traced(syncs) <= n["sync_host_ns"], (ev, t.traced(syncs), n)
    if case == "faults-in-calls":
        ev = run.finding("faults-in-calls")["evidence"]
        assert within(ev["minor_faults"], n["minor_faults"], 0.02, 16), (ev, n)
        assert ev["minor_faults"] >= n["copy_pages"], ev
        assert ev["major_faults"] == n["major_faults"], (ev, n)
        by = {a["api"]: a for a in ev["by_api"]}
        for api, w in n["by_api"].items():
            if w["minor_faults"] + w["major_faults"] == 0:
                assert api not in by or by[api]["minor_faults"] + by[api]["major_faults"] <= 16, by.get(api)
                continue
            assert api in by, f"faults inside {api} ({w}) missing from by_api {ev['by_api']}"
            assert within(by[api]["minor_faults"], w["minor_faults"], 0.02, 16), (api, by[api], w)
            assert by[api]["major_faults"] == w["major_faults"], (api, by[api], w)
    if case == "failing-calls":
        got = {f["evidence"]["api"]: f["evidence"] for f in run.findings("failing-calls")}
        assert set(got) == set(n["failing"]), \
            f"failing-calls for {sorted(got)}, want {sorted(n['failing'])} ({n['single_failure']} failed only once)"
        for api, w in n["failing"].items():
            ev = got[api]
            assert (ev["calls"], ev["errors"]) == (w["calls"], w["errors"]), (api, ev, w)
            assert {str(c["code"]): c["count"] for c in ev["codes"]} == w["codes"], (api, ev["codes"], w["codes"])
            assert len(ev["codes"]) == len(w["codes"]), ev["codes"]  # each code once
            for c in ev["codes"]:
                assert c["name"] == ERROR_NAMES[c["code"]], c
            failed = t.select(api=api, failed=True)
            assert (len(failed), sum(c.wall for c in failed)) == (w["errors"], w["error_host_ns"]), (api, w)
            check_time(ev["error_host_ns"], t, failed, f"{api} error_host_ns")
    if case == "leak":
        ev = run.finding("leak")["evidence"]
        assert (ev["allocations"], ev["bytes"]) == (n["allocations"], n["bytes"]), ev
        kinds = {("pinned" if k["kind"] == "pinned_host" else k["kind"]): (k["allocations"], k["bytes"])
                 for k in ev["by_kind"]}
        assert kinds == {k: (v["allocations"], v["bytes"]) for k, v in n["by_kind"].items()}, ev["by_kind"]


@pytest.mark.parametrize("case", [c for c in CASES if c != "clean"])
def test_figures_match_report_tables(runs, case):
    """Each finding is computed from the report's own numbers: its evidence is what the tables it cites
    say, and impact_ns is the rule's formula on its evidence."""
    run = runs(case)
    proc = run.proc
    assert run.findings(), f"{case}: no finding"
    for f in run.findings():
        rule, ev, impact = f["id"], f["evidence"], f["impact_ns"]
        if rule == "pageable-copies":
            total = 0
            for d in ev["directions"]:
                rows = [t for t in proc["transfers"]
                        if t["direction"] == d["direction"] and t["host_memory"] == "pageable"]
                assert (d["calls"], d["bytes"], d["host_ns"]) == (sum(t["calls"] for t in rows),
                                                                  sum(t["bytes"] for t in rows),
                                                                  sum(t["total_ns"] for t in rows)), (d, rows)
                sync_rows = [t for t in rows if t["sync"]]
                if sync_rows:
                    pg = gbps(sync_rows[0]["bytes"], sync_rows[0]["total_ns"])
                    assert d["pageable_gbps"] == pytest.approx(pg, abs=REAL2), (d, sync_rows)
                else:
                    assert d["pageable_gbps"] is None, d
                pin = [t for t in proc["transfers"] if (t["direction"], t["host_memory"], t["sync"]) ==
                       (d["direction"], "pinned", True)]
                measured = sync_rows and pin and sync_rows[0]["bytes"] >= MiB and pin[0]["bytes"] >= MiB
                assert d["ratio_source"] == ("measured" if measured else "assumed"), (d, pin)
                if measured:
                    pn = gbps(pin[0]["bytes"], pin[0]["total_ns"])
                    assert d["pinned_gbps"] == pytest.approx(pn, abs=REAL2), (d, pin)
                    r = min(1.0, pg / pn)
                else:
                    assert d["pinned_gbps"] is None, d
                    r = 0.4
                assert d["ratio"] == pytest.approx(r, abs=REAL2), d
                total += d["host_ns"] * (1 - r)
            assert impact == pytest.approx(total, rel=1e-6, abs=2 * len(ev["directions"])), (impact, ev)
        elif rule == "sync-copies":
            rows = [t for t in proc["transfers"] if t["sync"] and t["direction"] != "HtoH"]
            assert (ev["calls"], ev["bytes"], ev["host_ns"]) == (sum(t["calls"] for t in rows),
                                                                sum(t["bytes"] for t in rows),
                                                                sum(t["total_ns"] for t in rows)), (ev, rows)
            assert ev["outside_ns"] == pytest.approx(outside_time(proc), rel=0.001, abs=1000), ev
            assert impact == min(ev["host_ns"], ev["outside_ns"]), (impact, ev)
        elif rule == "sync-wait":
            assert ev["outside_ns"] == pytest.approx(outside_time(proc), rel=0.001, abs=1000), ev
            assert (ev["calls"], ev["host_ns"]) == (sum(a["calls"] for a in ev["by_api"]),
                                                    sum(a["host_ns"] for a in ev["by_api"])), ev
            for a in ev["by_api"]:
                row = api_row(proc, a["api"])
                assert a["api"] in SYNC_APIS and row, a
                assert a["calls"] <= row["calls"] and a["host_ns"] <= row["total_ns"], (a, row)
            if case == "sync-wait":  # every synchronisation there waited for a kernel
                row = api_row(proc, "cudaStreamSynchronize")
                assert (ev["calls"], ev["host_ns"]) == (row["calls"], row["total_ns"]), (ev, row)
            assert impact == min(ev["host_ns"], ev["outside_ns"]), (impact, ev)
        elif rule == "redundant-sync":
            assert (ev["calls"], ev["host_ns"]) == (sum(a["calls"] for a in ev["by_api"]),
                                                    sum(a["host_ns"] for a in ev["by_api"])), ev
            for a in ev["by_api"]:
                row = api_row(proc, a["api"])
                assert a["api"] in SYNC_APIS and row, a
                assert a["calls"] <= row["calls"] and a["host_ns"] <= row["total_ns"], (a, row)
            if case == "redundant-sync":  # every device synchronisation there was redundant
                row = api_row(proc, "cudaDeviceSynchronize")
                dev = next(a for a in ev["by_api"] if a["api"] == "cudaDeviceSynchronize")
                assert (dev["calls"], dev["host_ns"]) == (row["calls"], row["total_ns"]), (dev, row)
            assert impact == ev["host_ns"], (impact, ev)
        elif rule == "small-copies":
            ops = [op for s in proc["stacks"]["stacks"] for op in s["ops"] if op["kind"] == "copy" and not op["errors"]]
            total = 0
            for r in ev["rows"]:
                async_ = not r["sync"]
                mine = [op for op in ops if (op["direction"], op["host_memory"], "Async" in op["api"]) ==
                        (r["direction"], r["host_memory"], async_)]
                small = [op for op in mine if op["size_bytes"] <= SMALL]
                large = [op for op in mine if op["size_bytes"] > SMALL]
                assert (r["calls"], r["bytes"], r["host_ns"]) == (sum(op["calls"] for op in small),
                                                                  sum(op["bytes"] for op in small),
                                                                  sum(op["host_ns"] for op in small)), (r, small)
                if sum(op["bytes"] for op in large) >= MiB:
                    assert r["reference_source"] == "measured", r
                    bw = gbps(sum(op["bytes"] for op in large), sum(op["host_ns"] for op in large))
                else:
                    assert r["reference_source"] == "assumed", r
                    bw = 10 if r["host_memory"] == "pageable" else 25
                assert r["reference_gbps"] == pytest.approx(bw, abs=REAL2), r
                total += max(0, r["host_ns"] - r["bytes"] / bw)
            assert sum(r["calls"] for r in ev["rows"]) >= 100, ev
            assert impact == pytest.approx(total, rel=1e-6, abs=2 * len(ev["rows"])), (impact, ev)
        elif rule == "launch-bound":
            assert ev["host_ns"] == api_sum(proc, LAUNCH_APIS, "total_ns"), ev
            assert ev["launches"] == api_sum(proc, LAUNCH_APIS, "calls") >= 1000, ev
            assert ev["avg_launch_ns"] == pytest.approx(ev["host_ns"] / ev["launches"], abs=1), ev
            assert ev["blocked_on_kernels_ns"] == proc["nccl"]["sync_blocked_ns_kernels"] < ev["host_ns"], ev
            n = max(1, ev["sync_windows"])
            assert impact == pytest.approx(ev["host_ns"] - n * ev["host_ns"] / ev["launches"], abs=2), (impact, ev)
        elif rule == "alloc-churn":
            assert (ev["alloc_calls"], ev["alloc_host_ns"]) == (api_sum(proc, ALLOC_APIS, "calls"),
                                                                api_sum(proc, ALLOC_APIS, "total_ns")), ev
            assert (ev["free_calls"], ev["free_host_ns"]) == (api_sum(proc, FREE_APIS, "calls"),
                                                              api_sum(proc, FREE_APIS, "total_ns")), ev
            assert ev["churn"] == ev["alloc_calls"] - ev["peak_live_allocations"] >= 10, ev
            want = ev["churn"] * ev["alloc_host_ns"] / ev["alloc_calls"] + \
                min(ev["free_calls"], ev["churn"]) * ev["free_host_ns"] / ev["free_calls"]
            assert impact == pytest.approx(want, abs=2), (impact, ev)
        elif rule == "cpu-feeding":
            threads = [t for t in proc["threads"] if t["calls"]]
            assert ev["threads"] == len(threads), ev
            assert ev["thread_wall_ns"] == sum(t["wall_ns"] for t in threads), ev
            # off-CPU time inside a thread's calls is part of their time (an unseen arrival's estimate
            # is cut at the call's entry): the rule's clamp at 0 never hides a part of the sum below
            assert all(t["in_gpu_calls"]["offcpu_ns"] <= t["host_ns"] for t in threads), threads
            oncpu_outside = sum(t["cpu_ns"] - (t["host_ns"] - t["in_gpu_calls"]["offcpu_ns"]) for t in threads)
            assert ev["cpu_outside_calls_ns"] == pytest.approx(oncpu_outside, rel=0.01), (ev, oncpu_outside)
            assert ev["cpu_outside_calls_ns"] >= 0.3 * ev["thread_wall_ns"], ev
            assert ev["sync_blocked_ns"] <= ev["cpu_outside_calls_ns"] / 4, ev
            assert ev["sync_blocked_ns"] <= api_sum(proc, SYNC_APIS, "total_ns"), ev
            assert impact == ev["cpu_outside_calls_ns"], (impact, ev)
        elif rule == "faults-in-calls":
            assert ev["minor_faults"] == sum(r["minor_faults"] for r in proc["cuda_api"]), ev
            assert ev["major_faults"] == sum(r["major_faults"] for r in proc["cuda_api"]), ev
            assert ev["minor_faults"] + ev["major_faults"] >= 1000, ev
            for a in ev["by_api"]:
                row = api_row(proc, a["api"])
                assert (a["minor_faults"], a["major_faults"]) == (row["minor_faults"], row["major_faults"]), (a, row)
            assert ev["minor_faults"] == sum(a["minor_faults"] for a in ev["by_api"]), ev
            # per API: its minor faults x 1 µs (+ its off-CPU time where it took major faults), at most the
            # host time of its calls (a fault is not always 1 µs: never more than the calls took)
            want = 0
            for a in ev["by_api"]:
                row = api_row(proc, a["api"])
                want += min(a["minor_faults"] * 1000 + (row["offcpu_ns"] if a["major_faults"] else 0),
                            row["total_ns"])
            assert impact == want, (impact, want, ev)
        elif rule == "failing-calls":
            row = api_row(proc, ev["api"])
            assert (ev["calls"], ev["errors"]) == (row["calls"], row["errors"]) and ev["errors"] >= 2, (ev, row)
            # the same codes as cuda_api[].error_codes (whose order is by code; the spec gives codes[] none)
            assert sorted((c["code"], c["name"], c["count"]) for c in ev["codes"]) == \
                [(c["code"], c["name"], c["count"]) for c in row["error_codes"]], (ev, row)
            assert ev["error_host_ns"] <= row["total_ns"], (ev, row)
            assert impact == ev["error_host_ns"], (impact, ev)
        elif rule == "leak":
            mem = proc["memory"]
            assert proc["exited"] and (ev["allocations"], ev["bytes"]) == (mem["leaks_total"]["count"],
                                                                         mem["leaks_total"]["bytes"]), (ev, mem)
            kinds = {}
            for a in mem["leaks"]:
                c, b = kinds.get(a["kind"], (0, 0))
                kinds[a["kind"]] = (c + 1, b + a["bytes"])
            got = {("pinned" if k["kind"] == "pinned_host" else k["kind"]): (k["allocations"], k["bytes"])
                   for k in ev["by_kind"]}
            assert got == kinds, (ev["by_kind"], mem["leaks"])
            assert impact == 0


def stack_calls(proc, function, api):
    """(calls, host_ns) of an API's operations on the stacks that pass through a function of the workload."""
    calls = ns = 0
    for s in proc["stacks"]["stacks"]:
        if function in gp.stack_functions(proc, s):
            for op in gp.stack_ops(s, api):
                calls, ns = calls + op["calls"], ns + op["host_ns"]
    return calls, ns


def test_redundant_syncs_are_the_second_ones(runs):
    """redundant-sync's case makes its redundant synchronisations from functions of their own
    (stream_sync_again, device_sync), its waiting ones from stream_sync: the stacks time each set
    exactly, so the split between redundant-sync and sync-wait must be theirs, to the nanosecond."""
    run = runs("redundant-sync")
    proc = run.proc
    red = {a["api"]: (a["calls"], a["host_ns"]) for a in run.finding("redundant-sync")["evidence"]["by_api"]}
    assert red == {"cudaStreamSynchronize": stack_calls(proc, "stream_sync_again", "cudaStreamSynchronize"),
                   "cudaDeviceSynchronize": stack_calls(proc, "device_sync", "cudaDeviceSynchronize")}, red
    # the waiting ones: min(B, O) is over the threshold there too (thousands of calls make O)
    waited = {a["api"]: (a["calls"], a["host_ns"]) for a in run.finding("sync-wait")["evidence"]["by_api"]}
    assert waited == {"cudaStreamSynchronize": stack_calls(proc, "stream_sync", "cudaStreamSynchronize")}, waited


@pytest.mark.parametrize("case", list(CASES))
def test_report_md(runs, case):
    """report.md has a "Recommendations" section, before the API tables, naming each finding's rule."""
    run = runs(case)
    findings = run.findings()
    lines = run.md.splitlines()
    heads = [i for i, line in enumerate(lines) if re.match(r"#+ .*Recommendations", line)]
    if case == "clean" and not heads:
        return  # no finding, no section: nothing else to say
    assert heads, f"report.md has no Recommendations section; its headings: {[l for l in lines if l.startswith('#')]}"
    api = [i for i, line in enumerate(lines) if re.match(r"#+ API summary", line)]
    assert api and heads[0] < api[0], "the Recommendations section is not near the top (before the API summary)"
    text = []
    for i in heads:
        level = len(lines[i]) - len(lines[i].lstrip("#"))
        j = i + 1
        while j < len(lines) and not (lines[j].startswith("#") and
                                      len(lines[j]) - len(lines[j].lstrip("#")) <= level):
            j += 1
        text.append("\n".join(lines[i:j]))
    section = "\n".join(text)
    for f in findings:
        assert f["id"] in section or f["title"] in section, f"report.md's Recommendations do not name {f['id']}"
    if case == "clean":
        assert not [r for r in RULES if re.search(rf"\b{re.escape(r)}\b", section)], section


@pytest.mark.parametrize("case", list(CASES))
def test_same_from_capture(runs, case, tmp_path):
    """`gpuprobed report CAPTURE` gives the same recommendations as the live report."""
    run = runs(case)
    live = run.all_findings()
    rc, _, err = gp.run_gpuprobed(["report", run.capture, "-o", str(tmp_path)], timeout=120)
    assert rc == 0, err
    with open(tmp_path / "report.json") as f:
        rebuilt = json.load(f)
    assert "recommendations" in rebuilt, "the report rebuilt from the capture has no recommendations[]"
    assert rebuilt["recommendations"] == live, \
        f"from the capture: {summary(rebuilt['recommendations'])}, live: {summary(live)}"


@pytest.mark.parametrize("case", list(CASES))
def test_same_in_sql(runs, case, tmp_path):
    """`gpuprobed export CAPTURE`'s recommendations and recommendation_sites (docs/sql.md) hold
    report.json's recommendations[] and verdicts[], field for field (read with Python's sqlite3
    module: exact doubles)."""
    run = runs(case)
    db = tmp_path / "c.sqlite"
    rc, _, err = gp.run_gpuprobed(["export", run.capture, "-o", str(db)], timeout=120)
    assert rc == 0, err
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    sites = collections.defaultdict(list)
    for s in con.execute("SELECT * FROM recommendation_sites ORDER BY recommendation_id, position"):
        sites[s["recommendation_id"]].append({k: s[k] for k in ("path", "calls", "host_ns")})
    ranked, verdicts = [], []
    for r in con.execute("SELECT * FROM recommendations ORDER BY id"):
        f = {k: r[k] for k in ("pid", "comm", "title", "impact_ns", "impact_share", "estimate", "method", "action")}
        if f["impact_share"] is not None:  # a double; report.json prints 15 significant digits
            f["impact_share"] = float(f"{f['impact_share']:.15g}")
        f.update(id=r["rule"], evidence=json.loads(r["evidence"]), about=json.loads(r["about"]),
                 call_sites=sites.pop(r["id"], []))
        if r["verdict"]:
            assert (r["rank"], r["overlaps"]) == (None, None), dict(r)
            verdicts.append(dict(f, explained_by=json.loads(r["explained_by"])))
        else:
            assert r["rank"] == r["id"] == len(ranked) + 1 and r["explained_by"] is None, dict(r)
            ranked.append(dict(f, overlaps=json.loads(r["overlaps"])))
    con.close()
    assert not sites, f"call sites of no recommendation: {dict(sites)}"
    for got, want in ((ranked, run.all_findings()), (verdicts, run.report["verdicts"])):
        assert [f["id"] for f in got] == [f["id"] for f in want]
        for g, w in zip(got, want):
            assert g == w, {k: (g.get(k), w.get(k)) for k in set(g) | set(w) if g.get(k) != w.get(k)}


@pytest.mark.parametrize("case", list(CASES))
def test_base_accounting(runs, case):
    """The tables the findings rest on equal the workload's own accounting (calls, errors, transfers,
    memory, leaks, kernels, streams, threads, probe hits, no loss)."""
    run = runs(case)
    gp.check_all(run.report, run.ref)


def api_kind(api):
    """The kind of host time a call of api is (docs/recommendations.md "about"), from its name."""
    if api.startswith("nccl"):
        return "nccl"
    if api in SYNC_APIS:
        return "synchronisations"
    if api in LAUNCH_APIS:
        return "launches"
    if api in ALLOC_APIS + FREE_APIS or "HostRegister" in api or "HostUnregister" in api:
        return "allocations"
    if api.startswith(("cudaMemcpy", "cudaMemset", "cuMemcpy", "cuMemset")):
        return "copies"
    return "other-calls"


@pytest.mark.parametrize("case", list(CASES))
def test_no_finding_claims_more_than_its_time(runs, case):
    """No finding's saving exceeds the host time of the calls (or threads) it is about, on the workload's
    own clock of those calls ("about": the kinds of its calls; "outside-calls": the thread's wall time
    outside its calls); each finding's "overlaps" are exactly the findings of its process about some of the
    same time, and any set of findings that do not overlap saves at most the process's traced wall time;
    no share is above 100 %. The verdicts are not ranked, and claim no more than the process's time."""
    run = runs(case)
    t, traced = run.timing, run.proc["traced_ns"]
    recs, mine = run.report["recommendations"], run.findings()
    inside = {k: sum(c.wall for c in t.calls if api_kind(c.api) == k) for k in ABOUT}
    first, last = min(c.t0 for c in t.calls), max(c.t1 for c in t.calls)
    # outside the calls: before the first (a program preparing its buffers) and after the last, too
    inside["outside-calls"] = traced - sum(c.floor for c in t.calls)
    assert traced >= last - first, (traced, last - first)
    for f in mine:
        assert f["id"] not in VERDICTS, f"{f['id']} ranked among the fixes"
        assert f["about"] and set(f["about"]) <= set(ABOUT) or f["id"] == "leak", f
        bound = sum(inside[k] for k in f["about"])
        assert f["impact_ns"] <= bound, \
            f"{case}: {f['id']} saves {f['impact_ns']} ns, more than the {bound} ns of its {f['about']}"
        assert f["impact_share"] is None or f["impact_share"] <= 1, f
        want = [i + 1 for i, g in enumerate(recs) if g is not f and g["pid"] == f["pid"] and
                set(g["about"]) & set(f["about"])]
        assert f["overlaps"] == want, (f["id"], f["overlaps"], want)
    for r in range(1, len(mine) + 1):
        for group in itertools.combinations(mine, r):
            if all(not set(a["about"]) & set(b["about"]) for a, b in itertools.combinations(group, 2)):
                assert sum(f["impact_ns"] for f in group) <= traced, \
                    f"{case}: {[f['id'] for f in group]} do not overlap but save more than the wall {traced} ns"
    for v in run.report["verdicts"]:
        assert v["id"] in VERDICTS, v
        assert v["impact_ns"] <= traced and v["evidence"]["host_share"] <= 1, v
        assert v["evidence"]["host_side_ns"] <= v["evidence"]["threads_span_ns"], v["evidence"]
        assert all(recs[r - 1]["pid"] == v["pid"] and set(recs[r - 1]["about"]) & set(v["about"])
                   for r in v["explained_by"]), v


def test_pageable_idle_ranks_pinning_first(runs):
    """200 pageable copies and no kernel: the GPU idles while the host copies. That state is the verdict
    (report.md's opening line of the Recommendations), explained by the findings about the copies; the fix
    ranked first is pinning."""
    run = runs("pageable-idle")
    mine = run.findings()
    assert mine and mine[0]["id"] == "pageable-copies", summary(mine)
    verdicts = [v for v in run.report["verdicts"] if v["pid"] == run.pid]
    if not run.report.get("gpus"):
        pytest.skip("no NVML samples in this run: no verdict to check")
    assert [v["id"] for v in verdicts] == ["gpu-idle-host-busy"], verdicts
    (v,) = verdicts
    assert 1 in v["explained_by"], v["explained_by"]
    # at most the host time of the copies and the thread's time outside them
    assert v["impact_ns"] <= run.proc["traced_ns"]
    head = run.md.index("## Recommendations")
    assert run.md.index(f"**Verdict (pid {run.pid}, ", head) < run.md.index("| --", head), \
        "report.md: the verdict does not open the Recommendations"


def test_two_rules_order(runs):
    """Two rules with clearly different impacts: the larger first."""
    run = runs("two-rules")
    ids = [f["id"] for f in run.findings()]
    assert "pageable-copies" in ids and "alloc-churn" in ids, summary(run.findings())
    big, small = run.finding("pageable-copies"), run.finding("alloc-churn")
    assert big["impact_ns"] >= 2 * small["impact_ns"], summary(run.findings())
    assert ids.index("pageable-copies") < ids.index("alloc-churn"), summary(run.findings())
