/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_simgpu_nccl.c — the simulated NCCL (build/simgpu/libnccl.so.2), with
 * ranks in separate processes as real jobs run them: the parent makes the
 * unique id (no GPU model in the parent) and forks 4 ranks, each on device
 * rank % 2 (SIMGPU_DEVICES=2); a rank reports failure through its exit
 * status and numbers through a shared mapping.
 *
 *   exports     every GP_FAM_NCCL row of api.h (and the rest of the API) is
 *               exported, starts with push %rbp, and the library imports no
 *               nccl* or cuda* function (no export calls another)
 *   data        every collective's result, all reduction operations on
 *               several types (float16 and bfloat16 included), in-place
 *               forms, a group of collectives, a ring of send/recv in a group
 *   timing      a 4-rank AllReduce and AllGather take latency + bytes x
 *               factor / bandwidth (cudaEvents on the stream, within 1 %),
 *               starting at the modelled end of the stream's previous work
 *               and followed by work that starts at their modelled end
 *   straggler   a rank that arrives D ms late makes the others' AllReduce
 *               end D ms later in the model (their synchronisation returns
 *               after it), not its own: every rank ends at the latest arrival
 *               + the ring model (the items' modelled times, simgpu.h)
 *   prefault    the staging areas are faulted in at init: a 4 MiB AllReduce,
 *               the first to use them past their first page, takes no page
 *               faults (the process's minor-fault counter)
 *   split       colours and keys give the right sizes and ranks; NOCOLOR
 *   single      ncclCommInitAll in one process with a grouped AllReduce
 *   errors      argument errors, error strings, the last error, a group end
 *               without a start, configs
 *   dead rank   a rank that exits makes the others' collectives fail with
 *               ncclRemoteError instead of hanging
 *   log         SIMGPU_LOG=1 prints each NCCL call
 *   cleanup     no shared-memory segment survives a job
 *   compat      nccl/compat/nccl_compat.sh: a program built with the real
 *               toolkit's nccl.h and libraries runs on the simulator, and the
 *               reverse (SKIP without the toolkit's NCCL)
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simgpu_test.h"
#include "gpuprobed/api.h"
#include "nccl.h"

#define NR 4

static ncclUniqueId g_id;
static int g_rank = -1;
static double (*results)[16]; /* [rank][i], shared with the ranks */

#define RCHECK(cond)                                                                        \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "rank %d: %s:%d: %s\n", g_rank, __FILE__, __LINE__, \
				#cond);                                                     \
			return 1;                                                           \
		}                                                                           \
	} while (0)

#define NCK(call)                                                                               \
	do {                                                                                    \
		ncclResult_t nck_e_ = (call);                                                   \
		if (nck_e_ != ncclSuccess) {                                                    \
			fprintf(stderr, "rank %d: %s:%d: %s = %d (%s; %s)\n", g_rank, __FILE__, \
				__LINE__, #call, (int)nck_e_, ncclGetErrorString(nck_e_),       \
				ncclGetLastError(NULL));                                        \
			return 1;                                                               \
		}                                                                               \
	} while (0)

#define NCK_ERR(call, want)                                                                     \
	do {                                                                                    \
		ncclResult_t nck_e_ = (call);                                                   \
		if (nck_e_ != (want)) {                                                         \
			fprintf(stderr, "%s:%d: %s = %d, want %d\n", __FILE__, __LINE__, #call, \
				(int)nck_e_, (int)(want));                                      \
			return 1;                                                               \
		}                                                                               \
	} while (0)

#define CCK(call)                                                                                \
	do {                                                                                     \
		cudaError_t cck_e_ = (call);                                                     \
		if (cck_e_ != cudaSuccess) {                                                     \
			fprintf(stderr, "rank %d: %s:%d: %s = %d\n", g_rank, __FILE__, __LINE__, \
				#call, (int)cck_e_);                                             \
			return 1;                                                                \
		}                                                                                \
	} while (0)

/*
 * Segments in /dev/shm named /simgpu-nccl-<creator pid>-...: those there
 * before a job are not its own (a process that died long ago may have had
 * one of its ranks' pids: pids are reused), so a job is checked against what
 * it found when it began.
 */
struct seg_names {
	char (*v)[NAME_MAX + 1];
	size_t n;
};

static struct seg_names segs_now(void)
{
	struct seg_names s = { 0 };
	DIR *d = opendir("/dev/shm");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, "simgpu-nccl-", 12))
			continue;
		s.v = realloc(s.v, (s.n + 1) * sizeof(*s.v));
		assert_non_null(s.v);
		snprintf(s.v[s.n++], sizeof(s.v[0]), "%s", e->d_name);
	}
	if (d)
		closedir(d);
	return s;
}

static bool segs_have(const struct seg_names *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], name))
			return true;
	return false;
}

/* No segment of the job (made by a rank or by this process since before) is left. */
static void check_no_segments(const pid_t *pids, int n, struct seg_names *before)
{
	struct seg_names now = segs_now();
	char prefix[64];
	int i;

	for (i = 0; i <= n; i++) {
		int pid = i < n ? (int)pids[i] : (int)getpid();

		snprintf(prefix, sizeof(prefix), "simgpu-nccl-%d-", pid);
		for (size_t k = 0; k < now.n; k++)
			if (!strncmp(now.v[k], prefix, strlen(prefix)) &&
			    !segs_have(before, now.v[k]))
				fail_msg("a segment of pid %d was left in /dev/shm: %s", pid,
					 now.v[k]);
	}
	free(now.v);
	free(before->v);
}

/* Forks n ranks running fn(rank, n) with a fresh unique id (g_id; unlinked
 * afterwards when the ranks did not use it); returns how many failed. No
 * segment of the job may be left behind. */
static int run_ranks_id(int n, int (*fn)(int rank, int n), bool uses_id)
{
	pid_t pids[16];
	int failed = 0, i, fd;
	ncclResult_t e;

	struct seg_names before = segs_now();

	memset(results, 0, 16 * sizeof(*results));
	e = ncclGetUniqueId(&g_id);
	assert_int_equal(e, ncclSuccess);
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (!pids[i]) {
			g_rank = i;
			_exit(fn(i, n));
		}
	}
	for (i = 0; i < n; i++) {
		int st;

		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "rank %d (pid %d) failed: status %#x\n", i, (int)pids[i],
				st);
			failed++;
		}
	}
	fd = shm_open(g_id.internal + 8, O_RDONLY, 0);
	if (fd >= 0) {
		close(fd);
		shm_unlink(g_id.internal + 8);
		if (uses_id && !failed)
			fail_msg("segment %s left behind", g_id.internal + 8);
	}
	if (!failed)
		check_no_segments(pids, n, &before);
	else
		free(before.v);
	return failed;
}

