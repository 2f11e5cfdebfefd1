# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Checks of the stack outputs, for the end-to-end tests.

- validate_speedscope: a speedscope file against our schema of speedscope's
  documented format (speedscope_schema.json), then what a schema cannot say.
- load_in_speedscope: the file loaded by the real speedscope (its npm
  package, under Node; speedscope_load.js), or the reason it could not be.
- validate_flamegraph_svg: the SVG parses, has its script and its frames;
  returns (name, weight) per frame.
- parse_folded: folded stacks as {stack: count}.

A file that breaks its format raises FormatError; one that speedscope
refuses raises SpeedscopeRejected (both AssertionErrors, so pytest reports
them as failures).
"""
import json
import math
import os
import xml.etree.ElementTree as ET

import npm_packages

try:
    import jsonschema
except ImportError:  # reported by validate_speedscope, not at import
    jsonschema = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("GP_BUILD", os.path.join(ROOT, "build"))
SCHEMA = os.path.join(HERE, "speedscope_schema.json")
LOADER = os.path.join(HERE, "speedscope_load.js")

# (the speedscope release speedscope_load.js knows how to hook into: tests/e2e/npm/package.json)

SVG = "{http://www.w3.org/2000/svg}"
DASH = " \u2014 "  # between a frame's name and its weight in a <title>


class FormatError(AssertionError):
    """The file breaks its format."""


class SpeedscopeRejected(AssertionError):
    """speedscope's own importer refused the file."""


# ---- speedscope: the format ------------------------------------------------

def _schema_errors(doc):
    if jsonschema is None:
        raise RuntimeError("python3-jsonschema is not installed (make deps installs it)")
    with open(SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)
    validator = jsonschema.Draft7Validator(schema)
    return sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))


def _check_sampled(where, p, nframes):
    samples, weights = p["samples"], p["weights"]
    if len(samples) != len(weights):
        raise FormatError(f"{where}: {len(samples)} samples but {len(weights)} weights")
    for i, stack in enumerate(samples):
        bad = [f for f in stack if f >= nframes]
        if bad:
            raise FormatError(f"{where}.samples[{i}]: frame index {bad[0]} out of range ({nframes} frames)")
    total = math.fsum(weights)
    span = p["endValue"] - p["startValue"]
    # speedscope takes endValue - startValue as the profile's total weight
    if total > span * (1 + 1e-12):
        raise FormatError(f"{where}: the weights add up to {total}, more than endValue - startValue = {span}")


def _check_evented(where, p, nframes):
    last, stack = p["startValue"], []
    for i, e in enumerate(p["events"]):
        if e["frame"] >= nframes:
            raise FormatError(f"{where}.events[{i}]: frame index {e['frame']} out of range ({nframes} frames)")
        if e["at"] < last:
            raise FormatError(f"{where}.events[{i}]: at {e['at']} goes back (previous {last})")
        if e["at"] > p["endValue"]:
            raise FormatError(f"{where}.events[{i}]: at {e['at']} after endValue {p['endValue']}")
        last = e["at"]
        if e["type"] == "O":
            stack.append(e["frame"])
        elif not stack or stack[-1] != e["frame"]:
            raise FormatError(f"{where}.events[{i}]: closes frame {e['frame']}, "
                              f"open is {stack[-1] if stack else 'none'}")
        else:
            stack.pop()
    if stack:
        raise FormatError(f"{where}: {len(stack)} frame(s) never closed")


