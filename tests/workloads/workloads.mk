# tests/workloads — programs with exactly known behaviour that print their own
# reference. Built with gcc/g++ against the simulator's CUDA headers and linked to
# build/simgpu/libcudart.so.13 (RUNPATH, so LD_LIBRARY_PATH can swap in the real one).
# nvcc_kernels.cu is built by the e2e tests themselves, only where nvcc exists.
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c tests/workloads/*.cpp)
WORKLOADS     := $(patsubst tests/workloads/%,$(BUILD)/workloads/%,$(basename $(WORKLOAD_SRCS)))
WL_FLAGS      := -O2 -g -Wall -Werror -D_GNU_SOURCE -fno-omit-frame-pointer \
                 -Itests/simgpu/include -Itests/workloads
WL_LINK       := -rdynamic -L$(BUILD)/simgpu -lcudart -lpthread -lm -Wl,-rpath,'$$ORIGIN/../simgpu'

$(BUILD)/workloads/%: tests/workloads/%.c $(wildcard tests/workloads/*.h) | simgpu
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WL_FLAGS) $< -o $@ $(WL_LINK)

$(BUILD)/workloads/%: tests/workloads/%.cpp $(wildcard tests/workloads/*.h) | simgpu
	@mkdir -p $(@D)
	$(CXX) -std=gnu++20 $(WL_FLAGS) $< -o $@ $(WL_LINK)

.PHONY: workloads
workloads: $(WORKLOADS)
