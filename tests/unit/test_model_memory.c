/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_model_memory.c — allocations through gp_model_ingest(): per-device
 * live and peak bytes (the device is the calling thread's last successful
 * cudaSetDevice, -1 when never seen), untracked frees, cudaFree(NULL),
 * failed and unreadable allocations, pinned host memory and registrations,
 * stale ranges, and leaks (only once the process has exited).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "records.h"

#define A 0x700000000000ULL
#define B 0x700000100000ULL
#define C 0x700000200000ULL

static void set_device(struct gp_model *m, __u32 tid, int dev, int ret)
{
	struct gp_api_call c = rec_h(GP_API_CUDA_SET_DEVICE, tid,
				     (__u64)(__u32)dev | 0xdead00000000ULL, 0, 5, ret);

	feed(m, &c); /* the upper half of rdi is garbage: int is in edi */
}

static void alloc(struct gp_model *m, enum gp_api_id api, __u32 tid, __u64 ptr, __u64 bytes)
{
	struct gp_api_call c = rec_alloc(api, tid, ptr, bytes, 0);

	feed(m, &c);
}

static void xfree(struct gp_model *m, enum gp_api_id api, __u32 tid, __u64 ptr)
{
	struct gp_api_call c = rec_ptr(api, tid, ptr, 0, 0);

	feed(m, &c);
}

static void per_device_live_and_peak(void **state)
{
	struct gp_model *m = gp_model_new(NULL);

	set_device(m, 1, 0, 0);
	set_device(m, 2, 1, 0);
	set_device(m, 2, 3, 101); /* failed: thread 2 stays on device 1 */
	alloc(m, GP_API_CUDA_MALLOC, 1, A, 1000);
	alloc(m, GP_API_CUDA_MALLOC_ASYNC, 2, B, 500);
	alloc(m, GP_API_CUDA_MALLOC_MANAGED, 3, C, 200); /* thread 3 never set a device */
	xfree(m, GP_API_CUDA_FREE, 2, A); /* freed by another thread: still device 0's */
	alloc(m, GP_API_CUDA_MALLOC, 1, A, 300);
	xfree(m, GP_API_CUDA_FREE_ASYNC, 1, B);

	const struct gp_memory *mem = &proc(m, T_PID)->mem;
	const struct gp_mem_counts *d0 = gp_memory_device(mem, 0), *d1 = gp_memory_device(mem, 1);
	const struct gp_mem_counts *dn = gp_memory_device(mem, -1);

	assert_non_null(d0);
	assert_non_null(d1);
	assert_non_null(dn);
	assert_null(gp_memory_device(mem, 3));
	assert_int_equal(d0->alloc_calls, 2);
	assert_int_equal(d0->free_calls, 1);
	assert_int_equal(d0->alloc_bytes, 1300);
	assert_int_equal(d0->freed_bytes, 1000);
	assert_int_equal(d0->live_bytes, 300);
	assert_int_equal(d0->peak_bytes, 1000);
	assert_int_equal(d1->live_bytes, 0);
	assert_int_equal(d1->peak_bytes, 500);
	assert_int_equal(dn->live_bytes, 200);
	assert_int_equal(mem->total.alloc_calls, 4);
	assert_int_equal(mem->total.free_calls, 2);
	assert_int_equal(mem->total.live_bytes, 500);
	assert_int_equal(mem->total.peak_bytes, 1700); /* A + B + C, before A was freed */
	assert_int_equal(mem->managed_alloc_calls, 1);
	assert_int_equal(mem->managed_alloc_bytes, 200);
	gp_model_free(m);
}

