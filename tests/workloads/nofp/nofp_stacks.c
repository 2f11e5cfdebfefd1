/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nofp_stacks — GPU work from code built without frame pointers, for the tests of
 * stacks unwound from .eh_frame: this executable and its library libnofpstage.so
 * (nofp_stage.c) are built -O2 -fomit-frame-pointer (workloads.mk), and every
 * traced call site takes glibc's backtrace() (which unwinds from .eh_frame, as
 * the tracer must) right before its call. The reference (--ref, member "nofp")
 * lists each distinct (API, backtrace) with its calls, errors and bytes, and its
 * frames: address, file and offset in the file (from /proc/self/maps, read at the
 * end: nothing is unmapped meanwhile) and, for the workload's own functions, the
 * name dladdr() gives. backtrace()'s first frame is in the function that makes
 * the call, at another instruction than the call's return: a test compares frame
 * 0 by function, the callers exactly.
 *
 * Paths (leaf first; E: this executable, L: the library):
 *   work buffer  main (cudaMalloc, never freed)
 *   exe_launch   nf_launch - nf_middle - nf_outer - nf_phase_exe - main (E)
 *   lib copies   nfl_copy_in / nfl_copy_out - nfl_stage_mid - nfl_stage_enter (L) -
 *                nf_phase_lib - main (E)
 *   callback     nf_apply_memset (E) - nfl_stage_mid - nfl_stage_enter (L) - nf_phase_lib - main
 *   recursion    nfl_leaf_launch - nfl_recurse x depth (L) - nf_phase_lib - main, depth 1..3
 *   big frame    nfl_stream_wait - nfl_big_frame (L, a 12 KiB frame) - main
 *   rbp garbage  nf_wait_device - nf_clobber_rbp (%rbp overwritten, saved in its frame) -
 *                nf_alloca_frame (a variable-size frame: its CFA is based on %rbp) -
 *                nf_phase_alloca - main
 *   thread       nf_thread_alloc (cudaMalloc, cudaFree) - nf_thread_main - [start_thread];
 *                the library's copies and callback under nf_thread_main
 * Above main: the C library's start (__libc_start_call_main, __libc_start_main, _start); above
 * nf_thread_main: start_thread, clone3. Counts are parameters (stacks/frames.h): one stack a path.
 */
#include <dlfcn.h>
#include <limits.h>

#include "wl.h"
#include "nofp/nofp.h"

#define EXE_LAUNCHES	   5
#define STAGE_TIMES	   3
#define RECURSE_TIMES	   2
#define DEVICE_SYNCS	   4
#define STREAM_SYNCS	   3
#define THREAD_ALLOCS	   2
#define THREAD_STAGE_TIMES 2
#define ALLOC_BYTES	   (256u << 10)
#define MEMSET_BYTES	   (32u << 10)
#define MAX_SITES	   64

/* One distinct (API, backtrace): a stack of the reference. */
struct nf_site {
	const char *api, *kind, *kernel;
	unsigned long calls, errors;
	unsigned long long bytes;
	int nbt;
	void *bt[NF_MAX_BT];
};

static struct {
	pthread_mutex_t lock;
	struct nf_site sites[MAX_SITES];
	int nsites;
	char exe[PATH_MAX], lib[PATH_MAX];
} nf = { .lock = PTHREAD_MUTEX_INITIALIZER };

static const char *const op_kind[] = {
	[NF_LAUNCH] = "kernel",	   [NF_COPY_HTOD] = "copy",   [NF_COPY_DTOH] = "copy",
	[NF_MEMSET] = "memset",	   [NF_ALLOC] = "alloc",      [NF_FREE] = "free",
	[NF_DEVICE_SYNC] = "sync", [NF_STREAM_SYNC] = "sync",
};

