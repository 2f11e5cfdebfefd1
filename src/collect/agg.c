/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * agg.c — the kernel's aggregates of hot calls into the model (agg.h).
 *
 * The map is read in batches (one syscall per 1,024 keys, not two per key);
 * the last totals of every key are kept here, and only keys whose totals
 * moved become a gp_model_api_aggregate. Every total only grows, so a value
 * read while its thread was updating it (a call counted, its histogram
 * bucket not yet) is made right by the next read; the last read of a
 * session comes after the probes are gone, when nothing moves.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collect/agg.h"
#include "model/model.h"
#include "model/u64map.h"

#define GP_AGG_BATCH 1024

struct agg_entry {
	struct gp_api_agg_key key;
	struct gp_api_agg last; /* the totals handed to the model so far */
	struct agg_entry *next; /* same hash */
};

struct gp_agg {
	int fd;
	struct gp_model *model;
	struct gp_u64map by_hash; /* hash(key) -> struct agg_entry chain */
	bool no_batch;            /* the kernel refused batch lookups: one key at a time */
	struct gp_api_agg_key *keys;
	struct gp_api_agg *vals;
	struct gp_agg_stats st;
};

static __u64 key_hash(const struct gp_api_agg_key *k)
{
	__u64 h = ((__u64)k->tgid << 32 | k->tid) * 0x9e3779b97f4a7c15ull;

	h ^= ((__u64)k->api << 16 | k->parent_api) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
	return h ? h : 1;
}

static bool key_eq(const struct gp_api_agg_key *a, const struct gp_api_agg_key *b)
{
	return a->tgid == b->tgid && a->tid == b->tid && a->api == b->api && a->parent_api == b->parent_api;
}

struct gp_agg *gp_agg_new(int map_fd, struct gp_model *model)
{
	struct gp_agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->fd = map_fd;
	a->model = model;
	a->keys = calloc(GP_AGG_BATCH, sizeof(*a->keys));
	a->vals = calloc(GP_AGG_BATCH, sizeof(*a->vals));
	if (!a->keys || !a->vals) {
		gp_agg_free(a);
		return NULL;
	}
	return a;
}

static void free_chain(void *v)
{
	for (struct agg_entry *e = v, *n; e; e = n) {
		n = e->next;
		free(e);
	}
}

void gp_agg_free(struct gp_agg *a)
{
	if (!a)
		return;
	gp_u64map_clear(&a->by_hash, free_chain);
	free(a->keys);
	free(a->vals);
	free(a);
}

/* The delta of one key since its last read, into the model. */
static int fold(struct gp_agg *a, const struct gp_api_agg_key *k, const struct gp_api_agg *v)
{
	__u64 h = key_hash(k);
	struct agg_entry *head = gp_u64map_get(&a->by_hash, h), *e;
	struct gp_api_aggregate d;
	bool moved = false;

	for (e = head; e && !key_eq(&e->key, k); e = e->next)
		;
	if (!e) {
		if (!(e = calloc(1, sizeof(*e))))
			return -ENOMEM;
		e->key = *k;
		e->next = head;
		if (gp_u64map_put(&a->by_hash, h, e)) {
			free(e);
			return -ENOMEM;
		}
		a->st.keys++;
	}
	memset(&d, 0, sizeof(d)); /* no stray bytes in what a capture stores */
	d.pid = k->tgid;
	d.tid = k->tid;
	d.api = k->api;
	d.parent_api = k->parent_api;
	d.last_error = v->last_error;
	d.calls = v->calls - e->last.calls;
	d.errors = v->errors - e->last.errors;
	d.sum_ns = v->sum_ns - e->last.sum_ns;
	d.error_ns = v->error_ns - e->last.error_ns;
	d.min_ns = v->min_ns;
	d.max_ns = v->max_ns;
	d.offcpu_ns = v->offcpu_ns - e->last.offcpu_ns;
	d.vol_switches = v->vol_switches - e->last.vol_switches;
	d.invol_switches = v->invol_switches - e->last.invol_switches;
	d.minor_faults = v->minor_faults - e->last.minor_faults;
	d.major_faults = v->major_faults - e->last.major_faults;
	d.first_ns = v->first_ns;
	d.last_ns = v->last_ns;
	for (unsigned b = 0; b < GP_AGG_HIST_BUCKETS; b++) {
		d.dur_hist[b] = (__u32)(v->dur_hist[b] - e->last.dur_hist[b]); /* u32 counters wrap */
		moved |= d.dur_hist[b] != 0;
	}
	moved |= d.calls || d.errors || d.sum_ns || d.offcpu_ns || d.vol_switches || d.invol_switches ||
		 d.minor_faults || d.major_faults;
	e->last = *v;
	if (!moved)
		return 0;
	a->st.aggregates++;
	a->st.calls += d.calls;
	return gp_model_api_aggregate(a->model, &d);
}

static int collect_one_by_one(struct gp_agg *a)
{
	struct gp_api_agg_key k, next;
	struct gp_api_agg v;
	void *prev = NULL;

	while (bpf_map_get_next_key(a->fd, prev, &next) == 0) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(a->fd, &k, &v) == 0)
			fold(a, &k, &v);
	}
	return errno == ENOENT ? 0 : -errno;
}

int gp_agg_collect(struct gp_agg *a)
{
	__u64 token[2] = { 0, 0 };
	bool first = true;

	if (!a)
		return 0;
	a->st.collects++;
	if (a->no_batch)
		return collect_one_by_one(a);
	for (;;) {
		__u32 n = GP_AGG_BATCH;
		int err = bpf_map_lookup_batch(a->fd, first ? NULL : token, token, a->keys, a->vals, &n, NULL);

		if (err && errno != ENOENT) {
			if (first && (errno == EINVAL || errno == ENOTSUP || errno == EOPNOTSUPP)) {
				a->no_batch = true;
				return collect_one_by_one(a);
			}
			return -errno;
		}
		for (__u32 i = 0; i < n; i++)
			fold(a, &a->keys[i], &a->vals[i]);
		if (err) /* ENOENT: that was the last batch */
			return 0;
		first = false;
	}
}

void gp_agg_forget_process(struct gp_agg *a, __u32 tgid)
{
	size_t n;
	void **heads;

	if (!a || !a->by_hash.count)
		return;
	n = a->by_hash.count;
	if (!(heads = calloc(n, sizeof(*heads))))
		return;
	n = gp_u64map_values(&a->by_hash, heads, n);
	for (size_t i = 0; i < n; i++) {
		struct agg_entry *head = heads[i], **pp = &head, *e;
		__u64 h = key_hash(&head->key);

		while ((e = *pp)) {
			if (e->key.tgid != tgid) {
				pp = &e->next;
				continue;
			}
			bpf_map_delete_elem(a->fd, &e->key);
			*pp = e->next;
			free(e);
			a->st.keys--;
		}
		if (head)
			gp_u64map_put(&a->by_hash, h, head);
		else
			gp_u64map_del(&a->by_hash, h);
	}
	free(heads);
}

const struct gp_agg_stats *gp_agg_stats(const struct gp_agg *a)
{
	return &a->st;
}
