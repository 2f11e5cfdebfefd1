/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_stream.c — streams, their worker threads and the work they execute.
 *
 * Every stream (user streams, each device's legacy default stream, each
 * host thread's per-thread default stream) has a worker thread that runs
 * its queue in order. An op starts at the latest of: its submission time,
 * the modelled end of the previous op of the stream, and the modelled end
 * of each op it depends on; it ends dur_ns later, an absolute deadline the
 * worker sleeps to (clock_nanosleep TIMER_ABSTIME), so durations never
 * drift however late a thread wakes. Copies and memsets really move bytes.
 * A host function ends when it returns; a timed one (NCCL's collectives)
 * is given its modelled start and names its modelled end. Each host
 * thread's last queued op is kept for the introspection (gpu_introspect.c).
 *
 * Legacy default stream semantics are dependencies taken at submission: an
 * op on the legacy stream waits for the last op of every blocking stream of
 * its device; an op on a blocking stream waits for the legacy stream's last
 * op; non-blocking streams take neither.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "gpu_board.h"
#include "gpu_internal.h"

pthread_mutex_t sg_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sg_done_cv = PTHREAD_COND_INITIALIZER;

static struct sg_stream *dev_list[SG_MAX_DEVICES];
static struct sg_stream *legacy[SG_MAX_DEVICES];
static unsigned stream_seq;

/* Per host thread: its per-thread default streams, one per device. */
struct ptds_set {
	struct sg_stream *s[SG_MAX_DEVICES];
};
static pthread_key_t ptds_key;
static pthread_once_t ptds_once = PTHREAD_ONCE_INIT;

/* Per host thread: a reference to the last op it queued (simgpu_op_last()). */
static pthread_key_t last_key;
static pthread_once_t last_once = PTHREAD_ONCE_INIT;

struct sg_stream *sg_dev_streams(int dev)
{
	return dev_list[dev];
}

/* ---- ops ---------------------------------------------------------------------- */
static void release_deps_locked(struct sg_op *op)
{
	int i;

	for (i = 0; i < op->ndeps; i++)
		sg_op_put_locked(op->deps[i]);
	op->ndeps = 0;
	if (op->deps != op->deps_inline)
		free(op->deps);
	op->deps = op->deps_inline;
}

void sg_op_put_locked(struct sg_op *op)
{
	if (!op || --op->refs)
		return;
	release_deps_locked(op);
	sg_staging_put(op->staged);
	free(op);
}

static void add_dep_locked(struct sg_op *op, struct sg_op *dep)
{
	if (!dep || dep->done)
		return;
	if (op->ndeps == op->cap_deps) {
		int nc = op->cap_deps * 2;
		struct sg_op **n = malloc((size_t)nc * sizeof(*n));

		if (!n)
			abort();
		memcpy(n, op->deps, (size_t)op->ndeps * sizeof(*n));
		if (op->deps != op->deps_inline)
			free(op->deps);
		op->deps = n;
		op->cap_deps = nc;
	}
	dep->refs++;
	op->deps[op->ndeps++] = dep;
}

/* The last op of every blocking stream of dev except `except`. */
static void add_blocking_deps_locked(struct sg_op *op, int dev, struct sg_stream *except)
{
	struct sg_stream *b;

	for (b = dev_list[dev]; b; b = b->dev_next)
		if (b != except && b->type != SG_ST_LEGACY && !(b->flags & SG_STREAM_NONBLOCKING))
			add_dep_locked(op, b->last);
}

/* ---- worker --------------------------------------------------------------------- */
static void copy_rows(const struct sg_work *w, const void *src)
{
	size_t r;

	if (w->height <= 1) {
		memmove(w->dst, src, w->width);
		return;
	}
	for (r = 0; r < w->height; r++)
		memmove((char *)w->dst + r * w->dpitch, (const char *)src + r * w->spitch,
			w->width);
}

/* memset: bytes, or a 16/32-bit pattern (cuMemsetD16/D32) */
static void fill(const struct sg_work *w)
{
	size_t i;

	if (w->elem == 4) {
		uint32_t v = (uint32_t)w->value, *p = w->dst;

		for (i = 0; i < w->width / 4; i++)
			p[i] = v;
	} else if (w->elem == 2) {
		uint16_t v = (uint16_t)w->value, *p = w->dst;

		for (i = 0; i < w->width / 2; i++)
			p[i] = v;
	} else {
		memset(w->dst, w->value & 0xff, w->width);
	}
}

static uint64_t run_op(struct sg_op *op)
{
	struct sg_work *w = &op->w;
	uint64_t end = op->t_start + w->dur_ns;

	switch (w->kind) {
	case SG_WORK_COPY:
		copy_rows(w, op->staged ? op->staged : w->src);
		if (w->signal_moved) {
			pthread_mutex_lock(&sg_mu);
			op->moved = true;
			pthread_cond_broadcast(&sg_done_cv);
			pthread_mutex_unlock(&sg_mu);
		}
		break;
	case SG_WORK_MEMSET:
		fill(w);
		break;
	case SG_WORK_HOSTFN:
		if (w->timed_fn) {
			/* modelled like a kernel: the end it names, however late the host ran it */
			end = w->timed_fn(w->arg, op->t_start);
			if (end < op->t_start)
				end = op->t_start;
			break;
		}
		w->fn(w->arg);
		end = sg_now_ns();
		return end > op->t_start ? end : op->t_start;
	case SG_WORK_FREE:
		sg_mem_free(w->dst, (1u << SG_MEM_DEVICE) | (1u << SG_MEM_MANAGED), NULL);
		break;
	default:
		break;
	}
	/* work that was ready before it was queued cannot end before it was */
	if (w->t_ready && end < op->t_enq)
		end = op->t_enq;
	if (end > sg_now_ns())
		sg_sleep_until(end);
	return end;
}

static bool deps_done(const struct sg_op *op)
{
	int i;

	for (i = 0; i < op->ndeps; i++)
		if (!op->deps[i]->done)
			return false;
	return true;
}

static void stream_free_locked(struct sg_stream *s)
{
	pthread_cond_destroy(&s->work_cv);
	free(s);
}

void sg_stream_put(struct sg_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&sg_mu);
	if (!--s->refs)
		stream_free_locked(s);
	pthread_mutex_unlock(&sg_mu);
}

/*
 * What the board (NVML's view) learns of an item as its worker starts it: its modelled interval as
 * SM busy time (kernels, memsets: a real GPU runs them as kernels), as memory busy time (copies
 * touching device memory, memsets) and a copy's bytes across PCIe, on the device that holds the
 * device side (a copy between host memory and a device: its device; device to device: no PCIe).
 */
static bool on_device(const struct sg_range *r)
{
	return r->kind == SG_MEM_DEVICE || r->kind == SG_MEM_MANAGED || (r->flags & SG_RANGE_VMM);
}

static void board_item(const struct sg_stream *s, const struct sg_op *op)
{
	const struct sg_work *w = &op->w;
	uint64_t end = op->t_start + w->dur_ns;
	struct sg_range src, dst;
	bool sdev, ddev;

	switch (w->kind) {
	case SG_WORK_KERNEL:
		sg_board_busy(s->dev, SG_BUSY_SM, op->t_start, end);
		break;
	case SG_WORK_MEMSET:
		sg_board_busy(s->dev, SG_BUSY_SM, op->t_start, end);
		sg_board_busy(s->dev, SG_BUSY_MEM, op->t_start, end);
		break;
	case SG_WORK_COPY:
		sg_mem_lookup(w->src, &src);
		sg_mem_lookup(w->dst, &dst);
		sdev = on_device(&src);
		ddev = on_device(&dst);
		if (sdev || ddev)
			sg_board_busy(ddev ? dst.device : src.device, SG_BUSY_MEM, op->t_start,
				      end);
		if (sdev != ddev)
			sg_board_pcie(ddev ? dst.device : src.device, sdev,
				      (uint64_t)w->width * (w->height ? w->height : 1));
		break;
	default:
		break;
	}
}

static void *worker(void *arg)
{
	struct sg_stream *s = arg, **pp;

	/* wake at the deadline, not up to 50 us later */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	pthread_mutex_lock(&sg_mu);
	for (;;) {
		struct sg_op *op;
		uint64_t start;
		int i;

		while (!s->head && !s->dying)
			pthread_cond_wait(&s->work_cv, &sg_mu);
		if (!s->head)
			break;
		op = s->head;
		while (!deps_done(op))
			pthread_cond_wait(&sg_done_cv, &sg_mu);
		start = op->w.t_ready ? op->w.t_ready : op->t_enq;
		if (s->t_free > start)
			start = s->t_free;
		for (i = 0; i < op->ndeps; i++)
			if (op->deps[i]->t_end > start)
				start = op->deps[i]->t_end;
		op->t_start = start;
		pthread_mutex_unlock(&sg_mu);

		board_item(s, op);
		op->t_end = run_op(op);
		if (op->w.kind == SG_WORK_HOSTFN &&
		    op->w.timed_fn) /* an NCCL item: a kernel on a GPU */
			sg_board_busy(s->dev, SG_BUSY_SM, op->t_start, op->t_end);
		/* the snapshot is not needed once the bytes moved (the op may outlive this) */
		sg_staging_put(op->staged);
		op->staged = NULL;
		if (sg_log_level > 1)
			sg_log("exec dev%d stream %p kind %d %s start %llu end %llu late_us %.1f",
			       s->dev, (void *)s, op->w.kind, op->w.name ? op->w.name : "",
			       (unsigned long long)op->t_start, (unsigned long long)op->t_end,
			       (double)(int64_t)(sg_now_ns() - op->t_end) / 1e3);

		pthread_mutex_lock(&sg_mu);
		op->done = true;
		s->t_free = op->t_end;
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		s->pending--;
		release_deps_locked(op);
		pthread_cond_broadcast(&sg_done_cv);
		sg_op_put_locked(op);
	}
	for (pp = &dev_list[s->dev]; *pp; pp = &(*pp)->dev_next)
		if (*pp == s) {
			*pp = s->dev_next;
			break;
		}
	sg_op_put_locked(s->last);
	s->last = NULL;
	if (!--s->refs)
		stream_free_locked(s);
	pthread_mutex_unlock(&sg_mu);
	return NULL;
}

static struct sg_stream *stream_new_locked(int dev, enum sg_stream_type type, unsigned flags,
					   int prio)
{
	struct sg_stream *s = calloc(1, sizeof(*s));
	pthread_attr_t attr;
	sigset_t all, old;
	char name[16];
	int err;

	if (!s)
		return NULL;
	s->dev = dev;
	s->type = type;
	s->flags = flags;
	s->priority = prio;
	s->refs = 2; /* owner + worker */
	pthread_cond_init(&s->work_cv, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 1 << 20);
	/* workers take no signals meant for the application */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&s->thread, &attr, worker, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		pthread_cond_destroy(&s->work_cv);
		free(s);
		return NULL;
	}
	snprintf(name, sizeof(name), "simgpu%d-%s%u", dev,
		 type == SG_ST_LEGACY	    ? "L"
		 : type == SG_ST_PER_THREAD ? "T"
					    : "s",
		 ++stream_seq);
	pthread_setname_np(s->thread, name);
	s->dev_next = dev_list[dev];
	dev_list[dev] = s;
	return s;
}

