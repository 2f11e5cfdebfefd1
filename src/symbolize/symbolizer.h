/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * symbolizer.h — addresses of traced processes to functions and kernel names.
 * Keeps a /proc/PID/maps snapshot per process (taken at attach, refreshed
 * when an address falls outside it while the process lives) and one ELF
 * symbol index per file (dev, inode), read lazily through
 * /proc/PID/map_files so deleted files and other mount namespaces work.
 */
#ifndef GP_SYMBOLIZER_H
#define GP_SYMBOLIZER_H

#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "symbolize/elf_syms.h"
#include "model/model.h"
#include "proc_maps.h"

struct gp_symbolizer;

struct gp_sym_result {
	const char *file;   /* mapped path */
	const char *symbol; /* raw (mangled) function name, NULL if unknown */
	__u64 sym_offset;   /* addr - symbol start */
	__u64 file_offset;  /* addr's offset in the file */
};

struct gp_symbolizer *gp_symbolizer_new(void);
void gp_symbolizer_free(struct gp_symbolizer *s);

/*
 * Snapshot (or re-snapshot) pid's maps. 0 or -errno; -ESRCH when the process
 * is gone, or exiting (its maps read empty): the previous snapshot stays.
 */
int gp_symbolizer_snapshot(struct gp_symbolizer *s, pid_t pid);
/* child (a fork of parent) maps what parent did: a copy of parent's snapshot. 0 or -errno. */
int gp_symbolizer_inherit(struct gp_symbolizer *s, pid_t parent, pid_t child);

/* fn(ctx, pid, maps) after each snapshot is taken (the capture records them). */
void gp_symbolizer_on_snapshot(struct gp_symbolizer *s,
			       void (*fn)(void *ctx, pid_t pid, const struct gp_maps *maps),
			       void *ctx);

/* The latest snapshot of pid, or NULL. */
const struct gp_maps *gp_symbolizer_maps(struct gp_symbolizer *s, pid_t pid);

/*
 * The symbol index of the file mapped by m in pid (cached per dev/inode).
 * NULL with errno on failure.
 */
const struct gp_elf_syms *gp_symbolizer_elf(struct gp_symbolizer *s, pid_t pid,
					    const struct gp_map *m);

/*
 * The symbol index of the file at path (cached per dev/inode/mtime: a file
 * rewritten in place is read again). NULL with errno on failure.
 */
const struct gp_elf_syms *gp_symbolizer_elf_file(struct gp_symbolizer *s, const char *path);

/* Symbolize addr in pid. 0, or -ENOENT (unmapped / anonymous / no symbol). */
int gp_symbolizer_lookup(struct gp_symbolizer *s, pid_t pid, __u64 addr, struct gp_sym_result *r);

/* How many callers up a launch's stack an nvcc stub is looked for. */
#define GP_STUB_FRAMES 3

/*
 * gp_resolver.kernel_name (model.h): the kernel launched from ret_addr with
 * first argument func, tried in this order: ret_addr inside an nvcc launch
 * stub (__device_stub__<kernel>); func the address of a function (the host
 * function launched directly, older nvcc or hand-written launches); one of
 * the first GP_STUB_FRAMES callers in stack (may be NULL) inside a stub (nvcc
 * 13's launches go through a helper the stub calls); func an nvcc 13 kernel
 * handle, found in the stubs' cached __handle statics read from the process.
 * ctx is a struct gp_symbolizer.
 */
int gp_symbolizer_kernel_name(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack,
			      unsigned nstack, char *name, size_t name_len, char *mangled,
			      size_t mangled_len);

/*
 * gp_resolver.stack_seen: a new distinct stack of tgid. While the process
 * lives, its maps are read again when the stack names an address outside
 * the snapshot (a library dlopen'ed since), and its perf map
 * (/tmp/perf-PID.map) when an address lies in anonymous executable memory
 * (JIT code). A fresh snapshot that still misses an address (a broken frame
 * chain) holds the next one back 20 ms; the perf map is read at most every 20 ms.
 */
void gp_symbolizer_stack_seen(void *ctx, __u32 tgid, const __u64 *ips, unsigned n);

/*
 * gp_resolver.symbolize: addr of tgid through the maps snapshot to its file
 * (ELF .symtab/.dynsym, build-id) or, in anonymous memory, the perf map.
 * 0 when something is known (out->file or out->function set), else -ENOENT.
 */
int gp_symbolizer_symbolize(void *ctx, __u32 tgid, __u64 addr, struct gp_frame_sym *out);

struct gp_python;
/* Python frames are named through py (stacks/python.h; NULL: not named). */
void gp_symbolizer_set_python(struct gp_symbolizer *s, struct gp_python *py);
/*
 * gp_resolver.py_frame: a recorded Python frame of tgid through the Python
 * locator (its code object read from the live process, or its cache).
 * 0, or -errno when it cannot be named.
 */
int gp_symbolizer_py_frame(void *ctx, __u32 tgid, __u64 code, __u64 word,
			   struct gp_py_frame_sym *out);

/*
 * From the symbol of an nvcc launch stub ("_Z32__device_stub__Z12plain_kernelPfPf",
 * "_ZL37__device_stub__Z11gemm_kernelIfEvPT_iPfi") the kernel's mangled name
 * ("_Z12plain_kernelPf"). 0, or -ENOENT when sym is not a stub.
 */
int gp_stub_kernel_mangled(const char *sym, char *out, size_t len);

/* Demangle a C++ name into out (a copy of the input when it is not mangled). */
void gp_demangle(const char *mangled, char *out, size_t len);
/* The same without the parameter list: "ml::scale<float>". */
void gp_demangle_short(const char *mangled, char *out, size_t len);

#endif
