# graph: the code graph and file predictions (graph/), with tree-sitter
# grammars fetched from npm (pinned) and compiled into BUILD/grammars by
# scripts/grammars.sh.  The grammar archive is linked into the library, its
# symbols kept out of the dynamic table as every archive's (the .so's rule:
# --exclude-libs,ALL), so the .so still exports only clarity_plugin_init.
LIB_DIRS += graph
GRAMMAR_DIR := $(BUILD)/grammars
GRAMMAR_LIB := $(GRAMMAR_DIR)/libgrammars.a
LDLIBS += $(GRAMMAR_LIB) -ltree-sitter

$(BUILD)/libclarity.so: | $(GRAMMAR_LIB)
$(BUILD)/libclarity_internal.a: | $(GRAMMAR_LIB)

$(GRAMMAR_LIB): scripts/grammars.sh graph/grammars.h
	CC="$(CC)" sh scripts/grammars.sh $(GRAMMAR_DIR)
	$(CC) -O2 -fPIC -fvisibility=hidden -I. -c $(GRAMMAR_DIR)/grammars.c -o $(GRAMMAR_DIR)/grammars.o
	rm -f $@ && ar rcs $@ $(GRAMMAR_DIR)/*.o

