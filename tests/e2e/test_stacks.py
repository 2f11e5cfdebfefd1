# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Call stacks of GPU work: the stack of every outermost launch, copy, memset, allocation, free and
synchronisation, aggregated per (stack, API, operation), in report.json and in the folded files.

References are the workloads' own: stack_paths lists each path it took (the function that made the
call, its callers up to main, the file of each, the API, the folded leaf, calls and bytes);
stack_storm takes 2^L paths, R launches each, and says how a stack spells its path's index;
nvcc_stackmain (nvcc-built, CUDA 13 launch stubs in a library) prints what it launched. Where a
quantity is exact the report must equal the reference; the folded files must say what report.json
says, line for line."""
import json
import os
import shutil
import subprocess

import pytest

import gp

import stack_formats

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
STACKS = os.path.join(gp.ROOT, "tests", "workloads", "stacks")
DEEP = 200  # recursion of stack_paths --deep: well past the 127 frames a stack keeps
# stack_storm: 2^levels distinct stacks of REPS launches each; levels is the machine's (storm_levels)
REPS = 7
STORM_LEVELS = (10, 15)  # 1,024 paths (over --max-stacks 1000's table) to 32,768 (229,376 launches)
STORM_LOOP_S = 20  # what the storm's traced launches may take here, by the calibration's pace
STORM_ENV = {"SIMGPU_KERNEL_US": 0}  # kernels take no time: launches never wait for the queue


read_folded = stack_formats.parse_folded


def only_stack(stacks, what):
    assert len(stacks) == 1, f"{what}: {len(stacks)} stacks, expected exactly one: {stacks}"
    return stacks[0]


def path_stack(proc, path, max_frames):
    """The one stack of a reference path (its functions, cut where the stack keeps no more)."""
    return only_stack(gp.find_stacks(proc, path["functions"][:max_frames], path["api"]), path["name"])


def expected_folded(ref, proc, stack, path):
    """The folded line (without weight) of a reference path: its own frames from the reference;
    frames above main (where the thread started, in libc) as the report names them, after
    checking that they are that."""
    own = path["functions"][:ref["stacks"]["max_frames"]]
    above = gp.stack_frames(proc, stack)[len(own):]
    assert all(gp.is_thread_root(f) for f in above), f"{path['name']}: frames above main not libc: {above}"
    parts = [f"{ref['stacks']['comm']} (pid {ref['pid']})"]
    if path["truncated"]:
        parts.append("[truncated]")
    parts += [gp.folded_frame(f) for f in reversed(above)]
    parts += list(reversed(own)) + [path["api"], path["op"]]
    return ";".join(parts)


# ---- stack_paths: one traced run with every path, shared by the tests below ------------------

@pytest.fixture(scope="module")
def paths_run(tmp_path_factory):
    """stack_paths --jit --no-fp --deep 200 under gpuprobed --pid: (report, ref, out_dir, tracer)."""
    tmp = tmp_path_factory.mktemp("stack_paths")
    wl = gp.Workload("stack_paths", tmp, args=("--jit", "--no-fp", "--deep", str(DEEP)))
    perf_map = f"/tmp/perf-{wl.pid}.map"
    try:
        report, tr, _ = gp.trace_workload(wl, tmp)
        yield report, wl.ref(), tr.out_dir, tr
    finally:
        # the workload leaves its perf map for gpuprobed's report; it is ours to delete
        if os.path.exists(perf_map):
            os.unlink(perf_map)


def test_paths_counts_unchanged_and_nothing_lost(paths_run):
    report, ref, _, _ = paths_run
    proc = gp.check_all(report, ref)  # every count exact, no drop, probe hits == calls
    assert report["drops"]["stack_unread"] == 0 and report["drops"]["stacks_over_limit"] == 0
    st = gp.check_stacks_consistent(proc)
    assert st["captured"] is True


def test_each_path_has_its_stack(paths_run):
    """Every path the workload took is exactly one stack, with the reference's frames, files,
    API, operation, kernel, calls and bytes; no other stack exists."""
    report, ref, _, _ = paths_run
    proc = gp.process(report, ref["pid"])
    st = proc["stacks"]
    max_frames = ref["stacks"]["max_frames"]
    paths = ref["stacks"]["paths"]
    assert {p["name"] for p in paths} >= {"alpha", "gemm", "stage", "upload", "clear", "alloc", "free",
                                           "stream_sync", "device_sync", "jit", "nofp", "deep"}
    seen = []
    for path in paths:
        stack = path_stack(proc, path, max_frames)
        seen.append(id(stack))
        ops = gp.stack_ops(stack)
        assert len(ops) == 1, f"{path['name']}: ops {ops}"
        op = ops[0]
        want = {k: path[k] for k in ("api", "kind", "op", "kernel", "calls", "errors", "bytes")}
        got = {k: op[k] for k in want}
        assert got == want, f"{path['name']}: op {got} != reference {want}"
        assert stack["calls"] == path["calls"] and stack["bytes"] == path["bytes"]
        assert stack["truncated"] == path["truncated"], f"{path['name']}: truncated {stack['truncated']}"
        frames = gp.stack_frames(proc, stack)
        own = min(len(path["functions"]), max_frames)
        files = [f["file"] for f in frames[:own]]
        assert files == path["files"][:own], f"{path['name']}: files {files} != {path['files'][:own]}"
        if path["truncated"] is None:
            assert "main" in path["functions"]
            assert all(gp.is_thread_root(f) for f in frames[own:]), f"{path['name']}: above main {frames[own:]}"
        elif path["truncated"] == "unwind_table":
            assert len(frames) == own, f"{path['name']}: the walk went past {path['functions']}: {frames}"
        elif path["truncated"] == "depth":
            assert len(frames) == max_frames
    assert len(set(seen)) == len(paths)
    assert st["distinct"] == len(paths), \
        f"{st['distinct']} stacks, the workload took {len(paths)} paths: {[gp.stack_functions(proc, s)[:4] for s in st['stacks']]}"
    assert st["truncated_stacks"] == sum(1 for p in paths if p["truncated"])
    # every traced call of this workload carries a stack, but its cudaSetDevice
    assert set(ref["cuda_api"]) - gp.STACKED_APIS == {"cudaSetDevice"}
    assert st["calls"] == sum(p["calls"] for p in paths) == \
        sum(a["calls"] for n, a in ref["cuda_api"].items() if n in gp.STACKED_APIS)
    # the stacks split the same calls: per API, their host time is the API table's, to the ns
    by_api = {}
    for s in st["stacks"]:
        for op in s["ops"]:
            by_api[op["api"]] = by_api.get(op["api"], 0) + op["host_ns"]
    assert by_api == {r["name"]: r["total_ns"] for r in proc["cuda_api"] if r["name"] in gp.STACKED_APIS}
    # and the copies' bytes are the transfers' bytes, per direction and host memory
    copied = {}
    for s in st["stacks"]:
        for op in s["ops"]:
            if op["kind"] == "copy":
                key = (op["direction"], op["host_memory"])
                copied[key] = copied.get(key, 0) + op["bytes"]
    transfers = {}
    for t in proc["transfers"]:  # rows are split by sync/async too
        key = (t["direction"], t["host_memory"])
        transfers[key] = transfers.get(key, 0) + t["bytes"]
    assert copied == transfers


def test_frames_name_their_files_and_symbols(paths_run):
    """Frames in the executable and in libstackstage.so: absolute path, build ID, ELF symbol (the
    mangled one for C++), offset inside the function; the kernel named demangled, without
    parameters, in the template's op."""
    report, ref, _, _ = paths_run
    proc = gp.process(report, ref["pid"])
    by_name = {}
    for f in proc["stacks"]["frames"]:
        by_name.setdefault(f["function"], []).append(f)
    for fn, path in (("launch_alpha", ref["stacks"]["exe"]), ("main", ref["stacks"]["exe"]),
                     ("stage_launch", ref["stacks"]["library"]), ("stage_run", ref["stacks"]["library"])):
        assert fn in by_name, f"no frame named {fn}"
        for f in by_name[fn]:
            assert f["file"] == path and f["source"] == "elf", f
            assert f["build_id"] == gp.build_id(path), f
            assert f["symbol"] == fn and f["offset"] > 0 and f["file_offset"] > 0, f
    gemm = by_name.get("stk::launch_gemm<float>")
    assert gemm, f"no frame named stk::launch_gemm<float>: {sorted(n for n in by_name if n)}"
    assert all(f["symbol"].startswith("_ZN3stk11launch_gemmIfE") for f in gemm), gemm
    assert ref["stacks"]["exe"] != ref["stacks"]["library"]


