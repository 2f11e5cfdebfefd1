/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nvml.c — the simulated libnvidia-ml.so.1: NVML's calls answered from the
 * board (model/gpu_board.h), the state every simulated process publishes
 * about its devices, as the real NVML answers from the kernel driver.
 *
 * What each answer is (tests/simgpu/README.md, "NVML"):
 * - memory used: every live process's charged device memory, plus
 *   SIMGPU_NVML_CTX_MB per process with a context on the device; total:
 *   SIMGPU_DEVICE_MEM_MB;
 * - utilization (GPU, memory; per process SM and memory): busy time over
 *   the window since this process's previous call of the same kind on the
 *   device (since nvmlInit for the first), in whole percent; processes'
 *   busy times are summed (a GPU time-slices contexts), at most 100;
 * - PCIe TX/RX: bytes copied device to host / host to device over the same
 *   kind of window, in KB/s (1 KB = 1024 bytes);
 * - clocks, power, temperature, throttle reasons: fixed, or knobs;
 * - knobs for failures: SIMGPU_NVML_INIT_ERROR, SIMGPU_NVML_FAIL,
 *   SIMGPU_NVML_LOST (a device that disappears).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "gpu_board.h"
#include "nvml.h"

#define NV_API	     __attribute__((visibility("default")))
#define NV_DEV_MAGIC 0x4e564d4cu

enum { C_SM, C_MEM, C_TX, C_RX, C_N };

/* A window: the counters of each process seen at its start. */
struct win {
	uint64_t t;
	int n;
	struct {
		uint32_t pid;
		uint64_t start;
		uint64_t v[C_N];
	} p[SG_BOARD_SLOTS];
};

struct nvmlDevice_st {
	uint32_t magic;
	int index;
	struct win util, tx, rx, proc;
};

/* One process's entry on a device, as read. */
struct seen {
	uint32_t pid;
	uint64_t start;
	struct sg_board_dev d;
};

struct fail {
	char name[64];
	nvmlReturn_t code;
};

static pthread_mutex_t nv_mu = PTHREAD_MUTEX_INITIALIZER;
static int inits; /* nvmlInit_v2 minus nvmlShutdown */
static struct sg_board *board;
static struct nvmlDevice_st devs[SG_BOARD_DEVS];
static int ndevs;
static uint64_t dev_mem, ctx_mem, init_ns;
static unsigned sm_clock, mem_clock, power_mw, temp_c;
static unsigned long long throttle;
static struct fail fails[16];
static int nfails;
static int lost_dev = -1;
static uint64_t lost_after_ns;
static uint64_t slot_start[SG_BOARD_SLOTS]; /* a slot's start time, read once per pid */
static uint32_t slot_pid[SG_BOARD_SLOTS];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double env_num(const char *name, double def)
{
	const char *v = getenv(name);
	char *end;
	double d;

	if (!v || !*v)
		return def;
	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || *end || d < 0) {
		fprintf(stderr, "simgpu nvml: ignoring %s=%s (not a number >= 0)\n", name, v);
		return def;
	}
	return d;
}

/* SIMGPU_NVML_FAIL=name=code[,name=code...]: those calls fail with that code. */
static void parse_fails(void)
{
	const char *spec = getenv("SIMGPU_NVML_FAIL");
	char *copy, *tok, *save = NULL;

	nfails = 0;
	if (!spec || !*spec || !(copy = strdup(spec)))
		return;
	for (tok = strtok_r(copy, ",", &save); tok && nfails < 16;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || eq == tok || (size_t)(eq - tok) >= sizeof(fails[0].name)) {
			fprintf(stderr,
				"simgpu nvml: SIMGPU_NVML_FAIL: ignoring '%s' (want name=code)\n",
				tok);
			continue;
		}
		*eq = '\0';
		strcpy(fails[nfails].name, tok);
		fails[nfails++].code = (nvmlReturn_t)atoi(eq + 1);
	}
	free(copy);
}

