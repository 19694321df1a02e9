/* store.c: the public store API: argument checks, locking, transactions,
 * errors; the backends (store_sqlite.c, store_host.c, store_memory.c) do
 * the storage through a store_vt.
 *
 * Locking: every call takes the store's mutex.  store_begin takes it and
 * keeps it until store_commit/store_rollback, so one transaction at a time
 * runs and other threads wait for it.  The mutex is recursive so that the
 * thread that owns a transaction can call get/put/del/del_ns/iter inside it
 * (and an iteration callback can call back into the store).  While the
 * mutex is held, in_txn can only be set by the holding thread, so a thread
 * that finds in_txn set after locking owns the transaction.
 *
 * Errors: the message of the last failure is kept both in the store and in
 * a thread-local copy, so that store_errmsg() called right after a failing
 * call returns that call's message even when other threads use the store.
 */
#include "store_impl.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Stores are told apart by a unique id rather than by address, so that a
 * new store allocated where a closed one was never shows its message. */
static atomic_ulong next_id = 1;

#define STORE_YIELD_SPINS 50 /* store_yield waits at most 50 x 20 us */
#define STORE_YIELD_AFTER_NS 3000000LL /* a wait store_yield ends: 3 ms */

static _Thread_local struct {
    unsigned long id; /* store the message belongs to; 0: none */
    char msg[STORE_ERR_MAX];
} tl_err;

int store_create(const store_vt *vt, void *impl, store **out)
{
    *out = NULL;
    store *s = calloc(1, sizeof *s);
    if (!s) return CLARITY_ENOMEM;
    pthread_mutexattr_t a;
    int ok = pthread_mutexattr_init(&a) == 0;
    if (ok) {
        ok = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE) == 0 &&
             pthread_mutex_init(&s->mu, &a) == 0;
        pthread_mutexattr_destroy(&a);
    }
    if (!ok) {
        free(s);
        return CLARITY_ESTORE;
    }
    atomic_init(&s->waiting, 0);
    atomic_init(&s->waiting_since, 0);
    s->vt = vt;
    s->impl = impl;
    s->id = atomic_fetch_add(&next_id, 1);
    *out = s;
    return CLARITY_OK;
}

/* tl_err.msg, n bytes long, as s's last error: rc. */
static int record(store *s, int rc, size_t n)
{
    tl_err.id = s->id;
    memcpy(s->err, tl_err.msg, n + 1); /* s->err is never read past its NUL */
    return rc;
}

int store_fail(store *s, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(tl_err.msg, sizeof tl_err.msg, fmt, ap) < 0) tl_err.msg[0] = '\0';
    va_end(ap);
    return record(s, rc, strlen(tl_err.msg));
}

/* Appends src to m[*at, cap - 1), NUL kept: vsnprintf's truncation. */
static void msg_cat(char *m, size_t cap, size_t *at, const char *src)
{
    size_t n = strlen(src);
    if (n > cap - 1 - *at) n = cap - 1 - *at;
    memcpy(m + *at, src, n);
    *at += n;
    m[*at] = '\0';
}

int store_not_found(store *s, const char *ns, const char *key)
{
    size_t at = 0;
    const char *parts[] = {"store: no key '", key, "' in namespace '", ns, "'"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) msg_cat(tl_err.msg, sizeof tl_err.msg, &at, parts[i]);
    return record(s, CLARITY_ENOTFOUND, at);
}

void store_open_err(char **err, const char *fmt, ...)
{
    if (!err) return;
    *err = NULL;
    va_list ap, cp;
    va_start(ap, fmt);
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n >= 0) {
        char *m = malloc((size_t)n + 1);
        if (m) {
            vsnprintf(m, (size_t)n + 1, fmt, ap);
            *err = m;
        }
    }
    va_end(ap);
}

char *store_dup_val(const char *src, size_t len)
{
    if (len == SIZE_MAX) return NULL;
    char *p = malloc(len + 1);
    if (!p) return NULL;
    if (len) memcpy(p, src, len);
    p[len] = '\0';
    return p;
}

long long store_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* A thread that has to wait says so, and since when (store_yield). */
static void lock(store *s)
{
    if (pthread_mutex_trylock(&s->mu) == 0) return;
    atomic_fetch_add(&s->waiting, 1);
    long long none = 0;
    atomic_compare_exchange_strong(&s->waiting_since, &none, store_now_ns());
    pthread_mutex_lock(&s->mu);
    if (atomic_fetch_sub(&s->waiting, 1) == 1) atomic_store(&s->waiting_since, 0);
}
static void unlock(store *s) { pthread_mutex_unlock(&s->mu); }

