/* test_progress.c: the progress signal through the ABI (engine/progress.c):
 * runs seen in tool outputs, edits between them, the moving average, best
 * and streak by hand, the block's lines, failing tests as items, the RPC
 * answer, persistence across a restart, a refused stored value, the off
 * switch. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../engine/progress.h"
#include "testhost.h"

static th_host host;
static char *db;

static void open_with(const char *extra)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"}%s}", db, extra ? extra : "");
    char *err = NULL;
    cr_assert_eq(th_open(&host, cfg, 0, &err), 0, "%s", err ? err : "");
}

static void setup(void)
{
    db = strdup(th_tmp_path(".db"));
    open_with(NULL);
}

static void teardown(void)
{
    th_close(&host);
    th_unlink_db(db);
    free(db);
}

TestSuite(progress, .init = setup, .fini = teardown);

/* One turn: optionally an edit, then a Bash call running the tests and its
 * output. */
static void turn(int edit, const char *output)
{
    clarity_message m[4];
    size_t n = 0;
    if (edit)
        m[n++] = (clarity_message){sizeof m[0], "assistant", "fixing", 6, "Edit",
                                   "{\"file_path\":\"/ws/src/parse.py\",\"old_string\":\"a\",\"new_string\":\"b\"}"};
    m[n++] = (clarity_message){sizeof m[0], "assistant", "", 0, "Bash", "{\"command\":\"pytest -q tests\"}"};
    m[n++] = (clarity_message){sizeof m[0], "tool", output, strlen(output), "Bash", NULL};
    cr_assert_eq(th_end_msgs(&host, "s", m, n), 0);
}

static json_t *progress_of(const char *sid)
{
    char params[256];
    snprintf(params, sizeof params, "{\"session\":\"%s\"}", sid);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&host, "clarity.progress", params, &j), 0);
    return j;
}

static char *block(void)
{
    char *b = NULL;
    cr_assert_eq(th_before(&host, "s", "/ws", "go on", 5, &b), 0);
    return b ? b : strdup("");
}

#define FAIL3 "FAILED tests/t.py::test_parse - x\nFAILED tests/t.py::test_roundtrip - y\n" \
              "FAILED tests/t.py::test_dump - z\n3 failed, 41 passed in 0.5s\n"
#define FAIL2 "FAILED tests/t.py::test_roundtrip - y\nFAILED tests/t.py::test_dump - z\n" \
              "2 failed, 42 passed in 0.5s\n"
#define PASS "44 passed in 0.4s\n"

Test(progress, runs_trend_and_the_rpc_answer)
{
    turn(0, FAIL3);     /* turn 0: 41/44 */
    turn(1, FAIL2);     /* turn 1: 42/44, after an edit: best */
    turn(0, FAIL2);     /* turn 2: no edit, same failures */
    turn(0, "nothing to see: 2 passed to the helper\n"); /* not a run */
    json_t *j = progress_of("s");
    cr_assert_str_eq(json_string_value(json_object_get(j, "session")), "s");
    json_t *runs = json_object_get(j, "runs");
    cr_assert_eq(json_array_size(runs), 3);
    json_t *r0 = json_array_get(runs, 0), *r1 = json_array_get(runs, 1), *r2 = json_array_get(runs, 2);
    cr_expect_eq(json_integer_value(json_object_get(r0, "turn")), 0);
    cr_expect_str_eq(json_string_value(json_object_get(r0, "command")), "pytest -q tests");
    cr_expect_eq(json_integer_value(json_object_get(r0, "passed")), 41);
    cr_expect_eq(json_integer_value(json_object_get(r0, "failed")), 3);
    cr_expect_eq(json_array_size(json_object_get(r0, "failing")), 3);
    cr_expect(json_is_null(json_object_get(r0, "editsSincePrevious")), "first run: no previous");
    cr_expect(json_is_true(json_object_get(r1, "editsSincePrevious")));
    cr_expect(json_is_false(json_object_get(r2, "editsSincePrevious")));
    /* EMA with alpha 0.3: 41/44, then 0.3 * 42/44 + 0.7 * previous, twice */
    double e = 41.0 / 44;
    e = 0.3 * 42.0 / 44 + 0.7 * e;
    e = 0.3 * 42.0 / 44 + 0.7 * e;
    cr_expect(fabs(json_number_value(json_object_get(j, "ema")) - e) < 1e-5, "ema %g, want %g",
              json_number_value(json_object_get(j, "ema")), e);
    cr_expect(fabs(json_number_value(json_object_get(j, "best")) - 42.0 / 44) < 1e-5);
    cr_expect_eq(json_integer_value(json_object_get(j, "bestTurn")), 1);
    cr_expect_eq(json_integer_value(json_object_get(j, "noImprovementStreak")), 1);
    cr_expect_eq(json_integer_value(json_object_get(j, "totalRuns")), 3);
    json_decref(j);
    /* the block nudges: a re-run with no edit, same failures */
    char *b = block();
    cr_expect_not_null(strstr(b, "\xE2\x9F\xB3 tests re-run with no edit since the last run: same 2 failures "
                                 "(test_roundtrip, test_dump)\n"), "%s", b);
    cr_expect_null(strstr(b, "no improvement"), "streak 1 < 3: %s", b);
    free(b);
    /* failing tests are items; the passing one fades */
    cr_assert_eq(th_rpc(&host, "clarity.getScores", "{\"session\":\"s\"}", &j), 0);
    json_t *it = th_item(j, "test:test_roundtrip");
    cr_assert_not_null(it);
    cr_expect_str_eq(json_string_value(json_object_get(it, "category")), "test");
    cr_expect_eq(json_integer_value(json_object_get(it, "mentionCount")), 3);
    cr_expect_eq(json_integer_value(json_object_get(th_item(j, "test:test_parse"), "mentionCount")), 1);
    json_decref(j);
}

