# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Holds: gpuprobed stops a process that execs a file it has not looked at yet (or maps a new CUDA
library) until the file is probed. Whatever happens to gpuprobed, no process is left stopped:

- killed (kill -9) in the middle of a burst of new executables, its resumer continues every process
  it left held, and each ends with its own exit status;
- stuck (here: stopped with SIGSTOP, so it can finish nothing), a hold ends at --hold-max-ms all the
  same, counted in drops.hold_timeout;
- killed together with its resumer (systemd's final SIGKILL of the unit's cgroup), the registry it
  pinned in bpffs outlives both: `gpuprobed --release-holds` (the unit's ExecStopPost) or the next
  gpuprobed's start continues what they left, never a pid recycled since.

Only this test's own processes are looked at: other tracers and workloads may run on the machine.
The tests hold exec of fresh copies of tests/workloads/hold_exit (each copy a new file: each exec
is held) in the test's own directory."""
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import time

import pytest

import gp

COPIES = 40
ROUNDS = 3


def copies(tmp_path, n, prefix):
    """n fresh copies of hold_exit (new inodes: gpuprobed has seen none of them)."""
    d = tmp_path / prefix
    d.mkdir()
    paths = []
    for i in range(n):
        path = d / f"{prefix}{i}"
        shutil.copy2(os.path.join(gp.WORKLOADS, "hold_exit"), path)
        paths.append(str(path))
    return paths


def wait_gone(pid, timeout):
    """Waits until pid has exited (gone, or a zombie nobody reaps); False at the timeout."""
    end = time.monotonic() + timeout
    while gp.proc_state(pid) not in ("", "Z", "X"):
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


class AllTracer:
    """gpuprobed --all."""

    def __init__(self, tmp_path):
        self.tr = gp.Tracer(["--all"], tmp_path / "out")
        self.tr.wait_tracing()
        self.proc = self.tr.proc

    def stderr_after_exit(self):
        self.tr.wait(timeout=60)
        return self.tr.stderr


class DaemonTracer:
    """gpuprobed --daemon (its own configuration, state directory and port: test_daemon.Daemon)."""

    def __init__(self, tmp_path):
        from test_daemon import Daemon
        self.d = Daemon(tmp_path)
        self.proc = self.d.proc

    def stderr_after_exit(self):
        self.proc.wait(timeout=60)
        return self.d.stderr + self.d.err.rest()


@pytest.mark.parametrize("mode", [AllTracer, DaemonTracer], ids=["all", "daemon"])
def test_kill_9_during_a_burst_of_new_executables_leaves_nothing_stopped(tmp_path, mode):
    """3 rounds: gpuprobed (--all, or the daemon), 40 fresh CUDA executables started in quick
    succession, gpuprobed killed with SIGKILL after the 20th. Its resumer continues every process
    that was held (the kernel may still hold a few after the kill, until its programs are gone):
    afterwards none of the test's processes is stopped, and each ends with its own exit status
    (20 + its index)."""
    env = gp.sim_env()
    for r in range(ROUNDS):
        paths = copies(tmp_path, COPIES, f"r{r}w")
        (tmp_path / f"t{r}").mkdir()
        tr = None
        started = []
        try:
            tr = mode(tmp_path / f"t{r}")
            resumer = gp.resumer_of(tr.proc.pid)
            assert resumer, f"gpuprobed {tr.proc.pid} has no resumer"
            for i, path in enumerate(paths):
                started.append(subprocess.Popen([path, str(20 + i)], env=env))
                if i == COPIES // 2:
                    tr.proc.send_signal(signal.SIGKILL)
            stderr = tr.stderr_after_exit()
            assert tr.proc.returncode == -signal.SIGKILL
            assert wait_gone(resumer, 30), f"round {r}: the resumer {resumer} did not exit"
            # every process of the test: none is stopped now that gpuprobed and its resumer are gone
            stopped = {p.pid: gp.comm(p.pid) for p in started if gp.proc_state(p.pid) == "T"}
            assert not stopped, f"round {r}: left stopped: {stopped}; {stderr}"
            statuses = [p.wait(timeout=60) for p in started]
            assert statuses == [20 + i for i in range(COPIES)], f"round {r}: {statuses}"
            # the cut holds were there to cut: the resumer says how many it continued
            m = re.search(r"pid (\d+) exited with (\d+) process(?:es)? held: continued", stderr)
            assert m and int(m.group(1)) == tr.proc.pid and int(m.group(2)) >= 1, \
                f"round {r}: no hold was cut (the test did not test): {stderr}"
        finally:
            for p in started:
                if p.poll() is None:
                    os.kill(p.pid, signal.SIGCONT)
                    p.kill()
                    p.wait()
            if tr and tr.proc.poll() is None:
                tr.proc.kill()
                tr.proc.wait()


def test_resumer_exits_with_gpuprobed_and_is_not_traced(tmp_path):
    """The resumer lives exactly as long as gpuprobed: it exits when gpuprobed ends normally, and
    is never a traced process (not even under --all, which scans every running process)."""
    tr = gp.Tracer(["--all"], tmp_path / "out")
    try:
        tr.wait_tracing()
        resumer = gp.resumer_of(tr.proc.pid)
        assert resumer and gp.proc_state(resumer) in ("S", "R"), tr.stderr
        tr.signal(signal.SIGINT)
        assert tr.wait(timeout=60) == 0, tr.stderr
        assert wait_gone(resumer, 10), f"resumer {resumer} outlived gpuprobed"
    finally:
        if tr.proc.poll() is None:
            tr.proc.kill()
            tr.wait()
    report = tr.report()
    assert not [p for p in report["processes"] if p["pid"] == resumer]
    assert not [s for s in report["skipped"] if s["pid"] == resumer]


def test_stuck_gpuprobed_releases_its_holds_at_the_limit_and_counts_them(tmp_path):
    """gpuprobed stuck: stopped (SIGSTOP), it can look at no file, so a process held for a file it
    has not seen would wait forever. The resumer continues it at --hold-max-ms each time. The copy of
    hold_exit is held three times, each for a file this gpuprobed never looked at: its exec, the
    mapping of libcudart.so.13 by the loader, and that of libcuda.so.1, which the runtime dlopens at
    its first call (tests/simgpu/README.md). It ends with its own status while gpuprobed is still
    stopped, no sooner than three limits after it was started (it cannot run before each hold ends),
    drops.hold_timeout counts exactly those three holds, and the report names each, in order.
    --name with a name only this test's copy has: nobody else is held while gpuprobed is stopped.
    Stopping gpuprobed rather than feeding it a slow file: a parse's length depends on the machine, a
    stopped gpuprobed finishes nothing on any machine."""
    limit_ms = 300
    path = copies(tmp_path, 1, "gp" + os.urandom(5).hex())[0]  # a unique comm: 13 characters
    name = os.path.basename(path)
    tr = gp.Tracer(["--name", name, "--hold-max-ms", str(limit_ms)], tmp_path / "out")
    try:
        tr.wait_tracing(marker="waiting")
        os.kill(tr.proc.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        wl = subprocess.Popen([path, "7"], env=gp.sim_env())
        rc = wl.wait(timeout=60)
        elapsed = time.monotonic() - t0
        state = gp.proc_state(tr.proc.pid)
        os.kill(tr.proc.pid, signal.SIGCONT)
        assert rc == 7
        assert state == "T", f"gpuprobed was not stopped all along ({state})"
        assert elapsed >= 3 * limit_ms / 1000, f"ended {elapsed:.3f} s after its start: before 3 limits"
        tr.signal(signal.SIGINT)
        assert tr.wait(timeout=60) == 0, tr.stderr
    finally:
        if tr.proc.poll() is None:
            os.kill(tr.proc.pid, signal.SIGCONT)
            tr.proc.kill()
            tr.wait()
    report = tr.report()
    assert report["drops"]["hold_timeout"] == 3, report["drops"]
    holds = report["session"]["holds"]
    assert [(h["pid"], h["reason"]) for h in holds["timed_out"]] == [(wl.pid, "exec"), (wl.pid, "map"),
                                                                     (wl.pid, "map")], holds
    assert all(h["held_ns"] >= limit_ms * 1000000 for h in holds["timed_out"]), holds
    # by file: the kernel's names of the three (gpuprobed, stopped, could not look at them while their
    # process lived: a path only where it could)
    want = {(os.stat(p).st_ino, r) for p, r in ((path, "exec"), (os.path.join(gp.SIMGPU, "libcudart.so.13"), "map"),
                                                (os.path.join(gp.SIMGPU, "libcuda.so.1"), "map"))}
    assert {(f["inode"], f["reason"]) for f in holds["files"]} == want, holds
    assert all(f["count"] == 1 and f["total_ns"] >= limit_ms * 1000000 for f in holds["files"]), holds
    assert (holds["count"], holds["exec"], holds["map"], holds["python"]) == (3, 1, 2, 0), holds
    assert holds["max_ns"] >= limit_ms * 1000000, holds
    assert holds["total_ns"] == sum(h["held_ns"] for h in holds["timed_out"]), holds
    assert tr.stderr.count(f"pid {wl.pid}: held for its ") == 3, tr.stderr


def test_holds_are_reported_per_file(tmp_path):
    """gpuprobed -- COPY: the copy of hold_exit is held once at its exec, once as the loader maps
    libcudart.so.13 and once as the runtime dlopens libcuda.so.1 (each a file this session has
    not seen). session.holds names each file (its path, and the device and inode the kernel gave,
    those of os.stat), with its one hold, and adds them up; the command's status comes through."""
    path = copies(tmp_path, 1, "pf")[0]
    tr = gp.Tracer(["--", path, "3"], tmp_path / "out", env=gp.sim_env())
    assert tr.wait(timeout=60) == 3, tr.stderr
    holds = tr.report()["session"]["holds"]
    files = {(f["path"], f["reason"]): f for f in holds["files"]}
    want = [(path, "exec"), (os.path.join(gp.SIMGPU, "libcudart.so.13"), "map"),
            (os.path.join(gp.SIMGPU, "libcuda.so.1"), "map")]
    assert sorted(files) == sorted((os.path.realpath(p), r) for p, r in want), holds
    for p, r in want:
        f, st = files[(os.path.realpath(p), r)], os.stat(p)
        assert (f["count"], f["device"], f["inode"]) == \
            (1, f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}", st.st_ino), f
        assert 0 < f["max_ns"] == f["total_ns"], f
    assert (holds["count"], holds["exec"], holds["map"], holds["python"]) == (3, 1, 2, 0), holds
    assert holds["total_ns"] == sum(f["total_ns"] for f in holds["files"]), holds
    assert holds["max_ns"] == max(f["max_ns"] for f in holds["files"]), holds
    # the costliest first
    assert [f["total_ns"] for f in holds["files"]] == sorted((f["total_ns"] for f in holds["files"]), reverse=True)
    assert holds["timed_out"] == [] and holds["files_left_out"] == 0 and tr.report()["drops"]["hold_timeout"] == 0


def test_hold_max_ms_refuses_what_is_not_a_limit(tmp_path):
    for bad in ("0", "60001", "-5", "2s", ""):
        rc, _, err = gp.run_gpuprobed(["--all", "--hold-max-ms", bad, "-o", str(tmp_path / "out")])
        assert rc == 2 and f"--hold-max-ms: '{bad}' is not a number of milliseconds between 1 and 60000" in err, \
            (bad, err)


PIN_DIR = "/sys/fs/bpf/gpuprobed"
PIN_MISSING = "the registry of holds is not pinned"


def start_ticks(pid):
    """pid's start time, in clock ticks since boot (/proc/PID/stat field 22)."""
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def pin_of(pid):
    """The path gpuprobed pid pins its registry at (its pid and start time)."""
    return f"{PIN_DIR}/holds-{pid}-{start_ticks(pid)}"


def release_holds():
    rc, out, err = gp.run_gpuprobed(["--release-holds"])
    assert rc == 0 and out == "", (rc, out, err)
    return {int(m) for m in re.findall(r"^gpuprobed: pid (\d+): continued \(held by gpuprobed \d+, gone\)$",
                                        err, re.M)}, err


@pytest.mark.parametrize("release", ["command", "next_start"])
def test_kill_9_of_gpuprobed_and_its_resumer_leaves_nothing_stopped(tmp_path, release):
    """gpuprobed --all and its resumer both killed with SIGKILL (the resumer first: it can continue
    nothing) after the 20th of 40 fresh executables started in quick succession: the processes it
    held stay stopped (the test checks some are: it tested something), until `gpuprobed
    --release-holds` (command) or the start of another gpuprobed (next_start: --pid of a process of
    the test) continues them from the registry pinned in bpffs. Afterwards none of the test's
    processes is stopped, each ends with its own exit status (20 + its index), the pin is gone.
    Another gpuprobed started meanwhile (another test run) may release them first: the test only
    checks its own processes."""
    env = gp.sim_env()
    paths = copies(tmp_path, COPIES, "kw")
    started = []
    tr = gp.Tracer(["--all"], tmp_path / "out")
    sleeper = None
    try:
        tr.wait_tracing()
        if PIN_MISSING in tr.stderr:
            pytest.skip(f"gpuprobed could not pin its registry here: {tr.stderr}")
        pin = pin_of(tr.proc.pid)
        assert os.path.exists(pin), (pin, tr.stderr)
        resumer = gp.resumer_of(tr.proc.pid)
        assert resumer, f"gpuprobed {tr.proc.pid} has no resumer"
        for i, path in enumerate(paths):
            started.append(subprocess.Popen([path, str(20 + i)], env=env))
            if i == COPIES // 2:
                os.kill(resumer, signal.SIGKILL)
                tr.proc.send_signal(signal.SIGKILL)
        tr.wait(timeout=60)
        assert tr.proc.returncode == -signal.SIGKILL
        assert wait_gone(resumer, 30), f"the resumer {resumer} did not exit"
        # nobody continues them now: the processes held at the kill stay stopped (a held process
        # runs on within ms once continued; 0.5 s later, state T is a hold nobody ended)
        time.sleep(0.5)
        stopped = {p.pid for p in started if gp.proc_state(p.pid) == "T"}
        assert stopped, "no process was left held by the kill: the test did not test"
        if release == "command":
            continued, err = release_holds()
            assert continued & {p.pid for p in started} <= stopped, err
        else:
            sleeper = subprocess.Popen(["sleep", "600"])
            nxt = gp.Tracer(["--pid", str(sleeper.pid)], tmp_path / "out2")
            try:
                nxt.wait_tracing()
            finally:
                nxt.signal(signal.SIGINT)
                assert nxt.wait(timeout=60) == 0, nxt.stderr
        assert not os.path.exists(pin), f"{pin} left"
        left = {p.pid: gp.comm(p.pid) for p in started if gp.proc_state(p.pid) == "T"}
        assert not left, f"left stopped: {left} (stopped before the release: {sorted(stopped)})"
        statuses = [p.wait(timeout=60) for p in started]
        assert statuses == [20 + i for i in range(COPIES)], statuses
    finally:
        for p in started:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                p.kill()
                p.wait()
        if sleeper:
            sleeper.kill()
            sleeper.wait()
        if tr.proc.poll() is None:
            tr.proc.kill()
            tr.wait()


def bpffs_pin_dir():
    """PIN_DIR on a bpffs, mounted by a gpuprobed run if needed; skips where that cannot be."""
    if not os.path.isdir(PIN_DIR):
        # a gpuprobed start mounts bpffs where it may and makes the directory
        sleeper = subprocess.Popen(["sleep", "600"])
        try:
            rc, _, err = gp.run_gpuprobed(["--pid", str(sleeper.pid), "--duration", "0.5", "-o",
                                           tempfile.mkdtemp(prefix="gpuprobed-e2e-pin-")])
        finally:
            sleeper.kill()
            sleeper.wait()
        if not os.path.isdir(PIN_DIR):
            pytest.skip(f"no bpffs on /sys/fs/bpf and gpuprobed could not mount one: {err}")


def test_release_holds_continues_no_recycled_pid(tmp_path):
    """A registry pinned the way gpuprobed names it, by an owner that is dead (a process of the
    test, exited and reaped), with two entries: a process of the test stopped by the test, whose
    recorded start time is its own (it is the one held: continued), and another, also stopped by the
    test, whose recorded start time is not its own (its pid recycled since the hold: untouched, still
    stopped after `gpuprobed --release-holds`). The pin is removed; bad use is refused."""
    bpffs_pin_dir()
    clk = os.sysconf("SC_CLK_TCK")
    owner = subprocess.Popen(["true"])
    owner_start = start_ticks(owner.pid)
    owner.wait()
    pin = f"{PIN_DIR}/holds-{owner.pid}-{owner_start}"
    held = subprocess.Popen(["sleep", "600"])
    recycled = subprocess.Popen(["sleep", "600"])
    try:
        r = subprocess.run(["bpftool", "map", "create", pin, "type", "hash", "key", "16", "value", "48",
                            "entries", "16", "name", "holds"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        for p in (held, recycled):
            os.kill(p.pid, signal.SIGSTOP)
            assert wait_state(p.pid, "T")
        for i, (p, ticks) in enumerate(((held, start_ticks(held.pid)), (recycled, start_ticks(recycled.pid) + 1))):
            key = struct.pack("<IIQ", p.pid, 0, 1000 + i)
            # start_boottime in ns: the kernel's ticks are ns / (10^9 / USER_HZ)
            val = struct.pack("<QIIIIQQQ", ticks * (1000000000 // clk), 1, owner.pid, 0, 0, 0, 0, 0)
            r = subprocess.run(["bpftool", "map", "update", "pinned", pin, "key", "hex", *hexbytes(key),
                                "value", "hex", *hexbytes(val)], capture_output=True, text=True, timeout=30)
            assert r.returncode == 0, r.stderr
        continued, err = release_holds()
        assert held.pid in continued and recycled.pid not in continued, err
        assert f"gpuprobed: pid {held.pid}: continued (held by gpuprobed {owner.pid}, gone)" in err
        assert wait_state(held.pid, "S"), gp.proc_state(held.pid)
        time.sleep(0.2)
        assert gp.proc_state(recycled.pid) == "T", "a recycled pid was continued"
        assert not os.path.exists(pin)
    finally:
        for p in (held, recycled):
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
            p.wait()
        if os.path.exists(pin):
            os.unlink(pin)
    rc, _, err = gp.run_gpuprobed(["--release-holds", "extra"])
    assert rc == 2 and "--release-holds takes no other argument (got 'extra')" in err, err
    rc, _, err = gp.run_gpuprobed(["--all", "--release-holds"])
    assert rc == 2 and "--release-holds takes no other argument (got '--all')" in err, err


def hexbytes(b):
    return [f"{x:02x}" for x in b]


def wait_state(pid, state, timeout=10):
    end = time.monotonic() + timeout
    while gp.proc_state(pid) != state:
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True
