/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * trace_writer.h — what the two halves of the timeline share: its state
 * (per process, its stream and scheduling tracks and copy counters), the
 * hand-formatted writer every event goes through (inline: it runs for every
 * token of a million records a second), and the closers of what is still
 * open at the end. trace_events.c writes the events as they come;
 * trace_json.c opens the file, and closes it with the metadata.
 */
#ifndef GP_TRACE_WRITER_H
#define GP_TRACE_WRITER_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "model/view.h"
#include "text/text_clean.h"
#include "timeline/trace_json.h"

/*
 * The category of every call slice and queue flow: Chrome's trace engine
 * binds a flow's ends only to slices of the flow's own category, and a flow can join a launch
 * of one family to a synchronisation of another (ncclAllReduce to cudaStreamSynchronize).
 * The family is the slice's "family" arg.
 */
#define TL_API_CAT	   "api"
#define TL_STREAM_TID_BASE 0x40000000u /* above every pid_max: stream tracks never meet real tids */
#define TL_SCHED_TID_BASE  0x60000000u /* the scheduling tracks of threads (--timeline-sched) */
#define TL_GPU_PID_BASE	   0x70000000u /* the NVML counter tracks of devices: above every pid_max */
#define TL_MAX_GPUS	   64	      /* devices with a track; samples of others are counted only */
#define TL_COPY_SAMPLE_NS  1000000ULL /* the copied-bytes counter: at most one sample per ms */
#define TL_COPY_BUCKET_NS  10000000ULL /* the bytes-per-interval counter: 10 ms intervals */
#define TL_BUF_BYTES	   (1u << 20)

struct tl_stream {
	__u64 key;
	__u32 tid;	   /* synthetic track id */
	__u32 index;	   /* in its process, from 0: track order */
	__u64 flow_base;   /* flow ids are flow_base + item number */
	__u64 written_end; /* items below have their flow start written */
	__u64 finished;	   /* items below have their flow finish written */
	bool window_open;
	__u64 window_ts; /* queueing of the window's first item */
	__u64 window_items;
	__u64 window_last; /* end of the latest queueing call in the window */
	__u64 prev_end;	   /* end of the previous window: windows never overlap */
};

/* A thread's scheduling track (--timeline-sched records). */
struct tl_sched {
	__u32 tid;	    /* the thread */
	__u32 track;	    /* synthetic track id */
	__u32 index;	    /* in its process, from 0 */
	__u16 last_left;    /* how its previous slice ended (enum gp_sched_left); 0: none yet */
	__u64 last_end;	    /* its previous slice's end */
	__u64 minor, major; /* page faults in its slices so far */
};

struct tl_proc {
	__u32 pid;
	struct gp_u64map streams; /* key -> struct tl_stream */
	struct gp_u64map tids;	  /* tid -> this (a set) */
	struct gp_u64map sched;	  /* tid -> struct tl_sched */
	__u32 nsched;
	__u32 nstreams;
	__u64 copied[GP_DIR_MAX]; /* bytes of the kept successful copies, by direction */
	__u64 copy_sample_ts;	  /* last sample of the copied-bytes counter */
	__u64 copy_last_ts;	  /* latest kept copy */
	bool copy_dirty;	  /* a copy since that sample */
	__u64 bucket
		[GP_DIR_MAX]; /* bytes of the copies that returned in the open interval, by direction */
	__u64 bucket_no;  /* the open interval: [bucket_no, bucket_no + 1) x TL_COPY_BUCKET_NS */
	bool bucket_open; /* it holds a copy */
	bool dirs_seen[GP_DIR_MAX]; /* directions that ever had bytes: each gets its 0 samples */
};

