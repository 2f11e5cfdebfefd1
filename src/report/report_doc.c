/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc.c — the top of the report document: schema, session,
 * processes (in pid order, each assembled from the section builders),
 * containers, drops and instrumentation (the jansson helpers are json_out.c's).
 * Deterministic: every list is sorted on a total order, objects keep
 * insertion order, nothing reads a clock.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report/report_builders.h"
#include "report/report_sections.h"

/* session.unwind: docs/report-format.md. */
static json_t *gp_doc_unwind(struct gp_doc *d, const struct gp_unwind_summary *u)
{
	json_t *o = gp_doc_obj_new(d), *fail = gp_doc_obj_new(d);
	const struct {
		const char *name;
		__u64 n;
	} fails[] = { { "open", u->fail_open },
		      { "not_elf", u->fail_not_elf },
		      { "no_unwind_info", u->fail_no_cfi },
		      { "too_big", u->fail_too_big },
		      { "pool_full", u->fail_pool_full },
		      { "tables_full", u->fail_files_full },
		      { "no_segment", u->fail_no_segment },
		      { "other", u->fail_other } };

	gp_doc_put(d, o, "processes", gp_j_u64(u->procs));
	gp_doc_put(d, o, "processes_max", gp_j_u64(u->procs_max));
	gp_doc_put(d, o, "processes_refused", gp_j_u64(u->procs_full));
	gp_doc_put(d, o, "mappings", gp_j_u64(u->maps));
	gp_doc_put(d, o, "mappings_without_table", gp_j_u64(u->maps_none));
	gp_doc_put(d, o, "mappings_left_out", gp_j_u64(u->maps_over));
	gp_doc_put(d, o, "tables", gp_j_u64(u->files));
	gp_doc_put(d, o, "tables_built", gp_j_u64(u->files_built));
	gp_doc_put(d, o, "tables_reused", gp_j_u64(u->files_reused));
	gp_doc_put(d, o, "tables_evicted", gp_j_u64(u->files_evicted));
	gp_doc_put(d, o, "rows", gp_j_u64(u->rows));
	gp_doc_put(d, o, "rows_max", gp_j_u64(u->rows_max));
	gp_doc_put(d, o, "pool_rows", gp_j_u64(u->pool_rows));
	gp_doc_put(d, o, "pool_bytes", gp_j_u64(u->pool_rows * sizeof(struct gp_uw_row)));
	gp_doc_put(d, o, "build_ns", gp_j_u64(u->build_ns));
	gp_doc_put(d, o, "build_ns_max", gp_j_u64(u->build_ns_max));
	gp_doc_put(d, o, "build_max_file",
		   u->build_max_file ? gp_j_str(u->build_max_file) : json_null());
	for (size_t i = 0; i < sizeof(fails) / sizeof(fails[0]); i++)
		gp_doc_put(d, fail, fails[i].name, gp_j_u64(fails[i].n));
	gp_doc_put(d, o, "files_without_table", fail);
	gp_doc_put(d, o, "python_holds", gp_j_u64(u->python_holds));
	return o;
}

static int by_total_desc(const void *a, const void *b)
{
	const struct gp_hold_file_row *x = *(const struct gp_hold_file_row *const *)a,
				      *y = *(const struct gp_hold_file_row *const *)b;

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return x->ino < y->ino ? -1 : x->ino > y->ino; /* a stable order for equal times */
}

/* session.holds.files: the files that held processes, the costliest first. */
static json_t *gp_doc_hold_files(struct gp_doc *d)
{
	static const char *const reasons[] = { "", "exec", "map", "python" };
	const struct gp_model *m = d->m;
	size_t n = m->session.nhold_files;
	const struct gp_hold_file_row **v = calloc(n ? n : 1, sizeof(*v));
	json_t *list = gp_doc_arr_new(d);

	if (!v)
		return list; /* the report goes on without the rows */
	for (size_t i = 0; i < n; i++)
		v[i] = &m->session.hold_files[i];
	qsort(v, n, sizeof(*v), by_total_desc);
	for (size_t i = 0; i < n; i++) {
		json_t *e = gp_doc_obj_new(d);
		char devs[32];

		snprintf(devs, sizeof(devs), "%llu:%llu", (unsigned long long)(v[i]->dev >> 20),
			 (unsigned long long)(v[i]->dev & 0xfffff));
		gp_doc_put(d, e, "path", v[i]->path ? gp_j_str(v[i]->path) : json_null());
		gp_doc_put(d, e, "device",
			   v[i]->reason == GP_HOLD_PYTHON ? json_null() : gp_j_str(devs));
		gp_doc_put(d, e, "inode",
			   v[i]->reason == GP_HOLD_PYTHON ? json_null() : gp_j_u64(v[i]->ino));
		gp_doc_put(d, e, "reason",
			   gp_j_str(v[i]->reason < 4 ? reasons[v[i]->reason] : "?"));
		gp_doc_put(d, e, "count", gp_j_u64(v[i]->holds));
		gp_doc_put(d, e, "total_ns", gp_j_u64(v[i]->total_ns));
		gp_doc_put(d, e, "max_ns", gp_j_u64(v[i]->max_ns));
		gp_doc_push(d, list, e);
	}
	free(v);
	return list;
}

/* session.holds: docs/report-format.md. */
static json_t *gp_doc_holds(struct gp_doc *d)
{
	static const char *const reasons[] = { "", "exec", "map", "python" };
	const struct gp_model *m = d->m;
	const struct gp_holds_summary *h = &m->session.holds;
	json_t *o = gp_doc_obj_new(d), *list = gp_doc_arr_new(d);

	gp_doc_put(d, o, "count", gp_j_u64(h->holds));
	gp_doc_put(d, o, "total_ns", gp_j_u64(h->total_ns));
	gp_doc_put(d, o, "max_ns", gp_j_u64(h->max_ns));
	gp_doc_put(d, o, "exec", gp_j_u64(h->exec));
	gp_doc_put(d, o, "map", gp_j_u64(h->map));
	gp_doc_put(d, o, "python", gp_j_u64(h->python));
	for (size_t i = 0; i < m->session.ntimed_out; i++) {
		const struct gp_hold_timed_out *t = &m->session.timed_out[i];
		json_t *e = gp_doc_obj_new(d);

		gp_doc_put(d, e, "pid", gp_j_u64(t->pid));
		gp_doc_put(d, e, "reason", gp_j_str(t->reason < 4 ? reasons[t->reason] : "?"));
		gp_doc_put(d, e, "held_ns", gp_j_u64(t->held_ns));
		gp_doc_push(d, list, e);
	}
	gp_doc_put(d, o, "timed_out", list);
	gp_doc_put(d, o, "files", gp_doc_hold_files(d));
	gp_doc_put(d, o, "files_left_out", gp_j_u64(h->files_left_out));
	return o;
}

/* session.kernel: what the kernel offered, what stood in for what it lacked, what removing the probes took */
static json_t *gp_doc_kernel(struct gp_doc *d)
{
	const struct gp_model *m = d->m;
	json_t *k = gp_doc_obj_new(d), *used = gp_doc_arr_new(d), *rep = gp_doc_arr_new(d);
	const char *f = m->session.kernel.features ? m->session.kernel.features : "";

	while (*f) {
		size_t n = strcspn(f, ",");
		char name[64];

		snprintf(name, sizeof(name), "%.*s", (int)n, f);
		gp_doc_push(d, used, gp_j_str(name));
		f += n + (f[n] == ',');
	}
	for (size_t i = 0; i < m->session.kernel.nreplaced; i++) {
		const struct gp_kernel_replaced *r = &m->session.kernel.replaced[i];
		json_t *o = gp_doc_obj_new(d);

		gp_doc_put(d, o, "feature", gp_j_str(r->feature));
		gp_doc_put(d, o, "since", gp_j_str(r->since));
		gp_doc_put(d, o, "by", gp_j_str(r->by));
		gp_doc_put(d, o, "cost", gp_j_str(r->cost));
		gp_doc_put(d, o, "by_request", json_boolean(r->by_request));
		gp_doc_push(d, rep, o);
	}
	gp_doc_put(d, k, "release", gp_j_str(m->session.kernel_release));
	gp_doc_put(d, k, "features_used", used);
	gp_doc_put(d, k, "replaced", rep);
	gp_doc_put(d, k, "perf_event_paranoid",
		   m->session.kernel.perf_event_paranoid == GP_PARANOID_UNKNOWN
			   ? json_null()
			   : json_integer(m->session.kernel.perf_event_paranoid));
	if (m->session.kernel.removal_set) {
		json_t *r = gp_doc_obj_new(d);

		gp_doc_put(d, r, "probes", gp_j_u64(m->session.kernel.removal_probes));
		gp_doc_put(d, r, "ns", gp_j_u64(m->session.kernel.removal_ns));
		gp_doc_put(d, r, "remover_pid",
			   m->session.kernel.remover_pid > 0
				   ? json_integer(m->session.kernel.remover_pid)
				   : json_null());
		gp_doc_put(d, k, "probe_removal", r);
	} else {
		gp_doc_put(d, k, "probe_removal", json_null());
	}
	return k;
}

/* The timeline's files beside the report, in order: trace.json, trace.1.json ... */
static json_t *timeline_files(struct gp_doc *d)
{
	json_t *a = gp_doc_arr_new(d);
	char name[32];

	for (__u32 k = 0; a && k < d->m->session.timeline_files; k++) {
		if (k)
			snprintf(name, sizeof(name), "trace.%u.json", k);
		else
			snprintf(name, sizeof(name), "trace.json");
		gp_doc_push(d, a, gp_j_str(name));
	}
	return a;
}

static json_t *gp_doc_session(struct gp_doc *d)
{
	const struct gp_model *m = d->m;
	json_t *s = gp_doc_obj_new(d);
	__u64 end = m->session.end_mono_ns, start = m->session.start_mono_ns;
	char utc[32] = "";
	time_t secs = (time_t)(m->session.start_realtime_ns / 1000000000ULL);
	struct tm tm;

	if (m->session.start_realtime_ns && gmtime_r(&secs, &tm))
		strftime(utc, sizeof(utc), "%Y-%m-%dT%H:%M:%SZ", &tm);
	gp_doc_put(d, s, "tool_version", gp_j_str(m->session.tool_version));
	gp_doc_put(d, s, "command_line", gp_j_str(m->session.command_line));
	gp_doc_put(d, s, "mode", gp_j_str(m->session.mode));
	gp_doc_put(d, s, "hostname", gp_j_str(m->session.hostname));
	gp_doc_put(d, s, "kernel_release", gp_j_str(m->session.kernel_release));
	gp_doc_put(d, s, "start_mono_ns", gp_j_u64(start));
	gp_doc_put(d, s, "start_realtime_ns", gp_j_u64(m->session.start_realtime_ns));
	gp_doc_put(d, s, "start_utc", gp_j_str(utc));
	gp_doc_put(d, s, "end_mono_ns", end ? gp_j_u64(end) : json_null());
	gp_doc_put(d, s, "duration_ns", end >= start && end ? gp_j_u64(end - start) : json_null());
	gp_doc_put(d, s, "probe_hit_ns",
		   m->session.probe_hit_ns ? gp_j_u64(m->session.probe_hit_ns) : json_null());
	gp_doc_put(d, s, "probe_call_ns",
		   m->session.probe_call_ns ? gp_j_u64(m->session.probe_call_ns) : json_null());
	gp_doc_put(d, s, "unwind",
		   m->session.unwind_set ? gp_doc_unwind(d, &m->session.unwind) : json_null());
	gp_doc_put(d, s, "holds", m->session.holds_set ? gp_doc_holds(d) : json_null());
	gp_doc_put(d, s, "kernel", m->session.kernel.set ? gp_doc_kernel(d) : json_null());
	gp_doc_put(d, s, "timeline_files", timeline_files(d));
	if (m->launch.set) {
		json_t *l = gp_doc_obj_new(d);

		gp_doc_put(d, l, "command", gp_j_str(m->launch.command));
		gp_doc_put(d, l, "exited", json_boolean(m->launch.exited));
		gp_doc_put(d, l, "exit_status",
			   m->launch.exited ? json_integer(m->launch.exit_status) : json_null());
		gp_doc_put(d, l, "signal",
			   m->launch.exited && m->launch.term_signal
				   ? gp_j_str(sigabbrev_np(m->launch.term_signal))
				   : json_null());
		gp_doc_put(d, s, "launch", l);
	} else {
		gp_doc_put(d, s, "launch", json_null());
	}
	return s;
}

static int cmp_lib(const void *a, const void *b)
{
	const struct gp_library *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : (int)x->family - (int)y->family;
}

static json_t *gp_doc_libraries(struct gp_doc *d, const struct gp_process *p)
{
	json_t *arr = gp_doc_arr_new(d);
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
		json_t *l = gp_doc_obj_new(d);

		gp_doc_put(d, l, "path", gp_j_str(libs[i].path));
		gp_doc_put(d, l, "family", gp_j_str(gp_family_name(libs[i].family)));
		gp_doc_put(d, l, "static", json_boolean(libs[i].is_static));
		gp_doc_put(d, l, "build_id", gp_j_str(libs[i].build_id));
		gp_doc_push(d, arr, l);
	}
	free(libs);
	return arr;
}

