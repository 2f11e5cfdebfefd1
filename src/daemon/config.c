/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * config.c — reads the daemon's configuration file (see config.h and
 * config/gpuprobed.conf).
 *
 * inih splits the file into sections and "key = value" pairs; everything
 * else is ours: one table lists every key with its parser, so that a value
 * is checked the moment it is read and every problem of the file is told in
 * one pass, each as one line "PATH:LINE: [section] key: problem (allowed)".
 *
 * We feed inih through our own line reader rather than ini_parse(), for
 * three reasons: it gives us the line number (the packaged inih is built
 * without INI_HANDLER_LINENO), it lets us see the lines inih rejects without
 * calling us (so every syntax error is reported, not only the first), and it
 * strips leading blanks so that an indented line is an ordinary line, not
 * inih's "continuation of the previous value".
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <ini.h>

#include "daemon/config.h"
#include "options/options.h"
#include "log.h"

#define WHY_LEN 256

enum section {
	SEC_NONE,      /* before any [section] */
	SEC_METRICS,
	SEC_REPORTS,
	SEC_TRACE,
	SEC_LOG,
	SEC_BAD,       /* unknown or malformed header: its keys are ignored, the header was reported */
};

static const char *const section_names[] = {
	[SEC_METRICS] = "metrics",
	[SEC_REPORTS] = "reports",
	[SEC_TRACE] = "trace",
	[SEC_LOG] = "log",
};

/* A parser stores the value or writes why not into why (the problem and what is allowed). */
typedef int (*parse_fn)(const char *v, struct gp_daemon_config *c, char *why);

struct key {
	enum section sec;
	const char *name;
	parse_fn parse;
	/*
	 * Needs a restart: what the BPF programs are loaded with, and the state
	 * directory. max_processes and overhead_budget are [trace] keys that only
	 * userspace uses (eviction, the budget check): they apply on reload.
	 */
	bool restart;
	size_t off, size;      /* the field(s) restart_keys compares */
	bool is_string;
};

/* ---- value parsers -------------------------------------------------------- */

static int why_printf(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int why_printf(char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, WHY_LEN, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Plain decimal only: strtoull alone would take signs, blanks and "0x". */
static bool parse_u64(const char *s, const char **end, unsigned long long *out)
{
	unsigned long long v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return false;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (ULLONG_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*end = p;
	*out = v;
	return true;
}

static bool parse_range(const char *s, unsigned long long lo, unsigned long long hi, unsigned *out)
{
	unsigned long long v;
	const char *end;

	if (!parse_u64(s, &end, &v) || *end || v < lo || v > hi)
		return false;
	*out = (unsigned)v;
	return true;
}

static bool parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "on", "true", "yes", "1" }, *const no[] = { "off", "false", "no", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i]))
			return *out = true, true;
		if (!strcasecmp(s, no[i]))
			return *out = false, true;
	}
	return false;
}

#define BOOL_ALLOWED "on, off, true, false, yes, no, 1 or 0"

/* One parser per boolean field: the table wants a function per key. */
#define BOOL_PARSER(field)                                                              \
	static int parse_##field(const char *v, struct gp_daemon_config *c, char *why)  \
	{                                                                               \
		if (!parse_bool(v, &c->field))                                          \
			return why_printf(why, "'%s' is not a boolean (" BOOL_ALLOWED ")", v); \
		return 0;                                                               \
	}

BOOL_PARSER(stacks)
BOOL_PARSER(timeline)
BOOL_PARSER(aggregate)
BOOL_PARSER(uprobe_multi)

