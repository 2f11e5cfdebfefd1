/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_option_table.c — the table of options (src/options/option_table.h) and what is made of it:
 * each row's columns fit its kind (its fields' types, its defaults parse, a flag and a key at most
 * once, the file's places), the command line's messages byte for byte as they were before the
 * table, --daemon's refusals, and the daemon's session's options.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cmd/cli.h"
#include "daemon/config.h"
#include "options/option_spec.h"

static char err[8192]; /* what the last parse printed on stderr */

/* gp_cli_parse(argv) with stderr captured into err; its status. */
static int parse(struct gp_options *o, ...)
{
	char *argv[32] = { "gpuprobed" };
	int argc = 1, saved, rc;
	FILE *cap = tmpfile();
	va_list ap;
	size_t n;

	va_start(ap, o);
	while ((argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	assert_non_null(cap);
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(cap), 2);
	rc = gp_cli_parse(argc, argv, o);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(cap);
	n = fread(err, 1, sizeof(err) - 1, cap);
	err[n] = '\0';
	fclose(cap);
	return rc;
}

/* ---- the table itself ------------------------------------------------------------------- */

static void fields_fit_their_kinds(void **state)
{
	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];
		enum gp_ctype want = gp_option_ctype(opt->kind);

		/* a session row has its field; targets, actions and the file's keys have none */
		if (opt->scope != GP_SCOPE_FILE && want != GP_CT_NONE && opt->field.ctype != want)
			fail_msg("%s: its field in struct gp_options is not of its kind's type",
				 opt->name);
		if (opt->scope == GP_SCOPE_FILE && opt->field.size)
			fail_msg("%s: a key of the file only, with a field of the session",
				 opt->name);
	}
	assert_int_equal(gp_daemon_config_check_table(), 0);
}

static void flags_and_keys_once(void **state)
{
	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *a = &gp_option_table[i];

		for (size_t j = i + 1; j < GP_OPT_COUNT; j++) {
			const struct gp_option *b = &gp_option_table[j];

			if (a->flag && b->flag && !strcmp(a->flag, b->flag))
				fail_msg("--%s: two rows", a->flag);
			if (a->short_flag && a->short_flag == b->short_flag)
				fail_msg("-%c: two rows", a->short_flag);
			if (a->section && a->section == b->section && a->place == b->place)
				fail_msg("[%s] %s and %s: the same place",
					 gp_option_section_name(a->section), a->name, b->name);
		}
	}
}

/* The places of a section's keys are 1, 2, 3...: the file's order. */
static void places_count_from_one(void **state)
{
	const struct gp_option *keys[GP_OPT_COUNT];
	size_t n = gp_options_in_file_order(keys);
	unsigned want = 1;

	assert_true(n > 0);
	for (size_t i = 0; i < n; i++) {
		if (i && keys[i]->section != keys[i - 1]->section)
			want = 1;
		if (keys[i]->place != want++)
			fail_msg("[%s] %s: place %u, want %u",
				 gp_option_section_name(keys[i]->section), keys[i]->name,
				 keys[i]->place, want - 1);
	}
}

static void rows_say_what_they_need(void **state)
{
	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];
		bool generic = opt->kind != GP_KIND_CUSTOM && opt->kind != GP_KIND_PATH;

		if (opt->flag && !opt->help)
			fail_msg("--%s: no help", opt->flag);
		if (opt->meta && opt->kind != GP_KIND_TARGET && !opt->cli_why)
			fail_msg("--%s: no message for a bad value", opt->flag);
		if (opt->section && generic && !opt->conf_why)
			fail_msg("%s: no message for a bad value in the file", opt->name);
		if (opt->scope == GP_SCOPE_FILE && (opt->flag || !opt->section))
			fail_msg("%s: of the file only, but with a flag or without a key",
				 opt->name);
		if (!opt->flag && !opt->section)
			fail_msg("%s: neither a flag nor a key", opt->name);
	}
}

/* Every default is a value of its row: the command line's, and the daemon's. */
static void defaults_parse(void **state)
{
	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];
		const char *texts[2] = { opt->cli_default, opt->daemon_default };
		union {
			bool b;
			unsigned u;
			unsigned long long ull;
			double d;
			const char *s;
		} field;

		if (!opt->field.size)
			continue;
		for (int k = 0; k < 2; k++)
			if (texts[k] && gp_option_parse(opt, texts[k], &field))
				fail_msg("%s: default '%s' is not one of its values", opt->name,
					 texts[k]);
	}
}

