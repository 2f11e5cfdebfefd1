/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench_pingpong — two threads passing a byte back and forth over two
 * pipes: every round trip is two context switches (or two wakeups across
 * CPUs). The overhead benchmark runs it untraced while gpuprobed traces
 * another process, to measure what the scheduler tracepoint costs
 * everybody else. Prints ns per round trip as one JSON line.
 *
 * usage: bench_pingpong [--rounds N]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static long rounds = 100000;

static void *echo(void *arg)
{
	char c;

	(void)arg;
	for (long i = 0; i < rounds; i++)
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
			exit(3);
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	pthread_t th;
	char c = 'x';

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atol(argv[++i]);
	if (rounds < 1 || pipe(ab) || pipe(ba) || pthread_create(&th, NULL, echo, NULL))
		return 3;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < rounds; i++)
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			return 3;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(th, NULL);
	printf("{\"rounds\": %ld, \"roundtrip_ns\": %.1f}\n", rounds,
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
		       (double)rounds);
	return 0;
}
