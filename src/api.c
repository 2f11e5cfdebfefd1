/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * api.c — the userspace view of the API table in include/gpuprobed/api.h:
 * symbol names, shapes and attributes by id, and what each shape means for
 * the BPF programs (cookie flags) and for decoding (which slot is the stream).
 */
#include "gpuprobed/api.h"

const struct gp_api_info gp_apis[GP_API_MAX] = {
#define GP_API_INFO(id, fam, sym, shp, at) [GP_API_##id] = { .symbol = sym, .family = fam, .shape = shp, .attr = at },
	GP_API_TABLE(GP_API_INFO)
#undef GP_API_INFO
};

unsigned gp_shape_cookie_flags(enum gp_shape shape)
{
	switch (shape) {
	case GP_SHAPE_LAUNCH:
	case GP_SHAPE_MEMCPY_2D:
		return GP_CK_STACK2;
	case GP_SHAPE_LAUNCH_EXC:
		return GP_CK_LAUNCH_CFG;
	case GP_SHAPE_ALLOC:
	case GP_SHAPE_ALLOC_ASYNC:
	case GP_SHAPE_STREAM_CREATE:
	case GP_SHAPE_EVENT_CREATE:
	case GP_SHAPE_GET_KERNEL:
		return GP_CK_OUT_ARG0;
	default:
		return 0;
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
