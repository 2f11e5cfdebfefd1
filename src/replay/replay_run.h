/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_run.h — issues one process's plan through the CUDA runtime: one
 * host thread per original host thread, each sleeping its think times and
 * issuing its calls in order; streams and events created beforehand for the
 * original ones; an operation waits (on the host) until the operations it
 * depends on were issued (replay_plan.h); what-if changes applied on the way.
 */
#ifndef GP_REPLAY_RUN_H
#define GP_REPLAY_RUN_H

#include "replay/replay_cuda.h"
#include "replay/replay_plan.h"

/* --what-if changes (bits). */
#define GP_WHATIF_PINNED            (1u << 0) /* pageable copies from/to pinned staging buffers */
#define GP_WHATIF_ASYNC_COPIES      (1u << 1) /* synchronous copies queued asynchronously on their stream */
#define GP_WHATIF_NO_REDUNDANT_SYNC (1u << 2) /* redundant synchronisations dropped */
#define GP_WHATIF_ALL               (GP_WHATIF_PINNED | GP_WHATIF_ASYNC_COPIES | GP_WHATIF_NO_REDUNDANT_SYNC)

/* Parses "pinned,async-copies"; 0, or -EINVAL with errmsg naming the unknown change. */
int gp_whatif_parse(const char *s, unsigned *what, char *errmsg, size_t errlen);
/* "pinned,async-copies" into buf. */
void gp_whatif_name(unsigned what, char *buf, size_t len);

struct gp_replay_result {
	__u64 wall_ns;         /* the first call's start to the last call's return */
	__u64 *start_ns;       /* per operation: when it was issued, relative to the start (0 for dropped ones) */
	__u64 *end_ns;         /* per operation: when the call returned, relative to the start */
	bool *dropped;         /* per operation: left out by a what-if change */
	__u64 calls, errors;   /* runtime and driver calls made for operations, and how many failed */
	char first_error[256]; /* "" when none */
	__u64 changed_ops;     /* operations a what-if change altered or dropped */
	const char *kernels;   /* how kernels were stood in for: "ptx", "simulator names"; NULL: none launched */
};

/*
 * Replays p once with the changes in what (0: as captured), host time
 * scaled by 1 / speed. 0 when it ran (failed calls are counted in res, not
 * fatal), or -errno with errmsg when it could not set up.
 */
int gp_replay_run(const struct gp_cuda *cu, const struct gp_rprocess *p, double speed, unsigned what,
		  struct gp_replay_result *res, char *errmsg, size_t errlen);
void gp_replay_result_release(struct gp_replay_result *res);

#endif /* GP_REPLAY_RUN_H */
