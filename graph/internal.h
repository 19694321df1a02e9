/* internal.h: helpers shared by the graph module's files. */
#ifndef GRAPH_INTERNAL_H
#define GRAPH_INTERNAL_H

#include <jansson.h>
#include <sqlite3.h>

#include "graph.h"

#define GRAPH_SCHEMA_VERSION "3" /* 3: every call site, not one per callee and file */
/* Co-change weights decay with this half-life (seconds): 180 days. */
#define GRAPH_HALF_LIFE_S (180.0 * 86400.0)
/* Commits touching more files than this say nothing about pairs. */
#define GRAPH_MAX_COMMIT_FILES 30
/* The learned fusion is retrained after this many new commits. */
#define GRAPH_RETRAIN_COMMITS 50

/* git.c: runs `git -C repo args...`; output appended to out.  Returns the
 * exit status, or -1 when git could not run. */
int graph_git(const char *repo, const char *const *args, buf *out);
/* The same, handing the output to cb as it comes; cb returning non-zero
 * stops reading (git is then ended by SIGPIPE). */
int graph_git_stream(const char *repo, const char *const *args,
                     int (*cb)(void *ud, const char *p, size_t n), void *ud);
/* First line of the output of a successful command (malloc'ed) or NULL. */
char *graph_git_line(const char *repo, const char *const *args);

/* db.c */
int graph_db_open(const char *path, int create, sqlite3 **out, char **err);
char *graph_db_meta(sqlite3 *db, const char *key);
/* The values of n meta keys (malloc()ed; NULL where absent) through one
 * statement, where a graph_db_meta call each prepared one: 0, or -1 (all
 * NULL) when the table cannot be read or memory runs out. */
int graph_db_metas(sqlite3 *db, const char *const *keys, size_t n, char **out);
int graph_db_set_meta(sqlite3 *db, const char *key, const char *value);

/* resolve.c: maps import specs to files. */
typedef struct graph_resolver graph_resolver;
graph_resolver *graph_resolver_new(char **paths, size_t n);
void graph_resolver_free(graph_resolver *r);
/* The file index an import of file `from` (its path and language) names, or -1. */
int32_t graph_resolve(graph_resolver *r, const char *from, int lang, const char *spec);
/* A file whose path ends with the given '/'-separated suffix (whole
 * segments); -1 when none, -2 when ambiguous. */
int32_t graph_resolver_suffix(graph_resolver *r, const char *suffix);

/* cochange.c: reads commits from git and accumulates pair weights into the db.
 * graph_history_start decides what to read (the commits since the last
 * build, all of them when full or when history was rewritten) and starts
 * `git log` on a thread that adds up the commits of the files in paths
 * (kept until graph_history_free) as they stream in; graph_cochange_update
 * waits for it and writes the pairs.  NULL only when out of memory. */
typedef struct graph_history graph_history;
graph_history *graph_history_start(const char *repo, sqlite3 *db, char **paths, size_t n,
                                   int max_commits, int full);
int graph_cochange_update(graph_history *h, sqlite3 *db, size_t *commits, size_t *pairs,
                          char **err);
void graph_history_free(graph_history *h);
/* HEAD when the history was started (NULL: no commits). */
const char *graph_history_head(const graph_history *h);

/* A commit's noise factor from its subject (0.25 for formatting, merge,
 * release and version-bump commits, else 1) and its decayed weight. */
double graph_commit_noise(const char *subject, size_t len);
double graph_commit_weight(double commit_time, double noise);

/* batch.c: the files a build parses, in batches of at most
 * GRAPH_PARSE_BATCH, on up to one thread per CPU. */
#define GRAPH_PARSE_BATCH 512
/* The content field counts the words of a file's first 512 KB. */
#define GRAPH_CONTENT_BYTES (512 * 1024)
typedef struct parse_job {
    size_t idx;     /* in the file list */
    int64_t old_id; /* cache row to replace, 0 = new file */
    char *src;      /* NULL when unreadable: recorded without symbols */
    size_t len;
    char *head;     /* a file too large to parse: its first GRAPH_CONTENT_BYTES, for its words */
    size_t head_len;
    gfile f;
    buf words;      /* the content field: see db.c, table words */
    uint32_t n_words;
    int rc;
} parse_job;
/* Parses each job's src into its f (symbols, imports, calls) and counts
 * the words of src (or head) into words/n_words.  Returns 0, or -1 when a
 * parse ran out of memory or no parser could be made. */
int graph_parse_batch(int parser, parse_job *jobs, size_t n);

/* prompt.c: copies the prompt s[0..len) into out (len bytes) with the
 * HTML comments and environment-dump lines ("numpy: 1.21.0",
 * "pandas==1.3") blanked; returns len. */
size_t graph_prompt_clean(const char *s, size_t len, char *out);

/* build.c: the cache's files, symbols, imports, calls, words and
 * co-change, without the learned fusion (graph_build in update.c is the
 * build and the fusion's training when due). */
int graph_build_cache(const char *repo, const graph_build_opts *o, graph_build_stats *st,
                      char **err);

/* train.c: trains the learned fusion on the repository's recent commits
 * with the graph in db_path (committed) and stores it in db's meta
 * ("fusion"); out says what came of it. */
struct gi_fusion;
int graph_fusion_train(const char *repo, const char *db_path, sqlite3 *db,
                       struct gi_fusion *out, char **err);
/* L2-regularized logistic regression (bias = column 0, not shrunk) by
 * Newton's method; beta gets GF_NFEAT weights.  -1 when it fails. */
int gf_fit(const double *X, const uint8_t *y, size_t rows, double lambda, double *beta);

static inline uint64_t graph_fnv64(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

/* ---- intel.c ---- */
/* clarity.zoom / clarity.impact / clarity.cochange with parsed params. */
int graph_intel_call(const char *method, json_t *params, buf *out, char **msg);
int graph_cochange_partners(sqlite3 *db, const char *rel, size_t k, graph_partner *out, size_t *n_out);
/* The partners query as two statements on db, for a caller that keeps them
 * (the loaded index: graph_engine_cochange), and its run on them (reset
 * after).  -1 when they cannot be prepared. */
int graph_partner_stmts(sqlite3 *db, sqlite3_stmt *st[2]);
int graph_partners_run(sqlite3_stmt *const st[2], const char *rel, size_t k, graph_partner *out, size_t *n_out);

#endif
