/* assemble.c: CLARITY_EV_ASSEMBLE, the decisions (see assemble.h). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "../util/tokens.h"
#include "asm_impl.h"

#undef uthash_nonfatal_oom
#define uthash_nonfatal_oom(obj) (oom = 1)

/* Candidate classes, stubbed in this order. */
enum { CL_NONE = 0, CL_COLD, CL_TOOL, CL_TEXT, CL_USER };

/* One message of this call. */
typedef struct aview {
    const clarity_ctx_message *m;
    amsg *a;
    int protect;      /* never touched */
    int cls;          /* candidate class, CL_NONE when not a candidate */
    item *it;         /* its best tracked item (the tool call's file first) */
    double score;     /* of that item: the message's score */
    int64_t tokens;   /* as assembled now */
    astub *stub;      /* the decision in force, or NULL */
    size_t call;      /* a tool result's call (index), or SIZE_MAX */
} aview;

/* Tracked items by the hash of their id, for the lookups of a batch. */
typedef struct imap {
    uint64_t *h;
    item **it;
    size_t cap;
} imap;

static int imap_build(imap *m, tracker *t)
{
    m->cap = 16;
    while (m->cap < t->count * 2 + 2) m->cap *= 2;
    m->h = calloc(m->cap, sizeof *m->h);
    m->it = calloc(m->cap, sizeof *m->it);
    if (!m->h || !m->it) return -1;
    for (item *it = t->items; it; it = it->hh.next) {
        uint64_t h = asm_hash(it->id, tracker_id_len(it)) | 1; /* 0 marks an empty slot */
        size_t i = h & (m->cap - 1);
        while (m->h[i]) i = (i + 1) & (m->cap - 1);
        m->h[i] = h;
        m->it[i] = it;
    }
    return 0;
}

static item *imap_get(const imap *m, uint64_t h)
{
    h |= 1;
    for (size_t i = h & (m->cap - 1); m->h[i]; i = (i + 1) & (m->cap - 1))
        if (m->h[i] == h) return m->it[i];
    return NULL;
}

static void imap_free(imap *m)
{
    free(m->h);
    free(m->it);
}

static int is_role(const clarity_ctx_message *m, const char *r) { return strcmp(m->role, r) == 0; }

/* The message's best item: the file its tool call names (or, for a tool
 * result, its call's), else its best-scoring tracked item; anchored items
 * protect it.  Sets v->it, v->score; returns 1 when it carries an anchor. */
static int message_items(engine *e, session *s, const imap *map, aview *v, const aview *call)
{
    const char *file = v->a->file ? v->a->file : call && call->a->file ? call->a->file : NULL;
    item *best = file ? tracker_find(&s->t, file) : NULL;
    score_breakdown b;
    double best_score = -1;
    if (best) {
        engine_score(e, s, best, s->t.current_turn, &b);
        best_score = best->pruned ? 0 : b.score;
    }
    int anchored = best && best->anchored;
    for (size_t i = 0; i < v->a->n_cands; i++) {
        item *it = imap_get(map, v->a->cands[i]);
        if (!it) continue;
        anchored |= it->anchored;
        if (file) continue; /* the tool call's file speaks for the message */
        engine_score(e, s, it, s->t.current_turn, &b);
        double sc = it->pruned ? 0 : b.score;
        if (sc > best_score || (sc == best_score && strcmp(it->id, best->id) < 0)) {
            best = it;
            best_score = sc;
        }
    }
    v->it = best;
    v->score = best ? best_score : 0;
    return anchored;
}

/* The turn of each message, as far as recency goes: a user message opens
 * one, and so does each step of an agent loop (an assistant message after a
 * tool result), so a long autonomous run is not one protected turn. */
static void turns_of(const clarity_assemble *p, int64_t *turn, int64_t *last)
{
    int64_t t = 0;
    for (size_t i = 0; i < p->n_messages; i++) {
        const clarity_ctx_message *m = &p->messages[i];
        if (is_role(m, "user") || (is_role(m, "assistant") && i > 0 && is_role(&p->messages[i - 1], "tool")))
            t++;
        turn[i] = t;
    }
    *last = t;
}

