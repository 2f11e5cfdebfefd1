/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_model_stacks.c — call stacks through gp_model_ingest(): records with
 * a stack deduplicated exactly (same frames, one stack; one row per API and
 * operation), the --max-stacks bound with its overflow stack and drop
 * counter, truncation (depth limit, unread, stopped before a thread start),
 * symbolization through a fake resolver, the folded writer (merged equal
 * paths, the root, [truncated] and leaf frames) and the size labels.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "output/labels.h"
#include "output/stack_paths.h"
#include "records.h"

#define MAIN_RET   0x400100 /* main, called from the C library */
#define STEP_A_RET 0x400200
#define STEP_B_RET 0x400300
#define LIBC_RET   0x7f0000001000
#define KERNEL_FN  0x400900 /* the host function launched */

/* One record with a stack, the way the return probe builds it. */
static size_t with_stack(struct gp_api_call_stack *out, const struct gp_api_call *c, const __u64 *ips, unsigned n,
			 __u16 flags)
{
	memset(out, 0, sizeof(*out));
	out->call = *c;
	out->call.hdr.type = GP_EV_API_CALL_STACK;
	out->call.hdr.size = (__u16)GP_STACK_REC_SIZE(n);
	out->call.ret_addr = ips[0];
	out->nframes = (__u16)n;
	out->stack_flags = flags;
	memcpy(out->ips, ips, n * sizeof(*ips));
	return GP_STACK_REC_SIZE(n);
}

static void feed_stack(struct gp_model *m, const struct gp_api_call *c, const __u64 *ips, unsigned n, __u16 flags)
{
	struct gp_api_call_stack r;
	size_t len = with_stack(&r, c, ips, n, flags);

	assert_int_equal(gp_model_ingest(m, &r, len), 0);
}

static struct gp_api_call launch(__u64 func)
{
	static const __u32 grid[3] = { 1, 1, 1 }, block[3] = { 32, 1, 1 };

	return rec_launch(GP_API_CUDA_LAUNCH_KERNEL, func, 0, grid, block, 0, 0, 0);
}

/* ---- a fake resolver: names by address, libc as the thread root ---------- */
static int seen_calls;

static int fake_kernel_name(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack, unsigned nstack,
			    char *name, size_t name_len, char *mangled, size_t mangled_len)
{
	if (func != KERNEL_FN)
		return -ENOENT;
	assert_non_null(stack); /* the launch's stack is handed over */
	assert_int_equal(stack[0], ret_addr);
	snprintf(name, name_len, "void gemm<float>(float*, int)");
	snprintf(mangled, mangled_len, "_Z4gemmIfEvPT_i");
	return 0;
}

static void fake_short(const char *mangled, char *out, size_t len)
{
	snprintf(out, len, "%s", !strcmp(mangled, "_Z4gemmIfEvPT_i") ? "gemm<float>" : mangled);
}

static void fake_seen(void *ctx, __u32 tgid, const __u64 *ips, unsigned n)
{
	seen_calls++;
}

static int fake_symbolize(void *ctx, __u32 tgid, __u64 addr, struct gp_frame_sym *out)
{
	memset(out, 0, sizeof(*out));
	out->build_id = "";
	if (addr >= MAIN_RET - 1 && addr < MAIN_RET + 0x20)
		out->function = out->symbol = "main";
	else if (addr == STEP_A_RET - 1)
		out->function = out->symbol = "step_a";
	else if (addr == STEP_B_RET - 1)
		out->function = out->symbol = "step_b";
	else if (addr == LIBC_RET - 1)
		out->file = "/usr/lib/x86_64-linux-gnu/libc.so.6"; /* its start functions are stripped */
	else
		return -ENOENT;
	if (out->symbol) {
		out->file = "/work/app";
		out->source = GP_SYM_ELF;
	}
	out->file_offset = addr & 0xfff;
	return 0;
}

static struct gp_model *new_model(size_t max_stacks)
{
	static const struct gp_resolver r = { .kernel_name = fake_kernel_name, .demangle_short = fake_short,
					      .stack_seen = fake_seen, .symbolize = fake_symbolize };
	struct gp_model *m = gp_model_new(&r);

