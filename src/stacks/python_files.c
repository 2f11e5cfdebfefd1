/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * python_files.c — the files of a process that probing CPython reads (see
 * python_internal.h): which mappings are an interpreter (libpython3.X.so*,
 * python3.X), the C library or the dynamic loader, by name; the few
 * symbols needed of the interpreter's ELF file, read once per (dev, inode);
 * glibc's version from its banner.
 *
 * Files are opened through /proc/PID/map_files (or /proc/PID/root), so
 * deleted files and other mount namespaces work.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "proc_maps.h"
#include "stacks/python_internal.h"

/* ---- names --------------------------------------------------------------------------------- */

/* The minor version a file's name gives: "libpython3.10.so.1.0", "python3.10"; 0 when none. */
unsigned py_minor_from_name(const char *path)
{
	const char *base = strrchr(path, '/'), *s;
	unsigned minor = 0;

	base = base ? base + 1 : path;
	if (!strncmp(base, "libpython3.", 11))
		s = base + 11;
	else if (!strncmp(base, "python3.", 8))
		s = base + 8;
	else
		return 0;
	if (!isdigit((unsigned char)*s))
		return 0;
	while (isdigit((unsigned char)*s) && minor < 1000)
		minor = minor * 10 + (unsigned)(*s++ - '0');
	/* "3.10d", "3.13t": debug and free-threaded builds lay objects out otherwise */
	if (*s && *s != '.')
		return 0;
	return minor;
}

bool py_is_libpython(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libpython3", 10) && strstr(base, ".so");
}

bool py_is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strcmp(base, "libc.so.6") || (!strncmp(base, "libc-2.", 7) && strstr(base, ".so"));
}

/* glibc's dynamic loader (ld-linux-x86-64.so.2): mapped from exec in a dynamic program. */
bool py_is_dynamic_loader(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "ld-linux", 8);
}

/* ---- interpreter files --------------------------------------------------------------------- */

enum { S_RUNTIME, S_VERSION, S_CODE, S_UNICODE, S_BYTES, S_EVAL, S_N };
static const char *const sym_names[S_N] = {
	"_PyRuntime",	  "Py_Version",	  "PyCode_Type",
	"PyUnicode_Type", "PyBytes_Type", "_PyEval_EvalFrameDefault",
};

/*
 * The few symbols needed, in one pass over .dynsym (then .symtab): the
 * project's symbol index (elf_syms.c) holds functions only and indexes all
 * of .symtab, too much to learn that an executable has no _PyRuntime.
 */
static int read_py_file(int fd, struct py_file *f)
{
	GElf_Sym found[S_N] = { 0 };
	Elf_Scn *scn;
	Elf *elf;
	size_t nph, i;
	int err = 0, pass;
	bool have_vaddr0 = false;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph)) {
		err = -ENOEXEC;
		goto out;
	}
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (!have_vaddr0) { /* the first PT_LOAD maps the file's start */
			f->vaddr0 = ph.p_vaddr - ph.p_offset;
			have_vaddr0 = true;
		}
	}
	for (pass = 0; pass < 2; pass++) {
		for (scn = NULL; (scn = elf_nextscn(elf, scn));) {
			GElf_Shdr sh;
			Elf_Data *data;
			size_t n;

			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass ? SHT_SYMTAB : SHT_DYNSYM) || !sh.sh_entsize ||
			    !(data = elf_getdata(scn, NULL)))
				continue;
			n = sh.sh_size / sh.sh_entsize;
			for (i = 0; i < n; i++) {
				GElf_Sym s;
				const char *name;

				if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
				    !s.st_value)
					continue;
				name = elf_strptr(elf, sh.sh_link, s.st_name);
				if (!name || (name[0] != '_' && name[0] != 'P'))
					continue;
				for (int k = 0; k < S_N; k++)
					if (!found[k].st_value && !strcmp(name, sym_names[k]))
						found[k] = s;
			}
		}
		if (found[S_RUNTIME].st_value)
			break;
	}
	if (!have_vaddr0)
		err = -ENOEXEC;
	f->runtime = found[S_RUNTIME].st_value;
	f->runtime_size = found[S_RUNTIME].st_size;
	f->version = found[S_VERSION].st_value;
	f->code_type = found[S_CODE].st_value;
	f->unicode_type = found[S_UNICODE].st_value;
	f->bytes_type = found[S_BYTES].st_value;
	f->eval = found[S_EVAL].st_value;
	f->eval_size = found[S_EVAL].st_size;
out:
	if (elf)
		elf_end(elf);
	return err;
}

/*
 * The file mapped by m, opened: through /proc/PID/map_files (the very file,
 * deleted or in another mount namespace), else /proc/PID/root, else its path
 * if it is still the same inode. An fd, or -errno.
 */
static int open_mapped(pid_t pid, const struct gp_map *m)
{
	char path[PATH_MAX + 64];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, m->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_ino != m->inode) { /* replaced since it was mapped */
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/* The file mapped by m, read once: NULL + errno when it cannot be read. */
const struct py_file *py_file_get(struct gp_python *py, pid_t pid, const struct gp_map *m)
{
	struct py_file f = { .dev = m->dev, .ino = m->inode };
	int fd, err;

	for (size_t i = 0; i < py->nfiles; i++)
		if (py->files[i].dev == m->dev && py->files[i].ino == m->inode)
			return &py->files[i];
	fd = open_mapped(pid, m);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	err = read_py_file(fd, &f);
	close(fd);
	if (err) {
		errno = -err;
		return NULL;
	}
	if (GP_ARRAY_GROW(py->files, py->cap, py->nfiles + 1, 8)) {
		errno = ENOMEM;
		return NULL;
	}
	py->files[py->nfiles] = f;
	return &py->files[py->nfiles++];
}

/*
 * glibc's version, from the banner its libc.so.6 carries ("... release
 * version 2.36."): gnu_get_libc_version() cannot be called in another
 * process, and the file is what the process runs.
 */
int py_glibc_version(pid_t pid, const struct gp_map *m, unsigned *major, unsigned *minor)
{
	static const char tag[] = "release version ";
	struct stat st;
	const char *p, *end;
	void *map;
	int fd, err = -ENOENT;

	fd = open_mapped(pid, m);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || !st.st_size) {
		close(fd);
		return -EIO;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	end = (const char *)map + st.st_size;
	for (p = map; (p = memmem(p, (size_t)(end - p), "GNU C Library", 13)); p += 13) {
		const char *v = memmem(p, (size_t)(end - p) < 200 ? (size_t)(end - p) : 200, tag,
				       sizeof(tag) - 1);

		if (v && sscanf(v + sizeof(tag) - 1, "%u.%u", major, minor) == 2) {
			err = 0;
			break;
		}
	}
	munmap(map, (size_t)st.st_size);
	return err;
}
