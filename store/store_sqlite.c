/* store_sqlite.c: the embedded SQLite backend.
 *
 * One connection per store, opened SQLITE_OPEN_NOMUTEX: store.c serializes
 * every call on it, so SQLite's own lock around each API call (two per
 * column read) would only add cost.  The checkpoint thread has its own
 * connection.  Durability: journal_mode=WAL with synchronous=NORMAL.  A
 * committed transaction survives the process being killed (kill -9, crash)
 * and the file is never corrupted by that; it is NOT guaranteed to survive a
 * power loss or OS crash (the WAL is fsync'ed only at checkpoints), where
 * the last transactions before the failure may be lost (still without
 * corruption).  storage.synchronous "full" (STORE_SQLITE_SYNC_FULL) fsyncs
 * the WAL at every commit and survives those too.  Where WAL cannot be
 * enabled (":memory:", some network file systems) synchronous=FULL is used
 * instead.  storage.exclusive (STORE_SQLITE_EXCLUSIVE) keeps the file to
 * this process (SQLite's unix-excl VFS): no lock system call per commit.
 *
 * Every statement is prepared once at open (SQLITE_PREPARE_PERSISTENT) and
 * reused with sqlite3_reset/sqlite3_clear_bindings.
 *
 * Iteration reads at most ITER_PAGE_ROWS rows / ITER_PAGE_BYTES bytes, resets
 * the statement, and only then runs the callbacks for that page; the next
 * page starts after the last key seen.  So callbacks may call back into the
 * store (even iterate again) and no statement is left running across them.
 *
 * PRAGMA quick_check is not run at open: it reads the whole file (O(size)),
 * too slow for a plugin that is loaded at gateway start.
 *
 * Checkpoints run off the hook path: SQLite's automatic checkpoint would
 * copy the WAL into the database (and fsync both) inside whichever commit
 * crosses 1000 pages, a multi-millisecond stall in some agent_end.  Here a
 * WAL hook only signals a background thread, which runs a PASSIVE
 * checkpoint on its own connection while the hooks go on writing; the
 * next commit after one that caught up starts the WAL over.
 *
 * The thread is paced.  A checkpoint that starts while commits keep coming
 * cannot catch up, and each costs two fsyncs; run after every commit past
 * CKPT_PAGES (as it once was), a busy gateway's back-to-back turns kept the
 * disk syncing once every two or three commits, which took 15-20 us off
 * every turn's hook (bench_turn on SQLite).  So once the WAL is past
 * CKPT_PAGES the thread waits for CKPT_QUIET_MS without a commit (a turn's
 * gap: the checkpoint then catches up) or for the WAL to grow by another
 * CKPT_PAGES since its last checkpoint, whichever comes first.  Only a
 * stream of commits with no such gap lets the WAL reach CKPT_HARD_PAGES,
 * where the committing thread checkpoints the tail itself: one stall of
 * two fsyncs per 4000 pages.  The thread starts when the WAL first reaches
 * CKPT_PAGES: a process that runs one hook never has it.
 *
 * A store's close leaves a WAL under CLOSE_KEEP_PAGES (64 pages) for the
 * next process instead of checkpointing it (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE).
 * Claude Code runs a process per hook, and the last connection's close
 * copied the WAL into the database and deleted it: two fsyncs, then two
 * more when the next process's first commit made a new WAL (its header
 * and its directory), 0.1-0.2 ms each here and more on a laptop's disk,
 * a third of a hook process.  A WAL left in place is appended to; the
 * next process's open reads it back into a WAL index (one read per frame,
 * at most CLOSE_KEEP_PAGES); the close that finds it past that size
 * checkpoints it as before.  Durability is synchronous=NORMAL's as
 * above: a committed turn survives the process, and the fsyncs that would
 * have made it survive a power loss come with the next checkpoint, not
 * with the process's exit (storage.synchronous "full" syncs every commit).
 *
 * The same thread makes a new session's turn-log rows ahead, when the
 * commits pause (sqlite_ring.h's reservations); for that it starts at a
 * process's RES_MIN_COMMITS-th commit.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../util/buf.h"
#include "sqlite_ring.h"
#include "store_impl.h"

/* 2: turn-log slots in their own rowid table (sqlite_ring.h); a version 1
 * file is moved to it at open. */
#define SCHEMA_VERSION 2
#define ITER_PAGE_ROWS 256
#define ITER_PAGE_BYTES (1u << 20)
#define CKPT_PAGES 1000     /* WAL size (pages) that wakes the checkpointer */
#define CKPT_HARD_PAGES 4000 /* ... and that makes the committer checkpoint itself */
#define WAL_LIMIT_BYTES "16777216" /* the WAL file cut back to this (4,096 pages) when it starts over */
#define CKPT_QUIET_MS 10     /* a pause in the commits long enough to checkpoint in */
#define CLOSE_KEEP_PAGES 64  /* a WAL under this many pages is left in place at close */
#define RES_MIN_COMMITS 16   /* a process's commits before it reserves (one hook's process never does) */

