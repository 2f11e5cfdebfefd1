/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * model_internal.h — the writers of the model's tables (view.h): the
 * functions the src/model files share to fold calls in. Included by
 * src/model only; readers include model/view.h.
 */
#ifndef GP_MODEL_INTERNAL_H
#define GP_MODEL_INTERNAL_H

#include "model/model_ops.h"
#include "model/shapes.h"
#include "model/view.h"

/* ---- what only the writers use: ingest scratch, pending work, waiting calls, indexes ------ */
/* The latest work queued on a stream and not yet synchronised (streams.c). */
struct gp_pending_work {
	__u64 stream_key;
	__u64 ts_ns; /* entry of the call that queued it */
	enum gp_work_kind kind;
	__u32 ops_since_sync; /* work items queued on the stream since its last synchronisation */
	struct gp_nccl_row *coll; /* GP_WORK_COLL: its (communicator, op) row */
	__u64 coll_bytes;
	struct gp_nccl_comm *coll_comm; /* GP_WORK_COLL: its communicator and seq (0: none) */
	__u64 coll_seq;
	/* work items numbered per stream from 0: [synced_seq, queued_seq) not yet synchronised */
	__u64 queued_seq;
	__u64 synced_seq;
};

struct gp_queued {
	struct gp_u64map by_stream; /* stream key -> struct gp_pending_work */
	struct gp_u64map by_event;  /* event handle -> stream key of its latest record */
	/* what the last synchronisation covered, for the observers (grown as needed, reused) */
	struct gp_sync_cover *covers;
	size_t ncovers, covers_cap;
};

/* What a call did to the streams (streams.c), for the observers. */
struct gp_stream_fx {
	bool has_stream;
	__u64 stream;
	bool queued;
	__u64 queue_seq;
	bool sync; /* p->writer->queued.covers[0 .. ncovers) is what it covered */
};

/* An inner call waiting for its outer call (nesting.c). */
struct gp_nested_wait {
	__u64 ts, end;
	__u32 tid;
	__s32 ret;
	__u16 api, outer;
};

struct gp_ksite { /* one (func, ret_addr) launch site, chained on hash collision */
	__u64 func;
	__u64 ret_addr;
	struct gp_kernel *kernel;
	struct gp_ksite *next;
};

/* A stack as a record brings it (either kind of stack record). */
struct gp_stack_view {
	const __u64 *ips;
	unsigned nframes;
	const __u64 *py; /* npy pairs: code object, instruction | GP_PYF_* << 32 */
	unsigned npy;
	__u8 stop; /* enum gp_stack_stop */
	__u8 detail;
	__u8 py_status;
	__u8 frames_fp;
};

/* A process's writers' own state (p->writer). */
struct gp_process_writer {
	struct gp_queued queued; /* per stream: its latest work not yet synchronised */
	/* inner calls whose outer call has not returned (nesting.c), oldest first: [p->nwaiting] */
	struct gp_nested_wait *waiting;
	size_t waiting_cap;
	struct gp_u64map ksites;   /* hash(func, ret_addr) -> struct gp_ksite chain */
	struct gp_u64map khandles; /* nvcc kernel handle -> host function (from __cudaGetKernel) */
	struct gp_u64map kregs; /* host function -> char * name, mangled (__cudaRegisterFunction) */
	struct gp_u64map fnames; /* CUfunction / CUkernel handle -> char * mangled kernel name */
};

/* The model's writers' own state (m->writer). */
struct gp_model_writer {
	struct gp_model_tap tap; /* sees every operation (model_ops.c) */
	struct gp_model_observer observers[GP_MODEL_OBSERVERS_MAX]; /* in the order added */
	size_t nobservers;
	char *name_buf; /* resolver output buffers, GP_NAME_BUF bytes each */
	char *mangled_buf;
	const __u64 *cur_ips; /* the stack of the record being ingested (NULL: none) */
	unsigned cur_nips;
	size_t max_stacks; /* distinct stacks kept, all processes together */
	size_t nstacks;
};

