/* store_host.c: the backend that forwards to the host's kv services.
 *
 * Requires kv_get, kv_put, kv_del, kv_iter and kv_free (a value kv_get hands
 * out is host-owned; without kv_free it could only leak).  kv_begin,
 * kv_commit and kv_rollback are optional: without them a transaction is
 * only the store's lock (writes are applied at once and store_rollback
 * cannot take them back).
 *
 * Return codes: a host's CLARITY_OK and CLARITY_ENOTFOUND are kept; any
 * other code becomes CLARITY_ESTORE (the host's code is in the message).
 * kv_del of a missing key (ENOTFOUND) is success.  When kv_commit fails,
 * kv_rollback is not called (the host was told to commit; what it keeps is
 * its business) and store_commit returns CLARITY_ESTORE.
 *
 * The host does not promise an order for kv_iter, so store_iter collects the
 * matching entries, sorts them by key and only then runs the callbacks
 * (outside the host's kv_iter: callbacks may use the store).
 */
#include <stdlib.h>
#include <string.h>

#include "store_impl.h"

typedef struct hs {
    void *ud;
    int (*kv_get)(void *ud, const char *ns, const char *key, char **val, size_t *len);
    int (*kv_put)(void *ud, const char *ns, const char *key, const char *val, size_t len);
    int (*kv_del)(void *ud, const char *ns, const char *key);
    void (*kv_free)(void *ud, char *val);
    int (*kv_iter)(void *ud, const char *ns, const char *prefix, clarity_kv_iter_cb cb, void *cbud);
    int (*kv_begin)(void *ud);
    int (*kv_commit)(void *ud);
    int (*kv_rollback)(void *ud);
} hs;

static hs *H(store *s) { return s->impl; }

static int host_fail(store *s, const char *what, int hrc)
{
    return store_fail(s, CLARITY_ESTORE, "store: host %s failed (code %d)", what, hrc);
}

static int oom(store *s) { return store_fail(s, CLARITY_ENOMEM, "store: out of memory"); }

static int hs_get(store *s, const char *ns, const char *key, char **val, size_t *len)
{
    hs *h = H(s);
    char *hv = NULL;
    size_t hn = 0;
    int rc = h->kv_get(h->ud, ns, key, &hv, &hn);
    if (rc == CLARITY_ENOTFOUND) return store_not_found(s, ns, key);
    if (rc != CLARITY_OK) return host_fail(s, "kv_get", rc);
    if (!hv && hn) return store_fail(s, CLARITY_ESTORE, "store: host kv_get returned no buffer");
    char *v = store_dup_val(hv ? hv : "", hn);
    if (hv) h->kv_free(h->ud, hv);
    if (!v) return oom(s);
    *val = v;
    *len = hn;
    return CLARITY_OK;
}

static int hs_put(store *s, const char *ns, const char *key, const char *val, size_t len)
{
    hs *h = H(s);
    int rc = h->kv_put(h->ud, ns, key, val, len);
    return rc == CLARITY_OK ? CLARITY_OK : host_fail(s, "kv_put", rc);
}

static int hs_del(store *s, const char *ns, const char *key)
{
    hs *h = H(s);
    int rc = h->kv_del(h->ud, ns, key);
    return rc == CLARITY_OK || rc == CLARITY_ENOTFOUND ? CLARITY_OK : host_fail(s, "kv_del", rc);
}

/* ---- collecting kv_iter results ----------------------------------------- */

typedef struct kvent {
    char *key; /* key NUL val NUL, one allocation */
    char *val;
    size_t len;
} kvent;

typedef struct collect {
    const char *prefix;
    size_t plen;
    int keys_only;
    kvent *v;
    size_t n, cap;
    int oom;
} collect;

static int collect_cb(void *cbud, const char *key, const char *val, size_t len)
{
    collect *c = cbud;
    if (!key || strncmp(key, c->prefix, c->plen) != 0) return 0; /* not ours: skip */
    if (!val) len = 0;
    if (c->keys_only) len = 0;
    size_t kn = strlen(key);
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        kvent *v = cap < SIZE_MAX / sizeof *v ? realloc(c->v, cap * sizeof *v) : NULL;
        if (!v) {
            c->oom = 1;
            return 1;
        }
        c->v = v;
        c->cap = cap;
    }
    char *p = (len < SIZE_MAX - kn - 2) ? malloc(kn + len + 2) : NULL;
    if (!p) {
        c->oom = 1;
        return 1;
    }
    memcpy(p, key, kn + 1);
    if (len) memcpy(p + kn + 1, val, len);
    p[kn + 1 + len] = '\0';
    c->v[c->n++] = (kvent){p, p + kn + 1, len};
    return 0;
}

static void collect_free(collect *c)
{
    for (size_t i = 0; i < c->n; i++) free(c->v[i].key);
    free(c->v);
}

static int cmp_kvent(const void *a, const void *b)
{
    return strcmp(((const kvent *)a)->key, ((const kvent *)b)->key);
}

