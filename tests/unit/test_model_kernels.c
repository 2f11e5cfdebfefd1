/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_model_kernels.c — kernel and graph launches through
 * gp_model_ingest(): grid/block/smem decoded from the x86-64 ABI layouts
 * (LAUNCH and LAUNCH_EXC), naming through a fake resolver called once per
 * (tgid, func, ret_addr), sites merged by symbol, "unknown" kernels without
 * a resolver or when it fails, the configuration cap, graph launches.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "records.h"

#define FUNC_A	0x1000 /* opaque handles from __cudaGetKernel */
#define FUNC_B	0x2000
#define SITE_A	0x401100 /* return addresses inside __device_stub__... */
#define SITE_A2 0x401180
#define SITE_B	0x402200
#define SITE_X	0x403300 /* the resolver does not know it */
#define HOST_FN 0x405500 /* a host function: named by address whatever the site */
#define HELPER	0x406600 /* a launch helper shared by all kernels: names nothing */

struct fake {
	int calls;
	__u32 last_tgid;
};

static int fake_kernel_name(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack,
			    unsigned nstack, char *name, size_t name_len, char *mangled,
			    size_t mangled_len)
{
	struct fake *f = ctx;

	f->calls++;
	f->last_tgid = tgid;
	if (ret_addr == SITE_A || ret_addr == SITE_A2) {
		snprintf(name, name_len, "saxpy(int, float, float*, float*)");
		snprintf(mangled, mangled_len, "_Z5saxpyifPfS_");
		return 0;
	}
	if (ret_addr == SITE_B) {
		snprintf(name, name_len, "plain_c_kernel");
		mangled[0] = '\0';
		return 0;
	}
	if (func == HOST_FN) {
		snprintf(name, name_len, "void ml::scale<float>(float*, float, int)");
		snprintf(mangled, mangled_len, "_ZN2mlL5scaleIfEEvPT_S1_i");
		return 0;
	}
	return -ENOENT;
}

static const struct gp_kernel *kernel_named(struct gp_process *p, const char *name)
{
	for (size_t i = 0; i < p->nkernels; i++)
		if (p->kernels[i]->name && !strcmp(p->kernels[i]->name, name))
			return p->kernels[i];
	fail_msg("no kernel %s", name);
	return NULL;
}

/* nvcc 13: __cudaGetKernel(&handle, hostFun) once, then launches pass the handle. */
static void handles_are_named_by_their_host_function(void **state)
{
	struct fake f = { 0 };
	struct gp_resolver r = { .ctx = &f, .kernel_name = fake_kernel_name };
	struct gp_model *m = gp_model_new(&r);
	const __u32 g[3] = { 1, 1, 1 };
	struct gp_api_call c = rec(GP_API_CUDA_GET_KERNEL, T_PID, T_TID, 100, 5, 0);

	c.args[0] = 0x7ffc0000; /* &handle */
	c.args[1] = HOST_FN;
	c.out = 0xcafe0000; /* the handle it stored */
	c.hdr.flags |= GP_EVF_OUT_VALID;
	feed(m, &c);
	for (int i = 0; i < 3; i++) {
		c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 0xcafe0000, HELPER, g, g, 0, 0, 0);
		feed(m, &c);
	}
	c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 0xbeef0000, HELPER, g, g, 0, 0,
		       0); /* never seen */
	feed(m, &c);

	struct gp_process *p = proc(m, T_PID);

	assert_int_equal(f.calls, 2);
	assert_int_equal(kernel_named(p, "void ml::scale<float>(float*, float, int)")->launches, 3);
	assert_int_equal(p->nkernels, 2); /* and one unknown */
	assert_int_equal(p->api[GP_API_CUDA_GET_KERNEL]->time.count, 1);
	gp_model_free(m);
}

static void launch_abi_decoding(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	const __u32 grid[3] = { 1024, 7, 3 }, block[3] = { 256, 2, 1 };
	struct gp_api_call c =
		rec_launch(GP_API_CUDA_LAUNCH_KERNEL, FUNC_A, SITE_A, grid, block, 4096, 0, 0);

	feed(m, &c);
	c = rec_launch_exc(GP_API_CUDA_LAUNCH_KERNEL_EXC, FUNC_B, SITE_B,
			   (const __u32[3]){ 5, 6, 7 }, (const __u32[3]){ 32, 4, 2 }, 128, 0);
	feed(m, &c);

	struct gp_process *p = proc(m, T_PID);

	assert_int_equal(p->nkernels, 2);
	for (size_t i = 0; i < 2; i++) {
		const struct gp_kernel *k = p->kernels[i];
		const struct gp_kconfig *cfg = &k->configs[0];

		assert_null(k->name); /* no resolver: unknown, never an address as a name */
		assert_int_equal(k->nconfigs, 1);
		if (k->func == FUNC_A) {
			assert_int_equal(k->ret_addr, SITE_A);
			assert_true(cfg->grid[0] == 1024 && cfg->grid[1] == 7 && cfg->grid[2] == 3);
			assert_true(cfg->block[0] == 256 && cfg->block[1] == 2 &&
				    cfg->block[2] == 1);
			assert_int_equal(cfg->smem, 4096);
		} else {
			assert_int_equal(k->func, FUNC_B);
			assert_true(cfg->grid[0] == 5 && cfg->grid[1] == 6 && cfg->grid[2] == 7);
			assert_true(cfg->block[0] == 32 && cfg->block[1] == 4 &&
				    cfg->block[2] == 2);
			assert_int_equal(cfg->smem, 128);
		}
	}
	gp_model_free(m);
}

