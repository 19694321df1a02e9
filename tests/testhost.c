#include "testhost.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A deliberately plain kv: an array of entries under a mutex. */
typedef struct th_entry {
    char *ns, *key, *val;
    size_t len;
} th_entry;

struct th_kv {
    pthread_mutex_t mu;
    th_entry *e;
    size_t n, cap;
};

const char *th_build_path(const char *file)
{
    static __thread char path[4096];
    const char *b = getenv("CLARITY_BUILD");
    snprintf(path, sizeof path, "%s/%s", b && *b ? b : "build", file);
    return path;
}

/* Unique in this process by a counter, and across runs by the time the
 * process first asked: a pid comes back, and a file an earlier run left
 * under it (a killed child's WAL, a test that keeps its database) would be
 * taken up as this one's. */
char *th_tmp_path(const char *suffix)
{
    static __thread char path[256];
    static int counter;
    static unsigned long long nonce;
    if (!__atomic_load_n(&nonce, __ATOMIC_ACQUIRE)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned long long v = (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
        unsigned long long zero = 0;
        __atomic_compare_exchange_n(&nonce, &zero, v | 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    snprintf(path, sizeof path, "/tmp/clarity-test-%d-%llx-%d%s", (int)getpid(), nonce,
             __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST), suffix);
    return path;
}

long th_wal_frames(const char *db)
{
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", db);
    struct stat w;
    return stat(wal, &w) == 0 ? (long)(w.st_size / (4096 + 24)) : 0;
}

void th_unlink_db(const char *db)
{
    char side[300];
    unlink(db);
    snprintf(side, sizeof side, "%s-wal", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db);
    unlink(side);
}

static th_entry *kv_find(struct th_kv *kv, const char *ns, const char *key)
{
    for (size_t i = 0; i < kv->n; i++)
        if (strcmp(kv->e[i].ns, ns) == 0 && strcmp(kv->e[i].key, key) == 0) return &kv->e[i];
    return NULL;
}

static int kv_get(void *ud, const char *ns, const char *key, char **val, size_t *len)
{
    struct th_kv *kv = ((th_host *)ud)->kv;
    pthread_mutex_lock(&kv->mu);
    th_entry *e = kv_find(kv, ns, key);
    int rc = CLARITY_ENOTFOUND;
    if (e) {
        *val = malloc(e->len ? e->len : 1);
        memcpy(*val, e->val, e->len);
        *len = e->len;
        rc = CLARITY_OK;
    }
    pthread_mutex_unlock(&kv->mu);
    return rc;
}

static int kv_put(void *ud, const char *ns, const char *key, const char *val, size_t len)
{
    struct th_kv *kv = ((th_host *)ud)->kv;
    pthread_mutex_lock(&kv->mu);
    th_entry *e = kv_find(kv, ns, key);
    if (!e) {
        if (kv->n == kv->cap) {
            kv->cap = kv->cap ? kv->cap * 2 : 64;
            kv->e = realloc(kv->e, kv->cap * sizeof *kv->e);
        }
        e = &kv->e[kv->n++];
        e->ns = strdup(ns);
        e->key = strdup(key);
    } else {
        free(e->val);
    }
    e->val = malloc(len ? len : 1);
    memcpy(e->val, val, len);
    e->len = len;
    pthread_mutex_unlock(&kv->mu);
    return CLARITY_OK;
}

static int kv_del(void *ud, const char *ns, const char *key)
{
    struct th_kv *kv = ((th_host *)ud)->kv;
    pthread_mutex_lock(&kv->mu);
    th_entry *e = kv_find(kv, ns, key);
    if (e) {
        free(e->ns);
        free(e->key);
        free(e->val);
        *e = kv->e[--kv->n];
    }
    pthread_mutex_unlock(&kv->mu);
    return e ? CLARITY_OK : CLARITY_ENOTFOUND;
}

static void kv_free(void *ud, char *val) { free(val); }

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const th_entry *)a)->key, ((const th_entry *)b)->key);
}