	assert_non_null(m);
	gp_model_set_stacks(m, true, max_stacks);
	seen_calls = 0;
	return m;
}

static void dedup_and_exact_counts(void **state)
{
	struct gp_model *m = new_model(100);
	const __u64 a[] = { STEP_A_RET, MAIN_RET, LIBC_RET }, b[] = { STEP_B_RET, MAIN_RET, LIBC_RET };
	struct gp_api_call c = launch(KERNEL_FN);
	struct gp_process *p;

	for (int i = 0; i < 3; i++)
		feed_stack(m, &c, a, 3, 0);
	for (int i = 0; i < 2; i++)
		feed_stack(m, &c, b, 3, 0);
	c = launch(0x999999); /* another kernel from the same stack: a second row */
	feed_stack(m, &c, a, 3, 0);
	p = gp_model_process_get(m, T_PID);
	assert_int_equal(p->stacks.n, 2);
	assert_int_equal(p->stacks.calls, 6);
	assert_int_equal(seen_calls, 2); /* the resolver hears of each new stack once */
	assert_int_equal(p->stacks.v[0]->calls, 4);
	assert_int_equal(p->stacks.v[0]->nops, 2);
	assert_int_equal(p->stacks.v[0]->ops[0].calls, 3);
	assert_string_equal(p->stacks.v[0]->ops[0].op.kernel->name, "void gemm<float>(float*, int)");
	assert_int_equal(p->stacks.v[1]->calls, 2);
	assert_int_equal(gp_model_drop_get(m, "stacks_over_limit"), 0);
	gp_model_free(m);
}

static void bounded_with_an_overflow_stack(void **state)
{
	struct gp_model *m = new_model(1);
	const __u64 a[] = { STEP_A_RET, MAIN_RET }, b[] = { STEP_B_RET, MAIN_RET };
	struct gp_api_call c = launch(KERNEL_FN);
	struct gp_process *p;

	feed_stack(m, &c, a, 2, 0);
	feed_stack(m, &c, b, 2, 0);
	feed_stack(m, &c, b, 2, 0);
	feed_stack(m, &c, a, 2, 0);
	p = gp_model_process_get(m, T_PID);
	assert_int_equal(p->stacks.n, 1);
	assert_non_null(p->stacks.overflow);
	assert_int_equal(p->stacks.overflow->calls, 2);
	assert_int_equal(p->stacks.v[0]->calls, 2);
	assert_int_equal(p->stacks.calls, 4); /* every call still counted */
	assert_int_equal(gp_model_drop_get(m, "stacks_over_limit"), 2);
	gp_model_free(m);
}

static void truncation_and_symbols(void **state)
{
	struct gp_model *m = new_model(100);
	const __u64 full[] = { STEP_A_RET, MAIN_RET, LIBC_RET }, cut[] = { STEP_B_RET, MAIN_RET };
	__u64 deep[GP_STACK_MAX_FRAMES];
	struct gp_api_call c = launch(KERNEL_FN);
	struct gp_process *p;

	for (unsigned i = 0; i < GP_STACK_MAX_FRAMES; i++)
		deep[i] = STEP_A_RET;
	feed_stack(m, &c, full, 3, 0);
	feed_stack(m, &c, cut, 2, 0);                   /* never reaches the C library */
	feed_stack(m, &c, deep, GP_STACK_MAX_FRAMES, 0); /* the depth limit */
	feed_stack(m, &c, (const __u64[]){ STEP_B_RET }, 1, GP_STF_UNREAD);
	gp_model_symbolize_stacks(m, NULL);
	p = gp_model_process_get(m, T_PID);
	assert_int_equal(p->stacks.n, 4);
	assert_int_equal(p->stacks.v[0]->trunc, GP_TRUNC_NONE);
	assert_int_equal(p->stacks.v[1]->trunc, GP_TRUNC_UNWIND);
	assert_int_equal(p->stacks.v[2]->trunc, GP_TRUNC_DEPTH);
	assert_int_equal(p->stacks.v[3]->trunc, GP_TRUNC_UNREAD);
	/* one frame per distinct address; names from the resolver, offsets of the return address */
	assert_int_equal(p->stacks.nframes, 4);
	assert_string_equal(p->stacks.frames[p->stacks.v[0]->frame_ids[0]].function, "step_a");
	assert_int_equal(p->stacks.frames[p->stacks.v[0]->frame_ids[0]].file_offset, STEP_A_RET & 0xfff);
	assert_null(p->stacks.frames[p->stacks.v[0]->frame_ids[2]].function);
	assert_true(p->stacks.frames[p->stacks.v[0]->frame_ids[2]].thread_root);
	gp_model_free(m);
}

