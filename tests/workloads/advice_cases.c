/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * advice_cases — one workload per rule of docs/recommendations.md, each built
 * so that its rule must fire and what a fix would save is known beforehand:
 * from the simulator's timing model (the knobs the test sets in the
 * environment, read here with getenv) or from this program's own clock
 * (CLOCK_MONOTONIC around every CUDA call, CLOCK_THREAD_CPUTIME_ID for CPU
 * work, getrusage(RUSAGE_THREAD) around calls for page faults).
 *
 * Every CUDA call goes through wl.h's accounting (the report must equal it),
 * and is timed (CALL): the program knows its own "outside time" (first call's
 * entry to last call's return, minus the time in calls), its time per kind of
 * call and the page faults inside its calls. Each case starts
 * with cudaSetDevice(0) (timed: the first call, the runtime's start-up in it).
 * The reference (--ref) gets, beside wl.h's members:
 *   "advice": {"case": NAME,
 *              "expect": [{"id", ["api"], "impact_ns", "basis"}],
 *                                                rules that must fire
 *              "absent": [ids],                  rules whose condition is false
 *              "numbers": {...}}                 exact counts and own timings
 *   "calls": [[api, site, what, bytes, model_ns, t0, t1, in_t0, in_t1,
 *              error], ...]                      every call, in order ("calls_fields")
 * `basis` says where the expected impact_ns comes from ("model": the knobs;
 * "clock": the spec's formula on this program's own clock of its calls;
 * "faults": rusage; "exact": a count). "calls" is what the test bounds the
 * tracer's times with, call by call: t0/t1 (CLOCK_MONOTONIC, the tracer's
 * clock) just before and after the call, in_t0/in_t1 the same clock as the
 * simulated library read it inside the call (simgpu_call_clock: after its
 * entry probe, before its return probe), the function of this program that
 * made the call (site), what a copy moved, and model_ns, the least time the
 * simulator's model lets the call take (a copy's latency + bytes / bandwidth,
 * a launch's SIMGPU_LAUNCH_US spin; 0 when the model says nothing).
 *
 * Cases (single-threaded; the test's knobs in brackets):
 *   pageable-copies  8 sync 4 MiB HtoD copies from pageable memory and 4 from
 *                    pinned (ratio measured), 4 sync 4 MiB DtoH copies into
 *                    pageable memory (no pinned DtoH: ratio assumed 0.4)
 *                    [HtoD pageable 0.5, pinned 2, DtoH pageable 0.5 GB/s]
 *   sync-copies      30 × (sync pinned 2 MiB HtoD copy ≈ 2.1 ms, 1.5 ms of
 *                    host work) [HtoD pinned 1 GB/s]: min(ΣX, O) = O
 *   sync-wait        30 × (3 ms of host work, a 2 ms kernel, stream sync)
 *                    [advice_step=2000]: min(B, O) = B
 *   redundant-sync   1500 × (short kernel, stream sync, stream sync again),
 *                    a device sync after every 10th: 1650 redundant
 *   small-copies     200 sync pinned 16 KiB HtoD copies + 4 of 4 MiB (the
 *                    reference bandwidth, measured), 120 sync pinned 8 KiB
 *                    DtoH copies (assumed 25 GB/s) [copy latency 100 µs]
 *   launch-bound     1200 launches of a 2 µs kernel, a stream sync every 10
 *                    [launch 40 µs]
 *   alloc-churn      1 MiB kept + 40 × (cudaMalloc 1 MiB, cudaFree)
 *   cpu-feeding      25 × (a 20 µs kernel, 6 ms of CPU, stream sync: returns
 *                    at once)
 *   faults-in-calls  8 sync 1 MiB DtoH copies, each into fresh mmap'ed
 *                    memory (256 first touches inside the call)
 *   failing-calls    cudaSetDevice(99) × 30, cudaFree(bogus) × 20,
 *                    cudaMemcpy with a bad kind × 10 and a null pointer × 5
 *                    (beside 3 good copies), cudaStreamDestroy(0) once (one
 *                    failure: below the rule's minimum)
 *   leak             device, managed and pinned allocations left at exit
 *   clean            async pinned copies and 50 ms kernels on a stream, one
 *                    synchronisation: no rule may fire
 *   two-rules        pageable-copies' HtoD part with 16 pageable copies (large)
 *                    + 20 × 256 KiB alloc churn (small): both fire,
 *                    pageable-copies first
 *   pageable-idle    200 sync 8 MiB HtoD copies from pageable memory and no
 *                    kernel [HtoD pageable 8 GB/s]: the GPU idles while the
 *                    host copies (the gpu-idle-host-busy verdict), and pinning
 *                    is the fix ranked first (ratio assumed 0.4)
 *
 * usage: advice_cases --case NAME [wl options]
 */
#include <dlfcn.h>
#include <math.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "simgpu.h"
#include "wl.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)

/* "Kernels": plain host functions the simulator names with dladdr (bodies differ: no folding). */
__attribute__((noinline)) void advice_step(float *x)
{
	x[0] = 1;
}
__attribute__((noinline)) void advice_tiny(float *x)
{
	x[0] = 2;
}
__attribute__((noinline)) void advice_quick(float *x)
{
	x[0] = 3;
}
__attribute__((noinline)) void advice_feed(float *x)
{
	x[0] = 4;
}
__attribute__((noinline)) void advice_long(float *x)
{
	x[0] = 5;
}

/* ---- clocks ------------------------------------------------------------------------------ */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Host work on the wall clock (the outside time a rule compares with). */
static void spin_wall(uint64_t ns)
{
	uint64_t end = mono_ns() + ns;

	while (mono_ns() < end)
		__asm__ volatile("pause");
}

/* Host work on the thread's CPU clock (what cpu-feeding counts); returns the CPU time spent. */
static volatile double sink;
static uint64_t spin_cpu(uint64_t ns)
{
	uint64_t t0 = thread_cpu_ns(), t;
	double x = sink;

	do {
		for (int i = 0; i < 2000; i++)
			x = x * 1.0000001 + 1e-9;
		sink = x;
		t = thread_cpu_ns();
	} while (t - t0 < ns);
	return t - t0;
}

/* ---- knobs (the simulator's defaults when unset) ------------------------------------------ */
static double knob(const char *name, double dflt)
{
	const char *v = getenv(name);

	return v && *v ? atof(v) : dflt;
}

/* A kernel's modelled duration (ns): SIMGPU_KERNEL_TIMES "name=us,...", else SIMGPU_KERNEL_US. */
static uint64_t kernel_ns(const char *name)
{
	const char *v = getenv("SIMGPU_KERNEL_TIMES");
	size_t n = strlen(name);

	while (v && *v) {
		if (!strncmp(v, name, n) && v[n] == '=')
			return (uint64_t)(atof(v + n + 1) * 1000);
		v = strchr(v, ',');
		if (v)
			v++;
	}
	return (uint64_t)(knob("SIMGPU_KERNEL_US", 20) * 1000);
}

/* The least a synchronous copy lasts in the model: its latency + bytes / its path's bandwidth. */
static uint64_t copy_model_ns(bool htod, const char *host, size_t bytes)
{
	bool pinned = !strcmp(host, "pinned");
	double bw;

	if (htod && pinned)
		bw = knob("SIMGPU_BW_HTOD_PINNED_GBPS", 25);
	else if (htod)
		bw = knob("SIMGPU_BW_HTOD_PAGEABLE_GBPS", 10);
	else if (pinned)
		bw = knob("SIMGPU_BW_DTOH_PINNED_GBPS", 25);
	else
		bw = knob("SIMGPU_BW_DTOH_PAGEABLE_GBPS", 10);

	/* as the simulator rounds them; the transfer part rounded down (GB/s = bytes per ns) */
	return (uint64_t)(knob("SIMGPU_COPY_LATENCY_US", 0) * 1000 + 0.5) + (uint64_t)(bytes / bw);
}

/* ---- the program's own clock of its calls ------------------------------------------------- */
#define MAX_FAULT_APIS 16

static struct {
	uint64_t first, last; /* entry of the first call, return of the last */
	uint64_t inside;      /* time in calls */
	uint64_t dur;	      /* the last call's */
	unsigned long calls;
	long minflt,
		majflt; /* inside the calls (every call: the runtime's start-up can fault too) */
	struct {
		const char *api;
		long minflt, majflt;
	} by_api[MAX_FAULT_APIS];
	int napis;
	int live, peak; /* allocations live at once, every kind (alloc-churn's peak) */
	unsigned long allocs, frees;
	uint64_t alloc_ns, free_ns;
} ck;

/*
 * Every call as this program saw it (the reference's "calls"): the test finds the tracer's slice of
 * each in trace.json. CLOCK_MONOTONIC (the tracer's clock) just before and just after the call, t0
 * and t1, hold the tracer's slice of it: its entry probe fires after t0, its return probe before
 * t1. The simulated library's own reads of that clock inside the call (simgpu_call_clock), in0
 * and in1, lie inside the slice: after the entry probe, before the return probe.
 */
struct ck_call {
	const char *api;   /* the function called */
	const char *site;  /* the function of this program that called it */
	const char *what;  /* copies: "HtoD pageable", "DtoH pinned", ... (+ " async"); else "" */
	uint64_t bytes;	   /* copies: bytes moved */
	uint64_t model_ns; /* the least time the simulator's model lets the call take, else 0 */
	uint64_t t0, t1;   /* CLOCK_MONOTONIC */
	uint64_t in0, in1; /* the same clock read inside the call by the simulator */
	int err;
};

static struct {
	struct ck_call *v;
	size_t n, cap;
	const char *what; /* the next call's, set by note() */
	uint64_t bytes, model_ns;
} calls;

/* What the next call is (copies, launches), and the least time the model gives it. */
static void note(const char *what, uint64_t bytes, uint64_t model_ns)
{
	calls.what = what;
	calls.bytes = bytes;
	calls.model_ns = model_ns;
}

static void ck_note(const char *api, const char *site, cudaError_t err, uint64_t t0, uint64_t t1,
		    const struct simgpu_call_clock *in, const struct rusage *r0,
		    const struct rusage *r1)
{
	struct ck_call *c;

	if (!wl.counting)
		goto out;
	if (!ck.calls++)
		ck.first = t0;
	ck.last = t1;
	ck.dur = t1 - t0;
	ck.inside += ck.dur;
	if (calls.n == calls.cap) {
		calls.cap = calls.cap ? 2 * calls.cap : 1024;
		calls.v = realloc(calls.v, calls.cap * sizeof(*calls.v));
		if (!calls.v)
			wl_die("out of memory");
	}
	c = &calls.v[calls.n++];
	*c = (struct ck_call){ .api = api,
			       .site = site,
			       .what = calls.what ? calls.what : "",
			       .bytes = calls.bytes,
			       .model_ns = err ? 0 : calls.model_ns,
			       .t0 = t0,
			       .t1 = t1,
			       .in0 = in->first_ns,
			       .in1 = in->last_ns,
			       .err = (int)err };
	{
		long mi = r1->ru_minflt - r0->ru_minflt, ma = r1->ru_majflt - r0->ru_majflt;
		int i;

		ck.minflt += mi;
		ck.majflt += ma;
		for (i = 0; i < ck.napis && strcmp(ck.by_api[i].api, api); i++)
			;
		if (i == ck.napis) {
			if (i == MAX_FAULT_APIS)
				wl_die("too many APIs");
			ck.by_api[ck.napis++].api = api;
		}
		ck.by_api[i].minflt += mi;
		ck.by_api[i].majflt += ma;
	}
out:
	note(NULL, 0, 0);
}

/* The simulator's clock of the thread's calls (simgpu.h; libsimgpu.so, loaded with libcudart). */
static int (*call_clock)(struct simgpu_call_clock *);

/*
 * CALL(fn, args...): the call, timed alone (the accounting after it), then counted by wl.h.
 * Evaluates to its cudaError_t; ck.dur is its duration. The simulator's clock of the thread's
 * calls is started over before it (whatever an earlier untimed call left there is not this
 * call's), and read after it: every export of the simulated libraries reads it at least once.
 */
#define CALL(fn, ...)                                                             \
	({                                                                        \
		struct rusage _r0, _r1;                                           \
		struct simgpu_call_clock _in;                                     \
		uint64_t _t0, _t1;                                                \
		cudaError_t _e;                                                   \
		call_clock(&_in);                                                 \
		getrusage(RUSAGE_THREAD, &_r0);                                   \
		_t0 = mono_ns();                                                  \
		_e = fn(__VA_ARGS__);                                             \
		_t1 = mono_ns();                                                  \
		getrusage(RUSAGE_THREAD, &_r1);                                   \
		if (call_clock(&_in))                                             \
			wl_die("%s: the simulator read no clock inside it", #fn); \
		ck_note(#fn, __func__, _e, _t0, _t1, &_in, &_r0, &_r1);           \
		wl_count(#fn, _e);                                                \
	})

/* O: the time between the first call's entry and the last call's return spent outside calls. */
static uint64_t outside_ns(void)
{
	return ck.calls ? ck.last - ck.first - ck.inside : 0;
}

/* ---- the reference's "advice" member -------------------------------------------------------- */
static const char *case_name;
static char adv_expect[4096], adv_absent[1024], adv_numbers[16384];

static void append(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	va_start(ap, fmt);
	if ((size_t)vsnprintf(buf + len, size - len, fmt, ap) >= size - len)
		wl_die("reference buffer too small");
	va_end(ap);
}

/*
 * A rule that must fire (api: failing-calls' API, else NULL), and what this program expects it to
 * save: impact_ns, from its basis ("model": the knobs; "clock": the rule's formula on this
 * program's clock of its calls; "faults": rusage; "exact": a count). The test bounds the finding
 * with the calls themselves (the reference's "calls"); this figure is what it prints beside.
 */
static void expect(const char *id, const char *api, double impact_ns, const char *basis)
{
	append(adv_expect, sizeof(adv_expect), "%s{\"id\": \"%s\", ", *adv_expect ? ", " : "", id);
	if (api)
		append(adv_expect, sizeof(adv_expect), "\"api\": \"%s\", ", api);
	append(adv_expect, sizeof(adv_expect), "\"impact_ns\": %.0f, \"basis\": \"%s\"}", impact_ns,
	       basis);
}

/* Rules whose condition this case makes false (whatever the timing). */
static void absent(const char *ids)
{
	append(adv_absent, sizeof(adv_absent), "%s", ids);
}

/* One member of "numbers": key and a JSON value. */
static void number(const char *key, const char *fmt, ...)
{
	char val[4096];
	va_list ap;

	va_start(ap, fmt);
	if ((size_t)vsnprintf(val, sizeof(val), fmt, ap) >= sizeof(val))
		wl_die("value too long");
	va_end(ap);
	append(adv_numbers, sizeof(adv_numbers), "%s\"%s\": %s", *adv_numbers ? ", " : "", key,
	       val);
}

static void write_advice(FILE *f)
{
	fprintf(f,
		",\n  \"advice\": {\"case\": \"%s\",\n    \"expect\": [%s],\n    \"absent\": [%s],\n"
		"    \"numbers\": {%s}}",
		case_name, adv_expect, adv_absent, adv_numbers);
	fputs(",\n  \"calls_fields\": [\"api\", \"site\", \"what\", \"bytes\", \"model_ns\", "
	      "\"t0\", \"t1\", \"in_t0\", \"in_t1\", \"error\"],\n  \"calls\": [",
	      f);
	for (size_t i = 0; i < calls.n; i++) {
		const struct ck_call *c = &calls.v[i];

		fprintf(f,
			"%s\n    [\"%s\", \"%s\", \"%s\", %llu, %llu, %llu, %llu, %llu, %llu, %d]",
			i ? "," : "", c->api, c->site, c->what, (unsigned long long)c->bytes,
			(unsigned long long)c->model_ns, (unsigned long long)c->t0,
			(unsigned long long)c->t1, (unsigned long long)c->in0,
			(unsigned long long)c->in1, c->err);
	}
	fputs("\n  ]", f);
}

/* The calls common to every case, accounted and timed. */
#define NOINLINE static __attribute__((noinline))

NOINLINE void *dev_alloc(size_t bytes)
{
	void *p = NULL;

	if (CALL(cudaMalloc, &p, bytes) != cudaSuccess)
		wl_die("cudaMalloc(%zu) failed", bytes);
	wl_allocated(WL_DEVICE, p, bytes);
	ck.allocs++;
	ck.alloc_ns += ck.dur;
	if (++ck.live > ck.peak)
		ck.peak = ck.live;
	return p;
}

NOINLINE void *pinned_alloc(size_t bytes)
{
	void *p = NULL;

	if (CALL(cudaMallocHost, &p, bytes) != cudaSuccess)
		wl_die("cudaMallocHost(%zu) failed", bytes);
	wl_allocated(WL_PINNED, p, bytes);
	ck.allocs++;
	ck.alloc_ns += ck.dur;
	if (++ck.live > ck.peak)
		ck.peak = ck.live;
	memset(p, 3, bytes);
	return p;
}

NOINLINE void *managed_alloc(size_t bytes)
{
	void *p = NULL;

	if (CALL(cudaMallocManaged, &p, bytes, cudaMemAttachGlobal) != cudaSuccess)
		wl_die("cudaMallocManaged(%zu) failed", bytes);
	wl_allocated(WL_MANAGED, p, bytes);
	ck.allocs++;
	ck.alloc_ns += ck.dur;
	if (++ck.live > ck.peak)
		ck.peak = ck.live;
	return p;
}

NOINLINE void dev_free(void *p)
{
	if (CALL(cudaFree, p) != cudaSuccess)
		wl_die("cudaFree failed");
	wl_freed(p);
	ck.frees++;
	ck.free_ns += ck.dur;
	ck.live--;
}

NOINLINE void pinned_free(void *p)
{
	if (CALL(cudaFreeHost, p) != cudaSuccess)
		wl_die("cudaFreeHost failed");
	wl_freed(p);
	ck.frees++;
	ck.free_ns += ck.dur;
	ck.live--;
}

/* A synchronous copy; returns its duration. host: "pinned" or "pageable". */
NOINLINE uint64_t copy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
		       const char *host)
{
	bool htod = kind == cudaMemcpyHostToDevice;

	note(htod ? (strcmp(host, "pinned") ? "HtoD pageable" : "HtoD pinned")
		  : (strcmp(host, "pinned") ? "DtoH pageable" : "DtoH pinned"),
	     bytes, copy_model_ns(htod, host, bytes));
	if (CALL(cudaMemcpy, dst, src, bytes, kind) != cudaSuccess)
		wl_die("cudaMemcpy of %zu bytes failed", bytes);
	wl_transfer(kind == cudaMemcpyHostToDevice ? "HtoD" : "DtoH", host, true, bytes);
	wl_stream_work(NULL, false, WL_COPY, bytes);
	return ck.dur;
}

NOINLINE void copy_async(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
			 cudaStream_t s)
{
	note(kind == cudaMemcpyHostToDevice ? "HtoD pinned async" : "DtoH pinned async", bytes, 0);
	if (CALL(cudaMemcpyAsync, dst, src, bytes, kind, s) != cudaSuccess)
		wl_die("cudaMemcpyAsync failed");
	wl_transfer(kind == cudaMemcpyHostToDevice ? "HtoD" : "DtoH", "pinned", false, bytes);
	wl_stream_work(s, false, WL_COPY, bytes);
}

/* Returns the launch call's duration. */
NOINLINE uint64_t launch(void (*k)(float *), const char *name, void *arg, cudaStream_t s)
{
	void *args[] = { &arg };

	/* the simulator spins SIMGPU_LAUNCH_US on the wall clock inside each launch */
	note("", 0, (uint64_t)(knob("SIMGPU_LAUNCH_US", 0) * 1000 + 0.5));
	if (CALL(cudaLaunchKernel, (const void *)k, (dim3){ 1, 1, 1 }, (dim3){ 32, 1, 1 }, args, 0,
		 s) != cudaSuccess)
		wl_die("launch of %s failed", name);
	wl_launched(name);
	wl_stream_work(s, false, WL_KERNEL, 0);
	return ck.dur;
}

NOINLINE uint64_t stream_sync(cudaStream_t s)
{
	if (CALL(cudaStreamSynchronize, s) != cudaSuccess)
		wl_die("cudaStreamSynchronize failed");
	wl_stream_work(s, false, WL_SYNC, 0);
	return ck.dur;
}

/* The same, from a function of its own (a body of its own too: not folded into stream_sync): the
 * synchronisation that waits for nothing new. */
NOINLINE uint64_t stream_sync_again(cudaStream_t s)
{
	if (CALL(cudaStreamSynchronize, s) != cudaSuccess)
		wl_die("the second cudaStreamSynchronize failed");
	wl_stream_work(s, false, WL_SYNC, 0);
	return ck.dur;
}

NOINLINE uint64_t device_sync(void)
{
	if (CALL(cudaDeviceSynchronize) != cudaSuccess)
		wl_die("cudaDeviceSynchronize failed");
	return ck.dur;
}

/* A synchronous memset: the legacy stream's first work (its worker starts), before anything timed. */
NOINLINE void warm_legacy(void *dev)
{
	if (CALL(cudaMemset, dev, 0, 4 * KiB) != cudaSuccess)
		wl_die("cudaMemset failed");
	wl_memset(4 * KiB);
	wl_stream_work(NULL, false, WL_MEMSET, 4 * KiB);
}

NOINLINE cudaStream_t stream_create(void)
{
	cudaStream_t s = NULL;

	if (CALL(cudaStreamCreate, &s) != cudaSuccess)
		wl_die("cudaStreamCreate failed");
	return s;
}

NOINLINE void stream_destroy(cudaStream_t s)
{
	CALL(cudaStreamDestroy, s);
}

/* The spec's alloc-churn formula on this program's own clock of its allocations and frees. */
static double churn_formula(unsigned long churn)
{
	double avg_alloc = ck.allocs ? (double)ck.alloc_ns / ck.allocs : 0;
	double avg_free = ck.frees ? (double)ck.free_ns / ck.frees : 0;

	return churn * avg_alloc + (double)(ck.frees < churn ? ck.frees : churn) * avg_free;
}

/* ---- the cases ------------------------------------------------------------------------------- */
#define ABSENT_TIMELESS "\"failing-calls\", \"leak\""

/*
 * pageable-copies: HtoD measured (pageable and pinned sync copies of the same size, so the wake-up
 * cost of each call cancels), DtoH assumed (no pinned DtoH copy at all).
 * The HtoD part (also two-rules'): returns its expected saving from the model.
 */
NOINLINE double pageable_htod(int npg, int npin, size_t bytes)
{
	double bw_pg = knob("SIMGPU_BW_HTOD_PAGEABLE_GBPS", 10),
	       bw_pin = knob("SIMGPU_BW_HTOD_PINNED_GBPS", 25);
	char *pageable = malloc(bytes), *pinned, *dev;
	uint64_t pg_ns = 0, pin_ns = 0;
	double r, model;

	if (!pageable)
		wl_die("out of memory");
	memset(pageable, 1, bytes); /* touched: no page faults inside the copies */
	dev = dev_alloc(bytes);
	pinned = pinned_alloc(bytes);
	warm_legacy(dev);
	for (int i = 0; i < npin; i++)
		pin_ns += copy(dev, pinned, bytes, cudaMemcpyHostToDevice, "pinned");
	for (int i = 0; i < npg; i++)
		pg_ns += copy(dev, pageable, bytes, cudaMemcpyHostToDevice, "pageable");
	pinned_free(pinned);
	dev_free(dev);
	free(pageable);
	/* bytes / (GB/s) = ns */
	model = (double)npg * bytes * (1 / bw_pg - 1 / bw_pin);
	r = ((double)npg * bytes / pg_ns) / ((double)npin * bytes / pin_ns);
	number("htod",
	       "{\"calls\": %d, \"bytes\": %llu, \"host_ns\": %llu, \"pinned_calls\": %d, "
	       "\"pinned_bytes\": %llu, \"pinned_host_ns\": %llu, \"ratio\": %.6f, \"model_ns\": %.0f, "
	       "\"formula_ns\": %.0f, \"pageable_gbps_knob\": %g, \"pinned_gbps_knob\": %g}",
	       npg, (unsigned long long)npg * bytes, (unsigned long long)pg_ns, npin,
	       (unsigned long long)npin * bytes, (unsigned long long)pin_ns, r, model,
	       pg_ns * (1 - (r < 1 ? r : 1)), bw_pg, bw_pin);
	return model;
}

/*
 * n synchronous copies of bytes between a pageable host buffer (touched first: its faults come
 * here, not inside the copies) and a device buffer, one way, no pinned copy beside them (the
 * ratio assumed 0.4); the number "htod" or "dtoh"; returns their time on this program's clock.
 */
static uint64_t pageable_only(bool htod, int n, size_t bytes)
{
	char *host = malloc(bytes), *dev;
	uint64_t ns = 0;

	if (!host)
		wl_die("out of memory");
	memset(host, 2, bytes);
	dev = dev_alloc(bytes);
	for (int i = 0; i < n; i++)
		ns += htod ? copy(dev, host, bytes, cudaMemcpyHostToDevice, "pageable")
			   : copy(host, dev, bytes, cudaMemcpyDeviceToHost, "pageable");
	dev_free(dev);
	free(host);
	number(htod ? "htod" : "dtoh",
	       "{\"calls\": %d, \"bytes\": %llu, \"host_ns\": %llu, \"ratio\": 0.4}", n,
	       (unsigned long long)n * bytes, (unsigned long long)ns);
	return ns;
}

NOINLINE void case_pageable_copies(void)
{
	double htod = pageable_htod(8, 4, 4 * MiB);
	uint64_t dtoh_ns = pageable_only(false, 4, 4 * MiB);

	/* HtoD from the model; DtoH: the assumed ratio on the program's own clock of those copies */
	expect("pageable-copies", NULL, htod + dtoh_ns * (1 - 0.4), "model");
	absent("\"small-copies\", \"launch-bound\", \"alloc-churn\", \"redundant-sync\", \"sync-wait\", " ABSENT_TIMELESS);
}

NOINLINE void case_sync_copies(void)
{
	const size_t bytes = 2 * MiB;
	const int n = 30;
	void *dev = dev_alloc(bytes), *host = pinned_alloc(bytes);
	uint64_t copy_ns = 0;

	for (int i = 0; i < n; i++) {
		copy_ns += copy(dev, host, bytes, cudaMemcpyHostToDevice, "pinned");
		spin_wall(1500000);
	}
	pinned_free(host);
	dev_free(dev);
	number("calls", "%d", n);
	number("bytes", "%llu", (unsigned long long)n * bytes);
	number("copy_host_ns", "%llu", (unsigned long long)copy_ns);
	number("outside_ns", "%llu", (unsigned long long)outside_ns());
	number("model_copy_ns", "%.0f",
	       n * (knob("SIMGPU_COPY_LATENCY_US", 0) * 1000 +
		    bytes / knob("SIMGPU_BW_HTOD_PINNED_GBPS", 25)));
	expect("sync-copies", NULL, fmin((double)copy_ns, (double)outside_ns()), "clock");
	absent("\"pageable-copies\", \"small-copies\", \"launch-bound\", \"alloc-churn\", \"redundant-sync\", "
	       "\"sync-wait\", " ABSENT_TIMELESS);
}

NOINLINE void case_sync_wait(void)
{
	const int n = 30;
	cudaStream_t s = stream_create();
	void *dev = dev_alloc(64 * KiB);
	uint64_t sync_ns = 0;

	for (int i = 0; i < n; i++) {
		spin_wall(3000000);
		launch(advice_step, "advice_step", dev, s);
		sync_ns += stream_sync(s);
	}
	dev_free(dev);
	stream_destroy(s);
	number("sync_calls", "%d", n);
	number("sync_host_ns", "%llu", (unsigned long long)sync_ns);
	number("outside_ns", "%llu", (unsigned long long)outside_ns());
	number("kernel_ns", "%llu", (unsigned long long)kernel_ns("advice_step"));
	expect("sync-wait", NULL, fmin((double)sync_ns, (double)outside_ns()), "clock");
	absent("\"pageable-copies\", \"small-copies\", \"launch-bound\", \"alloc-churn\", \"redundant-sync\", "
	       "\"sync-copies\", " ABSENT_TIMELESS);
}

NOINLINE void case_redundant_sync(void)
{
	const int n = 1500, dev_every = 10;
	cudaStream_t s = stream_create();
	void *dev = dev_alloc(64 * KiB);
	uint64_t red_stream_ns = 0, red_dev_ns = 0;
	int ndev = 0;

	for (int i = 0; i < n; i++) {
		launch(advice_tiny, "advice_tiny", dev, s);
		stream_sync(s);
		red_stream_ns += stream_sync_again(s);
		if (i % dev_every == dev_every - 1) {
			red_dev_ns += device_sync();
			ndev++;
		}
	}
	dev_free(dev);
	stream_destroy(s);
	number("redundant_calls", "%d", n + ndev);
	number("by_api",
	       "{\"cudaStreamSynchronize\": {\"calls\": %d, \"host_ns\": %llu}, "
	       "\"cudaDeviceSynchronize\": {\"calls\": %d, \"host_ns\": %llu}}",
	       n, (unsigned long long)red_stream_ns, ndev, (unsigned long long)red_dev_ns);
	number("waiting_sync_calls", "%d", n);
	expect("redundant-sync", NULL, (double)(red_stream_ns + red_dev_ns), "clock");
	absent("\"pageable-copies\", \"small-copies\", \"launch-bound\", \"alloc-churn\", \"sync-copies\", " ABSENT_TIMELESS);
}

NOINLINE void case_small_copies(void)
{
	const int nsmall = 200, nlarge = 4, ndtoh = 120;
	const size_t small = 16 * KiB, large = 4 * MiB, dsmall = 8 * KiB;
	void *dev = dev_alloc(large), *host = pinned_alloc(large);
	uint64_t small_ns = 0, large_ns = 0, dtoh_ns = 0;
	double ref_gbps, row1, row2, lat = knob("SIMGPU_COPY_LATENCY_US", 0) * 1000;

	warm_legacy(dev);
	for (int i = 0; i < nlarge; i++)
		large_ns += copy(dev, host, large, cudaMemcpyHostToDevice, "pinned");
	for (int i = 0; i < nsmall; i++)
		small_ns += copy((char *)dev + (i % 64) * small, (char *)host + (i % 64) * small,
				 small, cudaMemcpyHostToDevice, "pinned");
	for (int i = 0; i < ndtoh; i++)
		dtoh_ns += copy((char *)host + (i % 64) * dsmall, (char *)dev + (i % 64) * dsmall,
				dsmall, cudaMemcpyDeviceToHost, "pinned");
	pinned_free(host);
	dev_free(dev);
	/* the spec's formula on this program's clock: the HtoD row's reference is its large copies */
	ref_gbps = (double)nlarge * large / large_ns;
	row1 = fmax(0, small_ns - nsmall * small / ref_gbps);
	row2 = fmax(0, dtoh_ns - ndtoh * dsmall / 25.0);
	number("rows",
	       "[{\"direction\": \"HtoD\", \"host_memory\": \"pinned\", \"sync\": true, \"calls\": %d, "
	       "\"bytes\": %llu, \"host_ns\": %llu, \"reference_gbps\": %.4f, \"reference_source\": \"measured\", "
	       "\"large_calls\": %d, \"large_bytes\": %llu, \"large_host_ns\": %llu, \"impact_ns\": %.0f}, "
	       "{\"direction\": \"DtoH\", \"host_memory\": \"pinned\", \"sync\": true, \"calls\": %d, "
	       "\"bytes\": %llu, \"host_ns\": %llu, \"reference_gbps\": 25, \"reference_source\": \"assumed\", "
	       "\"impact_ns\": %.0f}]",
	       nsmall, (unsigned long long)nsmall * small, (unsigned long long)small_ns, ref_gbps,
	       nlarge, (unsigned long long)nlarge * large, (unsigned long long)large_ns, row1,
	       ndtoh, (unsigned long long)ndtoh * dsmall, (unsigned long long)dtoh_ns, row2);
	/* the model's part of it: the copy latency each small copy pays (the rest is per-call waking) */
	number("model_ns", "%.0f", (nsmall + ndtoh) * lat);
	expect("small-copies", NULL, row1 + row2, "clock");
	absent("\"pageable-copies\", \"launch-bound\", \"alloc-churn\", \"redundant-sync\", \"sync-wait\", " ABSENT_TIMELESS);
}

NOINLINE void case_launch_bound(void)
{
	const int n = 1200, k = 10;
	cudaStream_t s = stream_create();
	void *dev = dev_alloc(64 * KiB);
	uint64_t launch_ns = 0, sync_ns = 0;

	for (int i = 0; i < n; i++) {
		launch_ns += launch(advice_quick, "advice_quick", dev, s);
		if (i % k == k - 1)
			sync_ns += stream_sync(s);
	}
	dev_free(dev);
	stream_destroy(s);
	number("launches", "%d", n);
	number("sync_windows", "%d", n / k);
	number("launch_host_ns", "%llu", (unsigned long long)launch_ns);
	number("sync_host_ns", "%llu", (unsigned long long)sync_ns);
	number("model_ns", "%.0f", n * knob("SIMGPU_LAUNCH_US", 0) * 1000 * (1 - 1.0 / k));
	expect("launch-bound", NULL, launch_ns * (1 - (double)(n / k) / n), "clock");
	absent("\"pageable-copies\", \"small-copies\", \"alloc-churn\", \"redundant-sync\", \"sync-copies\", " ABSENT_TIMELESS);
}

/* n × (cudaMalloc, cudaFree) of `bytes`. */
NOINLINE void churn(int n, size_t bytes)
{
	for (int i = 0; i < n; i++)
		dev_free(dev_alloc(bytes));
}

NOINLINE void case_alloc_churn(void)
{
	const int n = 40;
	void *kept = dev_alloc(1 * MiB);

	churn(n, 1 * MiB);
	dev_free(kept);
	number("alloc_calls", "%lu", ck.allocs);
	number("free_calls", "%lu", ck.frees);
	number("peak_live_allocations", "%d", ck.peak);
	number("churn", "%lu", ck.allocs - ck.peak);
	number("alloc_host_ns", "%llu", (unsigned long long)ck.alloc_ns);
	number("free_host_ns", "%llu", (unsigned long long)ck.free_ns);
	expect("alloc-churn", NULL, churn_formula(ck.allocs - ck.peak), "clock");
	absent("\"pageable-copies\", \"small-copies\", \"launch-bound\", \"redundant-sync\", \"sync-copies\", "
	       "\"sync-wait\", " ABSENT_TIMELESS);
}

NOINLINE void case_cpu_feeding(void)
{
	const int n = 25;
	cudaStream_t s = stream_create();
	void *dev = dev_alloc(64 * KiB);
	uint64_t cpu = 0, sync_ns = 0;

	/* the kernel is done long before the host has the next step ready: the sync returns at once */
	for (int i = 0; i < n; i++) {
		launch(advice_feed, "advice_feed", dev, s);
		cpu += spin_cpu(6000000);
		sync_ns += stream_sync(s);
	}
	dev_free(dev);
	stream_destroy(s);
	number("threads", "1");
	number("work_cpu_ns", "%llu", (unsigned long long)cpu);
	number("sync_host_ns", "%llu", (unsigned long long)sync_ns);
	number("outside_ns", "%llu", (unsigned long long)outside_ns());
	/* an upper bound: the thread's other CPU time outside calls (start-up, exit) adds a little */
	expect("cpu-feeding", NULL, (double)cpu, "clock");
	absent("\"pageable-copies\", \"small-copies\", \"launch-bound\", \"alloc-churn\", \"redundant-sync\", "
	       "\"sync-copies\", " ABSENT_TIMELESS);
}

NOINLINE void case_faults_in_calls(void)
{
	const int n = 8;
	const size_t bytes = 1 * MiB;
	void *dev;

	dev = dev_alloc(bytes);
	for (int i = 0; i < n; i++) {
		void *fresh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				   -1, 0);

		if (fresh == MAP_FAILED)
			wl_die("mmap failed");
		madvise(fresh, bytes, MADV_NOHUGEPAGE); /* one fault per 4 KiB page */
		copy(fresh, dev, bytes, cudaMemcpyDeviceToHost, "pageable");
		munmap(fresh, bytes);
	}
	dev_free(dev);
	number("minor_faults", "%ld", ck.minflt);
	number("major_faults", "%ld", ck.majflt);
	number("copy_pages", "%llu",
	       (unsigned long long)(n * bytes / (size_t)sysconf(_SC_PAGESIZE)));
	{
		char by[2048] = "";

		for (int i = 0; i < ck.napis; i++)
			append(by, sizeof(by),
			       "%s\"%s\": {\"minor_faults\": %ld, \"major_faults\": %ld}",
			       i ? ", " : "", ck.by_api[i].api, ck.by_api[i].minflt,
			       ck.by_api[i].majflt);
		number("by_api", "{%s}", by);
	}
	/*
	 * minor faults × 1 µs, and when a call took a major fault (the runtime's start-up may, reading
	 * a library evicted from the page cache) the off-CPU time in calls (the test bounds it)
	 */
	expect("faults-in-calls", NULL, ck.minflt * 1000.0, "faults");
	absent("\"small-copies\", \"launch-bound\", \"alloc-churn\", \"redundant-sync\", \"sync-wait\", " ABSENT_TIMELESS);
}

NOINLINE void case_failing_calls(void)
{
	const int nset = 30, nfree = 20, nkind = 10, nnull = 5, ngood = 3;
	void *dev = dev_alloc(64 * KiB), *host = pinned_alloc(64 * KiB);
	uint64_t set_ns = 0, free_ns = 0, copy_ns = 0;

	for (int i = 0; i < nset; i++) {
		if (CALL(cudaSetDevice, 99) == cudaSuccess)
			wl_die("cudaSetDevice(99) succeeded");
		set_ns += ck.dur;
	}
	for (int i = 0; i < nfree; i++) {
		if (CALL(cudaFree, (void *)(uintptr_t)(0x1000 + 16 * i)) == cudaSuccess)
			wl_die("cudaFree of a bogus pointer succeeded");
		free_ns += ck.dur;
	}
	for (int i = 0; i < ngood; i++)
		copy(dev, host, 4 * KiB, cudaMemcpyHostToDevice, "pinned");
	for (int i = 0; i < nkind; i++) {
		if (CALL(cudaMemcpy, dev, host, 4 * KiB, (enum cudaMemcpyKind)7) == cudaSuccess)
			wl_die("cudaMemcpy of kind 7 succeeded");
		copy_ns += ck.dur;
	}
	for (int i = 0; i < nnull; i++) {
		if (CALL(cudaMemcpy, NULL, host, 4 * KiB, cudaMemcpyHostToDevice) == cudaSuccess)
			wl_die("cudaMemcpy to NULL succeeded");
		copy_ns += ck.dur;
	}
	if (CALL(cudaStreamDestroy, (cudaStream_t)0) == cudaSuccess) /* one failure: no finding */
		wl_die("cudaStreamDestroy(0) succeeded");
	pinned_free(host);
	dev_free(dev);
	number("failing",
	       "{\"cudaSetDevice\": {\"calls\": %d, \"errors\": %d, \"error_host_ns\": %llu, "
	       "\"codes\": {\"101\": %d}}, "
	       "\"cudaFree\": {\"calls\": %d, \"errors\": %d, \"error_host_ns\": %llu, \"codes\": {\"1\": %d}}, "
	       "\"cudaMemcpy\": {\"calls\": %d, \"errors\": %d, \"error_host_ns\": %llu, "
	       "\"codes\": {\"1\": %d, \"21\": %d}}}",
	       nset + 1, nset, (unsigned long long)set_ns, nset, nfree + 1, nfree,
	       (unsigned long long)free_ns, nfree, ngood + nkind + nnull, nkind + nnull,
	       (unsigned long long)copy_ns, nnull, nkind);
	number("single_failure", "\"cudaStreamDestroy\"");
	expect("failing-calls", "cudaSetDevice", (double)set_ns, "clock");
	expect("failing-calls", "cudaFree", (double)free_ns, "clock");
	expect("failing-calls", "cudaMemcpy", (double)copy_ns, "clock");
	absent("\"pageable-copies\", \"small-copies\", \"launch-bound\", \"alloc-churn\", \"redundant-sync\", "
	       "\"sync-wait\", \"leak\"");
}

NOINLINE void case_leak(void)
{
	void *a = dev_alloc(3 * MiB), *b = dev_alloc(1 * MiB), *c = dev_alloc(512 * KiB);
	void *m = managed_alloc(256 * KiB), *h = pinned_alloc(128 * KiB),
	     *g = pinned_alloc(64 * KiB);

	dev_free(c);
	pinned_free(g);
	(void)a, (void)b, (void)m, (void)h; /* left allocated at exit */
	number("allocations", "4");
	number("bytes", "%llu", 4 * MiB + 256 * KiB + 128 * KiB);
	number("by_kind",
	       "{\"device\": {\"allocations\": 2, \"bytes\": %llu}, "
	       "\"managed\": {\"allocations\": 1, \"bytes\": %llu}, "
	       "\"pinned\": {\"allocations\": 1, \"bytes\": %llu}}",
	       4 * MiB, 256 * KiB, 128 * KiB);
	expect("leak", NULL, 0, "exact");
	absent("\"pageable-copies\", \"small-copies\", \"launch-bound\", \"alloc-churn\", \"redundant-sync\", "
	       "\"sync-copies\", \"sync-wait\", \"failing-calls\"");
}

NOINLINE void case_clean(void)
{
	const size_t bytes = 256 * KiB;
	cudaStream_t s = stream_create();
	void *dev = dev_alloc(bytes), *host = pinned_alloc(bytes);

	for (int i = 0; i < 4; i++) {
		copy_async(dev, host, bytes, cudaMemcpyHostToDevice, s);
		launch(advice_long, "advice_long", dev, s);
	}
	copy_async(host, dev, bytes, cudaMemcpyDeviceToHost, s);
	stream_sync(s);
	pinned_free(host);
	dev_free(dev);
	stream_destroy(s);
	number("outside_ns", "%llu", (unsigned long long)outside_ns());
	number("kernel_ns", "%llu", (unsigned long long)kernel_ns("advice_long"));
}

NOINLINE void case_two_rules(void)
{
	double htod = pageable_htod(16, 4, 4 * MiB);
	uint64_t a0 = ck.alloc_ns, f0 = ck.free_ns;

	churn(20, 256 * KiB);
	number("alloc_calls", "%lu", ck.allocs);
	number("free_calls", "%lu", ck.frees);
	number("peak_live_allocations", "%d", ck.peak);
	number("churn", "%lu", ck.allocs - ck.peak);
	number("churn_loop_ns", "%llu", (unsigned long long)(ck.alloc_ns - a0 + ck.free_ns - f0));
	expect("pageable-copies", NULL, htod, "model");
	expect("alloc-churn", NULL, churn_formula(ck.allocs - ck.peak), "clock");
	absent("\"small-copies\", \"launch-bound\", \"redundant-sync\", \"sync-wait\", " ABSENT_TIMELESS);
}

NOINLINE void case_pageable_idle(void)
{
	uint64_t ns = pageable_only(true, 200, 8 * MiB);

	expect("pageable-copies", NULL, ns * (1 - 0.4), "clock");
	absent("\"small-copies\", \"launch-bound\", \"alloc-churn\", \"redundant-sync\", \"sync-wait\", "
	       "\"cpu-feeding\", " ABSENT_TIMELESS);
}

static const struct {
	const char *name;
	void (*run)(void);
} cases[] = {
	{ "pageable-copies", case_pageable_copies },
	{ "sync-copies", case_sync_copies },
	{ "sync-wait", case_sync_wait },
	{ "redundant-sync", case_redundant_sync },
	{ "small-copies", case_small_copies },
	{ "launch-bound", case_launch_bound },
	{ "alloc-churn", case_alloc_churn },
	{ "cpu-feeding", case_cpu_feeding },
	{ "faults-in-calls", case_faults_in_calls },
	{ "failing-calls", case_failing_calls },
	{ "leak", case_leak },
	{ "clean", case_clean },
	{ "two-rules", case_two_rules },
	{ "pageable-idle", case_pageable_idle },
};

int main(int argc, char **argv)
{
	void (*run)(void) = NULL;
	uint64_t t0;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--case") && i + 1 < argc)
			case_name = argv[++i];
	for (size_t i = 0; case_name && i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(cases[i].name, case_name))
			run = cases[i].run;
	if (!run) {
		fprintf(stderr,
			"usage: advice_cases --case NAME [--ref FILE] [--wait] [--hold]\ncases:");
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			fprintf(stderr, " %s", cases[i].name);
		fputc('\n', stderr);
		return 2;
	}
	/*
	 * Which rules a case makes fire must not depend on what else the machine runs, and
	 * several depend on the CPU this program gets: cpu-feeding needs its thread on a CPU
	 * 30 % of its wall time; redundant-sync and faults-in-calls an impact of 1 % of the
	 * process's wall time; clean an outside time under it; two-rules pinned copies and
	 * allocations that stay cheap beside the pageable copies. So every case runs at a
	 * real-time priority, which no other load shares (a nice value would not do: the
	 * scheduler shares a CPU between sessions and cgroups first); the simulator's threads,
	 * started later, inherit it. It is 2: above the tracer, which the test runs at 1 (the
	 * tracer's own work waits for the case; the case waits for the tracer only where the
	 * tracer stops it, at an exec or a CUDA library's mapping). The test bounds the tracer's
	 * times with the clocks read around and inside each call, whatever the load.
	 */
	if (sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ .sched_priority = 2 }))
		wl_die("SCHED_FIFO: %s (run as root)", strerror(errno));
	wl_init(argc, argv);
	wl.ref_extra = write_advice;
	call_clock = (int (*)(struct simgpu_call_clock *))dlsym(RTLD_DEFAULT, "simgpu_call_clock");
	if (!call_clock)
		wl_die("no simgpu_call_clock: the simulator's libraries are needed");
	wl_begin();
	t0 = mono_ns();
	if (CALL(cudaSetDevice, 0) != cudaSuccess) /* wl_set_device(), timed: the first call */
		wl_die("cudaSetDevice(0) failed");
	wl_device = 0;
	run();
	number("all_calls", "%lu", ck.calls);
	number("inside_ns", "%llu", (unsigned long long)ck.inside);
	number("case_wall_ns", "%llu", (unsigned long long)(mono_ns() - t0));
	wl_end();
	return 0;
}
