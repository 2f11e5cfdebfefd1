/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_model_transfers.c — copies and memsets through gp_model_ingest():
 * every copy shape (1D, 2D, peer; sync and async), direction from the
 * cudaMemcpyKind, host memory kind from the pinned/managed ranges,
 * cudaMemcpyDefault resolution, failed copies, size histogram, memsets;
 * the live allocations (registrations left out).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "records.h"

#define DEV	0x700000000000ULL /* a cudaMalloc'ed block of 1 MiB */
#define MANAGED 0x710000000000ULL /* cudaMallocManaged, 1 MiB */
#define PINNED	0x7f0000000000ULL /* cudaMallocHost, 1 MiB */
#define REGD	0x7f1000000000ULL /* cudaHostRegister'ed, 1 MiB */
#define HEAP	0x5555aaaa0000ULL /* plain malloc: pageable */
#define STREAM	0x5555bbbb0000ULL

static struct gp_model *setup_model(void)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	assert_non_null(m);
	assert_int_equal(gp_model_process_add(m, T_PID, "t", "t", 1, true), 0);
	c = rec_alloc(GP_API_CUDA_MALLOC, T_TID, DEV, 1 << 20, 0);
	feed(m, &c);
	c = rec_alloc(GP_API_CUDA_MALLOC_MANAGED, T_TID, MANAGED, 1 << 20, 0);
	feed(m, &c);
	c = rec_alloc(GP_API_CUDA_MALLOC_HOST, T_TID, PINNED, 1 << 20, 0);
	feed(m, &c);
	c = rec_ptr(GP_API_CUDA_HOST_REGISTER, T_TID, REGD, 1 << 20, 0);
	feed(m, &c);
	return m;
}

static const struct gp_xfer_row *row(struct gp_model *m, enum gp_dir d, enum gp_hostmem h,
				     bool sync)
{
	return &proc(m, T_PID)->xfer[d][h][sync];
}

static __u64 total_calls(struct gp_model *m)
{
	__u64 n = 0;

	for (int d = 0; d < GP_DIR_MAX; d++)
		for (int h = 0; h < GP_HM_MAX; h++)
			n += row(m, d, h, true)->calls + row(m, d, h, false)->calls;
	return n;
}

static void explicit_kinds_and_host_memory(void **state)
{
	struct gp_model *m = setup_model();
	struct gp_api_call c;

	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV, HEAP, 4096, GP_MEMCPY_HTOD, 0, 1000, 0);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV, HEAP, 100, GP_MEMCPY_HTOD, 0, 500, 0);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV, PINNED + 64, 8192, GP_MEMCPY_HTOD, 0, 100, 0);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY, REGD + 10, DEV, 300, GP_MEMCPY_DTOH, 0, 100, 0);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY_ASYNC, HEAP, DEV, 1000, GP_MEMCPY_DTOH, STREAM, 5, 0);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV + 4096, DEV, 4096, GP_MEMCPY_DTOD, 0, 50, 0);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV, MANAGED, 64, GP_MEMCPY_HTOD, 0, 50, 0);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY, HEAP, PINNED, 10, GP_MEMCPY_HTOH, 0, 50,
		       0); /* source's kind */
	feed(m, &c);

	const struct gp_xfer_row *r = row(m, GP_DIR_HTOD, GP_HM_PAGEABLE, true);

	assert_int_equal(r->calls, 2);
	assert_int_equal(r->bytes, 4196);
	assert_int_equal(r->min_bytes, 100);
	assert_int_equal(r->max_bytes, 4096);
	assert_int_equal(r->total_ns, 1500);
	assert_int_equal(r->size_hist[gp_size_bucket(4096)], 1);
	assert_int_equal(r->size_hist[gp_size_bucket(100)], 1);
	assert_int_equal(row(m, GP_DIR_HTOD, GP_HM_PINNED, true)->bytes, 8192);
	assert_int_equal(row(m, GP_DIR_DTOH, GP_HM_PINNED, true)->bytes,
			 300); /* registered counts as pinned */
	assert_int_equal(row(m, GP_DIR_DTOH, GP_HM_PAGEABLE, false)->bytes, 1000);
	assert_int_equal(row(m, GP_DIR_DTOH, GP_HM_PAGEABLE, true)->calls, 0);
	assert_int_equal(row(m, GP_DIR_DTOD, GP_HM_DEVICE, true)->bytes, 4096);
	assert_int_equal(row(m, GP_DIR_HTOD, GP_HM_MANAGED, true)->bytes, 64);
	assert_int_equal(row(m, GP_DIR_HTOH, GP_HM_PINNED, true)->bytes, 10);
	assert_int_equal(total_calls(m), 8);
	gp_model_free(m);
}