/* process.python: null when gpuprobed did not look (stacks off) or found no interpreter. */
static json_t *gp_doc_python(struct gp_doc *d, const struct gp_process *p)
{
	char version[32];
	json_t *o;
	__u32 v = p->python.hexversion;

	if (!p->python.found || (!v && !p->python.note))
		return json_null();
	o = gp_doc_obj_new(d);
	snprintf(version, sizeof(version), "%u.%u.%u", v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff);
	gp_doc_put(d, o, "version", v ? gp_j_str(version) : json_null());
	gp_doc_put(d, o, "frames_walked", json_boolean(p->python.walked));
	gp_doc_put(d, o, "note", p->python.note ? gp_j_str(p->python.note) : json_null());
	return o;
}

static json_t *gp_doc_process(struct gp_doc *d, const struct gp_process *p)
{
	json_t *o = gp_doc_obj_new(d);
	__u64 from, to, errors = 0;

	gp_process_window(d->m, p, &from, &to);
	for (unsigned i = 0; i < GP_API_MAX; i++)
		errors += p->api[i] ? p->api[i]->errors : 0;
	gp_doc_put(d, o, "pid", gp_j_u64(p->pid));
	gp_doc_put(d, o, "ns_pid", gp_j_u64(p->place.ns_pid ? p->place.ns_pid : p->pid));
	gp_doc_put(d, o, "host", gp_j_str(gp_doc_host(d->m, p)));
	gp_doc_put(d, o, "comm", gp_j_str(p->comm));
	gp_doc_put(d, o, "container", gp_doc_container(d, p));
	gp_doc_put(d, o, "cmdline", gp_j_str(p->cmdline));
	gp_doc_put(d, o, "exited", json_boolean(p->exited));
	gp_doc_put(d, o, "exit_mono_ns", p->exited ? gp_j_u64(p->exit_ns) : json_null());
	gp_doc_put(d, o, "attach_mono_ns", p->attach_ns ? gp_j_u64(p->attach_ns) : json_null());
	gp_doc_put(d, o, "traced_from_start", json_boolean(p->traced_from_start));
	gp_doc_put(d, o, "traced_because",
		   p->traced_because ? gp_j_str(p->traced_because) : json_null());
	gp_doc_put(d, o, "parent_pid", p->parent_pid ? gp_j_u64(p->parent_pid) : json_null());
	gp_doc_put(d, o, "execs", gp_j_u64(p->execs));
	gp_doc_put(d, o, "python", gp_doc_python(d, p));
	gp_doc_put(d, o, "traced_ns", from && to > from ? gp_j_u64(to - from) : json_null());
	gp_doc_put(d, o, "libraries", gp_doc_libraries(d, p));
	gp_doc_put(d, o, "api_calls", gp_j_u64(p->api_calls));
	gp_doc_put(d, o, "api_errors", gp_j_u64(errors));
	gp_doc_put(d, o, "api_total_ns", gp_j_u64(p->api_total_ns));
	for (size_t i = 0; i < gp_report_nsections; i++) /* the sections, in the registry's order */
		if (gp_report_sections[i].key)
			gp_doc_put(d, o, gp_report_sections[i].key,
				   gp_report_sections[i].build(d, p, from, to));
	return o;
}

