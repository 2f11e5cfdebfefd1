/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * finding.c — a finding kept (finding.h): the threshold every finding
 * passes, its process and share of the wall time, the call paths behind it
 * from the process's stacks; the evidence a rule builds as named values;
 * what host time a call is about; and the findings freed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "analysis/advice_rules.h"
#include "model/u64map.h"
#include "text/labels.h"

#define SITE_FRAMES 12 /* frames of a path shown, nearest the call */

const char *gp_advice_ms(char *buf, size_t len, __u64 ns)
{
	snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
	return buf;
}

const char *const gp_about_names[GP_ABOUT_MAX] = {
	"copies", "synchronisations", "launches",      "allocations",
	"nccl",	  "other-calls",      "outside-calls",
};

unsigned gp_about_api(unsigned api)
{
	const struct gp_api_info *a = &gp_apis[api];

	if (a->family == GP_FAM_NCCL)
		return GP_ABOUT_NCCL;
	if (a->attr & GP_A_SYNC_CALL)
		return GP_ABOUT_SYNCS;
	if (a->attr & GP_A_LAUNCH)
		return GP_ABOUT_LAUNCHES;
	switch (a->shape) {
	case GP_SHAPE_ALLOC:
	case GP_SHAPE_ALLOC_ASYNC:
	case GP_SHAPE_FREE:
	case GP_SHAPE_FREE_ASYNC:
	case GP_SHAPE_HOST_REGISTER:
	case GP_SHAPE_VMM_CREATE:
	case GP_SHAPE_VMM_RELEASE:
	case GP_SHAPE_VMM_MAP:
	case GP_SHAPE_VMM_UNMAP:
		return GP_ABOUT_ALLOCS;
	case GP_SHAPE_MEMCPY:
	case GP_SHAPE_MEMCPY_2D:
	case GP_SHAPE_MEMCPY_PEER:
	case GP_SHAPE_MEMSET:
	case GP_SHAPE_CU_MEMCPY:
		return GP_ABOUT_COPIES;
	default:
		return GP_ABOUT_OTHER_CALLS;
	}
}

/* ---- evidence ------------------------------------------------------------------- */

static struct gp_ev_field *ev_add(struct gp_fields *f, const char *key, enum gp_ev_kind kind)
{
	if (!f)
		return NULL;
	if (f->n == GP_EVIDENCE_MAX) {
		f->failed = true;
		return NULL;
	}
	f->v[f->n] = (struct gp_ev_field){ .key = key, .kind = kind };
	return &f->v[f->n++];
}

void gp_ev_u64(struct gp_fields *f, const char *key, __u64 v)
{
	struct gp_ev_field *e = ev_add(f, key, GP_EV_U64);

	if (e)
		e->u = v;
}

void gp_ev_s64(struct gp_fields *f, const char *key, __s64 v)
{
	struct gp_ev_field *e = ev_add(f, key, GP_EV_S64);

	if (e)
		e->s = v;
}

void gp_ev_real2(struct gp_fields *f, const char *key, double v)
{
	struct gp_ev_field *e = ev_add(f, key, GP_EV_REAL2);

	if (e)
		e->r = v;
}

void gp_ev_str(struct gp_fields *f, const char *key, const char *s)
{
	struct gp_ev_field *e = ev_add(f, key, GP_EV_STR);

	if (e)
		e->str = s;
}

void gp_ev_bool(struct gp_fields *f, const char *key, bool v)
{
	struct gp_ev_field *e = ev_add(f, key, GP_EV_BOOL);

	if (e)
		e->b = v;
}

void gp_ev_null(struct gp_fields *f, const char *key)
{
	ev_add(f, key, GP_EV_NULL);
}

struct gp_ev_rows *gp_ev_rows_new(void)
{
	return calloc(1, sizeof(struct gp_ev_rows));
}

struct gp_fields *gp_ev_row(struct gp_ev_rows *r)
{
	if (!r)
		return NULL;
	if (GP_ARRAY_GROW(r->v, r->cap, r->n + 1, 8)) {
		r->failed = true;
		return NULL;
	}
	r->v[r->n] = (struct gp_fields){ 0 };
	return &r->v[r->n++];
}

