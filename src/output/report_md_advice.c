/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md_advice.c — report.md "Recommendations": report.json's ranked
 * findings as a table (what, where, how much it would save), then each one
 * with how it was estimated, its call paths and what to do.
 * docs/recommendations.md defines the rules.
 */
#include <string.h>

#include "output/report_md.h"

int gp_md_recommendations(const json_t *doc, FILE *out)
{
	static const char *const head[] = { "#", "Saves (ns)", "Share", "PID", "Rule", "Finding" };
	const json_t *arr = json_object_get(doc, "recommendations"), *f;
	struct gp_md_table *t;
	size_t i;
	char n[32];
	int err;

	fputs("## Recommendations\n\n", out);
	if (!json_array_size(arr)) {
		fputs("No rule fired: nothing in this session matched a known cause of lost time "
		      "(docs/recommendations.md lists the rules and their thresholds).\n\n", out);
		return 0;
	}
	fputs("Ranked by the host time a fix would save in this session (each estimated alone; the estimates "
	      "of findings about the same calls do not add up). Rules and formulas: docs/recommendations.md.\n\n",
	      out);
	t = gp_md_table_new(6, head, "rrrrll");
	json_array_foreach(arr, i, f) {
		const json_t *share = json_object_get(f, "impact_share");

		if (!t)
			break;
		gp_md_table_cell(t, "%zu", i + 1);
		gp_md_table_cell(t, "%s", gp_md_n(n, f, "impact_ns"));
		if (json_is_number(share))
			gp_md_table_cell(t, "%.1f %%", 100.0 * json_number_value(share));
		else
			gp_md_table_cell(t, "—");
		gp_md_table_cell(t, "%lld", (long long)gp_md_int(f, "pid"));
		gp_md_table_cell(t, "`%s`", gp_md_str(f, "id"));
		gp_md_table_cell(t, "%s", gp_md_str(f, "title"));
	}
	err = gp_md_flush_table(t, out);
	fputc('\n', out);
	json_array_foreach(arr, i, f) {
		const json_t *sites = json_object_get(f, "call_sites"), *s;
		size_t j;

		fprintf(out, "%zu. **`%s`** (pid %lld, %s): %s.\n   Estimate (%s): %s.\n   Do: %s\n", i + 1,
			gp_md_str(f, "id"), (long long)gp_md_int(f, "pid"), gp_md_str(f, "comm"), gp_md_str(f, "title"),
			gp_md_str(f, "estimate"), gp_md_str(f, "method"), gp_md_str(f, "action"));
		json_array_foreach(sites, j, s)
			fprintf(out, "   - %s calls, %s ns: `%s`\n", gp_md_n(n, s, "calls"),
				gp_md_n((char[32]){ 0 }, s, "host_ns"), gp_md_str(s, "path"));
	}
	fputc('\n', out);
	return err;
}
