/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * simgpu.h — the simulator's introspection, for tests that check its model:
 * the modelled times of the work items a host thread queued and of events.
 * No CUDA API has these; libsimgpu.so (the GPU model every simulated library
 * of a process shares) exports them, and the static archive has them too.
 *
 * Times are CLOCK_MONOTONIC nanoseconds, the clock the model runs on, so a
 * test compares them with its own clock_gettime(CLOCK_MONOTONIC) readings:
 * a work item starts no earlier than it was queued, and a host call that
 * waits for it returns no earlier than its modelled end.
 */
#ifndef SIMGPU_H
#define SIMGPU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct simgpu_times {
	/* when the host queued it */
	uint64_t enq_ns;
	/* its modelled start: the latest of enq_ns (or, for a synchronous copy from pageable
	 * memory, the call's start, which its staging overlaps), its stream's previous modelled
	 * end and the ends of what it waits for */
	uint64_t start_ns;
	/* its modelled end */
	uint64_t end_ns;
};

/* A reference to the last work item the calling host thread queued, on any stream, through
 * any simulated library: a kernel, copy, memset, host function, NCCL item, event record,
 * stream wait, stream-ordered free, the last node of a launched graph. NULL when it queued
 * none, or its last was recorded into a capture. Drop it with simgpu_op_put(). */
void *simgpu_op_last(void);
/* The item's times: 0 once it ended; -EBUSY before (only enq_ns is filled); -EINVAL for NULL. */
int simgpu_op_times(const void *op, struct simgpu_times *t);
/* Waits (off-CPU) until the item ended, then fills t like simgpu_op_times(). */
int simgpu_op_wait(const void *op, struct simgpu_times *t);
void simgpu_op_put(void *op);

/* The modelled time of the event's last record (a cudaEvent_t or CUevent): 0; -EBUSY before
 * the stream reached it; -ENOENT when never recorded outside a capture; -EINVAL when not a
 * live event. */
int simgpu_event_time(const void *event, uint64_t *t_ns);

/* How many host threads are blocked in the simulator right now, waiting for work to end (a
 * synchronisation, a synchronous copy, simgpu_op_wait(), a launch waiting for queue space):
 * a test's helper thread opens a gate once the test's thread is blocked behind it. */
int simgpu_host_waiters(void);

/* The calling thread's own clock of its calls into the simulated libraries: CLOCK_MONOTONIC as
 * read inside the exported functions themselves (at each library's entry check and as each
 * returns), the first and the last read since the thread last asked. A runtime call's driver
 * call is inside it, so after one call of a program these are two instants inside that call,
 * after its entry probe and before its return probe: a tracer's time of the call holds
 * last_ns - first_ns. */
struct simgpu_call_clock {
	uint64_t first_ns;
	uint64_t last_ns;
};

/* Fills c and starts the thread's clock over: 0; -ENODATA (c zeroed) when no simulated export
 * ran on the thread since the last time; -EINVAL for NULL. */
int simgpu_call_clock(struct simgpu_call_clock *c);

#ifdef __cplusplus
}
#endif

#endif /* SIMGPU_H */