/* --help says the defaults it names: "(default 16)" is the row's "16". */
static void help_says_the_default(void **state)
{
	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];

		if (opt->help && opt->meta && opt->cli_default && strstr(opt->help, "default") &&
		    !strstr(opt->help, opt->cli_default))
			fail_msg("--%s: the help does not say its default %s", opt->flag,
				 opt->cli_default);
	}
}

/* ---- the command line ------------------------------------------------------------------- */

static void command_line_defaults(void **state)
{
	struct gp_options o;

	assert_int_equal(parse(&o, "--pid", "1", NULL), -1);
	assert_string_equal(err, "");
	assert_int_equal(o.mode, GP_MODE_PID);
	assert_string_equal(o.out_dir, "./profile_output");
	assert_int_equal(o.ringbuf_mb, 16);
	assert_int_equal(o.poll_ms, 10);
	assert_int_equal(o.hold_max_ms, 2000);
	assert_true(o.stall_timeout_s == 60);
	assert_true(o.stacks && o.python && o.record && o.timeline);
	assert_false(o.no_uprobe_multi || o.aggregate || o.timeline_sched || o.daemon ||
		     o.foreground);
	assert_int_equal(o.max_stacks, 1000000);
	assert_int_equal(o.unwind_mb, 64);
	assert_int_equal(o.timeline_max_events, 5000000);
	assert_int_equal(o.nvml_interval_ms, 100);
	assert_null(o.nvml_lib);
	assert_null(o.record_path);
	assert_null(o.sqlite_path);
	assert_null(o.config_path);
	assert_true(o.duration_s == 0);
	assert_string_equal(o.command_line, "gpuprobed --pid 1");
	gp_cli_release(&o);
}

static void command_line_values(void **state)
{
	struct gp_options o;

	assert_int_equal(parse(&o, "-d", "2.5", "-o", "out", "--ringbuf-mb", "64", "--poll-ms", "5",
			       "--hold-max-ms", "7", "--stall-timeout", "0", "--no-uprobe-multi",
			       "--no-stacks", "--max-stacks", "3", "--unwind-mb", "0",
			       "--no-python", "--record", "c.gpz", "--sqlite", "c.db",
			       "--timeline-max-events", "9", "--timeline-sched", "--aggregate",
			       "--nvml-interval", "10", "--nvml-lib", "/x.so", "-v", "--verbose",
			       "--", "cmd", "arg", NULL),
			 -1);
	assert_string_equal(err, "");
	assert_int_equal(o.mode, GP_MODE_LAUNCH);
	assert_true(o.duration_s == 2.5 && o.stall_timeout_s == 0);
	assert_string_equal(o.out_dir, "out");
	assert_int_equal(o.ringbuf_mb, 64);
	assert_int_equal(o.poll_ms, 5);
	assert_int_equal(o.hold_max_ms, 7);
	assert_true(o.no_uprobe_multi && !o.stacks && !o.python && o.timeline_sched && o.aggregate);
	assert_int_equal(o.max_stacks, 3);
	assert_int_equal(o.unwind_mb, 0);
	assert_string_equal(o.record_path, "c.gpz");
	assert_string_equal(o.sqlite_path, "c.db");
	assert_int_equal(o.timeline_max_events, 9);
	assert_int_equal(o.nvml_interval_ms, 10);
	assert_string_equal(o.nvml_lib, "/x.so");
	assert_int_equal(o.verbosity, 2);
	assert_string_equal(o.command_text, "cmd arg");
	gp_cli_release(&o);

	/* --no-nvml; --record after --no-record records */
	assert_int_equal(parse(&o, "--all", "--no-nvml", "--no-record", "--record", "x", NULL), -1);
	assert_int_equal(o.mode, GP_MODE_ALL);
	assert_int_equal(o.nvml_interval_ms, 0);
	assert_true(o.record);
	gp_cli_release(&o);
}

#define TRY "\nTry 'gpuprobed --help' for more information.\n"

