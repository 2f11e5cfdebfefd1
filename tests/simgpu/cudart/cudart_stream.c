/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cudart_stream.c — runtime API: streams (create, destroy, synchronise,
 * query, wait on events, attributes, capture), events, graphs, and host
 * functions / callbacks queued on streams. cudaStreamSynchronize,
 * cudaStreamWaitEvent, cudaEventSynchronize and cudaGraphLaunch (and their
 * _ptsz forms) are their driver calls (cuStreamSynchronize, ...); the rest
 * translates handles and errors to and from the model (gpu_stream.c,
 * gpu_sync.c, gpu_graph.c) directly. Handles are the model's, shared with
 * the driver (a cudaStream_t is a CUstream).
 */
#include <stdlib.h>

#include "cudart_internal.h"

/* Runs `body` with stream `h` resolved into `s`; leaves e set. */
#define WITH_STREAM(h, per_thread, ...)                       \
	do {                                                  \
		struct sg_stream *s = NULL;                   \
		e = rt_enter();                               \
		if (!e)                                       \
			e = rt_stream((h), (per_thread), &s); \
		if (!e) {                                     \
			__VA_ARGS__;                          \
		}                                             \
		sg_stream_put(s);                             \
	} while (0)

/* ---- streams --------------------------------------------------------------------- */
static cudaError_t create(cudaStream_t *p, unsigned flags, int prio)
{
	struct sg_stream *s;
	cudaError_t e = rt_enter();

	if (e)
		return e;
	if (!p || (flags & ~(unsigned)cudaStreamNonBlocking))
		return cudaErrorInvalidValue;
	if (prio > 0)
		prio = 0;
	if (prio < -5)
		prio = -5;
	e = rt_err(sg_stream_create(rt_dev, flags, prio, &s));
	if (!e)
		*p = (cudaStream_t)s;
	return e;
}

RT_API cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	cudaError_t e = create(pStream, 0, 0);

	RT_RETURN(e, "stream=%p", !e ? (void *)*pStream : NULL);
}

RT_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	cudaError_t e = create(pStream, flags, 0);

	RT_RETURN(e, "flags=%#x stream=%p", flags, !e ? (void *)*pStream : NULL);
}

RT_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
						int priority)
{
	cudaError_t e = create(pStream, flags, priority);

	RT_RETURN(e, "flags=%#x priority=%d stream=%p", flags, priority,
		  !e ? (void *)*pStream : NULL);
}

RT_API cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	cudaError_t e = rt_enter();

	if (!e)
		e = rt_err(sg_stream_destroy(stream));
	RT_RETURN(e, "stream=%p", (void *)stream);
}

/* A one-argument stream call and its per-thread-default-stream twin. */
#define STREAM_ENTRY(name, per_thread, op)                          \
	RT_API cudaError_t name(cudaStream_t stream)                \
	{                                                           \
		cudaError_t e;                                      \
                                                                    \
		WITH_STREAM(stream, per_thread, e = rt_err(op(s))); \
		RT_RETURN(e, "stream=%p", (void *)stream);          \
	}

STREAM_ENTRY(cudaStreamQuery, false, sg_stream_query)
STREAM_ENTRY(cudaStreamQuery_ptsz, true, sg_stream_query)

/* cudaStreamSynchronize -> cuStreamSynchronize (_ptsz -> _ptsz) */
static cudaError_t stream_sync(cudaStream_t h, bool per_thread)
{
	cudaError_t e = rt_enter_drv();

	if (e)
		return e;
	if (rt_direct) {
		WITH_STREAM(h, per_thread, e = rt_err(sg_stream_sync(s)));
		return e;
	}
	return rt_cu(
		(per_thread ? rt_drv.cuStreamSynchronize_ptsz : rt_drv.cuStreamSynchronize)(h));
}

RT_API cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	RT_RETURN(stream_sync(stream, false), "stream=%p", (void *)stream);
}

RT_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
	RT_RETURN(stream_sync(stream, true), "stream=%p", (void *)stream);
}