static int kv_iter(void *ud, const char *ns, const char *prefix, clarity_kv_iter_cb cb, void *cbud)
{
    struct th_kv *kv = ((th_host *)ud)->kv;
    pthread_mutex_lock(&kv->mu);
    /* snapshot so the callback may not observe concurrent edits */
    th_entry *snap = malloc((kv->n + 1) * sizeof *snap);
    size_t n = 0;
    for (size_t i = 0; i < kv->n; i++)
        if (strcmp(kv->e[i].ns, ns) == 0 && strncmp(kv->e[i].key, prefix, strlen(prefix)) == 0)
            snap[n++] = kv->e[i];
    qsort(snap, n, sizeof *snap, cmp_entry);
    for (size_t i = 0; i < n; i++)
        if (cb(cbud, snap[i].key, snap[i].val, snap[i].len)) break;
    free(snap);
    pthread_mutex_unlock(&kv->mu);
    return CLARITY_OK;
}

size_t th_kv_count(th_host *h, const char *ns)
{
    size_t c = 0;
    pthread_mutex_lock(&h->kv->mu);
    for (size_t i = 0; i < h->kv->n; i++) c += strcmp(h->kv->e[i].ns, ns) == 0;
    pthread_mutex_unlock(&h->kv->mu);
    return c;
}

size_t th_kv_count_prefix(th_host *h, const char *ns, const char *prefix)
{
    size_t c = 0, n = strlen(prefix);
    pthread_mutex_lock(&h->kv->mu);
    for (size_t i = 0; i < h->kv->n; i++)
        c += strcmp(h->kv->e[i].ns, ns) == 0 && strncmp(h->kv->e[i].key, prefix, n) == 0;
    pthread_mutex_unlock(&h->kv->mu);
    return c;
}

char *th_kv_value(th_host *h, const char *ns, const char *key, size_t *len)
{
    char *v = NULL;
    return kv_get(h, ns, key, &v, len) == CLARITY_OK ? v : NULL;
}

static void th_log(void *ud, int level, const char *msg)
{
    th_host *h = ud;
    __atomic_add_fetch(&h->log_lines, 1, __ATOMIC_SEQ_CST);
    if (level >= CLARITY_LOG_WARN) {
        __atomic_add_fetch(&h->error_lines, 1, __ATOMIC_SEQ_CST);
        snprintf(h->last_error, sizeof h->last_error, "%s", msg ? msg : "");
    }
    if (h->count_match[0] && msg && strstr(msg, h->count_match))
        __atomic_add_fetch(&h->matched_lines, 1, __ATOMIC_SEQ_CST);
    if (getenv("CLARITY_TEST_LOG")) fprintf(stderr, "[plugin %d] %s\n", level, msg);
}

int th_open(th_host *h, const char *config_json, int with_kv, char **err)
{
    return th_open_flags(h, config_json, with_kv, 0, err);
}

int th_open_flags(th_host *h, const char *config_json, int with_kv, uint32_t flags, char **err)
{
    memset(h, 0, sizeof *h);
    h->dl = dlopen(th_build_path("libclarity.so"), RTLD_NOW | RTLD_LOCAL);
    if (!h->dl) {
        if (err) *err = strdup(dlerror());
        return -100;
    }
    clarity_plugin_init_fn init = (clarity_plugin_init_fn)dlsym(h->dl, CLARITY_PLUGIN_INIT_SYMBOL);
    h->host.struct_size = sizeof h->host;
    h->host.abi_version = CLARITY_ABI_VERSION;
    h->host.ud = h;
    h->host.log = th_log;
    h->host.flags = flags;
    if (with_kv) {
        h->kv = calloc(1, sizeof *h->kv);
        pthread_mutex_init(&h->kv->mu, NULL);
        h->host.kv_get = kv_get;
        h->host.kv_put = kv_put;
        h->host.kv_del = kv_del;
        h->host.kv_free = kv_free;
        h->host.kv_iter = kv_iter;
    }
    h->p.struct_size = sizeof h->p;
    char *msg = NULL;
    int rc = init(&h->host, config_json, &h->p, &msg);
    if (err) *err = msg;
    else free(msg);
    if (rc != CLARITY_OK) {
        dlclose(h->dl);
        h->dl = NULL;
    }
    return rc;
}

