/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * uwfix_lib.c — libuwfix.so of the unwind-table fixture (uwfix.h): nested
 * noinline functions, each with another frame shape, built
 * -O2 -fomit-frame-pointer; and the report at the bottom.
 */
#include <alloca.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "uwfix.h"

#define NOINLINE __attribute__((noinline, noclone))

/* rsp-based frame */
NOINLINE int lib_f(int x, uwfix_cb cb)
{
	volatile int pad[8];

	pad[x & 7] = x;
	return cb(x + pad[x & 7]) + 1;
}

/* an over-aligned local: the stack realigned */
NOINLINE int lib_e(int x, uwfix_cb cb)
{
	volatile char big[256] __attribute__((aligned(64)));

	big[x & 255] = (char)x;
	return lib_f(x + big[x & 255], cb) + 2;
}

/* alloca: CFA = rbp + 16 */
NOINLINE int lib_d(int x, uwfix_cb cb)
{
	char *p = alloca(64 + (x & 63));

	memset(p, x, 64);
	__asm__ volatile("" : : "r"(p) : "memory");
	return lib_e(x + p[3], cb) + 3;
}

/* a variable-length array and an over-aligned local: DRAP, CFA = *(rbp - n) */
NOINLINE int lib_g(int x, uwfix_cb cb)
{
	volatile char vla[16 + (x & 15)];
	volatile double v __attribute__((aligned(64))) = x;

	vla[x & 15] = (char)v;
	return lib_d(x + vla[x & 15], cb) + 4;
}

/* callee-saved registers live across the call */
NOINLINE int lib_c(int x, uwfix_cb cb)
{
	int a = x * 3, b = x * 5, c = x * 7;
	int r = lib_g(x, cb);

	return r + a + b + c;
}

static void say(const char *s)
{
	size_t n = strlen(s);

	while (n) {
		ssize_t w = write(1, s, n);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

NOINLINE int uwfix_report(void)
{
	unsigned long rip, rsp, rbp;
	void *bt[128];
	char line[8192], cmd[4096];
	int n, len;

	/* one consistent register state: rip is the next instruction, rsp and rbp as they are there */
	__asm__ volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2"
			 : "=&r"(rip), "=&r"(rsp), "=&r"(rbp));
	n = backtrace(bt, 128);
	snprintf(line, sizeof(line), "regs %lx %lx %lx\n", rip, rsp, rbp);
	say(line);
	len = snprintf(line, sizeof(line), "bt %d", n);
	for (int i = 0; i < n && len < (int)sizeof(line) - 24; i++)
		len += snprintf(line + len, sizeof(line) - (size_t)len, " %lx",
				(unsigned long)bt[i]);
	snprintf(line + len, sizeof(line) - (size_t)len, "\nready\n");
	say(line);
	for (;;) {
		size_t k = 0;
		char ch;

		while (k < sizeof(cmd) - 1 && read(0, &ch, 1) == 1 && ch != '\n')
			cmd[k++] = ch;
		cmd[k] = '\0';
		if (k == 0 || cmd[0] == 'q')
			break;
		if (cmd[0] == 'o' && cmd[1] == ' ')
			say(dlopen(cmd + 2, RTLD_NOW) ? "ok\n" : "err\n");
	}
	return n;
}
