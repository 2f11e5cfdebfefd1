/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * session.c — one tracing session from start to report: check privileges and
 * targets, prepare the output directory, load the BPF programs, attach to
 * every CUDA library of every target, run the event loop, detach, drain,
 * collect the kernel's counters and write the reports.
 *
 * Every failure before tracing starts is one message and exit status 1;
 * once tracing has started, whatever happens, the user gets a report of
 * what was seen.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
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
#include <time.h>
#include <unistd.h>

#include "gpu_api.skel.h"
#include "sched.skel.h"

#include "attach/discover.h"
#include "attach/uprobe_multi.h"
#include "attach/uprobes.h"
#include "cli.h"
#include "collect/collector.h"
#include "collect/cpu_accounts.h"
#include "collect/event_loop.h"
#include "log.h"
#include "model/model.h"
#include "report_files.h"
#include "privileges.h"
#include "session.h"
#include "symbolize/symbolizer.h"

struct session {
	const struct gp_options *opt;
	struct gp_loop_target targets[GP_MAX_PIDS];
	int ntargets;
	struct gpu_api_bpf *skel;
	struct sched_bpf *sched;       /* CPU accounts; shares task_state, drops, events with skel */
	struct gp_cpu_accounts *cpu;
	struct gp_symbolizer *sym;
	struct gp_model *model;
	struct gp_uprobes probes;
	bool multi; /* uprobe_multi links */
	struct gp_collector collector;
	bool collector_ready;
	__u64 bpf_drops;     /* sum of the in-kernel loss counters, for the closing line */
	__u64 bpf_estimates; /* of which: off-CPU intervals estimated (switch_in_unseen), not losses */
};

static __u64 clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* Reads a small /proc file; NULs become spaces (cmdline). "" when unreadable. */
static void read_proc_text(pid_t pid, const char *what, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\n'))
		buf[--n] = '\0';
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

/* Output directory: created if missing, and proven writable before we attach. */
static int prepare_out_dir(const char *dir)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	size_t len;
	int fd;

	len = (size_t)snprintf(path, sizeof(path), "%s", dir);
	if (len >= sizeof(path)) {
		gp_err("output directory %s: name too long", dir);
		return -ENAMETOOLONG;
	}
	/* mkdir -p */
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			gp_err("output directory %s: cannot create %s: %s", dir, path, strerror(errno));
			return -errno;
		}
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST) {
		gp_err("output directory %s: %s", dir, strerror(errno));
		return -errno;
	}
	snprintf(tmp, sizeof(tmp), "%s/.gpuprobed-write-test-XXXXXX", dir);
	fd = mkstemp(tmp);
	if (fd < 0) {
		gp_err("output directory %s: not writable: %s", dir, strerror(errno));
		return -errno;
	}
	close(fd);
	unlink(tmp);
	return 0;
}