/* SIMGPU_NVML_LOST=DEV@MS: device DEV is lost MS milliseconds after nvmlInit. */
static void parse_lost(void)
{
	const char *spec = getenv("SIMGPU_NVML_LOST");
	unsigned d;
	double ms;

	lost_dev = -1;
	if (spec && *spec) {
		if (sscanf(spec, "%u@%lf", &d, &ms) == 2 && ms >= 0) {
			lost_dev = (int)d;
			lost_after_ns = (uint64_t)(ms * 1e6);
		} else {
			fprintf(stderr, "simgpu nvml: ignoring SIMGPU_NVML_LOST=%s (want DEV@MS)\n",
				spec);
		}
	}
}

static nvmlReturn_t knob(const char *fn)
{
	for (int i = 0; i < nfails; i++)
		if (!strcmp(fails[i].name, fn))
			return fails[i].code;
	return NVML_SUCCESS;
}

/* The calls on a device check, in order: initialised, a valid handle, lost, the failure knob. */
static nvmlReturn_t dev_check(nvmlDevice_t d, const char *fn)
{
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!d || d < devs || d >= devs + ndevs || d->magic != NV_DEV_MAGIC)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (d->index == lost_dev && now_ns() - init_ns >= lost_after_ns)
		return NVML_ERROR_GPU_IS_LOST;
	return knob(fn);
}

/* The live processes present on device dev, read under each slot's seqlock. */
static int read_board(int dev, struct seen *out)
{
	int n = 0;

	if (!board)
		return 0;
	for (int i = 0; i < SG_BOARD_SLOTS; i++) {
		struct sg_board_slot *s = &board->slot[i];
		uint32_t pid = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE), seq;
		struct seen e;

		if (!pid)
			continue;
		/* a killed process leaves its slot: not listed (its start time read once per pid) */
		if (kill((pid_t)pid, 0) && errno == ESRCH)
			continue;
		if (slot_pid[i] != pid) {
			slot_pid[i] = pid;
			slot_start[i] = sg_board_start_time((pid_t)pid);
		}
		for (int tries = 0;; tries++) {
			if (tries == 100000) /* its owner died inside a write: nothing to read */
				goto next;
			seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
			if (seq & 1)
				continue;
			e.start = s->start_time;
			memcpy(&e.d, &s->dev[dev], sizeof(e.d));
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq)
				break;
		}
		if (e.start != slot_start[i] || !e.d.present)
			continue;
		e.pid = pid;
		out[n++] = e;
next:;
	}
	return n;
}

static uint64_t counter(const struct sg_board_dev *d, int c, uint64_t t)
{
	switch (c) {
	case C_SM:
		return sg_board_busy_at(&d->busy[SG_BUSY_SM], t);
	case C_MEM:
		return sg_board_busy_at(&d->busy[SG_BUSY_MEM], t);
	case C_TX:
		return d->tx_bytes;
	default:
		return d->rx_bytes;
	}
}

/* Starts window w at t with the processes seen. */
static void win_start(struct win *w, const struct seen *s, int n, uint64_t t)
{
	w->t = t;
	w->n = n;
	for (int i = 0; i < n; i++) {
		w->p[i].pid = s[i].pid;
		w->p[i].start = s[i].start;
		for (int c = 0; c < C_N; c++)
			w->p[i].v[c] = counter(&s[i].d, c, t);
	}
}

/* Process i's growth of counter c since w's start (a process new since then: all of it). */
static uint64_t win_delta(const struct win *w, const struct seen *s, int c, uint64_t t)
{
	uint64_t v = counter(&s->d, c, t);

	for (int i = 0; i < w->n; i++)
		if (w->p[i].pid == s->pid && w->p[i].start == s->start)
			return v >= w->p[i].v[c] ? v - w->p[i].v[c] : 0;
	return v;
}

