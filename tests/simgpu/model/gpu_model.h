/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_model.h — the simulated GPU as seen from the host, independent of any
 * CUDA API: devices and their memory, pinned host ranges, streams with
 * worker threads, work items (kernels, copies, memsets, host functions,
 * event records, waits, stream-ordered frees), events, stream capture and
 * graphs, the timing model and the knobs.
 *
 * The model lives in build/simgpu/libsimgpu.so so that every simulated
 * library of a process (libcudart.so.13, libcuda.so.1, libnccl.so.2)
 * shares one GPU. API layers translate their handles and error
 * codes to and from this interface. Every function is thread-safe.
 */
#ifndef SIMGPU_GPU_MODEL_H
#define SIMGPU_GPU_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define SG_MAX_DEVICES 16

/* Model status codes; each API layer maps them to its own error codes. */
enum sg_status {
	SG_OK = 0,
	SG_EINVAL,		 /* bad argument, pointer or range */
	SG_ENOMEM,		 /* device capacity or host memory exhausted */
	SG_EHANDLE,		 /* unknown / destroyed handle */
	SG_ENOTREADY,		 /* work still pending */
	SG_EDEVICE,		 /* no such device */
	SG_ENODEVICE,		 /* zero devices configured */
	SG_EALREADY_REGISTERED,	 /* host range overlaps a registered one */
	SG_ENOT_REGISTERED,	 /* host range not registered */
	SG_ECAPTURE_UNSUPPORTED, /* operation not permitted while capturing */
	SG_ECAPTURE_IMPLICIT,	 /* legacy-stream work would depend on a capture */
	SG_ECAPTURE_INVALIDATED, /* the capture was invalidated */
	SG_ECAPTURE_MERGE,	 /* would merge two independent captures */
	SG_ECAPTURE_UNMATCHED,	 /* capture ended on a stream that did not begin it */
	SG_EILLEGAL_STATE,	 /* e.g. end capture on a stream not capturing */
	SG_EDIRECTION,		 /* copy kind outside enum sg_copy_kind */
	SG_EPITCH,		 /* 2D copy wider than one of its pitches */
	SG_ECONFIG,		 /* launch configuration out of range */
};

/* ---- knobs (read once from the environment, see README.md) -------------- */
struct sg_config {
	int devices;		  /* SIMGPU_DEVICES */
	uint64_t dev_mem_bytes;	  /* SIMGPU_DEVICE_MEM_MB */
	double gbps[8];		  /* indexed by enum sg_path: GB/s (1e9 B/s) */
	uint64_t copy_latency_ns; /* SIMGPU_COPY_LATENCY_US */
	uint64_t kernel_ns;	  /* SIMGPU_KERNEL_US */
	uint64_t launch_ns;	  /* SIMGPU_LAUNCH_US */
	unsigned queue_depth;	  /* SIMGPU_QUEUE_DEPTH */
	uint64_t populate_bytes;  /* SIMGPU_POPULATE_MB */
	int init_error;		  /* SIMGPU_INIT_ERROR: API-level code every call fails with */
	int log;		  /* SIMGPU_LOG */
	const char *kernel_times; /* SIMGPU_KERNEL_TIMES (raw) */
	int runtime_direct;	  /* SIMGPU_RUNTIME_DIRECT: the runtime skips the driver */
};

/* Copy paths, each with its own bandwidth knob. */
enum sg_path {
	SG_PATH_HTOD_PINNED = 0,
	SG_PATH_HTOD_PAGEABLE,
	SG_PATH_DTOH_PINNED,
	SG_PATH_DTOH_PAGEABLE,
	SG_PATH_DTOD,
	SG_PATH_PEER,
	SG_PATH_HTOH,
	SG_PATH_MEMSET,
};

/* A numeric knob: its value, or def when unset; a value that is not a number
 * >= min is reported on stderr and def is used. For every simulated library's knobs. */
double sg_env_num(const char *name, double def, double min);
/* Reads the knobs once (idempotent, thread-safe) and returns them. */
const struct sg_config *sg_config(void);
/* Non-zero when SIMGPU_LOG is set; read directly so that a disabled log
 * costs one load and one predictable branch. */
extern int sg_log_level;
void sg_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- time ---------------------------------------------------------------- */
uint64_t sg_now_ns(void); /* CLOCK_MONOTONIC */
/* A clock read inside an exported call of a simulated library, for simgpu_call_clock(): each
 * library's entry check and return macro make one, so a call's reads lie between its entry and
 * its return, where a tracer's probes on the export see them. */
