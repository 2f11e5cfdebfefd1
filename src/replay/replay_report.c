/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_report.c — what a replay measured: DIR/replay.json (schema
 * gpuprobed.replay/1, documented in docs/replay.md) and the summary printed
 * on stdout. Per process and per stream: the operations in order, original
 * and replayed time (a stream's time is its first operation's entry to its
 * last operation's return); per thread, also how late its calls were issued
 * and the time spent in them; the what-if: every round, the median round's
 * replays, the median saving and the range of the rounds' savings.
 */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/view.h"
#include "replay/replay_report.h"

/*
 * Original [first entry, last return] and replayed [first start, last end]
 * of stream s's operations, and the host's time in their calls in res.
 */
static void stream_times(const struct gp_rprocess *p, const struct gp_replay_result *res, int s,
			 __u64 *orig, __u64 *replayed, __u64 *calls, size_t *nops)
{
	__u64 o0 = UINT64_MAX, o1 = 0, r0 = UINT64_MAX, r1 = 0;

	*nops = 0;
	*calls = 0;
	for (size_t i = 0; i < p->nops; i++) {
		const struct gp_rop *op = &p->ops[i];

		if (op->stream != s)
			continue;
		(*nops)++;
		if (op->ts_ns < o0)
			o0 = op->ts_ns;
		if (op->ts_ns + op->dur_ns > o1)
			o1 = op->ts_ns + op->dur_ns;
		if (res && !res->dropped[i] && res->end_ns[i]) {
			if (res->start_ns[i] < r0)
				r0 = res->start_ns[i];
			if (res->end_ns[i] > r1)
				r1 = res->end_ns[i];
			*calls += res->end_ns[i] - res->start_ns[i];
		}
	}
	*orig = o1 > o0 ? o1 - o0 : 0;
	*replayed = r1 > r0 ? r1 - r0 : 0;
}

/*
 * Thread t's original time (its first planned call's entry to its last
 * one's return) and, in res, its replayed time (first call issued to last
 * return), when its first call was issued (after the process's first), the
 * time its calls took and how late they were issued after its first one:
 * replayed = the think times (divided by the speed) + late + calls.
 */
/* The thread's replayed calls' time by their original API: {"cudaMemcpy": ns, ...} (res replayed). */
static json_t *calls_by_api(const struct gp_rprocess *p, const struct gp_replay_result *res,
			    size_t t)
{
	const struct gp_rthread *th = &p->threads[t];
	__u64 ns[GP_API_MAX] = { 0 };
	json_t *o = json_object();

	for (size_t k = 0; k < th->nops; k++) {
		size_t i = th->ops[k];

		if (!res->dropped[i] && res->end_ns[i] && p->ops[i].api < GP_API_MAX)
			ns[p->ops[i].api] += res->end_ns[i] - res->start_ns[i];
	}
	for (size_t a = 0; o && a < GP_API_MAX; a++)
		if (ns[a])
			json_object_set_new(o, gp_apis[a].symbol, json_integer((json_int_t)ns[a]));
	return o;
}

static void thread_times(const struct gp_rprocess *p, const struct gp_replay_result *res, size_t t,
			 __u64 *orig, __u64 *start, __u64 *replayed, __u64 *late, __u64 *calls)
{
	const struct gp_rthread *th = &p->threads[t];
	__u64 o0 = UINT64_MAX, o1 = 0, r0 = UINT64_MAX, r1 = 0;
	bool first = true;

	*late = *calls = 0;
	for (size_t k = 0; k < th->nops; k++) {
		size_t i = th->ops[k];
		const struct gp_rop *op = &p->ops[i];

		if (op->ts_ns < o0)
			o0 = op->ts_ns;
		if (op->ts_ns + op->dur_ns > o1)
			o1 = op->ts_ns + op->dur_ns;
		if (!res || res->dropped[i] || !res->end_ns[i])
			continue;
		if (res->start_ns[i] < r0)
			r0 = res->start_ns[i];
		if (res->end_ns[i] > r1)
			r1 = res->end_ns[i];
		if (!first) /* the first call's own lateness moves the whole thread, not its span */
			*late += res->late_ns[i];
		first = false;
		*calls += res->end_ns[i] - res->start_ns[i];
	}
	*orig = o1 > o0 ? o1 - o0 : 0;
	*start = r1 > r0 ? r0 : 0;
	*replayed = r1 > r0 ? r1 - r0 : 0;
}

static json_t *result_json(const struct gp_replay_result *res)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:s?, s:s?}", "wall_ns", (json_int_t)res->wall_ns,
			 "calls", (json_int_t)res->calls, "errors", (json_int_t)res->errors,
			 "changed_ops", (json_int_t)res->changed_ops, "first_error",
			 res->first_error[0] ? res->first_error : NULL, "kernels", res->kernels);
}