/* pid, then host (gpuprobed merge), then attach time, then creation order (a pid reused after an exit) */
static int cmp_proc(const void *a, const void *b, void *ctx)
{
	struct gp_process *const *procs = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct gp_process *x = procs[i], *y = procs[j];
	int h;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if ((h = strcmp(x->host ? x->host : "", y->host ? y->host : "")))
		return h;
	if (x->attach_ns != y->attach_ns)
		return x->attach_ns < y->attach_ns ? -1 : 1;
	return (i > j) - (i < j);
}

static json_t *gp_doc_processes(struct gp_doc *d)
{
	const struct gp_model *m = d->m;
	json_t *arr = gp_doc_arr_new(d);
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
		gp_doc_push(d, arr, gp_doc_process(d, m->procs[order[i]]));
	free(order);
	return arr;
}

static int cmp_drop(const void *a, const void *b)
{
	return strcmp(((const struct gp_drop *)a)->name, ((const struct gp_drop *)b)->name);
}

static void gp_doc_drops(struct gp_doc *d, json_t *root)
{
	const struct gp_model *m = d->m;
	json_t *o = gp_doc_obj_new(d);
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
		gp_doc_put(d, o, drops[i].name, gp_j_u64(drops[i].count));
		total += drops[i].count;
	}
	free(drops);
	gp_doc_put(d, root, "drops", o);
	gp_doc_put(d, root, "drops_total", gp_j_u64(total));
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

