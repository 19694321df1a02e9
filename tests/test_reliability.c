/* test_reliability.c: the defects a reliability campaign found (issue 10),
 * each reproduced as it was reported: durability of the reference host's kv
 * under kill -9, out-of-range numbers in imported or stored state, a refused
 * turn that changed state, and slash-command arguments out of range. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clihelp.h"
#include "sqlchild.h"

static char *tmp;

static void setup(void) { tmp = runproc_mkdtemp("clarity-reliability"); }
static void teardown(void)
{
    if (tmp) runproc_rmtree(tmp);
    free(tmp);
    tmp = NULL;
}
TestSuite(reliability, .init = setup, .fini = teardown, .timeout = 120);

/* `clarity serve` with pipes to talk to it line by line. */
typedef struct child {
    pid_t pid;
    FILE *in, *out;
} child;

static void serve_start(child *c, const char *const *extra)
{
    int to[2], from[2];
    cr_assert_eq(pipe(to), 0);
    cr_assert_eq(pipe(from), 0);
    char *exe = clihelp_exe();
    const char *argv[16] = {exe, "serve"};
    int n = 2;
    for (; extra && *extra && n < 15; extra++) argv[n++] = *extra;
    argv[n] = NULL;
    c->pid = fork();
    cr_assert(c->pid >= 0);
    if (c->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[1]), close(from[0]), close(to[0]), close(from[1]);
        execv(exe, (char *const *)argv);
        _exit(127);
    }
    free(exe);
    close(to[0]), close(from[1]);
    c->in = fdopen(to[1], "w");
    c->out = fdopen(from[0], "r");
}

/* Sends one request and reads its answer line. */
static json_t *serve_call(child *c, const char *line)
{
    fprintf(c->in, "%s\n", line);
    fflush(c->in);
    char *resp = NULL;
    size_t cap = 0;
    cr_assert(getline(&resp, &cap, c->out) > 0, "no answer to %s", line);
    json_t *j = clihelp_json(resp);
    free(resp);
    return j;
}

static void serve_kill9(child *c)
{
    kill(c->pid, SIGKILL);
    int st;
    waitpid(c->pid, &st, 0);
    fclose(c->in);
    fclose(c->out);
}

/* Defect 1: the host kv was written only at exit, so every acknowledged
 * turn was lost on kill -9 ("unknown session" afterwards). */
Test(reliability, host_kv_keeps_acknowledged_turns_across_kill_9)
{
    char *kv = runproc_join(tmp, "kv.json"), *db = runproc_join(tmp, "state.db");
    const char *extra[] = {"--host-kv", kv, "--state", db, NULL};
    child c;
    serve_start(&c, extra);
    json_t *r = serve_call(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hook.before_agent_start\","
                               "\"params\":{\"session\":\"s\",\"prompt\":\"Look at ClaraCore and src/auth/session.ts\"}}");
    json_decref(r);
    r = serve_call(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"hook.agent_end\",\"params\":"
                       "{\"session\":\"s\",\"messages\":[{\"role\":\"assistant\",\"text\":\"claracore is fine\"}]}}");
    cr_assert(json_is_true(json_object_get(json_object_get(r, "result"), "ok")), "agent_end not acknowledged");
    json_decref(r);
    serve_kill9(&c);
    runproc_result rr;
    const char *argv[] = {"rpc", "clarity.getScores", "{\"session\":\"s\"}", "--host-kv", kv, "--state", db, NULL};
    clihelp_run(&rr, NULL, NULL, argv);
    cr_assert_eq(rr.status, 0, "the acknowledged turn was lost: %s %s", rr.out, rr.err);
    json_t *s = clihelp_json(rr.out);
    cr_assert_eq(json_integer_value(json_object_get(s, "currentTurn")), 1);
    json_decref(s);
    runproc_free(&rr);
    free(kv), free(db);
}

/* A torn last record (the process died mid-write) is ignored, and what
 * came before it is kept. */
