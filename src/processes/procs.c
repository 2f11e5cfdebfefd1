/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* procs.c — the processes of a session, admitted, held, followed (see procs.h). */
#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "processes/containers.h"
#include "probes/discover.h"
#include "processes/procs.h"
#include "model/model_ops.h"
#include "log.h"

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
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

void gp_procs_init(struct gp_procs *ps, struct gp_files *files, struct gp_symbolizer *sym,
		   struct gp_model *model, struct gp_cpu_accounts *cpu, int bits_fd, int admit_fd)
{
	memset(ps, 0, sizeof(*ps));
	ps->files = files;
	ps->sym = sym;
	ps->model = model;
	ps->cpu = cpu;
	ps->bits_fd = bits_fd;
	ps->admit_fd = admit_fd;
	ps->places = gp_places_new(NULL);
	if (!ps->places)
		gp_warn("out of memory: processes are not named by their container (nor --container matched)");
}

void gp_procs_release(struct gp_procs *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].pidfd >= 0)
			close(ps->v[i].pidfd);
	free(ps->v);
	free(ps->free_rows);
	gp_places_free(ps->places);
	ps->places = NULL;
	ps->v = NULL;
	ps->free_rows = NULL;
	ps->n = ps->cap = ps->nfree = 0;
}

static struct gp_proc *find_live(struct gp_procs *ps, pid_t pid)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].pid == pid && ps->v[i].live)
			return &ps->v[i];
	return NULL;
}

static bool bit_set(struct gp_procs *ps, pid_t pid)
{
	__u32 word = (__u32)pid / 64;
	__u64 bits = 0;

	return !bpf_map_lookup_elem(ps->bits_fd, &word, &bits) && ((bits >> ((__u32)pid % 64)) & 1);
}

/* Admits pid in the kernel from now on; at_ns opens its CPU window (0: the session's start). */
static int set_bit(struct gp_procs *ps, pid_t pid, __u64 at_ns)
{
	__u32 word = (__u32)pid / 64, key = (__u32)pid;
	__u64 bits = 0;

	if (at_ns && bpf_map_update_elem(ps->admit_fd, &key, &at_ns, BPF_ANY))
		return -errno;
	bpf_map_lookup_elem(ps->bits_fd, &word, &bits);
	bits |= 1ull << ((__u32)pid % 64);
	return bpf_map_update_elem(ps->bits_fd, &word, &bits, BPF_ANY) ? -errno : 0;
}

static void name_threads(struct gp_procs *ps, pid_t pid)
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
			gp_model_thread_name(ps->model, (__u32)pid, (__u32)tid, comm);
	}
	closedir(d);
}

/*
 * Starts following a process the kernel (or we) admitted: its pidfd in the
 * loop, its row in the model. An exit before we could open it is an exit.
 */
/* Where pid runs, for the model: said only of a process in a container or a pid namespace of its own. */
static void place(struct gp_procs *ps, pid_t pid)
{
	struct gp_place pl;

	if (!ps->places || gp_places_of_pid(ps->places, pid, &pl) ||
	    (!pl.id[0] && !pl.pod_uid[0] && pl.ns_pid == pid))
		return;
	gp_model_process_place(ps->model,
			       &(struct gp_op_process_place){ .pid = (__u32)pid,
							      .ns_pid = (__u32)pl.ns_pid,
							      .runtime = pl.runtime,
							      .container_id = pl.id,
							      .container_name = pl.name,
							      .pod_uid = pl.pod_uid,
							      .pod_name = pl.pod_name,
							      .pod_namespace = pl.pod_namespace,
							      .cgroup = pl.cgroup });
}

/* --container: pid runs in one of the containers asked for (always true without --container). */
static bool wanted(struct gp_procs *ps, pid_t pid)
{
	struct gp_place pl;

	if (!ps->ncontainers)
		return true;
	if (!ps->places || gp_places_of_pid(ps->places, pid, &pl))
		return false;
	for (int i = 0; i < ps->ncontainers; i++)
		if (gp_place_matches(&pl, ps->containers[i]))
			return true;
	return false;
}