typedef struct sq {
    sqlite3 *db;
    char *path;
    const char *vfs; /* NULL, or "unix-excl" (STORE_SQLITE_EXCLUSIVE): for both connections */
    sqlite3_stmt *get, *put, *del, *del_ns, *iter_from;
    sqlite3_stmt *begin, *commit, *rollback, *begin_read;
    sq_ring ring; /* the turn-log slots */
    /* background checkpointer (WAL mode only) */
    pthread_t ckpt;
    int ckpt_ready;   /* the mutex and condition exist, the WAL hook is ours */
    int ckpt_started; /* the thread runs (under ckpt_mu; started by the first need) */
    int ckpt_failed;  /* it could not be started: commits checkpoint themselves */
    int ckpt_running, ckpt_stop;
    pthread_mutex_t ckpt_mu;
    pthread_cond_t ckpt_cv; /* on CLOCK_MONOTONIC */
    store_ckpt_stats ckpt_stats; /* under ckpt_mu */
    /* set by the WAL hook, read by the thread without the mutex: */
    atomic_ulong commits;   /* commits so far */
    atomic_int wal_pages;   /* the WAL's size after the last one */
    atomic_int ckpt_wanted; /* a checkpoint asked for and not started (set without the mutex,
                             * then signalled under it) */
    int ckpt_at;            /* the thread's: the WAL's size when its last checkpoint began */
    /* reservations of slot rows (sqlite_ring.h), made by the same thread
     * when the commits pause: the one asked for, and the one made that the
     * ring's connection has not been told of (under ckpt_mu).  At most one
     * waits to be told: an ask follows a put, and every slot's put first
     * tells the ring what was made. */
    sq_ring_req res_req, res_done;
    int res_pending;
    uint32_t res_made;    /* res_done's rows made (bit j: slot + j) */
    atomic_int res_news;  /* 1 while res_done waits to be told: read without the mutex */
} sq;

static sq *SQ(store *s) { return s->impl; }

