/* test_cli.c: the reference gateway (build/clarity) end to end, against the
 * real plugin next to it.  Run from the repository root (make test):
 * CLARITY_BUILD names the build directory (default "build").  Every test
 * keeps its state in a fresh temporary directory. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitrepo.h"
#include "runproc.h"

#define DEMO "examples/demo.jsonl"
#define DEMO_CONFIG "examples/config.json"
#define DEMO_TURNS 12
#define TIMEOUT_MS 60000

static char *tmpdir;
static char *state_db; /* <tmpdir>/state.db */

static void setup(void)
{
    tmpdir = runproc_mkdtemp("clarity-cli-test");
    cr_assert_not_null(tmpdir, "mkdtemp failed");
    state_db = runproc_join(tmpdir, "state.db");
    cr_assert_not_null(state_db);
}

static void teardown(void)
{
    if (tmpdir) runproc_rmtree(tmpdir);
    free(tmpdir);
    free(state_db);
    tmpdir = state_db = NULL;
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 120);

static const char *build_dir(void)
{
    const char *b = getenv("CLARITY_BUILD");
    return b && *b ? b : "build";
}

static char *cli_path(void) { return runproc_join(build_dir(), "clarity"); }

/* Runs the CLI with the given arguments (NULL-terminated) and stdin. */
static void run_cli(runproc_result *r, const char *in, ...)
{
    const char *argv[64];
    char *exe = cli_path();
    cr_assert_not_null(exe);
    int n = 0;
    argv[n++] = exe;
    va_list ap;
    va_start(ap, in);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && n < 63) argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    int rc = runproc(argv, NULL, in, in ? strlen(in) : 0, TIMEOUT_MS, r);
    free(exe);
    cr_assert_eq(rc, 0, "could not run the CLI");
    cr_assert_not(r->timed_out, "the CLI timed out; stderr:\n%s", r->err);
}

static json_t *parse(const char *text, size_t len)
{
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je);
    cr_assert_not_null(j, "not JSON (%s): %.*s", je.text, (int)(len > 400 ? 400 : len), text);
    return j;
}

static json_t *find_item(json_t *items, const char *id)
{
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        const char *s = json_string_value(json_object_get(it, "id"));
        if (s && strcmp(s, id) == 0) return it;
    }
    return NULL;
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_number(v), "\"%s\" is not a number", key);
    return json_number_value(v);
}

/* Checks one getScores answer: shape, the score formula of scorer.h term by
 * term (optionally times a tier multiplier), and the demo's items. */
static void check_scores(json_t *s, const char *session, int expect_ticket)
{
    cr_assert(json_is_object(s));
    cr_assert_str_eq(json_string_value(json_object_get(s, "session")), session);
    cr_assert(json_is_integer(json_object_get(s, "currentTurn")));
    cr_assert_eq(json_integer_value(json_object_get(s, "currentTurn")), DEMO_TURNS,
                 "currentTurn is %lld after %d replayed turns",
                 (long long)json_integer_value(json_object_get(s, "currentTurn")), DEMO_TURNS);
    json_t *items = json_object_get(s, "items");
    cr_assert(json_is_array(items) && json_array_size(items) > 0, "no items");
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        const char *id = json_string_value(json_object_get(it, "id"));
        const char *cat = json_string_value(json_object_get(it, "category"));
        cr_assert(id && *id, "item %zu has no id", i);
        cr_assert(cat && (strcmp(cat, "project") == 0 || strcmp(cat, "tool") == 0 ||
                          strcmp(cat, "file") == 0 || strcmp(cat, "keyword") == 0 ||
                          strcmp(cat, "custom") == 0),
                  "item %s: bad category %s", id, cat ? cat : "(none)");
        double score = num(it, "score");
        json_t *bd = json_object_get(it, "breakdown");
        cr_assert(json_is_object(bd), "item %s has no breakdown", id);
        double f = num(bd, "frequency"), r = num(bd, "recency"), u = num(bd, "utility"),
               st = num(bd, "stalenessPenalty"), a = num(bd, "anchor");
        cr_assert(f >= 0 && r >= 0 && u >= 0 && st >= 0 && a >= 0, "item %s: negative term", id);
        cr_assert(score >= 0, "item %s: negative score", id);
        double sum = f + r + u - st + a;
        if (sum < 0) sum = 0;
        static const double mult[] = {1.0, 2.0, 1.5, 0.8};
        int ok = 0;
        for (size_t k = 0; k < sizeof mult / sizeof *mult; k++)
            if (fabs(score - sum * mult[k]) < 1e-6 * (1 + sum)) ok = 1;
        cr_assert(ok, "item %s: score %g is not max(0, %g + %g + %g - %g + %g) (x tier)", id, score,
                  f, r, u, st, a);
    }
    /* Ids as documented in extract.h, all mentioned in the demo's prompts. */
    const char *expected[] = {"claracore", "focus_engine", "file:src/auth/session.ts",
                              "file:memory/active-context.md", "file:soul.md"};
    for (size_t k = 0; k < sizeof expected / sizeof *expected; k++)
        cr_assert_not_null(find_item(items, expected[k]), "no item %s", expected[k]);
    json_t *cc = find_item(items, "claracore");
    cr_assert_str_eq(json_string_value(json_object_get(cc, "category")), "project");
    if (expect_ticket) {
        json_t *t = find_item(items, "ticket:auth-142");
        cr_assert_not_null(t, "no item ticket:auth-142 from extraction.customPatterns");
        cr_assert_str_eq(json_string_value(json_object_get(t, "category")), "custom");
    }
}

