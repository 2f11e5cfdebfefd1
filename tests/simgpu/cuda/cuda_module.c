/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_module.c — driver API: modules (cuModuleLoad*, cuModuleGetFunction,
 * cuModuleUnload), libraries (cuLibraryLoad*, cuLibraryGetKernel,
 * cuLibraryUnload), kernels (cuKernelGetFunction, cuKernelGetName) and
 * cuFuncGetName.
 *
 * There are no cubins: a module or library image is the simulator's text
 * format, a NUL-terminated string
 *
 *     simgpu-module\n
 *     _Z5scalePffi\n
 *     fill\n
 *
 * the magic line, then one kernel name per line (mangled or plain, as
 * launches will name it; blank lines and lines starting with '#' are
 * skipped, surrounding blanks trimmed). cuModuleLoad/cuLibraryLoadFromFile
 * read a file with that content. Anything else is CUDA_ERROR_INVALID_IMAGE.
 *
 * Loading creates one handle per (module, name): a CUfunction for a
 * module, a CUkernel for a library, both sg_func objects of the model, so
 * that cuLaunchKernel knows their names and durations
 * (SIMGPU_KERNEL_TIMES). cuKernelGetFunction returns the kernel's own
 * CUfunction, a distinct handle made on first request. Unloading
 * invalidates every handle of the module or library.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define MAGIC	  "simgpu-module\n"
#define MOD_MAGIC 0x444f4d4d49534743ull /* "CGSIMMOD" */

struct module {
	uint64_t magic;
	struct module *next;
	bool library;
	size_t n;
	char **names;
	struct sg_func **funcs;	 /* module: CUfunction; library: CUkernel */
	struct sg_func **kfuncs; /* library: each kernel's CUfunction, made on request */
};

static pthread_mutex_t mod_mu = PTHREAD_MUTEX_INITIALIZER;
static struct module *modules;

static void module_free(struct module *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++) {
		if (m->funcs && m->funcs[i])
			sg_func_destroy(m->funcs[i]);
		if (m->kfuncs && m->kfuncs[i])
			sg_func_destroy(m->kfuncs[i]);
		free(m->names[i]);
	}
	free(m->names);
	free(m->funcs);
	free(m->kfuncs);
	free(m);
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Parses an image into m's names; CUDA_ERROR_INVALID_IMAGE if it is not one. */
static CUresult parse(const char *img, struct module *m)
{
	const char *p, *end;
	size_t cap = 0;

	if (strncmp(img, MAGIC, strlen(MAGIC)) != 0)
		return CUDA_ERROR_INVALID_IMAGE;
	for (p = img + strlen(MAGIC); *p; p = *end ? end + 1 : end) {
		const char *a = p, *b;
		size_t i;
		bool dup = false;

		end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		b = end;
		while (a < b && blank(*a))
			a++;
		while (b > a && blank(b[-1]))
			b--;
		if (a == b || *a == '#')
			continue;
		for (i = 0; i < m->n && !dup; i++)
			dup = strlen(m->names[i]) == (size_t)(b - a) &&
			      !memcmp(m->names[i], a, (size_t)(b - a));
		if (dup)
			continue;
		if (m->n == cap) {
			size_t nc = cap ? cap * 2 : 8;
			char **n = realloc(m->names, nc * sizeof(*n));

			if (!n)
				return CUDA_ERROR_OUT_OF_MEMORY;
			m->names = n;
			cap = nc;
		}
		m->names[m->n] = strndup(a, (size_t)(b - a));
		if (!m->names[m->n])
			return CUDA_ERROR_OUT_OF_MEMORY;
		m->n++;
	}
	return CUDA_SUCCESS;
}

