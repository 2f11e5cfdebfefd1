/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_model_observers.c — a model's observers: two of them both see every
 * outermost call, scheduling slice and GPU sample in order, called in the
 * order they were added; one removed sees nothing more while the other goes
 * on; calls made inside another traced call are shown to none; the list's
 * bound.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "records.h"

#define LOG_MAX 64

/* What every observer saw, in one log: who (its id), what, and when. */
struct seen {
	int who;
	char what; /* 'c' a call, 's' a slice, 'g' a GPU sample */
	__u64 ts_ns;
	enum gp_api_id api;
};

struct log {
	struct seen v[LOG_MAX];
	size_t n;
};

struct watcher {
	int id;
	struct log *log;
};

static void put(struct watcher *w, char what, __u64 ts_ns, enum gp_api_id api)
{
	assert_true(w->log->n < LOG_MAX);
	w->log->v[w->log->n++] =
		(struct seen){ .who = w->id, .what = what, .ts_ns = ts_ns, .api = api };
}

static void on_call(void *ctx, const struct gp_call_view *v)
{
	put(ctx, 'c', v->ts_ns, v->api);
}

static void on_sched(void *ctx, const struct gp_sched_slice *s)
{
	put(ctx, 's', s->hdr.ts_ns, GP_API_INVALID);
}

static void on_gpu(void *ctx, const struct gp_gpu_sample *s)
{
	put(ctx, 'g', s->mono_ns, GP_API_INVALID);
}

static struct gp_model_observer observer_of(struct watcher *w)
{
	return (struct gp_model_observer){
		.ctx = w, .call = on_call, .sched = on_sched, .gpu = on_gpu
	};
}

static void feed_slice(struct gp_model *m, __u64 ts_ns)
{
	struct gp_sched_slice sl = { .hdr = { .type = GP_EV_SCHED_SLICE,
					      .size = sizeof(sl),
					      .tgid = T_PID,
					      .tid = T_TID,
					      .ts_ns = ts_ns },
				     .end_ns = ts_ns + 10,
				     .left = GP_SL_BLOCKED };

	assert_int_equal(gp_model_ingest(m, &sl, sizeof(sl)), 0);
}

static void feed_gpu_sample(struct gp_model *m, __u64 mono_ns)
{
	struct gp_gpu_sample s = {
		.index = 0, .valid = 1u << GP_GM_UTIL_GPU, .mono_ns = mono_ns, .window_ns = 1000
	};

	assert_int_equal(gp_model_gpu_sample(m, &s), 0);
}

/* The log holds, from *at, each of what for both observers a then b (in that order). */
static void both_saw(const struct log *log, size_t *at, int a, int b, char what, __u64 ts_ns,
		     enum gp_api_id api)
{
	const int who[2] = { a, b };

	for (int k = 0; k < 2; k++) {
		const struct seen *s = &log->v[*at];

		assert_true(*at < log->n);
		assert_int_equal(s->who, who[k]);
		assert_int_equal(s->what, what);
		assert_int_equal(s->ts_ns, ts_ns);
		assert_int_equal(s->api, api);
		(*at)++;
	}
}

static void two_observers_see_everything_in_order(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct log log = { .n = 0 };
	struct watcher first = { .id = 1, .log = &log }, second = { .id = 2, .log = &log };
	struct gp_model_observer o1 = observer_of(&first), o2 = observer_of(&second);
	struct gp_api_call c;
	size_t at = 0;

	assert_non_null(m);
	assert_int_equal(gp_model_gpu_device(m, 0, "GPU 0", "GPU-0", 1 << 30), 0);
	assert_int_equal(gp_model_add_observer(m, &o1), 0);
	assert_int_equal(gp_model_add_observer(m, &o2), 0);
	c = rec(GP_API_CUDA_MALLOC, T_PID, T_TID, 1000, 100, 0);
	feed(m, &c);
	feed_slice(m, 1200);
	c = rec(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_PID, T_TID, 1300, 50, 0);
	feed(m, &c);
	feed_gpu_sample(m, 1400);
	c = rec(GP_API_CUDA_FREE, T_PID, T_TID, 1500, 20, 0);
	feed(m, &c);

	both_saw(&log, &at, 1, 2, 'c', 1000, GP_API_CUDA_MALLOC);
	both_saw(&log, &at, 1, 2, 's', 1200, GP_API_INVALID);
	both_saw(&log, &at, 1, 2, 'c', 1300, GP_API_CUDA_DEVICE_SYNCHRONIZE);
	both_saw(&log, &at, 1, 2, 'g', 1400, GP_API_INVALID);
	both_saw(&log, &at, 1, 2, 'c', 1500, GP_API_CUDA_FREE);
	assert_int_equal(log.n, at);
	gp_model_free(m);
}

