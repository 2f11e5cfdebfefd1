/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cli.c — parse and validate gpuprobed's command line (see cli.h). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "log.h"

static const char usage_text[] =
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
	"Perfetto UI and chrome://tracing). report.md opens with recommendations ranked\n"
	"by the host time a fix would save (pageable or synchronous copies, waits, launch\n"
	"overhead, allocation churn, ...; docs/recommendations.md). Every copy of\n"
	"libcudart, libcuda and libnccl a target maps (any\n"
	"version, any directory, dlopen'ed later, or the runtime linked statically into\n"
	"the program) is found and probed before its first call. A call made inside\n"
	"another traced call (the runtime going down to the driver) is counted once.\n"
	"\n"
	"Targets (one kind per session):\n"
	"  -p, --pid PID          trace this running process (repeatable, up to 64)\n"
	"  -n, --name NAME        trace every process named NAME (its comm, or its\n"
	"                         executable's file name), running now or started\n"
	"                         later, and what they fork (repeatable, up to 8)\n"
	"  -a, --all              trace every process that uses CUDA, now and later\n"
	"                         (the host's and every container's)\n"
	"  -c, --container ID|NAME\n"
	"                         trace every process of this container that uses\n"
	"                         CUDA, now and later (its id, an id prefix of 12 or\n"
	"                         more hex digits, or its name; repeatable, up to 8)\n"
	"  -- COMMAND [ARGS...]   start COMMAND (as the invoking user under sudo),\n"
	"                         traced from its first instruction with everything it\n"
	"                         forks and execs; stop when the last of them exits and\n"
	"                         exit with COMMAND's status\n"
	"\n"
	"Options:\n"
	"  -d, --duration SEC     stop after SEC seconds (decimals allowed)\n"
	"  -o, --output DIR       write reports into DIR (default ./profile_output)\n"
	"      --ringbuf-mb N     ring buffer size in MiB, a power of two (default 16)\n"
	"      --poll-ms N        drain the ring buffer every N ms (default 10)\n"
	"      --hold-max-ms N    continue a process stopped until its new file is\n"
	"                         probed after N ms at most, 1 to 60000 (default 2000);\n"
	"                         counted (drops.hold_timeout)\n"
	"      --release-holds    only continue the processes left stopped by gpuprobed\n"
	"                         instances killed together with their resumers (their\n"
	"                         registries pinned in /sys/fs/bpf/gpuprobed); one line\n"
	"                         per process on stderr\n"
	"      --no-stacks        do not capture call stacks (the cheapest mode: counts,\n"
	"                         times and sizes only; no stacks.folded, flamegraph.svg,\n"
	"                         speedscope.json)\n"
	"      --max-stacks N     keep at most N distinct call stacks (default 1000000);\n"
	"                         calls beyond are counted (drops.stacks_over_limit)\n"
	"      --unwind-mb N      kernel memory for unwind tables, MiB (default 64): stacks\n"
	"                         are walked through code built without frame pointers\n"
	"                         by its .eh_frame; 0: by frame pointers only\n"
	"      --no-python        do not put Python frames (CPython 3.10 to 3.13) into\n"
	"                         call stacks\n"
	"      --record FILE      write the capture (every record, self-contained, for\n"
	"                         'gpuprobed report' on any machine) to FILE (default\n"
	"                         DIR/capture.gpz)\n"
	"      --no-record        write no capture\n"
	"      --sqlite FILE      at the end, export the capture into the SQLite database\n"
	"                         FILE (replaced if it exists; docs/sql.md)\n"
	"      --no-timeline      do not write trace.json (the timeline for Perfetto UI and\n"
	"                         chrome://tracing: every call, stream work, flows, counters)\n"
	"      --aggregate        count hot calls in the kernel (no stacks nor timeline)\n"
	"      --timeline-max-events N\n"
	"                         write at most N API calls into trace.json (default\n"
	"                         5000000); calls beyond are counted\n"
	"                         (drops.timeline_left_out)\n"
	"      --timeline-sched   also put each traced thread's scheduling into trace.json:\n"
	"                         on-CPU slices (CPU, page faults taken, why it left),\n"
	"                         off-CPU gaps, an on-CPU threads counter per process (a\n"
	"                         record per context switch: large)\n"
	"      --nvml-interval MS sample the GPUs through NVML every MS ms, 10 to 60000\n"
	"                         (default 100): utilization, memory, clocks, power,\n"
	"                         temperature, PCIe, throttling, per-process memory and\n"
	"                         utilization (report.json gpus[]; docs/report-format.md)\n"
	"      --nvml-lib PATH    the NVML library to load (default libnvidia-ml.so.1,\n"
	"                         found as the loader finds it)\n"
	"      --no-nvml          do not load NVML\n"
	"      --stall-timeout SEC\n"
	"                         when ranks of an NCCL communicator have waited on a\n"
	"                         collective for SEC seconds (decimals allowed; default\n"
	"                         60, 0: off) while a rank traced here has not entered\n"
	"                         it, say which rank and what it is doing (one line on\n"
	"                         stderr; report.json \"stalls\")\n"
	"      --no-uprobe-multi  one perf-event link per probed function, as on kernels\n"
	"                         before 6.6 (slower to attach and to detach)\n"
	"  -v, --verbose          more messages (-vv: libbpf's too)\n"
	"  -h, --help             this text\n"
	"  -V, --version          print the version\n"
	"\n"
	"Always on (docs/daemon.md):\n"
	"      --daemon           trace every CUDA process until SIGTERM, serve Prometheus\n"
	"                         metrics (default http://127.0.0.1:9400/metrics), write\n"
	"                         periodic reports into the state directory; SIGHUP\n"
	"                         re-reads the configuration (a bad file is refused and\n"
	"                         the running one kept)\n"
	"      --config FILE      the daemon's configuration (default\n"
	"                         /etc/gpuprobed/gpuprobed.conf; defaults when it is\n"
	"                         missing); the daemon takes no other tracing option\n"
	"      --foreground       plain log lines for a person (under systemd, lines carry\n"
	"                         syslog priorities for the journal)\n"
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