/* Validates one --pid and opens its pidfd. */
static int open_target(struct session *s, pid_t pid)
{
	struct gp_loop_target *t = &s->targets[s->ntargets];
	char maps[64];

	t->pid = pid;
	t->pidfd = pidfd_open(pid, 0);
	if (t->pidfd < 0) {
		if (errno == ESRCH)
			gp_err("pid %d: no such process", (int)pid);
		else
			gp_err("pid %d: %s", (int)pid, strerror(errno));
		return -1;
	}
	/* A process we may not read cannot be traced (and must not be probed). */
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (access(maps, R_OK)) {
		gp_err("pid %d: cannot read %s: %s", (int)pid, maps, strerror(errno));
		close(t->pidfd);
		return -1;
	}
	s->ntargets++;
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

/* The scheduler probes, sharing the API probes' task state, loss counters and ring buffer. */
static int load_sched(struct session *s)
{
	int err;

	s->sched = sched_bpf__open();
	if (!s->sched) {
		gp_err("open BPF object (scheduler): %s", strerror(errno));
		return -1;
	}
	err = bpf_map__reuse_fd(s->sched->maps.task_state, bpf_map__fd(s->skel->maps.task_state));
	if (!err)
		err = bpf_map__reuse_fd(s->sched->maps.drops, bpf_map__fd(s->skel->maps.drops));
	if (!err)
		err = bpf_map__reuse_fd(s->sched->maps.events, bpf_map__fd(s->skel->maps.events));
	if (!err)
		err = bpf_map__set_max_entries(s->sched->maps.tgid_bits, (pid_max() + 63) / 64);
	if (!err)
		err = sched_bpf__load(s->sched);
	if (err) {
		gp_err("load BPF programs (scheduler tracepoints): %s (-v shows libbpf's reasons)",
		       strerror(-err));
		return -1;
	}
	return 0;
}

/* Opens the CPU window: traced tgids marked, scheduler probes attached, fault baselines read. */
static int start_cpu_accounting(struct session *s)
{
	int fd = bpf_map__fd(s->sched->maps.tgid_bits), err;
	__u64 now;

	for (int i = 0; i < s->ntargets; i++) {
		__u32 word = (__u32)s->targets[i].pid / 64;
		__u64 bits = 0;

		bpf_map_lookup_elem(fd, &word, &bits);
		bits |= 1ull << ((__u32)s->targets[i].pid % 64);
		if (bpf_map_update_elem(fd, &word, &bits, BPF_ANY)) {
			gp_err("mark pid %d for the scheduler probes: %s", (int)s->targets[i].pid,
			       strerror(errno));
			return -1;
		}
	}
	now = clock_ns(CLOCK_MONOTONIC);
	s->sched->bss->window_start_ns = now;
	err = sched_bpf__attach(s->sched);
	if (err) {
		gp_err("attach the scheduler tracepoints: %s", strerror(-err));
		return -1;
	}
	for (int i = 0; i < s->ntargets; i++) {
		err = gp_cpu_accounts_open(s->cpu, s->targets[i].pid, now);
		if (err)
			gp_warn("pid %d: cannot read its threads' fault counters: %s", (int)s->targets[i].pid,
				strerror(-err));
	}
	return 0;
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
	if (!err) {
		s->skel->rodata->filter_tgid = false; /* probes are bound to each pid */
		err = gpu_api_bpf__load(s->skel);
	}
	if (err) {
		gp_err("load BPF programs: %s (this kernel needs BTF, uprobes, task storage "
		       "and a BPF ring buffer; -v shows libbpf's reasons)",
		       strerror(-err));
		return -1;
	}
	return load_sched(s);
}

static void name_threads(struct session *s, pid_t pid)
{
	char path[64], comm[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0)
			continue;
		snprintf(path, sizeof(path), "task/%ld/comm", tid);
		read_proc_text(pid, path, comm, sizeof(comm));
		if (comm[0])
			gp_model_thread_name(s->model, (__u32)pid, (__u32)tid, comm);
	}
	closedir(d);
}

/* Finds and probes the CUDA libraries of one target. Probe pairs placed, or -1. */
static int attach_target(struct session *s, pid_t pid)
{
	struct gp_found_lib libs[GP_MAX_FOUND_LIBS];
	char comm[64], cmdline[4096];
	int nlibs, total = 0, err;

	read_proc_text(pid, "comm", comm, sizeof(comm));
	read_proc_text(pid, "cmdline", cmdline, sizeof(cmdline));
	err = gp_symbolizer_snapshot(s->sym, pid);
	if (err) {
		gp_err("pid %d: cannot read its memory maps: %s", (int)pid, strerror(-err));
		return -1;
	}
	nlibs = gp_discover_libs(s->sym, pid, libs, GP_MAX_FOUND_LIBS);
	if (nlibs < 0) {
		gp_err("pid %d (%s): %s", (int)pid, comm, strerror(-nlibs));
		return -1;
	}
	if (nlibs == 0) {
		gp_err("pid %d (%s): no CUDA runtime mapped (no libcudart.so*, and the "
		       "executable does not contain the runtime): nothing to trace",
		       (int)pid, comm);
		return -1;
	}
	gp_model_process_add(s->model, (__u32)pid, comm, cmdline, clock_ns(CLOCK_MONOTONIC), false);
	for (int i = 0; i < nlibs; i++) {
		char attach_path[PATH_MAX + 32];
		size_t first = s->probes.n;
		int n;

		/*
		 * map_files reaches the very file mapped, even deleted or replaced
		 * on disk since (a pip upgrade under a running job); the root path
		 * works without CAP_SYS_ADMIN and through container mounts.
		 */
		snprintf(attach_path, sizeof(attach_path), "/proc/%d/map_files/%llx-%llx", (int)pid,
			 (unsigned long long)libs[i].map->start, (unsigned long long)libs[i].map->end);
		if (access(attach_path, F_OK))
			snprintf(attach_path, sizeof(attach_path), "/proc/%d/root%s", (int)pid,
				 libs[i].map->path);
		n = gp_uprobes_attach_file(&s->probes, pid, attach_path, libs[i].map->path,
					   libs[i].elf, libs[i].family);
		if (n < 0)
			return -1; /* the message named the library and the cause */
		gp_model_library_add(s->model, (__u32)pid, libs[i].map->path, libs[i].family,
				     libs[i].is_static);
		for (size_t k = first; k < s->probes.n; k++) {
			const struct gp_probe *p = &s->probes.v[k];

			gp_model_probe_add(s->model, p->idx, p->target, (__u32)p->pid,
					   gp_apis[p->api].symbol, p->offset, p->api);
		}
		gp_notice("pid %d (%s): %d probes on %s%s", (int)pid, comm, n, libs[i].map->path,
			  libs[i].is_static ? " (runtime linked statically)" : "");
		total += n;
	}
	if (!total) {
		gp_err("pid %d (%s): its CUDA libraries export none of the traced functions",
		       (int)pid, comm);
		return -1;
	}
	name_threads(s, pid);
	return total;
}

