/* replay.c: feed a "turns JSONL" file through the hooks.
 *
 * Consecutive lines with the same (session, turn) form one turn.  Per turn:
 *   before_agent_start  prompt = the turn's user texts joined by "\n\n"
 *                       (empty when the turn has none), messages = the last
 *                       (up to 8) messages of the previous turn of the
 *                       session; the returned block is printed;
 *   agent_end           the turn's assistant, tool and system messages,
 *                       success = 1.
 * A session ends at its meta line, at a change of session or at EOF:
 * session_end with reason "replay-end" (then, with --json, one line of
 * clarity.getScores {"session": S}).
 * replay_run with hooks (replay.h) prints nothing on stdout and calls back
 * after each agent_end, at a meta line and after each session_end.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/buf.h"
#include "../util/tokens.h"
#include "cli.h"
#include "jsonconv.h"
#include "replay.h"

#define RECENT_MAX 8
#define BAR_WIDTH 30

typedef struct replay {
    cli *c;
    const replay_hooks *hooks; /* NULL for `clarity replay` */
    const char *name; /* for messages: the path or "<stdin>" */
    char *session;    /* current session (owned) or NULL */
    const char *workspace; /* of the current session (hooks->workspace), or NULL */
    int64_t turn;
    int in_turn;
    buf prompt;
    size_t n_user;
    msgvec all, agent, prev, one;
    msgvec hist; /* the session's transcript before this turn (assemble) */
    /* --budget F on a file: each session's whole transcript in tokens (a
     * first pass), so its budget is F of that, as a model's window is */
    struct sess_total *totals;
    size_t n_totals;
    int failed;
    int broken_pipe;
    /* progress bar on stderr */
    int progress;
    int bar_shown;
    size_t done, total;
} replay;

/* ---- progress ------------------------------------------------------------- */

static void bar_hide(replay *r)
{
    if (!r->bar_shown) return;
    fputs("\r\033[K", stderr);
    r->bar_shown = 0;
}

static void bar_show(replay *r)
{
    if (!r->progress) return;
    size_t done = r->done + (r->hooks ? r->hooks->done_before : 0);
    size_t fill = r->total ? done * BAR_WIDTH / r->total : 0;
    if (fill > BAR_WIDTH) fill = BAR_WIDTH;
    char bar[BAR_WIDTH + 1];
    memset(bar, '#', fill);
    memset(bar + fill, ' ', BAR_WIDTH - fill);
    bar[BAR_WIDTH] = '\0';
    fprintf(stderr, "\r[%s] %zu/%zu %s", bar, done, r->total,
            r->hooks && r->hooks->label ? r->hooks->label : "sessions");
    r->bar_shown = 1;
}

/* Writes to stdout without tearing the progress bar. */
static void out_begin(replay *r) { bar_hide(r); }
static void out_end(replay *r)
{
    if (fflush(stdout) != 0 || ferror(stdout)) r->broken_pipe = 1;
    bar_show(r);
}

