/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nccl_compat.c — built twice by nccl_compat.sh: against the real toolkit's
 * nccl.h and libnccl.so.2 (then run on the simulator), and against the
 * simulator's (then run on the real library). Only public API, so the same
 * source compiles with either header.
 *
 *   nccl_compat version   ncclGetVersion and an error string: no GPU needed
 *   nccl_compat           2 ranks (forked processes) on devices 0 and 1:
 *                         ncclCommInitRankConfig with NCCL_CONFIG_INITIALIZER,
 *                         AllReduce, a send/recv ring in a group, Split
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define N 1000
#define CHECK(x)                                                                               \
	do {                                                                                   \
		if (!(x)) {                                                                    \
			fprintf(stderr, "rank %d: %s:%d: %s\n", rank, __FILE__, __LINE__, #x); \
			return 1;                                                              \
		}                                                                              \
	} while (0)

static int run(int rank, ncclUniqueId id)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclComm_t comm, sub;
	cudaStream_t s;
	float h[N], *a, *b;
	int i, n = 0;

	CHECK(cudaSetDevice(rank) == cudaSuccess);
	CHECK(cudaStreamCreate(&s) == cudaSuccess);
	CHECK(cudaMalloc((void **)&a, sizeof(h)) == cudaSuccess);
	CHECK(cudaMalloc((void **)&b, sizeof(h)) == cudaSuccess);
	for (i = 0; i < N; i++)
		h[i] = (float)(rank + 1) * (float)i;
	CHECK(cudaMemcpy(a, h, sizeof(h), cudaMemcpyHostToDevice) == cudaSuccess);
	cfg.blocking = 1;
	CHECK(ncclCommInitRankConfig(&comm, 2, id, rank, &cfg) == ncclSuccess);
	CHECK(ncclCommCount(comm, &n) == ncclSuccess && n == 2);
	CHECK(ncclAllReduce(a, b, N, ncclFloat, ncclSum, comm, s) == ncclSuccess);
	CHECK(cudaStreamSynchronize(s) == cudaSuccess);
	CHECK(cudaMemcpy(h, b, sizeof(h), cudaMemcpyDeviceToHost) == cudaSuccess);
	for (i = 0; i < N; i++)
		CHECK(h[i] == 3.0f * (float)i);
	CHECK(ncclGroupStart() == ncclSuccess);
	CHECK(ncclSend(a, N, ncclFloat, 1 - rank, comm, s) == ncclSuccess);
	CHECK(ncclRecv(b, N, ncclFloat, 1 - rank, comm, s) == ncclSuccess);
	CHECK(ncclGroupEnd() == ncclSuccess);
	CHECK(cudaStreamSynchronize(s) == cudaSuccess);
	CHECK(cudaMemcpy(h, b, sizeof(h), cudaMemcpyDeviceToHost) == cudaSuccess);
	for (i = 0; i < N; i++)
		CHECK(h[i] == (float)(2 - rank) * (float)i);
	CHECK(ncclCommSplit(comm, rank, 0, &sub, NULL) == ncclSuccess && sub);
	CHECK(ncclCommCount(sub, &n) == ncclSuccess && n == 1);
	CHECK(ncclCommDestroy(sub) == ncclSuccess);
	CHECK(ncclCommDestroy(comm) == ncclSuccess);
	return 0;
}

int main(int argc, char **argv)
{
	ncclUniqueId id;
	pid_t pid[2];
	int v = 0, st, r, failed = 0, rank = -1;

	CHECK(ncclGetVersion(&v) == ncclSuccess);
	if (argc > 1 && !strcmp(argv[1], "version")) {
		printf("version %d: %s\n", v, ncclGetErrorString(ncclInvalidUsage));
		return 0;
	}
	CHECK(ncclGetUniqueId(&id) == ncclSuccess);
	fflush(stdout);
	for (r = 0; r < 2; r++) {
		pid[r] = fork();
		if (!pid[r])
			_exit(run(r, id));
	}
	for (r = 0; r < 2; r++)
		if (waitpid(pid[r], &st, 0) != pid[r] || !WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	printf("%s version %d\n", failed ? "FAILED" : "OK", v);
	return failed;
}
