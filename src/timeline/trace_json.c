/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * trace_json.c — the timeline (trace_json.h): a model observer that writes
 * one Chrome trace event per fact as the calls arrive, hand-formatted into a
 * large stdio buffer (no allocation per call; the consumer must keep up with
 * a million records a second).
 *
 * Tracks: per process (pid), one per thread (its outermost calls as
 * complete slices) and one per CUDA stream (a synthetic tid): an instant at
 * each work item's queueing, and one "window" slice per synchronisation,
 * from the first item it covered being queued to the synchronisation's
 * return. Flow arrows go from each queueing call to the synchronisation
 * that covered the item. Nothing here is a GPU timestamp. With scheduling
 * records (--timeline-sched), one more track per thread (a synthetic tid):
 * its on-CPU slices and the off-CPU gaps between them, with counters of the
 * process's on-CPU threads and the thread's page faults. With NVML
 * samples, one counter track per device (a synthetic pid): its
 * utilizations, memory used, clocks, power, temperature, PCIe throughput
 * and throttle reasons, each sample's values at the sample's time.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "model/view.h"
#include "text/labels.h"
#include "text/text_clean.h"
#include "timeline/trace_json.h"

#define TL_STREAM_TID_BASE 0x40000000u /* above every pid_max: stream tracks never meet real tids */
#define TL_SCHED_TID_BASE  0x60000000u /* the scheduling tracks of threads (--timeline-sched) */
#define TL_GPU_PID_BASE    0x70000000u /* the NVML counter tracks of devices: above every pid_max */
#define TL_MAX_GPUS        64          /* devices with a track; samples of others are counted only */
#define TL_COPY_SAMPLE_NS  1000000ULL  /* the copied-bytes counter: at most one sample per ms */
#define TL_COPY_BUCKET_NS  10000000ULL /* the bytes-per-interval counter: 10 ms intervals */
#define TL_BUF_BYTES       (1u << 20)

struct tl_stream {
	__u64 key;
	__u32 tid;          /* synthetic track id */
	__u32 index;        /* in its process, from 0: track order */
	__u64 flow_base;    /* flow ids are flow_base + item number */
	__u64 written_end;  /* items below have their flow start written */
	__u64 finished;     /* items below have their flow finish written */
	bool window_open;
	__u64 window_ts;    /* queueing of the window's first item */
	__u64 window_items;
	__u64 window_last;  /* end of the latest queueing call in the window */
	__u64 prev_end;     /* end of the previous window: windows never overlap */
};

/* A thread's scheduling track (--timeline-sched records). */
struct tl_sched {
	__u32 tid;          /* the thread */
	__u32 track;        /* synthetic track id */
	__u32 index;        /* in its process, from 0 */
	__u16 last_left;    /* how its previous slice ended (enum gp_sched_left); 0: none yet */
	__u64 last_end;     /* its previous slice's end */
	__u64 minor, major; /* page faults in its slices so far */
};

struct tl_proc {
	__u32 pid;
	struct gp_u64map streams; /* key -> struct tl_stream */
	struct gp_u64map tids;    /* tid -> this (a set) */
	struct gp_u64map sched;   /* tid -> struct tl_sched */
	__u32 nsched;
	__u32 nstreams;
	__u64 copied[GP_DIR_MAX]; /* bytes of the kept successful copies, by direction */
	__u64 copy_sample_ts;     /* last sample of the copied-bytes counter */
	__u64 copy_last_ts;       /* latest kept copy */
	bool copy_dirty;          /* a copy since that sample */
	__u64 bucket[GP_DIR_MAX]; /* bytes of the copies that returned in the open interval, by direction */
	__u64 bucket_no;          /* the open interval: [bucket_no, bucket_no + 1) x TL_COPY_BUCKET_NS */
	bool bucket_open;         /* it holds a copy */
	bool dirs_seen[GP_DIR_MAX]; /* directions that ever had bytes: each gets its 0 samples */
};

struct gp_timeline {
	FILE *out;      /* unbuffered: buf is the buffer */
	char *buf;
	size_t len;     /* bytes in buf */
	char path[PATH_MAX], tmp[PATH_MAX];
	__u64 max_events;
	__u64 calls, kept, events;
	__u64 slices, slices_kept; /* on-CPU slices seen, written (same cap as the calls) */
	__u32 nstreams; /* all processes: flow id prefixes */
	struct gp_u64map procs; /* pid -> struct tl_proc */
	struct tl_proc *last;   /* the previous call's process */
	bool failed;            /* out of memory for a track: the file would lie, so it is not kept */
	__u32 gpus[TL_MAX_GPUS]; /* devices with a counter track, in the order of their first sample */
	__u32 ngpus;
	__u64 gpu_samples, gpu_samples_kept;
};

/* ---- formatting ----------------------------------------------------------- */

/*
 * The text goes into tl->buf by hand and to the file in TL_BUF_BYTES writes:
 * stdio's per-call locking-free paths still cost a function call, a length
 * and a bounds check per token (a third of the reader's time per record).
 */
static void flush_buf(struct gp_timeline *tl)
{
	if (tl->len)
		fwrite_unlocked(tl->buf, 1, tl->len, tl->out);
	tl->len = 0;
}

