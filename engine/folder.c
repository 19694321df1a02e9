/* folder.c: snapshot folds off the hook's thread.
 *
 * A fold writes a row per item changed since the snapshot: milliseconds for
 * a large session, which a turn should not wait for.  A session that ended,
 * that leaves memory (storage.maxResidentSessions), or whose log passed 7/8
 * of storage.snapshotEvery records, is queued
 * instead; one worker thread per engine, started on first use, folds the
 * queued sessions one at a time under each session's mutex, with the code a
 * fold on the hook's thread runs (persist_fold_at), between that session's
 * turns.  Its records are already committed, so a crash before the fold
 * loses nothing: a restart replays them.
 *
 * Only the stores the plugin owns (SQLite, Redis, memory) are folded here.
 * The worker calls no host service: a host's kv, log and clock may only be
 * usable on the threads it calls the plugin on.  A fold's time is taken
 * when it is queued, and a failure is kept for the next hook to log
 * (engine_acquire).
 *
 * Lock order as elsewhere: a session's mutex, then reg_mu; reg_mu is never
 * held while waiting for a session.  The queue holds a reference to each
 * session on it, so a queued session is neither dropped nor evicted.
 */
#include <stdio.h>
#include <string.h>

#include "engine.h"

static void *folder_main(void *arg)
{
    engine *e = arg;
    pthread_mutex_lock(&e->reg_mu);
    for (;;) {
        while (!e->fold_head && !e->fold_stop) pthread_cond_wait(&e->fold_cv, &e->reg_mu);
        session *s = e->fold_head;
        if (!s) break; /* stopped, and nothing left */
        e->fold_head = s->fold_next;
        if (!e->fold_head) e->fold_tail = NULL;
        s->fold_next = NULL;
        int64_t at = s->fold_at;
        e->fold_busy = 1;
        pthread_mutex_unlock(&e->reg_mu);

        pthread_mutex_lock(&s->mu);
        int rc = s->loaded ? persist_fold_at(e, s, at) : CLARITY_OK;
        if (rc != CLARITY_OK && rc != STORE_ECONFLICT) {
            /* kept resident: its next fold (eviction, shutdown) retries and
             * reports on a host thread */
            s->unload = 0;
            pthread_mutex_lock(&e->reg_mu);
            snprintf(e->fold_err, sizeof e->fold_err, "session %.100s: %.120s", s->id, store_errmsg(e->st));
            pthread_mutex_unlock(&e->reg_mu);
        }
        engine_release_folded(e, s);

        pthread_mutex_lock(&e->reg_mu);
        e->fold_busy = 0;
        if (!e->fold_head) pthread_cond_broadcast(&e->fold_idle);
    }
    pthread_mutex_unlock(&e->reg_mu);
    return NULL;
}

int engine_fold_later_locked(engine *e, session *s, int64_t now)
{
    if (!e->fold_bg) return 0;
    if (s->fold_queued) return 1;
    if (!e->folder_on && !e->fold_stop) e->folder_on = pthread_create(&e->folder, NULL, folder_main, e) == 0;
    if (!e->folder_on || e->fold_stop) return 0;
    s->fold_queued = 1;
    s->fold_at = now;
    s->refs++;
    if (e->fold_tail) e->fold_tail->fold_next = s;
    else e->fold_head = s;
    e->fold_tail = s;
    pthread_cond_signal(&e->fold_cv);
    return 1;
}

int engine_fold_later(engine *e, session *s)
{
    if (!e->fold_bg) return 0;
    int64_t now = engine_now_ms(e); /* on the hook's thread */
    pthread_mutex_lock(&e->reg_mu);
    int queued = engine_fold_later_locked(e, s, now);
    pthread_mutex_unlock(&e->reg_mu);
    return queued;
}

void engine_fold_drain(engine *e)
{
    pthread_mutex_lock(&e->reg_mu);
    while (e->folder_on && (e->fold_head || e->fold_busy)) pthread_cond_wait(&e->fold_idle, &e->reg_mu);
    pthread_mutex_unlock(&e->reg_mu);
}

void engine_fold_stop(engine *e)
{
    pthread_mutex_lock(&e->reg_mu);
    e->fold_stop = 1;
    int on = e->folder_on;
    pthread_cond_broadcast(&e->fold_cv);
    pthread_mutex_unlock(&e->reg_mu);
    if (on) pthread_join(e->folder, NULL);
}
