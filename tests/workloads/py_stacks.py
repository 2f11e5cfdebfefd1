# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""py_stacks — GPU work from Python, for the tests of Python frames merged into native stacks.

Runs under any CPython 3.10+ and reaches the runtime through ctypes
(ctypes.CDLL("libcudart.so.13"): LD_LIBRARY_PATH picks the simulated one). Every
traced call is made on one line together with two more calls, in this order:

    calls.note(rt.cudaMemcpy(...), libc.backtrace(calls.buf, DEPTH), "cudaMemcpy", nbytes)

- backtrace() is glibc's, called through ctypes like the runtime: its native
  stack is the runtime call's, frame for frame (the same ffi_call_unix64 call
  site, the same interpreter frames below and above), unwound from .eh_frame;
- note() takes traceback.extract_stack() of its caller's frame, which is on the
  line of the call: file (co_filename), function and line of every Python frame
  of the call, innermost first, and each frame's co_qualname where Python has
  one (3.11+).
The reference (--ref) lists each distinct (API, Python frames, native frames)
with its calls, errors and bytes; native frames as address, file and offset in
the file (from /proc/self/maps, read at the end: no library is unloaded
meanwhile) and the dynamic symbol whose extent holds the address, which names
the interpreter's frames (_PyEval_EvalFrameDefault) that a merged stack shows as
the Python frames they ran.

Paths: the main thread allocates the loader's buffer (Loader.__init__), builds a Model (its constructor allocates through a
nested constructor, Buffers), trains it with Trainer.fit: a loop over a
generator (Trainer.batches, which reads back before each yield) calling
Trainer.step -> Model.forward (copies) and Model.backward -> its nested
function accumulate (memsets), then synchronises the device and frees. Two more
threads at the same time, through other paths: "loader" (a bound method as the
Thread's target, Loader.prefetch -> nested copy_one: copies) and "syncer" (a
Thread subclass, Syncer.run -> Syncer.wait: stream synchronisation).

Protocol as tests/workloads/wl.h: --ref FILE, --wait (print "READY <pid>", wait
for a line, then the traced phase), --hold (after "DONE", wait for stdin to
close). The reference also counts calls per API and per thread, as wl.h does.
"""
import ctypes
import json
import os
import sys
import threading
import traceback

DEPTH = 128  # frames backtrace() keeps: deeper than any path here
LAYERS = 3
NBYTES = 1 << 16
BATCHES = 4
READBACK = 256
LOADER_COPIES = 5
SYNCER_WAITS = 6
H2D, D2H = 1, 2

rt = ctypes.CDLL("libcudart.so.13")
libc = ctypes.CDLL("libc.so.6")
libc.backtrace.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
libc.backtrace.restype = ctypes.c_int


def declare(name, *argtypes):
    fn = getattr(rt, name)
    fn.argtypes = list(argtypes)
    fn.restype = ctypes.c_int


declare("cudaSetDevice", ctypes.c_int)
declare("cudaMalloc", ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t)
declare("cudaFree", ctypes.c_void_p)
declare("cudaMemcpy", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
declare("cudaMemset", ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t)
declare("cudaDeviceSynchronize")
declare("cudaStreamSynchronize", ctypes.c_void_p)

KIND = {"cudaMalloc": "alloc", "cudaFree": "free", "cudaMemcpy": "copy", "cudaMemset": "memset",
        "cudaDeviceSynchronize": "sync", "cudaStreamSynchronize": "sync"}


class Reference:
    """What the traced phase did: calls per API and per thread, and each distinct stack."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counting = False
        self.apis = {}
        self.threads = {}
        self.stacks = {}


REF = Reference()