/* ---- handles ------------------------------------------------------------------- */
static void ptds_exit(void *arg)
{
	struct ptds_set *set = arg;
	int d;

	pthread_mutex_lock(&sg_mu);
	for (d = 0; d < SG_MAX_DEVICES; d++) {
		struct sg_stream *s = set->s[d];

		if (!s)
			continue;
		s->dying = true;
		pthread_cond_signal(&s->work_cv);
		if (!--s->refs)
			stream_free_locked(s);
	}
	pthread_mutex_unlock(&sg_mu);
	free(set);
}

static void ptds_init(void)
{
	pthread_key_create(&ptds_key, ptds_exit);
}

static struct sg_stream *per_thread_locked(int dev)
{
	struct ptds_set *set;

	pthread_once(&ptds_once, ptds_init);
	set = pthread_getspecific(ptds_key);
	if (!set) {
		set = calloc(1, sizeof(*set));
		if (!set)
			return NULL;
		pthread_setspecific(ptds_key, set);
	}
	if (!set->s[dev])
		set->s[dev] = stream_new_locked(dev, SG_ST_PER_THREAD, 0, 0);
	return set->s[dev];
}

static struct sg_stream *legacy_locked(int dev)
{
	if (!legacy[dev])
		legacy[dev] = stream_new_locked(dev, SG_ST_LEGACY, 0, 0);
	return legacy[dev];
}