/* The messages as gpuprobed said them before the table: each must stay byte for byte. */
static const struct {
	const char *args[4];
	const char *said;
} refusals[] = {
	{ { "--duration", "soon" }, "--duration: 'soon' is not a positive number of seconds" },
	{ { "--duration", "0" }, "--duration: '0' is not a positive number of seconds" },
	{ { "--output", "" }, "--output: empty directory name" },
	{ { "--ringbuf-mb", "3" }, "--ringbuf-mb: '3' is not a power of two between 1 and 4096" },
	{ { "--poll-ms", "1001" }, "--poll-ms: '1001' is not between 1 and 1000" },
	{ { "--hold-max-ms", "0" },
	  "--hold-max-ms: '0' is not a number of milliseconds between 1 and 60000" },
	{ { "--stall-timeout", "-1" },
	  "--stall-timeout: '-1' is not a number of seconds between 0 (off) and 86400" },
	{ { "--max-stacks", "0" }, "--max-stacks: '0' is not between 1 and 100000000" },
	{ { "--unwind-mb", "4097" }, "--unwind-mb: '4097' is not between 0 and 4096" },
	{ { "--record", "" }, "--record: empty file name" },
	{ { "--sqlite", "" }, "--sqlite: empty file name" },
	{ { "--timeline-max-events", "0" },
	  "--timeline-max-events: '0' is not between 1 and 1000000000000" },
	{ { "--config", "" }, "--config: empty file name" },
	{ { "--nvml-interval", "off" },
	  "--nvml-interval: 'off' is not a number of milliseconds between 10 and 60000" },
	{ { "--nvml-lib", "" }, "--nvml-lib: empty file name" },
	{ { "--pid", "-5" }, "--pid: '-5' is not a process id" },
	{ { "--pid", "1", "--pid", "1" }, "--pid 1 given twice" },
	{ { "--name", "a/b" },
	  "--name: 'a/b' is not a process or file name (1 to 63 characters, no '/')" },
	{ { "--container", "" },
	  "--container: '' is not a container id or name (1 to 255 characters, no '/')" },
	{ { "--frobnicate" }, "unknown option '--frobnicate'" },
	{ { "--no" }, "unknown option '--no'" },	   /* ambiguous */
	{ { "--release" }, "unknown option '--release'" }, /* main.c's command: no prefix of it */
	{ { "--poll-ms" }, "option '--poll-ms' needs a value" },
	{ { "--record", "x", "--no-record" }, "--record and --no-record contradict each other" },
	{ { "--no-record", "--sqlite", "x" },
	  "--sqlite exports the capture: it contradicts --no-record" },
	{ { "--no-timeline", "--timeline-sched" },
	  "--timeline-sched and --no-timeline contradict each other" },
	{ { "--config", "x" }, "--config goes with --daemon" },
	{ { "--foreground" }, "--foreground goes with --daemon" },
	{ { "--all", "--pid", "1" },
	  "give one kind of target: --pid, --name, --all, --container or -- COMMAND" },
	{ { "-v" },
	  "no target: give --pid PID, --name NAME, --all, --container ID|NAME or -- COMMAND" },
	{ { "--daemon", "--all" }, "--daemon traces every CUDA process: give no target" },
	{ { "--daemon", "--poll-ms", "5" },
	  "--daemon takes its settings from the configuration file (--config)" },
};

static void refusals_say_what_they_said(void **state)
{
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		const char *const *a = refusals[i].args;
		struct gp_options o;
		char want[512];

		assert_int_equal(parse(&o, a[0], a[1], a[2], a[3], NULL), 2);
		snprintf(want, sizeof(want), "gpuprobed: %s" TRY, refusals[i].said);
		assert_string_equal(err, want);
	}
}

/* Each option of the session, away from its default, is refused with --daemon; at it, taken. */
static void daemon_refuses_session_options(void **state)
{
	static const char *const set[][2] = {
		{ "-d", "1" },
		{ "-o", "x" },
		{ "--ringbuf-mb", "32" },
		{ "--poll-ms", "5" },
		{ "--hold-max-ms", "5" },
		{ "--stall-timeout", "5" },
		{ "--no-uprobe-multi" },
		{ "--no-stacks" },
		{ "--max-stacks", "5" },
		{ "--unwind-mb", "5" },
		{ "--no-python" },
		{ "--record", "x" },
		{ "--no-record" },
		{ "--sqlite", "x" },
		{ "--no-timeline" },
		{ "--timeline-max-events", "5" },
		{ "--timeline-file-mb", "5" },
		{ "--timeline-sched" },
		{ "--aggregate" },
		{ "--nvml-interval", "50" },
		{ "--nvml-lib", "x" },
		{ "--no-nvml" },
	};
	static const char *const at_default[][2] = {
		{ "-o", "./profile_output" },  { "--ringbuf-mb", "16" },     { "--poll-ms", "10" },
		{ "--stall-timeout", "60.0" }, { "--nvml-interval", "100" }, { "-v" },
		{ "--config", "x" },	       { "--foreground" },
	};
	struct gp_options o;
	int sessions = 0;

	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		assert_int_equal(parse(&o, "--daemon", set[i][0], set[i][1], NULL), 2);
		assert_non_null(
			strstr(err, "--daemon takes its settings from the configuration file"));
	}
	for (size_t i = 0; i < GP_OPT_COUNT; i++)
		sessions += gp_option_table[i].scope == GP_SCOPE_SESSION;
	assert_int_equal(sessions, sizeof(set) / sizeof(set[0])); /* every one of them tried */
	for (size_t i = 0; i < sizeof(at_default) / sizeof(at_default[0]); i++) {
		assert_int_equal(parse(&o, "--daemon", at_default[i][0], at_default[i][1], NULL),
				 -1);
		assert_string_equal(err, "");
		assert_int_equal(o.mode, GP_MODE_ALL);
		gp_cli_release(&o);
	}
}

