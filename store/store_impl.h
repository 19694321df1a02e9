/* store_impl.h: what store.c shares with the backends (internal only).
 *
 * store.c owns the public API: argument checks, the store's recursive
 * mutex, the transaction flag and the last-error text.  A backend supplies a
 * store_vt and its private state; every vt function is called with the
 * store's mutex held, so a backend needs no locking of its own.
 */
#ifndef STORE_STORE_IMPL_H
#define STORE_STORE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define STORE_ERR_MAX 512

typedef struct store_vt {
    const char *name;
    int reuses_slots; /* store_reuses_slots */
    /* Same contracts as the public functions; arguments already checked
     * (ns, key, prefix non-NULL; val non-NULL unless len == 0). */
    int (*get)(store *s, const char *ns, const char *key, char **val, size_t *len);
    int (*put)(store *s, const char *ns, const char *key, const char *val, size_t len);
    int (*del)(store *s, const char *ns, const char *key);
    int (*del_ns)(store *s, const char *ns);
    int (*iter)(store *s, const char *ns, const char *prefix, store_iter_cb cb, void *ud);
    /* begin: start the backend's transaction.  commit: end it, durable on
     * CLARITY_OK; on failure the backend discards the writes as far as it
     * can (the transaction is over either way).  rollback: discard. */
    int (*begin)(store *s);
    int (*commit)(store *s);
    void (*rollback)(store *s);
    /* Optional (NULL: the mutex alone): a read snapshot (store.h). */
    int (*begin_read)(store *s);
    void (*end_read)(store *s);
    /* Optional (NULL: CLARITY_DECLINED): the namespace versions of a store
     * several processes share (store.h). */
    int (*version)(store *s, const char *ns, uint64_t *out);
    int (*fence)(store *s, const char *ns, uint64_t expect, uint64_t next);
    /* Frees the backend state (s->impl); an open transaction was already
     * rolled back by store_close. */
    void (*close)(store *s);
} store_vt;

struct store {
    const store_vt *vt;
    void *impl;         /* backend state */
    pthread_mutex_t mu; /* recursive; held from store_begin to commit/rollback */
    atomic_int waiting; /* threads blocked on mu (store_yield) */
    atomic_llong waiting_since; /* when the first of them began to wait (monotonic ns), 0: none waits */
    int in_txn;         /* only read/written with mu held */
    int in_read;        /* between store_begin_read and store_end_read */
    unsigned long id;   /* unique per store, for the thread-local error */
    char err[STORE_ERR_MAX];
};

/* Allocates a store around impl (ownership of impl passes to the store only
 * on success).  Returns CLARITY_OK or CLARITY_ENOMEM/CLARITY_ESTORE. */
int store_create(const store_vt *vt, void *impl, store **out);

/* Records the last error of s (call with s->mu held).  Returns rc so that
 * callers can write `return store_fail(s, CLARITY_ESTORE, ...)`. */
int store_fail(store *s, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* store_fail(s, CLARITY_ENOTFOUND, "store: no key '<key>' in namespace
 * '<ns>'") put together without printf: the expected miss of every new
 * session's first lookups. */
int store_not_found(store *s, const char *ns, const char *key);

/* malloc()s a formatted message for the *err out-parameters of the open
 * functions; sets nothing when err is NULL; *err = NULL when out of memory. */
void store_open_err(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Allocates len + 1 bytes, copies src and NUL-terminates: the value format
 * store_get hands out.  NULL when out of memory. */
char *store_dup_val(const char *src, size_t len);

/* The monotonic clock in ns: the backends' timers and waits. */
long long store_now_ns(void);

#endif
