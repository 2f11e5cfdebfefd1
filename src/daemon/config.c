/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * config.c — reads the daemon's configuration file (see config.h and
 * config/gpuprobed.conf).
 *
 * inih splits the file into sections and "key = value" pairs; everything
 * else is ours: the keys are option_table.h's rows with a KEY (their kind,
 * range, defaults and whether a reload applies them), so that a value is
 * checked the moment it is read and every problem of the file is told in one
 * pass, each as one line "PATH:LINE: [section] key: problem (allowed)".
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <ini.h>

#include "daemon/config.h"
#include "options/option_spec.h"
#include "log.h"

#define WHY_LEN 256

/* p->sec beyond the table's sections: an unknown or malformed header, whose keys are ignored (it was reported) */
#define SEC_BAD GP_SECTION_COUNT

/* A parser of its own stores the value or writes why not into why (the problem and what is allowed). */
typedef int (*parse_fn)(const char *v, struct gp_daemon_config *c, char *why);

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

static int parse_listen(const char *v, struct gp_daemon_config *c, char *why)
{
	char addr[sizeof(c->listen_addr)];
	unsigned char bin[16];
	const char *colon, *a = v;
	size_t alen;
	unsigned port;
	int af = AF_INET;

	if (!strcasecmp(v, "off")) { /* like the booleans' off */
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
			return why_printf(
				why, "'%s': an IPv6 address goes in brackets, e.g. [::1]:9400", v);
		goto bad;
	}
	if (!parse_range(colon + 1, 1, 65535, &port))
		return why_printf(why, "'%s': the port is not a number between 1 and 65535", v);
	c->listen_enabled = true;
	strcpy(c->listen_addr, addr);
	c->listen_port = port;
	return 0;
bad:
	return why_printf(why,
			  "'%s' is not ADDRESS:PORT with a numeric address "
			  "(e.g. 127.0.0.1:9400, [::1]:9400, 0.0.0.0:9400) or off",
			  v);
}

static int parse_process_labels(const char *v, struct gp_daemon_config *c, char *why)
{
	if (!strcmp(v, "group") || !strcmp(v, "pid")) {
		c->process_labels = !strcmp(v, "pid") ? GP_LABELS_PID : GP_LABELS_GROUP;
		return 0;
	}
	return why_printf(why, "'%s' is not group or pid", v);
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
	return why_printf(why,
			  "'%s' is not a variable name (letters, digits and _, "
			  "not starting with a digit, at most %zu characters)",
			  name, sizeof(c->job_env) - 1);
}

static int parse_state_dir(const char *v, struct gp_daemon_config *c, char *why)
{
	size_t n = strlen(v);

	if (*v != '/')
		return why_printf(why, "'%s' is not an absolute path (it must start with /)", v);
	for (const char *p = v; *p; p++)
		if (iscntrl((unsigned char)*p))
			return why_printf(
				why, "the path contains a control character (an absolute path)");
	while (n > 1 && v[n - 1] == '/') /* "/var/lib/x/" and "/var/lib/x" are the same directory */
		n--;
	if (n >= sizeof(c->state_dir))
		return why_printf(why, "the path is longer than %zu characters",
				  sizeof(c->state_dir) - 1);
	memcpy(c->state_dir, v, n);
	c->state_dir[n] = '\0';
	return 0;
}

static int parse_max_size(const char *v, struct gp_daemon_config *c, char *why)
{
	unsigned long long n, mult = 1;
	const char *end;

	if (!parse_u64(v, &end, &n))
		goto bad;
	switch (*end) {
	case '\0':
		break;
	case 'K':
	case 'k':
		mult = 1ULL << 10;
		end++;
		break;
	case 'M':
	case 'm':
		mult = 1ULL << 20;
		end++;
		break;
	case 'G':
	case 'g':
		mult = 1ULL << 30;
		end++;
		break;
	default:
		goto bad;
	}
	if (*end || n > ULLONG_MAX / mult || n * mult < (1ULL << 20))
		goto bad;
	c->report_max_bytes = n * mult;
	return 0;
bad:
	return why_printf(why,
			  "'%s' is not a size of at least 1M (bytes, or a number followed by "
			  "K, M or G, 1024-based)",
			  v);
}

