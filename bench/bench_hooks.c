/* bench_hooks.c: hook latency grid, prune scaling, persistence, restore,
 * bytes per item.  All through the ABI. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "bench.h"

#define SESSION "bench"

static void cfg_memory(char *out, size_t cap, uint64_t items)
{
    snprintf(out, cap,
             "{\"storage\":{\"backend\":\"memory\"},\"limits\":{\"maxTrackedItems\":%llu}}",
             (unsigned long long)(items * 2 + 1000));
}

static void cfg_sqlite(char *out, size_t cap, const char *db, uint64_t items)
{
    snprintf(out, cap,
             "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"},\"limits\":{\"maxTrackedItems\":%llu}}",
             db, (unsigned long long)(items * 2 + 1000));
}

/* Redis (storage.backend redis), a fresh key prefix per run. */
static void cfg_redis(char *out, size_t cap, const char *url, uint64_t items)
{
    static int run;
    snprintf(out, cap,
             "{\"storage\":{\"backend\":\"redis\",\"url\":\"%s\",\"keyPrefix\":\"bench%d-%llu:\"},"
             "\"limits\":{\"maxTrackedItems\":%llu}}",
             url, ++run, (unsigned long long)items, (unsigned long long)(items * 2 + 1000));
}

static void seed(bplug *b, uint64_t n)
{
    char *items = seed_items_json(n, 10);
    bp_import(b, SESSION, 10, items);
    free(items);
}

/* The tool call of a turn: a Read of a seeded doc file. */
static void tool_args(brng *r, uint64_t n_items, char *out, size_t cap)
{
    char path[64];
    uint64_t k = n_items > 1 ? ((uint64_t)rng_next(r) % (n_items / 2)) * 2 + 1 : 1;
    item_text(path, sizeof path, k);
    snprintf(out, cap, "{\"file_path\":\"/ws/%s\"}", path);
}

typedef struct turn_times {
    double *before, *end, *turn;
    size_t n;
} turn_times;

static void tt_alloc(turn_times *t, size_t n)
{
    t->before = malloc(n * sizeof(double));
    t->end = malloc(n * sizeof(double));
    t->turn = malloc(n * sizeof(double));
    t->n = 0;
}

static void tt_free(turn_times *t)
{
    free(t->before);
    free(t->end);
    free(t->turn);
}

/* Runs `turns` (+ warmup) turns with prompt/reply of the given sizes. */
static void run_turns(bplug *b, brng *r, uint64_t n_items, size_t prompt_bytes, size_t reply_bytes,
                      int turns, int warmup, turn_times *tt)
{
    char *prompt = malloc(prompt_bytes + 128), *reply = malloc(reply_bytes + 128);
    char args[128];
    for (int t = -warmup; t < turns; t++) {
        size_t pl = gen_text(r, prompt, prompt_bytes, n_items, 32);
        size_t rl = gen_text(r, reply, reply_bytes, n_items, 32);
        tool_args(r, n_items, args, sizeof args);
        uint64_t t0 = now_ns();
        int rc = bp_before(b, SESSION, prompt, pl);
        uint64_t t1 = now_ns();
        rc |= bp_end(b, SESSION, reply, rl, "Read", args);
        uint64_t t2 = now_ns();
        if (rc != CLARITY_OK) {
            fprintf(stderr, "clarity_bench: turn failed\n");
            exit(1);
        }
        if (t < 0) continue;
        tt->before[tt->n] = (double)(t1 - t0) / 1e3;
        tt->end[tt->n] = (double)(t2 - t1) / 1e3;
        tt->turn[tt->n] = (double)(t2 - t0) / 1e3;
        tt->n++;
    }
    free(prompt);
    free(reply);
}

static long long total_items(bplug *b)
{
    char *out = NULL;
    if (bp_rpc(b, "clarity.stats", "{\"session\":\"" SESSION "\"}", &out) != CLARITY_OK) return -1;
    const char *p = out ? strstr(out, "\"totalItems\":") : NULL;
    long long n = p ? atoll(p + 13) : -1;
    free(out);
    return n;
}

/* ---- hooks: items x sizes ---------------------------------------------- */

