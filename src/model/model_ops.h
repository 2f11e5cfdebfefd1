/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * model_ops.h — every call that changes the model, as a serialized
 * operation. A tap (gp_model_set_tap) sees each one as it happens; the
 * capture file stores them (docs/capture-format.md), and loading a capture
 * applies them, in order, to a fresh model, which then holds exactly what
 * the live one held: same calls, same arguments, same resolver answers.
 *
 * Encoding of an operation's payload, field by field in the order of its
 * format string (gp_model_op_format), little-endian, unaligned:
 *   'u' u32   'U' u64   'i' s32   'b' u8 (0 or 1)
 *   's' string: u32 n, then n bytes of which the last is NUL; n == 0 is NULL
 *   'r' the rest of the payload, raw (last field only)
 */
#ifndef GP_MODEL_OPS_H
#define GP_MODEL_OPS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/*
 * Every operation, in one table: its number (the capture format's, never
 * changed), NAME, name, and its fields (GP_OPF_<NAME>: kind and name, in
 * encoding order). From it come the enum, a struct per operation
 * (struct gp_op_<name>), its typed packer and unpacker
 * (gp_op_pack_<name>, gp_op_unpack_<name>), the model's typed tap
 * (gp_model_tap_<name>, model_internal.h) and the format string.
 * Field kinds: U32 'u', U64 'U', S32 'i', BOOL 'b', STR 's', RAW 'r' (the
 * rest of the payload; last field only).
 */
#define GP_MODEL_OP_TABLE(X)                                                                                   \
	/* applied by the model's public functions (model.h) */                                                \
	X(1, SESSION, session)                                                                                 \
	X(2, SESSION_END, session_end)                                                                         \
	X(3, PROCESS_ADD, process_add)                                                                         \
	X(4, PROCESS_EXITED, process_exited)                                                                   \
	X(5, PROCESS_ORIGIN, process_origin)                                                                   \
	X(6, PROCESS_EXEC, process_exec)                                                                       \
	X(7, SKIPPED, skipped)                                                                                 \
	X(8, LAUNCH, launch)                                                                                   \
	X(9, LIBRARY, library)                                                                                 \
	X(10, THREAD_NAME, thread_name)                                                                        \
	X(11, PROBE_ADD, probe_add)                                                                            \
	X(12, PROBE_HITS, probe_hits)                                                                          \
	X(13, DROP_SET, drop_set)                                                                              \
	X(14, STACKS, stacks)                                                                                  \
	X(15, INGEST, ingest)                                                                                  \
	X(16, SYMBOLIZE, symbolize)                                                                            \
	/* the resolver's answers, recorded by the capture (applied by nobody: looked up) */                   \
	X(17, KERNEL_NAME, kernel_name)                                                                        \
	X(18, SYMBOL, symbol)                                                                                  \
	/* what the capture adds about processes, for readers of the file (not needed by the model) */         \
	X(19, MAPS, maps)                                                                                      \
	X(20, END, end)                                                                                        \
	/* after END: the numbers above are the capture format's and never change */                           \
	X(21, API_AGGREGATE, api_aggregate)                                                                    \
	X(22, API_ESTIMATED, api_estimated)                                                                    \
	X(23, SAMPLING, sampling)                                                                              \
	X(24, PROBE_COST, probe_cost)                                                                          \
	X(25, PROBE_CALL_COST, probe_call_cost)                                                                \
	X(26, PY_FRAME, py_frame) /* a resolver's answer, as KERNEL_NAME and SYMBOL */                         \
	X(27, PROCESS_PYTHON, process_python)                                                                  \
	X(28, UNWIND, unwind)                                                                                  \
	X(29, HOLDS, holds)                                                                                    \
	X(30, HOLD_TIMEOUT, hold_timeout)                                                                      \
	X(31, HOLD_FILE, hold_file)                                                                            \
	/* NVML (src/gpu/): the library's state, each device, its samples, processes, failed calls */          \
	X(32, GPU_NVML, gpu_nvml)                                                                              \
	X(33, GPU_DEVICE, gpu_device)                                                                          \
	X(34, GPU_SAMPLE, gpu_sample)                                                                          \
	X(35, GPU_PROCESS, gpu_process)                                                                        \
	X(36, GPU_ERROR, gpu_error)                                                                            \
	/* NCCL stalls said live (src/session/stalls.c) */                                                     \
	X(37, NCCL_STALL, nccl_stall)                                                                          \
	X(38, NCCL_STALL_BEHIND, nccl_stall_behind)                                                            \
	/* what the kernel offers (src/probes/kernel_features.c), and what removing the probes cost */         \
	X(39, KERNEL, kernel)                                                                                  \
	X(40, KERNEL_REPLACED, kernel_replaced)                                                                \
	X(41, PROBE_REMOVAL, probe_removal)                                                                    \
	/* where a process runs: its pid namespace, container and pod (src/processes/containers.h) */          \
	X(42, PROCESS_PLACE, process_place)                                                                    \
	/* the process left to remove the probes after the session (perf-event links: src/probes/uprobes.h) */ \
	X(43, PROBE_REMOVER, probe_remover)

