/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * python.c — CPython 3.10 to 3.13 processes (see python.h): finding the
 * interpreter and its layout, checking it against the running process,
 * resolving recorded frames to names and lines, and merging them into
 * native stacks.
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
 *
 * The process is read with process_vm_readv; its files through
 * /proc/PID/map_files (or /proc/PID/root), so deleted files and other
 * mount namespaces work.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/param.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gpuprobed/events.h"
#include "array.h"
#include "model/u64map.h"
#include "proc_maps.h"
#include "stacks/python.h"

#define NONE GP_PY_NONE

/* ---- layouts ------------------------------------------------------------------------------- */

struct py_layout {
	unsigned minor;
	__u32 runtime_size;   /* sizeof(_PyRuntimeState): _PyRuntime's st_size */
	__u32 code_basicsize; /* PyCode_Type.tp_basicsize; 3.11+: where co_code_adaptive starts */
	__u32 rt_key_init; /* _PyRuntime: autoTSSkey._is_initialized (int); ._key (u32) follows */
	__u32 rt_interp_head; /* _PyRuntime.interpreters.head */
	__u32 interp_next;    /* PyInterpreterState.next */
	__u32 interp_threads; /* PyInterpreterState threads head */
	__u16 ts_next, ts_thread_id, ts_frame, cframe_current;
	__u16 fr_code, fr_prev, fr_instr, fr_owner, fr_is_entry, fr_read;
	__u8 owner_shim;
	__u16 co_filename, co_name, co_qualname, co_firstlineno, co_linetable, co_adaptive;
	/* a compact str's characters: after a PyASCIIObject, or a PyCompactUnicodeObject */
	__u16 str_ascii_data, str_compact_data;
};

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

/* Every object: ob_type at 8. str: length at 16, state at 32. bytes: ob_size at 16, data at 32. */
#define OB_TYPE	     8
#define STR_LENGTH   16
#define STR_STATE    32
#define STR_COMPACT  0x20u
#define STR_ASCII    0x40u
#define STR_KIND(s)  (((s) >> 2) & 7u)
#define BYTES_SIZE   16
#define BYTES_DATA   32
#define TP_NAME	     24
#define TP_BASICSIZE 32

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

/* ---- reading the process ------------------------------------------------------------------- */

static int mem_read(pid_t pid, __u64 addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (!addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

static int mem_u64(pid_t pid, __u64 addr, __u64 *v)
{
	return mem_read(pid, addr, v, sizeof(*v));
}

/* ---- interpreter files --------------------------------------------------------------------- */

/* What probing needs of a file, read once per (dev, inode). Symbol values 0: absent. */
struct py_file {
	__u64 dev, ino;
	__u64 vaddr0; /* virtual address of file offset 0 */
	__u64 runtime, runtime_size, version, code_type, unicode_type, bytes_type;
	__u64 eval, eval_size;
};

enum { S_RUNTIME, S_VERSION, S_CODE, S_UNICODE, S_BYTES, S_EVAL, S_N };
static const char *const sym_names[S_N] = {
	"_PyRuntime",	  "Py_Version",	  "PyCode_Type",
	"PyUnicode_Type", "PyBytes_Type", "_PyEval_EvalFrameDefault",
};

/*
 * The few symbols needed, in one pass over .dynsym (then .symtab): the
 * project's symbol index (elf_syms.c) holds functions only and indexes all
 * of .symtab, too much to learn that an executable has no _PyRuntime.
 */
static int read_py_file(int fd, struct py_file *f)
{
	GElf_Sym found[S_N] = { 0 };
	Elf_Scn *scn;
	Elf *elf;
	size_t nph, i;
	int err = 0, pass;
	bool have_vaddr0 = false;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph)) {
		err = -ENOEXEC;
		goto out;
	}
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (!have_vaddr0) { /* the first PT_LOAD maps the file's start */
			f->vaddr0 = ph.p_vaddr - ph.p_offset;
			have_vaddr0 = true;
		}
	}
	for (pass = 0; pass < 2; pass++) {
		for (scn = NULL; (scn = elf_nextscn(elf, scn));) {
			GElf_Shdr sh;
			Elf_Data *data;
			size_t n;

			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass ? SHT_SYMTAB : SHT_DYNSYM) || !sh.sh_entsize ||
			    !(data = elf_getdata(scn, NULL)))
				continue;
			n = sh.sh_size / sh.sh_entsize;
			for (i = 0; i < n; i++) {
				GElf_Sym s;
				const char *name;

				if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
				    !s.st_value)
					continue;
				name = elf_strptr(elf, sh.sh_link, s.st_name);
				if (!name || (name[0] != '_' && name[0] != 'P'))
					continue;
				for (int k = 0; k < S_N; k++)
					if (!found[k].st_value && !strcmp(name, sym_names[k]))
						found[k] = s;
			}
		}
		if (found[S_RUNTIME].st_value)
			break;
	}
	if (!have_vaddr0)
		err = -ENOEXEC;
	f->runtime = found[S_RUNTIME].st_value;
	f->runtime_size = found[S_RUNTIME].st_size;
	f->version = found[S_VERSION].st_value;
	f->code_type = found[S_CODE].st_value;
	f->unicode_type = found[S_UNICODE].st_value;
	f->bytes_type = found[S_BYTES].st_value;
	f->eval = found[S_EVAL].st_value;
	f->eval_size = found[S_EVAL].st_size;
