/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_standin.h — the kernels launched in place of the original ones,
 * whose code the replay does not have (docs/replay.md, "Kernels").
 *
 * On a real driver: one PTX kernel, gp_replay_spin(u64 ns), that spins on
 * %globaltimer for ns nanoseconds on one thread of one block; each launch
 * gets its kernel's planned duration. On the simulator (which takes no
 * PTX): a module in its text format that lists every original kernel name,
 * so that the simulator times each stand-in as it timed the original
 * (SIMGPU_KERNEL_TIMES by name). Which one is used is decided by the
 * driver: the PTX is offered first; an image error makes the replay offer
 * the name list.
 */
#ifndef GP_REPLAY_STANDIN_H
#define GP_REPLAY_STANDIN_H

#include <pthread.h>
#include <stdbool.h>

#include "replay/replay_cuda.h"
#include "replay/replay_plan.h"

#define GP_STANDIN_DEVICES 64

struct gp_standins {
	const struct gp_cuda *cu;
	const struct gp_rprocess *p;
	pthread_mutex_t lock;
	bool names;			  /* the simulator's name list (else the PTX spin kernel) */
	void *module[GP_STANDIN_DEVICES]; /* per device: modules belong to a context */
	void **func[GP_STANDIN_DEVICES];  /* per device: [kernel] (names) or [0] (spin) */
};

void gp_standins_init(struct gp_standins *s, const struct gp_cuda *cu, const struct gp_rprocess *p);
/*
 * Loads the stand-ins of device (the calling thread's context must be that
 * device's primary context) unless loaded. 0, or the driver's error.
 */
int gp_standins_load(struct gp_standins *s, int device, const char **what);
/*
 * Launches the stand-in of kernel k (-1: unnamed) on stream for ns, on the
 * calling thread's device. 0, or the driver's error (*what says which call).
 */
int gp_standin_launch(struct gp_standins *s, int device, int k, __u64 ns, void *stream,
		      const char **what);
void gp_standins_release(struct gp_standins *s);
/* "ptx" or "simulator names" once a launch decided it, NULL before. */
const char *gp_standins_kind(const struct gp_standins *s);

#endif /* GP_REPLAY_STANDIN_H */
