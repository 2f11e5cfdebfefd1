/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * hold_exit.c — one CUDA call, then exit with the status its argument names
 * (99 if the call failed). The tests of holds (tests/e2e/test_holds.py)
 * start fresh copies of it, each a file gpuprobed has not seen, so each
 * exec is held, and check that a hold cut short (a killed or stuck
 * gpuprobed) still lets it end with its own status.
 */
#include <stdlib.h>

#include <cuda_runtime.h>

int main(int argc, char **argv)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1)
		return 99;
	return argc > 1 ? atoi(argv[1]) : 0;
}
