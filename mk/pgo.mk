# pgo: libclarity.so and clarity built with GCC's profile feedback, in
# PGO_BUILD (default build-pgo).  A first build counts what runs
# (-fprofile-generate); a training run plays dense turns on the memory and
# SQLite stores (bench_turn) and replays examples/demo.jsonl as `make demo`
# does; the second
# build lays out and inlines by those counts (-fprofile-use).  Same
# sources, same answers (`make pgo-check` compares its replay with the
# default build's).  Not the default: it builds twice around a run, and
# the figures in the README are the default build's.
#   make pgo [PGO_BUILD=DIR]      then use DIR/libclarity.so, or
#                                 make install BUILD=DIR
#   make pgo-check                the PGO build answers as the default one
PGO_BUILD ?= build-pgo
PGO_DIR = $(abspath $(PGO_BUILD))
PGO_PROFILE = $(PGO_DIR)/profile
# the library's worker thread counts too: atomic updates
PGO_GEN := -fprofile-generate -fprofile-update=atomic -fprofile-dir=$(PGO_PROFILE)
# code the training never ran keeps its -O2 layout (partial training);
# objects without counts are not an error
PGO_USE := -fprofile-use -fprofile-partial-training -Wno-missing-profile -fprofile-dir=$(PGO_PROFILE)
# the demo as `make demo` replays it, into a fresh database DIR/NAME.db
PGO_DEMO = replay examples/demo.jsonl --config examples/config.json --state
BENCH_TURN = $(abspath $(BUILD))/bench_turn

.PHONY: pgo pgo-check
EXTRA_CHECKS += pgo-check
pgo: $(GRAMMAR_LIB)
	@$(CC) -dM -E -x c /dev/null | grep -q __clang__ && \
	  { echo "make pgo: needs GCC (-fprofile-partial-training; clang's profiles are another format); CC=$(CC) is clang"; exit 1; } || true
	rm -rf $(PGO_DIR)/obj $(PGO_PROFILE) $(PGO_DIR)/libclarity.so $(PGO_DIR)/clarity $(PGO_DIR)/train.db*
	@mkdir -p $(PGO_DIR)/grammars
	cp $(GRAMMAR_LIB) $(PGO_DIR)/grammars/libgrammars.a
	$(MAKE) --no-print-directory BUILD=$(PGO_BUILD) CFLAGS="$(CFLAGS) $(PGO_GEN)" \
	  LDFLAGS="$(LDFLAGS) -fprofile-generate" $(PGO_BUILD)/libclarity.so $(PGO_BUILD)/clarity
	$(MAKE) --no-print-directory -C bench BUILD=$(abspath $(BUILD)) $(BENCH_TURN)
	@echo "pgo: training (dense turns on memory and SQLite, the demo replay)"
	$(BENCH_TURN) --plugin $(PGO_DIR)/libclarity.so --items 1000 --turns 400 --dir $(PGO_DIR) >/dev/null
	$(BENCH_TURN) --plugin $(PGO_DIR)/libclarity.so --items 100 --turns 200 --dir $(PGO_DIR) >/dev/null
	$(PGO_DIR)/clarity $(PGO_DEMO) $(PGO_DIR)/train.db >/dev/null
	rm -rf $(PGO_DIR)/obj $(PGO_DIR)/libclarity.so $(PGO_DIR)/clarity $(PGO_DIR)/train.db*
	$(MAKE) --no-print-directory BUILD=$(PGO_BUILD) CFLAGS="$(CFLAGS) $(PGO_USE)" \
	  $(PGO_BUILD)/libclarity.so $(PGO_BUILD)/clarity
	@echo "pgo: $(PGO_BUILD)/libclarity.so"

# The same replay through both builds gives the same bytes.
pgo-check: pgo $(SO) $(CLI)
	rm -f $(PGO_DIR)/default.db* $(PGO_DIR)/pgo.db*
	$(CLI) $(PGO_DEMO) $(PGO_DIR)/default.db > $(PGO_DIR)/replay-default.txt
	$(PGO_DIR)/clarity $(PGO_DEMO) $(PGO_DIR)/pgo.db > $(PGO_DIR)/replay-pgo.txt
	cmp $(PGO_DIR)/replay-default.txt $(PGO_DIR)/replay-pgo.txt
	@echo "pgo-check: the PGO build's replay equals the default build's"