Test(reliability, host_kv_ignores_a_torn_log_record)
{
    char *kv = runproc_join(tmp, "kv.json"), *db = runproc_join(tmp, "state.db");
    char *log = runproc_join(tmp, "kv.json.log");
    const char *extra[] = {"--host-kv", kv, "--state", db, NULL};
    child c;
    serve_start(&c, extra);
    json_decref(serve_call(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hook.before_agent_start\","
                               "\"params\":{\"session\":\"s\",\"prompt\":\"ClaraCore\"}}"));
    json_decref(serve_call(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"hook.agent_end\",\"params\":"
                               "{\"session\":\"s\",\"messages\":[]}}"));
    serve_kill9(&c);
    int fd = open(log, O_WRONLY | O_APPEND);
    cr_assert(fd >= 0, "no log at %s", log);
    cr_assert_eq(write(fd, "KVL1\x40\x00\x00\x00garbage", 15), 15); /* a header without its payload */
    close(fd);
    runproc_result rr;
    const char *argv[] = {"rpc", "clarity.getScores", "{\"session\":\"s\"}", "--host-kv", kv, "--state", db, NULL};
    clihelp_run(&rr, NULL, NULL, argv);
    cr_assert_eq(rr.status, 0, "%s %s", rr.out, rr.err);
    runproc_free(&rr);
    /* the next run appended after the valid records: a later turn is kept */
    serve_start(&c, extra);
    json_decref(serve_call(&c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"hook.agent_end\",\"params\":"
                               "{\"session\":\"s\",\"messages\":[]}}"));
    serve_kill9(&c);
    clihelp_run(&rr, NULL, NULL, argv);
    cr_assert_eq(rr.status, 0, "%s %s", rr.out, rr.err);
    json_t *s = clihelp_json(rr.out);
    cr_assert_eq(json_integer_value(json_object_get(s, "currentTurn")), 2, "%s", rr.out);
    json_decref(s);
    runproc_free(&rr);
    free(kv), free(db), free(log);
}

/* ---- numbers from outside: imports and stored rows ---------------------- */

#include <sqlite3.h>

#include "testhost.h"

/* In place: the host table points at the th_host (its log counters). */
static void open_db(th_host *h, const char *db)
{
    char cfg[600];
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"}}", db);
    char *err = NULL;
    cr_assert_eq(th_open(h, cfg, 0, &err), 0, "%s", err ? err : "");
}

static char *export_of(th_host *h, const char *session)
{
    char params[128];
    snprintf(params, sizeof params, "{\"session\":\"%s\"}", session);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(h, "clarity.exportState", params, &j), 0);
    json_object_del(json_object_get(j, "value"), "lastPersistAt");
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    return s;
}

/* state.db in tmp, open in h, with one turn of session "s" over prompt. */
static char *seeded(th_host *h, const char *prompt)
{
    char *db = runproc_join(tmp, "state.db");
    open_db(h, db);
    cr_assert_eq(th_before(h, "s", NULL, prompt, strlen(prompt), NULL), 0);
    cr_assert_eq(th_end(h, "s", "ok", NULL, NULL), 0);
    return db;
}

/* Opens db in h and asserts that session "s" is refused (what: the
 * assertion's message); h stays open for the caller to read its log. */
static void refused(th_host *h, const char *db, const char *what)
{
    open_db(h, db);
    json_t *j = NULL;
    cr_assert_neq(th_rpc(h, "clarity.getScores", "{\"session\":\"s\"}", &j), 0, "%s", what);
    json_decref(j);
}

/* Defect 2: importState stored currentTurn 2^63-1 and lastMentionTurn
 * -2^63; the next getScores overflowed (UBSan) and the next agent_end
 * wrapped the turn.  Each is refused, naming the field, state unchanged. */