/* cudaStreamWaitEvent -> cuStreamWaitEvent (_ptsz -> _ptsz) */
static cudaError_t wait_event(cudaStream_t h, cudaEvent_t ev, unsigned flags, bool per_thread)
{
	cudaError_t e = rt_enter_drv();

	if (e)
		return e;
	if (rt_direct) {
		WITH_STREAM(h, per_thread,
			    e = flags & ~1u ? cudaErrorInvalidValue
					    : rt_err(sg_stream_wait_event(s, ev)));
		return e;
	}
	return rt_cu((per_thread ? rt_drv.cuStreamWaitEvent_ptsz
				 : rt_drv.cuStreamWaitEvent)(h, ev, flags));
}

RT_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	RT_RETURN(wait_event(stream, event, flags, false), "stream=%p event=%p flags=%#x",
		  (void *)stream, (void *)event, flags);
}

RT_API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
					    unsigned int flags)
{
	RT_RETURN(wait_event(stream, event, flags, true), "stream=%p event=%p flags=%#x",
		  (void *)stream, (void *)event, flags);
}

#define STREAM_GETTER(api, per_thread, type, arg, expr)                    \
	RT_API cudaError_t api(cudaStream_t hStream, type *arg)            \
	{                                                                  \
		cudaError_t e;                                             \
		int dev_ = 0, prio_ = 0;                                   \
		unsigned flags_ = 0;                                       \
		WITH_STREAM(hStream, per_thread, {                         \
			if (!arg) {                                        \
				e = cudaErrorInvalidValue;                 \
			} else {                                           \
				sg_stream_info(s, &dev_, &flags_, &prio_); \
				*arg = (expr);                             \
			}                                                  \
		});                                                        \
		(void)dev_;                                                \
		(void)prio_;                                               \
		(void)flags_;                                              \
		RT_RETURN(e, "stream=%p", (void *)hStream);                \
	}

STREAM_GETTER(cudaStreamGetFlags, false, unsigned int, flags, flags_)
STREAM_GETTER(cudaStreamGetFlags_ptsz, true, unsigned int, flags, flags_)
STREAM_GETTER(cudaStreamGetPriority, false, int, priority, prio_)
STREAM_GETTER(cudaStreamGetPriority_ptsz, true, int, priority, prio_)
STREAM_GETTER(cudaStreamGetDevice, false, int, device, dev_)
STREAM_GETTER(cudaStreamGetDevice_ptsz, true, int, device, dev_)

/* ---- capture ----------------------------------------------------------------------- */
static cudaError_t begin_capture(cudaStream_t h, int mode, bool per_thread)
{
	cudaError_t e;

	WITH_STREAM(h, per_thread, e = rt_err(sg_capture_begin(s, mode)));
	return e;
}

RT_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	RT_RETURN(begin_capture(stream, mode, false), "stream=%p mode=%d", (void *)stream, mode);
}

RT_API cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	RT_RETURN(begin_capture(stream, mode, true), "stream=%p mode=%d", (void *)stream, mode);
}

static cudaError_t end_capture(cudaStream_t h, cudaGraph_t *g, bool per_thread)
{
	cudaError_t e;

	WITH_STREAM(h, per_thread, {
		if (!g) {
			e = cudaErrorInvalidValue;
		} else {
			struct sg_graph *graph;

			e = rt_err(sg_capture_end(s, &graph));
			*g = (cudaGraph_t)graph;
		}
	});
	return e;
}

RT_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
	cudaError_t e = end_capture(stream, pGraph, false);

	RT_RETURN(e, "stream=%p graph=%p", (void *)stream, pGraph && !e ? (void *)*pGraph : NULL);
}

RT_API cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
	cudaError_t e = end_capture(stream, pGraph, true);

	RT_RETURN(e, "stream=%p graph=%p", (void *)stream, pGraph && !e ? (void *)*pGraph : NULL);
}

static cudaError_t is_capturing(cudaStream_t h, enum cudaStreamCaptureStatus *st, bool per_thread)
{
	cudaError_t e;

	WITH_STREAM(h, per_thread, {
		if (!st)
			e = cudaErrorInvalidValue;
		else
			*st = (enum cudaStreamCaptureStatus)sg_capture_status(s);
	});
	return e;
}