static int run_ranks(int n, int (*fn)(int rank, int n))
{
	return run_ranks_id(n, fn, true);
}

static int setup(int rank, int n, ncclComm_t *comm, cudaStream_t *s)
{
	int c = -1, r = -1, d = -1;

	CCK(cudaSetDevice(rank % 2));
	CCK(cudaStreamCreate(s));
	NCK(ncclCommInitRank(comm, n, g_id, rank));
	NCK(ncclCommCount(*comm, &c));
	NCK(ncclCommUserRank(*comm, &r));
	NCK(ncclCommCuDevice(*comm, &d));
	RCHECK(c == n && r == rank && d == rank % 2);
	return 0;
}

static void *dev_alloc(size_t bytes)
{
	void *p = NULL;

	return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

/* ---- exports ---------------------------------------------------------------------------- */
static void test_exports(void **state)
{
	static const char *const extra[] = {
		"ncclGetVersion",     "ncclGetUniqueId",
		"ncclCommFinalize",   "ncclCommGetAsyncError",
		"ncclGetErrorString", "ncclGetLastError",
		"ncclCommInitRank",   "ncclCommInitAll",
		"ncclCommSplit",      "ncclAllReduce",
		"ncclAlltoAll",	      "ncclAllToAll",
		"ncclSend",	      "ncclRecv",
		"ncclGroupStart",     "ncclGroupEnd",
	};
	void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
	size_t n;
	Dl_info info;
	char cmd[1200], line[512];
	FILE *f;
	int version = 0;

	(void)state;
	assert_non_null(lib);
	assert_true(assert_exports(lib, "libnccl.so.2", NULL, GP_FAM_NCCL, extra,
				   sizeof(extra) / sizeof(extra[0])) >=
		    sizeof(extra) / sizeof(extra[0]));
	assert_null(dlsym(lib, "pncclAllReduce"));
	assert_int_equal(ncclGetVersion(&version), ncclSuccess);
	assert_int_equal(version, NCCL_VERSION_CODE);
	/* no export calls another, nor a traced runtime function: the library
	 * imports none (calls between exports would go through the PLT) */
	assert_true(dladdr(dlsym(lib, "ncclAllReduce"), &info) && info.dli_fname);
	snprintf(cmd, sizeof(cmd), "readelf -rW '%s'", info.dli_fname);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, " nccl") || strstr(line, " cuda") || strstr(line, " cu"))
			fail_msg("libnccl.so.2 imports a CUDA or NCCL symbol: %s", line);
		n++;
	}
	assert_int_equal(pclose(f), 0);
	assert_true(n > 0);
	dlclose(lib);
}

/* ---- data -------------------------------------------------------------------------------- */
#define CNT 1000