static void default_kind_is_resolved_from_pointers(void **state)
{
	struct gp_model *m = setup_model();
	struct gp_api_call c;

	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV, HEAP, 1, GP_MEMCPY_DEFAULT, 0, 10, 0);
	feed(m, &c); /* HtoD pageable */
	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV, PINNED, 2, GP_MEMCPY_DEFAULT, 0, 10, 0);
	feed(m, &c); /* HtoD pinned */
	c = rec_memcpy(GP_API_CUDA_MEMCPY, HEAP, DEV + 5, 4, GP_MEMCPY_DEFAULT, 0, 10, 0);
	feed(m, &c); /* DtoH pageable */
	c = rec_memcpy(GP_API_CUDA_MEMCPY, REGD, MANAGED, 8, GP_MEMCPY_DEFAULT, 0, 10, 0);
	feed(m, &c); /* managed is the device side: DtoH pinned */
	c = rec_memcpy(GP_API_CUDA_MEMCPY, MANAGED, DEV, 16, GP_MEMCPY_DEFAULT, 0, 10, 0);
	feed(m, &c); /* DtoD */
	c = rec_memcpy(GP_API_CUDA_MEMCPY, PINNED, REGD, 32, GP_MEMCPY_DEFAULT, 0, 10, 0);
	feed(m, &c); /* HtoH pinned */
	c = rec_memcpy(GP_API_CUDA_MEMCPY, HEAP, PINNED, 64, GP_MEMCPY_DEFAULT, 0, 10, 0);
	feed(m, &c); /* unknown side may be device memory: unresolved */
	c = rec_memcpy(GP_API_CUDA_MEMCPY, HEAP, HEAP + 4096, 128, GP_MEMCPY_DEFAULT, 0, 10, 0);
	feed(m, &c); /* nothing known */
	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV, HEAP, 256, 77, 0, 10, 0);
	feed(m, &c); /* a kind the runtime does not define: treated as Default */

	assert_int_equal(row(m, GP_DIR_HTOD, GP_HM_PAGEABLE, true)->bytes, 1 + 256);
	assert_int_equal(row(m, GP_DIR_HTOD, GP_HM_PINNED, true)->bytes, 2);
	assert_int_equal(row(m, GP_DIR_DTOH, GP_HM_PAGEABLE, true)->bytes, 4);
	assert_int_equal(row(m, GP_DIR_DTOH, GP_HM_PINNED, true)->bytes, 8);
	assert_int_equal(row(m, GP_DIR_DTOD, GP_HM_DEVICE, true)->bytes, 16);
	assert_int_equal(row(m, GP_DIR_HTOH, GP_HM_PINNED, true)->bytes, 32);
	assert_int_equal(row(m, GP_DIR_DEFAULT, GP_HM_UNKNOWN, true)->bytes, 64 + 128);
	assert_int_equal(row(m, GP_DIR_DEFAULT, GP_HM_UNKNOWN, true)->calls, 2);
	assert_int_equal(total_calls(m), 9);
	gp_model_free(m);
}

static void freed_ranges_no_longer_classify(void **state)
{
	struct gp_model *m = setup_model();
	struct gp_api_call c;

	c = rec_ptr(GP_API_CUDA_FREE_HOST, T_TID, PINNED, 0, 0);
	feed(m, &c);
	c = rec_ptr(GP_API_CUDA_HOST_UNREGISTER, T_TID, REGD, 0, 0);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV, PINNED, 10, GP_MEMCPY_HTOD, 0, 10, 0);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY, REGD, DEV, 20, GP_MEMCPY_DTOH, 0, 10, 0);
	feed(m, &c);
	assert_int_equal(row(m, GP_DIR_HTOD, GP_HM_PAGEABLE, true)->bytes, 10);
	assert_int_equal(row(m, GP_DIR_DTOH, GP_HM_PAGEABLE, true)->bytes, 20);
	gp_model_free(m);
}

/* Live allocations: registrations are not the process's memory; with only those left, none (and nothing to free). */
static void live_allocations_leave_out_registrations(void **state)
{
	struct gp_model *m = setup_model();
	const struct gp_alloc **live;
	struct gp_api_call c;
	size_t n;

	assert_int_equal(gp_memory_live(proc(m, T_PID), &live, &n), 0);
	assert_int_equal(n, 3);
	free(live);
	c = rec_ptr(GP_API_CUDA_FREE, T_TID, DEV, 0, 0);
	feed(m, &c);
	c = rec_ptr(GP_API_CUDA_FREE, T_TID, MANAGED, 0, 0);
	feed(m, &c);
	c = rec_ptr(GP_API_CUDA_FREE_HOST, T_TID, PINNED, 0, 0);
	feed(m, &c);
	live = (const struct gp_alloc **)&n; /* not NULL before the call */
	assert_int_equal(gp_memory_live(proc(m, T_PID), &live, &n), 0);
	assert_int_equal(n, 0);
	assert_null(live);
	gp_model_free(m);
}