/* Resets a statement after use so it holds no lock nor bound pointer. */
static void done(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

static int fail_db(store *s, const char *what)
{
    sq *q = SQ(s);
    int ec = sqlite3_extended_errcode(q->db);
    return store_fail(s, (ec & 0xff) == SQLITE_NOMEM ? CLARITY_ENOMEM : CLARITY_ESTORE,
                      "store: sqlite %s failed on '%s': %s (%d)", what, q->path,
                      sqlite3_errmsg(q->db), ec);
}

static int bind_nk(sqlite3_stmt *st, const char *ns, const char *key)
{
    int rc = sqlite3_bind_text(st, 1, ns, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK && key) rc = sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    return rc;
}

static int bad_slot(store *s, const char *ns, const char *key)
{
    return store_fail(s, CLARITY_ESTORE, "store: sqlite slot '%s' of namespace '%s' in '%s' is damaged: "
                      "its stored length is past its cell", key, ns, SQ(s)->path);
}

/* A ring call's result (sqlite_ring.h): SQLITE_DONE is success; a code of
 * the ring's own (out of memory, a value too large, a namespace number out
 * of range) is reported by its name, the connection's error otherwise. */
static int ring_done(store *s, int rc, const char *what)
{
    sq *q = SQ(s);
    if (rc == SQLITE_DONE) return CLARITY_OK;
    if ((rc & 0xff) == SQLITE_NOMEM) return store_fail(s, CLARITY_ENOMEM, "store: out of memory");
    if ((sqlite3_extended_errcode(q->db) & 0xff) != (rc & 0xff))
        return store_fail(s, CLARITY_ESTORE, "store: sqlite %s failed on '%s': %s (%d)", what, q->path,
                          sqlite3_errstr(rc), rc);
    return fail_db(s, what);
}

/* A turn-log slot's value. */
static int ring_get(store *s, const char *ns, const char *key, int slot, char **val, size_t *len)
{
    sq *q = SQ(s);
    const char *p;
    size_t n;
    int rc = sq_ring_get(&q->ring, ns, slot, &p, &n);
    if (rc == SQLITE_DONE) return store_not_found(s, ns, key);
    if (rc == SQ_RING_BAD) return bad_slot(s, ns, key);
    if (rc != SQLITE_ROW) return ring_done(s, rc, "get");
    char *v = store_dup_val(p, n);
    sq_ring_get_done(&q->ring);
    if (!v) return store_fail(s, CLARITY_ENOMEM, "store: out of memory");
    *val = v;
    *len = n;
    return CLARITY_OK;
}

static int sq_get(store *s, const char *ns, const char *key, char **val, size_t *len)
{
    sq *q = SQ(s);
    int slot = store_slot_of(key);
    if (slot >= 0) return ring_get(s, ns, key, slot, val, len);
    int rc = bind_nk(q->get, ns, key);
    if (rc == SQLITE_OK) rc = sqlite3_step(q->get);
    if (rc == SQLITE_DONE) {
        done(q->get);
        return store_not_found(s, ns, key);
    }
    if (rc != SQLITE_ROW) {
        rc = fail_db(s, "get");
        done(q->get);
        return rc;
    }
    const char *p = sqlite3_column_blob(q->get, 0);
    size_t n = (size_t)sqlite3_column_bytes(q->get, 0);
    if (!p && n == 0 && sqlite3_errcode(q->db) == SQLITE_NOMEM) {
        done(q->get);
        return store_fail(s, CLARITY_ENOMEM, "store: out of memory");
    }
    char *v = store_dup_val(p, n);
    done(q->get);
    if (!v) return store_fail(s, CLARITY_ENOMEM, "store: out of memory");
    *val = v;
    *len = n;
    return CLARITY_OK;
}

/* Runs a statement that returns no rows. */
static int run(store *s, sqlite3_stmt *st, int brc, const char *what)
{
    int rc = brc == SQLITE_OK ? sqlite3_step(st) : brc;
    int ret = rc == SQLITE_DONE ? CLARITY_OK : fail_db(s, what);
    done(st);
    return ret;
}

static void res_tell(sq *q);
static void res_ask(sq *q);
static int res_possible(const sq *q);

static int sq_put(store *s, const char *ns, const char *key, const char *val, size_t len)
{
    sq *q = SQ(s);
    int slot = store_slot_of(key);
    if (slot >= 0) {
        res_tell(q);
        sq_ring_ahead ahead = res_possible(q) ? SQ_AHEAD_ASK : SQ_AHEAD_SELF;
        int rc = ring_done(s, sq_ring_put(&q->ring, ns, slot, val, len, ahead), "put");
        if (sqlite3_get_autocommit(q->db)) res_ask(q); /* committed */
        return rc;
    }
    int rc = bind_nk(q->put, ns, key);
    /* A non-NULL pointer even for len 0: a NULL one would bind SQL NULL. */
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_blob64(q->put, 3, val ? val : "", (sqlite3_uint64)len, SQLITE_STATIC);
    return run(s, q->put, rc, "put");
}

static int sq_del(store *s, const char *ns, const char *key)
{
    sq *q = SQ(s);
    int slot = store_slot_of(key);
    if (slot >= 0) return ring_done(s, sq_ring_del(&q->ring, ns, slot), "del");
    return run(s, q->del, bind_nk(q->del, ns, key), "del");
}

static int sq_del_ns(store *s, const char *ns)
{
    sq *q = SQ(s);
    int rc = ring_done(s, sq_ring_del_ns(&q->ring, ns), "del_ns");
    return rc == CLARITY_OK ? run(s, q->del_ns, bind_nk(q->del_ns, ns, NULL), "del_ns") : rc;
}

typedef struct row {
    size_t koff, voff, vlen;
} row;

/* The kv table's part of sq_iter; *stopped when cb asked to stop. */
static int kv_iter(store *s, const char *ns, const char *prefix, store_iter_cb cb, void *ud, int *stopped)
{
    sq *q = SQ(s);
    buf lower, page;
    buf_init(&lower);
    buf_init(&page);
    row *rows = malloc(ITER_PAGE_ROWS * sizeof *rows);
    size_t plen = strlen(prefix);
    buf_puts(&lower, prefix);
    int ret = CLARITY_OK;
    if (!rows || buf_failed(&lower)) ret = CLARITY_ENOMEM;
    /* from the prefix on, in key order, up to the first key without it
     * (checked here: an upper bound in the query costs SQLite a key
     * comparison per row) */
    sqlite3_stmt *st = q->iter_from;
    int more = ret == CLARITY_OK;
    while (more) {
        more = 0;
        buf_reset(&page);
        size_t n = 0;
        int rc = bind_nk(st, ns, lower.p);
        while (rc == SQLITE_OK || rc == SQLITE_ROW) {
            if ((rc = sqlite3_step(st)) != SQLITE_ROW) break;
            const char *k = (const char *)sqlite3_column_text(st, 0);
            size_t kn = (size_t)sqlite3_column_bytes(st, 0);
            if (!k) break; /* out of memory converting the key */
            if (kn < plen || memcmp(k, prefix, plen) != 0) { /* past the prefix's keys */
                rc = SQLITE_DONE;
                break;
            }
            const char *v = sqlite3_column_blob(st, 1);
            size_t vn = (size_t)sqlite3_column_bytes(st, 1);
            rows[n].koff = page.len;
            buf_append(&page, k, kn);
            buf_putc(&page, '\0');
            rows[n].voff = page.len;
            rows[n].vlen = vn;
            buf_append(&page, v ? v : "", vn);
            if (buf_failed(&page)) break;
            if (++n == ITER_PAGE_ROWS || page.len >= ITER_PAGE_BYTES) {
                more = 1;
                rc = SQLITE_DONE;
                break;
            }
        }
        if (buf_failed(&page)) ret = CLARITY_ENOMEM;
        else if (rc != SQLITE_DONE && rc != SQLITE_ROW) ret = fail_db(s, "iter");
        else if (rc == SQLITE_ROW) ret = CLARITY_ENOMEM; /* column_text failed */
        done(st);
        if (ret != CLARITY_OK) break;
        /* The statement is reset: the callbacks may use the store freely. */
        for (size_t i = 0; i < n; i++) {
            if (cb(ud, page.p + rows[i].koff, page.p + rows[i].voff, rows[i].vlen)) {
                more = 0;
                *stopped = 1;
                break;
            }
        }
        if (more) {
            /* No key holds a NUL, so the smallest key above last is last+"\x01". */
            const char *last = page.p + rows[n - 1].koff;
            buf_reset(&lower);
            buf_puts(&lower, last);
            buf_putc(&lower, '\x01');
            if (buf_failed(&lower)) ret = CLARITY_ENOMEM;
            more = ret == CLARITY_OK;
        }
    }
    if (ret == CLARITY_ENOMEM) store_fail(s, ret, "store: out of memory");
    free(rows);
    buf_free(&lower);
    buf_free(&page);
    return ret;
}

/* The kv rows, then the turn-log slots (no order across the two). */
static int sq_iter(store *s, const char *ns, const char *prefix, store_iter_cb cb, void *ud)
{
    int stopped = 0, bad;
    int rc = kv_iter(s, ns, prefix, cb, ud, &stopped);
    if (rc != CLARITY_OK || stopped) return rc;
    rc = sq_ring_iter(&SQ(s)->ring, ns, prefix, cb, ud, &stopped, &bad);
    if (rc == SQ_RING_BAD) {
        char key[7];
        store_slot_key(key, (unsigned)bad);
        return bad_slot(s, ns, key);
    }
    return ring_done(s, rc, "iter");
}

static int sq_begin(store *s)
{
    sq *q = SQ(s);
    return run(s, q->begin, SQLITE_OK, "BEGIN IMMEDIATE");
}

/* A deferred BEGIN: the first read takes the WAL snapshot every later
 * read of the transaction sees; no write lock. */
static int sq_begin_read(store *s)
{
    sq *q = SQ(s);
    return run(s, q->begin_read, SQLITE_OK, "BEGIN");
}

static void sq_rollback(store *s)
{
    sq *q = SQ(s);
    /* SQLite may already have rolled back by itself (IOERR, FULL, NOMEM...). */
    if (!sqlite3_get_autocommit(q->db)) {
        sqlite3_step(q->rollback);
        done(q->rollback);
    }
    sq_ring_rollback(&q->ring);
    sq_ring_req dropped; /* the row it was asked for is gone */
    sq_ring_take_request(&q->ring, &dropped);
}

static int sq_commit(store *s)
{
    sq *q = SQ(s);
    int rc = run(s, q->commit, SQLITE_OK, "COMMIT");
    if (rc != CLARITY_OK) {
        sq_rollback(s); /* the transaction ends either way */
    } else {
        sq_ring_committed(&q->ring);
        res_ask(q);
    }
    return rc;
}

static void ckpt_stop(sq *q)
{
    if (!q->ckpt_ready) return;
    pthread_mutex_lock(&q->ckpt_mu);
    int started = q->ckpt_started;
    q->ckpt_stop = 1;
    pthread_cond_signal(&q->ckpt_cv);
    pthread_mutex_unlock(&q->ckpt_mu);
    if (started) pthread_join(q->ckpt, NULL);
    pthread_mutex_destroy(&q->ckpt_mu);
    pthread_cond_destroy(&q->ckpt_cv);
    q->ckpt_ready = q->ckpt_started = 0;
}

/* Whether the close leaves the WAL to the next process (CLOSE_KEEP_PAGES):
 * with the WAL hook ours (a WAL file), and the WAL under that size after
 * this process's last commit (none: it is as this process found it). */
static int close_keeps_wal(const sq *q)
{
    return q->db && q->ckpt_ready && atomic_load_explicit(&q->wal_pages, memory_order_relaxed) < CLOSE_KEEP_PAGES;
}

static void sq_free(sq *q)
{
    int keep = close_keeps_wal(q); /* (before ckpt_stop, which clears ckpt_ready) */
    ckpt_stop(q);
    if (keep) sqlite3_db_config(q->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    sqlite3_stmt **all[] = {&q->get,   &q->put,    &q->del,      &q->del_ns,    &q->iter_from,
                            &q->begin, &q->commit, &q->rollback, &q->begin_read};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        sqlite3_finalize(*all[i]);
        *all[i] = NULL;
    }
    sq_ring_close(&q->ring);
    sqlite3_close_v2(q->db); /* harmless on NULL */
    free(q->path);
    free(q);
}

static void sq_close(store *s) { sq_free(SQ(s)); }

static const store_vt sqlite_vt = {
    .name = "sqlite",
    .reuses_slots = 1,
    .get = sq_get,
    .put = sq_put,
    .del = sq_del,
    .del_ns = sq_del_ns,
    .iter = sq_iter,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .begin_read = sq_begin_read,
    .end_read = sq_rollback,
    .close = sq_close,
};

/* ---- open ---------------------------------------------------------------- */

static int open_fail(sq *q, char **err, const char *what)
{
    int ec = q->db ? sqlite3_extended_errcode(q->db) : SQLITE_NOMEM;
    int rc = (ec & 0xff) == SQLITE_NOMEM ? CLARITY_ENOMEM : CLARITY_ESTORE;
    /* locked at open: another process holds the file for good (its
     * storage.exclusive), or this one asks for it and another has it open */
    const char *why = (ec & 0xff) != SQLITE_BUSY ? ""
                      : q->vfs ? " (storage.exclusive: another process has the file open)"
                               : " (another process may hold it with storage.exclusive)";
    store_open_err(err, "store: cannot open sqlite database '%s': %s: %s%s", q->path, what,
                   q->db ? sqlite3_errmsg(q->db) : "out of memory", why);
    sq_free(q);
    return rc;
}

/* Called by SQLite after each commit with the WAL's size in pages.  The WAL
 * only rewinds when a checkpoint has caught up with the last commit; under
 * a continuous stream of commits the background thread never does, so past
 * a hard size the committing thread checkpoints itself, as SQLite's own
 * automatic checkpoint would.  The thread is woken once, not at every
 * commit: it waits for the commits to pause by itself (ckpt_wait). */
static void *ckpt_main(void *arg);

/* Starts the thread at the first checkpoint it is needed for (under
 * ckpt_mu): a process that runs one hook and exits (Claude Code's) never
 * fills 1,000 pages, and the thread's own connection was most of its
 * store's open and close (3.6 -> 2.9 ms a `clarity hook`). */
static int ckpt_thread(sq *q)
{
    if (!q->ckpt_started && !q->ckpt_failed) {
        if (pthread_create(&q->ckpt, NULL, ckpt_main, q) == 0) q->ckpt_started = 1;
        else q->ckpt_failed = 1;
    }
    return q->ckpt_started;
}

static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    sq *q = arg;
    atomic_fetch_add_explicit(&q->commits, 1, memory_order_relaxed);
    atomic_store_explicit(&q->wal_pages, pages, memory_order_relaxed);
    if (pages < CKPT_PAGES) return SQLITE_OK;
    if (pages < CKPT_HARD_PAGES && !atomic_exchange(&q->ckpt_wanted, 1)) {
        pthread_mutex_lock(&q->ckpt_mu);
        int up = ckpt_thread(q);
        if (up) pthread_cond_signal(&q->ckpt_cv);
        else atomic_store(&q->ckpt_wanted, 0);
        pthread_mutex_unlock(&q->ckpt_mu);
        if (up) return SQLITE_OK;
    }
    /* (ckpt_failed is only written here, under the store's mutex) */
    if (pages >= CKPT_HARD_PAGES || q->ckpt_failed) { /* as SQLite's automatic checkpoint would */
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        pthread_mutex_lock(&q->ckpt_mu);
        q->ckpt_stats.on_commit++;
        pthread_mutex_unlock(&q->ckpt_mu);
    }
    return SQLITE_OK;
}

