/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc_stacks.c — the "stacks" section of a process: its symbolized
 * frames (one per distinct address) and every distinct stack with its
 * (API, operation) rows. docs/report-format.md "stacks" defines each field.
 */
#include <stdlib.h>

#include "output/labels.h"
#include "output/report_doc.h"

static int cmp_stack(const void *a, const void *b)
{
	const struct gp_stack *x = *(const struct gp_stack *const *)a, *y = *(const struct gp_stack *const *)b;

	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const struct gp_stack **gp_doc_sorted_stacks(const struct gp_process *p, size_t *n)
{
	const struct gp_stacks *s = &p->stacks;
	const struct gp_stack **v;

	*n = 0;
	if (!s->n && !s->overflow)
		return NULL;
	v = malloc((s->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < s->n; i++)
		v[(*n)++] = s->v[i];
	if (s->overflow)
		v[(*n)++] = s->overflow;
	qsort(v, *n, sizeof(*v), cmp_stack);
	return v;
}

static json_t *gp_doc_frame(struct gp_doc *d, const struct gp_stack_frame *f)
{
	static const char *const sources[] = { [GP_SYM_NONE] = NULL, [GP_SYM_ELF] = "elf",
					       [GP_SYM_PERF_MAP] = "perf_map" };
	json_t *o = gp_doc_obj_new(d);

	gp_doc_put(d, o, "address", gp_j_hex(f->addr));
	gp_doc_put(d, o, "function", f->function ? gp_j_str(f->function) : json_null());
	gp_doc_put(d, o, "symbol", f->symbol ? gp_j_str(f->symbol) : json_null());
	gp_doc_put(d, o, "offset", f->symbol ? gp_j_u64(f->sym_offset) : json_null());
	gp_doc_put(d, o, "file", f->file ? gp_j_str(f->file) : json_null());
	gp_doc_put(d, o, "file_offset", f->file ? gp_j_u64(f->file_offset) : json_null());
	gp_doc_put(d, o, "build_id", gp_j_str(f->build_id));
	gp_doc_put(d, o, "source", f->source < sizeof(sources) / sizeof(sources[0]) && sources[f->source]
				    ? gp_j_str(sources[f->source]) : json_null());
	return o;
}

static json_t *gp_doc_op(struct gp_doc *d, const struct gp_process *p, const struct gp_stack_op *r)
{
	char label[GP_NAME_BUF + 64];
	json_t *o = gp_doc_obj_new(d);

	gp_stack_op_label(d->m, p, r, label, sizeof(label));
	gp_doc_put(d, o, "api", gp_j_str(gp_apis[r->api].symbol));
	gp_doc_put(d, o, "kind", gp_j_str(gp_op_kind_name(r->op.kind)));
	gp_doc_put(d, o, "op", gp_j_str(label));
	if (r->op.kind == GP_OP_KERNEL && r->op.kernel && r->op.kernel->name) {
		gp_doc_put(d, o, "kernel", gp_j_str(r->op.kernel->name)); /* as in kernels[], to join them */
	} else {
		gp_doc_put(d, o, "kernel", json_null());
	}
	if (r->op.kind == GP_OP_COPY) {
		gp_doc_put(d, o, "direction", gp_j_str(gp_dir_name(r->op.dir)));
		gp_doc_put(d, o, "host_memory", gp_j_str(gp_hostmem_name(r->op.hostmem)));
	}
	if (r->op.kind == GP_OP_COPY || r->op.kind == GP_OP_MEMSET || r->op.kind == GP_OP_ALLOC ||
	    r->op.kind == GP_OP_COLL)
		gp_doc_put(d, o, "size_bytes", gp_j_u64(r->op.bytes));
	gp_doc_put(d, o, "calls", gp_j_u64(r->calls));
	gp_doc_put(d, o, "errors", gp_j_u64(r->errors));
	gp_doc_put(d, o, "bytes", gp_j_u64(r->bytes));
	gp_doc_put(d, o, "host_ns", gp_j_u64(r->host_ns));
	return o;
}

static json_t *gp_doc_stack(struct gp_doc *d, const struct gp_process *p, const struct gp_stack *k)
{
	json_t *o = gp_doc_obj_new(d), *frames = gp_doc_arr_new(d), *ops = gp_doc_arr_new(d);
	const char *trunc = k == p->stacks.overflow ? "table_full" : gp_stack_trunc_name(k->trunc);

	for (unsigned i = 0; i < k->nframes; i++)
		gp_doc_push(d, frames, k->frame_ids ? gp_j_u64(k->frame_ids[i]) : gp_j_hex(k->ips[i]));
	gp_doc_put(d, o, "frames", frames);
	gp_doc_put(d, o, "truncated", trunc ? gp_j_str(trunc) : json_null());
	gp_doc_put(d, o, "calls", gp_j_u64(k->calls));
	gp_doc_put(d, o, "bytes", gp_j_u64(k->bytes));
	gp_doc_put(d, o, "host_ns", gp_j_u64(k->host_ns));
	for (__u32 i = 0; i < k->nops; i++)
		gp_doc_push(d, ops, gp_doc_op(d, p, &k->ops[i]));
	gp_doc_put(d, o, "ops", ops);
	return o;
}

json_t *gp_doc_stacks(struct gp_doc *d, const struct gp_process *p)
{
	const struct gp_stacks *s = &p->stacks;
	json_t *o = gp_doc_obj_new(d), *frames = gp_doc_arr_new(d), *stacks = gp_doc_arr_new(d);
	const struct gp_stack **v;
	size_t n, truncated = 0;

	v = gp_doc_sorted_stacks(p, &n);
	if (n && !v)
		d->failed = true;
	for (size_t i = 0; i < s->n; i++)
		truncated += s->v[i]->trunc != GP_TRUNC_NONE;
	gp_doc_put(d, o, "captured", json_boolean(d->m->stacks_on));
	gp_doc_put(d, o, "distinct", gp_j_u64(s->n));
	gp_doc_put(d, o, "calls", gp_j_u64(s->calls));
	gp_doc_put(d, o, "truncated_stacks", gp_j_u64(truncated));
	for (size_t i = 0; i < s->nframes; i++)
		gp_doc_push(d, frames, gp_doc_frame(d, &s->frames[i]));
	gp_doc_put(d, o, "frames", frames);
	for (size_t i = 0; v && i < n; i++)
		gp_doc_push(d, stacks, gp_doc_stack(d, p, v[i]));
	gp_doc_put(d, o, "stacks", stacks);
	free(v);
	return o;
}
