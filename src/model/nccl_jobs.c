/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nccl_jobs.c — one NCCL communicator seen from several of its ranks. Every
 * rank computes the same comm_id (nccl.c), and the k-th collective of a
 * communicator is the same operation on every rank, so the ranks' arrivals
 * at collective k (the calls' entries) can be compared: the rank that
 * entered last made every other wait, and its lateness is how long after
 * the rank before it it came. Arrival times are the hosts' CLOCK_MONOTONIC:
 * comparable within one host, and across hosts once the captures' clocks
 * are aligned (gpuprobed merge).
 */
#include <errno.h>
#include <stdlib.h>

#include "array.h"
#include "model/nccl_jobs.h"

static struct gp_nccl_job *job_of(struct gp_nccl_jobs *jobs, size_t *cap,
				  const struct gp_nccl_comm *c)
{
	for (size_t i = 0; i < jobs->n; i++)
		if (jobs->v[i].comm_id == c->comm_id)
			return &jobs->v[i];
	if (GP_ARRAY_GROW(jobs->v, *cap, jobs->n + 1, 8))
		return NULL;
	jobs->v[jobs->n] = (struct gp_nccl_job){ .comm_id = c->comm_id, .nranks = c->nranks };
	return &jobs->v[jobs->n++];
}

static int join(struct gp_nccl_job *j, const struct gp_process *p, const struct gp_nccl_comm *c)
{
	size_t i;

	if (c->collectives > j->collectives)
		j->collectives = c->collectives;
	if (j->nranks < 0)
		j->nranks = c->nranks;
	for (i = 0; i < j->ntraced && j->ranks[i].rank < c->rank; i++)
		;
	if (c->rank < 0 || (i < j->ntraced && j->ranks[i].rank == c->rank)) {
		j->duplicates++;
		return 0;
	}
	void *v = realloc(j->ranks, (j->ntraced + 1) * sizeof(*j->ranks));

	if (!v)
		return -ENOMEM;
	j->ranks = v;
	for (size_t k = j->ntraced; k > i; k--)
		j->ranks[k] = j->ranks[k - 1];
	j->ranks[i] = (struct gp_nccl_job_rank){ .rank = c->rank, .p = p, .c = c };
	j->ntraced++;
	return 0;
}

/* Rank r's entry into collective s on the merged axis (its host's clock plus its offset: gpuprobed merge). */
static __u64 entry_ns(const struct gp_nccl_job_rank *r, __u64 s)
{
	return r->c->arrivals[s].entry_ns + (__u64)r->p->clock_offset_ns;
}

/* With every rank traced: who entered each collective all of them were seen at last. */
static void compare(struct gp_nccl_job *j)
{
	__u64 n = ~0ULL;

	j->complete = j->nranks >= 2 && j->ntraced == (size_t)j->nranks && !j->duplicates;
	if (!j->complete)
		return;
	for (size_t r = 0; r < j->ntraced; r++)
		if (j->ranks[r].c->narrivals < n)
			n = j->ranks[r].c->narrivals;
	j->compared = n;
	for (__u64 s = 0; s < n; s++) {
		__u64 before = 0;
		size_t who = 0;

		for (size_t r = 1; r < j->ntraced; r++)
			if (entry_ns(&j->ranks[r], s) > entry_ns(&j->ranks[who], s))
				who = r;
		for (size_t r = 0; r < j->ntraced; r++)
			if (r != who && entry_ns(&j->ranks[r], s) > before)
				before = entry_ns(&j->ranks[r], s);
		j->ranks[who].last++;
		j->ranks[who].late_sum_ns += entry_ns(&j->ranks[who], s) - before;
	}
}

int gp_nccl_jobs_build(const struct gp_model *m, struct gp_nccl_jobs *out)
{
	size_t cap = 0;

	*out = (struct gp_nccl_jobs){ 0 };
	for (size_t i = 0; i < m->nprocs; i++) {
		const struct gp_nccl *nc = m->procs[i]->nccl;

		for (size_t k = 0; nc && k < nc->ncomms; k++) {
			const struct gp_nccl_comm *c = nc->comms[k];
			struct gp_nccl_job *j;

			if (!c->comm_id_known)
				continue;
			if (!(j = job_of(out, &cap, c)) || join(j, m->procs[i], c)) {
				gp_nccl_jobs_free(out);
				return -ENOMEM;
			}
		}
	}
	for (size_t i = 0; i < out->n; i++)
		compare(&out->v[i]);
	return 0;
}

void gp_nccl_jobs_free(struct gp_nccl_jobs *jobs)
{
	for (size_t i = 0; i < jobs->n; i++)
		free(jobs->v[i].ranks);
	free(jobs->v);
	*jobs = (struct gp_nccl_jobs){ 0 };
}