/* Room for n more bytes at tl->buf + tl->len; n <= TL_ROOM_MAX. */
#define TL_ROOM_MAX 64
static inline __attribute__((always_inline)) char *room(struct gp_timeline *tl, size_t n)
{
	if (tl->len + n > TL_BUF_BYTES)
		flush_buf(tl);
	return tl->buf + tl->len;
}

static inline __attribute__((always_inline)) void put_n(struct gp_timeline *tl, const char *s,
							 size_t n)
{
	if (n > TL_ROOM_MAX) {
		flush_buf(tl);
		fwrite_unlocked(s, 1, n, tl->out);
		return;
	}
	memcpy(room(tl, n), s, n);
	tl->len += n;
}

/* strlen of a literal folds at compile time once this is inlined */
static inline __attribute__((always_inline)) void put(struct gp_timeline *tl, const char *s)
{
	put_n(tl, s, strlen(s));
}

static inline __attribute__((always_inline)) void put_c(struct gp_timeline *tl, char c)
{
	*room(tl, 1) = c;
	tl->len++;
}

static void put_u64(struct gp_timeline *tl, __u64 v)
{
	char b[24], *p = b + sizeof(b);

	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	put_n(tl, p, (size_t)(b + sizeof(b) - p));
}

static void put_s64(struct gp_timeline *tl, __s64 v)
{
	if (v < 0) {
		put_c(tl, '-');
		put_u64(tl, -(__u64)v);
	} else {
		put_u64(tl, (__u64)v);
	}
}

/* Nanoseconds as microseconds with three decimals: exact. */
static void put_us(struct gp_timeline *tl, __u64 ns)
{
	unsigned frac = (unsigned)(ns % 1000);

	char *p;

	put_u64(tl, ns / 1000);
	p = room(tl, 4);
	p[0] = '.';
	p[1] = (char)('0' + frac / 100);
	p[2] = (char)('0' + frac / 10 % 10);
	p[3] = (char)('0' + frac % 10);
	tl->len += 4;
}

/* A JSON string: quotes, backslashes escaped; bytes that are not valid UTF-8 or control become U+FFFD. */
static void put_str(struct gp_timeline *tl, const char *s)
{
	put_c(tl, '"');
	while (*s) {
		size_t n = gp_text_char_len(s);

		if (!n) {
			put(tl, GP_TEXT_REPLACEMENT);
			s++;
			continue;
		}
		if (*s == '"' || *s == '\\')
			put_c(tl, '\\');
		put_n(tl, s, n);
		s += n;
	}
	put_c(tl, '"');
}

static void put_hex(struct gp_timeline *tl, __u64 v)
{
	char b[24], *p = b + sizeof(b);

	*--p = '"';
	do
		*--p = "0123456789abcdef"[v & 15];
	while (v >>= 4);
	*--p = 'x';
	*--p = '0';
	*--p = '"';
	put_n(tl, p, (size_t)(b + sizeof(b) - p));
}

/* Opens an event: {"ph":PH,"pid":..,"tid":..,"ts":.. (the caller goes on with ,"name":... and closes it). */
static void ev_open(struct gp_timeline *tl, const char *ph, __u32 pid, __u32 tid, __u64 ts_ns)
{
	put(tl, tl->events++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
	put(tl, ph);
	put(tl, "\",\"pid\":");
	put_u64(tl, pid);
	put(tl, ",\"tid\":");
	put_u64(tl, tid);
	put(tl, ",\"ts\":");
	put_us(tl, ts_ns);
}

/* ---- tracks --------------------------------------------------------------- */

static void proc_free(void *v)
{
	struct tl_proc *tp = v;

	gp_u64map_clear(&tp->streams, free);
	gp_u64map_clear(&tp->tids, NULL);
	gp_u64map_clear(&tp->sched, free);
	free(tp);
}

static struct tl_proc *proc_of(struct gp_timeline *tl, __u32 pid)
{
	struct tl_proc *tp = tl->last && tl->last->pid == pid ? tl->last : gp_u64map_get(&tl->procs, pid);

	if (!tp) {
		tp = calloc(1, sizeof(*tp));
		if (!tp || gp_u64map_put(&tl->procs, pid, tp)) {
			free(tp);
			return NULL;
		}
		tp->pid = pid;
	}
	tl->last = tp;
	return tp;
}

static struct tl_stream *stream_of(struct gp_timeline *tl, struct tl_proc *tp, __u64 key)
{
	struct tl_stream *s = gp_u64map_get(&tp->streams, key);

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s || gp_u64map_put(&tp->streams, key, s)) {
		free(s);
		return NULL;
	}
	s->key = key;
	s->index = tp->nstreams++;
	s->tid = TL_STREAM_TID_BASE + s->index;
	s->flow_base = (__u64)++tl->nstreams << 32; /* ids below 2^53: exact as JavaScript numbers */
	return s;
}

/* ---- events ---------------------------------------------------------------- */

static const char *family_cat(enum gp_api_id api)
{
	return gp_family_name(gp_apis[api].family);
}

