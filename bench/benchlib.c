/* benchlib.c: plugin loading, deterministic text, statistics, RSS. */
#include <dlfcn.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

int g_smoke;
const char *g_plugin_path = "build/libclarity.so";
const char *g_out_dir = "out";
const char *g_tmp_dir = "/tmp";

/* ---- plugin ------------------------------------------------------------ */

void bp_open_lib(bplug *b, const char *path)
{
    memset(b, 0, sizeof *b);
    b->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!b->dl) {
        fprintf(stderr, "clarity_bench: %s\n", dlerror());
        exit(1);
    }
    b->init = (clarity_plugin_init_fn)dlsym(b->dl, CLARITY_PLUGIN_INIT_SYMBOL);
    if (!b->init) {
        fprintf(stderr, "clarity_bench: %s has no %s\n", path, CLARITY_PLUGIN_INIT_SYMBOL);
        exit(1);
    }
}

void bp_init(bplug *b, const char *config_json)
{
    static clarity_host host = {.struct_size = sizeof host, .abi_version = CLARITY_ABI_VERSION};
    b->p = (clarity_plugin){.struct_size = sizeof b->p};
    char *err = NULL;
    if (b->init(&host, config_json, &b->p, &err) != CLARITY_OK) {
        fprintf(stderr, "clarity_bench: init: %s\nconfig: %s\n", err ? err : "?", config_json);
        free(err);
        exit(1);
    }
    b->loaded = 1;
}

void bp_unload(bplug *b)
{
    if (b->loaded) b->p.unload(b->p.self);
    b->loaded = 0;
}

static int send(bplug *b, uint32_t id, const void *data)
{
    clarity_event ev = {sizeof ev, id, 1, data};
    clarity_result r = {.struct_size = sizeof r};
    int rc = b->p.on_event(b->p.self, &ev, &r);
    if (rc != CLARITY_OK && r.error) fprintf(stderr, "clarity_bench: event %u: %s\n", id, r.error);
    b->p.release(b->p.self, &r);
    return rc;
}

int bp_before(bplug *b, const char *session, const char *prompt, size_t len)
{
    clarity_before_agent_start e = {sizeof e, session, "/ws", prompt, len, NULL, 0};
    return send(b, CLARITY_EV_BEFORE_AGENT_START, &e);
}

int bp_end(bplug *b, const char *session, const char *reply, size_t len, const char *tool_name,
           const char *tool_args)
{
    clarity_message m = {sizeof m, "assistant", reply, len, tool_name, tool_args};
    clarity_agent_end e = {sizeof e, session, &m, 1, 1, NULL, NULL};
    return send(b, CLARITY_EV_AGENT_END, &e);
}

int bp_compaction(bplug *b, const char *session)
{
    clarity_before_compaction e = {sizeof e, session, -1, -1};
    return send(b, CLARITY_EV_BEFORE_COMPACTION, &e);
}

int bp_rpc(bplug *b, const char *method, const char *params, char **out)
{
    clarity_result r = {.struct_size = sizeof r};
    int rc = b->p.rpc(b->p.self, method, params, &r);
    if (rc != CLARITY_OK)
        fprintf(stderr, "clarity_bench: %s: %s\n", method, r.error ? r.error : "error");
    if (out) *out = rc == CLARITY_OK && r.data ? strdup(r.data) : NULL;
    b->p.release(b->p.self, &r);
    return rc;
}

void bp_import(bplug *b, const char *session, int64_t current_turn, const char *items_json)
{
    size_t cap = strlen(items_json) + strlen(session) + 128;
    char *params = malloc(cap);
    snprintf(params, cap, "{\"session\":\"%s\",\"state\":{\"currentTurn\":%lld,\"items\":[%s]}}",
             session, (long long)current_turn, items_json);
    if (bp_rpc(b, "clarity.importState", params, NULL) != CLARITY_OK) exit(1);
    free(params);
}

/* ---- deterministic inputs --------------------------------------------- */

void rng_seed(brng *r, uint64_t seed)
{
    r->s = seed ? seed : 0x9E3779B97F4A7C15ull;
}

uint32_t rng_next(brng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (uint32_t)(r->s >> 11);
}

#define LETTERS_SPACE 11881376ull /* 26^5 = 2^5 * 13^5 */

static void letters(char out[6], uint64_t i)
{
    /* a*i + c mod 26^5 is a bijection when a is odd and not a multiple of 13 */
    uint64_t x = (i * 1103515245ull + 12345ull) % LETTERS_SPACE;
    for (int k = 4; k >= 0; k--) {
        out[k] = (char)('a' + x % 26);
        x /= 26;
    }
    out[5] = '\0';
}