Test(reliability, import_refuses_numbers_out_of_range)
{
    th_host h;
    char *db = seeded(&h, "ClaraCore");
    char *before = export_of(&h, "s");
    const char *bad[][2] = {
        {"{\"session\":\"s\",\"state\":{\"currentTurn\":9223372036854775807,\"items\":[]}}", "currentTurn"},
        {"{\"session\":\"s\",\"state\":{\"currentTurn\":-1,\"items\":[]}}", "currentTurn"},
        {"{\"session\":\"s\",\"state\":{\"currentTurn\":3,\"items\":[{\"id\":\"x\",\"lastMentionTurn\":-9223372036854775808}]}}", "lastMentionTurn"},
        {"{\"session\":\"s\",\"state\":{\"currentTurn\":3,\"items\":[{\"id\":\"x\",\"mentionCount\":1e300}]}}", "mentionCount"},
        {"{\"session\":\"s\",\"state\":{\"currentTurn\":3,\"items\":[{\"id\":\"x\",\"lastReferenceTurn\":-2}]}}", "lastReferenceTurn"},
        {"{\"session\":\"s\",\"state\":{\"currentTurn\":3,\"items\":[{\"id\":\"x\",\"mentionHistory\":[1,-5]}]}}", "mentionHistory"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *j = NULL;
        cr_assert_neq(th_rpc(&h, "clarity.importState", bad[i][0], &j), 0, "accepted %s", bad[i][0]);
        const char *m = json_string_value(json_object_get(j, "message"));
        cr_assert(m && strstr(m, bad[i][1]), "the message does not name %s: %s", bad[i][1], m ? m : "(none)");
        json_decref(j);
        char *after = export_of(&h, "s");
        cr_assert_str_eq(before, after, "a refused import changed the state");
        free(after);
    }
    /* the largest accepted turn: scores compute, the turn saturates */
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.importState",
                        "{\"session\":\"s\",\"state\":{\"currentTurn\":2147483647,\"items\":[{\"id\":\"x\","
                        "\"lastMentionTurn\":0,\"mentionCount\":9007199254740991}]}}", &j), 0);
    json_decref(j);
    j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.getScores", "{\"session\":\"s\"}", &j), 0);
    json_decref(j);
    cr_assert_eq(th_end(&h, "s", "x", NULL, NULL), 0);
    j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.getScores", "{\"session\":\"s\"}", &j), 0);
    cr_assert_eq(json_integer_value(json_object_get(j, "currentTurn")), 2147483647);
    json_decref(j);
    free(before);
    th_close(&h);
    free(db);
}

/* The file's SQL runs in another process (sqlchild.h): the plugin's
 * SQLite and this binary's are two copies. */
static void sql(const char *db, const char *stmt) { th_sql_do(0, db, stmt); }

/* A corrupted or hand-edited row is refused, never trusted: an item with a
 * bad field is left out (the others load; the row stays as it was), a meta
 * with a bad turn refuses the session. */
Test(reliability, stored_rows_out_of_range_are_refused)
{
    th_host h;
    char *db = seeded(&h, "ClaraCore and FocusEngine");
    th_close(&h);
    sql(db, "UPDATE kv SET val = '{\"cat\":0,\"m\":1,\"lm\":-9223372036854775808}' "
            "WHERE ns = 'clarity:s:s' AND key = 'i:claracore'");
    open_db(&h, db);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.getScores", "{\"session\":\"s\"}", &j), 0);
    cr_assert_null(th_item(j, "claracore"), "a corrupted row was trusted");
    cr_assert_not_null(th_item(j, "focusengine"), "the good rows were not loaded");
    json_decref(j);
    cr_assert(h.error_lines > 0, "the refused row was not reported");
    cr_assert(strstr(h.last_error, "i:claracore") && strstr(h.last_error, "\"lm\""),
              "the report does not name the row and the field: %s", h.last_error);
    th_close(&h);
    cr_assert_eq(th_sql_int(db, "SELECT count(*) FROM kv WHERE key = 'i:claracore'"), 1,
                 "the refused row was deleted");

    sql(db, "UPDATE kv SET val = '{\"v\":1,\"currentTurn\":-1}' WHERE ns = 'clarity:s:s' AND key = 'meta'");
    refused(&h, db, "a bad meta was trusted");
    th_close(&h);
    free(db);
}

static char *meta_of(const char *db)
{
    th_rows *rs = th_sql_once(db, "SELECT CAST(val AS TEXT) FROM kv WHERE ns = 'clarity:s:s' AND key = 'meta'", NULL, 0);
    cr_assert_eq(rs->rc, SQLITE_OK, "%s", rs->err);
    cr_assert_eq(rs->n, 1, "the meta row is gone");
    char *m = strdup(th_cell(rs, 0, 0)->p);
    th_rows_free(rs);
    return m;
}

