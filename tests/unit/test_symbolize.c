/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_symbolize.c — ELF symbol index, /proc/PID/maps snapshots and kernel
 * naming, on this very test binary (no root needed): nvcc stub names, the
 * host-function path, nvcc 13 handles cached in a stub's __handle static, a
 * stub found up the launch's stack; frames of stacks (file, build-id,
 * demangled name without parameters) and perf maps for JIT code.
 * The functions and the variable below carry the names nvcc gives its stubs
 * (valid C identifiers), so the symbolizer meets them as it would in a real
 * CUDA program.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbolize/perf_map.h"
#include "proc_maps.h"
#include "symbolize/symbolizer.h"

static volatile int sink;

/* Bodies of a few instructions, so that "an address inside" exists (a bare ret is 1 byte). */
#define BODY                                 \
	for (volatile int i = 0; i < 3; i++) \
	sink += i

/* An nvcc launch stub for "plain_kernel(float*)". */
__attribute__((noinline, used)) void _Z32__device_stub__Z12plain_kernelPfPf(void)
{
	BODY;
}

/* A host function named as a C++ template kernel (what gcc-built launches pass). */
__attribute__((noinline, used)) void _Z11gemm_kernelIfEvPT_i(void)
{
	BODY;
}

/* The shared launch helper: returns land here, for every kernel of the file. */
__attribute__((noinline, used)) void launch_helper_lookalike(void)
{
	BODY;
}

/* nvcc 13: saxpy's stub caches its kernel handle in this static local. */
__attribute__((used)) static volatile uint64_t _ZZ29__device_stub__Z5saxpyifPKfPfifPKfPfE8__handle;

static void stub_names(void **state)
{
	char out[256];

	assert_int_equal(
		gp_stub_kernel_mangled("_Z32__device_stub__Z12plain_kernelPfPf", out, sizeof(out)),
		0);
	assert_string_equal(out, "_Z12plain_kernelPf");
	assert_int_equal(gp_stub_kernel_mangled("_ZL37__device_stub__Z11gemm_kernelIfEvPT_iPfi",
						out, sizeof(out)),
			 0);
	assert_string_equal(out, "_Z11gemm_kernelIfEvPT_i");
	assert_int_equal(gp_stub_kernel_mangled("_ZL38__device_stub__ZN2ml5scaleIfEEvPT_S1_iPffi",
						out, sizeof(out)),
			 0);
	assert_string_equal(out, "_ZN2ml5scaleIfEEvPT_S1_i");
	assert_int_equal(
		gp_stub_kernel_mangled("_ZZ29__device_stub__Z5saxpyifPKfPfifPKfPfE8__handle", out,
				       sizeof(out)),
		0);
	assert_string_equal(out, "_Z5saxpyifPKfPf");
	assert_int_equal(gp_stub_kernel_mangled("main", out, sizeof(out)), -ENOENT);
	assert_int_equal(gp_stub_kernel_mangled("_Z99__device_stub__Z1fv", out, sizeof(out)),
			 -ENOENT); /* length lies */
	assert_int_equal(gp_stub_kernel_mangled("_Z32__device_stub__Z12plain_kernelPfPf", out, 4),
			 -ENOSPC);
}

static void demangling(void **state)
{
	char out[256];

	gp_demangle("_Z11gemm_kernelIfEvPT_i", out, sizeof(out));
	assert_string_equal(out, "void gemm_kernel<float>(float*, int)");
	gp_demangle("_ZN2ml5scaleIfEEvPT_S1_i", out, sizeof(out));
	assert_string_equal(out, "void ml::scale<float>(float*, float, int)");
	gp_demangle("plain_c_function", out, sizeof(out));
	assert_string_equal(out, "plain_c_function");
	gp_demangle("_Znot-a-valid-mangling", out, sizeof(out));
	assert_string_equal(out, "_Znot-a-valid-mangling");
}

static void maps_parsing(void **state)
{
	static const char text[] =
		"55d0aa000000-55d0aa001000 r--p 00000000 fe:00 1234                       /opt/app/bin/train\n"
		"55d0aa001000-55d0aa005000 r-xp 00001000 fe:00 1234                       /opt/app/bin/train\n"
		"55d0ab000000-55d0ab021000 rw-p 00000000 00:00 0                          [heap]\n"
		"7f0000000000-7f0000100000 r-xp 00040000 fe:00 99 /venv/lib/libcudart.so.12 (deleted)\n"
		"7f0000200000-7f0000300000 rw-p 00000000 00:00 0 \n";
	struct gp_maps *m = NULL;
	const struct gp_map *e;

	assert_int_equal(gp_maps_parse(42, text, strlen(text), &m), 0);
	assert_int_equal(m->n, 5);
	e = gp_maps_find(m, 0x55d0aa001234);
	assert_non_null(e);
	assert_true(e->exec);
	assert_int_equal(e->offset, 0x1000);
	assert_int_equal(e->inode, 1234);
	assert_string_equal(e->path, "/opt/app/bin/train");
	assert_string_equal(gp_maps_find(m, 0x55d0ab000010)->path, "[heap]");
	assert_string_equal(gp_maps_find(m, 0x7f0000000010)->path,
			    "/venv/lib/libcudart.so.12 (deleted)");
	assert_string_equal(gp_maps_find(m, 0x7f0000200000)->path, "");
	assert_null(gp_maps_find(m, 0x55d0aa005000)); /* end is exclusive */
	assert_null(gp_maps_find(m, 0x1000));
	gp_maps_free(m);
}

