/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_maps.c — the unwind maps of the session: tables of files in the pool,
 * mappings of processes (see unwind_maps.h).
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "stacks/unwind_maps.h"
#include "log.h"
#include "proc_maps.h"
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

struct extent {
	__u32 start, len;
};

/* Free slots, reused oldest-freed first: least likely to disturb a walk still reading one. */
struct ring {
	__u32 *v;
	__u32 cap, head, n;
};

struct gp_unwind {
	struct gp_unwind_maps m;
	struct gp_uw_row *pool;
	size_t pool_len;
	struct extent *ext; /* free rows of the pool, sorted, coalesced */
	size_t next, extcap;
	struct ring file_slots, proc_slots;
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

const char *gp_unwind_fail_name(enum gp_unwind_fail f)
{
	static const char *const names[GP_UWF_MAX] = {
		[GP_UWF_OPEN] = "open",
		[GP_UWF_NOT_ELF] = "not ELF",
		[GP_UWF_NO_CFI] = "no CFI",
		[GP_UWF_TOO_BIG] = "too many rows",
		[GP_UWF_POOL_FULL] = "pool full",
		[GP_UWF_FILES_FULL] = "files full",
		[GP_UWF_NO_SEGMENT] = "no segment",
		[GP_UWF_OTHER] = "other",
	};

	return (unsigned)f < GP_UWF_MAX ? names[f] : "?";
}

/* Causes that belong to the file itself: not retried. */
static bool permanent(int cause)
{
	return cause == GP_UWF_NOT_ELF || cause == GP_UWF_NO_CFI || cause == GP_UWF_TOO_BIG;
}

/* ---- slots ----------------------------------------------------------------------------------- */

static int ring_init(struct ring *r, __u32 n)
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

static bool ring_pop(struct ring *r, __u32 *slot)
{
	if (!r->n)
		return false;
	*slot = r->v[r->head];
	r->head = (r->head + 1) % r->cap;
	r->n--;
	return true;
}

static void ring_push(struct ring *r, __u32 slot)
{
	r->v[(r->head + r->n) % r->cap] = slot;
	r->n++;
}

/* ---- the pool's free rows: first fit --------------------------------------------------------- */

static bool range_alloc(struct gp_unwind *u, __u32 n, __u32 *first)
{
	for (size_t i = 0; i < u->next; i++) {
		if (u->ext[i].len < n)
			continue;
		*first = u->ext[i].start;
		u->ext[i].start += n;
		u->ext[i].len -= n;
		if (!u->ext[i].len) {
			memmove(&u->ext[i], &u->ext[i + 1], (u->next - i - 1) * sizeof(*u->ext));
			u->next--;
		}
		return true;
	}
	return false;
}

static int range_free(struct gp_unwind *u, __u32 first, __u32 n)
{
	size_t i = 0;

	while (i < u->next && u->ext[i].start < first)
		i++;
	/* joins the free extent before it, the one after it, or both */
	if (i > 0 && u->ext[i - 1].start + u->ext[i - 1].len == first) {
		u->ext[i - 1].len += n;
		if (i < u->next && first + n == u->ext[i].start) {
			u->ext[i - 1].len += u->ext[i].len;
			memmove(&u->ext[i], &u->ext[i + 1], (u->next - i - 1) * sizeof(*u->ext));
			u->next--;
		}
		return 0;
	}
	if (i < u->next && first + n == u->ext[i].start) {
		u->ext[i].start = first;
		u->ext[i].len += n;
		return 0;
	}
	if (GP_ARRAY_GROW(u->ext, u->extcap, u->next + 1, 64))
		return -ENOMEM;
	memmove(&u->ext[i + 1], &u->ext[i], (u->next - i) * sizeof(*u->ext));
	u->ext[i] = (struct extent){ first, n };
	u->next++;
	return 0;
}

static __u64 rows_free(const struct gp_unwind *u)
{
	__u64 n = 0;

	for (size_t i = 0; i < u->next; i++)
		n += u->ext[i].len;
	return n;
}

/* ---- files ----------------------------------------------------------------------------------- */

static size_t key_bucket(__u64 dev, __u64 ino)
{
	return (size_t)(((dev * 0x9E3779B97F4A7C15ull) ^ ino) * 0xC2B2AE3D27D4EB4Full >> 52) &
	       (KEY_BUCKETS - 1);
}

static int key_add(struct gp_unwind *u, const struct gp_map *m, const struct stat *sb,
		   struct uw_tab *tab)
{
	struct uw_key *k = calloc(1, sizeof(*k));
	size_t b = key_bucket(m->dev, m->inode);

