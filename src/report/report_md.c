/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md.c — report.md: the report document (report.h) rendered for
 * people. Session header (with the launched command, if any), the
 * machine-wide summary when several processes were traced, the containers
 * they run in, the skipped processes, the ranked recommendations; then per
 * process the API table in the nsys cuda_api_sum layout, errors,
 * transfers, memory, kernels, streams and threads; then
 * what was instrumented and every loss counter, even at zero.
 * A process is report_md_process.c's (its sections: report_sections.c);
 * the helpers are md_out.c's.
 */
#include <errno.h>
#include <string.h>

#include "report/report_md.h"

static void launch_line(const json_t *doc, FILE *out)
{
	const json_t *l = json_object_get(json_object_get(doc, "session"), "launch");

	if (!json_is_object(l))
		return;
	fprintf(out, "- Launched: `%s` — ", gp_md_str(l, "command"));
	if (!gp_md_bool(l, "exited"))
		fputs("had not exited when the report was written\n", out);
	else if (json_is_string(json_object_get(l, "signal")))
		fprintf(out, "killed by SIG%s (exit status %lld)\n", gp_md_str(l, "signal"),
			(long long)gp_md_int(l, "exit_status"));
	else
		fprintf(out, "exited with status %lld\n", (long long)gp_md_int(l, "exit_status"));
}

static void processes_line(const json_t *doc, FILE *out)
{
	const json_t *s = json_object_get(doc, "summary");
	json_int_t nskipped = gp_md_int(s, "processes_skipped");
	char n[32], n2[32];

	fprintf(out, "- Processes: %zu", json_array_size(json_object_get(doc, "processes")));
	if (json_is_object(s))
		fprintf(out, " (%s exited)", gp_md_n(n, s, "processes_exited"));
	if (nskipped)
		fprintf(out, "; %s skipped (see \"Skipped processes\")", gp_md_snum(n2, nskipped));
	fputc('\n', out);
}

/* Why a process is traced, as a table cell: "launched", "fork of 4242", ... */
static void because_cell(struct gp_md_table *t, const json_t *p)
{
	const json_t *parent = json_object_get(p, "parent_pid");
	const char *why = gp_md_str(p, "traced_because");

	if (json_is_integer(parent))
		gp_md_table_cell(t, "%s of %lld", *why ? why : "child",
				 (long long)json_integer_value(parent));
	else
		gp_md_table_cell(t, "%s", *why ? why : "—");
}

static json_int_t kernel_launches(const json_t *p)
{
	const json_t *k;
	json_int_t n = 0;
	size_t i;

	json_array_foreach(json_object_get(p, "kernels"), i, k)
		n += gp_md_int(k, "launches");
	return n;
}

static void cpu_cell(struct gp_md_table *t, const json_t *p, const char *key)
{
	const json_t *cpu = json_object_get(p, "cpu");
	char n[32];

	if (json_is_object(cpu))
		gp_md_table_cell(t, "%s", gp_md_n(n, cpu, key));
	else
		gp_md_table_cell(t, "—");
}