void sg_call_mark(void);
void sg_sleep_until(uint64_t t_ns); /* clock_nanosleep(TIMER_ABSTIME) */
/* Busy CPU work (launch overhead): ns of the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID),
 * however long a busy machine makes that take on the wall clock. */
void sg_spin_ns(uint64_t ns);
uint64_t sg_copy_ns(enum sg_path path, uint64_t bytes);
/* Duration of a kernel by mangled or plain name (SIMGPU_KERNEL_TIMES), else
 * SIMGPU_KERNEL_US. */
uint64_t sg_kernel_ns(const char *name);
/* "_Z5scalePffi" -> "scale", "_ZN2ns3fooIiEEvv" -> "ns::foo"; else a copy of
 * the input. Writes at most n bytes, NUL-terminated. */
void sg_plain_name(const char *name, char *out, size_t n);

/* ---- memory --------------------------------------------------------------- */
enum sg_mem_kind {
	SG_MEM_PAGEABLE = 0, /* not known to the model: ordinary host memory */
	SG_MEM_DEVICE,	     /* cudaMalloc & co. */
	SG_MEM_MANAGED,	     /* cudaMallocManaged */
	SG_MEM_PINNED,	     /* cudaMallocHost / cudaHostAlloc */
	SG_MEM_REGISTERED,   /* cudaHostRegister */
};

/* sg_range.flags bits the model sets on ranges mapped with sg_vmm_map() */
#define SG_RANGE_VMM	  0x80000000u /* a VMM mapping: not freeable, not charged itself */
#define SG_RANGE_NOACCESS 0x40000000u /* mapped, but no access granted yet (sg_vmm_set_access) */

struct sg_range {
	uintptr_t base;
	size_t size;	/* as requested */
	size_t charged; /* rounded size charged to the device */
	enum sg_mem_kind kind;
	int device;	/* owning device (-1 for none) */
	unsigned flags; /* allocation / registration flags */
};

int sg_device_count(void);
int sg_mem_alloc(int dev, size_t size, enum sg_mem_kind kind, unsigned flags, void **out);
/* Frees a live allocation whose base is p and whose kind is in kinds (a
 * mask of 1u << kind). SG_EINVAL if there is none. */
int sg_mem_free(void *p, unsigned kinds, struct sg_range *freed);
int sg_host_register(void *p, size_t size, unsigned flags);
int sg_host_unregister(void *p);
/* The tracked range containing p (SG_OK), or SG_EINVAL with r->kind =
 * SG_MEM_PAGEABLE when p is not tracked. */
int sg_mem_lookup(const void *p, struct sg_range *r);
/* Classifies [p, p+len): a tracked range must contain all of it; an address
 * inside a device's reserved region but outside a live allocation is
 * invalid. Returns SG_OK / SG_EINVAL and fills r (kind PAGEABLE if untracked). */
int sg_mem_check(const void *p, size_t len, struct sg_range *r);
void sg_mem_info(int dev, size_t *free_bytes, size_t *total_bytes);
/* Frees every device and managed allocation of dev. */
void sg_mem_reset(int dev);

/* ---- work ------------------------------------------------------------------- */
enum sg_work_kind {
	SG_WORK_NOP = 0,
	SG_WORK_KERNEL,
	SG_WORK_COPY, /* 1D or 2D (height > 1 or pitches set) */
	SG_WORK_MEMSET,
	SG_WORK_HOSTFN,
	SG_WORK_FREE, /* stream-ordered free */
};

typedef void (*sg_hostfn)(void *arg);
/* A host function with a modelled duration: called with the op's modelled start, it returns
 * the op's modelled end (>= start), which the worker then sleeps to, as for a kernel. */
typedef uint64_t (*sg_timedfn)(void *arg, uint64_t t_start);