/* The accounting of wl.h, and the call's stack among the sites. */
static void nf_note(const struct nf_call *c)
{
	struct nf_site *s = NULL;
	bool ok = c->err == cudaSuccess;

	wl_count(c->api, c->err);
	switch (c->op) {
	case NF_LAUNCH:
		if (ok) {
			wl_launched(c->kernel);
			wl_stream_work(NULL, false, WL_KERNEL, 0);
		}
		break;
	case NF_COPY_HTOD:
	case NF_COPY_DTOH:
		if (ok) {
			wl_transfer(c->op == NF_COPY_HTOD ? "HtoD" : "DtoH", "pageable", true,
				    c->bytes);
			wl_stream_work(NULL, false, WL_COPY, c->bytes);
		}
		break;
	case NF_MEMSET:
		if (ok) {
			wl_memset(c->bytes);
			wl_stream_work(NULL, false, WL_MEMSET, c->bytes);
		}
		break;
	case NF_ALLOC:
		if (ok)
			wl_allocated(WL_DEVICE, c->ptr, c->bytes);
		break;
	case NF_FREE:
		if (ok)
			wl_freed(c->ptr);
		break;
	case NF_DEVICE_SYNC:
		break;
	case NF_STREAM_SYNC:
		wl_stream_work(NULL, false, WL_SYNC, 0);
		break;
	}
	if (c->nbt < 2 || c->nbt >= NF_MAX_BT)
		wl_die("%s: backtrace() gave %d frames", c->api, c->nbt);
	pthread_mutex_lock(&nf.lock);
	for (int i = 0; i < nf.nsites && !s; i++)
		if (!strcmp(nf.sites[i].api, c->api) && nf.sites[i].nbt == c->nbt &&
		    !memcmp(nf.sites[i].bt, c->bt, sizeof(c->bt[0]) * c->nbt))
			s = &nf.sites[i];
	if (!s) {
		if (nf.nsites == MAX_SITES)
			wl_die("too many stacks");
		s = &nf.sites[nf.nsites++];
		s->api = c->api;
		s->kind = op_kind[c->op];
		s->kernel = c->kernel;
		s->nbt = c->nbt;
		memcpy(s->bt, c->bt, sizeof(c->bt[0]) * c->nbt);
	}
	s->calls++;
	if (!ok)
		s->errors++;
	else if (c->op != NF_FREE)
		s->bytes += c->bytes;
	pthread_mutex_unlock(&nf.lock);
}

SP_FRAME void k_nf_exe(float *x)
{
	x[0] = x[2] * 2.0f;
}

/* ---- exe_launch: main -> nf_phase_exe -> nf_outer -> nf_middle -> nf_launch ---- */
SP_FRAME void nf_launch(void *dev)
{
	void *args[] = { &dev };
	struct nf_call c = { .op = NF_LAUNCH, .api = "cudaLaunchKernel", .kernel = "k_nf_exe" };

	c.nbt = backtrace(c.bt, NF_MAX_BT);
	c.err = cudaLaunchKernel((const void *)k_nf_exe, (dim3){ 4, 1, 1 }, (dim3){ 128, 1, 1 },
				 args, 0, NULL);
	nf_note(&c);
	SP_KEEP();
}

SP_FRAME void nf_middle(void *dev, int i)
{
	volatile int local[6] = { i, i + 1, i + 2 };

	nf_launch((char *)dev + local[0] * 0);
	SP_KEEP();
	local[5] = local[1];
}

SP_FRAME void nf_outer(void *dev, int times)
{
	for (int i = 0; i < times; i++) {
		nf_middle(dev, i);
		SP_KEEP();
	}
}

SP_FRAME void nf_phase_exe(void *dev, int times)
{
	nf_outer(dev, times);
	SP_KEEP();
}

/* ---- the library's copies, its call back into the executable, its recursion ---- */
SP_FRAME void nf_apply_memset(const struct nf_ctx *cx, int times)
{
	for (int i = 0; i < times; i++) {
		struct nf_call c = { .op = NF_MEMSET, .api = "cudaMemset", .bytes = MEMSET_BYTES };

		c.nbt = backtrace(c.bt, NF_MAX_BT);
		c.err = cudaMemset(cx->dev, i, MEMSET_BYTES);
		nf_note(&c);
	}
	SP_KEEP();
}