class Calls:
    """One thread's recorder: its backtrace() buffer, and note() for each call it makes."""

    def __init__(self, name):
        self.name = name
        self.buf = (ctypes.c_void_p * DEPTH)()

    def note(self, err, nbt, api, nbytes, direction=None):
        """Called on the line of the call, after it: the call's result, backtrace()'s count."""
        caller = sys._getframe(1)
        summary = traceback.extract_stack(caller)  # outermost first, the caller's frame last
        frames = [f for f, _ in traceback.walk_stack(caller)]  # innermost first
        if not 2 <= nbt < DEPTH:
            raise SystemExit(f"py_stacks: backtrace() gave {nbt} frames")
        if len(frames) != len(summary):
            raise SystemExit("py_stacks: traceback and frame walk disagree")
        python = []
        for f, s in zip(frames, reversed(summary)):
            code = f.f_code
            if (s.filename, s.name) != (code.co_filename, code.co_name):
                raise SystemExit(f"py_stacks: traceback says {s}, the frame {code}")
            python.append((s.filename, s.name, getattr(code, "co_qualname", None), s.lineno))
        native = tuple(self.buf[i] or 0 for i in range(nbt))
        if not REF.counting:
            return
        key = (api, nbytes, direction, tuple(python), native)
        tid = threading.get_native_id()
        with REF.lock:
            a = REF.apis.setdefault(api, {"calls": 0, "errors": 0})
            a["calls"] += 1
            a["errors"] += err != 0
            REF.threads[tid] = REF.threads.get(tid, 0) + 1
            s = REF.stacks.setdefault(key, {"thread": self.name, "calls": 0, "errors": 0, "bytes": 0})
            s["calls"] += 1
            if err:
                s["errors"] += 1
            elif api != "cudaFree":
                s["bytes"] += nbytes


# ---- the main thread: a model, its buffers, a training loop -------------------------------------

class Buffers:
    """Device memory of a model, allocated in the constructor."""

    def __init__(self, calls, n, nbytes):
        self.ptrs = []
        for _ in range(n):
            p = ctypes.c_void_p()
            calls.note(rt.cudaMalloc(ctypes.byref(p), nbytes), libc.backtrace(calls.buf, DEPTH), "cudaMalloc", nbytes)
            self.ptrs.append(p.value)

    def release(self, calls):
        for p in self.ptrs:
            calls.note(rt.cudaFree(p), libc.backtrace(calls.buf, DEPTH), "cudaFree", 0)


class Model:
    def __init__(self, calls, layers, nbytes):
        self.calls = calls
        self.nbytes = nbytes
        self.host = ctypes.create_string_buffer(nbytes)
        self.buffers = Buffers(calls, layers, nbytes)

    def forward(self, batch):
        c = self.calls
        for p in self.buffers.ptrs:
            c.note(rt.cudaMemcpy(p, self.host, self.nbytes, H2D), libc.backtrace(c.buf, DEPTH), "cudaMemcpy", self.nbytes, "HtoD")

    def backward(self, batch):
        def accumulate(p):
            c = self.calls
            c.note(rt.cudaMemset(p, batch, self.nbytes), libc.backtrace(c.buf, DEPTH), "cudaMemset", self.nbytes)

        for p in self.buffers.ptrs:
            accumulate(p)


class Trainer:
    def __init__(self, model):
        self.model = model

    def batches(self, n):
        m = self.model
        c = m.calls
        for i in range(n):
            c.note(rt.cudaMemcpy(m.host, m.buffers.ptrs[0], READBACK, D2H), libc.backtrace(c.buf, DEPTH), "cudaMemcpy", READBACK, "DtoH")
            yield i

    def step(self, batch):
        self.model.forward(batch)
        self.model.backward(batch)

    def fit(self, n):
        for batch in self.batches(n):
            self.step(batch)
        c = self.model.calls
        c.note(rt.cudaDeviceSynchronize(), libc.backtrace(c.buf, DEPTH), "cudaDeviceSynchronize", 0)


def train(calls):
    model = Model(calls, LAYERS, NBYTES)
    Trainer(model).fit(BATCHES)
    model.buffers.release(calls)


# ---- two more threads, through other paths ------------------------------------------------------

class Loader:
    def __init__(self, calls, nbytes):
        self.calls = Calls("loader")
        self.host = ctypes.create_string_buffer(nbytes)
        self.nbytes = nbytes
        p = ctypes.c_void_p()
        calls.note(rt.cudaMalloc(ctypes.byref(p), nbytes), libc.backtrace(calls.buf, DEPTH), "cudaMalloc", nbytes)
        self.dev = p.value

    def prefetch(self, n):
        def copy_one(i):
            c = self.calls
            c.note(rt.cudaMemcpy(self.dev, self.host, self.nbytes, H2D), libc.backtrace(c.buf, DEPTH), "cudaMemcpy", self.nbytes, "HtoD")

        for i in range(n):
            copy_one(i)


