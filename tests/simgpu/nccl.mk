# tests/simgpu/nccl.mk — the simulated NCCL (tests/simgpu/nccl/README.md), included after simgpu.mk.
#
#   build/simgpu/libnccl.so.2 (+ libnccl.so)   NCCL 2.28's API over the GPU model (libsimgpu.so,
#                                              RUNPATH $ORIGIN): ranks in separate processes meet in
#                                              shared memory; part of `make simgpu`
#   build/simgpu/tests/test_simgpu_nccl        its cmocka test, run by `make simgpu-unit` (simgpu.mk's
#                                              wildcard of tests/test_*.c; the link rule is here)
#   build/workloads/nccl_ranks                 the multi-rank workload, linked with -lnccl

NCCL_SRC  := $(SIMGPU_SRC)/nccl
NCCL_OBJS := $(patsubst $(SIMGPU_SRC)/%.c,$(SIMGPU_DIR)/obj/%.o,$(wildcard $(NCCL_SRC)/*.c))
NCCL_LIBS := $(SIMGPU_DIR)/libnccl.so.2 $(SIMGPU_DIR)/libnccl.so

# compiled by simgpu.mk's pattern rule (SIMGPU_CFLAGS: frame pointers, no endbr64, no ICF, no
# shrink-wrapping); only what NC_API marks is exported
$(NCCL_OBJS): SIMGPU_VIS := -fvisibility=hidden
$(NCCL_OBJS): $(wildcard $(NCCL_SRC)/*.h)

$(SIMGPU_DIR)/libnccl.so.2: $(NCCL_OBJS) $(SIMGPU_SRC)/libnccl.map $(SIMGPU_DIR)/libsimgpu.so
	$(CC) -shared -pthread -Wl,-soname,libnccl.so.2 -Wl,--version-script=$(SIMGPU_SRC)/libnccl.map \
		-Wl,-z,defs -Wl,-rpath,'$$ORIGIN' -o $@ $(NCCL_OBJS) -L$(SIMGPU_DIR) -lsimgpu -ldl -lm

$(SIMGPU_DIR)/libnccl.so: $(SIMGPU_DIR)/libnccl.so.2
	ln -sf libnccl.so.2 $@

simgpu: $(NCCL_LIBS)

# An explicit rule: simgpu.mk's pattern rule for tests/% links no -lnccl.
$(SIMGPU_DIR)/tests/test_simgpu_nccl: $(SIMGPU_SRC)/tests/test_simgpu_nccl.c $(wildcard $(SIMGPU_SRC)/tests/*.h) \
		include/gpuprobed/api.h $(SIMGPU_HDRS) $(SIMGPU_LIBS) $(NCCL_LIBS)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -pthread -rdynamic \
		-I$(SIMGPU_SRC)/include -I$(SIMGPU_SRC)/model -I$(SIMGPU_SRC)/tests -Iinclude $< -o $@ \
		-L$(SIMGPU_DIR) -l:libnccl.so.2 -l:libcudart.so.13 -lsimgpu -Wl,-rpath,'$$ORIGIN/..' -lcmocka -ldl

# The workload: the workloads.mk pattern rule, plus the library.
# -z now: a first call's lazy symbol binding would run inside the rank's clock window around the call,
# before the tracer's probe (nccl_ranks.c)
$(BUILD)/workloads/nccl_ranks: WL_LINK += -lnccl -Wl,-z,now
$(BUILD)/workloads/nccl_ranks: $(NCCL_LIBS)

# nccl_clique: one process driving every rank (ncclCommInitAll, ncclCommSplit)
$(BUILD)/workloads/nccl_clique: WL_LINK += -lnccl
$(BUILD)/workloads/nccl_clique: $(SIMGPU_DIR)/libnccl.so.2
