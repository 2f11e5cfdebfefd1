/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_table.h — one ELF file's unwind table: its call-frame information
 * (.eh_frame, and .debug_frame where present) turned into the rows the BPF
 * walk reads (struct gp_uw_row, include/gpuprobed/unwind.h), sorted by pc
 * and merged. Pure userspace (libelf), no BPF: src/stacks/unwind_files.c copies a
 * table into the kernel's pool of rows. Built by unwind_table.c, its CFI read
 * by unwind_cfi.c.
 *
 * A row covers [row.pc, next row's pc); pcs are the file's ELF virtual
 * addresses, so one table serves every process that maps the file, at any
 * address: key = pc - bias (gp_uw_table_bias). The last row is a stop row
 * (nothing after the last FDE); keys below the first row have no row.
 */
#ifndef GP_UNWIND_TABLE_H
#define GP_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "gpuprobed/unwind.h"

/*
 * Gaps between FDEs shorter than this (alignment padding, never executed)
 * are covered by the row before them instead of a stop row: 5-26 % fewer
 * rows on the libraries measured. Longer gaps get a GP_UW_STOP_GAP row.
 */
#define GP_UW_GAP_SLACK 16

/* Rows of one file at most: what GP_UW_ROW_STEPS binary-search steps reach. */
#define GP_UW_TABLE_MAX_ROWS (1u << GP_UW_ROW_STEPS)

/* A PT_LOAD segment: what turns a mapping into its bias. */
struct gp_uw_seg {
	__u64 vaddr, offset, filesz, memsz;
	bool exec;
};

#define GP_UW_MAX_SEGS 16

struct gp_uw_table {
	struct gp_uw_row *rows; /* sorted by pc; malloc'ed */
	size_t nrows;
	struct gp_uw_seg segs[GP_UW_MAX_SEGS]; /* PT_LOAD, in file order */
	int nsegs;
	unsigned char build_id[20];
	size_t build_id_len;
};

/* What a build found and cost. Bytes are pc bytes covered by rows, unless said otherwise. */
struct gp_uw_table_stats {
	__u64 build_ns;		      /* CLOCK_MONOTONIC around the whole build, open to rows */
	__u64 cies, fdes, fdes_debug; /* FDEs used from .eh_frame, from .debug_frame */
	__u64 fdes_skipped; /* unreadable, empty, outside the executable segments or above 4 GiB */
	__u64 overlaps;	    /* FDEs overlapping an earlier one (.eh_frame wins) */
	__u64 raw_rows;	    /* rows before merging equal neighbours */
	__u64 rows, bytes;  /* the table: rows and their size */
	__u64 exec_bytes;   /* memsz of the executable PT_LOADs */
	__u64 type_rows[8], type_bytes[8]; /* by GP_UW_CFA_* (STOP included) */
	__u64 stop_rows[8], stop_bytes[8]; /* stop rows by GP_UW_STOP_* */
	__u64 rbp_unknown_bytes;	   /* rows whose rbp rule is GP_UW_RBP_UNKNOWN */
	__u64 x8_rows;			   /* frames over 64 KiB (GP_UW_OFF_X8) */
	bool eh_frame, debug_frame;
	bool eh_frame_from_hdr; /* no section headers: .eh_frame found through PT_GNU_EH_FRAME */
};

/*
 * Builds fd's table (fd: an open ELF file, left open; its offset unused).
 * gap_slack: GP_UW_GAP_SLACK, or 0 for a stop row at every gap. st may be
 * NULL. 0, or -ENOEXEC (not a 64-bit x86-64 ELF file), -ENODATA (no
 * call-frame information for its code), -EFBIG (more rows than
 * GP_UW_TABLE_MAX_ROWS), -ENOMEM, -EIO. On failure t is empty.
 */
int gp_uw_table_build_fd(int fd, unsigned gap_slack, struct gp_uw_table *t,
			 struct gp_uw_table_stats *st);
/* The same from a path. Adds the errors of open(2). */
int gp_uw_table_build(const char *path, unsigned gap_slack, struct gp_uw_table *t,
		      struct gp_uw_table_stats *st);
void gp_uw_table_release(struct gp_uw_table *t);

/*
 * fd's GNU build-id (at most 20 bytes) into id; *len 0 when it has none.
 * Reads only the notes. 0 or -ENOEXEC.
 */
int gp_uw_build_id_fd(int fd, unsigned char id[20], size_t *len);

/* The index of the row covering key (the last with pc <= key), or -1 when none does. */
long gp_uw_rows_find(const struct gp_uw_row *rows, size_t n, __u64 key);

/*
 * The bias of a mapping of the file that starts at start, at file offset
 * pgoff: address - bias = vaddr, from the PT_LOAD whose pages hold pgoff
 * (an executable one first). 0 or -ENOENT.
 */
int gp_uw_table_bias(const struct gp_uw_seg *segs, int nsegs, __u64 start, __u64 pgoff,
		     __u64 *bias);

/* The CFA in bytes of a row that is not a stop (GP_UW_OFF_X8 applied). */
static inline __u32 gp_uw_row_cfa_off(const struct gp_uw_row *r)
{
	return (__u32)r->cfa_off << ((r->flags & GP_UW_OFF_X8) ? 3 : 0);
}

/* "cfa=rsp+16 rbp=[cfa-16]", "STOP(gap)": for messages and tests. */
const char *gp_uw_row_describe(const struct gp_uw_row *r, char *buf, size_t len);

#endif
