/* The context block read through the rank index (engine/rankidx.c) is the
 * block every item bounded gives: after each of thousands of random
 * changes (mentions, references, anchors, prunes, new and removed items,
 * reloads that set the fields directly, a reset tracker, turns going by), in
 * both scoring models and with few or many items per block; most blocks
 * come from the index (the sessions grow past RANKIDX_MIN_ITEMS). */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/engine.h"
#include "../pruner/pruner.h"
#include "testengine.h"


static item *random_item(tracker *t)
{
    if (!t->count) return NULL;
    size_t k = (size_t)rand() % t->count;
    item *it = t->items;
    while (k--) it = it->hh.next;
    return it;
}

/* What persist_load does: a fresh tracker filled by setting the fields
 * directly (here with counts another process may have changed). */
static void reload(tracker *t)
{
    size_t n = t->count, k = 0;
    item *saved = calloc(n ? n : 1, sizeof *saved);
    for (item *it = t->items; it; it = it->hh.next, k++) {
        saved[k] = *it;
        saved[k].id = strdup(it->id);
    }
    int64_t turn = t->current_turn;
    int h = t->history_length;
    tracker_free(t);
    tracker_init(t, h);
    t->current_turn = turn;
    for (k = 0; k < n; k++) {
        item *it = tracker_touch(t, saved[k].id, saved[k].category, 0);
        it->mention_count = rand() % 3 ? saved[k].mention_count : rand() % 40;
        it->reference_count = rand() % 3 ? saved[k].reference_count : rand() % 10;
        it->last_mention_turn = saved[k].last_mention_turn;
        it->last_reference_turn = saved[k].last_reference_turn;
        it->first_seen_turn = saved[k].first_seen_turn;
        it->anchored = saved[k].anchored;
        it->pruned = saved[k].pruned;
        free(saved[k].id);
    }
    free(saved);
}

static void change(tracker *t, int step)
{
    char id[48];
    static const char *const prefix[] = {"", "tool:", "keyword:", "file:src/"};
    item *it = random_item(t);
    switch (rand() % 16) {
    case 0: case 1: case 2: case 3:
        snprintf(id, sizeof id, "%sname%d", prefix[rand() % 4], rand() % 400);
        tracker_mention(t, id, tracker_category_of_id(id), 0);
        break;
    case 4: case 5: case 6:
        if (it) tracker_reference(t, it);
        break;
    case 7:
        if (it) tracker_anchor(t, it, "test", 0);
        break;
    case 8:
        if (it) tracker_unanchor(t, it);
        break;
    case 9:
        if (it && !it->anchored) {
            it->pruned = 1;
            tracker_mark_dirty(t, it);
        }
        break;
    case 10:
        if (it && rand() % 4 == 0) tracker_remove(t, it);
        break;
    case 11:
        if (rand() % 8 == 0) reload(t);
        break;
    case 12: case 13:
        tracker_advance_turn(t);
        break;
    case 14:
        if (step == 3001) { /* a reset session (it grows past RANKIDX_MIN_ITEMS again) */
            int h = t->history_length;
            tracker_free(t);
            tracker_init(t, h);
        }
        break;
    default:
        if (it) tracker_set_tier(t, it, rand() % TIER__COUNT);
        break;
    }
}

static void compare(const char *config, int steps)
{
    engine *e = testengine_open(config);
    session *s;
    cr_assert_eq(engine_acquire(e, "rank-test", 1, &s), CLARITY_OK);
    buf a, b;
    buf_init(&a);
    buf_init(&b);
    size_t lines = 0, indexed = 0;
    size_t bulks = 0;
    for (int step = 0; step < steps; step++) {
        change(&s->t, step);
        if (rand() % 97 == 0) { /* a compaction's prune, keeping few (a bulk one) */
            clarity_config pc = e->cfg; /* (a shallow copy, read only) */
            pc.pruning.min_mentions_preserve = INT_MAX;
            pc.pruning.target_context_items = 4;
            pc.pruning.max_context_items = 8;
            prune_result r;
            cr_assert_eq(pruner_decide(&pc, &e->tables, &s->t, 0, &r), 0);
            pruner_apply(&s->t, &r);
            bulks += s->t.bulk;
            pruner_result_free(&r);
            tracker_clear_dirty(&s->t); /* (persisted) */
        }
        if (rand() % 3) continue; /* several changes between blocks, too */
        buf_reset(&a);
        buf_reset(&b);
        block_write(e, s, &a);
        block_write_scan(e, s, &b);
        indexed += s->t.count >= RANKIDX_MIN_ITEMS && s->rank.gen == s->t.rank_gen;
        cr_assert_eq(a.len, b.len, "step %d: the blocks differ:\n%s\n---\n%s", step, a.p ? a.p : "",
                     b.p ? b.p : "");
        cr_assert(a.len == 0 || memcmp(a.p, b.p, a.len) == 0, "step %d: the blocks differ:\n%s\n---\n%s", step,
                  a.p, b.p);
        for (size_t i = 0; i < a.len; i++) lines += a.p[i] == '\n';
    }
    cr_assert_gt(lines, (size_t)steps / 4, "the blocks were mostly empty (%zu lines)", lines);
    cr_assert_gt(indexed, (size_t)steps / 8, "the index was used for only %zu blocks", indexed);
    cr_assert_gt(bulks, (size_t)3, "only %zu bulk prunes", bulks);
    buf_free(&a);
    buf_free(&b);
    engine_release(e, s);
    engine_free(e);
}

