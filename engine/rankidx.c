/* rankidx.c: the items by turn-free score bound (rankidx.h). */
#include "rankidx.h"
#include "../scorer/rank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* From this many entries sort_bytes beats the merges. */
#define SMALL_RADIX_MIN 48

/* The sorted runs src[a, m) and src[m, b) into dst[a, b), the left's
 * entries first among equal cores.  The higher half is taken from the
 * fronts and the lower half from the backs in the same loop: each step's
 * loads wait for the step before (which entry it took), and two such
 * chains side by side take half the time of one.  No branch either way:
 * cores compare at random.  A run a side has used up is not read from
 * (its index is replaced by a valid one and the choice made without it). */
static void merge_runs(const rank_slot *src, rank_slot *dst, size_t a, size_t m, size_t b)
{
    if (m == b) { /* no right run */
        memcpy(dst + a, src + a, (b - a) * sizeof *dst);
        return;
    }
    size_t i = a, j = m, k = a;      /* the fronts: next of each run */
    size_t li = m, rj = b, kb = b;   /* the backs: one past the last left of each run */
    for (size_t h = (b - a) / 2; h > 0; h--) {
        size_t ii = i < m ? i : a, jj = j < b ? j : a;
        int right = (j < b) & ((i >= m) | (src[jj].core > src[ii].core));
        dst[k++] = src[right ? jj : ii];
        j += (size_t)right;
        i += (size_t)!right;
        size_t bi = li > a ? li - 1 : m, bj = rj > m ? rj - 1 : m;
        int left = (li > a) & ((rj <= m) | (src[bi].core < src[bj].core));
        dst[--kb] = src[left ? bi : bj];
        li -= (size_t)left;
        rj -= (size_t)!left;
    }
    if ((b - a) & 1) { /* the middle entry: the one the backs have not taken */
        size_t bi = li > a ? li - 1 : m, bj = rj > m ? rj - 1 : m;
        int left = (li > a) & ((rj <= m) | (src[bi].core < src[bj].core));
        dst[--kb] = src[left ? bi : bj];
    }
}

/* v[0, n) (n >= SMALL_RADIX_MIN) sorted stably by the top 24 bits of
 * their cores' order (three passes of a byte, least significant first,
 * each skipped when all entries share its byte), then by core within equal
 * bits: an insertion pass, whose shifts are few (24 bits tell cores apart
 * to 1 part in 4,096).  Cores closer than that in reverse order would make
 * it quadratic: past 8n + 1,024 shifts it stops, with v a permutation in
 * which equal cores keep their order, and returns -1 for the merges to
 * finish.  A turn's ~150 entries: 60 % of the merges' instructions and
 * 1 us less a dense turn (the merges' steps wait on each other); a fold's
 * thousands at 10,000 items: a third of the 64-bit radix sort's. */
static int sort_bytes(rank_slot *v, size_t n, rank_slot *tmp)
{
    uint32_t count[3][256];
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++) { /* the three bytes' counts in one pass */
        uint32_t k = (uint32_t)(rank_desc_bits(v[i].core) >> 40);
        v[i].key = k;
        count[0][k & 255]++;
        count[1][k >> 8 & 255]++;
        count[2][k >> 16]++;
    }
    rank_slot *src = v, *dst = tmp;
    for (unsigned d = 0; d < 3; d++) {
        uint32_t *c = count[d];
        unsigned shift = 8 * d;
        if (c[src[0].key >> shift & 255] == n) continue; /* one byte for all */
        uint32_t at = 0;
        for (unsigned b = 0; b < 256; b++) {
            uint32_t m = c[b];
            c[b] = at;
            at += m;
        }
        for (size_t i = 0; i < n; i++) dst[c[src[i].key >> shift & 255]++] = src[i];
        rank_slot *sw = src;
        src = dst;
        dst = sw;
    }
    if (src != v) memcpy(v, src, n * sizeof *v);
    size_t budget = 8 * n + 1024;
    for (size_t i = 1; i < n; i++) {
        if (!(v[i - 1].core < v[i].core)) continue;
        rank_slot s = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1].core < s.core; j--) v[j] = v[j - 1];
        v[j] = s;
        if (i - j > budget) return -1;
        budget -= i - j;
    }
    return 0;
}

