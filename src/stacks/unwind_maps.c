/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_maps.c — the processes' side of the unwind maps (see
 * unwind_maps.h): each traced process's executable mappings, sorted as
 * /proc/PID/maps lists them, each with its file's table (unwind_files.c) and
 * bias, published in uw_maps under a slot of uw_procs and published again
 * whole when they change; and the life of struct gp_unwind.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "array.h"
#include "log.h"
#include "proc_maps.h"
#include "stacks/unwind_maps.h"
#include "stacks/unwind_maps_internal.h"
#include "stacks/unwind_table.h"

/* ---- processes ------------------------------------------------------------------------------- */

static struct uw_proc *proc_find(struct gp_unwind *u, pid_t pid)
{
	for (size_t i = 0; i < GP_UW_MAX_PROCS; i++)
		if (u->procs[i].pid == pid)
			return &u->procs[i];
	return NULL;
}

static __u64 maps_sig(const struct gp_maps *maps)
{
	__u64 h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < maps->n; i++) {
		const struct gp_map *m = &maps->v[i];
		__u64 w[5] = { m->start, m->end, m->offset, m->dev, m->inode };

		if (!m->exec)
			continue;
		for (size_t k = 0; k < 5; k++)
			h = (h ^ w[k]) * 0x100000001b3ull;
	}
	return h;
}

static void drop_refs(struct uw_tab **tabs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tabs[i]->refs--;
}

/* Appends a mapping to u->scratch; a mapping without a table joins one just before it. */
static int map_push(struct gp_unwind *u, size_t *n, const struct gp_uw_map *e)
{
	if (*n && e->file == GP_UW_FILE_NONE && u->scratch[*n - 1].file == GP_UW_FILE_NONE &&
	    u->scratch[*n - 1].end == e->start) {
		u->scratch[*n - 1].end = e->end;
		return 0;
	}
	if (GP_ARRAY_GROW(u->scratch, u->scratch_cap, *n + 1, 64))
		return -ENOMEM;
	u->scratch[(*n)++] = *e;
	return 0;
}

/* Takes a reference on tab for this process, once. */
static int tab_take(struct gp_unwind *u, size_t *nt, struct uw_tab *tab)
{
	for (size_t i = 0; i < *nt; i++)
		if (u->tscratch[i] == tab)
			return 0;
	if (GP_ARRAY_GROW(u->tscratch, u->tscratch_cap, *nt + 1, 16))
		return -ENOMEM;
	u->tscratch[(*nt)++] = tab;
	tab->refs++;
	return 0;
}

/* The mappings of a process into u->scratch (*nmaps), the files they use into u->tscratch (*nt). */
static int build_maps(struct gp_unwind *u, pid_t pid, const struct gp_maps *maps, size_t *nmaps,
		      size_t *nt, bool *retry)
{
	int err = 0;

	*nmaps = *nt = 0;
	*retry = false;
	for (size_t i = 0; i < maps->n && !err; i++) {
		const struct gp_map *m = &maps->v[i];
		struct gp_uw_map e = { .start = m->start, .end = m->end, .file = GP_UW_FILE_NONE };
		int cause = NOT_FAILED;

		if (!m->exec)
			continue;
		if (m->inode && m->path[0] != '[') {
			struct uw_tab *tab = uw_file_resolve(u, pid, m, &cause);

			if (tab) {
				tab->lru = ++u->tick;
				err = tab_take(u, nt, tab);
				cause = tab->cause;
				if (cause == NOT_FAILED &&
				    gp_uw_table_bias(tab->segs, tab->nsegs, m->start, m->offset,
						     &e.bias)) {
					cause = GP_UWF_NO_SEGMENT;
					u->st.fail[cause]++;
				} else if (cause == NOT_FAILED) {
					e.file = tab->slot;
				}
			}
			/* the next update resolves it again, even if the mappings stay the same */
			if (cause != NOT_FAILED && !uw_fail_permanent(cause) &&
			    cause != GP_UWF_NO_SEGMENT)
				*retry = true;
		}
		if (!err)
			err = map_push(u, nmaps, &e);
	}
	return err;
}

