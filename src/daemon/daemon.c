/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * daemon.c — gpuprobed --daemon (daemon.h): one --all session that runs until
 * SIGTERM, with the session's hooks doing the always-on parts on the
 * session's own thread (the only one that touches the model):
 *
 *  - /metrics: the HTTP server's thread asks for a page and waits; the next
 *    tick (every poll interval) renders it from the model and hands it over,
 *    so no lock is held around the model and a scrape costs one render;
 *  - periodic reports into STATE_DIR/reports/YYYYmmddTHHMMSSZ/, the oldest
 *    removed while the directory is over its size bound; the final report at
 *    stop goes to STATE_DIR/reports/current/ (kept as a dated report when
 *    the daemon starts again);
 *  - memory bounds: exited processes are forgotten after their grace period,
 *    and, while more than max_processes are kept, the first exited, then the
 *    live ones idle longest;
 *  - the overhead budget: the session estimates the probes' cost and gates
 *    the hot ones (collect/duty.h); the daemon hands it the budget, which a
 *    reload may change;
 *  - SIGHUP re-reads the configuration: a bad file keeps the running one,
 *    and what cannot change without a restart is said and kept.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "daemon/metrics_http.h"
#include "log.h"
#include "model/view.h"
#include "options/option_spec.h"
#include "report/report_files.h"
#include "session/session.h"

/* How long a scrape waits for the session's thread to render the page. */
#define GP_SCRAPE_WAIT_S 5

struct daemon {
	struct gp_daemon_config cfg;
	const char *config_path;
	bool config_missing_ok;
	struct gp_options opt; /* the session's */
	char reports_dir[PATH_MAX];
	char current_dir[PATH_MAX];
	struct gp_metrics_server *http;
	struct gp_metrics_self self;
	struct gp_metrics_pool
		*pool; /* process_labels = group: the series' memory (the session's thread's) */
	size_t noted_nprocs; /* the model's processes when the pool last took their labels */
	bool notify;	     /* systemd waits for READY=1 */

	/* the /metrics hand-off between the HTTP thread and the session's thread */
	pthread_mutex_t lock;
	pthread_cond_t rendered;
	unsigned wanted;  /* scrapes waiting for a page */
	__u64 generation; /* pages rendered */
	char *page;
	size_t page_len;
	int page_err;
	bool closing;

	__u64 next_report_ns;
};

