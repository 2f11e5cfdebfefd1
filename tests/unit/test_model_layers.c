/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_model_layers.c — the layers below the runtime through
 * gp_model_ingest(): a driver call nested in a runtime call is counted once
 * (as the runtime call) and linked both ways; driver launches are named by
 * the handles cuModuleGetFunction / cuLibraryGetKernel / cuKernelGetFunction
 * created, "unknown (created before attach)" otherwise; cuLaunchKernel's
 * configuration; driver copies and memsets (D32 counts 4-byte elements);
 * VMM physical memory; NCCL communicators, nccl-tests bytes, the blocked
 * time of the synchronisation that waited for a collective, and the
 * host-side bandwidths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "records.h"

#define DEV    0x600000000000ULL
#define HOST   0x7f0000001000ULL
#define STREAM 0x55550000a000ULL
#define COMM   0x55550000c000ULL

static struct gp_api_call nested_in(struct gp_api_call c, enum gp_api_id outer)
{
	c.hdr.flags |= (__u32)outer << GP_EVF_PARENT_SHIFT;
	return c;
}

static void runtime_over_driver_counted_once(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	/* cudaMemcpy HtoD 4 KiB, implemented by cuMemcpyHtoD_v2 on the same thread (its record comes first) */
	struct gp_api_call inner = rec(GP_API_CU_MEMCPY_HTOD, T_PID, T_TID, 3010, 80, 0);
	struct gp_api_call outer =
		rec_memcpy(GP_API_CUDA_MEMCPY, DEV, HOST, 4096, GP_MEMCPY_HTOD, 0, 100, 0);

	inner.args[0] = DEV;
	inner.args[1] = HOST;
	inner.args[2] = 4096;
	inner = nested_in(inner, GP_API_CUDA_MEMCPY);
	feed(m, &inner);
	feed(m, &outer);

	struct gp_process *p = proc(m, T_PID);
	struct gp_api_stats *d = p->api[GP_API_CU_MEMCPY_HTOD], *r = p->api[GP_API_CUDA_MEMCPY];

	assert_int_equal(p->api_calls, 1);
	assert_int_equal(p->api_total_ns, 100);
	assert_int_equal(r->time.count, 1);
	assert_int_equal(d->time.count, 0);
	assert_int_equal(d->nested_calls, 1);
	assert_int_equal(d->nested_ns, 80);
	assert_int_equal(d->outer[0].api, GP_API_CUDA_MEMCPY);
	assert_int_equal(d->outer[0].calls, 1);
	assert_int_equal(r->inner[0].api, GP_API_CU_MEMCPY_HTOD);
	/* the copy once, as the runtime's */
	assert_int_equal(p->xfer[GP_DIR_HTOD][GP_HM_PAGEABLE][1].calls, 1);
	assert_int_equal(p->xfer[GP_DIR_HTOD][GP_HM_PAGEABLE][1].bytes, 4096);
	assert_int_equal(p->work[GP_FAM_CUDART].copies, 1);
	assert_int_equal(p->work[GP_FAM_CUDA].copies, 0);
	gp_model_free(m);
}

/*
 * An inner call is listed only with its outer call: one whose outer call
 * never comes (tracing stopped inside it, or the outer call is another
 * thread's) waits, and is left out when a call of its thread that does not
 * cover it returns; one whose outer call is counted in the kernel is listed
 * at once.
 */