void th_close(th_host *h)
{
    if (h->p.unload && h->dl) h->p.unload(h->p.self);
    if (h->dl) dlclose(h->dl);
    if (h->kv) {
        for (size_t i = 0; i < h->kv->n; i++) {
            free(h->kv->e[i].ns);
            free(h->kv->e[i].key);
            free(h->kv->e[i].val);
        }
        free(h->kv->e);
        pthread_mutex_destroy(&h->kv->mu);
        free(h->kv);
    }
    memset(h, 0, sizeof *h);
}

static _Thread_local char tl_event_error[512];

const char *th_event_error(void) { return tl_event_error; }

static int send_event(th_host *h, uint32_t id, const void *data, char **out)
{
    clarity_event ev = {sizeof ev, id, 1, data};
    clarity_result r = {.struct_size = sizeof r};
    int rc = h->p.on_event(h->p.self, &ev, &r);
    snprintf(tl_event_error, sizeof tl_event_error, "%s", r.error ? r.error : "");
    if (out) *out = r.data ? strdup(r.data) : NULL;
    h->p.release(h->p.self, &r);
    return rc;
}

int th_before(th_host *h, const char *session, const char *workspace, const char *prompt,
              size_t len, char **out)
{
    clarity_before_agent_start p = {sizeof p, session, workspace, prompt, len, NULL, 0};
    return send_event(h, CLARITY_EV_BEFORE_AGENT_START, &p, out);
}

int th_end(th_host *h, const char *session, const char *assistant, const char *tool_name,
           const char *tool_args)
{
    clarity_message m = {sizeof m, "assistant", assistant, assistant ? strlen(assistant) : 0,
                         tool_name, tool_args};
    clarity_agent_end p = {sizeof p, session, &m, 1, 1, NULL, NULL};
    return send_event(h, CLARITY_EV_AGENT_END, &p, NULL);
}

int th_end_msgs(th_host *h, const char *session, const clarity_message *msgs, size_t n)
{
    clarity_agent_end p = {sizeof p, session, msgs, n, 1, NULL, NULL};
    return send_event(h, CLARITY_EV_AGENT_END, &p, NULL);
}

int th_compact(th_host *h, const char *session, char **out)
{
    clarity_before_compaction p = {sizeof p, session, 10, 1000};
    return send_event(h, CLARITY_EV_BEFORE_COMPACTION, &p, out);
}

int th_session_end(th_host *h, const char *session)
{
    clarity_session_end p = {sizeof p, session, "test"};
    return send_event(h, CLARITY_EV_SESSION_END, &p, NULL);
}

int th_cmd(th_host *h, const char *session, const char *line, char **out, char **err)
{
    clarity_result r = {.struct_size = sizeof r};
    int rc = h->p.command(h->p.self, session, line, &r);
    if (out) *out = r.data ? strdup(r.data) : NULL;
    if (err) *err = r.error ? strdup(r.error) : NULL;
    h->p.release(h->p.self, &r);
    return rc;
}

int th_rpc(th_host *h, const char *method, const char *params, json_t **out)
{
    clarity_result r = {.struct_size = sizeof r};
    int rc = h->p.rpc(h->p.self, method, params, &r);
    json_error_t e;
    if (out) *out = r.data ? json_loads(r.data, 0, &e) : NULL;
    h->p.release(h->p.self, &r);
    return rc;
}

json_t *th_item(json_t *scores, const char *id)
{
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(scores, "items"), i, it)
    {
        if (strcmp(json_string_value(json_object_get(it, "id")), id) == 0) return it;
    }
    return NULL;
}

void th_limit_60(void) { alarm(60); }
void th_limit_120(void) { alarm(120); }
