# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""GPU jobs in containers, traced from the host with a real container runtime (podman, runc,
overlay storage): containers of one image share each library's layer file, which the kernel
probes once; every container's calls are counted once, exactly as its workload counted them."""
import json
import os

import pytest

import containers as ct
import gp

WHY_NOT = ct.why_not()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"no container runtime: {WHY_NOT}")


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    name = ct.build_image(tmp_path_factory.mktemp("image"), f"localhost/gp-e2e-{ct.TOKEN}:1")
    yield name
    ct.remove_image(name)


def check_container(report, c, ref=None):
    """The container's workload exactly as it counted itself: its process found by the host pid
    podman gives, its namespace pid the one the workload saw."""
    ref = dict(ref or c.ref())
    ns_pid = ref["pid"]
    ref["pid"] = c.pid
    # its threads as it named them, in its namespace: the main thread's id is its pid
    assert list(ref["threads"]) == [str(ns_pid)], "a workload of one thread"
    ref["threads"] = {str(c.pid): ref["threads"][str(ns_pid)]}
    proc = gp.check_all(report, ref, session_drops=False, host_path=ct.host_path)
    return proc, ns_pid


def probes_once(report):
    """Each library file's probes placed once: one instrumentation row per (target, api, kind)."""
    seen = {}
    for r in report["instrumentation"]:
        key = (r["target"], r["api"], r["kind"])
        seen[key] = seen.get(key, 0) + 1
    return {k: n for k, n in seen.items() if n > 1}


def test_three_containers_of_one_image_at_once(image, tmp_path):
    """Three containers of one image, started before gpuprobed --all, run their calls at the same
    time: each exact, the library files probed once (the kernel's hit counters equal the sum of
    the three workloads' calls)."""
    cs = [ct.Container(image, tmp_path / "refs", "basic_ops") for _ in range(3)]
    try:
        tr = gp.Tracer(["--all"], tmp_path / "out")
        tr.wait_tracing()
        report = gp.run_and_stop(cs, tr)
        refs = []
        for c in cs:
            check_container(report, c)
            refs.append(c.ref())
        assert not probes_once(report), probes_once(report)
        targets = {lib["path"] for c in cs for lib in gp.process(report, c.pid)["libraries"]}
        gp.check_instrumentation_sum(report, targets, refs)
        gp.check_no_loss(report)
    finally:
        for c in cs:
            c.kill()


def test_containers_started_while_tracing(image, tmp_path):
    """gpuprobed --all first; then three containers of the image start (at once) and run: each is
    held at its first mapping of the runtime and traced whole, exact."""
    tr = gp.Tracer(["--all"], tmp_path / "out")
    cs = []
    try:
        tr.wait_tracing()
        cs = [ct.Container(image, tmp_path / "refs", "basic_ops") for _ in range(3)]
        report = gp.run_and_stop(cs, tr)
        for c in cs:
            proc, ns_pid = check_container(report, c)
            assert proc["exited"]
            check_named(proc, c, ns_pid)  # read while it ran: named after it is gone
        gp.check_no_loss(report)
        assert not probes_once(report), probes_once(report)
    finally:
        for c in cs:
            c.kill()
        if tr.proc.poll() is None:
            tr.proc.kill()


def in_report(report, c, ns_pid):
    """The process of container c whose pid in its namespace is ns_pid, as the report names it."""
    rows = [p for p in report["processes"]
            if (p.get("container") or {}).get("name") == c.name and p["ns_pid"] == ns_pid]
    assert len(rows) == 1, f"{c.name} pid {ns_pid}: {[(p['pid'], p.get('container'), p['ns_pid']) for p in report['processes']]}"
    return rows[0]


def check_named(proc, c, ns_pid):
    """The report names the process's container as podman does, and its pid inside it."""
    want = {"runtime": "podman", "id": c.container_id(), "name": c.name}
    assert {k: proc["container"][k] for k in want} == want, proc["container"]
    assert proc["container"]["pod"] is None
    assert proc["ns_pid"] == ns_pid


