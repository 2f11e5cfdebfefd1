# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Helpers for the end-to-end tests: run workloads, run the real gpuprobed, compare.

A workload (tests/workloads) starts with --wait: it prints "READY <pid>" and blocks
until it reads a line, so gpuprobed attaches to an already-running process; then it
does its traced work, writes its own reference (--ref) and prints "DONE".
"""
import glob
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import tempfile
import time

import stack_formats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("GP_BUILD", os.path.join(ROOT, "build"))
GPUPROBED = os.path.join(BUILD, "gpuprobed")
SIMGPU = os.path.join(BUILD, "simgpu")
WORKLOADS = os.path.join(BUILD, "workloads")
REAL_CUDA_LIB = "/usr/local/cuda/lib64"
# Set by conftest for the whole session: every process the tests start inherits it (sim_env and
# Tracer copy the environment), which tells this session's gpuprobed processes from anyone else's.
SESSION_ENV = "GP_E2E_SESSION"


class LineReader:
    """Lines from a pipe with a timeout. Reads the fd itself: select() on a buffered
    file object misses lines already pulled into Python's buffer."""

    def __init__(self, fileobj):
        self.fd = fileobj.fileno()
        self.buf = b""
        self.eof = False

    def readline(self, timeout):
        end = time.monotonic() + timeout
        while b"\n" not in self.buf and not self.eof:
            left = end - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 65536)
                self.eof = not chunk
                self.buf += chunk
        if b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            return line.decode(errors="replace") + "\n"
        line, self.buf = self.buf, b""
        return line.decode(errors="replace")  # "" at EOF

    def rest(self):
        chunks = [self.buf]
        self.buf = b""
        while not self.eof:
            chunk = os.read(self.fd, 65536)
            self.eof = not chunk
            chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")


REFUSED = None  # conftest: kernel_refusal() of this machine's kernel
# A file's perf-event probes stay this long after its last traced user left (src/probes/files.h)
LINGER_S = 5.0


def kernel_has_uprobe_multi():
    """As the kernel's own BTF says: an uprobe_multi kernel names BPF_TRACE_UPROBE_MULTI."""
    btf = subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "raw"],
                         capture_output=True, text=True, check=True).stdout
    return "'BPF_TRACE_UPROBE_MULTI'" in btf


def kernel_refusal():
    """The line gpuprobed gives where this kernel lacks a feature it needs and nothing replaces (exit 2,
    nothing attached), or None where it runs here."""
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([GPUPROBED, "-o", out, "--duration", "0.1", "--", "true"], capture_output=True,
                           text=True, timeout=120)
    lines = [ln for ln in r.stderr.splitlines() if "lacks" in ln and "Linux" in ln]
    return lines[0].removeprefix("gpuprobed: ") if r.returncode == 2 and lines else None


# The simulated NVML's boards (SIMGPU_BOARD: shared memory where every simulated process says what
# it holds) this test run made; removed at its end (conftest.py).
BOARDS = []


def new_board(prefix="gp-test"):
    """A board of its own: the simulated "machine" of one test, which no other process publishes to."""
    name = f"/{prefix}-{secrets.token_hex(6)}"
    BOARDS.append(name)
    return name


# The board of every other test: this run's, so that what NVML reports (a gpuprobed run with the
# simulated libraries on its library path loads the simulated NVML) never depends on other runs.
RUN_BOARD = new_board("gp-e2e")


def sim_env(**knobs):
    """Environment that runs a workload against the simulated GPU."""
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = SIMGPU
    env["SIMGPU_BOARD"] = RUN_BOARD
    env.update({k: str(v) for k, v in knobs.items()})
    return env


def unique_name(workload, tmp_path):
    """A path that runs the workload under a name (comm) no other process on the machine has: a
    link named gpNNNN in tmp_path. For --name sessions, which must not match another test's or a
    developer's basic_ops; the process's name is the link's, its executable the workload."""
    path = os.path.join(str(tmp_path), "gp" + secrets.token_hex(6))  # 14 characters: a whole comm
    os.symlink(os.path.join(WORKLOADS, workload), path)
    return path


def others(report, own_pids):
    """The pids of the report's processes that are not the test's own (--all and the daemon trace
    every CUDA process on the machine: a developer's, another test's)."""
    return sorted(p["pid"] for p in report["processes"] if p["pid"] not in set(own_pids))


