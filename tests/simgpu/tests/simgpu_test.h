/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * simgpu_test.h — helpers shared by the simulator's cmocka tests: the
 * clocks (wall, the thread's CPU time, its run-queue wait), checks of the
 * model's own timestamps (include/simgpu.h), gates that hold a stream
 * until the test lets it go, tolerance checks, and a macro that asserts a
 * CUDA call's result with its name in the message.
 *
 * Timing checks hold on a busy machine: what the model times is checked
 * exactly on its timestamps (with a gate holding the stream while the
 * host queues, every modelled time after it follows from the model alone);
 * a host wait is checked never to return before the modelled end it waits
 * for; "does not wait" is checked against a gated stream that cannot make
 * progress; host CPU costs on the thread's CPU clock. Nothing is retried.
 */
#ifndef SIMGPU_TEST_H
#define SIMGPU_TEST_H

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cuda_runtime_api.h"
#include "gpuprobed/api.h"
#include "simgpu.h"

#define MS_NS 1000000ull

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double now_ms(void)
{
	return (double)now_ns() / 1e6;
}

static inline uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double thread_cpu_ms(void)
{
	return (double)thread_cpu_ns() / 1e6;
}

/* The calling thread's time runnable but waiting for a CPU so far (schedstat's run_delay),
 * which the kernel brings up to date whenever the thread gets a CPU back: current whenever
 * the thread reads it. */
static inline uint64_t run_delay_ns(void)
{
	unsigned long long exec = 0, delay = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "re");
	int n = f ? fscanf(f, "%llu %llu", &exec, &delay) : 0;

	if (f)
		fclose(f);
	if (n != 2)
		fail_msg("cannot read /proc/thread-self/schedstat");
	return delay;
}

/* A host thread's wall time, CPU time and run-queue wait across a call: the run-queue wait
 * and CPU time bracket the wall clock's readings. */
struct span {
	uint64_t wall, cpu, rq;
};

static inline void span_begin(struct span *s)
{
	s->rq = run_delay_ns();
	s->cpu = thread_cpu_ns();
	s->wall = now_ns();
}

static inline void span_end(struct span *s)
{
	s->wall = now_ns() - s->wall;
	s->cpu = thread_cpu_ns() - s->cpu;
	s->rq = run_delay_ns() - s->rq;
}

/* The thread slept through the call rather than spinning: its CPU time is under half the
 * time it was not waiting for a CPU (wall less run-queue wait = running + asleep; a thread
 * that spins is never asleep). Meaningful for a call that had to wait, which a gate that
 * opens only once the thread is blocked (gate_open_when_blocked) guarantees. */
