#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""What building unwind tables costs (src/stacks/unwind_table.c), on the largest ELF files here.

A table is built once per file, when a traced process first maps it; the largest CUDA libraries are
hundreds of MB. For each of the --count largest 64-bit x86-64 ELF files under --roots (and a
synthetic one of 100+ MB with 100,000 functions when no file here is that large, or with
--synthetic), build/unit/uwtable_tool builds its table --reps times in one process and reports the
rows, their size (what the pool in the kernel holds), each build's time, and the process's peak
resident memory before and after (VmHWM: the file's pages read count, as in gpuprobed).

make bench runs it for a section of docs/performance.md (scripts/bench.py); alone:
  /usr/bin/python3 scripts/bench_unwind.py [--build build] [--reps 5] [--out FILE.md] [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOTS = ("/usr", "/opt", "/lib", "/lib64", "/root", "/home")
SYNTHETIC_FUNCS = 100000
POOL_MIB = 64  # the default --unwind-mb (GP_DEFAULT_UNWIND_MB): 8-byte rows


def log(msg):
    print(f"[bench_unwind] {msg}", file=sys.stderr, flush=True)


def is_x86_64_elf(path):
    try:
        with open(path, "rb") as f:
            h = f.read(20)
    except OSError:
        return False
    # ELF magic, ELFCLASS64, little-endian, e_type ET_EXEC or ET_DYN, e_machine EM_X86_64
    return (len(h) == 20 and h[:4] == b"\x7fELF" and h[4] == 2 and h[5] == 1
            and int.from_bytes(h[16:18], "little") in (2, 3) and int.from_bytes(h[18:20], "little") == 62)


def largest_elfs(roots, count, min_bytes):
    """The count largest distinct ELF files of at least min_bytes under roots (one file system each)."""
    found, seen = [], set()
    for root in roots:
        if not os.path.isdir(root):
            continue
        dev = os.stat(root).st_dev
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))
                       and os.lstat(os.path.join(folder, d)).st_dev == dev]
            for name in names:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if not os.path.stat.S_ISREG(st.st_mode) or st.st_size < min_bytes:
                    continue
                if (st.st_dev, st.st_ino) in seen or not is_x86_64_elf(path):
                    continue
                seen.add((st.st_dev, st.st_ino))
                found.append((st.st_size, path))
    found.sort(reverse=True)
    return [p for _, p in found[:count]]


def synthetic(build):
    """A 100+ MB shared library of SYNTHETIC_FUNCS functions, each with the CFI of a real frame."""
    out_dir = os.path.join(build, "bench", "unwind")
    so = os.path.join(out_dir, "synthetic_cfi.so")
    if os.path.exists(so):
        return so
    os.makedirs(out_dir, exist_ok=True)
    src = os.path.join(out_dir, "synthetic_cfi.S")
    with open(src, "w") as f:
        f.write(f"""\t.macro fn
\t.p2align 4
\t.cfi_startproc
\tpush %rbp
\t.cfi_adjust_cfa_offset 8
\t.cfi_rel_offset %rbp, 0
\tpush %rbx
\t.cfi_adjust_cfa_offset 8
\t.cfi_rel_offset %rbx, 0
\tsub $4096, %rsp
\t.cfi_adjust_cfa_offset 4096
\t.skip 1000, 0x90
\tadd $4096, %rsp
\t.cfi_adjust_cfa_offset -4096
\tpop %rbx
\t.cfi_adjust_cfa_offset -8
\tpop %rbp
\t.cfi_adjust_cfa_offset -8
\tret
\t.cfi_endproc
\t.endm
\t.text
\t.rept {SYNTHETIC_FUNCS}
\tfn
\t.endr
\t.section .note.GNU-stack,"",@progbits
""")
    log(f"building {so} ({SYNTHETIC_FUNCS} functions)")
    subprocess.run(["gcc", "-shared", "-nostdlib", "-Wl,--build-id", src, "-o", so + ".tmp"], check=True)
    os.rename(so + ".tmp", so)
    return so