static int rank_data(int rank, int n)
{
	ncclComm_t comm;
	cudaStream_t s;
	static float hf[CNT * NR], rf[CNT * NR];
	static int32_t hi[CNT * NR], ri[CNT * NR];
	static int64_t hl[CNT * NR], rl[CNT * NR];
	static double hd[CNT], rd[CNT];
	static uint8_t hb[CNT], rb[CNT];
	static uint16_t hh[CNT], rh[CNT];
	void *d_send, *d_recv, *d_recv2;
	size_t big = CNT * NR * 8;
	int i, j;

	if (setup(rank, n, &comm, &s))
		return 1;
	d_send = dev_alloc(big);
	d_recv = dev_alloc(big);
	d_recv2 = dev_alloc(big);
	RCHECK(d_send && d_recv && d_recv2);

	/* AllReduce sum float32 */
	for (i = 0; i < CNT; i++)
		hf[i] = (float)rank + (float)i * 0.5f;
	CCK(cudaMemcpy(d_send, hf, CNT * 4, cudaMemcpyHostToDevice));
	NCK(ncclAllReduce(d_send, d_recv, CNT, ncclFloat32, ncclSum, comm, s));
	CCK(cudaStreamSynchronize(s));
	CCK(cudaMemcpy(rf, d_recv, CNT * 4, cudaMemcpyDeviceToHost));
	for (i = 0; i < CNT; i++)
		RCHECK(rf[i] == (float)(6 + 2 * i));

	/* in place, max int32; then min, prod (int64), avg float64 */
	for (i = 0; i < CNT; i++)
		hi[i] = (rank * 7 + i) % 13 - 6;
	CCK(cudaMemcpy(d_recv, hi, CNT * 4, cudaMemcpyHostToDevice));
	NCK(ncclAllReduce(d_recv, d_recv, CNT, ncclInt32, ncclMax, comm, s));
	CCK(cudaMemcpy(d_send, hi, CNT * 4, cudaMemcpyHostToDevice));
	NCK(ncclAllReduce(d_send, d_recv2, CNT, ncclInt32, ncclMin, comm, s));
	CCK(cudaStreamSynchronize(s));
	CCK(cudaMemcpy(ri, d_recv, CNT * 4, cudaMemcpyDeviceToHost));
	for (i = 0; i < CNT; i++) {
		int mx = -100;

		for (j = 0; j < n; j++)
			mx = (j * 7 + i) % 13 - 6 > mx ? (j * 7 + i) % 13 - 6 : mx;
		RCHECK(ri[i] == mx);
	}
	CCK(cudaMemcpy(ri, d_recv2, CNT * 4, cudaMemcpyDeviceToHost));
	for (i = 0; i < CNT; i++) {
		int mn = 100;

		for (j = 0; j < n; j++)
			mn = (j * 7 + i) % 13 - 6 < mn ? (j * 7 + i) % 13 - 6 : mn;
		RCHECK(ri[i] == mn);
	}
	for (i = 0; i < CNT; i++)
		hl[i] = (int64_t)(rank + 1) * (i % 5 - 2);
	CCK(cudaMemcpy(d_send, hl, CNT * 8, cudaMemcpyHostToDevice));
	NCK(ncclAllReduce(d_send, d_recv, CNT, ncclInt64, ncclProd, comm, s));
	for (i = 0; i < CNT; i++)
		hd[i] = rank * 2.0 + i;
	CCK(cudaMemcpy(d_recv2, hd, CNT * 8, cudaMemcpyHostToDevice));
	NCK(ncclAllReduce(d_recv2, d_recv2, CNT, ncclFloat64, ncclAvg, comm, s));
	CCK(cudaStreamSynchronize(s));
	CCK(cudaMemcpy(rl, d_recv, CNT * 8, cudaMemcpyDeviceToHost));
	CCK(cudaMemcpy(rd, d_recv2, CNT * 8, cudaMemcpyDeviceToHost));
	for (i = 0; i < CNT; i++) {
		int64_t v = i % 5 - 2;

		RCHECK(rl[i] == 24 * v * v * v * v);
		RCHECK(rd[i] == 3.0 + i);
	}

	/* float16 and bfloat16 sums: 1 + 2 + 3 + 4 = 10 */
	{
		static const uint16_t half[] = { 0x3c00, 0x4000, 0x4200, 0x4400 },
				      bf[] = { 0x3f80, 0x4000, 0x4040, 0x4080 };

		for (i = 0; i < CNT; i++)
			hh[i] = half[rank];
		CCK(cudaMemcpy(d_send, hh, CNT * 2, cudaMemcpyHostToDevice));
		NCK(ncclAllReduce(d_send, d_recv, CNT, ncclFloat16, ncclSum, comm, s));
		for (i = 0; i < CNT; i++)
			hh[i] = bf[rank];
		CCK(cudaMemcpy(d_send, hh, CNT * 2,
			       cudaMemcpyHostToDevice)); /* synchronous: after the first */
		NCK(ncclAllReduce(d_send, d_recv2, CNT, ncclBfloat16, ncclSum, comm, s));
		CCK(cudaStreamSynchronize(s));
		CCK(cudaMemcpy(rh, d_recv, CNT * 2, cudaMemcpyDeviceToHost));
		for (i = 0; i < CNT; i++)
			RCHECK(rh[i] == 0x4900);
		CCK(cudaMemcpy(rh, d_recv2, CNT * 2, cudaMemcpyDeviceToHost));
		for (i = 0; i < CNT; i++)
			RCHECK(rh[i] == 0x4120);
	}

	/* AllGather float32 */
	for (i = 0; i < CNT; i++)
		hf[i] = (float)(rank * 10000 + i);
	CCK(cudaMemcpy(d_send, hf, CNT * 4, cudaMemcpyHostToDevice));
	NCK(ncclAllGather(d_send, d_recv, CNT, ncclFloat32, comm, s));
	CCK(cudaStreamSynchronize(s));
	CCK(cudaMemcpy(rf, d_recv, (size_t)n * CNT * 4, cudaMemcpyDeviceToHost));
	for (j = 0; j < n; j++)
		for (i = 0; i < CNT; i++)
			RCHECK(rf[j * CNT + i] == (float)(j * 10000 + i));

	/* Broadcast uint8 from root 2, Bcast in place from root 1 */
	for (i = 0; i < CNT; i++)
		hb[i] = (uint8_t)(rank == 2 ? i * 3 + 7 : 0xee);
	CCK(cudaMemcpy(d_send, hb, CNT, cudaMemcpyHostToDevice));
	NCK(ncclBroadcast(d_send, d_recv, CNT, ncclUint8, 2, comm, s));
	for (i = 0; i < CNT; i++)
		hb[i] = (uint8_t)(rank == 1 ? i ^ 0x5a : 0x11);
	CCK(cudaMemcpy(d_recv2, hb, CNT, cudaMemcpyHostToDevice));
	NCK(ncclBcast(d_recv2, CNT, ncclUint8, 1, comm, s));
	CCK(cudaStreamSynchronize(s));
	CCK(cudaMemcpy(rb, d_recv, CNT, cudaMemcpyDeviceToHost));
	for (i = 0; i < CNT; i++)
		RCHECK(rb[i] == (uint8_t)(i * 3 + 7));
	CCK(cudaMemcpy(rb, d_recv2, CNT, cudaMemcpyDeviceToHost));
	for (i = 0; i < CNT; i++)
		RCHECK(rb[i] == (uint8_t)(i ^ 0x5a));

	/* Reduce sum int32 to root 1 */
	for (i = 0; i < CNT; i++)
		hi[i] = rank * 1000 + i;
	CCK(cudaMemcpy(d_send, hi, CNT * 4, cudaMemcpyHostToDevice));
	CCK(cudaMemset(d_recv, 0, CNT * 4));
	NCK(ncclReduce(d_send, d_recv, CNT, ncclInt32, ncclSum, 1, comm, s));
	CCK(cudaStreamSynchronize(s));
	CCK(cudaMemcpy(ri, d_recv, CNT * 4, cudaMemcpyDeviceToHost));
	for (i = 0; i < CNT; i++)
		RCHECK(ri[i] == (rank == 1 ? 6000 + 4 * i : 0));

	/* ReduceScatter sum int32: block b of rank j holds j*100 + b*10 + i */
	for (j = 0; j < n; j++)
		for (i = 0; i < 50; i++)
			hi[j * 50 + i] = rank * 100 + j * 10 + i;
	CCK(cudaMemcpy(d_send, hi, (size_t)n * 50 * 4, cudaMemcpyHostToDevice));
	NCK(ncclReduceScatter(d_send, d_recv, 50, ncclInt32, ncclSum, comm, s));
	CCK(cudaStreamSynchronize(s));
	CCK(cudaMemcpy(ri, d_recv, 50 * 4, cudaMemcpyDeviceToHost));
	for (i = 0; i < 50; i++)
		RCHECK(ri[i] == 600 + 4 * (rank * 10 + i));

	/* AlltoAll int64 (both spellings) */
	for (j = 0; j < n; j++)
		for (i = 0; i < 20; i++)
			hl[j * 20 + i] = rank * 1000 + j * 100 + i;
	CCK(cudaMemcpy(d_send, hl, (size_t)n * 20 * 8, cudaMemcpyHostToDevice));
	NCK(ncclAlltoAll(d_send, d_recv, 20, ncclInt64, comm, s));
	NCK(ncclAllToAll(d_send, d_recv2, 20, ncclInt64, comm, s));
	CCK(cudaStreamSynchronize(s));
	CCK(cudaMemcpy(rl, d_recv, (size_t)n * 20 * 8, cudaMemcpyDeviceToHost));
	for (j = 0; j < n; j++)
		for (i = 0; i < 20; i++)
			RCHECK(rl[j * 20 + i] == j * 1000 + rank * 100 + i);
	CCK(cudaMemcpy(rl, d_recv2, (size_t)n * 20 * 8, cudaMemcpyDeviceToHost));
	for (j = 0; j < n; j++)
		for (i = 0; i < 20; i++)
			RCHECK(rl[j * 20 + i] == j * 1000 + rank * 100 + i);

	/* a ring of send/recv in a group, then a group of two collectives */
	for (i = 0; i < CNT; i++)
		hf[i] = (float)(rank * 100000 + i);
	CCK(cudaMemcpy(d_send, hf, CNT * 4, cudaMemcpyHostToDevice));
	NCK(ncclGroupStart());
	NCK(ncclSend(d_send, CNT, ncclFloat32, (rank + 1) % n, comm, s));
	NCK(ncclRecv(d_recv, CNT, ncclFloat32, (rank + n - 1) % n, comm, s));
	NCK(ncclGroupEnd());
	CCK(cudaStreamSynchronize(s));
	CCK(cudaMemcpy(rf, d_recv, CNT * 4, cudaMemcpyDeviceToHost));
	for (i = 0; i < CNT; i++)
		RCHECK(rf[i] == (float)(((rank + n - 1) % n) * 100000 + i));
	NCK(ncclGroupStart());
	NCK(ncclGroupStart()); /* nested */
	NCK(ncclAllReduce(d_send, d_recv, CNT, ncclFloat32, ncclSum, comm, s));
	NCK(ncclGroupEnd());
	NCK(ncclAllGather(d_send, d_recv2, CNT, ncclFloat32, comm, s));
	NCK(ncclGroupEnd());
	CCK(cudaStreamSynchronize(s));
	CCK(cudaMemcpy(rf, d_recv, CNT * 4, cudaMemcpyDeviceToHost));
	for (i = 0; i < CNT; i++)
		RCHECK(rf[i] == (float)(600000 + 4 * i));
	CCK(cudaMemcpy(rf, d_recv2, (size_t)n * CNT * 4, cudaMemcpyDeviceToHost));
	for (j = 0; j < n; j++)
		for (i = 0; i < CNT; i++)
			RCHECK(rf[j * CNT + i] == (float)(j * 100000 + i));

	/* point-to-point outside a group: rank 0 -> 1, twice, in order */
	if (rank < 2) {
		for (i = 0; i < CNT; i++)
			hi[i] = i * 3;
		CCK(cudaMemcpy(d_send, hi, CNT * 4, cudaMemcpyHostToDevice));
		if (rank == 0) {
			NCK(ncclSend(d_send, CNT, ncclInt32, 1, comm, s));
			NCK(ncclSend(d_send, 10, ncclInt32, 1, comm, s));
		} else {
			NCK(ncclRecv(d_recv, CNT, ncclInt32, 0, comm, s));
			NCK(ncclRecv(d_recv2, 10, ncclInt32, 0, comm, s));
		}
		CCK(cudaStreamSynchronize(s));
		if (rank == 1) {
			CCK(cudaMemcpy(ri, d_recv, CNT * 4, cudaMemcpyDeviceToHost));
			for (i = 0; i < CNT; i++)
				RCHECK(ri[i] == i * 3);
			CCK(cudaMemcpy(ri, d_recv2, 10 * 4, cudaMemcpyDeviceToHost));
			for (i = 0; i < 10; i++)
				RCHECK(ri[i] == i * 3);
		}
	}
	{
		ncclResult_t ae = ncclInternalError;

		NCK(ncclCommGetAsyncError(comm, &ae));
		RCHECK(ae == ncclSuccess);
	}
	NCK(ncclCommFinalize(comm));
	NCK(ncclCommDestroy(comm));
	CCK(cudaFree(d_send));
	CCK(cudaFree(d_recv));
	CCK(cudaFree(d_recv2));
	return 0;
}

