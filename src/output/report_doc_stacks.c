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

const struct gp_stack **sorted_stacks(const struct gp_process *p, size_t *n)
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

static json_t *doc_frame(struct doc *d, const struct gp_stack_frame *f)
{
	static const char *const sources[] = { [GP_SYM_NONE] = NULL, [GP_SYM_ELF] = "elf",
					       [GP_SYM_PERF_MAP] = "perf_map" };
	json_t *o = obj_new(d);

	put(d, o, "address", j_hex(f->addr));
	put(d, o, "function", f->function ? j_str(f->function) : json_null());
	put(d, o, "symbol", f->symbol ? j_str(f->symbol) : json_null());
	put(d, o, "offset", f->symbol ? j_u64(f->sym_offset) : json_null());
	put(d, o, "file", f->file ? j_str(f->file) : json_null());
	put(d, o, "file_offset", f->file ? j_u64(f->file_offset) : json_null());
	put(d, o, "build_id", j_str(f->build_id));
	put(d, o, "source", f->source < sizeof(sources) / sizeof(sources[0]) && sources[f->source]
				    ? j_str(sources[f->source]) : json_null());
	return o;
}

static json_t *doc_op(struct doc *d, const struct gp_process *p, const struct gp_stack_op *r)
{
	char label[GP_NAME_BUF + 64];
	json_t *o = obj_new(d);

	gp_stack_op_label(d->m, p, r, label, sizeof(label));
	put(d, o, "api", j_str(gp_apis[r->api].symbol));
	put(d, o, "kind", j_str(gp_op_kind_name(r->op.kind)));
	put(d, o, "op", j_str(label));
	if (r->op.kind == GP_OP_KERNEL && r->op.kernel && r->op.kernel->name) {
		put(d, o, "kernel", j_str(r->op.kernel->name)); /* as in kernels[], to join them */
	} else {
		put(d, o, "kernel", json_null());
	}
	if (r->op.kind == GP_OP_COPY) {
		put(d, o, "direction", j_str(gp_dir_name(r->op.dir)));
		put(d, o, "host_memory", j_str(gp_hostmem_name(r->op.hostmem)));
	}
	if (r->op.kind == GP_OP_COPY || r->op.kind == GP_OP_MEMSET || r->op.kind == GP_OP_ALLOC ||
	    r->op.kind == GP_OP_COLL)
		put(d, o, "size_bytes", j_u64(r->op.bytes));
	put(d, o, "calls", j_u64(r->calls));
	put(d, o, "errors", j_u64(r->errors));
	put(d, o, "bytes", j_u64(r->bytes));
	put(d, o, "host_ns", j_u64(r->host_ns));
	return o;
}

static json_t *doc_stack(struct doc *d, const struct gp_process *p, const struct gp_stack *k)
{
	json_t *o = obj_new(d), *frames = arr_new(d), *ops = arr_new(d);
	const char *trunc = k == p->stacks.overflow ? "table_full" : gp_stack_trunc_name(k->trunc);

	for (unsigned i = 0; i < k->nframes; i++)
		push(d, frames, k->frame_ids ? j_u64(k->frame_ids[i]) : j_hex(k->ips[i]));
	put(d, o, "frames", frames);
	put(d, o, "truncated", trunc ? j_str(trunc) : json_null());
	put(d, o, "calls", j_u64(k->calls));
	put(d, o, "bytes", j_u64(k->bytes));
	put(d, o, "host_ns", j_u64(k->host_ns));
	for (__u32 i = 0; i < k->nops; i++)
		push(d, ops, doc_op(d, p, &k->ops[i]));
	put(d, o, "ops", ops);
	return o;
}

json_t *doc_stacks(struct doc *d, const struct gp_process *p)
{
	const struct gp_stacks *s = &p->stacks;
	json_t *o = obj_new(d), *frames = arr_new(d), *stacks = arr_new(d);
	const struct gp_stack **v;
	size_t n, truncated = 0;

	v = sorted_stacks(p, &n);
	if (n && !v)
		d->failed = true;
	for (size_t i = 0; i < s->n; i++)
		truncated += s->v[i]->trunc != GP_TRUNC_NONE;
	put(d, o, "captured", json_boolean(d->m->stacks_on));
	put(d, o, "distinct", j_u64(s->n));
	put(d, o, "calls", j_u64(s->calls));
	put(d, o, "truncated_stacks", j_u64(truncated));
	for (size_t i = 0; i < s->nframes; i++)
		push(d, frames, doc_frame(d, &s->frames[i]));
	put(d, o, "frames", frames);
	for (size_t i = 0; v && i < n; i++)
		push(d, stacks, doc_stack(d, p, v[i]));
	put(d, o, "stacks", stacks);
	free(v);
	return o;
}
