/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * clock_align.h — the clocks of several captures (one per host) put on one
 * axis, the first capture's CLOCK_MONOTONIC: first by the CLOCK_REALTIME ↔
 * CLOCK_MONOTONIC relation each recorded, then, where two captures hold
 * ranks of one NCCL communicator, from the collectives themselves.
 */
#ifndef GP_MODEL_CLOCK_ALIGN_H
#define GP_MODEL_CLOCK_ALIGN_H

#include "model/model.h"
#include "model/view.h"

/* Collectives two captures must share before their releases estimate an offset. */
#define GP_CLOCK_MIN_COLLECTIVES 3

struct gp_clock_in {
	const struct gp_model *m; /* the capture's model (its processes not adopted yet) */
	bool realtime_known;	  /* it recorded the relation */
	__s64 wall_minus_mono_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC at its start */
};

/*
 * Fills the clock fields of out[0..n) (method, offset_ns, uncertainty_ns,
 * realtime_*, collectives, aligned_to, comm_id, bounds). 0 or -ENOMEM.
 */
int gp_clock_align(const struct gp_clock_in *in, size_t n, struct gp_merge_capture *out);

#endif /* GP_MODEL_CLOCK_ALIGN_H */
