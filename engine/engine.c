#include "engine.h"
#include "../util/errors.h"
#include "assemble.h"
#include "compact.h"
#include "hints.h"
#include "progress.h"
#include "../scorer/rank.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../pruner/pruner.h"
#include "../util/fs.h"
#include "../util/worker.h"

#undef uthash_nonfatal_oom
#define uthash_nonfatal_oom(obj) (oom = 1)

static void fold_job(void *ud, void *arg);

static int open_store(engine *e, char **err)
{
    int want = e->cfg.storage.backend;
    int host_kv = CLARITY_HAS_MEMBER(&e->host, clarity_host, kv_iter) && e->host.kv_get && e->host.kv_free &&
                  e->host.kv_put && e->host.kv_del && e->host.kv_iter;
    if (want == CFG_STORE_AUTO) want = host_kv ? CFG_STORE_HOST : CFG_STORE_SQLITE;
    switch (want) {
    case CFG_STORE_HOST: return store_open_host(&e->host, &e->st, err);
    case CFG_STORE_MEMORY: return store_open_memory(&e->st, err);
    case CFG_STORE_REDIS:
        return store_open_redis(e->cfg.storage.url, e->cfg.storage.key_prefix, e->cfg.storage.timeout_ms,
                                &e->st, err);
    default: {
        char *path = e->cfg.storage.path ? util_strdup(e->cfg.storage.path)
                                         : util_default_state_path(err);
        if (!path) return *err ? CLARITY_ECONFIG : CLARITY_ENOMEM;
        int flags = (e->cfg.storage.synchronous == CFG_SYNC_FULL ? STORE_SQLITE_SYNC_FULL : 0) |
                    (e->cfg.storage.exclusive ? STORE_SQLITE_EXCLUSIVE : 0);
        int rc = store_open_sqlite(path, flags, &e->st, err);
        free(path);
        return rc;
    }
    }
}

int engine_new(const clarity_host *host, const char *config_json, engine **out, char **err)
{
    *out = NULL;
    engine *e = calloc(1, sizeof *e);
    if (!e) return CLARITY_ENOMEM;
    /* Copy only what the host's table holds; the rest stays NULL. */
    size_t n = host->struct_size < sizeof e->host ? host->struct_size : sizeof e->host;
    memcpy(&e->host, host, n);
    e->host.struct_size = (uint32_t)sizeof e->host;
    int rc = config_parse(&e->cfg, config_json, err);
    if (rc != CLARITY_OK) {
        free(e);
        return rc;
    }
    rc = extract_new(&e->cfg, &e->ex, err);
    if (rc == CLARITY_OK && !(e->graphs = graph_cache_new())) rc = CLARITY_ENOMEM;
    if (rc == CLARITY_OK)
        rc = asm_keep_new((const char *const *)e->cfg.assemble.keep, e->cfg.assemble.n_keep,
                          &e->asm_keep, err);
    if (rc == CLARITY_OK) rc = open_store(e, err);
    if (rc != CLARITY_OK) {
        graph_cache_free(e->graphs);
        asm_keep_free(e->asm_keep);
        extract_free(e->ex);
        config_free(&e->cfg);
        free(e);
        return rc;
    }
    pthread_mutex_init(&e->reg_mu, NULL);
    /* the host's kv is only called on the host's threads (engine_fold_later) */
    if (strcmp(store_backend_name(e->st), "host") != 0) e->folds = worker_new(fold_job, e);
    scorer_tables_init(&e->tables, &e->cfg);
    *out = e;
    engine_log(e, CLARITY_LOG_INFO, "clarity %s: store %s", CLARITY_VERSION,
               store_backend_name(e->st));
    return CLARITY_OK;
}

static void session_free(session *s)
{
    predict_clear(s);
    asm_state_free(s->asm_);
    compact_reinject_clear(s);
    progress_free(s->progress);
    hints_clear(s);
    rankidx_free(&s->rank);
    tracker_free(&s->t);
    persist_session_free(s);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->fold_cv);
    free(s->id);
    free(s->ns);
    free(s->workspace);
    free(s);
}

void engine_free(engine *e)
{
    if (!e) return;
    /* after the folds queued; what they could not fold is folded below.
     * Unloading folds rather than leave records: a process per hook (Claude
     * Code) restores the session each time, and replaying a record cost
     * about a fifth of a fold of the same turn (measured): a log left for
     * the next process costs more than the fold it saves. */
    worker_free(e->folds);
    session *s, *tmp;
    HASH_ITER(hh, e->sessions, s, tmp)
    {
        if (s->loaded && persist_fold(e, s) != CLARITY_OK)
            engine_log(e, CLARITY_LOG_ERROR, "clarity: could not persist session %s: %s", s->id,
                       store_errmsg(e->st));
        HASH_DEL(e->sessions, s);
        session_free(s);
    }
    store_close(e->st);
    graph_cache_free(e->graphs);
    asm_keep_free(e->asm_keep);
    extract_free(e->ex);
    config_free(&e->cfg);
    pthread_mutex_destroy(&e->reg_mu);
    free(e);
}

