/* serve.c: newline-delimited JSON-RPC 2.0 on stdin/stdout.
 *
 * One request (or batch array) per line, answered in order, one response
 * line each; notifications (no "id") get none.  Methods:
 *   initialize                {}                        -> {name, version, abiVersion, methods}
 *   hook.before_agent_start   {session, workspace?, prompt?, messages?}
 *                                                       -> {"prependContext": "..."}
 *   hook.agent_end            {session, messages?, success? (default true)} -> {"ok": true}
 *   hook.before_compaction    {session, messageCount?, tokenCount?}  -> {"report": "..."}
 *   hook.session_end          {session, reason?}        -> {"ok": true}
 *   hook.assemble             {session, messages: [{id, role, text?, toolName?,
 *                             toolArgs?, toolCallId?, tokens?}], tokenBudget?,
 *                             currentTurnStart?, mayDrop?}
 *                                                       -> the result of
 *                             CLARITY_EV_ASSEMBLE (clarity.h), or {} declined
 *   command                   {session, line}           -> {"text": "..."}
 *   clarity.*                 forwarded to plugin->rpc  -> the plugin's JSON
 *   shutdown                  -> {"ok": true}, then exit
 * Errors: -32700 parse error, -32600 invalid request, -32601 method not
 * found (also a declined clarity.* method or a command line that is not a
 * /clarity command), -32602 invalid params, plugin errors as the plugin's
 * {code, message} (else -32000).  A hook the plugin declines answers with an
 * empty result ("" / ok).  EOF, "shutdown", SIGINT or SIGTERM: unload, exit 0.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/buf.h"
#include "cli.h"
#include "jsonconv.h"

#ifndef CLARITY_VERSION
#define CLARITY_VERSION "0.0.0"
#endif

enum {
    RPC_PARSE_ERROR = -32700,
    RPC_INVALID_REQUEST = -32600,
    RPC_METHOD_NOT_FOUND = -32601,
    RPC_INVALID_PARAMS = -32602,
    RPC_SERVER_ERROR = -32000
};

typedef struct server {
    cli *c;
    int shutdown;
} server;

static json_t *err_obj(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static json_t *err_obj(int code, const char *fmt, ...)
{
    buf b;
    buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    json_t *e = json_pack("{s:i,s:o}", "code", code, "message",
                          json_string_lossy(b.p ? b.p : "", b.len));
    buf_free(&b);
    return e;
}

/* ---- params ------------------------------------------------------------- */

/* *out = the string member, or dflt when absent/null.  -1 on a wrong type. */
static int get_str(json_t *params, const char *key, const char *dflt, const char **out,
                   size_t *len, json_t **err)
{
    json_t *v = params ? json_object_get(params, key) : NULL;
    if (!v || json_is_null(v)) {
        *out = dflt;
        if (len) *len = dflt ? strlen(dflt) : 0;
        return 0;
    }
    if (!json_is_string(v)) {
        *err = err_obj(RPC_INVALID_PARAMS, "Invalid params: \"%s\" must be a string", key);
        return -1;
    }
    *out = json_string_value(v);
    if (len) *len = json_string_length(v);
    return 0;
}

static int get_session(json_t *params, const char **sid, json_t **err)
{
    size_t n = 0;
    if (get_str(params, "session", NULL, sid, &n, err) != 0) return -1;
    if (!*sid || n == 0 || strlen(*sid) != n) {
        *err = err_obj(RPC_INVALID_PARAMS, "Invalid params: \"session\" must be a non-empty string");
        return -1;
    }
    return 0;
}