static void shapes_2d_peer_and_failures(void **state)
{
	struct gp_model *m = setup_model();
	struct gp_api_call c;

	c = rec_memcpy2d(GP_API_CUDA_MEMCPY_2D, DEV, HEAP, 640, 480, GP_MEMCPY_HTOD, 0);
	feed(m, &c);
	c = rec_memcpy2d(GP_API_CUDA_MEMCPY_2D_ASYNC, PINNED, DEV, 100, 3, GP_MEMCPY_DTOH, STREAM);
	feed(m, &c);
	c = rec_memcpy2d(GP_API_CUDA_MEMCPY_2D_ASYNC, PINNED, DEV, 10, 10, GP_MEMCPY_HTOD, STREAM);
	c.hdr.flags |= GP_EVF_ARGS_PARTIAL; /* kind unreadable: resolved from the pointers */
	feed(m, &c);
	c = rec_peer(GP_API_CUDA_MEMCPY_PEER, DEV, 0x720000000000ULL, 5000, 0);
	feed(m, &c);
	c = rec_peer(GP_API_CUDA_MEMCPY_PEER_ASYNC, DEV, 0x720000000000ULL, 7000, STREAM);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV, HEAP, 999999, GP_MEMCPY_HTOD, 0, 10, 35);
	feed(m, &c); /* failed: no transfer, one API error */
	c = rec_memcpy(GP_API_CUDA_MEMCPY_ASYNC_PTSZ, DEV, HEAP, 999999, GP_MEMCPY_HTOD, 0, 10, 1);
	feed(m, &c);

	assert_int_equal(row(m, GP_DIR_HTOD, GP_HM_PAGEABLE, true)->bytes, 640 * 480);
	assert_int_equal(row(m, GP_DIR_DTOH, GP_HM_PINNED, false)->bytes, 300 + 100);
	assert_int_equal(row(m, GP_DIR_DTOH, GP_HM_PINNED, false)->calls, 2);
	assert_int_equal(row(m, GP_DIR_PTOP, GP_HM_DEVICE, true)->bytes, 5000);
	assert_int_equal(row(m, GP_DIR_PTOP, GP_HM_DEVICE, false)->bytes, 7000);
	assert_int_equal(total_calls(m), 5);
	assert_int_equal(proc(m, T_PID)->api[GP_API_CUDA_MEMCPY]->errors, 1);
	assert_int_equal(proc(m, T_PID)->api[GP_API_CUDA_MEMCPY_ASYNC_PTSZ]->errors, 1);
	gp_model_free(m);
}

/* The kind is an int: the upper half of its register or stack slot is whatever was there. */
static void kind_ignores_upper_half_of_its_slot(void **state)
{
	struct gp_model *m = setup_model();
	struct gp_api_call c;

	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV, PINNED, 4096, GP_MEMCPY_HTOD, 0, 10, 0);
	c.args[3] |= 0xdeadbeef00000000ULL;
	feed(m, &c);
	c = rec_memcpy2d(GP_API_CUDA_MEMCPY_2D, HEAP, DEV, 64, 2, GP_MEMCPY_DTOH, 0);
	c.args[6] |= 0x7fff000000000000ULL;
	feed(m, &c);
	assert_int_equal(row(m, GP_DIR_HTOD, GP_HM_PINNED, true)->bytes, 4096);
	assert_int_equal(row(m, GP_DIR_DTOH, GP_HM_PAGEABLE, true)->bytes, 128);
	assert_int_equal(total_calls(m), 2);
	gp_model_free(m);
}

static void memsets(void **state)
{
	struct gp_model *m = setup_model();
	struct gp_api_call c;

	c = rec_memset(GP_API_CUDA_MEMSET, DEV, 4096, 0, 0);
	feed(m, &c);
	c = rec_memset(GP_API_CUDA_MEMSET_ASYNC, DEV, 100, STREAM, 0);
	feed(m, &c);
	c = rec_memset(GP_API_CUDA_MEMSET_ASYNC_PTSZ, DEV, 200, 0, 0);
	feed(m, &c);
	c = rec_memset(GP_API_CUDA_MEMSET, DEV, 5, 0, 1); /* failed */
	feed(m, &c);

	const struct gp_process *p = proc(m, T_PID);

	assert_int_equal(p->memsets[1].calls, 1);
	assert_int_equal(p->memsets[1].bytes, 4096);
	assert_int_equal(p->memsets[0].calls, 2);
	assert_int_equal(p->memsets[0].bytes, 300);
	assert_int_equal(total_calls(m), 0); /* memsets are not transfers */
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(explicit_kinds_and_host_memory),
		cmocka_unit_test(default_kind_is_resolved_from_pointers),
		cmocka_unit_test(freed_ranges_no_longer_classify),
		cmocka_unit_test(shapes_2d_peer_and_failures),
		cmocka_unit_test(kind_ignores_upper_half_of_its_slot),
		cmocka_unit_test(memsets),
		cmocka_unit_test(live_allocations_leave_out_registrations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
