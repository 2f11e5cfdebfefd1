/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_model_stacks.c — call stacks through gp_model_ingest(): records with
 * a stack deduplicated exactly (same frames, one stack; one row per API and
 * operation), the --max-stacks bound with its overflow stack and drop
 * counter, truncation (depth limit, unread, stopped before a thread start),
 * symbolization through a fake resolver, the folded writer (merged equal
 * paths, the root, [truncated] and leaf frames) and the size labels; and
 * the unwinder's records (GP_EV_API_CALL_USTACK) with Python frames: named
 * once per (code, word) at first sight, merged in place of the eval-loop
 * frames that ran them, part of a stack's identity, labelled
 * "qualname (file:line)", and their fields in report.json.
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

#include "text/labels.h"
#include "stack_formats/stack_paths.h"
#include "records.h"

#define MAIN_RET   0x400100 /* main, called from the C library */
#define STEP_A_RET 0x400200
#define STEP_B_RET 0x400300
#define LIBC_RET   0x7f0000001000
#define KERNEL_FN  0x400900 /* the host function launched */

/* A CPython process's native frames (return addresses) */
#define FOO_RET	      0x7f2000001100ULL /* foo_launch in libfoo.so: the call site */
#define CFUNC_RET     0x560000011100ULL /* cfunction_call: C code Python called */
#define EVAL_RET      0x560000022100ULL /* _PyEval_EvalFrameDefault: runs Python frames */
#define EVAL_COLD_RET 0x560000033100ULL /* _PyEval_EvalFrameDefault.cold: the eval loop too */
#define EVAL_X_RET    0x560000044100ULL /* _PyEval_EvalFrameDefaultX: another function */
#define PYCALL_RET    0x560000055100ULL /* _PyObject_Call: C between two eval activations */

/* Its code objects, as the fake resolver names them; lines from the instruction (8 bytes each) */
#define CODE_FWD  0x7f3a00010000ULL /* Model.forward, model/train.py from line 13 */
#define CODE_STEP 0x7f3a00020000ULL /* train_step, train.py from line 40 */
#define CODE_MOD  0x7f3a00030000ULL /* <module>, train.py from line 1 */
#define CODE_UTIL 0x7f3a00040000ULL /* helper, util.py: its instructions have no line (0) */
#define CODE_GONE 0x7f3a00050000ULL /* cannot be read: not named */

#define T_PID2 5151 /* another process, where CODE_FWD is another function */
#define ENTRY  GP_PYF_ENTRY
#define N(a)   (sizeof(a) / sizeof((a)[0]))

/* One record with a stack, the way the return probe builds it. */
static size_t with_stack(struct gp_api_call_stack *out, const struct gp_api_call *c,
			 const __u64 *ips, unsigned n, __u16 flags)
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

static void feed_stack(struct gp_model *m, const struct gp_api_call *c, const __u64 *ips,
		       unsigned n, __u16 flags)
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

static int fake_kernel_name(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack,
			    unsigned nstack, char *name, size_t name_len, char *mangled,
			    size_t mangled_len)
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
	static const struct {
		__u64 ret;
		const char *symbol, *file;
	} py_natives[] = {
		{ FOO_RET, "foo_launch", "/opt/lib/libfoo.so" },
		{ CFUNC_RET, "cfunction_call", "/usr/bin/python3.12" },
		{ EVAL_RET, "_PyEval_EvalFrameDefault", "/usr/bin/python3.12" },
		{ EVAL_COLD_RET, "_PyEval_EvalFrameDefault.cold", "/usr/bin/python3.12" },
		{ EVAL_X_RET, "_PyEval_EvalFrameDefaultX", "/usr/bin/python3.12" },
		{ PYCALL_RET, "_PyObject_Call", "/usr/bin/python3.12" },
	};

	memset(out, 0, sizeof(*out));
	out->build_id = "";
	for (size_t i = 0; i < N(py_natives); i++)
		if (addr == py_natives[i].ret - 1) {
			out->function = out->symbol = py_natives[i].symbol;
			out->file = py_natives[i].file;
			out->source = GP_SYM_ELF;
			out->file_offset = addr & 0xfff;
			return 0;
		}
	if (addr >= MAIN_RET - 1 && addr < MAIN_RET + 0x20)
		out->function = out->symbol = "main";
	else if (addr == STEP_A_RET - 1)
		out->function = out->symbol = "step_a";
	else if (addr == STEP_B_RET - 1)
		out->function = out->symbol = "step_b";
	else if (addr == LIBC_RET - 1)
		out->file =
			"/usr/lib/x86_64-linux-gnu/libc.so.6"; /* its start functions are stripped */
	else
		return -ENOENT;
	if (out->symbol) {
		out->file = "/work/app";
		out->source = GP_SYM_ELF;
	}
	out->file_offset = addr & 0xfff;
	return 0;
}

/* The interpreter's answers: a code object's names, the line of the instruction a frame was at. */
static int py_calls; /* questions asked */

static int fake_py_frame(void *ctx, __u32 tgid, __u64 code, __u64 word, struct gp_py_frame_sym *out)
{
	unsigned lines = GP_PYF_INSTR(word) / 8;

	py_calls++;
	memset(out, 0, sizeof(*out));
	assert_true(tgid == T_PID || tgid == T_PID2);
	switch (code) {
	case CODE_FWD: /* the same address in another process is another code object */
		if (tgid == T_PID)
			*out = (struct gp_py_frame_sym){ "Model.forward", "/srv/job/model/train.py",
							 13 + lines };
		else
			*out = (struct gp_py_frame_sym){ "Other.run", "/srv/run.py", 7 + lines };
		return 0;
	case CODE_STEP:
		*out = (struct gp_py_frame_sym){ "train_step", "/srv/job/train.py", 40 + lines };
		return 0;
	case CODE_MOD:
		*out = (struct gp_py_frame_sym){ "<module>", "/srv/job/train.py", 1 + lines };
		return 0;
	case CODE_UTIL:
		*out = (struct gp_py_frame_sym){ "helper", "/srv/job/util.py", 0 };
		return 0;
	default:
		return -EFAULT; /* the code object was freed before it could be read */
	}
}

