/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * config.h — the daemon's configuration file (config/gpuprobed.conf documents
 * every key; options/option_table.h's rows with a KEY are the keys), parsed with inih. Every problem is one message naming the file,
 * the line and the key; a file with any problem is refused as a whole (at
 * start the daemon does not start; on SIGHUP it keeps the old configuration).
 */
#ifndef GP_DAEMON_CONFIG_H
#define GP_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "options/options.h"

#define GP_DAEMON_DEFAULT_CONFIG "/etc/gpuprobed/gpuprobed.conf"

/* Where a process's job_id label comes from. */
enum gp_job_source {
	GP_JOB_NONE = 0, /* no job_id label */
	GP_JOB_CGROUP, /* its cgroup path (v2, else name=systemd, else another v1 hierarchy: containers.h) */
	GP_JOB_ENV, /* an environment variable of the process (job_env), e.g. SLURM_JOB_ID */
};

/* What the per-process series are labelled by. */
enum gp_process_labels {
	GP_LABELS_GROUP =
		0, /* comm, container, pod, namespace, job: one series per group (metrics_pool.c) */
	GP_LABELS_PID, /* and pid: one series per process */
};

struct gp_daemon_config {
	/* [metrics] */
	bool listen_enabled;  /* listen = off disables the endpoint */
	char listen_addr[64]; /* numeric IPv4 or IPv6 address (never a host name) */
	unsigned listen_port; /* 1..65535 */
	enum gp_job_source job_source;
	char job_env[128]; /* GP_JOB_ENV: the variable's name */
	unsigned
		exited_grace_s; /* an exited process's series stay this long (0: removed at once) */
	enum gp_process_labels process_labels;

	/* [reports] */
	char state_dir[4096];	    /* periodic reports under state_dir/reports/ */
	unsigned report_interval_s; /* 0: a report only at exit */
	unsigned long long
		report_max_bytes; /* the reports directory's bound: oldest removed first */

	/* [trace]: the session's options the file sets, in their own fields (IN_OPTIONS rows:
	 * stacks, timeline, aggregate, max_stacks, ringbuf_mb, poll_ms, hold_max_ms, stall_timeout_s,
	 * no_uprobe_multi, nvml_interval_ms); its pointers are unset (nvml_lib: the buffer below) */
	struct gp_options options;
	char nvml_lib[256]; /* "": libnvidia-ml.so.1 through the loader's search */
	/* the daemon's own */
	unsigned
		max_processes; /* processes kept (live + exited in grace); over: oldest exited, then idlest evicted */
	double overhead_budget; /* fraction of the traced processes' CPU time (0.01 = "1%"); 0: off */

	/* [log] */
	int log_level; /* syslog level: LOG_ERR .. LOG_DEBUG */
};

/* The defaults (option_table.h's daemon defaults), as config/gpuprobed.conf states them. */
void gp_daemon_config_defaults(struct gp_daemon_config *c);

/* For tests/unit: each key's field, parser and type fit its row; the number of problems, each said. */
int gp_daemon_config_check_table(void);

/*
 * Reads path into *c (which it first sets to the defaults). On any problem
 * prints one line per problem on stderr with gp_err ("PATH:LINE: [section]
 * key: why (what is allowed)", or "PATH: cannot read: why"), all problems of
 * the file in one pass, leaves *c undefined and returns -EINVAL (-errno when it cannot be read);
 * 0 on success. missing_ok: a file that does not exist is the defaults
 * (the default path), not an error.
 */
int gp_daemon_config_load(const char *path, bool missing_ok, struct gp_daemon_config *c);

/*
 * The settings of new that cannot change without restarting the daemon
 * (the BPF programs are loaded with them, and state_dir): those that differ
 * from old, as "section.key" separated by ", " (e.g. "trace.stacks,
 * trace.ringbuf_mb"), into buf ("" when none differ; truncated to len).
 * [trace] max_processes and overhead_budget are userspace-only: reloadable.
 * Returns the number that differ.
 */
int gp_daemon_config_restart_keys(const struct gp_daemon_config *old,
				  const struct gp_daemon_config *new_, char *buf, size_t len);

/* On reload: what needs a restart keeps its running value in next. */
void gp_daemon_config_keep_running(struct gp_daemon_config *next,
				   const struct gp_daemon_config *running);

/* Into the session's options, what the file sets of them (nvml_lib points into c). */
void gp_daemon_config_to_options(const struct gp_daemon_config *c, struct gp_options *o);

#endif
