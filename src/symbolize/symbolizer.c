/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * symbolizer.c — see symbolizer.h. Demangling is libiberty's cplus_demangle.
 * Processes and files are few (tens), so they live in small arrays searched
 * linearly; lookups within a file are binary searches in elf_syms.
 */
#include <ctype.h>
#include <errno.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include "symbolize/perf_map.h"
#include "symbolize/overlay.h"
#include "stacks/python.h"
#include "symbolize/symbolizer.h"

/* A process whose stacks name addresses its maps do not hold is looked at again at most this often. */
#define RESNAPSHOT_NS 20000000ULL

struct sym_proc {
	pid_t pid;
	struct gp_maps *maps;
	__u64 snap_ns;	/* when maps was read (CLOCK_MONOTONIC) */
	__u64 stale_ns; /* when a fresh snapshot still missed a stack's address (0: never) */
	struct gp_perf_map *perf; /* its JIT map, once an address needed it */
	__u64 perf_ns;		  /* when perf was read (0: never tried) */
	/* a container's root: its files found when it is gone; NULL: none */
	struct gp_overlay_root *root;
};

struct sym_file {
	__u64 dev, ino;
	__s64 mtime_ns; /* when read (0: unknown); a file rewritten in place is read again */
	struct gp_elf_syms *elf; /* NULL: could not be read (remembered, not retried) */
};

struct gp_symbolizer {
	struct sym_proc *procs;
	size_t nprocs, cap_procs;
	struct sym_file *files;
	size_t nfiles, cap_files;
	char function[1024]; /* gp_symbolizer_symbolize's answers */
	char build_id[48];
	void (*on_snapshot)(void *ctx, pid_t pid, const struct gp_maps *maps);
	void *snapshot_ctx;
	struct gp_python *python; /* names Python frames; NULL: none */
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

struct gp_symbolizer *gp_symbolizer_new(void)
{
	return calloc(1, sizeof(struct gp_symbolizer));
}

void gp_symbolizer_free(struct gp_symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nprocs; i++) {
		gp_maps_free(s->procs[i].maps);
		gp_perf_map_free(s->procs[i].perf);
		gp_overlay_root_free(s->procs[i].root);
	}
	for (i = 0; i < s->nfiles; i++)
		gp_elf_syms_free(s->files[i].elf);
	free(s->procs);
	free(s->files);
	free(s);
}