def test_folded_files_equal_the_reference(paths_run):
    """stacks.folded: exactly one line per path, "COMM (pid N);[truncated];outermost;...;API;LEAF
    CALLS", nothing else; stacks.bytes.folded: the bytes of copies, memsets and allocations; all
    three files agree with report.json line for line."""
    report, ref, out, _ = paths_run
    proc = gp.process(report, ref["pid"])
    max_frames = ref["stacks"]["max_frames"]
    calls, nbytes = {}, {}
    for path in ref["stacks"]["paths"]:
        line = expected_folded(ref, proc, path_stack(proc, path, max_frames), path)
        calls[line] = path["calls"]
        if path["bytes"]:
            nbytes[line] = path["bytes"]
    got = read_folded(os.path.join(out, "stacks.folded"))
    assert got == calls, f"stacks.folded: only in file {sorted(set(got) - set(calls))}, " \
                         f"missing {sorted(set(calls) - set(got))}, " \
                         f"weights {[(k, got[k], calls[k]) for k in got if k in calls and got[k] != calls[k]]}"
    assert sum(got.values()) == proc["stacks"]["calls"] == \
        sum(a["calls"] for n, a in ref["cuda_api"].items() if n in gp.STACKED_APIS)
    got = {k: v for k, v in read_folded(os.path.join(out, "stacks.bytes.folded")).items() if v}
    assert got == nbytes, f"stacks.bytes.folded {got} != {nbytes}"
    # the 4 MiB upload, as the reference spells its leaf
    upload = next(p for p in ref["stacks"]["paths"] if p["name"] == "upload")
    assert upload["op"] == "[HtoD 4 MiB pageable]" and upload["bytes"] == 2 * 4 * 1024 * 1024
    gp.check_folded_files(out, report)
    host = read_folded(os.path.join(out, "stacks.host_ns.folded"))
    assert sum(host.values()) == sum(s["host_ns"] for s in proc["stacks"]["stacks"]) > 0


