/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * uwfix_dbg.c — functions whose call-frame information is only in
 * .debug_frame (built -fno-asynchronous-unwind-tables -g), linked with
 * uwfix_lib.c's (in .eh_frame) into libuwfix_dbg.so: a file that needs
 * both sections.
 */
#include <alloca.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone))

int lib_c(int x, int (*cb)(int));

NOINLINE int dbg_leaf(int x)
{
	volatile int pad[16];

	pad[x & 15] = x;
	return pad[x & 15] * 3;
}

NOINLINE int dbg_alloca(int x)
{
	char *p = alloca(32 + (x & 31));

	memset(p, x, 32);
	__asm__ volatile("" : : "r"(p) : "memory");
	return dbg_leaf(x + p[1]) + 1;
}

NOINLINE int dbg_saved(int x)
{
	int a = x * 3, b = x * 5, c = x * 7;
	int r = dbg_alloca(x) + lib_c(x, dbg_leaf);

	return r + a + b + c;
}