static int get_count(json_t *params, const char *key, int64_t *out, json_t **err)
{
    json_t *v = params ? json_object_get(params, key) : NULL;
    *out = -1;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        *err = err_obj(RPC_INVALID_PARAMS, "Invalid params: \"%s\" must be a non-negative integer",
                       key);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

static int get_messages(json_t *params, msgvec *mv, json_t **err)
{
    json_t *arr = params ? json_object_get(params, "messages") : NULL;
    if (!arr || json_is_null(arr)) return 0;
    size_t idx;
    const char *why;
    if (msgvec_push_array(mv, arr, &idx, &why) != 0) {
        if (!why) *err = err_obj(RPC_SERVER_ERROR, "out of memory");
        else if (!json_is_array(arr))
            *err = err_obj(RPC_INVALID_PARAMS, "Invalid params: \"messages\" %s", why);
        else *err = err_obj(RPC_INVALID_PARAMS, "Invalid params: messages[%zu].%s", idx, why);
        return -1;
    }
    return 0;
}

/* ---- methods ------------------------------------------------------------ */

/* Runs an event; on success *text receives the block (may be ""). */
static json_t *run_event(server *s, uint32_t id, const void *payload, json_t **text)
{
    clarity_result res;
    int rc = loader_event(&s->c->L, id, payload, &res);
    json_t *err = NULL;
    if (rc < 0 && rc != CLARITY_DECLINED) err = rpc_error_object(&s->c->L, rc, &res);
    else if (text) *text = json_string_lossy(rc == CLARITY_OK ? res.data : "", rc == CLARITY_OK && res.data ? res.len : 0);
    loader_release(&s->c->L, &res);
    return err;
}

static json_t *m_before_agent_start(server *s, json_t *params, json_t **err)
{
    const char *sid, *ws, *prompt;
    size_t plen;
    if (get_session(params, &sid, err) || get_str(params, "workspace", NULL, &ws, NULL, err) ||
        get_str(params, "prompt", "", &prompt, &plen, err))
        return NULL;
    if (ws && ws[0] != '/') {
        *err = err_obj(RPC_INVALID_PARAMS, "Invalid params: \"workspace\" must be an absolute path");
        return NULL;
    }
    msgvec mv;
    msgvec_init(&mv);
    json_t *result = NULL;
    if (get_messages(params, &mv, err) == 0) {
        clarity_before_agent_start p;
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        p.session_id = sid;
        p.workspace_dir = ws;
        p.prompt = prompt;
        p.prompt_len = plen;
        p.messages = mv.n ? mv.v : NULL;
        p.n_messages = mv.n;
        json_t *text = NULL;
        *err = run_event(s, CLARITY_EV_BEFORE_AGENT_START, &p, &text);
        if (!*err) result = json_pack("{s:o}", "prependContext", text ? text : json_string(""));
    }
    msgvec_free(&mv);
    return result;
}

static json_t *m_agent_end(server *s, json_t *params, json_t **err)
{
    const char *sid;
    if (get_session(params, &sid, err)) return NULL;
    json_t *succ = json_object_get(params, "success");
    if (succ && !json_is_boolean(succ) && !json_is_null(succ)) {
        *err = err_obj(RPC_INVALID_PARAMS, "Invalid params: \"success\" must be a boolean");
        return NULL;
    }
    const char *key = NULL;
    if (get_str(params, "turnKey", NULL, &key, NULL, err)) return NULL;
    msgvec mv;
    msgvec_init(&mv);
    json_t *result = NULL, *text = NULL;
    if (get_messages(params, &mv, err) == 0) {
        clarity_agent_end p;
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        p.session_id = sid;
        p.messages = mv.n ? mv.v : NULL;
        p.n_messages = mv.n;
        p.success = succ && json_is_false(succ) ? 0 : 1;
        p.turn_key = key;
        *err = run_event(s, CLARITY_EV_AGENT_END, &p, &text);
        int dup = json_is_string(text) && strcmp(json_string_value(text), "duplicate") == 0;
        if (!*err) result = json_pack("{s:b,s:b}", "ok", 1, "duplicate", dup);
    }
    json_decref(text);
    msgvec_free(&mv);
    return result;
}

static json_t *m_before_compaction(server *s, json_t *params, json_t **err)
{
    const char *sid;
    clarity_before_compaction p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    if (get_session(params, &sid, err) || get_count(params, "messageCount", &p.message_count, err) ||
        get_count(params, "tokenCount", &p.token_count, err))
        return NULL;
    p.session_id = sid;
    json_t *text = NULL;
    *err = run_event(s, CLARITY_EV_BEFORE_COMPACTION, &p, &text);
    if (*err) return NULL;
    return json_pack("{s:o}", "report", text ? text : json_string(""));
}

static json_t *m_session_end(server *s, json_t *params, json_t **err)
{
    const char *sid, *reason;
    if (get_session(params, &sid, err) || get_str(params, "reason", NULL, &reason, NULL, err))
        return NULL;
    clarity_session_end p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.session_id = sid;
    p.reason = reason;
    *err = run_event(s, CLARITY_EV_SESSION_END, &p, NULL);
    if (*err) return NULL;
    return json_pack("{s:b}", "ok", 1);
}

/* ---- hook.assemble --------------------------------------------------------- */

/* messages[i] of hook.assemble into m; toolArgs (an object) is printed into
 * *args (malloc()ed).  NULL, or why it was refused. */
static const char *ctx_message(json_t *o, clarity_ctx_message *m, char **args)
{
    json_t *id = json_object_get(o, "id"), *role = json_object_get(o, "role");
    json_t *text = json_object_get(o, "text"), *ta = json_object_get(o, "toolArgs");
    json_t *tok = json_object_get(o, "tokens");
    if (!json_is_object(o)) return "must be an object";
    if (!json_is_string(id) || !json_string_length(id) || strlen(json_string_value(id)) != json_string_length(id))
        return "id: must be a non-empty string";
    if (!json_is_string(role)) return "role: must be a string";
    if (text && !json_is_string(text)) return "text: must be a string";
    if (ta && !json_is_object(ta)) return "toolArgs: must be an object";
    if (tok && (!json_is_integer(tok) || json_integer_value(tok) < 0)) return "tokens: must be a non-negative integer";
    json_t *name = json_object_get(o, "toolName"), *call = json_object_get(o, "toolCallId");
    if (name && !json_is_string(name)) return "toolName: must be a string";
    if (call && !json_is_string(call)) return "toolCallId: must be a string";
    memset(m, 0, sizeof *m);
    m->struct_size = sizeof *m;
    m->id = json_string_value(id);
    m->role = json_string_value(role);
    m->text = text ? json_string_value(text) : NULL;
    m->text_len = text ? json_string_length(text) : 0;
    m->tool_name = json_string_value(name);
    m->tool_call_id = json_string_value(call);
    m->tokens = tok ? json_integer_value(tok) : -1;
    if (ta && !(m->tool_args_json = *args = json_compact(ta))) return "out of memory";
    return NULL;
}

static json_t *m_assemble(server *s, json_t *params, json_t **err)
{
    const char *sid;
    int64_t budget, cur;
    json_t *arr = json_object_get(params, "messages"), *drop = json_object_get(params, "mayDrop");
    if (get_session(params, &sid, err) || get_count(params, "tokenBudget", &budget, err) ||
        get_count(params, "currentTurnStart", &cur, err))
        return NULL;
    if (!json_is_array(arr) || (drop && !json_is_boolean(drop))) {
        *err = err_obj(RPC_INVALID_PARAMS, "Invalid params: \"messages\" must be an array%s",
                       drop && !json_is_boolean(drop) ? ", \"mayDrop\" a boolean" : "");
        return NULL;
    }
    size_t n = json_array_size(arr);
    if (cur > (int64_t)n) {
        *err = err_obj(RPC_INVALID_PARAMS, "Invalid params: \"currentTurnStart\" must be at most %zu", n);
        return NULL;
    }
    clarity_ctx_message *m = calloc(n ? n : 1, sizeof *m);
    char **args = calloc(n ? n : 1, sizeof *args);
    json_t *result = NULL, *text = NULL;
    const char *why = m && args ? NULL : "out of memory";
    for (size_t i = 0; !why && i < n; i++)
        if ((why = ctx_message(json_array_get(arr, i), &m[i], &args[i])))
            *err = err_obj(RPC_INVALID_PARAMS, "Invalid params: messages[%zu].%s", i, why);
    if (!why) {
        clarity_assemble p = {sizeof p, sid, m, n, budget < 0 ? 0 : budget, cur < 0 ? n : (size_t)cur,
                              json_is_true(drop) ? CLARITY_ASSEMBLE_MAY_DROP : 0};
        *err = run_event(s, CLARITY_EV_ASSEMBLE, &p, &text);
        if (!*err) {
            const char *t = json_string_value(text);
            result = t && *t ? json_loads(t, 0, NULL) : json_object();
        }
    } else if (!*err) {
        *err = err_obj(RPC_SERVER_ERROR, "%s", why);
    }
    for (size_t i = 0; args && i < n; i++) free(args[i]);
    free(args);
    free(m);
    json_decref(text);
    return result;
}

static json_t *m_command(server *s, json_t *params, json_t **err)
{
    const char *sid, *line;
    size_t n;
    if (get_session(params, &sid, err) || get_str(params, "line", NULL, &line, &n, err)) return NULL;
    if (!line || strlen(line) != n) {
        *err = err_obj(RPC_INVALID_PARAMS, "Invalid params: \"line\" must be a string");
        return NULL;
    }
    clarity_result res;
    int rc = loader_command(&s->c->L, sid, line, &res);
    json_t *result = NULL;
    if (rc == CLARITY_DECLINED)
        *err = err_obj(RPC_METHOD_NOT_FOUND, "not a /clarity command: %s", line);
    else if (rc < 0) *err = rpc_error_object(&s->c->L, rc, &res);
    else
        result = json_pack("{s:o}", "text",
                           json_string_lossy(res.data ? res.data : "", res.data ? res.len : 0));
    loader_release(&s->c->L, &res);
    return result;
}

static json_t *m_plugin_rpc(server *s, const char *method, json_t *params, json_t **err)
{
    char *p = params ? json_compact(params) : NULL;
    if (params && !p) {
        *err = err_obj(RPC_SERVER_ERROR, "out of memory");
        return NULL;
    }
    clarity_result res;
    int rc = loader_rpc(&s->c->L, method, p ? p : "{}", &res);
    free(p);
    json_t *result = NULL;
    if (rc == CLARITY_DECLINED) *err = err_obj(RPC_METHOD_NOT_FOUND, "Method not found: %s", method);
    else if (rc < 0) *err = rpc_error_object(&s->c->L, rc, &res);
    else {
        result = result_json(&res);
        if (!result && res.data) result = json_string_lossy(res.data, res.len);
        if (!result) result = json_null();
    }
    loader_release(&s->c->L, &res);
    return result;
}

static json_t *m_initialize(server *s)
{
    const clarity_plugin *p = &s->c->L.p;
    return json_pack("{s:s,s:s,s:i,s:s,s:[s,s,s,s,s,s,s,s]}", "name", p->name ? p->name : "clarity",
                     "version", p->version ? p->version : "", "abiVersion", CLARITY_ABI_VERSION,
                     "gateway", "clarity " CLARITY_VERSION, "methods", "initialize",
                     "hook.before_agent_start", "hook.agent_end", "hook.before_compaction",
                     "hook.session_end", "hook.assemble", "command", "clarity.*", "shutdown");
}

/* ---- dispatch ------------------------------------------------------------ */

static int valid_id(json_t *id)
{
    return json_is_string(id) || json_is_integer(id) || json_is_real(id) || json_is_null(id);
}

/* Handles one request object; returns the response, or NULL for a
 * notification. */
static json_t *handle(server *s, json_t *req)
{
    if (!json_is_object(req))
        return jsonrpc_response(NULL, NULL, err_obj(RPC_INVALID_REQUEST, "Invalid Request: expected an object"));
    json_t *id = json_object_get(req, "id");
    if (id && !valid_id(id))
        return jsonrpc_response(NULL, NULL,
                        err_obj(RPC_INVALID_REQUEST, "Invalid Request: \"id\" must be a string, number or null"));
    int notification = id == NULL;
    json_t *ver = json_object_get(req, "jsonrpc");
    json_t *jm = json_object_get(req, "method");
    json_t *params = json_object_get(req, "params");
    json_t *err = NULL, *result = NULL;
    const char *method = json_string_value(jm);
    int invalid = 0; /* an invalid request is answered even without an id */

    if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0)
        err = err_obj(RPC_INVALID_REQUEST, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
    else if (!method || strlen(method) != json_string_length(jm))
        err = err_obj(RPC_INVALID_REQUEST, "Invalid Request: \"method\" must be a string");
    else if (params && !json_is_object(params) && !json_is_array(params))
        err = err_obj(RPC_INVALID_REQUEST, "Invalid Request: \"params\" must be an object or array");
    else if (json_is_array(params) && json_array_size(params) == 0)
        params = NULL;
    invalid = err != NULL;

    if (!err) {
        hostsvc_log(s->c->hs, CLARITY_LOG_DEBUG, "serve: %s", method);
        int is_hook = strncmp(method, "hook.", 5) == 0 || strcmp(method, "command") == 0;
        if (json_is_array(params) && (is_hook || strncmp(method, "clarity.", 8) == 0))
            err = err_obj(RPC_INVALID_PARAMS, "Invalid params: expected an object (by-name params)");
        else if (strcmp(method, "hook.before_agent_start") == 0)
            result = m_before_agent_start(s, params, &err);
        else if (strcmp(method, "hook.agent_end") == 0) result = m_agent_end(s, params, &err);
        else if (strcmp(method, "hook.before_compaction") == 0)
            result = m_before_compaction(s, params, &err);
        else if (strcmp(method, "hook.session_end") == 0) result = m_session_end(s, params, &err);
        else if (strcmp(method, "hook.assemble") == 0) result = m_assemble(s, params, &err);
        else if (strcmp(method, "command") == 0) result = m_command(s, params, &err);
        else if (strncmp(method, "clarity.", 8) == 0) result = m_plugin_rpc(s, method, params, &err);
        else if (strcmp(method, "initialize") == 0) result = m_initialize(s);
        else if (strcmp(method, "shutdown") == 0) {
            s->shutdown = 1;
            result = json_pack("{s:b}", "ok", 1);
        } else err = err_obj(RPC_METHOD_NOT_FOUND, "Method not found: %s", method);
        if (!err && !result) err = err_obj(RPC_SERVER_ERROR, "out of memory");
    }
    if (err && hostsvc_log_enabled(s->c->hs, CLARITY_LOG_INFO)) {
        char *e = json_compact(err);
        hostsvc_log(s->c->hs, CLARITY_LOG_INFO, "serve: %s -> %s", method ? method : "?", e ? e : "?");
        free(e);
    }
    if (notification && !invalid) {
        json_decref(result);
        json_decref(err);
        return NULL;
    }
    return jsonrpc_response(id, result, err);
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return 0;
    return 1;
}

int cli_serve(cli *c)
{
    server s = {.c = c, .shutdown = 0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = EXIT_OK;
    hostsvc_log(c->hs, CLARITY_LOG_INFO, "serve: ready (plugin %s)", c->L.path);
    while (!s.shutdown && !cli_stop && (n = getline(&line, &cap, stdin)) >= 0) {
        if (blank(line, (size_t)n)) continue;
        json_error_t je;
        json_t *req = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &je);
        json_t *resp = NULL;
        if (!req) {
            resp = jsonrpc_response(NULL, NULL,
                            err_obj(RPC_PARSE_ERROR, "Parse error: %s (column %d)", je.text, je.column));
        } else if (json_is_array(req)) {
            if (json_array_size(req) == 0) {
                resp = jsonrpc_response(NULL, NULL, err_obj(RPC_INVALID_REQUEST, "Invalid Request: empty batch"));
            } else {
                resp = json_array();
                size_t i;
                json_t *r;
                json_array_foreach(req, i, r)
                {
                    json_t *one = handle(&s, r);
                    if (one && resp) json_array_append_new(resp, one);
                    else json_decref(one);
                }
                if (resp && json_array_size(resp) == 0) {
                    json_decref(resp);
                    resp = NULL;
                }
            }
        } else {
            resp = handle(&s, req);
        }
        json_decref(req);
        if (resp && jsonrpc_emit(resp) != 0) {
            json_decref(resp);
            hostsvc_log(c->hs, CLARITY_LOG_ERROR, "serve: cannot write to stdout: %s", strerror(errno));
            rc = EXIT_FAIL;
            break;
        }
        json_decref(resp);
    }
    free(line);
    hostsvc_log(c->hs, CLARITY_LOG_INFO, "serve: %s", s.shutdown ? "shutdown" : cli_stop ? "interrupted" : "end of input");
    return rc;
}
