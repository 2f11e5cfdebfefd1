# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""SQL over a capture (docs/sql.md): `gpuprobed export CAPTURE -o FILE.sqlite`, `--sqlite FILE` on a
live session, `gpuprobed query CAPTURE_OR_DB 'SQL'`.

References: the views are read with the sqlite3 command-line tool (not gpuprobed's own reader) and
must equal report.json's tables of the same session exactly; the rows must equal the workload's own
accounting (calls per API, successful copies, allocations and their frees, NCCL collectives). A damaged
capture exports what it holds and says what it skipped; an existing file is not replaced without
--force; a bad statement gets SQLite's own message and exit status 1."""
import collections
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import time

import pytest

import gp


def sql(db, query):
    """Rows of query over db, as the sqlite3 command-line tool gives them (-json)."""
    out = subprocess.run(["sqlite3", "-json", str(db), query], capture_output=True, text=True, check=True).stdout
    return json.loads(out) if out.strip() else []


def check_views_equal_report(db, report):
    """api_summary = cuda_api[], transfer_summary = transfers[] (but the size histogram),
    memset_summary = memsets[], for every process of the report."""
    assert report["processes"]
    for proc in report["processes"]:
        pid = proc["pid"]
        rows = sql(db, f"SELECT * FROM api_summary WHERE pid = {pid}")
        for r in rows:
            del r["pid"]
            r["error_codes"] = json.loads(r["error_codes"])
            r["implemented_by"] = json.loads(r["implemented_by"])
        assert rows == proc["cuda_api"], f"pid {pid}: api_summary != cuda_api[]"
        rows = sql(db, f"SELECT * FROM transfer_summary WHERE pid = {pid}")
        for r in rows:
            del r["pid"]
            r["sync"] = bool(r["sync"])
        assert rows == [{k: v for k, v in t.items() if k != "size_histogram"} for t in proc["transfers"]]
        rows = sql(db, f"SELECT * FROM memset_summary WHERE pid = {pid}")
        for r in rows:
            del r["pid"]
            r["sync"] = bool(r["sync"])
        assert rows == proc["memsets"]


def check_rows_equal_workload(db, ref, pid):
    """Row counts against the workload's own accounting (tests/workloads/wl.h)."""
    calls = {r["api"]: r for r in sql(db, "SELECT a.name AS api, COUNT(*) AS calls, SUM(c.result != 0) AS errors"
                                          f" FROM calls c JOIN apis a ON a.id = c.api WHERE c.pid = {pid}"
                                          " AND c.parent_api IS NULL GROUP BY a.name")}
    assert {k: (v["calls"], v["errors"]) for k, v in calls.items()} == \
        {k: (v["calls"], v["errors"]) for k, v in ref["cuda_api"].items()}
    # successful copies, by (direction, host memory, sync)
    rows = sql(db, "SELECT x.direction, x.host_memory, x.sync, COUNT(*) AS calls, SUM(x.bytes) AS bytes"
                   f" FROM transfers x JOIN calls c ON c.id = x.call_id WHERE c.pid = {pid} AND c.result = 0"
                   " GROUP BY 1, 2, 3")
    assert {(r["direction"], r["host_memory"], bool(r["sync"])): (r["calls"], r["bytes"]) for r in rows} == \
        {(t["direction"], t["host_memory"], t["sync"]): (t["calls"], t["bytes"]) for t in ref["transfers"]}
    # allocations and what their frees released
    mem = ref["memory"]
    rows = {r["kind"]: r for r in sql(db, "SELECT kind, COUNT(*) AS n, SUM(bytes) AS bytes,"
                                          " SUM(CASE WHEN free_call_id IS NOT NULL THEN bytes END) AS freed,"
                                          " SUM(free_call_id IS NOT NULL) AS frees,"
                                          f" SUM(freed_ns >= start_ns) AS ordered FROM allocations WHERE pid = {pid}"
                                          " GROUP BY kind")}
    for kind, want in (("device", mem["device"]), ("managed", mem["managed"]), ("pinned", mem["pinned_host"])):
        got = rows.get(kind, {"n": 0, "bytes": None, "freed": None, "frees": 0, "ordered": 0})
        assert (got["n"], got["bytes"] or 0) == (want["alloc_calls"], want["alloc_bytes"]), kind
        assert (got["freed"] or 0) == want["freed_bytes"], kind
        assert got["ordered"] == got["frees"], f"{kind}: a free before its allocation"


@pytest.fixture(scope="module")
def basic_run(tmp_path_factory):
    """basic_ops traced with --sqlite: (report, reference, out dir)."""
    tmp = tmp_path_factory.mktemp("sql")
    live = tmp / "live.sqlite"
    report, ref, _ = gp.trace(tmp, "basic_ops", tracer_args=("--sqlite", str(live)))
    return report, ref, tmp / "out", live


def test_live_and_exported_equal_report_and_workload(basic_run, tmp_path):
    report, ref, out, live = basic_run
    db = tmp_path / "c.sqlite"
    rc, _, err = gp.run_gpuprobed(["export", str(out / "capture.gpz"), "-o", str(db)])
    assert rc == 0, err
    for path in (live, db):
        check_views_equal_report(path, report)
        check_rows_equal_workload(path, ref, ref["pid"])
    proc = gp.process(report, ref["pid"])
    # every record is a row: the outermost calls and those inside them
    n = sql(db, "SELECT COUNT(*) AS n, SUM(parent_api IS NULL) AS outer, SUM(nested_in IS NOT NULL) AS inner"
                " FROM calls")[0]
    nested = sum(r["calls"] for r in proc["nested_api"])
    assert (n["outer"], n["inner"]) == (proc["api_calls"], nested)
    assert n["n"] == n["outer"] + nested + proc["nested_left_out"]
    # an inner call lies inside the call it is nested in, on the same thread, and names its API
    bad = sql(db, "SELECT i.id FROM calls i JOIN calls o ON o.id = i.nested_in WHERE i.tid != o.tid"
                  " OR i.start_ns < o.start_ns OR i.end_ns > o.end_ns OR i.parent_api != o.api")
    assert not bad
    # kernels: launches per named kernel, as the workload counted them
    rows = sql(db, "SELECT kernel AS name, COUNT(*) AS n FROM calls_named WHERE op = 'kernel' AND result = 0"
                   " AND kernel IS NOT NULL GROUP BY kernel")
    assert {r["name"]: r["n"] for r in rows} == ref["kernels"]
    # the stacks are the report's, their frames symbolized
    assert sql(db, "SELECT COUNT(*) AS n FROM stacks")[0]["n"] == len(proc["stacks"]["stacks"])
    leaf = sql(db, "SELECT DISTINCT f.function FROM calls c JOIN stack_frames s ON s.stack_id = c.stack_id"
                   " AND s.depth = 0 JOIN frames_named f ON f.id = s.frame_id WHERE c.op = 'kernel'")
    assert leaf and all(r["function"] for r in leaf)
    meta = {r["key"]: r["value"] for r in sql(db, "SELECT * FROM meta")}
    assert (meta["complete"], meta["corrupt_chunks"], meta["capture_file"]) == (1, 0, str(out / "capture.gpz"))
    # ids are 1..n in the order of the rows (SQLite gives them: the export checks they are its own)
    assert sql(db, "SELECT MIN(id) AS lo, MAX(id) AS hi, COUNT(*) AS n FROM calls")[0] == \
        {"lo": 1, "hi": n["n"], "n": n["n"]}
    # call_cpu holds a row exactly where a call has a CPU or fault count, and they add up to cuda_api[]'s
    assert not sql(db, "SELECT call_id FROM call_cpu WHERE offcpu_ns = 0 AND vol_switches = 0"
                       " AND invol_switches = 0 AND minor_faults = 0 AND major_faults = 0")
    keys = ("offcpu_ns", "voluntary_switches", "involuntary_switches", "minor_faults", "major_faults")
    want = {r["name"]: tuple(r[k] for k in keys) for r in proc["cuda_api"] if any(r[k] for k in keys)}
    assert want, "basic_ops' calls should fault or switch somewhere (what makes this check able to fail)"
    rows = sql(db, "SELECT a.name, SUM(u.offcpu_ns) AS o, SUM(u.vol_switches) AS v, SUM(u.invol_switches) AS i,"
                   " SUM(u.minor_faults) AS mi, SUM(u.major_faults) AS ma FROM call_cpu u"
                   " JOIN calls c ON c.id = u.call_id JOIN apis a ON a.id = c.api"
                   f" WHERE c.parent_api IS NULL AND c.pid = {ref['pid']} GROUP BY a.name")
    assert {r["name"]: (r["o"], r["v"], r["i"], r["mi"], r["ma"]) for r in rows} == want


def test_query_formats_cache_and_errors(basic_run, tmp_path):
    report, ref, out, _ = basic_run
    cap = tmp_path / "capture.gpz"
    shutil.copy2(out / "capture.gpz", cap)
    q = "SELECT name, calls, errors FROM api_summary ORDER BY name"
    want = [(r["name"], r["calls"], r["errors"]) for r in sorted(gp.process(report, ref["pid"])["cuda_api"],
                                                                  key=lambda r: r["name"])]
    rc, table, err = gp.run_gpuprobed(["query", str(cap), q])
    assert rc == 0, err
    cache = tmp_path / "capture.gpz.sqlite"
    assert cache.exists(), "the first query exports beside the capture"
    lines = table.splitlines()
    assert lines[0].split() == ["name", "calls", "errors"] and set(lines[1]) == {"-", " "}
    assert [tuple(int(v) if v.isdigit() else v for v in line.split()) for line in lines[2:]] == want
    # the cache is used again while the capture is unchanged
    made = cache.stat().st_mtime_ns
    rc, csv, err = gp.run_gpuprobed(["query", str(cap), q, "--csv"])
    assert rc == 0, err
    assert cache.stat().st_mtime_ns == made
    assert csv.splitlines()[0] == "name,calls,errors"
    assert [tuple(int(v) if v.isdigit() else v for v in line.split(",")) for line in csv.splitlines()[1:]] == want
    rc, js, err = gp.run_gpuprobed(["query", str(cache), q, "--json"])
    assert rc == 0, err
    assert [(r["name"], r["calls"], r["errors"]) for r in json.loads(js)] == want
    # a bad statement: SQLite's own message, exit 1
    rc, outp, err = gp.run_gpuprobed(["query", str(cache), "SELECT * FROM no_such_table"])
    assert rc == 1 and "no such table: no_such_table" in err and not outp
    rc, _, err = gp.run_gpuprobed(["query", str(cache), "SELEC 1"])
    assert rc == 1 and 'near "SELEC": syntax error' in err
    # the database is opened read-only
    rc, _, err = gp.run_gpuprobed(["query", str(cache), "DELETE FROM calls"])
    assert rc == 1 and "readonly" in err
    # an existing file is not replaced without --force
    before = cache.read_bytes()
    rc, _, err = gp.run_gpuprobed(["export", str(cap), "-o", str(cache)])
    assert rc == 1 and "exists" in err and cache.read_bytes() == before
    rc, _, err = gp.run_gpuprobed(["export", str(cap), "-o", str(cache), "--force"])
    assert rc == 0, err
    # bad usage
    assert gp.run_gpuprobed(["query", str(cap)])[0] == 2
    assert gp.run_gpuprobed(["export", str(cap)])[0] == 2
    assert gp.run_gpuprobed(["--no-record", "--sqlite", str(tmp_path / "x.sqlite"), "--", "true"])[0] == 2
    not_cap = tmp_path / "not.gpz"
    not_cap.write_bytes(b"hello" * 100)
    rc, _, err = gp.run_gpuprobed(["export", str(not_cap), "-o", str(tmp_path / "n.sqlite")])
    assert rc == 1 and "not a gpuprobed capture" in err and not (tmp_path / "n.sqlite").exists()


def indices(db):
    return {r["name"] for r in sql(db, "SELECT name FROM sqlite_master WHERE type = 'index'"
                                       " AND name NOT LIKE 'sqlite_autoindex%'")}


def plan(db, query):
    """SQLite's plan for query (the sqlite3 tool prints it as a tree, not in -json)."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as c:
        return " | ".join(r[3] for r in c.execute("EXPLAIN QUERY PLAN " + query))


def test_indices_with_indices_and_in_querys_cache(basic_run, tmp_path):
    """export: the rows, no index of calls; --indices and query's cache: calls by time (kept as the rows
    arrive), process and thread, API, kernel and outer call. SQLite's planner is what says an index
    serves a query."""
    report, ref, out, _ = basic_run
    cap = tmp_path / "capture.gpz"
    shutil.copy2(out / "capture.gpz", cap)
    base = {"nccl_calls_comm", "sched_slices_tid"}
    lookup = {"calls_start", "calls_pid", "calls_api", "calls_kernel", "calls_nested_in"}
    plain, full = tmp_path / "plain.sqlite", tmp_path / "full.sqlite"
    assert gp.run_gpuprobed(["export", str(cap), "-o", str(plain)])[0] == 0
    assert gp.run_gpuprobed(["export", str(cap), "-o", str(full), "--indices"])[0] == 0
    assert indices(plain) == base
    assert indices(full) == base | lookup
    rc, _, err = gp.run_gpuprobed(["query", str(cap), "SELECT 1"])
    assert rc == 0, err
    assert indices(tmp_path / "capture.gpz.sqlite") == base | lookup
    window = "SELECT COUNT(*) FROM calls WHERE start_ns BETWEEN 1 AND 2"
    assert "USING COVERING INDEX calls_start" in plan(full, window)
    assert plan(plain, window) == "SCAN calls"
    assert plan(plain, "SELECT * FROM calls WHERE api = 3") == "SCAN calls"
    assert "USING INDEX calls_api" in plan(full, "SELECT * FROM calls WHERE api = 3")
    assert "calls_kernel" in plan(full, "SELECT * FROM calls WHERE kernel_id = 1")
    assert "calls_pid" in plan(full, f"SELECT * FROM calls WHERE pid = {ref['pid']} AND tid = {ref['pid']}")
    # the same rows and views either way
    for db in (plain, full):
        check_views_equal_report(db, report)
    assert sql(plain, "SELECT COUNT(*) AS n, SUM(start_ns) AS s FROM calls") == \
        sql(full, "SELECT COUNT(*) AS n, SUM(start_ns) AS s FROM calls")


def test_nccl_collectives_equal_each_ranks_accounting(tmp_path):
    """nccl_ranks, 2 ranks in 2 processes: each rank's collectives as rows, by operation, exact."""
    refs_dir = tmp_path / "refs"
    refs_dir.mkdir()
    db = tmp_path / "n.sqlite"
    tr = gp.Tracer(["--sqlite", str(db), "--", os.path.join(gp.WORKLOADS, "nccl_ranks"), "--ref-dir", str(refs_dir),
                    "--ranks", "2", "--iters", "2"], tmp_path / "out", env=gp.sim_env())
    assert tr.wait(timeout=180) == 0, tr.stderr
    report = tr.report()
    check_views_equal_report(db, report)
    refs = [json.loads(p.read_text()) for p in refs_dir.glob("*.json")]
    assert len(refs) == 2
    for ref in refs:
        rows = sql(db, "SELECT a.name AS api, COUNT(*) AS calls, SUM(c.result != 0) AS errors,"
                       " SUM(n.bytes) AS bytes, MIN(n.dtype) AS dtype, COUNT(DISTINCT n.comm) AS comms, n.comm"
                       " FROM nccl_calls n JOIN calls c ON c.id = n.call_id JOIN apis a ON a.id = c.api"
                       f" WHERE n.pid = {ref['pid']} GROUP BY a.name")
        want = {k: v for k, v in ref["nccl"].items() if "bytes" in v}  # the collectives
        assert want and {r["api"]: (r["calls"], r["errors"], r["bytes"], r["dtype"]) for r in rows} == \
            {k: (v["calls"], 0, v["bytes"], v["dtype"]) for k, v in want.items()}
        assert {(r["comms"], r["comm"]) for r in rows} == {(1, int(ref["comm"], 16))}
        comm = sql(db, f"SELECT comm, rank, nranks, destroyed FROM nccl_comms WHERE pid = {ref['pid']}")
        assert comm == [{"comm": int(ref["comm"], 16), "rank": ref["rank"], "nranks": 2, "destroyed": 1}]
    # one communicator across the ranks: the same comm_id, the same sequence numbers 1..n, each the same op
    per_rank = [sql(db, f"SELECT comm_id, seq, op, bytes FROM nccl_calls WHERE pid = {r['pid']} AND seq IS NOT NULL"
                        " ORDER BY seq") for r in refs]
    ids = {row["comm_id"] for rows in per_rank for row in rows}
    assert len(ids) == 1 and None not in ids
    n = sum(v["calls"] for k, v in refs[0]["nccl"].items() if k in ("ncclAllReduce", "ncclAllGather",
                                                                    "ncclReduceScatter", "ncclBroadcast"))
    assert [row["seq"] for row in per_rank[0]] == list(range(1, n + 1))
    assert per_rank[0] == per_rank[1]


