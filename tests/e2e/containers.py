# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A real container runtime for the end-to-end tests: Debian's podman, rootful, with runc and
overlay storage, and an image built here from the tree's own files (no registry).

The image holds the workloads and the simulated GPU at /opt/gp (their rpath, $ORIGIN/../simgpu,
finds it there), the C library they link, and optionally a CPython of pyenv's at its own prefix.
Every container a test starts is named gp-<token>-..., runs with stdin open (the workloads'
READY/go handshake goes through podman) and writes its reference into a directory of the host
mounted at /out."""
import json
import os
import secrets
import shutil
import subprocess
import tarfile
import time

import gp

IMAGE_ROOT = "/opt/gp"
# crun refuses a hybrid cgroup layout; runc runs here, with limits no higher than the session's
RUN_ARGS = ("--runtime", "runc", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")
TOKEN = secrets.token_hex(4)


def podman(*args, check=True, timeout=120):
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check, timeout=timeout)


def host_path(path):
    """Where this machine has the file the image holds at path (the image was built from them)."""
    for inside, outside in ((f"{IMAGE_ROOT}/workloads", gp.WORKLOADS), (f"{IMAGE_ROOT}/simgpu", gp.SIMGPU)):
        if path.startswith(inside + "/"):
            return outside + path[len(inside):]
    return path


def why_not():
    """Why a rootful podman with runc cannot run a container here, or None when it can."""
    for tool in ("podman", "runc"):
        if not shutil.which(tool):
            return f"{tool} is not installed (make deps installs podman and runc)"
    try:
        r = podman("info", "--format", "{{.Store.GraphDriverName}}", check=False)
    except subprocess.TimeoutExpired:
        return "podman info did not answer within 120 s"
    if r.returncode:
        return f"podman info failed: {r.stderr.strip()[:300]}"
    if r.stdout.strip() != "overlay":
        return f"podman's storage driver is {r.stdout.strip()!r}, not overlay"
    return None


def _needed_libs(paths):
    """The shared libraries (and loader) that ldd lists for paths, outside the tree."""
    libs = set()
    for path in paths:
        out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            lib = parts[2] if "=>" in parts and len(parts) > 2 else (parts[0] if parts and parts[0].startswith("/") else None)
            if lib and lib.startswith("/") and not lib.startswith(gp.BUILD):
                libs.add(lib)
    return libs


def _add(tar, path, arcname):
    arc = os.path.normpath(arcname).lstrip("/")
    if arc not in tar.added:  # a library ldd lists may be in a tree added already
        tar.added.add(arc)
        tar.add(os.path.realpath(path), arcname=arc, recursive=False)


def _add_tree(tar, src, dst, skip=()):
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d not in skip]
        rel = os.path.relpath(root, src)
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) and not os.path.exists(path):
                continue
            arc = os.path.normpath(os.path.join(dst, rel, name)).lstrip("/")
            if arc in tar.added:
                continue
            tar.added.add(arc)
            if os.path.islink(path):
                info = tarfile.TarInfo(arc)
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(path)
                tar.addfile(info)
            else:
                tar.add(path, arcname=arc, recursive=False)


def build_image(tmp_dir, name, python_prefix=None):
    """Imports an image `name` of the workloads and the simulated GPU (and python_prefix's CPython,
    at the same prefix). Returns name."""
    tar_path = os.path.join(str(tmp_dir), "image.tar")
    workloads = [os.path.join(gp.WORKLOADS, n) for n in os.listdir(gp.WORKLOADS)
                 if os.access(os.path.join(gp.WORKLOADS, n), os.X_OK) and
                 os.path.isfile(os.path.join(gp.WORKLOADS, n))]
    native = workloads + [os.path.join(gp.SIMGPU, n) for n in os.listdir(gp.SIMGPU) if ".so" in n]
    if python_prefix:
        native.append(os.path.join(python_prefix, "bin", "python3"))
        for root, _, files in os.walk(os.path.join(python_prefix, "lib")):
            native += [os.path.join(root, n) for n in files if n.endswith(".so") and "lib-dynload" in root]
    with tarfile.open(tar_path, "w") as tar:
        tar.added = set()
        for d in ("tmp", "out", "lib64"):
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        _add_tree(tar, gp.WORKLOADS, f"{IMAGE_ROOT}/workloads", skip=("obj",))
        _add_tree(tar, gp.SIMGPU, f"{IMAGE_ROOT}/simgpu", skip=("obj",))
        _add_tree(tar, os.path.join(gp.ROOT, "tests", "workloads"), f"{IMAGE_ROOT}/src",
                  skip=("nofp", "reload", "stacks"))
        if python_prefix:
            _add_tree(tar, python_prefix, python_prefix, skip=("test", "tests", "idlelib", "tkinter",
                                                                "ensurepip", "__pycache__", "include",
                                                                "share", "site-packages"))
        # glibc's backtrace() loads libgcc_s itself (dlopen): ldd does not list it
        libs = _needed_libs(native) | {p for p in ("/lib/x86_64-linux-gnu/libgcc_s.so.1",) if os.path.exists(p)}
        for lib in sorted(libs):
            _add(tar, lib, lib)
    podman("import", tar_path, name, timeout=600)
    os.unlink(tar_path)
    return name


def remove_image(name):
    podman("rmi", "-f", name, check=False)


class Container:
    """A container of the image running one workload (the protocol of gp.Workload: READY, go,
    DONE, then it exits when stdin closes), its reference written to out_dir on the host."""

    def __init__(self, image, out_dir, workload, args=(), wait=True, name=None, env=None, command=None):
        self.name = name or f"gp-{TOKEN}-{secrets.token_hex(3)}"
        self.out_dir = str(out_dir)
        os.makedirs(self.out_dir, exist_ok=True)
        self.ref_path = os.path.join(self.out_dir, f"ref-{self.name}.json")
        argv = ["podman", "run", "-i", "--rm", *RUN_ARGS, "--name", self.name,
                "-v", f"{self.out_dir}:/out"]
        for k, v in (env or {}).items():
            argv += ["-e", f"{k}={v}"]
        argv += [image, *(command or [f"{IMAGE_ROOT}/workloads/{workload}"]), "--ref", f"/out/ref-{self.name}.json",
                 *args]
        if wait:
            argv.append("--wait")
        self._start(argv, wait)

    def _start(self, argv, wait):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.stdout = gp.LineReader(self.proc.stdout)
        self.pid = self.id = None
        if wait:
            line = self.stdout.readline(120)
            if not line or not line.startswith("READY"):
                self.kill()
                raise AssertionError(f"container {self.name} did not start: {line!r}; "
                                     f"stderr: {self.proc.stderr.read()}")
            self.pid = self.host_pid()
            self.id = podman("inspect", "--format", "{{.Id}}", self.name).stdout.strip()

    def host_pid(self):
        """The container's first process as the host names it (podman's own record)."""
        r = podman("inspect", "--format", "{{.State.Pid}}", self.name, check=False)
        return int(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip().isdigit() else None

    def container_id(self):
        """Its full id, as podman gave it when it started."""
        return self.id

    def release(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def wait_done(self, timeout=120):
        line = self.stdout.readline(timeout)
        if line is None or line.strip() != "DONE":
            err = self.proc.stderr.read() if self.proc.poll() is not None else "(still running)"
            raise AssertionError(f"container {self.name}: expected DONE, got {line!r}; stderr: {err}")

    def finish(self, timeout=120):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        rc = self.proc.wait(timeout=timeout)
        assert rc == 0, f"container {self.name} exited with {rc}: {self.proc.stderr.read()}"

    def ref(self):
        """The workload's own reference; its pid is the one inside the container's pid namespace."""
        with open(self.ref_path) as f:
            return json.load(f)

    def kill(self):
        podman("rm", "-f", "-t", "0", self.name, check=False)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def wait_gone(containers, timeout=60):
    end = time.monotonic() + timeout
    for c in containers:
        while c.proc.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
