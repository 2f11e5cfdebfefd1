/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md_work.c — the sections of one process in report.md about GPU
 * work and who issued it: kernel and graph launches, streams and events,
 * threads.
 */
#include <errno.h>
#include <string.h>

#include "report/report_md.h"

static void config_text(char *buf, size_t len, const json_t *k)
{
	const json_t *cfgs = json_object_get(k, "configs"), *c;
	size_t i, used = 0, ncfg = json_array_size(cfgs);

	buf[0] = '\0';
	json_array_foreach(cfgs, i, c) {
		const json_t *g = json_object_get(c, "grid"), *b = json_object_get(c, "block");

		if (i == 3 || used >= len)
			break;
#define D(arr, at) (long long)json_integer_value(json_array_get(arr, at))
		used += (size_t)snprintf(buf + used, len - used,
					 "%s(%lld,%lld,%lld)×(%lld,%lld,%lld) smem %lld: %lld",
					 i ? "; " : "", D(g, 0), D(g, 1), D(g, 2), D(b, 0), D(b, 1),
					 D(b, 2), (long long)gp_md_int(c, "smem_bytes"),
					 (long long)gp_md_int(c, "launches"));
#undef D
	}
	if (ncfg > 3 && used < len)
		snprintf(buf + used, len - used, "; +%zu more", ncfg - 3);
}

int gp_md_kernels(const json_t *p, FILE *out)
{
	static const char *const head[] = { "Launches", "Errors", "Host time (ns)",
					    "Grid×Block, smem: launches", "Kernel" };
	static const char *const ghead[] = { "Graph exec", "Launches", "Errors", "Host time (ns)" };
	const json_t *rows = json_object_get(p, "kernels"), *k;
	size_t i;
	char n[32], cfg[512];
	int err = 0;

	fputs("### Kernel launches\n\n", out);
	if (!json_array_size(rows)) {
		fputs("No kernel launch.\n\n", out);
	} else {
		struct gp_md_table *t = gp_md_table_new(5, head, "rrrll");

		json_array_foreach(rows, i, k) {
			if (!t)
				break;
			gp_md_table_cell(t, "%s", gp_md_n(n, k, "launches"));
			gp_md_table_cell(t, "%s", gp_md_n(n, k, "errors"));
			gp_md_table_cell(t, "%s", gp_md_n(n, k, "host_ns"));
			config_text(cfg, sizeof(cfg), k);
			gp_md_table_cell(t, "%s", cfg);
			if (gp_md_bool(k, "resolved"))
				gp_md_table_cell(t, "`%s`%s", gp_md_str(k, "name"),
						 gp_md_int(k, "driver_launches")
							 ? " (driver launches included)"
							 : "");
			else
				gp_md_table_cell(t, "%s; func %s, called from %s",
						 gp_md_str(k, "unresolved_reason"),
						 gp_md_str(k, "func"), gp_md_str(k, "ret_addr"));
		}
		err = gp_md_flush_table(t, out);
		fputs("\nHost time is time spent in the launch calls, not kernel execution time.\n\n",
		      out);
	}
	rows = json_object_get(p, "graph_launches");
	if (!json_array_size(rows))
		return err;

	struct gp_md_table *t = gp_md_table_new(4, ghead, "lrrr");

	fputs("Graph launches:\n\n", out);
	json_array_foreach(rows, i, k) {
		if (!t)
			break;
		gp_md_table_cell(t, "%s", gp_md_str(k, "exec"));
		gp_md_table_cell(t, "%s", gp_md_n(n, k, "launches"));
		gp_md_table_cell(t, "%s", gp_md_n(n, k, "errors"));
		gp_md_table_cell(t, "%s", gp_md_n(n, k, "host_ns"));
	}
	int e = gp_md_flush_table(t, out);

	fputc('\n', out);
	return err ? err : e;
}