static void elf_index_of_this_binary(void **state)
{
	struct gp_elf_syms *e = gp_elf_syms_open("/proc/self/exe");
	const struct gp_elf_sym *s, *at;
	char hex[64];
	__u64 off, vaddr;

	assert_non_null(e);
	assert_true(e->is_dyn && e->has_symtab);
	s = gp_elf_syms_find(e, "_Z11gemm_kernelIfEvPT_i");
	assert_non_null(s);
	at = gp_elf_syms_at(e, s->addr + 1);
	assert_non_null(at);
	assert_string_equal(at->name, "_Z11gemm_kernelIfEvPT_i");
	assert_int_equal(gp_elf_vaddr_to_offset(e, s->addr, &off), 0);
	assert_int_equal(gp_elf_offset_to_vaddr(e, off, &vaddr), 0);
	assert_int_equal(vaddr, s->addr);
	assert_null(gp_elf_syms_find(e, "no_such_function_anywhere"));
	assert_int_equal(e->nstub_handles, 1);
	assert_string_equal(e->stub_handles[0].name,
			    "_ZZ29__device_stub__Z5saxpyifPKfPfifPKfPfE8__handle");
	gp_elf_build_id_hex(e, hex, sizeof(hex));
	assert_int_equal(strlen(hex), 2 * e->build_id_len);
	gp_elf_syms_free(e);
	gp_elf_syms_free(NULL);
	errno = 0;
	assert_null(gp_elf_syms_open("/etc/hostname"));
	assert_int_equal(errno, ENOEXEC);
}

static void kernel_names_in_a_live_process(void **state)
{
	struct gp_symbolizer *s = gp_symbolizer_new();
	char name[512], mangled[512];
	__u32 pid = (__u32)getpid();
	__u64 stub = (__u64)(uintptr_t)&_Z32__device_stub__Z12plain_kernelPfPf;
	__u64 host = (__u64)(uintptr_t)&_Z11gemm_kernelIfEvPT_i;
	__u64 helper = (__u64)(uintptr_t)&launch_helper_lookalike;
	struct gp_sym_result r;

	assert_non_null(s);
	assert_int_equal(gp_symbolizer_snapshot(s, (pid_t)pid), 0);
	assert_int_equal(gp_symbolizer_lookup(s, (pid_t)pid, helper + 1, &r), 0);
	assert_string_equal(r.symbol, "launch_helper_lookalike");
	assert_int_equal(r.sym_offset, 1);

	/* the launch returns into a stub: its kernel, whatever func is */
	assert_int_equal(gp_symbolizer_kernel_name(s, pid, 0x1234, stub + 4, NULL, 0, name,
						   sizeof(name), mangled, sizeof(mangled)),
			 0);
	assert_string_equal(name, "plain_kernel(float*)");
	assert_string_equal(mangled, "_Z12plain_kernelPf");
	/* func is the host function itself */
	assert_int_equal(gp_symbolizer_kernel_name(s, pid, host, helper + 4, NULL, 0, name,
						   sizeof(name), mangled, sizeof(mangled)),
			 0);
	assert_string_equal(name, "void gemm_kernel<float>(float*, int)");
	/* func is an nvcc 13 handle, cached in saxpy's stub: read from this process */
	_ZZ29__device_stub__Z5saxpyifPKfPfifPKfPfE8__handle = 0x5eed0000feedull;
	assert_int_equal(gp_symbolizer_kernel_name(s, pid, 0x5eed0000feedull, helper + 4, NULL, 0,
						   name, sizeof(name), mangled, sizeof(mangled)),
			 0);
	assert_string_equal(name, "saxpy(int, float, float const*, float*)");
	/* an unknown handle, returning into a non-stub: no name, never an address */
	assert_int_equal(gp_symbolizer_kernel_name(s, pid, 0xabcdef, helper + 4, NULL, 0, name,
						   sizeof(name), mangled, sizeof(mangled)),
			 -ENOENT);
	gp_symbolizer_free(s);
}

