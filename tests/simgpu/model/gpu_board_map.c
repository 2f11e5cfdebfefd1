/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_board_map.c — what the board's writer (gpu_board.c, in libsimgpu) and
 * its reader (the simulated NVML) share: mapping the segment, and telling a
 * slot whose process is gone. Built into both libraries, hidden in each.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu_board.h"

/* /proc/PID/stat's 22nd field: tells a process from a later one with the same pid. */
uint64_t sg_board_start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	if (!p)
		return 0;
	for (i = 0; i < 20 && p; i++) /* field 2 ends at ')': 20 more spaces to field 22 */
		p = strchr(p + 1, ' ');
	if (p)
		sscanf(p + 1, "%llu", &v);
	return v;
}

/* The board, mapped read-write and created if need be. NULL when it cannot be. */
struct sg_board *sg_board_map(int create)
{
	const char *name = getenv("SIMGPU_BOARD");
	struct sg_board *b;
	int fd;

	if (!name || !*name)
		name = SG_BOARD_DEFAULT;
	fd = shm_open(name, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0666);
	if (fd < 0)
		return NULL;
	if (create) {
		fchmod(fd, 0666); /* every user's processes share the machine's GPUs */
		if (ftruncate(fd, sizeof(*b))) {
			close(fd);
			return NULL;
		}
	}
	b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (b == MAP_FAILED)
		return NULL;
	if (create) {
		uint32_t zero = 0;

		__atomic_compare_exchange_n(&b->magic, &zero, SG_BOARD_MAGIC, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		b->nslots = SG_BOARD_SLOTS;
	}
	if (__atomic_load_n(&b->magic, __ATOMIC_ACQUIRE) != SG_BOARD_MAGIC) {
		munmap(b, sizeof(*b));
		return NULL;
	}
	return b;
}

/* Whether a slot's process is gone (or its pid now names another process). */
int sg_board_slot_dead(const struct sg_board_slot *s, uint32_t pid)
{
	if (kill((pid_t)pid, 0) && errno == ESRCH)
		return 1;
	return sg_board_start_time((pid_t)pid) != s->start_time;
}
