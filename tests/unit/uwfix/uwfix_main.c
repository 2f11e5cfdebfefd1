/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * uwfix_main.c — uw_deep, the unwind-table fixture's program (uwfix.h):
 * main -> exe_a (a frame over 64 KiB) -> exe_b -> libuwfix.so's chain ->
 * exe_cb -> uwfix_report, built -O2 -fomit-frame-pointer.
 */
#include "uwfix.h"

#define NOINLINE __attribute__((noinline, noclone))

NOINLINE int exe_cb(int x)
{
	return uwfix_report() + x;
}

NOINLINE int exe_b(int x)
{
	int r = lib_c(x, exe_cb);

	return r * 2 + x;
}

/* a frame over 64 KiB: its CFA offset in 8-byte units */
NOINLINE int exe_a(int x)
{
	volatile char big[70000];

	big[x % 70000] = (char)x;
	return exe_b(x + big[x % 70000]) + 1;
}

int main(int argc, char **argv)
{
	(void)argv;
	return exe_a(argc) == 0x7fffffff;
}
