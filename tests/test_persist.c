/* Persistence through the plugin: SQLite round trip, the host's kv, kill -9,
 * idle session eviction, the per-session item cap. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>


#include "../engine/turnlog.h"
#include "../store/sqlite_ring.h"
#include "runproc.h"
#include "sqlchild.h"
#include "testhost.h"

static char *cfg_for(const char *db, const char *extra)
{
    static __thread char cfg[1024];
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"%s}%s}", db,
             "", extra ? extra : "");
    return cfg;
}

/* A host on a new SQLite file, whose path goes to db. */
static void open_new_db(th_host *h, char *db, size_t cap)
{
    snprintf(db, cap, "%s", th_tmp_path(".db"));
    cr_assert_eq(th_open(h, cfg_for(db, NULL), 0, NULL), 0);
}

/* clarity.getScores of session; of its pruned items too with pruned. */
static json_t *scores_of(th_host *h, const char *session, int pruned)
{
    char params[256];
    snprintf(params, sizeof params, "{\"session\":\"%s\"%s}", session, pruned ? ",\"includePruned\":true" : "");
    json_t *j = NULL;
    cr_assert_eq(th_rpc(h, "clarity.getScores", params, &j), 0, "getScores %s", session);
    return j;
}

static json_t *scores(th_host *h, const char *session) { return scores_of(h, session, 0); }
static json_t *all_scores(th_host *h, const char *session) { return scores_of(h, session, 1); }

/* clarity.getState of session, without the time of its last write. */
static json_t *state_of(th_host *h, const char *session)
{
    char params[128];
    snprintf(params, sizeof params, "{\"session\":\"%s\"}", session);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(h, "clarity.getState", params, &j), 0, "getState %s", session);
    json_object_del(j, "lastPersistAt");
    return j;
}

/* A fresh instance on cfg restores session as it was (before: what get
 * gave on the writer; released here). */
static void expect_restored_by(const char *cfg, const char *session, json_t *before,
                               json_t *(*get)(th_host *, const char *))
{
    th_host fresh;
    cr_assert_eq(th_open(&fresh, cfg, 0, NULL), 0);
    json_t *after = get(&fresh, session);
    cr_expect(json_equal(before, after), "%s restored:\n%s\nwritten:\n%s", session, json_dumps(after, 0),
              json_dumps(before, 0));
    json_decref(before);
    json_decref(after);
    th_close(&fresh);
}

static void expect_restored(const char *cfg, const char *session, json_t *before)
{
    expect_restored_by(cfg, session, before, scores);
}

/* A new database's path into db, and the config of a SQLite store there
 * keeping `resident` sessions in memory (storage.maxResidentSessions). */
static const char *resident_cfg(char *db, size_t dbn, int resident)
{
    static __thread char cfg[512];
    snprintf(db, dbn, "%s", th_tmp_path(".db"));
    snprintf(cfg, sizeof cfg,
             "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"maxResidentSessions\":%d}}", db,
             resident);
    return cfg;
}

static void turn(th_host *h, const char *session, int i)
{
    char prompt[256];
    snprintf(prompt, sizeof prompt, "ClaraCore step %d on src/mod%d.ts with focus-engine", i, i % 7);
    cr_assert_eq(th_before(h, session, NULL, prompt, strlen(prompt), NULL), 0);
    cr_assert_eq(th_end(h, session, "ClaraCore updated", "Edit", "{\"file_path\":\"src/mod1.ts\"}"), 0);
}

/* After a second process (b) took the session over from an idle first one
 * (a): a fresh instance restores what ref saw; a, closed last, folds its
 * stale state only after the check. */
static void check_takeover(const char *cfg, const char *session, th_host *ref, th_host *a, th_host *b,
                           const char *db)
{
    expect_restored(cfg, session, scores(ref, session));
    th_close(b);
    th_close(ref);
    th_close(a);
    th_unlink_db(db);
}

/* A new SQLite file db with storage.snapshotEvery `every` (its config in
 * cfg), the host a on it, and one, the reference, on the memory store. */
static void open_twins(char db[256], char cfg[512], int every, th_host *one, th_host *a)
{
    snprintf(db, 256, "%s", th_tmp_path(".db"));
    snprintf(cfg, 512, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"snapshotEvery\":%d}}", db, every);
    cr_assert_eq(th_open(one, "{\"storage\":{\"backend\":\"memory\"}}", 0, NULL), 0);
    cr_assert_eq(th_open(a, cfg, 0, NULL), 0);
}

/* Turns [from, to) on h and on ref, the reference that sees every turn. */
static void twin_turns(th_host *h, th_host *ref, const char *session, int from, int to)
{
    for (int i = from; i < to; i++) {
        turn(h, session, i);
        turn(ref, session, i);
    }
}

Test(persist, sqlite_round_trip_restores_scores)
{
    char db[256];
    th_host h;
    open_new_db(&h, db, sizeof db);
    for (int i = 0; i < 12; i++) turn(&h, "a", i);
    cr_assert_eq(th_cmd(&h, "a", "/clarity anchor focus-engine", NULL, NULL), 0);
    json_t *before = scores(&h, "a");
    th_close(&h);

    cr_assert_eq(th_open(&h, cfg_for(db, NULL), 0, NULL), 0);
    json_t *after = scores(&h, "a");
    cr_assert(json_equal(before, after), "state after reload differs:\n%s\n%s",
              json_dumps(before, 0), json_dumps(after, 0));
    cr_assert_eq(json_integer_value(json_object_get(after, "currentTurn")), 12);
    json_decref(before);
    json_decref(after);
    th_close(&h);
    th_unlink_db(db);
}

/* clarity.stats and /clarity stats show, on SQLite, who checkpoints the
 * WAL (a checkpointer that did nothing went unseen for long); the other
 * stores have no such figures. */
Test(persist, stats_show_the_wal_checkpoints_on_sqlite)
{
    char db[256];
    th_host h;
    open_new_db(&h, db, sizeof db);
    for (int i = 0; i < 3; i++) turn(&h, "w", i);
    json_t *st = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.stats", "{\"session\":\"w\"}", &st), 0);
    json_t *ck = json_object_get(st, "walCheckpoints");
    cr_assert(json_is_object(ck), "%s", json_dumps(st, 0));
    static const char *const keys[] = {"background", "copied", "onCommit"};
    for (int k = 0; k < 3; k++) cr_assert(json_is_integer(json_object_get(ck, keys[k])), "%s", keys[k]);
    /* three small turns stay far below the size at which a commit would */
    cr_assert_eq(json_integer_value(json_object_get(ck, "onCommit")), 0);
    cr_assert_leq(json_integer_value(json_object_get(ck, "copied")),
                  json_integer_value(json_object_get(ck, "background")));
    json_decref(st);
    char *text = NULL;
    cr_assert_eq(th_cmd(&h, "w", "/clarity stats", &text, NULL), 0);
    cr_assert_not_null(strstr(text, "WAL checkpoints: "), "%s", text);
    free(text);
    th_close(&h);
    th_unlink_db(db);

    cr_assert_eq(th_open(&h, NULL, 1, NULL), 0); /* the host's kv */
    turn(&h, "w", 0);
    cr_assert_eq(th_rpc(&h, "clarity.stats", "{\"session\":\"w\"}", &st), 0);
    cr_assert_null(json_object_get(st, "walCheckpoints"));
    json_decref(st);
    th_close(&h);
}

Test(persist, host_kv_backend_is_used_when_offered)
{
    th_host h;
    cr_assert_eq(th_open(&h, NULL, 1, NULL), 0);
    for (int i = 0; i < 3; i++) turn(&h, "k", i);
    /* a turn-log record per turn; the first turn's holds every item and
     * comes with the meta of an empty snapshot */
    cr_assert_eq(th_kv_count_prefix(&h, "clarity:s:k", "meta"), 1);
    cr_assert_eq(th_kv_count_prefix(&h, "clarity:s:k", "l:"), 3);
    cr_assert_eq(th_kv_count_prefix(&h, "clarity:s:k", "i:"), 0);
    json_t *j = scores(&h, "k");
    size_t items = json_array_size(json_object_get(j, "items"));
    json_decref(j);
    json_t *st = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.stats", "{\"session\":\"k\"}", &st), 0);
    cr_assert_str_eq(json_string_value(json_object_get(st, "store")), "host");
    json_decref(st);
    /* session end folds: one row per item, and the records it covers go */
    cr_assert_eq(th_session_end(&h, "k"), 0);
    cr_assert_eq(th_kv_count_prefix(&h, "clarity:s:k", "i:"), items);
    cr_assert_eq(th_kv_count_prefix(&h, "clarity:s:k", "l:"), 0);
    th_close(&h);
}

/* The items a turn-log record writes (turnlog.h's layout): whole, and
 * in its touched section (counts alone), read with the log's reader. */