int sg_stream_get(void *h, int per_thread, int dev, struct sg_stream **out)
{
	struct sg_stream *s = NULL;
	int err = SG_OK;

	if (dev < 0 || dev >= sg_device_count())
		return SG_EDEVICE;
	pthread_mutex_lock(&sg_mu);
	if (h == SG_H_PER_THREAD || (!h && per_thread))
		s = per_thread_locked(dev);
	else if (!h || h == SG_H_LEGACY)
		s = legacy_locked(dev);
	else if (sg_handle_is(h, SG_HK_STREAM))
		s = h;
	else
		err = SG_EHANDLE;
	if (!err && !s)
		err = SG_ENOMEM;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&sg_mu);
	*out = s;
	return err;
}

int sg_stream_create(int dev, unsigned flags, int priority, struct sg_stream **out)
{
	struct sg_stream *s;

	if (dev < 0 || dev >= sg_device_count())
		return SG_EDEVICE;
	pthread_mutex_lock(&sg_mu);
	s = stream_new_locked(dev, SG_ST_USER, flags, priority);
	if (s && sg_handle_add(s, SG_HK_STREAM)) {
		s->dying = true;
		pthread_cond_signal(&s->work_cv);
		s->refs--;
		s = NULL;
	}
	pthread_mutex_unlock(&sg_mu);
	*out = s;
	return s ? SG_OK : SG_ENOMEM;
}

