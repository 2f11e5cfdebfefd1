/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md_nccl.c — report.md sections for the layers below the runtime:
 * calls made inside other traced calls (listed, not counted), the combined
 * GPU work view (runtime + driver + NCCL, each piece of work once) and the
 * NCCL communicators with their operations.
 */
#include <stdio.h>
#include <string.h>

#include "text/md_table.h"
#include "report/report_md.h"

/* "cudaMemcpy ×12, cudaMemset ×2" from [{api, calls}] */
static void links_text(char *buf, size_t len, const json_t *links)
{
	const json_t *l;
	size_t i, off = 0;
	char n[32];

	buf[0] = '\0';
	json_array_foreach(links, i, l) {
		int w = snprintf(buf + off, len - off, "%s%s ×%s", i ? ", " : "",
				 gp_md_str(l, "api"), gp_md_n(n, l, "calls"));

		if (w < 0 || (size_t)w >= len - off)
			break;
		off += (size_t)w;
	}
}

int gp_md_nested(const json_t *p, FILE *out)
{
	static const char *const head[] = { "Calls", "Total Time (ns)", "Layer", "Name",
					    "Implementation of" };
	const json_t *rows = json_object_get(p, "nested_api"), *r;
	size_t i;
	char n[32], links[512];

	json_int_t left_out = json_integer_value(json_object_get(p, "nested_left_out"));

	if (!json_array_size(rows) && !left_out)
		return 0;
	fputs("### Calls made inside other traced calls (counted once, as the outer call)\n\n",
	      out);
	if (left_out)
		fprintf(out,
			"%lld call%s made inside a traced call that had not returned when tracing ended (or that "
			"never returned) %s left out with it.\n\n",
			(long long)left_out, left_out == 1 ? "" : "s",
			left_out == 1 ? "is" : "are");
	if (!json_array_size(rows))
		return 0;

	struct gp_md_table *t = gp_md_table_new(5, head, "rrlll");

	json_array_foreach(rows, i, r) {
		if (!t)
			break;
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "calls"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "total_ns"));
		gp_md_table_cell(t, "%s", gp_md_str(r, "family"));
		gp_md_table_cell(t, "%s", gp_md_str(r, "name"));
		links_text(links, sizeof(links), json_object_get(r, "implements"));
		gp_md_table_cell(t, "%s", links);
	}
	int err = gp_md_flush_table(t, out);

	fputs("\nThe runtime implements its calls with the driver on the same thread: such a driver call is "
	      "its runtime call's implementation, already counted (and timed) as that call. Driver calls a "
	      "library makes by itself are in the API summary.\n\n",
	      out);
	return err;
}

int gp_md_gpu_work(const json_t *p, FILE *out)
{
	static const char *const head[] = { "Layer",	     "Launches",    "Graph launches",
					    "Copies",	     "Copy bytes",  "Memsets",
					    "Memset bytes",  "Collectives", "Collective bytes",
					    "Host time (ns)" };
	static const char *const layers[] = { "cudart", "cuda", "nccl", "total" };
	static const char *const titles[] = { "runtime", "driver", "NCCL", "**total**" };
	const json_t *w = json_object_get(p, "gpu_work");
	const json_t *total = json_object_get(w, "total");
	char n[32];

	if (!gp_md_int(total, "launches") && !gp_md_int(total, "graph_launches") &&
	    !gp_md_int(total, "copies") && !gp_md_int(total, "memsets") &&
	    !gp_md_int(total, "collectives"))
		return 0;
	fputs("### GPU work queued, by the layer that queued it\n\n", out);

	struct gp_md_table *t = gp_md_table_new(10, head, "lrrrrrrrrr");

	for (size_t i = 0; t && i < sizeof(layers) / sizeof(layers[0]); i++) {
		const json_t *l = json_object_get(w, layers[i]);

		gp_md_table_cell(t, "%s", titles[i]);
		gp_md_table_cell(t, "%s", gp_md_n(n, l, "launches"));
		gp_md_table_cell(t, "%s", gp_md_n(n, l, "graph_launches"));
		gp_md_table_cell(t, "%s", gp_md_n(n, l, "copies"));
		gp_md_table_cell(t, "%s", gp_md_n(n, l, "copy_bytes"));
		gp_md_table_cell(t, "%s", gp_md_n(n, l, "memsets"));
		gp_md_table_cell(t, "%s", gp_md_n(n, l, "memset_bytes"));
		gp_md_table_cell(t, "%s", gp_md_n(n, l, "collectives"));
		gp_md_table_cell(t, "%s", gp_md_n(n, l, "collective_bytes"));
		gp_md_table_cell(t, "%s", gp_md_n(n, l, "host_ns"));
	}
	int err = gp_md_flush_table(t, out);

	fputs("\nEach piece of work once: a runtime call and the driver call that implements it count as one "
	      "(the runtime's); successful calls only.\n\n",
	      out);
	return err;
}

