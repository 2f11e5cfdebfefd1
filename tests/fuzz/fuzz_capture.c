/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fuzz_capture.c — libFuzzer target for the read path of `gpuprobed report`:
 * the input becomes a file (a memfd) that is opened as a capture, loaded
 * into a model answered by its recorded resolver answers, symbolized and
 * written as every report (report.json, report.md, the stack files).
 *
 * Two input forms, so that mutations reach past the checksums:
 *   - starts with the capture magic: the file itself;
 *   - anything else: a stream of operations (u16 op, u16 0, u32 len,
 *     payload)*, wrapped here into a valid file of one chunk (header and
 *     checksums right), which the reader then checks and applies like any.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "capture/capture_load.h"
#include "log.h"
#include "report/report.h"
#include "stack_formats/stack_paths.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	gp_log_level = -1; /* the model's warnings about odd input are expected here */
	devnull = fopen("/dev/null", "w");
	return devnull ? 0 : -1;
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t k = write(fd, c, n);

		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

/* A valid file holding the operation stream in one chunk (stored, not compressed: faster). */
static int write_wrapped(int fd, const uint8_t *ops, size_t size)
{
	struct gp_cap_header h = { .version = GP_CAP_VERSION,
				   .header_size = sizeof(h),
				   .abi_version = GP_ABI_VERSION };
	struct gp_cap_chunk c = { .magic = GP_CAP_CHUNK_MAGIC, .raw_len = (__u32)size };
	uLongf zlen = compressBound(size);
	unsigned char *z = malloc(zlen ? zlen : 1);
	int rc = -1;

	memcpy(h.magic, GP_CAP_MAGIC, sizeof(h.magic));
	h.header_crc =
		(__u32)crc32(0, (const Bytef *)&h, offsetof(struct gp_cap_header, header_crc));
	if (!z || compress2(z, &zlen, ops, size, Z_NO_COMPRESSION) != Z_OK)
		goto out;
	c.zlen = (__u32)zlen;
	c.data_crc = (__u32)crc32(0, z, (uInt)zlen);
	c.hdr_crc = (__u32)crc32(0, (const Bytef *)&c, offsetof(struct gp_cap_chunk, hdr_crc));
	if (!write_all(fd, &h, sizeof(h)) && !write_all(fd, &c, sizeof(c)) &&
	    !write_all(fd, z, zlen))
		rc = 0;
out:
	free(z);
	return rc;
}

static void write_stack_files(const struct gp_model *m)
{
	struct gp_paths paths;

	if (!gp_model_stacks_captured(m) || gp_paths_from_model(m, &paths))
		return;
	for (int w = GP_W_CALLS; w <= GP_W_HOST_NS; w++)
		gp_folded_write(&paths, (enum gp_weight)w, devnull);
	gp_flamegraph_svg_write(&paths, GP_W_CALLS, "fuzz", devnull);
	gp_speedscope_write(&paths, "fuzz", devnull);
	gp_pprof_write(m, devnull);
	gp_paths_release(&paths);
}

/* What gp_cmd_report does with a capture, the output going to /dev/null. */
static void report(const char *path)
{
	char errmsg[4200];
	struct gp_capture_reader *r = gp_capture_open(path, errmsg, sizeof(errmsg));
	struct gp_answers *as = r ? gp_answers_new() : NULL;
	struct gp_resolver resolver = gp_answers_resolver(as);
	struct gp_model *m = as ? gp_model_new(&resolver) : NULL;
	struct gp_capture_load_stats ls;

	if (!m)
		goto out;
	gp_capture_load(r, m, as, &ls);
	gp_capture_finish(m, r, path);
	gp_report_json_write(m, devnull);
	gp_report_md_write(m, devnull);
	write_stack_files(m);
out:
	gp_model_free(m);
	gp_answers_free(as);
	gp_capture_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz.gpz", MFD_CLOEXEC);
	char path[64];
	int err;

	if (fd < 0)
		abort();
	if (size >= 8 && !memcmp(data, GP_CAP_MAGIC, 8))
		err = write_all(fd, data, size);
	else
		err = write_wrapped(fd, data, size);
	if (err)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	report(path);
	close(fd);
	return 0;
}