SP_FRAME void nf_phase_lib(const struct nf_ctx *cx, int times, int recurse_times)
{
	nfl_stage_enter(cx, times);
	SP_KEEP();
	for (int depth = 1; depth <= NF_RECURSE_MAX; depth++) {
		nfl_recurse(cx, depth, recurse_times);
		SP_KEEP();
	}
}

/* ---- rbp garbage: main -> nf_phase_alloca -> nf_alloca_frame -> nf_clobber_rbp -> nf_wait_device ---- */
SP_FRAME void nf_wait_device(int times)
{
	for (int i = 0; i < times; i++) {
		struct nf_call c = { .op = NF_DEVICE_SYNC, .api = "cudaDeviceSynchronize" };

		c.nbt = backtrace(c.bt, NF_MAX_BT);
		c.err = cudaDeviceSynchronize();
		nf_note(&c);
	}
	SP_KEEP();
}

/*
 * Overwrites %rbp for the call below it: the caller's value (nf_alloca_frame's frame base,
 * which its CFA depends on) is only in this frame's save slot, where .eh_frame says it is.
 */
SP_FRAME void nf_clobber_rbp(int times)
{
#if defined(__x86_64__)
	__asm__ volatile("movabs $0x5a5a5a5a5a5a5a5a, %%rbp" ::: "rbp");
#endif
	nf_wait_device(times);
	SP_KEEP();
}

/* A frame of run-time size: the compiler addresses it from %rbp, and so does its CFA. */
SP_FRAME void nf_alloca_frame(int n, int times)
{
	volatile char vla[n];

	vla[0] = (char)n;
	nf_clobber_rbp(times);
	SP_KEEP();
	vla[n - 1] = vla[0];
}

SP_FRAME void nf_phase_alloca(int n, int times)
{
	nf_alloca_frame(n, times);
	SP_KEEP();
}

/* ---- a thread: start_thread -> nf_thread_main -> nf_thread_alloc, and the library's path ---- */
SP_FRAME void nf_thread_alloc(int times)
{
	for (int i = 0; i < times; i++) {
		struct nf_call a = { .op = NF_ALLOC, .api = "cudaMalloc", .bytes = ALLOC_BYTES };
		struct nf_call f = { .op = NF_FREE, .api = "cudaFree" };

		a.nbt = backtrace(a.bt, NF_MAX_BT);
		a.err = cudaMalloc(&a.ptr, ALLOC_BYTES);
		nf_note(&a);
		f.ptr = a.ptr;
		f.nbt = backtrace(f.bt, NF_MAX_BT);
		f.err = cudaFree(f.ptr);
		nf_note(&f);
	}
	SP_KEEP();
}

SP_FRAME void *nf_thread_main(void *arg)
{
	const struct nf_ctx *cx = arg;

	wl_set_device(0); /* the device of its allocations, as the report can know it (no stack) */
	nf_thread_alloc(THREAD_ALLOCS);
	SP_KEEP();
	nfl_stage_enter(cx, THREAD_STAGE_TIMES);
	SP_KEEP();
	return NULL;
}

/* ---- reference ---- */
struct nf_map {
	unsigned long start, end, offset;
	char path[PATH_MAX];
};

static struct nf_map *maps;
static int nmaps;

static void read_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128];
	int cap = 0;

	if (!f)
		wl_die("/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		struct nf_map m = { 0 };
		int at = 0;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &m.start, &m.end, &m.offset, &at) <
			    3 ||
		    !at)
			continue;
		snprintf(m.path, sizeof(m.path), "%s", line + at);
		m.path[strcspn(m.path, "\n")] = '\0';
		if (nmaps == cap) {
			cap = cap ? 2 * cap : 64;
			maps = realloc(maps, cap * sizeof(*maps));
			if (!maps)
				wl_die("out of memory");
		}
		maps[nmaps++] = m;
	}
	fclose(f);
}

static const struct nf_map *map_of(unsigned long addr)
{
	for (int i = 0; i < nmaps; i++)
		if (addr >= maps[i].start && addr < maps[i].end)
			return &maps[i];
	return NULL;
}

