/* rpc.c: the clarity.* gateway methods (JSON params in, JSON out). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>

#include "../engine/assemble.h"
#include "../engine/compact.h"
#include "../engine/progress.h"
#include "../engine/trim.h"
#include "gateway.h"

typedef struct rpc_call {
    engine *e;
    json_t *params;
    const char *session_id;
    buf *out;
    char **err;
} rpc_call;

static int fail(rpc_call *c, int rc, int code, const char *fmt, const char *arg)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, arg ? arg : "");
    buf_reset(c->out);
    buf_printf(c->out, "{\"code\":%d,\"message\":", code);
    buf_json_str(c->out, msg, strlen(msg));
    buf_putc(c->out, '}');
    free(*c->err);
    *c->err = strdup(msg);
    return rc;
}

static int fail_acquire(rpc_call *c, int rc)
{
    if (rc == CLARITY_ENOTFOUND)
        return fail(c, rc, RPC_UNKNOWN_SESSION, "unknown session: %s", c->session_id);
    if (rc == CLARITY_ENOMEM) return fail(c, rc, RPC_INTERNAL, "out of memory%s", NULL);
    return fail(c, rc, RPC_STORE, "could not load the session: %s", store_errmsg(c->e->st));
}

/* A string param; required ones produce a named error when missing. */
static int str_param(rpc_call *c, const char *key, int required, const char **out)
{
    json_t *v = json_object_get(c->params, key);
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (!required) return CLARITY_OK;
        return fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS, "missing required param \"%s\"", key);
    }
    if (!json_is_string(v) || json_string_length(v) == 0)
        return fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS, "param \"%s\" must be a non-empty string",
                    key);
    *out = json_string_value(v);
    return CLARITY_OK;
}

static int bool_param(rpc_call *c, const char *key, int *out)
{
    json_t *v = json_object_get(c->params, key);
    if (!v || json_is_null(v)) return CLARITY_OK;
    if (!json_is_boolean(v))
        return fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS, "param \"%s\" must be a boolean", key);
    *out = json_is_true(v);
    return CLARITY_OK;
}

static int with_session(rpc_call *c, int create, session **s)
{
    int rc = engine_acquire(c->e, c->session_id, create, s);
    return rc == CLARITY_OK ? rc : fail_acquire(c, rc);
}

static int m_get_scores(rpc_call *c)
{
    json_t *lim = json_object_get(c->params, "limit");
    if (lim && !(json_is_integer(lim) && json_integer_value(lim) >= 0))
        return fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS, "param \"limit\" must be an integer >= 0%s",
                    NULL);
    int include_pruned = 0;
    int rc = bool_param(c, "includePruned", &include_pruned);
    session *s;
    if (rc == CLARITY_OK) rc = with_session(c, 0, &s);
    if (rc != CLARITY_OK) return rc;
    view_scores_json(c->e, s, lim ? (size_t)json_integer_value(lim) : (size_t)-1, include_pruned,
                     c->out);
    engine_release(c->e, s);
    return CLARITY_OK;
}

static int m_get_state(rpc_call *c)
{
    session *s;
    int rc = with_session(c, 0, &s);
    if (rc != CLARITY_OK) return rc;
    view_state_json(c->e, s, c->out);
    engine_release(c->e, s);
    return CLARITY_OK;
}

static int m_stats(rpc_call *c)
{
    session *s;
    int rc = with_session(c, 0, &s);
    if (rc != CLARITY_OK) return rc;
    view_stats_json(c->e, s, c->out);
    engine_release(c->e, s);
    return CLARITY_OK;
}

/* clarity.context: the last assembly of the session (null before any). */
static int m_context(rpc_call *c)
{
    session *s;
    int rc = with_session(c, 0, &s);
    if (rc != CLARITY_OK) return rc;
    buf_puts(c->out, "{\"session\":");
    buf_json_str(c->out, s->id, strlen(s->id));
    buf_puts(c->out, ",\"last\":");
    assemble_report_json(s, c->out);
    buf_putc(c->out, '}');
    engine_release(c->e, s);
    return CLARITY_OK;
}

