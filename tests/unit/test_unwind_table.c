/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_unwind_table.c — unwind tables (src/stacks/unwind_table.c,
 * unwind_cfi.c) and their owner in the session (src/stacks/unwind_maps.c,
 * unwind_files.c), checked against
 * independent references:
 *  - elfutils' libdw reads the same call-frame information its own way:
 *    every row of the fixture's files (tests/unit/uwfix: -O2
 *    -fomit-frame-pointer, every frame shape, .eh_frame and a compressed
 *    .debug_frame), of libc.so.6 and of Debian's python3.11 is compared with
 *    libdw's answer at its first, its last and a random address;
 *  - glibc's backtrace() (libgcc's unwinder) in a live process: the fixture
 *    program, and python3.11 calling the fixture library through ctypes and
 *    back through a libffi closure, stop at their deepest frame and report
 *    their registers and backtrace(); the test walks their stacks from
 *    outside as the BPF walk does (a model of it below, reading the memory
 *    with process_vm_readv) and must find the same frames, to _start;
 *  - with CAP_BPF, the same walk over what gp_unwind published in real BPF
 *    maps (mappings, files, the mmap'ed pool): refresh after a dlopen,
 *    reuse across processes, by inode and by build-id, eviction, a full pool.
 */
#include <bpf/bpf.h>
#include <elfutils/libdw.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "probes/discover.h"
#include "stacks/unwind_maps.h"
#include "gpuprobed/events.h"
#include "symbolize/elf_syms.h"
#include "proc_maps.h"
#include "stacks/unwind_table.h"

#define PY311 "/usr/bin/python3.11"

static char fixdir[PATH_MAX];

static const char *fixture(const char *name)
{
	static char path[4][PATH_MAX + 64];
	static int k;

	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s/%s", fixdir, name);
	return path[k];
}

/* Deterministic "random" addresses: the same on every run. */
static __u64 lcg(__u64 *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 17;
}

static __u8 row_flags(unsigned cfa, unsigned rbp, unsigned cause)
{
	return (__u8)(cfa | (rbp << 3) | (cause << 5));
}

/* ---- libdw: the reference -------------------------------------------------------------------- */

struct ref {
	int fd;
	Elf *elf;
	Dwarf *dw;
	Dwarf_CFI *eh, *dbg;
};

static void ref_open(struct ref *r, const char *path)
{
	memset(r, 0, sizeof(*r));
	elf_version(EV_CURRENT);
	r->fd = open(path, O_RDONLY);
	assert_true(r->fd >= 0);
	r->elf = elf_begin(r->fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(r->elf);
	r->eh = dwarf_getcfi_elf(r->elf);
	r->dw = dwarf_begin_elf(r->elf, DWARF_C_READ, NULL);
	if (r->dw)
		r->dbg = dwarf_getcfi(r->dw);
	assert_true(r->eh || r->dbg);
}

static void ref_close(struct ref *r)
{
	if (r->eh)
		dwarf_cfi_end(r->eh);
	if (r->dw)
		dwarf_end(r->dw);
	elf_end(r->elf);
	close(r->fd);
}

static void stop_row(struct gp_uw_row *w, unsigned cause)
{
	w->flags = row_flags(GP_UW_CFA_STOP, 0, cause);
}

/* libdw's frame at a pc, said as a row would say it (its pc aside). */
static void ref_encode(Dwarf_Frame *fr, struct gp_uw_row *w)
{
	Dwarf_Op mem[3], *ops;
	Dwarf_Addr s, e;
	size_t n;
	bool sig;
	int type, rbp = GP_UW_RBP_UNKNOWN, x8 = 0;

	memset(w, 0, sizeof(*w));
	dwarf_frame_info(fr, &s, &e, &sig);
	if (sig)
		return stop_row(w, GP_UW_STOP_SIGNAL);
	if (dwarf_frame_register(fr, 16, mem, &ops, &n))
		return stop_row(w, GP_UW_STOP_OTHER);
	if (ops && n == 0)
		return stop_row(w, GP_UW_STOP_END);
	if (!(ops && n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
	      ops[1].atom == DW_OP_plus_uconst && (int64_t)ops[1].number == -8))
		return stop_row(w, GP_UW_STOP_RA);
	if (dwarf_frame_cfa(fr, &ops, &n))
		return stop_row(w, GP_UW_STOP_OTHER);
	if (n == 1 && ops[0].atom == DW_OP_bregx) {
		int64_t off = (int64_t)ops[0].number2;

		if (ops[0].number == 7)
			type = GP_UW_CFA_RSP;
		else if (ops[0].number == 6)
			type = GP_UW_CFA_RBP;
		else
			return stop_row(w, GP_UW_STOP_CFAREG);
		if (off < 0 || (off > 0xffff && (off % 8 || off / 8 > 0xffff)))
			return stop_row(w, GP_UW_STOP_RANGE);
		if (off > 0xffff) {
			w->cfa_off = (__u16)(off / 8);
			x8 = GP_UW_OFF_X8;
		} else {
			w->cfa_off = (__u16)off;
		}
	} else if (n == 9 && ops[0].atom == DW_OP_breg7 && ops[1].atom == DW_OP_breg16 &&
		   ops[2].atom == DW_OP_lit15 && ops[3].atom == DW_OP_and &&
		   ops[4].atom >= DW_OP_lit0 && ops[4].atom <= DW_OP_lit15 &&
		   ops[5].atom == DW_OP_ge && ops[6].atom == DW_OP_lit3 &&
		   ops[7].atom == DW_OP_shl && ops[8].atom == DW_OP_plus) {
		/* the .plt: rsp + a, 8 more from the slot's byte k on */
		type = GP_UW_CFA_PLT;
		w->cfa_off = (__u16)ops[0].number;
		w->rbp_off = (__s8)(ops[4].atom - DW_OP_lit0);
	} else if (n == 2 && ops[0].atom == DW_OP_breg6 && ops[1].atom == DW_OP_deref) {
		type = GP_UW_CFA_DEREF;
		w->cfa_off = (__u16)(int16_t)(int64_t)ops[0].number;
	} else {
		return stop_row(w, GP_UW_STOP_EXPR);
	}
	if (!dwarf_frame_register(fr, 6, mem, &ops, &n)) {
		if (!ops && n == 0) {
			rbp = GP_UW_RBP_SAME;
		} else if (ops && (n == 1 || n == 2) && ops[0].atom == DW_OP_call_frame_cfa &&
			   (n == 1 || ops[1].atom == DW_OP_plus_uconst)) {
			int64_t o = n == 2 ? (int64_t)ops[1].number : 0;

			if (o % 8 == 0 && o / 8 >= -128 && o / 8 <= 127) {
				rbp = GP_UW_RBP_CFA;
				w->rbp_off = (__s8)(o / 8);
			}
		} else if (ops && n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
			   ops[1].atom == DW_OP_breg6 && (int64_t)ops[1].number % 8 == 0 &&
			   (int64_t)ops[1].number / 8 >= -128 &&
			   (int64_t)ops[1].number / 8 <= 127) {
			/* a DW_CFA_expression rule: libdw puts the CFA first */
			rbp = GP_UW_RBP_DEREF;
			w->rbp_off = (__s8)((int64_t)ops[1].number / 8);
		}
	}
	if (type == GP_UW_CFA_PLT) {
		/* a .plt row has no room for an rbp offset (its rbp_off is the slot's threshold) */
		if (rbp != GP_UW_RBP_SAME)
			rbp = GP_UW_RBP_UNKNOWN;
	}
	w->flags = row_flags((unsigned)type, (unsigned)rbp, 0) | (__u8)x8;
}

/* The row libdw says for pc: .eh_frame first, then .debug_frame; no FDE: a gap. -1: invalid CFI. */
static int ref_row(struct ref *r, __u64 pc, struct gp_uw_row *w)
{
	Dwarf_CFI *cfis[2] = { r->eh, r->dbg };

	for (int i = 0; i < 2; i++) {
		Dwarf_Frame *fr = NULL;

		if (!cfis[i])
			continue;
		if (dwarf_cfi_addrframe(cfis[i], pc, &fr)) {
			/* "no matching address range": no FDE there */
			if (strstr(dwarf_errmsg(-1), "invalid"))
				return -1;
			continue;
		}
		ref_encode(fr, w);
		free(fr);
		return 0;
	}
	memset(w, 0, sizeof(*w));
	stop_row(w, GP_UW_STOP_GAP);
	return 0;
}

static bool same_row(const struct gp_uw_row *a, const struct gp_uw_row *b)
{
	return a->flags == b->flags && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

/* Kinds of rows a table holds, to know what a comparison covered. */
#define SEEN_CFA(t)  (1u << (t))
#define SEEN_RBP(r)  (1u << (8 + (r)))
#define SEEN_STOP(c) (1u << (16 + (c)))
#define SEEN_X8	     (1u << 24)

/* Every row of path (no gap slack) against libdw at 3 addresses. Returns the kinds seen. */
static unsigned check_against_libdw(const char *path, struct gp_uw_table_stats *out)
{
	struct gp_uw_table t;
	struct gp_uw_table_stats st;
	struct ref r;
	unsigned long checked = 0, bad = 0, invalid = 0;
	unsigned seen = 0;
	__u64 seed = 1;
	char b1[96], b2[96];

	assert_int_equal(gp_uw_table_build(path, 0, &t, &st), 0);
	assert_true(t.nrows > 1);
	ref_open(&r, path);
	for (size_t i = 0; i < t.nrows; i++) {
		const struct gp_uw_row *m = &t.rows[i];
		__u64 lo = m->pc, hi = i + 1 < t.nrows ? t.rows[i + 1].pc : lo + 1;
		__u64 pcs[3] = { lo, hi - 1, lo + lcg(&seed) % (hi - lo) };

		if (i + 1 < t.nrows)
			assert_true(t.rows[i + 1].pc > m->pc);
		if (GP_UW_CFA_TYPE(m->flags) == GP_UW_CFA_STOP) {
			seen |= SEEN_STOP(GP_UW_STOP_CAUSE(m->flags));
		} else {
			seen |= SEEN_CFA(GP_UW_CFA_TYPE(m->flags)) |
				SEEN_RBP(GP_UW_RBP_RULE(m->flags));
			if (m->flags & GP_UW_OFF_X8)
				seen |= SEEN_X8;
		}
		for (int k = 0; k < 3; k++) {
			struct gp_uw_row w;

			if (ref_row(&r, pcs[k], &w)) {
				invalid++;
				continue;
			}
			checked++;
			if (same_row(m, &w))
				continue;
			if (bad++ < 10)
				print_message("%s: pc %#llx, row %zu at %#x: ours %s, libdw %s\n",
					      path, (unsigned long long)pcs[k], i, m->pc,
					      gp_uw_row_describe(m, b1, sizeof(b1)),
					      gp_uw_row_describe(&w, b2, sizeof(b2)));
		}
	}
	ref_close(&r);
	/* the last row (after the last FDE) is a gap */
	assert_int_equal(t.rows[t.nrows - 1].flags, row_flags(GP_UW_CFA_STOP, 0, GP_UW_STOP_GAP));
	assert_int_equal(bad, 0);
	assert_int_equal(invalid, 0);
	assert_true(checked >= 3 * t.nrows - 2);
	if (out)
		*out = st;
	gp_uw_table_release(&t);
	return seen;
}

static void fixture_tables_match_libdw(void **state)
{
	struct gp_uw_table_stats st;
	unsigned seen;

	seen = check_against_libdw(fixture("uw_deep"), &st);
	assert_true(st.eh_frame && !st.debug_frame);
	/* exe_a's 70000-byte frame, _start's undefined return address, the .plt */
	assert_true(seen & SEEN_X8);
	assert_true(seen & SEEN_STOP(GP_UW_STOP_END));
	assert_true(seen & SEEN_CFA(GP_UW_CFA_PLT));

	seen |= check_against_libdw(fixture("libuwfix.so"), &st);
	/* lib_d's alloca (CFA = rbp + 16, rbp saved at CFA - 16), lib_g's DRAP */
	assert_true(seen & SEEN_CFA(GP_UW_CFA_RSP));
	assert_true(seen & SEEN_CFA(GP_UW_CFA_RBP));
	assert_true(seen & SEEN_CFA(GP_UW_CFA_DEREF));
	assert_true(seen & SEEN_RBP(GP_UW_RBP_SAME));
	assert_true(seen & SEEN_RBP(GP_UW_RBP_CFA));
	assert_true(seen & SEEN_RBP(GP_UW_RBP_DEREF));
	assert_true(seen & SEEN_STOP(GP_UW_STOP_GAP));

	/* .eh_frame for uwfix_lib.c's code, a compressed .debug_frame for uwfix_dbg.c's */
	check_against_libdw(fixture("libuwfix_dbg.so"), &st);
	assert_true(st.eh_frame && st.debug_frame);
	assert_true(st.fdes > 0 && st.fdes_debug >= 3);
}

/* The libc.so.6 this very test runs on. */
static const char *own_libc(void)
{
	static char path[PATH_MAX];
	struct gp_maps *maps;

	if (path[0])
		return path;
	assert_int_equal(gp_maps_read(getpid(), &maps), 0);
	for (size_t i = 0; i < maps->n && !path[0]; i++)
		if (maps->v[i].exec && strstr(maps->v[i].path, "/libc.so.6"))
			snprintf(path, sizeof(path), "%s", maps->v[i].path);
	gp_maps_free(maps);
	assert_true(path[0]);
	return path;
}

static void system_tables_match_libdw(void **state)
{
	struct gp_uw_table_stats st;
	unsigned seen;

	seen = check_against_libdw(own_libc(), &st);
	/* __restore_rt is a signal frame; __longjmp's return address is no CFA - 8 */
	assert_true(seen & SEEN_STOP(GP_UW_STOP_SIGNAL));
	assert_true(seen & SEEN_STOP(GP_UW_STOP_RA));
	assert_true(st.rows > 10000);

	if (access(PY311, R_OK)) {
		print_message("%s is not installed: its table is not checked\n", PY311);
		return;
	}
	check_against_libdw(PY311, &st);
	assert_true(st.rows > 10000);
}

/*
 * With the gap slack, a table is the exact one without its stop rows over
 * gaps shorter than the slack, equal neighbours merged: nothing else moves.
 */
static void check_slack(const char *path)
{
	struct gp_uw_table exact, slack;
	struct gp_uw_row *want;
	size_t n = 0;

	assert_int_equal(gp_uw_table_build(path, 0, &exact, NULL), 0);
	assert_int_equal(gp_uw_table_build(path, GP_UW_GAP_SLACK, &slack, NULL), 0);
	want = malloc(exact.nrows * sizeof(*want));
	assert_non_null(want);
	for (size_t i = 0; i < exact.nrows; i++) {
		const struct gp_uw_row *w = &exact.rows[i];

		if (w->flags == row_flags(GP_UW_CFA_STOP, 0, GP_UW_STOP_GAP) &&
		    i + 1 < exact.nrows && i > 0 && exact.rows[i + 1].pc - w->pc < GP_UW_GAP_SLACK)
			continue;
		if (n && same_row(&want[n - 1], w))
			continue;
		want[n++] = *w;
	}
	assert_true(slack.nrows < exact.nrows);
	assert_int_equal(slack.nrows, n);
	assert_memory_equal(slack.rows, want, n * sizeof(*want));
	free(want);
	gp_uw_table_release(&exact);
	gp_uw_table_release(&slack);
}

static void gap_slack_drops_only_short_gaps(void **state)
{
	check_slack(fixture("libuwfix.so"));
	check_slack(own_libc());
	if (!access(PY311, R_OK))
		check_slack(PY311);
}

/* Files the builder must turn down, and damaged CFI it must survive. */
static void bad_files(void **state)
{
	struct gp_uw_table t;
	struct gp_uw_table_stats st;
	char dir[PATH_MAX + 64], path[PATH_MAX + 128];
	struct gp_uw_table good;
	unsigned char *img;
	size_t eh_off = 0, eh_size = 0, len;
	__u64 seed = 7;
	int fd;

	snprintf(dir, sizeof(dir), "%s", fixture("tmp-XXXXXX"));
	assert_non_null(mkdtemp(dir));
	assert_int_equal(gp_uw_table_build(fixture("libuwfix_nocfi.so"), 16, &t, &st), -ENODATA);
	assert_int_equal(t.nrows, 0);
	snprintf(path, sizeof(path), "%s/text.so", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
	close(fd);
	assert_int_equal(gp_uw_table_build(path, 16, &t, &st), -ENOEXEC);
	unlink(path);
	snprintf(path, sizeof(path), "%s/none.so", dir);
	assert_int_equal(gp_uw_table_build(path, 16, &t, &st), -ENOENT);

	/* the fixture library with its .eh_frame damaged at random, 300 times */
	assert_int_equal(gp_uw_table_build(fixture("libuwfix.so"), 16, &good, NULL), 0);
	img = (unsigned char *)gp_read_whole_file(fixture("libuwfix.so"), &len);
	assert_non_null(img);
	{
		Elf *e;
		Elf_Scn *scn = NULL;
		size_t shstrndx;

		elf_version(EV_CURRENT);
		e = elf_memory((char *)img, len);
		assert_non_null(e);
		assert_int_equal(elf_getshdrstrndx(e, &shstrndx), 0);
		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;

			gelf_getshdr(scn, &sh);
			if (!strcmp(elf_strptr(e, shstrndx, sh.sh_name), ".eh_frame")) {
				eh_off = sh.sh_offset;
				eh_size = sh.sh_size;
			}
		}
		elf_end(e);
	}
	assert_true(eh_size > 64);
	snprintf(path, sizeof(path), "%s/damaged.so", dir);
	for (int round = 0; round < 300; round++) {
		unsigned char *copy = malloc(len);
		int err;

		memcpy(copy, img, len);
		for (int k = 0; k < 1 + round % 8; k++)
			copy[eh_off + lcg(&seed) % eh_size] = (unsigned char)lcg(&seed);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, copy, len), (ssize_t)len);
		close(fd);
		err = gp_uw_table_build(path, 16, &t, &st);
		assert_true(err == 0 || err == -ENODATA);
		for (size_t i = 0; i + 1 < t.nrows; i++)
			assert_true(t.rows[i].pc < t.rows[i + 1].pc);
		for (size_t i = 0; i < t.nrows; i++)
			assert_true(GP_UW_CFA_TYPE(t.rows[i].flags) <= GP_UW_CFA_DEREF ||
				    GP_UW_CFA_TYPE(t.rows[i].flags) == GP_UW_CFA_STOP);
		gp_uw_table_release(&t);
		free(copy);
	}
	unlink(path);
	rmdir(dir);
	free(img);
	gp_uw_table_release(&good);
}

/* ---- a live process stopped at its deepest frame --------------------------------------------- */

struct child {
	pid_t pid;
	FILE *out; /* its stdout */
	int in;	   /* its stdin */
	__u64 rip, rsp, rbp;
	__u64 bt[128];
	int nbt;
};

static void child_start(struct child *c, char *const argv[])
{
	int to[2], from[2];
	char line[8192];
	bool ready = false;

	memset(c, 0, sizeof(*c));
	assert_int_equal(pipe(to), 0);
	assert_int_equal(pipe(from), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[0]);
		close(to[1]);
		close(from[0]);
		close(from[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = to[1];
	c->out = fdopen(from[0], "r");
	assert_non_null(c->out);
	while (!ready && fgets(line, sizeof(line), c->out)) {
		if (!strncmp(line, "regs ", 5)) {
			unsigned long long a, b, d;

			assert_int_equal(sscanf(line + 5, "%llx %llx %llx", &a, &b, &d), 3);
			c->rip = a;
			c->rsp = b;
			c->rbp = d;
		} else if (!strncmp(line, "bt ", 3)) {
			char *p = line + 3, *end;

			c->nbt = (int)strtol(p, &end, 10);
			assert_true(c->nbt > 0 && c->nbt <= 128);
			for (int i = 0; i < c->nbt; i++)
				c->bt[i] = strtoull(end, &end, 16);
		} else if (!strcmp(line, "ready\n")) {
			ready = true;
		}
	}
	if (!ready)
		fail_msg("%s did not report its stack", argv[0]);
}

static void child_cmd(struct child *c, const char *cmd, const char *want)
{
	char line[256];

	assert_int_equal(write(c->in, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
	assert_non_null(fgets(line, sizeof(line), c->out));
	assert_string_equal(line, want);
}

static void child_end(struct child *c)
{
	int status;

	assert_int_equal(write(c->in, "q\n", 2), 2);
	close(c->in);
	fclose(c->out);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	assert_true(WIFEXITED(status));
}

static void fixture_child(struct child *c)
{
	char *argv[] = { (char *)fixture("uw_deep"), NULL };

	child_start(c, argv);
}

/* python3.11 -> ctypes -> lib_c .. lib_f -> libffi closure -> Python -> ctypes -> uwfix_report */
static bool python_child(struct child *c)
{
	static const char script[] = "import ctypes, sys\n"
				     "lib = ctypes.CDLL(sys.argv[1])\n"
				     "CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)\n"
				     "def back(x):\n"
				     "    return lib.uwfix_report() + x\n"
				     "cb = CB(back)\n"
				     "lib.lib_c(3, cb)\n";
	char *argv[] = { PY311, "-c", (char *)script, (char *)fixture("libuwfix.so"), NULL };

	if (access(PY311, X_OK)) {
		print_message("%s is not installed: no Python stack walked\n", PY311);
		return false;
	}
	child_start(c, argv);
	return true;
}

/* ---- the walk: a model of the BPF program's -------------------------------------------------- */

struct wmap {
	__u64 start, end, bias;
	const struct gp_uw_row *rows; /* NULL: no table */
	size_t n;
	char path[PATH_MAX + 64]; /* opens the mapped file */
};

struct wspace {
	pid_t pid;
	struct wmap *v;
	size_t n;
	struct gp_uw_table *tabs; /* built by the test itself (walk_tables), freed with it */
	size_t ntabs;
};

static const struct wmap *wmap_find(const struct wspace *ws, __u64 pc)
{
	for (size_t i = 0; i < ws->n; i++)
		if (pc >= ws->v[i].start && pc < ws->v[i].end)
			return &ws->v[i];
	return NULL;
}

static int read_u64(pid_t pid, __u64 addr, __u64 *v)
{
	struct iovec l = { v, 8 }, r = { (void *)(uintptr_t)addr, 8 };

	return process_vm_readv(pid, &l, 1, &r, 1, 0) == 8 ? 0 : -errno;
}

/*
 * The walk the rows are for: frame 0 at (pc, sp, bp), then each caller.
 * is_ret: frame 0's pc is a return address. Returns the frames; *stop and
 * *detail say why it ended (GP_STOP_*, GP_UW_STOP_*).
 */
static int walk(const struct wspace *ws, __u64 pc, __u64 sp, __u64 bp, bool is_ret, __u64 *pcs,
		int max, int *stop, int *detail)
{
	bool bp_ok = true;
	int n = 0;

	*detail = 0;
	while (n < max) {
		const struct wmap *m = wmap_find(ws, pc);
		const struct gp_uw_row *w;
		__u64 cfa, ra;
		long i;

		pcs[n++] = pc;
		if (!m) {
			*stop = GP_STOP_NO_MAPPING;
			return n;
		}
		if (!m->rows) {
			*stop = GP_STOP_NO_TABLE;
			return n;
		}
		i = gp_uw_rows_find(m->rows, m->n, pc - m->bias - (is_ret ? 1 : 0));
		if (i < 0) {
			*stop = GP_STOP_TABLE;
			*detail = GP_UW_STOP_GAP;
			return n;
		}
		w = &m->rows[i];
		switch (GP_UW_CFA_TYPE(w->flags)) {
		case GP_UW_CFA_RSP:
			cfa = sp + gp_uw_row_cfa_off(w);
			break;
		case GP_UW_CFA_RBP:
			if (!bp_ok) {
				*stop = GP_STOP_RBP_UNKNOWN;
				return n;
			}
			cfa = bp + gp_uw_row_cfa_off(w);
			break;
		case GP_UW_CFA_PLT:
			cfa = sp + w->cfa_off + ((pc & 15) >= (__u64)w->rbp_off ? 8 : 0);
			break;
		case GP_UW_CFA_DEREF:
			if (!bp_ok) {
				*stop = GP_STOP_RBP_UNKNOWN;
				return n;
			}
			if (read_u64(ws->pid, bp + (__u64)(__s64)(int16_t)w->cfa_off, &cfa)) {
				*stop = GP_STOP_READ;
				return n;
			}
			break;
		default:
			*detail = GP_UW_STOP_CAUSE(w->flags);
			*stop = *detail == GP_UW_STOP_END ? GP_STOP_END : GP_STOP_TABLE;
			return n;
		}
		if (read_u64(ws->pid, cfa - 8, &ra)) {
			*stop = GP_STOP_READ;
			return n;
		}
		switch (GP_UW_RBP_RULE(w->flags)) {
		case GP_UW_RBP_CFA:
			bp_ok = !read_u64(ws->pid, cfa + 8 * (__s64)w->rbp_off, &bp);
			break;
		case GP_UW_RBP_DEREF:
			bp_ok = bp_ok && !read_u64(ws->pid, bp + 8 * (__s64)w->rbp_off, &bp);
			break;
		case GP_UW_RBP_UNKNOWN:
			bp_ok = false;
			break;
		}
		sp = cfa;
		pc = ra;
		is_ret = true;
		if (!ra) {
			*stop = GP_STOP_END;
			return n;
		}
	}
	*stop = GP_STOP_DEPTH;
	return n;
}

/* The name of the function at pc, from its file's symbols. */
static void func_at(const struct wspace *ws, __u64 pc, char *buf, size_t len)
{
	const struct wmap *m = wmap_find(ws, pc);
	struct gp_elf_syms *e = m ? gp_elf_syms_open(m->path) : NULL;
	const struct gp_elf_sym *s = e ? gp_elf_syms_at(e, pc - m->bias) : NULL;

	const char *base = m ? strrchr(m->path, '/') : NULL;

	snprintf(buf, len, "%s+%#llx %s", base ? base + 1 : "?",
		 m ? (unsigned long long)(pc - m->bias) : 0ull, s ? s->name : "?");
	gp_elf_syms_free(e);
}

/*
 * The walk from the child's registers equals its backtrace(): frame 0 in
 * the same function (another place in it), every caller exactly, and it
 * ends where backtrace() does, at the first frame.
 */
static void compare_with_backtrace(const struct child *c, const struct wspace *ws, const char *what)
{
	__u64 pcs[128];
	int stop, detail, n, bad = 0;
	char f0[256], b0[256];

	n = walk(ws, c->rip, c->rsp, c->rbp, false, pcs, 128, &stop, &detail);
	func_at(ws, pcs[0], f0, sizeof(f0));
	func_at(ws, c->bt[0], b0, sizeof(b0));
	if (strcmp(strchr(f0, ' '), strchr(b0, ' ')))
		bad++;
	for (int i = 1; i < (n > c->nbt ? n : c->nbt); i++)
		if (i >= n || i >= c->nbt || pcs[i] != c->bt[i])
			bad++;
	if (bad || stop != GP_STOP_END) {
		print_message("%s: walk %d frames (stop %d, detail %d), backtrace() %d\n", what, n,
			      stop, detail, c->nbt);
		for (int i = 0; i < (n > c->nbt ? n : c->nbt); i++) {
			char a[256] = "-", b[256] = "-";

			if (i < n)
				func_at(ws, pcs[i], a, sizeof(a));
			if (i < c->nbt)
				func_at(ws, c->bt[i], b, sizeof(b));
			print_message("%3d %-60s %s\n", i, a, b);
		}
	}
	assert_int_equal(bad, 0);
	assert_int_equal(stop, GP_STOP_END);
	assert_int_equal(n, c->nbt);
	assert_true(n >= 12);
}

/* The child's mappings and tables, built here the way stacks/unwind_maps.c does (no BPF). */
static void wspace_from_tables(struct wspace *ws, pid_t pid)
{
	struct gp_maps *maps;

	memset(ws, 0, sizeof(*ws));
	ws->pid = pid;
	assert_int_equal(gp_maps_read(pid, &maps), 0);
	ws->v = calloc(maps->n, sizeof(*ws->v));
	ws->tabs = calloc(maps->n, sizeof(*ws->tabs));
	assert_true(ws->v && ws->tabs);
	for (size_t i = 0; i < maps->n; i++) {
		const struct gp_map *m = &maps->v[i];
		struct wmap *w = &ws->v[ws->n];
		struct gp_uw_table *t = &ws->tabs[ws->ntabs];

		if (!m->exec)
			continue;
		w->start = m->start;
		w->end = m->end;
		ws->n++;
		if (!m->inode || m->path[0] == '[')
			continue;
		gp_mapped_file_path(pid, m, w->path, sizeof(w->path));
		assert_int_equal(gp_uw_table_build(w->path, GP_UW_GAP_SLACK, t, NULL), 0);
		assert_int_equal(gp_uw_table_bias(t->segs, t->nsegs, m->start, m->offset, &w->bias),
				 0);
		w->rows = t->rows;
		w->n = t->nrows;
		ws->ntabs++;
	}
	gp_maps_free(maps);
}

static void wspace_release(struct wspace *ws)
{
	for (size_t i = 0; i < ws->ntabs; i++)
		gp_uw_table_release(&ws->tabs[i]);
	free(ws->tabs);
	free(ws->v);
	memset(ws, 0, sizeof(*ws));
}

static void walk_fixture_from_tables(void **state)
{
	struct child c;
	struct wspace ws;

	fixture_child(&c);
	wspace_from_tables(&ws, c.pid);
	compare_with_backtrace(&c, &ws, "uw_deep");
	wspace_release(&ws);
	child_end(&c);
}

static void walk_python_from_tables(void **state)
{
	struct child c;
	struct wspace ws;

	if (!python_child(&c))
		skip();
	wspace_from_tables(&ws, c.pid);
	compare_with_backtrace(&c, &ws, "python3.11");
	assert_true(c.nbt >= 25); /* through libffi's closure and the interpreter, twice */
	wspace_release(&ws);
	child_end(&c);
}

/* ---- gp_unwind over real BPF maps ------------------------------------------------------------ */

struct bpf_maps {
	struct gp_unwind_maps m;
	const struct gp_uw_row *view; /* the test's own mapping of the pool */
	size_t view_len;
};

/* false: no BPF here (said why) */
static bool maps_create(struct bpf_maps *b, __u32 nrows)
{
	LIBBPF_OPTS(bpf_map_create_opts, mm, .map_flags = BPF_F_MMAPABLE);

	memset(b, 0, sizeof(*b));
	b->m.nrows = nrows;
	b->m.rows_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "uw_rows", 4, sizeof(struct gp_uw_row),
				      nrows, &mm);
	if (b->m.rows_fd < 0) {
		print_message("no BPF maps here (%s): gp_unwind not checked\n", strerror(errno));
		return false;
	}
	b->m.files_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "uw_files", 4, sizeof(struct gp_uw_file),
				       GP_UW_MAX_FILES, NULL);
	b->m.procs_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "uw_procs", 4, sizeof(struct gp_uw_proc),
				       GP_UW_MAX_PROCS, NULL);
	b->m.maps_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "uw_maps", 4, sizeof(struct gp_uw_map),
				      GP_UW_MAX_PROCS * GP_UW_MAX_MAPS, NULL);
	assert_true(b->m.files_fd >= 0 && b->m.procs_fd >= 0 && b->m.maps_fd >= 0);
	b->view_len = ((size_t)nrows * sizeof(struct gp_uw_row) + 4095) & ~(size_t)4095;
	b->view = mmap(NULL, b->view_len, PROT_READ, MAP_SHARED, b->m.rows_fd, 0);
	assert_true(b->view != MAP_FAILED);
	return true;
}

static void maps_close(struct bpf_maps *b)
{
	munmap((void *)b->view, b->view_len);
	close(b->m.rows_fd);
	close(b->m.files_fd);
	close(b->m.procs_fd);
	close(b->m.maps_fd);
}

/* What the BPF walk would read for pid: its mappings, their files' rows in the pool. */
static void wspace_from_maps(struct wspace *ws, const struct bpf_maps *b, pid_t pid,
			     struct gp_uw_proc *proc_out)
{
	struct gp_uw_proc p;
	struct gp_maps *maps;

	memset(ws, 0, sizeof(*ws));
	ws->pid = pid;
	assert_int_equal(bpf_map_lookup_elem(b->m.procs_fd, &pid, &p), 0);
	assert_true(p.nmaps > 0 && p.nmaps <= GP_UW_MAX_MAPS && p.slot < GP_UW_MAX_PROCS);
	assert_int_equal(gp_maps_read(pid, &maps), 0);
	ws->v = calloc(p.nmaps, sizeof(*ws->v));
	assert_non_null(ws->v);
	for (__u32 i = 0; i < p.nmaps; i++) {
		__u32 key = p.slot * GP_UW_MAX_MAPS + i;
		struct gp_uw_map e;
		struct wmap *w = &ws->v[ws->n++];
		const struct gp_map *m;

		assert_int_equal(bpf_map_lookup_elem(b->m.maps_fd, &key, &e), 0);
		if (i)
			assert_true(e.start >= ws->v[i - 1].end); /* sorted, apart */
		w->start = e.start;
		w->end = e.end;
		w->bias = e.bias;
		m = gp_maps_find(maps, e.start);
		if (m && m->inode)
			gp_mapped_file_path(pid, m, w->path, sizeof(w->path));
		if (e.file != GP_UW_FILE_NONE) {
			struct gp_uw_file f;

			assert_true(e.file < GP_UW_MAX_FILES);
			assert_int_equal(bpf_map_lookup_elem(b->m.files_fd, &e.file, &f), 0);
			assert_true(f.n > 0 && (__u64)f.first + f.n <= b->m.nrows);
			w->rows = &b->view[f.first];
			w->n = f.n;
		}
	}
	gp_maps_free(maps);
	if (proc_out)
		*proc_out = p;
}

/* The published entry of the mapping of pid whose file is path, or fails. */
static struct gp_uw_map published(const struct bpf_maps *b, pid_t pid, const char *path)
{
	struct gp_uw_proc p;
	struct gp_maps *maps;
	__u64 start = 0;

	assert_int_equal(gp_maps_read(pid, &maps), 0);
	for (size_t i = 0; i < maps->n && !start; i++)
		if (maps->v[i].exec && !strcmp(maps->v[i].path, path))
			start = maps->v[i].start;
	gp_maps_free(maps);
	assert_true(start != 0);
	assert_int_equal(bpf_map_lookup_elem(b->m.procs_fd, &pid, &p), 0);
	for (__u32 i = 0; i < p.nmaps; i++) {
		__u32 key = p.slot * GP_UW_MAX_MAPS + i;
		struct gp_uw_map e;

		assert_int_equal(bpf_map_lookup_elem(b->m.maps_fd, &key, &e), 0);
		if (e.start == start)
			return e;
	}
	fail_msg("%s is not published for pid %d", path, (int)pid);
	return (struct gp_uw_map){ 0 };
}

static void real(const char *path, char *out)
{
	assert_non_null(realpath(path, out));
}

/* A copy of src at dst; with flip, one byte of its build-id changed (another file to the cache). */
static void copy_file(const char *src, const char *dst, bool flip)
{
	size_t len;
	char *img = gp_read_whole_file(src, &len);
	unsigned char id[20];
	size_t idlen;
	int fd;

	assert_non_null(img);
	if (flip) {
		char *at;

		fd = open(src, O_RDONLY);
		assert_int_equal(gp_uw_build_id_fd(fd, id, &idlen), 0);
		close(fd);
		assert_true(idlen >= 8);
		at = memmem(img, len, id, idlen);
		assert_non_null(at);
		at[0] ^= 0x5a;
	}
	fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, img, len), (ssize_t)len);
	close(fd);
	free(img);
}

