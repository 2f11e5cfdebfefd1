# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The npm packages of the real consumers the tests open gpuprobed's files with
(tests/e2e/npm/package.json, pinned by its lock file): `make deps` installs
them into $BUILD/npm; a test run without them installs them the same way
(npm ci, once, under a lock: parallel runs share the build directory).

package(name) -> (its directory, None), or (None, why it cannot be had).
run(script, name, *args) -> node's CompletedProcess of SCRIPT PACKAGE_DIR ARGS..., or
why it cannot be run (a string)."""
import fcntl
import json
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("GP_BUILD", os.path.join(ROOT, "build"))
PREFIX = os.path.join(BUILD, "npm")
SPEC = os.path.join(HERE, "npm")

_failed = None  # why, once an install failed: offline, every retry would wait as long


def pinned(name):
    with open(os.path.join(SPEC, "package.json"), encoding="utf-8") as f:
        return json.load(f)["dependencies"][name]


def installed_version(name):
    try:
        with open(os.path.join(PREFIX, "node_modules", name, "package.json"), encoding="utf-8") as f:
            return json.load(f).get("version")
    except (OSError, ValueError):
        return None


def _install():
    npm = shutil.which("npm")
    if not npm:
        return "npm is not installed (make deps installs it)"
    os.makedirs(PREFIX, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(SPEC, f), PREFIX)
    cmd = [npm, "ci", "--prefix", PREFIX, "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "npm ci timed out (offline?)"
    if r.returncode != 0:
        said = [line for line in r.stderr.splitlines() if line.startswith("npm error") and "complete log" not in line]
        return "npm ci failed (offline?): " + ("; ".join(said[:2]) or f"exit {r.returncode}")
    shutil.copy(os.path.join(SPEC, "package-lock.json"), os.path.join(PREFIX, ".installed-lock"))
    return None


def package(name):
    global _failed
    want = pinned(name)
    if installed_version(name) == want:
        return os.path.join(PREFIX, "node_modules", name), None
    if _failed:
        return None, _failed
    os.makedirs(PREFIX, exist_ok=True)
    with open(os.path.join(PREFIX, ".install-lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed_version(name) != want:
            _failed = _install()
            if not _failed and installed_version(name) != want:
                _failed = f"npm ci installed {name} {installed_version(name)}, not {want}"
    if _failed:
        return None, f"{name}@{want}: {_failed}"
    return os.path.join(PREFIX, "node_modules", name), None


def run(script, name, *args, timeout=300):
    node = shutil.which("node")
    if not node:
        return "node is not installed (make deps installs it)"
    pkg, why = package(name)
    if why:
        return why
    return subprocess.run([node, script, pkg, *map(str, args)], capture_output=True, text=True, timeout=timeout)
