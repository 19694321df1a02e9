/* hostsvc.c: log, clock and the optional JSON-file-backed kv store. */
#include "hostsvc.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uthash.h>

#include "../util/buf.h"
#include "kvlog.h"

/* The log is folded into a new snapshot once it outgrows this, or twice
 * the snapshot, whichever is larger. */
#define KVLOG_FOLD_MIN (256 * 1024)
/* How long a second process waits for the kv file's lock. */
#define KV_LOCK_WAIT_MS 5000

typedef struct kv_entry {
    char *k;     /* ns '\0' key, klen bytes (plus a trailing NUL) */
    size_t klen;
    size_t nslen;
    char *v;
    size_t vlen;
    UT_hash_handle hh;
} kv_entry;

/* One undone write of the running transaction of a thread. */
typedef struct undo_rec {
    char *k;
    size_t klen, nslen;
    char *old; /* NULL when the key did not exist */
    size_t oldlen;
    struct undo_rec *next;
} undo_rec;

struct hostsvc {
    int threshold;
    char *kv_path; /* NULL = no host kv */
    pthread_mutex_t mu;
    kv_entry *table;
    int dirty;
    int file_exists;
    kvlog *log;          /* kv_path.log: the batches committed since the snapshot */
    off_t snapshot_size; /* bytes of the last snapshot written or read */
    int lock_fd;         /* kv_path.lock, held while the kv is open */
};

/* The open transaction of the calling thread (the plugin brackets one turn). */
static _Thread_local struct {
    hostsvc *owner;
    int depth;
    undo_rec *log;
} tx;

/* ---- logging ------------------------------------------------------------ */

static const char *level_name(int level)
{
    switch (level) {
    case CLARITY_LOG_DEBUG: return "debug";
    case CLARITY_LOG_INFO: return "info";
    case CLARITY_LOG_WARN: return "warn";
    default: return "error";
    }
}

int hostsvc_log_enabled(const hostsvc *h, int level) { return level >= h->threshold; }

static void svc_log(void *ud, int level, const char *msg)
{
    hostsvc *h = ud;
    if (!hostsvc_log_enabled(h, level)) return;
    /* One fprintf call: stdio locks the stream, so lines never interleave. */
    fprintf(stderr, "libclarity: %s: %s\n", level_name(level), msg ? msg : "");
}

void hostsvc_log(hostsvc *h, int level, const char *fmt, ...)
{
    if (h && !hostsvc_log_enabled(h, level)) return;
    va_list ap;
    va_start(ap, fmt);
    char *m = util_vformat(fmt, ap);
    va_end(ap);
    fprintf(stderr, "clarity: %s: %s\n", level_name(level), m ? m : fmt);
    free(m);
}

static int64_t svc_now_ms(void *ud)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- kv ----------------------------------------------------------------- */

static char *make_key(const char *ns, const char *key, size_t *klen, size_t *nslen)
{
    size_t a = strlen(ns), b = strlen(key);
    char *k = malloc(a + b + 2);
    if (!k) return NULL;
    memcpy(k, ns, a + 1);
    memcpy(k + a + 1, key, b + 1);
    *klen = a + 1 + b;
    *nslen = a;
    return k;
}

static void entry_free(kv_entry *e)
{
    free(e->k);
    free(e->v);
    free(e);
}

static char *dup_bytes(const char *v, size_t len)
{
    char *p = malloc(len + 1);
    if (!p) return NULL;
    if (len) memcpy(p, v, len);
    p[len] = '\0';
    return p;
}

/* Sets (val != NULL) or deletes (val == NULL) a composite key.  Always
 * takes ownership of k; caller holds the mutex. */