RT_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
					 enum cudaStreamCaptureStatus *pCaptureStatus)
{
	RT_RETURN(is_capturing(stream, pCaptureStatus, false), "stream=%p", (void *)stream);
}

RT_API cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream,
					      enum cudaStreamCaptureStatus *pCaptureStatus)
{
	RT_RETURN(is_capturing(stream, pCaptureStatus, true), "stream=%p", (void *)stream);
}

/* ---- events ---------------------------------------------------------------------------- */
static cudaError_t event_create(cudaEvent_t *p, unsigned flags)
{
	struct sg_event *ev;
	cudaError_t e = rt_enter();

	if (e)
		return e;
	if (!p || (flags & ~7u))
		return cudaErrorInvalidValue;
	e = rt_err(sg_event_create(flags, &ev));
	if (!e)
		*p = (cudaEvent_t)ev;
	return e;
}

RT_API cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	cudaError_t e = event_create(event, 0);

	RT_RETURN(e, "event=%p", !e ? (void *)*event : NULL);
}

RT_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	cudaError_t e = event_create(event, flags);

	RT_RETURN(e, "flags=%#x event=%p", flags, !e ? (void *)*event : NULL);
}

RT_API cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	cudaError_t e = rt_enter();

	if (!e)
		e = rt_err(sg_event_destroy(event));
	RT_RETURN(e, "event=%p", (void *)event);
}

static cudaError_t record(cudaEvent_t ev, cudaStream_t h, unsigned flags, bool per_thread)
{
	cudaError_t e;

	WITH_STREAM(h, per_thread,
		    e = flags & ~1u ? cudaErrorInvalidValue : rt_err(sg_event_record(ev, s)));
	return e;
}

RT_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	RT_RETURN(record(event, stream, 0, false), "event=%p stream=%p", (void *)event,
		  (void *)stream);
}

RT_API cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
	RT_RETURN(record(event, stream, 0, true), "event=%p stream=%p", (void *)event,
		  (void *)stream);
}

RT_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
					    unsigned int flags)
{
	RT_RETURN(record(event, stream, flags, false), "event=%p stream=%p flags=%#x",
		  (void *)event, (void *)stream, flags);
}

RT_API cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
						 unsigned int flags)
{
	RT_RETURN(record(event, stream, flags, true), "event=%p stream=%p flags=%#x", (void *)event,
		  (void *)stream, flags);
}

RT_API cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	cudaError_t e = rt_enter_drv();

	if (!e)
		e = rt_direct ? rt_err(sg_event_sync(event))
			      : rt_cu(rt_drv.cuEventSynchronize(event));
	RT_RETURN(e, "event=%p", (void *)event);
}

RT_API cudaError_t cudaEventQuery(cudaEvent_t event)
{
	cudaError_t e = rt_enter();

	if (!e)
		e = rt_err(sg_event_query(event));
	RT_RETURN(e, "event=%p", (void *)event);
}

RT_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	cudaError_t e = rt_enter();

	if (!e)
		e = rt_err(sg_event_elapsed(start, end, ms));
	RT_RETURN(e, "start=%p end=%p ms=%.6f", (void *)start, (void *)end,
		  ms && !e ? (double)*ms : -1.0);
}

/* ---- graphs ------------------------------------------------------------------------------ */
static cudaError_t instantiate(cudaGraphExec_t *px, cudaGraph_t g)
{
	struct sg_exec *x;
	cudaError_t e = rt_enter();

	if (e)
		return e;
	if (!px)
		return cudaErrorInvalidValue;
	e = rt_err(sg_graph_instantiate(g, &x));
	if (!e)
		*px = (cudaGraphExec_t)x;
	return e;
}

RT_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
					unsigned long long flags)
{
	cudaError_t e = instantiate(pGraphExec, graph);

	RT_RETURN(e, "graph=%p flags=%#llx exec=%p", (void *)graph, flags,
		  !e ? (void *)*pGraphExec : NULL);
}

