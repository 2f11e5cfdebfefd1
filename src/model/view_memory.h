/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * view_memory.h — a process's copies, memsets and memory as readers see them
 * (view.h includes it): the transfer table's rows, allocations and their
 * counters per device and kind, VMM handles; how a copy is classified.
 */
#ifndef GP_MODEL_VIEW_MEMORY_H
#define GP_MODEL_VIEW_MEMORY_H

#include "model/model.h"
#include "model/hist.h"
#include "model/ranges.h"
#include "model/u64map.h"

struct gp_process;

#define GP_DEVICE_MAX 1024 /* device ids tracked: -1 (not observed) .. GP_DEVICE_MAX - 1 */

/* ---- transfers ---------------------------------------------------------- */
enum gp_dir {
	GP_DIR_HTOD,
	GP_DIR_DTOH,
	GP_DIR_DTOD,
	GP_DIR_HTOH,
	GP_DIR_PTOP,
	GP_DIR_DEFAULT,
	GP_DIR_MAX
};
enum gp_hostmem {
	GP_HM_PAGEABLE,
	GP_HM_PINNED,
	GP_HM_MANAGED,
	GP_HM_DEVICE,
	GP_HM_UNKNOWN,
	GP_HM_MAX
};

const char *gp_dir_name(enum gp_dir d);
const char *gp_hostmem_name(enum gp_hostmem h);

struct gp_xfer_row {
	__u64 calls;
	__u64 bytes;
	__u64 min_bytes;
	__u64 max_bytes;
	__u64 total_ns; /* host time in the copy calls */
	__u64 size_hist[GP_SIZE_BUCKETS];
	/* copies of at most GP_SMALL_COPY_BYTES (the small-copies recommendation) */
	__u64 small_calls, small_bytes, small_ns;
};

#define GP_SMALL_COPY_BYTES (64ull * 1024)

struct gp_memset_row {
	__u64 calls;
	__u64 bytes;
	__u64 total_ns;
};

/* ---- memory ------------------------------------------------------------- */
enum gp_alloc_kind {
	GP_AK_DEVICE,
	GP_AK_MANAGED,
	GP_AK_PINNED,
	GP_AK_REGISTERED,
	GP_AK_MAPPED, /* a virtual range mapped with cuMemMap: device memory for copies, counted via its handle */
};

const char *gp_alloc_kind_name(enum gp_alloc_kind k);

struct gp_alloc {
	struct gp_range r; /* first: the range sets hold struct gp_range * */
	__u64 ptr;
	__u64 bytes;
	__u64 ts_ns;
	__s32 device; /* -1: the allocating thread's device was not observed */
	__u32 tid;
	__u16 api;
	__u8 kind; /* enum gp_alloc_kind */
};

struct gp_mem_counts {
	__u64 alloc_calls;
	__u64 free_calls;
	__u64 alloc_bytes;
	__u64 freed_bytes;
	__u64 live_bytes;
	__u64 peak_bytes;
};

struct gp_memory {
	struct gp_range_set device_ranges; /* device + managed allocations */
	struct gp_range_set host_ranges;   /* pinned allocations + host registrations */
	struct gp_mem_counts total;	   /* device + managed, all devices together */
	struct gp_mem_counts *devices;	   /* [device + 1], ndevices entries */
	size_t ndevices;
	__u64 managed_alloc_calls;
	__u64 managed_alloc_bytes;
	__u64 untracked_frees; /* cudaFree* of a pointer not allocated while traced */
	__u64 stale_evictions; /* tracked range overlapped by a new allocation: its free was missed */
	__u64 stale_bytes;     /* bytes of those; they leave live_bytes without a free call */
	struct gp_mem_counts pinned; /* cudaMallocHost / cudaHostAlloc / cudaFreeHost */
	__u64 pinned_untracked_frees;
	__u64 register_calls;
	__u64 unregister_calls;
	__u64 registered_bytes;
	__u64 unregistered_bytes;
	__u64 registered_live_bytes;
	__u64 untracked_unregisters;
	/* CUDA virtual memory management (cuMemCreate / cuMemRelease, cuMemMap / cuMemUnmap) */
	struct gp_u64map
		vmm_handles; /* handle -> struct gp_vmm_handle; its bytes count as device memory */
	struct gp_mem_counts vmm;     /* physical allocations: create / release */
	__u64 vmm_untracked_releases; /* cuMemRelease of a handle not created while traced */
	__u64 vmm_map_calls, vmm_unmap_calls, vmm_mapped_bytes, vmm_unmapped_bytes,
		vmm_mapped_live_bytes;
	/* device, managed and pinned allocations made by calls that are not stream-ordered (not a pool's):
	 * live now and most live at once (the alloc-churn recommendation) */
	__u64 blocking_live_allocs, blocking_peak_allocs;
};

struct gp_vmm_handle {
	__u64 bytes;
	__s32 device;
};

/* Live allocations of all kinds but registrations, by address; *out is malloc'ed (NULL when none). */
int gp_memory_live(const struct gp_process *p, const struct gp_alloc ***out, size_t *n);
const struct gp_mem_counts *gp_memory_device(const struct gp_memory *mem,
					     int device); /* NULL if none */
/* A copy call's pointers, bytes, direction and host memory kind, as the transfer table classifies it. */
struct gp_copy_info {
	__u64 dst, src, bytes;
	enum gp_dir dir;
	enum gp_hostmem hostmem;
};
void gp_transfer_classify(const struct gp_process *p, const struct gp_api_call *c,
			  struct gp_copy_info *out);
/* A copy's source and destination addresses alone (what classifying one costs beyond them: host_memory). */
void gp_copy_endpoints(const struct gp_api_call *c, __u64 *src, __u64 *dst);
__u64 gp_transfer_bytes(const struct gp_api_call *c); /* bytes a copy or memset call names */

#endif /* GP_MODEL_VIEW_MEMORY_H */
