/* test_mcp.c: `clarity mcp`, the MCP stdio server, with raw JSON-RPC lines. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clihelp.h"

static char *tmp, *db;

static void setup(void)
{
    tmp = runproc_mkdtemp("clarity-mcp-test");
    cr_assert_not_null(tmp);
    db = runproc_join(tmp, "clarity.db");
    /* a session "demo" with a project and a file */
    char *turns = runproc_join(tmp, "turns.jsonl");
    cr_assert_eq(runproc_write_file(turns,
        "{\"session\":\"demo\",\"turn\":1,\"role\":\"user\",\"text\":\"Refactor ClaraCore in src/auth/session.ts\"}\n"
        "{\"session\":\"demo\",\"turn\":1,\"role\":\"assistant\",\"text\":\"Done with src/auth/session.ts\"}\n"), 0);
    runproc_result r;
    const char *argv[] = {"replay", turns, "--json", "--state", db, NULL};
    clihelp_run(&r, NULL, NULL, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    runproc_free(&r);
    free(turns);
}

static void teardown(void)
{
    if (tmp) runproc_rmtree(tmp);
    free(tmp), free(db);
    tmp = db = NULL;
}

TestSuite(mcp, .init = setup, .fini = teardown, .timeout = 60);

#define INIT "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}}\n" \
             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"

/* Runs the server on the lines; returns the responses as a JSON array and
 * checks that stdout holds only JSON lines. */
static json_t *session_run(const char *lines, const char *default_session)
{
    runproc_result r;
    const char *with[] = {"mcp", "--state", db, "--session", default_session, NULL};
    const char *without[] = {"mcp", "--state", db, NULL};
    clihelp_run(&r, lines, NULL, default_session ? with : without);
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    json_t *arr = json_array();
    char *save = NULL;
    for (char *line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        json_array_append_new(arr, clihelp_json(line));
    runproc_free(&r);
    return arr;
}

static json_t *by_id(json_t *arr, json_int_t id)
{
    size_t i;
    json_t *m;
    json_array_foreach(arr, i, m)
    {
        if (json_integer_value(json_object_get(m, "id")) == id && json_object_get(m, "id")) return m;
    }
    cr_assert_fail("no response with id %lld", (long long)id);
    return NULL;
}

static json_t *result(json_t *arr, json_int_t id)
{
    json_t *m = by_id(arr, id);
    cr_assert_str_eq(json_string_value(json_object_get(m, "jsonrpc")), "2.0");
    json_t *res = json_object_get(m, "result");
    cr_assert_not_null(res, "id %lld: no result: %s", (long long)id, json_dumps(m, 0));
    return res;
}

static long long error_code(json_t *m)
{
    json_t *e = json_object_get(m, "error");
    cr_assert(json_is_object(e), "no error in %s", json_dumps(m, 0));
    cr_assert(json_is_string(json_object_get(e, "message")));
    return json_integer_value(json_object_get(e, "code"));
}

Test(mcp, initialize_negotiates_the_version)
{
    const char *asked[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "1999-01-01"};
    const char *answer[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2025-11-25"};
    for (int i = 0; i < 5; i++) {
        char line[512];
        snprintf(line, sizeof line,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
                 "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n", asked[i]);
        json_t *arr = session_run(line, NULL);
        json_t *res = result(arr, 1);
        cr_assert_str_eq(json_string_value(json_object_get(res, "protocolVersion")), answer[i]);
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "serverInfo"), "name")), "clarity");
        cr_assert(json_is_object(json_object_get(json_object_get(res, "capabilities"), "tools")));
        json_decref(arr);
    }
    json_t *arr = session_run("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{}}\n", NULL);
    cr_assert_eq(error_code(by_id(arr, 2)), -32602);
    json_decref(arr);
}

Test(mcp, tools_list_has_schemas_and_no_predict_without_a_graph)
{
    json_t *arr = session_run(INIT "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}\n", NULL);
    cr_assert_eq(json_array_size(arr), 2, "a notification was answered");
    json_t *tools = json_object_get(result(arr, 1), "tools");
    const char *want[] = {"clarity_scores", "clarity_anchor", "clarity_unanchor", "clarity_prune", "clarity_stats",
                          "clarity_progress"};
    cr_assert_eq(json_array_size(tools), 6);
    for (int i = 0; i < 6; i++) {
        json_t *t = json_array_get(tools, (size_t)i);
        cr_assert_str_eq(json_string_value(json_object_get(t, "name")), want[i]);
        json_t *schema = json_object_get(t, "inputSchema");
        cr_assert_str_eq(json_string_value(json_object_get(schema, "type")), "object");
        cr_assert(json_is_object(json_object_get(json_object_get(schema, "properties"), "session")));
        cr_assert(json_string_length(json_object_get(t, "description")) > 10);
    }
    json_decref(arr);
}