static void kernel_name_from_a_stub_up_the_stack(void **state)
{
	struct gp_symbolizer *s = gp_symbolizer_new();
	char name[512], mangled[512];
	__u32 pid = (__u32)getpid();
	__u64 stub = (__u64)(uintptr_t)&_Z32__device_stub__Z12plain_kernelPfPf;
	__u64 helper = (__u64)(uintptr_t)&launch_helper_lookalike;
	/* nvcc 13: the launch returns into the helper, which the stub called */
	__u64 stack[4] = { helper + 4, stub + 4, 0x10, 0x20 };

	assert_non_null(s);
	assert_int_equal(gp_symbolizer_snapshot(s, (pid_t)pid), 0);
	assert_int_equal(gp_symbolizer_kernel_name(s, pid, 0xabcdef, helper + 4, stack, 4, name,
						   sizeof(name), mangled, sizeof(mangled)),
			 0);
	assert_string_equal(name, "plain_kernel(float*)");
	/* beyond GP_STUB_FRAMES callers, a stub is not this launch's */
	{
		__u64 deep[GP_STUB_FRAMES + 2] = { helper + 4 };

		for (unsigned i = 1; i <= GP_STUB_FRAMES; i++)
			deep[i] = helper + 5;
		deep[GP_STUB_FRAMES + 1] = stub + 4;
		assert_int_equal(gp_symbolizer_kernel_name(s, pid, 0xabcdef, helper + 4, deep,
							   GP_STUB_FRAMES + 2, name, sizeof(name),
							   mangled, sizeof(mangled)),
				 -ENOENT);
	}
	gp_symbolizer_free(s);
}

static void frames_of_a_live_process(void **state)
{
	struct gp_symbolizer *s = gp_symbolizer_new();
	__u32 pid = (__u32)getpid();
	__u64 host = (__u64)(uintptr_t)&_Z11gemm_kernelIfEvPT_i;
	struct gp_frame_sym fs;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	__u64 ips[2] = { host + 4, 0x8 };

	assert_non_null(s);
	assert_true(n > 0);
	exe[n] = '\0';
	gp_symbolizer_stack_seen(s, pid, ips, 2); /* takes the first snapshot */
	assert_non_null(gp_symbolizer_maps(s, (pid_t)pid));
	assert_int_equal(gp_symbolizer_symbolize(s, pid, host + 3, &fs), 0);
	assert_string_equal(fs.function, "gemm_kernel<float>");
	assert_string_equal(fs.symbol, "_Z11gemm_kernelIfEvPT_i");
	assert_int_equal(fs.sym_offset, 3);
	assert_string_equal(fs.file, exe);
	assert_int_equal(fs.source, GP_SYM_ELF);
	assert_true(strlen(fs.build_id) >= 16); /* gcc links with --build-id */
	/* nothing mapped there */
	assert_int_equal(gp_symbolizer_symbolize(s, pid, 0x8, &fs), -ENOENT);
	assert_null(fs.function);
	gp_symbolizer_free(s);
}

static void short_demangling(void **state)
{
	char out[256];

	gp_demangle_short("_ZN2ml5scaleIfEEvPT_S1_i", out, sizeof(out));
	assert_string_equal(out, "ml::scale<float>");
	gp_demangle_short("_Z11gemm_kernelIfEvPT_i", out, sizeof(out));
	assert_string_equal(out, "gemm_kernel<float>");
	gp_demangle_short("plain_c_function", out, sizeof(out));
	assert_string_equal(out, "plain_c_function");
}

static void perf_maps(void **state)
{
	static const char text[] = "7f0000001000 40 py::train_step\n"
				   "garbage line\n"
				   "7f0000000000 100 jit one two\n"
				   "7f0000002000 0 empty\n"
				   "7f0000001000 20 py::train_step_v2\n"
				   "zz 10 bad_start\n";
	struct gp_perf_map *m;
	const struct gp_perf_sym *ps;

	assert_int_equal(gp_perf_map_parse(text, sizeof(text) - 1, &m), 0);
	assert_int_equal(m->n, 3);
	ps = gp_perf_map_find(m, 0x7f0000000010);
	assert_non_null(ps);
	assert_string_equal(ps->name, "jit one two");
	ps = gp_perf_map_find(m, 0x7f0000001010); /* the later line for one start wins */
	assert_non_null(ps);
	assert_string_equal(ps->name, "py::train_step_v2");
	assert_null(gp_perf_map_find(m, 0x7f0000001030)); /* past the v2 entry's 0x20 bytes */
	assert_null(gp_perf_map_find(m, 0x7effffffffff));
	gp_perf_map_free(m);
	assert_int_equal(gp_perf_map_read(999999999, &m), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stub_names),
		cmocka_unit_test(demangling),
		cmocka_unit_test(maps_parsing),
		cmocka_unit_test(elf_index_of_this_binary),
		cmocka_unit_test(kernel_names_in_a_live_process),
		cmocka_unit_test(kernel_name_from_a_stub_up_the_stack),
		cmocka_unit_test(frames_of_a_live_process),
		cmocka_unit_test(short_demangling),
		cmocka_unit_test(perf_maps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