static uint32_t record_items(const unsigned char *p, size_t len)
{
    tracker t;
    tracker_init(&t, ITEM_HISTORY_MAX);
    item *it = calloc(1, sizeof *it + ITEM_HISTORY_MAX * sizeof it->history[0]);
    tl_reader r = tl_reader_over(p, len, 0);
    tl_header h;
    cr_assert_eq(tl_get_header(&r, &h), 0, "%s", r.what ? r.what : "?");
    const char *s;
    uint32_t n, sn, total = 0;
    if (h.flags & TL_REC_META) cr_assert_eq(tl_get_bytes(&r, &s, &sn, "meta"), 0);
    if (h.flags & TL_REC_KEPT) {
        int64_t turn;
        cr_assert(tl_get_u32(&r, &n, "kept") == 0 && tl_get_turn_back(&r, h.turn, &turn, "keptTurn") == 0);
        for (uint32_t i = 0; i < n; i++) cr_assert_eq(tl_get_id(&r, &s, &sn, "kept id"), 0);
    }
    cr_assert_eq(tl_get_u32(&r, &n, "items"), 0);
    for (uint32_t i = 0; i < n; i++, total++)
        cr_assert(tl_get_id(&r, &s, &sn, "id") == 0 && tl_get_item(&r, &t, it) == 0, "%s", r.what);
    cr_assert_eq(tl_get_u32(&r, &n, "deleted"), 0);
    for (uint32_t i = 0; i < n; i++) cr_assert_eq(tl_get_id(&r, &s, &sn, "deleted id"), 0);
    if (h.flags & TL_REC_PRUNED) {
        cr_assert_eq(tl_get_u32(&r, &n, "pruned"), 0);
        for (uint32_t i = 0; i < n; i++) {
            int64_t turn;
            cr_assert_eq(tl_get_pruned(&r, &s, &sn, h.turn, &turn), 0);
        }
    }
    if (h.flags & TL_REC_TOUCHED) {
        int64_t turn, m, k;
        unsigned bits;
        cr_assert(tl_get_u32(&r, &n, "touched") == 0 && tl_get_turn_back(&r, h.turn, &turn, "touchTurn") == 0);
        for (uint32_t i = 0; i < n; i++, total++) cr_assert_eq(tl_get_touched(&r, &s, &sn, &bits, &m, &k), 0);
    }
    cr_assert(r.p == r.end, "bytes left in a record");
    free(it->anchor_reason);
    free(it);
    tracker_free(&t);
    return total;
}

Test(persist, only_changed_items_are_written_per_turn)
{
    /* after a turn that mentions nothing, the turn's record holds the turn
     * and no item, and no item row is written */
    th_host h;
    cr_assert_eq(th_open(&h, NULL, 1, NULL), 0);
    turn(&h, "d", 0); /* record 1: every item of the new session */
    size_t len = 0;
    char *rec = th_kv_value(&h, "clarity:s:d", "l:0001", &len);
    cr_assert_not_null(rec, "no turn-log record for the first turn");
    cr_assert_gt(record_items((unsigned char *)rec, len), 0);
    free(rec);
    cr_assert_eq(th_end(&h, "d", "nothing relevant here", NULL, NULL), 0);
    cr_assert_eq(th_kv_count_prefix(&h, "clarity:s:d", "i:"), 0);
    rec = th_kv_value(&h, "clarity:s:d", "l:0002", &len);
    cr_assert_not_null(rec, "no turn-log record for the turn");
    cr_assert_eq(rec[0], 'L');
    cr_assert_eq(record_items((unsigned char *)rec, len), 0);
    free(rec);
    /* a turn that mentions an item writes that item alone */
    cr_assert_eq(th_before(&h, "d", NULL, "ClaraCore again", 15, NULL), 0);
    cr_assert_eq(th_end(&h, "d", "nothing", NULL, NULL), 0);
    rec = th_kv_value(&h, "clarity:s:d", "l:0003", &len);
    cr_assert_not_null(rec);
    cr_assert_eq(record_items((unsigned char *)rec, len), 1);
    cr_assert(rec[2] & TL_REC_TOUCHED, "a mention alone is written as a touch (its counts)");
    free(rec);
    th_close(&h);
}

Test(persist, restart_after_kill_9_keeps_every_finished_turn, .init = th_limit_60)
{
    char db[256];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        close(fd[0]);
        th_host c;
        if (th_open(&c, cfg_for(db, NULL), 0, NULL) != 0) _exit(3);
        for (int i = 0;; i++) {
            turn(&c, "crash", i);
            /* agent_end returned: turn i+1 must survive */
            int done = i + 1;
            if (write(fd[1], &done, sizeof done) != sizeof done) _exit(4);
        }
    }
    close(fd[1]);
    int last = 0, v;
    while (last < 40 && read(fd[0], &v, sizeof v) == sizeof v) last = v;
    kill(pid, SIGKILL);
    /* drain what the child wrote before it died */
    while (read(fd[0], &v, sizeof v) == sizeof v) last = v;
    int status;
    waitpid(pid, &status, 0);
    close(fd[0]);
    cr_assert(WIFSIGNALED(status), "child should have been killed");

    th_host h;
    cr_assert_eq(th_open(&h, cfg_for(db, NULL), 0, NULL), 0);
    json_t *j = scores(&h, "crash");
    int64_t turn_now = json_integer_value(json_object_get(j, "currentTurn"));
    cr_assert_geq(turn_now, last, "restored turn %lld < last finished turn %d", (long long)turn_now, last);
    /* the restored item stats are those of that turn: mentioned once per turn */
    json_t *it = th_item(j, "claracore");
    cr_assert_eq(json_integer_value(json_object_get(it, "mentionCount")), turn_now);
    cr_assert_eq(json_integer_value(json_object_get(it, "referenceCount")), turn_now);
    json_decref(j);
    th_close(&h);
    char check[512];
    snprintf(check, sizeof check, "sqlite3 '%s' 'PRAGMA integrity_check' 2>&1", db);
    FILE *f = popen(check, "r");
    char line[64] = {0};
    cr_assert_not_null(fgets(line, sizeof line, f));
    pclose(f);
    cr_assert_str_eq(line, "ok\n");
    th_unlink_db(db);
}

Test(persist, idle_sessions_leave_memory_and_come_back)
{
    char db[256];
    const char *cfg = resident_cfg(db, sizeof db, 2);
    th_host h;
    cr_assert_eq(th_open(&h, cfg, 0, NULL), 0);
    char sid[32];
    for (int s = 0; s < 6; s++) {
        snprintf(sid, sizeof sid, "sess%d", s);
        for (int i = 0; i <= s; i++) turn(&h, sid, i);
    }
    for (int s = 0; s < 6; s++) {
        snprintf(sid, sizeof sid, "sess%d", s);
        json_t *j = scores(&h, sid);
        cr_assert_eq(json_integer_value(json_object_get(j, "currentTurn")), s + 1);
        cr_assert_eq(json_integer_value(json_object_get(th_item(j, "claracore"), "mentionCount")), s + 1);
        json_decref(j);
    }
    cr_assert_eq(th_session_end(&h, "sess5"), 0);
    json_t *j = scores(&h, "sess5");
    cr_assert_eq(json_integer_value(json_object_get(j, "currentTurn")), 6);
    json_decref(j);
    th_close(&h);
    th_unlink_db(db);
}

/* A hook finds the session of the hook before it without a lookup: that
 * must never be one that left memory since, by eviction (one resident
 * session here) or as the empty lookup of an unknown id.  Each session's
 * turns are all there after runs of the same session, switches and
 * lookups that find nothing; under ASan a freed one read would abort. */
Test(persist, the_last_session_found_is_never_one_that_left, .init = th_limit_60)
{
    char db[256];
    const char *cfg = resident_cfg(db, sizeof db, 1);
    th_host h;
    cr_assert_eq(th_open(&h, cfg, 0, NULL), 0);
    static const char order[] = "aabacbbcaxcaabxxc"; /* x: an id no hook gave */
    int turns[3] = {0, 0, 0};
    for (const char *o = order; *o; o++) {
        char sid[16];
        snprintf(sid, sizeof sid, "last-%c", *o);
        if (*o == 'x') { /* an empty lookup, dropped at once */
            json_t *j = NULL;
            th_rpc(&h, "clarity.getScores", "{\"session\":\"last-x\"}", &j);
            json_decref(j);
            continue;
        }
        turn(&h, sid, turns[*o - 'a']++);
    }
    for (int k = 0; k < 3; k++) {
        char sid[16];
        snprintf(sid, sizeof sid, "last-%c", 'a' + k);
        json_t *j = scores(&h, sid);
        cr_assert_eq(json_integer_value(json_object_get(j, "currentTurn")), turns[k], "%s", sid);
        cr_assert_eq(json_integer_value(json_object_get(th_item(j, "claracore"), "mentionCount")), turns[k], "%s",
                     sid);
        json_decref(j);
    }
    th_close(&h);
    th_unlink_db(db);
}

Test(persist, item_cap_evicts_lowest_unanchored)
{
    th_host h;
    cr_assert_eq(th_open(&h, "{\"storage\":{\"backend\":\"memory\"},\"limits\":{\"maxTrackedItems\":20}}", 0, NULL), 0);
    const char *p = "ClaraCore";
    cr_assert_eq(th_before(&h, "c", NULL, p, strlen(p), NULL), 0);
    cr_assert_eq(th_cmd(&h, "c", "/clarity anchor ClaraCore", NULL, NULL), 0);
    char prompt[128];
    for (int i = 0; i < 30; i++) {
        snprintf(prompt, sizeof prompt, "Item%cmber%c", 'A' + i % 26, 'a' + i / 26);
        cr_assert_eq(th_before(&h, "c", NULL, prompt, strlen(prompt), NULL), 0);
        cr_assert_eq(th_end(&h, "c", "ok", NULL, NULL), 0);
    }
    json_t *j = scores(&h, "c");
    size_t n = json_array_size(json_object_get(j, "items"));
    cr_assert_leq(n, 20);
    cr_assert_not_null(th_item(j, "claracore"), "anchored items are never evicted");
    /* the newest mention survives, the oldest went */
    cr_assert_not_null(th_item(j, "itemdmberb"));
    cr_assert_null(th_item(j, "itemambera"));
    json_decref(j);
    th_close(&h);
}

Test(persist, default_state_file_lives_under_the_xdg_state_dir)
{
    char home[256];
    snprintf(home, sizeof home, "%s", th_tmp_path("-home"));
    cr_assert_eq(mkdir(home, 0700), 0);
    setenv("HOME", home, 1);
    unsetenv("XDG_STATE_HOME");
    unsetenv("CLARITY_STATE");
    th_host h;
    cr_assert_eq(th_open(&h, "{}", 0, NULL), 0);
    const char *p = "ClaraCore";
    cr_assert_eq(th_before(&h, "x", NULL, p, strlen(p), NULL), 0);
    cr_assert_eq(th_end(&h, "x", "ok", NULL, NULL), 0);
    th_close(&h);
    char db[512];
    snprintf(db, sizeof db, "%s/.local/state/clarity/clarity.db", home);
    struct stat st;
    cr_assert_eq(stat(db, &st), 0, "no state file at %s", db);
    cr_assert_gt(st.st_size, 0);
    /* the next start finds the session there */
    cr_assert_eq(th_open(&h, NULL, 0, NULL), 0);
    json_t *j = scores(&h, "x");
    cr_assert_eq(json_integer_value(json_object_get(j, "currentTurn")), 1);
    json_decref(j);
    th_close(&h);
    runproc_rmtree(home);
}