static json_t *probe_row(struct gp_doc *d, const struct probe_ref *ref, bool ret)
{
	const struct gp_probe *pr = ref->pr;
	json_t *o = gp_doc_obj_new(d);
	const char *api =
		pr->api > GP_API_INVALID && pr->api < GP_API_MAX ? gp_apis[pr->api].symbol : "";

	gp_doc_put(d, o, "target", gp_j_str(pr->target));
	gp_doc_put(d, o, "pid", gp_j_u64(pr->pid));
	gp_doc_put(d, o, "symbol", gp_j_str(pr->symbol));
	gp_doc_put(d, o, "api", gp_j_str(api));
	gp_doc_put(d, o, "offset", gp_j_hex(pr->offset));
	gp_doc_put(d, o, "kind", gp_j_str(ret ? "uretprobe" : "uprobe"));
	gp_doc_put(d, o, "hits", gp_j_u64(ret ? pr->return_hits : pr->entry_hits));
	gp_doc_put(d, o, "probe", gp_j_u64(ref->idx));
	return o;
}

/* Two rows per probe pair, ordered by target file, offset, symbol. */
static json_t *gp_doc_instrumentation(struct gp_doc *d)
{
	const struct gp_model *m = d->m;
	json_t *arr = gp_doc_arr_new(d);
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
		gp_doc_push(d, arr, probe_row(d, &refs[i], false));
		gp_doc_push(d, arr, probe_row(d, &refs[i], true));
	}
	free(refs);
	return arr;
}

