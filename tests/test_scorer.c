/* Scorer: every branch against hand-computed values, with the original
 * plugin's weights (halfLife 5, recencyWindow 3, recencyBonus 20,
 * referenceWeight 15, frequencyScale 10, anchorBonus 100): the formula is
 * the same for any weights, and these give round numbers. */
#include <criterion/criterion.h>
#include <math.h>

#include "../config/config.h"
#include "../scorer/rank.h"
#include "../scorer/scorer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clarity_config cfg;
static void setup(void)
{
    cr_assert_eq(config_defaults(&cfg), 0);
    cfg.scoring.recency_bonus = 20;
    cfg.scoring.frequency_scale = 10;
}
static void teardown(void) { config_free(&cfg); }

static item mk(int64_t mentions, int64_t refs, int64_t last_mention, int anchored)
{
    item it;
    memset(&it, 0, sizeof it);
    it.id = "x";
    it.tier = TIER_NORMAL;
    it.mention_count = mentions;
    it.reference_count = refs;
    it.last_mention_turn = last_mention;
    it.anchored = anchored;
    return it;
}

#define NEAR(a, b) cr_assert_float_eq((a), (b), 1e-9, "%s = %.12f, expected %.12f", #a, (double)(a), (double)(b))

TestSuite(scorer, .init = setup, .fini = teardown);

Test(scorer, fresh_mention_gets_full_recency)
{
    item it = mk(3, 2, 10, 0);
    score_breakdown b;
    scorer_score(&cfg, &it, 10, &b);
    NEAR(b.frequency, 20.0); /* log2(4) * 10 */
    NEAR(b.recency, 20.0);   /* (1 - 0/4) * 20 */
    NEAR(b.utility, 30.0);   /* 2 * 15 */
    NEAR(b.staleness, 0.0);
    NEAR(b.anchor, 0.0);
    NEAR(b.score, 70.0);
    NEAR(b.adjusted, 70.0);
}

Test(scorer, recency_fades_linearly_inside_window)
{
    item it = mk(1, 0, 7, 0);
    score_breakdown b;
    scorer_score(&cfg, &it, 9, &b); /* d = 2 */
    NEAR(b.frequency, 10.0);        /* log2(2) * 10 */
    NEAR(b.recency, 10.0);          /* (1 - 2/4) * 20 */
    NEAR(b.staleness, 0.0);
    scorer_score(&cfg, &it, 10, &b); /* d = 3 = window: still recent */
    NEAR(b.recency, 5.0);
    NEAR(b.staleness, 0.0);
    NEAR(b.score, 15.0);
}

Test(scorer, staleness_starts_after_window)
{
    item it = mk(3, 0, 0, 0);
    score_breakdown b;
    scorer_score(&cfg, &it, 4, &b); /* d = 4: one turn past the window */
    NEAR(b.recency, 0.0);
    NEAR(b.staleness, (1.0 - pow(0.5, 0.2)) * 20.0); /* 2.588988... */
    NEAR(b.staleness, 2.588988734078);
    scorer_score(&cfg, &it, 8, &b); /* d = 8: d - window = halfLife -> half the frequency */
    NEAR(b.staleness, 10.0);
    NEAR(b.score, 10.0);
}

Test(scorer, anchor_and_tier)
{
    item it = mk(1, 1, 0, 1);
    it.tier = TIER_ESSENTIAL;
    score_breakdown b;
    scorer_score(&cfg, &it, 0, &b);
    NEAR(b.anchor, 100.0);
    NEAR(b.score, 10.0 + 20.0 + 15.0 + 100.0);
    NEAR(b.adjusted, 145.0 * 2.0);
    it.tier = TIER_LOW;
    scorer_score(&cfg, &it, 0, &b);
    NEAR(b.adjusted, 145.0 * 0.8);
}

Test(scorer, never_negative_and_decays_to_zero)
{
    item it = mk(7, 0, 0, 0);
    score_breakdown b;
    scorer_score(&cfg, &it, 10000, &b);
    NEAR(b.frequency, 30.0);
    cr_assert(b.staleness <= b.frequency);
    cr_assert(b.score >= 0.0 && b.score < 1e-9);
}

Test(scorer, clamps_at_zero_when_terms_go_negative)
{
    /* With a custom config the sum can go negative only through staleness
     * exceeding the positive terms, which the formula prevents; a future
     * turn before the mention (imported state) is treated as d = 0. */
    item it = mk(1, 0, 12, 0);
    score_breakdown b;
    scorer_score(&cfg, &it, 10, &b);
    NEAR(b.recency, 20.0);
    NEAR(b.score, 30.0);
}

