/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nccl_jobs.h — the ranks of one NCCL communicator across the processes a
 * model holds, joined by comm_id (struct gp_nccl_comm): who entered each
 * collective last, and by how much after the rank before it.
 */
#ifndef GP_MODEL_NCCL_JOBS_H
#define GP_MODEL_NCCL_JOBS_H

#include "model/view.h"

struct gp_nccl_job_rank {
	__s32 rank;
	const struct gp_process *p;
	const struct gp_nccl_comm *c;
	__u64 last;	   /* collectives it entered last (of those every rank was seen at) */
	__u64 late_sum_ns; /* summed: its entry minus the entry of the rank before it */
};

struct gp_nccl_job {
	__u64 comm_id;
	__s32 nranks;			/* the communicator's size (-1: not known) */
	struct gp_nccl_job_rank *ranks; /* traced ranks, by rank */
	size_t ntraced;
	size_t duplicates; /* processes that named a rank already held (not joined) */
	__u64 collectives; /* the most any traced rank entered */
	/* every rank traced: collectives 1..compared were entered by all of them and are compared */
	bool complete;
	__u64 compared;
};

struct gp_nccl_jobs {
	struct gp_nccl_job *v; /* in order of first sight */
	size_t n;
};

/* Every communicator with a known comm_id in m's processes; -ENOMEM. */
int gp_nccl_jobs_build(const struct gp_model *m, struct gp_nccl_jobs *out);
void gp_nccl_jobs_free(struct gp_nccl_jobs *jobs);

#endif /* GP_MODEL_NCCL_JOBS_H */