/* The oldest turn still protected as recent: the last protectRecentTurns
 * turns, as far as their tokens stay within protectShare of the budget (a
 * few huge tool outputs must not make the budget unmeetable); the newest
 * turn always, however large (the model must see the output of the call it
 * just made), and the turn in progress anyway. */
static int64_t recent_from(const clarity_config *c, const clarity_assemble *p, aview *v,
                           const int64_t *turn, int64_t last_turn)
{
    /* the protected turns come before the turn in progress */
    int64_t current = p->current_turn_start < p->n_messages ? turn[p->current_turn_start] : last_turn + 1;
    int64_t from = current - c->assemble.protect_recent_turns;
    int64_t budget = p->token_budget, mx = c->assemble.max_tokens;
    if (mx > 0 && (budget <= 0 || mx < budget)) budget = mx;
    if (budget <= 0) return from;
    int64_t cap = (int64_t)(c->assemble.protect_share * (double)budget), used = 0;
    size_t i = p->n_messages;
    while (i > 0 && turn[i - 1] >= current) i--; /* the turn in progress: protected anyway */
    for (int64_t t = current - 1; t >= from; t--) {
        int64_t tok = 0;
        size_t j = i;
        while (j > 0 && turn[j - 1] == t) tok += v[--j].a->tokens;
        if (used + tok > cap && t < current - 1) return t + 1; /* the newest is kept whole */
        used += tok;
        i = j;
    }
    return from;
}

/* Each tool result's call: the nearest earlier message with its call id
 * (hosts put it right before; the search is bounded). */
static void find_calls(aview *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const clarity_ctx_message *m = v[i].m;
        v[i].call = SIZE_MAX;
        if (!m->tool_call_id || !is_role(m, "tool")) continue;
        for (size_t j = i, k = 0; j-- > 0 && k < 256; k++)
            if (v[j].m->tool_call_id && strcmp(v[j].m->tool_call_id, m->tool_call_id) == 0) {
                v[i].call = j;
                break;
            }
    }
}

/* The hashes of the anchored items, sorted (few). */
static size_t anchored_hashes(session *s, uint64_t **out)
{
    size_t n = 0, cap = 0;
    *out = NULL;
    for (item *it = s->t.items; it; it = it->hh.next) {
        if (!it->anchored) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            uint64_t *v = realloc(*out, cap * sizeof *v);
            if (!v) break;
            *out = v;
        }
        (*out)[n++] = asm_hash(it->id, tracker_id_len(it));
    }
    return n;
}

/* Whether the message (or its tool call) names an anchored item. */
static int carries_anchor(const aview *v, const aview *views, const uint64_t *anch, size_t na)
{
    for (size_t k = 0; k < na; k++)
        if (asm_has(v->a, anch[k]) || (v->call != SIZE_MAX && asm_has(views[v->call].a, anch[k])))
            return 1;
    return 0;
}

/* Protection that needs no scores: system, the turn in progress, the
 * recent turns, keep patterns, anchored items. */
static void protect(engine *e, const clarity_assemble *p, aview *v, const int64_t *turn,
                    int64_t last_turn, const uint64_t *anch, size_t na)
{
    int64_t recent = recent_from(&e->cfg, p, v, turn, last_turn) - 1; /* turns after it are recent */
    for (size_t i = 0; i < p->n_messages; i++)
        v[i].protect = is_role(v[i].m, "system") || i >= p->current_turn_start || turn[i] > recent ||
                       v[i].a->keep || carries_anchor(&v[i], v, anch, na);
}

