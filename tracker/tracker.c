#include "tracker.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* uthash reports allocation failure through this hook instead of exit(). */
#undef uthash_nonfatal_oom
#define uthash_nonfatal_oom(obj) (t->oom = 1)

static const char *const cat_names[CAT__COUNT] = {"project", "tool", "file", "keyword", "custom", "test"};
static const char *const tier_names[TIER__COUNT] = {"essential", "high", "normal", "low"};

/* A generation number no tracker of this process has had. */
static uint64_t new_gen(void)
{
    static _Atomic uint64_t next = 1;
    return atomic_fetch_add(&next, 1);
}

void tracker_init(tracker *t, int history_length)
{
    memset(t, 0, sizeof *t);
    t->rank_gen = new_gen();
    if (history_length < 1) history_length = 1;
    if (history_length > ITEM_HISTORY_MAX) history_length = ITEM_HISTORY_MAX;
    t->history_length = history_length;
}

static void item_free(item *it)
{
    free(it->anchor_reason);
    free(it);
}

void tracker_free(tracker *t)
{
    /* the table goes whole, then the items along their list: unlinking
     * each item from its bucket first was a third of freeing a session */
    item *it = t->items;
    HASH_CLEAR(hh, t->items);
    while (it) {
        item *next = it->hh.next;
        item_free(it);
        it = next;
    }
    for (size_t i = 0; i < t->n_deleted; i++) free(t->deleted[i]);
    free(t->deleted);
    free(t->bulk_kept);
    name_filter_free(&t->names);
    memset(t, 0, sizeof *t);
    t->rank_gen = new_gen(); /* a rank index of the freed items rebuilds */
}

const char *tracker_bare_name(const char *id, int category)
{
    if (category == CAT_PROJECT) return id;
    const char *c = strchr(id, ':');
    return c ? c + 1 : id;
}

void tracker_rebuild_names(tracker *t)
{
    t->names_deferred = 0; /* without memory below, the next add tries again */
    if (name_filter_reset(&t->names, t->count * 2 + 64) != 0) return; /* passes all */
    for (item *it = t->items; it; it = it->hh.next) {
        const char *bare = tracker_bare_name(it->id, it->category);
        name_filter_add(&t->names, bare, strlen(bare), it->id, tracker_id_len(it));
    }
    t->names_removed = 0;
}

void tracker_defer_names(tracker *t)
{
    name_filter_free(&t->names);
    t->names_deferred = 1;
}

static void names_add(tracker *t, const item *it)
{
    if (t->names_deferred) return;
    if (!t->names.nbits || (t->names.n + 1) * 16 > t->names.nbits) {
        tracker_rebuild_names(t); /* grows the filter; the new item is already in the table */
        return;
    }
    const char *bare = tracker_bare_name(it->id, it->category);
    name_filter_add(&t->names, bare, strlen(bare), it->id, tracker_id_len(it));
}

const char *tracker_category_name(int cat)
{
    return cat >= 0 && cat < CAT__COUNT ? cat_names[cat] : "unknown";
}

int tracker_category_from_name(const char *s)
{
    for (int i = 0; s && i < CAT__COUNT; i++)
        if (strcmp(s, cat_names[i]) == 0) return i;
    return -1;
}

const char *tracker_tier_name(int tier)
{
    return tier >= 0 && tier < TIER__COUNT ? tier_names[tier] : "normal";
}

int tracker_tier_from_name(const char *s)
{
    for (int i = 0; s && i < TIER__COUNT; i++)
        if (strcmp(s, tier_names[i]) == 0) return i;
    return -1;
}

int tracker_category_of_id(const char *id)
{
    if (strncmp(id, "tool:", 5) == 0) return CAT_TOOL;
    if (strncmp(id, "file:", 5) == 0) return CAT_FILE;
    if (strncmp(id, "keyword:", 8) == 0) return CAT_KEYWORD;
    if (strncmp(id, "test:", 5) == 0) return CAT_TEST;
    return strchr(id, ':') ? CAT_CUSTOM : CAT_PROJECT;
}

/* The table's own hash of an id, eight bytes at a time (uthash's default
 * hashes a byte at a time; ids are looked up for every candidate a turn's
 * text yields).  Every add and find of t->items goes through it. */
static unsigned id_hash(const char *id, size_t n)
{
    return (unsigned)name_mix_bytes(0x452821e638d01377ull ^ n, id, n);
}