static int parse_listen(const char *v, struct gp_daemon_config *c, char *why)
{
	char addr[sizeof(c->listen_addr)];
	unsigned char bin[16];
	const char *colon, *a = v;
	size_t alen;
	unsigned port;
	int af = AF_INET;

	if (!strcasecmp(v, "off")) {   /* like the booleans' off */
		c->listen_enabled = false;
		return 0;
	}
	if (*v == '[') {
		/* [IPv6]:PORT, as in URLs: the port's colon is otherwise ambiguous */
		colon = strstr(v, "]:");
		if (!colon)
			goto bad;
		a = v + 1;
		alen = (size_t)(colon - a);
		colon++;
		af = AF_INET6;
	} else {
		colon = strrchr(v, ':');
		if (!colon)
			goto bad;
		alen = (size_t)(colon - v);
	}
	if (alen == 0 || alen >= sizeof(addr))
		goto bad;
	memcpy(addr, a, alen);
	addr[alen] = '\0';
	if (inet_pton(af, addr, bin) != 1) {
		if (af == AF_INET && inet_pton(AF_INET6, addr, bin) == 1)
			return why_printf(why, "'%s': an IPv6 address goes in brackets, e.g. [::1]:9400", v);
		goto bad;
	}
	if (!parse_range(colon + 1, 1, 65535, &port))
		return why_printf(why, "'%s': the port is not a number between 1 and 65535", v);
	c->listen_enabled = true;
	strcpy(c->listen_addr, addr);
	c->listen_port = port;
	return 0;
bad:
	return why_printf(why, "'%s' is not ADDRESS:PORT with a numeric address "
			  "(e.g. 127.0.0.1:9400, [::1]:9400, 0.0.0.0:9400) or off", v);
}

static int parse_job_label(const char *v, struct gp_daemon_config *c, char *why)
{
	const char *name;

	if (!strcmp(v, "cgroup")) {
		c->job_source = GP_JOB_CGROUP;
		return 0;
	}
	if (!strcmp(v, "none")) {
		c->job_source = GP_JOB_NONE;
		return 0;
	}
	if (strncmp(v, "env:", 4))
		return why_printf(why, "'%s' is not cgroup, env:NAME or none", v);
	name = v + 4;
	/* POSIX's portable variable names: what a shell can export */
	if (!*name || isdigit((unsigned char)*name) || strlen(name) >= sizeof(c->job_env))
		goto bad_name;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			goto bad_name;
	c->job_source = GP_JOB_ENV;
	strcpy(c->job_env, name);
	return 0;
bad_name:
	return why_printf(why, "'%s' is not a variable name (letters, digits and _, "
			  "not starting with a digit, at most %zu characters)", name, sizeof(c->job_env) - 1);
}

static int parse_exited_grace(const char *v, struct gp_daemon_config *c, char *why)
{
	if (!parse_range(v, 0, UINT_MAX, &c->exited_grace_s))
		return why_printf(why, "'%s' is not a number of seconds (0 to %u)", v, UINT_MAX);
	return 0;
}

static int parse_state_dir(const char *v, struct gp_daemon_config *c, char *why)
{
	size_t n = strlen(v);

	if (*v != '/')
		return why_printf(why, "'%s' is not an absolute path (it must start with /)", v);
	for (const char *p = v; *p; p++)
		if (iscntrl((unsigned char)*p))
			return why_printf(why, "the path contains a control character (an absolute path)");
	while (n > 1 && v[n - 1] == '/')  /* "/var/lib/x/" and "/var/lib/x" are the same directory */
		n--;
	if (n >= sizeof(c->state_dir))
		return why_printf(why, "the path is longer than %zu characters", sizeof(c->state_dir) - 1);
	memcpy(c->state_dir, v, n);
	c->state_dir[n] = '\0';
	return 0;
}

static int parse_interval(const char *v, struct gp_daemon_config *c, char *why)
{
	if (!parse_range(v, 0, UINT_MAX, &c->report_interval_s))
		return why_printf(why, "'%s' is not a number of seconds (0: a report only at exit, up to %u)",
				  v, UINT_MAX);
	return 0;
}