int gp_md_streams(const json_t *p, FILE *out)
{
	static const char *const head[] = { "Stream",	   "Created", "Destroyed",
					    "Kernels",	   "Graphs",  "Copies",
					    "Copy bytes",  "Memsets", "Event records",
					    "Event waits", "Syncs",   "Sync time (ns)" };
	const json_t *rows = json_object_get(p, "streams"), *s, *ev = json_object_get(p, "events");
	size_t i;
	char n[32], n2[32], n3[32], n4[32], n5[32];
	int err = 0;

	fputs("### Streams\n\n", out);
	if (json_array_size(rows)) {
		struct gp_md_table *t = gp_md_table_new(12, head, "lrrrrrrrrrrr");

		json_array_foreach(rows, i, s) {
			if (!t)
				break;
			gp_md_table_cell(t, "%s", gp_md_str(s, "stream"));
			gp_md_table_cell(t, "%s", gp_md_n(n, s, "created"));
			gp_md_table_cell(t, "%s", gp_md_n(n, s, "destroyed"));
			gp_md_table_cell(t, "%s", gp_md_n(n, s, "kernels"));
			gp_md_table_cell(t, "%s", gp_md_n(n, s, "graph_launches"));
			gp_md_table_cell(t, "%s", gp_md_n(n, s, "copies"));
			gp_md_table_cell(t, "%s", gp_md_n(n, s, "copy_bytes"));
			gp_md_table_cell(t, "%s", gp_md_n(n, s, "memsets"));
			gp_md_table_cell(t, "%s", gp_md_n(n, s, "event_records"));
			gp_md_table_cell(t, "%s", gp_md_n(n, s, "event_waits"));
			gp_md_table_cell(t, "%s", gp_md_n(n, s, "sync_calls"));
			gp_md_table_cell(t, "%s", gp_md_n(n, s, "sync_ns"));
		}
		err = gp_md_flush_table(t, out);
		fputc('\n', out);
	} else {
		fputs("No stream activity.\n\n", out);
	}
	fprintf(out,
		"Events: %s created, %s destroyed, %s recorded; %s cudaEventSynchronize calls blocked %s ns.\n\n",
		gp_md_n(n, ev, "created"), gp_md_n(n2, ev, "destroyed"), gp_md_n(n3, ev, "records"),
		gp_md_n(n4, ev, "sync_calls"), gp_md_n(n5, ev, "sync_ns"));
	return err;
}

int gp_md_threads(const json_t *doc, const json_t *p, FILE *out)
{
	static const char *const head[] = { "TID",	    "Name",	     "GPU calls",
					    "Errors",	    "In calls (ns)", "CPU (ns)",
					    "Off-CPU (ns)", "Vol. sw.",	     "Invol. sw.",
					    "Minor flt",    "Major flt",     "Window",
					    "Device" };
	const json_t *rows = json_object_get(p, "threads"), *th;
	size_t i;
	char n[32], window[160];

	fputs("### Threads\n\n", out);
	if (!json_array_size(rows)) {
		fputs("No thread was seen.\n\n", out);
		return 0;
	}

	struct gp_md_table *t = gp_md_table_new(13, head, "llrrrrrrrrrlr");

	json_array_foreach(rows, i, th) {
		if (!t)
			break;
		bool cpu = json_is_integer(json_object_get(th, "cpu_ns"));
		bool faults = json_is_integer(json_object_get(th, "minor_faults"));

		gp_md_table_cell(t, "%lld", (long long)gp_md_int(th, "tid"));
		gp_md_table_cell(t, "%s", gp_md_str(th, "name"));
		gp_md_table_cell(t, "%s", gp_md_n(n, th, "calls"));
		gp_md_table_cell(t, "%s", gp_md_n(n, th, "errors"));
		gp_md_table_cell(t, "%s", gp_md_n(n, th, "host_ns"));
		gp_md_table_cell(t, "%s", cpu ? gp_md_n(n, th, "cpu_ns") : "—");
		gp_md_table_cell(t, "%s", cpu ? gp_md_n(n, th, "offcpu_ns") : "—");
		gp_md_table_cell(t, "%s", cpu ? gp_md_n(n, th, "voluntary_switches") : "—");
		gp_md_table_cell(t, "%s", cpu ? gp_md_n(n, th, "involuntary_switches") : "—");
		gp_md_table_cell(t, "%s", faults ? gp_md_n(n, th, "minor_faults") : "—");
		gp_md_table_cell(t, "%s", faults ? gp_md_n(n, th, "major_faults") : "—");
		if (cpu) {
			char from[48], to[48];

			gp_md_rel_time(from, sizeof(from), doc,
				       gp_md_int(th, "window_start_mono_ns"));
			gp_md_rel_time(to, sizeof(to), doc, gp_md_int(th, "window_end_mono_ns"));
			snprintf(window, sizeof(window), "%s%s – %s%s", from,
				 gp_md_bool(th, "started_in_window") ? " (created)" : "", to,
				 gp_md_bool(th, "exited") ? " (exited)" : "");
		}
		gp_md_table_cell(t, "%s", cpu ? window : "—");
		gp_md_table_cell(t, "%lld", (long long)gp_md_int(th, "device"));
	}
	int err = gp_md_flush_table(t, out);

	fputs("\nGPU calls, errors, \"in calls\": its traced calls and the host time in them. CPU, off-CPU, "
	      "switches and faults: over its window (from attach or its creation to its exit or the end). "
	      "Device: the thread's current device from its last successful cudaSetDevice; -1: never seen.\n\n",
	      out);
	return err;
}
