/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_mem.c — device memory and pinned host memory.
 *
 * Each device reserves one MAP_NORESERVE region of twice its capacity at a
 * recognisable address (0x6000'0000'0000 + dev TiB when free); device and
 * managed allocations are carved from it first-fit, aligned and charged in
 * 512-byte units against the capacity (SIMGPU_DEVICE_MEM_MB). The memory is
 * real, so copies move bytes, and freed ranges are returned to the kernel.
 * Allocations up to SIMGPU_POPULATE_MB are populated when made (as a real
 * allocation is backed at once), so that a copy's first touch does not
 * page-fault its way past the modelled duration.
 * Pinned host allocations are page-aligned anonymous mappings; registered
 * host ranges are only recorded. One sorted table of every tracked range
 * answers "what is this pointer" in O(log n).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "gpu_board.h"
#include "gpu_internal.h"

#define ALIGN	      512u
#define REGION_HINT   0x600000000000ull
#define REGION_STRIDE (1ull << 40)

struct device {
	uintptr_t rbase, rend; /* reserved region */
	uint64_t cap, used;
};

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t mem_once = PTHREAD_ONCE_INIT;
static struct device devs[SG_MAX_DEVICES];
static int ndevs;
static struct sg_range *tab; /* sorted by base */
static size_t ntab, captab;
static size_t page_size;

static void mem_init(void)
{
	const struct sg_config *c = sg_config();
	int d;

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	for (d = 0; d < c->devices; d++) {
		uint64_t len = (2 * c->dev_mem_bytes + (64ull << 20) + (2ull << 20) - 1) &
			       ~((2ull << 20) - 1);
		void *hint =
			len <= REGION_STRIDE
				? (void *)(uintptr_t)(REGION_HINT + (uint64_t)d * REGION_STRIDE)
				: NULL;
		int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
		void *p = MAP_FAILED;

		if (hint)
			p = mmap(hint, len, PROT_READ | PROT_WRITE, fl | MAP_FIXED_NOREPLACE, -1,
				 0);
		if (p == MAP_FAILED)
			p = mmap(NULL, len, PROT_READ | PROT_WRITE, fl, -1, 0);
		if (p == MAP_FAILED)
			break;
		devs[d].rbase = (uintptr_t)p;
		devs[d].rend = (uintptr_t)p + len;
		devs[d].cap = c->dev_mem_bytes;
	}
	ndevs = d;
}

int sg_device_count(void)
{
	pthread_once(&mem_once, mem_init);
	return ndevs;
}

