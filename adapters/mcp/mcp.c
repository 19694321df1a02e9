/* mcp.c: `clarity mcp`, a Model Context Protocol server on stdio.
 *
 * Transport: newline-delimited JSON-RPC 2.0 messages on stdin/stdout, one
 * per line; logs go to stderr only.  Protocol version 2025-11-25; initialize
 * also accepts 2025-06-18, 2025-03-26 and 2024-11-05 (answered with the
 * client's version when supported, else ours).  Methods: initialize, ping,
 * tools/list, tools/call; notifications (initialized, cancelled, ...) are
 * accepted silently.  Tools (mcp_tools.c) map to the plugin's clarity.*
 * methods; the session is the "session" argument, else --session, else
 * "default".
 * Errors: -32700 parse error, -32600 invalid request (also a batch: not in
 * MCP since 2025-06-18), -32601 unknown method, -32602 invalid params and
 * unknown tool.  A tool that fails (bad arguments, unknown session or item,
 * store error) answers a result with isError: true.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/buf.h"
#include "../../cli/cli.h"
#include "../../cli/jsonconv.h"
#include "mcp.h"

#ifndef CLARITY_VERSION
#define CLARITY_VERSION "0.0.0"
#endif

static const char *const versions[] = {MCP_PROTOCOL_VERSION, "2025-06-18", "2025-03-26",
                                       "2024-11-05", NULL};

static json_t *error_obj(int code, const char *msg)
{
    return json_pack("{s:i,s:o}", "code", code, "message", json_string_lossy(msg, strlen(msg)));
}

static json_t *m_initialize(mcp_server *s, json_t *params, json_t **err)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    if (!json_is_object(params) || !asked) {
        *err = error_obj(MCP_INVALID_PARAMS, "Invalid params: initialize needs \"protocolVersion\"");
        return NULL;
    }
    const char *version = MCP_PROTOCOL_VERSION;
    for (int i = 0; versions[i]; i++)
        if (strcmp(asked, versions[i]) == 0) version = versions[i];
    s->initialized = 1;
    const char *client = json_string_value(json_object_get(json_object_get(params, "clientInfo"), "name"));
    hostsvc_log(s->c->hs, CLARITY_LOG_INFO, "mcp: initialize from %s, protocol %s (asked %s)",
                client ? client : "?", version, asked);
    return json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}", "protocolVersion", version,
                     "capabilities", "tools", "listChanged", 0, "serverInfo", "name", "clarity",
                     "title", "Clarity relevance engine", "version", CLARITY_VERSION,
                     "instructions",
                     "Clarity scores what a coding session talks about and uses (files, "
                     "projects, tools, keywords). clarity_scores shows the ranking, "
                     "clarity_anchor keeps an item in context, clarity_prune drops what is "
                     "stale, clarity_stats summarizes. Pass \"session\" to pick a session.");
}

static json_t *m_tools_call(mcp_server *s, json_t *params, json_t **err)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    if (!json_is_object(params) || !name) {
        *err = error_obj(MCP_INVALID_PARAMS, "Invalid params: tools/call needs a tool \"name\"");
        return NULL;
    }
    if (args && !json_is_object(args) && !json_is_null(args)) {
        *err = error_obj(MCP_INVALID_PARAMS, "Invalid params: \"arguments\" must be an object");
        return NULL;
    }
    const mcp_tool *t = mcp_tool_find(s, name);
    if (!t) {
        buf b;
        buf_init(&b);
        buf_printf(&b, "Unknown tool: %s", name);
        *err = error_obj(MCP_INVALID_PARAMS, b.p ? b.p : "Unknown tool");
        buf_free(&b);
        return NULL;
    }
    return mcp_tool_call(s, t, json_is_object(args) ? args : NULL);
}

/* One message; returns the response, or NULL when none is due. */
static json_t *handle(mcp_server *s, json_t *msg)
{
    if (!json_is_object(msg))
        return jsonrpc_response(NULL, NULL,
                        error_obj(MCP_INVALID_REQUEST,
                                  json_is_array(msg) ? "Invalid Request: batches are not supported"
                                                     : "Invalid Request: expected an object"));
    json_t *id = json_object_get(msg, "id");
    json_t *jm = json_object_get(msg, "method");
    const char *method = json_string_value(jm);
    json_t *ver = json_object_get(msg, "jsonrpc");
    if (!jm && (json_object_get(msg, "result") || json_object_get(msg, "error")))
        return NULL; /* a response: we send no requests, nothing to match */
    int bad_id = id && !json_is_string(id) && !json_is_integer(id);
    if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0 || !method || bad_id) {
        const char *why = bad_id ? "Invalid Request: \"id\" must be a string or an integer"
                          : !method ? "Invalid Request: \"method\" must be a string"
                                    : "Invalid Request: \"jsonrpc\" must be \"2.0\"";
        return jsonrpc_response(bad_id ? NULL : id, NULL, error_obj(MCP_INVALID_REQUEST, why));
    }
    json_t *params = json_object_get(msg, "params");
    if (params && !json_is_object(params)) {
        if (!id) return NULL;
        return jsonrpc_response(id, NULL, error_obj(MCP_INVALID_PARAMS, "Invalid params: expected an object"));
    }
    hostsvc_log(s->c->hs, CLARITY_LOG_DEBUG, "mcp: %s", method);
    if (!id) return NULL; /* notifications/initialized, notifications/cancelled, ... */
    json_t *err = NULL, *result = NULL;
    if (strcmp(method, "initialize") == 0) result = m_initialize(s, params, &err);
    else if (strcmp(method, "ping") == 0) result = json_object();
    else if (strcmp(method, "tools/list") == 0) result = mcp_tools_list(s);
    else if (strcmp(method, "tools/call") == 0) result = m_tools_call(s, params, &err);
    else {
        buf b;
        buf_init(&b);
        buf_printf(&b, "Method not found: %s", method);
        err = error_obj(MCP_METHOD_NOT_FOUND, b.p ? b.p : "Method not found");
        buf_free(&b);
    }
    if (!err && !result) err = error_obj(MCP_INTERNAL_ERROR, "Internal error: out of memory");
    return jsonrpc_response(id, result ? result : (err ? NULL : json_object()), err);
}

int cli_mcp(cli *c)
{
    mcp_server s = {.c = c, .session = c->session ? c->session : "default", .graph = -1};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = EXIT_OK;
    hostsvc_log(c->hs, CLARITY_LOG_INFO, "mcp: ready (plugin %s, session %s)", c->L.path, s.session);
    while (!cli_stop && (n = getline(&line, &cap, stdin)) >= 0) {
        size_t len = (size_t)n;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if (len == 0) continue;
        json_error_t je;
        json_t *msg = json_loadb(line, len, 0, &je);
        json_t *resp;
        if (!msg) {
            buf b;
            buf_init(&b);
            buf_printf(&b, "Parse error: %s (column %d)", je.text, je.column);
            resp = jsonrpc_response(NULL, NULL, error_obj(MCP_PARSE_ERROR, b.p ? b.p : "Parse error"));
            buf_free(&b);
        } else {
            resp = handle(&s, msg);
        }
        json_decref(msg);
        if (resp && jsonrpc_emit(resp) != 0) {
            hostsvc_log(c->hs, CLARITY_LOG_ERROR, "mcp: cannot write to stdout: %s", strerror(errno));
            json_decref(resp);
            rc = EXIT_FAIL;
            break;
        }
        json_decref(resp);
    }
    free(line);
    hostsvc_log(c->hs, CLARITY_LOG_INFO, "mcp: %s", cli_stop ? "interrupted" : "end of input");
    return rc;
}