#define SESSION_NS_PREFIX "clarity:s:" /* a session's namespace in the store */

static session *session_new(const engine *e, const char *id)
{
    session *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    size_t idn = strlen(id), pre = sizeof SESSION_NS_PREFIX - 1;
    s->id = strdup(id);
    s->ns = malloc(pre + idn + 1);
    if (!s->id || !s->ns) {
        free(s->id);
        free(s->ns);
        free(s);
        return NULL;
    }
    memcpy(s->ns, SESSION_NS_PREFIX, pre); /* "clarity:s:<id>" */
    memcpy(s->ns + pre, id, idn + 1);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->fold_cv, NULL);
    tracker_init(&s->t, e->cfg.limits.history_length);
    return s;
}

/* ---- folds on the worker thread ---------------------------------------- */

/* engine_fold_later with reg_mu held and the fold's time given; s need not
 * be locked when nobody holds it (refs == 0: an eviction). */
static int fold_later_locked(engine *e, session *s, int64_t now)
{
    if (!e->folds) return 0;
    if (s->fold_queued) return 1;
    s->fold_queued = 1;
    s->fold_at = now;
    s->refs++; /* the queue's: neither dropped nor evicted meanwhile */
    if (worker_push(e->folds, s) == 0) return 1;
    s->fold_queued = 0;
    s->refs--;
    return 0;
}

int engine_fold_later(engine *e, session *s)
{
    if (!e->folds) return 0;
    int64_t now = engine_now_ms(e); /* on the hook's thread */
    pthread_mutex_lock(&e->reg_mu);
    int queued = fold_later_locked(e, s, now);
    pthread_mutex_unlock(&e->reg_mu);
    return queued;
}

static void release(engine *e, session *s, int folded);

/* The worker's job: the fold, under the session's mutex, between its turns;
 * then the queue's reference goes (and the session with it when it was
 * leaving memory and nobody took it up again).  fold_at does not change
 * while the fold is queued. */
static void fold_job(void *ud, void *arg)
{
    engine *e = ud;
    session *s = arg;
    pthread_mutex_lock(&s->mu);
    int rc = s->loaded ? persist_fold_worker(e, s, s->fold_at) : CLARITY_OK;
    if (rc != CLARITY_OK && rc != STORE_ECONFLICT) {
        /* kept resident: its next fold (eviction, shutdown) retries */
        s->unload = 0;
        pthread_mutex_lock(&e->reg_mu);
        snprintf(e->fold_err, sizeof e->fold_err, "session %.100s: %.120s", s->id, store_errmsg(e->st));
        pthread_mutex_unlock(&e->reg_mu);
    }
    release(e, s, 1);
}

/* Takes s out of the table (reg_mu held); the caller frees it. */
static void unlist(engine *e, session *s)
{
    HASH_DEL(e->sessions, s);
    e->n_sessions--;
    if (e->last == s) e->last = NULL;
}

/* Drops idle resident sessions beyond the cap, least recently used first.
 * Called with reg_mu held; only sessions nobody holds (refs == 0) go, and
 * their state is folded first so nothing is lost: by the worker, which
 * drops them after (fold_job), or here for the host's kv. */
static void evict_idle(engine *e)
{
    size_t cap = (size_t)e->cfg.storage.max_resident_sessions;
    while (e->n_sessions > cap) {
        session *victim = NULL, *s, *tmp;
        HASH_ITER(hh, e->sessions, s, tmp)
        {
            if (s->refs == 0 && (!victim || s->last_used < victim->last_used)) victim = s;
        }
        if (!victim) return;
        /* the worker folds it and lets it go (it holds a reference meanwhile,
         * so the next victim is another) */
        if (victim->loaded && fold_later_locked(e, victim, engine_now_ms(e))) {
            victim->unload = 1;
            continue;
        }
        if (victim->loaded && persist_fold(e, victim) != CLARITY_OK) {
            engine_log(e, CLARITY_LOG_WARN, "clarity: keeping session %s resident: %s", victim->id,
                       store_errmsg(e->st));
            return;
        }
        unlist(e, victim);
        session_free(victim);
    }
}

/* Whether another process committed the session since we loaded it.  An
 * unreachable store is not staleness: the state in memory goes on, and the
 * commit will say what failed. */
static int stale(engine *e, session *s)
{
    uint64_t v;
    return store_version(e->st, s->ns, &v) == CLARITY_OK && v != s->version;
}

