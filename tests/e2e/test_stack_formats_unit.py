# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The stack-format checkers themselves (stack_formats.py), no root and no
BPF needed: a speedscope file built here by hand, good and broken, through
our schema and through the real speedscope; and the outputs of the C
writers (written by build/unit/test_stack_sinks in its GP_STACK_SAMPLES
mode) through the same checks, with their inline script through Node."""
import copy
import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

import stack_formats as sf


@pytest.fixture(scope="module", autouse=True)
def e2e_environment():
    """Replaces conftest's session fixture for this module: nothing here
    needs root, tracefs or a traced process."""
    yield


SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"

GOOD = {
    "$schema": SCHEMA_URL,
    "shared": {"frames": [{"name": "app (pid 7)"}, {"name": "main"}, {"name": "cudaLaunchKernel"},
                          {"name": "[kernel] gemm<float>"}, {"name": "cudaMemcpy"},
                          {"name": "[HtoD 4 MiB pageable]"}]},
    "profiles": [
        {"type": "sampled", "name": "GPU work by calls", "unit": "none", "startValue": 0, "endValue": 5,
         "samples": [[0, 1, 2, 3], [0, 1, 4, 5]], "weights": [3, 2]},
        {"type": "sampled", "name": "GPU work by bytes", "unit": "bytes", "startValue": 0, "endValue": 4194304,
         "samples": [[0, 1, 4, 5]], "weights": [4194304]},
        {"type": "evented", "name": "one launch", "unit": "nanoseconds", "startValue": 100, "endValue": 400,
         "events": [{"type": "O", "frame": 0, "at": 100}, {"type": "O", "frame": 2, "at": 150},
                    {"type": "C", "frame": 2, "at": 300}, {"type": "C", "frame": 0, "at": 400}]},
    ],
    "name": "hand-made",
    "activeProfileIndex": 0,
    "exporter": "test_stack_formats_unit.py",
}


def broken(change):
    doc = copy.deepcopy(GOOD)
    change(doc)
    return doc


def p0(doc):
    return doc["profiles"][0]


# (what, document or raw text, caught by speedscope's importer too)
BROKEN = [
    ("frame index out of range", broken(lambda d: p0(d)["samples"][1].append(6)), True),
    ("fewer weights than samples", broken(lambda d: p0(d)["weights"].pop()), True),
    ("negative weight", broken(lambda d: p0(d)["weights"].__setitem__(0, -3)), True),
    ("not JSON", json.dumps(GOOD)[:-20], True),
    ("unknown profile type", broken(lambda d: p0(d).__setitem__("type", "timed")), True),
    # speedscope itself lets these through; our checks do not
    ("no $schema", broken(lambda d: d.pop("$schema")), False),  # a *.speedscope.json name is enough for it
    ("weights above endValue", broken(lambda d: p0(d).__setitem__("endValue", 4)), False),
    ("unknown unit", broken(lambda d: p0(d).__setitem__("unit", "calls")), False),
    ("misspelt field", broken(lambda d: p0(d).__setitem__("endvalue", 5)), False),
    ("events out of order", broken(lambda d: d["profiles"][2]["events"][1].__setitem__("at", 50)), False),
    ("unbalanced events", broken(lambda d: d["profiles"][2]["events"].pop(2)), False),
    ("activeProfileIndex past the end", broken(lambda d: d.__setitem__("activeProfileIndex", 3)), False),
]


def write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return str(path)


def loaded_or_skip(path):
    got = sf.load_in_speedscope(path)
    if isinstance(got, str):
        pytest.skip(got)
    return got


def test_good_file_validates(tmp_path):
    doc = sf.validate_speedscope(write(tmp_path, "good.speedscope.json", GOOD))
    assert doc["name"] == "hand-made"


@pytest.mark.parametrize("what,doc,_", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_file_fails_validation(tmp_path, what, doc, _):
    with pytest.raises(sf.FormatError):
        sf.validate_speedscope(write(tmp_path, "broken.speedscope.json", doc))


def test_good_file_loads_in_speedscope(tmp_path):
    got = loaded_or_skip(write(tmp_path, "good.json", GOOD))
    assert got["name"] == "hand-made"
    calls, by_bytes, evented = got["profiles"]
    assert (calls["name"], calls["unit"], calls["totalWeight"], calls["sampledWeight"]) == \
        ("GPU work by calls", "none", 5, 5)
    assert calls["frames"] == {"app (pid 7)": 5, "main": 5, "cudaLaunchKernel": 3, "[kernel] gemm<float>": 3,
                               "cudaMemcpy": 2, "[HtoD 4 MiB pageable]": 2}
    assert (by_bytes["unit"], by_bytes["sampledWeight"]) == ("bytes", 4194304)
    assert (evented["unit"], evented["totalWeight"]) == ("nanoseconds", 300)
    assert evented["frames"] == {"app (pid 7)": 300, "cudaLaunchKernel": 150}


@pytest.mark.parametrize("what,doc", [(b[0], b[1]) for b in BROKEN if b[2]], ids=[b[0] for b in BROKEN if b[2]])
def test_broken_file_rejected_by_speedscope(tmp_path, what, doc):
    path = write(tmp_path, "broken.speedscope.json", doc)
    with pytest.raises(sf.SpeedscopeRejected):
        got = sf.load_in_speedscope(path)
        if isinstance(got, str):
            pytest.skip(got)


def test_parse_folded(tmp_path):
    path = tmp_path / "stacks.folded"
    path.write_text("app (pid 1);main;cudaMalloc;[alloc device 1 MiB] 3\n"
                    "app (pid 1);main;[unknown];cudaLaunchKernel;[kernel] k<int, 2> 10\n"
                    "app (pid 1);main;cudaMalloc;[alloc device 1 MiB] 2\n")
    assert sf.parse_folded(str(path)) == {
        "app (pid 1);main;cudaMalloc;[alloc device 1 MiB]": 5,
        "app (pid 1);main;[unknown];cudaLaunchKernel;[kernel] k<int, 2>": 10,
    }
    path.write_text("app;main 3\nno count here\n")
    with pytest.raises(sf.FormatError):
        sf.parse_folded(str(path))


def test_flamegraph_validator_rejects(tmp_path):
    bad = tmp_path / "bad.svg"
    bad.write_text('<svg xmlns="http://www.w3.org/2000/svg"><g class="f"><title>a<b \u2014 1 call</title></g></svg>')
    with pytest.raises(sf.FormatError, match="well-formed"):
        sf.validate_flamegraph_svg(str(bad))
    bad.write_text('<svg xmlns="http://www.w3.org/2000/svg"><g class="f" data-w="1"><title>a \u2014 1 call</title>'
                   '<rect width="3"/></g></svg>')
    with pytest.raises(sf.FormatError, match="script"):
        sf.validate_flamegraph_svg(str(bad))


# ---- the C writers' own output ----------------------------------------------

@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    """The outputs of the C writers for test_stack_sinks.c's demo paths."""
    binary = os.path.join(sf.BUILD, "unit", "test_stack_sinks")
    if not os.path.exists(binary):
        pytest.skip(f"{binary} is not built: make unit-build")
    out = tmp_path_factory.mktemp("stack-samples")
    subprocess.run([binary], env=dict(os.environ, GP_STACK_SAMPLES=str(out)), check=True)
    return out