static size_t rows_of(const char *path)
{
	struct gp_uw_table t;
	size_t n;

	assert_int_equal(gp_uw_table_build(path, GP_UW_GAP_SLACK, &t, NULL), 0);
	n = t.nrows;
	gp_uw_table_release(&t);
	return n;
}

/* The distinct files pid maps executable. */
static unsigned files_of_process(pid_t pid)
{
	struct gp_maps *maps;
	unsigned n = 0;

	assert_int_equal(gp_maps_read(pid, &maps), 0);
	for (size_t i = 0; i < maps->n; i++) {
		bool seen = false;

		if (!maps->v[i].exec || !maps->v[i].inode || maps->v[i].path[0] == '[')
			continue;
		for (size_t k = 0; k < i; k++)
			seen |= maps->v[k].exec && maps->v[k].dev == maps->v[i].dev &&
				maps->v[k].inode == maps->v[i].inode;
		n += !seen;
	}
	gp_maps_free(maps);
	return n;
}

/* The rows of the tables of every file pid maps executable. */
static size_t rows_of_process(pid_t pid)
{
	struct gp_maps *maps;
	size_t n = 0;

	assert_int_equal(gp_maps_read(pid, &maps), 0);
	for (size_t i = 0; i < maps->n; i++) {
		char path[PATH_MAX + 64];

		if (!maps->v[i].exec || !maps->v[i].inode || maps->v[i].path[0] == '[')
			continue;
		gp_mapped_file_path(pid, &maps->v[i], path, sizeof(path));
		n += rows_of(path);
	}
	gp_maps_free(maps);
	return n;
}

