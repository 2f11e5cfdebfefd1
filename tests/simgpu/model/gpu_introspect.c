/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_introspect.c — the simulator's introspection (include/simgpu.h): the
 * modelled times of each host thread's last queued op and of events, so
 * that tests check the model's own timestamps instead of the host's wall
 * clock, which a busy machine stretches; and each host thread's clock of
 * its calls, read inside the exported functions (sg_call_mark).
 */
#include <errno.h>

#include "gpu_internal.h"
#include "simgpu.h"

void *simgpu_op_last(void)
{
	struct sg_op *op;

	pthread_mutex_lock(&sg_mu);
	op = sg_last_op_locked();
	if (op)
		op->refs++;
	pthread_mutex_unlock(&sg_mu);
	return op;
}

static int times_locked(const struct sg_op *op, struct simgpu_times *t)
{
	t->enq_ns = op->t_enq;
	t->start_ns = op->done ? op->t_start : 0;
	t->end_ns = op->done ? op->t_end : 0;
	return op->done ? 0 : -EBUSY;
}

int simgpu_op_times(const void *op, struct simgpu_times *t)
{
	int err;

	if (!op || !t)
		return -EINVAL;
	pthread_mutex_lock(&sg_mu);
	err = times_locked(op, t);
	pthread_mutex_unlock(&sg_mu);
	return err;
}

int simgpu_op_wait(const void *h, struct simgpu_times *t)
{
	const struct sg_op *op = h;
	int err;

	if (!op || !t)
		return -EINVAL;
	pthread_mutex_lock(&sg_mu);
	while (!op->done)
		sg_host_wait_locked();
	err = times_locked(op, t);
	pthread_mutex_unlock(&sg_mu);
	return err;
}

void simgpu_op_put(void *op)
{
	pthread_mutex_lock(&sg_mu);
	sg_op_put_locked(op);
	pthread_mutex_unlock(&sg_mu);
}

int simgpu_event_time(const void *h, uint64_t *t_ns)
{
	const struct sg_event *e = h;
	int err = 0;

	if (!t_ns)
		return -EINVAL;
	pthread_mutex_lock(&sg_mu);
	if (!sg_handle_is(h, SG_HK_EVENT))
		err = -EINVAL;
	else if (!e->op)
		err = -ENOENT;
	else if (!e->op->done)
		err = -EBUSY;
	else
		*t_ns = e->op->t_end;
	pthread_mutex_unlock(&sg_mu);
	return err;
}

int simgpu_host_waiters(void)
{
	int n;

	pthread_mutex_lock(&sg_mu);
	n = sg_host_waiters;
	pthread_mutex_unlock(&sg_mu);
	return n;
}

/* The calling thread's first and last sg_call_mark() since its last simgpu_call_clock() (0: none). */
static __thread uint64_t call_first_ns, call_last_ns;

void sg_call_mark(void)
{
	uint64_t now = sg_now_ns();

	if (!call_first_ns)
		call_first_ns = now;
	call_last_ns = now;
}

int simgpu_call_clock(struct simgpu_call_clock *c)
{
	if (!c)
		return -EINVAL;
	c->first_ns = call_first_ns;
	c->last_ns = call_last_ns;
	call_first_ns = call_last_ns = 0;
	return c->first_ns ? 0 : -ENODATA;
}