static __u64 clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* dir/name into out; -ENAMETOOLONG when it does not fit (nothing is used then). */
static int join_path(char *out, size_t len, const char *dir, const char *name)
{
	int n = snprintf(out, len, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- /metrics ------------------------------------------------------------------ */

/* The server's thread: ask the session's thread for a page, wait for it, copy it. */
static int fill_metrics(void *ctx, char **body, size_t *len)
{
	struct daemon *d = ctx;
	struct timespec until;
	__u64 gen;
	int err = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += GP_SCRAPE_WAIT_S;
	pthread_mutex_lock(&d->lock);
	gen = d->generation;
	d->wanted++;
	while (d->generation == gen && !d->closing && !err)
		err = pthread_cond_timedwait(&d->rendered, &d->lock, &until);
	if (d->generation == gen) {
		d->wanted--;
		err = d->closing ? -ESHUTDOWN : -ETIMEDOUT;
	} else if (d->page_err) {
		err = d->page_err;
	} else if (!(*body = malloc(d->page_len ? d->page_len : 1))) {
		err = -ENOMEM;
	} else {
		memcpy(*body, d->page, d->page_len);
		*len = d->page_len;
		err = 0;
	}
	pthread_mutex_unlock(&d->lock);
	return err;
}

static void metrics_opts(struct daemon *d, struct gp_metrics_opts *o)
{
	/* a change of process_labels (a reload) starts the group series anew */
	if (d->cfg.process_labels == GP_LABELS_GROUP && !d->pool) {
		d->pool = gp_metrics_pool_new();
		if (!d->pool)
			gp_warn("metrics: out of memory for process_labels = group: a series per pid");
	} else if (d->cfg.process_labels == GP_LABELS_PID && d->pool) {
		gp_metrics_pool_free(d->pool);
		d->pool = NULL;
	}
	*o = (struct gp_metrics_opts){ .job_source = d->cfg.job_source,
				       .job_env = d->cfg.job_env,
				       .proc_root = "/proc",
				       .pool = d->pool };
}

/* The session's thread: render a page when a scrape waits for one. */
static void serve_metrics(struct daemon *d, const struct gp_model *m)
{
	struct gp_metrics_opts mo;
	char *page = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (!__atomic_load_n(&d->wanted, __ATOMIC_ACQUIRE))
		return;
	metrics_opts(d, &mo);
	f = open_memstream(&page, &len);
	if (!f) {
		err = -errno;
	} else {
		err = gp_metrics_render(m, &mo, &d->self, f);
		if (fclose(f) && !err)
			err = -EIO;
	}
	pthread_mutex_lock(&d->lock);
	free(d->page);
	d->page = page;
	d->page_len = len;
	d->page_err = err;
	d->generation++;
	d->wanted = 0;
	pthread_cond_broadcast(&d->rendered);
	pthread_mutex_unlock(&d->lock);
}

static int start_http(struct daemon *d)
{
	if (!d->cfg.listen_enabled) {
		gp_notice("metrics endpoint off (listen = off)");
		return 0;
	}
	d->http = gp_metrics_server_start(d->cfg.listen_addr, d->cfg.listen_port, fill_metrics, d);
	if (!d->http)
		return errno ? -errno : -EADDRNOTAVAIL; /* the server said why */
	gp_notice("metrics on http://%s%s%s:%u/metrics", strchr(d->cfg.listen_addr, ':') ? "[" : "",
		  d->cfg.listen_addr, strchr(d->cfg.listen_addr, ':') ? "]" : "",
		  d->cfg.listen_port);
	return 0;
}

static void stop_http(struct daemon *d)
{
	pthread_mutex_lock(&d->lock);
	d->closing = true; /* waiting scrapes give up now: their pages would never come */
	pthread_cond_broadcast(&d->rendered);
	pthread_mutex_unlock(&d->lock);
	gp_metrics_server_stop(d->http);
	d->http = NULL;
	pthread_mutex_lock(&d->lock);
	d->closing = false;
	pthread_mutex_unlock(&d->lock);
}

/* ---- periodic reports, bounded by size ---------------------------------------- */

/* Bytes of the regular files in dir (one level: reports have no subdirectories). */
static __u64 dir_bytes(const char *dir)
{
	DIR *dh = opendir(dir);
	struct dirent *e;
	__u64 total = 0;

	if (!dh)
		return 0;
	while ((e = readdir(dh))) {
		struct stat st;

		if (!fstatat(dirfd(dh), e->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
			total += (__u64)st.st_size;
	}
	closedir(dh);
	return total;
}

static void remove_dir(const char *dir)
{
	DIR *dh = opendir(dir);
	struct dirent *e;

	if (!dh)
		return;
	while ((e = readdir(dh)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(dh), e->d_name, 0);
	closedir(dh);
	if (rmdir(dir))
		gp_warn("remove old report %s: %s", dir, strerror(errno));
}

/* A dated report directory: YYYYmmddTHHMMSSZ, maybe with "-N". */
static bool dated_name(const char *name)
{
	return strlen(name) >= 16 && name[8] == 'T' && name[15] == 'Z' &&
	       strspn(name, "0123456789") == 8;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Removes the oldest dated reports while the reports are over max_size; the newest always stays. */
static void rotate_reports(struct daemon *d)
{
	DIR *dh = opendir(d->reports_dir);
	struct dirent *e;
	char **names = NULL, path[PATH_MAX];
	size_t n = 0, cap = 0;
	__u64 *bytes = NULL, total;

	if (!dh)
		return;
	while ((e = readdir(dh))) {
		if (!dated_name(e->d_name))
			continue;
		if (GP_ARRAY_GROW(names, cap, n + 1, 16))
			break;
		if (!(names[n] = strdup(e->d_name)))
			break;
		n++;
	}
	closedir(dh);
	qsort(names, n, sizeof(*names), cmp_names);
	bytes = calloc(n ? n : 1, sizeof(*bytes));
	total = dir_bytes(d->current_dir);
	for (size_t i = 0; bytes && i < n; i++) {
		bytes[i] = join_path(path, sizeof(path), d->reports_dir, names[i])
				   ? 0
				   : dir_bytes(path);
		total += bytes[i];
	}
	for (size_t i = 0; bytes && i + 1 < n && total > d->cfg.report_max_bytes; i++) {
		if (join_path(path, sizeof(path), d->reports_dir, names[i]))
			continue;
		remove_dir(path);
		total -= bytes[i];
		d->self.reports_removed++;
		gp_info("removed report %s (reports over %llu bytes)", path,
			d->cfg.report_max_bytes);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(bytes);
}

/* A new dated directory for a report made at realtime t (seconds). 0, or -errno. */
static int dated_dir(struct daemon *d, time_t t, char *out, size_t len)
{
	struct tm tm;
	char stamp[32];

	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (int k = 1; k < 1000; k++) {
		char name[48];

		snprintf(name, sizeof(name), k == 1 ? "%s" : "%s-%d", stamp, k);
		if (join_path(out, len, d->reports_dir, name))
			return -ENAMETOOLONG;
		if (!mkdir(out, 0750))
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

static void periodic_report(struct daemon *d, struct gp_model *m)
{
	char dir[PATH_MAX];
	int err = dated_dir(d, time(NULL), dir, sizeof(dir));

	if (err) {
		gp_err("periodic report in %s: %s", d->reports_dir, strerror(-err));
		return;
	}
	gp_model_symbolize_stacks(m, NULL);
	if (gp_write_reports(m, dir) == 0)
		d->self.reports_written++;
	rotate_reports(d);
}

/* The previous run's final report becomes a dated one (named after when it was written). */
static void keep_previous_current(struct daemon *d)
{
	char path[PATH_MAX], dir[PATH_MAX];
	struct stat st;

	if (join_path(path, sizeof(path), d->current_dir, "report.json") || stat(path, &st))
		return;
	if (dated_dir(d, st.st_mtime, dir, sizeof(dir)) == 0) {
		rmdir(dir);
		if (rename(d->current_dir, dir))
			gp_warn("keep the previous report %s as %s: %s", d->current_dir, dir,
				strerror(errno));
	}
}

/* ---- configuration -------------------------------------------------------------- */

static void apply_log_level(const struct daemon *d, const struct gp_options *cli)
{
	gp_log_level = d->cfg.log_level;
	if (cli->verbosity >= 2)
		gp_log_level = LOG_DEBUG;
	else if (cli->verbosity == 1 && gp_log_level < LOG_INFO)
		gp_log_level = LOG_INFO;
}

static const struct gp_options *daemon_cli; /* for -v on reload */

/*
 * An overhead budget scales the kernel's aggregates of the hot calls: with
 * stacks or the timeline every call is a record, and there is nothing to
 * scale. (Those keys need a restart: on reload, the running values count.)
 */
static int config_usable(const struct daemon *d, const struct gp_daemon_config *c,
			 const struct gp_daemon_config *running)
{
	const struct gp_daemon_config *r = running ? running : c;

	if (c->overhead_budget > 0 &&
	    (!r->options.aggregate || r->options.stacks || r->options.timeline)) {
		gp_err("%s: [trace] overhead_budget needs aggregate = on, stacks = off and timeline = off%s: "
		       "the budget scales the kernel's counts of the hot calls, and these make every call a record",
		       d->config_path, running ? " (running values: they need a restart)" : "");
		return -EINVAL;
	}
	return 0;
}

static void reload(struct daemon *d)
{
	struct gp_daemon_config next;
	char keys[512];
	bool listen_changed;

	if (d->notify)
		sd_notify(0, "RELOADING=1");
	if (gp_daemon_config_load(d->config_path, d->config_missing_ok, &next) ||
	    config_usable(d, &next, &d->cfg)) {
		d->self.reload_failures++;
		gp_err("reload: %s has errors (above): keeping the running configuration",
		       d->config_path);
		goto out;
	}
	if (gp_daemon_config_restart_keys(&d->cfg, &next, keys, sizeof(keys)))
		gp_warn("reload: %s changed, which needs a restart: keeping the running value%s",
			keys, strchr(keys, ',') ? "s" : "");
	gp_daemon_config_keep_running(&next, &d->cfg);
	listen_changed = next.listen_enabled != d->cfg.listen_enabled ||
			 next.listen_port != d->cfg.listen_port ||
			 strcmp(next.listen_addr, d->cfg.listen_addr);
	if (listen_changed) {
		struct gp_daemon_config old = d->cfg;

		stop_http(d);
		d->cfg = next;
		if (start_http(d)) {
			gp_err("reload: keeping the previous metrics address");
			d->cfg.listen_enabled = old.listen_enabled;
			memcpy(d->cfg.listen_addr, old.listen_addr, sizeof(old.listen_addr));
			d->cfg.listen_port = old.listen_port;
			next = d->cfg;
			if (start_http(d))
				gp_err("metrics endpoint is down until the next reload");
		}
	}
	if (next.report_interval_s != d->cfg.report_interval_s)
		d->next_report_ns = next.report_interval_s
					    ? clock_ns(CLOCK_MONOTONIC) +
						      (__u64)next.report_interval_s * 1000000000ull
					    : 0;
	d->cfg = next;
	apply_log_level(d, daemon_cli);
	d->self.reloads++;
	gp_notice("reloaded %s", d->config_path);
out:
	if (d->notify)
		sd_notify(0, "READY=1");
}

/* ---- the session's hooks -------------------------------------------------------- */

static void on_started(void *ctx, struct gp_model *m)
{
	struct daemon *d = ctx;

	d->self.start_realtime_ns = clock_ns(CLOCK_REALTIME);
	if (start_http(d) && d->cfg.listen_enabled)
		gp_err("metrics endpoint is down until a reload names a free address");
	if (d->cfg.report_interval_s)
		d->next_report_ns =
			clock_ns(CLOCK_MONOTONIC) + (__u64)d->cfg.report_interval_s * 1000000000ull;
	if (d->notify)
		sd_notify(0, "READY=1\nSTATUS=tracing every CUDA process");
}

static bool on_tick(void *ctx, struct gp_model *m, __u64 now, bool counters_fresh)
{
	struct daemon *d = ctx;

	if (counters_fresh || m->nprocs != d->noted_nprocs) {
		/* a new process's group labels while it lives: its job is not readable once it exits */
		struct gp_metrics_opts mo;

		metrics_opts(d, &mo);
		if (mo.pool && gp_metrics_pool_note(mo.pool, m, &mo))
			gp_warn("metrics: out of memory: a process's group labels are taken later");
		d->noted_nprocs = m->nprocs;
	}
	if (counters_fresh) {
		size_t evicted = 0;
		__u64 grace = (__u64)d->cfg.exited_grace_s * 1000000000ull;

		gp_model_forget_exited(m, now > grace ? now - grace : 0, d->cfg.max_processes,
				       &evicted);
		if (evicted) {
			d->self.processes_evicted += evicted;
			gp_info("forgot %zu process%s early (max_processes %u)", evicted,
				evicted == 1 ? "" : "es", d->cfg.max_processes);
		}
	}
	if (d->next_report_ns && now >= d->next_report_ns) {
		periodic_report(d, m);
		d->next_report_ns = now + (__u64)d->cfg.report_interval_s * 1000000000ull;
	}
	serve_metrics(d, m);
	return true;
}

static bool on_signal(void *ctx, const struct signalfd_siginfo *si)
{
	struct daemon *d = ctx;

	if (si->ssi_signo == SIGHUP) {
		reload(d);
		return false;
	}
	gp_notice("%s: detaching", strsignal((int)si->ssi_signo));
	if (d->notify)
		sd_notify(0, "STOPPING=1");
	return true;
}

static void on_stopping(void *ctx, struct gp_model *m)
{
	struct daemon *d = ctx;

	stop_http(d);
}

/* ---- start ---------------------------------------------------------------------- */

/* The session's options: the daemon's defaults (option_table.h), then the configuration's. */
static void session_options(struct daemon *d, const struct gp_options *cli)
{
	struct gp_options *o = &d->opt;

	gp_options_defaults(
		o, true); /* all, daemon, no capture: an always-on one would grow without bound */
	gp_daemon_config_to_options(&d->cfg, o);
	o->mode = GP_MODE_ALL;
	o->out_dir = d->current_dir;
	o->verbosity = cli->verbosity;
	o->command_line = cli->command_line;
}

int gp_daemon_run(const struct gp_options *cli)
{
	static struct daemon d; /* static: large, and the hooks hold it for the session's life */
	const struct gp_session_hooks hooks = { .ctx = &d,
						.started = on_started,
						.tick = on_tick,
						.signal = on_signal,
						.stopping = on_stopping,
						.overhead_budget = &d.cfg.overhead_budget };
	int status;

	d.config_path = cli->config_path ? cli->config_path : GP_DAEMON_DEFAULT_CONFIG;
	d.config_missing_ok = !cli->config_path;
	daemon_cli = cli;
	/* journald reads "<N>" prefixes as priorities; a person at a terminal wants none */
	gp_log_syslog_prefix = !cli->foreground && getenv("JOURNAL_STREAM") != NULL;
	if (gp_daemon_config_load(d.config_path, d.config_missing_ok, &d.cfg) ||
	    config_usable(&d, &d.cfg, NULL)) {
		gp_err("%s has errors (above): not starting", d.config_path);
		return GP_EXIT_FAILURE;
	}
	apply_log_level(&d, cli);
	d.notify = getenv("NOTIFY_SOCKET") != NULL;
	pthread_mutex_init(&d.lock, NULL);
	pthread_cond_init(&d.rendered, NULL);
	if (join_path(d.reports_dir, sizeof(d.reports_dir), d.cfg.state_dir, "reports") ||
	    join_path(d.current_dir, sizeof(d.current_dir), d.reports_dir, "current")) {
		gp_err("state_dir %s: name too long", d.cfg.state_dir);
		return GP_EXIT_FAILURE;
	}
	if (gp_prepare_out_dir(d.current_dir))
		return GP_EXIT_FAILURE;
	keep_previous_current(&d);
	if (gp_prepare_out_dir(d.current_dir))
		return GP_EXIT_FAILURE;
	session_options(&d, cli);
	gp_notice("daemon: configuration %s%s, reports in %s", d.config_path,
		  d.config_missing_ok && access(d.config_path, F_OK) ? " (missing: defaults)" : "",
		  d.reports_dir);
	status = gp_session_run_hooked(&d.opt, &hooks);
	rotate_reports(&d);
	stop_http(&d);
	free(d.page);
	gp_metrics_pool_free(d.pool);
	d.page = NULL;
	return status;
}