/* The operations' fields, one operation a line as the table reads (clang-format would reflow them). */
/* clang-format off */
#define GP_OPF_SESSION(F) F(STR, tool_version) F(STR, command_line) F(STR, mode) F(STR, hostname) \
	F(STR, kernel_release) F(U64, start_mono_ns) F(U64, start_realtime_ns)
#define GP_OPF_SESSION_END(F) F(U64, end_mono_ns)
#define GP_OPF_PROCESS_ADD(F) F(U32, pid) F(STR, comm) F(STR, cmdline) F(U64, attach_mono_ns) F(BOOL, traced_from_start)
#define GP_OPF_PROCESS_EXITED(F) F(U32, pid) F(U64, exit_mono_ns)
#define GP_OPF_PROCESS_ORIGIN(F) F(U32, pid) F(STR, because) F(U32, parent_pid)
#define GP_OPF_PROCESS_EXEC(F) F(U32, pid) F(STR, comm) F(STR, cmdline)
#define GP_OPF_SKIPPED(F) F(U32, pid) F(STR, comm) F(STR, reason)
#define GP_OPF_LAUNCH(F) F(STR, command) F(BOOL, exited) F(S32, exit_status) F(S32, term_signal)
#define GP_OPF_LIBRARY(F) F(U32, pid) F(STR, path) F(U32, family) F(BOOL, is_static) F(STR, build_id)
#define GP_OPF_THREAD_NAME(F) F(U32, pid) F(U32, tid) F(STR, name)
#define GP_OPF_PROBE_ADD(F) F(U32, idx) F(STR, target) F(U32, pid) F(STR, symbol) F(U64, file_offset) F(U32, api)
#define GP_OPF_PROBE_HITS(F) F(U32, idx) F(U64, entry_hits) F(U64, return_hits)
#define GP_OPF_DROP_SET(F) F(STR, name) F(U64, count)
#define GP_OPF_STACKS(F) F(BOOL, captured) F(U64, max_stacks)
#define GP_OPF_INGEST(F) F(RAW, record) /* exactly as the ring buffer gave it */
#define GP_OPF_SYMBOLIZE(F) /* gp_model_symbolize_stacks */
#define GP_OPF_KERNEL_NAME(F) F(U32, tgid) F(U64, func) F(U64, ret_addr) F(S32, rc) F(STR, name) F(STR, mangled)
#define GP_OPF_SYMBOL(F) F(U32, tgid) F(U64, addr) F(S32, rc) F(STR, function) F(STR, symbol) F(STR, file) \
	F(STR, build_id) F(U64, sym_offset) F(U64, file_offset) F(U32, source)
