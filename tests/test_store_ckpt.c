/* The SQLite store checkpoints its WAL in the background: the WAL stays
 * bounded over many commits, and what was committed is all there. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../store/store.h"
#include "testhost.h"

#define VAL_BYTES 3000

/* A new SQLite store in a temporary file, whose path goes to db. */
static store *open_tmp(char db[256])
{
    snprintf(db, 256, "%s", th_tmp_path(".db"));
    store *s = NULL;
    char *err = NULL;
    cr_assert_eq(store_open_sqlite(db, 0, &s, &err), CLARITY_OK, "%s", err ? err : "");
    return s;
}

/* Commit t: three values of VAL_BYTES (about 3 pages of WAL), keys
 * cycling over 600, each value's first byte from t. */
static void commit3(store *s, int t)
{
    char val[VAL_BYTES], key[32];
    memset(val, 'v', sizeof val);
    val[0] = (char)('a' + t % 26);
    cr_assert_eq(store_begin(s), CLARITY_OK);
    for (int k = 0; k < 3; k++) {
        snprintf(key, sizeof key, "i:%d", (t * 3 + k) % 600);
        cr_assert_eq(store_put(s, "ns", key, val, sizeof val), CLARITY_OK);
    }
    cr_assert_eq(store_commit(s), CLARITY_OK);
}

Test(store_ckpt, wal_stays_bounded_over_many_commits, .timeout = 120)
{
    char db[256], wal[300];
    store *s = open_tmp(db);
    snprintf(wal, sizeof wal, "%s-wal", db);
    off_t biggest = 0;
    /* ~3 pages a commit: 8000 commits would leave a ~96 MB WAL unchecked.
     * A commit every half millisecond or so, a hundred times a busy
     * gateway's turns: back to back (4,000 a second under ASan), one
     * checkpoint's fsync stalled by another tenant of the disk for a
     * second let the WAL past the bound with the checkpointer working. */
    const struct timespec gap = {0, 500 * 1000};
    for (int t = 0; t < 8000; t++) {
        nanosleep(&gap, NULL);
        commit3(s, t);
        if (t % 500 == 0) {
            struct stat st;
            if (stat(wal, &st) == 0 && st.st_size > biggest) biggest = st.st_size;
        }
    }
    struct stat st;
    cr_assert_eq(stat(wal, &st), 0);
    if (st.st_size > biggest) biggest = st.st_size;
    /* the checkpointer's counts say which way it failed: none run, or
     * runs that could not rewind the WAL (one stalled on a sync holds the
     * checkpoint lock, and the commits' own passive checkpoints give up) */
    store_ckpt_stats cs;
    cr_assert_eq(store_sqlite_ckpt_stats(s, &cs), CLARITY_OK);
    cr_assert_lt(biggest, 40 << 20,
                 "WAL grew to %lld bytes: checkpoints are not running (background %lu, pages %lu, on commit "
                 "%lu, busy %d)",
                 (long long)biggest, cs.background, cs.background_copied, cs.on_commit, cs.busy);
    /* the last value written to a key is the one read back */
    char *v = NULL;
    size_t n = 0;
    cr_assert_eq(store_get(s, "ns", "i:599", &v, &n), CLARITY_OK);
    cr_assert_eq(n, VAL_BYTES);
    cr_assert_eq(v[0], (char)('a' + 7999 % 26));
    free(v);
    store_close(s);
    th_unlink_db(db);
}

/* Waits (up to 10 s) until the background checkpointer has nothing asked
 * for nor running. */
static void wait_ckpt_idle(store *s)
{
    store_ckpt_stats st;
    for (int i = 0; i < 10000; i++) {
        cr_assert_eq(store_sqlite_ckpt_stats(s, &st), CLARITY_OK);
        if (!st.busy) return;
        usleep(1000);
    }
    cr_assert_fail("the checkpointer is still busy after 10 s");
}

/* A WAL that grew past the hard bound while a reader held it back (as a
 * checkpoint stalled on a busy disk's sync also does: the commits do not
 * wait) is cut back to 16 MiB when it next starts over, instead of
 * keeping its largest size on disk. */