Test(rankidx, indexed_block_equals_the_full_scan)
{
    srand(17);
    compare("{\"storage\":{\"backend\":\"memory\"}}", 6000);
}

Test(rankidx, indexed_block_equals_the_full_scan_original_model_many_items)
{
    srand(23);
    compare("{\"storage\":{\"backend\":\"memory\"},\"scoring\":{\"model\":\"original\"},"
            "\"context\":{\"maxItems\":40,\"minScore\":0}}",
            6000);
}

/* A session for the block tests below, with the indexed and the scanned
 * block's buffers, in each of two configs (few and many items a block). */
static const char *const block_configs[] = {
    "{\"storage\":{\"backend\":\"memory\"}}",
    "{\"storage\":{\"backend\":\"memory\"},\"context\":{\"maxItems\":40,\"minScore\":0}}",
};
#define N_BLOCK_CONFIGS (sizeof block_configs / sizeof *block_configs)

typedef struct blocks {
    engine *e;
    session *s;
    buf a, b;
} blocks;

static void blocks_open(blocks *k, size_t ci, const char *session_id)
{
    k->e = testengine_open(block_configs[ci]);
    cr_assert_eq(engine_acquire(k->e, session_id, 1, &k->s), CLARITY_OK);
    buf_init(&k->a);
    buf_init(&k->b);
}

static void blocks_close(blocks *k)
{
    buf_free(&k->a);
    buf_free(&k->b);
    engine_release(k->e, k->s);
    engine_free(k->e);
}

/* The block through the index into k->a (what `seen` then counts is read
 * right after it), the block of every item bounded into k->b: equal, and
 * not empty. */
static size_t blocks_compare(blocks *k, size_t ci, int round, size_t (*seen)(const rankidx *))
{
    buf_reset(&k->a);
    buf_reset(&k->b);
    block_write(k->e, k->s, &k->a);
    size_t n = seen(&k->s->rank);
    block_write_scan(k->e, k->s, &k->b);
    cr_assert(k->a.len > 0, "config %zu, round %d: an empty block", ci, round);
    cr_assert(k->a.len == k->b.len && memcmp(k->a.p, k->b.p, k->a.len) == 0,
              "config %zu, round %d: the blocks differ:\n%s\n---\n%s", ci, round, k->a.p, k->b.p);
    return n;
}

/* A keyword item named by fmt and i, mentioned `times` times. */
static item *mention_keyword(tracker *t, const char *fmt, int i, int times)
{
    char id[48];
    snprintf(id, sizeof id, fmt, i);
    item *it = NULL;
    for (; times > 0; times--) it = tracker_mention(t, id, CAT_KEYWORD, 0);
    return it;
}

/* The keyword item named by fmt and i, or NULL. */
static item *find_keyword(tracker *t, const char *fmt, int i)
{
    char id[48];
    snprintf(id, sizeof id, fmt, i);
    return tracker_find(t, id);
}

/* Live entries of the index. */
static size_t live_entries(const rankidx *x)
{
    size_t live = 0;
    for (size_t i = 0; i < x->n; i++) live += x->v[i].ver == x->v[i].it->rank_ver;
    return live;
}
static size_t holds_a_turn(const rankidx *x) { return live_entries(x) >= 300; }
static size_t whole(const rankidx *x) { return x->floor == -INFINITY; }

/* A turn that changes many items alike: the index then takes hundreds
 * of entries of equal cores, sorted in and merged with the equal entries
 * of turns before, and the k best (ties by id) may be any of them. */
