/* store_redis.c: the Redis (or Valkey) backend, for sessions shared by
 * several gateway processes.
 *
 * A namespace is one hash, "<prefix><ns>": a key is a field.  Its version
 * is the field "~v" (store.h, store_version/store_fence).  Outside a
 * transaction each call is one command.  A transaction buffers its writes
 * and commits them with one EVAL: the fence is checked first (a lost fence
 * writes nothing), then the writes, then the new version, atomically on the
 * server; so one turn is one round trip.  Reads inside a transaction see its
 * own buffered writes.
 *
 * Failures: an I/O error or a timeout (timeout_ms, also on connect) drops
 * the connection; every call until it is back answers CLARITY_ESTORE with
 * the Redis error, and reconnects are tried with a backoff doubling from
 * 50 ms to 2 s, so a hook never waits on a dead server longer than one
 * timeout.  Server errors (WRONGTYPE on a key of another type under the
 * prefix, NOAUTH, OOM) come back as CLARITY_ESTORE with their text.
 */
#include "store_impl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/buf.h"

#ifndef CLARITY_WITH_REDIS

int store_open_redis(const char *url, const char *prefix, int timeout_ms, store **out, char **err)
{
    (void)url, (void)prefix, (void)timeout_ms;
    *out = NULL;
    store_open_err(err, "storage.backend \"redis\": clarity was built without hiredis "
                        "(install libhiredis-dev and rebuild)");
    return CLARITY_ECONFIG;
}

#else

#include <hiredis/hiredis.h>

#define VERSION_FIELD "~v"

typedef struct rop {
    char kind;     /* 'p' put, 'd' del, 'x' del_ns */
    char *ns, *key;
    char *val;
    size_t len;
} rop;

typedef struct rds {
    char *host, *path, *user, *password, *prefix;
    int port, db, timeout_ms;
    redisContext *c;
    int64_t retry_at; /* ms: no reconnect before */
    int backoff;      /* ms */
    char last[256];   /* why the connection went */
    rop *ops;         /* the open transaction's writes, in order */
    size_t n_ops, cap_ops;
    int in_txn, fenced;
    char *fence_ns;
    uint64_t fence_expect, fence_next;
} rds;

static rds *R(store *s) { return s->impl; }

static int64_t now_ms(void) { return store_now_ns() / 1000000; }

/* ---- the URL ------------------------------------------------------------ */

static char *dup_n(const char *p, size_t n)
{
    char *d = malloc(n + 1);
    if (d) memcpy(d, p, n), d[n] = '\0';
    return d;
}

static int parse_db(const char *p, int *db)
{
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || *end || v < 0 || v > 1000000) return -1;
    *db = (int)v;
    return 0;
}

/* redis://[user:password@]host[:port][/db] or unix:///path[?db=N]. */
static int parse_url(rds *r, const char *url, char **why)
{
    r->port = 6379;
    if (strncmp(url, "unix://", 7) == 0) {
        const char *p = url + 7, *q = strstr(p, "?db=");
        if (*p != '/') return *why = strdup("a unix:// URL needs an absolute socket path"), -1;
        r->path = dup_n(p, q ? (size_t)(q - p) : strlen(p));
        if (q && parse_db(q + 4, &r->db) != 0) return *why = strdup("?db= must be a number"), -1;
        return r->path ? 0 : -1;
    }
    if (strncmp(url, "redis://", 8) != 0) return *why = strdup("must start with redis:// or unix://"), -1;
    const char *p = url + 8, *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (colon) {
            if (colon > p) r->user = dup_n(p, (size_t)(colon - p));
            r->password = dup_n(colon + 1, (size_t)(at - colon - 1));
        } else {
            r->password = dup_n(p, (size_t)(at - p));
        }
        p = at + 1;
    }
    const char *slash = strchr(p, '/');
    size_t hostport = slash ? (size_t)(slash - p) : strlen(p);
    const char *colon = memchr(p, ':', hostport);
    size_t hl = colon ? (size_t)(colon - p) : hostport;
    if (hl == 0) return *why = strdup("no host"), -1;
    r->host = dup_n(p, hl);
    if (colon) {
        char port[16];
        size_t pl = hostport - hl - 1;
        if (pl == 0 || pl >= sizeof port) return *why = strdup("the port must be 1..65535"), -1;
        memcpy(port, colon + 1, pl);
        port[pl] = '\0';
        char *end;
        long v = strtol(port, &end, 10);
        if (*end || v < 1 || v > 65535) return *why = strdup("the port must be 1..65535"), -1;
        r->port = (int)v;
    }
    if (slash && slash[1] && parse_db(slash + 1, &r->db) != 0)
        return *why = strdup("the database (after /) must be a number"), -1;
    return r->host ? 0 : -1;
}

