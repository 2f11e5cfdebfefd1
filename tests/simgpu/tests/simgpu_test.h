/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * simgpu_test.h — helpers shared by the simulator's cmocka tests: the
 * clock, CPU time of the calling thread, tolerance checks, and a macro
 * that asserts a CUDA call's result with its name in the message.
 */
#ifndef SIMGPU_TEST_H
#define SIMGPU_TEST_H

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cuda_runtime_api.h"
#include "gpuprobed/api.h"

static inline double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#define CK(call)                                                                                 \
	do {                                                                                     \
		cudaError_t ck_e_ = (call);                                                      \
		if (ck_e_ != cudaSuccess)                                                        \
			fail_msg("%s = %d (%s)", #call, (int)ck_e_, cudaGetErrorName(ck_e_));    \
	} while (0)

#define CK_ERR(call, want)                                                                       \
	do {                                                                                     \
		cudaError_t ck_e_ = (call);                                                      \
		if (ck_e_ != (want))                                                             \
			fail_msg("%s = %d (%s), want %d (%s)", #call, (int)ck_e_,                \
				 cudaGetErrorName(ck_e_), (int)(want), cudaGetErrorName(want));  \
	} while (0)

/* |got - want| <= tol * want */
#define ASSERT_NEAR(got, want, tol)                                                              \
	do {                                                                                     \
		double an_g_ = (got), an_w_ = (want);                                            \
		if (an_g_ < an_w_ * (1.0 - (tol)) || an_g_ > an_w_ * (1.0 + (tol)))             \
			fail_msg("%s = %.3f, want %.3f +- %.0f%%", #got, an_g_, an_w_,           \
				 (tol) * 100.0);                                                 \
	} while (0)

#define ASSERT_BETWEEN(got, lo, hi)                                                              \
	do {                                                                                     \
		double ab_g_ = (got);                                                            \
		if (ab_g_ < (lo) || ab_g_ > (hi))                                                \
			fail_msg("%s = %.3f, want in [%.3f, %.3f]", #got, ab_g_, (double)(lo),   \
				 (double)(hi));                                                  \
	} while (0)

/* Runs the statements up to 3 times and checks the fastest run against
 * want +- tol ms: scheduling noise (a late wakeup on a busy or virtual
 * machine) only ever adds time, so the best run is the model's. */
#define ASSERT_TIMED(want, tol, ...)                                                             \
	do {                                                                                     \
		double at_best_ = 1e300;                                                         \
		for (int at_i_ = 0; at_i_ < 3; at_i_++) {                                        \
			double at_t0_ = now_ms(), at_d_;                                         \
			__VA_ARGS__;                                                             \
			at_d_ = now_ms() - at_t0_;                                               \
			if (at_d_ < at_best_)                                                    \
				at_best_ = at_d_;                                                \
			if (at_d_ <= (want) * (1.0 + (tol)))                                     \
				break;                                                           \
		}                                                                                \
		ASSERT_NEAR(at_best_, (want), (tol));                                            \
	} while (0)

/* TRY_TIMING(...) runs a scenario up to 3 times, until every WITHIN()
 * check in it holds; then fails with the last miss. The same reasoning:
 * late wakeups are noise, the model is never early. */
#define TRY_TIMING(...)                                                                          \
	do {                                                                                     \
		char tt_msg_[256] = "";                                                          \
		int tt_ok_ = 0;                                                                  \
		for (int tt_i_ = 0; tt_i_ < 3 && !tt_ok_; tt_i_++) {                             \
			tt_ok_ = 1;                                                              \
			__VA_ARGS__;                                                             \
		}                                                                                \
		if (!tt_ok_)                                                                     \
			fail_msg("%s", tt_msg_);                                                 \
	} while (0)

#define WITHIN(got, lo, hi)                                                                      \
	do {                                                                                     \
		double w_ = (got);                                                               \
		if (tt_ok_ && (w_ < (lo) || w_ > (hi))) {                                        \
			tt_ok_ = 0;                                                              \
			snprintf(tt_msg_, sizeof(tt_msg_), "%s = %.3f, want in [%.3f, %.3f]", #got, \
				 w_, (double)(lo), (double)(hi));                                \
		}                                                                                \
	} while (0)

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
			c->file = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
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
#define ASSERT_PUSH_RBP(p, sym)                                                                  \
	do {                                                                                     \
		const unsigned char *apr_p_ = (const unsigned char *)(p);                        \
		int apr_b_ = apr_p_[0] == 0xcc ? file_byte(apr_p_) : apr_p_[0];                  \
		if (apr_b_ != 0x55)                                                              \
			fail_msg("%s starts with %#x, not push %%rbp (0x55)", (sym), apr_b_);    \
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
	static const struct { const char *sym; int fam; } apis[] = {
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
