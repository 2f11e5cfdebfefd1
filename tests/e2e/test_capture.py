# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The capture file: every session writes OUT/capture.gpz (or --record FILE), and
`gpuprobed report CAPTURE` rebuilds every output from it alone.

The reference for a report from a capture is the live report of the same session: report.json
must be equal byte for byte once the "source" member is removed, and every other file that does not
name its source (the folded stacks, the flame graph, speedscope.json) must be equal as it is. The
capture must be self-contained: the traced program's files are deleted before the report is
rebuilt. A capture cut short (gpuprobed killed with SIGKILL, the file truncated anywhere) gives the
report of what it holds, with one line saying what was cut; a corrupt chunk is skipped and counted;
a file that is not a capture, or of a newer format, is refused with one message and exit 1."""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import time
import zlib

import pytest

import gp

try:
    import zstandard  # Debian's python3-zstandard (make deps)
except ImportError:
    zstandard = None

HEADER_SIZE = 216
CHUNK_HEADER = struct.Struct("<6I")  # magic seq raw_len zlen data_crc hdr_crc
CHUNK_ZSTD, CHUNK_ZLIB = 0x535A5047, 0x435A5047  # "GPZS": version 2's chunks; "GPZC": version 1's
SAME_FILES = ("stacks.folded", "stacks.bytes.folded", "stacks.host_ns.folded", "flamegraph.svg",
              "speedscope.json", "profile.pb.gz", "trace.json")


def without_source(text):
    """report.json's text without its "source" member (the one part that names where it came from)."""
    out, n = re.subn(r'\n  "source": \{\n(?:    .*\n)*?  \},', "", text, count=1)
    assert n == 1, "report.json has no top-level \"source\" object"
    return out


def report_from(capture, out_dir, *args):
    rc, _, err = gp.run_gpuprobed(["report", str(capture), "-o", str(out_dir), *args], timeout=120)
    return rc, err


def chunks_of(path):
    """(offset, header fields) of every chunk in a capture, walking the headers."""
    with open(path, "rb") as f:
        data = f.read()
    off, out = HEADER_SIZE, []
    while off + CHUNK_HEADER.size <= len(data):
        h = CHUNK_HEADER.unpack_from(data, off)
        assert h[0] in (CHUNK_ZSTD, CHUNK_ZLIB), f"no chunk at {off}"
        out.append((off, h))
        off += CHUNK_HEADER.size + h[3]
    assert off == len(data), "the chunks do not end at the end of the file"
    return out


@pytest.fixture(scope="module")
def stack_run(tmp_path_factory):
    """stack_paths (a program, its own .so, a JIT perf map, C++ kernels) traced from a private copy
    that is deleted afterwards, so that the report from the capture cannot read any of it."""
    tmp = tmp_path_factory.mktemp("capture")
    bindir = tmp / "bin"
    bindir.mkdir()
    for name in ("stack_paths", "libstackstage.so"):
        shutil.copy2(os.path.join(gp.WORKLOADS, name), bindir / name)
    wl = gp.Workload(str(bindir / "stack_paths"), tmp, args=("--jit", "--deep", "150"))
    perf_map = f"/tmp/perf-{wl.pid}.map"
    try:
        report, tr, _ = gp.trace_workload(wl, tmp)
    finally:
        if os.path.exists(perf_map):
            os.unlink(perf_map)
    shutil.rmtree(bindir)
    live = tr.out_dir
    capture = os.path.join(live, "capture.gpz")
    rebuilt = tmp / "rebuilt"
    rc, err = report_from(capture, rebuilt)
    assert rc == 0, err
    return report, live, capture, str(rebuilt), err


@pytest.fixture(scope="module")
def busy_run(tmp_path_factory):
    """bench_calls: 40,000 launches and copies, enough for many chunks. (report, capture path)."""
    tmp = tmp_path_factory.mktemp("busy")
    out = tmp / "out"
    rc, _, err = gp.run_gpuprobed(["-o", str(out), "--", os.path.join(gp.WORKLOADS, "bench_calls"),
                                   "--iters", "20000"], env=gp.sim_env(SIMGPU_KERNEL_US=0), timeout=120)
    assert rc == 0, err
    report = json.loads((out / "report.json").read_text())
    gp.check_no_loss(report)
    return report, str(out / "capture.gpz")


def test_busy_session_equal_too(busy_run, tmp_path):
    report, capture = busy_run
    rc, err = report_from(capture, tmp_path)
    assert rc == 0, err
    live = open(os.path.join(os.path.dirname(capture), "report.json")).read()
    assert without_source((tmp_path / "report.json").read_text()) == without_source(live)
    with open(os.path.join(os.path.dirname(capture), "trace.json"), "rb") as f:
        assert (tmp_path / "trace.json").read_bytes() == f.read()
    assert report["source"]["chunks"] == len(chunks_of(capture)) >= 8