out:
	if (elf)
		elf_end(elf);
	return err;
}

/*
 * The file mapped by m, opened: through /proc/PID/map_files (the very file,
 * deleted or in another mount namespace), else /proc/PID/root, else its path
 * if it is still the same inode. An fd, or -errno.
 */
static int open_mapped(pid_t pid, const struct gp_map *m)
{
	char path[PATH_MAX + 64];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, m->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_ino != m->inode) { /* replaced since it was mapped */
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/* ---- per-process state --------------------------------------------------------------------- */

struct py_code {
	__u64 type, filename_p, name_p, qualname_p, linetable_p; /* what identifies the object */
	__s32 firstlineno;
	char *file, *name, *qualname;
	__u8 *table;
	size_t table_len;
	struct py_code *retired; /* replaced entries: their strings stay valid until forget */
};

struct py_proc {
	struct py_layout lay;
	__u64 code_type, unicode_type, bytes_type;
	struct gp_u64map codes; /* code object address -> struct py_code */
	struct py_code *retired;
};

struct gp_python {
	struct gp_u64map procs; /* pid -> struct py_proc */
	struct py_file *files;
	size_t nfiles, cap;
};

struct gp_python *gp_python_new(void)
{
	return calloc(1, sizeof(struct gp_python));
}

static void code_free(void *p)
{
	struct py_code *c = p;

	free(c->file);
	free(c->name);
	free(c->qualname);
	free(c->table);
	free(c);
}

static void proc_free(void *p)
{
	struct py_proc *pp = p;

	gp_u64map_clear(&pp->codes, code_free);
	while (pp->retired) {
		struct py_code *c = pp->retired;

		pp->retired = c->retired;
		code_free(c);
	}
	free(pp);
}

void gp_python_forget(struct gp_python *py, pid_t pid)
{
	struct py_proc *pp = gp_u64map_get(&py->procs, (__u64)pid);

	if (pp) {
		gp_u64map_del(&py->procs, (__u64)pid);
		proc_free(pp);
	}
}

void gp_python_free(struct gp_python *py)
{
	if (!py)
		return;
	gp_u64map_clear(&py->procs, proc_free);
	free(py->files);
	free(py);
}

/* The file mapped by m, read once: NULL + errno when it cannot be read. */
static const struct py_file *file_get(struct gp_python *py, pid_t pid, const struct gp_map *m)
{
	struct py_file f = { .dev = m->dev, .ino = m->inode };
	int fd, err;

	for (size_t i = 0; i < py->nfiles; i++)
		if (py->files[i].dev == m->dev && py->files[i].ino == m->inode)
			return &py->files[i];
	fd = open_mapped(pid, m);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	err = read_py_file(fd, &f);
	close(fd);
	if (err) {
		errno = -err;
		return NULL;
	}
	if (GP_ARRAY_GROW(py->files, py->cap, py->nfiles + 1, 8)) {
		errno = ENOMEM;
		return NULL;
	}
	py->files[py->nfiles] = f;
	return &py->files[py->nfiles++];
}

/* ---- the walk (what the BPF program does) --------------------------------------------------- */

int gp_python_walk(pid_t pid, const struct gp_py_proc *p, __u64 fsbase, __u64 *words, unsigned max,
		   int *status, int *err)
{
	__u64 slot, ts, tid, f;
	__u32 key;
	unsigned n = 0, steps;
	int e;

	*status = GP_PY_OK;
	*err = 0;
	e = mem_read(pid, p->tss_key_addr, &key, sizeof(key));
	if (e)
		goto fail;
	if (key < 32) {
		slot = fsbase + p->tss_first + 16 * key + 8;
	} else {
		__u64 l2;

		e = mem_u64(pid, fsbase + p->tss_second + 8 * (key / 32), &l2);
		if (e)
			goto fail;
		if (!l2)
			goto no_thread;
		slot = l2 + 16 * (key % 32) + 8;
	}
	e = mem_u64(pid, slot, &ts);
	if (e)
		goto fail;
	if (!ts)
		goto no_thread;
	e = mem_u64(pid, ts + p->tstate_thread_id, &tid);
	if (e)
		goto fail;
	if (tid != fsbase)
		goto no_thread;
	e = mem_u64(pid, ts + p->tstate_frame, &f);
	if (!e && f && p->cframe_current != NONE)
		e = mem_u64(pid, f + p->cframe_current, &f);
	if (e)
		goto fail;
	/* shim frames are not counted against max: bound the steps instead */
	for (steps = 0; f && steps < 4 * max + 4; steps++) {
		__u8 fr[256];
		__u64 code, prev, instr;
		__u32 flags = 0;

		if (n == max) {
			*status = GP_PY_DEPTH;
			return (int)n;
		}
		e = mem_read(pid, f, fr, p->frame_read < sizeof(fr) ? p->frame_read : sizeof(fr));
		if (e)
			goto fail;
		memcpy(&prev, fr + p->frame_prev, 8);
		if (p->frame_owner != NONE && fr[p->frame_owner] == p->owner_shim) {
			/* a C-stack shim: the frame before it was the first of its activation */
			if (n)
				words[2 * n - 1] |= (__u64)GP_PYF_ENTRY << 32;
			f = prev;
			continue;
		}
		memcpy(&code, fr + p->frame_code, 8);
		if (p->instr_is_ptr) {
			memcpy(&instr, fr + p->frame_instr, 8);
			instr = (__u32)(instr - (code + p->code_adaptive));
		} else {
			__u32 lasti;

			memcpy(&lasti, fr + p->frame_instr, 4);
			instr = lasti;
		}
		if (p->version == 0x030a || (p->frame_is_entry != NONE && fr[p->frame_is_entry]))
			flags = GP_PYF_ENTRY;
		words[2 * n] = code;
		words[2 * n + 1] = instr | (__u64)flags << 32;
		n++;
		f = prev;
	}
	if (f)
		*status = GP_PY_DEPTH;
	return (int)n;
no_thread:
	*status = GP_PY_NO_THREAD;
	return (int)n;
fail:
	*status = GP_PY_READ;
	*err = e;
	return (int)n;
}

/* ---- probing ------------------------------------------------------------------------------- */

/* The minor version a file's name gives: "libpython3.10.so.1.0", "python3.10"; 0 when none. */
static unsigned minor_from_name(const char *path)
{
	const char *base = strrchr(path, '/'), *s;
	unsigned minor = 0;

	base = base ? base + 1 : path;
	if (!strncmp(base, "libpython3.", 11))
		s = base + 11;
	else if (!strncmp(base, "python3.", 8))
		s = base + 8;
	else
		return 0;
	if (!isdigit((unsigned char)*s))
		return 0;
	while (isdigit((unsigned char)*s) && minor < 1000)
		minor = minor * 10 + (unsigned)(*s++ - '0');
	/* "3.10d", "3.13t": debug and free-threaded builds lay objects out otherwise */
	if (*s && *s != '.')
		return 0;
	return minor;
}

static bool is_libpython(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libpython3", 10) && strstr(base, ".so");
}

static bool is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strcmp(base, "libc.so.6") || (!strncmp(base, "libc-2.", 7) && strstr(base, ".so"));
}

