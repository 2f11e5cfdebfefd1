# tests/fuzz — libFuzzer on the read path of `gpuprobed report` (tests/fuzz/fuzz_capture.c).
#
#   make fuzz         fuzz for FUZZ_SECONDS (default 600); the corpus grows in build/fuzz/corpus
#   make fuzz-smoke   30 s from the seeds alone (part of make test)
#
# A crash, leak or undefined behaviour fails the target and leaves its input in build/fuzz/
# (crash-*, leak-*, timeout-*, oom-*): replay it with build/fuzz/fuzz_capture FILE.
# Built with Debian's clang and its libFuzzer (libclang-rt-dev); only what the read path needs
# is compiled again (no BPF skeletons, no session). -Wno-format-zero-length: clang flags
# md_table_cell(t, p ? "" : "`%s`", ...), a deliberate empty cell.
FUZZ_SECONDS ?= 600
FUZZ_MAX_LEN ?= 1048576
FUZZ_DIR     := $(BUILD)/fuzz

FUZZ_CFLAGS := -O1 -g -std=gnu11 $(WARN) -Wno-format-zero-length -Werror -D_GNU_SOURCE -fno-omit-frame-pointer -Iinclude -Isrc -I$(BUILD)/gen \
               -DGP_VERSION='"$(VERSION)"' -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_LDLIBS := -lelf -lz -lzstd -ljansson -liberty -lprotobuf-c -lm -lpthread
FUZZ_SRCS   := $(wildcard src/*.c src/model/*.c src/text/*.c src/analysis/*.c src/stack_formats/*.c src/timeline/*.c src/report/*.c src/symbolize/*.c) \
               $(addprefix src/stacks/,python_layout.c python_files.c python_walk.c python_names.c) \
               src/stacks/unwind_table.c src/stacks/unwind_cfi.c \
               $(addprefix src/capture/,capture_load.c capture_reader.c capture_resolver.c capture_writer.c)
FUZZ_OBJS   := $(patsubst src/%.c,$(FUZZ_DIR)/obj/%.o,$(FUZZ_SRCS)) $(FUZZ_DIR)/obj/gen/profile.pb-c.o

$(FUZZ_DIR)/obj/%.o: src/%.c | $(PROTO_GEN)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_DIR)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

-include $(FUZZ_OBJS:.o=.d)

$(FUZZ_DIR)/fuzz_capture: tests/fuzz/fuzz_capture.c $(FUZZ_OBJS)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJS) -o $@ $(FUZZ_LDLIBS)

$(FUZZ_DIR)/fuzz_seeds: tests/fuzz/fuzz_seeds.c $(FUZZ_OBJS)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $< $(FUZZ_OBJS) -o $@ $(FUZZ_LDLIBS)

# Real captures (and their operation streams), written again whenever the generator changes.
$(FUZZ_DIR)/seeds/.stamp: $(FUZZ_DIR)/fuzz_seeds
	rm -rf $(FUZZ_DIR)/seeds
	$(FUZZ_DIR)/fuzz_seeds $(FUZZ_DIR)/seeds
	touch $@

# $(1): seconds, $(2): the corpus directory new inputs go to (seeds are read, never written)
FUZZ_RUN = cd $(FUZZ_DIR) && UBSAN_OPTIONS=print_stacktrace=1 ./fuzz_capture -max_total_time=$(1) \
           -max_len=$(FUZZ_MAX_LEN) -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=./ \
           $(2) seeds

.PHONY: fuzz fuzz-build fuzz-smoke
fuzz-build: $(FUZZ_DIR)/fuzz_capture $(FUZZ_DIR)/seeds/.stamp

fuzz: deps
	$(MAKE) fuzz-build
	@mkdir -p $(FUZZ_DIR)/corpus
	$(call FUZZ_RUN,$(FUZZ_SECONDS),corpus)

# A fresh corpus each time: the same short run whatever an earlier make fuzz left behind.
fuzz-smoke: fuzz-build
	rm -rf $(FUZZ_DIR)/smoke-corpus && mkdir -p $(FUZZ_DIR)/smoke-corpus
	$(call FUZZ_RUN,30,smoke-corpus)
