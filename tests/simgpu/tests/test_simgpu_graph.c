/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_simgpu_graph.c — stream capture and graphs: captured work does not
 * run, a launched graph replays it (timing and data effects included), a
 * fork/join capture across two streams, and the capture error codes
 * (legacy stream, not capturing, synchronising while capturing,
 * legacy-stream work during a capture, invalid handles).
 * Kernels: g2 = 2 ms. Replay times are the model's (simgpu.h), exact, with
 * a gate holding the stream while the host launches the graph.
 */
#include <string.h>

#include "simgpu_test.h"

void g2(void);
void g2(void)
{
}

static const dim3 one = { 1, 1, 1 };
static int hits;

static void count(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&hits, 1, __ATOMIC_SEQ_CST);
}

static void test_capture_replay(void **state)
{
	struct simgpu_times h[3];
	cudaStream_t s;
	cudaGraph_t g = NULL;
	cudaGraphExec_t x = NULL;
	enum cudaStreamCaptureStatus st;
	unsigned char *d, buf[256];
	struct gate gate;
	cudaEvent_t a, b;
	void *gop, *last[3], *before;
	int i;

	(void)state;
	CK(cudaMalloc((void **)&d, 256));
	CK(cudaMemset(d, 0, 256));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	hits = 0;
	before = last_op();
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CK(cudaStreamIsCapturing(s, &st));
	assert_int_equal(st, cudaStreamCaptureStatusActive);
	for (i = 0; i < 3; i++)
		CK(cudaLaunchKernel((const void *)g2, one, one, NULL, 0, s));
	CK(cudaMemsetAsync(d, 0x42, 128, s));
	CK(cudaLaunchHostFunc(s, count, NULL));
	/* captured, not queued */
	assert_null(simgpu_op_last());
	CK(cudaStreamEndCapture(s, &g));
	assert_non_null(g);
	CK(cudaStreamIsCapturing(s, &st));
	assert_int_equal(st, cudaStreamCaptureStatusNone);
	/* nothing ran: nothing is pending, and the memset did not happen */
	CK(cudaStreamQuery(s));
	assert_int_equal(hits, 0);
	CK(cudaMemcpy(buf, d, 256, cudaMemcpyDeviceToHost));
	assert_int_equal(buf[0], 0);
	op_done(before);

	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphDestroy(g)); /* the executable graph is independent */
	/* each replay: 3 x 2 ms of kernels, a memset of no modelled time (128 bytes at the default
	 * bandwidth), then the host function, from the modelled end of the one before */
	gop = gate_queue(&gate, s);
	CK(cudaEventRecord(a, s));
	for (i = 0; i < 3; i++)
		last[i] = QUEUED(cudaGraphLaunch(x, s));
	CK(cudaEventRecord(b, s));
	gate_open(&gate);
	CK(cudaStreamSynchronize(s));
	assert_int_equal(hits, 3);
	ASSERT_NS(event_time(a), op_done(gop).end_ns);
	for (i = 0; i < 3; i++) {
		h[i] = op_done(last[i]);
		ASSERT_NS(h[i].start_ns, (i ? h[i - 1].end_ns : event_time(a)) + 6 * MS_NS);
	}
	ASSERT_NS(event_time(b), h[2].end_ns);
	CK(cudaMemcpy(buf, d, 256, cudaMemcpyDeviceToHost));
	assert_int_equal(buf[0], 0x42);
	assert_int_equal(buf[127], 0x42);
	assert_int_equal(buf[128], 0);
	CK(cudaGraphLaunch_ptsz(x, NULL));
	CK(cudaStreamSynchronize_ptsz(NULL));
	CK(cudaGraphExecDestroy(x));
	CK_ERR(cudaGraphLaunch(x, s), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaGraphExecDestroy(x), cudaErrorInvalidResourceHandle);
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	CK(cudaStreamDestroy(s));
	CK(cudaFree(d));
	cudaGetLastError();
}

