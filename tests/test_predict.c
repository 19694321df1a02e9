/* test_predict.c: file predictions blended into the engine (engine/predict.c)
 * through the ABI, on a fixture repository made by the test (git init,
 * files, a commit, the clarity.graphBuild RPC): the prediction term in
 * clarity.getScores, the block's "Likely edit targets" lines, the config
 * knobs and the off switch, and that a hook never builds a graph. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gitrepo.h"
#include "runproc.h"
#include "testhost.h"

static char *repo;

static void sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[5000];
    snprintf(full, sizeof full,
             "cd '%s' && export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t "
             "GIT_COMMITTER_EMAIL=t@t GIT_CONFIG_NOSYSTEM=1 HOME='%s' && (%s) >/dev/null 2>&1",
             repo, repo, cmd);
    cr_assert_eq(system(full), 0, "failed: %s", cmd);
}

static void put(const char *rel, const char *text)
{
    char *p = runproc_join(repo, rel);
    cr_assert_not_null(p);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    char mk[4200];
    snprintf(mk, sizeof mk, "mkdir -p '%s'", p);
    cr_assert_eq(system(mk), 0);
    *slash = '/';
    cr_assert_eq(runproc_write_file(p, text), 0);
    free(p);
}

static void setup(void)
{
    repo = gitrepo_new("clarity-predict-test");
    cr_assert_not_null(repo);
    put("src/auth/session.py", "class SessionStore:\n    def login(self):\n        pass\n");
    put("src/db/pool.py", "def connect():\n    pass\n\ndef pool_size():\n    return 3\n");
    put("src/api.py", "from src.db.pool import connect\n\ndef handler():\n    connect()\n");
    sh("git add -A && git commit -q -m init");
}

static void teardown(void)
{
    if (repo) runproc_rmtree(repo);
    free(repo);
    repo = NULL;
}

TestSuite(predict, .init = setup, .fini = teardown);

/* In place: the host table points at the th_host (its log counters). */
static void open_host(th_host *h, const char *cfg)
{
    char *err = NULL;
    cr_assert_eq(th_open(h, cfg, 0, &err), 0, "%s", err ? err : "");
}

static void graph_build(th_host *h)
{
    char params[4200];
    snprintf(params, sizeof params, "{\"repo\":\"%s\"}", repo);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(h, "clarity.graphBuild", params, &j), 0);
    cr_assert(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
}

/* The graph built by another process: `clarity graph build`. */
static void cli_graph_build(void)
{
    const char *argv[] = {th_build_path("clarity"), "graph", "build", repo, NULL};
    runproc_result r;
    cr_assert_eq(runproc(argv, NULL, NULL, 0, 60000, &r), 0);
    cr_assert_eq(r.status, 0, "%s", r.err ? r.err : "");
    runproc_free(&r);
}

static char *before(th_host *h, const char *session, const char *prompt)
{
    char *block = NULL;
    cr_assert_eq(th_before(h, session, repo, prompt, strlen(prompt), &block), 0);
    return block ? block : strdup("");
}

static json_t *scores(th_host *h, const char *session)
{
    char params[256];
    snprintf(params, sizeof params, "{\"session\":\"%s\"}", session);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(h, "clarity.getScores", params, &j), 0);
    return j;
}

static double term(json_t *item, const char *k)
{
    return json_number_value(json_object_get(json_object_get(item, "breakdown"), k));
}

#define MEM "{\"storage\":{\"backend\":\"memory\"}"

static const char prompt[] = "login fails in the session store, called from src/api.py";

Test(predict, rpc_ranks_once_per_weight_set)
{
    th_host h;
    open_host(&h, MEM "}");
    graph_build(&h);
    char params[4400];
    snprintf(params, sizeof params,
             "{\"repo\":\"%s\",\"prompt\":\"login session\",\"k\":3,"
             "\"weightSets\":[{},{\"wContent\":0,\"wPath\":0,\"wSymbol\":0,\"wImport\":0,"
             "\"wCall\":0,\"graph\":0,\"cochange\":0,\"mention\":0,\"churn\":0}]}",
             repo);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.predict", params, &j), 0);
    json_t *runs = json_object_get(j, "runs"), *files = json_object_get(j, "files");
    cr_assert_eq(json_array_size(runs), 2);
    /* the first set is the defaults: the same ranking as "files" */
    json_t *r0 = json_array_get(runs, 0);
    cr_assert_eq(json_array_size(r0), json_array_size(files));
    cr_assert_str_eq(json_string_value(json_array_get(r0, 0)), "src/auth/session.py");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(files, 0), "path")),
                     "src/auth/session.py");
    /* every field off: nothing to rank */
    cr_assert_eq(json_array_size(json_array_get(runs, 1)), 0);
    json_decref(j);
    snprintf(params, sizeof params,
             "{\"repo\":\"%s\",\"prompt\":\"x\",\"weightSets\":[{\"nope\":1}]}", repo);
    j = NULL;
    cr_assert_neq(th_rpc(&h, "clarity.predict", params, &j), 0);
    json_decref(j); /* the error response, when there is one */
    th_close(&h);
}