static int exec1(sqlite3 *db, const char *sql, char **text);

/* The WAL's growth since the thread's last checkpoint began (after a
 * rewind, its whole size). */
static int wal_growth(const sq *q)
{
    int pages = atomic_load_explicit(&q->wal_pages, memory_order_relaxed);
    return pages >= q->ckpt_at ? pages - q->ckpt_at : pages;
}

/* With ckpt_mu held: waits CKPT_QUIET_MS (or until the store closes);
 * whether no commit came meanwhile. */
static int quiet(sq *q)
{
    unsigned long before = atomic_load_explicit(&q->commits, memory_order_relaxed);
    long long end = store_now_ns() + CKPT_QUIET_MS * 1000000LL;
    struct timespec until = {(time_t)(end / 1000000000LL), (long)(end % 1000000000LL)};
    int rc = 0;
    while (!q->ckpt_stop && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&q->ckpt_cv, &q->ckpt_mu, &until);
    return atomic_load_explicit(&q->commits, memory_order_relaxed) == before;
}

/* With ckpt_mu held: waits until a checkpoint is worth starting (the
 * commits paused for CKPT_QUIET_MS, or the WAL grew by CKPT_PAGES since
 * the last one).  Returns 1 when the store is closing instead. */
static int ckpt_wait(sq *q)
{
    while (!q->ckpt_stop && wal_growth(q) < CKPT_PAGES && !quiet(q)) continue;
    return q->ckpt_stop;
}