/* clarity.progress: the session's test runs and their trend. */
static int m_progress(rpc_call *c)
{
    session *s;
    int rc = with_session(c, 0, &s);
    if (rc != CLARITY_OK) return rc;
    rc = progress_json(s, 1, c->out);
    engine_release(c->e, s);
    return rc == CLARITY_OK ? rc : fail(c, rc, RPC_INTERNAL, "out of memory%s", NULL);
}

/* An optional integer param in [lo, hi]; *out keeps its default when absent. */
static int int_param(rpc_call *c, const char *key, long long lo, long long hi, long long *out)
{
    json_t *v = json_object_get(c->params, key);
    if (!v || json_is_null(v)) return CLARITY_OK;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char what[160];
        snprintf(what, sizeof what, "param \"%s\" must be an integer in %lld..%lld", key, lo, hi);
        return fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS, "%s", what);
    }
    *out = json_integer_value(v);
    return CLARITY_OK;
}

/* clarity.keepList: what a compaction's summary must keep. */
static int m_keep_list(rpc_call *c)
{
    long long limit = COMPACT_KEEP_DEFAULT;
    int rc = int_param(c, "limit", 0, COMPACT_KEEP_MAX, &limit);
    session *s;
    if (rc == CLARITY_OK) rc = with_session(c, 0, &s);
    if (rc != CLARITY_OK) return rc;
    rc = compact_keep_json(c->e, s, (size_t)limit, c->out);
    engine_release(c->e, s);
    return rc == CLARITY_OK ? rc : fail(c, rc, RPC_INTERNAL, "out of memory%s", NULL);
}

static int persist_or_fail(rpc_call *c, session *s);

/* clarity.compacted: the host's summary; the kept items it lost come back
 * in the next block. */
static int m_compacted(rpc_call *c)
{
    const char *summary;
    long long limit = COMPACT_KEEP_DEFAULT;
    int rc = str_param(c, "summary", 1, &summary);
    if (rc == CLARITY_OK) rc = int_param(c, "limit", 0, COMPACT_KEEP_MAX, &limit);
    session *s;
    if (rc == CLARITY_OK) rc = with_session(c, 0, &s);
    if (rc != CLARITY_OK) return rc;
    size_t len = json_string_length(json_object_get(c->params, "summary"));
    rc = compact_after(c->e, s, summary, len, (size_t)limit, c->out);
    if (rc != CLARITY_OK) rc = fail(c, rc, RPC_INTERNAL, "out of memory%s", NULL);
    else rc = persist_or_fail(c, s);
    engine_release(c->e, s);
    return rc;
}

/* clarity.trimOutput {session?, fields: {name: text}, maxChars?}: the
 * fields cut to share maxChars (toolOutput.maxChars by default). */
static int m_trim_output(rpc_call *c)
{
    long long max = c->e->cfg.tool_output.max_chars;
    const char *sid;
    json_t *fields = json_object_get(c->params, "fields");
    int rc = str_param(c, "session", 0, &sid);
    if (rc == CLARITY_OK) rc = int_param(c, "maxChars", CFG_TOOL_OUTPUT_MAX_CHARS_MIN, CFG_TOOL_OUTPUT_MAX_CHARS_MAX, &max);
    if (rc != CLARITY_OK) return rc;
    if (!json_is_object(fields) || json_object_size(fields) == 0 ||
        json_object_size(fields) > TRIM_MAX_FIELDS)
        return fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS,
                    "param \"fields\" must be an object of 1..8 strings%s", NULL);
    const char *names[TRIM_MAX_FIELDS], *key;
    size_t sizes[TRIM_MAX_FIELDS], budget[TRIM_MAX_FIELDS], n = 0, total = 0;
    json_t *v;
    json_object_foreach(fields, key, v) {
        if (!json_is_string(v))
            return fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS, "fields.%s must be a string", key);
        names[n] = key;
        total += sizes[n++] = json_string_length(v);
    }
    session *s = NULL;
    c->session_id = sid;
    if (sid && engine_acquire(c->e, sid, 0, &s) != CLARITY_OK) s = NULL; /* no items: head, tail */
    trim_budgets(sizes, n, (size_t)max, budget);
    buf_printf(c->out, "{\"trimmed\":%s,\"charsBefore\":%zu,\"fields\":{",
               total > (size_t)max ? "true" : "false", total);
    buf text;
    buf_init(&text);
    for (size_t i = 0; i < n && rc == CLARITY_OK; i++) {
        json_t *f = json_object_get(fields, names[i]);
        trim_stats st;
        buf_reset(&text);
        int t = total > (size_t)max ? trim_text(c->e, s, json_string_value(f), sizes[i],
                                                budget[i] < 1000 ? 1000 : budget[i], &text, &st)
                                    : 0;
        if (t < 0) {
            rc = fail(c, t, RPC_INTERNAL, "out of memory%s", NULL);
            break;
        }
        buf_puts(c->out, i ? "," : "");
        buf_json_str(c->out, names[i], strlen(names[i]));
        buf_putc(c->out, ':');
        if (t == 1) buf_json_str(c->out, text.p, text.len);
        else buf_json_str(c->out, json_string_value(f), sizes[i]);
    }
    buf_free(&text);
    if (s) engine_release(c->e, s);
    if (rc == CLARITY_OK) buf_puts(c->out, "}}");
    return rc;
}

