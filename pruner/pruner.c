#include "pruner.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../include/clarity.h"
#include "../scorer/rank.h"

_Static_assert(sizeof(prune_decision) <= 32, "prune_decision grew past 32 bytes");

static int decide(const clarity_config *cfg, int strict, const prune_decision *d,
                  size_t kept, const size_t *kept_by_cat, uint8_t *rule)
{
    double adj = d->adjusted;
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

static const char *decision_id(const void *row) { return ((const prune_decision *)row)->it->id; }

static rank_rows rows_of(prune_result *out)
{
    return (rank_rows){out->d, out->n, sizeof *out->d, offsetof(prune_decision, adjusted), decision_id};
}

/* Whether the decisions of the run d[a..b) depend on its order: a
 * category's cap or the target is reached inside it (before the run every
 * item's rules give the same answer whatever its place). */
static int run_order_matters(const clarity_config *cfg, const prune_result *out, const prune_decision *d,
                             size_t a, size_t b)
{
    size_t by_cat[CAT__COUNT] = {0}, cap = (size_t)cfg->pruning.max_items_per_category;
    for (size_t i = a; i < b; i++) by_cat[d[i].category]++;
    for (int c = 0; c < CAT__COUNT; c++)
        if (out->kept_by_cat[c] < cap && out->kept_by_cat[c] + by_cat[c] > cap) return 1;
    size_t target = (size_t)cfg->pruning.target_context_items;
    return !(d[a].adjusted >= cfg->pruning.prune_threshold) && out->kept < target &&
           out->kept + (b - a) > target;
}

/* Scores every unpruned item into out->d and puts them in score order;
 * runs of equal scores stay in tracker order. */
static int score_all(const clarity_config *cfg, const scorer_tables *tables, tracker *t, prune_result *out)
{
    if (!t->count) return CLARITY_OK;
    prune_decision *d = malloc(t->count * sizeof *d);
    if (!d) return CLARITY_ENOMEM;
    size_t n = 0;
    for (item *it = t->items; it; it = it->hh.next) {
        if (it->pruned) continue;
        score_breakdown b;
        scorer_score_with(cfg, tables, it, t->current_turn, 0.0, &b);
        d[n] = (prune_decision){.it = it,
                                .adjusted = b.adjusted,
                                .mentions = it->mention_count < INT32_MAX ? (int32_t)it->mention_count : INT32_MAX,
                                .category = it->category >= 0 && it->category < CAT__COUNT ? it->category : CAT_CUSTOM,
                                .tier = it->tier,
                                .anchored = it->anchored != 0};
        n++;
    }
    out->d = d, out->n = n;
    rank_rows rows = rows_of(out);
    return rank_rows_by_score(&rows) == 0 ? CLARITY_OK : CLARITY_ENOMEM;
}

/* The report lists the first REPORT_KEPT kept and REPORT_PRUNED pruned. */
#define REPORT_KEPT 10
#define REPORT_PRUNED 20

/* Puts in id order every run that holds one of the items the report
 * lists. */
static int sort_listed_runs(prune_result *out)
{
    size_t kept = 0, pruned = 0;
    rank_rows rows = rows_of(out);
    for (size_t a = 0; a < out->n && (kept < REPORT_KEPT || pruned < REPORT_PRUNED);) {
        size_t b = rank_run_end(&rows, a), k = 0;
        for (size_t i = a; i < b; i++) k += (size_t)(out->d[i].keep != 0);
        if (((k && kept < REPORT_KEPT) || (k < b - a && pruned < REPORT_PRUNED)) && rank_run_by_id(&rows, a, b) != 0)
            return -1;
        kept += k, pruned += b - a - k, a = b;
    }
    return 0;
}

static int evaluate(const clarity_config *cfg, const scorer_tables *tables, tracker *t, int strict, int all,
                    prune_result *out)
{
    memset(out, 0, sizeof *out);
    int rc = score_all(cfg, tables, t, out);
    prune_decision *d = out->d;
    size_t n = out->n;
    rank_rows rows = rows_of(out);
    /* the rules in order; a run of equal scores is put in id order first
     * when that order can change a decision (or when asked for all) */
    for (size_t a = 0; a < n && rc == CLARITY_OK;) {
        size_t b = rank_run_end(&rows, a);
        if ((all || run_order_matters(cfg, out, d, a, b)) && rank_run_by_id(&rows, a, b) != 0) rc = CLARITY_ENOMEM;
        for (size_t i = a; i < b; i++) {
            d[i].keep = decide(cfg, strict, &d[i], out->kept, out->kept_by_cat, &d[i].rule);
            if (d[i].keep) {
                out->kept++;
                out->kept_by_cat[d[i].category]++;
            }
        }
        a = b;
    }
    /* Hard cap: keep the first maxContextItems in evaluation order; anchored
     * items are never cut (the user asked for them explicitly).  A run the
     * cap falls inside is put in id order (its decisions so far do not
     * depend on its order, or it is in that order already). */
    size_t seen = 0, cap = (size_t)cfg->pruning.max_context_items;
    for (size_t a = 0; a < n && rc == CLARITY_OK;) {
        size_t b = rank_run_end(&rows, a), k = 0;
        for (size_t i = a; i < b; i++) k += (size_t)(d[i].keep != 0);
        if (!all && seen < cap && seen + k > cap && rank_run_by_id(&rows, a, b) != 0) rc = CLARITY_ENOMEM;
        for (size_t i = a; i < b; i++) {
            if (!d[i].keep) continue;
            if (++seen > cap && !d[i].anchored) {
                d[i].keep = 0;
                d[i].rule = RULE_HARD_CAP;
                out->kept--;
                out->kept_by_cat[d[i].category]--;
            }
        }
        a = b;
    }
    if (rc == CLARITY_OK && !all && sort_listed_runs(out) != 0) rc = CLARITY_ENOMEM;
    if (rc != CLARITY_OK) {
        pruner_result_free(out);
        return rc;
    }
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (d[i].keep) {
            sum += d[i].adjusted;
            if (d[i].anchored) out->anchored_kept++;
        }
    }
    out->pruned = n - out->kept;
    out->avg_kept_score = out->kept ? sum / (double)out->kept : 0.0;
    return CLARITY_OK;
}

