/* scorer.h: the relevance score of an item, term by term.
 *
 * With d = currentTurn - lastMentionTurn (an item never mentioned uses its
 * firstSeenTurn):
 *   frequency = log2(mentionCount + 1) * frequencyScale
 *   recency   = (1 - d / (recencyWindow + 1)) * recencyBonus   if d <= recencyWindow, else 0
 *   utility   = referenceCount * referenceWeight
 *   staleness = (1 - decay^(d - recencyWindow)) * frequency     if d >  recencyWindow, else 0
 *               with decay = 0.5^(1 / halfLife)
 *   anchor    = anchorBonus if anchored
 *   score     = max(0, frequency + recency + utility - staleness + anchor)
 * The engine (engine_score) adds a fifth term, prediction, for file items
 * the workspace's code graph predicts for the current prompt.
 */
#ifndef SCORER_SCORER_H
#define SCORER_SCORER_H

#include <stdint.h>

#include "../config/config.h"
#include "../tracker/tracker.h"

typedef struct score_breakdown {
    double frequency, recency, utility, staleness, anchor;
    /* File predictions (engine/predict.c): the session's latest normalized
     * prediction for a file item times prediction.weight; always 0 here. */
    double prediction;
    double score;    /* the clamped sum */
    double adjusted; /* score * tier multiplier */
} score_breakdown;

#define SCORER_TABLE 1024

/* Precomputed log2(n + 1) * frequencyScale and decay^k for small n and k,
 * so the per-turn scans (context block, views) need no log2()/pow(). */
typedef struct scorer_tables {
    double freq[SCORER_TABLE];
    double decay[SCORER_TABLE];
} scorer_tables;

void scorer_tables_init(scorer_tables *t, const clarity_config *cfg);

/* The one implementation of the formula.  tables may be NULL (then the
 * terms are computed directly, same values); prediction is the
 * breakdown's prediction term, added before the clamp. */
void scorer_score_with(const clarity_config *cfg, const scorer_tables *tables, const item *it,
                       int64_t current_turn, double prediction, score_breakdown *out);
/* Without tables or prediction. */
void scorer_score(const clarity_config *cfg, const item *it, int64_t current_turn,
                  score_breakdown *out);
/* Convenience: the final score only. */
double scorer_value(const clarity_config *cfg, const item *it, int64_t current_turn);

#endif
