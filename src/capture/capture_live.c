/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* capture_live.c — a live session's capture (capture_live.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "capture/capture_live.h"
#include "gpuprobed/events.h"
#include "log.h"
#include "model/model_ops.h"
#include "symbolize/symbolizer.h"

static __u64 now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

int gp_capture_live_open(struct gp_capture_live *cl, const char *path, struct gp_resolver *resolver)
{
	struct gp_cap_header h = { .abi_version = GP_ABI_VERSION };
	struct utsname uts;
	char err[PATH_MAX + 128];

	memset(cl, 0, sizeof(*cl));
	if (snprintf(cl->path, sizeof(cl->path), "%s", path) >= (int)sizeof(cl->path)) {
		gp_err("capture %s: name too long", path);
		return -ENAMETOOLONG;
	}
	/* the three clocks read back to back: wall time of any record = mono + (realtime - mono) */
	h.start_mono_ns = now_ns(CLOCK_MONOTONIC);
	h.start_realtime_ns = now_ns(CLOCK_REALTIME);
	h.start_boottime_ns = now_ns(CLOCK_BOOTTIME);
	snprintf(h.tool_version, sizeof(h.tool_version), "%s", GP_VERSION);
	gethostname(h.hostname, sizeof(h.hostname) - 1);
	if (uname(&uts) == 0)
		snprintf(h.kernel_release, sizeof(h.kernel_release), "%.63s", uts.release);
	cl->w = gp_capture_writer_open(path, &h, err, sizeof(err));
	if (!cl->w) {
		int e = errno ? -errno : -EIO;

		gp_err("capture %s (--no-record to run without one)", err);
		return e;
	}
	cl->rr.inner = *resolver;
	cl->rr.record = gp_capture_writer_op;
	cl->rr.record_ctx = cl->w;
	*resolver = gp_recording_resolver(&cl->rr);
	return 0;
}

/* The executable file mappings of a snapshot, as /proc/PID/maps prints them, into the capture. */
static void record_maps(void *ctx, pid_t pid, const struct gp_maps *maps)
{
	struct gp_capture_live *cl = ctx;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (!cl->w || !(f = open_memstream(&text, &len)))
		return;
	for (size_t i = 0; i < maps->n; i++) {
		const struct gp_map *m = &maps->v[i];

		if (m->exec)
			fprintf(f, "%llx-%llx r-xp %08llx %02x:%02x %llu %s\n",
				(unsigned long long)m->start, (unsigned long long)m->end,
				(unsigned long long)m->offset, major((dev_t)m->dev),
				minor((dev_t)m->dev), (unsigned long long)m->inode, m->path);
	}
	if (fclose(f) == 0) {
		unsigned char *buf;
		size_t n;
		__u64 mono = now_ns(CLOCK_MONOTONIC);

		n = 4 + 8 + 4 + len + 1;
		buf = malloc(n);
		if (buf) {
			__u32 p32 = (__u32)pid, slen = (__u32)len + 1;

			memcpy(buf, &p32, 4);
			memcpy(buf + 4, &mono, 8);
			memcpy(buf + 12, &slen, 4);
			memcpy(buf + 16, text, len + 1);
		}
		gp_capture_writer_op(cl->w, GP_MOP_MAPS, buf, n); /* NULL: counted as lost */
		free(buf);
	}
	free(text);
}

void gp_capture_live_maps(struct gp_capture_live *cl, struct gp_symbolizer *sym)
{
	if (cl->w)
		gp_symbolizer_on_snapshot(sym, record_maps, cl);
}

void gp_capture_live_tap(struct gp_capture_live *cl, struct gp_model *m)
{
	struct gp_model_tap tap = { .ctx = cl->w, .record = gp_capture_writer_op };

	if (cl->w)
		gp_model_set_tap(m, &tap);
}

int gp_capture_live_close(struct gp_capture_live *cl, struct gp_model *m)
{
	struct gp_capture_writer_stats st;
	int err;

	if (!cl->w)
		return 0;
	gp_model_set_tap(m, NULL);
	err = gp_capture_writer_close(cl->w, &st);
	cl->w = NULL;
	gp_model_set_source(m, &(struct gp_report_source){ .kind = "live",
							   .capture_file = cl->path,
							   .ops = st.ops,
							   .lost_ops = st.lost_ops,
							   .chunks = st.chunks,
							   .complete = !err });
	if (err) {
		gp_warn("capture %s: %s after %llu chunks: %llu operations lost (the report has them all; the "
			"capture ends there)",
			cl->path, strerror(-err), (unsigned long long)st.chunks,
			(unsigned long long)st.lost_ops);
		return err;
	}
	gp_info("capture %s: %llu operations, %.1f MiB (%.1f MiB before compression); the consumer waited %llu "
		"times for its writer",
		cl->path, (unsigned long long)st.ops, (double)st.file_bytes / 1048576.0,
		(double)st.raw_bytes / 1048576.0, (unsigned long long)st.waits);
	return 0;
}

void gp_capture_live_abort(struct gp_capture_live *cl)
{
	if (!cl->w)
		return;
	gp_capture_writer_close(cl->w, NULL);
	cl->w = NULL;
	unlink(cl->path);
}
