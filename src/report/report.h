/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report.h — the report document: one jansson tree built from the model
 * (schema gpuprobed.report/1, documented in docs/report-format.md). Every
 * report sink renders this tree, so report.json and report.md always agree
 * and every derived number (percentiles, shares, bandwidth, orderings) is
 * computed in one place.
 */
#ifndef GP_REPORT_H
#define GP_REPORT_H

#include <jansson.h>

#include "model/view.h"

#define GP_REPORT_SCHEMA    "gpuprobed.report/1"
#define GP_REPORT_LEAKS_MAX 1000 /* leaks[] / live_at_end[] entries listed (largest first) */

/* Builds the document; NULL + errno (ENOMEM) on failure. json_decref() it. */
json_t *gp_report_doc(const struct gp_model *m);

/* report.json and report.md of a document (built once for both): 0 or -errno. */
int gp_report_json_dump(const json_t *doc, FILE *out);
int gp_report_md_render(const json_t *doc, FILE *out);
/* The same from the model (the document built for the one sink). */
int gp_report_json_write(const struct gp_model *m, FILE *out);
int gp_report_md_write(const struct gp_model *m, FILE *out);

/* The jansson dump flags every writer of the document uses (deterministic output). */
#define GP_REPORT_JSON_FLAGS (JSON_INDENT(2) | JSON_REAL_PRECISION(15))

#endif /* GP_REPORT_H */
