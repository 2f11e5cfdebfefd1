/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * trace_json.c — the timeline's file (trace_json.h): trace.json.tmp opened
 * beside the target, and at the end the closing events (windows still
 * open, the last counter samples), NCCL stalls, the names and order of
 * every process, thread, stream and device track, the counts of what was
 * kept and left out; then renamed into place. The events in between are
 * trace_events.c's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "text/labels.h"
#include "timeline/trace_writer.h"

/* ---- lifetime ------------------------------------------------------------------ */

/* File k of the timeline in dir ("trace.json", then "trace.1.json" ...), or its temporary name. */
static int file_path(char *buf, size_t len, const char *dir, __u32 k, bool tmp)
{
	size_t n =
		k ? (size_t)snprintf(buf, len, "%s/trace.%u.json%s", dir, k, tmp ? ".tmp" : "")
		  : (size_t)snprintf(buf, len, "%s/%s%s", dir, GP_TIMELINE_FILE, tmp ? ".tmp" : "");

	return n < len ? 0 : -ENAMETOOLONG;
}

/* Opens file tl->part's temporary name and starts its JSON; the previous one stays open on failure. */
static int open_file(struct gp_timeline *tl)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (file_path(tmp, sizeof(tmp), tl->dir, tl->part, true))
		return -ENAMETOOLONG;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	if (tl->out)
		fclose(tl->out);
	tl->out = f;
	setvbuf(tl->out, NULL, _IONBF, 0);
	tl->part_bytes = 0;
	tl->part_events = 0;
	put(tl, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	return 0;
}

struct gp_timeline *gp_timeline_open(const char *dir, const struct gp_timeline_opts *opts)
{
	struct gp_timeline *tl = calloc(1, sizeof(*tl));
	int err = -ENOMEM;

	if (!tl)
		return NULL;
	tl->max_events =
		opts && opts->max_events ? opts->max_events : GP_TIMELINE_DEFAULT_MAX_EVENTS;
	tl->file_bytes_max = !opts || !opts->file_bytes_max ? GP_TIMELINE_DEFAULT_FILE_MB << 20
			     : opts->file_bytes_max == GP_TIMELINE_ONE_FILE ? 0
									    : opts->file_bytes_max;
	tl->model = opts ? opts->model : NULL;
	if (!tl->model)
		tl->file_bytes_max = 0; /* no names to end a file with */
	if ((size_t)snprintf(tl->dir, sizeof(tl->dir), "%s", dir) >= sizeof(tl->dir))
		err = -ENAMETOOLONG;
	else if ((tl->buf = malloc(TL_BUF_BYTES)))
		err = open_file(tl);
	if (err) {
		free(tl->buf);
		free(tl);
		errno = -err;
		return NULL;
	}
	return tl;
}

static void release(struct gp_timeline *tl)
{
	if (tl->out)
		fclose(tl->out);
	free(tl->buf);
	gp_u64map_clear(&tl->procs, gp_tl_proc_free);
	free(tl);
}

/* Removes files [from, to] of the timeline in dir: their temporary names, and the final ones too. */
static void remove_files(const char *dir, __u32 from, __u32 to, bool final)
{
	char path[PATH_MAX];

	for (__u32 k = from; k <= to; k++) {
		if (!file_path(path, sizeof(path), dir, k, true))
			unlink(path);
		if (final && !file_path(path, sizeof(path), dir, k, false))
			unlink(path);
	}
}

void gp_timeline_abort(struct gp_timeline *tl)
{
	if (!tl)
		return;
	remove_files(tl->dir, 0, tl->part, false);
	release(tl);
}

/* Removes an earlier run's files from k on: they are numbered without a gap, so up to the first missing. */
static void remove_stale_from(const char *dir, __u32 k)
{
	char path[PATH_MAX], tmp[PATH_MAX];

	for (;; k++) {
		if (file_path(path, sizeof(path), dir, k, false) ||
		    file_path(tmp, sizeof(tmp), dir, k, true))
			return;
		bool had = !unlink(path);

		if (!unlink(tmp))
			had = true;
		if (!had && k)
			return;
	}
}

