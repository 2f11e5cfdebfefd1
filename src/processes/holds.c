/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * holds.c — the registry of held processes and the resumer (see holds.h).
 *
 * Why a process of our own and no library: what must outlive gpuprobed's
 * death (SIGKILL gives it no last word) is something that knows whom it
 * held and that notices the death. A process forked before anyone is held
 * inherits the registry's descriptor (the map lives as long as one is open)
 * and waits on a pidfd of gpuprobed: the kernel tells it of the exit, the
 * registry tells it whom to continue. systemd's ExecStopPost covers only
 * the daemon, and a file under /run would have to be written before each
 * stop, which the kernel does (the map) where a file cannot.
 *
 * The resumer is forked from a process that may have threads: it calls
 * nothing that takes a lock or allocates (no stdio, no malloc): system
 * calls, snprintf into its stack, the bpf() wrappers.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "fds.h"
#include "processes/holds.h"
#include "log.h"

/*
 * How long the resumer goes on continuing holds after gpuprobed's death
 * where it cannot see its programs go: measured here, they were gone 11 to
 * 48 ms after the exit (kill -9 during a burst of holds, idle or beside two
 * CPU burners on 2 CPUs).
 */
#define RESUME_GRACE_NS (1000 * 1000000ull)

/* Entries looked at per pass of a sweep (on the stack: the resumer allocates nothing). */
#define SWEEP_BATCH 64

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

int gp_holds_stat_start(const char *stat, __u64 *ticks)
{
	const char *p = strrchr(stat, ')'); /* the name may hold ')' too: the last one ends it */

	if (!p)
		return -EINVAL;
	p++;
	/* fields 3.. are single words, one space before each */
	for (int field = 3;; field++) {
		if (*p != ' ' || p[1] == ' ' || !p[1])
			return -EINVAL; /* a field missing */
		p++;
		if (field == 22)
			break;
		while (*p && *p != ' ')
			p++;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	*ticks = strtoull(p, NULL, 10);
	return 0;
}

bool gp_holds_same_start(__u64 boot_ns, __u64 ticks, long clk_tck)
{
	/* the kernel's nsec_to_clock_t: exact division when USER_HZ divides 10^9 */
	return clk_tck > 0 && boot_ns / (1000000000ull / (__u64)clk_tck) == ticks;
}

/* pid's start time (/proc/PID/stat, clock ticks since boot). 0 or -errno. Async-signal-safe. */
static int proc_start_ticks(pid_t pid, __u64 *ticks)
{
	char path[64], buf[1024];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	return gp_holds_stat_start(buf, ticks);
}

/* pid is in the stopped state ('T' in /proc/PID/stat, after its name's last ')'). */
static bool proc_stopped(pid_t pid)
{
	char path[64], buf[1024], *end;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	end = strrchr(buf, ')');
	return end && end[1] == ' ' && end[2] == 'T';
}

/* Is pid still the process that was held? Async-signal-safe (the resumer calls it). */
static bool still_held_one(pid_t pid, const struct gp_hold *v, long clk_tck)
{
	__u64 ticks;

	return !proc_start_ticks(pid, &ticks) &&
	       gp_holds_same_start(v->start_boottime, ticks, clk_tck);
}

/*
 * The entries owned by owner (of pid, unless pid is 0) held at or before
 * `before`, up to SWEEP_BATCH of them. Returns how many.
 */
static int collect(int map_fd, pid_t owner, pid_t pid, __u64 before, struct gp_hold_key *keys,
		   struct gp_hold *vals)
{
	struct gp_hold_key k, next;
	struct gp_hold v;
	void *prev = NULL;
	int n = 0, i;

	while (n < SWEEP_BATCH && !bpf_map_get_next_key(map_fd, prev, &next)) {
		k = next;
		prev = &k;
		if ((pid && k.tgid != (__u32)pid) || k.held_ns > before)
			continue;
		if (bpf_map_lookup_elem(map_fd, &k, &v) || v.owner_tgid != (__u32)owner)
			continue;
		/* in the order they were held (the map's is a hash's): insertion, the batch is small */
		for (i = n++; i > 0 && keys[i - 1].held_ns > k.held_ns; i--) {
			keys[i] = keys[i - 1];
			vals[i] = vals[i - 1];
		}
		keys[i] = k;
		vals[i] = v;
	}
	return n;
}

/* The row of dev/ino/reason, made when missing (lock held); NULL without memory. */
static struct gp_hold_file *file_row(struct gp_holds *h, __u64 dev, __u64 ino, __u32 reason)
{
	for (size_t i = 0; i < h->nfiles; i++)
		if (h->files[i].dev == dev && h->files[i].ino == ino &&
		    h->files[i].reason == reason)
			return &h->files[i];
	/* always on, every new executable is a file: the rows are bounded (beyond: the totals only) */
	if (h->nfiles == GP_HOLD_FILES_MAX ||
	    GP_ARRAY_GROW(h->files, h->capfiles, h->nfiles + 1, 16))
		return NULL;
	h->files[h->nfiles] = (struct gp_hold_file){ .dev = dev, .ino = ino, .reason = reason };
	return &h->files[h->nfiles++];
}

void gp_holds_name_file(struct gp_holds *h, __u64 dev, __u64 ino, __u32 reason, const char *path)
{
	struct gp_hold_file *f;

	if (!h || !h->drop_vals || !path)
		return;
	pthread_mutex_lock(&h->lock);
	f = file_row(h, dev, ino, reason); /* before the hold ends, usually: its row waits for it */
	if (f && !f->path) {
		f->path = strdup(path);
		f->changed = f->holds > 0;
	}
	pthread_mutex_unlock(&h->lock);
}

void gp_holds_take_files(struct gp_holds *h, void (*fn)(void *ctx, const struct gp_hold_file *f),
			 void *ctx)
{
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < h->nfiles; i++)
		if (h->files[i].changed) {
			h->files[i].changed = false;
			fn(ctx, &h->files[i]);
		}
	pthread_mutex_unlock(&h->lock);
}