int mode_hooks(int argc, char **argv)
{
    static const uint64_t items_full[] = {100, 1000, 10000, 100000};
    static const uint64_t items_smoke[] = {50, 200};
    static const struct {
        size_t bytes;
        int turns_full, turns_smoke;
    } sizes[] = {{1024, 2000, 20}, {16384, 500, 5}, {262144, 60, 2}, {4194304, 10, 0},
                 {16777216, 4, 0}};
    const uint64_t *items = g_smoke ? items_smoke : items_full;
    size_t n_items = g_smoke ? 2 : 4;
    /* hooks --items N --bytes B [--turns T]: one cell, to profile it */
    uint64_t one_items = 0;
    size_t one_bytes = 0;
    int one_turns = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--items")) one_items = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--bytes")) one_bytes = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--turns")) one_turns = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "hooks: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (one_items) items = &one_items, n_items = 1;
    bplug b;
    bp_open_lib(&b, g_plugin_path);
    FILE *f = open_out("hooks.json");
    fprintf(f, "{\"store\":\"memory\",\"density\":32,\"replyEqualsPrompt\":true,\"cells\":[");
    int first = 1;
    for (size_t ii = 0; ii < n_items; ii++) {
        char cfg[256];
        cfg_memory(cfg, sizeof cfg, items[ii]);
        bp_init(&b, cfg);
        seed(&b, items[ii]);
        brng r;
        rng_seed(&r, 0xC1A5u + items[ii]);
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            int turns = g_smoke ? sizes[si].turns_smoke : sizes[si].turns_full;
            if (one_bytes && sizes[si].bytes != one_bytes) continue;
            if (one_turns > 0) turns = one_turns;
            if (turns <= 0) continue;
            turn_times tt;
            tt_alloc(&tt, (size_t)turns);
            run_turns(&b, &r, items[ii], sizes[si].bytes, sizes[si].bytes, turns, g_smoke ? 1 : 2, &tt);
            bstats sb = stats_of(tt.before, tt.n), se = stats_of(tt.end, tt.n),
                   st = stats_of(tt.turn, tt.n);
            long long tracked = total_items(&b);
            fprintf(f, "%s{\"items\":%llu,\"bytes\":%zu,\"turns\":%d,\"trackedAfter\":%lld", first ? "" : ",",
                    (unsigned long long)items[ii], sizes[si].bytes, turns, tracked);
            json_stats(f, "before", &sb, 1);
            json_stats(f, "end", &se, 1);
            json_stats(f, "turn", &st, 1);
            /* bytes per microsecond = MB/s */
            fprintf(f, ",\"promptMBps\":%.2f,\"replyMBps\":%.2f}", (double)sizes[si].bytes / sb.p50,
                    (double)sizes[si].bytes / se.p50);
            first = 0;
            fprintf(stderr, "hooks: %6llu items %8zu B: turn p50 %9.1f us p99 %9.1f us (before %.1f, end %.1f)\n",
                    (unsigned long long)items[ii], sizes[si].bytes, st.p50, st.p99, sb.p50, se.p50);
            tt_free(&tt);
        }
        bp_unload(&b);
    }
    fprintf(f, "]}\n");
    fclose(f);
    return 0;
}

/* ---- prune: scoring + prune vs items ------------------------------------ */