/* The candidates of a batch and their class (their items scored). */
static void classify(engine *e, session *s, aview *v, size_t n, const imap *map)
{
    const clarity_config *c = &e->cfg;
    for (size_t i = 0; i < n; i++) {
        v[i].cls = CL_NONE;
        if (v[i].protect || v[i].stub || v[i].a->tokens < c->assemble.stub_min_tokens) continue;
        const clarity_ctx_message *m = v[i].m;
        message_items(e, s, map, &v[i], v[i].call != SIZE_MAX ? &v[v[i].call] : NULL);
        int cold = !v[i].it || v[i].it->pruned || v[i].score < c->pruning.prune_threshold;
        if (is_role(m, "tool") || (m->tool_args_json && v[i].a->arg_tokens >= c->assemble.args_min_tokens))
            v[i].cls = cold ? CL_COLD : CL_TOOL;
        else if (is_role(m, "user")) v[i].cls = CL_USER;
        else v[i].cls = CL_TEXT;
    }
}

/* "12,345" */
static void thousands(char *out, size_t n, int64_t v)
{
    char d[32];
    int len = snprintf(d, sizeof d, "%lld", (long long)v), o = 0;
    for (int i = 0; i < len && (size_t)o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0) out[o++] = ',';
        out[o++] = d[i];
    }
    out[o] = '\0';
}

/* The replacement: what was elided, why, and how to get it back. */
static char *stub_text(const aview *v, const char *subject)
{
    char tok[32];
    thousands(tok, sizeof tok, v->a->tokens);
    const clarity_ctx_message *m = v->m;
    const char *what = m->tool_name ? m->tool_name : is_role(m, "tool") ? "tool" : m->role;
    const char *kind = is_role(m, "tool") ? "output" : m->tool_args_json ? "call" : "message";
    if (!subject)
        return util_format("[clarity: %s tokens of %s %s elided (nothing tracked in it). Ask for it "
                           "again if it matters]", tok, what, kind);
    const char *colon = strchr(subject, ':');
    return util_format("[clarity: %s tokens of %s %s about %s elided (%s, score %.1f). "
                       "/clarity anchor %s keeps it]",
                       tok, what, kind, colon ? colon + 1 : subject, subject, v->score, subject);
}

/* What a stub is about: its best tracked item, else the file its tool call
 * names (anchoring that one brings the message back). */
static const char *subject_of(const aview *v, const aview *views)
{
    if (v->it) return v->it->id;
    if (v->a->file) return v->a->file;
    if (v->call != SIZE_MAX && views[v->call].a->file) return views[v->call].a->file;
    return NULL;
}

typedef struct pick {
    size_t i;
    int cls;
    double score;
} pick;

static int cmp_pick(const void *a, const void *b)
{
    const pick *x = a, *y = b;
    if (x->cls != y->cls) return x->cls - y->cls;
    if (x->score != y->score) return x->score < y->score ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i; /* the oldest first */
}

/* Records a decision for message x: its stub (or, with drop, nothing). */
static int decide(session *s, aview *x, const aview *views, int drop, int64_t *total)
{
    asm_state *st = s->asm_;
    const char *subject = subject_of(x, views);
    astub *t = calloc(1, sizeof *t);
    int oom = 0;
    if (!t || !(t->id = strdup(x->a->id)) || !(t->text = drop ? strdup("") : stub_text(x, subject)) ||
        (subject && !(t->item = strdup(subject)))) {
        if (t) asm_stub_free(t);
        return CLARITY_ENOMEM;
    }
    t->turn = s->t.current_turn;
    item *about = subject ? tracker_find(&s->t, subject) : NULL;
    t->mentions = about ? about->mention_count : 0;
    t->tokens = x->a->tokens;
    t->fp = x->a->fp;
    t->score = x->score;
    t->drop = drop;
    HASH_ADD_KEYPTR(hh, st->stubs, t->id, strlen(t->id), t);
    if (oom) {
        asm_stub_free(t);
        return CLARITY_ENOMEM;
    }
    int64_t after = drop ? 0 : util_estimate_tokens(t->text, strlen(t->text));
    *total -= x->tokens - after;
    x->tokens = after;
    x->stub = t;
    return CLARITY_OK;
}