/* ---- reservations (sqlite_ring.h), on the checkpoint thread ----------- */

/* After a commit: hands the reservation its puts asked for to the thread,
 * started for it in a process that has committed RES_MIN_COMMITS times
 * (a `clarity hook` process commits once or twice: no thread for it). */
static int res_possible(const sq *q)
{
    return q->ckpt_ready && atomic_load_explicit(&q->commits, memory_order_relaxed) >= RES_MIN_COMMITS;
}

static void res_ask(sq *q)
{
    sq_ring_req req;
    if (!sq_ring_take_request(&q->ring, &req) || !res_possible(q)) return;
    pthread_mutex_lock(&q->ckpt_mu);
    q->res_req = req; /* the latest ask replaces one not made yet */
    /* the thread is woken only for a first ask: one waiting for a pause
     * sees this one then, and a wake-up at every commit of a stream cost
     * its hook 10 us or more */
    if (!q->res_pending) {
        q->res_pending = ckpt_thread(q);
        if (q->res_pending) pthread_cond_signal(&q->ckpt_cv);
    }
    pthread_mutex_unlock(&q->ckpt_mu);
}

/* Before a slot's put: tells the ring what the thread made since. */
static void res_tell(sq *q)
{
    if (!q->ckpt_ready || !atomic_load_explicit(&q->res_news, memory_order_acquire)) return;
    pthread_mutex_lock(&q->ckpt_mu);
    sq_ring_req done = q->res_done;
    uint32_t made = q->res_made;
    atomic_store_explicit(&q->res_news, 0, memory_order_release);
    pthread_mutex_unlock(&q->ckpt_mu);
    sq_ring_note_reserved(&q->ring, &done, made);
}

