/* bench_turn: time before_agent_start + agent_end per turn through the ABI.
 *
 * One turn = a 4 KiB prompt and a 16 KiB assistant reply (plus one tool
 * call), over a session already tracking --items items.  Text is generated
 * deterministically from a fixed vocabulary that includes tracked names, so
 * every turn mentions and references a realistic handful of items.
 * --density N: one token in N names a tracked item (default 32: a 16 KiB
 * reply then names ~85 items, a dense reply).
 * Prints median, p99 and p99.9 per hook and per turn for each store backend.
 * --synchronous full: SQLite's synchronous=FULL (storage.synchronous).
 * --disk-writer: a thread writes and fsyncs 1 MiB blocks next to the
 * database all along, so the tail shows what a busy disk does to a turn.
 * --think-us N: N µs between turns, untimed (a model thinks for seconds; 0,
 * the default, runs turns back to back), so work the plugin does between
 * turns (its snapshot folds) shows as it would in a session.
 * --store memory|sqlite: that store only (both by default).
 * --exclusive: SQLite a second time with storage.exclusive ("sqlite-x").
 * --dump FILE: every turn's times as CSV lines "store,turn,before_us,end_us"
 *   (which turns make the tail: a fold's, a checkpoint's).
 *   bench_turn [--plugin PATH] [--items N] [--turns N] [--json FILE] [--smoke]
 *              [--synchronous normal|full] [--disk-writer] [--dir DIR] [--snapshot-every N]
 *              [--think-us N] [--store memory|sqlite] [--exclusive] [--dump FILE]
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clarity.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static long think_us; /* --think-us */
static FILE *dump;     /* --dump */
static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static const char *words[] = {"the", "function", "returns", "value", "after", "checking", "input",
    "config", "update", "handler", "because", "request", "parser", "buffer", "with", "state",
    "should", "render", "cache", "index", "error", "module", "import", "export", "test", "fixed",
    "pipeline", "session", "token", "and", "then", "write", "into", "memory", "layout", "loop"};
#define NWORDS (sizeof words / sizeof *words)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The id of seeded item i, as it is written in text. */
static int item_text(char *out, size_t cap, int i)
{
    switch (i % 4) {
    case 0: return snprintf(out, cap, "Proj%04dCore", i / 4);
    case 1: return snprintf(out, cap, "src/mod%d/file%d.ts", (i / 4) % 50, i / 4);
    case 2: return snprintf(out, cap, "word%04d", i / 4);
    default: return snprintf(out, cap, "term%04d", i / 4);
    }
}

/* Fills buf with about len bytes of text; one token in `density` names a
 * tracked item, the rest are common words, so the item count stays put. */
static size_t gen_text(char *buf, size_t len, int n_items, int density)
{
    size_t off = 0;
    while (off + 64 < len) {
        uint32_t r = next_rand();
        int w;
        if (r % (uint32_t)density == 0) {
            w = item_text(buf + off, len - off, (int)(next_rand() % (uint32_t)n_items));
            buf[off + (size_t)w++] = ' ';
        } else {
            w = snprintf(buf + off, len - off, "%s ", words[r % NWORDS]);
        }
        off += (size_t)w;
    }
    buf[off] = '\0';
    return off;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct stats {
    double p50, p99, p999, mean;
} stats;

static stats summarize(double *v, int n)
{
    stats s = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) s.mean += v[i];
    s.mean /= n;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    s.p50 = v[n / 2];
    s.p99 = v[(int)((double)n * 0.99)];
    s.p999 = v[(int)((double)n * 0.999)];
    return s;
}

/* The concurrent writer of --disk-writer. */
static volatile int writer_stop;
static void *disk_writer(void *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return NULL;
    static char block[1 << 20];
    memset(block, 'x', sizeof block);
    for (int i = 0; !writer_stop; i++) {
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block) break;
        fsync(fd);
        if (i % 64 == 63 && ftruncate(fd, 0) == 0) lseek(fd, 0, SEEK_SET);
    }
    close(fd);
    unlink(path);
    return NULL;
}

typedef struct run_result {
    const char *backend;
    stats before, end, turn;
} run_result;