static void test_data(void **state)
{
	(void)state;
	assert_int_equal(run_ranks(NR, rank_data), 0);
}

/* ---- timing ------------------------------------------------------------------------------- */
#define T_BW	 0.05 /* GB/s */
#define T_LAT	 100  /* us */
#define T_KERNEL 2000 /* us: SIMGPU_KERNEL_US */

/* A kernel (a host function here, named by dladdr): T_KERNEL of modelled time. */
__attribute__((noinline)) void nccl_t_kernel(void)
{
	__asm__ volatile("");
}

/* The gate (simgpu_test.h) holds the rank's stream until its host thread has queued the whole
 * schedule, so that every modelled time after it follows from the model alone, whatever the
 * host's scheduling did between the calls. */
static int rank_timing(int rank, int n)
{
	ncclComm_t comm;
	cudaStream_t s;
	cudaEvent_t ev[4];
	size_t cnt = 128 * 1024; /* 512 KiB of float32 */
	void *a, *b;
	float ms[3] = { 0 }, total = 0;
	struct gate gate;
	uint64_t t_end = 0, t_back;
	int i;

	if (setup(rank, n, &comm, &s))
		return 1;
	a = dev_alloc(cnt * 4 * (size_t)n);
	b = dev_alloc(cnt * 4 * (size_t)n);
	RCHECK(a && b);
	for (i = 0; i < 4; i++)
		CCK(cudaEventCreate(&ev[i]));
	NCK(ncclAllReduce(a, b, 1, ncclFloat32, ncclSum, comm, s));
	CCK(cudaStreamSynchronize(s));

	gate_init(&gate);
	CCK(cudaLaunchHostFunc(s, gate_fn, &gate));
	CCK(cudaEventRecord(ev[0], s));
	CCK(cudaLaunchKernel((const void *)nccl_t_kernel, (dim3){ 1, 1, 1 }, (dim3){ 1, 1, 1 },
			     NULL, 0, s));
	NCK(ncclAllReduce(a, b, cnt, ncclFloat32, ncclSum, comm, s));
	CCK(cudaEventRecord(ev[1], s));
	NCK(ncclAllGather(a, b, cnt / 4, ncclFloat32, comm, s));
	CCK(cudaEventRecord(ev[2], s));
	CCK(cudaLaunchKernel((const void *)nccl_t_kernel, (dim3){ 1, 1, 1 }, (dim3){ 1, 1, 1 },
			     NULL, 0, s));
	CCK(cudaEventRecord(ev[3], s));
	gate_let_go(&gate);
	CCK(cudaStreamSynchronize(s));
	t_back = now_ns();
	RCHECK(!gate.timed_out && !simgpu_event_time(ev[3], &t_end));
	/* how long after the modelled end the host's synchronisation returned: never before */
	results[rank][3] = ((double)t_back - (double)t_end) / 1e6;
	for (i = 0; i < 3; i++) {
		CCK(cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]));
		results[rank][i] = ms[i];
	}
	CCK(cudaEventElapsedTime(&total, ev[0], ev[3]));
	results[rank][4] = total;
	NCK(ncclCommDestroy(comm));
	return 0;
}

