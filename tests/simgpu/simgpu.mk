# tests/simgpu — the simulated GPU (see tests/simgpu/README.md).
#
#   make simgpu        build/simgpu/libcudart.so.13 (+ libcudart.so), libcuda.so.1 (+ libcuda.so) and
#                      libsimgpu.so (the GPU model), and libcudart_static.a: runtime, driver and model in
#                      one archive, for statically linked programs
#   make simgpu-unit   the simulator's own tests (cmocka) and compatibility checks; part of `make unit`

SIMGPU_DIR    := $(BUILD)/simgpu
SIMGPU_SRC    := tests/simgpu
SIMGPU_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O2 -g -fPIC -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fcf-protection=none \
                 -fno-ipa-icf -fno-shrink-wrap -Wall -Wextra -Werror -pthread \
                 -I$(SIMGPU_SRC)/include -I$(SIMGPU_SRC)/model
SIMGPU_HDRS   := $(wildcard $(SIMGPU_SRC)/include/*.h $(SIMGPU_SRC)/model/*.h $(SIMGPU_SRC)/cudart/*.h \
                   $(SIMGPU_SRC)/cuda/*.h)

SIMGPU_MODEL_OBJS  := $(patsubst $(SIMGPU_SRC)/%.c,$(SIMGPU_DIR)/obj/%.o,$(wildcard $(SIMGPU_SRC)/model/*.c))
SIMGPU_CUDART_OBJS := $(patsubst $(SIMGPU_SRC)/%.c,$(SIMGPU_DIR)/obj/%.o,$(wildcard $(SIMGPU_SRC)/cudart/*.c))
SIMGPU_CUDA_OBJS   := $(patsubst $(SIMGPU_SRC)/%.c,$(SIMGPU_DIR)/obj/%.o,$(wildcard $(SIMGPU_SRC)/cuda/*.c))
# the static runtime reaches the driver linked beside it, not through dlopen
SIMGPU_CUDART_STATIC_OBJS := $(filter-out %/cudart_driver.o,$(SIMGPU_CUDART_OBJS)) \
                             $(SIMGPU_DIR)/obj/cudart/cudart_driver_static.o
SIMGPU_LIBS   := $(SIMGPU_DIR)/libsimgpu.so $(SIMGPU_DIR)/libcudart.so.13 $(SIMGPU_DIR)/libcudart.so \
                 $(SIMGPU_DIR)/libcuda.so.1 $(SIMGPU_DIR)/libcuda.so $(SIMGPU_DIR)/libcudart_static.a \
                 $(SIMGPU_DIR)/libnvidia-ml.so.1 $(SIMGPU_DIR)/libnvidia-ml.so

$(SIMGPU_DIR)/obj/%.o: $(SIMGPU_SRC)/%.c $(SIMGPU_HDRS)
	@mkdir -p $(@D)
	$(CC) $(SIMGPU_CFLAGS) $(SIMGPU_VIS) -c $< -o $@

$(SIMGPU_DIR)/obj/cudart/cudart_driver_static.o: $(SIMGPU_SRC)/cudart/cudart_driver.c $(SIMGPU_HDRS)
	@mkdir -p $(@D)
	$(CC) $(SIMGPU_CFLAGS) -fvisibility=hidden -DSIMGPU_STATIC -c $< -o $@

# the runtime and driver layers export only what RT_API / CU_API mark
$(SIMGPU_CUDART_OBJS) $(SIMGPU_CUDA_OBJS): SIMGPU_VIS := -fvisibility=hidden

$(SIMGPU_DIR)/libsimgpu.so: $(SIMGPU_MODEL_OBJS) $(SIMGPU_SRC)/libsimgpu.map
	$(CC) -shared -pthread -Wl,-soname,libsimgpu.so -Wl,--version-script=$(SIMGPU_SRC)/libsimgpu.map \
		-Wl,-z,defs -o $@ $(SIMGPU_MODEL_OBJS)

# (not linked to libcuda.so.1, which it dlopens at its first call: built with it)
$(SIMGPU_DIR)/libcudart.so.13: $(SIMGPU_CUDART_OBJS) $(SIMGPU_SRC)/libcudart.map $(SIMGPU_DIR)/libsimgpu.so \
		| $(SIMGPU_DIR)/libcuda.so.1
	$(CC) -shared -pthread -Wl,-soname,libcudart.so.13 -Wl,--version-script=$(SIMGPU_SRC)/libcudart.map \
		-Wl,-z,defs -Wl,-rpath,'$$ORIGIN' -o $@ $(SIMGPU_CUDART_OBJS) -L$(SIMGPU_DIR) -lsimgpu -ldl

$(SIMGPU_DIR)/libcudart.so: $(SIMGPU_DIR)/libcudart.so.13
	ln -sf libcudart.so.13 $@

# The driver: unversioned cu* exports like the real libcuda.so.1. The runtime does not link it:
# it dlopens it at its first call (through its RUNPATH, $ORIGIN), as the real one does.
$(SIMGPU_DIR)/libcuda.so.1: $(SIMGPU_CUDA_OBJS) $(SIMGPU_SRC)/libcuda.map $(SIMGPU_DIR)/libsimgpu.so
	$(CC) -shared -pthread -Wl,-soname,libcuda.so.1 -Wl,--version-script=$(SIMGPU_SRC)/libcuda.map \
		-Wl,-z,defs -Wl,-rpath,'$$ORIGIN' -o $@ $(SIMGPU_CUDA_OBJS) -L$(SIMGPU_DIR) -lsimgpu

$(SIMGPU_DIR)/libcuda.so: $(SIMGPU_DIR)/libcuda.so.1
	ln -sf libcuda.so.1 $@

# NVML (libnvidia-ml.so.1): reads the board every simulated process publishes on (the GPU model's
# gpu_board.h); it does not load the model itself. Unversioned nvml* exports like the real one.
SIMGPU_NVML_OBJS := $(SIMGPU_DIR)/obj/nvml/nvml.o $(SIMGPU_DIR)/obj/nvml/gpu_board_map.o
$(SIMGPU_DIR)/obj/nvml/gpu_board_map.o: $(SIMGPU_SRC)/model/gpu_board_map.c $(SIMGPU_HDRS)
	@mkdir -p $(@D)
	$(CC) $(SIMGPU_CFLAGS) -c $< -o $@

$(SIMGPU_DIR)/libnvidia-ml.so.1: $(SIMGPU_NVML_OBJS) $(SIMGPU_SRC)/libnvidia-ml.map
	$(CC) -shared -pthread -Wl,-soname,libnvidia-ml.so.1 -Wl,--version-script=$(SIMGPU_SRC)/libnvidia-ml.map \
		-Wl,-z,defs -o $@ $(SIMGPU_NVML_OBJS) -lrt

$(SIMGPU_DIR)/libnvidia-ml.so: $(SIMGPU_DIR)/libnvidia-ml.so.1
	ln -sf libnvidia-ml.so.1 $@

# The runtime, the driver and the GPU model in one archive, like nvcc's default -cudart static:
# a program linked with it maps no libcudart.so / libcuda.so / libsimgpu.so; its cuda* functions
# and the cu* driver functions they call live in the executable itself (link with -rdynamic
# -lpthread -ldl so kernels get their names).
$(SIMGPU_DIR)/libcudart_static.a: $(SIMGPU_CUDART_STATIC_OBJS) $(SIMGPU_CUDA_OBJS) $(SIMGPU_MODEL_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

.PHONY: simgpu simgpu-unit
simgpu: $(SIMGPU_LIBS)

# ---- the simulator's own tests ------------------------------------------------------
SIMGPU_TEST_BINS := $(patsubst $(SIMGPU_SRC)/tests/%.c,$(SIMGPU_DIR)/tests/%,$(wildcard $(SIMGPU_SRC)/tests/test_*.c))

$(SIMGPU_DIR)/tests/%: $(SIMGPU_SRC)/tests/%.c $(wildcard $(SIMGPU_SRC)/tests/*.h include/gpuprobed/api.h) $(SIMGPU_HDRS) $(SIMGPU_LIBS)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -pthread -rdynamic \
		-I$(SIMGPU_SRC)/include -I$(SIMGPU_SRC)/model -I$(SIMGPU_SRC)/tests -Iinclude $< -o $@ \
		-L$(SIMGPU_DIR) -l:libcudart.so.13 $(SIMGPU_TEST_LIBS) -lsimgpu -Wl,-rpath,'$$ORIGIN/..' -lcmocka -ldl

# the driver's tests call it directly too
$(SIMGPU_DIR)/tests/test_simgpu_driver: SIMGPU_TEST_LIBS := -l:libcuda.so.1

simgpu-unit: $(SIMGPU_TEST_BINS)
	@set -e; start=$$(date +%s%N); \
	for t in $(SIMGPU_TEST_BINS); do echo "== $$t"; $$t; done; \
	$(SIMGPU_SRC)/tests/compat/compat.sh $(SIMGPU_DIR); \
	echo "simgpu-unit: passed in $$(( ($$(date +%s%N) - start) / 1000000 )) ms"

UNIT_EXTRA += simgpu-unit
