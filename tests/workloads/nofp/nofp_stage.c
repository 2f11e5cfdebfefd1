/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nofp_stage.c — libnofpstage.so, the library of the nofp_stacks workload:
 * call sites of the runtime and the frames above them in a library built
 * -O2 -fomit-frame-pointer, whose frames differ in the ways an unwinder must
 * read from .eh_frame — several callee-saved registers pushed, locals, a frame
 * of more than a page, recursion — and a call back into the executable. Each
 * call site takes backtrace() right before its call and hands both to the
 * executable (nf_ctx.note), which keeps the reference.
 */
#include <string.h>

#include "nofp.h"

#define KiB 1024u

volatile unsigned long nfl_sink[6]; /* values kept live across calls */

SP_FRAME void nfl_kernel(float *x)
{
	x[0] = x[1] + 1.0f;
}

/* HtoD copies of NF_COPY_IN_BYTES from one call site */
SP_FRAME void nfl_copy_in(const struct nf_ctx *cx, int times)
{
	for (int i = 0; i < times; i++) {
		struct nf_call c = { .op = NF_COPY_HTOD,
				     .api = "cudaMemcpy",
				     .bytes = NF_COPY_IN_BYTES };

		cx->host[i] = (char)i;
		c.nbt = backtrace(c.bt, NF_MAX_BT);
		c.err = cudaMemcpy(cx->dev, cx->host, NF_COPY_IN_BYTES, cudaMemcpyHostToDevice);
		cx->note(&c);
	}
	SP_KEEP();
}

SP_FRAME void nfl_copy_out(const struct nf_ctx *cx)
{
	struct nf_call c = { .op = NF_COPY_DTOH, .api = "cudaMemcpy", .bytes = NF_COPY_OUT_BYTES };

	c.nbt = backtrace(c.bt, NF_MAX_BT);
	c.err = cudaMemcpy(cx->host, cx->dev, NF_COPY_OUT_BYTES, cudaMemcpyDeviceToHost);
	cx->note(&c);
	SP_KEEP();
}

/* locals on the stack (an array the compiler cannot drop), then three calls */
SP_FRAME void nfl_stage_mid(const struct nf_ctx *cx, int times)
{
	volatile unsigned long scratch[24];

	for (int i = 0; i < 24; i++)
		scratch[i] = (unsigned long)i * (unsigned long)times;
	nfl_copy_in(cx, times);
	SP_KEEP();
	nfl_copy_out(cx);
	SP_KEEP();
	cx->apply(cx, times + (int)(scratch[3] & 0)); /* into the executable */
	SP_KEEP();
}

/*
 * Values live across the call in callee-saved registers: the prologue pushes several of them
 * (the CFA moves with each push) and the epilogue pops them.
 */
SP_FRAME void nfl_stage_enter(const struct nf_ctx *cx, int times)
{
	unsigned long a = (unsigned long)cx, b = (unsigned long)times * 3, c = a ^ b, d = a + 7 * b;
	unsigned long e = c * 5 + d, f = e ^ (a >> 3);

	nfl_stage_mid(cx, times);
	SP_KEEP();
	nfl_sink[0] = a;
	nfl_sink[1] = b;
	nfl_sink[2] = c;
	nfl_sink[3] = d;
	nfl_sink[4] = e;
	nfl_sink[5] = f;
}

SP_FRAME void nfl_leaf_launch(const struct nf_ctx *cx, int times)
{
	for (int i = 0; i < times; i++) {
		void *dev = cx->dev;
		void *args[] = { &dev };
		struct nf_call c = { .op = NF_LAUNCH,
				     .api = "cudaLaunchKernel",
				     .kernel = "nfl_kernel" };

		c.nbt = backtrace(c.bt, NF_MAX_BT);
		c.err = cudaLaunchKernel((const void *)nfl_kernel, (dim3){ 2, 1, 1 },
					 (dim3){ 64, 1, 1 }, args, 0, NULL);
		cx->note(&c);
	}
	SP_KEEP();
}

/* depth levels of itself, then times launches: one stack per depth */
SP_FRAME void nfl_recurse(const struct nf_ctx *cx, int depth, int times)
{
	volatile char pad[40];

	pad[depth % 40] = (char)depth;
	if (depth > 1)
		nfl_recurse(cx, depth - 1, times);
	else
		nfl_leaf_launch(cx, times);
	SP_KEEP();
	pad[0] = pad[depth % 40];
}

SP_FRAME void nfl_stream_wait(const struct nf_ctx *cx, int times)
{
	for (int i = 0; i < times; i++) {
		struct nf_call c = { .op = NF_STREAM_SYNC, .api = "cudaStreamSynchronize" };

		c.nbt = backtrace(c.bt, NF_MAX_BT);
		c.err = cudaStreamSynchronize(NULL);
		cx->note(&c);
	}
	SP_KEEP();
}

/* a frame of more than a page: the CFA is far from the stack pointer */
SP_FRAME void nfl_big_frame(const struct nf_ctx *cx, int times)
{
	volatile char page[12 * KiB];

	memset((char *)page, times, sizeof(page)); /* the array lives across the call */
	nfl_stream_wait(cx, times);
	SP_KEEP();
	page[0] = page[1];
}
