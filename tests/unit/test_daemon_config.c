/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_daemon_config.c — the daemon's configuration file (src/daemon/config.c):
 * the defaults, and that the shipped config/gpuprobed.conf states exactly
 * them; every key's accepted and refused values, each refusal as the one
 * exact line "PATH:LINE: [section] key: why"; unknown sections and keys,
 * a key given twice, syntax errors, all problems of a file told in one pass;
 * a missing or unreadable file; which changes need a restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/config.h"

/* Unit tests run from the repository root (tests/unit/unit.mk). */
#define SHIPPED_CONFIG "config/gpuprobed.conf"

static char path[64];  /* the current test's file */
static char err[8192]; /* what the last load printed on stderr */

static void write_file(const char *text)
{
	int fd;

	strcpy(path, "/tmp/gp_test_conf_XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* gp_daemon_config_load(file) with stderr captured into err. */
static int load_path(const char *file, bool missing_ok, struct gp_daemon_config *c)
{
	FILE *cap = tmpfile();
	int saved, rc;
	size_t n;

	assert_non_null(cap);
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(cap), 2);
	rc = gp_daemon_config_load(file, missing_ok, c);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(cap);
	n = fread(err, 1, sizeof(err) - 1, cap);
	err[n] = '\0';
	fclose(cap);
	return rc;
}

static int load_text(const char *text, struct gp_daemon_config *c)
{
	int rc;

	write_file(text);
	rc = load_path(path, false, c);
	unlink(path);
	return rc;
}

static int lines_of(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void assert_config_equal(const struct gp_daemon_config *a, const struct gp_daemon_config *b)
{
	assert_int_equal(a->listen_enabled, b->listen_enabled);
	assert_string_equal(a->listen_addr, b->listen_addr);
	assert_int_equal(a->listen_port, b->listen_port);
	assert_int_equal(a->job_source, b->job_source);
	if (a->job_source == GP_JOB_ENV)
		assert_string_equal(a->job_env, b->job_env);
	assert_int_equal(a->exited_grace_s, b->exited_grace_s);
	assert_string_equal(a->state_dir, b->state_dir);
	assert_int_equal(a->report_interval_s, b->report_interval_s);
	assert_int_equal(a->report_max_bytes, b->report_max_bytes);
	assert_int_equal(a->options.stacks, b->options.stacks);
	assert_int_equal(a->options.timeline, b->options.timeline);
	assert_int_equal(a->options.aggregate, b->options.aggregate);
	assert_int_equal(a->max_processes, b->max_processes);
	assert_int_equal(a->options.max_stacks, b->options.max_stacks);
	assert_int_equal(a->options.ringbuf_mb, b->options.ringbuf_mb);
	assert_int_equal(a->options.poll_ms, b->options.poll_ms);
	assert_int_equal(a->options.hold_max_ms, b->options.hold_max_ms);
	assert_true(a->options.stall_timeout_s == b->options.stall_timeout_s);
	assert_int_equal(a->options.no_uprobe_multi, b->options.no_uprobe_multi);
	assert_true(a->overhead_budget == b->overhead_budget);
	assert_int_equal(a->log_level, b->log_level);
}

static void defaults(void **state)
{
	struct gp_daemon_config c;

	gp_daemon_config_defaults(&c);
	assert_true(c.listen_enabled);
	assert_string_equal(c.listen_addr, "127.0.0.1");
	assert_int_equal(c.listen_port, 9400);
	assert_int_equal(c.job_source, GP_JOB_CGROUP);
	assert_int_equal(c.exited_grace_s, 300);
	assert_string_equal(c.state_dir, "/var/lib/gpuprobed");
	assert_int_equal(c.report_interval_s, 3600);
	assert_int_equal(c.report_max_bytes, 256ULL << 20);
	assert_false(c.options.stacks);
	assert_false(c.options.timeline);
	assert_true(c.options.aggregate);
	assert_int_equal(c.max_processes, 4096);
	assert_int_equal(c.options.max_stacks, 100000);
	assert_int_equal(c.options.ringbuf_mb, 16);
	assert_int_equal(c.options.poll_ms, 10);
	assert_int_equal(c.options.hold_max_ms, 2000);
	assert_false(c.options.no_uprobe_multi);
	assert_true(c.overhead_budget == 0);
	assert_int_equal(c.log_level, LOG_NOTICE);
}

static void shipped_config_is_the_defaults(void **state)
{
	struct gp_daemon_config c, d;
	FILE *f = fopen(SHIPPED_CONFIG, "r");
	char line[512];
	int keys = 0;

	assert_int_equal(load_path(SHIPPED_CONFIG, false, &c), 0);
	assert_string_equal(err, "");
	gp_daemon_config_defaults(&d);
	assert_config_equal(&c, &d);

	/* and it sets every key explicitly (20), rather than leaving some to the defaults: all but
	 * nvml_lib, whose default (the loader's search) is no path */
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		keys += line[0] != '#' && line[0] != ';' && line[0] != '[' &&
			strchr(line, '=') != NULL;
	fclose(f);
	assert_int_equal(keys, 20);
}

/* ---- each key's values ---------------------------------------------------- */

struct good {
	const char *section, *key, *value;
	void (*expect)(struct gp_daemon_config *c);
};

static void listen_v4(struct gp_daemon_config *c)
{
	strcpy(c->listen_addr, "0.0.0.0");
	c->listen_port = 1;
}
static void listen_v6(struct gp_daemon_config *c)
{
	strcpy(c->listen_addr, "::1");
	c->listen_port = 65535;
}
static void listen_v6_full(struct gp_daemon_config *c)
{
	strcpy(c->listen_addr, "fe80::1:2");
	c->listen_port = 9400;
}
static void listen_off(struct gp_daemon_config *c)
{
	c->listen_enabled = false;
}
static void job_cgroup(struct gp_daemon_config *c)
{
	c->job_source = GP_JOB_CGROUP;
}
static void job_none(struct gp_daemon_config *c)
{
	c->job_source = GP_JOB_NONE;
}
static void job_env(struct gp_daemon_config *c)
{
	c->job_source = GP_JOB_ENV;
	strcpy(c->job_env, "SLURM_JOB_ID");
}
static void job_env_short(struct gp_daemon_config *c)
{
	c->job_source = GP_JOB_ENV;
	strcpy(c->job_env, "_");
}
static void grace_0(struct gp_daemon_config *c)
{
	c->exited_grace_s = 0;
}
static void grace_max(struct gp_daemon_config *c)
{
	c->exited_grace_s = 4294967295u;
}
static void dir_srv(struct gp_daemon_config *c)
{
	strcpy(c->state_dir, "/srv/gp");
}
static void dir_root(struct gp_daemon_config *c)
{
	strcpy(c->state_dir, "/");
}
static void interval_0(struct gp_daemon_config *c)
{
	c->report_interval_s = 0;
}
static void interval_60(struct gp_daemon_config *c)
{
	c->report_interval_s = 60;
}
static void size_1m(struct gp_daemon_config *c)
{
	c->report_max_bytes = 1 << 20;
}
static void size_bytes(struct gp_daemon_config *c)
{
	c->report_max_bytes = 2000000;
}
static void size_k(struct gp_daemon_config *c)
{
	c->report_max_bytes = 2048ULL << 10;
}
static void size_g(struct gp_daemon_config *c)
{
	c->report_max_bytes = 3ULL << 30;
}
static void stacks_on(struct gp_daemon_config *c)
{
	c->options.stacks = true;
}
static void timeline_on(struct gp_daemon_config *c)
{
	c->options.timeline = true;
}
static void aggregate_off(struct gp_daemon_config *c)
{
	c->options.aggregate = false;
}
static void multi_off(struct gp_daemon_config *c)
{
	c->options.no_uprobe_multi = true;
}
static void procs_1(struct gp_daemon_config *c)
{
	c->max_processes = 1;
}
static void procs_max(struct gp_daemon_config *c)
{
	c->max_processes = 1000000;
}
static void stacks_1(struct gp_daemon_config *c)
{
	c->options.max_stacks = 1;
}
static void stacks_max(struct gp_daemon_config *c)
{
	c->options.max_stacks = 100000000;
}
static void rb_1(struct gp_daemon_config *c)
{
	c->options.ringbuf_mb = 1;
}
static void rb_4096(struct gp_daemon_config *c)
{
	c->options.ringbuf_mb = 4096;
}
static void poll_1(struct gp_daemon_config *c)
{
	c->options.poll_ms = 1;
}
static void poll_1000(struct gp_daemon_config *c)
{
	c->options.poll_ms = 1000;
}
static void hold_1(struct gp_daemon_config *c)
{
	c->options.hold_max_ms = 1;
}
static void hold_60000(struct gp_daemon_config *c)
{
	c->options.hold_max_ms = 60000;
}
static void stall_off(struct gp_daemon_config *c)
{
	c->options.stall_timeout_s = 0;
}
static void stall_2_5(struct gp_daemon_config *c)
{
	c->options.stall_timeout_s = 2.5;
}
static void budget_off(struct gp_daemon_config *c)
{
	c->overhead_budget = 0;
}
static void budget_1(struct gp_daemon_config *c)
{
	c->overhead_budget = 0.01;
}
static void budget_half(struct gp_daemon_config *c)
{
	c->overhead_budget = 0.5 / 100;
}
static void budget_100(struct gp_daemon_config *c)
{
	c->overhead_budget = 1;
}
static void level_err(struct gp_daemon_config *c)
{
	c->log_level = LOG_ERR;
}
static void level_warning(struct gp_daemon_config *c)
{
	c->log_level = LOG_WARNING;
}
static void level_info(struct gp_daemon_config *c)
{
	c->log_level = LOG_INFO;
}
static void level_debug(struct gp_daemon_config *c)
{
	c->log_level = LOG_DEBUG;
}
static void nothing(struct gp_daemon_config *c)
{
}

static const struct good goods[] = {
	{ "metrics", "listen", "0.0.0.0:1", listen_v4 },
	{ "metrics", "listen", "[::1]:65535", listen_v6 },
	{ "metrics", "listen", "[fe80::1:2]:9400", listen_v6_full },
	{ "metrics", "listen", "off", listen_off },
	{ "metrics", "listen", "OFF", listen_off },
	{ "metrics", "listen", "127.0.0.1:9400", nothing },
	{ "metrics", "job_label", "cgroup", job_cgroup },
	{ "metrics", "job_label", "none", job_none },
	{ "metrics", "job_label", "env:SLURM_JOB_ID", job_env },
	{ "metrics", "job_label", "env:_", job_env_short },
	{ "metrics", "exited_grace", "0", grace_0 },
	{ "metrics", "exited_grace", "4294967295", grace_max },
	{ "reports", "state_dir", "/srv/gp", dir_srv },
	{ "reports", "state_dir", "/srv/gp//", dir_srv },
	{ "reports", "state_dir", "/", dir_root },
	{ "reports", "interval", "0", interval_0 },
	{ "reports", "interval", "60", interval_60 },
	{ "reports", "max_size", "1M", size_1m },
	{ "reports", "max_size", "1m", size_1m },
	{ "reports", "max_size", "1048576", size_1m },
	{ "reports", "max_size", "2000000", size_bytes },
	{ "reports", "max_size", "2048K", size_k },
	{ "reports", "max_size", "3G", size_g },
	{ "trace", "stacks", "on", stacks_on },
	{ "trace", "stacks", "TRUE", stacks_on },
	{ "trace", "stacks", "Yes", stacks_on },
	{ "trace", "stacks", "1", stacks_on },
	{ "trace", "stacks", "off", nothing },
	{ "trace", "stacks", "False", nothing },
	{ "trace", "stacks", "no", nothing },
	{ "trace", "stacks", "0", nothing },
	{ "trace", "timeline", "yes", timeline_on },
	{ "trace", "aggregate", "off", aggregate_off },
	{ "trace", "uprobe_multi", "false", multi_off },
	{ "trace", "max_processes", "1", procs_1 },
	{ "trace", "max_processes", "1000000", procs_max },
	{ "trace", "max_stacks", "1", stacks_1 },
	{ "trace", "max_stacks", "100000000", stacks_max },
	{ "trace", "ringbuf_mb", "1", rb_1 },
	{ "trace", "ringbuf_mb", "4096", rb_4096 },
	{ "trace", "poll_ms", "1", poll_1 },
	{ "trace", "poll_ms", "1000", poll_1000 },
	{ "trace", "hold_max_ms", "1", hold_1 },
	{ "trace", "hold_max_ms", "60000", hold_60000 },
	{ "trace", "stall_timeout", "0", stall_off },
	{ "trace", "stall_timeout", "2.5", stall_2_5 },
	{ "trace", "overhead_budget", "off", budget_off },
	{ "trace", "overhead_budget", "Off", budget_off },
	{ "trace", "overhead_budget", "1%", budget_1 },
	{ "trace", "overhead_budget", "0.5%", budget_half },
	{ "trace", "overhead_budget", "100%", budget_100 },
	{ "log", "level", "err", level_err },
	{ "log", "level", "warning", level_warning },
	{ "log", "level", "notice", nothing },
	{ "log", "level", "info", level_info },
	{ "log", "level", "debug", level_debug },
};

static void good_values(void **state)
{
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		const struct good *g = &goods[i];
		struct gp_daemon_config c, want;
		char text[256];

		/* indented, with an inline comment: both are allowed */
		snprintf(text, sizeof(text), "# a comment\n[%s]\n  %s = %s   ; why\n", g->section,
			 g->key, g->value);
		if (load_text(text, &c) != 0 || err[0])
			fail_msg("[%s] %s = %s refused: %s", g->section, g->key, g->value, err);
		gp_daemon_config_defaults(&want);
		g->expect(&want);
		assert_config_equal(&c, &want);
	}
}

struct bad {
	const char *section, *key, *value, *why;
};

static const struct bad bads[] = {
	{ "metrics", "listen", "localhost:9400",
	  "'localhost:9400' is not ADDRESS:PORT with a numeric address (e.g. 127.0.0.1:9400, [::1]:9400, 0.0.0.0:9400) or off" },
	{ "metrics", "listen", "127.0.0.1",
	  "'127.0.0.1' is not ADDRESS:PORT with a numeric address (e.g. 127.0.0.1:9400, [::1]:9400, 0.0.0.0:9400) or off" },
	{ "metrics", "listen", ":9400",
	  "':9400' is not ADDRESS:PORT with a numeric address (e.g. 127.0.0.1:9400, [::1]:9400, 0.0.0.0:9400) or off" },
	{ "metrics", "listen", "[127.0.0.1]:9400",
	  "'[127.0.0.1]:9400' is not ADDRESS:PORT with a numeric address (e.g. 127.0.0.1:9400, [::1]:9400, 0.0.0.0:9400) or off" },
	{ "metrics", "listen", "::1:9400",
	  "'::1:9400': an IPv6 address goes in brackets, e.g. [::1]:9400" },
	{ "metrics", "listen", "127.0.0.1:0",
	  "'127.0.0.1:0': the port is not a number between 1 and 65535" },
	{ "metrics", "listen", "127.0.0.1:65536",
	  "'127.0.0.1:65536': the port is not a number between 1 and 65535" },
	{ "metrics", "listen", "127.0.0.1:+80",
	  "'127.0.0.1:+80': the port is not a number between 1 and 65535" },
	{ "metrics", "listen", "[::1]:", "'[::1]:': the port is not a number between 1 and 65535" },
	{ "metrics", "listen", "of",
	  "'of' is not ADDRESS:PORT with a numeric address (e.g. 127.0.0.1:9400, [::1]:9400, 0.0.0.0:9400) or off" },
	{ "metrics", "job_label", "slurm", "'slurm' is not cgroup, env:NAME or none" },
	{ "metrics", "job_label", "env:",
	  "'' is not a variable name (letters, digits and _, not starting with a digit, at most 127 characters)" },
	{ "metrics", "job_label", "env:1X",
	  "'1X' is not a variable name (letters, digits and _, not starting with a digit, at most 127 characters)" },
	{ "metrics", "job_label", "env:A-B",
	  "'A-B' is not a variable name (letters, digits and _, not starting with a digit, at most 127 characters)" },
	{ "metrics", "exited_grace", "-1", "'-1' is not a number of seconds (0 to 4294967295)" },
	{ "metrics", "exited_grace", "4294967296",
	  "'4294967296' is not a number of seconds (0 to 4294967295)" },
	{ "metrics", "exited_grace", "5m", "'5m' is not a number of seconds (0 to 4294967295)" },
	{ "reports", "state_dir", "var/lib/gp",
	  "'var/lib/gp' is not an absolute path (it must start with /)" },
	{ "reports", "state_dir", "~/gp", "'~/gp' is not an absolute path (it must start with /)" },
	{ "reports", "interval", "1h",
	  "'1h' is not a number of seconds (0: a report only at exit, up to 4294967295)" },
	{ "reports", "interval", "0x10",
	  "'0x10' is not a number of seconds (0: a report only at exit, up to 4294967295)" },
	{ "reports", "max_size", "1023K",
	  "'1023K' is not a size of at least 1M (bytes, or a number followed by K, M or G, 1024-based)" },
	{ "reports", "max_size", "1048575",
	  "'1048575' is not a size of at least 1M (bytes, or a number followed by K, M or G, 1024-based)" },
	{ "reports", "max_size", "256MB",
	  "'256MB' is not a size of at least 1M (bytes, or a number followed by K, M or G, 1024-based)" },
	{ "reports", "max_size", "1T",
	  "'1T' is not a size of at least 1M (bytes, or a number followed by K, M or G, 1024-based)" },
	{ "reports", "max_size", "17179869184G",
	  "'17179869184G' is not a size of at least 1M (bytes, or a number followed by K, M or G, 1024-based)" },
	{ "reports", "max_size", "99999999999999999999",
	  "'99999999999999999999' is not a size of at least 1M (bytes, or a number followed by K, M or G, 1024-based)" },
	{ "reports", "max_size", "M",
	  "'M' is not a size of at least 1M (bytes, or a number followed by K, M or G, 1024-based)" },
	{ "trace", "stacks", "enabled",
	  "'enabled' is not a boolean (on, off, true, false, yes, no, 1 or 0)" },
	{ "trace", "timeline", "2",
	  "'2' is not a boolean (on, off, true, false, yes, no, 1 or 0)" },
	{ "trace", "aggregate", "onn",
	  "'onn' is not a boolean (on, off, true, false, yes, no, 1 or 0)" },
	{ "trace", "uprobe_multi", "y",
	  "'y' is not a boolean (on, off, true, false, yes, no, 1 or 0)" },
	{ "trace", "max_processes", "0", "'0' is not a number between 1 and 1000000" },
	{ "trace", "max_processes", "1000001", "'1000001' is not a number between 1 and 1000000" },
	{ "trace", "max_processes", "1e3", "'1e3' is not a number between 1 and 1000000" },
	{ "trace", "max_stacks", "0", "'0' is not a number between 1 and 100000000" },
	{ "trace", "max_stacks", "100000001",
	  "'100000001' is not a number between 1 and 100000000" },
	{ "trace", "ringbuf_mb", "3", "'3' is not a power of two between 1 and 4096" },
	{ "trace", "ringbuf_mb", "0", "'0' is not a power of two between 1 and 4096" },
	{ "trace", "ringbuf_mb", "8192", "'8192' is not a power of two between 1 and 4096" },
	{ "trace", "ringbuf_mb", "18446744073709551616",
	  "'18446744073709551616' is not a power of two between 1 and 4096" },
	{ "trace", "poll_ms", "0", "'0' is not a number of milliseconds between 1 and 1000" },
	{ "trace", "poll_ms", "1001", "'1001' is not a number of milliseconds between 1 and 1000" },
	{ "trace", "poll_ms", "10 ms",
	  "'10 ms' is not a number of milliseconds between 1 and 1000" },
	{ "trace", "hold_max_ms", "0", "'0' is not a number of milliseconds between 1 and 60000" },
	{ "trace", "hold_max_ms", "60001",
	  "'60001' is not a number of milliseconds between 1 and 60000" },
	{ "trace", "stall_timeout", "-1",
	  "'-1' is not a number of seconds between 0 (off) and 86400" },
	{ "trace", "stall_timeout", "86401",
	  "'86401' is not a number of seconds between 0 (off) and 86400" },
	{ "trace", "stall_timeout", "1m",
	  "'1m' is not a number of seconds between 0 (off) and 86400" },
	{ "trace", "overhead_budget", "0%",
	  "'0%' is not off or a percentage above 0% and at most 100% (e.g. 1% or 0.5%)" },
	{ "trace", "overhead_budget", "0.0%",
	  "'0.0%' is not off or a percentage above 0% and at most 100% (e.g. 1% or 0.5%)" },
	{ "trace", "overhead_budget", "100.1%",
	  "'100.1%' is not off or a percentage above 0% and at most 100% (e.g. 1% or 0.5%)" },
	{ "trace", "overhead_budget", "0.01",
	  "'0.01' is not off or a percentage above 0% and at most 100% (e.g. 1% or 0.5%)" },
	{ "trace", "overhead_budget", "-1%",
	  "'-1%' is not off or a percentage above 0% and at most 100% (e.g. 1% or 0.5%)" },
	{ "trace", "overhead_budget", "1e1%",
	  "'1e1%' is not off or a percentage above 0% and at most 100% (e.g. 1% or 0.5%)" },
	{ "trace", "overhead_budget", ".5%",
	  "'.5%' is not off or a percentage above 0% and at most 100% (e.g. 1% or 0.5%)" },
	{ "trace", "overhead_budget", "1.%",
	  "'1.%' is not off or a percentage above 0% and at most 100% (e.g. 1% or 0.5%)" },
	{ "trace", "overhead_budget", "1 %",
	  "'1 %' is not off or a percentage above 0% and at most 100% (e.g. 1% or 0.5%)" },
	{ "log", "level", "error", "'error' is not err, warning, notice, info or debug" },
	{ "log", "level", "7", "'7' is not err, warning, notice, info or debug" },
	{ "log", "level", "off # no", "'off # no' is not err, warning, notice, info or debug" },
};

static void bad_values(void **state)
{
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		const struct bad *b = &bads[i];
		struct gp_daemon_config c;
		char text[256], want[1024];

		snprintf(text, sizeof(text), "[%s]\n\n%s = %s\n", b->section, b->key, b->value);
		assert_int_equal(load_text(text, &c), -EINVAL);
		snprintf(want, sizeof(want), "gpuprobed: %s:3: [%s] %s: %s\n", path, b->section,
			 b->key, b->why);
		assert_string_equal(err, want);
	}
}

