# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Attach modes and discovery: --name, --all, -- CMD, libraries loaded late, static runtimes,
forks and execs, copies of the library side by side, and nothing left attached afterwards.

Every process is compared exactly with its own reference (wl.h), and the kernel-side probe hit
counters with the sum of the references of every process sharing the probed file.

Other CUDA processes may run on the machine meanwhile (a developer's, another test's): --name
sessions look for a name only this test's process has (gp.unique_name), --all sessions trace the
others too and the checks look at this test's own processes."""
import glob
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

import gp

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


def launch(tmp_path, argv, env=None, timeout=120, extra=()):
    """gpuprobed -- argv: (exit status, its stdout (the command's), its stderr, report or None)."""
    out = tmp_path / "out"
    p = subprocess.run([gp.GPUPROBED, *extra, "-o", str(out), "--", *argv], capture_output=True, text=True,
                       timeout=timeout, env=env if env is not None else gp.sim_env(), input="go\n")
    report = None
    if os.path.exists(out / "report.json"):
        with open(out / "report.json") as f:
            report = json.load(f)
    return p.returncode, p.stdout, p.stderr, report


def refs_in(directory):
    refs = {}
    for path in glob.glob(os.path.join(str(directory), "*.json")):
        with open(path) as f:
            ref = json.load(f)
        refs[ref["pid"]] = ref
    return refs


def check_processes(report, refs):
    """Each process exactly as its reference says; the shared probes' hits are the sum."""
    for ref in refs.values():
        gp.check_all(report, ref, exact_peak=True)
    targets = {lib["path"] for p in report["processes"] for lib in p["libraries"]}
    gp.check_instrumentation_sum(report, targets, list(refs.values()))