Test(predict, tracked_files_get_the_prediction_term_and_targets_are_listed)
{
    th_host h;
    open_host(&h, MEM "}");
    graph_build(&h);
    char *block = before(&h, "s", prompt);
    /* src/api.py is named (tracked) and predicted: frequency 3 + recency 80
     * (the default weights) + prediction 30 */
    cr_assert_not_null(strstr(block, "file:src/api.py (113)"), "%s", block);
    /* the best untracked predictions, with their key symbols */
    cr_assert_not_null(strstr(block, "Likely edit targets:\n"
                                     "\xE2\x86\x92 src/auth/session.py: login (line 2), "
                                     "SessionStore (line 1)\n"),
                       "%s", block);
    cr_assert_not_null(strstr(block, "[/CLARITY CONTEXT]\n"));
    free(block);
    json_t *j = scores(&h, "s");
    json_t *it = th_item(j, "file:src/api.py");
    cr_assert_not_null(it);
    cr_assert_float_eq(term(it, "prediction"), 30.0, 1e-9);
    cr_assert_float_eq(term(it, "frequency"), 3.0, 1e-9);
    cr_assert_float_eq(term(it, "recency"), 80.0, 1e-9);
    cr_assert_float_eq(json_number_value(json_object_get(it, "score")), 113.0, 1e-9);
    /* predicted but untracked files are not items */
    cr_assert_null(th_item(j, "file:src/auth/session.py"));
    json_decref(j);
    /* /clarity scores has the column */
    char *text = NULL, *err = NULL;
    cr_assert_eq(th_cmd(&h, "s", "/clarity scores", &text, &err), 0);
    cr_assert_not_null(strstr(text, " pred "), "%s", text);
    free(text);
    /* the next prompt replaces the predictions: nothing matches, no term */
    block = before(&h, "s", "thanks, go on");
    cr_assert_null(strstr(block, "Likely edit targets"), "%s", block);
    free(block);
    j = scores(&h, "s");
    cr_assert_float_eq(term(th_item(j, "file:src/api.py"), "prediction"), 0.0, 1e-9);
    json_decref(j);
    th_close(&h);
}

Test(predict, a_tracked_file_is_not_a_target)
{
    th_host h;
    open_host(&h, MEM "}");
    graph_build(&h);
    const char *p = "login fails in the session store of src/auth/session.py";
    char *block = before(&h, "s", p);
    cr_assert_null(strstr(block, "\xE2\x86\x92 src/auth/session.py"), "%s", block);
    free(block);
    json_t *j = scores(&h, "s");
    cr_assert_float_eq(term(th_item(j, "file:src/auth/session.py"), "prediction"), 30.0, 1e-9);
    json_decref(j);
    th_close(&h);
}

Test(predict, weight_max_targets_and_min_score)
{
    th_host h;
    open_host(&h, MEM ",\"prediction\":{\"weight\":10,\"maxTargets\":1,\"minScore\":0}}");
    graph_build(&h);
    char *block = before(&h, "s", prompt);
    cr_assert_not_null(strstr(block, "file:src/api.py (93)"), "%s", block);
    cr_assert_not_null(strstr(block, "\xE2\x86\x92 src/auth/session.py"), "%s", block);
    cr_assert_null(strstr(block, "\xE2\x86\x92 src/db/pool.py"), "maxTargets 1: %s", block);
    free(block);
    th_close(&h);

    open_host(&h, MEM ",\"prediction\":{\"maxTargets\":0}}");
    block = before(&h, "s", prompt);
    cr_assert_null(strstr(block, "Likely edit targets"), "%s", block);
    cr_assert_not_null(strstr(block, "file:src/api.py (113)"), "%s", block);
    free(block);
    th_close(&h);
}