static void a_removed_observer_sees_nothing_more(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct log log = { .n = 0 };
	struct watcher first = { .id = 1, .log = &log }, second = { .id = 2, .log = &log };
	struct watcher third = { .id = 3, .log = &log };
	struct gp_model_observer o1 = observer_of(&first), o2 = observer_of(&second),
				 o3 = observer_of(&third);
	struct gp_api_call c;

	assert_non_null(m);
	assert_int_equal(gp_model_add_observer(m, &o1), 0);
	assert_int_equal(gp_model_add_observer(m, &o2), 0);
	c = rec(GP_API_CUDA_MALLOC, T_PID, T_TID, 1000, 100, 0);
	feed(m, &c);
	assert_int_equal(gp_model_remove_observer(m, &first), 0);
	assert_int_equal(gp_model_remove_observer(m, &first), -ENOENT);
	c = rec(GP_API_CUDA_FREE, T_PID, T_TID, 2000, 10, 0);
	feed(m, &c);
	/* one added after the removal comes after those still there */
	assert_int_equal(gp_model_add_observer(m, &o3), 0);
	assert_int_equal(gp_model_add_observer(m, &o1), 0);
	c = rec(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_PID, T_TID, 3000, 10, 0);
	feed(m, &c);
	assert_int_equal(gp_model_remove_observer(m, &second), 0);
	assert_int_equal(gp_model_remove_observer(m, &third), 0);
	assert_int_equal(gp_model_remove_observer(m, &first), 0);
	c = rec(GP_API_CUDA_FREE, T_PID, T_TID, 4000, 10, 0);
	feed(m, &c);

	const struct {
		int who;
		__u64 ts_ns;
	} want[] = { { 1, 1000 }, { 2, 1000 }, { 2, 2000 }, { 2, 3000 }, { 3, 3000 }, { 1, 3000 } };

	assert_int_equal(log.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < log.n; i++) {
		assert_int_equal(log.v[i].who, want[i].who);
		assert_int_equal(log.v[i].ts_ns, want[i].ts_ns);
		assert_int_equal(log.v[i].what, 'c');
	}
	gp_model_free(m);
}

/* A call made inside another traced call is its outer call's implementation: shown to none. */
static void nested_calls_are_shown_to_none(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct log log = { .n = 0 };
	struct watcher first = { .id = 1, .log = &log }, second = { .id = 2, .log = &log };
	struct gp_model_observer o1 = observer_of(&first), o2 = observer_of(&second);
	struct gp_api_call inner = rec(GP_API_CU_MEM_ALLOC, T_PID, T_TID, 1010, 50, 0);
	struct gp_api_call outer = rec(GP_API_CUDA_MALLOC, T_PID, T_TID, 1000, 100, 0);
	size_t at = 0;

	assert_non_null(m);
	assert_int_equal(gp_model_add_observer(m, &o1), 0);
	assert_int_equal(gp_model_add_observer(m, &o2), 0);
	inner.hdr.flags |= (__u32)GP_API_CUDA_MALLOC << GP_EVF_PARENT_SHIFT;
	feed(m, &inner);
	feed(m, &outer);
	both_saw(&log, &at, 1, 2, 'c', 1000, GP_API_CUDA_MALLOC);
	assert_int_equal(log.n, at);
	gp_model_free(m);
}

static void the_list_is_bounded(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct log log = { .n = 0 };
	struct watcher w[GP_MODEL_OBSERVERS_MAX + 1];

	assert_non_null(m);
	assert_int_equal(gp_model_add_observer(m, NULL), -EINVAL);
	for (int i = 0; i <= GP_MODEL_OBSERVERS_MAX; i++) {
		struct gp_model_observer o;

		w[i] = (struct watcher){ .id = i, .log = &log };
		o = observer_of(&w[i]);
		assert_int_equal(gp_model_add_observer(m, &o),
				 i < GP_MODEL_OBSERVERS_MAX ? 0 : -ENOSPC);
	}
	assert_int_equal(gp_model_remove_observer(m, &w[GP_MODEL_OBSERVERS_MAX]), -ENOENT);
	assert_int_equal(gp_model_remove_observer(m, &w[0]), 0);
	assert_int_equal(gp_model_remove_observer(m, &w[0]), -ENOENT);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_observers_see_everything_in_order),
		cmocka_unit_test(a_removed_observer_sees_nothing_more),
		cmocka_unit_test(nested_calls_are_shown_to_none),
		cmocka_unit_test(the_list_is_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