#define ASSERT_SLEPT(sp)                                                                     \
	do {                                                                                 \
		const struct span *as_s_ = (sp);                                             \
		if (as_s_->wall < as_s_->rq || 2 * as_s_->cpu >= as_s_->wall - as_s_->rq)    \
			fail_msg("%s: %.3f ms of CPU time in %.3f ms of wall time (%.3f ms " \
				 "waiting for a CPU): spun rather than slept",               \
				 #sp, as_s_->cpu / 1e6, as_s_->wall / 1e6, as_s_->rq / 1e6); \
	} while (0)

#define CK(call)                                                                              \
	do {                                                                                  \
		cudaError_t ck_e_ = (call);                                                   \
		if (ck_e_ != cudaSuccess)                                                     \
			fail_msg("%s = %d (%s)", #call, (int)ck_e_, cudaGetErrorName(ck_e_)); \
	} while (0)

#define CK_ERR(call, want)                                                                      \
	do {                                                                                    \
		cudaError_t ck_e_ = (call);                                                     \
		if (ck_e_ != (want))                                                            \
			fail_msg("%s = %d (%s), want %d (%s)", #call, (int)ck_e_,               \
				 cudaGetErrorName(ck_e_), (int)(want), cudaGetErrorName(want)); \
	} while (0)

/* |got - want| <= tol * want */
#define ASSERT_NEAR(got, want, tol)                                                    \
	do {                                                                           \
		double an_g_ = (got), an_w_ = (want);                                  \
		if (an_g_ < an_w_ * (1.0 - (tol)) || an_g_ > an_w_ * (1.0 + (tol)))    \
			fail_msg("%s = %.3f, want %.3f +- %.0f%%", #got, an_g_, an_w_, \
				 (tol)*100.0);                                         \
	} while (0)

/* Exact equality of two CLOCK_MONOTONIC times or durations in ns. */
#define ASSERT_NS(got, want)                                                                   \
	do {                                                                                   \
		uint64_t ans_g_ = (got), ans_w_ = (want);                                      \
		if (ans_g_ != ans_w_)                                                          \
			fail_msg("%s = %.6f ms, want %s = %.6f ms", #got, ans_g_ / 1e6, #want, \
				 ans_w_ / 1e6);                                                \
	} while (0)

#define ASSERT_NS_GE(got, lo)                                                                   \
	do {                                                                                    \
		uint64_t ang_g_ = (got), ang_l_ = (lo);                                         \
		if (ang_g_ < ang_l_)                                                            \
			fail_msg("%s = %.6f ms, want >= %s = %.6f ms", #got, ang_g_ / 1e6, #lo, \
				 ang_l_ / 1e6);                                                 \
	} while (0)

/* ---- the model's timestamps (include/simgpu.h) ----------------------------------------- */
/* The last work item the calling thread queued (a reference for op_done/op_wait). */
static inline void *last_op(void)
{
	void *op = simgpu_op_last();

	if (!op)
		fail_msg("the thread queued no work item");
	return op;
}

/* Queues with a CUDA call and returns the item it queued. */
#define QUEUED(call)       \
	({                 \
		CK(call);  \
		last_op(); \
	})

/* The times of an item that must have ended by now (a host wait returned after it). */
static inline struct simgpu_times op_done(void *op)
{
	struct simgpu_times t;
	int err = simgpu_op_times(op, &t);

	simgpu_op_put(op);
	if (err)
		fail_msg("a work item a wait returned after has not ended (%d)", err);
	return t;
}

/* The times of an item, once it ended. */
static inline struct simgpu_times op_wait(void *op)
{
	struct simgpu_times t;
	int err = simgpu_op_wait(op, &t);

	simgpu_op_put(op);
	if (err)
		fail_msg("simgpu_op_wait = %d", err);
	return t;
}

static inline uint64_t event_time(cudaEvent_t e)
{
	uint64_t t = 0;
	int err = simgpu_event_time(e, &t);

	if (err)
		fail_msg("simgpu_event_time = %d", err);
	return t;
}

/* ---- gates ------------------------------------------------------------------------------ */
/*
 * A gate is a host function that holds its stream until the test opens it: the host queues
 * work behind it at leisure, and every modelled time after it follows from the model alone;
 * while it is closed, what waits for the stream cannot end, so a call that returns then did
 * not wait for it. A gate left closed by mistake (a call that waits for it) lets go after
 * GATE_TIMEOUT_S, and then fails the test at gate_open().
 */
#define GATE_TIMEOUT_S 60

struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int open, timed_out;
};

static inline void gate_init(struct gate *g)
{
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->open = 0;
	g->timed_out = 0;
}

static inline void gate_fn(void *arg)
{
	struct gate *g = arg;
	struct timespec dl;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += GATE_TIMEOUT_S;
	pthread_mutex_lock(&g->mu);
	while (!g->open && !g->timed_out)
		if (pthread_cond_clockwait(&g->cv, &g->mu, CLOCK_MONOTONIC, &dl) == ETIMEDOUT)
			g->timed_out = 1;
	pthread_mutex_unlock(&g->mu);
}

static inline int gate_opened(struct gate *g)
{
	int open;

	pthread_mutex_lock(&g->mu);
	open = g->open;
	pthread_mutex_unlock(&g->mu);
	return open;
}

static inline void gate_let_go(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = 1;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static inline void gate_open(struct gate *g)
{
	gate_let_go(g);
	if (g->timed_out)
		fail_msg("a gate timed out: a call waited for work queued behind it");
}

/* Queues a closed gate on s (through the runtime: handles are shared, so a CUstream too). */
static inline void *gate_queue(struct gate *g, cudaStream_t s)
{
	gate_init(g);
	return QUEUED(cudaLaunchHostFunc(s, gate_fn, g));
}

/* Opens g from a helper thread once the calling thread is blocked in the simulator (in the
 * wait it makes next; no other thread of the test waits meanwhile): that wait then lasts at
 * least until what the gate holds ends. */
struct opener {
	struct gate *g;
	pthread_t th;
};

static inline void *opener_main(void *arg)
{
	struct opener *o = arg;
	const struct timespec tick = { 0, 100000 };

	while (simgpu_host_waiters() < 1)
		nanosleep(&tick, NULL);
	gate_let_go(o->g);
	return NULL;
}

static inline void gate_open_when_blocked(struct opener *o, struct gate *g)
{
	o->g = g;
	if (pthread_create(&o->th, NULL, opener_main, o))
		fail_msg("pthread_create failed");
}

static inline void opener_join(struct opener *o)
{
	pthread_join(o->th, NULL);
	if (o->g->timed_out)
		fail_msg("a gate timed out");
}

/* The first byte of the instruction at addr as the object's file holds it. A
 * tracer running on the same machine may have put a uprobe there, which shows
 * in memory as int3 (0xcc) but leaves the file alone. -1 if unreadable. */
struct file_byte_ctx {
	uintptr_t addr;
	const char *file;
	long off;
};

static int file_byte_phdr(struct dl_phdr_info *info, size_t size, void *data)
{
	struct file_byte_ctx *c = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && c->addr >= start && c->addr - start < ph->p_filesz) {
			c->off = (long)(ph->p_offset + (c->addr - start));
			c->file = info->dlpi_name && *info->dlpi_name ? info->dlpi_name
								      : "/proc/self/exe";
			return 1;
		}
	}
	return 0;
}