def test_jit_frame_named_from_perf_map(paths_run):
    """Code in anonymous memory, named in /tmp/perf-PID.map: jit_python_step between main's
    callee and the function it called, from the perf map, in no file."""
    report, ref, _, _ = paths_run
    proc = gp.process(report, ref["pid"])
    path = next(p for p in ref["stacks"]["paths"] if p["name"] == "jit")
    assert ref["stacks"]["perf_map"] == f"/tmp/perf-{ref['pid']}.map"
    stack = path_stack(proc, path, ref["stacks"]["max_frames"])
    jit = gp.stack_frames(proc, stack)[1]
    assert jit["function"] == "jit_python_step" and jit["source"] == "perf_map" and jit["file"] is None, jit
    assert stack["calls"] == path["calls"] == 4 and stack["truncated"] is None


def test_no_frame_pointer_stack_is_truncated_unwind(paths_run):
    """A call made with %rbp = 0 from code without call-frame information (a gap in the program's
    table): the walk stops at nofp_call, the stack says so and why."""
    report, ref, out, _ = paths_run
    proc = gp.process(report, ref["pid"])
    path = next(p for p in ref["stacks"]["paths"] if p["name"] == "nofp")
    stack = path_stack(proc, path, ref["stacks"]["max_frames"])
    assert gp.stack_functions(proc, stack) == ["nofp_launch", "nofp_call"]
    assert stack["truncated"] == "unwind_table" and stack["unwind_stop"] == "gap", stack
    assert stack["calls"] == path["calls"] == 6
    line = f"stack_paths (pid {ref['pid']});[truncated];nofp_call;nofp_launch;cudaLaunchKernel;[kernel] k_nofp"
    assert read_folded(os.path.join(out, "stacks.folded")).get(line) == 6


