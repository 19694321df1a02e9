/* Pruner: every rule, strict mode on and off, category cap, hard cap,
 * revival of pruned items. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "../config/config.h"
#include "../pruner/pruner.h"

static clarity_config cfg;
static tracker t;

static void setup(void)
{
    cr_assert_eq(config_defaults(&cfg), 0);
    tracker_init(&t, 16);
    t.current_turn = 20;
}
static void teardown(void)
{
    tracker_free(&t);
    config_free(&cfg);
}
TestSuite(pruner, .init = setup, .fini = teardown);

/* An item whose score at turn 20 is about `score` (mentioned once long ago
 * gives ~0; references add 15 each). */
static item *add(const char *id, int64_t mentions, int64_t refs, int64_t last, int anchored, int tier)
{
    item *it = tracker_touch(&t, id, tracker_category_of_id(id), 0);
    cr_assert_not_null(it);
    it->mention_count = mentions;
    it->reference_count = refs;
    it->last_mention_turn = last;
    it->anchored = anchored;
    it->tier = tier;
    return it;
}

static const prune_decision *find(const prune_result *r, const char *id)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->d[i].it->id, id) == 0) return &r->d[i];
    cr_assert_fail("no decision for %s", id);
    return NULL;
}

static void fill_low(int n, const char *prefix)
{
    char id[64];
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "%s%03d", prefix, i);
        add(id, 1, 0, 0, 0, TIER_NORMAL); /* stale: score ~0.6 */
    }
}

Test(pruner, anchored_always_kept_even_with_zero_score)
{
    cfg.scoring.anchor_bonus = 0;
    add("keyword:anchored", 0, 0, 0, 1, TIER_NORMAL);
    fill_low(40, "keyword:low");
    prune_result r;
    cr_assert_eq(pruner_evaluate(&cfg, &t, 0, &r), 0);
    const prune_decision *d = find(&r, "keyword:anchored");
    cr_assert(d->keep);
    cr_assert_eq(d->rule, RULE_ANCHORED);
    cr_assert_eq(r.anchored_kept, 1);
    pruner_result_free(&r);
}

Test(pruner, strict_score_rule_only_in_strict_mode)
{
    /* 1 mention at turn 20 -> 10 + 20 = 30 >= 25; fill the category first */
    cfg.pruning.max_items_per_category = 1;
    add("keyword:big", 0, 2, 20, 0, TIER_NORMAL);   /* 0 + 20 + 30 = 50 */
    add("keyword:strong", 1, 0, 20, 0, TIER_NORMAL); /* 30 */
    prune_result r;
    cr_assert_eq(pruner_evaluate(&cfg, &t, 1, &r), 0);
    cr_assert_eq(find(&r, "keyword:strong")->rule, RULE_STRICT_SCORE);
    cr_assert(find(&r, "keyword:strong")->keep);
    pruner_result_free(&r);
    cr_assert_eq(pruner_evaluate(&cfg, &t, 0, &r), 0);
    cr_assert_eq(find(&r, "keyword:strong")->rule, RULE_CATEGORY_FULL);
    cr_assert_not(find(&r, "keyword:strong")->keep);
    pruner_result_free(&r);
}

Test(pruner, min_mentions_keeps_frequent_items)
{
    cfg.pruning.max_items_per_category = 1;
    cfg.pruning.target_context_items = 0;
    add("keyword:first", 0, 3, 20, 0, TIER_NORMAL);
    add("keyword:often", 3, 0, 0, 0, TIER_NORMAL); /* stale but mentioned 3 times */
    prune_result r;
    cr_assert_eq(pruner_evaluate(&cfg, &t, 0, &r), 0);
    cr_assert_eq(find(&r, "keyword:often")->rule, RULE_MIN_MENTIONS);
    cr_assert(find(&r, "keyword:often")->keep);
    pruner_result_free(&r);
}

/* A decision keeps the mention count in 32 bits: counts past them (an
 * import may hold up to 2^53) still meet the largest setting. */
Test(pruner, min_mentions_holds_for_counts_past_32_bits)
{
    cfg.pruning.max_items_per_category = 1;
    cfg.pruning.target_context_items = 0;
    cfg.pruning.min_mentions_preserve = INT32_MAX;
    add("keyword:first", 0, 3, 20, 0, TIER_NORMAL);
    add("keyword:huge", ((int64_t)1 << 40) + 1, 0, 0, 0, TIER_NORMAL);
    add("keyword:max", INT32_MAX, 0, 0, 0, TIER_NORMAL);
    add("keyword:below", INT32_MAX - 1, 0, 0, 0, TIER_NORMAL);
    prune_result r;
    cr_assert_eq(pruner_evaluate(&cfg, &t, 0, &r), 0);
    cr_assert_eq(find(&r, "keyword:huge")->rule, RULE_MIN_MENTIONS);
    cr_assert_eq(find(&r, "keyword:max")->rule, RULE_MIN_MENTIONS);
    cr_assert_neq(find(&r, "keyword:below")->rule, RULE_MIN_MENTIONS);
    pruner_result_free(&r);
}