static unsigned pct(uint64_t busy, uint64_t span)
{
	uint64_t p;

	if (!span)
		return 0;
	p = (busy * 100 + span / 2) / span;
	return p > 100 ? 100 : (unsigned)p;
}

NV_API nvmlReturn_t nvmlInit_v2(void)
{
	nvmlReturn_t r = (nvmlReturn_t)(int)env_num("SIMGPU_NVML_INIT_ERROR", 0);
	struct seen s[SG_BOARD_SLOTS];
	uint64_t t;

	if (r)
		return r;
	pthread_mutex_lock(&nv_mu);
	if (inits++) {
		pthread_mutex_unlock(&nv_mu);
		return NVML_SUCCESS;
	}
	ndevs = (int)env_num("SIMGPU_DEVICES", 1);
	if (ndevs > SG_BOARD_DEVS)
		ndevs = SG_BOARD_DEVS;
	dev_mem = (uint64_t)(env_num("SIMGPU_DEVICE_MEM_MB", 16384) * 1048576.0);
	ctx_mem = (uint64_t)(env_num("SIMGPU_NVML_CTX_MB", 0) * 1048576.0);
	sm_clock = (unsigned)env_num("SIMGPU_NVML_SM_CLOCK_MHZ", 1980);
	mem_clock = (unsigned)env_num("SIMGPU_NVML_MEM_CLOCK_MHZ", 2619);
	power_mw = (unsigned)env_num("SIMGPU_NVML_POWER_MW", 350000);
	temp_c = (unsigned)env_num("SIMGPU_NVML_TEMP_C", 45);
	throttle = (unsigned long long)env_num("SIMGPU_NVML_THROTTLE", 0);
	parse_fails();
	parse_lost();
	/* no board yet: no process has used a simulated GPU; devices idle until one does */
	board = sg_board_map(1);
	init_ns = t = now_ns();
	for (int i = 0; i < ndevs; i++) {
		int n = read_board(i, s);

		devs[i].magic = NV_DEV_MAGIC;
		devs[i].index = i;
		win_start(&devs[i].util, s, n, t);
		win_start(&devs[i].tx, s, n, t);
		win_start(&devs[i].rx, s, n, t);
		win_start(&devs[i].proc, s, n, t);
	}
	pthread_mutex_unlock(&nv_mu);
	return NVML_SUCCESS;
}

NV_API nvmlReturn_t nvmlShutdown(void)
{
	pthread_mutex_lock(&nv_mu);
	if (!inits) {
		pthread_mutex_unlock(&nv_mu);
		return NVML_ERROR_UNINITIALIZED;
	}
	if (!--inits && board) {
		munmap(board, sizeof(*board));
		board = NULL;
	}
	pthread_mutex_unlock(&nv_mu);
	return NVML_SUCCESS;
}

NV_API const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_NO_PERMISSION:
		return "Insufficient Permissions";
	case NVML_ERROR_ALREADY_INITIALIZED:
		return "Already Initialized";
	case NVML_ERROR_NOT_FOUND:
		return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return "Insufficient Size";
	case NVML_ERROR_INSUFFICIENT_POWER:
		return "Insufficient External Power";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT:
		return "Timeout";
	case NVML_ERROR_IRQ_ISSUE:
		return "Interrupt request issue";
	case NVML_ERROR_LIBRARY_NOT_FOUND:
		return "NVML Shared Library Not Found";
	case NVML_ERROR_FUNCTION_NOT_FOUND:
		return "Function Not Found";
	case NVML_ERROR_CORRUPTED_INFOROM:
		return "Corrupted infoROM";
	case NVML_ERROR_GPU_IS_LOST:
		return "GPU is lost";
	case NVML_ERROR_RESET_REQUIRED:
		return "GPU requires restart";
	case NVML_ERROR_OPERATING_SYSTEM:
		return "The operating system has blocked the request.";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
		return "RM has detected an NVML/RM version mismatch.";
	case NVML_ERROR_IN_USE:
		return "In use by another client";
	case NVML_ERROR_MEMORY:
		return "Insufficient Memory";
	case NVML_ERROR_NO_DATA:
		return "No data";
	default:
		return "Unknown Error";
	}
}