/* model.c */
char *gp_dup_str(const char *s); /* strdup that maps NULL to "": readers never see NULL */
int gp_replace_str(char **dst, const char *src); /* *dst replaced by gp_dup_str(src); -ENOMEM */
struct gp_process *gp_model_process_get(struct gp_model *m,
					__u32 pid); /* creates it; NULL on ENOMEM */
struct gp_thread *gp_process_thread_get(struct gp_process *p, __u32 tid); /* creates it */
void gp_model_drop_add(struct gp_model *m, const char *name, __u64 n);

/* session_info.c */
void gp_session_release(struct gp_model *m); /* the session's tables freed (gp_model_free) */

/* memory.c */
void gp_gpus_release(struct gp_gpus *g); /* gpus.c */
void gp_memory_release(struct gp_memory *mem);
int gp_memory_alloc(struct gp_process *p, const struct gp_api_call *c, enum gp_alloc_kind kind,
		    __u64 ptr, __u64 bytes, __s32 device);
void gp_memory_free(struct gp_process *p, enum gp_alloc_kind kind, __u64 ptr);
/* A VMM physical allocation created (or released): device memory of device. */
void gp_memory_vmm(struct gp_process *p, __u64 bytes, __s32 device, bool create);

/* kernels.c */
void gp_kernels_release(struct gp_process *p);

/* nesting.c: calls made inside another traced call */
/*
 * An inner call of outer API `outer`: listed when a call of its thread that
 * covers it returns (wait), else now (its outer call writes no record).
 */
void gp_api_nested(struct gp_process *p, const struct gp_api_call *c, __u16 outer, bool wait);
/* An outermost call of tid over [ts, end] returned: the inner calls waiting on it are listed. */
void gp_api_outer_returned(struct gp_process *p, __u32 tid, __u64 ts, __u64 end);

/* driver.c: module / function handles, VMM */
void gp_driver_release(struct gp_process *p);

/* nccl.c */
void gp_nccl_release(struct gp_process *p);
void gp_nccl_stalls_release(struct gp_model *m);
/* A synchronisation that awaited collective seq (1-based) of comm returned at ns (the first one counts). */
void gp_nccl_released(struct gp_nccl_comm *comm, __u64 seq, __u64 ns);

/* streams.c */
struct gp_stream *gp_stream_get(struct gp_process *p, __u64 key); /* creates it; NULL on ENOMEM */
/* A collective queued on its stream (its row in nccl.c; comm's collective seq, 0: a Send/Recv). */
void gp_stream_collective(struct gp_process *p, const struct gp_api_call *c,
			  struct gp_nccl_row *row, __u64 bytes, struct gp_nccl_comm *comm,
			  __u64 seq, struct gp_stream_fx *fx);
void gp_queued_release(struct gp_queued *q);

/* stacks.c */
/* A call that came with its stack; the stack's row (the overflow row when full), NULL without memory. */
const struct gp_stack *gp_stacks_add(struct gp_model *m, struct gp_process *p,
				     const struct gp_api_call *c, const struct gp_op *op,
				     const struct gp_stack_view *v);
void gp_stacks_release(struct gp_stacks *s);

/* cpu.c */
void gp_cpu_call(struct gp_process *p, struct gp_thread *t, struct gp_api_stats *st,
		 const struct gp_api_call *c);
int gp_cpu_thread_record(struct gp_model *m, const struct gp_thread_cpu *r);

/* Hands an operation (model_ops.h: gp_model_tap_<name>(m, &fields)) to the tap, if any. */
#define GP_OP_TAP_DECLARE(num, NAME, name) \
	void gp_model_tap_##name(struct gp_model *m, const struct gp_op_##name *v);
GP_MODEL_OP_TABLE(GP_OP_TAP_DECLARE)
#undef GP_OP_TAP_DECLARE

#endif /* GP_MODEL_INTERNAL_H */