/* glibc's dynamic loader (ld-linux-x86-64.so.2): mapped from exec in a dynamic program. */
static bool is_dynamic_loader(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "ld-linux", 8);
}

/*
 * glibc's version, from the banner its libc.so.6 carries ("... release
 * version 2.36."): gnu_get_libc_version() cannot be called in another
 * process, and the file is what the process runs.
 */
static int glibc_version(pid_t pid, const struct gp_map *m, unsigned *major, unsigned *minor)
{
	static const char tag[] = "release version ";
	struct stat st;
	const char *p, *end;
	void *map;
	int fd, err = -ENOENT;

	fd = open_mapped(pid, m);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || !st.st_size) {
		close(fd);
		return -EIO;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	end = (const char *)map + st.st_size;
	for (p = map; (p = memmem(p, (size_t)(end - p), "GNU C Library", 13)); p += 13) {
		const char *v = memmem(p, (size_t)(end - p) < 200 ? (size_t)(end - p) : 200, tag,
				       sizeof(tag) - 1);

		if (v && sscanf(v + sizeof(tag) - 1, "%u.%u", major, minor) == 2) {
			err = 0;
			break;
		}
	}
	munmap(map, (size_t)st.st_size);
	return err;
}

/* out->line says why; err is code. */
#define CONCLUDE(code, ...)                                          \
	do {                                                         \
		snprintf(out->line, sizeof(out->line), __VA_ARGS__); \
		err = (code);                                        \
		goto out;                                            \
	} while (0)

