/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* option_spec.c — option_table.h's rows as data, and reading and storing a value by its kind. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "options/option_spec.h"

#define FIELD(f) GP_FIELD_OF(struct gp_options, f)
#define NO_FIELD  \
	{         \
		0 \
	}
#define ARG(long_, short_, meta_, why) \
	.flag = long_, .short_flag = short_, .meta = meta_, .cli_why = why
#define SWITCH(long_, short_, value) .flag = long_, .short_flag = short_, .switch_value = value
#define NO_FLAG			     .flag = NULL
#define KEY(sec, place_, change_, cfg, why) \
	.section = GP_SECTION_##sec, .place = place_, .change = GP_##change_, .conf_why = why
#define NO_KEY		      .section = GP_SECTION_NONE
#define RANGE(lo_, hi_)	      .lo = lo_, .hi = hi_
#define NO_RANGE	      .lo = 0
#define DEFAULTS(cli, daemon) .cli_default = cli, .daemon_default = daemon
#define GP_OPTION(name_, kind_, scope_, field_, flag_, key_, range_, defaults_, help_) \
	[GP_OPT_##name_] = { .name = #name_,                                           \
			     .kind = GP_KIND_##kind_,                                  \
			     .scope = GP_SCOPE_##scope_,                               \
			     .field = field_,                                          \
			     flag_,                                                    \
			     key_,                                                     \
			     range_,                                                   \
			     defaults_,                                                \
			     .help = help_ },

const struct gp_option gp_option_table[GP_OPT_COUNT] = {
#include "options/option_table.h"
};

#undef GP_OPTION
#undef FIELD
#undef NO_FIELD
#undef ARG
#undef SWITCH
#undef NO_FLAG
#undef KEY
#undef NO_KEY
#undef RANGE
#undef NO_RANGE
#undef DEFAULTS

const char *gp_option_section_name(enum gp_option_section s)
{
	static const char *const names[GP_SECTION_COUNT] = {
		[GP_SECTION_METRICS] = "metrics",
		[GP_SECTION_REPORTS] = "reports",
		[GP_SECTION_TRACE] = "trace",
		[GP_SECTION_LOG] = "log",
	};

	return s < GP_SECTION_COUNT && names[s] ? names[s] : "";
}

bool gp_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "on", "true", "yes", "1" };
	static const char *const no[] = { "off", "false", "no", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i]))
			return *out = true, true;
		if (!strcasecmp(s, no[i]))
			return *out = false, true;
	}
	return false;
}

/* Decimal, no sign (strtoul alone would take one), at most max. */
static bool parse_decimal(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

/* Seconds, decimals allowed: lo to hi, or above lo when above. */
static bool parse_seconds(const char *s, double lo, double hi, bool above, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(d) || d < lo || (above && d == lo) || d > hi)
		return false;
	*out = d;
	return true;
}

int gp_option_parse(const struct gp_option *opt, const char *text, void *field)
{
	unsigned long long v;
	bool b;

	switch (opt->kind) {
	case GP_KIND_BOOL:
	case GP_KIND_BOOL_NOT:
		if (!gp_parse_bool(text, &b))
			return -EINVAL;
		*(bool *)field = opt->kind == GP_KIND_BOOL_NOT ? !b : b;
		return 0;
	case GP_KIND_UINT:
	case GP_KIND_UINT_POW2:
	case GP_KIND_UINT_OFF:
	case GP_KIND_U64:
		if (!parse_decimal(text, opt->hi, &v) || v < opt->lo)
			return -EINVAL;
		if (opt->kind == GP_KIND_UINT_POW2 && (v & (v - 1)))
			return -EINVAL;
		if (opt->kind == GP_KIND_U64)
			*(unsigned long long *)field = v;
		else
			*(unsigned *)field = (unsigned)v;
		return 0;
	case GP_KIND_SECONDS:
	case GP_KIND_SECONDS_ABOVE:
		if (!parse_seconds(text, (double)opt->lo, (double)opt->hi,
				   opt->kind == GP_KIND_SECONDS_ABOVE, field))
			return -EINVAL;
		return 0;
	case GP_KIND_STRING:
	case GP_KIND_PATH:
		if (!*text)
			return -EINVAL;
		*(const char **)field = text;
		return 0;
	default:
		return -EINVAL;
	}
}

enum gp_ctype gp_option_ctype(enum gp_option_kind kind)
{
	switch (kind) {
	case GP_KIND_BOOL:
	case GP_KIND_BOOL_NOT:
		return GP_CT_BOOL;
	case GP_KIND_UINT:
	case GP_KIND_UINT_POW2:
	case GP_KIND_UINT_OFF:
		return GP_CT_UINT;
	case GP_KIND_U64:
		return GP_CT_U64;
	case GP_KIND_SECONDS:
	case GP_KIND_SECONDS_ABOVE:
		return GP_CT_DOUBLE;
	case GP_KIND_STRING:
	case GP_KIND_PATH:
		return GP_CT_STRING;
	case GP_KIND_COUNT:
		return GP_CT_INT;
	default:
		return GP_CT_NONE;
	}
}

void gp_option_switch(const struct gp_option *opt, void *field)
{
	switch (opt->kind) {
	case GP_KIND_BOOL:
		*(bool *)field = opt->switch_value;
		break;
	case GP_KIND_BOOL_NOT:
		*(bool *)field = !opt->switch_value;
		break;
	case GP_KIND_COUNT:
		(*(int *)field)++;
		break;
	case GP_KIND_UINT:
	case GP_KIND_UINT_OFF: /* --no-nvml */
		*(unsigned *)field = (unsigned)opt->switch_value;
		break;
	default:
		break;
	}
}

void *gp_option_field(const struct gp_option *opt, struct gp_options *o)
{
	return opt->field.size ? (char *)o + opt->field.off : NULL;
}

bool gp_option_same(const struct gp_option *opt, const struct gp_options *a,
		    const struct gp_options *b)
{
	const char *fa = (const char *)a + opt->field.off, *fb = (const char *)b + opt->field.off;

	if (!opt->field.size)
		return true;
	if (opt->field.ctype == GP_CT_STRING) {
		const char *sa = *(const char *const *)fa, *sb = *(const char *const *)fb;

		return sa == sb || (sa && sb && !strcmp(sa, sb));
	}
	if (opt->field.ctype == GP_CT_DOUBLE)
		return *(const double *)fa == *(const double *)fb;
	return !memcmp(fa, fb, opt->field.size);
}

void gp_options_defaults(struct gp_options *o, bool daemon)
{
	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];
		const char *text = daemon ? opt->daemon_default : opt->cli_default;
		void *field = gp_option_field(opt, o);

		/* every default parses (tests/unit/test_option_table.c) */
		if (field && text)
			gp_option_parse(opt, text, field);
	}
}

static int by_file_order(const void *a, const void *b)
{
	const struct gp_option *x = *(const struct gp_option *const *)a;
	const struct gp_option *y = *(const struct gp_option *const *)b;

	if (x->section != y->section)
		return x->section < y->section ? -1 : 1;
	return x->place < y->place ? -1 : x->place > y->place;
}

size_t gp_options_in_file_order(const struct gp_option *out[GP_OPT_COUNT])
{
	size_t n = 0;

	for (size_t i = 0; i < GP_OPT_COUNT; i++)
		if (gp_option_table[i].section != GP_SECTION_NONE)
			out[n++] = &gp_option_table[i];
	qsort(out, n, sizeof(*out), by_file_order);
	return n;
}
