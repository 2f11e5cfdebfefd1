/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_board.h — the simulated machine's view of its GPUs across processes:
 * a shared-memory segment (the "board") where every process's model
 * publishes what it holds and does on each device (memory charged, busy
 * intervals of its stream workers, PCIe bytes), and from which the
 * simulated NVML (nvml/nvml.c) reads, as the real NVML reads the kernel
 * driver's state. One slot per process, written under a seqlock so that a
 * reader in another process never sees half an update. The layout is
 * shared by the writer (gpu_board.c, libsimgpu) and the reader (nvml.c).
 */
#ifndef SIMGPU_GPU_BOARD_H
#define SIMGPU_GPU_BOARD_H

#include <stdint.h>

/* The segment's name unless SIMGPU_BOARD names another (a test names its own: its "machine"). */
#define SG_BOARD_DEFAULT "/simgpu-board"
#define SG_BOARD_MAGIC	 0x31424753u /* "SGB1" */
#define SG_BOARD_SLOTS	 64
#define SG_BOARD_DEVS	 16 /* = SG_MAX_DEVICES */

enum sg_board_class { SG_BUSY_SM = 0, SG_BUSY_MEM, SG_BUSY_N };

/*
 * Busy time as the union of the intervals registered (modelled start and end of each item): the
 * closed part, and the interval still open (the last merged run). Busy up to time t is
 * closed_ns + the open run's part before t.
 */
struct sg_board_busy {
	uint64_t closed_ns;
	uint64_t open_start, open_end; /* open_end 0: none yet */
};

struct sg_board_dev {
	uint64_t mem_bytes; /* device memory charged (allocations, VMM physical memory) */
	uint32_t present;   /* the process has a context on the device */
	uint32_t pad;
	struct sg_board_busy busy[SG_BUSY_N];
	uint64_t
		tx_bytes; /* PCIe, from the device's side: sent to the host (device to host copies) */
	uint64_t rx_bytes; /* received from the host (host to device copies) */
};

struct sg_board_slot {
	uint32_t pid;	     /* 0: free (atomic) */
	uint32_t seq;	     /* odd while the owner writes (atomic) */
	uint64_t start_time; /* /proc/PID/stat's starttime: a reused pid is another process */
	struct sg_board_dev dev[SG_BOARD_DEVS];
};

struct sg_board {
	uint32_t magic, nslots;
	struct sg_board_slot slot[SG_BOARD_SLOTS];
};

static inline uint64_t sg_board_busy_at(const struct sg_board_busy *b, uint64_t t)
{
	uint64_t end = b->open_end < t ? b->open_end : t;

	return b->closed_ns + (b->open_end && end > b->open_start ? end - b->open_start : 0);
}

#include <sys/types.h>

#define SG_BOARD_HIDDEN __attribute__((visibility("hidden")))

/* gpu_board_map.c (both libraries) */
SG_BOARD_HIDDEN uint64_t sg_board_start_time(pid_t pid);   /* 0: unknown */
SG_BOARD_HIDDEN struct sg_board *sg_board_map(int create); /* NULL: cannot */
SG_BOARD_HIDDEN int sg_board_slot_dead(const struct sg_board_slot *s, uint32_t pid);

/* gpu_board.c (libsimgpu): this process's slot. sg_board_context is the driver's (exported). */
void sg_board_context(int dev);
SG_BOARD_HIDDEN void sg_board_mem(int dev, uint64_t charged);
SG_BOARD_HIDDEN void sg_board_pcie(int dev, int to_host, uint64_t bytes);
SG_BOARD_HIDDEN void sg_board_busy(int dev, int cls, uint64_t start, uint64_t end);

#endif /* SIMGPU_GPU_BOARD_H */
