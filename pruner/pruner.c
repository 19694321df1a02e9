#include "pruner.h"

#include <stdlib.h>
#include <string.h>

#include "../include/clarity.h"
#include "../scorer/rank.h"

static int decide(const clarity_config *cfg, int strict, const prune_decision *d,
                  size_t kept, const size_t *kept_by_cat, int *rule)
{
    double adj = d->score.adjusted;
    if (d->anchored) return *rule = RULE_ANCHORED, 1;
    if (strict && adj >= cfg->pruning.strict_preserve_threshold) return *rule = RULE_STRICT_SCORE, 1;
    if (d->mentions >= cfg->pruning.min_mentions_preserve) return *rule = RULE_MIN_MENTIONS, 1;
    if (strict && d->tier == TIER_ESSENTIAL) return *rule = RULE_STRICT_ESSENTIAL, 1;
    if (kept_by_cat[d->category] >= (size_t)cfg->pruning.max_items_per_category)
        return *rule = RULE_CATEGORY_FULL, 0;
    if (adj >= cfg->pruning.prune_threshold) return *rule = RULE_THRESHOLD, 1;
    if (kept < (size_t)cfg->pruning.target_context_items) return *rule = RULE_TARGET, 1;
    return *rule = RULE_BELOW, 0;
}

int pruner_evaluate(const clarity_config *cfg, tracker *t, int strict, prune_result *out)
{
    return pruner_evaluate_with(cfg, NULL, t, strict, out);
}

int pruner_evaluate_with(const clarity_config *cfg, const scorer_tables *tables, tracker *t, int strict,
                         prune_result *out)
{
    memset(out, 0, sizeof *out);
    size_t n = 0;
    rank_ent *r = NULL;
    if (t->count) {
        out->d = malloc(t->count * sizeof *out->d);
        r = malloc(t->count * sizeof *r);
        if (!out->d || !r) {
            free(r);
            pruner_result_free(out);
            return CLARITY_ENOMEM;
        }
    }
    /* one walk over the items; then the rules read only the decisions */
    for (item *it = t->items; it; it = it->hh.next) {
        if (it->pruned) continue;
        prune_decision *d = &out->d[n];
        memset(d, 0, sizeof *d);
        d->it = it;
        scorer_score_with(cfg, tables, it, t->current_turn, 0.0, &d->score);
        d->mentions = it->mention_count;
        d->category = it->category >= 0 && it->category < CAT__COUNT ? it->category : CAT_CUSTOM;
        d->tier = it->tier;
        d->anchored = it->anchored != 0;
        rank_set(&r[n], it->id, d->score.adjusted, n);
        n++;
    }
    out->n = n;
    rank_sort(r, n); /* adjusted score desc, then id */
    int rc = rank_apply(out->d, n, sizeof *out->d, r);
    free(r);
    if (rc != 0) {
        pruner_result_free(out);
        return CLARITY_ENOMEM;
    }

    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        prune_decision *d = &out->d[i];
        d->keep = decide(cfg, strict, d, out->kept, out->kept_by_cat, &d->rule);
        if (d->keep) {
            out->kept++;
            out->kept_by_cat[d->category]++;
        }
    }
    /* Hard cap: keep the first maxContextItems in evaluation order; anchored
     * items are never cut (the user asked for them explicitly). */
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        prune_decision *d = &out->d[i];
        if (!d->keep) continue;
        if (++seen > (size_t)cfg->pruning.max_context_items && !d->anchored) {
            d->keep = 0;
            d->rule = RULE_HARD_CAP;
            out->kept--;
            out->kept_by_cat[d->category]--;
        }
    }
    for (size_t i = 0; i < n; i++) {
        prune_decision *d = &out->d[i];
        if (d->keep) {
            sum += d->score.adjusted;
            if (d->anchored) out->anchored_kept++;
        }
    }
    out->pruned = n - out->kept;
    out->avg_kept_score = out->kept ? sum / (double)out->kept : 0.0;
    return CLARITY_OK;
}

void pruner_apply(tracker *t, const prune_result *r)
{
    for (size_t i = 0; i < r->n; i++) {
        item *it = r->d[i].it;
        if (r->d[i].keep || it->pruned) continue;
        it->pruned = 1;
        it->pruned_turn = t->current_turn;
        tracker_mark_dirty(t, it);
    }
}

const char *pruner_rule_name(int rule)
{
    switch (rule) {
    case RULE_ANCHORED: return "anchored";
    case RULE_STRICT_SCORE: return "strict-score";
    case RULE_MIN_MENTIONS: return "min-mentions";
    case RULE_STRICT_ESSENTIAL: return "strict-essential";
    case RULE_CATEGORY_FULL: return "category-full";
    case RULE_THRESHOLD: return "above-threshold";
    case RULE_TARGET: return "under-target";
    case RULE_BELOW: return "below-threshold";
    case RULE_HARD_CAP: return "hard-cap";
    default: return "unknown";
    }
}

void pruner_report(const prune_result *r, int applied, int strict, buf *out)
{
    buf_printf(out, "[CLARITY PRUNE REPORT]%s\n", applied ? "" : " (dry run)");
    buf_printf(out, "Mode: %s\n", strict ? "strict" : "normal");
    buf_printf(out, "Evaluated: %zu items\nKeeping: %zu\nPruning: %zu\nAnchored kept: %zu\n", r->n,
               r->kept, r->pruned, r->anchored_kept);
    buf_printf(out, "Average kept score: %.1f\n", r->avg_kept_score);
    buf_puts(out, "Kept by category:");
    for (int c = 0; c < CAT__COUNT; c++)
        if (r->kept_by_cat[c]) buf_printf(out, " %s=%zu", tracker_category_name(c), r->kept_by_cat[c]);
    buf_putc(out, '\n');
    size_t shown = 0;
    for (size_t i = 0; i < r->n && shown < 10; i++) {
        if (!r->d[i].keep) continue;
        if (shown++ == 0) buf_puts(out, "Top kept:\n");
        buf_printf(out, "  %s%s %.1f (%s)\n", r->d[i].it->anchored ? "\xE2\x9A\x93 " : "",
                   r->d[i].it->id, r->d[i].score.adjusted, pruner_rule_name(r->d[i].rule));
    }
    shown = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->d[i].keep) continue;
        if (shown == 0) buf_puts(out, "Pruned:\n");
        if (shown++ < 20)
            buf_printf(out, "  - %s %.1f (%s)\n", r->d[i].it->id, r->d[i].score.adjusted,
                       pruner_rule_name(r->d[i].rule));
    }
    if (shown > 20) buf_printf(out, "  ... and %zu more\n", shown - 20);
}

void pruner_result_free(prune_result *r)
{
    free(r->d);
    memset(r, 0, sizeof *r);
}