static void call_slice(struct gp_timeline *tl, const struct gp_call_view *v)
{
	ev_open(tl, "X", v->pid, v->tid, v->ts_ns);
	put(tl, ",\"dur\":");
	put_us(tl, v->dur_ns);
	put(tl, ",\"cat\":\"");
	put(tl, family_cat(v->api));
	put(tl, "\",\"name\":\"");
	put(tl, gp_apis[v->api].symbol);
	put(tl, "\",\"args\":{\"op\":\"");
	put(tl, v->op);
	put(tl, "\",\"ret\":");
	put_s64(tl, v->ret);
	if (v->ret && v->error) {
		put(tl, ",\"error\":\"");
		put(tl, v->error);
		put_c(tl, '"');
	}
	if (v->bytes) {
		put(tl, ",\"bytes\":");
		put_u64(tl, v->bytes);
	}
	if (v->direction) {
		put(tl, ",\"direction\":\"");
		put(tl, v->direction);
		put(tl, "\",\"host_memory\":\"");
		put(tl, v->host_memory);
		put_c(tl, '"');
	}
	if (v->has_stream) {
		put(tl, ",\"stream\":");
		if (v->stream & GP_STREAM_KEY_PER_THREAD) { /* the key, not a handle: say which thread's */
			put(tl, "\"per-thread default, tid ");
			put_u64(tl, v->stream & 0xffffffffu);
			put_c(tl, '"');
		} else {
			put_hex(tl, v->stream);
		}
	}
	if (v->kernel) {
		put(tl, ",\"kernel\":");
		put_str(tl, v->kernel);
	}
	if (v->op_detail && v->op_detail->kind == GP_OP_COLL && v->op_detail->comm) {
		const struct gp_nccl_comm *cm = v->op_detail->comm;

		if (cm->comm_id_known) {
			char id[17];

			snprintf(id, sizeof(id), "%016llx", (unsigned long long)cm->comm_id);
			put(tl, ",\"comm_id\":\"");
			put(tl, id);
			put_c(tl, '"');
		}
		if (v->op_detail->seq) {
			put(tl, ",\"seq\":");
			put_u64(tl, v->op_detail->seq);
		}
	}
	put(tl, "}}");
}

/* A work item queued on its stream: instant on the stream track, flow start on the call. */
static void queued(struct gp_timeline *tl, struct tl_proc *tp, const struct gp_call_view *v)
{
	struct tl_stream *s = stream_of(tl, tp, v->stream);

	if (!s) {
		tl->failed = true;
		return;
	}
	ev_open(tl, "i", v->pid, s->tid, v->ts_ns);
	put(tl, ",\"s\":\"t\",\"cat\":\"queue\",\"name\":");
	if (v->kernel)
		put_str(tl, v->kernel);
	else if (v->direction) {
		put(tl, "\"copy ");
		put(tl, v->direction);
		put_c(tl, '"');
	} else {
		put_c(tl, '"');
		put(tl, v->op);
		put_c(tl, '"');
	}
	put(tl, ",\"args\":{\"api\":\"");
	put(tl, gp_apis[v->api].symbol);
	put(tl, "\",\"queued_by_tid\":");
	put_u64(tl, v->tid);
	if (v->bytes) {
		put(tl, ",\"bytes\":");
		put_u64(tl, v->bytes);
	}
	put(tl, ",\"item\":");
	put_u64(tl, v->queue_seq);
	put(tl, "}}");

	ev_open(tl, "s", v->pid, v->tid, v->ts_ns);
	put(tl, ",\"cat\":\"queue\",\"name\":\"waited for by\",\"id\":");
	put_u64(tl, s->flow_base + v->queue_seq);
	put_c(tl, '}');

	if (!s->window_open) {
		s->window_open = true;
		s->window_ts = v->ts_ns;
		s->window_items = 0;
		s->window_last = 0;
	}
	s->window_items++;
	if (v->ts_ns + v->dur_ns > s->window_last)
		s->window_last = v->ts_ns + v->dur_ns;
	s->written_end = v->queue_seq + 1;
}

/* Flow finishes of items [s->finished, end) at (pid, tid, ts), bound to the slice there. */
static void finish_flows(struct gp_timeline *tl, struct tl_stream *s, __u64 end, __u32 pid, __u32 tid, __u64 ts)
{
	if (end > s->written_end)
		end = s->written_end;
	for (; s->finished < end; s->finished++) {
		ev_open(tl, "f", pid, tid, ts);
		put(tl, ",\"bp\":\"e\",\"cat\":\"queue\",\"name\":\"waited for by\",\"id\":");
		put_u64(tl, s->flow_base + s->finished);
		put_c(tl, '}');
	}
}

/* Closes a stream's window at end_ns: one slice over the time its work was outstanding. */
static void close_window(struct gp_timeline *tl, __u32 pid, struct tl_stream *s, __u64 end_ns, const char *name,
			 const char *by)
{
	__u64 from = s->window_ts > s->prev_end ? s->window_ts : s->prev_end;

	if (!s->window_open)
		return;
	if (end_ns < from)
		end_ns = from;
	ev_open(tl, "X", pid, s->tid, from);
	put(tl, ",\"dur\":");
	put_us(tl, end_ns - from);
	put(tl, ",\"cat\":\"stream\",\"name\":\"");
	put(tl, name);
	put(tl, "\",\"args\":{\"items\":");
	put_u64(tl, s->window_items);
	if (by) {
		put(tl, ",\"synchronised_by\":\"");
		put(tl, by);
		put_c(tl, '"');
	}
	put(tl, "}}");
	s->window_open = false;
	s->prev_end = end_ns;
}

