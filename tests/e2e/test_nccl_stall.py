"""Live NCCL stall detection (--stall-timeout, the daemon's stall_timeout): rank 2 of 4 stops for 12 s
right before its 21st AllReduce; the others wait on it in their synchronisation.

References, from the same run: nccl_ranks' per-rank files (rank -> pid; sync_t0_ns_per_iter: the
rank's CLOCK_MONOTONIC just before each cudaStreamSynchronize, so the waiting ranks' waits on #21
began after sync_t0[20]; collective_clock_ns: rank 2 entered #21 after its sleep), and the
CLOCK_MONOTONIC at which the test read the stall line. A rank waits in its synchronisation from its
entry, which lies after sync_t0, so the line can come no earlier than the latest waiting rank's
sync_t0 + the timeout, and must come within 6 s of that (the detector looks every quarter of the
timeout); the wait it reports lies between the timeout and the line's time minus the earliest
sync_t0. The documented alerting rule (docs/metrics.md) is run by promtool over the daemon's own
scraped series."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

import gp
from test_daemon import CURL, PROMETHEUS, PROMTOOL, Daemon, free_port, label_text, parse, series, wait_until

CHRT = shutil.which("chrt")
TIMEOUT_S = 3
STALL_ARGS = ["--ranks", "4", "--allreduce-only", "--iters", "25", "--stall-rank", "2", "--stall-at", "21",
              "--stall-ms", "12000"]
LINE = re.compile(r"NCCL stall: communicator ([0-9a-f]{16}) collective #21 \(AllReduce, 1 MiB\): "
                  r"ranks 0,1,3 waiting ([0-9.]+) s for rank 2 \(pid (\d+)\), which entered #20 last and is now "
                  r"(.*)$")


def refs_of(refs_dir):
    refs = {}
    for name in os.listdir(refs_dir):
        with open(os.path.join(refs_dir, name)) as f:
            ref = json.load(f)
        refs[ref["rank"]] = ref
    assert sorted(refs) == [0, 1, 2, 3], refs.keys()
    return refs


def check_timing(refs, line_ns, waited_ns):
    waiters = [refs[r] for r in (0, 1, 3)]
    first = min(r["sync_t0_ns_per_iter"][20] for r in waiters)
    last = max(r["sync_t0_ns_per_iter"][20] for r in waiters)
    timeout_ns = TIMEOUT_S * 10**9
    assert last + timeout_ns <= line_ns <= last + timeout_ns + 6 * 10**9, (line_ns - last) / 1e9
    assert timeout_ns <= waited_ns <= line_ns - first, (waited_ns, line_ns - first)
    # rank 2 entered #21 only after the line: it was still sleeping then
    assert refs[2]["collective_clock_ns"][20][0] > line_ns


def test_stall_is_said_with_the_late_rank_and_recorded(tmp_path):
    assert CHRT, "chrt (util-linux) is needed to run gpuprobed and the ranks at a real-time priority"
    refs_dir = tmp_path / "refs"
    refs_dir.mkdir()
    out = tmp_path / "out"
    env = gp.sim_env()
    env.pop("SUDO_UID", None)
    env.pop("SUDO_GID", None)
    p = subprocess.Popen([CHRT, "--rr", "1", gp.GPUPROBED, "--stall-timeout", str(TIMEOUT_S), "-o", str(out), "--",
                          os.path.join(gp.WORKLOADS, "nccl_ranks"), "--ref-dir", str(refs_dir), *STALL_ARGS],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err = gp.LineReader(p.stderr)
    lines, stall = [], None
    try:
        while True:
            line = err.readline(120)
            assert line is not None, "gpuprobed: no output for 120 s"
            if not line:
                break
            lines.append(line)
            m = LINE.search(line.rstrip("\n"))
            if m and stall is None:
                stall = (time.monotonic_ns(), m)
        assert p.wait(timeout=60) == 0, "".join(lines)
    finally:
        if p.poll() is None:
            p.kill()
    text = "".join(lines)
    assert stall, f"no stall line: {text}"
    assert text.count("NCCL stall:") == 1, text
    refs = refs_of(refs_dir)
    line_ns, m = stall
    comm_id, waited_s, pid, state = m.group(1), float(m.group(2)), int(m.group(3)), m.group(4)
    assert pid == refs[2]["pid"]
    assert "nanosleep" in state, state  # usleep: the rank sleeps in (clock_)nanosleep
    with open(out / "report.json") as f:
        report = json.load(f)
    gp.check_no_loss(report)
    (st,) = report["stalls"]
    assert st["comm_id"] == comm_id and st["seq"] == 21 and st["op"] == "AllReduce" and st["bytes"] == 1 << 20
    assert st["waiting"] == [0, 1, 3]
    assert [(b["rank"], b["pid"], b["last_seq"]) for b in st["behind"]] == [(2, refs[2]["pid"], 20)]
    assert st["behind"][0]["state"] == state
    assert abs(st["waited_ns"] / 1e9 - waited_s) <= 0.05 + 1e-9
    check_timing(refs, line_ns, st["waited_ns"])
    # the communicator of the stall is the job's: every rank's comm_id
    assert {c["comm_id"] for r in refs.values() for c in gp.process(report, r["pid"])["nccl"]["communicators"]} \
        == {comm_id}
    md = (out / "report.md").read_text()
    assert "## NCCL stalls" in md and f"Communicator `{comm_id}`, collective #21 (AllReduce" in md
    # trace.json: one global instant marker
    with open(out / "trace.json") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    marks = [e for e in events if e.get("cat") == "nccl_stall"]
    assert len(marks) == 1 and marks[0]["ph"] == "I" and marks[0]["s"] == "g", marks
    assert marks[0]["args"]["comm_id"] == comm_id and marks[0]["args"]["behind"][0]["rank"] == 2
    # the capture gives the same stalls
    again = tmp_path / "again"
    q = subprocess.run([gp.GPUPROBED, "report", str(out / "capture.gpz"), "-o", str(again)], capture_output=True,
                       text=True, timeout=120)
    assert q.returncode == 0, q.stderr
    with open(again / "report.json") as f:
        assert json.load(f)["stalls"] == report["stalls"]


def test_stall_timeout_is_checked():
    for bad in ("-1", "x", "86401", "nan", ""):
        p = subprocess.run([gp.GPUPROBED, "--stall-timeout", bad, "--", "true"], capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 2, (bad, p.stderr)
        assert f"--stall-timeout: '{bad}' is not a number of seconds between 0 (off) and 86400" in p.stderr


def documented_rule(threshold_s):
    """The alerting rule of docs/metrics.md, its waiting threshold set to the test's stall timeout."""
    doc = open(os.path.join(gp.ROOT, "docs", "metrics.md")).read()
    m = re.search(r"<!-- stall-rule -->\n```yaml\n(.*?)```", doc, re.S)
    assert m, "docs/metrics.md has no stall rule block"
    rule = m.group(1)
    assert rule.count("> 60") == 1, rule
    return rule.replace("> 60", f"> {threshold_s}")