static void test_timing(void **state)
{
	/* AllReduce: 512 KiB x 2(n-1)/n; AllGather: 128 KiB x n x (n-1)/n */
	double want_ar = T_LAT / 1e3 + 524288.0 * 1.5 / (T_BW * 1e9) * 1e3;
	double want_ag = T_LAT / 1e3 + 524288.0 * 0.75 / (T_BW * 1e9) * 1e3;
	double k_ms = T_KERNEL / 1e3, min_ar = 1e9;
	char v[32];
	int r;

	(void)state;
	snprintf(v, sizeof(v), "%g", T_BW);
	setenv("SIMGPU_NCCL_BW_GBPS", v, 1);
	snprintf(v, sizeof(v), "%d", T_LAT);
	setenv("SIMGPU_NCCL_LATENCY_US", v, 1);
	snprintf(v, sizeof(v), "%d", T_KERNEL);
	setenv("SIMGPU_KERNEL_US", v, 1);
	assert_int_equal(run_ranks(NR, rank_timing), 0);
	unsetenv("SIMGPU_NCCL_BW_GBPS");
	unsetenv("SIMGPU_NCCL_LATENCY_US");
	unsetenv("SIMGPU_KERNEL_US");
	for (r = 0; r < NR; r++) {
		/* ev0 -> ev1: the kernel, a wait for the ranks whose gates opened later (none for the
		 * last), the AllReduce: the model is never early */
		if (results[r][0] < (k_ms + want_ar) * 0.99)
			fail_msg(
				"rank %d: kernel + AllReduce %.3f ms, the model says at least %.3f",
				r, results[r][0], k_ms + want_ar);
		min_ar = results[r][0] < min_ar ? results[r][0] : min_ar;
		/* every rank starts the AllGather at the AllReduce's common end: exactly the model */
		ASSERT_NEAR(results[r][1], want_ag, 0.01);
		/* the stream goes on from the collective's modelled end, not from when its worker ran */
		ASSERT_NEAR(results[r][2], k_ms, 0.01);
		/* the host's synchronisation returns no earlier than the modelled end */
		if (results[r][3] < 0)
			fail_msg("rank %d: cudaStreamSynchronize returned %.6f ms before the "
				 "modelled end",
				 r, -results[r][3]);
	}
	/* the last rank to arrive waits for nobody: exactly the kernel, then the ring model */
	ASSERT_NEAR(min_ar, k_ms + want_ar, 0.01);
	print_message("      kernel + AllReduce %.3f ms, AllGather %.3f ms, kernel %.3f ms "
		      "(model %.3f, %.3f, %.3f)\n",
		      min_ar, results[0][1], results[0][2], k_ms + want_ar, want_ag, k_ms);
}

/* ---- straggler ---------------------------------------------------------------------------- */
/*
 * Rank 3 is late for the last ITERS of 2 x ITERS AllReduces: it waits until the other ranks
 * have queued theirs, then sleeps LATE_MS before queueing its own. Each rank reports its
 * item's modelled arrival (start) and end (simgpu.h). Every rank ends at the latest arrival
 * plus the ring model's duration; the others arrive when they queue (their streams are idle),
 * so they wait at least LATE_MS in the model, and rank 3, the last, waits for nobody.
 */
#define LATE_MS	 40
#define ITERS	 3
#define S_LAT_US 100   /* SIMGPU_NCCL_LATENCY_US */
#define S_BW	 1     /* SIMGPU_NCCL_BW_GBPS */
#define S_COUNT	 16384 /* floats: 64 KiB */
#define S_QUEUED 15    /* results[rank][S_QUEUED]: AllReduces queued so far */

static double queued(int rank)
{
	double q;

	__atomic_load(&results[rank][S_QUEUED], &q, __ATOMIC_ACQUIRE);
	return q;
}

static int rank_straggler(int rank, int n)
{
	ncclComm_t comm;
	cudaStream_t s;
	void *a, *b;
	double q;
	int i, r;

	if (setup(rank, n, &comm, &s))
		return 1;
	a = dev_alloc(65536);
	b = dev_alloc(65536);
	RCHECK(a && b);
	NCK(ncclAllReduce(a, b, 1, ncclFloat32, ncclSum, comm, s));
	CCK(cudaStreamSynchronize(s));
	for (i = 0; i < 2 * ITERS; i++) {
		struct simgpu_times t;
		void *op;

		if (i >= ITERS && rank == 3) {
			for (r = 0; r < 3; r++)
				while (queued(r) < i + 1)
					usleep(100);
			usleep(LATE_MS * 1000);
		}
		NCK(ncclAllReduce(a, b, S_COUNT, ncclFloat32, ncclSum, comm, s));
		op = simgpu_op_last();
		RCHECK(op);
		q = i + 1;
		__atomic_store(&results[rank][S_QUEUED], &q, __ATOMIC_RELEASE);
		CCK(cudaStreamSynchronize(s));
		/* the host's synchronisation returned after the modelled end */
		RCHECK(!simgpu_op_times(op, &t) && now_ns() >= t.end_ns);
		simgpu_op_put(op);
		results[rank][2 * i] = (double)t.start_ns; /* exact: below 2^53 */
		results[rank][2 * i + 1] = (double)t.end_ns;
	}
	NCK(ncclCommDestroy(comm));
	return 0;
}

