/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_board.c — this process's slot on the board (gpu_board.h): claimed at
 * load (and in a forked child before fork returns), so that no traced call
 * pays for opening the board or reading /proc: publishing is then a mutex
 * and a seqlock. Written under the slot's seqlock, given back at exit.
 * What it publishes per device: the memory charged, that it has a context
 * there, its stream workers' busy intervals (SM: kernels, memsets, NCCL
 * items; memory: copies touching device memory, memsets) and the bytes its
 * copies moved across PCIe. Publishing never fails the
 * model: a board that cannot be opened is said once and the model runs on.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu_board.h"
#include "gpu_internal.h"

static pthread_mutex_t board_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sg_board *board;
static struct sg_board_slot *mine;
static pid_t mine_pid;
static int board_failed;

static void give_back(void)
{
	pthread_mutex_lock(&board_mu);
	if (mine && mine_pid == getpid())
		__atomic_store_n(&mine->pid, 0, __ATOMIC_RELEASE);
	mine = NULL;
	pthread_mutex_unlock(&board_mu);
}

/* This process's slot, claimed (a free one, or one whose process is gone); board_mu held. */
static struct sg_board_slot *slot_locked(void)
{
	pid_t pid = getpid();
	uint64_t start;

	if (mine && mine_pid == pid)
		return mine;
	if (board_failed)
		return NULL;
	if (!board && !(board = sg_board_map(1))) {
		board_failed = 1;
		fprintf(stderr,
			"simgpu: the board (SIMGPU_BOARD) cannot be opened: NVML sees nothing of this process\n");
		return NULL;
	}
	start = sg_board_start_time(pid);
	for (int i = 0; i < SG_BOARD_SLOTS; i++) {
		struct sg_board_slot *s = &board->slot[i];
		uint32_t cur = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);

		if (cur && !sg_board_slot_dead(s, cur))
			continue;
		if (!__atomic_compare_exchange_n(&s->pid, &cur, (uint32_t)pid, false,
						 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			continue;
		__atomic_add_fetch(&s->seq, 1, __ATOMIC_ACQ_REL);
		s->start_time = start;
		memset(s->dev, 0, sizeof(s->dev));
		__atomic_add_fetch(&s->seq, 1, __ATOMIC_ACQ_REL);
		if (!mine_pid)
			atexit(give_back);
		mine = s;
		mine_pid = pid;
		return s;
	}
	board_failed = 1;
	fprintf(stderr,
		"simgpu: the board is full (%d processes): NVML sees nothing of this process\n",
		SG_BOARD_SLOTS);
	return NULL;
}

/*
 * The slot is claimed outside the workload's calls: at load, and in a forked
 * child before fork() returns (the mutex is held across fork so the child's
 * copy is never left locked). The exactness tests time and count what
 * happens inside traced calls; a first publish that opened the board there
 * would add syscalls and faults to one of them.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&board_mu);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&board_mu);
}

static void fork_child(void)
{
	slot_locked();
	pthread_mutex_unlock(&board_mu);
}

__attribute__((constructor)) static void board_at_load(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	pthread_mutex_lock(&board_mu);
	slot_locked();
	pthread_mutex_unlock(&board_mu);
}

/* Runs fn on this process's device dev entry under the seqlock. */
#define BOARD_WRITE(dev, d, body)                                          \
	do {                                                               \
		struct sg_board_slot *s_;                                  \
		if ((dev) < 0 || (dev) >= SG_BOARD_DEVS)                   \
			break;                                             \
		pthread_mutex_lock(&board_mu);                             \
		if ((s_ = slot_locked())) {                                \
			struct sg_board_dev *d = &s_->dev[dev];            \
			__atomic_add_fetch(&s_->seq, 1, __ATOMIC_ACQ_REL); \
			d->present = 1;                                    \
			body;                                              \
			__atomic_add_fetch(&s_->seq, 1, __ATOMIC_ACQ_REL); \
		}                                                          \
		pthread_mutex_unlock(&board_mu);                           \
	} while (0)

void sg_board_context(int dev)
{
	BOARD_WRITE(dev, d, (void)d);
}

void sg_board_mem(int dev, uint64_t charged)
{
	BOARD_WRITE(dev, d, d->mem_bytes = charged);
}

void sg_board_pcie(int dev, int to_host, uint64_t bytes)
{
	BOARD_WRITE(dev, d, *(to_host ? &d->tx_bytes : &d->rx_bytes) += bytes);
}

/*
 * Items are registered as workers start them, so nearly in order of their starts: one that
 * overlaps the open run extends it; one after it closes it; one wholly before it (a worker that
 * ran late) is added as it is (it may overlap a closed run: counted twice, a rare small excess).
 */
static void busy_add(struct sg_board_busy *b, uint64_t s, uint64_t e)
{
	if (e <= s)
		return;
	if (!b->open_end) {
		b->open_start = s;
		b->open_end = e;
	} else if (s <= b->open_end && e >= b->open_start) {
		if (s < b->open_start)
			b->open_start = s;
		if (e > b->open_end)
			b->open_end = e;
	} else if (s > b->open_end) {
		b->closed_ns += b->open_end - b->open_start;
		b->open_start = s;
		b->open_end = e;
	} else {
		b->closed_ns += e - s;
	}
}

void sg_board_busy(int dev, int cls, uint64_t start, uint64_t end)
{
	if (cls < 0 || cls >= SG_BUSY_N)
		return;
	BOARD_WRITE(dev, d, busy_add(&d->busy[cls], start, end));
}
