/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* md_out.c — the helpers of report.md's pieces (md_out.h). */
#include <errno.h>

#include "report/md_out.h"

json_int_t gp_md_int(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

const char *gp_md_str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

bool gp_md_bool(const json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key));
}

char *gp_md_n(char *buf, const json_t *o, const char *key)
{
	return gp_md_snum(buf, gp_md_int(o, key));
}

void gp_md_rel_time(char *buf, size_t len, const json_t *doc, json_int_t mono_ns)
{
	json_int_t start = gp_md_int(json_object_get(doc, "session"), "start_mono_ns");

	if (start && mono_ns >= start)
		snprintf(buf, len, "+%lld.%06lld s", (long long)((mono_ns - start) / 1000000000),
			 (long long)((mono_ns - start) % 1000000000 / 1000));
	else
		snprintf(buf, len, "%lld ns (monotonic)", (long long)mono_ns);
}

int gp_md_flush_table(struct gp_md_table *t, FILE *out)
{
	int err;

	if (!t)
		return -ENOMEM;
	err = gp_md_table_print(t, out);
	gp_md_table_free(t);
	return err;
}
