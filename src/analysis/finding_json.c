/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * finding_json.c — the parts of a finding that are lists or named values, as JSON (jansson):
 * report.json's "evidence" and "about" (report/report_doc_advice.c) and the SQL export's columns
 * of the same names (sql/sql_findings.c) are these values, so the two never differ.
 */
#include <math.h>
#include <stdint.h>

#include "analysis/finding_json.h"

static json_t *rows_json(const struct gp_ev_rows *r);

/* A value; NULL: out of memory. */
static json_t *value_json(const struct gp_ev_field *e)
{
	switch (e->kind) {
	case GP_EV_U64:
		return json_integer(e->u > INT64_MAX ? INT64_MAX
						     : (json_int_t)e->u); /* as report.json's */
	case GP_EV_S64:
		return json_integer((json_int_t)e->s);
	case GP_EV_REAL2:
		return json_real(round(e->r * 100.0) / 100.0);
	case GP_EV_STR:
		return json_string(e->str ? e->str : "");
	case GP_EV_BOOL:
		return json_boolean(e->b);
	case GP_EV_NULL:
		return json_null();
	case GP_EV_ROWS:
		return rows_json(e->rows);
	}
	return NULL;
}

json_t *gp_fields_json(const struct gp_fields *f)
{
	json_t *o = json_object();

	for (unsigned i = 0; o && i < f->n; i++)
		if (json_object_set_new(o, f->v[i].key, value_json(&f->v[i]))) {
			json_decref(o);
			o = NULL;
		}
	return o;
}

static json_t *rows_json(const struct gp_ev_rows *r)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < r->n; i++)
		if (json_array_append_new(arr, gp_fields_json(&r->v[i]))) {
			json_decref(arr);
			arr = NULL;
		}
	return arr;
}

json_t *gp_about_json(unsigned about)
{
	json_t *arr = json_array();

	for (unsigned i = 0; arr && i < GP_ABOUT_MAX; i++)
		if ((about & (1u << i)) &&
		    json_array_append_new(arr, json_string(gp_about_names[i]))) {
			json_decref(arr);
			arr = NULL;
		}
	return arr;
}