static void gbps_text(char *buf, size_t len, const json_t *v)
{
	if (json_is_number(v))
		snprintf(buf, len, "%.2f", json_number_value(v));
	else
		snprintf(buf, len, "—");
}

static const char *s32_text(char *buf, const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		return "?";
	snprintf(buf, 32, "%lld", (long long)json_integer_value(v));
	return buf;
}

int gp_md_nccl(const json_t *p, FILE *out)
{
	static const char *const head[] = { "Op",	"Dtype",	 "Calls",
					    "Bytes",	"Host avg (ns)", "Blocked (ns)",
					    "Measured", "algbw (GB/s)",	 "busbw (GB/s)" };
	const json_t *nc = json_object_get(p, "nccl");
	const json_t *comms = json_object_get(nc, "communicators"), *c;
	size_t i;
	char n[32], a[32], b[32], r1[32], r2[32], r3[32];
	int err = 0;

	if (!json_array_size(comms))
		return 0;
	fputs("### NCCL\n\n", out);
	json_array_foreach(comms, i, c) {
		const json_t *ops = json_object_get(c, "ops"), *o;
		size_t k;

		fprintf(out,
			"Communicator %s%s%s%s: rank %s of %s, device %s%s%s%s, %s collectives\n\n",
			gp_md_str(c, "handle"),
			json_is_string(json_object_get(c, "comm_id")) ? " (comm_id `" : "",
			json_is_string(json_object_get(c, "comm_id")) ? gp_md_str(c, "comm_id")
								      : "",
			json_is_string(json_object_get(c, "comm_id")) ? "`)" : "",
			s32_text(r1, c, "rank"), s32_text(r2, c, "nranks"),
			s32_text(r3, c, "device"),
			json_is_string(json_object_get(c, "created_by"))
				? ", created by "
				: ", created before attach",
			json_is_string(json_object_get(c, "created_by"))
				? gp_md_str(c, "created_by")
				: "",
			gp_md_bool(c, "destroyed") ? ", destroyed" : "",
			gp_md_n(n, c, "collectives"));
		if (!json_array_size(ops))
			continue;

		struct gp_md_table *t = gp_md_table_new(9, head, "llrrrrrrr");

		json_array_foreach(ops, k, o) {
			if (!t)
				break;
			gp_md_table_cell(t, "%s", gp_md_str(o, "op"));
			gp_md_table_cell(t, "%s", gp_md_str(o, "dtype"));
			gp_md_table_cell(t, "%s", gp_md_n(n, o, "calls"));
			gp_md_table_cell(t, "%s", gp_md_bytes(n, (__u64)gp_md_int(o, "bytes")));
			gp_md_table_cell(t, "%s", gp_md_n(n, o, "host_avg_ns"));
			gp_md_table_cell(t, "%s", gp_md_n(n, o, "blocked_ns"));
			gp_md_table_cell(t, "%s", gp_md_n(n, o, "measured_calls"));
			gbps_text(a, sizeof(a), json_object_get(o, "algbw_gbps"));
			gbps_text(b, sizeof(b), json_object_get(o, "busbw_gbps"));
			gp_md_table_cell(t, "%s", a);
			gp_md_table_cell(t, "%s", b);
		}
		int e = gp_md_flush_table(t, out);

		err = err ? err : e;
		fputc('\n', out);
	}
	fprintf(out, "Synchronisation time by what it waited for: collectives %s ns, kernels %s ns",
		gp_md_n(n, nc, "sync_blocked_ns_collectives"),
		gp_md_n(a, nc, "sync_blocked_ns_kernels"));
	if (json_is_number(json_object_get(nc, "comm_compute_ratio")))
		fprintf(out, " — communication/computation ratio %.2f",
			json_number_value(json_object_get(nc, "comm_compute_ratio")));
	fputs(".\n\nAll host-observed (no GPU timestamps): host time is inside the NCCL call (enqueueing); "
	      "blocked time is the synchronisation calls whose last awaited work was that collective; "
	      "algbw/busbw use collectives that were alone on their stream between two synchronisations "
	      "(queued → synchronisation return), so they are lower bounds. docs/report-format.md says what "
	      "each can and cannot mean.\n\n",
	      out);
	return err;
}

