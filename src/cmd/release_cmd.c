/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * release_cmd.c — `gpuprobed --release-holds`: continues the processes left
 * held by gpuprobed instances that are gone, together with their resumers
 * (the registries they pinned in bpffs; src/processes/holds.c). The systemd
 * unit runs it after every stop (ExecStopPost).
 */
#include <string.h>

#include "processes/holds.h"
#include "cmd/cli.h"
#include "cmd/commands.h"

int gp_cmd_release_holds(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--release-holds"))
			return gp_usage_error(NULL,
					      "--release-holds takes no other argument (got '%s')",
					      argv[i]);
	return gp_holds_release_dead() < 0 ? 1 : 0;
}