static void line_error(replay *r, size_t lineno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void line_error(replay *r, size_t lineno, const char *fmt, ...)
{
    bar_hide(r);
    va_list ap;
    va_start(ap, fmt);
    char *m = util_vformat(fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s:%zu: %s\n", r->name, lineno, m ? m : fmt);
    free(m);
    bar_show(r);
    r->failed = 1;
}

static void call_error(replay *r, const char *what, int rc, const clarity_result *res)
{
    bar_hide(r);
    if (r->in_turn)
        fprintf(stderr, "%s: session %s turn %lld: %s: %s\n", r->name, r->session,
                (long long)r->turn, what, loader_errtext(&r->c->L, rc, res));
    else
        fprintf(stderr, "%s: session %s: %s: %s\n", r->name, r->session, what,
                loader_errtext(&r->c->L, rc, res));
    bar_show(r);
    r->failed = 1;
}

/* ---- turns and sessions ------------------------------------------------------ */

typedef struct sess_total {
    char *session;
    int64_t tokens;
} sess_total;

/* First pass for --budget F: every session's transcript in tokens.  The
 * sessions of a turns file are contiguous.  Returns the count (0 when the
 * file cannot be read). */
static size_t session_totals(const char *path, sess_total **out)
{
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char *line = NULL;
    size_t cap = 0, n = 0, capt = 0;
    ssize_t len;
    sess_total *v = NULL;
    while ((len = getline(&line, &cap, f)) > 0) {
        json_t *o = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, NULL);
        const char *sid = json_string_value(json_object_get(o, "session"));
        json_t *text = json_object_get(o, "text"), *args = json_object_get(o, "tool_args");
        if (sid && !json_object_get(o, "meta")) {
            if (n == 0 || strcmp(v[n - 1].session, sid) != 0) {
                if (n == capt) {
                    capt = capt ? capt * 2 : 64;
                    sess_total *nv = realloc(v, capt * sizeof *nv);
                    if (!nv) break;
                    v = nv;
                }
                v[n].session = util_strdup(sid);
                v[n++].tokens = 0;
            }
            if (json_is_string(text)) v[n - 1].tokens += util_estimate_tokens(json_string_value(text), json_string_length(text));
            if (json_is_object(args)) {
                char *a = json_dumps(args, JSON_COMPACT);
                if (a) v[n - 1].tokens += util_estimate_tokens(a, strlen(a));
                free(a);
            }
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    *out = v;
    return n;
}

static int64_t session_total(const replay *r, const char *session)
{
    for (size_t i = 0; i < r->n_totals; i++)
        if (r->totals[i].session && strcmp(r->totals[i].session, session) == 0) return r->totals[i].tokens;
    return -1;
}

/* The transcript as the model would get it now: the session's earlier
 * messages and this turn's user lines.  ids: their place in the session;
 * a tool message is paired with the assistant call just before it. */
static clarity_ctx_message *transcript(replay *r, size_t *n, size_t *cur, char (*ids)[2][24])
{
    size_t nh = r->hist.n, nu = 0;
    for (size_t i = 0; i < r->all.n; i++) nu += strcmp(r->all.v[i].role, "user") == 0;
    clarity_ctx_message *v = calloc(nh + nu + 1, sizeof *v);
    if (!v) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < nh + r->all.n; i++) {
        const clarity_message *m = i < nh ? &r->hist.v[i] : &r->all.v[i - nh];
        if (i >= nh && strcmp(m->role, "user") != 0) continue;
        clarity_ctx_message *x = &v[k];
        x->struct_size = sizeof *x;
        snprintf(ids[k][0], sizeof ids[k][0], "m%zu", i);
        x->id = ids[k][0];
        x->role = m->role;
        x->text = m->text;
        x->text_len = m->text_len;
        x->tool_name = m->tool_name;
        x->tool_args_json = m->tool_args_json;
        x->tokens = -1;
        if (strcmp(m->role, "assistant") == 0 && m->tool_name) {
            snprintf(ids[k][1], sizeof ids[k][1], "c%zu", i);
            x->tool_call_id = ids[k][1];
        } else if (strcmp(m->role, "tool") == 0 && k > 0 && v[k - 1].tool_call_id &&
                   strcmp(v[k - 1].role, "assistant") == 0) {
            x->tool_call_id = v[k - 1].tool_call_id;
        }
        k++;
    }
    *n = k;
    *cur = nh;
    return v;
}

/* One line per message of what the model would see. */
static void print_view(replay *r, const clarity_ctx_message *v, size_t n, json_t *res)
{
    json_t *acts = json_object_get(res, "actions");
    printf("--- session %s turn %lld: %zu messages, %lld tokens -> %lld (budget %lld%s), batch %lld%s ---\n",
           r->session, (long long)r->turn, n, (long long)json_integer_value(json_object_get(res, "tokensBefore")),
           (long long)json_integer_value(json_object_get(res, "tokensAfter")),
           (long long)json_integer_value(json_object_get(res, "budget")),
           json_is_true(json_object_get(res, "met")) ? "" : ", not met",
           (long long)json_integer_value(json_object_get(res, "batch")),
           json_is_true(json_object_get(res, "changed")) ? ", changed" : "");
    size_t a = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *act = json_array_get(acts, a);
        const char *text = v[i].text ? v[i].text : "";
        size_t len = v[i].text_len, cut = 100; /* a verbatim message: its start */
        if (act && (size_t)json_integer_value(json_object_get(act, "index")) == i) {
            text = json_string_value(json_object_get(act, "text"));
            len = text ? strlen(text) : 0;
            cut = len; /* a stub: whole */
            a++;
        }
        size_t show = len < cut ? len : cut;
        while (show && (text[show - 1] & 0xc0) == 0x80) show--;
        printf("  #%zu %-9s %6lld  ", i, v[i].role, (long long)util_estimate_tokens(v[i].text ? v[i].text : "", v[i].text_len));
        for (size_t j = 0; j < show; j++) putchar(text[j] == '\n' || text[j] == '\r' ? ' ' : text[j]);
        puts(len > show ? "..." : "");
    }
}

/* CLARITY_EV_ASSEMBLE before the turn, when a budget is set or eval asks. */
static void assemble_turn(replay *r)
{
    cli *c = r->c;
    int want = r->hooks ? r->hooks->on_assembled != NULL : c->budget_abs > 0 || c->budget_frac > 0;
    if (!want) return;
    size_t cap = r->hist.n + r->all.n + 1, n = 0, cur = 0;
    char(*ids)[2][24] = calloc(cap, sizeof *ids);
    clarity_ctx_message *v = ids ? transcript(r, &n, &cur, ids) : NULL;
    if (!v) {
        free(ids);
        return;
    }
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) total += util_estimate_tokens(v[i].text ? v[i].text : "", v[i].text_len);
    clarity_assemble p = {sizeof p, r->session, v, n, 0, cur, 0};
    int64_t whole = session_total(r, r->session);
    p.token_budget = c->budget_abs > 0 ? c->budget_abs
                                       : (int64_t)(c->budget_frac * (double)(whole > 0 ? whole : total));
    clarity_result res;
    int rc = loader_event(&c->L, CLARITY_EV_ASSEMBLE, &p, &res);
    if (rc < 0) {
        call_error(r, "assemble", rc, &res);
    } else if (rc == CLARITY_OK) {
        json_t *j = result_json(&res);
        if (j && r->hooks && r->hooks->on_assembled)
            r->hooks->on_assembled(r->hooks->ud, r->session, r->turn, v, n, j);
        else if (j && !c->json) {
            out_begin(r);
            print_view(r, v, n, j);
            out_end(r);
        }
        json_decref(j);
    }
    loader_release(&c->L, &res);
    free(v);
    free(ids);
}