static struct gp_proc *track(struct gp_procs *ps, pid_t pid, const char *because, __u32 parent,
			     __u64 at_ns, bool from_start)
{
	char comm[64], cmdline[4096];
	struct gp_proc *p;
	int fd;

	if ((p = find_live(ps, pid)))
		return p;
	if (ps->nfree) {
		p = &ps->v[ps->free_rows[--ps->nfree]];
	} else if (ps->n == ps->cap) {
		size_t nc = ps->cap ? 2 * ps->cap : 16;
		struct gp_proc *nv = realloc(ps->v, nc * sizeof(*nv));

		if (!nv)
			return NULL;
		ps->v = nv;
		ps->cap = nc;
	}
	read_proc_text(pid, "comm", comm, sizeof(comm));
	read_proc_text(pid, "cmdline", cmdline, sizeof(cmdline));
	if (!p)
		p = &ps->v[ps->n++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	gp_model_process_add(ps->model, (__u32)pid, comm, cmdline, at_ns, from_start);
	gp_model_process_origin(ps->model, (__u32)pid, because, parent);
	place(ps, pid);
	fd = pidfd_open(pid, 0);
	/* the bit is cleared when the pid is reused by a process we do not trace */
	if (fd < 0 || !bit_set(ps, pid) || gp_loop_watch(ps->loop, fd, (__u64)(p - ps->v))) {
		if (fd >= 0)
			close(fd);
		p->pidfd = -1;
		gp_model_process_exited(ps->model, (__u32)pid, mono_ns());
		gp_info("pid %d (%s) exited before it could be followed", (int)pid, comm);
		return p;
	}
	p->pidfd = fd;
	p->live = true;
	ps->live++;
	name_threads(ps, pid);
	gp_info("tracing pid %d (%s), %s", (int)pid, comm, because);
	return p;
}

/* A failure to trace a process the session wants: a report row (skipped), or an error. */
static int skip(struct gp_procs *ps, pid_t pid, bool report_skip, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int skip(struct gp_procs *ps, pid_t pid, bool report_skip, const char *fmt, ...)
{
	char reason[512], comm[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	read_proc_text(pid, "comm", comm, sizeof(comm));
	if (!report_skip) {
		gp_err("pid %d (%s): %s", (int)pid, comm, reason);
		return -EPERM;
	}
	gp_warn("pid %d (%s): skipped: %s", (int)pid, comm, reason);
	gp_model_skipped_add(ps->model, (__u32)pid, comm, reason);
	ps->nskipped++;
	return 0;
}

int gp_procs_admit(struct gp_procs *ps, pid_t pid, enum gp_admit_how how, const char *because,
		   bool report_skip)
{
	struct gp_candidate cand[GP_MAX_CANDIDATES];
	struct gp_file *armed[GP_MAX_CANDIDATES];
	int ncand = 0, narmed = 0, err;
	__u64 now = mono_ns();
	struct gp_proc *p;

	if (find_live(ps, pid))
		return 1;
	if (how == GP_ADMIT_RUNNING) {
		err = gp_symbolizer_snapshot(ps->sym, pid);
		if (err == -ESRCH || err == -ENOENT)
			return report_skip ? 0 : skip(ps, pid, false, "no such process");
		if (err) {
			char maps[64];

			snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
			return skip(ps, pid, report_skip, "cannot read %s: %s", maps,
				    strerror(-err));
		}
		ncand = gp_discover_candidates(ps->sym, pid, cand, GP_MAX_CANDIDATES);
		for (int i = 0; i < ncand; i++) {
			char path[PATH_MAX + 64];
			const char *why = NULL;
			struct gp_file *f;

			gp_mapped_file_path(pid, cand[i].map, path, sizeof(path));
			f = gp_files_classify(ps->files, pid, path, cand[i].map->path,
					      cand[i].is_exe, &why);
			if (!f)
				return skip(ps, pid, report_skip, "cannot read %s (through %s): %s",
					    cand[i].map->path, path, why);
			if (f->armed)
				armed[narmed++] = f;
		}
		if (ps->all && !narmed)
			return 0; /* --all: it does not use CUDA */
	}
	/* its tables before its first traced call (the launched command: at its exec) */
	if (how == GP_ADMIT_RUNNING)
		gp_stack_sources_add(ps->sources, pid, GP_SS_NEW, GP_SS_BEFORE_RETURN);
	err = set_bit(ps, pid, now);
	if (err) {
		gp_stack_sources_exited(ps->sources, pid);
		return skip(ps, pid, report_skip, "cannot admit it in the kernel: %s",
			    strerror(-err));
	}
	/* nothing of CUDA mapped yet: every call it makes will be seen */
	p = track(ps, pid, because, 0, now, how == GP_ADMIT_LAUNCHED || !narmed);
	if (!p)
		return skip(ps, pid, report_skip, "%s", strerror(ENOMEM));
	for (int i = 0; i < narmed; i++)
		gp_files_add_user(ps->files, armed[i], (__u32)pid);
	p->launched = how == GP_ADMIT_LAUNCHED;
	err = gp_cpu_accounts_open(ps->cpu, pid, now);
	if (err)
		gp_warn("pid %d: cannot read its threads' fault counters: %s", (int)pid,
			strerror(-err));
	if (how == GP_ADMIT_RUNNING) {
		const struct gp_maps *maps = gp_symbolizer_maps(ps->sym, pid);

		gp_info("pid %d: attached in %.1f ms (%zu mappings, %d candidate files, %d probed)",
			(int)pid, (double)(mono_ns() - now) / 1e6, maps ? maps->n : 0, ncand,
			narmed);
		if (!narmed)
			gp_notice(
				"pid %d: no CUDA runtime mapped yet; traced from the moment it loads one",
				(int)pid);
	}
	return 1;
}

/* Looks at the file a held process stopped on, places probes, lets it go on. */
static struct gp_file *resolve_hold(struct gp_procs *ps, const struct gp_proc_event *e)
{
	char path[64], display[PATH_MAX];
	const char *why = NULL;
	struct gp_file *f = gp_files_find(ps->files, e->dev, e->ino);
	__u32 reason = e->kind == GP_PROC_EXEC ? GP_HOLD_EXEC : GP_HOLD_MAP;
	ssize_t n;

	if (f) {
		/* looked at meanwhile (another process, another segment) */
		gp_holds_name_file(ps->holds, e->dev, e->ino, reason, f->path);
		return f;
	}
	if (e->kind == GP_PROC_EXEC)
		snprintf(path, sizeof(path), "/proc/%u/exe", e->hdr.tgid);
	else
		snprintf(path, sizeof(path), "/proc/%u/fd/%d", e->hdr.tgid, e->fd);
	n = readlink(path, display, sizeof(display) - 1);
	display[n > 0 ? n : 0] = '\0';
	gp_holds_name_file(ps->holds, e->dev, e->ino, reason, n > 0 ? display : NULL);
	f = gp_files_classify(ps->files, (pid_t)e->hdr.tgid, path, n > 0 ? display : path,
			      e->kind == GP_PROC_EXEC, &why);
	if (!f)
		gp_warn("pid %u (%s): cannot look at %s: %s; its calls there are not traced",
			e->hdr.tgid, e->comm, n > 0 ? display : path, why);
	else if (gp_files_find(ps->files, e->dev, e->ino) != f)
		gp_warn("pid %u: %s is not the file the kernel saw (replaced meanwhile?)",
			e->hdr.tgid, f->path);
	return f;
}

static void release(struct gp_procs *ps, const struct gp_proc_event *e)
{
	__u64 held = mono_ns() - e->hdr.ts_ns;

	gp_holds_continue(ps->holds, (pid_t)e->hdr.tgid);
	ps->nholds++;
	if (held > ps->hold_ns_max)
		ps->hold_ns_max = held;
	gp_debug("pid %u held %.3f ms", e->hdr.tgid, (double)held / 1e6);
}

void gp_procs_event(struct gp_procs *ps, const struct gp_proc_event *e)
{
	pid_t pid = (pid_t)e->hdr.tgid;
	bool held = e->hdr.flags & GP_PF_HELD, fresh;
	struct gp_file *f = NULL;
	struct gp_proc *p;

	if (ps->closing) {
		if (held)
			release(ps, e);
		return;
	}
	if (e->hdr.flags & GP_PF_CODE) { /* new code in a traced process (never held) */
		if (find_live(ps, pid))
			gp_stack_sources_code_mapped(ps->sources, pid, e->hdr.flags & GP_PF_MAPPED);
		return;
	}
	if (e->kind == GP_PROC_FORK) {
		/* its mappings are its parent's: named even if it is gone before we look */
		gp_symbolizer_inherit(ps->sym, (pid_t)e->parent_tgid, pid);
		p = track(ps, pid, "fork", e->parent_tgid, e->hdr.ts_ns, true);
		if (p && p->live) {
			gp_files_copy_users(ps->files, e->parent_tgid, (__u32)pid);
			gp_symbolizer_snapshot(ps->sym, pid);
			gp_stack_sources_add(ps->sources, pid, GP_SS_NEW, GP_SS_LATER);
		}
		return;
	}
	if (held)
		f = resolve_hold(ps, e);
	else
		f = gp_files_find(ps->files, e->dev, e->ino);
	p = find_live(ps, pid);
	fresh = e->kind == GP_PROC_EXEC && p; /* a new image: looked at anew */
	if (e->kind == GP_PROC_EXEC && p) {
		char comm[64], cmdline[4096];

		/* a new image: the old one's libraries are gone */
		gp_files_drop_user(ps->files, (__u32)pid);
		read_proc_text(pid, "comm", comm, sizeof(comm));
		read_proc_text(pid, "cmdline", cmdline, sizeof(cmdline));
		gp_model_process_exec(ps->model, (__u32)pid, comm, cmdline);
		f = gp_files_find(ps->files, e->dev, e->ino); /* dropping may have forgotten it */
		if (!f && held)
			f = resolve_hold(ps, e);
	}
	if (!p && (e->hdr.flags & GP_PF_ADMITTED))
		fresh = (p = track(ps, pid, ps->because, 0, e->hdr.ts_ns, true));
	if (!p && ps->all && f && f->armed && wanted(ps, pid) && !set_bit(ps, pid, e->hdr.ts_ns)) {
		/* --all: it carries the runtime; still stopped, so its threads' baselines are exact */
		fresh = (p = track(ps, pid, ps->because, 0, e->hdr.ts_ns, true));
		gp_cpu_accounts_open(ps->cpu, pid, e->hdr.ts_ns);
	}
	if (p && p->live && f && f->armed) {
		gp_files_add_user(ps->files, f, (__u32)pid);
		if (e->kind == GP_PROC_MAP && (e->hdr.flags & GP_PF_ADMITTED))
			gp_cpu_accounts_open(ps->cpu, pid,
					     e->hdr.ts_ns); /* threads it already had */
	}
	/*
	 * Its memory map as it is now, while it lives: a short-lived process
	 * may be gone before its calls are read, and launch sites are named
	 * from this snapshot.
	 */
	if (p && p->live)
		gp_symbolizer_snapshot(ps->sym, pid);
	/*
	 * A held process is continued once its tables are published (by the
	 * builder, while this thread goes on draining): its first traced call
	 * comes after, with its stack whole.
	 */
	if (p && p->live && (held || fresh) &&
	    gp_stack_sources_add(ps->sources, pid,
				 fresh ? GP_SS_NEW | (e->kind == GP_PROC_EXEC ? GP_SS_EXEC : 0) : 0,
				 held ? GP_SS_THEN_CONTINUE : GP_SS_LATER))
		return;
	if (held)
		release(ps, e);
}

static void reap_launched(struct gp_procs *ps, struct gp_proc *p)
{
	int status;

	if (waitpid(p->pid, &status, 0) != p->pid)
		return;
	ps->launched_done = true;
	if (WIFEXITED(status)) {
		ps->launched_status = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		ps->launched_signal = WTERMSIG(status);
		ps->launched_status = 128 + ps->launched_signal;
	}
}

void gp_procs_exited(struct gp_procs *ps, __u64 tag)
{
	struct gp_proc *p;

	if (tag >= ps->n || !ps->v[tag].live)
		return;
	p = &ps->v[tag];
	p->live = false;
	ps->live--;
	gp_model_process_exited(ps->model, (__u32)p->pid, mono_ns());
	gp_loop_unwatch(ps->loop, p->pidfd);
	close(p->pidfd);
	p->pidfd = -1;
	if (p->launched)
		reap_launched(ps, p);
	gp_files_drop_user(ps->files, (__u32)p->pid);
	gp_stack_sources_exited(ps->sources, p->pid);
	gp_info("pid %d exited", (int)p->pid);
	if (ps->reuse_rows && !p->launched) {
		size_t *fr = realloc(ps->free_rows, (ps->nfree + 1) * sizeof(*fr));

		if (fr) { /* without room the row is simply not reused */
			ps->free_rows = fr;
			fr[ps->nfree++] = (size_t)tag;
		}
	}
}

static bool name_matches(pid_t pid, const char *const *names, int nnames)
{
	char comm[64], exe[PATH_MAX], link[64];
	const char *base;
	ssize_t n;

	read_proc_text(pid, "comm", comm, sizeof(comm));
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	for (int i = 0; i < nnames; i++)
		if (!strncmp(comm, names[i], 15) || (n > 0 && !strcmp(base, names[i])))
			return true;
	return false;
}

int gp_procs_scan(struct gp_procs *ps, const char *const *names, int nnames)
{
	DIR *d = opendir("/proc");
	pid_t self = getpid();
	struct dirent *de;
	int admitted = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		/* nor the resumer: it is gpuprobed's own */
		if (*end || pid <= 0 || pid == self || (ps->holds && pid == ps->holds->resumer))
			continue;
		if ((names && !name_matches((pid_t)pid, names, nnames)) ||
		    (!names && !wanted(ps, (pid_t)pid)))
			continue;
		if (gp_procs_admit(ps, (pid_t)pid, GP_ADMIT_RUNNING, names ? "name" : ps->because,
				   true) > 0)
			admitted++;
	}
	closedir(d);
	return admitted;
}

const char *gp_proc_stat(pid_t pid, char *buf, size_t len)
{
	char path[64], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return NULL;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold anything */
	return p ? p + 1 : NULL;
}

/* utime + stime of pid in ns; 0 when it cannot be read. */
static __u64 proc_cpu_ns(pid_t pid)
{
	unsigned long long ut = 0, st = 0;
	char buf[1024];
	const char *p = gp_proc_stat(pid, buf, sizeof(buf));

	if (!p ||
	    sscanf(p, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return 0;
	return (ut + st) * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
}

__u64 gp_procs_cpu_delta_ns(struct gp_procs *ps)
{
	__u64 total = 0;

	for (size_t i = 0; i < ps->n; i++) {
		struct gp_proc *p = &ps->v[i];
		__u64 now;

		if (!p->live || !(now = proc_cpu_ns(p->pid)))
			continue;
		if (p->cpu_ns && now > p->cpu_ns)
			total += now - p->cpu_ns;
		p->cpu_ns = now;
	}
	return total;
}
