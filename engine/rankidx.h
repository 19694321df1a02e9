/* rankidx.h: a session's items in the order of their turn-free score
 * bound (scorer_bound_core), kept up to date between turns, so the
 * context block reads the best items first and stops as soon as no later
 * item can reach it, instead of bounding every item every turn.
 *
 * The tracker queues every item whose counts or anchor change
 * (tracker_mark_dirty) and changes its generation when items go away; the
 * index drains the queue into a small sorted overlay, merges the overlay
 * into the main array when it grows, and rebuilds on a new generation.
 * An entry records the item's rank_ver when it was made: one that no
 * longer matches was superseded and is skipped. */
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

typedef struct rankidx {
    rank_slot *main, *over; /* each by core, highest first */
    rank_slot *tmp;         /* a turn's new entries while they are merged */
    size_t n, cap, no, cap_o, cap_t;
    uint64_t gen; /* the tracker generation it reflects; 0 = none */
} rankidx;

/* Brings the index up to date with t.  0, or -1 without memory (the index
 * is then emptied, and rebuilds next time: scan the items instead). */
int rankidx_sync(rankidx *x, const clarity_config *cfg, const scorer_tables *tables, tracker *t);
void rankidx_free(rankidx *x);

/* Sorts v[0, n) by core, highest first, equal cores in their order, with
 * tmp (n entries) as scratch.  What the index sorts its entries with. */
void rankidx_sort(rank_slot *v, size_t n, rank_slot *tmp);

/* Walks the entries highest first, skipping superseded ones. */
typedef struct rankidx_iter {
    const rankidx *x;
    size_t i, j;
} rankidx_iter;

static inline const rank_slot *rankidx_next(rankidx_iter *r)
{
    const rankidx *x = r->x;
    for (;;) {
        const rank_slot *s;
        if (r->i < x->n && (r->j >= x->no || x->main[r->i].core >= x->over[r->j].core)) s = &x->main[r->i++];
        else if (r->j < x->no) s = &x->over[r->j++];
        else return NULL;
        if (s->ver == s->it->rank_ver) return s;
    }
}

#endif
