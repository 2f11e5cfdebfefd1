/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * api.c — the userspace view of the tables in include/gpuprobed/api.h:
 * symbol names, shapes and attributes by API id; what each shape means for
 * the BPF programs (cookie flags), the probes (stacks, in-kernel counting)
 * and decoding (which slot is the stream); where each NCCL collective keeps
 * its arguments.
 */
#include <stddef.h>

#include "gpuprobed/api.h"

const struct gp_api_info gp_apis[GP_API_MAX] = {
#define GP_API_INFO(id, fam, sym, shp, at) \
	[GP_API_##id] = { .symbol = sym, .family = fam, .shape = shp, .attr = at },
	GP_API_TABLE(GP_API_INFO)
#undef GP_API_INFO
};

const struct gp_shape_info gp_shapes[GP_SHAPE_MAX] = {
#define GP_SHAPE_INFO(nm, c, st, stk, ag, nested, q, handler)                            \
	[GP_SHAPE_##nm] = {                                                              \
		.name = #nm, .ck = c, .stream = st, .stack = stk, .agg = ag, .queues = q \
	},
	GP_SHAPE_TABLE(GP_SHAPE_INFO)
#undef GP_SHAPE_INFO
};

static const struct gp_shape_info *shape_of(enum gp_api_id id)
{
	bool valid = id > GP_API_INVALID && id < GP_API_MAX;

	return &gp_shapes[valid ? gp_apis[id].shape : GP_SHAPE_NONE];
}

bool gp_api_wants_stack(enum gp_api_id id)
{
	return shape_of(id)->stack;
}

unsigned gp_api_cookie_flags(enum gp_api_id id)
{
	return shape_of(id)->ck;
}

enum gp_queues gp_api_queues(enum gp_api_id id)
{
	return shape_of(id)->queues;
}

int gp_api_stream_slot(enum gp_api_id id)
{
	int slot = shape_of(id)->stream;

	if (slot >= GP_SLOT_ASYNC(0)) /* the synchronous variants take no stream */
		return (gp_apis[id].attr & GP_A_ASYNC) ? slot - GP_SLOT_ASYNC(0) : GP_SLOT_NONE;
	return slot;
}

/*
 * What each NCCL collective's arguments are, by API id: the slots of its
 * count, data type, reduction and root or peer (-1: none). Its comm and
 * stream are its last two arguments, where its shape (NCCL_COLL6/7/8) says.
 */
static const struct {
	bool set;
	enum gp_nccl_op op;
	signed char count, dtype, redop, root_or_peer;
	bool per_rank_count;
} nccl_layouts[GP_API_MAX] = {
	/*                                     op                      count, dtype, redop, root; per_rank */
	[GP_API_NCCL_ALL_REDUCE] = { true, GP_NCCL_ALL_REDUCE, 2, 3, 4, -1, false },
	[GP_API_NCCL_BROADCAST] = { true, GP_NCCL_BROADCAST, 2, 3, -1, 4, false },
	[GP_API_NCCL_BCAST] = { true, GP_NCCL_BROADCAST, 1, 2, -1, 3, false },
	[GP_API_NCCL_REDUCE] = { true, GP_NCCL_REDUCE, 2, 3, 4, 5, false },
	[GP_API_NCCL_ALL_GATHER] = { true, GP_NCCL_ALL_GATHER, 2, 3, -1, -1, true },
	[GP_API_NCCL_REDUCE_SCATTER] = { true, GP_NCCL_REDUCE_SCATTER, 2, 3, 4, -1, true },
	[GP_API_NCCL_ALLTOALL] = { true, GP_NCCL_ALL_TO_ALL, 2, 3, -1, -1, true },
	[GP_API_NCCL_ALL_TO_ALL] = { true, GP_NCCL_ALL_TO_ALL, 2, 3, -1, -1, true },
	[GP_API_NCCL_SEND] = { true, GP_NCCL_SEND, 1, 2, -1, 3, false },
	[GP_API_NCCL_RECV] = { true, GP_NCCL_RECV, 1, 2, -1, 3, false },
};

bool gp_nccl_layout(enum gp_api_id id, struct gp_nccl_layout *out)
{
	int stream = gp_api_stream_slot(id);

	if (gp_api_queues(id) != GP_Q_COLL || !nccl_layouts[id].set || stream < 1)
		return false;
	*out = (struct gp_nccl_layout){ .op = nccl_layouts[id].op,
					.count = nccl_layouts[id].count,
					.dtype = nccl_layouts[id].dtype,
					.redop = nccl_layouts[id].redop,
					.root_or_peer = nccl_layouts[id].root_or_peer,
					.comm = stream - 1,
					.stream = stream,
					.per_rank_count = nccl_layouts[id].per_rank_count };
	return true;
}

const char *gp_nccl_op_name(enum gp_nccl_op op)
{
	static const char *const names[GP_NCCL_OP_MAX] = {
		[GP_NCCL_ALL_REDUCE] = "AllReduce",
		[GP_NCCL_BROADCAST] = "Broadcast",
		[GP_NCCL_REDUCE] = "Reduce",
		[GP_NCCL_ALL_GATHER] = "AllGather",
		[GP_NCCL_REDUCE_SCATTER] = "ReduceScatter",
		[GP_NCCL_ALL_TO_ALL] = "AllToAll",
		[GP_NCCL_SEND] = "Send",
		[GP_NCCL_RECV] = "Recv",
	};
	return (unsigned)op < GP_NCCL_OP_MAX ? names[op] : "unknown";
}

/* ncclDataType_t values of nccl.h (NCCL 2.x): ncclInt8 = 0 ... ncclFloat8e5m2 = 11. */
static const struct {
	const char *name;
	unsigned size;
} nccl_dtypes[] = {
	{ "int8", 1 },	  { "uint8", 1 },    { "int32", 4 },	  { "uint32", 4 },
	{ "int64", 8 },	  { "uint64", 8 },   { "float16", 2 },	  { "float32", 4 },
	{ "float64", 8 }, { "bfloat16", 2 }, { "float8e4m3", 1 }, { "float8e5m2", 1 },
};

unsigned gp_nccl_dtype_size(int dtype)
{
	return dtype >= 0 && dtype < (int)(sizeof(nccl_dtypes) / sizeof(nccl_dtypes[0]))
		       ? nccl_dtypes[dtype].size
		       : 0;
}

const char *gp_nccl_dtype_name(int dtype)
{
	return gp_nccl_dtype_size(dtype) ? nccl_dtypes[dtype].name : NULL;
}

const char *gp_nccl_redop_name(int op)
{
	static const char *const names[] = { "sum", "prod", "max", "min", "avg" };

	return op >= 0 && op < 5 ? names[op] : NULL;
}

double gp_nccl_bus_factor(enum gp_nccl_op op, unsigned n)
{
	if (n == 0)
		return 0;
	switch (op) {
	case GP_NCCL_ALL_REDUCE:
		return 2.0 * (n - 1) / n;
	case GP_NCCL_ALL_GATHER:
	case GP_NCCL_REDUCE_SCATTER:
	case GP_NCCL_ALL_TO_ALL:
		return (double)(n - 1) / n;
	default:
		return 1.0;
	}
}

const char *gp_family_name(enum gp_family fam)
{
	switch (fam) {
	case GP_FAM_CUDART:
		return "cudart";
	case GP_FAM_CUDA:
		return "cuda";
	case GP_FAM_NCCL:
		return "nccl";
	}
	return "unknown";
}
