# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Golden captures: `gpuprobed report CAPTURE` of each capture kept in tests/golden/ gives exactly the
outputs kept beside it, byte for byte (report.json, report.md, trace.json, the stack files). A change of
the code's shape must not change a single byte of what a user reads; a change of a report's content on
purpose regenerates them (`tests/golden/make_golden.sh outputs`) and the diff is reviewed with it.

The one field compared otherwise: speedscope.json's "exporter" names the gpuprobed that wrote the file
(its version changes with every commit)."""
import difflib
import gzip
import json
import os
import subprocess

import pytest

import gp
import pprof_tool

GOLDEN = os.path.join(gp.ROOT, "tests", "golden")
# written gzip'ed by gpuprobed itself, kept as written and compared unzipped; any other NAME.gz kept here
# is NAME, gzip'ed to keep the tree small
WRITTEN_GZIPPED = {"profile.pb.gz"}
CASES = sorted(f[:-4] for f in os.listdir(GOLDEN) if f.endswith(".gpz"))


def expected_files(case):
    d = os.path.join(GOLDEN, case)
    return sorted(os.listdir(d))


def read_expected(case, name):
    path = os.path.join(GOLDEN, case, name)
    if name.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def normalized(name, data):
    if name == "speedscope.json":
        doc = json.loads(data)
        doc["exporter"] = "gpuprobed"
        return json.dumps(doc, sort_keys=True).encode()
    return data


def first_difference(name, want, got):
    w, g = want.decode(errors="replace").splitlines(), got.decode(errors="replace").splitlines()
    diff = list(difflib.unified_diff(w, g, "expected/" + name, "now/" + name, n=1, lineterm=""))
    return "\n".join(diff[:40]) or f"{name}: same lines, different bytes (line ends?)"


@pytest.mark.parametrize("case", CASES)
def test_report_of_a_golden_capture_is_unchanged(tmp_path, case):
    assert CASES, "no golden capture in tests/golden"
    out = tmp_path / "out"
    # run where the capture lies: the report names it by its file name alone, as when it was made
    p = subprocess.run([gp.GPUPROBED, "report", f"{case}.gpz", "-o", str(out)], cwd=GOLDEN,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    want_names = expected_files(case)
    got_names = sorted(n for n in os.listdir(out))
    def written_name(n):
        return n[:-3] if n.endswith(".gz") and n not in WRITTEN_GZIPPED else n
    assert sorted(written_name(n) for n in want_names) == got_names, \
        f"files differ: kept {want_names}, written {got_names}"
    for name in want_names:
        plain = written_name(name)
        with (gzip.open if plain in WRITTEN_GZIPPED else open)(out / plain, "rb") as f:
            got = normalized(plain, f.read())
        want = normalized(plain, read_expected(case, name))
        assert got == want, f"{case}/{plain} changed:\n{first_difference(plain, want, got)}"


def test_golden_profile_in_pprof():
    """The demo's kept profile.pb.gz as go tool pprof reads it: its folded files line for line."""
    why = pprof_tool.missing()
    if why:
        pytest.skip(why)
    pprof_tool.check_against_folded(os.path.join(GOLDEN, "demo"))