static void note_ended(struct gp_holds *h, const struct gp_hold_key *k, const struct gp_hold *v,
		       __u64 t)
{
	__u64 end = (v->flags & GP_HOLDF_TIMED_OUT) ? v->released_ns : t;
	__u64 d = end > k->held_ns ? end - k->held_ns : 0;
	static const char *const why[] = { "", "exec", "library mapping", "new Python code" };
	struct gp_hold_file *f;

	pthread_mutex_lock(&h->lock);
	f = file_row(h, v->dev, v->ino, v->reason);
	if (f) {
		f->holds++;
		f->total_ns += d;
		if (d > f->max_ns)
			f->max_ns = d;
		f->changed = true;
	} else {
		h->st.unfiled++; /* without a row: only in the totals */
	}
	h->st.holds++;
	h->st.by_reason[v->reason < 4 ? v->reason : 0]++;
	h->st.total_ns += d;
	if (d > h->st.max_ns)
		h->st.max_ns = d;
	if (v->flags & GP_HOLDF_TIMED_OUT) {
		h->st.timed_out++;
		/* without room it is only counted (drops.hold_timeout), not named */
		if (!GP_ARRAY_GROW(h->timeouts, h->captimeouts, h->ntimeouts + 1, 16))
			h->timeouts[h->ntimeouts++] = (struct gp_hold_timeout){ .pid = k->tgid,
										.reason = v->reason,
										.held_ns = d };
	}
	pthread_mutex_unlock(&h->lock);
	if (v->flags & GP_HOLDF_TIMED_OUT)
		gp_warn("pid %u: held for its %s, continued at --hold-max-ms (%.0f ms) before gpuprobed was "
			"done with it: its first calls there may be missing (drops.hold_timeout)",
			k->tgid, v->reason < 4 ? why[v->reason] : "?", (double)d / 1e6);
}

