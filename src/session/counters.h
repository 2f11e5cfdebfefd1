/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * counters.h — the kernel's own counters into the model: each probe's hits
 * (entries and returns, per-CPU) and each loss cause (per-CPU), as totals.
 */
#ifndef GP_SESSION_COUNTERS_H
#define GP_SESSION_COUNTERS_H

#include <linux/types.h>

struct gp_model;
struct gp_uprobes;

struct gp_counters {
	int hits_fd, drops_fd; /* the probe_hits and drops maps */
	__u64 drops;	       /* sum of the loss counters, for the closing line */
	__u64 estimates; /* of the kernel's counters: off-CPU intervals estimated, not losses */
	__u64 hits_gated, hits_other; /* probe hit totals (the hot probes', the others') */
};

/* Reads every counter and sets its total in the model (and in c). */
void gp_counters_collect(struct gp_counters *c, const struct gp_uprobes *probes,
			 struct gp_model *m);

#endif
