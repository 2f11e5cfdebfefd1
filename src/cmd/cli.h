/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cli.h — gpuprobed's command line, parsed and validated in one place; the usage error every command gives. */
#ifndef GP_CLI_H
#define GP_CLI_H

#include "options/options.h"

/*
 * One line naming the problem and a pointer to the help of subcommand (NULL:
 * gpuprobed's own), on stderr. Returns GP_EXIT_USAGE. fmt has one %s: arg.
 */
int gp_usage_error(const char *subcommand, const char *fmt, const char *arg);

/* What the subcommands' helpers return to let the caller go on. */
#define GP_CMD_GO_ON (-1)

/*
 * An option every subcommand takes alike, from its getopt_long loop ("...vh" with a leading ':'):
 * -v (more logging: GP_CMD_GO_ON), -h (help on stdout: GP_EXIT_OK), a missing value or an
 * unknown option (the usage error).
 */
int gp_cmd_common_option(int c, const char *subcommand, const char *help, char **argv);

/* After the options: exactly one operand, the capture file (GP_CMD_GO_ON), or the usage error. */
int gp_cmd_one_capture(int argc, char **argv, const char *subcommand);

/*
 * Parses argv into o. Returns -1 to go on, or an exit status: 0 after
 * --help/--version, GP_EXIT_USAGE after printing one message on bad usage.
 */
int gp_cli_parse(int argc, char **argv, struct gp_options *o);
void gp_cli_release(struct gp_options *o);

#endif