/* ---- the turn log ------------------------------------------------------ */

/* The file's SQL runs in another process (sqlchild.h): the plugin's
 * SQLite and this binary's are two copies. */
static int sql_count(const char *db, const char *query) { return (int)th_sql_int(db, query); }

/* Turn-log slots of the SQLite backend live in its ring table
 * (store/sqlite_ring.h), keyed nsid << 16 | slot; a cell is the record's
 * length (u32 LE) then the record, whose seq is at its bytes 4..12. */
static int sql_slots(const char *db, const char *ns)
{
    char q[256];
    if (ns)
        snprintf(q, sizeof q, "SELECT count(*) FROM ring WHERE id >> 16 = (SELECT id FROM nsid WHERE ns='%s')", ns);
    else
        snprintf(q, sizeof q, "SELECT count(*) FROM ring");
    return sql_count(db, q);
}

static uint32_t le32_at(const unsigned char *p) { return p[0] | p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t le64_at(const unsigned char *p) { return le32_at(p) | (uint64_t)le32_at(p + 4) << 32; }

/* The records above their session's snapshot (the meta's "seq"): what a
 * restore replays.  The slots of records a fold covered may stay (stale);
 * they are not counted. */
static int sql_records(const char *db)
{
    th_rows *rs = th_sql_once(db,
                              "SELECT r.val, (SELECT CAST(kv.val AS TEXT) FROM kv WHERE kv.ns = n.ns AND "
                              "kv.key = 'meta') FROM ring r JOIN nsid n ON n.id = r.id >> 16",
                              NULL, 0);
    cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
    int n = 0;
    for (size_t r = 0; r < rs->n; r++) {
        const unsigned char *c = th_cell(rs, r, 0)->p;
        size_t cn = th_cell(rs, r, 0)->n;
        const char *meta = th_cell(rs, r, 1)->p;
        cr_assert_geq(cn, 16);
        uint32_t len = le32_at(c);
        cr_assert(len >= 12 && len <= cn - 4, "a slot's cell holds %u bytes of %zu", len, cn);
        const char *at = meta ? strstr(meta, "\"seq\":") : NULL;
        uint64_t snap = at ? strtoull(at + 6, NULL, 10) : 0;
        n += le64_at(c + 8) > snap;
    }
    th_rows_free(rs);
    return n;
}

/* Another process's connection holding db's write lock: its id. */
static int hold_write_lock(const char *db)
{
    int lock = th_sql_open(db);
    th_sql_do(lock, NULL, "BEGIN IMMEDIATE");
    return lock;
}

static void release_write_lock(int lock)
{
    th_sql_do(lock, NULL, "ROLLBACK");
    th_sql_close(lock);
}

/* A second process (here a second instance on the same file) restores the
 * snapshot plus the records above it while the first has not folded them,
 * and the records never outnumber storage.snapshotEvery. */
Test(persist, turn_log_restores_unfolded_turns_and_stays_bounded)
{
    char db[256];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    char cfgbuf[512];
    snprintf(cfgbuf, sizeof cfgbuf, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"snapshotEvery\":4}}", db);
    th_host a, b;
    cr_assert_eq(th_open(&a, cfgbuf, 0, NULL), 0);
    for (int i = 0; i < 11; i++) {
        turn(&a, "t", i);
        /* at most snapshotEvery slots, whatever the number of turns */
        cr_assert_leq(sql_slots(db, NULL), 4);
        cr_assert_eq(th_open(&b, cfgbuf, 0, NULL), 0);
        json_t *ja = scores(&a, "t"), *jb = scores(&b, "t");
        cr_assert(json_equal(ja, jb), "turn %d: restored state differs:\n%s\n%s", i, json_dumps(ja, 0),
                  json_dumps(jb, 0));
        json_decref(ja);
        json_decref(jb);
        th_close(&b); /* it only read: it writes nothing */
    }
    th_close(&a);
    /* the unload folded: no record is left, nor the slots of folded ones */
    cr_assert_eq(sql_slots(db, NULL), 0);
    th_unlink_db(db);
}

/* Two processes on one store, one after the other (a gateway restarted
 * after a crash, or sessions that move between processes): the second
 * appends to the log the first left, one record, no fold, since both take
 * slots by the same snapshotEvery.  Every turn is restored. */
Test(persist, a_process_appends_to_the_log_another_left)
{
    char db[256], cfg[512];
    th_host one, a, b; /* one: every turn in memory, the reference */
    open_twins(db, cfg, 16, &one, &a);
    twin_turns(&a, &one, "h", 0, 5); /* records 1..5, the first with an empty snapshot */
    cr_assert_eq(th_open(&b, cfg, 0, NULL), 0); /* a stays open, idle: as if it had died */
    for (int i = 5; i < 8; i++) {
        twin_turns(&b, &one, "h", i, i + 1);
        cr_assert_eq(sql_records(db), i + 1, "turn %d", i);
        cr_assert_eq(sql_count(db, "SELECT count(*) FROM kv WHERE key LIKE 'i:%'"), 0, "turn %d folded", i);
    }
    check_takeover(cfg, "h", &one, &a, &b, db);
}

/* One record (a cell's value, its version 3 bytes) as version 2 wrote it:
 * u32 id lengths, items in form 2.  Version 2 had no touched section: a
 * touched item goes whole, as it was after the record, which the replica
 * t (the records before it applied, from the session's first, which holds
 * every item) gives.  No pruned section (the test below makes none). */
static void as_version_2(const unsigned char *v, size_t n, tracker *t, buf *out)
{
    tl_reader r = tl_reader_over(v, n, 0);
    tl_header h;
    cr_assert_eq(tl_get_header(&r, &h), 0, "%s", r.what ? r.what : "?");
    cr_assert_eq(r.form, 3, "a new record is not version 3");
    cr_assert_eq(h.flags & TL_REC_PRUNED, 0);
    buf_reset(out);
    tl_put_header(out, &h);
    out->p[1] = 2; /* the version */
    out->p[2] &= ~TL_REC_TOUCHED;
    if (h.flags & TL_REC_META) {
        const char *m;
        uint32_t mn;
        cr_assert_eq(tl_get_bytes(&r, &m, &mn, "meta"), 0);
        tl_put_bytes(out, m, mn);
    }
    buf items, deleted;
    buf_init(&items);
    buf_init(&deleted);
    uint32_t count, n_items = 0, n_deleted;
    const char *id;
    uint32_t idn;
    char key[512];
    cr_assert_eq(tl_get_u32(&r, &count, "count"), 0);
    for (uint32_t i = 0; i < count; i++, n_items++) {
        cr_assert_eq(tl_get_id(&r, &id, &idn, "id"), 0);
        snprintf(key, sizeof key, "%.*s", (int)idn, id);
        item *it = tracker_touch(t, key, CAT_PROJECT, 0);
        cr_assert_eq(tl_get_item(&r, t, it), 0, "%s", r.what ? r.what : "?");
        tl_put_bytes(&items, id, idn);
        tl_put_item(&items, it);
    }
    cr_assert_eq(tl_get_u32(&r, &n_deleted, "count"), 0);
    for (uint32_t i = 0; i < n_deleted; i++) {
        cr_assert_eq(tl_get_id(&r, &id, &idn, "deleted id"), 0);
        tl_put_bytes(&deleted, id, idn);
        snprintf(key, sizeof key, "%.*s", (int)idn, id);
        item *it = tracker_find(t, key);
        if (it) tracker_discard(t, it);
    }
    if (h.flags & TL_REC_TOUCHED) { /* applied as a restore does, then whole */
        int64_t turn, m, k;
        unsigned bits;
        cr_assert(tl_get_u32(&r, &count, "touched") == 0 && tl_get_turn_back(&r, h.turn, &turn, "touchTurn") == 0);
        for (uint32_t i = 0; i < count; i++, n_items++) {
            cr_assert_eq(tl_get_touched(&r, &id, &idn, &bits, &m, &k), 0);
            snprintf(key, sizeof key, "%.*s", (int)idn, id);
            item *it = tracker_find(t, key);
            cr_assert_not_null(it, "touched item %s not in the replica", key);
            tl_apply_touched(t, it, bits, m, k, turn);
            tl_put_bytes(&items, id, idn);
            tl_put_item(&items, it);
        }
    }
    cr_assert(r.p == r.end, "bytes left in a record");
    tl_put_u32(out, n_items);
    buf_append(out, items.p, items.len);
    tl_put_u32(out, n_deleted);
    buf_append(out, deleted.p, deleted.len);
    cr_assert(!buf_failed(out) && !buf_failed(&items) && !buf_failed(&deleted));
    buf_free(&items);
    buf_free(&deleted);
}

typedef struct ring_cell {
    int64_t slot;
    uint64_t seq;
    unsigned char *cell;
    size_t n;
} ring_cell;

static int by_seq(const void *a, const void *b)
{
    const ring_cell *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Rewrites every turn-log record of db (one session's, from its first) as
 * version 2 wrote it, in order; their count. */
static int records_to_version_2(const char *db)
{
    th_rows *rs = th_sql_once(db, "SELECT id, val FROM ring", NULL, 0);
    cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
    ring_cell *v = NULL;
    int n = 0;
    for (size_t r = 0; r < rs->n; r++) {
        v = realloc(v, (size_t)(n + 1) * sizeof *v);
        size_t cn = th_cell(rs, r, 1)->n;
        v[n].slot = th_cell(rs, r, 0)->i;
        v[n].cell = malloc(cn);
        memcpy(v[n].cell, th_cell(rs, r, 1)->p, cn);
        v[n].n = cn;
        cr_assert_geq(cn, 16);
        v[n].seq = le64_at(v[n].cell + 8);
        n++;
    }
    th_rows_free(rs);
    if (n > 1) qsort(v, (size_t)n, sizeof *v, by_seq);
    cr_assert(n == 0 || v[0].seq == 1, "the session's first record is there");
    tracker t;
    tracker_init(&t, 16); /* limits.historyLength's default */
    buf rec, cell;
    buf_init(&rec);
    buf_init(&cell);
    for (int i = 0; i < n; i++) {
        size_t len = le32_at(v[i].cell); /* the record's length, then it */
        cr_assert_leq(len + 4, v[i].n);
        as_version_2(v[i].cell + 4, len, &t, &rec);
        buf_reset(&cell);
        tl_put_bytes(&cell, rec.p, rec.len); /* a cell: u32 length, the record */
        th_val put[] = {TH_INT(v[i].slot), TH_BLOB(cell.p, cell.len)};
        rs = th_sql_once(db, "UPDATE ring SET val=?2 WHERE id=?1", put, 2);
        cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
        th_rows_free(rs);
        free(v[i].cell);
    }
    free(v);
    tracker_free(&t);
    buf_free(&rec);
    buf_free(&cell);
    return n;
}

/* Records the previous release wrote (version 2) restore as they did,
 * and a process appends version 3 records after them. */
Test(persist, version_2_records_restore_and_version_3_ones_follow)
{
    char db[256], cfg[512];
    th_host one, a, b; /* one: every turn in memory, the reference */
    open_twins(db, cfg, 64, &one, &a);
    twin_turns(&a, &one, "v", 0, 10);
    cr_assert_eq(th_cmd(&a, "v", "/clarity anchor focus-engine", NULL, NULL), 0);
    cr_assert_eq(th_cmd(&one, "v", "/clarity anchor focus-engine", NULL, NULL), 0);
    twin_turns(&a, &one, "v", 10, 11);
    /* a stays open, idle: as if it had died with its records unfolded */
    int n = records_to_version_2(db);
    cr_assert_eq(n, sql_records(db));
    cr_assert_geq(n, 11, "%d records", n);
    expect_restored(cfg, "v", scores(&one, "v"));
    cr_assert_eq(th_open(&b, cfg, 0, NULL), 0);
    twin_turns(&b, &one, "v", 11, 14);
    cr_assert_eq(sql_records(db), n + 3);
    check_takeover(cfg, "v", &one, &a, &b, db);
}

/* Records another process wrote under another snapshotEvery take other
 * slots (seq % every): a process folds them before it writes, or its
 * record could land on the slot of one not folded yet.  Whatever the
 * snapshot and the records the first processes left, nothing is lost. */
Test(persist, a_log_of_another_snapshot_every_is_folded_first)
{
    for (int turns = 3; turns <= 8; turns++) {
        for (int left = 1; left <= 2; left++) {
            char db[256], cfg3[512], cfg8[512];
            snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
            snprintf(cfg3, sizeof cfg3, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"snapshotEvery\":3}}", db);
            snprintf(cfg8, sizeof cfg8, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"snapshotEvery\":8}}", db);
            th_host one, a, b;
            cr_assert_eq(th_open(&one, "{\"storage\":{\"backend\":\"memory\"}}", 0, NULL), 0);
            cr_assert_eq(th_open(&a, cfg3, 0, NULL), 0);
            twin_turns(&a, &one, "x", 0, turns);
            th_close(&a); /* folded: a snapshot past seq 0 */
            /* `left` records (fewer than 3: a's worker has no fold to do),
             * in slots seq % 3; a stays open and idle, as if it had died */
            cr_assert_eq(th_open(&a, cfg3, 0, NULL), 0);
            twin_turns(&a, &one, "x", turns, turns + left);
            cr_assert_eq(sql_records(db), left);
            cr_assert_eq(th_open(&b, cfg8, 0, NULL), 0);
            twin_turns(&b, &one, "x", turns + left, turns + left + 4); /* slots seq % 8 */
            check_takeover(cfg8, "x", &one, &a, &b, db);
        }
    }
}

/* A record that does not decode is reported, and neither it nor what
 * follows it is applied: the state is the snapshot plus the records
 * before it, never a half-applied record. */
Test(persist, bad_turn_log_record_is_reported_and_not_applied)
{
    char db[256], cfg[512];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"}}", db);
    th_host a, b;
    cr_assert_eq(th_open(&a, cfg, 0, NULL), 0);
    turn(&a, "r", 0); /* record 1, with the meta of an empty snapshot */
    turn(&a, "r", 1); /* record 2 */
    cr_assert_eq(th_open(&b, cfg, 0, NULL), 0);
    json_t *after1 = scores(&b, "r");
    th_close(&b);
    turn(&a, "r", 2); /* record 3 */
    turn(&a, "r", 3); /* record 4 */
    cr_assert_eq(sql_count(db, "SELECT count(*) FROM ring WHERE id & 65535 BETWEEN 1 AND 4"), 4);
    /* cut record 3 short to 40 bytes (0x28, the cell's length): a torn or
     * edited row */
    th_sql_do(0, db, "UPDATE ring SET val = X'28000000' || substr(val, 5) WHERE id & 65535 = 3");
    cr_assert_eq(th_open(&b, cfg, 0, NULL), 0);
    json_t *j = scores(&b, "r");
    cr_assert(json_equal(j, after1), "a bad record was applied:\n%s\n%s", json_dumps(j, 0),
              json_dumps(after1, 0));
    cr_assert(b.error_lines > 0 && strstr(b.last_error, "record 3"), "not reported: %s", b.last_error);
    json_decref(j);
    json_decref(after1);
    th_close(&b);
    th_close(&a);
    th_unlink_db(db);
}

/* A session's end queues its fold for the worker thread: the hook returns
 * while another connection holds SQLite's write lock (a fold on the hook's
 * thread would wait for it, then fail), and the fold lands once the lock
 * goes; the restored state is the same. */
Test(persist, session_end_leaves_the_fold_to_the_worker, .init = th_limit_60)
{
    char db[256];
    th_host h;
    open_new_db(&h, db, sizeof db);
    for (int i = 0; i < 3; i++) turn(&h, "f", i);
    json_t *before = scores(&h, "f");
    size_t items = json_array_size(json_object_get(before, "items"));
    int lock = hold_write_lock(db);
    cr_assert_eq(th_session_end(&h, "f"), 0, "session_end waited for the store: %s", th_event_error());
    th_rows *rs = th_sql_on(lock, "SELECT count(*) FROM ring", NULL, 0);
    cr_assert(rs->rc == SQLITE_OK && rs->n == 1, "%s", rs->err);
    cr_expect_eq(th_cell(rs, 0, 0)->i, 3, "the three records are there until the fold");
    th_rows_free(rs);
    release_write_lock(lock);
    th_close(&h); /* waits for the worker */
    cr_expect_eq(sql_slots(db, NULL), 0);
    cr_expect_eq(sql_count(db, "SELECT count(*) FROM kv WHERE key LIKE 'i:%'"), (int)items);
    expect_restored(cfg_for(db, NULL), "f", before);
    th_unlink_db(db);
}

/* Near storage.snapshotEvery records (past 7/8 of them), the worker folds
 * the log between turns: the records go without a session end or a
 * shutdown, and before a turn would have to fold them itself. */
Test(persist, a_long_log_is_folded_between_turns, .init = th_limit_60)
{
    char db[256];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    char cfg[512];
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"snapshotEvery\":16}}", db);
    th_host h;
    cr_assert_eq(th_open(&h, cfg, 0, NULL), 0);
    for (int i = 0; i < 15; i++) turn(&h, "g", i); /* 15 records: more than 13, fewer than 16 */
    /* The fold is the worker's, queued after record 14: it covers 14
     * records, or 15 when turn 15 came first (the timing decides; record
     * 15 then stays, one record, below the mark).  Wait for it. */
    int left = -1;
    for (int tries = 0; tries < 2000 && (left < 0 || left >= 14); tries++) {
        left = sql_records(db);
        if (left >= 14) usleep(5000);
    }
    cr_expect_leq(left, 1, "%d records left unfolded", left);
    expect_restored(cfg, "g", scores(&h, "g"));
    th_close(&h);
    th_unlink_db(db);
}

/* Waits (up to 10 s) for the worker's fold: fewer than `below` records. */
static int wait_records_below(const char *db, int below)
{
    int n = sql_records(db);
    for (int tries = 0; tries < 2000 && n >= below; tries++) {
        usleep(5000);
        n = sql_records(db);
    }
    return n;
}

/* A fold writes its rows in key order, the order SQLite's kv table keeps
 * them in (clustered on its key): each chunk rewrites a few neighbouring
 * pages.  In the items' order every chunk touched pages all over the
 * table.  2,000 items imported in a shuffled order, all named again in a
 * reply, folded by the worker between turns in chunks of 8 (250 commits);
 * a reader holding a transaction keeps the WAL from being reset by
 * checkpoints, so its growth counts the frames written. */
/* A brief host (CLARITY_HOST_BRIEF: a process per hook) scans a restored
 * session's short texts without the session's name filter: its turn
 * counts what another host's counts, whatever form the names take
 * (CamelCase, hyphens, paths, tools, keywords, a file in a tool call). */
Test(persist, a_brief_hosts_turn_on_a_restored_session_counts_as_any_hosts)
{
    static const char *const names[] = {"ClaraCore", "focus-engine", "src/auth/session.ts", "docs/guide.md",
                                        "web_search", "refactoring", "MEMORY.md", "lib/c.py"};
    buf state;
    buf_init(&state);
    buf_puts(&state, "{\"session\":\"b\",\"state\":{\"currentTurn\":10,\"items\":[");
    for (int i = 0; i < 1500; i++)
        buf_printf(&state, "%s{\"id\":\"%s%04d\",\"mentionCount\":2,\"lastMentionTurn\":9}", i ? "," : "",
                   i % 3 == 0 ? "file:src/gen/f" : i % 3 == 1 ? "keyword:term" : "proj", i);
    buf_puts(&state, "]}}");
    char db[2][256];
    th_host h[2];
    for (int k = 0; k < 2; k++) { /* the same state in two files */
        snprintf(db[k], sizeof db[k], "%s", th_tmp_path(".db"));
        cr_assert_eq(th_open(&h[k], cfg_for(db[k], NULL), 0, NULL), 0);
        json_t *r = NULL;
        cr_assert_eq(th_rpc(&h[k], "clarity.importState", state.p, &r), 0, "%s", r ? json_dumps(r, 0) : "?");
        json_decref(r);
        for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
            char prompt[256];
            snprintf(prompt, sizeof prompt, "look at %s again", names[n]);
            cr_assert_eq(th_before(&h[k], "b", NULL, prompt, strlen(prompt), NULL), 0);
            cr_assert_eq(th_end(&h[k], "b", "ok", NULL, NULL), 0);
        }
        th_close(&h[k]);
    }
    buf_free(&state);
    cr_assert_eq(th_open_flags(&h[0], cfg_for(db[0], NULL), 0, CLARITY_HOST_BRIEF, NULL), 0);
    cr_assert_eq(th_open(&h[1], cfg_for(db[1], NULL), 0, NULL), 0);
    const char *reply = "Done: ClaraCore and Focus-Engine now share src/auth/session.ts; see docs/guide.md, "
                        "proj0005 and term0004. The web_search results and the refactoring notes in MEMORY.md "
                        "agree; src/gen/f0003 stays.";
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(th_before(&h[k], "b", NULL, "go on", 5, NULL), 0);
        cr_assert_eq(th_end(&h[k], "b", reply, "Read", "{\"file_path\":\"lib/c.py\"}"), 0);
    }
    json_t *brief = all_scores(&h[0], "b"), *other = all_scores(&h[1], "b");
    cr_assert(json_equal(brief, other), "the brief host counted otherwise:\n%s\nagainst\n%s", json_dumps(brief, 0),
              json_dumps(other, 0));
    json_t *c = th_item(brief, "claracore");
    cr_assert(c && json_integer_value(json_object_get(c, "referenceCount")) > 0, "the reply's names were not counted");
    json_decref(brief);
    json_decref(other);
    for (int k = 0; k < 2; k++) {
        th_close(&h[k]);
        th_unlink_db(db[k]);
    }
}