/* A PATH key: an absolute path, into the field's buffer. */
static int parse_path(const char *v, char *buf, size_t size, char *why)
{
	if (*v != '/')
		return why_printf(why, "'%s' is not an absolute path (it must start with /)", v);
	if (strlen(v) >= size)
		return why_printf(why, "the path is longer than %zu characters", size - 1);
	strcpy(buf, v);
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
	return why_printf(
		why,
		"'%s' is not off or a percentage above 0%% and at most 100%% (e.g. 1%% or 0.5%%)",
		v);
}

static int parse_log_level(const char *v, struct gp_daemon_config *c, char *why)
{
	static const struct {
		const char *name;
		int level;
	} levels[] = {
		{ "err", LOG_ERR },   { "warning", LOG_WARNING }, { "notice", LOG_NOTICE },
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

/*
 * struct gp_daemon_config's field of each key: a session's option is kept in c->options, in the
 * row's own field (IN_OPTIONS); a key of the daemon's own has a field of its own (CFG); CFG_NONE:
 * its parser of its own sets its fields.
 */
#define IN_OPTIONS                                     \
	{                                              \
		.ctype = GP_CT_OTHER, .size = SIZE_MAX \
	}
#define CFG(f)	 GP_FIELD_OF(struct gp_daemon_config, f)
#define FIELD(f) GP_FIELD_OF(struct gp_daemon_config, options.f)
#define CFG_NONE  \
	{         \
		0 \
	}
#define NO_FIELD					    CFG_NONE
#define KEY(sec, place, change, cfg, why)		    cfg
#define NO_KEY						    CFG_NONE
#define GP_OPTION(name, kind, scope, field, flag, key, ...) [GP_OPT_##name] = { key, field },
static const struct {
	struct gp_field key, in_options;
} key_fields[GP_OPT_COUNT] = {
#include "options/option_table.h"
};
#undef GP_OPTION
#undef IN_OPTIONS
#undef CFG
#undef FIELD
#undef CFG_NONE
#undef NO_FIELD
#undef KEY
#undef NO_KEY

/* Where row i's value is kept in struct gp_daemon_config (size 0: nowhere, its parser's own). */
static const struct gp_field *cfg_field(size_t i)
{
	return key_fields[i].key.size == SIZE_MAX ? &key_fields[i].in_options : &key_fields[i].key;
}

static const parse_fn custom_parsers[GP_OPT_COUNT] = {
	[GP_OPT_listen] = parse_listen,
	[GP_OPT_job_label] = parse_job_label,
	[GP_OPT_process_labels] = parse_process_labels,
	[GP_OPT_state_dir] = parse_state_dir,
	[GP_OPT_max_size] = parse_max_size,
	[GP_OPT_overhead_budget] = parse_overhead_budget,
	[GP_OPT_level] = parse_log_level,
};

static size_t id_of(const struct gp_option *opt)
{
	return (size_t)(opt - gp_option_table);
}

static int parse_key(const struct gp_option *opt, const char *v, struct gp_daemon_config *c,
		     char *why)
{
	const struct gp_field *f = cfg_field(id_of(opt));
	char *field = (char *)c + f->off;

	switch (opt->kind) {
	case GP_KIND_CUSTOM:
		if (!custom_parsers[id_of(opt)])
			return why_printf(why, "no parser (option_table.h)");
		return custom_parsers[id_of(opt)](v, c, why);
	case GP_KIND_PATH:
		return parse_path(v, field, f->size, why);
	case GP_KIND_UINT_OFF:
		if (!strcmp(v, "off")) {
			*(unsigned *)field = 0;
			return 0;
		}
		break;
	default:
		break;
	}
	if (gp_option_parse(opt, v, field))
		return why_printf(why, "'%s' %s", v, opt->conf_why);
	return 0;
}

void gp_daemon_config_defaults(struct gp_daemon_config *c)
{
	char why[WHY_LEN];

	/* zeroed first: restart_keys compares raw bytes, padding included */
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];

		if (opt->section != GP_SECTION_NONE && opt->daemon_default &&
		    parse_key(opt, opt->daemon_default, c, why))
			gp_err("[%s] %s: the default: %s", gp_option_section_name(opt->section),
			       opt->name, why);
	}
}

