/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nccl_ranks — a multi-process NCCL job with an exactly known schedule, for
 * the tracer's end-to-end tests (built against the simulated libnccl.so.2,
 * tests/simgpu/nccl/README.md; runs on the real libraries too).
 *
 * usage: nccl_ranks [--ranks R] [--iters I] [--late-rank K --late-ms D]
 *                   [--sizes-scale F] [--allreduce-only] [--ref-dir DIR] [--wait] [--hold]
 *   --ranks R        ranks, each its own process (default 4, 1..64)
 *   --iters I        iterations of the schedule (default 5)
 *   --late-rank K    rank K sleeps D ms (--late-ms, default 0) before each of
 *   --late-ms D      the five steps of every iteration: the straggler
 *                    (default: no late rank). It starts an iteration's steps
 *                    only once every other rank has queued all of its own and
 *                    is about to synchronise (shared memory), so that it is late
 *                    by D ms a step whatever else the machine runs
 *   --sizes-scale F  multiplies every message's element count (default 1)
 *   --allreduce-only each iteration is only: [late] ncclAllReduce, then the timed
 *                    cudaStreamSynchronize (a collective alone on its stream)
 *   --ref-dir DIR    each rank writes DIR/<its pid>.json (the launcher none)
 *   --wait, --hold   wl.h's handshakes, made by the launcher before it forks
 *                    (READY <pid> / wait for stdin to close after DONE)
 *   --gate FILE      each rank waits (off-CPU, polling) until FILE exists before its first
 *                    CUDA call: tracers attached by pid (RANK lines) see its whole life
 *   --stall-rank K   rank K sleeps D ms (--stall-ms, nanosleep) right before its N-th
 *   --stall-at N     collective (--stall-at, 1-based; AllReduce, AllGather, ReduceScatter,
 *   --stall-ms D     Broadcast count, Send/Recv do not): the others wait in that collective
 *
 * The launcher calls ncclGetUniqueId (no CUDA call: it creates the shared
 * memory rendezvous), prints "RANK <pid> <rank>" for each rank it forks (in
 * rank order), waits for them, prints DONE and exits 0, or 3 if a rank failed.
 * It makes no CUDA or other NCCL call of its own.
 *
 * Each rank r of R, with n(x) = max(1, floor(x * F)) elements:
 *   cudaSetDevice(r % cudaGetDeviceCount())   (cudaGetDeviceCount: untraced, not counted)
 *   cudaStreamCreate(&s)
 *   cudaMalloc(&send, SB), cudaMalloc(&recv, RB) with
 *     SB = max(4 n(256Ki), 4 n(64Ki), 4 R n(16Ki), n(256Ki), n(128Ki))
 *     RB = max(4 n(256Ki), 4 R n(64Ki), 4 n(16Ki), n(256Ki), n(128Ki))
 *   cudaMemcpy(send, host, SB, HtoD)          host: pageable, float32 r*1000 + i%997
 *   ncclCommInitRank(&comm, R, id, r)
 *   I times:
 *     [late] ncclAllReduce(send, recv, n(256Ki), ncclFloat32, ncclSum, comm, s)      1 MiB
 *            cudaLaunchKernel(rank_kernel, grid 4, block 64, smem 0, s)
 *     [late] ncclAllGather(send, recv, n(64Ki), ncclFloat32, comm, s)                  256 KiB per rank
 *            cudaLaunchKernel(rank_kernel, ... s)
 *     [late] ncclReduceScatter(send, recv, n(16Ki), ncclInt32, ncclSum, comm, s)       64 KiB per rank
 *            cudaLaunchKernel(rank_kernel, ... s)
 *     [late] ncclBroadcast(send, recv, n(256Ki), ncclUint8, root 0, comm, s)           256 KiB
 *            cudaLaunchKernel(rank_kernel, ... s)
 *     [late] ncclGroupStart()
 *            ncclSend(send, n(128Ki), ncclUint8, (r+1)%R, comm, s)                     128 KiB ring
 *            ncclRecv(recv, n(128Ki), ncclUint8, (r-1+R)%R, comm, s)
 *            ncclGroupEnd()
 *            cudaStreamSynchronize(s)          timed: blocked_ns_in_sync
 *   cudaMemcpy(host, recv, n(128Ki), DtoH)    checks the ring's data (not with --allreduce-only; when it fits the
 *                                              simulator's staging area; SIMGPU_NCCL_STAGING_MB)
 *   ncclCommDestroy(comm), cudaStreamDestroy(s), cudaFree(send), cudaFree(recv)
 * [late] = rank K sleeps D ms first (usleep, before the call; for the ring, before
 * ncclGroupStart); before its first step it waits (off-CPU, polling) for the other
 * ranks to reach the iteration's synchronisation. Per iteration: 5 collective steps,
 * 4 kernels, 1 synchronisation.
 *
 * Reference (DIR/<pid>.json): wl.h's reference of the rank's CUDA runtime calls
 * ("pid", "cuda_api", "transfers", "memsets", "memory", "devices", "untracked_frees",
 * "live_allocations", "kernels", "streams", "threads"), plus
 *   "rank", "nranks", "device", "comm": "0x..." (the ncclComm_t), "stream": "0x...",
 *   "iters", "late_rank" (-1: none), "late_ms", "sizes_scale",
 *   "nccl": {"<api>": {"calls", "errors", "host_ns" (time around the calls, its own clock),
 *            "host_in_ns" (the same clock as the simulated library read it inside the calls,
 *            simgpu_call_clock: its first to its last read in each call, summed; null on
 *            libraries without it), and for data calls "count" (elements, summed),
 *            "bytes" (nccl-tests' size: AllReduce/Broadcast/Send/Recv count x dtsize,
 *            AllGather sendcount x dtsize x R, ReduceScatter recvcount x dtsize x R),
 *            "dtype" ("float32", "int32", "uint8"), "sizes": {"<bytes per call>": calls}}}
 *            for ncclCommInitRank, the five data calls, ncclGroupStart/End, ncclCommDestroy,
 *   "blocked_ns_in_sync": CLOCK_MONOTONIC ns spent in cudaStreamSynchronize, summed,
 *   "blocked_ns_per_iter": [the same per iteration],
 *   "blocked_in_ns_per_iter": [the simulator's clock inside each of those calls, as host_in_ns],
 *            or null on libraries without it,
 *   "sync_t0_ns_per_iter": [CLOCK_MONOTONIC just before each cudaStreamSynchronize],
 *   "call_to_sync_ns_per_iter": [from just before the iteration's first NCCL call (after the
 *            late sleep) to just after its synchronisation returned],
 *   "model_end_ns_per_iter": [the modelled end of the iteration's last work item, the one
 *            its synchronisation waits for (CLOCK_MONOTONIC; the simulator's simgpu_op_last(),
 *            looked up with dlsym)], or null on libraries without it,
 *   "collective_clock_ns": [[t0, t1] for each successful collective (not Send/Recv) in call
 *            order: CLOCK_MONOTONIC just before the call and just after it returned; the k-th is
 *            the communicator's sequence number k on every rank],
 *
 * A tracer's probes on a call see it inside the rank's clock around it (t0 before the entry
 * probe, t1 after the return probe) and around the simulator's clock inside it (read after the
 * entry probe and before the return probe), whatever the machine does meanwhile: its time of
 * the calls lies between the "in" sums and host_ns, exactly. The program is linked with -z now:
 * a first call's lazy symbol binding, which would run between t0 and the probe, happens at
 * start-up instead.
 */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "wl.h"
