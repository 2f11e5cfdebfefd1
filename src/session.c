/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * session.c — one tracing session from start to report: check privileges and
 * targets, prepare the output directory, load the BPF programs, admit the
 * targets (--pid, the /proc scan of --name / --all, or the launched
 * command) with every CUDA library they map, run the event loop (which
 * admits, holds and follows processes as the kernel reports them), detach,
 * drain, collect the kernel's counters and write the reports.
 *
 * Every failure before tracing starts is one message and exit status 1;
 * once tracing has started, whatever happens, the user gets a report of
 * what was seen.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu_api.skel.h"
#include "procs.skel.h"
#include "sched.skel.h"

#include "attach/files.h"
#include "attach/procs.h"
#include "attach/uprobe_multi.h"
#include "attach/uprobes.h"
#include "capture/capture_live.h"
#include "cli.h"
#include "launch.h"
#include "collect/agg.h"
#include "collect/collector.h"
#include "collect/cpu_accounts.h"
#include "collect/duty.h"
#include "collect/event_loop.h"
#include "log.h"
#include "model/model.h"
#include "output/trace_json.h"
#include "report_files.h"
#include "privileges.h"
#include "session.h"
#include "symbolize/symbolizer.h"

struct session {
	const struct gp_options *opt;
	struct gpu_api_bpf *skel;
	struct sched_bpf *sched;       /* CPU accounts and fork admission */
	struct procs_bpf *procs_bpf;   /* exec/mmap admission and holds */
	struct gp_cpu_accounts *cpu;
	struct gp_symbolizer *sym;
	struct gp_model *model;
	struct gp_capture_live capture; /* the capture file, if recorded */
	struct gp_timeline *timeline; /* trace.json, fed by the model; NULL: --no-timeline */
	struct gp_uprobes probes;
	bool multi; /* uprobe_multi links */
	struct gp_files files;
	struct gp_procs procs;
	struct gp_collector collector;
	bool collector_ready;
	struct gp_loop *loop;
	struct gp_launch launch;
	bool launched;       /* the command was started (its status is ours) */
	int signals_seen;    /* with a launched command: the first is relayed, the second stops */
	__u64 bpf_drops;     /* sum of the in-kernel loss counters, for the closing line */
	__u64 bpf_estimates; /* of which: off-CPU intervals estimated (switch_in_unseen), not losses */
	struct gp_agg *agg;  /* --aggregate: the kernel's call aggregates (NULL: every call is a record) */
	__u64 agg_at_ns;     /* when they were last read */
	struct gp_duty *duty; /* always on (the daemon): the probes' cost, and the overhead budget's duty cycle */
	__u64 duty_read_ns;   /* the time the aggregates being read reach (their weights') */
	__u64 hits_gated, hits_other; /* probe hit totals at the last collect_counters (hot probes, the others) */
	const struct gp_session_hooks *hooks; /* NULL: none */
	__u64 counters_at_ns; /* when collect_counters last ran for the hooks */
	bool hook_stop;       /* a hook's tick asked to stop */
};

static __u64 clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && gp_log_level < LOG_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && gp_log_level < LOG_INFO)
		return 0;
	/* libbpf's warnings precede our own one-line error; show them with -v. */
	if (level == LIBBPF_WARN && gp_log_level < LOG_INFO)
		return 0;
	return vfprintf(stderr, fmt, ap); /* libbpf's lines carry their own prefix */
}

/* An explicit --pid must exist and be readable: said before anything is loaded. */
#define GP_PF_KTHREAD 0x00200000u /* include/linux/sched.h: task flags, field 9 of /proc/PID/stat */

