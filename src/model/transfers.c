/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * transfers.c — successful copies and memsets of one process, keyed by
 * (direction, host memory kind, sync). Direction comes from the
 * cudaMemcpyKind argument or the driver function's name (cuMemcpyHtoD...);
 * cudaMemcpyDefault, cuMemcpy (or a kind that could not be
 * read) is resolved from the pointers against the ranges the model knows.
 * The rules are spelled out in docs/report-format.md ("transfers"). The
 * handlers of the copy and memset shapes (shapes.h) are here, with the one
 * decoder of each: what a copy's arguments are, by its shape.
 */
#include "model/model_internal.h"

const char *gp_dir_name(enum gp_dir d)
{
	static const char *const names[GP_DIR_MAX] = {
		[GP_DIR_HTOD] = "HtoD", [GP_DIR_DTOH] = "DtoH", [GP_DIR_DTOD] = "DtoD",
		[GP_DIR_HTOH] = "HtoH", [GP_DIR_PTOP] = "PtoP", [GP_DIR_DEFAULT] = "Default",
	};
	return (unsigned)d < GP_DIR_MAX ? names[d] : "Default";
}

const char *gp_hostmem_name(enum gp_hostmem h)
{
	static const char *const names[GP_HM_MAX] = {
		[GP_HM_PAGEABLE] = "pageable", [GP_HM_PINNED] = "pinned",
		[GP_HM_MANAGED] = "managed",   [GP_HM_DEVICE] = "device",
		[GP_HM_UNKNOWN] = "unknown",
	};
	return (unsigned)h < GP_HM_MAX ? names[h] : "unknown";
}

enum ptr_class { PC_UNKNOWN, PC_DEVICE, PC_MANAGED, PC_PINNED };

static enum ptr_class classify(const struct gp_process *p, __u64 addr)
{
	const struct gp_alloc *a =
		(const struct gp_alloc *)gp_ranges_find(&p->mem.device_ranges, addr);

	if (a)
		return a->kind == GP_AK_MANAGED ? PC_MANAGED : PC_DEVICE;
	if (gp_ranges_find(&p->mem.host_ranges, addr))
		return PC_PINNED; /* pinned allocation or registered range */
	return PC_UNKNOWN;
}

/* The kind of host memory behind the host-side pointer of a copy whose direction is known. */
static enum gp_hostmem host_memory(const struct gp_process *p, __u64 addr)
{
	switch (classify(p, addr)) {
	case PC_PINNED:
		return GP_HM_PINNED;
	case PC_MANAGED:
		return GP_HM_MANAGED;
	case PC_DEVICE:
		return GP_HM_DEVICE;
	default:
		return GP_HM_PAGEABLE;
	}
}

static bool device_side(enum ptr_class c)
{
	return c == PC_DEVICE || c == PC_MANAGED;
}

/* cudaMemcpyDefault: decide from what the pointers are, when at least one is known. */
static void resolve_default(const struct gp_process *p, __u64 dst, __u64 src, enum gp_dir *dir,
			    enum gp_hostmem *hm)
{
	enum ptr_class s = classify(p, src), d = classify(p, dst);

	if (device_side(s) && device_side(d)) {
		*dir = GP_DIR_DTOD;
		*hm = GP_HM_DEVICE;
	} else if (device_side(s)) { /* the other side is pinned, or assumed pageable host */
		*dir = GP_DIR_DTOH;
		*hm = d == PC_PINNED ? GP_HM_PINNED : GP_HM_PAGEABLE;
	} else if (device_side(d)) {
		*dir = GP_DIR_HTOD;
		*hm = s == PC_PINNED ? GP_HM_PINNED : GP_HM_PAGEABLE;
	} else if (s == PC_PINNED && d == PC_PINNED) {
		*dir = GP_DIR_HTOH;
		*hm = GP_HM_PINNED;
	} else { /* an unknown pointer may be device memory we never saw allocated */
		*dir = GP_DIR_DEFAULT;
		*hm = GP_HM_UNKNOWN;
	}
}

struct copy_args {
	__u64 dst, src, bytes;
	__u64 kind; /* cudaMemcpyKind, GP_MEMCPY_DEFAULT when unreadable */
	bool peer;
};

/* Every shape that queues a copy has its case in decode_copy(): a new one fails here first. */
#define GP_COPY_SHAPE(name, ck, stream, stack, agg, nested, queues, handler) \
	+((queues) == GP_Q_COPY)
_Static_assert(0 GP_SHAPE_TABLE(GP_COPY_SHAPE) == 4, "decode_copy() decodes 4 copy shapes");
#undef GP_COPY_SHAPE

static struct copy_args decode_copy(const struct gp_api_call *c)
{
	struct copy_args ca = { 0 };

