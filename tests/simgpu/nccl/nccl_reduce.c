/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nccl_reduce.c — data types and reductions of the simulated NCCL, and the
 * ring model's byte counts and durations.
 *
 * Reductions run on the host, in rank order (rank 0's data, then rank 1's
 * combined into it, ...), so every rank computes the same bits. Integer and
 * float32/float64 data reduce in their own type (ncclAvg: the sum divided
 * by nranks, integer division for integers). float16, bfloat16 and the two
 * fp8 types are widened to float, reduced in float and rounded back once
 * (round to nearest even; fp8 e4m3 saturates at ±448, as NCCL's
 * conversions do), which is at least as accurate as a GPU reducing in the
 * narrow type.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "nccl_internal.h"

/* ---- the ring model --------------------------------------------------------------------------- */
uint64_t nc_op_bytes(enum nc_kind kind, size_t count, size_t dtsize, int nranks)
{
	uint64_t b = (uint64_t)count * dtsize;

	switch (kind) {
	case NC_ALLGATHER:
	case NC_REDUCESCATTER:
	case NC_ALLTOALL:
		return b * (uint64_t)nranks;
	default:
		return b;
	}
}

uint64_t nc_duration_ns(enum nc_kind kind, size_t count, size_t dtsize, int nranks)
{
	const struct nc_config *c = nc_config();
	double n = nranks, factor;

	switch (kind) {
	case NC_ALLREDUCE:
		factor = 2.0 * (n - 1.0) / n;
		break;
	case NC_ALLGATHER:
	case NC_REDUCESCATTER:
	case NC_ALLTOALL:
		factor = (n - 1.0) / n;
		break;
	default: /* broadcast, reduce, send, recv */
		factor = 1.0;
		break;
	}
	/* GB/s = 1e9 bytes/s = bytes per ns */
	return c->latency_ns +
	       (uint64_t)((double)nc_op_bytes(kind, count, dtsize, nranks) * factor / c->gbps +
			  0.5);
}

/* ---- types ----------------------------------------------------------------------------------- */
size_t nc_dtsize(int dt)
{
	switch (dt) {
	case ncclInt8:
	case ncclUint8:
	case ncclFloat8e4m3:
	case ncclFloat8e5m2:
		return 1;
	case ncclFloat16:
	case ncclBfloat16:
		return 2;
	case ncclInt32:
	case ncclUint32:
	case ncclFloat32:
		return 4;
	case ncclInt64:
	case ncclUint64:
	case ncclFloat64:
		return 8;
	default:
		return 0;
	}
}

const char *nc_dtname(int dt)
{
	static const char *const names[] = { "ncclInt8",     "ncclUint8",      "ncclInt32",
					     "ncclUint32",   "ncclInt64",      "ncclUint64",
					     "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
					     "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2" };

	return dt >= 0 && dt < ncclNumTypes ? names[dt] : "invalid";
}

const char *nc_opname(int op)
{
	static const char *const names[] = { "ncclSum", "ncclProd", "ncclMax", "ncclMin",
					     "ncclAvg" };

	return op >= 0 && op < ncclNumOps ? names[op] : "invalid";
}

static bool narrow_float(int dt)
{
	return dt == ncclFloat16 || dt == ncclBfloat16 || dt == ncclFloat8e4m3 ||
	       dt == ncclFloat8e5m2;
}

size_t nc_acc_size(int dt)
{
	return narrow_float(dt) ? sizeof(float) : nc_dtsize(dt);
}

/* ---- small floats ------------------------------------------------------------------------------ */
/* A binary float with ebits of exponent (bias 2^(ebits-1) - 1) and mbits of
 * mantissa; ieee: the top exponent is inf/NaN (float16, e5m2), else only
 * all-ones is NaN and overflow saturates (e4m3). */
static float small_decode(uint32_t v, int ebits, int mbits, bool ieee)
{
	uint32_t sign = v >> (ebits + mbits) & 1, e = v >> mbits & ((1u << ebits) - 1),
		 m = v & ((1u << mbits) - 1);
	int bias = (1 << (ebits - 1)) - 1;
	float f;

	if (ieee && e == (1u << ebits) - 1)
		f = m ? NAN : INFINITY;
	else if (!ieee && e == (1u << ebits) - 1 && m == (1u << mbits) - 1)
		f = NAN;
	else if (!e)
		f = ldexpf((float)m, 1 - bias - mbits);
	else
		f = ldexpf((float)(m | 1u << mbits), (int)e - bias - mbits);
	return sign ? -f : f;
}

static uint32_t small_encode(float f, int ebits, int mbits, bool ieee)
{
	int bias = (1 << (ebits - 1)) - 1, emax_field = (1 << ebits) - (ieee ? 2 : 1), ex;
	uint32_t sign = signbit(f) ? 1u << (ebits + mbits) : 0, q;
	double a = fabs((double)f), fr;
	int e;

	if (isnan(f))
		return sign | ((1u << (ebits + mbits)) - 1); /* all ones: a NaN in every format */
	if (isinf(f) && ieee)
		return sign | (uint32_t)((1 << ebits) - 1) << mbits;
	if (a == 0)
		return sign;
	fr = frexp(a, &ex);
	(void)fr;
	e = ex - 1; /* a = 1.x * 2^e */
	if (e < 1 - bias) {
		/* subnormal: units of 2^(1 - bias - mbits); may round up to the smallest normal */
		q = (uint32_t)nearbyint(ldexp(a, mbits - (1 - bias)));
		return sign | q;
	}
	q = (uint32_t)nearbyint(ldexp(a, mbits - e));
	if (q >> (mbits + 1)) { /* rounded up to the next binade */
		q >>= 1;
		e++;
	}
	if (e + bias > emax_field ||
	    (!ieee && e + bias == emax_field && (q & ((1u << mbits) - 1)) == (1u << mbits) - 1)) {
		if (ieee)
			return sign | (uint32_t)((1 << ebits) - 1) << mbits; /* inf */
		return sign | (uint32_t)emax_field << mbits |
		       ((1u << mbits) - 2); /* saturate: 448 for e4m3 */
	}
	return sign | (uint32_t)(e + bias) << mbits | (q & ((1u << mbits) - 1));
}