static int persist_or_fail(rpc_call *c, session *s)
{
    int rc = persist_flush(c->e, s);
    if (rc != CLARITY_OK)
        return fail(c, rc, RPC_STORE, "change kept in memory but not persisted: %s",
                    store_errmsg(c->e->st));
    return CLARITY_OK;
}

static int m_anchor(rpc_call *c, int anchor)
{
    const char *name, *reason = NULL;
    int rc = str_param(c, "itemId", 1, &name);
    if (rc == CLARITY_OK && anchor) rc = str_param(c, "reason", 0, &reason);
    session *s;
    if (rc == CLARITY_OK) rc = with_session(c, anchor, &s);
    if (rc != CLARITY_OK) return rc;
    char *id = NULL;
    item *it = view_lookup(c->e, s, name, &id);
    if (!it && !anchor) {
        rc = fail(c, CLARITY_ENOTFOUND, RPC_UNKNOWN_ITEM, "unknown item: %s", name);
    } else if (!it && !id) {
        rc = fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS, "itemId \"%s\" is not a valid item name", name);
    } else {
        int created = !it;
        if (!it) it = tracker_touch(&s->t, id, tracker_category_of_id(id), engine_now_ms(c->e));
        if (!it) {
            rc = fail(c, CLARITY_ENOMEM, RPC_INTERNAL, "out of memory%s", NULL);
        } else {
            if (anchor) tracker_anchor(&s->t, it, reason ? reason : "user-anchored", engine_now_ms(c->e));
            else tracker_unanchor(&s->t, it);
            rc = persist_or_fail(c, s);
            if (rc == CLARITY_OK) {
                buf_puts(c->out, "{\"ok\":true,\"itemId\":");
                buf_json_str(c->out, it->id, tracker_id_len(it));
                buf_printf(c->out, ",\"anchored\":%s,\"created\":%s}", anchor ? "true" : "false",
                           created ? "true" : "false");
            }
        }
    }
    free(id);
    engine_release(c->e, s);
    return rc;
}

static int m_set_tier(rpc_call *c)
{
    const char *name, *tier_name;
    int rc = str_param(c, "itemId", 1, &name);
    if (rc == CLARITY_OK) rc = str_param(c, "tier", 1, &tier_name);
    if (rc != CLARITY_OK) return rc;
    int tier = tracker_tier_from_name(tier_name);
    if (tier < 0)
        return fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS,
                    "param \"tier\" must be essential, high, normal or low, got \"%s\"", tier_name);
    session *s;
    rc = with_session(c, 0, &s);
    if (rc != CLARITY_OK) return rc;
    item *it = view_lookup(c->e, s, name, NULL);
    if (!it) {
        rc = fail(c, CLARITY_ENOTFOUND, RPC_UNKNOWN_ITEM, "unknown item: %s", name);
    } else {
        tracker_set_tier(&s->t, it, tier);
        rc = persist_or_fail(c, s);
        if (rc == CLARITY_OK) {
            buf_puts(c->out, "{\"ok\":true,\"itemId\":");
            buf_json_str(c->out, it->id, tracker_id_len(it));
            buf_printf(c->out, ",\"tier\":\"%s\"}", tracker_tier_name(tier));
        }
    }
    engine_release(c->e, s);
    return rc;
}

