# gpuprobed — build, test, demo, bench, install.
#
#   make          build build/gpuprobed, the simulated GPU and the test workloads
#   make deps     install every Debian package the build and the tests need (idempotent)
#   make test     deps + format check + build + unit tests + fuzz smoke + end-to-end tests (root: real BPF)
#                 + a smoke of exact tests on Debian 12's own kernel (6.1) in a VM (tests/kernels)
#   make test-kernels  the whole e2e suite on Linux 5.10, 6.1, 6.12 in VMs and on the host's kernel
#   make test-busy  make test beside BUSY_CPUS (1) busy loops: the suite must hold on a busy machine
#   make fuzz     deps + fuzz the capture reader for FUZZ_SECONDS (tests/fuzz/fuzz.mk)
#   make demo     deps + build + trace the bundled demo workload into ./profile_output/
#   make bench    deps + build + overhead benchmark (writes docs/performance.md)
#   make install  PREFIX=/usr/local DESTDIR=

.DEFAULT_GOAL := all
SHELL := /bin/bash

BUILD    ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
CC       := gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
PYTHON   ?= /usr/bin/python3
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo 0.1)

WARN     := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wno-missing-field-initializers
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 $(WARN) -Werror -D_GNU_SOURCE -fno-omit-frame-pointer \
            -Iinclude -Isrc -I$(BUILD) -DGP_VERSION='"$(VERSION)"'
LDLIBS   := -lbpf -lelf -lz -lzstd -ljansson -liberty -linih -lmicrohttpd -lsystemd -lsqlite3 -lseccomp -lprotobuf-c \
            -lpthread -lm

# Debian packages the build, the tests, the demo and the bench need. podman and runc run the container tests
# (crun refuses hybrid cgroups); netavark, only recommended, because podman refuses to start without a network
# backend even for --network none. golang-go is for the tests only: its go tool pprof reads profile.pb.gz.
DEB_PACKAGES := make gcc g++ clang libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev libzstd-dev libjansson-dev \
                libiberty-dev libcmocka-dev libclang-rt-dev python3 python3-pytest python3-jsonschema bpftrace \
                libinih-dev libmicrohttpd-dev libsystemd-dev systemd curl prometheus python3-seccomp strace \
                libsqlite3-dev sqlite3 libseccomp-dev python3-zstandard clang-format python3-markdown \
                qemu-system-x86 busybox-static kmod podman runc netavark protobuf-c-compiler libprotobuf-c-dev golang-go

# ---- BPF: vmlinux.h -> .bpf.o -> .skel.h ---------------------------------
BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror -Iinclude -Ibpf -I$(BUILD)

$(BUILD)/vmlinux.h:
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.bpf.h) include/gpuprobed/events.h include/gpuprobed/api.h | $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# sched.bpf.c counts threads on a CPU with an atomic add whose result it uses (BPF_FETCH: ISA v3)
$(BUILD)/bpf/sched.bpf.o: BPF_CFLAGS += -mcpu=v3

.SECONDARY: $(BPF_OBJS)
$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

# ---- userspace -----------------------------------------------------------
# pprof's messages, compiled by protoc-c into $(BUILD)/gen (src/stack_formats/pprof_profile.c packs them)
PROTO_GEN := $(BUILD)/gen/profile.pb-c.c $(BUILD)/gen/profile.pb-c.h
$(PROTO_GEN) &: src/stack_formats/profile.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen --proto_path=src/stack_formats profile.proto

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I$(BUILD)/gen -c $< -o $@

SRCS      := $(wildcard src/*.c src/*/*.c)
OBJS      := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRCS)) $(BUILD)/obj/gen/profile.pb-c.o
# Everything but main(): what unit tests link against.
LIB_OBJS  := $(filter-out $(BUILD)/obj/cmd/main.o,$(OBJS))

$(BUILD)/obj/%.o: src/%.c | $(BPF_SKELS) $(PROTO_GEN)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I$(BUILD)/gen -MMD -MP -c $< -o $@

