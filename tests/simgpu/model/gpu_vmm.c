/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_vmm.c — virtual memory management (the driver's cuMemCreate,
 * cuMemAddressReserve, cuMemMap, cuMemUnmap, cuMemRelease, cuMemSetAccess).
 *
 * A physical allocation is a memfd of its size, charged to its device's
 * capacity when created and uncharged when it is both released and no
 * longer mapped. An address reservation is a PROT_NONE, MAP_NORESERVE
 * mapping (placed from 0x7000'0000'0000 up when free, so that reserved
 * addresses are recognisable); mapping a physical allocation replaces part
 * of it with a MAP_SHARED view of the memfd, so two views of one
 * allocation alias and copies really move bytes; unmapping puts the
 * PROT_NONE reservation back. Each mapping is a range of the memory table,
 * of kind SG_MEM_DEVICE with SG_RANGE_VMM, so copies classify it as device
 * memory of the allocation's device; until access is granted it carries
 * SG_RANGE_NOACCESS and copies to it fail, as on a GPU. An address inside a
 * reservation but not mapped is invalid for copies too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "gpu_internal.h"

#define VA_HINT 0x700000000000ull

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

struct sg_phys {
	struct sg_phys *next;
	int dev;
	size_t size;
	int fd;
	int maps;
	bool released;
};

struct resv {
	struct resv *next;
	uintptr_t base;
	size_t size;
};

struct mapping {
	struct mapping *next;
	uintptr_t va;
	size_t size;
	struct sg_phys *phys;
};

static pthread_mutex_t vmm_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sg_phys *physs;
static struct resv *resvs;
static struct mapping *maps;
static int n_resvs; /* read without the lock as a fast path */
static uintptr_t next_hint = VA_HINT;

static struct sg_phys *phys_find_locked(const void *h)
{
	for (struct sg_phys *p = physs; p; p = p->next)
		if (p == h)
			return p;
	return NULL;
}