static int cmp_skipped(const void *a, const void *b)
{
	const struct gp_skipped *x = a, *y = b;

	return x->pid != y->pid ? (x->pid < y->pid ? -1 : 1) : strcmp(x->reason, y->reason);
}

static json_t *gp_doc_skipped(struct gp_doc *d)
{
	const struct gp_model *m = d->m;
	json_t *arr = gp_doc_arr_new(d);
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
		json_t *o = gp_doc_obj_new(d);

		gp_doc_put(d, o, "pid", gp_j_u64(v[i].pid));
		gp_doc_put(d, o, "comm", gp_j_str(v[i].comm));
		gp_doc_put(d, o, "reason", gp_j_str(v[i].reason));
		gp_doc_push(d, arr, o);
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
static json_t *gp_doc_summary(struct gp_doc *d, const json_t *procs)
{
	__u64 calls = 0, errors = 0, api_ns = 0, launches = 0, peak = 0, cpu_ns = 0, offcpu_ns = 0;
	__u64 bytes[GP_DIR_MAX] = { 0 }, copies[GP_DIR_MAX] = { 0 }, nexited = 0;
	json_t *s = gp_doc_obj_new(d), *xfer = gp_doc_arr_new(d), *p;
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
	gp_doc_put(d, s, "processes", gp_j_u64(json_array_size(procs)));
	gp_doc_put(d, s, "processes_exited", gp_j_u64(nexited));
	gp_doc_put(d, s, "processes_skipped", gp_j_u64(d->m->nskipped));
	gp_doc_put(d, s, "api_calls", gp_j_u64(calls));
	gp_doc_put(d, s, "api_errors", gp_j_u64(errors));
	gp_doc_put(d, s, "api_total_ns", gp_j_u64(api_ns));
	gp_doc_put(d, s, "kernel_launches", gp_j_u64(launches));
	for (int n = 0; n < GP_DIR_MAX; n++) {
		json_t *o;

		if (!copies[n])
			continue;
		o = gp_doc_obj_new(d);
		gp_doc_put(d, o, "direction", gp_j_str(gp_dir_name(n)));
		gp_doc_put(d, o, "calls", gp_j_u64(copies[n]));
		gp_doc_put(d, o, "bytes", gp_j_u64(bytes[n]));
		gp_doc_push(d, xfer, o);
	}
	gp_doc_put(d, s, "transfers", xfer);
	gp_doc_put(d, s, "device_memory_peak_bytes_sum", gp_j_u64(peak));
	gp_doc_put(d, s, "cpu_ns", gp_j_u64(cpu_ns));
	gp_doc_put(d, s, "offcpu_ns", gp_j_u64(offcpu_ns));
	return s;
}

/* Where the records came from: the one part of a live report its capture's report does not repeat. */
static json_t *gp_doc_source(struct gp_doc *d)
{
	const struct gp_report_source *src = &d->m->source;
	json_t *o = gp_doc_obj_new(d);

	gp_doc_put(d, o, "kind", gp_j_str(src->kind ? src->kind : "live"));
	gp_doc_put(d, o, "capture_file",
		   src->capture_file ? gp_j_str(src->capture_file) : json_null());
	gp_doc_put(d, o, "ops", gp_j_u64(src->ops));
	gp_doc_put(d, o, "lost_ops", gp_j_u64(src->lost_ops));
	gp_doc_put(d, o, "chunks", gp_j_u64(src->chunks));
	gp_doc_put(d, o, "corrupt_chunks", gp_j_u64(src->corrupt_chunks));
	gp_doc_put(d, o, "complete", json_boolean(src->capture_file ? src->complete : true));
	gp_doc_put(d, o, "cut", src->cut ? gp_j_str(src->cut) : json_null());
	gp_doc_put(d, o, "corruption", src->corruption ? gp_j_str(src->corruption) : json_null());
	return o;
}

/* A ratio kept to 6 decimals; null when not known (< 0). */
static json_t *j_ratio(double v)
{
	return v < 0 ? json_null() : json_real(round(v * 1e6) / 1e6);
}

/* The overhead budget's duty cycle (the daemon); null when the session had none. */
static json_t *gp_doc_sampling(struct gp_doc *d)
{
	const struct gp_sampling *s = &d->m->sampling;
	json_t *o;

	if (!s->set)
		return json_null();
	o = gp_doc_obj_new(d);
	gp_doc_put(d, o, "budget", s->budget > 0 ? j_ratio(s->budget) : json_null());
	gp_doc_put(d, o, "duty_cycle", j_ratio(s->duty));
	gp_doc_put(d, o, "periods", gp_j_u64(s->periods));
	gp_doc_put(d, o, "sampled_periods", gp_j_u64(s->sampled_periods));
	gp_doc_put(d, o, "attached_fraction",
		   j_ratio(s->period_ns ? (double)s->attached_ns / (double)s->period_ns : 1));
	gp_doc_put(d, o, "overhead_estimate", j_ratio(s->overhead));
	gp_doc_put(d, o, "overhead_unsampled_estimate", j_ratio(s->overhead_full));
	gp_doc_put(d, o, "over_budget_periods", gp_j_u64(s->over_budget));
	gp_doc_put(d, o, "hit_cost_ns", gp_j_u64((__u64)llround(s->hit_ns)));
	gp_doc_put(d, o, "estimated_calls", gp_j_u64(d->m->estimated_calls));
	return o;
}

json_t *gp_report_doc(const struct gp_model *m)
{
	struct gp_doc d = { .m = m };
	json_t *root = gp_doc_obj_new(&d);

	gp_doc_put(&d, root, "schema", gp_j_str(GP_REPORT_SCHEMA));
	gp_doc_put(&d, root, "source", gp_doc_source(&d));
	gp_doc_put(&d, root, "session", gp_doc_session(&d));
	gp_doc_put(&d, root, "processes", gp_doc_processes(&d));
	gp_doc_put(&d, root, "containers",
		   gp_doc_containers(&d, json_object_get(root, "processes")));
	gp_doc_put(&d, root, "communicators", gp_doc_communicators(&d));
	gp_doc_put(&d, root, "merge", gp_doc_merge(&d));
	gp_doc_put(&d, root, "stalls", gp_doc_stalls(&d));
	gp_doc_put(&d, root, "skipped", gp_doc_skipped(&d));
	gp_doc_put(&d, root, "summary", gp_doc_summary(&d, json_object_get(root, "processes")));
	{
		json_t *verdicts = NULL, *recs = gp_doc_recommendations(&d, &verdicts);

		gp_doc_put(&d, root, "verdicts", verdicts ? verdicts : gp_doc_arr_new(&d));
		gp_doc_put(&d, root, "recommendations", recs);
	}
	gp_doc_drops(&d, root);
	gp_doc_put(&d, root, "sampling", gp_doc_sampling(&d));
	gp_doc_put(&d, root, "nvml", gp_doc_nvml(&d));
	gp_doc_put(&d, root, "gpus", gp_doc_gpus(&d));
	gp_doc_put(&d, root, "instrumentation", gp_doc_instrumentation(&d));
	if (d.failed) {
		json_decref(root);
		errno = ENOMEM;
		return NULL;
	}
	return root;
}