Test(pruner, essential_tier_kept_in_strict_mode_only)
{
    cfg.pruning.max_items_per_category = 1;
    cfg.pruning.target_context_items = 0;
    add("keyword:first", 0, 3, 20, 0, TIER_NORMAL);
    add("keyword:essential", 1, 0, 0, 0, TIER_ESSENTIAL); /* low score */
    prune_result r;
    cr_assert_eq(pruner_evaluate(&cfg, &t, 1, &r), 0);
    cr_assert_eq(find(&r, "keyword:essential")->rule, RULE_STRICT_ESSENTIAL);
    cr_assert(find(&r, "keyword:essential")->keep);
    pruner_result_free(&r);
    cr_assert_eq(pruner_evaluate(&cfg, &t, 0, &r), 0);
    cr_assert_eq(find(&r, "keyword:essential")->rule, RULE_CATEGORY_FULL);
    cr_assert_not(find(&r, "keyword:essential")->keep);
    pruner_result_free(&r);
}

Test(pruner, threshold_target_and_below)
{
    cfg.pruning.target_context_items = 2;
    add("keyword:above", 0, 1, 0, 0, TIER_NORMAL);  /* 15 >= 8 */
    add("keyword:under1", 1, 0, 0, 0, TIER_NORMAL); /* ~0.6, kept while < target */
    add("keyword:under2", 1, 0, 1, 0, TIER_NORMAL); /* a bit higher */
    prune_result r;
    cr_assert_eq(pruner_evaluate(&cfg, &t, 0, &r), 0);
    cr_assert_eq(find(&r, "keyword:above")->rule, RULE_THRESHOLD);
    cr_assert_eq(find(&r, "keyword:under2")->rule, RULE_TARGET);
    cr_assert(find(&r, "keyword:under2")->keep);
    cr_assert_eq(find(&r, "keyword:under1")->rule, RULE_BELOW);
    cr_assert_not(find(&r, "keyword:under1")->keep);
    cr_assert_eq(r.kept, 2);
    cr_assert_eq(r.pruned, 1);
    pruner_result_free(&r);
}

Test(pruner, category_cap_counts_kept_items_per_category)
{
    fill_low(25, "keyword:k");
    for (int i = 0; i < 25; i++) {
        char id[32];
        snprintf(id, sizeof id, "tool:t%02d", i);
        add(id, 0, 1, 0, 0, TIER_NORMAL); /* 15 each */
    }
    prune_result r;
    cr_assert_eq(pruner_evaluate(&cfg, &t, 0, &r), 0);
    cr_assert_eq(r.kept_by_cat[CAT_TOOL], 20);
    cr_assert_eq(find(&r, "tool:t24")->rule, RULE_CATEGORY_FULL);
    /* 20 tools kept, then keywords fill up to the target of 30 */
    cr_assert_eq(r.kept_by_cat[CAT_KEYWORD], 10);
    cr_assert_eq(r.kept, 30);
    pruner_result_free(&r);
}

Test(pruner, hard_cap_spares_anchored)
{
    cfg.pruning.max_context_items = 5;
    cfg.scoring.anchor_bonus = 0;
    for (int i = 0; i < 8; i++) {
        char id[32];
        snprintf(id, sizeof id, "tool:t%d", i);
        add(id, 3, 0, 20, 0, TIER_NORMAL); /* all kept by min-mentions */
    }
    add("keyword:anchor", 0, 0, 0, 1, TIER_NORMAL); /* score 0: evaluated last */
    prune_result r;
    cr_assert_eq(pruner_evaluate(&cfg, &t, 0, &r), 0);
    cr_assert_eq(r.kept, 6); /* 5 + the anchored one */
    cr_assert(find(&r, "keyword:anchor")->keep);
    cr_assert_eq(find(&r, "tool:t7")->rule, RULE_HARD_CAP);
    pruner_result_free(&r);
}