def test_deep_recursion_is_truncated_at_the_depth_limit(paths_run):
    """200 nested frames: the stack keeps the innermost 127 and is marked truncated "depth"."""
    report, ref, _, _ = paths_run
    proc = gp.process(report, ref["pid"])
    path = next(p for p in ref["stacks"]["paths"] if p["name"] == "deep")
    max_frames = ref["stacks"]["max_frames"]
    # NOTE: bpf_get_stack at an entry uprobe spends one of kernel.perf_event_max_stack's 127
    # entries on the probed instruction: a tracer that captures there and drops it keeps 126
    # call sites. The contract says 127 (frame 0 = the call site).
    assert max_frames == 127 and len(path["functions"]) == DEEP + 3
    stack = path_stack(proc, path, max_frames)
    names = gp.stack_functions(proc, stack)
    assert len(names) == max_frames, f"{len(names)} frames kept"
    assert names == ["deep_launch"] + ["recurse_deep"] * (max_frames - 1)
    assert stack["truncated"] == "depth" and stack["calls"] == path["calls"] == 3


def test_stack_output_formats(paths_run):
    """flamegraph.svg and speedscope.json are written and well-formed."""
    report, ref, out, _ = paths_run
    proc = gp.process(report, ref["pid"])
    svg, ss = os.path.join(out, "flamegraph.svg"), os.path.join(out, "speedscope.json")
    assert os.path.getsize(svg) > 0 and os.path.getsize(ss) > 0
    stack_formats.validate_speedscope(ss)
    boxes = stack_formats.validate_flamegraph_svg(svg)
    names = {name for name, _ in boxes}
    for fn in ("main", "launch_alpha", "stage_launch", "jit_python_step", "[kernel] k_alpha"):
        assert any(n == fn or n.startswith(fn) for n in names), f"{fn} not in the flame graph"
    # the widest box (the root) weighs every call that carried a stack
    assert max(w for _, w in boxes) == proc["stacks"]["calls"]
    loaded = stack_formats.load_in_speedscope(ss)
    if isinstance(loaded, str):
        pytest.skip(f"speedscope.json not loaded in speedscope: {loaded}")
    # speedscope's own importer sees every call, byte and nanosecond of the report
    by_name = {p["name"]: p for p in loaded["profiles"]}
    st = proc["stacks"]
    assert by_name["GPU work by calls"]["totalWeight"] == st["calls"]
    assert by_name["GPU work by bytes"]["totalWeight"] == sum(s["bytes"] for s in st["stacks"])
    assert by_name["GPU work by host time"]["totalWeight"] == sum(s["host_ns"] for s in st["stacks"])


# ---- --no-stacks ----------------------------------------------------------------------------

def test_no_stacks_option(tmp_path):
    """--no-stacks: every count as before, stacks.captured false and empty, no stack files (an empty
    flame graph would say "no GPU work"; a missing one says "not captured"), report.md says why."""
    report, ref, tr = gp.trace(tmp_path, "stack_paths", tracer_args=("--no-stacks",))
    proc = gp.check_all(report, ref)
    st = proc["stacks"]
    assert {k: st[k] for k in ("captured", "distinct", "calls", "truncated_stacks", "frames", "stacks")} == \
        {"captured": False, "distinct": 0, "calls": 0, "truncated_stacks": 0, "frames": [], "stacks": []}
    for name in gp.STACK_FILES:
        assert not os.path.exists(os.path.join(tr.out_dir, name)), f"{name} written with --no-stacks"
    assert "--no-stacks" in tr.report_md()


# ---- stack_storm: 2^L distinct stacks (32,768 on a real machine) -------------------------------

