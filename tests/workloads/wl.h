/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * wl.h — the workloads' own accounting: every CUDA call a workload makes goes
 * through these helpers, which count it exactly as the tracer should, and at
 * the end the workload writes that count as its reference (JSON). The e2e
 * tests require gpuprobed's report to equal it.
 *
 * Common options (wl_init):
 *   --ref FILE   write the reference there at the end
 *   --wait       print "READY <pid>" and wait for a line on stdin before the
 *                traced phase (the test attaches in between)
 *   --pre N      N allocations + copies before READY: made before attach,
 *                they must NOT appear in the report
 *   --hold       after the traced phase, wait for stdin to close before
 *                exiting (tests of --duration and Ctrl-C)
 * A workload that loads the runtime itself (dlopen) defines WL_RUNTIME_DLOPEN
 * before including this: then nothing here calls the runtime (no link-time
 * reference to it), wl_set_device() is not provided and --pre is refused.
 * A workload sets wl.ref_extra to add members of its own to the reference
 * (the stack workloads: the call paths they took).
 * Header-only so each workload is one file (the accounting is per translation
 * unit: a workload's other sources report to its main file instead of
 * including this); not a library of the product.
 */
#ifndef WL_H
#define WL_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#define WL_MAX_APIS    96
#define WL_MAX_CODES   8
#define WL_MAX_XFER    32
#define WL_MAX_KERNELS 64
#define WL_MAX_ALLOCS  65536
#define WL_MAX_THREADS 256
#define WL_MAX_DEVICES 8
#define WL_MAX_STREAMS 128

struct wl_api {
	const char *name;
	unsigned long calls, errors;
	int codes[WL_MAX_CODES];
	unsigned long code_counts[WL_MAX_CODES];
};

struct wl_xfer {
	const char *direction, *host_memory;
	bool sync;
	unsigned long calls;
	unsigned long long bytes, min_bytes, max_bytes;
};

struct wl_alloc {
	uintptr_t ptr;
	unsigned long long bytes;
	int kind; /* 0 device, 1 managed, 2 pinned host */
	int device;
	bool live;
};

struct wl_kernel {
	char name[256];
	unsigned long launches;
};

struct wl_thread {
	long tid;
	unsigned long calls;
};

/* Work enqueued on one stream, as the report's streams[] counts it. */
struct wl_stream {
	char key[40]; /* "legacy", "ptds:<tid>" or the handle "0x..." */
	unsigned long kernels, graph_launches, copies, memsets, sync_calls;
	unsigned long long copy_bytes, memset_bytes;
};

static struct {
	pthread_mutex_t lock;
	const char *ref_path;
	bool wait, hold;
	int pre;
	struct wl_api apis[WL_MAX_APIS];
	int napis;
	struct wl_xfer xfers[WL_MAX_XFER];
	int nxfers;
	unsigned long memset_calls;
	unsigned long long memset_bytes;
	struct wl_alloc allocs[WL_MAX_ALLOCS];
	int nallocs;
	unsigned long long live[3], peak[3], alloc_bytes[3], freed_bytes[3];
	unsigned long alloc_calls[3], free_calls[3];
	unsigned long untracked_frees; /* frees of allocations made before the traced phase */
	/* device + managed memory per device (peaks are exact only when one thread allocates) */
	unsigned long long dev_alloc_bytes[WL_MAX_DEVICES], dev_freed_bytes[WL_MAX_DEVICES];
	unsigned long long dev_live[WL_MAX_DEVICES], dev_peak[WL_MAX_DEVICES];
	struct wl_kernel kernels[WL_MAX_KERNELS];
	int nkernels;
	struct wl_thread threads[WL_MAX_THREADS];
	int nthreads;
	struct wl_stream streams[WL_MAX_STREAMS];
	int nstreams;
	bool counting;
	/* More members of the reference object (workload-specific), each written with its leading comma. */
	void (*ref_extra)(FILE *f);
} wl = { .lock = PTHREAD_MUTEX_INITIALIZER };

static __thread int wl_device; /* this thread's current device, as cudaSetDevice left it */

static inline void wl_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("workload: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(3);
}