class Workload:
    """A workload started at its handshake, waiting for the go line."""

    def __init__(self, name_or_path, tmp_path, args=(), env=None, hold=False, wait=True):
        path = name_or_path if os.sep in name_or_path else os.path.join(WORKLOADS, name_or_path)
        self._start([path], os.path.basename(path), f"workload {path}", 30, tmp_path, args, env, hold, wait)

    def _start(self, command, name, what, ready_s, tmp_path, args, env, hold, wait):
        """Runs command (with the protocol's options) and, with wait, waits ready_s for its READY."""
        self.ref_path = os.path.join(str(tmp_path), f"ref-{name}-{time.monotonic_ns()}.json")
        argv = [*command, "--ref", self.ref_path, *args]
        if wait:
            argv.append("--wait")
        if hold:
            argv.append("--hold")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env if env is not None else sim_env(),
                                     text=True)
        self.pid = self.proc.pid
        self.stdout = LineReader(self.proc.stdout)
        if wait:
            line = self.readline(ready_s)
            if not line.startswith("READY"):
                raise AssertionError(f"{what} did not start: {line!r}; stderr: {self.stderr_now()}")

    def readline(self, timeout):
        line = self.stdout.readline(timeout)
        if line is None:
            raise AssertionError(f"workload {self.pid}: no output within {timeout} s")
        return line

    def stderr_now(self):
        if self.proc.poll() is None:
            return "(still running)"
        return self.proc.stderr.read()

    def release(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def wait_done(self, timeout=120):
        """Waits for DONE (the traced phase is over and the reference is written)."""
        line = self.readline(timeout)
        if line.strip() != "DONE":
            raise AssertionError(f"workload {self.pid}: expected DONE, got {line!r}; stderr: {self.stderr_now()}")

    def finish(self, timeout=120):
        """Lets it exit (closes stdin) and checks it exited cleanly."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        rc = self.proc.wait(timeout=timeout)
        err = self.proc.stderr.read()
        assert rc == 0, f"workload {self.pid} exited with {rc}: {err}"
        return rc

    def ref(self):
        with open(self.ref_path) as f:
            return json.load(f)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Tracer:
    """The real gpuprobed, as root."""

    def __init__(self, args, out_dir, env=None):
        self.out_dir = str(out_dir)
        # -o first: with -- CMD everything after the command is the command's
        self.proc = subprocess.Popen([GPUPROBED, "-o", self.out_dir, *args], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env if env is not None else dict(os.environ))
        self.held = track(self.proc)
        self.stderr = ""
        self.err = LineReader(self.proc.stderr)

    def wait_tracing(self, timeout=60, marker="tracing"):
        """Waits for the line that says the probes are in place (or another marker)."""
        end = time.monotonic() + timeout
        while marker not in self.stderr:
            line = self.err.readline(max(0.0, end - time.monotonic()))
            if line is None:
                self.proc.kill()
                raise AssertionError(f"gpuprobed did not start tracing: {self.stderr}")
            if not line:
                rc = self.proc.wait()
                raise AssertionError(f"gpuprobed exited ({rc}) before tracing: {self.stderr}")
            self.stderr += line
        self.held.note()

    def signal(self, sig=signal.SIGINT):
        self.held.note()
        self.proc.send_signal(sig)

    def wait(self, timeout=120):
        rc = self.proc.wait(timeout=timeout)
        self.stderr += self.err.rest()
        return rc

    def report(self):
        with open(os.path.join(self.out_dir, "report.json")) as f:
            return json.load(f)

    def report_md(self):
        with open(os.path.join(self.out_dir, "report.md")) as f:
            return f.read()


def run_and_stop(workloads, tr):
    """Lets waiting workloads (Workload, or anything with its release/wait_done/finish, such as a
    container's) run their traced phase at once and exit, then stops the tracer: its report."""
    for w in workloads:
        w.release()
    for w in workloads:
        w.wait_done()
        w.finish()
    tr.signal()
    assert tr.wait() == 0, f"gpuprobed exited with {tr.proc.returncode}: {tr.stderr}"
    return tr.report()


def run_gpuprobed(args, timeout=60, env=None):
    """gpuprobed run to completion: (exit status, stdout, stderr)."""
    p = subprocess.run([GPUPROBED, *args], capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def trace_workload(wl, tmp_path, tracer_args=(), output_lines=0):
    """Attach to a waiting workload, release it, read the first output_lines lines it prints
    (its own measurements), let both finish. Returns (report, tracer, lines)."""
    try:
        tr = Tracer(["--pid", str(wl.pid), *tracer_args], os.path.join(str(tmp_path), "out"))
        tr.wait_tracing()
        wl.release()
        lines = [wl.readline(120) for _ in range(output_lines)]
        wl.wait_done()
        wl.finish()
        rc = tr.wait()
        assert rc == 0, f"gpuprobed exited with {rc}: {tr.stderr}"
        return tr.report(), tr, lines
    finally:
        wl.kill()


def trace(tmp_path, workload, args=(), env=None, tracer_args=()):
    """Attach to a waiting workload, release it, let both finish. Returns (report, ref, tracer)."""
    wl = Workload(workload, tmp_path, args=args, env=env)
    report, tr, _ = trace_workload(wl, tmp_path, tracer_args)
    return report, wl.ref(), tr


def process(report, pid):
    rows = [p for p in report["processes"] if p["pid"] == pid]
    assert len(rows) == 1, f"pid {pid} not exactly once in {[p['pid'] for p in report['processes']]}"
    return rows[0]


def build_id(path):
    """The file's GNU build-id as binutils' readelf reads it ("" when it has none): the reference for
    libraries[].build_id."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return ""


def check_library_build_ids(proc, host_path=None):
    """Every traced library of the process names the build-id of its file (host_path: where this
    machine has the file a path of the process names, for a container's)."""
    assert proc["libraries"]
    for lib in proc["libraries"]:
        if lib["path"].endswith(" (deleted)"):  # read through the process's mapping; no file to compare with
            assert len(lib["build_id"]) in (0, 40), lib
        else:
            assert lib["build_id"] == build_id(host_path(lib["path"]) if host_path else lib["path"]), lib


def runtime_libs(proc):
    """Paths of the CUDA runtime libraries of a report's process (the driver and NCCL ones left out)."""
    return [lib["path"] for lib in proc["libraries"] if lib["family"] == "cudart"]


def bpf_held(pid):
    """({link id: fdinfo}, {prog id}) of the BPF links and programs process pid holds open, from
    /proc/PID/fdinfo ({} and set() once it is gone)."""
    links, progs = {}, set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return links, progs
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target not in ("anon_inode:bpf_link", "anon_inode:bpf-prog"):
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue  # closed meanwhile
        info = {k.strip(): v.strip() for k, v in info.items()}
        if "link_id" in info:
            links[int(info["link_id"])] = info
            progs.add(int(info["prog_id"]))
        elif "prog_id" in info:
            progs.add(int(info["prog_id"]))
    return links, progs


def bpf_ids():
    """(link ids, prog ids) that exist on the machine now."""
    def ids(what):
        out = subprocess.run(["bpftool", "-j", what, "list"], capture_output=True, text=True, check=True).stdout
        return {e["id"] for e in json.loads(out or "[]")}
    return ids("link"), ids("prog")


def kernel_has_perf_links():
    """BPF links of perf events (Linux 5.15, with attach cookies): before them libbpf attaches a program to
    a perf event itself (PERF_EVENT_IOC_SET_BPF), and no link exists; the kernel's own helper list says."""
    probe = json.loads(subprocess.run(["bpftool", "feature", "probe", "kernel", "-j"], capture_output=True,
                                      text=True, check=True).stdout)
    return "bpf_get_attach_cookie" in probe["helpers"]["kprobe_available_helpers"]


def uprobe_links(held_by=None):
    """uprobe_multi and perf-event uprobe links the kernel holds: all of the machine's, or only those
    process held_by holds open (bpftool 7.1 predates uprobe_multi and prints its link type as the
    number 12). A test asks about its own gpuprobed: another tracer may run beside it. On a kernel
    without perf-event links (before 5.15) the probes are perf events with a program, as `bpftool perf`
    lists them by the process and descriptor holding them ({"id": ("perf", pid, fd), ...}: no link id)."""
    if not kernel_has_perf_links():
        out = subprocess.run(["bpftool", "-j", "perf", "list"], capture_output=True, text=True, check=True).stdout
        return [dict(e, id=("perf", e["pid"], e["fd"])) for e in json.loads(out or "[]")
                if e.get("fd_type") in ("uprobe", "uretprobe") and (held_by is None or e["pid"] == held_by)]
    out = subprocess.run(["bpftool", "-j", "link", "list"], capture_output=True, text=True, check=True).stdout
    links = json.loads(out or "[]")
    progs = subprocess.run(["bpftool", "-j", "prog", "list"], capture_output=True, text=True, check=True).stdout
    kind = {p["id"]: p.get("type") for p in json.loads(progs or "[]")}
    if held_by is not None:
        mine = bpf_held(held_by)[0]
        links = [l for l in links if l.get("id") in mine]
    # a perf-event link carries a uprobe when its program is of the kprobe type (a tracepoint's is not)
    return [l for l in links if l.get("type") in ("uprobe_multi", 12)
            or (l.get("type") == "perf_event" and kind.get(l.get("prog_id")) == "kprobe")]


class Held:
    """A gpuprobed a test started, and the BPF links and programs it was seen holding: once it has
    exited, none of them may exist (conftest checks it after each test)."""

    def __init__(self, proc):
        self.proc = proc
        self.links, self.progs = set(), set()

    def note(self):
        links, progs = bpf_held(self.proc.pid)
        self.links |= set(links)
        self.progs |= progs

    def left(self, ids=None):
        """(links, progs) of those noted that still exist (ids: bpf_ids() taken by the caller)."""
        links, progs = ids if ids is not None else bpf_ids()
        return sorted(self.links & links), sorted(self.progs & progs)

    def released(self, timeout=10):
        """(links, progs) of those noted still there once the exited tracer's are released (a kernel
        worker frees a link soon after its last descriptor closes), or after timeout seconds."""
        end = time.monotonic() + timeout
        while True:
            links, progs = self.left()
            if (not links and not progs) or time.monotonic() > end:
                return links, progs
            time.sleep(0.1)


TRACKED = []


def track(proc):
    """Registers a gpuprobed started by a test (a Popen); returns its Held, to note() what it holds."""
    held = Held(proc)
    TRACKED.append(held)
    return held


RESUMER_COMM = "gpuprobed-hold"  # the process gpuprobed forks to continue what it holds if it dies
# the process that removes a session's perf-event links after it (src/probes/uprobes.h): ~0.1 s a link, a
# session's few hundred links; a remover alive after this long is a bug
REMOVER_COMM = "gpuprobed-rm"
REMOVER_WAIT_S = 300


def removers(before=()):
    """pids of this test session's probe removers, less those in before."""
    return [pid for pid in session_tracers() if comm(pid) == REMOVER_COMM and pid not in before]


def wait_removers(before=(), timeout=REMOVER_WAIT_S):
    """Waits until the removers started since before have ended; True if they did."""
    end = time.monotonic() + timeout
    while removers(before):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def comm(pid):
    """The process's name ("" once it is gone)."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def proc_state(pid):
    """The state letter of /proc/PID/stat ("R", "S", "T", "Z", ...; "" once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def resumer_of(pid):
    """The pid of gpuprobed pid's resumer (its child named RESUMER_COMM), or None."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        return None
    found = [k for k in kids if comm(k) == RESUMER_COMM]
    return found[0] if found else None


def session_tracers():
    """{pid: command line} of the live gpuprobed processes this test session started (they carry
    SESSION_ENV with this session's value), whoever started them; zombies are gone already."""
    token = os.environ.get(SESSION_ENV)
    exe = os.path.realpath(GPUPROBED)
    found = {}
    if not token:
        return found
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/exe") != exe:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"{SESSION_ENV}={token}".encode() not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                found[int(pid)] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
    return found


def perf_uprobes_of(pid):
    out = subprocess.run(["bpftool", "-j", "perf", "list"], capture_output=True, text=True, check=True).stdout
    return [e for e in json.loads(out or "[]") if e.get("pid") == pid and e.get("fd_type") in ("uprobe", "uretprobe")]


# ---- comparing a report with a workload's own reference -------------------------------

KIND = {"device": "device", "managed": "managed", "pinned_host": "pinned"}


def check_api(proc, ref):
    got = {r["name"]: r for r in proc["cuda_api"]}
    assert set(got) == set(ref["cuda_api"]), \
        f"APIs differ: only in report {set(got) - set(ref['cuda_api'])}, only in workload {set(ref['cuda_api']) - set(got)}"
    for name, want in ref["cuda_api"].items():
        row = got[name]
        assert (row["calls"], row["errors"]) == (want["calls"], want["errors"]), f"{name}: {row} != {want}"
        codes = {str(e["code"]): e["count"] for e in row["error_codes"]}
        assert codes == want["codes"], f"{name} error codes {codes} != {want['codes']}"


def check_transfers(proc, ref):
    got = {(t["direction"], t["host_memory"], t["sync"]): t for t in proc["transfers"]}
    want = {(t["direction"], t["host_memory"], t["sync"]): t for t in ref["transfers"]}
    assert set(got) == set(want), f"transfer rows differ: report {sorted(got)} workload {sorted(want)}"
    for k, w in want.items():
        g = got[k]
        for f in ("calls", "bytes", "min_bytes", "max_bytes"):
            assert g[f] == w[f], f"transfers {k} {f}: {g[f]} != {w[f]}"
    calls = sum(m["calls"] for m in proc["memsets"])
    nbytes = sum(m["bytes"] for m in proc["memsets"])
    assert (calls, nbytes) == (ref["memsets"]["calls"], ref["memsets"]["bytes"]), "memsets"


def check_memory(proc, ref, exact_peak=True):
    mem, rdev, rman, rpin = proc["memory"], ref["memory"]["device"], ref["memory"]["managed"], ref["memory"]["pinned_host"]
    assert mem["alloc_calls"] == rdev["alloc_calls"] + rman["alloc_calls"]
    assert mem["alloc_bytes"] == rdev["alloc_bytes"] + rman["alloc_bytes"]
    assert mem["managed_alloc_calls"] == rman["alloc_calls"]
    assert mem["managed_alloc_bytes"] == rman["alloc_bytes"]
    assert mem["free_calls"] == rdev["free_calls"] + rman["free_calls"] + ref["untracked_frees"]
    assert mem["freed_bytes"] == rdev["freed_bytes"] + rman["freed_bytes"]
    assert mem["live_bytes"] == rdev["live_bytes"] + rman["live_bytes"]
    assert mem["untracked_frees"] == ref["untracked_frees"]
    pin = mem["pinned_host"]
    for f in ("alloc_calls", "free_calls", "alloc_bytes", "freed_bytes", "live_bytes"):
        assert pin[f] == rpin[f], f"pinned_host {f}: {pin[f]} != {rpin[f]}"
    devs = {str(d["device"]): d for d in mem["devices"]}
    assert set(devs) == set(ref["devices"]), f"devices {sorted(devs)} != {sorted(ref['devices'])}"
    for d, w in ref["devices"].items():
        for f in ("alloc_bytes", "freed_bytes", "live_bytes"):
            assert devs[d][f] == w[f], f"device {d} {f}: {devs[d][f]} != {w[f]}"
    if exact_peak:
        assert pin["peak_bytes"] == rpin["peak_bytes"]
        for d, w in ref["devices"].items():
            assert devs[d]["peak_bytes"] == w["peak_bytes"], f"device {d} peak"
        if len(ref["devices"]) == 1:
            assert mem["peak_bytes"] == next(iter(ref["devices"].values()))["peak_bytes"]
    else:
        # Concurrent threads: the order of allocations is the tracer's; bound the peak.
        assert max(d["live_bytes"] for d in mem["devices"]) <= mem["peak_bytes"] <= mem["alloc_bytes"]


def check_leaks(proc, ref):
    live = {(int(a["ptr"], 16), a["bytes"], KIND[a["kind"]], a["device"]) for a in ref["live_allocations"]}
    mem = proc["memory"]
    if proc["exited"]:
        got = {(int(a["ptr"], 16), a["bytes"], a["kind"], a["device"]) for a in mem["leaks"]}
        assert got == live, f"leaks {sorted(got)} != workload's live allocations {sorted(live)}"
        assert mem["leaks_total"] == {"count": len(live), "bytes": sum(a[1] for a in live)}
        assert mem["live_at_end_total"]["count"] == 0
    else:
        got = {(int(a["ptr"], 16), a["bytes"], a["kind"], a["device"]) for a in mem["live_at_end"]}
        assert got == live
        assert mem["leaks_total"]["count"] == 0


def check_kernels(proc, ref):
    unresolved = [k for k in proc["kernels"] if not k["resolved"]]
    assert not unresolved, f"unnamed kernels: {unresolved}"
    got = {k["name"]: k["launches"] for k in proc["kernels"] if k["launches"]}
    assert got == ref["kernels"], f"kernels {got} != {ref['kernels']}"


STREAM_WORK = ("kernels", "graph_launches", "copies", "copy_bytes", "memsets", "memset_bytes", "sync_calls")


def check_streams(proc, ref):
    """Work per stream, against the workload's own accounting per stream."""
    got = {}
    for s in proc["streams"]:
        if s["kind"] == "legacy_default":
            key = "legacy"
        elif s["kind"] == "per_thread_default":
            key = f"ptds:{s['tid']}"
        else:
            key = s["handle"]
        got[key] = s
    for key, want in ref["streams"].items():
        assert key in got, f"stream {key} missing from the report ({sorted(got)})"
        for f in STREAM_WORK:
            assert got[key][f] == want[f], f"stream {key} {f}: {got[key][f]} != {want[f]}"
    for key, row in got.items():
        if key not in ref["streams"]:
            assert all(row[f] == 0 for f in STREAM_WORK), f"work on stream {key} the workload did not do: {row}"


def successful(ref, *names):
    return sum(ref["cuda_api"][n]["calls"] - ref["cuda_api"][n]["errors"] for n in names if n in ref["cuda_api"])


def check_lifecycles(proc, ref):
    """Streams and events created, destroyed, recorded: the workload's successful calls."""
    assert sum(s["created"] for s in proc["streams"]) == successful(
        ref, "cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority")
    assert sum(s["destroyed"] for s in proc["streams"]) == successful(ref, "cudaStreamDestroy")
    ev = proc["events"]
    assert ev["created"] == successful(ref, "cudaEventCreate", "cudaEventCreateWithFlags")
    assert ev["destroyed"] == successful(ref, "cudaEventDestroy")
    assert ev["records"] == successful(ref, "cudaEventRecord", "cudaEventRecord_ptsz")
    assert ev["sync_calls"] == ref["cuda_api"].get("cudaEventSynchronize", {"calls": 0})["calls"]


def check_threads(proc, ref):
    got = {str(t["tid"]): t["calls"] for t in proc["threads"] if t["calls"]}
    assert got == ref["threads"], f"threads {got} != {ref['threads']}"


def instrumentation_hits(report, targets):
    """Kernel-side hits per (api, kind) on the given library files, over every probe placed there."""
    hits = {}
    for r in report["instrumentation"]:
        if r["target"] in targets:
            key = (r["api"], r["kind"])
            hits[key] = hits.get(key, 0) + r["hits"]
    return hits


def check_instrumentation(report, pid, ref):
    """Kernel-side hit counters equal the calls: independent of the ring buffer.

    Probes sit on library files and count every traced process that maps them, so
    this compares one process's calls only when no other traced process shares its
    files (tests of several processes check the sum with check_instrumentation_sum)."""
    proc = process(report, pid)
    targets = {lib["path"] for lib in proc["libraries"]}
    if any(targets & {lib["path"] for lib in p["libraries"]} for p in report["processes"] if p is not proc):
        return
    check_instrumentation_sum(report, targets, [ref])


def check_instrumentation_sum(report, targets, refs):
    hits = instrumentation_hits(report, targets)
    names = {name for ref in refs for name in ref["cuda_api"]}
    for name in names:
        want = sum(ref["cuda_api"].get(name, {"calls": 0})["calls"] for ref in refs)
        got = (hits.get((name, "uprobe"), 0), hits.get((name, "uretprobe"), 0))
        assert got == (want, want), f"{name}: hits {got}, calls {want}"


# Not a loss: the kernel did not report a thread's return to the CPU (seen on virtualized
# kernels); CPU time stays exact, that interval's off-CPU time is estimated.
KERNEL_GAPS = ("switch_in_unseen",)


def check_no_loss(report):
    lost = {k: v for k, v in report["drops"].items() if v and k not in KERNEL_GAPS}
    assert not lost, f"drops: {report['drops']}"
    assert report["drops_total"] == sum(report["drops"].values())


def check_all(report, ref, exact_peak=True, session_drops=True, host_path=None):
    """The process of ref exactly as ref says. session_drops=False where the session also traced
    processes that are not the test's own (--all, the daemon): drops{} are the session's, not a
    process's, and another process's are no fault of this one; the exact comparisons stand for
    its completeness."""
    proc = process(report, ref["pid"])
    check_api(proc, ref)
    check_transfers(proc, ref)
    check_memory(proc, ref, exact_peak=exact_peak)
    check_leaks(proc, ref)
    check_kernels(proc, ref)
    check_streams(proc, ref)
    check_lifecycles(proc, ref)
    check_threads(proc, ref)
    check_instrumentation(report, ref["pid"], ref)
    check_library_build_ids(proc, host_path)
    if session_drops:
        check_no_loss(report)
    return proc


# ---- call stacks (processes[].stacks, stacks*.folded) ----------------------------------

# A stack is complete when its outermost frame is where a thread starts: in the C library or
# in one of these functions (docs: processes[].stacks).
THREAD_ROOTS = {"_start", "__libc_start_main", "__libc_start_call_main", "start_thread", "clone", "clone3"}
# The APIs whose outermost calls carry a stack (launch, copy, memset, allocation, free, sync)
# among those the stack workloads make.
STACKED_APIS = {"cudaLaunchKernel", "cudaMemcpy", "cudaMemset", "cudaMalloc", "cudaFree",
                "cudaStreamSynchronize", "cudaDeviceSynchronize"}
# The pseudo-frame of the stack that takes the calls beyond --max-stacks.
TABLE_FULL = "[stack table full]"
FOLDED_FILES = ("stacks.folded", "stacks.bytes.folded", "stacks.host_ns.folded")
STACK_FILES = FOLDED_FILES + ("flamegraph.svg", "speedscope.json", "profile.pb.gz")


def stack_frames(proc, stack):
    """The frame objects of a stack, leaf first (frame 0 = the call site)."""
    frames = proc["stacks"]["frames"]
    return [frames[i] for i in stack["frames"]]


def stack_functions(proc, stack):
    """Leaf-first function names of a stack (None for a frame without a function)."""
    return [f["function"] for f in stack_frames(proc, stack)]


def stack_ops(stack, api=None):
    return [op for op in stack["ops"] if api is None or op["api"] == api]


def find_stacks(proc, leaf_first_prefix, api=None):
    """Stacks whose leaf-first function names start with leaf_first_prefix (and, given api,
    that carry an operation of that API)."""
    n = len(leaf_first_prefix)
    return [s for s in proc["stacks"]["stacks"]
            if stack_functions(proc, s)[:n] == list(leaf_first_prefix) and stack_ops(s, api)]


def find_stacks_through(proc, functions, api=None):
    """Stacks whose leaf-first function names contain `functions` as a contiguous run, anywhere
    (for launches that pass through frames of a library's own, such as nvcc's launch stubs)."""
    want, n = list(functions), len(functions)
    out = []
    for s in proc["stacks"]["stacks"]:
        names = stack_functions(proc, s)
        if stack_ops(s, api) and any(names[i:i + n] == want for i in range(len(names) - n + 1)):
            out.append(s)
    return out


def is_table_full(proc, stack):
    """The stack that collects the calls beyond --max-stacks (no frames of its own)."""
    return stack["truncated"] == "table_full"


def is_thread_root(frame):
    """A frame of the code that starts threads: the C library or _start & co."""
    return frame["function"] in THREAD_ROOTS or os.path.basename(frame["file"] or "").startswith("libc.so")


def folded_frame(frame):
    """A frame as the folded files write it: its function, else FILE+0xOFFSET, else [unknown]."""
    if frame["function"]:
        return frame["function"]
    if frame["file"]:
        return f"{os.path.basename(frame['file'])}+0x{frame['file_offset']:x}"
    return "[unknown]"


def folded_stack(proc, stack, op):
    """The folded line (without its weight) of one operation of a report stack:
    "COMM (pid N);[truncated];outermost;...;call site;API;LEAF"."""
    parts = [f"{proc['comm']} (pid {proc['pid']})"]
    if stack["truncated"]:
        parts.append("[truncated]")
    parts += [folded_frame(f) for f in reversed(stack_frames(proc, stack))]
    parts += [op["api"], op["op"]]
    return ";".join(parts)


def check_stacks_consistent(proc):
    """What processes[].stacks must say about itself, whatever the workload: totals equal the
    sums of their parts, indexes valid, stacks sorted by calls, truncation marked as described."""
    st = proc["stacks"]
    nframes = len(st["frames"])
    full = sum(1 for s in st["stacks"] if is_table_full(proc, s))
    assert full <= 1, "more than one [stack table full] stack"
    assert st["distinct"] == len(st["stacks"]) - full, f"distinct {st['distinct']} != {len(st['stacks'])} stacks listed"
    assert st["calls"] == sum(s["calls"] for s in st["stacks"]), "stacks.calls != sum of the stacks' calls"
    assert st["truncated_stacks"] == sum(1 for s in st["stacks"] if s["truncated"] and not is_table_full(proc, s))
    calls = [s["calls"] for s in st["stacks"]]
    assert calls == sorted(calls, reverse=True), "stacks[] not sorted by calls, descending"
    for s in st["stacks"]:
        assert (s["frames"] or is_table_full(proc, s)) and all(0 <= i < nframes for i in s["frames"]), \
            f"bad frame indexes {s['frames']}"
        assert s["truncated"] in TRUNCATIONS, s["truncated"]
        assert (s["unwind_stop"] is not None) == (s["truncated"] == "unwind_table"), \
            f"unwind_stop {s['unwind_stop']!r} with truncated {s['truncated']!r}"
        for field in ("calls", "bytes", "host_ns"):
            assert s[field] == sum(op[field] for op in s["ops"]), f"stack {field} != sum of its ops: {s}"
        assert len({(op["api"], op["op"]) for op in s["ops"]}) == len(s["ops"]), f"an op listed twice: {s['ops']}"
        if s["truncated"] is None and not is_table_full(proc, s):
            assert is_thread_root(stack_frames(proc, s)[-1]), \
                f"complete stack whose outermost frame is not a thread's start: {stack_frames(proc, s)[-1]}"
    for f in st["frames"]:
        assert f["source"] in ("elf", "perf_map", None), f
    return st


def check_folded_files(out_dir, report, stack_key=None):
    """The three folded files say what report.json says, line for line: one line per (stack, op)
    of every process, weighted by calls, bytes and host time, each line as stack_key(proc, stack, op)
    writes it (folded_stack by default). Lines of weight 0 may be left out."""
    stack_key = stack_key or folded_stack
    want = {"stacks.folded": {}, "stacks.bytes.folded": {}, "stacks.host_ns.folded": {}}
    for proc in report["processes"]:
        if not proc["stacks"]["captured"]:
            continue
        for s in proc["stacks"]["stacks"]:
            for op in s["ops"]:
                key = stack_key(proc, s, op)
                for name, field in (("stacks.folded", "calls"), ("stacks.bytes.folded", "bytes"),
                                    ("stacks.host_ns.folded", "host_ns")):
                    want[name][key] = want[name].get(key, 0) + op[field]
    for name, lines in want.items():
        got = stack_formats.parse_folded(os.path.join(str(out_dir), name))
        got = {k: v for k, v in got.items() if v}
        lines = {k: v for k, v in lines.items() if v}
        assert got == lines, f"{name} differs from report.json: only in file {sorted(set(got) - set(lines))[:5]}, " \
                             f"only in report {sorted(set(lines) - set(got))[:5]}, " \
                             f"weights differ {[(k, got[k], lines[k]) for k in got if k in lines and got[k] != lines[k]][:5]}"


# ---- merged stacks: native frames and the Python frames they ran (frames[].kind) ---------------

# How a stack may end early (stacks[].truncated), with the causes the unwind tables add.
TRUNCATIONS = (None, "depth", "unwind", "unread", "table_full", "no_mapping", "no_unwind_info", "unwind_table",
               "rbp_unknown")
# The interpreter's function that a merged stack replaces with the Python frames it was running.
PY_EVAL_FUNCTION = "_PyEval_EvalFrameDefault"


def is_python_frame(frame):
    return frame.get("kind") == "python"


def frame_label(frame):
    """A frame as the folded files, the flame graph and speedscope name it: a Python frame
    "qualname (file.py:LINE)", a native one as folded_frame() says."""
    if is_python_frame(frame):
        return f"{frame['function']} ({os.path.basename(frame['file'] or '')}:{frame['line']})"
    return folded_frame(frame)


def folded_stack_labels(proc, stack, op):
    """folded_stack() with Python frames labelled as frame_label() says."""
    parts = [f"{proc['comm']} (pid {proc['pid']})"]
    if stack["truncated"]:
        parts.append("[truncated]")
    parts += [frame_label(f) for f in reversed(stack_frames(proc, stack))]
    parts += [op["api"], op["op"]]
    return ";".join(parts)


def check_folded_files_labels(out_dir, report):
    """check_folded_files() for stacks that may hold Python frames: each frame labelled as
    frame_label() says."""
    check_folded_files(out_dir, report, folded_stack_labels)


def check_merged_stacks_consistent(proc):
    """check_stacks_consistent() for stacks of native and Python frames: totals, indexes, order,
    truncation as there, and each frame's kind: a native frame has no line; a Python frame names
    its code's qualified name, file and line (source "python"), and is never a stack's first or
    outermost frame (a call is made by native code, a thread starts in it)."""
    st = proc["stacks"]
    nframes = len(st["frames"])
    full = sum(1 for s in st["stacks"] if is_table_full(proc, s))
    assert full <= 1, "more than one [stack table full] stack"
    assert st["distinct"] == len(st["stacks"]) - full, f"distinct {st['distinct']} != {len(st['stacks'])} stacks listed"
    assert st["calls"] == sum(s["calls"] for s in st["stacks"]), "stacks.calls != sum of the stacks' calls"
    assert st["truncated_stacks"] == sum(1 for s in st["stacks"] if s["truncated"] and not is_table_full(proc, s))
    calls = [s["calls"] for s in st["stacks"]]
    assert calls == sorted(calls, reverse=True), "stacks[] not sorted by calls, descending"
    for f in st["frames"]:
        assert f.get("kind") in ("native", "python"), f"frame without kind native/python: {f}"
        if is_python_frame(f):
            assert f["source"] == "python" and f["function"] and f["file"], f"Python frame without its code: {f}"
            assert isinstance(f["line"], int) and f["line"] > 0, f"Python frame without its line: {f}"
        else:
            assert "line" in f and f["line"] is None and f["source"] in ("elf", "perf_map", None), \
                f"native frame: {f}"
    for s in st["stacks"]:
        assert (s["frames"] or is_table_full(proc, s)) and all(0 <= i < nframes for i in s["frames"]), \
            f"bad frame indexes {s['frames']}"
        assert s["truncated"] in TRUNCATIONS, f"truncated {s['truncated']!r}"
        for field in ("calls", "bytes", "host_ns"):
            assert s[field] == sum(op[field] for op in s["ops"]), f"stack {field} != sum of its ops: {s}"
        if s["frames"]:
            frames = stack_frames(proc, s)
            assert not is_python_frame(frames[0]), f"a stack whose call site is a Python frame: {frames[0]}"
            if s["truncated"] is None:
                assert not is_python_frame(frames[-1]) and is_thread_root(frames[-1]), \
                    f"complete stack whose outermost frame is not a thread's start: {frames[-1]}"
    return st


class ScriptWorkload(Workload):
    """A workload that is a script run by an interpreter (tests/workloads/py_stacks.py under one
    Python): the same protocol as Workload (--ref, --wait: READY <pid> and a go line, DONE, --hold);
    its pid is the interpreter's."""

    def __init__(self, interpreter, script, tmp_path, args=(), env=None, hold=False, wait=True):
        name = f"{os.path.basename(script)}-{os.path.basename(interpreter)}"
        self._start([interpreter, script], name, f"{interpreter} {script}", 60, tmp_path, args, env, hold, wait)


def nccl_ranks_job(tmp_path, args, tracer_args=()):
    """gpuprobed [tracer_args] -- nccl_ranks --ref-dir DIR ARGS at a real-time priority (chrt --rr 1: which
    rank is late must be the schedule's doing, not the machine's other load): (report, {rank: its
    reference}, stderr). The ranks run as root, as gpuprobed (it would run them as the sudo user)."""
    chrt = shutil.which("chrt")
    refs_dir = tmp_path / "refs"
    refs_dir.mkdir()
    assert chrt, "chrt (util-linux) is needed to run gpuprobed and the ranks at a real-time priority"
    env = sim_env()
    env.pop("SUDO_UID", None)
    env.pop("SUDO_GID", None)
    p = subprocess.run([chrt, "--rr", "1", GPUPROBED, "-o", str(tmp_path / "out"), *tracer_args, "--",
                        os.path.join(WORKLOADS, "nccl_ranks"), "--ref-dir", str(refs_dir), *args],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180, env=env)
    assert p.returncode == 0, f"gpuprobed exited with {p.returncode}: {p.stderr}"
    refs = {}
    for path in glob.glob(str(refs_dir / "*.json")):
        with open(path) as f:
            ref = json.load(f)
        refs[ref["rank"]] = ref
    with open(tmp_path / "out" / "report.json") as f:
        report = json.load(f)
    return report, refs, p.stderr