static int m_prune(rpc_call *c)
{
    int dry = 0, strict = c->e->cfg.strict_mode;
    int rc = bool_param(c, "dryRun", &dry);
    if (rc == CLARITY_OK) rc = bool_param(c, "strictMode", &strict);
    session *s;
    if (rc == CLARITY_OK) rc = with_session(c, 0, &s);
    if (rc != CLARITY_OK) return rc;
    prune_result r;
    rc = pruner_evaluate_with(&c->e->cfg, &c->e->tables, &s->t, strict, &r);
    if (rc != CLARITY_OK) {
        rc = fail(c, rc, RPC_INTERNAL, "out of memory%s", NULL);
    } else {
        if (!dry) pruner_apply(&s->t, &r);
        rc = dry ? CLARITY_OK : persist_or_fail(c, s);
        if (rc == CLARITY_OK) view_prune_json(&r, s->id, !dry, strict, c->out);
        pruner_result_free(&r);
    }
    engine_release(c->e, s);
    return rc;
}

static int m_config(rpc_call *c)
{
    const char *section;
    int rc = str_param(c, "section", 0, &section);
    if (rc != CLARITY_OK) return rc;
    if (section && !config_has_section(section))
        return fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS, "unknown config section: %s", section);
    char *json = config_section_json(&c->e->cfg, section);
    if (!json) return fail(c, CLARITY_ENOMEM, RPC_INTERNAL, "out of memory%s", NULL);
    buf_puts(c->out, json);
    free(json);
    return CLARITY_OK;
}

static int m_export(rpc_call *c)
{
    session *s;
    int rc = with_session(c, 0, &s);
    if (rc != CLARITY_OK) return rc;
    buf_puts(c->out, "{\"namespace\":\"clarity\",\"key\":\"clarity:relevance_state\",\"session\":");
    buf_json_str(c->out, s->id, strlen(s->id));
    buf_puts(c->out, ",\"value\":");
    persist_legacy_json(s, c->out);
    buf_putc(c->out, '}');
    engine_release(c->e, s);
    return CLARITY_OK;
}

static int m_import(rpc_call *c)
{
    json_t *state = json_object_get(c->params, "state");
    if (!json_is_object(state))
        return fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS,
                    "missing param \"state\" (an object in the original plugin's shape)%s", NULL);
    char *text = json_dumps(state, JSON_COMPACT);
    if (!text) return fail(c, CLARITY_ENOMEM, RPC_INTERNAL, "out of memory%s", NULL);
    session *s;
    int rc = with_session(c, 1, &s);
    if (rc == CLARITY_OK) {
        char *msg = NULL;
        rc = persist_import_legacy(c->e, s, text, &msg);
        if (rc != CLARITY_OK) {
            rc = fail(c, rc, rc == CLARITY_ESTORE ? RPC_STORE : RPC_INVALID_PARAMS, "%s",
                      msg ? msg : "import failed");
        } else {
            buf_printf(c->out, "{\"ok\":true,\"items\":%zu,\"currentTurn\":%lld}", s->t.count,
                       (long long)s->t.current_turn);
        }
        free(msg);
        engine_release(c->e, s);
    }
    free(text);
    return rc;
}

/* graph/ (file predictions) answers clarity.graphBuild, clarity.predict and
 * clarity.graphStatus; a build without it (graph/none.c) answers "unknown
 * method". */
