/* tracker.h: per-session item table with O(1) running statistics.
 *
 * Items live in a uthash table keyed by their normalized id.  A mention or a
 * reference costs one hash lookup and a few stores; only scoring for a
 * context block, a prune or an eviction walks the whole table.  Items touched
 * since the last persist sit on an intrusive dirty list, so persisting a turn
 * writes only what changed.
 */
#ifndef TRACKER_TRACKER_H
#define TRACKER_TRACKER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "../util/namefilter.h"

/* Stored as numbers: new categories go at the end. */
enum item_category { CAT_PROJECT = 0, CAT_TOOL, CAT_FILE, CAT_KEYWORD, CAT_CUSTOM, CAT_TEST, CAT__COUNT };
enum item_tier { TIER_ESSENTIAL = 0, TIER_HIGH, TIER_NORMAL, TIER_LOW, TIER__COUNT };

#define ITEM_HISTORY_MAX 32 /* hard bound of the per-item mention history ring */

/* Bounds of what the state holds.  Turns fit the history ring's int32;
 * counts and millisecond times stay exact in a double (and in JavaScript,
 * where the original plugin's state comes from).  Loads and imports refuse
 * anything outside them; counters saturate at them. */
#define TRACKER_TURN_MAX INT32_MAX
#define TRACKER_COUNT_MAX (((int64_t)1 << 53) - 1)
#define TRACKER_TURN_KEYS 64 /* turn keys remembered per session */

/* Laid out for size (issue: bytes per tracked item) and for the walks
 * over every item: what a compaction's apply and turn-log write touch
 * (the lists' links, the flags, the pruned turn) sits in the first 48
 * bytes, next to what scoring reads (the flags and the four counters
 * after them), so a walk misses one or two cache lines per item, not
 * three or four.  The mention-history ring is last, sized by
 * limits.historyLength at allocation. */
typedef struct item {
    char *id; /* NUL-terminated, hash key; in the item's allocation, after history */
    struct item *dirty_next;
    struct item *rank_next;
    int8_t category; /* enum item_category */
    int8_t tier;     /* enum item_tier */
    uint8_t anchored, pruned;
    uint8_t dirty;       /* ITEM_DIRTY, ITEM_DIRTY_PRUNED or 0 */
    uint8_t snap_dirty;  /* changed since the stored snapshot (persist.c's turn log; a bulk prune's) */
    uint8_t rank_queued; /* on the tracker's rank queue */
    uint8_t hist_len;
    uint32_t rank_ver; /* bumped at every change a score bound depends on */
    uint8_t hist_head;
    int64_t pruned_turn;
    int64_t mention_count;
    int64_t reference_count;
    int64_t last_mention_turn;   /* the first-seen turn until first mentioned */
    int64_t last_reference_turn; /* -1 when never referenced */
    int64_t first_seen_turn;
    int64_t anchor_at_ms;
    int64_t created_at_ms;
    char *anchor_reason; /* owned or NULL */
    UT_hash_handle hh;
    int32_t history[]; /* ring of the last turns with a mention */
} item;