def test_report_json_from_capture_equals_live_byte_for_byte(stack_run):
    report, live, capture, rebuilt, _ = stack_run
    with open(os.path.join(live, "report.json")) as f:
        live_text = f.read()
    with open(os.path.join(rebuilt, "report.json")) as f:
        rebuilt_text = f.read()
    assert without_source(rebuilt_text) == without_source(live_text)
    src_live, src_cap = report["source"], json.loads(rebuilt_text)["source"]
    assert src_live["kind"] == "live" and src_cap["kind"] == "capture"
    assert src_live["capture_file"] == capture and src_cap["capture_file"] == capture
    assert src_cap["complete"] and src_cap["cut"] is None and src_cap["corrupt_chunks"] == 0
    # every operation the session wrote was read back, in as many chunks
    assert (src_cap["ops"], src_cap["chunks"]) == (src_live["ops"], src_live["chunks"])
    assert src_live["lost_ops"] == 0 and src_live["ops"] > 0
    # the deleted program's frames were still named: the capture carried the symbols
    proc = report["processes"][0]
    assert any(f["function"] == "main" and f["file"].endswith("/stack_paths") for f in proc["stacks"]["frames"])
    assert any(f["source"] == "perf_map" for f in proc["stacks"]["frames"])


def test_every_other_output_equal(stack_run):
    _, live, _, rebuilt, _ = stack_run
    for name in SAME_FILES:
        with open(os.path.join(live, name), "rb") as a, open(os.path.join(rebuilt, name), "rb") as b:
            assert a.read() == b.read(), f"{name} differs"
    with open(os.path.join(live, "report.md")) as a, open(os.path.join(rebuilt, "report.md")) as b:
        strip = lambda t: [l for l in t.splitlines() if not l.startswith(("- Capture:", "- Source:"))]
        assert strip(a.read()) == strip(b.read())
        b.seek(0)
        assert "- Source: rebuilt from the capture" in b.read()


def test_capture_file_layout(stack_run):
    """The header's fields, and chunks that walk to the end of the file, each with good CRCs."""
    report, _, capture, _, _ = stack_run
    with open(capture, "rb") as f:
        head = f.read(HEADER_SIZE)
        data = f.read()
    magic, version, size, abi = struct.unpack_from("<8sIII", head)
    assert (magic, version, size) == (b"GPUPRBZ\n", 2, HEADER_SIZE)
    if zstandard is None:
        pytest.skip("python3-zstandard is not installed (make deps installs it): the zstd chunks cannot be read here")
    unzstd = zstandard.ZstdDecompressor()
    mono, real = struct.unpack_from("<QQ", head, 24)
    sess = report["session"]
    # the header's clocks are read just before the session's own start
    assert 0 <= sess["start_mono_ns"] - mono < 5_000_000_000
    assert abs((real - mono) - (sess["start_realtime_ns"] - sess["start_mono_ns"])) < 50_000_000
    assert zlib.crc32(head[:208]) == struct.unpack_from("<I", head, 208)[0]
    ops, kinds = 0, {}
    for seq, (off, h) in enumerate(chunks_of(capture)):
        assert h[1] == seq
        body = data[off - HEADER_SIZE + CHUNK_HEADER.size:][:h[3]]
        assert zlib.crc32(body) == h[4] and h[0] == CHUNK_ZSTD
        raw = unzstd.decompress(body, max_output_size=h[2])
        assert len(raw) == h[2]
        pos = 0
        while pos < len(raw):  # whole operations: u16 op, u16 0, u32 len, payload
            op, zero, n = struct.unpack_from("<HHI", raw, pos)
            assert zero == 0 and pos + 8 + n <= len(raw)
            kinds[op] = kinds.get(op, 0) + 1
            pos += 8 + n
            ops += 1
    # counted here independently: every operation but the end one, as the live report says
    assert kinds.pop(20) == 1 and ops - 1 == report["source"]["ops"]
    # one ingest operation (15) per record the model was given: the outermost calls the report counts,
    # the nested ones (listed, or left out with an outer call that never returned), and one CPU account
    # per thread
    nested = sum(a["calls"] for p in report["processes"] for a in p["nested_api"]) + \
        sum(p["nested_left_out"] for p in report["processes"])
    threads = sum(p["cpu"]["threads"] for p in report["processes"])
    assert report["drops"]["malformed_records"] == 0
    assert kinds[15] == report["summary"]["api_calls"] + nested + threads
    assert kinds[1] == 1 and kinds[2] == 1 and kinds[3] == len(report["processes"])