/* ---- the daemon's session ----------------------------------------------------------------- */

/* What daemon.c's session gets from the file's defaults: as before the table. */
static void daemon_session_options(void **state)
{
	struct gp_daemon_config c;
	struct gp_options o;

	gp_daemon_config_defaults(&c);
	gp_options_defaults(&o, true);
	gp_daemon_config_to_options(&c, &o);
	assert_true(o.all && o.daemon);
	assert_false(o.record || o.stacks || o.timeline || o.timeline_sched || o.no_uprobe_multi);
	assert_true(o.aggregate && o.python);
	assert_int_equal(o.ringbuf_mb, 16);
	assert_int_equal(o.poll_ms, 10);
	assert_int_equal(o.hold_max_ms, 2000);
	assert_int_equal(o.max_stacks, 100000);
	assert_int_equal(o.unwind_mb, 64);
	assert_int_equal(o.timeline_max_events, 5000000);
	assert_int_equal(o.nvml_interval_ms, 100);
	assert_true(o.stall_timeout_s == 60);
	assert_null(o.nvml_lib);
	assert_null(o.out_dir);
	assert_null(o.record_path);

	strcpy(c.nvml_lib, "/lib/nvml.so");
	c.options.no_uprobe_multi = true;
	c.options.nvml_interval_ms = 0;
	gp_daemon_config_to_options(&c, &o);
	assert_ptr_equal(o.nvml_lib, c.nvml_lib);
	assert_true(o.no_uprobe_multi);
	assert_int_equal(o.nvml_interval_ms, 0);
}

/* On reload, every key that needs a restart keeps its running value; the others apply. */
static void reload_keeps_restart_keys(void **state)
{
	struct gp_daemon_config running, next;
	char buf[512];

	gp_daemon_config_defaults(&running);
	gp_daemon_config_defaults(&next);
	strcpy(next.state_dir, "/srv");
	next.options.stacks = next.options.timeline = true;
	next.options.aggregate = false;
	next.options.max_stacks = next.options.ringbuf_mb = next.options.poll_ms =
		next.options.hold_max_ms = 2;
	next.options.nvml_interval_ms = 20;
	strcpy(next.nvml_lib, "/x");
	next.options.stall_timeout_s = 1;
	next.options.no_uprobe_multi = true;
	next.max_processes = 7;
	next.report_interval_s = 8;
	assert_int_equal(gp_daemon_config_restart_keys(&running, &next, buf, sizeof(buf)), 12);
	gp_daemon_config_keep_running(&next, &running);
	assert_int_equal(gp_daemon_config_restart_keys(&running, &next, buf, sizeof(buf)), 0);
	assert_string_equal(next.state_dir, "/var/lib/gpuprobed");
	assert_string_equal(next.nvml_lib, "");
	assert_int_equal(next.max_processes, 7);
	assert_int_equal(next.report_interval_s, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fields_fit_their_kinds),
		cmocka_unit_test(flags_and_keys_once),
		cmocka_unit_test(places_count_from_one),
		cmocka_unit_test(rows_say_what_they_need),
		cmocka_unit_test(defaults_parse),
		cmocka_unit_test(help_says_the_default),
		cmocka_unit_test(command_line_defaults),
		cmocka_unit_test(command_line_values),
		cmocka_unit_test(refusals_say_what_they_said),
		cmocka_unit_test(daemon_refuses_session_options),
		cmocka_unit_test(daemon_session_options),
		cmocka_unit_test(reload_keeps_restart_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