int gp_daemon_config_check_table(void)
{
	int problems = 0;

	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];
		const struct gp_field *f = cfg_field(i);
		enum gp_ctype want = gp_option_ctype(opt->kind);
		const char *why = NULL;

		if (opt->section == GP_SECTION_NONE)
			continue;
		if (opt->kind == GP_KIND_PATH) /* the file's copy: a buffer */
			want = GP_CT_CHARS;
		if (opt->kind == GP_KIND_CUSTOM && !custom_parsers[i])
			why = "a CUSTOM key without a parser";
		else if (opt->kind != GP_KIND_CUSTOM && f->ctype != want)
			why = "its field's type is not its kind's";
		else if (opt->change == GP_RESTART && !f->size)
			why = "a restart key without a field to compare";
		else if (opt->field.size && opt->kind != GP_KIND_PATH &&
			 f != &key_fields[i].in_options)
			why = "a session's option with a field of its own here: IN_OPTIONS keeps it";
		if (why) {
			gp_err("option_table.h: %s: %s", opt->name, why);
			problems++;
		}
	}
	return problems;
}

/* ---- reading the file ----------------------------------------------------- */

enum line_kind { LINE_OTHER, LINE_KEY };

struct parse {
	const char *path;
	FILE *f;
	struct gp_daemon_config *c;
	char *buf; /* getline's */
	size_t cap;
	int lineno;
	enum line_kind kind;	/* of line lineno */
	bool handled;		/* inih called us for line lineno */
	unsigned sec;		/* enum gp_option_section, or SEC_BAD */
	int seen[GP_OPT_COUNT]; /* the line each key was given on, 0: not yet */
	int errors;
	int read_errno;
};