/* Whether stubbing the user messages among pk[k..np) brings total within
 * the budget.  User messages carry the intent: they are stubbed only when
 * the budget is missed without it and met with it. */
static int users_meet_budget(const aview *v, const pick *pk, size_t k, size_t np, int64_t total,
                             int64_t budget)
{
    for (; k < np && total > budget; k++) {
        const aview *x = &v[pk[k].i];
        if (x->stub) continue;
        char *text = stub_text(x, subject_of(x, v));
        if (!text) return 0;
        total -= x->tokens - util_estimate_tokens(text, strlen(text));
        free(text);
    }
    return total <= budget;
}

/* One batch: stubs candidates, coldest first, until total <= target.  With
 * drop, a cold tool result goes with its call when neither is protected:
 * the pair leaves together, never split. */
static int batch(session *s, aview *v, size_t n, int drop, int64_t *total, int64_t target,
                 int64_t budget, int *changed)
{
    asm_state *st = s->asm_;
    pick *pk = malloc((n ? n : 1) * sizeof *pk);
    if (!pk) return CLARITY_ENOMEM;
    size_t np = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].cls != CL_NONE && !v[i].stub) pk[np++] = (pick){i, v[i].cls, v[i].score};
    qsort(pk, np, sizeof *pk, cmp_pick);
    int rc = CLARITY_OK;
    for (size_t k = 0; rc == CLARITY_OK && k < np && *total > target; k++) {
        aview *x = &v[pk[k].i];
        if (x->stub) continue; /* dropped with its pair already */
        if (pk[k].cls == CL_USER && (*total <= budget || !users_meet_budget(v, pk, k, np, *total, budget)))
            break; /* the budget is met without them, or cannot be met with them */
        aview *call = x->call != SIZE_MAX ? &v[x->call] : NULL;
        int pair = drop && pk[k].cls == CL_COLD && call && !call->protect;
        if (pair && call->stub) { /* its call was stubbed: drop both now */
            astub *old = call->stub;
            *total += call->a->tokens - call->tokens;
            call->tokens = call->a->tokens;
            call->stub = NULL;
            HASH_DEL(st->stubs, old);
            asm_stub_free(old);
        }
        rc = decide(s, x, v, pair, total);
        if (rc == CLARITY_OK && pair) rc = decide(s, call, v, 1, total);
        *changed = 1;
    }
    free(pk);
    return rc;
}

/* The stubs in force: kept, or revived (the item mentioned again since,
 * anchored, the message now protected, or its content changed). */
static void apply_stubs(session *s, aview *v, size_t n, int *changed)
{
    asm_state *st = s->asm_;
    for (size_t i = 0; i < n; i++) {
        astub *t;
        HASH_FIND_STR(st->stubs, v[i].a->id, t);
        v[i].tokens = v[i].a->tokens;
        v[i].stub = NULL;
        if (!t) continue;
        item *it = t->item ? tracker_find(&s->t, t->item) : NULL;
        int stale = t->fp && t->fp != v[i].a->fp; /* new content under the id: not what was decided on */
        int revive = stale || v[i].protect || (it && (it->anchored || it->mention_count > t->mentions));
        if (revive) {
            HASH_DEL(st->stubs, t);
            asm_stub_free(t);
            *changed = 1;
            continue;
        }
        v[i].stub = t;
        v[i].tokens = util_estimate_tokens(t->text, strlen(t->text));
    }
}

/* A dropped pair is never split: when one side came back, so does the
 * other. */
static void keep_pairs_whole(session *s, aview *v, size_t n, int *changed)
{
    asm_state *st = s->asm_;
    for (size_t i = 0; i < n; i++) {
        if (v[i].call == SIZE_MAX) continue;
        aview *c = &v[v[i].call];
        int a = v[i].stub && v[i].stub->drop, b = c->stub && c->stub->drop;
        if (a == b) continue;
        aview *x = a ? &v[i] : c;
        HASH_DEL(st->stubs, x->stub);
        asm_stub_free(x->stub);
        x->stub = NULL;
        x->tokens = x->a->tokens;
        *changed = 1;
    }
}

