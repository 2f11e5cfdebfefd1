# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Session set-up for the end-to-end tests: root, tracefs, a built tree; and after each test, no
gpuprobed of its own left running and nothing of what they attached left in the kernel.

Other tracers may run beside the tests (a developer's gpuprobed, another test run): the checks
look at this session's own gpuprobed processes only, never at machine-wide counts."""
import os
import secrets
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gp  # noqa: E402

# Inherited by every process the tests start: tells this session's gpuprobed processes from others.
os.environ[gp.SESSION_ENV] = secrets.token_hex(8)


def pytest_configure(config):
    config.addinivalue_line("markers", "any_kernel: runs also where gpuprobed refuses the kernel")


@pytest.fixture(scope="session", autouse=True)
def e2e_environment():
    if os.geteuid() != 0:
        pytest.skip("end-to-end tests load real BPF programs: run them as root (sudo make test)")
    if not os.path.ismount("/sys/kernel/tracing"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=False)
    for path, what in ((gp.GPUPROBED, "gpuprobed"), (os.path.join(gp.SIMGPU, "libcudart.so.13"), "the simulated GPU"),
                       (gp.WORKLOADS, "the workloads")):
        if not os.path.exists(path):
            pytest.fail(f"{what} is not built ({path}): run make first")
    gp.REFUSED = gp.kernel_refusal()  # a feature this kernel lacks and nothing replaces
    yield
    for board in gp.BOARDS:  # shm_unlink's file
        try:
            os.unlink("/dev/shm" + board)
        except FileNotFoundError:
            pass
    check_nothing_left(set(), gp.TRACKED, "the end-to-end tests")


def check_nothing_left(running_before, tracked, who):
    """No gpuprobed this session started since running_before was taken is still running (killed if
    one is), and no BPF link or program that one of `tracked` was seen holding still exists: links
    and programs go when the last descriptor closes, so one that stays was pinned, or handed to a
    process that outlived the tracer."""
    # a gpuprobed's resumer (it continues what gpuprobed held) ends soon after gpuprobed: given a while;
    # its remover (perf-event links, removed after the session one at a time) ends when they are gone
    for name, wait_s in ((gp.RESUMER_COMM, 10), (gp.REMOVER_COMM, gp.REMOVER_WAIT_S)):
        end = time.monotonic() + wait_s
        while time.monotonic() < end and any(gp.comm(pid) == name and pid not in running_before
                                             for pid in gp.session_tracers()):
            time.sleep(0.05)
    stray = {pid: cmd for pid, cmd in gp.session_tracers().items() if pid not in running_before}
    for held in tracked:
        if held.proc.poll() is None:
            stray[held.proc.pid] = " ".join(map(str, held.proc.args))
    for pid in stray:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    for held in tracked:
        held.proc.wait(timeout=30)
    assert not stray, f"gpuprobed still running after {who} (killed now): {stray}"
    end = time.monotonic() + 10  # a link is released by a kernel worker, soon after its last close
    while True:
        ids = gp.bpf_ids() if tracked else (set(), set())
        left = {h.proc.pid: h.left(ids) for h in tracked}
        left = {pid: lp for pid, lp in left.items() if lp[0] or lp[1]}
        if not left or time.monotonic() > end:
            break
        time.sleep(0.1)
    assert not left, "BPF (links, programs) of exited gpuprobed processes still in the kernel after " \
                     f"{who}: {left}"


@pytest.fixture(autouse=True)
def nothing_left_by_the_test(request):
    # where gpuprobed refuses this kernel, only the tests of that refusal run (tests/e2e/test_kernel.py)
    if gp.REFUSED and not request.node.get_closest_marker("any_kernel"):
        pytest.skip(f"gpuprobed does not run on this kernel: {gp.REFUSED}")
    running_before = set(gp.session_tracers())
    first = len(gp.TRACKED)
    yield
    check_nothing_left(running_before, gp.TRACKED[first:], request.node.nodeid)


@pytest.fixture
def real_cudart():
    """The real CUDA runtime, or a visible skip."""
    lib = os.path.join(gp.REAL_CUDA_LIB, "libcudart.so.13")
    if not os.path.exists(lib):
        pytest.skip(f"CUDA toolkit not installed ({lib} missing): the real-runtime test needs it")
    return gp.REAL_CUDA_LIB