int mode_prune(int argc, char **argv)
{
    static const uint64_t items_full[] = {1000, 3000, 10000, 30000, 100000, 300000};
    static const uint64_t items_smoke[] = {100, 1000};
    const uint64_t *items = g_smoke ? items_smoke : items_full;
    size_t n_items = g_smoke ? 2 : 6;
    bplug b;
    bp_open_lib(&b, g_plugin_path);
    FILE *f = open_out("prune.json");
    fprintf(f, "{\"store\":\"memory\",\"points\":[");
    for (size_t ii = 0; ii < n_items; ii++) {
        uint64_t n = items[ii];
        char cfg[256];
        cfg_memory(cfg, sizeof cfg, n);
        bp_init(&b, cfg);
        seed(&b, n);
        int reps = (int)(3000000 / n);
        if (reps < 5) reps = 5;
        if (reps > 200) reps = 200;
        if (g_smoke) reps = 3;
        double *tp = malloc((size_t)reps * sizeof *tp), *ts = malloc((size_t)reps * sizeof *ts);
        for (int k = 0; k < reps; k++) {
            uint64_t t0 = now_ns();
            bp_rpc(&b, "clarity.prune", "{\"session\":\"" SESSION "\",\"dryRun\":true}", NULL);
            uint64_t t1 = now_ns();
            bp_rpc(&b, "clarity.getScores", "{\"session\":\"" SESSION "\",\"limit\":10}", NULL);
            uint64_t t2 = now_ns();
            tp[k] = (double)(t1 - t0) / 1e3;
            ts[k] = (double)(t2 - t1) / 1e3;
        }
        uint64_t t0 = now_ns();
        int rc = bp_compaction(&b, SESSION);
        double tc = (double)(now_ns() - t0) / 1e3;
        if (rc != CLARITY_OK) exit(1);
        bstats sp = stats_of(tp, (size_t)reps), ss = stats_of(ts, (size_t)reps);
        fprintf(f, "%s{\"items\":%llu,\"reps\":%d", ii ? "," : "", (unsigned long long)n, reps);
        json_stats(f, "pruneDryRun", &sp, 1);
        json_stats(f, "getScoresTop10", &ss, 1);
        fprintf(f, ",\"compactionUs\":%.3f,\"pruneNsPerItem\":%.2f,\"scoresNsPerItem\":%.2f,"
                   "\"compactionNsPerItem\":%.2f}",
                tc, sp.p50 * 1e3 / (double)n, ss.p50 * 1e3 / (double)n, tc * 1e3 / (double)n);
        fprintf(stderr, "prune: %7llu items: dry-run p50 %10.1f us (%.1f ns/item), getScores %10.1f us, compaction %10.1f us\n",
                (unsigned long long)n, sp.p50, sp.p50 * 1e3 / (double)n, ss.p50, tc);
        free(tp);
        free(ts);
        bp_unload(&b);
    }
    fprintf(f, "]}\n");
    fclose(f);
    return 0;
}

/* ---- persist: memory vs sqlite (vs redis) per turn ---------------------- */

/* argv[1], when given, is a Redis URL: a third column on that server. */
/* The turn-log records in the plugin's database (read while it runs: its
 * session's end folds them away): their mean size, and that of the cells
 * the SQLite backend keeps them in (store/sqlite_ring.h: the record's
 * length, u32 LE, then the record, padded to a size class).  0 when none. */
typedef struct rec_sizes {
    double record, cell;
} rec_sizes;

static rec_sizes read_sizes(const char *db)
{
    rec_sizes z = {0, 0};
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    size_t n = 0;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "SELECT val FROM ring", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const unsigned char *c = sqlite3_column_blob(st, 0);
            size_t cn = (size_t)sqlite3_column_bytes(st, 0);
            if (cn < 4) continue;
            z.record += (double)(c[0] | c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24);
            z.cell += (double)cn;
            n++;
        }
    } else {
        fprintf(stderr, "persist: record size: %s\n", sqlite3_errmsg(h));
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    if (n) z.record /= (double)n, z.cell /= (double)n;
    return z;
}

/* read_sizes in a child process, while the plugin has the file open: the
 * plugin's SQLite is a copy of its own, and two copies in one process drop
 * each other's locks (POSIX locks belong to the process). */
static rec_sizes record_sizes(const char *db)
{
    rec_sizes z = {0, 0};
    int fd[2];
    if (pipe(fd) != 0) return z;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        rec_sizes c = read_sizes(db);
        _exit(write(fd[1], &c, sizeof c) == (ssize_t)sizeof c ? 0 : 1);
    }
    close(fd[1]);
    if (pid < 0 || read(fd[0], &z, sizeof z) != (ssize_t)sizeof z) z = (rec_sizes){0, 0};
    close(fd[0]);
    if (pid > 0) waitpid(pid, NULL, 0);
    return z;
}

/* What SQLite itself costs for a durable turn: on the database the plugin
 * wrote (same schema, WAL, synchronous=NORMAL), one transaction per turn
 * rewriting a turn-log slot's row with a cell of `bytes` bytes, as the
 * backend does, timed from BEGIN to COMMIT.  Its rows are made first,
 * untimed, under a namespace number no session has. */
