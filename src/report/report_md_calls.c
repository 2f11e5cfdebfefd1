/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md_calls.c — sections of one process of report.md: the API table
 * (nsys cuda_api_sum layout), error codes, transfers and memsets, memory
 * and leaks.
 */
#include <errno.h>
#include <string.h>

#include "report/report_md.h"

#define MD_ALLOCS_SHOWN \
	20 /* leaks / live allocations listed in report.md (all are in report.json) */

int gp_md_api_table(const json_t *doc, const json_t *p, FILE *out)
{
	static const char *const head[] = { "Time (%)", "Total Time (ns)", "Num Calls",
					    "Avg (ns)", "Med (ns)",	   "Min (ns)",
					    "Max (ns)", "StdDev (ns)",	   "p99 (ns)",
					    "Errors",	"Layer",	   "Name" };
	const json_t *rows = json_object_get(p, "cuda_api"), *r;
	json_int_t aggregated = 0, estimated = 0;
	size_t i;
	char n[32];

	fputs("### API summary: runtime, driver, NCCL (host-observed)\n\n", out);
	if (!json_array_size(rows)) {
		fputs("No traced call.\n\n", out);
		return 0;
	}

	struct gp_md_table *t = gp_md_table_new(12, head, "rrrrrrrrrrll");

	json_array_foreach(rows, i, r) {
		if (!t)
			break;
		gp_md_table_cell(t, "%.1f", json_real_value(json_object_get(r, "time_pct")));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "total_ns"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "calls"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "avg_ns"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "med_ns"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "min_ns"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "max_ns"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "stddev_ns"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "p99_ns"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "errors"));
		gp_md_table_cell(t, "%s", gp_md_str(r, "family"));
		gp_md_table_cell(t, "%s", gp_md_str(r, "name"));
		aggregated += gp_md_int(r, "aggregated_calls");
		estimated += gp_md_int(r, "estimated_calls");
	}
	int err = gp_md_flush_table(t, out);

	fprintf(out,
		"\nHost-observed: time from entry to return of each call on the calling thread (%s calls, "
		"%s ns in total). Med and p99 come from a log-linear histogram: within 1/128 of the exact "
		"value, exact when all calls took the same time.\n",
		gp_md_n(n, p, "api_calls"), gp_md_n((char[32]){ 0 }, p, "api_total_ns"));
	if (aggregated) /* --aggregate: those calls came as log2 histograms */
		fprintf(out,
			"\n%lld of these calls were counted in the kernel (--aggregate): for them Med, p99 and "
			"StdDev come from a log2 histogram (within a factor of 2), every error is counted under the "
			"last error code seen per thread, and they appear in no kernel, stream or timeline view.\n",
			(long long)aggregated);
	if (estimated) /* the overhead budget's duty cycle */
		fprintf(out,
			"\n%lld of these calls were not seen but estimated: the overhead budget attached the "
			"hot probes for part of each second and their counts and times were scaled up (see "
			"\"sampling\" in report.json).\n",
			(long long)estimated);
	fputc('\n', out);
	return err;
}

int gp_md_errors(const json_t *doc, const json_t *p, FILE *out)
{
	static const char *const head[] = { "API", "Code", "Error", "Count" };
	const json_t *rows = json_object_get(p, "cuda_api"), *r, *c;
	size_t i, j;
	char n[32];

	if (!gp_md_int(p, "api_errors"))
		return 0;

	struct gp_md_table *t = gp_md_table_new(4, head, "lrlr");

	fputs("### Errors (non-zero return codes)\n\n", out);
	json_array_foreach(rows, i, r) {
		json_array_foreach(json_object_get(r, "error_codes"), j, c) {
			if (!t)
				break;
			gp_md_table_cell(t, "%s", gp_md_str(r, "name"));
			gp_md_table_cell(t, "%lld", (long long)gp_md_int(c, "code"));
			gp_md_table_cell(t, "%s", gp_md_str(c, "name"));
			gp_md_table_cell(t, "%s", gp_md_n(n, c, "count"));
		}
	}
	int err = gp_md_flush_table(t, out);

	fputc('\n', out);
	return err;
}

static void size_buckets(char *buf, size_t len, const json_t *hist)
{
	const json_t *b;
	size_t i, used = 0;
	char lo[32], hi[32], n[32];

	buf[0] = '\0';
	json_array_foreach(hist, i, b) {
		if (used >= len)
			break;
		gp_md_bytes(lo, (__u64)gp_md_int(b, "lo_bytes"));
		gp_md_bytes(hi, (__u64)gp_md_int(b, "hi_bytes") + 1);
		used += (size_t)snprintf(buf + used, len - used, "%s%s%s%s: %s", i ? ", " : "", lo,
					 gp_md_int(b, "lo_bytes") ? "–" : "",
					 gp_md_int(b, "lo_bytes") ? hi : "",
					 gp_md_n(n, b, "calls"));
	}
}

