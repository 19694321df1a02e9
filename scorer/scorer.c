#include "scorer.h"

#include <math.h>

void scorer_score(const clarity_config *cfg, const item *it, int64_t current_turn,
                  score_breakdown *out)
{
    const double window = cfg->scoring.recency_window;
    double d = (double)(current_turn - it->last_mention_turn);
    if (d < 0) d = 0; /* clock skew after an import: treat as "now" */

    out->frequency = log2((double)it->mention_count + 1.0) * cfg->scoring.frequency_scale;
    out->recency = d <= window ? (1.0 - d / (window + 1.0)) * cfg->scoring.recency_bonus : 0.0;
    out->utility = (double)it->reference_count * cfg->scoring.reference_weight;
    if (d > window) {
        double decay = pow(0.5, 1.0 / cfg->scoring.half_life);
        out->staleness = (1.0 - pow(decay, d - window)) * out->frequency;
    } else {
        out->staleness = 0.0;
    }
    out->anchor = it->anchored ? cfg->scoring.anchor_bonus : 0.0;
    out->prediction = 0.0;
    double s = out->frequency + out->recency + out->utility - out->staleness + out->anchor;
    out->score = s > 0 ? s : 0.0;
    int tier = it->tier >= 0 && it->tier < TIER__COUNT ? it->tier : TIER_NORMAL;
    out->adjusted = out->score * cfg->pruning.tier_mult[tier];
}

double scorer_value(const clarity_config *cfg, const item *it, int64_t current_turn)
{
    score_breakdown b;
    scorer_score(cfg, it, current_turn, &b);
    return b.score;
}