static struct gp_model *new_model(size_t max_stacks)
{
	static const struct gp_resolver r = { .kernel_name = fake_kernel_name,
					      .demangle_short = fake_short,
					      .stack_seen = fake_seen,
					      .symbolize = fake_symbolize,
					      .py_frame = fake_py_frame };
	struct gp_model *m = gp_model_new(&r);

	assert_non_null(m);
	gp_model_set_stacks(m, true, max_stacks);
	seen_calls = 0;
	py_calls = 0;
	return m;
}

static void dedup_and_exact_counts(void **state)
{
	struct gp_model *m = new_model(100);
	const __u64 a[] = { STEP_A_RET, MAIN_RET, LIBC_RET },
		    b[] = { STEP_B_RET, MAIN_RET, LIBC_RET };
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
	assert_string_equal(p->stacks.v[0]->ops[0].op.kernel->name,
			    "void gemm<float>(float*, int)");
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
	feed_stack(m, &c, cut, 2, 0);			 /* never reaches the C library */
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
	assert_int_equal(p->stacks.frames[p->stacks.v[0]->frame_ids[0]].file_offset,
			 STEP_A_RET & 0xfff);
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
	const __u64 a1[] = { STEP_A_RET, MAIN_RET, LIBC_RET },
		    a2[] = { STEP_A_RET, MAIN_RET + 8, LIBC_RET };
	const __u64 cut[] = { STEP_B_RET, MAIN_RET };
	struct gp_api_call c = launch(KERNEL_FN);
	struct gp_api_call cp = rec_memcpy(GP_API_CUDA_MEMCPY, 0x7000000, 0x600000, 4 << 20,
					   GP_MEMCPY_HTOD, 0, 500, 0);
	char *text;

	assert_int_equal(gp_model_process_add(m, T_PID, "train", "train", 0, true), 0);
	feed_stack(m, &c, a1, 3, 0);
	feed_stack(m, &c, a2, 3, 0);
	feed_stack(m, &cp, cut, 2, 0);
	feed_stack(m, &cp, cut, 2, 0);
	gp_model_symbolize_stacks(m, NULL);
	text = folded(m, GP_W_CALLS);
	/* heaviest stack first: the copy stack has 2 calls, each launch stack 1 (merged in one line) */
	assert_string_equal(
		text,
		"train (pid 4242);[truncated];main;step_b;cudaMemcpy;[HtoD 4 MiB pageable] 2\n"
		"train (pid 4242);libc.so.6+0x1000;main;step_a;cudaLaunchKernel;[kernel] gemm<float> 2\n");
	free(text);
	text = folded(m, GP_W_BYTES); /* launches move no bytes: no line */
	assert_string_equal(
		text,
		"train (pid 4242);[truncated];main;step_b;cudaMemcpy;[HtoD 4 MiB pageable] 8388608\n");
	free(text);
	gp_model_free(m);
}

