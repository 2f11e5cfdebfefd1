/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * export_cmd.c — `gpuprobed export CAPTURE -o FILE.sqlite [--force] [--indices]`: a
 * capture as an SQLite database (sql/sql_export.h, docs/sql.md).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "cmd/cli.h"
#include "cmd/commands.h"
#include "log.h"
#include "options/options.h"
#include "sql/sql_export.h"

static const char usage_text[] =
	"Usage: gpuprobed export CAPTURE -o FILE.sqlite [--force] [--indices] [-v]\n"
	"\n"
	"Write every record of a capture (DIR/capture.gpz, or --record FILE) into an SQLite\n"
	"database: calls, transfers, allocations, NCCL calls, scheduling slices, processes,\n"
	"threads, libraries, kernels, streams, events, stacks and their symbolized frames,\n"
	"and views that reproduce report.json's tables (api_summary is cuda_api[]). The\n"
	"schema is docs/sql.md. Query it with `gpuprobed query` or sqlite3.\n"
	"A capture cut short or with corrupt chunks exports what it holds; what was\n"
	"skipped is said on stderr and in the meta table.\n"
	"\n"
	"  -o, --output FILE  the database to write (required)\n"
	"      --force        replace FILE if it exists\n"
	"      --indices      index calls by time, process and thread, API, kernel and outer\n"
	"                     call (~0.6 s a million calls in all; `gpuprobed query` does)\n"
	"  -v, --verbose      more messages\n"
	"  -h, --help         this text\n"
	"\n"
	"Exit status: 0 when the database was written, 1 when the capture cannot be read,\n"
	"FILE exists (without --force) or cannot be written, 2 on bad usage.\n";

static int usage(const char *fmt, const char *arg)
{
	return gp_usage_error("export", fmt, arg);
}

int gp_cmd_export(int argc, char **argv)
{
	enum { OPT_FORCE = 256, OPT_INDICES };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "indices", no_argument, NULL, OPT_INDICES },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct gp_sql_export_stats st;
	struct gp_sql_export_opts o = { 0 };
	const char *out = NULL;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				return usage("--output: empty file name%s", "");
			out = optarg;
			break;
		case OPT_FORCE:
			o.force = true;
			break;
		case OPT_INDICES:
			o.indices = true;
			break;
		default: {
			int rc = gp_cmd_common_option(c, "export", usage_text, argv);

			if (rc != GP_CMD_GO_ON)
				return rc;
		}
		}
	}
	if ((c = gp_cmd_one_capture(argc, argv, "export")) != GP_CMD_GO_ON)
		return c;
	if (!out)
		return usage("no output given (-o FILE.sqlite)%s", "");
	if (gp_sql_export(argv[optind], out, &o, &st))
		return GP_EXIT_FAILURE;
	gp_info("%s: %llu operations, %llu calls exported to %s", argv[optind],
		(unsigned long long)st.ops, (unsigned long long)st.calls, out);
	return GP_EXIT_OK;
}