Test(scorer, custom_config_values)
{
    cfg.scoring.half_life = 2;
    cfg.scoring.recency_window = 1;
    cfg.scoring.recency_bonus = 8;
    cfg.scoring.reference_weight = 3;
    cfg.scoring.frequency_scale = 4;
    item it = mk(15, 2, 0, 0);
    score_breakdown b;
    scorer_score(&cfg, &it, 5, &b); /* d = 5, k = 4 */
    NEAR(b.frequency, 16.0);        /* log2(16) * 4 */
    NEAR(b.recency, 0.0);
    NEAR(b.utility, 6.0);
    NEAR(b.staleness, (1.0 - 0.25) * 16.0); /* decay^4 = 0.5^(4/2) */
    NEAR(b.score, 16.0 + 6.0 - 12.0);
    NEAR(scorer_value(&cfg, &it, 5), 10.0);
}

Test(scorer, tables_give_the_same_values_as_direct_computation)
{
    scorer_tables *tab = malloc(sizeof *tab);
    cr_assert_not_null(tab);
    scorer_tables_init(tab, &cfg);
    for (int64_t m = 0; m < 2100; m += 7) {
        for (int64_t d = 0; d < 3000; d += 13) {
            item it = mk(m, m % 5, 5000 - d, (int)(m % 2));
            score_breakdown a, b;
            scorer_score_with(&cfg, tab, &it, 5000, 2.5, &a);
            scorer_score_with(&cfg, NULL, &it, 5000, 2.5, &b);
            cr_assert_float_eq(a.score, b.score, 1e-9, "m=%lld d=%lld: %.12f vs %.12f",
                               (long long)m, (long long)d, a.score, b.score);
            cr_assert_float_eq(a.staleness, b.staleness, 1e-9);
            cr_assert_float_eq(a.prediction, 2.5, 1e-12);
        }
    }
    free(tab);
}

/* scoring.model "use" (the default): a file's recency and staleness run
 * from the newer of its last mention and its last reference; "original"
 * counts the mention alone, as the original plugin, and so does "use" for
 * items that are not files. */
Test(scorer, recency_from_use_or_from_mentions)
{
    item it = mk(1, 2, 2, 0); /* mentioned at turn 2, used by a tool at turn 9 */
    it.category = CAT_FILE;
    it.last_reference_turn = 9;
    score_breakdown b;
    scorer_score(&cfg, &it, 10, &b); /* d = 1 from the use */
    NEAR(b.recency, 15.0);           /* (1 - 1/4) * 20 */
    NEAR(b.staleness, 0.0);
    NEAR(b.score, 10.0 + 15.0 + 30.0);
    cfg.scoring.model = CFG_SCORING_ORIGINAL; /* d = 8 from the mention */
    scorer_score(&cfg, &it, 10, &b);
    NEAR(b.recency, 0.0);
    NEAR(b.staleness, (1.0 - pow(pow(0.5, 1.0 / 5.0), 5.0)) * 10.0);
    score_breakdown other;
    cfg.scoring.model = CFG_SCORING_USE; /* not a file: from the mention */
    it.category = CAT_TOOL;
    scorer_score(&cfg, &it, 10, &other);
    NEAR(other.score, b.score);
    it.category = CAT_FILE;
    /* a reference older than the mention changes nothing */
    it.last_reference_turn = 1;
    score_breakdown o;
    scorer_score(&cfg, &it, 10, &b);
    cfg.scoring.model = CFG_SCORING_ORIGINAL;
    scorer_score(&cfg, &it, 10, &o);
    NEAR(b.score, o.score);
    /* never referenced (-1) */
    cfg.scoring.model = CFG_SCORING_USE;
    it.last_reference_turn = -1;
    scorer_score(&cfg, &it, 10, &b);
    NEAR(b.score, o.score);
}

static uint64_t xorshift(uint64_t *r)
{
    *r ^= *r << 13;
    *r ^= *r >> 7;
    *r ^= *r << 17;
    return *r;
}

/* scorer_bound is an upper bound of the score at its turn, with every
 * prediction up to its maximum, in both models and with or without the
 * tables: the block skips items by it, so a bound too low would hide one. */
Test(scorer, bound_is_never_below_the_score)
{
    uint64_t r = 0x2545F4914F6CDD1Dull;
#define RND() xorshift(&r)
    scorer_tables tables;
    for (int model = 0; model < 2; model++) {
        cfg.scoring.model = model ? CFG_SCORING_ORIGINAL : CFG_SCORING_USE;
        for (int c = 0; c < 20; c++) {
            cfg.scoring.recency_window = (double)(RND() % 8);
            cfg.scoring.recency_bonus = (double)(RND() % 1000) / 7.0;
            cfg.scoring.reference_weight = (double)(RND() % 100) / 3.0;
            cfg.scoring.frequency_scale = (double)(RND() % 50) / 3.0;
            cfg.scoring.anchor_bonus = (double)(RND() % 300);
            cfg.scoring.half_life = 0.5 + (double)(RND() % 20);
            scorer_tables_init(&tables, &cfg);
            for (int i = 0; i < 2000; i++) {
                int64_t m = (int64_t)(RND() % 5000), last = (int64_t)(RND() % 3000);
                item it = mk(m, (int64_t)(RND() % 300), last, (int)(RND() % 2));
                it.category = (int8_t)(RND() % CAT__COUNT);
                it.last_reference_turn = (int64_t)(RND() % 3000) - 1;
                int64_t turn = last + (int64_t)(RND() % 20) - 2; /* around the window, and before it */
                double pmax = (double)(RND() % 60), pred = pmax * (double)(RND() % 1001) / 1000.0;
                score_breakdown b, bt;
                scorer_score_with(&cfg, NULL, &it, turn, pred, &b);
                scorer_score_with(&cfg, &tables, &it, turn, pred, &bt);
                double ub = scorer_bound(&cfg, &tables, &it, turn, pmax);
                cr_assert(b.score <= ub && bt.score <= ub, "score %.17g / %.17g above its bound %.17g", b.score,
                          bt.score, ub);
            }
        }
    }
#undef RND
}

