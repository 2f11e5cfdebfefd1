/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * view_stacks.h — call stacks as readers see them (view.h includes it): what
 * each call did at its stack, a process's distinct stacks and their
 * symbolized frames (native and Python), why a stack is truncated.
 */
#ifndef GP_MODEL_VIEW_STACKS_H
#define GP_MODEL_VIEW_STACKS_H

#include "model/model.h"
#include "model/u64map.h"

struct gp_kernel;
struct gp_nccl_comm;

/* ---- call stacks (stacks.c) ---------------------------------------------- */
/* What one call did, for the row of its stack: filled by the aggregator of its shape. */
enum gp_op_kind {
	GP_OP_OTHER,
	GP_OP_KERNEL,
	GP_OP_GRAPH,
	GP_OP_COPY,
	GP_OP_MEMSET,
	GP_OP_ALLOC,
	GP_OP_FREE,
	GP_OP_COLL,
	GP_OP_SYNC
};
struct gp_op {
	enum gp_op_kind kind;
	__u8 dir, hostmem;		 /* copies: enum gp_dir, enum gp_hostmem */
	__u8 alloc_kind;		 /* allocations and frees: enum gp_alloc_kind */
	__s16 nccl_op, dtype;		 /* collectives */
	const struct gp_nccl_comm *comm; /* collectives: its communicator (NULL: not known) */
	__u64 seq; /* and its sequence number there (0: a Send/Recv, or it failed) */
	const struct gp_kernel *kernel; /* launches */
	__u64 bytes;			/* what this call moved, set, allocated or reduced */
};

const char *gp_op_kind_name(enum gp_op_kind k);

struct gp_stack_op { /* one (API, operation) at a stack */
	__u16 api;
	struct gp_op op;
	__u64 calls, errors, bytes, host_ns;
};

/*
 * Why a stack ends before the thread's first frame (report.json stacks[].truncated): the frame-pointer
 * chain ended (UNWIND), the depth limit, unreadable memory, a pc in no mapping known of the process, a
 * file without unwind information and no frame pointer to follow, a row of a file's table that cannot
 * give the caller (unwind_detail: its GP_UW_STOP_*), rbp not restorable.
 */
enum gp_stack_trunc {
	GP_TRUNC_NONE,
	GP_TRUNC_DEPTH,
	GP_TRUNC_UNWIND,
	GP_TRUNC_UNREAD,
	GP_TRUNC_NO_MAPPING,
	GP_TRUNC_NO_UNWIND_INFO,
	GP_TRUNC_UNWIND_TABLE,
	GP_TRUNC_RBP_UNKNOWN,
	GP_TRUNC_MAX
};
const char *gp_stack_trunc_name(enum gp_stack_trunc t); /* NULL for GP_TRUNC_NONE */
/* "gap", "end", "expression", ...: a stop row's cause (unwind.h GP_UW_STOP_*). */
const char *gp_uw_stop_cause_name(unsigned cause);

struct gp_stack {
	struct gp_stack *next; /* hash chain */
	__u64 hash;
	__u32 seq;	    /* order of first sight */
	__u16 nframes;	    /* native frames; 0: the "[stack table full]" stack */
	__u16 npy;	    /* Python frames after them in ips[], two words each */
	__u8 trunc;	    /* enum gp_stack_trunc (unwind: set when symbolized) */
	__u8 unwind_detail; /* GP_TRUNC_UNWIND_TABLE: the row's GP_UW_STOP_* */
	__u8 py_status;	    /* enum gp_py_status of the walk */
	__u8 frames_fp;	    /* native frames found by frame pointer (no table) */
	bool fp_end; /* the walk ended where a frame-pointer chain did: whole if that is a thread's start */
	__u64 calls, bytes, host_ns;
	struct gp_stack_op *ops;
	__u32 nops, ops_cap;
	__u32 *py_ids; /* [npy] indexes into gp_stacks.frames of its Python frames, named at first sight */
	__u32 *frame_ids; /* [nsym] indexes into gp_stacks.frames, once symbolized: innermost first, */
	__u16 nsym; /* the native frames with each eval frame replaced by the Python frames it ran */
	__u16 py_unanchored; /* of them, Python frames whose eval frame the native walk did not reach (outermost) */
	__u64 ips[]; /* [0] the call site, then the callers; then npy Python frames (code, instr) */
};

enum gp_frame_kind { GP_FRAME_NATIVE, GP_FRAME_PYTHON };

/*
 * A frame symbolized: one per distinct address of a process (native), one
 * per distinct (code object, line) (Python).
 */
struct gp_stack_frame {
	__u64 addr;	/* native: the return address; Python: the code object's address */
	char *function; /* demangled, without parameters; Python: the qualified name; NULL: none */
	char *symbol;	/* raw symbol; NULL: none (Python: none) */
	char *file;	/* mapped file; Python: the code's file name; NULL: anonymous or unmapped */
	char *build_id; /* hex, "" when none */
	__u64 sym_offset, file_offset;
	__s32 line;	  /* Python: the line being executed, 0 when the instruction has none */
	__u8 kind;	  /* enum gp_frame_kind */
	__u8 source;	  /* enum gp_sym_source */
	bool thread_root; /* where threads start: a stack ending here is complete */
	bool python_eval; /* native, in the interpreter's eval loop: it runs Python frames */
};

/* A Python frame as recorded, to its frame: found again without asking the resolver. */
struct gp_py_seen {
	__u64 code, word;
	__u32 id;
};

struct gp_stacks {
	struct gp_u64map by_hash; /* hash -> struct gp_stack chain */
	struct gp_stack **v;	  /* in order of first sight */
	size_t n, cap;
	struct gp_stack *overflow; /* calls beyond --max-stacks */
	__u64 calls;		   /* calls with a stack */
	bool symbolized;
	struct gp_stack_frame *frames;
	size_t nframes, frames_cap;
	struct gp_u64map frame_by_addr; /* addr -> index + 1 */
	struct gp_u64map py_by_key;	/* hash of (code, line) -> index + 1, probed linearly */
	struct gp_py_seen *py_seen;	/* recorded Python frames named so far */
	size_t npy_seen, py_seen_cap;
	struct gp_u64map
		py_seen_by_key; /* hash of (code, word) -> py_seen index + 1, probed linearly */
	__u64 py_unnamed;	/* Python frames the resolver could not name */
};

#endif /* GP_MODEL_VIEW_STACKS_H */
