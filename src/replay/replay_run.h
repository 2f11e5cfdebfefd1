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
#define GP_WHATIF_PINNED (1u << 0) /* pageable copies from/to pinned staging buffers */
#define GP_WHATIF_ASYNC_COPIES \
	(1u << 1) /* synchronous copies queued asynchronously on their stream */
#define GP_WHATIF_NO_REDUNDANT_SYNC (1u << 2) /* redundant synchronisations dropped */
#define GP_WHATIF_ALL		    (GP_WHATIF_PINNED | GP_WHATIF_ASYNC_COPIES | GP_WHATIF_NO_REDUNDANT_SYNC)
/* "none": nothing changed, the plan replayed as baseline and as "changed" (what the method itself adds) */
#define GP_WHATIF_NONE		    (1u << 3)

/* Parses "pinned,async-copies" or "none"; 0, or -EINVAL with errmsg naming the bad change. */
int gp_whatif_parse(const char *s, unsigned *what, char *errmsg, size_t errlen);
/* "pinned,async-copies" (or "none") into buf. */
void gp_whatif_name(unsigned what, char *buf, size_t len);

struct gp_replay_result {
	__u64 wall_ns; /* the first call's start to the last call's return */
	__u64 *start_ns; /* per operation: when it was issued, relative to the start (0 for dropped ones) */
	__u64 *end_ns; /* per operation: when the call returned, relative to the start */
	__u64 *late_ns; /* per operation: issued this long after its planned time (0 for dropped ones) */
	bool *dropped;	     /* per operation: left out by a what-if change */
	__u64 calls, errors; /* runtime and driver calls made for operations, and how many failed */
	char first_error[256]; /* "" when none */
	__u64 changed_ops;     /* operations a what-if change altered or dropped */
	const char *
		kernels; /* how kernels were stood in for: "ptx", "simulator names"; NULL: none launched */
};

/*
 * Replays p once with the changes in what (0: as captured), host time
 * scaled by 1 / speed. 0 when it ran (failed calls are counted in res, not
 * fatal), or -errno with errmsg when it could not set up.
 */
int gp_replay_run(const struct gp_cuda *cu, const struct gp_rprocess *p, double speed,
		  unsigned what, struct gp_replay_result *res, char *errmsg, size_t errlen);
void gp_replay_result_release(struct gp_replay_result *res);

/*
 * A what-if measured in rounds (docs/replay.md, "What-if changes"): after a
 * discarded warm-up replay of each plan, `rounds` pairs of replays, the
 * baseline first in even rounds and the changed plan first in odd ones, so
 * that neither is always the colder or the warmer run. A round's saving is
 * its baseline's wall time minus its changed replay's.
 */
#define GP_WHATIF_ROUNDS_DEFAULT 5
#define GP_WHATIF_ROUNDS_MAX	 99 /* odd: the median is one round's saving */

struct gp_whatif_round {
	__u64 baseline_ns, changed_ns;
	bool changed_first;
};

struct gp_whatif_stats {
	unsigned rounds; /* odd */
	struct gp_whatif_round round[GP_WHATIF_ROUNDS_MAX];
	unsigned median; /* the round whose saving is the median */
	__s64 saving_ns; /* that median saving */
	__s64 saving_min_ns, saving_max_ns;
	__u64 errors;	       /* failed calls over every replay, warm-up included */
	char first_error[256]; /* the first of them, "" when none */
};

/* Fills median, saving_ns, saving_min_ns and saving_max_ns from round[0 .. rounds - 1]. */
void gp_whatif_summarize(struct gp_whatif_stats *st);

/*
 * Measures the changes in what on p in st->rounds rounds (set by the caller,
 * odd, 1 to GP_WHATIF_ROUNDS_MAX). base and chg receive the median round's
 * two replays (the caller releases them). 0 when every replay ran (failed
 * calls counted in st), or -errno with errmsg.
 */
int gp_whatif_measure(const struct gp_cuda *cu, const struct gp_rprocess *p, double speed,
		      unsigned what, struct gp_whatif_stats *st, struct gp_replay_result *base,
		      struct gp_replay_result *chg, char *errmsg, size_t errlen);

#endif /* GP_REPLAY_RUN_H */
