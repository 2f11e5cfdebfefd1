/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind_table.c — an ELF file's unwind table (see unwind_table.h), over
 * libelf: its segments and build-id, its call-frame sections (.eh_frame,
 * found through PT_GNU_EH_FRAME where the file has no section headers;
 * .debug_frame, compressed or not), their FDEs (read and run by
 * unwind_cfi.c, which says why not libdw) sorted, overlaps settled and gaps
 * stopped into one table; and the lookups in a table (row, bias, text).
 * Where .eh_frame and .debug_frame both describe an address, .eh_frame
 * wins; .debug_frame fills what .eh_frame leaves out.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/view.h"
#include "stacks/unwind_build.h"
#include "stacks/unwind_table.h"

typedef __u8 u8;
typedef __u64 u64;

/* ---- the build ------------------------------------------------------------------------------- */

static int fde_cmp(const void *a, const void *b)
{
	const struct uw_fde *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->from_debug != y->from_debug)
		return x->from_debug ? 1 : -1; /* .eh_frame first */
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Bytes of the file at vaddr va (segments' file part), and how many follow. */
static const u8 *at_vaddr(const struct gp_uw_table *t, const u8 *img, size_t imgsz, u64 va,
			  size_t *avail)
{
	for (int i = 0; i < t->nsegs; i++) {
		const struct gp_uw_seg *g = &t->segs[i];

		if (va >= g->vaddr && va < g->vaddr + g->filesz && g->offset <= imgsz &&
		    g->filesz <= imgsz - g->offset) {
			*avail = g->vaddr + g->filesz - va;
			return img + g->offset + (va - g->vaddr);
		}
	}
	return NULL;
}

static void read_build_id(Elf *e, unsigned char id[20], size_t *len)
{
	size_t nph;

	*len = 0;
	if (elf_getphdrnum(e, &nph))
		return;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + name_off, "GNU", 4)) {
				*len = nh.n_descsz < 20 ? nh.n_descsz : 20;
				memcpy(id, (char *)d->d_buf + desc_off, *len);
				return;
			}
		}
	}
}

static Elf *elf_x86_64(int fd)
{
	Elf *e;
	GElf_Ehdr eh;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return NULL;
	if (elf_kind(e) != ELF_K_ELF || gelf_getclass(e) != ELFCLASS64 || !gelf_getehdr(e, &eh) ||
	    eh.e_machine != EM_X86_64) {
		elf_end(e);
		return NULL;
	}
	return e;
}

int gp_uw_build_id_fd(int fd, unsigned char id[20], size_t *len)
{
	Elf *e = elf_x86_64(fd);

	*len = 0;
	if (!e)
		return -ENOEXEC;
	read_build_id(e, id, len);
	elf_end(e);
	return 0;
}

static void find_sections(struct uw_build *b, Elf *e, const GElf_Phdr *ehp)
{
	struct gp_uw_table_stats *st = b->st;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		shstrndx = 0;
	while (shstrndx && (scn = elf_nextscn(e, scn))) {
		const char *name;
		Elf_Data *d;
		GElf_Shdr sh;
		bool is_eh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name)
			continue;
		is_eh = !strcmp(name, ".eh_frame");
		if (!is_eh && strcmp(name, ".debug_frame"))
			continue;
		if ((is_eh ? st->eh_frame : st->debug_frame) || b->nsecs == 2)
			continue;
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || !d->d_size)
			continue;
		b->secs[b->nsecs++] = (struct uw_cfisec){
			.base = d->d_buf, .size = d->d_size, .vaddr = sh.sh_addr, .is_eh = is_eh
		};
		if (is_eh)
			st->eh_frame = true;
		else
			st->debug_frame = true;
	}
	if (!st->eh_frame && ehp && b->nsecs < 2) {
		/* no section headers: .eh_frame_hdr's eh_frame_ptr, read to its terminator */
		size_t imgsz, av;
		const u8 *img = (const u8 *)elf_rawfile(e, &imgsz), *h, *ehd;
		u64 ehva;

		h = img ? at_vaddr(b->t, img, imgsz, ehp->p_vaddr, &av) : NULL;
		if (h && !uw_eh_frame_ptr(h, av, ehp->p_vaddr, &ehva)) {
			ehd = at_vaddr(b->t, img, imgsz, ehva, &av);
			if (ehd) {
				b->secs[b->nsecs++] = (struct uw_cfisec){
					.base = ehd, .size = av, .vaddr = ehva, .is_eh = true
				};
				st->eh_frame = st->eh_frame_from_hdr = true;
			}
		}
	}
}

