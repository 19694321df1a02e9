/* cache.c: an engine's loaded code graphs and the thread that loads them.
 *
 * A cache belongs to its owner (one per engine, so two plugin instances in
 * a process never share or clear each other's indexes).  One index per
 * repository stays loaded (at most GRAPH_CACHE_MAX, least recently used
 * out).  Queries on one index are serialized by its entry's mutex;
 * different repositories run in parallel.
 *
 * Loading an index takes a while (about 0.1 ms a file: 0.2 s for sympy's
 * 1,600), and so do a refresh's build and its staleness check (a `git`
 * process).  The hooks therefore never do them: they hand them to a
 * loader thread, started on first use, and wait for it as long as the
 * host allows (prediction.loadWaitMs; -1: until it is done, so a process
 * per hook still predicts from its first prompt).  Meanwhile a loaded
 * index goes on answering; a first prompt whose wait runs out goes
 * without predictions.  RPC calls (gcache_acquire) still load on their own
 * thread: their caller asked and waits.
 */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cache.h"

#define GRAPH_CACHE_MAX 8
/* How often a loaded graph is checked for staleness (HEAD moved, the git
 * index changed), and how long a failed background load is not retried. */
#define GRAPH_RECHECK_MS 5000
/* A workspace found without a graph is not looked at again for this long
 * (graph_engine_has_graph): the hooks ask every turn. */
#define GRAPH_ABSENT_MAX 8
#define GRAPH_ABSENT_MS 1000

/* What the loader does for an entry. */
enum { JOB_NONE, JOB_LOAD, JOB_REFRESH /* staleness check, build when stale, load */ };

struct centry {
    char *repo; /* canonical */
    graph_index *g;
    pthread_mutex_t mu; /* held while a caller uses g; the loader takes it to swap g */
    int64_t checked_ms; /* mu: staleness last checked (or a check scheduled) */
    int stale;          /* mu: the last check found the cache older than the repository */
    /* gc->mu: */
    uint64_t used;
    int refs;          /* callers, and one for a queued or running job */
    int job;           /* queued for the loader (JOB_*) */
    int running;       /* the job the loader is running for this entry (JOB_*) */
    int64_t failed_ms; /* the last background load failed then (0: it did not) */
};