struct gp_timeline {
	FILE *out; /* unbuffered: buf is the buffer */
	char *buf;
	size_t len; /* bytes in buf */
	char dir[PATH_MAX];
	__u64 max_events;
	/* the file being written: trace.json, then trace.1.json ... once one holds file_bytes_max */
	__u32 part;
	__u64 part_bytes, part_events; /* written into it (part_bytes: past buf) */
	__u64 file_bytes_max;	       /* 0: one file */
	const struct gp_model *model;  /* the tracks' names at each file's end */
	__u64 calls, kept, events;
	__u64 slices, slices_kept; /* on-CPU slices seen, written (same cap as the calls) */
	__u32 nstreams;		   /* all processes: flow id prefixes */
	struct gp_u64map procs;	   /* pid -> struct tl_proc */
	struct tl_proc *last;	   /* the previous call's process */
	bool failed; /* out of memory for a track: the file would lie, so it is not kept */
	__u32 gpus
		[TL_MAX_GPUS]; /* devices with a counter track, in the order of their first sample */
	__u32 ngpus;
	__u64 gpu_samples, gpu_samples_kept;
};

/* ---- formatting ----------------------------------------------------------- */

/*
 * The text goes into tl->buf by hand and to the file in TL_BUF_BYTES writes:
 * stdio's per-call locking-free paths still cost a function call, a length
 * and a bounds check per token (a third of the reader's time per record).
 */
static inline void flush_buf(struct gp_timeline *tl)
{
	if (tl->len)
		fwrite_unlocked(tl->buf, 1, tl->len, tl->out);
	tl->part_bytes += tl->len;
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
		tl->part_bytes += n;
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

static inline void put_u64(struct gp_timeline *tl, __u64 v)
{
	char b[24], *p = b + sizeof(b);

	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	put_n(tl, p, (size_t)(b + sizeof(b) - p));
}

static inline void put_s64(struct gp_timeline *tl, __s64 v)
{
	if (v < 0) {
		put_c(tl, '-');
		put_u64(tl, -(__u64)v);
	} else {
		put_u64(tl, (__u64)v);
	}
}

/* Nanoseconds as microseconds with three decimals: exact. */
static inline void put_us(struct gp_timeline *tl, __u64 ns)
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
static inline void put_str(struct gp_timeline *tl, const char *s)
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

static inline void put_hex(struct gp_timeline *tl, __u64 v)
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
static inline void ev_open(struct gp_timeline *tl, const char *ph, __u32 pid, __u32 tid,
			   __u64 ts_ns)
{
	tl->events++;
	put(tl, tl->part_events++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
	put(tl, ph);
	put(tl, "\",\"pid\":");
	put_u64(tl, pid);
	put(tl, ",\"tid\":");
	put_u64(tl, tid);
	put(tl, ",\"ts\":");
	put_us(tl, ts_ns);
}

/* ---- trace_json.c: the files ---------------------------------------------------- */

/* Ends this file (its tracks' names, its metadata) and goes on in the next one. */
void gp_tl_next_file(struct gp_timeline *tl);

/* Before an event's records: the next file once this one holds its size (never inside a pair). */
static inline void tl_file_room(struct gp_timeline *tl)
{
	if (tl->file_bytes_max && tl->part_bytes + tl->len >= tl->file_bytes_max)
		gp_tl_next_file(tl);
}

/* ---- trace_events.c: the tracks' closers, for the end of the file ----------------- */

void gp_tl_proc_free(void *v); /* a struct tl_proc (the procs map's values) */
/* Closes a stream's window at end_ns: one slice over the time its work was outstanding. */
void gp_tl_close_window(struct gp_timeline *tl, __u32 pid, struct tl_stream *s, __u64 end_ns,
			const char *name, const char *by);
/* A sample of the process's copied-bytes counter at ts. */
void gp_tl_copy_counter(struct gp_timeline *tl, struct tl_proc *tp, __u64 ts);
/* Writes the open interval's sample, and a 0 after it unless the next interval (next_no) follows on. */
void gp_tl_interval_close(struct gp_timeline *tl, struct tl_proc *tp, __u64 next_no);

#endif /* GP_TRACE_WRITER_H */