def validate_speedscope(path):
    """The parsed file, after checking it against speedscope_schema.json and
    what the schema cannot express: frame indexes in range, a weight per
    sample, weights within endValue - startValue, events in order and
    balanced, activeProfileIndex naming a profile."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise FormatError(f"{path}: not JSON: {e}") from None
    errors = _schema_errors(doc)
    if errors:
        lines = [f"  {'/'.join(str(k) for k in e.absolute_path) or '(top)'}: {e.message}" for e in errors[:10]]
        raise FormatError(f"{path}: {len(errors)} schema error(s):\n" + "\n".join(lines))
    nframes = len(doc["shared"]["frames"])
    profiles = doc["profiles"]
    if profiles and doc.get("activeProfileIndex", 0) >= len(profiles):
        raise FormatError(f"{path}: activeProfileIndex {doc['activeProfileIndex']} but {len(profiles)} profile(s)")
    for i, p in enumerate(profiles):
        where = f"{path}: profiles[{i}] ({p['name']!r})"
        if p["endValue"] < p["startValue"]:
            raise FormatError(f"{where}: endValue {p['endValue']} before startValue {p['startValue']}")
        if p["type"] == "sampled":
            _check_sampled(where, p, nframes)
        else:
            _check_evented(where, p, nframes)
    return doc


# ---- speedscope: the real importer ----------------------------------------

def load_in_speedscope(path):
    """What speedscope's own importer made of the file: a dict
    {name, indexToView, profiles: [{name, unit, totalWeight, sampledWeight,
    frames: {frame name: weight}}]} (see speedscope_load.js). Returns a
    string, the reason, when it cannot be run (no node or npm, offline);
    raises SpeedscopeRejected when speedscope refuses the file."""
    r = npm_packages.run(LOADER, "speedscope", path, timeout=120)
    if isinstance(r, str):
        return r
    if r.returncode == 0:
        return json.loads(r.stdout)
    if r.returncode == 1:
        raise SpeedscopeRejected(r.stderr.strip())
    raise RuntimeError(f"speedscope_load.js failed (exit {r.returncode}): {r.stderr.strip()}")


# ---- flame graph -------------------------------------------------------------

def validate_flamegraph_svg(path, allow_empty=False):
    """[(frame name, weight)] of the frames drawn, in document order, the
    "all" bar left out. Checks: well-formed XML, an <svg> root with a
    non-empty <script>, every frame a <g class="f"> with a <title> that reads
    "name — weight (share)", a <rect> of positive width and its exact weight
    in data-w; at least one frame unless allow_empty."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise FormatError(f"{path}: not well-formed XML: {e}") from None
    if root.tag != SVG + "svg":
        raise FormatError(f"{path}: the root is {root.tag}, not an SVG <svg>")
    scripts = [s for s in root.iter(SVG + "script") if (s.text or "").strip()]
    if not scripts:
        raise FormatError(f"{path}: no <script>")
    frames = []
    for g in root.iter(SVG + "g"):
        classes = (g.get("class") or "").split()
        if "f" not in classes:
            continue
        title, rect = g.find(SVG + "title"), g.find(SVG + "rect")
        if title is None or rect is None:
            raise FormatError(f"{path}: a frame without its <title> or <rect>")
        text = title.text or ""
        if DASH not in text:
            raise FormatError(f"{path}: frame title {text!r} has no weight")
        try:
            weight, width = int(g.get("data-w")), float(rect.get("width"))
        except (TypeError, ValueError):
            raise FormatError(f"{path}: frame {text!r}: no data-w or rect width") from None
        if weight <= 0 or width <= 0:
            raise FormatError(f"{path}: frame {text!r}: weight {weight}, width {width}")
        if "all" not in classes:
            frames.append((text[:text.rindex(DASH)], weight))
    if not frames and not allow_empty:
        raise FormatError(f"{path}: no frame")
    return frames


# ---- folded stacks -----------------------------------------------------------

def parse_folded(path):
    """{"root;...;leaf": count}. Lines that fold to the same stack (two call
    paths whose frames symbolize alike) add up, as flame graph tools do."""
    stacks = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            stack, _, count = line.rpartition(" ")
            if not stack or not count.isdigit():
                raise FormatError(f"{path}:{n}: not 'frame;...;frame COUNT': {line!r}")
            stacks[stack] = stacks.get(stack, 0) + int(count)
    return stacks
