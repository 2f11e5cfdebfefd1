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

/* model.c */
struct gp_process *gp_model_process_get(struct gp_model *m, __u32 pid); /* creates it; NULL on ENOMEM */
struct gp_thread *gp_process_thread_get(struct gp_process *p, __u32 tid); /* creates it */
void gp_model_drop_add(struct gp_model *m, const char *name, __u64 n);

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
void gp_stream_collective(struct gp_process *p, const struct gp_api_call *c, struct gp_nccl_row *row, __u64 bytes,
			  struct gp_nccl_comm *comm, __u64 seq, struct gp_stream_fx *fx);
void gp_pending_release(struct gp_pending *pd);

/* stacks.c */
/* A call that came with its stack; the stack's row (the overflow row when full), NULL without memory. */
const struct gp_stack *gp_stacks_add(struct gp_model *m, struct gp_process *p, const struct gp_api_call *c,
				     const struct gp_op *op, const struct gp_stack_view *v);
void gp_stacks_release(struct gp_stacks *s);

/* cpu.c */
void gp_cpu_call(struct gp_process *p, struct gp_thread *t, struct gp_api_stats *st,
		 const struct gp_api_call *c);
int gp_cpu_thread_record(struct gp_model *m, const struct gp_thread_cpu *r);


/* Hands an operation (model_ops.h: gp_model_tap_<name>(m, &fields)) to the tap, if any. */
#define GP_OP_TAP_DECLARE(num, NAME, name) void gp_model_tap_##name(struct gp_model *m, const struct gp_op_##name *v);
GP_MODEL_OP_TABLE(GP_OP_TAP_DECLARE)
#undef GP_OP_TAP_DECLARE

#endif /* GP_MODEL_INTERNAL_H */
