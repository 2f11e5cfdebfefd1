/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fork_workers — a process tree for following children: the parent forks N
 * workers before making any CUDA call of its own (a process with simulator
 * or driver threads must not fork and use CUDA in the child), each worker
 * makes a different, exactly known mix of calls and writes its own
 * reference, then the parent waits for them all, makes its own calls and
 * exits with a chosen status (the tracer must pass it through). With --exec,
 * worker 0 execs a program instead (following exec).
 *
 * usage: fork_workers [--workers N] [--ref-dir DIR] [--exit-status S]
 *                     [--wait] [--hold] [--exec PROG ARGS...]
 *   --workers N      default 4 (1..64)
 *   --ref-dir DIR    each process writes DIR/<pid>.json (wl.h's reference);
 *                    an exec'd worker 0 writes none of its own
 *   --exit-status S  the parent's exit status when everything went well
 *                    (default 0); 3 if a worker failed
 *   --exec PROG ...  everything after it: worker 0 runs execvp(PROG, ...)
 * Worker i (0-based) makes: cudaMalloc of (i+1) x 64 KiB; 2(i+1) pageable
 * copies, copy k (0-based) of (k+1) x 4 KiB, HtoD for even k, DtoH for odd
 * k; i+1 launches of worker_kernel; cudaDeviceSynchronize; cudaFree.
 * The parent makes: cudaMalloc 1 MiB, HtoD 1 MiB, DtoH 512 KiB, 5 launches
 * of parent_kernel, cudaDeviceSynchronize, cudaFree.
 * stdout: [READY <pid>], "PROC <pid> parent", then "PROC <pid> worker" (or
 * "PROC <pid> exec" for an exec'd worker 0) per worker in index order, and
 * DONE from the parent at the end (an exec'd program prints its own lines).
 */
#include <limits.h>
#include <sys/wait.h>

#include "wl.h"

#define KiB	    1024ull
#define MAX_WORKERS 64

__attribute__((noinline)) void worker_kernel(float *a, int n)
{
	for (int i = 0; i < n; i++)
		a[i] += 1;
}

__attribute__((noinline)) void parent_kernel(float *a, int n)
{
	for (int i = 0; i < n; i++)
		a[i] *= 3;
}

static void launch(const void *fn, const char *name, void *dev)
{
	float *p = dev;
	int n = 64;
	void *args[] = { &p, &n };

	if (WL(cudaLaunchKernel, fn, (dim3){ 4, 1, 1 }, (dim3){ 64, 1, 1 }, args, 0, NULL) ==
	    cudaSuccess) {
		wl_launched(name);
		wl_stream_work(NULL, false, WL_KERNEL, 0);
	}
}

/* A synchronous copy between pageable host memory and the device. */
static void copy(void *dst, const void *src, unsigned long long bytes, enum cudaMemcpyKind kind)
{
	if (WL(cudaMemcpy, dst, src, bytes, kind) == cudaSuccess) {
		wl_transfer(kind == cudaMemcpyHostToDevice ? "HtoD" : "DtoH", "pageable", true,
			    bytes);
		wl_stream_work(NULL, false, WL_COPY, bytes);
	}
}

static void write_own_ref(const char *ref_dir)
{
	char path[PATH_MAX];

	if (!ref_dir)
		return;
	snprintf(path, sizeof(path), "%s/%d.json", ref_dir, (int)getpid());
	wl_write_ref_file(path);
}

/* Runs in the forked child: its own calls, its own reference. */
static void run_worker(int index, const char *ref_dir)
{
	unsigned long long bytes = (index + 1) * 64 * KiB;
	char *host = calloc(1, bytes);
	void *dev = NULL;

	if (!host)
		wl_die("out of memory");
	wl_set_device(0); /* its device is then observed, not assumed (report: devices[]) */
	if (WL(cudaMalloc, &dev, bytes) == cudaSuccess)
		wl_allocated(WL_DEVICE, dev, bytes);
	for (int k = 0; k < 2 * (index + 1); k++) {
		if (k % 2 == 0)
			copy(dev, host, (k + 1) * 4 * KiB, cudaMemcpyHostToDevice);
		else
			copy(host, dev, (k + 1) * 4 * KiB, cudaMemcpyDeviceToHost);
	}
	for (int k = 0; k < index + 1; k++)
		launch((const void *)worker_kernel, "worker_kernel", dev);
	WL(cudaDeviceSynchronize);
	if (WL(cudaFree, dev) == cudaSuccess)
		wl_freed(dev);
	wl.counting = false;
	write_own_ref(ref_dir);
	free(host);
}

static void run_parent(void)
{
	char *host = calloc(1, 1024 * KiB);
	void *dev = NULL;

	if (!host)
		wl_die("out of memory");
	wl_set_device(0);
	if (WL(cudaMalloc, &dev, 1024 * KiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, dev, 1024 * KiB);
	copy(dev, host, 1024 * KiB, cudaMemcpyHostToDevice);
	copy(host, dev, 512 * KiB, cudaMemcpyDeviceToHost);
	for (int k = 0; k < 5; k++)
		launch((const void *)parent_kernel, "parent_kernel", dev);
	WL(cudaDeviceSynchronize);
	if (WL(cudaFree, dev) == cudaSuccess)
		wl_freed(dev);
	free(host);
}

int main(int argc, char **argv)
{
	int nworkers = 4, exit_status = 0, own_argc = argc, failed = 0;
	const char *ref_dir = NULL;
	char **exec_argv = NULL, parent_ref[PATH_MAX];
	pid_t pids[MAX_WORKERS];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--exec") && i + 1 < argc) {
			exec_argv = &argv[i + 1];
			own_argc = i;
			break;
		} else if (!strcmp(argv[i], "--workers") && i + 1 < argc) {
			nworkers = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--ref-dir") && i + 1 < argc) {
			ref_dir = argv[++i];
		} else if (!strcmp(argv[i], "--exit-status") && i + 1 < argc) {
			exit_status = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--wait") && strcmp(argv[i], "--hold")) {
			wl_die("usage: fork_workers [--workers N] [--ref-dir DIR] [--exit-status S] [--wait] "
			       "[--hold] [--exec PROG ARGS...]");
		}
	}
	if (nworkers < 1 || nworkers > MAX_WORKERS)
		wl_die("--workers must be 1..%d", MAX_WORKERS);
	wl_init(own_argc, argv); /* --wait, --hold: the parent's; PROG's own options stay PROG's */

	wl_begin(); /* no CUDA call before the forks: counting starts empty in every worker */
	printf("PROC %d parent\n", (int)getpid());
	for (int i = 0; i < nworkers; i++) {
		fflush(stdout); /* nothing buffered may be printed twice */
		pids[i] = fork();
		if (pids[i] < 0)
			wl_die("fork: %s", strerror(errno));
		if (pids[i] == 0) {
			if (i == 0 && exec_argv) {
				execvp(exec_argv[0], exec_argv);
				wl_die("exec %s: %s", exec_argv[0], strerror(errno));
			}
			run_worker(i, ref_dir);
			exit(0);
		}
		printf("PROC %d %s\n", (int)pids[i], i == 0 && exec_argv ? "exec" : "worker");
	}
	fflush(stdout);
	for (int i = 0; i < nworkers; i++) {
		int status;

		if (waitpid(pids[i], &status, 0) < 0)
			wl_die("waitpid %d: %s", (int)pids[i], strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "workload: worker %d (pid %d) failed: status 0x%x\n", i,
				(int)pids[i], status);
			failed = 1;
		}
	}
	if (failed)
		exit(3);

	run_parent();
	if (ref_dir) {
		snprintf(parent_ref, sizeof(parent_ref), "%s/%d.json", ref_dir, (int)getpid());
		wl.ref_path = parent_ref;
	}
	wl_end();
	return exit_status;
}
