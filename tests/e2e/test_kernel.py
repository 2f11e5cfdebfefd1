# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""What gpuprobed says of the kernel (report.json session.kernel), against the kernel's own answers:
the BPF features it uses against bpftool's probe of the same kernel and the kernel's BTF (an
uprobe_multi kernel names BPF_TRACE_UPROBE_MULTI), kernel.perf_event_paranoid against /proc/sys;
what stands in for a feature, said once on stderr and in the report; the probes' removal timed
within gpuprobed's own run. And least privilege: with the systemd unit's capabilities only, where
kernel.perf_event_paranoid is above 2 (Debian's default) gpuprobed says in one line that
perf_event_open needs CAP_SYS_ADMIN and runs nothing; with it, or where the setting is 2 or less,
it traces exactly. These hold on every kernel: tests/kernels runs them on 5.10, 6.1, 6.12."""
import json
import os
import subprocess
import time

import pytest

import gp

UNIT_CAPS = "-all,+bpf,+perfmon,+sys_ptrace,+dac_read_search,+sys_resource,+kill"


ATOMIC_FETCH_PROBE = r"""
char LICENSE[] __attribute__((section("license"), used)) = "GPL";
__attribute__((section("socket"), used)) int fetch_add(void *ctx)
{
	volatile unsigned long long v = 0;

	return (int)__sync_fetch_and_add(&v, 1);
}
"""


def kernel_takes_atomic_fetch(tmp):
    """The kernel's own verifier on a program with a fetching atomic add (BPF_ATOMIC), loaded by bpftool."""
    src, obj, pin = tmp / "fetch_add.bpf.c", tmp / "fetch_add.bpf.o", f"/sys/fs/bpf/gp_test_fetch_add_{os.getpid()}"
    src.write_text(ATOMIC_FETCH_PROBE)
    subprocess.run(["clang", "-O2", "-target", "bpf", "-mcpu=v3", "-c", str(src), "-o", str(obj)], check=True)
    r = subprocess.run(["bpftool", "prog", "load", str(obj), pin, "type", "socket"], capture_output=True, text=True)
    if os.path.exists(pin):
        os.unlink(pin)
    return r.returncode == 0


def kernel_has(tmp):
    """The features, as this kernel's own probe (bpftool), its verifier and its BTF say, in gpuprobed's order."""
    probe = json.loads(subprocess.run(["bpftool", "feature", "probe", "kernel", "-j"], capture_output=True,
                                      text=True, check=True).stdout)
    helpers = set(probe["helpers"]["kprobe_available_helpers"])
    return {"btf": os.path.exists("/sys/kernel/btf/vmlinux"),
            "ring_buffer": probe["map_types"]["have_ringbuf_map_type"],
            "current_task_btf": "bpf_get_current_task_btf" in helpers,
            "task_storage": probe["map_types"]["have_task_storage_map_type"],
            "atomics": kernel_takes_atomic_fetch(tmp),
            "attach_cookie": "bpf_get_attach_cookie" in helpers,
            "bpf_loop": "bpf_loop" in helpers,
            "uprobe_multi": gp.kernel_has_uprobe_multi()}


NEEDED = {"btf": ("BTF type information", "5.4"), "ring_buffer": ("the BPF ring buffer", "5.8")}
# What stands in for each feature a kernel may lack: its oldest kernel, and the words stderr and the report use.
REPLACEABLE = {"current_task_btf": ("5.11", "bpf_get_current_task_btf"),
               "task_storage": ("5.11", "BPF task storage"),
               "atomics": ("5.12", "BPF atomic fetch-add"),
               "attach_cookie": ("5.15", "BPF attach cookies"),
               "bpf_loop": ("5.17", "the bpf_loop helper"),
               "uprobe_multi": ("6.6", "uprobe_multi links")}


def paranoid():
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        return int(f.read())


def check_kernel(report, tr, wall_s, tmp, by_request=False):
    kernel = report["session"]["kernel"]
    has = kernel_has(tmp)
    assert kernel["release"] == os.uname().release
    assert kernel["perf_event_paranoid"] == paranoid()
    replaced = [f for f in REPLACEABLE if not has[f] or (f == "uprobe_multi" and by_request)]
    assert [r["feature"] for r in kernel["replaced"]] == replaced, (kernel, has)
    assert kernel["features_used"] == [f for f, ok in has.items() if ok and f not in replaced], (kernel, has)
    for r in kernel["replaced"]:
        since, what = REPLACEABLE[r["feature"]]
        assert (r["since"], r["by_request"]) == (since, by_request and r["feature"] == "uprobe_multi"), r
        assert r["by"] and r["cost"], r
        # said once on stderr, as the report says it
        said = [ln for ln in tr.stderr.splitlines() if r["by"] in ln and what in ln]
        assert len(said) == 1, tr.stderr
    if "uprobe_multi" in replaced:
        assert [r["by"] for r in kernel["replaced"] if r["feature"] == "uprobe_multi"] == \
            ["one perf-event link per probe"]
    removal = kernel["probe_removal"]
    # the pairs in place at the end: those placed (-v says each file's) less those removed before it
    lines = [ln for ln in tr.stderr.splitlines() if ln.startswith("gpuprobed: ")]
    placed = sum(int(ln.split()[1]) for ln in lines if " probes on " in ln)
    gone = sum(int(ln.split()[-3]) for ln in lines if ln.endswith(" probes removed") and "last traced process" in ln)
    assert removal["probes"] == placed - gone > 0, (removal, placed, gone, tr.stderr)
    # the traced window ends where counting stopped: the probes' removal comes after it
    assert 0 < removal["ns"] and report["session"]["duration_ns"] + removal["ns"] < wall_s * 1e9
    # perf-event links: a process of gpuprobed's removes them after the session (the kernel takes one
    # at a time); uprobe_multi links: the session itself (a file at once)
    assert (removal["remover_pid"] is not None) == ("uprobe_multi" in replaced), removal


def test_session_kernel_against_the_kernels_own_answers(tmp_path):
    t0 = time.monotonic()
    report, ref, tr = gp.trace(tmp_path, "basic_ops", tracer_args=("-v",))
    gp.check_all(report, ref)
    check_kernel(report, tr, time.monotonic() - t0, tmp_path)


def test_perf_event_links_stand_in_when_asked(tmp_path):
    """--no-uprobe-multi: the replacement a kernel before 6.6 gets, by request; the same answer. The
    session ends without waiting for the kernel to remove its links one at a time: they are still
    there when it has exited, held by its remover, and gone when the remover ends (or, where the
    kernel removes them fast, as 5.10 does at ~3 ms a link under emulation against 6.1's ~0.1 s, the
    remover is done and they are gone already)."""
    before = set(gp.session_tracers())
    t0 = time.monotonic()
    report, ref, tr = gp.trace(tmp_path, "basic_ops", tracer_args=("-v", "--no-uprobe-multi"))
    left_at_exit = tr.held.left()
    removers = gp.removers(before)
    gp.check_all(report, ref)
    check_kernel(report, tr, time.monotonic() - t0, tmp_path, by_request=True)
    removal = report["session"]["kernel"]["probe_removal"]
    if left_at_exit[0] or left_at_exit[1]:
        # the first remover and its workers (each a share of the links)
        assert removal["remover_pid"] in removers, (removers, removal)
    else:
        assert not removers and removal["remover_pid"] > 0, (removers, removal)
    assert f"by process {removal['remover_pid']} ({gp.REMOVER_COMM})" in tr.stderr, tr.stderr
    assert gp.wait_removers(before), f"the remover {removers} still runs after {gp.REMOVER_WAIT_S} s"
    assert tr.held.left() == ([], []), "the remover ended with links or programs of the session left"
    # report.md says the same as report.json
    md = tr.report_md()
    assert "- Kernel: asked not to use uprobe_multi (Linux 6.6): one perf-event link per probe; " in md
    for r in report["session"]["kernel"]["replaced"]:
        if not r["by_request"]:
            assert f"- Kernel: lacks {r['feature']} (Linux {r['since']}): {r['by']}; {r['cost']}" in md, md
    assert f"- Probes removed after the session: {removal['probes']}, by process {removal['remover_pid']} " \
           "(the kernel removes perf-event links one at a time)" in md, md


def run_with_caps(tmp_path, caps):
    marker = tmp_path / "ran"
    out = tmp_path / "out"
    env = gp.sim_env()
    r = subprocess.run(["setpriv", "--bounding-set", caps, "--", gp.GPUPROBED, "-o", str(out), "--",
                        os.path.join(gp.WORKLOADS, "basic_ops"), "--ref", str(tmp_path / "ref")],
                       capture_output=True, text=True, env=env, timeout=300)
    return r, out


def test_the_units_capabilities_on_this_kernel(tmp_path):
    r, out = run_with_caps(tmp_path, UNIT_CAPS)
    if paranoid() > 2:
        assert r.returncode == 1, r.stderr
        # one line says it (before it, only what stands in for a feature this kernel lacks)
        lines = r.stderr.strip().splitlines()
        said = [ln for ln in lines if ln.startswith(f"gpuprobed: kernel.perf_event_paranoid is {paranoid()} here: "
                                                    "perf_event_open") and "CAP_SYS_ADMIN" in ln]
        assert len(said) == 1 and lines[-1] == said[0], lines
        assert all(" instead; " in ln for ln in lines[:-1]), lines
        assert not (tmp_path / "ref").exists(), "the command ran though gpuprobed could not trace it"
        assert not (out / "report.json").exists()
    else:
        assert r.returncode == 0, r.stderr
        ref = json.load(open(tmp_path / "ref"))
        gp.check_all(json.load(open(out / "report.json")), ref)


def test_the_units_capabilities_and_its_drop_in_trace_exactly(tmp_path):
    """The unit with the drop-in make install adds where kernel.perf_event_paranoid is above 2."""
    r, out = run_with_caps(tmp_path, UNIT_CAPS + ",+sys_admin")
    assert r.returncode == 0, r.stderr
    gp.check_all(json.load(open(out / "report.json")), json.load(open(tmp_path / "ref")))


@pytest.mark.any_kernel
def test_a_missing_feature_nothing_replaces_is_one_line_and_exit_2(tmp_path):
    """Where the kernel lacks a feature gpuprobed needs (its own probe and BTF say which), one line names
    the first and the oldest Linux that has it, exit 2, the command never runs; elsewhere it runs."""
    has = kernel_has(tmp_path)
    missing = [f for f in NEEDED if not has[f]]
    ran = tmp_path / "ran"
    r = subprocess.run([gp.GPUPROBED, "-o", str(tmp_path / "out"), "--", "sh", "-c", f"touch {ran}"],
                       capture_output=True, text=True, timeout=300)
    if not missing:
        assert r.returncode == 0 and ran.exists(), r.stderr
        assert gp.REFUSED is None
        return
    what, since = NEEDED[missing[0]]
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gpuprobed: this kernel (Linux {os.uname().release}) lacks {what}"), \
        lines
    assert lines[0].endswith(f"which gpuprobed needs: Linux {since} or later has it"), lines
    assert not ran.exists() and not (tmp_path / "out" / "report.json").exists()
    assert gp.REFUSED == lines[0].removeprefix("gpuprobed: ")
