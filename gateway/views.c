/* views.c: sorted scores, state and stats as JSON, and item lookup. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"
#include "../scorer/rank.h"

static const char *scored_id(const void *row) { return ((const scored_item *)row)->it->id; }

size_t view_sorted(engine *e, session *s, int include_pruned, size_t exact, scored_item **v)
{
    *v = NULL;
    if (s->t.count == 0) return 0;
    scored_item *a = malloc(s->t.count * sizeof *a);
    if (!a) return (size_t)-1;
    size_t n = 0;
    for (item *it = s->t.items; it; it = it->hh.next) {
        if (it->pruned && !include_pruned) continue;
        a[n].it = it;
        engine_score(e, s, it, s->t.current_turn, &a[n].b);
        n++;
    }
    rank_rows rows = {a, n, sizeof *a, offsetof(scored_item, b.score), scored_id};
    int rc = rank_rows_by_score(&rows);
    for (size_t i = 0; rc == 0 && i < n && i < exact;) { /* the runs the caller reads, by id */
        size_t j = rank_run_end(&rows, i);
        rc = rank_run_by_id(&rows, i, j);
        i = j;
    }
    if (rc != 0) {
        free(a);
        return (size_t)-1;
    }
    *v = a;
    return n;
}

/* Scores are rounded to 3 decimals so JSON stays stable across platforms. */
static void num(buf *out, const char *key, double v, int comma)
{
    buf_puts(out, comma ? ",\"" : "\"");
    buf_puts(out, key);
    buf_puts(out, "\":");
    buf_put_f3(out, v);
}

static void item_json(const scored_item *si, buf *out)
{
    const item *it = si->it;
    buf_puts(out, "{\"id\":");
    buf_json_str(out, it->id, tracker_id_len(it));
    buf_printf(out, ",\"category\":\"%s\"", tracker_category_name(it->category));
    num(out, "score", si->b.score, 1);
    buf_puts(out, ",\"breakdown\":{");
    num(out, "frequency", si->b.frequency, 0);
    num(out, "recency", si->b.recency, 1);
    num(out, "utility", si->b.utility, 1);
    num(out, "stalenessPenalty", si->b.staleness, 1);
    num(out, "anchor", si->b.anchor, 1);
    num(out, "prediction", si->b.prediction, 1);
    buf_putc(out, '}');
    num(out, "adjustedScore", si->b.adjusted, 1);
    buf_printf(out,
               ",\"mentionCount\":%lld,\"referenceCount\":%lld,\"firstSeenTurn\":%lld,"
               "\"lastMentionTurn\":%lld,\"lastReferenceTurn\":%lld,\"anchored\":%s,"
               "\"tier\":\"%s\",\"pruned\":%s}",
               (long long)it->mention_count, (long long)it->reference_count,
               (long long)it->first_seen_turn, (long long)it->last_mention_turn,
               (long long)it->last_reference_turn, it->anchored ? "true" : "false",
               tracker_tier_name(it->tier), it->pruned ? "true" : "false");
}

static void session_head(session *s, buf *out)
{
    buf_puts(out, "{\"session\":");
    buf_json_str(out, s->id, strlen(s->id));
    buf_printf(out, ",\"currentTurn\":%lld", (long long)s->t.current_turn);
}

void view_scores_json(engine *e, session *s, size_t limit, int include_pruned, buf *out)
{
    scored_item *v;
    size_t n = view_sorted(e, s, include_pruned, limit, &v);
    if (n == (size_t)-1) {
        out->oom = 1;
        return;
    }
    session_head(s, out);
    buf_puts(out, ",\"items\":[");
    for (size_t i = 0; i < n && i < limit; i++) {
        if (i) buf_putc(out, ',');
        item_json(&v[i], out);
    }
    buf_puts(out, "]}");
    free(v);
}

void view_state_json(engine *e, session *s, buf *out)
{
    scored_item *v;
    size_t n = view_sorted(e, s, 1, (size_t)-1, &v);
    if (n == (size_t)-1) {
        out->oom = 1;
        return;
    }
    session_head(s, out);
    buf_printf(out, ",\"lastPersistAt\":%lld,\"workspace\":", (long long)s->t.last_persist_ms);
    if (s->workspace) buf_json_str(out, s->workspace, strlen(s->workspace));
    else buf_puts(out, "null");
    buf_printf(out, ",\"itemCount\":%zu,\"enabled\":%s,\"strictMode\":%s,\"items\":[", n,
               e->cfg.enabled ? "true" : "false", e->cfg.strict_mode ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        if (i) buf_putc(out, ',');
        item_json(&v[i], out);
        /* extend the object with history and anchor details */
        out->len--;
        int64_t h[ITEM_HISTORY_MAX];
        size_t hn = tracker_history(v[i].it, h, ITEM_HISTORY_MAX);
        buf_puts(out, ",\"mentionHistory\":[");
        for (size_t j = 0; j < hn; j++) buf_printf(out, "%s%lld", j ? "," : "", (long long)h[j]);
        buf_printf(out, "],\"createdAt\":%lld", (long long)v[i].it->created_at_ms);
        if (v[i].it->anchored) {
            buf_printf(out, ",\"anchorSetAt\":%lld,\"anchorReason\":",
                       (long long)v[i].it->anchor_at_ms);
            const char *r = v[i].it->anchor_reason;
            if (r) buf_json_str(out, r, strlen(r));
            else buf_puts(out, "null");
        }
        buf_putc(out, '}');
    }
    buf_puts(out, "]}");
    free(v);
}