/* A synchronisation: its windows close at its return, the flows of what it covered end on it. */
static void synced(struct gp_timeline *tl, struct tl_proc *tp, const struct gp_call_view *v)
{
	for (size_t i = 0; i < v->ncovered; i++) {
		const struct gp_sync_cover *cv = &v->covered[i];
		struct tl_stream *s = gp_u64map_get(&tp->streams, cv->stream);

		if (!s || s->finished >= s->written_end)
			continue; /* none of its items was written (after the cap) */
		/* at the return: work queued by another thread while it waited began after the call did */
		finish_flows(tl, s, cv->end_seq, v->pid, v->tid, v->ts_ns + v->dur_ns - (v->dur_ns ? 1 : 0));
		close_window(tl, v->pid, s, v->ts_ns + v->dur_ns, "queued work, done by the synchronisation's return",
			     gp_apis[v->api].symbol);
	}
}

static void memory_counter(struct gp_timeline *tl, const struct gp_call_view *v)
{
	ev_open(tl, "C", v->pid, v->pid, v->ts_ns + v->dur_ns);
	put(tl, ",\"name\":\"device memory (live bytes)\",\"args\":{\"live_bytes\":");
	put_u64(tl, v->device_live_bytes);
	put(tl, "}}");
}

static void copy_counter(struct gp_timeline *tl, struct tl_proc *tp, __u64 ts)
{
	bool first = true;

	ev_open(tl, "C", tp->pid, tp->pid, ts);
	put(tl, ",\"name\":\"bytes copied (cumulative)\",\"args\":{");
	for (int d = 0; d < GP_DIR_MAX; d++) {
		if (!tp->copied[d])
			continue;
		put(tl, first ? "\"" : ",\"");
		put(tl, gp_dir_name(d));
		put(tl, "\":");
		put_u64(tl, tp->copied[d]);
		first = false;
	}
	put(tl, "}}");
	tp->copy_sample_ts = ts;
	tp->copy_dirty = false;
}

/* One sample of the bytes-per-interval counter at the start of interval no: bytes[] by direction. */
static void interval_sample(struct gp_timeline *tl, struct tl_proc *tp, __u64 no, const __u64 *bytes)
{
	bool first = true;

	ev_open(tl, "C", tp->pid, tp->pid, no * TL_COPY_BUCKET_NS);
	put(tl, ",\"name\":\"bytes copied per 10 ms\",\"args\":{");
	for (int d = 0; d < GP_DIR_MAX; d++) {
		if (!tp->dirs_seen[d])
			continue;
		put(tl, first ? "\"" : ",\"");
		put(tl, gp_dir_name(d));
		put(tl, "\":");
		put_u64(tl, bytes ? bytes[d] : 0);
		first = false;
	}
	put(tl, "}}");
}

/* Writes the open interval's sample, and a 0 after it unless the next interval (next_no) follows on. */
static void interval_close(struct gp_timeline *tl, struct tl_proc *tp, __u64 next_no)
{
	if (!tp->bucket_open)
		return;
	interval_sample(tl, tp, tp->bucket_no, tp->bucket);
	if (next_no != tp->bucket_no + 1)
		interval_sample(tl, tp, tp->bucket_no + 1, NULL);
	memset(tp->bucket, 0, sizeof(tp->bucket));
	tp->bucket_open = false;
}

/*
 * A copy into the bytes-per-interval counter, by the interval its return
 * falls in (records arrive in about that order; one that returned in an
 * interval already written is counted in the open one).
 */
static void interval_add(struct gp_timeline *tl, struct tl_proc *tp, int d, const struct gp_call_view *v)
{
	__u64 no = (v->ts_ns + v->dur_ns) / TL_COPY_BUCKET_NS;

	if (tp->bucket_open && no > tp->bucket_no)
		interval_close(tl, tp, no);
	if (!tp->bucket_open) { /* the first copy: from then on one interval is always open */
		tp->bucket_open = true;
		tp->bucket_no = no;
	}
	tp->dirs_seen[d] = true;
	tp->bucket[d] += v->bytes;
}

static void copied(struct gp_timeline *tl, struct tl_proc *tp, const struct gp_call_view *v)
{
	int d;

	for (d = 0; d < GP_DIR_MAX && strcmp(gp_dir_name(d), v->direction); d++)
		;
	if (d == GP_DIR_MAX)
		return;
	tp->copied[d] += v->bytes;
	tp->copy_dirty = true;
	interval_add(tl, tp, d, v);
	if (v->ts_ns > tp->copy_last_ts)
		tp->copy_last_ts = v->ts_ns;
	if (v->ts_ns >= tp->copy_sample_ts + TL_COPY_SAMPLE_NS)
		copy_counter(tl, tp, v->ts_ns);
}