def test_container_option_traces_that_container_only(image, tmp_path):
    """--container by name and by a 12-digit id prefix: those containers' processes exact and named,
    including one that joins a container later (podman exec); a third container of the same image and
    a host process running the same workload at the same time are not traced at all."""
    a = ct.Container(image, tmp_path / "refs", "basic_ops", args=("--hold",))
    b, c = (ct.Container(image, tmp_path / "refs", "basic_ops") for _ in range(2))
    host = gp.Workload("basic_ops", tmp_path)
    try:
        tr = gp.Tracer(["--container", a.name, "--container", b.container_id()[:12]], tmp_path / "out")
        tr.wait_tracing()
        for w in (a, b, c, host):
            w.release()
        for w in (a, b, c, host):
            w.wait_done()
        for w in (b, c, host):
            w.finish()
        # a process that joins container a while it runs: found at its first mapping of the runtime
        r = ct.podman("exec", a.name, f"{ct.IMAGE_ROOT}/workloads/basic_ops", "--ref", "/out/ref-exec.json")
        assert r.returncode == 0 and r.stdout.strip().endswith("DONE"), r
        a.finish()
        tr.signal()
        assert tr.wait() == 0, tr.stderr
        report = tr.report()
        for w in (a, b):
            proc, ns_pid = check_container(report, w)
            check_named(proc, w, ns_pid)
            assert proc["traced_because"] == "container"
        with open(tmp_path / "refs" / "ref-exec.json") as f:
            ref = json.load(f)
        joined = in_report(report, a, ref["pid"])
        check_named(joined, a, ref["pid"])
        ref = dict(ref, pid=joined["pid"], threads={str(joined["pid"]): ref["threads"][str(ref["pid"])]})
        gp.check_all(report, ref, session_drops=False, host_path=ct.host_path)
        traced = {p["pid"] for p in report["processes"]}
        assert c.pid not in traced and host.pid not in traced, traced
        assert {p["pid"] for p in report["processes"]} == {a.pid, b.pid, joined["pid"]}
        gp.check_no_loss(report)
        # the containers' summary: each container's processes and calls
        rows = {r["name"]: r for r in report["containers"]}
        assert set(rows) == {a.name, b.name}
        assert rows[a.name]["processes"] == sorted([a.pid, joined["pid"]])
        assert rows[a.name]["calls"] == gp.process(report, a.pid)["api_calls"] + joined["api_calls"]
        copied = [sum(t["bytes"] for t in r["transfers"]) for r in (a.ref(), ref)]
        assert rows[a.name]["bytes"] == sum(copied) and rows[b.name]["bytes"] == copied[0], (rows, copied)
        assert "## Containers" in tr.report_md() and a.name in tr.report_md()
    finally:
        for w in (a, b, c):
            w.kill()
        host.kill()


def test_container_option_waits_for_the_container(image, tmp_path):
    """--container NAME of a container not running yet: gpuprobed says it waits, and traces the
    container once it starts (held at its first mapping of the runtime), exact."""
    name = f"gp-{ct.TOKEN}-later"
    tr = gp.Tracer(["--container", name], tmp_path / "out")
    c = None
    try:
        tr.wait_tracing()
        c = ct.Container(image, tmp_path / "refs", "basic_ops", name=name)
        report = gp.run_and_stop([c], tr)
        proc, ns_pid = check_container(report, c)
        check_named(proc, c, ns_pid)
        assert [p["pid"] for p in report["processes"]] == [c.pid]
    finally:
        if c:
            c.kill()
        if tr.proc.poll() is None:
            tr.proc.kill()


def run_three(image, tmp_path, cs):
    """Three containers of one image running basic_ops, each to its end (appended to cs as they are
    made, for the caller to kill)."""
    cs += [ct.Container(image, tmp_path / "refs", "basic_ops") for _ in range(3)]
    for c in cs:
        c.release()
    for c in cs:
        c.wait_done()
        c.finish()


def test_daemon_names_every_container(image, tmp_path):
    """The daemon (always on, every CUDA process) with three containers of one image at once: each
    container's series carry its name, and equal its workload's own accounting."""
    from test_daemon import CURL, Daemon, check_metrics, parse, series, wait_until
    if not CURL:
        pytest.skip("curl is not installed (make deps installs it): the tests scrape with it")
    d = Daemon(tmp_path)
    cs = []
    try:
        run_three(image, tmp_path, cs)

        def all_exited():
            s = parse(d.scrape())
            return all(series(s, "gpuprobed_process_exited", pid=str(c.pid)) and
                       series(s, "gpuprobed_process_exited", pid=str(c.pid))[0][1] == 1 for c in cs) and s
        s = wait_until(all_exited)
        assert s, "the daemon did not report the three containers' processes as exited"
        for c in cs:
            ref = dict(c.ref(), pid=c.pid)
            check_metrics(s, str(c.pid), ref)
            labels = series(s, "gpuprobed_process_exited", pid=str(c.pid))[0][0]
            # "" is an absent label to Prometheus: a container not in a pod has none
            assert (labels.get("container"), labels.get("pod"), labels.get("namespace")) == (c.name, None, None), labels
        assert d.stop() == 0, d.stderr
        with open(d.state / "reports" / "current" / "report.json") as f:
            report = json.load(f)
        for c in cs:
            # the daemon counts in the kernel (--aggregate): calls, errors and bytes, not kernel names
            ref = c.ref()
            proc = gp.process(report, c.pid)
            gp.check_api(proc, dict(ref, pid=c.pid))
            check_named(proc, c, ref["pid"])
        assert not probes_once(report), probes_once(report)
    finally:
        for c in cs:
            c.kill()
        d.stop()