static void size_labels(void **state)
{
	static const struct {
		__u64 bytes;
		const char *text;
	} cases[] = {
		{ 0, "0 B" },
		{ 1000, "1000 B" },
		{ 1024, "1 KiB" },
		{ 1536, "1.5 KiB" },
		{ 4 << 20, "4 MiB" },
		{ 1536 << 10, "1536 KiB" },
		{ 3ULL << 30, "3 GiB" },
		{ (1 << 20) + 1, "1.0 MiB" },
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

/* ---- Python frames (GP_EV_API_CALL_USTACK) ------------------------------- */

/* A stack's frames once symbolized, innermost first, labelled as the sinks do, " | " between. */
static const char *stack_text(const struct gp_process *p, const struct gp_stack *k)
{
	static char buf[4096];
	char frame[512];
	size_t len = 0;

	assert_non_null(k->frame_ids);
	buf[0] = 0;
	for (unsigned i = 0; i < k->nsym; i++) {
		gp_stack_frame_label(&p->stacks.frames[k->frame_ids[i]], frame, sizeof(frame));
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? " | " : "",
					frame);
	}
	assert_true(len < sizeof(buf));
	return buf;
}

/* The process's frame of a native return address. */
static const struct gp_stack_frame *native_frame(const struct gp_process *p, __u64 addr)
{
	for (size_t i = 0; i < p->stacks.nframes; i++)
		if (p->stacks.frames[i].kind == GP_FRAME_NATIVE && p->stacks.frames[i].addr == addr)
			return &p->stacks.frames[i];
	fail_msg("no frame at 0x%llx", (unsigned long long)addr);
	return NULL;
}

/*
 * Each native frame in the eval loop is replaced by the Python frames its
 * activation ran: the next recorded ones (innermost first) up to and
 * including the one entered from C (GP_PYF_ENTRY). The C frames between
 * them stay where they are.
 */
static void eval_frames_replaced_by_python_frames(void **state)
{
	struct gp_model *m = new_model(100);
	/* the call site, C called from Python, eval, C between, eval, main, the C library */
	const __u64 nat[] = {
		FOO_RET, CFUNC_RET, EVAL_RET, PYCALL_RET, EVAL_RET, MAIN_RET, LIBC_RET
	};
	const __u64 py[] = { CODE_FWD,	PYW(4, 0),	 /* f3 */
			     CODE_STEP, PYW(20, ENTRY),	 /* f2, entered from C */
			     CODE_MOD,	PYW(2, ENTRY) }; /* f1, entered from C */
	struct gp_api_call c = launch(KERNEL_FN);
	const struct gp_stack *k;
	struct gp_process *p;

	feed_ustack(m, &c, USTACK(nat, py, .py_status = GP_PY_OK));
	gp_model_symbolize_stacks(m, NULL);
	p = gp_model_process_get(m, T_PID);
	assert_int_equal(p->stacks.n, 1);
	k = p->stacks.v[0];
	assert_int_equal(k->nframes, 7);
	assert_int_equal(k->npy, 3);
	assert_int_equal(k->nsym, 8); /* 7 native, less 2 eval frames, and 3 Python frames */
	assert_int_equal(k->py_unanchored, 0);
	assert_int_equal(k->trunc, GP_TRUNC_NONE); /* ends in the C library */
	assert_string_equal(stack_text(p, k),
			    "foo_launch | cfunction_call | Model.forward (train.py:13) | "
			    "train_step (train.py:42) | _PyObject_Call | <module> (train.py:1) | "
			    "main | libc.so.6+0x1000");
	/* the Python frames in place are those named at first sight */
	assert_int_equal(k->frame_ids[2], k->py_ids[0]);
	assert_int_equal(k->frame_ids[3], k->py_ids[1]);
	assert_int_equal(k->frame_ids[5], k->py_ids[2]);
	assert_true(native_frame(p, EVAL_RET)->python_eval);
	assert_false(native_frame(p, PYCALL_RET)->python_eval);
	gp_model_free(m);
}

/*
 * The eval loop is known by its symbol: "_PyEval_EvalFrameDefault" and the
 * compiler's split part "_PyEval_EvalFrameDefault.cold"; a longer name
 * that only starts the same is another function.
 */
static void eval_loop_by_symbol(void **state)
{
	struct gp_model *m = new_model(100);
	const __u64 nat[] = { FOO_RET, EVAL_COLD_RET, EVAL_X_RET, MAIN_RET, LIBC_RET };
	const __u64 py[] = { CODE_FWD, PYW(4, ENTRY) };
	struct gp_api_call c = launch(KERNEL_FN);
	struct gp_process *p;

	feed_ustack(m, &c, USTACK(nat, py, .py_status = GP_PY_OK));
	gp_model_symbolize_stacks(m, NULL);
	p = gp_model_process_get(m, T_PID);
	assert_string_equal(stack_text(p, p->stacks.v[0]),
			    "foo_launch | Model.forward (train.py:13) | "
			    "_PyEval_EvalFrameDefaultX | main | libc.so.6+0x1000");
	assert_true(native_frame(p, EVAL_COLD_RET)->python_eval);
	assert_false(native_frame(p, EVAL_X_RET)->python_eval);
	assert_false(native_frame(p, FOO_RET)->python_eval);
	gp_model_free(m);
}

/*
 * Whole or cut short: a table's end row is the outermost frame itself (the
 * stack is whole wherever it ends); a frame-pointer chain that ends away
 * from a thread's start was cut by code that clobbered the frame pointer.
 */
static void end_row_is_whole_frame_pointer_end_is_checked(void **state)
{
	struct gp_model *m = new_model(100);
	const __u64 short_stack[] = { STEP_A_RET, MAIN_RET },
		    to_libc[] = { STEP_A_RET, MAIN_RET, LIBC_RET };
	struct gp_api_call c = launch(KERNEL_FN);
	struct gp_process *p;

	feed_ustack(m, &c, USTACK_NATIVE(short_stack, .stop = GP_STOP_END));
	feed_ustack(m, &c, USTACK_NATIVE(to_libc, .stop = GP_STOP_FP_END, .frames_fp = 3));
	feed_ustack(m, &c,
		    USTACK_NATIVE(short_stack, .stop = GP_STOP_FP_END,
				  .frames_fp = 2)); /* the first's */
	gp_model_symbolize_stacks(m, NULL);
	p = gp_model_process_get(m, T_PID);
	assert_int_equal(p->stacks.n, 2);
	assert_int_equal(p->stacks.v[0]->trunc, GP_TRUNC_NONE); /* END: whole */
	assert_int_equal(p->stacks.v[1]->trunc,
			 GP_TRUNC_NONE); /* FP end at the C library's start */
	gp_model_free(m);

	m = new_model(100);
	feed_ustack(m, &c, USTACK_NATIVE(short_stack, .stop = GP_STOP_FP_END, .frames_fp = 2));
	gp_model_symbolize_stacks(m, NULL);
	p = gp_model_process_get(m, T_PID);
	assert_int_equal(p->stacks.v[0]->trunc, GP_TRUNC_UNWIND); /* FP end in main: cut */
	gp_model_free(m);
}

/*
 * An eval frame with no Python frames left stays a native frame; Python
 * frames whose eval frames the native walk did not reach go at the outer
 * end, in order, counted in py_unanchored; an activation without an entry
 * frame takes all the Python frames left.
 */
static void python_frames_left_over_and_eval_frames_left_alone(void **state)
{
	struct gp_model *m = new_model(100);
	const __u64 two_evals[] = { FOO_RET, EVAL_RET, PYCALL_RET, EVAL_RET, MAIN_RET, LIBC_RET };
	const __u64 cut[] = { FOO_RET, EVAL_RET, PYCALL_RET }, call_site[] = { FOO_RET };
	const __u64 one[] = { CODE_FWD, PYW(4, ENTRY) };
	const __u64 three[] = { CODE_FWD,	PYW(4, ENTRY), CODE_STEP,
				PYW(20, ENTRY), CODE_MOD,      PYW(2, ENTRY) };
	const __u64 no_entry[] = { CODE_FWD, PYW(4, 0), CODE_STEP, PYW(20, 0) };
	struct gp_api_call c = launch(KERNEL_FN);
	struct gp_process *p;

	feed_ustack(m, &c, USTACK(two_evals, one));
	feed_ustack(m, &c, USTACK(cut, three, .stop = GP_STOP_NO_TABLE));
	feed_ustack(m, &c, USTACK(call_site, no_entry, .stop = GP_STOP_NO_MAPPING));
	feed_ustack(m, &c, USTACK(two_evals, no_entry));
	gp_model_symbolize_stacks(m, NULL);
	p = gp_model_process_get(m, T_PID);
	assert_int_equal(p->stacks.n, 4);
	/* the outer eval frame has no Python frame left */
	assert_string_equal(stack_text(p, p->stacks.v[0]),
			    "foo_launch | Model.forward (train.py:13) | _PyObject_Call | "
			    "_PyEval_EvalFrameDefault | main | libc.so.6+0x1000");
	assert_int_equal(p->stacks.v[0]->py_unanchored, 0);
	assert_int_equal(p->stacks.v[0]->trunc, GP_TRUNC_NONE);
	/* the walk stopped in code without a table: two Python frames beyond it */
	assert_string_equal(stack_text(p, p->stacks.v[1]),
			    "foo_launch | Model.forward (train.py:13) | _PyObject_Call | "
			    "train_step (train.py:42) | <module> (train.py:1)");
	assert_int_equal(p->stacks.v[1]->nsym, 5);
	assert_int_equal(p->stacks.v[1]->py_unanchored, 2);
	assert_int_equal(p->stacks.v[1]->trunc, GP_TRUNC_NO_UNWIND_INFO);
	/* no eval frame at all: every Python frame outermost */
	assert_string_equal(stack_text(p, p->stacks.v[2]),
			    "foo_launch | Model.forward (train.py:13) | train_step (train.py:42)");
	assert_int_equal(p->stacks.v[2]->py_unanchored, 2);
	assert_int_equal(p->stacks.v[2]->trunc, GP_TRUNC_NO_MAPPING);
	/* no entry frame: the first eval frame ran both */
	assert_string_equal(stack_text(p, p->stacks.v[3]),
			    "foo_launch | Model.forward (train.py:13) | "
			    "train_step (train.py:42) | _PyObject_Call | "
			    "_PyEval_EvalFrameDefault | main | libc.so.6+0x1000");
	assert_int_equal(p->stacks.v[3]->py_unanchored, 0);
	gp_model_free(m);
}

/*
 * Python frames are named at first sight, while records arrive: once per
 * distinct (code, word) of a process, whatever stacks they are in. One
 * frame per (code, line): two words on one line share it, another line is
 * another frame. A code object the resolver cannot name is one unnamed
 * frame, each failed question counted in py_unnamed. Another process asks
 * again about the same address: another code object there.
 */
static void python_frames_named_once(void **state)
{
	struct gp_model *m = new_model(100);
	const __u64 nat[] = { FOO_RET, EVAL_RET, MAIN_RET, LIBC_RET };
	const __u64 nat2[] = { CFUNC_RET, EVAL_RET, MAIN_RET, LIBC_RET };
	const __u64 at4[] = { CODE_FWD, PYW(4, ENTRY) }, at6[] = { CODE_FWD, PYW(6, ENTRY) };
	const __u64 at10[] = { CODE_FWD, PYW(10, ENTRY) };
	const __u64 gone0[] = { CODE_GONE, PYW(0, ENTRY) }, gone8[] = { CODE_GONE, PYW(8, ENTRY) };
	struct gp_api_call c = launch(KERNEL_FN), c2 = c;
	const struct gp_stack_frame *f;
	struct gp_process *p, *p2;
	char label[64];

	c2.hdr.tgid = c2.hdr.tid = T_PID2;
	feed_ustack(m, &c, USTACK(nat, at4));
	assert_int_equal(py_calls, 1); /* at first sight, before any symbolization */
	feed_ustack(m, &c, USTACK(nat, at4));
	feed_ustack(m, &c, USTACK(nat2, at4));
	assert_int_equal(py_calls, 1); /* the same (code, word) in another stack: not asked again */
	feed_ustack(m, &c, USTACK(nat, at6));
	feed_ustack(m, &c, USTACK(nat, at10));
	assert_int_equal(py_calls, 3);
	p = gp_model_process_get(m, T_PID);
	assert_int_equal(p->stacks.n, 4);
	assert_int_equal(p->stacks.nframes, 2); /* lines 13 and 14; no native frame made yet */
	assert_int_equal(p->stacks.v[1]->py_ids[0], p->stacks.v[0]->py_ids[0]);
	/* word 6: line 13 too */
	assert_int_equal(p->stacks.v[2]->py_ids[0], p->stacks.v[0]->py_ids[0]);
	assert_int_not_equal(p->stacks.v[3]->py_ids[0], p->stacks.v[0]->py_ids[0]);
	f = &p->stacks.frames[p->stacks.v[0]->py_ids[0]];
	assert_int_equal(f->kind, GP_FRAME_PYTHON);
	assert_int_equal(f->addr, CODE_FWD);
	assert_int_equal(f->line, 13);
	assert_string_equal(f->function, "Model.forward");
	assert_string_equal(f->file, "/srv/job/model/train.py");
	assert_null(f->symbol);
	assert_string_equal(f->build_id, "");
	assert_int_equal(f->source, GP_SYM_PYTHON);
	assert_false(f->python_eval);
	assert_int_equal(p->stacks.frames[p->stacks.v[3]->py_ids[0]].line, 14);

	/* not named: one frame for the code object, each question counted */
	feed_ustack(m, &c, USTACK(nat, gone0));
	feed_ustack(m, &c, USTACK(nat, gone8));
	assert_int_equal(py_calls, 5);
	assert_int_equal(p->stacks.py_unnamed, 2);
	assert_int_equal(p->stacks.nframes, 3);
	assert_int_equal(p->stacks.v[5]->py_ids[0], p->stacks.v[4]->py_ids[0]);
	f = &p->stacks.frames[p->stacks.v[4]->py_ids[0]];
	assert_int_equal(f->kind, GP_FRAME_PYTHON);
	assert_int_equal(f->addr, CODE_GONE);
	assert_null(f->function);
	assert_null(f->file);
	assert_int_equal(f->source, GP_SYM_NONE);
	gp_stack_frame_label(f, label, sizeof(label));
	assert_string_equal(label, "[python 0x7f3a00050000]");

	/* another process: asked again, named by its own code object */
	feed_ustack(m, &c2, USTACK(nat, at4));
	assert_int_equal(py_calls, 6);
	p2 = gp_model_process_get(m, T_PID2);

	gp_model_symbolize_stacks(m, NULL);
	assert_int_equal(py_calls, 6); /* symbolizing asks nothing more */
	assert_string_equal(stack_text(p, p->stacks.v[0]),
			    "foo_launch | Model.forward (train.py:13) | main | libc.so.6+0x1000");
	assert_string_equal(stack_text(p, p->stacks.v[3]),
			    "foo_launch | Model.forward (train.py:14) | main | libc.so.6+0x1000");
	assert_string_equal(stack_text(p, p->stacks.v[4]),
			    "foo_launch | [python 0x7f3a00050000] | main | libc.so.6+0x1000");
	assert_string_equal(stack_text(p2, p2->stacks.v[0]),
			    "foo_launch | Other.run (run.py:7) | main | libc.so.6+0x1000");
	assert_int_equal(p2->stacks.py_unnamed, 0);
	gp_model_free(m);
}

/*
 * A stack's identity holds its Python frames' words: the same native frames
 * with other Python frames (others, more, another instruction of the same
 * line, none) are other stacks; the same record again is the same stack.
 */
static void python_words_in_stack_identity(void **state)
{
	struct gp_model *m = new_model(100);
	const __u64 nat[] = { FOO_RET, EVAL_RET, MAIN_RET, LIBC_RET };
	const __u64 x[] = { CODE_FWD, PYW(4, ENTRY) }, y[] = { CODE_STEP, PYW(20, ENTRY) };
	const __u64 xy[] = { CODE_FWD, PYW(4, 0), CODE_STEP, PYW(20, ENTRY) },
		    x6[] = { CODE_FWD, PYW(6, ENTRY) };
	struct gp_api_call c = launch(KERNEL_FN);
	struct gp_process *p;

	feed_ustack(m, &c, USTACK(nat, x));
	feed_ustack(m, &c, USTACK(nat, y));
	feed_ustack(m, &c, USTACK(nat, x));
	feed_ustack(m, &c, USTACK(nat, xy));
	feed_ustack(m, &c, USTACK(nat, x6));
	feed_ustack(m, &c, USTACK_NATIVE(nat));
	feed_ustack(m, &c, USTACK_NATIVE(nat));
	p = gp_model_process_get(m, T_PID);
	assert_int_equal(p->stacks.n, 5);
	assert_int_equal(seen_calls, 5); /* the resolver hears of each new stack once */
	assert_int_equal(p->stacks.calls, 7);
	assert_int_equal(p->stacks.v[0]->calls, 2);
	assert_int_equal(p->stacks.v[1]->calls, 1);
	assert_int_equal(p->stacks.v[2]->calls, 1);
	assert_int_equal(p->stacks.v[3]->calls, 1);
	assert_int_equal(p->stacks.v[4]->calls, 2);
	assert_int_equal(p->stacks.v[4]->npy, 0);
	gp_model_symbolize_stacks(m, NULL);
	/* another instruction on the same line: another stack that reads the same */
	assert_string_equal(stack_text(p, p->stacks.v[3]), stack_text(p, p->stacks.v[0]));
	assert_string_equal(stack_text(p, p->stacks.v[4]),
			    "foo_launch | _PyEval_EvalFrameDefault | main | libc.so.6+0x1000");
	gp_model_free(m);
}

/*
 * Python frames in the folded output as py-spy names them, "qualname
 * (file:line)" with the file's base name, outermost first like every frame;
 * and the label's other forms: no line, no file, no name.
 */
static void python_frame_labels(void **state)
{
	static const struct {
		struct gp_stack_frame f;
		const char *text;
	} cases[] = {
		{ { .kind = GP_FRAME_PYTHON,
		    .function = (char *)"Model.forward",
		    .file = (char *)"/srv/job/model/train.py",
		    .line = 13 },
		  "Model.forward (train.py:13)" },
		{ { .kind = GP_FRAME_PYTHON,
		    .function = (char *)"f",
		    .file = (char *)"train.py",
		    .line = 2 },
		  "f (train.py:2)" },
		{ { .kind = GP_FRAME_PYTHON,
		    .function = (char *)"helper",
		    .file = (char *)"/srv/util.py" },
		  "helper (util.py)" },
		{ { .kind = GP_FRAME_PYTHON, .function = (char *)"<lambda>", .line = 5 },
		  "<lambda>" },
		{ { .kind = GP_FRAME_PYTHON,
		    .addr = 0x7f00beef,
		    .file = (char *)"/srv/x.py",
		    .line = 5 },
		  "[python 0x7f00beef]" },
	};
	struct gp_model *m = new_model(100);
	const __u64 nat[] = { FOO_RET, EVAL_RET, MAIN_RET, LIBC_RET },
		    cut[] = { FOO_RET, CFUNC_RET };
	const __u64 py[] = { CODE_FWD, PYW(4, 0), CODE_STEP, PYW(20, ENTRY) },
		    gone[] = { CODE_GONE, PYW(0, ENTRY) };
	struct gp_api_call c = launch(KERNEL_FN);
	char buf[128], *text;

	for (size_t i = 0; i < N(cases); i++) {
		gp_stack_frame_label(&cases[i].f, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].text);
	}
	assert_int_equal(gp_model_process_add(m, T_PID, "train", "python3 train.py", 0, true), 0);
	feed_ustack(m, &c, USTACK(nat, py));
	feed_ustack(m, &c, USTACK(nat, py));
	feed_ustack(m, &c, USTACK(cut, gone, .stop = GP_STOP_NO_TABLE));
	gp_model_symbolize_stacks(m, NULL);
	text = folded(m, GP_W_CALLS);
	assert_string_equal(
		text,
		"train (pid 4242);libc.so.6+0x1000;main;train_step (train.py:42);"
		"Model.forward (train.py:13);foo_launch;cudaLaunchKernel;[kernel] gemm<float> 2\n"
		"train (pid 4242);[truncated];[python 0x7f3a00050000];cfunction_call;foo_launch;"
		"cudaLaunchKernel;[kernel] gemm<float> 1\n");
	free(text);
	gp_model_free(m);
}