/* The process's streams with work: each one's times and its operations in order. */
static json_t *streams_json(const struct gp_rprocess *p, const struct gp_replay_result *base)
{
	json_t *streams = json_array();
	char label[32], line[512];

	for (size_t s = 0; s < p->nobjs; s++) {
		__u64 orig, rep, calls;
		size_t n;
		json_t *seq;

		if (p->objs[s].kind != GP_ROBJ_STREAM)
			continue;
		stream_times(p, base, (int)s, &orig, &rep, &calls, &n);
		if (!n)
			continue;
		seq = json_array();
		for (size_t i = 0; i < p->nops; i++) {
			if (p->ops[i].stream != (int)s)
				continue;
			gp_rop_describe(p, &p->ops[i], line, sizeof(line));
			json_array_append_new(seq, json_string(line));
		}
		gp_robj_label(&p->objs[s], label, sizeof(label));
		json_t *js = json_pack(
			"{s:s, s:s, s:I, s:I, s:o}", "stream", label, "kind",
			p->objs[s].skind == GP_RSTREAM_LEGACY	    ? "legacy_default"
			: p->objs[s].skind == GP_RSTREAM_PER_THREAD ? "per_thread_default"
								    : "handle",
			"ops", (json_int_t)n, "original_ns", (json_int_t)orig, "operations", seq);

		if (base) {
			json_object_set_new(js, "replayed_ns", json_integer((json_int_t)rep));
			json_object_set_new(js, "calls_ns", json_integer((json_int_t)calls));
		}
		json_array_append_new(streams, js);
	}
	return streams;
}

/* The kernels launched, with their modelled durations and where those came from. */
static json_t *kernels_json(const struct gp_rprocess *p)
{
	static const char *const src[] = { "none", "table", "inferred" };
	json_t *kernels = json_array();

	for (size_t k = 0; k < p->nkernels; k++) {
		const struct gp_rkernel *rk = &p->kernels[k];

		if (!rk->launches)
			continue;
		json_array_append_new(
			kernels,
			json_pack("{s:s?, s:s?, s:I, s:I, s:s, s:I}", "name", rk->name, "mangled",
				  rk->mangled, "launches", (json_int_t)rk->launches, "duration_ns",
				  (json_int_t)rk->dur_ns, "duration_source", src[rk->source],
				  "observations", (json_int_t)rk->observations));
	}
	return kernels;
}

static json_t *threads_json(const struct gp_rprocess *p, const struct gp_replay_result *base)
{
	json_t *threads = json_array();

	for (size_t t = 0; t < p->nthreads; t++) {
		__u64 orig, start, rep, late, calls;
		json_t *jt;

		thread_times(p, base, t, &orig, &start, &rep, &late, &calls);
		jt = json_pack("{s:I, s:s?, s:I, s:I}", "tid", (json_int_t)p->threads[t].tid,
			       "name", p->threads[t].name, "ops", (json_int_t)p->threads[t].nops,
			       "original_ns", (json_int_t)orig);
		if (base) {
			json_object_set_new(jt, "start_ns", json_integer((json_int_t)start));
			json_object_set_new(jt, "replayed_ns", json_integer((json_int_t)rep));
			json_object_set_new(jt, "late_ns", json_integer((json_int_t)late));
			json_object_set_new(jt, "calls_ns", json_integer((json_int_t)calls));
			json_object_set_new(jt, "calls_ns_by_api", calls_by_api(p, base, t));
		}
		json_array_append_new(threads, jt);
	}
	return threads;
}