/* Forgets the entries of pid (0: all of ours) held before t; a timed-out one is counted. */
static void forget(struct gp_holds *h, pid_t pid, __u64 t, bool send)
{
	struct gp_hold_key keys[SWEEP_BATCH];
	struct gp_hold vals[SWEEP_BATCH];
	long clk_tck = sysconf(_SC_CLK_TCK);
	int n, gone;

	do {
		n = collect(h->map_fd, h->self, pid, t, keys, vals);
		gone = 0;
		for (int i = 0; i < n; i++) {
			/* the session's end: every process left, if it is still the one that was held */
			if (send && still_held_one((pid_t)keys[i].tgid, &vals[i], clk_tck))
				kill((pid_t)keys[i].tgid, SIGCONT);
			/* deleted by another thread meanwhile: counted there */
			if (!bpf_map_delete_elem(h->map_fd, &keys[i])) {
				note_ended(h, &keys[i], &vals[i], t);
				gone++;
			} else if (errno == ENOENT) {
				gone++;
			}
		}
	} while (n == SWEEP_BATCH && gone); /* a batch none of which would go: not again */
}

int gp_holds_init(struct gp_holds *h, int map_fd, int drops_fd, __u64 limit_ns)
{
	int ncpus = libbpf_num_possible_cpus();

	memset(h, 0, sizeof(*h));
	if (ncpus <= 0)
		return ncpus < 0 ? ncpus : -EINVAL;
	h->drop_vals = calloc((size_t)ncpus, sizeof(*h->drop_vals));
	if (!h->drop_vals)
		return -ENOMEM;
	/* our own descriptors: the session closes its maps' before it frees this */
	h->map_fd = fcntl(map_fd, F_DUPFD_CLOEXEC, 3);
	h->drops_fd = fcntl(drops_fd, F_DUPFD_CLOEXEC, 3);
	if (h->map_fd < 0 || h->drops_fd < 0) {
		int err = -errno;

		if (h->map_fd >= 0)
			close(h->map_fd);
		if (h->drops_fd >= 0)
			close(h->drops_fd);
		free(h->drop_vals);
		h->drop_vals = NULL;
		return err;
	}
	h->self = getpid();
	h->limit_ns = limit_ns;
	h->ncpus = ncpus;
	pthread_mutex_init(&h->lock, NULL);
	return 0;
}

void gp_holds_free(struct gp_holds *h)
{
	if (!h->drop_vals)
		return;
	/* nothing can be held any more (the programs are gone) */
	gp_holds_release_all(h);
	if (h->pin[0] && unlink(h->pin) && errno != ENOENT)
		gp_warn("%s: cannot remove it: %s", h->pin, strerror(errno));
	h->pin[0] = '\0';
	if (h->resumer > 0) {
		/* it is not needed */
		kill(h->resumer, SIGKILL);
		waitpid(h->resumer, NULL, 0);
		h->resumer = 0;
	}
	close(h->map_fd);
	close(h->drops_fd);
	free(h->drop_vals);
	h->drop_vals = NULL;
	free(h->timeouts);
	h->timeouts = NULL;
	for (size_t i = 0; i < h->nfiles; i++)
		free(h->files[i].path);
	free(h->files);
	h->files = NULL;
	h->nfiles = h->capfiles = 0;
	pthread_mutex_destroy(&h->lock);
}

void gp_holds_continue(struct gp_holds *h, pid_t pid)
{
	__u64 t = mono_ns(); /* before the signal: a stop sent after it is not ended by it */

	if (kill(pid, SIGCONT) && errno != ESRCH)
		gp_warn("pid %d: cannot continue it: %s", (int)pid, strerror(errno));
	if (h && h->drop_vals)
		forget(h, pid, t, false);
}

void gp_holds_release_all(struct gp_holds *h)
{
	if (h && h->drop_vals)
		forget(h, 0, mono_ns(), true);
}

void gp_holds_stats(struct gp_holds *h, struct gp_hold_stats *out)
{
	pthread_mutex_lock(&h->lock);
	*out = h->st;
	pthread_mutex_unlock(&h->lock);
}

size_t gp_holds_take_timeouts(struct gp_holds *h, struct gp_hold_timeout **out)
{
	size_t n;

	pthread_mutex_lock(&h->lock);
	*out = h->timeouts;
	n = h->ntimeouts;
	h->timeouts = NULL;
	h->ntimeouts = h->captimeouts = 0;
	pthread_mutex_unlock(&h->lock);
	return n;
}