/*
 * Stacks are found by hash, then compared word by word, Python words too:
 * two stacks made to share a hash (the last Python word chosen for it) stay
 * two. The hash is stacks.c's stack_hash, redone here up to the last word.
 */
static __u64 hash_before_last(const __u64 *words, unsigned nframes, unsigned npy)
{
	__u64 h = 0x243f6a8885a308d3ULL ^ nframes ^ (__u64)npy << 32;

	for (unsigned i = 0; i + 1 < nframes + 2 * npy; i++) {
		h ^= words[i];
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return h;
}

static void python_words_compared_on_a_hash_collision(void **state)
{
	struct gp_model *m = new_model(100);
	__u64 a[] = { FOO_RET, EVAL_RET, MAIN_RET, LIBC_RET, CODE_FWD, PYW(4, ENTRY) };
	__u64 b[] = { FOO_RET, EVAL_RET, MAIN_RET, LIBC_RET, CODE_STEP, 0 };
	struct gp_api_call c = launch(KERNEL_FN);
	struct gp_process *p;

	b[5] = hash_before_last(a, 4, 1) ^ a[5] ^ hash_before_last(b, 4, 1);
	feed_ustack(m, &c, &(struct ustack){ .ips = a, .n = 4, .py = a + 4, .npy = 1 });
	feed_ustack(m, &c, &(struct ustack){ .ips = b, .n = 4, .py = b + 4, .npy = 1 });
	feed_ustack(m, &c, &(struct ustack){ .ips = b, .n = 4, .py = b + 4, .npy = 1 });
	p = gp_model_process_get(m, T_PID);
	assert_int_equal(p->stacks.n, 2);
	if (p->stacks.v[0]->hash != p->stacks.v[1]->hash)
		fail_msg("no collision: stacks.c's stack_hash changed; change hash_before_last");
	assert_int_equal(p->stacks.v[0]->calls, 1);
	assert_int_equal(p->stacks.v[1]->calls, 2);
	gp_model_free(m);
}

/*
 * report.md names Python frames as every other sink does (labels.c):
 * "qualname (file:line)", "qualname (file)" when the instruction has no
 * line, "[python 0x…]" when the frame could not be named.
 */
static void python_frames_in_report_md(void **state)
{
	struct gp_model *m = new_model(100);
	const __u64 nat[] = { FOO_RET, EVAL_RET, MAIN_RET, LIBC_RET };
	const __u64 py[] = { CODE_FWD, PYW(4, 0), CODE_STEP, PYW(20, ENTRY) };
	const __u64 no_line[] = { CODE_UTIL, PYW(4, ENTRY) }, gone[] = { CODE_GONE, PYW(0, ENTRY) };
	struct gp_api_call c = launch(KERNEL_FN);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(gp_model_process_add(m, T_PID, "train", "python3 train.py", 0, true), 0);
	for (int i = 0; i < 3; i++)
		feed_ustack(m, &c, USTACK(nat, py));
	for (int i = 0; i < 2; i++)
		feed_ustack(m, &c, USTACK(nat, no_line));
	feed_ustack(m, &c, USTACK(nat, gone));
	gp_model_symbolize_stacks(m, NULL);
	assert_int_equal(gp_report_md_write(m, f), 0);
	fclose(f);
	if (!strstr(buf, "libc.so.6+0x1000 → main → train_step (train.py:42) → "
			 "Model.forward (train.py:13) → foo_launch+0x1") ||
	    !strstr(buf, "libc.so.6+0x1000 → main → helper (util.py) → foo_launch+0x1") ||
	    !strstr(buf, "libc.so.6+0x1000 → main → [python 0x7f3a00050000] → foo_launch+0x1")) {
		fprintf(stderr, "%s",
			strstr(buf, "### Who launches") ? strstr(buf, "### Who launches") : buf);
		fail_msg("report.md does not name the Python frames as the other sinks do (above)");
	}
	free(buf);
	gp_model_free(m);
}

/* ---- report.json --------------------------------------------------------- */

static const json_t *jget(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!v)
		fail_msg("no \"%s\"", key);
	return v;
}