#include <nccl.h>

#define KiB	  1024ull
#define MAX_RANKS 64
#define MAX_SIZES 8
#define MAX_NAPIS 16

__attribute__((noinline)) void rank_kernel(float *a, int n)
{
	for (int i = 0; i < n; i++)
		a[i] *= 2;
}

/* ---- options ---------------------------------------------------------------------------------- */
static int nranks = 4, iters = 5, late_rank = -1;
/* Shared by the ranks (mapped by the launcher): iterations each rank has queued and is about to
 * synchronise. */
static int *at_sync;
/* The simulator's introspection (simgpu.h), when the process has it. */
struct simgpu_times {
	uint64_t enq_ns, start_ns, end_ns;
};
static void *(*op_last)(void);
static int (*op_times)(const void *, struct simgpu_times *);
static void (*op_put)(void *);
struct simgpu_call_clock {
	uint64_t first_ns, last_ns;
};
static int (*call_clock)(struct simgpu_call_clock *);
static bool allreduce_only;
static double late_ms, scale = 1.0;
static const char *ref_dir, *gate;
static int stall_rank = -1, stall_at;
static double stall_ms;
/* this rank's collectives: the clock around each (collective_clock_ns) */
static unsigned long long (*coll_clock)[2];
static int ncoll, coll_cap;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Starts the simulator's clock of the thread's calls over (call_clock != NULL). */
static void in_start(void)
{
	struct simgpu_call_clock c;

	if (call_clock)
		call_clock(&c);
}