#define REFUSE(...) CONCLUDE(-ENOTSUP, __VA_ARGS__)
/*
 * Not verified now, but perhaps only not yet: an interpreter between creating a thread state and
 * binding it to its thread's key, say. The caller looks again and refuses with this line only
 * when it stays so (stack_sources.c).
 */
#define NOT_YET(...) CONCLUDE(-EAGAIN, __VA_ARGS__)

/* A type object's tp_name is want. */
static bool type_named(pid_t pid, __u64 type, const char *want)
{
	char name[16] = { 0 };
	__u64 p;

	if (mem_u64(pid, type + TP_NAME, &p) || mem_read(pid, p, name, strlen(want) + 1))
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
	int err = mem_read(pid, runtime, &d, sizeof(d));

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
	err = mem_u64(pid, runtime + lay->rt_interp_head, &interp);
	if (err)
		return err;
	for (int ni = 0; interp && ni < 64; ni++) {
		__u64 ts;

		if (mem_u64(pid, interp + lay->interp_threads, &ts))
			break;
		for (int nt = 0; ts && nt < 4096; nt++) {
			__u64 fs, tcb[3];
			int n, status, werr;

			lc->threads++;
			if (mem_u64(pid, ts + lay->ts_thread_id, &fs) || !fs ||
			    mem_read(pid, fs, tcb, sizeof(tcb)) || tcb[0] != fs || tcb[2] != fs)
				goto next;
			n = gp_python_walk(pid, proc, fs, words, GP_PY_MAX_FRAMES, &status, &werr);
			if (status == GP_PY_NO_THREAD || (status == GP_PY_READ && !n))
				goto next;
			lc->verified++;
			for (int i = 0; i < n; i++) {
				__u64 type;

				if (!mem_u64(pid, words[2 * i] + OB_TYPE, &type) &&
				    type == code_type)
					lc->code_ok++;
				else
					lc->code_bad++;
			}
next:
			if (mem_u64(pid, ts + lay->ts_next, &ts))
				break;
		}
		if (mem_u64(pid, interp + lay->interp_next, &interp))
			break;
	}
	return 0;
}

