/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_option_docs.c — the docs say the options of src/options/option_table.h: docs/gpuprobed.8
 * lists every flag (with its short flag and value) under OPTIONS and no other; docs/daemon.md's
 * table of keys and config/gpuprobed.conf have every key, in the file's order, with its default
 * (and, in daemon.md, whether a reload applies it). On a difference it prints the line the table
 * wants, to copy into the doc.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "options/option_spec.h"

/* Unit tests run from the repository root (tests/unit/unit.mk). */
#define MAN_PAGE       "docs/gpuprobed.8"
#define DAEMON_MD      "docs/daemon.md"
#define SHIPPED_CONFIG "config/gpuprobed.conf"

#define MAX_DOCS 64

/* ---- docs/gpuprobed.8 ------------------------------------------------------------------- */

struct man_flag {
	char flag[64], meta[32];
	char short_flag;
};

/* troff to text: font changes dropped, \- a dash, quotes dropped. */
static void plain(const char *in, char *out, size_t len)
{
	size_t n = 0;

	for (; *in && n + 1 < len; in++) {
		if (in[0] == '\\' && in[1] == 'f' && in[2]) {
			in += 2;
		} else if (in[0] == '\\' && in[1] == '-') {
			out[n++] = '-';
			in++;
		} else if (*in != '"' && *in != '\n') {
			out[n++] = *in;
		}
	}
	out[n] = '\0';
}

/* One .TP item's tag (".BR \-d ", " \-\-duration " " \fISEC\fR"): its flags and value. */
static bool man_tag(const char *line, struct man_flag *f)
{
	char text[256], *save = NULL;

	memset(f, 0, sizeof(*f));
	plain(line, text, sizeof(text));
	strtok_r(text, " ", &save); /* the macro: .B, .BR, .BI */
	for (char *t = strtok_r(NULL, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (!strncmp(t, "--", 2) && t[2])
			snprintf(f->flag, sizeof(f->flag), "%s", t + 2);
		else if (t[0] == '-' && t[1] && t[1] != '-' && !t[2])
			f->short_flag = t[1];
		else if (f->flag[0] && !f->meta[0] && strcmp(t, ","))
			snprintf(f->meta, sizeof(f->meta), "%s", t);
	}
	return f->flag[0] != '\0'; /* "-- COMMAND" is no flag */
}

/* The tags of the .TP items of .SH OPTIONS (its .SS subsections included). */
static size_t man_flags(struct man_flag *out)
{
	FILE *f = fopen(MAN_PAGE, "r");
	char line[512];
	bool options = false, tag = false;
	size_t n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, ".SH ", 4))
			options = !strcmp(line, ".SH OPTIONS\n");
		else if (options && tag && n < MAX_DOCS && man_tag(line, &out[n]))
			n++;
		tag = options && !strcmp(line, ".TP\n");
	}
	fclose(f);
	return n;
}

/* What the man page's tag of opt would be. */
static void print_man_tag(const struct gp_option *opt)
{
	char flag[128];
	size_t n = 0;

	for (const char *p = opt->flag; *p && n + 3 < sizeof(flag); p++)
		n += (size_t)snprintf(flag + n, sizeof(flag) - n, *p == '-' ? "\\-" : "%c", *p);
	if (opt->short_flag && opt->meta)
		printf(".TP\n.BR \\-%c \", \" \\-\\-%s \" \" \\fI%s\\fR\n", opt->short_flag, flag,
		       opt->meta);
	else if (opt->short_flag)
		printf(".TP\n.BR \\-%c \", \" \\-\\-%s\n", opt->short_flag, flag);
	else if (opt->meta)
		printf(".TP\n.BI \\-\\-%s \" %s\"\n", flag, opt->meta);
	else
		printf(".TP\n.B \\-\\-%s\n", flag);
}

static void man_page_lists_every_flag(void **state)
{
	struct man_flag docs[MAX_DOCS];
	size_t n = man_flags(docs);
	int wrong = 0;

	for (size_t i = 0; i < GP_OPT_COUNT; i++) {
		const struct gp_option *opt = &gp_option_table[i];
		const struct man_flag *d = NULL;

		if (!opt->flag)
			continue;
		for (size_t k = 0; k < n && !d; k++)
			d = strcmp(docs[k].flag, opt->flag) ? NULL : &docs[k];
		if (d && d->short_flag == opt->short_flag &&
		    !strcmp(d->meta, opt->meta ? opt->meta : ""))
			continue;
		printf("%s: --%s %s; the table's:\n", MAN_PAGE, opt->flag,
		       d ? "differs" : "is missing");
		print_man_tag(opt);
		wrong++;
	}
	for (size_t k = 0; k < n; k++) {
		size_t i = 0;

		while (i < GP_OPT_COUNT &&
		       !(gp_option_table[i].flag && !strcmp(gp_option_table[i].flag, docs[k].flag)))
			i++;
		if (i == GP_OPT_COUNT) {
			printf("%s: --%s is no option of src/options/option_table.h\n", MAN_PAGE,
			       docs[k].flag);
			wrong++;
		}
	}
	assert_int_equal(wrong, 0);
}

/* ---- docs/daemon.md and config/gpuprobed.conf -------------------------------------------- */

struct key_doc {
	char section[16], key[64], value[128], change[16];
	bool set; /* the conf's: an active line, not a commented one */
};

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s) || *s == '`')
		s++;
	e = s + strlen(s);
	while (e > s && (isspace((unsigned char)e[-1]) || e[-1] == '`'))
		*--e = '\0';
	return s;
}

