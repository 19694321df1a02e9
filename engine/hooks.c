/* hooks.c: the four hook events and the context block. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../pruner/pruner.h"
#include "assemble.h"
#include "engine.h"
#include "compact.h"
#include "hints.h"
#include "progress.h"


static char *errf(const char *fmt, const char *a, unsigned long long n, unsigned long long m)
{
    char b[256];
    snprintf(b, sizeof b, fmt, a, n, m);
    return strdup(b);
}

/* A session that could not be loaded: the store's own words. */
static int acquire_failed(engine *e, int rc, const char *session_id, char **err)
{
    if (rc == CLARITY_ESTORE) {
        const char *why = store_errmsg(e->st);
        engine_log(e, CLARITY_LOG_ERROR, "clarity: session %s: %s", session_id, why);
        free(*err);
        *err = util_format("session %.200s could not be loaded: %s", session_id, why);
    }
    return rc;
}

/* Roles hosts give a tool's output (the first byte first: most messages
 * are the assistant's). */
static int tool_output_role(const char *role)
{
    if (!role || (role[0] != 't' && role[0] != 'f')) return 0;
    return strcmp(role, "tool") == 0 || strcmp(role, "toolResult") == 0 || strcmp(role, "tool_result") == 0 ||
           strcmp(role, "function") == 0;
}

/* ---- before_agent_start ----------------------------------------------- */

typedef struct mention_ctx {
    engine *e;
    session *s;
    int64_t now;
    int oom;
} mention_ctx;

static int on_mention(void *ud, const char *id, int category)
{
    mention_ctx *m = ud;
    if (!tracker_mention(&m->s->t, id, category, m->now)) m->oom = 1;
    return 0;
}

static int set_workspace(session *s, const char *ws)
{
    if (!ws || !*ws || (s->workspace && strcmp(s->workspace, ws) == 0)) return CLARITY_OK;
    char *copy = strdup(ws);
    if (!copy) return CLARITY_ENOMEM;
    free(s->workspace);
    s->workspace = copy;
    s->t.meta_dirty = 1;
    return CLARITY_OK;
}

static int before_agent_start(engine *e, const clarity_before_agent_start *p, buf *out, char **err)
{
    const char *prompt = p->prompt;
    size_t len = p->prompt ? p->prompt_len : 0;
    /* Hosts that pass only the conversation: the last user message is the prompt. */
    const clarity_message *msgs = CLARITY_HAS_MEMBER(p, clarity_before_agent_start, n_messages)
                                      ? p->messages
                                      : NULL;
    if (!prompt && msgs) {
        for (size_t i = p->n_messages; i-- > 0;) {
            if (msgs[i].role && strcmp(msgs[i].role, "user") == 0 && msgs[i].text) {
                prompt = msgs[i].text;
                len = msgs[i].text_len;
                break;
            }
        }
    }
    if (len > e->cfg.limits.max_prompt_bytes) {
        *err = errf("%sprompt: %llu bytes exceeds limits.maxPromptBytes (%llu)", "",
                    (unsigned long long)len, (unsigned long long)e->cfg.limits.max_prompt_bytes);
        return CLARITY_EINVAL;
    }
    session *s;
    int rc = engine_acquire(e, p->session_id, 1, &s);
    if (rc != CLARITY_OK) return acquire_failed(e, rc, p->session_id, err);
    const char *ws = CLARITY_HAS_MEMBER(p, clarity_before_agent_start, workspace_dir)
                         ? p->workspace_dir
                         : NULL;
    rc = set_workspace(s, ws);
    if (rc == CLARITY_OK && e->cfg.enabled && len > 0) {
        buf clean;
        buf_init(&clean);
        const char *text;
        size_t text_len;
        rc = extract_without_own(prompt, len, &clean, &text, &text_len);
        if (rc == CLARITY_OK) {
            mention_ctx m = {e, s, engine_now_ms(e), 0};
            int xrc = extract_mentions(e->ex, text, text_len, s->workspace, on_mention, &m);
            if (m.oom || xrc == CLARITY_ENOMEM) rc = CLARITY_ENOMEM;
            else if (xrc != CLARITY_OK)
                engine_log(e, CLARITY_LOG_WARN, "clarity: session %s: extraction stopped at a "
                           "match limit; the prompt was only partly scanned", s->id);
            engine_enforce_cap(e, s);
            if (e->cfg.prediction.enabled) predict_update(e, s, text, text_len);
        }
        buf_free(&clean);
    }
    if (rc == CLARITY_OK && e->cfg.enabled) {
        block_write(e, s, out);
        /* a prompt's block carried the re-injected items: the turn that
         * ends next drops them (compact.c) */
        if (len > 0 && s->n_reinject && !s->reinject_shown) {
            s->reinject_shown = 1;
            s->t.meta_dirty = 1;
        }
    }
    /* In a store other processes share, the prompt's mentions are committed
     * now: the turn's agent_end may be served by another process. */
    if (rc == CLARITY_OK && s->versioned) {
        rc = persist_flush(e, s);
        if (rc != CLARITY_OK && rc != STORE_ECONFLICT) {
            engine_log(e, CLARITY_LOG_ERROR, "clarity: session %s: %s", s->id, store_errmsg(e->st));
            rc = CLARITY_OK; /* the block stands; the state is kept and retried */
        }
    }
    engine_release(e, s);
    return rc;
}