static int table_set(hostsvc *h, char *k, size_t klen, size_t nslen, const char *val, size_t len)
{
    kv_entry *e = NULL;
    HASH_FIND(hh, h->table, k, klen, e);
    if (!val) {
        free(k);
        if (!e) return CLARITY_ENOTFOUND;
        HASH_DEL(h->table, e);
        entry_free(e);
        h->dirty = 1;
        return CLARITY_OK;
    }
    char *v = dup_bytes(val, len);
    if (!v) {
        free(k);
        return CLARITY_ENOMEM;
    }
    if (e) {
        free(k);
        free(e->v);
        e->v = v;
        e->vlen = len;
    } else {
        e = calloc(1, sizeof *e);
        if (!e) {
            free(v);
            free(k);
            return CLARITY_ENOMEM;
        }
        e->k = k;
        e->klen = klen;
        e->nslen = nslen;
        e->v = v;
        e->vlen = len;
        HASH_ADD_KEYPTR(hh, h->table, e->k, e->klen, e);
    }
    h->dirty = 1;
    return CLARITY_OK;
}

/* Records the current value of k in the thread's undo log (caller holds
 * the mutex).  Returns 0 or CLARITY_ENOMEM. */
static int undo_note(hostsvc *h, const char *k, size_t klen, size_t nslen)
{
    if (tx.owner != h || tx.depth == 0) return 0;
    undo_rec *u = calloc(1, sizeof *u);
    if (!u) return CLARITY_ENOMEM;
    u->k = dup_bytes(k, klen);
    u->klen = klen;
    u->nslen = nslen;
    kv_entry *e = NULL;
    HASH_FIND(hh, h->table, k, klen, e);
    if (e) {
        u->old = dup_bytes(e->v, e->vlen);
        u->oldlen = e->vlen;
    }
    if (!u->k || (e && !u->old)) {
        free(u->k);
        free(u->old);
        free(u);
        return CLARITY_ENOMEM;
    }
    u->next = tx.log;
    tx.log = u;
    return 0;
}

static void undo_free_all(void)
{
    while (tx.log) {
        undo_rec *u = tx.log;
        tx.log = u->next;
        free(u->k);
        free(u->old);
        free(u);
    }
}

/* Makes a batch durable in the log (caller holds the mutex).  0, or
 * CLARITY_ESTORE said in the log. */
static int log_batch(hostsvc *h, const buf *batch)
{
    if (buf_failed(batch)) return CLARITY_ENOMEM;
    if (kvlog_append(h->log, batch, 0) == 0) return CLARITY_OK;
    hostsvc_log(h, CLARITY_LOG_ERROR, "%s.log: %s", h->kv_path, strerror(errno));
    return CLARITY_ESTORE;
}

/* One put or delete outside a batch: durable on its own. */
static int log_single(hostsvc *h, const char *ns, const char *key, const char *val, size_t len)
{
    if (tx.owner == h && tx.depth > 0) return CLARITY_OK; /* logged at commit */
    buf b;
    buf_init(&b);
    kvlog_add(&b, ns, key, val, len);
    int rc = log_batch(h, &b);
    buf_free(&b);
    return rc;
}

static int svc_kv_get(void *ud, const char *ns, const char *key, char **val, size_t *len)
{
    hostsvc *h = ud;
    if (!ns || !key || !val) return CLARITY_EINVAL;
    size_t klen, nslen;
    char *k = make_key(ns, key, &klen, &nslen);
    if (!k) return CLARITY_ENOMEM;
    int rc = CLARITY_ENOTFOUND;
    pthread_mutex_lock(&h->mu);
    kv_entry *e = NULL;
    HASH_FIND(hh, h->table, k, klen, e);
    if (e) {
        *val = dup_bytes(e->v, e->vlen);
        if (len) *len = e->vlen;
        rc = *val ? CLARITY_OK : CLARITY_ENOMEM;
    }
    pthread_mutex_unlock(&h->mu);
    free(k);
    return rc;
}

static int svc_kv_put(void *ud, const char *ns, const char *key, const char *val, size_t len)
{
    hostsvc *h = ud;
    if (!ns || !key || (!val && len)) return CLARITY_EINVAL;
    size_t klen, nslen;
    char *k = make_key(ns, key, &klen, &nslen);
    if (!k) return CLARITY_ENOMEM;
    pthread_mutex_lock(&h->mu);
    int rc = undo_note(h, k, klen, nslen);
    if (rc == 0) rc = log_single(h, ns, key, val ? val : "", len);
    if (rc == 0) rc = table_set(h, k, klen, nslen, val ? val : "", len);
    else free(k);
    pthread_mutex_unlock(&h->mu);
    return rc;
}