def measure_file(tool, path, reps):
    out = subprocess.run([tool, "-r", str(reps), path], capture_output=True, text=True)
    if out.returncode not in (0, 2) or not out.stdout.strip():
        log(f"{path}: uwtable_tool failed ({out.returncode}): {out.stderr.strip()}")
        return None
    r = json.loads(out.stdout)
    r["ms_first"] = r["build_ms"][0]
    r["ms_median"] = statistics.median(r["build_ms"])
    r["ms_max"] = max(r["build_ms"])
    r["hwm_mib"] = r["hwm_kb"] / 1024
    r["hwm_added_mib"] = (r["hwm_kb"] - r["hwm_before_kb"]) / 1024
    stops = r["stop_bytes"]
    r["unsupported_bytes"] = sum(v for k, v in stops.items() if k not in ("gap", "end"))
    return r


def measure(build, reps=5, count=6, roots=ROOTS, min_mb=50, force_synthetic=False, quick=False, log=log):
    """Tables of the largest ELF files here: {"files": [...], "synthetic": path or None}."""
    tool = os.path.join(build, "unit", "uwtable_tool")
    if not os.access(tool, os.X_OK):
        raise SystemExit(f"{tool} missing: make unit-build builds it")
    if quick:
        reps, count = 1, 2
    files = largest_elfs(roots, count, min_mb << 20)
    syn = None
    if force_synthetic or not any(os.path.getsize(p) >= 100 << 20 for p in files):
        syn = synthetic(build)
        files.append(syn)
    results = []
    for path in files:
        r = measure_file(tool, path, reps)
        if r is None:
            continue
        r["synthetic"] = path == syn
        results.append(r)
        log(f"{path}: {r['size'] / 2**20:.0f} MiB, {r['rows']:,} rows ({r['bytes'] / 2**20:.1f} MiB), "
            f"build {r['ms_median']:.0f} ms median of {len(r['build_ms'])} (max {r['ms_max']:.0f}), "
            f"peak RSS {r['hwm_mib']:.1f} MiB (+{r['hwm_added_mib']:.1f})")
    every = measure_all(tool, log)
    return {"files": results, "reps": reps, "synthetic": syn, "all": every}


def measure_all(tool, log=log):
    """src/stacks/unwind_maps.c with every process of this machine at once (uwtable_tool -a)."""
    out = subprocess.run([tool, "-a", "-m", str(POOL_MIB)], capture_output=True, text=True)
    if out.returncode or not out.stdout.strip():
        log(f"every process: uwtable_tool -a failed ({out.returncode}): {out.stderr.strip()}")
        return None
    a = json.loads(out.stdout)
    log(f"every process ({a['published']} of {a['pids']}): {a['files_built']} tables, {a['rows']:,} rows, "
        f"{a['first_ms']:.0f} ms (again: {a['again_ms']:.0f} ms), peak RSS {a['hwm_kb'] / 1024:.1f} MiB")
    return a