Test(persist, a_fold_writes_its_rows_in_key_order, .init = th_limit_120)
{
    enum { N = 2000, CHUNK = 8 };
    char db[256], cfg[512];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    snprintf(cfg, sizeof cfg,
             "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"snapshotEvery\":16,\"foldChunk\":%d}}", db,
             CHUNK);
    th_host h;
    cr_assert_eq(th_open(&h, cfg, 0, NULL), 0);
    static int order[N];
    for (int i = 0; i < N; i++) order[i] = i;
    srand(11);
    for (int i = N - 1; i > 0; i--) {
        int k = rand() % (i + 1), t = order[i];
        order[i] = order[k];
        order[k] = t;
    }
    buf state, reply;
    buf_init(&state);
    buf_init(&reply);
    buf_puts(&state, "{\"session\":\"kf\",\"state\":{\"currentTurn\":10,\"items\":[");
    for (int i = 0; i < N; i++) {
        buf_printf(&state, "%s{\"id\":\"w%05d\",\"mentionCount\":2,\"lastMentionTurn\":9}", i ? "," : "", order[i]);
        buf_printf(&reply, "w%05d ", i);
    }
    buf_puts(&state, "]}}");
    json_t *r = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.importState", state.p, &r), 0, "%s", r ? json_dumps(r, 0) : "?");
    json_decref(r);
    /* every item referenced: each row changed since the import's snapshot */
    cr_assert_eq(th_before(&h, "kf", NULL, "go on", 5, NULL), 0);
    cr_assert_eq(th_end(&h, "kf", reply.p, NULL, NULL), 0);
    int reader = th_sql_open(db);
    th_sql_do(reader, NULL, "BEGIN; SELECT count(*) FROM kv");
    long f0 = th_wal_frames(db);
    for (int i = 1; i < 15; i++) { /* the fold is queued near the 16th record */
        cr_assert_eq(th_before(&h, "kf", NULL, "go on", 5, NULL), 0);
        cr_assert_eq(th_end(&h, "kf", "done", NULL, NULL), 0);
    }
    int left = wait_records_below(db, 14);
    cr_assert_leq(left, 1, "%d records left unfolded", left);
    long frames = th_wal_frames(db) - f0;
    /* 250 chunk commits of 8 neighbouring rows (a leaf or two, their
     * parent) and the turns' records: in the items' order, 8 rows in up to
     * 8 leaves a commit: 1,761 frames here, against 312 */
    cr_assert_leq(frames, (long)(N / CHUNK) * 3 + 100, "%ld WAL frames for the fold and 14 records", frames);
    th_sql_do(reader, NULL, "COMMIT");
    th_sql_close(reader);
    buf_free(&state);
    buf_free(&reply);
    th_close(&h);
    th_unlink_db(db);
}