/* One row per process, then the sums of report.json's summary{}; then copies by direction. */
static int summary(const json_t *doc, FILE *out)
{
	static const char *const head[] = {
		"PID",		 "Process",	     "Traced because",
		"Exited",	 "API calls",	     "API errors",
		"API time (ns)", "Kernel launches",  "Peak device memory (B)",
		"CPU time (ns)", "Off-CPU time (ns)"
	};
	static const char *const xhead[] = { "Direction", "Calls", "Bytes" };
	const json_t *procs = json_object_get(doc, "processes"),
		     *s = json_object_get(doc, "summary"), *p;
	struct gp_md_table *t;
	size_t i;
	char n[32];
	int err;

	if (json_array_size(procs) < 2 || !json_is_object(s))
		return 0;
	fputs("## Machine-wide summary\n\n", out);
	fprintf(out, "%s processes traced, %s of them exited", gp_md_n(n, s, "processes"),
		gp_md_n((char[32]){ 0 }, s, "processes_exited"));
	if (gp_md_int(s, "processes_skipped"))
		fprintf(out, ", %s skipped", gp_md_n(n, s, "processes_skipped"));
	fputs(". The last row sums the processes (report.json `summary`); each has its own section below.\n\n",
	      out);
	t = gp_md_table_new(11, head, "rlllrrrrrrr");
	json_array_foreach(procs, i, p) {
		if (!t)
			break;
		gp_md_table_cell(t, "%lld", (long long)gp_md_int(p, "pid"));
		gp_md_table_cell(t, "%s",
				 *gp_md_str(p, "comm") ? gp_md_str(p, "comm") : "(name unknown)");
		because_cell(t, p);
		gp_md_table_cell(t, "%s", gp_md_bool(p, "exited") ? "yes" : "no");
		gp_md_table_cell(t, "%s", gp_md_n(n, p, "api_calls"));
		gp_md_table_cell(t, "%s", gp_md_n(n, p, "api_errors"));
		gp_md_table_cell(t, "%s", gp_md_n(n, p, "api_total_ns"));
		gp_md_table_cell(t, "%s", gp_md_snum(n, kernel_launches(p)));
		gp_md_table_cell(t, "%s", gp_md_n(n, json_object_get(p, "memory"), "peak_bytes"));
		cpu_cell(t, p, "cpu_ns");
		cpu_cell(t, p, "offcpu_ns");
	}
	if (t) {
		gp_md_table_cell(t, "**all**");
		gp_md_table_cell(t, "**%s processes**", gp_md_n(n, s, "processes"));
		gp_md_table_cell(t, "%s", "");
		gp_md_table_cell(t, "**%s**", gp_md_n(n, s, "processes_exited"));
		gp_md_table_cell(t, "**%s**", gp_md_n(n, s, "api_calls"));
		gp_md_table_cell(t, "**%s**", gp_md_n(n, s, "api_errors"));
		gp_md_table_cell(t, "**%s**", gp_md_n(n, s, "api_total_ns"));
		gp_md_table_cell(t, "**%s**", gp_md_n(n, s, "kernel_launches"));
		gp_md_table_cell(t, "**%s**", gp_md_n(n, s, "device_memory_peak_bytes_sum"));
		gp_md_table_cell(t, "**%s**", gp_md_n(n, s, "cpu_ns"));
		gp_md_table_cell(t, "**%s**", gp_md_n(n, s, "offcpu_ns"));
	}
	err = gp_md_flush_table(t, out);
	fputs("\nPeak device memory is each process's own peak; their sum is an upper bound of what the "
	      "processes held at once. CPU time is on-CPU time of their threads over their traced windows.\n\n",
	      out);

	const json_t *xfer = json_object_get(s, "transfers"), *x;

	if (!json_array_size(xfer)) {
		fputs("No successful copy in any process.\n\n", out);
		return err;
	}
	fputs("Successful copies of all processes, by direction:\n\n", out);
	t = gp_md_table_new(3, xhead, "lrr");
	json_array_foreach(xfer, i, x) {
		if (!t)
			break;
		gp_md_table_cell(t, "%s", gp_md_str(x, "direction"));
		gp_md_table_cell(t, "%s", gp_md_n(n, x, "calls"));
		gp_md_table_cell(t, "%s", gp_md_n(n, x, "bytes"));
	}
	int e = gp_md_flush_table(t, out);

	fputc('\n', out);
	return err ? err : e;
}

static int skipped(const json_t *doc, FILE *out)
{
	static const char *const head[] = { "PID", "Process", "Reason" };
	const json_t *rows = json_object_get(doc, "skipped"), *r;
	struct gp_md_table *t;
	size_t i;

	if (!json_array_size(rows))
		return 0;
	fputs("## Skipped processes\n\n", out);
	fputs("Processes the session wanted to trace but could not; none of their calls is in this report.\n\n",
	      out);
	t = gp_md_table_new(3, head, "rll");
	json_array_foreach(rows, i, r) {
		if (!t)
			break;
		gp_md_table_cell(t, "%lld", (long long)gp_md_int(r, "pid"));
		gp_md_table_cell(t, "%s",
				 *gp_md_str(r, "comm") ? gp_md_str(r, "comm") : "(name unknown)");
		gp_md_table_cell(t, "%s", gp_md_str(r, "reason"));
	}
	int err = gp_md_flush_table(t, out);

	fputc('\n', out);
	return err;
}