static bstats sqlite_floor(const char *db, int turns, double bytes)
{
    const sqlite3_int64 base = (sqlite3_int64)1 << 46; /* nsid 2^30, slot 0 */
    const int slots = 64;
    bstats none = {0};
    sqlite3 *h = NULL;
    sqlite3_stmt *make = NULL, *put = NULL, *drop = NULL;
    size_t n = (size_t)bytes;
    if (!n || sqlite3_open(db, &h) != SQLITE_OK ||
        sqlite3_exec(h, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, "persist: sqlite floor: %s\n", n ? sqlite3_errmsg(h) : "no record to size it by");
        sqlite3_close(h);
        return none;
    }
    char *val = malloc(n);
    double *t = malloc((size_t)turns * sizeof *t);
    brng r;
    rng_seed(&r, 0xF100u);
    for (size_t i = 0; i < n; i++) val[i] = (char)rng_next(&r);
    int ok = sqlite3_prepare_v2(h, "INSERT OR REPLACE INTO ring(id, val) VALUES(?1, ?2)", -1, &make, NULL) ==
                 SQLITE_OK &&
             sqlite3_prepare_v2(h, "UPDATE ring SET val = ?2 WHERE id = ?1", -1, &put, NULL) == SQLITE_OK &&
             sqlite3_prepare_v2(h, "DELETE FROM ring WHERE id >= ?1", -1, &drop, NULL) == SQLITE_OK;
    for (int i = 0; ok && i < slots; i++)
        ok = sqlite3_bind_int64(make, 1, base + i) == SQLITE_OK &&
             sqlite3_bind_blob(make, 2, val, (int)n, SQLITE_STATIC) == SQLITE_OK &&
             sqlite3_step(make) == SQLITE_DONE && sqlite3_reset(make) == SQLITE_OK;
    for (int i = 0; ok && i < turns; i++) {
        for (int k = 0; k < 8; k++) val[(size_t)k * n / 8] = (char)(i + k); /* a new record each turn */
        uint64_t t0 = now_ns();
        ok = sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_bind_int64(put, 1, base + i % slots) == SQLITE_OK &&
             sqlite3_bind_blob(put, 2, val, (int)n, SQLITE_STATIC) == SQLITE_OK && sqlite3_step(put) == SQLITE_DONE &&
             sqlite3_reset(put) == SQLITE_OK && sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
        t[i] = (double)(now_ns() - t0) / 1e3;
    }
    bstats st = ok ? stats_of(t, (size_t)turns) : none;
    if (!ok) fprintf(stderr, "persist: sqlite floor: %s\n", sqlite3_errmsg(h));
    if (drop && sqlite3_bind_int64(drop, 1, base) == SQLITE_OK) sqlite3_step(drop); /* its rows go */
    sqlite3_finalize(make);
    sqlite3_finalize(put);
    sqlite3_finalize(drop);
    sqlite3_close(h);
    free(val);
    free(t);
    return st;
}

