/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * elf_syms.c — the per-file ELF symbol index (see elf_syms.h), read with
 * libelf in one pass. Names are copied into one pool so the file can be
 * closed at once; lookups are binary searches.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "symbolize/elf_syms.h"

struct name_pool {
	char *buf;
	size_t len, cap;
};

/* Returns the offset of the copy, or SIZE_MAX when out of memory. */
static size_t pool_add(struct name_pool *p, const char *s)
{
	size_t n = strlen(s) + 1;

	if (GP_ARRAY_GROW(p->buf, p->cap, p->len + n, 65536))
		return SIZE_MAX;
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	return p->len - n;
}

static int cmp_addr(const void *a, const void *b)
{
	const struct gp_elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* qsort_r context: the symbol array. */
static int cmp_name(const void *a, const void *b, void *ctx)
{
	const struct gp_elf_sym *syms = ctx;
	const struct gp_elf_sym *x = &syms[*(const __u32 *)a], *y = &syms[*(const __u32 *)b];
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void read_build_id(Elf *elf, struct gp_elf_syms *e)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((char *)data->d_buf + name_off, "GNU", 4) == 0) {
				e->build_id_len = nh.n_descsz < sizeof(e->build_id)
							  ? nh.n_descsz
							  : sizeof(e->build_id);
				memcpy(e->build_id, (char *)data->d_buf + desc_off,
				       e->build_id_len);
				return;
			}
		}
	}
}

static int read_segments(Elf *elf, struct gp_elf_syms *e)
{
	size_t n, i;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	e->segs = calloc(n ? n : 1, sizeof(*e->segs));
	if (!e->segs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		e->segs[e->nsegs++] = (struct gp_elf_seg){
			.vaddr = ph.p_vaddr,
			.memsz = ph.p_memsz,
			.offset = ph.p_offset,
			.filesz = ph.p_filesz,
			.exec = (ph.p_flags & PF_X) != 0,
		};
	}
	return 0;
}

struct sym_vec {
	struct gp_elf_sym *v;
	size_t n, cap;
};

static int sym_vec_push(struct sym_vec *vec, struct name_pool *pool, const GElf_Sym *s,
			const char *name)
{
	size_t off;

	if (GP_ARRAY_GROW(vec->v, vec->cap, vec->n + 1, 1024))
		return -ENOMEM;
	off = pool_add(pool, name);
	if (off == SIZE_MAX)
		return -ENOMEM;
	vec->v[vec->n++] = (struct gp_elf_sym){
		.addr = s->st_value,
		.size = s->st_size,
		.name = (const char *)(uintptr_t)off, /* fixed up once the pool stops moving */
		.global = GELF_ST_BIND(s->st_info) != STB_LOCAL,
	};
	return 0;
}

/* "_ZZ29__device_stub__Z5saxpyifPKfPfifPKfPfE8__handle": the static handle of a launch stub. */
static bool is_stub_handle(const char *name)
{
	size_t n = strlen(name);

	return n > 10 && !strcmp(name + n - 10, "E8__handle") && strstr(name, "__device_stub__");
}

/* Appends the defined function symbols (and stub handles) of one symbol table. */
static int read_symtab(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, struct name_pool *pool,
		       struct sym_vec *funcs, struct sym_vec *handles)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count, i;

	if (!data || !sh->sh_entsize)
		return 0;
	count = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < count; i++) {
		GElf_Sym s;
		const char *name;
		int type, err;

		if (!gelf_getsym(data, (int)i, &s))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if ((type != STT_FUNC && type != STT_OBJECT) || s.st_shndx == SHN_UNDEF ||
		    !s.st_value)
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (type == STT_FUNC)
			err = sym_vec_push(funcs, pool, &s, name);
		else if (is_stub_handle(name))
			err = sym_vec_push(handles, pool, &s, name);
		else
			continue;
		if (err)
			return err;
	}
	return 0;
}

