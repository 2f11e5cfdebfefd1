/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* main.c — gpuprobed's entry point: parse the command line, run the session (or the daemon). */
#include <string.h>

#include "cmd/commands.h"
#include "cmd/cli.h"
#include "daemon/daemon.h"
#include "log.h"
#include "session/session.h"

int main(int argc, char **argv)
{
	struct gp_options opt;
	int status;

	if (argc > 1 && !strcmp(argv[1], "report"))
		return gp_cmd_report(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "export"))
		return gp_cmd_export(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "query"))
		return gp_cmd_query(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "merge"))
		return gp_cmd_merge(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "replay"))
		return gp_cmd_replay(argc - 1, argv + 1);
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--release-holds"))
			return gp_cmd_release_holds(argc, argv);
	status = gp_cli_parse(argc, argv, &opt);

	if (status >= 0)
		return status;
	if (opt.verbosity >= 2)
		gp_log_level = LOG_DEBUG;
	else if (opt.verbosity == 1)
		gp_log_level = LOG_INFO;
	status = opt.daemon ? gp_daemon_run(&opt) : gp_session_run(&opt);
	gp_cli_release(&opt);
	return status;
}