static int svc_kv_del(void *ud, const char *ns, const char *key)
{
    hostsvc *h = ud;
    if (!ns || !key) return CLARITY_EINVAL;
    size_t klen, nslen;
    char *k = make_key(ns, key, &klen, &nslen);
    if (!k) return CLARITY_ENOMEM;
    pthread_mutex_lock(&h->mu);
    int rc = undo_note(h, k, klen, nslen);
    kv_entry *e = NULL;
    if (rc == 0) HASH_FIND(hh, h->table, k, klen, e);
    if (rc == 0 && e) rc = log_single(h, ns, key, NULL, 0);
    if (rc == 0) rc = table_set(h, k, klen, nslen, NULL, 0);
    else free(k);
    pthread_mutex_unlock(&h->mu);
    return rc;
}

static void svc_kv_free(void *ud, char *val) { free(val); }

typedef struct snap {
    char *key; /* the key part only */
    char *val;
    size_t len;
} snap;

/* Copies the matching entries under the lock, then calls back without it,
 * so a callback may itself use the store. */
static int svc_kv_iter(void *ud, const char *ns, const char *prefix, clarity_kv_iter_cb cb,
                       void *cbud)
{
    hostsvc *h = ud;
    if (!ns || !cb) return CLARITY_EINVAL;
    if (!prefix) prefix = "";
    size_t nslen = strlen(ns), plen = strlen(prefix);
    snap *v = NULL;
    size_t n = 0, cap = 0;
    int rc = CLARITY_OK;
    pthread_mutex_lock(&h->mu);
    for (kv_entry *e = h->table; e; e = e->hh.next) {
        if (e->nslen != nslen || memcmp(e->k, ns, nslen) != 0) continue;
        const char *key = e->k + nslen + 1;
        if (strncmp(key, prefix, plen) != 0) continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            snap *nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                rc = CLARITY_ENOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        v[n].key = util_strdup(key);
        v[n].val = dup_bytes(e->v, e->vlen);
        v[n].len = e->vlen;
        n++;
        if (!v[n - 1].key || !v[n - 1].val) {
            rc = CLARITY_ENOMEM;
            break;
        }
    }
    pthread_mutex_unlock(&h->mu);
    for (size_t i = 0; i < n && rc == CLARITY_OK; i++)
        if (cb(cbud, v[i].key, v[i].val, v[i].len) != 0) break;
    for (size_t i = 0; i < n; i++) {
        free(v[i].key);
        free(v[i].val);
    }
    free(v);
    return rc;
}

static int svc_kv_begin(void *ud)
{
    hostsvc *h = ud;
    if (tx.depth > 0 && tx.owner != h) return CLARITY_EINVAL;
    tx.owner = h;
    tx.depth++;
    return CLARITY_OK;
}

/* Restores what the thread's batch changed (caller holds the mutex). */
static int undo_batch(hostsvc *h)
{
    int rc = CLARITY_OK;
    for (undo_rec *u = tx.log; u; u = u->next) {
        char *k = dup_bytes(u->k, u->klen);
        if (!k) {
            rc = CLARITY_ENOMEM;
            continue;
        }
        int r = table_set(h, k, u->klen, u->nslen, u->old, u->oldlen);
        if (r == CLARITY_ENOMEM) rc = r;
    }
    return rc;
}

/* The batch's keys with their values now, as one log record (caller holds
 * the mutex).  The undo log lists each write, newest first. */
static int log_commit(hostsvc *h)
{
    buf b;
    buf_init(&b);
    for (undo_rec *u = tx.log; u; u = u->next) {
        kv_entry *e = NULL;
        HASH_FIND(hh, h->table, u->k, u->klen, e);
        kvlog_add(&b, u->k, u->k + u->nslen + 1, e ? e->v : NULL, e ? e->vlen : 0);
    }
    int rc = tx.log ? log_batch(h, &b) : CLARITY_OK;
    buf_free(&b);
    return rc;
}

static int fold_due(const hostsvc *h)
{
    off_t n = kvlog_size(h->log);
    return n > KVLOG_FOLD_MIN && n > 2 * h->snapshot_size;
}

