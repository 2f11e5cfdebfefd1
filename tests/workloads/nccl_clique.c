/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nccl_clique — one process driving every rank of a communicator, the way
 * ncclCommInitAll is used (one thread, one GPU per rank), then splitting it.
 *
 * usage: nccl_clique [--ranks R] [--ref FILE]     (needs SIMGPU_DEVICES >= R; R even, 2..8)
 *   ncclCommInitAll(comms, R, devlist = {R-1, ..., 0})   rank i on device R-1-i
 *   per rank i: cudaSetDevice(dev i); cudaStreamCreate; cudaMalloc 1 MiB
 *   ncclGroupStart; per rank: ncclAllReduce float32 64 Ki elements on its stream; ncclGroupEnd
 *   per rank: cudaStreamSynchronize
 *   ncclGroupStart; per rank i: ncclCommSplit(comms[i], color i % 2, key i, &halves[i], NULL); ncclGroupEnd
 *   per rank: ncclCommCount(halves[i]), ncclCommUserRank(halves[i])
 *   ncclGroupStart; per rank: ncclAllReduce float32 1 Ki elements on halves[i]; ncclGroupEnd
 *   per rank: cudaStreamSynchronize; ncclCommDestroy(halves[i]); ncclCommDestroy(comms[i]); cudaFree
 * Reference (FILE): {"pid", "ranks", "comms": [{"handle", "rank", "nranks", "device"}],
 *   "halves": [{"handle", "parent", "rank", "nranks", "device"}]} (handles as "0x..." strings).
 * Prints DONE at the end.
 */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#define MAX_RANKS 8

static void must(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "nccl_clique: %s failed\n", what);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	int R = 4, devs[MAX_RANKS], count[MAX_RANKS], urank[MAX_RANKS];
	ncclComm_t comms[MAX_RANKS], halves[MAX_RANKS];
	cudaStream_t s[MAX_RANKS];
	void *buf[MAX_RANKS];
	const char *ref = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
			R = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--ref") && i + 1 < argc)
			ref = argv[++i];
		else
			must(0, "usage: nccl_clique [--ranks R] [--ref FILE]");
	}
	must(R >= 2 && R <= MAX_RANKS && R % 2 == 0, "--ranks must be even, 2..8");
	for (int i = 0; i < R; i++)
		devs[i] = R - 1 - i;
	must(ncclCommInitAll(comms, R, devs) == ncclSuccess, "ncclCommInitAll");
	for (int i = 0; i < R; i++) {
		must(cudaSetDevice(devs[i]) == cudaSuccess, "cudaSetDevice");
		must(cudaStreamCreate(&s[i]) == cudaSuccess, "cudaStreamCreate");
		must(cudaMalloc(&buf[i], 1 << 20) == cudaSuccess, "cudaMalloc");
	}
	must(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
	for (int i = 0; i < R; i++)
		must(ncclAllReduce(buf[i], buf[i], 64 * 1024, ncclFloat32, ncclSum, comms[i],
				   s[i]) == ncclSuccess,
		     "ncclAllReduce");
	must(ncclGroupEnd() == ncclSuccess, "ncclGroupEnd");
	for (int i = 0; i < R; i++)
		must(cudaStreamSynchronize(s[i]) == cudaSuccess, "cudaStreamSynchronize");

	must(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
	for (int i = 0; i < R; i++)
		must(ncclCommSplit(comms[i], i % 2, i, &halves[i], NULL) == ncclSuccess,
		     "ncclCommSplit");
	must(ncclGroupEnd() == ncclSuccess, "ncclGroupEnd");
	for (int i = 0; i < R; i++) {
		must(ncclCommCount(halves[i], &count[i]) == ncclSuccess, "ncclCommCount");
		must(ncclCommUserRank(halves[i], &urank[i]) == ncclSuccess, "ncclCommUserRank");
	}
	must(ncclGroupStart() == ncclSuccess, "ncclGroupStart");
	for (int i = 0; i < R; i++)
		must(ncclAllReduce(buf[i], buf[i], 1024, ncclFloat32, ncclSum, halves[i], s[i]) ==
			     ncclSuccess,
		     "ncclAllReduce");
	must(ncclGroupEnd() == ncclSuccess, "ncclGroupEnd");
	for (int i = 0; i < R; i++) {
		must(cudaStreamSynchronize(s[i]) == cudaSuccess, "cudaStreamSynchronize");
		must(ncclCommDestroy(halves[i]) == ncclSuccess, "ncclCommDestroy");
		must(ncclCommDestroy(comms[i]) == ncclSuccess, "ncclCommDestroy");
		must(cudaFree(buf[i]) == cudaSuccess, "cudaFree");
	}
	if (ref) {
		FILE *f = fopen(ref, "w");

		must(f != NULL, "fopen --ref");
		fprintf(f, "{\"pid\": %d, \"ranks\": %d, \"comms\": [", (int)getpid(), R);
		for (int i = 0; i < R; i++)
			fprintf(f,
				"%s{\"handle\": \"%p\", \"rank\": %d, \"nranks\": %d, \"device\": %d}",
				i ? ", " : "", (void *)comms[i], i, R, devs[i]);
		fputs("], \"halves\": [", f);
		for (int i = 0; i < R; i++)
			fprintf(f,
				"%s{\"handle\": \"%p\", \"parent\": \"%p\", \"rank\": %d, \"nranks\": %d, \"device\": %d}",
				i ? ", " : "", (void *)halves[i], (void *)comms[i], urank[i],
				count[i], devs[i]);
		fputs("]}\n", f);
		must(fclose(f) == 0, "fclose --ref");
	}
	puts("DONE");
	return 0;
}
