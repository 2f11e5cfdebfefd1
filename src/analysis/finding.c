/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * finding.c — a recommendation's shape (advice_rules.h): the threshold
 * every finding passes, its share of the wall time, the call paths behind it
 * from the process's stacks, and what host time it is about.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/advice_rules.h"
#include "text/labels.h"

#define SITES_MAX      3
#define SITE_FRAMES    12 /* frames of a path shown, nearest the call */

const char *gp_advice_ms(char *buf, size_t len, __u64 ns)
{
	snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
	return buf;
}

const char *const gp_about_names[GP_ABOUT_MAX] = {
	"copies", "synchronisations", "launches", "allocations", "nccl", "other-calls", "outside-calls",
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
	case GP_SHAPE_ALLOC: case GP_SHAPE_ALLOC_ASYNC: case GP_SHAPE_FREE: case GP_SHAPE_FREE_ASYNC:
	case GP_SHAPE_HOST_REGISTER: case GP_SHAPE_VMM_CREATE: case GP_SHAPE_VMM_RELEASE:
	case GP_SHAPE_VMM_MAP: case GP_SHAPE_VMM_UNMAP:
		return GP_ABOUT_ALLOCS;
	case GP_SHAPE_MEMCPY: case GP_SHAPE_MEMCPY_2D: case GP_SHAPE_MEMCPY_PEER: case GP_SHAPE_MEMSET:
	case GP_SHAPE_CU_MEMCPY:
		return GP_ABOUT_COPIES;
	default:
		return GP_ABOUT_OTHER_CALLS;
	}
}

static json_t *about_json(struct gp_doc *d, unsigned about)
{
	json_t *arr = gp_doc_arr_new(d);

	for (unsigned i = 0; i < GP_ABOUT_MAX; i++)
		if (about & (1u << i))
			gp_doc_push(d, arr, gp_j_str(gp_about_names[i]));
	return arr;
}

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
static const struct gp_stack_frame *python_caller(const struct gp_stacks *s, const struct gp_stack *k, unsigned first)
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
static json_t *site_path(const struct gp_process *p, const struct gp_stack *k, __u16 api)
{
	const struct gp_stacks *s = &p->stacks;
	char buf[4096], frame[512];
	size_t len = 0;
	unsigned n = k->frame_ids ? k->nsym : k->nframes, first = n > SITE_FRAMES ? SITE_FRAMES : n;
	const struct gp_stack_frame *py = python_caller(s, k, first);

	buf[0] = 0;
	if (!k->nframes)
		return gp_j_str("[stack table full]");
	if (py) {
		gp_stack_frame_label(py, frame, sizeof(frame));
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s → ", frame);
	}
	if (n > first)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "… → ");
	for (unsigned i = first; i-- > 0 && len < sizeof(buf);) {
		const struct gp_stack_frame *f = k->frame_ids && k->frame_ids[i] < s->nframes ?
							 &s->frames[k->frame_ids[i]] : NULL;

		if (f && i == 0 && f->function && f->kind == GP_FRAME_NATIVE) /* the call site: which call in its function */
			snprintf(frame, sizeof(frame), "%s+0x%llx", f->function, (unsigned long long)f->sym_offset);
		else if (f)
			gp_stack_frame_label(f, frame, sizeof(frame));
		else
			snprintf(frame, sizeof(frame), "0x%llx", (unsigned long long)k->ips[i]);
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s → ", frame);
	}
	if (len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len, "%s", gp_apis[api].symbol);
	return gp_j_str(buf);
}

static json_t *call_sites(struct gp_doc *d, const struct gp_process *p, gp_advice_site_fn want)
{
	json_t *arr = gp_doc_arr_new(d);
	const struct gp_stacks *s = &p->stacks;
	struct site *v;
	size_t n = 0;

	if (!arr || !want || !s->n)
		return arr;
	v = calloc(s->n, sizeof(*v));
	if (!v) {
		d->failed = true;
		return arr;
	}
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
	for (size_t i = 0; i < n && i < SITES_MAX; i++) {
		json_t *o = gp_doc_obj_new(d);
		__u16 api = 0;

		for (__u32 j = 0; j < v[i].k->nops; j++)
			if (want(&v[i].k->ops[j]))
				api = v[i].k->ops[j].api;
		gp_doc_put(d, o, "path", site_path(p, v[i].k, api));
		gp_doc_put(d, o, "calls", gp_j_u64(v[i].calls));
		gp_doc_put(d, o, "host_ns", gp_j_u64(v[i].host_ns));
		gp_doc_push(d, arr, o);
	}
	free(v);
	return arr;
}

void gp_advice_emit(struct gp_advice *a, struct gp_finding *f)
{
	struct gp_doc *d = a->d;
	const struct gp_process *p = a->p;
	bool enough = f->impact_ns >= GP_ADVICE_MIN_NS &&
		      (!a->wall_ns || (double)f->impact_ns >= GP_ADVICE_MIN_SHARE * (double)a->wall_ns);
	json_t *o;

	if (!f->unconditional && !enough) {
		json_decref(f->evidence);
		f->evidence = NULL;
		return;
	}
	o = gp_doc_obj_new(d);
	gp_doc_put(d, o, "id", gp_j_str(f->id));
	gp_doc_put(d, o, "pid", gp_j_u64(p->pid));
	gp_doc_put(d, o, "comm", gp_j_str(p->comm));
	gp_doc_put(d, o, "title", gp_j_str(f->title));
	gp_doc_put(d, o, "impact_ns", gp_j_u64(f->impact_ns));
	gp_doc_put(d, o, "impact_share", a->wall_ns ? json_real((double)f->impact_ns / (double)a->wall_ns) : json_null());
	gp_doc_put(d, o, "estimate", gp_j_str(f->estimate));
	gp_doc_put(d, o, "method", gp_j_str(f->method));
	gp_doc_put(d, o, "evidence", f->evidence ? f->evidence : gp_doc_obj_new(d));
	f->evidence = NULL;
	gp_doc_put(d, o, "call_sites", call_sites(d, p, f->site));
	gp_doc_put(d, o, "action", gp_j_str(f->action));
	gp_doc_put(d, o, "about", about_json(d, f->about));
	gp_doc_push(d, f->verdict && a->verdicts ? a->verdicts : a->out, o);
}
