/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind.h — what the BPF programs read to walk a traced thread's stack at
 * the probe when its code has no frame pointers, and its Python frames:
 * the ABI between userspace (which builds these tables) and bpf/gpu_api.bpf.c
 * (which reads them). Shared by BPF and userspace: fixed-width fields,
 * sizes asserted.
 *
 * Native frames: one table of rows per ELF file, built in userspace from
 * its .eh_frame (and .debug_frame) — src/stacks/unwind_table.c — and
 * copied into one pool of rows (the "uw_rows" map), shared by every process
 * that maps the file. A row says, from its pc (an ELF virtual address of the
 * file) to the next row's, how to find the caller's frame: the CFA (the
 * value of rsp before the call), the return address at CFA - 8, the
 * caller's rbp. Per traced process, its executable mappings, sorted by
 * start, each with its file's table and the bias that turns an address into
 * the file's vaddr: key = pc - bias (- 1 for a return address).
 *
 * Python frames: per traced process running CPython, where its interpreter
 * keeps the thread's frame chain (struct gp_py_proc); the walk records each
 * frame's code object and instruction, resolved to names and lines in
 * userspace (src/stacks/python_layout.c).
 */
#ifndef GPUPROBED_UNWIND_H
#define GPUPROBED_UNWIND_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* ---- native: tables of rows ---------------------------------------------------------------- */

/* flags bits 0..2: how to compute the CFA */
#define GP_UW_CFA_RSP	  0 /* CFA = rsp + off */
#define GP_UW_CFA_RBP	  1 /* CFA = rbp + off (rbp must be known) */
#define GP_UW_CFA_PLT	  2 /* CFA = rsp + cfa_off + ((pc & 15) >= rbp_off ? 8 : 0): a .plt entry */
#define GP_UW_CFA_DEREF	  3 /* CFA = *(u64 *)(rbp + (s16)cfa_off): gcc's stack realignment (DRAP) */
#define GP_UW_CFA_STOP	  7 /* no caller frame from here: cause in bits 5..7 */
/* flags bits 3..4: how to recover the caller's rbp */
#define GP_UW_RBP_SAME	  0 /* unchanged */
#define GP_UW_RBP_CFA	  1 /* *(u64 *)(CFA + 8 * rbp_off) */
#define GP_UW_RBP_UNKNOWN 2 /* not recoverable: a later row that needs rbp stops the walk */
#define GP_UW_RBP_DEREF	  3 /* *(u64 *)(rbp + 8 * rbp_off) (DRAP frames) */
/* flags bit 5 of a row that is not a stop: cfa_off counts 8-byte units (frames over 64 KiB) */
#define GP_UW_OFF_X8	  0x20
/* flags bits 5..7 of a stop row: why */
#define GP_UW_STOP_GAP	  0 /* no FDE covers the pc */
#define GP_UW_STOP_END	  1 /* the return address is undefined: the outermost frame (_start, clone) */
#define GP_UW_STOP_EXPR	  2 /* the CFA is a DWARF expression the rows cannot say */
#define GP_UW_STOP_CFAREG 3 /* the CFA is based on a register other than rsp or rbp */
#define GP_UW_STOP_RA	  4 /* the return address is not at CFA - 8 */
#define GP_UW_STOP_SIGNAL 5 /* a signal trampoline */
#define GP_UW_STOP_RANGE  6 /* an offset the row cannot hold */
#define GP_UW_STOP_OTHER  7 /* bad CFI */

#define GP_UW_CFA_TYPE(f)   ((f)&7)
#define GP_UW_RBP_RULE(f)   (((f) >> 3) & 3)
#define GP_UW_STOP_CAUSE(f) (((f) >> 5) & 7)

struct gp_uw_row {
	__u32 pc;      /* first vaddr (of the file) the row covers, up to the next row's */
	__u16 cfa_off; /* bytes, or 8-byte units with GP_UW_OFF_X8; signed for GP_UW_CFA_DEREF */
	__s8 rbp_off;  /* RBP_CFA / RBP_DEREF: in 8-byte units; CFA_PLT: the slot threshold */
	__u8 flags;
};

/* One file's rows in the pool: uw_rows[first .. first + n), sorted by pc. n 0: no table. */
struct gp_uw_file {
	__u32 first;
	__u32 n;
};