static int svc_kv_commit(void *ud)
{
    hostsvc *h = ud;
    if (tx.owner != h || tx.depth == 0) return CLARITY_EINVAL;
    if (--tx.depth > 0) return CLARITY_OK;
    pthread_mutex_lock(&h->mu);
    int rc = log_commit(h);
    if (rc != CLARITY_OK) undo_batch(h); /* not durable: not committed */
    int fold = rc == CLARITY_OK && fold_due(h);
    pthread_mutex_unlock(&h->mu);
    undo_free_all();
    tx.owner = NULL;
    if (fold) hostsvc_save(h); /* a failure keeps the log: nothing is lost */
    return rc;
}

/* Undoes every write since the outermost kv_begin of this thread. */
static int svc_kv_rollback(void *ud)
{
    hostsvc *h = ud;
    if (tx.owner != h || tx.depth == 0) return CLARITY_EINVAL;
    pthread_mutex_lock(&h->mu);
    int rc = undo_batch(h);
    pthread_mutex_unlock(&h->mu);
    undo_free_all();
    tx.depth = 0;
    tx.owner = NULL;
    return rc;
}

/* ---- the kv file ---------------------------------------------------------- */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_encode(const unsigned char *s, size_t n, buf *out)
{
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16;
        if (i + 1 < n) v |= (unsigned)s[i + 1] << 8;
        if (i + 2 < n) v |= s[i + 2];
        buf_putc(out, b64chars[(v >> 18) & 63]);
        buf_putc(out, b64chars[(v >> 12) & 63]);
        buf_putc(out, i + 1 < n ? b64chars[(v >> 6) & 63] : '=');
        buf_putc(out, i + 2 < n ? b64chars[v & 63] : '=');
    }
}

static int b64_decode(const char *s, size_t n, buf *out)
{
    unsigned v = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '=') break;
        const char *p = c ? strchr(b64chars, c) : NULL;
        if (!p) return -1;
        v = (v << 6) | (unsigned)(p - b64chars);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf_putc(out, (char)((v >> bits) & 0xff));
        }
    }
    return buf_failed(out) ? -1 : 0;
}

static int kv_load_snapshot(hostsvc *h, char **err)
{
    struct stat st;
    if (stat(h->kv_path, &st) != 0 && errno == ENOENT) return 0;
    h->snapshot_size = st.st_size;
    json_error_t je;
    json_t *root = json_load_file(h->kv_path, JSON_ALLOW_NUL, &je);
    if (!root) {
        *err = util_format("%s:%d:%d: %s", h->kv_path, je.line, je.column, je.text);
        return -1;
    }
    h->file_exists = 1;
    if (!json_is_object(root)) {
        *err = util_format("%s: expected a JSON object {\"<namespace>\": {\"<key>\": value}}", h->kv_path);
        json_decref(root);
        return -1;
    }
    const char *ns;
    json_t *keys;
    buf tmp;
    buf_init(&tmp);
    int rc = 0;
    json_object_foreach(root, ns, keys)
    {
        if (!json_is_object(keys)) {
            *err = util_format("%s: namespace \"%s\": expected an object", h->kv_path, ns);
            rc = -1;
            break;
        }
        const char *key;
        json_t *val;
        json_object_foreach(keys, key, val)
        {
            const char *p;
            size_t n;
            buf_reset(&tmp);
            json_t *b64 = json_is_object(val) ? json_object_get(val, "base64") : NULL;
            if (json_is_string(val)) {
                p = json_string_value(val);
                n = json_string_length(val);
            } else if (json_is_string(b64) &&
                       b64_decode(json_string_value(b64), json_string_length(b64), &tmp) == 0) {
                p = tmp.p ? tmp.p : "";
                n = tmp.len;
            } else {
                *err = util_format("%s: %s/%s: expected a string or {\"base64\": \"...\"}", h->kv_path, ns,
                            key);
                rc = -1;
                break;
            }
            size_t klen, nslen;
            char *k = make_key(ns, key, &klen, &nslen);
            if (!k || table_set(h, k, klen, nslen, p, n) != CLARITY_OK) {
                *err = util_format("%s: out of memory", h->kv_path);
                rc = -1;
                break;
            }
        }
        if (rc) break;
    }
    buf_free(&tmp);
    json_decref(root);
    h->dirty = 0;
    return rc;
}