static void maps_publish_walk_refresh(void **state)
{
	struct bpf_maps b;
	struct gp_unwind *u;
	struct gp_unwind_stats st, st2;
	struct gp_uw_proc p1, p2;
	struct child c, py;
	struct wspace ws;
	char dbg[PATH_MAX], cmd[PATH_MAX + 8];
	unsigned nf;
	bool have_py;

	if (!maps_create(&b, 1u << 20))
		skip();
	u = gp_unwind_new(&b.m);
	assert_non_null(u);

	fixture_child(&c);
	assert_int_equal(gp_unwind_process(u, c.pid), 0);
	wspace_from_maps(&ws, &b, c.pid, &p1);
	compare_with_backtrace(&c, &ws, "uw_deep, from the maps");
	wspace_release(&ws);
	gp_unwind_get_stats(u, &st);
	/* uw_deep, libuwfix.so, libc.so.6, ld-linux...: one table each; [vdso] has none */
	nf = files_of_process(c.pid);
	assert_true(nf >= 4);
	assert_int_equal(st.files_built, nf);
	assert_int_equal(st.files, nf);
	assert_int_equal(st.files_in_use, nf);
	assert_int_equal(st.procs, 1);
	assert_int_equal(st.updates, 1);
	assert_true(st.maps_none >= 1);
	for (int f = 0; f < GP_UWF_MAX; f++)
		assert_int_equal(st.fail[f], 0);

	/* unchanged: nothing published again */
	assert_int_equal(gp_unwind_process(u, c.pid), 0);
	gp_unwind_get_stats(u, &st2);
	assert_int_equal(st2.updates, 1);

	/* a library mapped since: published with the rest, in a fresh slot */
	real(fixture("libuwfix_dbg.so"), dbg);
	snprintf(cmd, sizeof(cmd), "o %s\n", dbg);
	child_cmd(&c, cmd, "ok\n");
	assert_int_equal(gp_unwind_process(u, c.pid), 0);
	gp_unwind_get_stats(u, &st2);
	assert_int_equal(st2.updates, 2);
	assert_int_equal(st2.files_built, nf + 1);
	assert_int_equal(st2.in_place, 0);
	wspace_from_maps(&ws, &b, c.pid, &p2);
	assert_int_not_equal(p2.slot, p1.slot);
	assert_int_equal(p2.nmaps, p1.nmaps + 1);
	compare_with_backtrace(&c, &ws, "uw_deep after a dlopen, from the maps");
	wspace_release(&ws);
	{
		/* its rows in the pool are the table built from the file */
		struct gp_uw_map e = published(&b, c.pid, dbg);
		struct gp_uw_table t;
		struct gp_uw_file f;

		assert_int_not_equal(e.file, GP_UW_FILE_NONE);
		assert_int_equal(bpf_map_lookup_elem(b.m.files_fd, &e.file, &f), 0);
		assert_int_equal(gp_uw_table_build(dbg, GP_UW_GAP_SLACK, &t, NULL), 0);
		assert_int_equal(f.n, t.nrows);
		assert_memory_equal(&b.view[f.first], t.rows, t.nrows * sizeof(*t.rows));
		gp_uw_table_release(&t);
	}

	/* another process of the same files: every table reused, none built */
	have_py = python_child(&py);
	{
		struct child c2;

		fixture_child(&c2);
		assert_int_equal(gp_unwind_process(u, c2.pid), 0);
		gp_unwind_get_stats(u, &st2);
		assert_int_equal(st2.files_built, nf + 1);
		assert_int_equal(st2.procs, 2);
		wspace_from_maps(&ws, &b, c2.pid, NULL);
		compare_with_backtrace(&c2, &ws, "a second uw_deep, from the maps");
		wspace_release(&ws);
		assert_int_equal(gp_unwind_forget(u, c2.pid), 0);
		child_end(&c2);
	}
	if (have_py) {
		assert_int_equal(gp_unwind_process(u, py.pid), 0);
		wspace_from_maps(&ws, &b, py.pid, NULL);
		compare_with_backtrace(&py, &ws, "python3.11, from the maps");
		wspace_release(&ws);
		assert_int_equal(gp_unwind_forget(u, py.pid), 0);
		child_end(&py);
	}

	/* gone: its entry taken back, its tables kept for the next process */
	assert_int_equal(gp_unwind_forget(u, c.pid), 0);
	assert_int_equal(gp_unwind_forget(u, c.pid), -ENOENT);
	assert_int_equal(bpf_map_lookup_elem(b.m.procs_fd, &c.pid, &p1), -ENOENT);
	gp_unwind_get_stats(u, &st2);
	assert_int_equal(st2.procs, 0);
	assert_int_equal(st2.files_in_use, 0);
	assert_true(st2.files >= nf + 1);
	assert_int_equal(st2.maps, 0);
	child_end(&c);

	gp_unwind_free(u);
	maps_close(&b);
}