static int run(clarity_plugin_init_fn init, const char *config, const char *backend, int items,
               int turns, int density, run_result *res)
{
    clarity_host host = {.struct_size = sizeof host, .abi_version = CLARITY_ABI_VERSION};
    clarity_plugin p = {.struct_size = sizeof p};
    char *err = NULL;
    if (init(&host, config, &p, &err) != CLARITY_OK) {
        fprintf(stderr, "init: %s\n", err ? err : "?");
        free(err);
        return -1;
    }
    /* Seed the session with `items` tracked items: a quarter each projects,
     * files, keywords and tools-like custom names. */
    size_t cap = (size_t)items * 160 + 256;
    char *state = malloc(cap);
    size_t off = (size_t)snprintf(state, cap, "{\"session\":\"bench\",\"state\":{\"currentTurn\":10,\"items\":[");
    for (int i = 0; i < items; i++) {
        char text[64], id[80];
        item_text(text, sizeof text, i);
        if (i % 4 == 0) {
            snprintf(id, sizeof id, "proj%04dcore", i / 4);
        } else if (i % 4 == 1) {
            snprintf(id, sizeof id, "file:%s", text);
        } else {
            snprintf(id, sizeof id, "keyword:%s", text);
        }
        off += (size_t)snprintf(state + off, cap - off,
                                "%s{\"id\":\"%s\",\"mentionCount\":%d,\"referenceCount\":%d,\"lastMentionTurn\":%d}",
                                i ? "," : "", id, 1 + i % 5, i % 3, i % 10);
    }
    snprintf(state + off, cap - off, "]}}");
    clarity_result r = {.struct_size = sizeof r};
    if (p.rpc(p.self, "clarity.importState", state, &r) != CLARITY_OK) {
        fprintf(stderr, "import: %s\n", r.error ? r.error : "?");
        return -1;
    }
    p.release(p.self, &r);
    free(state);

    char *prompt = malloc(4096 + 64), *reply = malloc(16384 + 64);
    double *tb = malloc(sizeof(double) * (size_t)turns), *te = malloc(sizeof(double) * (size_t)turns),
           *tt = malloc(sizeof(double) * (size_t)turns);
    for (int t = 0; t < turns; t++) {
        size_t plen = gen_text(prompt, 4096, items, density);
        size_t rlen = gen_text(reply, 16384, items, density);
        char args[128];
        {
            char path[64];
            int k = (int)(next_rand() % (uint32_t)(items / 4)) * 4 + 1;
            item_text(path, sizeof path, k < items ? k : 1);
            snprintf(args, sizeof args, "{\"file_path\":\"/ws/%s\"}", path);
        }
        clarity_before_agent_start b = {sizeof b, "bench", "/ws", prompt, plen, NULL, 0};
        clarity_event ev = {sizeof ev, CLARITY_EV_BEFORE_AGENT_START, 1, &b};
        double t0 = now_us();
        int rc = p.on_event(p.self, &ev, &r);
        double t1 = now_us();
        p.release(p.self, &r);
        clarity_message m = {sizeof m, "assistant", reply, rlen, "Read", args};
        clarity_agent_end e = {sizeof e, "bench", &m, 1, 1, NULL, NULL};
        ev = (clarity_event){sizeof ev, CLARITY_EV_AGENT_END, 1, &e};
        double t2 = now_us();
        rc |= p.on_event(p.self, &ev, &r);
        double t3 = now_us();
        p.release(p.self, &r);
        if (rc != CLARITY_OK) {
            fprintf(stderr, "turn %d failed\n", t);
            return -1;
        }
        tb[t] = t1 - t0;
        te[t] = t3 - t2;
        tt[t] = tb[t] + te[t];
        if (dump) fprintf(dump, "%s,%d,%.2f,%.2f\n", backend, t, tb[t], te[t]);
        if (think_us > 0) {
            struct timespec ts = {think_us / 1000000, (think_us % 1000000) * 1000};
            nanosleep(&ts, NULL);
        }
    }
    res->backend = backend;
    res->before = summarize(tb, turns);
    res->end = summarize(te, turns);
    res->turn = summarize(tt, turns);
    free(prompt);
    free(reply);
    free(tb);
    free(te);
    free(tt);
    p.unload(p.self);
    return 0;
}

/* The SQLite store's config: the file at path, storage.exclusive when excl. */
static void sqlite_cfg(char *out, size_t cap, const char *path, const char *sync, const char *every, int excl,
                       int max_items)
{
    snprintf(out, cap,
             "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"synchronous\":\"%s\",\"exclusive\":%s%s},"
             "\"limits\":{\"maxTrackedItems\":%d}}",
             path, sync, excl ? "true" : "false", every, max_items);
}