/* ---- the connection ------------------------------------------------------ */

static void drop(rds *r, const char *why)
{
    snprintf(r->last, sizeof r->last, "%s", why ? why : "connection lost");
    if (r->c) redisFree(r->c);
    r->c = NULL;
    r->backoff = r->backoff ? (r->backoff * 2 > 2000 ? 2000 : r->backoff * 2) : 50;
    r->retry_at = now_ms() + r->backoff;
}

/* A reply of a connection's setup command: 0, or -1 with the connection dropped. */
static int setup_ok(store *s, redisReply *rep, const char *what)
{
    rds *r = R(s);
    if (rep && rep->type != REDIS_REPLY_ERROR) {
        freeReplyObject(rep);
        return 0;
    }
    char why[256];
    snprintf(why, sizeof why, "%s: %s", what, rep ? rep->str : r->c->errstr);
    if (rep) freeReplyObject(rep);
    drop(r, why);
    return -1;
}

static int connected(store *s)
{
    rds *r = R(s);
    if (r->c) return CLARITY_OK;
    if (now_ms() < r->retry_at)
        return store_fail(s, CLARITY_ESTORE, "redis: %s (reconnecting)", r->last);
    struct timeval tv = {r->timeout_ms / 1000, (r->timeout_ms % 1000) * 1000};
    r->c = r->path ? redisConnectUnixWithTimeout(r->path, tv) : redisConnectWithTimeout(r->host, r->port, tv);
    if (!r->c || r->c->err) {
        char why[256];
        snprintf(why, sizeof why, "cannot connect to %s%s%d: %s", r->path ? r->path : r->host,
                 r->path ? "" : ":", r->path ? 0 : r->port, r->c ? r->c->errstr : "out of memory");
        if (r->path) snprintf(why, sizeof why, "cannot connect to %s: %s", r->path, r->c ? r->c->errstr : "out of memory");
        drop(r, why);
        return store_fail(s, CLARITY_ESTORE, "redis: %s", r->last);
    }
    redisSetTimeout(r->c, tv);
    if (r->password) {
        redisReply *rep = r->user ? redisCommand(r->c, "AUTH %s %s", r->user, r->password)
                                  : redisCommand(r->c, "AUTH %s", r->password);
        if (setup_ok(s, rep, "AUTH") != 0) return store_fail(s, CLARITY_ESTORE, "redis: %s", r->last);
    }
    if (r->db && setup_ok(s, redisCommand(r->c, "SELECT %d", r->db), "SELECT") != 0)
        return store_fail(s, CLARITY_ESTORE, "redis: %s", r->last);
    r->backoff = 0;
    return CLARITY_OK;
}

/* Runs argv; *out gets the reply (free with freeReplyObject).  An I/O error
 * drops the connection; a server error is CLARITY_ESTORE with its text. */
static int command(store *s, int argc, const char **argv, const size_t *lens, redisReply **out)
{
    *out = NULL;
    int rc = connected(s);
    if (rc != CLARITY_OK) return rc;
    rds *r = R(s);
    redisReply *rep = redisCommandArgv(r->c, argc, argv, lens);
    if (!rep) {
        char why[256];
        snprintf(why, sizeof why, "%s", r->c->errstr[0] ? r->c->errstr : "connection lost");
        drop(r, why);
        return store_fail(s, CLARITY_ESTORE, "redis: %s", r->last);
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        rc = strncmp(rep->str, "CONFLICT", 8) == 0
                 ? store_fail(s, STORE_ECONFLICT, "redis: %s", rep->str)
                 : store_fail(s, CLARITY_ESTORE, "redis: %s: %s", argv[0], rep->str);
        freeReplyObject(rep);
        return rc;
    }
    *out = rep;
    return CLARITY_OK;
}

static char *hkey(const rds *r, const char *ns)
{
    return util_format("%s%s", r->prefix, ns);
}

/* ---- the transaction's buffer ------------------------------------------- */

static void op_free(rop *o)
{
    free(o->ns);
    free(o->key);
    free(o->val);
}

