/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_files.c — the files' side of the unwind maps (see unwind_maps.h):
 * each executable file a traced process maps, known by (device, inode) or
 * build-id, its table built once (unwind_table.c) and published in the pool
 * of rows (uw_rows, first fit) and uw_files; tables no process uses stay
 * until the room is needed (least recently used first), and a file without
 * a table is remembered with its cause. unwind_maps.c asks for a mapping's
 * file (uw_file_resolve) and publishes the processes' mappings.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "log.h"
#include "proc_maps.h"
#include "stacks/unwind_maps_internal.h"
#include "stacks/unwind_table.h"

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
bool uw_fail_permanent(int cause)
{
	return cause == GP_UWF_NOT_ELF || cause == GP_UWF_NO_CFI || cause == GP_UWF_TOO_BIG;
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
	u->ext[i] = (struct uw_extent){ first, n };
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
	uw_ring_push(&u->file_slots, tab->slot);
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
	while (!uw_ring_pop(&u->file_slots, &slot))
		if (!evict_one(u))
			return GP_UWF_FILES_FULL;
	while (!range_alloc(u, n, &first)) {
		if (!evict_one(u)) {
			uw_ring_push(&u->file_slots, slot);
			return GP_UWF_POOL_FULL;
		}
	}
	memcpy(&u->pool[first], t->rows, (size_t)n * sizeof(*t->rows));
	f.first = first;
	f.n = n;
	if (bpf_map_update_elem(u->m.files_fd, &slot, &f, BPF_ANY)) {
		gp_warn("unwind: cannot publish the table of %s (%s)", tab->path, strerror(errno));
		range_free(u, first, n);
		uw_ring_push(&u->file_slots, slot);
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
		    (t->cause == NOT_FAILED || uw_fail_permanent(t->cause)))
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
struct uw_tab *uw_file_resolve(struct gp_unwind *u, pid_t pid, const struct gp_map *m, int *cause)
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
	if (tab &&
	    (tab->cause == NOT_FAILED || uw_fail_permanent(tab->cause) || tab->gen == u->freed ||
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

void uw_files_count(const struct gp_unwind *u, struct gp_unwind_stats *st)
{
	st->files = st->files_in_use = st->rows = st->rows_in_use = 0;
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
}

/* ---- life ------------------------------------------------------------------------------------ */

int uw_files_init(struct gp_unwind *u)
{
	if (uw_ring_init(&u->file_slots, GP_UW_MAX_FILES) || range_free(u, 0, u->m.nrows))
		return -ENOMEM;
	return 0;
}

void uw_files_release(struct gp_unwind *u)
{
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
}