#define GP_OPF_MAPS(F) F(U32, pid) F(U64, mono_ns) F(STR, text) /* executable mappings, with build-ids */
#define GP_OPF_END(F) F(U64, ops) F(U64, chunks) /* operations before it, chunks before its own */
#define GP_OPF_API_AGGREGATE(F) F(RAW, aggregate) /* struct gp_api_aggregate (model.h) */
#define GP_OPF_API_ESTIMATED(F) F(U32, pid) F(U32, api) F(U64, calls)
#define GP_OPF_SAMPLING(F) F(RAW, sampling) /* struct gp_sampling (model.h) */
#define GP_OPF_PROBE_COST(F) F(U64, probe_hit_ns)
#define GP_OPF_PROBE_CALL_COST(F) F(U64, probe_call_ns)
#define GP_OPF_KERNEL(F) F(STR, features) F(S32, perf_event_paranoid)
#define GP_OPF_KERNEL_REPLACED(F) F(STR, feature) F(STR, since) F(STR, by) F(STR, cost) F(BOOL, by_request)
#define GP_OPF_PROBE_REMOVAL(F) F(U64, probes) F(U64, ns)
#define GP_OPF_PROBE_REMOVER(F) F(U32, pid)
#define GP_OPF_PY_FRAME(F) F(U32, tgid) F(U64, code) F(U64, word) F(S32, rc) F(STR, qualname) F(STR, file) \
	F(S32, line)
#define GP_OPF_PROCESS_PLACE(F) F(U32, pid) F(U32, ns_pid) F(STR, runtime) F(STR, container_id) \
	F(STR, container_name) F(STR, pod_uid) F(STR, pod_name) F(STR, pod_namespace) F(STR, cgroup)
#define GP_OPF_PROCESS_PYTHON(F) F(U32, pid) F(U32, hexversion) F(BOOL, walked) F(STR, note)
#define GP_OPF_UNWIND(F) F(U64, procs) F(U64, procs_max) F(U64, procs_full) F(U64, maps) F(U64, maps_none) \
	F(U64, maps_over) F(U64, files) F(U64, files_built) F(U64, files_reused) F(U64, files_evicted) F(U64, rows) \
	F(U64, rows_max) F(U64, pool_rows) F(U64, build_ns) F(U64, build_ns_max) F(STR, build_max_file) \
	F(U64, fail_open) F(U64, fail_not_elf) F(U64, fail_no_cfi) F(U64, fail_too_big) F(U64, fail_pool_full) \
	F(U64, fail_files_full) F(U64, fail_no_segment) F(U64, fail_other) \
	F(U64, python_holds) /* struct gp_unwind_summary */
#define GP_OPF_HOLDS(F) F(U64, holds) F(U64, total_ns) F(U64, max_ns) F(U64, timed_out) F(U64, exec) F(U64, map) \
	F(U64, python) F(U64, files_left_out) /* struct gp_holds_summary */
#define GP_OPF_HOLD_TIMEOUT(F) F(U32, pid) F(U32, reason) F(U64, held_ns)
#define GP_OPF_HOLD_FILE(F) F(U64, dev) F(U64, ino) F(U32, reason) F(STR, path) F(U64, holds) F(U64, total_ns) \
	F(U64, max_ns)
#define GP_OPF_GPU_NVML(F) F(S32, state) F(STR, note) F(STR, driver) F(U64, interval_ns) F(U64, sampler_cpu_ns)
#define GP_OPF_GPU_DEVICE(F) F(U32, index) F(STR, name) F(STR, uuid) F(U64, memory_total)
#define GP_OPF_GPU_SAMPLE(F) F(RAW, sample) /* struct gp_gpu_sample (model.h) */
#define GP_OPF_GPU_PROCESS(F) F(U32, index) F(U32, pid) F(U64, mono_ns) F(U64, used_memory) F(S32, sm_util) \
	F(S32, mem_util)