/* 'K' for a kernel thread, 'Z' for a zombie, else 0 (from /proc/PID/stat). */
static char proc_kind(pid_t pid)
{
	char buf[1024], state = 0;
	unsigned int flags = 0;
	const char *p = gp_proc_stat(pid, buf, sizeof(buf));

	if (!p || sscanf(p, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2)
		return 0;
	if (flags & GP_PF_KTHREAD)
		return 'K';
	return state == 'Z' ? 'Z' : 0;
}

static int check_pid(pid_t pid)
{
	char maps[64];
	int fd = pidfd_open(pid, 0);

	if (fd < 0) {
		if (errno == ESRCH)
			gp_err("pid %d: no such process", (int)pid);
		else
			gp_err("pid %d: %s", (int)pid, strerror(errno));
		return -1;
	}
	close(fd);
	/* A process we may not read cannot be traced (and must not be probed). */
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (access(maps, R_OK)) {
		gp_err("pid %d: cannot read %s: %s", (int)pid, maps, strerror(errno));
		return -1;
	}
	switch (proc_kind(pid)) {
	case 'K':
		gp_err("pid %d: a kernel thread, it cannot use CUDA", (int)pid);
		return -1;
	case 'Z':
		gp_err("pid %d: has exited (a zombie not yet reaped): nothing left to trace", (int)pid);
		return -1;
	}
	return 0;
}

static __u32 pid_max(void)
{
	unsigned long v = 4194304; /* the largest pid_max the kernel allows */
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 4194304;
		fclose(f);
	}
	return (__u32)v;
}

/* The maps every object declares (common.bpf.h) become the API object's. */
static int share_maps(struct bpf_object *obj, struct bpf_object *owner)
{
	static const char *const shared[] = { "task_state", "events", "drops", "tgid_bits",
					       "admit_ns", "scope", "lib_files", "thread_acct" };

	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, shared[i]);
		struct bpf_map *o = bpf_object__find_map_by_name(owner, shared[i]);
		int err;

		if (!m || !o)
			return -ENOENT;
		err = bpf_map__reuse_fd(m, bpf_map__fd(o));
		if (err)
			return err;
	}
	return 0;
}

static int load_followers(struct session *s)
{
	struct bpf_object *owner = s->skel->obj;
	int err;

	s->sched = sched_bpf__open();
	s->procs_bpf = procs_bpf__open();
	if (!s->sched || !s->procs_bpf) {
		gp_err("open BPF objects (scheduler, processes): %s", strerror(errno));
		return -1;
	}
	s->sched->rodata->sched_slices = s->opt->timeline_sched;
	err = share_maps(s->sched->obj, owner);
	if (!err)
		err = share_maps(s->procs_bpf->obj, owner);
	if (!err)
		err = sched_bpf__load(s->sched);
	if (!err)
		err = procs_bpf__load(s->procs_bpf);
	if (err) {
		gp_err("load BPF programs (scheduler and process tracepoints): %s (-v shows libbpf's "
		       "reasons)",
		       strerror(-err));
		return -1;
	}
	return 0;
}

/* Keys (process, thread, API, enclosing API) the kernel aggregates at most; beyond, calls go as records. */
#define GP_AGG_MAX_KEYS 65536

/*
 * --aggregate gives up per-call records for hot calls; stacks and the
 * timeline are per-call records, so either turns it off (said once).
 */
static bool session_aggregates(const struct gp_options *o)
{
	return o->aggregate && !o->stacks && !o->timeline;
}

