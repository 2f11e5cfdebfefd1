/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nvml_sampler.c — the NVML sampling thread (nvml_sampler.h): every
 * interval, per device, the readings over a window first (utilization,
 * PCIe throughput: the sample's time is taken right after them, and the
 * first window starts when the device is opened), then memory, clocks, power,
 * temperature, throttle reasons, and the processes with their memory and utilization.
 * A failed call is queued as an error (named and counted by the model,
 * never fatal); a device NVML says is lost is said once and not asked
 * again; a function the library lacks is said once per device.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "gpu/nvml.h"
#include "gpu/nvml_sampler.h"
#include "log.h"
#include "model/view.h"

#define MAX_PROCS 128

enum ev_kind { EV_SAMPLE, EV_PROCESS, EV_ERROR };

struct ev {
	enum ev_kind kind;
	struct gp_gpu_sample s; /* EV_SAMPLE */
	__u32 index, pid;
	__u64 ns, used;
	__s32 sm, mu;
	const char *call; /* EV_ERROR: static strings */
	int code;
};

struct dev {
	gp_nvml_device h;
	__u32 index;
	bool lost;
	__u64 last_ns;
	unsigned long long missing_said; /* bit per call index: "function not found" said */
};

struct gp_nvml_sampler {
	struct gp_nvml nv;
	pthread_t thread;
	bool running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	unsigned interval_ms;
	struct dev *devs;
	unsigned ndevs;
	struct ev *q;
	size_t nq, capq;
	bool q_failed;
	__u64 cpu_ns; /* the thread's own CPU time, read as it ends */
	__u64 samples;
	struct gp_nvml_process_info pinfo[MAX_PROCS];
	struct gp_nvml_process_util putil[MAX_PROCS];
};

static __u64 now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void push(struct gp_nvml_sampler *s, const struct ev *e)
{
	pthread_mutex_lock(&s->mu);
	if (!GP_ARRAY_GROW(s->q, s->capq, s->nq + 1, 64))
		s->q[s->nq++] = *e;
	else
		s->q_failed = true;
	pthread_mutex_unlock(&s->mu);
}

static void error(struct gp_nvml_sampler *s, struct dev *d, const char *call, int code)
{
	push(s, &(struct ev){ .kind = EV_ERROR,
			      .index = d ? d->index : GP_GPU_NO_DEVICE,
			      .call = call,
			      .code = code,
			      .ns = now_ns(CLOCK_MONOTONIC) });
	if (d && code == GP_NVML_ERROR_GPU_IS_LOST_)
		d->lost = true;
}

/* Whether a call's result is usable; a failure is queued. bit: the call's bit for "missing". */
static bool ok(struct gp_nvml_sampler *s, struct dev *d, const char *call, int bit, void *fn, int r)
{
	if (!fn) {
		if (!(d->missing_said & (1ull << bit)))
			error(s, d, call, GP_NVML_ERROR_FUNCTION_NOT_FOUND);
		d->missing_said |= 1ull << bit;
		return false;
	}
	if (r == GP_NVML_SUCCESS)
		return true;
	error(s, d, call, r);
	return false;
}