int gp_python_probe(struct gp_python *py, pid_t pid, struct gp_py_probe *out)
{
	struct gp_maps *maps = NULL;
	const struct gp_map *where = NULL, *libc = NULL;
	const struct py_file *cand;
	struct py_file file = { 0 }, *f = &file;
	struct py_layout lay;
	struct live_check lc;
	struct py_proc *pp;
	struct gp_py_proc *proc = &out->proc;
	char exe[PATH_MAX], link[64], verstr[32], extra[96] = "";
	__u64 bias, runtime, typehdr[6];
	unsigned minor, gmaj = 0, gmin = 0;
	__u32 hexversion, key_words[2];
	const char *base;
	ssize_t n;
	int err, differ = 0;
	size_t i;

	memset(out, 0, sizeof(*out));
	err = gp_maps_read(pid, &maps);
	if (err) {
		snprintf(out->line, sizeof(out->line), "pid %d: maps unreadable (%s)", (int)pid,
			 strerror(-err));
		return err;
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';

	/* libpython first (an executable that embeds one beside it is rare), then the executable */
	for (int pass = 0; pass < 2 && !where; pass++) {
		for (i = 0; i < maps->n; i++) {
			const struct gp_map *m = &maps->v[i];

			if (!m->inode || m->offset ||
			    (pass == 0 ? !is_libpython(m->path)
				       : !(exe[0] && !strcmp(m->path, exe))))
				continue;
			cand = file_get(py, pid, m);
			if (cand && cand->runtime) {
				where = m;
				file = *cand; /* a later file_get may move the cache */
				break;
			}
		}
	}
	for (i = 0; i < maps->n && !libc; i++)
		if (maps->v[i].inode && is_libc(maps->v[i].path))
			libc = &maps->v[i];
	if (!where) {
		snprintf(out->line, sizeof(out->line),
			 "pid %d: no CPython (no _PyRuntime in libpython3.X.so or the executable)",
			 (int)pid);
		err = -ENOENT;
		goto out;
	}
	snprintf(out->file, sizeof(out->file), "%s", where->path);
	/*
	 * Caught at its exec, a dynamic program has only itself and the loader mapped: libc comes
	 * later, and the interpreter's pointers (its types' names) are relocated then. Ask again.
	 */
	for (i = 0; i < maps->n && !libc; i++)
		if (maps->v[i].inode && is_dynamic_loader(maps->v[i].path)) {
			snprintf(out->line, sizeof(out->line),
				 "pid %d: the dynamic loader has not mapped libc.so.6 yet", (int)pid);
			err = -EAGAIN;
			goto out;
		}
	base = strrchr(where->path, '/');
	base = base ? base + 1 : where->path;
	bias = where->start - f->vaddr0;
	runtime = bias + f->runtime;

	/* the version: Py_Version (3.11+) as the process holds it; 3.10's file name */
	if (f->version) {
		__u64 v;

		err = mem_u64(pid, bias + f->version, &v);
		if (err) {
			snprintf(out->line, sizeof(out->line),
				 "CPython (%s): Py_Version unreadable (%s)", base, strerror(-err));
			goto out;
		}
		hexversion = (__u32)v;
		minor = (hexversion >> 16) & 0xff;
		if (hexversion >> 24 != 3)
			REFUSE("CPython (%s): Py_Version 0x%llx is not a 3.x version", base,
			       (unsigned long long)v);
		snprintf(verstr, sizeof(verstr), "3.%u.%u", minor, (hexversion >> 8) & 0xff);
	} else {
		minor = minor_from_name(where->path);
		if (!minor)
			REFUSE("CPython (%s): no Py_Version, and the file's name "
			       "does not give the version",
			       base);
		if (minor >= 11)
			REFUSE("CPython (%s): named 3.%u but has no Py_Version (3.11+ all do)",
			       base, minor);
		hexversion = 0x03000000u | minor << 16;
		snprintf(verstr, sizeof(verstr), "3.%u", minor);
	}
	out->hexversion = hexversion;
	if (minor < PY_MINOR_FIRST || minor > PY_MINOR_LAST)
		REFUSE("CPython %s (%s): not supported (Python frames: 3.10 to 3.13)", verstr,
		       base);
	if (!f->code_type || !f->unicode_type || !f->bytes_type || !f->eval || !f->eval_size)
		REFUSE("CPython %s (%s): PyCode_Type, PyUnicode_Type, PyBytes_Type or "
		       "_PyEval_EvalFrameDefault missing from its symbols",
		       verstr, base);

	/* the layout */
	if (minor == 13) {
		char why[160];

		err = layout_from_debug_offsets(pid, runtime, f, hexversion, &lay, &differ, why,
						sizeof(why));
		if (err == -ENOTSUP)
			REFUSE("CPython %s (%s): %s", verstr, base, why);
		if (err) {
			snprintf(out->line, sizeof(out->line), "CPython %s (%s): %s", verstr, base,
				 why);
			goto out;
		}
		snprintf(extra, sizeof(extra),
			 ", layout from _Py_DebugOffsets (%d field%s differ%s from 3.13.0's)",
			 differ, differ == 1 ? "" : "s", differ == 1 ? "s" : "");
	} else {
		lay = layouts[minor - PY_MINOR_FIRST];
		if (f->runtime_size != lay.runtime_size)
			REFUSE("CPython %s (%s): _PyRuntime is %llu bytes, the 3.%u table's %u: "
			       "a layout not verified",
			       verstr, base, (unsigned long long)f->runtime_size, minor,
			       lay.runtime_size);
	}
	/*
	 * The key: the interpreter creates it at start; before that, nothing to walk. Asked before
	 * anything that holds a pointer: until the dynamic loader has relocated the interpreter's file
	 * (R_X86_64_RELATIVE), its type objects' tp_name read 0 or the file's addend, and a process
	 * caught at its exec on a busy machine can be looked at then. The key is set by the
	 * interpreter's own code, which runs only after the relocation.
	 */
	err = mem_read(pid, runtime + lay.rt_key_init, key_words, sizeof(key_words));
	if (err) {
		snprintf(out->line, sizeof(out->line),
			 "CPython %s (%s): _PyRuntime unreadable (%s)", verstr, base,
			 strerror(-err));
		goto out;
	}
	if (key_words[0] > 1)
		REFUSE("CPython %s (%s): the thread-state key's initialized flag reads %u: "
		       "layout not verified",
		       verstr, base, key_words[0]);
	if (!key_words[0]) {
		snprintf(out->line, sizeof(out->line), "CPython %s (%s): not initialized yet",
			 verstr, base);
		err = -EAGAIN;
		goto out;
	}
	if (key_words[1] >= 1024) /* PTHREAD_KEYS_MAX */
		REFUSE("CPython %s (%s): thread-state key %u is not a pthread key", verstr, base,
		       key_words[1]);

	/* the types are what their names say; PyCode_Type's tp_basicsize is the layout's */
	err = mem_read(pid, bias + f->code_type, typehdr, sizeof(typehdr));
	if (err) {
		snprintf(out->line, sizeof(out->line),
			 "CPython %s (%s): PyCode_Type unreadable (%s)", verstr, base,
			 strerror(-err));
		goto out;
	}
	if (!type_named(pid, bias + f->code_type, "code") ||
	    !type_named(pid, bias + f->unicode_type, "str") ||
	    !type_named(pid, bias + f->bytes_type, "bytes"))
		REFUSE("CPython %s (%s): PyCode_Type, PyUnicode_Type or PyBytes_Type "
		       "not named so in the process",
		       verstr, base);
	if (typehdr[TP_BASICSIZE / 8] != lay.code_basicsize)
		REFUSE("CPython %s (%s): code objects are %llu bytes, the layout's %u: "
		       "not verified",
		       verstr, base, (unsigned long long)typehdr[TP_BASICSIZE / 8],
		       lay.code_basicsize);

	/* glibc: where a thread's pthread keys live */
	if (!libc)
		REFUSE("CPython %s (%s): no glibc libc.so.6 mapped (static, or another C "
		       "library): thread states are found through glibc's pthread keys",
		       verstr, base);
	err = glibc_version(pid, libc, &gmaj, &gmin);
	if (err)
		REFUSE("CPython %s (%s): the version of %s is not readable (%s)", verstr, base,
		       libc->path, strerror(-err));
	for (i = 0; i < sizeof(glibcs) / sizeof(glibcs[0]); i++)
		if (glibcs[i].major == gmaj && glibcs[i].minor == gmin)
			break;
	if (i == sizeof(glibcs) / sizeof(glibcs[0]))
		REFUSE("CPython %s (%s): glibc %u.%u: where its threads keep pthread keys "
		       "is not known (known: 2.36)",
		       verstr, base, gmaj, gmin);

	out->tss_key = key_words[1];
	*proc = (struct gp_py_proc){
		.tss_key_addr = runtime + lay.rt_key_init + 4,
		.eval_lo = bias + f->eval,
		.eval_hi = bias + f->eval + f->eval_size,
		.version = hexversion >> 16,
		.tss_first = glibcs[i].first,
		.tss_second = glibcs[i].second,
		.tstate_thread_id = lay.ts_thread_id,
		.tstate_frame = lay.ts_frame,
		.cframe_current = lay.cframe_current,
		.frame_code = lay.fr_code,
		.frame_prev = lay.fr_prev,
		.frame_instr = lay.fr_instr,
		.frame_owner = lay.fr_owner,
		.frame_is_entry = lay.fr_is_entry,
		.code_adaptive = lay.co_adaptive,
		.owner_shim = lay.owner_shim,
		.instr_is_ptr = minor >= 11,
		.frame_read = lay.fr_read,
	};

	/* live: threads found through their keys, frames holding code (racing threads: retry) */
	for (int attempt = 0; attempt < 3; attempt++) {
		err = live_check(pid, &lay, runtime, proc, bias + f->code_type, &lc);
		if (err || !lc.threads || (lc.verified && (lc.code_ok || !lc.code_bad)))
			break;
	}
	if (err) {
		snprintf(out->line, sizeof(out->line),
			 "CPython %s (%s): thread states unreadable (%s)", verstr, base,
			 strerror(-err));
		goto out;
	}
	if (!lc.threads) {
		snprintf(out->line, sizeof(out->line), "CPython %s (%s): no thread state yet",
			 verstr, base);
		err = -EAGAIN;
		goto out;
	}
	if (!lc.verified)
		NOT_YET("CPython %s (%s), glibc %u.%u: none of its %d thread states is found "
		       "through its thread's pthread key: layout not verified",
		       verstr, base, gmaj, gmin, lc.threads);
	if (!lc.code_ok && lc.code_bad)
		NOT_YET("CPython %s (%s): its threads' frames do not hold code objects where "
		       "the layout says: not verified",
		       verstr, base);

	pp = calloc(1, sizeof(*pp));
	if (!pp) {
		err = -ENOMEM;
		goto out;
	}
	pp->lay = lay;
	pp->code_type = bias + f->code_type;
	pp->unicode_type = bias + f->unicode_type;
	pp->bytes_type = bias + f->bytes_type;
	gp_python_forget(py, pid);
	err = gp_u64map_put(&py->procs, (__u64)pid, pp);
	if (err) {
		free(pp);
		goto out;
	}
	snprintf(out->line, sizeof(out->line),
		 "CPython %s (%s), glibc %u.%u: Python frames on; thread states found "
		 "through pthread key %u on %d of %d threads%s",
		 verstr, base, gmaj, gmin, key_words[1], lc.verified, lc.threads, extra);
out:
	gp_maps_free(maps);
	return err;
}

/* ---- resolving ----------------------------------------------------------------------------- */

static void put_utf8(char *buf, size_t *o, __u32 c)
{
	if ((c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
		c = 0xfffd; /* a lone surrogate or no code point: U+FFFD */
	if (c < 0x80) {
		buf[(*o)++] = (char)c;
	} else if (c < 0x800) {
		buf[(*o)++] = (char)(0xc0 | c >> 6);
		buf[(*o)++] = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		buf[(*o)++] = (char)(0xe0 | c >> 12);
		buf[(*o)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		buf[(*o)++] = (char)(0x80 | (c & 0x3f));
	} else {
		buf[(*o)++] = (char)(0xf0 | c >> 18);
		buf[(*o)++] = (char)(0x80 | ((c >> 12) & 0x3f));
		buf[(*o)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		buf[(*o)++] = (char)(0x80 | (c & 0x3f));
	}
}

#define STR_MAX 4096 /* code points kept of a name or file */

/* A str object of the process as UTF-8 (malloc'ed). -EINVAL when it is not a compact str. */
static int read_str(pid_t pid, const struct py_proc *pp, __u64 addr, char **out)
{
	__u8 hdr[40], *data;
	__u64 type, len;
	__u32 state, kind;
	size_t o = 0;
	char *s;
	int err;

	err = mem_read(pid, addr, hdr, sizeof(hdr));
	if (err)
		return err;
	memcpy(&type, hdr + OB_TYPE, 8);
	memcpy(&len, hdr + STR_LENGTH, 8);
	memcpy(&state, hdr + STR_STATE, 4);
	kind = STR_KIND(state);
	/* names of code objects are always compact (made by the compiler or unmarshal) */
	if (type != pp->unicode_type || !(state & STR_COMPACT) ||
	    (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;
	if (len > STR_MAX)
		len = STR_MAX;
	data = malloc(len * kind + 1);
	s = malloc(len * 4 + 1);
	if (!data || !s) {
		err = -ENOMEM;
		goto fail;
	}
	err = mem_read(
		pid,
		addr + ((state & STR_ASCII) ? pp->lay.str_ascii_data : pp->lay.str_compact_data),
		data, len * kind);
	if (len && err)
		goto fail;
	for (__u64 i = 0; i < len; i++) {
		__u32 c;

		if (kind == 1) {
			c = data[i];
		} else if (kind == 2) {
			__u16 u;

			memcpy(&u, data + 2 * i, 2);
			c = u;
		} else {
			memcpy(&c, data + 4 * i, 4);
		}
		put_utf8(s, &o, c);
	}
	s[o] = '\0';
	free(data);
	*out = s;
	return 0;
fail:
	free(data);
	free(s);
	return err;
}

#define TABLE_MAX (1u << 20)

static int read_bytes(pid_t pid, const struct py_proc *pp, __u64 addr, __u8 **out, size_t *len)
{
	__u64 hdr[4];
	__u8 *b;
	int err = mem_read(pid, addr, hdr, sizeof(hdr));

	if (err)
		return err;
	if (hdr[OB_TYPE / 8] != pp->bytes_type || hdr[BYTES_SIZE / 8] > TABLE_MAX)
		return -EINVAL;
	b = malloc(hdr[BYTES_SIZE / 8] + 1);
	if (!b)
		return -ENOMEM;
	err = mem_read(pid, addr + BYTES_DATA, b, hdr[BYTES_SIZE / 8]);
	if (err && hdr[BYTES_SIZE / 8]) {
		free(b);
		return err;
	}
	*out = b;
	*len = hdr[BYTES_SIZE / 8];
	return 0;
}

/* The fields of the code object at addr that identify it. */
static int read_code_ids(pid_t pid, const struct py_proc *pp, __u64 addr, struct py_code *c)
{
	const struct py_layout *l = &pp->lay;
	__u8 hdr[256];
	size_t need = (size_t)l->co_linetable + 8;
	int err;

	need = MAX(need, (size_t)l->co_filename + 8);
	need = MAX(need, (size_t)l->co_name + 8);
	if (l->co_qualname != NONE)
		need = MAX(need, (size_t)l->co_qualname + 8);
	need = MAX(need, (size_t)l->co_firstlineno + 4);
	if (need > sizeof(hdr))
		return -EINVAL;
	err = mem_read(pid, addr, hdr, need);
	if (err)
		return err;
	memcpy(&c->type, hdr + OB_TYPE, 8);
	memcpy(&c->filename_p, hdr + l->co_filename, 8);
	memcpy(&c->name_p, hdr + l->co_name, 8);
	if (l->co_qualname != NONE)
		memcpy(&c->qualname_p, hdr + l->co_qualname, 8);
	else
		c->qualname_p = c->name_p;
	memcpy(&c->linetable_p, hdr + l->co_linetable, 8);
	memcpy(&c->firstlineno, hdr + l->co_firstlineno, 4);
	return 0;
}

static bool same_code(const struct py_code *a, const struct py_code *b)
{
	return a->type == b->type && a->filename_p == b->filename_p && a->name_p == b->name_p &&
	       a->qualname_p == b->qualname_p && a->linetable_p == b->linetable_p &&
	       a->firstlineno == b->firstlineno;
}

static int read_code(pid_t pid, const struct py_proc *pp, const struct py_code *ids,
		     struct py_code **out)
{
	struct py_code *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	*c = *ids;
	err = read_str(pid, pp, c->filename_p, &c->file);
	if (!err)
		err = read_str(pid, pp, c->name_p, &c->name);
	if (!err)
		err = read_str(pid, pp, c->qualname_p, &c->qualname);
	if (!err)
		err = read_bytes(pid, pp, c->linetable_p, &c->table, &c->table_len);
	if (err) {
		code_free(c);
		return err;
	}
	*out = c;
	return 0;
}

int gp_python_resolve(struct gp_python *py, pid_t pid, __u64 code, __u64 word,
		      struct gp_py_sym *out)
{
	struct py_proc *pp = gp_u64map_get(&py->procs, (__u64)pid);
	struct py_code *c, ids;
	long off;
	int err, line;

	if (!pp)
		return -ESRCH;
	c = gp_u64map_get(&pp->codes, code);
	err = read_code_ids(pid, pp, code, &ids);
	if (err && !c)
		return err;
	if (!err && ids.type != pp->code_type && !c)
		return -EINVAL;
	/*
	 * What was cached when the memory is unreadable now (the process has
	 * exited) or no longer a code object (freed since): that is what ran there.
	 */
	if (!err && ids.type == pp->code_type && (!c || !same_code(c, &ids))) {
		struct py_code *fresh;

		err = read_code(pid, pp, &ids, &fresh);
		if (err)
			return err;
		err = gp_u64map_put(&pp->codes, code, fresh);
		if (err) {
			code_free(fresh);
			return err;
		}
		if (c) { /* the address reused: names handed out before stay valid */
			c->retired = pp->retired;
			pp->retired = c;
		}
		c = fresh;
	}
	/* 3.10 records f_lasti in code units; 3.11+ a byte offset */
	off = pp->lay.minor == 10 ? 2L * (__s32)GP_PYF_INSTR(word)
				  : (long)(__s32)GP_PYF_INSTR(word);
	if (gp_py_addr2line(c->table, c->table_len, c->firstlineno, off, pp->lay.minor, &line))
		line = 0;
	*out = (struct gp_py_sym){
		.qualname = c->qualname,
		.name = c->name,
		.file = c->file,
		.line = line,
		.firstlineno = c->firstlineno,
	};
	return 0;
}

void gp_python_label(const struct gp_py_sym *s, char *buf, size_t len)
{
	const char *base = strrchr(s->file, '/');

	base = base ? base + 1 : s->file;
	if (s->line > 0)
		snprintf(buf, len, "%s (%s:%d)", s->qualname, base, s->line);
	else
		snprintf(buf, len, "%s (%s)", s->qualname, base);
}

/* ---- line tables (Objects/lnotab_notes.txt of 3.10, Objects/locations.md of 3.11+) ---------- */

static unsigned varint(const __u8 *t, size_t len, size_t *i)
{
	unsigned v = 0, shift = 0;
	__u8 b;

	do {
		if (*i >= len)
			return v;
		b = t[(*i)++];
		if (shift < 32)
			v |= (unsigned)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

int gp_py_addr2line(const __u8 *t, size_t len, int firstlineno, long off, unsigned minor, int *line)
{
	long end = 0;
	int cur = firstlineno;
	size_t i = 0;

	if (off < 0) {
		*line = firstlineno;
		return 0;
	}
	if (minor == 10) {
		/* (sdelta u8, ldelta s8) pairs over bytes of bytecode; ldelta -128: no line */
		for (; i + 1 < len; i += 2) {
			long start = end;
			int ld = (__s8)t[i + 1];

			end += t[i];
			if (ld != -128)
				cur += ld;
			if (off >= start && off < end) {
				if (ld == -128)
					return -ENOENT;
				*line = cur;
				return 0;
			}
		}
		return -ENOENT;
	}
	/* entries: first byte 1cccclll (code, length - 1 in code units), then the code's varints */
	while (i < len) {
		__u8 first = t[i];
		unsigned code = (first >> 3) & 15;
		long start = end;
		bool has_line = true;

		end += ((first & 7) + 1) * 2;
		i++;
		if (code == 15) {
			has_line = false;
		} else if (code == 13 || code == 14) {
			unsigned v = varint(t, len, &i);

			cur += (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
		} else if (code >= 10) {
			cur += (int)code - 10;
		}
		while (i < len && !(t[i] & 128)) /* the rest of the entry: columns */
			i++;
		if (off >= start && off < end) {
			if (!has_line)
				return -ENOENT;
			*line = cur;
			return 0;
		}
	}
	return -ENOENT;
}