/* Every FDE's rows, in address order, with stop rows in the gaps. */
static int make_rows(struct uw_build *b, unsigned gap_slack)
{
	u64 prev_hi = 0;
	bool have_prev = false;

	for (size_t i = 0; i < b->nfdes && !b->nomem; i++) {
		const struct uw_fde *f = &b->fdes[i];

		if (have_prev && f->lo < prev_hi) {
			/* overlap: .eh_frame over .debug_frame; else the later start, to its end */
			b->st->overlaps++;
			if (f->from_debug || f->hi <= prev_hi)
				continue;
			while (b->nrows && b->rows[b->nrows - 1].pc >= f->lo)
				b->nrows--;
		} else if (have_prev && f->lo > prev_hi && f->lo - prev_hi >= gap_slack) {
			uw_stop_push(b, prev_hi, GP_UW_STOP_GAP);
		}
		uw_fde_rows(b, f);
		prev_hi = f->hi;
		have_prev = true;
	}
	if (have_prev)
		uw_stop_push(b, prev_hi, GP_UW_STOP_GAP);
	return b->nomem ? -ENOMEM : 0;
}

static void count_rows(struct uw_build *b)
{
	struct gp_uw_table_stats *st = b->st;

	st->rows = b->nrows;
	st->bytes = b->nrows * sizeof(struct gp_uw_row);
	for (size_t i = 0; i < b->nrows; i++) {
		const struct gp_uw_row *w = &b->rows[i];
		u64 len = i + 1 < b->nrows ? (u64)b->rows[i + 1].pc - w->pc : 0;
		unsigned type = GP_UW_CFA_TYPE(w->flags);

		st->type_rows[type]++;
		st->type_bytes[type] += len;
		if (type == GP_UW_CFA_STOP) {
			st->stop_rows[GP_UW_STOP_CAUSE(w->flags)]++;
			st->stop_bytes[GP_UW_STOP_CAUSE(w->flags)] += len;
		} else {
			if (GP_UW_RBP_RULE(w->flags) == GP_UW_RBP_UNKNOWN)
				st->rbp_unknown_bytes += len;
			if (w->flags & GP_UW_OFF_X8)
				st->x8_rows++;
		}
	}
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

int gp_uw_table_build_fd(int fd, unsigned gap_slack, struct gp_uw_table *t,
			 struct gp_uw_table_stats *stats)
{
	struct gp_uw_table_stats local;
	struct gp_uw_table_stats *st = stats ? stats : &local;
	struct uw_build b = { .t = t, .st = st };
	GElf_Phdr ehp = { 0 };
	bool has_ehp = false;
	__u64 t0 = now_ns();
	size_t nph;
	Elf *e;
	int err = 0;

	memset(t, 0, sizeof(*t));
	memset(st, 0, sizeof(*st));
	e = elf_x86_64(fd);
	if (!e)
		return -ENOEXEC;
	if (elf_getphdrnum(e, &nph)) {
		err = -ENOEXEC;
		goto out;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD && t->nsegs < GP_UW_MAX_SEGS)
			t->segs[t->nsegs++] = (struct gp_uw_seg){
				.vaddr = ph.p_vaddr,
				.offset = ph.p_offset,
				.filesz = ph.p_filesz,
				.memsz = ph.p_memsz,
				.exec = !!(ph.p_flags & PF_X),
			};
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			st->exec_bytes += ph.p_memsz;
		if (ph.p_type == PT_GNU_EH_FRAME) {
			ehp = ph;
			has_ehp = true;
		}
	}
	read_build_id(e, t->build_id, &t->build_id_len);
	find_sections(&b, e, has_ehp ? &ehp : NULL);
	for (int i = 0; i < b.nsecs && !err; i++)
		err = uw_collect_fdes(&b, i);
	if (err)
		goto out;
	if (!b.nfdes) {
		err = -ENODATA;
		goto out;
	}
	qsort(b.fdes, b.nfdes, sizeof(*b.fdes), fde_cmp);
	err = make_rows(&b, gap_slack);
	if (err)
		goto out;
	if (b.nrows > GP_UW_TABLE_MAX_ROWS) {
		err = -EFBIG;
		goto out;
	}
	count_rows(&b);
	t->rows = b.rows;
	t->nrows = b.nrows;
	b.rows = NULL;
out:
	for (int i = 0; i < b.nsecs; i++) {
		free(b.secs[i].cies);
		free(b.secs[i].hash);
	}
	free(b.fdes);
	free(b.rows);
	elf_end(e);
	if (err)
		memset(t, 0, sizeof(*t));
	st->build_ns = now_ns() - t0;
	return err;
}

