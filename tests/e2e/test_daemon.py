# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""gpuprobed --daemon, started as the systemd unit's ExecStart does (in the foreground), on
loopback only: /metrics scraped with curl equals the workloads' own accounting, passes
promtool, and a real Prometheus server ingests it; SIGHUP with a bad file keeps the running
configuration, SIGTERM detaches everything; exited processes' series go after their grace
period; the process bound evicts and counts; periodic reports are bounded by size.

The daemon traces every CUDA process on the machine, a developer's or another test's too: the
checks look at this test's own processes (by pid), and at session-wide counters only for what
changed while its own workload ran."""
import collections
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse

import pytest

import gp
import pprof_tool
from test_attach import run_basic_ops

CURL = shutil.which("curl")
PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(cond, timeout=30, step=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


class Daemon:
    """gpuprobed --daemon --config FILE --foreground, with its own state directory and port."""

    def __init__(self, tmp_path, env=None, **settings):
        self.tmp = tmp_path
        self.port = free_port()
        self.state = tmp_path / "state"
        self.conf = tmp_path / "gpuprobed.conf"
        self.settings = {
            # a series per pid unless a test asks for the groups (the default of the shipped file)
            "metrics": {"listen": f"127.0.0.1:{self.port}", "exited_grace": "300", "process_labels": "pid"},
            "reports": {"state_dir": str(self.state), "interval": "0"},
            "trace": {},
        }
        for key, value in settings.items():
            section, k = key.split("__")
            self.settings.setdefault(section, {})[k] = str(value)
        self.write_conf()
        self.proc = subprocess.Popen([gp.GPUPROBED, "--daemon", "--config", str(self.conf), "--foreground"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.held = gp.track(self.proc)
        self.err = gp.LineReader(self.proc.stderr)
        self.stderr = ""
        self.wait_line("metrics on http://")
        self.held.note()

    def write_conf(self, text=None):
        if text is None:
            text = "".join(f"[{sec}]\n" + "".join(f"{k} = {v}\n" for k, v in kv.items())
                           for sec, kv in self.settings.items())
        self.conf.write_text(text)

    def wait_line(self, marker, timeout=60):
        end = time.monotonic() + timeout
        while marker not in self.stderr:
            line = self.err.readline(max(0.0, end - time.monotonic()))
            if line is None:
                raise AssertionError(f"gpuprobed --daemon: no {marker!r} within {timeout} s: {self.stderr}")
            if not line:
                rc = self.proc.wait()
                raise AssertionError(f"gpuprobed --daemon exited ({rc}) before {marker!r}: {self.stderr}")
            self.stderr += line

    def url(self, path="/metrics"):
        return f"http://127.0.0.1:{self.port}{path}"

    def scrape(self):
        p = subprocess.run([CURL, "-sS", "--max-time", "10", "-D", "-", self.url()], capture_output=True,
                           timeout=30)
        assert p.returncode == 0, f"curl: {p.stderr}"
        head, body = p.stdout.decode().split("\r\n\r\n", 1)
        assert head.startswith("HTTP/1.1 200"), head
        assert "text/plain; version=0.0.4" in head, head
        return body

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            held = getattr(self, "held", None)  # a subclass may start it otherwise
            if held is not None:
                held.note()
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self.stderr += self.err.rest()
        return rc


@pytest.fixture
def daemon_factory(tmp_path):
    if not CURL:
        pytest.skip("curl is not installed (make deps installs it): the tests scrape with it")
    made = []

    def make(env=None, **settings):
        d = Daemon(tmp_path, env=env, **settings)
        made.append(d)
        return d
    yield make
    for d in made:
        d.stop()


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(page):
    """[(name, {labels}, value)] of a text exposition page (comments checked for shape)."""
    out = []
    for line in page.splitlines():
        if not line or line.startswith("#"):
            assert not line or re.match(r"^# (HELP|TYPE) \S+ .+$", line), line
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = {k: v.encode().decode("unicode_escape") for k, v in LABEL.findall(m.group(2) or "")}
        out.append((m.group(1), labels, float(m.group(3))))
    return out


def series(samples, name, **match):
    return [(lab, v) for n, lab, v in samples if n == name and all(lab.get(k) == str(w) for k, w in match.items())]


def one(samples, name, **match):
    got = series(samples, name, **match)
    assert len(got) == 1, f"{name}{match}: {len(got)} series: {got}"
    return got[0][1]


def pids_of(samples):
    return {lab["pid"] for _, lab, _ in
            [(n, lab, v) for n, lab, v in samples if n == "gpuprobed_process_exited"]}


def basic_ops_pid(d):
    """Runs basic_ops to its end (a new CUDA process the daemon must find by itself); its pid (the
    label's string) once the daemon reports it exited, and its reference."""
    ref = run_basic_ops(d.tmp)
    pid = str(ref["pid"])

    def exited():
        s = parse(d.scrape())
        return series(s, "gpuprobed_process_exited", pid=pid) and one(s, "gpuprobed_process_exited", pid=pid) == 1
    assert wait_until(exited), f"the daemon did not report basic_ops ({pid}) as an exited process"
    return pid, ref


def drops(s):
    """{cause: count} of gpuprobed_drops_total: the session's, every process's together."""
    return {lab["cause"]: v for lab, v in series(s, "gpuprobed_drops_total")}


def duration_buckets(s, pid, api):
    """[(le in seconds, calls)] of an API's duration histogram, by le."""
    return sorted((float(lab["le"]), v) for lab, v in
                  series(s, "gpuprobed_api_call_duration_seconds_bucket", pid=pid, api=api))


def check_metrics(s, pid, ref, drops_before=None):
    """The scraped samples s of process pid equal basic_ops's own accounting ref. Given the drops()
    of a scrape taken before it ran, none may have been lost meanwhile (the daemon's drops are
    every process's: earlier ones may be another process's); without, none at all."""
    assert series(s, "gpuprobed_process_exited", pid=pid)[0][0]["comm"] == "basic_ops"
    for api, want in ref["cuda_api"].items():
        assert one(s, "gpuprobed_api_calls_total", pid=pid, api=api) == want["calls"], api
        assert one(s, "gpuprobed_api_errors_total", pid=pid, api=api) == want["errors"], api
    calls = {lab["api"] for lab, _ in series(s, "gpuprobed_api_calls_total", pid=pid)}
    assert calls == set(ref["cuda_api"]), "APIs with calls differ from the workload's"
    for api, want in ref["cuda_api"].items():
        buckets = duration_buckets(s, pid, api)
        assert buckets[-1] == (float("inf"), want["calls"]), (api, buckets)
        assert [n for _, n in buckets] == sorted(n for _, n in buckets), (api, buckets)
        assert one(s, "gpuprobed_api_call_duration_seconds_count", pid=pid, api=api) == want["calls"]
        assert one(s, "gpuprobed_api_call_duration_seconds_sum", pid=pid, api=api) == \
            one(s, "gpuprobed_api_seconds_total", pid=pid, api=api)
    want_bytes = {}
    for t in ref["transfers"]:
        key = (t["direction"], t["host_memory"])
        want_bytes[key] = want_bytes.get(key, 0) + t["bytes"]
    for (direction, host_memory), b in want_bytes.items():
        assert one(s, "gpuprobed_transfer_bytes_total", pid=pid, direction=direction,
                   host_memory=host_memory) == b, (direction, host_memory)
    mem = ref["memory"]
    live = mem["device"]["live_bytes"] + mem["managed"]["live_bytes"]
    assert one(s, "gpuprobed_device_memory_bytes", pid=pid) == live
    assert one(s, "gpuprobed_device_memory_peak_bytes", pid=pid) == next(iter(ref["devices"].values()))["peak_bytes"]
    before = (drops_before or {}).get("ringbuf_full", 0)
    assert one(s, "gpuprobed_drops_total", cause="ringbuf_full") == before


def test_metrics_equal_the_workloads_own_accounting(daemon_factory):
    d = daemon_factory()
    before = drops(parse(d.scrape()))
    pid, ref = basic_ops_pid(d)
    s = parse(d.scrape())
    check_metrics(s, pid, ref, before)
    assert one(s, "gpuprobed_build_info") == 1
    # the same numbers in the report the daemon writes when it stops
    assert d.stop() == 0, d.stderr
    with open(d.state / "reports" / "current" / "report.json") as f:
        report = json.load(f)
    proc = gp.process(report, int(pid))
    gp.check_api(proc, ref)
    assert report["session"]["mode"] == "daemon"
    # its recommendations: the report's, the same findings of the same model (the process had exited)
    want = collections.Counter()
    for f in report["recommendations"]:
        if f["pid"] == int(pid):
            want[f["id"]] += f["impact_ns"]
    assert want, "basic_ops should make some rule fire (what makes this check able to fail)"
    got = {lab["rule"]: round(v * 1e9) for lab, v in series(s, "gpuprobed_recommendation_saving_seconds", pid=pid)}
    assert got == dict(want)


def test_promtool_accepts_the_page(daemon_factory):
    if not PROMTOOL:
        pytest.skip("promtool (Debian's prometheus package) is not installed: make deps installs it")
    d = daemon_factory()
    basic_ops_pid(d)
    page = d.scrape()
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=page, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), \
        f"promtool check metrics: {p.returncode}\n{p.stdout}\n{p.stderr}"


