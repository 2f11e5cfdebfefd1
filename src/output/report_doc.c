/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc.c — the top of the report document: schema, session,
 * processes (in pid order, each assembled from the section builders),
 * drops and instrumentation; plus the jansson helpers the sections share.
 * Deterministic: every list is sorted on a total order, objects keep
 * insertion order, nothing reads a clock.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "output/advice.h"
#include "output/report_doc.h"
#include "output/report_sections.h"

json_t *j_u64(__u64 v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

json_t *j_s64(__s64 v)
{
	return json_integer((json_int_t)v);
}

json_t *j_hex(__u64 v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
	return json_string(buf);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
					: (s[0] & 0xf8) == 0xf0 ? 4 : 0;

	if (!len || len > n || (len == 2 && s[0] < 0xc2) || (len == 4 && s[0] > 0xf4))
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (len == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0; /* overlong, or a UTF-16 surrogate */
	if (len == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return len;
}

/* Command lines and paths are bytes, JSON strings are UTF-8: invalid bytes become U+FFFD. */
json_t *j_str(const char *s)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)u), seq;
	bool valid = true;

	for (size_t i = 0; i < n && valid; i += seq)
		valid = (seq = utf8_seq(u + i, n - i)) != 0;
	if (valid)
		return json_string((const char *)u);

	char *clean = malloc(n * 3 + 1), *o = clean;

	if (!clean)
		return NULL;
	for (size_t i = 0; i < n;) {
		seq = utf8_seq(u + i, n - i);
		if (seq) {
			memcpy(o, u + i, seq);
			o += seq;
			i += seq;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';

	json_t *j = json_string(clean);

	free(clean);
	return j;
}

json_t *j_real2(double v)
{
	return json_real(round(v * 100.0) / 100.0);
}

void put(struct doc *d, json_t *obj, const char *key, json_t *val)
{
	if (!obj || !val || json_object_set_new(obj, key, val))
		d->failed = true;
}

void push(struct doc *d, json_t *arr, json_t *val)
{
	if (!arr || !val || json_array_append_new(arr, val))
		d->failed = true;
}

json_t *obj_new(struct doc *d)
{
	json_t *o = json_object();

	if (!o)
		d->failed = true;
	return o;
}

json_t *arr_new(struct doc *d)
{
	json_t *a = json_array();

	if (!a)
		d->failed = true;
	return a;
}

void **map_values(struct doc *d, const struct gp_u64map *map, size_t *n)
{
	void **v = map->count ? malloc(map->count * sizeof(*v)) : NULL;

	*n = 0;
	if (map->count && !v) {
		d->failed = true;
		return NULL;
	}
	*n = gp_u64map_values(map, v, map->count);
	return v;
}

static json_t *doc_session(struct doc *d)
{
	const struct gp_model *m = d->m;
	json_t *s = obj_new(d);
	__u64 end = m->session.end_mono_ns, start = m->session.start_mono_ns;
	char utc[32] = "";
	time_t secs = (time_t)(m->session.start_realtime_ns / 1000000000ULL);
	struct tm tm;

	if (m->session.start_realtime_ns && gmtime_r(&secs, &tm))
		strftime(utc, sizeof(utc), "%Y-%m-%dT%H:%M:%SZ", &tm);
	put(d, s, "tool_version", j_str(m->session.tool_version));
	put(d, s, "command_line", j_str(m->session.command_line));
	put(d, s, "mode", j_str(m->session.mode));
	put(d, s, "hostname", j_str(m->session.hostname));
	put(d, s, "kernel_release", j_str(m->session.kernel_release));
	put(d, s, "start_mono_ns", j_u64(start));
	put(d, s, "start_realtime_ns", j_u64(m->session.start_realtime_ns));
	put(d, s, "start_utc", j_str(utc));
	put(d, s, "end_mono_ns", end ? j_u64(end) : json_null());
	put(d, s, "duration_ns", end >= start && end ? j_u64(end - start) : json_null());
	put(d, s, "probe_hit_ns", m->session.probe_hit_ns ? j_u64(m->session.probe_hit_ns) : json_null());
	if (m->launch.set) {
		json_t *l = obj_new(d);

		put(d, l, "command", j_str(m->launch.command));
		put(d, l, "exited", json_boolean(m->launch.exited));
		put(d, l, "exit_status", m->launch.exited ? json_integer(m->launch.exit_status) : json_null());
		put(d, l, "signal", m->launch.exited && m->launch.term_signal ?
					    j_str(sigabbrev_np(m->launch.term_signal)) : json_null());
		put(d, s, "launch", l);
	} else {
		put(d, s, "launch", json_null());
	}
	return s;
}

static int cmp_lib(const void *a, const void *b)
{
	const struct gp_library *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : (int)x->family - (int)y->family;
}

static json_t *doc_libraries(struct doc *d, const struct gp_process *p)
{
	json_t *arr = arr_new(d);
	struct gp_library *libs = p->nlibs ? malloc(p->nlibs * sizeof(*libs)) : NULL;

	if (p->nlibs && !libs) {
		d->failed = true;
		return arr;
	}
	if (p->nlibs) {
		memcpy(libs, p->libs, p->nlibs * sizeof(*libs));
		qsort(libs, p->nlibs, sizeof(*libs), cmp_lib);
	}
	for (size_t i = 0; i < p->nlibs; i++) {
		json_t *l = obj_new(d);

		put(d, l, "path", j_str(libs[i].path));
		put(d, l, "family", j_str(gp_family_name(libs[i].family)));
		put(d, l, "static", json_boolean(libs[i].is_static));
		put(d, l, "build_id", j_str(libs[i].build_id));
		push(d, arr, l);
	}
	free(libs);
	return arr;
}

static json_t *doc_process(struct doc *d, const struct gp_process *p)
{
	json_t *o = obj_new(d);
	__u64 from = p->attach_ns > d->m->session.start_mono_ns ? p->attach_ns : d->m->session.start_mono_ns;
	__u64 to = p->exited ? p->exit_ns : d->m->session.end_mono_ns;
	__u64 errors = 0;

	for (unsigned i = 0; i < GP_API_MAX; i++)
		errors += p->api[i] ? p->api[i]->errors : 0;
	put(d, o, "pid", j_u64(p->pid));
	put(d, o, "comm", j_str(p->comm));
	put(d, o, "cmdline", j_str(p->cmdline));
	put(d, o, "exited", json_boolean(p->exited));
	put(d, o, "exit_mono_ns", p->exited ? j_u64(p->exit_ns) : json_null());
	put(d, o, "attach_mono_ns", p->attach_ns ? j_u64(p->attach_ns) : json_null());
	put(d, o, "traced_from_start", json_boolean(p->traced_from_start));
	put(d, o, "traced_because", p->traced_because ? j_str(p->traced_because) : json_null());
	put(d, o, "parent_pid", p->parent_pid ? j_u64(p->parent_pid) : json_null());
	put(d, o, "execs", j_u64(p->execs));
	put(d, o, "traced_ns", from && to > from ? j_u64(to - from) : json_null());
	put(d, o, "libraries", doc_libraries(d, p));
	put(d, o, "api_calls", j_u64(p->api_calls));
	put(d, o, "api_errors", j_u64(errors));
	put(d, o, "api_total_ns", j_u64(p->api_total_ns));
	for (size_t i = 0; i < gp_report_nsections; i++) /* the sections, in the registry's order */
		if (gp_report_sections[i].key)
			put(d, o, gp_report_sections[i].key, gp_report_sections[i].build(d, p, from, to));
	return o;
}

/* pid, then attach time, then creation order (a pid reused after an exit) */
static int cmp_proc(const void *a, const void *b, void *ctx)
{
	struct gp_process *const *procs = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct gp_process *x = procs[i], *y = procs[j];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->attach_ns != y->attach_ns)
		return x->attach_ns < y->attach_ns ? -1 : 1;
	return (i > j) - (i < j);
}

static json_t *doc_processes(struct doc *d)
{
	const struct gp_model *m = d->m;
	json_t *arr = arr_new(d);
	size_t *order = m->nprocs ? malloc(m->nprocs * sizeof(*order)) : NULL;

	if (m->nprocs && !order) {
		d->failed = true;
		return arr;
	}
	for (size_t i = 0; i < m->nprocs; i++)
		order[i] = i;
	if (m->nprocs)
		qsort_r(order, m->nprocs, sizeof(*order), cmp_proc, m->procs);
	for (size_t i = 0; i < m->nprocs; i++)
		push(d, arr, doc_process(d, m->procs[order[i]]));
	free(order);
	return arr;
}

static int cmp_drop(const void *a, const void *b)
{
	return strcmp(((const struct gp_drop *)a)->name, ((const struct gp_drop *)b)->name);
}

static void doc_drops(struct doc *d, json_t *root)
{
	const struct gp_model *m = d->m;
	json_t *o = obj_new(d);
	struct gp_drop *drops = m->ndrops ? malloc(m->ndrops * sizeof(*drops)) : NULL;
	__u64 total = 0;

	if (m->ndrops && !drops) {
		d->failed = true;
		return;
	}
	if (m->ndrops) {
		memcpy(drops, m->drops, m->ndrops * sizeof(*drops));
		qsort(drops, m->ndrops, sizeof(*drops), cmp_drop);
	}
	for (size_t i = 0; i < m->ndrops; i++) {
		put(d, o, drops[i].name, j_u64(drops[i].count));
		total += drops[i].count;
	}
	free(drops);
	put(d, root, "drops", o);
	put(d, root, "drops_total", j_u64(total));
}

struct probe_ref {
	unsigned idx;
	const struct gp_probe *pr;
};

static int cmp_probe(const void *a, const void *b)
{
	const struct probe_ref *x = a, *y = b;
	int c = strcmp(x->pr->target, y->pr->target);

	if (!c)
		c = (x->pr->pid > y->pr->pid) - (x->pr->pid < y->pr->pid);
	if (!c)
		c = (x->pr->offset > y->pr->offset) - (x->pr->offset < y->pr->offset);
	if (!c)
		c = strcmp(x->pr->symbol, y->pr->symbol);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static json_t *probe_row(struct doc *d, const struct probe_ref *ref, bool ret)
{
	const struct gp_probe *pr = ref->pr;
	json_t *o = obj_new(d);
	const char *api = pr->api > GP_API_INVALID && pr->api < GP_API_MAX ? gp_apis[pr->api].symbol : "";

	put(d, o, "target", j_str(pr->target));
	put(d, o, "pid", j_u64(pr->pid));
	put(d, o, "symbol", j_str(pr->symbol));
	put(d, o, "api", j_str(api));
	put(d, o, "offset", j_hex(pr->offset));
	put(d, o, "kind", j_str(ret ? "uretprobe" : "uprobe"));
	put(d, o, "hits", j_u64(ret ? pr->return_hits : pr->entry_hits));
	put(d, o, "probe", j_u64(ref->idx));
	return o;
}

/* Two rows per probe pair, ordered by target file, offset, symbol. */
static json_t *doc_instrumentation(struct doc *d)
{
	const struct gp_model *m = d->m;
	json_t *arr = arr_new(d);
	struct probe_ref *refs = malloc(GP_MAX_PROBES * sizeof(*refs));
	size_t n = 0;

	if (!refs) {
		d->failed = true;
		return arr;
	}
	for (unsigned i = 0; i < GP_MAX_PROBES; i++)
		if (m->probes[i])
			refs[n++] = (struct probe_ref){ i, m->probes[i] };
	qsort(refs, n, sizeof(*refs), cmp_probe);
	for (size_t i = 0; i < n; i++) {
		push(d, arr, probe_row(d, &refs[i], false));
		push(d, arr, probe_row(d, &refs[i], true));
	}
	free(refs);
	return arr;
}

static int cmp_skipped(const void *a, const void *b)
{
	const struct gp_skipped *x = a, *y = b;

	return x->pid != y->pid ? (x->pid < y->pid ? -1 : 1) : strcmp(x->reason, y->reason);
}

static json_t *doc_skipped(struct doc *d)
{
	const struct gp_model *m = d->m;
	json_t *arr = arr_new(d);
	struct gp_skipped *v = m->nskipped ? malloc(m->nskipped * sizeof(*v)) : NULL;

	if (m->nskipped && !v) {
		d->failed = true;
		return arr;
	}
	if (m->nskipped) {
		memcpy(v, m->skipped, m->nskipped * sizeof(*v));
		qsort(v, m->nskipped, sizeof(*v), cmp_skipped);
	}
	for (size_t i = 0; i < m->nskipped; i++) {
		json_t *o = obj_new(d);

		put(d, o, "pid", j_u64(v[i].pid));
		put(d, o, "comm", j_str(v[i].comm));
		put(d, o, "reason", j_str(v[i].reason));
		push(d, arr, o);
	}
	free(v);
	return arr;
}

static __u64 field_u64(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (__u64)json_integer_value(v) : 0;
}

/* The machine-wide view: sums over the processes' own entries, so that they always agree. */
static json_t *doc_summary(struct doc *d, const json_t *procs)
{
	__u64 calls = 0, errors = 0, api_ns = 0, launches = 0, peak = 0, cpu_ns = 0, offcpu_ns = 0;
	__u64 bytes[GP_DIR_MAX] = { 0 }, copies[GP_DIR_MAX] = { 0 }, nexited = 0;
	json_t *s = obj_new(d), *xfer = arr_new(d), *p;
	size_t i;

	json_array_foreach(procs, i, p) {
		json_t *k, *t, *cpu = json_object_get(p, "cpu");
		size_t j;

		calls += field_u64(p, "api_calls");
		errors += field_u64(p, "api_errors");
		api_ns += field_u64(p, "api_total_ns");
		nexited += json_is_true(json_object_get(p, "exited"));
		json_array_foreach(json_object_get(p, "kernels"), j, k)
			launches += field_u64(k, "launches");
		json_array_foreach(json_object_get(p, "transfers"), j, t) {
			const char *dir = json_string_value(json_object_get(t, "direction"));

			for (int n = 0; n < GP_DIR_MAX; n++)
				if (dir && !strcmp(dir, gp_dir_name(n))) {
					bytes[n] += field_u64(t, "bytes");
					copies[n] += field_u64(t, "calls");
				}
		}
		peak += field_u64(json_object_get(p, "memory"), "peak_bytes");
		cpu_ns += field_u64(cpu, "cpu_ns");
		offcpu_ns += field_u64(cpu, "offcpu_ns");
	}
	put(d, s, "processes", j_u64(json_array_size(procs)));
	put(d, s, "processes_exited", j_u64(nexited));
	put(d, s, "processes_skipped", j_u64(d->m->nskipped));
	put(d, s, "api_calls", j_u64(calls));
	put(d, s, "api_errors", j_u64(errors));
	put(d, s, "api_total_ns", j_u64(api_ns));
	put(d, s, "kernel_launches", j_u64(launches));
	for (int n = 0; n < GP_DIR_MAX; n++) {
		json_t *o;

		if (!copies[n])
			continue;
		o = obj_new(d);
		put(d, o, "direction", j_str(gp_dir_name(n)));
		put(d, o, "calls", j_u64(copies[n]));
		put(d, o, "bytes", j_u64(bytes[n]));
		push(d, xfer, o);
	}
	put(d, s, "transfers", xfer);
	put(d, s, "device_memory_peak_bytes_sum", j_u64(peak));
	put(d, s, "cpu_ns", j_u64(cpu_ns));
	put(d, s, "offcpu_ns", j_u64(offcpu_ns));
	return s;
}

/* Where the records came from: the one part of a live report its capture's report does not repeat. */
static json_t *doc_source(struct doc *d)
{
	const struct gp_report_source *src = &d->m->source;
	json_t *o = obj_new(d);

	put(d, o, "kind", j_str(src->kind ? src->kind : "live"));
	put(d, o, "capture_file", src->capture_file ? j_str(src->capture_file) : json_null());
	put(d, o, "ops", j_u64(src->ops));
	put(d, o, "lost_ops", j_u64(src->lost_ops));
	put(d, o, "chunks", j_u64(src->chunks));
	put(d, o, "corrupt_chunks", j_u64(src->corrupt_chunks));
	put(d, o, "complete", json_boolean(src->capture_file ? src->complete : true));
	put(d, o, "cut", src->cut ? j_str(src->cut) : json_null());
	put(d, o, "corruption", src->corruption ? j_str(src->corruption) : json_null());
	return o;
}

/* A ratio kept to 6 decimals; null when not known (< 0). */
static json_t *j_ratio(double v)
{
	return v < 0 ? json_null() : json_real(round(v * 1e6) / 1e6);
}

/* The overhead budget's duty cycle (the daemon); null when the session had none. */
static json_t *doc_sampling(struct doc *d)
{
	const struct gp_sampling *s = &d->m->sampling;
	json_t *o;

	if (!s->set)
		return json_null();
	o = obj_new(d);
	put(d, o, "budget", s->budget > 0 ? j_ratio(s->budget) : json_null());
	put(d, o, "duty_cycle", j_ratio(s->duty));
	put(d, o, "periods", j_u64(s->periods));
	put(d, o, "sampled_periods", j_u64(s->sampled_periods));
	put(d, o, "attached_fraction", j_ratio(s->period_ns ? (double)s->attached_ns / (double)s->period_ns : 1));
	put(d, o, "overhead_estimate", j_ratio(s->overhead));
	put(d, o, "overhead_unsampled_estimate", j_ratio(s->overhead_full));
	put(d, o, "over_budget_periods", j_u64(s->over_budget));
	put(d, o, "hit_cost_ns", j_u64((__u64)llround(s->hit_ns)));
	put(d, o, "estimated_calls", j_u64(d->m->estimated_calls));
	return o;
}

json_t *gp_report_doc(const struct gp_model *m)
{
	struct doc d = { .m = m };
	json_t *root = obj_new(&d);

	put(&d, root, "schema", j_str(GP_REPORT_SCHEMA));
	put(&d, root, "source", doc_source(&d));
	put(&d, root, "session", doc_session(&d));
	put(&d, root, "processes", doc_processes(&d));
	put(&d, root, "skipped", doc_skipped(&d));
	put(&d, root, "summary", doc_summary(&d, json_object_get(root, "processes")));
	put(&d, root, "recommendations", doc_recommendations(&d));
	doc_drops(&d, root);
	put(&d, root, "sampling", doc_sampling(&d));
	put(&d, root, "instrumentation", doc_instrumentation(&d));
	if (d.failed) {
		json_decref(root);
		errno = ENOMEM;
		return NULL;
	}
	return root;
}