def test_truncated_anywhere_reports_whole_chunks(busy_run, tmp_path):
    report, capture = busy_run
    with open(capture, "rb") as f:
        data = f.read()
    chunks = chunks_of(capture)
    assert len(chunks) >= 8
    live_calls = report["summary"]["api_calls"]
    # inside the last chunk's data, inside the second chunk's header, right after the header
    cuts = [len(data) - 10, chunks[1][0] + 7, HEADER_SIZE + 3]
    seen = []
    for i, cut in enumerate(cuts):
        path = tmp_path / f"cut{i}.gpz"
        path.write_bytes(data[:cut])
        rc, err = report_from(path, tmp_path / f"out{i}")
        assert rc == 0, err
        rep = json.loads((tmp_path / f"out{i}" / "report.json").read_text())
        src = rep["source"]
        assert not src["complete"] and src["cut"], src
        assert src["cut"] in err, "the cut is said on stderr too"
        assert "Capture incomplete" in (tmp_path / f"out{i}" / "report.md").read_text()
        whole = sum(1 for off, h in chunks if off + CHUNK_HEADER.size + h[3] <= cut)
        assert src["chunks"] == whole
        seen.append(rep["summary"]["api_calls"])
    assert seen[0] <= live_calls and seen[1] <= seen[0] and seen[2] == 0
    assert seen[0] > 0