static int write_maps(struct gp_unwind *u, __u32 slot, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		__u32 key = slot * GP_UW_MAX_MAPS + (__u32)i;

		if (bpf_map_update_elem(u->m.maps_fd, &key, &u->scratch[i], BPF_ANY))
			return -errno;
	}
	return 0;
}

/* Room for what a process holds: its files, a copy of its published mappings. */
struct kept {
	struct uw_tab **tabs;
	struct gp_uw_map *pub;
};

static int keep_alloc(struct kept *k, size_t nmaps, size_t nt)
{
	k->tabs = malloc((nt ? nt : 1) * sizeof(*k->tabs));
	k->pub = malloc((nmaps ? nmaps : 1) * sizeof(*k->pub));
	if (k->tabs && k->pub)
		return 0;
	free(k->tabs);
	free(k->pub);
	return -ENOMEM;
}

/* The files and mappings just built (u->tscratch, u->scratch) become p's; its old files dropped. */
static void keep(struct gp_unwind *u, struct uw_proc *p, struct kept *k, size_t nmaps, size_t nt)
{
	memcpy(k->tabs, u->tscratch, nt * sizeof(*k->tabs));
	memcpy(k->pub, u->scratch, nmaps * sizeof(*k->pub));
	drop_refs(p->tabs, p->ntabs);
	free(p->tabs);
	free(p->pub);
	p->tabs = k->tabs;
	p->ntabs = nt;
	p->pub = k->pub;
	p->nmaps = (__u32)nmaps;
	p->nnone = 0;
	for (size_t i = 0; i < nmaps; i++)
		p->nnone += k->pub[i].file == GP_UW_FILE_NONE;
}

/* A gp_uw_proc.gen never published before (0 means: being changed, do not walk by the mappings). */
static __u32 next_gen(struct gp_unwind *u)
{
	if (!++u->gen)
		++u->gen;
	return u->gen;
}

/*
 * pid's mappings as published are still right: published again with a new
 * gen, which also ends the kernel's hold on walking them (it zeroes gen when
 * the process maps code, until userspace has looked).
 */
static int republish(struct gp_unwind *u, const struct uw_proc *p, pid_t pid)
{
	struct gp_uw_proc pub = { .slot = p->slot, .nmaps = p->nmaps, .gen = next_gen(u) };

	if (bpf_map_update_elem(u->m.procs_fd, &pid, &pub, BPF_EXIST))
		return -errno;
	return 0;
}

int gp_unwind_process(struct gp_unwind *u, pid_t pid)
{
	struct uw_proc *p = proc_find(u, pid);
	__u32 slot = 0, old_slot = GP_UW_FILE_NONE;
	struct gp_uw_proc pub;
	struct gp_maps *maps;
	size_t nmaps, nt;
	struct kept k;
	bool retry;
	__u64 sig;
	int err;

	if (pid <= 0)
		return -EINVAL;
	err = gp_maps_read(pid, &maps);
	if (err)
		return err;
	sig = maps_sig(maps);
	if (p && p->sig == sig && !p->retry) {
		gp_maps_free(maps);
		return republish(u, p, pid);
	}
	if (!p && (!proc_find(u, 0) || !u->proc_slots.n)) {
		gp_maps_free(maps);
		u->st.procs_full++;
		return -ENOSPC;
	}
	err = build_maps(u, pid, maps, &nmaps, &nt, &retry);
	gp_maps_free(maps);
	if (nmaps > GP_UW_MAX_MAPS) {
		u->st.maps_over += nmaps - GP_UW_MAX_MAPS;
		nmaps = GP_UW_MAX_MAPS;
	}
	if (!err)
		err = keep_alloc(&k, nmaps, nt);
	if (err) {
		drop_refs(u->tscratch, nt);
		return err;
	}
	if (p && nmaps == p->nmaps && !memcmp(u->scratch, p->pub, nmaps * sizeof(*p->pub))) {
		/* what is published stays right: only the files it holds are taken anew */
		keep(u, p, &k, nmaps, nt);
		p->sig = sig;
		p->retry = retry;
		return republish(u, p, pid);
	}
	if (!p) {
		uw_ring_pop(&u->proc_slots, &slot);
	} else if (uw_ring_pop(&u->proc_slots, &slot)) {
		old_slot = p->slot;
	} else {
		slot = p->slot; /* no free slot: rewritten where a walk may be reading it */
		u->st.in_place++;
	}
	err = write_maps(u, slot, nmaps);
	pub = (struct gp_uw_proc){ .slot = slot, .nmaps = (__u32)nmaps, .gen = next_gen(u) };
	if (!err && bpf_map_update_elem(u->m.procs_fd, &pid, &pub, BPF_ANY))
		err = -errno;
	if (err) {
		drop_refs(u->tscratch, nt);
		free(k.tabs);
		free(k.pub);
		if (!p || slot != p->slot)
			uw_ring_push(&u->proc_slots, slot);
		gp_warn("unwind: pid %d: cannot publish its mappings (%s)", (int)pid,
			strerror(-err));
		return err;
	}
	if (!p) {
		p = proc_find(u, 0);
		p->pid = pid;
	}
	keep(u, p, &k, nmaps, nt);
	if (old_slot != GP_UW_FILE_NONE)
		uw_ring_push(&u->proc_slots, old_slot);
	p->slot = slot;
	p->sig = sig;
	p->retry = retry;
	u->st.updates++;
	if (GP_UW_MAX_PROCS - u->proc_slots.n > u->st.procs_max)
		u->st.procs_max = GP_UW_MAX_PROCS - u->proc_slots.n;
	return 0;
}

