/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * places.h — processes placed in containers (gp_model_process_place), for
 * the sink tests: two processes in the podman container web-1, one on the
 * host; with k8s, a Kubernetes container whose name is not known, in pod
 * ml/trainer-0, and a process in a pod whose container id is not known.
 * Include after records.h.
 */
#ifndef GP_TEST_PLACES_H
#define GP_TEST_PLACES_H

#define PL_ID_A	   "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
#define PL_ID_B	   "0badc0de0badc0de0badc0de0badc0de0badc0de0badc0de0badc0de0badc0de"
#define PL_CG_A	   "/machine.slice/libpod-" PL_ID_A ".scope/container"
#define PL_UID_B   "7d4c2e9a-1b3f-4c5d-8e6f-0a1b2c3d4e5f"
#define PL_UID_C   "11111111-2222-3333-4444-555555555555"
#define PL_WEB1	   4242 /* basic_ops, web-1, pid 1 in it */
#define PL_WEB2	   4250 /* worker, web-1, pid 7 in it */
#define PL_HOST	   5000 /* host_job, on the host */
#define PL_K8S	   6000 /* trainer, containerd PL_ID_B (no name), pod ml/trainer-0, pid 1 in it */
#define PL_PODONLY 6100 /* sidecar, pod PL_UID_C, no container id, no names */

static void pl_place(struct gp_model *m, __u32 pid, __u32 ns_pid, const char *runtime,
		     const char *id, const char *name, const char *pod_uid, const char *pod_name,
		     const char *pod_ns, const char *cgroup)
{
	const struct gp_op_process_place v = {
		.pid = pid,
		.ns_pid = ns_pid,
		.runtime = runtime,
		.container_id = id,
		.container_name = name,
		.pod_uid = pod_uid,
		.pod_name = pod_name,
		.pod_namespace = pod_ns,
		.cgroup = cgroup,
	};

	assert_int_equal(gp_model_process_place(m, &v), 0);
}

/* A call of pid: c's thread becomes the process's main thread, at *t (1 us apart). */
static void pl_feed(struct gp_model *m, __u32 pid, struct gp_api_call c, __u64 *t)
{
	c.hdr.tgid = pid;
	c.hdr.tid = pid;
	c.hdr.ts_ns = *t;
	*t += c.dur_ns + 1000;
	feed(m, &c);
}

/*
 * The processes and their places (the processes added at t0), then their
 * calls from *t. web-1: 4 calls (1 MiB HtoD and 4 KiB DtoH copied: 1,052,672
 * bytes; 250,000 + 7 + 3,000 + 10 ns of host time queuing work); the host:
 * 1 call (64 KiB); the k8s container: 1 launch (7 ns); the pod: 1 call.
 */
static __attribute__((unused)) void pl_processes(struct gp_model *m, bool k8s, __u64 t0)
{
	assert_int_equal(gp_model_process_add(m, PL_WEB1, "basic_ops", "./basic_ops", t0, true), 0);
	assert_int_equal(gp_model_process_add(m, PL_WEB2, "worker", "./worker", t0, true), 0);
	assert_int_equal(gp_model_process_add(m, PL_HOST, "host_job", "./host_job", t0, true), 0);
	pl_place(m, PL_WEB1, 1, "podman", PL_ID_A, "web-1", NULL, NULL, NULL, PL_CG_A);
	pl_place(m, PL_WEB2, 7, "podman", PL_ID_A, "web-1", "", "", "", PL_CG_A);
	/* a host process: its own pid in the host's namespace, no container */
	pl_place(m, PL_HOST, PL_HOST, NULL, NULL, NULL, NULL, NULL, NULL,
		 "/user.slice/session-2.scope");
	if (!k8s)
		return;
	assert_int_equal(gp_model_process_add(m, PL_K8S, "trainer", "python3 train.py", t0, true),
			 0);
	assert_int_equal(gp_model_process_add(m, PL_PODONLY, "sidecar", "sidecar", t0, true), 0);
	pl_place(m, PL_K8S, 1, "containerd", PL_ID_B, NULL, PL_UID_B, "trainer-0", "ml",
		 "/kubepods.slice/kubepods-pod" PL_UID_B ".slice/cri-containerd-" PL_ID_B ".scope");
	pl_place(m, PL_PODONLY, 3, "kubernetes", NULL, NULL, PL_UID_C, NULL, NULL,
		 "/kubepods/pod" PL_UID_C);
}

static __attribute__((unused)) void pl_calls(struct gp_model *m, bool k8s, __u64 *t)
{
	const __u32 grid[3] = { 64, 1, 1 }, block[3] = { 256, 1, 1 };
	const __u64 dev = 0x7f3a00000000ULL, heap = 0x55d0c0de0000ULL;

	pl_feed(m, PL_WEB1,
		rec_memcpy(GP_API_CUDA_MEMCPY, dev, heap, 1 << 20, GP_MEMCPY_HTOD, 0, 250000, 0),
		t);
	pl_feed(m, PL_WEB1,
		rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 0xa1, 0x401234, grid, block, 0, 0, 0), t);
	pl_feed(m, PL_WEB2,
		rec_memcpy(GP_API_CUDA_MEMCPY, heap, dev, 4096, GP_MEMCPY_DTOH, 0, 3000, 0), t);
	pl_feed(m, PL_WEB2, rec_memset(GP_API_CUDA_MEMSET_ASYNC, dev, 4096, 0, 0), t);
	pl_feed(m, PL_HOST,
		rec_memcpy(GP_API_CUDA_MEMCPY, dev, heap, 65536, GP_MEMCPY_HTOD, 0, 5000, 0), t);
	if (!k8s)
		return;
	pl_feed(m, PL_K8S,
		rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 0xa1, 0x401234, grid, block, 0, 0, 0), t);
	pl_feed(m, PL_PODONLY, rec_h(GP_API_CUDA_DEVICE_SYNCHRONIZE, PL_PODONLY, 0, 0, 100, 0), t);
}

/* The whole model: a session, the processes, their calls; its operations seen by tap (NULL: none). */
static __attribute__((unused)) struct gp_model *pl_model(const struct gp_resolver *resolver,
							 const struct gp_model_tap *tap, bool k8s)
{
	struct gp_model *m = gp_model_new(resolver);
	const struct gp_session_info si = {
		.tool_version = "0.1-test",
		.command_line = "gpuprobed --all",
		.mode = "all",
		.hostname = "gpu-node-1",
		.kernel_release = "6.18.0",
		.start_mono_ns = 1000000000000ULL,
		.start_realtime_ns = 1700000000000000000ULL,
	};
	__u64 t = si.start_mono_ns + 5000000;

	assert_non_null(m);
	gp_model_set_tap(m, tap);
	gp_model_set_session(m, &si);
	pl_processes(m, k8s, si.start_mono_ns + 1000);
	pl_calls(m, k8s, &t);
	gp_model_set_session_end(m, t + 1000000);
	gp_model_set_tap(m, NULL);
	return m;
}

#endif /* GP_TEST_PLACES_H */