NV_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!version)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (length < sizeof("580.00-simgpu"))
		return NVML_ERROR_INSUFFICIENT_SIZE;
	strcpy(version, "580.00-simgpu");
	return knob(__func__);
}

NV_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = (unsigned)ndevs;
	return knob(__func__);
}

NV_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= (unsigned)ndevs)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &devs[index];
	return dev_check(*device, __func__);
}

static nvmlReturn_t put_text(char *buf, unsigned int length, const char *text)
{
	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(text) >= length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	strcpy(buf, text);
	return NVML_SUCCESS;
}

NV_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length)
{
	nvmlReturn_t r = dev_check(d, __func__);

	return r ? r : put_text(name, length, "NVIDIA H100 80GB HBM3 (simgpu)");
}

NV_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length)
{
	nvmlReturn_t r = dev_check(d, __func__);
	char text[64];

	if (r)
		return r;
	snprintf(text, sizeof(text), "GPU-51a6c9d0-0000-4000-8000-%012x", d->index);
	return put_text(uuid, length, text);
}

NV_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *memory)
{
	nvmlReturn_t r = dev_check(d, __func__);
	struct seen s[SG_BOARD_SLOTS];
	uint64_t used = 0;
	int n;

	if (r)
		return r;
	if (!memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&nv_mu);
	n = read_board(d->index, s);
	pthread_mutex_unlock(&nv_mu);
	for (int i = 0; i < n; i++)
		used += s[i].d.mem_bytes + ctx_mem;
	memory->total = dev_mem;
	memory->used = used;
	memory->free = used < dev_mem ? dev_mem - used : 0;
	return NVML_SUCCESS;
}

NV_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
	nvmlReturn_t r = dev_check(d, __func__);
	struct seen s[SG_BOARD_SLOTS];
	uint64_t t, sm = 0, mem = 0;
	int n;

	if (r)
		return r;
	if (!u)
		return NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&nv_mu);
	t = now_ns();
	n = read_board(d->index, s);
	for (int i = 0; i < n; i++) {
		sm += win_delta(&d->util, &s[i], C_SM, t);
		mem += win_delta(&d->util, &s[i], C_MEM, t);
	}
	u->gpu = pct(sm, t - d->util.t);
	u->memory = pct(mem, t - d->util.t);
	win_start(&d->util, s, n, t);
	pthread_mutex_unlock(&nv_mu);
	return NVML_SUCCESS;
}

NV_API nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, nvmlPcieUtilCounter_t counter_id,
						unsigned int *value)
{
	nvmlReturn_t r = dev_check(d, __func__);
	struct seen s[SG_BOARD_SLOTS];
	struct win *w;
	uint64_t t, bytes = 0;
	int n, c;

	if (r)
		return r;
	if (!value ||
	    (counter_id != NVML_PCIE_UTIL_TX_BYTES && counter_id != NVML_PCIE_UTIL_RX_BYTES))
		return NVML_ERROR_INVALID_ARGUMENT;
	w = counter_id == NVML_PCIE_UTIL_TX_BYTES ? &d->tx : &d->rx;
	c = counter_id == NVML_PCIE_UTIL_TX_BYTES ? C_TX : C_RX;
	pthread_mutex_lock(&nv_mu);
	t = now_ns();
	n = read_board(d->index, s);
	for (int i = 0; i < n; i++)
		bytes += win_delta(w, &s[i], c, t);
	*value = t > w->t ? (unsigned)((double)bytes / 1024.0 / ((double)(t - w->t) / 1e9) + 0.5)
			  : 0;
	win_start(w, s, n, t);
	pthread_mutex_unlock(&nv_mu);
	return NVML_SUCCESS;
}