static void empty_value(void **state)
{
	struct gp_daemon_config c;
	char want[512];

	assert_int_equal(load_text("[trace]\npoll_ms =\n", &c), -EINVAL);
	snprintf(
		want, sizeof(want),
		"gpuprobed: %s:2: [trace] poll_ms: no value (see config/gpuprobed.conf for what it takes)\n",
		path);
	assert_string_equal(err, want);
}

/* ---- the file's structure ----------------------------------------------- */

static void unknown_key_and_section(void **state)
{
	struct gp_daemon_config c;
	char want[1024];

	assert_int_equal(
		load_text("[trace]\nstack = on\n[Trace]\nstacks = on\n[log]\nlevel = info\n", &c),
		-EINVAL);
	snprintf(
		want, sizeof(want),
		"gpuprobed: %s:2: [trace] stack: unknown key (the keys of [trace]: stacks, timeline, aggregate, "
		"max_processes, max_stacks, ringbuf_mb, poll_ms, hold_max_ms, nvml_interval, nvml_lib, stall_timeout, uprobe_multi, "
		"overhead_budget)\n"
		"gpuprobed: %s:3: [Trace]: unknown section (sections: [metrics], [reports], [trace], [log])\n",
		path, path);
	/* the unknown section's keys are not reported again, one line per problem */
	assert_string_equal(err, want);
}

