/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * md_table.c — padded Markdown pipe tables and number formatting for the
 * Markdown report. Cells are kept until printing because column widths
 * depend on every row.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "text/md_table.h"

struct gp_md_table {
	unsigned ncols;
	char **cells; /* row-major, header row first */
	size_t ncells, cap;
	char *align;
	bool failed;
};

static char *escape_pipes(const char *s)
{
	size_t n = 0;

	for (const char *c = s; *c; c++)
		n += *c == '|' ? 2 : 1;

	char *out = malloc(n + 1), *o = out;

	if (!out)
		return NULL;
	for (const char *c = s; *c; c++) {
		if (*c == '|')
			*o++ = '\\';
		*o++ = *c;
	}
	*o = '\0';
	return out;
}

static void add_cell(struct gp_md_table *t, const char *text)
{
	if (GP_ARRAY_GROW(t->cells, t->cap, t->ncells + 1, 64)) {
		t->failed = true;
		return;
	}

	char *c = escape_pipes(text);

	if (!c) {
		t->failed = true;
		return;
	}
	t->cells[t->ncells++] = c;
}

struct gp_md_table *gp_md_table_new(unsigned ncols, const char *const *head, const char *align)
{
	struct gp_md_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->ncols = ncols;
	t->align = strdup(align);
	if (!t->align)
		goto err;
	for (unsigned i = 0; i < ncols; i++)
		add_cell(t, head[i]);
	if (t->failed)
		goto err;
	return t;
err:
	gp_md_table_free(t);
	errno = ENOMEM;
	return NULL;
}

void gp_md_table_free(struct gp_md_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->align);
	free(t);
}

void gp_md_table_cell(struct gp_md_table *t, const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	if (!text) {
		t->failed = true;
		add_cell(t, "");
		return;
	}
	add_cell(t, text);
	free(text);
}

size_t gp_md_table_rows(const struct gp_md_table *t)
{
	return t->ncells / t->ncols - 1;
}

/* Display width: UTF-8 code points (the report uses "—", "×", "–"). */
static size_t text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void pad(FILE *out, size_t n, int c)
{
	while (n--)
		fputc(c, out);
}

int gp_md_table_print(const struct gp_md_table *t, FILE *out)
{
	size_t nrows = t->ncells / t->ncols; /* a partial last row is not printed */
	size_t *width = calloc(t->ncols, sizeof(*width));

	if (!width || t->failed) {
		free(width);
		return -ENOMEM;
	}
	for (unsigned c = 0; c < t->ncols; c++)
		width[c] = 3; /* "---" at least, for Markdown */
	for (size_t r = 0; r < nrows; r++)
		for (unsigned c = 0; c < t->ncols; c++) {
			size_t w = text_width(t->cells[r * t->ncols + c]);

			width[c] = w > width[c] ? w : width[c];
		}
	for (size_t r = 0; r < nrows; r++) {
		for (unsigned c = 0; c < t->ncols; c++) {
			const char *cell = t->cells[r * t->ncols + c];
			size_t gap = width[c] - text_width(cell);

			fputs("| ", out);
			if (t->align[c] == 'r')
				pad(out, gap, ' ');
			fputs(cell, out);
			if (t->align[c] != 'r')
				pad(out, gap, ' ');
			fputc(' ', out);
		}
		fputs("|\n", out);
		if (r)
			continue;
		for (unsigned c = 0; c < t->ncols; c++) {
			bool right = t->align[c] == 'r';

			fputs(right ? "| " : "| :", out);
			pad(out, width[c] - 1, '-');
			fputs(right ? ": " : " ", out);
		}
		fputs("|\n", out);
	}
	free(width);
	return 0;
}

char *gp_md_num(char *buf, __u64 v)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
	char *o = buf;

	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			*o++ = ',';
		*o++ = tmp[i];
	}
	*o = '\0';
	return buf;
}

char *gp_md_snum(char *buf, long long v)
{
	if (v >= 0)
		return gp_md_num(buf, (__u64)v);
	buf[0] = '-';
	gp_md_num(buf + 1, (__u64)0 - (__u64)v);
	return buf;
}

char *gp_md_bytes(char *buf, __u64 v)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned u = 0;
	__u64 whole = v, rem = 0;

	while (whole >= 1024 && u < 6) {
		rem = whole % 1024;
		whole /= 1024;
		u++;
	}
	unsigned tenth = (unsigned)(rem * 10 / 1024);

	if (tenth)
		snprintf(buf, 32, "%llu.%u %s", (unsigned long long)whole, tenth, units[u]);
	else
		snprintf(buf, 32, "%llu %s", (unsigned long long)whole, units[u]);
	return buf;
}