/* A tool's output comes under the role each host gives it ("tool",
 * OpenClaw's "toolResult", "tool_result", "function"); the same text from
 * the assistant or the user is no run. */
Test(progress, a_run_under_each_role_a_tool_output_has)
{
    static const char *const roles[] = {"tool", "toolResult", "tool_result", "function", "assistant", "user", "t",
                                        "functions"};
    for (size_t i = 0; i < sizeof roles / sizeof *roles; i++) {
        char sid[32];
        snprintf(sid, sizeof sid, "role%zu", i);
        clarity_message m[2];
        m[0] = (clarity_message){sizeof m[0], "assistant", "", 0, "Bash", "{\"command\":\"pytest -q\"}"};
        m[1] = (clarity_message){sizeof m[0], roles[i], PASS, strlen(PASS), "Bash", NULL};
        cr_assert_eq(th_end_msgs(&host, sid, m, 2), 0);
        json_t *j = progress_of(sid);
        cr_expect_eq(json_array_size(json_object_get(j, "runs")), i < 4 ? 1u : 0u, "role %s", roles[i]);
        json_decref(j);
    }
}

Test(progress, no_improvement_streak_and_all_green)
{
    turn(0, FAIL2); /* best 42/44 at turn 0 */
    for (int i = 0; i < 3; i++) turn(1, FAIL3);
    char *b = block();
    cr_expect_not_null(strstr(b, "no improvement in 3 runs (best 42/44 at turn 0)\n"), "%s", b);
    cr_expect_null(strstr(b, "re-run with no edit"), "edits were made: %s", b);
    free(b);
    turn(1, PASS); /* turn 4 */
    turn(0, PASS);
    b = block();
    cr_expect_not_null(strstr(b, "\xE2\x9C\x94 all 44 tests pass since turn 4\n"), "%s", b);
    cr_expect_null(strstr(b, "no improvement"), "%s", b);
    free(b);
    json_t *j = progress_of("s");
    cr_expect_eq(json_integer_value(json_object_get(j, "allPassSinceTurn")), 4);
    cr_expect_eq(json_integer_value(json_object_get(j, "noImprovementStreak")), 1);
    json_decref(j);
    /* /clarity progress */
    char *text = NULL, *err = NULL;
    cr_assert_eq(th_cmd(&host, "s", "/clarity progress", &text, &err), 0);
    cr_expect_not_null(strstr(text, "Test runs: 6"), "%s", text);
    cr_expect_not_null(strstr(text, "All tests pass since turn 4"), "%s", text);
    cr_expect_not_null(strstr(text, "pytest -q tests"), "%s", text);
    free(text);
}