/* With ckpt_mu held: waits for the commits to pause CKPT_QUIET_MS (a
 * reservation's write transaction then makes no hook wait), or for a
 * checkpoint to be wanted.  Returns 1 when the store is closing. */
static int res_wait(sq *q)
{
    while (!q->ckpt_stop && !atomic_load(&q->ckpt_wanted) && !quiet(q)) continue;
    return q->ckpt_stop;
}

/* With ckpt_mu held: makes the reservation asked for, on the thread's
 * connection db (st: its statement), and keeps what it made for res_tell. */
static void res_make(sq *q, sqlite3 *db, sqlite3_stmt **st)
{
    sq_ring_req req = q->res_req;
    q->res_pending = 0;
    pthread_mutex_unlock(&q->ckpt_mu);
    uint32_t made = db ? sq_ring_reserve(db, st, &req) : 0;
    pthread_mutex_lock(&q->ckpt_mu);
    if (!made) return;
    q->res_done = req;
    q->res_made = made;
    q->ckpt_stats.reservations++;
    atomic_store_explicit(&q->res_news, 1, memory_order_release);
}

static void *ckpt_main(void *arg)
{
    sq *q = arg;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(q->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, q->vfs) !=
        SQLITE_OK) {
        sqlite3_close_v2(db);
        db = NULL; /* checkpoints then happen when the store closes */
    } else {
        sqlite3_busy_timeout(db, 1000);
        /* A connection learns that the file is in WAL mode when it first
         * reads it; until then a checkpoint on it does nothing and reports
         * success (and every checkpoint fell to the committing thread). */
        exec1(db, "SELECT 1 FROM sqlite_master LIMIT 1", NULL);
    }
    sqlite3_stmt *res_st = NULL;
    pthread_mutex_lock(&q->ckpt_mu);
    for (;;) {
        while (!atomic_load(&q->ckpt_wanted) && !q->res_pending && !q->ckpt_stop)
            pthread_cond_wait(&q->ckpt_cv, &q->ckpt_mu);
        if (q->ckpt_stop) break;
        if (!atomic_load(&q->ckpt_wanted)) { /* a reservation, when the commits pause */
            if (res_wait(q)) break;
            if (q->res_pending && !atomic_load(&q->ckpt_wanted)) res_make(q, db, &res_st);
            continue;
        }
        if (ckpt_wait(q)) break;
        q->ckpt_running = 1;
        q->ckpt_at = atomic_load_explicit(&q->wal_pages, memory_order_relaxed);
        atomic_store(&q->ckpt_wanted, 0); /* commits from here on may wake it again */
        pthread_mutex_unlock(&q->ckpt_mu);
        int copied = 0;
        if (db) sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, &copied);
        pthread_mutex_lock(&q->ckpt_mu);
        q->ckpt_running = 0;
        q->ckpt_stats.background++;
        if (copied > 0) q->ckpt_stats.background_copied++;
    }
    pthread_mutex_unlock(&q->ckpt_mu);
    sqlite3_finalize(res_st);
    sqlite3_close_v2(db);
    return NULL;
}

/* Moves checkpoints off the commits: the WAL hook (which replaces SQLite's
 * automatic checkpoint) starts the thread when the WAL first needs one
 * (ckpt_thread).  Without a mutex and a condition, SQLite's own automatic
 * checkpoint stays. */
static void ckpt_start(sq *q)
{
    atomic_init(&q->commits, 0);
    atomic_init(&q->wal_pages, 0);
    atomic_init(&q->ckpt_wanted, 0);
    atomic_init(&q->res_news, 0);
    if (pthread_mutex_init(&q->ckpt_mu, NULL) != 0) return;
    pthread_condattr_t ca;
    int ok = pthread_condattr_init(&ca) == 0;
    ok = ok && pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&q->ckpt_cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!ok) {
        pthread_mutex_destroy(&q->ckpt_mu);
        return;
    }
    q->ckpt_ready = 1;
    sqlite3_wal_hook(q->db, wal_hook, q); /* replaces the automatic checkpoint */
}

