/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * python_walk.c — the walk of a thread's Python frames that the BPF
 * program does at a probe (bpf/unwind.bpf.h), done in userspace through
 * process_vm_readv (gp_python_walk, see python.h): the thread's state found
 * through its pthread key from its fsbase, then its frame chain, innermost
 * first. Probing verifies a layout with it (python_layout.c); the unit
 * test compares it with what the interpreter says of itself.
 */
#include <string.h>
#include <sys/types.h>

#include "gpuprobed/events.h"
#include "stacks/python.h"
#include "stacks/python_internal.h"

#define NONE GP_PY_NONE

int gp_python_walk(pid_t pid, const struct gp_py_proc *p, __u64 fsbase, __u64 *words, unsigned max,
		   int *status, int *err)
{
	__u64 slot, ts, tid, f;
	__u32 key;
	unsigned n = 0, steps;
	int e;

	*status = GP_PY_OK;
	*err = 0;
	e = py_mem_read(pid, p->tss_key_addr, &key, sizeof(key));
	if (e)
		goto fail;
	if (key < 32) {
		slot = fsbase + p->tss_first + 16 * key + 8;
	} else {
		__u64 l2;

		e = py_mem_u64(pid, fsbase + p->tss_second + 8 * (key / 32), &l2);
		if (e)
			goto fail;
		if (!l2)
			goto no_thread;
		slot = l2 + 16 * (key % 32) + 8;
	}
	e = py_mem_u64(pid, slot, &ts);
	if (e)
		goto fail;
	if (!ts)
		goto no_thread;
	e = py_mem_u64(pid, ts + p->tstate_thread_id, &tid);
	if (e)
		goto fail;
	if (tid != fsbase)
		goto no_thread;
	e = py_mem_u64(pid, ts + p->tstate_frame, &f);
	if (!e && f && p->cframe_current != NONE)
		e = py_mem_u64(pid, f + p->cframe_current, &f);
	if (e)
		goto fail;
	/* shim frames are not counted against max: bound the steps instead */
	for (steps = 0; f && steps < 4 * max + 4; steps++) {
		__u8 fr[256];
		__u64 code, prev, instr;
		__u32 flags = 0;

		if (n == max) {
			*status = GP_PY_DEPTH;
			return (int)n;
		}
		e = py_mem_read(pid, f, fr,
				p->frame_read < sizeof(fr) ? p->frame_read : sizeof(fr));
		if (e)
			goto fail;
		memcpy(&prev, fr + p->frame_prev, 8);
		if (p->frame_owner != NONE && fr[p->frame_owner] == p->owner_shim) {
			/* a C-stack shim: the frame before it was the first of its activation */
			if (n)
				words[2 * n - 1] |= (__u64)GP_PYF_ENTRY << 32;
			f = prev;
			continue;
		}
		memcpy(&code, fr + p->frame_code, 8);
		if (p->instr_is_ptr) {
			memcpy(&instr, fr + p->frame_instr, 8);
			instr = (__u32)(instr - (code + p->code_adaptive));
		} else {
			__u32 lasti;

			memcpy(&lasti, fr + p->frame_instr, 4);
			instr = lasti;
		}
		if (p->version == 0x030a || (p->frame_is_entry != NONE && fr[p->frame_is_entry]))
			flags = GP_PYF_ENTRY;
		words[2 * n] = code;
		words[2 * n + 1] = instr | (__u64)flags << 32;
		n++;
		f = prev;
	}
	if (f)
		*status = GP_PY_DEPTH;
	return (int)n;
no_thread:
	*status = GP_PY_NO_THREAD;
	return (int)n;
fail:
	*status = GP_PY_READ;
	*err = e;
	return (int)n;
}