Test(store_ckpt, a_wal_held_back_is_cut_back_when_it_starts_over, .timeout = 120)
{
    char db[256], wal[300];
    store *s = open_tmp(db);
    snprintf(wal, sizeof wal, "%s-wal", db);
    commit3(s, 0);
    /* a reader's snapshot from before the stream: nothing after it can be
     * checkpointed, so the WAL cannot start over */
    sqlite3 *r;
    cr_assert_eq(sqlite3_open_v2(db, &r, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(r, "BEGIN; SELECT count(*) FROM kv;", NULL, NULL, NULL), SQLITE_OK);
    /* three 3,000-byte values a commit: 2,500 commits write past 24 MB of
     * WAL (67.8 MB when measured) */
    for (int t = 1; t <= 2500; t++) commit3(s, t);
    struct stat st;
    cr_assert_eq(stat(wal, &st), 0);
    cr_assert_gt(st.st_size, 24 << 20, "the held WAL is only %lld bytes", (long long)st.st_size);
    cr_assert_eq(sqlite3_exec(r, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(r);
    /* the reader gone, the thread's checkpoint in the quiet that follows,
     * or the next commit's own (the WAL is past the hard bound), copies all
     * of it; the commit after that starts the WAL over */
    usleep(50 * 1000);
    wait_ckpt_idle(s);
    for (int t = 2501; t <= 2510; t++) commit3(s, t);
    cr_assert_eq(stat(wal, &st), 0);
    cr_assert_leq(st.st_size, (16 << 20) + 64 * 4120, "the WAL kept %lld bytes after starting over",
                  (long long)st.st_size);
    char *v = NULL;
    size_t n = 0;
    cr_assert_eq(store_get(s, "ns", "i:332", &v, &n), CLARITY_OK); /* commit 2510's third key: (2510 * 3 + 2) % 600 */
    cr_assert_eq(n, VAL_BYTES);
    cr_assert_eq(v[0], (char)('a' + 2510 % 26));
    free(v);
    store_close(s);
    th_unlink_db(db);
}

/* Commits with time between them, as turns come: the background thread
 * checkpoints the WAL, which then starts over, so no commit ever
 * checkpoints on its own thread (a 20 ms stall in that turn's hook).  The
 * commits wait for the checkpointer to be idle, as a model's seconds
 * between turns would, so that a loaded machine does not decide. */
Test(store_ckpt, paced_commits_never_checkpoint_on_the_committing_thread, .timeout = 120)
{
    char db[256];
    store *s = open_tmp(db);
    /* ~3 pages a commit: 1,600 commits write past the hard bound (4,000
     * pages) unless the background thread rewinds the WAL */
    for (int t = 0; t < 1600; t++) {
        commit3(s, t);
        wait_ckpt_idle(s);
    }
    store_ckpt_stats st;
    cr_assert_eq(store_sqlite_ckpt_stats(s, &st), CLARITY_OK);
    cr_assert_gt(st.background_copied, 0, "the background thread ran %lu checkpoints and copied nothing",
                 st.background);
    cr_assert_eq(st.on_commit, 0, "%lu commits checkpointed on their own thread", st.on_commit);
    store_close(s);
    th_unlink_db(db);
}

/* Commits back to back, as a busy gateway's turns come: the background
 * thread checkpoints in steps of the WAL's growth, not after every commit
 * (each checkpoint is two fsyncs, which the hooks' commits then wait
 * behind).  ~3 pages a commit: 3,000 commits write ~9,000 pages, a dozen
 * checkpoints' worth; run after every commit past 1,000 pages, the thread
 * ran hundreds. */
Test(store_ckpt, back_to_back_commits_checkpoint_in_steps, .timeout = 120)
{
    char db[256];
    store *s = open_tmp(db);
    for (int t = 0; t < 3000; t++) commit3(s, t);
    store_ckpt_stats st;
    cr_assert_eq(store_sqlite_ckpt_stats(s, &st), CLARITY_OK);
    cr_assert_gt(st.background + st.on_commit, 0, "no checkpoint ran over ~9,000 pages of WAL");
    /* a pause of the test thread (a loaded machine) is a quiet spell the
     * thread checkpoints in: room for many, far from one a commit */
    cr_assert_lt(st.background, 100, "the background thread ran %lu checkpoints for 3,000 commits",
                 st.background);
    store_close(s);
    th_unlink_db(db);
}

/* A store that never fills 1,000 pages of WAL (a process that runs one
 * hook and exits) starts no checkpoint thread: its own connection was
 * most of the cost of opening and closing the store.  The first
 * checkpoint needed starts it. */
Test(store_ckpt, the_thread_starts_at_the_first_checkpoint_needed, .timeout = 120)
{
    char db[256];
    store *s = open_tmp(db);
    store_ckpt_stats st;
    for (int t = 0; t < 20; t++) commit3(s, t);
    cr_assert_eq(store_sqlite_ckpt_stats(s, &st), CLARITY_OK);
    cr_assert_eq(st.thread, 0, "a thread was started for 20 commits");
    store_close(s);
    /* reopened: what the first store wrote is there */
    char *err = NULL, *v = NULL;
    size_t n = 0;
    cr_assert_eq(store_open_sqlite(db, 0, &s, &err), CLARITY_OK, "%s", err ? err : "");
    cr_assert_eq(store_get(s, "ns", "i:59", &v, &n), CLARITY_OK);
    cr_assert_eq(n, VAL_BYTES);
    cr_assert_eq(v[0], (char)('a' + 19 % 26));
    free(v);
    /* ~3 pages a commit: past 1,000 pages the thread starts and
     * checkpoints (under the hard bound, 4,000, where a commit would) */
    for (int t = 0; t < 500; t++) commit3(s, t);
    wait_ckpt_idle(s);
    cr_assert_eq(store_sqlite_ckpt_stats(s, &st), CLARITY_OK);
    cr_assert_eq(st.thread, 1, "no thread after 500 commits");
    cr_assert_gt(st.background, 0, "the thread ran no checkpoint");
    cr_assert_eq(st.on_commit, 0, "%lu commits checkpointed on their own thread", st.on_commit);
    store_close(s);
    th_unlink_db(db);
}

Test(store_ckpt, stats_are_sqlite_only)
{
    store *s = NULL;
    char *err = NULL;
    cr_assert_eq(store_open_memory(&s, &err), CLARITY_OK);
    store_ckpt_stats st;
    cr_assert_eq(store_sqlite_ckpt_stats(s, &st), CLARITY_DECLINED);
    cr_assert_eq(store_sqlite_ckpt_stats(NULL, &st), CLARITY_EINVAL);
    store_close(s);
}
