/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics.h — the daemon's /metrics page: the model (and the daemon's own
 * numbers) in the Prometheus text exposition format 0.0.4. A sink like the
 * reports: it reads the model only, on the model's own thread; what it keeps
 * between scrapes is the pool's (process_labels = group: metrics_pool.c).
 * docs/metrics.md defines every metric.
 */
#ifndef GP_DAEMON_METRICS_H
#define GP_DAEMON_METRICS_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#include "daemon/config.h"
#include "model/view.h"

/* The daemon's own numbers, filled by the daemon. */
struct gp_metrics_self {
	__u64 start_realtime_ns;
	__u64 processes_evicted; /* forgotten to stay under max_processes */
	__u64 reloads, reload_failures;
	__u64 reports_written, reports_removed;
};

struct gp_metrics_opts {
	enum gp_job_source job_source; /* GP_JOB_NONE: no job_id label */
	const char *job_env;	       /* GP_JOB_ENV: the variable's name */
	const char *proc_root;	       /* "/proc" (NULL means the same; tests point elsewhere) */
	/* process_labels = group: a series per group of processes, kept here; NULL: one per pid */
	struct gp_metrics_pool *pool;
};

/* What group series keep between scrapes (see metrics_pool.c). NULL: out of memory. */
struct gp_metrics_pool *gp_metrics_pool_new(void);
void gp_metrics_pool_free(struct gp_metrics_pool *pool);
/*
 * Takes the labels of m's processes the pool has not seen, while they live (a job read from
 * /proc is not there once a process has exited): called between scrapes, before the daemon
 * forgets processes. 0 or -ENOMEM.
 */
int gp_metrics_pool_note(struct gp_metrics_pool *pool, const struct gp_model *m,
			 const struct gp_metrics_opts *o);

/*
 * Writes every metric family of m, o and self (NULL: the daemon families
 * are left out) into out. 0, or -errno (out failed, out of memory).
 */
int gp_metrics_render(const struct gp_model *m, const struct gp_metrics_opts *o,
		      const struct gp_metrics_self *self, FILE *out);

#endif /* GP_DAEMON_METRICS_H */
