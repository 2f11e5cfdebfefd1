/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * agg.h — reading the kernel's aggregates of hot calls (--aggregate: the
 * "api_agg" map of bpf/gpu_api.bpf.c) into the model. The map holds running
 * totals per (process, thread, API, enclosing API); each collect hands the
 * model what changed since the previous one (gp_model_api_aggregate), so the
 * model (and a capture) sees every call exactly once, whenever it reads.
 */
#ifndef GP_COLLECT_AGG_H
#define GP_COLLECT_AGG_H

#include <linux/types.h>

struct gp_model;
struct gp_agg;

struct gp_agg_stats {
	__u64 collects;	  /* reads of the whole map */
	__u64 keys;	  /* keys known now */
	__u64 aggregates; /* deltas handed to the model */
	__u64 calls;	  /* calls in them */
};

/* map_fd: the api_agg map. NULL on ENOMEM. */
struct gp_agg *gp_agg_new(int map_fd, struct gp_model *model);
void gp_agg_free(struct gp_agg *a); /* NULL is a no-op */

/* Reads the whole map and folds what changed since the last read into the model. 0 or -errno. */
int gp_agg_collect(struct gp_agg *a);

/* The same for tgid's keys only (it exited): the others' deltas wait for the next whole read. */
int gp_agg_collect_process(struct gp_agg *a, __u32 tgid);

/*
 * With an overhead budget: what the kernel counted for tgid since the last
 * read stands for weight times as much (>= 1; 1: exact). The deltas are
 * scaled and the calls that adds told to the model as estimated.
 */
typedef double (*gp_agg_weight_fn)(void *ctx, __u32 tgid);
void gp_agg_set_weight(struct gp_agg *a, gp_agg_weight_fn fn, void *ctx);

/*
 * tgid is gone and its final totals were collected: its keys leave the map
 * and the userspace table (so the map never fills with dead threads, and a
 * reused pid starts from zero).
 */
void gp_agg_forget_process(struct gp_agg *a, __u32 tgid);

const struct gp_agg_stats *gp_agg_stats(const struct gp_agg *a);

#endif