static void test_straggler(void **state)
{
	/* the ring model: latency + bytes x 2(n-1)/n (1.5) / bandwidth */
	const uint64_t dur = S_LAT_US * 1000ull + (uint64_t)S_COUNT * 4 * 3 / 2 / S_BW;
	double waited = 0;
	char v[32];
	int i, r;

	(void)state;
	snprintf(v, sizeof(v), "%d", S_LAT_US);
	setenv("SIMGPU_NCCL_LATENCY_US", v, 1);
	snprintf(v, sizeof(v), "%d", S_BW);
	setenv("SIMGPU_NCCL_BW_GBPS", v, 1);
	assert_int_equal(run_ranks(NR, rank_straggler), 0);
	unsetenv("SIMGPU_NCCL_LATENCY_US");
	unsetenv("SIMGPU_NCCL_BW_GBPS");
	for (i = 0; i < 2 * ITERS; i++) {
		uint64_t end = (uint64_t)results[0][2 * i + 1], last = 0;

		for (r = 0; r < NR; r++)
			if ((uint64_t)results[r][2 * i] > last)
				last = (uint64_t)results[r][2 * i];
		/* every rank ends at the same instant: the latest arrival + the ring model */
		for (r = 0; r < NR; r++)
			ASSERT_NS((uint64_t)results[r][2 * i + 1], end);
		ASSERT_NS(end, last + dur);
		if (i < ITERS)
			continue;
		/* rank 3 arrived last, at least LATE_MS after the others: they wait for it in the
		 * model (and their synchronisations, which return after the end, with them); it
		 * waits for nobody */
		ASSERT_NS((uint64_t)results[3][2 * i], last);
		for (r = 0; r < 3; r++) {
			ASSERT_NS_GE(last - (uint64_t)results[r][2 * i], LATE_MS * MS_NS);
			waited += (double)(end - (uint64_t)results[r][2 * i]) / 1e6 / 3 / ITERS;
		}
		ASSERT_NS(end - (uint64_t)results[3][2 * i], dur);
	}
	print_message("      modelled wait of ranks 0-2 for the late rank 3: %.3f ms a call "
		      "(it slept %d ms; the AllReduce %.3f ms)\n",
		      waited, LATE_MS, dur / 1e6);
}

/* ---- prefault ----------------------------------------------------------------------------- */
#define PF_COUNT (1024 * 1024) /* floats: 4 MiB, 1024 pages of staging per rank */

static long minor_faults(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? -1 : ru.ru_minflt;
}

static int rank_prefault(int rank, int n)
{
	ncclComm_t comm;
	cudaStream_t s;
	void *a, *b;
	long f0, f1;

	if (setup(rank, n, &comm, &s))
		return 1;
	a = dev_alloc(PF_COUNT *
		      4); /* device memory is backed when allocated (SIMGPU_POPULATE_MB) */
	b = dev_alloc(PF_COUNT * 4);
	RCHECK(a && b);
	/* one element first: the worker's first use of its allocator and of the segment */
	NCK(ncclAllReduce(a, b, 1, ncclFloat32, ncclSum, comm, s));
	CCK(cudaStreamSynchronize(s));
	f0 = minor_faults();
	NCK(ncclAllReduce(a, b, PF_COUNT, ncclFloat32, ncclSum, comm, s));
	CCK(cudaStreamSynchronize(s));
	f1 = minor_faults();
	RCHECK(f0 >= 0 && f1 >= 0);
	results[rank][0] = (double)(f1 - f0);
	NCK(ncclCommDestroy(comm));
	return 0;
}

static void test_prefault(void **state)
{
	int r;

	(void)state;
	assert_int_equal(run_ranks(NR, rank_prefault), 0);
	/* faulted in the collective, its own staging alone would be 1023 faults (shared memory is
	 * written one page a fault), the peers' ~190 more; a few remain for the process's own
	 * bookkeeping (an item, the worker's stack) */
	for (r = 0; r < NR; r++)
		if (results[r][0] > 64)
			fail_msg("rank %d: %.0f page faults in a 4 MiB AllReduce", r,
				 results[r][0]);
	print_message("      page faults in a 4 MiB AllReduce: %.0f %.0f %.0f %.0f\n",
		      results[0][0], results[1][0], results[2][0], results[3][0]);
}

/* ---- split ----------------------------------------------------------------------------------- */
static int rank_split(int rank, int n)
{
	ncclComm_t comm, half, three;
	cudaStream_t s;
	int32_t *a, *b, v = rank, got = -1;
	int cnt = -1, r = -1;

	if (setup(rank, n, &comm, &s))
		return 1;
	a = dev_alloc(64);
	b = dev_alloc(64);
	RCHECK(a && b);
	CCK(cudaMemcpy(a, &v, 4, cudaMemcpyHostToDevice));
	/* colour = parity, key = -rank: the higher old rank comes first */
	NCK(ncclCommSplit(comm, rank % 2, -rank, &half, NULL));
	RCHECK(half != NULL);
	NCK(ncclCommCount(half, &cnt));
	NCK(ncclCommUserRank(half, &r));
	RCHECK(cnt == 2 && r == (rank < 2 ? 1 : 0));
	NCK(ncclAllReduce(a, b, 1, ncclInt32, ncclSum, half, s));
	CCK(cudaStreamSynchronize(s));
	CCK(cudaMemcpy(&got, b, 4, cudaMemcpyDeviceToHost));
	RCHECK(got == 2 + 2 * (rank % 2));
	/* rank 3 opts out */
	NCK(ncclCommSplit(comm, rank == 3 ? NCCL_SPLIT_NOCOLOR : 7, rank, &three, NULL));
	if (rank == 3) {
		RCHECK(three == NULL);
	} else {
		RCHECK(three != NULL);
		NCK(ncclCommCount(three, &cnt));
		NCK(ncclCommUserRank(three, &r));
		RCHECK(cnt == 3 && r == rank);
		NCK(ncclAllReduce(a, b, 1, ncclInt32, ncclSum, three, s));
		CCK(cudaStreamSynchronize(s));
		CCK(cudaMemcpy(&got, b, 4, cudaMemcpyDeviceToHost));
		RCHECK(got == 3);
		NCK(ncclCommDestroy(three));
	}
	/* the parent still works */
	NCK(ncclAllReduce(a, b, 1, ncclInt32, ncclSum, comm, s));
	CCK(cudaStreamSynchronize(s));
	CCK(cudaMemcpy(&got, b, 4, cudaMemcpyDeviceToHost));
	RCHECK(got == 6);
	NCK(ncclCommDestroy(half));
	NCK(ncclCommDestroy(comm));
	return 0;
}