	switch (gp_apis[c->api].shape) {
	case GP_SHAPE_MEMCPY:
		/* kind is an int: in ecx, the upper half of rcx is not ours to read */
		ca = (struct copy_args){ .dst = c->args[0],
					 .src = c->args[1],
					 .bytes = c->args[2],
					 .kind = (__u32)c->args[3] };
		break;
	case GP_SHAPE_MEMCPY_2D:
		ca = (struct copy_args){
			.dst = c->args[0],
			.src = c->args[2],
			.bytes = c->args[4] * c->args[5],
			.kind = (__u32)c->args[6]
		};					/* an int in an 8-byte stack slot */
		if (c->hdr.flags & GP_EVF_ARGS_PARTIAL) /* kind lives on the stack */
			ca.kind = GP_MEMCPY_DEFAULT;
		break;
	case GP_SHAPE_MEMCPY_PEER:
		ca = (struct copy_args){
			.dst = c->args[0], .src = c->args[2], .bytes = c->args[4], .peer = true
		};
		break;
	case GP_SHAPE_CU_MEMCPY: { /* the driver names the direction in the function, cuMemcpy not at all */
		unsigned at = gp_apis[c->api].attr;

		ca = (struct copy_args){ .dst = c->args[0],
					 .src = c->args[1],
					 .bytes = c->args[2],
					 .kind = (at & GP_A_HTOD)   ? GP_MEMCPY_HTOD
						 : (at & GP_A_DTOH) ? GP_MEMCPY_DTOH
						 : (at & GP_A_DTOD) ? GP_MEMCPY_DTOD
								    : GP_MEMCPY_DEFAULT };
		break;
	}
	default:
		break;
	}
	return ca;
}

/* MEMSET is the one shape that queues a memset: memset_bytes() decodes it. */
#define GP_MEMSET_SHAPE(name, ck, stream, stack, agg, nested, queues, handler) \
	+((queues) == GP_Q_MEMSET)
_Static_assert(0 GP_SHAPE_TABLE(GP_MEMSET_SHAPE) == 1, "memset_bytes() decodes 1 memset shape");
#undef GP_MEMSET_SHAPE

/* (ptr, value, count[, stream]); cuMemsetD32 counts 4-byte elements */
static __u64 memset_bytes(const struct gp_api_call *c)
{
	return c->args[2] * ((gp_apis[c->api].attr & GP_A_ELEM4) ? 4 : 1);
}

__u64 gp_transfer_bytes(const struct gp_api_call *c)
{
	if (gp_api_queues(c->api) == GP_Q_MEMSET)
		return memset_bytes(c);
	return decode_copy(c).bytes;
}

void gp_copy_endpoints(const struct gp_api_call *c, __u64 *src, __u64 *dst)
{
	struct copy_args ca = decode_copy(c);

	*src = ca.src;
	*dst = ca.dst;
}

void gp_transfer_classify(const struct gp_process *p, const struct gp_api_call *c,
			  struct gp_copy_info *out)
{
	struct copy_args ca = decode_copy(c);
	enum gp_dir dir;
	enum gp_hostmem hm;

	if (ca.peer) {
		dir = GP_DIR_PTOP;
		hm = GP_HM_DEVICE;
	} else {
		switch (ca.kind) {
		case GP_MEMCPY_HTOD:
			dir = GP_DIR_HTOD;
			hm = host_memory(p, ca.src);
			break;
		case GP_MEMCPY_DTOH:
			dir = GP_DIR_DTOH;
			hm = host_memory(p, ca.dst);
			break;
		case GP_MEMCPY_DTOD:
			dir = GP_DIR_DTOD;
			hm = GP_HM_DEVICE;
			break;
		case GP_MEMCPY_HTOH: /* rule: the kind of the source */
			dir = GP_DIR_HTOH;
			hm = host_memory(p, ca.src);
			break;
		default:
			resolve_default(p, ca.dst, ca.src, &dir, &hm);
			break;
		}
	}
	*out = (struct gp_copy_info){
		.dst = ca.dst, .src = ca.src, .bytes = ca.bytes, .dir = dir, .hostmem = hm
	};
}

void gp_shape_copy(struct gp_shape_call *x)
{
	struct gp_process *p = x->p;
	const struct gp_api_call *c = x->c;
	struct gp_copy_info ci;

	gp_transfer_classify(p, c, &ci);
	*x->op = (struct gp_op){
		.kind = GP_OP_COPY, .dir = ci.dir, .hostmem = ci.hostmem, .bytes = ci.bytes
	};
	if (c->ret) /* a failed copy moved nothing; it counts only as an API error */
		return;

	bool sync = !(gp_apis[c->api].attr & GP_A_ASYNC);
	struct gp_xfer_row *row = &p->xfer[ci.dir][ci.hostmem][sync];

	if (!row->calls || ci.bytes < row->min_bytes)
		row->min_bytes = ci.bytes;
	if (ci.bytes > row->max_bytes)
		row->max_bytes = ci.bytes;
	row->calls++;
	row->bytes += ci.bytes;
	row->total_ns += c->dur_ns;
	row->size_hist[gp_size_bucket(ci.bytes)]++;
	if (ci.bytes <= GP_SMALL_COPY_BYTES) {
		row->small_calls++;
		row->small_bytes += ci.bytes;
		row->small_ns += c->dur_ns;
	}
}

void gp_shape_memset(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;
	struct gp_memset_row *row = &x->p->memsets[!(gp_apis[c->api].attr & GP_A_ASYNC)];

	*x->op = (struct gp_op){ .kind = GP_OP_MEMSET, .bytes = memset_bytes(c) };
	if (c->ret)
		return;
	row->calls++;
	row->bytes += memset_bytes(c);
	row->total_ns += c->dur_ns;
}