Test(predict, off_switch_gives_the_block_of_a_workspace_without_a_graph)
{
    /* reference: the same prompt before any graph exists */
    th_host h;
    open_host(&h, MEM "}");
    char *plain = before(&h, "s", prompt);
    th_close(&h);
    cr_assert_null(strstr(plain, "Likely"));
    open_host(&h, MEM "}");
    graph_build(&h);
    th_close(&h);
    open_host(&h, MEM ",\"prediction\":{\"enabled\":false}}");
    char *off = before(&h, "s", prompt);
    cr_assert_str_eq(off, plain);
    json_t *j = scores(&h, "s");
    cr_assert_float_eq(term(th_item(j, "file:src/api.py"), "prediction"), 0.0, 1e-9);
    json_decref(j);
    json_t *cfg = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.config", "{}", &cfg), 0);
    cr_assert(json_is_false(json_object_get(json_object_get(cfg, "prediction"), "enabled")));
    json_decref(cfg);
    th_close(&h);
    free(plain);
    free(off);
}

Test(predict, the_block_budget_holds)
{
    th_host h;
    open_host(&h, MEM ",\"context\":{\"maxChars\":90}}");
    graph_build(&h);
    char *block = before(&h, "s", prompt);
    cr_assert_leq(strlen(block), 90, "%zu: %s", strlen(block), block);
    cr_assert_not_null(strstr(block, "[/CLARITY CONTEXT]\n"), "%s", block);
    free(block);
    th_close(&h);
}

Test(predict, hooks_never_build_and_see_an_explicit_rebuild)
{
    th_host h;
    open_host(&h, MEM "}");
    char *block = before(&h, "s", "the billing invoice total is wrong");
    cr_assert_null(strstr(block, "Likely"), "no graph yet: %s", block);
    free(block);
    char *db = runproc_join(repo, ".clarity/graph.db");
    FILE *f = fopen(db, "r");
    cr_assert_null(f, "a hook built a graph");
    graph_build(&h);
    put("src/billing/invoice.py", "def invoice_total(items):\n    return sum(items)\n");
    sh("git add -A && git commit -q -m billing");
    /* stale graph, no autoRefresh: the hook does not see the new file */
    block = before(&h, "s", "the billing invoice total is wrong");
    cr_assert_null(strstr(block, "invoice.py"), "%s", block);
    free(block);
    /* an explicit build in another process is picked up by the next hook */
    cli_graph_build();
    block = before(&h, "s", "the billing invoice total is wrong");
    cr_assert_not_null(strstr(block, "\xE2\x86\x92 src/billing/invoice.py: invoice_total (line 1)"),
                       "%s", block);
    free(block);
    free(db);
    th_close(&h);
}

/* A workspace without a graph is looked at again at most once a second
 * (no system call per turn): a graph another process builds meanwhile is
 * used once that second has passed. */
Test(predict, a_graph_built_elsewhere_is_used_after_the_absent_interval)
{
    th_host h;
    open_host(&h, MEM "}");
    char *block = before(&h, "s", prompt);
    cr_assert_null(strstr(block, "Likely"), "no graph yet: %s", block);
    free(block);
    cli_graph_build();
    struct timespec ts = {1, 100 * 1000 * 1000}; /* past GRAPH_ABSENT_MS */
    nanosleep(&ts, NULL);
    block = before(&h, "s", prompt);
    cr_assert_not_null(strstr(block, "Likely edit targets"), "%s", block);
    free(block);
    th_close(&h);
}

/* C's "typedef struct x {...} x;" defines x twice on one line (the tag
 * and the type): a target's line names it once. */
Test(predict, a_symbol_defined_twice_on_a_line_is_named_once)
{
    put("src/ledger.c", "typedef struct ledger_entry {\n    int amount;\n} ledger_entry;\n");
    sh("git add -A && git commit -q -m ledger");
    th_host h;
    open_host(&h, MEM "}");
    graph_build(&h);
    char *block = before(&h, "s", "the ledger_entry amount is wrong in ledger.c");
    const char *at = strstr(block, "ledger_entry (line 1)");
    cr_assert_not_null(at, "%s", block);
    cr_assert_null(strstr(at + 1, "ledger_entry (line 1)"), "named twice: %s", block);
    free(block);
    th_close(&h);
}

Test(predict, auto_refresh_refreshes_a_stale_graph)
{
    th_host h;
    open_host(&h, MEM ",\"prediction\":{\"autoRefresh\":true}}");
    graph_build(&h);
    put("src/billing/invoice.py", "def invoice_total(items):\n    return sum(items)\n");
    sh("git add -A && git commit -q -m billing");
    char *block = before(&h, "s", "the billing invoice total is wrong");
    cr_assert_not_null(strstr(block, "src/billing/invoice.py"), "%s", block);
    free(block);
    th_close(&h);
}

/* A prompt once every 20 ms until the block holds `want`, at most 30 s
 * (a load behind the prompts takes milliseconds here): the block that has
 * it, or NULL.  Every block before it must hold `always` (when given). */