RT_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
						 unsigned long long flags)
{
	cudaError_t e = instantiate(pGraphExec, graph);

	RT_RETURN(e, "graph=%p flags=%#llx exec=%p", (void *)graph, flags,
		  !e ? (void *)*pGraphExec : NULL);
}

/* cudaGraphLaunch -> cuGraphLaunch (_ptsz -> _ptsz) */
static cudaError_t graph_launch(cudaGraphExec_t x, cudaStream_t h, bool per_thread)
{
	cudaError_t e = rt_enter_drv();

	if (e)
		return e;
	if (rt_direct) {
		WITH_STREAM(h, per_thread, e = rt_err(sg_graph_launch(x, s)));
		return e;
	}
	return rt_cu(
		(per_thread ? rt_drv.cuGraphLaunch_ptsz : rt_drv.cuGraphLaunch)((CUgraphExec)x, h));
}

RT_API cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	RT_RETURN(graph_launch(graphExec, stream, false), "exec=%p stream=%p", (void *)graphExec,
		  (void *)stream);
}

RT_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	RT_RETURN(graph_launch(graphExec, stream, true), "exec=%p stream=%p", (void *)graphExec,
		  (void *)stream);
}

RT_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
	cudaError_t e = rt_enter();

	if (!e)
		e = rt_err(sg_exec_destroy(graphExec));
	RT_RETURN(e, "exec=%p", (void *)graphExec);
}

RT_API cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
	cudaError_t e = rt_enter();

	if (!e)
		e = rt_err(sg_graph_destroy(graph));
	RT_RETURN(e, "graph=%p", (void *)graph);
}

/* ---- host functions ------------------------------------------------------------------------ */
static cudaError_t host_func(cudaStream_t h, cudaHostFn_t fn, void *data, bool per_thread)
{
	struct sg_work w = { .kind = SG_WORK_HOSTFN, .name = "hostfn", .fn = fn, .arg = data };
	cudaError_t e;

	WITH_STREAM(h, per_thread, e = fn ? rt_err(sg_submit(s, &w, NULL)) : cudaErrorInvalidValue);
	return e;
}

RT_API cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
	RT_RETURN(host_func(stream, fn, userData, false), "stream=%p fn=%p", (void *)stream,
		  (void *)fn);
}

RT_API cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
	RT_RETURN(host_func(stream, fn, userData, true), "stream=%p fn=%p", (void *)stream,
		  (void *)fn);
}

struct callback {
	cudaStreamCallback_t cb;
	cudaStream_t stream;
	void *data;
};

static void run_callback(void *arg)
{
	struct callback *c = arg;

	c->cb(c->stream, cudaSuccess, c->data);
	free(c);
}

static cudaError_t add_callback(cudaStream_t h, cudaStreamCallback_t cb, void *data, unsigned flags,
				bool per_thread)
{
	cudaError_t e;

	WITH_STREAM(h, per_thread, {
		struct callback *c;
		struct sg_work w = { .kind = SG_WORK_HOSTFN,
				     .name = "callback",
				     .fn = run_callback };

		if (!cb || flags) {
			e = cudaErrorInvalidValue;
		} else if (sg_capture_status(s) != SG_CAPTURE_NONE) {
			e = cudaErrorStreamCaptureUnsupported;
		} else if (!(c = malloc(sizeof(*c)))) {
			e = cudaErrorMemoryAllocation;
		} else {
			*c = (struct callback){ cb, h, data };
			w.arg = c;
			e = rt_err(sg_submit(s, &w, NULL));
			if (e)
				free(c);
		}
	});
	return e;
}

RT_API cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
					 void *userData, unsigned int flags)
{
	RT_RETURN(add_callback(stream, callback, userData, flags, false), "stream=%p",
		  (void *)stream);
}

RT_API cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
					      void *userData, unsigned int flags)
{
	RT_RETURN(add_callback(stream, callback, userData, flags, true), "stream=%p",
		  (void *)stream);
}