static void test_split(void **state)
{
	(void)state;
	assert_int_equal(run_ranks(NR, rank_split), 0);
}

/* ---- one process, several ranks --------------------------------------------------------------- */
static int rank_single(int rank, int n)
{
	ncclComm_t comms[2];
	cudaStream_t s[2];
	float *a[2], *b[2], h[256], got[256];
	int i, k, d = -1, devlist[2] = { 1, 0 };

	(void)rank;
	(void)n;
	NCK(ncclCommInitAll(comms, 2, NULL));
	for (k = 0; k < 2; k++) {
		NCK(ncclCommCuDevice(comms[k], &d));
		RCHECK(d == k);
		CCK(cudaSetDevice(k));
		CCK(cudaStreamCreate(&s[k]));
		a[k] = dev_alloc(sizeof(h));
		b[k] = dev_alloc(sizeof(h));
		RCHECK(a[k] && b[k]);
		for (i = 0; i < 256; i++)
			h[i] = (float)(k + 1) * (float)i;
		CCK(cudaMemcpy(a[k], h, sizeof(h), cudaMemcpyHostToDevice));
	}
	NCK(ncclGroupStart());
	for (k = 0; k < 2; k++)
		NCK(ncclAllReduce(a[k], b[k], 256, ncclFloat32, ncclSum, comms[k], s[k]));
	NCK(ncclGroupEnd());
	for (k = 0; k < 2; k++) {
		CCK(cudaSetDevice(k));
		CCK(cudaStreamSynchronize(s[k]));
		CCK(cudaMemcpy(got, b[k], sizeof(got), cudaMemcpyDeviceToHost));
		for (i = 0; i < 256; i++)
			RCHECK(got[i] == 3.0f * (float)i);
	}
	/* ungrouped from one thread works too: each call is queued on its own stream */
	NCK(ncclAllReduce(a[0], b[0], 256, ncclFloat32, ncclMax, comms[0], s[0]));
	NCK(ncclAllReduce(a[1], b[1], 256, ncclFloat32, ncclMax, comms[1], s[1]));
	CCK(cudaDeviceSynchronize());
	CCK(cudaMemcpy(got, b[1], sizeof(got), cudaMemcpyDeviceToHost));
	for (i = 0; i < 256; i++)
		RCHECK(got[i] == 2.0f * (float)i);
	for (k = 0; k < 2; k++)
		NCK(ncclCommDestroy(comms[k]));
	/* a device list, and a device that does not exist */
	NCK(ncclCommInitAll(comms, 2, devlist));
	NCK(ncclCommCuDevice(comms[0], &d));
	RCHECK(d == 1);
	NCK(ncclCommDestroy(comms[0]));
	NCK(ncclCommDestroy(comms[1]));
	devlist[1] = 5;
	NCK_ERR(ncclCommInitAll(comms, 2, devlist), ncclUnhandledCudaError);
	return 0;
}

static void test_single_process(void **state)
{
	(void)state;
	assert_int_equal(run_ranks_id(1, rank_single, false), 0);
}

/* ---- errors ------------------------------------------------------------------------------------ */
static int rank_errors(int rank, int n)
{
	ncclComm_t c = NULL, one;
	ncclUniqueId bad;
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	cudaStream_t s;
	void *a;
	int v;

	(void)n;
	RCHECK(!strcmp(ncclGetErrorString(ncclSuccess), "no error"));
	RCHECK(!strcmp(ncclGetErrorString(ncclInvalidArgument),
		       "invalid argument (run with NCCL_DEBUG=WARN for details)"));
	RCHECK(!strcmp(ncclGetErrorString(ncclInvalidUsage),
		       "invalid usage (run with NCCL_DEBUG=WARN for details)"));
	RCHECK(!strcmp(ncclGetErrorString(ncclRemoteError),
		       "remote process exited or there was a network error"));
	RCHECK(!strcmp(ncclGetErrorString((ncclResult_t)99), "unknown result code"));
	NCK_ERR(ncclGetVersion(NULL), ncclInvalidArgument);
	NCK_ERR(ncclGetUniqueId(NULL), ncclInvalidArgument);

	NCK_ERR(ncclCommInitRank(&c, 4, g_id, 4), ncclInvalidArgument);
	NCK_ERR(ncclCommInitRank(&c, 4, g_id, -1), ncclInvalidArgument);
	NCK_ERR(ncclCommInitRank(&c, 0, g_id, 0), ncclInvalidArgument);
	NCK_ERR(ncclCommInitRank(NULL, 1, g_id, 0), ncclInvalidArgument);
	RCHECK(ncclGetLastError(NULL)[0] != '\0');
	memset(&bad, 0, sizeof(bad));
	NCK_ERR(ncclCommInitRank(&c, 1, bad, 0), ncclInvalidArgument);
	cfg.magic = 0;
	NCK_ERR(ncclCommInitRankConfig(&c, 1, g_id, 0, &cfg), ncclInvalidArgument);
	cfg.magic = NCCL_API_MAGIC;
	NCK(ncclCommInitRankConfig(&one, 1, g_id, rank, &cfg));
	NCK_ERR(ncclCommInitRankConfig(&c, 1, g_id, 0, &cfg), ncclSystemError); /* used up */

	CCK(cudaStreamCreate(&s));
	a = dev_alloc(4096);
	RCHECK(a);
	NCK_ERR(ncclAllReduce(a, a, 16, ncclFloat32, ncclSum, NULL, s), ncclInvalidArgument);
	NCK_ERR(ncclAllReduce(a, a, 16, (ncclDataType_t)99, ncclSum, one, s), ncclInvalidArgument);
	NCK_ERR(ncclAllReduce(a, a, 16, ncclFloat32, (ncclRedOp_t)9, one, s), ncclInvalidArgument);
	NCK_ERR(ncclAllReduce(NULL, a, 16, ncclFloat32, ncclSum, one, s), ncclInvalidArgument);
	NCK_ERR(ncclAllReduce(a, (char *)a + 4096 - 8, 16, ncclFloat32, ncclSum, one, s),
		ncclInvalidArgument);
	NCK_ERR(ncclBroadcast(a, a, 16, ncclFloat32, 1, one, s), ncclInvalidArgument);
	NCK_ERR(ncclSend(a, 16, ncclFloat32, 1, one, s), ncclInvalidArgument);
	NCK_ERR(ncclRecv(a, 16, ncclFloat32, -1, one, s), ncclInvalidArgument);
	NCK_ERR(ncclAllReduce(a, a, 16, ncclFloat32, ncclSum, one, (cudaStream_t)0x1234),
		ncclUnhandledCudaError);
	NCK_ERR(ncclCommCount(NULL, &v), ncclInvalidArgument);
	NCK_ERR(ncclCommCount(one, NULL), ncclInvalidArgument);
	NCK_ERR(ncclGroupEnd(), ncclInvalidUsage);
	NCK_ERR(ncclCommSplit(one, -5, 0, &c, NULL), ncclInvalidArgument);
	/* a 1-rank communicator works, zero counts are no-ops, self send/recv in a group */
	NCK(ncclAllReduce(a, a, 16, ncclFloat32, ncclSum, one, 0));
	NCK(ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, one, s));
	NCK(ncclGroupStart());
	NCK(ncclSend(a, 16, ncclFloat32, 0, one, s));
	NCK(ncclRecv((char *)a + 2048, 16, ncclFloat32, 0, one, s));
	NCK(ncclGroupEnd());
	CCK(cudaDeviceSynchronize());
	NCK(ncclCommDestroy(one));
	NCK_ERR(ncclCommDestroy(one), ncclInvalidArgument);
	NCK_ERR(ncclCommUserRank(one, &v), ncclInvalidArgument);
	return 0;
}

