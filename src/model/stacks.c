/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stacks.c — the call stacks of GPU work, per process: every distinct user
 * stack (deduplicated by hash, compared frame by frame) with one row per
 * (API, operation) made from it — a kernel, a copy of a direction, memory
 * kind and size, an allocation, a collective — holding calls, errors, bytes
 * and host time. Addresses stay raw while records arrive; the resolver is
 * told of each new stack (so the live process's maps can be snapshotted)
 * and names the frames once, at the end (gp_model_symbolize_stacks), once
 * per distinct address.
 *
 * Bounded: at most m->max_stacks distinct stacks, all processes together;
 * a call beyond goes to the process's one "[stack table full]" stack and is
 * counted in drops.stacks_over_limit, so totals stay exact.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "model/model_internal.h"
#include "model/model_ops.h"

const char *gp_op_kind_name(enum gp_op_kind k)
{
	static const char *const names[] = {
		[GP_OP_OTHER] = "other", [GP_OP_KERNEL] = "kernel", [GP_OP_GRAPH] = "graph",
		[GP_OP_COPY] = "copy",   [GP_OP_MEMSET] = "memset", [GP_OP_ALLOC] = "alloc",
		[GP_OP_FREE] = "free",   [GP_OP_COLL] = "collective", [GP_OP_SYNC] = "sync",
	};

	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "other";
}

const char *gp_stack_trunc_name(enum gp_stack_trunc t)
{
	switch (t) {
	case GP_TRUNC_DEPTH:
		return "depth";
	case GP_TRUNC_UNWIND:
		return "unwind";
	case GP_TRUNC_UNREAD:
		return "unread";
	case GP_TRUNC_NO_MAPPING:
		return "no_mapping";
	case GP_TRUNC_NO_UNWIND_INFO:
		return "no_unwind_info";
	case GP_TRUNC_UNWIND_TABLE:
		return "unwind_table";
	case GP_TRUNC_RBP_UNKNOWN:
		return "rbp_unknown";
	default:
		return NULL;
	}
}

void gp_model_set_stacks(struct gp_model *m, bool captured, size_t max_stacks)
{
	gp_model_tap_stacks(m, &(struct gp_op_stacks){ .captured = captured, .max_stacks = max_stacks });
	m->stacks_on = captured;
	m->max_stacks = max_stacks;
}

bool gp_model_stacks_captured(const struct gp_model *m)
{
	return m->stacks_on;
}

static __u64 stack_hash(const __u64 *ips, unsigned n, unsigned npy)
{
	__u64 h = 0x243f6a8885a308d3ULL ^ n ^ (__u64)npy << 32;

	n += 2 * npy;

	for (unsigned i = 0; i < n; i++) {
		h ^= ips[i];
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

static struct gp_stack *stack_new(const struct gp_stack_view *v, __u64 hash, __u32 seq)
{
	size_t words = v ? v->nframes + 2 * (size_t)v->npy : 0;
	struct gp_stack *k = calloc(1, sizeof(*k) + words * sizeof(__u64));

	if (!k)
		return NULL;
	k->hash = hash;
	k->seq = seq;
	if (!v)
		return k;
	k->nframes = (__u16)v->nframes;
	k->npy = (__u16)v->npy;
	memcpy(k->ips, v->ips, v->nframes * sizeof(__u64));
	if (v->npy)
		memcpy(k->ips + v->nframes, v->py, 2 * v->npy * sizeof(__u64));
	return k;
}

static bool same_stack(const struct gp_stack *k, const struct gp_stack_view *v)
{
	return k->nframes == v->nframes && k->npy == v->npy &&
	       !memcmp(k->ips, v->ips, v->nframes * sizeof(__u64)) &&
	       (!v->npy || !memcmp(k->ips + v->nframes, v->py, 2 * v->npy * sizeof(__u64)));
}

/* Why a walk that stopped short stopped, from the record. */
static void set_trunc(struct gp_stack *k, const struct gp_stack_view *v)
{
	static const __u8 by_stop[GP_STOP_MAX] = {
		[GP_STOP_END] = GP_TRUNC_NONE,          [GP_STOP_DEPTH] = GP_TRUNC_DEPTH,
		[GP_STOP_NO_MAPPING] = GP_TRUNC_NO_MAPPING, [GP_STOP_NO_TABLE] = GP_TRUNC_NO_UNWIND_INFO,
		[GP_STOP_TABLE] = GP_TRUNC_UNWIND_TABLE, [GP_STOP_RBP_UNKNOWN] = GP_TRUNC_RBP_UNKNOWN,
		[GP_STOP_READ] = GP_TRUNC_UNREAD,       [GP_STOP_FP_END] = GP_TRUNC_NONE, /* by the last frame */
	};

	k->trunc = v->stop < GP_STOP_MAX ? by_stop[v->stop] : GP_TRUNC_UNWIND;
	k->unwind_detail = v->detail;
	k->py_status = v->py_status;
	k->frames_fp = v->frames_fp;
}

static int push_stack(struct gp_stacks *s, struct gp_stack *k)
{
	if (GP_ARRAY_GROW(s->v, s->cap, s->n + 1, 64))
		return -ENOMEM;
	s->v[s->n++] = k;
	return 0;
}

/* The stack with these frames: found, created, or the overflow stack when the table is full. */
static struct gp_stack *stack_get(struct gp_model *m, struct gp_process *p, const struct gp_stack_view *v,
				  bool *is_new)
{
	struct gp_stacks *s = &p->stacks;
	__u64 h = stack_hash(v->ips, v->nframes, v->npy);
	struct gp_stack *head = gp_u64map_get(&s->by_hash, h), *k;

	*is_new = false;
	for (k = head; k; k = k->next)
		if (same_stack(k, v))
			return k;
	if (m->nstacks >= m->max_stacks) {
		gp_model_drop_add(m, "stacks_over_limit", 1);
		if (!s->overflow)
			s->overflow = stack_new(NULL, 0, UINT32_MAX);
		return s->overflow;
	}
	k = stack_new(v, h, (__u32)s->n);
	if (!k)
		return NULL;
	k->next = head;
	if (push_stack(s, k)) {
		free(k);
		return NULL;
	}
	if (gp_u64map_put(&s->by_hash, h, k)) {
		s->n--;
		free(k);
		return NULL;
	}
	m->nstacks++;
	*is_new = true;
	return k;
}

static bool same_op(const struct gp_stack_op *r, __u16 api, const struct gp_op *op)
{
	if (r->api != api || r->op.kind != op->kind)
		return false;
	switch (op->kind) {
	case GP_OP_KERNEL:
		return r->op.kernel == op->kernel;
	case GP_OP_COPY:
		return r->op.dir == op->dir && r->op.hostmem == op->hostmem && r->op.bytes == op->bytes;
	case GP_OP_MEMSET:
		return r->op.bytes == op->bytes;
	case GP_OP_ALLOC:
		return r->op.alloc_kind == op->alloc_kind && r->op.bytes == op->bytes;
	case GP_OP_FREE:
		return r->op.alloc_kind == op->alloc_kind;
	case GP_OP_COLL:
		return r->op.nccl_op == op->nccl_op && r->op.dtype == op->dtype && r->op.bytes == op->bytes;
	default:
		return true;
	}
}

static struct gp_stack_op *op_get(struct gp_stack *k, __u16 api, const struct gp_op *op)
{
	struct gp_stack_op *r;

	for (__u32 i = 0; i < k->nops; i++)
		if (same_op(&k->ops[i], api, op))
			return &k->ops[i];
	if (GP_ARRAY_GROW(k->ops, k->ops_cap, k->nops + 1, 1))
		return NULL;
	r = &k->ops[k->nops++];
	memset(r, 0, sizeof(*r));
	r->api = api;
	r->op = *op;
	return r;
}

void gp_stacks_add(struct gp_model *m, struct gp_process *p, const struct gp_api_call *c, const struct gp_op *op,
		   const struct gp_stack_view *v)
{
	struct gp_stack *k;
	struct gp_stack_op *r;
	bool is_new;
	/* bytes a call moved: a failed call moved none */
	__u64 bytes = c->ret || op->kind == GP_OP_FREE ? 0 : op->bytes;

	k = stack_get(m, p, v, &is_new);
	if (!k)
		return;
	if (is_new) {
		set_trunc(k, v);
		if (m->has_resolver && m->resolver.stack_seen)
			m->resolver.stack_seen(m->resolver.ctx, p->pid, k->ips, k->nframes);
	}
	p->stacks.calls++;
	k->calls++;
	k->bytes += bytes;
	k->host_ns += c->dur_ns;
	r = op_get(k, c->api, op);
	if (!r)
		return;
	r->calls++;
	r->errors += c->ret != 0;
	r->bytes += bytes;
	r->host_ns += c->dur_ns;
}

/* ---- symbolization --------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Where threads start: a stack that reaches one of these was walked to its end. */
static bool is_thread_root(const struct gp_frame_sym *fs)
{
	static const char *const roots[] = { "_start", "__libc_start_main", "__libc_start_call_main",
					     "start_thread", "clone", "clone3", "__clone", "__clone3",
					     "thread_start" };
	const char *base;

	if (fs->symbol)
		for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
			if (!strcmp(fs->symbol, roots[i]))
				return true;
	/* The C library's own starts are local symbols, stripped from Debian's libc.so.6 */
	if (!fs->file)
		return false;
	base = strrchr(fs->file, '/');
	base = base ? base + 1 : fs->file;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5) || !strncmp(base, "libpthread", 10);
}

static long frame_of(struct gp_model *m, struct gp_stacks *s, __u32 pid, __u64 addr)
{
	void *hit = gp_u64map_get(&s->frame_by_addr, addr);
	struct gp_frame_sym fs = { 0 };
	struct gp_stack_frame *f;

	if (hit)
		return (long)(uintptr_t)hit - 1;
	if (GP_ARRAY_GROW(s->frames, s->frames_cap, s->nframes + 1, 256))
		return -ENOMEM;
	/*
	 * Every address of a stack is a return address: the call that made the
	 * frame is the instruction before it (a call ending a function would
	 * otherwise be named after the next one). Offsets stay those of addr.
	 */
	if (m->resolver.symbolize && addr && m->resolver.symbolize(m->resolver.ctx, pid, addr - 1, &fs) == 0) {
		fs.sym_offset += 1;
		fs.file_offset += 1;
	} else if (!fs.file) {
		fs = (struct gp_frame_sym){ 0 };
	}
	f = &s->frames[s->nframes];
	*f = (struct gp_stack_frame){
		.addr = addr, .function = dup_or_null(fs.function), .symbol = dup_or_null(fs.symbol),
		.file = dup_or_null(fs.file), .build_id = strdup(fs.build_id ? fs.build_id : ""),
		.sym_offset = fs.symbol ? fs.sym_offset : 0, .file_offset = fs.file ? fs.file_offset : 0,
		.source = fs.source, .thread_root = is_thread_root(&fs),
	};
	if (!f->build_id || gp_u64map_put(&s->frame_by_addr, addr, (void *)(uintptr_t)(s->nframes + 1))) {
		free(f->function);
		free(f->symbol);
		free(f->file);
		free(f->build_id);
		return -ENOMEM;
	}
	return (long)s->nframes++;
}

static size_t symbolize_stacks(struct gp_model *m, size_t *nstacks)
{
	size_t frames = 0, stacks = 0;

	for (size_t i = 0; i < m->nprocs; i++) {
		struct gp_process *p = m->procs[i];
		struct gp_stacks *s = &p->stacks;

		for (size_t j = 0; j < s->n; j++) {
			struct gp_stack *k = s->v[j];
			long id = 0;

			if (k->frame_ids)
				continue;
			k->frame_ids = calloc(k->nframes, sizeof(*k->frame_ids));
			if (!k->frame_ids)
				goto out;
			stacks++;
			for (unsigned f = 0; f < k->nframes && id >= 0; f++) {
				id = frame_of(m, s, p->pid, k->ips[f]);
				k->frame_ids[f] = id >= 0 ? (__u32)id : 0;
			}
			if (id < 0) { /* out of memory or no resolver: raw addresses only */
				free(k->frame_ids);
				k->frame_ids = NULL;
				continue;
			}
			/* walked to the thread's start, or stopped short (no frame pointers) */
			if (k->trunc == GP_TRUNC_NONE && !s->frames[k->frame_ids[k->nframes - 1]].thread_root)
				k->trunc = GP_TRUNC_UNWIND;
		}
		s->symbolized = true;
		frames += s->nframes;
	}
out:
	if (nstacks)
		*nstacks = stacks;
	return frames;
}

static void stack_free(struct gp_stack *k)
{
	if (!k)
		return;
	free(k->ops);
	free(k->frame_ids);
	free(k);
}

void gp_stacks_release(struct gp_stacks *s)
{
	for (size_t i = 0; i < s->n; i++)
		stack_free(s->v[i]);
	stack_free(s->overflow);
	free(s->v);
	gp_u64map_clear(&s->by_hash, NULL);
	for (size_t i = 0; i < s->nframes; i++) {
		free(s->frames[i].function);
		free(s->frames[i].symbol);
		free(s->frames[i].file);
		free(s->frames[i].build_id);
	}
	free(s->frames);
	gp_u64map_clear(&s->frame_by_addr, NULL);
	memset(s, 0, sizeof(*s));
}

size_t gp_model_symbolize_stacks(struct gp_model *m, size_t *nstacks)
{
	size_t frames = symbolize_stacks(m, nstacks);

	/* after the resolver's answers, which a capture records as they are given */
	gp_model_tap_symbolize(m, &(struct gp_op_symbolize){});
	return frames;
}
