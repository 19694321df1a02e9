/* index.h: the in-memory query index (index.c) shared with query.c. */
#ifndef GRAPH_INDEX_H
#define GRAPH_INDEX_H

#include "internal.h"

enum { GI_PATH = 0, GI_SYMBOL, GI_IMPORT, GI_CALL, GI_CONTENT, GI_FIELDS };

/* Bytes of a file's content indexed for the content field. */
#define GI_CONTENT_MAX GRAPH_CONTENT_BYTES

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

/* A definition's name and its file, for exact lookups (sorted by name). */
typedef struct gi_def {
    const char *name; /* borrowed from syms */
    uint32_t file;
} gi_def;

/* Features of one (prompt, file) pair for the learned fusion (model.c):
 * bias, lexical, mention, path / symbol / content field scores, import
 * activation, co-change activation, centrality, churn, size, aux, package,
 * defines (the file defines a name the prompt writes as code). */
enum { GF_NFEAT = 14 };
/* The stored model's format: changes with the features (a model of another
 * format is not used, and the next build retrains). */
#define GF_FORMAT "v2"
/* Files re-ranked by the learned fusion: the best of the default fusion. */
#ifndef GF_POOL
#define GF_POOL 50
#endif

struct gi_fusion;
typedef struct gi_fusion {
    graph_fusion_info info;
    double beta[GF_NFEAT];
} gi_fusion;

/* A past commit the fusion trains on: its files and its own decayed weight,
 * taken back out of the history features (churn, co-change), which were
 * counted with it. */
typedef struct gi_excl {
    const uint32_t *files;
    size_t n;
    double w;
} gi_excl;

struct graph_index {
    char *repo, *db_path;
    sqlite3 *db;
    sqlite3_stmt *co_stmt;
    sqlite3_stmt *dv_stmt;      /* PRAGMA data_version, prepared on first use */
    sqlite3_stmt *partners[2];  /* graph_partner_stmts, prepared on first use */
    size_t n;
    char **paths; /* sorted */
    uint8_t *is_test, *lang;
    gsym *syms;
    uint32_t *sym_off;
    int32_t *sym_term; /* each symbol's term: its name's, else its lowercase compound's, else -1 */
    size_t n_syms;
    uint32_t *out_off, *out, *in_off, *in; /* imports, importers */
    /* the terms: their text by id, and open addressing over them (ids;
     * GI_TERM_EMPTY in a free slot; at most half the slots used) */
    char **term_s;
    uint32_t *term_slot;
    size_t n_terms, term_s_cap, term_cap;
    uint32_t *post_off;
    gi_posting *post;
    uint32_t post_term_last;
    float *flen[GI_FIELDS];
    double avglen[GI_FIELDS];
    gi_partners *co;
    int co_short; /* a file's partners could not all be read (out of memory): none saved */
    double *co_total;
    double *central;
    double *churn; /* log decayed commit weight, scaled to [0, 1] */
    uint8_t *aux;  /* under a documentation, example, benchmark or release directory */
    graph_resolver *res; /* made by the first query that names a path or module (query.c) */
    int64_t data_version; /* PRAGMA data_version when loaded */
    gi_def *defs;      /* every symbol by name */
    size_t n_defs;
    double churn_mx;   /* max log1p(co_total): churn's scale */
    double size_mx;    /* max log1p(content length) */
    char *fus_meta;    /* the stored model's text (meta "fusion"), or NULL */
    gi_fusion fus;     /* parsed from it on first use (model.c) */
    int fus_parsed;
    /* per-query scratch (the caller serializes queries on one index) */
    double *act, *lex, *tmp, *final, *mention, *cosc, *clex;
    double *fld[3];    /* BM25 of the path, symbol and content fields alone */
    double *defines;   /* names written as code that the file defines (1/files each) */
    double fld_mx[3];  /* their best non-test scores for the prompt */
    int32_t *qterms;   /* the prompt's distinct terms, sorted */
    double *qwt;       /* their weights */
    char *ptext;       /* the prompt as read (graph_prompt_clean) */
    size_t cap_ptext;
    size_t n_qterms, cap_qterms, cap_qwt;
    /* the snapshot it was loaded from, mapped (snapshot.c): its strings
     * (paths, symbol names, terms) and the arrays that point into it are
     * not freed */
    void *snap_map;
    size_t snap_len;
    int snap_sealed; /* it was sealed: the checks that read it whole were skipped */
};