/* The top-level communicators[] with more than one traced rank: who entered the collectives last. */
int gp_md_communicators(const json_t *doc, FILE *out)
{
	static const char *const head[] = { "Rank",	   "Host",	   "PID",
					    "Collectives", "Entered last", "Mean lateness (ns)" };
	const json_t *c, *r;
	size_t i, k;
	int err = 0;
	bool any = false;
	char n[32], a[32];

	json_array_foreach(json_object_get(doc, "communicators"), i, c) {
		const json_t *last = json_object_get(c, "last_arrival");

		if (gp_md_int(c, "traced_ranks") < 2)
			continue;
		if (!any)
			fputs("## NCCL communicators across ranks\n\n", out);
		any = true;
		fprintf(out, "Communicator `%s`: %s of %s ranks traced, ", gp_md_str(c, "comm_id"),
			gp_md_n(n, c, "traced_ranks"), s32_text(a, c, "nranks"));
		if (json_is_array(last))
			fprintf(out, "%s collectives entered by all of them compared.\n\n",
				gp_md_n(n, c, "compared"));
		else
			fputs("so who entered last cannot be told.\n\n", out);

		struct gp_md_table *t = gp_md_table_new(6, head, "rlrrrr");

		json_array_foreach(json_object_get(c, "ranks"), k, r) {
			const json_t *l = json_array_get(last, k);

			if (!t)
				break;
			gp_md_table_cell(t, "%s", gp_md_n(n, r, "rank"));
			gp_md_table_cell(t, "%s", gp_md_str(r, "host"));
			gp_md_table_cell(t, "%s", gp_md_n(n, r, "pid"));
			gp_md_table_cell(t, "%s", gp_md_n(n, r, "collectives"));
			gp_md_table_cell(t, "%s", l ? gp_md_n(n, l, "count") : "—");
			gp_md_table_cell(t, "%s",
					 l && json_is_integer(json_object_get(l, "mean_late_ns"))
						 ? gp_md_n(a, l, "mean_late_ns")
						 : "—");
		}
		int e = gp_md_flush_table(t, out);

		err = err ? err : e;
		fputc('\n', out);
	}
	if (any)
		fputs("A rank entered a collective last when its call came after every other rank's; its lateness is "
		      "how long after the rank before it (host clocks; across hosts, as aligned by `gpuprobed merge`).\n\n",
		      out);
	return err;
}

/* The top-level stalls[]: who made the others wait, and what it was doing. */
int gp_md_stalls(const json_t *doc, FILE *out)
{
	static const char *const head[] = { "Late rank", "PID", "Last entered",
					    "What it was doing" };
	const json_t *s, *w, *b;
	size_t i, k;
	int err = 0;
	char n[32];

	if (!json_array_size(json_object_get(doc, "stalls")))
		return 0;
	fputs("## NCCL stalls\n\n", out);
	json_array_foreach(json_object_get(doc, "stalls"), i, s) {
		double waited = (double)json_integer_value(json_object_get(s, "waited_ns")) / 1e9;

		fprintf(out, "Communicator `%s`, collective #%s (%s", gp_md_str(s, "comm_id"),
			gp_md_n(n, s, "seq"),
			json_is_string(json_object_get(s, "op")) ? gp_md_str(s, "op")
								 : "operation not known");
		if (json_is_integer(json_object_get(s, "bytes")))
			fprintf(out, ", %s bytes", gp_md_n(n, s, "bytes"));
		fputs("): rank", out);
		if (json_array_size(json_object_get(s, "waiting")) > 1)
			fputc('s', out);
		json_array_foreach(json_object_get(s, "waiting"), k, w)
			fprintf(out, "%s%lld", k ? "," : " ", (long long)json_integer_value(w));
		fprintf(out, " had waited %.1f s when it was said, for:\n\n", waited);

		struct gp_md_table *t = gp_md_table_new(4, head, "rrrl");

		json_array_foreach(json_object_get(s, "behind"), k, b) {
			if (!t)
				break;
			gp_md_table_cell(t, "%s", gp_md_n(n, b, "rank"));
			gp_md_table_cell(t, "%s", gp_md_n(n, b, "pid"));
			gp_md_table_cell(t, "#%s", gp_md_n(n, b, "last_seq"));
			gp_md_table_cell(t, "%s", gp_md_str(b, "state"));
		}
		int e = gp_md_flush_table(t, out);

		err = err ? err : e;
		fputc('\n', out);
	}
	fputs("A stall is said when ranks of a communicator have waited on a collective (inside the NCCL call, or "
	      "blocked in a synchronisation awaiting it) longer than `--stall-timeout` while a rank traced here had "
	      "not entered it; what that rank was doing is from that moment.\n\n",
	      out);
	return err;
}
