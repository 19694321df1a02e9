/* test_graphstatus.c: clarity.graphStatus, staleness of `clarity predict`,
 * the clarity_predict MCP tool on a fixture repository with a graph, and
 * the incremental import pass when files come and go. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/internal.h"
#include "clihelp.h"
#include "gitrepo.h"
#include "graphdb.h"

static char *tmp, *repo, *state;

/* a shell command in the repository (fixed git identity, no git config) */
#define sh(...) cr_assert_eq(gitrepo_sh(repo, __VA_ARGS__), 0, "failed: " __VA_ARGS__)

static void setup(void)
{
    tmp = runproc_mkdtemp("clarity-gstatus-test");
    cr_assert_not_null(tmp);
    repo = runproc_join(tmp, "repo");
    state = runproc_join(tmp, "state.db");
    char mk[4200];
    snprintf(mk, sizeof mk, "mkdir -p '%s/src/auth'", repo);
    cr_assert_eq(system(mk), 0);
    sh("git init -q . && printf 'class SessionStore:\\n    def login(self):\\n        pass\\n' > "
       "src/auth/session.py && printf 'def connect():\\n    pass\\n' > src/pool.py && git add -A "
       "&& GIT_AUTHOR_DATE='@1600000000 +0000' GIT_COMMITTER_DATE='@1600000000 +0000' git commit "
       "-q -m init");
}

static void teardown(void)
{
    if (tmp) runproc_rmtree(tmp);
    free(tmp), free(repo), free(state);
    tmp = repo = state = NULL;
}

TestSuite(graphstatus, .init = setup, .fini = teardown, .timeout = 120);

static json_t *rpc(const char *method, const char *params)
{
    runproc_result r;
    const char *argv[] = {"rpc", method, params, "--state", state, NULL};
    clihelp_run(&r, NULL, NULL, argv);
    cr_assert_eq(r.status, 0, "%s %s: %s", method, params, r.err);
    json_t *j = clihelp_json(r.out);
    runproc_free(&r);
    return j;
}

static void build(void)
{
    runproc_result r;
    const char *argv[] = {"graph", "build", repo, "--json", NULL};
    clihelp_run(&r, NULL, NULL, argv);
    cr_assert_eq(r.status, 0, "graph build: %s", r.err);
    runproc_free(&r);
}