#define GP_OPF_GPU_ERROR(F) F(U32, index) F(STR, call) F(S32, code) F(STR, text) F(U64, mono_ns)
#define GP_OPF_NCCL_STALL(F) F(U64, comm_id) F(U64, seq) F(U32, op) F(U64, bytes) F(U64, waited_ns) F(U64, mono_ns) \
	F(RAW, waiting) /* __s32 ranks */
#define GP_OPF_NCCL_STALL_BEHIND(F) F(U64, comm_id) F(U64, seq) F(S32, rank) F(U32, pid) F(U64, last_seq) \
	F(STR, state)
/* clang-format on */

enum gp_model_op {
#define GP_MOP_ENUM(num, NAME, name) GP_MOP_##NAME = num,
	GP_MODEL_OP_TABLE(GP_MOP_ENUM)
#undef GP_MOP_ENUM
		GP_MOP_MAX,
};

/* A RAW field: the rest of the payload. */
struct gp_op_raw {
	const void *p;
	size_t n;
};

/* The C type of each field kind. */
typedef __u32 gp_opk_U32;
typedef __u64 gp_opk_U64;
typedef __s32 gp_opk_S32;
typedef bool gp_opk_BOOL;
typedef const char *gp_opk_STR; /* NUL-ended; NULL is encoded as n == 0 */
typedef struct gp_op_raw gp_opk_RAW;

/* struct gp_op_<name> and its packer and unpacker, for every operation. */
#define GP_OP_FIELD(kind, field) gp_opk_##kind field;
#define GP_OP_DECLARE(num, NAME, name)                                                  \
	struct gp_op_##name {                                                           \
		GP_OPF_##NAME(GP_OP_FIELD)                                              \
	};                                                                              \
	/* the payload's size; when it exceeds cap, buf holds nothing useful */         \
	size_t gp_op_pack_##name(void *buf, size_t cap, const struct gp_op_##name *v);  \
	/* 0, or -EINVAL when data is not a valid encoding (strings point into data) */ \
	int gp_op_unpack_##name(const void *data, size_t len, struct gp_op_##name *v);
GP_MODEL_OP_TABLE(GP_OP_DECLARE)
#undef GP_OP_DECLARE
#undef GP_OP_FIELD

/* A resolver's answer (KERNEL_NAME, SYMBOL, PY_FRAME): looked up by the model's questions, applied by nobody. */
static inline bool gp_model_op_is_answer(unsigned op)
{
	return op == GP_MOP_KERNEL_NAME || op == GP_MOP_SYMBOL || op == GP_MOP_PY_FRAME;
}

/* The format string of op, or NULL when op is unknown. */
const char *gp_model_op_format(unsigned op);
/* "session", "ingest", ...: for messages; "?" when unknown. */
const char *gp_model_op_name(unsigned op);

/* One decoded field. */
union gp_op_val {
	__u64 u;       /* 'u', 'U', 'b' */
	__s64 i;       /* 'i' */
	const char *s; /* 's': NUL-ended, points into the payload; NULL when encoded as NULL */
	struct {
		const void *p;
		size_t n;
	} r; /* 'r' */
};

#define GP_OP_MAX_FIELDS 32

/*
 * Encodes the fields (C varargs: 'u' unsigned, 'U' __u64, 'i' int, 'b' int,
 * 's' const char *, 'r' const void *, size_t) into buf. Returns the
 * payload's size; when it exceeds cap, nothing useful is in buf and the
 * caller retries with a buffer of that size.
 */
size_t gp_op_vpack(void *buf, size_t cap, const char *fmt, va_list ap);
/*
 * Decodes payload data/len per op's format into vals[]. 0, or -EINVAL when
 * the payload is not a valid encoding (short, unterminated string, extra
 * bytes) or op is unknown.
 */
int gp_op_unpack(unsigned op, const void *data, size_t len, union gp_op_val vals[GP_OP_MAX_FIELDS]);

#endif /* GP_MODEL_OPS_H */
