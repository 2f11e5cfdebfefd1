/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_holds.c — the resumer's check that a held pid is still the process
 * that was held: the start time read from /proc/PID/stat lines whose
 * command name holds spaces and parentheses, refused when the line is cut
 * or malformed; and its comparison with the kernel's start_boottime. The
 * reference for a live line is this process's own stat, parsed here by
 * splitting at the last ')' as proc(5) says.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "processes/holds.h"

/* fields 3..52 of a stat line after the name, with 22 (starttime) = 123456789 */
#define REST                                                                  \
	" T 1 2 3 0 -1 4194560 10 0 0 0 5 6 0 0 20 0 1 0 123456789 4096 100 " \
	"18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"

static void start_time_after_any_name(void **state)
{
	/* comm as the kernel writes it between the parentheses: any bytes, up to 15 */
	const char *names[] = {
		"w1", "a b", "x) y (z)", "", "((((", ":) 1 2 3 4 5 6 7", ") 1 2 3 ("
	};
	char line[512];
	__u64 t;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(line, sizeof(line), "4242 (%s)%s", names[i], REST);
		t = 0;
		assert_int_equal(gp_holds_stat_start(line, &t), 0);
		assert_true(t == 123456789ull);
	}
}

static void malformed_lines_are_refused(void **state)
{
	__u64 t = 7;

	assert_int_equal(gp_holds_stat_start("4242 no parenthesis at all", &t), -EINVAL);
	assert_int_equal(gp_holds_stat_start("4242 (cut) T 1 2 3", &t), -EINVAL);
	assert_int_equal(gp_holds_stat_start("4242 (w)", &t), -EINVAL);
	/* field 22 not a number */
	assert_int_equal(
		gp_holds_stat_start("1 (w) T 1 2 3 0 -1 4 10 0 0 0 5 6 0 0 20 0 1 0 x 1", &t),
		-EINVAL);
	/* two spaces: a field missing */
	assert_int_equal(
		gp_holds_stat_start("1 (w)  T 1 2 3 0 -1 4 10 0 0 0 5 6 0 0 20 0 1 0 9 1", &t),
		-EINVAL);
	assert_true(t == 7); /* untouched on refusal */
}

static void own_stat_line(void **state)
{
	char buf[1024], *last;
	unsigned long long want = 0;
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;
	__u64 t;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	last = strrchr(buf, ')');
	assert_non_null(last);
	/* the reference: fields 3.. by sscanf, 22 the twentieth */
	assert_int_equal(
		sscanf(last + 2,
		       "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
		       "%*s %*s %llu",
		       &want),
		1);
	assert_int_equal(gp_holds_stat_start(buf, &t), 0);
	assert_true(t == want);
}

static void same_start_is_exact_in_ticks(void **state)
{
	/* USER_HZ 100: a tick is 10 ms; the kernel divides, so anything within the tick matches */
	assert_true(gp_holds_same_start(12340000000ull, 1234, 100));
	assert_true(gp_holds_same_start(12349999999ull, 1234, 100));
	assert_false(
		gp_holds_same_start(12350000000ull, 1234, 100)); /* a recycled pid, a tick later */
	assert_false(gp_holds_same_start(12330000000ull, 1234, 100));
	assert_true(gp_holds_same_start(1234000000ull, 1234, 1000));
	assert_false(gp_holds_same_start(1234000000ull, 1234, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(start_time_after_any_name),
		cmocka_unit_test(malformed_lines_are_refused),
		cmocka_unit_test(own_stat_line),
		cmocka_unit_test(same_start_is_exact_in_ticks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
