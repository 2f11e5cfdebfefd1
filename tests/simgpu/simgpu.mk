# tests/simgpu — the simulated GPU (see tests/simgpu/README.md).
#
#   make simgpu        build/simgpu/libcudart.so.13 (+ libcudart.so) and libsimgpu.so (the GPU model),
#                      and libcudart_static.a: both in one archive, for statically linked programs
#   make simgpu-unit   the simulator's own tests (cmocka) and compatibility checks; part of `make unit`

SIMGPU_DIR    := $(BUILD)/simgpu
SIMGPU_SRC    := tests/simgpu
SIMGPU_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O2 -g -fPIC -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fcf-protection=none \
                 -fno-ipa-icf -fno-shrink-wrap -Wall -Wextra -Werror -pthread \
                 -I$(SIMGPU_SRC)/include -I$(SIMGPU_SRC)/model
SIMGPU_HDRS   := $(wildcard $(SIMGPU_SRC)/include/*.h $(SIMGPU_SRC)/model/*.h $(SIMGPU_SRC)/cudart/*.h)

SIMGPU_MODEL_OBJS  := $(patsubst $(SIMGPU_SRC)/%.c,$(SIMGPU_DIR)/obj/%.o,$(wildcard $(SIMGPU_SRC)/model/*.c))
SIMGPU_CUDART_OBJS := $(patsubst $(SIMGPU_SRC)/%.c,$(SIMGPU_DIR)/obj/%.o,$(wildcard $(SIMGPU_SRC)/cudart/*.c))
SIMGPU_LIBS   := $(SIMGPU_DIR)/libsimgpu.so $(SIMGPU_DIR)/libcudart.so.13 $(SIMGPU_DIR)/libcudart.so \
                 $(SIMGPU_DIR)/libcudart_static.a

$(SIMGPU_DIR)/obj/%.o: $(SIMGPU_SRC)/%.c $(SIMGPU_HDRS)
	@mkdir -p $(@D)
	$(CC) $(SIMGPU_CFLAGS) $(SIMGPU_VIS) -c $< -o $@

# the runtime layer exports only what RT_API marks
$(SIMGPU_CUDART_OBJS): SIMGPU_VIS := -fvisibility=hidden

$(SIMGPU_DIR)/libsimgpu.so: $(SIMGPU_MODEL_OBJS) $(SIMGPU_SRC)/libsimgpu.map
	$(CC) -shared -pthread -Wl,-soname,libsimgpu.so -Wl,--version-script=$(SIMGPU_SRC)/libsimgpu.map \
		-Wl,-z,defs -o $@ $(SIMGPU_MODEL_OBJS)

$(SIMGPU_DIR)/libcudart.so.13: $(SIMGPU_CUDART_OBJS) $(SIMGPU_SRC)/libcudart.map $(SIMGPU_DIR)/libsimgpu.so
	$(CC) -shared -pthread -Wl,-soname,libcudart.so.13 -Wl,--version-script=$(SIMGPU_SRC)/libcudart.map \
		-Wl,-z,defs -Wl,-rpath,'$$ORIGIN' -o $@ $(SIMGPU_CUDART_OBJS) -L$(SIMGPU_DIR) -lsimgpu -ldl

$(SIMGPU_DIR)/libcudart.so: $(SIMGPU_DIR)/libcudart.so.13
	ln -sf libcudart.so.13 $@

# The runtime and the GPU model in one archive, like nvcc's default -cudart static: a program
# linked with it maps no libcudart.so / libsimgpu.so, and the cuda* functions live in the
# executable itself (link with -rdynamic -lpthread -ldl so kernels get their names).
$(SIMGPU_DIR)/libcudart_static.a: $(SIMGPU_CUDART_OBJS) $(SIMGPU_MODEL_OBJS)
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
		-L$(SIMGPU_DIR) -l:libcudart.so.13 -lsimgpu -Wl,-rpath,'$$ORIGIN/..' -lcmocka -ldl

simgpu-unit: $(SIMGPU_TEST_BINS)
	@set -e; start=$$(date +%s%N); \
	for t in $(SIMGPU_TEST_BINS); do echo "== $$t"; $$t; done; \
	$(SIMGPU_SRC)/tests/compat/compat.sh $(SIMGPU_DIR); \
	echo "simgpu-unit: passed in $$(( ($$(date +%s%N) - start) / 1000000 )) ms"

UNIT_EXTRA += simgpu-unit