/* ---- the resumer --------------------------------------------------------------------------- */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr, without stdio (no lock inherited from another thread). */
static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	memcpy(line, "gpuprobed: ", 11);
	va_start(ap, fmt);
	n = vsnprintf(line + 11, sizeof(line) - 12, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n = 11 + (n < (int)sizeof(line) - 12 ? n : (int)sizeof(line) - 13);
	line[n++] = '\n';
	if (write(2, line, (size_t)n) < 0)
		return;
}

static void count_timeout(struct gp_holds *h)
{
	__u32 key = GP_DROP_HOLD_TIMEOUT;

	/* only the resumer writes this counter: no other writer to race */
	if (bpf_map_lookup_elem(h->drops_fd, &key, h->drop_vals))
		return;
	h->drop_vals[0]++;
	bpf_map_update_elem(h->drops_fd, &key, h->drop_vals, BPF_ANY);
}

/*
 * Holds older than the limit are continued, marked (gpuprobed names them
 * when it gets to them); a hold of a process gone is forgotten. Returns when
 * the next one falls due (or now + limit: a hold not seen yet is seen before
 * its own deadline). The whole registry is walked, entry by entry: however
 * many holds wait, each is looked at.
 */
static __u64 expire(struct gp_holds *h, long clk_tck)
{
	__u64 now = mono_ns(), next = now + h->limit_ns;
	struct gp_hold_key k, cur;
	struct gp_hold v;
	void *prev = NULL;

	while (!bpf_map_get_next_key(h->map_fd, prev, &cur)) {
		__u64 due;

		k = cur;
		prev = &k;
		if (bpf_map_lookup_elem(h->map_fd, &k, &v) || v.owner_tgid != (__u32)h->self ||
		    (v.flags & GP_HOLDF_TIMED_OUT))
			continue;
		due = k.held_ns + h->limit_ns;
		if (due > now) {
			if (due < next)
				next = due;
			continue;
		}
		if (!still_held_one((pid_t)k.tgid, &v, clk_tck)) {
			/* gone: nobody to continue; the walk starts over (the next key of a deleted one) */
			bpf_map_delete_elem(h->map_fd, &k);
			prev = NULL;
			continue;
		}
		v.flags |= GP_HOLDF_TIMED_OUT;
		v.released_ns = now;
		/* marked first: gpuprobed done meanwhile deleted it, and continued it itself */
		if (bpf_map_update_elem(h->map_fd, &k, &v, BPF_EXIST))
			continue;
		kill((pid_t)k.tgid, SIGCONT);
		count_timeout(h);
	}
	return next;
}

/* gpuprobed is gone: every process it left held is continued, once it is surely the same. */
static void resume_all(struct gp_holds *h, long clk_tck)
{
	struct gp_hold_key keys[SWEEP_BATCH];
	struct gp_hold vals[SWEEP_BATCH];
	int n, gone, resumed = 0;

	do {
		n = collect(h->map_fd, h->self, 0, ~0ull, keys, vals);
		gone = 0;
		for (int i = 0; i < n; i++) {
			pid_t pid = (pid_t)keys[i].tgid;

			if (still_held_one(pid, &vals[i], clk_tck) && !kill(pid, SIGCONT))
				resumed++;
			if (!bpf_map_delete_elem(h->map_fd, &keys[i]) || errno == ENOENT)
				gone++;
		}
	} while (n == SWEEP_BATCH && gone);
	if (resumed)
		say("pid %d exited with %d process%s held: continued", (int)h->self, resumed,
		    resumed == 1 ? "" : "es");
}

/*
 * Does a BPF program still use the registry (map id)? After gpuprobed's
 * exit its links are released by a kernel worker, a little later: until
 * its programs are gone they may still hold someone. 1 or 0; -1 when the
 * kernel will not tell (listing programs needs CAP_SYS_ADMIN, which the
 * systemd unit does not give).
 */