/* A module or library from an image: parsed, with a handle per name, registered. */
static CUresult load_image(const char *img, bool library, struct module **out)
{
	struct module *m = calloc(1, sizeof(*m));
	CUresult r;
	size_t i;

	*out = NULL;
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->magic = MOD_MAGIC;
	m->library = library;
	r = parse(img, m);
	if (!r && m->n) {
		m->funcs = calloc(m->n, sizeof(*m->funcs));
		m->kfuncs = library ? calloc(m->n, sizeof(*m->kfuncs)) : NULL;
		if (!m->funcs || (library && !m->kfuncs))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (i = 0; !r && i < m->n; i++)
		r = cu_err(sg_func_create(m->names[i], library ? SG_FUNC_KERNEL : SG_FUNC_FUNCTION,
					  &m->funcs[i]));
	if (r) {
		module_free(m);
		return r;
	}
	pthread_mutex_lock(&mod_mu);
	m->next = modules;
	modules = m;
	pthread_mutex_unlock(&mod_mu);
	*out = m;
	return CUDA_SUCCESS;
}

/* Reads a whole file (NUL-terminated) into *buf. */
static CUresult read_file(const char *path, char **buf)
{
	FILE *f = fopen(path, "rb");
	size_t len = 0, cap = 4096, n;
	char *b;

	*buf = NULL;
	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	b = malloc(cap);
	while (b && (n = fread(b + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (len + 1 == cap) {
			char *nb = realloc(b, cap * 2);

			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
			cap *= 2;
		}
	}
	if (b && ferror(f)) {
		free(b);
		fclose(f);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	fclose(f);
	if (!b)
		return CUDA_ERROR_OUT_OF_MEMORY;
	b[len] = '\0';
	*buf = b;
	return CUDA_SUCCESS;
}

static CUresult load_file(const char *path, bool library, struct module **out)
{
	char *img;
	CUresult r = read_file(path, &img);

	*out = NULL;
	if (!r)
		r = load_image(img, library, out);
	free(img);
	return r;
}

static CUresult unload(const void *h, bool library)
{
	struct module **pp, *m = NULL;

	pthread_mutex_lock(&mod_mu);
	for (pp = &modules; *pp; pp = &(*pp)->next)
		if (*pp == h && (*pp)->library == library) {
			m = *pp;
			*pp = m->next;
			break;
		}
	pthread_mutex_unlock(&mod_mu);
	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	module_free(m);
	return CUDA_SUCCESS;
}

/* The handle for name in module or library h. */
static CUresult get(const void *h, bool library, const char *name, struct sg_func **out)
{
	struct module *m;
	CUresult r = CUDA_ERROR_INVALID_HANDLE;
	size_t i;

	pthread_mutex_lock(&mod_mu);
	for (m = modules; m && m != h; m = m->next)
		;
	if (m && m->library == library) {
		r = CUDA_ERROR_NOT_FOUND;
		for (i = 0; i < m->n; i++)
			if (!strcmp(m->names[i], name)) {
				*out = m->funcs[i];
				r = CUDA_SUCCESS;
				break;
			}
	}
	pthread_mutex_unlock(&mod_mu);
	return r;
}

/* ---- modules -------------------------------------------------------------------------------- */
static CUresult module_load(CUmodule *mod, const char *path, const void *image)
{
	struct module *m;
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (r)
		return r;
	if (!mod || (!path && !image))
		return CUDA_ERROR_INVALID_VALUE;
	r = path ? load_file(path, false, &m) : load_image(image, false, &m);
	if (!r)
		*mod = (CUmodule)m;
	return r;
}

CU_API CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	CUresult r = fname ? module_load(module, fname, NULL) : CUDA_ERROR_INVALID_VALUE;

	CU_RETURN(r, "fname=%s module=%p", fname ? fname : "(null)", !r ? (void *)*module : NULL);
}

CU_API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	CUresult r = image ? module_load(module, NULL, image) : CUDA_ERROR_INVALID_VALUE;

	CU_RETURN(r, "image=%p module=%p", image, !r ? (void *)*module : NULL);
}

CU_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
				   CUjit_option *options, void **optionValues)
{
	CUresult r = !image || (numOptions && (!options || !optionValues))
			     ? CUDA_ERROR_INVALID_VALUE
			     : module_load(module, NULL, image);

	CU_RETURN(r, "image=%p options=%u module=%p", image, numOptions,
		  !r ? (void *)*module : NULL);
}

CU_API CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	CUresult r = fatCubin ? module_load(module, NULL, fatCubin) : CUDA_ERROR_INVALID_VALUE;

	CU_RETURN(r, "fatCubin=%p module=%p", fatCubin, !r ? (void *)*module : NULL);
}

CU_API CUresult cuModuleUnload(CUmodule hmod)
{
	CUresult r = cu_enter();

	if (!r)
		r = unload(hmod, false);
	CU_RETURN(r, "module=%p", (void *)hmod);
}

CU_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct sg_func *f = NULL;
	CUresult r = cu_enter();

	if (!r && (!hfunc || !name))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		r = get(hmod, false, name, &f);
	if (!r)
		*hfunc = (CUfunction)f;
	CU_RETURN(r, "module=%p name=%s function=%p", (void *)hmod, name ? name : "(null)",
		  (void *)f);
}