struct sg_work {
	enum sg_work_kind kind;
	uint64_t dur_ns;  /* modelled duration (kernel, copy, memset) */
	const char *name; /* kernel name (must outlive the work) */
	void *dst;
	const void *src;
	size_t width, height; /* bytes per row and rows (1D: height = 1) */
	size_t dpitch, spitch;
	int value;	     /* memset byte */
	int stage_src;	     /* snapshot src at submission (pageable HtoD async) */
	sg_hostfn fn;	     /* SG_WORK_HOSTFN: ends when it returns */
	sg_timedfn timed_fn; /* SG_WORK_HOSTFN instead of fn: ends at the time it returns */
	void *arg;
	unsigned elem; /* memset: value is a pattern of 1 (0 too), 2 or 4 bytes */
	/* Not 0: the work was ready at this host time, before it was queued (a synchronous copy
	 * from pageable memory, whose transfer overlaps the caller's staging): it starts no
	 * earlier than t_ready instead of its queueing, and ends no earlier than its queueing. */
	uint64_t t_ready;
	/* The worker signals once the bytes moved, before the modelled end (a synchronous copy
	 * into pageable memory: the caller copies them out of its staging meanwhile). */
	int signal_moved;
};

struct sg_stream;
struct sg_event;
struct sg_graph;
struct sg_exec;
struct sg_op;

/* Stream flags. */
#define SG_STREAM_NONBLOCKING 0x1u

/* Handle resolution. h is what the API layer's caller passed: NULL or
 * SG_H_LEGACY mean the legacy default stream unless per_thread is set, in
 * which case NULL means the calling thread's default stream; SG_H_PER_THREAD
 * always means it. Takes a reference; drop it with sg_stream_put(). */
#define SG_H_LEGACY	((void *)0x1)
#define SG_H_PER_THREAD ((void *)0x2)
int sg_stream_get(void *h, int per_thread, int dev, struct sg_stream **out);
void sg_stream_put(struct sg_stream *s);
int sg_stream_create(int dev, unsigned flags, int priority, struct sg_stream **out);
/* Invalidates the handle now; the stream finishes its work, then goes. */
int sg_stream_destroy(void *h);
int sg_stream_info(struct sg_stream *s, int *dev, unsigned *flags, int *priority);
int sg_stream_is_default(struct sg_stream *s);

/* Queues w on s (or records it into s's capture). When op is not NULL and
 * the work was queued, *op receives a reference to wait on (or NULL when it
 * was captured). */
int sg_submit(struct sg_stream *s, const struct sg_work *w, struct sg_op **op);
/* A copy issued on dst's legacy stream that must also wait for the other
 * device's legacy stream (peer copies). */
int sg_submit_peer(struct sg_stream *s, int other_dev, const struct sg_work *w, struct sg_op **op);
void sg_op_wait(struct sg_op *op); /* blocks off-CPU, then drops the reference */

int sg_stream_sync(struct sg_stream *s);
int sg_stream_query(struct sg_stream *s);
int sg_device_sync(int dev);
/* Waits for all work of every device (before freeing memory). */
void sg_all_sync(void);
/* Destroys every user stream of dev (after sg_device_sync). */
void sg_device_reset_streams(int dev);

/* ---- events ------------------------------------------------------------------- */
#define SG_EVENT_DISABLE_TIMING 0x2u
int sg_event_create(unsigned flags, struct sg_event **out);
int sg_event_destroy(void *h);
int sg_event_record(void *h, struct sg_stream *s);
int sg_event_query(void *h);
int sg_event_sync(void *h);
int sg_event_elapsed(void *start, void *end, float *ms);
int sg_stream_wait_event(struct sg_stream *s, void *event);

/* ---- capture and graphs ---------------------------------------------------------- */
enum sg_capture_mode { SG_CAPTURE_GLOBAL = 0, SG_CAPTURE_THREAD_LOCAL = 1, SG_CAPTURE_RELAXED = 2 };
enum sg_capture_status { SG_CAPTURE_NONE = 0, SG_CAPTURE_ACTIVE = 1, SG_CAPTURE_INVALIDATED = 2 };
int sg_capture_begin(struct sg_stream *s, int mode);
int sg_capture_end(struct sg_stream *s, struct sg_graph **out);
int sg_capture_status(struct sg_stream *s);
int sg_graph_instantiate(void *graph, struct sg_exec **out);
int sg_graph_destroy(void *graph);
int sg_exec_destroy(void *exec);
int sg_graph_launch(void *exec, struct sg_stream *s);
size_t sg_graph_nodes(void *graph);

/* ---- functions: the kernels API handles name (gpu_func.c) ---------------------------- */
/* A function the model can launch, as an API layer hands it out: a CUfunction, a
 * CUkernel, a runtime kernel. Its name is interned (it outlives the handle, so captured
 * work and logs keep it) and its duration comes from sg_kernel_ns(). */
