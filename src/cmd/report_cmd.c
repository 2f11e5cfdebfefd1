/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_cmd.c — `gpuprobed report CAPTURE [-o DIR]`: loads the capture into
 * a fresh model (capture_load.h) and writes every report from it, exactly
 * as the live session wrote them; what the capture lacks (cut, corrupt
 * chunks) is said on stderr and in the reports' "source".
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "capture/capture_load.h"
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
	"  -v, --verbose      more messages\n"
	"  -h, --help         this text\n"
	"\n"
	"Exit status: 0 when the reports were written, 1 when the file is not a\n"
	"capture this gpuprobed reads or a report could not be written, 2 on bad usage.\n";

static int usage(const char *fmt, const char *arg)
{
	return gp_usage_error("report", fmt, arg);
}

int gp_cmd_report(int argc, char **argv)
{
	enum { OPT_NO_TIMELINE = 256, OPT_TIMELINE_MAX };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "no-timeline", no_argument, NULL, OPT_NO_TIMELINE },
		{ "timeline-max-events", required_argument, NULL, OPT_TIMELINE_MAX },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *out_dir = "./profile_output", *path;
	struct gp_capture_reader *r = NULL;
	struct gp_answers *as = NULL;
	struct gp_model *m = NULL;
	struct gp_resolver resolver;
	__u64 max_events = GP_TIMELINE_DEFAULT_MAX_EVENTS;
	struct gp_timeline *tl = NULL;
	bool timeline = true;
	char errmsg[4200], *end;
	int c, status = GP_EXIT_FAILURE;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				return usage("--output: empty directory name%s", "");
			out_dir = optarg;
			break;
		case OPT_NO_TIMELINE:
			timeline = false;
			break;
		case OPT_TIMELINE_MAX:
			errno = 0;
			max_events = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || *optarg == '-' || !max_events)
				return usage("--timeline-max-events: '%s' is not a positive number", optarg);
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
	r = gp_capture_open(path, errmsg, sizeof(errmsg));
	if (!r) {
		gp_err("%s", errmsg);
		return GP_EXIT_FAILURE;
	}
	if (gp_prepare_out_dir(out_dir))
		goto out;
	as = gp_answers_new();
	resolver = gp_answers_resolver(as);
	m = as ? gp_model_new(&resolver) : NULL;
	if (!m) {
		gp_err("out of memory");
		goto out;
	}
	if (timeline)
		tl = gp_timeline_session_open(out_dir, max_events, m);
	gp_capture_load_said(r, path, m, as);
	gp_timeline_session_close(tl, out_dir, max_events, m, NULL); /* its loss counters before the reports */
	tl = NULL;
	if (gp_write_reports(m, out_dir) == 0)
		status = GP_EXIT_OK;
out:
	gp_timeline_session_abort(tl, m);
	gp_model_free(m);
	gp_answers_free(as);
	gp_capture_close(r);
	return status;
}