static int m_graph(rpc_call *c, const char *name)
{
    char *params = json_dumps(c->params, JSON_COMPACT), *msg = NULL;
    if (!params) return fail(c, CLARITY_ENOMEM, RPC_INTERNAL, "out of memory%s", NULL);
    int rc = graph_rpc_call(c->e->graphs, name, params, c->out, &msg);
    free(params);
    if (rc == CLARITY_ENOTFOUND) {
        free(msg);
        return fail(c, rc, RPC_METHOD_NOT_FOUND, "unknown method: %s", name);
    }
    if (rc != CLARITY_OK)
        rc = fail(c, rc, rc == CLARITY_EINVAL ? RPC_INVALID_PARAMS : RPC_INTERNAL, "%s",
                  msg ? msg : "graph: failed");
    free(msg);
    return rc;
}
/* What the session used so far, as a query: the ids of its best-scoring
 * unpruned items (file paths, symbols, ...), "file:" style prefixes off. */
static void session_query(engine *e, session *s, buf *q)
{
    scored_item *v = NULL;
    size_t n = view_sorted(e, s, 0, 24, &v);
    for (size_t i = 0; n != (size_t)-1 && i < n && i < 24; i++) {
        const char *id = v[i].it->id, *colon = strchr(id, ':');
        int prefix = colon && colon > id && colon - id < 12;
        for (const char *p = id; prefix && p < colon; p++)
            if (*p < 'a' || *p > 'z') prefix = 0;
        if (q->len) buf_putc(q, ' ');
        buf_puts(q, prefix ? colon + 1 : id);
    }
    free(v);
}

/* clarity.predict and clarity.graphStatus also take a session instead of a
 * repository: its workspace is the repository and, without "prompt", what
 * the session used so far is the query; "limit" is another name for "k". */
static int m_graph_session(rpc_call *c, const char *name)
{
    static const char *const strings[] = {"repo", "session", "prompt", "path", "symbol", "file"};
    for (size_t i = 0; i < sizeof strings / sizeof *strings; i++) { /* present: of the right type */
        json_t *v = json_object_get(c->params, strings[i]);
        if (v && !json_is_null(v) && (!json_is_string(v) || json_string_length(v) == 0))
            return fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS, "param \"%s\" must be a non-empty string",
                        strings[i]);
    }
    int is_predict = strcmp(name, "clarity.predict") == 0, is_status = strcmp(name, "clarity.graphStatus") == 0;
    json_t *repo = json_object_get(c->params, "repo");
    const char *sid = json_string_value(json_object_get(c->params, "session"));
    int need_query = is_predict && !json_object_get(c->params, "prompt");
    if (!sid || (json_is_string(repo) && !need_query)) return m_graph(c, name);
    int rc = str_param(c, "session", 1, &c->session_id);
    session *s = NULL;
    if (rc == CLARITY_OK) {
        rc = engine_acquire(c->e, c->session_id, 0, &s);
        if (rc == CLARITY_ENOTFOUND && is_status) { /* graphStatus: no session, no graph */
            buf_puts(c->out, "{\"available\":false}");
            return CLARITY_OK;
        }
        if (rc != CLARITY_OK) return fail_acquire(c, rc);
    }
    if (rc != CLARITY_OK) return rc;
    if (!json_is_string(repo) && s->workspace && *s->workspace)
        json_object_set_new(c->params, "repo", json_string(s->workspace));
    if (need_query) {
        buf q;
        buf_init(&q);
        session_query(c->e, s, &q);
        json_object_set_new(c->params, "prompt", json_stringn(q.p ? q.p : "", q.len));
        buf_free(&q);
    }
    engine_release(c->e, s);
    if (!json_is_string(json_object_get(c->params, "repo"))) {
        if (is_status) {
            buf_puts(c->out, "{\"available\":false}");
            return CLARITY_OK;
        }
        return fail(c, CLARITY_EINVAL, RPC_INVALID_PARAMS, "%s: the session has no workspace; pass \"repo\"",
                    name);
    }
    return m_graph(c, name);
}

