/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * scenario.h — one small synthetic session with a bit of everything
 * (session info, a process with libraries and threads, allocations, copies,
 * launches with and without names, streams, errors, probes, drops), for
 * the sink tests. Include after records.h.
 */
#ifndef GP_TEST_SCENARIO_H
#define GP_TEST_SCENARIO_H

#include <errno.h>
#include <stdio.h>

#define SC_START 1000000000000ULL /* session start, CLOCK_MONOTONIC */
#define SC_DEV	 0x7f3a00000000ULL
#define SC_HOST	 0x7f3b00000000ULL
#define SC_HEAP	 0x55d0c0de0000ULL
#define SC_S1	 0x55d0c0ff0000ULL

static int sc_kernel_name(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack,
			  unsigned nstack, char *name, size_t name_len, char *mangled,
			  size_t mangled_len)
{
	if (ret_addr != 0x401234)
		return -ENOENT;
	snprintf(name, name_len, "void scale<float>(float*, int)");
	snprintf(mangled, mangled_len, "_Z5scaleIfEvPT_i");
	return 0;
}

static const struct gp_resolver sc_resolver = { .kernel_name = sc_kernel_name };

/* Stamps records with increasing times inside the session. */
static void sc_feed(struct gp_model *m, struct gp_api_call c, __u64 *clock)
{
	c.hdr.ts_ns = *clock;
	*clock += c.dur_ns + 1000;
	feed(m, &c);
}

/* The scenario in a model with this resolver, its operations seen by tap (may be NULL) from the first. */
static __attribute__((unused)) struct gp_model *
scenario_model_with(const struct gp_resolver *resolver, const struct gp_model_tap *tap, bool exited,
		    bool from_start)
{
	struct gp_model *m = gp_model_new(resolver);
	const struct gp_session_info si = {
		.tool_version = "0.1-test",
		.command_line = "gpuprobed --pid 4242",
		.mode = "pid",
		.hostname = "gpu-node-1",
		.kernel_release = "6.18.0",
		.start_mono_ns = SC_START,
		.start_realtime_ns = 1700000000000000000ULL,
	};
	const __u32 grid[3] = { 256, 1, 1 }, block[3] = { 128, 1, 1 };
	__u64 t = SC_START + 5000000;

	assert_non_null(m);
	gp_model_set_tap(m, tap);
	gp_model_set_session(m, &si);
	assert_int_equal(gp_model_process_add(m, T_PID, "train", "python3 train.py --epochs 1",
					      SC_START + 1000, from_start),
			 0);
	assert_int_equal(gp_model_library_add(m, T_PID, "/opt/venv/lib/libcudart.so.13",
					      GP_FAM_CUDART, false, "5e1f"),
			 0);
	assert_int_equal(gp_model_thread_name(m, T_PID, T_TID, "python3"), 0);
	assert_int_equal(gp_model_thread_name(m, T_PID, T_TID + 1, "loader"), 0);
	assert_int_equal(gp_model_probe_add(m, 0, "/opt/venv/lib/libcudart.so.13", 4242,
					    "cudaMalloc", 0x4a2b0, GP_API_CUDA_MALLOC),
			 0);
	assert_int_equal(gp_model_probe_add(m, 1, "/opt/venv/lib/libcudart.so.13", 4242,
					    "cudaLaunchKernel", 0x71c40, GP_API_CUDA_LAUNCH_KERNEL),
			 0);
	gp_model_probe_hits(m, 0, 3, 3);
	gp_model_probe_hits(m, 1, 4, 4);
	gp_model_drop_set(m, "ringbuf_full", 2);

	sc_feed(m, rec_h(GP_API_CUDA_SET_DEVICE, T_TID, 0, 0, 800, 0), &t);
	sc_feed(m, rec_alloc(GP_API_CUDA_MALLOC, T_TID, SC_DEV, 1 << 20, 0), &t);
	sc_feed(m, rec_alloc(GP_API_CUDA_MALLOC, T_TID, SC_DEV + (1 << 20), 4096, 0), &t);
	sc_feed(m, rec_alloc(GP_API_CUDA_MALLOC, T_TID, 0, 1ULL << 40, 2), &t);
	sc_feed(m, rec_alloc(GP_API_CUDA_MALLOC_HOST, T_TID, SC_HOST, 65536, 0), &t);
	sc_feed(m, rec_create(GP_API_CUDA_STREAM_CREATE, SC_S1), &t);
	sc_feed(m,
		rec_memcpy(GP_API_CUDA_MEMCPY, SC_DEV, SC_HEAP, 1 << 20, GP_MEMCPY_HTOD, 0, 250000,
			   0),
		&t);
	sc_feed(m,
		rec_memcpy(GP_API_CUDA_MEMCPY, SC_DEV, SC_HOST, 65536, GP_MEMCPY_DEFAULT, 0, 5000,
			   0),
		&t);
	sc_feed(m,
		rec_memcpy(GP_API_CUDA_MEMCPY_ASYNC, SC_HOST, SC_DEV, 65536, GP_MEMCPY_DTOH, SC_S1,
			   3000, 0),
		&t);
	sc_feed(m, rec_memcpy(GP_API_CUDA_MEMCPY, SC_DEV, SC_HEAP, 16, 9, 0, 900, 21), &t);
	sc_feed(m, rec_memset(GP_API_CUDA_MEMSET_ASYNC, SC_DEV, 4096, SC_S1, 0), &t);
	for (int i = 0; i < 3; i++)
		sc_feed(m,
			rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 0xa1, 0x401234, grid, block, 0, SC_S1,
				   0),
			&t);
	sc_feed(m, rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 0xb2, 0x405678, grid, grid, 1024, 0, 0),
		&t);
	sc_feed(m, rec_h(GP_API_CUDA_STREAM_SYNCHRONIZE, T_TID, SC_S1, 0, 150000, 0), &t);
	sc_feed(m, rec_h(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_TID + 1, 0, 0, 20000, 0), &t);
	sc_feed(m, rec_ptr(GP_API_CUDA_FREE, T_TID, SC_DEV + (1 << 20), 0, 0), &t);
	sc_feed(m, rec_ptr(GP_API_CUDA_FREE, T_TID, 0x7f3c00000000ULL, 0, 0),
		&t); /* allocated before tracing */
	if (exited)
		assert_int_equal(gp_model_process_exited(m, T_PID, t), 0);
	gp_model_set_session_end(m, t + 1000000);
	return m;
}

static __attribute__((unused)) struct gp_model *scenario_model(bool exited, bool from_start)
{
	return scenario_model_with(&sc_resolver, NULL, exited, from_start);
}

/* The whole output of a sink, NUL-terminated and malloc'ed. */
static __attribute__((unused)) char *sink_output(int (*sink)(const struct gp_model *, FILE *),
						 const struct gp_model *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(sink(m, f), 0);
	fclose(f);
	return buf;
}

#endif /* GP_TEST_SCENARIO_H */