	if (!k)
		return -ENOMEM;
	k->dev = m->dev;
	k->ino = m->inode;
	k->size = (__u64)sb->st_size;
	k->mtime_ns = (__u64)sb->st_mtim.tv_sec * 1000000000ull + (__u64)sb->st_mtim.tv_nsec;
	k->tab = tab;
	k->next = u->keys[b];
	u->keys[b] = k;
	return 0;
}

static struct uw_tab *key_find(struct gp_unwind *u, const struct gp_map *m, const struct stat *sb)
{
	__u64 mt = (__u64)sb->st_mtim.tv_sec * 1000000000ull + (__u64)sb->st_mtim.tv_nsec;

	for (struct uw_key *k = u->keys[key_bucket(m->dev, m->inode)]; k; k = k->next)
		if (k->dev == m->dev && k->ino == m->inode && k->size == (__u64)sb->st_size &&
		    k->mtime_ns == mt)
			return k->tab;
	return NULL;
}

/* Its table out of the pool: the uw_files entry first, then the rows and the slot. */
static void tab_unload(struct gp_unwind *u, struct uw_tab *tab)
{
	struct gp_uw_file none = { 0 };

	if (tab->cause != NOT_FAILED)
		return;
	if (bpf_map_update_elem(u->m.files_fd, &tab->slot, &none, BPF_ANY))
		gp_warn("unwind: cannot clear the table of %s (%s)", tab->path, strerror(errno));
	if (range_free(u, tab->first, tab->n))
		gp_warn("unwind: %u rows of the pool lost (out of memory)", tab->n);
	ring_push(&u->file_slots, tab->slot);
	u->rows -= tab->n;
	tab->slot = GP_UW_FILE_NONE;
	tab->cause = GP_UWF_OTHER;
	u->freed++;
}

/* Forgets an unused file: its table, its keys. */
static void tab_destroy(struct gp_unwind *u, size_t i)
{
	struct uw_tab *tab = u->tabs[i];

	tab_unload(u, tab);
	for (size_t b = 0; b < KEY_BUCKETS; b++) {
		for (struct uw_key **kp = &u->keys[b]; *kp;) {
			struct uw_key *k = *kp;

			if (k->tab == tab) {
				*kp = k->next;
				free(k);
			} else {
				kp = &k->next;
			}
		}
	}
	u->tabs[i] = u->tabs[--u->ntabs];
	free(tab);
}

/* The least recently used file no process uses; with a table in the pool if loaded. -1: none. */
static long lru_idle(const struct gp_unwind *u, bool loaded)
{
	long best = -1;

	for (size_t i = 0; i < u->ntabs; i++) {
		const struct uw_tab *t = u->tabs[i];

		if (t->refs || (loaded && t->cause != NOT_FAILED))
			continue;
		if (best < 0 || t->lru < u->tabs[best]->lru)
			best = (long)i;
	}
	return best;
}

static bool evict_one(struct gp_unwind *u)
{
	long i = lru_idle(u, true);

	if (i < 0)
		return false;
	gp_debug("unwind: %s's table (%u rows) dropped from the pool to make room",
		 u->tabs[i]->path, u->tabs[i]->n);
	tab_destroy(u, (size_t)i);
	u->st.files_evicted++;
	return true;
}

/* Rows of tables no process uses: what evicting could free. */
static __u64 rows_idle(const struct gp_unwind *u)
{
	__u64 n = 0;

	for (size_t i = 0; i < u->ntabs; i++)
		if (!u->tabs[i]->refs && u->tabs[i]->cause == NOT_FAILED)
			n += u->tabs[i]->n;
	return n;
}

/* The rows of t into the pool and its uw_files entry, making room if it can. */
static int tab_load(struct gp_unwind *u, struct uw_tab *tab, const struct gp_uw_table *t)
{
	struct gp_uw_file f;
	__u32 n = (__u32)t->nrows, slot, first;

	if ((__u64)n > rows_free(u) + rows_idle(u) || n > u->m.nrows)
		return GP_UWF_POOL_FULL;
	while (!ring_pop(&u->file_slots, &slot))
		if (!evict_one(u))
			return GP_UWF_FILES_FULL;
	while (!range_alloc(u, n, &first)) {
		if (!evict_one(u)) {
			ring_push(&u->file_slots, slot);
			return GP_UWF_POOL_FULL;
		}
	}
	memcpy(&u->pool[first], t->rows, (size_t)n * sizeof(*t->rows));
	f.first = first;
	f.n = n;
	if (bpf_map_update_elem(u->m.files_fd, &slot, &f, BPF_ANY)) {
		gp_warn("unwind: cannot publish the table of %s (%s)", tab->path, strerror(errno));
		range_free(u, first, n);
		ring_push(&u->file_slots, slot);
		return GP_UWF_OTHER;
	}
	tab->slot = slot;
	tab->first = first;
	tab->n = n;
	tab->cause = NOT_FAILED;
	u->rows += n;
	if (u->rows > u->st.rows_max)
		u->st.rows_max = u->rows;
	return NOT_FAILED;
}

static int fail_of_build(int err)
{
	switch (err) {
	case -ENOEXEC:
		return GP_UWF_NOT_ELF;
	case -ENODATA:
		return GP_UWF_NO_CFI;
	case -EFBIG:
		return GP_UWF_TOO_BIG;
	default:
		return GP_UWF_OTHER;
	}
}

/* Builds fd's table into tab (a new file, or one whose table could not be had before). */
static void tab_build(struct gp_unwind *u, struct uw_tab *tab, int fd)
{
	struct gp_uw_table t;
	struct gp_uw_table_stats ts;
	int err = gp_uw_table_build_fd(fd, GP_UW_GAP_SLACK, &t, &ts);

	u->st.files_built++;
	u->st.build_ns += ts.build_ns;
	if (ts.build_ns > u->st.build_ns_max) {
		u->st.build_ns_max = ts.build_ns;
		snprintf(u->st.build_max_path, sizeof(u->st.build_max_path), "%s", tab->path);
	}
	if (err) {
		tab->cause = fail_of_build(err);
		u->st.fail[tab->cause]++;
		gp_debug("unwind: %s: no table (%s)", tab->path, strerror(-err));
		return;
	}
	tab->want = (__u32)t.nrows;
	if (t.nrows > u->st.build_rows_max)
		u->st.build_rows_max = t.nrows;
	memcpy(tab->segs, t.segs, sizeof(tab->segs));
	tab->nsegs = t.nsegs;
	memcpy(tab->build_id, t.build_id, sizeof(tab->build_id));
	tab->build_id_len = t.build_id_len;
	tab->cause = tab_load(u, tab, &t);
	if (tab->cause != NOT_FAILED)
		u->st.fail[tab->cause]++;
	if (tab->cause != NOT_FAILED)
		gp_debug("unwind: %s: %zu rows, not in the pool (%s)", tab->path, t.nrows,
			 gp_unwind_fail_name(tab->cause));
	else
		gp_debug("unwind: %s: %zu rows (%.1f ms)", tab->path, t.nrows, ts.build_ns / 1e6);
	gp_uw_table_release(&t);
}

/* A file known with this build-id already. */
static struct uw_tab *by_build_id(struct gp_unwind *u, const unsigned char *id, size_t len)
{
	for (size_t i = 0; len && i < u->ntabs; i++) {
		struct uw_tab *t = u->tabs[i];

		if (t->build_id_len == len && !memcmp(t->build_id, id, len) &&
		    (t->cause == NOT_FAILED || permanent(t->cause)))
			return t;
	}
	return NULL;
}

static struct uw_tab *tab_new(struct gp_unwind *u, const struct gp_map *m)
{
	struct uw_tab *tab;