static int programs_use(__u32 map_id)
{
	__u32 id = 0;

	if (bpf_prog_get_next_id(0, &id))
		return errno == ENOENT ? 0 : -1;
	for (id = 0; !bpf_prog_get_next_id(id, &id);) {
		__u32 maps[64], len;
		struct bpf_prog_info info;
		int fd = bpf_prog_get_fd_by_id(id);

		if (fd < 0)
			continue; /* gone meanwhile */
		memset(&info, 0, sizeof(info));
		info.nr_map_ids = 64;
		info.map_ids = (__u64)(unsigned long)maps;
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(fd, &info, &len))
			for (__u32 i = 0; i < info.nr_map_ids && i < 64; i++)
				if (maps[i] == map_id) {
					close(fd);
					return 1;
				}
		close(fd);
	}
	return 0;
}

static __attribute__((noreturn)) void resumer(struct gp_holds *h, int pidfd)
{
	long clk_tck = sysconf(_SC_CLK_TCK);
	int keep[3] = { h->map_fd, h->drops_fd, pidfd };
	sigset_t all;
	int null;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL); /* only SIGKILL ends it: it ends by itself */
	prctl(PR_SET_NAME, "gpuprobed-hold");
	gp_fds_close_all_but(keep, 3, 3); /* stderr stays */
	null = open("/dev/null", O_RDWR);
	if (null >= 0) { /* not the holder of a pipe someone reads gpuprobed's output from */
		dup2(null, 0);
		dup2(null, 1);
		if (null > 2)
			close(null);
	}
	for (;;) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		__u64 now = mono_ns(), next = expire(h, clk_tck);
		int ms = next > now ? (int)((next - now + 999999) / 1000000) : 0;
		int r = poll(&p, 1, ms);

		if (r > 0 || (r < 0 && errno != EINTR))
			break; /* gpuprobed exited */
	}
	{
		struct bpf_map_info mi;
		__u32 len = sizeof(mi);
		__u64 dead = mono_ns();
		int r;

		memset(&mi, 0, sizeof(mi));
		bpf_obj_get_info_by_fd(h->map_fd, &mi, &len);
		/*
		 * Until the last program that can hold someone is gone (5 s at
		 * most); where the kernel will not say, for RESUME_GRACE_NS.
		 */
		do {
			resume_all(h, clk_tck);
			usleep(10000);
			r = mi.id ? programs_use(mi.id) : -1;
		} while ((r > 0 || (r < 0 && mono_ns() - dead < RESUME_GRACE_NS)) &&
			 mono_ns() - dead < 5000000000ull);
		usleep(10000); /* one still running on another CPU as its id went */
		resume_all(h, clk_tck);
	}
	if (h->pin[0])
		unlink(h->pin); /* nothing left in it for gp_holds_release_dead */
	_exit(0);
}

int gp_holds_start_resumer(struct gp_holds *h)
{
	int pidfd = pidfd_open(h->self, 0);
	pid_t pid;

	if (pidfd < 0) {
		gp_err("pidfd_open: %s", strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(pidfd);
		gp_err("cannot start the process that continues held processes if gpuprobed dies: %s",
		       strerror(-err));
		return err;
	}
	if (pid == 0)
		resumer(h, pidfd);
	close(pidfd);
	h->resumer = pid;
	gp_info("pid %d continues what gpuprobed holds if it dies, and any hold after %llu ms",
		(int)pid, (unsigned long long)(h->limit_ns / 1000000));
	return 0;
}

/* ---- the pins: registries that outlive gpuprobed and its resumer -------------------------- */

/* /sys/fs/bpf is bpffs, mounted now if it was not (root only). 0 or -errno. */
static int bpffs_ready(void)
{
	struct statfs sf;

	if (!statfs("/sys/fs/bpf", &sf) && sf.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL))
		return -errno;
	return 0;
}

void gp_holds_pin(struct gp_holds *h)
{
	const char *what = "mount bpffs on /sys/fs/bpf";
	__u64 ticks;
	int err;

	if ((err = bpffs_ready()))
		goto fail;
	what = "read its own start time";
	if ((err = proc_start_ticks(h->self, &ticks)))
		goto fail;
	what = "make " GP_HOLDS_PIN_DIR;
	if (mkdir(GP_HOLDS_PIN_DIR, 0700) && errno != EEXIST) {
		err = -errno;
		goto fail;
	}
	snprintf(h->pin, sizeof(h->pin), GP_HOLDS_PIN_DIR "/holds-%d-%llu", (int)h->self,
		 (unsigned long long)ticks);
	what = "pin it";
	if (bpf_obj_pin(h->map_fd, h->pin)) {
		err = -errno;
		h->pin[0] = '\0';
		goto fail;
	}
	gp_debug("the registry of holds is pinned as %s", h->pin);
	return;
fail:
	gp_warn("the registry of holds is not pinned (cannot %s: %s): if gpuprobed and its resumer "
		"are killed together, what they held stays stopped until `gpuprobed --release-holds`"
		" runs where it can",
		what, strerror(-err));
}