static void flush_turn(replay *r)
{
    if (!r->in_turn) return;
    cli *c = r->c;
    clarity_result res;
    assemble_turn(r);

    size_t first = r->prev.n > RECENT_MAX ? r->prev.n - RECENT_MAX : 0;
    clarity_before_agent_start bas;
    memset(&bas, 0, sizeof bas);
    bas.struct_size = sizeof bas;
    bas.session_id = r->session;
    bas.workspace_dir = r->workspace ? r->workspace : c->workspace;
    bas.prompt = r->prompt.p ? r->prompt.p : "";
    bas.prompt_len = r->prompt.len;
    bas.messages = r->prev.n ? r->prev.v + first : NULL;
    bas.n_messages = r->prev.n - first;
    int rc = loader_event(&c->L, CLARITY_EV_BEFORE_AGENT_START, &bas, &res);
    int refused = rc < 0 && rc != CLARITY_DECLINED;
    if (!refused && r->hooks && r->hooks->on_block)
        r->hooks->on_block(r->hooks->ud, r->session, r->turn, rc == CLARITY_OK && res.data ? res.data : "",
                           rc == CLARITY_OK && res.data ? res.len : 0);
    if (refused) {
        call_error(r, "before_agent_start", rc, &res);
    } else if (!c->json && !r->hooks) {
        out_begin(r);
        printf("--- session %s turn %lld ---\n", r->session, (long long)r->turn);
        if (rc == CLARITY_OK && res.data && res.len) {
            fwrite(res.data, 1, res.len, stdout);
            if (res.data[res.len - 1] != '\n') putchar('\n');
        }
        out_end(r);
    }
    loader_release(&c->L, &res);

    /* A refused turn (the prompt was refused) did not happen: it must leave
     * the state exactly as it was, so no agent_end either. */
    if (!refused) {
        clarity_agent_end ae;
        memset(&ae, 0, sizeof ae);
        ae.struct_size = sizeof ae;
        ae.session_id = r->session;
        ae.messages = r->agent.n ? r->agent.v : NULL;
        ae.n_messages = r->agent.n;
        ae.success = 1;
        rc = loader_event(&c->L, CLARITY_EV_AGENT_END, &ae, &res);
        if (rc < 0 && rc != CLARITY_DECLINED) call_error(r, "agent_end", rc, &res);
        loader_release(&c->L, &res);
        if (r->hooks && r->hooks->on_turn) r->hooks->on_turn(r->hooks->ud, r->session, r->turn);
    }

    if (hostsvc_log_enabled(c->hs, CLARITY_LOG_DEBUG)) {
        json_t *j = msgs_to_json(r->agent.v, r->agent.n);
        char *s = j ? json_compact(j) : NULL;
        hostsvc_log(c->hs, CLARITY_LOG_DEBUG, "session %s turn %lld: %zu user line(s), agent_end %s",
                    r->session, (long long)r->turn, r->n_user, s ? s : "?");
        free(s);
        json_decref(j);
    }

    for (size_t i = 0; i < r->all.n; i++)
        if (msgvec_push_from(&r->hist, &r->all, i) != 0) r->failed++;
    msgvec_swap(&r->prev, &r->all);
    msgvec_clear(&r->all);
    msgvec_clear(&r->agent);
    buf_reset(&r->prompt);
    r->n_user = 0;
    r->in_turn = 0;
}

