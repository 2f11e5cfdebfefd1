/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_run.c — one replay of one process (replay_run.h).
 *
 * Set-up (not timed): streams and events created on their devices with
 * their original flags; one scratch device allocation for device memory no
 * allocation of the capture covers; per thread, a pageable buffer (malloc,
 * touched so that no first-touch page fault lands in a copy) and a pinned
 * staging buffer (cudaMallocHost) for host memory the capture does not
 * name; the stand-in kernels' modules, on every device the plan launches
 * on. Allocations of the capture are made and freed by their operations.
 *
 * Timing: thread i's first call starts at its original offset from the
 * process's first call; every later call starts its think time after the
 * previous call of the thread returned (both divided by the speed). Sleeps
 * end with a short spin, sized by measuring this machine's sleep overshoot,
 * so that a few hundred think times do not add up to a drift. How late
 * each call was issued after its planned time is measured (late_ns).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "model/view.h"
#include "replay/replay_run.h"
#include "replay/replay_standin.h"

#define CUDA_MEM_ATTACH_GLOBAL	 0x1u
#define CUDA_STREAM_NON_BLOCKING 0x1u
#define CUDA_EVENT_FLAGS_KEPT	 0x3u /* cudaEventBlockingSync | cudaEventDisableTiming */

struct hostbuf {
	char *pageable;
	__u64 pageable_bytes;
	void *pinned;
	__u64 pinned_bytes;
};

struct run {
	const struct gp_cuda *cu;
	const struct gp_rprocess *p;
	double speed;
	unsigned what;
	struct gp_replay_result *res;
	struct gp_standins standins;
	pthread_mutex_t lock; /* counters, errors */
	pthread_cond_t cond;
	__u32 *cnt;    /* per object: operations on it issued */
	void **handle; /* per object: the replay's stream, event or memory */
	bool *live;    /* per allocation object: allocated and not freed */
	char *scratch; /* device memory for ranges the capture does not cover, twice the largest */
	struct hostbuf *hb; /* per thread */
	__u64 t0, spin_ns;
};

struct tctx {
	struct run *r;
	size_t idx;
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void sleep_until(__u64 target, __u64 spin_ns)
{
	__u64 now = now_ns();

	if (target <= now)
		return;
	if (target - now > spin_ns) {
		__u64 wake = target - spin_ns;
		struct timespec ts = { .tv_sec = (time_t)(wake / 1000000000ull),
				       .tv_nsec = (long)(wake % 1000000000ull) };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	while (now_ns() < target)
		;
}

/* How late a 200 us sleep wakes here (the median of a few), plus a margin: the spin at each sleep's end. */
static __u64 calibrate_spin(void)
{
	__u64 late[9];

	for (int i = 0; i < 9; i++) {
		__u64 t = now_ns() + 200000;
		struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ull),
				       .tv_nsec = (long)(t % 1000000000ull) };

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		late[i] = now_ns() - t;
	}
	for (int i = 1; i < 9; i++)
		for (int j = i; j > 0 && late[j - 1] > late[j]; j--) {
			__u64 x = late[j];

			late[j] = late[j - 1];
			late[j - 1] = x;
		}
	__u64 spin = late[4] + 20000;

	return spin < 20000 ? 20000 : spin > 500000 ? 500000 : spin;
}

static void failed(struct run *r, size_t i, const char *call, int err)
{
	pthread_mutex_lock(&r->lock);
	r->res->errors++;
	if (!r->res->first_error[0])
		snprintf(r->res->first_error, sizeof(r->res->first_error),
			 "operation %zu (%s): %s failed: %d (%s)", i,
			 gp_apis[r->p->ops[i].api].symbol, call, err,
			 err > 0 ? gp_cuda_error(r->cu, err) : strerror(-err));
	pthread_mutex_unlock(&r->lock);
}

