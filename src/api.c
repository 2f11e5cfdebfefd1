/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * api.c — the userspace view of the API table in include/gpuprobed/api.h:
 * symbol names, shapes and attributes by id, and what each shape means for
 * the BPF programs (cookie flags) and for decoding (which slot is the stream).
 */
#include <stddef.h>

#include "gpuprobed/api.h"

const struct gp_api_info gp_apis[GP_API_MAX] = {
#define GP_API_INFO(id, fam, sym, shp, at) [GP_API_##id] = { .symbol = sym, .family = fam, .shape = shp, .attr = at },
	GP_API_TABLE(GP_API_INFO)
#undef GP_API_INFO
};

bool gp_api_wants_stack(enum gp_api_id id)
{
	if (gp_apis[id].attr & GP_A_SYNC_CALL)
		return true;
	switch (gp_apis[id].shape) {
	case GP_SHAPE_ALLOC:
	case GP_SHAPE_ALLOC_ASYNC:
	case GP_SHAPE_FREE:
	case GP_SHAPE_FREE_ASYNC:
	case GP_SHAPE_HOST_REGISTER:
	case GP_SHAPE_MEMCPY:
	case GP_SHAPE_MEMCPY_2D:
	case GP_SHAPE_MEMCPY_PEER:
	case GP_SHAPE_MEMSET:
	case GP_SHAPE_LAUNCH:
	case GP_SHAPE_LAUNCH_EXC:
	case GP_SHAPE_GRAPH_LAUNCH:
	case GP_SHAPE_CU_LAUNCH:
	case GP_SHAPE_CU_LAUNCH_EX:
	case GP_SHAPE_CU_MEMCPY:
	case GP_SHAPE_VMM_CREATE:
	case GP_SHAPE_VMM_RELEASE:
	case GP_SHAPE_NCCL_COLL:
		return true;
	default:
		return false;
	}
}

unsigned gp_api_cookie_flags(enum gp_api_id id)
{
	switch (gp_apis[id].shape) {
	case GP_SHAPE_LAUNCH:
	case GP_SHAPE_MEMCPY_2D:
		return GP_CK_STACK2;
	case GP_SHAPE_LAUNCH_EXC:
	case GP_SHAPE_CU_LAUNCH_EX:
		return GP_CK_LAUNCH_CFG;
	case GP_SHAPE_CU_LAUNCH:
		return GP_CK_CU_LAUNCH;
	case GP_SHAPE_ALLOC:
	case GP_SHAPE_ALLOC_ASYNC:
	case GP_SHAPE_STREAM_CREATE:
	case GP_SHAPE_EVENT_CREATE:
	case GP_SHAPE_GET_KERNEL:
	case GP_SHAPE_KERNEL_GET_FUNCTION:
	case GP_SHAPE_NCCL_INIT_RANK:
		return GP_CK_OUT_AT(0);
	case GP_SHAPE_VMM_CREATE:
		return GP_CK_OUT_AT(0) | GP_CK_DEREF2;
	case GP_SHAPE_MODULE_LOAD: /* the path, for the two that take one */
		return GP_CK_OUT_AT(0) |
		       (id == GP_API_CU_MODULE_LOAD || id == GP_API_CU_LIBRARY_LOAD_FROM_FILE ? GP_CK_STR_AT(1) : 0);
	case GP_SHAPE_GET_FUNCTION:
		return GP_CK_OUT_AT(0) | GP_CK_STR_AT(2);
	case GP_SHAPE_REGISTER_FUNCTION:
		return GP_CK_STR_AT(3) | GP_CK_VOID;
	case GP_SHAPE_NCCL_SPLIT:
		return GP_CK_OUT_AT(3);
	case GP_SHAPE_NCCL_COMM_QUERY:
		return GP_CK_OUT_AT(1) | GP_CK_OUT32;
	case GP_SHAPE_NCCL_INIT_ALL:
		return GP_CK_NCCL_ALL;
	case GP_SHAPE_NCCL_COLL: {
		struct gp_nccl_layout l;

		/* slots 6..7 live on the stack */
		return gp_nccl_layout(id, &l) && (l.stream >= 6 || l.comm >= 6) ? GP_CK_STACK2 : 0;
	}
	default:
		return 0;
	}
}

