# clarity: libclarity.so (the plugin), clarity (the reference gateway), tests.
#   make            build build/libclarity.so and build/clarity
#   make demo       install missing dependencies, build, replay examples/demo.jsonl
#   make check      unit + integration tests, then again under ASan+UBSan
#   make bench      micro-benchmarks (never part of check timing)
#   make install    PREFIX=/usr/local DESTDIR= : library, CLI, header, pkg-config

PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
SAN     ?=
CC      ?= cc
VERSION := 0.1.0

PKGS     := sqlite3 libpcre2-8 jansson
DEP_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
DEP_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CRIT_LIBS  := $(shell pkg-config --libs criterion 2>/dev/null || echo -lcriterion)

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
# CFLAGS/LDFLAGS are the user's (make CFLAGS=...); the project's own flags
# are added on top so a command-line override cannot drop them.
CFLAGS  ?= -O2 -g
XCFLAGS := -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden $(WARN) -Iinclude $(DEP_CFLAGS) \
           -DCLARITY_VERSION='"$(VERSION)"'
XLDFLAGS :=
LDLIBS  := $(DEP_LIBS) -lpthread -lm
ifeq ($(SAN),1)
XCFLAGS += -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
XLDFLAGS += -fsanitize=address,undefined
endif
# TSAN=1: ThreadSanitizer (make tsan; mk/reliability.mk)
ifeq ($(TSAN),1)
XCFLAGS += -O1 -fno-omit-frame-pointer -fsanitize=thread
XLDFLAGS += -fsanitize=thread
endif
ALL_CFLAGS = $(CFLAGS) $(XCFLAGS)
ALL_LDFLAGS = $(LDFLAGS) $(XLDFLAGS)

# Library modules, one folder each (the architecture).
LIB_DIRS := util config tracker scorer pruner extract store engine gateway plugin
CLI_DIRS := cli
# Further parts (adapters, graph, benchmarks) add themselves from mk/*.mk:
# LIB_DIRS/CLI_DIRS += their folders, EXTRA_CHECKS += targets that
# `make check` runs after the unit and integration suites.
EXTRA_CHECKS :=
include $(sort $(wildcard mk/*.mk))
# The .so carries SQLite, PCRE2, tree-sitter and hiredis inside: their
# Debian -dev packages' archives (built -fPIC), with no symbol of theirs in
# its dynamic table (--exclude-libs,ALL below).  Debian builds the shared
# ones BIND_NOW, so loading them bound some 1,900 symbols by name: half of
# the instructions of a hook process (Claude Code starts one per event).
# And a host that carries another SQLite or PCRE2 cannot have its copy
# answer the library's calls.  STATIC_DEPS=0 links them shared (a
# distribution's package); jansson's archive is not PIC and stays shared.
STATIC_DEPS ?= 1
STATIC_NAMES := sqlite3 pcre2-8 tree-sitter hiredis
ifeq ($(STATIC_DEPS),1)
SO_LDLIBS = $(foreach l,$(LDLIBS),$(if $(filter $(l),$(STATIC_NAMES:%=-l%)),-l:lib$(l:-l%=%).a,$(l)))
else
SO_LDLIBS = $(LDLIBS)
endif
LIB_SRC  := $(filter-out graph/none.c,$(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
# Without graph/ (no mk/graph.mk), its stub answers the graph API.
ifeq ($(filter graph,$(LIB_DIRS)),)
LIB_SRC  += graph/none.c
endif
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_SRC  := $(foreach d,$(CLI_DIRS),$(wildcard $(d)/*.c))
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_SUP := $(filter-out $(TEST_SRC),$(wildcard tests/*.c))
TEST_SUP_OBJ := $(TEST_SUP:%.c=$(BUILD)/obj/%.o)

SO  := $(BUILD)/libclarity.so
CLI := $(BUILD)/clarity
AR_INTERNAL := $(BUILD)/libclarity_internal.a

.PHONY: all demo check test bench install uninstall clean deps examples fuzz fuzz-long
.SECONDARY:
all: $(SO) $(CLI) $(BUILD)/minimal_host

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(SO): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libclarity.so.0 -Wl,--no-undefined -Wl,--exclude-libs,ALL $(ALL_LDFLAGS) \
	  -o $@ $^ $(SO_LDLIBS)

$(AR_INTERNAL): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The CLI finds the plugin next to itself ($ORIGIN) unless --plugin is given.
CLI_UTIL := $(addprefix $(BUILD)/obj/util/,buf.o fs.o errors.o statepath.o tokens.o)
$(CLI): $(CLI_OBJ) $(CLI_UTIL) | $(SO)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(shell pkg-config --libs jansson) -ldl -lpthread

$(BUILD)/minimal_host: examples/minimal_host.c include/clarity.h | $(SO)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -ldl

$(BUILD)/tests/%: tests/%.c $(AR_INTERNAL) $(TEST_SUP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DCLARITY_STATIC_DEPS=$(STATIC_DEPS) -Itests -o $@ $< $(TEST_SUP_OBJ) $(AR_INTERNAL) $(ALL_LDFLAGS) $(LDLIBS) $(CRIT_LIBS) -ldl

# Runs every Criterion binary; the integration tests find the .so and CLI
# through CLARITY_BUILD.
test: $(SO) $(CLI) $(BUILD)/minimal_host $(TEST_BIN)
	@set -e; total=0; for t in $(TEST_BIN); do \
	  echo "== $$t"; CLARITY_BUILD=$(BUILD) CLARITY_SHARED=$(abspath ../shared) $$t --jobs=2 || exit 1; done

check: deps-check
	$(MAKE) test
	$(MAKE) BUILD=build-asan SAN=1 test
	$(MAKE) -C fuzz replay
	$(if $(EXTRA_CHECKS),$(MAKE) $(EXTRA_CHECKS))
	@echo "make check: all suites passed (plain and ASan+UBSan)"

deps-check:
	@pkg-config --exists $(PKGS) criterion && test -f /usr/include/uthash.h || \
	  { echo "missing build dependencies: run scripts/deps.sh (as root) or make demo"; exit 1; }

deps:
	@sh scripts/deps.sh

demo: deps
	$(MAKE) all
	@rm -f $(BUILD)/demo.db $(BUILD)/demo.db-wal $(BUILD)/demo.db-shm
	$(CLI) replay examples/demo.jsonl --config examples/config.json --state $(BUILD)/demo.db
	@echo; echo "== scores after the replay (state kept in $(BUILD)/demo.db)"
	$(CLI) cmd --config examples/config.json --state $(BUILD)/demo.db --session demo "/clarity scores"

bench: all
	$(MAKE) -C bench BUILD=$(abspath $(BUILD))

fuzz:
	$(MAKE) -C fuzz

fuzz-long:
	$(MAKE) -C fuzz long

clarity.pc: clarity.pc.in
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

install: all clarity.pc
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(SO) $(DESTDIR)$(PREFIX)/lib/libclarity.so.$(VERSION)
	ln -sf libclarity.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libclarity.so.0
	ln -sf libclarity.so.0 $(DESTDIR)$(PREFIX)/lib/libclarity.so
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/clarity
	install -m 644 include/clarity.h $(DESTDIR)$(PREFIX)/include/clarity.h
	install -m 644 clarity.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/clarity.pc

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libclarity.so* $(DESTDIR)$(PREFIX)/bin/clarity \
	  $(DESTDIR)$(PREFIX)/include/clarity.h $(DESTDIR)$(PREFIX)/lib/pkgconfig/clarity.pc

clean:
	rm -rf build build-asan clarity.pc bench/out

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