static int m_predict(rpc_call *c)
{
    json_t *lim = json_object_get(c->params, "limit");
    if (lim && !json_object_get(c->params, "k")) json_object_set(c->params, "k", lim);
    json_object_del(c->params, "limit");
    return m_graph_session(c, "clarity.predict");
}
static int m_graph_build(rpc_call *c) { return m_graph(c, "clarity.graphBuild"); }
/* code intelligence (graph/intel.c): a repo, or a session's workspace */
static int m_zoom(rpc_call *c) { return m_graph_session(c, "clarity.zoom"); }
static int m_impact(rpc_call *c) { return m_graph_session(c, "clarity.impact"); }
static int m_cochange(rpc_call *c) { return m_graph_session(c, "clarity.cochange"); }
static int m_graph_status(rpc_call *c) { return m_graph_session(c, "clarity.graphStatus"); }

typedef struct method {
    const char *name;
    int needs_session;
    int (*fn)(rpc_call *c);
} method;

static int m_anchor_on(rpc_call *c) { return m_anchor(c, 1); }
static int m_anchor_off(rpc_call *c) { return m_anchor(c, 0); }

static const method methods[] = {
    {"clarity.getState", 1, m_get_state},     {"clarity.getScores", 1, m_get_scores},
    {"clarity.anchor", 1, m_anchor_on},       {"clarity.unanchor", 1, m_anchor_off},
    {"clarity.prune", 1, m_prune},            {"clarity.stats", 1, m_stats},
    {"clarity.config", 0, m_config},          {"clarity.setTier", 1, m_set_tier},
    {"clarity.exportState", 1, m_export},     {"clarity.importState", 1, m_import},
    {"clarity.predict", 0, m_predict},        {"clarity.graphBuild", 0, m_graph_build},
    {"clarity.graphStatus", 0, m_graph_status}, {"clarity.context", 1, m_context},
    {"clarity.keepList", 1, m_keep_list},     {"clarity.compacted", 1, m_compacted},
    {"clarity.trimOutput", 0, m_trim_output}, {"clarity.progress", 1, m_progress},
    {"clarity.zoom", 0, m_zoom},              {"clarity.impact", 0, m_impact},
    {"clarity.cochange", 0, m_cochange},
};

/* A large request's parse trees (an importState of 100,000 items: its
 * params and the state it parses) leave about a million small free chunks.
 * glibc merges them at the process's next large allocation, on whichever
 * hook that is: 80 M instructions at the start of a compaction of 100,000
 * items.  Merging them here charges the request that made them, and gives
 * the memory back to the system. */
#define RPC_TRIM_BYTES (64u << 10)

static void trim_after(const char *params_json)
{
#ifdef __GLIBC__
    if (params_json && strnlen(params_json, RPC_TRIM_BYTES) >= RPC_TRIM_BYTES) malloc_trim(0);
#else
    (void)params_json;
#endif
}

int gateway_rpc(engine *e, const char *method_name, const char *params_json, buf *out, char **err)
{
    rpc_call c = {e, NULL, NULL, out, err};
    if (!method_name || strncmp(method_name, "clarity.", 8) != 0) return CLARITY_DECLINED;
    const method *m = NULL;
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (strcmp(methods[i].name, method_name) == 0) m = &methods[i];
    if (!m) return fail(&c, CLARITY_ENOTFOUND, RPC_METHOD_NOT_FOUND, "unknown method: %s", method_name);
    json_error_t jerr;
    c.params = params_json && *params_json ? json_loads(params_json, 0, &jerr) : json_object();
    if (!c.params) {
        char msg[256];
        snprintf(msg, sizeof msg, "params: invalid JSON at line %d, column %d: %s", jerr.line,
                 jerr.column, jerr.text);
        return fail(&c, CLARITY_EINVAL, RPC_INVALID_PARAMS, "%s", msg);
    }
    int rc = CLARITY_OK;
    if (!json_is_object(c.params))
        rc = fail(&c, CLARITY_EINVAL, RPC_INVALID_PARAMS, "params must be a JSON object%s", NULL);
    if (rc == CLARITY_OK && m->needs_session) rc = str_param(&c, "session", 1, &c.session_id);
    if (rc == CLARITY_OK) rc = m->fn(&c);
    if (rc == CLARITY_OK && buf_failed(out)) rc = CLARITY_ENOMEM;
    json_decref(c.params);
    trim_after(params_json);
    return rc;
}