/* Sorts v[0, n) by core, highest first, keeping the order of equal cores,
 * through tmp (n entries): sort_bytes from SMALL_RADIX_MIN entries.
 * Fewer, or where sort_bytes gave up: insertion sort of runs of 4, then
 * bottom-up merges, each step choosing its entry without a branch (cores
 * compare at random, so a branch would miss half the time). */
void rankidx_sort(rank_slot *v, size_t n, rank_slot *tmp)
{
    if (n >= SMALL_RADIX_MIN && sort_bytes(v, n, tmp) == 0) return;
    const size_t run = 4;
    for (size_t a = 0; a < n; a += run) {
        size_t b = a + run < n ? a + run : n;
        for (size_t i = a + 1; i < b; i++) {
            rank_slot s = v[i];
            size_t j = i;
            for (; j > a && v[j - 1].core < s.core; j--) v[j] = v[j - 1];
            v[j] = s;
        }
    }
    rank_slot *src = v, *dst = tmp;
    for (size_t w = run; w < n; w *= 2) {
        for (size_t a = 0; a < n; a += 2 * w) {
            size_t m = a + w < n ? a + w : n, b = a + 2 * w < n ? a + 2 * w : n;
            merge_runs(src, dst, a, m, b);
        }
        rank_slot *sw = src;
        src = dst;
        dst = sw;
    }
    if (src != v) memcpy(v, src, n * sizeof *v);
}

static int reserve(rank_slot **v, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    rank_slot *p = realloc(*v, c * sizeof *p);
    if (!p) return -1;
    *v = p;
    *cap = c;
    return 0;
}

static void reset(rankidx *x)
{
    x->n = x->no = x->nc = 0;
    x->cold_max = -INFINITY;
    x->gen = 0;
}

static rank_slot slot_of(const clarity_config *cfg, const scorer_tables *tables, item *it)
{
    return (rank_slot){scorer_bound_core(cfg, tables, it), it, it->rank_ver, 0};
}

/* Every item anew; the queue is emptied. */
static int rebuild(rankidx *x, const clarity_config *cfg, const scorer_tables *tables, tracker *t)
{
    reset(x);
    t->rank_q = NULL; /* every item's flag is reset below */
    t->n_rank_q = 0;
    if (reserve(&x->main, &x->cap, t->count) != 0) return -1;
    for (item *it = t->items; it; it = it->hh.next) {
        it->rank_queued = 0;
        x->main[x->n++] = slot_of(cfg, tables, it);
    }
    /* the sort's scratch is given back at once (a turn's merges keep only
     * a small one in x->tmp) */
    rank_slot *tmp = x->n > 1 ? malloc(x->n * sizeof *tmp) : NULL;
    if (x->n > 1 && !tmp) return -1;
    rankidx_sort(x->main, x->n, tmp);
    free(tmp);
    x->gen = t->rank_gen;
    return 0;
}

/* Merges b[0, nb) into v[0, nv), both by core highest first, giving
 * v[0, nv + nb) (v has the room); of equal cores v's come first.  v's
 * entries below all of b's only move up by nb: one memmove, found by a
 * binary search.  That is most of v: the entries a turn adds were mostly
 * just mentioned and rank above those before them, and moving them one at
 * a time was most of a turn's merge. */
static void merge_back(rank_slot *v, size_t nv, const rank_slot *b, size_t nb)
{
    if (nb == 0) return;
    double low = b[nb - 1].core;
    size_t lo = 0, hi = nv; /* the first of v below low */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].core < low) hi = mid;
        else lo = mid + 1;
    }
    memmove(v + lo + nb, v + lo, (nv - lo) * sizeof *v);
    size_t i = lo, j = nb, k = lo + nb;
    while (j > 0) {
        if (i > 0 && v[i - 1].core < b[j - 1].core) v[--k] = v[--i];
        else v[--k] = b[--j];
    }
}

