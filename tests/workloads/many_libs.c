/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * many_libs — a process with hundreds of mapped files, as a big framework
 * process has, for timing how long attaching takes: it dlopens every *.so
 * of a directory (scripts/gen_many_libs.sh makes them; `make many-libs`
 * puts 300 in build/many_libs), initialises the runtime with one untraced
 * cudaMalloc/cudaFree, waits to be attached (--wait), then makes a known
 * number of launches.
 *
 * usage: many_libs [--libs DIR] [--launches N] [--ref FILE] [--wait] [--hold] [--pre N]
 *   --libs DIR     dlopen (RTLD_NOW) every *.so in DIR, in name order
 *   --launches N   launches of many_libs_kernel in the traced phase (default 100)
 * The traced phase: N cudaLaunchKernel on the legacy stream, one cudaDeviceSynchronize.
 * stdout: "LOADED <libraries> libraries, <files> mapped files", [READY <pid>], DONE
 */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>

#include "wl.h"

__attribute__((noinline)) void many_libs_kernel(float *a, int n)
{
	for (int i = 0; i < n; i++)
		a[i] -= 1;
}

static int is_shared_object(const struct dirent *e)
{
	size_t len = strlen(e->d_name);

	return len > 3 && !strcmp(e->d_name + len - 3, ".so");
}

/* dlopens every *.so of dir; returns how many. The handles stay open. */
static int load_libraries(const char *dir)
{
	struct dirent **names;
	int n = scandir(dir, &names, is_shared_object, alphasort);

	if (n < 0)
		wl_die("cannot read %s: %s", dir, strerror(errno));
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (!dlopen(path, RTLD_NOW | RTLD_LOCAL))
			wl_die("dlopen %s: %s", path, dlerror());
		free(names[i]);
	}
	free(names);
	return n;
}

/* Distinct files in /proc/self/maps (what a tracer scans when it attaches). */
static int count_mapped_files(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128], **seen = NULL;
	int files = 0;

	if (!f)
		wl_die("cannot read /proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');
		int i;

		if (!path)
			continue;
		path[strcspn(path, "\n")] = 0;
		for (i = 0; i < files && strcmp(seen[i], path); i++)
			;
		if (i < files)
			continue;
		seen = realloc(seen, (files + 1) * sizeof(*seen));
		if (!seen || !(seen[files] = strdup(path)))
			wl_die("out of memory");
		files++;
	}
	fclose(f);
	for (int i = 0; i < files; i++)
		free(seen[i]);
	free(seen);
	return files;
}

int main(int argc, char **argv)
{
	const char *libs_dir = NULL;
	int launches = 100, nlibs = 0;
	void *dev = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--libs") && i + 1 < argc)
			libs_dir = argv[++i];
		else if (!strcmp(argv[i], "--launches") && i + 1 < argc)
			launches = atoi(argv[++i]);
		else if ((!strcmp(argv[i], "--ref") || !strcmp(argv[i], "--pre")) && i + 1 < argc)
			i++;
		else if (strcmp(argv[i], "--wait") && strcmp(argv[i], "--hold"))
			wl_die("usage: many_libs [--libs DIR] [--launches N] [--ref FILE] [--wait] [--hold] [--pre N]");
	}
	wl_init(argc, argv);
	if (libs_dir)
		nlibs = load_libraries(libs_dir);
	/* the runtime is initialised (its threads and mappings exist) before attach */
	if (cudaMalloc(&dev, 4096) != cudaSuccess || cudaFree(dev) != cudaSuccess)
		wl_die("the runtime does not work");
	printf("LOADED %d libraries, %d mapped files\n", nlibs, count_mapped_files());
	fflush(stdout);

	wl_begin();
	for (int i = 0; i < launches; i++) {
		float *p = NULL;
		int n = 0;
		void *args[] = { &p, &n };

		if (WL(cudaLaunchKernel, (const void *)many_libs_kernel, (dim3){ 1, 1, 1 },
		       (dim3){ 32, 1, 1 }, args, 0, NULL) == cudaSuccess) {
			wl_launched("many_libs_kernel");
			wl_stream_work(NULL, false, WL_KERNEL, 0);
		}
	}
	WL(cudaDeviceSynchronize);
	wl_end();
	return 0;
}
