# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The layout docs/design.md describes, kept: folders of src/ include only from the folders design.md's
table of layers lets them (so without a cycle), no two files of a folder include each other's headers
(directly or round a circle), no source file is over 800 lines, only src/model reads its writers'
header, the session file only orchestrates, and every file opens with a comment that says what it owns.
Needs no root."""
import os
import re

import gp

SRC = os.path.join(gp.ROOT, "src")
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def source_files():
    for folder, _, names in os.walk(SRC):
        for name in sorted(names):
            if name.endswith((".c", ".h")):
                yield os.path.join(folder, name)


def folder_of(path):
    """The folder of src/ a file belongs to ("." for src/ itself)."""
    rel = os.path.relpath(os.path.dirname(path), SRC)
    return "." if rel == "." else rel.split(os.sep)[0]


def include_graph():
    """{folder: {folder it includes from}} over src/ (headers of include/ and generated skeletons aside)."""
    graph = {}
    for path in source_files():
        with open(path) as f:
            text = f.read()
        here = folder_of(path)
        for inc in INCLUDE.findall(text):
            target = os.path.join(SRC, inc)
            if not os.path.exists(target):
                continue  # include/gpuprobed/*, build/*.skel.h
            there = folder_of(target)
            if there != here:
                graph.setdefault(here, set()).add(there)
    return graph


def test_no_cycle_between_folders():
    graph = include_graph()
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycle = path[path.index(nxt):] + [nxt]
                raise AssertionError("folders include each other: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


DESIGN = os.path.join(gp.ROOT, "docs", "design.md")
MAX_LINES = 800


def declared_layers():
    """design.md's table of layers (between <!-- layers --> and the next blank line): {folder: {folders it
    may include from}}, "." for src/ itself."""
    with open(DESIGN) as f:
        m = re.search(r"<!-- layers -->\n(.*?)\n\n", f.read(), re.S)
    assert m, "docs/design.md has no <!-- layers --> table"
    layers = {}
    for row in m.group(1).splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        names = re.findall(r"`([^`]+)`", cells[0]) if cells else []
        if not names:
            continue  # the header and its rule
        below = set(re.findall(r"`([^`]+)`", cells[1]))
        for name in names:
            layers[name.rstrip("/") or "."] = {b.rstrip("/") or "." for b in below}
    return layers


def test_folders_include_only_the_layers_design_md_declares():
    layers = declared_layers()
    folders = {folder_of(p) for p in source_files()}
    assert folders == set(layers), \
        f"folders of src/ without a row in design.md's layers: {sorted(folders - set(layers))}; rows without a " \
        f"folder: {sorted(set(layers) - folders)}"
    wrong = sorted(f"{here} -> {there}" for here, theres in include_graph().items() for there in theres
                   if there not in layers[here])
    assert not wrong, f"includes that design.md's layers do not allow: {wrong}"


def test_no_include_circle_between_files():
    """A file X (X.c with its X.h) and a file Y of which X includes Y.h, directly or through others, while
    Y includes X.h back: one of them is two things (a helper library and what assembles the whole)."""
    graph = {}
    for path in source_files():
        here = os.path.splitext(os.path.relpath(path, SRC))[0]
        with open(path) as f:
            for inc in INCLUDE.findall(f.read()):
                there = os.path.splitext(inc)[0]
                if there != here and os.path.exists(os.path.join(SRC, there + ".c")) \
                        and os.path.exists(os.path.join(SRC, inc)):
                    graph.setdefault(here, set()).add(there)
    circles = []
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                circles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not circles, f"files that include each other: {circles}"


def test_no_source_file_over_800_lines():
    roots = [SRC, os.path.join(gp.ROOT, "bpf"), os.path.join(gp.ROOT, "include")]
    long = []
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                if name.endswith((".c", ".h")):
                    with open(os.path.join(folder, name)) as f:
                        n = sum(1 for _ in f)
                    if n > MAX_LINES:
                        long.append(f"{os.path.relpath(os.path.join(folder, name), gp.ROOT)}: {n}")
    assert not long, f"files over {MAX_LINES} lines (split them along a seam of concern): {sorted(long)}"


def test_only_the_model_includes_its_writers():
    outside = []
    for path in source_files():
        if folder_of(path) == "model":
            continue
        with open(path) as f:
            if "model/model_internal.h" in INCLUDE.findall(f.read()):
                outside.append(os.path.relpath(path, gp.ROOT))
    assert not outside, f"read the model through model/view.h, not its writers' header: {outside}"


def test_the_session_file_orchestrates():
    with open(os.path.join(SRC, "session", "session.c")) as f:
        n = sum(1 for _ in f)
    assert n < 300, f"src/session/session.c has {n} lines: the work belongs in the layers (docs/design.md)"


def test_every_file_says_what_it_owns():
    silent = []
    for path in source_files():
        with open(path) as f:
            head = f.read(2000)
        body = head.split("\n", 1)[1] if head.startswith("/* SPDX") else head
        name = os.path.basename(path)
        # the first comment after the licence line names the file and what it owns
        if not re.match(r"\s*/\*\s*\n?\s*\*?\s*" + re.escape(name) + r"\s+—", body):
            silent.append(os.path.relpath(path, gp.ROOT))
    assert not silent, f"files whose first comment does not say 'NAME — what it owns': {silent}"