/* On SQLite a fold between turns leaves the slots of the records it
 * covered, stale, for later turns to rewrite in place (no page freed and
 * allocated again per turn); a restore skips them, and the snapshot of a
 * shutdown deletes them, those a process that left (here: idle, as if it
 * had died) and the ones it had never seen alike. */
Test(persist, a_fold_leaves_its_slots_for_the_turns_to_rewrite, .init = th_limit_60)
{
    char db[256], cfg[512];
    th_host one, a, b; /* one: every turn in memory, the reference */
    open_twins(db, cfg, 8, &one, &a);
    twin_turns(&a, &one, "st", 0, 7); /* record 7 asks the worker for a fold */
    int left = wait_records_below(db, 7);
    cr_assert_leq(left, 1, "%d records left unfolded", left);
    cr_assert_geq(sql_slots(db, NULL), 7, "the fold deleted the slots it covered");
    expect_restored(cfg, "st", scores(&one, "st"));
    twin_turns(&a, &one, "st", 7, 12); /* slots 0..3 rewritten: still 8 slots at most */
    cr_assert_leq(sql_slots(db, NULL), 8);
    expect_restored(cfg, "st", scores(&one, "st"));
    /* b takes the session over from an idle a, sees the stale slots a left,
     * and its shutdown deletes every slot */
    cr_assert_eq(th_open(&b, cfg, 0, NULL), 0);
    twin_turns(&b, &one, "st", 12, 13);
    th_close(&b);
    cr_assert_eq(sql_slots(db, NULL), 0, "stale slots outlived the snapshot");
    expect_restored(cfg, "st", scores(&one, "st"));
    th_close(&one);
    th_close(&a);
    th_unlink_db(db);
}

/* A session leaving memory (storage.maxResidentSessions) is folded by the
 * worker too: the hook that pushed it out returns while another connection
 * holds SQLite's write lock, without the warning a failed fold gives, and
 * the session's rows land once the lock goes. */
Test(persist, an_evicted_session_is_folded_by_the_worker, .init = th_limit_60)
{
    char db[256];
    const char *cfg = resident_cfg(db, sizeof db, 1);
    th_host h;
    cr_assert_eq(th_open(&h, cfg, 0, NULL), 0);
    turn(&h, "e1", 0);
    turn(&h, "e1", 1);
    json_t *before = scores(&h, "e1");
    int lock = hold_write_lock(db);
    const char *p = "now FocusEngine";
    cr_assert_eq(th_before(&h, "e2", NULL, p, strlen(p), NULL), 0); /* e1 leaves memory */
    cr_expect_eq(h.error_lines, 0, "the eviction waited for the store: %s", h.last_error);
    release_write_lock(lock);
    th_close(&h);
    cr_expect_gt(sql_count(db, "SELECT count(*) FROM kv WHERE ns='clarity:s:e1' AND key LIKE 'i:%'"), 0);
    cr_expect_eq(sql_slots(db, "clarity:s:e1"), 0);
    expect_restored(cfg, "e1", before);
    th_unlink_db(db);
}

/* ---- a compaction's record ---------------------------------------------- */

/* A SQLite store at db whose prunes keep target items, at most max, none
 * for its mentions or its score alone (into out). */
static const char *prune_cfg_to(char *out, size_t cap, const char *db, int target, int max)
{
    snprintf(out, cap,
             "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"},\"pruning\":{\"targetContextItems\":%d,"
             "\"maxContextItems\":%d,\"minMentionsPreserve\":50,\"pruneThreshold\":1000}}",
             db, target, max);
    return out;
}

/* The same keeping 2, at most 4 (a static buffer per thread). */
static const char *prune_cfg(const char *db)
{
    static __thread char cfg[512];
    return prune_cfg_to(cfg, sizeof cfg, db, 2, 4);
}

/* A turn naming `files` files of its own (turn i's). */
static void files_turn(th_host *h, const char *session, int i, int files)
{
    char prompt[2048];
    size_t n = 0;
    for (int k = 0; k < files && n < sizeof prompt - 64; k++)
        n += (size_t)snprintf(prompt + n, sizeof prompt - n, "see src/area%d/part%d.ts ", i, k);
    cr_assert_eq(th_before(h, session, NULL, prompt, n, NULL), 0);
    cr_assert_eq(th_end(h, session, "done", NULL, NULL), 0);
}

static void file_turn(th_host *h, const char *session, int i) { files_turn(h, session, i, 1); }

static long long stat_of(th_host *h, const char *session, const char *key)
{
    char params[256];
    snprintf(params, sizeof params, "{\"session\":\"%s\"}", session);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(h, "clarity.stats", params, &j), 0);
    long long v = json_integer_value(json_object_get(j, key));
    json_decref(j);
    return v;
}