/* A state written by a newer format (meta "v" above this build's) is
 * refused, naming the format, and left as it is: not read as far as it
 * looks familiar (its items may lie where this build does not look), and
 * not written over by the next turn.  A "v" that is no version refuses too;
 * none at all is format 1. */
Test(reliability, a_newer_state_format_is_refused_and_left_alone)
{
    th_host h;
    char *db = seeded(&h, "ClaraCore and FocusEngine");
    th_close(&h);
    char *v1 = meta_of(db);
    cr_assert(strncmp(v1, "{\"v\":1,", 7) == 0, "the meta does not start with its version: %s", v1);

    char stmt[1200];
    snprintf(stmt, sizeof stmt, "UPDATE kv SET val = '{\"v\":2,%s' WHERE ns = 'clarity:s:s' AND key = 'meta'", v1 + 7);
    sql(db, stmt);
    char *v2 = meta_of(db);
    refused(&h, db, "a newer format was read");
    cr_assert(h.error_lines > 0 && strstr(h.last_error, "state format 2"),
              "the refusal does not name the format: %s", h.last_error);
    cr_assert_neq(th_before(&h, "s", NULL, "ClaraCore again", 15, NULL), 0, "a turn ran on a newer format");
    th_end(&h, "s", "ok", NULL, NULL);
    th_close(&h);
    char *after = meta_of(db);
    cr_assert_str_eq(after, v2, "the newer state was written over");
    free(after);

    const char *bad[] = {"\"x\"", "0", "1.5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(stmt, sizeof stmt, "UPDATE kv SET val = '{\"v\":%s,%s' WHERE ns = 'clarity:s:s' AND key = 'meta'",
                 bad[i], v1 + 7);
        sql(db, stmt);
        refused(&h, db, bad[i]);
        cr_assert(strstr(h.last_error, "\"v\""), "v %s: the refusal does not name \"v\": %s", bad[i], h.last_error);
        th_close(&h);
    }

    /* without "v" (format 1): read */
    snprintf(stmt, sizeof stmt, "UPDATE kv SET val = '{%s' WHERE ns = 'clarity:s:s' AND key = 'meta'", v1 + 7);
    sql(db, stmt);
    open_db(&h, db);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.getScores", "{\"session\":\"s\"}", &j), 0, "a meta without \"v\" was refused");
    cr_assert_not_null(th_item(j, "claracore"));
    json_decref(j);
    th_close(&h);
    free(v1), free(v2), free(db);
}

/* ---- the reference host and the commands ---------------------------------- */