/* ---- libraries ------------------------------------------------------------------------------- */
static CUresult library_load(CUlibrary *lib, const char *path, const void *code, unsigned n_jit,
			     const void *jit_opts, void **jit_vals, unsigned n_lib,
			     const void *lib_opts, void **lib_vals)
{
	struct module *m;
	CUresult r = cu_enter();

	if (r)
		return r;
	if (!lib || (!path && !code) || (n_jit && (!jit_opts || !jit_vals)) ||
	    (n_lib && (!lib_opts || !lib_vals)))
		return CUDA_ERROR_INVALID_VALUE;
	r = path ? load_file(path, true, &m) : load_image(code, true, &m);
	if (!r)
		*lib = (CUlibrary)m;
	return r;
}

CU_API CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
				  void **jitOptionsValues, unsigned int numJitOptions,
				  CUlibraryOption *libraryOptions, void **libraryOptionValues,
				  unsigned int numLibraryOptions)
{
	CUresult r = code ? library_load(library, NULL, code, numJitOptions, jitOptions,
					 jitOptionsValues, numLibraryOptions, libraryOptions,
					 libraryOptionValues)
			  : CUDA_ERROR_INVALID_VALUE;

	CU_RETURN(r, "code=%p library=%p", code, !r ? (void *)*library : NULL);
}

CU_API CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
				      CUjit_option *jitOptions, void **jitOptionsValues,
				      unsigned int numJitOptions, CUlibraryOption *libraryOptions,
				      void **libraryOptionValues, unsigned int numLibraryOptions)
{
	CUresult r = fileName ? library_load(library, fileName, NULL, numJitOptions, jitOptions,
					     jitOptionsValues, numLibraryOptions, libraryOptions,
					     libraryOptionValues)
			      : CUDA_ERROR_INVALID_VALUE;

	CU_RETURN(r, "fileName=%s library=%p", fileName ? fileName : "(null)",
		  !r ? (void *)*library : NULL);
}

CU_API CUresult cuLibraryUnload(CUlibrary library)
{
	CUresult r = cu_enter();

	if (!r)
		r = unload(library, true);
	CU_RETURN(r, "library=%p", (void *)library);
}

CU_API CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	struct sg_func *k = NULL;
	CUresult r = cu_enter();

	if (!r && (!pKernel || !name))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		r = get(library, true, name, &k);
	if (!r)
		*pKernel = (CUkernel)k;
	CU_RETURN(r, "library=%p name=%s kernel=%p", (void *)library, name ? name : "(null)",
		  (void *)k);
}

/* ---- kernels and functions --------------------------------------------------------------------- */
/* The CUfunction of kernel k (made on first request, then the same). */
static CUresult kernel_function(const void *k, struct sg_func **out)
{
	CUresult r = CUDA_ERROR_INVALID_HANDLE;
	struct module *m;
	size_t i;

	pthread_mutex_lock(&mod_mu);
	for (m = modules; m && r == CUDA_ERROR_INVALID_HANDLE; m = m->next) {
		if (!m->library)
			continue;
		for (i = 0; i < m->n; i++) {
			if (m->funcs[i] != k)
				continue;
			r = CUDA_SUCCESS;
			if (!m->kfuncs[i])
				r = cu_err(sg_func_create(m->names[i], SG_FUNC_FUNCTION,
							  &m->kfuncs[i]));
			*out = m->kfuncs[i];
			break;
		}
	}
	pthread_mutex_unlock(&mod_mu);
	return r;
}

CU_API CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct sg_func *f = NULL;
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (!r && !pFunc)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		r = kernel_function(kernel, &f);
	if (!r)
		*pFunc = (CUfunction)f;
	CU_RETURN(r, "kernel=%p function=%p", (void *)kernel, (void *)f);
}

static CUresult name_of(const char **name, const void *h, int want_kind)
{
	const char *n = NULL;
	int kind = 0;
	CUresult r = cu_enter();

	if (r)
		return r;
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	if (sg_func_info(h, &kind, &n, NULL) || (want_kind && kind != want_kind))
		return CUDA_ERROR_INVALID_HANDLE;
	*name = n;
	return CUDA_SUCCESS;
}

CU_API CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
	CUresult r = name_of(name, hfunc, SG_FUNC_KERNEL);

	CU_RETURN(r, "kernel=%p name=%s", (void *)hfunc, !r ? *name : "?");
}

/* a CUfunction, or a CUkernel cast to one (CUDA 12 allows it where a function goes) */
CU_API CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
	CUresult r = name_of(name, hfunc, 0);

	CU_RETURN(r, "function=%p name=%s", (void *)hfunc, !r ? *name : "?");
}
