/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * records.h — builds struct gp_api_call records the way the BPF programs
 * fill them (argument slots per shape, see include/gpuprobed/api.h) and
 * feeds them to a model, for the model and sink unit tests.
 * Include after <cmocka.h>.
 */
#ifndef GP_TEST_RECORDS_H
#define GP_TEST_RECORDS_H

#include <string.h>

#include "model/model_internal.h"
#include "report/report.h"

#define T_PID 4242
#define T_TID 4242

/* A record of api by (pid, tid) starting at ts, lasting dur, returning ret. */
static inline struct gp_api_call rec(enum gp_api_id api, __u32 pid, __u32 tid, __u64 ts, __u64 dur,
				     int ret)
{
	struct gp_api_call c;

	memset(&c, 0, sizeof(c));
	c.hdr.type = GP_EV_API_CALL;
	c.hdr.size = sizeof(c);
	c.hdr.tgid = pid;
	c.hdr.tid = tid;
	c.hdr.ts_ns = ts;
	c.dur_ns = dur;
	c.ret = ret;
	c.api = (__u16)api;
	c.ret_addr = 0x401000;
	return c;
}

static inline void feed(struct gp_model *m, const struct gp_api_call *c)
{
	assert_int_equal(gp_model_ingest(m, c, sizeof(*c)), 0);
}

/* cudaMalloc & co (ALLOC, ALLOC_ASYNC): out = the pointer, args[1] = bytes. */
static inline struct gp_api_call rec_alloc(enum gp_api_id api, __u32 tid, __u64 ptr, __u64 bytes,
					   int ret)
{
	struct gp_api_call c = rec(api, T_PID, tid, 1000, 100, ret);

	c.args[0] = 0x7ffc0000; /* &ptr on the caller's stack */
	c.args[1] = bytes;
	if (!ret) {
		c.out = ptr;
		c.hdr.flags |= GP_EVF_OUT_VALID;
	}
	return c;
}

/* FREE, FREE_ASYNC, HOST_REGISTER (args[1] = bytes) */
static inline struct gp_api_call rec_ptr(enum gp_api_id api, __u32 tid, __u64 ptr, __u64 bytes,
					 int ret)
{
	struct gp_api_call c = rec(api, T_PID, tid, 2000, 50, ret);

	c.args[0] = ptr;
	c.args[1] = bytes;
	return c;
}

/* MEMCPY: (dst, src, count, kind[, stream]) */
static inline struct gp_api_call rec_memcpy(enum gp_api_id api, __u64 dst, __u64 src, __u64 bytes,
					    int kind, __u64 stream, __u64 dur, int ret)
{
	struct gp_api_call c = rec(api, T_PID, T_TID, 3000, dur, ret);

	c.args[0] = dst;
	c.args[1] = src;
	c.args[2] = bytes;
	c.args[3] = (__u64)kind;
	c.args[4] = stream;
	return c;
}

/* MEMCPY_2D: (dst, dpitch, src, spitch, width, height, [sp+8] kind, [sp+16] stream) */
static inline struct gp_api_call rec_memcpy2d(enum gp_api_id api, __u64 dst, __u64 src, __u64 width,
					      __u64 height, int kind, __u64 stream)
{
	struct gp_api_call c = rec(api, T_PID, T_TID, 3000, 100, 0);

	c.args[0] = dst;
	c.args[1] = width + 64;
	c.args[2] = src;
	c.args[3] = width + 128;
	c.args[4] = width;
	c.args[5] = height;
	c.args[6] = (__u64)kind;
	c.args[7] = stream;
	return c;
}

/* MEMCPY_PEER: (dst, dstDev, src, srcDev, count[, stream]) */
static inline struct gp_api_call rec_peer(enum gp_api_id api, __u64 dst, __u64 src, __u64 bytes,
					  __u64 stream)
{
	struct gp_api_call c = rec(api, T_PID, T_TID, 3000, 100, 0);

	c.args[0] = dst;
	c.args[1] = 1;
	c.args[2] = src;
	c.args[3] = 0;
	c.args[4] = bytes;
	c.args[5] = stream;
	return c;
}

/* MEMSET: (ptr, value, count[, stream]) */
static inline struct gp_api_call rec_memset(enum gp_api_id api, __u64 ptr, __u64 bytes,
					    __u64 stream, int ret)
{
	struct gp_api_call c = rec(api, T_PID, T_TID, 3000, 10, ret);

	c.args[0] = ptr;
	c.args[1] = 0;
	c.args[2] = bytes;
	c.args[3] = stream;
	return c;
}

/* LAUNCH: (func, grid.x|grid.y<<32, grid.z, block.x|block.y<<32, block.z, args, [sp+8] smem, [sp+16] stream) */
static inline struct gp_api_call rec_launch(enum gp_api_id api, __u64 func, __u64 ret_addr,
					    const __u32 grid[3], const __u32 block[3], __u64 smem,
					    __u64 stream, int ret)
{
	struct gp_api_call c = rec(api, T_PID, T_TID, 4000, 7, ret);

	c.ret_addr = ret_addr;
	c.args[0] = func;
	c.args[1] = grid[0] | (__u64)grid[1] << 32;
	c.args[2] = grid[2];
	c.args[3] = block[0] | (__u64)block[1] << 32;
	c.args[4] = block[2];
	c.args[5] = 0x7ffc1000;
	c.args[6] = smem;
	c.args[7] = stream;
	return c;
}