static void problem(struct parse *p, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
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
		problem(p, p->lineno,
			"'%s': a section header needs its closing ] "
			"(sections: [metrics], [reports], [trace], [log])",
			trim(s));
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
	for (i = GP_SECTION_METRICS; i < GP_SECTION_COUNT; i++) {
		if (!strcmp(name, gp_option_section_name(i))) {
			p->sec = i;
			return;
		}
	}
	problem(p, p->lineno,
		"[%s]: unknown section (sections: [metrics], [reports], [trace], [log])", name);
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
	if (p->lineno == 1 && !strncmp(s, "\xEF\xBB\xBF", 3)) /* a UTF-8 byte-order mark */
		s += 3;
	/* leading blanks would make inih take the line for the continuation of the previous value */
	while (isspace((unsigned char)*s))
		s++;

	str[0] = '\0'; /* what inih sees of a line we reject here: nothing */
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

/* "[trace] stack: unknown key (the keys of [trace]: stacks, timeline, ...)", in the file's order. */
static void unknown_key(struct parse *p, const char *name)
{
	const struct gp_option *keys[GP_OPT_COUNT];
	size_t n = gp_options_in_file_order(keys), len = 0;
	const char *sec = gp_option_section_name(p->sec);
	char allowed[256] = "";

	for (size_t k = 0; k < n; k++)
		if (keys[k]->section == p->sec)
			len += (size_t)snprintf(allowed + len, sizeof(allowed) - len, "%s%s",
						len ? ", " : "", keys[k]->name);
	problem(p, p->lineno, "[%s] %s: unknown key (the keys of [%s]: %s)", sec, name, sec,
		allowed);
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse *p = user;
	const char *sec = gp_option_section_name(p->sec);
	char why[WHY_LEN];
	size_t i;

	(void)section; /* ours is p->sec: it also knows a header inih did not accept */
	p->handled = true;
	if (p->kind != LINE_KEY)
		return 1;
	if (p->sec == SEC_BAD) /* the header was reported; its keys would only repeat it */
		return 1;
	if (p->sec == GP_SECTION_NONE) {
		problem(p, p->lineno,
			"%s: a key before any [section] (sections: [metrics], [reports], [trace], [log])",
			name);
		return 1;
	}
	for (i = 0; i < GP_OPT_COUNT; i++)
		if (gp_option_table[i].section == p->sec && !strcmp(gp_option_table[i].name, name))
			break;
	if (i == GP_OPT_COUNT) {
		unknown_key(p, name);
		return 1;
	}
	if (p->seen[i]) {
		problem(p, p->lineno,
			"[%s] %s: given twice, on lines %d and %d (each key at most once)", sec,
			name, p->seen[i], p->lineno);
		return 1;
	}
	p->seen[i] = p->lineno;
	if (!*value) {
		problem(p, p->lineno,
			"[%s] %s: no value (see config/gpuprobed.conf for what it takes)", sec,
			name);
		return 1;
	}
	if (parse_key(&gp_option_table[i], value, p->c, why))
		problem(p, p->lineno, "[%s] %s: %s", sec, name, why);
	return 1; /* never stop inih: every problem of the file is told in one pass */
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

/* A restart key's value in c. */
static const char *restart_field(const struct gp_daemon_config *c, const struct gp_option *opt)
{
	return (const char *)c + cfg_field(id_of(opt))->off;
}

int gp_daemon_config_restart_keys(const struct gp_daemon_config *old,
				  const struct gp_daemon_config *new_, char *buf, size_t len)
{
	const struct gp_option *keys[GP_OPT_COUNT];
	size_t nkeys = gp_options_in_file_order(keys), used = 0;
	int n = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < nkeys; i++) {
		const struct gp_field *f = cfg_field(id_of(keys[i]));
		const char *a = restart_field(old, keys[i]), *b = restart_field(new_, keys[i]);
		bool same = f->ctype == GP_CT_CHARS ? !strcmp(a, b) : !memcmp(a, b, f->size);

		if (keys[i]->change != GP_RESTART || same)
			continue;
		n++;
		if (used < len) {
			int w = snprintf(buf + used, len - used, "%s%s.%s", used ? ", " : "",
					 gp_option_section_name(keys[i]->section), keys[i]->name);
			used += w > 0 ? (size_t)w : 0;
		}
	}
	return n;
}

void gp_daemon_config_keep_running(struct gp_daemon_config *next,
				   const struct gp_daemon_config *running)
{
	for (size_t i = 0; i < GP_OPT_COUNT; i++)
		if (gp_option_table[i].change == GP_RESTART &&
		    gp_option_table[i].section != GP_SECTION_NONE)
			memcpy((char *)next + cfg_field(i)->off,
			       restart_field(running, &gp_option_table[i]), cfg_field(i)->size);
}

void gp_daemon_config_to_options(const struct gp_daemon_config *c, struct gp_options *o)
{
	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];
		const char *from = (const char *)c + cfg_field(i)->off;
		void *to = gp_option_field(opt, o);

		if (opt->section == GP_SECTION_NONE || !to)
			continue;
		if (opt->kind == GP_KIND_PATH) /* the file's buffer; unset: none */
			*(const char **)to = *from ? from : NULL;
		else
			memcpy(to, from,
			       opt->field.size); /* alike (gp_daemon_config_check_table) */
	}
}