typedef struct tracker {
    item *items; /* uthash head */
    size_t count;
    int64_t current_turn;
    int64_t last_persist_ms;
    int history_length; /* <= ITEM_HISTORY_MAX */
    item *dirty;        /* intrusive list of items changed since last persist */
    /* the turn of the mentions and references of the touched-only items
     * (ITEM_DIRTY_TOUCHED) on it, and whether it is one turn: 0 none
     * since the list was last taken, 1 one turn, 2 more than one */
    int64_t touch_turn;
    int touch_state;
    int meta_dirty;     /* the stored meta JSON changed (workspace, turn keys, ...) */
    int turn_dirty;     /* the turn advanced (a turn-log record holds it without the meta) */
    /* ids evicted since last persist: the store must delete them */
    char **deleted;
    size_t n_deleted, cap_deleted;
    int oom; /* set by uthash on allocation failure */
    /* Bloom filter of the items' bare names (reference prefilter); items
     * removed since the last rebuild still answer "maybe" until then. */
    name_filter names;
    size_t names_removed;
    int names_deferred; /* a load filled the table: the filter waits for its first read (tracker_names) */
    /* For an index of the items by score bound (engine/rankidx.c): the
     * items changed since it last looked, and a generation, unique in the
     * process, that changes at init, free and whenever items go away. */
    item *rank_q;
    size_t n_rank_q; /* its length: the index reserves for it without walking it twice */
    /* The queue holds every unpruned item (a bulk prune queued the ones
     * it kept and pruned the rest): an index starts over from it. */
    int rank_restart;
    /* A bulk prune since the last persist (tracker_bulk_begin): the items
     * it left unpruned (owned), their count, its turn. */
    item **bulk_kept;
    size_t n_bulk_kept;
    int64_t bulk_turn;
    int bulk;
    uint64_t rank_gen;
    /* hashes of the last turn keys counted (agent_end's turn_key), a ring */
    uint64_t turn_keys[TRACKER_TURN_KEYS];
    size_t n_turn_keys;
} tracker;

void tracker_init(tracker *t, int history_length);
void tracker_free(tracker *t);

const char *tracker_category_name(int cat);
int tracker_category_from_name(const char *s); /* -1 when unknown */
const char *tracker_tier_name(int tier);
int tracker_tier_from_name(const char *s); /* -1 when unknown */
/* Category implied by an id's prefix: "tool:", "file:", "keyword:", another
 * "<name>:" is custom, no prefix is a project. */
int tracker_category_of_id(const char *id);

item *tracker_find(tracker *t, const char *id);
/* The same for id[0..n) (no NUL needed). */
item *tracker_find_n(tracker *t, const char *id, size_t n);

/* Looks up n ids: out[i] is the item of ids[i][0, lens[i]), or NULL.  The
 * same answers as tracker_find_n one by one, but the memory each lookup
 * reads (its bucket, then its item) is requested for a batch of
 * TRACKER_FIND_MANY before any is waited for: with more items than the
 * caches hold, a lookup alone waits for two or three misses in a row, and
 * a turn's references are a few dozen of them. */
#define TRACKER_FIND_MANY 32
void tracker_find_many(tracker *t, size_t n, const char *const *ids, const size_t *lens, item **out);
/* Finds or creates the item.  Returns NULL on allocation failure (state unchanged). */
item *tracker_touch(tracker *t, const char *id, int category, int64_t now_ms);
/* Records a mention in the current turn.  An item counts at most one
 * mention per turn (a turn is one exchange; a retried prompt must not double
 * its weight).  Revives a pruned item. */
item *tracker_mention(tracker *t, const char *id, int category, int64_t now_ms);
/* Records a reference in the current turn, at most one per turn.  Revives
 * a pruned item.  Returns 1 when counted, 0 when already counted. */
int tracker_reference(tracker *t, item *it);
void tracker_anchor(tracker *t, item *it, const char *reason, int64_t now_ms);
void tracker_unanchor(tracker *t, item *it);
void tracker_set_tier(tracker *t, item *it, int tier);
/* Marks it changed since the last persist, and queues it for the rank
 * index.  Every change of an item's counts or anchor goes through here;
 * a loader that sets fields directly fills a tracker just initialized,
 * whose new generation makes the index rebuild. */
void tracker_mark_dirty(tracker *t, item *it);
/* The same for a change of its pruned flag and turn alone: the turn log
 * then writes its id, not its whole form (a change through
 * tracker_mark_dirty before the next persist makes it whole again). */
