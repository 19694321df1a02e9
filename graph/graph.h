/* graph.h: the code graph of a repository and file predictions.
 *
 * A repository's graph (files, their symbols, import edges resolved to
 * files, call sites, git co-change pairs) is built by graph_build() and
 * cached in SQLite (<repo>/.clarity/graph.db).  A later build refreshes it
 * incrementally: only files whose content changed are re-parsed and only
 * commits not yet read are read.  graph_load() reads the cache into a query
 * index; graph_predict() ranks the repository's files for a prompt:
 *
 *   BM25F over path segments, symbol names and import names
 *   -> test-file to source-file proxy
 *   -> spreading activation over imports, importers and co-change partners
 *   -> a linear fusion of lexical, graph, co-change, mention and centrality
 *      features.
 *
 * Internal to libclarity.so.
 */
#ifndef GRAPH_GRAPH_H
#define GRAPH_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "../util/buf.h"

enum graph_lang {
    LANG_NONE = 0,
    LANG_PYTHON,
    LANG_JS,
    LANG_TS,
    LANG_TSX,
    LANG_GO,
    LANG_RUST,
    LANG_JAVA,
    LANG_C,
    LANG__COUNT
};

enum graph_sym_kind {
    SYM_FUNCTION = 0,
    SYM_CLASS,
    SYM_METHOD,
    SYM_VARIABLE,
    SYM_TYPE,
    SYM_MODULE,
    SYM_MACRO,
    SYM__COUNT
};

enum graph_parser { GRAPH_PARSER_AUTO = 0, GRAPH_PARSER_REGEX = 1 };

typedef struct gsym {
    char *name;
    uint8_t kind;
    uint8_t exported;
    uint32_t line, end_line; /* 1-based */
} gsym;

typedef struct gimport {
    char *spec;     /* as written: "a.b.c", "./x", "crate::a::b", "x/y.h" */
    int32_t target; /* file index, or -1 when it leaves the repository */
} gimport;

typedef struct gcall {
    char *name;
    uint32_t line;
} gcall;

typedef struct gfile {
    char *path; /* repository-relative, '/' separated */
    int lang;
    int is_test;
    int64_t size, mtime_ns;
    uint64_t hash; /* FNV-1a 64 of the content */
    int parsed_with; /* 1 tree-sitter, 2 regex */
    gsym *syms;
    size_t n_syms, cap_syms;
    gimport *imports;
    size_t n_imports, cap_imports;
    gcall *calls;
    size_t n_calls, cap_calls;
    int changed; /* re-parsed in this build: rewrite its rows */
    int64_t db_id;
} gfile;

/* ---- lang.c: languages, test files ---- */
int graph_lang_of_path(const char *path);
int graph_is_test_path(const char *path);

/* ---- parse.c: one file's symbols, imports and calls ---- */
typedef struct graph_parser_ctx graph_parser_ctx;
graph_parser_ctx *graph_parser_new(int parser);
void graph_parser_free(graph_parser_ctx *p);
/* Frees the compiled tree-sitter queries shared by the parser contexts
 * when none is alive (the plugin's unload). */
void graph_parse_release(void);
/* Fills f->syms/imports/calls from the content (f->lang set).  Returns 0,
 * or -1 on allocation failure. */
int graph_parse_file(graph_parser_ctx *p, gfile *f, const char *src, size_t len);
void graph_file_clear(gfile *f);
/* Which parser produced the languages: 1 when tree-sitter has a grammar. */
int graph_has_grammar(int lang);

/* ---- tokenize.c ---- */
typedef int (*graph_token_cb)(void *ud, const char *tok, size_t len);
/* Splits text into normalized tokens: words split at camelCase, snake_case,
 * digits and punctuation, lowercased, light plural stemming, synonyms mapped
 * to one form, stopwords dropped; a compound word also yields its joined
 * form ("getUserName" -> get, user, name, getusername). */
