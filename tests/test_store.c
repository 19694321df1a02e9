/* test_store.c: the store module on its three backends (sqlite, memory,
 * host through an in-test kv), plus sqlite durability across kill -9. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../store/store.h"
#include "../store/sqlite_ring.h"
#include "../store/store_impl.h"
#include "redisserver.h"
#include "runproc.h"
#include "testhost.h"

/* ---- temp directory ------------------------------------------------------ */

static char g_dir[64];

static void rm_tree(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static void path_in_dir(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", g_dir, name);
}

/* ---- an in-test host kv: an unsorted array behind a mutex ----------------- */

typedef struct hent {
    char *ns, *key, *val;
    size_t len;
} hent;

typedef struct thost {
    pthread_mutex_t mu;
    hent *v;
    size_t n, cap;
    hent *snap; /* copy taken by kv_begin */
    size_t n_snap;
    int in_txn;
    long outstanding; /* kv_get buffers not yet given back through kv_free */
    int fail_put;     /* kv_put returns this when non-zero */
    int begins, commits, rollbacks;
} thost;

static thost g_th;

static char *dupn(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    cr_assert_not_null(p);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static void hent_free(hent *e)
{
    free(e->ns);
    free(e->key);
    free(e->val);
}

static hent *th_find(thost *h, const char *ns, const char *key)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->v[i].ns, ns) == 0 && strcmp(h->v[i].key, key) == 0) return &h->v[i];
    return NULL;
}