def test_corrupt_chunk_skipped_rest_kept(busy_run, tmp_path):
    report, capture = busy_run
    data = bytearray(open(capture, "rb").read())
    chunks = chunks_of(capture)
    off, h = chunks[3]
    data[off + CHUNK_HEADER.size + h[3] // 2] ^= 0x55  # inside the first chunk's data
    path = tmp_path / "corrupt.gpz"
    path.write_bytes(bytes(data))
    rc, err = report_from(path, tmp_path / "out")
    assert rc == 0, err
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    src = rep["source"]
    assert src["corrupt_chunks"] == 1 and src["chunks"] == len(chunks) - 1 and src["complete"], src
    assert "corrupt" in err and "chunk 3 " in src["corruption"]
    # the other chunks' calls are there: fewer than live, more than the chunks before the bad one hold
    assert 0.5 * report["summary"]["api_calls"] < rep["summary"]["api_calls"] < report["summary"]["api_calls"]
    # a corrupt chunk header: resynchronised at the next chunk
    data = bytearray(open(capture, "rb").read())
    data[chunks[5][0] + 9] ^= 0x01
    path.write_bytes(bytes(data))
    rc, err = report_from(path, tmp_path / "out2")
    assert rc == 0, err
    src = json.loads((tmp_path / "out2" / "report.json").read_text())["source"]
    assert src["corrupt_chunks"] == 1 and src["chunks"] == len(chunks) - 1 and src["complete"], src
    assert "header" in src["corruption"]


def test_killed_tracer_leaves_a_readable_capture(tmp_path):
    """SIGKILL in the middle of a busy session: the report of every chunk that reached the disk."""
    out = tmp_path / "out"
    tr = gp.Tracer(["--", os.path.join(gp.WORKLOADS, "bench_calls"), "--iters", "2000000"], out,
                   env=gp.sim_env(SIMGPU_KERNEL_US=0, SIMGPU_RUNTIME_DIRECT=1))
    tr.wait_tracing()
    capture = out / "capture.gpz"
    # 2 MB however long this machine takes (an emulated one: ~30 s), while the session runs; the bound is
    # a hang's, not a speed
    end = time.monotonic() + 600
    while time.monotonic() < end and tr.proc.poll() is None and \
            (not capture.exists() or capture.stat().st_size < 2_000_000):
        time.sleep(0.05)
    # the workload is gpuprobed's child: found before the kill orphans it, killed alone (another
    # run's bench_calls on the same machine is not ours to kill)
    children = open(f"/proc/{tr.proc.pid}/task/{tr.proc.pid}/children").read().split()
    tr.proc.send_signal(signal.SIGKILL)
    tr.wait()
    for pid in children:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert capture.stat().st_size >= 2_000_000, "the capture did not grow"
    rc, err = report_from(capture, tmp_path / "rebuilt")
    assert rc == 0, err
    rep = json.loads((tmp_path / "rebuilt" / "report.json").read_text())
    # the kill lands between chunks (no end record) or between a chunk's header and its body
    cut = rep["source"]["cut"]
    assert not rep["source"]["complete"] and ("without its end record" in cut or "cut inside chunk" in cut), cut
    assert rep["summary"]["api_calls"] > 1000
    proc = rep["processes"][0]
    assert proc["comm"] == "bench_calls"
    assert rep["session"]["duration_ns"] > 0


def bad_file(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    return path


def test_refuses_what_is_not_a_capture(stack_run, tmp_path):
    _, _, capture, _, _ = stack_run
    head = bytearray(open(capture, "rb").read(HEADER_SIZE))
    future = bytearray(head)
    struct.pack_into("<I", future, 8, 99)
    struct.pack_into("<I", future, 208, zlib.crc32(bytes(future[:208])))
    cases = {
        "text": (bad_file(tmp_path, "a.txt", b"hello, world\n" * 40), "not a gpuprobed capture"),
        "empty": (bad_file(tmp_path, "empty.gpz", b""), "empty file, not a capture"),
        "future": (bad_file(tmp_path, "future.gpz", bytes(future)), "format version 99"),
        "header": (bad_file(tmp_path, "hdr.gpz", bytes(head[:100])), "cut inside its header"),
        "missing": (tmp_path / "nope.gpz", "No such file"),
        "directory": (tmp_path, "is a directory"),
    }
    for what, (path, message) in cases.items():
        rc, err = report_from(path, tmp_path / "o")
        assert rc == 1, (what, err)
        lines = [l for l in err.splitlines() if l.strip()]
        assert len(lines) == 1 and message in lines[0], (what, err)
    assert not (tmp_path / "o" / "report.json").exists()
    for args, message in ((["report"], "no capture file"), (["report", "a", "b"], "one too many"),
                          (["report", "--bogus", "x"], "unknown option")):
        rc, _, err = gp.run_gpuprobed(args)
        assert rc == 2 and message in err, (args, err)


def test_record_path_and_no_record(tmp_path):
    env = gp.sim_env()
    basic = os.path.join(gp.WORKLOADS, "basic_ops")
    path = tmp_path / "elsewhere.gpz"
    rc, _, err = gp.run_gpuprobed(["-o", str(tmp_path / "a"), "--record", str(path), "--", basic], env=env)
    assert rc == 0, err
    assert path.exists() and not (tmp_path / "a" / "capture.gpz").exists()
    assert json.loads((tmp_path / "a" / "report.json").read_text())["source"]["capture_file"] == str(path)
    rc, _, err = gp.run_gpuprobed(["-o", str(tmp_path / "b"), "--no-record", "--", basic], env=env)
    assert rc == 0, err
    assert not (tmp_path / "b" / "capture.gpz").exists()
    src = json.loads((tmp_path / "b" / "report.json").read_text())["source"]
    assert src["kind"] == "live" and src["capture_file"] is None
    rc, _, err = gp.run_gpuprobed(["--record", str(tmp_path / "x"), "--no-record", "--", basic])
    assert rc == 2 and "contradict" in err
    rc, _, err = gp.run_gpuprobed(["-o", str(tmp_path / "c"), "--record", "/proc/no/such/dir/x.gpz", "--", basic])
    assert rc == 1 and "capture /proc/no/such/dir/x.gpz" in err


def test_disk_full_counts_what_the_capture_lost(tmp_path):
    """A capture on a 256 KiB tmpfs: the session's own report is whole and says how many operations the
    capture lost; the capture ends at its last whole chunk and reads back as cut."""
    full = tmp_path / "full"
    full.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(full)]).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root and mount(8))")
    try:
        capture = full / "c.gpz"
        rc, _, err = gp.run_gpuprobed(["-o", str(tmp_path / "out"), "--record", str(capture), "--",
                                       os.path.join(gp.WORKLOADS, "bench_calls"), "--iters", "20000"],
                                      env=gp.sim_env(SIMGPU_KERNEL_US=0), timeout=120)
        assert rc == 0, err
        assert f"capture {capture}: No space left on device" in err
        live = json.loads((tmp_path / "out" / "report.json").read_text())
        gp.check_no_loss(live)
        src = live["source"]
        assert not src["complete"] and src["lost_ops"] > 0 and src["chunks"] >= 1
        rc, err = report_from(capture, tmp_path / "rebuilt")
        assert rc == 0, err
        cap = json.loads((tmp_path / "rebuilt" / "report.json").read_text())["source"]
        # what was written is whole chunks, every operation the live session did not count as lost
        assert not cap["complete"] and cap["chunks"] == src["chunks"]
        assert cap["ops"] == src["ops"]
    finally:
        subprocess.run(["umount", str(full)])