void view_stats_json(engine *e, session *s, buf *out)
{
    scored_item *v;
    size_t n = view_sorted(e, s, 1, (size_t)-1, &v); /* its top 5 skip pruned items */
    if (n == (size_t)-1) {
        out->oom = 1;
        return;
    }
    size_t anchored = 0, pruned = 0, by_cat[CAT__COUNT] = {0};
    double mentions = 0, score = 0;
    for (size_t i = 0; i < n; i++) {
        anchored += v[i].it->anchored != 0;
        pruned += v[i].it->pruned != 0;
        by_cat[v[i].it->category >= 0 && v[i].it->category < CAT__COUNT ? v[i].it->category
                                                                         : CAT_CUSTOM]++;
        mentions += (double)v[i].it->mention_count;
        score += v[i].b.score;
    }
    session_head(s, out);
    buf_printf(out, ",\"totalItems\":%zu,\"anchoredItems\":%zu,\"prunedItems\":%zu", n, anchored,
               pruned);
    num(out, "averageMentions", n ? mentions / (double)n : 0, 1);
    num(out, "averageScore", n ? score / (double)n : 0, 1);
    buf_puts(out, ",\"byCategory\":{");
    for (int c = 0; c < CAT__COUNT; c++)
        buf_printf(out, "%s\"%s\":%zu", c ? "," : "", tracker_category_name(c), by_cat[c]);
    buf_printf(out, "},\"maxTrackedItems\":%d,\"store\":\"%s\"", e->cfg.limits.max_tracked_items,
               store_backend_name(e->st));
    /* SQLite: whether its WAL is checkpointed off the hooks' thread */
    store_ckpt_stats ck;
    if (store_sqlite_ckpt_stats(e->st, &ck) == CLARITY_OK)
        buf_printf(out, ",\"walCheckpoints\":{\"background\":%lu,\"copied\":%lu,\"onCommit\":%lu}",
                   ck.background, ck.background_copied, ck.on_commit);
    buf_puts(out, ",\"topItems\":[");
    size_t shown = 0;
    for (size_t i = 0; i < n && shown < 5; i++) {
        if (v[i].it->pruned) continue;
        buf_puts(out, shown++ ? ",{\"id\":" : "{\"id\":");
        buf_json_str(out, v[i].it->id, strlen(v[i].it->id));
        num(out, "score", v[i].b.score, 1);
        buf_printf(out, ",\"mentions\":%lld,\"anchored\":%s}", (long long)v[i].it->mention_count,
                   v[i].it->anchored ? "true" : "false");
    }
    buf_puts(out, "]}");
    free(v);
}

void view_prune_json(const prune_result *r, const char *session_id, int applied, int strict,
                     buf *out)
{
    buf_puts(out, "{\"session\":");
    buf_json_str(out, session_id, strlen(session_id));
    buf_printf(out,
               ",\"applied\":%s,\"evaluated\":%zu,\"kept\":%zu,\"pruned\":%zu,"
               "\"anchoredKept\":%zu",
               applied ? "true" : "false", r->n, r->kept, r->pruned, r->anchored_kept);
    num(out, "averageKeptScore", r->avg_kept_score, 1);
    buf_puts(out, ",\"decisions\":[");
    for (size_t i = 0; i < r->n; i++) {
        buf_puts(out, i ? ",{\"id\":" : "{\"id\":");
        buf_json_str(out, r->d[i].it->id, tracker_id_len(r->d[i].it));
        buf_puts(out, r->d[i].keep ? ",\"keep\":true,\"rule\":\"" : ",\"keep\":false,\"rule\":\"");
        buf_puts(out, pruner_rule_name(r->d[i].rule));
        buf_putc(out, '"');
        num(out, "adjustedScore", r->d[i].adjusted, 1);
        buf_putc(out, '}');
    }
    buf_puts(out, "],\"report\":");
    buf b;
    buf_init(&b);
    pruner_report(r, applied, strict, &b);
    buf_json_str(out, b.p ? b.p : "", b.len);
    if (buf_failed(&b)) out->oom = 1;
    buf_free(&b);
    buf_putc(out, '}');
}

typedef struct lookup_ctx {
    session *s;
    item *found;
    char *first;
} lookup_ctx;

static int lookup_form(void *ud, const char *id, int category)
{
    lookup_ctx *c = ud;
    if (!c->first) c->first = strdup(id);
    item *it = tracker_find(&c->s->t, id);
    if (it) {
        c->found = it;
        return 1;
    }
    return 0;
}

item *view_lookup(engine *e, session *s, const char *name, char **canonical)
{
    lookup_ctx c = {s, NULL, NULL};
    extract_lookup_forms(e->ex, name, s->workspace, lookup_form, &c);
    if (c.found) {
        free(c.first);
        c.first = strdup(c.found->id);
    }
    if (canonical) *canonical = c.first;
    else free(c.first);
    return c.found;
}
