/* pruner.h: keep/prune decisions over a session's items.
 *
 * Items are evaluated in descending adjusted score (score x tier
 * multiplier; ties by id), and the first rule that applies decides:
 *   1. anchored                                              -> keep
 *   2. strict mode and adjusted >= strictModePreserveThreshold -> keep
 *   3. mentionCount >= minMentionsPreserve                     -> keep
 *   4. strict mode and tier essential                          -> keep
 *   5. category already holds maxItemsPerCategory kept items   -> prune
 *   6. adjusted >= pruneThreshold                              -> keep
 *   7. fewer than targetContextItems kept so far               -> keep
 *   8. otherwise                                               -> prune
 * Then a hard cap: kept items beyond maxContextItems are pruned, lowest
 * first, except anchored ones.  Items already pruned are not evaluated.
 *
 * Items are sorted by score alone first (scores tie in long runs: they
 * are functions of a few small counters); a run of equal scores is then
 * put in id order when the rules or the caller need that order.
 */
#ifndef PRUNER_PRUNER_H
#define PRUNER_PRUNER_H

#include <stddef.h>

#include "../config/config.h"
#include "../scorer/scorer.h"
#include "../tracker/tracker.h"
#include "../util/buf.h"

enum prune_rule {
    RULE_ANCHORED = 1,
    RULE_STRICT_SCORE,
    RULE_MIN_MENTIONS,
    RULE_STRICT_ESSENTIAL,
    RULE_CATEGORY_FULL,
    RULE_THRESHOLD,
    RULE_TARGET,
    RULE_BELOW,
    RULE_HARD_CAP
};

/* 32 bytes: a large session's compaction moves 100,000 of them around. */
typedef struct prune_decision {
    item *it;
    double adjusted; /* the score times the tier's multiplier */
    /* the item's fields the rules read, copied while scoring: the rules
     * then walk the decisions in order without touching the items */
    int32_t mentions; /* the mention count, at most INT32_MAX (compared with an int setting) */
    uint8_t keep;
    uint8_t rule; /* enum prune_rule that decided */
    uint8_t category, tier, anchored;
} prune_decision;

typedef struct prune_result {
    prune_decision *d; /* owned; evaluation order */
    size_t n;
    size_t kept, pruned, anchored_kept;
    size_t kept_by_cat[CAT__COUNT];
    double avg_kept_score;
} prune_result;

/* Evaluates without changing anything.  Returns 0 or CLARITY_ENOMEM. */
int pruner_evaluate(const clarity_config *cfg, tracker *t, int strict, prune_result *out);
/* The same with the scorer's tables (same scores, no log2()/pow() per
 * item); tables may be NULL. */
int pruner_evaluate_with(const clarity_config *cfg, const scorer_tables *tables, tracker *t, int strict,
                         prune_result *out);
/* The same decisions and report for much less work on large sessions:
 * items of equal score are put in id order only where that order decides
 * something (a category's cap, the target or the hard cap falls among
 * them) or where the report lists them; elsewhere in d they stay in
 * tracker order.  For callers that apply and report (compaction, the
 * /clarity prune command), not for those that list every decision. */
int pruner_decide(const clarity_config *cfg, const scorer_tables *tables, tracker *t, int strict,
                  prune_result *out);
/* Marks the pruned decisions' items as pruned (dirty). */
void pruner_apply(tracker *t, const prune_result *r);
/* A readable report ("[CLARITY PRUNE REPORT]" ...). */
void pruner_report(const prune_result *r, int applied, int strict, buf *out);
const char *pruner_rule_name(int rule);
void pruner_result_free(prune_result *r);

#endif
