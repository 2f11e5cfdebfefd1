/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * python_layout.c — finding where a CPython 3.10 to 3.13 process keeps its
 * threads' frame chains, and verifying it against the running process (see
 * python.h): gp_python_probe, step by step, fills what the BPF walk reads
 * (struct gp_py_proc) and what naming needs (struct py_proc); and the life
 * of struct gp_python. The interpreter's files are read by python_files.c,
 * the walk is python_walk.c's, naming the frames python_names.c's.
 *
 * Layouts: per-version tables derived from CPython's own headers
 * (Include/internal/pycore_runtime.h, pycore_interp.h, pycore_frame.h,
 * cpython/pystate.h, cpython/code.h, cpython/unicodeobject.h of 3.10.13,
 * 3.11.7 (the same as Debian's 3.11.2), 3.12.1 and 3.13.0, x86-64 release
 * builds), except for 3.13, whose interpreter describes itself in
 * _Py_DebugOffsets (read from the process and bound-checked; the table
 * only cross-checks it and gives what it lacks). Nothing is trusted
 * unverified: the version (Py_Version, or for 3.10 the file's name),
 * _PyRuntime's size, PyCode_Type's name and tp_basicsize (3.11+: the offset
 * of co_code_adaptive), and a live walk — each thread state the
 * interpreter lists is found again through the thread's pthread key, from
 * its own fsbase (glibc's struct pthread), and its frames hold code objects.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprobed/events.h"
#include "model/u64map.h"
#include "proc_maps.h"
#include "stacks/python.h"
#include "stacks/python_internal.h"

#define NONE GP_PY_NONE

/* ---- layouts ------------------------------------------------------------------------------- */

/*
 * Indexed by minor - 10. fr_read covers every frame field the walk reads.
 * 3.11's owner (69) exists but the walk needs no shim test there: NONE.
 */
/* clang-format off */
static const struct py_layout layouts[] = {
	{ .minor = 10, .runtime_size = 672, .code_basicsize = 176, .rt_key_init = 584,
	  .rt_interp_head = 32, .interp_next = 0, .interp_threads = 8,
	  .ts_next = 8, .ts_thread_id = 176, .ts_frame = 24, .cframe_current = NONE,
	  .fr_code = 32, .fr_prev = 24, .fr_instr = 96, .fr_owner = NONE, .fr_is_entry = NONE,
	  .fr_read = 104, .owner_shim = 0xff,
	  .co_filename = 104, .co_name = 112, .co_qualname = NONE, .co_firstlineno = 40,
	  .co_linetable = 120, .co_adaptive = NONE, .str_ascii_data = 48, .str_compact_data = 72 },
	{ .minor = 11, .runtime_size = 166688, .code_basicsize = 184, .rt_key_init = 592,
	  .rt_interp_head = 40, .interp_next = 0, .interp_threads = 16,
	  .ts_next = 8, .ts_thread_id = 152, .ts_frame = 56, .cframe_current = 8,
	  .fr_code = 32, .fr_prev = 48, .fr_instr = 56, .fr_owner = NONE, .fr_is_entry = 68,
	  .fr_read = 72, .owner_shim = 0xff,
	  .co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 72,
	  .co_linetable = 136, .co_adaptive = 184, .str_ascii_data = 48, .str_compact_data = 72 },
	{ .minor = 12, .runtime_size = 459944, .code_basicsize = 192, .rt_key_init = 1544,
	  .rt_interp_head = 40, .interp_next = 0, .interp_threads = 72,
	  .ts_next = 8, .ts_thread_id = 136, .ts_frame = 56, .cframe_current = 0,
	  .fr_code = 0, .fr_prev = 8, .fr_instr = 56, .fr_owner = 70, .fr_is_entry = NONE,
	  .fr_read = 72, .owner_shim = 3,
	  .co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
	  .co_linetable = 136, .co_adaptive = 192, .str_ascii_data = 40, .str_compact_data = 56 },
	{ .minor = 13, .runtime_size = 283320, .code_basicsize = 200, .rt_key_init = 2160,
	  .rt_interp_head = 632, .interp_next = 7264, .interp_threads = 7344,
	  .ts_next = 8, .ts_thread_id = 152, .ts_frame = 72, .cframe_current = NONE,
	  .fr_code = 0, .fr_prev = 8, .fr_instr = 56, .fr_owner = 70, .fr_is_entry = NONE,
	  .fr_read = 72, .owner_shim = 3,
	  .co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
	  .co_linetable = 136, .co_adaptive = 200, .str_ascii_data = 40, .str_compact_data = 56 },
};
/* clang-format on */
#define PY_MINOR_FIRST 10
#define PY_MINOR_LAST  13

/* 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h of 3.13.0): at _PyRuntime + 0. */
struct py313_debug_offsets {
	char cookie[8];
	__u64 version, free_threaded;
	struct {
		__u64 size, finalizing, interpreters_head;
	} runtime_state;
	struct {
		__u64 size, id, next, threads_head, gc, imports_modules, sysdict, builtins,
			ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
			gil_runtime_state_locked, gil_runtime_state_holder;
	} interpreter_state;
	struct {
		__u64 size, prev, next, interp, current_frame, thread_id, native_thread_id,
			datastack_chunk, status;
	} thread_state;
	struct {
		__u64 size, previous, executable, instr_ptr, localsplus, owner;
	} interpreter_frame;
	struct {
		__u64 size, filename, name, qualname, linetable, firstlineno, argcount,
			localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct {
		__u64 size, ob_type;
	} pyobject;
	struct {
		__u64 size, tp_name, tp_repr, tp_flags;
	} type_object;
	struct {
		__u64 size, ob_item, ob_size;
	} tuple_object, list_object;
	struct {
		__u64 size, ma_keys, ma_values;
	} dict_object;
	struct {
		__u64 size, ob_fval;
	} float_object;
	struct {
		__u64 size, lv_tag, ob_digit;
	} long_object;
	struct {
		__u64 size, ob_size, ob_sval;
	} bytes_object;
	struct {
		__u64 size, state, length, asciiobject_size;
	} unicode_object;
	struct {
		__u64 size, collecting;
	} gc;
};
_Static_assert(sizeof(struct py313_debug_offsets) == 584, "_Py_DebugOffsets of 3.13");

/*
 * glibc's struct pthread (nptl/descr.h): specific_1stblock (keys < 32, 16-byte
 * {seq, data}) and specific[] (pointers to further blocks), from fsbase,
 * which is the struct's address on x86-64. Internal to glibc: only versions
 * whose offsets were checked (DWARF of libc6-dbg, and a live lookup of 70
 * keys on 4 threads) are used, and each process is checked again at probe.
 */
static const struct {
	unsigned major, minor;
	__u32 first, second;
} glibcs[] = {
	{ 2, 36, 784, 1296 }, /* Debian 12 */
};

/* ---- the probed processes ------------------------------------------------------------------ */

struct gp_python *gp_python_new(void)
{
	return calloc(1, sizeof(struct gp_python));
}

void gp_python_forget(struct gp_python *py, pid_t pid)
{
	struct py_proc *pp = gp_u64map_get(&py->procs, (__u64)pid);

	if (pp) {
		gp_u64map_del(&py->procs, (__u64)pid);
		py_proc_free(pp);
	}
}

void gp_python_free(struct gp_python *py)
{
	if (!py)
		return;
	gp_u64map_clear(&py->procs, py_proc_free);
	free(py->files);
	free(py);
}

/* ---- probing ------------------------------------------------------------------------------- */

/* A type object's tp_name is want. */
static bool type_named(pid_t pid, __u64 type, const char *want)
{
	char name[16] = { 0 };
	__u64 p;

	if (py_mem_u64(pid, type + TP_NAME, &p) || py_mem_read(pid, p, name, strlen(want) + 1))
		return false;
	return !strcmp(name, want);
}

static bool fits(__u64 off, __u64 width, __u64 size)
{
	return off < size && width <= size - off;
}

/*
 * 3.13: the layout from the process's own _Py_DebugOffsets, bound-checked;
 * *differ counts the fields that differ from the table (3.13.0's headers).
 * What it does not describe (autoTSSkey, PyCompactUnicodeObject's size, the
 * owner values) stays the table's; the live walk checks the key.
 */
static int layout_from_debug_offsets(pid_t pid, __u64 runtime, const struct py_file *f,
				     __u32 hexversion, struct py_layout *lay, int *differ,
				     char *why, size_t whylen)
{
	struct py313_debug_offsets d;
	const struct py_layout *t = &layouts[13 - PY_MINOR_FIRST];
	int err = py_mem_read(pid, runtime, &d, sizeof(d));

	if (err) {
		snprintf(why, whylen, "_Py_DebugOffsets unreadable (%s)", strerror(-err));
		return err;
	}
	if (memcmp(d.cookie, "xdebugpy", 8)) {
		snprintf(why, whylen, "no _Py_DebugOffsets cookie at _PyRuntime");
		return -ENOTSUP;
	}
	if (d.version != hexversion) {
		snprintf(why, whylen, "_Py_DebugOffsets.version 0x%llx is not Py_Version 0x%x",
			 (unsigned long long)d.version, hexversion);
		return -ENOTSUP;
	}
	if (d.free_threaded) {
		snprintf(why, whylen, "a free-threaded build (its objects are laid out otherwise)");
		return -ENOTSUP;
	}
	if (d.runtime_state.size != f->runtime_size) {
		snprintf(why, whylen,
			 "_Py_DebugOffsets says _PyRuntime is %llu bytes, its symbol %llu",
			 (unsigned long long)d.runtime_state.size,
			 (unsigned long long)f->runtime_size);
		return -ENOTSUP;
	}
	/* each offset inside its structure, each structure of a sane size */
	if (!fits(d.runtime_state.interpreters_head, 8, d.runtime_state.size) ||
	    d.interpreter_state.size > (1u << 22) ||
	    !fits(d.interpreter_state.next, 8, d.interpreter_state.size) ||
	    !fits(d.interpreter_state.threads_head, 8, d.interpreter_state.size) ||
	    d.thread_state.size > 4096 || !fits(d.thread_state.next, 8, d.thread_state.size) ||
	    !fits(d.thread_state.current_frame, 8, d.thread_state.size) ||
	    !fits(d.thread_state.thread_id, 8, d.thread_state.size) ||
	    d.interpreter_frame.size > 256 ||
	    !fits(d.interpreter_frame.previous, 8, d.interpreter_frame.size) ||
	    !fits(d.interpreter_frame.executable, 8, d.interpreter_frame.size) ||
	    !fits(d.interpreter_frame.instr_ptr, 8, d.interpreter_frame.size) ||
	    !fits(d.interpreter_frame.owner, 1, d.interpreter_frame.size) ||
	    d.code_object.size > 4096 || !fits(d.code_object.filename, 8, d.code_object.size) ||
	    !fits(d.code_object.name, 8, d.code_object.size) ||
	    !fits(d.code_object.qualname, 8, d.code_object.size) ||
	    !fits(d.code_object.linetable, 8, d.code_object.size) ||
	    !fits(d.code_object.firstlineno, 4, d.code_object.size) ||
	    d.code_object.co_code_adaptive > d.code_object.size || d.pyobject.ob_type != OB_TYPE ||
	    d.unicode_object.state != STR_STATE || d.unicode_object.length != STR_LENGTH ||
	    d.unicode_object.asciiobject_size < STR_STATE + 4 ||
	    d.unicode_object.asciiobject_size > 128 || d.bytes_object.ob_size != BYTES_SIZE ||
	    d.bytes_object.ob_sval != BYTES_DATA) {
		snprintf(why, whylen, "_Py_DebugOffsets out of bounds");
		return -ENOTSUP;
	}
	*lay = *t;
	lay->rt_interp_head = (__u32)d.runtime_state.interpreters_head;
	lay->interp_next = (__u32)d.interpreter_state.next;
	lay->interp_threads = (__u32)d.interpreter_state.threads_head;
	lay->ts_next = (__u16)d.thread_state.next;
	lay->ts_thread_id = (__u16)d.thread_state.thread_id;
	lay->ts_frame = (__u16)d.thread_state.current_frame;
	lay->fr_prev = (__u16)d.interpreter_frame.previous;
	lay->fr_code = (__u16)d.interpreter_frame.executable;
	lay->fr_instr = (__u16)d.interpreter_frame.instr_ptr;
	lay->fr_owner = (__u16)d.interpreter_frame.owner;
	lay->fr_read = (__u16)((d.interpreter_frame.size + 7) & ~7ull);
	lay->co_filename = (__u16)d.code_object.filename;
	lay->co_name = (__u16)d.code_object.name;
	lay->co_qualname = (__u16)d.code_object.qualname;
	lay->co_linetable = (__u16)d.code_object.linetable;
	lay->co_firstlineno = (__u16)d.code_object.firstlineno;
	lay->co_adaptive = (__u16)d.code_object.co_code_adaptive;
	lay->code_basicsize = (__u32)d.code_object.co_code_adaptive;
	lay->str_ascii_data = (__u16)d.unicode_object.asciiobject_size;
	/* PyCompactUnicodeObject: PyASCIIObject, then utf8_length and utf8 */
	lay->str_compact_data = (__u16)(d.unicode_object.asciiobject_size + 16);
	*differ = (lay->rt_interp_head != t->rt_interp_head) +
		  (lay->interp_next != t->interp_next) +
		  (lay->interp_threads != t->interp_threads) + (lay->ts_next != t->ts_next) +
		  (lay->ts_thread_id != t->ts_thread_id) + (lay->ts_frame != t->ts_frame) +
		  (lay->fr_prev != t->fr_prev) + (lay->fr_code != t->fr_code) +
		  (lay->fr_instr != t->fr_instr) + (lay->fr_owner != t->fr_owner) +
		  (lay->co_filename != t->co_filename) + (lay->co_name != t->co_name) +
		  (lay->co_qualname != t->co_qualname) + (lay->co_linetable != t->co_linetable) +
		  (lay->co_firstlineno != t->co_firstlineno) +
		  (lay->co_adaptive != t->co_adaptive) + (lay->str_ascii_data != t->str_ascii_data);
	return 0;
}

struct live_check {
	int threads;  /* thread states listed */
	int verified; /* ... found again through their thread's pthread key */
	int code_ok;  /* frames of those threads holding a code object */
	int code_bad; /* ... holding something else */
};

/*
 * Every thread state of every interpreter: its thread_id is its thread's
 * pthread_self, i.e. fsbase, where glibc's TCB points at itself (tcb and
 * self at +0 and +16); through the pthread key, as the BPF walk will, that
 * thread must find a state of its own; its frames must hold code objects.
 * Reads race with the running threads: only agreement counts.
 */
static int live_check(pid_t pid, const struct py_layout *lay, __u64 runtime,
		      const struct gp_py_proc *proc, __u64 code_type, struct live_check *lc)
{
	__u64 interp, words[2 * GP_PY_MAX_FRAMES];
	int err;

	memset(lc, 0, sizeof(*lc));
	err = py_mem_u64(pid, runtime + lay->rt_interp_head, &interp);
	if (err)
		return err;
	for (int ni = 0; interp && ni < 64; ni++) {
		__u64 ts;

		if (py_mem_u64(pid, interp + lay->interp_threads, &ts))
			break;
		for (int nt = 0; ts && nt < 4096; nt++) {
			__u64 fs, tcb[3];
			int n, status, werr;

			lc->threads++;
			if (py_mem_u64(pid, ts + lay->ts_thread_id, &fs) || !fs ||
			    py_mem_read(pid, fs, tcb, sizeof(tcb)) || tcb[0] != fs || tcb[2] != fs)
				goto next;
			n = gp_python_walk(pid, proc, fs, words, GP_PY_MAX_FRAMES, &status, &werr);
			if (status == GP_PY_NO_THREAD || (status == GP_PY_READ && !n))
				goto next;
			lc->verified++;
			for (int i = 0; i < n; i++) {
				__u64 type;

				if (!py_mem_u64(pid, words[2 * i] + OB_TYPE, &type) &&
				    type == code_type)
					lc->code_ok++;
				else
					lc->code_bad++;
			}
next:
			if (py_mem_u64(pid, ts + lay->ts_next, &ts))
				break;
		}
		if (py_mem_u64(pid, interp + lay->interp_next, &interp))
			break;
	}
	return 0;
}

/* What probing has learned so far, one step after another (gp_python_probe). */
struct probe {
	struct gp_python *py;
	pid_t pid;
	struct gp_py_probe *out;
	struct gp_maps *maps;
	const struct gp_map *where, *libc; /* the interpreter's mapping; libc.so.6's, if mapped */
	struct py_file file; /* where's, a copy: a later file_get may move the cache */
	const char *base;    /* where's base name, for the lines */
	__u64 bias, runtime; /* where's load bias; _PyRuntime's address */
	unsigned minor;
	__u32 hexversion;
	char verstr[32];
	struct py_layout lay;
	char extra[96];	    /* what the success line adds about the layout */
	__u32 key_words[2]; /* _PyRuntime's autoTSSkey: _is_initialized, _key */
	unsigned gmaj, gmin;
	size_t glibc; /* the C library's entry in glibcs[] */
	struct live_check lc;
};

/* out->line says what was found, or why not; returns err. */
static int say(struct probe *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int say(struct probe *p, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->out->line, sizeof(p->out->line), fmt, ap);
	va_end(ap);
	return err;
}

#define REFUSE(p, ...)	say((p), -ENOTSUP, __VA_ARGS__)
/*
 * Not verified now, but perhaps only not yet: an interpreter between creating a thread state and
 * binding it to its thread's key, say. The caller looks again and refuses with this line only
 * when it stays so (stack_sources.c).
 */
#define NOT_YET(p, ...) say((p), -EAGAIN, __VA_ARGS__)

/*
 * The interpreter: a libpython3.X.so first (an executable that embeds one beside it is rare),
 * then the executable.
 */
static int find_interpreter(struct probe *p)
{
	const struct gp_maps *maps = p->maps;
	char exe[PATH_MAX], link[64];
	ssize_t n;
	size_t i;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)p->pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	for (int pass = 0; pass < 2 && !p->where; pass++) {
		for (i = 0; i < maps->n; i++) {
			const struct gp_map *m = &maps->v[i];
			const struct py_file *cand;

			if (!m->inode || m->offset ||
			    (pass == 0 ? !py_is_libpython(m->path)
				       : !(exe[0] && !strcmp(m->path, exe))))
				continue;
			cand = py_file_get(p->py, p->pid, m);
			if (cand && cand->runtime) {
				p->where = m;
				p->file = *cand;
				break;
			}
		}
	}
	for (i = 0; i < maps->n && !p->libc; i++)
		if (maps->v[i].inode && py_is_libc(maps->v[i].path))
			p->libc = &maps->v[i];
	if (!p->where)
		return say(
			p, -ENOENT,
			"pid %d: no CPython (no _PyRuntime in libpython3.X.so or the executable)",
			(int)p->pid);
	snprintf(p->out->file, sizeof(p->out->file), "%s", p->where->path);
	/*
	 * Caught at its exec, a dynamic program has only itself and the loader mapped: libc comes
	 * later, and the interpreter's pointers (its types' names) are relocated then. Ask again.
	 */
	for (i = 0; i < maps->n && !p->libc; i++)
		if (maps->v[i].inode && py_is_dynamic_loader(maps->v[i].path))
			return say(p, -EAGAIN,
				   "pid %d: the dynamic loader has not mapped libc.so.6 yet",
				   (int)p->pid);
	p->base = strrchr(p->where->path, '/');
	p->base = p->base ? p->base + 1 : p->where->path;
	p->bias = p->where->start - p->file.vaddr0;
	p->runtime = p->bias + p->file.runtime;
	return 0;
}

/* The version: Py_Version (3.11+) as the process holds it; 3.10's file name. */
static int read_version(struct probe *p)
{
	const struct py_file *f = &p->file;
	const char *base = p->base;

	if (f->version) {
		__u64 v;
		int err = py_mem_u64(p->pid, p->bias + f->version, &v);

		if (err)
			return say(p, err, "CPython (%s): Py_Version unreadable (%s)", base,
				   strerror(-err));
		p->hexversion = (__u32)v;
		p->minor = (p->hexversion >> 16) & 0xff;
		if (p->hexversion >> 24 != 3)
			return REFUSE(p, "CPython (%s): Py_Version 0x%llx is not a 3.x version",
				      base, (unsigned long long)v);
		snprintf(p->verstr, sizeof(p->verstr), "3.%u.%u", p->minor,
			 (p->hexversion >> 8) & 0xff);
	} else {
		p->minor = py_minor_from_name(p->where->path);
		if (!p->minor)
			return REFUSE(p,
				      "CPython (%s): no Py_Version, and the file's name "
				      "does not give the version",
				      base);
		if (p->minor >= 11)
			return REFUSE(
				p, "CPython (%s): named 3.%u but has no Py_Version (3.11+ all do)",
				base, p->minor);
		p->hexversion = 0x03000000u | p->minor << 16;
		snprintf(p->verstr, sizeof(p->verstr), "3.%u", p->minor);
	}
	p->out->hexversion = p->hexversion;
	if (p->minor < PY_MINOR_FIRST || p->minor > PY_MINOR_LAST)
		return REFUSE(p, "CPython %s (%s): not supported (Python frames: 3.10 to 3.13)",
			      p->verstr, base);
	if (!f->code_type || !f->unicode_type || !f->bytes_type || !f->eval || !f->eval_size)
		return REFUSE(p,
			      "CPython %s (%s): PyCode_Type, PyUnicode_Type, PyBytes_Type or "
			      "_PyEval_EvalFrameDefault missing from its symbols",
			      p->verstr, base);
	return 0;
}

/* The layout: 3.13's _Py_DebugOffsets, else the version's table if _PyRuntime's size agrees. */
static int choose_layout(struct probe *p)
{
	if (p->minor == 13) {
		char why[160];
		int differ = 0;
		int err = layout_from_debug_offsets(p->pid, p->runtime, &p->file, p->hexversion,
						    &p->lay, &differ, why, sizeof(why));

		if (err) /* -ENOTSUP: refused */
			return say(p, err, "CPython %s (%s): %s", p->verstr, p->base, why);
		snprintf(p->extra, sizeof(p->extra),
			 ", layout from _Py_DebugOffsets (%d field%s differ%s from 3.13.0's)",
			 differ, differ == 1 ? "" : "s", differ == 1 ? "s" : "");
		return 0;
	}
	p->lay = layouts[p->minor - PY_MINOR_FIRST];
	if (p->file.runtime_size != p->lay.runtime_size)
		return REFUSE(p,
			      "CPython %s (%s): _PyRuntime is %llu bytes, the 3.%u table's %u: "
			      "a layout not verified",
			      p->verstr, p->base, (unsigned long long)p->file.runtime_size,
			      p->minor, p->lay.runtime_size);
	return 0;
}

/*
 * The key: the interpreter creates it at start; before that, nothing to walk. Asked before
 * anything that holds a pointer: until the dynamic loader has relocated the interpreter's file
 * (R_X86_64_RELATIVE), its type objects' tp_name read 0 or the file's addend, and a process
 * caught at its exec on a busy machine can be looked at then. The key is set by the
 * interpreter's own code, which runs only after the relocation.
 */
static int read_key(struct probe *p)
{
	__u32 *kw = p->key_words;
	int err = py_mem_read(p->pid, p->runtime + p->lay.rt_key_init, kw, sizeof(p->key_words));

	if (err)
		return say(p, err, "CPython %s (%s): _PyRuntime unreadable (%s)", p->verstr,
			   p->base, strerror(-err));
	if (kw[0] > 1)
		return REFUSE(p,
			      "CPython %s (%s): the thread-state key's initialized flag reads %u: "
			      "layout not verified",
			      p->verstr, p->base, kw[0]);
	if (!kw[0])
		return say(p, -EAGAIN, "CPython %s (%s): not initialized yet", p->verstr, p->base);
	if (kw[1] >= 1024) /* PTHREAD_KEYS_MAX */
		return REFUSE(p, "CPython %s (%s): thread-state key %u is not a pthread key",
			      p->verstr, p->base, kw[1]);
	return 0;
}

/* The types are what their names say; PyCode_Type's tp_basicsize is the layout's. */
static int check_types(struct probe *p)
{
	__u64 typehdr[6], code_type = p->bias + p->file.code_type;
	int err = py_mem_read(p->pid, code_type, typehdr, sizeof(typehdr));

	if (err)
		return say(p, err, "CPython %s (%s): PyCode_Type unreadable (%s)", p->verstr,
			   p->base, strerror(-err));
	if (!type_named(p->pid, code_type, "code") ||
	    !type_named(p->pid, p->bias + p->file.unicode_type, "str") ||
	    !type_named(p->pid, p->bias + p->file.bytes_type, "bytes"))
		return REFUSE(p,
			      "CPython %s (%s): PyCode_Type, PyUnicode_Type or PyBytes_Type "
			      "not named so in the process",
			      p->verstr, p->base);
	if (typehdr[TP_BASICSIZE / 8] != p->lay.code_basicsize)
		return REFUSE(p,
			      "CPython %s (%s): code objects are %llu bytes, the layout's %u: "
			      "not verified",
			      p->verstr, p->base, (unsigned long long)typehdr[TP_BASICSIZE / 8],
			      p->lay.code_basicsize);
	return 0;
}

/* glibc: where a thread's pthread keys live, for the versions whose struct pthread is known. */
static int check_glibc(struct probe *p)
{
	int err;

	if (!p->libc)
		return REFUSE(p,
			      "CPython %s (%s): no glibc libc.so.6 mapped (static, or another C "
			      "library): thread states are found through glibc's pthread keys",
			      p->verstr, p->base);
	err = py_glibc_version(p->pid, p->libc, &p->gmaj, &p->gmin);
	if (err)
		return REFUSE(p, "CPython %s (%s): the version of %s is not readable (%s)",
			      p->verstr, p->base, p->libc->path, strerror(-err));
	for (p->glibc = 0; p->glibc < sizeof(glibcs) / sizeof(glibcs[0]); p->glibc++)
		if (glibcs[p->glibc].major == p->gmaj && glibcs[p->glibc].minor == p->gmin)
			return 0;
	return REFUSE(p,
		      "CPython %s (%s): glibc %u.%u: where its threads keep pthread keys "
		      "is not known (known: 2.36)",
		      p->verstr, p->base, p->gmaj, p->gmin);
}

/* What the BPF walk reads of the process (its py_procs entry), from the layout found. */
static void fill_proc(struct probe *p)
{
	const struct py_layout *lay = &p->lay;

	p->out->tss_key = p->key_words[1];
	p->out->proc = (struct gp_py_proc){
		.tss_key_addr = p->runtime + lay->rt_key_init + 4,
		.eval_lo = p->bias + p->file.eval,
		.eval_hi = p->bias + p->file.eval + p->file.eval_size,
		.version = p->hexversion >> 16,
		.tss_first = glibcs[p->glibc].first,
		.tss_second = glibcs[p->glibc].second,
		.tstate_thread_id = lay->ts_thread_id,
		.tstate_frame = lay->ts_frame,
		.cframe_current = lay->cframe_current,
		.frame_code = lay->fr_code,
		.frame_prev = lay->fr_prev,
		.frame_instr = lay->fr_instr,
		.frame_owner = lay->fr_owner,
		.frame_is_entry = lay->fr_is_entry,
		.code_adaptive = lay->co_adaptive,
		.owner_shim = lay->owner_shim,
		.instr_is_ptr = p->minor >= 11,
		.frame_read = lay->fr_read,
	};
}

/* Live: threads found through their keys, frames holding code (racing threads: tried again). */
static int verify_live(struct probe *p)
{
	struct live_check *lc = &p->lc;
	int err = 0;

	for (int attempt = 0; attempt < 3; attempt++) {
		err = live_check(p->pid, &p->lay, p->runtime, &p->out->proc,
				 p->bias + p->file.code_type, lc);
		if (err || !lc->threads || (lc->verified && (lc->code_ok || !lc->code_bad)))
			break;
	}
	if (err)
		return say(p, err, "CPython %s (%s): thread states unreadable (%s)", p->verstr,
			   p->base, strerror(-err));
	if (!lc->threads)
		return say(p, -EAGAIN, "CPython %s (%s): no thread state yet", p->verstr, p->base);
	if (!lc->verified)
		return NOT_YET(
			p,
			"CPython %s (%s), glibc %u.%u: none of its %d thread states is found "
			"through its thread's pthread key: layout not verified",
			p->verstr, p->base, p->gmaj, p->gmin, lc->threads);
	if (!lc->code_ok && lc->code_bad)
		return NOT_YET(
			p,
			"CPython %s (%s): its threads' frames do not hold code objects where "
			"the layout says: not verified",
			p->verstr, p->base);
	return 0;
}

/* The process remembered for gp_python_resolve (in place of an earlier probe's), and said so. */
static int remember(struct probe *p)
{
	struct py_proc *pp = calloc(1, sizeof(*pp));
	int err;

	if (!pp)
		return -ENOMEM;
	pp->lay = p->lay;
	pp->code_type = p->bias + p->file.code_type;
	pp->unicode_type = p->bias + p->file.unicode_type;
	pp->bytes_type = p->bias + p->file.bytes_type;
	gp_python_forget(p->py, p->pid);
	err = gp_u64map_put(&p->py->procs, (__u64)p->pid, pp);
	if (err) {
		free(pp);
		return err;
	}
	return say(p, 0,
		   "CPython %s (%s), glibc %u.%u: Python frames on; thread states found "
		   "through pthread key %u on %d of %d threads%s",
		   p->verstr, p->base, p->gmaj, p->gmin, p->key_words[1], p->lc.verified,
		   p->lc.threads, p->extra);
}

int gp_python_probe(struct gp_python *py, pid_t pid, struct gp_py_probe *out)
{
	struct probe p = { .py = py, .pid = pid, .out = out };
	int err;

	memset(out, 0, sizeof(*out));
	err = gp_maps_read(pid, &p.maps);
	if (err)
		return say(&p, err, "pid %d: maps unreadable (%s)", (int)pid, strerror(-err));
	err = find_interpreter(&p);
	if (!err)
		err = read_version(&p);
	if (!err)
		err = choose_layout(&p);
	if (!err)
		err = read_key(&p);
	if (!err)
		err = check_types(&p);
	if (!err)
		err = check_glibc(&p);
	if (!err) {
		fill_proc(&p);
		err = verify_live(&p);
	}
	if (!err)
		err = remember(&p);
	gp_maps_free(p.maps);
	return err;
}