/* uthash doubles its buckets only once a chain reaches 10 items, so a
 * table of 1,000 items has 256 and a lookup walks three items on average,
 * each a cache miss on the item (its hash is stored there).  Doubled here
 * at one item a bucket, a lookup walks one or two; a failed doubling only
 * leaves the chains longer. */
static void grow_buckets(tracker *t)
{
    UT_hash_table *tbl = t->items->hh.tbl;
    if (tbl->num_items <= tbl->num_buckets || tbl->noexpand) return;
    int oom = 0;
    HASH_EXPAND_BUCKETS(hh, tbl, oom);
    (void)oom;
}

/* The item of id[0..n), whose id_hash is h, or NULL. */
static item *find_hashed(tracker *t, const char *id, size_t n, unsigned h)
{
    item *it = NULL;
    HASH_FIND_BYHASHVALUE(hh, t->items, id, n, h, it);
    return it;
}

item *tracker_find_n(tracker *t, const char *id, size_t n) { return find_hashed(t, id, n, id_hash(id, n)); }

item *tracker_find(tracker *t, const char *id) { return tracker_find_n(t, id, strlen(id)); }

void tracker_find_many(tracker *t, size_t n, const char *const *ids, const size_t *lens, item **out)
{
    unsigned h[TRACKER_FIND_MANY];
    for (; n > TRACKER_FIND_MANY; n -= TRACKER_FIND_MANY) { /* in batches of what h holds */
        tracker_find_many(t, TRACKER_FIND_MANY, ids, lens, out);
        ids += TRACKER_FIND_MANY;
        lens += TRACKER_FIND_MANY;
        out += TRACKER_FIND_MANY;
    }
    if (!t->items) {
        for (size_t i = 0; i < n; i++) out[i] = NULL;
        return;
    }
    const UT_hash_table *tbl = t->items->hh.tbl;
    const unsigned mask = tbl->num_buckets - 1;
    /* each pass requests what the one before made known: the buckets, then
     * the first item of each chain (its hash handle, and the counters a
     * reference updates).  Requesting the ids too (a third pass) gained
     * nothing measurable. */
    for (size_t i = 0; i < n; i++) {
        h[i] = id_hash(ids[i], lens[i]);
        __builtin_prefetch(&tbl->buckets[h[i] & mask]);
    }
    for (size_t i = 0; i < n; i++) {
        const UT_hash_handle *hh = tbl->buckets[h[i] & mask].hh_head;
        if (!hh) continue;
        const char *it = (const char *)hh - tbl->hho;
        __builtin_prefetch(hh);
        __builtin_prefetch(it);
        __builtin_prefetch(it + 64);
    }
    for (size_t i = 0; i < n; i++) out[i] = find_hashed(t, ids[i], lens[i], h[i]);
}

/* Queues it for the rank index (rankidx.c), once until the index drains it. */
static void rank_note(tracker *t, item *it)
{
    it->rank_ver++;
    if (it->rank_queued) return;
    it->rank_queued = 1;
    it->rank_next = t->rank_q;
    t->rank_q = it;
    t->n_rank_q++;
}

static void dirty_link(tracker *t, item *it, uint8_t how)
{
    it->dirty = how;
    it->dirty_next = t->dirty;
    t->dirty = it;
}

void tracker_mark_dirty(tracker *t, item *it)
{
    rank_note(t, it);
    if (!it->dirty) dirty_link(t, it, ITEM_DIRTY);
    else it->dirty = ITEM_DIRTY; /* a pruned-only item is on the list already */
}

void tracker_mark_pruned(tracker *t, item *it)
{
    rank_note(t, it);
    if (!it->dirty) dirty_link(t, it, ITEM_DIRTY_PRUNED);
    else if (it->dirty == ITEM_DIRTY_TOUCHED) it->dirty = ITEM_DIRTY; /* a touch and a prune: whole */
}

static void bulk_end(tracker *t)
{
    free(t->bulk_kept);
    t->bulk_kept = NULL;
    t->n_bulk_kept = 0;
    t->bulk = 0;
}

int tracker_bulk_begin(tracker *t, item **kept, size_t n)
{
    if (t->bulk) {
        free(kept);
        return -1;
    }
    t->bulk_kept = kept;
    t->n_bulk_kept = n;
    t->bulk_turn = t->current_turn;
    t->bulk = 1;
    for (size_t i = 0; i < n; i++) rank_note(t, kept[i]);
    t->rank_restart = 1;
    return 0;
}