static void end_session(replay *r, const char *reason)
{
    if (!r->session) return;
    cli *c = r->c;
    flush_turn(r);
    clarity_result res;
    clarity_session_end se;
    memset(&se, 0, sizeof se);
    se.struct_size = sizeof se;
    se.session_id = r->session;
    se.reason = reason;
    int rc = loader_event(&c->L, CLARITY_EV_SESSION_END, &se, &res);
    if (rc < 0 && rc != CLARITY_DECLINED) call_error(r, "session_end", rc, &res);
    loader_release(&c->L, &res);
    if (r->hooks && r->hooks->on_session_end) r->hooks->on_session_end(r->hooks->ud, r->session);

    if (c->json && !r->hooks) {
        json_t *params = json_pack("{s:s}", "session", r->session);
        char *p = params ? json_compact(params) : NULL;
        json_decref(params);
        rc = p ? loader_rpc(&c->L, "clarity.getScores", p, &res) : CLARITY_ENOMEM;
        free(p);
        if (rc != CLARITY_OK) {
            call_error(r, "clarity.getScores", rc, &res);
        } else {
            /* One line per session, whatever the plugin's formatting. */
            json_t *j = result_json(&res);
            char *line = j ? json_compact(j) : NULL;
            out_begin(r);
            if (line) puts(line);
            else if (res.data) printf("%.*s\n", (int)res.len, res.data);
            else puts("null");
            out_end(r);
            free(line);
            json_decref(j);
        }
        loader_release(&c->L, &res);
    }
    free(r->session);
    r->session = NULL;
    r->workspace = NULL;
    msgvec_clear(&r->prev);
    msgvec_clear(&r->hist);
    r->done++;
    bar_show(r);
}

/* One parsed line.  Returns 0, or -1 on a bad line (already reported). */
static int feed(replay *r, json_t *o, size_t lineno)
{
    if (!json_is_object(o)) {
        line_error(r, lineno, "expected a JSON object");
        return -1;
    }
    json_t *js = json_object_get(o, "session");
    if (!json_is_string(js) || json_string_length(js) == 0 ||
        strlen(json_string_value(js)) != json_string_length(js)) {
        line_error(r, lineno, "\"session\": must be a non-empty string");
        return -1;
    }
    const char *sid = json_string_value(js);
    int same = r->session && strcmp(r->session, sid) == 0;
    if (!same) end_session(r, "replay-end");
    if (r->c->session && strcmp(r->c->session, sid) != 0) return 0; /* filtered out */

    if (json_object_get(o, "meta")) {
        if (same && r->hooks && r->hooks->on_meta)
            r->hooks->on_meta(r->hooks->ud, r->session, json_object_get(o, "meta"));
        if (same) end_session(r, "replay-end");
        return 0;
    }
    json_t *jt = json_object_get(o, "turn");
    if (!json_is_integer(jt)) {
        line_error(r, lineno, "\"turn\": must be an integer");
        return -1;
    }
    const char *err = NULL;
    msgvec_clear(&r->one);
    if (msgvec_push_json(&r->one, o, &err) != 0) {
        line_error(r, lineno, "%s", err ? err : "out of memory");
        return -1;
    }
    if (!r->session) {
        r->session = util_strdup(sid);
        if (!r->session) {
            line_error(r, lineno, "out of memory");
            return -1;
        }
        r->workspace = r->hooks && r->hooks->workspace ? r->hooks->workspace(r->hooks->ud, sid) : NULL;
    }
    int64_t turn = json_integer_value(jt);
    if (r->in_turn && turn != r->turn) flush_turn(r);
    if (!r->in_turn) {
        r->in_turn = 1;
        r->turn = turn;
    }
    const clarity_message *m = &r->one.v[0];
    int fail = msgvec_push_from(&r->all, &r->one, 0) != 0;
    if (strcmp(m->role, "user") == 0) {
        if (r->n_user++) buf_append(&r->prompt, "\n\n", 2);
        buf_append(&r->prompt, m->text, m->text_len);
        fail |= buf_failed(&r->prompt);
    } else {
        fail |= msgvec_push_from(&r->agent, &r->one, 0) != 0;
    }
    msgvec_clear(&r->one);
    if (fail) {
        line_error(r, lineno, "out of memory");
        return -1;
    }
    return 0;
}

