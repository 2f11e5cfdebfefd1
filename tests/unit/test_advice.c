/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_advice.c — the recommendation rules (docs/recommendations.md) on
 * models fed with records whose times make each formula's answer known:
 * pageable copies with a measured and an assumed ratio, synchronous copies
 * against the host's outside time, redundant synchronisations (exact),
 * small copies, launch-bound work, allocation churn, failing calls, leaks,
 * the threshold, and the ranking; the findings read as C data too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analysis/advice.h"
#include "records.h"

#define MiB    (1ull << 20)
#define DEV    0x700000000000ULL
#define PINNED 0x7f0000000000ULL
#define HEAP   0x5555aaaa0000ULL
#define STREAM 0x5555bbbb0000ULL

static struct gp_model *model(void)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	assert_non_null(m);
	assert_int_equal(gp_model_process_add(m, T_PID, "t", "t", 1, true), 0);
	c = rec_alloc(GP_API_CUDA_MALLOC, T_TID, DEV, 64 * MiB, 0);
	feed(m, &c);
	c = rec_alloc(GP_API_CUDA_MALLOC_HOST, T_TID, PINNED, 64 * MiB, 0);
	feed(m, &c);
	return m;
}

/* The findings, owned by the caller (json_decref). */
static json_t *findings(struct gp_model *m)
{
	json_t *doc = gp_report_doc(m), *r;

	assert_non_null(doc);
	r = json_incref(json_object_get(doc, "recommendations"));
	json_decref(doc);
	assert_true(json_is_array(r));
	return r;
}

static const json_t *finding(const json_t *arr, const char *id)
{
	size_t i;
	const json_t *f;

	json_array_foreach(arr, i, f)
		if (!strcmp(json_string_value(json_object_get(f, "id")), id))
			return f;
	return NULL;
}

static long long impact(const json_t *arr, const char *id)
{
	const json_t *f = finding(arr, id);

	return f ? (long long)json_integer_value(json_object_get(f, "impact_ns")) : -1;
}

static const json_t *ev(const json_t *arr, const char *id, const char *key)
{
	const json_t *f = finding(arr, id);

	assert_non_null(f);
	return json_object_get(json_object_get(f, "evidence"), key);
}

static void copies(struct gp_model *m, __u64 dst, __u64 src, __u64 bytes, __u64 dur, int n,
		   __u64 *ts)
{
	for (int i = 0; i < n; i++) {
		struct gp_api_call c =
			rec_memcpy(GP_API_CUDA_MEMCPY, dst, src, bytes, 1 /* HtoD */, 0, dur, 0);

		c.hdr.ts_ns = (*ts += dur + 1000);
		feed(m, &c);
	}
}

/* 10 pageable copies of 1 MiB at 10 GB/s and 10 pinned at 25 GB/s: r = 0.4, saves 60 % of 1 ms. */
static void pageable_measured(void **state)
{
	struct gp_model *m = model();
	__u64 ts = 10000;
	json_t *r;

	copies(m, DEV, HEAP, MiB, 104858, 10, &ts);  /* 1 MiB / 10 GB/s */
	copies(m, DEV, PINNED, MiB, 41943, 10, &ts); /* 1 MiB / 25 GB/s */
	r = findings(m);
	assert_true(llabs(impact(r, "pageable-copies") -
			  (long long)(1048580 * (1 - 41943.0 / 104858))) <= 2);
	assert_string_equal(
		json_string_value(json_object_get(
			json_array_get(ev(r, "pageable-copies", "directions"), 0), "ratio_source")),
		"measured");
	json_decref(r);
	gp_model_free(m);
}

/* Without pinned copies to compare with, the ratio is assumed (0.4). */
static void pageable_assumed(void **state)
{
	struct gp_model *m = model();
	__u64 ts = 10000;
	json_t *r;

	copies(m, DEV, HEAP, 4096, 50000, 20, &ts);
	r = findings(m);
	assert_int_equal(impact(r, "pageable-copies"),
			 (long long)(20 * 50000 * (1 - GP_ADVICE_PAGEABLE_RATIO)));
	assert_string_equal(
		json_string_value(json_object_get(
			json_array_get(ev(r, "pageable-copies", "directions"), 0), "ratio_source")),
		"assumed");
	json_decref(r);
	gp_model_free(m);
}

