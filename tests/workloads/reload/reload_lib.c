// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * reload_lib.c — one function built twice (-DPAD=1024: libreloada.so,
 * -DPAD=2048: libreloadb.so), -O2 -fomit-frame-pointer: the same code at the
 * same offsets, but a frame of another size, so the two files' unwind rows
 * for reload_relay's call site differ only in the CFA's offset. Loaded in
 * turn at one address (tests/workloads/reload/reload_walk.c), a stack walk
 * that used the first file's rows for the second would find its caller in
 * the wrong slot.
 */
#ifndef PAD
#error "build with -DPAD=N (N > 127: the same instruction lengths in both files)"
#endif

void reload_relay(void (*fn)(void));

__attribute__((noinline)) void reload_relay(void (*fn)(void))
{
	volatile char pad[PAD];

	pad[0] = 1;
	fn();
	pad[1] = pad[0]; /* the frame lives across the call: no tail call */
}