static void untracked_and_null_frees(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	xfree(m, GP_API_CUDA_FREE, 1, 0); /* cudaFree(NULL): context creation idiom, not a free */
	xfree(m, GP_API_CUDA_FREE, 1, A); /* allocated before tracing */
	xfree(m, GP_API_CUDA_FREE_HOST, 1, 0x7f0000000000ULL);
	c = rec_ptr(GP_API_CUDA_FREE, 1, B, 0, 1); /* failed free: nothing */
	feed(m, &c);

	const struct gp_memory *mem = &proc(m, T_PID)->mem;

	assert_int_equal(mem->untracked_frees, 1);
	assert_int_equal(mem->total.free_calls, 1);
	assert_int_equal(mem->total.freed_bytes, 0);
	assert_int_equal(mem->pinned_untracked_frees, 1);
	assert_int_equal(mem->total.live_bytes, 0);
	gp_model_free(m);
}

static void failed_and_unreadable_allocations(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	c = rec_alloc(GP_API_CUDA_MALLOC, 1, A, 1 << 30, 2); /* cudaErrorMemoryAllocation */
	feed(m, &c);
	c = rec_alloc(GP_API_CUDA_MALLOC, 1, A, 100, 0);
	c.hdr.flags &= ~GP_EVF_OUT_VALID; /* the pointer could not be read */
	feed(m, &c);
	c = rec_alloc(GP_API_CUDA_MALLOC, 1, 0, 0, 0); /* size 0 gives NULL */
	feed(m, &c);

	const struct gp_process *p = proc(m, T_PID);

	assert_int_equal(p->mem.total.alloc_calls, 0);
	assert_int_equal(p->api[GP_API_CUDA_MALLOC]->time.count, 3);
	assert_int_equal(p->api[GP_API_CUDA_MALLOC]->errors, 1);
	assert_int_equal(gp_model_drop_get(m, "alloc_out_unread"), 1);
	gp_model_free(m);
}

static void pinned_and_registered(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	alloc(m, GP_API_CUDA_MALLOC_HOST, 1, 0x7f0000000000ULL, 4096);
	alloc(m, GP_API_CUDA_HOST_ALLOC, 1, 0x7f0000100000ULL, 8192);
	c = rec_ptr(GP_API_CUDA_HOST_REGISTER, 1, 0x7f0000200000ULL, 65536, 0);
	feed(m, &c);
	xfree(m, GP_API_CUDA_FREE_HOST, 1, 0x7f0000000000ULL);
	xfree(m, GP_API_CUDA_FREE_HOST, 1,
	      0x7f0000200000ULL); /* a registration is not freed by cudaFreeHost */
	xfree(m, GP_API_CUDA_HOST_UNREGISTER, 1,
	      0x7f0000100000ULL); /* nor an allocation unregistered */
	xfree(m, GP_API_CUDA_HOST_UNREGISTER, 1, 0x7f0000200000ULL);

	const struct gp_memory *mem = &proc(m, T_PID)->mem;

	assert_int_equal(mem->pinned.alloc_calls, 2);
	assert_int_equal(mem->pinned.alloc_bytes, 12288);
	assert_int_equal(mem->pinned.free_calls, 2);
	assert_int_equal(mem->pinned.freed_bytes, 4096);
	assert_int_equal(mem->pinned.live_bytes, 8192);
	assert_int_equal(mem->pinned.peak_bytes, 12288);
	assert_int_equal(mem->pinned_untracked_frees, 1);
	assert_int_equal(mem->register_calls, 1);
	assert_int_equal(mem->registered_bytes, 65536);
	assert_int_equal(mem->unregister_calls, 2);
	assert_int_equal(mem->unregistered_bytes, 65536);
	assert_int_equal(mem->untracked_unregisters, 1);
	assert_int_equal(mem->registered_live_bytes, 0);
	assert_int_equal(mem->total.alloc_calls, 0); /* pinned memory is not device memory */
	gp_model_free(m);
}

static void stale_range_is_evicted(void **state)
{
	struct gp_model *m = gp_model_new(NULL);

	alloc(m, GP_API_CUDA_MALLOC, 1, A, 1000);
	/* the free of A was lost; the runtime hands out A again */
	alloc(m, GP_API_CUDA_MALLOC, 1, A, 400);

	const struct gp_memory *mem = &proc(m, T_PID)->mem;

	assert_int_equal(mem->stale_evictions, 1);
	assert_int_equal(mem->stale_bytes, 1000);
	assert_int_equal(mem->total.live_bytes, 400);
	assert_int_equal(mem->total.free_calls, 0);
	assert_int_equal(mem->device_ranges.count, 1);
	gp_model_free(m);
}

