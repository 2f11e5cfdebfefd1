/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_maps_internal.h — the session's unwind state (struct gp_unwind),
 * shared by unwind_maps.c (the processes' mappings) and unwind_files.c (the
 * files' tables in the pool of rows), nobody else.
 */
#ifndef GP_UNWIND_MAPS_INTERNAL_H
#define GP_UNWIND_MAPS_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/types.h>
#include <linux/types.h>

#include "gpuprobed/unwind.h"
#include "proc_maps.h"
#include "stacks/unwind_maps.h"
#include "stacks/unwind_table.h"

#define NOT_FAILED  (-1) /* uw_tab.cause of a table in the pool */
#define KEY_BUCKETS 4096

/* One file's table: in the pool, or why not. */
struct uw_tab {
	unsigned char build_id[20];
	size_t build_id_len;
	int cause;	/* NOT_FAILED, or enum gp_unwind_fail */
	__u64 gen;	/* u->freed when a table that could be retried failed */
	__u32 slot;	/* in uw_files; GP_UW_FILE_NONE without a table */
	__u32 first, n; /* its rows in the pool */
	__u32 want;	/* the rows of its table when built, in the pool or not */
	__u32 refs;	/* processes whose published mappings use it */
	__u64 lru;	/* u->tick at its last use */
	struct gp_uw_seg segs[GP_UW_MAX_SEGS];
	int nsegs;
	char path[128]; /* as the first process that mapped it named it: for messages */
};

/* A file as /proc/PID/maps names it (device, inode), checked by size and time. */
struct uw_key {
	__u64 dev, ino, size, mtime_ns;
	struct uw_tab *tab;
	struct uw_key *next;
};

struct uw_proc {
	pid_t pid; /* 0: a free entry */
	__u32 slot;
	__u32 nmaps, nnone;
	__u64 sig;	      /* of its executable mappings, to see a change */
	bool retry;	      /* a file without a table for a cause that may pass: resolve again */
	struct uw_tab **tabs; /* the files its mappings use, one reference each */
	size_t ntabs;
	struct gp_uw_map *pub; /* what is published: nmaps mappings */
};

struct uw_extent {
	__u32 start, len;
};

/* Free slots, reused oldest-freed first: least likely to disturb a walk still reading one. */
struct uw_ring {
	__u32 *v;
	__u32 cap, head, n;
};

struct gp_unwind {
	struct gp_unwind_maps m;
	struct gp_uw_row *pool;
	size_t pool_len;
	struct uw_extent *ext; /* free rows of the pool, sorted, coalesced */
	size_t next, extcap;
	struct uw_ring file_slots, proc_slots;
	struct uw_tab **tabs;
	size_t ntabs, tabcap;
	struct uw_key *keys[KEY_BUCKETS];
	struct uw_proc procs[GP_UW_MAX_PROCS];
	struct gp_uw_map *scratch;
	size_t scratch_cap;
	struct uw_tab **tscratch;
	size_t tscratch_cap;
	__u64 tick;
	__u32 gen;   /* the last gp_uw_proc.gen published */
	__u64 freed; /* bumped when room is made: failed tables may fit now */
	__u64 rows;  /* in the pool */
	struct gp_unwind_stats st;
};

/* ---- slots: a ring of the free ones ---------------------------------------------------------- */

static inline int uw_ring_init(struct uw_ring *r, __u32 n)
{
	r->v = calloc(n, sizeof(*r->v));
	if (!r->v)
		return -ENOMEM;
	r->cap = n;
	r->head = 0;
	r->n = n;
	for (__u32 i = 0; i < n; i++)
		r->v[i] = i;
	return 0;
}

static inline bool uw_ring_pop(struct uw_ring *r, __u32 *slot)
{
	if (!r->n)
		return false;
	*slot = r->v[r->head];
	r->head = (r->head + 1) % r->cap;
	r->n--;
	return true;
}

static inline void uw_ring_push(struct uw_ring *r, __u32 slot)
{
	r->v[(r->head + r->n) % r->cap] = slot;
	r->n++;
}

/* ---- unwind_files.c: the files and their tables ---------------------------------------------- */

/* The pool all free and every file slot (at gp_unwind_new). 0 or -ENOMEM. */
int uw_files_init(struct gp_unwind *u);
/* Everything the files hold in userspace (the maps stay as they are). */
void uw_files_release(struct gp_unwind *u);

/* Causes that belong to the file itself: not retried. */
bool uw_fail_permanent(int cause);

/*
 * The file m maps in pid, its table built if it is new: NULL (with *cause)
 * when the file cannot be looked at. A file without a table still comes
 * back (its cause set): what it is is remembered.
 */
struct uw_tab *uw_file_resolve(struct gp_unwind *u, pid_t pid, const struct gp_map *m, int *cause);

/* The files' and rows' part of the stats: files, files_in_use, rows, rows_in_use. */
void uw_files_count(const struct gp_unwind *u, struct gp_unwind_stats *st);

#endif /* GP_UNWIND_MAPS_INTERNAL_H */
