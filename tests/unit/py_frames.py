# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""py_frames.py — the Python side of tests/unit/test_python.c, run by each
interpreter under test (CPython 3.10 to 3.13).

Three threads block in os.read on pipes, each with a known stack: nested
functions and classes, a generator, a lambda, non-ASCII names (latin-1,
UCS-2) and a file name with a UCS-4 character, a line 6000 lines below its
function's first and a line of more than 254 bytes of bytecode. Just before
a thread blocks (os.read calls the length's __index__, whose caller is the
frame that then waits in read), it prints one JSON line: its thread ids and,
innermost first, each frame's code object address (id), instruction offset
(f_lasti), file, names and line, with traceback.extract_stack()'s view of
the same frames. Then the line tables of its code objects (raw co_linetable,
and the line of every code unit by co_lines()), and "ready".

A fourth thread runs Python code without end (its frames move while the
tracer reads them). Commands on stdin afterwards (one line each): "reuse1" makes a code object
and prints its address; "reuse2" frees it and makes other code objects
until one has the same address; "exit".
"""
import json
import os
import sys
import threading
import traceback

MINOR = sys.version_info[1]
OUT_LOCK = threading.Lock()


def emit(obj):
    line = json.dumps(obj, ensure_ascii=True)
    with OUT_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def qualname(co):
    return getattr(co, "co_qualname", co.co_name)


def describe(f, entries):
    """Frames from f outward; entries: qualname -> expected GP_PYF_ENTRY (or None: not checked)."""
    frames = []
    tb = list(reversed(traceback.extract_stack(f)))  # innermost first, like frames
    g = f
    i = 0
    while g is not None:
        co = g.f_code
        fs = tb[i]
        frames.append({
            "code": id(co), "lasti": g.f_lasti, "file": co.co_filename, "name": co.co_name,
            "qualname": qualname(co), "line": g.f_lineno, "firstlineno": co.co_firstlineno,
            "tb_file": fs.filename, "tb_line": fs.lineno, "tb_name": fs.name,
            "entry": entries(qualname(co), g),
        })
        g = g.f_back
        i += 1
    assert i == len(tb), (i, len(tb))
    return frames


class Report:
    """The length argument of os.read: prints the stack of the frame about to wait in read."""

    def __init__(self, tag, fd, entries):
        self.tag, self.fd, self.entries = tag, fd, entries

    def __index__(self):
        f = sys._getframe(1)  # the frame calling os.read: it waits there once this returns
        emit({"kind": "thread", "tag": self.tag, "tid": threading.get_native_id(),
              "ident": threading.get_ident(), "fd": self.fd, "frames": describe(f, self.entries)})
        if self.tag == "main":
            emit_tables(f)
            emit({"kind": "ready", "not_code": id(NOT_CODE)})
        return 4096


def block(tag, fd, entries):
    return os.read(fd, Report(tag, fd, entries))


def all_code(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from all_code(c)


def emit_tables(f):
    """Line tables: the stack's code objects, this file's, the synthetic file's and threading.py's."""
    codes = {}
    g = f
    while g is not None:
        codes[id(g.f_code)] = g.f_code
        g = g.f_back
    for src_path in (__file__, threading.__file__):
        with open(src_path, "rb") as fh:
            top = compile(fh.read(), src_path, "exec", dont_inherit=True)
        for co in all_code(top):
            codes[id(co)] = co
    for co in all_code(SYNTHETIC):
        codes[id(co)] = co
    out = []
    for co in codes.values():
        nbytes = len(co.co_code)
        lines = [-1] * (nbytes // 2)
        for s, e, l in co.co_lines():
            for off in range(s, min(e, nbytes), 2):
                lines[off // 2] = -1 if l is None else l
        out.append({"first": co.co_firstlineno, "table": co.co_linetable.hex(), "lines": lines})
    emit({"kind": "tables", "minor": MINOR, "codes": out})


# ---- the main thread's stack -------------------------------------------------------------------

# GP_PYF_ENTRY: 3.10 every frame; 3.11+ the frames entered from C (the module by PyEval_EvalCode,
# level1 by map(), the generator by next()); the others are called inline by the interpreter.
MAIN_ENTRIES = {"<module>", "level1", "Outer.Inner.gen", "gen"}


def main_entries(qn, frame):
    return True if MINOR == 10 else qn in MAIN_ENTRIES


SYNTHETIC_SRC = (
    "def far_away():\n"
    "    x = 1\n"
    + "\n" * 6000
    + "    y = (" + " + ".join("x * %d" % i for i in range(300)) + ")\n"
    "    return (lambda: block('main', 0, main_entries))()\n"
)
SYNTHETIC = compile(SYNTHETIC_SRC, "<synthetic f\u00efl\u00e9 \U0001d52d>", "exec")
_synthetic_ns = {"block": block, "main_entries": main_entries}
exec(SYNTHETIC, _synthetic_ns)
far_away = _synthetic_ns["far_away"]
NOT_CODE = "not a code object, a str"


class Ŋame:
    def ŋ_method(self):
        return far_away()


def naïve_fünc():
    return Ŋame().ŋ_method()


class Outer:
    class Inner:
        def method(self, x):
            g = self.gen()
            return next(g)

        def gen(self):
            yield naïve_fünc()


def level1(x):
    return Outer.Inner().method(x)


# ---- worker threads ----------------------------------------------------------------------------

def worker_entries(qn, frame):
    """Workers: only the thread's first frame (entered from C) is checked, and 3.10's every frame."""
    return True if (MINOR == 10 or frame.f_back is None) else None


def worker_leaf(tag, fd):
    return block(tag, fd, worker_entries)


def worker_plain(tag, fd):
    return worker_leaf(tag, fd)


def worker_gen_body(tag, fd):
    yield worker_leaf(tag, fd)


def worker_gen(tag, fd):
    for _ in worker_gen_body(tag, fd):
        pass


def spin_leaf(x):
    return (x + 1) & 127  # small ints: no allocation (the reuse experiment counts on that)


def spin(x):
    return spin_leaf(x)


def spinner():
    """A thread that never blocks: its frames change under the probe's reads."""
    x = 0
    while True:
        x = spin(x)