Test(rankidx, many_alike_changes_in_one_turn_rank_as_in_the_full_scan)
{
    for (size_t ci = 0; ci < N_BLOCK_CONFIGS; ci++) {
        blocks k;
        blocks_open(&k, ci, "rank-alike");
        for (int i = 0; i < 900; i++) mention_keyword(&k.s->t, "keyword:k%04d", i, 1);
        block_write(k.e, k.s, &k.a); /* the index is built */
        size_t seen_turn = 0;
        for (int round = 0; round < 6; round++) {
            tracker_advance_turn(&k.s->t);
            /* 300 items, from a different place each round, mentioned alike */
            for (int i = 0; i < 300; i++) mention_keyword(&k.s->t, "keyword:k%04d", (899 - i * 3 - round) % 900, 1);
            seen_turn += blocks_compare(&k, ci, round, holds_a_turn);
        }
        cr_assert_gt(seen_turn, (size_t)0, "config %zu: the index never held a turn's entries", ci);
        blocks_close(&k);
    }
}

/* Items below the floor (the index cut down to a few entries, as a cut
 * does to what walks read) that are needed later: the items ranked above
 * them are pruned, so the walk runs out of entries while items below the
 * floor could still rank, and the index is rebuilt whole.  In other rounds
 * the index is cut above the strong items only, or not at all, and the
 * walk stops at its end without a rebuild. */
Test(rankidx, items_below_the_floor_still_rank_when_the_walk_comes_down_to_them)
{
    srand(41);
    for (size_t ci = 0; ci < N_BLOCK_CONFIGS; ci++) {
        blocks k;
        blocks_open(&k, ci, "rank-floor");
        tracker *t = &k.s->t;
        /* 100 strong items, 800 weak ones */
        for (int i = 0; i < 900; i++) mention_keyword(t, "keyword:c%04d", i, i < 100 ? 20 : 1 + i % 3);
        block_write(k.e, k.s, &k.a); /* the index is built */
        size_t deepened = 0, stopped_at_floor = 0;
        for (int round = 0; round < 40; round++) {
            tracker_advance_turn(t);
            for (int i = 0; i < 120; i++) { /* weak items mentioned */
                int which = 100 + rand() % 800;
                mention_keyword(t, "keyword:c%04d", which, 1 + rand() % 6);
            }
            /* every few rounds the strong items are pruned (the walk then
             * comes down to the weak ones, most of them below the floor),
             * or back */
            int prune_round = round % 4 == 1;
            for (int i = 0; i < 100; i++) {
                item *it = find_keyword(t, "keyword:c%04d", i);
                int pruned = prune_round || (round % 4 == 2 && rand() % 2);
                if (it && it->pruned != pruned) {
                    it->pruned = pruned;
                    tracker_mark_dirty(t, it);
                }
            }
            cr_assert_eq(rankidx_sync(&k.s->rank, &k.e->cfg, &k.e->tables, t), 0);
            /* a few entries, or the strong items and a few more, or all */
            size_t keep = round % 3 == 0 ? 3 : round % 3 == 1 ? 110 : 0;
            if (keep) rankidx_cut_to(&k.s->rank, keep);
            int cut = k.s->rank.floor != -INFINITY;
            size_t now_whole = blocks_compare(&k, ci, round, whole);
            deepened += cut && now_whole;
            stopped_at_floor += cut && !now_whole && prune_round == 0 && keep == 110;
        }
        cr_assert_gt(deepened, (size_t)5, "config %zu: the walk seldom went below the floor (%zu)", ci, deepened);
        cr_assert_gt(stopped_at_floor, (size_t)3, "config %zu: the walk seldom stopped at the floor (%zu)", ci,
                     stopped_at_floor);
        blocks_close(&k);
    }
}

/* An index over a tracker of its own, for the tests of its parts. */
typedef struct index_fixture {
    engine *e;
    tracker t;
    rankidx x;
} index_fixture;

static void fixture_open(index_fixture *f)
{
    f->e = testengine_open("{\"storage\":{\"backend\":\"memory\"}}");
    tracker_init(&f->t, 8);
    memset(&f->x, 0, sizeof f->x);
}

static void fixture_close(index_fixture *f)
{
    rankidx_free(&f->x);
    tracker_free(&f->t);
    engine_free(f->e);
}

static int fixture_sync(index_fixture *f) { return rankidx_sync(&f->x, &f->e->cfg, &f->e->tables, &f->t); }

/* A fixture of n keyword items named by fmt, item i mentioned 1 + i %
 * spread times, and its index built. */
static void fixture_with_keywords(index_fixture *f, const char *fmt, int n, int spread)
{
    fixture_open(f);
    for (int i = 0; i < n; i++) mention_keyword(&f->t, fmt, i, 1 + i % spread);
    cr_assert_eq(fixture_sync(f), 0);
}