/* A copy of the committed state of the SQLite file src at dst. */
static void copy_db(const char *src, const char *dst)
{
    th_unlink_db(dst); /* VACUUM INTO writes a new file */
    th_rows *rs = th_sql_once(src, "VACUUM INTO ?1", &TH_TEXT(dst), 1);
    cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
    th_rows_free(rs);
}

/* The newest turn-log record of the database (the one of highest seq). */
static unsigned char *newest_record(const char *db, size_t *len)
{
    th_rows *rs = th_sql_once(db, "SELECT val FROM ring", NULL, 0);
    cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
    unsigned char *best = NULL;
    uint64_t best_seq = 0;
    for (size_t r = 0; r < rs->n; r++) {
        const unsigned char *c = th_cell(rs, r, 0)->p; /* the record's length, then it */
        size_t cn = th_cell(rs, r, 0)->n;
        cr_assert_geq(cn, 4);
        const unsigned char *v = c + 4;
        size_t n = le32_at(c);
        /* a row made ahead for a slot (sqlite_ring.h, reservations): no record */
        if (n == 0 && cn >= 4 + SQ_RING_RESERVED_LEN && memcmp(v, SQ_RING_RESERVED, SQ_RING_RESERVED_LEN) == 0)
            continue;
        cr_assert(n >= 28 && n <= cn - 4, "a slot's cell holds %zu bytes of %zu", n, cn);
        uint64_t seq = le64_at(v + 4);
        if (seq <= best_seq) continue;
        free(best);
        best = malloc(n);
        memcpy(best, v, n);
        *len = n, best_seq = seq;
    }
    th_rows_free(rs);
    cr_assert_not_null(best, "no turn-log record");
    return best;
}

/* Writes u32 v at offset at of the newest turn-log record of db. */
static void patch_newest_record(const char *db, size_t at, uint32_t v)
{
    th_rows *rs = th_sql_once(db, "SELECT id, val FROM ring", NULL, 0);
    cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
    long long best_id = -1;
    uint64_t best_seq = 0;
    unsigned char *cell = NULL;
    size_t cell_n = 0;
    for (size_t r = 0; r < rs->n; r++) {
        const unsigned char *c = th_cell(rs, r, 1)->p;
        size_t cn = th_cell(rs, r, 1)->n;
        if (cn < 32 || le64_at(c + 8) <= best_seq) continue;
        best_seq = le64_at(c + 8), best_id = th_cell(rs, r, 0)->i;
        free(cell);
        cell = malloc(cn);
        memcpy(cell, c, cn);
        cell_n = cn;
    }
    th_rows_free(rs);
    cr_assert(cell && 4 + at + 4 <= cell_n);
    unsigned char le[4] = {v & 255, v >> 8 & 255, v >> 16 & 255, v >> 24};
    memcpy(cell + 4 + at, le, 4); /* the cell: u32 length, then the record */
    th_val put[] = {TH_BLOB(cell, cell_n), TH_INT(best_id)};
    rs = th_sql_once(db, "UPDATE ring SET val = ?1 WHERE id = ?2", put, 2);
    cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
    th_rows_free(rs);
    free(cell);
}

/* The count of the pruned section of a record with no whole items and no
 * deletions (turnlog.h), or -1 when it has none; *kept, that of its kept
 * section, or -1. */
static long long pruned_section(const unsigned char *p, size_t len, long long *kept)
{
    size_t at = 28;
    if (p[2] & TL_REC_META) at += 4 + le32_at(p + at);
    *kept = -1;
    if (p[2] & TL_REC_KEPT) {
        tl_reader r = tl_reader_over(p + at, len - at, 3);
        uint32_t n;
        int64_t turn;
        cr_assert(tl_get_u32(&r, &n, "kept") == 0 && tl_get_turn_back(&r, le64_at(p + 12), &turn, "keptTurn") == 0);
        cr_assert_eq(turn, (int64_t)le64_at(p + 12), "a kept section of another turn");
        for (uint32_t i = 0; i < n; i++) {
            const char *id;
            uint32_t idn;
            cr_assert_eq(tl_get_id(&r, &id, &idn, "kept id"), 0);
        }
        *kept = n;
        at = (size_t)(r.p - p);
    }
    cr_assert_geq(len, at + 8);
    cr_assert_eq(le32_at(p + at), 0, "whole items in a compaction's record");
    cr_assert_eq(le32_at(p + at + 4), 0, "deletions in a compaction's record");
    at += 8;
    if (!(p[2] & TL_REC_PRUNED)) return -1;
    cr_assert_geq(len, at + 4);
    return le32_at(p + at);
}

/* A compaction prunes some items of a session: its record holds their
 * ids, not their whole forms.  A fresh process restores the writer's
 * state, pruned flags included, from the snapshot and the records, also
 * after an item pruned comes back. */
Test(persist, a_compaction_writes_the_ids_it_pruned)
{
    char db[256], cfg[512];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    prune_cfg_to(cfg, sizeof cfg, db, 18, 30);
    th_host a;
    cr_assert_eq(th_open(&a, cfg, 0, NULL), 0);
    for (int i = 0; i < 24; i++) file_turn(&a, "p", i);
    cr_assert_eq(th_compact(&a, "p", NULL), 0);
    long long pruned = stat_of(&a, "p", "prunedItems"), kept;
    cr_assert_geq(pruned, 5, "the compaction pruned %lld items", pruned);
    size_t len = 0;
    unsigned char *rec = newest_record(db, &len);
    cr_expect_eq(pruned_section(rec, len, &kept), pruned);
    cr_expect_eq(kept, -1, "a kept section for %lld items pruned", pruned);
    free(rec);
    expect_restored_by(cfg, "p", all_scores(&a, "p"), all_scores);
    /* an item pruned comes back, and the next compaction prunes others */
    file_turn(&a, "p", 0);
    for (int i = 24; i < 30; i++) file_turn(&a, "p", i);
    cr_assert_eq(th_compact(&a, "p", NULL), 0);
    expect_restored_by(cfg, "p", all_scores(&a, "p"), all_scores);
    th_close(&a);
    th_unlink_db(db);
}

/* A compaction that prunes most of a session's items (a bulk prune)
 * writes the few it kept instead: no id of a pruned item, no whole form.
 * A fresh process restores the writer's state, after items pruned before
 * (which the kept section leaves as they are), a revival, items new in
 * the compaction's turn, and a second such compaction. */
Test(persist, a_compaction_that_prunes_most_writes_the_ids_it_kept)
{
    char db[256];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    th_host a;
    cr_assert_eq(th_open(&a, prune_cfg(db), 0, NULL), 0);
    for (int i = 0; i < 12; i++) files_turn(&a, "p", i, 4);
    json_t *unpruned = state_of(&a, "p");
    cr_assert_eq(th_compact(&a, "p", NULL), 0);
    long long pruned = stat_of(&a, "p", "prunedItems"), kept;
    cr_assert_geq(pruned, 40, "the compaction pruned %lld items", pruned);
    size_t len = 0;
    unsigned char *rec = newest_record(db, &len);
    cr_expect_eq(pruned_section(rec, len, &kept), -1, "a pruned section beside the kept one");
    cr_expect(kept >= 1 && kept <= 4, "%lld items in the kept section (maxContextItems 4)", kept);
    cr_expect_lt(len, 200, "a record of %zu bytes for %lld items pruned", len, pruned);
    size_t kept_at = 28 + (rec[2] & TL_REC_META ? 4 + le32_at(rec + 28) : 0);
    free(rec);
    expect_restored_by(prune_cfg(db), "p", state_of(&a, "p"), state_of);
    /* a kept count its record cannot hold: reported, the record not applied */
    char bad[256];
    snprintf(bad, sizeof bad, "%s", th_tmp_path(".db"));
    copy_db(db, bad);
    patch_newest_record(bad, kept_at, 0x7fffffff);
    th_host b;
    cr_assert_eq(th_open(&b, prune_cfg(bad), 0, NULL), 0);
    json_t *got = state_of(&b, "p");
    cr_expect(json_equal(got, unpruned), "a bad kept section was applied");
    cr_expect(b.error_lines > 0 && strstr(b.last_error, "\"kept\""), "not reported: %s", b.last_error);
    json_decref(got);
    json_decref(unpruned);
    th_close(&b);
    th_unlink_db(bad);
    /* a pruned item comes back, new items come in the compaction's turn,
     * and the next compaction prunes them with the earlier ones in place */
    file_turn(&a, "p", 0);
    for (int i = 12; i < 20; i++) files_turn(&a, "p", i, 4);
    cr_assert_eq(th_before(&a, "p", NULL, "see src/late/one.ts and src/late/two.ts", 38, NULL), 0);
    cr_assert_eq(th_compact(&a, "p", NULL), 0);
    rec = newest_record(db, &len);
    cr_expect(rec[2] & TL_REC_KEPT, "the second compaction has no kept section");
    free(rec);
    cr_assert_gt(stat_of(&a, "p", "prunedItems"), pruned + 30);
    expect_restored_by(prune_cfg(db), "p", state_of(&a, "p"), state_of);
    th_close(&a);
    th_unlink_db(db);
}

/* A compaction that prunes every item: a kept section of no id, and the
 * restore prunes every item it held. */
Test(persist, a_compaction_that_prunes_every_item_writes_an_empty_kept_section)
{
    char db[256], cfg[512];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    prune_cfg_to(cfg, sizeof cfg, db, 0, 4);
    th_host a;
    cr_assert_eq(th_open(&a, cfg, 0, NULL), 0);
    for (int i = 0; i < 8; i++) files_turn(&a, "e", i, 4);
    cr_assert_eq(th_compact(&a, "e", NULL), 0);
    long long kept;
    size_t len = 0;
    unsigned char *rec = newest_record(db, &len);
    cr_expect_eq(pruned_section(rec, len, &kept), -1);
    cr_expect_eq(kept, 0, "%lld items in the kept section", kept);
    free(rec);
    cr_assert_eq(stat_of(&a, "e", "prunedItems"), stat_of(&a, "e", "totalItems"));
    expect_restored_by(cfg, "e", state_of(&a, "e"), state_of);
    th_close(&a);
    th_unlink_db(db);
}