static void ops_clear(rds *r)
{
    for (size_t i = 0; i < r->n_ops; i++) op_free(&r->ops[i]);
    r->n_ops = 0;
    r->fenced = 0;
    free(r->fence_ns);
    r->fence_ns = NULL;
}

static int op_add(store *s, char kind, const char *ns, const char *key, const char *val, size_t len)
{
    rds *r = R(s);
    if (r->n_ops == r->cap_ops) {
        size_t cap = r->cap_ops ? r->cap_ops * 2 : 64;
        rop *v = realloc(r->ops, cap * sizeof *v);
        if (!v) return store_fail(s, CLARITY_ENOMEM, "out of memory");
        r->ops = v;
        r->cap_ops = cap;
    }
    rop o = {kind, strdup(ns), key ? strdup(key) : NULL, NULL, len};
    if (val) o.val = store_dup_val(val, len);
    if (!o.ns || (key && !o.key) || (val && !o.val)) {
        op_free(&o);
        return store_fail(s, CLARITY_ENOMEM, "out of memory");
    }
    r->ops[r->n_ops++] = o;
    return CLARITY_OK;
}

/* The newest buffered write of (ns, key): 1 put (*o), 0 deleted, -1 none. */
static int buffered(const rds *r, const char *ns, const char *key, const rop **o)
{
    for (size_t i = r->n_ops; i-- > 0;) {
        const rop *x = &r->ops[i];
        if (strcmp(x->ns, ns) != 0) continue;
        if (x->kind == 'x') return 0;
        if (strcmp(x->key, key) != 0) continue;
        *o = x;
        return x->kind == 'p';
    }
    return -1;
}

/* ---- the vt --------------------------------------------------------------- */

static int rd_get(store *s, const char *ns, const char *key, char **val, size_t *len)
{
    rds *r = R(s);
    const rop *o = NULL;
    int b = r->in_txn ? buffered(r, ns, key, &o) : -1;
    if (b == 0) return store_not_found(s, ns, key);
    if (b == 1) {
        *val = store_dup_val(o->val, o->len);
        *len = o->len;
        return *val ? CLARITY_OK : store_fail(s, CLARITY_ENOMEM, "out of memory");
    }
    char *k = hkey(r, ns);
    if (!k) return store_fail(s, CLARITY_ENOMEM, "out of memory");
    const char *argv[] = {"HGET", k, key};
    size_t lens[] = {4, strlen(k), strlen(key)};
    redisReply *rep;
    int rc = command(s, 3, argv, lens, &rep);
    free(k);
    if (rc != CLARITY_OK) return rc;
    if (rep->type == REDIS_REPLY_NIL) rc = store_not_found(s, ns, key);
    else if (rep->type != REDIS_REPLY_STRING) rc = store_fail(s, CLARITY_ESTORE, "redis: HGET: unexpected reply");
    else if (!(*val = store_dup_val(rep->str, rep->len))) rc = store_fail(s, CLARITY_ENOMEM, "out of memory");
    else *len = rep->len;
    freeReplyObject(rep);
    return rc;
}

/* One write outside a transaction. */
static int write_now(store *s, const char *cmd, const char *ns, const char *key, const char *val, size_t len)
{
    char *k = hkey(R(s), ns);
    if (!k) return store_fail(s, CLARITY_ENOMEM, "out of memory");
    const char *argv[] = {cmd, k, key, val};
    size_t lens[] = {strlen(cmd), strlen(k), key ? strlen(key) : 0, len};
    int argc = val ? 4 : key ? 3 : 2;
    redisReply *rep;
    int rc = command(s, argc, argv, lens, &rep);
    free(k);
    if (rc == CLARITY_OK) freeReplyObject(rep);
    return rc;
}

static int rd_put(store *s, const char *ns, const char *key, const char *val, size_t len)
{
    if (R(s)->in_txn) return op_add(s, 'p', ns, key, val, len);
    return write_now(s, "HSET", ns, key, val, len);
}

static int rd_del(store *s, const char *ns, const char *key)
{
    if (R(s)->in_txn) return op_add(s, 'd', ns, key, NULL, 0);
    return write_now(s, "HDEL", ns, key, NULL, 0);
}

static int rd_del_ns(store *s, const char *ns)
{
    if (R(s)->in_txn) return op_add(s, 'x', ns, NULL, NULL, 0);
    return write_now(s, "DEL", ns, NULL, NULL, 0);
}