int gp_md_transfers(const json_t *doc, const json_t *p, FILE *out)
{
	static const char *const head[] = { "Direction",
					    "Host memory",
					    "Mode",
					    "Calls",
					    "Bytes",
					    "Min (B)",
					    "Max (B)",
					    "Total Time (ns)",
					    "Bandwidth (GB/s)",
					    "Sizes [lo–hi): calls" };
	static const char *const mhead[] = { "Mode", "Calls", "Bytes", "Total Time (ns)" };
	const json_t *rows = json_object_get(p, "transfers"), *r;
	size_t i;
	char n[32], sizes[512];
	int err = 0;

	fputs("### Transfers (successful copies)\n\n", out);
	if (!gp_md_bool(p, "traced_from_start"))
		fputs("> **Caveat:** gpuprobed attached after this process started, so allocations and pinned "
		      "ranges it made before are unknown: \"pageable\" means \"outside every pinned range "
		      "allocated while traced\", and cudaMemcpyDefault copies are resolved only against "
		      "allocations made while traced.\n\n",
		      out);
	if (!json_array_size(rows)) {
		fputs("No successful copy.\n\n", out);
	} else {
		struct gp_md_table *t = gp_md_table_new(10, head, "lllrrrrrrl");

		json_array_foreach(rows, i, r) {
			if (!t)
				break;
			const json_t *bw = json_object_get(r, "bandwidth_bytes_per_s");

			gp_md_table_cell(t, "%s", gp_md_str(r, "direction"));
			gp_md_table_cell(t, "%s", gp_md_str(r, "host_memory"));
			gp_md_table_cell(t, "%s", gp_md_bool(r, "sync") ? "sync" : "async");
			gp_md_table_cell(t, "%s", gp_md_n(n, r, "calls"));
			gp_md_table_cell(t, "%s", gp_md_n(n, r, "bytes"));
			gp_md_table_cell(t, "%s", gp_md_n(n, r, "min_bytes"));
			gp_md_table_cell(t, "%s", gp_md_n(n, r, "max_bytes"));
			gp_md_table_cell(t, "%s", gp_md_n(n, r, "total_ns"));
			if (json_is_integer(bw))
				gp_md_table_cell(t, "%.2f", (double)json_integer_value(bw) / 1e9);
			else
				gp_md_table_cell(t, "—");
			size_buckets(sizes, sizeof(sizes), json_object_get(r, "size_histogram"));
			gp_md_table_cell(t, "%s", sizes);
		}
		err = gp_md_flush_table(t, out);
		fputs("\nBandwidth = bytes / host time of the synchronous copies (GB = 10^9 bytes); asynchronous "
		      "copies return before the data has moved, so they have none. Failed copies are not "
		      "here: they count only as API errors.\n\n",
		      out);
	}
	rows = json_object_get(p, "memsets");
	if (!json_array_size(rows))
		return err;

	struct gp_md_table *t = gp_md_table_new(4, mhead, "lrrr");

	fputs("Memsets:\n\n", out);
	json_array_foreach(rows, i, r) {
		if (!t)
			break;
		gp_md_table_cell(t, "%s", gp_md_bool(r, "sync") ? "sync" : "async");
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "calls"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "bytes"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "total_ns"));
	}
	int e = gp_md_flush_table(t, out);

	fputc('\n', out);
	return err ? err : e;
}

static void counts_row(struct gp_md_table *t, const char *scope, const json_t *c)
{
	char n[32];

	gp_md_table_cell(t, "%s", scope);
	gp_md_table_cell(t, "%s", gp_md_n(n, c, "alloc_calls"));
	gp_md_table_cell(t, "%s", gp_md_n(n, c, "free_calls"));
	gp_md_table_cell(t, "%s", gp_md_n(n, c, "alloc_bytes"));
	gp_md_table_cell(t, "%s", gp_md_n(n, c, "freed_bytes"));
	gp_md_table_cell(t, "%s", gp_md_n(n, c, "live_bytes"));
	gp_md_table_cell(t, "%s", gp_md_n(n, c, "peak_bytes"));
}

