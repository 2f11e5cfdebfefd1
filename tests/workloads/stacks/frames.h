/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * frames.h — keeping a workload's call frames on the stack, for the tests of
 * call stacks: a function whose frame a test expects is SP_FRAME (never inlined,
 * cloned or merged; a clone would be named f.constprop.0 and a merged function
 * would carry another's name) and puts SP_KEEP() after its calls, so that no
 * call becomes a tail call that replaces the caller's frame. Loop counts should
 * be parameters or run-time values (no IPA constant propagation reaches an
 * SP_FRAME function): a constant loop may be unrolled into several call sites.
 * The frame pointers themselves come from -fno-omit-frame-pointer (workloads.mk).
 */
#ifndef STACK_FRAMES_H
#define STACK_FRAMES_H

#if defined(__clang__)
#define SP_FRAME __attribute__((noinline, used))
#else
#define SP_FRAME __attribute__((noipa, used))
#endif
#define SP_KEEP() __asm__ volatile("" ::: "memory")

#endif
