/* fuzz_snapshot: the reader of a saved index (graph/snapshot.c) on
 * arbitrary payloads under a valid header and checksum, so that what runs
 * is every check past the checksum (a file a bug or another version
 * wrote).  Invariants: no crash, no leak, no huge allocation; a payload
 * that loads has every offset and index in range (walked below). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/index.h"

static char *dir, *db;

/* The directory goes when the process ends (make check replays the
 * corpus in every run). */
static void cleanup(void)
{
    static const char *const files[] = {"graph.db", "graph.db-index", "graph.db-wal", "graph.db-shm", ".gitignore"};
    for (size_t i = 0; dir && i < sizeof files / sizeof *files; i++) {
        char *p = util_format("%s/%s", dir, files[i]);
        if (p) remove(p);
        free(p);
    }
    if (dir) remove(dir);
    free(dir);
    free(db);
}

/* A directory with an empty graph cache, made once: the reader needs
 * the connection its index keeps. */
static int setup(void)
{
    if (db) return 0;
    char tmpl[] = "/tmp/clarity-fuzz-snapshot-XXXXXX";
    if (!mkdtemp(tmpl)) return -1;
    dir = strdup(tmpl);
    db = dir ? util_format("%s/graph.db", dir) : NULL;
    atexit(cleanup);
    sqlite3 *h = NULL;
    char *err = NULL;
    int rc = db && graph_db_open(db, 1, &h, &err) == 0 ? 0 : -1;
    sqlite3_close(h);
    free(err);
    return rc;
}

static int write_snapshot(const uint8_t *data, size_t size)
{
    char *path = util_format("%s-index", db);
    int rc = path ? gi_snapshot_write(path, 1, data, size) : -1;
    free(path);
    return rc;
}

/* Every index a query follows is in range. */
static void walk(const graph_index *g)
{
    for (size_t d = 0; d < g->n; d++) {
        if (!g->paths[d] || g->sym_off[d] > g->sym_off[d + 1]) abort();
        for (uint32_t e = g->out_off[d]; e < g->out_off[d + 1]; e++)
            if (g->out[e] >= g->n) abort();
        for (uint32_t e = g->in_off[d]; e < g->in_off[d + 1]; e++)
            if (g->in[e] >= g->n) abort();
        for (uint32_t e = 0; e < g->co[d].n; e++)
            if (!g->co[d].loaded || g->co[d].ids[e] >= g->n || g->co[d].w[e] != g->co[d].w[e]) abort();
    }
    if (g->sym_off[g->n] != g->n_syms) abort();
    for (size_t t = 0; t < g->n_terms; t++)
        for (uint32_t k = g->post_off[t]; k < g->post_off[t + 1]; k++)
            if (g->post[k].doc >= g->n) abort();
    for (size_t k = 0; k < g->n_syms; k++)
        if (!g->syms[k].name || g->sym_term[k] < -1 || g->sym_term[k] >= (int32_t)g->n_terms) abort();
    for (size_t k = 0; k < g->n_defs; k++)
        if (!g->defs[k].name || g->defs[k].file >= g->n) abort();
    const char **s = malloc((g->n_terms ? g->n_terms : 1) * sizeof *s);
    if (s && gi_terms_by_id(g, s) != 0) abort();
    /* lookups end, whatever the table holds */
    for (size_t t = 0; s && t < g->n_terms && t < 16; t++) {
        int32_t id = gi_term_id(g, s[t], strlen(s[t]));
        if (id < -1 || id >= (int32_t)g->n_terms) abort();
    }
    if (gi_term_id(g, "no such term here", 17) >= (int32_t)g->n_terms) abort();
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (setup() != 0 || write_snapshot(data, size) != 0) return 0;
    char *err = NULL;
    graph_index *g = gi_new(dir, db, &err);
    free(err);
    if (!g) return 0;
    if (gi_snapshot_load(g, 1) == 0) walk(g);
    graph_index_free(g);
    return 0;
}