static int index_symbols(Elf *elf, struct gp_elf_syms *e)
{
	struct name_pool pool = { 0 };
	struct sym_vec funcs = { 0 }, handles = { 0 };
	struct gp_elf_sym *syms;
	size_t n, i, out;
	Elf_Scn *scn = NULL;
	int err = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			e->has_symtab = true;
		err = read_symtab(elf, scn, &sh, &pool, &funcs, &handles);
		if (err)
			goto out;
	}
	syms = funcs.v;
	n = funcs.n;
	for (i = 0; i < n; i++)
		syms[i].name = pool.buf + (uintptr_t)syms[i].name;
	for (i = 0; i < handles.n; i++)
		handles.v[i].name = pool.buf + (uintptr_t)handles.v[i].name;
	qsort(syms, n, sizeof(*syms), cmp_addr);
	qsort(handles.v, handles.n, sizeof(*handles.v), cmp_addr);
	/* .symtab usually repeats .dynsym: keep one of each (addr, name). */
	for (i = 0, out = 0; i < n; i++) {
		if (out && syms[out - 1].addr == syms[i].addr &&
		    !strcmp(syms[out - 1].name, syms[i].name))
			continue;
		syms[out++] = syms[i];
	}
	n = out;
	e->by_name = calloc(n ? n : 1, sizeof(*e->by_name));
	if (!e->by_name) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		e->by_name[i] = (__u32)i;
	qsort_r(e->by_name, n, sizeof(*e->by_name), cmp_name, syms);
	e->syms = syms;
	e->nsyms = n;
	e->stub_handles = handles.v;
	e->nstub_handles = handles.n;
	e->names = pool.buf;
	return 0;
out:
	free(funcs.v);
	free(handles.v);
	free(pool.buf);
	return err;
}

struct gp_elf_syms *gp_elf_syms_open(const char *path)
{
	struct gp_elf_syms *e = NULL;
	Elf *elf = NULL;
	struct stat st;
	int fd, err = 0;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = EINVAL;
		return NULL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out;
	}
	e = calloc(1, sizeof(*e));
	if (!e || !(e->path = strdup(path))) {
		err = -ENOMEM;
		goto out;
	}
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	{
		GElf_Ehdr eh;

		if (!gelf_getehdr(elf, &eh)) {
			err = -ENOEXEC;
			goto out;
		}
		e->is_dyn = eh.e_type == ET_DYN;
	}
	err = read_segments(elf, e);
	if (!err)
		err = index_symbols(elf, e);
	if (!err)
		read_build_id(elf, e);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (err) {
		gp_elf_syms_free(e);
		errno = -err;
		return NULL;
	}
	return e;
}

void gp_elf_syms_free(struct gp_elf_syms *e)
{
	if (!e)
		return;
	free(e->path);
	free(e->syms);
	free(e->stub_handles);
	free(e->by_name);
	free(e->segs);
	free(e->names);
	free(e);
}

const struct gp_elf_sym *gp_elf_syms_find(const struct gp_elf_syms *e, const char *name)
{
	size_t lo = 0, hi = e->nsyms;

	/* lower bound: the first entry >= name; globals sort first among equals */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(e->syms[e->by_name[mid]].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < e->nsyms && !strcmp(e->syms[e->by_name[lo]].name, name))
		return &e->syms[e->by_name[lo]];
	return NULL;
}

const struct gp_elf_sym *gp_elf_syms_at(const struct gp_elf_syms *e, __u64 vaddr)
{
	size_t lo = 0, hi = e->nsyms;
	const struct gp_elf_sym *best = NULL;

	/* the last symbol with addr <= vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* Among symbols at that address, the sort put globals first. */
	best = &e->syms[lo - 1];
	while (best > e->syms && best[-1].addr == best->addr)
		best--;
	if (best->size && vaddr >= best->addr + best->size) {
		/* Past its end: another symbol at the same address may be larger. */
		const struct gp_elf_sym *s;

		for (s = best; s < e->syms + e->nsyms && s->addr == best->addr; s++)
			if (vaddr < s->addr + s->size)
				return s;
		return NULL;
	}
	return best;
}

int gp_elf_vaddr_to_offset(const struct gp_elf_syms *e, __u64 vaddr, __u64 *offset)
{
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct gp_elf_seg *s = &e->segs[i];

		if (vaddr >= s->vaddr && vaddr < s->vaddr + s->filesz) {
			*offset = vaddr - s->vaddr + s->offset;
			return 0;
		}
	}
	return -ENOENT;
}

int gp_elf_offset_to_vaddr(const struct gp_elf_syms *e, __u64 offset, __u64 *vaddr)
{
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct gp_elf_seg *s = &e->segs[i];

		if (offset >= s->offset && offset < s->offset + s->filesz) {
			*vaddr = offset - s->offset + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

void gp_elf_build_id_hex(const struct gp_elf_syms *e, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (!len)
		return;
	buf[0] = '\0';
	for (i = 0; i < e->build_id_len && 2 * i + 2 < len; i++) {
		buf[2 * i] = hex[e->build_id[i] >> 4];
		buf[2 * i + 1] = hex[e->build_id[i] & 15];
		buf[2 * i + 2] = '\0';
	}
}