int main(int argc, char **argv)
{
    const char *plugin = "build/libclarity.so", *json_out = NULL, *sync = "normal", *dir = "/tmp", *only = NULL;
    char every[64] = "";
    int items = 1000, turns = 2000, density = 32, writer = 0, excl = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plugin") && i + 1 < argc) plugin = argv[++i];
        else if (!strcmp(argv[i], "--items") && i + 1 < argc) items = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--turns") && i + 1 < argc) turns = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_out = argv[++i];
        else if (!strcmp(argv[i], "--density") && i + 1 < argc) density = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--smoke")) items = 40, turns = 20;
        else if (!strcmp(argv[i], "--synchronous") && i + 1 < argc) sync = argv[++i];
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--disk-writer")) writer = 1;
        else if (!strcmp(argv[i], "--exclusive")) excl = 1;
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc) {
            if (!(dump = fopen(argv[++i], "w"))) {
                perror(argv[i]);
                return 1;
            }
        }
        else if (!strcmp(argv[i], "--think-us") && i + 1 < argc) think_us = atol(argv[++i]);
        else if (!strcmp(argv[i], "--store") && i + 1 < argc && (!strcmp(argv[i + 1], "memory") || !strcmp(argv[i + 1], "sqlite")))
            only = argv[++i];
        else if (!strcmp(argv[i], "--snapshot-every") && i + 1 < argc)
            snprintf(every, sizeof every, ",\"snapshotEvery\":%d", atoi(argv[++i]));
        else {
            fprintf(stderr, "usage: bench_turn [--plugin PATH] [--items N] [--turns N] [--json FILE] [--density N] [--smoke]\n"
                            "                  [--synchronous normal|full] [--disk-writer] [--dir DIR] [--snapshot-every N]\n"
                            "                  [--think-us N] [--store memory|sqlite] [--exclusive] [--dump FILE]\n");
            return 2;
        }
    }
    if (items < 8) items = 8;
    if (density < 1) density = 1;
    void *dl = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    clarity_plugin_init_fn init = (clarity_plugin_init_fn)dlsym(dl, CLARITY_PLUGIN_INIT_SYMBOL);
    char db[512], cfg_sqlite[1024], wpath[512];
    snprintf(db, sizeof db, "%s/clarity-bench-%d.db", dir, (int)getpid());
    snprintf(wpath, sizeof wpath, "%s/clarity-bench-writer-%d", dir, (int)getpid());
    sqlite_cfg(cfg_sqlite, sizeof cfg_sqlite, db, sync, every, 0, items * 4 + 100);
    /* --exclusive: also SQLite with storage.exclusive, on a file of its own */
    char db_x[520], cfg_x[1100];
    snprintf(db_x, sizeof db_x, "%s-x", db);
    sqlite_cfg(cfg_x, sizeof cfg_x, db_x, sync, every, 1, items * 4 + 100);
    pthread_t wt;
    if (writer && pthread_create(&wt, NULL, disk_writer, wpath) != 0) return 1;
    char cfg_mem[256];
    snprintf(cfg_mem, sizeof cfg_mem, "{\"storage\":{\"backend\":\"memory\"},\"limits\":{\"maxTrackedItems\":%d}}",
             items * 4 + 100);
    /* --store: one store only (e.g. to count one store's instructions) */
    run_result res[3];
    int nres = 0;
    if (!only || !strcmp(only, "memory")) {
        if (run(init, cfg_mem, "memory", items, turns, density, &res[nres++])) return 1;
    }
    if (!only || !strcmp(only, "sqlite")) {
        if (run(init, cfg_sqlite, "sqlite", items, turns, density, &res[nres++])) return 1;
        if (excl && run(init, cfg_x, "sqlite-x", items, turns, density, &res[nres++])) return 1;
    }
    if (writer) {
        writer_stop = 1;
        pthread_join(wt, NULL);
    }
    static const char *const sfx[] = {"", "-wal", "-shm"};
    for (int k = 0; k < 6; k++) {
        char side[600];
        snprintf(side, sizeof side, "%s%s", k < 3 ? db : db_x, sfx[k % 3]);
        unlink(side);
    }
    printf("bench_turn: %d tracked items, 4 KiB prompt + 16 KiB reply, 1 token in %d names an item, %d turns,"
           " SQLite synchronous=%s%s%s\n", items, density, turns, sync, writer ? ", a disk writer alongside" : "",
           excl ? " (sqlite-x: storage.exclusive)" : "");
    printf("%-8s %14s %14s %14s %14s %14s %14s %14s\n", "store", "before p50 us", "before p99 us",
           "end p50 us", "end p99 us", "turn p50 us", "turn p99 us", "turn p99.9 us");
    for (int i = 0; i < nres; i++)
        printf("%-8s %14.1f %14.1f %14.1f %14.1f %14.1f %14.1f %14.1f\n", res[i].backend, res[i].before.p50,
               res[i].before.p99, res[i].end.p50, res[i].end.p99, res[i].turn.p50, res[i].turn.p99,
               res[i].turn.p999);
    if (json_out) {
        FILE *f = fopen(json_out, "w");
        if (!f) return 1;
        fprintf(f, "{\"items\":%d,\"turns\":%d,\"density\":%d,\"promptBytes\":4096,\"replyBytes\":16384,"
                "\"synchronous\":\"%s\",\"diskWriter\":%s,\"results\":[", items, turns, density, sync,
                writer ? "true" : "false");
        for (int i = 0; i < nres; i++)
            fprintf(f,
                    "%s{\"store\":\"%s\",\"beforeAgentStart\":{\"p50us\":%.2f,\"p99us\":%.2f},"
                    "\"agentEnd\":{\"p50us\":%.2f,\"p99us\":%.2f},\"turn\":{\"p50us\":%.2f,\"p99us\":%.2f,"
                    "\"p999us\":%.2f,\"meanus\":%.2f}}",
                    i ? "," : "", res[i].backend, res[i].before.p50, res[i].before.p99, res[i].end.p50,
                    res[i].end.p99, res[i].turn.p50, res[i].turn.p99, res[i].turn.p999, res[i].turn.mean);
        fprintf(f, "]}\n");
        fclose(f);
    }
    if (dump && fclose(dump) != 0) {
        perror("--dump");
        return 1;
    }
    dlclose(dl);
    return 0;
}
