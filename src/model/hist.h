/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * hist.h — streaming statistics of u64 samples (durations in ns):
 * count, sum, min, max, Welford mean/variance, and a log-linear histogram
 * (HDR-style) for percentiles; plus the log2 size histogram of transfers.
 *
 * Log-linear layout: values 0..63 have one bucket each (exact); above, every
 * power-of-two range [2^e, 2^(e+1)) is split into 64 equal sub-buckets, so a
 * bucket is at most 1/64 of its lower bound wide. A percentile reports the
 * middle of its bucket, clamped to [min, max]: relative error <= 1/128 of
 * the exact nearest-rank percentile, and exact when all samples are equal.
 */
#ifndef GP_HIST_H
#define GP_HIST_H

#include <stddef.h>
#include <linux/types.h>

#define GP_HIST_SUB_BITS 6
#define GP_HIST_SUB	 (1u << GP_HIST_SUB_BITS)
#define GP_HIST_BUCKETS	 (GP_HIST_SUB + (64 - GP_HIST_SUB_BITS) * GP_HIST_SUB)

struct gp_stats {
	__u64 count;
	__u64 sum;
	__u64 min; /* meaningful when count > 0 */
	__u64 max;
	double mean; /* Welford running mean and sum of squared deviations */
	double m2;
	__u64 *buckets; /* GP_HIST_BUCKETS counters, allocated with the first sample */
};

/* Bucket index of a value, and the inclusive value range of a bucket. */
unsigned gp_hist_bucket(__u64 v);
void gp_hist_bucket_range(unsigned idx, __u64 *lo, __u64 *hi);

/*
 * Adds one sample. Returns 0, or -ENOMEM when the histogram could not be
 * allocated (count/sum/min/max/mean are still updated; percentiles then
 * fall back to the mean).
 */
int gp_stats_add(struct gp_stats *s, __u64 v);
/*
 * Adds n samples of value v at once (Welford's pairwise combine: the same
 * count, sum, mean and variance as n calls of gp_stats_add, up to rounding).
 * 0, or -ENOMEM as gp_stats_add.
 */
int gp_stats_add_n(struct gp_stats *s, __u64 v, __u64 n);
/* Nearest-rank percentile p in (0, 100]: the sample of rank ceil(p/100 * count). 0 when empty. */
__u64 gp_stats_percentile(const struct gp_stats *s, double p);
/*
 * below[i] = the samples below bounds[i] (ascending), counted from the
 * histogram in one pass: exact where a bound is a bucket's lower edge (any
 * power of two, any value up to GP_HIST_SUB). All 0 without a histogram.
 */
void gp_stats_counts_below(const struct gp_stats *s, const __u64 *bounds, size_t n, __u64 *below);
/* Sample standard deviation (n - 1 in the denominator); 0 with fewer than two samples. */
double gp_stats_stddev(const struct gp_stats *s);
void gp_stats_release(
	struct gp_stats *s); /* frees the buckets; the struct itself is the caller's */

/* log2 size histogram: bucket 0 holds 0, bucket k >= 1 holds [2^(k-1), 2^k - 1]. */
#define GP_SIZE_BUCKETS 65
unsigned gp_size_bucket(__u64 bytes);
void gp_size_bucket_range(unsigned idx, __u64 *lo, __u64 *hi);

#endif /* GP_HIST_H */
