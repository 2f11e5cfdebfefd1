/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stalls.h — live NCCL stall detection (--stall-timeout): which ranks wait on
 * a collective (inside the collective call, or blocked in a synchronisation
 * whose awaited work is it) and for how long, from the traced calls in
 * progress (the task iterator, gp_bpf_inflight); a stall said once per
 * (communicator, collective) when ranks waited longer than the timeout while
 * another rank traced here has not entered it.
 */
#ifndef GP_SESSION_STALLS_H
#define GP_SESSION_STALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "probes/bpf_objects.h"
#include "model/model.h"
#include "symbolize/symbolizer.h"

struct gp_stalls {
	__u64 timeout_ns; /* 0: off */
	__u64 every_ns, next_ns;
	struct gp_bpf *bpf;
	struct gp_symbolizer *sym;	/* where an off-CPU late rank is: NULL, not said */
	struct gp_inflight *cur, *prev; /* this look's calls in progress, and the previous look's */
	size_t ncur, nprev, cur_cap, prev_cap;
	struct gp_stall_said {
		__u64 comm_id, seq;
	} * said;
	size_t nsaid, said_cap;
	bool broken; /* the iterator failed (said once): no more looks */
};

/* 0 timeout_s: off. */
void gp_stalls_init(struct gp_stalls *st, struct gp_bpf *bpf, struct gp_symbolizer *sym,
		    double timeout_s);
/* A look, when one is due at now (CLOCK_MONOTONIC), after a drain: live state and stalls into m. */
void gp_stalls_step(struct gp_stalls *st, struct gp_model *m, __u64 now);
void gp_stalls_release(struct gp_stalls *st);

#endif