static void wait_deps(struct run *r, const struct gp_rop *op)
{
	pthread_mutex_lock(&r->lock);
	for (unsigned d = 0; d < op->ndeps; d++)
		while (r->cnt[op->deps[d].obj] < op->deps[d].need)
			pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

static void advance(struct run *r, const struct gp_rop *op)
{
	pthread_mutex_lock(&r->lock);
	for (unsigned a = 0; a < op->nadv; a++)
		r->cnt[op->adv[a]]++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void *stream_handle(const struct run *r, int s)
{
	const struct gp_robj *o = &r->p->objs[s];

	switch (o->skind) {
	case GP_RSTREAM_LEGACY:
		return NULL;
	case GP_RSTREAM_PER_THREAD:
		return GP_CUDA_STREAM_PER_THREAD_HANDLE;
	default:
		return r->handle[s];
	}
}

static bool host_side(const struct gp_rop *op, int i)
{
	switch (op->dir) {
	case GP_DIR_HTOD:
		return i == 1;
	case GP_DIR_DTOH:
		return i == 0;
	case GP_DIR_HTOH:
		return true;
	default:
		return false;
	}
}

/* Whether the host side of a copy without an allocation object is staged in pinned memory. */
static bool staged_pinned(const struct gp_rop *op, unsigned what)
{
	return op->hostmem != GP_HM_PAGEABLE || (what & GP_WHATIF_PINNED);
}

/* The replay's address for side i of a copy or memset. */
static char *side_ptr(struct run *r, const struct gp_rop *op, int i)
{
	const struct hostbuf *hb = &r->hb[op->thread];
	__u64 at = op->dir == GP_DIR_HTOH ? (__u64)i * op->bytes : 0;

	if (op->mem[i] >= 0)
		return (char *)r->handle[op->mem[i]] + op->off[i];
	if (op->kind == GP_ROP_COPY && host_side(op, i))
		return (staged_pinned(op, r->what) ? (char *)hb->pinned : hb->pageable) + at;
	return r->scratch + (__u64)i * r->p->scratch_device_bytes;
}

static int copy_kind(const struct gp_rop *op)
{
	switch (op->dir) {
	case GP_DIR_HTOD:
		return GP_CUDA_MEMCPY_HTOD;
	case GP_DIR_DTOH:
		return GP_CUDA_MEMCPY_DTOH;
	case GP_DIR_DTOD:
		return GP_CUDA_MEMCPY_DTOD;
	default:
		return GP_CUDA_MEMCPY_HTOH;
	}
}

static int issue_alloc(struct run *r, const struct gp_rop *op, const char **call)
{
	const struct gp_robj *o = &r->p->objs[op->mem[0]];
	const struct gp_cuda *cu = r->cu;
	void **h = &r->handle[op->mem[0]];
	int rc;

	switch (o->mem) {
	case GP_RMEM_DEVICE:
		if (o->async_alloc && cu->cudaMallocAsync && op->stream >= 0) {
			*call = "cudaMallocAsync";
			rc = cu->cudaMallocAsync(h, o->bytes, stream_handle(r, op->stream));
		} else {
			*call = "cudaMalloc";
			rc = cu->cudaMalloc(h, o->bytes);
		}
		break;
	case GP_RMEM_MANAGED:
		*call = "cudaMallocManaged";
		rc = cu->cudaMallocManaged(h, o->bytes, CUDA_MEM_ATTACH_GLOBAL);
		break;
	case GP_RMEM_PINNED:
		*call = "cudaMallocHost";
		rc = cu->cudaMallocHost(h, o->bytes);
		break;
	default: {
		size_t n = (o->bytes + 4095) & ~(size_t)4095;

		*call = "cudaHostRegister";
		if (!(*h = aligned_alloc(4096, n ? n : 4096)))
			return -ENOMEM;
		memset(*h, 0, n);
		rc = cu->cudaHostRegister(*h, o->bytes, 0);
		if (rc) {
			free(*h);
			*h = NULL;
		}
		break;
	}
	}
	if (!rc)
		r->live[op->mem[0]] = true;
	return rc;
}

static int free_mem(struct run *r, int m, void *stream, bool async, const char **call)
{
	const struct gp_cuda *cu = r->cu;
	void *h = r->handle[m];
	int rc;

	switch (r->p->objs[m].mem) {
	case GP_RMEM_DEVICE:
	case GP_RMEM_MANAGED:
		if (async && cu->cudaFreeAsync) {
			*call = "cudaFreeAsync";
			rc = cu->cudaFreeAsync(h, stream);
		} else {
			*call = "cudaFree";
			rc = cu->cudaFree(h);
		}
		break;
	case GP_RMEM_PINNED:
		*call = "cudaFreeHost";
		rc = cu->cudaFreeHost(h);
		break;
	default:
		*call = "cudaHostUnregister";
		rc = cu->cudaHostUnregister(h);
		free(h);
		break;
	}
	r->live[m] = false;
	return rc;
}

static int issue_copy(struct run *r, const struct gp_rop *op, const char **call)
{
	const struct gp_cuda *cu = r->cu;
	void *s = stream_handle(r, op->stream);
	bool ptds = r->p->objs[op->stream].skind == GP_RSTREAM_PER_THREAD;
	char *dst = side_ptr(r, op, 0), *src = side_ptr(r, op, 1);

	if (op->async || (r->what & GP_WHATIF_ASYNC_COPIES)) {
		*call = "cudaMemcpyAsync";
		return cu->cudaMemcpyAsync(dst, src, op->bytes, copy_kind(op), s);
	}
	if (ptds && cu->cudaMemcpy_ptds) {
		*call = "cudaMemcpy_ptds";
		return cu->cudaMemcpy_ptds(dst, src, op->bytes, copy_kind(op));
	}
	*call = "cudaMemcpy";
	return cu->cudaMemcpy(dst, src, op->bytes, copy_kind(op));
}

static int issue_memset(struct run *r, const struct gp_rop *op, const char **call)
{
	const struct gp_cuda *cu = r->cu;
	char *dst = side_ptr(r, op, 0);

	if (op->async) {
		*call = "cudaMemsetAsync";
		return cu->cudaMemsetAsync(dst, 0, op->bytes, stream_handle(r, op->stream));
	}
	if (r->p->objs[op->stream].skind == GP_RSTREAM_PER_THREAD && cu->cudaMemset_ptds) {
		*call = "cudaMemset_ptds";
		return cu->cudaMemset_ptds(dst, 0, op->bytes);
	}
	*call = "cudaMemset";
	return cu->cudaMemset(dst, 0, op->bytes);
}

static int issue(struct run *r, const struct gp_rop *op, int *device, const char **call)
{
	const struct gp_cuda *cu = r->cu;
	const struct gp_rkernel *k;

	switch (op->kind) {
	case GP_ROP_SET_DEVICE:
		*call = "cudaSetDevice";
		*device = op->device;
		return cu->cudaSetDevice(op->device);
	case GP_ROP_ALLOC:
		return issue_alloc(r, op, call);
	case GP_ROP_FREE:
		return free_mem(r, op->mem[0],
				op->stream >= 0 ? stream_handle(r, op->stream) : NULL, op->async,
				call);
	case GP_ROP_COPY:
		return issue_copy(r, op, call);
	case GP_ROP_MEMSET:
		return issue_memset(r, op, call);
	case GP_ROP_KERNEL:
		k = op->kernel >= 0 ? &r->p->kernels[op->kernel] : NULL;
		return gp_standin_launch(&r->standins, *device, op->kernel, k ? k->dur_ns : 0,
					 stream_handle(r, op->stream), call);
	case GP_ROP_EVENT_RECORD:
		*call = "cudaEventRecord";
		return cu->cudaEventRecord(r->handle[op->event], stream_handle(r, op->stream));
	case GP_ROP_STREAM_WAIT:
		*call = "cudaStreamWaitEvent";
		return cu->cudaStreamWaitEvent(stream_handle(r, op->stream), r->handle[op->event],
					       0);
	case GP_ROP_STREAM_SYNC:
		*call = "cudaStreamSynchronize";
		return cu->cudaStreamSynchronize(stream_handle(r, op->stream));
	case GP_ROP_EVENT_SYNC:
		*call = "cudaEventSynchronize";
		return cu->cudaEventSynchronize(r->handle[op->event]);
	case GP_ROP_DEVICE_SYNC:
		*call = "cudaDeviceSynchronize";
		return cu->cudaDeviceSynchronize();
	default:
		*call = "nothing";
		return 0;
	}
}

static bool dropped(const struct run *r, const struct gp_rop *op)
{
	if (!(r->what & GP_WHATIF_NO_REDUNDANT_SYNC))
		return false;
	return (r->what & GP_WHATIF_ASYNC_COPIES) ? op->redundant_if_async : op->redundant;
}

static bool changed(const struct run *r, const struct gp_rop *op)
{
	if (dropped(r, op))
		return true;
	if (op->kind != GP_ROP_COPY)
		return false;
	if ((r->what & GP_WHATIF_ASYNC_COPIES) && !op->async)
		return true;
	return (r->what & GP_WHATIF_PINNED) && op->hostmem == GP_HM_PAGEABLE &&
	       (op->dir == GP_DIR_HTOD || op->dir == GP_DIR_DTOH || op->dir == GP_DIR_HTOH);
}

static void *thread_main(void *arg)
{
	const struct tctx *tc = arg;
	struct run *r = tc->r;
	const struct gp_rthread *t = &r->p->threads[tc->idx];
	struct gp_replay_result *res = r->res;
	__u64 last = r->t0, carry = 0, planned;
	int device = 0, rc;

	if ((rc = gp_cuda_bind_thread(r->cu, 0)))
		failed(r, t->ops[0], "binding the primary context", rc);
	for (size_t k = 0; k < t->nops; k++) {
		size_t i = t->ops[k];
		const struct gp_rop *op = &r->p->ops[i];
		__u64 think = op->think_ns + carry;
		const char *call = "";

		carry = 0;
		if (dropped(r, op)) { /* its think time stays: host work before and after it */
			carry = think;
			wait_deps(r, op);
			advance(r, op);
			res->dropped[i] = true;
			continue;
		}
		planned = (k ? last : r->t0) + (__u64)((double)think / r->speed);
		sleep_until(planned, r->spin_ns);
		wait_deps(r, op);
		res->start_ns[i] = now_ns();
		res->late_ns[i] = res->start_ns[i] - planned;
		rc = issue(r, op, &device, &call);
		res->end_ns[i] = last = now_ns();
		advance(r, op);
		if (rc)
			failed(r, i, call, rc);
	}
	return NULL;
}

/* Host buffers each thread needs for host memory the capture does not name. */
static int host_buffers(struct run *r)
{
	const struct gp_rprocess *p = r->p;

	if (!(r->hb = calloc(p->nthreads ? p->nthreads : 1, sizeof(*r->hb))))
		return -ENOMEM;
	for (size_t i = 0; i < p->nops; i++) {
		const struct gp_rop *op = &p->ops[i];
		struct hostbuf *hb = &r->hb[op->thread];
		__u64 need = op->bytes * (op->dir == GP_DIR_HTOH ? 2 : 1);

		if (op->kind != GP_ROP_COPY)
			continue;
		for (int s = 0; s < 2; s++) {
			if (!host_side(op, s) || op->mem[s] >= 0)
				continue;
			if (staged_pinned(op, r->what)) {
				if (need > hb->pinned_bytes)
					hb->pinned_bytes = need;
			} else if (need > hb->pageable_bytes) {
				hb->pageable_bytes = need;
			}
		}
	}
	for (size_t t = 0; t < p->nthreads; t++) {
		struct hostbuf *hb = &r->hb[t];
		int rc;

		if (hb->pageable_bytes) {
			if (!(hb->pageable = malloc(hb->pageable_bytes)))
				return -ENOMEM;
			memset(hb->pageable, 1, hb->pageable_bytes);
		}
		if (hb->pinned_bytes && (rc = r->cu->cudaMallocHost(&hb->pinned, hb->pinned_bytes)))
			return rc;
	}
	return 0;
}

static int objects(struct run *r)
{
	const struct gp_rprocess *p = r->p;
	const struct gp_cuda *cu = r->cu;
	int rc = 0;

	for (size_t i = 0; i < p->nobjs && !rc; i++) {
		const struct gp_robj *o = &p->objs[i];

		if (o->kind == GP_ROBJ_MEM ||
		    (o->kind == GP_ROBJ_STREAM && o->skind != GP_RSTREAM_HANDLE))
			continue;
		if ((rc = cu->cudaSetDevice(o->device)))
			break;
		if (o->kind == GP_ROBJ_STREAM)
			rc = cu->cudaStreamCreateWithFlags(&r->handle[i],
							   o->flags & CUDA_STREAM_NON_BLOCKING);
		else
			rc = cu->cudaEventCreateWithFlags(&r->handle[i],
							  o->flags & CUDA_EVENT_FLAGS_KEPT);
	}
	if (!rc)
		rc = cu->cudaSetDevice(0);
	if (!rc && p->scratch_device_bytes)
		rc = cu->cudaMalloc((void **)&r->scratch, 2 * p->scratch_device_bytes);
	return rc;
}

/*
 * Loads the stand-in kernels on every device the plan launches on, before
 * the clock starts: loading a module (on a real driver, JIT-compiling the
 * PTX) is a one-off cost the original run did not have at that point.
 */
static int load_standins(struct run *r, const char **call)
{
	const struct gp_rprocess *p = r->p;
	bool used[GP_STANDIN_DEVICES] = { false };
	int rc = 0;

	for (size_t t = 0; t < p->nthreads; t++) {
		int device = 0;

		for (size_t k = 0; k < p->threads[t].nops; k++) {
			const struct gp_rop *op = &p->ops[p->threads[t].ops[k]];

			if (op->kind == GP_ROP_SET_DEVICE)
				device = op->device;
			else if (op->kind == GP_ROP_KERNEL && device >= 0 &&
				 device < GP_STANDIN_DEVICES)
				used[device] = true;
		}
	}
	for (int d = 0; d < GP_STANDIN_DEVICES && !rc; d++) {
		if (!used[d])
			continue;
		*call = "cudaSetDevice";
		if ((rc = r->cu->cudaSetDevice(d)))
			break;
		*call = "binding the primary context";
		if ((rc = gp_cuda_bind_thread(r->cu, d)))
			break;
		rc = gp_standins_load(&r->standins, d, call);
	}
	if (!rc) {
		*call = "cudaSetDevice";
		if (!(rc = r->cu->cudaSetDevice(0)))
			rc = gp_cuda_bind_thread(r->cu, 0);
	}
	if (!rc)
		*call = "";
	return rc;
}

static void teardown(struct run *r)
{
	const struct gp_rprocess *p = r->p;
	const struct gp_cuda *cu = r->cu;
	const char *call;

	cu->cudaDeviceSynchronize();
	for (size_t i = 0; r->handle && r->live && i < p->nobjs; i++) {
		const struct gp_robj *o = &p->objs[i];

		if (o->kind == GP_ROBJ_MEM && r->live[i])
			free_mem(r, (int)i, NULL, false, &call);
		else if (o->kind == GP_ROBJ_STREAM && r->handle[i])
			cu->cudaStreamDestroy(r->handle[i]);
		else if (o->kind == GP_ROBJ_EVENT && r->handle[i])
			cu->cudaEventDestroy(r->handle[i]);
	}
	for (size_t t = 0; r->hb && t < p->nthreads; t++) {
		free(r->hb[t].pageable);
		if (r->hb[t].pinned)
			cu->cudaFreeHost(r->hb[t].pinned);
	}
	if (r->scratch)
		cu->cudaFree(r->scratch);
	gp_standins_release(&r->standins);
	free(r->hb);
	free(r->cnt);
	free(r->handle);
	free(r->live);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
}

int gp_replay_run(const struct gp_cuda *cu, const struct gp_rprocess *p, double speed,
		  unsigned what, struct gp_replay_result *res, char *errmsg, size_t errlen)
{
	struct run r = { .cu = cu, .p = p, .speed = speed, .what = what, .res = res };
	size_t n = p->nobjs ? p->nobjs : 1, m = p->nops ? p->nops : 1;
	pthread_t *th = calloc(p->nthreads ? p->nthreads : 1, sizeof(*th));
	struct tctx *tc = calloc(p->nthreads ? p->nthreads : 1, sizeof(*tc));
	size_t started = 0;
	__u64 first = UINT64_MAX, last = 0;
	const char *call = "";
	int rc;

	memset(res, 0, sizeof(*res));
	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.cond, NULL);
	gp_standins_init(&r.standins, cu, p);
	r.cnt = calloc(n, sizeof(*r.cnt));
	r.handle = calloc(n, sizeof(*r.handle));
	r.live = calloc(n, sizeof(*r.live));
	res->start_ns = calloc(m, sizeof(*res->start_ns));
	res->end_ns = calloc(m, sizeof(*res->end_ns));
	res->dropped = calloc(m, sizeof(*res->dropped));
	res->late_ns = calloc(m, sizeof(*res->late_ns));
	if (!th || !tc || !r.cnt || !r.handle || !r.live || !res->start_ns || !res->end_ns ||
	    !res->dropped || !res->late_ns) {
		snprintf(errmsg, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = cu->cudaSetDevice(0)) || (rc = gp_cuda_bind_thread(cu, 0)) ||
	    (rc = objects(&r)) || (rc = host_buffers(&r)) || (rc = load_standins(&r, &call))) {
		snprintf(errmsg, errlen, "setting up the replay of pid %u: %s%s%d (%s)", p->pid,
			 call, *call ? ": " : "", rc,
			 rc > 0 ? gp_cuda_error(cu, rc) : strerror(-rc));
		rc = -EIO;
		goto out;
	}
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	r.spin_ns = calibrate_spin();
	r.t0 = now_ns() + 20000000; /* every thread created and waiting before the first call */
	for (; started < p->nthreads; started++) {
		tc[started] = (struct tctx){ .r = &r, .idx = started };
		if (pthread_create(&th[started], NULL, thread_main, &tc[started])) {
			snprintf(errmsg, errlen, "cannot create replay thread %zu", started);
			rc = -EAGAIN;
			break;
		}
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (rc)
		goto out;
	for (size_t i = 0; i < p->nops; i++) {
		if (res->dropped[i] || !res->end_ns[i])
			continue;
		if (res->start_ns[i] < first)
			first = res->start_ns[i];
		if (res->end_ns[i] > last)
			last = res->end_ns[i];
	}
	for (size_t i = 0; i < p->nops; i++) {
		if (changed(&r, &p->ops[i]))
			res->changed_ops++;
		if (!res->dropped[i] && res->end_ns[i]) {
			res->calls++;
			res->start_ns[i] -= first;
			res->end_ns[i] -= first;
		}
	}
	res->wall_ns = last > first ? last - first : 0;
	res->kernels = gp_standins_kind(&r.standins);
	rc = 0;
out:
	teardown(&r);
	free(th);
	free(tc);
	return rc;
}

void gp_replay_result_release(struct gp_replay_result *res)
{
	free(res->start_ns);
	free(res->end_ns);
	free(res->dropped);
	free(res->late_ns);
	memset(res, 0, sizeof(*res));
}
