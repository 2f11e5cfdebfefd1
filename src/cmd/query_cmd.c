/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * query_cmd.c — `gpuprobed query CAPTURE_OR_DB 'SQL' [--csv|--json]`: SQL
 * over a capture's export (sql/sql_query.h), made beside the capture on
 * first use and reused while the capture is unchanged.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/commands.h"
#include "log.h"
#include "options/options.h"
#include "sql/sql_query.h"

static const char usage_text[] =
	"Usage: gpuprobed query CAPTURE_OR_DB 'SQL' [--csv | --json] [-v]\n"
	"\n"
	"Run SQL over a capture's records (docs/sql.md) and print the result: an aligned\n"
	"table by default. CAPTURE_OR_DB is a database written by `gpuprobed export`, or a\n"
	"capture: then it is exported on first use to CAPTURE.sqlite beside it and that\n"
	"file is used again while the capture is unchanged. The database is opened\n"
	"read-only. Several statements separated by ';' print one result each.\n"
	"\n"
	"      --csv          comma-separated values, a header line first (RFC 4180)\n"
	"      --json         a JSON array of objects per statement\n"
	"  -v, --verbose      more messages\n"
	"  -h, --help         this text\n"
	"\n"
	"Example:\n"
	"  gpuprobed query profile_output/capture.gpz \\\n"
	"    'SELECT api, count(*), sum(dur_ns) FROM calls_named GROUP BY api'\n"
	"\n"
	"Exit status: 0 on success; 1 when a statement fails (SQLite's own message on\n"
	"stderr) or the capture cannot be read or exported; 2 on bad usage.\n";

static int usage(const char *fmt, const char *arg)
{
	return gp_usage_error("query", fmt, arg);
}

int gp_cmd_query(int argc, char **argv)
{
	enum { OPT_CSV = 256, OPT_JSON };
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, OPT_CSV },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	enum gp_sql_format fmt = GP_SQL_TABLE;
	char *db = NULL;
	const char *path;
	int c, is_db, status;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CSV:
		case OPT_JSON:
			if (fmt != GP_SQL_TABLE)
				return usage("--csv and --json: one output format%s", "");
			fmt = c == OPT_CSV ? GP_SQL_CSV : GP_SQL_JSON;
			break;
		default: {
			int rc = gp_cmd_common_option(c, "query", usage_text, argv);

			if (rc != GP_CMD_GO_ON)
				return rc;
		}
		}
	}
	if (optind >= argc)
		return usage("no capture or database given%s", "");
	if (optind + 1 >= argc)
		return usage("no SQL given%s", "");
	if (optind + 2 < argc)
		return usage("one SQL argument ('%s' is one too many: quote the statement)",
			     argv[optind + 2]);
	path = argv[optind];
	is_db = gp_sql_is_database(path);
	if (is_db < 0) {
		gp_err("%s: %s", path, strerror(-is_db));
		return GP_EXIT_FAILURE;
	}
	if (!is_db && gp_sql_cached_export(path, &db))
		return GP_EXIT_FAILURE;
	status = gp_sql_query(db ? db : path, argv[optind + 1], fmt, stdout) ? GP_EXIT_FAILURE
									     : GP_EXIT_OK;
	free(db);
	return status;
}
