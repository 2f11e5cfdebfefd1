/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * uwfix.h — the unwind tables' test fixture (tests/unit/test_unwind_table.c):
 * a library and a program built -O2 -fomit-frame-pointer whose nested calls
 * have every frame shape a row can say, and at the bottom a report of the
 * thread's registers and of glibc's backtrace() for the test to walk
 * against.
 *
 * The report, on stdout, one line each: "regs RIP RSP RBP" (taken together
 * inside uwfix_report: RIP is not a return address), "bt N A0 A1 ...",
 * "ready". Then it reads commands on stdin, one a line, the stack kept as
 * it is meanwhile: "o PATH" dlopens PATH (answers "ok" or "err"), "q"
 * returns. EOF returns too.
 */
#ifndef UWFIX_H
#define UWFIX_H

typedef int (*uwfix_cb)(int);

/* lib_c -> lib_g -> lib_d -> lib_e -> lib_f -> cb(x) */
int lib_c(int x, uwfix_cb cb);
/* The report above; returns when told to. */
int uwfix_report(void);

#endif