def test_daemon_groups_by_container(image, tmp_path):
    """process_labels = group (the shipped default) with three containers of one image and one program:
    three series sets, one per container (its name the label, no pid), each equal to its workload's
    own accounting."""
    from test_daemon import CURL, PER_PROCESS, Daemon, parse, series, wait_until
    if not CURL:
        pytest.skip("curl is not installed (make deps installs it): the tests scrape with it")
    d = Daemon(tmp_path, metrics__process_labels="group")
    cs = []
    try:
        run_three(image, tmp_path, cs)
        want = {c.name: {a: r["calls"] for a, r in c.ref()["cuda_api"].items()} for c in cs}

        def calls(s):
            return {c.name: {lab["api"]: v for lab, v in series(s, "gpuprobed_api_calls_total", container=c.name)}
                    for c in cs}
        assert wait_until(lambda: calls(parse(d.scrape())) == want), (calls(parse(d.scrape())), want)
        s = parse(d.scrape())
        assert all("pid" not in lab for n, lab, _ in s if n.startswith(PER_PROCESS)), "a series with a pid"
        for c in cs:
            assert len(series(s, "gpuprobed_api_calls_total", container=c.name, api="cudaMalloc")) == 1
    finally:
        for c in cs:
            c.kill()
        d.stop()


@pytest.fixture(scope="module")
def py_image(tmp_path_factory):
    """An image with pyenv's CPython 3.12 at its own prefix (the host's python3 is Debian's 3.11)."""
    from test_stacks_real import pyenv_python
    python, why = pyenv_python(12)
    if not python:
        pytest.skip(why)
    prefix = os.path.dirname(os.path.dirname(python))
    name = ct.build_image(tmp_path_factory.mktemp("pyimage"), f"localhost/gp-e2e-py-{ct.TOKEN}:1",
                          python_prefix=prefix)
    yield name, python
    ct.remove_image(name)


def test_python_frames_of_a_containers_own_python(py_image, tmp_path):
    """A container whose image has its own CPython (pyenv's 3.12; the host's is Debian's 3.11) runs
    py_stacks.py: its calls exact per API and per thread, and every call's stack has its Python
    frames (file, qualified name, line) and native frames as the workload took them, read from the
    container's own interpreter."""
    from test_stacks_real import PY_SCRIPT, check_py_stacks
    image, python = py_image
    c = ct.Container(image, tmp_path / "refs", None, name=None, env={"LD_LIBRARY_PATH": f"{ct.IMAGE_ROOT}/simgpu"},
                     command=[python, f"{ct.IMAGE_ROOT}/src/{os.path.basename(PY_SCRIPT)}"])
    tr = gp.Tracer(["--container", c.name], tmp_path / "out")
    try:
        tr.wait_tracing()
        report = gp.run_and_stop([c], tr)
        ref = c.ref()
        proc = gp.process(report, c.pid)
        check_named(proc, c, ref["pid"])
        assert proc["python"]["frames_walked"] and proc["python"]["version"].startswith("3.12"), proc["python"]
        calls = {r["name"]: (r["calls"], r["errors"]) for r in proc["cuda_api"] if r["calls"]}
        assert calls == {n: (a["calls"], a["errors"]) for n, a in ref["cuda_api"].items()}, calls
        # its threads by their calls (the workload names them by its own namespace's thread ids)
        assert sorted(t["calls"] for t in proc["threads"] if t["calls"]) == sorted(ref["threads"].values())
        gp.check_no_loss(report)
        check_py_stacks(report, dict(ref, pid=c.pid))
    finally:
        c.kill()
        if tr.proc.poll() is None:
            tr.proc.kill()