void gp_ev_rows_put(struct gp_fields *f, const char *key, struct gp_ev_rows *r)
{
	struct gp_ev_field *e = r ? ev_add(f, key, GP_EV_ROWS) : NULL;

	if (e) {
		e->rows = r;
		return;
	}
	if (f)
		f->failed = true;
	gp_ev_rows_free(r);
}

void gp_ev_rows_free(struct gp_ev_rows *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		gp_fields_release(&r->v[i]);
	free(r->v);
	free(r);
}

void gp_fields_release(struct gp_fields *f)
{
	for (unsigned i = 0; i < f->n; i++)
		if (f->v[i].kind == GP_EV_ROWS)
			gp_ev_rows_free(f->v[i].rows);
	f->n = 0;
}

/* Whether every value of f (and of its rows) was kept. */
static bool fields_complete(const struct gp_fields *f)
{
	if (f->failed)
		return false;
	for (unsigned i = 0; i < f->n; i++) {
		const struct gp_ev_rows *r = f->v[i].kind == GP_EV_ROWS ? f->v[i].rows : NULL;

		if (r && r->failed)
			return false;
		for (size_t j = 0; r && j < r->n; j++)
			if (!fields_complete(&r->v[j]))
				return false;
	}
	return true;
}

void **gp_advice_map_values(struct gp_advice *a, const struct gp_u64map *map, size_t *n)
{
	void **v = map->count ? malloc(map->count * sizeof(*v)) : NULL;

	*n = 0;
	if (map->count && !v) {
		a->out->failed = true;
		return NULL;
	}
	*n = gp_u64map_values(map, v, map->count);
	return v;
}

/* ---- call sites -------------------------------------------------------------------- */

struct site {
	const struct gp_stack *k;
	__u64 calls, host_ns;
};

static int cmp_site(const void *a, const void *b)
{
	const struct site *x = a, *y = b;

	if (x->host_ns != y->host_ns)
		return x->host_ns > y->host_ns ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return (x->k->seq > y->k->seq) - (x->k->seq < y->k->seq);
}

/* The innermost Python frame of k beyond its first SITE_FRAMES frames, or NULL. */
static const struct gp_stack_frame *python_caller(const struct gp_stacks *s,
						  const struct gp_stack *k, unsigned first)
{
	for (unsigned i = first; k->frame_ids && i < k->nsym; i++)
		if (s->frames[k->frame_ids[i]].kind == GP_FRAME_PYTHON)
			return &s->frames[k->frame_ids[i]];
	return NULL;
}

/*
 * "main → step → cudaMemcpy": outermost first, the traced API last; where
 * the stack has Python frames beyond those shown, the innermost of them
 * first ("train_step (train.py:13) → … → at::native::copy_ → cudaMemcpyAsync").
 */
/*
 * "main → step → cudaMemcpy": outermost first, the traced API last; where
 * the stack has Python frames beyond those shown, the innermost of them
 * first ("train_step (train.py:13) → … → at::native::copy_ → cudaMemcpyAsync").
 */
static char *site_path(const struct gp_process *p, const struct gp_stack *k, __u16 api)
{
	const struct gp_stacks *s = &p->stacks;
	char buf[4096], frame[512];
	size_t len = 0;
	unsigned n = k->frame_ids ? k->nsym : k->nframes, first = n > SITE_FRAMES ? SITE_FRAMES : n;
	const struct gp_stack_frame *py = python_caller(s, k, first);

	buf[0] = 0;
	if (!k->nframes)
		return strdup("[stack table full]");
	if (py) {
		gp_stack_frame_label(py, frame, sizeof(frame));
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s → ", frame);
	}
	if (n > first)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "… → ");
	for (unsigned i = first; i-- > 0 && len < sizeof(buf);) {
		const struct gp_stack_frame *f = k->frame_ids && k->frame_ids[i] < s->nframes
							 ? &s->frames[k->frame_ids[i]]
							 : NULL;

		if (f && i == 0 && f->function &&
		    f->kind == GP_FRAME_NATIVE) /* the call site: which call in its function */
			snprintf(frame, sizeof(frame), "%s+0x%llx", f->function,
				 (unsigned long long)f->sym_offset);
		else if (f)
			gp_stack_frame_label(f, frame, sizeof(frame));
		else
			snprintf(frame, sizeof(frame), "0x%llx", (unsigned long long)k->ips[i]);
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s → ", frame);
	}
	if (len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len, "%s", gp_apis[api].symbol);
	return strdup(buf);
}