static int alloc_list(const json_t *doc, const json_t *mem, const char *list, const char *total,
		      FILE *out)
{
	static const char *const head[] = { "Pointer",	    "Bytes", "Kind", "Device",
					    "Allocated by", "TID",   "At" };
	const json_t *rows = json_object_get(mem, list), *r;
	struct gp_md_table *t = gp_md_table_new(7, head, "lrlrlrl");
	size_t i;
	char n[32], at[64];

	json_array_foreach(rows, i, r) {
		if (!t || i == MD_ALLOCS_SHOWN)
			break;
		gp_md_rel_time(at, sizeof(at), doc, gp_md_int(r, "ts_mono_ns"));
		gp_md_table_cell(t, "%s", gp_md_str(r, "ptr"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "bytes"));
		gp_md_table_cell(t, "%s", gp_md_str(r, "kind"));
		gp_md_table_cell(t, "%lld", (long long)gp_md_int(r, "device"));
		gp_md_table_cell(t, "%s", gp_md_str(r, "api"));
		gp_md_table_cell(t, "%lld", (long long)gp_md_int(r, "tid"));
		gp_md_table_cell(t, "%s", at);
	}
	int err = gp_md_flush_table(t, out);
	json_int_t count = gp_md_int(json_object_get(mem, total), "count");

	if (count > MD_ALLOCS_SHOWN)
		fprintf(out, "\n(the %d largest of %lld; report.json lists up to %d)\n",
			MD_ALLOCS_SHOWN, (long long)count, GP_REPORT_LEAKS_MAX);
	fputc('\n', out);
	return err;
}

int gp_md_memory(const json_t *doc, const json_t *p, FILE *out)
{
	static const char *const head[] = { "Scope",	     "Alloc calls", "Free calls",
					    "Allocated (B)", "Freed (B)",   "Live (B)",
					    "Peak live (B)" };
	const json_t *mem = json_object_get(p, "memory"), *dev;
	const json_t *pinned = json_object_get(mem, "pinned_host");
	struct gp_md_table *t = gp_md_table_new(7, head, "lrrrrrr");
	bool unobserved = false;
	size_t i;
	char n[32], n2[32], scope[64];

	fputs("### Memory\n\n", out);
	if (t) {
		counts_row(t, "device, all", mem);
		json_array_foreach(json_object_get(mem, "devices"), i, dev) {
			json_int_t id = gp_md_int(dev, "device");

			unobserved |= id < 0;
			snprintf(scope, sizeof(scope),
				 id < 0 ? "device -1 (not observed)" : "device %lld",
				 (long long)id);
			counts_row(t, scope, dev);
		}
		counts_row(t, "pinned host", pinned);
	}
	int err = gp_md_flush_table(t, out);

	fputs("\nDevice memory includes managed memory (cudaMallocManaged: ", out);
	fprintf(out, "%s calls, %s bytes).", gp_md_n(n, mem, "managed_alloc_calls"),
		gp_md_n(n2, mem, "managed_alloc_bytes"));
	if (unobserved)
		fputs(" Device -1: the allocating thread was never seen calling cudaSetDevice (a thread that "
		      "never calls it uses device 0).",
		      out);
	fputc('\n', out);
	if (gp_md_int(mem, "untracked_frees") || gp_md_int(pinned, "untracked_frees"))
		fprintf(out,
			"\nFrees of memory allocated before tracing began (bytes unknown): %s device, %s pinned.\n",
			gp_md_n(n, mem, "untracked_frees"), gp_md_n(n2, pinned, "untracked_frees"));
	if (gp_md_int(mem, "stale_evictions"))
		fprintf(out,
			"\n%s allocations (%s bytes) were reused by a new allocation without their free being "
			"seen (lost events); they no longer count as live.\n",
			gp_md_n(n, mem, "stale_evictions"), gp_md_n(n2, mem, "stale_bytes"));
	if (gp_md_int(pinned, "register_calls") || gp_md_int(pinned, "unregister_calls"))
		fprintf(out,
			"\nHost registrations (cudaHostRegister): %s calls, %s bytes; %s unregistered; %s bytes "
			"still registered.\n",
			gp_md_n(n, pinned, "register_calls"),
			gp_md_n(n2, pinned, "registered_bytes"),
			gp_md_n((char[32]){ 0 }, pinned, "unregister_calls"),
			gp_md_n((char[32]){ 0 }, pinned, "registered_live_bytes"));
	fputc('\n', out);

	const char *list = gp_md_bool(p, "exited") ? "leaks" : "live_at_end";
	const json_t *total =
		json_object_get(mem, gp_md_bool(p, "exited") ? "leaks_total" : "live_at_end_total");

	const char *plural = gp_md_int(total, "count") == 1 ? "" : "s";

	if (gp_md_bool(p, "exited"))
		fprintf(out,
			"#### Leaks: %s allocation%s, %s bytes never freed before the process exited\n\n",
			gp_md_n(n, total, "count"), plural, gp_md_n(n2, total, "bytes"));
	else
		fprintf(out,
			"#### Live at end of trace: %s allocation%s, %s bytes (the process is still running: "
			"not leaks)\n\n",
			gp_md_n(n, total, "count"), plural, gp_md_n(n2, total, "bytes"));
	if (gp_md_int(total, "count")) {
		int e = alloc_list(doc, mem, list,
				   gp_md_bool(p, "exited") ? "leaks_total" : "live_at_end_total",
				   out);

		err = err ? err : e;
	}
	return err;
}