static char *poll_block(th_host *h, const char *prompt_text, const char *want, const char *always)
{
    for (int i = 0; i < 1500; i++) {
        char *block = before(h, "s", prompt_text);
        if (strstr(block, want)) return block;
        if (always) cr_assert_not_null(strstr(block, always), "prompt %d: %s", i, block);
        free(block);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* prediction.loadWaitMs 0: a prompt never waits for the graph, which the
 * loader thread loads behind it; later prompts get the same predictions
 * as a host that waits (-1, the default). */
Test(predict, a_graph_loads_behind_prompts_that_do_not_wait)
{
    cli_graph_build();
    th_host h, w;
    open_host(&h, MEM ",\"prediction\":{\"loadWaitMs\":0}}");
    open_host(&w, MEM "}");
    char *got = poll_block(&h, prompt, "Likely edit targets", NULL);
    cr_assert_not_null(got, "the graph never loaded behind the prompts");
    char *waited = before(&w, "s", prompt);
    cr_assert_str_eq(strstr(got, "Likely edit targets"), strstr(waited, "Likely edit targets"));
    free(got);
    free(waited);
    th_close(&h);
    th_close(&w);
}

/* With autoRefresh, a stale graph is refreshed behind the prompts: each
 * prompt meanwhile gets the loaded graph's predictions, until the
 * refreshed one (which has the new file) takes its place.  The staleness
 * check runs at most every 5 s, so the test waits that long. */
Test(predict, a_stale_graph_answers_while_it_refreshes, .timeout = 60)
{
    cli_graph_build();
    th_host h;
    open_host(&h, MEM ",\"prediction\":{\"autoRefresh\":true,\"loadWaitMs\":0}}");
    const char *billing = "the billing invoice total is wrong in the session store";
    char *block = poll_block(&h, billing, "Likely edit targets", NULL);
    cr_assert_not_null(block, "the graph never loaded behind the prompts");
    cr_assert_null(strstr(block, "invoice.py"), "%s", block);
    free(block);
    put("src/billing/invoice.py", "def invoice_total(items):\n    return sum(items)\n");
    sh("git add -A && git commit -q -m billing");
    struct timespec ts = {5, 100 * 1000 * 1000}; /* past GRAPH_RECHECK_MS */
    nanosleep(&ts, NULL);
    block = poll_block(&h, billing, "src/billing/invoice.py", "Likely edit targets");
    cr_assert_not_null(block, "the refreshed graph never answered");
    free(block);
    th_close(&h);
}

Test(predict, config_is_validated)
{
    th_host h;
    char *err = NULL;
    cr_assert_neq(th_open(&h, "{\"prediction\":{\"minScore\":2}}", 0, &err), 0);
    cr_assert_not_null(strstr(err, "prediction.minScore: must be between 0 and 1, got 2"), "%s",
                       err);
    free(err);
    err = NULL;
    cr_assert_neq(th_open(&h, "{\"prediction\":{\"weigth\":2}}", 0, &err), 0);
    cr_assert_not_null(strstr(err, "prediction.weigth: unknown key"), "%s", err);
    free(err);
    err = NULL;
    cr_assert_neq(th_open(&h, "{\"prediction\":{\"maxTargets\":-1}}", 0, &err), 0);
    cr_assert_not_null(strstr(err, "prediction.maxTargets"), "%s", err);
    free(err);
    err = NULL;
    cr_assert_neq(th_open(&h, "{\"prediction\":{\"loadWaitMs\":-2}}", 0, &err), 0);
    cr_assert_not_null(strstr(err, "prediction.loadWaitMs"), "%s", err);
    free(err);
}

/* Each plugin instance has its own graph cache: unloading one does not
 * drop the other's loaded index.  The cache file is then replaced by one
 * that cannot load, so only an index still held can predict. */
Test(predict, two_instances_keep_their_own_graph_cache)
{
    th_host a, b;
    open_host(&a, MEM "}");
    open_host(&b, MEM "}");
    graph_build(&a);
    char *ba = before(&a, "s", prompt), *bb = before(&b, "s", prompt);
    cr_assert_not_null(strstr(ba, "Likely edit targets"), "%s", ba);
    cr_assert_not_null(strstr(bb, "Likely edit targets"), "%s", bb);
    free(ba);
    free(bb);
    char *db = runproc_join(repo, ".clarity/graph.db"), *junk = runproc_join(repo, ".clarity/junk");
    cr_assert_eq(runproc_write_file(junk, "not a database"), 0);
    cr_assert_eq(rename(junk, db), 0);
    th_close(&a);
    bb = before(&b, "s2", prompt);
    cr_assert_not_null(strstr(bb, "Likely edit targets"),
                       "the other instance's unload dropped this one's graph: %s", bb);
    free(bb);
    free(db);
    free(junk);
    th_close(&b);
}
