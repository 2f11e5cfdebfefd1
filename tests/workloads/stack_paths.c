/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stack_paths — GPU work from known call paths, for the tests of call stacks.
 * Each traced call is made from a known function, reached through a known chain
 * of callers, in a known file; the reference (--ref) lists every path leaf first
 * (the function that made the call, then its callers up to main), with the file
 * of each frame, the API, the folded leaf ("[kernel] k_alpha", "[HtoD 4 MiB
 * pageable]", ...), the calls and bytes. The test requires the report's stacks
 * and folded files to say the same.
 *
 * Always: three launching functions in three places — launch_alpha in this file,
 * stk::launch_gemm<float> in stacks/stack_paths_gemm.cpp (a C++ template kernel),
 * stage_launch in libstackstage.so (stacks/stackstage.c) — and copies (4 MiB
 * HtoD from pageable memory, 100 B DtoH), memsets (1 MiB, 1.5 KiB), an
 * allocation and its free, stream and device synchronisation; and one
 * cudaSetDevice, which carries no stack.
 * Options (besides wl.h's --ref/--wait/--pre/--hold):
 *   --jit      code in anonymous executable memory, named in /tmp/perf-PID.map
 *              (written before it runs, left in place: the tracer reads it when it
 *              writes its report, the test deletes it): jit_python_step, a
 *              frame-pointer trampoline, calls jit_launch
 *   --no-fp    a launch reached through nofp_call, hand-written code that calls
 *              with %rbp = 0 and has no call-frame information (a gap in the
 *              program's table): the walk stops there, truncated "unwind_table"
 *              (neither the table nor a frame pointer gives its caller)
 *   --deep N   recurse_deep nested N deep, then a launch: with N >= 130 deeper than
 *              the 127 frames a stack keeps (truncated "depth"), with N <= 100 whole;
 *              N in between is refused (whether libc's frame still fits is the
 *              tracer's business, not an exact reference)
 *
 * Frames are kept honest by SP_FRAME/SP_KEEP (stacks/frames.h): no inlining,
 * no clones, no tail calls. -fno-omit-frame-pointer comes from workloads.mk. Loop
 * counts are parameters of SP_FRAME functions (never constants the compiler sees),
 * so no loop is unrolled into several call sites: each path is one stack.
 */
#include <dlfcn.h>
#include <limits.h>
#include <sys/mman.h>

#include "wl.h"
#include "stacks/stack_paths.h"

#define KiB 1024ull
#define MiB (1024ull * 1024)

#define ALPHA_LAUNCHES	3
#define GEMM_LAUNCHES	5
#define STAGE_LAUNCHES	7
#define UPLOADS		2
#define STREAM_SYNCS	2
#define JIT_LAUNCHES	4
#define NOFP_LAUNCHES	6
#define DEEP_LAUNCHES	3
#define DEEP_MAX_FRAMES 127 /* what a stack keeps (kernel.perf_event_max_stack) */

/* One call path: a call site reached through a known chain of functions. */
struct sp_path {
	const char *name, *api, *kind, *kernel, *truncated;
	char op[96];
	const char *functions[8]; /* leaf first: the caller of the API, then its callers */
	int files[8];		  /* per function: F_EXE, F_STAGE or F_ANON */
	int nfunctions;
	int repeat_at, repeat; /* functions[repeat_at] stands for `repeat` frames (recursion) */
	unsigned long calls, errors;
	unsigned long long bytes;
	bool taken;
};

enum { F_EXE, F_STAGE, F_ANON };

enum {
	P_ALPHA,
	P_GEMM,
	P_STAGE,
	P_UPLOAD,
	P_READBACK,
	P_CLEAR,
	P_CLEAR_TAIL,
	P_ALLOC,
	P_FREE,
	P_STREAM_SYNC,
	P_DEVICE_SYNC,
	P_JIT,
	P_NOFP,
	P_DEEP,
	P_COUNT
};

static struct sp_path paths[P_COUNT];
static struct sp_path *cur; /* the path whose calls count now */
static char exe_path[PATH_MAX], stage_path[PATH_MAX], perf_map_path[64];
static int deep_levels;

/* Folded size: < 1 KiB "N B"; whole MiB "N MiB"; whole KiB "N KiB"; else one decimal in the largest unit. */
static void fmt_size(char *buf, size_t len, unsigned long long b)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = -1;

	if (b < KiB) {
		snprintf(buf, len, "%llu B", b);
		return;
	}
	if (b % MiB == 0) {
		snprintf(buf, len, "%llu MiB", b / MiB);
		return;
	}
	if (b % KiB == 0) {
		snprintf(buf, len, "%llu KiB", b / KiB);
		return;
	}
	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
}

static void path_def(int id, const char *name, const char *api, const char *kind,
		     const char *kernel_full, const char *kernel_short, const char *truncated,
		     const char *const *fns, const int *files)
{
	struct sp_path *p = &paths[id];

	p->name = name;
	p->api = api;
	p->kind = kind;
	p->kernel = kernel_full;
	p->truncated = truncated;
	p->repeat_at = -1;
	if (kernel_short)
		snprintf(p->op, sizeof(p->op), "[kernel] %s", kernel_short);
	for (p->nfunctions = 0; fns[p->nfunctions]; p->nfunctions++) {
		p->functions[p->nfunctions] = fns[p->nfunctions];
		p->files[p->nfunctions] = files[p->nfunctions];
	}
}

#define FNS(...)   ((const char *const[]){ __VA_ARGS__, NULL })
#define FILES(...) ((const int[]){ __VA_ARGS__ })

/* One call of the current path made: what wl.h counts, and the path's own counts. */
static void noted(const char *api, cudaError_t err, unsigned long long bytes)
{
	wl_count(api, err);
	cur->taken = true;
	cur->calls++;
	if (err != cudaSuccess)
		cur->errors++;
	else
		cur->bytes += bytes;
}

/* The callback of launching functions in other files (stacks/stack_paths.h). */
static void count_launch(const char *api, cudaError_t err, const char *kernel)
{
	noted(api, err, 0);
	if (err == cudaSuccess) {
		wl_launched(kernel);
		wl_stream_work(NULL, false, WL_KERNEL, 0);
	}
}

/* ---- kernels: host functions, named by their symbols; bodies differ so none is merged ---- */
SP_FRAME void k_alpha(float *x)
{
	x[0] = 1.0f;
}

SP_FRAME void k_jit(float *x)
{
	x[0] = 2.0f;
}

SP_FRAME void k_nofp(float *x)
{
	x[0] = 3.0f;
}

SP_FRAME void k_deep(float *x)
{
	x[0] = 4.0f;
}

static float *dev; /* 8 MiB of device memory, allocated before the traced phase */
static char *host; /* 4 MiB of pageable host memory */

/* ---- path alpha: main -> alpha_phase -> launch_alpha ---- */
static SP_FRAME void launch_alpha(void)
{
	void *args[] = { &dev };
	cudaError_t err = cudaLaunchKernel((const void *)k_alpha, (dim3){ 8, 1, 1 },
					   (dim3){ 64, 1, 1 }, args, 0, NULL);

	count_launch("cudaLaunchKernel", err, "k_alpha");
	SP_KEEP();
}

static SP_FRAME void alpha_phase(int times)
{
	cur = &paths[P_ALPHA];
	for (int i = 0; i < times; i++) {
		launch_alpha();
		SP_KEEP();
	}
}

/* ---- path stage: main -> stage_phase -> stage_run -> stage_launch (the last two in the library) ---- */
static SP_FRAME void stage_phase(void)
{
	cur = &paths[P_STAGE];
	stage_run(dev, STAGE_LAUNCHES, count_launch);
	SP_KEEP();
}

/* ---- copies, memsets, allocation, synchronisation: each from its own function, called by main ---- */
static SP_FRAME void upload_weights(int times)
{
	cudaError_t err;

	cur = &paths[P_UPLOAD];
	for (int i = 0; i < times; i++) {
		host[i] = (char)i;
		err = cudaMemcpy(dev, host, 4 * MiB, cudaMemcpyHostToDevice);
		noted("cudaMemcpy", err, 4 * MiB);
		if (err == cudaSuccess) {
			wl_transfer("HtoD", "pageable", true, 4 * MiB);
			wl_stream_work(NULL, false, WL_COPY, 4 * MiB);
		}
	}
	SP_KEEP();
}

static SP_FRAME void read_flag(void)
{
	cudaError_t err;

	cur = &paths[P_READBACK];
	err = cudaMemcpy(host, dev, 100, cudaMemcpyDeviceToHost);
	noted("cudaMemcpy", err, 100);
	if (err == cudaSuccess) {
		wl_transfer("DtoH", "pageable", true, 100);
		wl_stream_work(NULL, false, WL_COPY, 100);
	}
	SP_KEEP();
}

static SP_FRAME void clear_buffer(void)
{
	cudaError_t err;

	cur = &paths[P_CLEAR];
	err = cudaMemset(dev, 0, 1 * MiB);
	noted("cudaMemset", err, 1 * MiB);
	if (err == cudaSuccess) {
		wl_memset(1 * MiB);
		wl_stream_work(NULL, false, WL_MEMSET, 1 * MiB);
	}
	SP_KEEP();
}

static SP_FRAME void clear_tail(void)
{
	cudaError_t err;

	cur = &paths[P_CLEAR_TAIL];
	err = cudaMemset((char *)dev + 2 * MiB, 7, 1536);
	noted("cudaMemset", err, 1536);
	if (err == cudaSuccess) {
		wl_memset(1536);
		wl_stream_work(NULL, false, WL_MEMSET, 1536);
	}
	SP_KEEP();
}

static SP_FRAME void scratch_cycle(void)
{
	void *p = NULL;
	cudaError_t err;

	cur = &paths[P_ALLOC];
	err = cudaMalloc(&p, 64 * MiB);
	noted("cudaMalloc", err, 64 * MiB);
	if (err == cudaSuccess)
		wl_allocated(WL_DEVICE, p, 64 * MiB);
	cur = &paths[P_FREE];
	err = cudaFree(p);
	noted("cudaFree", err, 0);
	if (err == cudaSuccess)
		wl_freed(p);
	SP_KEEP();
}

static SP_FRAME void wait_stream(int times)
{
	cur = &paths[P_STREAM_SYNC];
	for (int i = 0; i < times; i++) {
		noted("cudaStreamSynchronize", cudaStreamSynchronize(NULL), 0);
		wl_stream_work(NULL, false, WL_SYNC, 0);
	}
	SP_KEEP();
}

static SP_FRAME void wait_device(void)
{
	cur = &paths[P_DEVICE_SYNC];
	noted("cudaDeviceSynchronize", cudaDeviceSynchronize(), 0);
	SP_KEEP();
}

/* ---- --jit: main -> jit_phase -> [jit_python_step, anonymous memory] -> jit_launch ---- */
SP_FRAME void jit_launch(void)
{
	void *args[] = { &dev };
	cudaError_t err = cudaLaunchKernel((const void *)k_jit, (dim3){ 1, 1, 1 },
					   (dim3){ 32, 1, 1 }, args, 0, NULL);

	count_launch("cudaLaunchKernel", err, "k_jit");
	SP_KEEP();
}

static SP_FRAME void jit_phase(int times)
{
#if defined(__x86_64__)
	/* push %rbp; mov %rsp,%rbp; call *%rdi; pop %rbp; ret — a frame like compiled code's */
	static const unsigned char code[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3 };
	void (*step)(void (*)(void));
	FILE *f;
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (page == MAP_FAILED)
		wl_die("jit: mmap: %s", strerror(errno));
	memcpy(page, code, sizeof(code));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC))
		wl_die("jit: mprotect: %s", strerror(errno));
	/* the perf map names the code before it runs, as a JIT (python -X perf) does */
	snprintf(perf_map_path, sizeof(perf_map_path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(perf_map_path, "a");
	if (!f ||
	    fprintf(f, "%lx %zx jit_python_step\n", (unsigned long)(uintptr_t)page, sizeof(code)) <
		    0 ||
	    fclose(f))
		wl_die("jit: cannot write %s", perf_map_path);
	step = (void (*)(void (*)(void)))page;
	cur = &paths[P_JIT];
	for (int i = 0; i < times; i++) {
		step(jit_launch);
		SP_KEEP();
	}
#else
	wl_die("--jit: x86-64 only");
#endif
}

/* ---- --no-fp: main -> nofp_phase -> nofp_call (%rbp = 0, no CFI) -> nofp_launch; the walk ends at nofp_call ---- */
#if defined(__x86_64__)
void nofp_call(void (*fn)(void));
/* Saves the caller's %rbp, calls fn with %rbp = 0 (the stack stays 16-byte aligned), restores it. */
__asm__(".pushsection .text\n"
	".globl nofp_call\n"
	".type nofp_call, @function\n"
	"nofp_call:\n"
	"\tpush %rbp\n"
	"\txor %ebp, %ebp\n"
	"\tcall *%rdi\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size nofp_call, .-nofp_call\n"
	".popsection\n");
#endif

SP_FRAME void nofp_launch(void)
{
	void *args[] = { &dev };
	cudaError_t err = cudaLaunchKernel((const void *)k_nofp, (dim3){ 2, 1, 1 },
					   (dim3){ 32, 1, 1 }, args, 0, NULL);

	count_launch("cudaLaunchKernel", err, "k_nofp");
	SP_KEEP();
}

static SP_FRAME void nofp_phase(int times)
{
#if defined(__x86_64__)
	cur = &paths[P_NOFP];
	for (int i = 0; i < times; i++) {
		nofp_call(nofp_launch);
		SP_KEEP();
	}
#else
	wl_die("--no-fp: x86-64 only");
#endif
}

/* ---- --deep N: main -> deep_phase -> recurse_deep x N -> deep_launch ---- */
static SP_FRAME void deep_launch(int times)
{
	for (int i = 0; i < times; i++) {
		void *args[] = { &dev };
		cudaError_t err = cudaLaunchKernel((const void *)k_deep, (dim3){ 1, 1, 1 },
						   (dim3){ 1, 1, 1 }, args, 0, NULL);

		count_launch("cudaLaunchKernel", err, "k_deep");
	}
	SP_KEEP();
}

static SP_FRAME void recurse_deep(int n, int times)
{
	if (n > 1)
		recurse_deep(n - 1, times);
	else
		deep_launch(times);
	SP_KEEP();
}

static SP_FRAME void deep_phase(void)
{
	cur = &paths[P_DEEP];
	recurse_deep(deep_levels, DEEP_LAUNCHES);
	SP_KEEP();
}

/* ---- reference ---- */
static const char *file_of(int which)
{
	return which == F_EXE ? exe_path : which == F_STAGE ? stage_path : NULL;
}

static void write_paths(FILE *f)
{
	int n = 0;

	fputs(",\n  \"stacks\": {\n    \"comm\": ", f);
	wl_json_str(f, "stack_paths");
	fputs(", \"exe\": ", f);
	wl_json_str(f, exe_path);
	fputs(", \"library\": ", f);
	wl_json_str(f, stage_path);
	fputs(", \"perf_map\": ", f);
	wl_json_str(f, perf_map_path[0] ? perf_map_path : NULL);
	fprintf(f, ", \"max_frames\": %d,\n    \"paths\": [", DEEP_MAX_FRAMES);
	for (int i = 0; i < P_COUNT; i++) {
		const struct sp_path *p = &paths[i];

		if (!p->taken)
			continue;
		fprintf(f, "%s\n      {\"name\": ", n++ ? "," : "");
		wl_json_str(f, p->name);
		fputs(", \"api\": ", f);
		wl_json_str(f, p->api);
		fputs(", \"kind\": ", f);
		wl_json_str(f, p->kind);
		fputs(", \"op\": ", f);
		wl_json_str(f, p->op);
		fputs(", \"kernel\": ", f);
		wl_json_str(f, p->kernel);
		fputs(", \"truncated\": ", f);
		wl_json_str(f, p->truncated);
		fprintf(f,
			", \"calls\": %lu, \"errors\": %lu, \"bytes\": %llu,\n       \"functions\": [",
			p->calls, p->errors, p->bytes);
		for (int k = 0, m = 0; k < p->nfunctions; k++)
			for (int r = 0; r < (k == p->repeat_at ? p->repeat : 1); r++) {
				fputs(m++ ? ", " : "", f);
				wl_json_str(f, p->functions[k]);
			}
		fputs("],\n       \"files\": [", f);
		for (int k = 0, m = 0; k < p->nfunctions; k++)
			for (int r = 0; r < (k == p->repeat_at ? p->repeat : 1); r++) {
				fputs(m++ ? ", " : "", f);
				wl_json_str(f, file_of(p->files[k]));
			}
		fputs("]}", f);
	}
	fputs("\n    ]\n  }", f);
}

static void resolve_files(void)
{
	Dl_info info;

	if (!realpath("/proc/self/exe", exe_path))
		wl_die("realpath /proc/self/exe: %s", strerror(errno));
	if (!dladdr((void *)stage_run, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, stage_path))
		wl_die("cannot find libstackstage.so's path");
}

static void define_paths(void)
{
	char size[32];

	path_def(P_ALPHA, "alpha", "cudaLaunchKernel", "kernel", "k_alpha", "k_alpha", NULL,
		 FNS("launch_alpha", "alpha_phase", "main"), FILES(F_EXE, F_EXE, F_EXE));
	path_def(P_GEMM, "gemm", "cudaLaunchKernel", "kernel",
		 "void gemm_kernel<float>(float*, int)", "gemm_kernel<float>", NULL,
		 FNS("stk::launch_gemm<float>", "gemm_phase", "main"), FILES(F_EXE, F_EXE, F_EXE));
	path_def(P_STAGE, "stage", "cudaLaunchKernel", "kernel", "stage_kernel", "stage_kernel",
		 NULL, FNS("stage_launch", "stage_run", "stage_phase", "main"),
		 FILES(F_STAGE, F_STAGE, F_EXE, F_EXE));
	path_def(P_UPLOAD, "upload", "cudaMemcpy", "copy", NULL, NULL, NULL,
		 FNS("upload_weights", "main"), FILES(F_EXE, F_EXE));
	fmt_size(size, sizeof(size), 4 * MiB);
	snprintf(paths[P_UPLOAD].op, sizeof(paths[P_UPLOAD].op), "[HtoD %s pageable]", size);
	path_def(P_READBACK, "readback", "cudaMemcpy", "copy", NULL, NULL, NULL,
		 FNS("read_flag", "main"), FILES(F_EXE, F_EXE));
	fmt_size(size, sizeof(size), 100);
	snprintf(paths[P_READBACK].op, sizeof(paths[P_READBACK].op), "[DtoH %s pageable]", size);
	path_def(P_CLEAR, "clear", "cudaMemset", "memset", NULL, NULL, NULL,
		 FNS("clear_buffer", "main"), FILES(F_EXE, F_EXE));
	fmt_size(size, sizeof(size), 1 * MiB);
	snprintf(paths[P_CLEAR].op, sizeof(paths[P_CLEAR].op), "[memset %s]", size);
	path_def(P_CLEAR_TAIL, "clear_tail", "cudaMemset", "memset", NULL, NULL, NULL,
		 FNS("clear_tail", "main"), FILES(F_EXE, F_EXE));
	fmt_size(size, sizeof(size), 1536);
	snprintf(paths[P_CLEAR_TAIL].op, sizeof(paths[P_CLEAR_TAIL].op), "[memset %s]", size);
	path_def(P_ALLOC, "alloc", "cudaMalloc", "alloc", NULL, NULL, NULL,
		 FNS("scratch_cycle", "main"), FILES(F_EXE, F_EXE));
	fmt_size(size, sizeof(size), 64 * MiB);
	snprintf(paths[P_ALLOC].op, sizeof(paths[P_ALLOC].op), "[alloc device %s]", size);
	path_def(P_FREE, "free", "cudaFree", "free", NULL, NULL, NULL, FNS("scratch_cycle", "main"),
		 FILES(F_EXE, F_EXE));
	snprintf(paths[P_FREE].op, sizeof(paths[P_FREE].op), "[free device]");
	path_def(P_STREAM_SYNC, "stream_sync", "cudaStreamSynchronize", "sync", NULL, NULL, NULL,
		 FNS("wait_stream", "main"), FILES(F_EXE, F_EXE));
	snprintf(paths[P_STREAM_SYNC].op, sizeof(paths[P_STREAM_SYNC].op), "[sync]");
	path_def(P_DEVICE_SYNC, "device_sync", "cudaDeviceSynchronize", "sync", NULL, NULL, NULL,
		 FNS("wait_device", "main"), FILES(F_EXE, F_EXE));
	snprintf(paths[P_DEVICE_SYNC].op, sizeof(paths[P_DEVICE_SYNC].op), "[sync]");
	path_def(P_JIT, "jit", "cudaLaunchKernel", "kernel", "k_jit", "k_jit", NULL,
		 FNS("jit_launch", "jit_python_step", "jit_phase", "main"),
		 FILES(F_EXE, F_ANON, F_EXE, F_EXE));
	/* the walk ends at nofp_call: these two frames are the whole stack */
	path_def(P_NOFP, "nofp", "cudaLaunchKernel", "kernel", "k_nofp", "k_nofp", "unwind_table",
		 FNS("nofp_launch", "nofp_call"), FILES(F_EXE, F_EXE));
	/* the whole path; the stack keeps its first max_frames frames */
	path_def(P_DEEP, "deep", "cudaLaunchKernel", "kernel", "k_deep", "k_deep",
		 deep_levels + 3 > DEEP_MAX_FRAMES ? "depth" : NULL,
		 FNS("deep_launch", "recurse_deep", "deep_phase", "main"),
		 FILES(F_EXE, F_EXE, F_EXE, F_EXE));
	paths[P_DEEP].repeat_at = 1;
	paths[P_DEEP].repeat = deep_levels;
}

int main(int argc, char **argv)
{
	bool jit = false, nofp = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--jit"))
			jit = true;
		else if (!strcmp(argv[i], "--no-fp"))
			nofp = true;
		else if (!strcmp(argv[i], "--deep") && i + 1 < argc) {
			deep_levels = atoi(argv[++i]);
			if (deep_levels < 1 || deep_levels > 100000 ||
			    (deep_levels > 100 && deep_levels < 130))
				wl_die("--deep: 1 to 100 or 130 to 100000 levels");
		}
	}
	wl_init(argc, argv);
	resolve_files();
	define_paths();
	wl.ref_extra = write_paths;
	/* set-up before the handshake: untraced */
	host = malloc(4 * MiB);
	if (!host)
		wl_die("out of memory");
	memset(host, 1, 4 * MiB);
	if (cudaMalloc((void **)&dev, 8 * MiB) != cudaSuccess)
		wl_die("cudaMalloc of the work buffer failed");
	wl_begin();
	/* the device of the allocations, for a tracer attached after the thread's first call (no stack) */
	wl_set_device(0);

	alpha_phase(ALPHA_LAUNCHES);
	SP_KEEP();
	cur = &paths[P_GEMM];
	gemm_phase(dev, GEMM_LAUNCHES, count_launch);
	SP_KEEP();
	stage_phase();
	SP_KEEP();
	upload_weights(UPLOADS);
	SP_KEEP();
	read_flag();
	SP_KEEP();
	clear_buffer();
	SP_KEEP();
	clear_tail();
	SP_KEEP();
	scratch_cycle();
	SP_KEEP();
	wait_stream(STREAM_SYNCS);
	SP_KEEP();
	wait_device();
	SP_KEEP();
	if (jit)
		jit_phase(JIT_LAUNCHES);
	SP_KEEP();
	if (nofp)
		nofp_phase(NOFP_LAUNCHES);
	SP_KEEP();
	if (deep_levels)
		deep_phase();
	SP_KEEP();

	wl_end();
	return 0;
}