static json_t *memory_of(struct gp_model *m)
{
	json_t *doc = gp_report_doc(m);

	assert_non_null(doc);
	return doc;
}

static void leaks_only_after_exit(void **state)
{
	struct gp_model *m = gp_model_new(NULL);

	assert_int_equal(gp_model_process_add(m, T_PID, "t", "t", 1, true), 0);
	set_device(m, 1, 2, 0);
	alloc(m, GP_API_CUDA_MALLOC, 1, A, 1000);
	alloc(m, GP_API_CUDA_MALLOC, 1, B, 5000);
	alloc(m, GP_API_CUDA_MALLOC_HOST, 1, 0x7f0000000000ULL, 64);
	alloc(m, GP_API_CUDA_MALLOC, 1, C, 10);
	xfree(m, GP_API_CUDA_FREE, 1, C);

	json_t *doc = memory_of(m);
	json_t *mem =
		json_object_get(json_array_get(json_object_get(doc, "processes"), 0), "memory");

	assert_int_equal(json_array_size(json_object_get(mem, "leaks")), 0);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(mem, "leaks_total"), "count")),
		0);
	assert_int_equal(json_array_size(json_object_get(mem, "live_at_end")), 3);
	json_decref(doc);

	assert_int_equal(gp_model_process_exited(m, T_PID, 10000), 0);
	doc = memory_of(m);
	mem = json_object_get(json_array_get(json_object_get(doc, "processes"), 0), "memory");

	json_t *leaks = json_object_get(mem, "leaks"), *first = json_array_get(leaks, 0);

	assert_int_equal(json_array_size(leaks), 3);
	assert_int_equal(json_array_size(json_object_get(mem, "live_at_end")), 0);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(mem, "leaks_total"), "count")),
		3);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(mem, "leaks_total"), "bytes")),
		6064);
	/* largest first */
	assert_string_equal(json_string_value(json_object_get(first, "ptr")), "0x700000100000");
	assert_int_equal(json_integer_value(json_object_get(first, "bytes")), 5000);
	assert_string_equal(json_string_value(json_object_get(first, "kind")), "device");
	assert_int_equal(json_integer_value(json_object_get(first, "device")), 2);
	assert_string_equal(json_string_value(json_object_get(first, "api")), "cudaMalloc");
	assert_string_equal(json_string_value(json_object_get(json_array_get(leaks, 2), "kind")),
			    "pinned");
	json_decref(doc);
	gp_model_free(m);
}

static void leak_list_is_capped(void **state)
{
	struct gp_model *m = gp_model_new(NULL);

	for (__u64 i = 0; i < GP_REPORT_LEAKS_MAX + 5; i++)
		alloc(m, GP_API_CUDA_MALLOC, 1, A + i * 0x1000, 100 + i);
	gp_model_process_exited(m, T_PID, 1);

	json_t *doc = memory_of(m);
	json_t *mem =
		json_object_get(json_array_get(json_object_get(doc, "processes"), 0), "memory");

	assert_int_equal(json_array_size(json_object_get(mem, "leaks")), GP_REPORT_LEAKS_MAX);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(mem, "leaks_total"), "count")),
		GP_REPORT_LEAKS_MAX + 5);
	json_decref(doc);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(per_device_live_and_peak),
		cmocka_unit_test(untracked_and_null_frees),
		cmocka_unit_test(failed_and_unreadable_allocations),
		cmocka_unit_test(pinned_and_registered),
		cmocka_unit_test(stale_range_is_evicted),
		cmocka_unit_test(leaks_only_after_exit),
		cmocka_unit_test(leak_list_is_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