def storm_index(proc, stack, ref):
    """The path index a storm stack spells, as the workload's reference says: its step frames,
    outermost first, are bits 0, 1, ... (step_a = 0, step_b = 1); above them storm_run and main,
    then the thread's start."""
    storm = ref["storm"]
    levels, bits, above = storm["levels"], storm["step_bits"], storm["above_steps"]
    names = gp.stack_functions(proc, stack)
    steps = names[:levels]
    assert set(steps) <= set(bits), f"not a storm stack: {names}"
    assert names[levels:levels + len(above)] == above, names
    assert all(gp.is_thread_root(f) for f in gp.stack_frames(proc, stack)[levels + len(above):]), names
    return sum(bits[fn] << bit for bit, fn in enumerate(reversed(steps)))


def storm_op_ok(stack, ref, calls=None):
    ops = gp.stack_ops(stack)
    assert len(ops) == 1, ops
    op = ops[0]
    assert (op["api"], op["kind"], op["op"], op["kernel"]) == \
        ("cudaLaunchKernel", "kernel", ref["storm"]["op"], ref["storm"]["kernel"]), op
    if calls is not None:
        assert op["calls"] == calls and op["errors"] == 0, op


@pytest.fixture(scope="module")
def storm_levels(tmp_path_factory):
    """The storm's size on this machine: the most levels in STORM_LEVELS whose launches, at the pace a
    traced storm of the fewest levels keeps here (the workload's own clock around its launches, so
    without the session's start and report), take at most STORM_LOOP_S. A real machine takes 15 (the
    whole storm); an emulated kernel's VM fewer. Only the size follows the machine: every check is
    exact for the size run. (The storm's speed is make bench's: its distinct-stacks section.)"""
    lo, hi = STORM_LEVELS
    report, ref, _ = gp.trace(tmp_path_factory.mktemp("storm-pace"), "stack_storm",
                              args=("--levels", str(lo), "--reps", str(REPS)), env=gp.sim_env(**STORM_ENV))
    storm = ref["storm"]
    assert storm["launches"] == (1 << lo) * REPS and storm["run_ns"] > 0, storm
    per_launch_s = storm["run_ns"] / 1e9 / storm["launches"]
    levels = lo
    while levels < hi and (2 << levels) * REPS * per_launch_s <= STORM_LOOP_S:
        levels += 1
    print(f"storm: {per_launch_s * 1e6:.1f} us a traced launch here: {levels} levels")
    return levels


def test_storm_every_stack_exact(tmp_path, storm_levels):
    """2^L paths x 7 launches (L = 15 on a real machine: 32,768 paths, 229,376 launches): 2^L distinct
    stacks of exactly 7 launches, each path's index once, no loss of any kind, probe hits equal to the
    calls."""
    levels = storm_levels
    paths, launches = 1 << levels, (1 << levels) * REPS
    report, ref, tr = gp.trace(tmp_path, "stack_storm", args=("--levels", str(levels), "--reps", str(REPS)),
                               env=gp.sim_env(**STORM_ENV))
    storm = ref["storm"]
    assert (storm["paths"], storm["launches"], storm["errors"]) == (paths, launches, 0)
    proc = gp.check_all(report, ref)  # includes probe hits == calls and no drops
    assert all(v == 0 for k, v in report["drops"].items() if k not in gp.KERNEL_GAPS), report["drops"]
    assert report["drops"]["stack_unread"] == 0 and report["drops"]["stacks_over_limit"] == 0
    st = gp.check_stacks_consistent(proc)
    assert st["distinct"] == len(st["stacks"]) == paths
    assert st["calls"] == launches == ref["cuda_api"]["cudaLaunchKernel"]["calls"]
    assert st["truncated_stacks"] == 0
    hits = gp.instrumentation_hits(report, {lib["path"] for lib in proc["libraries"]})
    assert hits[("cudaLaunchKernel", "uprobe")] == st["calls"]
    seen = set()
    for s in st["stacks"]:
        assert s["calls"] == REPS and s["truncated"] is None, s
        storm_op_ok(s, ref, REPS)
        seen.add(storm_index(proc, s, ref))
    assert seen == set(range(paths))
    folded = read_folded(os.path.join(tr.out_dir, "stacks.folded"))
    assert len(folded) == paths and set(folded.values()) == {REPS} and sum(folded.values()) == launches


