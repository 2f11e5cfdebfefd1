/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_cfi.c — the DWARF call-frame-information reader behind
 * unwind_table.c, for x86-64 (see unwind_build.h): bounded reads and pointer
 * encodings, the CIEs and FDEs of .eh_frame and .debug_frame, and the
 * interpreter that runs each FDE's program once, its states encoded as rows.
 *
 * Why not elfutils' libdw, which reads CFI too: its API answers one address
 * at a time (dwarf_cfi_addrframe, then dwarf_frame_info for the row's
 * [start, end)), re-running the FDE's program from its start for every
 * query, so listing every row of a file is O(rows x FDE length): checking
 * 3 addresses per row through it took 12.5 s on libcufft, where running
 * each FDE's program once, as here, builds the whole table in 0.2 s. Its
 * answers are also DWARF expressions (a DW_CFA_expression rule comes back
 * with DW_OP_call_frame_cfa prepended) that would have to be matched back
 * into rows anyway. libdw is the independent reference of the unit test
 * (tests/unit/test_unwind_table.c) instead.
 *
 * What a row can say, and what it cannot (a stop row with its cause):
 * CFA = rsp + n or rbp + n; the linker's .plt expression; gcc's stack
 * realignment (DRAP: CFA = *(rbp + n), rbp saved at rbp + m); the return
 * address at CFA - 8 only; the caller's rbp unchanged, at CFA + 8k or at
 * rbp + 8k. Anything else stops (GP_UW_STOP_*). The FDE program's
 * DW_CFA_remember/restore_state, the 'zPLRS' augmentations, pointer
 * encodings and 32/64-bit DWARF .debug_frame versions 1, 3, 4 are read.
 *
 * The file may come from any traced process: every read is bounded by its
 * section, and bad CFI ends its FDE with a GP_UW_STOP_OTHER row.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "stacks/unwind_build.h"

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s64 s64;

#define ROW_FLAGS(cfa, rbp, cause) ((u8)((cfa) | ((rbp) << 3) | ((cause) << 5)))

/* DWARF register numbers of x86-64 */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16

/* ---- bounded reading ------------------------------------------------------------------------- */

struct rd {
	const u8 *p, *end;
	bool err;
};