static char *export_cli(const char *db)
{
    runproc_result r;
    const char *argv[] = {"export", "--session", "demo", "--state", db, NULL};
    clihelp_run(&r, NULL, NULL, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *s = strdup(r.out);
    runproc_free(&r);
    return s;
}

/* Defect 3: a turn whose before_agent_start was refused (maxPromptBytes)
 * still ran agent_end, so the turn advanced and every score decayed. */
Test(reliability, replay_leaves_a_refused_turn_without_trace)
{
    char *db = runproc_join(tmp, "state.db"), *cfg = runproc_join(tmp, "cfg.json");
    char *turns = runproc_join(tmp, "big.jsonl");
    cr_assert_eq(runproc_write_file(cfg, "{\"limits\":{\"maxPromptBytes\":1024}}"), 0);
    runproc_result r;
    const char *seed[] = {"replay", "examples/demo.jsonl", "--state", db, "--config", cfg, NULL};
    clihelp_run(&r, NULL, NULL, seed);
    cr_assert_eq(r.status, 0, "%s", r.err);
    runproc_free(&r);
    char *before = export_cli(db);
    char big[3000] = "{\"session\":\"demo\",\"turn\":99,\"role\":\"user\",\"text\":\"";
    size_t n = strlen(big);
    memset(big + n, 'a', 2000);
    strcpy(big + n + 2000, "\"}\n{\"session\":\"demo\",\"turn\":99,\"role\":\"assistant\",\"text\":\"claracore\"}\n");
    cr_assert_eq(runproc_write_file(turns, big), 0);
    const char *argv[] = {"replay", turns, "--state", db, "--config", cfg, NULL};
    clihelp_run(&r, NULL, NULL, argv);
    cr_assert_eq(r.status, 1, "the refused turn was not reported: exit %d", r.status);
    cr_assert(strstr(r.err, "maxPromptBytes") != NULL, "%s", r.err);
    runproc_free(&r);
    char *after = export_cli(db);
    cr_assert_str_eq(before, after, "a refused turn changed the state");
    free(before), free(after), free(db), free(cfg), free(turns);
}

Test(reliability, scores_limit_out_of_range_is_a_usage_error)
{
    char *db = runproc_join(tmp, "state.db");
    const char *bad[] = {"/clarity scores -5", "/clarity scores 99999999999999999999", "/clarity scores 0",
                         "/clarity scores 3x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        runproc_result r;
        const char *argv[] = {"cmd", "--state", db, bad[i], NULL};
        clihelp_run(&r, NULL, NULL, argv);
        cr_assert_eq(r.status, 2, "%s accepted", bad[i]);
        cr_assert(strstr(r.err, "usage: /clarity scores [N]") != NULL, "%s: %s", bad[i], r.err);
        runproc_free(&r);
    }
    runproc_result r;
    const char *ok[] = {"cmd", "--state", db, "/clarity scores 7", NULL};
    clihelp_run(&r, NULL, NULL, ok);
    cr_assert_eq(r.status, 0, "%s", r.err);
    runproc_free(&r);
    free(db);
}

/* A read-only database is refused before SQLite opens it: WAL mode left
 * -wal and -shm files with the file's 0444 mode behind. */
Test(reliability, read_only_database_is_refused_without_leftovers)
{
    char *db = runproc_join(tmp, "ro.db");
    runproc_result r;
    const char *argv[] = {"cmd", "--state", db, "/clarity", NULL};
    clihelp_run(&r, NULL, NULL, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    runproc_free(&r);
    char wal[600], shm[600];
    snprintf(wal, sizeof wal, "%s-wal", db);
    snprintf(shm, sizeof shm, "%s-shm", db);
    unlink(wal), unlink(shm);
    cr_assert_eq(chmod(db, 0444), 0);
    clihelp_run(&r, NULL, NULL, argv);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "read-only") != NULL, "%s", r.err);
    runproc_free(&r);
    struct stat st;
    cr_assert_neq(stat(wal, &st), 0, "a -wal file was left behind");
    cr_assert_neq(stat(shm, &st), 0, "a -shm file was left behind");
    free(db);
}

/* A host retrying a turn (after a crash, or a commit it could not see
 * acknowledged) passes the same turn key: the turn counts once, also after
 * a restart. */
Test(reliability, a_turn_key_counts_a_turn_once)
{
    char *db = runproc_join(tmp, "state.db");
    const char *extra[] = {"--state", db, NULL};
    child c;
    serve_start(&c, extra);
    const char *end = "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"hook.agent_end\",\"params\":{\"session\":\"s\","
                      "\"turnKey\":\"run-1\",\"messages\":[{\"role\":\"assistant\",\"text\":\"x\","
                      "\"tool_name\":\"Read\",\"tool_args\":{\"file_path\":\"src/a.py\"}}]}}";
    char line[512];
    snprintf(line, sizeof line, end, 1);
    json_t *r = serve_call(&c, line);
    cr_assert(json_is_false(json_object_get(json_object_get(r, "result"), "duplicate")));
    json_decref(r);
    snprintf(line, sizeof line, end, 2);
    r = serve_call(&c, line);
    cr_assert(json_is_true(json_object_get(json_object_get(r, "result"), "duplicate")), "a retried turn was counted again");
    json_decref(r);
    serve_kill9(&c);
    serve_start(&c, extra);
    snprintf(line, sizeof line, end, 3);
    r = serve_call(&c, line);
    cr_assert(json_is_true(json_object_get(json_object_get(r, "result"), "duplicate")), "the key did not survive a restart");
    json_decref(r);
    r = serve_call(&c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"clarity.getScores\",\"params\":{\"session\":\"s\"}}");
    json_t *res = json_object_get(r, "result");
    cr_assert_eq(json_integer_value(json_object_get(res, "currentTurn")), 1);
    json_decref(r);
    serve_kill9(&c);
    free(db);
}