def markdown(res):
    files = res["files"]
    L = ["## Unwind tables of the largest ELF files here", "",
         "A native stack without frame pointers is walked in BPF with per-file unwind tables built from the "
         "file's `.eh_frame`/`.debug_frame` (src/stacks/unwind_table.c), once per file when a traced "
         "process first maps it, then shared by every process mapping it. Here the largest 64-bit x86-64 ELF "
         f"files on this machine, each built {res['reps']} times in one process (`build/unit/uwtable_tool`, "
         "scripts/bench_unwind.py): the rows (8 bytes each, what the kernel's pool holds), the build time (the first "
         "build with the page cache as found, the median, the longest), the process's peak resident memory after the "
         "builds (the ELF pages read count) and what the builds added to it, and the code the rows cannot unwind "
         "(stop rows other than gaps and the outermost frame).", ""]
    if not files:
        return "\n".join(L + ["No file measured.", ""])
    L += ["| file | MiB | FDEs | rows | table MiB | first ms | median ms | max ms | peak RSS MiB | added MiB | "
          "unsupported code |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in files:
        name = os.path.basename(r["file"]) + (" (synthetic)" if r["synthetic"] else "")
        share = r["unsupported_bytes"] / r["exec_bytes"] if r["exec_bytes"] else 0
        if r["error"]:
            why = {-61: "no call-frame information (walked by frame pointer)", -8: "not x86-64 ELF",
                   -27: "too many rows"}.get(r["error"], f"error {r['error']}")
            L.append(f"| `{name}` | {r['size'] / 2**20:.0f} | 0 | {why} | | {r['ms_first']:.0f} | | | "
                     f"{r['hwm_mib']:.1f} | {r['hwm_added_mib']:.1f} | |")
            continue
        L.append(f"| `{name}` | {r['size'] / 2**20:.0f} | {r['fdes'] + r['fdes_debug']:,} | {r['rows']:,} | "
                 f"{r['bytes'] / 2**20:.1f} | {r['ms_first']:.0f} | {r['ms_median']:.0f} | {r['ms_max']:.0f} | "
                 f"{r['hwm_mib']:.1f} | {r['hwm_added_mib']:.1f} | {share * 100:.2f} % |")
    total = sum(r["rows"] for r in files if not r["synthetic"])
    pool = POOL_MIB * 2**20 // 8
    biggest = max(files, key=lambda r: r["ms_max"])
    L += ["", f"- The real files together: {total:,} rows ({total * 8 / 2**20:.1f} MiB), "
          f"{total / pool * 100:.0f} % of the default pool (`--unwind-mb {POOL_MIB}`: {pool:,} rows). A file whose "
          "table does not fit beside the tables in use is walked by frame pointer and counted; unused tables leave "
          "the pool least recently used first.",
          f"- The longest build: `{os.path.basename(biggest['file'])}`, {biggest['ms_max']:.0f} ms. Building is "
          "userspace work, once per file for the whole session, when a traced process first maps it.", ""]
    a = res.get("all")
    if a:
        fails = ", ".join(f"{k} {v}" for k, v in a["fail"].items() if v) or "none"
        L += [f"- Every process of this machine at once, as a session would publish them (src/stacks/unwind_maps.c into "
              f"BPF maps of its own, a {POOL_MIB} MiB pool; `uwtable_tool -a`): {a['published']} of {a['pids']} "
              f"processes ({a['refused']} refused: over the bound of {a['max_procs']} at once, "
              f"{a['gone'] + a['errors']} gone or unreadable), {a['maps']} executable mappings ({a['maps_none']} "
              f"without a table: anonymous, [vdso]), {a['files_built']} distinct files, {a['rows']:,} rows "
              f"({a['rows'] * 8 / 2**20:.1f} MiB, {a['rows'] / a['pool_rows'] * 100:.0f} % of the pool; "
              f"{a['files_evicted']} evicted), in **{a['first_ms']:.0f} ms** ({a['build_ms']:.0f} ms of it building "
              f"tables, the longest {a['build_max_ms']:.0f} ms: `{os.path.basename(a['build_max_file'])}`); all of "
              f"them again, nothing changed: {a['again_ms']:.0f} ms (a read of each /proc/PID/maps). Peak resident "
              f"memory of that process: {a['hwm_kb'] / 1024:.1f} MiB. Files without a table: {fails}.", ""]
    if res["synthetic"]:
        L += [f"- The synthetic file: {SYNTHETIC_FUNCS:,} functions of ~1 KiB, each with a 4 KiB frame and two "
              "saved registers (7 rows each); made because no ELF file here is 100 MB or more, or asked for.", ""]
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=5, help="builds of each file (default 5)")
    ap.add_argument("--count", type=int, default=6, help="largest files measured (default 6)")
    ap.add_argument("--roots", default=",".join(ROOTS), help="folders searched (default %(default)s)")
    ap.add_argument("--min-mb", type=int, default=50, help="smallest file considered (default 50 MB)")
    ap.add_argument("--synthetic", action="store_true", help="measure the synthetic 100+ MB file too")
    ap.add_argument("--quick", action="store_true", help="one build of the two largest files")
    ap.add_argument("--out", help="write the section to this Markdown file")
    ap.add_argument("--json", help="write the measurements to this JSON file")
    args = ap.parse_args()
    res = measure(args.build, args.reps, args.count, tuple(args.roots.split(",")), args.min_mb,
                  args.synthetic, args.quick)
    text = markdown(res)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    print(text)


if __name__ == "__main__":
    main()