int store_sqlite_ckpt_stats(store *s, store_ckpt_stats *out)
{
    if (!s || !out) return CLARITY_EINVAL;
    if (s->vt != &sqlite_vt) return CLARITY_DECLINED;
    sq *q = SQ(s);
    memset(out, 0, sizeof *out);
    if (!q->ckpt_ready) return CLARITY_OK;
    pthread_mutex_lock(&q->ckpt_mu);
    *out = q->ckpt_stats;
    out->busy = atomic_load(&q->ckpt_wanted) || q->ckpt_running;
    out->thread = q->ckpt_started;
    pthread_mutex_unlock(&q->ckpt_mu);
    return CLARITY_OK;
}

/* Runs one statement, optionally returning the first column of the first
 * row (malloc'ed) in *text. */
static int exec1(sqlite3 *db, const char *sql, char **text)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && text) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        *text = t ? strdup(t) : NULL;
        if (!*text && t) rc = SQLITE_NOMEM;
    }
    if (rc == SQLITE_ROW) rc = SQLITE_DONE;
    if (rc == SQLITE_DONE) rc = sqlite3_finalize(st);
    else sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int prep(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
    return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
}

static int open_prepared(sq *q, const char *path, int wal, store **out, char **err);

int store_open_sqlite(const char *path, int flags, store **out, char **err)
{
    if (err) *err = NULL;
    if (!out) return CLARITY_EINVAL;
    *out = NULL;
    if (!path || !*path) {
        store_open_err(err, "store: sqlite database path is empty");
        return CLARITY_EINVAL;
    }
    /* A read-only file is refused before SQLite opens it: WAL mode would
     * leave -wal and -shm files behind with the file's 0444 mode, which
     * then break the database once it is writable again. */
    struct stat st;
    if (strcmp(path, ":memory:") != 0 && stat(path, &st) == 0 &&
        (!(st.st_mode & 0222) || access(path, W_OK) != 0)) {
        store_open_err(err, "store: cannot open sqlite database '%s': the file is read-only", path);
        return CLARITY_ESTORE;
    }
    sq *q = calloc(1, sizeof *q);
    if (!q) return CLARITY_ENOMEM;
    q->path = strdup(path);
    if (!q->path) {
        free(q);
        return CLARITY_ENOMEM;
    }
    /* unix-excl: the first read takes a lock on the file for the
     * connection's life, shared by this process's connections (the
     * checkpointer's) and refused to others, and the WAL index lives in
     * the heap: a commit then takes no lock by system call (six fcntl()
     * on the -shm file otherwise). */
    if (flags & STORE_SQLITE_EXCLUSIVE) {
        q->vfs = "unix-excl";
        if (!sqlite3_vfs_find(q->vfs)) {
            store_open_err(err, "store: storage.exclusive needs SQLite's unix-excl VFS, which this SQLite lacks");
            sq_free(q);
            return CLARITY_ECONFIG;
        }
    }
    int rc = sqlite3_open_v2(
        path, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, q->vfs);
    if (rc != SQLITE_OK) return open_fail(q, err, "open");
    sqlite3_extended_result_codes(q->db, 1);
    /* Same as PRAGMA busy_timeout=5000: another process (the CLI, a second
     * gateway) holding the write lock is waited for up to 5 s. */
    sqlite3_busy_timeout(q->db, 5000);

    /* The first statement reads the header: "file is not a database" and
     * unreadable files are reported here. */
    char *mode = NULL;
    rc = exec1(q->db, "PRAGMA journal_mode=WAL", &mode);
    if (rc != SQLITE_OK) {
        free(mode);
        return open_fail(q, err, "journal_mode=WAL");
    }
    int wal = mode && strcmp(mode, "wal") == 0;
    free(mode);
    int full = !wal || (flags & STORE_SQLITE_SYNC_FULL);
    rc = exec1(q->db, full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", NULL);
    if (rc != SQLITE_OK) return open_fail(q, err, "synchronous");
    /* A WAL only grows past the hard bound while something holds it back
     * (a reader's old snapshot, a checkpoint stalled on a busy disk's sync:
     * the commits do not wait for it), and SQLite keeps the file at its
     * largest: cut back to the bound when the WAL next starts over. */
    rc = exec1(q->db, "PRAGMA journal_size_limit=" WAL_LIMIT_BYTES, NULL);
    if (rc != SQLITE_OK) return open_fail(q, err, "journal_size_limit");
    if (sqlite3_db_readonly(q->db, "main") == 1) {
        store_open_err(err, "store: cannot open sqlite database '%s': the file is read-only", path);
        sq_free(q);
        return CLARITY_ESTORE;
    }

    /* A file at this build's version needs no schema transaction: its
     * tables exist (the version is set in the transaction that makes
     * them).  A hook process (Claude Code runs one per event) opens the
     * store every time, and that transaction's statements were a sixth of
     * its instructions.  Anything else (a new file, an older version, a
     * table gone) takes the transaction below. */
    char *ver = NULL;
    int current = exec1(q->db, "SELECT v FROM meta WHERE k='schema_version'", &ver) == SQLITE_OK && ver &&
                  strtol(ver, NULL, 10) == SCHEMA_VERSION;
    free(ver);
    ver = NULL;
    if (current && sq_ring_open(&q->ring, q->db) == SQLITE_OK) return open_prepared(q, path, wal, out, err);
    sq_ring_close(&q->ring); /* what a failed open prepared */

    /* Schema, created or checked in one write transaction. */
    rc = exec1(q->db, "BEGIN IMMEDIATE", NULL);
    if (rc != SQLITE_OK) return open_fail(q, err, "BEGIN");
    static const char *const schema[] = {
        "CREATE TABLE IF NOT EXISTS kv(ns TEXT NOT NULL, key TEXT NOT NULL, val BLOB NOT NULL,"
        " PRIMARY KEY(ns, key)) WITHOUT ROWID",
        "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT)",
        "INSERT OR IGNORE INTO meta(k, v) VALUES('schema_version', '2')", /* a new file */
    };
    for (size_t i = 0; rc == SQLITE_OK && i < sizeof schema / sizeof schema[0]; i++)
        rc = exec1(q->db, schema[i], NULL);
    if (rc == SQLITE_OK) rc = exec1(q->db, "SELECT v FROM meta WHERE k='schema_version'", &ver);
    long v = ver ? strtol(ver, NULL, 10) : 0;
    /* the ring's tables, in a file this build reads; a version 1 file's
     * turn-log slots move there, in this transaction */
    int ours = v >= 1 && v <= SCHEMA_VERSION;
    for (size_t i = 0; ours && rc == SQLITE_OK && i < sizeof sq_ring_schema / sizeof *sq_ring_schema; i++)
        rc = exec1(q->db, sq_ring_schema[i], NULL);
    if (ours && rc == SQLITE_OK) rc = sq_ring_open(&q->ring, q->db);
    if (v == 1 && rc == SQLITE_OK && (rc = sq_ring_migrate(&q->ring)) == SQLITE_DONE)
        rc = exec1(q->db, "UPDATE meta SET v='2' WHERE k='schema_version'", NULL);
    if (rc == SQLITE_OK) rc = exec1(q->db, "COMMIT", NULL);
    if (rc == SQLITE_OK) sq_ring_committed(&q->ring);
    if (rc != SQLITE_OK) {
        free(ver);
        if (!sqlite3_get_autocommit(q->db)) {
            /* Keep the failing statement's message: roll back afterwards. */
            char *m = strdup(sqlite3_errmsg(q->db));
            exec1(q->db, "ROLLBACK", NULL);
            store_open_err(err, "store: cannot open sqlite database '%s': schema: %s", path,
                           m ? m : "error");
            free(m);
            sq_free(q);
            return CLARITY_ESTORE;
        }
        return open_fail(q, err, "schema");
    }
    free(ver);
    if (!ours) {
        store_open_err(err,
                       "store: cannot open sqlite database '%s': schema version %ld is not "
                       "supported (this build reads version %d)",
                       path, v, SCHEMA_VERSION);
        sq_free(q);
        return CLARITY_ESTORE;
    }
    return open_prepared(q, path, wal, out, err);
}

/* The end of store_open_sqlite, once the schema is known to be this
 * build's: the store's statements, the checkpointer, the store. */
static int open_prepared(sq *q, const char *path, int wal, store **out, char **err)
{
    int rc;
    if ((rc = prep(q->db, "SELECT val FROM kv WHERE ns=?1 AND key=?2", &q->get)) ||
        (rc = prep(q->db, "INSERT OR REPLACE INTO kv(ns, key, val) VALUES(?1, ?2, ?3)", &q->put)) ||
        (rc = prep(q->db, "DELETE FROM kv WHERE ns=?1 AND key=?2", &q->del)) ||
        (rc = prep(q->db, "DELETE FROM kv WHERE ns=?1", &q->del_ns)) ||
        (rc = prep(q->db, "SELECT key, val FROM kv WHERE ns=?1 AND key>=?2 ORDER BY key",
                   &q->iter_from)) ||
        (rc = prep(q->db, "BEGIN IMMEDIATE", &q->begin)) || (rc = prep(q->db, "BEGIN", &q->begin_read)) ||
        (rc = prep(q->db, "COMMIT", &q->commit)) || (rc = prep(q->db, "ROLLBACK", &q->rollback)))
        return open_fail(q, err, "prepare");

    if (wal && strcmp(path, ":memory:") != 0) ckpt_start(q);
    rc = store_create(&sqlite_vt, q, out);
    if (rc != CLARITY_OK) {
        sq_free(q);
        store_open_err(err, "store: cannot open sqlite database '%s': out of resources", path);
    }
    return rc;
}