static void key_outside_section(void **state)
{
	struct gp_daemon_config c;
	char want[512];

	assert_int_equal(load_text("stacks = on\n", &c), -EINVAL);
	snprintf(want, sizeof(want),
		 "gpuprobed: %s:1: stacks: a key before any [section] "
		 "(sections: [metrics], [reports], [trace], [log])\n",
		 path);
	assert_string_equal(err, want);
}

static void duplicate_key(void **state)
{
	struct gp_daemon_config c;
	char want[512];

	assert_int_equal(
		load_text("[trace]\nstacks = on\npoll_ms = 5\n\n[log]\n[trace]\nstacks = off\n",
			  &c),
		-EINVAL);
	snprintf(
		want, sizeof(want),
		"gpuprobed: %s:7: [trace] stacks: given twice, on lines 2 and 7 (each key at most once)\n",
		path);
	assert_string_equal(err, want);
}

static void syntax_errors(void **state)
{
	struct gp_daemon_config c;
	char want[1024];

	/* a line without '=', a header without ']', text after a header: all told */
	assert_int_equal(
		load_text("[trace]\nstacks on\npoll_ms = 5\n[log\nlevel = info\n[log] x\n", &c),
		-EINVAL);
	snprintf(want, sizeof(want),
		 "gpuprobed: %s:2: not a 'key = value' line or [section]\n"
		 "gpuprobed: %s:4: '[log': a section header needs its closing ] "
		 "(sections: [metrics], [reports], [trace], [log])\n"
		 "gpuprobed: %s:6: [log]: text after the section header\n",
		 path, path, path);
	assert_string_equal(err, want);
}