/* HSCAN with MATCH "<prefix>*" (glob characters escaped). */
static char *glob_of(const char *prefix)
{
    buf b;
    buf_init(&b);
    for (const char *p = prefix; *p; p++) {
        if (strchr("*?[]\\", *p)) buf_putc(&b, '\\');
        buf_putc(&b, *p);
    }
    buf_putc(&b, '*');
    return buf_failed(&b) ? (buf_free(&b), NULL) : buf_steal(&b, NULL);
}

/* One entry of an iteration: key and value, owned. */
typedef struct kv {
    char *key, *val;
    size_t len;
} kv;

typedef struct kvs {
    kv *v;
    size_t n, cap;
} kvs;

static void kvs_free(kvs *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->v[i].key), free(a->v[i].val);
    free(a->v);
    memset(a, 0, sizeof *a);
}

static int kvs_find(const kvs *a, const char *key)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i].key, key) == 0) return (int)i;
    return -1;
}

/* Appends key (copies), or with replace sets an entry of that key. */
static int kvs_set(kvs *a, const char *key, const char *val, size_t len, int replace)
{
    char *v = store_dup_val(val, len);
    if (!v) return -1;
    int i = replace ? kvs_find(a, key) : -1;
    if (i >= 0) {
        free(a->v[i].val);
        a->v[i].val = v;
        a->v[i].len = len;
        return 0;
    }
    if (a->n == a->cap) {
        kv *g = realloc(a->v, (a->cap = a->cap ? a->cap * 2 : 64) * sizeof *g);
        if (!g) return free(v), -1;
        a->v = g;
    }
    char *k = strdup(key);
    if (!k) return free(v), -1;
    a->v[a->n++] = (kv){k, v, len};
    return 0;
}

static void kvs_del(kvs *a, const char *key)
{
    int i = kvs_find(a, key);
    if (i < 0) return;
    free(a->v[i].key), free(a->v[i].val);
    a->v[i] = a->v[--a->n];
}

static int cmp_kv(const void *x, const void *y)
{
    return strcmp(((const kv *)x)->key, ((const kv *)y)->key); /* bytewise, as the other stores */
}

/* The stored entries of ns under prefix (HSCAN MATCH "<prefix>*"). */
static int scan(store *s, const char *ns, const char *prefix, kvs *out)
{
    rds *r = R(s);
    char *k = hkey(r, ns), *match = glob_of(prefix);
    int rc = k && match ? CLARITY_OK : store_fail(s, CLARITY_ENOMEM, "out of memory");
    char cursor[32] = "0";
    do {
        if (rc != CLARITY_OK) break;
        const char *argv[] = {"HSCAN", k, cursor, "MATCH", match, "COUNT", "1000"};
        size_t lens[] = {5, strlen(k), strlen(cursor), 5, strlen(match), 5, 4};
        redisReply *rep;
        rc = command(s, 7, argv, lens, &rep);
        if (rc != CLARITY_OK) break;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 || rep->element[0]->type != REDIS_REPLY_STRING ||
            rep->element[1]->type != REDIS_REPLY_ARRAY) {
            rc = store_fail(s, CLARITY_ESTORE, "redis: HSCAN: unexpected reply");
        } else {
            snprintf(cursor, sizeof cursor, "%s", rep->element[0]->str);
            redisReply *f = rep->element[1];
            for (size_t i = 0; i + 1 < f->elements && rc == CLARITY_OK; i += 2) {
                if (strcmp(f->element[i]->str, VERSION_FIELD) == 0) continue;
                if (kvs_set(out, f->element[i]->str, f->element[i + 1]->str, f->element[i + 1]->len, 0) != 0)
                    rc = store_fail(s, CLARITY_ENOMEM, "out of memory");
            }
        }
        freeReplyObject(rep);
    } while (rc == CLARITY_OK && strcmp(cursor, "0") != 0);
    free(k);
    free(match);
    return rc;
}

/* In key order, with the open transaction's own writes: the entries are
 * collected first, so a callback may call back into the store. */
