// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nvcc_stackmain.cu — the executable of the nvcc call-stack test: links
 * libnvstack.so (nvcc_stacklib.cu) and launches its two kernels through it.
 * Before the handshake it launches each kernel PRE times, so the stubs' kernel
 * handles (__cudaGetKernel, cached in __device_stub__*::__handle) exist before a
 * tracer attaches with --pid; after the go line, SCALE launches of stk::scale<float>
 * from scale_phase and FILL launches of nv_fill from fill_phase, then one device
 * synchronisation from main. Handshake as the C workloads: "READY <pid>", a line
 * on stdin, then one JSON line with what it did (its reference: counts, kernel
 * names, the functions each launch path passes through, leaf first) and "DONE".
 * Built by the e2e test with nvcc -cudart shared -Xcompiler -fno-omit-frame-pointer.
 */
#include <cstdio>
#include <unistd.h>

#include "frames.h"

extern "C" {
float *nvs_setup(int n);
int nvs_launch_scale(float *d, int n);
int nvs_launch_fill(float *d, int n);
int nvs_sync(void);
}

#define PRE 2
#define SCALE 5
#define FILL 3
#define N 1024

static SP_FRAME void scale_phase(float *d, int times, int *ok, int *err)
{
	for (int i = 0; i < times; i++) {
		(nvs_launch_scale(d, N) == 0 ? *ok : *err) += 1;
		SP_KEEP();
	}
}

static SP_FRAME void fill_phase(float *d, int times, int *ok, int *err)
{
	for (int i = 0; i < times; i++) {
		(nvs_launch_fill(d, N) == 0 ? *ok : *err) += 1;
		SP_KEEP();
	}
}

int main()
{
	char line[16];
	int pre_ok = 0, pre_err = 0, scale_ok = 0, scale_err = 0, fill_ok = 0, fill_err = 0, sync;
	float *d = nvs_setup(N);

	scale_phase(d, PRE, &pre_ok, &pre_err);
	fill_phase(d, PRE, &pre_ok, &pre_err);
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	scale_phase(d, SCALE, &scale_ok, &scale_err);
	fill_phase(d, FILL, &fill_ok, &fill_err);
	sync = nvs_sync();
	printf("{\"pre_ok\": %d, \"pre_err\": %d, \"scale_ok\": %d, \"scale_err\": %d, \"fill_ok\": %d, "
	       "\"fill_err\": %d, \"sync_err\": %d, "
	       "\"scale\": {\"kernel\": \"void stk::scale<float>(float*, float, int)\", \"op\": \"[kernel] stk::scale<float>\", "
	       "\"functions\": [\"nvs_launch_scale\", \"scale_phase\", \"main\"]}, "
	       "\"fill\": {\"kernel\": \"nv_fill(float*, int)\", \"op\": \"[kernel] nv_fill\", "
	       "\"functions\": [\"nvs_launch_fill\", \"fill_phase\", \"main\"]}, "
	       "\"sync\": {\"op\": \"[sync]\", \"functions\": [\"nvs_sync\", \"main\"]}}\n",
	       pre_ok, pre_err, scale_ok, scale_err, fill_ok, fill_err, sync);
	printf("DONE\n");
	fflush(stdout);
	return 0;
}
