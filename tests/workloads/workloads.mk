# tests/workloads — programs with exactly known behaviour that print their own
# reference. Built with gcc/g++ against the simulator's CUDA headers and linked to
# build/simgpu/libcudart.so.13 (RUNPATH, so LD_LIBRARY_PATH can swap in the real one).
# nvcc_kernels.cu and stacks/nvcc_*.cu are built by the e2e tests themselves, only where nvcc exists.
# Exceptions: basic_ops_static links the simulator statically (libcudart_static.a),
# attach_dlopen links no runtime at all (it dlopens one), driver_api links the driver too, and many_libs wants a directory
# of generated libraries (make many-libs, part of make workloads), and stack_paths is several
# sources and a library of its own (below).
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c tests/workloads/*.cpp)
WORKLOADS     := $(patsubst tests/workloads/%,$(BUILD)/workloads/%,$(basename $(WORKLOAD_SRCS))) \
                 $(BUILD)/workloads/basic_ops_static
WL_FLAGS      := -O2 -g -Wall -Werror -D_GNU_SOURCE -fno-omit-frame-pointer \
                 -Itests/simgpu/include -Itests/workloads
WL_LINK       := -rdynamic -L$(BUILD)/simgpu -lcudart -lpthread -lm -Wl,-rpath,'$$ORIGIN/../simgpu'

$(BUILD)/workloads/%: tests/workloads/%.c $(wildcard tests/workloads/*.h) | simgpu
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WL_FLAGS) $< -o $@ $(WL_LINK)

# nvml_phases reads the simulator's own times of its kernels (simgpu.h)
$(BUILD)/workloads/nvml_phases: WL_LINK += -lsimgpu

$(BUILD)/workloads/%: tests/workloads/%.cpp $(wildcard tests/workloads/*.h) | simgpu
	@mkdir -p $(@D)
	$(CXX) -std=gnu++20 $(WL_FLAGS) $< -o $@ $(WL_LINK)

# basic_ops with the runtime inside the executable: no libcudart.so in the process, the
# cuda* symbols in its own .symtab. Same source, same reference as the shared build.
$(BUILD)/workloads/basic_ops_static: tests/workloads/basic_ops.c $(wildcard tests/workloads/*.h) $(BUILD)/simgpu/libcudart_static.a
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WL_FLAGS) $< -o $@ -rdynamic $(BUILD)/simgpu/libcudart_static.a -lpthread -ldl -lm

# attach_dlopen calls the runtime only through dlsym: not linked to it, but its RUNPATH
# still finds the simulator's libcudart.so.13 for dlopen("libcudart.so.13").
$(BUILD)/workloads/attach_dlopen: WL_LINK := -rdynamic -ldl -lpthread -Wl,-rpath,'$$ORIGIN/../simgpu'

# driver_api calls the driver API directly, like a library (cuBLAS, Triton) does.
$(BUILD)/workloads/driver_api: WL_LINK += -lcuda

# many_libs' libraries: MANY_LIBS tiny distinct .so files (scripts/gen_many_libs.sh).
MANY_LIBS     ?= 300
MANY_LIBS_DIR := $(BUILD)/many_libs
$(MANY_LIBS_DIR)/.count-$(MANY_LIBS): scripts/gen_many_libs.sh
	rm -rf $(MANY_LIBS_DIR)
	scripts/gen_many_libs.sh $(MANY_LIBS_DIR) $(MANY_LIBS)
	touch $@

# stack_paths: GPU work from three places, for the call-stack tests — stack_paths.c, a C++ file of
# the same executable (stacks/stack_paths_gemm.cpp) and libstackstage.so (stacks/stackstage.c,
# -fPIC -shared, found through the executable's RUNPATH). Both keep frame pointers (WL_FLAGS).
STACK_SRC := tests/workloads/stacks
$(BUILD)/workloads/libstackstage.so: $(STACK_SRC)/stackstage.c $(STACK_SRC)/stack_paths.h $(STACK_SRC)/frames.h | simgpu
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WL_FLAGS) -fPIC -shared $< -o $@ -L$(BUILD)/simgpu -lcudart -Wl,-rpath,'$$ORIGIN/../simgpu'

$(BUILD)/workloads/stack_paths: tests/workloads/stack_paths.c $(STACK_SRC)/stack_paths_gemm.cpp \
		$(STACK_SRC)/stack_paths.h $(STACK_SRC)/frames.h $(wildcard tests/workloads/*.h) \
		$(BUILD)/workloads/libstackstage.so | simgpu
	@mkdir -p $(BUILD)/workloads/obj
	$(CC) -std=gnu11 $(WL_FLAGS) -c $< -o $(BUILD)/workloads/obj/stack_paths.o
	$(CXX) -std=gnu++20 $(WL_FLAGS) -fno-exceptions -c $(STACK_SRC)/stack_paths_gemm.cpp \
		-o $(BUILD)/workloads/obj/stack_paths_gemm.o
	$(CXX) $(BUILD)/workloads/obj/stack_paths.o $(BUILD)/workloads/obj/stack_paths_gemm.o -o $@ \
		-L$(BUILD)/workloads -lstackstage -Wl,-rpath,'$$ORIGIN' -ldl $(WL_LINK)

# stack_storm is one file, with the frame macros of stacks/.
$(BUILD)/workloads/stack_storm: $(STACK_SRC)/frames.h

.PHONY: workloads many-libs
workloads: $(WORKLOADS) $(BUILD)/workloads/libstackstage.so many-libs
many-libs: $(MANY_LIBS_DIR)/.count-$(MANY_LIBS)

# nofp_stacks: GPU work from code without frame pointers, for the stacks unwound from .eh_frame — the
# executable (nofp/nofp_stacks.c) and libnofpstage.so (nofp/nofp_stage.c, found through the
# executable's RUNPATH), both -O2 -fomit-frame-pointer with asynchronous unwind tables (every
# instruction described), linked to the simulated runtime.
NOFP_SRC   := tests/workloads/nofp
NOFP_FLAGS := $(filter-out -fno-omit-frame-pointer,$(WL_FLAGS)) -fomit-frame-pointer -fasynchronous-unwind-tables
$(BUILD)/workloads/libnofpstage.so: $(NOFP_SRC)/nofp_stage.c $(NOFP_SRC)/nofp.h $(STACK_SRC)/frames.h | simgpu
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(NOFP_FLAGS) -fPIC -shared $< -o $@ -L$(BUILD)/simgpu -lcudart -Wl,-rpath,'$$ORIGIN/../simgpu'

$(BUILD)/workloads/nofp_stacks: $(NOFP_SRC)/nofp_stacks.c $(NOFP_SRC)/nofp.h $(STACK_SRC)/frames.h \
		$(wildcard tests/workloads/*.h) $(BUILD)/workloads/libnofpstage.so | simgpu
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(NOFP_FLAGS) $< -o $@ -L$(BUILD)/workloads -lnofpstage -Wl,-rpath,'$$ORIGIN' -ldl \
		$(WL_LINK)

workloads: $(BUILD)/workloads/nofp_stacks

# reload_walk: libreloada.so and libreloadb.so (reload/reload_lib.c built with two frame sizes, -O2
# -fomit-frame-pointer) loaded in turn at one address, for the stacks walked while code is replaced.
RELOAD_SRC := tests/workloads/reload
$(BUILD)/workloads/reload/libreloada.so: $(RELOAD_SRC)/reload_lib.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(NOFP_FLAGS) -DPAD=1024 -fPIC -shared $< -o $@

$(BUILD)/workloads/reload/libreloadb.so: $(RELOAD_SRC)/reload_lib.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(NOFP_FLAGS) -DPAD=2048 -fPIC -shared $< -o $@

$(BUILD)/workloads/reload_walk: $(RELOAD_SRC)/reload_walk.c $(wildcard tests/workloads/*.h) \
		$(BUILD)/workloads/reload/libreloada.so $(BUILD)/workloads/reload/libreloadb.so | simgpu
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WL_FLAGS) $< -o $@ -ldl $(WL_LINK)

workloads: $(BUILD)/workloads/reload_walk