/* A mutex is not fair: a thread that unlocks and locks again at once
 * (the fold worker between two transactions) takes it back before the
 * thread it woke runs, so a turn waiting to commit waited for the whole
 * fold, however long (2 ms at 1,000 items, 30 ms at 10,000).  The caller
 * lets a thread that has waited STORE_YIELD_AFTER_NS have the store
 * first: a fold of a few ms still goes in one go (one turn waits for it;
 * letting every waiter in between chunks, or after 1 ms, made every turn
 * of the fold's span wait, and the p99 of back-to-back turns with it), a
 * long one is cut into waits of about that length.  Bounded: a stream of
 * waiters does not stop the caller for good. */
void store_yield(store *s)
{
    if (!s || atomic_load(&s->waiting) == 0) return;
    long long since = atomic_load(&s->waiting_since);
    if (since == 0) { /* a waiter's time lost to the last one leaving: from now */
        atomic_compare_exchange_strong(&s->waiting_since, &since, store_now_ns());
        return;
    }
    if (store_now_ns() - since < STORE_YIELD_AFTER_NS) return;
    for (int i = 0; i < STORE_YIELD_SPINS && atomic_load(&s->waiting) > 0; i++) {
        struct timespec ts = {0, 20000}; /* 20 us */
        nanosleep(&ts, NULL);
    }
}

const char *store_backend_name(const store *s) { return s ? s->vt->name : "none"; }

int store_reuses_slots(const store *s) { return s && s->vt->reuses_slots; }

/* ---- turn-log slot keys --------------------------------------------------- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1; /* upper case is another key: slot keys are lower case */
}

void store_slot_key(char key[7], unsigned slot)
{
    static const char hex[] = "0123456789abcdef";
    key[0] = 'l';
    key[1] = ':';
    for (int i = 0; i < 4; i++) key[2 + i] = hex[(slot >> (12 - 4 * i)) & 15];
    key[6] = '\0';
}

int store_slot_of(const char *key)
{
    if (key[0] != 'l' || key[1] != ':') return -1;
    int slot = 0;
    for (int i = 2; i < 6; i++) {
        int v = hexval(key[i]);
        if (v < 0) return -1;
        slot = slot << 4 | v;
    }
    return key[6] == '\0' ? slot : -1;
}

int store_slot_prefix(const char *prefix)
{
    static const char head[] = "l:";
    size_t n = strlen(prefix);
    if (n > 6) return 0;
    for (size_t i = 0; i < n; i++)
        if (i < 2 ? prefix[i] != head[i] : hexval(prefix[i]) < 0) return 0;
    return 1;
}

/* Opens a transaction (flag: &s->in_txn) or a read snapshot (&s->in_read)
 * with begin (NULL: nothing to start in the backend); on success the mutex
 * stays held until it ends.  Only the owner can see a flag set after
 * locking: one already set is a nested begin. */
static int txn_open(store *s, int *flag, int (*begin)(store *), const char *what)
{
    lock(s);
    if (s->in_txn || s->in_read) {
        int rc = store_fail(s, CLARITY_EINVAL, "%s: a transaction is already open", what);
        unlock(s);
        return rc;
    }
    int rc = begin ? begin(s) : CLARITY_OK;
    if (rc != CLARITY_OK) {
        unlock(s);
        return rc;
    }
    *flag = 1;
    return CLARITY_OK;
}

/* Ends what txn_open opened, if it is open, with end (NULL: nothing to
 * end in the backend), and releases txn_open's lock (the caller holds its
 * own). */
static void txn_end(store *s, int *flag, void (*end)(store *))
{
    if (!*flag) return;
    if (end) end(s);
    *flag = 0;
    unlock(s);
}

void store_close(store *s)
{
    if (!s) return;
    /* The caller guarantees no other thread uses s any more.  A transaction
     * left open by this thread is rolled back (never committed). */
    lock(s);
    txn_end(s, &s->in_txn, s->vt->rollback);
    txn_end(s, &s->in_read, s->vt->end_read);
    s->vt->close(s);
    unlock(s);
    pthread_mutex_destroy(&s->mu);
    if (tl_err.id == s->id) tl_err.id = 0;
    free(s);
}