@pytest.fixture(scope="module")
def busy_capture(tmp_path_factory):
    """bench_calls, 8,000 calls: a capture of several chunks. (report, capture path)."""
    tmp = tmp_path_factory.mktemp("sqlbusy")
    out = tmp / "out"
    rc, _, err = gp.run_gpuprobed(["-o", str(out), "--no-timeline", "--", os.path.join(gp.WORKLOADS, "bench_calls"),
                                   "--iters", "4000"], env=gp.sim_env(SIMGPU_KERNEL_US=0), timeout=120)
    assert rc == 0, err
    report = json.loads((out / "report.json").read_text())
    gp.check_no_loss(report)
    return report, out / "capture.gpz"


def test_busy_capture_views_equal_report(busy_capture, tmp_path):
    report, cap = busy_capture
    db = tmp_path / "b.sqlite"
    rc, _, err = gp.run_gpuprobed(["export", str(cap), "-o", str(db)])
    assert rc == 0, err
    check_views_equal_report(db, report)
    assert sql(db, "SELECT COUNT(*) AS n FROM calls WHERE parent_api IS NULL")[0]["n"] == \
        sum(p["api_calls"] for p in report["processes"])


def chunk_offsets(path):
    data = path.read_bytes()
    off, out = 216, []
    while off + 24 <= len(data):
        zlen = int.from_bytes(data[off + 12:off + 16], "little")
        out.append(off)
        off += 24 + zlen
    return out


