/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stack_sources.h — what the kernel's stack walk (bpf/unwind.bpf.h) reads
 * of each traced process, kept current while it lives: its unwind tables
 * (stacks/unwind_maps.h: published for the mappings it has, again after it maps
 * new code or execs, taken back at its exit) and where its CPython
 * interpreter keeps each thread's frames (stacks/python.h, the py_procs
 * map; looked for again until the interpreter is up).
 *
 * Tables are built on a thread of their own: reading a large library's
 * call-frame information takes up to a few hundred milliseconds, and the
 * consumer of the ring buffer must never wait for it. A process the kernel
 * holds (it exec'd, or mapped a CUDA library: before its first traced call)
 * is continued by that thread once its tables are published, so its first
 * stacks are whole; a running process admitted from userspace is published
 * before its calls are traced. Code mapped later (a dlopen) is published
 * within milliseconds, not waited for: until then a walk through it follows
 * frame pointers (stacks that end short say why).
 */
#ifndef GP_STACK_SOURCES_H
#define GP_STACK_SOURCES_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#include "stacks/unwind_maps.h"
#include "model/model.h"

struct gp_python;
struct gp_stack_sources;

/*
 * um: the unwind maps (NULL: no tables, frame pointers only); py: the
 * Python locator (NULL: no Python frames), py_procs_fd its map. The model
 * hears what was found of each Python process. NULL + errno on failure.
 */
struct gp_stack_sources *gp_stack_sources_new(const struct gp_unwind_maps *um, struct gp_python *py,
					      int py_procs_fd, struct gp_model *model);
/* Stops the builder thread (a table being built is finished first). NULL is a no-op. */
void gp_stack_sources_free(struct gp_stack_sources *ss);

enum gp_ss_when {
	GP_SS_LATER, /* published soon (a fork: its parent's files, built already) */
	GP_SS_BEFORE_RETURN, /* published before this returns (a running process, before its calls are traced) */
	GP_SS_THEN_CONTINUE, /* a held process: published, then sent SIGCONT by the builder */
};

#define GP_SS_NEW \
	(1u << 0) /* traced from now on (admitted, forked, exec'd): its interpreter looked for */
#define GP_SS_EXEC (1u << 1) /* a new image: what was found of the old one goes */

/*
 * pid's mappings published (again), when said; flags GP_SS_*. With
 * GP_SS_THEN_CONTINUE, returns true when the builder took the hold over (it
 * continues pid); false: the caller continues it (no tables here).
 */
bool gp_stack_sources_add(struct gp_stack_sources *ss, pid_t pid, unsigned flags,
			  enum gp_ss_when when);
/* Tracing stops: every process held for its tables is continued now, nothing more is published. */
void gp_stack_sources_stop(struct gp_stack_sources *ss);
/*
 * How a process held for its tables is continued (before the first add): the
 * holds' registry (src/processes/holds.c) forgets the stops it ends. None: SIGCONT.
 */
typedef void (*gp_ss_continue_fn)(void *ctx, pid_t pid);
void gp_stack_sources_continue_by(struct gp_stack_sources *ss, gp_ss_continue_fn fn, void *ctx);
/*
 * pid maps new code (a dlopen): its tables are published again, a little after
 * the mmap's entry (returned false) and at once after its return (true: only
 * then is the mapping surely in /proc/PID/maps; the kernel stopped walking by
 * what was published in between).
 */
void gp_stack_sources_code_mapped(struct gp_stack_sources *ss, pid_t pid, bool returned);
/* pid exited: its tables and interpreter entry go now, its Python names after the next settle. */
void gp_stack_sources_exited(struct gp_stack_sources *ss, pid_t pid);
/*
 * After each drain of the ring (the records of processes that exited
 * before it are read): code mapped since the last one is published, the
 * interpreters not up yet are looked for again, the Python names of
 * exited processes are forgotten.
 */
void gp_stack_sources_settle(struct gp_stack_sources *ss);

/* The unwind tables' state for the report; false when there are none. */
bool gp_stack_sources_summary(struct gp_stack_sources *ss, struct gp_unwind_summary *out);

#endif
