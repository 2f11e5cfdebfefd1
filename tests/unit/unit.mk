# tests/unit — cmocka unit tests of the userspace library (no root needed).
# Each tests/unit/test_*.c is one executable linked against every object but main.o.
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))

$(BUILD)/unit/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/unit $< $(LIB_OBJS) -o $@ $(LDLIBS) -lcmocka

# test_python runs interpreters with this preloaded: their thread-state key becomes >= 32.
$(BUILD)/unit/py_keys_preload.so: tests/unit/py_keys_preload.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -shared -fPIC $< -o $@ -lpthread
$(BUILD)/unit/test_python: $(BUILD)/unit/py_keys_preload.so

.PHONY: unit-build
unit-build: $(UNIT_BINS) $(UNIT_EXTRA_BUILD)

# UNIT_EXTRA: other areas' unit-test targets (the simulator's own tests).
unit: unit-build $(UNIT_EXTRA)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done