typedef struct buf_t {
    char *p;
    size_t n;
} buf_t;

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (*s == '\n') n++;
    return n;
}

/* ---- usage (no plugin needed) ---------------------------------------------- */

Test(cli, help_and_version)
{
    runproc_result r;
    run_cli(&r, NULL, "--help", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "usage: clarity") != NULL);
    cr_assert(strstr(r.out, "replay") && strstr(r.out, "serve") && strstr(r.out, "--host-kv"));
    runproc_free(&r);

    run_cli(&r, NULL, "help", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "usage: clarity") != NULL);
    runproc_free(&r);

    run_cli(&r, NULL, "--version", NULL);
    cr_assert_eq(r.status, 0);
    cr_assert(strncmp(r.out, "clarity ", 8) == 0, "version: %s", r.out);
    cr_assert(strstr(r.out, "ABI 1") != NULL);
    runproc_free(&r);

    run_cli(&r, NULL, "frobnicate", NULL);
    cr_assert_eq(r.status, 64);
    cr_assert(strstr(r.err, "unknown command 'frobnicate'") != NULL, "stderr: %s", r.err);
    runproc_free(&r);

    run_cli(&r, NULL, "rpc", "--json", "clarity.getScores", NULL);
    cr_assert_eq(r.status, 64);
    runproc_free(&r);
}

/* ---- replay ------------------------------------------------------------------ */