enum sg_func_kind { SG_FUNC_FUNCTION = 1, SG_FUNC_KERNEL = 2 };
struct sg_func;
int sg_func_create(const char *name, enum sg_func_kind kind, struct sg_func **out);
/* Invalidates the handle (SG_EHANDLE if it is not a live function). */
int sg_func_destroy(void *h);
/* A live handle's kind, name and duration; SG_EHANDLE if h is none. Outs may be NULL. */
int sg_func_info(const void *h, int *kind, const char **name, uint64_t *dur_ns);
/* A permanent copy of s, one per distinct string (NULL when out of memory). */
const char *sg_intern(const char *s);

/* ---- operations as an API call issues them (gpu_ops.c) ------------------------------- */
/* The values of cudaMemcpyKind; the driver's cuMemcpyHtoD & co. use the explicit ones,
 * cuMemcpy the default (the pointers say). */
enum sg_copy_kind { SG_COPY_HTOH = 0, SG_COPY_HTOD, SG_COPY_DTOH, SG_COPY_DTOD, SG_COPY_DEFAULT };

/* Where a call's work goes: stream handle `stream` of device `dev` as sg_stream_get()
 * resolves it; sync: the default stream instead (legacy, or the thread's when
 * per_thread), and the call waits until the work is done. */
struct sg_target {
	int dev;
	void *stream;
	int per_thread;
	int sync;
};

/* Queues w on the target (peer_dev >= 0: also after that device's default-stream work). */
int sg_issue(const struct sg_target *t, int peer_dev, struct sg_work *w);
/* A 1D (height 1) or 2D copy: validates kind, pointers and ranges, picks the copy path
 * and its duration, stages pageable host memory in the calling thread, queues and, when
 * sync, waits. Nothing to do (width or height 0) is SG_OK. */
int sg_copy(const struct sg_target *t, void *dst, size_t dpitch, const void *src, size_t spitch,
	    size_t width, size_t height, int kind);
/* Fills count elements of elem (1, 2 or 4) bytes of device or managed memory with value. */
int sg_memset(const struct sg_target *t, void *dst, unsigned value, unsigned elem, size_t count);
/* SG_ECONFIG for a grid or block out of range, SG_EINVAL for too much shared memory. */
int sg_launch_check(const unsigned grid[3], const unsigned block[3], size_t smem);
/* Spins SIMGPU_LAUNCH_US in the caller, then queues a kernel of func's duration.
 * SG_EHANDLE when func is not a live sg_func. *name (may be NULL) gets its name. */
int sg_launch(const struct sg_target *t, const void *func, const unsigned grid[3],
	      const unsigned block[3], size_t smem, const char **name);
/* Frees the allocation based at p (kind in kinds) after all work of every device. */
int sg_mem_free_synced(void *p, unsigned kinds);
/* Queues a stream-ordered free of the device or managed allocation based at p. */
int sg_mem_free_async(const struct sg_target *t, void *p);

/* ---- virtual memory management (gpu_vmm.c) ------------------------------------------- */
/* Physical allocations charged to a device's capacity, address reservations and
 * mappings, which the memory table then classifies as device memory of the physical
 * allocation's device (flags SG_RANGE_VMM). Sizes, offsets and mapped addresses are
 * multiples of SG_VMM_GRANULARITY. */
#define SG_VMM_GRANULARITY (2ull << 20)
struct sg_phys;
int sg_vmm_create(int dev, size_t size, struct sg_phys **out);
/* The memory goes when its last mapping does. SG_EINVAL: not a live, unreleased handle. */
int sg_vmm_release(void *h);
/* The device of a live, unreleased handle (SG_EINVAL otherwise). */
int sg_vmm_device(void *h, int *dev);
int sg_vmm_reserve(size_t size, size_t align, uintptr_t hint, uintptr_t *out);
/* [va, va+size) must be exactly one reservation without mappings. */
int sg_vmm_free(uintptr_t va, size_t size);
/* Maps size bytes of h from offset (0) at va, inside one reservation, where nothing is
 * mapped yet. The mapping starts without access (SG_RANGE_NOACCESS). */
int sg_vmm_map(uintptr_t va, size_t size, size_t offset, void *h);
/* Unmaps the mappings that [va, va+size) covers exactly, after all queued work. */
int sg_vmm_unmap(uintptr_t va, size_t size);
/* Grants (or, with access 0, revokes) access to the mappings [va, va+size) covers. */
int sg_vmm_set_access(uintptr_t va, size_t size, int access);

#endif /* SIMGPU_GPU_MODEL_H */