static int th_get(void *ud, const char *ns, const char *key, char **val, size_t *len)
{
    thost *h = ud;
    pthread_mutex_lock(&h->mu);
    hent *e = th_find(h, ns, key);
    int rc = CLARITY_ENOTFOUND;
    if (e) {
        *val = malloc(e->len ? e->len : 1); /* deliberately not NUL-terminated */
        memcpy(*val, e->val, e->len);
        *len = e->len;
        h->outstanding++;
        rc = CLARITY_OK;
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

static void th_free(void *ud, char *val)
{
    thost *h = ud;
    pthread_mutex_lock(&h->mu);
    h->outstanding--;
    pthread_mutex_unlock(&h->mu);
    free(val);
}

static int th_put(void *ud, const char *ns, const char *key, const char *val, size_t len)
{
    thost *h = ud;
    if (h->fail_put) return h->fail_put;
    pthread_mutex_lock(&h->mu);
    hent *e = th_find(h, ns, key);
    if (e) {
        free(e->val);
    } else {
        if (h->n == h->cap) {
            h->cap = h->cap ? h->cap * 2 : 16;
            h->v = realloc(h->v, h->cap * sizeof *h->v);
        }
        e = &h->v[h->n++];
        e->ns = dupn(ns, strlen(ns));
        e->key = dupn(key, strlen(key));
    }
    e->val = dupn(val, len);
    e->len = len;
    pthread_mutex_unlock(&h->mu);
    return CLARITY_OK;
}

static int th_del(void *ud, const char *ns, const char *key)
{
    thost *h = ud;
    pthread_mutex_lock(&h->mu);
    hent *e = th_find(h, ns, key);
    int rc = CLARITY_ENOTFOUND;
    if (e) {
        hent_free(e);
        *e = h->v[--h->n]; /* swap with the last: the order gets scrambled */
        rc = CLARITY_OK;
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

static int th_iter(void *ud, const char *ns, const char *prefix, clarity_kv_iter_cb cb,
                   void *cbud)
{
    thost *h = ud;
    pthread_mutex_lock(&h->mu);
    size_t pl = strlen(prefix);
    for (size_t i = 0; i < h->n; i++) {
        if (strcmp(h->v[i].ns, ns) || strncmp(h->v[i].key, prefix, pl)) continue;
        if (cb(cbud, h->v[i].key, h->v[i].val, h->v[i].len)) break;
    }
    pthread_mutex_unlock(&h->mu);
    return CLARITY_OK;
}

static hent *copy_all(const hent *v, size_t n)
{
    hent *c = malloc((n ? n : 1) * sizeof *c);
    for (size_t i = 0; i < n; i++) {
        c[i].ns = dupn(v[i].ns, strlen(v[i].ns));
        c[i].key = dupn(v[i].key, strlen(v[i].key));
        c[i].val = dupn(v[i].val, v[i].len);
        c[i].len = v[i].len;
    }
    return c;
}

static void free_all(hent *v, size_t n)
{
    for (size_t i = 0; i < n; i++) hent_free(&v[i]);
    free(v);
}

static int th_begin(void *ud)
{
    thost *h = ud;
    pthread_mutex_lock(&h->mu);
    h->snap = copy_all(h->v, h->n);
    h->n_snap = h->n;
    h->in_txn = 1;
    h->begins++;
    pthread_mutex_unlock(&h->mu);
    return CLARITY_OK;
}

static int th_commit(void *ud)
{
    thost *h = ud;
    pthread_mutex_lock(&h->mu);
    free_all(h->snap, h->n_snap);
    h->snap = NULL;
    h->in_txn = 0;
    h->commits++;
    pthread_mutex_unlock(&h->mu);
    return CLARITY_OK;
}

static int th_rollback(void *ud)
{
    thost *h = ud;
    pthread_mutex_lock(&h->mu);
    free_all(h->v, h->n);
    h->v = h->snap;
    h->n = h->cap = h->n_snap;
    if (h->cap == 0) {
        free(h->v);
        h->v = NULL;
    }
    h->snap = NULL;
    h->in_txn = 0;
    h->rollbacks++;
    pthread_mutex_unlock(&h->mu);
    return CLARITY_OK;
}

static clarity_host make_host(thost *h)
{
    clarity_host host;
    memset(&host, 0, sizeof host);
    host.struct_size = sizeof host;
    host.abi_version = CLARITY_ABI_VERSION;
    host.ud = h;
    host.kv_get = th_get;
    host.kv_put = th_put;
    host.kv_del = th_del;
    host.kv_free = th_free;
    host.kv_iter = th_iter;
    host.kv_begin = th_begin;
    host.kv_commit = th_commit;
    host.kv_rollback = th_rollback;
    return host;
}

#ifdef CLARITY_WITH_REDIS
/* A redis-server of this test's own (stopped by teardown_redis). */
static redis_srv g_redis;
static int g_redis_up;

static int open_redis(store **s, char **err)
{
    if (!g_redis_up) {
        if (redis_start(&g_redis, NULL) != 0) cr_assert_fail("redis-server could not be started");
        g_redis_up = 1;
    }
    return store_open_redis(g_redis.url, "st:", 2000, s, err);
}
#endif

static clarity_host g_host;

static void setup(void)
{
    strcpy(g_dir, "/tmp/clarity_store_XXXXXX");
    cr_assert_not_null(mkdtemp(g_dir));
    memset(&g_th, 0, sizeof g_th);
    pthread_mutex_init(&g_th.mu, NULL);
    g_host = make_host(&g_th);
}

static void teardown(void)
{
#ifdef CLARITY_WITH_REDIS
    if (g_redis_up) redis_stop(&g_redis, 0);
    g_redis_up = 0;
#endif
    rm_tree(g_dir);
    free_all(g_th.v, g_th.n);
    if (g_th.snap) free_all(g_th.snap, g_th.n_snap);
    pthread_mutex_destroy(&g_th.mu);
}

TestSuite(store, .init = setup, .fini = teardown);

/* ---- opening each backend ------------------------------------------------- */

enum { K_SQLITE, K_MEMORY, K_HOST, K_REDIS, K_SQLITE_EXCL };



static store *open_kind(int kind)
{
    store *s = NULL;
    char *err = NULL;
    int rc;
    if (kind == K_SQLITE || kind == K_SQLITE_EXCL) {
        char p[128];
        path_in_dir(p, sizeof p, "t.db");
        rc = store_open_sqlite(p, kind == K_SQLITE_EXCL ? STORE_SQLITE_EXCLUSIVE : 0, &s, &err);
    } else if (kind == K_MEMORY) {
        rc = store_open_memory(&s, &err);
#ifdef CLARITY_WITH_REDIS
    } else if (kind == K_REDIS) {
        rc = open_redis(&s, &err);
#endif
    } else {
        rc = store_open_host(&g_host, &s, &err);
    }
    cr_assert_eq(rc, CLARITY_OK, "open failed: %s", err ? err : "(no message)");
    cr_assert_null(err);
    cr_assert_not_null(s);
    static const char *const names[] = {"sqlite", "memory", "host", "redis", "sqlite"};
    cr_assert_str_eq(store_backend_name(s), names[kind]);
    return s;
}

/* ---- helpers --------------------------------------------------------------- */

static void put_s(store *s, const char *ns, const char *key, const char *val)
{
    int rc = store_put(s, ns, key, val, strlen(val));
    cr_assert_eq(rc, CLARITY_OK, "put %s/%s: %d %s", ns, key, rc, store_errmsg(s));
}

static void expect_val(store *s, const char *ns, const char *key, const char *want)
{
    char *v = NULL;
    size_t n = 0;
    int rc = store_get(s, ns, key, &v, &n);
    cr_assert_eq(rc, CLARITY_OK, "get %s/%s: %d %s", ns, key, rc, store_errmsg(s));
    cr_assert_eq(n, strlen(want), "get %s/%s: length %zu, want %zu", ns, key, n, strlen(want));
    cr_assert_eq(memcmp(v, want, n), 0, "get %s/%s: '%s', want '%s'", ns, key, v, want);
    cr_assert_eq(v[n], '\0');
    free(v);
}

static void expect_missing(store *s, const char *ns, const char *key)
{
    char *v = (char *)"x";
    size_t n = 7;
    cr_assert_eq(store_get(s, ns, key, &v, &n), CLARITY_ENOTFOUND, "%s/%s should be missing", ns,
                 key);
    cr_assert_null(v);
    cr_assert_eq(n, 0);
    /* the message names the key and the namespace, cut as printf cuts */
    char want[600];
    snprintf(want, sizeof want, "store: no key '%s' in namespace '%s'", key, ns);
    want[STORE_ERR_MAX - 1] = '\0';
    cr_assert_str_eq(store_errmsg(s), want);
}

/* Collects "key=val;" of an iteration, stopping after `stop_after` keys. */
typedef struct acc {
    char text[8192];
    int count;
    int stop_after;
} acc;

static int acc_cb(void *ud, const char *key, const char *val, size_t len)
{
    acc *a = ud;
    size_t l = strlen(a->text);
    snprintf(a->text + l, sizeof a->text - l, "%s=%.*s;", key, (int)len, val);
    a->count++;
    return a->stop_after && a->count >= a->stop_after;
}

static const char *iter_text(store *s, const char *ns, const char *prefix, int stop_after,
                             acc *a)
{
    memset(a, 0, sizeof *a);
    a->stop_after = stop_after;
    int rc = store_iter(s, ns, prefix, acc_cb, a);
    cr_assert_eq(rc, CLARITY_OK, "iter: %d %s", rc, store_errmsg(s));
    return a->text;
}

/* ---- checks shared by all backends ---------------------------------------- */

static void check_basic(store *s)
{
    expect_missing(s, "ns", "a");
    put_s(s, "ns", "a", "one");
    expect_val(s, "ns", "a", "one");
    put_s(s, "ns", "a", "two"); /* overwrite */
    expect_val(s, "ns", "a", "two");
    put_s(s, "other", "a", "elsewhere"); /* same key, other namespace */
    expect_val(s, "ns", "a", "two");
    expect_val(s, "other", "a", "elsewhere");
    cr_assert_eq(store_del(s, "ns", "a"), CLARITY_OK);
    expect_missing(s, "ns", "a");
    expect_val(s, "other", "a", "elsewhere");
    cr_assert_eq(store_del(s, "ns", "a"), CLARITY_OK, "del of a missing key is idempotent");
    cr_assert_eq(store_del(s, "nope", "nope"), CLARITY_OK);
    /* Empty key, empty value. */
    cr_assert_eq(store_put(s, "ns", "", "", 0), CLARITY_OK);
    expect_val(s, "ns", "", "");
    cr_assert_eq(store_put(s, "ns", "e", NULL, 0), CLARITY_OK);
    expect_val(s, "ns", "e", "");
    /* Bad arguments. */
    char *v;
    size_t n;
    cr_assert_eq(store_put(s, "ns", "x", NULL, 3), CLARITY_EINVAL);
    cr_assert_eq(store_get(s, NULL, "x", &v, &n), CLARITY_EINVAL);
    cr_assert_eq(store_del(s, "ns", NULL), CLARITY_EINVAL);
    cr_assert_eq(store_iter(s, "ns", "", NULL, NULL), CLARITY_EINVAL);
    cr_assert(strstr(store_errmsg(s), "NULL") != NULL, "errmsg: %s", store_errmsg(s));
    cr_assert_eq(store_get(NULL, "ns", "x", &v, &n), CLARITY_EINVAL);
}

static void check_iter(store *s)
{
    static const char *const keys[] = {"i:zeta", "i:alpha", "m", "i:beta", "i:",     "i;x",
                                       "h",      "i:Beta",  "i:alpha2", "i:\xc3\xa9t\xc3\xa9"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) put_s(s, "it", keys[i], keys[i]);
    put_s(s, "it2", "i:aaa", "other ns");
    put_s(s, "i", "t:x", "ns prefix of another ns");
    acc a;
    /* Bytewise order: 'B' < 'a' < 'b' < 'z' < 0xC3. */
    cr_assert_str_eq(iter_text(s, "it", "i:", 0, &a),
                     "i:=i:;i:Beta=i:Beta;i:alpha=i:alpha;i:alpha2=i:alpha2;i:beta=i:beta;"
                     "i:zeta=i:zeta;i:\xc3\xa9t\xc3\xa9=i:\xc3\xa9t\xc3\xa9;");
    cr_assert_eq(a.count, 7);
    cr_assert_str_eq(iter_text(s, "it", "", 0, &a),
                     "h=h;i:=i:;i:Beta=i:Beta;i:alpha=i:alpha;i:alpha2=i:alpha2;i:beta=i:beta;"
                     "i:zeta=i:zeta;i:\xc3\xa9t\xc3\xa9=i:\xc3\xa9t\xc3\xa9;i;x=i;x;m=m;");
    cr_assert_eq(a.count, 10);
    cr_assert_str_eq(iter_text(s, "it", "i:alpha", 0, &a), "i:alpha=i:alpha;i:alpha2=i:alpha2;");
    /* Stop: the callback's non-zero return ends the walk with CLARITY_OK. */
    cr_assert_str_eq(iter_text(s, "it", "i:", 2, &a), "i:=i:;i:Beta=i:Beta;");
    cr_assert_eq(a.count, 2);
    cr_assert_str_eq(iter_text(s, "it", "i:alpha", 1, &a), "i:alpha=i:alpha;");
    cr_assert_str_eq(iter_text(s, "it", "q", 0, &a), "");
    cr_assert_eq(a.count, 0);
    cr_assert_str_eq(iter_text(s, "nothing", "", 0, &a), "");
    /* NULL prefix means all keys. */
    memset(&a, 0, sizeof a);
    cr_assert_eq(store_iter(s, "it2", NULL, acc_cb, &a), CLARITY_OK);
    cr_assert_str_eq(a.text, "i:aaa=other ns;");
}

/* Prefixes ending in 0xFF bytes have no simple successor. */
static void check_iter_high_bytes(store *s)
{
    static const char *const keys[] = {"a\xff", "a\xff\xff", "a\xff" "b", "b", "a", "a\xfe",
                                       "\xff",  "\xff\xff",  "\xff" "a", "\x01", "a\x01"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) put_s(s, "hb", keys[i], "v");
    acc a;
    cr_assert_str_eq(iter_text(s, "hb", "a\xff", 0, &a), "a\xff=v;a\xff" "b=v;a\xff\xff=v;");
    cr_assert_str_eq(iter_text(s, "hb", "\xff", 0, &a), "\xff=v;\xff" "a=v;\xff\xff=v;");
    cr_assert_str_eq(iter_text(s, "hb", "\xff\xff", 0, &a), "\xff\xff=v;");
    cr_assert_str_eq(iter_text(s, "hb", "a", 0, &a),
                     "a=v;a\x01=v;a\xfe=v;a\xff=v;a\xff" "b=v;a\xff\xff=v;");
    cr_assert_str_eq(iter_text(s, "hb", "\x01", 0, &a), "\x01=v;");
    memset(&a, 0, sizeof a);
    cr_assert_eq(store_iter(s, "hb", "", acc_cb, &a), CLARITY_OK);
    cr_assert_eq(a.count, 11);
}

static void check_del_ns(store *s)
{
    char k[32];
    for (int i = 0; i < 50; i++) {
        snprintf(k, sizeof k, "k%02d", i);
        put_s(s, "gone", k, k);
        put_s(s, "kept", k, k);
    }
    put_s(s, "gone2", "k", "prefix-sharing namespace");
    cr_assert_eq(store_del_ns(s, "gone"), CLARITY_OK, "%s", store_errmsg(s));
    acc a;
    iter_text(s, "gone", "", 0, &a);
    cr_assert_eq(a.count, 0);
    iter_text(s, "kept", "", 0, &a);
    cr_assert_eq(a.count, 50);
    expect_missing(s, "gone", "k07");
    expect_val(s, "kept", "k07", "k07");
    expect_val(s, "gone2", "k", "prefix-sharing namespace");
    cr_assert_eq(store_del_ns(s, "gone"), CLARITY_OK, "deleting an empty namespace is fine");
    cr_assert_eq(store_del_ns(s, "never"), CLARITY_OK);
}

typedef struct bin_seen {
    size_t nul_len, big_len;
    int nul_ok, big_ok;
    const char *big;
} bin_seen;

static const char k_bin[] = {'a', 0, 'b', 0, 0, (char)0xff, 'c'};

static int bin_cb(void *ud, const char *key, const char *val, size_t len)
{
    bin_seen *seen = ud;
    if (strcmp(key, "nul") == 0) {
        seen->nul_len = len;
        seen->nul_ok = len == sizeof k_bin && memcmp(val, k_bin, len) == 0;
    } else if (strcmp(key, "big") == 0) {
        seen->big_len = len;
        seen->big_ok = memcmp(val, seen->big, len) == 0;
    }
    return 0;
}

static void check_binary_values(store *s)
{
    const char *bin = k_bin;
    cr_assert_eq(store_put(s, "b", "nul", bin, sizeof k_bin), CLARITY_OK);
    char *v = NULL;
    size_t n = 0;
    cr_assert_eq(store_get(s, "b", "nul", &v, &n), CLARITY_OK);
    cr_assert_eq(n, sizeof k_bin);
    cr_assert_eq(memcmp(v, bin, n), 0);
    cr_assert_eq(v[n], '\0');
    free(v);

    size_t big = 1u << 20;
    char *p = malloc(big);
    cr_assert_not_null(p);
    for (size_t i = 0; i < big; i++) p[i] = (char)((i * 7 + i / 251) & 0xff);
    cr_assert_eq(store_put(s, "b", "big", p, big), CLARITY_OK, "%s", store_errmsg(s));
    cr_assert_eq(store_get(s, "b", "big", &v, &n), CLARITY_OK);
    cr_assert_eq(n, big);
    cr_assert_eq(memcmp(v, p, big), 0);
    cr_assert_eq(v[n], '\0');
    free(v);

    /* Iteration hands values over with their length, NULs included. */
    bin_seen seen = {0, 0, 0, 0, p};
    cr_assert_eq(store_iter(s, "b", "", bin_cb, &seen), CLARITY_OK);
    cr_assert_eq(seen.nul_len, sizeof k_bin);
    cr_assert(seen.nul_ok);
    cr_assert_eq(seen.big_len, big);
    cr_assert(seen.big_ok);
    free(p);
}


static void check_rollback(store *s)
{
    put_s(s, "r", "keep", "old");
    put_s(s, "r", "doomed", "still here");
    put_s(s, "r2", "x", "ns survives");
    cr_assert_eq(store_begin(s), CLARITY_OK, "%s", store_errmsg(s));
    put_s(s, "r", "keep", "new");
    put_s(s, "r", "fresh", "1");
    put_s(s, "r", "fresh", "2");
    cr_assert_eq(store_del(s, "r", "doomed"), CLARITY_OK);
    cr_assert_eq(store_del_ns(s, "r2"), CLARITY_OK);
    /* Reads inside the transaction see its writes. */
    expect_val(s, "r", "keep", "new");
    expect_val(s, "r", "fresh", "2");
    expect_missing(s, "r", "doomed");
    expect_missing(s, "r2", "x");
    acc a;
    cr_assert_str_eq(iter_text(s, "r", "", 0, &a), "fresh=2;keep=new;");
    store_rollback(s);
    expect_val(s, "r", "keep", "old");
    expect_missing(s, "r", "fresh");
    expect_val(s, "r", "doomed", "still here");
    expect_val(s, "r2", "x", "ns survives");
    cr_assert_str_eq(iter_text(s, "r", "", 0, &a), "doomed=still here;keep=old;");

    /* Commit keeps them. */
    cr_assert_eq(store_begin(s), CLARITY_OK);
    put_s(s, "r", "keep", "committed");
    cr_assert_eq(store_del(s, "r", "doomed"), CLARITY_OK);
    cr_assert_eq(store_commit(s), CLARITY_OK, "%s", store_errmsg(s));
    expect_val(s, "r", "keep", "committed");
    expect_missing(s, "r", "doomed");

    /* Misuse: nested begin, commit/rollback without a transaction. */
    cr_assert_eq(store_begin(s), CLARITY_OK);
    cr_assert_eq(store_begin(s), CLARITY_EINVAL);
    cr_assert(strstr(store_errmsg(s), "already") != NULL, "%s", store_errmsg(s));
    put_s(s, "r", "after-nested", "ok"); /* still inside the first transaction */
    cr_assert_eq(store_commit(s), CLARITY_OK);
    expect_val(s, "r", "after-nested", "ok");
    cr_assert_eq(store_commit(s), CLARITY_EINVAL);
    store_rollback(s); /* harmless */
    expect_val(s, "r", "keep", "committed");
}

/* Randomized: many writes in a transaction, rolled back, leave the exact
 * previous content. */
static void dump_all(store *s, const char *ns, acc *a) { iter_text(s, ns, "", 0, a); }

static void check_rollback_random(store *s)
{
    char k[16], v[16];
    unsigned x = 12345;
    for (int i = 0; i < 60; i++) {
        snprintf(k, sizeof k, "k%02u", (x = x * 1103515245u + 12345u) % 80);
        snprintf(v, sizeof v, "v%d", i);
        put_s(s, "rr", k, v);
    }
    acc before, after;
    dump_all(s, "rr", &before);
    cr_assert_gt(before.count, 20);
    cr_assert_eq(store_begin(s), CLARITY_OK);
    for (int i = 0; i < 300; i++) {
        x = x * 1103515245u + 12345u;
        snprintf(k, sizeof k, "k%02u", (x >> 8) % 80);
        switch ((x >> 4) % 7) {
        case 0: cr_assert_eq(store_del(s, "rr", k), CLARITY_OK); break;
        case 1:
            if (i % 50 == 0) cr_assert_eq(store_del_ns(s, "rr"), CLARITY_OK);
            break;
        default:
            snprintf(v, sizeof v, "t%d", i);
            put_s(s, "rr", k, v);
        }
    }
    store_rollback(s);
    dump_all(s, "rr", &after);
    cr_assert_eq(after.count, before.count);
    cr_assert_str_eq(after.text, before.text);
}

/* A callback may call back into the store from the iterating thread. */
typedef struct reenter {
    store *s;
    int seen;
    int errors;
} reenter;

static int reenter_cb(void *ud, const char *key, const char *val, size_t len)
{
    reenter *r = ud;
    char *v = NULL;
    size_t n = 0;
    if (store_get(r->s, "re", key, &v, &n) != CLARITY_OK || n != len || memcmp(v, val, n))
        r->errors++;
    free(v);
    if (store_put(r->s, "re-copy", key, val, len) != CLARITY_OK) r->errors++;
    if (strcmp(key, "b") == 0 && store_del(r->s, "re", "b") != CLARITY_OK) r->errors++;
    acc a;
    memset(&a, 0, sizeof a);
    if (store_iter(r->s, "re", "a", acc_cb, &a) != CLARITY_OK) r->errors++;
    r->seen++;
    return 0;
}

static void check_reentrant(store *s)
{
    put_s(s, "re", "a", "1");
    put_s(s, "re", "b", "2");
    put_s(s, "re", "c", "3");
    reenter r = {s, 0, 0};
    cr_assert_eq(store_iter(s, "re", "", reenter_cb, &r), CLARITY_OK);
    cr_assert_eq(r.errors, 0);
    cr_assert_eq(r.seen, 3);
    acc a;
    cr_assert_str_eq(iter_text(s, "re-copy", "", 0, &a), "a=1;b=2;c=3;");
    cr_assert_str_eq(iter_text(s, "re", "", 0, &a), "a=1;c=3;");
    /* The same inside a transaction. */
    cr_assert_eq(store_begin(s), CLARITY_OK);
    r.seen = 0;
    cr_assert_eq(store_iter(s, "re", "", reenter_cb, &r), CLARITY_OK);
    cr_assert_eq(store_commit(s), CLARITY_OK);
    cr_assert_eq(r.errors, 0);
    cr_assert_eq(r.seen, 2);
}

typedef struct many_state {
    int next, bad;
} many_state;

static int many_cb(void *ud, const char *key, const char *val, size_t len)
{
    many_state *st = ud;
    char k[32], v[32];
    snprintf(k, sizeof k, "p:%05d", st->next);
    snprintf(v, sizeof v, "%d", st->next * 3);
    if (strcmp(key, k) || len != strlen(v) || memcmp(val, v, len)) st->bad++;
    st->next++;
    return 0;
}

/* Many pages of iteration (more than any internal page size). */
static void check_iter_many(store *s)
{
    char k[32], v[32];
    cr_assert_eq(store_begin(s), CLARITY_OK);
    for (int i = 2999; i >= 0; i--) {
        snprintf(k, sizeof k, "p:%05d", i);
        snprintf(v, sizeof v, "%d", i * 3);
        put_s(s, "many", k, v);
    }
    cr_assert_eq(store_commit(s), CLARITY_OK);
    many_state st = {0, 0};
    cr_assert_eq(store_iter(s, "many", "p:", many_cb, &st), CLARITY_OK);
    cr_assert_eq(st.bad, 0);
    cr_assert_eq(st.next, 3000);
}


/* 4 writer threads x 1000 keys in transactions of 10, and a reader that
 * must only ever see whole transactions. */
#define N_THREADS 4
#define N_KEYS 1000
#define BATCH 10

typedef struct worker {
    store *s;
    int id;
    int errors;
    atomic_int *stop;
} worker;

static void *writer(void *arg)
{
    worker *w = arg;
    char k[32], v[32];
    for (int j = 0; j < N_KEYS; j++) {
        if (j % BATCH == 0 && store_begin(w->s) != CLARITY_OK) w->errors++;
        snprintf(k, sizeof k, "t%d:%04d", w->id, j);
        snprintf(v, sizeof v, "v%d.%d", w->id, j);
        if (store_put(w->s, "conc", k, v, strlen(v)) != CLARITY_OK) w->errors++;
        char *got = NULL;
        size_t n = 0;
        if (store_get(w->s, "conc", k, &got, &n) != CLARITY_OK || n != strlen(v) ||
            memcmp(got, v, n) != 0)
            w->errors++;
        free(got);
        if (j % BATCH == BATCH - 1 && store_commit(w->s) != CLARITY_OK) w->errors++;
    }
    return NULL;
}

static int count_cb(void *ud, const char *key, const char *val, size_t len)
{
    (*(int *)ud)++;
    return 0;
}

static void *reader(void *arg)
{
    worker *w = arg;
    int rounds = 0;
    while (!atomic_load(w->stop) || rounds < 3) {
        int n = 0;
        if (store_iter(w->s, "conc", "", count_cb, &n) != CLARITY_OK) w->errors++;
        if (n % BATCH != 0) w->errors++; /* saw half a transaction */
        rounds++;
    }
    return NULL;
}

typedef struct verify {
    int count, bad;
} verify;

static int verify_cb(void *ud, const char *key, const char *val, size_t len)
{
    verify *c = ud;
    int t, j;
    char v[32];
    if (sscanf(key, "t%d:%d", &t, &j) != 2) {
        c->bad++;
        return 0;
    }
    snprintf(v, sizeof v, "v%d.%d", t, j);
    if (len != strlen(v) || memcmp(val, v, len)) c->bad++;
    c->count++;
    return 0;
}

static void check_concurrent(store *s)
{
    pthread_t th[N_THREADS + 1];
    worker w[N_THREADS + 1];
    atomic_int stop = 0;
    for (int i = 0; i <= N_THREADS; i++) {
        w[i] = (worker){s, i, 0, &stop};
        cr_assert_eq(pthread_create(&th[i], NULL, i < N_THREADS ? writer : reader, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
    atomic_store(&stop, 1);
    pthread_join(th[N_THREADS], NULL);
    for (int i = 0; i <= N_THREADS; i++) cr_assert_eq(w[i].errors, 0, "thread %d errors", i);
    verify c = {0, 0};
    cr_assert_eq(store_iter(s, "conc", "", verify_cb, &c), CLARITY_OK);
    cr_assert_eq(c.count, N_THREADS * N_KEYS);
    cr_assert_eq(c.bad, 0);
    for (int i = 0; i < N_THREADS; i++) {
        char k[32], v[32];
        snprintf(k, sizeof k, "t%d:%04d", i, N_KEYS - 1);
        snprintf(v, sizeof v, "v%d.%d", i, N_KEYS - 1);
        expect_val(s, "conc", k, v);
    }
}

/* A transaction holds the store: another thread's call waits for commit. */
typedef struct blocked {
    store *s;
    atomic_int done;
    int rc;
} blocked;

static void *blocked_put(void *arg)
{
    blocked *b = arg;
    b->rc = store_put(b->s, "lock", "other", "x", 1);
    atomic_store(&b->done, 1);
    return NULL;
}

static void check_txn_excludes(store *s)
{
    cr_assert_eq(store_begin(s), CLARITY_OK);
    blocked b = {s, 0, -99};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, blocked_put, &b), 0);
    usleep(100 * 1000);
    cr_assert_eq(atomic_load(&b.done), 0, "a put from another thread ran inside the transaction");
    put_s(s, "lock", "mine", "y");
    cr_assert_eq(store_commit(s), CLARITY_OK);
    pthread_join(t, NULL);
    cr_assert_eq(atomic_load(&b.done), 1);
    cr_assert_eq(b.rc, CLARITY_OK);
    expect_val(s, "lock", "other", "x");
    expect_val(s, "lock", "mine", "y");
}

static void *miss_other(void *arg)
{
    char *v = NULL;
    size_t n = 0;
    store_get(arg, "em", "other-thread", &v, &n);
    return strstr(store_errmsg(arg), "'other-thread'") ? arg : NULL;
}

static void check_errmsg(store *s)
{
    /* a key too long for the message: cut at STORE_ERR_MAX - 1 bytes */
    char long_key[700];
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = '\0';
    expect_missing(s, "em", long_key);
    expect_missing(s, "em", "nothing");
    /* Another thread's failure does not replace this thread's message. */
    pthread_t t;
    void *ok = NULL;
    cr_assert_eq(pthread_create(&t, NULL, miss_other, s), 0);
    pthread_join(t, &ok);
    cr_assert_eq(ok, s, "the other thread sees its own message");
    cr_assert(strstr(store_errmsg(s), "'nothing'") && strstr(store_errmsg(s), "'em'"), "%s",
              store_errmsg(s));
    cr_assert_str_eq(store_errmsg(NULL), "no store");
}

#define BACKEND_TESTS(kname, K)                                                                   \
    Test(store, kname##_basic)                                                                    \
    {                                                                                             \
        store *s = open_kind(K);                                                                  \
        check_basic(s);                                                                           \
        check_errmsg(s);                                                                          \
        store_close(s);                                                                           \
    }                                                                                             \
    Test(store, kname##_iter)                                                                     \
    {                                                                                             \
        store *s = open_kind(K);                                                                  \
        check_iter(s);                                                                            \
        check_iter_high_bytes(s);                                                                 \
        check_iter_many(s);                                                                       \
        store_close(s);                                                                           \
    }                                                                                             \
    Test(store, kname##_del_ns)                                                                   \
    {                                                                                             \
        store *s = open_kind(K);                                                                  \
        check_del_ns(s);                                                                          \
        store_close(s);                                                                           \
    }                                                                                             \
    Test(store, kname##_binary_and_large_values)                                                  \
    {                                                                                             \
        store *s = open_kind(K);                                                                  \
        check_binary_values(s);                                                                   \
        store_close(s);                                                                           \
    }                                                                                             \
    Test(store, kname##_transactions)                                                             \
    {                                                                                             \
        store *s = open_kind(K);                                                                  \
        check_rollback(s);                                                                        \
        check_rollback_random(s);                                                                 \
        check_txn_excludes(s);                                                                    \
        store_close(s);                                                                           \
    }                                                                                             \
    Test(store, kname##_reentrant_callbacks)                                                      \
    {                                                                                             \
        store *s = open_kind(K);                                                                  \
        check_reentrant(s);                                                                       \
        store_close(s);                                                                           \
    }                                                                                             \
    Test(store, kname##_concurrent)                                                               \
    {                                                                                             \
        store *s = open_kind(K);                                                                  \
        check_concurrent(s);                                                                      \
        store_close(s);                                                                           \
    }

BACKEND_TESTS(sqlite, K_SQLITE)
BACKEND_TESTS(sqlite_exclusive, K_SQLITE_EXCL) /* storage.exclusive */
BACKEND_TESTS(memory, K_MEMORY)
BACKEND_TESTS(host, K_HOST)
#ifdef CLARITY_WITH_REDIS
BACKEND_TESTS(redis, K_REDIS) /* against a real redis-server */
#endif

/* ---- sqlite only ---------------------------------------------------------- */

static store *open_sqlite_at(const char *path)
{
    store *s = NULL;
    char *err = NULL;
    int rc = store_open_sqlite(path, 0, &s, &err);
    cr_assert_eq(rc, CLARITY_OK, "open %s: %s", path, err ? err : "");
    return s;
}

/* Runs one SQL statement on the file directly; returns the first column of
 * the first row (static buffer) or "". */
static const char *sql1(const char *path, const char *sql)
{
    static char out[256];
    sqlite3 *db = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(db));
    out[0] = '\0';
    int rc = sqlite3_step(st);
    cr_assert(rc == SQLITE_ROW || rc == SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(db));
    if (rc == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, sizeof out, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

Test(store, sqlite_persists_across_reopen)
{
    char p[128];
    path_in_dir(p, sizeof p, "persist.db");
    store *s = open_sqlite_at(p);
    put_s(s, "p", "plain", "autocommitted");
    cr_assert_eq(store_begin(s), CLARITY_OK);
    put_s(s, "p", "turn", "7");
    put_s(s, "p", "item", "seven");
    cr_assert_eq(store_commit(s), CLARITY_OK);
    cr_assert_eq(store_begin(s), CLARITY_OK);
    put_s(s, "p", "turn", "8");
    put_s(s, "p", "ghost", "rolled back");
    store_rollback(s);
    cr_assert_eq(store_begin(s), CLARITY_OK);
    put_s(s, "p", "open", "left open at close");
    store_close(s); /* an open transaction is rolled back, not committed */

    s = open_sqlite_at(p);
    expect_val(s, "p", "plain", "autocommitted");
    expect_val(s, "p", "turn", "7");
    expect_val(s, "p", "item", "seven");
    expect_missing(s, "p", "ghost");
    expect_missing(s, "p", "open");
    store_close(s);

    /* The file is in WAL mode, with the schema version recorded. */
    cr_assert_str_eq(sql1(p, "PRAGMA journal_mode"), "wal");
    cr_assert_str_eq(sql1(p, "SELECT v FROM meta WHERE k='schema_version'"), "2");
    cr_assert_str_eq(sql1(p, "SELECT count(*) FROM kv WHERE ns='p'"), "3");
}

Test(store, sqlite_memory_path)
{
    store *s = open_sqlite_at(":memory:");
    cr_assert_str_eq(store_backend_name(s), "sqlite");
    check_basic(s);
    check_rollback(s);
    store_close(s);
}

Test(store, sqlite_invalid_path_fails)
{
    store *s = (store *)&s; /* must be reset */
    char *err = NULL;
    int rc = store_open_sqlite("/nonexistent/dir/x.db", 0, &s, &err);
    cr_assert_eq(rc, CLARITY_ESTORE);
    cr_assert_null(s);
    cr_assert_not_null(err);
    cr_assert(strstr(err, "/nonexistent/dir/x.db") != NULL, "%s", err);
    cr_assert(strstr(err, "unable to open database file") != NULL, "%s", err);
    free(err);
    /* err may be NULL. */
    cr_assert_eq(store_open_sqlite("/nonexistent/dir/x.db", 0, &s, NULL), CLARITY_ESTORE);
    cr_assert_eq(store_open_sqlite("", 0, &s, NULL), CLARITY_EINVAL);
    struct stat sb;
    cr_assert_neq(stat("/nonexistent/dir", &sb), 0, "no directory was created");
}

Test(store, sqlite_not_a_database_fails)
{
    char p[128];
    path_in_dir(p, sizeof p, "garbage.db");
    char junk[8192];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)("not a database, just text "[i % 26]);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(junk, 1, sizeof junk, f), sizeof junk);
    fclose(f);

    store *s = NULL;
    char *err = NULL;
    cr_assert_eq(store_open_sqlite(p, 0, &s, &err), CLARITY_ESTORE);
    cr_assert_null(s);
    cr_assert_not_null(err);
    cr_assert(strstr(err, p) != NULL, "%s", err);
    cr_assert(strstr(err, "not a database") != NULL, "%s", err);
    free(err);

    /* The file was left alone. */
    char back[sizeof junk + 16];
    f = fopen(p, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fread(back, 1, sizeof back, f), sizeof junk);
    fclose(f);
    cr_assert_eq(memcmp(back, junk, sizeof junk), 0);
}

Test(store, sqlite_newer_schema_refused)
{
    char p[128];
    path_in_dir(p, sizeof p, "future.db");
    store_close(open_sqlite_at(p));
    sql1(p, "UPDATE meta SET v='99' WHERE k='schema_version'");
    store *s = NULL;
    char *err = NULL;
    cr_assert_eq(store_open_sqlite(p, 0, &s, &err), CLARITY_ESTORE);
    cr_assert_null(s);
    cr_assert(err && strstr(err, "schema version 99") && strstr(err, p), "%s", err);
    free(err);
}

/* A file at this build's schema version opens without a write
 * transaction (a Claude Code hook process opens the store at every
 * event): it opens while another connection holds the write lock, where
 * the schema transaction waited out the busy timeout and failed.  A file
 * that lost a table takes the transaction and has the table made again. */
Test(store, sqlite_a_current_file_opens_without_the_write_lock, .timeout = 60)
{
    char p[128];
    path_in_dir(p, sizeof p, "current.db");
    store *s = open_sqlite_at(p);
    put_s(s, "n", "k", "v");
    put_s(s, "n", "l:0001", "slot one");
    store_close(s);

    sqlite3 *w = NULL;
    cr_assert_eq(sqlite3_open(p, &w), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(w, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    char *err = NULL;
    s = NULL;
    int rc = store_open_sqlite(p, 0, &s, &err);
    cr_assert_eq(rc, CLARITY_OK, "open with the write lock held elsewhere: %s", err ? err : "");
    expect_val(s, "n", "k", "v");
    expect_val(s, "n", "l:0001", "slot one");
    store_close(s);
    cr_assert_eq(sqlite3_exec(w, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(w);

    /* the ring's table dropped behind the store's back: made again at open */
    sql1(p, "DROP TABLE ring");
    s = open_sqlite_at(p);
    expect_val(s, "n", "k", "v");
    expect_missing(s, "n", "l:0001");
    put_s(s, "n", "l:0002", "slot two");
    expect_val(s, "n", "l:0002", "slot two");
    store_close(s);
    cr_assert_str_eq(sql1(p, "SELECT count(*) FROM ring"), "1");
    cr_assert_str_eq(sql1(p, "SELECT v FROM meta WHERE k='schema_version'"), "2");
}

/* ---- turn-log slots (store/sqlite_ring.h) ---- */

/* A value of n bytes, byte i = (i * 7 + seed) & 0xff, zeros included. */
static char *pattern(size_t n, unsigned seed)
{
    char *v = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) v[i] = (char)((i * 7 + seed) & 0xff);
    return v;
}

static void expect_bytes(store *s, const char *ns, const char *key, const char *want, size_t n)
{
    char *v = NULL;
    size_t len = 0;
    int rc = store_get(s, ns, key, &v, &len);
    cr_assert_eq(rc, CLARITY_OK, "get %s/%s: %d %s", ns, key, rc, store_errmsg(s));
    cr_assert_eq(len, n, "get %s/%s: %zu bytes, want %zu", ns, key, len, n);
    cr_assert_eq(memcmp(v, want, n), 0, "get %s/%s: other bytes", ns, key);
    free(v);
}

/* The size of the file at path, -1 when there is none. */
static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* A close leaves a small WAL for the next process (no checkpoint, so none
 * of its fsyncs, and the next commit appends: no new WAL to sync either),
 * whose open reads it back; a close after the WAL grew past 64 pages
 * checkpoints it into the database and removes it, as SQLite's own close
 * does. */
Test(store, sqlite_a_small_wal_stays_at_close_and_a_large_one_is_checkpointed, .timeout = 60)
{
    char p[128], wal[160];
    path_in_dir(p, sizeof p, "keep.db");
    snprintf(wal, sizeof wal, "%s-wal", p);
    store *s = open_sqlite_at(p);
    put_s(s, "n", "k", "v");
    store_close(s);
    long kept = file_size(wal);
    cr_assert_gt(kept, 0L, "the WAL of one small commit was not left at close (%ld)", kept);
    s = open_sqlite_at(p);
    expect_val(s, "n", "k", "v");
    put_s(s, "n", "k2", "v2");
    store_close(s);
    cr_assert_gt(file_size(wal), kept, "the next process's commit did not append to the WAL");

    /* 80 commits of a 3,000-byte value: past 64 pages */
    s = open_sqlite_at(p);
    char *big = pattern(3000, 1);
    for (int i = 0; i < 80; i++) {
        char key[16];
        snprintf(key, sizeof key, "b:%02d", i);
        cr_assert_eq(store_put(s, "n", key, big, 3000), CLARITY_OK, "%s", store_errmsg(s));
    }
    store_close(s);
    cr_assert_lt(file_size(wal), 1L, "a WAL past 64 pages was left at close (%ld bytes)", file_size(wal));
    s = open_sqlite_at(p);
    expect_val(s, "n", "k", "v");
    expect_val(s, "n", "k2", "v2");
    expect_bytes(s, "n", "b:79", big, 3000);
    store_close(s);
    free(big);
}

static long sql_long(const char *p, const char *sql) { return strtol(sql1(p, sql), NULL, 10); }

/* Slot keys ("l:" and four lower-case hex digits) are rows of the ring
 * table; every call sees them as keys like the others, with their exact
 * bytes (the cell's padding never shows), and other keys stay in kv. */
Test(store, sqlite_slots_are_keys_like_the_others)
{
    char p[128];
    path_in_dir(p, sizeof p, "slots.db");
    store *s = open_sqlite_at(p);
    char *big = pattern(6000, 1); /* past a page: an overflow page */
    put_s(s, "n", "l:0001", "one");
    cr_assert_eq(store_put(s, "n", "l:00ff", big, 6000), CLARITY_OK, "%s", store_errmsg(s));
    cr_assert_eq(store_put(s, "n", "l:0002", "", 0), CLARITY_OK, "%s", store_errmsg(s));
    put_s(s, "n", "item", "row");
    put_s(s, "n", "l:00FF", "upper case: a kv key");
    put_s(s, "n", "l:001", "three digits: a kv key");
    put_s(s, "m", "l:0001", "another namespace");
    expect_val(s, "n", "l:0001", "one");
    expect_bytes(s, "n", "l:00ff", big, 6000);
    expect_val(s, "n", "l:0002", "");
    expect_val(s, "m", "l:0001", "another namespace");
    expect_missing(s, "n", "l:0003");
    expect_missing(s, "nobody", "l:0001");
    acc a;
    iter_text(s, "n", "", 0, &a);
    cr_assert_eq(a.count, 6, "%s", a.text);
    cr_assert(strstr(a.text, "l:0001=one;") && strstr(a.text, "l:0002=;") && strstr(a.text, "item=row;"), "%s",
              a.text);
    iter_text(s, "n", "l:", 0, &a);
    cr_assert_eq(a.count, 5, "%s", a.text);
    iter_text(s, "n", "l:00f", 0, &a);
    cr_assert_eq(a.count, 1, "%s", a.text);
    cr_assert(strncmp(a.text, "l:00ff=", 7) == 0, "%s", a.text);
    iter_text(s, "n", "l:01", 0, &a);
    cr_assert_eq(a.count, 0, "%s", a.text);
    iter_text(s, "n", "l:", 1, &a); /* a callback that stops */
    cr_assert_eq(a.count, 1, "%s", a.text);
    cr_assert_eq(sql_long(p, "SELECT count(*) FROM ring"), 4);
    cr_assert_eq(sql_long(p, "SELECT count(*) FROM kv WHERE ns='n'"), 3);

    cr_assert_eq(store_del(s, "n", "l:0001"), CLARITY_OK);
    cr_assert_eq(store_del(s, "n", "l:0001"), CLARITY_OK); /* gone already */
    expect_missing(s, "n", "l:0001");
    cr_assert_eq(store_del_ns(s, "n"), CLARITY_OK);
    expect_missing(s, "n", "l:00ff");
    iter_text(s, "n", "", 0, &a);
    cr_assert_eq(a.count, 0, "%s", a.text);
    expect_val(s, "m", "l:0001", "another namespace");
    cr_assert_eq(sql_long(p, "SELECT count(*) FROM ring"), 1);
    store_close(s);
    s = open_sqlite_at(p); /* the numbers of namespaces are the file's */
    expect_val(s, "m", "l:0001", "another namespace");
    put_s(s, "n", "l:0001", "back");
    expect_val(s, "n", "l:0001", "back");
    store_close(s);
    free(big);
}

/* Puts n bytes (pattern seed) in turn-log slot k of namespace "r" and
 * reads them back. */
static void put_slot_back(store *s, int k, size_t n, unsigned seed)
{
    char key[8];
    snprintf(key, sizeof key, "l:%04x", k & 0xffff);
    char *w = pattern(n, seed);
    cr_assert_eq(store_put(s, "r", key, w, n), CLARITY_OK, "%s", store_errmsg(s));
    expect_bytes(s, "r", key, w, n);
    free(w);
}

/* Rewriting a slot with a value its cell holds (down to about half of it)
 * keeps the cell: no page is allocated or freed, so a turn's commit writes
 * the slot's pages and nothing else.  A value past the cell moves to a
 * larger one and reads back whole. */
Test(store, sqlite_a_slot_is_rewritten_in_place)
{
    char p[128];
    path_in_dir(p, sizeof p, "inplace.db");
    store *s = open_sqlite_at(p);
    char *v = pattern(12000, 3);
    for (int k = 0; k < 8; k++) { /* four slots in a part of a page, four of two pages */
        char key[8];
        snprintf(key, sizeof key, "l:%04x", k);
        cr_assert_eq(store_put(s, "r", key, v, k < 4 ? 3000 : 8000), CLARITY_OK, "%s", store_errmsg(s));
    }
    long pages = sql_long(p, "PRAGMA page_count"), free0 = sql_long(p, "PRAGMA freelist_count");
    for (int round = 0; round < 40; round++) {
        int k = round % 8;
        size_t n = k < 4 ? 1600 + (size_t)round * 30 : 4200 + (size_t)round * 90; /* the cell holds it */
        put_slot_back(s, k, n, (unsigned)round);
    }
    cr_assert_eq(sql_long(p, "PRAGMA page_count"), pages, "pages were allocated");
    cr_assert_eq(sql_long(p, "PRAGMA freelist_count"), free0, "pages were freed");
    cr_assert_eq(store_put(s, "r", "l:0000", v, 12000), CLARITY_OK, "%s", store_errmsg(s));
    expect_bytes(s, "r", "l:0000", v, 12000);
    store_close(s);
    free(v);
}

/* A slot's records grow and shrink from turn to turn (a dense session's
 * run from 1.5 to 2.5 KB).  A new row's cell has room for twice its first
 * value, up to a leaf's: the next records, up to that, rewrite it in place
 * (no page allocated or freed).  A cell sized to its first value's class
 * moved at the first larger record, and the commit wrote a new leaf, the
 * parent and the header page besides. */
Test(store, sqlite_a_slot_takes_records_up_to_twice_its_first_in_place)
{
    char p[128];
    path_in_dir(p, sizeof p, "grow.db");
    store *s = open_sqlite_at(p);
    size_t first[8];
    for (int k = 0; k < 8; k++) { /* 300 bytes to 1.7 KB: shared leaves, then leaves alone */
        char key[8];
        snprintf(key, sizeof key, "l:%04x", k);
        first[k] = 300 + (size_t)k * 200;
        char *v = pattern(first[k], (unsigned)k);
        cr_assert_eq(store_put(s, "r", key, v, first[k]), CLARITY_OK, "%s", store_errmsg(s));
        free(v);
    }
    long pages = sql_long(p, "PRAGMA page_count"), free0 = sql_long(p, "PRAGMA freelist_count");
    srand(31);
    for (int round = 0; round < 64; round++) {
        int k = round % 8;
        size_t n = first[k] / 2 + (size_t)rand() % (first[k] * 3 / 2); /* half to twice the first */
        put_slot_back(s, k, n, (unsigned)round);
    }
    cr_assert_eq(sql_long(p, "PRAGMA page_count"), pages, "pages were allocated: a cell moved");
    cr_assert_eq(sql_long(p, "PRAGMA freelist_count"), free0, "pages were freed: a cell moved");
    store_close(s);
}

/* Puts records of several sizes a leaf holds alone in slots [from, to) of
 * ns, each read back. */
static void put_alone(store *s, const char *ns, int from, int to)
{
    for (int k = from; k < to; k++) {
        char key[8];
        snprintf(key, sizeof key, "l:%04x", k);
        size_t n = 2100 + (size_t)k * 37 % 1200;
        char *w = pattern(n, (unsigned)k);
        cr_assert_eq(store_put(s, ns, key, w, n), CLARITY_OK, "%s", store_errmsg(s));
        expect_bytes(s, ns, key, w, n);
        free(w);
    }
}

/* A new slot row that a leaf holds alone (a session's first records, until
 * its ring wraps) makes the file grow: three WAL frames a commit.  After a
 * pause in the commits the checkpoint thread makes the next slots' rows
 * ahead, as reservations: no key to a get or an iteration, then rewritten
 * in place by the next puts (the file does not grow), and gone with the
 * namespace.  A process that has committed fewer than 16 times has no
 * thread for it (a `clarity hook` process): its puts make the next
 * SQ_RING_INLINE rows themselves (tested below). */
Test(store, sqlite_slot_rows_are_made_ahead_between_turns, .timeout = 60)
{
    char p[128];
    path_in_dir(p, sizeof p, "ahead.db");
    store *s = open_sqlite_at(p);
    char *v = pattern(3000, 5);
    cr_assert_eq(store_put(s, "n", "l:0000", v, 3000), CLARITY_OK, "%s", store_errmsg(s));
    usleep(100 * 1000); /* a pause: still nothing from the thread, too few commits */
    store_ckpt_stats st;
    cr_assert_eq(store_sqlite_ckpt_stats(s, &st), CLARITY_OK);
    cr_assert_eq(st.reservations, 0ul);
    cr_assert_eq(sql_long(p, "SELECT count(*) FROM ring"), 1 + SQ_RING_INLINE, "the put made no rows ahead");
    for (int i = 0; i < 20; i++) { /* commits of other keys */
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        cr_assert_eq(store_put(s, "n", key, "x", 1), CLARITY_OK, "%s", store_errmsg(s));
    }
    int first = 1 + SQ_RING_INLINE; /* the first slot with no row */
    char key0[8];
    snprintf(key0, sizeof key0, "l:%04x", first);
    cr_assert_eq(store_begin(s), CLARITY_OK);
    cr_assert_eq(store_put(s, "n", key0, v, 2900), CLARITY_OK, "%s", store_errmsg(s));
    cr_assert_eq(store_commit(s), CLARITY_OK, "%s", store_errmsg(s));
    for (int ms = 0; ms < 5000; ms += 10) { /* the thread waits for 10 ms without a commit */
        cr_assert_eq(store_sqlite_ckpt_stats(s, &st), CLARITY_OK);
        if (st.reservations) break;
        usleep(10 * 1000);
    }
    cr_assert_eq(st.reservations, 1ul, "no reservation was made");
    cr_assert_eq(sql_long(p, "SELECT count(*) FROM ring"), first + 1 + 16, "the next 16 slots not made ahead");
    char key[8];
    snprintf(key, sizeof key, "l:%04x", first + 1);
    expect_missing(s, "n", key);
    snprintf(key, sizeof key, "l:%04x", first + 16);
    expect_missing(s, "n", key);
    acc a;
    iter_text(s, "n", "l:", 0, &a);
    cr_assert_eq(a.count, 2, "%s", a.text);
    long pages = sql_long(p, "PRAGMA page_count"), f0 = th_wal_frames(p);
    put_alone(s, "n", first + 1, first + 17);
    cr_assert_eq(sql_long(p, "PRAGMA page_count"), pages, "the reserved rows were not rewritten in place");
    /* one WAL frame a put: a row replaced rather than rewritten takes three */
    cr_assert_leq(th_wal_frames(p) - f0, 16L, "%ld frames for 16 puts", th_wal_frames(p) - f0);
    iter_text(s, "n", "l:", 0, &a);
    cr_assert_eq(a.count, 18, "%s", a.text);
    /* the connection was told of the rows, so it rewrote them rather than
     * insert them, and asked for no more: none made after another pause */
    usleep(100 * 1000);
    cr_assert_eq(store_sqlite_ckpt_stats(s, &st), CLARITY_OK);
    cr_assert_eq(st.reservations, 1ul, "the rows made ahead were taken for new ones");
    cr_assert_eq(sql_long(p, "SELECT count(*) FROM ring"), first + 17);
    cr_assert_eq(store_del_ns(s, "n"), CLARITY_OK, "%s", store_errmsg(s));
    cr_assert_eq(sql_long(p, "SELECT count(*) FROM ring"), 0);
    store_close(s);
    free(v);
}

/* Where no thread makes them (a process's first commits: a `clarity hook`
 * process commits once), a put that makes a new row a leaf holds alone
 * makes the next SQ_RING_INLINE slots' rows itself, in the same commit
 * (outside a store transaction, one of its own): the records after it
 * rewrite them in place, one WAL frame each, and the file grows again
 * only after them.  Rows made in a transaction that rolls back go with
 * it, and the connection forgets them. */
Test(store, sqlite_a_put_without_a_thread_makes_the_next_rows_itself)
{
    char p[128];
    path_in_dir(p, sizeof p, "inline.db");
    store *s = open_sqlite_at(p);
    put_alone(s, "m", 0, 1); /* the ring's root is a parent page now */
    long f0 = th_wal_frames(p);
    put_alone(s, "n", 0, 1);
    /* n's number (a commit of its own: its row and its index entry), then
     * one commit: the row, the rows ahead, their parent and the header
     * page (a commit each would write three frames each) */
    cr_assert_leq(th_wal_frames(p) - f0, 2L + 1 + SQ_RING_INLINE + 2, "%ld frames", th_wal_frames(p) - f0);
    cr_assert_eq(sql_long(p, "SELECT count(*) FROM ring"), 2 * (1 + SQ_RING_INLINE));
    acc a;
    iter_text(s, "n", "l:", 0, &a);
    cr_assert_eq(a.count, 1, "%s", a.text);
    char key[8];
    snprintf(key, sizeof key, "l:%04x", 1);
    expect_missing(s, "n", key);
    long pages = sql_long(p, "PRAGMA page_count");
    f0 = th_wal_frames(p);
    put_alone(s, "n", 1, 1 + SQ_RING_INLINE);
    cr_assert_eq(sql_long(p, "PRAGMA page_count"), pages, "the rows made ahead were not rewritten in place");
    cr_assert_leq(th_wal_frames(p) - f0, (long)SQ_RING_INLINE, "%ld frames", th_wal_frames(p) - f0);
    /* the next new row makes the next ones, in the store's transaction
     * too; rolled back, they are gone and the slot is written again */
    int next = 1 + SQ_RING_INLINE;
    cr_assert_eq(store_begin(s), CLARITY_OK);
    put_alone(s, "n", next, next + 1);
    store_rollback(s);
    long m_rows = 1 + SQ_RING_INLINE;
    cr_assert_eq(sql_long(p, "SELECT count(*) FROM ring"), m_rows + next);
    put_alone(s, "n", next, next + 2);
    cr_assert_eq(sql_long(p, "SELECT count(*) FROM ring"), m_rows + next + 1 + SQ_RING_INLINE);
    iter_text(s, "n", "l:", 0, &a);
    cr_assert_eq(a.count, next + 2, "%s", a.text);
    store_close(s);
    /* another process (a new connection) finds them and rewrites them */
    s = open_sqlite_at(p);
    pages = sql_long(p, "PRAGMA page_count");
    put_alone(s, "n", next + 2, next + 1 + SQ_RING_INLINE);
    cr_assert_eq(sql_long(p, "PRAGMA page_count"), pages, "another connection inserted rather than rewrote");
    iter_text(s, "n", "l:", 0, &a);
    cr_assert_eq(a.count, next + 1 + SQ_RING_INLINE, "%s", a.text);
    store_close(s);
}

/* A number given to a namespace in a transaction that rolled back is
 * forgotten with it: another connection may take that number, and the
 * slots of both namespaces stay apart. */
/* A connection remembers the cell size it wrote in each slot, to rewrite
 * it without asking SQLite first.  Another connection (another process)
 * may rewrite or delete the slot meanwhile, and a rolled-back write leaves
 * the old cell: the slot still holds what was written last. */
Test(store, sqlite_a_slot_written_by_another_connection_is_read_back)
{
    char p[128];
    path_in_dir(p, sizeof p, "twoconn.db");
    store *a = open_sqlite_at(p), *b = open_sqlite_at(p);
    char *small = pattern(500, 1), *big = pattern(9000, 2), *mid = pattern(2500, 3);
    cr_assert_eq(store_put(a, "r", "l:0005", small, 500), CLARITY_OK, "%s", store_errmsg(a));
    cr_assert_eq(store_put(b, "r", "l:0005", big, 9000), CLARITY_OK, "%s", store_errmsg(b));
    cr_assert_eq(store_put(a, "r", "l:0005", mid, 2500), CLARITY_OK, "%s", store_errmsg(a));
    expect_bytes(b, "r", "l:0005", mid, 2500);
    cr_assert_eq(store_del(b, "r", "l:0005"), CLARITY_OK, "%s", store_errmsg(b));
    cr_assert_eq(store_put(a, "r", "l:0005", small, 500), CLARITY_OK, "%s", store_errmsg(a));
    expect_bytes(b, "r", "l:0005", small, 500);
    /* a rewrite rolled back: the next one still lands */
    cr_assert_eq(store_begin(a), CLARITY_OK);
    cr_assert_eq(store_put(a, "r", "l:0005", big, 9000), CLARITY_OK, "%s", store_errmsg(a));
    store_rollback(a);
    expect_bytes(b, "r", "l:0005", small, 500);
    cr_assert_eq(store_put(a, "r", "l:0005", mid, 2500), CLARITY_OK, "%s", store_errmsg(a));
    expect_bytes(b, "r", "l:0005", mid, 2500);
    expect_bytes(a, "r", "l:0005", mid, 2500);
    store_close(a);
    store_close(b);
    free(small);
    free(big);
    free(mid);
}

Test(store, sqlite_a_rolled_back_namespace_number_is_forgotten)
{
    char p[128];
    path_in_dir(p, sizeof p, "nsid.db");
    store *a = open_sqlite_at(p), *b = open_sqlite_at(p);
    cr_assert_eq(store_begin(a), CLARITY_OK);
    put_s(a, "first", "l:0001", "rolled back");
    store_rollback(a);
    put_s(b, "second", "l:0001", "b's");
    put_s(a, "first", "l:0001", "a's");
    expect_val(a, "second", "l:0001", "b's");
    expect_val(b, "first", "l:0001", "a's");
    cr_assert_eq(sql_long(p, "SELECT count(DISTINCT id) FROM nsid"), 2);
    store_close(a);
    store_close(b);
}

/* A file of schema version 1 kept its slots in kv: they move to the ring
 * at open, in the open's transaction, every byte kept. */
Test(store, sqlite_version_1_slots_move_at_open)
{
    char p[128];
    path_in_dir(p, sizeof p, "v1.db");
    sqlite3 *d;
    cr_assert_eq(sqlite3_open(p, &d), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(d,
                              "CREATE TABLE kv(ns TEXT NOT NULL, key TEXT NOT NULL, val BLOB NOT NULL,"
                              " PRIMARY KEY(ns, key)) WITHOUT ROWID;"
                              "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT);"
                              "INSERT INTO meta VALUES('schema_version', '1');"
                              "INSERT INTO kv VALUES('s', 'l:0002', X'616263');"
                              "INSERT INTO kv VALUES('s', 'i:x', 'row');"
                              "INSERT INTO kv VALUES('s', 'l:2', 'not a slot key');"
                              "INSERT INTO kv VALUES('t', 'l:0010', zeroblob(5000));",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(d));
    sqlite3_close(d);
    store *s = open_sqlite_at(p);
    cr_assert_str_eq(sql1(p, "SELECT v FROM meta WHERE k='schema_version'"), "2");
    cr_assert_eq(sql_long(p, "SELECT count(*) FROM kv WHERE key LIKE 'l:%' AND length(key) = 6"), 0);
    cr_assert_eq(sql_long(p, "SELECT count(*) FROM ring"), 2);
    expect_val(s, "s", "l:0002", "abc");
    expect_val(s, "s", "i:x", "row");
    expect_val(s, "s", "l:2", "not a slot key");
    char zeros[5000] = {0};
    expect_bytes(s, "t", "l:0010", zeros, sizeof zeros);
    store_close(s);
}

/* A slot whose stored length runs past its cell (an edited or damaged
 * file) is an error naming the slot, for a get and for an iteration;
 * nothing past the cell is read. */
Test(store, sqlite_a_damaged_slot_is_an_error)
{
    char p[128];
    path_in_dir(p, sizeof p, "damaged.db");
    store *s = open_sqlite_at(p);
    put_s(s, "d", "l:0003", "hello");
    put_s(s, "d", "l:0004", "fine");
    store_close(s);
    sql1(p, "UPDATE ring SET val = X'ffff0000' || substr(val, 5) WHERE id & 65535 = 3");
    s = open_sqlite_at(p);
    char *v = NULL;
    size_t n = 0;
    cr_assert_eq(store_get(s, "d", "l:0003", &v, &n), CLARITY_ESTORE);
    cr_assert_null(v);
    cr_assert(strstr(store_errmsg(s), "l:0003") && strstr(store_errmsg(s), "damaged"), "%s", store_errmsg(s));
    expect_val(s, "d", "l:0004", "fine");
    acc a;
    memset(&a, 0, sizeof a);
    cr_assert_eq(store_iter(s, "d", "l:", acc_cb, &a), CLARITY_ESTORE);
    cr_assert(strstr(store_errmsg(s), "l:0003"), "%s", store_errmsg(s));
    store_close(s);
}

/* A child writes turns (turn n and 10 items, one transaction each) and
 * reports each commit; it is killed with SIGKILL mid-loop.  Every reported
 * turn must be in the file, whole, and the file must be intact.  Three
 * rounds on the same file, each child continuing from the stored turn. */
static long stored_turn(const char *p)
{
    const char *t = sql1(p, "SELECT CAST(val AS TEXT) FROM kv WHERE ns='k' AND key='turn'");
    return *t ? strtol(t, NULL, 10) : 0;
}

static void child_loop(const char *p, int flags, int wfd, long start)
{
    store *s = NULL;
    if (store_open_sqlite(p, flags, &s, NULL) != CLARITY_OK) _exit(2);
    char k[16], v[32];
    for (long n = start; n < start + 1000000; n++) {
        int rc = store_begin(s);
        snprintf(v, sizeof v, "%ld", n);
        if (rc == CLARITY_OK) rc = store_put(s, "k", "turn", v, strlen(v));
        for (int i = 0; rc == CLARITY_OK && i < 10; i++) {
            snprintf(k, sizeof k, "item%d", i);
            rc = store_put(s, "k", k, v, strlen(v));
        }
        if (rc == CLARITY_OK) rc = store_commit(s);
        else store_rollback(s);
        if (rc != CLARITY_OK) _exit(3);
        if (write(wfd, &n, sizeof n) != (ssize_t)sizeof n) _exit(4);
    }
    _exit(0);
}

/* Commits a child makes (flags: how it opens the store) until it is
 * killed: every commit it reported is in the file, which is intact. */
static void survives_kill9(int flags)
{
    char p[128];
    path_in_dir(p, sizeof p, "kill.db");
    store_close(open_sqlite_at(p));
    for (int round = 0; round < 3; round++) {
        long start = stored_turn(p) + 1;
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0) {
            close(fds[0]);
            child_loop(p, flags, fds[1], start);
        }
        close(fds[1]);
        long n = 0, last = 0;
        int reads = 0, want = 20 + round * 37;
        while (reads < want && read(fds[0], &n, sizeof n) == (ssize_t)sizeof n) {
            last = n;
            reads++;
        }
        cr_assert_eq(reads, want, "child stopped early");
        cr_assert_eq(kill(pid, SIGKILL), 0);
        int status = 0;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %d", status);
        while (read(fds[0], &n, sizeof n) == (ssize_t)sizeof n) last = n; /* drain */
        close(fds[0]);

        cr_assert_str_eq(sql1(p, "PRAGMA integrity_check"), "ok");
        long turn = stored_turn(p);
        cr_assert_geq(turn, last, "round %d: stored turn %ld < reported %ld", round, turn, last);
        cr_assert_geq(last, start);
        char q[128];
        snprintf(q, sizeof q,
                 "SELECT count(*) FROM kv WHERE ns='k' AND key LIKE 'item%%' AND "
                 "CAST(val AS TEXT)='%ld'",
                 turn);
        cr_assert_str_eq(sql1(p, q), "10", "round %d: items not all of turn %ld", round, turn);
        cr_assert_str_eq(sql1(p, "SELECT count(*) FROM kv WHERE ns='k'"), "11");

        /* And through the store. */
        store *s = open_sqlite_at(p);
        char v[32];
        snprintf(v, sizeof v, "%ld", turn);
        expect_val(s, "k", "turn", v);
        expect_val(s, "k", "item9", v);
        store_close(s);
    }
}

Test(store, sqlite_survives_kill9) { survives_kill9(0); }

/* storage.exclusive: the WAL index is in the killed process's heap; the
 * next open rebuilds it from the WAL. */
Test(store, sqlite_exclusive_survives_kill9) { survives_kill9(STORE_SQLITE_EXCLUSIVE); }

/* Opens p in another process (the CLI; a forked child would inherit this
 * process's SQLite lock records and not be kept out): 0 when it could, 1
 * when it failed naming what holds the file (expect in its message). */
static int open_in_child(const char *p, int flags, const char *expect)
{
    char cfg[160];
    path_in_dir(cfg, sizeof cfg, flags ? "excl.json" : "shared.json");
    cr_assert_eq(runproc_write_file(cfg, flags ? "{\"storage\":{\"backend\":\"sqlite\",\"exclusive\":true}}"
                                               : "{\"storage\":{\"backend\":\"sqlite\"}}"),
                 0);
    const char *argv[] = {th_build_path("clarity"), "cmd", "--config", cfg, "--state", p, "/clarity scores", NULL};
    runproc_result r;
    cr_assert_eq(runproc(argv, NULL, NULL, 0, 60000, &r), 0);
    int out = r.status == 0 ? 0 : r.err && strstr(r.err, expect) ? 1 : 2;
    cr_assert_neq(out, 2, "status %d: %s", r.status, r.err ? r.err : "");
    runproc_free(&r);
    return out;
}

/* An exclusive store keeps other processes out for as long as it is open
 * (they wait out the busy timeout, then fail saying why), and lets them in
 * once closed; an exclusive open waits for a process that has the file
 * open and fails the same way. */
Test(store, sqlite_exclusive_keeps_the_file_to_its_process, .timeout = 60)
{
    char p[128];
    path_in_dir(p, sizeof p, "excl.db");
    store *s = NULL;
    char *err = NULL;
    cr_assert_eq(store_open_sqlite(p, STORE_SQLITE_EXCLUSIVE, &s, &err), CLARITY_OK, "%s", err ? err : "");
    put_s(s, "x", "k", "v");
    /* this process's other connections (the checkpointer's) are not kept out */
    cr_assert_str_eq(sql1(p, "SELECT CAST(val AS TEXT) FROM kv WHERE ns='x'"), "v");
    cr_assert_eq(open_in_child(p, 0, "another process may hold it with storage.exclusive"), 1);
    store_close(s);
    cr_assert_eq(open_in_child(p, 0, ""), 0);
    /* the other way round: a process has it open, an exclusive open fails */
    cr_assert_eq(store_open_sqlite(p, 0, &s, &err), CLARITY_OK, "%s", err ? err : "");
    cr_assert_eq(open_in_child(p, STORE_SQLITE_EXCLUSIVE, "storage.exclusive: another process has the file open"), 1);
    store_close(s);
    cr_assert_eq(open_in_child(p, STORE_SQLITE_EXCLUSIVE, ""), 0);
    s = open_sqlite_at(p);
    expect_val(s, "x", "k", "v");
    store_close(s);
}

/* ---- host only ------------------------------------------------------------ */

static void expect_host_refused(const clarity_host *h, const char *member)
{
    store *s = (store *)&s;
    char *err = NULL;
    cr_assert_eq(store_open_host(h, &s, &err), CLARITY_EINVAL, "missing %s accepted", member);
    cr_assert_null(s);
    cr_assert(err && strstr(err, member), "message '%s' should name %s", err ? err : "", member);
    free(err);
}

Test(store, host_missing_members_refused)
{
    clarity_host h = make_host(&g_th);
    h.kv_get = NULL;
    expect_host_refused(&h, "kv_get");
    h = make_host(&g_th);
    h.kv_put = NULL;
    expect_host_refused(&h, "kv_put");
    h = make_host(&g_th);
    h.kv_del = NULL;
    expect_host_refused(&h, "kv_del");
    h = make_host(&g_th);
    h.kv_iter = NULL;
    expect_host_refused(&h, "kv_iter");
    h = make_host(&g_th);
    h.kv_free = NULL;
    expect_host_refused(&h, "kv_free");
    /* A host compiled before kv_iter existed: the member is not read. */
    h = make_host(&g_th);
    h.struct_size = (uint32_t)offsetof(clarity_host, kv_iter);
    expect_host_refused(&h, "kv_iter");
    store *s = NULL;
    cr_assert_eq(store_open_host(NULL, &s, NULL), CLARITY_EINVAL);
}

Test(store, host_forwards_and_frees)
{
    store *s = open_kind(K_HOST);
    put_s(s, "h", "k", "v");
    cr_assert_eq(g_th.n, 1);
    cr_assert_str_eq(g_th.v[0].ns, "h");
    cr_assert_str_eq(g_th.v[0].key, "k");
    for (int i = 0; i < 5; i++) expect_val(s, "h", "k", "v");
    cr_assert_eq(g_th.outstanding, 0, "every kv_get buffer goes back through kv_free");
    cr_assert_eq(store_begin(s), CLARITY_OK);
    cr_assert_eq(g_th.begins, 1);
    cr_assert_eq(g_th.in_txn, 1);
    cr_assert_eq(store_commit(s), CLARITY_OK);
    cr_assert_eq(g_th.commits, 1);
    cr_assert_eq(store_begin(s), CLARITY_OK);
    store_rollback(s);
    cr_assert_eq(g_th.rollbacks, 1);
    /* del_ns outside a transaction is bracketed by kv_begin/kv_commit. */
    put_s(s, "h", "k2", "v2");
    cr_assert_eq(store_del_ns(s, "h"), CLARITY_OK);
    cr_assert_eq(g_th.n, 0);
    cr_assert_eq(g_th.begins, 3);
    cr_assert_eq(g_th.commits, 2);
    store_close(s);
}

Test(store, host_errors_map_to_estore)
{
    store *s = open_kind(K_HOST);
    g_th.fail_put = CLARITY_ENOMEM;
    cr_assert_eq(store_put(s, "h", "k", "v", 1), CLARITY_ESTORE);
    cr_assert(strstr(store_errmsg(s), "kv_put") != NULL, "%s", store_errmsg(s));
    g_th.fail_put = -42;
    cr_assert_eq(store_put(s, "h", "k", "v", 1), CLARITY_ESTORE);
    cr_assert(strstr(store_errmsg(s), "-42") != NULL, "%s", store_errmsg(s));
    g_th.fail_put = 0;
    put_s(s, "h", "k", "v");
    expect_val(s, "h", "k", "v");
    store_close(s);
}

Test(store, host_without_transactions)
{
    clarity_host h = make_host(&g_th);
    h.struct_size = (uint32_t)offsetof(clarity_host, kv_begin); /* an older host */
    store *s = NULL;
    char *err = NULL;
    cr_assert_eq(store_open_host(&h, &s, &err), CLARITY_OK, "%s", err ? err : "");
    cr_assert_eq(store_begin(s), CLARITY_OK);
    put_s(s, "h", "a", "1");
    put_s(s, "h", "b", "2");
    cr_assert_eq(store_commit(s), CLARITY_OK);
    expect_val(s, "h", "a", "1");
    acc a;
    cr_assert_str_eq(iter_text(s, "h", "", 0, &a), "a=1;b=2;");
    cr_assert_eq(store_del_ns(s, "h"), CLARITY_OK);
    cr_assert_eq(g_th.n, 0);
    cr_assert_eq(g_th.begins + g_th.commits + g_th.rollbacks, 0,
                 "members beyond struct_size unused");
    store_close(s);
}

/* ---- memory only ---------------------------------------------------------- */

Test(store, memory_stores_are_separate)
{
    store *a = open_kind(K_MEMORY), *b = open_kind(K_MEMORY);
    put_s(a, "n", "k", "in a");
    expect_missing(b, "n", "k");
    store_close(a);
    store_close(b);
    store_close(NULL); /* harmless */
}

/* The memory store looks where its last lookup ended before it searches:
 * runs of keys one after another (a session's records), switches between
 * namespaces, removals that shift the entries and gets of missing keys
 * must all find what a model of the same operations holds. */
Test(store, memory_lookups_from_the_last_place_find_what_a_model_holds)
{
    enum { NS = 4, KEYS = 64 };
    static char model[NS][KEYS][16]; /* "" when absent */
    store *s = open_kind(K_MEMORY);
    srand(43);
    int key = 0, ns = 0;
    for (int op = 0; op < 20000; op++) {
        int r = rand();
        if (r % 5 == 0) ns = rand() % NS;             /* another session */
        key = r % 3 ? (key + 1) % KEYS : rand() % KEYS; /* mostly the next key */
        char nsn[16], k[16];
        snprintf(nsn, sizeof nsn, "s%d", ns);
        snprintf(k, sizeof k, "l:%04x", key);
        char *m = model[ns][key];
        switch (rand() % 6) {
        case 0:
            cr_assert_eq(store_del(s, nsn, k), CLARITY_OK);
            m[0] = '\0';
            break;
        case 1:
        case 2:
            if (m[0]) expect_val(s, nsn, k, m);
            else expect_missing(s, nsn, k);
            break;
        default:
            snprintf(m, 16, "v%d", op);
            put_s(s, nsn, k, m);
        }
    }
    for (int n = 0; n < NS; n++) { /* and the whole namespace, in order */
        char nsn[16];
        snprintf(nsn, sizeof nsn, "s%d", n);
        acc a;
        dump_all(s, nsn, &a);
        size_t want = 0;
        for (int k = 0; k < KEYS; k++) want += model[n][k][0] != '\0';
        cr_assert_eq((size_t)a.count, want, "%s", nsn);
    }
    store_close(s);
}

/* store_yield between two transactions lets a thread that has waited for
 * the store (3 ms or more) have it before the caller's next transaction (a
 * fold's chunks and a turn's commit).  Without it the caller, running,
 * takes the mutex back before the thread it woke is scheduled. */
typedef struct yield_waiter {
    store *s;
    atomic_int began; /* 1: its transaction began */
    int failed;       /* a store call failed (asserted by the test's thread) */
} yield_waiter;

static void *yield_wait(void *arg)
{
    yield_waiter *w = arg;
    if (store_begin(w->s) != CLARITY_OK) {
        w->failed = 1;
        return NULL;
    }
    atomic_store(&w->began, 1);
    if (store_put(w->s, "n", "waiter", "x", 1) != CLARITY_OK) w->failed = 1;
    if (store_commit(w->s) != CLARITY_OK) w->failed = 1;
    return NULL;
}

Test(store, yield_lets_a_waiting_thread_commit_between_two_transactions, .timeout = 60)
{
    store *s = open_kind(K_MEMORY);
    int first = 0; /* rounds where the waiting thread went first */
    for (int round = 0; round < 20; round++) {
        yield_waiter w = {s, 0, 0};
        cr_assert_eq(store_begin(s), CLARITY_OK);
        pthread_t th;
        cr_assert_eq(pthread_create(&th, NULL, yield_wait, &w), 0);
        /* until the thread is blocked on the store (up to 10 s), then 4 ms
         * more: past the wait store_yield ends */
        for (int i = 0; i < 100000 && atomic_load(&s->waiting) == 0; i++) usleep(100);
        cr_assert_eq(atomic_load(&s->waiting), 1, "the thread never waited for the store");
        usleep(4000);
        cr_assert_eq(store_commit(s), CLARITY_OK);
        store_yield(s);
        cr_assert_eq(store_begin(s), CLARITY_OK);
        first += atomic_load(&w.began);
        store_rollback(s);
        pthread_join(th, NULL);
        cr_assert_not(w.failed, "round %d: the waiting thread's transaction failed", round);
    }
    /* one call waits ~1 ms at most for the thread to run: a loaded machine
     * may miss some rounds; without the yield it misses them all */
    cr_assert_geq(first, 10, "the waiting thread went first in %d rounds of 20", first);
    store_yield(s); /* nobody waits: returns at once */
    store_close(s);
}

/* A read snapshot sees none of what another connection commits while it
 * is open (a session's load reads its meta, rows and records apart); after
 * it ends, the commit is seen.  Writes of the other connection are not
 * blocked by it (WAL). */
Test(store, a_read_snapshot_does_not_see_a_commit_made_during_it)
{
    store *a = open_kind(K_SQLITE), *b = open_kind(K_SQLITE);
    put_s(a, "ns", "meta", "1");
    put_s(a, "ns", "l:0001", "r1");
    cr_assert_eq(store_begin_read(a), CLARITY_OK, "%s", store_errmsg(a));
    expect_val(a, "ns", "meta", "1");
    /* b folds: a new meta, the record gone, a row written */
    cr_assert_eq(store_begin(b), CLARITY_OK, "%s", store_errmsg(b));
    put_s(b, "ns", "meta", "2");
    cr_assert_eq(store_del(b, "ns", "l:0001"), CLARITY_OK);
    put_s(b, "ns", "i:x", "row");
    cr_assert_eq(store_commit(b), CLARITY_OK, "%s", store_errmsg(b));
    expect_val(a, "ns", "l:0001", "r1");
    expect_missing(a, "ns", "i:x");
    cr_assert_eq(store_begin(a), CLARITY_EINVAL, "a write transaction inside a read one");
    cr_assert_eq(store_begin_read(a), CLARITY_EINVAL, "a nested read snapshot");
    store_end_read(a);
    expect_val(a, "ns", "meta", "2");
    expect_missing(a, "ns", "l:0001");
    expect_val(a, "ns", "i:x", "row");
    /* every backend takes it; the next transaction works */
    for (int k = K_MEMORY; k <= K_HOST; k++) {
        store *s = open_kind(k);
        cr_assert_eq(store_begin_read(s), CLARITY_OK);
        store_end_read(s);
        cr_assert_eq(store_begin(s), CLARITY_OK);
        cr_assert_eq(store_commit(s), CLARITY_OK);
        store_close(s);
    }
    store_close(b);
    store_close(a);
}