static int rd_iter(store *s, const char *ns, const char *prefix, store_iter_cb cb, void *ud)
{
    rds *r = R(s);
    kvs a = {0};
    int rc = scan(s, ns, prefix, &a);
    size_t pl = strlen(prefix);
    for (size_t i = 0; rc == CLARITY_OK && r->in_txn && i < r->n_ops; i++) {
        const rop *o = &r->ops[i];
        if (strcmp(o->ns, ns) != 0) continue;
        if (o->kind == 'x') {
            kvs_free(&a);
        } else if (strncmp(o->key, prefix, pl) == 0) {
            if (o->kind == 'd') kvs_del(&a, o->key);
            else if (kvs_set(&a, o->key, o->val, o->len, 1) != 0) rc = store_fail(s, CLARITY_ENOMEM, "out of memory");
        }
    }
    if (rc == CLARITY_OK) {
        if (a.n) qsort(a.v, a.n, sizeof *a.v, cmp_kv); /* never with a NULL array (UBSan) */
        for (size_t i = 0; i < a.n; i++) {
            if (i && strcmp(a.v[i].key, a.v[i - 1].key) == 0) continue; /* HSCAN may repeat a field */
            if (cb(ud, a.v[i].key, a.v[i].val, a.v[i].len)) break;
        }
    }
    kvs_free(&a);
    return rc;
}

static int rd_begin(store *s)
{
    rds *r = R(s);
    ops_clear(r);
    r->in_txn = 1;
    return CLARITY_OK;
}

/* Fence first (nothing written when it lost), then the writes in order,
 * then the new version. */
static const char commit_lua[] =
    "if ARGV[1] ~= '-' then\n"
    "  local v = redis.call('HGET', KEYS[1], '" VERSION_FIELD "') or '0'\n"
    "  if v ~= ARGV[1] then return redis.error_reply('CONFLICT version ' .. v) end\n"
    "end\n"
    "local i = 3\n"
    "while i <= #ARGV do\n"
    "  local op, k = ARGV[i], KEYS[tonumber(ARGV[i + 1])]\n"
    "  if op == 'p' then redis.call('HSET', k, ARGV[i + 2], ARGV[i + 3]); i = i + 4\n"
    "  elseif op == 'd' then redis.call('HDEL', k, ARGV[i + 2]); i = i + 3\n"
    "  else redis.call('DEL', k); i = i + 2 end\n"
    "end\n"
    "if ARGV[1] ~= '-' then redis.call('HSET', KEYS[1], '" VERSION_FIELD "', ARGV[2]) end\n"
    "return 1\n";

/* The index (1-based, as a KEYS subscript) of ns among keys, added when new. */
static size_t key_index(char **keys, size_t *nkeys, const char *k)
{
    for (size_t i = 0; i < *nkeys; i++)
        if (strcmp(keys[i], k) == 0) return i + 1;
    keys[(*nkeys)++] = (char *)k;
    return *nkeys;
}

static int rd_commit(store *s)
{
    rds *r = R(s);
    r->in_txn = 0;
    if (r->n_ops == 0 && !r->fenced) return CLARITY_OK;
    size_t max_args = 6 + r->n_ops * 5 + 2;
    const char **argv = calloc(max_args, sizeof *argv);
    size_t *lens = calloc(max_args, sizeof *lens);
    char **hk = calloc(r->n_ops + 1, sizeof *hk), **keys = calloc(r->n_ops + 1, sizeof *keys);
    char (*idx)[24] = calloc(r->n_ops + 1, sizeof *idx);
    char nkeys_s[24], expect[24], next[24];
    size_t nkeys = 0, argc = 0;
    int rc = argv && lens && hk && keys && idx ? CLARITY_OK : store_fail(s, CLARITY_ENOMEM, "out of memory");
    /* KEYS: the fenced namespace first (the script reads KEYS[1]) */
    if (rc == CLARITY_OK && !(hk[r->n_ops] = hkey(r, r->fenced ? r->fence_ns : r->ops[0].ns)))
        rc = store_fail(s, CLARITY_ENOMEM, "out of memory");
    if (rc == CLARITY_OK) key_index(keys, &nkeys, hk[r->n_ops]);
    for (size_t i = 0; rc == CLARITY_OK && i < r->n_ops; i++) {
        if (!(hk[i] = hkey(r, r->ops[i].ns))) rc = store_fail(s, CLARITY_ENOMEM, "out of memory");
        else snprintf(idx[i], sizeof idx[i], "%zu", key_index(keys, &nkeys, hk[i]));
    }
    if (rc == CLARITY_OK) {
        snprintf(nkeys_s, sizeof nkeys_s, "%zu", nkeys);
        snprintf(expect, sizeof expect, "%llu", (unsigned long long)r->fence_expect);
        snprintf(next, sizeof next, "%llu", (unsigned long long)r->fence_next);
        argv[argc++] = "EVAL";
        argv[argc++] = commit_lua;
        argv[argc++] = nkeys_s;
        for (size_t i = 0; i < nkeys; i++) argv[argc++] = keys[i];
        argv[argc++] = r->fenced ? expect : "-";
        argv[argc++] = r->fenced ? next : "-";
    }
    for (size_t i = 0; rc == CLARITY_OK && i < r->n_ops; i++) {
        const rop *o = &r->ops[i];
        argv[argc++] = o->kind == 'p' ? "p" : o->kind == 'd' ? "d" : "x";
        argv[argc++] = idx[i];
        if (o->key) argv[argc++] = o->key;
        if (o->kind == 'p') {
            lens[argc] = o->len;
            argv[argc++] = o->val;
        }
    }
    for (size_t i = 0; rc == CLARITY_OK && i < argc; i++)
        if (!lens[i] && !(argv[i] == NULL)) lens[i] = strlen(argv[i]);
    /* a put of an empty value: its length stays 0 (strlen of "" is 0 too) */
    redisReply *rep = NULL;
    if (rc == CLARITY_OK) rc = command(s, (int)argc, argv, lens, &rep);
    if (rep) freeReplyObject(rep);
    for (size_t i = 0; hk && i <= r->n_ops; i++) free(hk[i]);
    free(hk);
    free(keys);
    free(idx);
    free(argv);
    free(lens);
    ops_clear(r);
    return rc;
}

