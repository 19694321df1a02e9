/* mcp_tools.c: the clarity_* MCP tools over the plugin's clarity.* methods.
 *
 *   clarity_scores    {session?, limit? (20), includePruned?}  clarity.getScores
 *   clarity_anchor    {session?, item, reason?}                clarity.anchor
 *   clarity_unanchor  {session?, item}                         clarity.unanchor
 *   clarity_prune     {session?, dryRun?, strictMode?}         clarity.prune
 *   clarity_stats     {session?}                               clarity.stats
 *   clarity_progress  {session?}                               clarity.progress
 *   clarity_predict   {session?, limit?, prompt?}              clarity.predict
 *   clarity_zoom      {session?, path, level?}                 clarity.zoom
 *   clarity_impact    {session?, symbol, file?, depth?}        clarity.impact
 *   clarity_cochange  {session?, path, k?}                     clarity.cochange
 *
 * The graph tools (predict, zoom, impact, cochange) are listed only when there is a code graph to ask: the
 * server asks once, with clarity.graphStatus {session, repo?} ->
 * {"available": true, ...}, where repo is --workspace and otherwise the
 * plugin takes the session's workspace (the one its hooks were told).  A
 * call sends {session, repo?, limit?, prompt?}; without a prompt the
 * plugin predicts from the session's best-scoring items.
 *
 * A result carries the method's JSON as structuredContent and, serialized,
 * as the text content.  Bad arguments and plugin errors (unknown session or
 * item, store errors) are tool errors: isError with the message as text.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/buf.h"
#include "../../cli/jsonconv.h"
#include "mcp.h"

typedef struct arg {
    const char *name, *param; /* tool argument, clarity.* param */
    char type;                /* 's' string, 'i' integer >= 0, 'b' boolean */
    int required;
} arg;

struct mcp_tool {
    const char *name, *title, *description, *method;
    arg args[4];
    const char *schema; /* the inputSchema properties besides "session" */
    const char *required;
    int read_only, idempotent, needs_graph;
};

#define SESSION_PROP                                                                              \
    "\"session\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Session id (default: the "  \
    "server's --session, else \\\"default\\\")\"}"
#define ITEM_PROP                                                                                 \
    "\"item\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Item id or name as typed, e.g. " \
    "ClaraCore, file:src/auth/session.ts\"}"

