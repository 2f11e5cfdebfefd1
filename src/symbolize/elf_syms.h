/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * elf_syms.h — one symbol index per ELF file, built once with libelf and
 * shared by attach (symbol name -> file offset for a uprobe) and by
 * symbolization (address -> function). Function symbols from .symtab and
 * .dynsym, the PT_LOAD segments to translate between virtual addresses and
 * file offsets, and the GNU build-id.
 */
#ifndef GP_ELF_SYMS_H
#define GP_ELF_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct gp_elf_sym {
	__u64 addr;	  /* st_value: virtual address in the file's own layout */
	__u64 size;	  /* st_size, 0 when unknown */
	const char *name; /* owned by the index */
	bool global;	  /* STB_GLOBAL or STB_WEAK */
};

struct gp_elf_seg {
	__u64 vaddr, memsz, offset, filesz;
	bool exec;
};

struct gp_elf_syms {
	char *path;
	__u64 dev, ino;	 /* of the file this was read from */
	bool is_dyn;	 /* ET_DYN (shared object or PIE) */
	bool has_symtab; /* .symtab present (not stripped) */
	unsigned char build_id[20];
	size_t build_id_len;
	struct gp_elf_sym *syms; /* function symbols sorted by addr, then global first */
	size_t nsyms;
	__u32 *by_name; /* indexes into syms, sorted by name */
	/*
	 * nvcc's per-kernel handle caches: the static locals
	 * __device_stub__<kernel>::__handle (objects in .symtab), sorted by addr.
	 */
	struct gp_elf_sym *stub_handles;
	size_t nstub_handles;
	struct gp_elf_seg *segs; /* PT_LOAD */
	size_t nsegs;
	char *names; /* one pool for every name */
};

/* Reads path (any ELF). NULL and errno on failure (ENOEXEC: not an ELF). */
struct gp_elf_syms *gp_elf_syms_open(const char *path);
void gp_elf_syms_free(struct gp_elf_syms *e);

/* Defined function named name; a global one when both exist. NULL if none. */
const struct gp_elf_sym *gp_elf_syms_find(const struct gp_elf_syms *e, const char *name);

/* Function containing vaddr (or the nearest before it when sizes are unknown). */
const struct gp_elf_sym *gp_elf_syms_at(const struct gp_elf_syms *e, __u64 vaddr);

/* Virtual address <-> file offset through the PT_LOAD segments. 0 or -ENOENT. */
int gp_elf_vaddr_to_offset(const struct gp_elf_syms *e, __u64 vaddr, __u64 *offset);
int gp_elf_offset_to_vaddr(const struct gp_elf_syms *e, __u64 offset, __u64 *vaddr);

/* "ab12..." hex of the build-id into buf (>= 41 bytes); "" when there is none. */
void gp_elf_build_id_hex(const struct gp_elf_syms *e, char *buf, size_t len);

#endif