static int parse_max_size(const char *v, struct gp_daemon_config *c, char *why)
{
	unsigned long long n, mult = 1;
	const char *end;

	if (!parse_u64(v, &end, &n))
		goto bad;
	switch (*end) {
	case '\0': break;
	case 'K': case 'k': mult = 1ULL << 10; end++; break;
	case 'M': case 'm': mult = 1ULL << 20; end++; break;
	case 'G': case 'g': mult = 1ULL << 30; end++; break;
	default: goto bad;
	}
	if (*end || n > ULLONG_MAX / mult || n * mult < (1ULL << 20))
		goto bad;
	c->report_max_bytes = n * mult;
	return 0;
bad:
	return why_printf(why, "'%s' is not a size of at least 1M (bytes, or a number followed by "
			  "K, M or G, 1024-based)", v);
}

static int parse_max_processes(const char *v, struct gp_daemon_config *c, char *why)
{
	if (!parse_range(v, 1, 1000000, &c->max_processes))
		return why_printf(why, "'%s' is not a number between 1 and 1000000", v);
	return 0;
}

static int parse_max_stacks(const char *v, struct gp_daemon_config *c, char *why)
{
	/* the same bound as the command line's --max-stacks */
	if (!parse_range(v, 1, 100000000, &c->max_stacks))
		return why_printf(why, "'%s' is not a number between 1 and 100000000", v);
	return 0;
}

static int parse_ringbuf_mb(const char *v, struct gp_daemon_config *c, char *why)
{
	unsigned n;

	/* the kernel wants a ring buffer of a power-of-two number of pages */
	if (!parse_range(v, 1, 4096, &n) || (n & (n - 1)))
		return why_printf(why, "'%s' is not a power of two between 1 and 4096", v);
	c->ringbuf_mb = n;
	return 0;
}

static int parse_poll_ms(const char *v, struct gp_daemon_config *c, char *why)
{
	if (!parse_range(v, 1, 1000, &c->poll_ms))
		return why_printf(why, "'%s' is not a number of milliseconds between 1 and 1000", v);
	return 0;
}

static int parse_nvml_interval(const char *v, struct gp_daemon_config *c, char *why)
{
	if (!strcmp(v, "off")) {
		c->nvml_interval_ms = 0;
		return 0;
	}
	if (!parse_range(v, 10, 60000, &c->nvml_interval_ms))
		return why_printf(why, "'%s' is not off or a number of milliseconds between 10 and 60000", v);
	return 0;
}

static int parse_nvml_lib(const char *v, struct gp_daemon_config *c, char *why)
{
	if (*v != '/')
		return why_printf(why, "'%s' is not an absolute path (it must start with /)", v);
	if (strlen(v) >= sizeof(c->nvml_lib))
		return why_printf(why, "the path is longer than %zu characters", sizeof(c->nvml_lib) - 1);
	strcpy(c->nvml_lib, v);
	return 0;
}

static int parse_hold_max_ms(const char *v, struct gp_daemon_config *c, char *why)
{
	if (!parse_range(v, 1, 60000, &c->hold_max_ms))
		return why_printf(why, "'%s' is not a number of milliseconds between 1 and 60000", v);
	return 0;
}

static int parse_stall_timeout(const char *v, struct gp_daemon_config *c, char *why)
{
	if (gp_parse_stall_timeout(v, &c->stall_timeout_s))
		return why_printf(why, "'%s' is not a number of seconds between 0 (off) and 86400", v);
	return 0;
}

static int parse_overhead_budget(const char *v, struct gp_daemon_config *c, char *why)
{
	const char *p = v;
	double pct;
	char *end;

	if (!strcasecmp(v, "off")) {
		c->overhead_budget = 0;
		return 0;
	}
	/* digits[.digits]% — checked by hand because strtod also takes signs, exponents, hex, "inf" */
	if (!isdigit((unsigned char)*p))
		goto bad;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			goto bad;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (p[0] != '%' || p[1])
		goto bad;
	errno = 0;
	pct = strtod(v, &end);
	if (errno || end != p || !(pct > 0) || pct > 100)
		goto bad;
	c->overhead_budget = pct / 100;
	return 0;
bad:
	return why_printf(why, "'%s' is not off or a percentage above 0%% and at most 100%% (e.g. 1%% or 0.5%%)", v);
}