/* A compaction whose record cannot be written (another connection holds
 * the write lock) leaves its items dirty: the next turn's record holds
 * them whole, and nothing is lost. */
Test(persist, a_compaction_record_that_failed_is_written_whole_next_turn, .init = th_limit_60)
{
    char db[256];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    th_host a;
    cr_assert_eq(th_open(&a, prune_cfg(db), 0, NULL), 0);
    for (int i = 0; i < 16; i++) file_turn(&a, "q", i);
    int lock = hold_write_lock(db);
    cr_assert_neq(th_compact(&a, "q", NULL), 0, "the record was written under another's lock");
    release_write_lock(lock);
    file_turn(&a, "q", 3); /* mentions an item the compaction pruned */
    file_turn(&a, "q", 16);
    size_t len = 0;
    unsigned char *rec = newest_record(db, &len);
    cr_expect_eq(rec[2] & 2, 0, "a pruned section after a failed write");
    free(rec);
    cr_assert_gt(stat_of(&a, "q", "prunedItems"), 5);
    expect_restored_by(prune_cfg(db), "q", all_scores(&a, "q"), all_scores);
    th_close(&a);
    th_unlink_db(db);
}

/* The same for a bulk prune (most items pruned, a few kept): its record
 * not written, its items go by their ids in the next turn's record, with
 * no kept section, and nothing is lost. */
Test(persist, a_bulk_compaction_that_failed_writes_its_ids_next_turn, .init = th_limit_60)
{
    char db[256];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    th_host a;
    cr_assert_eq(th_open(&a, prune_cfg(db), 0, NULL), 0);
    for (int i = 0; i < 12; i++) files_turn(&a, "q", i, 4);
    int lock = hold_write_lock(db);
    cr_assert_neq(th_compact(&a, "q", NULL), 0, "the record was written under another's lock");
    release_write_lock(lock);
    long long pruned = stat_of(&a, "q", "prunedItems");
    cr_assert_geq(pruned, 40);
    file_turn(&a, "q", 12);
    size_t len = 0;
    unsigned char *rec = newest_record(db, &len);
    cr_expect_eq(rec[2] & TL_REC_KEPT, 0, "a kept section after a failed write");
    cr_expect(rec[2] & TL_REC_PRUNED, "no pruned section after a failed bulk prune");
    free(rec);
    expect_restored_by(prune_cfg(db), "q", state_of(&a, "q"), state_of);
    th_close(&a);
    th_unlink_db(db);
}

/* The worker's fold writes its rows in chunks of storage.foldChunk, with
 * the session free between them: while another connection holds SQLite's
 * write lock (the fold waits for it in its first chunk), a prompt of the
 * session is answered at once, where a fold holding the session for the
 * whole of its transaction made it wait for the lock's end, or fail with
 * it.  Once the lock goes, the fold lands (rows, no record) and the
 * session restores as it was. */
Test(persist, a_turn_goes_on_while_the_worker_folds, .init = th_limit_60)
{
    char db[256], cfg[512];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"foldChunk\":2}}", db);
    th_host h;
    cr_assert_eq(th_open(&h, cfg, 0, NULL), 0);
    for (int i = 0; i < 6; i++) turn(&h, "w", i);
    int lock = hold_write_lock(db);
    cr_assert_eq(th_session_end(&h, "w"), 0); /* queues the fold */
    usleep(200 * 1000);                      /* the worker is in it, waiting for the lock */
    const char *p = "ClaraCore again, and focus-engine";
    cr_assert_eq(th_before(&h, "w", NULL, p, strlen(p), NULL), 0, "%s", th_event_error());
    release_write_lock(lock);
    cr_assert_eq(th_end(&h, "w", "ClaraCore done", NULL, NULL), 0, "%s", th_event_error());
    json_t *before = scores(&h, "w");
    cr_expect_eq(h.error_lines, 0, "a fold failed: %s", h.last_error);
    th_close(&h); /* waits for the worker, folds what is left */
    cr_expect_eq(sql_slots(db, NULL), 0);
    cr_expect_gt(sql_count(db, "SELECT count(*) FROM kv WHERE key LIKE 'i:%'"), 4);
    expect_restored(cfg, "w", before);
    th_unlink_db(db);
}

/* The snapshot seq of the only session's meta in db (0 without one). */
static unsigned long long sql_meta_seq(const char *db)
{
    th_rows *rs = th_sql_once(db, "SELECT CAST(val AS TEXT) FROM kv WHERE key = 'meta'", NULL, 0);
    cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
    unsigned long long seq = 0;
    if (rs->n) {
        const char *meta = th_cell(rs, 0, 0)->p;
        const char *at = meta ? strstr(meta, "\"seq\":") : NULL;
        seq = at ? strtoull(at + 6, NULL, 10) : 0;
    }
    th_rows_free(rs);
    return seq;
}

/* A turn on another thread (criterion's asserts belong to the test's). */
typedef struct late_turn {
    th_host *h;
    int rc;
} late_turn;

static void *late_turn_run(void *arg)
{
    late_turn *lt = arg;
    const char *p = "see src/late/one.ts now";
    lt->rc = th_before(lt->h, "sl", NULL, p, strlen(p), NULL);
    if (lt->rc == 0) lt->rc = th_end(lt->h, "sl", "src/late/one.ts done", NULL, NULL);
    return NULL;
}

/* A fold between turns leaves the slots it covered (stale), so the next
 * fold deletes every slot, not only those after its snapshot.  A turn's
 * record written while that fold is between two chunks takes one of those
 * slots: it waits for the fold's end, or the fold's last transaction
 * deletes it and a second process restores the session without that turn
 * (tsan stress, 3 runs in 100 under load, before c986e92).  Here the fold
 * waits for SQLite's write lock in its first chunk while the turn comes;
 * without the wait, the store lets the turn's record in between two of the
 * fold's one-row chunks. */
Test(persist, a_record_written_during_a_fold_keeps_its_slot, .init = th_limit_60)
{
    char db[256], cfg[512];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    snprintf(cfg, sizeof cfg,
             "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"snapshotEvery\":8,\"foldChunk\":1}}", db);
    th_host h;
    cr_assert_eq(th_open(&h, cfg, 0, NULL), 0);
    for (int i = 0; i < 7; i++) files_turn(&h, "sl", i, 20); /* record 7 asks the worker for a fold */
    int left = wait_records_below(db, 7);
    cr_assert_leq(left, 1, "%d records left unfolded", left);
    cr_assert_geq(sql_slots(db, NULL), 7, "the fold between turns left its slots");
    files_turn(&h, "sl", 7, 20);
    files_turn(&h, "sl", 8, 20); /* records 8 and 9 */
    int lock = hold_write_lock(db);
    cr_assert_eq(th_session_end(&h, "sl"), 0); /* queues a fold of every slot */
    usleep(100 * 1000);                         /* the worker waits for the lock */
    late_turn lt = {&h, -1};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, late_turn_run, &lt), 0);
    usleep(100 * 1000); /* the turn waits too */
    release_write_lock(lock);
    pthread_join(t, NULL);
    cr_assert_eq(lt.rc, 0, "%s", th_event_error());
    json_t *before = scores(&h, "sl");
    cr_assert_not_null(th_item(before, "file:src/late/one.ts"));
    unsigned long long seq = sql_meta_seq(db);
    for (int tries = 0; tries < 2000 && seq < 9; tries++) {
        usleep(5000);
        seq = sql_meta_seq(db);
    }
    cr_assert_geq(seq, 9, "the fold did not land");
    cr_expect_eq(h.error_lines, 0, "%s", h.last_error);
    expect_restored(cfg, "sl", before); /* h is still up: the late turn is in its record */
    th_close(&h);
    th_unlink_db(db);
}

/* The kill test's turns, of 20 files each: a fold of one row per chunk
 * long enough (tens of milliseconds) that the parent, polling, sees it
 * under way even on loaded cores (with 300 rows the whole fold sometimes
 * ran while the parent waited for a core, 20 tries in a row). */
#define KILL_TURNS 60

/* The child of the kill test: turns, its state to ref, "ready", then on
 * "go" the session ends and the worker folds it in chunks of one row. */
static void fold_child(const char *cfg, const char *ref, int to_parent, int from_parent)
{
    th_host c;
    if (th_open(&c, cfg, 0, NULL) != 0) _exit(3);
    for (int i = 0; i < KILL_TURNS; i++) files_turn(&c, "k", i, 20);
    json_t *j = scores(&c, "k");
    if (json_dump_file(j, ref, JSON_SORT_KEYS) != 0) _exit(4);
    char b = 'r';
    if (write(to_parent, &b, 1) != 1 || read(from_parent, &b, 1) != 1) _exit(5);
    th_session_end(&c, "k");
    pause();
    _exit(6);
}

/* A kill between two chunks of the worker's fold leaves rows newer than
 * the meta, and the records they came from: a restore replays those over
 * the rows and ends where the session was.  The test takes SQLite's write
 * lock once the fold's first rows landed and before its meta did (the
 * fold then waits in its next chunk), kills the process there, and
 * restores; it tries again until a kill lands between chunks. */