def test_daemon_metrics_name_the_lagging_rank_and_the_rule_fires(tmp_path):
    if not CURL:
        pytest.skip("curl is not installed (make deps installs it): the test scrapes with it")
    if not PROMTOOL:
        pytest.skip("promtool (Debian's prometheus package) is not installed: make deps installs it")
    d = Daemon(tmp_path, trace__stall_timeout=TIMEOUT_S)
    prom = None
    rules = tmp_path / "rules.yml"
    rules.write_text(documented_rule(TIMEOUT_S))
    try:
        if PROMETHEUS:  # the real Prometheus scrapes the daemon and evaluates the rule during the stall
            prom_port = free_port()
            cfg = tmp_path / "prometheus.yml"
            cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                           f"rule_files: ['{rules}']\n"
                           "scrape_configs:\n  - job_name: gpuprobed\n"
                           f"    static_configs:\n      - targets: ['127.0.0.1:{d.port}']\n")
            prom = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                     f"--web.listen-address=127.0.0.1:{prom_port}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        refs_dir = tmp_path / "refs"
        refs_dir.mkdir()
        wl = subprocess.Popen([os.path.join(gp.WORKLOADS, "nccl_ranks"), "--ref-dir", str(refs_dir), *STALL_ARGS],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=gp.sim_env())
        ranks = {}
        while len(ranks) < 4:
            line = wl.stdout.readline()
            assert line, f"nccl_ranks: {wl.stderr.read()}"
            if line.startswith("RANK "):
                _, pid, rank = line.split()
                ranks[pid] = rank

        def during_stall():
            s = parse(d.scrape())
            entered = {lab["rank"]: (v, lab) for lab, v in series(s, "gpuprobed_nccl_collectives_entered_total")
                       if lab["pid"] in ranks}
            waiting = {lab["rank"]: (v, lab) for lab, v in series(s, "gpuprobed_nccl_waiting_seconds")
                       if lab["pid"] in ranks}
            if sorted(entered) != ["0", "1", "2", "3"] or entered["2"][0] != 20:
                return None
            if any(entered[r][0] != 21 or waiting[r][0] <= 0 for r in ("0", "1", "3")):
                return None
            # rank 2 stalls in its own code, outside any collective; on a busy machine its #20 can still be
            # returning when the others entered #21 (a scrape then sees it inside #20): not the stall yet
            if waiting["2"][0] != 0:
                return None
            return entered, waiting

        first = wait_until(during_stall, timeout=60, step=0.2)
        assert first, "the daemon's metrics never showed rank 2 at 20 and the others waiting at 21"

        def past_timeout():
            x = during_stall()
            return x if x and max(x[1][r][0] for r in ("0", "1", "3")) > TIMEOUT_S + 0.5 else None

        # later in the same stall (it lasts 12 s): the waits have grown past the rule's threshold
        second = wait_until(past_timeout, timeout=30, step=0.2)
        assert second, "the stall ended before the waits grew past the timeout (it lasts 12 s)"
        if prom:
            def firing():
                p = subprocess.run([CURL, "-sS", "--max-time", "5", f"http://127.0.0.1:{prom_port}/api/v1/alerts"],
                                   capture_output=True, text=True, timeout=30)
                if p.returncode:
                    return None
                alerts = json.loads(p.stdout).get("data", {}).get("alerts", [])
                return [a["labels"] for a in alerts if a["labels"].get("alertname") == "NcclRankBehind"
                        and a["state"] == "firing"] or None
            fired = wait_until(firing, timeout=20, step=0.5)
            assert fired, "the real Prometheus did not fire NcclRankBehind during the stall"
            assert [(a["rank"], a["pid"]) for a in fired] == [("2", second[0]["2"][1]["pid"])], fired
        assert wl.wait(timeout=60) == 0, wl.stderr.read()
        refs = refs_of(refs_dir)
        for r in ("0", "1", "3"):
            assert second[1][r][0] > first[1][r][0], (r, first[1][r], second[1][r])
        for r, ref in refs.items():
            assert first[0][str(r)][1]["pid"] == str(ref["pid"]) and first[0][str(r)][1]["nranks"] == "4"
        d.wait_line(f"for rank 2 (pid {refs[2]['pid']}), which entered #20 last")
        # the documented rule over these series (two nodes' worth: ranks 0-1 one instance, 2-3 another)
        inputs, expected = [], None
        for name, idx in (("gpuprobed_nccl_collectives_entered_total", 0), ("gpuprobed_nccl_waiting_seconds", 1)):
            for r in ("0", "1", "2", "3"):
                labels = dict(first[idx][r][1], instance="node-a:9400" if r in ("0", "1") else "node-b:9400",
                              job="gpuprobed")
                inputs.append(f"      - series: '{name}{label_text(labels)}'\n"
                              f"        values: '{first[idx][r][0]:g} {second[idx][r][0]:g}'\n")
                if name.endswith("entered_total") and r == "2":
                    expected = dict(labels)
        exp = "\n".join(f"              {k}: \"{v}\"" for k, v in sorted(expected.items()))
        test = tmp_path / "test.yml"
        test.write_text(f"""rule_files: [{rules}]
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
{''.join(inputs)}    alert_rule_test:
      - eval_time: 15s
        alertname: NcclRankBehind
        exp_alerts:
          - exp_labels:
              severity: "page"
{exp}
            exp_annotations:
              summary: "NCCL communicator {expected['comm_id']}: rank 2 ({expected['comm']}, pid {expected['pid']}, {expected['instance']}) is 1 collective(s) behind while other ranks wait on it"
""")
        p = subprocess.run([PROMTOOL, "test", "rules", str(test)], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, f"promtool test rules:\n{p.stdout}\n{p.stderr}\n{test.read_text()}"
    finally:
        if prom:
            prom.terminate()
            try:
                prom.wait(timeout=30)
            except subprocess.TimeoutExpired:
                prom.kill()
        d.stop()