/* Index of the first range with base > p. */
static size_t upper(uintptr_t p)
{
	size_t lo = 0, hi = ntab;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (tab[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int insert(const struct sg_range *r)
{
	size_t i = upper(r->base);

	if (ntab == captab) {
		size_t nc = captab ? captab * 2 : 64;
		struct sg_range *n = realloc(tab, nc * sizeof(*tab));

		if (!n)
			return SG_ENOMEM;
		tab = n;
		captab = nc;
	}
	memmove(&tab[i + 1], &tab[i], (ntab - i) * sizeof(*tab));
	tab[i] = *r;
	ntab++;
	return SG_OK;
}

static void remove_at(size_t i)
{
	memmove(&tab[i], &tab[i + 1], (ntab - i - 1) * sizeof(*tab));
	ntab--;
}

/* The range containing p, or NULL. */
static struct sg_range *containing(uintptr_t p)
{
	size_t i = upper(p);

	if (!i)
		return NULL;
	if (p - tab[i - 1].base < (tab[i - 1].size ? tab[i - 1].size : 1))
		return &tab[i - 1];
	return NULL;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static void populate(uintptr_t base, size_t len)
{
	uintptr_t a = base & ~(uintptr_t)(page_size - 1), p;

	if (len > sg_config()->populate_bytes)
		return;
	len += base - a;
	if (!madvise((void *)a, len, MADV_POPULATE_WRITE))
		return;
	for (p = a; p < a + len; p += page_size) /* older kernels */
		__atomic_fetch_add((char *)p, 0, __ATOMIC_RELAXED);
}

static int region_of(uintptr_t p)
{
	int d;

	for (d = 0; d < ndevs; d++)
		if (p >= devs[d].rbase && p < devs[d].rend)
			return d;
	return -1;
}

int sg_mem_alloc(int dev, size_t size, enum sg_mem_kind kind, unsigned flags, void **out)
{
	struct sg_range r = { .size = size, .kind = kind, .device = dev, .flags = flags };
	int err = SG_OK;

	pthread_once(&mem_once, mem_init);
	if (!out || !size)
		return SG_EINVAL;
	if (kind == SG_MEM_PINNED) {
		size_t len = (size + page_size - 1) & ~(page_size - 1);
		int pop = len <= sg_config()->populate_bytes ? MAP_POPULATE : 0;
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | pop,
			       -1, 0);

		if (p == MAP_FAILED)
			return SG_ENOMEM;
		r.base = (uintptr_t)p;
		r.charged = len;
		pthread_mutex_lock(&mem_mu);
		err = insert(&r);
		pthread_mutex_unlock(&mem_mu);
		if (err)
			munmap(p, len);
		else
			*out = p;
		return err;
	}
	if (dev < 0 || dev >= ndevs)
		return SG_EDEVICE;
	if (size > devs[dev].cap)
		return SG_ENOMEM;
	r.charged = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);

	pthread_mutex_lock(&mem_mu);
	if (devs[dev].used + r.charged > devs[dev].cap) {
		err = SG_ENOMEM;
	} else {
		/* first fit among the gaps of the device's region */
		uintptr_t at = devs[dev].rbase;
		size_t i = upper(devs[dev].rbase);

		if (i && tab[i - 1].base + tab[i - 1].charged > at)
			at = tab[i - 1].base + tab[i - 1].charged;
		for (; i < ntab && tab[i].base < devs[dev].rend; i++) {
			if (tab[i].base >= at + r.charged)
				break;
			at = tab[i].base + tab[i].charged;
		}
		if (at + r.charged > devs[dev].rend) {
			err = SG_ENOMEM;
		} else {
			r.base = at;
			err = insert(&r);
			if (!err) {
				devs[dev].used += r.charged;
				sg_board_mem(dev, devs[dev].used);
			}
		}
	}
	pthread_mutex_unlock(&mem_mu);
	if (!err) {
		populate(r.base, r.size);
		*out = (void *)r.base;
	}
	return err;
}

static void release_pages(uintptr_t base, size_t len)
{
	uintptr_t a = (base + page_size - 1) & ~(uintptr_t)(page_size - 1);
	uintptr_t b = (base + len) & ~(uintptr_t)(page_size - 1);

	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

int sg_mem_free(void *p, unsigned kinds, struct sg_range *freed)
{
	struct sg_range r;
	size_t i;

	pthread_once(&mem_once, mem_init);
	pthread_mutex_lock(&mem_mu);
	i = upper((uintptr_t)p);
	if (!i || tab[i - 1].base != (uintptr_t)p || !(kinds & (1u << tab[i - 1].kind)) ||
	    tab[i - 1].kind == SG_MEM_REGISTERED || (tab[i - 1].flags & SG_RANGE_VMM)) {
		pthread_mutex_unlock(&mem_mu);
		return SG_EINVAL;
	}
	r = tab[i - 1];
	remove_at(i - 1);
	if (r.kind == SG_MEM_DEVICE || r.kind == SG_MEM_MANAGED) {
		devs[r.device].used -= r.charged;
		sg_board_mem(r.device, devs[r.device].used);
	}
	pthread_mutex_unlock(&mem_mu);

	if (r.kind == SG_MEM_PINNED)
		munmap(p, r.charged);
	else
		release_pages(r.base, r.charged);
	if (freed)
		*freed = r;
	return SG_OK;
}

int sg_host_register(void *p, size_t size, unsigned flags)
{
	struct sg_range r = { .base = (uintptr_t)p,
			      .size = size,
			      .charged = size,
			      .kind = SG_MEM_REGISTERED,
			      .device = -1,
			      .flags = flags };
	size_t i;
	int err;

	pthread_once(&mem_once, mem_init);
	if (!p || !size || (uintptr_t)p + size < (uintptr_t)p)
		return SG_EINVAL;
	pthread_mutex_lock(&mem_mu);
	if (region_of(r.base) >= 0 || region_of(r.base + size - 1) >= 0) {
		err = SG_EINVAL;
		goto out;
	}
	/* overlaps the range before p, or a range starting inside [p, p+size) */
	i = upper(r.base);
	if ((i && tab[i - 1].base + tab[i - 1].size > r.base) ||
	    (i < ntab && tab[i].base < r.base + size)) {
		err = SG_EALREADY_REGISTERED;
		goto out;
	}
	err = insert(&r);
out:
	pthread_mutex_unlock(&mem_mu);
	return err;
}

int sg_host_unregister(void *p)
{
	size_t i;
	int err = SG_ENOT_REGISTERED;

	pthread_once(&mem_once, mem_init);
	if (!p)
		return SG_EINVAL;
	pthread_mutex_lock(&mem_mu);
	i = upper((uintptr_t)p);
	if (i && tab[i - 1].base == (uintptr_t)p && tab[i - 1].kind == SG_MEM_REGISTERED) {
		remove_at(i - 1);
		err = SG_OK;
	}
	pthread_mutex_unlock(&mem_mu);
	return err;
}

int sg_mem_lookup(const void *p, struct sg_range *out)
{
	struct sg_range *r;
	int err = SG_EINVAL;

	pthread_once(&mem_once, mem_init);
	pthread_mutex_lock(&mem_mu);
	r = containing((uintptr_t)p);
	if (r) {
		*out = *r;
		err = SG_OK;
	} else {
		memset(out, 0, sizeof(*out));
		out->kind = SG_MEM_PAGEABLE;
		out->device = region_of((uintptr_t)p);
	}
	pthread_mutex_unlock(&mem_mu);
	return err;
}

int sg_mem_check(const void *p, size_t len, struct sg_range *out)
{
	int err = sg_mem_lookup(p, out);

	if (!p)
		return SG_EINVAL;
	if (err) {
		/* untracked: ordinary host memory, unless inside a device region or an
		 * address reservation (unmapped virtual memory) */
		return out->device >= 0 || sg_vmm_reserved((uintptr_t)p) ? SG_EINVAL : SG_OK;
	}
	if ((uintptr_t)p - out->base + len > out->size || (out->flags & SG_RANGE_NOACCESS))
		return SG_EINVAL;
	return SG_OK;
}

void sg_mem_info(int dev, size_t *free_bytes, size_t *total_bytes)
{
	pthread_once(&mem_once, mem_init);
	pthread_mutex_lock(&mem_mu);
	if (dev >= 0 && dev < ndevs) {
		*free_bytes = devs[dev].cap - devs[dev].used;
		*total_bytes = devs[dev].cap;
	} else {
		*free_bytes = *total_bytes = 0;
	}
	pthread_mutex_unlock(&mem_mu);
}

void sg_mem_reset(int dev)
{
	size_t i;

	pthread_once(&mem_once, mem_init);
	pthread_mutex_lock(&mem_mu);
	for (i = 0; i < ntab;) {
		if ((tab[i].kind == SG_MEM_DEVICE || tab[i].kind == SG_MEM_MANAGED) &&
		    tab[i].device == dev && !(tab[i].flags & SG_RANGE_VMM)) {
			release_pages(tab[i].base, tab[i].charged);
			devs[dev].used -= tab[i].charged;
			sg_board_mem(dev, devs[dev].used);
			remove_at(i);
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&mem_mu);
}

/* ---- for VMM mappings (gpu_vmm.c) ---------------------------------------------------- */
int sg_mem_charge(int dev, uint64_t bytes)
{
	int err = SG_OK;

	pthread_once(&mem_once, mem_init);
	if (dev < 0 || dev >= ndevs)
		return SG_EDEVICE;
	pthread_mutex_lock(&mem_mu);
	if (devs[dev].used + bytes > devs[dev].cap)
		err = SG_ENOMEM;
	else
		devs[dev].used += bytes;
	if (!err)
		sg_board_mem(dev, devs[dev].used);
	pthread_mutex_unlock(&mem_mu);
	return err;
}

void sg_mem_uncharge(int dev, uint64_t bytes)
{
	pthread_mutex_lock(&mem_mu);
	if (dev >= 0 && dev < ndevs) {
		devs[dev].used -= bytes;
		sg_board_mem(dev, devs[dev].used);
	}
	pthread_mutex_unlock(&mem_mu);
}

int sg_mem_add_range(const struct sg_range *r)
{
	size_t i;
	int err;

	pthread_once(&mem_once, mem_init);
	pthread_mutex_lock(&mem_mu);
	i = upper(r->base);
	if ((i && tab[i - 1].base + tab[i - 1].size > r->base) ||
	    (i < ntab && tab[i].base < r->base + r->size))
		err = SG_EINVAL;
	else
		err = insert(r);
	pthread_mutex_unlock(&mem_mu);
	return err;
}

int sg_mem_del_range(uintptr_t base)
{
	size_t i;
	int err = SG_EINVAL;

	pthread_mutex_lock(&mem_mu);
	i = upper(base);
	if (i && tab[i - 1].base == base) {
		remove_at(i - 1);
		err = SG_OK;
	}
	pthread_mutex_unlock(&mem_mu);
	return err;
}

void sg_mem_set_flags(uintptr_t base, unsigned set, unsigned clear)
{
	size_t i;

	pthread_mutex_lock(&mem_mu);
	i = upper(base);
	if (i && tab[i - 1].base == base)
		tab[i - 1].flags = (tab[i - 1].flags & ~clear) | set;
	pthread_mutex_unlock(&mem_mu);
}