static inline int file_byte(const void *addr)
{
	struct file_byte_ctx c = { (uintptr_t)addr, NULL, -1 };
	unsigned char b;
	int fd, r = -1;

	dl_iterate_phdr(file_byte_phdr, &c);
	if (c.off < 0 || (fd = open(c.file, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (pread(fd, &b, 1, c.off) == 1)
		r = b;
	close(fd);
	return r;
}

/* Fails unless the function at p starts with push %rbp (0x55): in memory,
 * or, where a uprobe sits (0xcc), in its file. */
#define ASSERT_PUSH_RBP(p, sym)                                                               \
	do {                                                                                  \
		const unsigned char *apr_p_ = (const unsigned char *)(p);                     \
		int apr_b_ = apr_p_[0] == 0xcc ? file_byte(apr_p_) : apr_p_[0];               \
		if (apr_b_ != 0x55)                                                           \
			fail_msg("%s starts with %#x, not push %%rbp (0x55)", (sym), apr_b_); \
	} while (0)

/*
 * Every row of include/gpuprobed/api.h of family fam, and every name of
 * extra, is exported by lib (at version, when not NULL: a versioned
 * library) and starts with push %rbp, so that the tracer's uprobes on it
 * are emulated and fire once per call. Returns how many were checked.
 */
static inline size_t assert_exports(void *lib, const char *libname, const char *version, int fam,
				    const char *const *extra, size_t nextra)
{
	static const struct {
		const char *sym;
		int fam;
	} apis[] = {
#define ROW(id, family, sym, shape, attr) { sym, family },
		GP_API_TABLE(ROW)
#undef ROW
	};
	size_t napis = sizeof(apis) / sizeof(apis[0]), n = 0;

	assert_non_null(lib);
	for (size_t i = 0; i < napis + nextra; i++) {
		const char *sym = i < napis ? apis[i].sym : extra[i - napis];
		const unsigned char *p;

		if (i < napis && apis[i].fam != fam)
			continue;
		p = version ? dlvsym(lib, sym, version) : dlsym(lib, sym);
		if (!p)
			fail_msg("%s is not exported by %s", sym, libname);
		ASSERT_PUSH_RBP(p, sym);
		n++;
	}
	return n;
}

#endif /* SIMGPU_TEST_H */