def test_damaged_capture_exports_what_it_holds(busy_capture, tmp_path):
    report, cap = busy_capture
    full = sum(p["api_calls"] for p in report["processes"])
    chunks = chunk_offsets(cap)
    assert len(chunks) >= 3, "the capture should span several chunks"
    # cut in the middle of its second chunk
    cut = tmp_path / "cut.gpz"
    cut.write_bytes(cap.read_bytes()[:chunks[1] + 100])
    db = tmp_path / "cut.sqlite"
    rc, _, err = gp.run_gpuprobed(["export", str(cut), "-o", str(db)])
    assert rc == 0, err
    assert "exported what it holds" in err
    meta = {r["key"]: r["value"] for r in sql(db, "SELECT * FROM meta")}
    assert meta["complete"] == 0 and meta["cut"]
    n = sql(db, "SELECT COUNT(*) AS n FROM calls WHERE parent_api IS NULL")[0]["n"]
    assert 0 < n < full
    # the rebuilt report of the same cut file is what the views reproduce
    rc, _, err = gp.run_gpuprobed(["report", str(cut), "-o", str(tmp_path / "rep"), "--no-timeline"])
    assert rc == 0, err
    check_views_equal_report(db, json.loads((tmp_path / "rep" / "report.json").read_text()))
    # one corrupt chunk in the middle: skipped, counted, said
    bad = bytearray(cap.read_bytes())
    bad[chunks[1] + 24 + 10] ^= 0xFF
    broken = tmp_path / "broken.gpz"
    broken.write_bytes(bytes(bad))
    db = tmp_path / "broken.sqlite"
    rc, _, err = gp.run_gpuprobed(["export", str(broken), "-o", str(db)])
    assert rc == 0, err
    assert "1 corrupt chunk skipped" in err
    meta = {r["key"]: r["value"] for r in sql(db, "SELECT * FROM meta")}
    assert (meta["corrupt_chunks"], meta["complete"]) == (1, 1)
    assert 0 < sql(db, "SELECT COUNT(*) AS n FROM calls WHERE parent_api IS NULL")[0]["n"] < full