int sg_stream_destroy(void *h)
{
	struct sg_stream *s = h;

	pthread_mutex_lock(&sg_mu);
	if (!sg_handle_is(h, SG_HK_STREAM)) {
		pthread_mutex_unlock(&sg_mu);
		return SG_EHANDLE;
	}
	sg_handle_del(h);
	if (s->capture)
		sg_capture_invalidate_locked(s->capture);
	s->capture = NULL;
	s->dying = true;
	pthread_cond_signal(&s->work_cv);
	if (!--s->refs)
		stream_free_locked(s);
	pthread_mutex_unlock(&sg_mu);
	return SG_OK;
}

int sg_stream_info(struct sg_stream *s, int *dev, unsigned *flags, int *priority)
{
	if (dev)
		*dev = s->dev;
	if (flags)
		*flags = s->flags;
	if (priority)
		*priority = s->priority;
	return SG_OK;
}

int sg_stream_is_default(struct sg_stream *s)
{
	return s->type != SG_ST_USER;
}

/* ---- the host thread's last op ------------------------------------------------------ */
static void last_exit(void *arg)
{
	pthread_mutex_lock(&sg_mu);
	sg_op_put_locked(arg);
	pthread_mutex_unlock(&sg_mu);
}

static void last_init(void)
{
	pthread_key_create(&last_key, last_exit);
}

static void set_last_locked(struct sg_op *op)
{
	pthread_once(&last_once, last_init);
	sg_op_put_locked(pthread_getspecific(last_key));
	if (op)
		op->refs++;
	pthread_setspecific(last_key, op);
}

struct sg_op *sg_last_op_locked(void)
{
	pthread_once(&last_once, last_init);
	return pthread_getspecific(last_key);
}

