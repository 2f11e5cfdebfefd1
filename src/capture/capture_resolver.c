/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* capture_resolver.c — recording and answering resolvers (capture_resolver.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_resolver.h"
#include "model/model_ops.h"
#include "model/u64map.h"
#include "symbolize/symbolizer.h"

/* ---- live ---------------------------------------------------------------- */

static void record_op(struct gp_recording_resolver *rr, unsigned op, ...)
{
	unsigned char small[1024];
	unsigned char *buf = small;
	va_list ap;
	size_t n;

	va_start(ap, op);
	n = gp_op_vpack(small, sizeof(small), gp_model_op_format(op), ap);
	va_end(ap);
	if (n > sizeof(small)) {
		buf = malloc(n);
		if (buf) {
			va_start(ap, op);
			gp_op_vpack(buf, n, gp_model_op_format(op), ap);
			va_end(ap);
		}
	}
	rr->record(rr->record_ctx, op, buf, n); /* buf NULL: counted as lost */
	if (buf != small)
		free(buf);
}

static int rec_kernel_name(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack, unsigned nstack,
			   char *name, size_t name_len, char *mangled, size_t mangled_len)
{
	struct gp_recording_resolver *rr = ctx;
	int rc = rr->inner.kernel_name(rr->inner.ctx, tgid, func, ret_addr, stack, nstack, name, name_len, mangled,
				       mangled_len);

	name[name_len - 1] = mangled[mangled_len - 1] = '\0';
	record_op(rr, GP_MOP_KERNEL_NAME, (unsigned)tgid, (__u64)func, (__u64)ret_addr, rc, name, mangled);
	return rc;
}

static void rec_stack_seen(void *ctx, __u32 tgid, const __u64 *ips, unsigned n)
{
	struct gp_recording_resolver *rr = ctx;

	if (rr->inner.stack_seen)
		rr->inner.stack_seen(rr->inner.ctx, tgid, ips, n);
}

static int rec_symbolize(void *ctx, __u32 tgid, __u64 addr, struct gp_frame_sym *out)
{
	struct gp_recording_resolver *rr = ctx;
	int rc = rr->inner.symbolize(rr->inner.ctx, tgid, addr, out);

	record_op(rr, GP_MOP_SYMBOL, (unsigned)tgid, (__u64)addr, rc, out->function, out->symbol, out->file,
		  out->build_id, (__u64)out->sym_offset, (__u64)out->file_offset, (unsigned)out->source);
	return rc;
}

struct gp_resolver gp_recording_resolver(struct gp_recording_resolver *rr)
{
	return (struct gp_resolver){
		.ctx = rr,
		.kernel_name = rr->inner.kernel_name ? rec_kernel_name : NULL,
		.demangle = rr->inner.demangle,
		.demangle_short = rr->inner.demangle_short,
		.stack_seen = rec_stack_seen,
		.symbolize = rr->inner.symbolize ? rec_symbolize : NULL,
	};
}

/* ---- loading ------------------------------------------------------------- */

/* One recorded answer: the payload kept whole, decoded in vals (pointing into it). */
struct answer {
	unsigned op;
	void *payload;
	union gp_op_val v[GP_OP_MAX_FIELDS];
	struct answer *next; /* same hash */
};

struct gp_answers {
	struct gp_u64map by_key; /* hash of (op, tgid, a, b) -> struct answer chain */
};

static __u64 key_of(unsigned op, __u64 tgid, __u64 a, __u64 b)
{
	__u64 h = 0x9e3779b97f4a7c15ULL * (op + 1);

	h = (h ^ tgid) * 0xff51afd7ed558ccdULL;
	h = (h ^ a) * 0xc4ceb9fe1a85ec53ULL;
	h = (h ^ b) * 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static bool same(const struct answer *x, unsigned op, __u64 tgid, __u64 a, __u64 b)
{
	return x->op == op && x->v[0].u == tgid && x->v[1].u == a && (op == GP_MOP_SYMBOL || x->v[2].u == b);
}

static struct answer *find(struct gp_answers *as, unsigned op, __u64 tgid, __u64 a, __u64 b)
{
	for (struct answer *x = gp_u64map_get(&as->by_key, key_of(op, tgid, a, b)); x; x = x->next)
		if (same(x, op, tgid, a, b))
			return x;
	return NULL;
}

struct gp_answers *gp_answers_new(void)
{
	return calloc(1, sizeof(struct gp_answers));
}

static void chain_free(void *v)
{
	for (struct answer *x = v, *next; x; x = next) {
		next = x->next;
		free(x->payload);
		free(x);
	}
}

void gp_answers__free(struct gp_answers *as)
{
	if (!as)
		return;
	gp_u64map_clear(&as->by_key, chain_free);
	free(as);
}

int gp_answers_add(struct gp_answers *as, unsigned op, const void *data, size_t len)
{
	struct answer *x = calloc(1, sizeof(*x));
	__u64 b, key;
	int err = -ENOMEM;

	if (!x || !(x->payload = malloc(len ? len : 1)))
		goto err;
	memcpy(x->payload, data, len);
	x->op = op;
	err = -EINVAL;
	if ((op != GP_MOP_KERNEL_NAME && op != GP_MOP_SYMBOL) || gp_op_unpack(op, x->payload, len, x->v))
		goto err;
	b = op == GP_MOP_SYMBOL ? 0 : x->v[2].u;
	key = key_of(op, x->v[0].u, x->v[1].u, b);

	/* a later answer to the same question (a pid reused) replaces the earlier one */
	struct answer *head = gp_u64map_get(&as->by_key, key), **pp = &head;

	while (*pp && !same(*pp, op, x->v[0].u, x->v[1].u, b))
		pp = &(*pp)->next;
	if (*pp) {
		struct answer *old = *pp;

		x->next = old->next;
		*pp = x; /* head itself, or a link inside the chain the map holds */
		old->next = NULL;
		chain_free(old);
		return head == x ? gp_u64map_put(&as->by_key, key, head) : 0; /* replacing a value: no growth */
	}
	x->next = head;
	err = gp_u64map_put(&as->by_key, key, x);
	if (!err)
		return 0;
err:
	if (x)
		free(x->payload);
	free(x);
	return err;
}

static void copy_str(char *dst, size_t len, const char *s)
{
	snprintf(dst, len, "%s", s ? s : "");
}

static int ans_kernel_name(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack, unsigned nstack,
			   char *name, size_t name_len, char *mangled, size_t mangled_len)
{
	struct answer *x = find(ctx, GP_MOP_KERNEL_NAME, tgid, func, ret_addr);

	if (!x)
		return -ENOENT;
	copy_str(name, name_len, x->v[4].s);
	copy_str(mangled, mangled_len, x->v[5].s);
	return (int)x->v[3].i;
}

static int ans_symbolize(void *ctx, __u32 tgid, __u64 addr, struct gp_frame_sym *out)
{
	struct answer *x = find(ctx, GP_MOP_SYMBOL, tgid, addr, 0);

	if (!x)
		return -ENOENT;
	*out = (struct gp_frame_sym){
		.function = x->v[3].s, .symbol = x->v[4].s, .file = x->v[5].s, .build_id = x->v[6].s,
		.sym_offset = x->v[7].u, .file_offset = x->v[8].u,
		.source = x->v[9].u <= GP_SYM_PERF_MAP ? (enum gp_sym_source)x->v[9].u : GP_SYM_NONE,
	};
	return (int)x->v[2].i;
}

struct gp_resolver gp_answers_resolver(struct gp_answers *as)
{
	return (struct gp_resolver){
		.ctx = as,
		.kernel_name = ans_kernel_name,
		.demangle = gp_demangle,
		.demangle_short = gp_demangle_short,
		.symbolize = ans_symbolize,
	};
}
