/* The tracker's item table: its buckets keep up with its items (a lookup
 * walks a short chain), and every item is found again across the table's
 * growth, removals and new adds. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "../tracker/tracker.h"

static void id_of(char *out, size_t cap, int i)
{
    switch (i % 3) {
    case 0: snprintf(out, cap, "proj%05dcore", i); break;
    case 1: snprintf(out, cap, "file:src/mod%d/file%d.ts", i % 50, i); break;
    default: snprintf(out, cap, "keyword:word%05d", i); break;
    }
}

/* Items from .. to - 1 tracked, the table's buckets checked after each. */
static void touch_range(tracker *t, int from, int to)
{
    char id[64];
    for (int i = from; i < to; i++) {
        id_of(id, sizeof id, i);
        cr_assert_not_null(tracker_touch(t, id, tracker_category_of_id(id), 0));
        const UT_hash_table *tbl = t->items->hh.tbl;
        cr_assert_leq(tbl->num_items, tbl->num_buckets, "%u items in %u buckets", tbl->num_items, tbl->num_buckets);
    }
}

Test(tracker, buckets_keep_up_with_items)
{
    tracker t;
    tracker_init(&t, 8);
    touch_range(&t, 0, 10000);
    /* a hit walks about 1.5 items of its chain (uthash alone: about 3) */
    const UT_hash_table *tbl = t.items->hh.tbl;
    double walk = 0;
    for (unsigned b = 0; b < tbl->num_buckets; b++)
        walk += tbl->buckets[b].count * (tbl->buckets[b].count + 1) / 2.0;
    cr_assert_lt(walk / tbl->num_items, 2.0, "a hit walks %.2f items", walk / tbl->num_items);
    tracker_free(&t);
}

Test(tracker, every_item_is_found_across_growth_and_removals)
{
    tracker t;
    tracker_init(&t, 8);
    touch_range(&t, 0, 5000);
    char id[64];
    for (int i = 0; i < 5000; i += 2) {
        id_of(id, sizeof id, i);
        item *it = tracker_find(&t, id);
        cr_assert_not_null(it, "%s", id);
        tracker_remove(&t, it);
    }
    touch_range(&t, 5000, 9000);
    cr_assert_eq(t.count, 2500 + 4000);
    for (int i = 0; i < 9000; i++) {
        id_of(id, sizeof id, i);
        item *it = tracker_find(&t, id);
        if (i < 5000 && i % 2 == 0) {
            cr_assert_null(it, "%s was removed", id);
        } else {
            cr_assert_not_null(it, "%s", id);
            cr_assert_str_eq(it->id, id);
        }
    }
    tracker_free(&t);
}

/* tracker_find_many answers as tracker_find_n does, id by id: present and
 * absent ids mixed, batches of one, of its size, and longer (done in
 * batches), on a table with removals in it and on an empty one. */
Test(tracker, find_many_answers_as_find_one_by_one)
{
    tracker t;
    tracker_init(&t, 8);
    item *none[1];
    const char *absent = "proj00000core";
    size_t absent_n = strlen(absent);
    tracker_find_many(&t, 1, &absent, &absent_n, none);
    cr_assert_null(none[0], "an empty table finds nothing");
    touch_range(&t, 0, 3000);
    char id[64];
    for (int i = 0; i < 3000; i += 3) {
        id_of(id, sizeof id, i);
        tracker_remove(&t, tracker_find(&t, id));
    }
    enum { N = 100 };
    char ids[N][64];
    const char *p[N];
    size_t lens[N];
    item *out[N];
    for (size_t n = 1; n <= N; n = n < 32 ? n * 2 : n + 34) {
        for (size_t i = 0; i < n; i++) {
            /* ids 0..5999: half beyond the table, a third of the rest removed */
            id_of(ids[i], sizeof ids[i], (int)((i * 7919 + n * 31) % 6000));
            p[i] = ids[i];
            lens[i] = strlen(ids[i]);
        }
        tracker_find_many(&t, n, p, lens, out);
        size_t found = 0;
        for (size_t i = 0; i < n; i++) {
            cr_assert_eq(out[i], tracker_find_n(&t, p[i], lens[i]), "%s in a batch of %zu", p[i], n);
            found += out[i] != NULL;
        }
        if (n >= 32) cr_assert(found > 0 && found < n, "%zu of %zu found: both kinds are asked", found, n);
    }
    tracker_free(&t);
}

/* Which changes the turn log may write as a touch (ITEM_DIRTY_TOUCHED,
 * its counts alone): a mention or reference of an unchanged item, in one
 * turn.  Any other change since the last persist makes it whole. */
