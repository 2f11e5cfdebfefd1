# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Overlay mounts without a container runtime (so that every kernel of the matrix runs it, in a VM
too): two overlayfs mounts over one lower directory holding a workload and the simulated GPU, as two
containers of one image are, and the lower directory itself. The kernel places a uprobe on the layer
file under each overlay, so the three paths reach one probed file: probed once, every process's calls
counted once, exactly as each counted them."""
import os
import shutil
import subprocess

import pytest

import gp


@pytest.fixture
def mounts(tmp_path):
    lower = tmp_path / "lower"
    shutil.copytree(gp.SIMGPU, lower / "simgpu", ignore=shutil.ignore_patterns("obj", "*.a"), symlinks=True)
    (lower / "workloads").mkdir()
    shutil.copy2(os.path.join(gp.WORKLOADS, "basic_ops"), lower / "workloads")
    points = []
    if "overlay" not in open("/proc/filesystems").read():
        subprocess.run(["modprobe", "overlay"], capture_output=True)  # a module, on Debian's kernels
    try:
        for i in (1, 2):
            upper, work, point = (tmp_path / f"{d}{i}" for d in ("upper", "work", "merged"))
            for d in (upper, work, point):
                d.mkdir()
            r = subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                                f"lowerdir={lower},upperdir={upper},workdir={work}", str(point)],
                               capture_output=True, text=True)
            if r.returncode:
                pytest.skip(f"cannot mount an overlay here: {r.stderr.strip()}")
            points.append(point)
        yield lower, points
    finally:
        for p in points:
            subprocess.run(["umount", "-l", str(p)], check=False)


def test_two_overlays_and_their_lower_directory_probe_one_file(mounts, tmp_path):
    """basic_ops run at once from two overlay mounts of one lower directory and from the lower
    directory itself, traced by --all from before they start: each exact, one probe set per library
    (the kernel's hit counters equal the three workloads' calls summed)."""
    lower, points = mounts
    wls = [gp.Workload(str(d / "workloads" / "basic_ops"), tmp_path) for d in (*points, lower)]
    try:
        tr = gp.Tracer(["--all"], tmp_path / "out")
        tr.wait_tracing()
        report = gp.run_and_stop(wls, tr)
        refs = [w.ref() for w in wls]
        for ref in refs:
            gp.check_all(report, ref, session_drops=False)
        probes = {}
        for r in report["instrumentation"]:
            probes.setdefault((r["api"], r["kind"]), set()).add(r["target"])
        assert all(len(t) == 1 for t in probes.values()), {k: t for k, t in probes.items() if len(t) > 1}
        targets = {lib["path"] for w in wls for lib in gp.process(report, w.pid)["libraries"]}
        gp.check_instrumentation_sum(report, targets, refs)
        gp.check_no_loss(report)
    finally:
        for w in wls:
            w.kill()