int store_get(store *s, const char *ns, const char *key, char **val, size_t *len)
{
    if (val) *val = NULL;
    if (len) *len = 0;
    if (!s) return CLARITY_EINVAL;
    lock(s);
    int rc = (!ns || !key || !val || !len)
                 ? store_fail(s, CLARITY_EINVAL, "store_get: NULL argument")
                 : s->vt->get(s, ns, key, val, len);
    unlock(s);
    return rc;
}

int store_put(store *s, const char *ns, const char *key, const char *val, size_t len)
{
    if (!s) return CLARITY_EINVAL;
    lock(s);
    int rc = (!ns || !key || (!val && len))
                 ? store_fail(s, CLARITY_EINVAL, "store_put: NULL argument")
                 : s->vt->put(s, ns, key, val ? val : "", len);
    unlock(s);
    return rc;
}

int store_del(store *s, const char *ns, const char *key)
{
    if (!s) return CLARITY_EINVAL;
    lock(s);
    int rc = (!ns || !key) ? store_fail(s, CLARITY_EINVAL, "store_del: NULL argument")
                           : s->vt->del(s, ns, key);
    unlock(s);
    return rc;
}

int store_del_ns(store *s, const char *ns)
{
    if (!s) return CLARITY_EINVAL;
    lock(s);
    int rc =
        !ns ? store_fail(s, CLARITY_EINVAL, "store_del_ns: NULL argument") : s->vt->del_ns(s, ns);
    unlock(s);
    return rc;
}

int store_iter(store *s, const char *ns, const char *prefix, store_iter_cb cb, void *ud)
{
    if (!s) return CLARITY_EINVAL;
    lock(s);
    int rc = (!ns || !cb) ? store_fail(s, CLARITY_EINVAL, "store_iter: NULL argument")
                          : s->vt->iter(s, ns, prefix ? prefix : "", cb, ud);
    unlock(s);
    return rc;
}

int store_begin(store *s) { return s ? txn_open(s, &s->in_txn, s->vt->begin, "store_begin") : CLARITY_EINVAL; }

int store_commit(store *s)
{
    if (!s) return CLARITY_EINVAL;
    lock(s);
    int rc = s->in_txn ? s->vt->commit(s) : store_fail(s, CLARITY_EINVAL, "store_commit: no transaction is open");
    txn_end(s, &s->in_txn, NULL);
    unlock(s);
    return rc;
}

void store_rollback(store *s)
{
    if (!s) return;
    lock(s);
    txn_end(s, &s->in_txn, s->vt->rollback);
    unlock(s);
}

int store_begin_read(store *s)
{
    return s ? txn_open(s, &s->in_read, s->vt->begin_read, "store_begin_read") : CLARITY_EINVAL;
}

void store_end_read(store *s)
{
    if (!s) return;
    lock(s);
    txn_end(s, &s->in_read, s->vt->end_read);
    unlock(s);
}

int store_version(store *s, const char *ns, uint64_t *out)
{
    *out = 0;
    if (!s || !ns) return CLARITY_EINVAL;
    if (!s->vt->version) return CLARITY_DECLINED;
    lock(s);
    int rc = s->vt->version(s, ns, out);
    unlock(s);
    return rc;
}

int store_fence(store *s, const char *ns, uint64_t expect, uint64_t next)
{
    if (!s || !ns) return CLARITY_EINVAL;
    if (!s->vt->fence) return CLARITY_DECLINED;
    lock(s);
    int rc = s->in_txn ? s->vt->fence(s, ns, expect, next)
                       : store_fail(s, CLARITY_EINVAL, "store_fence: outside a transaction");
    unlock(s);
    return rc;
}

const char *store_errmsg(const store *s)
{
    if (!s) return "no store";
    if (tl_err.id != s->id) {
        /* This thread's last error is not from s: take the store's last
         * message (perhaps another thread's), copied under the lock.  The
         * mutex is logically mutable; the store itself is not changed. */
        store *m = (store *)s;
        lock(m);
        memcpy(tl_err.msg, m->err, sizeof tl_err.msg);
        unlock(m);
        tl_err.id = s->id;
    }
    return tl_err.msg[0] ? tl_err.msg : "no error";
}