static struct sym_proc *find_proc(struct gp_symbolizer *s, pid_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

/* Keeps maps as pid's snapshot (taking ownership). */
static int keep_snapshot(struct gp_symbolizer *s, pid_t pid, struct gp_maps *maps)
{
	struct sym_proc *p = find_proc(s, pid);

	if (!p) {
		if (s->nprocs == s->cap_procs) {
			size_t nc = s->cap_procs ? 2 * s->cap_procs : 8;
			struct sym_proc *np = realloc(s->procs, nc * sizeof(*np));

			if (!np) {
				gp_maps_free(maps);
				return -ENOMEM;
			}
			s->procs = np;
			s->cap_procs = nc;
		}
		p = &s->procs[s->nprocs++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->root = gp_overlay_root_of(pid);
	}
	gp_maps_free(p->maps);
	p->maps = maps;
	p->snap_ns = now_ns();
	if (s->on_snapshot)
		s->on_snapshot(s->snapshot_ctx, pid, maps);
	return 0;
}

void gp_symbolizer_on_snapshot(struct gp_symbolizer *s,
			       void (*fn)(void *ctx, pid_t pid, const struct gp_maps *maps),
			       void *ctx)
{
	s->on_snapshot = fn;
	s->snapshot_ctx = ctx;
}

int gp_symbolizer_snapshot(struct gp_symbolizer *s, pid_t pid)
{
	struct sym_proc *p = find_proc(s, pid);
	struct gp_maps *maps;
	int err = gp_maps_read(pid, &maps);

	if (err)
		return err;
	if (!maps->n && p && p->maps) {
		/*
		 * An exiting process has no maps left: keep what we saw while it
		 * lived. (A first snapshot may be empty: a kernel thread.)
		 */
		gp_maps_free(maps);
		return -ESRCH;
	}
	return keep_snapshot(s, pid, maps);
}

int gp_symbolizer_inherit(struct gp_symbolizer *s, pid_t parent, pid_t child)
{
	struct sym_proc *p = find_proc(s, parent);
	struct gp_maps *maps;
	struct sym_proc *c;
	int err;

	if (!p || !p->maps)
		return -ENOENT;
	err = gp_maps_dup(p->maps, child, &maps);
	if (err || (err = keep_snapshot(s, child, maps)))
		return err;
	p = find_proc(s, parent); /* keep_snapshot may have moved it */
	c = find_proc(s, child);
	if (p && c && !c->root)
		c->root = gp_overlay_root_dup(p->root);
	return 0;
}

const struct gp_maps *gp_symbolizer_maps(struct gp_symbolizer *s, pid_t pid)
{
	struct sym_proc *p = find_proc(s, pid);

	return p ? p->maps : NULL;
}

static struct sym_file *file_slot(struct gp_symbolizer *s, __u64 dev, __u64 ino)
{
	struct sym_file *f;

	for (size_t i = 0; i < s->nfiles; i++)
		if (s->files[i].dev == dev && s->files[i].ino == ino)
			return &s->files[i];
	if (s->nfiles == s->cap_files) {
		size_t nc = s->cap_files ? 2 * s->cap_files : 16;
		struct sym_file *nf = realloc(s->files, nc * sizeof(*nf));

		if (!nf)
			return NULL;
		s->files = nf;
		s->cap_files = nc;
	}
	f = &s->files[s->nfiles++];
	memset(f, 0, sizeof(*f));
	f->dev = dev;
	f->ino = ino;
	f->mtime_ns = -1; /* not read yet */
	return f;
}

static __s64 mtime_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (__s64)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

const struct gp_elf_syms *gp_symbolizer_elf(struct gp_symbolizer *s, pid_t pid,
					    const struct gp_map *m)
{
	struct sym_proc *p;
	struct sym_file *f;
	char path[4200];

	if (!m->inode || m->path[0] != '/') {
		errno = ENOENT;
		return NULL;
	}
	f = file_slot(s, m->dev, m->inode);
	if (!f)
		return NULL;
	if (f->mtime_ns >= 0) {
		if (!f->elf)
			errno = ENOENT;
		return f->elf;
	}
	/* map_files reaches the very file mapped (deleted, or in another mount namespace). */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	f->elf = gp_elf_syms_open(path);
	if (!f->elf) {
		snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, m->path);
		f->elf = gp_elf_syms_open(path);
	}
	p = find_proc(s, pid);
	if (!f->elf && p && p->root) {
		/* a container's, gone: its image's layer holds the file, this machine's path another */
		if (!gp_overlay_root_find(p->root, m->path, path, sizeof(path)))
			f->elf = gp_elf_syms_open(path);
	} else if (!f->elf) {
		f->elf = gp_elf_syms_open(strcpy(path, m->path));
		if (f->elf &&
		    f->elf->ino != m->inode) { /* replaced since it was mapped: not its symbols */
			gp_elf_syms_free(f->elf);
			f->elf = NULL;
		}
	}
	f->mtime_ns = f->elf ? mtime_of(path) : 0;
	if (!f->elf)
		errno = ENOENT;
	return f->elf;
}

const struct gp_elf_syms *gp_symbolizer_elf_file(struct gp_symbolizer *s, const char *path)
{
	struct stat st;
	struct sym_file *f;
	__s64 mtime;

	if (stat(path, &st))
		return NULL;
	mtime = (__s64)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	f = file_slot(s, (__u64)st.st_dev, (__u64)st.st_ino);
	if (!f)
		return NULL;
	if (f->mtime_ns >= 0 && (f->mtime_ns == mtime || !f->mtime_ns)) {
		if (!f->elf)
			errno = ENOENT;
		return f->elf;
	}
	/* first sight, or rewritten in place since it was read */
	gp_elf_syms_free(f->elf);
	f->elf = gp_elf_syms_open(path);
	f->mtime_ns = mtime;
	if (!f->elf)
		errno = ENOENT;
	return f->elf;
}

int gp_symbolizer_lookup(struct gp_symbolizer *s, pid_t pid, __u64 addr, struct gp_sym_result *r)
{
	struct sym_proc *p = find_proc(s, pid);
	const struct gp_map *m = p && p->maps ? gp_maps_find(p->maps, addr) : NULL;
	const struct gp_elf_syms *elf;
	const struct gp_elf_sym *sym;
	__u64 vaddr;

	if (!m) {
		/* Mapped after our snapshot (dlopen)? Look again while it lives. */
		if (gp_symbolizer_snapshot(s, pid))
			return -ENOENT;
		p = find_proc(s, pid);
		m = gp_maps_find(p->maps, addr);
	}
	if (!m || !m->inode)
		return -ENOENT; /* anonymous memory (heap, JIT without a perf map): no symbol */
	memset(r, 0, sizeof(*r));
	r->file = m->path;
	r->file_offset = addr - m->start + m->offset;
	elf = gp_symbolizer_elf(s, pid, m);
	if (!elf || gp_elf_offset_to_vaddr(elf, r->file_offset, &vaddr))
		return -ENOENT;
	sym = gp_elf_syms_at(elf, vaddr);
	if (!sym)
		return -ENOENT;
	r->symbol = sym->name;
	r->sym_offset = vaddr - sym->addr;
	return 0;
}

int gp_stub_kernel_mangled(const char *sym, char *out, size_t len)
{
	static const char stub[] = "__device_stub_";
	const char *at = strstr(sym, "__device_stub__");
	const char *d = at;
	size_t ident_len = 0, mult = 1, klen;

	if (!at)
		return -ENOENT;
	/* The identifier's length is the decimal number right before it. */
	while (d > sym && isdigit((unsigned char)d[-1])) {
		ident_len += (size_t)(d[-1] - '0') * mult;
		mult *= 10;
		d--;
	}
	if (d == at)
		ident_len = strlen(at); /* not mangled: the whole rest */
	if (ident_len <= sizeof(stub) - 1 || ident_len > strlen(at))
		return -ENOENT;
	/* "__device_stub__Z12plain_kernelPf" -> "_Z12plain_kernelPf" */
	klen = ident_len - (sizeof(stub) - 1);
	if (klen + 1 > len)
		return -ENOSPC;
	memcpy(out, at + sizeof(stub) - 1, klen);
	out[klen] = '\0';
	return 0;
}

void gp_demangle(const char *mangled, char *out, size_t len)
{
	char *d = NULL;

	if (!len)
		return;
	if (mangled[0] == '_' && mangled[1] == 'Z')
		d = cplus_demangle(mangled, DMGL_PARAMS | DMGL_ANSI | DMGL_TYPES);
	snprintf(out, len, "%s", d ? d : mangled);
	free(d);
}

static int name_from_symbol(const char *sym, bool allow_plain, char *name, size_t name_len,
			    char *mangled, size_t mangled_len)
{
	char buf[1024];

	if (gp_stub_kernel_mangled(sym, buf, sizeof(buf)) == 0) {
		snprintf(mangled, mangled_len, "%s", buf);
		gp_demangle(buf, name, name_len);
		return 0;
	}
	if (!allow_plain)
		return -ENOENT;
	snprintf(mangled, mangled_len, "%s", (sym[0] == '_' && sym[1] == 'Z') ? sym : "");
	gp_demangle(sym, name, name_len);
	return 0;
}

/*
 * nvcc 13 stubs cache each kernel's handle in a static local,
 * __device_stub__<kernel>::__handle, and pass it as cudaLaunchKernel's first
 * argument (through a helper shared by every kernel of the translation unit,
 * so the return address does not tell the kernels apart). Read those statics
 * from the process — in the file the launch returns to — and find func.
 */
static int name_from_handle(struct gp_symbolizer *s, pid_t pid, __u64 func, __u64 ret_addr,
			    char *name, size_t name_len, char *mangled, size_t mangled_len)
{
	const struct gp_maps *maps = gp_symbolizer_maps(s, pid);
	const struct gp_map *m = maps ? gp_maps_find(maps, ret_addr) : NULL;
	const struct gp_elf_syms *elf = m ? gp_symbolizer_elf(s, pid, m) : NULL;
	__u64 vaddr, bias, vals[256];
	struct iovec local, remote[256];

	if (!func || !elf || !elf->nstub_handles ||
	    gp_elf_offset_to_vaddr(elf, ret_addr - m->start + m->offset, &vaddr))
		return -ENOENT;
	bias = ret_addr - vaddr; /* load address of the file */
	for (size_t first = 0; first < elf->nstub_handles; first += 256) {
		size_t n = elf->nstub_handles - first < 256 ? elf->nstub_handles - first : 256;
		ssize_t got;

		for (size_t i = 0; i < n; i++) {
			remote[i].iov_base =
				(void *)(uintptr_t)(bias + elf->stub_handles[first + i].addr);
			remote[i].iov_len = sizeof(vals[0]);
		}
		local.iov_base = vals;
		local.iov_len = n * sizeof(vals[0]);
		got = process_vm_readv(pid, &local, 1, remote, n, 0);
		for (size_t i = 0; got > 0 && i < (size_t)got / sizeof(vals[0]); i++)
			if (vals[i] == func)
				return name_from_symbol(elf->stub_handles[first + i].name, false,
							name, name_len, mangled, mangled_len);
	}
	return -ENOENT;
}

int gp_symbolizer_kernel_name(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack,
			      unsigned nstack, char *name, size_t name_len, char *mangled,
			      size_t mangled_len)
{
	struct gp_symbolizer *s = ctx;
	struct gp_sym_result r;

	/* nvcc's stubs: the launch returns into __device_stub__<kernel>. */
	if (ret_addr && gp_symbolizer_lookup(s, (pid_t)tgid, ret_addr, &r) == 0 &&
	    name_from_symbol(r.symbol, false, name, name_len, mangled, mangled_len) == 0)
		return 0;
	/*
	 * Older layouts and hand-written launches pass the host function itself:
	 * the first argument is then the address of a function symbol (at its start).
	 */
	if (func && gp_symbolizer_lookup(s, (pid_t)tgid, func, &r) == 0 && r.sym_offset == 0)
		return name_from_symbol(r.symbol, true, name, name_len, mangled, mangled_len);
	/*
	 * nvcc 13 launches through a helper shared by the file's kernels: the
	 * stub that called it is a frame or two up the stack (frame pointers).
	 */
	for (unsigned i = 1; stack && i < nstack && i <= GP_STUB_FRAMES; i++)
		if (gp_symbolizer_lookup(s, (pid_t)tgid, stack[i] - 1, &r) == 0 &&
		    name_from_symbol(r.symbol, false, name, name_len, mangled, mangled_len) == 0)
			return 0;
	/* nvcc 13 with a working runtime: func is the handle cached in the stub. */
	return name_from_handle(s, (pid_t)tgid, func, ret_addr, name, name_len, mangled,
				mangled_len);
}

void gp_demangle_short(const char *mangled, char *out, size_t len)
{
	char *d = NULL;

	if (!len)
		return;
	if (mangled[0] == '_' && mangled[1] == 'Z')
		d = cplus_demangle(mangled, DMGL_ANSI);
	snprintf(out, len, "%s", d ? d : mangled);
	free(d);
}

/* Reads pid's perf map again if it was never read or is older than the throttle. */
static const struct gp_perf_map *perf_map_of(struct sym_proc *p, bool refresh)
{
	__u64 now = now_ns();
	struct gp_perf_map *pm;

	if (p->perf_ns && (!refresh || now - p->perf_ns < RESNAPSHOT_NS))
		return p->perf;
	p->perf_ns = now;
	if (gp_perf_map_read(p->pid, &pm) == 0) {
		gp_perf_map_free(p->perf);
		p->perf = pm; /* a process gone keeps the map read while it lived */
	}
	return p->perf;
}

void gp_symbolizer_stack_seen(void *ctx, __u32 tgid, const __u64 *ips, unsigned n)
{
	struct gp_symbolizer *s = ctx;
	struct sym_proc *p = find_proc(s, (pid_t)tgid);
	bool resnap = false, jit = false;

	for (unsigned i = 0; i < n; i++) {
		const struct gp_map *m = p && p->maps ? gp_maps_find(p->maps, ips[i] - 1) : NULL;

		if (!m)
			resnap =
				true; /* mapped since the snapshot (dlopen), or a broken frame chain */
		else if (!m->inode && m->exec)
			jit = true;
	}
	/*
	 * A library mapped since the snapshot: read the maps again at once (the
	 * process may exit any moment). Only addresses that a fresh snapshot does
	 * not hold either (a broken frame chain) wait for the throttle.
	 */
	if (resnap && (!p || !p->stale_ns || now_ns() - p->stale_ns >= RESNAPSHOT_NS)) {
		bool missing = false;

		gp_symbolizer_snapshot(s, (pid_t)tgid);
		p = find_proc(s, (pid_t)tgid);
		for (unsigned i = 0; p && p->maps && i < n; i++) {
			const struct gp_map *m = gp_maps_find(p->maps, ips[i] - 1);

			jit = jit || (m && !m->inode && m->exec);
			missing = missing || !m;
		}
		if (p)
			p->stale_ns = missing ? now_ns() : 0;
	}
	if (jit && p) {
		const struct gp_perf_map *pm = perf_map_of(p, false);
		bool missing = !pm;

		for (unsigned i = 0; pm && !missing && i < n; i++) {
			const struct gp_map *m = gp_maps_find(p->maps, ips[i] - 1);

			missing = m && !m->inode && m->exec && !gp_perf_map_find(pm, ips[i] - 1);
		}
		if (missing)
			perf_map_of(p, true);
	}
}

void gp_symbolizer_set_python(struct gp_symbolizer *s, struct gp_python *py)
{
	s->python = py;
}

int gp_symbolizer_py_frame(void *ctx, __u32 tgid, __u64 code, __u64 word,
			   struct gp_py_frame_sym *out)
{
	struct gp_symbolizer *s = ctx;
	struct gp_py_sym sym;
	int err;

	if (!s->python)
		return -ENOENT;
	err = gp_python_resolve(s->python, (pid_t)tgid, code, word, &sym);
	if (err)
		return err;
	*out = (struct gp_py_frame_sym){ .qualname = sym.qualname,
					 .file = sym.file,
					 .line = sym.line };
	return 0;
}

int gp_symbolizer_symbolize(void *ctx, __u32 tgid, __u64 addr, struct gp_frame_sym *out)
{
	struct gp_symbolizer *s = ctx;
	struct sym_proc *p;
	const struct gp_map *m;
	struct gp_sym_result r = { 0 };

	memset(out, 0, sizeof(*out));
	out->build_id = "";
	if (gp_symbolizer_lookup(s, (pid_t)tgid, addr, &r) == 0 || r.file) {
		p = find_proc(s, (pid_t)tgid);
		m = p && p->maps ? gp_maps_find(p->maps, addr) : NULL;
		out->file = r.file;
		out->file_offset = r.file_offset;
		if (m) {
			const struct gp_elf_syms *elf = gp_symbolizer_elf(s, (pid_t)tgid, m);

			if (elf) {
				gp_elf_build_id_hex(elf, s->build_id, sizeof(s->build_id));
				out->build_id = s->build_id;
			}
		}
		if (!r.symbol)
			return 0;
		out->symbol = r.symbol;
		out->sym_offset = r.sym_offset;
		out->source = GP_SYM_ELF;
		gp_demangle_short(r.symbol, s->function, sizeof(s->function));
		out->function = s->function;
		return 0;
	}
	/* anonymous code: a JIT's, named by its perf map */
	p = find_proc(s, (pid_t)tgid);
	if (!p)
		return -ENOENT;
	{
		const struct gp_perf_map *pm = perf_map_of(p, false);
		const struct gp_perf_sym *ps = pm ? gp_perf_map_find(pm, addr) : NULL;

		if (!ps && (pm = perf_map_of(p, true)))
			ps = gp_perf_map_find(pm, addr);
		if (!ps)
			return -ENOENT;
		snprintf(s->function, sizeof(s->function), "%s", ps->name);
		for (char *c = s->function; *c; c++)
			if (*c == ';' || *c == '\n')
				*c = ':';
		out->function = out->symbol = s->function;
		out->sym_offset = addr - ps->start;
		out->source = GP_SYM_PERF_MAP;
		return 0;
	}
}
