/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_config.c — the model's knobs (environment variables, read once), the
 * clock and the timing model (copy and kernel durations, launch overhead),
 * kernel-name simplification, and the optional SIMGPU_LOG call log.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "gpu_internal.h"

int sg_log_level;

static struct sg_config cfg;
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;

struct ktime {
	char *name;
	uint64_t ns;
};
static struct ktime *ktimes;
static size_t n_ktimes;

double sg_env_num(const char *name, double def, double min)
{
	const char *v = getenv(name);
	char *end;
	double d;

	if (!v || !*v)
		return def;
	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || *end || d < min) {
		fprintf(stderr, "simgpu: ignoring %s=%s (not a number >= %g)\n", name, v, min);
		return def;
	}
	return d;
}

static void parse_kernel_times(const char *spec)
{
	char *copy, *tok, *save = NULL;

	if (!spec || !*spec)
		return;
	copy = strdup(spec);
	if (!copy)
		return;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strrchr(tok, '='), *end;
		double us;
		struct ktime *n;

		if (!eq || eq == tok)
			goto bad;
		*eq = '\0';
		errno = 0;
		us = strtod(eq + 1, &end);
		if (errno || end == eq + 1 || *end || us < 0)
			goto bad;
		n = realloc(ktimes, (n_ktimes + 1) * sizeof(*ktimes));
		if (!n)
			break;
		ktimes = n;
		ktimes[n_ktimes].name = strdup(tok);
		ktimes[n_ktimes].ns = (uint64_t)(us * 1000.0 + 0.5);
		if (ktimes[n_ktimes].name)
			n_ktimes++;
		continue;
bad:
		fprintf(stderr, "simgpu: SIMGPU_KERNEL_TIMES: ignoring '%s' (want name=us)\n", tok);
	}
	free(copy);
}

static void load_config(void)
{
	static const char *const bw_names[8] = {
		"SIMGPU_BW_HTOD_PINNED_GBPS", "SIMGPU_BW_HTOD_PAGEABLE_GBPS",
		"SIMGPU_BW_DTOH_PINNED_GBPS", "SIMGPU_BW_DTOH_PAGEABLE_GBPS",
		"SIMGPU_BW_DTOD_GBPS",	      "SIMGPU_BW_PEER_GBPS",
		"SIMGPU_BW_HTOH_GBPS",	      "SIMGPU_BW_MEMSET_GBPS",
	};
	static const double bw_defaults[8] = { 25, 10, 25, 10, 1000, 50, 10, 1000 };
	int i;

	cfg.devices = (int)sg_env_num("SIMGPU_DEVICES", 1, 0);
	if (cfg.devices > SG_MAX_DEVICES)
		cfg.devices = SG_MAX_DEVICES;
	cfg.dev_mem_bytes = (uint64_t)(sg_env_num("SIMGPU_DEVICE_MEM_MB", 16384, 1) * 1048576.0);
	for (i = 0; i < 8; i++)
		cfg.gbps[i] = sg_env_num(bw_names[i], bw_defaults[i], 1e-6);
	cfg.copy_latency_ns = (uint64_t)(sg_env_num("SIMGPU_COPY_LATENCY_US", 0, 0) * 1000.0 + 0.5);
	cfg.kernel_ns = (uint64_t)(sg_env_num("SIMGPU_KERNEL_US", 20, 0) * 1000.0 + 0.5);
	cfg.launch_ns = (uint64_t)(sg_env_num("SIMGPU_LAUNCH_US", 0, 0) * 1000.0 + 0.5);
	cfg.queue_depth = (unsigned)sg_env_num("SIMGPU_QUEUE_DEPTH", 1024, 1);
	cfg.populate_bytes = (uint64_t)(sg_env_num("SIMGPU_POPULATE_MB", 1024, 0) * 1048576.0);
	cfg.init_error = (int)sg_env_num("SIMGPU_INIT_ERROR", 0, 0);
	cfg.log = (int)sg_env_num("SIMGPU_LOG", 0, 0);
	cfg.runtime_direct = (int)sg_env_num("SIMGPU_RUNTIME_DIRECT", 0, 0);
	cfg.kernel_times = getenv("SIMGPU_KERNEL_TIMES");
	parse_kernel_times(cfg.kernel_times);
	sg_log_level = cfg.log;
}