def wait_until(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def run_basic_ops(tmp_path, path=None):
    """Runs basic_ops (or the link to it at path) to the end on the simulator (not traced by the
    test itself); its reference, whose "pid" is the process's."""
    ref_path = tmp_path / f"ref-{time.monotonic_ns()}.json"
    wl = subprocess.run([path or os.path.join(gp.WORKLOADS, "basic_ops"), "--ref", str(ref_path)], env=gp.sim_env(),
                        capture_output=True, text=True, timeout=60)
    assert wl.returncode == 0, wl.stderr
    with open(ref_path) as f:
        return json.load(f)


def stop(tr):
    """Ctrl-C to a tracer that waits for more (--name, --all): it must write its report and exit 0."""
    try:
        tr.signal(signal.SIGINT)
        assert tr.wait() == 0, tr.stderr
    finally:
        if tr.proc.poll() is None:
            tr.proc.kill()


# ---- -- CMD -------------------------------------------------------------------------------

def test_launch_forks_four_workers_all_traced_exactly(tmp_path):
    """A parent that forks 4 workers under -- CMD: 5 processes, exact counts each, the
    command's exit status passed through."""
    refdir = tmp_path / "refs"
    refdir.mkdir()
    rc, out, err, report = launch(tmp_path, [os.path.join(gp.WORKLOADS, "fork_workers"), "--ref-dir",
                                             str(refdir), "--exit-status", "3"])
    assert rc == 3, err
    pids = {int(line.split()[1]): line.split()[2] for line in out.splitlines() if line.startswith("PROC ")}
    assert len(pids) == 5
    refs = refs_in(refdir)
    assert set(refs) == set(pids)
    assert sorted(p["pid"] for p in report["processes"]) == sorted(pids)
    check_processes(report, refs)
    parent = next(pid for pid, role in pids.items() if role == "parent")
    for p in report["processes"]:
        assert p["traced_from_start"] is True and p["exited"] is True
        if p["pid"] == parent:
            assert p["traced_because"] == "launched" and p["parent_pid"] is None
        else:
            assert p["traced_because"] == "fork" and p["parent_pid"] == parent
    assert report["session"]["mode"] == "launch"
    assert report["session"]["launch"]["exit_status"] == 3
    # the machine-wide summary against the workloads' own accounting
    summary = report["summary"]
    assert summary["processes"] == 5 and summary["processes_exited"] == 5
    assert summary["api_calls"] == sum(c["calls"] for r in refs.values() for c in r["cuda_api"].values())
    assert summary["api_errors"] == sum(c["errors"] for r in refs.values() for c in r["cuda_api"].values())
    assert summary["kernel_launches"] == sum(n for r in refs.values() for n in r["kernels"].values())
    want = {}
    for r in refs.values():
        for t in r["transfers"]:
            calls, nbytes = want.get(t["direction"], (0, 0))
            want[t["direction"]] = (calls + t["calls"], nbytes + t["bytes"])
    assert {t["direction"]: (t["calls"], t["bytes"]) for t in summary["transfers"]} == want


@pytest.mark.parametrize("links", ["kernel_default", "perf_event"])
def test_launch_follows_exec_into_a_static_runtime(tmp_path, links):
    """Worker 0 execs a program linked with a static archive of the simulated runtime: the
    executable's own cudaLaunchKernel & co. are probed before it runs (libraries[].static).
    With perf-event links (kernels before 6.6): the parent maps the driver library again right after
    its workers, its last users, exited; removing and placing its 65 probes again took seconds, the
    parent's hold timed out and its first calls were lost: the probes stay a while (LINGER_S)."""
    refdir = tmp_path / "refs"
    refdir.mkdir()
    static = os.path.join(gp.WORKLOADS, "basic_ops_static")
    extra = ("--no-uprobe-multi",) if links == "perf_event" else ()
    rc, out, err, report = launch(tmp_path, [os.path.join(gp.WORKLOADS, "fork_workers"), "--ref-dir",
                                             str(refdir), "--exec", static, "--ref", str(refdir / "exec.json")],
                                  extra=extra)
    assert rc == 0, err
    refs = refs_in(refdir)
    assert len(refs) == 5
    check_processes(report, refs)
    exec_pid = next(int(line.split()[1]) for line in out.splitlines() if line.startswith("PROC ") and "exec" in line)
    proc = gp.process(report, exec_pid)
    assert proc["execs"] == 1 and proc["comm"] == "basic_ops_stati"
    assert {"path": static, "family": "cudart", "static": True, "build_id": gp.build_id(static)} in proc["libraries"]


def test_static_archive_of_the_simulator(tmp_path):
    """A C program linked statically against the simulated runtime: no libcudart.so at all."""
    static = os.path.join(gp.WORKLOADS, "basic_ops_static")
    ref_path = tmp_path / "ref.json"
    rc, _, err, report = launch(tmp_path, [static, "--ref", str(ref_path)])
    assert rc == 0, err
    with open(ref_path) as f:
        ref = json.load(f)
    proc = gp.check_all(report, ref)
    assert proc["libraries"] == [{"path": static, "family": "cudart", "static": True,
                                  "build_id": gp.build_id(static)}]


@pytest.mark.parametrize("cudart", ["static", "shared"])
def test_nvcc_programs_launched(tmp_path, cudart):
    """nvcc's default (static cudart) and -cudart shared, started by gpuprobed itself."""
    if not os.path.exists(NVCC):
        pytest.skip("nvcc not installed (CUDA toolkit absent): cannot build a real CUDA program")
    exe = tmp_path / f"nvcc_kernels_{cudart}"
    src = os.path.join(gp.ROOT, "tests", "workloads", "nvcc_kernels.cu")
    subprocess.run([NVCC, "-cudart", cudart, "-o", str(exe), src], check=True, capture_output=True, timeout=300)
    env = gp.sim_env() if cudart == "shared" else dict(os.environ)
    rc, out, err, report = launch(tmp_path, [str(exe)], env=env)
    assert rc == 0, err
    did = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    (proc,) = report["processes"]
    calls = {r["name"]: r["calls"] for r in proc["cuda_api"]}
    launched = did["scale_ok"] + did.get("scale_err", 0) + did["saxpy_ok"] + did.get("saxpy_err", 0)
    assert calls["cudaLaunchKernel"] == launched == 8
    assert any(lib["static"] == (cudart == "static") for lib in proc["libraries"])


def test_command_not_found_exits_127(tmp_path):
    rc, _, err, report = launch(tmp_path, ["/nonexistent/gpuprobed-no-such-command", "x"])
    assert rc == 127
    assert "command not found" in err and len(err.strip().splitlines()) == 1
    assert report is None
    rc, _, err, _ = launch(tmp_path, ["gpuprobed-no-such-command-on-path"])
    assert rc == 127 and "gpuprobed-no-such-command-on-path: command not found" in err


def test_command_not_executable_exits_126(tmp_path):
    script = tmp_path / "not-executable.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    rc, _, err, _ = launch(tmp_path, [str(script)])
    assert rc == 126 and "cannot run it" in err
    bad = tmp_path / "not-a-program"
    bad.write_bytes(b"\x7fELF but not really")
    bad.chmod(0o755)
    rc, _, err, _ = launch(tmp_path, [str(bad)])
    assert rc == 126 and "Exec format error" in err, err


# ---- --name ---------------------------------------------------------------------------------

def test_name_traces_a_process_started_later_from_its_first_call(tmp_path):
    path = gp.unique_name("basic_ops", tmp_path)
    tr = gp.Tracer(["--name", os.path.basename(path)], tmp_path / "out")
    try:
        tr.wait_tracing(marker="waiting for one to start")
        ref = run_basic_ops(tmp_path, path)
    finally:
        stop(tr)
    assert tr.stderr.count("waiting for one to start") == 1
    report = tr.report()
    proc = gp.check_all(report, ref)
    assert [p["pid"] for p in report["processes"]] == [ref["pid"]]
    assert proc["traced_because"] == "name" and proc["traced_from_start"] is True
    assert proc["comm"] == os.path.basename(path)
    assert report["session"]["mode"] == "name"


def test_name_matching_nothing_waits_and_says_so_once(tmp_path):
    rc, _, err = gp.run_gpuprobed(["--name", "gp-no-such-proc", "-d", "0.5", "-o", str(tmp_path)])
    assert rc == 0, err
    assert err.count("no process named gp-no-such-proc yet") == 1
    with open(tmp_path / "report.json") as f:
        assert json.load(f)["processes"] == []


def test_two_copies_of_the_library_in_two_processes(tmp_path):
    """The same runtime from two directories (a venv's copy and the system's): two files, each
    probed once, each process traced exactly through its own copy."""
    copy = tmp_path / "venv-lib"
    copy.mkdir()
    for name in ("libcudart.so.13", "libsimgpu.so", "libcuda.so.1"):  # the runtime dlopens the driver
        shutil.copy2(os.path.join(gp.SIMGPU, name), copy / name)
    names = [gp.unique_name("basic_ops", tmp_path), gp.unique_name("multi_stream", tmp_path)]
    tr = gp.Tracer(["--name", os.path.basename(names[0]), "--name", os.path.basename(names[1])], tmp_path / "out")
    try:
        tr.wait_tracing(marker="waiting for one to start")
        a = gp.Workload(names[0], tmp_path, env=gp.sim_env(), wait=False)
        b = gp.Workload(names[1], tmp_path, args=("--threads", "2", "--iters", "10"),
                        env=dict(gp.sim_env(), LD_LIBRARY_PATH=str(copy)), wait=False)
        for w in (a, b):
            w.wait_done()
            w.finish()
    finally:
        stop(tr)
    report = tr.report()
    libs = {p["pid"]: gp.runtime_libs(p) for p in report["processes"]}
    assert sorted(libs) == sorted([a.pid, b.pid])
    assert libs[a.pid] == [os.path.join(gp.SIMGPU, "libcudart.so.13")]
    assert libs[b.pid] == [str(copy / "libcudart.so.13")]
    gp.check_all(report, a.ref())
    gp.check_all(report, b.ref(), exact_peak=False)
    targets = {r["target"] for r in report["instrumentation"] if r["api"].startswith("cuda")}
    assert targets == {libs[a.pid][0], libs[b.pid][0]}


# ---- --pid with a library loaded later ----------------------------------------------------

def test_dlopen_after_attach_is_traced_from_its_first_call(tmp_path):
    """--pid on a process that has no CUDA library yet; it dlopens the runtime afterwards."""
    wl = gp.Workload("attach_dlopen", tmp_path)
    try:
        with open(f"/proc/{wl.pid}/maps") as f:
            assert "libcudart" not in f.read()
        tr = gp.Tracer(["--pid", str(wl.pid)], tmp_path / "out")
        tr.wait_tracing()
        assert "no CUDA runtime mapped yet" in tr.stderr
        wl.release()
        assert wl.readline(30).startswith("LOADED")
        wl.wait_done()
        wl.finish()
        assert tr.wait() == 0, tr.stderr
        proc = gp.check_all(tr.report(), wl.ref())
        assert proc["traced_from_start"] is True
        assert gp.runtime_libs(proc) == [os.path.join(gp.SIMGPU, "libcudart.so.13")]
    finally:
        wl.kill()


# ---- --all ------------------------------------------------------------------------------------

def test_all_sees_a_new_cuda_process_and_ignores_others(tmp_path):
    """--all traces a CUDA process started after it from its first call, and not a process that
    uses no CUDA. It traces every other CUDA process on the machine too (that is --all): only this
    test's own processes are looked at."""
    tr = gp.Tracer(["--all"], tmp_path / "out")
    try:
        tr.wait_tracing()
        # a shell and its two children, none of which maps CUDA: their pids
        plain = subprocess.run(["sh", "-c", "echo $$; sleep 0.1 & echo $!; wait; cat /proc/self/stat > /dev/null & "
                                "echo $!; wait"], capture_output=True, text=True, timeout=30)
        assert plain.returncode == 0, plain.stderr
        plain_pids = [int(pid) for pid in plain.stdout.split()]
        assert len(plain_pids) == 3, plain.stdout
        ref = run_basic_ops(tmp_path)
    finally:
        stop(tr)
    report = tr.report()
    own = set(plain_pids) | {ref["pid"]}
    assert [p["comm"] for p in report["processes"] if p["pid"] in own] == ["basic_ops"]
    assert not [s for s in report["skipped"] if s["pid"] in own]
    # drops are the session's, and the session traced others: then the exact comparisons stand
    # for this process's completeness
    proc = gp.check_all(report, ref, session_drops=not gp.others(report, own))
    assert proc["traced_because"] == "cuda" and proc["traced_from_start"] is True


# ---- nothing left behind -------------------------------------------------------------------

@pytest.mark.parametrize("link_kind", ["kernel_default", "perf_event"])
def test_probes_go_with_the_last_process_and_nothing_stays(tmp_path, link_kind):
    """While gpuprobed runs, a file's probes are removed when the last traced process using
    it exits (perf-event links: LINGER_S later, in the background); after gpuprobed exits, no
    uprobe link and no uprobe event of its own is left. Only this gpuprobed's links are counted
    (the descriptors it holds): another tracer may run."""
    def events():
        """uprobe events in tracefs named for our gpuprobed (libbpf's legacy ones carry its pid)."""
        with open("/sys/kernel/tracing/uprobe_events") as f:
            return [line for line in f if f"libbpf_{tr.proc.pid}_" in line]

    path = gp.unique_name("attach_dlopen", tmp_path)
    perf = link_kind == "perf_event" or not gp.kernel_has_uprobe_multi()
    tr = gp.Tracer(["--name", os.path.basename(path), *(("--no-uprobe-multi",) if link_kind == "perf_event" else ())],
                   tmp_path / "out")
    seen = set()
    try:
        tr.wait_tracing(marker="waiting for one to start")
        before = len(gp.uprobe_links(held_by=tr.proc.pid))
        wl = gp.Workload(path, tmp_path, hold=True, wait=False)
        assert wl.readline(30).startswith("LOADED")
        wl.wait_done()
        links = gp.uprobe_links(held_by=tr.proc.pid)
        seen = {l["id"] for l in links}
        assert len(links) > before  # its library's probes are in place
        wl.finish()
        # perf-event links (before 6.6) stay LINGER_S, then go one at a time (~50 ms each measured)
        wait_s = 10.0 + (gp.LINGER_S + 0.2 * (len(links) - before) if perf else 0)
        assert wait_until(lambda: len(gp.uprobe_links(held_by=tr.proc.pid)) <= before, timeout=wait_s), \
            "probes stayed after the last user left"
        assert tr.proc.poll() is None  # gpuprobed still runs, waiting for more
    finally:
        stop(tr)
    assert not seen & gp.bpf_ids()[0], "links of the exited gpuprobed still in the kernel"
    assert events() == []
    gp.check_all(tr.report(), wl.ref())


def test_launch_runs_as_the_sudo_user(tmp_path):
    """Under sudo the command runs as the invoking user (SUDO_UID/SUDO_GID), not as root."""
    env = dict(gp.sim_env(), SUDO_UID="65534", SUDO_GID="65534")
    rc, out, err, report = launch(tmp_path, ["sh", "-c", "echo uid=$(id -u) gid=$(id -g)"], env=env)
    assert rc == 0, err
    assert "uid=65534 gid=65534" in out
    assert report["session"]["launch"]["exit_status"] == 0


def test_signal_to_gpuprobed_is_passed_to_the_command(tmp_path):
    """SIGTERM sent to gpuprobed alone reaches the command; gpuprobed reports and exits with the
    command's status (128 + 15), like a shell."""
    tr = gp.Tracer(["--", "sleep", "30"], tmp_path / "out")
    try:
        tr.wait_tracing()
        tr.signal(signal.SIGTERM)
        assert tr.wait(timeout=30) == 128 + signal.SIGTERM, tr.stderr
    finally:
        if tr.proc.poll() is None:
            tr.proc.kill()
    assert "passed on to the command" in tr.stderr
    launch_info = tr.report()["session"]["launch"]
    assert launch_info == {"command": "sleep 30", "exited": True, "exit_status": 143, "signal": "TERM"}


def test_process_whose_library_cannot_be_reached_is_skipped_with_the_reason(tmp_path):
    """A process whose CUDA library gpuprobed cannot open — deleted from disk, and without
    CAP_SYS_ADMIN /proc/PID/map_files is closed to it, as for a container's private root — is
    listed in skipped[] with the reason; the session goes on."""
    setpriv = shutil.which("setpriv")
    if not setpriv:
        pytest.skip("setpriv (util-linux) not installed: cannot drop CAP_SYS_ADMIN for this test")
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        paranoid = int(f.read())
    if paranoid > 2:  # test_kernel.py checks that gpuprobed says so
        pytest.skip(f"kernel.perf_event_paranoid is {paranoid} here: gpuprobed needs CAP_SYS_ADMIN for "
                    "perf_event_open, and this case is a gpuprobed without it")
    copy = tmp_path / "gone"
    copy.mkdir()
    for name in ("libcudart.so.13", "libsimgpu.so"):
        shutil.copy2(os.path.join(gp.SIMGPU, name), copy / name)
    name = gp.unique_name("basic_ops", tmp_path)
    wl = gp.Workload(name, tmp_path, env=dict(gp.sim_env(), LD_LIBRARY_PATH=str(copy)))
    try:
        os.unlink(copy / "libcudart.so.13")
        out = tmp_path / "out"
        p = subprocess.run([setpriv, "--inh-caps=-all", "--bounding-set=-sys_admin,-checkpoint_restore",
                            gp.GPUPROBED, "--name", os.path.basename(name), "-d", "0.5", "-o", str(out)],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        with open(out / "report.json") as f:
            report = json.load(f)
    finally:
        wl.kill()
    assert report["processes"] == []
    (skipped,) = report["skipped"]
    assert skipped["pid"] == wl.pid and skipped["comm"] == os.path.basename(name)
    assert skipped["reason"].startswith(f"cannot read {copy}/libcudart.so.13 (deleted)")
    assert report["summary"]["processes_skipped"] == 1
    assert "skipped" in p.stderr


def test_unusable_cuda_named_file_holds_once_and_is_left_alone(tmp_path):
    """A file named like the runtime that is not a library, mapped executable twice under --all:
    one message, the process is continued both times (never left stopped), nothing traced."""
    fake = tmp_path / "libcudart.so.99"
    fake.write_bytes(b"not an ELF file" * 512)
    script = ("import mmap, os\n"
              f"fd = os.open({str(fake)!r}, os.O_RDONLY)\n"
              "for _ in range(2):\n"
              "    mmap.mmap(fd, 0, prot=mmap.PROT_READ | mmap.PROT_EXEC, flags=mmap.MAP_PRIVATE).close()\n"
              "print('MAPPED')\n")
    tr = gp.Tracer(["--all"], tmp_path / "out")
    try:
        tr.wait_tracing()
        p = subprocess.Popen(["python3", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = p.communicate(timeout=30)
        assert p.returncode == 0 and "MAPPED" in out, err
    finally:
        stop(tr)
    assert tr.stderr.count(str(fake)) == 1, tr.stderr
    assert "not a readable ELF file" in tr.stderr
    report = tr.report()  # --all: other CUDA processes of the machine may be in it, never this one
    assert p.pid not in [q["pid"] for q in report["processes"]] + [q["pid"] for q in report["skipped"]]
