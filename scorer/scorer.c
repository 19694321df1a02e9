#include "scorer.h"

#include <math.h>
#include <stdint.h>

void scorer_tables_init(scorer_tables *t, const clarity_config *cfg)
{
    double decay = pow(0.5, 1.0 / cfg->scoring.half_life);
    for (int k = 0; k < SCORER_TABLE; k++) {
        t->freq[k] = log2((double)k + 1.0) * cfg->scoring.frequency_scale;
        t->decay[k] = pow(decay, (double)k);
    }
}

static double frequency(const clarity_config *cfg, const scorer_tables *t, int64_t mentions)
{
    if (t && mentions >= 0 && mentions < SCORER_TABLE) return t->freq[mentions];
    return log2((double)mentions + 1.0) * cfg->scoring.frequency_scale;
}

/* decay^k for the integral k = d - recencyWindow (config keeps the window
 * integral).  Past the table the power is below decay^1023; once that is
 * negligible, the long tail of stale items skips pow(). */
static double decay_pow(const clarity_config *cfg, const scorer_tables *t, double k)
{
    if (t) {
        if (k < SCORER_TABLE) return t->decay[(int)k];
        if (t->decay[SCORER_TABLE - 1] < 1e-12) return 0.0;
        return pow(t->decay[1], k);
    }
    return pow(pow(0.5, 1.0 / cfg->scoring.half_life), k);
}

void scorer_score_with(const clarity_config *cfg, const scorer_tables *tables, const item *it,
                       int64_t current_turn, double prediction, score_breakdown *out)
{
    const double window = cfg->scoring.recency_window;
    double d = scorer_since_use(cfg, it, current_turn);

    out->frequency = frequency(cfg, tables, it->mention_count);
    out->recency = d <= window ? (1.0 - d / (window + 1.0)) * cfg->scoring.recency_bonus : 0.0;
    out->utility = (double)it->reference_count * cfg->scoring.reference_weight;
    out->staleness = d > window ? (1.0 - decay_pow(cfg, tables, d - window)) * out->frequency : 0.0;
    out->anchor = it->anchored ? cfg->scoring.anchor_bonus : 0.0;
    out->prediction = prediction;
    double s = out->frequency + out->recency + out->utility - out->staleness + out->anchor +
               prediction;
    out->score = s > 0 ? s : 0.0;
    int tier = it->tier >= 0 && it->tier < TIER__COUNT ? it->tier : TIER_NORMAL;
    out->adjusted = out->score * cfg->pruning.tier_mult[tier];
}

double scorer_frequency(const clarity_config *cfg, int64_t mentions)
{
    return frequency(cfg, NULL, mentions);
}

void scorer_score(const clarity_config *cfg, const item *it, int64_t current_turn,
                  score_breakdown *out)
{
    scorer_score_with(cfg, NULL, it, current_turn, 0.0, out);
}

double scorer_value(const clarity_config *cfg, const item *it, int64_t current_turn)
{
    score_breakdown b;
    scorer_score(cfg, it, current_turn, &b);
    return b.score;
}
