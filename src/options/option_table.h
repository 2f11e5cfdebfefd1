/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * option_table.h — every option of gpuprobed, one row each, in --help's order: its command-line
 * flag, its key in the daemon's configuration file, the kind and range of its value, its
 * defaults, its help. The command line (cmd/cli.c), the file (daemon/config.c), the daemon's
 * session (daemon/daemon.c) and the docs' check (tests/unit/test_option_docs.c) all read it.
 *
 * GP_OPTION(name, kind, scope, field, flag, key, range, defaults, help)
 *   name      the row's id, GP_OPT_name; a row with a key is named after it, others after flag
 *   kind      GP_KIND_...: how a value is read and stored (option_spec.h)
 *   scope     TARGET; SESSION (refused with --daemon unless it is the default); DAEMON (only with
 *             --daemon); ANY; FILE (only in the file). --help's sections follow it.
 *   field     FIELD(f): struct gp_options's field; NO_FIELD
 *   flag      ARG(long, short, META, why): takes a value; a bad one is "--long: 'VALUE' why"
 *             (a string's: "--long: why"); SWITCH(long, short, value): stores value; NO_FLAG
 *   key       KEY(SECTION, place, RESTART or RELOAD, where, why): its place among
 *             its section's keys (the file's order); RESTART: what the BPF programs are loaded
 *             with, and the state directory, keep their running value on reload; where the file's
 *             value is kept in struct gp_daemon_config: IN_OPTIONS (the row's own FIELD, in its
 *             options: a session's option needs nothing more), CFG(f) (a field of its own: the
 *             daemon's keys, and a PATH's buffer) or CFG_NONE (its parser sets its fields); and
 *             "[section] key: 'VALUE' why" (NULL: its parser's own); NO_KEY
 *   range     RANGE(lo, hi) of a number; NO_RANGE
 *   defaults  DEFAULTS(command line, daemon), written as the file writes values; NULL: zero,
 *             false or none. The daemon's is the file's default, or, without a key, what the
 *             daemon's session always uses.
 *   help      --help's text, its lines split by \n; NULL: none
 *
 * Not rows: -- COMMAND (not an option), the subcommands (their own parsers). Include this file
 * with GP_OPTION and the column macros an expansion uses defined; it has no include guard.
 */

/* ---- targets: cmd/cli.c checks and keeps --pid, --name and --container itself ---------- */
GP_OPTION(pid, TARGET, TARGET, NO_FIELD, ARG("pid", 'p', "PID", NULL), NO_KEY, NO_RANGE,
	  DEFAULTS(NULL, NULL), "trace this running process (repeatable, up to 64)")
GP_OPTION(name, TARGET, TARGET, NO_FIELD, ARG("name", 'n', "NAME", NULL), NO_KEY, NO_RANGE,
	  DEFAULTS(NULL, NULL),
	  "trace every process named NAME (its comm, or its\n"
	  "executable's file name), running now or started\n"
	  "later, and what they fork (repeatable, up to 8)")
GP_OPTION(all, BOOL, TARGET, FIELD(all), SWITCH("all", 'a', true), NO_KEY, NO_RANGE,
	  DEFAULTS("off", "on"),
	  "trace every process that uses CUDA, now and later\n"
	  "(the host's and every container's)")
GP_OPTION(container, TARGET, TARGET, NO_FIELD, ARG("container", 'c', "ID|NAME", NULL), NO_KEY,
	  NO_RANGE, DEFAULTS(NULL, NULL),
	  "trace every process of this container that uses\n"
	  "CUDA, now and later (its id, an id prefix of 12 or\n"
	  "more hex digits, or its name; repeatable, up to 8)")

/* ---- the session's options ------------------------------------------------------------ */
GP_OPTION(duration, SECONDS_ABOVE, SESSION, FIELD(duration_s),
	  ARG("duration", 'd', "SEC", "is not a positive number of seconds"), NO_KEY,
	  RANGE(0, 1000000000), DEFAULTS(NULL, NULL), "stop after SEC seconds (decimals allowed)")
GP_OPTION(output, STRING, SESSION, FIELD(out_dir),
	  ARG("output", 'o', "DIR", "empty directory name"), NO_KEY, NO_RANGE,
	  DEFAULTS("./profile_output", NULL), /* the daemon's: under its state directory */
	  "write reports into DIR (default ./profile_output)")
GP_OPTION(ringbuf_mb, UINT_POW2, SESSION, FIELD(ringbuf_mb), /* the kernel wants 2^n pages */
	  ARG("ringbuf-mb", 0, "N", "is not a power of two between 1 and 4096"),
	  KEY(TRACE, 6, RESTART, IN_OPTIONS, "is not a power of two between 1 and 4096"),
	  RANGE(1, 4096), DEFAULTS("16", "16"),
	  "ring buffer size in MiB, a power of two (default 16)")
GP_OPTION(poll_ms, UINT, SESSION, FIELD(poll_ms),
	  ARG("poll-ms", 0, "N", "is not between 1 and 1000"),
	  KEY(TRACE, 7, RESTART, IN_OPTIONS, "is not a number of milliseconds between 1 and 1000"),
	  RANGE(1, 1000), DEFAULTS("10", "10"), "drain the ring buffer every N ms (default 10)")
GP_OPTION(hold_max_ms, UINT, SESSION, FIELD(hold_max_ms), /* = holds.h's default */
	  ARG("hold-max-ms", 0, "N", "is not a number of milliseconds between 1 and 60000"),
	  KEY(TRACE, 8, RESTART, IN_OPTIONS, "is not a number of milliseconds between 1 and 60000"),
	  RANGE(1, 60000), DEFAULTS("2000", "2000"),
	  "continue a process stopped until its new file is\n"
	  "probed after N ms at most, 1 to 60000 (default 2000);\n"
	  "counted (drops.hold_timeout)")
GP_OPTION(release_holds, COMMAND, ANY, NO_FIELD, SWITCH("release-holds", 0, 0), NO_KEY, NO_RANGE,
	  DEFAULTS(NULL, NULL),
	  "only continue the processes left stopped by gpuprobed\n"
	  "instances killed together with their resumers (their\n"
	  "registries pinned in /sys/fs/bpf/gpuprobed); one line\n"
	  "per process on stderr")
GP_OPTION(stacks, BOOL, SESSION, FIELD(stacks), SWITCH("no-stacks", 0, false),
	  KEY(TRACE, 1, RESTART, IN_OPTIONS, GP_WHY_BOOL), NO_RANGE, DEFAULTS("on", "off"),
	  "do not capture call stacks (the cheapest mode: counts,\n"
	  "times and sizes only; no stacks.folded, flamegraph.svg,\n"
	  "speedscope.json)")
GP_OPTION(max_stacks, UINT, SESSION, FIELD(max_stacks),
	  ARG("max-stacks", 0, "N", "is not between 1 and 100000000"),
	  KEY(TRACE, 5, RESTART, IN_OPTIONS, "is not a number between 1 and 100000000"),
	  RANGE(1, 100000000), DEFAULTS("1000000", "100000"),
	  "keep at most N distinct call stacks (default 1000000);\n"
	  "calls beyond are counted (drops.stacks_over_limit)")
GP_OPTION(unwind_mb, UINT, SESSION, FIELD(unwind_mb), /* PyTorch's libraries need ~40 MiB */
	  ARG("unwind-mb", 0, "N", "is not between 0 and 4096"), NO_KEY, RANGE(0, 4096),
	  DEFAULTS("64", "64"),
	  "kernel memory for unwind tables, MiB (default 64): stacks\n"
	  "are walked through code built without frame pointers\n"
	  "by its .eh_frame; 0: by frame pointers only")
GP_OPTION(no_python, BOOL, SESSION, FIELD(python), SWITCH("no-python", 0, false), NO_KEY, NO_RANGE,
	  DEFAULTS("on", "on"),
	  "do not put Python frames (CPython 3.10 to 3.13) into\n"
	  "call stacks")
GP_OPTION(record, STRING, SESSION, FIELD(record_path), ARG("record", 0, "FILE", "empty file name"),
	  NO_KEY, NO_RANGE, DEFAULTS(NULL, NULL),
	  "write the capture (every record, self-contained, for\n"
	  "'gpuprobed report' on any machine) to FILE (default\n"
	  "DIR/capture.gpz)")
GP_OPTION(no_record, BOOL, SESSION, FIELD(record), SWITCH("no-record", 0, false), NO_KEY, NO_RANGE,
	  DEFAULTS("on", "off"), /* an always-on capture would grow without bound */
	  "write no capture")
GP_OPTION(sqlite, STRING, SESSION, FIELD(sqlite_path), ARG("sqlite", 0, "FILE", "empty file name"),
	  NO_KEY, NO_RANGE, DEFAULTS(NULL, NULL),
	  "at the end, export the capture into the SQLite database\n"
	  "FILE (replaced if it exists; docs/sql.md)")
GP_OPTION(timeline, BOOL, SESSION, FIELD(timeline), SWITCH("no-timeline", 0, false),
	  KEY(TRACE, 2, RESTART, IN_OPTIONS, GP_WHY_BOOL), NO_RANGE, DEFAULTS("on", "off"),
	  "do not write trace.json (the timeline for Perfetto UI:\n"
	  "every call, stream work, flows, counters)")
GP_OPTION(aggregate, BOOL, SESSION, FIELD(aggregate), SWITCH("aggregate", 0, true),
	  KEY(TRACE, 3, RESTART, IN_OPTIONS, GP_WHY_BOOL), NO_RANGE, DEFAULTS("off", "on"),
	  "count hot calls in the kernel (no stacks nor timeline)")
GP_OPTION(timeline_max_events, U64, SESSION, FIELD(timeline_max_events), /* = trace_json.h's */
	  ARG("timeline-max-events", 0, "N", "is not between 1 and 1000000000000"), NO_KEY,
	  RANGE(1, 1000000000000), DEFAULTS("5000000", "5000000"),
	  "write at most N API calls into trace.json (default\n"
	  "5000000); calls beyond are counted\n"
	  "(drops.timeline_left_out)")
GP_OPTION(timeline_file_mb, U64, SESSION, FIELD(timeline_file_mb), /* = trace_json.h's */
	  ARG("timeline-file-mb", 0, "MB", "is not between 1 and 500"), NO_KEY, RANGE(1, 500),
	  DEFAULTS("256", "256"),
	  "a timeline file ends past MB MiB (default 256) and it\n"
	  "goes on in trace.1.json, trace.2.json ..., each a file\n"
	  "of its own (Chrome and speedscope open none past 512)")
GP_OPTION(timeline_sched, BOOL, SESSION, FIELD(timeline_sched), SWITCH("timeline-sched", 0, true),
	  NO_KEY, NO_RANGE, DEFAULTS("off", "off"),
	  "also put each traced thread's scheduling into trace.json:\n"
	  "on-CPU slices (CPU, page faults taken, why it left),\n"
	  "off-CPU gaps, an on-CPU threads counter per process (a\n"
	  "record per context switch: large)")
GP_OPTION(nvml_interval, UINT_OFF, SESSION, FIELD(nvml_interval_ms), /* = nvml_sampler.h's */
	  ARG("nvml-interval", 0, "MS", "is not a number of milliseconds between 10 and 60000"),
	  KEY(TRACE, 9, RESTART, IN_OPTIONS,
	      "is not off or a number of milliseconds between 10 and 60000"),
	  RANGE(10, 60000), DEFAULTS("100", "100"),
	  "sample the GPUs through NVML every MS ms, 10 to 60000\n"
	  "(default 100): utilization, memory, clocks, power,\n"
	  "temperature, PCIe, throttling, per-process memory and\n"
	  "utilization (report.json gpus[]; docs/report-format.md)")
GP_OPTION(nvml_lib, PATH, SESSION, FIELD(nvml_lib), ARG("nvml-lib", 0, "PATH", "empty file name"),
	  KEY(TRACE, 10, RESTART, CFG(nvml_lib), NULL), NO_RANGE,
	  DEFAULTS(NULL, NULL), /* libnvidia-ml.so.1 through the loader's search */
	  "the NVML library to load (default libnvidia-ml.so.1,\n"
	  "found as the loader finds it)")
GP_OPTION(no_nvml, UINT, SESSION, FIELD(nvml_interval_ms), SWITCH("no-nvml", 0, 0), NO_KEY,
	  NO_RANGE, DEFAULTS(NULL, NULL), /* its field's defaults are nvml_interval's */
	  "do not load NVML")
GP_OPTION(stall_timeout, SECONDS, SESSION, FIELD(stall_timeout_s),
	  ARG("stall-timeout", 0, "SEC", "is not a number of seconds between 0 (off) and 86400"),
	  KEY(TRACE, 11, RESTART, IN_OPTIONS,
	      "is not a number of seconds between 0 (off) and 86400"),
	  RANGE(0, 86400), DEFAULTS("60", "60"),
	  "when ranks of an NCCL communicator have waited on a\n"
	  "collective for SEC seconds (decimals allowed; default\n"
	  "60, 0: off) while a rank traced here has not entered\n"
	  "it, say which rank and what it is doing (one line on\n"
	  "stderr; report.json \"stalls\")")
GP_OPTION(uprobe_multi, BOOL_NOT, SESSION, FIELD(no_uprobe_multi),
	  SWITCH("no-uprobe-multi", 0, false), KEY(TRACE, 12, RESTART, IN_OPTIONS, GP_WHY_BOOL),
	  NO_RANGE, DEFAULTS("on", "on"),
	  "one perf-event link per probed function, as on kernels\n"
	  "before 6.6 (slower to attach and to detach)")
GP_OPTION(verbose, COUNT, ANY, FIELD(verbosity), SWITCH("verbose", 'v', 1), NO_KEY, NO_RANGE,
	  DEFAULTS(NULL, NULL), "more messages (-vv: libbpf's too)")
GP_OPTION(help, HELP, ANY, NO_FIELD, SWITCH("help", 'h', 0), NO_KEY, NO_RANGE, DEFAULTS(NULL, NULL),
	  "this text")
GP_OPTION(version, VERSION, ANY, NO_FIELD, SWITCH("version", 'V', 0), NO_KEY, NO_RANGE,
	  DEFAULTS(NULL, NULL), "print the version")

/* ---- always on (docs/daemon.md) ------------------------------------------------------- */
GP_OPTION(daemon, BOOL, DAEMON, FIELD(daemon), SWITCH("daemon", 0, true), NO_KEY, NO_RANGE,
	  DEFAULTS("off", "on"),
	  "trace every CUDA process until SIGTERM, serve Prometheus\n"
	  "metrics (default http://127.0.0.1:9400/metrics), write\n"
	  "periodic reports into the state directory; SIGHUP\n"
	  "re-reads the configuration (a bad file is refused and\n"
	  "the running one kept)")
GP_OPTION(config, STRING, DAEMON, FIELD(config_path), ARG("config", 0, "FILE", "empty file name"),
	  NO_KEY, NO_RANGE, DEFAULTS(NULL, NULL), /* NULL: GP_DAEMON_DEFAULT_CONFIG, or defaults */
	  "the daemon's configuration (default\n"
	  "/etc/gpuprobed/gpuprobed.conf; defaults when it is\n"
	  "missing); the daemon takes no other tracing option")
GP_OPTION(foreground, BOOL, DAEMON, FIELD(foreground), SWITCH("foreground", 0, true), NO_KEY,
	  NO_RANGE, DEFAULTS("off", "off"),
	  "plain log lines for a person (under systemd, lines carry\n"
	  "syslog priorities for the journal)")

/* ---- the daemon's file only: daemon/config.c parses the CUSTOM kinds itself ------------ */
GP_OPTION(listen, CUSTOM, FILE, NO_FIELD, NO_FLAG, KEY(METRICS, 1, RELOAD, CFG_NONE, NULL),
	  NO_RANGE, DEFAULTS(NULL, "127.0.0.1:9400"), NULL)
GP_OPTION(job_label, CUSTOM, FILE, NO_FIELD, NO_FLAG, KEY(METRICS, 2, RELOAD, CFG_NONE, NULL),
	  NO_RANGE, DEFAULTS(NULL, "cgroup"), NULL)
GP_OPTION(exited_grace, UINT, FILE, NO_FIELD, NO_FLAG,
	  KEY(METRICS, 3, RELOAD, CFG(exited_grace_s),
	      "is not a number of seconds (0 to 4294967295)"),
	  RANGE(0, UINT_MAX), DEFAULTS(NULL, "300"), NULL)
GP_OPTION(process_labels, CUSTOM, FILE, NO_FIELD, NO_FLAG, KEY(METRICS, 4, RELOAD, CFG_NONE, NULL),
	  NO_RANGE, DEFAULTS(NULL, "group"), NULL)
GP_OPTION(state_dir, CUSTOM, FILE, NO_FIELD, NO_FLAG,
	  KEY(REPORTS, 1, RESTART, CFG(state_dir), NULL), NO_RANGE,
	  DEFAULTS(NULL, "/var/lib/gpuprobed"), NULL)
GP_OPTION(interval, UINT, FILE, NO_FIELD, NO_FLAG,
	  KEY(REPORTS, 2, RELOAD, CFG(report_interval_s),
	      "is not a number of seconds (0: a report only at exit, up to 4294967295)"),
	  RANGE(0, UINT_MAX), DEFAULTS(NULL, "3600"), NULL)
GP_OPTION(max_size, CUSTOM, FILE, NO_FIELD, NO_FLAG, KEY(REPORTS, 3, RELOAD, CFG_NONE, NULL),
	  NO_RANGE, DEFAULTS(NULL, "256M"), NULL)
GP_OPTION(max_processes, UINT, FILE, NO_FIELD, NO_FLAG, /* eviction, userspace's: reloadable */
	  KEY(TRACE, 4, RELOAD, CFG(max_processes), "is not a number between 1 and 1000000"),
	  RANGE(1, 1000000), DEFAULTS(NULL, "4096"), NULL)
GP_OPTION(overhead_budget, CUSTOM, FILE, NO_FIELD, NO_FLAG, /* the budget check, userspace's */
	  KEY(TRACE, 13, RELOAD, CFG_NONE, NULL), NO_RANGE, DEFAULTS(NULL, "off"), NULL)
GP_OPTION(level, CUSTOM, FILE, NO_FIELD, NO_FLAG, KEY(LOG, 1, RELOAD, CFG_NONE, NULL), NO_RANGE,
	  DEFAULTS(NULL, "notice"), NULL)