Test(mcp, tools_call_each_tool)
{
    json_t *arr = session_run(INIT
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_scores\",\"arguments\":{}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_anchor\",\"arguments\":{\"item\":\"ClaraCore\",\"reason\":\"core\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_unanchor\",\"arguments\":{\"item\":\"claracore\",\"session\":\"demo\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_prune\",\"arguments\":{\"dryRun\":true}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_stats\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}\n", "demo");
    for (int id = 1; id <= 5; id++) {
        json_t *res = result(arr, id);
        cr_assert(json_is_false(json_object_get(res, "isError")), "id %d: %s", id, json_dumps(res, 0));
        json_t *sc = json_object_get(res, "structuredContent");
        cr_assert(json_is_object(sc), "id %d: no structuredContent", id);
        json_t *c0 = json_array_get(json_object_get(res, "content"), 0);
        cr_assert_str_eq(json_string_value(json_object_get(c0, "type")), "text");
        json_t *again = clihelp_json(json_string_value(json_object_get(c0, "text")));
        cr_assert(json_equal(again, sc), "id %d: text is not the structured content", id);
        json_decref(again);
    }
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(result(arr, 1), "structuredContent"), "session")), "demo");
    cr_assert(json_is_true(json_object_get(json_object_get(result(arr, 2), "structuredContent"), "anchored")));
    cr_assert(json_is_false(json_object_get(json_object_get(result(arr, 3), "structuredContent"), "anchored")));
    cr_assert(json_is_false(json_object_get(json_object_get(result(arr, 4), "structuredContent"), "applied")));
    cr_assert(json_integer_value(json_object_get(json_object_get(result(arr, 5), "structuredContent"), "totalItems")) >= 2);
    cr_assert_eq(json_object_size(result(arr, 6)), 0);
    json_decref(arr);
}

Test(mcp, tool_errors_and_protocol_errors)
{
    json_t *arr = session_run(INIT
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_anchor\",\"arguments\":{}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_stats\",\"arguments\":{\"session\":\"nobody\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_scores\",\"arguments\":{\"limit\":\"x\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_scores\",\"arguments\":{\"bogus\":1}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_unanchor\",\"arguments\":{\"item\":\"nothing-like-it\",\"session\":\"demo\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":{\"name\":\"clarity_predict\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":{}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"resources/list\"}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/list\",\"params\":[1]}\n"
        "{\"jsonrpc\":\"1.0\",\"id\":14,\"method\":\"ping\"}\n"
        "this is not json\n"
        "[{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"ping\"}]\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":16,\"result\":{}}\n", "demo");
    for (int id = 1; id <= 5; id++) {
        json_t *res = result(arr, id);
        cr_assert(json_is_true(json_object_get(res, "isError")), "id %d should be a tool error", id);
        json_t *c0 = json_array_get(json_object_get(res, "content"), 0);
        cr_assert(json_string_length(json_object_get(c0, "text")) > 0);
    }
    cr_assert_not_null(strstr(json_string_value(json_object_get(json_array_get(json_object_get(result(arr, 2), "content"), 0), "text")), "unknown session"));
    cr_assert_eq(error_code(by_id(arr, 10)), -32602, "clarity_predict must be unknown without a graph");
    cr_assert_eq(error_code(by_id(arr, 11)), -32602);
    cr_assert_eq(error_code(by_id(arr, 12)), -32601);
    cr_assert_eq(error_code(by_id(arr, 13)), -32602);
    cr_assert_eq(error_code(by_id(arr, 14)), -32600);
    /* parse error and batch: id null */
    size_t nulls = 0, i;
    json_t *m;
    json_array_foreach(arr, i, m)
    {
        if (json_is_null(json_object_get(m, "id"))) {
            long long c = error_code(m);
            cr_assert(c == -32700 || c == -32600, "%lld", c);
            nulls++;
        }
    }
    cr_assert_eq(nulls, 2);
    /* 1 initialize + 5 tool errors + 5 protocol errors + 2 null-id errors; no answer to
     * notifications or to a response */
    cr_assert_eq(json_array_size(arr), 13, "%s", json_dumps(arr, 0));
    json_decref(arr);
}
