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
#include <stddef.h>
#include <linux/types.h>

enum gp_model_op {
	/* applied by the model's public functions (model.h) */
	GP_MOP_SESSION = 1,     /* "sssssUU" tool_version command_line mode hostname kernel_release start_mono start_realtime */
	GP_MOP_SESSION_END,     /* "U"       end_mono */
	GP_MOP_PROCESS_ADD,     /* "ussUb"   pid comm cmdline attach_mono traced_from_start */
	GP_MOP_PROCESS_EXITED,  /* "uU"      pid exit_mono */
	GP_MOP_PROCESS_ORIGIN,  /* "usu"     pid because parent_pid */
	GP_MOP_PROCESS_EXEC,    /* "uss"     pid comm cmdline */
	GP_MOP_SKIPPED,         /* "uss"     pid comm reason */
	GP_MOP_LAUNCH,          /* "sbii"    command exited exit_status term_signal */
	GP_MOP_LIBRARY,         /* "usubs"   pid path family is_static build_id */
	GP_MOP_THREAD_NAME,     /* "uus"     pid tid name */
	GP_MOP_PROBE_ADD,       /* "ususUu"  idx target pid symbol file_offset api */
	GP_MOP_PROBE_HITS,      /* "uUU"     idx entry_hits return_hits */
	GP_MOP_DROP_SET,        /* "sU"      name count */
	GP_MOP_STACKS,          /* "bU"      captured max_stacks */
	GP_MOP_INGEST,          /* "r"       one record exactly as the ring buffer gave it */
	GP_MOP_SYMBOLIZE,       /* ""        gp_model_symbolize_stacks */
	/* the resolver's answers, recorded by the capture (applied by nobody: looked up) */
	GP_MOP_KERNEL_NAME,     /* "uUUiss"  tgid func ret_addr rc name mangled */
	GP_MOP_SYMBOL,          /* "uUissssUUu" tgid addr rc function symbol file build_id sym_offset file_offset source */
	/* what the capture adds about processes, for readers of the file (not needed by the model) */
	GP_MOP_MAPS,            /* "uUs"     pid mono_ns text of /proc/PID/maps (executable mappings, with build-ids) */
	GP_MOP_END,             /* "UU"      operations written before this one, chunks before this one's */
	/* after END: the numbers above are the capture format's and never change */
	GP_MOP_API_AGGREGATE,   /* "r"       struct gp_api_aggregate (model.h), as gp_model_api_aggregate got it */
	GP_MOP_API_ESTIMATED,   /* "uuU"     pid api calls (gp_model_api_estimated) */
	GP_MOP_SAMPLING,        /* "r"       struct gp_sampling (model.h) */
	GP_MOP_PROBE_COST,      /* "U"       probe_hit_ns (gp_model_set_probe_cost) */
	GP_MOP_MAX,
};

/* The format string of op, or NULL when op is unknown. */
const char *gp_model_op_format(unsigned op);
/* "session", "ingest", ...: for messages; "?" when unknown. */
const char *gp_model_op_name(unsigned op);

/* One decoded field. */
union gp_op_val {
	__u64 u;          /* 'u', 'U', 'b' */
	__s64 i;          /* 'i' */
	const char *s;    /* 's': NUL-ended, points into the payload; NULL when encoded as NULL */
	struct {
		const void *p;
		size_t n;
	} r;              /* 'r' */
};

#define GP_OP_MAX_FIELDS 12

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
