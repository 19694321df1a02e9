#include "pruner.h"

#include <stdlib.h>
#include <string.h>

#include "../include/clarity.h"

static int cmp_decision(const void *a, const void *b)
{
    const prune_decision *x = a, *y = b;
    if (x->score.adjusted > y->score.adjusted) return -1;
    if (x->score.adjusted < y->score.adjusted) return 1;
    return strcmp(x->it->id, y->it->id);
}

static int decide(const clarity_config *cfg, int strict, const prune_decision *d,
                  size_t kept, const size_t *kept_by_cat, int *rule)
{
    const item *it = d->it;
    double adj = d->score.adjusted;
    if (it->anchored) return *rule = RULE_ANCHORED, 1;
    if (strict && adj >= cfg->pruning.strict_preserve_threshold) return *rule = RULE_STRICT_SCORE, 1;
    if (it->mention_count >= cfg->pruning.min_mentions_preserve) return *rule = RULE_MIN_MENTIONS, 1;
    if (strict && it->tier == TIER_ESSENTIAL) return *rule = RULE_STRICT_ESSENTIAL, 1;
    if (kept_by_cat[it->category] >= (size_t)cfg->pruning.max_items_per_category)
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
    if (t->count) {
        out->d = calloc(t->count, sizeof *out->d);
        if (!out->d) return CLARITY_ENOMEM;
    }
    for (item *it = t->items; it; it = it->hh.next) {
        if (it->pruned) continue;
        prune_decision *d = &out->d[n++];
        d->it = it;
        scorer_score_with(cfg, tables, it, t->current_turn, 0.0, &d->score);
    }
    out->n = n;
    if (n > 1) qsort(out->d, n, sizeof *out->d, cmp_decision); /* d is NULL without items */

    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        prune_decision *d = &out->d[i];
        int cat = d->it->category >= 0 && d->it->category < CAT__COUNT ? d->it->category : CAT_CUSTOM;
        d->keep = decide(cfg, strict, d, out->kept, out->kept_by_cat, &d->rule);
        if (d->keep) {
            out->kept++;
            out->kept_by_cat[cat]++;
        }
    }
    /* Hard cap: keep the first maxContextItems in evaluation order; anchored
     * items are never cut (the user asked for them explicitly). */
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        prune_decision *d = &out->d[i];
        if (!d->keep) continue;
        if (++seen > (size_t)cfg->pruning.max_context_items && !d->it->anchored) {
            d->keep = 0;
            d->rule = RULE_HARD_CAP;
            out->kept--;
            int cat = d->it->category >= 0 && d->it->category < CAT__COUNT ? d->it->category : CAT_CUSTOM;
            out->kept_by_cat[cat]--;
        }
    }
    for (size_t i = 0; i < n; i++) {
        prune_decision *d = &out->d[i];
        if (d->keep) {
            sum += d->score.adjusted;
            if (d->it->anchored) out->anchored_kept++;
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