def test_storm_overload_counts_what_it_loses(tmp_path, storm_levels):
    """A 1 MiB ring drained once a second under the storm's launches with stacks (229,376 on a real
    machine): whatever is lost is counted, recorded + lost = what the kernel saw, and every stack kept
    is still a real path."""
    launches = (1 << storm_levels) * REPS
    report, ref, _ = gp.trace(tmp_path, "stack_storm", args=("--levels", str(storm_levels), "--reps", str(REPS)),
                              env=gp.sim_env(**STORM_ENV), tracer_args=("--ringbuf-mb", "1", "--poll-ms", "1000"))
    proc = gp.process(report, ref["pid"])
    hits = gp.instrumentation_hits(report, {lib["path"] for lib in proc["libraries"]})
    # the kernel's own counters see every launch, lost or not
    assert hits[("cudaLaunchKernel", "uprobe")] == hits[("cudaLaunchKernel", "uretprobe")] == launches
    lost = report["drops"]["ringbuf_full"]
    # calls made inside other calls (cudaLaunchKernel -> cuLaunchKernel) are records too; those whose
    # outer call's record was lost are left out with it, and counted
    recorded = sum(r["calls"] for r in proc["cuda_api"]) + sum(r["calls"] for r in proc["nested_api"]) \
        + proc["nested_left_out"]
    returns = sum(r["hits"] for r in report["instrumentation"] if r["kind"] == "uretprobe")
    assert recorded + lost == returns, f"recorded {recorded} + lost {lost} != {returns} returns"
    assert report["drops_total"] == sum(report["drops"].values()) >= lost
    launches = {r["name"]: r["calls"] for r in proc["cuda_api"]}.get("cudaLaunchKernel", 0)
    st = gp.check_stacks_consistent(proc)
    # every recorded launch has its stack (one that could not be walked keeps its call site: stack_unread)
    assert st["calls"] == launches
    assert report["drops"]["stacks_over_limit"] == 0
    seen = set()
    for s in st["stacks"]:
        assert 1 <= s["calls"] <= REPS
        storm_op_ok(s, ref)
        idx = storm_index(proc, s, ref)
        assert idx not in seen
        seen.add(idx)
    if lost == 0:
        gp.check_all(report, ref)


def test_storm_max_stacks(tmp_path, storm_levels):
    """--max-stacks 1000: 1000 distinct stacks kept whole, every later call counted in
    drops.stacks_over_limit and attributed to one "[stack table full]" stack; totals exact."""
    launches = (1 << storm_levels) * REPS
    report, ref, tr = gp.trace(tmp_path, "stack_storm", args=("--levels", str(storm_levels), "--reps", str(REPS)),
                               env=gp.sim_env(**STORM_ENV), tracer_args=("--max-stacks", "1000"))
    proc = gp.process(report, ref["pid"])
    gp.check_api(proc, ref)
    gp.check_kernels(proc, ref)
    gp.check_instrumentation(report, ref["pid"], ref)
    st = gp.check_stacks_consistent(proc)
    assert st["distinct"] <= 1001
    full = [s for s in st["stacks"] if gp.is_table_full(proc, s)]
    kept = [s for s in st["stacks"] if not gp.is_table_full(proc, s)]
    assert len(full) == 1, f"{len(full)} '[stack table full]' stacks"
    # one path's launches all come before the next path's: a stack admitted keeps all of its calls
    assert len(kept) in (999, 1000), f"{len(kept)} stacks kept under --max-stacks 1000"
    seen = set()
    for s in kept:
        assert s["calls"] == REPS, s
        storm_op_ok(s, ref, REPS)
        seen.add(storm_index(proc, s, ref))
    assert len(seen) == len(kept)
    over = report["drops"]["stacks_over_limit"]
    assert full[0]["calls"] == over == launches - REPS * len(kept)
    assert st["calls"] == launches == ref["cuda_api"]["cudaLaunchKernel"]["calls"]
    # nothing else lost
    assert {k: v for k, v in report["drops"].items() if v and k not in gp.KERNEL_GAPS} == {"stacks_over_limit": over}
    folded = read_folded(os.path.join(tr.out_dir, "stacks.folded"))
    assert sum(folded.values()) == launches
    assert sum(v for k, v in folded.items() if gp.TABLE_FULL in k) == over