/* First pass for the progress bar: the number of sessions to replay. */
size_t replay_count_sessions(const char *path, const char *filter)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char *line = NULL, *last = NULL;
    size_t cap = 0, total = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0 && !cli_stop) {
        json_t *o = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, NULL);
        const char *s = json_string_value(json_object_get(o, "session"));
        if (s && (!filter || strcmp(s, filter) == 0) && !json_object_get(o, "meta") &&
            (!last || strcmp(last, s) != 0)) {
            total++;
            free(last);
            last = util_strdup(s);
        } else if (s && filter && strcmp(s, filter) != 0) {
            free(last);
            last = NULL;
        }
        json_decref(o);
    }
    free(last);
    free(line);
    fclose(f);
    return total;
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return 0;
    return 1;
}

int cli_replay(cli *c, const char *path) { return replay_run(c, path, NULL); }

int replay_run(cli *c, const char *path, const replay_hooks *hooks)
{
    int is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "r");
    if (!f) {
        fprintf(stderr, "clarity: %s: %s\n", path, strerror(errno));
        return EXIT_FAIL;
    }
    replay r;
    memset(&r, 0, sizeof r);
    r.c = c;
    r.hooks = hooks;
    r.name = is_stdin ? "<stdin>" : path;
    buf_init(&r.prompt);
    msgvec_init(&r.all);
    msgvec_init(&r.agent);
    msgvec_init(&r.prev);
    msgvec_init(&r.one);
    msgvec_init(&r.hist);
    if (c->budget_frac > 0 && !is_stdin) r.n_totals = session_totals(path, &r.totals);
    if (hooks) {
        r.total = hooks->total;
        r.progress = hooks->progress;
        bar_show(&r);
    } else if (!c->json && !is_stdin && isatty(STDERR_FILENO)) {
        r.total = replay_count_sessions(path, c->session);
        r.progress = 1;
        bar_show(&r);
    }

    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t n;
    errno = 0;
    while (!cli_stop && !r.broken_pipe && (n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (blank(line, (size_t)n)) continue;
        json_error_t je;
        json_t *o = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &je);
        if (!o) {
            line_error(&r, lineno, "%s (column %d)", je.text, je.column);
            continue;
        }
        feed(&r, o, lineno);
        json_decref(o);
    }
    int read_err = ferror(f) && !cli_stop;
    if (read_err) {
        bar_hide(&r);
        fprintf(stderr, "clarity: %s: read error: %s\n", r.name, strerror(errno));
        r.failed = 1;
    }
    end_session(&r, cli_stop ? "interrupted" : "replay-end");
    if (r.bar_shown && hooks) bar_hide(&r); /* the caller's next run redraws it */
    else if (r.bar_shown) fputc('\n', stderr);

    free(line);
    if (!is_stdin) fclose(f);
    buf_free(&r.prompt);
    msgvec_free(&r.all);
    msgvec_free(&r.agent);
    msgvec_free(&r.prev);
    msgvec_free(&r.one);
    msgvec_free(&r.hist);
    for (size_t i = 0; i < r.n_totals; i++) free(r.totals[i].session);
    free(r.totals);
    if (cli_stop) return EXIT_INTERRUPTED;
    if (r.broken_pipe) return EXIT_FAIL;
    return r.failed ? EXIT_FAIL : EXIT_OK;
}