Test(tracker, only_a_mention_or_reference_in_one_turn_is_a_touch)
{
    tracker t;
    tracker_init(&t, 16);
    t.current_turn = 5;
    item *a = tracker_mention(&t, "alpha", CAT_PROJECT, 0);
    item *b = tracker_touch(&t, "beta", CAT_PROJECT, 0);
    cr_assert_eq(a->dirty, ITEM_DIRTY, "a new item is whole");
    tracker_clear_dirty(&t);
    cr_assert_eq(t.touch_state, 0);
    tracker_mention(&t, "alpha", CAT_PROJECT, 0); /* counted once a turn: no change */
    cr_assert_eq(a->dirty, 0);
    cr_assert_eq(t.touch_state, 0);
    tracker_reference(&t, a);
    tracker_mention(&t, "beta", CAT_PROJECT, 0);
    cr_assert_eq(a->dirty, ITEM_DIRTY_TOUCHED);
    cr_assert_eq(b->dirty, ITEM_DIRTY_TOUCHED);
    cr_assert(t.touch_state == 1 && t.touch_turn == 5, "state %d, turn %lld", t.touch_state, (long long)t.touch_turn);
    tracker_anchor(&t, a, NULL, 0);
    cr_assert_eq(a->dirty, ITEM_DIRTY, "a touch and an anchor: whole");
    cr_assert_eq(b->dirty, ITEM_DIRTY_TOUCHED);
    b->pruned = 1;
    tracker_mark_pruned(&t, b);
    cr_assert_eq(b->dirty, ITEM_DIRTY, "a touch and a prune: whole");
    tracker_clear_dirty(&t);
    /* a prune, then a mention that revives the item: whole */
    b->pruned = 1;
    tracker_mark_pruned(&t, b);
    cr_assert_eq(b->dirty, ITEM_DIRTY_PRUNED);
    tracker_mention(&t, "beta", CAT_PROJECT, 0);
    cr_assert_eq(b->dirty, ITEM_DIRTY);
    tracker_clear_dirty(&t);
    /* touches of two turns before a persist */
    tracker_advance_turn(&t);
    tracker_mention(&t, "alpha", CAT_PROJECT, 0);
    cr_assert_eq(t.touch_state, 1);
    tracker_advance_turn(&t);
    tracker_reference(&t, b);
    cr_assert_eq(b->dirty, ITEM_DIRTY_TOUCHED);
    cr_assert_eq(t.touch_state, 2, "two turns' touches are marked");
    tracker_clear_dirty(&t);
    cr_assert_eq(t.touch_state, 0);
    /* a mention whose count is at the limit pushes a turn the count does not show */
    tracker_advance_turn(&t);
    a->mention_count = TRACKER_COUNT_MAX;
    tracker_mention(&t, "alpha", CAT_PROJECT, 0);
    cr_assert_eq(a->dirty, ITEM_DIRTY, "a saturated mention is whole");
    tracker_free(&t);
}

/* The length of the dirty list. */
static size_t dirty_count(const tracker *t)
{
    size_t n = 0;
    for (const item *it = t->dirty; it; it = it->dirty_next) n++;
    return n;
}

/* A bulk prune leaves the items it prunes off the dirty list (those on it
 * already stay, whole when touched), marks them for the snapshot, and
 * ends with the list cleared; spilled (its record failed), or before an
 * item goes away, its items go on the list as pruned-only ones. */
Test(tracker, a_bulk_prune_keeps_its_items_off_the_dirty_list_until_spilled)
{
    for (int round = 0; round < 3; round++) {
        tracker t;
        tracker_init(&t, 4);
        t.current_turn = 7;
        touch_range(&t, 0, 40);
        tracker_clear_dirty(&t);
        item *touched = tracker_mention(&t, "keyword:word00002", CAT_KEYWORD, 0);
        cr_assert_eq(touched->dirty, ITEM_DIRTY_TOUCHED);
        item **kept = malloc(2 * sizeof *kept);
        kept[0] = tracker_find(&t, "proj00000core");
        kept[1] = tracker_find(&t, "proj00003core");
        item *k0 = kept[0], *k1 = kept[1];
        cr_assert_eq(tracker_bulk_begin(&t, kept, 2), 0);
        cr_assert_eq(tracker_bulk_begin(&t, malloc(8), 0), -1, "a second bulk prune under way");
        cr_assert(t.bulk && t.bulk_turn == 7 && t.n_bulk_kept == 2);
        for (item *it = t.items; it; it = it->hh.next)
            if (it != k0 && it != k1) tracker_prune(&t, it, 1);
        size_t pruned = 0;
        for (item *it = t.items; it; it = it->hh.next) {
            pruned += it->pruned;
            if (it->pruned) cr_assert_eq(it->pruned_turn, 7);
            /* the record writes the list's items; the fold those off it */
            if (it->pruned && it != touched) cr_assert(it->snap_dirty);
        }
        cr_assert_eq(pruned, 38);
        cr_assert_eq(dirty_count(&t), 1, "only the item dirty before is on the list");
        cr_assert_eq(touched->dirty, ITEM_DIRTY, "a touch and a prune: whole");
        if (round == 0) {
            tracker_clear_dirty(&t); /* written */
            cr_assert(!t.bulk && !t.bulk_kept);
            cr_assert_eq(dirty_count(&t), 0);
        } else if (round == 1) {
            tracker_bulk_spill(&t); /* not written */
            cr_assert(!t.bulk && !t.bulk_kept);
            cr_assert_eq(dirty_count(&t), 38);
            cr_assert_eq(touched->dirty, ITEM_DIRTY);
            for (item *it = t.items; it; it = it->hh.next)
                if (it->pruned && it != touched) cr_assert_eq(it->dirty, ITEM_DIRTY_PRUNED);
        } else {
            tracker_remove(&t, tracker_find(&t, "keyword:word00005")); /* spills first */
            cr_assert(!t.bulk && !t.bulk_kept);
            cr_assert_eq(dirty_count(&t), 37);
            cr_assert_eq(t.n_deleted, 1);
        }
        tracker_free(&t);
    }
}
