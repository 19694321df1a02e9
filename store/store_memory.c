/* store_memory.c: the process-local backend.
 *
 * Not persistent and not crash-safe: for tests and for hosts that want no
 * persistence.  Entries live in one array sorted by (ns, key) bytewise, so
 * lookups are binary searches and iteration is naturally in key order.
 *
 * Transactions behave like SQLite's: writes are applied at once and an undo
 * log keeps what each one replaced (the entry, or for a key that was not
 * there a mark on the entry that added it); store_rollback replays the log
 * backwards, store_commit drops it.  Undoing never allocates: the array's
 * capacity never shrinks, and replaying the log backwards only goes through
 * sizes the array already had.  Every write allocates what it needs before
 * changing anything, so CLARITY_ENOMEM leaves the store unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../util/buf.h"
#include "store_impl.h"

/* One entry, in one allocation: the struct, then nk (ns, NUL, key, NUL),
 * then val. */
typedef struct ment {
    char *nk;
    size_t nslen;
    char *val; /* NUL-terminated; len excludes the NUL */
    size_t len;
} ment;

/* An undo log entry is an entry a write replaced or deleted, or an entry a
 * write added where its key was absent, with the low bit set (entries are
 * malloc'd, so the bit is free): rolling back removes that key, and
 * committing keeps the entry, which the store still holds.  (A mark costs
 * no allocation, where a tombstone copied the key.) */
#define ADDED ((uintptr_t)1)
static ment *added_mark(ment *e) { return (ment *)((uintptr_t)e | ADDED); }
static int is_added(const ment *u) { return ((uintptr_t)u & ADDED) != 0; }
static ment *unmarked(ment *u) { return (ment *)((uintptr_t)u & ~ADDED); }

typedef struct mem {
    ment **v;
    size_t n, cap;
    ment **undo; /* prior states, oldest first; only during a transaction */
    size_t n_undo, cap_undo;
    int in_txn;
    size_t hint; /* where the last lookup ended (lower_bound) */
} mem;

static mem *M(store *s) { return s->impl; }

static const char *ment_key(const ment *e) { return e->nk + e->nslen + 1; }

static void ment_free(ment *e) { free(e); }

static ment *ment_new(const char *ns, const char *key, const char *val, size_t len)
{
    size_t a = strlen(ns), b = strlen(key);
    if (len > SIZE_MAX - sizeof(ment) - a - b - 3) return NULL;
    ment *e = malloc(sizeof *e + a + b + 3 + len);
    if (!e) return NULL;
    e->nk = (char *)(e + 1);
    memcpy(e->nk, ns, a + 1);
    memcpy(e->nk + a + 1, key, b + 1);
    e->val = e->nk + a + b + 2;
    if (len) memcpy(e->val, val, len);
    e->val[len] = '\0';
    e->nslen = a;
    e->len = len;
    return e;
}

static int cmp(const ment *e, const char *ns, const char *key)
{
    int c = strcmp(e->nk, ns);
    return c ? c : strcmp(ment_key(e), key);
}

/* Whether (ns, key) goes at index i: after every entry before i, at or
 * before the entry at i. */
static int goes_at(const mem *m, size_t i, const char *ns, const char *key, int *found)
{
    if (i > m->n || (i > 0 && cmp(m->v[i - 1], ns, key) >= 0)) return 0;
    int c = i < m->n ? cmp(m->v[i], ns, key) : 1;
    *found = c == 0;
    return c >= 0;
}

/* Index of the first entry >= (ns, key); *found when it is equal.  Where
 * the last lookup ended, and the place after it, are tried first: a
 * session's calls come together (its turn's record goes after the last). */
static size_t lower_bound(mem *m, const char *ns, const char *key, int *found)
{
    size_t lo = m->hint;
    if (goes_at(m, lo, ns, key, found) || goes_at(m, ++lo, ns, key, found)) return m->hint = lo;
    lo = 0;
    size_t hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp(m->v[mid], ns, key) < 0) lo = mid + 1;
        else hi = mid;
    }
    *found = lo < m->n && cmp(m->v[lo], ns, key) == 0;
    return m->hint = lo;
}

