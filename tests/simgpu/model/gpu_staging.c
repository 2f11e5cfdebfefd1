/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_staging.c — the host buffers asynchronous copies from pageable memory
 * are staged through (the snapshot the caller's source is copied into before
 * the call returns), kept for reuse as the real driver keeps its pinned
 * staging buffers. (A synchronous copy's staging overlaps its modelled
 * transfer, faults included, and replay's pinned what-if is measured against
 * that: it stays malloc'ed per call, gpu_ops.c.)
 *
 * Why not malloc and free each time: a buffer of MiBs is mmap'ed afresh by
 * glibc (its dynamic threshold moves with what was freed before), and every
 * one of its pages faults in again inside the copy call. On a virtual machine
 * a fault costs several µs, varying with the host: 1,024 of them added 5 to
 * 7 ms to a 4 MiB asynchronous copy, on the caller, at random, a host cost
 * the timing model does not have (what made replay's async-copies what-if
 * measure no saving in one run of ten).
 */
#include <pthread.h>
#include <stdlib.h>

#include "gpu_internal.h"

#define KEEP_BUFFERS 16		    /* buffers kept at most ... */
#define KEEP_BYTES   (256ull << 20) /* ... and bytes in them */
#define HEADER	     16		    /* the buffer's size, before what the caller gets */

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static void *pool[KEEP_BUFFERS];
static size_t npool;
static unsigned long long pool_bytes;

static size_t size_of(void *buf)
{
	return *(size_t *)((char *)buf - HEADER);
}

void *sg_staging_get(size_t bytes)
{
	void *best = NULL;
	size_t at = 0;
	char *raw;

	pthread_mutex_lock(&pool_mu);
	for (size_t i = 0; i < npool; i++) /* the smallest that fits */
		if (size_of(pool[i]) >= bytes && (!best || size_of(pool[i]) < size_of(best))) {
			best = pool[i];
			at = i;
		}
	if (best) {
		pool[at] = pool[--npool];
		pool_bytes -= size_of(best);
	}
	pthread_mutex_unlock(&pool_mu);
	if (best)
		return best;
	raw = malloc(HEADER + (bytes ? bytes : 1));
	if (!raw)
		return NULL;
	*(size_t *)raw = bytes;
	return raw + HEADER;
}

void sg_staging_put(void *buf)
{
	size_t bytes;

	if (!buf)
		return;
	bytes = size_of(buf);
	pthread_mutex_lock(&pool_mu);
	if (npool < KEEP_BUFFERS && pool_bytes + bytes <= KEEP_BYTES) {
		pool[npool++] = buf;
		pool_bytes += bytes;
		buf = NULL;
	}
	pthread_mutex_unlock(&pool_mu);
	if (buf)
		free((char *)buf - HEADER);
}
