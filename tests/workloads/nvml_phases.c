// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nvml_phases.c — a workload with known GPU busy and idle phases and known
 * device memory, for the NVML tests: allocates --alloc-mb MiB (cudaMalloc,
 * 1 MiB each), copies --copy-mb MiB host to device (pinned), waits at an
 * optional barrier (--barrier DIR --peers N: every peer has allocated),
 * then --phases times runs kernels back to back for --busy-ms and sleeps
 * --idle-ms, then copies 4 MiB of pageable memory host to device over and
 * over for --pageable-ms (the host busy, the GPU's SMs idle), holds
 * --hold-ms, frees. Its reference (--ref FILE, JSON): the
 * bytes allocated, the modelled [start, end] of every kernel (simgpu.h:
 * the simulator's own times, CLOCK_MONOTONIC), the bytes copied.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <simgpu.h>

#define MAX_KERNELS 20000

void nvml_busy(void)
{
}

static void die(const char *what, cudaError_t e)
{
	fprintf(stderr, "nvml_phases: %s: %s\n", what, cudaGetErrorString(e));
	exit(1);
}

static void sleep_ms(double ms)
{
	struct timespec ts = { (time_t)(ms / 1000),
			       (long)((ms - (time_t)(ms / 1000) * 1000) * 1e6) };

	nanosleep(&ts, NULL);
}

static int peers_ready(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, "ready-", 6);
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	double busy_ms = 0, idle_ms = 0, hold_ms = 0, pageable_ms = 0;
	int phases = 0, alloc_mb = 0, copy_mb = 0, peers = 0;
	const char *ref = NULL, *barrier = NULL;
	static void *ops[MAX_KERNELS];
	static struct simgpu_times times[MAX_KERNELS];
	void **bufs;
	void *host = NULL, *dev_copy = NULL;
	int nk = 0, pageable_copies = 0;
	FILE *f;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--busy-ms"))
			busy_ms = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--idle-ms"))
			idle_ms = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--pageable-ms"))
			pageable_ms = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--hold-ms"))
			hold_ms = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--phases"))
			phases = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--alloc-mb"))
			alloc_mb = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--copy-mb"))
			copy_mb = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--barrier"))
			barrier = argv[i + 1];
		else if (!strcmp(argv[i], "--peers"))
			peers = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--ref"))
			ref = argv[i + 1];
	}
	bufs = calloc(alloc_mb ? alloc_mb : 1, sizeof(*bufs));
	for (int i = 0; i < alloc_mb; i++) {
		cudaError_t e = cudaMalloc(&bufs[i], 1 << 20);

		if (e)
			die("cudaMalloc", e);
	}
	if (copy_mb) {
		cudaError_t e = cudaMallocHost(&host, (size_t)copy_mb << 20);

		if (e || (e = cudaMalloc(&dev_copy, (size_t)copy_mb << 20)) ||
		    (e = cudaMemcpy(dev_copy, host, (size_t)copy_mb << 20, cudaMemcpyHostToDevice)))
			die("copy", e);
	}
	if (barrier) {
		char path[512];

		snprintf(path, sizeof(path), "%s/ready-%d", barrier, (int)getpid());
		fclose(fopen(path, "w"));
		while (peers_ready(barrier) < peers)
			sleep_ms(1);
	}
	for (int p = 0; p < phases; p++) {
		/* kernels of SIMGPU_KERNEL_US each, queued ahead so the stream never starves */
		int n = (int)(busy_ms * 1000 /
			      atof(getenv("SIMGPU_KERNEL_US") ? getenv("SIMGPU_KERNEL_US") : "20"));

		for (int k = 0; k < n && nk < MAX_KERNELS; k++) {
			dim3 one = { 1, 1, 1 };
			cudaError_t e =
				cudaLaunchKernel((const void *)nvml_busy, one, one, NULL, 0, 0);

			if (e)
				die("cudaLaunchKernel", e);
			ops[nk++] = simgpu_op_last();
		}
		cudaDeviceSynchronize();
		sleep_ms(idle_ms);
	}
	if (pageable_ms > 0) {
		size_t len = 4u << 20;
		char *src = malloc(len);
		void *dst;
		struct timespec t0, t;
		cudaError_t e;

		if (!src || (e = cudaMalloc(&dst, len)))
			die("pageable buffers", src ? e : cudaErrorMemoryAllocation);
		memset(src, 1, len);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			if ((e = cudaMemcpy(dst, src, len, cudaMemcpyHostToDevice)))
				die("pageable cudaMemcpy", e);
			pageable_copies++;
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 <
			 pageable_ms);
		cudaFree(dst);
		free(src);
	}
	sleep_ms(hold_ms);
	for (int k = 0; k < nk; k++) {
		simgpu_op_wait(ops[k], &times[k]);
		simgpu_op_put(ops[k]);
	}
	for (int i = 0; i < alloc_mb; i++)
		cudaFree(bufs[i]);
	if (copy_mb) {
		cudaFree(dev_copy);
		cudaFreeHost(host);
	}
	if (ref) {
		char path[512];

		snprintf(path, sizeof(path), "%s.%d", ref, (int)getpid());
		f = fopen(path, "w");
		if (!f)
			return 1;
		fprintf(f,
			"{\"pid\":%d,\"allocated_bytes\":%llu,\"copied_htod_bytes\":%llu,\"pageable_copies\":%d,\"kernels\":[",
			(int)getpid(), (unsigned long long)alloc_mb << 20,
			(unsigned long long)copy_mb << 20, pageable_copies);
		for (int k = 0; k < nk; k++)
			fprintf(f, "%s[%llu,%llu]", k ? "," : "",
				(unsigned long long)times[k].start_ns,
				(unsigned long long)times[k].end_ns);
		fputs("]}\n", f);
		fclose(f);
	}
	return 0;
}