static void inner_calls_wait_for_their_outer_call(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call cut = nested_in(rec(GP_API_CU_LAUNCH_KERNEL, T_PID, T_TID, 1010, 5, 0),
					   GP_API_CUDA_LAUNCH_KERNEL);
	struct gp_api_call other =
		nested_in(rec(GP_API_CU_LAUNCH_KERNEL, T_PID, T_TID + 1, 2010, 5, 0),
			  GP_API_CUDA_LAUNCH_KERNEL);
	struct gp_api_call inner = nested_in(rec(GP_API_CU_LAUNCH_KERNEL, T_PID, T_TID, 3010, 5, 0),
					     GP_API_CUDA_LAUNCH_KERNEL);
	struct gp_api_call outer = rec(GP_API_CUDA_LAUNCH_KERNEL, T_PID, T_TID, 3000, 20, 0);
	struct gp_api_call counted = nested_in(
		rec(GP_API_CU_LAUNCH_KERNEL, T_PID, T_TID, 4010, 5, 0), GP_API_CUDA_LAUNCH_KERNEL);

	counted.hdr.flags |= GP_EVF_PARENT_COUNTED;
	feed(m, &cut);	 /* its cudaLaunchKernel never returns */
	feed(m, &other); /* another thread's, whose outer call has not returned yet */
	feed(m, &inner);

	struct gp_process *p = proc(m, T_PID);

	assert_int_equal(p->api[GP_API_CU_LAUNCH_KERNEL]->nested_calls, 0);
	assert_int_equal(p->nwaiting, 3);
	feed(m, &outer); /* covers inner only: cut is left out */
	assert_int_equal(p->api[GP_API_CU_LAUNCH_KERNEL]->nested_calls, 1);
	assert_int_equal(p->api[GP_API_CU_LAUNCH_KERNEL]->nested_ns, 5);
	assert_int_equal(p->api[GP_API_CUDA_LAUNCH_KERNEL]->inner[0].calls, 1);
	assert_int_equal(p->nested_left_out, 1);
	assert_int_equal(p->nwaiting, 1); /* the other thread's still waits */
	assert_int_equal(p->writer->waiting[0].tid, T_TID + 1);
	feed(m, &counted);
	assert_int_equal(p->api[GP_API_CU_LAUNCH_KERNEL]->nested_calls, 2);
	assert_int_equal(p->nwaiting, 1);
	assert_int_equal(p->api_calls, 1);
	gp_model_free(m);
}

/* cuModuleGetFunction(&f, mod, name) as an extended record */
static void feed_get_function(struct gp_model *m, enum gp_api_id api, __u64 handle, __u64 owner,
			      const char *name)
{
	struct gp_api_call_ext x;

	memset(&x, 0, sizeof(x));
	x.call = rec(api, T_PID, T_TID, 500, 10, 0);
	x.call.hdr.type = GP_EV_API_CALL_EXT;
	x.call.hdr.size = sizeof(x);
	x.call.hdr.flags = GP_EVF_OUT_VALID;
	x.call.out = handle;
	x.call.args[1] = owner;
	x.data_len = (__u32)strlen(name) + 1;
	memcpy(x.data, name, x.data_len);
	assert_int_equal(gp_model_ingest(m, &x, sizeof(x)), 0);
}

/* cuLaunchKernel(f, gx, gy, gz, bx, by|bz<<32, smem, stream) as the BPF side packs it */
static struct gp_api_call cu_launch(__u64 f, __u32 gx, __u32 bx, __u32 bz, __u32 smem, int ret)
{
	struct gp_api_call c = rec(GP_API_CU_LAUNCH_KERNEL, T_PID, T_TID, 1000, 5, ret);

	c.args[0] = f;
	c.args[1] = 0xdead00000000ULL | gx; /* upper halves of 32-bit arguments are garbage */
	c.args[2] = 1;
	c.args[3] = 1;
	c.args[4] = bx;
	c.args[5] = 2 | ((__u64)bz << 32);
	c.args[6] = smem;
	c.args[7] = STREAM;
	return c;
}

