/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cli.c — parse and validate gpuprobed's command line (see cli.h): its options and --help are
 * the rows of options/option_table.h; the targets, and how options go together, are said here.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "log.h"
#include "options/option_spec.h"

/* --help: the rows of option_table.h in their sections, between these. */
static const char usage_head[] =
	"Usage: gpuprobed [OPTIONS] --pid PID [--pid PID...]\n"
	"       gpuprobed [OPTIONS] --name NAME [--name NAME...]\n"
	"       gpuprobed [OPTIONS] --all\n"
	"       gpuprobed [OPTIONS] --container ID|NAME [--container ID|NAME...]\n"
	"       gpuprobed [OPTIONS] -- COMMAND [ARGS...]\n"
	"       gpuprobed --daemon [--config FILE] [--foreground] [-v]\n"
	"       gpuprobed report CAPTURE [-o DIR]\n"
	"       gpuprobed export CAPTURE -o FILE.sqlite [--force] [--indices]\n"
	"       gpuprobed query CAPTURE_OR_DB 'SQL' [--csv | --json]\n"
	"       gpuprobed merge CAPTURE... [-o DIR]\n"
	"       gpuprobed replay CAPTURE [--pid PID] [--speed X] [--what-if WHAT[,WHAT...]]\n"
	"                        [--kernel-times FILE] [--dry-run] [-o DIR]\n"
	"       gpuprobed --release-holds\n"
	"\n"
	"Trace the CUDA runtime, CUDA driver and NCCL calls of processes with eBPF\n"
	"uprobes, without touching them, and write report.md and report.json into the\n"
	"output directory when every target has exited, --duration has passed, or on\n"
	"Ctrl-C, with the call stacks that launch, copy, allocate and wait (flame graph,\n"
	"folded stacks, speedscope) and a timeline of every call (trace.json, for\n"
	"Perfetto UI). report.md opens with recommendations ranked\n"
	"by the host time a fix would save (pageable or synchronous copies, waits, launch\n"
	"overhead, allocation churn, ...; docs/recommendations.md). Every copy of\n"
	"libcudart, libcuda and libnccl a target maps (any\n"
	"version, any directory, dlopen'ed later, or the runtime linked statically into\n"
	"the program) is found and probed before its first call. A call made inside\n"
	"another traced call (the runtime going down to the driver) is counted once.\n"
	"\n"
	"Targets (one kind per session):\n";

static const char usage_command[] =
	"  -- COMMAND [ARGS...]   start COMMAND (as the invoking user under sudo),\n"
	"                         traced from its first instruction with everything it\n"
	"                         forks and execs; stop when the last of them exits and\n"
	"                         exit with COMMAND's status\n";

static const char usage_tail[] =
	"\n"
	"'gpuprobed report CAPTURE' rebuilds every output of a session from its capture\n"
	"(report.json equal to the live one but for \"source\"), into -o DIR.\n"
	"'gpuprobed export' writes it as an SQLite database, 'gpuprobed query' runs SQL\n"
	"over it (docs/sql.md; each has --help).\n"
	"'gpuprobed merge CAPTURE...' writes one report of several sessions' captures (one\n"
	"per node): every process with its host, NCCL communicators joined across them,\n"
	"their clocks aligned (report.json \"merge\").\n"
	"\n"
	"Needs root (CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE). Exit status: 0 on success,\n"
	"1 on a runtime failure, 2 on bad usage; with -- COMMAND, the command's status\n"
	"(127: not found, 126: not executable). See gpuprobed(8) and docs/report-format.md.\n";

int gp_usage_error(const char *subcommand, const char *fmt, const char *arg)
{
	const char *sp = subcommand ? " " : "", *sub = subcommand ? subcommand : "";

	fprintf(stderr, "gpuprobed%s%s: ", sp, sub);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'gpuprobed%s%s --help' for more information.\n", sp, sub);
	return GP_EXIT_USAGE;
}

static int usage_error(const char *fmt, const char *arg)
{
	return gp_usage_error(NULL, fmt, arg);
}

static bool parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

static char *join_argv(int argc, char **argv)
{
	size_t len = 1;
	char *s;

	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	s = calloc(1, len);
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

/* ---- --help ------------------------------------------------------------------------- */

#define HELP_COLUMN 25 /* where the help of an option starts */

/* "  -d, --duration SEC     stop after...": a flag too long for the column has a line of its own. */
static void print_help_row(FILE *f, const struct gp_option *opt)
{
	int n = opt->short_flag ? fprintf(f, "  -%c, --%s", opt->short_flag, opt->flag)
				: fprintf(f, "      --%s", opt->flag);

	if (opt->meta)
		n += fprintf(f, " %s", opt->meta);
	if (n < HELP_COLUMN)
		fprintf(f, "%*s", HELP_COLUMN - n, "");
	else
		fprintf(f, "\n%*s", HELP_COLUMN, "");
	for (const char *p = opt->help; *p; p++) {
		fputc(*p, f);
		if (*p == '\n')
			fprintf(f, "%*s", HELP_COLUMN, "");
	}
	fputc('\n', f);
}

static void print_help_rows(FILE *f, enum gp_option_scope scope, enum gp_option_scope also)
{
	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];

		if (opt->flag && opt->help && (opt->scope == scope || opt->scope == also))
			print_help_row(f, opt);
	}
}

