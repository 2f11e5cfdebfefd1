/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rules_nccl.c — the rule across the processes of one job
 * (docs/recommendations.md): nccl-straggler, the rank its peers waited for.
 */
#include <stdio.h>
#include <stdlib.h>

#include "array.h"
#include "analysis/advice_rules.h"

/* ---- NCCL: a straggler among the ranks of one job ------------------------------- */

struct rank_of {
	const struct gp_process *p;
	const struct gp_nccl_comm *c;
	__u64 blocked_ns; /* synchronisations that waited for this rank's collectives */
};

static __u64 comm_blocked(const struct gp_nccl_comm *c)
{
	__u64 ns = 0;

	for (size_t i = 0; i < c->nrows; i++)
		ns += c->rows[i]->blocked_ns;
	return ns;
}

/*
 * The ranks of a communicator size N are those traced processes' communicators of N ranks; they are
 * taken as one job when exactly one of them holds each rank 0..N-1 (several jobs of the same size in one
 * session are not told apart: no finding). The straggler is the rank its peers waited for.
 */
static void straggler_of_size(const struct gp_model *m, struct gp_findings *out,
			      struct rank_of *ranks, size_t n, __s32 nranks)
{
	struct rank_of *by_rank = calloc((size_t)nranks, sizeof(*by_rank));
	size_t found = 0, slow = 0;
	__u64 others = 0;
	char t1[32], t2[32], t3[32];

	if (!by_rank)
		return;
	for (size_t i = 0; i < n; i++) {
		if (ranks[i].c->nranks != nranks || ranks[i].c->rank < 0 ||
		    ranks[i].c->rank >= nranks)
			continue;
		if (by_rank[ranks[i].c->rank].p) /* two jobs of this size, or a rank seen twice */
			goto out;
		by_rank[ranks[i].c->rank] = ranks[i];
		found++;
	}
	if (found != (size_t)nranks)
		goto out;
	for (size_t r = 1; r < (size_t)nranks; r++)
		if (by_rank[r].blocked_ns < by_rank[slow].blocked_ns)
			slow = r;
	for (size_t r = 0; r < (size_t)nranks; r++)
		if (r != slow)
			others += by_rank[r].blocked_ns;
	others /= (__u64)(nranks - 1);
	if (by_rank[slow].blocked_ns * 2 > others)
		goto out; /* its peers did not wait for it much more than it waited for them */
	{
		const struct gp_process *p = by_rank[slow].p;
		__u64 from, to;

		gp_process_window(m, p, &from, &to);
		struct gp_advice a = {
			.m = m, .p = p, .wall_ns = from && to > from ? to - from : 0, .out = out
		};
		struct gp_finding f = {
			.id = "nccl-straggler",
			.about = GP_ABOUT_NCCL,
			.estimate = "model",
			.action =
				"Find what delays this rank before its collectives (its own CPU work, "
				"data loading, a slower device or link) and balance the work across ranks; "
				"every collective waits for the last rank to arrive."
		};
		struct gp_ev_rows *arr = gp_ev_rows_new();

		f.impact_ns = others - by_rank[slow].blocked_ns;
		for (size_t r = 0; r < (size_t)nranks; r++) {
			struct gp_fields *o = gp_ev_row(arr);

			gp_ev_u64(o, "rank", r);
			gp_ev_u64(o, "pid", by_rank[r].p->pid);
			gp_ev_u64(o, "blocked_ns", by_rank[r].blocked_ns);
		}
		snprintf(
			f.title, sizeof(f.title),
			"rank %zu of %d is the straggler: its peers waited %s for its collectives, it waited %s",
			slow, nranks, MS(t1, others), MS(t2, by_rank[slow].blocked_ns));
		snprintf(
			f.method, sizeof(f.method),
			"the other ranks' average time blocked in synchronisations that waited for collectives %s − this "
			"rank's %s = %s: what each rank saves if this one arrived as early as they do",
			MS(t1, others), MS(t2, by_rank[slow].blocked_ns), MS(t3, f.impact_ns));
		gp_ev_u64(&f.evidence, "rank", slow);
		gp_ev_u64(&f.evidence, "nranks", (__u64)nranks);
		gp_ev_u64(&f.evidence, "peers_blocked_avg_ns", others);
		gp_ev_rows_put(&f.evidence, "ranks", arr);
		gp_advice_emit(&a, &f);
	}
out:
	free(by_rank);
}

void gp_advice_jobs(const struct gp_model *m, struct gp_findings *out)
{
	struct rank_of *ranks = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < m->nprocs; i++) {
		const struct gp_nccl *nc = m->procs[i]->nccl;

		for (size_t j = 0; nc && j < nc->ncomms; j++) {
			if (nc->comms[j]->nranks < 2 || nc->comms[j]->parent)
				continue;
			if (GP_ARRAY_GROW(ranks, cap, n + 1, 16)) {
				out->failed = true;
				free(ranks);
				return;
			}
			ranks[n++] = (struct rank_of){ .p = m->procs[i],
						       .c = nc->comms[j],
						       .blocked_ns = comm_blocked(nc->comms[j]) };
		}
	}
	/* each communicator size once, in the order first seen */
	for (size_t i = 0; i < n; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = ranks[j].c->nranks == ranks[i].c->nranks;
		if (!seen)
			straggler_of_size(m, out, ranks, n, ranks[i].c->nranks);
	}
	free(ranks);
}