class Syncer(threading.Thread):
    def __init__(self, n):
        super().__init__(name="syncer")
        self.calls = Calls("syncer")
        self.n = n

    def wait(self):
        c = self.calls
        c.note(rt.cudaStreamSynchronize(None), libc.backtrace(c.buf, DEPTH), "cudaStreamSynchronize", 0)

    def run(self):
        for _ in range(self.n):
            self.wait()


# ---- reference ------------------------------------------------------------------------------------

class Dl_info(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


class Elf64_Sym(ctypes.Structure):
    _fields_ = [("st_name", ctypes.c_uint32), ("st_info", ctypes.c_uint8), ("st_other", ctypes.c_uint8),
                ("st_shndx", ctypes.c_uint16), ("st_value", ctypes.c_uint64), ("st_size", ctypes.c_uint64)]


RTLD_DL_SYMENT = 1
dladdr1 = libc.dladdr1
dladdr1.argtypes = [ctypes.c_void_p, ctypes.POINTER(Dl_info), ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
dladdr1.restype = ctypes.c_int


def symbol_of(addr):
    """The dynamic symbol whose extent holds the call at return address addr, else None."""
    info, sym = Dl_info(), ctypes.c_void_p()
    if not dladdr1(addr, ctypes.byref(info), ctypes.byref(sym), RTLD_DL_SYMENT) or not info.dli_sname or not sym:
        return None
    size = ctypes.cast(sym, ctypes.POINTER(Elf64_Sym)).contents.st_size
    start = info.dli_saddr or 0
    return info.dli_sname.decode() if start < addr <= start + size else None


def read_maps():
    maps = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            start, end = (int(x, 16) for x in parts[0].split("-"))
            maps.append((start, end, int(parts[2], 16), parts[5].strip() if len(parts) > 5 else ""))
    return maps


def native_frame(maps, addr):
    for start, end, offset, path in maps:
        if start <= addr < end:
            return {"address": hex(addr), "file": path or None, "file_offset": addr - start + offset,
                    "symbol": symbol_of(addr)}
    return {"address": hex(addr), "file": None, "file_offset": None, "symbol": None}


def write_ref(path):
    maps = read_maps()
    stacks = []
    for (api, nbytes, direction, python, native), s in REF.stacks.items():
        stacks.append({
            "api": api, "kind": KIND[api], "size_bytes": nbytes, "direction": direction, **s,
            "python": [{"file": f, "function": n, "qualname": q, "line": ln} for f, n, q, ln in python],
            "native": [native_frame(maps, a) for a in native],
        })
    ref = {
        "pid": os.getpid(),
        "python": {"executable": os.path.realpath(sys.executable), "version": list(sys.version_info[:3]),
                   "script": os.path.abspath(__file__)},
        "cuda_api": REF.apis,
        "threads": {str(t): n for t, n in REF.threads.items()},
        "stacks": stacks,
    }
    with open(path, "w") as f:
        json.dump(ref, f, indent=1)


def main():
    args = sys.argv[1:]
    ref_path = args[args.index("--ref") + 1] if "--ref" in args else None
    calls = Calls("main")
    # set-up before the handshake, no CUDA call (launched without --wait, all of it is traced):
    # backtrace() loads libgcc_s on its first call
    libc.backtrace(calls.buf, DEPTH)
    if "--wait" in args:
        print(f"READY {os.getpid()}", flush=True)
        if not sys.stdin.readline():
            raise SystemExit("py_stacks: stdin closed before the go line")
    REF.counting = True
    # the device of the allocations, for a tracer attached after the thread's first call (no stack)
    err = rt.cudaSetDevice(0)
    with REF.lock:
        REF.apis["cudaSetDevice"] = {"calls": 1, "errors": int(err != 0)}
        tid = threading.get_native_id()
        REF.threads[tid] = REF.threads.get(tid, 0) + 1
    loader = Loader(calls, NBYTES)  # its device buffer stays allocated: a leak the report must name
    workers = [threading.Thread(target=loader.prefetch, args=(LOADER_COPIES,), name="loader"),
               Syncer(SYNCER_WAITS)]
    for t in workers:
        t.start()
    train(calls)
    for t in workers:
        t.join()
    REF.counting = False
    if ref_path:
        write_ref(ref_path)
    print("DONE", flush=True)
    if "--hold" in args:
        for _ in sys.stdin:
            pass


if __name__ == "__main__":
    main()
