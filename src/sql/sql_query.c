/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sql_query.c — statements run over an exported capture and printed
 * (sql_query.h), and the export cache beside a capture.
 */
#include <errno.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "log.h"
#include "sql/sql_export.h"
#include "sql/sql_query.h"

/* A result held whole (an aligned table needs every width first). */
struct result {
	int ncols;
	char **cells;  /* (nrows + 1) x ncols: the header first; NULL: SQL NULL */
	bool *numeric; /* ncols: right-aligned */
	size_t nrows, cap;
};

static char *cell_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t;

	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL:
		return NULL;
	case SQLITE_BLOB: {
		int n = sqlite3_column_bytes(st, i);
		const unsigned char *b = sqlite3_column_blob(st, i);
		char *s = malloc(2 * (size_t)n + 3);

		if (!s)
			return NULL;
		strcpy(s, "x'");
		for (int k = 0; k < n; k++)
			sprintf(s + 2 + 2 * k, "%02x", b[k]);
		strcat(s, "'");
		return s;
	}
	default:
		t = sqlite3_column_text(st, i);
		return strdup(t ? (const char *)t : "");
	}
}

static void print_csv_field(FILE *out, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void print_table(FILE *out, const struct result *r)
{
	size_t *w = calloc((size_t)r->ncols, sizeof(*w));

	if (!w)
		return;
	for (size_t row = 0; row <= r->nrows; row++)
		for (int c = 0; c < r->ncols; c++) {
			const char *s = r->cells[row * (size_t)r->ncols + (size_t)c];
			size_t n = s ? strlen(s) : 4;

			if (n > w[c])
				w[c] = n;
		}
	for (size_t row = 0; row <= r->nrows; row++) {
		for (int c = 0; c < r->ncols; c++) {
			const char *s = r->cells[row * (size_t)r->ncols + (size_t)c];
			bool right = row && r->numeric[c];
			const char *sep = c + 1 < r->ncols ? "  " : "";

			if (c + 1 == r->ncols && !right)
				fprintf(out, "%s", s ? s : "NULL");
			else
				fprintf(out, right ? "%*s%s" : "%-*s%s", (int)w[c], s ? s : "NULL",
					sep);
		}
		fputc('\n', out);
		if (!row) {
			for (int c = 0; c < r->ncols; c++) {
				for (size_t k = 0; k < w[c]; k++)
					fputc('-', out);
				fputs(c + 1 < r->ncols ? "  " : "\n", out);
			}
		}
	}
	free(w);
}

static json_t *json_cell(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL:
		return json_null();
	case SQLITE_INTEGER:
		return json_integer(sqlite3_column_int64(st, i));
	case SQLITE_FLOAT:
		return json_real(sqlite3_column_double(st, i));
	default: {
		char *s = cell_text(st, i);
		json_t *j = s ? json_stringn(s, strlen(s)) : json_null();

		free(s);
		return j ? j : json_null();
	}
	}
}

static void free_result(struct result *r)
{
	for (size_t i = 0; r->cells && i < (r->nrows + 1) * (size_t)r->ncols; i++)
		free(r->cells[i]);
	free(r->cells);
	free(r->numeric);
}

/* Steps st to its end, printing its rows. 0, or SQLite's error code. */
static int run_one(sqlite3_stmt *st, enum gp_sql_format fmt, FILE *out)
{
	int ncols = sqlite3_column_count(st), rc;
	struct result r = { .ncols = ncols };
	json_t *arr = fmt == GP_SQL_JSON && ncols ? json_array() : NULL;

	if (ncols && fmt == GP_SQL_TABLE) {
		r.numeric = calloc((size_t)ncols, sizeof(bool));
		r.cap = 64;
		r.cells = calloc(r.cap * (size_t)ncols, sizeof(char *));
		if (!r.numeric || !r.cells) {
			free_result(&r);
			return SQLITE_NOMEM;
		}
		for (int c = 0; c < ncols; c++) {
			r.cells[c] = strdup(sqlite3_column_name(st, c));
			r.numeric[c] = true;
		}
	}
	if (ncols && fmt == GP_SQL_CSV)
		for (int c = 0; c < ncols; c++) {
			print_csv_field(out, sqlite3_column_name(st, c));
			fputs(c + 1 < ncols ? "," : "\r\n", out);
		}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (fmt == GP_SQL_CSV) {
			for (int c = 0; c < ncols; c++) {
				char *s = cell_text(st, c);

				print_csv_field(out, s);
				free(s);
				fputs(c + 1 < ncols ? "," : "\r\n", out);
			}
		} else if (arr) {
			json_t *o = json_object();

			for (int c = 0; o && c < ncols; c++)
				json_object_set_new(o, sqlite3_column_name(st, c),
						    json_cell(st, c));
			json_array_append_new(arr, o);
		} else if (fmt == GP_SQL_TABLE && ncols) {
			if (r.nrows + 2 > r.cap) {
				char **grown = realloc(r.cells,
						       r.cap * 2 * (size_t)ncols * sizeof(char *));

				if (!grown) {
					rc = SQLITE_NOMEM;
					break;
				}
				r.cells = grown;
				r.cap *= 2;
			}
			r.nrows++;
			for (int c = 0; c < ncols; c++) {
				int t = sqlite3_column_type(st, c);

				r.cells[r.nrows * (size_t)ncols + (size_t)c] = cell_text(st, c);
				if (t != SQLITE_INTEGER && t != SQLITE_FLOAT && t != SQLITE_NULL)
					r.numeric[c] = false;
			}
		}
	}
	if (rc == SQLITE_DONE) {
		rc = 0;
		if (fmt == GP_SQL_TABLE && ncols)
			print_table(out, &r);
		if (arr) {
			json_dumpf(arr, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
			fputc('\n', out);
		}
	}
	json_decref(arr);
	free_result(&r);
	return rc;
}

