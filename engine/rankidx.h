/* rankidx.h: a session's items in the order of their turn-free score
 * bound (scorer_bound_core), kept up to date between turns, so the
 * context block reads the best items first and stops as soon as no later
 * item can reach it, instead of bounding every item every turn.
 *
 * The tracker queues every item whose counts or anchor change
 * (tracker_mark_dirty) and changes its generation when items go away; the
 * index drains the queue into a small sorted overlay, merges the overlay
 * into the main array when it grows, and rebuilds on a new generation.
 * A new entry below the cut (a tenth below where the last two blocks'
 * walks stopped: rankidx_cut) is only appended to a cold list: most of a
 * turn's entries rank too low for any block to read them, and sorting
 * them in was most of the index's cost.  A walk reads the cold list, in
 * no order, when the entries it walks in order come down to its highest
 * core; the lists are sorted into the main array together at a fold.
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
    rank_slot *cold;        /* new entries below the cut, in no order */
    rank_slot *tmp;         /* a turn's new entries while they are merged */
    size_t n, cap, no, cap_o, nc, cap_c, cap_t;
    double cold_max;  /* the highest core in cold (-inf when empty) */
    double cut;       /* new entries below it go cold (rankidx_cut; 0 before the first walk) */
    double last_stop; /* where the walk before the last stopped */
    uint64_t gen;     /* the tracker generation it reflects; 0 = none */
} rankidx;

/* Sets the cut from the core of the entry a walk stopped at (-inf: it did
 * not stop): the lower of it and the walk before's, a tenth lower, so that
 * the next walks, which mostly stop near them, seldom reach the cold list
 * (at 10,000 items consecutive walks stopped at cores of about 160 and
 * 500 in turn, and a cut from the higher made the next walk read the
 * whole cold list).  Where the cut is never changes what a block holds. */
void rankidx_cut(rankidx *x, double stop_core);

/* Brings the index up to date with t.  0, or -1 without memory (the index
 * is then emptied, and rebuilds next time: scan the items instead). */
int rankidx_sync(rankidx *x, const clarity_config *cfg, const scorer_tables *tables, tracker *t);
void rankidx_free(rankidx *x);

/* Sorts v[0, n) by core, highest first, equal cores in their order, with
 * tmp (n entries) as scratch.  What the index sorts its entries with. */
void rankidx_sort(rank_slot *v, size_t n, rank_slot *tmp);

/* Walks the entries highest first, skipping superseded ones; the cold
 * list's in no order (*ordered = 0: an entry of it that cannot rank says
 * nothing of the next), before the first ordered entry below its highest
 * core.  Start with {.x = x}. */
typedef struct rankidx_iter {
    const rankidx *x;
    size_t i, j, c; /* next of main, over, cold */
    int cold;       /* 1 once the cold list is being read */
} rankidx_iter;

static inline const rank_slot *rankidx_next(rankidx_iter *r, int *ordered)
{
    const rankidx *x = r->x;
    for (;;) {
        const rank_slot *s;
        if (r->cold && r->c < x->nc) {
            s = &x->cold[r->c++];
            *ordered = 0;
        } else {
            int m = r->i < x->n && (r->j >= x->no || x->main[r->i].core >= x->over[r->j].core);
            s = m ? &x->main[r->i] : r->j < x->no ? &x->over[r->j] : NULL;
            if (!r->cold && x->nc && (!s || s->core < x->cold_max)) {
                r->cold = 1;
                continue;
            }
            if (!s) return NULL;
            r->i += (size_t)m;
            r->j += (size_t)!m;
            *ordered = 1;
        }
        if (s->ver == s->it->rank_ver) return s;
    }
}

#endif