static void driver_launch_names(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	feed_get_function(m, GP_API_CU_MODULE_GET_FUNCTION, 0xf1, 0xa0, "_Z4gemmPfS_i");
	feed_get_function(m, GP_API_CU_LIBRARY_GET_KERNEL, 0xc1, 0xb0, "softmax");
	assert_int_equal(gp_model_drop_get(m, "ext_truncated"), 0);
	{ /* a name cut at 1 KiB by the BPF side: kept cut, and counted */
		struct gp_api_call_ext x;

		memset(&x, 0, sizeof(x));
		x.call = rec(GP_API_CU_MODULE_GET_FUNCTION, T_PID, T_TID, 550, 10, 0);
		x.call.hdr.type = GP_EV_API_CALL_EXT;
		x.call.hdr.size = sizeof(x);
		x.call.hdr.flags = GP_EVF_OUT_VALID | GP_EVF_EXT_TRUNC;
		x.call.out = 0xf9;
		memset(x.data, 'k', sizeof(x.data) - 1);
		x.data_len = sizeof(x.data);
		assert_int_equal(gp_model_ingest(m, &x, sizeof(x)), 0);
		assert_int_equal(gp_model_drop_get(m, "ext_truncated"), 1);
		assert_int_equal(strlen(gp_driver_function_name(proc(m, T_PID), 0xf9)),
				 sizeof(x.data) - 1);
	}
	c = rec(GP_API_CU_KERNEL_GET_FUNCTION, T_PID, T_TID, 600, 5,
		0); /* CUkernel 0xc1 -> CUfunction 0xf2 */
	c.args[0] = 0x7ffc0000;
	c.args[1] = 0xc1;
	c.out = 0xf2;
	c.hdr.flags = GP_EVF_OUT_VALID;
	feed(m, &c);
	for (int i = 0; i < 3; i++) {
		c = cu_launch(0xf1, 64, 128, 4, 1024, 0);
		feed(m, &c);
	}
	c = cu_launch(0xc1, 1, 32, 1, 0, 0); /* a CUkernel passed as a CUfunction */
	feed(m, &c);
	c = cu_launch(0xf2, 1, 32, 1, 0, 0);
	feed(m, &c);
	c = cu_launch(0x99, 1, 32, 1, 0, 0); /* created before attach */
	feed(m, &c);
	c = cu_launch(0x98, 1, 32, 1, 0, 1); /* ditto, and failed */
	feed(m, &c);

	struct gp_process *p = proc(m, T_PID);

	assert_int_equal(p->nkernels, 3);
	assert_string_equal(p->kernels[0]->name, "_Z4gemmPfS_i"); /* no demangler in this model */
	assert_int_equal(p->kernels[0]->launches, 3);
	assert_int_equal(p->kernels[0]->driver_launches, 3);
	assert_int_equal(p->kernels[0]->configs[0].grid[0], 64);
	assert_int_equal(p->kernels[0]->configs[0].block[0], 128);
	assert_int_equal(p->kernels[0]->configs[0].block[1], 2);
	assert_int_equal(p->kernels[0]->configs[0].block[2], 4);
	assert_int_equal(p->kernels[0]->configs[0].smem, 1024);
	assert_string_equal(p->kernels[1]->name, "softmax");
	assert_int_equal(p->kernels[1]->launches, 2);
	assert_null(p->kernels[2]->name);
	assert_true(p->kernels[2]->handle_before_attach);
	assert_int_equal(p->kernels[2]->calls, 2);
	assert_int_equal(p->kernels[2]->launches, 1);
	assert_int_equal(p->kernels[2]->errors, 1);
	assert_string_equal(gp_kernel_unresolved_reason(p, p->kernels[2]),
			    "unknown (created before attach)");
	assert_int_equal(p->work[GP_FAM_CUDA].launches, 6);
	gp_model_free(m);
}

