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
/* Turns since the item's last use: its last mention, or for a file under
 * the "use" model its last reference when newer.  The state's turns are
 * bounded (TRACKER_TURN_MAX); computed without overflow whatever they
 * hold; a last use ahead of the turn (clock skew after an import) is "now". */
static inline double scorer_since_use(const clarity_config *cfg, const item *it, int64_t current_turn)
{
    int64_t last = it->last_mention_turn, di;
    if (cfg->scoring.model == CFG_SCORING_USE && it->category == CAT_FILE && it->last_reference_turn > last)
        last = it->last_reference_turn;
    if (__builtin_sub_overflow(current_turn, last, &di))
        di = current_turn > 0 ? INT64_MAX : 0;
    return di < 0 ? 0.0 : (double)di;
}

/* The frequency term without tables (the bound's slow case). */
double scorer_frequency(const clarity_config *cfg, int64_t mentions);

/* The bound's terms without prediction, with recency as given: the same
 * additions in the same order as the score, so rounding keeps the bound
 * (IEEE addition is monotonic). */
static inline double scorer_bound_terms(const clarity_config *cfg, const scorer_tables *tables, const item *it,
                                        double recency)
{
    int64_t m = it->mention_count;
    double f = m >= 0 && m < SCORER_TABLE ? tables->freq[m] : scorer_frequency(cfg, m);
    double u = (double)it->reference_count * cfg->scoring.reference_weight;
    double a = it->anchored ? cfg->scoring.anchor_bonus : 0.0;
    return f + recency + u - 0.0 + a;
}

/* terms + a prediction term of at most prediction_max, plus a hair. */
static inline double scorer_bound_of_core(double core, double prediction_max)
{
    double s = core + prediction_max;
    return s + 1e-9 * (1.0 + (s < 0 ? -s : s));
}

/* An upper bound of scorer_score_with's score for it at current_turn
 * (tables required), with any prediction term up to prediction_max: a
 * table lookup and a few additions, inline, so a scan for the best items
 * skips most of them without scoring.  The terms at their largest:
 * recency at most the bonus inside the window and 0 past it, staleness at
 * least 0. */
static inline double scorer_bound(const clarity_config *cfg, const scorer_tables *tables, const item *it,
                                  int64_t current_turn, double prediction_max)
{
    double r = scorer_since_use(cfg, it, current_turn) <= cfg->scoring.recency_window ? cfg->scoring.recency_bonus
                                                                                     : 0.0;
    return scorer_bound_of_core(scorer_bound_terms(cfg, tables, it, r), prediction_max);
}

/* The part of scorer_bound that no turn changes: recency at its largest
 * for any turn (the bonus, or 0 when the bonus is negative).  For every
 * turn, scorer_bound(..., p) <= scorer_bound_of_core(scorer_bound_core(...), p). */
static inline double scorer_bound_core(const clarity_config *cfg, const scorer_tables *tables, const item *it)
{
    return scorer_bound_terms(cfg, tables, it, cfg->scoring.recency_bonus > 0 ? cfg->scoring.recency_bonus : 0.0);
}

/* Without tables or prediction. */
void scorer_score(const clarity_config *cfg, const item *it, int64_t current_turn,
                  score_breakdown *out);
/* Convenience: the final score only. */
double scorer_value(const clarity_config *cfg, const item *it, int64_t current_turn);

#endif