static json_int_t jint(const json_t *o, const char *key)
{
	const json_t *v = jget(o, key);

	if (!json_is_integer(v))
		fail_msg("\"%s\" is not an integer", key);
	return json_integer_value(v);
}

static const char *jstr(const json_t *o, const char *key)
{
	const json_t *v = jget(o, key);

	if (!json_is_string(v))
		fail_msg("\"%s\" is not a string", key);
	return json_string_value(v);
}

/* got equals want (json_pack's; taken) */
static void assert_json_equal(const json_t *got, json_t *want)
{
	assert_non_null(want);
	if (!json_equal(got, want)) {
		char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT),
		     *w = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);

		fail_msg("got  %s\nwant %s", g, w);
	}
	json_decref(want);
}

static const json_t *process_of(const json_t *doc, __u32 pid)
{
	size_t i;
	const json_t *p;

	json_array_foreach(jget(doc, "processes"), i, p)
		if (jint(p, "pid") == pid)
			return p;
	fail_msg("no process %u", pid);
	return NULL;
}

/* stacks.stacks[i] */
static const json_t *jstack(const json_t *st, size_t i)
{
	const json_t *k = json_array_get(jget(st, "stacks"), i);

	assert_non_null(k);
	return k;
}

/* The frame of stacks.stacks[i].frames[j], from stacks.frames. */
static const json_t *jframe(const json_t *st, size_t i, size_t j)
{
	const json_t *f = json_array_get(
		jget(st, "frames"),
		(size_t)json_integer_value(json_array_get(jget(jstack(st, i), "frames"), j)));

	assert_non_null(f);
	return f;
}