/* Rebuilt from a capture: which, and what of it could not be read. */
static void source_lines(const json_t *doc, FILE *out)
{
	const json_t *src = json_object_get(doc, "source");
	const char *file = gp_md_str(src, "capture_file");

	if (strcmp(gp_md_str(src, "kind"), "capture")) {
		if (*file)
			fprintf(out, "- Capture: `%s` (%lld operations in %lld chunk%s%s)\n", file,
				(long long)gp_md_int(src, "ops"),
				(long long)gp_md_int(src, "chunks"),
				gp_md_int(src, "chunks") == 1 ? "" : "s",
				gp_md_int(src, "lost_ops")
					? "; some lost: see lost_ops in report.json"
					: "");
		return;
	}
	fprintf(out, "- Source: rebuilt from the capture `%s` (%lld operations in %lld chunk%s)\n",
		file, (long long)gp_md_int(src, "ops"), (long long)gp_md_int(src, "chunks"),
		gp_md_int(src, "chunks") == 1 ? "" : "s");
	if (*gp_md_str(src, "cut"))
		fprintf(out, "- **Capture incomplete**: %s\n", gp_md_str(src, "cut"));
	if (gp_md_int(src, "corrupt_chunks"))
		fprintf(out, "- **Corrupt chunks skipped**: %lld (%s)\n",
			(long long)gp_md_int(src, "corrupt_chunks"), gp_md_str(src, "corruption"));
}

/* What stood in for a feature the kernel lacks, and what removing the probes took there. */
static void kernel_lines(const json_t *k, FILE *out)
{
	const json_t *r, *rem = json_object_get(k, "probe_removal");
	size_t i;

	json_array_foreach(json_object_get(k, "replaced"), i, r)
		fprintf(out, "- Kernel: %s %s (Linux %s): %s; %s\n",
			json_is_true(json_object_get(r, "by_request")) ? "asked not to use"
								       : "lacks",
			gp_md_str(r, "feature"), gp_md_str(r, "since"), gp_md_str(r, "by"),
			gp_md_str(r, "cost"));
	if (!json_array_size(json_object_get(k, "replaced")) || !json_is_object(rem))
		return;
	if (json_is_integer(json_object_get(rem, "remover_pid")))
		fprintf(out,
			"- Probes removed after the session: %lld, by process %lld (the kernel removes "
			"perf-event links one at a time)\n",
			(long long)json_integer_value(json_object_get(rem, "probes")),
			(long long)json_integer_value(json_object_get(rem, "remover_pid")));
	else
		fprintf(out, "- Probes removed at the end: %lld in %.3f s\n",
			(long long)json_integer_value(json_object_get(rem, "probes")),
			(double)json_integer_value(json_object_get(rem, "ns")) / 1e9);
}

static void session_header(const json_t *doc, FILE *out)
{
	const json_t *s = json_object_get(doc, "session");
	const json_t *dur = json_object_get(s, "duration_ns");
	char n[32];
	size_t files;

	fputs("# gpuprobed report\n\n", out);
	fprintf(out, "- Tool: gpuprobed %s\n", gp_md_str(s, "tool_version"));
	fprintf(out, "- Command: `%s`\n", gp_md_str(s, "command_line"));
	launch_line(doc, out);
	fprintf(out, "- Mode: %s\n", gp_md_str(s, "mode"));
	fprintf(out, "- Host: %s (kernel %s)\n", gp_md_str(s, "hostname"),
		gp_md_str(s, "kernel_release"));
	kernel_lines(json_object_get(s, "kernel"), out);
	fprintf(out, "- Started: %s\n",
		*gp_md_str(s, "start_utc") ? gp_md_str(s, "start_utc") : "(unknown)");
	if (json_is_integer(dur))
		fprintf(out, "- Duration: %lld.%03lld s\n",
			(long long)(json_integer_value(dur) / 1000000000),
			(long long)(json_integer_value(dur) % 1000000000 / 1000000));
	else
		fputs("- Duration: (session not ended)\n", out);
	processes_line(doc, out);
	files = json_array_size(json_object_get(s, "timeline_files"));
	if (files > 1)
		fprintf(out,
			"- Timeline: %zu files, `trace.json` to `trace.%zu.json` (a file ends past "
			"--timeline-file-mb; each opens by itself)\n",
			files, files - 1);
	source_lines(doc, out);
	fprintf(out, "- Events lost or degraded: %s (see \"Loss counters\")\n\n",
		gp_md_n(n, doc, "drops_total"));
	fputs("Times are CLOCK_MONOTONIC; \"+s\" is seconds since the session started. All API times are "
	      "host-observed: from the entry to the return of each call on the calling thread, not GPU "
	      "execution time.\n\n",
	      out);
}

