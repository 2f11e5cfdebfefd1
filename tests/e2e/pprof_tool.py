# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""profile.pb.gz as go tool pprof (Debian's golang-go, installed by make deps) reads it.

- read(path): `go tool pprof -raw` parsed: sample types, samples (values, location ids leaf first,
  labels), locations (address, mapping, lines), mappings.
- total(path, index, unit): the total `go tool pprof -top` states for one sample type.
- folded(profile, index): the samples as folded-stack lines (root first), each frame named the way
  gpuprobed's stacks.folded names it, summed per line: equal to stacks*.folded when both are right.
- missing(): why go tool pprof cannot run here, or None.
"""
import os
import re
import shutil
import subprocess

import stack_formats

SAMPLE = re.compile(r"^\s+(-?\d+(?:\s+-?\d+)*): ((?:\d+ )*\d+)\s*$")
LOCATION = re.compile(r"^\s*(\d+): (0x[0-9a-f]+)(?: M=(\d+))?(?: (.*) (\S*):(-?\d+) s=(-?\d+))?\s*$")
MORE_LINE = re.compile(r"^\s+(.*) (\S*):(-?\d+) s=(-?\d+)\s*$")
MAPPING = re.compile(r"^(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+)(?: (\S+))?(?: ([0-9a-f]+))?(?: (\[.*\]))?\s*$")
LABEL = re.compile(r"(\w+):\[([^\]]*)\]")


def missing():
    if not shutil.which("go"):
        return "go tool pprof is not installed (make deps installs golang-go)"
    return None


def _env():
    env = dict(os.environ)
    env.setdefault("HOME", "/root")
    env["PPROF_TMPDIR"] = env.get("TMPDIR", "/tmp")
    return env


def _pprof(*args):
    p = subprocess.run(["go", "tool", "pprof", "-symbolize=none", *args], capture_output=True, text=True,
                       timeout=120, env=_env())
    assert p.returncode == 0, f"go tool pprof {' '.join(args)}: {p.stderr.strip()}"
    return p.stdout


def read(path):
    """{"types": [(type, unit)], "default": type, "samples": [{"values", "locations", "labels"}],
    "locations": {id: {"address", "mapping", "lines": [(function, file, line)]}},
    "mappings": {id: {"start", "limit", "offset", "file", "build_id", "flags"}}}"""
    text = _pprof("-raw", path)
    prof = {"types": [], "default": None, "samples": [], "locations": {}, "mappings": {}, "comments": []}
    part, last_loc = None, None
    for line in text.splitlines():
        if line.startswith("Comment: "):
            prof["comments"].append(line[len("Comment: "):])
        elif line in ("Samples:", "Locations", "Mappings"):
            part = line
        elif part == "Samples:" and not prof["types"]:
            for t in line.split():
                name, _, unit = t.partition("/")
                if unit.endswith("[dflt]"):
                    unit = unit[:-len("[dflt]")]
                    prof["default"] = name
                prof["types"].append((name, unit))
        elif part == "Samples:" and SAMPLE.match(line):
            m = SAMPLE.match(line)
            prof["samples"].append({"values": [int(v) for v in m.group(1).split()],
                                    "locations": [int(v) for v in m.group(2).split()], "labels": {}})
        elif part == "Samples:" and line.strip():
            for k, v in LABEL.findall(line):
                prof["samples"][-1]["labels"][k] = v
        elif part == "Locations" and LOCATION.match(line):
            m = LOCATION.match(line)
            lines = [(m.group(4), m.group(5), int(m.group(6)))] if m.group(4) is not None else []
            last_loc = prof["locations"][int(m.group(1))] = {
                "address": int(m.group(2), 16), "mapping": int(m.group(3) or 0), "lines": lines}
        elif part == "Locations" and MORE_LINE.match(line):
            m = MORE_LINE.match(line)
            last_loc["lines"].append((m.group(1), m.group(2), int(m.group(3))))
        elif part == "Mappings" and MAPPING.match(line):
            m = MAPPING.match(line)
            prof["mappings"][int(m.group(1))] = {
                "start": int(m.group(2), 16), "limit": int(m.group(3), 16), "offset": int(m.group(4), 16),
                "file": m.group(5) or "", "build_id": m.group(6) or "", "flags": m.group(7) or ""}
        elif line.strip() and part in ("Locations", "Mappings"):
            raise AssertionError(f"go tool pprof -raw: a line not understood: {line!r}")
    return prof


def total(path, index, unit):
    """The total `go tool pprof -top -sample_index=INDEX` reports, in the sample type's own unit (pprof
    scales bytes and times for people unless told the unit)."""
    text = _pprof("-top", f"-sample_index={index}", *([f"-unit={unit}"] if unit != "count" else []), path)
    m = re.search(r"of (\d+)[a-zA-Z]* total", text)
    assert m, f"go tool pprof -top: no total in\n{text[:400]}"
    return int(m.group(1))


def frame_name(prof, loc):
    """The location as stacks.folded names the frame: the function; for Python "name (file.py:LINE)";
    an address in a file without its symbol "file+0xOFFSET" (the offset pprof computes from the
    mapping)."""
    if loc["lines"]:
        name, file, line = loc["lines"][0]
        if not file:
            return name
        base = os.path.basename(file)
        return f"{name} ({base}:{line})" if line > 0 else f"{name} ({base})"
    m = prof["mappings"][loc["mapping"]]
    return f"{os.path.basename(m['file'])}+{loc['address'] - m['start'] + m['offset']:#x}"


def folded(prof, index):
    """{folded line: weight} of sample type index (its name), lines with weight 0 left out."""
    at = [t for t, _ in prof["types"]].index(index)
    lines = {}
    for s in prof["samples"]:
        if not s["values"][at]:
            continue
        line = ";".join(frame_name(prof, prof["locations"][i]) for i in reversed(s["locations"]))
        lines[line] = lines.get(line, 0) + s["values"][at]
    return lines


FOLDED = {"calls": "stacks.folded", "bytes": "stacks.bytes.folded", "host_time": "stacks.host_ns.folded"}
TYPES = [("calls", "count"), ("bytes", "bytes"), ("host_time", "nanoseconds")]


def check_against_folded(out_dir):
    """out_dir's profile.pb.gz as go tool pprof reads it: its three sample types (calls first), each
    equal to its folded file line for line and weight for weight, and -top's total the file's. Returns
    what read() gives."""
    path = os.path.join(out_dir, "profile.pb.gz")
    prof = read(path)
    assert prof["types"] == TYPES and prof["default"] == "calls", (prof["types"], prof["default"])
    for index, unit in TYPES:
        want = stack_formats.parse_folded(os.path.join(out_dir, FOLDED[index]))
        got = folded(prof, index)
        differ = sorted(k for k in set(got) & set(want) if got[k] != want[k])
        assert got == want, f"profile.pb.gz's {index} against {FOLDED[index]}: only in the profile " \
                            f"{sorted(set(got) - set(want))[:2]}, only in the file {sorted(set(want) - set(got))[:2]}, " \
                            f"weights differ {differ[:2]}"
        assert total(path, index, unit) == sum(want.values()), index
    return prof