# ---- nvcc: kernels in a library of CUDA 13 stubs, tracer attached after their handles exist ----

def nvcc_stack_build(tmp_path):
    if not os.path.exists(NVCC):
        pytest.skip("nvcc not installed (CUDA toolkit absent): cannot build the nvcc stack workload")
    lib = tmp_path / "libnvstack.so"
    exe = tmp_path / "nvcc_stackmain"
    subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC,-fno-omit-frame-pointer", "-cudart", "shared",
                    "-I", STACKS, "-o", str(lib), os.path.join(STACKS, "nvcc_stacklib.cu")],
                   check=True, capture_output=True, timeout=300)
    subprocess.run([NVCC, "-cudart", "shared", "-Xcompiler", "-fno-omit-frame-pointer", "-I", STACKS,
                    "-o", str(exe), os.path.join(STACKS, "nvcc_stackmain.cu"), "-L", str(tmp_path), "-lnvstack",
                    "-Xlinker", f"-rpath={tmp_path}"],
                   check=True, capture_output=True, timeout=300)
    return str(exe), os.path.realpath(lib)


def test_nvcc_library_kernels_attached_late(tmp_path):
    """Launch stubs in an nvcc-built library whose kernel handles were made before gpuprobed
    attached (--pid): kernels named demangled, counts exact, and each launch's stack passes through
    the library's launching function, its op carrying the kernel's name."""
    exe, lib = nvcc_stack_build(tmp_path)
    wl = gp.Workload(exe, tmp_path, env=gp.sim_env())
    report, _, lines = gp.trace_workload(wl, tmp_path, output_lines=1)
    did = json.loads(lines[0])
    proc = gp.process(report, wl.pid)
    assert did["pre_ok"] == 4 and did["scale_err"] == did["fill_err"] == did["sync_err"] == 0
    scale, fill, sync = did["scale"], did["fill"], did["sync"]
    kernels = {k["name"]: k for k in proc["kernels"] if k["launches"]}
    assert {n: k["launches"] for n, k in kernels.items()} == \
        {scale["kernel"]: did["scale_ok"], fill["kernel"]: did["fill_ok"]} == {scale["kernel"]: 5, fill["kernel"]: 3}
    calls = {r["name"]: r["calls"] for r in proc["cuda_api"]}
    assert calls["cudaLaunchKernel"] == 8 and calls["cudaDeviceSynchronize"] == 1
    assert calls.get("__cudaGetKernel", 0) == 0, "the handles were made before attach"
    gp.check_no_loss(report)
    st = gp.check_stacks_consistent(proc)
    for what, n in ((scale, 5), (fill, 3)):
        stack = only_stack(gp.find_stacks_through(proc, what["functions"], "cudaLaunchKernel"), what["op"])
        ops = gp.stack_ops(stack)
        assert [(o["op"], o["kernel"], o["calls"], o["errors"]) for o in ops] == [(what["op"], what["kernel"], n, 0)]
        frames = gp.stack_frames(proc, stack)
        at = gp.stack_functions(proc, stack).index(what["functions"][0])
        # from the call site up to the launching function: the library's own frames (stubs)
        assert all(f["file"] == lib for f in frames[:at + 1]), [(f["function"], f["file"]) for f in frames[:at + 1]]
        assert frames[at + 1]["file"] == os.path.realpath(exe) and stack["truncated"] is None
    stack = only_stack(gp.find_stacks(proc, sync["functions"], "cudaDeviceSynchronize"), "sync")
    assert [(o["op"], o["calls"]) for o in gp.stack_ops(stack)] == [(sync["op"], 1)]
    assert st["calls"] == 9 and st["distinct"] == 3