static void driver_copies_memsets_vmm(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	c = rec_alloc(GP_API_CU_MEM_ALLOC, T_TID, DEV, 1 << 20, 0);
	feed(m, &c);
	c = rec(GP_API_CU_MEMCPY_DTOH_ASYNC, T_PID, T_TID, 2000, 10, 0);
	c.args[0] = HOST;
	c.args[1] = DEV;
	c.args[2] = 8192;
	c.args[3] = STREAM;
	feed(m, &c);
	c = rec(GP_API_CU_MEMCPY, T_PID, T_TID, 2100, 10, 0); /* unified: from the pointers */
	c.args[0] = DEV + 4096;
	c.args[1] = DEV;
	c.args[2] = 512;
	feed(m, &c);
	c = rec_memset(GP_API_CU_MEMSET_D32, DEV, 100, 0, 0); /* 100 elements of 4 bytes */
	feed(m, &c);
	c = rec_memset(GP_API_CU_MEMSET_D8_ASYNC, DEV, 100, STREAM, 0);
	feed(m, &c);

	struct gp_process *p = proc(m, T_PID);

	assert_int_equal(p->xfer[GP_DIR_DTOH][GP_HM_PAGEABLE][0].bytes, 8192);
	assert_int_equal(p->xfer[GP_DIR_DTOD][GP_HM_DEVICE][1].bytes, 512);
	assert_int_equal(p->memsets[1].bytes, 400);
	assert_int_equal(p->memsets[0].bytes, 100);
	assert_int_equal(p->work[GP_FAM_CUDA].memset_bytes, 500);

	/* VMM: 2 MiB physical on device 1, mapped, copied into, unmapped, released */
	c = rec(GP_API_CU_MEM_CREATE, T_PID, T_TID, 3000, 10, 0);
	c.args[1] = 2 << 20;
	c.args[7] = (__u64)1 << 32; /* CUmemAllocationProp bytes 12..15: location.id = 1 */
	c.out = 0x77;
	c.hdr.flags = GP_EVF_OUT_VALID;
	feed(m, &c);
	assert_int_equal(p->mem.total.live_bytes, (1 << 20) + (2 << 20));
	assert_int_equal(gp_memory_device(&p->mem, 1)->live_bytes, 2 << 20);
	c = rec(GP_API_CU_MEM_MAP, T_PID, T_TID, 3100, 10, 0);
	c.args[0] = 0x620000000000ULL;
	c.args[1] = 2 << 20;
	c.args[3] = 0x77;
	feed(m, &c);
	c = rec(GP_API_CU_MEMCPY_HTOD, T_PID, T_TID, 3200, 10, 0);
	c.args[0] = 0x620000000000ULL + 64;
	c.args[1] = HOST;
	c.args[2] = 1000;
	feed(m, &c);
	assert_int_equal(p->xfer[GP_DIR_HTOD][GP_HM_PAGEABLE][1].bytes, 1000);
	c = rec(GP_API_CU_MEM_UNMAP, T_PID, T_TID, 3300, 10, 0);
	c.args[0] = 0x620000000000ULL;
	c.args[1] = 2 << 20;
	feed(m, &c);
	c = rec(GP_API_CU_MEM_RELEASE, T_PID, T_TID, 3400, 10, 0);
	c.args[0] = 0x77;
	feed(m, &c);
	assert_int_equal(p->mem.vmm.alloc_calls, 1);
	assert_int_equal(p->mem.vmm.free_calls, 1);
	assert_int_equal(p->mem.vmm.peak_bytes, 2 << 20);
	assert_int_equal(p->mem.vmm.live_bytes, 0);
	assert_int_equal(p->mem.vmm_mapped_live_bytes, 0);
	assert_int_equal(p->mem.total.live_bytes, 1 << 20);
	assert_int_equal(gp_memory_device(&p->mem, 1)->live_bytes, 0);
	gp_model_free(m);
}

static struct gp_api_call nccl_init(__u64 comm, int rank, int nranks)
{
	struct gp_api_call c = rec(GP_API_NCCL_COMM_INIT_RANK, T_PID, T_TID, 100, 1000, 0);

	c.args[0] = 0x7ffc0000;
	c.args[1] = (__u64)nranks;
	c.args[2] = (__u64)rank;
	c.out = comm;
	c.hdr.flags = GP_EVF_OUT_VALID;
	return c;
}

/* ncclAllReduce(send, recv, count, dtype, op, comm, [sp+8] stream) */
static struct gp_api_call all_reduce(__u64 ts, __u64 count, int dtype)
{
	struct gp_api_call c = rec(GP_API_NCCL_ALL_REDUCE, T_PID, T_TID, ts, 20, 0);

	c.args[0] = DEV;
	c.args[1] = DEV + 0x100000;
	c.args[2] = count;
	c.args[3] = (__u64)dtype;
	c.args[4] = 0;
	c.args[5] = COMM;
	c.args[6] = STREAM;
	return c;
}

static struct gp_api_call stream_sync(__u64 ts, __u64 dur)
{
	struct gp_api_call c = rec(GP_API_CUDA_STREAM_SYNCHRONIZE, T_PID, T_TID, ts, dur, 0);

	c.args[0] = STREAM;
	return c;
}