static u64 rd_u(struct rd *r, int n)
{
	u64 v = 0;

	if (r->end - r->p < n) {
		r->err = true;
		r->p = r->end;
		return 0;
	}
	for (int i = 0; i < n; i++)
		v |= (u64)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

/* A LEB128 number; sign-extended from its last byte's bit 6 when is_signed. */
static u64 rd_leb(struct rd *r, bool is_signed)
{
	u64 v = 0;
	int sh = 0;

	while (r->p < r->end) {
		u8 b = *r->p++;

		if (sh < 64)
			v |= (u64)(b & 0x7f) << sh;
		sh += 7;
		if (!(b & 0x80)) {
			if (is_signed && sh < 64 && (b & 0x40))
				v |= ~(u64)0 << sh;
			return v;
		}
	}
	r->err = true;
	return v;
}

static u64 rd_uleb(struct rd *r)
{
	return rd_leb(r, false);
}

static s64 rd_sleb(struct rd *r)
{
	return (s64)rd_leb(r, true);
}

/* Skips n bytes, if there are. */
static void rd_skip(struct rd *r, u64 n)
{
	if (n > (u64)(r->end - r->p)) {
		r->err = true;
		r->p = r->end;
	} else {
		r->p += n;
	}
}

#define DW_EH_PE_omit 0xff

/*
 * A pointer in encoding enc; sec_vaddr is the vaddr of base (the section's
 * start), for pc-relative ones. Indirect (0x80) is only used by personality
 * routines, which are skipped, not followed.
 */
static u64 rd_enc(struct rd *r, u8 enc, u64 sec_vaddr, const u8 *base)
{
	u64 field = sec_vaddr + (u64)(r->p - base), v;

	if (enc == DW_EH_PE_omit)
		return 0;
	switch (enc & 0x0f) {
	case 0x00:
		v = rd_u(r, 8);
		break;
	case 0x01:
		v = rd_uleb(r);
		break;
	case 0x02:
		v = rd_u(r, 2);
		break;
	case 0x03:
		v = rd_u(r, 4);
		break;
	case 0x04:
		v = rd_u(r, 8);
		break;
	case 0x09:
		v = (u64)rd_sleb(r);
		break;
	case 0x0a:
		v = (u64)(int16_t)rd_u(r, 2);
		break;
	case 0x0b:
		v = (u64)(int32_t)rd_u(r, 4);
		break;
	case 0x0c:
		v = rd_u(r, 8);
		break;
	default:
		r->err = true;
		return 0;
	}
	switch (enc & 0x70) {
	case 0x00:
		break; /* absolute */
	case 0x10:
		v += field;
		break; /* pc-relative */
	default:
		r->err = true;
		break; /* text/data/func-relative, aligned: not used on x86-64 */
	}
	return v;
}

/* ---- CIEs, parsed once each, found by their offset ------------------------------------------- */

static size_t cie_hash(u64 off, size_t hcap)
{
	return (size_t)((off * 0x9E3779B97F4A7C15ull) >> 17) & (hcap - 1);
}

static struct uw_cie *cie_find(const struct uw_cfisec *s, u64 off)
{
	if (!s->hcap)
		return NULL;
	for (size_t i = cie_hash(off, s->hcap); s->hash[i]; i = (i + 1) & (s->hcap - 1))
		if (s->cies[s->hash[i] - 1].off == off)
			return &s->cies[s->hash[i] - 1];
	return NULL;
}

static int cie_add(struct uw_cfisec *s, const struct uw_cie *c)
{
	if ((s->ncies + 1) * 2 > s->hcap) {
		size_t ncap = s->hcap ? s->hcap * 2 : 64;
		u32 *nh = calloc(ncap, sizeof(*nh));

		if (!nh)
			return -ENOMEM;
		free(s->hash);
		s->hash = nh;
		s->hcap = ncap;
		for (size_t k = 0; k < s->ncies; k++) {
			size_t i = cie_hash(s->cies[k].off, ncap);

			while (nh[i])
				i = (i + 1) & (ncap - 1);
			nh[i] = (u32)(k + 1);
		}
	}
	if (GP_ARRAY_GROW(s->cies, s->cap, s->ncies + 1, 64))
		return -ENOMEM;
	s->cies[s->ncies] = *c;
	{
		size_t i = cie_hash(c->off, s->hcap);

		while (s->hash[i])
			i = (i + 1) & (s->hcap - 1);
		s->hash[i] = (u32)(s->ncies + 1);
	}
	s->ncies++;
	return 0;
}

/* The id field that marks a CIE: 0 in .eh_frame, all ones in .debug_frame. */
static bool is_cie_id(const struct uw_cfisec *s, u64 id, bool dw64)
{
	if (s->is_eh)
		return id == 0;
	return dw64 ? id == ~0ull : id == 0xffffffffull;
}

static int parse_cie(const struct uw_cfisec *s, u64 off, struct uw_cie *c)
{
	struct rd r = { s->base + off, s->base + s->size, false };
	const char *aug;
	u64 len, id;
	bool dw64 = false;
	u8 ver;

	memset(c, 0, sizeof(*c));
	c->off = off;
	c->addr_size = 8;
	c->fde_enc = 0; /* absolute, 8 bytes */
	len = rd_u(&r, 4);
	if (len == 0xffffffff) {
		len = rd_u(&r, 8);
		dw64 = true;
	}
	if (r.err || len > (u64)(r.end - r.p))
		return -EINVAL;
	r.end = r.p + len;
	id = (s->is_eh || !dw64) ? rd_u(&r, 4) : rd_u(&r, 8);
	if (r.err || !is_cie_id(s, id, dw64))
		return -EINVAL;
	ver = (u8)rd_u(&r, 1);
	aug = (const char *)r.p;
	while (r.p < r.end && *r.p)
		r.p++;
	if (r.p >= r.end)
		return -EINVAL;
	r.p++;
	if (aug[0] == 'e' && aug[1] == 'h')
		rd_u(&r, 8);
	if (ver >= 4) {
		c->addr_size = (u8)rd_u(&r, 1);
		rd_u(&r, 1); /* segment selector size */
		if (c->addr_size != 4 && c->addr_size != 8)
			return -EINVAL;
	}
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	if (ver == 1)
		rd_u(&r, 1); /* return address register: x86-64 always uses 16 */
	else
		rd_uleb(&r);
	if (aug[0] == 'z') {
		u64 alen = rd_uleb(&r);
		const u8 *aend = r.p + (alen <= (u64)(r.end - r.p) ? alen : 0);

		if (alen > (u64)(r.end - r.p))
			return -EINVAL;
		c->has_z = true;
		for (const char *a = aug + 1; *a && !r.err; a++) {
			if (*a == 'L') {
				rd_u(&r, 1);
			} else if (*a == 'R') {
				c->fde_enc = (u8)rd_u(&r, 1);
			} else if (*a == 'P') {
				u8 pe = (u8)rd_u(&r, 1);

				rd_enc(&r, pe & 0x7f, s->vaddr, s->base);
			} else if (*a == 'S') {
				c->signal = true;
			} else if (*a != 'B' && *a != 'G') {
				break; /* unknown: 'z' says how long the data is */
			}
		}
		r.p = aend;
	} else if (aug[0] && strcmp(aug, "eh")) {
		return -EINVAL; /* an augmentation without 'z': its data cannot be skipped */
	}
	if (r.err || c->code_align == 0)
		return -EINVAL;
	c->ins = r.p;
	c->ins_end = r.end;
	return 0;
}

/* ---- FDEs ------------------------------------------------------------------------------------ */

/* The FDE's range lies in an executable PT_LOAD, under 4 GiB (rows hold 32-bit pcs). */
static bool in_exec(const struct gp_uw_table *t, u64 lo, u64 hi)
{
	if (hi > 0xffffffffull || hi <= lo)
		return false;
	for (int i = 0; i < t->nsegs; i++)
		if (t->segs[i].exec && lo >= t->segs[i].vaddr &&
		    hi <= t->segs[i].vaddr + t->segs[i].memsz)
			return true;
	return false;
}

int uw_collect_fdes(struct uw_build *b, int si)
{
	struct uw_cfisec *s = &b->secs[si];
	u64 off = 0;

	while (off + 4 <= s->size) {
		struct rd r = { s->base + off, s->base + s->size, false };
		u64 len = rd_u(&r, 4), next, id, cie_off, lo, range;
		const u8 *idp;
		bool dw64 = false;
		struct uw_cie *c;

		if (len == 0) {
			if (s->is_eh)
				break; /* .eh_frame's terminator */
			off += 4;
			continue;
		}
		if (len == 0xffffffff) {
			len = rd_u(&r, 8);
			dw64 = true;
		}
		if (r.err || len > (u64)(r.end - r.p))
			break;
		next = (u64)(r.p - s->base) + len;
		idp = r.p;
		id = (s->is_eh || !dw64) ? rd_u(&r, 4) : rd_u(&r, 8);
		if (r.err)
			break;
		if (is_cie_id(s, id, dw64)) {
			if (!cie_find(s, off)) {
				struct uw_cie nc;

				if (!parse_cie(s, off, &nc)) {
					if (cie_add(s, &nc))
						return -ENOMEM;
					b->st->cies++;
				}
			}
			off = next;
			continue;
		}
		/* .eh_frame: the CIE is id bytes back from the id field; .debug_frame: at offset id */
		if (s->is_eh)
			cie_off = id <= (u64)(idp - s->base) ? (u64)(idp - s->base) - id : s->size;
		else
			cie_off = id;
		c = cie_find(s, cie_off);
		if (!c && cie_off < s->size) {
			struct uw_cie nc;

			if (!parse_cie(s, cie_off, &nc)) {
				if (cie_add(s, &nc))
					return -ENOMEM;
				b->st->cies++;
				c = cie_find(s, cie_off);
			}
		}
		if (!c) {
			b->st->fdes_skipped++;
			off = next;
			continue;
		}
		{
			struct rd fr = { r.p, s->base + next, false };

			if (s->is_eh) {
				lo = rd_enc(&fr, c->fde_enc, s->vaddr, s->base);
				range = rd_enc(&fr, c->fde_enc & 0x0f, s->vaddr, s->base);
			} else {
				lo = rd_u(&fr, c->addr_size);
				range = rd_u(&fr, c->addr_size);
			}
			if (c->has_z)
				rd_skip(&fr, rd_uleb(&fr));
			if (fr.err || range == 0 || lo + range < lo ||
			    !in_exec(b->t, lo, lo + range)) {
				b->st->fdes_skipped++;
			} else {
				if (GP_ARRAY_GROW(b->fdes, b->fcap, b->nfdes + 1, 1024))
					return -ENOMEM;
				b->fdes[b->nfdes++] = (struct uw_fde){
					.lo = lo,
					.hi = lo + range,
					.ins = fr.p,
					.ins_end = fr.end,
					.cie = (u32)(c - s->cies),
					.sec = (u8)si,
					.from_debug = !s->is_eh,
				};
				if (s->is_eh)
					b->st->fdes++;
				else
					b->st->fdes_debug++;
			}
		}
		off = next;
	}
	return 0;
}

/* ---- the CFI program, run once per FDE ------------------------------------------------------- */

enum { R_INIT = 0, R_SAME, R_UNDEF, R_OFF, R_VALOFF, R_REG, R_EXPR, R_VALEXPR };

struct rule {
	u8 kind;
	s64 off;	/* R_OFF, R_VALOFF: bytes from the CFA; R_EXPR: the expression's length */
	const u8 *expr; /* R_EXPR, R_VALEXPR */
};

struct cfastate {
	bool cfa_expr;
	u64 cfa_reg;
	s64 cfa_off;
	const u8 *expr;
	u64 expr_len;
	struct rule rbp, ra;
};

/* DW_OP_breg6 <sleb> [DW_OP_deref]: the offset when e is exactly that. */
static bool breg6(const u8 *e, u64 n, bool deref, s64 *off)
{
	struct rd r = { e, e + n, false };

	if (n < 2 || e[0] != 0x76)
		return false;
	r.p++;
	*off = rd_sleb(&r);
	if (r.err)
		return false;
	if (deref)
		return r.p + 1 == r.end && *r.p == 0x06;
	return r.p == r.end;
}

/* A CFI state as a row (its pc set by the caller). */
static struct gp_uw_row encode(const struct cfastate *s, const struct uw_cie *c)
{
	struct gp_uw_row w = { 0 };
	u8 type, rbp, x8 = 0;
	s64 o;

	if (c->signal)
		goto stop_signal;
	if (s->ra.kind == R_UNDEF) {
		w.flags = ROW_FLAGS(GP_UW_CFA_STOP, 0, GP_UW_STOP_END);
		return w;
	}
	if (s->ra.kind != R_OFF || s->ra.off != -8) {
		w.flags = ROW_FLAGS(GP_UW_CFA_STOP, 0, GP_UW_STOP_RA);
		return w;
	}
	if (s->cfa_expr) {
		const u8 *e = s->expr;

		/* the linker's .plt: breg7 a; breg16 0; lit15; and; lit<k>; ge; lit3; shl; plus */
		if (s->expr_len == 11 && e[0] == 0x77 && !(e[1] & 0xc0) && e[2] == 0x80 &&
		    e[3] == 0 && e[4] == 0x3f && e[5] == 0x1a && e[6] >= 0x30 && e[6] <= 0x3f &&
		    e[7] == 0x2a && e[8] == 0x33 && e[9] == 0x24 && e[10] == 0x22) {
			w.cfa_off = e[1];
			w.rbp_off = (__s8)(e[6] - 0x30);
			rbp = s->rbp.kind <= R_SAME ? GP_UW_RBP_SAME : GP_UW_RBP_UNKNOWN;
			w.flags = ROW_FLAGS(GP_UW_CFA_PLT, rbp, 0);
			return w;
		}
		/* gcc's stack realignment (DRAP): breg6 n; deref */
		if (breg6(e, s->expr_len, true, &o) && o >= INT16_MIN && o <= INT16_MAX) {
			type = GP_UW_CFA_DEREF;
			w.cfa_off = (u16)(int16_t)o;
			goto rbp_rule;
		}
		w.flags = ROW_FLAGS(GP_UW_CFA_STOP, 0, GP_UW_STOP_EXPR);
		return w;
	}
	if (s->cfa_reg == REG_RSP) {
		type = GP_UW_CFA_RSP;
	} else if (s->cfa_reg == REG_RBP) {
		type = GP_UW_CFA_RBP;
	} else {
		w.flags = ROW_FLAGS(GP_UW_CFA_STOP, 0, GP_UW_STOP_CFAREG);
		return w;
	}
	if (s->cfa_off < 0)
		goto stop_range;
	if (s->cfa_off > 0xffff) {
		/* frames over 64 KiB: in 8-byte units, up to 512 KiB */
		if (s->cfa_off % 8 || s->cfa_off / 8 > 0xffff)
			goto stop_range;
		w.cfa_off = (u16)(s->cfa_off / 8);
		x8 = GP_UW_OFF_X8;
	} else {
		w.cfa_off = (u16)s->cfa_off;
	}
rbp_rule:
	switch (s->rbp.kind) {
	case R_INIT:
	case R_SAME:
		rbp = GP_UW_RBP_SAME;
		break;
	case R_OFF:
		rbp = GP_UW_RBP_UNKNOWN;
		if (s->rbp.off % 8 == 0 && s->rbp.off / 8 >= -128 && s->rbp.off / 8 <= 127) {
			rbp = GP_UW_RBP_CFA;
			w.rbp_off = (__s8)(s->rbp.off / 8);
		}
		break;
	case R_EXPR:
		/* DRAP: the caller's rbp saved at rbp + n (DW_CFA_expression rbp: breg6 n) */
		rbp = GP_UW_RBP_UNKNOWN;
		if (breg6(s->rbp.expr, (u64)s->rbp.off, false, &o) && o % 8 == 0 && o / 8 >= -128 &&
		    o / 8 <= 127) {
			rbp = GP_UW_RBP_DEREF;
			w.rbp_off = (__s8)(o / 8);
		}
		break;
	default:
		rbp = GP_UW_RBP_UNKNOWN;
		break;
	}
	w.flags = ROW_FLAGS(type, rbp, 0) | x8;
	return w;
stop_signal:
	w.flags = ROW_FLAGS(GP_UW_CFA_STOP, 0, GP_UW_STOP_SIGNAL);
	return w;
stop_range:
	w.flags = ROW_FLAGS(GP_UW_CFA_STOP, 0, GP_UW_STOP_RANGE);
	return w;
}

static bool same_rule(const struct gp_uw_row *a, const struct gp_uw_row *b)
{
	return a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off && a->flags == b->flags;
}

/* Appends a row at pc: a later row at the same pc replaces the earlier; equal neighbours merge. */
static void row_push(struct uw_build *b, u64 pc, struct gp_uw_row w)
{
	w.pc = (u32)pc;
	b->st->raw_rows++;
	if (b->nrows && b->rows[b->nrows - 1].pc == w.pc) {
		b->rows[b->nrows - 1] = w;
	} else {
		if (GP_ARRAY_GROW(b->rows, b->rcap, b->nrows + 1, 4096)) {
			b->nomem = true;
			return;
		}
		b->rows[b->nrows++] = w;
	}
	if (b->nrows >= 2 && same_rule(&b->rows[b->nrows - 2], &b->rows[b->nrows - 1]))
		b->nrows--;
}

void uw_stop_push(struct uw_build *b, u64 pc, unsigned cause)
{
	row_push(b, pc, (struct gp_uw_row){ .flags = ROW_FLAGS(GP_UW_CFA_STOP, 0, cause) });
}

static void set_rule(struct cfastate *s, u64 reg, struct rule ru)
{
	if (reg == REG_RBP)
		s->rbp = ru;
	else if (reg == REG_RA)
		s->ra = ru;
}

#define MAX_REMEMBER 64

/*
 * Runs a CFI program over state s. init: the state after the CIE's
 * instructions (DW_CFA_restore's target), NULL while running them.
 * With emit, each advance pushes the row of the state so far at *loc, up
 * to hi; without (a CIE), an advance is bad CFI. 0, or -EINVAL.
 */
static int run_cfi(struct uw_build *b, const u8 *p, const u8 *end, const struct uw_cie *c,
		   struct cfastate *s, const struct cfastate *init, u64 *loc, u64 hi, bool emit)
{
	struct cfastate stk[MAX_REMEMBER];
	struct rd r = { p, end, false };
	int sp = 0;

	while (r.p < r.end && !r.err) {
		u8 op = *r.p++;
		u64 adv = 0, reg, n;
		s64 off;

		switch (op >> 6) {
		case 1:
			adv = (u64)(op & 0x3f) * c->code_align;
			goto advance;
		case 2:
			reg = op & 0x3f;
			off = (s64)rd_uleb(&r) * c->data_align;
			goto offset;
		case 3:
			reg = op & 0x3f;
			goto restore;
		}
		switch (op) {
		case 0x00: /* nop */
			break;
		case 0x02: /* advance_loc1 */
			adv = rd_u(&r, 1) * c->code_align;
			goto advance;
		case 0x03: /* advance_loc2 */
			adv = rd_u(&r, 2) * c->code_align;
			goto advance;
		case 0x04: /* advance_loc4 */
			adv = rd_u(&r, 4) * c->code_align;
			goto advance;
		case 0x05: /* offset_extended */
			reg = rd_uleb(&r);
			off = (s64)rd_uleb(&r) * c->data_align;
			goto offset;
		case 0x06: /* restore_extended */
			reg = rd_uleb(&r);
			goto restore;
		case 0x07: /* undefined */
			set_rule(s, rd_uleb(&r), (struct rule){ .kind = R_UNDEF });
			break;
		case 0x08: /* same_value */
			set_rule(s, rd_uleb(&r), (struct rule){ .kind = R_SAME });
			break;
		case 0x09: /* register */
			reg = rd_uleb(&r);
			rd_uleb(&r);
			set_rule(s, reg, (struct rule){ .kind = R_REG });
			break;
		case 0x0a: /* remember_state */
			if (sp == MAX_REMEMBER)
				return -EINVAL;
			stk[sp++] = *s;
			break;
		case 0x0b: /* restore_state: every rule, the CFA's too (as libgcc and libdw do) */
			if (sp == 0)
				return -EINVAL;
			*s = stk[--sp];
			break;
		case 0x0c: /* def_cfa */
			s->cfa_expr = false;
			s->cfa_reg = rd_uleb(&r);
			s->cfa_off = (s64)rd_uleb(&r);
			break;
		case 0x0d: /* def_cfa_register */
			s->cfa_expr = false;
			s->cfa_reg = rd_uleb(&r);
			break;
		case 0x0e: /* def_cfa_offset */
			s->cfa_off = (s64)rd_uleb(&r);
			break;
		case 0x0f: /* def_cfa_expression */
			n = rd_uleb(&r);
			s->cfa_expr = true;
			s->expr = r.p;
			s->expr_len = n;
			rd_skip(&r, n);
			break;
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			reg = rd_uleb(&r);
			n = rd_uleb(&r);
			{
				const u8 *e = r.p;

				rd_skip(&r, n);
				set_rule(s, reg,
					 (struct rule){ .kind = op == 0x10 ? R_EXPR : R_VALEXPR,
							.off = (s64)n,
							.expr = e });
			}
			break;
		case 0x11: /* offset_extended_sf */
			reg = rd_uleb(&r);
			off = rd_sleb(&r) * c->data_align;
			goto offset;
		case 0x12: /* def_cfa_sf */
			s->cfa_expr = false;
			s->cfa_reg = rd_uleb(&r);
			s->cfa_off = rd_sleb(&r) * c->data_align;
			break;
		case 0x13: /* def_cfa_offset_sf */
			s->cfa_off = rd_sleb(&r) * c->data_align;
			break;
		case 0x14: /* val_offset */
			reg = rd_uleb(&r);
			set_rule(s, reg,
				 (struct rule){ .kind = R_VALOFF,
						.off = (s64)rd_uleb(&r) * c->data_align });
			break;
		case 0x15: /* val_offset_sf */
			reg = rd_uleb(&r);
			set_rule(s, reg,
				 (struct rule){ .kind = R_VALOFF,
						.off = rd_sleb(&r) * c->data_align });
			break;
		case 0x2e: /* GNU_args_size */
			rd_uleb(&r);
			break;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = rd_uleb(&r);
			off = -(s64)rd_uleb(&r) * c->data_align;
			goto offset;
		default: /* set_loc (never emitted on x86-64), vendor ops */
			return -EINVAL;
		}
		continue;
offset:
		set_rule(s, reg, (struct rule){ .kind = R_OFF, .off = off });
		continue;
restore:
		/*
		 * In a CIE (init NULL) a restore is invalid DWARF (seen in libnvrtc): read
		 * as "back to the default rule", as libgcc's unwinder does.
		 */
		if (init)
			set_rule(s, reg, reg == REG_RBP ? init->rbp : init->ra);
		else
			set_rule(s, reg, (struct rule){ .kind = R_INIT });
		continue;
advance:
		if (!emit)
			return -EINVAL;
		if (adv) {
			if (*loc >= hi)
				return 0;
			row_push(b, *loc, encode(s, c));
			*loc = adv >= hi - *loc ? hi : *loc + adv;
		}
	}
	return r.err ? -EINVAL : 0;
}

/* One FDE's rows: its CIE's program, then its own (unwind_build.h). */
void uw_fde_rows(struct uw_build *b, const struct uw_fde *f)
{
	const struct uw_cie *c = &b->secs[f->sec].cies[f->cie];
	struct cfastate init = { .cfa_reg = REG_RSP, .cfa_off = 8 }, s;
	u64 loc = f->lo;
	int bad;

	bad = run_cfi(b, c->ins, c->ins_end, c, &init, NULL, &loc, f->hi, false);
	s = init;
	if (!bad)
		bad = run_cfi(b, f->ins, f->ins_end, c, &s, &init, &loc, f->hi, true);
	if (bad)
		uw_stop_push(b, loc, GP_UW_STOP_OTHER); /* the rows before the bad op stay */
	else if (loc < f->hi)
		row_push(b, loc, encode(&s, c));
}

/* ---- .eh_frame_hdr --------------------------------------------------------------------------- */

int uw_eh_frame_ptr(const u8 *h, size_t avail, u64 hdr_vaddr, u64 *eh_vaddr)
{
	struct rd r = { h + 4, h + avail, false };

	if (avail < 8 || h[0] != 1)
		return -EINVAL;
	*eh_vaddr = rd_enc(&r, h[1], hdr_vaddr, h);
	return r.err ? -EINVAL : 0;
}