void graph_tokenize(const char *text, size_t len, int keep_stopwords, graph_token_cb cb, void *ud);

/* ---- build.c: the SQLite cache ---- */
/* The newest commits a build reads by default.  Older ones weigh almost
 * nothing after the time decay: on the SWE-bench dev set the rankings with
 * 10,000 and with all commits are identical, and sympy's build reads 10k
 * of its 62k commits (bench/graph/README.md, fifth round). */
#define GRAPH_DEFAULT_MAX_COMMITS 10000

typedef struct graph_build_opts {
    int parser;           /* enum graph_parser */
    int max_commits;      /* history read: 0 = GRAPH_DEFAULT_MAX_COMMITS, < 0 = all of it */
    int progress;         /* draw a progress bar on stderr when it is a terminal */
    const char *db_path;  /* NULL: <repo>/.clarity/graph.db */
    int no_learn;         /* 1: do not (re)train the learned fusion */
} graph_build_opts;

/* What training the learned fusion came to (graph/train.c). */
typedef struct graph_fusion_info {
    int enabled;          /* trained, and better than the defaults on held-out commits */
    int commits, valid;   /* usable commits; of which the newest, held out to compare */
    double mrr_default, mrr_learned; /* on those held out */
    double t;             /* paired t statistic of the gain there */
    double lambda;        /* the L2 penalty kept */
} graph_fusion_info;

typedef struct graph_build_stats {
    size_t files, parsed, removed, symbols, imports, resolved, calls;
    size_t commits_read, pairs;
    int full;   /* 1 when built from scratch */
    double ms;
    /* the learned fusion, when this build (re)trained it */
    int trained;               /* 1: trained now */
    graph_fusion_info fusion;  /* what came of it */
    double fusion_ms;
} graph_build_stats;

int graph_build(const char *repo, const graph_build_opts *o, graph_build_stats *st, char **err);
/* Default cache path of a repository (malloc'ed). */
char *graph_db_path(const char *repo);
/* 1 when the cache is older than the repository (HEAD moved, files changed
 * since the build), 0 when fresh, -1 when there is no cache. */
int graph_is_stale(const char *repo, const char *db_path);

/* ---- index.c / query.c ---- */
typedef struct graph_index graph_index;

enum { GRAPH_FIELDS = 5 }; /* path, symbol, import, call, content */

typedef struct graph_weights {
    double lexical, graph, cochange, mention, centrality;
    double seed_count;  /* seeds of the propagation */
    double hop_decay;   /* activation kept per hop */
    int hops;
    int use_calls;      /* BM25F over call names as a fourth field */
    double field_w[GRAPH_FIELDS], field_b[GRAPH_FIELDS]; /* BM25F field weights and b */
    double content_bm25; /* a separate BM25 (b 0.75) over the content field, fused */
    double test_proxy;   /* share of a test file's score lent to what it imports */
    double churn;        /* prior: the file's time-decayed commit weight */
    double mention_package; /* a named package's __init__.py / index.* / mod.rs */
    double aux;          /* factor for files under doc(s)/, example(s)/, bench(mark)(s)/, release/ */
    double code;         /* weight of a query term written as code (snake_case, camelCase, call, `x`) */
    double clean;        /* 1: blank HTML comments and environment dumps of the prompt */
    double learned;      /* 1: re-rank with the repository's learned fusion when it has one */
} graph_weights;

void graph_weights_default(graph_weights *w);

int graph_index_load(const char *repo, const char *db_path, graph_index **out, char **err);
void graph_index_free(graph_index *g);
size_t graph_index_files(const graph_index *g);
const char *graph_index_path(const graph_index *g, size_t file);

typedef struct graph_hit {
    uint32_t file;
    double score;
} graph_hit;

/* Ranks the non-test files for the prompt; writes up to k hits, best first,
 * deterministically (ties by path).  Returns the number written. */
size_t graph_predict(graph_index *g, const graph_weights *w, const char *prompt, size_t len,
                     graph_hit *out, size_t k);