/* The uretprobe row that follows an uprobe row of the same place, or NULL. */
static const json_t *return_row(const json_t *arr, size_t i)
{
	const json_t *u = json_array_get(arr, i), *r = json_array_get(arr, i + 1);

	if (!r || strcmp(gp_md_str(u, "kind"), "uprobe") ||
	    strcmp(gp_md_str(r, "kind"), "uretprobe") ||
	    strcmp(gp_md_str(u, "target"), gp_md_str(r, "target")) ||
	    strcmp(gp_md_str(u, "offset"), gp_md_str(r, "offset")))
		return NULL;
	return r;
}

/* A row (and its return row, when paired) that no thread ever hit. */
static bool never_fired(const json_t *row, const json_t *ret)
{
	return !gp_md_int(row, "hits") && (!ret || !gp_md_int(ret, "hits"));
}

/* One table per target file of the probe pairs that fired (report.json has a row per probe, fired or not);
 * those that never fired counted in one line, the full list left to report.json. */
static int instrumentation(const json_t *doc, FILE *out)
{
	static const char *const head[] = { "Symbol", "Offset", "Entry hits (uprobe)",
					    "Return hits (uretprobe)" };
	const json_t *arr = json_object_get(doc, "instrumentation");
	struct gp_md_table *t = NULL;
	size_t n = json_array_size(arr), idle_probes = 0, idle_files = 0;
	const char *target = NULL, *idle_target = NULL;
	long long group_pid = -1, idle_pid = -1;
	char h1[32], h2[32];
	int err = 0;

	fputs("## Instrumentation (what was touched)\n\n", out);
	if (!n) {
		fputs("No probes were placed.\n\n", out);
		return 0;
	}
	fputs("Every probe gpuprobed placed that fired; each is removed when it detaches. Hits are counted in the "
	      "kernel, before any loss downstream.\n\n",
	      out);
	for (size_t i = 0; i < n; i++) {
		const json_t *row = json_array_get(arr, i), *ret = return_row(arr, i);
		long long pid = gp_md_int(row, "pid");

		if (never_fired(row, ret)) {
			if (!idle_target || strcmp(idle_target, gp_md_str(row, "target")) ||
			    pid != idle_pid)
				idle_files++;
			idle_target = gp_md_str(row, "target");
			idle_pid = pid;
			idle_probes += ret ? 2 : 1;
			i += ret ? 1 : 0;
			continue;
		}
		if (!target || strcmp(target, gp_md_str(row, "target")) || pid != group_pid) {
			if (t) {
				int e = gp_md_flush_table(t, out);

				err = err ? err : e;
				fputc('\n', out);
			}
			target = gp_md_str(row, "target");
			group_pid = pid;
			if (pid)
				fprintf(out, "`%s` (pid %lld):\n\n", target, pid);
			else
				fprintf(out, "`%s` (every process):\n\n", target);
			t = gp_md_table_new(4, head, "llrr");
			if (!t)
				return -ENOMEM;
		}
		if (strcmp(gp_md_str(row, "symbol"), gp_md_str(row, "api")))
			gp_md_table_cell(t, "`%s` (%s)", gp_md_str(row, "symbol"),
					 gp_md_str(row, "api"));
		else
			gp_md_table_cell(t, "`%s`", gp_md_str(row, "symbol"));
		gp_md_table_cell(t, "%s", gp_md_str(row, "offset"));
		if (ret) {
			gp_md_table_cell(t, "%s", gp_md_n(h1, row, "hits"));
			gp_md_table_cell(t, "%s", gp_md_n(h2, ret, "hits"));
			i++;
		} else if (!strcmp(gp_md_str(row, "kind"), "uprobe")) {
			gp_md_table_cell(t, "%s", gp_md_n(h1, row, "hits"));
			gp_md_table_cell(t, "—");
		} else {
			gp_md_table_cell(t, "—");
			gp_md_table_cell(t, "%s", gp_md_n(h2, row, "hits"));
		}
	}
	if (t) {
		int e = gp_md_flush_table(t, out);

		err = err ? err : e;
		fputc('\n', out);
	} else {
		fputs("No probe fired.\n\n", out);
	}
	if (idle_probes)
		fprintf(out,
			"Never fired: %zu of the %zu probes placed, on %zu file%s (each in report.json's "
			"`instrumentation` with `hits` 0).\n\n",
			idle_probes, n, idle_files, idle_files == 1 ? "" : "s");
	return err;
}