static const mcp_tool tools[] = {
    {"clarity_scores", "Relevance scores",
     "The tracked items of a session ranked by relevance score, with the score's terms, "
     "mention and reference counts, anchors and tiers.",
     "clarity.getScores",
     {{"limit", "limit", 'i', 0}, {"includePruned", "includePruned", 'b', 0}},
     ",\"limit\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"At most this many items "
     "(default 20, 0 = all)\"},\"includePruned\":{\"type\":\"boolean\",\"description\":\"Also "
     "list pruned items\"}",
     NULL, 1, 1, 0},
    {"clarity_anchor", "Anchor an item",
     "Always keep an item in context: anchored items survive pruning and carry a bonus.",
     "clarity.anchor",
     {{"item", "itemId", 's', 1}, {"reason", "reason", 's', 0}},
     "," ITEM_PROP ",\"reason\":{\"type\":\"string\",\"description\":\"Why it matters\"}",
     "item", 0, 1, 0},
    {"clarity_unanchor", "Remove an anchor", "Remove the anchor of an item.", "clarity.unanchor",
     {{"item", "itemId", 's', 1}},
     "," ITEM_PROP, "item", 0, 1, 0},
    {"clarity_prune", "Prune stale items",
     "Run the pruner: keep what is anchored, used or recent, prune the rest (pruned items stay "
     "tracked and come back when mentioned). dryRun only reports.",
     "clarity.prune",
     {{"dryRun", "dryRun", 'b', 0}, {"strictMode", "strictMode", 'b', 0}},
     ",\"dryRun\":{\"type\":\"boolean\",\"description\":\"Report without applying\"},"
     "\"strictMode\":{\"type\":\"boolean\",\"description\":\"Use the strict rules\"}",
     NULL, 0, 0, 0},
    {"clarity_stats", "Session statistics",
     "Item counts by category, anchored and pruned items, averages, top items and the store.",
     "clarity.stats", {{NULL, NULL, 0, 0}}, "", NULL, 1, 1, 0},
    {"clarity_progress", "Test-run progress",
     "The test runs seen in this session (command, passed, failed, failing tests, whether files "
     "were edited since the previous run), the pass rate's moving average, the best run and the "
     "streak of runs without improvement.",
     "clarity.progress", {{NULL, NULL, 0, 0}}, "", NULL, 1, 1, 0},
    /* Hook point for the code graph: listed once clarity.graphStatus says so. */
    {"clarity_predict", "Predict the files needed next",
     "Files the code graph predicts the session will need next (likely edit targets, with key "
     "symbols and lines), from a task description or else from what the session used so far.",
     "clarity.predict",
     {{"limit", "limit", 'i', 0}, {"prompt", "prompt", 's', 0}},
     ",\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"description\":\"At "
     "most this many files (default 10)\"},\"prompt\":{\"type\":\"string\",\"minLength\":1,"
     "\"description\":\"The task, e.g. an issue text (default: the session's recent items)\"}",
     NULL, 1, 1, 1},
    {"clarity_zoom", "Zoom into code",
     "The public contract of a file or directory without its implementation: signatures and doc "
     "comments, classes reduced to their public members (level 0); every symbol (level 1); the "
     "file's content (level 2). Read shallow first, drill where needed.",
     "clarity.zoom",
     {{"path", "path", 's', 1}, {"level", "level", 'i', 0}},
     ",\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"A file or directory of the "
     "repository, relative to its root\"},\"level\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2,"
     "\"description\":\"0 public contract (default), 1 every symbol, 2 content\"}",
     "path", 1, 1, 1},
    {"clarity_impact", "Who calls this",
     "The transitive callers of a symbol (the blast radius of a change), to a depth; calls are "
     "resolved by name through imports, not types. A name defined in several files answers its "
     "candidates: pass file to pick one.",
     "clarity.impact",
     {{"symbol", "symbol", 's', 1}, {"file", "file", 's', 0}, {"depth", "depth", 'i', 0}},
     ",\"symbol\":{\"type\":\"string\",\"minLength\":1,\"description\":\"A function, method or class "
     "name\"},\"file\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The file that defines "
     "it, when several do\"},\"depth\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10,"
     "\"description\":\"Levels of callers (default 3)\"}",
     "symbol", 1, 1, 1},
    {"clarity_cochange", "Files that change together",
     "The files that change together with a file in the git history (implicit contracts), with "
     "the share of its commits and the commits shared.",
     "clarity.cochange",
     {{"path", "path", 's', 1}, {"k", "k", 'i', 0}},
     ",\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"A file of the repository\"},"
     "\"k\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"description\":\"How many (default "
     "20)\"}",
     "path", 1, 1, 1},
};
#define N_TOOLS (sizeof tools / sizeof tools[0])

static int graph_available(mcp_server *s)
{
    if (s->graph >= 0) return s->graph;
    json_t *q = json_pack("{s:s}", "session", s->session);
    if (q && s->c->workspace) json_object_set_new(q, "repo", json_string(s->c->workspace));
    char *qtext = q ? json_compact(q) : NULL;
    json_decref(q);
    if (!qtext) return 0; /* unknown: asked again next time */
    clarity_result res;
    int rc = loader_rpc(&s->c->L, "clarity.graphStatus", qtext, &res);
    free(qtext);
    json_t *j = rc == CLARITY_OK ? result_json(&res) : NULL;
    s->graph = json_is_true(json_object_get(j, "available")) ? 1 : 0;
    json_decref(j);
    loader_release(&s->c->L, &res);
    return s->graph;
}

static int listed(mcp_server *s, const mcp_tool *t)
{
    return !t->needs_graph || graph_available(s);
}

static json_t *tool_json(const mcp_tool *t)
{
    buf b;
    buf_init(&b);
    buf_printf(&b, "{\"type\":\"object\",\"properties\":{" SESSION_PROP "%s}", t->schema);
    if (t->required) buf_printf(&b, ",\"required\":[\"%s\"]", t->required);
    buf_puts(&b, ",\"additionalProperties\":false}");
    json_t *schema = buf_failed(&b) ? NULL : json_loads(b.p, 0, NULL);
    buf_free(&b);
    if (!schema) return NULL;
    return json_pack("{s:s,s:s,s:s,s:o,s:{s:b,s:b,s:b,s:b}}", "name", t->name, "title", t->title,
                     "description", t->description, "inputSchema", schema, "annotations",
                     "readOnlyHint", t->read_only, "destructiveHint", 0, "idempotentHint",
                     t->idempotent, "openWorldHint", 0);
}