/* ---- submission ------------------------------------------------------------------ */
int sg_submit_locked(struct sg_stream *s, const struct sg_work *w, struct sg_op **extra,
		     int n_extra, struct sg_op **out)
{
	struct sg_op *op;
	int i;

	if (out)
		*out = NULL;
	if (s->capture) {
		if (s->capture->invalidated)
			return SG_ECAPTURE_INVALIDATED;
		set_last_locked(NULL);
		return sg_capture_append_locked(s->capture, w);
	}
	if (s->type == SG_ST_LEGACY) {
		struct sg_stream *b;

		/* legacy work would depend on a blocking stream that is capturing */
		for (b = dev_list[s->dev]; b; b = b->dev_next)
			if (b->capture && !(b->flags & SG_STREAM_NONBLOCKING)) {
				sg_capture_invalidate_locked(b->capture);
				return SG_ECAPTURE_IMPLICIT;
			}
	}
	while (s->pending >= sg_config()->queue_depth && !s->dying)
		sg_host_wait_locked();
	if (s->dying) /* destroyed meanwhile: its worker may be gone */
		return SG_EHANDLE;

	op = calloc(1, sizeof(*op));
	if (!op)
		return SG_ENOMEM;
	op->w = *w;
	op->refs = 1; /* the queue's */
	op->t_enq = sg_now_ns();
	op->deps = op->deps_inline;
	op->cap_deps = SG_OP_INLINE_DEPS;
	if (s->type == SG_ST_LEGACY)
		add_blocking_deps_locked(op, s->dev, s);
	else if (!(s->flags & SG_STREAM_NONBLOCKING) && legacy[s->dev])
		add_dep_locked(op, legacy[s->dev]->last);
	for (i = 0; i < n_extra; i++)
		add_dep_locked(op, extra[i]);

	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	s->pending++;
	sg_op_put_locked(s->last);
	s->last = op;
	op->refs++;
	set_last_locked(op);
	if (out) {
		*out = op;
		op->refs++;
	}
	pthread_cond_signal(&s->work_cv);
	return SG_OK;
}

static void *stage(const struct sg_work *w)
{
	void *buf = sg_staging_get(w->width * (w->height ? w->height : 1) + 1);
	size_t r;

	if (!buf)
		return NULL;
	if (w->height <= 1)
		memcpy(buf, w->src, w->width);
	else
		for (r = 0; r < w->height; r++)
			memcpy((char *)buf + r * w->width, (const char *)w->src + r * w->spitch,
			       w->width);
	return buf;
}

static int submit(struct sg_stream *s, int other_dev, const struct sg_work *w, struct sg_op **out)
{
	struct sg_work copy = *w;
	void *staged = NULL;
	struct sg_op *op = NULL;
	int err;

	if (w->kind == SG_WORK_COPY && w->stage_src) {
		staged = stage(w);
		if (!staged)
			return SG_ENOMEM;
		copy.spitch = copy.width;
	}
	pthread_mutex_lock(&sg_mu);
	if (other_dev >= 0 && other_dev != s->dev) {
		struct sg_op tmp = { .deps = tmp.deps_inline, .cap_deps = SG_OP_INLINE_DEPS };

		/* peer copies also serialise with the other device's default stream */
		if (legacy[other_dev])
			add_dep_locked(&tmp, legacy[other_dev]->last);
		add_blocking_deps_locked(&tmp, other_dev, NULL);
		err = sg_submit_locked(s, &copy, tmp.deps, tmp.ndeps, &op);
		release_deps_locked(&tmp);
	} else {
		err = sg_submit_locked(s, &copy, NULL, 0, &op);
	}
	if (op && staged) {
		op->staged = staged;
		staged = NULL;
	}
	if (out)
		*out = op;
	else
		sg_op_put_locked(op);
	pthread_mutex_unlock(&sg_mu);
	sg_staging_put(staged);
	return err;
}

int sg_submit(struct sg_stream *s, const struct sg_work *w, struct sg_op **out)
{
	return submit(s, -1, w, out);
}

int sg_submit_peer(struct sg_stream *s, int other_dev, const struct sg_work *w, struct sg_op **out)
{
	return submit(s, other_dev, w, out);
}