/* Synchronous pinned copies of 1 ms with 0.4 ms of host work between them: min(T, O). */
static void sync_copies_against_outside_time(void **state)
{
	struct gp_model *m = model();
	__u64 ts = 0;
	json_t *r;

	for (int i = 0; i < 10; i++) {
		struct gp_api_call c =
			rec_memcpy(GP_API_CUDA_MEMCPY, DEV, PINNED, MiB, 1, 0, 1000000, 0);

		c.hdr.ts_ns = 100000 + ts;
		ts += 1400000;
		feed(m, &c);
	}
	r = findings(m);
	/* first entry to last return: 9 gaps of 0.4 ms outside calls (the allocations at ts 1000 add their own) */
	assert_int_equal(json_integer_value(ev(r, "sync-copies", "host_ns")), 10000000);
	assert_int_equal(impact(r, "sync-copies"),
			 json_integer_value(ev(r, "sync-copies", "outside_ns")));
	assert_true(impact(r, "sync-copies") >= 9 * 400000 &&
		    impact(r, "sync-copies") < 9 * 400000 + 200000);
	json_decref(r);
	gp_model_free(m);
}

/* A launch, a synchronisation that waits for it, then two that wait for nothing new. */
static void redundant_syncs_exact(void **state)
{
	struct gp_model *m = model();
	const __u32 g[3] = { 1, 1, 1 };
	json_t *r;

	for (int i = 0; i < 4; i++) {
		struct gp_api_call c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 0x401100, 0x401200, g,
						  g, 0, STREAM, 0);

		feed(m, &c);
		c = rec_h(GP_API_CUDA_STREAM_SYNCHRONIZE, T_TID, STREAM, 0, 300000, 0);
		feed(m, &c);
		c = rec_h(GP_API_CUDA_STREAM_SYNCHRONIZE, T_TID, STREAM, 0, 70000, 0);
		feed(m, &c);
		c = rec_h(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_TID, 0, 0, 50000, 0);
		feed(m, &c);
	}
	r = findings(m);
	assert_int_equal(impact(r, "redundant-sync"), 4 * (70000 + 50000));
	assert_int_equal(json_integer_value(ev(r, "redundant-sync", "calls")), 8);
	/* the waiting ones are sync-wait's, which the host's few outside nanoseconds keep under the threshold */
	assert_int_equal(impact(r, "sync-wait"), -1);
	json_decref(r);
	gp_model_free(m);
}

/* 200 copies of 4 KiB at 60 us each, and 4 MiB copies of the same kind at 25 GB/s: the reference. */
static void small_copies_measured_reference(void **state)
{
	struct gp_model *m = model();
	__u64 ts = 10000;
	json_t *r;
	long long want;

	copies(m, DEV, PINNED, 4096, 60000, 200, &ts);
	copies(m, DEV, PINNED, 4 * MiB, 167772, 2, &ts);
	r = findings(m);
	want = 200 * 60000 - (long long)(200 * 4096 / (8.0 * MiB / 335544));
	assert_true(llabs(impact(r, "small-copies") - want) <= 2);
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(ev(r, "small-copies", "rows"), 0), "calls")),
			 200);
	json_decref(r);
	gp_model_free(m);
}

/* 1,600 launches of 20 us, a synchronisation every 16 that waits 10 us: H − n × H / L. */
static void launch_bound(void **state)
{
	struct gp_model *m = model();
	const __u32 g[3] = { 1, 1, 1 };
	json_t *r;

	for (int i = 0; i < 1600; i++) {
		struct gp_api_call c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 0x401100, 0x401200, g,
						  g, 0, STREAM, 0);

		c.dur_ns = 20000;
		feed(m, &c);
		if (i % 16 == 15) {
			c = rec_h(GP_API_CUDA_STREAM_SYNCHRONIZE, T_TID, STREAM, 0, 10000, 0);
			feed(m, &c);
		}
	}
	r = findings(m);
	assert_int_equal(impact(r, "launch-bound"), 1600 * 20000 - 100 * 20000);
	assert_int_equal(json_integer_value(ev(r, "launch-bound", "sync_windows")), 100);
	json_decref(r);
	gp_model_free(m);
}

/* 30 allocate/free pairs (peak 2 live with model()'s own): churn 30 − 2 + ... */
static void alloc_churn(void **state)
{
	struct gp_model *m = model();
	json_t *r;

	for (int i = 0; i < 30; i++) {
		struct gp_api_call c =
			rec_alloc(GP_API_CUDA_MALLOC, T_TID, DEV + 128 * MiB, MiB, 0);

		c.dur_ns = 1000000;
		feed(m, &c);
		c = rec_ptr(GP_API_CUDA_FREE, T_TID, DEV + 128 * MiB, 0, 0);
		c.dur_ns = 500000;
		feed(m, &c);
	}
	r = findings(m);
	/* 32 allocations (2 by model(), 100 ns each), peak 3 live: churn 29 */
	assert_int_equal(json_integer_value(ev(r, "alloc-churn", "peak_live_allocations")), 3);
	assert_int_equal(json_integer_value(ev(r, "alloc-churn", "churn")), 29);
	assert_int_equal(impact(r, "alloc-churn"), (long long)(29 * ((30 * 1000000.0 + 200) / 32)) +
							   (long long)(29 * 500000.0));
	json_decref(r);
	gp_model_free(m);
}

