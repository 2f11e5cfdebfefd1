/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * python.h — CPython processes (3.10 to 3.13, x86-64, glibc): where a
 * process's interpreter keeps each thread's frame chain (struct gp_py_proc,
 * the BPF walk's input: unwind.h), the frames that walk records resolved to
 * qualified name, file and the line being executed. (The model puts them in
 * the native stack: model/stacks.c, in place of the eval loop's frames.)
 *
 * The session, for each traced process (at attach, and again after an exec):
 *   gp_python_probe(py, pid, &pr)   0: put pr.proc in py_procs[pid];
 *                                   -EAGAIN: CPython not initialized yet, probe again later;
 *                                   -ENOTSUP: refused, pr.line says why (one line for the report);
 *                                   -ENOENT: not a CPython process.
 *   gp_python_forget(py, pid)       at the process's exit, once its records are symbolized.
 * The symbolizer, for a record with Python frames (gp_api_call_ustack), while
 * the process lives (names are read from its memory; later only what was cached):
 *   gp_python_resolve(py, pid, out[i].addr, out[i].word, &sym) for each Python frame,
 *   gp_python_label(&sym, buf, len)  "Model.forward (train.py:13)".
 * Not thread-safe: one thread makes all of these calls.
 *
 * Behind it: python_layout.c (gp_python_probe: the layout found and
 * verified; the life of struct gp_python), python_files.c (the files it
 * reads), python_walk.c (gp_python_walk), python_names.c (gp_python_resolve,
 * gp_python_label, gp_py_addr2line); python_internal.h between them.
 */
#ifndef GP_PYTHON_H
#define GP_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "gpuprobed/unwind.h"

struct gp_python;

struct gp_python *gp_python_new(void); /* NULL + errno on failure */
void gp_python_free(struct gp_python *py);

struct gp_py_probe {
	struct gp_py_proc proc; /* for the py_procs map, when the probe succeeded */
	__u32 hexversion;	/* PY_VERSION_HEX; 3.10 (no Py_Version): 0x030a0000 */
	__u32 tss_key;		/* pthread key of thread states (>= 32: 2nd-level blocks) */
	char file[256];		/* the interpreter's file, as the process maps it */
	char line[320];		/* for the report: what was found, or why it was refused */
};

/*
 * Finds pid's interpreter (libpython3.X.so* or the executable, wherever it
 * lives), checks its layout against the running process and fills out.
 * 0; -ENOENT no CPython; -EAGAIN not verified yet (CPython or its libc not initialized, or
 * its thread states not bound to their threads yet: out->line says which, the reason to give if it
 * stays so); -ENOTSUP refused (a version, layout or C library this cannot verify: out->line);
 * -ESRCH the process is gone; other -errno. On success the process is
 * remembered for gp_python_resolve (a new probe of the same pid replaces it).
 */
int gp_python_probe(struct gp_python *py, pid_t pid, struct gp_py_probe *out);

struct gp_py_sym {
	const char *qualname; /* co_qualname; 3.10 (none there): co_name */
	const char *name;     /* co_name */
	const char *file;     /* co_filename */
	int line;	      /* the line being executed; 0: the instruction has none */
	int firstlineno;      /* co_firstlineno */
};

/*
 * A recorded Python frame (code: the code object's address; word: the
 * second word, GP_PYF_INSTR | flags << 32) of probed process pid to its
 * names (UTF-8, owned by py: valid until gp_python_forget(pid) or
 * gp_python_free) and line. Each code object is read once and cached; while
 * the process lives each use checks that the object at that address is
 * still the one cached (a freed address reused by other code is read again).
 * 0; -ESRCH pid not probed; -EINVAL not a code object (or a name not a
 * string); -EFAULT unreadable (the process is gone and the code not cached).
 */
int gp_python_resolve(struct gp_python *py, pid_t pid, __u64 code, __u64 word,
		      struct gp_py_sym *out);

/* "qualname (file:line)", file its base name; "qualname (file)" when line is 0. */
void gp_python_label(const struct gp_py_sym *s, char *buf, size_t len);

/* Drops pid's layout and code cache. */
void gp_python_forget(struct gp_python *py, pid_t pid);

/*
 * The line of byte offset off in code whose co_linetable is table[0..len)
 * and co_firstlineno firstlineno, for CPython 3.minor (3.10: PEP 626 pairs;
 * 3.11+: the location table). A negative offset (a frame not started yet):
 * firstlineno. 0 and *line; -ENOENT when the table gives no line there.
 */
int gp_py_addr2line(const __u8 *table, size_t len, int firstlineno, long off, unsigned minor,
		    int *line);

/*
 * The walk the BPF program does at a probe, in userspace through
 * process_vm_readv: the Python frames of the thread of pid whose fsbase
 * (pthread_self) is fsbase, innermost first, two words each as recorded in
 * gp_api_call_ustack (at most max frames). Returns the number of frames and
 * sets *status (enum gp_py_status) and, for GP_PY_READ, *err.
 */
int gp_python_walk(pid_t pid, const struct gp_py_proc *proc, __u64 fsbase, __u64 *words,
		   unsigned max, int *status, int *err);

#endif /* GP_PYTHON_H */