static int apply_op(void *ud, const kvlog_op *op)
{
    hostsvc *h = ud;
    size_t klen = op->nslen + 1 + op->keylen;
    char *k = malloc(klen + 1);
    if (!k) return -1;
    memcpy(k, op->ns, op->nslen);
    k[op->nslen] = '\0';
    memcpy(k + op->nslen + 1, op->key, op->keylen);
    k[klen] = '\0';
    int rc = table_set(h, k, klen, op->nslen, op->type == KVLOG_PUT ? op->val : NULL, op->vallen);
    return rc == CLARITY_ENOMEM ? -1 : 0;
}

/* The snapshot, then the batches the log committed since. */
static int kv_load(hostsvc *h, char **err)
{
    if (kv_load_snapshot(h, err) != 0) return -1;
    char *logp = util_format("%s.log", h->kv_path);
    off_t valid = 0;
    int rc = logp ? kvlog_replay(logp, apply_op, h, &valid, err) : -1;
    if (rc == 0) rc = kvlog_open(logp, valid, &h->log, err);
    if (rc == 0 && valid > 0) h->dirty = 1; /* the snapshot lacks the log's batches */
    if (!logp) *err = util_strdup("out of memory");
    free(logp);
    return rc;
}

/* One clarity process at a time uses a kv file: the log and the snapshot
 * are not merged across processes.  Waits KV_LOCK_WAIT_MS for it. */
static int kv_lock(hostsvc *h, char **err)
{
    char *lp = util_format("%s.lock", h->kv_path);
    h->lock_fd = lp ? open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
    if (h->lock_fd < 0) {
        *err = lp ? util_format("%s: %s", lp, strerror(errno)) : util_strdup("out of memory");
        free(lp);
        return -1;
    }
    for (int waited = 0; flock(h->lock_fd, LOCK_EX | LOCK_NB) != 0; waited += 20) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            *err = util_format("%s: %s", lp, strerror(errno));
            free(lp);
            return -1;
        }
        if (waited >= KV_LOCK_WAIT_MS) {
            *err = util_format("%s is in use by another clarity process (lock %s)", h->kv_path, lp);
            free(lp);
            return -1;
        }
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    free(lp);
    return 0;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return util_strdup(".");
    if (slash == path) return util_strdup("/");
    return util_strndup(path, (size_t)(slash - path));
}

