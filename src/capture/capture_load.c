/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* capture_load.c — a capture's operations applied to a model (capture_load.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_load.h"
#include "model/model_ops.h"

/*
 * The model reads a record in place, through its struct (ring-buffer records
 * are 8-byte aligned); in a chunk a record lies wherever the operations
 * before it ended, so an unaligned one is copied first.
 */
static int ingest_aligned(struct gp_model *m, const void *data, size_t len)
{
	union {
		struct gp_api_call_ext x;
		struct gp_api_call_stack s;
	} small;
	void *buf = &small;

	if ((uintptr_t)data % _Alignof(typeof(small)) == 0) {
		gp_model_ingest(m, data, len);
		return 0;
	}
	if (len > sizeof(small) && !(buf = malloc(len)))
		return -ENOMEM;
	memcpy(buf, data, len);
	gp_model_ingest(m, buf, len);
	if (buf != &small)
		free(buf);
	return 0;
}

int gp_capture_apply(struct gp_model *m, struct gp_answers *as, unsigned op, const void *data, size_t len)
{
	union gp_op_val v[GP_OP_MAX_FIELDS];
	struct gp_session_info info;

	if (op == GP_MOP_KERNEL_NAME || op == GP_MOP_SYMBOL)
		return gp_answers_add(as, op, data, len);
	if (gp_op_unpack(op, data, len, v))
		return -EINVAL;
	switch (op) {
	case GP_MOP_SESSION:
		info = (struct gp_session_info){ .tool_version = v[0].s, .command_line = v[1].s, .mode = v[2].s,
						 .hostname = v[3].s, .kernel_release = v[4].s,
						 .start_mono_ns = v[5].u, .start_realtime_ns = v[6].u };
		gp_model_set_session(m, &info);
		break;
	case GP_MOP_SESSION_END:
		gp_model_set_session_end(m, v[0].u);
		break;
	case GP_MOP_PROCESS_ADD:
		gp_model_process_add(m, (__u32)v[0].u, v[1].s, v[2].s, v[3].u, v[4].u);
		break;
	case GP_MOP_PROCESS_EXITED:
		gp_model_process_exited(m, (__u32)v[0].u, v[1].u);
		break;
	case GP_MOP_PROCESS_ORIGIN:
		gp_model_process_origin(m, (__u32)v[0].u, v[1].s, (__u32)v[2].u);
		break;
	case GP_MOP_PROCESS_EXEC:
		gp_model_process_exec(m, (__u32)v[0].u, v[1].s, v[2].s);
		break;
	case GP_MOP_SKIPPED:
		gp_model_skipped_add(m, (__u32)v[0].u, v[1].s, v[2].s);
		break;
	case GP_MOP_LAUNCH:
		gp_model_set_launch(m, v[0].s, v[1].u, (int)v[2].i, (int)v[3].i);
		break;
	case GP_MOP_LIBRARY:
		if (v[2].u < GP_FAM_CUDART || v[2].u > GP_FAM_NCCL)
			return -EINVAL;
		gp_model_library_add(m, (__u32)v[0].u, v[1].s, (enum gp_family)v[2].u, v[3].u, v[4].s);
		break;
	case GP_MOP_THREAD_NAME:
		gp_model_thread_name(m, (__u32)v[0].u, (__u32)v[1].u, v[2].s);
		break;
	case GP_MOP_PROBE_ADD:
		if (v[5].u >= GP_API_MAX)
			return -EINVAL;
		gp_model_probe_add(m, (unsigned)v[0].u, v[1].s, (__u32)v[2].u, v[3].s, v[4].u, (enum gp_api_id)v[5].u);
		break;
	case GP_MOP_PROBE_HITS:
		gp_model_probe_hits(m, (unsigned)v[0].u, v[1].u, v[2].u);
		break;
	case GP_MOP_DROP_SET:
		if (!v[0].s)
			return -EINVAL;
		gp_model_drop_set(m, v[0].s, v[1].u);
		break;
	case GP_MOP_STACKS:
		gp_model_set_stacks(m, v[0].u, (size_t)v[1].u);
		break;
	case GP_MOP_INGEST:
		/* a malformed record is counted by the model, as live */
		return ingest_aligned(m, v[0].r.p, v[0].r.n);
	case GP_MOP_API_AGGREGATE: {
		struct gp_api_aggregate a;

		if (v[0].r.n != sizeof(a))
			return -EINVAL;
		memcpy(&a, v[0].r.p, sizeof(a)); /* unaligned in the chunk */
		gp_model_api_aggregate(m, &a);
		break;
	}
	case GP_MOP_API_ESTIMATED:
		gp_model_api_estimated(m, (__u32)v[0].u, (unsigned)v[1].u, v[2].u);
		break;
	case GP_MOP_SAMPLING: {
		struct gp_sampling smp;

		if (v[0].r.n != sizeof(smp))
			return -EINVAL;
		memcpy(&smp, v[0].r.p, sizeof(smp));
		gp_model_set_sampling(m, &smp);
		break;
	}
	case GP_MOP_PROBE_COST:
		gp_model_set_probe_cost(m, v[0].u);
		break;
	case GP_MOP_SYMBOLIZE:
		gp_model_symbolize_stacks(m, NULL);
		break;
	case GP_MOP_MAPS:
		return 1;
	default:
		return -EINVAL;
	}
	return 0;
}

int gp_capture_load(struct gp_capture_reader *r, struct gp_model *m, struct gp_answers *as,
		    struct gp_capture_load_stats *st)
{
	unsigned op;
	const void *data;
	size_t len;
	int rc;

	*st = (struct gp_capture_load_stats){ 0 };
	while ((rc = gp_capture_next(r, &op, &data, &len)) > 0) {
		int err = gp_capture_apply(m, as, op, data, len);

		if (err < 0)
			st->malformed++;
		else if (err > 0)
			st->ignored++;
		else if (op == GP_MOP_KERNEL_NAME || op == GP_MOP_SYMBOL)
			st->answers++;
		else
			st->applied++;
	}
	return rc;
}

void gp_capture_finish(struct gp_model *m, const struct gp_capture_reader *r, const char *path)
{
	const struct gp_capture_stats *cs = gp_capture_stats(r);

	if (!cs->complete && !gp_model_session_ended(m))
		gp_model_set_session_end(m, gp_model_last_event_ns(m)); /* cut: it ends there */
	gp_model_symbolize_stacks(m, NULL);
	gp_model_set_source(m, &(struct gp_report_source){
				       .kind = "capture", .capture_file = path, .ops = cs->ops, .chunks = cs->chunks,
				       .corrupt_chunks = cs->corrupt_chunks, .complete = cs->complete,
				       .cut = cs->complete ? NULL : cs->cut,
				       .corruption = cs->corrupt_chunks ? cs->corruption : NULL });
}