int pruner_evaluate(const clarity_config *cfg, tracker *t, int strict, prune_result *out)
{
    return evaluate(cfg, NULL, t, strict, 1, out);
}

int pruner_evaluate_with(const clarity_config *cfg, const scorer_tables *tables, tracker *t, int strict,
                         prune_result *out)
{
    return evaluate(cfg, tables, t, strict, 1, out);
}

int pruner_decide(const clarity_config *cfg, const scorer_tables *tables, tracker *t, int strict,
                  prune_result *out)
{
    return evaluate(cfg, tables, t, strict, 0, out);
}

/* A prune as a bulk one (tracker_bulk_begin) when its kept items are
 * fewer than half the ones it prunes (the record lists them instead), and
 * it prunes at least BULK_MIN: a restore replays a bulk record with a walk
 * over every item, which a handful of ids does not pay for. */
#define BULK_MIN 16

static int begin_bulk(tracker *t, const prune_result *r)
{
    if (r->pruned < BULK_MIN || r->kept >= r->pruned / 2) return 0;
    item **kept = malloc((r->kept ? r->kept : 1) * sizeof *kept);
    if (!kept) return 0;
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->d[i].keep) kept[k++] = r->d[i].it;
    return tracker_bulk_begin(t, kept, k) == 0;
}

void pruner_apply(tracker *t, const prune_result *r)
{
    int bulk = begin_bulk(t, r);
    for (size_t i = 0; i < r->n; i++)
        if (!r->d[i].keep && !r->d[i].it->pruned) tracker_prune(t, r->d[i].it, bulk);
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
    for (size_t i = 0; i < r->n && shown < REPORT_KEPT; i++) {
        if (!r->d[i].keep) continue;
        if (shown++ == 0) buf_puts(out, "Top kept:\n");
        buf_printf(out, "  %s%s %.1f (%s)\n", r->d[i].it->anchored ? "\xE2\x9A\x93 " : "",
                   r->d[i].it->id, r->d[i].adjusted, pruner_rule_name(r->d[i].rule));
    }
    shown = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->d[i].keep) continue;
        if (shown == 0) buf_puts(out, "Pruned:\n");
        if (shown++ < REPORT_PRUNED)
            buf_printf(out, "  - %s %.1f (%s)\n", r->d[i].it->id, r->d[i].adjusted,
                       pruner_rule_name(r->d[i].rule));
    }
    if (shown > REPORT_PRUNED) buf_printf(out, "  ... and %zu more\n", shown - REPORT_PRUNED);
}

void pruner_result_free(prune_result *r)
{
    free(r->d);
    memset(r, 0, sizeof *r);
}