void tracker_prune(tracker *t, item *it, int in_bulk)
{
    it->pruned = 1;
    it->pruned_turn = t->current_turn;
    if (!in_bulk || it->dirty) {
        tracker_mark_pruned(t, it);
        return;
    }
    /* off the list: the record's kept section stands for it, and the
     * snapshot's next fold writes its row; off the rank queue (the index
     * starts over from the kept items) */
    it->snap_dirty = 1;
}

void tracker_bulk_spill(tracker *t)
{
    if (!t->bulk) return;
    /* (an item pruned in the bulk's turn before it, and written then, is
     * written again: harmless) */
    for (item *it = t->items; it; it = it->hh.next)
        if (it->pruned && !it->dirty && it->pruned_turn == t->bulk_turn) dirty_link(t, it, ITEM_DIRTY_PRUNED);
    bulk_end(t);
}

/* A mention or reference in the current turn; whole: one the turn log
 * cannot write as a touch (ITEM_DIRTY_TOUCHED). */
static void mark_touched(tracker *t, item *it, int whole)
{
    if (whole || (it->dirty && it->dirty != ITEM_DIRTY_TOUCHED)) {
        tracker_mark_dirty(t, it);
        return;
    }
    rank_note(t, it);
    if (!it->dirty) dirty_link(t, it, ITEM_DIRTY_TOUCHED);
    if (!t->touch_state) {
        t->touch_state = 1;
        t->touch_turn = t->current_turn;
    } else if (t->touch_turn != t->current_turn) {
        t->touch_state = 2; /* touches of two turns: the log writes them whole */
    }
}

item *tracker_touch(tracker *t, const char *id, int category, int64_t now_ms)
{
    size_t n = strlen(id);
    unsigned h = id_hash(id, n); /* once, for the find and the add */
    item *it = find_hashed(t, id, n, h);
    if (it) return it;
    /* the id lives after the history ring, in the item's allocation: one
     * allocation per item, and a walk that reads ids misses less */
    size_t hist = (size_t)t->history_length * sizeof it->history[0];
    /* malloc (glibc's calloc skips its per-thread cache) and the header
     * cleared: the history ring is read only up to hist_len */
    it = malloc(sizeof *it + hist + n + 1);
    if (!it) return NULL;
    memset(it, 0, sizeof *it);
    it->id = (char *)it->history + hist;
    memcpy(it->id, id, n + 1);
    it->category = (int8_t)category;
    it->tier = TIER_NORMAL;
    it->first_seen_turn = t->current_turn;
    /* An item that enters without a mention (a file the agent touched) ages
     * from the turn it was first seen. */
    it->last_mention_turn = t->current_turn;
    it->last_reference_turn = -1;
    it->pruned_turn = -1;
    it->created_at_ms = now_ms;
    int oom_before = t->oom;
    HASH_ADD_KEYPTR_BYHASHVALUE(hh, t->items, it->id, n, h, it);
    if (t->oom && !oom_before) {
        t->oom = 0;
        item_free(it);
        return NULL;
    }
    t->count++;
    grow_buckets(t);
    names_add(t, it);
    /* A previously evicted id that comes back must not be deleted later. */
    for (size_t i = 0; i < t->n_deleted; i++) {
        if (strcmp(t->deleted[i], id) == 0) {
            free(t->deleted[i]);
            t->deleted[i] = t->deleted[--t->n_deleted];
            break;
        }
    }
    tracker_mark_dirty(t, it);
    return it;
}

void tracker_history_push(tracker *t, item *it, int64_t turn)
{
    int cap = t->history_length;
    it->history[it->hist_head] = (int32_t)turn;
    it->hist_head = (uint8_t)((it->hist_head + 1) % cap);
    if (it->hist_len < cap) it->hist_len++;
}

size_t tracker_history(const item *it, int64_t *out, size_t max)
{
    /* Walk back from the newest entry; the ring size is the history length
     * in force when the entries were pushed, so recover it from hist_len
     * when the ring has not wrapped. */
    size_t n = it->hist_len < max ? it->hist_len : max;
    int cap = it->hist_len;
    if (cap == 0) return 0;
    int idx = (int)it->hist_head - 1; /* the newest, then one back at a time */
    if (idx < 0) idx = cap - 1;
    else if (idx >= cap) idx %= cap; /* pushed under a longer history (no division otherwise) */
    for (size_t i = 0; i < n; i++) {
        out[i] = it->history[idx];
        idx = idx ? idx - 1 : cap - 1;
    }
    return n;
}