/* Repeated failures are reported whatever their time; a single one is not. */
static void failing_calls(void **state)
{
	struct gp_model *m = model();
	json_t *r;

	for (int i = 0; i < 3; i++) {
		struct gp_api_call c = rec_h(GP_API_CUDA_SET_DEVICE, T_TID, 99, 0, 1500, 101);

		feed(m, &c);
	}
	struct gp_api_call c = rec_ptr(GP_API_CUDA_FREE, T_TID, 0x1234, 0, 1);

	feed(m, &c);
	r = findings(m);
	assert_int_equal(impact(r, "failing-calls"), 4500);
	assert_int_equal(json_integer_value(ev(r, "failing-calls", "errors")), 3);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(ev(r, "failing-calls", "codes"), 0), "name")),
			    "cudaErrorInvalidDevice");
	json_decref(r);
	gp_model_free(m);
}

/* Below 100 us nothing is reported; a leak only once the process exited; ranking by impact. */
static void threshold_leak_and_ranking(void **state)
{
	struct gp_model *m = model();
	__u64 ts = 10000;
	json_t *r;

	copies(m, DEV, HEAP, 4096, 5000, 10, &ts); /* saves 30 us: below the threshold */
	r = findings(m);
	assert_int_equal(impact(r, "pageable-copies"), -1);
	assert_int_equal(impact(r, "leak"), -1);
	json_decref(r);

	copies(m, DEV, HEAP, 4096, 500000, 10, &ts); /* pageable: 0.6 × 5.05 ms */
	for (int i = 0; i < 3; i++) {
		struct gp_api_call c =
			rec_h(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_TID, 0, 0, 400000, 0);

		feed(m, &c); /* redundant: 1.2 ms */
	}
	assert_int_equal(gp_model_process_exited(m, T_PID, ts + 1000000), 0);
	r = findings(m);
	assert_int_equal(json_integer_value(ev(r, "leak", "bytes")), 128 * MiB);
	assert_string_equal(json_string_value(json_object_get(json_array_get(r, 0), "id")),
			    "pageable-copies");
	assert_string_equal(json_string_value(json_object_get(json_array_get(r, 1), "id")),
			    "redundant-sync");
	for (size_t i = 1; i < json_array_size(r); i++)
		assert_true(json_integer_value(
				    json_object_get(json_array_get(r, i - 1), "impact_ns")) >=
			    json_integer_value(json_object_get(json_array_get(r, i), "impact_ns")));
	assert_string_equal(
		json_string_value(json_object_get(json_array_get(r, json_array_size(r) - 1), "id")),
		"leak");
	json_decref(r);
	gp_model_free(m);
}

/* The findings as C data (analysis/finding.h), without the document: the same as report.json. */
static void findings_as_data(void **state)
{
	struct gp_model *m = model();
	struct gp_findings fs;
	const struct gp_finding *f = NULL;
	const struct gp_ev_field *dirs = NULL;
	__u64 ts = 10000;
	json_t *r;

	copies(m, DEV, HEAP, 4096, 50000, 20, &ts);
	assert_int_equal(gp_advise(m, &fs), 0);
	for (size_t i = 0; i < fs.n; i++)
		if (!strcmp(fs.v[i]->id, "pageable-copies"))
			f = fs.v[i];
	assert_non_null(f);
	assert_int_equal(f->pid, T_PID);
	assert_true(f->about & GP_ABOUT_COPIES);
	r = findings(m);
	assert_int_equal((long long)f->impact_ns, impact(r, "pageable-copies"));
	for (unsigned i = 0; i < f->evidence.n; i++)
		if (!strcmp(f->evidence.v[i].key, "directions"))
			dirs = &f->evidence.v[i];
	assert_non_null(dirs);
	assert_int_equal(dirs->kind, GP_EV_ROWS);
	assert_int_equal(dirs->rows->n, json_array_size(ev(r, "pageable-copies", "directions")));
	json_decref(r);
	gp_findings_release(&fs);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pageable_measured),
		cmocka_unit_test(pageable_assumed),
		cmocka_unit_test(sync_copies_against_outside_time),
		cmocka_unit_test(redundant_syncs_exact),
		cmocka_unit_test(small_copies_measured_reference),
		cmocka_unit_test(launch_bound),
		cmocka_unit_test(alloc_churn),
		cmocka_unit_test(failing_calls),
		cmocka_unit_test(threshold_leak_and_ranking),
		cmocka_unit_test(findings_as_data),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
