/* rankidx.c: the items by turn-free score bound (rankidx.h). */
#include "rankidx.h"
#include "../scorer/rank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* From this many entries sort_bytes beats the merges. */
#define SMALL_RADIX_MIN 48
/* Up to this many entries an insertion sort beats runs and merges. */
#define INSERTION_MAX 24

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
 * Fewer, or where sort_bytes gave up: insertion sort (alone up to
 * INSERTION_MAX entries) of runs of 4, then bottom-up merges, each step
 * choosing its entry without a branch (cores compare at random, so a
 * branch would miss half the time). */
void rankidx_sort(rank_slot *v, size_t n, rank_slot *tmp)
{
    if (n < 2 || (n >= SMALL_RADIX_MIN && sort_bytes(v, n, tmp) == 0)) return;
    /* a handful (a turn's new entries above the floor): insertion alone */
    const size_t run = n <= INSERTION_MAX ? n : 4;
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
    x->n = x->kept = 0;
    x->floor = -INFINITY;
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
    if (reserve(&x->v, &x->cap, t->count) != 0) return -1;
    t->rank_restart = 0;
    for (item *it = t->items; it; it = it->hh.next) {
        it->rank_queued = 0;
        if (!it->pruned) x->v[x->n++] = slot_of(cfg, tables, it);
    }
    /* the sort's scratch is given back at once (a turn's sorts keep only
     * a small one in x->tmp) */
    rank_slot *tmp = x->n > 1 ? malloc(x->n * sizeof *tmp) : NULL;
    if (x->n > 1 && !tmp) return -1;
    rankidx_sort(x->v, x->n, tmp);
    free(tmp);
    x->gen = t->rank_gen;
    return 0;
}

/* The first of v[0, n) (by core, highest first) below core. */
static size_t first_below(const rank_slot *v, size_t n, double core)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].core < core) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* Merges b[0, nb) into v[0, nv), both by core highest first, giving
 * v[0, nv + nb) (v has the room); of equal cores v's come first.  From
 * the back: v's entries below all of b's move up by nb in one memmove;
 * those above, one at a time in the merge, or, when they are many more
 * than b's (a large index: a turn's entries are mostly spread over it),
 * in one memmove per entry of b, found by binary search. */
static void merge_back(rank_slot *v, size_t nv, const rank_slot *b, size_t nb)
{
    if (nb == 0) return;
    size_t i = nv; /* v[0, i) not yet placed */
    if (nv > 16 * nb) {
        for (size_t j = nb; j-- > 0;) {
            size_t p = first_below(v, i, b[j].core);
            memmove(v + p + j + 1, v + p, (i - p) * sizeof *v);
            v[p + j] = b[j];
            i = p;
        }
        return;
    }
    size_t lo = first_below(v, nv, b[nb - 1].core);
    memmove(v + lo + nb, v + lo, (nv - lo) * sizeof *v);
    size_t j = nb, k = lo + nb;
    i = lo;
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

/* The most entries one of the last RANKIDX_WALKS walks read. */
static size_t walks_read(const rankidx *x)
{
    size_t w = 0;
    for (size_t i = 0; i < RANKIDX_WALKS; i++) w = x->reads[i] > w ? x->reads[i] : w;
    return w;
}

void rankidx_cut_to(rankidx *x, size_t keep)
{
    x->n = x->kept = live_only(x->v, x->n);
    if (x->n <= keep || keep == 0) return;
    /* the entries that tie with the keep-th go together: cut before them
     * when more entries are left than walks read (a walk that runs out
     * there stops when nothing at the floor can rank: sessions where most
     * items tie at a low bound), else after them */
    double f = x->v[keep - 1].core;
    size_t p = keep - 1;
    while (p > 0 && x->v[p - 1].core == f) p--;
    if (p <= walks_read(x)) {
        p = keep;
        while (p < x->n && x->v[p].core == f) p++;
        if (p == x->n) return;
    }
    /* the first entry cut off is the highest: no item left out is above it */
    x->floor = x->v[p].core;
    x->n = x->kept = p;
}

/* The queue's entries above the floor, sorted, merged in; the others
 * only dropped from the queue (an item's entry, if it had one, is
 * superseded by its new rank_ver). */
static int drain(rankidx *x, const clarity_config *cfg, const scorer_tables *tables, tracker *t)
{
    /* the queue's length is kept: counting it would chase every queued
     * item's pointer once more, a cache miss each */
    size_t end = t->n_rank_q, at = end;
    if (reserve(&x->tmp, &x->cap_t, end) != 0) return -1;
    /* laid out from the back: the queue is last touched first, and a
     * turn's first touches (its prompt's mentions) rank highest, so the
     * entries come nearly sorted, the insertion sort's cheap case */
    for (item *it = t->rank_q; it; it = it->rank_next) {
        it->rank_queued = 0;
        if (it->pruned) continue; /* (its entry, if any, superseded by its rank_ver) */
        rank_slot sl = slot_of(cfg, tables, it);
        if (x->floor == -INFINITY || !(sl.core <= x->floor)) x->tmp[--at] = sl;
    }
    t->rank_q = NULL;
    t->n_rank_q = 0;
    size_t m = end - at;
    if (m == 0) return 0;
    if (reserve(&x->v, &x->cap, x->n + m) != 0) return -1;
    rankidx_sort(x->tmp + at, m, x->v + x->n); /* the array's room past its entries as scratch */
    merge_back(x->v, x->n, x->tmp + at, m);
    x->n += m;
    return 0;
}

int rankidx_sync(rankidx *x, const clarity_config *cfg, const scorer_tables *tables, tracker *t)
{
    int rc = 0;
    if (!x->gen || x->gen != t->rank_gen) {
        rc = rebuild(x, cfg, tables, t);
    } else if (t->rank_q || t->rank_restart) {
        if (t->rank_restart) { /* the queue holds every unpruned item */
            reset(x);
            x->gen = t->rank_gen;
            t->rank_restart = 0;
        }
        rc = drain(x, cfg, tables, t);
        /* entries past twice what walks need, and `keep` more than the
         * last cut kept (where ties kept more, a cut waits for as many new
         * entries as it would keep): superseded ones dropped, then the
         * floor raised to keep that much.  A cut costs O(n), a turn's
         * merge O(n); a walk seldom reads so far that it needs a rebuild. */
        size_t keep = RANKIDX_KEEP_MIN + 4 * walks_read(x);
        if (rc == 0 && x->n > keep + (x->kept > keep ? x->kept : keep)) rankidx_cut_to(x, keep);
    }
    if (rc != 0) reset(x);
    return rc;
}

int rankidx_deepen(rankidx *x, const clarity_config *cfg, const scorer_tables *tables, tracker *t)
{
    int rc = rebuild(x, cfg, tables, t);
    if (rc != 0) reset(x);
    return rc;
}

void rankidx_walked(rankidx *x, size_t read)
{
    x->reads[x->n_walks++ % RANKIDX_WALKS] = read < UINT32_MAX ? (uint32_t)read : UINT32_MAX;
}

void rankidx_free(rankidx *x)
{
    free(x->v);
    free(x->tmp);
    memset(x, 0, sizeof *x);
}
