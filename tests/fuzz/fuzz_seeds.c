/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fuzz_seeds.c — writes the fuzzer's seed corpus into DIR: real captures
 * made the way a live session makes them (a tapped model whose resolver
 * answers are recorded, through the capture writer), one of them cut, one
 * of several chunks; and the same sessions' operations as bare streams
 * (the fuzz target's second input form, see fuzz_capture.c), so that
 * mutations reach the model and not only the chunk checksums.
 *
 *   fuzz_seeds DIR
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capture/capture_reader.h"
#include "capture/capture_resolver.h"
#include "capture/capture_writer.h"
#include "model/model.h"
#include "model/model_ops.h"
#include "symbolize/symbolizer.h"

#define PID	4242
#define START	1000000000000ULL
#define DEV	0x7f3a00000000ULL
#define HOST	0x7f3b00000000ULL
#define STREAM	0x55d0c0ff0000ULL
#define FN_GEMM 0x400900ULL

static void die(const char *what)
{
	fprintf(stderr, "fuzz_seeds: %s\n", what);
	exit(1);
}

/* ---- a resolver that names one kernel and a few frames ------------------ */
static int kname(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack,
		 unsigned nstack, char *name, size_t name_len, char *mangled, size_t mangled_len)
{
	if (func != FN_GEMM)
		return -ENOENT;
	snprintf(mangled, mangled_len, "_Z4gemmIfEvPT_i");
	gp_demangle(mangled, name, name_len);
	return 0;
}

static int symbolize(void *ctx, __u32 tgid, __u64 addr, struct gp_frame_sym *out)
{
	static const char *const syms[] = { "main", "_ZN2ml5trainEv", "_ZN2ml4stepIfEEvi",
					    "__libc_start_call_main" };

	memset(out, 0, sizeof(*out));
	out->build_id = "3f1c0de2a9b4";
	if ((addr & 0xf) == 0xf) /* one address in sixteen is in no file */
		return -ENOENT;
	out->file = (addr & 0x3) == 3 ? "/usr/lib/x86_64-linux-gnu/libc.so.6" : "/opt/app/train";
	out->symbol = syms[addr % 4];
	out->function = out->symbol;
	out->sym_offset = addr & 0xff;
	out->file_offset = addr & 0xffff;
	out->source = GP_SYM_ELF;
	return 0;
}

static const struct gp_resolver inner = {
	.kernel_name = kname,
	.demangle = gp_demangle,
	.demangle_short = gp_demangle_short,
	.symbolize = symbolize,
};

/* ---- records as the BPF side makes them ----------------------------------- */
static struct gp_api_call call(enum gp_api_id api, __u32 tid, __u64 *clock, __u64 dur)
{
	struct gp_api_call c;

	memset(&c, 0, sizeof(c));
	c.hdr.type = GP_EV_API_CALL;
	c.hdr.size = sizeof(c);
	c.hdr.tgid = PID;
	c.hdr.tid = tid;
	c.hdr.ts_ns = *clock;
	c.dur_ns = dur;
	c.api = (__u16)api;
	c.ret_addr = 0x401000;
	*clock += dur + 1000;
	return c;
}

static void feed(struct gp_model *m, const struct gp_api_call *c)
{
	if (gp_model_ingest(m, c, sizeof(*c)))
		die("a record was refused");
}

static void feed_stack(struct gp_model *m, const struct gp_api_call *c, unsigned depth, __u64 salt)
{
	struct gp_api_call_stack s;

	memset(&s, 0, sizeof(s));
	s.call = *c;
	s.call.hdr.type = GP_EV_API_CALL_STACK;
	s.call.hdr.size = (__u16)GP_STACK_REC_SIZE(depth);
	s.nframes = (__u16)depth;
	for (unsigned i = 0; i < depth; i++)
		s.ips[i] = 0x401000 + 0x100 * i + salt * 0x10 + 5;
	s.call.ret_addr = s.ips[0];
	if (gp_model_ingest(m, &s, GP_STACK_REC_SIZE(depth)))
		die("a stack record was refused");
}

static void feed_ext(struct gp_model *m, enum gp_api_id api, __u64 handle, const char *name,
		     __u64 *clock)
{
	struct gp_api_call_ext x;

	memset(&x, 0, sizeof(x));
	x.call = call(api, PID, clock, 10);
	x.call.hdr.type = GP_EV_API_CALL_EXT;
	x.call.hdr.size = sizeof(x);
	x.call.hdr.flags = GP_EVF_OUT_VALID;
	x.call.out = handle;
	x.call.args[1] = 0xa0;
	x.data_len = (__u32)strlen(name) + 1;
	memcpy(x.data, name, x.data_len);
	if (gp_model_ingest(m, &x, sizeof(x)))
		die("an extended record was refused");
}

static void feed_thread(struct gp_model *m, __u32 tid, __u64 start, __u64 end)
{
	struct gp_thread_cpu r;

	memset(&r, 0, sizeof(r));
	r.hdr.type = GP_EV_THREAD_CPU;
	r.hdr.size = sizeof(r);
	r.hdr.tgid = PID;
	r.hdr.tid = tid;
	r.hdr.ts_ns = start;
	r.end_ns = end;
	r.oncpu_ns = (end - start) / 2;
	r.offcpu_ns = (end - start) / 4;
	r.runnable_ns = (end - start) / 8;
	r.vol_switches = 12;
	r.invol_switches = 3;
	r.minor_faults = 100;
	r.flags = GP_TCF_STARTED;
	snprintf(r.comm, sizeof(r.comm), "worker%u", tid);
	if (gp_model_ingest(m, &r, sizeof(r)))
		die("a thread record was refused");
}

/* One session: every kind of operation; calls repeated `rounds` times. */
static void session(struct gp_model *m, unsigned rounds, bool stacks)
{
	const struct gp_session_info si = {
		.tool_version = "0.1-fuzz",
		.command_line = "gpuprobed --pid 4242",
		.mode = "pid",
		.hostname = "gpu-node-1",
		.kernel_release = "6.18.0",
		.start_mono_ns = START,
		.start_realtime_ns = 1700000000000000000ULL,
	};
	__u64 t = START + 5000000;
	struct gp_api_call c;

	gp_model_set_session(m, &si);
	gp_model_set_launch(m, "python3 train.py", false, 0, 0);
	gp_model_process_add(m, PID, "train", "python3 train.py --epochs 1", START + 1000, true);
	gp_model_process_origin(m, PID, "launched", 1);
	gp_model_library_add(m, PID, "/opt/venv/lib/libcudart.so.13", GP_FAM_CUDART, false,
			     "0123abcd");
	gp_model_library_add(m, PID, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", GP_FAM_CUDA, false,
			     "");
	gp_model_thread_name(m, PID, PID, "python3");
	gp_model_thread_name(m, PID, PID + 1, "loader");
	gp_model_probe_add(m, 0, "/opt/venv/lib/libcudart.so.13", PID, "cudaMalloc", 0x4a2b0,
			   GP_API_CUDA_MALLOC);
	gp_model_probe_add(m, 1, "/opt/venv/lib/libcudart.so.13", 0, "cudaLaunchKernel", 0x71c40,
			   GP_API_CUDA_LAUNCH_KERNEL);
	gp_model_skipped_add(m, 777, "other", "its root cannot be read");
	gp_model_set_stacks(m, stacks, 64);

	c = call(GP_API_CUDA_SET_DEVICE, PID, &t, 800);
	feed(m, &c);
	c = call(GP_API_CUDA_STREAM_CREATE, PID, &t, 20);
	c.out = STREAM;
	c.hdr.flags = GP_EVF_OUT_VALID;
	feed(m, &c);
	feed_ext(m, GP_API_CU_MODULE_GET_FUNCTION, 0xf1, "_Z7softmaxPfi", &t);
	for (unsigned i = 0; i < rounds; i++) {
		c = call(GP_API_CUDA_MALLOC, PID, &t, 100);
		c.args[0] = 0x7ffc0000;
		c.args[1] = 4096u << (i % 8);
		c.out = DEV + ((__u64)i << 24);
		c.hdr.flags = GP_EVF_OUT_VALID;
		feed(m, &c);
		c = call(i % 3 ? GP_API_CUDA_MEMCPY : GP_API_CUDA_MEMCPY_ASYNC, PID, &t, 2000 + i);
		c.args[0] = DEV + ((__u64)i << 24);
		c.args[1] = HOST;
		c.args[2] = 4096;
		c.args[3] = 1; /* host to device */
		c.args[4] = i % 3 ? 0 : STREAM;
		feed(m, &c);
		c = call(GP_API_CUDA_LAUNCH_KERNEL, PID, &t, 7);
		c.args[0] = i % 2 ? FN_GEMM : 0x400a00 + i % 5;
		c.args[1] = 256 | 1ULL << 32;
		c.args[2] = 1;
		c.args[3] = 128 | 1ULL << 32;
		c.args[4] = 1;
		c.args[7] = STREAM;
		if (stacks)
			feed_stack(m, &c, 2 + i % 6, i % 7);
		else
			feed(m, &c);
		c = call(GP_API_CU_LAUNCH_KERNEL, PID + 1, &t, 5);
		c.args[0] = 0xf1;
		c.args[1] = 64;
		c.args[2] = c.args[3] = c.args[4] = 1;
		c.args[5] = 1;
		feed(m, &c);
		c = call(GP_API_CUDA_STREAM_SYNCHRONIZE, PID, &t, 15000);
		c.args[0] = STREAM;
		c.ret = i % 11 == 10 ? 700 : 0; /* an error now and then */
		if (stacks)
			feed_stack(m, &c, 3, 1);
		else
			feed(m, &c);
		c = call(GP_API_CUDA_FREE, PID, &t, 50);
		c.args[0] = DEV + ((__u64)i << 24);
		feed(m, &c);
	}
	feed_thread(m, PID, START + 1000, t);
	feed_thread(m, PID + 1, START + 2000, t - 100);
	gp_model_probe_hits(m, 0, rounds, rounds);
	gp_model_probe_hits(m, 1, rounds, rounds);
	gp_model_drop_set(m, "ringbuf_full", 2);
	gp_model_process_exited(m, PID, t);
	if (stacks)
		gp_model_symbolize_stacks(m, NULL);
	gp_model_set_session_end(m, t + 1000000);
}

/* ---- files ----------------------------------------------------------------- */
static void write_capture(const char *path, unsigned rounds, bool stacks)
{
	struct gp_cap_header h = { .abi_version = GP_ABI_VERSION, .start_mono_ns = START };
	struct gp_recording_resolver rr = { .inner = inner, .record = gp_capture_writer_op };
	struct gp_capture_writer *w;
	struct gp_resolver res;
	struct gp_model *m;
	char err[512];
	unsigned char maps[512];

	snprintf(h.tool_version, sizeof(h.tool_version), "0.1-fuzz");
	w = gp_capture_writer_open(path, &h, err, sizeof(err));
	if (!w)
		die(err);
	rr.record_ctx = w;
	res = gp_recording_resolver(&rr);
	m = gp_model_new(&res);
	if (!m)
		die("out of memory");
	gp_model_set_tap(m, &(struct gp_model_tap){ .ctx = w, .record = gp_capture_writer_op });
	session(m, rounds, stacks);
	/* a maps snapshot: written for readers of the file, ignored by the model */
	{
		size_t n = 0;
		const char *text = "00400000-00452000 r-xp 00000000 08:02 173521 /opt/app/train\n";
		__u32 pid = PID, len = (__u32)strlen(text) + 1;
		__u64 mono = START;

		memcpy(maps + n, &pid, 4), n += 4;
		memcpy(maps + n, &mono, 8), n += 8;
		memcpy(maps + n, &len, 4), n += 4;
		memcpy(maps + n, text, len), n += len;
		gp_capture_writer_op(w, GP_MOP_MAPS, maps, n);
	}
	gp_model_set_tap(m, NULL);
	if (gp_capture_writer_close(w, NULL))
		die("writing a capture failed");
	gp_model_free(m);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t cap = 0, n = 0, k;

	if (!f)
		die(path);
	do {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			if (!buf)
				die("out of memory");
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
	} while (k);
	fclose(f);
	*len = n;
	return buf;
}

static void spill(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, len, f) != len || fclose(f))
		die(path);
}

