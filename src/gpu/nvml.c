/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nvml.c — libnvidia-ml.so.1 opened with dlopen, its functions looked up,
 * NVML initialised and shut down (nvml.h). A function the driver's NVML
 * lacks leaves its pointer NULL: the sampler names it once.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpu/nvml.h"

int gp_nvml_open(struct gp_nvml *n, const char *path, char *why, size_t len)
{
	gp_nvml_return r;

	memset(n, 0, sizeof(*n));
	n->lib = dlopen(path ? path : GP_NVML_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		const char *e = dlerror();

		snprintf(why, len, "no NVML: no NVIDIA driver on this machine (%s: %s)",
			 path ? path : GP_NVML_SONAME, e ? e : "not found");
		return -ENOENT;
	}
	n->nvmlErrorString = (const char *(*)(gp_nvml_return))dlsym(n->lib, "nvmlErrorString");
#define GP_NVML_SYM(req, name, args)                                           \
	*(void **)&n->name = dlsym(n->lib, #name);                             \
	if (req && !n->name) {                                                 \
		snprintf(why, len, "no NVML: %s has no %s (a driver too old)", \
			 path ? path : GP_NVML_SONAME, #name);                 \
		dlclose(n->lib);                                               \
		memset(n, 0, sizeof(*n));                                      \
		return -ENOSYS;                                                \
	}
	GP_NVML_FUNCS(GP_NVML_SYM)
#undef GP_NVML_SYM
	r = n->nvmlInit_v2();
	if (r != GP_NVML_SUCCESS) {
		snprintf(why, len, "NVML failed: nvmlInit_v2: %s (%d)", gp_nvml_error(n, r), r);
		dlclose(n->lib);
		memset(n, 0, sizeof(*n));
		return -EIO;
	}
	return 0;
}

void gp_nvml_close(struct gp_nvml *n)
{
	if (!n->lib)
		return;
	if (n->nvmlShutdown && n->nvmlInit_v2)
		n->nvmlShutdown();
	dlclose(n->lib);
	memset(n, 0, sizeof(*n));
}

const char *gp_nvml_error(const struct gp_nvml *n, gp_nvml_return r)
{
	const char *s = n->nvmlErrorString ? n->nvmlErrorString(r) : NULL;

	return s ? s : "unknown error";
}