/* The simulator's clock inside the call just made: its first to its last read (0 without one). */
static unsigned long long in_ns(void)
{
	struct simgpu_call_clock c;

	if (!call_clock)
		return 0;
	if (call_clock(&c))
		wl_die("the simulator read no clock inside a call");
	return c.last_ns - c.first_ns;
}

/* ---- the rank's NCCL accounting --------------------------------------------------------------- */
struct nc_api {
	const char *name, *dtype;
	unsigned long calls, errors;
	unsigned long long count, bytes;
	unsigned long long host_ns; /* CLOCK_MONOTONIC time around the calls, summed */
	unsigned long long in_ns;   /* the same clock inside them (the simulator's reads), summed */
	unsigned long long size[MAX_SIZES];
	unsigned long size_calls[MAX_SIZES];
	int nsizes;
};
static struct nc_api napi[MAX_NAPIS];
static int nnapi;

static struct nc_api *nc_api(const char *name)
{
	for (int i = 0; i < nnapi; i++)
		if (!strcmp(napi[i].name, name))
			return &napi[i];
	if (nnapi == MAX_NAPIS)
		wl_die("too many NCCL APIs");
	napi[nnapi].name = name;
	return &napi[nnapi++];
}

/* One call: counted, and for a data call its elements and nccl-tests bytes. */
static ncclResult_t nc_count(const char *name, ncclResult_t e, unsigned long long ns,
			     unsigned long long in, const char *dtype, size_t count,
			     unsigned long long bytes)
{
	struct nc_api *a = nc_api(name);
	int k;

	a->calls++;
	a->host_ns += ns;
	a->in_ns += in;
	if (e != ncclSuccess) {
		a->errors++;
		fprintf(stderr, "workload: %s = %d (%s)\n", name, (int)e, ncclGetErrorString(e));
		return e;
	}
	if (!dtype)
		return e;
	a->dtype = dtype;
	a->count += count;
	a->bytes += bytes;
	for (k = 0; k < a->nsizes && a->size[k] != bytes; k++)
		;
	if (k == a->nsizes) {
		if (k == MAX_SIZES)
			wl_die("too many sizes for %s", name);
		a->size[a->nsizes++] = bytes;
	}
	a->size_calls[k]++;
	return e;
}