/* The capture's operations back to back, as one chunk holds them (with the end operation). */
static void write_stream(const char *capture, const char *path)
{
	char err[512];
	struct gp_capture_reader *r = gp_capture_open(capture, err, sizeof(err));
	FILE *f = fopen(path, "wb");
	struct gp_cap_op_hdr h = { .op = GP_MOP_END, .len = 16 };
	unsigned char end[16] = { 0 };
	unsigned op;
	const void *data;
	size_t len;

	if (!r || !f)
		die(r ? path : err);
	while (gp_capture_next(r, &op, &data, &len) > 0) {
		struct gp_cap_op_hdr oh = { .op = (__u16)op, .len = (__u32)len };

		fwrite(&oh, sizeof(oh), 1, f);
		fwrite(data, 1, len, f);
	}
	fwrite(&h, sizeof(h), 1, f);
	fwrite(end, sizeof(end), 1, f);
	if (fclose(f))
		die(path);
	gp_capture_close(r);
}

int main(int argc, char **argv)
{
	char a[4096], b[4096];
	unsigned char *buf;
	size_t len;

	if (argc != 2)
		die("usage: fuzz_seeds DIR");
	if (mkdir(argv[1], 0755) && errno != EEXIST)
		die(argv[1]);
#define P(buf, name) snprintf(buf, sizeof(buf), "%s/%s", argv[1], name)
	P(a, "small.gpz");
	write_capture(a, 4, false);
	P(b, "small.ops");
	write_stream(a, b);
	P(a, "stacks.gpz");
	write_capture(a, 12, true);
	P(b, "stacks.ops");
	write_stream(a, b);
	/* enough operations for several chunks, still small compressed */
	P(a, "chunks.gpz");
	write_capture(a, 1500, false);
	/* cut two thirds in: whole chunks, then one cut inside, and no end */
	buf = slurp(a, &len);
	P(b, "chunks-cut.gpz");
	spill(b, buf, len * 2 / 3);
	free(buf);
	return 0;
}