static void on_call(void *ctx, const struct gp_call_view *v)
{
	struct gp_timeline *tl = ctx;
	struct tl_proc *tp;

	tl->calls++;
	if (tl->kept >= tl->max_events)
		return;
	tp = proc_of(tl, v->pid);
	if (!tp || (!gp_u64map_get(&tp->tids, v->tid) && gp_u64map_put(&tp->tids, v->tid, tp))) {
		tl->failed = true;
		return;
	}
	tl->kept++;
	call_slice(tl, v);
	if (v->queued)
		queued(tl, tp, v);
	if (v->ncovered)
		synced(tl, tp, v);
	if (v->memory_changed)
		memory_counter(tl, v);
	if (v->direction && !v->ret)
		copied(tl, tp, v);
}

/* ---- NVML samples ------------------------------------------------------------ */

/*
 * Each metric's counter and series: metrics that share a counter are next to
 * each other in GP_GPU_METRIC_TABLE and go into one event (one track in
 * Perfetto, a series per argument). Names carry the unit of the values.
 */
static const struct {
	const char *counter, *series;
} gpu_counters[GP_GM_N] = {
	[GP_GM_UTIL_GPU] = { "utilization (%)", "gpu" },
	[GP_GM_UTIL_MEM] = { "utilization (%)", "memory" },
	[GP_GM_MEM_USED] = { "memory used (bytes)", "used" },
	[GP_GM_SM_CLOCK] = { "clocks (MHz)", "sm" },
	[GP_GM_MEM_CLOCK] = { "clocks (MHz)", "memory" },
	[GP_GM_POWER] = { "power (mW)", "power" },
	[GP_GM_TEMP] = { "temperature (C)", "gpu" },
	[GP_GM_PCIE_TX] = { "PCIe throughput (KB/s)", "tx" },
	[GP_GM_PCIE_RX] = { "PCIe throughput (KB/s)", "rx" },
	[GP_GM_THROTTLE] = { "throttle reasons (bits)", "reasons" },
};

static bool gpu_track(struct gp_timeline *tl, __u32 index)
{
	for (__u32 i = 0; i < tl->ngpus; i++)
		if (tl->gpus[i] == index)
			return true;
	if (tl->ngpus == TL_MAX_GPUS)
		return false;
	tl->gpus[tl->ngpus++] = index;
	return true;
}

/* A device's sample: one counter event per group of its metrics NVML gave, at the sample's time. */
static void on_gpu(void *ctx, const struct gp_gpu_sample *s)
{
	struct gp_timeline *tl = ctx;
	__u32 pid = TL_GPU_PID_BASE + s->index;

	tl->gpu_samples++;
	if (tl->gpu_samples_kept >= tl->max_events || !gpu_track(tl, s->index))
		return;
	tl->gpu_samples_kept++;
	for (int g = 0; g < GP_GM_N;) {
		const char *name = gpu_counters[g].counter;
		bool first = true;

		for (; g < GP_GM_N && !strcmp(gpu_counters[g].counter, name); g++) {
			if (!(s->valid & (1u << g)))
				continue;
			if (first) {
				ev_open(tl, "C", pid, pid, s->mono_ns);
				put(tl, ",\"name\":\"");
				put(tl, name);
				put(tl, "\",\"args\":{");
			}
			put(tl, first ? "\"" : ",\"");
			put(tl, gpu_counters[g].series);
			put(tl, "\":");
			put_u64(tl, s->v[g]);
			first = false;
		}
		if (!first)
			put(tl, "}}");
	}
}

/* ---- scheduling (--timeline-sched) ------------------------------------------------ */

static struct tl_sched *sched_of(struct tl_proc *tp, __u32 tid)
{
	struct tl_sched *ts = gp_u64map_get(&tp->sched, tid);

	if (ts)
		return ts;
	ts = calloc(1, sizeof(*ts));
	if (!ts || gp_u64map_put(&tp->sched, tid, ts)) {
		free(ts);
		return NULL;
	}
	ts->tid = tid;
	ts->index = tp->nsched++;
	ts->track = TL_SCHED_TID_BASE + ts->index;
	return ts;
}

static const char *const left_names[] = {
	[GP_SL_BLOCKED] = "blocked",
	[GP_SL_PREEMPTED] = "preempted",
	[GP_SL_EXITED] = "exited",
};

static void oncpu_counter(struct gp_timeline *tl, __u32 pid, __u64 ts, __u32 n)
{
	ev_open(tl, "C", pid, pid, ts);
	put(tl, ",\"name\":\"on-CPU threads\",\"args\":{\"threads\":");
	put_u64(tl, n);
	put(tl, "}}");
}

/*
 * One on-CPU slice: the off-CPU gap since the thread's previous slice (of
 * the kind that slice ended with), the slice itself, the process's on-CPU
 * threads at both ends, and the thread's page faults so far.
 */