/* The what-if replay beside the baseline: its times per stream and thread, the saving, its rounds. */
static json_t *what_if_json(const struct gp_replay_outcome *o)
{
	const struct gp_rprocess *p = o->p;
	const struct gp_whatif_stats *st = &o->stats;
	json_t *w = result_json(&o->changed), *ws = json_object(), *wc = json_object(),
	       *wt = json_array(), *rounds = json_array();
	char label[32], names[64];

	for (size_t s = 0; s < p->nobjs; s++) {
		__u64 orig, rep, calls;
		size_t n;

		if (p->objs[s].kind != GP_ROBJ_STREAM)
			continue;
		stream_times(p, &o->changed, (int)s, &orig, &rep, &calls, &n);
		gp_robj_label(&p->objs[s], label, sizeof(label));
		if (!n)
			continue;
		json_object_set_new(ws, label, json_integer((json_int_t)rep));
		json_object_set_new(wc, label, json_integer((json_int_t)calls));
	}
	json_object_set_new(w, "streams_replayed_ns", ws);
	json_object_set_new(w, "streams_calls_ns", wc);
	for (size_t t = 0; t < p->nthreads; t++) {
		__u64 orig, start, rep, late, calls;

		thread_times(p, &o->changed, t, &orig, &start, &rep, &late, &calls);
		json_array_append_new(
			wt, json_pack("{s:I, s:I, s:I, s:I, s:I, s:o}", "tid",
				      (json_int_t)p->threads[t].tid, "start_ns", (json_int_t)start,
				      "replayed_ns", (json_int_t)rep, "late_ns", (json_int_t)late,
				      "calls_ns", (json_int_t)calls, "calls_ns_by_api",
				      calls_by_api(p, &o->changed, t)));
	}
	json_object_set_new(w, "threads", wt);
	gp_whatif_name(o->what, names, sizeof(names));
	json_object_set_new(w, "changes", json_string(names));
	json_object_set_new(w, "baseline_ns", json_integer((json_int_t)o->base.wall_ns));
	json_object_set_new(w, "changed_ns", json_integer((json_int_t)o->changed.wall_ns));
	json_object_set_new(w, "saving_ns", json_integer((json_int_t)st->saving_ns));
	json_object_set_new(w, "saving_min_ns", json_integer((json_int_t)st->saving_min_ns));
	json_object_set_new(w, "saving_max_ns", json_integer((json_int_t)st->saving_max_ns));
	json_object_set_new(w, "saving_spread_ns",
			    json_integer((json_int_t)(st->saving_max_ns - st->saving_min_ns)));
	json_object_set_new(w, "median_round", json_integer((json_int_t)st->median));
	for (unsigned r = 0; r < st->rounds; r++) {
		const struct gp_whatif_round *ro = &st->round[r];
		json_int_t b = (json_int_t)ro->baseline_ns, c = (json_int_t)ro->changed_ns;

		json_array_append_new(rounds,
				      json_pack("{s:I, s:I, s:I, s:s}", "baseline_ns", b,
						"changed_ns", c, "saving_ns", b - c, "first",
						ro->changed_first ? "changed" : "baseline"));
	}
	json_object_set_new(w, "rounds", rounds);
	json_object_set_new(w, "errors_all_rounds", json_integer((json_int_t)st->errors));
	return w;
}

static json_t *process_json(const struct gp_replay_outcome *o)
{
	const struct gp_rprocess *p = o->p;
	const struct gp_replay_result *base = o->ran ? &o->base : NULL;
	json_t *jp, *streams = streams_json(p, base), *kernels = kernels_json(p),
		    *threads = threads_json(p, base), *nr = json_object();

	for (size_t a = 0; a < GP_API_MAX; a++)
		if (p->not_replayed[a])
			json_object_set_new(nr, gp_apis[a].symbol,
					    json_integer((json_int_t)p->not_replayed[a]));
	jp = json_pack("{s:I, s:s?, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o}", "pid",
		       (json_int_t)p->pid, "comm", p->comm, "ops", (json_int_t)p->nops,
		       "original_ns", (json_int_t)(p->end_ns - p->start_ns), "redundant_syncs",
		       (json_int_t)p->redundant_syncs, "nested_calls",
		       (json_int_t)p->nested_skipped, "threads", threads, "streams", streams,
		       "kernels", kernels, "not_replayed", nr);
	json_object_set_new(jp, "failed_calls_skipped",
			    json_integer((json_int_t)p->failed_skipped));
	if (base) {
		json_object_set_new(jp, "replayed_ns", json_integer((json_int_t)o->base.wall_ns));
		json_object_set_new(jp, "replay", result_json(&o->base));
	}
	if (o->ran && o->what)
		json_object_set_new(jp, "what_if", what_if_json(o));
	return jp;
}

