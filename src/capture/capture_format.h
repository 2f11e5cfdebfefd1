/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture_format.h — the layout of a capture file (.gpz), documented in
 * docs/capture-format.md. Little-endian, fixed-width fields.
 *
 *   file header (struct gp_cap_header, header_size bytes)
 *   chunk*      (struct gp_cap_chunk, then zlen bytes of compressed data:
 *                zlib for magic GP_CAP_CHUNK_MAGIC, zstd for GP_CAP_CHUNK_ZSTD)
 *
 * A chunk's data inflates to raw_len bytes of whole operations, none split
 * across chunks:  u16 op (enum gp_model_op), u16 zero, u32 len, len bytes of
 * payload (model_ops.h). The last chunk of a complete capture ends with a
 * GP_MOP_END operation; a capture without one was cut.
 */
#ifndef GP_CAPTURE_FORMAT_H
#define GP_CAPTURE_FORMAT_H

#include <linux/types.h>

#define GP_CAP_MAGIC	   "GPUPRBZ\n" /* 8 bytes, no NUL */
/* 2: zstd chunks (zlib at the ring's pace took ~40 % of the reader's CPU); 1: zlib only */
#define GP_CAP_VERSION	   2	       /* this reader reads versions 1..GP_CAP_VERSION */
#define GP_CAP_CHUNK_MAGIC 0x435a5047u /* "GPZC": zlib data */
#define GP_CAP_CHUNK_ZSTD  0x535a5047u /* "GPZS": zstd data (version 2 on) */
#define GP_CAP_CHUNK_RAW   262144u     /* a chunk holds this much (more for one larger operation) */
#define GP_CAP_OP_MAX	   (64u << 20) /* no operation is larger: a bigger length is corruption */

struct gp_cap_header {
	char magic[8];	     /* GP_CAP_MAGIC */
	__u32 version;	     /* GP_CAP_VERSION */
	__u32 header_size;   /* sizeof(struct gp_cap_header) when written; readers skip the rest */
	__u32 abi_version;   /* GP_ABI_VERSION of the ring-buffer records inside (events.h) */
	__u32 flags;	     /* 0 */
	__u64 start_mono_ns; /* the session's start: CLOCK_MONOTONIC ... */
	__u64 start_realtime_ns; /* ... and the same instant in CLOCK_REALTIME (wall time = mono + this - that) */
	__u64 start_boottime_ns; /* ... and in CLOCK_BOOTTIME */
	char tool_version[32];	 /* NUL-padded */
	char hostname[64];
	char kernel_release[64];
	__u32 header_crc; /* crc32 of every byte above */
	__u32 pad;
};

struct gp_cap_chunk {
	__u32 magic;	/* GP_CAP_CHUNK_MAGIC */
	__u32 seq;	/* 0, 1, 2, ... */
	__u32 raw_len;	/* inflated size */
	__u32 zlen;	/* compressed bytes that follow */
	__u32 data_crc; /* crc32 of the zlen compressed bytes */
	__u32 hdr_crc;	/* crc32 of the five fields above */
};

struct gp_cap_op_hdr {
	__u16 op;
	__u16 zero;
	__u32 len;
};

_Static_assert(sizeof(struct gp_cap_header) == 216, "gp_cap_header layout");
_Static_assert(sizeof(struct gp_cap_chunk) == 24, "gp_cap_chunk layout");
_Static_assert(sizeof(struct gp_cap_op_hdr) == 8, "gp_cap_op_hdr layout");

#endif /* GP_CAPTURE_FORMAT_H */