Test(persist, a_kill_between_fold_chunks_loses_nothing, .init = th_limit_120)
{
    int hit = 0;
    for (int attempt = 0; attempt < 20 && !hit; attempt++) {
        char db[256], ref[256], cfg[512];
        snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
        snprintf(ref, sizeof ref, "%s", th_tmp_path(".json"));
        snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"foldChunk\":1}}", db);
        int up[2], down[2];
        cr_assert_eq(pipe(up), 0);
        cr_assert_eq(pipe(down), 0);
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0) {
            close(up[0]);
            close(down[1]);
            fold_child(cfg, ref, up[1], down[0]);
        }
        close(up[1]);
        close(down[0]);
        char b;
        cr_assert_eq(read(up[0], &b, 1), 1, "the child did not get ready");
        int lock = th_sql_open(db);
        th_sql_do(lock, NULL, "PRAGMA busy_timeout=1");
        int rows0 = sql_count(db, "SELECT count(*) FROM kv WHERE key LIKE 'i:%'");
        cr_assert_eq(write(down[1], "g", 1), 1);
        /* wait for the fold's first rows, then hold the lock */
        int locked = 0;
        for (int tries = 0; tries < 200000 && !locked; tries++) {
            if (sql_count(db, "SELECT count(*) FROM kv WHERE key LIKE 'i:%'") > rows0) {
                th_rows *rs = th_sql_on(lock, "BEGIN IMMEDIATE", NULL, 0);
                locked = rs->rc == SQLITE_OK;
                th_rows_free(rs);
            } else {
                usleep(50);
            }
        }
        cr_assert(locked, "the fold wrote no row");
        int rows = sql_count(db, "SELECT count(*) FROM kv WHERE key LIKE 'i:%'");
        int recs = sql_records(db);
        /* between chunks: rows, not all of them, and the records still */
        hit = recs > 0 && rows > rows0 && rows < KILL_TURNS * 20;
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        close(up[0]);
        close(down[1]);
        release_write_lock(lock);
        json_error_t jerr;
        json_t *before = json_load_file(ref, 0, &jerr);
        cr_assert_not_null(before, "%s", jerr.text);
        expect_restored(cfg, "k", before);
        th_unlink_db(db);
        unlink(ref);
    }
    cr_assert(hit, "no kill landed between two chunks of a fold in 20 tries");
}

/* One random turn of session on h: a prompt naming some of the names, a
 * reply and a tool call naming others; now and then a command (anchor,
 * unanchor, tier, prune) or a compaction instead of the reply. */
static void random_turn(th_host *h, const char *session, unsigned *seed)
{
    static const char *const names[] = {"ClaraCore", "FocusEngine", "focus-engine", "web_search",
                                        "src/a.ts",  "src/b.ts",    "docs/guide.md", "MEMORY.md",
                                        "lib/c.py",  "DeltaCache",  "retry-budget",  "src/main.go"};
    const size_t nn = sizeof names / sizeof *names;
    char prompt[256] = "", reply[256] = "", args[96];
    for (int k = rand_r(seed) % 4; k > 0; k--) {
        strcat(prompt, names[rand_r(seed) % nn]);
        strcat(prompt, " ");
    }
    for (int k = rand_r(seed) % 4; k > 0; k--) {
        strcat(reply, names[rand_r(seed) % nn]);
        strcat(reply, " ");
    }
    snprintf(args, sizeof args, "{\"file_path\":\"%s\"}", names[4 + rand_r(seed) % 3]);
    cr_assert_eq(th_before(h, session, NULL, prompt, strlen(prompt), NULL), 0);
    int r = rand_r(seed) % 10;
    char line[96];
    if (r == 0) {
        snprintf(line, sizeof line, "/clarity anchor %s", names[rand_r(seed) % nn]);
        th_cmd(h, session, line, NULL, NULL); /* an item not tracked yet is refused: fine */
    } else if (r == 1) {
        snprintf(line, sizeof line, "/clarity unanchor %s", names[rand_r(seed) % nn]);
        th_cmd(h, session, line, NULL, NULL);
    } else if (r == 2) {
        snprintf(line, sizeof line, "/clarity tier %s %s", names[rand_r(seed) % nn],
                 rand_r(seed) % 2 ? "high" : "low");
        th_cmd(h, session, line, NULL, NULL);
    } else if (r == 3) {
        th_cmd(h, session, "/clarity prune", NULL, NULL);
    } else if (r == 4) {
        char *out = NULL;
        th_compact(h, session, &out);
        free(out);
    }
    cr_assert_eq(th_end(h, session, reply, rand_r(seed) % 2 ? "Edit" : NULL, args), 0);
}

/* What a crash between a fold's chunks leaves, built without a kill: pre
 * (the file as the fold found it: the meta of the last snapshot, the
 * records after it) takes some of the rows and some of the removals the
 * fold wrote into post.  Returns how many it took. */
static int splice_fold(const char *pre, const char *post, unsigned *seed)
{
    int d = th_sql_open(pre);
    th_val attach = TH_TEXT(post);
    th_rows *rs = th_sql_on(d, "ATTACH ?1 AS post", &attach, 1);
    cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
    th_rows_free(rs);
    int taken = 0;
    th_sql_do(d, NULL, "BEGIN");
    th_rows *rows = th_sql_on(d, "SELECT ns, key, val FROM post.kv WHERE key LIKE 'i:%' AND NOT EXISTS "
                                 "(SELECT 1 FROM main.kv m WHERE m.ns = post.kv.ns AND m.key = post.kv.key "
                                 "AND m.val = post.kv.val)",
                              NULL, 0);
    cr_assert_eq(rows->rc, SQLITE_OK, "%s", rows->err);
    for (size_t r = 0; r < rows->n; r++) {
        if (rand_r(seed) % 3 == 0) continue;
        rs = th_sql_on(d, "INSERT OR REPLACE INTO main.kv VALUES (?1, ?2, ?3)", th_cell(rows, r, 0), 3);
        cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
        th_rows_free(rs);
        taken++;
    }
    th_rows_free(rows);
    rows = th_sql_on(d, "SELECT ns, key FROM main.kv m WHERE key LIKE 'i:%' AND NOT EXISTS "
                        "(SELECT 1 FROM post.kv p WHERE p.ns = m.ns AND p.key = m.key)",
                     NULL, 0);
    cr_assert_eq(rows->rc, SQLITE_OK, "%s", rows->err);
    for (size_t r = 0; r < rows->n; r++) {
        if (rand_r(seed) % 2) continue;
        rs = th_sql_on(d, "DELETE FROM main.kv WHERE ns = ?1 AND key = ?2", th_cell(rows, r, 0), 2);
        cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
        th_rows_free(rs);
        taken++;
    }
    th_rows_free(rows);
    th_sql_do(d, NULL, "COMMIT");
    th_sql_close(d);
    return taken;
}

/* The records above the snapshot of the file db that have the flag of
 * a section (turnlog.h). */
static int records_with(const char *db, unsigned flag)
{
    th_rows *rs = th_sql_once(db, "SELECT val FROM ring", NULL, 0);
    cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
    int n = 0;
    for (size_t r = 0; r < rs->n; r++) { /* a cell: u32 length, then the record */
        const unsigned char *c = th_cell(rs, r, 0)->p;
        n += th_cell(rs, r, 0)->n > 6 && (c[6] & flag);
    }
    th_rows_free(rs);
    return n;
}

/* One random turn; in a wide session, after a turn of its own naming
 * three of 90 files (compactions and prunes then prune most items, a few
 * kept: bulk prunes). */
static void random_turn_of(th_host *h, const char *session, unsigned *seed, int wide)
{
    if (wide) files_turn(h, session, (int)(rand_r(seed) % 30), 3);
    random_turn(h, session, seed);
}

/* Records replayed onto rows a fold wrote after them (a crash between
 * its chunks) end where the session was, whatever the mix of whole forms,
 * pruned entries, kept sections and touched entries (counts alone) the
 * turns wrote: the whole state, mention histories included, for random
 * sessions cut at random folds (odd rounds: wide sessions that prune
 * most of their items). */
Test(persist, records_replayed_onto_newer_rows_end_where_the_session_was, .init = th_limit_120)
{
    int spliced = 0, touched = 0, kept = 0;
    for (unsigned round = 0; round < 16; round++) {
        unsigned seed = 1000 + round;
        int wide = round % 2;
        char db[256], pre[256], cfg[512], cfg_pre[512];
        snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
        snprintf(pre, sizeof pre, "%s", th_tmp_path(".db"));
        if (wide) {
            prune_cfg_to(cfg, sizeof cfg, db, 2, 4);
            prune_cfg_to(cfg_pre, sizeof cfg_pre, pre, 2, 4);
        } else {
            snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"}}", db);
            snprintf(cfg_pre, sizeof cfg_pre, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"}}", pre);
        }
        th_host a;
        cr_assert_eq(th_open(&a, cfg, 0, NULL), 0);
        /* a snapshot mid-session (the session's end folds), then records
         * after it */
        int turns = 3 + (int)(rand_r(&seed) % 12);
        for (int i = 0; i < turns; i++) random_turn_of(&a, "k", &seed, wide);
        cr_assert_eq(th_session_end(&a, "k"), 0);
        th_close(&a);
        cr_assert_eq(th_open(&a, cfg, 0, NULL), 0);
        int more = 3 + (int)(rand_r(&seed) % 20);
        for (int i = 0; i < more; i++) random_turn_of(&a, "k", &seed, wide);
        turns += more;
        json_t *want = state_of(&a, "k");
        copy_db(db, pre); /* as the session's fold finds it */
        touched += records_with(pre, TL_REC_TOUCHED) > 0;
        kept += records_with(pre, TL_REC_KEPT) > 0;
        cr_assert_eq(th_session_end(&a, "k"), 0);
        th_close(&a); /* the fold done */
        spliced += splice_fold(pre, db, &seed) > 0;
        th_host b;
        cr_assert_eq(th_open(&b, cfg_pre, 0, NULL), 0);
        json_t *got = state_of(&b, "k");
        char *w = json_dumps(want, JSON_SORT_KEYS), *g = json_dumps(got, JSON_SORT_KEYS);
        cr_assert_str_eq(g, w, "round %u (%d turns): restored\n%s\nwritten\n%s", round, turns, g, w);
        free(w);
        free(g);
        json_decref(want);
        json_decref(got);
        th_close(&b);
        th_unlink_db(db);
        th_unlink_db(pre);
    }
    cr_assert_geq(spliced, 12, "rows of a later fold under the records in %d rounds of 16", spliced);
    cr_assert_geq(touched, 12, "touched sections in %d rounds of 16", touched);
    cr_assert_geq(kept, 4, "kept sections in %d rounds of 16", kept);
}