/* ---- agent_end --------------------------------------------------------- */

/* The references a turn's text yields are looked up in batches
 * (tracker_find_many: with many items, a lookup alone waits for two or
 * three cache misses in a row).  The ids wait in `q` until the batch is
 * full, or until something else is to change the tracker (a tool call's
 * file, the end of a message), which sends the batch first: the
 * references land in the same order as one at a time. */
#define REF_QUEUE_BYTES 2048
_Static_assert(EXTRACT_FORM_ID_MAX <= REF_QUEUE_BYTES, "a word's form is built in the queue");

typedef struct ref_ctx {
    engine *e;
    session *s;
    int64_t now;
    size_t refs;
    int oom;
    size_t nq, used; /* ids waiting, and their bytes in q */
    size_t len[TRACKER_FIND_MANY]; /* theirs, one after the other in q */
    char q[REF_QUEUE_BYTES];
} ref_ctx;

static void send_refs(ref_ctx *r)
{
    if (!r->nq) return;
    const char *ids[TRACKER_FIND_MANY];
    item *its[TRACKER_FIND_MANY];
    for (size_t i = 0, at = 0; i < r->nq; at += r->len[i++]) ids[i] = r->q + at;
    tracker_find_many(&r->s->t, r->nq, ids, r->len, its);
    for (size_t i = 0; i < r->nq; i++)
        if (its[i]) r->refs += (size_t)tracker_reference(&r->s->t, its[i]);
    r->nq = r->used = 0;
}

/* Where the next id of at most n bytes is to be written in the queue (the
 * batch sent first when it is full), or NULL when n is more than it holds. */
static char *ref_room(ref_ctx *r, size_t n)
{
    if (r->nq == TRACKER_FIND_MANY || n > REF_QUEUE_BYTES - r->used) send_refs(r);
    return n <= REF_QUEUE_BYTES ? r->q + r->used : NULL;
}

/* The id of n bytes written at ref_room's place joins the batch. */
static void ref_queued(ref_ctx *r, size_t n)
{
    r->len[r->nq++] = n;
    r->used += n;
}

static void reference_id(ref_ctx *r, const char *id, size_t n)
{
    char *to = ref_room(r, n);
    if (!to) { /* a long path: alone, after those before it */
        item *it = tracker_find_n(&r->s->t, id, n);
        if (it) r->refs += (size_t)tracker_reference(&r->s->t, it);
        return;
    }
    memcpy(to, id, n);
    ref_queued(r, n);
}

static int on_candidate(void *ud, const char *id, int category)
{
    reference_id(ud, id, strlen(id));
    return 0;
}

/* A whole word's forms, looked up without the extractor building and
 * deduplicating each id (a reference is counted once per turn anyway). */
static int on_word(void *ud, const char *w, size_t n, unsigned forms)
{
    ref_ctx *r = ud;
    for (unsigned f = EXTRACT_FORM_PROJECT; f <= EXTRACT_FORM_KEYWORD; f <<= 1)
        if (forms & f) /* built in the queue itself */
            ref_queued(r, extract_form_id(f, w, n, ref_room(r, EXTRACT_FORM_ID_MAX)));
    return 0;
}

/* A file the agent's tool call touched becomes tracked even when nobody
 * named it: coding agents mostly find files by themselves. */
static int on_tool_file(void *ud, const char *id, int category)
{
    ref_ctx *r = ud;
    send_refs(r); /* the references before it land first */
    item *it = tracker_touch(&r->s->t, id, CAT_FILE, r->now);
    if (!it) {
        r->oom = 1;
        return 1;
    }
    r->refs += (size_t)tracker_reference(&r->s->t, it);
    return 0;
}