Test(cli, replay_demo_prints_blocks)
{
    runproc_result r;
    run_cli(&r, NULL, "replay", DEMO, "--state", state_db, NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr:\n%s", r.status, r.err);
    cr_assert(strstr(r.out, "--- session demo turn 1 ---\n") == r.out, "output starts: %.200s", r.out);
    cr_assert(strstr(r.out, "[CLARITY CONTEXT]") != NULL, "no context block:\n%s", r.out);
    for (int t = 1; t <= DEMO_TURNS; t++) {
        char hdr[64];
        snprintf(hdr, sizeof hdr, "--- session demo turn %d ---\n", t);
        cr_assert(strstr(r.out, hdr) != NULL, "missing %s", hdr);
    }
    cr_assert(strstr(r.out, "turn 13 ---") == NULL);
    /* By the last turn ClaraCore (named in 3 prompts) is in the block. */
    const char *last = strstr(r.out, "--- session demo turn 12 ---\n");
    cr_assert(strstr(last, "[CLARITY CONTEXT]") != NULL, "turn 12 has no block:\n%s", last);
    cr_assert(strcasestr(last, "claracore") != NULL, "turn 12 block lacks ClaraCore:\n%s", last);
    runproc_free(&r);
}

Test(cli, replay_json_one_line_per_session)
{
    runproc_result r;
    run_cli(&r, NULL, "replay", DEMO, "--json", "--config", DEMO_CONFIG, "--state", state_db, NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr:\n%s", r.status, r.err);
    cr_assert_eq(count_lines(r.out), 1, "expected one line, got:\n%s", r.out);
    cr_assert(strstr(r.out, "--- session") == NULL);
    json_t *s = parse(r.out, r.out_len);
    check_scores(s, "demo", 1);
    json_decref(s);
    runproc_free(&r);
}

Test(cli, replay_two_sessions_from_stdin_and_bad_lines)
{
    const char *in =
        "{\"session\":\"a\",\"turn\":1,\"role\":\"user\",\"text\":\"Start ClaraCore work\"}\n"
        "this is not json\n"
        "{\"session\":\"a\",\"turn\":1,\"role\":\"assistant\",\"text\":\"ok\",\"tool_name\":\"Read\","
        "\"tool_args\":{\"file_path\":\"src/auth/session.ts\"}}\n"
        "{\"session\":\"a\",\"turn\":1,\"role\":\"robot\",\"text\":\"?\"}\n"
        "{\"session\":\"a\",\"meta\":{\"n_turns\":1}}\n"
        "{\"session\":\"b\",\"turn\":1,\"role\":\"user\",\"text\":\"Hello focus-engine\"}\n";
    runproc_result r;
    run_cli(&r, in, "replay", "-", "--json", "--state", state_db, NULL);
    cr_assert_eq(r.status, 1, "bad lines must give exit 1 (got %d)", r.status);
    cr_assert(strstr(r.err, "<stdin>:2: ") != NULL, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "<stdin>:4: ") != NULL, "stderr: %s", r.err);
    cr_assert_eq(count_lines(r.out), 2, "one line per session:\n%s", r.out);
    char *nl = strchr(r.out, '\n');
    json_t *a = parse(r.out, (size_t)(nl - r.out));
    json_t *b = parse(nl + 1, strlen(nl + 1));
    cr_assert_str_eq(json_string_value(json_object_get(a, "session")), "a");
    cr_assert_str_eq(json_string_value(json_object_get(b, "session")), "b");
    cr_assert_eq(json_integer_value(json_object_get(a, "currentTurn")), 1);
    cr_assert_not_null(find_item(json_object_get(a, "items"), "claracore"));
    cr_assert_not_null(find_item(json_object_get(b, "items"), "focus_engine"));
    cr_assert_null(find_item(json_object_get(b, "items"), "claracore"), "sessions leak into each other");
    json_decref(a);
    json_decref(b);
    runproc_free(&r);
}

/* A session of one prompt and 6 steps, each a Read of src/modN.py whose
 * output is 706 tokens; written to <tmpdir>/steps.jsonl. */
static char *steps_corpus(void)
{
    char *path = runproc_join(tmpdir, "steps.jsonl");
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("{\"session\":\"r\",\"turn\":1,\"role\":\"user\",\"text\":\"Fix the login bug\"}\n", f);
    for (int t = 1; t <= 6; t++) {
        fprintf(f, "{\"session\":\"r\",\"turn\":%d,\"role\":\"assistant\",\"text\":\"Reading it.\","
                   "\"tool_name\":\"Read\",\"tool_args\":{\"file_path\":\"src/mod%d.py\"}}\n", t, t);
        fprintf(f, "{\"session\":\"r\",\"turn\":%d,\"role\":\"tool\",\"tool_name\":\"Read\",\"text\":\"contents of "
                   "src/mod%d.py:", t, t);
        for (int k = 0; k < 400; k++) fputs(" x = 1;", f);
        fputs("\"}\n", f);
    }
    fclose(f);
    return path;
}

/* The reference host through the ABI: replay --budget prints what the
 * model would see before each turn: old outputs stubbed (saying what was
 * elided and how to get it back), the prompt and the newest step verbatim,
 * and the same bytes on a second run. */
Test(cli, replay_budget_shows_what_the_model_sees)
{
    char *corpus = steps_corpus(), *db2 = runproc_join(tmpdir, "state2.db");
    runproc_result r, again;
    run_cli(&r, NULL, "replay", corpus, "--budget", "3000", "--state", state_db, NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr:\n%s", r.status, r.err);
    const char *last = strstr(r.out, "--- session r turn 6: 11 messages");
    cr_assert_not_null(last, "no assembly before turn 6:\n%s", r.out);
    cr_assert_not_null(strstr(last, "(budget 3000)"), "%.300s", last);
    const char *end = strstr(last, "--- session r turn 6 ---");
    cr_assert_not_null(end);
    char *view = strndup(last, (size_t)(end - last));
    cr_assert(strstr(view, "  #0 user") && strstr(view, "Fix the login bug"), "the prompt:\n%s", view);
    cr_assert(strstr(view, "#2 tool") && strstr(view, "[clarity: 706 tokens") &&
              strstr(view, "tokens of Read output about src/mod1.py elided"),
              "the oldest output is not stubbed:\n%s", view);
    cr_assert_not_null(strstr(view, "/clarity anchor file:src/mod1.py keeps it"), "%s", view);
    cr_assert_not_null(strstr(view, "#10 tool") ? strstr(strstr(view, "#10 tool"), "contents of src/mod5.py") : NULL,
                       "the newest output is not verbatim:\n%s", view);
    free(view);
    run_cli(&again, NULL, "replay", corpus, "--budget", "3000", "--state", db2, NULL);
    cr_assert_str_eq(r.out, again.out, "two runs differ");
    runproc_free(&r);
    runproc_free(&again);
    free(corpus);
    free(db2);
}

/* ---- cmd / rpc, persistence across processes -------------------------------------- */

Test(cli, anchor_persists_across_runs)
{
    runproc_result r;
    run_cli(&r, NULL, "replay", DEMO, "--state", state_db, "--quiet", NULL);
    cr_assert_eq(r.status, 0, "replay: %s", r.err);
    runproc_free(&r);

    run_cli(&r, NULL, "cmd", "--session", "demo", "--state", state_db, "/clarity anchor ClaraCore", NULL);
    cr_assert_eq(r.status, 0, "anchor: exit %d: %s", r.status, r.err);
    cr_assert(r.out_len > 0, "anchor printed nothing");
    runproc_free(&r);

    run_cli(&r, NULL, "rpc", "clarity.getScores", "{\"session\":\"demo\"}", "--state", state_db, NULL);
    cr_assert_eq(r.status, 0, "getScores: exit %d: %s", r.status, r.err);
    json_t *s = parse(r.out, r.out_len);
    check_scores(s, "demo", 0);
    json_t *cc = find_item(json_object_get(s, "items"), "claracore");
    cr_assert(json_is_true(json_object_get(cc, "anchored")), "claracore is not anchored");
    cr_assert_float_eq(num(json_object_get(cc, "breakdown"), "anchor"), 100.0, 1e-9);
    json_t *other = find_item(json_object_get(s, "items"), "focus_engine");
    cr_assert(!json_is_true(json_object_get(other, "anchored")));
    json_decref(s);
    runproc_free(&r);

    run_cli(&r, NULL, "cmd", "--state", state_db, "--session", "demo", "/clarity scores", NULL);
    cr_assert_eq(r.status, 0, "scores: %s", r.err);
    cr_assert(strcasestr(r.out, "claracore") != NULL, "/clarity scores output:\n%s", r.out);
    runproc_free(&r);
}

Test(cli, cmd_not_clarity_is_declined)
{
    runproc_result r;
    run_cli(&r, NULL, "cmd", "--state", state_db, "/help", NULL);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "not a /clarity command") != NULL, "stderr: %s", r.err);
    cr_assert_eq(r.out_len, 0);
    runproc_free(&r);
}