	if (u->ntabs >= GP_UNWIND_FILES_KEPT) {
		long i = lru_idle(u, false);

		if (i < 0)
			return NULL;
		tab_destroy(u, (size_t)i);
	}
	if (GP_ARRAY_GROW(u->tabs, u->tabcap, u->ntabs + 1, 64))
		return NULL;
	tab = calloc(1, sizeof(*tab));
	if (!tab)
		return NULL;
	tab->slot = GP_UW_FILE_NONE;
	tab->cause = GP_UWF_OTHER;
	snprintf(tab->path, sizeof(tab->path), "%s", m->path);
	u->tabs[u->ntabs++] = tab;
	return tab;
}

/*
 * The file m maps in pid, its table built if it is new: NULL (with *cause)
 * when the file cannot be looked at. A file without a table still comes
 * back (its cause set): what it is is remembered.
 */
static struct uw_tab *resolve(struct gp_unwind *u, pid_t pid, const struct gp_map *m, int *cause)
{
	char path[PATH_MAX + 64];
	unsigned char id[20];
	struct uw_tab *tab;
	struct stat sb;
	size_t idlen;
	int fd;

	gp_mapped_file_path(pid, m, path, sizeof(path));
	/* through /proc/PID/root, the path may name another file now */
	if (stat(path, &sb) || !S_ISREG(sb.st_mode) ||
	    (!strstr(path, "/map_files/") && (sb.st_ino != m->inode || sb.st_dev != m->dev))) {
		*cause = GP_UWF_OPEN;
		u->st.fail[GP_UWF_OPEN]++;
		return NULL;
	}
	tab = key_find(u, m, &sb);
	if (tab && (tab->cause == NOT_FAILED || permanent(tab->cause) || tab->gen == u->freed ||
		    (tab->cause == GP_UWF_POOL_FULL && tab->want > rows_free(u) + rows_idle(u)))) {
		/* built already, or what kept its table out has not changed */
		u->st.files_reused++;
		return tab;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*cause = GP_UWF_OPEN;
		u->st.fail[GP_UWF_OPEN]++;
		return NULL;
	}
	if (!tab) {
		struct uw_tab *same;

		if (gp_uw_build_id_fd(fd, id, &idlen))
			idlen = 0;
		same = by_build_id(u, id, idlen);
		if (same) {
			/* the same content under another inode (a copy, another mount) */
			close(fd);
			if (key_add(u, m, &sb, same)) {
				*cause = GP_UWF_OTHER;
				u->st.fail[GP_UWF_OTHER]++;
				return NULL;
			}
			u->st.files_reused++;
			return same;
		}
		tab = tab_new(u, m);
		if (!tab || key_add(u, m, &sb, tab)) {
			close(fd);
			*cause = tab ? GP_UWF_OTHER : GP_UWF_FILES_FULL;
			u->st.fail[*cause]++;
			return NULL;
		}
	}
	tab_build(u, tab, fd);
	close(fd);
	tab->gen = u->freed;
	return tab;
}

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
			struct uw_tab *tab = resolve(u, pid, m, &cause);

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
			if (cause != NOT_FAILED && !permanent(cause) && cause != GP_UWF_NO_SEGMENT)
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
		ring_pop(&u->proc_slots, &slot);
	} else if (ring_pop(&u->proc_slots, &slot)) {
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
			ring_push(&u->proc_slots, slot);
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
		ring_push(&u->proc_slots, old_slot);
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
	ring_push(&u->proc_slots, p->slot);
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
	st->files = st->files_in_use = st->rows = st->rows_in_use = 0;
	for (size_t i = 0; i < GP_UW_MAX_PROCS; i++) {
		if (!u->procs[i].pid)
			continue;
		st->procs++;
		st->maps += u->procs[i].nmaps;
		st->maps_none += u->procs[i].nnone;
	}
	for (size_t i = 0; i < u->ntabs; i++) {
		const struct uw_tab *t = u->tabs[i];

		if (t->cause != NOT_FAILED)
			continue;
		st->files++;
		st->rows += t->n;
		if (t->refs) {
			st->files_in_use++;
			st->rows_in_use += t->n;
		}
	}
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
	if (ring_init(&u->file_slots, GP_UW_MAX_FILES) ||
	    ring_init(&u->proc_slots, GP_UW_MAX_PROCS) || range_free(u, 0, m->nrows)) {
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
	for (size_t b = 0; b < KEY_BUCKETS; b++) {
		while (u->keys[b]) {
			struct uw_key *k = u->keys[b];

			u->keys[b] = k->next;
			free(k);
		}
	}
	for (size_t i = 0; i < u->ntabs; i++)
		free(u->tabs[i]);
	free(u->tabs);
	free(u->ext);
	free(u->file_slots.v);
	free(u->proc_slots.v);
	free(u->scratch);
	free(u->tscratch);
	free(u);
}