Test(progress, survives_a_restart)
{
    turn(0, FAIL3);
    turn(1, FAIL2);
    json_t *before = progress_of("s");
    th_close(&host);
    open_with(NULL);
    json_t *after = progress_of("s");
    cr_expect(json_equal(before, after), "progress changed across a restart");
    json_decref(before);
    json_decref(after);
    turn(0, FAIL2); /* the trend goes on from the stored state */
    json_t *j = progress_of("s");
    cr_expect_eq(json_integer_value(json_object_get(j, "totalRuns")), 3);
    cr_expect(json_is_false(json_object_get(json_array_get(json_object_get(j, "runs"), 2), "editsSincePrevious")));
    json_decref(j);
}

Test(progress, a_history_bound_and_the_off_switch)
{
    th_close(&host);
    open_with(",\"progress\":{\"historyRuns\":2}");
    for (int i = 0; i < 5; i++) turn(1, FAIL3);
    json_t *j = progress_of("s");
    cr_expect_eq(json_array_size(json_object_get(j, "runs")), 2);
    cr_expect_eq(json_integer_value(json_object_get(j, "totalRuns")), 5);
    json_decref(j);
    th_close(&host);
    th_unlink_db(db);
    open_with(",\"progress\":{\"enabled\":false}");
    turn(0, FAIL3);
    turn(0, FAIL3);
    j = progress_of("s");
    cr_expect_eq(json_array_size(json_object_get(j, "runs")), 0);
    json_decref(j);
    char *b = block();
    cr_expect_null(strstr(b, "re-run"), "%s", b);
    free(b);
}

Test(progress, unknown_session_and_no_runs)
{
    json_t *j = NULL;
    cr_assert_neq(th_rpc(&host, "clarity.progress", "{\"session\":\"nobody\"}", &j), 0);
    cr_expect_not_null(strstr(json_string_value(json_object_get(j, "message")), "unknown session"));
    json_decref(j);
    cr_assert_eq(th_before(&host, "quiet", NULL, "ClaraCore", 9, NULL), 0);
    cr_assert_eq(th_rpc(&host, "clarity.progress", "{\"session\":\"quiet\"}", &j), 0);
    cr_expect_eq(json_array_size(json_object_get(j, "runs")), 0);
    cr_expect_eq(json_integer_value(json_object_get(j, "totalRuns")), 0);
    json_decref(j);
}

/* A stored history is checked before it is trusted: out-of-range numbers
 * are refused with a message naming the field, and the session keeps no
 * progress (progress_load directly: the stores' rows are not writable
 * through the ABI). */
