/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * finding_json.h — a finding's evidence and what it is about as JSON, the same for report.json
 * and the SQL export (docs/report-format.md, docs/sql.md).
 */
#ifndef GP_FINDING_JSON_H
#define GP_FINDING_JSON_H

#include <jansson.h>

#include "analysis/finding.h"

/* Named values as an object, in the rule's order (a REAL2 rounded to 2 decimals); NULL: no memory. */
json_t *gp_fields_json(const struct gp_fields *f);

/* The names of about's bits (enum gp_about), in the bits' order; NULL: out of memory. */
json_t *gp_about_json(unsigned about);

#endif /* GP_FINDING_JSON_H */
