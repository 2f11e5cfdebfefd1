/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md_process.c — one process of report.md: its header (where it
 * runs, why it is traced, when it exited or was attached) and libraries,
 * then every section of the registry (report_sections.c) in report.md's
 * order.
 */
#include <errno.h>
#include <string.h>

#include "report/report_md.h"
#include "report/report_sections.h"

/* Why the process is traced, and the execs it made meanwhile. */
static void origin_lines(const json_t *p, FILE *out)
{
	const json_t *parent = json_object_get(p, "parent_pid");
	const char *why = gp_md_str(p, "traced_because");
	long long ppid = (long long)json_integer_value(parent);
	json_int_t execs = gp_md_int(p, "execs");

	if (!strcmp(why, "pid"))
		fputs("- Traced because: named with --pid\n", out);
	else if (!strcmp(why, "launched"))
		fputs("- Traced because: the command gpuprobed launched (-- COMMAND)\n", out);
	else if (!strcmp(why, "fork") && json_is_integer(parent))
		fprintf(out, "- Traced because: forked by traced process %lld\n", ppid);
	else if (!strcmp(why, "name"))
		fputs("- Traced because: its name matched --name\n", out);
	else if (!strcmp(why, "cuda"))
		fputs("- Traced because: it uses CUDA (--all)\n", out);
	else if (*why)
		fprintf(out, "- Traced because: %s\n", why);
	if (json_is_integer(parent) && strcmp(why, "fork"))
		fprintf(out, "- Parent: traced process %lld\n", ppid);
	if (execs)
		fprintf(out,
			"- Exec'd %lld time%s while traced (%sthe name and command line are those of the "
			"last exec)\n",
			(long long)execs, execs == 1 ? "" : "s",
			!strcmp(why, "launched") ? "the command's own start counts; " : "");
}

static int header(const json_t *doc, const json_t *p, FILE *out)
{
	static const char *const head[] = { "Library", "Family", "Linked" };
	const json_t *libs = json_object_get(p, "libraries"), *lib;
	char t[64], where[384];
	size_t i;

	gp_md_container_heading(where, sizeof(where), p);
	fprintf(out, "## Process %lld — %s%s\n\n", (long long)gp_md_int(p, "pid"),
		*gp_md_str(p, "comm") ? gp_md_str(p, "comm") : "(name unknown)", where);
	if (json_is_object(json_object_get(doc, "merge"))) /* gpuprobed merge: hosts differ */
		fprintf(out, "- Host: %s\n", gp_md_str(p, "host"));
	if (*gp_md_str(p, "cmdline"))
		fprintf(out, "- Command line: `%s`\n", gp_md_str(p, "cmdline"));
	gp_md_place_lines(p, out);
	origin_lines(p, out);
	if (gp_md_bool(p, "exited")) {
		gp_md_rel_time(t, sizeof(t), doc, gp_md_int(p, "exit_mono_ns"));
		fprintf(out, "- Exited at %s\n", t);
	} else {
		fputs("- Still running when the report was written\n", out);
	}
	if (gp_md_bool(p, "traced_from_start")) {
		fputs("- Traced from its start: every allocation and pinned range it made was seen\n",
		      out);
	} else if (json_is_integer(json_object_get(p, "attach_mono_ns"))) {
		gp_md_rel_time(t, sizeof(t), doc, gp_md_int(p, "attach_mono_ns"));
		fprintf(out,
			"- Attached while it was running (at %s): what it did before is unknown\n",
			t);
	} else {
		fputs("- Attached while it was running: what it did before is unknown\n", out);
	}
	fputc('\n', out);
	if (!json_array_size(libs))
		return 0;

	struct gp_md_table *tb = gp_md_table_new(3, head, "lll");

	json_array_foreach(libs, i, lib) {
		if (!tb)
			break;
		gp_md_table_cell(tb, "`%s`", gp_md_str(lib, "path"));
		gp_md_table_cell(tb, "%s", gp_md_str(lib, "family"));
		gp_md_table_cell(tb, "%s", gp_md_bool(lib, "static") ? "static" : "shared");
	}
	int err = gp_md_flush_table(tb, out);

	fputc('\n', out);
	return err;
}

int gp_md_process(const json_t *doc, const json_t *p, FILE *out)
{
	int err = header(doc, p, out);
	unsigned order = 0;

	/* the registry's sections in report.md's order: each prints as it goes */
	for (const struct gp_report_section *sec = gp_next_md_section(&order); sec;
	     sec = gp_next_md_section(&order)) {
		int e = sec->render(doc, p, out);

		if (e && !err)
			err = e;
	}
	return err;
}