/* One executable mapping of a process: [start, end) of its address space. */
struct gp_uw_map {
	__u64 start, end;
	__u64 bias; /* address - bias = the file's vaddr */
	__u32 file; /* its file's slot in uw_files; GP_UW_FILE_NONE: no table (walk by frame pointer) */
	__u32 pad;
};
#define GP_UW_FILE_NONE 0xffffffffu

/* A process's mappings: uw_maps[slot * GP_UW_MAX_MAPS .. + nmaps), sorted by start. */
struct gp_uw_proc {
	__u32 slot;
	__u32 nmaps;
	__u32 gen; /* bumped at every publish, never 0 nor reused: rows a walk cached of an older one are stale */
	__u32 pad;
};

#define GP_UW_MAX_MAPS	512  /* executable mappings of one process */
#define GP_UW_MAX_PROCS 256  /* processes with a mapping table at once */
#define GP_UW_MAX_FILES 4096 /* files with a table at once */
#define GP_UW_MAP_STEPS 10   /* log2(GP_UW_MAX_MAPS) + 1 */
#define GP_UW_ROW_STEPS 24   /* rows of one file: 16 M at most */

/* ---- Python: where the interpreter keeps the thread's frames ------------------------------ */

#define GP_PY_NONE 0xffffu /* an offset that does not exist in this version */

struct gp_py_proc {
	__u64 tss_key_addr; /* the int holding the pthread key of thread states (_PyRuntime's autoTSSkey._key) */
	__u64 eval_lo,
		eval_hi; /* _PyEval_EvalFrameDefault's code: a native frame there runs Python frames */
	__u32 version; /* PY_VERSION_HEX >> 16: 0x030a .. 0x030d */
	__u32 tss_first; /* fsbase + this: glibc's struct pthread specific_1stblock (keys < 32, 16 bytes each) */
	__u32 tss_second;	/* fsbase + this: glibc's struct pthread specific[] (keys >= 32) */
	__u16 tstate_thread_id; /* PyThreadState.thread_id: equals fsbase for the thread's own state */
	__u16 tstate_frame;	/* 3.10 frame; 3.11, 3.12 cframe; 3.13 current_frame */
	__u16 cframe_current; /* 3.11, 3.12: _PyCFrame.current_frame; GP_PY_NONE */
	__u16 frame_code;     /* f_code, f_executable */
	__u16 frame_prev;     /* f_back, previous */
	__u16 frame_instr;    /* 3.10 f_lasti (an int); 3.11+ prev_instr, instr_ptr (a pointer) */
	__u16 frame_owner;    /* 3.12+ owner (a byte); GP_PY_NONE */
	__u16 frame_is_entry; /* 3.11 is_entry (a byte); GP_PY_NONE */
	__u16 code_adaptive; /* 3.11+ PyCodeObject.co_code_adaptive: instr - (code + this) = byte offset */
	__u8 owner_shim;   /* the owner of a C-stack shim frame (not a Python function): skipped */
	__u8 instr_is_ptr; /* 1: frame_instr holds a pointer (3.11+); 0: an int (3.10) */
	__u16 frame_read;  /* bytes of a frame the walk reads at once (covers every offset above) */
	__u16 pad;
	__u32 pad2;
};

#define GP_PY_MAX_FRAMES 64

/* The second word of a recorded Python frame (the first is its code object's address). */
#define GP_PYF_INSTR(w) ((__u32)(w))	     /* 3.10: f_lasti; 3.11+: the byte offset in the code */
#define GP_PYF_FLAGS(w) ((__u32)((w) >> 32)) /* GP_PYF_* */
#define GP_PYF_ENTRY \
	(1u << 0) /* entered from C: the last Python frame of its native eval activation */

#ifndef __VMLINUX_H__
_Static_assert(sizeof(struct gp_uw_row) == 8, "gp_uw_row layout");
_Static_assert(sizeof(struct gp_uw_map) == 32, "gp_uw_map layout");
_Static_assert(sizeof(struct gp_uw_proc) == 16, "gp_uw_proc layout");
_Static_assert(sizeof(struct gp_py_proc) == 64, "gp_py_proc layout");
#endif

#endif /* GPUPROBED_UNWIND_H */