Test(graphstatus, status_stale_and_predict_says_so)
{
    char params[4300];
    snprintf(params, sizeof params, "{\"repo\":\"%s\"}", repo);
    json_t *s = rpc("clarity.graphStatus", params);
    cr_assert(json_is_false(json_object_get(s, "available")));
    json_decref(s);
    s = rpc("clarity.graphStatus", "{}");
    cr_assert(json_is_false(json_object_get(s, "available")));
    json_decref(s);

    build();
    s = rpc("clarity.graphStatus", params);
    cr_assert(json_is_true(json_object_get(s, "available")), "%s", json_dumps(s, 0));
    cr_assert_eq(json_integer_value(json_object_get(s, "files")), 2);
    cr_assert_eq(json_integer_value(json_object_get(s, "symbols")), 3);
    cr_assert_eq(json_integer_value(json_object_get(s, "commits")), 1);
    cr_assert(json_is_false(json_object_get(s, "stale")));
    cr_assert_gt(json_integer_value(json_object_get(s, "builtAt")), 1600000000);
    cr_assert_not_null(strstr(json_string_value(json_object_get(s, "repo")), "/repo"));
    /* one commit ("init": its message names neither file, so nothing to
     * learn from): the learned fusion was tried and keeps the defaults */
    json_t *fu = json_object_get(s, "fusion");
    cr_assert(json_is_object(fu), "%s", json_dumps(s, 0));
    cr_assert(json_is_false(json_object_get(fu, "enabled")));
    cr_assert_eq(json_integer_value(json_object_get(fu, "commits")), 0);
    json_decref(s);

    /* a build of an up-to-date repository parses and reads nothing */
    runproc_result r;
    const char *bargv[] = {"graph", "build", repo, "--json", NULL};
    clihelp_run(&r, NULL, NULL, bargv);
    json_t *b = clihelp_json(r.out);
    cr_assert(json_is_false(json_object_get(b, "full")));
    cr_assert_eq(json_integer_value(json_object_get(b, "parsed")), 0);
    cr_assert_eq(json_integer_value(json_object_get(b, "commits")), 0);
    json_decref(b);
    runproc_free(&r);

    /* HEAD moves: stale; predict --no-refresh warns, predict refreshes */
    sh("printf 'def helper():\\n    pass\\n' > src/util.py && git add -A && "
       "GIT_AUTHOR_DATE='@1600100000 +0000' GIT_COMMITTER_DATE='@1600100000 +0000' git commit -q "
       "-m two");
    s = rpc("clarity.graphStatus", params);
    cr_assert(json_is_true(json_object_get(s, "stale")));
    json_decref(s);
    const char *p1[] = {"predict", repo, "login", "--no-refresh", "--json", NULL};
    clihelp_run(&r, NULL, NULL, p1);
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *pj = clihelp_json(r.out);
    cr_assert(json_is_true(json_object_get(pj, "stale")), "%s", r.out);
    cr_assert_null(json_object_get(pj, "refreshed"));
    cr_assert_not_null(strstr(r.err, "stale"), "%s", r.err);
    json_decref(pj);
    runproc_free(&r);
    const char *p2[] = {"predict", repo, "login", "--json", NULL};
    clihelp_run(&r, NULL, NULL, p2);
    cr_assert_eq(r.status, 0, "%s", r.err);
    pj = clihelp_json(r.out);
    cr_assert(json_is_false(json_object_get(pj, "stale")), "%s", r.out);
    json_t *rf = json_object_get(pj, "refreshed");
    cr_assert_eq(json_integer_value(json_object_get(rf, "parsed")), 1, "%s", r.out);
    cr_assert_eq(json_integer_value(json_object_get(rf, "commits")), 1, "%s", r.out);
    cr_assert_not_null(strstr(r.err, "refreshed"), "%s", r.err);
    json_decref(pj);
    runproc_free(&r);
    s = rpc("clarity.graphStatus", params);
    cr_assert(json_is_false(json_object_get(s, "stale")));
    cr_assert_eq(json_integer_value(json_object_get(s, "files")), 3);
    cr_assert_eq(json_integer_value(json_object_get(s, "commits")), 2);
    json_decref(s);
    /* a staged edit, HEAD unchanged: the index moved, so stale too (even
     * within the second of the build) */
    sh("printf 'def connect():\\n    return 1\\n' > src/pool.py && git add src/pool.py");
    s = rpc("clarity.graphStatus", params);
    cr_assert(json_is_true(json_object_get(s, "stale")), "%s", json_dumps(s, 0));
    json_decref(s);
}

#define INIT "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}}\n" \
             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"

static json_t *mcp_by_id(const char *out, json_int_t id)
{
    char *copy = strdup(out), *save = NULL;
    json_t *found = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save)) {
        json_t *m = clihelp_json(line);
        if (json_integer_value(json_object_get(m, "id")) == id) found = m;
        else json_decref(m);
    }
    free(copy);
    cr_assert_not_null(found, "no response %lld in %s", (long long)id, out);
    return found;
}

static int lists_predict(json_t *list)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(json_object_get(list, "result"), "tools"), i, t)
    if (strcmp(json_string_value(json_object_get(t, "name")), "clarity_predict") == 0) return 1;
    return 0;
}

static const char mcp_lines[] =
    INIT "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n"
         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_predict\","
         "\"arguments\":{\"prompt\":\"login fails in the session store\",\"limit\":1}}}\n"
         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_predict\","
         "\"arguments\":{}}}\n";

static void check_predict(json_t *m)
{
    json_t *res = json_object_get(m, "result");
    cr_assert(json_is_false(json_object_get(res, "isError")), "%s", json_dumps(m, 0));
    json_t *f0 = json_array_get(json_object_get(json_object_get(res, "structuredContent"), "files"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(f0, "path")), "src/auth/session.py",
                     "%s", json_dumps(m, 0));
}