int gp_replay_report_write(const char *dir, const char *capture, double speed, unsigned what,
			   const struct gp_replay_outcome *o, size_t n, char *errmsg, size_t errlen)
{
	json_t *doc, *procs = json_array();
	char path[4096], tmp[4200], names[64];
	int rc = 0;

	gp_whatif_name(what, names, sizeof(names));
	for (size_t i = 0; i < n; i++)
		json_array_append_new(procs, process_json(&o[i]));
	doc = json_pack("{s:s, s:s, s:f, s:s?, s:o}", "schema", "gpuprobed.replay/1", "capture",
			capture, "speed", speed, "what_if", what ? names : NULL, "processes",
			procs);
	snprintf(path, sizeof(path), "%s/replay.json", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!doc || json_dump_file(doc, tmp, JSON_INDENT(2) | JSON_SORT_KEYS)) {
		snprintf(errmsg, errlen, "cannot write %s", tmp);
		rc = -EIO;
	} else if (rename(tmp, path)) {
		snprintf(errmsg, errlen, "cannot write %s: %s", path, strerror(errno));
		rc = -errno;
	}
	json_decref(doc);
	return rc;
}

static void ms(char *buf, size_t len, __u64 ns)
{
	snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
}

static void print_whatif(FILE *f, const struct gp_replay_outcome *o, const char *names)
{
	const struct gp_whatif_stats *st = &o->stats;
	__s64 s = st->saving_ns;
	char a[32], b[32], c[32], lo[32], hi[32], spread[32];

	ms(a, sizeof(a), o->base.wall_ns);
	ms(b, sizeof(b), o->changed.wall_ns);
	ms(c, sizeof(c), (__u64)(s < 0 ? -s : s));
	snprintf(lo, sizeof(lo), "%.3f", (double)st->saving_min_ns / 1e6);
	snprintf(hi, sizeof(hi), "%.3f", (double)st->saving_max_ns / 1e6);
	ms(spread, sizeof(spread), (__u64)(st->saving_max_ns - st->saving_min_ns));
	fprintf(f,
		"  what-if %s: %llu operations changed; median of %u rounds: baseline %s, changed %s: "
		"%s %s (%.1f %%)\n",
		names, (unsigned long long)o->changed.changed_ops, st->rounds, a, b,
		s >= 0 ? "saves" : "costs", c,
		o->base.wall_ns ? 100.0 * (double)s / (double)o->base.wall_ns : 0.0);
	fprintf(f, "    the rounds' savings: %s to %s ms (spread %s)\n", lo, hi, spread);
}

void gp_replay_print(FILE *f, const struct gp_replay_outcome *o, size_t n)
{
	char a[32], b[32], label[32], names[64];

	for (size_t i = 0; i < n; i++) {
		const struct gp_rprocess *p = o[i].p;

		ms(a, sizeof(a), p->end_ns - p->start_ns);
		fprintf(f, "pid %u (%s): %zu operations on %zu threads\n", p->pid,
			p->comm ? p->comm : "?", p->nops, p->nthreads);
		if (!o[i].ran) {
			fprintf(f, "  original  %s (not replayed)\n", a);
			continue;
		}
		ms(b, sizeof(b), o[i].base.wall_ns);
		fprintf(f, "  wall time: original %s, replayed %s\n", a, b);
		for (size_t s = 0; s < p->nobjs; s++) {
			__u64 orig, rep, calls;
			size_t nops;

			if (p->objs[s].kind != GP_ROBJ_STREAM)
				continue;
			stream_times(p, &o[i].base, (int)s, &orig, &rep, &calls, &nops);
			if (!nops)
				continue;
			gp_robj_label(&p->objs[s], label, sizeof(label));
			ms(a, sizeof(a), orig);
			ms(b, sizeof(b), rep);
			fprintf(f, "  stream %-8s %4zu ops: original %s, replayed %s\n", label,
				nops, a, b);
		}
		if (o[i].base.errors)
			fprintf(f, "  %llu replayed calls failed, first: %s\n",
				(unsigned long long)o[i].base.errors, o[i].base.first_error);
		if (p->not_replayed_total)
			fprintf(f, "  %llu calls not replayed (see replay.json: not_replayed)\n",
				(unsigned long long)p->not_replayed_total);
		if (!o[i].what)
			continue;
		gp_whatif_name(o[i].what, names, sizeof(names));
		print_whatif(f, &o[i], names);
	}
}