static void print_help(FILE *f)
{
	fputs(usage_head, f);
	print_help_rows(f, GP_SCOPE_TARGET, GP_SCOPE_TARGET);
	fputs(usage_command, f);
	fputs("\nOptions:\n", f);
	print_help_rows(f, GP_SCOPE_SESSION, GP_SCOPE_ANY);
	fputs("\nAlways on (docs/daemon.md):\n", f);
	print_help_rows(f, GP_SCOPE_DAEMON, GP_SCOPE_DAEMON);
	fputs(usage_tail, f);
}

/* ---- one option --------------------------------------------------------------------- */

/* getopt_long's value of a row without a short flag */
#define GETOPT_ROW 256

static void getopt_tables(struct option *longopts, char *shortopts)
{
	size_t n = 0;

	/* '+': options end at the command (its own options are its own); ':': a missing value is ours */
	*shortopts++ = '+';
	*shortopts++ = ':';
	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];

		if (!opt->flag || opt->kind == GP_KIND_COMMAND) /* main.c runs --release-holds */
			continue;
		longopts[n++] = (struct option){
			opt->flag,
			opt->meta ? required_argument : no_argument,
			NULL,
			opt->short_flag ? opt->short_flag : GETOPT_ROW + (int)i,
		};
		if (opt->short_flag) {
			*shortopts++ = opt->short_flag;
			if (opt->meta)
				*shortopts++ = ':';
		}
	}
	longopts[n] = (struct option){ 0 };
	*shortopts = '\0';
}

static const struct gp_option *row_of(int c)
{
	if (c >= GETOPT_ROW && c < GETOPT_ROW + GP_OPT_COUNT)
		return &gp_option_table[c - GETOPT_ROW];
	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];

		if (opt->short_flag == c && opt->kind != GP_KIND_COMMAND)
			return opt;
	}
	return NULL; /* '?': not an option */
}

/* --pid, --name, --container: each checked, none twice, at most so many. */
static int add_target(const struct gp_option *opt, const char *arg, struct gp_options *o)
{
	unsigned long v;

	switch (opt - gp_option_table) {
	case GP_OPT_name:
		if (!*arg || strlen(arg) >= 64 || strchr(arg, '/'))
			return usage_error("--name: '%s' is not a process or file name (1 to 63 "
					   "characters, no '/')",
					   arg);
		if (o->nnames == GP_MAX_NAME_ARGS)
			return usage_error("--name: more than %s names", "8");
		o->names[o->nnames++] = arg;
		return GP_CMD_GO_ON;
	case GP_OPT_container:
		if (!*arg || strlen(arg) > 255 || strchr(arg, '/'))
			return usage_error(
				"--container: '%s' is not a container id or name (1 to 255 "
				"characters, no '/')",
				arg);
		if (o->ncontainers == GP_MAX_NAME_ARGS)
			return usage_error("--container: more than %s containers", "8");
		o->containers[o->ncontainers++] = arg;
		return GP_CMD_GO_ON;
	default: /* --pid */
		if (!parse_uint(arg, INT_MAX, &v) || v == 0)
			return usage_error("--pid: '%s' is not a process id", arg);
		if (o->npids == GP_MAX_PIDS)
			return usage_error("--pid: more than %s processes", "64");
		for (int i = 0; i < o->npids; i++)
			if (o->pids[i] == (pid_t)v)
				return usage_error("--pid %s given twice", arg);
		o->pids[o->npids++] = (pid_t)v;
		return GP_CMD_GO_ON;
	}
}

/* "--poll-ms: '0' is not between 1 and 1000"; a string's "--output: empty directory name". */
static int value_error(const struct gp_option *opt, const char *arg)
{
	bool string = opt->kind == GP_KIND_STRING || opt->kind == GP_KIND_PATH;
	char fmt[256];

	snprintf(fmt, sizeof(fmt), string ? "--%s: %s%%s" : "--%s: '%%s' %s", opt->flag,
		 opt->cli_why);
	return usage_error(fmt, string ? "" : arg);
}

static int take_option(const struct gp_option *opt, const char *arg, struct gp_options *o)
{
	void *field = gp_option_field(opt, o);

	switch (opt->kind) {
	case GP_KIND_TARGET:
		return add_target(opt, arg, o);
	case GP_KIND_HELP:
		print_help(stdout);
		return GP_EXIT_OK;
	case GP_KIND_VERSION:
		printf("gpuprobed %s\n", GP_VERSION);
		return GP_EXIT_OK;
	default:
		break;
	}
	if (!opt->meta) {
		gp_option_switch(opt, field);
		return GP_CMD_GO_ON;
	}
	if (gp_option_parse(opt, arg, field))
		return value_error(opt, arg);
	if (opt == &gp_option_table[GP_OPT_record]) /* --no-record --record FILE: records */
		o->record = true;
	return GP_CMD_GO_ON;
}