json_t *mcp_tools_list(mcp_server *s)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < N_TOOLS; i++) {
        if (!listed(s, &tools[i])) continue;
        json_t *t = tool_json(&tools[i]);
        if (!t || json_array_append_new(arr, t) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr ? json_pack("{s:o}", "tools", arr) : NULL;
}

const mcp_tool *mcp_tool_find(mcp_server *s, const char *name)
{
    for (size_t i = 0; i < N_TOOLS; i++)
        if (strcmp(tools[i].name, name) == 0) return listed(s, &tools[i]) ? &tools[i] : NULL;
    return NULL;
}

static json_t *tool_error(const char *msg)
{
    return json_pack("{s:[{s:s,s:o}],s:b}", "content", "type", "text", "text",
                     json_string_lossy(msg, strlen(msg)), "isError", 1);
}

/* The clarity.* params for the arguments, or NULL with *why set. */
static json_t *params_for(mcp_server *s, const mcp_tool *t, json_t *args, buf *why)
{
    json_t *p = json_object();
    if (!p) return NULL;
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v)
    {
        int known = strcmp(key, "session") == 0;
        for (const arg *a = t->args; !known && a < t->args + 4 && a->name; a++)
            known = strcmp(a->name, key) == 0;
        if (!known) {
            buf_printf(why, "unknown argument \"%s\"", key);
            goto bad;
        }
    }
    json_t *sess = json_object_get(args, "session");
    if (sess && !json_is_null(sess) && (!json_is_string(sess) || json_string_length(sess) == 0)) {
        buf_puts(why, "\"session\" must be a non-empty string");
        goto bad;
    }
    json_object_set_new(p, "session", json_string(sess && json_is_string(sess)
                                                      ? json_string_value(sess) : s->session));
    for (const arg *a = t->args; a < t->args + 4 && a->name; a++) {
        v = json_object_get(args, a->name);
        if (!v || json_is_null(v)) {
            if (a->required) {
                buf_printf(why, "missing required argument \"%s\"", a->name);
                goto bad;
            }
            continue;
        }
        int ok = a->type == 's'   ? json_is_string(v) && json_string_length(v) > 0
                 : a->type == 'i' ? json_is_integer(v) && json_integer_value(v) >= 0
                                  : json_is_boolean(v);
        if (!ok) {
            buf_printf(why, "\"%s\" must be %s", a->name,
                       a->type == 's' ? "a non-empty string"
                       : a->type == 'i' ? "an integer >= 0" : "a boolean");
            goto bad;
        }
        json_object_set(p, a->param, v);
    }
    if (t->needs_graph && s->c->workspace && !json_object_get(p, "repo"))
        json_object_set_new(p, "repo", json_string(s->c->workspace));
    if (strcmp(t->name, "clarity_scores") == 0) { /* default 20; 0 = all (no limit) */
        json_t *lim = json_object_get(p, "limit");
        if (!lim) json_object_set_new(p, "limit", json_integer(20));
        else if (json_integer_value(lim) == 0) json_object_del(p, "limit");
    }
    return p;
bad:
    json_decref(p);
    return NULL;
}

json_t *mcp_tool_call(mcp_server *s, const mcp_tool *t, json_t *args)
{
    buf why;
    buf_init(&why);
    json_t *empty = args ? NULL : json_object();
    json_t *params = params_for(s, t, args ? args : empty, &why);
    json_decref(empty);
    if (!params) {
        json_t *r = why.len ? tool_error(why.p) : NULL;
        if (why.len) hostsvc_log(s->c->hs, CLARITY_LOG_INFO, "mcp: %s: %s", t->name, why.p);
        buf_free(&why);
        return r;
    }
    buf_free(&why);
    char *ptext = json_compact(params);
    json_decref(params);
    if (!ptext) return NULL;
    clarity_result res;
    int rc = loader_rpc(&s->c->L, t->method, ptext, &res);
    free(ptext);
    json_t *out = NULL;
    if (rc != CLARITY_OK) {
        json_t *e = rc == CLARITY_DECLINED ? NULL : rpc_error_object(&s->c->L, rc, &res);
        const char *msg = e ? json_string_value(json_object_get(e, "message")) : NULL;
        out = tool_error(msg ? msg : "this plugin does not provide the method");
        if (e && out) json_object_set_new(out, "structuredContent", json_pack("{s:O}", "error", e));
        json_decref(e);
    } else {
        json_t *data = result_json(&res);
        if (!json_is_object(data)) {
            json_decref(data);
            out = tool_error("the plugin answered with something that is not a JSON object");
        } else {
            char *text = json_compact(data);
            /* a structured refusal ({"error": "graph_unavailable", ...}) is a tool error */
            int refused = json_is_string(json_object_get(data, "error"));
            out = text ? json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content", "type", "text", "text",
                                   text, "structuredContent", data, "isError", refused)
                       : NULL;
            if (!text) json_decref(data); /* json_pack owns data from the call on */
            free(text);
        }
    }
    loader_release(&s->c->L, &res);
    return out;
}