/* Calls NVML function F of device d if the library has it; false (queued) when it failed. */
#define CALL(s, d, bit, F, ...) \
	((d)->lost ? false      \
		   : ok(s, d, #F, bit, (void *)(s)->nv.F, (s)->nv.F ? (s)->nv.F(__VA_ARGS__) : 0))

static void put(struct gp_gpu_sample *g, enum gp_gpu_metric m, __u64 v)
{
	g->v[m] = v;
	g->valid |= 1u << m;
}

static void sample_processes(struct gp_nvml_sampler *s, struct dev *d, __u64 t)
{
	unsigned n = MAX_PROCS, nu = MAX_PROCS;
	int r;

	if (!CALL(s, d, 10, nvmlDeviceGetComputeRunningProcesses_v3, d->h, &n, s->pinfo))
		return;
	if (!n)
		return;
	/* no process ran on the device in the window: NOT_FOUND, not a failure */
	r = s->nv.nvmlDeviceGetProcessUtilization && !d->lost
		    ? s->nv.nvmlDeviceGetProcessUtilization(d->h, s->putil, &nu, 0)
		    : GP_NVML_ERROR_NOT_FOUND;
	if (r == GP_NVML_ERROR_NOT_FOUND)
		nu = 0;
	else if (!ok(s, d, "nvmlDeviceGetProcessUtilization", 11,
		     (void *)s->nv.nvmlDeviceGetProcessUtilization, r))
		nu = 0;
	for (unsigned i = 0; i < n && i < MAX_PROCS; i++) {
		struct ev e = { .kind = EV_PROCESS,
				.index = d->index,
				.pid = s->pinfo[i].pid,
				.ns = t,
				.used = s->pinfo[i].usedGpuMemory,
				.sm = GP_NVML_UNKNOWN_UTIL,
				.mu = GP_NVML_UNKNOWN_UTIL };

		for (unsigned j = 0; j < nu && j < MAX_PROCS; j++)
			if (s->putil[j].pid == s->pinfo[i].pid) {
				e.sm = (__s32)s->putil[j].smUtil;
				e.mu = (__s32)s->putil[j].memUtil;
			}
		push(s, &e);
	}
}

static void sample_device(struct gp_nvml_sampler *s, struct dev *d)
{
	struct ev e = { .kind = EV_SAMPLE };
	struct gp_gpu_sample *g = &e.s;
	struct gp_nvml_utilization u;
	struct gp_nvml_memory mem;
	unsigned v;
	unsigned long long reasons;
	__u64 t;

	/*
	 * The readings over a window (utilization, PCIe) first and together, and the sample's time
	 * right after them: each window ends where the sample's does, give or take the calls after
	 * it, whatever the first of them cost (the simulator reads a new process's start time in it:
	 * 0.1 ms here, 1 ms under emulation, 2 % of a 50 ms window's PCIe bytes when it came between).
	 */
	g->index = d->index;
	if (CALL(s, d, 0, nvmlDeviceGetUtilizationRates, d->h, &u)) {
		put(g, GP_GM_UTIL_GPU, u.gpu);
		put(g, GP_GM_UTIL_MEM, u.memory);
	}
	if (CALL(s, d, 5, nvmlDeviceGetPcieThroughput, d->h, GP_NVML_PCIE_TX_BYTES, &v))
		put(g, GP_GM_PCIE_TX, v);
	if (CALL(s, d, 5, nvmlDeviceGetPcieThroughput, d->h, GP_NVML_PCIE_RX_BYTES, &v))
		put(g, GP_GM_PCIE_RX, v);
	t = now_ns(CLOCK_MONOTONIC);
	g->mono_ns = t;
	g->window_ns = t - d->last_ns;
	d->last_ns = t;
	if (CALL(s, d, 1, nvmlDeviceGetMemoryInfo, d->h, &mem))
		put(g, GP_GM_MEM_USED, mem.used);
	if (CALL(s, d, 2, nvmlDeviceGetClockInfo, d->h, GP_NVML_CLOCK_SM, &v))
		put(g, GP_GM_SM_CLOCK, v);
	if (CALL(s, d, 2, nvmlDeviceGetClockInfo, d->h, GP_NVML_CLOCK_MEM, &v))
		put(g, GP_GM_MEM_CLOCK, v);
	if (CALL(s, d, 3, nvmlDeviceGetPowerUsage, d->h, &v))
		put(g, GP_GM_POWER, v);
	if (CALL(s, d, 4, nvmlDeviceGetTemperature, d->h, GP_NVML_TEMPERATURE_GPU, &v))
		put(g, GP_GM_TEMP, v);
	if (CALL(s, d, 6, nvmlDeviceGetCurrentClocksThrottleReasons, d->h, &reasons))
		put(g, GP_GM_THROTTLE, reasons);
	if (g->valid)
		push(s, &e);
	sample_processes(s, d, t);
}

static void *run(void *arg)
{
	struct gp_nvml_sampler *s = arg;
	struct timespec next;
	__u64 period = (__u64)s->interval_ms * 1000000ull;

	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		__u64 due = (__u64)next.tv_sec * 1000000000ull + (__u64)next.tv_nsec + period, now;

		next.tv_sec = (time_t)(due / 1000000000ull);
		next.tv_nsec = (long)(due % 1000000000ull);
		while (!s->stop && pthread_cond_timedwait(&s->cv, &s->mu, &next) != ETIMEDOUT)
			;
		if (s->stop)
			break;
		pthread_mutex_unlock(&s->mu);
		for (unsigned i = 0; i < s->ndevs; i++)
			if (!s->devs[i].lost)
				sample_device(s, &s->devs[i]);
		pthread_mutex_lock(&s->mu);
		s->samples++;
		now = now_ns(CLOCK_MONOTONIC);
		if (now >
		    due + period) /* a sleep far too long (a stopped machine): do not catch up */
			clock_gettime(CLOCK_MONOTONIC, &next);
	}
	s->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/*
 * The first sample's window starts here, with a reading of each windowed counter as the samples
 * make them (their results unused: a failure is said by the samples, once each): NVML's own
 * windows started at nvmlInit, before the devices were opened (0.25 ms earlier here, 0.8 % of a
 * first window's PCIe bytes lost).
 */
static void start_windows(struct gp_nvml_sampler *s, struct dev *d)
{
	struct gp_nvml_utilization u;
	unsigned v;

	if (s->nv.nvmlDeviceGetUtilizationRates)
		s->nv.nvmlDeviceGetUtilizationRates(d->h, &u);
	if (s->nv.nvmlDeviceGetPcieThroughput) {
		s->nv.nvmlDeviceGetPcieThroughput(d->h, GP_NVML_PCIE_TX_BYTES, &v);
		s->nv.nvmlDeviceGetPcieThroughput(d->h, GP_NVML_PCIE_RX_BYTES, &v);
	}
	d->last_ns = now_ns(CLOCK_MONOTONIC); /* as a sample's: after the readings */
}

static void open_devices(struct gp_nvml_sampler *s, struct gp_model *m)
{
	unsigned n = 0;
	int r = s->nv.nvmlDeviceGetCount_v2(&n);

	if (r != GP_NVML_SUCCESS) {
		error(s, NULL, "nvmlDeviceGetCount_v2", r);
		return;
	}
	s->devs = calloc(n ? n : 1, sizeof(*s->devs));
	if (!s->devs)
		return;
	for (unsigned i = 0; i < n; i++) {
		struct dev *d = &s->devs[s->ndevs];
		char name[96] = "", uuid[96] = "";
		struct gp_nvml_memory mem = { 0 };

		d->index = i;
		r = s->nv.nvmlDeviceGetHandleByIndex_v2(i, &d->h);
		if (r != GP_NVML_SUCCESS) {
			error(s, d, "nvmlDeviceGetHandleByIndex_v2", r);
			continue;
		}
		CALL(s, d, 7, nvmlDeviceGetName, d->h, name, sizeof(name));
		CALL(s, d, 8, nvmlDeviceGetUUID, d->h, uuid, sizeof(uuid));
		CALL(s, d, 1, nvmlDeviceGetMemoryInfo, d->h, &mem);
		gp_model_gpu_device(m, i, name[0] ? name : NULL, uuid[0] ? uuid : NULL, mem.total);
		start_windows(s, d);
		s->ndevs++;
	}
}

struct gp_nvml_sampler *gp_nvml_sampler_start(struct gp_model *m, const char *lib,
					      unsigned interval_ms)
{
	struct gp_nvml_sampler *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	char why[512], driver[96] = "";
	__u64 interval_ns = (__u64)interval_ms * 1000000ull;
	int err;

	if (!s)
		return NULL;
	err = gp_nvml_open(&s->nv, lib, why, sizeof(why));
	if (err) {
		gp_info("%s", why);
		gp_model_gpu_nvml(m, err == -ENOENT ? GP_NVML_ABSENT : GP_NVML_FAILED, why, NULL,
				  interval_ns, 0);
		free(s);
		return NULL;
	}
	if (s->nv.nvmlSystemGetDriverVersion)
		s->nv.nvmlSystemGetDriverVersion(driver, sizeof(driver));
	s->interval_ms = interval_ms;
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	gp_model_gpu_nvml(m, GP_NVML_OK, NULL, driver[0] ? driver : NULL, interval_ns, 0);
	open_devices(s, m);
	gp_nvml_sampler_drain(s, m); /* what failed while opening the devices */
	if (!s->ndevs) {
		gp_info("NVML: no device to sample");
		gp_nvml_sampler_stop(s, m);
		return NULL;
	}
	if ((err = pthread_create(&s->thread, NULL, run, s))) {
		gp_err("NVML sampling thread: %s", strerror(err));
		gp_nvml_sampler_stop(s, m);
		return NULL;
	}
	pthread_setname_np(s->thread, "gp-nvml");
	s->running = true;
	gp_info("NVML: sampling %u device%s every %u ms", s->ndevs, s->ndevs == 1 ? "" : "s",
		interval_ms);
	return s;
}

void gp_nvml_sampler_drain(struct gp_nvml_sampler *s, struct gp_model *m)
{
	struct ev *q;
	size_t n;

	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	q = s->q;
	n = s->nq;
	s->q = NULL;
	s->nq = s->capq = 0;
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < n; i++) {
		const struct ev *e = &q[i];

		switch (e->kind) {
		case EV_SAMPLE:
			gp_model_gpu_sample(m, &e->s);
			break;
		case EV_PROCESS:
			gp_model_gpu_process(m, e->index, e->pid, e->ns, e->used, e->sm, e->mu);
			break;
		case EV_ERROR:
			gp_model_gpu_error(m, e->index, e->call, e->code,
					   gp_nvml_error(&s->nv, e->code), e->ns);
			if (e->code == GP_NVML_ERROR_GPU_IS_LOST_)
				gp_notice("NVML: GPU %u is lost (%s): no more samples of it",
					  e->index, e->call);
			break;
		}
	}
	free(q);
}

void gp_nvml_sampler_stop(struct gp_nvml_sampler *s, struct gp_model *m)
{
	if (!s)
		return;
	if (s->running) {
		pthread_mutex_lock(&s->mu);
		s->stop = true;
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
		gp_nvml_sampler_drain(s, m);
		gp_model_gpu_nvml(m, GP_NVML_OK, m->gpus.note, m->gpus.driver, m->gpus.interval_ns,
				  s->cpu_ns);
		gp_info("NVML: %llu samples, sampling thread CPU %.3f ms",
			(unsigned long long)s->samples, (double)s->cpu_ns / 1e6);
	}
	gp_nvml_close(&s->nv);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s->devs);
	free(s->q);
	free(s);
}