static void nccl_bytes_blocked_bandwidth(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	c = nccl_init(COMM, 1, 4);
	feed(m, &c);
	/* AllReduce of 1 Mi float32 alone on its stream, then a sync: queued at 10000, sync returns at 10000 + 4 ms */
	c = all_reduce(10000, 1 << 20, 7);
	feed(m, &c);
	c = stream_sync(10100, 4000000 - 100);
	feed(m, &c);
	/* AllGather sendcount 1000 int32 on 4 ranks = 16000 bytes, then a kernel, then a sync: charged to the kernel */
	c = rec(GP_API_NCCL_ALL_GATHER, T_PID, T_TID, 5000000, 20, 0);
	c.args[2] = 1000;
	c.args[3] = 2;
	c.args[4] = COMM;
	c.args[5] = STREAM;
	feed(m, &c);
	c = rec(GP_API_CUDA_LAUNCH_KERNEL, T_PID, T_TID, 5000100, 5, 0);
	c.args[0] = 0x401000;
	c.args[7] = STREAM;
	feed(m, &c);
	c = stream_sync(5000200, 300000);
	feed(m, &c);

	struct gp_process *p = proc(m, T_PID);

	assert_non_null(p->nccl);
	assert_int_equal(p->nccl->ncomms, 1);

	const struct gp_nccl_comm *cm = p->nccl->comms[0];

	assert_int_equal(cm->rank, 1);
	assert_int_equal(cm->nranks, 4);
	assert_int_equal(cm->nrows, 2);

	const struct gp_nccl_row *ar = cm->rows[0], *ag = cm->rows[1];

	assert_int_equal(ar->op, GP_NCCL_ALL_REDUCE);
	assert_int_equal(ar->bytes, 4 << 20);
	assert_int_equal(ar->blocked_calls, 1);
	assert_int_equal(ar->blocked_ns, 4000000 - 100);
	assert_int_equal(ar->measured, 1);
	assert_int_equal(ar->measured_ns, 4000000);
	assert_int_equal(ag->op, GP_NCCL_ALL_GATHER);
	assert_int_equal(ag->bytes, 16000);
	assert_int_equal(ag->blocked_calls, 0);
	assert_int_equal(ag->measured, 0);
	assert_int_equal(p->pending.blocked_ns[GP_WORK_COLL], 4000000 - 100);
	assert_int_equal(p->pending.blocked_ns[GP_WORK_KERNEL], 300000);
	assert_true(gp_nccl_bus_factor(GP_NCCL_ALL_REDUCE, 4) == 1.5);
	assert_true(gp_nccl_bus_factor(GP_NCCL_ALL_GATHER, 4) == 0.75);
	assert_true(gp_nccl_bus_factor(GP_NCCL_BROADCAST, 4) == 1.0);

	/* the report: algbw = 4 MiB / 4 ms = 1.05 GB/s, busbw x 1.5 */
	json_t *doc = gp_report_doc(m);
	json_t *row = json_array_get(
		json_object_get(
			json_array_get(
				json_object_get(
					json_object_get(
						json_array_get(json_object_get(doc, "processes"),
							       0),
						"nccl"),
					"communicators"),
				0),
			"ops"),
		0);

	assert_non_null(row);
	assert_true(json_real_value(json_object_get(row, "algbw_gbps")) == 1.05);
	assert_true(json_real_value(json_object_get(row, "busbw_gbps")) == 1.57);
	/* waited 3,999,900 ns behind the collective, 300,000 ns behind the kernel */
	json_t *nccl =
		json_object_get(json_array_get(json_object_get(doc, "processes"), 0), "nccl");

	assert_true(json_real_value(json_object_get(nccl, "comm_compute_ratio")) == 13.33);
	assert_int_equal(json_integer_value(json_object_get(nccl, "sync_blocked_ns_kernels")),
			 300000);
	json_decref(doc);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(runtime_over_driver_counted_once),
		cmocka_unit_test(inner_calls_wait_for_their_outer_call),
		cmocka_unit_test(driver_launch_names),
		cmocka_unit_test(driver_copies_memsets_vmm),
		cmocka_unit_test(nccl_bytes_blocked_bandwidth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