void tracker_mark_pruned(tracker *t, item *it);
/* A bulk prune: a compaction that prunes most of a large session's
 * items (100,000, keeping a few dozen).  kept[0..n) (malloc()ed; owned
 * from the call, also when it fails) are the items that stay unpruned,
 * and the caller then prunes every other unpruned item with
 * tracker_prune(.., 1).  Those items stay off the dirty list
 * unless they are on it already: the turn log writes the kept items and
 * the turn instead of 100,000 ids, and a walk over the pruned ones at the
 * write (each a cache miss or two) is saved.  The bulk ends when the
 * dirty list is cleared (the write succeeded) or spilled
 * (tracker_bulk_spill: the write failed), and before an item goes away.
 * Returns 0, or -1 when a bulk prune is under way already (kept freed). */
int tracker_bulk_begin(tracker *t, item **kept, size_t n);
/* Prunes it at the current turn (tracker_mark_pruned), or, in_bulk (in
 * the bulk prune the caller began), off the dirty list and the rank
 * queue unless it is on the list already.  A rank index does not hold
 * pruned items: the bulk queues its kept items and has the index start
 * over from the queue (t->rank_restart), so that the pruned ones need not
 * be queued (100,000 cache misses at the next sync). */
void tracker_prune(tracker *t, item *it, int in_bulk);
/* Puts the items of the bulk prune under way, if any, on the dirty list
 * as pruned-only ones, and ends it: its record was not written.  Walks
 * every item. */
void tracker_bulk_spill(tracker *t);
/* Values of item.dirty: not changed, changed, pruned only, touched only:
 * mentioned or referenced in the current turn and changed in no other way
 * since the last persist (a mention whose count is already at
 * TRACKER_COUNT_MAX changes it whole: its history entry would not show in
 * the count).  When t->touch_state is 1 every such item was touched in
 * t->touch_turn, and the turn log writes its counts alone. */
#define ITEM_DIRTY 1
#define ITEM_DIRTY_PRUNED 2
#define ITEM_DIRTY_TOUCHED 3
/* Removes and frees an item, remembering its id for deletion from the store. */
void tracker_remove(tracker *t, item *it);
/* Removes and frees an item without touching the store (one that was never
 * valid there, such as a refused row). */
void tracker_discard(tracker *t, item *it);
void tracker_advance_turn(tracker *t);
/* Whether a turn key (its hash) was counted; remembering one adds it to the
 * ring (the oldest leaves) and marks the meta dirty. */
static inline uint64_t tracker_key_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}
int tracker_turn_key_seen(const tracker *t, uint64_t h);
void tracker_turn_key_add(tracker *t, uint64_t h);

/* The name an id is written as in text: the id without its category
 * prefix ("tool:web_search" -> "web_search"); projects are bare already. */
const char *tracker_bare_name(const char *id, int category);
/* An item's id length: its table key's length, without reading the id,
 * for an item in a tracker's table (ids are never empty); strlen for an
 * item built outside one (hh zeroed). */
static inline size_t tracker_id_len(const item *it) { return it->hh.keylen ? it->hh.keylen : strlen(it->id); }
/* Rebuilds the name filter from the items (after many removals, and to
 * end a load). */
void tracker_rebuild_names(tracker *t);
/* Before a load (a restore, an import) adds many items: the filter is
 * dropped (it passes every name meanwhile) and not kept up to date until
 * tracker_names or tracker_rebuild_names builds it once. */
void tracker_defer_names(tracker *t);
/* The name filter, built first when a load left it deferred: a load does
 * not build it, since only the reference scans read it (a Claude Code
 * prompt's process never does, and at 10,000 items the build was a ninth
 * of that process). */
static inline const name_filter *tracker_names(tracker *t)
{
    if (t->names_deferred) tracker_rebuild_names(t);
    return &t->names;
}

/* Clears the dirty list and the deleted ids (after a successful persist). */
void tracker_clear_dirty(tracker *t);

/* History access: i = 0 is the most recent mention turn. */
size_t tracker_history(const item *it, int64_t *out, size_t max);
void tracker_history_push(tracker *t, item *it, int64_t turn);

#endif