# The demo paths of test_stack_sinks.c, by calls.
DEMO_CALLS = {
    "train (pid 42)": 4000, "main": 3600, "step": 3500, "cudaLaunchKernel": 3100,
    "[kernel] gemm<float, 128>": 3000, "cudaMemcpy": 500, "[HtoD 4 MiB pageable]": 500, "[truncated]": 400,
    "ncclAllReduce": 400, "[AllReduce float 4 MiB]": 400, "a&b<'\"c\">": 100, "[kernel] k": 100,
}


def by_name(frames):
    total = {}
    for name, weight in frames:
        total[name] = total.get(name, 0) + weight
    return total


def test_c_flamegraph(samples):
    frames = sf.validate_flamegraph_svg(str(samples / "demo-calls.svg"))
    assert by_name(frames) == DEMO_CALLS
    assert len(frames) == 13  # cudaLaunchKernel twice, under different parents
    assert sf.validate_flamegraph_svg(str(samples / "empty.svg"), allow_empty=True) == []
    with pytest.raises(sf.FormatError, match="no frame"):
        sf.validate_flamegraph_svg(str(samples / "empty.svg"))


def test_c_flamegraph_script_parses(samples, tmp_path):
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed: the SVG's script was not syntax-checked")
    root = ET.parse(str(samples / "demo-calls.svg")).getroot()
    script = tmp_path / "flamegraph.js"
    script.write_text(root.find(sf.SVG + "script").text)
    subprocess.run([node, "--check", str(script)], check=True)


def test_c_speedscope(samples):
    path = str(samples / "demo.speedscope.json")
    doc = sf.validate_speedscope(path)
    names = [f["name"] for f in doc["shared"]["frames"]]
    assert len(names) == len(set(names))
    assert [p["endValue"] for p in doc["profiles"]] == [4000, 8 << 20, 5013200]
    empty = sf.validate_speedscope(str(samples / "empty.speedscope.json"))
    assert [len(p["samples"]) for p in empty["profiles"]] == [0, 0, 0]


def test_c_speedscope_loads_in_speedscope(samples):
    got = loaded_or_skip(str(samples / "demo.speedscope.json"))
    calls, by_bytes, host = got["profiles"]
    assert [p["unit"] for p in got["profiles"]] == ["none", "bytes", "nanoseconds"]
    assert calls["frames"] == DEMO_CALLS
    # speedscope's sums agree with the file's and with the flame graph's
    assert [p["sampledWeight"] for p in got["profiles"]] == [4000, 8 << 20, 5013200]
    assert [p["totalWeight"] for p in got["profiles"]] == [4000, 8 << 20, 5013200]
    svg = by_name(sf.validate_flamegraph_svg(str(samples / "demo-bytes.svg")))
    assert svg == by_bytes["frames"]
    assert loaded_or_skip(str(samples / "empty.speedscope.json"))["profiles"][0]["sampledWeight"] == 0