/* ---- the options together ----------------------------------------------------------- */

static int target_kinds(const struct gp_options *o)
{
	return (o->npids > 0) + (o->nnames > 0) + o->all + (o->ncontainers > 0) +
	       (o->command != NULL);
}

/* The first option of this scope that is not at its default, or NULL. */
static const struct gp_option *
first_set(const struct gp_options *o, const struct gp_options *defaults, enum gp_option_scope scope)
{
	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];

		if (opt->scope == scope && !gp_option_same(opt, o, defaults))
			return opt;
	}
	return NULL;
}

static int check_options(const struct gp_options *o, const struct gp_options *defaults)
{
	const struct gp_option *opt;

	if (!o->record && o->record_path)
		return usage_error("--record and --no-record contradict each other%s", "");
	if (!o->record && o->sqlite_path)
		return usage_error("--sqlite exports the capture: it contradicts --no-record%s",
				   "");
	if (o->timeline_sched && !o->timeline)
		return usage_error("--timeline-sched and --no-timeline contradict each other%s",
				   "");
	if (o->daemon) {
		/* everything else comes from the configuration file */
		if (target_kinds(o))
			return usage_error("--daemon traces every CUDA process: give no target%s",
					   "");
		if (first_set(o, defaults, GP_SCOPE_SESSION))
			return usage_error(
				"--daemon takes its settings from the configuration file (--config)%s",
				"");
		return GP_CMD_GO_ON;
	}
	if ((opt = first_set(o, defaults, GP_SCOPE_DAEMON)))
		return usage_error("--%s goes with --daemon", opt->flag);
	if (target_kinds(o) > 1)
		return usage_error(
			"give one kind of target: --pid, --name, --all, --container or -- COMMAND%s",
			"");
	return GP_CMD_GO_ON;
}

static int choose_mode(struct gp_options *o)
{
	if (o->daemon || o->all)
		o->mode = GP_MODE_ALL;
	else if (o->npids)
		o->mode = GP_MODE_PID;
	else if (o->nnames)
		o->mode = GP_MODE_NAME;
	else if (o->ncontainers)
		o->mode = GP_MODE_CONTAINER;
	else if (o->command)
		o->mode = GP_MODE_LAUNCH;
	else
		return usage_error(
			"no target: give --pid PID, --name NAME, --all, --container ID|NAME or "
			"-- COMMAND%s",
			"");
	return GP_CMD_GO_ON;
}

int gp_cli_parse(int argc, char **argv, struct gp_options *o)
{
	struct option longopts[GP_OPT_COUNT + 1];
	char shortopts[2 * GP_OPT_COUNT + 3];
	struct gp_options defaults;
	const struct gp_option *opt;
	int c, ret;

	gp_options_defaults(o, false);
	defaults = *o;
	getopt_tables(longopts, shortopts);
	opterr = 0; /* our own messages, one line each */
	optind = 1;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == ':')
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		if (!(opt = row_of(c)))
			return usage_error("unknown option '%s'", argv[optind - 1]);
		if ((ret = take_option(opt, optarg, o)) != GP_CMD_GO_ON)
			return ret;
	}
	if (optind < argc)
		o->command = &argv[optind];
	if ((ret = check_options(o, &defaults)) != GP_CMD_GO_ON)
		return ret;
	if ((ret = choose_mode(o)) != GP_CMD_GO_ON)
		return ret;
	o->command_line = join_argv(argc, argv);
	if (o->command)
		o->command_text = join_argv(argc - optind, o->command);
	if (!o->command_line || (o->command && !o->command_text)) {
		gp_err("out of memory");
		return GP_EXIT_FAILURE;
	}
	return GP_CMD_GO_ON;
}

void gp_cli_release(struct gp_options *o)
{
	free(o->command_line);
	free(o->command_text);
	o->command_line = o->command_text = NULL;
}

int gp_cmd_common_option(int c, const char *subcommand, const char *help, char **argv)
{
	switch (c) {
	case 'v':
		gp_log_level = gp_log_level < LOG_INFO ? LOG_INFO : LOG_DEBUG;
		return GP_CMD_GO_ON;
	case 'h':
		fputs(help, stdout);
		return GP_EXIT_OK;
	case ':':
		return gp_usage_error(subcommand, "option '%s' needs a value", argv[optind - 1]);
	default:
		return gp_usage_error(subcommand, "unknown option '%s'", argv[optind - 1]);
	}
}

int gp_cmd_one_capture(int argc, char **argv, const char *subcommand)
{
	if (optind >= argc)
		return gp_usage_error(subcommand, "no capture file given%s", "");
	if (optind + 1 < argc)
		return gp_usage_error(subcommand,
				      "one capture file at a time ('%s' is one too many)",
				      argv[optind + 1]);
	return GP_CMD_GO_ON;
}