/* Every unpruned item whose current bound is above the floor, and none
 * that is not: once each, the entries highest first, each the item's
 * current one.  Items change between syncs, some are pruned (one by one,
 * or all but a few in a bulk prune), some come back; the index is cut at
 * random sizes, or rebuilt whole. */
static void check_entries(index_fixture *f, int n_items, const char *fmt, int round)
{
    rankidx *x = &f->x;
    unsigned char *seen = calloc((size_t)n_items, 1);
    rankidx_iter ri = {.x = x};
    double last = INFINITY;
    for (const rank_slot *sl; (sl = rankidx_next(&ri));) {
        int i = atoi(sl->it->id + strlen(fmt) - strlen("%04d"));
        cr_assert(!seen[i], "round %d: %s read twice", round, sl->it->id);
        seen[i] = 1;
        cr_assert(sl->core <= last, "round %d: entries out of order", round);
        last = sl->core;
        cr_assert_eq(sl->core, scorer_bound_core(&f->e->cfg, &f->e->tables, sl->it),
                     "round %d: %s's entry is not its bound", round, sl->it->id);
    }
    for (int i = 0; i < n_items; i++) {
        item *it = find_keyword(&f->t, fmt, i);
        double core = scorer_bound_core(&f->e->cfg, &f->e->tables, it);
        cr_assert_eq(seen[i], !it->pruned && (x->floor == -INFINITY || core > x->floor),
                     "round %d: %s (bound %g, floor %g, pruned %d) %s", round, it->id, core, x->floor, it->pruned,
                     seen[i] ? "read at or below the floor, or pruned" : "missing");
    }
    free(seen);
}

Test(rankidx, the_walk_reads_each_item_above_the_floor_once)
{
    index_fixture f;
    fixture_open(&f);
    tracker *t = &f.t;
    rankidx *x = &f.x;
    enum { N = 400 };
    srand(7);
    for (int i = 0; i < N; i++) {
        item *it = mention_keyword(t, "keyword:o%04d", i, 1);
        it->mention_count = 1 + rand() % 200;
        tracker_mark_dirty(t, it);
    }
    cr_assert_eq(fixture_sync(&f), 0);
    size_t cuts = 0, bulks = 0;
    for (int round = 0; round < 60; round++) {
        tracker_advance_turn(t);
        for (int k = 0; k < 40; k++) {
            item *it = find_keyword(t, "keyword:o%04d", rand() % N);
            it->mention_count = 1 + rand() % 200;
            it->pruned = 0; /* (a change that revives it, as a mention does) */
            tracker_mark_dirty(t, it);
        }
        if (round % 7 == 3) { /* a bulk prune keeps a few */
            item **kept = malloc(8 * sizeof *kept);
            size_t n_kept = 0;
            for (item *it = t->items; it; it = it->hh.next)
                if (!it->pruned && n_kept < 8 && rand() % 4 == 0) kept[n_kept++] = it;
            cr_assert_eq(tracker_bulk_begin(t, kept, n_kept), 0);
            for (item *it = t->items; it; it = it->hh.next) {
                int keep = 0;
                for (size_t j = 0; j < n_kept; j++) keep |= t->bulk_kept[j] == it;
                if (!keep && !it->pruned) tracker_prune(t, it, 1);
            }
            tracker_clear_dirty(t);
            bulks++;
        } else if (round % 3 == 1) { /* a few pruned one by one */
            for (int k = 0; k < 20; k++) {
                item *it = find_keyword(t, "keyword:o%04d", rand() % N);
                tracker_prune(t, it, 0);
            }
        }
        cr_assert_eq(fixture_sync(&f), 0);
        check_entries(&f, N, "keyword:o%04d", round);
        if (round % 5 == 4) {
            cr_assert_eq(rankidx_deepen(&f.x, &f.e->cfg, &f.e->tables, t), 0);
            cr_assert_eq(x->floor, -INFINITY);
        } else if (round % 2) {
            rankidx_cut_to(x, 1 + (size_t)rand() % 150);
            cuts += x->floor != -INFINITY;
        }
        check_entries(&f, N, "keyword:o%04d", round);
    }
    cr_assert_gt(cuts, (size_t)10, "only %zu cuts", cuts);
    cr_assert_gt(bulks, (size_t)5);
    fixture_close(&f);
}

/* The index's sort is stable, highest core first: against qsort of the same
 * entries ordered by (core descending, original position), for sizes on
 * both sides of its byte sort's threshold, with many ties, with none, and
 * with cores closer than the byte sort tells apart, in reverse. */