NV_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, nvmlClockType_t type,
					   unsigned int *clock)
{
	nvmlReturn_t r = dev_check(d, __func__);

	if (r)
		return r;
	if (!clock || type > NVML_CLOCK_VIDEO)
		return NVML_ERROR_INVALID_ARGUMENT;
	*clock = type == NVML_CLOCK_MEM ? mem_clock : type == NVML_CLOCK_VIDEO ? 1755 : sm_clock;
	return NVML_SUCCESS;
}

NV_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *power)
{
	nvmlReturn_t r = dev_check(d, __func__);

	if (r)
		return r;
	if (!power)
		return NVML_ERROR_INVALID_ARGUMENT;
	*power = power_mw;
	return NVML_SUCCESS;
}

NV_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, nvmlTemperatureSensors_t sensor,
					     unsigned int *temp)
{
	nvmlReturn_t r = dev_check(d, __func__);

	if (r)
		return r;
	if (!temp || sensor != NVML_TEMPERATURE_GPU)
		return NVML_ERROR_INVALID_ARGUMENT;
	*temp = temp_c;
	return NVML_SUCCESS;
}

NV_API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d,
							      unsigned long long *reasons)
{
	nvmlReturn_t r = dev_check(d, __func__);

	if (r)
		return r;
	if (!reasons)
		return NVML_ERROR_INVALID_ARGUMENT;
	*reasons = throttle;
	return NVML_SUCCESS;
}

NV_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
							    nvmlProcessInfo_t *infos)
{
	nvmlReturn_t r = dev_check(d, __func__);
	struct seen s[SG_BOARD_SLOTS];
	int n;

	if (r)
		return r;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&nv_mu);
	n = read_board(d->index, s);
	pthread_mutex_unlock(&nv_mu);
	if ((unsigned)n > *count || (n && !infos)) {
		*count = (unsigned)n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	*count = (unsigned)n;
	for (int i = 0; i < n; i++)
		infos[i] = (nvmlProcessInfo_t){ .pid = s[i].pid,
						.usedGpuMemory = s[i].d.mem_bytes + ctx_mem,
						.gpuInstanceId = 0xFFFFFFFFu,
						.computeInstanceId = 0xFFFFFFFFu };
	return NVML_SUCCESS;
}

/*
 * One sample per process over the window since this process's previous call on the device
 * (lastSeenTimeStamp is not needed for that: the window is the caller's interval). A NULL
 * array asks for the count and leaves the window as it is.
 */
NV_API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d,
						    nvmlProcessUtilizationSample_t *util,
						    unsigned int *count,
						    unsigned long long lastSeenTimeStamp)
{
	nvmlReturn_t r = dev_check(d, __func__);
	struct seen s[SG_BOARD_SLOTS];
	struct timespec wall;
	uint64_t t;
	int n;

	(void)lastSeenTimeStamp;
	if (r)
		return r;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&nv_mu);
	t = now_ns();
	n = read_board(d->index, s);
	if (!n) {
		pthread_mutex_unlock(&nv_mu);
		return NVML_ERROR_NOT_FOUND;
	}
	if (!util || (unsigned)n > *count) {
		*count = (unsigned)n;
		pthread_mutex_unlock(&nv_mu);
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	clock_gettime(CLOCK_REALTIME, &wall);
	for (int i = 0; i < n; i++)
		util[i] = (nvmlProcessUtilizationSample_t){
			.pid = s[i].pid,
			.timeStamp = (unsigned long long)wall.tv_sec * 1000000ull +
				     (unsigned long long)wall.tv_nsec / 1000,
			.smUtil = pct(win_delta(&d->proc, &s[i], C_SM, t), t - d->proc.t),
			.memUtil = pct(win_delta(&d->proc, &s[i], C_MEM, t), t - d->proc.t),
		};
	*count = (unsigned)n;
	win_start(&d->proc, s, n, t);
	pthread_mutex_unlock(&nv_mu);
	return NVML_SUCCESS;
}