int32_t gi_term_id(const graph_index *g, const char *s, size_t n);
#define GI_TERM_EMPTY UINT32_MAX
/* The n terms s[id] of an index without terms yet (s, malloc()ed, is
 * taken as g->term_s; the strings are borrowed: they must outlive g, in
 * its mapped snapshot), with their table slot[cap] when given (taken, or in
 * the mapped snapshot: made by a save of the same terms, every id below
 * n and at most half the slots used, which the caller checked), else one
 * made here; -1 out of memory (s and slot are let go of all the same). */
int gi_set_terms(graph_index *g, char **s, size_t n, uint32_t *slot, size_t cap);
/* out[id] = each term's text (borrowed); -1 when an id is out of range. */
int gi_terms_by_id(const graph_index *g, const char **out);
/* The per-file arrays (and the per-query scratch) for n files, zeroed. */
int gi_alloc_arrays(graph_index *g, size_t n);
/* A new index with its repository, cache path and connection, nothing
 * loaded; NULL with *err (or out of memory). */
graph_index *gi_new(const char *repo, const char *db_path, char **err);
/* What every load ends with: the query support (the model's text, the
 * co-change statement, the resolver) and the data version. */
int gi_finish(graph_index *g);

/* update.c: graph_build, and when out is given, the index it loaded to
 * save the snapshot (*out; NULL when it did not load) for a caller that
 * would load it next. */
int graph_build_index(const char *repo, const graph_build_opts *o, graph_build_stats *st, char **err,
                      graph_index **out);

/* snapshot.c: the index of the cache at db_path (NULL:
 * <repo>/.clarity/graph.db) as graph_index_load gives it, from the
 * cache's snapshot when one was saved for this build of it, else loaded
 * and then saved. */
int graph_index_open(const char *repo, const char *db_path, graph_index **out, char **err);
/* The stamp of the cache's last completed build (a hash of
 * its meta values), or 0 while none has completed (no build_id). */
uint64_t gi_build_stamp(sqlite3 *db);
/* Saves g as <db_path>-index for stamp (a temporary file renamed in
 * place), with every file's co-change partners, which it reads into g
 * first.  0, or -1 (nothing saved). */
int gi_snapshot_save(graph_index *g, uint64_t stamp);
/* Fills a new index (repo, db_path and db set, nothing else) from the
 * snapshot saved for stamp, checked whole unless its seal says it passed
 * since its last change (and sealed when it passes).  0, or -1 (no such
 * snapshot, another stamp, or a file that fails its checks): the caller
 * frees g. */
int gi_snapshot_load(graph_index *g, uint64_t stamp);
/* How old (ctime) a snapshot must be for a load that checked it whole to
 * seal it (2,000 ms; tests set 0). */
extern int64_t gi_seal_min_age_ms;
/* Writes payload[0, n) as the snapshot at path for stamp, under the
 * header gi_snapshot_save writes (for a fuzzer's arbitrary payloads).
 * 0, or -1. */
int gi_snapshot_write(const char *path, uint64_t stamp, const void *payload, size_t n);
/* The checksum a snapshot's header holds over its payload; the header
 * (its layout is snapshot.c's) takes GI_SNAPSHOT_HEADER bytes. */
uint64_t gi_snapshot_sum(const void *data, size_t n);
#define GI_SNAPSHOT_HEADER 40
int32_t gi_find_path(const graph_index *g, const char *path);
const gi_partners *gi_cochange(graph_index *g, uint32_t d);
/* PRAGMA data_version of the index's connection: changes when another
 * connection (a `clarity graph build`) committed to the cache. */
int64_t gi_data_version(graph_index *g);

/* query.c: every stage of the ranking for a prompt, up to the default
 * fused score in g->final; with feats also what only the learned fusion
 * uses (per-field scores; import and co-change activation whatever their
 * weights).  ex (may be NULL) takes a training commit back out. */
void gi_stages(graph_index *g, const graph_weights *w, const char *prompt, size_t len,
               const gi_excl *ex, int feats);
/* The best k files (non-test) of score[], ties by index; returns how many. */
size_t gi_top(const graph_index *g, const double *score, graph_hit *out, size_t k);
/* A package's own file (__init__.py, index.*, mod.rs). */
int gi_is_package(const char *path);
/* model.c: the features of file d after gi_stages(..., feats = 1). */
void gf_features(const graph_index *g, uint32_t d, const gi_excl *ex, double *x);
double gf_logit(const double *beta, const double *x);
/* Parses the cache's "fusion" meta value into f (zeroed when absent or malformed). */
void gf_parse(const char *s, gi_fusion *f);
/* Writes f in the format gf_parse reads into out[n]; -1 when it does not fit. */
int gf_format(const gi_fusion *f, char *out, size_t n);

#endif
