/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * python_internal.h — what the files behind python.h share (nobody else):
 * a version's object layout, the state kept per probed process and for the
 * whole, the interpreter's files, and reading the process. python_layout.c
 * finds and verifies the layout (through python_files.c and python_walk.c)
 * and fills a struct py_proc; python_names.c reads code objects through it
 * and caches them there.
 */
#ifndef GP_PYTHON_INTERNAL_H
#define GP_PYTHON_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <linux/types.h>

#include "model/u64map.h"
#include "proc_maps.h"

/*
 * One CPython version's layout: the offsets the BPF walk needs (struct
 * gp_py_proc's source) and those naming a code object needs.
 */
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

struct py_code; /* python_names.c */

/* A probed process: its verified layout, its types' addresses, the code objects named so far. */
struct py_proc {
	struct py_layout lay;
	__u64 code_type, unicode_type, bytes_type;
	struct gp_u64map codes; /* code object address -> struct py_code */
	struct py_code *retired;
};

/* What probing needs of a file, read once per (dev, inode). Symbol values 0: absent. */
struct py_file {
	__u64 dev, ino;
	__u64 vaddr0; /* virtual address of file offset 0 */
	__u64 runtime, runtime_size, version, code_type, unicode_type, bytes_type;
	__u64 eval, eval_size;
};

struct gp_python {
	struct gp_u64map procs; /* pid -> struct py_proc */
	struct py_file *files;
	size_t nfiles, cap;
};

/* Frees pp, its code cache and the names it handed out (python_names.c). */
void py_proc_free(void *pp);

/* python_files.c: what a mapping's file is, by its name */
unsigned py_minor_from_name(const char *path); /* "python3.10" -> 10; 0 when none */
bool py_is_libpython(const char *path);
bool py_is_libc(const char *path);
bool py_is_dynamic_loader(const char *path);
/* The file mapped by m, read once (kept in py->files): NULL + errno when it cannot be read. */
const struct py_file *py_file_get(struct gp_python *py, pid_t pid, const struct gp_map *m);
/* The version of the glibc whose libc.so.6 m maps. 0, -ENOENT (no banner), other -errno. */
int py_glibc_version(pid_t pid, const struct gp_map *m, unsigned *major, unsigned *minor);

/* len bytes of the process at addr. 0, -EFAULT (short or at 0), or process_vm_readv's -errno. */
static inline int py_mem_read(pid_t pid, __u64 addr, void *buf, size_t len)
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

static inline int py_mem_u64(pid_t pid, __u64 addr, __u64 *v)
{
	return py_mem_read(pid, addr, v, sizeof(*v));
}

#endif /* GP_PYTHON_INTERNAL_H */