static void on_sched(void *ctx, const struct gp_sched_slice *sl)
{
	struct gp_timeline *tl = ctx;
	struct tl_proc *tp;
	struct tl_sched *ts;
	__u32 pid = sl->hdr.tgid;
	__u64 start = sl->hdr.ts_ns;

	tl->slices++;
	if (tl->slices_kept >= tl->max_events)
		return;
	tp = proc_of(tl, pid);
	ts = tp ? sched_of(tp, sl->hdr.tid) : NULL;
	if (!ts) {
		tl->failed = true;
		return;
	}
	tl->slices_kept++;
	if (ts->last_left && start < ts->last_end)
		start = ts->last_end; /* an estimated start never overlaps the slice before */
	if (ts->last_left && ts->last_left != GP_SL_EXITED && start > ts->last_end) {
		ev_open(tl, "X", pid, ts->track, ts->last_end);
		put(tl, ",\"dur\":");
		put_us(tl, start - ts->last_end);
		put(tl, ts->last_left == GP_SL_PREEMPTED
				? ",\"cat\":\"sched\",\"name\":\"off CPU: runnable (preempted)\",\"args\":{}}"
				: ",\"cat\":\"sched\",\"name\":\"off CPU: blocked\",\"args\":{}}");
	}
	ev_open(tl, "X", pid, ts->track, start);
	put(tl, ",\"dur\":");
	put_us(tl, sl->end_ns - start);
	put(tl, ",\"cat\":\"sched\",\"name\":\"on CPU\",\"args\":{\"cpu\":");
	put_u64(tl, sl->cpu);
	put(tl, ",\"left\":\"");
	put(tl, left_names[sl->left]);
	put_c(tl, '"');
	if (sl->hdr.flags & GP_SSF_FAULTS_UNKNOWN) {
		put(tl, ",\"page_faults\":\"unknown\"");
	} else {
		put(tl, ",\"minor_faults\":");
		put_u64(tl, sl->minor_faults);
		put(tl, ",\"major_faults\":");
		put_u64(tl, sl->major_faults);
	}
	if (sl->hdr.flags & GP_SSF_START_ESTIMATED)
		put(tl, ",\"start\":\"estimated: arrival not reported by the kernel\"");
	else if (sl->hdr.flags & GP_SSF_SINCE_WINDOW)
		put(tl, ",\"start\":\"on a CPU when tracing began\"");
	if (sl->hdr.flags & GP_SSF_UNCOUNTED)
		put(tl, ",\"counted\":false"); /* not in the on-CPU threads counter */
	put(tl, "}}");
	if (!(sl->hdr.flags & GP_SSF_UNCOUNTED)) {
		oncpu_counter(tl, pid, sl->hdr.ts_ns, sl->oncpu_threads_start);
		oncpu_counter(tl, pid, sl->end_ns, sl->oncpu_threads_end);
	}
	if (sl->minor_faults || sl->major_faults) {
		ts->minor += sl->minor_faults;
		ts->major += sl->major_faults;
		ev_open(tl, "C", pid, pid, sl->end_ns);
		put(tl, ",\"name\":\"page faults, tid ");
		put_u64(tl, ts->tid);
		put(tl, "\",\"args\":{\"minor\":");
		put_u64(tl, ts->minor);
		put(tl, ",\"major\":");
		put_u64(tl, ts->major);
		put(tl, "}}");
	}
	ts->last_left = sl->left;
	ts->last_end = sl->end_ns;
}

/* ---- lifetime ------------------------------------------------------------------ */

struct gp_timeline *gp_timeline_open(const char *dir, const struct gp_timeline_opts *opts)
{
	struct gp_timeline *tl = calloc(1, sizeof(*tl));

	if (!tl)
		return NULL;
	tl->max_events = opts && opts->max_events ? opts->max_events : GP_TIMELINE_DEFAULT_MAX_EVENTS;
	if ((size_t)snprintf(tl->path, sizeof(tl->path), "%s/%s", dir, GP_TIMELINE_FILE) >= sizeof(tl->path) ||
	    (size_t)snprintf(tl->tmp, sizeof(tl->tmp), "%s.tmp", tl->path) >= sizeof(tl->tmp)) {
		free(tl);
		errno = ENAMETOOLONG;
		return NULL;
	}
	tl->buf = malloc(TL_BUF_BYTES);
	tl->out = tl->buf ? fopen(tl->tmp, "we") : NULL;
	if (!tl->out) {
		int e = tl->buf ? errno : ENOMEM;

		free(tl->buf);
		free(tl);
		errno = e;
		return NULL;
	}
	setvbuf(tl->out, NULL, _IONBF, 0);
	put(tl, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	return tl;
}

struct gp_model_observer gp_timeline_observer(struct gp_timeline *tl)
{
	return (struct gp_model_observer){ .ctx = tl, .call = on_call, .sched = on_sched, .gpu = on_gpu };
}

static void release(struct gp_timeline *tl)
{
	if (tl->out)
		fclose(tl->out);
	free(tl->buf);
	gp_u64map_clear(&tl->procs, proc_free);
	free(tl);
}

void gp_timeline_abort(struct gp_timeline *tl)
{
	if (!tl)
		return;
	unlink(tl->tmp);
	release(tl);
}

void gp_timeline_remove_stale(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, GP_TIMELINE_FILE);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s.tmp", dir, GP_TIMELINE_FILE);
	unlink(path);
}

/* The newest model process of pid (NULL if the model never had it). */
static const struct gp_process *model_proc(const struct gp_model *m, __u32 pid)
{
	return gp_u64map_get(&m->by_pid, pid);
}

/* A thread's name: the model's for the newest process of pid that knows it. */
static const char *thread_name(const struct gp_model *m, __u32 pid, __u32 tid)
{
	for (size_t i = m->nprocs; i-- > 0;) {
		const struct gp_thread *t;

		if (m->procs[i]->pid != pid || !(t = gp_u64map_get(&m->procs[i]->threads, tid)))
			continue;
		if (t->name && *t->name)
			return t->name;
	}
	return NULL;
}

