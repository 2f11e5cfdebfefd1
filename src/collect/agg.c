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
 *
 * With an overhead budget the hot probes are attached for part of the time
 * only: each delta is then multiplied by its process's weight (what the
 * counted part stands for), and what that adds to the calls is told to the
 * model as estimated.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <math.h>
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
	bool no_batch;		  /* the kernel refused batch lookups: one key at a time */
	struct gp_api_agg_key *keys;
	struct gp_api_agg *vals;
	struct gp_agg_stats st;
	gp_agg_weight_fn weight; /* NULL: every delta as counted */
	void *weight_ctx;
	__u32 only_tgid; /* this read folds this process's keys only; 0: all */
};

static __u64 key_hash(const struct gp_api_agg_key *k)
{
	__u64 h = ((__u64)k->tgid << 32 | k->tid) * 0x9e3779b97f4a7c15ull;

	h ^= ((__u64)k->api << 16 | k->parent_api) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
	return h ? h : 1;
}

static bool key_eq(const struct gp_api_agg_key *a, const struct gp_api_agg_key *b)
{
	return a->tgid == b->tgid && a->tid == b->tid && a->api == b->api &&
	       a->parent_api == b->parent_api;
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

void gp_agg_set_weight(struct gp_agg *a, gp_agg_weight_fn fn, void *ctx)
{
	a->weight = fn;
	a->weight_ctx = ctx;
}

static __u64 scaled(__u64 v, double w)
{
	return (__u64)llround((double)v * w);
}

/* d stands for w times as much as was counted; returns the calls that adds. */
static __u64 scale(struct gp_api_aggregate *d, double w)
{
	__u64 seen = d->calls;

	d->calls = scaled(d->calls, w);
	d->errors = scaled(d->errors, w);
	d->sum_ns = scaled(d->sum_ns, w);
	d->error_ns = scaled(d->error_ns, w);
	d->offcpu_ns = scaled(d->offcpu_ns, w);
	d->vol_switches = scaled(d->vol_switches, w);
	d->invol_switches = scaled(d->invol_switches, w);
	d->minor_faults = scaled(d->minor_faults, w);
	d->major_faults = scaled(d->major_faults, w);
	for (unsigned b = 0; b < GP_AGG_HIST_BUCKETS; b++)
		d->dur_hist[b] = scaled(d->dur_hist[b], w);
	return d->calls - seen;
}

/* One delta into the model, scaled by w; what the scaling adds to the calls is estimated. */
static int hand_over(struct gp_agg *a, struct gp_api_aggregate *d, double w)
{
	__u64 estimated = w != 1 ? scale(d, w) : 0;
	int err = gp_model_api_aggregate(a->model, d);

	if (!err && estimated && !d->parent_api)
		err = gp_model_api_estimated(a->model, d->pid, d->api, estimated);
	return err;
}

/* The delta of one key since its last read, into the model (weighed). */
static int fold(struct gp_agg *a, const struct gp_api_agg_key *k, const struct gp_api_agg *v)
{
	__u64 h = key_hash(k);
	struct agg_entry *head = gp_u64map_get(&a->by_hash, h), *e;
	struct gp_api_aggregate d;
	bool moved = false;

	if (a->only_tgid && k->tgid != a->only_tgid)
		return 0; /* its delta waits for a read of every key */
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
		d.dur_hist[b] =
			(__u32)(v->dur_hist[b] - e->last.dur_hist[b]); /* u32 counters wrap */
		moved |= d.dur_hist[b] != 0;
	}
	moved |= d.calls || d.errors || d.sum_ns || d.offcpu_ns || d.vol_switches ||
		 d.invol_switches || d.minor_faults || d.major_faults;
	e->last = *v;
	if (!moved)
		return 0;
	a->st.aggregates++;
	a->st.calls += d.calls;
	return hand_over(a, &d, a->weight ? a->weight(a->weight_ctx, k->tgid) : 1);
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

static int collect(struct gp_agg *a)
{
	__u64 token[2] = { 0, 0 };
	bool first = true;

	a->st.collects++;
	if (a->no_batch)
		return collect_one_by_one(a);
	for (;;) {
		__u32 n = GP_AGG_BATCH;
		int err = bpf_map_lookup_batch(a->fd, first ? NULL : token, token, a->keys, a->vals,
					       &n, NULL);

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

int gp_agg_collect(struct gp_agg *a)
{
	return a ? collect(a) : 0;
}

int gp_agg_collect_process(struct gp_agg *a, __u32 tgid)
{
	int err;

	if (!a)
		return 0;
	a->only_tgid = tgid;
	err = gp_agg_collect(a);
	a->only_tgid = 0;
	return err;
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