Test(cli, rpc_malformed_params)
{
    runproc_result r;
    run_cli(&r, NULL, "rpc", "clarity.getScores", "{\"session\":", "--state", state_db, NULL);
    cr_assert_eq(r.status, 2, "exit %d", r.status);
    json_t *e = parse(r.out, r.out_len);
    cr_assert(json_is_integer(json_object_get(e, "code")), "no integer code: %s", r.out);
    cr_assert_lt(json_integer_value(json_object_get(e, "code")), 0);
    cr_assert(json_is_string(json_object_get(e, "message")));
    json_decref(e);
    runproc_free(&r);

    run_cli(&r, NULL, "rpc", "other.method", "{}", "--state", state_db, NULL);
    cr_assert_eq(r.status, 2);
    e = parse(r.out, r.out_len);
    cr_assert_eq(json_integer_value(json_object_get(e, "code")), -32601);
    json_decref(e);
    runproc_free(&r);
}

Test(cli, export_import_roundtrip)
{
    runproc_result r;
    run_cli(&r, NULL, "replay", DEMO, "--state", state_db, "--quiet", NULL);
    cr_assert_eq(r.status, 0, "replay: %s", r.err);
    runproc_free(&r);

    run_cli(&r, NULL, "export", "--session", "demo", "--state", state_db, NULL);
    cr_assert_eq(r.status, 0, "export: exit %d: %s", r.status, r.err);
    json_t *st = parse(r.out, r.out_len);
    cr_assert_str_eq(json_string_value(json_object_get(st, "key")), "clarity:relevance_state");
    json_t *value = json_object_get(st, "value");
    cr_assert_eq(json_integer_value(json_object_get(value, "currentTurn")), DEMO_TURNS);
    cr_assert(json_is_array(json_object_get(value, "items")));
    cr_assert(json_array_size(json_object_get(value, "items")) > 0);
    json_decref(st);
    char *file = runproc_join(tmpdir, "demo-state.json");
    cr_assert_eq(runproc_write_file(file, r.out), 0);
    runproc_free(&r);

    run_cli(&r, NULL, "import", "--session", "copy", file, "--state", state_db, NULL);
    cr_assert_eq(r.status, 0, "import: exit %d: %s %s", r.status, r.out, r.err);
    json_t *ok = parse(r.out, r.out_len);
    cr_assert(json_is_true(json_object_get(ok, "ok")), "import: %s", r.out);
    cr_assert_eq(json_integer_value(json_object_get(ok, "currentTurn")), DEMO_TURNS);
    json_decref(ok);
    runproc_free(&r);
    free(file);

    run_cli(&r, NULL, "rpc", "clarity.getScores", "{\"session\":\"copy\"}", "--state", state_db, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *s = parse(r.out, r.out_len);
    check_scores(s, "copy", 0);
    json_decref(s);
    runproc_free(&r);
}

Test(cli, host_kv_file)
{
    char *kv = runproc_join(tmpdir, "kv.json");
    runproc_result r;
    run_cli(&r, NULL, "replay", DEMO, "--host-kv", kv, "--state", state_db, "--quiet", NULL);
    cr_assert_eq(r.status, 0, "replay: %s", r.err);
    runproc_free(&r);
    struct stat sb;
    cr_assert_eq(stat(kv, &sb), 0, "no kv file written");
    cr_assert_neq(stat(state_db, &sb), 0, "the SQLite store was used despite --host-kv");

    run_cli(&r, NULL, "rpc", "clarity.getScores", "{\"session\":\"demo\"}", "--host-kv", kv, "--state",
            state_db, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *s = parse(r.out, r.out_len);
    check_scores(s, "demo", 0);
    json_decref(s);
    runproc_free(&r);

    FILE *f = fopen(kv, "r");
    cr_assert_not_null(f);
    /* read as the CLI reads it: a binary row that happens to be UTF-8 is a
     * string, NULs included (with other times' bytes it is base64) */
    json_t *j = json_loadf(f, JSON_ALLOW_NUL, NULL);
    fclose(f);
    cr_assert(json_is_object(j) && json_object_size(j) > 0, "kv file is not a non-empty object");
    json_decref(j);
    free(kv);
}

/* ---- serve -------------------------------------------------------------------- */

Test(cli, serve_jsonrpc_sequence)
{
    const char *in =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hook.before_agent_start\",\"params\":{\"session\":\"s1\","
        "\"prompt\":\"Working on ClaraCore: fix the expiry check in src/auth/session.ts\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"hook.agent_end\",\"params\":{\"session\":\"s1\","
        "\"messages\":[{\"role\":\"assistant\",\"text\":\"Reading src/auth/session.ts\",\"tool_name\":"
        "\"Read\",\"tool_args\":{\"file_path\":\"src/auth/session.ts\"}}],\"success\":true}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"hook.session_end\",\"params\":{\"session\":\"nobody\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"clarity.getScores\",\"params\":{\"session\":\"s1\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"no.such.method\",\"params\":{}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\n"
        "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"hook.agent_end\",\"params\":{\"messages\":[]}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"shutdown\"}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"clarity.getScores\",\"params\":{\"session\":\"s1\"}}\n";
    runproc_result r;
    run_cli(&r, in, "serve", "--state", state_db, NULL);
    cr_assert_eq(r.status, 0, "exit %d; stderr:\n%s", r.status, r.err);
    cr_assert_eq(count_lines(r.out), 7, "expected 7 responses (no reply to the notification, "
                                        "nothing after shutdown):\n%s", r.out);
    json_t *resp[7];
    const char *p = r.out;
    for (int i = 0; i < 7; i++) {
        const char *nl = strchr(p, '\n');
        resp[i] = parse(p, (size_t)(nl - p));
        cr_assert_str_eq(json_string_value(json_object_get(resp[i], "jsonrpc")), "2.0");
        p = nl + 1;
    }
    /* 1: the block */
    cr_assert_eq(json_integer_value(json_object_get(resp[0], "id")), 1);
    json_t *res = json_object_get(resp[0], "result");
    cr_assert(json_is_string(json_object_get(res, "prependContext")), "response 1: %s", r.out);
    /* 2: ok */
    cr_assert_eq(json_integer_value(json_object_get(resp[1], "id")), 2);
    cr_assert(json_is_true(json_object_get(json_object_get(resp[1], "result"), "ok")));
    /* 3: the scores after one turn */
    cr_assert_eq(json_integer_value(json_object_get(resp[2], "id")), 3);
    res = json_object_get(resp[2], "result");
    cr_assert_str_eq(json_string_value(json_object_get(res, "session")), "s1");
    cr_assert_eq(json_integer_value(json_object_get(res, "currentTurn")), 1);
    cr_assert_not_null(find_item(json_object_get(res, "items"), "claracore"));
    cr_assert_not_null(find_item(json_object_get(res, "items"), "file:src/auth/session.ts"));
    /* 4: method not found */
    cr_assert_eq(json_integer_value(json_object_get(resp[3], "id")), 4);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(resp[3], "error"), "code")), -32601);
    cr_assert_null(json_object_get(resp[3], "result"));
    /* 5: parse error, id null */
    cr_assert(json_is_null(json_object_get(resp[4], "id")));
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(resp[4], "error"), "code")), -32700);
    /* 6: invalid params (no session) */
    cr_assert_str_eq(json_string_value(json_object_get(resp[5], "id")), "p");
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(resp[5], "error"), "code")), -32602);
    /* 7: shutdown */
    cr_assert_eq(json_integer_value(json_object_get(resp[6], "id")), 6);
    cr_assert(json_is_true(json_object_get(json_object_get(resp[6], "result"), "ok")));
    for (int i = 0; i < 7; i++) json_decref(resp[i]);
    runproc_free(&r);
}