int gp_cli_parse(int argc, char **argv, struct gp_options *o)
{
	enum { OPT_RINGBUF = 256, OPT_POLL, OPT_NO_MULTI, OPT_NO_STACKS, OPT_MAX_STACKS, OPT_RECORD, OPT_NO_RECORD, OPT_SQLITE,
	       OPT_NO_TIMELINE, OPT_TIMELINE_MAX, OPT_TIMELINE_SCHED, OPT_AGGREGATE, OPT_DAEMON, OPT_CONFIG,
	       OPT_FOREGROUND, OPT_UNWIND_MB, OPT_NO_PYTHON, OPT_HOLD_MAX, OPT_NVML_INTERVAL, OPT_NVML_LIB,
	       OPT_NO_NVML, OPT_STALL_TIMEOUT };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "name", required_argument, NULL, 'n' },
		{ "all", no_argument, NULL, 'a' },
		{ "container", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "ringbuf-mb", required_argument, NULL, OPT_RINGBUF },
		{ "poll-ms", required_argument, NULL, OPT_POLL },
		{ "hold-max-ms", required_argument, NULL, OPT_HOLD_MAX },
		{ "stall-timeout", required_argument, NULL, OPT_STALL_TIMEOUT },
		{ "no-uprobe-multi", no_argument, NULL, OPT_NO_MULTI },
		{ "no-stacks", no_argument, NULL, OPT_NO_STACKS },
		{ "max-stacks", required_argument, NULL, OPT_MAX_STACKS },
		{ "unwind-mb", required_argument, NULL, OPT_UNWIND_MB },
		{ "no-python", no_argument, NULL, OPT_NO_PYTHON },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ "no-record", no_argument, NULL, OPT_NO_RECORD },
		{ "sqlite", required_argument, NULL, OPT_SQLITE },
		{ "no-timeline", no_argument, NULL, OPT_NO_TIMELINE },
		{ "timeline-max-events", required_argument, NULL, OPT_TIMELINE_MAX },
		{ "timeline-sched", no_argument, NULL, OPT_TIMELINE_SCHED },
		{ "aggregate", no_argument, NULL, OPT_AGGREGATE },
		{ "daemon", no_argument, NULL, OPT_DAEMON },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "foreground", no_argument, NULL, OPT_FOREGROUND },
		{ "nvml-interval", required_argument, NULL, OPT_NVML_INTERVAL },
		{ "nvml-lib", required_argument, NULL, OPT_NVML_LIB },
		{ "no-nvml", no_argument, NULL, OPT_NO_NVML },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	unsigned long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->out_dir = "./profile_output";
	o->ringbuf_mb = 16;
	o->poll_ms = 10;
	o->hold_max_ms = GP_DEFAULT_HOLD_MAX_MS;
	o->stall_timeout_s = GP_DEFAULT_STALL_TIMEOUT_S;
	o->stacks = true;
	o->max_stacks = GP_DEFAULT_MAX_STACKS;
	o->unwind_mb = GP_DEFAULT_UNWIND_MB;
	o->python = true;
	o->record = true;
	o->timeline = true;
	o->timeline_max_events = GP_DEFAULT_TIMELINE_MAX_EVENTS;
	o->nvml_interval_ms = GP_DEFAULT_NVML_MS;
	opterr = 0; /* our own messages, one line each */
	optind = 1;
	/* '+': options end at the command (its own options are its own) */
	while ((c = getopt_long(argc, argv, "+:p:n:ac:d:o:vhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!*optarg || strlen(optarg) >= 64 || strchr(optarg, '/'))
				return usage_error("--name: '%s' is not a process or file name (1 to 63 "
						   "characters, no '/')", optarg);
			if (o->nnames == GP_MAX_NAME_ARGS)
				return usage_error("--name: more than %s names", "8");
			o->names[o->nnames++] = optarg;
			break;
		case 'a':
			o->all = true;
			break;
		case 'c':
			if (!*optarg || strlen(optarg) > 255 || strchr(optarg, '/'))
				return usage_error("--container: '%s' is not a container id or name (1 to 255 "
						   "characters, no '/')", optarg);
			if (o->ncontainers == GP_MAX_NAME_ARGS)
				return usage_error("--container: more than %s containers", "8");
			o->containers[o->ncontainers++] = optarg;
			break;
		case 'p':
			if (!parse_uint(optarg, INT_MAX, &v) || v == 0)
				return usage_error("--pid: '%s' is not a process id", optarg);
			if (o->npids == GP_MAX_PIDS)
				return usage_error("--pid: more than %s processes", "64");
			for (int i = 0; i < o->npids; i++)
				if (o->pids[i] == (pid_t)v)
					return usage_error("--pid %s given twice", optarg);
			o->pids[o->npids++] = (pid_t)v;
			break;
		case 'd': {
			char *end;
			double d;

			errno = 0;
			d = strtod(optarg, &end);
			if (errno || *end || !*optarg || !isfinite(d) || d <= 0 || d > 1e9)
				return usage_error("--duration: '%s' is not a positive number of seconds",
						   optarg);
			o->duration_s = d;
			break;
		}
		case 'o':
			if (!*optarg)
				return usage_error("--output: empty directory name%s", "");
			o->out_dir = optarg;
			break;
		case OPT_RINGBUF:
			if (!parse_uint(optarg, 4096, &v) || v == 0 || (v & (v - 1)))
				return usage_error("--ringbuf-mb: '%s' is not a power of two between 1 and 4096",
						   optarg);
			o->ringbuf_mb = (unsigned)v;
			break;
		case OPT_POLL:
			if (!parse_uint(optarg, 1000, &v) || v == 0)
				return usage_error("--poll-ms: '%s' is not between 1 and 1000", optarg);
			o->poll_ms = (unsigned)v;
			break;
		case OPT_HOLD_MAX:
			if (!parse_uint(optarg, 60000, &v) || v == 0)
				return usage_error("--hold-max-ms: '%s' is not a number of milliseconds between 1 and 60000",
						   optarg);
			o->hold_max_ms = (unsigned)v;
			break;
		case OPT_STALL_TIMEOUT:
			if (gp_parse_stall_timeout(optarg, &o->stall_timeout_s))
				return usage_error("--stall-timeout: '%s' is not a number of seconds between 0 (off) "
						   "and 86400", optarg);
			break;
		case OPT_NO_MULTI:
			o->no_uprobe_multi = true;
			break;
		case OPT_NO_STACKS:
			o->stacks = false;
			break;
		case OPT_MAX_STACKS:
			if (!parse_uint(optarg, 100000000, &v) || v == 0)
				return usage_error("--max-stacks: '%s' is not between 1 and 100000000", optarg);
			o->max_stacks = (unsigned)v;
			break;
		case OPT_UNWIND_MB:
			if (!parse_uint(optarg, 4096, &v))
				return usage_error("--unwind-mb: '%s' is not between 0 and 4096", optarg);
			o->unwind_mb = (unsigned)v;
			break;
		case OPT_NO_PYTHON:
			o->python = false;
			break;
		case OPT_RECORD:
			if (!*optarg)
				return usage_error("--record: empty file name%s", "");
			o->record_path = optarg;
			o->record = true;
			break;
		case OPT_NO_RECORD:
			o->record = false;
			break;
		case OPT_SQLITE:
			if (!*optarg)
				return usage_error("--sqlite: empty file name%s", "");
			o->sqlite_path = optarg;
			break;
		case OPT_NO_TIMELINE:
			o->timeline = false;
			break;
		case OPT_TIMELINE_MAX:
			if (!parse_uint(optarg, 1000000000000UL, &v) || v == 0)
				return usage_error("--timeline-max-events: '%s' is not between 1 and 1000000000000",
						   optarg);
			o->timeline_max_events = v;
			break;
		case OPT_TIMELINE_SCHED:
			o->timeline_sched = true;
			break;
		case OPT_AGGREGATE:
			o->aggregate = true;
			break;
		case OPT_DAEMON:
			o->daemon = true;
			break;
		case OPT_CONFIG:
			if (!*optarg)
				return usage_error("--config: empty file name%s", "");
			o->config_path = optarg;
			break;
		case OPT_FOREGROUND:
			o->foreground = true;
			break;
		case OPT_NVML_INTERVAL:
			if (!parse_uint(optarg, 60000, &v) || v < 10)
				return usage_error("--nvml-interval: '%s' is not a number of milliseconds between 10 and 60000",
						   optarg);
			o->nvml_interval_ms = (unsigned)v;
			break;
		case OPT_NVML_LIB:
			if (!*optarg)
				return usage_error("--nvml-lib: empty file name%s", "");
			o->nvml_lib = optarg;
			break;
		case OPT_NO_NVML:
			o->nvml_interval_ms = 0;
			break;
		case 'v':
			o->verbosity++;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return GP_EXIT_OK;
		case 'V':
			printf("gpuprobed %s\n", GP_VERSION);
			return GP_EXIT_OK;
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->command = &argv[optind];
	if (!o->record && o->record_path)
		return usage_error("--record and --no-record contradict each other%s", "");
	if (!o->record && o->sqlite_path)
		return usage_error("--sqlite exports the capture: it contradicts --no-record%s", "");
	if (o->timeline_sched && !o->timeline)
		return usage_error("--timeline-sched and --no-timeline contradict each other%s", "");
	if (o->daemon) {
		/* everything else comes from the configuration file */
		if (o->npids || o->nnames || o->all || o->ncontainers || o->command)
			return usage_error("--daemon traces every CUDA process: give no target%s", "");
		if (o->duration_s || strcmp(o->out_dir, "./profile_output") || o->ringbuf_mb != 16 || o->poll_ms != 10 ||
		    o->hold_max_ms != GP_DEFAULT_HOLD_MAX_MS || o->stall_timeout_s != GP_DEFAULT_STALL_TIMEOUT_S ||
		    o->no_uprobe_multi || !o->stacks || o->max_stacks != GP_DEFAULT_MAX_STACKS || !o->record ||
		    o->unwind_mb != GP_DEFAULT_UNWIND_MB || !o->python ||
		    o->record_path || o->sqlite_path || !o->timeline || o->timeline_max_events != GP_DEFAULT_TIMELINE_MAX_EVENTS ||
		    o->timeline_sched || o->aggregate || o->nvml_interval_ms != GP_DEFAULT_NVML_MS || o->nvml_lib)
			return usage_error("--daemon takes its settings from the configuration file (--config)%s", "");
		o->mode = GP_MODE_ALL;
		o->command_line = join_argv(argc, argv);
		if (!o->command_line) {
			gp_err("out of memory");
			return GP_EXIT_FAILURE;
		}
		return -1;
	}
	if (o->config_path || o->foreground)
		return usage_error("%s goes with --daemon", o->config_path ? "--config" : "--foreground");
	if ((o->npids > 0) + (o->nnames > 0) + o->all + (o->ncontainers > 0) + (o->command != NULL) > 1)
		return usage_error("give one kind of target: --pid, --name, --all, --container or -- COMMAND%s",
				   "");
	if (o->npids)
		o->mode = GP_MODE_PID;
	else if (o->nnames)
		o->mode = GP_MODE_NAME;
	else if (o->all)
		o->mode = GP_MODE_ALL;
	else if (o->ncontainers)
		o->mode = GP_MODE_CONTAINER;
	else if (o->command)
		o->mode = GP_MODE_LAUNCH;
	else
		return usage_error("no target: give --pid PID, --name NAME, --all, --container ID|NAME or "
				   "-- COMMAND%s", "");
	o->command_line = join_argv(argc, argv);
	if (o->command)
		o->command_text = join_argv(argc - optind, o->command);
	if (!o->command_line || (o->command && !o->command_text)) {
		gp_err("out of memory");
		return GP_EXIT_FAILURE;
	}
	return -1;
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
		return gp_usage_error(subcommand, "one capture file at a time ('%s' is one too many)", argv[optind + 1]);
	return GP_CMD_GO_ON;
}