/* LAUNCH_EXC: (cfg, func, args); slots 3..7 = [grid.x|grid.y], [grid.z|block.x], [block.y|block.z], smem, stream */
static inline struct gp_api_call rec_launch_exc(enum gp_api_id api, __u64 func, __u64 ret_addr,
						const __u32 grid[3], const __u32 block[3],
						__u64 smem, __u64 stream)
{
	struct gp_api_call c = rec(api, T_PID, T_TID, 4000, 9, 0);

	c.ret_addr = ret_addr;
	c.args[0] = 0x7ffc2000;
	c.args[1] = func;
	c.args[2] = 0x7ffc3000;
	c.args[3] = grid[0] | (__u64)grid[1] << 32;
	c.args[4] = grid[2] | (__u64)block[0] << 32;
	c.args[5] = block[1] | (__u64)block[2] << 32;
	c.args[6] = smem;
	c.args[7] = stream;
	return c;
}

/* Shapes with the handle in args[0] and an optional second argument (stream of EVENT_RECORD...). */
static inline struct gp_api_call rec_h(enum gp_api_id api, __u32 tid, __u64 a0, __u64 a1, __u64 dur,
				       int ret)
{
	struct gp_api_call c = rec(api, T_PID, tid, 5000, dur, ret);

	c.args[0] = a0;
	c.args[1] = a1;
	return c;
}

/* STREAM_CREATE / EVENT_CREATE: the new handle comes back through out. */
static inline struct gp_api_call rec_create(enum gp_api_id api, __u64 handle)
{
	struct gp_api_call c = rec(api, T_PID, T_TID, 500, 20, 0);

	c.args[0] = 0x7ffc4000;
	c.out = handle;
	c.hdr.flags |= GP_EVF_OUT_VALID;
	return c;
}

static inline struct gp_process *proc(struct gp_model *m, __u32 pid)
{
	struct gp_process *p = gp_u64map_get(&m->by_pid, pid);

	assert_non_null(p);
	return p;
}

/*
 * A call with the stack the unwinder walked, as the return probe writes it
 * (GP_EV_API_CALL_USTACK): n native return addresses (ips[0] the call site,
 * outermost last), then npy Python frames, innermost first, each a pair
 * (code object, instruction | GP_PYF_* << 32) in py[]; why the native walk
 * stopped, the Python walk's status, frames found by frame pointer.
 */
struct ustack {
	const __u64 *ips;
	unsigned n;
	const __u64 *py; /* 2 * npy words */
	unsigned npy;
	__u8 stop, detail, py_status, frames_fp;
};

/* A Python frame's second word */
#define PYW(instr, flags) ((__u64)(flags) << 32 | (__u32)(instr))
#define REC_LEN(a)	  (sizeof(a) / sizeof((a)[0]))
/* The stack of the arrays nat_ (native frames) and py_ (Python pairs), other fields after them */
#define USTACK(nat_, py_, ...)                      \
	(&(struct ustack){ .ips = (nat_),           \
			   .n = REC_LEN(nat_),      \
			   .py = (py_),             \
			   .npy = REC_LEN(py_) / 2, \
			   __VA_ARGS__ })
#define USTACK_NATIVE(nat_, ...) \
	(&(struct ustack){ .ips = (nat_), .n = REC_LEN(nat_), __VA_ARGS__ })

static inline size_t rec_ustack(struct gp_api_call_ustack *out, const struct gp_api_call *c,
				const struct ustack *u)
{
	memset(out, 0, sizeof(*out));
	out->call = *c;
	out->call.hdr.type = GP_EV_API_CALL_USTACK;
	out->call.hdr.size = (__u16)GP_USTACK_REC_SIZE(u->n, u->npy);
	out->call.ret_addr = u->ips[0];
	out->nframes = (__u16)u->n;
	out->npy = (__u16)u->npy;
	out->stop = u->stop;
	out->stop_detail = u->detail;
	out->py = u->py_status;
	out->frames_fp = u->frames_fp;
	memcpy(out->words, u->ips, u->n * sizeof(__u64));
	if (u->npy)
		memcpy(out->words + u->n, u->py, 2 * u->npy * sizeof(__u64));
	return GP_USTACK_REC_SIZE(u->n, u->npy);
}

/* A state of the unwind tables (gp_model_set_unwind), each count its own value. */
static inline struct gp_unwind_summary rec_unwind(void)
{
	return (struct gp_unwind_summary){
		.procs = 2,
		.procs_max = 64,
		.procs_full = 1,
		.maps = 40,
		.maps_none = 3,
		.maps_over = 4,
		.files = 12,
		.files_built = 10,
		.files_reused = 9,
		.files_evicted = 5,
		.rows = 90000,
		.rows_max = 1 << 20,
		.pool_rows = 100000,
		.build_ns = 7000000,
		.build_ns_max = 3000000,
		.build_max_file = "/usr/lib/libtorch_cuda.so",
		.fail_open = 11,
		.fail_not_elf = 13,
		.fail_no_cfi = 17,
		.fail_too_big = 19,
		.fail_pool_full = 23,
		.fail_files_full = 29,
		.fail_no_segment = 31,
		.fail_other = 37,
		.python_holds = 41,
	};
}

static inline void feed_ustack(struct gp_model *m, const struct gp_api_call *c,
			       const struct ustack *u)
{
	struct gp_api_call_ustack r;
	size_t len = rec_ustack(&r, c, u);

	assert_int_equal(gp_model_ingest(m, &r, len), 0);
}

#endif /* GP_TEST_RECORDS_H */