Test(progress_load, refuses_out_of_range_values)
{
    engine e;
    memset(&e, 0, sizeof e);
    cr_assert_eq(config_defaults(&e.cfg), 0);
    session s;
    memset(&s, 0, sizeof s);
    s.id = "s";
    static const struct {
        const char *json, *why;
    } bad[] = {
        {"{\"runs\":[],\"totalRuns\":-1}", "progress.totalRuns must be an integer"},
        {"{\"runs\":[],\"totalRuns\":2,\"ema\":1.5,\"best\":1,\"noImprovementStreak\":0,\"bestTurn\":0,"
         "\"bestPassed\":1,\"bestTotal\":1}", "progress.ema must be a number in 0..1"},
        {"{\"runs\":[],\"totalRuns\":2,\"ema\":1,\"best\":1,\"noImprovementStreak\":5,\"bestTurn\":0,"
         "\"bestPassed\":1,\"bestTotal\":1}", "progress.noImprovementStreak must be an integer in 0..2"},
        {"{\"runs\":[{\"turn\":9223372036854775807,\"passed\":1,\"failed\":0}],\"totalRuns\":1,\"ema\":1,"
         "\"best\":1,\"noImprovementStreak\":0,\"bestTurn\":0,\"bestPassed\":1,\"bestTotal\":1}",
         "progress.turn must be an integer in 0..2147483647"},
        {"{\"runs\":[{\"turn\":1,\"passed\":0,\"failed\":0}],\"totalRuns\":1,\"ema\":1,\"best\":1,"
         "\"noImprovementStreak\":0,\"bestTurn\":0,\"bestPassed\":1,\"bestTotal\":1}", "a run of no tests"},
        {"{\"runs\":[{\"turn\":1,\"passed\":1,\"failed\":0},{\"turn\":2,\"passed\":1,\"failed\":0}],"
         "\"totalRuns\":1,\"ema\":1,\"best\":1,\"noImprovementStreak\":0,\"bestTurn\":0,\"bestPassed\":1,"
         "\"bestTotal\":1}", "more than totalRuns"},
        {"[]", "progress must be an object with a runs array"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *j = json_loads(bad[i].json, 0, NULL);
        cr_assert_not_null(j, "case %zu", i);
        char *err = NULL;
        cr_expect_eq(progress_load(&e, &s, j, &err), CLARITY_ESTORE, "case %zu accepted", i);
        cr_expect(err && strstr(err, bad[i].why), "case %zu: %s", i, err ? err : "(none)");
        cr_expect_null(s.progress);
        free(err);
        json_decref(j);
    }
    json_t *ok = json_loads("{\"runs\":[{\"turn\":3,\"passed\":4,\"failed\":1,\"failing\":[\"t\"],"
                            "\"command\":\"make test\",\"editsSincePrevious\":true}],\"totalRuns\":7,"
                            "\"ema\":0.5,\"best\":0.9,\"noImprovementStreak\":2,\"bestTurn\":1,"
                            "\"bestPassed\":9,\"bestTotal\":10,\"allPassSinceTurn\":null}", 0, NULL);
    char *err = NULL;
    cr_assert_eq(progress_load(&e, &s, ok, &err), CLARITY_OK, "%s", err ? err : "");
    cr_assert_not_null(s.progress);
    cr_expect_eq(s.progress->total, 7);
    cr_expect_eq(s.progress->runs[0].n_failing, 1);
    cr_expect_eq(s.progress->green_since, -1);
    progress_free(s.progress);
    json_decref(ok);
    config_free(&e.cfg);
}

/* Which tool calls are edits, and which run a command line: every name of
 * the lists in any case, names one byte longer or shorter, and the
 * viewer-editors by their "command". */
Test(progress_names, edits_and_commands_by_tool_name)
{
    static const char *const editors[] = {"edit",        "MultiEdit",   "Write",     "NotebookEdit",   "apply_patch",
                                          "create_file", "edit_file",   "write_file", "replace_in_file", "PATCH"};
    for (size_t i = 0; i < sizeof editors / sizeof *editors; i++) {
        cr_assert(progress_is_edit(editors[i], NULL), "%s", editors[i]);
        char longer[64], shorter[64];
        snprintf(longer, sizeof longer, "%sx", editors[i]);
        snprintf(shorter, sizeof shorter, "%.*s", (int)strlen(editors[i]) - 1, editors[i]);
        cr_assert_not(progress_is_edit(longer, NULL), "%s", longer);
        cr_assert_not(progress_is_edit(shorter, NULL), "%s", shorter);
    }
    cr_assert(progress_is_edit("str_replace_editor", "{\"command\":\"str_replace\",\"path\":\"a.py\"}"));
    cr_assert_not(progress_is_edit("str_replace_based_edit_tool", "{\"command\":\"view\",\"path\":\"a.py\"}"));
    cr_assert_not(progress_is_edit("Read", NULL));
    cr_assert_not(progress_is_edit(NULL, NULL));
    static const char *const shells[] = {"bash",        "Shell",           "exec",             "terminal",
                                         "run_command", "execute_command", "run_terminal_cmd", "local_shell"};
    for (size_t i = 0; i < sizeof shells / sizeof *shells; i++) {
        char *c = progress_command(shells[i], "{\"command\":\"pytest -q\"}");
        cr_assert_not_null(c, "%s", shells[i]);
        cr_assert_str_eq(c, "pytest -q", "%s", shells[i]);
        free(c);
    }
    char *c = progress_command("bashx", "{\"command\":\"pytest -q\"}");
    cr_assert(c == NULL || strcmp(c, "pytest -q") != 0, "bashx is no shell: %s", c);
    free(c);
}