/* The rank order is exactly "score desc, then strcmp(id) asc", on ids that
 * share long prefixes (the 16-byte keys tie) and scores that tie often. */
static int ref_cmp(const void *x, const void *y)
{
    const rank_ent *a = x, *b = y;
    double sa = a->score, sb = b->score;
    if (sa > sb) return -1;
    if (sa < sb) return 1;
    return strcmp(a->id, b->id);
}

Test(scorer, rank_order_is_score_then_id)
{
    static const char *const stems[] = {"", "keyword:", "file:src/auth/", "file:src/auth/session", "a", "tool:x",
                                        "file:src/clarity/engine/persist/"}; /* past the 24 cached bytes */
    srand(21);
    for (int round = 0; round < 60; round++) {
        size_t n = (size_t)(rand() % (round < 50 ? 3000 : 40000));
        char (*ids)[48] = malloc((n ? n : 1) * sizeof *ids);
        rank_ent *v = malloc((n ? n : 1) * sizeof *v), *w = malloc((n ? n : 1) * sizeof *w);
        for (size_t i = 0; i < n; i++) {
            if (round % 5 == 4) /* prefixes of each other: "x", "xx", ... split one id a level */
                snprintf(ids[i], sizeof ids[i], "%.*s%x", (int)(i % 40), "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                         (unsigned)(i / 40));
            else
                snprintf(ids[i], sizeof ids[i], "%s%x", stems[rand() % 7], (unsigned)i * 2654435761u);
            double score = (double)(rand() % 7) * 0.5;
            if (round % 2) { /* every sign and magnitude: the radix path's key */
                static const double odd[] = {0.0, -0.0, INFINITY, -INFINITY, 5e-324, -5e-324, 1e300, -1e300};
                score = rand() % 4 ? ldexp((double)(rand() % 2001 - 1000), rand() % 40 - 20) : odd[rand() % 8];
            }
            if (rand() % 50 == 0) score = NAN;
            rank_set(&v[i], ids[i], score, i);
        }
        memcpy(w, v, n * sizeof *v);
        rank_sort(v, n);
        if (n > 1) qsort(w, n, sizeof *w, ref_cmp); /* NaN was mapped to -inf by rank_set */
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(v[i].idx, w[i].idx, "round %d, position %zu: %s vs %s", round, i, v[i].id, w[i].id);
        int *pos = malloc((n ? n : 1) * sizeof *pos);
        for (size_t i = 0; i < n; i++) pos[i] = (int)i;
        cr_assert_eq(rank_apply(pos, n, sizeof *pos, v), 0); /* uses up v's idx fields */
        for (size_t i = 0; i < n; i++) cr_assert_eq((size_t)pos[i], w[i].idx);
        free(pos);
        free(ids);
        free(v);
        free(w);
    }
}

/* rank_by_score: score descending, equal scores in index order, through
 * the hash of distinct scores (few) and through the radix sort (many). */
static const double *by_score_v;
static int by_score_ref(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    double sa = isnan(by_score_v[a]) ? -INFINITY : by_score_v[a], sb = isnan(by_score_v[b]) ? -INFINITY : by_score_v[b];
    if (sa != sb) return sa > sb ? -1 : 1;
    return (a > b) - (a < b);
}

Test(scorer, rank_by_score_is_stable_by_score)
{
    srand(33);
    for (int round = 0; round < 40; round++) {
        size_t n = (size_t)(rand() % 20000);
        int distinct = round % 3 == 0 ? 5000 + rand() % 20000 : 1 + rand() % 300; /* past the hash's 4096 or not */
        double *v = malloc((n ? n : 1) * sizeof *v);
        uint32_t *got = malloc((n ? n : 1) * sizeof *got), *want = malloc((n ? n : 1) * sizeof *want);
        static const double odd[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 5e-324};
        for (size_t i = 0; i < n; i++) {
            v[i] = rand() % 20 ? ldexp((double)(rand() % distinct) - distinct / 4, -(rand() % 3)) : odd[rand() % 6];
            want[i] = (uint32_t)i;
        }
        by_score_v = v;
        qsort(want, n, sizeof *want, by_score_ref);
        cr_assert_eq(rank_by_score(v, n, got), 0);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(got[i], want[i], "round %d (%d distinct), position %zu", round, distinct, i);
        free(v);
        free(got);
        free(want);
    }
}