/* Counts one call of api that returned err (only in the traced phase). */
static inline cudaError_t wl_count(const char *api, cudaError_t err)
{
	struct wl_api *a = NULL;
	long tid = syscall(SYS_gettid);

	if (!wl.counting)
		return err;
	pthread_mutex_lock(&wl.lock);
	for (int i = 0; i < wl.napis; i++)
		if (!strcmp(wl.apis[i].name, api))
			a = &wl.apis[i];
	if (!a) {
		if (wl.napis == WL_MAX_APIS)
			wl_die("too many APIs");
		a = &wl.apis[wl.napis++];
		a->name = api;
	}
	a->calls++;
	if (err != cudaSuccess) {
		int k;

		a->errors++;
		for (k = 0; k < WL_MAX_CODES && a->code_counts[k] && a->codes[k] != (int)err; k++)
			;
		if (k == WL_MAX_CODES)
			wl_die("too many error codes for %s", api);
		a->codes[k] = (int)err;
		a->code_counts[k]++;
	}
	{
		int t;

		for (t = 0; t < wl.nthreads && wl.threads[t].tid != tid; t++)
			;
		if (t == wl.nthreads) {
			if (t == WL_MAX_THREADS)
				wl_die("too many threads");
			wl.threads[wl.nthreads++].tid = tid;
		}
		wl.threads[t].calls++;
	}
	pthread_mutex_unlock(&wl.lock);
	return err;
}

/* WL(cudaMalloc, &p, n): make the call and count it under its own name. */
#define WL(fn, ...) wl_count(#fn, fn(__VA_ARGS__))

static inline void wl_transfer(const char *direction, const char *host_memory, bool sync,
			       unsigned long long bytes)
{
	struct wl_xfer *x = NULL;

	if (!wl.counting)
		return;
	pthread_mutex_lock(&wl.lock);
	for (int i = 0; i < wl.nxfers; i++)
		if (!strcmp(wl.xfers[i].direction, direction) &&
		    !strcmp(wl.xfers[i].host_memory, host_memory) && wl.xfers[i].sync == sync)
			x = &wl.xfers[i];
	if (!x) {
		if (wl.nxfers == WL_MAX_XFER)
			wl_die("too many transfer kinds");
		x = &wl.xfers[wl.nxfers++];
		x->direction = direction;
		x->host_memory = host_memory;
		x->sync = sync;
		x->min_bytes = bytes;
	}
	x->calls++;
	x->bytes += bytes;
	if (bytes < x->min_bytes)
		x->min_bytes = bytes;
	if (bytes > x->max_bytes)
		x->max_bytes = bytes;
	pthread_mutex_unlock(&wl.lock);
}

enum wl_work { WL_KERNEL, WL_GRAPH, WL_COPY, WL_MEMSET, WL_SYNC };

/*
 * Work enqueued on stream s by a call (ptsz: a _ptsz/_ptds variant, whose
 * handle 0 is the calling thread's default stream); synchronous copies and
 * memsets count on the default stream of their variant.
 */
static inline void wl_stream_work(cudaStream_t s, bool ptsz, enum wl_work what,
				  unsigned long long bytes)
{
	struct wl_stream *st = NULL;
	char key[40];

	if (!wl.counting)
		return;
	if (!s && ptsz)
		snprintf(key, sizeof(key), "ptds:%ld", (long)syscall(SYS_gettid));
	else if (!s)
		snprintf(key, sizeof(key), "legacy");
	else
		snprintf(key, sizeof(key), "0x%llx", (unsigned long long)(uintptr_t)s);
	pthread_mutex_lock(&wl.lock);
	for (int i = 0; i < wl.nstreams; i++)
		if (!strcmp(wl.streams[i].key, key))
			st = &wl.streams[i];
	if (!st) {
		if (wl.nstreams == WL_MAX_STREAMS)
			wl_die("too many streams");
		st = &wl.streams[wl.nstreams++];
		snprintf(st->key, sizeof(st->key), "%s", key);
	}
	switch (what) {
	case WL_KERNEL:
		st->kernels++;
		break;
	case WL_GRAPH:
		st->graph_launches++;
		break;
	case WL_COPY:
		st->copies++;
		st->copy_bytes += bytes;
		break;
	case WL_MEMSET:
		st->memsets++;
		st->memset_bytes += bytes;
		break;
	case WL_SYNC:
		st->sync_calls++;
		break;
	}
	pthread_mutex_unlock(&wl.lock);
}

static inline void wl_memset(unsigned long long bytes)
{
	if (!wl.counting)
		return;
	pthread_mutex_lock(&wl.lock);
	wl.memset_calls++;
	wl.memset_bytes += bytes;
	pthread_mutex_unlock(&wl.lock);
}

enum { WL_DEVICE = 0, WL_MANAGED = 1, WL_PINNED = 2 };