/* hook.assemble: the decisions as JSON, then /clarity context and
 * clarity.context report them; a bad message is refused naming it. */
Test(cli, serve_assemble_and_context)
{
    buf_t in = {0};
    FILE *f = open_memstream(&in.p, &in.n);
    fputs("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"hook.assemble\",\"params\":{\"session\":\"s\","
          "\"tokenBudget\":3000,\"messages\":[{\"id\":\"u\",\"role\":\"user\",\"text\":\"Fix the login bug\"}", f);
    for (int i = 0; i < 6; i++) {
        fprintf(f, ",{\"id\":\"a%d\",\"role\":\"assistant\",\"text\":\"Reading it.\",\"toolName\":\"Read\","
                   "\"toolArgs\":{\"file_path\":\"src/mod%d.py\"},\"toolCallId\":\"c%d\"}", i, i, i);
        fprintf(f, ",{\"id\":\"t%d\",\"role\":\"tool\",\"toolName\":\"Read\",\"toolCallId\":\"c%d\","
                   "\"tokens\":700,\"text\":\"contents of src/mod%d.py\"}", i, i, i);
    }
    fputs("]}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"command\",\"params\":{\"session\":\"s\","
          "\"line\":\"/clarity context\"}}\n"
          "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"clarity.context\",\"params\":{\"session\":\"s\"}}\n"
          "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"hook.assemble\",\"params\":{\"session\":\"s\","
          "\"messages\":[{\"id\":\"x\",\"role\":\"tool\",\"tokens\":-3}]}}\n", f);
    fclose(f);
    runproc_result r;
    run_cli(&r, in.p, "serve", "--state", state_db, NULL);
    free(in.p);
    cr_assert_eq(r.status, 0, "exit %d; stderr:\n%s", r.status, r.err);
    cr_assert_eq(count_lines(r.out), 4, "%s", r.out);
    json_t *resp[4];
    const char *p = r.out;
    for (int i = 0; i < 4; i++) {
        const char *nl = strchr(p, '\n');
        resp[i] = parse(p, (size_t)(nl - p));
        p = nl + 1;
    }
    json_t *res = json_object_get(resp[0], "result");
    /* the prompt 5, each call 3 + 7 (its arguments, 26 bytes), each output 700 (the host's count) */
    cr_assert_eq(json_integer_value(json_object_get(res, "tokensBefore")), 5 + 6 * (3 + 7) + 6 * 700, "%s", r.out);
    cr_assert(json_is_true(json_object_get(res, "met")) && json_is_true(json_object_get(res, "changed")));
    json_t *a0 = json_array_get(json_object_get(res, "actions"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(a0, "id")), "t0");
    cr_assert_str_eq(json_string_value(json_object_get(a0, "action")), "stub");
    cr_assert_str_eq(json_string_value(json_object_get(a0, "item")), "file:src/mod0.py");
    cr_assert(json_is_string(json_object_get(res, "block")));
    const char *text = json_string_value(json_object_get(json_object_get(resp[1], "result"), "text"));
    cr_assert(text && strstr(text, "(budget 3000)") && strstr(text, "file:src/mod0.py"), "%s", r.out);
    json_t *last = json_object_get(json_object_get(resp[2], "result"), "last");
    cr_assert(json_equal(json_object_get(last, "actions"), json_object_get(res, "actions")), "%s", r.out);
    json_t *err = json_object_get(resp[3], "error");
    cr_assert_eq(json_integer_value(json_object_get(err, "code")), -32602);
    cr_assert_not_null(strstr(json_string_value(json_object_get(err, "message")), "messages[0].tokens"));
    for (int i = 0; i < 4; i++) json_decref(resp[i]);
    runproc_free(&r);
}