/* Makes room for `need` elements of `elem` bytes in array p of capacity
 * *cap.  Returns the (maybe moved) array, or NULL with p untouched. */
static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem) return NULL;
        c *= 2;
    }
    void *q = realloc(p, c * elem);
    if (q) *cap = c;
    return q;
}

static int reserve_slot(mem *m)
{
    ment **v = grow(m->v, &m->cap, m->n + 1, sizeof *m->v);
    if (!v) return -1;
    m->v = v;
    return 0;
}

static int reserve_undo(mem *m, size_t extra)
{
    if (!m->in_txn) return 0;
    if (extra > SIZE_MAX - m->n_undo) return -1;
    ment **u = grow(m->undo, &m->cap_undo, m->n_undo + extra, sizeof *m->undo);
    if (!u) return -1;
    m->undo = u;
    return 0;
}

static void insert_at(mem *m, size_t i, ment *e)
{
    memmove(m->v + i + 1, m->v + i, (m->n - i) * sizeof *m->v);
    m->v[i] = e;
    m->n++;
}

static void remove_at(mem *m, size_t i)
{
    memmove(m->v + i, m->v + i + 1, (m->n - i - 1) * sizeof *m->v);
    m->n--;
}

/* Keeps the replaced entry in the undo log, or frees it. */
static void retire(mem *m, ment *old)
{
    if (m->in_txn) m->undo[m->n_undo++] = old;
    else ment_free(old);
}

static int oom(store *s) { return store_fail(s, CLARITY_ENOMEM, "store: out of memory"); }

static int mem_get(store *s, const char *ns, const char *key, char **val, size_t *len)
{
    mem *m = M(s);
    int found;
    size_t i = lower_bound(m, ns, key, &found);
    if (!found) return store_not_found(s, ns, key);
    char *v = store_dup_val(m->v[i]->val, m->v[i]->len);
    if (!v) return oom(s);
    *val = v;
    *len = m->v[i]->len;
    return CLARITY_OK;
}

static int mem_put(store *s, const char *ns, const char *key, const char *val, size_t len)
{
    mem *m = M(s);
    int found;
    size_t i = lower_bound(m, ns, key, &found);
    ment *e = ment_new(ns, key, val, len);
    if (!e || reserve_undo(m, 1) != 0 || (!found && reserve_slot(m) != 0)) {
        ment_free(e);
        return oom(s);
    }
    if (found) {
        retire(m, m->v[i]);
        m->v[i] = e;
    } else {
        insert_at(m, i, e);
        if (m->in_txn) m->undo[m->n_undo++] = added_mark(e);
    }
    return CLARITY_OK;
}

static int mem_del(store *s, const char *ns, const char *key)
{
    mem *m = M(s);
    int found;
    size_t i = lower_bound(m, ns, key, &found);
    if (!found) return CLARITY_OK;
    if (reserve_undo(m, 1) != 0) return oom(s);
    ment *old = m->v[i];
    remove_at(m, i);
    retire(m, old);
    return CLARITY_OK;
}

static int mem_del_ns(store *s, const char *ns)
{
    mem *m = M(s);
    int found;
    size_t lo = lower_bound(m, ns, "", &found), hi = lo;
    while (hi < m->n && strcmp(m->v[hi]->nk, ns) == 0) hi++;
    if (hi == lo) return CLARITY_OK;
    if (reserve_undo(m, hi - lo) != 0) return oom(s);
    /* Undo re-inserts them by binary search, so their log order is free. */
    for (size_t i = lo; i < hi; i++) retire(m, m->v[i]);
    memmove(m->v + lo, m->v + hi, (m->n - hi) * sizeof *m->v);
    m->n -= hi - lo;
    return CLARITY_OK;
}

