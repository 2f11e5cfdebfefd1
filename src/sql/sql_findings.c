/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sql_findings.c — the SQL export's recommendations: the findings of analysis/ (the same C data
 * report.json renders, so the rows equal its recommendations[] and verdicts[]), written with the
 * model's tables at the capture's end, one row per finding and one per call site.
 */
#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "analysis/advice.h"
#include "analysis/finding_json.h"
#include "sql/sql_internal.h"

/* j as JSON text into column i (NULL: out of memory, the export fails); j is released. */
static void bind_json(struct gp_sql_exp *x, sqlite3_stmt *st, int i, json_t *j)
{
	/* reals as report.json prints them (15 significant digits) */
	char *text = j ? json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(15))
		       : NULL;

	json_decref(j);
	if (!text && !x->failed)
		x->failed = -ENOMEM;
	sqlite3_bind_text(st, i, text, -1, free);
}

/* The ranks a finding meets, as a JSON array. */
static json_t *ranks_json(const struct gp_finding *f)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < f->nranks; i++)
		if (json_array_append_new(arr, json_integer((json_int_t)f->ranks[i]))) {
			json_decref(arr);
			arr = NULL;
		}
	return arr;
}

/* Row id of the recommendations table; rank: its place among the ranked (0: a verdict). */
static void finding_row(struct gp_sql_exp *x, sqlite3_stmt *st, sqlite3_stmt *sites,
			const struct gp_finding *f, __s64 id, size_t rank)
{
	sqlite3_bind_int64(st, 1, id);
	if (rank)
		sqlite3_bind_int64(st, 2, (__s64)rank);
	else
		sqlite3_bind_null(st, 2);
	sqlite3_bind_int64(st, 3, f->verdict);
	gp_sql_bind_text(st, 4, f->id);
	sqlite3_bind_int64(st, 5, f->pid);
	gp_sql_bind_text(st, 6, f->comm);
	gp_sql_bind_text(st, 7, f->title);
	sqlite3_bind_int64(st, 8, (__s64)f->impact_ns);
	if (f->wall_ns) /* as report.json's impact_share */
		sqlite3_bind_double(st, 9, (double)f->impact_ns / (double)f->wall_ns);
	else
		sqlite3_bind_null(st, 9);
	gp_sql_bind_text(st, 10, f->estimate);
	gp_sql_bind_text(st, 11, f->method);
	gp_sql_bind_text(st, 12, f->action);
	bind_json(x, st, 13, gp_about_json(f->about));
	bind_json(x, st, 14, gp_fields_json(&f->evidence));
	bind_json(x, st, f->verdict ? 16 : 15, ranks_json(f)); /* overlaps, or explained_by */
	gp_sql_step(x, st);
	sqlite3_clear_bindings(st);
	for (unsigned i = 0; i < f->nsites; i++) {
		sqlite3_bind_int64(sites, 1, id);
		sqlite3_bind_int64(sites, 2, i);
		gp_sql_bind_text(sites, 3, f->sites[i].path);
		sqlite3_bind_int64(sites, 4, (__s64)f->sites[i].calls);
		sqlite3_bind_int64(sites, 5, (__s64)f->sites[i].host_ns);
		gp_sql_step(x, sites);
	}
}

int gp_sql_findings_rows(struct gp_sql_exp *x)
{
	sqlite3_stmt *st = gp_sql_prepare(
		x->db, "INSERT INTO recommendations VALUES (?1, ?2, ?3,"
		       " ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
	sqlite3_stmt *sites = gp_sql_prepare(
		x->db, "INSERT INTO recommendation_sites VALUES (?1, ?2, ?3, ?4, ?5)");
	struct gp_findings fs;

	if (!st || !sites) {
		x->failed = x->failed ? x->failed : -EIO;
	} else if (gp_advise(x->m, &fs)) {
		gp_err("export: the recommendations: out of memory");
		x->failed = -ENOMEM;
	} else {
		for (size_t i = 0; !x->failed && i < fs.n; i++)
			finding_row(x, st, sites, fs.v[i], (__s64)i + 1, i + 1);
		for (size_t i = 0; !x->failed && i < fs.nverdicts; i++)
			finding_row(x, st, sites, fs.verdicts[i], (__s64)(fs.n + i) + 1, 0);
		gp_findings_release(&fs);
	}
	sqlite3_finalize(st);
	sqlite3_finalize(sites);
	return x->failed;
}