/* Raw BM25F score of every file (index order) for the prompt (tests). */
void graph_lexical(graph_index *g, const graph_weights *w, const char *prompt, size_t len,
                   double *out);
/* Index of a path, or -1. */
int graph_index_find(const graph_index *g, const char *path);
/* Key symbols of a file (exported definitions first, by line), up to max. */
size_t graph_file_symbols(const graph_index *g, uint32_t file, const gsym **out, size_t max);

/* ---- cache.c and api.c: what the engine and the RPC layer call ---- */
/* Loaded indexes, one per repository, owned by one engine: its own, so two
 * plugin instances in a process never share or clear each other's.
 * graph_cache_new: NULL out of memory.  graph_cache_free: frees the indexes;
 * no call may be using the cache. */
typedef struct graph_cache graph_cache;
graph_cache *graph_cache_new(void);
void graph_cache_free(graph_cache *gc);
/* clarity.graphBuild, clarity.predict, clarity.graphStatus and the code
 * intelligence methods clarity.zoom, clarity.impact, clarity.cochange
 * (intel.c): params as
 * JSON text; the result object appended to out; on error a CLARITY_E*
 * code and *msg (malloc'ed, the caller frees).  CLARITY_ENOTFOUND: not a
 * graph method (or no graph support in this build: graph/none.c). */
int graph_rpc_call(graph_cache *gc, const char *method, const char *params_json, buf *out,
                   char **msg);

/* ---- cache.c: what the engine's hooks call (engine/predict.c) ---- */
typedef struct graph_pred {
    const char *path;    /* repository-relative; valid during the callback */
    double score;        /* normalized: the best file has 1 */
    const char *symbols; /* key symbols, "Name (line 3), other (line 9)", or "" */
} graph_pred;
typedef void (*graph_pred_cb)(void *ud, const graph_pred *p);
/* Ranks repo's files for the prompt on the cached index of a repository
 * that already has a graph (<repo>/.clarity/graph.db): never builds one.
 * The index is loaded once and reloaded when another connection (a
 * `clarity graph build`) changed the cache; with auto_refresh a stale graph
 * (HEAD moved, files changed) is also refreshed incrementally, checked at
 * most every few seconds.  Loads, reloads and refreshes run on the
 * cache's loader thread (cache.c): the call waits for them up to wait_ms
 * when no index is loaded yet (a loaded one answers meanwhile), and for
 * all of them when wait_ms < 0.  Calls cb for up to k files, best first.
 * Returns the number of files, or -1 when repo has no graph, or it cannot
 * load, or is still loading. */
int graph_engine_predict(graph_cache *gc, const char *repo, int auto_refresh, int wait_ms, const char *prompt,
                         size_t len, size_t k, graph_pred_cb cb, void *ud);
/* Whether repo has a graph (<repo>/.clarity/graph.db).  The hooks ask
 * every turn, so an answer of no is kept for a second (a build through gc
 * forgets it at once): a workspace without a graph costs no system call
 * per turn. */
int graph_engine_has_graph(graph_cache *gc, const char *repo);

/* ---- intel.c: what the engine's block asks (co-change hints) ---- */
typedef struct graph_partner {
    char path[512];     /* repository-relative */
    int64_t commits;    /* commits that changed both files */
    int64_t of;         /* commits that changed the file asked about */
    double score;       /* its decayed share: how often, when the file changes, this one does */
} graph_partner;
/* The k files that change most with rel in repo's history, best first,
 * from repo's graph cache as it is (never built, refreshed or loaded
 * here): through the connection of the index gc has loaded for repo (the
 * predictions'), so that an edit opens no database, else through one
 * opened for the call (a process per hook).  0 and *n (0 when there is no
 * graph or no history), or -1. */
int graph_engine_cochange(graph_cache *gc, const char *repo, const char *rel, size_t k, graph_partner *out,
                          size_t *n);

#endif