static void maps_reuse_eviction_pool_full(void **state)
{
	char dir[PATH_MAX + 64], same[PATH_MAX + 128], other[PATH_MAX + 128], dbg[PATH_MAX];
	char cmd[2 * PATH_MAX + 256], lib[PATH_MAX];
	struct gp_unwind_stats st;
	struct gp_uw_map e, e2;
	struct gp_uw_file f;
	struct bpf_maps b;
	struct gp_unwind *u;
	struct child a, c;
	struct wspace ws;
	size_t base, d, r;
	__u32 dbg_slot;
	unsigned nf;

	real(fixture("libuwfix_dbg.so"), dbg);
	real(fixture("libuwfix.so"), lib);
	snprintf(dir, sizeof(dir), "%s", fixture("tmp-XXXXXX"));
	assert_non_null(mkdtemp(dir));
	snprintf(same, sizeof(same), "%s/same.so", dir);
	snprintf(other, sizeof(other), "%s/other.so", dir);
	copy_file(lib, same, false);
	copy_file(lib, other, true);

	fixture_child(&a);
	nf = files_of_process(a.pid);
	base = rows_of_process(a.pid);
	d = rows_of(dbg);
	r = rows_of(other);
	assert_true(r < d);
	/* room for the program's tables and libuwfix_dbg.so's, not one row more */
	if (!maps_create(&b, (__u32)(base + d))) {
		child_end(&a);
		unlink(same);
		unlink(other);
		rmdir(dir);
		skip();
	}
	u = gp_unwind_new(&b.m);
	assert_non_null(u);
	assert_int_equal(gp_unwind_process(u, a.pid), 0);
	snprintf(cmd, sizeof(cmd), "o %s\n", dbg);
	child_cmd(&a, cmd, "ok\n");
	assert_int_equal(gp_unwind_process(u, a.pid), 0);
	gp_unwind_get_stats(u, &st);
	assert_int_equal(st.rows, base + d);
	assert_int_equal(st.files_built, nf + 1);
	dbg_slot = published(&b, a.pid, dbg).file;
	assert_int_not_equal(dbg_slot, GP_UW_FILE_NONE);

	/* a copy of libuwfix.so (another inode, the same build-id): its table is libuwfix.so's */
	snprintf(cmd, sizeof(cmd), "o %s\n", same);
	child_cmd(&a, cmd, "ok\n");
	assert_int_equal(gp_unwind_process(u, a.pid), 0);
	gp_unwind_get_stats(u, &st);
	assert_int_equal(st.files_built, nf + 1);
	e = published(&b, a.pid, same);
	e2 = published(&b, a.pid, lib);
	assert_int_equal(e.file, e2.file);
	assert_int_not_equal(e.bias, e2.bias);
	assert_int_equal(gp_unwind_forget(u, a.pid), 0);
	child_end(&a);

	/* the next process: its tables still there; a new file evicts the unused libuwfix_dbg.so */
	fixture_child(&c);
	assert_int_equal(gp_unwind_process(u, c.pid), 0);
	gp_unwind_get_stats(u, &st);
	assert_int_equal(st.files_built, nf + 1);
	assert_int_equal(st.files_evicted, 0);
	snprintf(cmd, sizeof(cmd), "o %s\n", other);
	child_cmd(&c, cmd, "ok\n");
	assert_int_equal(gp_unwind_process(u, c.pid), 0);
	gp_unwind_get_stats(u, &st);
	assert_int_equal(st.files_built, nf + 2);
	assert_int_equal(st.files_evicted, 1);
	assert_int_equal(st.rows, base + r);
	assert_int_not_equal(published(&b, c.pid, other).file, GP_UW_FILE_NONE);
	/* the evicted table's entry was cleared before its rows were given away */
	assert_int_equal(bpf_map_lookup_elem(b.m.files_fd, &dbg_slot, &f), 0);
	assert_int_equal(f.n, 0);
	wspace_from_maps(&ws, &b, c.pid, NULL);
	compare_with_backtrace(&c, &ws, "uw_deep after an eviction");
	wspace_release(&ws);

	/* now libuwfix_dbg.so no longer fits beside tables in use: no table, counted, walked up to it */
	snprintf(cmd, sizeof(cmd), "o %s\n", dbg);
	child_cmd(&c, cmd, "ok\n");
	assert_int_equal(gp_unwind_process(u, c.pid), 0);
	gp_unwind_get_stats(u, &st);
	assert_int_equal(st.fail[GP_UWF_POOL_FULL], 1);
	assert_int_equal(st.files_built, nf + 3);
	assert_int_equal(published(&b, c.pid, dbg).file, GP_UW_FILE_NONE);
	/* asked again with nothing freed: not built again */
	assert_int_equal(gp_unwind_process(u, c.pid), 0);
	gp_unwind_get_stats(u, &st);
	assert_int_equal(st.files_built, nf + 3);
	assert_int_equal(gp_unwind_forget(u, c.pid), 0);
	child_end(&c);

	/* a file without call-frame information: none, counted once */
	fixture_child(&c);
	snprintf(cmd, sizeof(cmd), "o %s\n", fixture("libuwfix_nocfi.so"));
	child_cmd(&c, cmd, "ok\n");
	assert_int_equal(gp_unwind_process(u, c.pid), 0);
	gp_unwind_get_stats(u, &st);
	assert_int_equal(st.fail[GP_UWF_NO_CFI], 1);
	assert_int_equal(gp_unwind_forget(u, c.pid), 0);
	child_end(&c);

	gp_unwind_free(u);
	maps_close(&b);
	unlink(same);
	unlink(other);
	rmdir(dir);
}

