/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nvml.h — NVML (libnvidia-ml.so.1, installed with every NVIDIA driver)
 * loaded at run time with dlopen: no build dependency. The few types and
 * values of NVIDIA's nvml.h that gpuprobed uses are declared here, as that
 * header has them (API version 12); the functions come through a table.
 */
#ifndef GP_GPU_NVML_H
#define GP_GPU_NVML_H

#include <stddef.h>

#define GP_NVML_SONAME "libnvidia-ml.so.1"

typedef struct gp_nvml_device_st *gp_nvml_device; /* nvmlDevice_t */
typedef int gp_nvml_return;			  /* nvmlReturn_t */

enum {
	GP_NVML_SUCCESS = 0,
	GP_NVML_ERROR_NOT_SUPPORTED = 3,
	GP_NVML_ERROR_NOT_FOUND = 6,
	GP_NVML_ERROR_INSUFFICIENT_SIZE = 7,
	GP_NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	GP_NVML_ERROR_GPU_IS_LOST_ = 15,
};
enum { GP_NVML_CLOCK_SM = 1, GP_NVML_CLOCK_MEM = 2 };	       /* nvmlClockType_t */
enum { GP_NVML_TEMPERATURE_GPU = 0 };			       /* nvmlTemperatureSensors_t */
enum { GP_NVML_PCIE_TX_BYTES = 0, GP_NVML_PCIE_RX_BYTES = 1 }; /* nvmlPcieUtilCounter_t */

struct gp_nvml_utilization {
	unsigned int gpu, memory;
}; /* nvmlUtilization_t */
struct gp_nvml_memory {
	unsigned long long total, free, used;
};			      /* nvmlMemory_t */
struct gp_nvml_process_info { /* nvmlProcessInfo_t (v2) */
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
};
struct gp_nvml_process_util { /* nvmlProcessUtilizationSample_t */
	unsigned int pid;
	unsigned long long timeStamp;
	unsigned int smUtil, memUtil, encUtil, decUtil;
};

/* The functions used, by their NVML names: required ones first (without them NVML is unusable). */
#define GP_NVML_FUNCS(X)                                                                        \
	X(1, nvmlInit_v2, (void))                                                               \
	X(1, nvmlShutdown, (void))                                                              \
	X(1, nvmlDeviceGetCount_v2, (unsigned int *))                                           \
	X(1, nvmlDeviceGetHandleByIndex_v2, (unsigned int, gp_nvml_device *))                   \
	X(0, nvmlSystemGetDriverVersion, (char *, unsigned int))                                \
	X(0, nvmlDeviceGetName, (gp_nvml_device, char *, unsigned int))                         \
	X(0, nvmlDeviceGetUUID, (gp_nvml_device, char *, unsigned int))                         \
	X(0, nvmlDeviceGetUtilizationRates, (gp_nvml_device, struct gp_nvml_utilization *))     \
	X(0, nvmlDeviceGetMemoryInfo, (gp_nvml_device, struct gp_nvml_memory *))                \
	X(0, nvmlDeviceGetClockInfo, (gp_nvml_device, int, unsigned int *))                     \
	X(0, nvmlDeviceGetPowerUsage, (gp_nvml_device, unsigned int *))                         \
	X(0, nvmlDeviceGetTemperature, (gp_nvml_device, int, unsigned int *))                   \
	X(0, nvmlDeviceGetPcieThroughput, (gp_nvml_device, int, unsigned int *))                \
	X(0, nvmlDeviceGetCurrentClocksThrottleReasons, (gp_nvml_device, unsigned long long *)) \
	X(0, nvmlDeviceGetComputeRunningProcesses_v3,                                           \
	  (gp_nvml_device, unsigned int *, struct gp_nvml_process_info *))                      \
	X(0, nvmlDeviceGetProcessUtilization,                                                   \
	  (gp_nvml_device, struct gp_nvml_process_util *, unsigned int *, unsigned long long))

struct gp_nvml {
	void *lib;
	const char *(*nvmlErrorString)(gp_nvml_return);
#define GP_NVML_PTR(req, name, args) gp_nvml_return(*name) args;
	GP_NVML_FUNCS(GP_NVML_PTR)
#undef GP_NVML_PTR
};

/*
 * Loads path (NULL: the soname, through the loader's search) and initialises NVML. 0; -ENOENT
 * when the library is not there (no NVIDIA driver), -ENOSYS when a required function is missing,
 * -EIO when nvmlInit_v2 failed: why says it in a line either way.
 */
int gp_nvml_open(struct gp_nvml *n, const char *path, char *why, size_t len);
void gp_nvml_close(struct gp_nvml *n); /* nvmlShutdown and dlclose; a zeroed one is a no-op */
const char *gp_nvml_error(const struct gp_nvml *n, gp_nvml_return r); /* nvmlErrorString */

#endif /* GP_GPU_NVML_H */