int gp_unwind_forget(struct gp_unwind *u, pid_t pid)
{
	struct uw_proc *p = pid ? proc_find(u, pid) : NULL;

	if (!p)
		return -ENOENT;
	if (bpf_map_delete_elem(u->m.procs_fd, &pid) && errno != ENOENT)
		gp_warn("unwind: pid %d: cannot take its mappings back (%s)", (int)pid,
			strerror(errno));
	uw_ring_push(&u->proc_slots, p->slot);
	drop_refs(p->tabs, p->ntabs);
	free(p->tabs);
	free(p->pub);
	memset(p, 0, sizeof(*p));
	u->freed++;
	return 0;
}

void gp_unwind_get_stats(const struct gp_unwind *u, struct gp_unwind_stats *st)
{
	*st = u->st;
	st->procs = st->maps = st->maps_none = 0;
	for (size_t i = 0; i < GP_UW_MAX_PROCS; i++) {
		if (!u->procs[i].pid)
			continue;
		st->procs++;
		st->maps += u->procs[i].nmaps;
		st->maps_none += u->procs[i].nnone;
	}
	uw_files_count(u, st);
	st->pool_rows = u->m.nrows;
}

/* ---- life ------------------------------------------------------------------------------------ */

struct gp_unwind *gp_unwind_new(const struct gp_unwind_maps *m)
{
	struct gp_unwind *u;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	if (!m->nrows) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->m = *m;
	u->pool_len = ((size_t)m->nrows * sizeof(struct gp_uw_row) + (size_t)page - 1) &
		      ~((size_t)page - 1);
	u->pool = mmap(NULL, u->pool_len, PROT_READ | PROT_WRITE, MAP_SHARED, m->rows_fd, 0);
	if (u->pool == MAP_FAILED) {
		err = errno;
		free(u);
		errno = err;
		return NULL;
	}
	if (uw_files_init(u) || uw_ring_init(&u->proc_slots, GP_UW_MAX_PROCS)) {
		gp_unwind_free(u);
		errno = ENOMEM;
		return NULL;
	}
	u->st.pool_rows = m->nrows;
	return u;
}

void gp_unwind_free(struct gp_unwind *u)
{
	if (!u)
		return;
	if (u->pool && u->pool != MAP_FAILED)
		munmap(u->pool, u->pool_len);
	for (size_t i = 0; i < GP_UW_MAX_PROCS; i++) {
		free(u->procs[i].tabs);
		free(u->procs[i].pub);
	}
	uw_files_release(u);
	free(u->proc_slots.v);
	free(u->scratch);
	free(u->tscratch);
	free(u);
}