int hostsvc_save(hostsvc *h)
{
    if (!h || !h->kv_path) return 0;
    pthread_mutex_lock(&h->mu);
    if (!h->dirty && h->file_exists) {
        pthread_mutex_unlock(&h->mu);
        return 0;
    }
    json_t *root = json_object();
    buf b;
    buf_init(&b);
    int ok = root != NULL;
    for (kv_entry *e = h->table; e && ok; e = e->hh.next) {
        json_t *nsobj = json_object_get(root, e->k);
        if (!nsobj) {
            nsobj = json_object();
            ok = nsobj && json_object_set_new(root, e->k, nsobj) == 0;
            if (!ok) break;
        }
        json_t *v = json_stringn(e->v, e->vlen); /* NULL when not valid UTF-8 */
        if (!v) {
            buf_reset(&b);
            b64_encode((const unsigned char *)e->v, e->vlen, &b);
            v = json_pack("{s:s}", "base64", b.p ? b.p : "");
        }
        ok = v && json_object_set_new(nsobj, e->k + e->nslen + 1, v) == 0;
    }
    buf_free(&b);
    if (!ok) {
        pthread_mutex_unlock(&h->mu);
        json_decref(root);
        hostsvc_log(h, CLARITY_LOG_ERROR,
                    "%s: cannot encode the host kv (out of memory or a key that is not UTF-8)",
                    h->kv_path);
        return -1;
    }
    /* The mutex stays held until the log is reset: a batch committed
     * meanwhile would be in neither the snapshot nor the log. */

    size_t plen = strlen(h->kv_path);
    char *tmpl = malloc(plen + 16);
    if (!tmpl) {
        pthread_mutex_unlock(&h->mu);
        json_decref(root);
        return -1;
    }
    memcpy(tmpl, h->kv_path, plen);
    memcpy(tmpl + plen, ".tmp.XXXXXX", 12);
    int rc = -1;
    int fd = mkstemp(tmpl);
    if (fd < 0) {
        hostsvc_log(h, CLARITY_LOG_ERROR, "%s: %s", tmpl, strerror(errno));
        goto out;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmpl);
        hostsvc_log(h, CLARITY_LOG_ERROR, "%s: %s", tmpl, strerror(errno));
        goto out;
    }
    int werr = json_dumpf(root, f, JSON_INDENT(1) | JSON_SORT_KEYS) != 0;
    werr |= fputc('\n', f) == EOF;
    werr |= fflush(f) != 0;
    werr |= fsync(fileno(f)) != 0;
    int saved_errno = errno;
    werr |= fclose(f) != 0;
    if (werr) {
        unlink(tmpl);
        hostsvc_log(h, CLARITY_LOG_ERROR, "%s: write failed: %s", tmpl, strerror(saved_errno));
        goto out;
    }
    if (rename(tmpl, h->kv_path) != 0) {
        hostsvc_log(h, CLARITY_LOG_ERROR, "rename %s -> %s: %s", tmpl, h->kv_path, strerror(errno));
        unlink(tmpl);
        goto out;
    }
    /* Make the rename itself durable. */
    char *dir = dir_of(h->kv_path);
    if (dir) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
    h->dirty = 0;
    h->file_exists = 1;
    struct stat st;
    if (stat(h->kv_path, &st) == 0) h->snapshot_size = st.st_size;
    if (h->log && kvlog_reset(h->log) != 0) /* replaying it again is harmless */
        hostsvc_log(h, CLARITY_LOG_WARN, "%s.log: %s", h->kv_path, strerror(errno));
    hostsvc_log(h, CLARITY_LOG_DEBUG, "host kv saved to %s", h->kv_path);
    rc = 0;
out:
    pthread_mutex_unlock(&h->mu);
    free(tmpl);
    json_decref(root);
    return rc;
}

/* ---- lifecycle ------------------------------------------------------------ */

int hostsvc_new(int log_threshold, const char *kv_path, hostsvc **out, char **err)
{
    *out = NULL;
    if (err) *err = NULL;
    hostsvc *h = calloc(1, sizeof *h);
    if (!h) return -1;
    h->threshold = log_threshold;
    h->lock_fd = -1;
    pthread_mutex_init(&h->mu, NULL);
    if (kv_path) {
        h->kv_path = util_strdup(kv_path);
        char *e = NULL;
        if (!h->kv_path || kv_lock(h, &e) != 0 || kv_load(h, &e) != 0) {
            if (err) *err = e ? e : util_strdup("out of memory");
            else free(e);
            hostsvc_free(h);
            return -1;
        }
    }
    *out = h;
    return 0;
}

void hostsvc_fill(hostsvc *h, clarity_host *host)
{
    memset(host, 0, sizeof *host);
    host->struct_size = sizeof *host;
    host->abi_version = CLARITY_ABI_VERSION;
    host->ud = h;
    host->log = svc_log;
    host->now_ms = svc_now_ms;
    if (h->kv_path) {
        host->kv_get = svc_kv_get;
        host->kv_put = svc_kv_put;
        host->kv_del = svc_kv_del;
        host->kv_free = svc_kv_free;
        host->kv_iter = svc_kv_iter;
        host->kv_begin = svc_kv_begin;
        host->kv_commit = svc_kv_commit;
        host->kv_rollback = svc_kv_rollback;
    }
}

void hostsvc_free(hostsvc *h)
{
    if (!h) return;
    kv_entry *e, *tmp;
    HASH_ITER(hh, h->table, e, tmp)
    {
        HASH_DEL(h->table, e);
        entry_free(e);
    }
    if (tx.owner == h) {
        undo_free_all();
        tx.depth = 0;
        tx.owner = NULL;
    }
    kvlog_close(h->log);
    if (h->lock_fd >= 0) close(h->lock_fd); /* releases the lock */
    pthread_mutex_destroy(&h->mu);
    free(h->kv_path);
    free(h);
}
