/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_stream.c — driver API: streams (create, destroy, query,
 * synchronise, wait on an event), events (create, record, query,
 * synchronise, elapsed time, destroy) and graph launches, on the model's
 * streams, events and executable graphs (gpu_stream.c, gpu_sync.c,
 * gpu_graph.c). Handles are the model's, shared with the runtime: a
 * cudaStream_t is a CUstream, a cudaEvent_t a CUevent. NULL and
 * CU_STREAM_LEGACY are the legacy default stream of the current context's
 * device, CU_STREAM_PER_THREAD (or NULL in a _ptsz call) the thread's.
 */
#include "cuda_internal.h"

/* Resolves stream h for the current context into *s (a reference). */
static CUresult stream(CUstream h, int per_thread, struct sg_stream **s)
{
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	*s = NULL;
	if (r)
		return r;
	return cu_err(sg_stream_get(h, per_thread, dev, s));
}

/* ---- streams -------------------------------------------------------------------------------- */
static CUresult create(CUstream *ph, unsigned flags, int prio)
{
	struct sg_stream *s;
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (r)
		return r;
	if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	if (prio > 0)
		prio = 0;
	if (prio < -5)
		prio = -5;
	r = cu_err(sg_stream_create(dev, flags, prio, &s));
	if (!r)
		*ph = (CUstream)s;
	return r;
}

CU_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	CUresult r = create(phStream, Flags, 0);

	CU_RETURN(r, "flags=%#x stream=%p", Flags, !r ? (void *)*phStream : NULL);
}

CU_API CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	CUresult r = create(phStream, flags, priority);

	CU_RETURN(r, "flags=%#x priority=%d stream=%p", flags, priority,
		  !r ? (void *)*phStream : NULL);
}

CU_API CUresult cuStreamDestroy_v2(CUstream hStream)
{
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (!r)
		r = cu_err(sg_stream_destroy(hStream));
	CU_RETURN(r, "stream=%p", (void *)hStream);
}

static CUresult stream_op(CUstream h, int per_thread, int (*op)(struct sg_stream *))
{
	struct sg_stream *s;
	CUresult r = stream(h, per_thread, &s);

	if (!r)
		r = cu_err(op(s));
	sg_stream_put(s);
	return r;
}

CU_API CUresult cuStreamQuery(CUstream hStream)
{
	CU_RETURN(stream_op(hStream, 0, sg_stream_query), "stream=%p", (void *)hStream);
}

CU_API CUresult cuStreamQuery_ptsz(CUstream hStream)
{
	CU_RETURN(stream_op(hStream, 1, sg_stream_query), "stream=%p", (void *)hStream);
}

CU_API CUresult cuStreamSynchronize(CUstream hStream)
{
	CU_RETURN(stream_op(hStream, 0, sg_stream_sync), "stream=%p", (void *)hStream);
}

CU_API CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	CU_RETURN(stream_op(hStream, 1, sg_stream_sync), "stream=%p", (void *)hStream);
}

static CUresult wait_event(CUstream h, CUevent e, unsigned flags, int per_thread)
{
	struct sg_stream *s;
	CUresult r = stream(h, per_thread, &s);

	if (!r)
		r = flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL ? CUDA_ERROR_INVALID_VALUE
							      : cu_err(sg_stream_wait_event(s, e));
	sg_stream_put(s);
	return r;
}

CU_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	CU_RETURN(wait_event(hStream, hEvent, Flags, 0), "stream=%p event=%p flags=%#x",
		  (void *)hStream, (void *)hEvent, Flags);
}

CU_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	CU_RETURN(wait_event(hStream, hEvent, Flags, 1), "stream=%p event=%p flags=%#x",
		  (void *)hStream, (void *)hEvent, Flags);
}

/* ---- events ---------------------------------------------------------------------------------- */
CU_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct sg_event *ev = NULL;
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (!r && (!phEvent || (Flags & ~7u)))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		r = cu_err(sg_event_create(Flags, &ev));
	if (!r)
		*phEvent = (CUevent)ev;
	CU_RETURN(r, "flags=%#x event=%p", Flags, (void *)ev);
}

static CUresult record(CUevent e, CUstream h, int per_thread)
{
	struct sg_stream *s;
	CUresult r = stream(h, per_thread, &s);

	if (!r)
		r = cu_err(sg_event_record(e, s));
	sg_stream_put(s);
	return r;
}

CU_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	CU_RETURN(record(hEvent, hStream, 0), "event=%p stream=%p", (void *)hEvent,
		  (void *)hStream);
}

CU_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
	CU_RETURN(record(hEvent, hStream, 1), "event=%p stream=%p", (void *)hEvent,
		  (void *)hStream);
}

CU_API CUresult cuEventQuery(CUevent hEvent)
{
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (!r)
		r = cu_err(sg_event_query(hEvent));
	CU_RETURN(r, "event=%p", (void *)hEvent);
}

CU_API CUresult cuEventSynchronize(CUevent hEvent)
{
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (!r)
		r = cu_err(sg_event_sync(hEvent));
	CU_RETURN(r, "event=%p", (void *)hEvent);
}

CU_API CUresult cuEventDestroy_v2(CUevent hEvent)
{
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (!r)
		r = cu_err(sg_event_destroy(hEvent));
	CU_RETURN(r, "event=%p", (void *)hEvent);
}

static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	return r ? r : cu_err(sg_event_elapsed(a, b, ms));
}

CU_API CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	CUresult r = elapsed(pMilliseconds, hStart, hEnd);

	CU_RETURN(r, "start=%p end=%p ms=%.6f", (void *)hStart, (void *)hEnd,
		  !r ? (double)*pMilliseconds : -1.0);
}

/* CUDA 12's name (cuda.h of CUDA 13 maps cuEventElapsedTime to _v2) */
#undef cuEventElapsedTime
CU_API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CU_API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	CUresult r = elapsed(pMilliseconds, hStart, hEnd);

	CU_RETURN(r, "start=%p end=%p ms=%.6f", (void *)hStart, (void *)hEnd,
		  !r ? (double)*pMilliseconds : -1.0);
}

/* ---- graphs ------------------------------------------------------------------------------------ */
static CUresult graph_launch(CUgraphExec x, CUstream h, int per_thread)
{
	struct sg_stream *s;
	CUresult r = stream(h, per_thread, &s);

	if (!r)
		r = cu_err(sg_graph_launch(x, s));
	sg_stream_put(s);
	return r;
}

CU_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	CU_RETURN(graph_launch(hGraphExec, hStream, 0), "exec=%p stream=%p", (void *)hGraphExec,
		  (void *)hStream);
}

CU_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	CU_RETURN(graph_launch(hGraphExec, hStream, 1), "exec=%p stream=%p", (void *)hGraphExec,
		  (void *)hStream);
}