/* One entry at a time: the current entry is copied out before its callback
 * and the next one is searched for afresh, so callbacks may modify the store
 * (later keys they write are visited, keys they delete are not). */
static int mem_iter(store *s, const char *ns, const char *prefix, store_iter_cb cb, void *ud)
{
    mem *m = M(s);
    size_t plen = strlen(prefix);
    buf key, val;
    buf_init(&key);
    buf_init(&val);
    buf_puts(&key, prefix);
    int ret = CLARITY_OK, found;
    if (buf_failed(&key)) ret = oom(s);
    while (ret == CLARITY_OK) {
        size_t i = lower_bound(m, ns, key.p, &found);
        if (i == m->n || strcmp(m->v[i]->nk, ns) != 0 ||
            strncmp(ment_key(m->v[i]), prefix, plen) != 0)
            break;
        const ment *e = m->v[i];
        buf_reset(&key);
        buf_puts(&key, ment_key(e));
        buf_reset(&val);
        buf_append(&val, e->val, e->len);
        if (buf_failed(&key) || buf_failed(&val)) {
            ret = oom(s);
            break;
        }
        if (cb(ud, key.p, val.p, val.len)) break;
        /* No key holds a NUL, so the smallest key above this one is key+"\x01". */
        buf_putc(&key, '\x01');
        if (buf_failed(&key)) ret = oom(s);
    }
    buf_free(&key);
    buf_free(&val);
    return ret;
}

static int mem_begin(store *s)
{
    mem *m = M(s);
    m->in_txn = 1;
    m->n_undo = 0;
    return CLARITY_OK;
}

static void drop_undo(mem *m)
{
    for (size_t i = 0; i < m->n_undo; i++)
        if (!is_added(m->undo[i])) ment_free(m->undo[i]); /* an added entry stays in the store */
    m->n_undo = 0;
    m->in_txn = 0;
    /* Keep the log small between transactions. */
    if (m->cap_undo > 1024) {
        free(m->undo);
        m->undo = NULL;
        m->cap_undo = 0;
    }
}

static int mem_commit(store *s)
{
    drop_undo(M(s));
    return CLARITY_OK;
}

static void mem_rollback(store *s)
{
    mem *m = M(s);
    while (m->n_undo > 0) {
        ment *u = m->undo[--m->n_undo];
        int found;
        if (is_added(u)) {
            /* the key was absent: the entry that added it is the store's
             * again by now (every later write to the key was undone) */
            ment *e = unmarked(u);
            size_t i = lower_bound(m, e->nk, ment_key(e), &found);
            if (found) {
                ment_free(m->v[i]);
                remove_at(m, i);
            }
            continue;
        }
        size_t i = lower_bound(m, u->nk, ment_key(u), &found);
        if (found) {
            ment_free(m->v[i]);
            m->v[i] = u;
        } else {
            insert_at(m, i, u); /* within capacity, see the top comment */
        }
    }
    drop_undo(m);
}

static void mem_close(store *s)
{
    mem *m = M(s);
    drop_undo(m);
    for (size_t i = 0; i < m->n; i++) ment_free(m->v[i]);
    free(m->v);
    free(m->undo);
    free(m);
}

static const store_vt memory_vt = {
    .name = "memory",
    .get = mem_get,
    .put = mem_put,
    .del = mem_del,
    .del_ns = mem_del_ns,
    .iter = mem_iter,
    .begin = mem_begin,
    .commit = mem_commit,
    .rollback = mem_rollback,
    .close = mem_close,
};

int store_open_memory(store **out, char **err)
{
    if (err) *err = NULL;
    if (!out) return CLARITY_EINVAL;
    *out = NULL;
    mem *m = calloc(1, sizeof *m);
    if (!m) {
        store_open_err(err, "store: out of memory");
        return CLARITY_ENOMEM;
    }
    int rc = store_create(&memory_vt, m, out);
    if (rc != CLARITY_OK) {
        free(m);
        store_open_err(err, "store: cannot create the memory store");
    }
    return rc;
}