static void long_line(void **state)
{
	struct gp_daemon_config c;
	char text[1024], want[512];

	snprintf(text, sizeof(text), "[reports]\nstate_dir = /%0400d\n", 0);
	assert_int_equal(load_text(text, &c), -EINVAL);
	assert_int_equal(lines_of(err), 1);
	snprintf(want, sizeof(want), "gpuprobed: %s:2: the line is longer than ", path);
	assert_memory_equal(err, want, strlen(want));
}

static void every_problem_in_one_pass(void **state)
{
	struct gp_daemon_config c;

	assert_int_equal(
		load_text(
			"[metrics]\nlisten = x\njob_label = y\n[trace]\nringbuf_mb = 3\npoll_ms = 0\n"
			"nonsense\n[log]\nlevel = loud\n",
			&c),
		-EINVAL);
	assert_int_equal(lines_of(err), 6);
	assert_non_null(strstr(err, ":2: [metrics] listen: "));
	assert_non_null(strstr(err, ":3: [metrics] job_label: "));
	assert_non_null(strstr(
		err, ":5: [trace] ringbuf_mb: '3' is not a power of two between 1 and 4096\n"));
	assert_non_null(strstr(err, ":6: [trace] poll_ms: "));
	assert_non_null(strstr(err, ":7: not a 'key = value' line or [section]\n"));
	assert_non_null(strstr(err, ":9: [log] level: "));
}

