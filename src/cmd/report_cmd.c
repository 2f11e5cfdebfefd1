/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_cmd.c — `gpuprobed report CAPTURE [-o DIR]`: opens the capture into
 * a fresh model (capture_open.h) and writes every report from it, exactly
 * as the live session wrote them; what the capture lacks (cut, corrupt
 * chunks) is said on stderr and in the reports' "source".
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "capture/capture_open.h"
#include "cmd/commands.h"
#include "cmd/cli.h"
#include "log.h"
#include "timeline/timeline_session.h"
#include "report/report_files.h"

static const char usage_text[] =
	"Usage: gpuprobed report CAPTURE [-o DIR] [--no-timeline] [-v]\n"
	"\n"
	"Rebuild every output of a traced session (report.json, report.md, trace.json,\n"
	"call-stack files) from its capture file (written by a session as DIR/capture.gpz, or\n"
	"--record FILE), on this machine or any other: the capture holds the answers\n"
	"of symbolization, nothing is read from /proc or the traced programs' files.\n"
	"report.json equals the live session's but for its \"source\".\n"
	"A capture cut short (gpuprobed killed, disk full) gives the report of what it\n"
	"holds; corrupt chunks are skipped and counted.\n"
	"\n"
	"  -o, --output DIR   write into DIR (default ./profile_output)\n"
	"      --no-timeline  do not write trace.json\n"
	"      --timeline-max-events N\n"
	"                     write at most N calls into trace.json (default 5000000;\n"
	"                     give the live session's value to rebuild its trace.json)\n"
	"      --timeline-file-mb MB\n"
	"                     a timeline file ends past MB MiB (default 256, at most\n"
	"                     500) and goes on in trace.1.json, trace.2.json ...\n"
	"  -v, --verbose      more messages\n"
	"  -h, --help         this text\n"
	"\n"
	"Exit status: 0 when the reports were written, 1 when the file is not a\n"
	"capture this gpuprobed reads or a report could not be written, 2 on bad usage.\n";

static int usage(const char *fmt, const char *arg)
{
	return gp_usage_error("report", fmt, arg);
}

/* Where the reports go and whether a timeline is written beside them. */
struct report_run {
	const char *out_dir;
	__u64 max_events;
	__u64 file_mb; /* --timeline-file-mb */
	bool timeline;
	struct gp_timeline *tl;
};

/* The model made: the output directory prepared, the timeline made its observer. */
static int ready(void *ctx, struct gp_model *m)
{
	struct report_run *run = ctx;

	if (gp_prepare_out_dir(run->out_dir))
		return 1; /* said */
	if (run->timeline)
		run->tl = gp_timeline_session_open(
			run->out_dir,
			(struct gp_timeline_opts){ .max_events = run->max_events,
						   .file_bytes_max = run->file_mb << 20 },
			m);
	return 0;
}

int gp_cmd_report(int argc, char **argv)
{
	enum { OPT_NO_TIMELINE = 256, OPT_TIMELINE_MAX, OPT_TIMELINE_FILE_MB };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "no-timeline", no_argument, NULL, OPT_NO_TIMELINE },
		{ "timeline-max-events", required_argument, NULL, OPT_TIMELINE_MAX },
		{ "timeline-file-mb", required_argument, NULL, OPT_TIMELINE_FILE_MB },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct report_run run = { .out_dir = "./profile_output",
				  .max_events = GP_TIMELINE_DEFAULT_MAX_EVENTS,
				  .file_mb = GP_TIMELINE_DEFAULT_FILE_MB,
				  .timeline = true };
	const struct gp_capture_open_opts opts = {
		.ctx = &run, .ready = ready, .voice = GP_CAPTURE_REPORTING, .finish = true
	};
	const char *path;
	struct gp_capture_model cm;
	char errmsg[4200], *end;
	int c, err, status = GP_EXIT_FAILURE;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				return usage("--output: empty directory name%s", "");
			run.out_dir = optarg;
			break;
		case OPT_NO_TIMELINE:
			run.timeline = false;
			break;
		case OPT_TIMELINE_MAX:
			errno = 0;
			run.max_events = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || *optarg == '-' || !run.max_events)
				return usage("--timeline-max-events: '%s' is not a positive number",
					     optarg);
			break;
		case OPT_TIMELINE_FILE_MB:
			errno = 0;
			run.file_mb = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || *optarg == '-' || !run.file_mb ||
			    run.file_mb > GP_TIMELINE_MAX_FILE_MB)
				return usage("--timeline-file-mb: '%s' is not between 1 and 500",
					     optarg);
			break;
		default: {
			int rc = gp_cmd_common_option(c, "report", usage_text, argv);

			if (rc != GP_CMD_GO_ON)
				return rc;
		}
		}
	}
	if ((c = gp_cmd_one_capture(argc, argv, "report")) != GP_CMD_GO_ON)
		return c;
	path = argv[optind];
	err = gp_capture_open_model(path, &opts, &cm, errmsg, sizeof(errmsg));
	if (err == -ENOMEM)
		gp_err("out of memory");
	if (!err) {
		/* its loss counters before the reports */
		gp_timeline_session_close(run.tl, run.out_dir, run.max_events, cm.model, NULL);
		run.tl = NULL;
		if (gp_write_reports(cm.model, run.out_dir) == 0)
			status = GP_EXIT_OK;
	}
	gp_timeline_session_abort(run.tl, cm.model);
	gp_capture_model_close(&cm);
	return status;
}