Test(graphstatus, mcp_predict_with_workspace_or_session)
{
    runproc_result r;
    /* no graph yet: the tool is not listed */
    const char *nog[] = {"mcp", "--state", state, "--workspace", repo, NULL};
    clihelp_run(&r, mcp_lines, NULL, nog);
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *l = mcp_by_id(r.out, 1);
    cr_assert(!lists_predict(l));
    json_decref(l);
    runproc_free(&r);

    build();
    /* a session whose workspace (told by its hooks) is the repository */
    char *turns = runproc_join(tmp, "turns.jsonl");
    cr_assert_eq(runproc_write_file(turns,
        "{\"session\":\"demo\",\"turn\":1,\"role\":\"user\",\"text\":\"Fix the login of SessionStore in src/auth/session.py\"}\n"), 0);
    const char *rargv[] = {"replay", turns, "--json", "--state", state, "--workspace", repo, NULL};
    clihelp_run(&r, NULL, NULL, rargv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    runproc_free(&r);
    free(turns);

    /* --workspace: listed; a prompt predicts; without one and without a
     * known session it is a tool error */
    clihelp_run(&r, mcp_lines, NULL, nog);
    cr_assert_eq(r.status, 0, "%s", r.err);
    l = mcp_by_id(r.out, 1);
    cr_assert(lists_predict(l), "%s", r.out);
    json_decref(l);
    json_t *m = mcp_by_id(r.out, 2);
    check_predict(m);
    json_decref(m);
    m = mcp_by_id(r.out, 3);
    cr_assert(json_is_true(json_object_get(json_object_get(m, "result"), "isError")), "%s", r.out);
    json_decref(m);
    runproc_free(&r);

    /* the session's workspace: listed; no prompt predicts from the
     * session's items */
    const char *sess[] = {"mcp", "--state", state, "--session", "demo", NULL};
    clihelp_run(&r, mcp_lines, NULL, sess);
    cr_assert_eq(r.status, 0, "%s", r.err);
    l = mcp_by_id(r.out, 1);
    cr_assert(lists_predict(l), "%s", r.out);
    json_decref(l);
    m = mcp_by_id(r.out, 2);
    check_predict(m);
    json_decref(m);
    m = mcp_by_id(r.out, 3);
    check_predict(m);
    json_decref(m);
    runproc_free(&r);
}

/* ---- the import pass when files come and go ---------------------------- */

static long long target_of(const char *from, const char *spec)
{
    char sql[600];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM imports i JOIN files f ON f.id = i.file_id JOIN files t ON "
             "t.id = i.target WHERE f.path = '%s' AND i.spec = '%s'",
             from, spec);
    return graphdb_int(repo, sql);
}

static void rebuild(size_t *imports)
{
    graph_build_opts o = {GRAPH_PARSER_AUTO, 0, 0, NULL, 0};
    graph_build_stats st;
    char *err = NULL;
    cr_assert_eq(graph_build(repo, &o, &st, &err), 0, "%s", err ? err : "");
    if (imports) *imports = st.imports;
}

Test(graphstatus, added_and_removed_files_re_resolve_what_they_affect)
{
    sh("printf 'import pkg.extra\\nfrom lib import thing\\nfrom . import pool\\nimport src.pool\\n' > "
       "src/app.py && mkdir -p lib && printf 'x = 1\\n' > lib/other.py");
    size_t n = 0;
    rebuild(&n);
    cr_assert_eq(target_of("src/app.py", "pkg.extra"), 0);
    cr_assert_eq(target_of("src/app.py", "lib.thing"), 0);
    cr_assert_eq(target_of("src/app.py", "src.pool"), 1);
    /* a module and a package come: the imports naming them resolve, and
     * only the imports that can name them are looked at again */
    sh("mkdir -p pkg && printf 'y = 2\\n' > pkg/extra.py && printf 'thing = 3\\n' > lib/__init__.py");
    rebuild(&n);
    cr_assert_eq(target_of("src/app.py", "pkg.extra"), 1);
    cr_assert_eq(target_of("src/app.py", "lib.thing"), 1);
    cr_assert_eq(target_of("src/app.py", "src.pool"), 1);
    cr_assert_lt(n, 4, "re-resolved %zu imports", n);
    /* they go again */
    sh("rm pkg/extra.py lib/__init__.py");
    rebuild(&n);
    cr_assert_eq(target_of("src/app.py", "pkg.extra"), 0);
    cr_assert_eq(target_of("src/app.py", "lib.thing"), 0);
    cr_assert_eq(target_of("src/app.py", "src.pool"), 1);
    /* the same answers as a build from nothing */
    long long before = graphdb_int(repo, "SELECT count(*) FROM imports WHERE target IS NOT NULL");
    sh("rm -rf .clarity");
    rebuild(NULL);
    cr_assert_eq(graphdb_int(repo, "SELECT count(*) FROM imports WHERE target IS NOT NULL"), before);
}