static void write_sites(FILE *f)
{
	read_maps();
	fputs(",\n  \"nofp\": {\n    \"comm\": \"nofp_stacks\", \"exe\": ", f);
	wl_json_str(f, nf.exe);
	fputs(", \"library\": ", f);
	wl_json_str(f, nf.lib);
	fputs(",\n    \"sites\": [", f);
	for (int i = 0; i < nf.nsites; i++) {
		const struct nf_site *s = &nf.sites[i];

		fprintf(f, "%s\n      {\"api\": ", i ? "," : "");
		wl_json_str(f, s->api);
		fputs(", \"kind\": ", f);
		wl_json_str(f, s->kind);
		fputs(", \"kernel\": ", f);
		wl_json_str(f, s->kernel);
		fprintf(f,
			", \"calls\": %lu, \"errors\": %lu, \"bytes\": %llu,\n       \"frames\": [",
			s->calls, s->errors, s->bytes);
		for (int k = 0; k < s->nbt; k++) {
			unsigned long a = (unsigned long)s->bt[k];
			const struct nf_map *m = map_of(a);
			const char *fn = NULL;
			Dl_info info;

			/* names only for the workload's own functions (all exported): elsewhere dladdr
			 * gives the nearest exported symbol, not necessarily the function */
			if (m && (!strcmp(m->path, nf.exe) || !strcmp(m->path, nf.lib)) &&
			    dladdr(s->bt[k], &info))
				fn = info.dli_sname;
			fprintf(f, "%s\n        {\"address\": \"0x%lx\", \"file\": ", k ? "," : "",
				a);
			wl_json_str(f, m && m->path[0] ? m->path : NULL);
			fprintf(f, ", \"file_offset\": %lu, \"function\": ",
				m ? a - m->start + m->offset : 0);
			wl_json_str(f, fn);
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("\n    ]\n  }", f);
}

static void resolve_files(void)
{
	Dl_info info;

	if (!realpath("/proc/self/exe", nf.exe))
		wl_die("realpath /proc/self/exe: %s", strerror(errno));
	if (!dladdr((void *)nfl_stage_enter, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, nf.lib))
		wl_die("cannot find libnofpstage.so's path");
}

int main(int argc, char **argv)
{
	static struct nf_ctx cx = { .note = nf_note, .apply = nf_apply_memset };
	static struct nf_call alloc = { .op = NF_ALLOC,
					.api = "cudaMalloc",
					.bytes = NF_DEV_BYTES };
	void *warm[4];
	pthread_t thread;

	wl_init(argc, argv);
	resolve_files();
	wl.ref_extra = write_sites;
	/* set-up before the handshake, no CUDA call (launched without --wait, all of it is traced):
	 * backtrace() loads libgcc_s on its first call */
	if (backtrace(warm, 4) < 1)
		wl_die("backtrace() gives nothing");
	cx.host = malloc(NF_DEV_BYTES);
	if (!cx.host)
		wl_die("out of memory");
	memset(cx.host, 1, NF_DEV_BYTES);
	wl_begin();
	wl_set_device(0);
	/* the work buffer, from main itself (left allocated: a leak the report must name) */
	alloc.nbt = backtrace(alloc.bt, NF_MAX_BT);
	alloc.err = cudaMalloc(&alloc.ptr, NF_DEV_BYTES);
	nf_note(&alloc);
	if (alloc.err != cudaSuccess)
		wl_die("cudaMalloc of the work buffer failed");
	cx.dev = alloc.ptr;

	if (pthread_create(&thread, NULL, nf_thread_main, &cx))
		wl_die("pthread_create failed");
	nf_phase_exe(cx.dev, EXE_LAUNCHES);
	SP_KEEP();
	nf_phase_lib(&cx, STAGE_TIMES, RECURSE_TIMES);
	SP_KEEP();
	nfl_big_frame(&cx, STREAM_SYNCS);
	SP_KEEP();
	nf_phase_alloca(64 + argc, DEVICE_SYNCS);
	SP_KEEP();
	if (pthread_join(thread, NULL))
		wl_die("pthread_join failed");

	wl_end();
	return 0;
}
