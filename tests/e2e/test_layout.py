# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The layout docs/design.md describes, kept: folders of src/ depend on each other without a cycle
(the #include graph between folders), only src/model reads its writers' header, the session file only
orchestrates, and every file opens with a comment that says what it owns. Needs no root."""
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