/* Frees a released allocation once nothing maps it. */
static void phys_maybe_free_locked(struct sg_phys *p)
{
	struct sg_phys **pp;

	if (!p->released || p->maps)
		return;
	for (pp = &physs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	close(p->fd);
	sg_mem_uncharge(p->dev, p->size);
	free(p);
}

static struct resv *resv_containing_locked(uintptr_t p, size_t len)
{
	for (struct resv *r = resvs; r; r = r->next)
		if (p >= r->base && p - r->base < r->size && len <= r->size - (p - r->base))
			return r;
	return NULL;
}

bool sg_vmm_reserved(uintptr_t p)
{
	bool in;

	if (!__atomic_load_n(&n_resvs, __ATOMIC_RELAXED))
		return false;
	pthread_mutex_lock(&vmm_mu);
	in = resv_containing_locked(p, 1) != NULL;
	pthread_mutex_unlock(&vmm_mu);
	return in;
}

/* ---- physical allocations ------------------------------------------------------------ */
int sg_vmm_create(int dev, size_t size, struct sg_phys **out)
{
	struct sg_phys *p;
	int err;

	*out = NULL;
	if (dev < 0 || dev >= sg_device_count())
		return SG_EDEVICE;
	if (!size || size % SG_VMM_GRANULARITY)
		return SG_EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return SG_ENOMEM;
	p->dev = dev;
	p->size = size;
	p->fd = memfd_create("simgpu-vmm", MFD_CLOEXEC);
	if (p->fd < 0 || ftruncate(p->fd, (off_t)size)) {
		if (p->fd >= 0)
			close(p->fd);
		free(p);
		return SG_ENOMEM;
	}
	err = sg_mem_charge(dev, size);
	if (err) {
		close(p->fd);
		free(p);
		return err;
	}
	pthread_mutex_lock(&vmm_mu);
	p->next = physs;
	physs = p;
	pthread_mutex_unlock(&vmm_mu);
	*out = p;
	return SG_OK;
}

int sg_vmm_release(void *h)
{
	struct sg_phys *p;
	int err = SG_OK;

	pthread_mutex_lock(&vmm_mu);
	p = phys_find_locked(h);
	if (!p || p->released) {
		err = SG_EINVAL;
	} else {
		p->released = true;
		phys_maybe_free_locked(p);
	}
	pthread_mutex_unlock(&vmm_mu);
	return err;
}

int sg_vmm_device(void *h, int *dev)
{
	struct sg_phys *p;
	int err = SG_OK;

	pthread_mutex_lock(&vmm_mu);
	p = phys_find_locked(h);
	if (!p || p->released)
		err = SG_EINVAL;
	else
		*dev = p->dev;
	pthread_mutex_unlock(&vmm_mu);
	return err;
}

/* ---- address reservations --------------------------------------------------------------- */
static void *reserve_at(uintptr_t hint, size_t len)
{
	int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

	return mmap((void *)hint, len, PROT_NONE, hint ? fl | MAP_FIXED_NOREPLACE : fl, -1, 0);
}

int sg_vmm_reserve(size_t size, size_t align, uintptr_t hint, uintptr_t *out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
	struct resv *r;
	uintptr_t base = 0, a;
	void *m = MAP_FAILED;

	if (!out || !size || size % page || hint % page || (align & (align - 1)))
		return SG_EINVAL;
	if (align < SG_VMM_GRANULARITY)
		align = SG_VMM_GRANULARITY;
	r = calloc(1, sizeof(*r));
	if (!r)
		return SG_ENOMEM;
	pthread_mutex_lock(&vmm_mu);
	/* the hint, if it is free and aligned */
	if (hint && !(hint % align)) {
		m = reserve_at(hint, size);
		if (m != MAP_FAILED && (uintptr_t)m != hint) {
			munmap(m, size);
			m = MAP_FAILED;
		}
		base = (uintptr_t)m;
	}
	/* else from VA_HINT up, else anywhere; over-reserve and trim to align */
	len = size + align;
	for (int tries = 0; m == MAP_FAILED && tries < 64; tries++) {
		m = reserve_at(next_hint, len);
		if (m == MAP_FAILED)
			next_hint += len + align;
	}
	if (m == MAP_FAILED)
		m = reserve_at(0, len);
	if (m == MAP_FAILED) {
		pthread_mutex_unlock(&vmm_mu);
		free(r);
		return SG_ENOMEM;
	}
	if (!base) {
		a = ((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1);
		if (a > (uintptr_t)m)
			munmap(m, a - (uintptr_t)m);
		if ((uintptr_t)m + len > a + size)
			munmap((void *)(a + size), (uintptr_t)m + len - (a + size));
		base = a;
		if (base + size > next_hint)
			next_hint = base + size;
	}
	r->base = base;
	r->size = size;
	r->next = resvs;
	resvs = r;
	__atomic_add_fetch(&n_resvs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&vmm_mu);
	*out = base;
	return SG_OK;
}

int sg_vmm_free(uintptr_t va, size_t size)
{
	struct resv **pp, *r = NULL;
	int err = SG_EINVAL;

	pthread_mutex_lock(&vmm_mu);
	for (pp = &resvs; *pp; pp = &(*pp)->next)
		if ((*pp)->base == va && (*pp)->size == size) {
			r = *pp;
			break;
		}
	if (r) {
		bool mapped = false;

		for (struct mapping *m = maps; m; m = m->next)
			if (m->va >= r->base && m->va - r->base < r->size)
				mapped = true;
		if (!mapped) {
			*pp = r->next;
			munmap((void *)r->base, r->size);
			free(r);
			__atomic_sub_fetch(&n_resvs, 1, __ATOMIC_RELAXED);
			err = SG_OK;
		}
	}
	pthread_mutex_unlock(&vmm_mu);
	return err;
}

/* ---- mappings ------------------------------------------------------------------------------ */
int sg_vmm_map(uintptr_t va, size_t size, size_t offset, void *h)
{
	struct sg_range rg = { .base = va,
			       .size = size,
			       .kind = SG_MEM_DEVICE,
			       .flags = SG_RANGE_VMM | SG_RANGE_NOACCESS };
	struct mapping *m = NULL;
	struct sg_phys *p;
	void *v;
	int err = SG_EINVAL;

	if (!size || va % SG_VMM_GRANULARITY || size % SG_VMM_GRANULARITY || offset)
		return SG_EINVAL;
	pthread_mutex_lock(&vmm_mu);
	p = phys_find_locked(h);
	if (!p || p->released || size > p->size || !resv_containing_locked(va, size))
		goto out;
	for (struct mapping *o = maps; o; o = o->next)
		if (o->va < va + size && va < o->va + o->size)
			goto out;
	err = SG_ENOMEM;
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	v = mmap((void *)va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, p->fd,
		 (off_t)offset);
	if (v == MAP_FAILED)
		goto out;
	rg.device = p->dev;
	err = sg_mem_add_range(&rg);
	if (err) {
		mmap((void *)va, size, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
		goto out;
	}
	if (size <= sg_config()->populate_bytes)
		madvise((void *)va, size, MADV_POPULATE_WRITE);
	m->va = va;
	m->size = size;
	m->phys = p;
	m->next = maps;
	maps = m;
	m = NULL;
	p->maps++;
out:
	pthread_mutex_unlock(&vmm_mu);
	free(m);
	return err;
}

int sg_vmm_unmap(uintptr_t va, size_t size)
{
	struct mapping **pp;
	size_t covered = 0;
	int err = SG_OK;

	if (!size)
		return SG_EINVAL;
	/* pending work may still copy to or from the range */
	sg_all_sync();
	pthread_mutex_lock(&vmm_mu);
	/* every mapping the range touches must lie entirely inside it */
	for (struct mapping *m = maps; m; m = m->next) {
		if (!(m->va < va + size && va < m->va + m->size))
			continue;
		if (m->va < va || m->va + m->size > va + size)
			err = SG_EINVAL;
		covered += m->size;
	}
	if (!err && !covered)
		err = SG_EINVAL;
	for (pp = &maps; !err && *pp;) {
		struct mapping *m = *pp;

		if (m->va >= va && m->va + m->size <= va + size) {
			*pp = m->next;
			sg_mem_del_range(m->va);
			mmap((void *)m->va, m->size, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
			m->phys->maps--;
			phys_maybe_free_locked(m->phys);
			free(m);
		} else {
			pp = &m->next;
		}
	}
	pthread_mutex_unlock(&vmm_mu);
	return err;
}

int sg_vmm_set_access(uintptr_t va, size_t size, int access)
{
	size_t covered = 0;
	int err = SG_OK;

	if (!size)
		return SG_EINVAL;
	pthread_mutex_lock(&vmm_mu);
	/* a fully mapped range: its mappings must cover it without gaps */
	for (struct mapping *m = maps; m; m = m->next)
		if (m->va < va + size && va < m->va + m->size) {
			if (m->va < va || m->va + m->size > va + size)
				err = SG_EINVAL;
			covered += m->size;
		}
	if (covered != size)
		err = SG_EINVAL;
	for (struct mapping *m = maps; !err && m; m = m->next)
		if (m->va >= va && m->va + m->size <= va + size)
			sg_mem_set_flags(m->va, access ? 0 : SG_RANGE_NOACCESS,
					 access ? SG_RANGE_NOACCESS : 0);
	pthread_mutex_unlock(&vmm_mu);
	return err;
}