def label_text(labels):
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def histogram_quantile(q, buckets):
    """Prometheus's histogram_quantile over [(le, cumulative count)] sorted by le, as its documentation
    defines it: linear inside the bucket the rank q x count falls in, from 0 for the first bucket, the
    highest finite bound when the rank falls in +Inf."""
    rank = q * buckets[-1][1]
    i = next(k for k, (_, c) in enumerate(buckets) if c >= rank)
    if buckets[i][0] == float("inf"):
        return buckets[-2][0]
    lower, before = (buckets[i - 1] if i else (0.0, 0))
    return lower + (buckets[i][0] - lower) * (rank - before) / (buckets[i][1] - before)


def report_p99_bucket(d, pid, api, buckets):
    """Stops the daemon; the (lower, upper) bounds of the bucket that holds its report's p99 of api."""
    assert d.stop() == 0, d.stderr
    with open(d.state / "reports" / "current" / "report.json") as f:
        report = json.load(f)
    want = next(r for r in gp.process(report, int(pid))["cuda_api"] if r["name"] == api)["p99_ns"] / 1e9
    bounds = [0.0] + [le for le, _ in buckets]
    k = next(i for i in range(1, len(bounds)) if want <= bounds[i])
    return bounds[k - 1], bounds[k]


def test_the_documented_p99_rule_under_promtool(daemon_factory, tmp_path):
    """docs/metrics.md's recording rule over the buckets the daemon served for basic_ops' most called
    API: promtool gives Prometheus's interpolation of them, inside the bucket of the report's p99."""
    if not PROMTOOL:
        pytest.skip("promtool (Debian's prometheus package) is not installed: make deps installs it")
    doc = open(os.path.join(gp.ROOT, "docs", "metrics.md")).read()
    m = re.search(r"<!-- p99-rule -->\n```yaml\n(.*?)```", doc, re.S)
    assert m, "docs/metrics.md has no p99 rule block"
    rules = tmp_path / "rules.yml"
    rules.write_text(m.group(1))
    d = daemon_factory()
    pid, ref = basic_ops_pid(d)
    api = max(ref["cuda_api"], key=lambda a: ref["cuda_api"][a]["calls"])
    s = parse(d.scrape())
    served = series(s, "gpuprobed_api_call_duration_seconds_bucket", pid=pid, api=api)
    buckets = duration_buckets(s, pid, api)
    # each bucket 0 a minute before: its rate over the window is its count over the same span for all;
    # the rule's value against ours to a relative 1e-9 (the two sums of doubles differ in the last bits)
    inputs = "".join(f"      - series: 'gpuprobed_api_call_duration_seconds_bucket{label_text(lab)}'\n"
                     f"        values: '0 {v:.0f}'\n" for lab, v in served)
    lab = {k: v for k, v in served[0][0].items() if k != "le" and v != ""}  # an empty label is none
    want = histogram_quantile(0.99, buckets)
    test = tmp_path / "test.yml"
    test.write_text(f"""rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
{inputs}    promql_expr_test:
      - expr: abs(gpuprobed:api_call_duration_seconds:p99_5m - {want!r}) < bool {want * 1e-9!r}
        eval_time: 1m
        exp_samples:
          - labels: '{label_text(lab)}'
            value: 1
""")
    p = subprocess.run([PROMTOOL, "test", "rules", str(test)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"promtool test rules:\n{p.stdout}\n{p.stderr}\n{test.read_text()}"
    lower, upper = report_p99_bucket(d, pid, api, buckets)
    assert lower <= want <= upper, (api, lower, want, upper, buckets)


def test_a_real_prometheus_scrapes_the_daemon(daemon_factory, tmp_path):
    if not PROMETHEUS:
        pytest.skip("prometheus (Debian's package) is not installed: make deps installs it")
    d = daemon_factory()
    pid, ref = basic_ops_pid(d)
    prom_port = free_port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 1s\n"
                   "scrape_configs:\n  - job_name: gpuprobed\n"
                   f"    static_configs:\n      - targets: ['127.0.0.1:{d.port}']\n")
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        query = urllib.parse.quote(f'gpuprobed_api_calls_total{{pid="{pid}",api="cudaMalloc"}}')

        def value():
            p = subprocess.run([CURL, "-sS", "--max-time", "5",
                                f"http://127.0.0.1:{prom_port}/api/v1/query?query={query}"],
                               capture_output=True, text=True, timeout=30)
            if p.returncode:
                return None
            res = json.loads(p.stdout).get("data", {}).get("result", [])
            return res[0]["value"][1] if res else None
        got = wait_until(value, timeout=90, step=0.5)
        assert got is not None, "Prometheus did not ingest gpuprobed_api_calls_total"
        assert float(got) == ref["cuda_api"]["cudaMalloc"]["calls"]
        # the p99 of the API called most, by PromQL from the histogram, lies in the bucket of the report's
        # own p99 (the nearest-rank sample's: Prometheus interpolates inside the bucket that rank falls in)
        api = max(ref["cuda_api"], key=lambda a: ref["cuda_api"][a]["calls"])
        query = urllib.parse.quote(f'histogram_quantile(0.99, gpuprobed_api_call_duration_seconds_bucket'
                                   f'{{pid="{pid}",api="{api}"}})')
        p99 = wait_until(value, timeout=30, step=0.5)
        assert p99 is not None, f"no histogram_quantile of {api}"
        buckets = duration_buckets(parse(d.scrape()), pid, api)
    finally:
        prom.terminate()
        try:
            prom.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prom.kill()
    lower, upper = report_p99_bucket(d, pid, api, buckets)
    assert lower <= float(p99) <= upper, (api, lower, p99, upper, buckets)
    assert abs(float(p99) - histogram_quantile(0.99, buckets)) <= 1e-9 * upper


def test_sighup_with_a_bad_file_keeps_running_and_a_good_one_applies(daemon_factory):
    d = daemon_factory()
    d.write_conf("[trace]\nringbuf_mb = 3\n")
    d.proc.send_signal(signal.SIGHUP)
    d.wait_line("keeping the running configuration")
    assert f"{d.conf}:2:" in d.stderr and "ringbuf_mb" in d.stderr, d.stderr
    s = parse(d.scrape())  # still serving
    assert one(s, "gpuprobed_config_reloads_total", result="failed") == 1
    assert one(s, "gpuprobed_config_reloads_total", result="ok") == 0
    # a good file: exited_grace applies now, ringbuf_mb needs a restart and is kept
    d.settings["metrics"]["exited_grace"] = "1"
    d.settings["trace"]["ringbuf_mb"] = "32"
    d.write_conf()
    d.proc.send_signal(signal.SIGHUP)
    d.wait_line("reloaded")
    assert "trace.ringbuf_mb" in d.stderr and "needs a restart" in d.stderr, d.stderr
    assert one(parse(d.scrape()), "gpuprobed_config_reloads_total", result="ok") == 1
    pid, _ = basic_ops_pid(d)
    # grace of 1 s: the exited process's series go
    assert wait_until(lambda: pid not in pids_of(parse(d.scrape())), timeout=15), "series stayed after the grace"
    assert d.proc.poll() is None


def test_sigterm_detaches_everything(daemon_factory):
    """A CUDA process the daemon finds by itself does its work and stays; SIGTERM then gives a final
    report with exactly the calls it made (the daemon holds a new CUDA process until its probes are in
    place, so none is missed), and takes every probe away."""
    d = daemon_factory()
    wl = gp.Workload("basic_ops", d.tmp, hold=True, wait=False)  # a CUDA process that stays
    try:
        wl.wait_done()  # its calls are made (and traced: it was held until they could be)
        assert wait_until(lambda: str(wl.pid) in pids_of(parse(d.scrape())), timeout=30), \
            f"the daemon did not admit pid {wl.pid}"
        assert gp.uprobe_links(held_by=d.proc.pid), "the daemon holds no probe"
        d.held.note()
        assert d.stop(signal.SIGTERM) == 0, d.stderr
        links, progs = d.held.released()
        assert not links and not progs, f"links {links} and programs {progs} left after SIGTERM"
        assert "detaching" in d.stderr
        wl.finish()
    finally:
        wl.kill()
    with open(d.state / "reports" / "current" / "report.json") as f:
        report = json.load(f)
    proc = gp.process(report, wl.pid)
    gp.check_api(proc, wl.ref())
    assert proc["nested_left_out"] == 0


def test_a_bad_configuration_refuses_to_start(tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("[metrics]\nlisten = 127.0.0.1:9400\n\n[trace]\nno_such_key = 1\n")
    rc, out, err = gp.run_gpuprobed(["--daemon", "--config", str(conf), "--foreground"])
    assert rc == 1
    assert f"{conf}:5:" in err and "no_such_key" in err, err
    assert "not starting" in err
    rc, out, err = gp.run_gpuprobed(["--daemon", "--config", str(tmp_path / "missing.conf")])
    assert rc == 1 and "missing.conf" in err, err


def test_process_bound_evicts_the_first_exited_and_counts(daemon_factory):
    """max_processes 2, applied by a reload once three basic_ops have run and exited one after the
    other (each seen by the daemon first: there is no bound yet): the first is forgotten and
    counted, the last two stay. The daemon traces every CUDA process of the machine, and another
    one (a developer's, another test's) shares the bound: what must hold whatever else runs is
    checked on what the daemon keeps; the exact count when nothing else shared it."""
    d = daemon_factory()
    ours = [basic_ops_pid(d)[0] for _ in range(3)]  # each has exited before the next starts
    s = parse(d.scrape())
    others_before = pids_of(s) - set(ours)
    assert one(s, "gpuprobed_processes_evicted_total") == 0
    d.settings["trace"]["max_processes"] = "2"
    d.write_conf()
    d.proc.send_signal(signal.SIGHUP)
    d.wait_line("reloaded")

    def bounded():  # the bound is applied once a second
        s = parse(d.scrape())
        return s if ours[0] not in pids_of(s) and len(pids_of(s)) <= 2 else None
    s = wait_until(bounded, timeout=30)
    assert s, f"more than 2 processes kept, or the first exited kept: {pids_of(parse(d.scrape()))}, ran {ours}"
    kept, evicted = pids_of(s), one(s, "gpuprobed_processes_evicted_total")
    mine = [p for p in ours if p in kept]
    # the exited go first, in the order they exited; only the bound forgets before the grace
    assert mine == ours[len(ours) - len(mine):], f"kept {mine} of {ours}: not forgotten in exit order"
    assert evicted >= len(ours) - len(mine), (evicted, kept, ours)
    assert len(kept) == 2, f"kept {kept}: only what is over the bound is forgotten"
    if not others_before and kept == set(ours[1:]):
        # nothing else was kept before the reload, nor came after (it would have taken the place
        # of the second): the three were all there was
        assert evicted == 1, f"{evicted} evicted, only {ours[0]} had to be"


def test_periodic_reports_are_bounded_by_size(daemon_factory):
    # three old reports of 400 KiB each, then a bound of 1 MiB: the first periodic report
    # must remove the oldest until the reports fit
    d = daemon_factory(reports__interval=1, reports__max_size="1M")
    reports = d.state / "reports"
    for name in ("20200101T000000Z", "20200101T000001Z", "20200101T000002Z"):
        (reports / name).mkdir()
        (reports / name / "report.json").write_bytes(b"x" * 400 * 1024)
    assert wait_until(lambda: not (reports / "20200101T000000Z").exists(), timeout=15), "oldest report stayed"
    assert (reports / "20200101T000002Z").exists()
    s = parse(d.scrape())
    assert one(s, "gpuprobed_reports_written_total") >= 1
    dated = [p for p in reports.iterdir() if p.name != "current"]
    total = sum(f.stat().st_size for p in dated for f in p.iterdir())
    assert total <= 1024 * 1024 + 64 * 1024, f"reports hold {total} bytes"
    newest = max(p.name for p in dated)
    assert (reports / newest / "report.json").exists() and (reports / newest / "report.md").exists()


def test_periodic_reports_carry_a_pprof_profile(daemon_factory):
    """With stacks on, every periodic report has profile.pb.gz beside its folded stacks: go tool pprof
    reads each, equal to them line for line; the last one holds basic_ops's calls with a stack, under
    its pid: every call of each API with stacks, as the workload counted them."""
    why = pprof_tool.missing()
    if why:
        pytest.skip(why)
    d = daemon_factory(reports__interval=1, trace__stacks="on")
    pid, ref = basic_ops_pid(d)
    reports = d.state / "reports"
    assert wait_until(lambda: len([p for p in reports.iterdir() if (p / "profile.pb.gz").exists()]) >= 2,
                      timeout=30), "fewer than two periodic reports with a profile"
    assert d.stop() == 0, d.stderr
    dated = sorted(p for p in reports.iterdir() if p.name != "current" and (p / "report.json").exists())
    assert all((p / "profile.pb.gz").exists() == (p / "stacks.folded").exists() for p in dated)
    for p in [x for x in dated if (x / "profile.pb.gz").exists()][-2:]:
        prof = pprof_tool.check_against_folded(p)
    with open(p / "report.json") as f:
        proc = gp.process(json.load(f), int(pid))
    calls = sum(s["values"][0] for s in prof["samples"] if s["labels"].get("pid") == pid)
    assert calls == proc["stacks"]["calls"] > 0
    by_api = {}
    for st in proc["stacks"]["stacks"]:
        for op in st["ops"]:
            by_api[op["api"]] = by_api.get(op["api"], 0) + op["calls"]
    # the APIs of GPU work have stacks (events, streams, attributes have none): each with all its calls
    assert "cudaLaunchKernel" in by_api and by_api == {a: ref["cuda_api"][a]["calls"] for a in by_api}, by_api


COUNTER = re.compile(r"^# TYPE (\S+) (counter|histogram)$", re.M)
PER_PROCESS = ("gpuprobed_api_", "gpuprobed_transfer", "gpuprobed_device_memory", "gpuprobed_nccl_",
               "gpuprobed_process_")


def counters_of(page):
    """{(name, labels): value} of the page's counter and histogram samples."""
    kinds = dict(COUNTER.findall(page))
    return {(n, tuple(sorted(lab.items()))): v for n, lab, v in parse(page)
            if n in kinds or re.sub(r"_(bucket|sum|count)$", "", n) in kinds}


def test_group_series_add_up_and_never_go_down(daemon_factory, tmp_path):
    """process_labels = group (the shipped default): one program run three times one after another is
    one series per API, labelled without a pid, each the sum of the runs' own accounting after every
    run; once the daemon has forgotten them (exited_grace 1 s) every count stays where it was, and no
    counter of any scrape went down, its CPU time included."""
    # job_label none: a job read from /proc depends on the daemon noting the process before it exits
    d = daemon_factory(metrics__process_labels="group", metrics__exited_grace="1", metrics__job_label="none")
    exe = gp.unique_name("basic_ops", tmp_path)  # a name of its own: no other basic_ops joins the group
    comm = os.path.basename(exe)
    pages, want = [], {}

    def group_calls(s):
        return {lab["api"]: v for lab, v in series(s, "gpuprobed_api_calls_total", comm=comm)}

    def add_up(ref):
        for api, r in ref["cuda_api"].items():
            want[api] = want.get(api, 0) + r["calls"]
        assert wait_until(lambda: group_calls(parse(d.scrape())) == want), (group_calls(parse(d.scrape())), want)
        pages.append(d.scrape())
    # the first run is scraped alive (its CPU time read from /proc), then again once it has exited
    wl = gp.Workload(exe, tmp_path, hold=True)
    wl.release()
    wl.wait_done()
    add_up(wl.ref())
    assert one(parse(pages[-1]), "gpuprobed_process_cpu_seconds_total", comm=comm) > 0
    wl.finish()
    for _ in range(2):
        add_up(run_basic_ops(d.tmp, exe))
    s = parse(pages[-1])
    assert all("pid" not in lab for n, lab, _ in s if n.startswith(PER_PROCESS)), "a per-process series with a pid"
    assert len(series(s, "gpuprobed_api_calls_total", api="cudaMalloc", comm=comm)) == 1
    # forgotten: the group has no process left, its counters stay
    assert wait_until(lambda: not series(parse(d.scrape()), "gpuprobed_process_exited", comm=comm), timeout=30)
    pages.append(d.scrape())
    assert group_calls(parse(pages[-1])) == want
    for before, after in zip(pages, pages[1:]):
        old, new = counters_of(before), counters_of(after)
        went = {k: (v, new.get(k)) for k, v in old.items() if new.get(k, -1) < v}
        assert not went, f"counters went down or vanished: {sorted(went.items())[:3]}"


def report_of(d):
    with open(d.state / "reports" / "current" / "report.json") as f:
        return json.load(f)


def test_overhead_budget_samples_the_hot_probes_and_marks_the_estimates(daemon_factory, tmp_path):
    """A launch loop paced by the GPU (30 µs kernels) under a 1 % budget: the launch probes are
    attached for part of each second, so their counts are estimates (within 25 % of the loop's
    own count: the seconds where the loop starts and ends are scaled from windows that saw
    another rate, up to one second's launches each, 11 % of this 9 s loop) and marked as such;
    every call that is not a hot one stays exact, and no call is lost to the gating (a call cut
    by a detach is duty_cut, an estimate, not a loss)."""
    iters = 300000
    # The copies go one record each through the ring buffer, which every traced process shares (the
    # daemon traces the machine's): 128 MiB hold the whole loop's (~45 MB) even if the daemon got no
    # CPU meanwhile, so that another process's records on a busy machine cannot crowd them out.
    d = daemon_factory(trace__overhead_budget="1%", trace__ringbuf_mb=128)
    wl = gp.Workload("bench_calls", tmp_path, args=["--iters", str(iters), "--depth", "4"],
                     env=gp.sim_env(SIMGPU_KERNEL_US=30, SIMGPU_COPY_LATENCY_US=0))
    try:
        before = drops(parse(d.scrape()))
        wl.release()
        res = json.loads(wl.readline(120))
        wl.wait_done()
        wl.finish()
    finally:
        wl.kill()
    assert res["launch_errors"] == 0 and res["iters"] == iters
    pid = str(wl.pid)
    s = wait_until(lambda: (lambda p: p if series(p, "gpuprobed_process_exited", pid=pid) and
                            one(p, "gpuprobed_process_exited", pid=pid) == 1 else None)(parse(d.scrape())))
    assert s, "the daemon did not see bench_calls exit"
    launches = one(s, "gpuprobed_api_calls_total", pid=pid, api="cudaLaunchKernel")
    estimated = one(s, "gpuprobed_api_estimated_calls_total", pid=pid, api="cudaLaunchKernel")
    assert abs(launches - iters) <= 0.25 * iters, f"{launches} launches estimated, {iters} made"
    assert 0 < estimated < launches
    assert one(s, "gpuprobed_api_calls_total", pid=pid, api="cudaMemcpyAsync") == iters
    assert not series(s, "gpuprobed_api_estimated_calls_total", pid=pid, api="cudaMemcpyAsync")
    assert one(s, "gpuprobed_counts_estimated") == 1
    assert one(s, "gpuprobed_overhead_budget_ratio") == 0.01
    assert 0 < one(s, "gpuprobed_duty_cycle_ratio") <= 1
    for cause in ("missed_return", "return_without_entry"):  # none while this loop ran
        assert one(s, "gpuprobed_drops_total", cause=cause) == before[cause], cause
    assert d.stop() == 0
    r = report_of(d)
    smp = r["sampling"]
    assert smp["budget"] == 0.01 and smp["sampled_periods"] >= 2, smp
    assert 0 < smp["attached_fraction"] < 1, smp
    assert smp["overhead_unsampled_estimate"] > 0.01 and smp["hit_cost_ns"] > 0, smp
    (proc,) = [p for p in r["processes"] if p["pid"] == wl.pid]
    api = {a["name"]: a for a in proc["cuda_api"]}
    assert api["cudaLaunchKernel"]["calls"] == launches
    assert api["cudaLaunchKernel"]["estimated_calls"] == estimated
    # the session's estimate is every process's (another one's hot calls may be scaled too)
    assert smp["estimated_calls"] == sum(a["estimated_calls"] for p in r["processes"] for a in p["cuda_api"])
    assert api["cudaMemcpyAsync"]["estimated_calls"] == 0
    assert "overhead budget 1%: hot probes attached for part of each second" in d.stderr


def test_overhead_budget_needs_the_aggregated_mode(tmp_path):
    """stacks make every launch a record: there is nothing the budget could scale, so it is refused."""
    conf = tmp_path / "bad.conf"
    conf.write_text(f"[reports]\nstate_dir = {tmp_path}/s\n[trace]\noverhead_budget = 2%\nstacks = on\n")
    p = subprocess.run([gp.GPUPROBED, "--daemon", "--config", str(conf), "--foreground"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 1
    assert f"{conf}: [trace] overhead_budget needs aggregate = on, stacks = off and timeline = off" in p.stderr


def test_nvml_gauges_are_the_simulated_devices_and_processes(daemon_factory, tmp_path):
    """DCGM-style gauges of the latest NVML sample: device memory exact (the workload's allocations
    plus the simulator's context), the fixed clocks/power/temperature, per-process rows only while
    NVML lists the process."""
    import test_nvml
    env = test_nvml.nvml_env()  # its own board: NVML sees this test's processes only
    d = daemon_factory(env=env, trace__nvml_lib=test_nvml.NVML_LIB, trace__nvml_interval=50)
    ready = tmp_path / "ready"
    ready.mkdir()
    wl = subprocess.Popen([test_nvml.PHASES, "--alloc-mb", "24", "--barrier", str(ready), "--peers", "1",
                           "--hold-ms", "30000"], env=env)
    try:
        pid = str(wl.pid)
        want = 24 * test_nvml.MIB + test_nvml.CTX_MB * test_nvml.MIB
        assert wait_until(lambda: any(ready.iterdir()), timeout=60), "nvml_phases did not allocate"

        def listed():
            s = parse(d.scrape())
            got = series(s, "gpuprobed_gpu_process_fb_used_bytes", pid=pid)
            return s if got and got[0][1] == want else None
        first = wait_until(listed, timeout=60)
        assert first, "NVML never listed the workload with its memory"
        n0 = one(first, "gpuprobed_gpu_samples_total", gpu=0)
        # a sample taken wholly after the one that saw all of it: device and process alike
        s = wait_until(lambda: (lambda s: s if one(s, "gpuprobed_gpu_samples_total", gpu=0) > n0 else None)(
            parse(d.scrape())), timeout=60)
        assert s, "no NVML sample after the first"
        (lab, used), = series(s, "gpuprobed_gpu_process_fb_used_bytes", pid=pid)
        assert used == want and lab["comm"] == "nvml_phases" and lab["gpu"] == "0"
        assert lab["model_name"] == "NVIDIA H100 80GB HBM3 (simgpu)" and lab["uuid"].startswith("GPU-")
        assert one(s, "gpuprobed_gpu_fb_used_bytes", gpu=0) == want
        assert one(s, "gpuprobed_gpu_sm_clock_hertz", gpu=0) == 1980e6
        assert one(s, "gpuprobed_gpu_mem_clock_hertz", gpu=0) == 2619e6
        assert one(s, "gpuprobed_gpu_power_usage_watts", gpu=0) == 350.0
        assert one(s, "gpuprobed_gpu_temp_celsius", gpu=0) == 45
        assert one(s, "gpuprobed_gpu_utilization_ratio", gpu=0) == 0  # it holds memory, runs no kernel
        assert one(s, "gpuprobed_gpu_lost", gpu=0) == 0 and one(s, "gpuprobed_nvml_up") == 1
        assert one(s, "gpuprobed_gpu_fb_total_bytes", gpu=0) >= want
        if PROMTOOL:
            p = subprocess.run([PROMTOOL, "check", "metrics"], input=d.scrape(), capture_output=True, text=True,
                               timeout=60)
            assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), p.stdout + p.stderr
    finally:
        wl.kill()
        wl.wait()
    # gone from NVML's list: its rows go with it, the device's memory back to nothing
    assert wait_until(lambda: not series(parse(d.scrape()), "gpuprobed_gpu_process_fb_used_bytes", pid=pid),
                      timeout=60), "the killed workload's row stayed"
    assert wait_until(lambda: one(parse(d.scrape()), "gpuprobed_gpu_fb_used_bytes", gpu=0) == 0, timeout=60)