const struct sg_config *sg_config(void)
{
	pthread_once(&cfg_once, load_config);
	return &cfg;
}

void sg_log(const char *fmt, ...)
{
	char buf[1024];
	int n;
	va_list ap;

	n = snprintf(buf, sizeof(buf), "simgpu[%d/%ld]: ", (int)getpid(),
		     (long)syscall(SYS_gettid));
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	/* one write: lines of concurrent threads do not interleave */
	if (write(STDERR_FILENO, buf, (size_t)n) < 0)
		return;
}

/* ---- time ------------------------------------------------------------------ */
uint64_t sg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sg_sleep_until(uint64_t t_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t_ns / 1000000000ull),
		.tv_nsec = (long)(t_ns % 1000000000ull),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sg_spin_ns(uint64_t ns)
{
	uint64_t end_cpu, cpu;

	if (!ns)
		return;
	end_cpu = thread_cpu_ns() + ns;
	/* Spin on the (cheap) wall clock for the CPU time still owed: a thread's CPU time grows
	 * no faster than the wall clock, so this never overshoots, and a preemption only
	 * leaves some owed, spun in the next round. The CPU clock (a system call) is read once
	 * a round, so the spin stays user time. */
	while ((cpu = thread_cpu_ns()) < end_cpu) {
		uint64_t end = sg_now_ns() + (end_cpu - cpu);

		while (sg_now_ns() < end)
			__asm__ volatile("pause");
	}
}

uint64_t sg_copy_ns(enum sg_path path, uint64_t bytes)
{
	const struct sg_config *c = sg_config();

	/* GB/s = bytes per ns */
	return c->copy_latency_ns + (uint64_t)((double)bytes / c->gbps[path] + 0.5);
}

void sg_plain_name(const char *name, char *out, size_t n)
{
	const char *p = name;
	size_t o = 0;
	bool nested;

	if (!n)
		return;
	out[0] = '\0';
	if (strncmp(name, "_Z", 2) != 0)
		goto copy;
	p += 2;
	nested = *p == 'N';
	if (nested)
		p++;
	/* skip CV-qualifiers of nested member functions */
	while (nested && (*p == 'K' || *p == 'V' || *p == 'r'))
		p++;
	for (;;) {
		char *end;
		unsigned long len;

		if (*p < '0' || *p > '9')
			break;
		len = strtoul(p, &end, 10);
		if (!len || strnlen(end, len) < len)
			goto copy;
		if (o && o + 2 < n) {
			out[o++] = ':';
			out[o++] = ':';
		}
		if (o + len >= n)
			goto copy;
		memcpy(out + o, end, len);
		o += len;
		p = end + len;
		if (!nested)
			break;
	}
	if (!o)
		goto copy;
	out[o] = '\0';
	return;
copy:
	snprintf(out, n, "%s", name);
}

uint64_t sg_kernel_ns(const char *name)
{
	const struct sg_config *c = sg_config();
	char plain[256];
	const char *last;
	size_t i;

	if (!name || !n_ktimes)
		return c->kernel_ns;
	for (i = 0; i < n_ktimes; i++)
		if (!strcmp(ktimes[i].name, name))
			return ktimes[i].ns;
	sg_plain_name(name, plain, sizeof(plain));
	last = strrchr(plain, ':');
	last = last ? last + 1 : plain;
	/* "ns::slow" or just "slow" */
	for (i = 0; i < n_ktimes; i++)
		if (!strcmp(ktimes[i].name, plain) || !strcmp(ktimes[i].name, last))
			return ktimes[i].ns;
	return c->kernel_ns;
}
