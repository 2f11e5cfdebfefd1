# tests/unit — cmocka unit tests of the userspace library (no root needed).
# Each tests/unit/test_*.c is one executable linked against every object but main.o.
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))

$(BUILD)/unit/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/unit $< $(LIB_OBJS) -o $@ $(LDLIBS) -lcmocka

# test_unwind_table's fixture (tests/unit/uwfix/uwfix.h): a library and a program built
# -O2 -fomit-frame-pointer; libuwfix_dbg.so has .eh_frame for one object's code and only a
# compressed .debug_frame for the other's. libdw (elfutils) is that test's independent reference.
UWFIX        := $(BUILD)/unit/uwfix
UWFIX_SRC    := tests/unit/uwfix
UWFIX_CFLAGS := -O2 -g -fomit-frame-pointer -Wall -Werror -D_GNU_SOURCE
$(UWFIX)/libuwfix.so: $(UWFIX_SRC)/uwfix_lib.c $(UWFIX_SRC)/uwfix.h
	@mkdir -p $(@D)
	$(CC) $(UWFIX_CFLAGS) -fPIC -shared $< -o $@

$(UWFIX)/uw_deep: $(UWFIX_SRC)/uwfix_main.c $(UWFIX_SRC)/uwfix.h $(UWFIX)/libuwfix.so
	$(CC) $(UWFIX_CFLAGS) $< -o $@ -L$(UWFIX) -luwfix -Wl,-rpath,'$$ORIGIN'

$(UWFIX)/libuwfix_dbg.so: $(UWFIX_SRC)/uwfix_lib.c $(UWFIX_SRC)/uwfix_dbg.c $(UWFIX_SRC)/uwfix.h
	@mkdir -p $(@D)
	$(CC) $(UWFIX_CFLAGS) -fPIC -c $(UWFIX_SRC)/uwfix_lib.c -o $(UWFIX)/uwfix_lib.o
	$(CC) $(UWFIX_CFLAGS) -fno-asynchronous-unwind-tables -fno-unwind-tables -fPIC \
		-c $(UWFIX_SRC)/uwfix_dbg.c -o $(UWFIX)/uwfix_dbg.o
	$(CC) -shared -Wl,--compress-debug-sections=zlib $(UWFIX)/uwfix_lib.o $(UWFIX)/uwfix_dbg.o \
		-o $@

# no call-frame information at all
$(UWFIX)/libuwfix_nocfi.so: $(UWFIX_SRC)/uwfix_dbg.c
	@mkdir -p $(@D)
	$(CC) -O2 -fno-asynchronous-unwind-tables -fno-unwind-tables -fPIC -shared $< -o $@

# uwtable_tool: one file's table built, its cost printed (scripts/bench_unwind.py).
$(BUILD)/unit/uwtable_tool: tests/unit/uwtable_tool.c $(LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< $(LIB_OBJS) -o $@ $(LDLIBS)

$(BUILD)/unit/test_unwind_table: LDLIBS += -ldw
UNIT_EXTRA_BUILD += $(UWFIX)/uw_deep $(UWFIX)/libuwfix_dbg.so $(UWFIX)/libuwfix_nocfi.so \
                    $(BUILD)/unit/uwtable_tool

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