static int by_core_then_position(const void *x, const void *y)
{
    const rank_slot *a = x, *b = y;
    if (a->core != b->core) return a->core > b->core ? -1 : 1;
    return (a->ver > b->ver) - (a->ver < b->ver);
}

Test(rankidx, sort_is_stable_and_highest_first)
{
    srand(29);
    enum { MAX = 1500 };
    rank_slot *v = malloc(MAX * sizeof *v), *w = malloc(MAX * sizeof *w), *tmp = malloc(MAX * sizeof *tmp);
    cr_assert(v && w && tmp);
    for (int round = 0; round < 3000; round++) {
        size_t n = round % 3 ? (size_t)(rand() % 130) : (size_t)(rand() % MAX);
        int range = round % 2 ? 1 + rand() % 6 : 1000000; /* ties, or (nearly) none */
        /* every tenth round: cores too close for 24 bits to tell apart,
         * lowest first (the byte sort's last pass would be quadratic) */
        int close = round % 10 == 9;
        for (size_t i = 0; i < n; i++) {
            v[i].core = close ? 1000.0 + (double)(i / (1 + rand() % 3)) * 1e-9 : (double)(rand() % range) / 7.0;
            v[i].it = NULL;
            v[i].ver = (uint32_t)i; /* the original position */
        }
        memcpy(w, v, n * sizeof *v);
        rankidx_sort(v, n, tmp);
        qsort(w, n, sizeof *w, by_core_then_position);
        for (size_t i = 0; i < n; i++)
            cr_assert(v[i].core == w[i].core && v[i].ver == w[i].ver,
                      "round %d, %zu entries: entry %zu is (%g, %u), not (%g, %u)", round, n, i, v[i].core,
                      v[i].ver, w[i].core, w[i].ver);
    }
    free(v);
    free(w);
    free(tmp);
}

/* The syncs' own cuts: a session of 2,000 items, of which walks read a
 * few, keeps few more entries than a cut keeps (each item's current one,
 * in order, every item above the floor), whatever the changes:
 * items changed once or many times between syncs. */
Test(rankidx, syncs_cut_the_index_to_what_walks_read)
{
    index_fixture f;
    enum { N = 2000 };
    fixture_with_keywords(&f, "keyword:w%04d", N, 40);
    tracker *t = &f.t;
    rankidx *x = &f.x;
    cr_assert_eq(x->n, (size_t)N);
    srand(5);
    size_t most = 0;
    for (int round = 0; round < 60; round++) {
        tracker_advance_turn(t);
        for (int k = 0; k < 150; k++) { /* some items changed twice in a round, some in many */
            item *it = find_keyword(t, "keyword:w%04d", rand() % (k % 3 ? N : 50));
            if (k % 2) tracker_reference(t, it);
            else tracker_anchor(t, it, "test", 0);
        }
        cr_assert_eq(fixture_sync(&f), 0);
        rankidx_walked(x, 10);
        check_entries(&f, N, "keyword:w%04d", round);
        if (round >= 2 && x->n > most) most = x->n;
    }
    size_t keep = RANKIDX_KEEP_MIN + 4 * 10;
    cr_assert(x->floor != -INFINITY, "never cut");
    cr_assert_leq(most, 2 * keep + 150, "the index held %zu entries, where cuts keep %zu", most, keep);
    fixture_close(&f);
}

/* A large index that walks read far into (no cut) takes a few changed
 * items a sync: each goes where its core ranks (the merge's binary-search
 * path), among entries of other cores and of its own. */
Test(rankidx, a_large_index_takes_a_few_entries_a_sync_in_order)
{
    index_fixture f;
    enum { N = 3000 };
    fixture_with_keywords(&f, "keyword:g%04d", N, 60);
    tracker *t = &f.t;
    rankidx *x = &f.x;
    srand(11);
    for (int round = 0; round < 40; round++) {
        tracker_advance_turn(t);
        for (int k = 0; k < 1 + round % 30; k++) {
            item *it = find_keyword(t, "keyword:g%04d", rand() % N);
            it->mention_count = 1 + (uint32_t)(rand() % (k % 2 ? 60 : 400));
            tracker_mark_dirty(t, it);
        }
        rankidx_walked(x, N); /* walks read every entry: nothing is cut */
        cr_assert_eq(fixture_sync(&f), 0);
        cr_assert_eq(x->floor, -INFINITY, "round %d: cut", round);
        check_entries(&f, N, "keyword:g%04d", round);
    }
    fixture_close(&f);
}