static inline void wl_allocated(int kind, void *ptr, unsigned long long bytes)
{
	struct wl_alloc *a;

	if (!wl.counting)
		return;
	pthread_mutex_lock(&wl.lock);
	if (wl.nallocs == WL_MAX_ALLOCS)
		wl_die("too many allocations");
	a = &wl.allocs[wl.nallocs++];
	a->ptr = (uintptr_t)ptr;
	a->bytes = bytes;
	a->kind = kind;
	a->device = wl_device;
	a->live = true;
	wl.alloc_calls[kind]++;
	wl.alloc_bytes[kind] += bytes;
	wl.live[kind] += bytes;
	if (wl.live[kind] > wl.peak[kind])
		wl.peak[kind] = wl.live[kind];
	if (kind != WL_PINNED) {
		int d = wl_device;

		if (d < 0 || d >= WL_MAX_DEVICES)
			wl_die("device %d out of range", d);
		wl.dev_alloc_bytes[d] += bytes;
		wl.dev_live[d] += bytes;
		if (wl.dev_live[d] > wl.dev_peak[d])
			wl.dev_peak[d] = wl.dev_live[d];
	}
	pthread_mutex_unlock(&wl.lock);
}

static inline void wl_freed(void *ptr)
{
	if (!wl.counting)
		return;
	pthread_mutex_lock(&wl.lock);
	for (int i = wl.nallocs - 1; i >= 0; i--) {
		struct wl_alloc *a = &wl.allocs[i];

		if (a->live && a->ptr == (uintptr_t)ptr) {
			a->live = false;
			wl.free_calls[a->kind]++;
			wl.freed_bytes[a->kind] += a->bytes;
			wl.live[a->kind] -= a->bytes;
			if (a->kind != WL_PINNED) {
				wl.dev_freed_bytes[a->device] += a->bytes;
				wl.dev_live[a->device] -= a->bytes;
			}
			break;
		}
	}
	pthread_mutex_unlock(&wl.lock);
}

/* A successful free of memory allocated before the traced phase. */
static inline void wl_freed_untracked(void)
{
	pthread_mutex_lock(&wl.lock);
	wl.untracked_frees++;
	pthread_mutex_unlock(&wl.lock);
}

static inline void wl_launched(const char *kernel_name)
{
	struct wl_kernel *k = NULL;

	if (!wl.counting)
		return;
	pthread_mutex_lock(&wl.lock);
	for (int i = 0; i < wl.nkernels; i++)
		if (!strcmp(wl.kernels[i].name, kernel_name))
			k = &wl.kernels[i];
	if (!k) {
		if (wl.nkernels == WL_MAX_KERNELS)
			wl_die("too many kernels");
		k = &wl.kernels[wl.nkernels++];
		snprintf(k->name, sizeof(k->name), "%s", kernel_name);
	}
	k->launches++;
	pthread_mutex_unlock(&wl.lock);
}

#ifndef WL_RUNTIME_DLOPEN
static inline void wl_set_device(int device)
{
	if (WL(cudaSetDevice, device) == cudaSuccess)
		wl_device = device;
}
#endif

static inline void wl_init(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ref") && i + 1 < argc)
			wl.ref_path = argv[++i];
		else if (!strcmp(argv[i], "--wait"))
			wl.wait = true;
		else if (!strcmp(argv[i], "--hold"))
			wl.hold = true;
		else if (!strcmp(argv[i], "--pre") && i + 1 < argc)
			wl.pre = atoi(argv[++i]);
	}
}

/* Untraced work before attach (--pre): real calls the report must not show. */
static inline void wl_pre_phase(void)
{
#ifdef WL_RUNTIME_DLOPEN
	if (wl.pre)
		wl_die("--pre needs the runtime linked in, this workload loads it later");
#else
	for (int i = 0; i < wl.pre; i++) {
		void *d = NULL;
		char host[256];

		memset(host, i, sizeof(host));
		if (cudaMalloc(&d, sizeof(host)) == cudaSuccess) {
			cudaMemcpy(d, host, sizeof(host), cudaMemcpyHostToDevice);
			cudaFree(d);
		}
	}
#endif
}

/* Handshake, then counting starts: everything after this is the traced phase. */
static inline void wl_begin(void)
{
	wl_pre_phase();
	if (wl.wait) {
		char line[64];

		printf("READY %d\n", (int)getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			wl_die("stdin closed before the go line");
	}
	wl.counting = true;
}

/* s as a JSON string (quotes and backslashes escaped: the references' names and paths), NULL as null. */
static inline void wl_json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else
			fputc(*s, f);
	fputc('"', f);
}