/* Bytes of text per tracked item below which a brief host scans without
 * building the name filter of a restored session: the build costs 360-530
 * instructions an item, a scan without the filter about 35 more a byte
 * (the dense benchmark's reply, 16 KiB at 1,000 items, callgrind). */
#define BRIEF_BYTES_PER_ITEM 8

/* The name filter for the scan of message m.  A filter a restore left
 * unbuilt is built for the scan, except in a brief host's process
 * (CLARITY_HOST_BRIEF) while the text it scanned without one stays under
 * what the build would cost: an empty filter passes every word, and the
 * candidates it lets through are looked up, so what is counted is the
 * same. */
static const name_filter *names_for(engine *e, session *s, const clarity_message *m)
{
    static const name_filter none; /* nbits 0: no filter */
    if (s->t.names_deferred && (e->host.flags & CLARITY_HOST_BRIEF)) {
        size_t len = m->text ? m->text_len : 0;
        if (CLARITY_HAS_MEMBER(m, clarity_message, tool_args_json) && m->tool_args_json)
            len += strlen(m->tool_args_json);
        if (s->names_rent + len < s->t.count * BRIEF_BYTES_PER_ITEM) {
            s->names_rent += len;
            return &none;
        }
    }
    return tracker_names(&s->t);
}

/* An assistant message: the items it mentions or uses. */
static void scan_assistant(ref_ctx *r, const clarity_message *m)
{
    engine *e = r->e;
    session *s = r->s;
    const extract_filter names = {names_for(e, s, m), on_word};
    if (m->text && m->text_len &&
        extract_candidates_stripped(e->ex, m->text, m->text_len, s->workspace, &names, on_candidate, r) ==
            CLARITY_ENOMEM)
        r->oom = 1;
    if (CLARITY_HAS_MEMBER(m, clarity_message, tool_args_json) && m->tool_args_json)
        extract_tool_call(e->ex, m->tool_args_json, s->workspace, &names, on_tool_file, on_candidate, r);
    if (CLARITY_HAS_MEMBER(m, clarity_message, tool_name) && m->tool_name) {
        char id[128] = "tool:"; /* the name cut to fit, as snprintf did */
        size_t n = strnlen(m->tool_name, sizeof id - 6);
        for (size_t i = 0; i < n; i++) {
            char c = m->tool_name[i];
            id[5 + i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        }
        id[5 + n] = '\0';
        on_candidate(r, id, CAT_TOOL);
    }
    send_refs(r);
}

/* The turn's messages in order: the assistant's for items, the tools'
 * outputs for test runs (progress.c), which need the tool call before. */
static void scan_turn(ref_ctx *r, const clarity_message *msgs, size_t n)
{
    engine *e = r->e;
    session *s = r->s;
    int edits = e->cfg.progress.enabled || e->cfg.codeintel.cochange_hints;
    const clarity_message *call = NULL; /* the latest tool call: what ran the output that follows */
    for (size_t i = 0; e->cfg.enabled && i < n && !r->oom; i++) {
        const clarity_message *m = &msgs[i];
        int has_args = CLARITY_HAS_MEMBER(m, clarity_message, tool_args_json);
        if (tool_output_role(m->role)) {
            int rec;
            if (progress_output(e, s, s->t.current_turn, call && has_args ? call->tool_name : NULL,
                                call && has_args ? call->tool_args_json : NULL, m->text,
                                m->text ? m->text_len : 0, &rec) != CLARITY_OK)
                r->oom = 1;
            continue;
        }
        if (!m->role || strcmp(m->role, "assistant") != 0) continue;
        if (has_args && m->tool_name) {
            call = m;
            if (edits && progress_is_edit(m->tool_name, m->tool_args_json)) {
                if (e->cfg.codeintel.cochange_hints) hints_note_edit(s, m->tool_args_json);
                if (e->cfg.progress.enabled) progress_note_edit(s);
            }
        }
        scan_assistant(r, m);
    }
}

static int agent_end(engine *e, const clarity_agent_end *p, buf *out, char **err)
{
    const clarity_message *msgs = p->messages;
    size_t n = msgs ? p->n_messages : 0;
    for (size_t i = 0; i < n; i++) {
        if (msgs[i].text && msgs[i].text_len > e->cfg.limits.max_prompt_bytes) {
            *err = errf("%smessages[%llu].text exceeds limits.maxPromptBytes (%llu)", "",
                        (unsigned long long)i, (unsigned long long)e->cfg.limits.max_prompt_bytes);
            return CLARITY_EINVAL;
        }
    }
    session *s;
    int rc = engine_acquire(e, p->session_id, 1, &s);
    if (rc != CLARITY_OK) return acquire_failed(e, rc, p->session_id, err);
    if (CLARITY_HAS_MEMBER(p, clarity_agent_end, workspace_dir) &&
        (rc = set_workspace(s, p->workspace_dir)) != CLARITY_OK) {
        engine_release(e, s);
        return rc;
    }
    const char *key = CLARITY_HAS_MEMBER(p, clarity_agent_end, turn_key) ? p->turn_key : NULL;
    uint64_t kh = key ? tracker_key_hash(key) : 0;
    if (key && tracker_turn_key_seen(&s->t, kh)) { /* a retry of a counted turn */
        buf_puts(out, "duplicate");
        engine_release(e, s);
        return CLARITY_OK;
    }
    ref_ctx r; /* field by field: the queue's 2 KiB need no clearing (only [0, used) is read) */
    r.e = e;
    r.s = s;
    r.now = engine_now_ms(e);
    r.refs = 0;
    r.oom = 0;
    r.nq = r.used = 0;
    scan_turn(&r, msgs, n);
    hints_update(e, s);
    if (r.oom) rc = CLARITY_ENOMEM;
    engine_enforce_cap(e, s);
    if (s->reinject_shown) {
        compact_reinject_clear(s);
        s->t.meta_dirty = 1;
    }
    tracker_advance_turn(&s->t);
    if (key) tracker_turn_key_add(&s->t, kh); /* persisted with the turn */
    int prc = persist_flush(e, s);
    if (prc == STORE_ECONFLICT) { /* hooks_on_event reloads and runs the turn again */
        engine_release(e, s);
        return prc;
    }
    if (prc != CLARITY_OK) {
        *err = util_format("turn %lld was not persisted (%s); it will be retried",
                           (long long)s->t.current_turn, store_errmsg(e->st));
        engine_log(e, CLARITY_LOG_ERROR, "clarity: session %s: %s", s->id, store_errmsg(e->st));
        if (rc == CLARITY_OK) rc = prc;
    }
    engine_release(e, s);
    return rc;
}

/* ---- before_compaction / session_end ----------------------------------- */

static int before_compaction(engine *e, const clarity_before_compaction *p, buf *out)
{
    session *s;
    int rc = engine_acquire(e, p->session_id, 1, &s);
    if (rc != CLARITY_OK) return rc;
    prune_result r;
    rc = pruner_decide(&e->cfg, &e->tables, &s->t, e->cfg.strict_mode, &r);
    if (rc == CLARITY_OK) {
        pruner_apply(&s->t, &r);
        pruner_report(&r, 1, e->cfg.strict_mode, out);
        int64_t msgs = CLARITY_HAS_MEMBER(p, clarity_before_compaction, message_count)
                           ? p->message_count : -1;
        int64_t toks = CLARITY_HAS_MEMBER(p, clarity_before_compaction, token_count)
                           ? p->token_count : -1;
        if (msgs >= 0 || toks >= 0)
            buf_printf(out, "Conversation at compaction: %lld messages, %lld tokens\n",
                       (long long)msgs, (long long)toks);
        pruner_result_free(&r);
        if (s->t.count || s->exists_in_store) rc = persist_flush(e, s);
    }
    engine_release(e, s);
    return rc;
}

static int session_end(engine *e, const clarity_session_end *p)
{
    session *s;
    int rc = engine_acquire(e, p->session_id, 0, &s);
    if (rc == CLARITY_ENOTFOUND) return CLARITY_OK; /* nothing to save */
    if (rc != CLARITY_OK) return rc;
    /* the last turn goes in the log now; the fold into the snapshot is the
     * worker's (engine_fold_later), or this thread's for the host's kv */
    rc = persist_flush(e, s);
    if (rc == CLARITY_OK && !engine_fold_later(e, s)) rc = persist_fold(e, s);
    s->unload = rc == CLARITY_OK;
    const char *reason = CLARITY_HAS_MEMBER(p, clarity_session_end, reason) ? p->reason : NULL;
    engine_log(e, CLARITY_LOG_INFO, "clarity: session %s ended (%s): %zu items persisted", s->id,
               reason ? reason : "no reason", s->t.count);
    engine_release(e, s);
    return rc;
}

/* ---- dispatch ---------------------------------------------------------- */

/* A fenced commit lost to another process (a shared store): the session is
 * reloaded with what that process committed (engine_acquire sees the new
 * version) and the event runs again, at most this many times in all. */
#define CONFLICT_TRIES 8

static int run_before(engine *e, const void *p, buf *out, char **err)
{
    return before_agent_start(e, p, out, err);
}

static int run_end(engine *e, const void *p, buf *out, char **err)
{
    return agent_end(e, p, out, err);
}

/* Before the i-th run again: a random wait that doubles with i (up to
 * ~6 ms), so processes that keep colliding on one session stop moving in
 * step and one of them commits. */
static void conflict_backoff(int i)
{
    static _Thread_local uint64_t x;
    if (!x) x = (uint64_t)(uintptr_t)&x ^ (uint64_t)time(NULL) ^ 0x9e3779b97f4a7c15ull;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    long span_us = 100L << (i < 6 ? i : 6);
    struct timespec ts = {0, (long)(x % (uint64_t)span_us) * 1000L};
    nanosleep(&ts, NULL);
}

/* Runs an event that commits, again while its commit loses the fence. */
static int fenced(engine *e, int (*run)(engine *, const void *, buf *, char **), const void *p,
                  const char *session_id, buf *out, char **err)
{
    int rc = STORE_ECONFLICT;
    for (int i = 0; i < CONFLICT_TRIES && rc == STORE_ECONFLICT; i++) {
        if (i) {
            engine_log(e, CLARITY_LOG_DEBUG, "clarity: session %s: another process committed first; "
                       "reloaded, running the event again", session_id);
            conflict_backoff(i);
        }
        buf_reset(out);
        rc = run(e, p, out, err);
    }
    if (rc != STORE_ECONFLICT) return rc;
    engine_log(e, CLARITY_LOG_ERROR, "clarity: session %s: %d commits in a row lost to other processes",
               session_id, CONFLICT_TRIES);
    free(*err);
    *err = util_format("the session changed under each of %d tries (other processes commit it): "
                       "not counted; send it again", CONFLICT_TRIES);
    return CLARITY_ESTORE;
}

/* Payload structs must at least hold their session id. */
#define PAYLOAD_OK(p, type) ((p) && CLARITY_HAS_MEMBER((p), type, session_id) && (p)->session_id)

int hooks_on_event(engine *e, const clarity_event *ev, buf *out, char **err)
{
    if (!ev || !CLARITY_HAS_MEMBER(ev, clarity_event, data) || ev->version != 1 || !ev->data) {
        if (ev && CLARITY_HAS_MEMBER(ev, clarity_event, data) && ev->version > 1)
            return CLARITY_DECLINED;
        *err = strdup("event: missing payload");
        return CLARITY_EINVAL;
    }
    switch (ev->id) {
    case CLARITY_EV_BEFORE_AGENT_START: {
        const clarity_before_agent_start *p = ev->data;
        if (!PAYLOAD_OK(p, clarity_before_agent_start)) goto bad;
        return fenced(e, run_before, p, p->session_id, out, err);
    }
    case CLARITY_EV_AGENT_END: {
        const clarity_agent_end *p = ev->data;
        if (!PAYLOAD_OK(p, clarity_agent_end)) goto bad;
        return fenced(e, run_end, p, p->session_id, out, err);
    }
    case CLARITY_EV_BEFORE_COMPACTION: {
        const clarity_before_compaction *p = ev->data;
        if (!PAYLOAD_OK(p, clarity_before_compaction)) goto bad;
        return before_compaction(e, p, out);
    }
    case CLARITY_EV_SESSION_END: {
        const clarity_session_end *p = ev->data;
        if (!PAYLOAD_OK(p, clarity_session_end)) goto bad;
        return session_end(e, p);
    }
    case CLARITY_EV_ASSEMBLE: {
        const clarity_assemble *p = ev->data;
        if (!PAYLOAD_OK(p, clarity_assemble) || !CLARITY_HAS_MEMBER(p, clarity_assemble, flags))
            goto bad;
        return assemble_event(e, p, out, err);
    }
    default:
        return CLARITY_DECLINED;
    }
bad:
    *err = strdup("event: payload needs struct_size and a session_id");
    return CLARITY_EINVAL;
}
