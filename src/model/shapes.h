/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * shapes.h — the model's side of api.h's GP_SHAPE_TABLE: for each shape, the
 * handler gp_shape_<handler>() that folds one call of it into the model,
 * written beside the tables it changes (memory.c, transfers.c, kernels.c,
 * driver.c, nccl.c, streams.c, ingest.c). ingest.c calls it for every
 * outermost call, after the call's counts and times, and for the calls
 * made inside another traced call when the shape's "nested" is 1. What
 * every shape shares is done around it: the per-layer and per-stream
 * counts of the work the shape queues (its "queues") after it.
 */
#ifndef GP_MODEL_SHAPES_H
#define GP_MODEL_SHAPES_H

#include "model/view.h"

/* One call handed to its shape's handler. */
struct gp_shape_call {
	struct gp_model *m;
	struct gp_process *p;
	const struct gp_api_call *c;
	const char *ext; /* bytes read with it (a name, a path, arrays); NULL: none */
	__u32 ext_len;
	/* what it did, for its stack's row and the observer: preset to a sync or another call */
	struct gp_op *op;
	struct gp_stream_fx *fx; /* the stream it named, what it queued or covered */
};

/* Declared from the table: a row whose handler no file defines fails to link. */
#define GP_SHAPE_HANDLER_DECLARE(name, ck, stream, stack, agg, nested, queues, handler) \
	void gp_shape_##handler(struct gp_shape_call *x);
GP_SHAPE_TABLE(GP_SHAPE_HANDLER_DECLARE)
#undef GP_SHAPE_HANDLER_DECLARE

/* streams.c: the work a call queued (its shape's "queues") on the stream it names. */
void gp_stream_work(struct gp_process *p, const struct gp_api_call *c, struct gp_stream_fx *fx);

#endif /* GP_MODEL_SHAPES_H */
