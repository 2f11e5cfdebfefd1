/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* test_duty.c — the overhead budget's duty cycle: schedule, plan, weights (collect/duty.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "collect/duty.h"

#define P   GP_DUTY_PERIOD_NS
#define T0  1000000000000ull /* the session's start, monotonic ns */
#define HIT 1000.0	     /* ns per probe hit in these tests */

/* No budget: the hot probes stay attached, nothing is scaled, the cost is still estimated. */
static void no_budget_always_attached(void **state)
{
	struct gp_duty d;

	gp_duty_init(&d, 0, HIT, T0);
	assert_int_equal(gp_duty_due(&d, T0 + P / 2), GP_DUTY_NOTHING);
	assert_int_equal(gp_duty_due(&d, T0 + P), GP_DUTY_PERIOD_END);
	gp_duty_next_period(&d, T0 + P, 0, 0, 0);
	/* 1e6 hot hits and 1e5 others in 1 s of traced CPU: 1.1 s of probes at 1 us... on 11 s of CPU */
	gp_duty_next_period(&d, T0 + 2 * P, 1000000, 100000, 11000000000ull);
	assert_true(d.duty == 1.0);
	assert_true(d.open);
	assert_int_equal(gp_duty_due(&d, T0 + 2 * P + P - 1), GP_DUTY_NOTHING);
	assert_float_equal(d.report.overhead, 0.1, 1e-9);
	assert_float_equal(d.report.overhead_full, 0.1, 1e-9);
	assert_float_equal(gp_duty_weight(&d, T0, T0 + 3 * P), 1.0, 0);
	assert_int_equal(d.report.periods, 2);
	assert_int_equal(d.report.sampled_periods, 0);
	assert_int_equal(d.report.attached_ns, 2 * P);
}

/*
 * Over budget: the plan keeps cost / (work + cost) at the budget, the window
 * closes on time, and what was counted in it is weighed up to the period.
 */
static void budget_plans_the_window_and_weighs(void **state)
{
	struct gp_duty d;
	__u64 t = T0 + P, work = 10000000000ull; /* 10 s of traced CPU that is not the probes' */
	double f, cost;

	gp_duty_init(&d, 0.01, HIT, T0);
	gp_duty_next_period(&d, t, 0, 0, 0);
	/* all attached: 1e6 hot hits (1 s of cost) + 1e4 other hits (10 ms) */
	gp_duty_next_period(&d, t + P, 1000000, 10000, work + 1010000000ull);
	t += P;
	/* cost(f) = (1e4 + f x 1e6) x 1 us and cost / (work + cost) = 1 %: f = (0.01/0.99 x 1e7 - 1e4) / 1e6 */
	f = (0.01 / 0.99 * 1e7 - 1e4) / 1e6;
	assert_float_equal(d.duty, f, 1e-9);
	assert_float_equal(d.report.overhead_full, 1.01e9 / (1.01e9 + 1e10), 1e-9);
	assert_int_equal(gp_duty_due(&d, t + (__u64)(f * P) - 1000), GP_DUTY_NOTHING);
	assert_int_equal(gp_duty_due(&d, t + (__u64)(f * P) + 1000), GP_DUTY_CLOSE);
	gp_duty_closed(&d,
		       t + P / 10); /* closed at 100 ms (late: the weight uses the real window) */
	assert_false(d.open);
	assert_int_equal(gp_duty_due(&d, t + P / 2), GP_DUTY_NOTHING);
	/* traced the whole period: 10 x what was counted */
	assert_float_equal(gp_duty_weight(&d, T0, t + P), 10.0, 1e-9);
	/* admitted at 50 ms: 950 ms over 50 ms */
	assert_float_equal(gp_duty_weight(&d, t + P / 20, t + P), 19.0, 1e-9);
	/* exited at 40 ms, inside the window: seen all along */
	assert_float_equal(gp_duty_weight(&d, T0, t + P / 25), 1.0, 0);
	/* admitted after the window: nothing was counted that a weight could scale */
	assert_float_equal(gp_duty_weight(&d, t + P / 5, t + P), 1.0, 0);
	assert_int_equal(gp_duty_due(&d, t + P), GP_DUTY_PERIOD_END);
	/* this period at f = 0.1: 1e5 hot hits seen stand for 1e6; the plan stays where it was */
	gp_duty_next_period(&d, t + P, 1000000 + 100000, 20000, work + 110000000ull);
	assert_true(d.open);
	assert_int_equal(d.on_start, t + P);
	assert_float_equal(d.duty, f, 1e-9);
	cost = (1e5 + 1e4) * HIT;
	assert_float_equal(d.report.overhead, cost / (1e10 + cost), 1e-9);
	assert_int_equal(d.report.sampled_periods, 1);
	assert_int_equal(d.report.attached_ns, 2 * P + P / 10);
}

/* The others alone over the budget: the shortest window, and counted as over budget. */
static void over_budget_at_the_shortest_window(void **state)
{
	struct gp_duty d;

	gp_duty_init(&d, 0.001, HIT, T0);
	gp_duty_next_period(&d, T0 + P, 0, 0, 0);
	gp_duty_next_period(&d, T0 + 2 * P, 1000000, 1000000, 3000000000ull);
	assert_float_equal(d.duty, GP_DUTY_MIN, 0);
	assert_int_equal(d.report.over_budget, 1);
	/* a reload to no budget: attached all the time from the next period */
	gp_duty_set_budget(&d, 0);
	gp_duty_next_period(&d, T0 + 3 * P, 1000000 + 20000, 2000000, 3000000000ull);
	assert_float_equal(d.duty, 1.0, 0);
	assert_float_equal(d.report.budget, 0, 0);
}

/* No traced CPU in a period (nothing ran): the plan is kept, nothing is estimated. */
static void idle_period_keeps_the_plan(void **state)
{
	struct gp_duty d;

	gp_duty_init(&d, 0.01, 0, T0);
	assert_float_equal(d.hit_ns, GP_PROBE_HIT_COST_NS, 0);
	gp_duty_next_period(&d, T0 + P, 0, 0, 0);
	gp_duty_next_period(&d, T0 + 2 * P, 0, 0, 0);
	assert_float_equal(d.duty, 1.0, 0);
	assert_true(d.report.overhead < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_budget_always_attached),
		cmocka_unit_test(budget_plans_the_window_and_weighs),
		cmocka_unit_test(over_budget_at_the_shortest_window),
		cmocka_unit_test(idle_period_keeps_the_plan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
