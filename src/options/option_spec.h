/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * option_spec.h — the rows of option_table.h as data (gp_option_table[]), what each column
 * means, and what every reader of options shares: a value read and stored by its kind, the
 * defaults of struct gp_options, the configuration file's order of keys.
 */
#ifndef GP_OPTIONS_OPTION_SPEC_H
#define GP_OPTIONS_OPTION_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "options/options.h"

/* GP_OPT_<name>: a row's index in gp_option_table[]. */
enum gp_option_id {
#define GP_OPTION(name, ...) GP_OPT_##name,
#include "options/option_table.h"
#undef GP_OPTION
	GP_OPT_COUNT
};

enum gp_option_kind {
	GP_KIND_BOOL,	       /* on/off in the file; a switch stores its value */
	GP_KIND_BOOL_NOT,      /* a boolean whose fields hold its negation (no_uprobe_multi) */
	GP_KIND_UINT,	       /* unsigned, decimal, lo to hi */
	GP_KIND_UINT_POW2,     /* and a power of two */
	GP_KIND_UINT_OFF,      /* and, in the file, also off (0) */
	GP_KIND_U64,	       /* unsigned long long, decimal, lo to hi */
	GP_KIND_SECONDS,       /* double, decimals allowed, lo to hi */
	GP_KIND_SECONDS_ABOVE, /* double, decimals allowed, above lo, up to hi */
	GP_KIND_STRING,	       /* not empty; the command line's own memory */
	GP_KIND_PATH,	       /* a file: not empty on the command line, absolute in the file */
	GP_KIND_COUNT,	       /* each -v counts one */
	GP_KIND_TARGET,	       /* --pid, --name, --container: cmd/cli.c checks and keeps them */
	GP_KIND_HELP,
	GP_KIND_VERSION,
	GP_KIND_COMMAND, /* a command of its own (cmd/main.c), never seen by getopt */
	GP_KIND_CUSTOM,	 /* a key of the file with a parser of its own (daemon/config.c) */
};

enum gp_option_scope {
	GP_SCOPE_TARGET,  /* what to trace: --daemon takes none */
	GP_SCOPE_SESSION, /* refused with --daemon unless it is the default: the file says it */
	GP_SCOPE_ANY,	  /* -v, --help, ...: with or without --daemon */
	GP_SCOPE_DAEMON,  /* only with --daemon */
	GP_SCOPE_FILE,	  /* only in the daemon's configuration file */
};

/* The configuration file's sections, in its order. */
enum gp_option_section {
	GP_SECTION_NONE,
	GP_SECTION_METRICS,
	GP_SECTION_REPORTS,
	GP_SECTION_TRACE,
	GP_SECTION_LOG,
	GP_SECTION_COUNT
};

enum gp_option_change { GP_RELOAD, GP_RESTART };

/* The C type of a field, so that a test can check each row's field against its kind. */
enum gp_ctype {
	GP_CT_NONE,
	GP_CT_BOOL,
	GP_CT_INT,
	GP_CT_UINT,
	GP_CT_U64,
	GP_CT_DOUBLE,
	GP_CT_STRING,
	GP_CT_CHARS,
	GP_CT_OTHER
};

/* _Generic, which clang-format does not know: */
/* clang-format off */
#define GP_CTYPE_OF(x)                                                                   \
	_Generic((x), bool: GP_CT_BOOL, int: GP_CT_INT, unsigned: GP_CT_UINT,            \
		 unsigned long long: GP_CT_U64, double: GP_CT_DOUBLE,                    \
		 const char *: GP_CT_STRING, char *: GP_CT_CHARS, default: GP_CT_OTHER)
/* clang-format on */

/* A field of a struct; size 0: none. */
struct gp_field {
	size_t off, size;
	enum gp_ctype ctype;
};

#define GP_FIELD_OF(type, f)                                                           \
	{                                                                              \
		offsetof(type, f), sizeof(((type *)0)->f), GP_CTYPE_OF(((type *)0)->f) \
	}

#define GP_WHY_BOOL "is not a boolean (on, off, true, false, yes, no, 1 or 0)"

/* One row of option_table.h (see there for the columns). */
struct gp_option {
	const char *name;
	enum gp_option_kind kind;
	enum gp_option_scope scope;
	struct gp_field field; /* in struct gp_options */

	const char *flag; /* the long flag, without "--"; NULL: none */
	char short_flag;  /* 0: none */
	const char *meta; /* the value's name in --help; NULL: a switch */
	int switch_value;
	const char *cli_why;

	enum gp_option_section section; /* NONE: no key */
	unsigned place;			/* among the section's keys */
	enum gp_option_change change;
	const char *conf_why;

	unsigned long long lo, hi;
	const char *cli_default, *daemon_default;
	const char *help;
};

extern const struct gp_option gp_option_table[GP_OPT_COUNT];

/* "metrics", "reports", "trace", "log" */
const char *gp_option_section_name(enum gp_option_section s);

/* on, true, yes, 1 / off, false, no, 0, in any case: false when s is none of them. */
bool gp_parse_bool(const char *s, bool *out);

/*
 * Reads text as opt's kind wants into field (a struct's, of the kind's type): 0, or -EINVAL
 * when it is not a value of the kind and range. Not for TARGET, COMMAND, HELP, VERSION or
 * CUSTOM rows, nor for the file's own spellings (UINT_OFF's off, PATH's absolute path).
 */
int gp_option_parse(const struct gp_option *opt, const char *text, void *field);

/* The type of a kind's field in struct gp_options (GP_CT_NONE: it has none). */
enum gp_ctype gp_option_ctype(enum gp_option_kind kind);

/* What a switch (a flag without value) does to its field. */
void gp_option_switch(const struct gp_option *opt, void *field);

/* opt's field in o, or NULL when it has none. */
void *gp_option_field(const struct gp_option *opt, struct gp_options *o);

/* Whether opt's field holds the same value in a and b (strings compared as strings). */
bool gp_option_same(const struct gp_option *opt, const struct gp_options *a,
		    const struct gp_options *b);

/* Every field to its row's default: the command line's, or the daemon's session's. */
void gp_options_defaults(struct gp_options *o, bool daemon);

/* The rows with a key, in the file's order (by section, then place): how many, into out. */
size_t gp_options_in_file_order(const struct gp_option *out[GP_OPT_COUNT]);

#endif