/* The result (clarity.h), without the block, into out. */
static void result_json(const clarity_assemble *p, aview *v, int64_t before, int64_t after,
                        int64_t budget, int64_t batch_no, int changed, buf *out)
{
    buf_printf(out, "{\"tokensBefore\":%lld,\"tokensAfter\":%lld,\"budget\":%lld,\"met\":%s,"
                    "\"batch\":%lld,\"changed\":%s,\"actions\":[",
               (long long)before, (long long)after, (long long)budget,
               budget <= 0 || after <= budget ? "true" : "false", (long long)batch_no,
               changed ? "true" : "false");
    int first = 1;
    for (size_t i = 0; i < p->n_messages; i++) {
        astub *t = v[i].stub;
        if (!t) continue;
        buf_printf(out, "%s{\"index\":%zu,\"id\":", first ? "" : ",", i);
        first = 0;
        buf_json_str(out, t->id, strlen(t->id));
        buf_printf(out, ",\"action\":\"%s\"", t->drop ? "drop" : "stub");
        if (!t->drop) {
            buf_puts(out, ",\"text\":");
            buf_json_str(out, t->text, strlen(t->text));
        }
        buf_printf(out, ",\"tokens\":%lld,\"score\":%.1f", (long long)t->tokens, t->score);
        if (t->item) {
            buf_puts(out, ",\"item\":");
            buf_json_str(out, t->item, strlen(t->item));
        }
        buf_putc(out, '}');
    }
    buf_putc(out, ']');
}

static const char *check(const clarity_assemble *p)
{
    if (p->n_messages && !p->messages) return "assemble: messages is NULL";
    for (size_t i = 0; i < p->n_messages; i++) {
        const clarity_ctx_message *m = &p->messages[i];
        if (!CLARITY_HAS_MEMBER(m, clarity_ctx_message, tokens) || !m->id || !*m->id || !m->role)
            return "assemble: every message needs struct_size, an id and a role";
        if (m->text_len && !m->text) return "assemble: a message has text_len but no text";
    }
    return NULL;
}

