/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_func.c — the functions the model can launch, as API layers hand them
 * out: the driver's CUfunction and CUkernel handles (modules, libraries)
 * and the runtime's registered kernels all are sg_func objects, live in the
 * handle registry, so that a launch through any layer finds the same name
 * and modelled duration, and a stale or garbage handle is recognised. Names
 * are interned: captured work, pending work and logs keep pointing at them
 * after the handle has gone.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

struct sg_func {
	int kind;
	const char *name; /* interned */
	uint64_t dur_ns;
};

/* ---- interned names: an open-addressing set of strings, never freed ----------------- */
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;
static const char **names;
static size_t names_cap, names_used;

static size_t str_hash(const char *s)
{
	size_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int names_grow(void)
{
	size_t nc = names_cap ? names_cap * 2 : 256, i, j;
	const char **n = calloc(nc, sizeof(*n));

	if (!n)
		return -1;
	for (i = 0; i < names_cap; i++) {
		if (!names[i])
			continue;
		for (j = str_hash(names[i]) & (nc - 1); n[j]; j = (j + 1) & (nc - 1))
			;
		n[j] = names[i];
	}
	free(names);
	names = n;
	names_cap = nc;
	return 0;
}

const char *sg_intern(const char *s)
{
	const char *r = NULL;
	size_t j;

	if (!s)
		return NULL;
	pthread_mutex_lock(&names_mu);
	if ((names_used + 1) * 2 > names_cap && names_grow())
		goto out;
	for (j = str_hash(s) & (names_cap - 1); names[j]; j = (j + 1) & (names_cap - 1))
		if (!strcmp(names[j], s)) {
			r = names[j];
			goto out;
		}
	r = strdup(s);
	if (r) {
		names[j] = r;
		names_used++;
	}
out:
	pthread_mutex_unlock(&names_mu);
	return r;
}

/* ---- functions ---------------------------------------------------------------------- */
int sg_func_create(const char *name, enum sg_func_kind kind, struct sg_func **out)
{
	struct sg_func *f;
	int err = SG_OK;

	*out = NULL;
	if (!name || (kind != SG_FUNC_FUNCTION && kind != SG_FUNC_KERNEL))
		return SG_EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->name = sg_intern(name))) {
		free(f);
		return SG_ENOMEM;
	}
	f->kind = kind;
	f->dur_ns = sg_kernel_ns(f->name);
	pthread_mutex_lock(&sg_mu);
	if (sg_handle_add(f, SG_HK_FUNC))
		err = SG_ENOMEM;
	pthread_mutex_unlock(&sg_mu);
	if (err)
		free(f);
	else
		*out = f;
	return err;
}

int sg_func_destroy(void *h)
{
	int err = SG_OK;

	pthread_mutex_lock(&sg_mu);
	if (sg_handle_is(h, SG_HK_FUNC)) {
		sg_handle_del(h);
		free(h);
	} else {
		err = SG_EHANDLE;
	}
	pthread_mutex_unlock(&sg_mu);
	return err;
}

int sg_func_info(const void *h, int *kind, const char **name, uint64_t *dur_ns)
{
	const struct sg_func *f = h;
	int err = SG_OK;

	pthread_mutex_lock(&sg_mu);
	if (h && sg_handle_is(h, SG_HK_FUNC)) {
		if (kind)
			*kind = f->kind;
		if (name)
			*name = f->name;
		if (dur_ns)
			*dur_ns = f->dur_ns;
	} else {
		err = SG_EHANDLE;
	}
	pthread_mutex_unlock(&sg_mu);
	return err;
}
