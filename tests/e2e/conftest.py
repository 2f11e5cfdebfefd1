# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Session set-up for the end-to-end tests: root, tracefs, a built tree."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gp  # noqa: E402


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
    before = len(gp.uprobe_links())
    yield
    # Whatever the tests did, nothing of ours may stay attached.
    left = len(gp.uprobe_links()) - before
    assert left <= 0, f"{left} uprobe link(s) left attached after the end-to-end tests"


@pytest.fixture
def real_cudart():
    """The real CUDA runtime, or a visible skip."""
    lib = os.path.join(gp.REAL_CUDA_LIB, "libcudart.so.13")
    if not os.path.exists(lib):
        pytest.skip(f"CUDA toolkit not installed ({lib} missing): the real-runtime test needs it")
    return gp.REAL_CUDA_LIB