static float bf16_decode(uint16_t v)
{
	uint32_t u = (uint32_t)v << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static uint16_t bf16_encode(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if (isnan(f))
		return (uint16_t)(u >> 16 | 0x40);
	u += 0x7fff + (u >> 16 & 1); /* round to nearest even */
	return (uint16_t)(u >> 16);
}

static float narrow_load(const void *in, size_t i, int dt)
{
	switch (dt) {
	case ncclFloat16:
		return small_decode(((const uint16_t *)in)[i], 5, 10, true);
	case ncclBfloat16:
		return bf16_decode(((const uint16_t *)in)[i]);
	case ncclFloat8e4m3:
		return small_decode(((const uint8_t *)in)[i], 4, 3, false);
	default:
		return small_decode(((const uint8_t *)in)[i], 5, 2, true);
	}
}

static void narrow_store(void *out, size_t i, int dt, float f)
{
	switch (dt) {
	case ncclFloat16:
		((uint16_t *)out)[i] = (uint16_t)small_encode(f, 5, 10, true);
		break;
	case ncclBfloat16:
		((uint16_t *)out)[i] = bf16_encode(f);
		break;
	case ncclFloat8e4m3:
		((uint8_t *)out)[i] = (uint8_t)small_encode(f, 4, 3, false);
		break;
	default:
		((uint8_t *)out)[i] = (uint8_t)small_encode(f, 5, 2, true);
		break;
	}
}

/* ---- reductions --------------------------------------------------------------------------------- */
void nc_acc_load(void *acc, const void *in, size_t n, int dt)
{
	size_t i;

	if (!narrow_float(dt)) {
		memcpy(acc, in, n * nc_dtsize(dt));
		return;
	}
	for (i = 0; i < n; i++)
		((float *)acc)[i] = narrow_load(in, i, dt);
}

/* T the type, W the type sums and products are computed in (unsigned for
 * integers: they wrap like the GPU's, without undefined behaviour). */
#define REDUCE_LOOP(T, W, get)                                   \
	do {                                                     \
		T *a_ = acc;                                     \
		for (i = 0; i < n; i++) {                        \
			T x_ = (get);                            \
			switch (op) {                            \
			case ncclProd:                           \
				a_[i] = (T)((W)a_[i] * (W)x_);   \
				break;                           \
			case ncclMax:                            \
				a_[i] = a_[i] > x_ ? a_[i] : x_; \
				break;                           \
			case ncclMin:                            \
				a_[i] = a_[i] < x_ ? a_[i] : x_; \
				break;                           \
			default:                                 \
				a_[i] = (T)((W)a_[i] + (W)x_);   \
				break;                           \
			}                                        \
		}                                                \
	} while (0)

void nc_acc_reduce(void *acc, const void *in, size_t n, int dt, int op)
{
	size_t i;

	switch (dt) {
	case ncclInt8:
		REDUCE_LOOP(int8_t, unsigned, ((const int8_t *)in)[i]);
		break;
	case ncclUint8:
		REDUCE_LOOP(uint8_t, unsigned, ((const uint8_t *)in)[i]);
		break;
	case ncclInt32:
		REDUCE_LOOP(int32_t, uint32_t, ((const int32_t *)in)[i]);
		break;
	case ncclUint32:
		REDUCE_LOOP(uint32_t, uint32_t, ((const uint32_t *)in)[i]);
		break;
	case ncclInt64:
		REDUCE_LOOP(int64_t, uint64_t, ((const int64_t *)in)[i]);
		break;
	case ncclUint64:
		REDUCE_LOOP(uint64_t, uint64_t, ((const uint64_t *)in)[i]);
		break;
	case ncclFloat32:
		REDUCE_LOOP(float, float, ((const float *)in)[i]);
		break;
	case ncclFloat64:
		REDUCE_LOOP(double, double, ((const double *)in)[i]);
		break;
	default:
		REDUCE_LOOP(float, float, narrow_load(in, i, dt));
		break;
	}
}

#define AVG_LOOP(T)                                     \
	do {                                            \
		T *o_ = out;                            \
		for (i = 0; i < n; i++)                 \
			o_[i] = (T)(o_[i] / (T)nranks); \
	} while (0)

void nc_acc_store(void *out, const void *acc, size_t n, int dt, int op, int nranks)
{
	size_t i;

	if (narrow_float(dt)) {
		for (i = 0; i < n; i++) {
			float f = ((const float *)acc)[i];

			narrow_store(out, i, dt, op == ncclAvg ? f / (float)nranks : f);
		}
		return;
	}
	if (out != acc)
		memmove(out, acc, n * nc_dtsize(dt));
	if (op != ncclAvg)
		return;
	switch (dt) {
	case ncclInt8:
		AVG_LOOP(int8_t);
		break;
	case ncclUint8:
		AVG_LOOP(uint8_t);
		break;
	case ncclInt32:
		AVG_LOOP(int32_t);
		break;
	case ncclUint32:
		AVG_LOOP(uint32_t);
		break;
	case ncclInt64:
		AVG_LOOP(int64_t);
		break;
	case ncclUint64:
		AVG_LOOP(uint64_t);
		break;
	case ncclFloat32:
		AVG_LOOP(float);
		break;
	default:
		AVG_LOOP(double);
		break;
	}
}