/* A stack's frames as report.json has them: "function", Python "py:function:line"; null "null" */
static const char *json_stack_text(const json_t *st, size_t i)
{
	static char buf[2048];
	size_t len = 0, n = json_array_size(jget(jstack(st, i), "frames"));

	buf[0] = 0;
	for (size_t j = 0; j < n; j++) {
		const json_t *f = jframe(st, i, j);
		const char *fn = json_string_value(jget(f, "function"));

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s%s", j ? " " : "",
					!strcmp(jstr(f, "kind"), "python") ? "py:" : "",
					fn ? fn : "null");
		if (json_is_integer(jget(f, "line")))
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, ":%lld",
						(long long)jint(f, "line"));
	}
	assert_true(len < sizeof(buf));
	return buf;
}

/*
 * report.json: Python frames (kind, line, source), each stack's native,
 * frame-pointer and Python frame counts, the Python walk's status, frames
 * not anchored, why walks stopped (truncated, unwind_stop, truncated_by
 * with stacks and calls), frames not named; records of the older kind
 * (GP_EV_API_CALL_STACK) as frame-pointer frames all.
 */
static void python_stacks_in_report_json(void **state)
{
	struct gp_model *m = new_model(100);
	const __u64 merged[] = { FOO_RET,  CFUNC_RET, EVAL_RET, PYCALL_RET,
				 EVAL_RET, MAIN_RET,  LIBC_RET };
	const __u64 py3[] = { CODE_FWD,	      PYW(4, 0), CODE_STEP,
			      PYW(20, ENTRY), CODE_MOD,	 PYW(2, ENTRY) };
	const __u64 table_stop[] = { FOO_RET, PYCALL_RET },
		    cut[] = { FOO_RET, EVAL_RET, PYCALL_RET };
	const __u64 each_entry[] = { CODE_FWD,	     PYW(4, ENTRY), CODE_STEP,
				     PYW(20, ENTRY), CODE_MOD,	    PYW(2, ENTRY) };
	const __u64 cut2[] = { FOO_RET, CFUNC_RET }, gone[] = { CODE_GONE, PYW(0, ENTRY) };
	const __u64 old_full[] = { STEP_A_RET, MAIN_RET, LIBC_RET },
		    old_cut[] = { STEP_B_RET, MAIN_RET };
	struct gp_api_call c = launch(KERNEL_FN);
	const json_t *st, *k;
	json_t *doc;

	assert_int_equal(gp_model_process_add(m, T_PID, "train", "python3 train.py", 0, true), 0);
	for (int i = 0; i < 6; i++)
		feed_ustack(m, &c, USTACK(merged, py3, .py_status = GP_PY_OK, .frames_fp = 2));
	for (int i = 0; i < 5; i++)
		feed_ustack(m, &c,
			    USTACK_NATIVE(table_stop, .stop = GP_STOP_TABLE,
					  .detail = GP_UW_STOP_CFAREG,
					  .py_status = GP_PY_NO_THREAD));
	for (int i = 0; i < 4; i++)
		feed_ustack(m, &c,
			    USTACK(cut, each_entry, .stop = GP_STOP_NO_TABLE, .py_status = GP_PY_OK,
				   .frames_fp = 1));
	for (int i = 0; i < 3; i++)
		feed_ustack(m, &c,
			    USTACK(cut2, gone, .stop = GP_STOP_NO_TABLE, .py_status = GP_PY_READ));
	for (int i = 0; i < 2; i++)
		feed_stack(m, &c, old_full, N(old_full), 0);
	feed_stack(m, &c, old_cut, N(old_cut), 0);
	gp_model_symbolize_stacks(m, NULL);
	doc = gp_report_doc(m);
	assert_non_null(doc);
	st = jget(process_of(doc, T_PID), "stacks");

	assert_int_equal(jint(st, "distinct"), 6);
	assert_int_equal(jint(st, "calls"), 21);
	assert_int_equal(jint(st, "truncated_stacks"), 4);
	assert_int_equal(jint(st, "python_unnamed"), 1);
	assert_json_equal(jget(st, "truncated_by"),
			  json_pack("{s:{s:i,s:i},s:{s:i,s:i},s:{s:i,s:i}}", "unwind_table",
				    "stacks", 1, "calls", 5, "no_unwind_info", "stacks", 2, "calls",
				    7, "unwind", "stacks", 1, "calls", 1));

	/* most calls first: the whole stack, its eval frames replaced */
	assert_string_equal(json_stack_text(st, 0),
			    "foo_launch cfunction_call py:Model.forward:13 py:train_step:42 "
			    "_PyObject_Call py:<module>:1 main null");
	k = jstack(st, 0);
	assert_true(json_is_null(jget(k, "truncated")));
	assert_true(json_is_null(jget(k, "unwind_stop")));
	assert_int_equal(jint(k, "native_frames"), 7);
	assert_int_equal(jint(k, "frame_pointer_frames"), 2);
	assert_int_equal(jint(k, "python_frames"), 3);
	assert_string_equal(jstr(k, "python"), "ok");
	assert_int_equal(jint(k, "python_unanchored"), 0);
	assert_int_equal(jint(k, "calls"), 6);

	/* the table said the caller cannot be found from here, and why */
	assert_string_equal(json_stack_text(st, 1), "foo_launch _PyObject_Call");
	k = jstack(st, 1);
	assert_string_equal(jstr(k, "truncated"), "unwind_table");
	assert_string_equal(jstr(k, "unwind_stop"), "cfa_register");
	assert_string_equal(jstr(k, "python"), "no_thread");
	assert_int_equal(jint(k, "native_frames"), 2);
	assert_int_equal(jint(k, "frame_pointer_frames"), 0);
	assert_int_equal(jint(k, "python_frames"), 0);

	/* code without a table: two Python frames beyond the walk */
	assert_string_equal(json_stack_text(st, 2),
			    "foo_launch py:Model.forward:13 _PyObject_Call py:train_step:42 "
			    "py:<module>:1");
	k = jstack(st, 2);
	assert_string_equal(jstr(k, "truncated"), "no_unwind_info");
	assert_true(json_is_null(jget(k, "unwind_stop")));
	assert_int_equal(jint(k, "python_unanchored"), 2);
	assert_int_equal(jint(k, "frame_pointer_frames"), 1);

	/* a Python frame that could not be named */
	assert_string_equal(json_stack_text(st, 3), "foo_launch cfunction_call py:null");
	k = jstack(st, 3);
	assert_string_equal(jstr(k, "python"), "unread");
	assert_int_equal(jint(k, "python_unanchored"), 1);

	/* the older record kind: every frame by frame pointer, no Python walk */
	assert_string_equal(json_stack_text(st, 4), "step_a main null");
	assert_true(json_is_null(jget(jstack(st, 4), "truncated")));
	assert_string_equal(json_stack_text(st, 5), "step_b main");
	assert_string_equal(jstr(jstack(st, 5), "truncated"), "unwind");
	for (size_t i = 4; i < 6; i++) {
		k = jstack(st, i);
		assert_int_equal(jint(k, "native_frames"), i == 4 ? 3 : 2);
		assert_int_equal(jint(k, "frame_pointer_frames"), jint(k, "native_frames"));
		assert_int_equal(jint(k, "python_frames"), 0);
		assert_true(json_is_null(jget(k, "python")));
		assert_int_equal(jint(k, "python_unanchored"), 0);
	}

	/* the frames themselves: a Python frame named, one not, a native one */
	assert_json_equal(jframe(st, 0, 2),
			  json_pack("{s:s,s:s,s:s,s:n,s:n,s:s,s:n,s:s,s:i,s:s}", "kind", "python",
				    "address", "0x7f3a00010000", "function", "Model.forward",
				    "symbol", "offset", "file", "/srv/job/model/train.py",
				    "file_offset", "build_id", "", "line", 13, "source", "python"));
	assert_json_equal(jframe(st, 3, 2),
			  json_pack("{s:s,s:s,s:n,s:n,s:n,s:n,s:n,s:s,s:n,s:n}", "kind", "python",
				    "address", "0x7f3a00050000", "function", "symbol", "offset",
				    "file", "file_offset", "build_id", "", "line", "source"));
	assert_json_equal(jframe(st, 0, 0),
			  json_pack("{s:s,s:s,s:s,s:s,s:i,s:s,s:i,s:s,s:n,s:s}", "kind", "native",
				    "address", "0x7f2000001100", "function", "foo_launch", "symbol",
				    "foo_launch", "offset", 1, "file", "/opt/lib/libfoo.so",
				    "file_offset", 0x100, "build_id", "", "line", "source", "elf"));
	json_decref(doc);
	gp_model_free(m);
}

