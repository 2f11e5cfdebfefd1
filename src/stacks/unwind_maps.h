/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_maps.h — the session's owner of the unwind maps the BPF walk reads
 * (include/gpuprobed/unwind.h): per traced process its executable mappings
 * (uw_procs, uw_maps), per file its table (uw_files) in the pool of rows
 * (uw_rows, mmap'ed). Tables are built once per file (unwind_table.c),
 * found again by (device, inode) or build-id, shared by every process that
 * maps the file, and kept in the pool after their last process exits until
 * the room is needed (least recently used first).
 *
 * Order of publication, so that a walk running meanwhile never follows
 * half-written data: a file's rows, then its uw_files entry; a process's
 * mappings, then its uw_procs entry (a changed process gets a fresh slot
 * when one is free, the old one reused last). Taking back: the uw_procs
 * entry, then the slot; a table's uw_files entry, then its rows.
 *
 * Bounds: GP_UW_MAX_PROCS processes, GP_UW_MAX_MAPS mappings each (beyond:
 * left out, counted — the walk stops there with GP_STOP_NO_MAPPING),
 * GP_UW_MAX_FILES tables, the pool's rows; userspace keeps a few hundred
 * bytes per file (at most GP_UNWIND_FILES_KEPT files known). A file whose
 * table cannot be had is published as GP_UW_FILE_NONE (the walk follows
 * frame pointers there), counted by cause.
 *
 * Behind it: unwind_maps.c (the processes' mappings, the life of struct
 * gp_unwind), unwind_files.c (the files' tables in the pool);
 * unwind_maps_internal.h between them.
 */
#ifndef GP_ATTACH_UNWIND_H
#define GP_ATTACH_UNWIND_H

#include <sys/types.h>
#include <linux/types.h>

#include "gpuprobed/unwind.h"

/* Files known at once (tables or not): beyond, unused ones are forgotten. */
#define GP_UNWIND_FILES_KEPT (2 * GP_UW_MAX_FILES)

/* The maps, from the loaded BPF object. */
struct gp_unwind_maps {
	int rows_fd;  /* uw_rows: BPF_F_MMAPABLE ARRAY of struct gp_uw_row */
	__u32 nrows;  /* its max_entries (bpf_map__set_max_entries before the load) */
	int files_fd; /* uw_files */
	int procs_fd; /* uw_procs */
	int maps_fd;  /* uw_maps */
};

/* Why a file mapped executable has no table (gp_unwind_stats.fail). */
enum gp_unwind_fail {
	GP_UWF_OPEN = 0,   /* the mapped file could not be opened, or was replaced */
	GP_UWF_NOT_ELF,	   /* not a 64-bit x86-64 ELF file */
	GP_UWF_NO_CFI,	   /* no .eh_frame or .debug_frame for its code */
	GP_UWF_TOO_BIG,	   /* more rows than one table may hold (GP_UW_ROW_STEPS) */
	GP_UWF_POOL_FULL,  /* its rows did not fit in the pool beside the tables in use */
	GP_UWF_FILES_FULL, /* GP_UW_MAX_FILES tables in use */
	GP_UWF_NO_SEGMENT, /* the mapping's offset is in no PT_LOAD of the file */
	GP_UWF_OTHER,	   /* memory, I/O, a map update */
	GP_UWF_MAX,
};

struct gp_unwind_stats {
	__u64 procs;	  /* processes with mappings published now */
	__u64 procs_max;  /* the most at once */
	__u64 procs_full; /* refused: GP_UW_MAX_PROCS at once */
	__u64 updates;	  /* mapping arrays published (first ones and changes) */
	__u64 in_place;	  /* of which rewritten in place (no free slot for a fresh one) */
	__u64 maps;	  /* mappings published now, all processes */
	__u64 maps_none;  /* of which without a table (anonymous, [vdso], files without one) */
	__u64 maps_over; /* mappings left out: over GP_UW_MAX_MAPS in a process (counted per update) */
	__u64 files;	 /* tables in the pool now */
	__u64 files_in_use;   /* of which mapped by a process */
	__u64 files_built;    /* tables built (a whole file read) */
	__u64 files_reused;   /* a process's file found built already (same inode or build-id) */
	__u64 files_evicted;  /* unused tables dropped from the pool to make room */
	__u64 rows;	      /* rows in the pool now */
	__u64 rows_in_use;    /* of which in tables mapped by a process */
	__u64 rows_max;	      /* the most in the pool at once */
	__u64 pool_rows;      /* the pool's size */
	__u64 build_ns;	      /* building tables, in all */
	__u64 build_ns_max;   /* the longest build */
	__u64 build_rows_max; /* the largest table built, rows */
	__u64 fail
		[GP_UWF_MAX]; /* tables not had, by cause: per build, per open, per mapping (no segment) */
	char build_max_path[128]; /* the file of the longest build */
};

struct gp_unwind;

/*
 * Over the maps of m (mmaps uw_rows; the fds stay the caller's). NULL and
 * errno on failure.
 */
struct gp_unwind *gp_unwind_new(const struct gp_unwind_maps *m);
/* Unmaps the pool; the maps' contents stay as they are. NULL is a no-op. */
void gp_unwind_free(struct gp_unwind *u);

/*
 * Publishes pid's executable mappings, building the tables of files not
 * seen yet; again after the process mapped new code (a changed mapping set
 * is published whole; an unchanged one costs a read of /proc/PID/maps).
 * 0, -ESRCH (gone), -ENOSPC (GP_UW_MAX_PROCS processes published),
 * -ENOMEM, or a map update's error.
 */
int gp_unwind_process(struct gp_unwind *u, pid_t pid);

/* pid exited: its mappings taken back, its files' tables unused by it. 0 or -ENOENT. */
int gp_unwind_forget(struct gp_unwind *u, pid_t pid);

void gp_unwind_get_stats(const struct gp_unwind *u, struct gp_unwind_stats *st);

/* "open", "not ELF", ...: a gp_unwind_fail. */
const char *gp_unwind_fail_name(enum gp_unwind_fail f);

#endif
