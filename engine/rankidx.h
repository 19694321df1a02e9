/* rankidx.h: a session's best items in the order of their turn-free
 * score bound (scorer_bound_core), kept up to date between turns, so the
 * context block reads the best items first and stops as soon as no later
 * item can reach it, instead of bounding every item every turn.
 *
 * A block reads a handful of items (ten or so at 10,000 items), so the
 * index holds only the unpruned items whose bound is above its floor:
 * every such item has its current entry, no other item has to (a block
 * passes over pruned items).  The tracker queues every item whose counts,
 * anchor or pruned flag change (tracker_mark_dirty); a sync sorts the
 * queue's unpruned entries above the floor into the array and drops the
 * rest.  After a bulk prune the queue holds every unpruned item
 * (t->rank_restart), and the index starts over from it.  Items going away
 * change the tracker's generation, and the index is rebuilt whole.  When
 * the array holds many more entries than walks read, the floor is raised
 * and the entries below it are cut off.  A walk that runs out of entries
 * before it may stop (items below the floor could still reach the block)
 * has the index rebuilt whole (rankidx_deepen) and walks again.  An entry
 * records the item's rank_ver when it was made: one that no longer
 * matches was superseded and is skipped. */
#ifndef ENGINE_RANKIDX_H
#define ENGINE_RANKIDX_H

#include <stddef.h>
#include <stdint.h>

#include "../config/config.h"
#include "../scorer/scorer.h"
#include "../tracker/tracker.h"

/* Below this many items bounding every item is cheaper than keeping the
 * index (short sessions): the block scans them. */
#define RANKIDX_MIN_ITEMS 256

typedef struct rank_slot {
    double core; /* scorer_bound_core when the entry was made */
    item *it;
    uint32_t ver; /* it->rank_ver then */
    uint32_t key; /* scratch of rankidx_sort */
} rank_slot;

/* Fewest entries a cut keeps, beside 4 times the entries walks read. */
#define RANKIDX_KEEP_MIN 32
/* How many walks' reads a cut keeps room for. */
#define RANKIDX_WALKS 8

typedef struct rankidx {
    rank_slot *v;   /* by core, highest first; superseded entries too */
    rank_slot *tmp; /* a turn's new entries while they are sorted */
    size_t n, cap, cap_t;
    size_t kept;  /* entries the last cut kept; 0 after a rebuild */
    uint32_t reads[RANKIDX_WALKS], n_walks; /* what the last walks read (rankidx_walked) */
    double floor; /* every unpruned item whose core is above it has its entry; -inf: every one */
    uint64_t gen; /* the tracker generation it reflects; 0 = none */
} rankidx;

/* Brings the index up to date with t.  0, or -1 without memory (the index
 * is then emptied, and rebuilds next time: scan the items instead). */
int rankidx_sync(rankidx *x, const clarity_config *cfg, const scorer_tables *tables, tracker *t);

/* Every item's entry anew (the floor at -inf): for a walk that ran out of
 * entries while items below the floor could still rank.  0, or -1 as for
 * rankidx_sync. */
int rankidx_deepen(rankidx *x, const clarity_config *cfg, const scorer_tables *tables, tracker *t);

/* A walk read `read` entries before the one it stopped at: what later
 * cuts keep room for. */
void rankidx_walked(rankidx *x, size_t read);

/* Raises the floor to keep about `keep` of the live entries (fewer or
 * more where cores tie), superseded entries dropped first.  Syncs call it
 * when the entries are more than twice what they keep; tests directly. */
void rankidx_cut_to(rankidx *x, size_t keep);

void rankidx_free(rankidx *x);

/* Sorts v[0, n) by core, highest first, equal cores in their order, with
 * tmp (n entries) as scratch.  What the index sorts its entries with. */
void rankidx_sort(rank_slot *v, size_t n, rank_slot *tmp);

/* Walks the live entries highest first; NULL past the last (the items
 * below x->floor are then not in it).  Start with {.x = x}. */
typedef struct rankidx_iter {
    const rankidx *x;
    size_t i;
} rankidx_iter;

static inline const rank_slot *rankidx_next(rankidx_iter *r)
{
    const rankidx *x = r->x;
    while (r->i < x->n) {
        const rank_slot *s = &x->v[r->i++];
        if (s->ver == s->it->rank_ver) return s;
    }
    return NULL;
}

#endif