static void meta_name(struct gp_timeline *tl, const char *what, __u32 pid, __u32 tid, const char *name)
{
	ev_open(tl, "M", pid, tid, 0);
	put(tl, ",\"name\":\"");
	put(tl, what);
	put(tl, "\",\"args\":{\"name\":");
	put_str(tl, name);
	put(tl, "}}");
}

static void meta_sort(struct gp_timeline *tl, __u32 pid, __u32 tid, __u64 index)
{
	ev_open(tl, "M", pid, tid, 0);
	put(tl, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
	put_u64(tl, index);
	put(tl, "}}");
}

static void stream_label(__u64 key, char *buf, size_t len)
{
	if (key == GP_STREAM_KEY_LEGACY)
		snprintf(buf, len, "legacy default stream 0x0 (host-observed)");
	else if (key & GP_STREAM_KEY_PER_THREAD)
		snprintf(buf, len, "per-thread default stream of tid %u (host-observed)", (unsigned)(key & 0xffffffffu));
	else
		snprintf(buf, len, "stream 0x%llx (host-observed)", (unsigned long long)key);
}

/*
 * The process's track name: its name, and where it runs when in a container or pod
 * ("train (container web-1, pod ml/trainer-0, ns pid 1)"); the viewer adds the pid itself.
 */
static void process_label(const struct gp_process *p, const char *comm, char *buf, size_t len)
{
	char c[256], pod[336] = "", ns[32] = "";

	if (!p || !gp_in_container(p)) {
		snprintf(buf, len, "%s", comm);
		return;
	}
	gp_container_label(p, c, sizeof(c));
	if (p->place.pod_name)
		snprintf(pod, sizeof(pod), "%spod %s%s%s", *c ? ", " : "",
			 p->place.pod_namespace ? p->place.pod_namespace : "",
			 p->place.pod_namespace ? "/" : "", p->place.pod_name);
	else if (p->place.pod_uid && !*c)
		snprintf(pod, sizeof(pod), "pod %s", p->place.pod_uid);
	if (p->place.ns_pid && p->place.ns_pid != p->pid)
		snprintf(ns, sizeof(ns), ", ns pid %u", p->place.ns_pid);
	snprintf(buf, len, "%s (%s%s%s%s)", comm, *c ? "container " : "", c, pod, ns);
}

/* Closing events of one process: open windows, their flows, its last counter sample; then its names. */
static void finish_proc(struct gp_timeline *tl, const struct gp_model *m, struct tl_proc *tp)
{
	const struct gp_process *p = model_proc(m, tp->pid);
	const char *comm = p && p->comm && *p->comm ? p->comm : "process";
	char label[768];

	for (size_t i = 0; i < tp->streams.cap; i++) {
		struct tl_stream *s = tp->streams.slots[i].val;

		if (!s)
			continue;
		/* work never seen synchronised (or whose synchronisation came after the cap) */
		if (s->window_open) {
			__u64 last = s->window_last;

			close_window(tl, tp->pid, s, last + 1, "queued work, no synchronisation recorded", NULL);
			finish_flows(tl, s, s->written_end, tp->pid, s->tid, last);
		}
		stream_label(s->key, label, sizeof(label));
		meta_name(tl, "thread_name", tp->pid, s->tid, label);
		meta_sort(tl, tp->pid, s->tid, 1 + (__u64)s->index);
	}
	if (tp->copy_dirty)
		copy_counter(tl, tp, tp->copy_last_ts);
	interval_close(tl, tp, 0);
	process_label(p, comm, label, sizeof(label));
	meta_name(tl, "process_name", tp->pid, 0, label);
	for (size_t i = 0; i < tp->sched.cap; i++) {
		const struct tl_sched *ts = tp->sched.slots[i].val;
		const char *name;

		if (!ts)
			continue;
		name = thread_name(m, tp->pid, ts->tid);
		snprintf(label, sizeof(label), "%s (tid %u): on/off CPU", name ? name : ts->tid == tp->pid ? comm : "thread",
			 ts->tid);
		meta_name(tl, "thread_name", tp->pid, ts->track, label);
		meta_sort(tl, tp->pid, ts->track, 1 + (__u64)tp->nstreams + ts->index);
	}
	for (size_t i = 0; i < tp->tids.cap; i++) {
		__u32 tid = (__u32)tp->tids.slots[i].key;
		const char *name;

		if (!tp->tids.slots[i].val)
			continue;
		name = thread_name(m, tp->pid, tid);
		if (!name && tid == tp->pid)
			name = comm;
		if (!name) {
			snprintf(label, sizeof(label), "thread %u", tid);
			name = label;
		}
		meta_name(tl, "thread_name", tp->pid, tid, name);
		meta_sort(tl, tp->pid, tid, 0);
	}
}

/* The devices' counter tracks: named after the device, listed before the processes. */
static void finish_gpus(struct gp_timeline *tl, const struct gp_model *m)
{
	char label[160];

	for (__u32 i = 0; i < tl->ngpus; i++) {
		const struct gp_gpu_device *d = gp_gpu_device_of(m, tl->gpus[i]);
		__u32 pid = TL_GPU_PID_BASE + tl->gpus[i];

		snprintf(label, sizeof(label), "GPU %u: %s (NVML samples)", tl->gpus[i],
			 d && d->name ? d->name : "unnamed device");
		meta_name(tl, "process_name", pid, 0, label);
		ev_open(tl, "M", pid, 0, 0);
		put(tl, ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":");
		put_s64(tl, -1000 + (__s64)i);
		put(tl, "}}");
	}
}

static void other_data(struct gp_timeline *tl, const struct gp_model *m)
{
	put(tl, "\n],\"otherData\":{\"tool\":\"gpuprobed\",\"version\":");
	put_str(tl, m->session.tool_version ? m->session.tool_version : "");
	put(tl, ",\"clock\":\"CLOCK_MONOTONIC, microseconds\",\"gpu_timestamps\":false,"
		"\"stream_tracks\":\"host-observed: an instant when work was queued; a window from the first "
		"item a synchronisation covered being queued to that synchronisation's return\",\"max_events\":");
	put_u64(tl, tl->max_events);
	put(tl, ",\"calls\":");
	put_u64(tl, tl->calls);
	put(tl, ",\"calls_kept\":");
	put_u64(tl, tl->kept);
	put(tl, ",\"calls_left_out\":");
	put_u64(tl, tl->calls - tl->kept);
	put(tl, ",\"sched_slices\":");
	put_u64(tl, tl->slices);
	put(tl, ",\"sched_slices_kept\":");
	put_u64(tl, tl->slices_kept);
	put(tl, ",\"sched_slices_left_out\":");
	put_u64(tl, tl->slices - tl->slices_kept);
	put(tl, ",\"gpu_samples\":");
	put_u64(tl, tl->gpu_samples);
	put(tl, ",\"gpu_samples_left_out\":");
	put_u64(tl, tl->gpu_samples - tl->gpu_samples_kept);
	put(tl, ",\"session_start_mono_ns\":");
	put_u64(tl, m->session.start_mono_ns);
	put(tl, ",\"session_start_realtime_ns\":");
	put_u64(tl, m->session.start_realtime_ns);
	put(tl, "}}\n");
}

/* Each NCCL stall said (m->stalls): a global instant when it was said, on the late rank's process. */
static void stall_markers(struct gp_timeline *tl, const struct gp_model *m)
{
	for (size_t i = 0; i < m->nstalls; i++) {
		const struct gp_nccl_stall *st = &m->stalls[i];
		char text[96];

		ev_open(tl, "i", st->nbehind ? st->behind[0].pid : 0, st->nbehind ? st->behind[0].pid : 0, st->mono_ns);
		snprintf(text, sizeof(text), "NCCL stall: collective #%llu (%s)", (unsigned long long)st->seq,
			 st->op < GP_NCCL_OP_MAX ? gp_nccl_op_name(st->op) : "operation not known");
		put(tl, ",\"s\":\"g\",\"cat\":\"nccl_stall\",\"name\":");
		put_str(tl, text);
		snprintf(text, sizeof(text), "%016llx", (unsigned long long)st->comm_id);
		put(tl, ",\"args\":{\"comm_id\":");
		put_str(tl, text);
		put(tl, ",\"waited_ns\":");
		put_u64(tl, st->waited_ns);
		put(tl, ",\"waiting\":[");
		for (size_t k = 0; k < st->nwaiting; k++) {
			snprintf(text, sizeof(text), "%s%d", k ? "," : "", st->waiting[k]);
			put(tl, text);
		}
		put(tl, "],\"behind\":[");
		for (size_t k = 0; k < st->nbehind; k++) {
			snprintf(text, sizeof(text), "%s{\"rank\":%d,\"pid\":%u,\"last_seq\":%llu,\"state\":", k ? "," : "",
				 st->behind[k].rank, st->behind[k].pid, (unsigned long long)st->behind[k].last_seq);
			put(tl, text);
			put_str(tl, st->behind[k].state);
			put(tl, "}");
		}
		put(tl, "]}}");
	}
}

int gp_timeline_close(struct gp_timeline *tl, const struct gp_model *m, struct gp_timeline_counts *counts)
{
	int err = 0;

	if (!tl)
		return 0;
	stall_markers(tl, m);
	for (size_t i = 0; i < tl->procs.cap; i++)
		if (tl->procs.slots[i].val)
			finish_proc(tl, m, tl->procs.slots[i].val);
	finish_gpus(tl, m);
	other_data(tl, m);
	if (counts)
		*counts = (struct gp_timeline_counts){ .calls = tl->calls, .kept = tl->kept,
						       .left_out = tl->calls - tl->kept, .events = tl->events,
						       .slices = tl->slices,
						       .slices_left_out = tl->slices - tl->slices_kept };
	flush_buf(tl);
	if (fflush(tl->out) || ferror(tl->out))
		err = -(errno ? errno : EIO);
	else if (tl->failed)
		err = -ENOMEM;
	if (fclose(tl->out) && !err)
		err = -errno;
	tl->out = NULL;
	if (!err && rename(tl->tmp, tl->path))
		err = -errno;
	if (err) {
		gp_err("write %s: %s", tl->path, strerror(-err));
		unlink(tl->tmp);
		unlink(tl->path); /* an earlier run's would pass for this one's */
	}
	release(tl);
	return err;
}