Test(cli, serve_eof_exits_cleanly)
{
    runproc_result r;
    run_cli(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"command\",\"params\":{\"session\":\"x\","
                "\"line\":\"/clarity scores\"}}\n",
            "serve", "--state", state_db, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(count_lines(r.out), 1);
    json_t *j = parse(r.out, r.out_len);
    cr_assert(json_is_string(json_object_get(json_object_get(j, "result"), "text")), "%s", r.out);
    json_decref(j);
    runproc_free(&r);
}

/* prediction.loadWaitMs as each command gives it to the plugin (clarity.config). */
static json_t *load_wait_of(const char *cfg, const char *cmd)
{
    runproc_result r;
    const char *in = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"clarity.config\"}\n";
    if (strcmp(cmd, "serve") == 0) run_cli(&r, in, "serve", "--state", state_db, cfg ? "--config" : NULL, cfg, NULL);
    else run_cli(&r, NULL, "rpc", "clarity.config", "--state", state_db, cfg ? "--config" : NULL, cfg, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *j = parse(r.out, r.out_len), *res = strcmp(cmd, "serve") == 0 ? json_object_get(j, "result") : j;
    json_t *v = json_object_get(json_object_get(res, "prediction"), "loadWaitMs");
    cr_assert(json_is_integer(v), "%s", r.out);
    json_incref(v);
    json_decref(j);
    runproc_free(&r);
    return v;
}

/* A long-lived command (serve, mcp) does not have its prompts wait long
 * for a code graph; a process per call (rpc, hook, replay) waits for it;
 * the config decides over both. */
Test(cli, long_lived_commands_bound_the_wait_for_a_graph)
{
    json_t *v = load_wait_of(NULL, "serve");
    cr_assert_eq(json_integer_value(v), 1000);
    json_decref(v);
    v = load_wait_of(NULL, "rpc");
    cr_assert_eq(json_integer_value(v), -1);
    json_decref(v);
    char *cfg = runproc_join(tmpdir, "wait.json");
    cr_assert_eq(runproc_write_file(cfg, "{\"prediction\":{\"loadWaitMs\":5}}\n"), 0);
    v = load_wait_of(cfg, "serve");
    cr_assert_eq(json_integer_value(v), 5);
    json_decref(v);
    free(cfg);
}

/* ---- failures ------------------------------------------------------------------ */

Test(cli, bad_config_names_the_key)
{
    char *cfg = runproc_join(tmpdir, "bad.json");
    cr_assert_eq(runproc_write_file(cfg, "{\"scoring\":{\"halfLife\":-1}}\n"), 0);
    runproc_result r;
    run_cli(&r, NULL, "cmd", "--config", cfg, "--state", state_db, "/clarity scores", NULL);
    cr_assert_neq(r.status, 0);
    cr_assert_eq(r.status, 1, "exit %d", r.status);
    cr_assert(strstr(r.err, "scoring.halfLife") != NULL, "stderr: %s", r.err);
    cr_assert_eq(r.out_len, 0);
    runproc_free(&r);

    cr_assert_eq(runproc_write_file(cfg, "{\"scoring\": \n"), 0);
    run_cli(&r, NULL, "cmd", "--config", cfg, "--state", state_db, "/clarity scores", NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "bad.json:2:") != NULL, "stderr: %s", r.err);
    runproc_free(&r);
    free(cfg);
}

Test(cli, missing_plugin_fails_cleanly)
{
    runproc_result r;
    run_cli(&r, NULL, "cmd", "--plugin", "/nonexistent/dir/libclarity.so", "--state", state_db,
            "/clarity scores", NULL);
    cr_assert_eq(r.status, 1, "exit %d", r.status);
    cr_assert(strstr(r.err, "cannot load plugin /nonexistent/dir/libclarity.so") != NULL, "stderr: %s",
              r.err);
    cr_assert_eq(r.out_len, 0);
    runproc_free(&r);
}

Test(cli, minimal_host_example)
{
    char *exe = runproc_join(build_dir(), "minimal_host");
    char *so = runproc_join(build_dir(), "libclarity.so");
    const char *argv[] = {exe, so, NULL};
    runproc_result r;
    cr_assert_eq(runproc(argv, NULL, NULL, 0, TIMEOUT_MS, &r), 0);
    cr_assert_eq(r.status, 0, "exit %d; stderr:\n%s", r.status, r.err);
    cr_assert(strstr(r.out, "== before_agent_start") != NULL);
    cr_assert(strstr(r.out, "== /clarity scores") != NULL);
    cr_assert(strcasestr(strstr(r.out, "== /clarity scores"), "claracore") != NULL, "%s", r.out);
    runproc_free(&r);
    free(exe);
    free(so);
}

/* ---- one option parser for every subcommand ---------------------------------- */

/* Options may precede the subcommand, graph and predict included (the graph
 * commands had a parser of their own that only looked at argv[1]). */
Test(cli, options_before_any_subcommand)
{
    char *repo = gitrepo_new("clarity-cli-graph");
    cr_assert_not_null(repo);
    cr_assert_eq(gitrepo_write(repo, "src/auth/session.py", "class SessionStore:\n    def login(self):\n        pass\n"), 0);
    cr_assert_eq(gitrepo_commit(repo, 1700000000, "init"), 0);
    runproc_result r;
    run_cli(&r, NULL, "-q", "graph", "build", repo, NULL);
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    cr_assert(strstr(r.out, "graph of") != NULL, "%s", r.out);
    runproc_free(&r);
    run_cli(&r, NULL, "--json", "-k", "1", "predict", repo, "the session store login", NULL);
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    json_t *j = parse(r.out, r.out_len);
    cr_assert_eq(json_array_size(json_object_get(j, "files")), 1, "%s", r.out);
    json_decref(j);
    runproc_free(&r);
    run_cli(&r, NULL, "predict", repo, "login", "--k=2", "--json", NULL); /* --name=value */
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    runproc_free(&r);
    runproc_rmtree(repo);
    free(repo);
}

Test(cli, usage_errors_name_the_option_and_the_command)
{
    runproc_result r;
    run_cli(&r, NULL, "replay", "x.jsonl", "--html", "y.html", NULL);
    cr_assert_eq(r.status, 64);
    cr_assert(strstr(r.err, "--html is not an option of replay") != NULL, "%s", r.err);
    runproc_free(&r);
    run_cli(&r, NULL, "--regex", "predict", "r", "p", NULL);
    cr_assert_eq(r.status, 64);
    cr_assert(strstr(r.err, "--regex is not an option of predict") != NULL, "%s", r.err);
    runproc_free(&r);
    run_cli(&r, NULL, "cmd", "--frobnicate", "/clarity", NULL);
    cr_assert_eq(r.status, 64);
    cr_assert(strstr(r.err, "unknown option --frobnicate") != NULL, "%s", r.err);
    runproc_free(&r);
    run_cli(&r, NULL, "predict", "r", "p", "-k", "0", NULL);
    cr_assert_eq(r.status, 64);
    cr_assert(strstr(r.err, "--k needs a number in 1..1000") != NULL, "%s", r.err);
    runproc_free(&r);
    run_cli(&r, NULL, "replay", "--state", NULL);
    cr_assert_eq(r.status, 64);
    cr_assert(strstr(r.err, "needs an argument") != NULL, "%s", r.err);
    runproc_free(&r);
}

/* "--" ends the options: what follows is an argument even if it starts with
 * a dash (a slash command's own words). */
Test(cli, double_dash_ends_the_options)
{
    runproc_result r;
    run_cli(&r, NULL, "cmd", "--state", state_db, "--", "/clarity", "scores", "--frobnicate", NULL);
    cr_assert_neq(r.status, 64, "the words after -- were read as options: %s", r.err);
    runproc_free(&r);
    run_cli(&r, NULL, "--", "--help", NULL);
    cr_assert_eq(r.status, 64);
    cr_assert(strstr(r.err, "unknown command '--help'") != NULL, "%s", r.err);
    runproc_free(&r);
}

Test(cli, help_lists_every_command)
{
    runproc_result r;
    run_cli(&r, NULL, "help", NULL);
    cr_assert_eq(r.status, 0);
    const char *names[] = {"replay", "eval", "cmd", "rpc", "serve", "hook", "install", "mcp",
                           "export", "import", "graph build", "predict", "help"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char line[64];
        snprintf(line, sizeof line, "\n  %s ", names[i]);
        cr_assert(strstr(r.out, line) != NULL, "help lacks %s:\n%s", names[i], r.out);
    }
    cr_assert(strstr(r.out, "--max-commits N") != NULL && strstr(r.out, "--no-refresh") != NULL);
    runproc_free(&r);
}