/* The counters that are not 0, and the total; how many are 0 in one line (report.json has them all). */
static int loss_counters(const json_t *doc, FILE *out)
{
	static const char *const head[] = { "Counter", "Count" };
	const json_t *drops = json_object_get(doc, "drops");
	struct gp_md_table *t;
	const char *key;
	const json_t *val;
	size_t zero = 0;
	char n[32];

	fputs("## Loss counters\n\n", out);
	if (!gp_md_int(doc, "drops_total")) {
		fprintf(out,
			"No event was lost: each of the %zu loss counters (report.json's `drops`) is 0.\n\n",
			json_object_size(drops));
		return 0;
	}
	t = gp_md_table_new(2, head, "lr");
	json_object_foreach((json_t *)drops, key, val) {
		if (!json_integer_value(val)) {
			zero++;
			continue;
		}
		if (!t)
			break;
		gp_md_table_cell(t, "%s", key);
		gp_md_table_cell(t, "%s", gp_md_snum(n, json_integer_value(val)));
	}
	if (t) {
		gp_md_table_cell(t, "**total**");
		gp_md_table_cell(t, "**%s**", gp_md_n(n, doc, "drops_total"));
	}
	int err = gp_md_flush_table(t, out);

	fprintf(out,
		"\nSome events were lost or degraded: the numbers above undercount by at most these amounts. "
		"The other %zu counters of report.json's `drops` are 0.\n\n",
		zero);
	return err;
}

int gp_report_md_write(const struct gp_model *m, FILE *out)
{
	json_t *doc = gp_report_doc(m);
	int err;

	if (!doc)
		return -(errno ? errno : ENOMEM);
	err = gp_report_md_render(doc, out);
	json_decref(doc);
	return err;
}

int gp_report_md_render(const json_t *doc, FILE *out)
{
	const json_t *proc;
	size_t i;
	int err = 0;

	session_header(doc, out);
	{
		int e1 = summary(doc, out), e8 = gp_md_containers(doc, out), e2 = skipped(doc, out);
		int e3 = gp_md_recommendations(doc, out);
		int e4 = gp_md_merge(doc, out), e5 = gp_md_communicators(doc, out),
		    e6 = gp_md_stalls(doc, out);
		int e7 = gp_md_gpus(doc, out);

		err = e1 ? e1 : e8 ? e8 : e2 ? e2 : e3 ? e3 : e4 ? e4 : e5 ? e5 : e6 ? e6 : e7;
	}
	json_array_foreach(json_object_get(doc, "processes"), i, proc) {
		int e = gp_md_process(doc, proc, out);

		err = err ? err : e;
	}
	if (!json_array_size(json_object_get(doc, "processes")))
		fputs("No traced process made a traced call.\n\n", out);
	{
		int e1 = instrumentation(doc, out), e2 = loss_counters(doc, out);

		err = err ? err : e1 ? e1 : e2;
	}
	if (!err && (fflush(out) || ferror(out)))
		err = -(errno ? errno : EIO);
	return err;
}