static void test_fork_join(void **state)
{
	cudaStream_t a, b;
	cudaEvent_t fork, join;
	cudaGraph_t g;
	cudaGraphExec_t x;

	(void)state;
	CK(cudaStreamCreate(&a));
	CK(cudaStreamCreate(&b));
	CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
	hits = 0;
	CK(cudaStreamBeginCapture(a, cudaStreamCaptureModeThreadLocal));
	CK(cudaLaunchKernel((const void *)g2, one, one, NULL, 0, a));
	CK(cudaEventRecord(fork, a));
	CK(cudaStreamWaitEvent(b, fork, 0)); /* b joins the capture */
	CK(cudaLaunchKernel((const void *)g2, one, one, NULL, 0, b));
	CK(cudaLaunchHostFunc(b, count, NULL));
	CK(cudaEventRecord(join, b));
	CK(cudaStreamWaitEvent(a, join, 0));
	CK_ERR(cudaStreamEndCapture(b, &g), cudaErrorStreamCaptureUnmatched);
	CK_ERR(cudaStreamEndCapture(a, &g), cudaErrorStreamCaptureInvalidated);
	assert_null(g);

	CK(cudaStreamBeginCapture(a, cudaStreamCaptureModeRelaxed));
	CK(cudaLaunchKernel((const void *)g2, one, one, NULL, 0, a));
	CK(cudaEventRecord(fork, a));
	CK(cudaStreamWaitEvent(b, fork, 0));
	CK(cudaLaunchKernel((const void *)g2, one, one, NULL, 0, b));
	CK(cudaLaunchHostFunc(b, count, NULL));
	CK(cudaEventRecord(join, b));
	CK(cudaStreamWaitEvent(a, join, 0));
	CK(cudaStreamEndCapture(a, &g));
	assert_int_equal(hits, 0);
	CK(cudaGraphInstantiateWithFlags(&x, g, 0));
	CK(cudaGraphLaunch(x, a));
	CK(cudaStreamSynchronize(a));
	assert_int_equal(hits, 1);
	/* b left the capture with it */
	CK(cudaLaunchHostFunc(b, count, NULL));
	CK(cudaStreamSynchronize(b));
	assert_int_equal(hits, 2);
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaEventDestroy(fork));
	CK(cudaEventDestroy(join));
	CK(cudaStreamDestroy(a));
	CK(cudaStreamDestroy(b));
	cudaGetLastError();
}

static void test_capture_errors(void **state)
{
	cudaStream_t s, nb;
	cudaGraph_t g;
	cudaGraphExec_t x;
	char *d, h[8];

	(void)state;
	CK(cudaMalloc((void **)&d, 64));
	CK(cudaStreamCreate(&s));
	CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
	CK_ERR(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal),
	       cudaErrorStreamCaptureUnsupported);
	CK_ERR(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal),
	       cudaErrorStreamCaptureUnsupported);
	CK_ERR(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
	CK_ERR(cudaStreamEndCapture(s, NULL), cudaErrorInvalidValue);

	/* synchronising a capturing stream fails and invalidates the capture */
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CK_ERR(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
	CK_ERR(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
	CK_ERR(cudaStreamQuery(s), cudaErrorStreamCaptureUnsupported);
	CK_ERR(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
	CK_ERR(cudaStreamAddCallback(s, NULL, NULL, 0), cudaErrorInvalidValue);
	CK_ERR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);

	/* legacy-stream work while a blocking stream captures */
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CK_ERR(cudaLaunchKernel((const void *)g2, one, one, NULL, 0, NULL),
	       cudaErrorStreamCaptureImplicit);
	CK_ERR(cudaMemcpy(h, d, 8, cudaMemcpyDeviceToHost), cudaErrorStreamCaptureImplicit);
	CK_ERR(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);

	/* ... is fine while only a non-blocking stream captures */
	CK(cudaStreamBeginCapture(nb, cudaStreamCaptureModeRelaxed));
	CK(cudaLaunchKernel((const void *)g2, one, one, NULL, 0, NULL));
	CK(cudaMemcpyAsync(h, d, 8, cudaMemcpyDeviceToHost, nb));
	CK(cudaStreamEndCapture(nb, &g));
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, nb));
	CK(cudaDeviceSynchronize());
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK_ERR(cudaGraphDestroy(g), cudaErrorInvalidValue);
	CK_ERR(cudaGraphInstantiate(&x, g, 0), cudaErrorInvalidValue);
	CK_ERR(cudaGraphInstantiate(NULL, g, 0), cudaErrorInvalidValue);

	CK(cudaStreamDestroy(s));
	CK(cudaStreamDestroy(nb));
	CK(cudaFree(d));
	cudaGetLastError();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_replay),
		cmocka_unit_test(test_fork_join),
		cmocka_unit_test(test_capture_errors),
	};

	setenv("SIMGPU_DEVICES", "1", 1);
	setenv("SIMGPU_DEVICE_MEM_MB", "256", 1);
	setenv("SIMGPU_KERNEL_US", "1000", 1);
	setenv("SIMGPU_KERNEL_TIMES", "g2=2000", 1);
	unsetenv("SIMGPU_INIT_ERROR");
	unsetenv("SIMGPU_LOG");
	return cmocka_run_group_tests_name("simgpu graphs", tests, NULL, NULL);
}
