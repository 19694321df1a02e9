/* update.c: brings a repository's graph cache up to date: the build
 * (build.c), then the learned fusion (train.c) when it is due.
 *
 * The fusion is trained on a full build, when the stored model is missing
 * or of another format, or once GRAPH_RETRAIN_COMMITS new commits came in
 * since it was trained (counted in meta "fusion_pending").  Without
 * learning (opts no_learn) a model trained before is dropped: the default
 * weights rank.  A failed training keeps the build.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "index.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Whether the model must be (re)trained; *pending: the commits counted
 * since it was, this build's included. */
static int training_due(sqlite3 *db, const graph_build_stats *st, long long *pending)
{
    char *fu = graph_db_meta(db, "fusion"), *pend = graph_db_meta(db, "fusion_pending");
    *pending = (pend ? atoll(pend) : 0) + (long long)st->commits_read;
    /* a model of another format version (other features) is retrained */
    int due = st->full || !fu || strncmp(fu, GF_FORMAT " ", sizeof GF_FORMAT) != 0 ||
              *pending >= GRAPH_RETRAIN_COMMITS;
    free(fu);
    free(pend);
    return due;
}

static int update_fusion(const char *repo, const graph_build_opts *o, graph_build_stats *st,
                         char **err)
{
    char *path = o->db_path ? util_strdup(o->db_path) : graph_db_path(repo);
    sqlite3 *db = NULL;
    if (!path || graph_db_open(path, 0, &db, err) != 0) {
        free(path);
        return -1;
    }
    int rc = 0;
    char *head = graph_db_meta(db, "head");
    if (o->no_learn) {
        rc = sqlite3_exec(db, "DELETE FROM meta WHERE key IN ('fusion', 'fusion_pending')", NULL,
                          NULL, NULL) == SQLITE_OK ? 0 : -1;
    } else if (head && *head) { /* a history to learn from */
        long long pending;
        int due = training_due(db, st, &pending);
        if (due) {
            double t1 = now_ms();
            gi_fusion fus;
            char *ferr = NULL;
            if (graph_fusion_train(repo, path, db, &fus, &ferr) == 0) {
                st->trained = 1;
                st->fusion = fus.info;
            }
            free(ferr);
            st->fusion_ms = now_ms() - t1;
        }
        char num[32];
        snprintf(num, sizeof num, "%lld", due ? 0 : pending);
        rc = graph_db_set_meta(db, "fusion_pending", num);
    }
    if (rc != 0) *err = util_strdup(sqlite3_errmsg(db));
    free(head);
    free(path);
    sqlite3_close(db);
    return rc;
}

/* meta build_id: removed when a build starts (and when it fails), a new
 * random one when it completes, so that a cache is stamped
 * (gi_build_stamp) only between builds and each completed build has its
 * own stamp.  0, or -1 with *err when an existing cache could not be
 * changed. */
static int set_build_id(const char *path, int fresh, char **err)
{
    sqlite3 *db = NULL;
    char *oerr = NULL;
    if (access(path, F_OK) != 0) return 0; /* no cache yet: nothing to unstamp */
    if (graph_db_open(path, 0, &db, &oerr) != 0) {
        if (err && !*err) *err = oerr;
        else free(oerr);
        return -1;
    }
    int rc;
    if (!fresh) {
        rc = sqlite3_exec(db, "DELETE FROM meta WHERE key = 'build_id'", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
    } else {
        uint64_t r;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            r = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 40);
        }
        char id[17];
        snprintf(id, sizeof id, "%016llx", (unsigned long long)r);
        rc = graph_db_set_meta(db, "build_id", id);
    }
    if (rc != 0 && err && !*err)
        *err = util_format("%s: cannot %s the build stamp: %s", path, fresh ? "set" : "remove", sqlite3_errmsg(db));
    sqlite3_close(db);
    return rc;
}

int graph_build(const char *repo, const graph_build_opts *o, graph_build_stats *st, char **err)
{
    return graph_build_index(repo, o, st, err, NULL);
}

int graph_build_index(const char *repo, const graph_build_opts *o, graph_build_stats *st, char **err,
                      graph_index **out)
{
    if (out) *out = NULL;
    double t0 = now_ms();
    char *path = o->db_path ? util_strdup(o->db_path) : graph_db_path(repo);
    if (!path) return -1;
    /* a cache that cannot be unstamped is not changed: its snapshot would
     * be taken for it */
    if (set_build_id(path, 0, err) != 0) {
        free(path);
        return -1;
    }
    int rc = graph_build_cache(repo, o, st, err);
    if (rc == 0) rc = update_fusion(repo, o, st, err);
    st->ms = now_ms() - t0;
    if (rc == 0 && set_build_id(path, 1, NULL) == 0) {
        /* stamped, then loaded once so that the snapshot is there for the
         * next process (a Claude Code prompt hook loads it in milliseconds);
         * the index goes to a caller that would load it next */
        graph_index *g = NULL;
        char *lerr = NULL;
        if (graph_index_open(repo, o->db_path, &g, &lerr) == 0 && out) *out = g;
        else graph_index_free(g);
        free(lerr);
    } else if (rc != 0) {
        set_build_id(path, 0, NULL); /* left unstamped (a concurrent build may have stamped it) */
    }
    free(path);
    if (getenv("CLARITY_GRAPH_TIMING")) {
        struct rusage self, kids;
        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &kids);
        fprintf(stderr, "graph build: fusion %.1f ms; peak RSS %ld MB (git %ld MB)\n",
                st->fusion_ms, self.ru_maxrss / 1024, kids.ru_maxrss / 1024);
    }
    return rc;
}
