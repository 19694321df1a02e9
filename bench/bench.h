/* bench.h: shared helpers of the clarity benchmarks (bench/clarity_bench).
 *
 * Everything drives libclarity.so through the public ABI (dlopen), like a
 * gateway would.  Inputs come from a seeded xorshift generator, so every
 * run of a given mode sees the same items and the same text.
 */
#ifndef BENCH_BENCH_H
#define BENCH_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clarity.h"

/* ---- plugin ------------------------------------------------------------ */

typedef struct bplug {
    void *dl;
    clarity_plugin_init_fn init;
    clarity_plugin p;
    int loaded;
} bplug;

/* dlopen()s the plugin once per process; exits on failure. */
void bp_open_lib(bplug *b, const char *path);
/* init with a config; exits with a message on failure. */
void bp_init(bplug *b, const char *config_json);
void bp_unload(bplug *b);

/* Hook calls; each returns the plugin's return code and times nothing. */
int bp_before(bplug *b, const char *session, const char *prompt, size_t len);
int bp_end(bplug *b, const char *session, const char *reply, size_t len, const char *tool_name,
           const char *tool_args);
int bp_compaction(bplug *b, const char *session);
/* RPC; on success *out (if given) receives a malloc()ed copy of the answer. */
int bp_rpc(bplug *b, const char *method, const char *params, char **out);
/* importState of `n` items given as JSON objects joined by commas. */
void bp_import(bplug *b, const char *session, int64_t current_turn, const char *items_json);

/* ---- deterministic inputs --------------------------------------------- */

typedef struct brng {
    uint64_t s;
} brng;

void rng_seed(brng *r, uint64_t seed);
uint32_t rng_next(brng *r);

enum { ITEM_PROJECT = 0, ITEM_FILE = 1 };

/* Seeded item i: even i a CamelCase project ("ProjAbcdeCore"), odd i a doc
 * file ("docs/abcde.md").  The five letters are a bijective scramble of i,
 * so names never repeat and neighbours do not look alike. */
int item_kind(uint64_t i);
int item_text(char *out, size_t cap, uint64_t i);
/* The id clarity gives the item: "projabcdecore", "file:docs/abcde.md". */
int item_clarity_id(char *out, size_t cap, uint64_t i);

/* Writes about `len` bytes of text (NUL-terminated, returns the length):
 * filler words from a small vocabulary, and one token in `density` is the
 * name of a random item in [0, n_items). */
size_t gen_text(brng *r, char *buf, size_t len, uint64_t n_items, int density);

/* Builds the importState "items" array body for items [0, n); the caller
 * frees.  Counters are spread deterministically around realistic values. */
char *seed_items_json(uint64_t n, int64_t current_turn);

/* ---- measurement ------------------------------------------------------- */

uint64_t now_ns(void);

typedef struct bstats {
    double p50, p99, mean, min, max;
    size_t n;
} bstats;

/* Sorts v in place. */
bstats stats_of(double *v, size_t n);
void json_stats(FILE *f, const char *key, const bstats *s, int comma);

/* kB from /proc/self/status; -1 when unknown. */
long rss_kb(void);
long hwm_kb(void);
/* Heap bytes in use (mallinfo2().uordblks). */
size_t heap_in_use(void);

int tty_progress(void);

/* Escapes s into f as a JSON string. */
void json_str(FILE *f, const char *s);

/* mode tables are scaled down when smoke is set */
extern int g_smoke;
extern const char *g_plugin_path;
extern const char *g_out_dir;
extern const char *g_tmp_dir;

FILE *open_out(const char *name);
/* A fresh SQLite path under g_tmp_dir (removed with its -wal/-shm by rm_db). */
void tmp_db(char *out, size_t cap, const char *tag);
void rm_db(const char *path);

int mode_hooks(int argc, char **argv);
int mode_prune(int argc, char **argv);
int mode_persist(int argc, char **argv);
int mode_restore(int argc, char **argv);
int mode_memory(int argc, char **argv);
int mode_rss(int argc, char **argv);
int mode_gen_stream(int argc, char **argv);
int mode_stream(int argc, char **argv);
int mode_conformance(int argc, char **argv);
int mode_assemble(int argc, char **argv);
int mode_hookproc(int argc, char **argv);

#endif
