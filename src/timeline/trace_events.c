/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * trace_events.c — the timeline's events (trace_json.h): a model observer
 * that writes one Chrome trace event per fact as the calls arrive,
 * hand-formatted into a large stdio buffer (no allocation per call; the
 * consumer must keep up with a million records a second).
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
#include <stdlib.h>
#include <string.h>

#include "timeline/trace_writer.h"

/* ---- tracks --------------------------------------------------------------- */

void gp_tl_proc_free(void *v)
{
	struct tl_proc *tp = v;

	gp_u64map_clear(&tp->streams, free);
	gp_u64map_clear(&tp->tids, NULL);
	gp_u64map_clear(&tp->sched, free);
	free(tp);
}

static struct tl_proc *proc_of(struct gp_timeline *tl, __u32 pid)
{
	struct tl_proc *tp =
		tl->last && tl->last->pid == pid ? tl->last : gp_u64map_get(&tl->procs, pid);

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
	s->flow_base = (__u64)++tl->nstreams
		       << 32; /* ids below 2^53: exact as JavaScript numbers */
	return s;
}

/* ---- events ---------------------------------------------------------------- */

/*
 * A slice that may start where the one before it on its track ended (the
 * scheduling track's stays and gaps, a stream's windows): a begin and its
 * end, next to each other in the file. As one "X" its end would be ts + dur
 * in a viewer's doubles, an ulp past the next slice's ts about one time in
 * ten, and Chrome's trace engine drops a slice that overlaps the one before;
 * an end's ts less its begin's is exact in doubles (they are within a factor
 * of two), so ts + that is the end exactly. Adjacent, because the engine
 * pairs begins and ends on one stack for the whole file.
 */
static void span_event(struct gp_timeline *tl, const char *ph, __u32 pid, __u32 tid, __u64 ts,
		       const char *cat, const char *name)
{
	ev_open(tl, ph, pid, tid, ts);
	put(tl, ",\"cat\":\"");
	put(tl, cat);
	put(tl, "\",\"name\":\"");
	put(tl, name);
	put_c(tl, '"');
}

/* The begin: its args follow, then "}". */
static void span_begin(struct gp_timeline *tl, __u32 pid, __u32 tid, __u64 ts, const char *cat,
		       const char *name)
{
	span_event(tl, "B", pid, tid, ts, cat, name);
}

/* Its end, right after the begin was closed. */
static void span_end(struct gp_timeline *tl, __u32 pid, __u32 tid, __u64 ts, const char *cat,
		     const char *name)
{
	span_event(tl, "E", pid, tid, ts, cat, name);
	put_c(tl, '}');
}

static void call_slice(struct gp_timeline *tl, const struct gp_call_view *v)
{
	ev_open(tl, "X", v->pid, v->tid, v->ts_ns);
	put(tl, ",\"dur\":");
	put_us(tl, v->dur_ns);
	put(tl, ",\"cat\":\"" TL_API_CAT "\",\"name\":\"");
	put(tl, gp_apis[v->api].symbol);
	put(tl, "\",\"args\":{\"family\":\"");
	put(tl, gp_family_name(gp_apis[v->api].family));
	put(tl, "\",\"op\":\"");
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
		if (v->stream &
		    GP_STREAM_KEY_PER_THREAD) { /* the key, not a handle: say which thread's */
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
	ev_open(tl, "I", v->pid, s->tid, v->ts_ns);
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
	put(tl, ",\"cat\":\"" TL_API_CAT "\",\"name\":\"waited for by\",\"id\":");
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

/* Flow finishes of items [s->finished, end) at (pid, tid, ts): the start of the slice they end on. */
static void finish_flows(struct gp_timeline *tl, struct tl_stream *s, __u64 end, __u32 pid,
			 __u32 tid, __u64 ts)
{
	if (end > s->written_end)
		end = s->written_end;
	for (; s->finished < end; s->finished++) {
		ev_open(tl, "f", pid, tid, ts);
		put(tl,
		    ",\"bp\":\"e\",\"cat\":\"" TL_API_CAT "\",\"name\":\"waited for by\",\"id\":");
		put_u64(tl, s->flow_base + s->finished);
		put_c(tl, '}');
	}
}

/* Closes a stream's window at end_ns: one slice over the time its work was outstanding. */
void gp_tl_close_window(struct gp_timeline *tl, __u32 pid, struct tl_stream *s, __u64 end_ns,
			const char *name, const char *by)
{
	__u64 from = s->window_ts > s->prev_end ? s->window_ts : s->prev_end;

	if (!s->window_open)
		return;
	if (end_ns < from)
		end_ns = from;
	span_begin(tl, pid, s->tid, from, "stream", name);
	put(tl, ",\"args\":{\"items\":");
	put_u64(tl, s->window_items);
	if (by) {
		put(tl, ",\"synchronised_by\":\"");
		put(tl, by);
		put_c(tl, '"');
	}
	put(tl, "}}");
	span_end(tl, pid, s->tid, end_ns, "stream", name);
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
		/* on the call's start, where a viewer binds them, even for work that another thread
		   queued while it waited (the arrow then points back in time) */
		finish_flows(tl, s, cv->end_seq, v->pid, v->tid, v->ts_ns);
		gp_tl_close_window(tl, v->pid, s, v->ts_ns + v->dur_ns,
				   "queued work, done by the synchronisation's return",
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

void gp_tl_copy_counter(struct gp_timeline *tl, struct tl_proc *tp, __u64 ts)
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
static void interval_sample(struct gp_timeline *tl, struct tl_proc *tp, __u64 no,
			    const __u64 *bytes)
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
void gp_tl_interval_close(struct gp_timeline *tl, struct tl_proc *tp, __u64 next_no)
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
static void interval_add(struct gp_timeline *tl, struct tl_proc *tp, int d,
			 const struct gp_call_view *v)
{
	__u64 no = (v->ts_ns + v->dur_ns) / TL_COPY_BUCKET_NS;

	if (tp->bucket_open && no > tp->bucket_no)
		gp_tl_interval_close(tl, tp, no);
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
		gp_tl_copy_counter(tl, tp, v->ts_ns);
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
	tl_file_room(tl);
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
	tl_file_room(tl);
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
	tl_file_room(tl);
	if (ts->last_left && start < ts->last_end)
		start = ts->last_end; /* an estimated start never overlaps the slice before */
	if (ts->last_left && ts->last_left != GP_SL_EXITED && start > ts->last_end) {
		const char *gap = ts->last_left == GP_SL_PREEMPTED ? "off CPU: runnable (preempted)"
								   : "off CPU: blocked";

		span_begin(tl, pid, ts->track, ts->last_end, "sched", gap);
		put(tl, ",\"args\":{}}");
		span_end(tl, pid, ts->track, start, "sched", gap);
	}
	span_begin(tl, pid, ts->track, start, "sched", "on CPU");
	put(tl, ",\"args\":{\"cpu\":");
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
	span_end(tl, pid, ts->track, sl->end_ns, "sched", "on CPU");
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

struct gp_model_observer gp_timeline_observer(struct gp_timeline *tl)
{
	return (struct gp_model_observer){
		.ctx = tl, .call = on_call, .sched = on_sched, .gpu = on_gpu
	};
}