int mode_persist(int argc, char **argv)
{
    static const uint64_t items_list[] = {1000, 10000};
    static const struct {
        const char *name;
        size_t prompt, reply;
    } shapes[] = {{"small", 256, 1024}, {"standard", 4096, 16384}};
    const char *redis_url = argc > 1 ? argv[1] : NULL;
    int nb = redis_url ? 3 : 2;
    int turns = g_smoke ? 10 : 400;
    bplug b;
    bp_open_lib(&b, g_plugin_path);
    FILE *f = open_out("persist.json");
    fprintf(f, "{\"turns\":%d,\"tmpDir\":", turns);
    json_str(f, g_tmp_dir);
    fprintf(f, ",\"points\":[");
    int first = 1;
    for (size_t ii = 0; ii < (g_smoke ? 1u : 2u); ii++) {
        uint64_t n = g_smoke ? 100 : items_list[ii];
        for (size_t si = 0; si < 2; si++) {
            bstats res[3][3], floor = {0};
            rec_sizes sizes = {0, 0};
            for (int backend = 0; backend < nb; backend++) {
                char cfg[1024], db[512];
                tmp_db(db, sizeof db, "persist");
                if (backend == 2) cfg_redis(cfg, sizeof cfg, redis_url, n);
                else if (backend) cfg_sqlite(cfg, sizeof cfg, db, n);
                else cfg_memory(cfg, sizeof cfg, n);
                bp_init(&b, cfg);
                seed(&b, n);
                brng r;
                rng_seed(&r, 0x9E57u + n + si); /* same text for every store */
                turn_times tt;
                tt_alloc(&tt, (size_t)turns);
                run_turns(&b, &r, n, shapes[si].prompt, shapes[si].reply, turns, 3, &tt);
                res[backend][0] = stats_of(tt.before, tt.n);
                res[backend][1] = stats_of(tt.end, tt.n);
                res[backend][2] = stats_of(tt.turn, tt.n);
                tt_free(&tt);
                if (backend == 1) sizes = record_sizes(db);
                bp_unload(&b);
                if (backend == 1) floor = sqlite_floor(db, turns, sizes.cell);
                rm_db(db);
            }
            static const char *const bk[3] = {"memory", "sqlite", "redis"};
            for (int backend = 0; backend < nb; backend++) {
                fprintf(f, "%s{\"items\":%llu,\"shape\":\"%s\",\"promptBytes\":%zu,\"replyBytes\":%zu,\"store\":\"%s\"",
                        first ? "" : ",", (unsigned long long)n, shapes[si].name, shapes[si].prompt,
                        shapes[si].reply, bk[backend]);
                json_stats(f, "before", &res[backend][0], 1);
                json_stats(f, "end", &res[backend][1], 1);
                json_stats(f, "turn", &res[backend][2], 1);
                if (backend == 1) {
                    fprintf(f, ",\"floorRecordBytes\":%.0f,\"floorCellBytes\":%.0f", sizes.record, sizes.cell);
                    json_stats(f, "floorCommit", &floor, 1);
                }
                fprintf(f, "}");
                first = 0;
            }
            fprintf(stderr, "persist: %6llu items %-8s: turn p50 memory %8.1f us, sqlite %8.1f us",
                    (unsigned long long)n, shapes[si].name, res[0][2].p50, res[1][2].p50);
            if (nb == 3) fprintf(stderr, ", redis %8.1f us", res[2][2].p50);
            fprintf(stderr, "; p99 %8.1f / %8.1f", res[0][2].p99, res[1][2].p99);
            if (nb == 3) fprintf(stderr, " / %8.1f", res[2][2].p99);
            fprintf(stderr, " us\n");
            fprintf(stderr, "persist: %6llu items %-8s: SQLite alone, a %.0f-byte record (a %.0f-byte cell) per "
                    "durable commit: p50 %8.1f us, p99 %8.1f us\n",
                    (unsigned long long)n, shapes[si].name, sizes.record, sizes.cell, floor.p50, floor.p99);
        }
    }
    fprintf(f, "]}\n");
    fclose(f);
    return 0;
}

/* ---- restore: unload, reload, first call -------------------------------- */

int mode_restore(int argc, char **argv)
{
    static const uint64_t items_full[] = {1000, 10000, 100000};
    static const uint64_t items_smoke[] = {100, 1000};
    const uint64_t *items = g_smoke ? items_smoke : items_full;
    size_t n_items = g_smoke ? 2 : 3;
    int reps = g_smoke ? 2 : 7;
    bplug b;
    bp_open_lib(&b, g_plugin_path);
    FILE *f = open_out("restore.json");
    fprintf(f, "{\"store\":\"sqlite\",\"reps\":%d,\"points\":[", reps);
    char prompt[1200];
    for (size_t ii = 0; ii < n_items; ii++) {
        uint64_t n = items[ii];
        char cfg[1024], db[512];
        tmp_db(db, sizeof db, "restore");
        cfg_sqlite(cfg, sizeof cfg, db, n);
        bp_init(&b, cfg);
        seed(&b, n);
        bp_unload(&b);
        struct stat sb;
        long long db_bytes = stat(db, &sb) == 0 ? (long long)sb.st_size : -1;
        char wal[600];
        snprintf(wal, sizeof wal, "%s-wal", db);
        if (stat(wal, &sb) == 0) db_bytes += (long long)sb.st_size;
        double *ti = malloc((size_t)reps * sizeof(double)), *tf = malloc((size_t)reps * sizeof(double)),
               *tw = malloc((size_t)reps * sizeof(double));
        brng r;
        rng_seed(&r, 0x5E5u + n);
        for (int k = 0; k < reps; k++) {
            size_t pl = gen_text(&r, prompt, 1024, n, 32);
            uint64_t t0 = now_ns();
            bp_init(&b, cfg);
            uint64_t t1 = now_ns();
            int rc = bp_before(&b, SESSION, prompt, pl);
            uint64_t t2 = now_ns();
            rc |= bp_before(&b, SESSION, prompt, pl);
            uint64_t t3 = now_ns();
            if (rc != CLARITY_OK) exit(1);
            long long tracked = total_items(&b);
            if (tracked < (long long)n) {
                fprintf(stderr, "restore: only %lld of %llu items came back\n", tracked,
                        (unsigned long long)n);
                exit(1);
            }
            bp_unload(&b);
            ti[k] = (double)(t1 - t0) / 1e3;
            tf[k] = (double)(t2 - t1) / 1e3;
            tw[k] = (double)(t3 - t2) / 1e3;
        }
        bstats si = stats_of(ti, (size_t)reps), sf = stats_of(tf, (size_t)reps),
               sw = stats_of(tw, (size_t)reps);
        fprintf(f, "%s{\"items\":%llu,\"dbBytes\":%lld", ii ? "," : "", (unsigned long long)n, db_bytes);
        json_stats(f, "init", &si, 1);
        json_stats(f, "firstCall", &sf, 1);
        json_stats(f, "warmCall", &sw, 1);
        fprintf(f, ",\"firstCallNsPerItem\":%.1f}", sf.p50 * 1e3 / (double)n);
        fprintf(stderr, "restore: %7llu items: init %.1f us, first call %.1f us (%.0f ns/item), warm call %.1f us, db %lld B\n",
                (unsigned long long)n, si.p50, sf.p50, sf.p50 * 1e3 / (double)n, sw.p50, db_bytes);
        free(ti);
        free(tf);
        free(tw);
        rm_db(db);
    }
    fprintf(f, "]}\n");
    fclose(f);
    return 0;
}