static inline void wl_write_ref(FILE *f)
{
	static const char *const kinds[3] = { "device", "managed", "pinned_host" };
	int n = 0;

	fprintf(f, "{\n  \"pid\": %d,\n  \"cuda_api\": {", (int)getpid());
	for (int i = 0; i < wl.napis; i++) {
		const struct wl_api *a = &wl.apis[i];

		fprintf(f, "%s\n    \"%s\": {\"calls\": %lu, \"errors\": %lu, \"codes\": {",
			i ? "," : "", a->name, a->calls, a->errors);
		for (int k = 0; k < WL_MAX_CODES && a->code_counts[k]; k++)
			fprintf(f, "%s\"%d\": %lu", k ? ", " : "", a->codes[k], a->code_counts[k]);
		fputs("}}", f);
	}
	fputs("\n  },\n  \"transfers\": [", f);
	for (int i = 0; i < wl.nxfers; i++) {
		const struct wl_xfer *x = &wl.xfers[i];

		fprintf(f,
			"%s\n    {\"direction\": \"%s\", \"host_memory\": \"%s\", \"sync\": %s, "
			"\"calls\": %lu, \"bytes\": %llu, \"min_bytes\": %llu, \"max_bytes\": %llu}",
			i ? "," : "", x->direction, x->host_memory, x->sync ? "true" : "false",
			x->calls, x->bytes, x->min_bytes, x->max_bytes);
	}
	fprintf(f, "\n  ],\n  \"memsets\": {\"calls\": %lu, \"bytes\": %llu},\n  \"memory\": {",
		wl.memset_calls, wl.memset_bytes);
	for (int k = 0; k < 3; k++)
		fprintf(f,
			"%s\n    \"%s\": {\"alloc_calls\": %lu, \"free_calls\": %lu, \"alloc_bytes\": %llu, "
			"\"freed_bytes\": %llu, \"live_bytes\": %llu, \"peak_bytes\": %llu}",
			k ? "," : "", kinds[k], wl.alloc_calls[k], wl.free_calls[k],
			wl.alloc_bytes[k], wl.freed_bytes[k], wl.live[k], wl.peak[k]);
	fputs("\n  },\n  \"devices\": {", f);
	for (int d = 0, first = 1; d < WL_MAX_DEVICES; d++) {
		if (!wl.dev_alloc_bytes[d])
			continue;
		fprintf(f,
			"%s\n    \"%d\": {\"alloc_bytes\": %llu, \"freed_bytes\": %llu, \"live_bytes\": %llu, "
			"\"peak_bytes\": %llu}",
			first ? "" : ",", d, wl.dev_alloc_bytes[d], wl.dev_freed_bytes[d],
			wl.dev_live[d], wl.dev_peak[d]);
		first = 0;
	}
	fprintf(f, "\n  },\n  \"untracked_frees\": %lu,\n  \"live_allocations\": [",
		wl.untracked_frees);
	for (int i = 0; i < wl.nallocs; i++) {
		const struct wl_alloc *a = &wl.allocs[i];

		if (!a->live)
			continue;
		fprintf(f,
			"%s\n    {\"ptr\": \"0x%llx\", \"bytes\": %llu, \"kind\": \"%s\", \"device\": %d}",
			n++ ? "," : "", (unsigned long long)a->ptr, a->bytes, kinds[a->kind],
			a->device);
	}
	fputs("\n  ],\n  \"kernels\": {", f);
	for (int i = 0; i < wl.nkernels; i++)
		fprintf(f, "%s\n    \"%s\": %lu", i ? "," : "", wl.kernels[i].name,
			wl.kernels[i].launches);
	fputs("\n  },\n  \"streams\": {", f);
	for (int i = 0; i < wl.nstreams; i++) {
		const struct wl_stream *s = &wl.streams[i];

		fprintf(f,
			"%s\n    \"%s\": {\"kernels\": %lu, \"graph_launches\": %lu, \"copies\": %lu, "
			"\"copy_bytes\": %llu, \"memsets\": %lu, \"memset_bytes\": %llu, \"sync_calls\": %lu}",
			i ? "," : "", s->key, s->kernels, s->graph_launches, s->copies,
			s->copy_bytes, s->memsets, s->memset_bytes, s->sync_calls);
	}
	fputs("\n  },\n  \"threads\": {", f);
	for (int i = 0; i < wl.nthreads; i++)
		fprintf(f, "%s\n    \"%ld\": %lu", i ? "," : "", wl.threads[i].tid,
			wl.threads[i].calls);
	fputs("\n  }", f);
	if (wl.ref_extra)
		wl.ref_extra(f);
	fputs("\n}\n", f);
}

/* The reference so far, into the file at path (dies if it cannot). */
static inline void wl_write_ref_file(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		wl_die("cannot write %s: %s", path, strerror(errno));
	wl_write_ref(f);
	if (fclose(f))
		wl_die("cannot write %s: %s", path, strerror(errno));
}

/* End of the traced phase: write the reference, then hold if asked. */
static inline void wl_end(void)
{
	wl.counting = false;
	if (wl.ref_path)
		wl_write_ref_file(wl.ref_path);
	printf("DONE\n");
	fflush(stdout);
	if (wl.hold) {
		char line[64];

		while (fgets(line, sizeof(line), stdin))
			;
	}
}

#endif