/* The call, timed by the rank's own clock around it and the simulator's inside it, then counted. */
static unsigned long long last_call_t0, last_call_t1;
#define NC_TIMED(fn, dtype, count, bytes, ...)                              \
	({                                                                  \
		unsigned long long t0_, t1_;                                \
                                                                            \
		in_start();                                                 \
		t0_ = now_ns();                                             \
		last_call_t0 = t0_;                                         \
		ncclResult_t e_ = fn(__VA_ARGS__);                          \
                                                                            \
		t1_ = now_ns();                                             \
		last_call_t1 = t1_;                                         \
		nc_count(#fn, e_, t1_ - t0_, in_ns(), dtype, count, bytes); \
	})
#define NC(fn, ...)			      NC_TIMED(fn, NULL, 0, 0, __VA_ARGS__)
#define NC_DATA(fn, dtype, count, bytes, ...) NC_TIMED(fn, dtype, count, bytes, __VA_ARGS__)

/* Before each collective: the stalled rank's sleep before its --stall-at-th. */
static void before_coll(int rank)
{
	if (rank == stall_rank && ncoll + 1 == stall_at)
		usleep((useconds_t)(stall_ms * 1000.0));
}

/* After it: its clock, when it succeeded (a failed one is no sequence number). */
static ncclResult_t coll_done(ncclResult_t e)
{
	if (e != ncclSuccess)
		return e;
	if (ncoll == coll_cap) {
		coll_cap = coll_cap ? 2 * coll_cap : 64;
		coll_clock = realloc(coll_clock, (size_t)coll_cap * sizeof(*coll_clock));
		if (!coll_clock)
			wl_die("out of memory");
	}
	coll_clock[ncoll][0] = last_call_t0;
	coll_clock[ncoll][1] = last_call_t1;
	ncoll++;
	return e;
}
#define NC_COLL(rank, fn, dtype, count, bytes, ...)                       \
	({                                                                \
		before_coll(rank);                                        \
		coll_done(NC_DATA(fn, dtype, count, bytes, __VA_ARGS__)); \
	})

/* ---- a rank ------------------------------------------------------------------------------------ */
static size_t scaled(unsigned long long base)
{
	double v = floor((double)base * scale);

	return v < 1 ? 1 : (size_t)v;
}

static size_t max_of(const size_t *v, int n)
{
	size_t m = 0;

	for (int i = 0; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

static void late(int rank)
{
	if (rank == late_rank && late_ms > 0)
		usleep((useconds_t)(late_ms * 1000.0));
}

/* The late rank, before an iteration's first step: the others have queued theirs. */
static void others_at_sync(int rank, int it)
{
	if (rank != late_rank)
		return;
	for (int r = 0; r < nranks; r++)
		while (r != rank && __atomic_load_n(&at_sync[r], __ATOMIC_ACQUIRE) <= it)
			usleep(200);
}

static void launch(cudaStream_t s, void *dev)
{
	float *p = dev;
	int n = 64;
	void *args[] = { &p, &n };

	if (WL(cudaLaunchKernel, (const void *)rank_kernel, (dim3){ 4, 1, 1 }, (dim3){ 64, 1, 1 },
	       args, 0, s) == cudaSuccess) {
		wl_launched("rank_kernel");
		wl_stream_work(s, false, WL_KERNEL, 0);
	}
}

static void fill(float *h, size_t bytes, int rank)
{
	for (size_t i = 0; i < bytes / 4; i++)
		h[i] = (float)(rank * 1000 + (int)(i % 997));
}

struct iter_ref {
	unsigned long long blocked, blocked_in, sync_t0, call_to_sync, model_end;
};

static void write_ref(int rank, int dev, ncclComm_t comm, cudaStream_t s,
		      unsigned long long blocked, const struct iter_ref *per_iter)
{
	char path[PATH_MAX], *buf = NULL, *end;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len), *f;

	if (!m)
		wl_die("open_memstream: %s", strerror(errno));
	wl_write_ref(m);
	fclose(m);
	end = strrchr(buf, '}'); /* wl.h's object, reopened for our fields */
	if (!end)
		wl_die("unexpected reference");
	*end = '\0';
	snprintf(path, sizeof(path), "%s/%d.json", ref_dir, (int)getpid());
	f = fopen(path, "w");
	if (!f)
		wl_die("cannot write %s: %s", path, strerror(errno));
	while (end > buf && (end[-1] == '\n' || end[-1] == ' '))
		*--end = '\0';
	fputs(buf, f);
	fprintf(f,
		",\n  \"rank\": %d,\n  \"nranks\": %d,\n  \"device\": %d,\n  \"comm\": \"0x%llx\",\n"
		"  \"stream\": \"0x%llx\",\n  \"iters\": %d,\n  \"late_rank\": %d,\n  \"late_ms\": %g,\n"
		"  \"sizes_scale\": %g,\n  \"nccl\": {",
		rank, nranks, dev, (unsigned long long)(uintptr_t)comm,
		(unsigned long long)(uintptr_t)s, iters, late_rank, late_ms, scale);
	for (int i = 0; i < nnapi; i++) {
		const struct nc_api *a = &napi[i];

		fprintf(f,
			"%s\n    \"%s\": {\"calls\": %lu, \"errors\": %lu, \"host_ns\": %llu, "
			"\"host_in_ns\": ",
			i ? "," : "", a->name, a->calls, a->errors, a->host_ns);
		fprintf(f, call_clock ? "%llu" : "null", a->in_ns);
		if (a->dtype) {
			fprintf(f,
				", \"count\": %llu, \"bytes\": %llu, \"dtype\": \"%s\", \"sizes\": {",
				a->count, a->bytes, a->dtype);
			for (int k = 0; k < a->nsizes; k++)
				fprintf(f, "%s\"%llu\": %lu", k ? ", " : "", a->size[k],
					a->size_calls[k]);
			fputc('}', f);
		}
		fputc('}', f);
	}
	fprintf(f, "\n  },\n  \"blocked_ns_in_sync\": %llu,\n  \"blocked_ns_per_iter\": [",
		blocked);
	for (int i = 0; i < iters; i++)
		fprintf(f, "%s%llu", i ? ", " : "", per_iter[i].blocked);
	fputs("],\n  \"blocked_in_ns_per_iter\": ", f);
	for (int i = 0; call_clock && i < iters; i++)
		fprintf(f, "%s%llu", i ? ", " : "[", per_iter[i].blocked_in);
	fputs(!call_clock ? "null" : iters ? "]" : "[]", f);
	fputs(",\n  \"sync_t0_ns_per_iter\": [", f);
	for (int i = 0; i < iters; i++)
		fprintf(f, "%s%llu", i ? ", " : "", per_iter[i].sync_t0);
	fputs("],\n  \"call_to_sync_ns_per_iter\": [", f);
	for (int i = 0; i < iters; i++)
		fprintf(f, "%s%llu", i ? ", " : "", per_iter[i].call_to_sync);
	if (op_last) {
		fputs("],\n  \"model_end_ns_per_iter\": [", f);
		for (int i = 0; i < iters; i++)
			fprintf(f, "%s%llu", i ? ", " : "", per_iter[i].model_end);
		fputc(']', f);
	} else {
		fputs("],\n  \"model_end_ns_per_iter\": null", f);
	}
	fputs(",\n  \"collective_clock_ns\": [", f);
	for (int i = 0; i < ncoll; i++)
		fprintf(f, "%s[%llu, %llu]", i ? ", " : "", coll_clock[i][0], coll_clock[i][1]);
	fputs("]\n}\n", f);
	if (fclose(f))
		wl_die("cannot write %s: %s", path, strerror(errno));
	free(buf);
}

static int run_rank(int rank, const ncclUniqueId *id)
{
	const int R = nranks, next = (rank + 1) % R, prev = (rank - 1 + R) % R;
	const size_t ar_n = scaled(256 * KiB), ag_n = scaled(64 * KiB), rs_n = scaled(16 * KiB),
		     bc_n = scaled(256 * KiB), p2p_n = scaled(128 * KiB);
	const size_t sb_v[] = { 4 * ar_n, 4 * ag_n, 4 * (size_t)R * rs_n, bc_n, p2p_n };
	const size_t rb_v[] = { 4 * ar_n, 4 * (size_t)R * ag_n, 4 * rs_n, bc_n, p2p_n };
	const size_t sb = max_of(sb_v, 5), rb = max_of(rb_v, 5);
	unsigned long long blocked = 0;
	struct iter_ref *per_iter = calloc((size_t)iters, sizeof(*per_iter));
	float *host = calloc(1, (sb > rb ? sb : rb) + 4), *want = calloc(1, sb + 4);
	ncclComm_t comm = NULL;
	cudaStream_t s = NULL;
	void *send = NULL, *recv = NULL;
	int ndev = 1, dev, failed = 0;
	const char *st = getenv("SIMGPU_NCCL_STAGING_MB");
	double staging_mb = st && *st ? atof(st) : 64;

	if (!host || !want || !per_iter)
		wl_die("out of memory");
	while (gate && access(gate, F_OK))
		usleep(1000);
	if (cudaGetDeviceCount(&ndev) != cudaSuccess ||
	    ndev < 1) /* untraced API: not in the reference */
		ndev = 1;
	dev = rank % ndev;
	wl_set_device(dev);
	WL(cudaStreamCreate, &s);
	if (WL(cudaMalloc, &send, sb) == cudaSuccess)
		wl_allocated(WL_DEVICE, send, sb);
	if (WL(cudaMalloc, &recv, rb) == cudaSuccess)
		wl_allocated(WL_DEVICE, recv, rb);
	if (!s || !send || !recv)
		return 1;
	fill(host, sb, rank);
	if (WL(cudaMemcpy, send, host, sb, cudaMemcpyHostToDevice) == cudaSuccess) {
		wl_transfer("HtoD", "pageable", true, sb);
		wl_stream_work(NULL, false, WL_COPY, sb);
	}
	if (NC(ncclCommInitRank, &comm, R, *id, rank) != ncclSuccess)
		return 1;

	for (int it = 0; it < iters; it++) {
		unsigned long long t0, first_t0;
		void *op;

		others_at_sync(rank, it);
		if (allreduce_only) { /* one collective alone between two synchronisations */
			late(rank);
			failed |= NC_COLL(rank, ncclAllReduce, "float32", ar_n, 4ull * ar_n, send,
					  recv, ar_n, ncclFloat32, ncclSum, comm, s) != ncclSuccess;
			first_t0 = last_call_t0;
			goto sync;
		}
		late(rank);
		failed |= NC_COLL(rank, ncclAllReduce, "float32", ar_n, 4ull * ar_n, send, recv,
				  ar_n, ncclFloat32, ncclSum, comm, s) != ncclSuccess;
		first_t0 = last_call_t0;
		launch(s, recv);
		late(rank);
		failed |= NC_COLL(rank, ncclAllGather, "float32", ag_n, 4ull * ag_n * (unsigned)R,
				  send, recv, ag_n, ncclFloat32, comm, s) != ncclSuccess;
		launch(s, recv);
		late(rank);
		failed |= NC_COLL(rank, ncclReduceScatter, "int32", rs_n, 4ull * rs_n * (unsigned)R,
				  send, recv, rs_n, ncclInt32, ncclSum, comm, s) != ncclSuccess;
		launch(s, recv);
		late(rank);
		failed |= NC_COLL(rank, ncclBroadcast, "uint8", bc_n, bc_n, send, recv, bc_n,
				  ncclUint8, 0, comm, s) != ncclSuccess;
		launch(s, recv);
		late(rank);
		failed |= NC(ncclGroupStart) != ncclSuccess;
		failed |= NC_DATA(ncclSend, "uint8", p2p_n, p2p_n, send, p2p_n, ncclUint8, next,
				  comm, s) != ncclSuccess;
		failed |= NC_DATA(ncclRecv, "uint8", p2p_n, p2p_n, recv, p2p_n, ncclUint8, prev,
				  comm, s) != ncclSuccess;
		failed |= NC(ncclGroupEnd) != ncclSuccess;
sync:
		/* what the synchronisation waits for: the iteration's last item, this thread's */
		op = op_last ? op_last() : NULL;
		in_start();
		t0 = now_ns();
		/* after t0: the late rank's steps all come after this synchronisation started */
		__atomic_store_n(&at_sync[rank], it + 1, __ATOMIC_RELEASE);
		if (WL(cudaStreamSynchronize, s) != cudaSuccess)
			failed = 1;
		per_iter[it].sync_t0 = t0;
		per_iter[it].blocked = now_ns() - t0;
		per_iter[it].blocked_in = in_ns();
		per_iter[it].call_to_sync = t0 + per_iter[it].blocked - first_t0;
		blocked += per_iter[it].blocked;
		if (op) {
			struct simgpu_times t;

			if (op_times(op, &t))
				failed = 1; /* the synchronisation returned before it ended */
			per_iter[it].model_end = t.end_ns;
			op_put(op);
		} else if (op_last) {
			failed = 1;
		}
		wl_stream_work(s, false, WL_SYNC, 0);
	}

	/* the ring's data: rank prev's send buffer */
	if (WL(cudaMemcpy, host, recv, p2p_n, cudaMemcpyDeviceToHost) == cudaSuccess) {
		wl_transfer("DtoH", "pageable", true, p2p_n);
		wl_stream_work(NULL, false, WL_COPY, p2p_n);
		fill(want, sb, prev);
		if (!allreduce_only && iters && (double)p2p_n <= staging_mb * 1048576.0 &&
		    memcmp(host, want, p2p_n)) {
			fprintf(stderr,
				"workload: rank %d: the ring's data from rank %d is wrong\n", rank,
				prev);
			failed = 1;
		}
	} else {
		failed = 1;
	}
	{
		ncclResult_t ae = ncclSuccess;

		/* untraced and uncounted: the job's health */
		if (ncclCommGetAsyncError(comm, &ae) != ncclSuccess || ae != ncclSuccess) {
			fprintf(stderr, "workload: rank %d: asynchronous NCCL error %d\n", rank,
				(int)ae);
			failed = 1;
		}
	}
	if (NC(ncclCommDestroy, comm) != ncclSuccess)
		failed = 1;
	WL(cudaStreamDestroy, s);
	if (WL(cudaFree, send) == cudaSuccess)
		wl_freed(send);
	if (WL(cudaFree, recv) == cudaSuccess)
		wl_freed(recv);
	wl.counting = false;
	if (ref_dir)
		write_ref(rank, dev, comm, s, blocked, per_iter);
	free(host);
	free(want);
	free(per_iter);
	return failed;
}

int main(int argc, char **argv)
{
	ncclUniqueId id;
	pid_t pids[MAX_RANKS];
	int failed = 0;
	ncclResult_t e;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
			nranks = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--late-rank") && i + 1 < argc)
			late_rank = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--late-ms") && i + 1 < argc)
			late_ms = atof(argv[++i]);
		else if (!strcmp(argv[i], "--sizes-scale") && i + 1 < argc)
			scale = atof(argv[++i]);
		else if (!strcmp(argv[i], "--ref-dir") && i + 1 < argc)
			ref_dir = argv[++i];
		else if (!strcmp(argv[i], "--allreduce-only"))
			allreduce_only = true;
		else if (!strcmp(argv[i], "--gate") && i + 1 < argc)
			gate = argv[++i];
		else if (!strcmp(argv[i], "--stall-rank") && i + 1 < argc)
			stall_rank = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--stall-at") && i + 1 < argc)
			stall_at = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--stall-ms") && i + 1 < argc)
			stall_ms = atof(argv[++i]);
		else if (strcmp(argv[i], "--wait") && strcmp(argv[i], "--hold"))
			wl_die("usage: nccl_ranks [--ranks R] [--iters I] [--late-rank K --late-ms D] "
			       "[--sizes-scale F] [--allreduce-only] [--ref-dir DIR] [--wait] [--hold] [--gate FILE] "
			       "[--stall-rank K --stall-at N --stall-ms D]");
	}
	if (stall_rank >= nranks || (stall_rank >= 0 && (stall_at < 1 || !(stall_ms > 0))))
		wl_die("bad --stall-rank, --stall-at or --stall-ms");
	if (nranks < 1 || nranks > MAX_RANKS)
		wl_die("--ranks must be 1..%d", MAX_RANKS);
	if (iters < 0 || !(scale > 0) || late_ms < 0 || late_rank >= nranks)
		wl_die("bad --iters, --sizes-scale, --late-ms or --late-rank");
	wl_init(argc, argv); /* --wait, --hold */
	at_sync = mmap(NULL, MAX_RANKS * sizeof(*at_sync), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (at_sync == MAP_FAILED)
		wl_die("mmap: %s", strerror(errno));
	/* the simulator's introspection: libsimgpu.so, loaded with the simulated libcudart */
	op_last = (void *(*)(void))dlsym(RTLD_DEFAULT, "simgpu_op_last");
	op_times = (int (*)(const void *, struct simgpu_times *))dlsym(RTLD_DEFAULT,
								       "simgpu_op_times");
	op_put = (void (*)(void *))dlsym(RTLD_DEFAULT, "simgpu_op_put");
	if (!op_times || !op_put)
		op_last = NULL;
	call_clock = (int (*)(struct simgpu_call_clock *))dlsym(RTLD_DEFAULT, "simgpu_call_clock");

	wl_begin(); /* no CUDA call before the forks: counting starts empty in every rank */
	e = ncclGetUniqueId(&id);
	if (e != ncclSuccess)
		wl_die("ncclGetUniqueId: %d (%s)", (int)e, ncclGetErrorString(e));
	for (int r = 0; r < nranks; r++) {
		fflush(stdout); /* nothing buffered may be printed twice */
		fflush(stderr);
		pids[r] = fork();
		if (pids[r] < 0)
			wl_die("fork: %s", strerror(errno));
		if (pids[r] == 0)
			exit(run_rank(r, &id));
		printf("RANK %d %d\n", (int)pids[r], r);
	}
	fflush(stdout);
	for (int r = 0; r < nranks; r++) {
		int status;

		if (waitpid(pids[r], &status, 0) < 0)
			wl_die("waitpid %d: %s", (int)pids[r], strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "workload: rank %d (pid %d) failed: status 0x%x\n", r,
				(int)pids[r], status);
			failed = 1;
		}
	}
	if (failed)
		exit(3);
	wl_end();
	return 0;
}