/*
 * What was found of each process's interpreter (process.python: version
 * from PY_VERSION_HEX, whether its frames are walked, the note; null where
 * nothing was said), and the unwind tables' state (session.unwind, null
 * until given; a later state replaces it, its file name copied).
 */
static void python_and_unwind_in_report_json(void **state)
{
	struct gp_model *m = new_model(100);
	struct gp_unwind_summary u = rec_unwind();
	char file[64];
	json_t *doc;

	assert_int_equal(gp_model_process_add(m, T_PID, "train", "python3 train.py", 0, true), 0);
	assert_int_equal(gp_model_process_add(m, T_PID2, "run", "python3 run.py", 0, true), 0);
	assert_int_equal(gp_model_process_add(m, 6161, "app", "./app", 0, true), 0);
	assert_int_equal(gp_model_process_python(m, T_PID, 0x030c04f0, true, "CPython 3.12.4"), 0);
	assert_int_equal(gp_model_process_python(m, T_PID2, 0, false, "no interpreter found"), 0);
	/* not a process of the model */
	assert_int_equal(gp_model_process_python(m, 7777, 0x030b00f0, true, NULL), -ENOENT);
	doc = gp_report_doc(m);
	assert_non_null(doc);
	assert_json_equal(jget(process_of(doc, T_PID), "python"),
			  json_pack("{s:s,s:b,s:s}", "version", "3.12.4", "frames_walked", 1,
				    "note", "CPython 3.12.4"));
	assert_json_equal(jget(process_of(doc, T_PID2), "python"),
			  json_pack("{s:n,s:b,s:s}", "version", "frames_walked", 0, "note",
				    "no interpreter found"));
	assert_true(json_is_null(jget(process_of(doc, 6161), "python")));
	assert_true(json_is_null(jget(jget(doc, "session"), "unwind")));
	json_decref(doc);

	snprintf(file, sizeof(file), "%s", u.build_max_file);
	u.build_max_file = file;
	gp_model_set_unwind(m, &u);
	memset(file, 'x', sizeof(file) - 1); /* the model keeps its own copy */
	doc = gp_report_doc(m);
	assert_non_null(doc);
	assert_json_equal(
		jget(jget(doc, "session"), "unwind"),
		json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:I,"
			  "s:i,s:i,s:s,s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i},s:i}",
			  "processes", 2, "processes_max", 64, "processes_refused", 1, "mappings",
			  40, "mappings_without_table", 3, "mappings_left_out", 4, "tables", 12,
			  "tables_built", 10, "tables_reused", 9, "tables_evicted", 5, "rows",
			  90000, "rows_max", 1 << 20, "pool_rows", 100000, "pool_bytes",
			  (json_int_t)(100000 * sizeof(struct gp_uw_row)), "build_ns", 7000000,
			  "build_ns_max", 3000000, "build_max_file", "/usr/lib/libtorch_cuda.so",
			  "files_without_table", "open", 11, "not_elf", 13, "no_unwind_info", 17,
			  "too_big", 19, "pool_full", 23, "tables_full", 29, "no_segment", 31,
			  "other", 37, "python_holds", 41));
	json_decref(doc);
	/* replaced: no file built */
	gp_model_set_unwind(m, &(struct gp_unwind_summary){ .procs = 1 });
	doc = gp_report_doc(m);
	assert_non_null(doc);
	assert_int_equal(jint(jget(jget(doc, "session"), "unwind"), "processes"), 1);
	assert_int_equal(jint(jget(jget(doc, "session"), "unwind"), "tables_built"), 0);
	assert_true(json_is_null(jget(jget(jget(doc, "session"), "unwind"), "build_max_file")));
	json_decref(doc);
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
		cmocka_unit_test(eval_frames_replaced_by_python_frames),
		cmocka_unit_test(eval_loop_by_symbol),
		cmocka_unit_test(python_frames_left_over_and_eval_frames_left_alone),
		cmocka_unit_test(python_frames_named_once),
		cmocka_unit_test(python_words_in_stack_identity),
		cmocka_unit_test(python_words_compared_on_a_hash_collision),
		cmocka_unit_test(python_frame_labels),
		cmocka_unit_test(end_row_is_whole_frame_pointer_end_is_checked),
		cmocka_unit_test(python_frames_in_report_md),
		cmocka_unit_test(python_stacks_in_report_json),
		cmocka_unit_test(python_and_unwind_in_report_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