void gp_timeline_remove_stale(const char *dir)
{
	remove_stale_from(dir, 0);
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

static void meta_name(struct gp_timeline *tl, const char *what, __u32 pid, __u32 tid,
		      const char *name)
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
		snprintf(buf, len, "per-thread default stream of tid %u (host-observed)",
			 (unsigned)(key & 0xffffffffu));
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

/* Closing events of one process: open windows, their flows, its last counter sample. */
static void close_proc(struct gp_timeline *tl, struct tl_proc *tp)
{
	for (size_t i = 0; i < tp->streams.cap; i++) {
		struct tl_stream *s = tp->streams.slots[i].val;

		/* work never seen synchronised (or whose synchronisation came after the cap): its
		   items' flows have no finish, nothing waited for them (an end on this window would
		   share the ts of its first item's start, and Chrome's engine keeps one end per ts of
		   a flow) */
		if (s && s->window_open)
			gp_tl_close_window(tl, tp->pid, s, s->window_last + 1,
					   "queued work, no synchronisation recorded", NULL);
	}
	if (tp->copy_dirty)
		gp_tl_copy_counter(tl, tp, tp->copy_last_ts);
	gp_tl_interval_close(tl, tp, 0);
}

/* The names and order of one process's tracks, as the model knows them now. */
static void name_proc(struct gp_timeline *tl, const struct gp_model *m, struct tl_proc *tp)
{
	const struct gp_process *p = model_proc(m, tp->pid);
	const char *comm = p && p->comm && *p->comm ? p->comm : "process";
	char label[768];

	for (size_t i = 0; i < tp->streams.cap; i++) {
		struct tl_stream *s = tp->streams.slots[i].val;

		if (!s)
			continue;
		stream_label(s->key, label, sizeof(label));
		meta_name(tl, "thread_name", tp->pid, s->tid, label);
		meta_sort(tl, tp->pid, s->tid, 1 + (__u64)s->index);
	}
	process_label(p, comm, label, sizeof(label));
	meta_name(tl, "process_name", tp->pid, 0, label);
	for (size_t i = 0; i < tp->sched.cap; i++) {
		const struct tl_sched *ts = tp->sched.slots[i].val;
		const char *name;

		if (!ts)
			continue;
		name = thread_name(m, tp->pid, ts->tid);
		snprintf(label, sizeof(label), "%s (tid %u): on/off CPU",
			 name		      ? name
			 : ts->tid == tp->pid ? comm
					      : "thread",
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

/* The name of file k, for the files' links to each other. */
static void put_file_name(struct gp_timeline *tl, __u32 k)
{
	char name[32];

	if (k)
		snprintf(name, sizeof(name), "trace.%u.json", k);
	else
		snprintf(name, sizeof(name), "%s", GP_TIMELINE_FILE);
	put_str(tl, name);
}

/* The file's metadata; the counts are the session's so far (the last file's: all of it). */
static void other_data(struct gp_timeline *tl, const struct gp_model *m, bool last)
{
	put(tl, "\n],\"otherData\":{\"tool\":\"gpuprobed\",\"file\":");
	put_u64(tl, tl->part);
	if (tl->part) {
		put(tl, ",\"continues\":");
		put_file_name(tl, tl->part - 1);
	}
	if (!last) {
		put(tl, ",\"continued_in\":");
		put_file_name(tl, tl->part + 1);
	}
	put(tl, ",\"version\":");
	put_str(tl, m->session.tool_version ? m->session.tool_version : "");
	put(tl,
	    ",\"clock\":\"CLOCK_MONOTONIC, microseconds\",\"gpu_timestamps\":false,"
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

		ev_open(tl, "I", st->nbehind ? st->behind[0].pid : 0,
			st->nbehind ? st->behind[0].pid : 0, st->mono_ns);
		snprintf(text, sizeof(text), "NCCL stall: collective #%llu (%s)",
			 (unsigned long long)st->seq,
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
			snprintf(text, sizeof(text),
				 "%s{\"rank\":%d,\"pid\":%u,\"last_seq\":%llu,\"state\":",
				 k ? "," : "", st->behind[k].rank, st->behind[k].pid,
				 (unsigned long long)st->behind[k].last_seq);
			put(tl, text);
			put_str(tl, st->behind[k].state);
			put(tl, "}");
		}
		put(tl, "]}}");
	}
}

/* Every track's name and the devices' (a file's end: each file stands alone). */
static void name_tracks(struct gp_timeline *tl, const struct gp_model *m)
{
	for (size_t i = 0; i < tl->procs.cap; i++)
		if (tl->procs.slots[i].val)
			name_proc(tl, m, tl->procs.slots[i].val);
	finish_gpus(tl, m);
}

void gp_tl_next_file(struct gp_timeline *tl)
{
	int err;

	name_tracks(tl, tl->model);
	other_data(tl, tl->model, false);
	flush_buf(tl);
	tl->part++;
	err = open_file(tl);
	if (err) {
		gp_err("timeline: %s/trace.%u.json: %s", tl->dir, tl->part, strerror(-err));
		tl->failed = true; /* and on in this file: it is not kept */
		tl->file_bytes_max = 0;
		tl->part--;
		return;
	}
	/* flows are bound within one file: those started before end in none */
	for (size_t i = 0; i < tl->procs.cap; i++) {
		struct tl_proc *tp = tl->procs.slots[i].val;

		for (size_t j = 0; tp && j < tp->streams.cap; j++) {
			struct tl_stream *st = tp->streams.slots[j].val;

			if (st)
				st->finished = st->written_end;
		}
	}
}

/* Renames every file from its temporary name, and removes an earlier run's files past them. */
static int rename_files(struct gp_timeline *tl)
{
	char path[PATH_MAX], tmp[PATH_MAX];

	for (__u32 k = 0; k <= tl->part; k++) {
		if (file_path(path, sizeof(path), tl->dir, k, false) ||
		    file_path(tmp, sizeof(tmp), tl->dir, k, true))
			return -ENAMETOOLONG;
		if (rename(tmp, path))
			return -errno;
	}
	remove_stale_from(tl->dir, tl->part + 1);
	return 0;
}

int gp_timeline_close(struct gp_timeline *tl, const struct gp_model *m,
		      struct gp_timeline_counts *counts)
{
	int err = 0;

	if (!tl)
		return 0;
	stall_markers(tl, m);
	for (size_t i = 0; i < tl->procs.cap; i++)
		if (tl->procs.slots[i].val)
			close_proc(tl, tl->procs.slots[i].val);
	name_tracks(tl, m);
	other_data(tl, m, true);
	if (counts)
		*counts = (struct gp_timeline_counts){ .calls = tl->calls,
						       .kept = tl->kept,
						       .left_out = tl->calls - tl->kept,
						       .events = tl->events,
						       .slices = tl->slices,
						       .slices_left_out =
							       tl->slices - tl->slices_kept,
						       .files = tl->part + 1 };
	flush_buf(tl);
	if (fflush(tl->out) || ferror(tl->out))
		err = -(errno ? errno : EIO);
	else if (tl->failed)
		err = -ENOMEM;
	if (fclose(tl->out) && !err)
		err = -errno;
	tl->out = NULL;
	if (!err)
		err = rename_files(tl);
	if (err) {
		gp_err("write %s/%s: %s", tl->dir, GP_TIMELINE_FILE, strerror(-err));
		/* an earlier run's would pass for this one's */
		remove_files(tl->dir, 0, tl->part, true);
		remove_stale_from(tl->dir, tl->part + 1);
		if (counts)
			counts->files = 0;
	}
	release(tl);
	return err;
}