# ---- nsys-style views (docs/sql.md): SQL written from Nsight Systems' documentation, unchanged ----------------

# nsys's cuda_api_sum report (its documented columns and the name rule that strips CUPTI's `_vNNNN`), but for
# median, stdev and quartiles: functions nsys registers itself, not SQLite's
NSYS_API_SUM = """
WITH
    summary AS (
        SELECT nameId AS nameId, sum(end - start) AS total, count(*) AS num, avg(end - start) AS avg,
            min(end - start) AS min, max(end - start) AS max
        FROM CUPTI_ACTIVITY_KIND_RUNTIME
        WHERE globalTid / 0x1000000 % 0x1000000 = {pid}
        GROUP BY 1
    ),
    totals AS (SELECT sum(total) AS total FROM summary)
SELECT
    round(summary.total * 100.0 / (SELECT total FROM totals), 1) AS "Time (%)",
    summary.total AS "Total Time (ns)",
    summary.num AS "Num Calls",
    round(summary.avg, 1) AS "Avg (ns)",
    summary.min AS "Min (ns)",
    summary.max AS "Max (ns)",
    CASE substr(ids.value, -6, 2) WHEN '_v' THEN substr(ids.value, 1, length(value)-6) ELSE ids.value END AS "Name"
FROM summary LEFT JOIN StringIds AS ids ON ids.id == summary.nameId
ORDER BY 2 DESC
"""

