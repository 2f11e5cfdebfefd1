/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * commands.h — gpuprobed's subcommands, each a thin file of src/cmd/ over the
 * services (main.c dispatches): argv[0] is the subcommand's name; each
 * returns the exit status (options.h: 0, 1, 2 on bad usage).
 */
#ifndef GP_CMD_COMMANDS_H
#define GP_CMD_COMMANDS_H

/* `gpuprobed report CAPTURE [-o DIR]`: every output of a session rebuilt from its capture. */
int gp_cmd_report(int argc, char **argv);

/* `gpuprobed export CAPTURE -o FILE.sqlite`: a capture as an SQLite database (docs/sql.md). */
int gp_cmd_export(int argc, char **argv);

/* `gpuprobed query CAPTURE_OR_DB 'SQL'`: SQL over a capture's export, printed. */
int gp_cmd_query(int argc, char **argv);
/* `gpuprobed merge CAPTURE... [-o DIR]`: the captures of several sessions (nodes) as one report. */
int gp_cmd_merge(int argc, char **argv);

/* `gpuprobed replay CAPTURE ...`: the capture's GPU work re-issued, what-if changes measured. */
int gp_cmd_replay(int argc, char **argv);

/*
 * `gpuprobed --release-holds` (argv: the whole command line): continues what
 * gpuprobed instances killed with their resumers left held (their pins).
 */
int gp_cmd_release_holds(int argc, char **argv);

#endif