/* ---- memory: bytes per tracked item ------------------------------------- */

/* Mentions items [from, to) by name in prompts of `per` names each. */
static void mention_range(bplug *b, uint64_t from, uint64_t to, uint64_t per)
{
    size_t cap = (size_t)per * 24 + 64;
    char *p = malloc(cap);
    for (uint64_t i = from; i < to;) {
        size_t off = 0;
        for (uint64_t k = 0; k < per && i < to; k++, i++) {
            off += (size_t)item_text(p + off, cap - off, i);
            p[off++] = ' ';
        }
        p[off] = '\0';
        if (bp_before(b, SESSION, p, off) != CLARITY_OK ||
            bp_end(b, SESSION, "ok", 2, NULL, NULL) != CLARITY_OK)
            exit(1);
    }
    free(p);
}

int mode_memory(int argc, char **argv)
{
    const char *backend = argc > 1 ? argv[1] : "sqlite";
    uint64_t n = g_smoke ? 5000 : 100000;
    bplug b;
    bp_open_lib(&b, g_plugin_path);
    char cfg[1024], db[512];
    tmp_db(db, sizeof db, "memory");
    if (!strcmp(backend, "sqlite")) cfg_sqlite(cfg, sizeof cfg, db, n);
    else cfg_memory(cfg, sizeof cfg, n);
    bp_init(&b, cfg);
    /* warm up: the session, the store, the regex JIT, a first few items */
    mention_range(&b, 0, 200, 100);
    long long items0 = total_items(&b);
    size_t heap0 = heap_in_use();
    long rss0 = rss_kb();
    mention_range(&b, 200, 200 + n, 500);
    long long items1 = total_items(&b);
    size_t heap1 = heap_in_use();
    long rss1 = rss_kb();
    double added = (double)(items1 - items0);
    double heap_per = (double)(heap1 - heap0) / added;
    double rss_per = (double)(rss1 - rss0) * 1024.0 / added;
    char name[64];
    snprintf(name, sizeof name, "memory-%s.json", backend);
    FILE *f = open_out(name);
    fprintf(f,
            "{\"store\":\"%s\",\"itemsAdded\":%.0f,\"heapBytesPerItem\":%.1f,\"rssBytesPerItem\":%.1f,"
            "\"heapBefore\":%zu,\"heapAfter\":%zu,\"rssBeforeKB\":%ld,\"rssAfterKB\":%ld,\"hwmKB\":%ld}\n",
            backend, added, heap_per, rss_per, heap0, heap1, rss0, rss1, hwm_kb());
    fclose(f);
    fprintf(stderr, "memory (%s store): %.0f items: %.1f heap bytes/item, %.1f RSS bytes/item\n", backend,
            added, heap_per, rss_per);
    bp_unload(&b);
    rm_db(db);
    return 0;
}