int item_kind(uint64_t i)
{
    return (int)(i & 1);
}

int item_text(char *out, size_t cap, uint64_t i)
{
    char l[6];
    letters(l, i);
    if (item_kind(i) == ITEM_PROJECT)
        return snprintf(out, cap, "Proj%c%sCore", l[0] - 32, l + 1);
    return snprintf(out, cap, "docs/%s.md", l);
}

int item_clarity_id(char *out, size_t cap, uint64_t i)
{
    char l[6];
    letters(l, i);
    if (item_kind(i) == ITEM_PROJECT) return snprintf(out, cap, "proj%score", l);
    return snprintf(out, cap, "file:docs/%s.md", l);
}

static const char *const vocab[] = {"the", "function", "returns", "value", "after", "checking",
    "input", "config", "update", "handler", "because", "request", "parser", "buffer", "with",
    "state", "should", "render", "cache", "index", "error", "module", "import", "export", "test",
    "fixed", "pipeline", "session", "token", "and", "then", "write", "into", "memory", "layout",
    "loop"};
#define NVOCAB (sizeof vocab / sizeof *vocab)

size_t gen_text(brng *r, char *buf, size_t len, uint64_t n_items, int density)
{
    size_t off = 0;
    if (density < 1) density = 1;
    while (off + 64 < len) {
        uint32_t x = rng_next(r);
        int w;
        if (n_items && x % (uint32_t)density == 0) {
            w = item_text(buf + off, len - off, (uint64_t)rng_next(r) % n_items);
            buf[off + (size_t)w++] = ' ';
        } else {
            const char *v = vocab[x % NVOCAB];
            size_t l = strlen(v);
            memcpy(buf + off, v, l);
            buf[off + l] = (x >> 24) % 17 == 0 ? '\n' : ' ';
            w = (int)l + 1;
        }
        off += (size_t)w;
    }
    buf[off] = '\0';
    return off;
}

char *seed_items_json(uint64_t n, int64_t current_turn)
{
    size_t cap = (size_t)n * 128 + 16;
    char *s = malloc(cap);
    size_t off = 0;
    char id[64];
    s[0] = '\0';
    for (uint64_t i = 0; i < n; i++) {
        item_clarity_id(id, sizeof id, i);
        int64_t last = current_turn - (int64_t)(i % 12);
        off += (size_t)snprintf(s + off, cap - off,
                                "%s{\"id\":\"%s\",\"mentionCount\":%llu,\"referenceCount\":%llu,"
                                "\"lastMentionTurn\":%lld}",
                                i ? "," : "", id, (unsigned long long)(1 + i % 5),
                                (unsigned long long)(i % 3), (long long)(last < 0 ? 0 : last));
    }
    return s;
}

/* ---- measurement ------------------------------------------------------- */

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

bstats stats_of(double *v, size_t n)
{
    bstats s = {0, 0, 0, 0, 0, n};
    if (!n) return s;
    qsort(v, n, sizeof *v, cmp_d);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    s.mean = sum / (double)n;
    s.min = v[0];
    s.max = v[n - 1];
    s.p50 = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    size_t k = (size_t)((double)n * 0.99 + 0.999999);
    s.p99 = v[k ? k - 1 : 0];
    return s;
}

void json_stats(FILE *f, const char *key, const bstats *s, int comma)
{
    fprintf(f, "%s\"%s\":{\"p50us\":%.3f,\"p99us\":%.3f,\"meanus\":%.3f,\"minus\":%.3f,\"maxus\":%.3f,\"n\":%zu}",
            comma ? "," : "", key, s->p50, s->p99, s->mean, s->min, s->max, s->n);
}

static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0) {
            v = strtol(line + kl, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

long rss_kb(void)
{
    return status_kb("VmRSS:");
}

long hwm_kb(void)
{
    return status_kb("VmHWM:");
}

size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

int tty_progress(void)
{
    return isatty(2);
}

void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

FILE *open_out(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_out_dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    return f;
}

void tmp_db(char *out, size_t cap, const char *tag)
{
    snprintf(out, cap, "%s/clarity-bench-%d-%s.db", g_tmp_dir, (int)getpid(), tag);
    rm_db(out);
}

void rm_db(const char *path)
{
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
    char p[1100];
    for (int k = 0; k < 4; k++) {
        snprintf(p, sizeof p, "%s%s", path, sfx[k]);
        unlink(p);
    }
}