Test(pruner, apply_marks_and_mention_revives)
{
    cfg.pruning.target_context_items = 0;
    add("keyword:gone", 1, 0, 0, 0, TIER_NORMAL);
    prune_result r;
    cr_assert_eq(pruner_evaluate(&cfg, &t, 0, &r), 0);
    pruner_apply(&t, &r);
    item *it = tracker_find(&t, "keyword:gone");
    cr_assert(it->pruned);
    cr_assert_eq(it->pruned_turn, 20);
    buf b;
    buf_init(&b);
    pruner_report(&r, 1, 0, &b);
    cr_assert_not_null(strstr(b.p, "[CLARITY PRUNE REPORT]"));
    cr_assert_not_null(strstr(b.p, "keyword:gone"));
    buf_free(&b);
    pruner_result_free(&r);
    /* pruned items are not evaluated again */
    cr_assert_eq(pruner_evaluate(&cfg, &t, 0, &r), 0);
    cr_assert_eq(r.n, 0);
    pruner_result_free(&r);
    /* a later mention revives it with its history */
    tracker_mention(&t, "keyword:gone", CAT_KEYWORD, 0);
    cr_assert_not(it->pruned);
    cr_assert_eq(it->mention_count, 2);
}

Test(pruner, ties_break_by_id_deterministically)
{
    add("keyword:b", 0, 1, 0, 0, TIER_NORMAL);
    add("keyword:a", 0, 1, 0, 0, TIER_NORMAL);
    prune_result r;
    cr_assert_eq(pruner_evaluate(&cfg, &t, 0, &r), 0);
    cr_assert_str_eq(r.d[0].it->id, "keyword:a");
    cr_assert_str_eq(r.d[1].it->id, "keyword:b");
    pruner_result_free(&r);
}

/* pruner_decide puts runs of equal scores in id order only where that
 * order decides something or the report lists them.  Over random sessions
 * (few distinct counters, so long runs of ties) and random limits, its
 * decisions, totals and report must be those of the fully ordered
 * evaluation. */
Test(pruner, decide_matches_the_fully_ordered_evaluation)
{
    static const char *const stems[] = {"keyword:k", "file:src/a/", "tool:t", "Proj", "test:t"};
    srand(7);
    scorer_tables tables;
    for (int round = 0; round < 400; round++) {
        tracker_free(&t);
        tracker_init(&t, 16);
        t.current_turn = 20 + rand() % 10;
        int n = round < 350 ? rand() % 300 : 2000 + rand() % 3000;
        char id[64];
        for (int i = 0; i < n; i++) {
            snprintf(id, sizeof id, "%s%x", stems[rand() % 5], (unsigned)(i * 2654435761u) >> (rand() % 24));
            item *it = tracker_find(&t, id) ? NULL : add(id, rand() % 4, rand() % 3, t.current_turn - rand() % 12,
                                                         rand() % 23 == 0, rand() % TIER__COUNT);
            if (it && rand() % 17 == 0) it->pruned = 1;
        }
        cfg.pruning.max_items_per_category = 1 + rand() % 60;
        cfg.pruning.target_context_items = rand() % 120;
        cfg.pruning.max_context_items = 1 + rand() % 150;
        cfg.pruning.prune_threshold = (double)(rand() % 40);
        cfg.pruning.min_mentions_preserve = 1 + rand() % 5;
        int strict = rand() % 2;
        scorer_tables_init(&tables, &cfg);
        prune_result full, fast;
        cr_assert_eq(pruner_evaluate_with(&cfg, &tables, &t, strict, &full), 0);
        cr_assert_eq(pruner_decide(&cfg, &tables, &t, strict, &fast), 0);
        cr_assert_eq(fast.n, full.n);
        cr_assert_eq(fast.kept, full.kept, "round %d: kept %zu vs %zu", round, fast.kept, full.kept);
        cr_assert_eq(fast.anchored_kept, full.anchored_kept);
        cr_assert_float_eq(fast.avg_kept_score, full.avg_kept_score, 1e-9);
        for (int c = 0; c < CAT__COUNT; c++) cr_assert_eq(fast.kept_by_cat[c], full.kept_by_cat[c]);
        for (size_t i = 0; i < full.n; i++) {
            const prune_decision *f = &full.d[i], *g = find(&fast, f->it->id);
            cr_assert(g->keep == f->keep && g->rule == f->rule, "round %d: %s: %s vs %s", round, f->it->id,
                      pruner_rule_name(g->rule), pruner_rule_name(f->rule));
        }
        buf a, b;
        buf_init(&a);
        buf_init(&b);
        pruner_report(&full, 1, strict, &a);
        pruner_report(&fast, 1, strict, &b);
        cr_assert_str_eq(b.p, a.p, "round %d", round);
        buf_free(&a);
        buf_free(&b);
        pruner_result_free(&full);
        pruner_result_free(&fast);
    }
}