$(BUILD)/gpuprobed: $(OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

-include $(OBJS:.o=.d)

.PHONY: all gpuprobed deps npm-deps format format-check test test-busy unit e2e demo bench install uninstall clean check-root
all: gpuprobed simgpu workloads
gpuprobed: $(BUILD)/gpuprobed

# ---- areas with their own fragments --------------------------------------
include tests/simgpu/simgpu.mk
include tests/simgpu/nccl.mk
include tests/workloads/workloads.mk
include tests/unit/unit.mk
include tests/e2e/e2e.mk
include tests/fuzz/fuzz.mk
include scripts/bench.mk
include tests/kernels/kernels.mk

# ---- set-up --------------------------------------------------------------
# Installs only what is missing; a second run does nothing.
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${db:Status-Status}\n' $$p 2>/dev/null | grep -qx installed || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing:" $$missing; \
		if [ "$$(id -u)" != 0 ]; then echo "make deps: must run as root to install packages (try: sudo make deps)" >&2; exit 1; fi; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "make deps: all $(words $(DEB_PACKAGES)) packages present"; fi
	@$(MAKE) --no-print-directory npm-deps

# The npm packages of the real consumers the tests open outputs with (tests/e2e/npm/package.json, pinned by its
# lock file) into $(BUILD)/npm, once per lock file. Node.js and npm come from Debian (nodejs, npm) where the
# machine has no npm of its own.
NPM_LOCK := tests/e2e/npm/package-lock.json
npm-deps:
	@if ! command -v npm >/dev/null; then \
		echo "make deps: installing: nodejs npm"; \
		if [ "$$(id -u)" != 0 ]; then echo "make deps: must run as root to install packages (try: sudo make deps)" >&2; exit 1; fi; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm; fi
	@if cmp -s $(NPM_LOCK) $(BUILD)/npm/.installed-lock; then echo "make deps: npm packages present ($(BUILD)/npm)"; \
	else mkdir -p $(BUILD)/npm && cp tests/e2e/npm/package.json $(NPM_LOCK) $(BUILD)/npm/ && \
		if npm ci --prefix $(BUILD)/npm --no-audit --no-fund --loglevel=error; then \
			cp $(NPM_LOCK) $(BUILD)/npm/.installed-lock && echo "make deps: npm packages installed into $(BUILD)/npm"; \
		else echo "make deps: npm ci failed (offline?): the tests that open files in speedscope or Chrome's trace engine skip, saying why" >&2; fi; fi

test: deps
	$(MAKE) format-check
	$(MAKE) all unit-build
	$(MAKE) unit
	$(MAKE) fuzz-smoke
	$(MAKE) e2e
	$(MAKE) kernel-smoke
	$(MAKE) systemd-smoke

# The C of the tree as .clang-format writes it (Debian's clang-format 14): make format rewrites it, make
# format-check (the first step of make test) names every file that differs.
FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find src bpf include tests -name '*.[ch]')
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	@bad=$$(clang-format --dry-run --Werror $(FORMAT_FILES) 2>&1 | grep -o '^[^: ]*\.[ch]:[0-9]' | sed 's/:[0-9]*$$//' | sort -u); \
	if [ -n "$$bad" ]; then echo "make format-check: not as .clang-format writes them (make format rewrites them):" $$bad >&2; exit 1; fi; \
	echo "make format-check: $(words $(FORMAT_FILES)) files as .clang-format writes them"

# make test beside BUSY_CPUS shell loops that keep CPUs busy (docs/testing.md): it must pass the same.
BUSY_CPUS ?= 1
test-busy:
	@pids=; for i in $$(seq $(BUSY_CPUS)); do sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT; echo "make test-busy: $(BUSY_CPUS) CPU burner(s):$$pids"; $(MAKE) test

demo: deps
	$(MAKE) all
	scripts/demo.sh $(BUILD)

# The unit's ExecStart names $(PREFIX)/sbin and $(SYSCONFDIR) (@SBINDIR@, @SYSCONFDIR@ in the source). A config
# file already installed is the admin's: ours goes beside it as .conf.new.
SYSCONFDIR       ?= /etc
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
install: $(BUILD)/gpuprobed
	install -D -m 0755 $(BUILD)/gpuprobed $(DESTDIR)$(PREFIX)/sbin/gpuprobed
	install -D -m 0644 docs/gpuprobed.8 $(DESTDIR)$(PREFIX)/share/man/man8/gpuprobed.8
	install -d -m 0755 $(DESTDIR)$(SYSTEMD_UNIT_DIR)
	sed -e 's|@SBINDIR@|$(PREFIX)/sbin|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' systemd/gpuprobed.service > $(DESTDIR)$(SYSTEMD_UNIT_DIR)/gpuprobed.service.tmp
	chmod 0644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/gpuprobed.service.tmp
	mv -f $(DESTDIR)$(SYSTEMD_UNIT_DIR)/gpuprobed.service.tmp $(DESTDIR)$(SYSTEMD_UNIT_DIR)/gpuprobed.service
	@if [ "$$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 2)" -gt 2 ]; then \
		install -D -m 0644 systemd/perf-event-paranoid.conf $(DESTDIR)$(SYSTEMD_UNIT_DIR)/gpuprobed.service.d/perf-event-paranoid.conf; \
		echo "make install: kernel.perf_event_paranoid is above 2 here: the unit gets CAP_SYS_ADMIN (gpuprobed.service.d/perf-event-paranoid.conf)"; \
	fi
	@conf=$(DESTDIR)$(SYSCONFDIR)/gpuprobed/gpuprobed.conf; \
	if [ -e "$$conf" ]; then \
		install -D -m 0644 config/gpuprobed.conf "$$conf.new"; \
		echo "make install: kept $$conf; the shipped one is $$conf.new"; \
	else \
		install -D -m 0644 config/gpuprobed.conf "$$conf"; \
		echo "install -D -m 0644 config/gpuprobed.conf $$conf"; \
	fi
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi

# The configuration stays (it may hold the admin's edits), like the reports in /var/lib/gpuprobed.
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/gpuprobed $(DESTDIR)$(PREFIX)/share/man/man8/gpuprobed.8 \
	      $(DESTDIR)$(SYSTEMD_UNIT_DIR)/gpuprobed.service \
	      $(DESTDIR)$(SYSTEMD_UNIT_DIR)/gpuprobed.service.d/perf-event-paranoid.conf
	@echo "make uninstall: left $(DESTDIR)$(SYSCONFDIR)/gpuprobed/ and /var/lib/gpuprobed/ in place"

clean:
	rm -rf $(BUILD)
