/* index.h: the in-memory query index (index.c) shared with query.c. */
#ifndef GRAPH_INDEX_H
#define GRAPH_INDEX_H

#include "internal.h"

enum { GI_PATH = 0, GI_SYMBOL, GI_IMPORT, GI_CALL, GI_CONTENT, GI_FIELDS };

/* Bytes of a file's content indexed for the content field. */
#define GI_CONTENT_MAX (512 * 1024)

typedef struct gi_posting {
    uint32_t doc;
    uint16_t tf[GI_FIELDS];
} gi_posting;

typedef struct gi_partners {
    uint32_t *ids;
    float *w; /* decayed Jaccard */
    uint32_t n;
    int loaded;
} gi_partners;

struct term_ent;

struct graph_index {
    char *repo, *db_path;
    sqlite3 *db;
    sqlite3_stmt *co_stmt;
    size_t n;
    char **paths; /* sorted */
    uint8_t *is_test, *lang;
    gsym *syms;
    uint32_t *sym_off;
    size_t n_syms;
    uint32_t *out_off, *out, *in_off, *in; /* imports, importers */
    struct term_ent *terms;
    size_t n_terms;
    uint32_t *post_off;
    gi_posting *post;
    uint32_t post_term_last;
    float *flen[GI_FIELDS];
    double avglen[GI_FIELDS];
    gi_partners *co;
    double *co_total;
    double *central;
    double *churn; /* log decayed commit weight, scaled to [0, 1] */
    uint8_t *aux;  /* under a documentation, example, benchmark or release directory */
    graph_resolver *res;
    int64_t loaded_ms;
    int64_t data_version; /* PRAGMA data_version when loaded */
    /* per-query scratch (the caller serializes queries on one index) */
    double *act, *lex, *tmp, *final, *mention, *cosc, *clex;
    int32_t *qterms;
    size_t n_qterms, cap_qterms;
};

int32_t gi_term_id(const graph_index *g, const char *s, size_t n);
int32_t gi_find_path(const graph_index *g, const char *path);
const gi_partners *gi_cochange(graph_index *g, uint32_t d);
/* PRAGMA data_version of the index's connection: changes when another
 * connection (a `clarity graph build`) committed to the cache. */
int64_t gi_data_version(graph_index *g);

#endif