static int parse_log_level(const char *v, struct gp_daemon_config *c, char *why)
{
	static const struct { const char *name; int level; } levels[] = {
		{ "err", LOG_ERR }, { "warning", LOG_WARNING }, { "notice", LOG_NOTICE },
		{ "info", LOG_INFO }, { "debug", LOG_DEBUG },
	};

	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		if (!strcmp(v, levels[i].name)) {
			c->log_level = levels[i].level;
			return 0;
		}
	}
	return why_printf(why, "'%s' is not err, warning, notice, info or debug", v);
}

/* ---- the keys ----------------------------------------------------------- */

#define FIELD(f) offsetof(struct gp_daemon_config, f), sizeof(((struct gp_daemon_config *)0)->f)

static const struct key keys[] = {
	/* listen sets three fields: compared from listen_enabled through listen_port */
	{ SEC_METRICS, "listen", parse_listen, false,
	  offsetof(struct gp_daemon_config, listen_enabled),
	  offsetof(struct gp_daemon_config, job_source) - offsetof(struct gp_daemon_config, listen_enabled), false },
	{ SEC_METRICS, "job_label", parse_job_label, false, FIELD(job_source), false },
	{ SEC_METRICS, "exited_grace", parse_exited_grace, false, FIELD(exited_grace_s), false },
	{ SEC_REPORTS, "state_dir", parse_state_dir, true, FIELD(state_dir), true },
	{ SEC_REPORTS, "interval", parse_interval, false, FIELD(report_interval_s), false },
	{ SEC_REPORTS, "max_size", parse_max_size, false, FIELD(report_max_bytes), false },
	{ SEC_TRACE, "stacks", parse_stacks, true, FIELD(stacks), false },
	{ SEC_TRACE, "timeline", parse_timeline, true, FIELD(timeline), false },
	{ SEC_TRACE, "aggregate", parse_aggregate, true, FIELD(aggregate), false },
	{ SEC_TRACE, "max_processes", parse_max_processes, false, FIELD(max_processes), false },
	{ SEC_TRACE, "max_stacks", parse_max_stacks, true, FIELD(max_stacks), false },
	{ SEC_TRACE, "ringbuf_mb", parse_ringbuf_mb, true, FIELD(ringbuf_mb), false },
	{ SEC_TRACE, "poll_ms", parse_poll_ms, true, FIELD(poll_ms), false },
	{ SEC_TRACE, "hold_max_ms", parse_hold_max_ms, true, FIELD(hold_max_ms), false },
	{ SEC_TRACE, "nvml_interval", parse_nvml_interval, true, FIELD(nvml_interval_ms), false },
	{ SEC_TRACE, "nvml_lib", parse_nvml_lib, true, FIELD(nvml_lib), false },
	{ SEC_TRACE, "stall_timeout", parse_stall_timeout, true, FIELD(stall_timeout_s), false },
	{ SEC_TRACE, "uprobe_multi", parse_uprobe_multi, true, FIELD(uprobe_multi), false },
	{ SEC_TRACE, "overhead_budget", parse_overhead_budget, false, FIELD(overhead_budget), false },
	{ SEC_LOG, "level", parse_log_level, false, FIELD(log_level), false },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

void gp_daemon_config_defaults(struct gp_daemon_config *c)
{
	/* zeroed first: restart_keys compares raw bytes, padding included */
	memset(c, 0, sizeof(*c));
	c->listen_enabled = true;
	strcpy(c->listen_addr, GP_DAEMON_DEFAULT_LISTEN_ADDR);
	c->listen_port = GP_DAEMON_DEFAULT_LISTEN_PORT;
	c->job_source = GP_JOB_CGROUP;
	c->exited_grace_s = 300;
	strcpy(c->state_dir, GP_DAEMON_DEFAULT_STATE_DIR);
	c->report_interval_s = 3600;
	c->report_max_bytes = 256ULL << 20;
	c->stacks = false;
	c->timeline = false;
	c->aggregate = true;
	c->max_processes = 4096;
	c->max_stacks = 100000;
	c->ringbuf_mb = 16;
	c->poll_ms = 10;
	c->hold_max_ms = GP_DEFAULT_HOLD_MAX_MS;
	c->nvml_interval_ms = GP_DEFAULT_NVML_MS;
	c->stall_timeout_s = GP_DEFAULT_STALL_TIMEOUT_S;
	c->uprobe_multi = true;
	c->overhead_budget = 0;
	c->log_level = LOG_NOTICE;
}

/* ---- reading the file ----------------------------------------------------- */

enum line_kind { LINE_OTHER, LINE_KEY };

struct parse {
	const char *path;
	FILE *f;
	struct gp_daemon_config *c;
	char *buf;              /* getline's */
	size_t cap;
	int lineno;
	enum line_kind kind;    /* of line lineno */
	bool handled;           /* inih called us for line lineno */
	enum section sec;
	int seen[NKEYS];        /* the line each key was given on, 0: not yet */
	int errors;
	int read_errno;
};

static void problem(struct parse *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void problem(struct parse *p, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gp_err("%s:%d: %s", p->path, line, msg);
	p->errors++;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* A section header line (already stripped of leading blanks): remember which section follows. */
static void section_line(struct parse *p, char *s)
{
	char *close = strchr(s, ']'), *rest, *name;
	size_t i;

	if (!close) {
		problem(p, p->lineno, "'%s': a section header needs its closing ] "
			"(sections: [metrics], [reports], [trace], [log])", trim(s));
		p->sec = SEC_BAD;
		return;
	}
	*close = '\0';
	rest = trim(close + 1);
	name = trim(s + 1);
	if (*rest && *rest != ';' && *rest != '#') {
		problem(p, p->lineno, "[%s]: text after the section header", name);
		p->sec = SEC_BAD;
		return;
	}
	for (i = SEC_METRICS; i <= SEC_LOG; i++) {
		if (!strcmp(name, section_names[i])) {
			p->sec = (enum section)i;
			return;
		}
	}
	problem(p, p->lineno, "[%s]: unknown section (sections: [metrics], [reports], [trace], [log])", name);
	p->sec = SEC_BAD;
}

/*
 * inih's reader (an fgets): one whole line per call. Before reading the next
 * line it settles the previous one: a line that should have been a
 * "key = value" but that inih did not hand to us is a syntax error.
 */
static char *reader(char *str, int num, void *stream)
{
	struct parse *p = stream;
	ssize_t n;
	char *s;

	if (p->lineno > 0 && p->kind == LINE_KEY && !p->handled)
		problem(p, p->lineno, "not a 'key = value' line or [section]");
	p->kind = LINE_OTHER;
	p->handled = false;

	errno = 0;
	n = getline(&p->buf, &p->cap, p->f);
	if (n < 0) {
		if (ferror(p->f))
			p->read_errno = errno ? errno : EIO;
		return NULL;
	}
	p->lineno++;
	if (n > 0 && p->buf[n - 1] == '\n')
		p->buf[--n] = '\0';
	s = p->buf;
	if (p->lineno == 1 && !strncmp(s, "\xEF\xBB\xBF", 3))  /* a UTF-8 byte-order mark */
		s += 3;
	/* leading blanks would make inih take the line for the continuation of the previous value */
	while (isspace((unsigned char)*s))
		s++;

	str[0] = '\0';   /* what inih sees of a line we reject here: nothing */
	if ((ssize_t)strlen(p->buf) != n) {
		problem(p, p->lineno, "the line contains a NUL byte");
		return str;
	}
	if (strlen(s) > (size_t)num - 1) {
		problem(p, p->lineno, "the line is longer than %d characters", num - 1);
		return str;
	}
	if (*s == '\0' || *s == ';' || *s == '#')
		return str;
	if (*s == '[') {
		strcpy(str, s);
		section_line(p, s);
		return str;
	}
	p->kind = LINE_KEY;
	strcpy(str, s);
	return str;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse *p = user;
	char why[WHY_LEN];
	size_t i;

	(void)section;  /* ours is p->sec: it also knows a header inih did not accept */
	p->handled = true;
	if (p->kind != LINE_KEY)
		return 1;
	if (p->sec == SEC_BAD)        /* the header was reported; its keys would only repeat it */
		return 1;
	if (p->sec == SEC_NONE) {
		problem(p, p->lineno, "%s: a key before any [section] (sections: [metrics], [reports], [trace], [log])",
			name);
		return 1;
	}
	for (i = 0; i < NKEYS; i++)
		if (keys[i].sec == p->sec && !strcmp(keys[i].name, name))
			break;
	if (i == NKEYS) {
		char allowed[256] = "";
		size_t len = 0;

		for (size_t k = 0; k < NKEYS; k++)
			if (keys[k].sec == p->sec)
				len += (size_t)snprintf(allowed + len, sizeof(allowed) - len, "%s%s",
							len ? ", " : "", keys[k].name);
		problem(p, p->lineno, "[%s] %s: unknown key (the keys of [%s]: %s)", section_names[p->sec], name,
			section_names[p->sec], allowed);
		return 1;
	}
	if (p->seen[i]) {
		problem(p, p->lineno, "[%s] %s: given twice, on lines %d and %d (each key at most once)",
			section_names[p->sec], name, p->seen[i], p->lineno);
		return 1;
	}
	p->seen[i] = p->lineno;
	if (!*value) {
		problem(p, p->lineno, "[%s] %s: no value (see config/gpuprobed.conf for what it takes)",
			section_names[p->sec], name);
		return 1;
	}
	if (keys[i].parse(value, p->c, why))
		problem(p, p->lineno, "[%s] %s: %s", section_names[p->sec], name, why);
	return 1;   /* never stop inih: every problem of the file is told in one pass */
}

int gp_daemon_config_load(const char *path, bool missing_ok, struct gp_daemon_config *c)
{
	struct parse p = { .path = path, .c = c };
	int ret;

	gp_daemon_config_defaults(c);
	p.f = fopen(path, "re");
	if (!p.f) {
		ret = -errno;
		if (missing_ok && ret == -ENOENT)
			return 0;
		gp_err("%s: cannot read: %s", path, strerror(-ret));
		return ret;
	}
	ret = ini_parse_stream(reader, &p, handler, &p);
	free(p.buf);
	fclose(p.f);
	if (p.read_errno) {
		gp_err("%s: cannot read: %s", path, strerror(p.read_errno));
		return -p.read_errno;
	}
	/* every line inih refuses was reported by reader(); this is only in case it refuses one more */
	if (ret > 0 && !p.errors)
		problem(&p, ret, "not a 'key = value' line or [section]");
	else if (ret < 0 && !p.errors)
		problem(&p, 0, "inih failed (%d)", ret);
	return p.errors ? -EINVAL : 0;
}

int gp_daemon_config_restart_keys(const struct gp_daemon_config *old, const struct gp_daemon_config *new_,
				  char *buf, size_t len)
{
	size_t used = 0;
	int n = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < NKEYS; i++) {
		const char *a = (const char *)old + keys[i].off, *b = (const char *)new_ + keys[i].off;
		bool same = keys[i].is_string ? !strcmp(a, b) : !memcmp(a, b, keys[i].size);

		if (!keys[i].restart || same)
			continue;
		n++;
		if (used < len) {
			int w = snprintf(buf + used, len - used, "%s%s.%s", used ? ", " : "",
					 section_names[keys[i].sec], keys[i].name);
			used += w > 0 ? (size_t)w : 0;
		}
	}
	return n;
}
