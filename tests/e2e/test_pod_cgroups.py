# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Kubernetes pods, as far as this machine can have them: Kubernetes cannot run here, so the test
makes the cgroups a kubelet makes (its systemd and cgroupfs drivers' names, in the cgroup v2 and v1
hierarchies this machine mounts) and the kubelet's log directory of the pod
(/var/log/pods/NAMESPACE_NAME_UID/CONTAINER/), moves a waiting workload into the cgroup, and checks
that gpuprobed names the process's container and pod as they say, and that --container finds it by
its id. The CRI runtime's own state (containerd's, cri-o's) is not made: a pod of several containers
is named by its pod only (docs/report-format.md)."""
import os
import secrets
import shutil
import uuid

import pytest

import gp

CGROUP = "/sys/fs/cgroup"
LOG_PODS = "/var/log/pods"


def hierarchy(kind):
    """The mount point of the cgroup v2 hierarchy ("v2") or of a v1 controller's ("pids"), or None."""
    for line in open("/proc/self/mounts"):
        dev, point, fstype, opts = line.split()[:4]
        if kind == "v2" and fstype == "cgroup2":
            return point
        if kind != "v2" and fstype == "cgroup" and kind in opts.split(","):
            return point
    return None


LAYOUTS = {
    # the kubelet's systemd driver, containerd as the runtime, in the unified hierarchy
    "systemd-containerd": ("v2", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/"
                                 "cri-containerd-{id}.scope", "containerd"),
    # the cgroupfs driver: the bare container id under the pod, in a v1 controller's hierarchy
    "cgroupfs-v1": ("pids", "kubepods/besteffort/pod{uid}/{id}", "kubernetes"),
}


class Pod:
    """A pod's cgroup (made as the kubelet names it) and its log directory."""

    def __init__(self, layout):
        self.kind, pattern, self.runtime = LAYOUTS[layout]
        root = hierarchy(self.kind)
        if not root or not os.access(root, os.W_OK):
            pytest.skip(f"no writable cgroup hierarchy {self.kind!r} here to make a kubelet's cgroups in")
        self.uid = str(uuid.uuid4())
        self.id = secrets.token_hex(32)
        self.namespace, self.name, self.container = "gp-e2e", f"trainer-{secrets.token_hex(3)}", "worker"
        rel = pattern.format(uid=self.uid, uid_=self.uid.replace("-", "_"), id=self.id)
        self.top = os.path.join(root, rel.split("/")[0])
        self.path = os.path.join(root, rel)
        self.made_logs = not os.path.exists(LOG_PODS)
        self.logs = os.path.join(LOG_PODS, f"{self.namespace}_{self.name}_{self.uid}")
        try:
            os.makedirs(os.path.join(self.logs, self.container))
        except OSError as e:
            pytest.skip(f"cannot make the kubelet's log directory {self.logs}: {e.strerror}")
        os.makedirs(self.path)

    def enter(self, pid):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def remove(self):
        """Its cgroups, innermost first (a process in them must have left), and its log directory."""
        d = self.path
        while len(d) >= len(self.top):
            try:
                os.rmdir(d)
            except OSError:
                break
            if d == self.top:
                break
            d = os.path.dirname(d)
        shutil.rmtree(self.logs, ignore_errors=True)
        if self.made_logs:
            shutil.rmtree(LOG_PODS, ignore_errors=True)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_pods_process_is_named_by_its_pod(tmp_path, layout):
    """A process in a pod's container cgroup: --container by the container's id traces it, exact,
    and the report names its runtime, container id, container name (the pod's only container in
    the kubelet's log directory) and its pod's uid, name and namespace."""
    pod = Pod(layout)
    wl = gp.Workload("basic_ops", tmp_path)
    try:
        pod.enter(wl.pid)
        tr = gp.Tracer(["--container", pod.id], tmp_path / "out")
        tr.wait_tracing()
        report = gp.run_and_stop([wl], tr)
        proc = gp.check_all(report, wl.ref())
        c = proc["container"]
        assert (c["runtime"], c["id"], c["name"]) == (pod.runtime, pod.id, pod.container), c
        assert c["pod"] == {"uid": pod.uid, "name": pod.name, "namespace": pod.namespace}, c
        assert proc["ns_pid"] == wl.pid  # in no pid namespace of its own
        assert [p["pid"] for p in report["processes"]] == [wl.pid]
    finally:
        wl.kill()
        pod.remove()