/* The live entries of v[0, n) moved to its front, in order; how many. */
static size_t live_only(rank_slot *v, size_t n)
{
    /* each entry reads its item, a cache miss with many items: the item
     * some entries ahead is requested before it is needed */
    enum { AHEAD = 16 };
    size_t live = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + AHEAD < n) __builtin_prefetch(&v[i + AHEAD].it->rank_ver);
        if (v[i].ver == v[i].it->rank_ver) v[live++] = v[i];
    }
    return live;
}

/* The overlay and the cold list into the main array, superseded entries
 * dropped: the cold list sorted, merged with the overlay, and the two
 * merged into the main array. */
static int fold(rankidx *x)
{
    x->n = live_only(x->main, x->n);
    x->no = live_only(x->over, x->no);
    x->nc = live_only(x->cold, x->nc);
    if (reserve(&x->main, &x->cap, x->n + x->no + x->nc) != 0 ||
        reserve(&x->over, &x->cap_o, x->no + x->nc) != 0 || reserve(&x->tmp, &x->cap_t, x->nc) != 0)
        return -1;
    rankidx_sort(x->cold, x->nc, x->tmp);
    merge_back(x->over, x->no, x->cold, x->nc);
    x->no += x->nc;
    x->nc = 0;
    x->cold_max = -INFINITY;
    merge_back(x->main, x->n, x->over, x->no);
    x->n += x->no;
    x->no = 0;
    return 0;
}

/* over[from, no) are new: sorted, then merged with over[0, from). */
static int merge_new(rankidx *x, size_t from)
{
    size_t m = x->no - from;
    if (m == 0) return 0; /* all went cold */
    if (reserve(&x->tmp, &x->cap_t, m) != 0) return -1;
    rankidx_sort(x->over + from, m, x->tmp);
    memcpy(x->tmp, x->over + from, m * sizeof *x->tmp);
    merge_back(x->over, from, x->tmp, m);
    return 0;
}

int rankidx_sync(rankidx *x, const clarity_config *cfg, const scorer_tables *tables, tracker *t)
{
    int rc = 0;
    if (!x->gen || x->gen != t->rank_gen) {
        rc = rebuild(x, cfg, tables, t);
    } else if (t->rank_q) {
        /* the queue's length is kept: counting it would chase every queued
         * item's pointer once more, a cache miss each */
        size_t from = x->no, m = t->n_rank_q;
        if (reserve(&x->over, &x->cap_o, x->no + m) != 0 || reserve(&x->cold, &x->cap_c, x->nc + m) != 0) {
            rc = -1; /* the queue stays; the rebuild after the reset takes it */
        } else {
            for (item *it = t->rank_q; it; it = it->rank_next) {
                rank_slot sl = slot_of(cfg, tables, it);
                it->rank_queued = 0;
                if (sl.core >= x->cut) {
                    x->over[x->no++] = sl;
                } else {
                    x->cold[x->nc++] = sl;
                    if (sl.core > x->cold_max) x->cold_max = sl.core;
                }
            }
            t->rank_q = NULL;
            t->n_rank_q = 0;
            rc = merge_new(x, from);
            /* a fold costs O(n), a turn's merge O(overlay): folding once
             * the overlay and the cold list pass ~20 sqrt(n) balances the two */
            if (rc == 0 && x->no + x->nc > 64 + 20 * (size_t)sqrt((double)x->n)) rc = fold(x);
        }
    }
    if (rc != 0) reset(x);
    return rc;
}

void rankidx_cut(rankidx *x, double stop_core)
{
    double low = stop_core < x->last_stop ? stop_core : x->last_stop;
    x->last_stop = stop_core;
    x->cut = low - 0.1 * fabs(low);
}

void rankidx_free(rankidx *x)
{
    free(x->main);
    free(x->over);
    free(x->cold);
    free(x->tmp);
    memset(x, 0, sizeof *x);
}