# ---- code object address reuse -----------------------------------------------------------------

def reuse_template():
    return 0


def line_at_0(co):
    for s, e, l in co.co_lines():
        if s <= 0 < e:
            return 0 if l is None else l
    return 0


def make_code(name, first):
    # keywords spelled out: a **kw dict's keys object would be the size of a 3.10 code object
    # and take the freed block on every attempt
    if MINOR >= 11:
        return reuse_template.__code__.replace(co_name=name, co_qualname=name, co_firstlineno=first)
    return reuse_template.__code__.replace(co_name=name, co_firstlineno=first)


def describe_code(kind, co):
    emit({"kind": kind, "code": id(co), "name": co.co_name, "qualname": qualname(co),
          "file": co.co_filename, "line": line_at_0(co)})


def main():
    pipes = []
    threads = []
    for tag, fn in (("plain", worker_plain), ("gen", worker_gen)):
        r, w = os.pipe()
        pipes.append(w)  # kept open: the worker's read never ends
        t = threading.Thread(target=fn, args=(tag, r), daemon=True, name=tag)
        t.start()
        threads.append(t)
    threading.Thread(target=spinner, daemon=True, name="spinner").start()
    # the main thread's stack, then it waits on stdin: what it reads there is the first command
    data = list(map(level1, [0]))[0]

    held = None
    keep = []
    while True:
        cmd = data.decode().strip()
        if cmd == "reuse1":
            held = make_code("reuse_first", 1000)
            describe_code("reuse1", held)
        elif cmd == "reuse2":
            old = id(held)
            del held
            # pymalloc hands out the freed block again once the pools ahead of it are full:
            # keep every attempt alive so that each one takes a new block
            for _ in range(1000000):
                co = make_code("reuse_second", 2000)
                if id(co) == old:
                    break
                keep.append(co)
            else:
                emit({"kind": "error", "what": "no code object at the freed address"})
                return
            describe_code("reuse2", co)
        elif cmd in ("exit", ""):
            return
        data = os.read(0, 4096)


main()