static void rd_rollback(store *s)
{
    rds *r = R(s);
    r->in_txn = 0;
    ops_clear(r);
}

static int rd_version(store *s, const char *ns, uint64_t *out)
{
    char *val = NULL;
    size_t len = 0;
    int was = R(s)->in_txn;
    R(s)->in_txn = 0; /* the stored version, not a buffered write */
    int rc = rd_get(s, ns, VERSION_FIELD, &val, &len);
    R(s)->in_txn = was;
    if (rc == CLARITY_ENOTFOUND) return CLARITY_OK;
    if (rc != CLARITY_OK) return rc;
    char *end;
    unsigned long long v = strtoull(val, &end, 10);
    rc = len && !*end && len < 21 ? CLARITY_OK
                                  : store_fail(s, CLARITY_ESTORE, "redis: %s: field " VERSION_FIELD " is not a version", ns);
    free(val);
    if (rc == CLARITY_OK) *out = v;
    return rc;
}

static int rd_fence(store *s, const char *ns, uint64_t expect, uint64_t next)
{
    rds *r = R(s);
    char *d = strdup(ns);
    if (!d) return store_fail(s, CLARITY_ENOMEM, "out of memory");
    free(r->fence_ns);
    r->fence_ns = d;
    r->fence_expect = expect;
    r->fence_next = next;
    r->fenced = 1;
    return CLARITY_OK;
}

static void rds_free(rds *r)
{
    if (!r) return;
    ops_clear(r);
    free(r->ops);
    if (r->c) redisFree(r->c);
    free(r->host), free(r->path), free(r->user), free(r->password), free(r->prefix);
    free(r);
}

static void rd_close(store *s) { rds_free(R(s)); }

static const store_vt redis_vt = {
    .name = "redis",
    .get = rd_get,
    .put = rd_put,
    .del = rd_del,
    .del_ns = rd_del_ns,
    .iter = rd_iter,
    .begin = rd_begin,
    .commit = rd_commit,
    .rollback = rd_rollback,
    .version = rd_version,
    .fence = rd_fence,
    .close = rd_close,
};

int store_open_redis(const char *url, const char *prefix, int timeout_ms, store **out, char **err)
{
    *out = NULL;
    rds *r = calloc(1, sizeof *r);
    if (!r) return CLARITY_ENOMEM;
    r->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
    r->prefix = strdup(prefix ? prefix : "clarity:");
    char *why = NULL;
    if (!r->prefix || parse_url(r, url ? url : "", &why) != 0) {
        store_open_err(err, "storage.url: %s", why ? why : "out of memory");
        int rc = why ? CLARITY_ECONFIG : CLARITY_ENOMEM;
        free(why);
        rds_free(r);
        return rc;
    }
    int rc = store_create(&redis_vt, r, out);
    if (rc != CLARITY_OK) {
        rds_free(r);
        return rc;
    }
    connected(*out); /* early, so a first hook does not pay it; failure is retried */
    return CLARITY_OK;
}

#endif