/* One pass over a dead gpuprobed's registry: each entry continued if still the one held. */
static int release_entries(int fd, pid_t owner, long clk_tck)
{
	struct gp_hold_key k, cur;
	struct gp_hold v;
	int n = 0;

	/* each entry deleted once looked at: the walk starts over from the first */
	while (!bpf_map_get_next_key(fd, NULL, &cur)) {
		k = cur;
		/*
		 * SIGCONT whatever its state (it also cancels a stop still pending), but said only for a
		 * process that was stopped: gpuprobed killed between continuing one and deleting its entry
		 * leaves the entry of a process that runs.
		 */
		if (!bpf_map_lookup_elem(fd, &k, &v) &&
		    still_held_one((pid_t)k.tgid, &v, clk_tck)) {
			bool stopped = proc_stopped((pid_t)k.tgid);

			if (!kill((pid_t)k.tgid, SIGCONT) && stopped) {
				fprintf(stderr,
					"gpuprobed: pid %u: continued (held by gpuprobed %d, gone)\n",
					k.tgid, (int)owner);
				n++;
			}
		}
		if (bpf_map_delete_elem(fd, &k) && errno != ENOENT)
			break;
	}
	return n;
}

/*
 * Continues what the registry pinned at path holds (owner: its dead
 * gpuprobed); how many. As the resumer does: until no program of the dead
 * one can hold anyone any more (the kernel releases its links a little after
 * its death; 5 s at most), where the kernel says.
 */
static int release_pinned(const char *path, pid_t owner)
{
	long clk_tck = sysconf(_SC_CLK_TCK);
	struct bpf_map_info mi;
	__u32 len = sizeof(mi);
	__u64 t0 = mono_ns();
	int fd, n = 0;

	fd = bpf_obj_get(path);
	if (fd < 0) {
		gp_warn("%s: %s", path, strerror(errno));
		return 0;
	}
	memset(&mi, 0, sizeof(mi));
	bpf_obj_get_info_by_fd(fd, &mi, &len);
	for (;;) {
		n += release_entries(fd, owner, clk_tck);
		if (!mi.id || programs_use(mi.id) <= 0 || mono_ns() - t0 > 5000000000ull)
			break;
		usleep(10000);
	}
	n += release_entries(fd, owner, clk_tck);
	close(fd);
	return n;
}

int gp_holds_release_dead(void)
{
	struct dirent *de;
	int total = 0;
	DIR *dir;

	dir = opendir(GP_HOLDS_PIN_DIR);
	if (!dir) {
		if (errno == ENOENT)
			return 0; /* nothing was ever pinned (or bpffs is not mounted) */
		gp_err("%s: %s", GP_HOLDS_PIN_DIR, strerror(errno));
		return -errno;
	}
	while ((de = readdir(dir))) {
		unsigned long long start;
		__u64 now;
		char path[sizeof(GP_HOLDS_PIN_DIR) + 256];
		int owner, len = 0;

		if (sscanf(de->d_name, "holds-%d-%llu%n", &owner, &start, &len) != 2 ||
		    de->d_name[len] || owner <= 0)
			continue;
		/* its owner alive (the same process: its start time): not ours to touch */
		if (!proc_start_ticks(owner, &now) && now == start)
			continue;
		snprintf(path, sizeof(path), "%s/%s", GP_HOLDS_PIN_DIR, de->d_name);
		total += release_pinned(path, owner);
		if (unlink(path) && errno != ENOENT)
			gp_warn("%s: cannot remove it: %s", path, strerror(errno));
	}
	closedir(dir);
	return total;
}