/* The rows of daemon.md's "| Key | Default | Allowed values | Change |" table. */
static size_t daemon_md_keys(struct key_doc *out)
{
	FILE *f = fopen(DAEMON_MD, "r");
	char line[2048], section[16] = "";
	bool table = false;
	size_t n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *cell[6] = { 0 }, *save = NULL, *p;
		int cells = 0;

		if (!strncmp(line, "| Key | Default | Allowed values | Change |", 43)) {
			table = true;
			continue;
		}
		if (table && line[0] != '|') /* the table ends at its first other line */
			break;
		if (!table || !strncmp(line, "|---", 4))
			continue;
		for (p = strtok_r(line, "|", &save); p && cells < 6; p = strtok_r(NULL, "|", &save))
			if (*(p = trim(p)))
				cell[cells++] = p;
		if (cells && !strncmp(cell[0], "**[", 3)) { /* "**[metrics]**" */
			snprintf(section, sizeof(section), "%.*s", (int)strcspn(cell[0] + 3, "]"),
				 cell[0] + 3);
		} else if (cells >= 4 && n < MAX_DOCS) {
			snprintf(out[n].section, sizeof(out[n].section), "%s", section);
			snprintf(out[n].key, sizeof(out[n].key), "%s", cell[0]);
			snprintf(out[n].value, sizeof(out[n].value), "%s", cell[1]);
			snprintf(out[n].change, sizeof(out[n].change), "%s", cell[cells - 1]);
			n++;
		}
	}
	fclose(f);
	return n;
}

/* The keys of the shipped file: "key = value", or "#key = value" for one left unset. */
static size_t conf_keys(struct key_doc *out)
{
	FILE *f = fopen(SHIPPED_CONFIG, "r");
	char line[512], section[16] = "";
	size_t n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '='), *key = line;
		bool set = true;

		if (line[0] == '[') {
			snprintf(section, sizeof(section), "%.*s", (int)strcspn(line + 1, "]"),
				 line + 1);
			continue;
		}
		if (line[0] == '#' &&
		    islower((unsigned char)line[1])) { /* "#nvml_lib = /usr/lib/..." */
			set = false;
			key = line + 1;
		} else if (line[0] == '#' || line[0] == ';') {
			continue;
		}
		if (!eq || n == MAX_DOCS)
			continue;
		*eq = '\0';
		snprintf(out[n].section, sizeof(out[n].section), "%s", section);
		snprintf(out[n].key, sizeof(out[n].key), "%s", trim(key));
		snprintf(out[n].value, sizeof(out[n].value), "%s", trim(eq + 1));
		out[n].set = set;
		n++;
	}
	fclose(f);
	return n;
}

static void daemon_md_has_every_key(void **state)
{
	const struct gp_option *keys[GP_OPT_COUNT];
	struct key_doc docs[MAX_DOCS];
	size_t n = gp_options_in_file_order(keys), nd = daemon_md_keys(docs);
	int wrong = 0;

	for (size_t i = 0; i < n || i < nd; i++) {
		const struct gp_option *k = i < n ? keys[i] : NULL;
		const struct key_doc *d = i < nd ? &docs[i] : NULL;
		const char *def = k && k->daemon_default ? k->daemon_default : "unset";
		const char *change = k && k->change == GP_RESTART ? "restart" : "reload";

		if (k && d && !strcmp(d->section, gp_option_section_name(k->section)) &&
		    !strcmp(d->key, k->name) && !strcmp(d->value, def) &&
		    !strcmp(d->change, change))
			continue;
		printf("%s, key %zu: [%s] %s; the table's:\n", DAEMON_MD, i + 1,
		       d ? d->section : "", d ? d->key : "(none)");
		if (k)
			printf("[%s] | `%s` | %s%s%s | ... | %s |\n",
			       gp_option_section_name(k->section), k->name,
			       k->daemon_default ? "`" : "", def, k->daemon_default ? "`" : "",
			       change);
		wrong++;
	}
	assert_int_equal(wrong, 0);
}

static void shipped_config_has_every_key(void **state)
{
	const struct gp_option *keys[GP_OPT_COUNT];
	struct key_doc docs[MAX_DOCS];
	size_t n = gp_options_in_file_order(keys), nd = conf_keys(docs);
	int wrong = 0;

	for (size_t i = 0; i < n || i < nd; i++) {
		const struct gp_option *k = i < n ? keys[i] : NULL;
		const struct key_doc *d = i < nd ? &docs[i] : NULL;

		/* a key without a default is there commented out, with an example */
		if (k && d && !strcmp(d->section, gp_option_section_name(k->section)) &&
		    !strcmp(d->key, k->name) && d->set == (k->daemon_default != NULL) &&
		    (!d->set || !strcmp(d->value, k->daemon_default)))
			continue;
		printf("%s, key %zu: [%s] %s; the table's:\n", SHIPPED_CONFIG, i + 1,
		       d ? d->section : "", d ? d->key : "(none)");
		if (k && k->daemon_default)
			printf("[%s] %s = %s\n", gp_option_section_name(k->section), k->name,
			       k->daemon_default);
		else if (k)
			printf("[%s] #%s = EXAMPLE\n", gp_option_section_name(k->section), k->name);
		wrong++;
	}
	assert_int_equal(wrong, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(man_page_lists_every_flag),
		cmocka_unit_test(daemon_md_has_every_key),
		cmocka_unit_test(shipped_config_has_every_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