/* A table smaller than a file's rows: that file has none, and the walk stops at its frames. */
static void maps_pool_too_small(void **state)
{
	struct gp_unwind_stats st;
	struct bpf_maps b;
	struct gp_unwind *u;
	struct child c;
	struct wspace ws;
	char libc[PATH_MAX + 64] = "";
	struct gp_maps *maps;
	__u64 pcs[128];
	int stop, detail, n, first_libc = -1;

	fixture_child(&c);
	assert_int_equal(gp_maps_read(c.pid, &maps), 0);
	for (size_t i = 0; i < maps->n; i++)
		if (maps->v[i].exec && strstr(maps->v[i].path, "/libc.so.6"))
			gp_mapped_file_path(c.pid, &maps->v[i], libc, sizeof(libc));
	gp_maps_free(maps);
	assert_true(libc[0]);
	if (!maps_create(&b, (__u32)rows_of(libc) - 1)) {
		child_end(&c);
		skip();
	}
	u = gp_unwind_new(&b.m);
	assert_non_null(u);
	assert_int_equal(gp_unwind_process(u, c.pid), 0);
	gp_unwind_get_stats(u, &st);
	assert_int_equal(st.fail[GP_UWF_POOL_FULL], 1);
	wspace_from_maps(&ws, &b, c.pid, NULL);
	n = walk(&ws, c.rip, c.rsp, c.rbp, false, pcs, 128, &stop, &detail);
	/* every frame up to libc's first is right; libc has no table */
	for (int i = 1; i < c.nbt && first_libc < 0; i++) {
		const struct wmap *m = wmap_find(&ws, c.bt[i]);

		if (m && !m->rows)
			first_libc = i;
	}
	assert_true(first_libc > 8);
	assert_int_equal(n, first_libc + 1);
	assert_int_equal(stop, GP_STOP_NO_TABLE);
	for (int i = 1; i < n; i++)
		assert_int_equal(pcs[i], c.bt[i]);
	wspace_release(&ws);
	gp_unwind_free(u);
	maps_close(&b);
	child_end(&c);
}

static int setup(void **state)
{
	ssize_t n = readlink("/proc/self/exe", fixdir, sizeof(fixdir) - 16);

	if (n <= 0)
		return -1;
	fixdir[n] = '\0';
	snprintf(strrchr(fixdir, '/'), 16, "/uwfix");
	if (access(fixture("uw_deep"), X_OK)) {
		fprintf(stderr, "test_unwind_table: %s missing: make unit-build builds it\n",
			fixture("uw_deep"));
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fixture_tables_match_libdw),
		cmocka_unit_test(system_tables_match_libdw),
		cmocka_unit_test(gap_slack_drops_only_short_gaps),
		cmocka_unit_test(bad_files),
		cmocka_unit_test(walk_fixture_from_tables),
		cmocka_unit_test(walk_python_from_tables),
		cmocka_unit_test(maps_publish_walk_refresh),
		cmocka_unit_test(maps_reuse_eviction_pool_full),
		cmocka_unit_test(maps_pool_too_small),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
