/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * options.h — what a tracing session is asked to do (filled by the command
 * line, src/cmd/cli.c, or by the daemon's configuration), and the exit
 * statuses every command shares. Each option's flag, key, range and
 * defaults are its row of option_table.h.
 */
#ifndef GP_SESSION_OPTIONS_H
#define GP_SESSION_OPTIONS_H

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/types.h>

#define GP_MAX_PIDS	 64
#define GP_MAX_NAME_ARGS 8 /* = GP_MAX_NAMES (events.h) */

enum gp_mode { GP_MODE_PID = 1, GP_MODE_NAME, GP_MODE_LAUNCH, GP_MODE_ALL, GP_MODE_CONTAINER };

struct gp_options {
	enum gp_mode mode;
	pid_t pids[GP_MAX_PIDS];
	int npids;
	const char *names[GP_MAX_NAME_ARGS]; /* --name */
	int nnames;
	const char *containers[GP_MAX_NAME_ARGS]; /* --container: id, id prefix or name */
	int ncontainers;
	char **command;	     /* -- CMD ARGS...: NULL-ended argv */
	bool all;	     /* --all */
	char *command_text;  /* the command, joined, for the report */
	double duration_s;   /* 0: until every target exits or a signal */
	const char *out_dir; /* default ./profile_output */
	unsigned ringbuf_mb; /* ring buffer size, MiB (power of two) */
	unsigned poll_ms;    /* how often the ring buffer is drained */
	unsigned
		hold_max_ms; /* a held process is continued after this long at most (--hold-max-ms) */
	int verbosity;	     /* -v count */
	bool no_uprobe_multi; /* one perf-event link per probe, as on kernels < 6.6 */
	bool stacks;	      /* capture call stacks (default; --no-stacks) */
	unsigned max_stacks;  /* distinct stacks kept (--max-stacks) */
	unsigned unwind_mb; /* the unwind tables' pool, MiB (--unwind-mb; 0: frame pointers only) */
	bool python;	    /* Python frames in stacks (default; --no-python) */
	bool record;	    /* write a capture (default; --no-record) */
	const char *record_path; /* --record FILE; NULL: OUT_DIR/capture.gpz */
	const char
		*sqlite_path; /* --sqlite FILE: the capture exported there at the end; NULL: none */
	bool timeline;	      /* write trace.json (default; --no-timeline) */
	unsigned long long
		timeline_max_events; /* API calls written into it at most (--timeline-max-events) */
	unsigned long long timeline_file_mb; /* a file's MiB before the next (--timeline-file-mb) */
	bool timeline_sched; /* on-CPU slices of traced threads in it too (--timeline-sched) */
	bool aggregate; /* hot calls counted in kernel maps, not one record each (--aggregate) */
	double stall_timeout_s; /* an NCCL stall is said after this long (--stall-timeout; 0: off) */
	bool daemon;		/* --daemon: always on, configured by config_path (src/daemon/) */
	const char
		*config_path; /* --config FILE; NULL: the default path, defaults if it is missing */
	bool foreground;      /* --foreground: plain log lines for a person, even under systemd */
	char *command_line;   /* argv joined, for the report */
	unsigned
		nvml_interval_ms; /* NVML sampled this often (--nvml-interval); 0: not at all (--no-nvml) */
	const char *
		nvml_lib; /* --nvml-lib PATH; NULL: libnvidia-ml.so.1 through the loader's search */
};

/*
 * Exit statuses (DESIGN.md contract). With -- CMD, gpuprobed exits with the
 * command's status instead (126/127 when it cannot be run, like a shell).
 */
enum {
	GP_EXIT_OK = 0,
	GP_EXIT_FAILURE = 1,
	GP_EXIT_USAGE = 2,
	GP_EXIT_CANNOT_RUN = 126,
	GP_EXIT_NOT_FOUND = 127
};

static inline const char *
gp_mode_name(enum gp_mode m) /* "pid", "name", "launch", "all", "container" */
{
	switch (m) {
	case GP_MODE_PID:
		return "pid";
	case GP_MODE_NAME:
		return "name";
	case GP_MODE_LAUNCH:
		return "launch";
	case GP_MODE_ALL:
		return "all";
	case GP_MODE_CONTAINER:
		return "container";
	}
	return "";
}

#endif