static void comments_blank_lines_and_bom(void **state)
{
	struct gp_daemon_config c;

	assert_int_equal(
		load_text(
			"\xEF\xBB\xBF; first\n\n   \n# x = y\n[trace] ; the tracer\n\tstacks: on\n"
			"[metrics]\nlisten=[::]:80\n",
			&c),
		0);
	assert_string_equal(err, "");
	assert_true(c.options.stacks);
	assert_string_equal(c.listen_addr, "::");
	assert_int_equal(c.listen_port, 80);
}

static void empty_file(void **state)
{
	struct gp_daemon_config c, d;

	assert_int_equal(load_text("", &c), 0);
	gp_daemon_config_defaults(&d);
	assert_config_equal(&c, &d);
}

/* ---- the file itself ------------------------------------------------------ */

static void missing_file(void **state)
{
	struct gp_daemon_config c, d;
	const char *nope = "/nonexistent/gpuprobed.conf";

	gp_daemon_config_defaults(&d);
	assert_int_equal(load_path(nope, true, &c), 0);
	assert_string_equal(err, "");
	assert_config_equal(&c, &d);

	assert_int_equal(load_path(nope, false, &c), -ENOENT);
	assert_string_equal(
		err,
		"gpuprobed: /nonexistent/gpuprobed.conf: cannot read: No such file or directory\n");
}