static void resolver_names_once_per_site(void **state)
{
	struct fake f = { 0 };
	struct gp_resolver r = { .ctx = &f, .kernel_name = fake_kernel_name };
	struct gp_model *m = gp_model_new(&r);
	const __u32 g[3] = { 1, 1, 1 };
	struct gp_api_call c;

	for (int i = 0; i < 5; i++) {
		c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, FUNC_A, SITE_A, g, g, 0, 0,
			       i == 4 ? 9 : 0);
		feed(m, &c);
	}
	c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL_PTSZ, FUNC_A, SITE_A2, g, g, 0, 0,
		       0); /* another site, same kernel */
	feed(m, &c);
	c = rec_launch(GP_API_CUDA_LAUNCH_COOPERATIVE, FUNC_B, SITE_B, g, g, 0, 0, 0);
	feed(m, &c);
	c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, FUNC_B, SITE_X, g, g, 0, 0, 0);
	feed(m, &c);
	c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, FUNC_B, SITE_X, g, g, 0, 0, 0);
	feed(m, &c);

	struct gp_process *p = proc(m, T_PID);

	assert_int_equal(f.calls, 4); /* (A, SITE_A), (A, SITE_A2), (B, SITE_B), (B, SITE_X) */
	assert_int_equal(f.last_tgid, T_PID);
	assert_int_equal(p->nkernels, 3);

	const struct gp_kernel *saxpy = kernel_named(p, "saxpy(int, float, float*, float*)");

	assert_string_equal(saxpy->mangled, "_Z5saxpyifPfS_");
	assert_int_equal(saxpy->calls, 6);
	assert_int_equal(saxpy->launches, 5); /* the failed call enqueued nothing */
	assert_int_equal(saxpy->errors, 1);
	assert_int_equal(saxpy->sites, 2);
	assert_int_equal(saxpy->host_ns, 6 * 7);
	assert_string_equal(kernel_named(p, "plain_c_kernel")->mangled, "");
	for (size_t i = 0; i < p->nkernels; i++)
		if (!p->kernels[i]->name)
			assert_int_equal(p->kernels[i]->launches, 2);
	gp_model_free(m);
}

static void config_cap_and_unreadable(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	const __u32 b[3] = { 128, 1, 1 };
	struct gp_api_call c;

	for (__u32 i = 0; i < GP_KERNEL_CONFIGS_MAX + 4; i++) {
		c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, FUNC_A, SITE_A,
			       (const __u32[3]){ i + 1, 1, 1 }, b, 0, 0, 0);
		feed(m, &c);
		feed(m, &c); /* twice each */
	}
	c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, FUNC_A, SITE_A, b, b, 0, 0, 0);
	c.hdr.flags |= GP_EVF_ARGS_PARTIAL; /* smem/stream could not be read */
	feed(m, &c);

	const struct gp_kernel *k = proc(m, T_PID)->kernels[0];

	assert_int_equal(k->nconfigs, GP_KERNEL_CONFIGS_MAX);
	assert_int_equal(k->configs[0].launches, 2);
	assert_int_equal(k->config_other_launches, 8);
	assert_int_equal(k->config_unread_launches, 1);
	assert_int_equal(k->launches, 2 * (GP_KERNEL_CONFIGS_MAX + 4) + 1);
	gp_model_free(m);
}

static void graph_launches(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	for (int i = 0; i < 3; i++) {
		c = rec_h(GP_API_CUDA_GRAPH_LAUNCH, T_TID, 0xabc000, 0x5000, 20, 0);
		feed(m, &c);
	}
	c = rec_h(GP_API_CUDA_GRAPH_LAUNCH_PTSZ, T_TID, 0xdef000, 0, 30, 400);
	feed(m, &c);

	struct gp_process *p = proc(m, T_PID);
	const struct gp_graph *g = gp_u64map_get(&p->graphs, 0xabc000);

	assert_int_equal(p->nkernels, 0); /* graphs are their own rows */
	assert_non_null(g);
	assert_int_equal(g->launches, 3);
	assert_int_equal(g->host_ns, 60);
	g = gp_u64map_get(&p->graphs, 0xdef000);
	assert_int_equal(g->errors, 1);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(launch_abi_decoding),
		cmocka_unit_test(resolver_names_once_per_site),
		cmocka_unit_test(config_cap_and_unreadable),
		cmocka_unit_test(graph_launches),
		cmocka_unit_test(handles_are_named_by_their_host_function),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