static char *folded(struct gp_model *m, enum gp_weight w)
{
	struct gp_paths paths;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(gp_paths_from_model(m, &paths), 0);
	assert_int_equal(gp_folded_write(&paths, w, f), 0);
	fclose(f);
	gp_paths_release(&paths);
	return buf;
}

static void folded_lines(void **state)
{
	struct gp_model *m = new_model(100);
	/* two call sites in main with the same name: one folded line */
	const __u64 a1[] = { STEP_A_RET, MAIN_RET, LIBC_RET }, a2[] = { STEP_A_RET, MAIN_RET + 8, LIBC_RET };
	const __u64 cut[] = { STEP_B_RET, MAIN_RET };
	struct gp_api_call c = launch(KERNEL_FN);
	struct gp_api_call cp = rec_memcpy(GP_API_CUDA_MEMCPY, 0x7000000, 0x600000, 4 << 20, GP_MEMCPY_HTOD, 0, 500, 0);
	char *text;

	assert_int_equal(gp_model_process_add(m, T_PID, "train", "train", 0, true), 0);
	feed_stack(m, &c, a1, 3, 0);
	feed_stack(m, &c, a2, 3, 0);
	feed_stack(m, &cp, cut, 2, 0);
	feed_stack(m, &cp, cut, 2, 0);
	gp_model_symbolize_stacks(m, NULL);
	text = folded(m, GP_W_CALLS);
	/* heaviest stack first: the copy stack has 2 calls, each launch stack 1 (merged in one line) */
	assert_string_equal(text, "train (pid 4242);[truncated];main;step_b;cudaMemcpy;[HtoD 4 MiB pageable] 2\n"
				  "train (pid 4242);libc.so.6+0x1000;main;step_a;cudaLaunchKernel;[kernel] gemm<float> 2\n");
	free(text);
	text = folded(m, GP_W_BYTES); /* launches move no bytes: no line */
	assert_string_equal(text, "train (pid 4242);[truncated];main;step_b;cudaMemcpy;[HtoD 4 MiB pageable] 8388608\n");
	free(text);
	gp_model_free(m);
}

static void size_labels(void **state)
{
	static const struct {
		__u64 bytes;
		const char *text;
	} cases[] = {
		{ 0, "0 B" },       { 1000, "1000 B" },   { 1024, "1 KiB" },      { 1536, "1.5 KiB" },
		{ 4 << 20, "4 MiB" }, { 1536 << 10, "1536 KiB" }, { 3ULL << 30, "3 GiB" }, { (1 << 20) + 1, "1.0 MiB" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gp_size_label(cases[i].bytes, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].text);
	}
}

static void malformed_stack_records(void **state)
{
	struct gp_model *m = new_model(100);
	struct gp_api_call c = launch(KERNEL_FN);
	struct gp_api_call_stack r;
	size_t len = with_stack(&r, &c, (const __u64[]){ MAIN_RET }, 1, 0);

	r.nframes = 2; /* the size says one frame */
	assert_int_equal(gp_model_ingest(m, &r, len), -EINVAL);
	r.nframes = 0;
	r.call.hdr.size = (__u16)GP_STACK_REC_SIZE(0);
	assert_int_equal(gp_model_ingest(m, &r, GP_STACK_REC_SIZE(0)), -EINVAL);
	assert_int_equal(gp_model_drop_get(m, "malformed_records"), 2);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dedup_and_exact_counts),
		cmocka_unit_test(bounded_with_an_overflow_stack),
		cmocka_unit_test(truncation_and_symbols),
		cmocka_unit_test(folded_lines),
		cmocka_unit_test(size_labels),
		cmocka_unit_test(malformed_stack_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