struct graph_cache {
    pthread_mutex_t mu;    /* guards slots, the gc->mu fields of entries, clock, absent, stop */
    pthread_cond_t work;   /* a job was queued, or stop */
    pthread_cond_t done;   /* a job ended */
    centry *slots[GRAPH_CACHE_MAX];
    uint64_t clock;
    /* workspaces (as given) that had no graph when last looked at, and when */
    struct {
        char *repo;
        int64_t ms;
    } absent[GRAPH_ABSENT_MAX];
    pthread_t loader;
    int loader_on, stop;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *gcache_canon(const char *repo)
{
    char *r = realpath(repo, NULL);
    return r ? r : util_strdup(repo);
}

/* Whether repo (as given) has a graph cache file: <repo>/.clarity/graph.db. */
static int has_db(const char *repo)
{
    char *dbp = graph_db_path(repo);
    struct stat sb;
    int have = dbp && stat(dbp, &sb) == 0 && S_ISREG(sb.st_mode);
    free(dbp);
    return have;
}

static void entry_free(centry *c)
{
    graph_index_free(c->g);
    pthread_mutex_destroy(&c->mu);
    free(c->repo);
    free(c);
}

graph_cache *graph_cache_new(void)
{
    graph_cache *gc = calloc(1, sizeof *gc);
    if (!gc) return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* waits are bounded on the hooks' clock */
    pthread_mutex_init(&gc->mu, NULL);
    pthread_cond_init(&gc->work, NULL);
    pthread_cond_init(&gc->done, &ca);
    pthread_condattr_destroy(&ca);
    return gc;
}

/* A job being run is finished first (a load is not interrupted); queued
 * ones are dropped. */
void graph_cache_free(graph_cache *gc)
{
    if (!gc) return;
    pthread_mutex_lock(&gc->mu);
    gc->stop = 1;
    pthread_cond_broadcast(&gc->work);
    pthread_mutex_unlock(&gc->mu);
    if (gc->loader_on) pthread_join(gc->loader, NULL);
    for (int i = 0; i < GRAPH_CACHE_MAX; i++)
        if (gc->slots[i]) entry_free(gc->slots[i]);
    for (int i = 0; i < GRAPH_ABSENT_MAX; i++) free(gc->absent[i].repo);
    pthread_cond_destroy(&gc->work);
    pthread_cond_destroy(&gc->done);
    pthread_mutex_destroy(&gc->mu);
    free(gc);
    graph_parse_release();
}

/* repo's entry (canonical), made when missing, with a reference; NULL when
 * out of memory or every slot is in use. */
static centry *entry_for(graph_cache *gc, const char *repo)
{
    centry **cache = gc->slots;
    pthread_mutex_lock(&gc->mu);
    centry *c = NULL;
    int free_slot = -1, lru = -1;
    for (int i = 0; i < GRAPH_CACHE_MAX; i++) {
        if (cache[i] && strcmp(cache[i]->repo, repo) == 0) c = cache[i];
        else if (!cache[i] && free_slot < 0) free_slot = i;
        else if (cache[i] && !cache[i]->refs && (lru < 0 || cache[i]->used < cache[lru]->used))
            lru = i;
    }
    if (!c) {
        int slot = free_slot >= 0 ? free_slot : lru;
        if (slot >= 0 && cache[slot]) {
            entry_free(cache[slot]);
            cache[slot] = NULL;
        }
        c = slot >= 0 ? calloc(1, sizeof *c) : NULL;
        if (c && !(c->repo = util_strdup(repo))) {
            free(c);
            c = NULL;
        }
        if (c) {
            pthread_mutex_init(&c->mu, NULL);
            cache[slot] = c;
        }
    }
    if (c) {
        c->refs++;
        c->used = ++gc->clock;
    }
    pthread_mutex_unlock(&gc->mu);
    return c;
}

/* A build through this cache made a graph: no workspace is known to lack one. */
static void forget_absent(graph_cache *gc)
{
    pthread_mutex_lock(&gc->mu);
    for (int i = 0; i < GRAPH_ABSENT_MAX; i++) {
        free(gc->absent[i].repo);
        gc->absent[i].repo = NULL;
    }
    pthread_mutex_unlock(&gc->mu);
}

int graph_engine_has_graph(graph_cache *gc, const char *repo)
{
    int64_t now = mono_ms();
    int slot = -1, oldest = 0; /* where an answer of no goes: its own, an empty or the oldest slot */
    pthread_mutex_lock(&gc->mu);
    for (int i = 0; i < GRAPH_ABSENT_MAX; i++) {
        if (gc->absent[i].repo && strcmp(gc->absent[i].repo, repo) == 0) {
            if (now - gc->absent[i].ms < GRAPH_ABSENT_MS) {
                pthread_mutex_unlock(&gc->mu);
                return 0;
            }
            slot = i;
            break;
        }
        if (!gc->absent[i].repo) {
            if (slot < 0) slot = i;
        } else if (gc->absent[i].ms < gc->absent[oldest].ms) {
            oldest = i;
        }
    }
    if (slot < 0) slot = oldest;
    pthread_mutex_unlock(&gc->mu);
    int have = has_db(repo);
    pthread_mutex_lock(&gc->mu);
    if (have) { /* a graph now: forget that it had none */
        for (int i = 0; i < GRAPH_ABSENT_MAX; i++)
            if (gc->absent[i].repo && strcmp(gc->absent[i].repo, repo) == 0) {
                free(gc->absent[i].repo);
                gc->absent[i].repo = NULL;
            }
    } else if (gc->absent[slot].repo && strcmp(gc->absent[slot].repo, repo) == 0) {
        gc->absent[slot].ms = now;
    } else {
        char *copy = util_strdup(repo); /* out of memory: only not remembered */
        if (copy) {
            free(gc->absent[slot].repo);
            gc->absent[slot].repo = copy;
            gc->absent[slot].ms = now;
        }
    }
    pthread_mutex_unlock(&gc->mu);
    return have;
}

/* Drops a reference taken by entry_for, the entry not locked. */
static void entry_unref(graph_cache *gc, centry *c)
{
    pthread_mutex_lock(&gc->mu);
    c->refs--;
    pthread_mutex_unlock(&gc->mu);
}

/* Unlocks the entry and drops the reference. */
static void entry_release(graph_cache *gc, centry *c)
{
    pthread_mutex_unlock(&c->mu);
    entry_unref(gc, c);
}

void gcache_release(graph_cache *gc, centry *c) { entry_release(gc, c); }
graph_index *gcache_index(const centry *c) { return c->g; }

/* ------------------------------------------------------------ the loader */

/* An incremental build of a stale repository: the index the build
 * loaded, or NULL (not stale, the build failed, or its load did). */
static graph_index *refresh_stale(graph_cache *gc, const char *repo)
{
    if (graph_is_stale(repo, NULL) <= 0) return NULL;
    graph_build_opts o = {GRAPH_PARSER_AUTO, 0, 0, NULL, 0};
    graph_build_stats st;
    graph_index *g = NULL;
    char *err = NULL;
    int rc = graph_build_index(repo, &o, &st, &err, &g);
    free(err); /* on failure the cache as it is answers */
    if (rc == 0) forget_absent(gc);
    return g;
}

/* Puts g (the newer index of c) in place of c's, c locked. */
static void swap_in(centry *c, graph_index *g)
{
    graph_index_free(c->g);
    c->g = g;
}

/* The job, without locks but to swap the new index in: 0, or -1 when the
 * index did not load (a loaded one stays). */
static int run_job(graph_cache *gc, centry *c, int job)
{
    int64_t started = mono_ms();
    graph_index *g = job == JOB_REFRESH ? refresh_stale(gc, c->repo) : NULL;
    int rc = 0;
    if (!g) { /* not rebuilt (or its load failed): load */
        char *err = NULL;
        rc = graph_index_open(c->repo, NULL, &g, &err);
        free(err);
    }
    pthread_mutex_lock(&c->mu);
    if (rc == 0) swap_in(c, g);
    if (!c->checked_ms) c->checked_ms = started;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* An entry with a queued job, or NULL (gc->mu held). */
static centry *next_job(graph_cache *gc)
{
    for (int i = 0; i < GRAPH_CACHE_MAX; i++)
        if (gc->slots[i] && gc->slots[i]->job != JOB_NONE) return gc->slots[i];
    return NULL;
}

static void *loader_main(void *arg)
{
    graph_cache *gc = arg;
    pthread_mutex_lock(&gc->mu);
    for (;;) {
        centry *c = NULL;
        while (!gc->stop && !(c = next_job(gc))) pthread_cond_wait(&gc->work, &gc->mu);
        if (gc->stop) break;
        int job = c->job;
        c->job = JOB_NONE;
        c->running = job;
        pthread_mutex_unlock(&gc->mu);
        int rc = run_job(gc, c, job);
        pthread_mutex_lock(&gc->mu);
        c->running = JOB_NONE;
        c->refs--; /* the job's */
        c->failed_ms = rc == 0 ? 0 : mono_ms();
        pthread_cond_broadcast(&gc->done);
    }
    pthread_mutex_unlock(&gc->mu);
    return NULL;
}

/* Queues job for c unless one as large is queued or running (a refresh
 * includes a load) or its last load failed less than GRAPH_RECHECK_MS
 * ago; starts the loader on first use.  0, or -1 when nothing will run
 * (the loader could not start, or the load failed lately). */
static int schedule(graph_cache *gc, centry *c, int job)
{
    int rc = 0;
    pthread_mutex_lock(&gc->mu);
    if (c->job >= job || c->running >= job) {
        /* under way */
    } else if (c->failed_ms && mono_ms() - c->failed_ms < GRAPH_RECHECK_MS) {
        rc = c->running || c->job ? 0 : -1;
    } else if (!gc->loader_on && pthread_create(&gc->loader, NULL, loader_main, gc) != 0) {
        rc = -1;
    } else {
        gc->loader_on = 1;
        if (c->job == JOB_NONE) c->refs++; /* the job's, dropped when it ends */
        c->job = job;
        pthread_cond_signal(&gc->work);
    }
    pthread_mutex_unlock(&gc->mu);
    return rc;
}

/* Waits until c has no job queued or running: up to wait_ms, or without
 * a bound when wait_ms < 0. */
static void wait_idle(graph_cache *gc, centry *c, int wait_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    if (wait_ms >= 0) {
        until.tv_sec += wait_ms / 1000;
        until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&gc->mu);
    while (c->job != JOB_NONE || c->running != JOB_NONE) {
        if (wait_ms < 0) pthread_cond_wait(&gc->done, &gc->mu);
        else if (pthread_cond_timedwait(&gc->done, &gc->mu, &until) != 0) break;
    }
    pthread_mutex_unlock(&gc->mu);
}

/* ------------------------------------------------------ the hooks' side */

/* The locked entry of a repository that already has a graph, with its
 * index loaded, or NULL.  What takes time is the loader's: a first load,
 * a reload when another connection changed the cache, and with
 * auto_refresh a staleness check (at most every GRAPH_RECHECK_MS) and the
 * refresh.  The caller waits for it up to wait_ms when no index is loaded
 * yet, and always when wait_ms < 0; otherwise the loaded index answers. */
static centry *acquire_for_prompt(graph_cache *gc, const char *repo_in, int auto_refresh, int wait_ms)
{
    char *repo = gcache_canon(repo_in);
    if (!repo) return NULL;
    centry *c = has_db(repo) ? entry_for(gc, repo) : NULL;
    free(repo);
    if (!c) return NULL;
    pthread_mutex_lock(&c->mu);
    int64_t now = mono_ms();
    int job = JOB_NONE;
    if (!c->g || gi_data_version(c->g) != c->g->data_version) job = JOB_LOAD;
    if (auto_refresh && (!c->checked_ms || now - c->checked_ms >= GRAPH_RECHECK_MS)) {
        job = JOB_REFRESH;
        c->checked_ms = now;
    }
    if (job == JOB_NONE) return c;
    int loaded = c->g != NULL;
    pthread_mutex_unlock(&c->mu);
    if (schedule(gc, c, job) == 0 && (wait_ms < 0 || (!loaded && wait_ms > 0))) wait_idle(gc, c, wait_ms);
    pthread_mutex_lock(&c->mu);
    if (!c->g) {
        entry_release(gc, c);
        return NULL;
    }
    return c;
}

int graph_engine_predict(graph_cache *gc, const char *repo, int auto_refresh, int wait_ms, const char *prompt,
                         size_t len, size_t k, graph_pred_cb cb, void *ud)
{
    if (!repo || !*repo || k == 0) return -1;
    centry *c = acquire_for_prompt(gc, repo, auto_refresh, wait_ms);
    if (!c) return -1;
    graph_hit stack_hits[64];
    graph_hit *hits = k <= 64 ? stack_hits : malloc(k * sizeof *hits);
    int rc = -1;
    if (hits) {
        graph_weights w;
        graph_weights_default(&w);
        size_t n = graph_predict(c->g, &w, prompt, len, hits, k);
        double top = n ? hits[0].score : 0;
        for (size_t i = 0; i < n && top > 0; i++) {
            char syms[320];
            size_t sl = 0;
            syms[0] = '\0';
            const gsym *sv[3];
            size_t ns = graph_file_symbols(c->g, hits[i].file, sv, 3);
            for (size_t j = 0; j < ns && sl < sizeof syms; j++) {
                int w2 = snprintf(syms + sl, sizeof syms - sl, "%s%.80s (line %u)", j ? ", " : "",
                                  sv[j]->name, sv[j]->line);
                if (w2 < 0 || (size_t)w2 >= sizeof syms - sl) {
                    syms[sl] = '\0'; /* drop a symbol that does not fit whole */
                    break;
                }
                sl += (size_t)w2;
            }
            graph_pred p = {c->g->paths[hits[i].file], hits[i].score / top, syms};
            cb(ud, &p);
        }
        rc = (int)n;
        if (hits != stack_hits) free(hits);
    }
    entry_release(gc, c);
    return rc;
}

/* The locked entry of repo's index (canonical) when it is loaded, else
 * NULL: a question that a few rows answer does not load a whole index. */
static centry *acquire_loaded(graph_cache *gc, const char *repo)
{
    centry *c = NULL;
    pthread_mutex_lock(&gc->mu);
    for (int i = 0; i < GRAPH_CACHE_MAX && !c; i++)
        if (gc->slots[i] && strcmp(gc->slots[i]->repo, repo) == 0) {
            c = gc->slots[i];
            c->refs++;
            c->used = ++gc->clock;
        }
    pthread_mutex_unlock(&gc->mu);
    if (c) {
        pthread_mutex_lock(&c->mu);
        if (!c->g) { /* not loaded yet, or dropped by a build */
            entry_release(gc, c);
            c = NULL;
        }
    }
    return c;
}

int graph_engine_cochange(graph_cache *gc, const char *repo, const char *rel, size_t k, graph_partner *out,
                          size_t *n)
{
    *n = 0;
    if (!repo || !*repo || !k) return 0;
    char *r = gcache_canon(repo);
    if (!r) return -1;
    centry *c = acquire_loaded(gc, r);
    int rc = 0; /* no graph (or none that opens): no partners */
    if (c) {
        graph_index *g = c->g;
        rc = g->partners[0] || graph_partner_stmts(g->db, g->partners) == 0
                 ? graph_partners_run(g->partners, rel, k, out, n)
                 : -1;
        entry_release(gc, c);
    } else if (has_db(r)) {
        /* no index loaded (a process per hook, predictions off): the cache
         * opened for this question alone */
        char *dbp = graph_db_path(r), *err = NULL;
        sqlite3 *db = NULL;
        if (dbp && graph_db_open(dbp, 0, &db, &err) == 0) rc = graph_cochange_partners(db, rel, k, out, n);
        sqlite3_close(db);
        free(err);
        free(dbp);
    }
    free(r);
    return rc;
}

/* ------------------------------------------------------- the RPC's side */

centry *gcache_acquire(graph_cache *gc, const char *repo_in, int build_if_missing, int refresh, char **err,
                       acq_info *ai)
{
    memset(ai, 0, sizeof *ai);
    char *repo = gcache_canon(repo_in);
    if (!repo) return NULL;
    centry *c = entry_for(gc, repo);
    if (!c) {
        free(repo);
        *err = util_strdup("out of memory");
        return NULL;
    }
    wait_idle(gc, c, -1); /* a load under way is not done twice */
    pthread_mutex_lock(&c->mu);
    int64_t now = mono_ms();
    if (!c->g || now - c->checked_ms >= GRAPH_RECHECK_MS) {
        int stale = graph_is_stale(repo, NULL);
        c->checked_ms = now;
        c->stale = stale > 0;
        if (stale < 0 && !build_if_missing) {
            graph_index_free(c->g);
            c->g = NULL;
        } else if (stale != 0 || !c->g) {
            int reload = !c->g;
            if (stale < 0 || (stale > 0 && refresh)) {
                graph_build_opts o = {GRAPH_PARSER_AUTO, 0, 0, NULL, 0};
                graph_index *g = NULL;
                if (graph_build_index(repo, &o, &ai->st, err, &g) == 0) {
                    ai->refreshed = 1;
                    c->stale = 0;
                    forget_absent(gc);
                    reload = !g; /* else the build's own load answers */
                    if (g) swap_in(c, g);
                }
            }
            if (!*err && reload) {
                swap_in(c, NULL);
                graph_index_open(repo, NULL, &c->g, err);
            }
        }
    }
    ai->stale = c->stale;
    free(repo);
    if (!c->g) {
        entry_release(gc, c);
        return NULL;
    }
    return c;
}

int gcache_build(graph_cache *gc, const char *repo, const graph_build_opts *o, graph_build_stats *st,
                 char **err)
{
    centry *c = entry_for(gc, repo);
    if (c) {
        wait_idle(gc, c, -1);
        pthread_mutex_lock(&c->mu);
    }
    graph_index *g = NULL;
    int rc = graph_build_index(repo, o, st, err, &g);
    if (rc == 0) forget_absent(gc);
    if (c) {
        swap_in(c, g); /* the build's load, or none: loaded on next use */
        entry_release(gc, c);
    } else {
        graph_index_free(g);
    }
    return rc;
}

void gcache_refresh_if_due(graph_cache *gc, const char *repo_in)
{
    char *repo = gcache_canon(repo_in);
    centry *c = repo && has_db(repo) ? entry_for(gc, repo) : NULL;
    if (c) {
        wait_idle(gc, c, -1);
        pthread_mutex_lock(&c->mu);
        int64_t now = mono_ms();
        if (now - c->checked_ms >= GRAPH_RECHECK_MS) {
            c->checked_ms = now;
            /* on failure the old graph answers; a loaded one is replaced by
             * the build's, none is kept loaded for a question the cache answers */
            graph_index *g = refresh_stale(gc, repo);
            if (g && c->g) swap_in(c, g);
            else graph_index_free(g);
        }
        entry_release(gc, c);
    }
    free(repo);
}