int engine_acquire(engine *e, const char *session_id, int create, session **out)
{
    *out = NULL;
    if (!session_id || !*session_id) return CLARITY_EINVAL;
    int oom = 0;
    size_t idn = strlen(session_id);
    pthread_mutex_lock(&e->reg_mu);
    /* the last hook's session, most often this one's too (an agent_end
     * follows its before_agent_start): one compare, no hash and find */
    session *s = e->last;
    if (!s || s->hh.keylen != idn || memcmp(s->id, session_id, idn) != 0) {
        /* the table's hash, eight bytes at a time like the tracker's
         * (uthash's default takes a byte at a time; ids are long) */
        unsigned hv = (unsigned)name_mix_bytes(0x3c6ef372fe94f82bull ^ idn, session_id, idn);
        s = NULL;
        HASH_FIND_BYHASHVALUE(hh, e->sessions, session_id, idn, hv, s);
        if (!s) {
            s = session_new(e, session_id);
            if (s) HASH_ADD_KEYPTR_BYHASHVALUE(hh, e->sessions, s->id, idn, hv, s);
            if (!s || oom) {
                pthread_mutex_unlock(&e->reg_mu);
                if (s) session_free(s);
                return CLARITY_ENOMEM;
            }
            e->n_sessions++;
        }
        e->last = s;
    }
    s->refs++;
    s->last_used = ++e->clock;
    char fold_err[sizeof e->fold_err]; /* the worker's, reported on this thread */
    fold_err[0] = '\0';
    if (e->fold_err[0]) {
        memcpy(fold_err, e->fold_err, sizeof fold_err);
        e->fold_err[0] = '\0';
    }
    pthread_mutex_unlock(&e->reg_mu);
    if (fold_err[0]) engine_log(e, CLARITY_LOG_ERROR, "clarity: folding the turn log failed: %s", fold_err);

    pthread_mutex_lock(&s->mu);
    s->unload = 0; /* in use again: it stays, even when a fold it awaits ends */
    int rc = CLARITY_OK;
    if (!s->loaded) {
        rc = persist_load(e, s);
        if (rc == CLARITY_OK) s->loaded = 1;
    } else if (s->versioned && stale(e, s)) {
        rc = persist_load(e, s); /* another process committed it: its state, not ours */
    }
    if (rc == CLARITY_OK && !create && !s->exists_in_store && s->t.count == 0 &&
        s->t.current_turn == 0 && !s->asm_)
        rc = CLARITY_ENOTFOUND;
    if (rc != CLARITY_OK) {
        engine_release(e, s);
        return rc;
    }
    *out = s;
    return CLARITY_OK;
}

/* folded: the release that ends a queued fold (fold_job), which evicts
 * nothing (an eviction may log through the host). */
static void release(engine *e, session *s, int folded)
{
    /* The session's state is read while its mutex is still held (other
     * threads write it under that mutex); taking reg_mu meanwhile keeps the
     * lock order, as reg_mu is never held while waiting for a session. */
    pthread_mutex_lock(&e->reg_mu);
    if (folded) s->fold_queued = 0;
    if (s->fold_wanted) { /* persist.c: the log is long; the worker folds it */
        s->fold_wanted = 0;
        s->fold_leave = 1;
        fold_later_locked(e, s, engine_now_ms(e));
    }
    s->refs--;
    s->last_used = ++e->clock;
    /* A lookup that found nothing leaves no trace (a workspace set by
     * before_agent_start is kept for the agent_end that follows). */
    int empty = !s->exists_in_store && s->t.count == 0 && s->t.current_turn == 0 && !s->t.dirty &&
                !s->t.meta_dirty && !s->asm_;
    int clean = !s->t.dirty && !s->t.meta_dirty && !s->t.turn_dirty && s->t.n_deleted == 0;
    int drop = s->refs == 0 && (empty || (s->unload && clean));
    if (drop) unlist(e, s);
    pthread_mutex_unlock(&s->mu);
    if (drop) session_free(s);
    else if (!folded) evict_idle(e);
    pthread_mutex_unlock(&e->reg_mu);
}

void engine_release(engine *e, session *s)
{
    release(e, s, 0);
}

void engine_enforce_cap(engine *e, session *s)
{
    size_t cap = (size_t)e->cfg.limits.max_tracked_items;
    if (s->t.count <= cap) return;
    size_t target = cap - cap / 10;
    rank_ent *v = malloc(s->t.count * sizeof *v);
    item **its = malloc(s->t.count * sizeof *its);
    if (!v || !its) { /* retried on the next mention */
        free(v);
        free(its);
        return;
    }
    size_t n = 0;
    for (item *it = s->t.items; it; it = it->hh.next) {
        if (it->anchored) continue;
        score_breakdown b;
        engine_score(e, s, it, s->t.current_turn, &b);
        its[n] = it;
        rank_set(&v[n], it->id, b.score, n);
        n++;
    }
    rank_sort(v, n);
    size_t evicted = 0; /* the lowest ranked go first */
    for (size_t i = n; i-- > 0 && s->t.count > target; evicted++) tracker_remove(&s->t, its[v[i].idx]);
    free(v);
    free(its);
    engine_log(e, CLARITY_LOG_DEBUG, "clarity: session %s evicted %zu items (cap %zu)", s->id,
               evicted, cap);
}