static void test_errors(void **state)
{
	(void)state;
	assert_int_equal(run_ranks(1, rank_errors), 0);
}

/* ---- a rank dies ---------------------------------------------------------------------------------- */
static int rank_dead(int rank, int n)
{
	ncclComm_t comm;
	cudaStream_t s;
	void *a;
	ncclResult_t ae = ncclSuccess;

	if (setup(rank, n, &comm, &s))
		return 1;
	a = dev_alloc(4096);
	RCHECK(a);
	NCK(ncclAllReduce(a, a, 16, ncclFloat32, ncclSum, comm, s));
	CCK(cudaStreamSynchronize(s));
	if (rank == n - 1)
		_exit(0); /* gone without a word */
	NCK(ncclAllReduce(a, a, 16, ncclFloat32, ncclSum, comm, s));
	CCK(cudaStreamSynchronize(s));
	NCK(ncclCommGetAsyncError(comm, &ae));
	RCHECK(ae == ncclRemoteError);
	NCK(ncclCommAbort(comm));
	return 0;
}

static void test_dead_rank(void **state)
{
	(void)state;
	assert_int_equal(run_ranks(NR, rank_dead), 0);
}

/* ---- the call log ------------------------------------------------------------------------------ */
static int rank_log(int rank, int n)
{
	ncclComm_t c;
	void *a;

	(void)rank;
	(void)n;
	NCK(ncclCommInitAll(&c, 1, NULL));
	a = dev_alloc(256);
	RCHECK(a);
	NCK(ncclAllReduce(a, a, 8, ncclFloat32, ncclSum, c, NULL));
	CCK(cudaDeviceSynchronize());
	NCK(ncclCommDestroy(c));
	return 0;
}

static void test_log(void **state)
{
	char path[] = "/tmp/simgpu-nccl-log-XXXXXX", buf[8192];
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	ssize_t got;

	(void)state;
	assert_true(fd >= 0 && saved >= 0);
	unlink(path);
	setenv("SIMGPU_LOG", "1", 1);
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	assert_int_equal(run_ranks_id(1, rank_log, false), 0);
	dup2(saved, STDERR_FILENO);
	close(saved);
	unsetenv("SIMGPU_LOG");
	got = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	buf[got > 0 ? got : 0] = '\0';
	if (!strstr(buf, "ncclCommInitAll(comms=") || !strstr(buf, "ncclAllReduce(sendbuff=") ||
	    !strstr(buf, "datatype=ncclFloat32 op=ncclSum") || !strstr(buf, ") = 0 ncclSuccess") ||
	    !strstr(buf, "ncclCommDestroy(comm=") || !strstr(buf, "simgpu["))
		fail_msg("call log:\n%s", buf);
}

/* ---- the real NCCL ------------------------------------------------------------------------------- */
static void test_compat(void **state)
{
	static const char script[] =
		"tests/simgpu/nccl/compat/nccl_compat.sh"; /* make runs from the root */
	Dl_info info;
	char dir[1024], cmd[1200], *slash;

	(void)state;
	if (access(script, X_OK)) {
		print_message("SKIP nccl-compat: %s not found (run from the repository root)\n",
			      script);
		return;
	}
	assert_true(dladdr((void *)ncclGetVersion, &info) && info.dli_fname);
	snprintf(dir, sizeof(dir), "%s", info.dli_fname);
	slash = strrchr(dir, '/');
	assert_non_null(slash);
	*slash = '\0';
	snprintf(cmd, sizeof(cmd), "%s '%s'", script, dir);
	fflush(stdout);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exports),	       cmocka_unit_test(test_data),
		cmocka_unit_test(test_timing),	       cmocka_unit_test(test_straggler),
		cmocka_unit_test(test_prefault),       cmocka_unit_test(test_split),
		cmocka_unit_test(test_single_process), cmocka_unit_test(test_errors),
		cmocka_unit_test(test_dead_rank),      cmocka_unit_test(test_log),
		cmocka_unit_test(test_compat),
	};

	/* the parent never uses the GPU model: every rank reads these at its first call */
	setenv("SIMGPU_DEVICES", "2", 1);
	unsetenv("SIMGPU_LOG");
	unsetenv("SIMGPU_NCCL_BW_GBPS");
	unsetenv("SIMGPU_NCCL_LATENCY_US");
	unsetenv("SIMGPU_NCCL_STAGING_MB");
	results = mmap(NULL, 16 * sizeof(*results), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (results == MAP_FAILED)
		return 1;
	return cmocka_run_group_tests_name("simgpu nccl", tests, NULL, NULL);
}
