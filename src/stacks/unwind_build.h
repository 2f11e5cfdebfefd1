/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_build.h — between unwind_table.c, which finds a file's call-frame
 * information and builds its table, and unwind_cfi.c, which reads it
 * (nobody else): the state of one build, the sections' CIEs and FDEs, and
 * the reader's entry points.
 */
#ifndef GP_UNWIND_BUILD_H
#define GP_UNWIND_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "gpuprobed/unwind.h"
#include "stacks/unwind_table.h"

/* A CIE, parsed once, found by its offset in its section. */
struct uw_cie {
	__u64 off; /* in its section */
	__u64 code_align;
	__s64 data_align;
	__u8 fde_enc, addr_size;
	bool has_z, signal;
	const __u8 *ins, *ins_end; /* initial instructions */
};

/* .eh_frame or .debug_frame, and the CIEs parsed of it. */
struct uw_cfisec {
	const __u8 *base;
	size_t size;
	__u64 vaddr; /* .eh_frame: its address, for pc-relative pointers */
	bool is_eh;
	struct uw_cie *cies;
	size_t ncies, cap;
	__u32 *hash; /* open addressing: index + 1 into cies, 0 empty */
	size_t hcap;
};

/* An FDE kept: its range lies in an executable segment. */
struct uw_fde {
	__u64 lo, hi;
	const __u8 *ins, *ins_end;
	__u32 cie; /* index in its section's cies */
	__u8 sec;  /* index in secs[] */
	bool from_debug;
};

/* One file's table being built (gp_uw_table_build_fd). */
struct uw_build {
	struct gp_uw_table *t;
	struct gp_uw_table_stats *st;
	struct uw_cfisec secs[2];
	int nsecs;
	struct uw_fde *fdes;
	size_t nfdes, fcap;
	struct gp_uw_row *rows; /* pushed in pc order (uw_fde_rows, uw_stop_push) */
	size_t nrows, rcap;
	bool nomem;
};

/*
 * The FDEs of b->secs[si] whose range lies in an executable segment of b->t,
 * appended to b->fdes (their CIEs parsed once each); counted in b->st. 0 or
 * -ENOMEM.
 */
int uw_collect_fdes(struct uw_build *b, int si);

/*
 * The rows of f from f->lo, appended to b->rows: its CIE's initial
 * instructions run, then its own program. Bad CFI ends it with a
 * GP_UW_STOP_OTHER row (the rows before the bad op stay).
 */
void uw_fde_rows(struct uw_build *b, const struct uw_fde *f);

/* Appends a stop row at pc (a later row at the same pc replaces it; equal neighbours merge). */
void uw_stop_push(struct uw_build *b, __u64 pc, unsigned cause);

/*
 * .eh_frame_hdr at h (avail bytes of it, at vaddr hdr_vaddr): the vaddr of
 * .eh_frame its eh_frame_ptr gives. 0, or -EINVAL when h is not a version 1
 * header or the pointer cannot be read.
 */
int uw_eh_frame_ptr(const __u8 *h, size_t avail, __u64 hdr_vaddr, __u64 *eh_vaddr);

#endif /* GP_UNWIND_BUILD_H */