# nsys's cuda_api_trace report: each call with its thread's name
NSYS_API_TRACE = """
SELECT
    api.start AS "Start (ns)", api.end - api.start AS "Duration (ns)",
    CASE substr(nstr.value, -6, 2) WHEN '_v' THEN substr(nstr.value, 1, length(nstr.value)-6) ELSE nstr.value END
        AS "Name",
    api.returnValue AS "Result", api.correlationId AS "CorrID",
    (api.globalTid >> 24) & 0xFFFFFF AS "Pid", (api.globalTid) & 0xFFFFFF AS "Tid",
    tname.priority AS "T-Pri", tstr.value AS "Thread Name", api.eventClass AS "eventClass"
FROM CUPTI_ACTIVITY_KIND_RUNTIME AS api
LEFT JOIN StringIds AS nstr ON nstr.id == api.nameId
LEFT JOIN ThreadNames AS tname ON tname.globalTid == api.globalTid
LEFT JOIN StringIds AS tstr ON tstr.id == tname.nameId
ORDER BY 1
"""


def check_nsys_views(db, report, ref):
    """The views with nsys's names, read by SQL from its documentation: the API summary equals api_summary
    (the runtime's and the driver's rows), the per-call trace equals the workload's own counts per API,
    errors and threads, the documented id formulas give its pid and tids, the session's start is the
    report's, and the backtrace tables join as nsys's do."""
    pid = ref["pid"]
    proc = gp.process(report, pid)
    cuda = [r for r in proc["cuda_api"] if r["family"] in ("cudart", "cuda")]
    assert cuda
    got = {r["Name"]: r for r in sql(db, NSYS_API_SUM.format(pid=pid))}
    assert {n: (r["Num Calls"], r["Total Time (ns)"], r["Min (ns)"], r["Max (ns)"]) for n, r in got.items()} == \
        {r["name"]: (r["calls"], r["total_ns"], r["min_ns"], r["max_ns"]) for r in cuda}
    for r in cuda:
        assert abs(got[r["name"]]["Avg (ns)"] - r["total_ns"] / r["calls"]) <= 0.05 + 1e-6, (r, got[r["name"]])  # round(, 1)
    total = sum(r["total_ns"] for r in cuda)
    assert all(r["Time (%)"] == round(100.0 * r["Total Time (ns)"] / total, 1) for r in got.values())

    rows = [r for r in sql(db, NSYS_API_TRACE) if r["Pid"] == pid]
    want = {a: (w["calls"], w["errors"]) for a, w in ref["cuda_api"].items()}
    calls, errors = collections.Counter(r["Name"] for r in rows), collections.Counter(r["Name"] for r in rows
                                                                                          if r["Result"] != 0)
    assert {a: (calls[a], errors[a]) for a in calls} == want
    assert collections.Counter(r["Tid"] for r in rows) == {int(t): n for t, n in ref["threads"].items()}
    names = {t["tid"]: t["name"] for t in proc["threads"]}
    assert all(r["Thread Name"] == names[r["Tid"]] and r["T-Pri"] is None for r in rows)
    layers = {r["name"]: r["family"] for r in cuda}
    assert all(r["eventClass"] == (0 if layers[r["Name"]] == "cudart" else 1) for r in rows)
    # the documented decoding of globalTid, and the session timeline: start + utcEpochNs is the wall time
    ids = sql(db, "SELECT DISTINCT globalTid / 0x1000000 % 0x1000000 AS PID, globalTid % 0x1000000 AS TID"
                  " FROM CUPTI_ACTIVITY_KIND_RUNTIME")
    assert {(r["PID"], r["TID"]) for r in ids} >= {(pid, int(t)) for t in ref["threads"]}
    [start] = sql(db, "SELECT utcEpochNs, utcTime FROM TARGET_INFO_SESSION_START_TIME")
    meta = {r["key"]: r["value"] for r in sql(db, "SELECT * FROM meta")}
    assert start["utcEpochNs"] == meta["start_realtime_ns"]
    assert start["utcTime"] == time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start["utcEpochNs"] // 10**9)) + \
        f".{start['utcEpochNs'] // 10**6 % 1000:03d}Z"
    # each call where calls has it, 0 at the capture's start; on the wall clock where the report's own
    # relation of its clocks puts it (two clock reads, a little apart: within 1 ms)
    wall = report["session"]["start_realtime_ns"] - report["session"]["start_mono_ns"]
    by_id = {r["id"]: r for r in sql(db, f"SELECT id, start_ns, end_ns FROM calls WHERE pid = {pid}")}
    for r in rows:
        c = by_id[r["CorrID"]]
        assert (r["Start (ns)"] + meta["start_mono_ns"], r["Duration (ns)"]) == (c["start_ns"], c["end_ns"] - c["start_ns"])
        assert abs(start["utcEpochNs"] + r["Start (ns)"] - (c["start_ns"] + wall)) < 1e6
    # "Select CUDA calls with backtraces", with the names joined rather than added by ALTER TABLE (a view
    # takes none): every traced launch's innermost frame has a symbol, as calls_named and frames_named say
    bt = sql(db, "SELECT api.correlationId AS id, s.value AS symbolName FROM CUDA_CALLCHAINS cc"
                 " JOIN CUPTI_ACTIVITY_KIND_RUNTIME api ON api.callchainId == cc.id"
                 " LEFT JOIN StringIds s ON s.id == cc.symbol WHERE cc.stackDepth = 0")
    leaf = sql(db, "SELECT c.id, COALESCE(f.function, f.symbol) AS fn FROM calls c JOIN stack_frames s"
                   " ON s.stack_id = c.stack_id AND s.depth = 0 JOIN frames_named f ON f.id = s.frame_id"
                   " JOIN apis a ON a.id = c.api WHERE c.parent_api IS NULL AND a.layer IN ('cudart', 'cuda')")
    assert bt and {(r["id"], r["symbolName"]) for r in bt} == {(r["id"], r["fn"]) for r in leaf}
    # what nsys has and gpuprobed does not: no GPU-side tables, no NVTX
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "NVTX_EVENTS"):
        r = subprocess.run(["sqlite3", str(db), f"SELECT * FROM {table}"], capture_output=True, text=True)
        assert r.returncode != 0 and f"no such table: {table}" in r.stderr


def test_nsys_style_sql_runs_unchanged(basic_run, tmp_path):
    """The runtime calls of basic_ops (basic_run), and a program calling the driver directly."""
    report, ref, out, live = basic_run
    check_nsys_views(live, report, ref)
    report, ref, tr = gp.trace(tmp_path, "driver_api", tracer_args=("--sqlite", str(tmp_path / "d.sqlite")))
    assert {r["family"] for r in gp.process(report, ref["pid"])["cuda_api"]} == {"cudart", "cuda"}
    check_nsys_views(tmp_path / "d.sqlite", report, ref)
