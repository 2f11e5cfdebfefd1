/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture_load.c — a capture's operations applied to a model (capture_load.h):
 * each operation unpacked (model_ops.h) and handed to the step that owns its
 * kind (records, processes, session, kernel, holds, GPU, NCCL stalls).
 */
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
		struct gp_api_call_ustack u;
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

/* Every operation's fields (model_ops.h), one at a time. */
union op_fields {
#define GP_OP_MEMBER(num, NAME, name) struct gp_op_##name name;
	GP_MODEL_OP_TABLE(GP_OP_MEMBER)
#undef GP_OP_MEMBER
};

/* A step's answer for an operation that is not one of its own. */
#define NOT_HERE 2

#define UNPACK(name)                                         \
	do {                                                 \
		if (gp_op_unpack_##name(data, len, &u.name)) \
			return -EINVAL;                      \
	} while (0)

/* The calls and what counts them: records, kernel aggregates, duty cycle, stacks, loss counters. */
static int apply_record(struct gp_model *m, unsigned op, const void *data, size_t len)
{
	union op_fields u;

	switch (op) {
	case GP_MOP_INGEST:
		UNPACK(ingest);
		/* a malformed record is counted by the model, as live */
		return ingest_aligned(m, u.ingest.record.p, u.ingest.record.n);
	case GP_MOP_API_AGGREGATE: {
		struct gp_api_aggregate a;

		UNPACK(api_aggregate);
		if (u.api_aggregate.aggregate.n != sizeof(a))
			return -EINVAL;
		memcpy(&a, u.api_aggregate.aggregate.p, sizeof(a)); /* unaligned in the chunk */
		gp_model_api_aggregate(m, &a);
		break;
	}
	case GP_MOP_API_ESTIMATED:
		UNPACK(api_estimated);
		gp_model_api_estimated(m, u.api_estimated.pid, u.api_estimated.api,
				       u.api_estimated.calls);
		break;
	case GP_MOP_SAMPLING: {
		struct gp_sampling smp;

		UNPACK(sampling);
		if (u.sampling.sampling.n != sizeof(smp))
			return -EINVAL;
		memcpy(&smp, u.sampling.sampling.p, sizeof(smp));
		gp_model_set_sampling(m, &smp);
		break;
	}
	case GP_MOP_STACKS:
		UNPACK(stacks);
		gp_model_set_stacks(m, u.stacks.captured, (size_t)u.stacks.max_stacks);
		break;
	case GP_MOP_SYMBOLIZE:
		UNPACK(symbolize);
		gp_model_symbolize_stacks(m, NULL);
		break;
	case GP_MOP_DROP_SET:
		UNPACK(drop_set);
		if (!u.drop_set.name)
			return -EINVAL;
		gp_model_drop_set(m, u.drop_set.name, u.drop_set.count);
		break;
	case GP_MOP_MAPS:
		UNPACK(maps);
		return 1;
	default:
		return NOT_HERE;
	}
	return 0;
}

/* The processes: admitted, exited, origin, execs, places, Python, libraries, threads, probes. */
static int apply_process(struct gp_model *m, unsigned op, const void *data, size_t len)
{
	union op_fields u;

	switch (op) {
	case GP_MOP_PROCESS_ADD:
		UNPACK(process_add);
		gp_model_process_add(m, u.process_add.pid, u.process_add.comm,
				     u.process_add.cmdline, u.process_add.attach_mono_ns,
				     u.process_add.traced_from_start);
		break;
	case GP_MOP_PROCESS_EXITED:
		UNPACK(process_exited);
		gp_model_process_exited(m, u.process_exited.pid, u.process_exited.exit_mono_ns);
		break;
	case GP_MOP_PROCESS_ORIGIN:
		UNPACK(process_origin);
		gp_model_process_origin(m, u.process_origin.pid, u.process_origin.because,
					u.process_origin.parent_pid);
		break;
	case GP_MOP_PROCESS_EXEC:
		UNPACK(process_exec);
		gp_model_process_exec(m, u.process_exec.pid, u.process_exec.comm,
				      u.process_exec.cmdline);
		break;
	case GP_MOP_PROCESS_PLACE:
		UNPACK(process_place);
		gp_model_process_place(m, &u.process_place);
		break;
	case GP_MOP_PROCESS_PYTHON:
		UNPACK(process_python);
		gp_model_process_python(m, u.process_python.pid, u.process_python.hexversion,
					u.process_python.walked, u.process_python.note);
		break;
	case GP_MOP_LIBRARY:
		UNPACK(library);
		if (u.library.family < GP_FAM_CUDART || u.library.family > GP_FAM_NCCL)
			return -EINVAL;
		gp_model_library_add(m, u.library.pid, u.library.path,
				     (enum gp_family)u.library.family, u.library.is_static,
				     u.library.build_id);
		break;
	case GP_MOP_THREAD_NAME:
		UNPACK(thread_name);
		gp_model_thread_name(m, u.thread_name.pid, u.thread_name.tid, u.thread_name.name);
		break;
	case GP_MOP_PROBE_ADD:
		UNPACK(probe_add);
		if (u.probe_add.api >= GP_API_MAX)
			return -EINVAL;
		gp_model_probe_add(m, u.probe_add.idx, u.probe_add.target, u.probe_add.pid,
				   u.probe_add.symbol, u.probe_add.file_offset,
				   (enum gp_api_id)u.probe_add.api);
		break;
	case GP_MOP_PROBE_HITS:
		UNPACK(probe_hits);
		gp_model_probe_hits(m, u.probe_hits.idx, u.probe_hits.entry_hits,
				    u.probe_hits.return_hits);
		break;
	default:
		return NOT_HERE;
	}
	return 0;
}

/* The session itself: what it was, when it ended, what probes cost, the launch, the skipped. */
static int apply_session(struct gp_model *m, unsigned op, const void *data, size_t len)
{
	union op_fields u;

	switch (op) {
	case GP_MOP_SESSION:
		UNPACK(session);
		gp_model_set_session(m, &(struct gp_session_info){
						.tool_version = u.session.tool_version,
						.command_line = u.session.command_line,
						.mode = u.session.mode,
						.hostname = u.session.hostname,
						.kernel_release = u.session.kernel_release,
						.start_mono_ns = u.session.start_mono_ns,
						.start_realtime_ns = u.session.start_realtime_ns });
		break;
	case GP_MOP_SESSION_END:
		UNPACK(session_end);
		gp_model_set_session_end(m, u.session_end.end_mono_ns);
		break;
	case GP_MOP_PROBE_COST:
		UNPACK(probe_cost);
		gp_model_set_probe_cost(m, u.probe_cost.probe_hit_ns);
		break;
	case GP_MOP_PROBE_CALL_COST:
		UNPACK(probe_call_cost);
		gp_model_set_probe_call_cost(m, u.probe_call_cost.probe_call_ns);
		break;
	case GP_MOP_LAUNCH:
		UNPACK(launch);
		gp_model_set_launch(m, u.launch.command, u.launch.exited, u.launch.exit_status,
				    u.launch.term_signal);
		break;
	case GP_MOP_SKIPPED:
		UNPACK(skipped);
		gp_model_skipped_add(m, u.skipped.pid, u.skipped.comm, u.skipped.reason);
		break;
	default:
		return NOT_HERE;
	}
	return 0;
}

/* What the kernel offered: its features and their stand-ins, the probes' removal, unwind tables. */
static int apply_kernel(struct gp_model *m, unsigned op, const void *data, size_t len)
{
	union op_fields u;

	switch (op) {
	case GP_MOP_KERNEL:
		UNPACK(kernel);
		if (gp_model_set_kernel(m, u.kernel.features, u.kernel.perf_event_paranoid))
			return -ENOMEM;
		break;
	case GP_MOP_KERNEL_REPLACED:
		UNPACK(kernel_replaced);
		if (gp_model_kernel_replaced(m, u.kernel_replaced.feature, u.kernel_replaced.since,
					     u.kernel_replaced.by, u.kernel_replaced.cost,
					     u.kernel_replaced.by_request))
			return -ENOMEM;
		break;
	case GP_MOP_PROBE_REMOVAL:
		UNPACK(probe_removal);
		gp_model_set_probe_removal(m, u.probe_removal.probes, u.probe_removal.ns);
		break;
	case GP_MOP_PROBE_REMOVER:
		UNPACK(probe_remover);
		gp_model_set_probe_remover(m, (pid_t)u.probe_remover.pid);
		break;
	case GP_MOP_UNWIND: {
		const struct gp_op_unwind *w = &u.unwind;

		UNPACK(unwind);
		gp_model_set_unwind(
			m, &(struct gp_unwind_summary){ .procs = w->procs,
							.procs_max = w->procs_max,
							.procs_full = w->procs_full,
							.maps = w->maps,
							.maps_none = w->maps_none,
							.maps_over = w->maps_over,
							.files = w->files,
							.files_built = w->files_built,
							.files_reused = w->files_reused,
							.files_evicted = w->files_evicted,
							.rows = w->rows,
							.rows_max = w->rows_max,
							.pool_rows = w->pool_rows,
							.build_ns = w->build_ns,
							.build_ns_max = w->build_ns_max,
							.build_max_file = w->build_max_file,
							.fail_open = w->fail_open,
							.fail_not_elf = w->fail_not_elf,
							.fail_no_cfi = w->fail_no_cfi,
							.fail_too_big = w->fail_too_big,
							.fail_pool_full = w->fail_pool_full,
							.fail_files_full = w->fail_files_full,
							.fail_no_segment = w->fail_no_segment,
							.fail_other = w->fail_other,
							.python_holds = w->python_holds });
		break;
	}
	default:
		return NOT_HERE;
	}
	return 0;
}

/* The holds: their summary, each file's, each one that timed out. */
static int apply_holds(struct gp_model *m, unsigned op, const void *data, size_t len)
{
	union op_fields u;

	switch (op) {
	case GP_MOP_HOLDS:
		UNPACK(holds);
		gp_model_set_holds(
			m, &(struct gp_holds_summary){ .holds = u.holds.holds,
						       .total_ns = u.holds.total_ns,
						       .max_ns = u.holds.max_ns,
						       .timed_out = u.holds.timed_out,
						       .exec = u.holds.exec,
						       .map = u.holds.map,
						       .python = u.holds.python,
						       .files_left_out = u.holds.files_left_out });
		break;
	case GP_MOP_HOLD_FILE:
		UNPACK(hold_file);
		if (gp_model_hold_file(m, u.hold_file.dev, u.hold_file.ino, u.hold_file.reason,
				       u.hold_file.path, u.hold_file.holds, u.hold_file.total_ns,
				       u.hold_file.max_ns))
			return -ENOMEM;
		break;
	case GP_MOP_HOLD_TIMEOUT:
		UNPACK(hold_timeout);
		if (gp_model_hold_timeout(m, u.hold_timeout.pid, u.hold_timeout.reason,
					  u.hold_timeout.held_ns))
			return -ENOMEM;
		break;
	default:
		return NOT_HERE;
	}
	return 0;
}

/* The GPU's side: NVML's state, devices, samples, processes, failed calls. */
static int apply_gpu(struct gp_model *m, unsigned op, const void *data, size_t len)
{
	union op_fields u;

	switch (op) {
	case GP_MOP_GPU_NVML:
		UNPACK(gpu_nvml);
		gp_model_gpu_nvml(m, u.gpu_nvml.state, u.gpu_nvml.note, u.gpu_nvml.driver,
				  u.gpu_nvml.interval_ns, u.gpu_nvml.sampler_cpu_ns);
		break;
	case GP_MOP_GPU_DEVICE:
		UNPACK(gpu_device);
		if (gp_model_gpu_device(m, u.gpu_device.index, u.gpu_device.name, u.gpu_device.uuid,
					u.gpu_device.memory_total))
			return -ENOMEM;
		break;
	case GP_MOP_GPU_SAMPLE: {
		struct gp_gpu_sample gs;

		UNPACK(gpu_sample);
		if (u.gpu_sample.sample.n != sizeof(gs))
			return -EINVAL;
		memcpy(&gs, u.gpu_sample.sample.p, sizeof(gs));
		if (gp_model_gpu_sample(m, &gs))
			return -ENOMEM;
		break;
	}
	case GP_MOP_GPU_PROCESS:
		UNPACK(gpu_process);
		if (gp_model_gpu_process(m, u.gpu_process.index, u.gpu_process.pid,
					 u.gpu_process.mono_ns, u.gpu_process.used_memory,
					 u.gpu_process.sm_util, u.gpu_process.mem_util))
			return -ENOMEM;
		break;
	case GP_MOP_GPU_ERROR:
		UNPACK(gpu_error);
		if (gp_model_gpu_error(m, u.gpu_error.index, u.gpu_error.call, u.gpu_error.code,
				       u.gpu_error.text, u.gpu_error.mono_ns))
			return -ENOMEM;
		break;
	default:
		return NOT_HERE;
	}
	return 0;
}

/* NCCL stalls and the ranks behind them. */
static int apply_nccl(struct gp_model *m, unsigned op, const void *data, size_t len)
{
	union op_fields u;

	switch (op) {
	case GP_MOP_NCCL_STALL: {
		const struct gp_op_nccl_stall *st = &u.nccl_stall;
		__s32 ranks[GP_NCCL_STALL_RANKS_MAX];
		size_t n;

		UNPACK(nccl_stall);
		if (st->waiting.n % sizeof(__s32) || st->waiting.n > sizeof(ranks))
			return -EINVAL;
		n = st->waiting.n / sizeof(__s32);
		memcpy(ranks, st->waiting.p, st->waiting.n); /* unaligned in the payload */
		if (gp_model_nccl_stall(m, st->comm_id, st->seq, st->op, st->bytes, st->waited_ns,
					st->mono_ns, ranks, n))
			return -ENOMEM;
		break;
	}
	case GP_MOP_NCCL_STALL_BEHIND: {
		const struct gp_op_nccl_stall_behind *b = &u.nccl_stall_behind;
		int err;

		UNPACK(nccl_stall_behind);
		err = gp_model_nccl_stall_behind(m, b->comm_id, b->seq, b->rank, b->pid,
						 b->last_seq, b->state);
		if (err)
			return err;
		break;
	}
	default:
		return NOT_HERE;
	}
	return 0;
}

#undef UNPACK

int gp_capture_apply(struct gp_model *m, struct gp_answers *as, unsigned op, const void *data,
		     size_t len)
{
	/* the records first: nearly every operation of a capture is one */
	static int (*const steps[])(struct gp_model *, unsigned, const void *, size_t) = {
		apply_record, apply_process, apply_session, apply_kernel,
		apply_holds,  apply_gpu,     apply_nccl,
	};
	int rc;

	switch (op) {
	case GP_MOP_KERNEL_NAME:
	case GP_MOP_SYMBOL:
	case GP_MOP_PY_FRAME: /* the resolver's answers, kept for the operations that ask */
		return gp_answers_add(as, op, data, len);
	}
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if ((rc = steps[i](m, op, data, len)) != NOT_HERE)
			return rc;
	/* no step's: a newer gpuprobed's operation (tests/unit/test_capture.c: every row has a step) */
	return -ENOSYS;
}

void gp_capture_load_count(struct gp_capture_load_stats *st, unsigned op, int err)
{
	if (err < 0)
		st->malformed++;
	else if (err > 0)
		st->ignored++;
	else if (gp_model_op_is_answer(op))
		st->answers++;
	else
		st->applied++;
}

int gp_capture_load(struct gp_capture_reader *r, struct gp_model *m, struct gp_answers *as,
		    struct gp_capture_load_stats *st)
{
	unsigned op;
	const void *data;
	size_t len;
	int rc;

	*st = (struct gp_capture_load_stats){ 0 };
	while ((rc = gp_capture_next(r, &op, &data, &len)) > 0)
		gp_capture_load_count(st, op, gp_capture_apply(m, as, op, data, len));
	return rc;
}

void gp_capture_finish(struct gp_model *m, const struct gp_capture_reader *r, const char *path)
{
	const struct gp_capture_stats *cs = gp_capture_stats(r);

	if (!cs->complete && !gp_model_session_ended(m))
		gp_model_set_session_end(m, gp_model_last_event_ns(m)); /* cut: it ends there */
	gp_model_symbolize_stacks(m, NULL);
	gp_model_set_source(m, &(struct gp_report_source){
				       .kind = "capture",
				       .capture_file = path,
				       .ops = cs->ops,
				       .chunks = cs->chunks,
				       .corrupt_chunks = cs->corrupt_chunks,
				       .complete = cs->complete,
				       .cut = cs->complete ? NULL : cs->cut,
				       .corruption = cs->corrupt_chunks ? cs->corruption : NULL });
}
