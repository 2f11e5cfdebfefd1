# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Stacks of code without frame pointers, unwound from .eh_frame, and Python frames merged into the
native stacks of the interpreter (issue 23, "Exactness and tests").

References are the workloads' own, taken on the line of each call:
- nofp_stacks (tests/workloads/nofp: an executable and a library, both -O2 -fomit-frame-pointer)
  takes glibc's backtrace() (an .eh_frame unwinder) in the function that makes each call, right before
  it: every traced call's stack must equal it frame for frame — frame 0 (the call site) by function and
  file, since backtrace() returns to another instruction of the same function; the callers by file and
  offset in the file, exactly, up to the thread's start; the workload's own frames by name too.
- py_stacks.py, under each Python there is (Debian's python3.11: the interpreter linked in the
  executable, no frame pointers; pyenv's 3.10-3.13: libpython3.X.so), calls the runtime through ctypes
  and, on the same line, glibc's backtrace() through ctypes (the same native stack, the same
  ffi_call_unix64 call site: checked against gdb's physical frames for every call of every version)
  and traceback.extract_stack(). Each call's Python frames (file, qualified name, line) must be the
  report's, innermost first; its native frames the report's, exactly, where each run of Python
  frames stands for one _PyEval_EvalFrameDefault frame of the reference; no stack may end before the
  thread's start. Counts exact per distinct stack.
Each is traced by attaching to the running workload (--pid) and once launched (-- CMD). The outputs
(folded files, the flame graph, speedscope's own importer, report.md) show the Python frames with the
labels of report.json; docs/report-format.md documents the frame fields."""
import glob
import json
import os
import re
import subprocess

import pytest

import gp
import pprof_tool

import stack_formats

PY_SCRIPT = os.path.join(gp.ROOT, "tests", "workloads", "py_stacks.py")
PYENV_ROOT = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
EVAL = ("[_PyEval_EvalFrameDefault: Python frames]",)  # a reference frame a run of Python frames replaces


def debian_python():
    path = "/usr/bin/python3.11"
    return (path, None) if os.path.exists(path) else (None, f"{path} is not installed")


def pyenv_python(minor):
    """pyenv's newest 3.<minor>.x that runs, or (None, why)."""
    found = sorted(glob.glob(os.path.join(PYENV_ROOT, "versions", f"3.{minor}.*", "bin", f"python3.{minor}")),
                   key=lambda p: [int(x) for x in re.findall(r"\d+", p.split("versions")[1])])
    if not found:
        return None, f"no pyenv Python 3.{minor} under {PYENV_ROOT}/versions"
    return found[-1], None


PYTHONS = [("debian-3.11", debian_python)] + [(f"pyenv-3.{m}", lambda m=m: pyenv_python(m)) for m in (10, 11, 12, 13)]


def stack_text(frames):
    """Leaf-first frames of a report stack in a line, for messages."""
    return " <- ".join(gp.frame_label(f) if "kind" in f else gp.folded_frame(f) for f in frames)


def report_stacks_text(proc, stacks, limit=4):
    def why(s):  # how the walk ended, as far as the report says
        more = "".join(f", {k} {s[k]!r}" for k in ("unwind_stop", "python") if s.get(k) is not None)
        return f"{s['calls']} calls, truncated {s['truncated']!r}{more}"
    return "\n".join(f"    [{why(s)}] {stack_text(gp.stack_frames(proc, s))}" for s in stacks[:limit]) or "    (none)"


def check_complete(proc, what):
    """Every stack reaches its thread's start: a clear list of those that do not."""
    st = proc["stacks"]
    short = [s for s in st["stacks"] if s["truncated"] is not None]
    if short:
        causes = {}
        for s in short:
            causes[s["truncated"]] = causes.get(s["truncated"], 0) + 1
        raise AssertionError(
            f"{what}: {len(short)} of {len(st['stacks'])} stacks end before the thread's start "
            f"(truncated: {causes}); e.g.\n{report_stacks_text(proc, short)}")


# ---- nofp_stacks: native code without frame pointers --------------------------------------------

def site_key(site):
    """A reference stack: (API, frame 0's function and file, the callers' (file, offset))."""
    f0 = site["frames"][0]
    return (site["api"], f0["function"], f0["file"], tuple((f["file"], f["file_offset"]) for f in site["frames"][1:]))


def report_site_key(proc, stack, op):
    frames = gp.stack_frames(proc, stack)
    if not frames:
        return (op["api"], None, None, ())
    return (op["api"], frames[0]["function"], frames[0]["file"],
            tuple((f["file"], f["file_offset"]) for f in frames[1:]))


def site_text(site):
    return " <- ".join(f["function"] or f"{os.path.basename(f['file'] or '?')}+0x{f['file_offset']:x}"
                       for f in site["frames"])


def check_nofp_stacks(report, ref):
    """Each call's stack is its backtrace(), frame for frame; one stack per reference stack; counts exact."""
    proc = gp.process(report, ref["pid"])
    nf = ref["nofp"]
    st = proc["stacks"]
    assert st["captured"] is True
    want = {}
    for site in nf["sites"]:
        key = site_key(site)
        assert key not in want, f"reference: two sites with one key {key}"
        want[key] = site
    # the walk reached every thread's start: the stacks are whole
    check_complete(proc, f"nofp_stacks (pid {ref['pid']}, -O2 -fomit-frame-pointer)")
    gp.check_merged_stacks_consistent(proc)
    got = {}
    for s in st["stacks"]:
        for op in s["ops"]:
            got.setdefault(report_site_key(proc, s, op), []).append((s, op))
    missing = [k for k in want if k not in got]
    if missing:
        lines = []
        for k in missing[:4]:
            site = want[k]
            near = [s for s in st["stacks"] if gp.stack_ops(s, site["api"]) and gp.stack_frames(proc, s)
                    and gp.stack_frames(proc, s)[0]["function"] == site["frames"][0]["function"]]
            lines.append(f"  {site['api']} x{site['calls']}: {site_text(site)}\n   the report's stacks from "
                         f"{site['frames'][0]['function']}:\n{report_stacks_text(proc, near)}")
        raise AssertionError(f"{len(missing)} of {len(want)} backtrace() stacks not in the report:\n"
                             + "\n".join(lines))
    extra = [k for k in got if k not in want]
    assert not extra, "stacks the workload did not take:\n" + report_stacks_text(proc, [got[k][0][0] for k in extra])
    own = {nf["exe"], nf["library"]}
    for key, site in want.items():
        rows = got[key]
        assert len(rows) == 1, f"{site_text(site)}: {len(rows)} report stacks"
        stack, op = rows[0]
        frames = gp.stack_frames(proc, stack)
        assert len(frames) == len(site["frames"]), f"{site_text(site)}: {stack_text(frames)}"
        for f, r in zip(frames, site["frames"]):
            if r["file"] in own:  # the workload's own functions, exported: named alike
                assert f["function"] == r["function"] and f["source"] == "elf", f"{site_text(site)}: frame {f} != {r}"
        assert frames[0]["file_offset"] != site["frames"][0]["file_offset"], \
            "frame 0 is the API's call site, not backtrace()'s"
        assert len(stack["ops"]) == 1, stack["ops"]
        want_op = {"api": site["api"], "kind": site["kind"], "calls": site["calls"], "errors": site["errors"],
                   "bytes": site["bytes"]}
        assert {k: op[k] for k in want_op} == want_op, f"{site_text(site)}: op {op} != {want_op}"
        if site["kernel"]:
            assert op["kernel"] == site["kernel"], op
    assert st["distinct"] == len(want) and st["truncated_stacks"] == 0
    assert st["calls"] == sum(s["calls"] for s in nf["sites"]) == \
        sum(a["calls"] for n, a in ref["cuda_api"].items() if n in gp.STACKED_APIS)
    return proc


@pytest.fixture(scope="module")
def nofp_run(tmp_path_factory):
    """nofp_stacks under gpuprobed --pid: (report, ref, out_dir)."""
    tmp = tmp_path_factory.mktemp("nofp")
    wl = gp.Workload("nofp_stacks", tmp)
    report, tr, _ = gp.trace_workload(wl, tmp)
    return report, wl.ref(), tr.out_dir


def test_nofp_counts_exact(nofp_run):
    """Every count of the workload's own accounting, nothing lost: whatever the stacks say, the calls
    are all there (the report of a process without frame pointers)."""
    report, ref, _ = nofp_run
    gp.check_all(report, ref)
    assert report["drops"]["stack_unread"] == 0 and report["drops"]["stacks_over_limit"] == 0


def test_nofp_stacks_equal_backtrace(nofp_run):
    """Each traced call's native stack is glibc's backtrace() of the call, frame for frame, through
    an executable and a library without frame pointers: pushed registers, a 12 KiB frame, recursion,
    a call back into the executable, a frame addressed from %rbp whose callee overwrites %rbp, a
    second thread (start_thread, clone3); complete, one stack per path, counts exact."""
    report, ref, _ = nofp_run
    check_nofp_stacks(report, ref)


def test_nofp_folded_files(nofp_run):
    """stacks.folded: one line per reference stack, spelled from its frames (the workload's functions
    by name; the C library's as the report names them), weighted by its calls."""
    report, ref, out = nofp_run
    proc = check_nofp_stacks(report, ref)
    own = {ref["nofp"]["exe"], ref["nofp"]["library"]}
    want = {}
    for s in proc["stacks"]["stacks"]:
        frames = gp.stack_frames(proc, s)
        for op in s["ops"]:
            site = next(x for x in ref["nofp"]["sites"] if site_key(x) == report_site_key(proc, s, op))
            names = [r["function"] if r["file"] in own else gp.folded_frame(f) for f, r in zip(frames, site["frames"])]
            line = ";".join([f"nofp_stacks (pid {ref['pid']})", *reversed(names), op["api"], op["op"]])
            want[line] = want.get(line, 0) + site["calls"]
    got = stack_formats.parse_folded(os.path.join(out, "stacks.folded"))
    assert got == want, f"stacks.folded: only in file {sorted(set(got) - set(want))[:3]}, " \
                        f"missing {sorted(set(want) - set(got))[:3]}"
    gp.check_folded_files_labels(out, report)


def launched(tmp_path, command):
    """gpuprobed -- COMMAND --ref FILE, to its end: (report, the command's reference)."""
    ref_path = str(tmp_path / "ref.json")
    tr = gp.Tracer(["--", *command, "--ref", ref_path], tmp_path / "out", env=gp.sim_env())
    tr.wait_tracing()
    rc = tr.wait()
    assert rc == 0, f"gpuprobed exited with {rc}: {tr.stderr}"
    with open(ref_path) as f:
        return tr.report(), json.load(f)


def test_nofp_launched(tmp_path):
    """gpuprobed -- nofp_stacks: the same stacks, exactly, from a process it started."""
    report, ref = launched(tmp_path, [os.path.join(gp.WORKLOADS, "nofp_stacks")])
    gp.check_all(report, ref)
    check_nofp_stacks(report, ref)


def build_id_of(path):
    return gp.build_id(path) if os.path.exists(path) else None


def symbol_at_offset(path, offset):
    """The function binutils' addr2line names at a file offset of path (the ELF's load segments turn
    it into an address): the independent reading of a pprof location's mapping."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f[:1] == ["LOAD"] and int(f[1], 16) <= offset < int(f[1], 16) + int(f[4], 16):
            vaddr = int(f[2], 16) + offset - int(f[1], 16)
            break
    else:
        return None
    p = subprocess.run(["addr2line", "-f", "-e", path, f"{vaddr:#x}"], capture_output=True, text=True, check=True)
    return p.stdout.splitlines()[0]


def test_nofp_pprof(nofp_run):
    """profile.pb.gz in go tool pprof: the folded files' stacks and weights line for line; every native
    frame an address in a mapping of its file with the file's build id (readelf's), where addr2line
    names the same function at the file offset pprof computes (the return address's call: offset - 1);
    the process's pid a label of every sample."""
    why = pprof_tool.missing()
    if why:
        pytest.skip(why)
    report, ref, out = nofp_run
    prof = pprof_tool.check_against_folded(out)
    assert {s["labels"].get("pid") for s in prof["samples"]} == {str(ref["pid"])}
    own = {ref["nofp"]["exe"], ref["nofp"]["library"]}
    checked = set()
    for loc in prof["locations"].values():
        if not loc["mapping"]:
            assert loc["address"] == 0 or loc["lines"][0][0] == "[unknown]", loc
            continue
        m = prof["mappings"][loc["mapping"]]
        assert m["start"] <= loc["address"] < m["limit"], (loc, m)
        assert m["build_id"] == (build_id_of(m["file"]) or ""), m
        if m["file"] in own and loc["lines"]:
            offset = loc["address"] - m["start"] + m["offset"]
            assert symbol_at_offset(m["file"], offset - 1) == loc["lines"][0][0], (m["file"], hex(offset), loc)
            checked.add(m["file"])
    assert checked == own, f"no symbolized frame checked in {sorted(own - checked)}"


def test_code_replaced_at_one_address(tmp_path):
    """reload_walk: libreloada.so and libreloadb.so (the same code, frames of another size: their rows for
    the one call site differ only in the CFA) loaded in turn at one address. A call made through the new
    library before the tracer has published it is walked no further than its call site (truncated
    no_mapping), never with the old library's rows or a thread's cached rows of them: every stack is
    either whole — sync_once, reload_relay, reload_round, main, the thread's start, as backtrace() saw
    them — or that call site alone. The calls 300 ms after each load (--settle-ms: time to publish,
    not a bound on anything) are walked whole. Counts exact."""
    lib_dir = os.path.join(gp.WORKLOADS, "reload")
    report, ref = launched(tmp_path, [os.path.join(gp.WORKLOADS, "reload_walk"), "--dir", lib_dir,
                                      "--rounds", "6", "--calls", "5", "--settle-ms", "300"])
    gp.check_all(report, ref)
    rounds = ref["reload"]
    if len({r["base"] for r in rounds}) != 1:
        pytest.skip("the loader placed the two libraries at different addresses here: no code was "
                    f"replaced at one address ({sorted({r['base'] for r in rounds})})")
    want = rounds[0]["frames"]
    assert want == ["reload_relay", "reload_round", "main"] and all(r["frames"] == want for r in rounds), rounds
    proc = gp.process(report, ref["pid"])
    st = proc["stacks"]
    whole = 0
    for s in st["stacks"]:
        frames = gp.stack_frames(proc, s)
        names = [f["function"] for f in frames]
        if s["truncated"] is None:
            assert names[:1 + len(want)] == ["sync_once"] + want and \
                all(gp.is_thread_root(f) for f in frames[1 + len(want):]), \
                f"a stack walked whole, not as backtrace() saw it: {report_stacks_text(proc, [s])}"
            whole += s["calls"]
        else:
            assert s["truncated"] == "no_mapping" and names == ["sync_once"], \
                f"a stack cut other than at its call site while the code was replaced: {report_stacks_text(proc, [s])}"
    assert st["calls"] == ref["cuda_api"]["cudaStreamSynchronize"]["calls"] == 6 * 2 * 5
    assert whole >= 6 * 5, f"{whole} calls walked whole; the {6 * 5} made {300} ms after their library was " \
                           "loaded should all be"


# ---- py_stacks.py: Python frames in native stacks --------------------------------------------

def py_label(p):
    """The label of a reference Python frame: "qualname (file.py:LINE)" (3.10 has no co_qualname:
    its code's name)."""
    return f"{p['qualname'] or p['function']} ({os.path.basename(p['file'])}:{p['line']})"


def ref_key(s):
    """(Python frames innermost first as (file, function, line); native frames leaf first as
    (file, offset), _PyEval_EvalFrameDefault as EVAL)."""
    python = tuple((p["file"], p["qualname"] or p["function"], p["line"]) for p in s["python"])
    native = tuple(EVAL if n["symbol"] == gp.PY_EVAL_FUNCTION else (n["file"], n["file_offset"]) for n in s["native"])
    return python, native


def report_key(proc, stack):
    """The same of a report stack: its Python frames, and its native frames with each run of Python
    frames as one EVAL."""
    python, native = [], []
    for f in gp.stack_frames(proc, stack):
        if gp.is_python_frame(f):
            python.append((f["file"], f["function"], f["line"]))
            if native[-1:] != [EVAL]:
                native.append(EVAL)
        else:
            native.append((f.get("file"), f.get("file_offset")))
    return tuple(python), tuple(native)


def py_ref_groups(ref):
    """{key: reference stack} over the reference's stacks (those alike but for the interpreter's own return
    addresses, as the first run of a call before CPython specializes it, add up: `variants` of them)."""
    version = tuple(ref["python"]["version"])
    groups = {}
    for s in ref["stacks"]:
        python, native = ref_key(s)
        evals = native.count(EVAL)
        # the reference itself: each interpreter frame runs at least one Python frame; before 3.11, one
        assert 1 <= evals <= len(python), f"reference: {evals} interpreter frames for {len(python)} Python frames"
        assert version >= (3, 11) or evals == len(python), "reference: 3.10 runs one Python frame per C frame"
        g = groups.setdefault((python, native), {"api": s["api"], "kind": s["kind"], "size_bytes": s["size_bytes"],
                                                 "direction": s["direction"], "thread": s["thread"], "calls": 0,
                                                 "errors": 0, "bytes": 0, "variants": 0, "python": s["python"]})
        assert g["api"] == s["api"] and g["size_bytes"] == s["size_bytes"], "reference: one call per line"
        for field in ("calls", "errors", "bytes"):
            g[field] += s[field]
        g["variants"] += 1
    return groups


def py_text(g):
    return " <- ".join(py_label(p) for p in g["python"])


def check_py_stacks(report, ref):
    """Each call's merged stack is the workload's: Python frames, native frames, counts."""
    proc = gp.process(report, ref["pid"])
    st = proc["stacks"]
    what = f"python {'.'.join(map(str, ref['python']['version']))} ({ref['python']['executable']}, pid {ref['pid']})"
    assert st["captured"] is True
    groups = py_ref_groups(ref)
    check_complete(proc, what)
    with_py = [s for s in st["stacks"] if any(gp.is_python_frame(f) for f in gp.stack_frames(proc, s))]
    assert len(with_py) == len(st["stacks"]), \
        f"{what}: {len(st['stacks']) - len(with_py)} of {len(st['stacks'])} stacks have no Python frame; e.g.\n" + \
        report_stacks_text(proc, [s for s in st["stacks"] if s not in with_py])
    gp.check_merged_stacks_consistent(proc)
    got = {}
    for s in st["stacks"]:
        got.setdefault(report_key(proc, s), []).append(s)
    missing = [k for k in groups if k not in got]
    if missing:
        lines = []
        for k in missing[:3]:
            g = groups[k]
            near = [s for s in st["stacks"] if gp.stack_ops(s, g["api"])]
            lines.append(f"  {g['api']} x{g['calls']} ({g['thread']} thread) from {py_text(g)}\n   the report's "
                         f"{g['api']} stacks:\n{report_stacks_text(proc, near, 3)}")
        raise AssertionError(f"{what}: {len(missing)} of {len(groups)} of the workload's stacks not in the report "
                             "(Python frames and native frames):\n" + "\n".join(lines))
    extra = [k for k in got if k not in groups]
    assert not extra, f"{what}: stacks the workload did not take:\n" + \
        report_stacks_text(proc, [got[k][0] for k in extra])
    for key, g in groups.items():
        stacks = got[key]
        # one stack, or one per variant the reference saw: never split further
        assert len(stacks) <= g["variants"], \
            f"{what}: {py_text(g)}: {len(stacks)} report stacks, the reference saw {g['variants']} native stacks"
        ops = [op for s in stacks for op in s["ops"]]
        assert {(op["api"], op["kind"]) for op in ops} == {(g["api"], g["kind"])}, f"{py_text(g)}: ops {ops}"
        for op in ops:
            if g["kind"] in ("copy", "memset", "alloc"):
                assert op["size_bytes"] == g["size_bytes"], f"{py_text(g)}: {op}"
            if g["direction"]:
                assert (op["direction"], op["host_memory"]) == (g["direction"], "pageable"), op
        total = {f: sum(op[f] for op in ops) for f in ("calls", "errors", "bytes")}
        assert total == {f: g[f] for f in ("calls", "errors", "bytes")}, \
            f"{what}: {g['api']} from {py_text(g)}: report {total}, workload {g}"
    assert st["calls"] == sum(g["calls"] for g in groups.values()) == \
        sum(a["calls"] for n, a in ref["cuda_api"].items() if n in gp.STACKED_APIS)
    # held once per record that brought a code object new to the kernel: at least the first record
    # with Python frames, at most once per code object of its stacks (the only traced Python process)
    codes = {f["address"] for f in st["frames"] if gp.is_python_frame(f)}
    holds = report["session"]["unwind"]["python_holds"]
    assert 1 <= holds <= len(codes), f"{what}: held {holds} times, {len(codes)} code objects on its stacks"
    # the registry of holds counted each of those stops apart (an entry written by the kernel with
    # each, forgotten by the SIGCONT the record brought): the same number, and none left timed out
    reg = report["session"]["holds"]
    assert reg["python"] == holds and not reg["timed_out"], f"{what}: {reg}"
    return proc, groups, got


def check_py_counts(report, ref):
    proc = gp.process(report, ref["pid"])
    calls = {r["name"]: (r["calls"], r["errors"]) for r in proc["cuda_api"] if r["calls"]}
    assert calls == {n: (a["calls"], a["errors"]) for n, a in ref["cuda_api"].items()}, f"calls {calls}"
    gp.check_threads(proc, ref)
    gp.check_no_loss(report)
    assert report["drops"]["stack_unread"] == 0 and report["drops"]["stacks_over_limit"] == 0
    return proc


def find_python(finder):
    path, why = finder()
    if not path:
        pytest.skip(why)
    return path


@pytest.fixture(scope="module", params=PYTHONS, ids=[p[0] for p in PYTHONS])
def py_run(request, tmp_path_factory):
    """py_stacks.py under one Python, traced by gpuprobed --pid: (report, ref, out_dir)."""
    python = find_python(request.param[1])
    tmp = tmp_path_factory.mktemp("py_stacks")
    wl = gp.ScriptWorkload(python, PY_SCRIPT, tmp)
    report, tr, _ = gp.trace_workload(wl, tmp)
    return report, wl.ref(), tr.out_dir


def test_python_counts_exact(py_run):
    """Calls per API and per thread as the workload counted them, nothing lost."""
    report, ref, _ = py_run
    check_py_counts(report, ref)


def test_python_frames_in_native_stacks(py_run):
    """Each call's stack: its Python frames as traceback.extract_stack() took them on the line of the
    call (file, qualified name, line), its native frames as backtrace() took them, unbroken from the
    runtime's call site (libffi) to the interpreter's main or the thread's start; exact counts per
    distinct stack."""
    report, ref, _ = py_run
    check_py_stacks(report, ref)


def label_weights(groups):
    """{label of a Python frame: calls of the stacks it is in} over the reference."""
    weights = {}
    for g in groups.values():
        labels = {py_label(p) for p in g["python"]}
        assert len(labels) == len(g["python"]), f"reference: a label twice in one stack {py_text(g)}"
        for label in labels:
            weights[label] = weights.get(label, 0) + g["calls"]
    return weights


def in_order(labels, frames):
    """labels appear in frames in this order, each Python frame of frames among them (no other)."""
    py = [f for f in frames if f in set(labels) or re.search(r" \([^()]*\.py:\d+\)$", f)]
    return py == labels


def test_python_frames_in_pprof(py_run):
    """profile.pb.gz in go tool pprof: the folded files' stacks and weights line for line, and each
    Python frame of the reference a function with the script's file and the frame's line there."""
    why = pprof_tool.missing()
    if why:
        pytest.skip(why)
    report, ref, out = py_run
    prof = pprof_tool.check_against_folded(out)
    lines = {ln for loc in prof["locations"].values() for ln in loc["lines"] if ln[1]}
    for g in py_ref_groups(ref).values():
        for p in g["python"]:
            want = (p["qualname"] or p["function"], p["file"], p["line"])
            assert want in lines, f"{want} not among the profile's Python lines {sorted(lines)[:4]}"
    assert all(not loc["mapping"] and loc["address"] == 0 for loc in prof["locations"].values()
               if loc["lines"] and loc["lines"][0][1]), "a Python frame with an address or a mapping"


def test_python_frames_in_outputs(py_run):
    """The folded files, the flame graph, speedscope (its own importer) and report.md's "Who launches
    what" show the Python frames, labelled "qualname (file.py:LINE)", with the reference's weights."""
    report, ref, out = py_run
    proc, groups, got = check_py_stacks(report, ref)
    # folded: one line per reference stack, its calls; the three files say what report.json says
    want = {}
    for key, g in groups.items():
        for s in got[key]:
            for op in s["ops"]:
                line = gp.folded_stack_labels(proc, s, op)
                want[line] = want.get(line, 0) + op["calls"]
    assert sum(want.values()) == sum(g["calls"] for g in groups.values())
    folded = stack_formats.parse_folded(os.path.join(out, "stacks.folded"))
    assert folded == want, f"stacks.folded: only in file {sorted(set(folded) - set(want))[:2]}, " \
                           f"missing {sorted(set(want) - set(folded))[:2]}"
    for key, g in groups.items():  # the labels are the reference's, in its order (native frames between:
        labels = list(reversed([py_label(p) for p in g["python"]]))  # a constructor called from C)
        assert any(in_order(labels, line.split(";")) for line in want), py_text(g)
    gp.check_folded_files_labels(out, report)
    weights = label_weights(groups)
    # the flame graph: every Python frame drawn, its boxes weighing the calls made through it
    boxes = stack_formats.validate_flamegraph_svg(os.path.join(out, "flamegraph.svg"))
    drawn = {}
    for name, w in boxes:
        drawn[name] = drawn.get(name, 0) + w
    assert {k: drawn.get(k) for k in weights} == weights, "flamegraph.svg: Python frames' weights"
    # speedscope: the file, then what speedscope's own importer makes of it
    ss = os.path.join(out, "speedscope.json")
    doc = stack_formats.validate_speedscope(ss)
    names = {f["name"] for f in doc["shared"]["frames"]}
    assert set(weights) <= names, f"speedscope.json lacks {sorted(set(weights) - names)[:3]}"
    loaded = stack_formats.load_in_speedscope(ss)
    if isinstance(loaded, str):
        pytest.skip(f"speedscope.json not loaded in speedscope: {loaded}")
    by_calls = next(p for p in loaded["profiles"] if p["name"] == "GPU work by calls")
    assert by_calls["totalWeight"] == proc["stacks"]["calls"]
    assert {k: by_calls["frames"].get(k) for k in weights} == weights, "speedscope: Python frames' weights"
    # report.md: the heaviest path of each kind of transfer, by its innermost Python frame
    with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
        md = f.read()
    start = md.index("### Who launches what")
    end = re.search(r"\n#{1,3} ", md[start + 1:])
    section = md[start:start + 1 + end.start()] if end else md[start:]
    heaviest = {}
    for g in groups.values():
        if g["direction"]:
            if g["calls"] > heaviest.get(g["direction"], {"calls": 0})["calls"]:
                heaviest[g["direction"]] = g
    assert set(heaviest) == {"HtoD", "DtoH"}
    for direction, g in heaviest.items():
        assert py_label(g["python"][0]) in section, \
            f"report.md 'Who launches what' does not show {py_label(g['python'][0])} ({direction}):\n{section}"


def test_python_launched(tmp_path):
    """gpuprobed -- python3.11 py_stacks.py (Debian's, the interpreter in the executable): the runtime
    loaded by ctypes after the start, the same stacks exactly."""
    report, ref = launched(tmp_path, [find_python(debian_python), PY_SCRIPT])
    check_py_counts(report, ref)
    check_py_stacks(report, ref)


# ---- a busy machine: the interpreter looked at before it can be verified -----------------------------

LAUNCHES_BUSY = 10  # launches per Python beside the burner: 2 of 6 lost every frame before the fix


def venv_python(tmp_path_factory):
    """A venv (python -m venv --without-pip) over pyenv's newest libpython build, as users make one:
    its bin/python a link to the base interpreter, sys.prefix its own."""
    for minor in (13, 12, 11, 10):
        base, _ = pyenv_python(minor)
        if base:
            break
    else:
        return None, f"no pyenv Python 3.10-3.13 under {PYENV_ROOT}/versions to make a venv from"
    where = str(tmp_path_factory.mktemp("venv") / "venv")
    p = subprocess.run([base, "-m", "venv", "--without-pip", where], capture_output=True, text=True)
    if p.returncode:
        return None, f"{base} -m venv: {p.stderr.strip()}"
    return os.path.join(where, "bin", "python"), None


@pytest.fixture(scope="module")
def cpu_burner():
    """A process that keeps one CPU busy for the module's tests (a GPU node's data loaders)."""
    p = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    yield p
    p.kill()
    p.wait()


def check_py_walked(report, ref, what):
    proc = gp.process(report, ref["pid"])
    py = proc.get("python") or {}
    assert py.get("frames_walked") is True, f"{what}: Python frames not walked: {py}"
    return py


@pytest.mark.parametrize("which", PYTHONS + [("venv", None)], ids=[p[0] for p in PYTHONS] + ["venv"])
def test_python_frames_beside_a_cpu_burner(which, cpu_burner, tmp_path, tmp_path_factory):
    """Each CPython launched LAUNCHES_BUSY times (gpuprobed -- python py_stacks.py) while another
    process keeps a CPU busy, then attached by --pid once it runs: every run has every Python frame,
    line for line, against traceback.extract_stack(), and counts exact. Caught at its exec, the
    interpreter is looked at before the loader has relocated it (its types' names read 0 then); that
    look must never be taken as a verdict (issue 34)."""
    name, finder = which
    python = find_python(finder if finder else lambda: venv_python(tmp_path_factory))
    retried = 0
    for i in range(LAUNCHES_BUSY):
        run = tmp_path / f"launch{i}"
        run.mkdir()
        report, ref = launched(run, [python, PY_SCRIPT])
        py = check_py_walked(report, ref, f"{name} launch {i}")
        retried += "too early" in py["note"]
        check_py_counts(report, ref)
        check_py_stacks(report, ref)
    run = tmp_path / "attached"
    run.mkdir()
    wl = gp.ScriptWorkload(python, PY_SCRIPT, run)
    report, _, _ = gp.trace_workload(wl, run)
    ref = wl.ref()
    py = check_py_walked(report, ref, f"{name} attached")
    assert "too early" not in py["note"], f"{name}: a running interpreter was looked at too early: {py}"
    check_py_counts(report, ref)
    check_py_stacks(report, ref)
    print(f"{name}: {retried} of {LAUNCHES_BUSY} launches looked at the interpreter too early first")


# ---- the documentation of report.json ------------------------------------------------------------

def test_report_format_documents_frame_fields():
    """docs/report-format.md's "stacks" section says what a frame's kind and line are, that a Python
    frame's source is "python", and each way a stack can end early."""
    with open(os.path.join(gp.ROOT, "docs", "report-format.md"), encoding="utf-8") as f:
        doc = f.read()
    start = doc.index("### `stacks`")
    section = doc[start:doc.index("\n## ", start)]
    fields = re.findall(r"^\|([^|]*)\|", section, re.M)  # the first cell of each row
    assert any("`frames[].kind`" in c for c in fields), "docs/report-format.md stacks: no row for frames[].kind"
    assert any("`frames[].line`" in c or ("frames[]" in c and "`line`" in c) for c in fields), \
        "docs/report-format.md stacks: no row for frames[].line"
    for word in ('"python"', '"native"', *(f'"{t}"' for t in gp.TRUNCATIONS if t)):
        assert word in section, f"docs/report-format.md stacks: {word} not described"
