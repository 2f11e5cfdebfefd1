/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cli.h — command-line options of gpuprobed, parsed and validated in one place. */
#ifndef GP_CLI_H
#define GP_CLI_H

#include <stdbool.h>
#include <sys/types.h>

#define GP_MAX_PIDS 64

struct gp_options {
	pid_t pids[GP_MAX_PIDS];
	int npids;
	double duration_s;    /* 0: until every target exits or a signal */
	const char *out_dir;  /* default ./profile_output */
	unsigned ringbuf_mb;  /* ring buffer size, MiB (power of two) */
	unsigned poll_ms;     /* how often the ring buffer is drained */
	int verbosity;        /* -v count */
	bool no_uprobe_multi; /* one perf-event link per probe, as on kernels < 6.6 */
	char *command_line;   /* argv joined, for the report */
};

/* Exit statuses (DESIGN.md contract). */
enum { GP_EXIT_OK = 0, GP_EXIT_FAILURE = 1, GP_EXIT_USAGE = 2 };

/*
 * Parses argv into o. Returns -1 to go on, or an exit status: 0 after
 * --help/--version, GP_EXIT_USAGE after printing one message on bad usage.
 */
int gp_cli_parse(int argc, char **argv, struct gp_options *o);
void gp_cli_free(struct gp_options *o);

#endif