bool gp_nccl_layout(enum gp_api_id id, struct gp_nccl_layout *out)
{
	/*                 op                       count dtype redop root comm stream per_rank */
#define L(o, c, d, r, rt, cm, st, pr) \
	(*out = (struct gp_nccl_layout){ o, c, d, r, rt, cm, st, pr }, true)
	switch (id) {
	case GP_API_NCCL_ALL_REDUCE:     return L(GP_NCCL_ALL_REDUCE,     2, 3, 4, -1, 5, 6, false);
	case GP_API_NCCL_BROADCAST:      return L(GP_NCCL_BROADCAST,      2, 3, -1, 4, 5, 6, false);
	case GP_API_NCCL_BCAST:          return L(GP_NCCL_BROADCAST,      1, 2, -1, 3, 4, 5, false);
	case GP_API_NCCL_REDUCE:         return L(GP_NCCL_REDUCE,         2, 3, 4, 5, 6, 7, false);
	case GP_API_NCCL_ALL_GATHER:     return L(GP_NCCL_ALL_GATHER,     2, 3, -1, -1, 4, 5, true);
	case GP_API_NCCL_REDUCE_SCATTER: return L(GP_NCCL_REDUCE_SCATTER, 2, 3, 4, -1, 5, 6, true);
	case GP_API_NCCL_ALLTOALL:
	case GP_API_NCCL_ALL_TO_ALL:     return L(GP_NCCL_ALL_TO_ALL,     2, 3, -1, -1, 4, 5, true);
	case GP_API_NCCL_SEND:           return L(GP_NCCL_SEND,           1, 2, -1, 3, 4, 5, false);
	case GP_API_NCCL_RECV:           return L(GP_NCCL_RECV,           1, 2, -1, 3, 4, 5, false);
	default:
		return false;
	}
#undef L
}

const char *gp_nccl_op_name(enum gp_nccl_op op)
{
	static const char *const names[GP_NCCL_OP_MAX] = {
		[GP_NCCL_ALL_REDUCE] = "AllReduce",   [GP_NCCL_BROADCAST] = "Broadcast",
		[GP_NCCL_REDUCE] = "Reduce",          [GP_NCCL_ALL_GATHER] = "AllGather",
		[GP_NCCL_REDUCE_SCATTER] = "ReduceScatter", [GP_NCCL_ALL_TO_ALL] = "AllToAll",
		[GP_NCCL_SEND] = "Send",              [GP_NCCL_RECV] = "Recv",
	};
	return (unsigned)op < GP_NCCL_OP_MAX ? names[op] : "unknown";
}

/* ncclDataType_t values of nccl.h (NCCL 2.x): ncclInt8 = 0 ... ncclFloat8e5m2 = 11. */
static const struct {
	const char *name;
	unsigned size;
} nccl_dtypes[] = {
	{ "int8", 1 },    { "uint8", 1 },   { "int32", 4 },    { "uint32", 4 },
	{ "int64", 8 },   { "uint64", 8 },  { "float16", 2 },  { "float32", 4 },
	{ "float64", 8 }, { "bfloat16", 2 }, { "float8e4m3", 1 }, { "float8e5m2", 1 },
};

unsigned gp_nccl_dtype_size(int dtype)
{
	return dtype >= 0 && dtype < (int)(sizeof(nccl_dtypes) / sizeof(nccl_dtypes[0])) ? nccl_dtypes[dtype].size : 0;
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

int gp_api_stream_slot(enum gp_api_id id)
{
	if (id <= GP_API_INVALID || id >= GP_API_MAX)
		return -1;
	const struct gp_api_info *a = &gp_apis[id];
	int async = (a->attr & GP_A_ASYNC) != 0;

	switch (a->shape) {
	case GP_SHAPE_ALLOC_ASYNC:
		return 2;
	case GP_SHAPE_FREE_ASYNC:
	case GP_SHAPE_GRAPH_LAUNCH:
	case GP_SHAPE_EVENT_RECORD:
		return 1;
	case GP_SHAPE_MEMCPY:
		return async ? 4 : -1;
	case GP_SHAPE_CU_MEMCPY:
		return async ? 3 : -1;
	case GP_SHAPE_CU_LAUNCH:
	case GP_SHAPE_CU_LAUNCH_EX:
		return 7;
	case GP_SHAPE_NCCL_COLL: {
		struct gp_nccl_layout l;

		return gp_nccl_layout(id, &l) ? l.stream : -1;
	}
	case GP_SHAPE_MEMCPY_2D:
		return async ? 7 : -1;
	case GP_SHAPE_MEMCPY_PEER:
		return async ? 5 : -1;
	case GP_SHAPE_MEMSET:
		return async ? 3 : -1;
	case GP_SHAPE_LAUNCH:
		return 7;
	case GP_SHAPE_LAUNCH_EXC:
		return 7; /* cfg->stream, copied into slot 7 */
	case GP_SHAPE_STREAM:
	case GP_SHAPE_STREAM_WAIT_EVENT:
		return 0;
	default:
		return -1;
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