static int load_bpf(struct session *s)
{
	const struct gp_options *o = s->opt;
	__u64 ring_bytes = (__u64)o->ringbuf_mb << 20;
	int err;

	s->skel = gpu_api_bpf__open();
	if (!s->skel) {
		gp_err("open BPF object: %s", strerror(errno));
		return -1;
	}
	s->multi = !o->no_uprobe_multi && gp_uprobe_multi_supported();
	if (s->multi) {
		bpf_program__set_expected_attach_type(s->skel->progs.gp_api_enter,
						      GP_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(s->skel->progs.gp_api_exit,
						      GP_BPF_TRACE_UPROBE_MULTI);
	} else {
		gp_info("using one perf-event link per probe (no uprobe_multi links)");
	}
	err = bpf_map__set_max_entries(s->skel->maps.events, (__u32)ring_bytes);
	if (!err)
		err = bpf_map__set_max_entries(s->skel->maps.tgid_bits, (pid_max() + 63) / 64);
	if (!err) /* entries are allocated as they are used: the bound costs nothing until reached */
		err = bpf_map__set_max_entries(s->skel->maps.api_agg, session_aggregates(o) ? GP_AGG_MAX_KEYS : 1);
	if (!err)
		err = gpu_api_bpf__load(s->skel);
	if (err) {
		gp_err("load BPF programs: %s (this kernel needs BTF, uprobes, task storage "
		       "and a BPF ring buffer; -v shows libbpf's reasons)",
		       strerror(-err));
		return -1;
	}
	return load_followers(s);
}

/* What the kernel side admits on its own: names at exec, forks, --all's CUDA users. */
static int set_scope(struct session *s)
{
	const struct gp_options *o = s->opt;
	struct gp_scope sc = { .self_tgid = (__u32)getpid() };
	__u32 zero = 0;

	switch (o->mode) {
	case GP_MODE_PID:
		break;
	case GP_MODE_NAME:
		sc.flags = GP_SCOPE_NAMES | GP_SCOPE_FOLLOW_FORKS;
		break;
	case GP_MODE_LAUNCH:
		sc.flags = GP_SCOPE_FOLLOW_FORKS;
		break;
	case GP_MODE_ALL:
		sc.flags = GP_SCOPE_ALL | GP_SCOPE_FOLLOW_FORKS;
		break;
	}
	for (int i = 0; i < o->nnames && i < GP_MAX_NAMES; i++)
		snprintf(sc.names[sc.nnames++], GP_NAME_LEN, "%s", o->names[i]);
	if (bpf_map__update_elem(s->skel->maps.scope, &zero, sizeof(zero), &sc, sizeof(sc), BPF_ANY)) {
		gp_err("configure the BPF programs: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* From here on the kernel reports and admits processes; scans come after, so none slips by. */
static int start_following(struct session *s)
{
	int err;

	s->sched->bss->window_start_ns = clock_ns(CLOCK_MONOTONIC);
	err = sched_bpf__attach(s->sched);
	if (!err)
		err = procs_bpf__attach(s->procs_bpf);
	if (err) {
		gp_err("attach the scheduler and process tracepoints: %s", strerror(-err));
		return -1;
	}
	return 0;
}

/* Kernel-side counters into the model: per-probe hits and per-cause drops. */
static void collect_counters(struct session *s)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;

	if (ncpu <= 0 || !(vals = calloc((size_t)ncpu, sizeof(*vals))))
		return;
	s->hits_gated = s->hits_other = 0;
	for (size_t i = 0; i < s->probes.n; i++) {
		__u64 hits[2] = { 0, 0 };

		for (__u32 k = 0; k < 2; k++) {
			__u32 key = 2 * s->probes.v[i].idx + k;

			if (bpf_map__lookup_elem(s->skel->maps.probe_hits, &key, sizeof(key), vals,
						 sizeof(*vals) * (size_t)ncpu, 0) == 0)
				for (int c = 0; c < ncpu; c++)
					hits[k] += vals[c];
		}
		gp_model_probe_hits(s->model, s->probes.v[i].idx, hits[0], hits[1]);
		*(s->probes.v[i].gated ? &s->hits_gated : &s->hits_other) += hits[0] + hits[1];
	}
	s->bpf_drops = s->bpf_estimates = 0; /* totals: also called once a second for the hooks */
	for (__u32 d = 0; d < GP_BPF_DROP_MAX; d++) {
		__u64 total = 0;

		if (bpf_map__lookup_elem(s->skel->maps.drops, &d, sizeof(d), vals,
					 sizeof(*vals) * (size_t)ncpu, 0) == 0)
			for (int c = 0; c < ncpu; c++)
				total += vals[c];
		gp_model_drop_set(s->model, gp_bpf_drop_name(d), total);
		if (d == GP_DROP_SWITCH_IN_UNSEEN)
			s->bpf_estimates += total;
		else
			s->bpf_drops += total;
	}
	free(vals);
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	/* Two descriptors per probe (perf event + link); libbpf 1.1 has no uprobe_multi. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void set_session_info(struct session *s)
{
	static struct utsname uts;
	static char host[256];
	struct gp_session_info info = {
		.tool_version = GP_VERSION,
		.command_line = s->opt->command_line,
		.mode = s->opt->daemon ? "daemon" : gp_mode_name(s->opt->mode),
	};

	uname(&uts);
	gethostname(host, sizeof(host) - 1);
	info.hostname = host;
	info.kernel_release = uts.release;
	info.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
	info.start_realtime_ns = clock_ns(CLOCK_REALTIME);
	gp_model_set_session(s->model, &info);
}

/* The timeline observes the model from its first record (a failure to open it is not fatal). */
static void open_timeline(struct session *s)
{
	const struct gp_timeline_opts topts = { .max_events = s->opt->timeline_max_events };

	if (!s->opt->timeline)
		return;
	s->timeline = gp_timeline_open(s->opt->out_dir, &topts);
	if (!s->timeline)
		gp_warn("timeline %s/%s: %s (not written)", s->opt->out_dir, GP_TIMELINE_FILE, strerror(errno));
	else
		gp_timeline_attach(s->timeline, s->model);
}

static void close_timeline(struct session *s)
{
	struct gp_timeline_counts tc;

	if (!s->opt->timeline || !s->timeline) {
		gp_timeline_remove_stale(s->opt->out_dir); /* an earlier run's would pass for this one's */
		return;
	}
	if (gp_timeline_close(s->timeline, s->model, &tc))
		tc = (struct gp_timeline_counts){ 0 };
	if (tc.left_out)
		gp_notice("timeline: %llu of %llu calls left out (--timeline-max-events %llu)",
			  (unsigned long long)tc.left_out, (unsigned long long)tc.calls,
			  (unsigned long long)s->opt->timeline_max_events);
	if (tc.slices_left_out)
		gp_notice("timeline: %llu of %llu on-CPU slices left out (--timeline-max-events %llu)",
			  (unsigned long long)tc.slices_left_out, (unsigned long long)tc.slices,
			  (unsigned long long)s->opt->timeline_max_events);
	s->timeline = NULL;
}

static const char *stop_text(enum gp_stop_reason why, int signo)
{
	static char buf[64];

	switch (why) {
	case GP_STOP_SIGNAL:
		snprintf(buf, sizeof(buf), "stopped by %s", strsignal(signo));
		return buf;
	case GP_STOP_DURATION:
		return "duration elapsed";
	case GP_STOP_TARGETS_GONE:
		return "every target exited";
	}
	return "stopped";
}

static void cleanup(struct session *s)
{
	free(s->duty);
	gp_uprobes_free(&s->probes);
	if (s->collector_ready)
		gp_collector_fini(&s->collector);
	gp_loop_free(s->loop);
	procs_bpf__destroy(s->procs_bpf);
	sched_bpf__destroy(s->sched);
	gp_procs_free(&s->procs);
	gp_files_free(&s->files);
	gp_cpu_accounts__free(s->cpu);
	gp_agg_free(s->agg);
	gpu_api_bpf__destroy(s->skel);
	gp_capture_live_abort(&s->capture); /* still open: the session failed before its end */
	gp_timeline_abort(s->timeline, s->model); /* closed (NULL) when the reports were written */
	gp_model__free(s->model);
	gp_symbolizer__free(s->sym);
	gp_launch_abort(&s->launch);
}

/* ---- the event loop's callbacks ---------------------------------------------- */

/*
 * The kernel's aggregates into the model: at most once a second (a full map
 * read), and at the end; with a duty cycle, at the end of each period (what
 * a process's part of the period counted is scaled to all of it).
 */
static void collect_aggregates(struct session *s, bool now_anyway)
{
	__u64 now;
	int err;

	if (!s->agg || (s->duty && !now_anyway))
		return;
	now = clock_ns(CLOCK_MONOTONIC);
	if (!now_anyway && now - s->agg_at_ns < 1000000000ull)
		return;
	s->agg_at_ns = s->duty_read_ns = now;
	err = gp_agg_collect(s->agg);
	if (err)
		gp_warn("read the kernel's call aggregates: %s", strerror(-err));
}

/*
 * What tgid's calls counted since the last read stand for (agg.h): its
 * traced time in the period over that time with the hot probes attached.
 */
static double duty_weight(void *ctx, __u32 tgid)
{
	struct session *s = ctx;

	return gp_duty_weight(s->duty, gp_model_process_attach_ns(s->model, tgid), s->duty_read_ns);
}

/*
 * The hot probes in (true) or out. A call is counted only while both its
 * entry and its return probe are in place and the kernel's gate is open:
 * the window is from the end of the opening to the start of the closing
 * (what is cut at either end is duty_cut).
 */
static void duty_gate(struct session *s, bool open)
{
	if (!open) {
		__atomic_store_n(&s->skel->bss->gate_closed, 1, __ATOMIC_SEQ_CST); /* counting stops here */
		gp_duty_closed(s->duty, clock_ns(CLOCK_MONOTONIC));
		gp_uprobes_gate(&s->probes, false);
		return;
	}
	gp_uprobes_gate(&s->probes, true);
	s->duty->on_start = clock_ns(CLOCK_MONOTONIC);
	__atomic_store_n(&s->skel->bss->gate_closed, 0, __ATOMIC_SEQ_CST);
}

/*
 * The duty cycle's step at each drain: close the window when it is over;
 * at a period's end, read the aggregates (weighted), the hit counters and
 * the traced CPU time, plan the next period and open the window.
 */
static void duty_step(struct session *s)
{
	__u64 now = clock_ns(CLOCK_MONOTONIC);
	bool was_open = s->duty->open;
	double was = s->duty->duty;
	__u64 over = s->duty->report.over_budget;

	switch (gp_duty_due(s->duty, now)) {
	case GP_DUTY_NOTHING:
		return;
	case GP_DUTY_CLOSE:
		duty_gate(s, false);
		return;
	case GP_DUTY_PERIOD_END:
		break;
	}
	if (s->hooks && s->hooks->overhead_budget)
		gp_duty_set_budget(s->duty, *s->hooks->overhead_budget);
	if (s->agg) {
		int err;

		s->agg_at_ns = s->duty_read_ns = now;
		if ((err = gp_agg_collect(s->agg)))
			gp_warn("read the kernel's call aggregates: %s", strerror(-err));
	}
	collect_counters(s);
	gp_duty_next_period(s->duty, now, s->hits_gated, s->hits_other, gp_procs_cpu_delta_ns(&s->procs));
	if (!was_open)
		duty_gate(s, true);
	gp_model_set_sampling(s->model, &s->duty->report);
	if (s->duty->report.over_budget > over && !over)
		gp_warn("overhead budget %.3g%%: over it even with the hot probes attached %.0f%% of the time "
			"(the other probes cost too much on their own)",
			100 * s->duty->budget, 100 * GP_DUTY_MIN);
	if ((was < 1) != (s->duty->duty < 1))
		gp_notice("overhead budget %.3g%%: hot probes attached %s (probes would cost %.3g%% of the "
			  "traced CPU time)", 100 * s->duty->budget,
			  s->duty->duty < 1 ? "for part of each second: their counts are estimates" : "all the time again",
			  100 * s->duty->report.overhead_full);
}

static void on_drain(void *ctx)
{
	struct session *s = ctx;

	gp_collector_drain(&s->collector);
	gp_files_settle(&s->files); /* after the mappings the ring held */
	collect_aggregates(s, false);
	if (s->duty)
		duty_step(s);
	if (s->hooks && s->hooks->tick) {
		__u64 now = clock_ns(CLOCK_MONOTONIC);
		bool fresh = now - s->counters_at_ns >= 1000000000ull;

		if (fresh) {
			collect_counters(s);
			s->counters_at_ns = now;
		}
		if (!s->hooks->tick(s->hooks->ctx, s->model, now, fresh))
			s->hook_stop = true;
	}
}

static void on_ready(void *ctx, __u64 tag)
{
	struct session *s = ctx;
	__u32 pid = 0;

	if (s->agg && tag < s->procs.n && s->procs.v[tag].live) {
		/* its last calls first; then its keys can go (a reused pid starts from zero) */
		pid = (__u32)s->procs.v[tag].pid;
		if (s->duty) { /* the others' part of the period is not over: theirs wait */
			s->duty_read_ns = clock_ns(CLOCK_MONOTONIC);
			gp_agg_collect_process(s->agg, pid);
		} else {
			collect_aggregates(s, true);
		}
	}
	/* a file it leaves without users is settled at the next drain (gp_files_settle) */
	gp_procs_exited(&s->procs, tag);
	if (pid)
		gp_agg_forget_process(s->agg, pid);
}

static bool on_signal(void *ctx, const struct signalfd_siginfo *si)
{
	struct session *s = ctx;
	bool from_tty = si->ssi_code == SI_KERNEL;

	if (s->hooks && s->hooks->signal)
		return s->hooks->signal(s->hooks->ctx, si);

	if (!s->launched || s->procs.launched_done || ++s->signals_seen > 1)
		return true;
	/*
	 * The command decides: a signal from the terminal reached it too; one
	 * sent to gpuprobed alone is passed on. A second signal stops tracing.
	 */
	if (!from_tty)
		kill(s->launch.pid, (int)si->ssi_signo);
	gp_notice("%s %s; tracing until the command exits (again to stop now)",
		  strsignal((int)si->ssi_signo), from_tty ? "reached the command" : "passed on to the command");
	return false;
}

static bool on_done(void *ctx)
{
	struct session *s = ctx;

	if (s->hook_stop)
		return true;
	/* --name and --all wait for processes to come; the others end with their processes */
	return (s->opt->mode == GP_MODE_PID || s->opt->mode == GP_MODE_LAUNCH) && !s->procs.live;
}

static void on_proc(void *ctx, const struct gp_proc_event *e)
{
	struct session *s = ctx;

	gp_procs_event(&s->procs, e);
}

/* ---- targets ---------------------------------------------------------------- */

static int launch_command(struct session *s)
{
	int err = gp_launch_start(&s->launch, s->opt->command);

	if (err) {
		gp_err("start %s: %s", s->launch.path, strerror(-err));
		return -1;
	}
	s->launched = true;
	if (gp_procs_admit(&s->procs, s->launch.pid, GP_ADMIT_LAUNCHED, "launched", false) <= 0)
		return -1; /* the held child sees the gate close and exits */
	if (gp_launch_release(&s->launch))
		return -1; /* it exits 126/127: reaped with the others */
	return 0;
}

static int admit_targets(struct session *s)
{
	const struct gp_options *o = s->opt;
	int n;

	switch (o->mode) {
	case GP_MODE_PID:
		for (int i = 0; i < o->npids; i++)
			if (gp_procs_admit(&s->procs, o->pids[i], GP_ADMIT_RUNNING, "pid", false) < 0)
				return -1;
		gp_notice("tracing %d process%s; Ctrl-C to stop", o->npids, o->npids > 1 ? "es" : "");
		return 0;
	case GP_MODE_NAME:
		n = gp_procs_scan(&s->procs, o->names, o->nnames);
		if (n < 0) {
			gp_err("read /proc: %s", strerror(-n));
			return -1;
		}
		if (!n)
			gp_notice("no process named %s%s %s: waiting for one to start (Ctrl-C to stop)",
				  o->names[0], o->nnames > 1 ? " (or the other names)" : "",
				  s->procs.nskipped ? "that can be traced yet" : "yet");
		else
			gp_notice("tracing %d running process%s named as asked, and those to come; "
				  "Ctrl-C to stop", n, n > 1 ? "es" : "");
		return 0;
	case GP_MODE_ALL:
		n = gp_procs_scan(&s->procs, NULL, 0);
		if (n < 0) {
			gp_err("read /proc: %s", strerror(-n));
			return -1;
		}
		gp_notice("tracing %d running process%s that use CUDA, and those to come; Ctrl-C to stop",
			  n, n == 1 ? "" : "es");
		return 0;
	case GP_MODE_LAUNCH:
		if (launch_command(s))
			return -1;
		gp_notice("tracing %s (pid %d) and what it starts", s->opt->command[0], (int)s->launch.pid);
		return 0;
	}
	return -1;
}

/* With -- CMD: the command's own status, waiting for it if tracing stopped first. */
static int launched_status(struct session *s, int status)
{
	if (!s->launched)
		return status;
	if (!s->procs.launched_done) {
		int st;

		if (s->procs.live)
			gp_notice("waiting for %s (pid %d) to exit", s->opt->command[0], (int)s->launch.pid);
		if (waitpid(s->launch.pid, &st, 0) == s->launch.pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		return status;
	}
	return s->procs.launched_status;
}

int gp_session_run(const struct gp_options *o)
{
	return gp_session_run_hooked(o, NULL);
}

int gp_session_run_hooked(const struct gp_options *o, const struct gp_session_hooks *hooks)
{
	struct session s = { .opt = o, .hooks = hooks, .launch = { .pid = -1, .gate_fd = -1, .report_fd = -1 } };
	struct gp_loop_ops ops = { .ctx = &s, .drain = on_drain, .ready = on_ready, .signal = on_signal,
				   .done = on_done };
	struct gp_resolver resolver;
	enum gp_stop_reason why;
	char missing[128];
	int signo, err, status = GP_EXIT_FAILURE;
	__u64 t0, end_ns;

	libbpf_set_print(libbpf_print);
	if (o->mode == GP_MODE_LAUNCH) {
		int rc = gp_launch_resolve(o->command[0], s.launch.path, sizeof(s.launch.path));

		if (rc)
			return rc; /* 127 / 126 like a shell, before anything is loaded */
	}
	if (gp_check_privileges(missing, sizeof(missing))) {
		gp_err("tracing needs root (missing %s): run it with sudo", missing);
		return GP_EXIT_FAILURE;
	}
	if (gp_loop_block_signals()) {
		gp_err("block signals: %s", strerror(errno));
		return GP_EXIT_FAILURE;
	}
	for (int i = 0; i < o->npids; i++)
		if (check_pid(o->pids[i]))
			return GP_EXIT_FAILURE;
	if (gp_prepare_out_dir(o->out_dir))
		return GP_EXIT_FAILURE;
	raise_fd_limit();
	s.sym = gp_symbolizer_new();
	resolver = (struct gp_resolver){ .ctx = s.sym, .kernel_name = gp_symbolizer_kernel_name,
				       .demangle = gp_demangle, .demangle_short = gp_demangle_short,
				       .stack_seen = gp_symbolizer_stack_seen, .symbolize = gp_symbolizer_symbolize };
	if (o->record) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/capture.gpz", o->out_dir);
		if (gp_capture_live_open(&s.capture, o->record_path ? o->record_path : path, &resolver))
			goto out;
	}
	s.model = s.sym ? gp_model_new(&resolver) : NULL;
	if (s.model) {
		gp_capture_live_tap(&s.capture, s.model);
		gp_capture_live_maps(&s.capture, s.sym);
		gp_model_set_stacks(s.model, o->stacks, o->max_stacks);
		open_timeline(&s);
	}
	s.cpu = s.model ? gp_cpu_accounts_new(s.model) : NULL;
	if (!s.cpu) {
		gp_err("out of memory");
		goto out;
	}
	if (load_bpf(&s) || set_scope(&s))
		goto out;
	gp_uprobes_init(&s.probes, s.skel->progs.gp_api_enter, s.skel->progs.gp_api_exit, s.multi);
	s.probes.stacks = o->stacks;
	s.probes.aggregate = session_aggregates(o);
	/* every report says what a probe costs here: it differs from host to host, and with load */
	double hit = gp_uprobes_measure_hit_ns(&s.probes);

	if (hit > 0) {
		gp_info("a probe hit costs %.0f ns here (+ %d ns of our programs' work)", hit, GP_PROGRAM_HIT_NS);
		gp_model_set_probe_cost(s.model, (__u64)(hit + 0.5));
	} else {
		gp_warn("could not measure what a probe hit costs here (a probe on gpuprobed's own "
			"gp_hit_cost_target: %s)%s", strerror((int)-hit),
			o->daemon ? ": the daemon's estimates use " GP_PROBE_HIT_COST_TEXT : "");
	}
	if (o->daemon) {
		/* always on: the probes' cost is watched, and the hot ones can be gated (an overhead budget) */
		if (!(s.duty = malloc(sizeof(*s.duty)))) {
			gp_err("out of memory");
			goto out;
		}
		gp_duty_init(s.duty, hooks && hooks->overhead_budget ? *hooks->overhead_budget : 0,
			     hit > 0 ? hit + GP_PROGRAM_HIT_NS : 0, clock_ns(CLOCK_MONOTONIC));
		s.probes.gating = s.probes.aggregate;
		s.probes.gate_open = true;
		gp_model_set_sampling(s.model, &s.duty->report);
	}
	if (s.probes.aggregate && !(s.agg = gp_agg_new(bpf_map__fd(s.skel->maps.api_agg), s.model))) {
		gp_err("out of memory");
		goto out;
	}
	if (s.agg && s.duty)
		gp_agg_set_weight(s.agg, duty_weight, &s);
	if (o->aggregate && !s.probes.aggregate)
		gp_notice("--aggregate is off: %s need%s a record per call (with --no-stacks --no-timeline it is on)",
			  o->stacks && o->timeline ? "stacks and the timeline" : o->stacks ? "stacks" : "the timeline",
			  o->stacks && o->timeline ? "" : "s");
	gp_files_init(&s.files, bpf_map__fd(s.skel->maps.lib_files), &s.probes, s.sym, s.model);
	gp_procs_init(&s.procs, &s.files, s.sym, s.model, s.cpu, bpf_map__fd(s.skel->maps.tgid_bits),
		      bpf_map__fd(s.skel->maps.admit_ns));
	s.procs.all = o->mode == GP_MODE_ALL;
	s.procs.reuse_rows = o->daemon; /* always on: rows of exited processes are reused */
	s.procs.because = o->mode == GP_MODE_NAME ? "name" : "cuda";
	set_session_info(&s);
	err = gp_collector_init(&s.collector, bpf_map__fd(s.skel->maps.events), s.model, s.cpu);
	if (err) {
		gp_err("ring buffer: %s", strerror(-err));
		goto out;
	}
	s.collector.on_proc = on_proc;
	s.collector.proc_ctx = &s;
	s.collector_ready = true;
	s.loop = gp_loop_new(o->duration_s, o->poll_ms, ring_buffer__epoll_fd(s.collector.rb), &ops);
	if (!s.loop) {
		gp_err("event loop: %s", strerror(errno));
		goto out;
	}
	s.procs.loop = s.loop;
	if (start_following(&s) || admit_targets(&s))
		goto out_launch;
	if (hooks && hooks->started)
		hooks->started(hooks->ctx, s.model);

	t0 = clock_ns(CLOCK_MONOTONIC);
	err = gp_loop_run(s.loop, &why, &signo);
	if (err)
		gp_err("event loop: %s (writing the report of what was seen)", strerror(-err));
	/*
	 * Stop counting calls first, in one step (the probes of every file at
	 * once), then stop admitting and holding, detach so nothing new
	 * arrives, then take what is left.
	 */
	__atomic_store_n(&s.skel->bss->closing, 1, __ATOMIC_SEQ_CST);
	procs_bpf__detach(s.procs_bpf);
	s.procs.closing = true;
	gp_uprobes_detach_all(&s.probes);
	if (s.duty && s.duty->open)
		gp_duty_closed(s.duty, clock_ns(CLOCK_MONOTONIC));
	sched_bpf__detach(s.sched);
	end_ns = clock_ns(CLOCK_MONOTONIC);
	gp_collector_drain(&s.collector);
	collect_aggregates(&s, true); /* after the detach: final totals */
	if (s.duty)
		gp_model_set_sampling(s.model, &s.duty->report);
	gp_cpu_accounts_close(s.cpu, bpf_map__fd(s.skel->maps.thread_acct), end_ns);
	collect_counters(&s);
	gp_model_set_session_end(s.model, end_ns);
	{
		__u64 t_sym = clock_ns(CLOCK_MONOTONIC);
		size_t nstacks, naddrs = gp_model_symbolize_stacks(s.model, &nstacks);

		gp_info("symbolized %zu call stacks (%zu distinct addresses) in %.1f ms", nstacks, naddrs,
			(double)(clock_ns(CLOCK_MONOTONIC) - t_sym) / 1e6);
	}
	if (hooks && hooks->stopping)
		hooks->stopping(hooks->ctx, s.model);
	if (s.launched)
		gp_model_set_launch(s.model, o->command_text, s.procs.launched_done,
				    s.procs.launched_status, s.procs.launched_signal);
	close_timeline(&s);
	gp_capture_live_close(&s.capture, s.model); /* after the model's last operation */
	char nested[64] = "", counted[64] = "";

	if (s.collector.nested_calls)
		snprintf(nested, sizeof(nested), " (and %llu inside them)", (unsigned long long)s.collector.nested_calls);
	if (s.agg)
		snprintf(counted, sizeof(counted), " + %llu counted in the kernel",
			 (unsigned long long)gp_agg_stats(s.agg)->calls);
	gp_notice("%s after %.1f s: %zu process%s, %llu calls recorded%s%s, %s%s",
		  err ? "event loop failed" : stop_text(why, signo), (double)(end_ns - t0) / 1e9,
		  s.procs.n, s.procs.n == 1 ? "" : "es", (unsigned long long)s.collector.calls, nested, counted,
		  s.bpf_drops ? "some lost or incomplete (see \"Loss counters\" in the report)" : "none lost",
		  s.bpf_estimates ? "; the kernel did not report some switch-ins: their off-CPU time is estimated"
				  : "");
	if (gp_write_reports(s.model, o->out_dir) == 0 && !err)
		status = GP_EXIT_OK;
	if (s.launched) {
		int cmd = launched_status(&s, status);

		if (status == GP_EXIT_OK)
			status = cmd; /* the command's own status, unless the report failed */
	}
	goto out;
out_launch:
	if (s.launched) {
		int st;

		/* not traced: a child still held sees its gate close and exits without running */
		gp_launch_abort(&s.launch);
		if (s.procs.launched_done)
			status = s.procs.launched_status;
		else if (waitpid(s.launch.pid, &st, 0) == s.launch.pid)
			status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); /* 126 after a failed exec */
	}
out:
	cleanup(&s);
	return status;
}