static void unreadable_file(void **state)
{
	struct gp_daemon_config c;
	char want[256];

	/* a directory: fopen succeeds, reading fails (EISDIR), even as root; missing_ok does not hide it */
	assert_int_equal(load_path("/tmp", true, &c), -EISDIR);
	snprintf(want, sizeof(want), "gpuprobed: /tmp: cannot read: Is a directory\n");
	assert_string_equal(err, want);
}

/* ---- reload ---------------------------------------------------------------- */

static void restart_keys(void **state)
{
	struct gp_daemon_config a, b;
	char buf[512];

	gp_daemon_config_defaults(&a);
	gp_daemon_config_defaults(&b);
	assert_int_equal(gp_daemon_config_restart_keys(&a, &b, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");

	/* reloadable: nothing to say */
	b.listen_port = 1;
	b.job_source = GP_JOB_NONE;
	b.exited_grace_s = 1;
	b.report_interval_s = 1;
	b.report_max_bytes = 1 << 20;
	b.max_processes = 1;
	b.overhead_budget = 0.01;
	b.log_level = LOG_DEBUG;
	assert_int_equal(gp_daemon_config_restart_keys(&a, &b, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");

	b.options.ringbuf_mb = 64;
	strcpy(b.state_dir, "/srv/x");
	b.options.stacks = true;
	assert_int_equal(gp_daemon_config_restart_keys(&a, &b, buf, sizeof(buf)), 3);
	assert_string_equal(buf, "reports.state_dir, trace.stacks, trace.ringbuf_mb");

	b.options.timeline = true;
	b.options.aggregate = false;
	b.options.max_stacks = 5;
	b.options.poll_ms = 5;
	b.options.no_uprobe_multi = true;
	assert_int_equal(gp_daemon_config_restart_keys(&a, &b, buf, sizeof(buf)), 8);
	assert_string_equal(
		buf,
		"reports.state_dir, trace.stacks, trace.timeline, trace.aggregate, trace.max_stacks, "
		"trace.ringbuf_mb, trace.poll_ms, trace.uprobe_multi");

	/* a short buffer: truncated, still terminated, the count still right */
	assert_int_equal(gp_daemon_config_restart_keys(&a, &b, buf, 10), 8);
	assert_string_equal(buf, "reports.s");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(shipped_config_is_the_defaults),
		cmocka_unit_test(good_values),
		cmocka_unit_test(bad_values),
		cmocka_unit_test(empty_value),
		cmocka_unit_test(unknown_key_and_section),
		cmocka_unit_test(key_outside_section),
		cmocka_unit_test(duplicate_key),
		cmocka_unit_test(syntax_errors),
		cmocka_unit_test(long_line),
		cmocka_unit_test(every_problem_in_one_pass),
		cmocka_unit_test(comments_blank_lines_and_bom),
		cmocka_unit_test(empty_file),
		cmocka_unit_test(missing_file),
		cmocka_unit_test(unreadable_file),
		cmocka_unit_test(restart_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
