/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md_cpu.c — report.md's CPU section of a process (seed 000's "CPU
 * overhead table"): its threads' time on and off the CPU, context switches
 * and page faults over the traced window, the part of each that happened
 * inside GPU calls, per API, and the verdict.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_md.h"

static double pct(json_int_t part, json_int_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

static void row(struct gp_md_table *t, const char *what, const json_t *all, const json_t *in,
		const json_t *sync, const char *key)
{
	char a[32], b[32], c[32];

	gp_md_table_cell(t, "%s", what);
	gp_md_table_cell(t, "%s", gp_md_n(a, all, key));
	gp_md_table_cell(t, "%s (%.0f %%)", gp_md_n(b, in, key),
			 pct(gp_md_int(in, key), gp_md_int(all, key)));
	gp_md_table_cell(t, "%s", gp_md_n(c, sync, key));
}

/* The APIs inside which something happened, most off-CPU time first. */
static int per_api(const json_t *p, json_int_t offcpu_total, FILE *out)
{
	static const char *const head[] = { "API",	    "Calls",
					    "Off-CPU (ns)", "Share of off-CPU",
					    "Voluntary",    "Involuntary",
					    "Minor faults", "Major faults" };
	const json_t *rows = json_object_get(p, "cuda_api"), *r;
	const json_t **v = calloc(json_array_size(rows) + 1, sizeof(*v));
	size_t i, n = 0;
	struct gp_md_table *t;
	char a[32];

	if (!v)
		return -ENOMEM;
	json_array_foreach(rows, i, r)
		if (gp_md_int(r, "offcpu_ns") || gp_md_int(r, "voluntary_switches") ||
		    gp_md_int(r, "involuntary_switches") || gp_md_int(r, "minor_faults") ||
		    gp_md_int(r, "major_faults"))
			v[n++] = r;
	if (!n) {
		free(v);
		fputs("Nothing happened to the calling threads inside GPU calls.\n\n", out);
		return 0;
	}
	/* insertion sort: a handful of rows */
	for (size_t k = 1; k < n; k++)
		for (size_t j = k;
		     j > 0 && gp_md_int(v[j], "offcpu_ns") > gp_md_int(v[j - 1], "offcpu_ns");
		     j--) {
			const json_t *tmp = v[j];

			v[j] = v[j - 1];
			v[j - 1] = tmp;
		}
	fputs("Inside GPU calls, per API (what happened to the calling thread during its calls):\n\n",
	      out);
	t = gp_md_table_new(8, head, "lrrrrrrr");
	for (i = 0; t && i < n; i++) {
		gp_md_table_cell(t, "%s", gp_md_str(v[i], "name"));
		gp_md_table_cell(t, "%s", gp_md_n(a, v[i], "calls"));
		gp_md_table_cell(t, "%s", gp_md_n(a, v[i], "offcpu_ns"));
		gp_md_table_cell(t, "%.1f %%", pct(gp_md_int(v[i], "offcpu_ns"), offcpu_total));
		gp_md_table_cell(t, "%s", gp_md_n(a, v[i], "voluntary_switches"));
		gp_md_table_cell(t, "%s", gp_md_n(a, v[i], "involuntary_switches"));
		gp_md_table_cell(t, "%s", gp_md_n(a, v[i], "minor_faults"));
		gp_md_table_cell(t, "%s", gp_md_n(a, v[i], "major_faults"));
	}
	free(v);
	int err = gp_md_flush_table(t, out);

	fputc('\n', out);
	return err;
}

int gp_md_cpu(const json_t *p, FILE *out)
{
	static const char *const head[] = { "", "All threads", "Inside GPU calls",
					    "Inside synchronisation calls" };
	const json_t *cpu = json_object_get(p, "cpu"), *in, *sync, *verdict;
	json_t *all;
	struct gp_md_table *t;
	char a[32], b[32], c[32];
	int err;

	fputs("### CPU, scheduling and page faults\n\n", out);
	if (!json_is_object(cpu)) {
		fputs("No CPU account was recorded for this process.\n\n", out);
		return 0;
	}
	in = json_object_get(cpu, "in_gpu_calls");
	sync = json_object_get(cpu, "in_gpu_sync_calls");
	verdict = json_object_get(cpu, "verdict");
	fprintf(out, "**Verdict: %s.**\n\n", gp_md_str(verdict, "text"));
	fprintf(out,
		"Traced wall time %s ns; %s thread%s, together %s ns of thread time: on-CPU %s ns "
		"(%.1f %% of their time, %.2f CPUs on average).\n\n",
		gp_md_n(a, cpu, "wall_ns"), gp_md_n(b, cpu, "threads"),
		gp_md_int(cpu, "threads") == 1 ? "" : "s", gp_md_n(c, cpu, "thread_wall_ns"),
		gp_md_n((char[32]){ 0 }, cpu, "cpu_ns"),
		json_real_value(json_object_get(cpu, "cpu_utilization_pct")),
		json_real_value(json_object_get(cpu, "cpu_wall_ratio")));

	/* the "all threads" column reads the cpu object's own fields */
	all = json_object();
	if (!all)
		return -ENOMEM;
	json_object_set(all, "offcpu_ns", json_object_get(cpu, "offcpu_ns"));
	json_object_set(all, "voluntary_switches", json_object_get(cpu, "voluntary_switches"));
	json_object_set(all, "involuntary_switches", json_object_get(cpu, "involuntary_switches"));
	json_object_set(all, "minor_faults", json_object_get(cpu, "minor_faults"));
	json_object_set(all, "major_faults", json_object_get(cpu, "major_faults"));
	t = gp_md_table_new(4, head, "lrrr");
	if (t) {
		row(t, "Off-CPU time (ns)", all, in, sync, "offcpu_ns");
		gp_md_table_cell(t, "… of which runnable, waiting for a CPU");
		gp_md_table_cell(t, "%s", gp_md_n(a, cpu, "runnable_ns"));
		gp_md_table_cell(t, "—");
		gp_md_table_cell(t, "—");
		row(t, "Voluntary context switches", all, in, sync, "voluntary_switches");
		row(t, "Involuntary context switches", all, in, sync, "involuntary_switches");
		row(t, "Minor page faults", all, in, sync, "minor_faults");
		row(t, "Major page faults", all, in, sync, "major_faults");
	}
	err = gp_md_flush_table(t, out);
	fputs("\nOff-CPU: waiting, sleeping or runnable but not running (runnable: after an involuntary switch, "
	      "until it ran again). Switches are classified as the kernel "
	      "counts them (nvcsw/nivcsw); faults are the kernel's own per-thread minflt/majflt. \"Inside GPU "
	      "calls\" is what happened to a thread between the entry and the return of its traced calls.\n\n",
	      out);
	if (gp_md_int(cpu, "faults_unknown_threads"))
		fprintf(out,
			"> The fault counters of %s thread(s) could not be read: their faults are not counted.\n\n",
			gp_md_n(a, cpu, "faults_unknown_threads"));
	{
		int e = per_api(p, gp_md_int(all, "offcpu_ns"), out);

		err = err ? err : e;
	}
	json_decref(all);
	return err;
}