/* The call paths of f's calls (f->site), the costliest first. 0 or -ENOMEM. */
static int call_sites(const struct gp_process *p, struct gp_finding *f)
{
	const struct gp_stacks *s = &p->stacks;
	gp_advice_site_fn want = f->site;
	struct site *v;
	size_t n = 0;

	if (!want || !s->n)
		return 0;
	v = calloc(s->n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		const struct gp_stack *k = s->v[i];
		struct site st = { .k = k };

		for (__u32 j = 0; j < k->nops; j++) {
			if (!want(&k->ops[j]))
				continue;
			st.calls += k->ops[j].calls;
			st.host_ns += k->ops[j].host_ns;
		}
		if (st.calls)
			v[n++] = st;
	}
	qsort(v, n, sizeof(*v), cmp_site);
	for (size_t i = 0; i < n && i < GP_SITES_MAX; i++) {
		struct gp_call_site *cs = &f->sites[f->nsites];
		__u16 api = 0;

		for (__u32 j = 0; j < v[i].k->nops; j++)
			if (want(&v[i].k->ops[j]))
				api = v[i].k->ops[j].api;
		cs->path = site_path(p, v[i].k, api);
		if (!cs->path) {
			free(v);
			return -ENOMEM;
		}
		cs->calls = v[i].calls;
		cs->host_ns = v[i].host_ns;
		f->nsites++;
	}
	free(v);
	return 0;
}

/* ---- findings kept ------------------------------------------------------------------ */

static void finding_free(struct gp_finding *f)
{
	if (!f)
		return;
	gp_fields_release(&f->evidence);
	for (unsigned i = 0; i < f->nsites; i++)
		free(f->sites[i].path);
	free(f->ranks);
	free(f);
}

void gp_advice_emit(struct gp_advice *a, struct gp_finding *f)
{
	const struct gp_process *p = a->p;
	struct gp_findings *out = a->out;
	bool enough =
		f->impact_ns >= GP_ADVICE_MIN_NS &&
		(!a->wall_ns || (double)f->impact_ns >= GP_ADVICE_MIN_SHARE * (double)a->wall_ns);
	bool verdict = f->verdict && a->verdicts;
	struct gp_finding *k;

	if (!f->unconditional && !enough) {
		gp_fields_release(&f->evidence);
		return;
	}
	k = fields_complete(&f->evidence) ? malloc(sizeof(*k)) : NULL;
	if (!k) {
		gp_fields_release(&f->evidence);
		out->failed = true;
		return;
	}
	*k = *f; /* the evidence is k's now */
	k->pid = p->pid;
	k->comm = p->comm;
	k->wall_ns = a->wall_ns;
	k->nsites = 0;
	k->ranks = NULL;
	k->nranks = 0;
	if (call_sites(p, k) ||
	    (verdict ? GP_ARRAY_GROW(out->verdicts, out->vcap, out->nverdicts + 1, 4)
		     : GP_ARRAY_GROW(out->v, out->cap, out->n + 1, 16))) {
		finding_free(k);
		out->failed = true;
		return;
	}
	if (verdict)
		out->verdicts[out->nverdicts++] = k;
	else
		out->v[out->n++] = k;
}

void gp_findings_release(struct gp_findings *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		finding_free(fs->v[i]);
	for (size_t i = 0; i < fs->nverdicts; i++)
		finding_free(fs->verdicts[i]);
	free(fs->v);
	free(fs->verdicts);
	*fs = (struct gp_findings){ 0 };
}