int gp_sql_query(const char *db_path, const char *sql, enum gp_sql_format fmt, FILE *out)
{
	sqlite3 *db = NULL;
	const char *tail = sql;
	int rc = 0;

	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		gp_err("%s: %s", db_path, db ? sqlite3_errmsg(db) : "cannot open");
		sqlite3_close(db);
		return -EIO;
	}
	while (tail && *tail) {
		sqlite3_stmt *st = NULL;

		if (sqlite3_prepare_v2(db, tail, -1, &st, &tail) != SQLITE_OK) {
			fprintf(stderr, "Error: %s\n", sqlite3_errmsg(db)); /* SQLite's own words */
			rc = -EINVAL;
			break;
		}
		if (!st) /* whitespace or a comment */
			continue;
		int err = run_one(st, fmt, out);

		if (err) {
			fprintf(stderr, "Error: %s\n", sqlite3_errmsg(db));
			sqlite3_finalize(st);
			rc = -EINVAL;
			break;
		}
		sqlite3_finalize(st);
	}
	fflush(out);
	sqlite3_close(db);
	return rc;
}

int gp_sql_is_database(const char *path)
{
	static const char magic[16] = "SQLite format 3";
	char head[16];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return -errno;
	n = fread(head, 1, sizeof(head), f);
	fclose(f);
	return n == sizeof(head) && !memcmp(head, magic, sizeof(magic));
}

/*
 * The cache was made from this capture as it is now (its size and modification time, in meta) by an
 * export of this schema: an older one lacks the columns added since.
 */
static bool cache_current(const char *db_path, const struct stat *cap)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	bool ok = false;
	long long size = -1, mtime = -1, version = -1;

	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db,
			       "SELECT key, value FROM meta WHERE key IN ('capture_bytes',"
			       " 'capture_mtime_ns', 'schema_version')",
			       -1, &st, NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *key = (const char *)sqlite3_column_text(st, 0);

			if (!strcmp(key, "capture_bytes"))
				size = sqlite3_column_int64(st, 1);
			else if (!strcmp(key, "schema_version"))
				version = sqlite3_column_int64(st, 1);
			else
				mtime = sqlite3_column_int64(st, 1);
		}
		ok = size == (long long)cap->st_size &&
		     mtime == (long long)cap->st_mtim.tv_sec * 1000000000 + cap->st_mtim.tv_nsec &&
		     version == GP_SQL_SCHEMA_VERSION;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return ok;
}

int gp_sql_cached_export(const char *cap_path, char **db_path)
{
	struct gp_sql_export_stats es;
	struct stat sb;
	int err;

	*db_path = NULL;
	if (stat(cap_path, &sb)) {
		err = -errno;
		gp_err("%s: %s", cap_path, strerror(errno));
		return err;
	}
	if (asprintf(db_path, "%s.sqlite", cap_path) < 0) {
		*db_path = NULL;
		return -ENOMEM;
	}
	if (access(*db_path, F_OK) == 0 && cache_current(*db_path, &sb))
		return 0;
	gp_info("exporting %s to %s", cap_path, *db_path);
	/* a cache is for querying: every index */
	err = gp_sql_export(cap_path, *db_path,
			    &(struct gp_sql_export_opts){ .force = true, .indices = true }, &es);
	if (err) {
		free(*db_path);
		*db_path = NULL;
	}
	return err;
}
