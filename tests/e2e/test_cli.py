# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Bad input gets one clear message and the documented exit status (2 usage, 1 runtime),
and nothing stays attached."""
import json
import os
import time
import shutil
import subprocess

import pytest

import gp


def one_message(stderr):
    lines = [l for l in stderr.splitlines() if l.startswith("gpuprobed:")]
    assert len(lines) == 1, f"expected one message, got: {stderr!r}"
    return lines[0]


@pytest.mark.parametrize("args, needle", [
    (["--frobnicate"], "unknown option '--frobnicate'"),
    (["--pid"], "needs a value"),
    (["--pid", "12ab"], "'12ab' is not a process id"),
    (["--pid", "-5"], "is not a process id"),
    (["--pid", "1", "--pid", "1"], "given twice"),
    (["--pid", "1", "--duration", "soon"], "'soon' is not a positive number"),
    (["--pid", "1", "--ringbuf-mb", "3"], "not a power of two"),
    ([], "no target"),
    (["--pid", "1", "--", "true"], "give one kind of target"),
    (["--name", "a/b"], "--name: 'a/b' is not a process or file name"),
    (["--all", "--name", "x"], "give one kind of target"),
])
def test_usage_errors_exit_2(args, needle):
    rc, out, err = gp.run_gpuprobed(args)
    assert rc == 2
    assert needle in one_message(err)
    assert "--help" in err


def test_help_and_version():
    rc, out, _ = gp.run_gpuprobed(["--help"])
    assert rc == 0 and "--pid PID" in out and "Exit status" in out
    rc, out, _ = gp.run_gpuprobed(["--version"])
    assert rc == 0 and out.startswith("gpuprobed ")


def free_pid():
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    for pid in range(pid_max - 1, 1, -1):
        if not os.path.exists(f"/proc/{pid}"):
            return pid
    pytest.skip("no free pid found")


def test_pid_that_does_not_exist(tmp_path):
    pid = free_pid()
    rc, _, err = gp.run_gpuprobed(["--pid", str(pid), "-o", str(tmp_path)])
    assert rc == 1
    assert f"pid {pid}: no such process" in one_message(err)


def test_process_without_cuda_is_waited_for(tmp_path):
    """A --pid that has no CUDA library yet is traced from the moment it loads one."""
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        rc, _, err = gp.run_gpuprobed(["--pid", str(sleeper.pid), "-d", "0.5", "-o", str(tmp_path)])
        assert rc == 0, err
        assert "no CUDA runtime mapped yet" in err
        with open(tmp_path / "report.json") as f:
            report = json.load(f)
        proc = gp.process(report, sleeper.pid)
        assert proc["api_calls"] == 0 and proc["traced_from_start"] is True
        assert proc["libraries"] == []
    finally:
        sleeper.kill()
        sleeper.wait()


def test_kernel_thread_is_refused(tmp_path):
    rc, _, err = gp.run_gpuprobed(["--pid", "2", "-o", str(tmp_path)])  # kthreadd
    assert rc == 1
    assert "a kernel thread" in one_message(err)


def test_not_root(tmp_path):
    setpriv = shutil.which("setpriv")
    if not setpriv:
        pytest.skip("setpriv (util-linux) not installed: cannot drop privileges for this test")
    p = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                        gp.GPUPROBED, "--pid", "1", "-o", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 1
    msg = one_message(p.stderr)
    assert "needs root" in msg and "CAP_BPF" in msg


def test_unwritable_output_directory_attaches_nothing(tmp_path):
    """The output directory is checked before anything is loaded: strace sees no bpf() call at all
    (so no program, map or link was made, whatever else runs on the machine)."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed (make deps installs it): the test counts gpuprobed's bpf() calls")
    wl = gp.Workload("basic_ops", tmp_path)
    try:
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        log = tmp_path / "strace.log"
        p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=bpf,perf_event_open", "-o", str(log), gp.GPUPROBED,
                            "--pid", str(wl.pid), "-o", str(blocker / "out")], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 1, p.stderr
        assert "output directory" in one_message(p.stderr)
        calls = [line for line in log.read_text().splitlines() if "bpf(" in line or "perf_event_open(" in line]
        assert not calls, f"gpuprobed made BPF calls before refusing the output directory: {calls[:3]}"
    finally:
        wl.kill()


def test_zombie_is_refused(tmp_path):
    """A process that has exited but is not yet reaped is not mistaken for a kernel thread."""
    zombie = subprocess.Popen(["true"])
    try:
        for _ in range(200):
            with open(f"/proc/{zombie.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.01)
        rc, _, err = gp.run_gpuprobed(["--pid", str(zombie.pid), "-o", str(tmp_path)])
        assert rc == 1
        assert "has exited (a zombie" in one_message(err)
    finally:
        zombie.wait()