int gp_uw_table_build(const char *path, unsigned gap_slack, struct gp_uw_table *t,
		      struct gp_uw_table_stats *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0) {
		memset(t, 0, sizeof(*t));
		return -errno;
	}
	err = gp_uw_table_build_fd(fd, gap_slack, t, st);
	close(fd);
	return err;
}

void gp_uw_table_release(struct gp_uw_table *t)
{
	if (!t)
		return;
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

long gp_uw_rows_find(const struct gp_uw_row *rows, size_t n, __u64 key)
{
	size_t lo = 0, hi = n;

	if (!n || key < rows[0].pc || key > 0xffffffffull)
		return -1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= key)
			lo = mid;
		else
			hi = mid;
	}
	return (long)lo;
}

int gp_uw_table_bias(const struct gp_uw_seg *segs, int nsegs, __u64 start, __u64 pgoff, __u64 *bias)
{
	int found = -1;

	for (int i = 0; i < nsegs; i++) {
		const struct gp_uw_seg *g = &segs[i];
		__u64 page = g->offset & ~0xfffull;

		if (!g->filesz || pgoff < page || pgoff >= g->offset + g->filesz)
			continue;
		if (found < 0 || (g->exec && !segs[found].exec))
			found = i;
	}
	if (found < 0)
		return -ENOENT;
	*bias = start - pgoff - (segs[found].vaddr - segs[found].offset);
	return 0;
}

const char *gp_uw_row_describe(const struct gp_uw_row *r, char *buf, size_t len)
{
	char rb[32] = "rbp=same";
	u8 f = r->flags;

	if (GP_UW_RBP_RULE(f) == GP_UW_RBP_CFA)
		snprintf(rb, sizeof(rb), "rbp=[cfa%+d]", 8 * r->rbp_off);
	else if (GP_UW_RBP_RULE(f) == GP_UW_RBP_UNKNOWN)
		snprintf(rb, sizeof(rb), "rbp=?");
	else if (GP_UW_RBP_RULE(f) == GP_UW_RBP_DEREF)
		snprintf(rb, sizeof(rb), "rbp=[rbp%+d]", 8 * r->rbp_off);
	switch (GP_UW_CFA_TYPE(f)) {
	case GP_UW_CFA_RSP:
		snprintf(buf, len, "cfa=rsp+%u %s", gp_uw_row_cfa_off(r), rb);
		break;
	case GP_UW_CFA_RBP:
		snprintf(buf, len, "cfa=rbp+%u %s", gp_uw_row_cfa_off(r), rb);
		break;
	case GP_UW_CFA_PLT:
		snprintf(buf, len, "cfa=rsp+%u+((pc&15)>=%d?8:0) %s", r->cfa_off, r->rbp_off, rb);
		break;
	case GP_UW_CFA_DEREF:
		snprintf(buf, len, "cfa=[rbp%+d] %s", (int16_t)r->cfa_off, rb);
		break;
	case GP_UW_CFA_STOP:
		snprintf(buf, len, "STOP(%s)", gp_uw_stop_cause_name(GP_UW_STOP_CAUSE(f)));
		break;
	default:
		snprintf(buf, len, "bad(%#x)", f);
		break;
	}
	return buf;
}