item *tracker_mention(tracker *t, const char *id, int category, int64_t now_ms)
{
    item *it = tracker_touch(t, id, category, now_ms);
    if (!it) return NULL;
    if (it->mention_count > 0 && it->last_mention_turn == t->current_turn && !it->pruned)
        return it;
    /* a history entry the count does not show: the turn log writes it whole */
    int saturated = it->mention_count >= TRACKER_COUNT_MAX;
    if (!saturated) it->mention_count++;
    it->last_mention_turn = t->current_turn;
    it->pruned = 0;
    it->pruned_turn = -1;
    tracker_history_push(t, it, t->current_turn);
    mark_touched(t, it, saturated);
    return it;
}

int tracker_reference(tracker *t, item *it)
{
    if (it->last_reference_turn == t->current_turn && it->reference_count > 0) return 0;
    if (it->reference_count < TRACKER_COUNT_MAX) it->reference_count++;
    it->last_reference_turn = t->current_turn;
    it->pruned = 0;
    it->pruned_turn = -1;
    mark_touched(t, it, 0);
    return 1;
}

void tracker_anchor(tracker *t, item *it, const char *reason, int64_t now_ms)
{
    char *r = reason ? strdup(reason) : NULL;
    free(it->anchor_reason);
    it->anchor_reason = r;
    it->anchored = 1;
    it->anchor_at_ms = now_ms;
    it->pruned = 0;
    tracker_mark_dirty(t, it);
}

void tracker_unanchor(tracker *t, item *it)
{
    free(it->anchor_reason);
    it->anchor_reason = NULL;
    it->anchored = 0;
    it->anchor_at_ms = 0;
    tracker_mark_dirty(t, it);
}

void tracker_set_tier(tracker *t, item *it, int tier)
{
    it->tier = (int8_t)tier;
    tracker_mark_dirty(t, it);
}

/* Unlinks and frees an item; with forget, its id goes to the deleted list. */
static void remove_item(tracker *t, item *it, int forget)
{
    tracker_bulk_spill(t); /* its kept list may hold it */
    if (forget && t->n_deleted == t->cap_deleted) {
        size_t cap = t->cap_deleted ? t->cap_deleted * 2 : 16;
        char **d = realloc(t->deleted, cap * sizeof *d);
        if (d) {
            t->deleted = d;
            t->cap_deleted = cap;
        }
    }
    /* Unlink from the dirty list first (it is singly linked). */
    if (it->dirty) {
        item **pp = &t->dirty;
        while (*pp && *pp != it) pp = &(*pp)->dirty_next;
        if (*pp) *pp = it->dirty_next;
    }
    HASH_DELETE(hh, t->items, it);
    t->count--;
    /* the rank index may point at it: it rebuilds (the queue is dropped,
     * and the queued flags are reset by that rebuild) */
    t->rank_gen = new_gen();
    t->rank_q = NULL;
    t->n_rank_q = 0;
    t->rank_restart = 0;
    if (++t->names_removed > t->count) tracker_rebuild_names(t);
    if (forget && t->n_deleted < t->cap_deleted && (t->deleted[t->n_deleted] = strdup(it->id)))
        t->n_deleted++;
    item_free(it);
}

void tracker_remove(tracker *t, item *it) { remove_item(t, it, 1); }

void tracker_discard(tracker *t, item *it) { remove_item(t, it, 0); }

void tracker_advance_turn(tracker *t)
{
    if (t->current_turn < TRACKER_TURN_MAX) t->current_turn++;
    t->turn_dirty = 1;
}

void tracker_clear_dirty(tracker *t)
{
    item *it = t->dirty;
    while (it) {
        item *next = it->dirty_next;
        it->dirty = 0;
        it->dirty_next = NULL;
        it = next;
    }
    t->dirty = NULL;
    bulk_end(t);
    t->touch_state = 0;
    t->meta_dirty = 0;
    t->turn_dirty = 0;
    for (size_t i = 0; i < t->n_deleted; i++) free(t->deleted[i]);
    t->n_deleted = 0;
}

int tracker_turn_key_seen(const tracker *t, uint64_t h)
{
    size_t n = t->n_turn_keys < TRACKER_TURN_KEYS ? t->n_turn_keys : TRACKER_TURN_KEYS;
    for (size_t i = 0; i < n; i++)
        if (t->turn_keys[i] == h) return 1;
    return 0;
}

void tracker_turn_key_add(tracker *t, uint64_t h)
{
    t->turn_keys[t->n_turn_keys % TRACKER_TURN_KEYS] = h;
    t->n_turn_keys++;
    t->meta_dirty = 1;
}