/* Kernel-side counters into the model: per-probe hits and per-cause drops. */
static void collect_counters(struct session *s)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;

	if (ncpu <= 0 || !(vals = calloc((size_t)ncpu, sizeof(*vals))))
		return;
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
	}
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
		.mode = "pid",
	};

	uname(&uts);
	gethostname(host, sizeof(host) - 1);
	info.hostname = host;
	info.kernel_release = uts.release;
	info.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
	info.start_realtime_ns = clock_ns(CLOCK_REALTIME);
	gp_model_set_session(s->model, &info);
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
	gp_uprobes_free(&s->probes);
	if (s->collector_ready)
		gp_collector_fini(&s->collector);
	sched_bpf__destroy(s->sched);
	gp_cpu_accounts__free(s->cpu);
	gpu_api_bpf__destroy(s->skel);
	gp_model__free(s->model);
	gp_symbolizer__free(s->sym);
	for (int i = 0; i < s->ntargets; i++)
		close(s->targets[i].pidfd);
}

int gp_session_run(const struct gp_options *o)
{
	struct session s = { .opt = o };
	struct gp_resolver resolver;
	enum gp_stop_reason why;
	char missing[128];
	int signo, err, status = GP_EXIT_FAILURE;
	__u64 t0, end_ns;

	libbpf_set_print(libbpf_print);
	if (gp_check_privileges(missing, sizeof(missing))) {
		gp_err("tracing needs root (missing %s): run it with sudo", missing);
		return GP_EXIT_FAILURE;
	}
	if (gp_loop_block_signals()) {
		gp_err("block signals: %s", strerror(errno));
		return GP_EXIT_FAILURE;
	}
	for (int i = 0; i < o->npids; i++)
		if (open_target(&s, o->pids[i]))
			goto out;
	if (prepare_out_dir(o->out_dir))
		goto out;
	raise_fd_limit();
	s.sym = gp_symbolizer_new();
	resolver = (struct gp_resolver){ .ctx = s.sym, .kernel_name = gp_symbolizer_kernel_name };
	s.model = s.sym ? gp_model_new(&resolver) : NULL;
	s.cpu = s.model ? gp_cpu_accounts_new(s.model) : NULL;
	if (!s.cpu) {
		gp_err("out of memory");
		goto out;
	}
	if (load_bpf(&s))
		goto out;
	gp_uprobes_init(&s.probes, s.skel->progs.gp_api_enter, s.skel->progs.gp_api_exit, s.multi);
	set_session_info(&s);
	err = gp_collector_init(&s.collector, bpf_map__fd(s.skel->maps.events), s.model, s.cpu);
	if (err) {
		gp_err("ring buffer: %s", strerror(-err));
		goto out;
	}
	s.collector_ready = true;
	/* The CPU window opens first, so the first traced call already has its attribution. */
	if (start_cpu_accounting(&s))
		goto out;
	for (int i = 0; i < s.ntargets; i++)
		if (attach_target(&s, s.targets[i].pid) < 0)
			goto out;

	gp_notice("tracing %d process%s; Ctrl-C to stop", s.ntargets, s.ntargets > 1 ? "es" : "");
	t0 = clock_ns(CLOCK_MONOTONIC);
	err = gp_loop_run(s.targets, s.ntargets, o->duration_s, o->poll_ms, &s.collector, s.model,
			  &why, &signo);
	if (err)
		gp_err("event loop: %s (writing the report of what was seen)", strerror(-err));
	/* Detach first so nothing new arrives, then take what is left in the ring. */
	gp_uprobes_detach_all(&s.probes);
	sched_bpf__detach(s.sched);
	end_ns = clock_ns(CLOCK_MONOTONIC);
	gp_collector_drain(&s.collector);
	gp_cpu_accounts_close(s.cpu, bpf_map__fd(s.sched->maps.thread_acct), end_ns);
	collect_counters(&s);
	gp_model_set_session_end(s.model, end_ns);
	gp_notice("%s after %.1f s: %llu calls recorded, %s%s", err ? "event loop failed" : stop_text(why, signo),
		  (double)(end_ns - t0) / 1e9, (unsigned long long)s.collector.calls,
		  s.bpf_drops ? "some lost or incomplete (see \"Loss counters\" in the report)" : "none lost",
		  s.bpf_estimates ? "; the kernel did not report some switch-ins: their off-CPU time is estimated"
				  : "");
	if (gp_write_reports(s.model, o->out_dir) == 0 && !err)
		status = GP_EXIT_OK;
out:
	cleanup(&s);
	return status;
}
