/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_fds.c — what a forked helper keeps of its descriptors (fds.c):
 * exactly those asked for, unsorted, with duplicates, gaps, negative entries
 * and the standard ones among them; the rest closed, above the first
 * descriptor asked to close from. Each case runs in a child (it closes its
 * own descriptors) that reports which of its descriptors are open.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fds.h"

#define NFDS 12

/* Opens NFDS descriptors (into fds), runs the call in a child; the open ones of 0..63 as a bit mask. */
static unsigned long long kept_after(int *fds, const int *keep_idx, size_t nkeep, int extra_keep,
				     int from)
{
	int pipefd[2];
	unsigned long long mask = 0;
	pid_t pid;

	for (int i = 0; i < NFDS; i++) {
		fds[i] = open("/dev/null", O_RDONLY);
		assert_true(fds[i] >= 0 && fds[i] < 64);
	}
	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int keep[NFDS + 2];
		size_t n = 0;
		unsigned long long open_now = 0;

		for (size_t i = 0; i < nkeep; i++)
			keep[n++] = fds[keep_idx[i]];
		keep[n++] = extra_keep;
		keep[n++] = pipefd[1];
		gp_fds_close_all_but(keep, n, from);
		for (int fd = 0; fd < 64; fd++)
			if (fd != pipefd[1] && fcntl(fd, F_GETFD) >= 0)
				open_now |= 1ull << fd;
		_exit(write(pipefd[1], &open_now, sizeof(open_now)) == sizeof(open_now) ? 0 : 1);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &mask, sizeof(mask)), sizeof(mask));
	close(pipefd[0]);
	{
		int st;

		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	return mask;
}

static void close_fds(const int *fds)
{
	for (int i = 0; i < NFDS; i++)
		close(fds[i]);
}

static void keeps_exactly_those_asked_for(void **state)
{
	int fds[NFDS];
	const size_t idx[] = { 9, 2, 5, 2, 11 }; /* unsorted, one twice, the last one */
	int keep_idx[5];
	unsigned long long want = 0, got;

	for (int i = 0; i < 5; i++)
		keep_idx[i] = (int)idx[i];
	got = kept_after(fds, keep_idx, 5, -1, 0);
	for (int i = 0; i < 5; i++)
		want |= 1ull << fds[idx[i]];
	assert_int_equal(got, want); /* stdin, stdout, stderr closed too: from 0 */
	close_fds(fds);
}

static void keeps_the_standard_ones_below_from(void **state)
{
	int fds[NFDS], keep_idx[1] = { 4 };
	unsigned long long std_open = 0, got;

	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			std_open |= 1ull << fd;
	got = kept_after(fds, keep_idx, 1, 1,
			 3); /* 1 asked for too: below from, it changes nothing */
	assert_int_equal(got & 0x7ull, std_open); /* below from: as they were */
	assert_int_equal(got & ~0x7ull, 1ull << fds[4]);
	close_fds(fds);
}

static void keeps_nothing_when_asked_nothing(void **state)
{
	int fds[NFDS];

	assert_int_equal(kept_after(fds, NULL, 0, -5, 0), 0);
	close_fds(fds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(keeps_exactly_those_asked_for),
		cmocka_unit_test(keeps_the_standard_ones_below_from),
		cmocka_unit_test(keeps_nothing_when_asked_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