static int assemble_session(engine *e, session *s, const clarity_assemble *p, buf *out, char **err)
{
    asm_state *st = asm_state_of(e, s);
    if (!st) return CLARITY_ENOMEM;
    size_t n = p->n_messages;
    aview *v = calloc(n ? n : 1, sizeof *v);
    int64_t *turn = calloc(n ? n : 1, sizeof *turn);
    imap map = {0};
    uint64_t *anch = NULL;
    size_t na = anchored_hashes(s, &anch);
    int rc = v && turn ? CLARITY_OK : CLARITY_ENOMEM;
    st->gen++;
    for (size_t i = 0; rc == CLARITY_OK && i < n; i++) {
        v[i].m = &p->messages[i];
        int dup = 0;
        if (!(v[i].a = asm_message(e, s, v[i].m, st->gen, &dup))) rc = dup ? CLARITY_EINVAL : CLARITY_ENOMEM;
        if (dup) *err = util_format("assemble: messages[%zu]: the id \"%s\" is used twice", i, v[i].m->id);
    }
    int changed = 0;
    int64_t before = 0, total = 0, last_turn = 0;
    if (rc == CLARITY_OK) {
        asm_forget_unseen(st);
        turns_of(p, turn, &last_turn);
        find_calls(v, n);
        protect(e, p, v, turn, last_turn, anch, na);
        apply_stubs(s, v, n, &changed);
        keep_pairs_whole(s, v, n, &changed);
        for (size_t i = 0; i < n; i++) {
            before += v[i].a->tokens;
            total += v[i].tokens;
        }
        int64_t budget = p->token_budget, cap = e->cfg.assemble.max_tokens;
        if (cap > 0 && (budget <= 0 || cap < budget)) budget = cap;
        if (budget > 0 && e->cfg.assemble.enabled && total > budget * e->cfg.assemble.high_water) {
            int stubbed = 0;
            rc = imap_build(&map, &s->t) == 0 ? CLARITY_OK : CLARITY_ENOMEM;
            if (rc == CLARITY_OK) classify(e, s, v, n, &map);
            if (rc == CLARITY_OK) rc = batch(s, v, n, (p->flags & CLARITY_ASSEMBLE_MAY_DROP) != 0, &total,
                       (int64_t)(budget * e->cfg.assemble.low_water), budget, &stubbed);
            if (rc == CLARITY_OK && stubbed) st->batch++;
            changed |= stubbed;
        }
        if (changed && rc == CLARITY_OK && asm_save(e, s) != CLARITY_OK)
            engine_log(e, CLARITY_LOG_WARN, "clarity: session %s: the assembly decisions were not "
                       "persisted: %s", s->id, store_errmsg(e->st));
        buf_reset(&st->last);
        result_json(p, v, before, total, budget, st->batch, changed, &st->last);
        buf_putc(&st->last, '}');
        if (rc == CLARITY_OK) {
            buf_append(out, st->last.p, st->last.len - 1);
            buf block;
            buf_init(&block);
            block_write(e, s, &block);
            buf_puts(out, ",\"block\":");
            buf_json_str(out, block.p ? block.p : "", block.len);
            buf_putc(out, '}');
            buf_free(&block);
        }
    }
    imap_free(&map);
    free(anch);
    free(turn);
    free(v);
    return rc;
}

int assemble_event(engine *e, const void *payload, buf *out, char **err)
{
    const clarity_assemble *p = payload;
    const char *bad = check(p);
    if (bad) {
        *err = strdup(bad);
        return CLARITY_EINVAL;
    }
    session *s;
    int rc = engine_acquire(e, p->session_id, 1, &s);
    if (rc != CLARITY_OK) return rc;
    rc = assemble_session(e, s, p, out, err);
    engine_release(e, s);
    return rc;
}

void assemble_report_json(session *s, buf *out)
{
    if (!s->asm_ || !s->asm_->last.len) buf_puts(out, "null");
    else buf_append(out, s->asm_->last.p, s->asm_->last.len);
}

void assemble_report_text(session *s, buf *out)
{
    if (!s->asm_ || !s->asm_->last.len) {
        buf_printf(out, "Clarity context, session %s: no assembly yet (the host does not send "
                        "CLARITY_EV_ASSEMBLE, or not since this process started)\n", s->id);
        return;
    }
    json_t *j = json_loadb(s->asm_->last.p, s->asm_->last.len, 0, NULL);
    json_t *acts = json_object_get(j, "actions");
    buf_printf(out, "Clarity context, session %s: %lld tokens -> %lld (budget %lld%s), batch %lld, "
                    "%zu message(s) elided\n",
               s->id, (long long)json_integer_value(json_object_get(j, "tokensBefore")),
               (long long)json_integer_value(json_object_get(j, "tokensAfter")),
               (long long)json_integer_value(json_object_get(j, "budget")),
               json_is_true(json_object_get(j, "met")) ? "" : ", NOT met",
               (long long)json_integer_value(json_object_get(j, "batch")), json_array_size(acts));
    size_t i;
    json_t *a;
    json_array_foreach(acts, i, a) {
        const char *about = json_string_value(json_object_get(a, "item"));
        buf_printf(out, "  #%lld %-6s %6lld tokens  %s (score %.1f)\n",
                   (long long)json_integer_value(json_object_get(a, "index")),
                   json_string_value(json_object_get(a, "action")),
                   (long long)json_integer_value(json_object_get(a, "tokens")),
                   about ? about : "(nothing tracked)", json_number_value(json_object_get(a, "score")));
    }
    json_decref(j);
}