static int collect_run(store *s, const char *ns, const char *prefix, int keys_only, collect *c)
{
    hs *h = H(s);
    memset(c, 0, sizeof *c);
    c->prefix = prefix;
    c->plen = strlen(prefix);
    c->keys_only = keys_only;
    int rc = h->kv_iter(h->ud, ns, prefix, collect_cb, c);
    if (c->oom) return oom(s);
    if (rc != CLARITY_OK && rc != CLARITY_ENOTFOUND) return host_fail(s, "kv_iter", rc);
    if (c->n > 1) qsort(c->v, c->n, sizeof *c->v, cmp_kvent);
    return CLARITY_OK;
}

static int hs_iter(store *s, const char *ns, const char *prefix, store_iter_cb cb, void *ud)
{
    collect c;
    int rc = collect_run(s, ns, prefix, 0, &c);
    for (size_t i = 0; rc == CLARITY_OK && i < c.n; i++) {
        if (i > 0 && strcmp(c.v[i].key, c.v[i - 1].key) == 0) continue; /* host repeated it */
        if (cb(ud, c.v[i].key, c.v[i].val, c.v[i].len)) break;
    }
    collect_free(&c);
    return rc;
}

static int hs_begin(store *s)
{
    hs *h = H(s);
    int rc = h->kv_begin ? h->kv_begin(h->ud) : CLARITY_OK;
    return rc == CLARITY_OK ? CLARITY_OK : host_fail(s, "kv_begin", rc);
}

static int hs_commit(store *s)
{
    hs *h = H(s);
    int rc = h->kv_commit ? h->kv_commit(h->ud) : CLARITY_OK;
    return rc == CLARITY_OK ? CLARITY_OK : host_fail(s, "kv_commit", rc);
}

static void hs_rollback(store *s)
{
    hs *h = H(s);
    if (h->kv_rollback) h->kv_rollback(h->ud);
}

/* The host has no "delete namespace": list the keys, delete them one by
 * one; outside a transaction, bracketed with kv_begin/kv_commit when the
 * host has them so that it is atomic there too. */
static int hs_del_ns(store *s, const char *ns)
{
    hs *h = H(s);
    collect c;
    int rc = collect_run(s, ns, "", 1, &c);
    int bracket = rc == CLARITY_OK && c.n > 0 && !s->in_txn && h->kv_begin && h->kv_commit;
    if (bracket) {
        rc = hs_begin(s);
        bracket = rc == CLARITY_OK;
    }
    for (size_t i = 0; rc == CLARITY_OK && i < c.n; i++) rc = hs_del(s, ns, c.v[i].key);
    if (bracket) {
        if (rc == CLARITY_OK) rc = hs_commit(s);
        else hs_rollback(s);
    }
    collect_free(&c);
    return rc;
}

static void hs_close(store *s) { free(H(s)); }

static const store_vt host_vt = {
    .name = "host",
    .get = hs_get,
    .put = hs_put,
    .del = hs_del,
    .del_ns = hs_del_ns,
    .iter = hs_iter,
    .begin = hs_begin,
    .commit = hs_commit,
    .rollback = hs_rollback,
    .close = hs_close,
};

#define MEMBER(host, m) (CLARITY_HAS_MEMBER(host, clarity_host, m) ? (host)->m : NULL)

int store_open_host(const clarity_host *host, store **out, char **err)
{
    if (err) *err = NULL;
    if (!out) return CLARITY_EINVAL;
    *out = NULL;
    if (!host) {
        store_open_err(err, "store: no host table for the host store");
        return CLARITY_EINVAL;
    }
    hs h = {
        .ud = MEMBER(host, ud),
        .kv_get = MEMBER(host, kv_get),
        .kv_put = MEMBER(host, kv_put),
        .kv_del = MEMBER(host, kv_del),
        .kv_free = MEMBER(host, kv_free),
        .kv_iter = MEMBER(host, kv_iter),
        .kv_begin = MEMBER(host, kv_begin),
        .kv_commit = MEMBER(host, kv_commit),
        .kv_rollback = MEMBER(host, kv_rollback),
    };
    const char *missing = !h.kv_get    ? "kv_get"
                          : !h.kv_put  ? "kv_put"
                          : !h.kv_del  ? "kv_del"
                          : !h.kv_free ? "kv_free"
                          : !h.kv_iter ? "kv_iter"
                                       : NULL;
    if (missing) {
        store_open_err(err, "store: the host store needs the host's %s service, which is missing",
                       missing);
        return CLARITY_EINVAL;
    }
    hs *p = malloc(sizeof *p);
    if (!p) {
        store_open_err(err, "store: out of memory");
        return CLARITY_ENOMEM;
    }
    *p = h;
    int rc = store_create(&host_vt, p, out);
    if (rc != CLARITY_OK) {
        free(p);
        store_open_err(err, "store: cannot create the host store");
    }
    return rc;
}
