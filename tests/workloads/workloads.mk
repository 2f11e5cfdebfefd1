# tests/workloads — programs with exactly known behaviour that print their own
# reference. Built with gcc against the simulator's CUDA headers and linked to
# build/simgpu/libcudart.so.13 (RUNPATH, so LD_LIBRARY_PATH can swap in the real one).
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
WORKLOADS     := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(WORKLOAD_SRCS))
WL_CFLAGS     := -O2 -g -std=gnu11 -Wall -Werror -D_GNU_SOURCE -fno-omit-frame-pointer \
                 -Itests/simgpu/include -Itests/workloads

$(BUILD)/workloads/%: tests/workloads/%.c $(wildcard tests/workloads/*.h) | simgpu
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -rdynamic $< -o $@ -L$(BUILD)/simgpu -lcudart -lpthread -lm \
		-Wl,-rpath,'$$ORIGIN/../simgpu'

.PHONY: workloads
workloads: $(WORKLOADS)
