/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_json.c — report.json: the report document (report.h) written as
 * indented JSON, fields in a fixed order, so that the same model always
 * gives the same bytes.
 */
#include <errno.h>

#include "report/report.h"

int gp_report_json_dump(const json_t *doc, FILE *out)
{
	if (json_dumpf(doc, out, GP_REPORT_JSON_FLAGS) || fputc('\n', out) == EOF || fflush(out) ||
	    ferror(out))
		return -(errno ? errno : EIO);
	return 0;
}

int gp_report_json_write(const struct gp_model *m, FILE *out)
{
	json_t *doc = gp_report_doc(m);
	int err;

	if (!doc)
		return -(errno ? errno : ENOMEM);
	err = gp_report_json_dump(doc, out);
	json_decref(doc);
	return err;
}
