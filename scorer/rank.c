/* rank.c: the score order (rank.h). */
#include "rank.h"
#include "../util/endian.h"
#include "../util/radix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RUN 16 /* insertion-sorted runs the merges start from */

/* Bytes s[0..8) as a big-endian integer, zero past n. */
static uint64_t be8(const char *s, size_t n)
{
    if (n >= 8) return util_load_be64(s);
    uint64_t x = 0;
    for (size_t i = 0; i < 8; i++) x = x << 8 | (i < n ? (unsigned char)s[i] : 0);
    return x;
}

void rank_set(rank_ent *e, const char *id, double score, size_t idx)
{
    size_t n = strnlen(id, 25);
    e->score = isnan(score) ? -INFINITY : score;
    for (size_t k = 0; k < 3; k++) e->key[k] = n > 8 * k ? be8(id + 8 * k, n - 8 * k) : 0;
    e->id = id;
    e->idx = idx;
}

/* a ranks before b.  Equal 24-byte prefixes with a NUL among them are
 * equal ids; otherwise the rest of the ids decides. */
static inline int before(const rank_ent *a, const rank_ent *b)
{
    if (a->score != b->score) return a->score > b->score;
    for (int k = 0; k < 3; k++)
        if (a->key[k] != b->key[k]) return a->key[k] < b->key[k];
    if (!(a->key[2] & 0xff)) return 0;
    return strcmp(a->id + 24, b->id + 24) < 0;
}

static int cmp(const void *x, const void *y)
{
    const rank_ent *a = x, *b = y;
    return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

/* The sort moves 4-byte indices into v, not the entries. */
static void insertion(const rank_ent *v, uint32_t *x, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint32_t k = x[i];
        size_t j = i;
        for (; j > 0 && before(&v[k], &v[x[j - 1]]); j--) x[j] = x[j - 1];
        x[j] = k;
    }
}

static void merge(const rank_ent *v, const uint32_t *a, size_t na, const uint32_t *b, size_t nb, uint32_t *out)
{
    size_t i = 0, j = 0, k = 0;
    while (i < na && j < nb) {
        int take_b = before(&v[b[j]], &v[a[i]]);
        out[k++] = take_b ? b[j] : a[i];
        j += (size_t)take_b;
        i += (size_t)!take_b;
    }
    while (i < na) out[k++] = a[i++];
    while (j < nb) out[k++] = b[j++];
}

/* Sorts the indices x[0..n) of v by the order, through tmp (n entries);
 * returns where the sorted indices ended up (x or tmp). */
static uint32_t *sort_idx(const rank_ent *v, uint32_t *x, uint32_t *tmp, size_t n)
{
    for (size_t s = 0; s < n; s += RUN) insertion(v, x + s, n - s < RUN ? n - s : RUN);
    uint32_t *src = x, *dst = tmp;
    for (size_t w = RUN; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            merge(v, src + lo, mid - lo, src + mid, hi - mid, dst + lo);
        }
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    return src;
}

/* ---- large arrays: a most-significant-digit radix sort ------------------
 *
 * The key is the score's order bits then the id's bytes, one byte a level.
 * Scores tie in long runs (they are functions of a few small counters), so
 * sorting the runs by id with comparisons was most of the cost; here every
 * level is one counting pass and one scatter over 40-byte entries that hold
 * the whole 32-byte key prefix, so the passes stream through memory. */

typedef struct msd_ent {
    uint64_t w[4]; /* rank_desc_bits(score), then the id's key[0..3) */
    uint32_t idx;
} msd_ent;

#define MSD_SMALL 24 /* buckets this small are insertion-sorted */

static inline int msd_before(const rank_ent *v, const msd_ent *a, const msd_ent *b)
{
    for (size_t k = 0; k < 4; k++)
        if (a->w[k] != b->w[k]) return a->w[k] < b->w[k];
    if (!(a->w[3] & 0xff)) return 0; /* ids that ended within 24 bytes: equal */
    return strcmp(v[a->idx].id + 24, v[b->idx].id + 24) < 0;
}

/* Byte d of the key.  Past the 32 cached bytes it is the id's byte d - 8:
 * a bucket gets that deep only when its ids share 24 bytes with no NUL. */
static inline unsigned msd_digit(const rank_ent *v, const msd_ent *e, size_t d)
{
    if (d < 32) return (unsigned)(e->w[d >> 3] >> (56 - 8 * (d & 7))) & 255;
    return (unsigned char)v[e->idx].id[d - 8];
}

static void msd_insertion(const rank_ent *v, msd_ent *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        msd_ent k = a[i];
        size_t j = i;
        for (; j > 0 && msd_before(v, &k, &a[j - 1]); j--) a[j] = a[j - 1];
        a[j] = k;
    }
}

/* The first byte at or after d (d < 32) where the keys of a[0..n) differ.
 * *ended is set when they are equal: ids that agree through a NUL.  Ids
 * that agree on all 24 cached bytes go on at byte 32. */
static size_t msd_first_diff(const msd_ent *a, size_t n, size_t d, int *ended)
{
    *ended = 0;
    for (size_t k = d >> 3; k < 4; k++) {
        uint64_t diff = 0, w = a[0].w[k];
        for (size_t i = 1; i < n; i++) diff |= a[i].w[k] ^ w;
        if (k == d >> 3) diff &= ~(uint64_t)0 >> (8 * (d & 7)); /* bytes before d agree */
        if (diff) return 8 * k + (size_t)__builtin_clzll(diff) / 8;
        if (k && !(w & 0xff)) return *ended = 1, 32;
    }
    return 32;
}

/* Counts digit d of a[0..n) into cnt, and moves a into bucket order
 * through t (stable). */
static void msd_scatter(const rank_ent *v, msd_ent *a, msd_ent *t, size_t n, size_t d, uint32_t *cnt)
{
    uint32_t pos[256], sum = 0;
    memset(cnt, 0, 256 * sizeof *cnt);
    if (d < 32) {
        const size_t k = d >> 3, sh = 56 - 8 * (d & 7);
        for (size_t i = 0; i < n; i++) cnt[a[i].w[k] >> sh & 255]++;
        for (int b = 0; b < 256; b++) pos[b] = sum, sum += cnt[b];
        for (size_t i = 0; i < n; i++) t[pos[a[i].w[k] >> sh & 255]++] = a[i];
    } else {
        for (size_t i = 0; i < n; i++) cnt[msd_digit(v, &a[i], d)]++;
        for (int b = 0; b < 256; b++) pos[b] = sum, sum += cnt[b];
        for (size_t i = 0; i < n; i++) t[pos[msd_digit(v, &a[i], d)]++] = a[i];
    }
    memcpy(a, t, n * sizeof *a);
}

/* Sorts a[0..n), whose keys agree before byte d, through t (n entries).
 * A level first skips the bytes every key shares, then splits on the next
 * one.  Every bucket but the largest is sorted by a call, the largest by
 * the loop, so the calls nest at most log2(n) deep. */
static void msd_sort(const rank_ent *v, msd_ent *a, msd_ent *t, size_t n, size_t d)
{
    while (n > MSD_SMALL) {
        if (d < 32) {
            int ended;
            d = msd_first_diff(a, n, d, &ended);
            if (ended) return;
        }
        uint32_t cnt[256];
        msd_scatter(v, a, t, n, d, cnt);
        if (d >= 8 && cnt[0] == n) return; /* every id ends here: equal */
        size_t big = 0, big_at = 0, lo = 0;
        for (unsigned b = 0; b < 256; lo += cnt[b], b++) {
            if (cnt[b] < 2 || (d >= 8 && b == 0)) continue; /* ids that end here tie */
            if (cnt[b] > big) {
                if (big) msd_sort(v, a + big_at, t + big_at, big, d + 1);
                big = cnt[b], big_at = lo;
            } else {
                msd_sort(v, a + lo, t + lo, cnt[b], d + 1);
            }
        }
        a += big_at, t += big_at, n = big, d++;
    }
    msd_insertion(v, a, n);
}

/* Large arrays: the sorted indices into x (n entries), or NULL without
 * memory. */
static uint32_t *radix_idx(const rank_ent *v, uint32_t *x, size_t n)
{
    msd_ent *a = malloc(2 * n * sizeof *a);
    if (!a) return NULL;
    for (size_t i = 0; i < n; i++) {
        a[i].w[0] = rank_desc_bits(v[i].score);
        memcpy(&a[i].w[1], v[i].key, sizeof v[i].key);
        a[i].idx = (uint32_t)i;
    }
    msd_sort(v, a, a + n, n, 0);
    for (size_t i = 0; i < n; i++) x[i] = a[i].idx;
    free(a);
    return x;
}

/* rank_by_score.  Scores are functions of a few small counters, so a
 * session of 100,000 items holds a few hundred distinct ones: each score
 * is looked up in a hash of the distinct ones, those are sorted, and one
 * counting pass puts the items in order (about 75 instructions an item).
 * When the scores turn out to be many, util_radix_order does it (stable). */
#define BY_SCORE_DISTINCT 4096 /* most distinct scores the hash takes */

static uint64_t score_key(double s) { return rank_desc_bits(isnan(s) ? -INFINITY : s); }

static int radix_by_score(const double *score, size_t n, uint32_t *order)
{
    uint64_t *k = malloc(n * sizeof *k);
    uint32_t *x = malloc(2 * n * sizeof *x), *src = NULL;
    if (k && x) {
        for (size_t i = 0; i < n; i++) k[i] = score_key(score[i]);
        src = util_radix_order(k, x, n);
    }
    if (src) memcpy(order, src, n * sizeof *order);
    free(k);
    free(x);
    return src ? 0 : -1;
}

typedef struct score_group {
    uint64_t k; /* score_key of the group's score */
    uint32_t group;
} score_group;

static int cmp_group(const void *x, const void *y)
{
    uint64_t a = ((const score_group *)x)->k, b = ((const score_group *)y)->k;
    return (a > b) - (a < b);
}

/* Puts each item's group in g[i] and the groups in groups[0..*ng), in the
 * order first seen.  Returns 0; 1 when the scores are more than
 * BY_SCORE_DISTINCT; -1 without memory. */
static int group_scores(const double *score, size_t n, uint16_t *g, score_group *groups, uint32_t *ng)
{
    enum { SLOTS = 2 * BY_SCORE_DISTINCT };
    uint32_t *slot = calloc(SLOTS, sizeof *slot); /* a group + 1; 0 is free */
    if (!slot) return -1;
    *ng = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = score_key(score[i]);
        size_t j = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 51) & (SLOTS - 1);
        while (slot[j] && groups[slot[j] - 1].k != k) j = (j + 1) & (SLOTS - 1);
        if (!slot[j]) {
            if (*ng == BY_SCORE_DISTINCT) {
                free(slot);
                return 1;
            }
            groups[*ng] = (score_group){k, *ng};
            slot[j] = ++*ng;
        }
        g[i] = (uint16_t)(slot[j] - 1);
    }
    free(slot);
    return 0;
}

/* The hash path; 1 when the scores are too many for it (order untouched). */
static int grouped_by_score(const double *score, size_t n, uint32_t *order)
{
    uint16_t *g = malloc(n * sizeof *g);
    score_group *groups = malloc(BY_SCORE_DISTINCT * sizeof *groups);
    uint32_t *rank = malloc(BY_SCORE_DISTINCT * sizeof *rank), *start = calloc(BY_SCORE_DISTINCT + 1, sizeof *start);
    uint32_t ng = 0;
    int rc = g && groups && rank && start ? group_scores(score, n, g, groups, &ng) : -1;
    if (rc == 0) { /* the groups in key order, then one counting pass */
        qsort(groups, ng, sizeof *groups, cmp_group);
        for (uint32_t r = 0; r < ng; r++) rank[groups[r].group] = r;
        for (size_t i = 0; i < n; i++) start[rank[g[i]] + 1]++;
        for (uint32_t r = 0; r < ng; r++) start[r + 1] += start[r];
        for (size_t i = 0; i < n; i++) order[start[rank[g[i]]]++] = (uint32_t)i;
    }
    free(g);
    free(groups);
    free(rank);
    free(start);
    return rc;
}

int rank_by_score(const double *score, size_t n, uint32_t *order)
{
    if (n > UINT32_MAX) return -1;
    if (n == 0) return 0;
    int rc = grouped_by_score(score, n, order);
    return rc == 1 ? radix_by_score(score, n, order) : rc;
}

/* Past this many bytes a permutation gathers into a copy: the loads are
 * independent and overlap, where following cycles waits for each one. */
#define PERMUTE_GATHER_MIN (256u * 1024)

void rank_permute(void *base, size_t n, size_t size, uint32_t *order, void *tmp)
{
    char *b = base;
    char *g = n * size >= PERMUTE_GATHER_MIN ? malloc(n * size) : NULL;
    if (g) {
        for (size_t i = 0; i < n; i++) {
            if (i + 8 < n) __builtin_prefetch(b + (size_t)order[i + 8] * size);
            memcpy(g + i * size, b + (size_t)order[i] * size, size);
            order[i] = (uint32_t)i;
        }
        memcpy(b, g, n * size);
        free(g);
        return;
    }
    for (size_t i = 0; i < n; i++) { /* base[i] = base[order[i]], one cycle at a time */
        if (order[i] == i) continue;
        memcpy(tmp, b + i * size, size);
        size_t j = i;
        for (;;) {
            size_t k = order[j];
            order[j] = (uint32_t)j;
            if (k == i) {
                memcpy(b + j * size, tmp, size);
                break;
            }
            memcpy(b + j * size, b + k * size, size);
            j = k;
        }
    }
}

void rank_sort(rank_ent *v, size_t n)
{
    if (n < 2) return;
    uint32_t *x = n <= UINT32_MAX ? malloc(2 * n * sizeof *x) : NULL;
    uint32_t *src = NULL;
    if (x && n >= RANK_RADIX_MIN) src = radix_idx(v, x, n);
    if (x && !src) {
        for (size_t i = 0; i < n; i++) x[i] = (uint32_t)i;
        src = sort_idx(v, x, x + n, n);
    }
    if (!src) {
        free(x);
        qsort(v, n, sizeof *v, cmp);
        return;
    }
    rank_ent t;
    rank_permute(v, n, sizeof *v, src, &t);
    free(x);
}

int rank_apply(void *base, size_t n, size_t size, rank_ent *r)
{
    if (n < 2) return 0;
    char *t = malloc(size);
    if (!t) return -1;
    char *b = base;
    for (size_t i = 0; i < n; i++) { /* base[i] = base[r[i].idx], one cycle at a time */
        if (r[i].idx == i) continue;
        memcpy(t, b + i * size, size);
        size_t j = i;
        for (;;) {
            size_t k = r[j].idx;
            r[j].idx = j;
            if (k == i) {
                memcpy(b + j * size, t, size);
                break;
            }
            memcpy(b + j * size, b + k * size, size);
            j = k;
        }
    }
    free(t);
    return 0;
}

/* ---- records in score order, runs of equal scores by id ----------------- */

static double row_score(const rank_rows *r, size_t i)
{
    double s;
    memcpy(&s, (const char *)r->base + i * r->size + r->score_at, sizeof s);
    return isnan(s) ? -INFINITY : s; /* as rank_set */
}

int rank_rows_by_score(const rank_rows *r)
{
    if (r->n < 2) return 0;
    double *k = malloc(r->n * sizeof *k);
    uint32_t *order = malloc(r->n * sizeof *order);
    void *tmp = malloc(r->size);
    int rc = k && order && tmp ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < r->n; i++) k[i] = row_score(r, i);
    if (rc == 0) rc = rank_by_score(k, r->n, order);
    if (rc == 0) rank_permute(r->base, r->n, r->size, order, tmp);
    free(k);
    free(order);
    free(tmp);
    return rc;
}

size_t rank_run_end(const rank_rows *r, size_t a)
{
    size_t b = a + 1;
    while (b < r->n && row_score(r, b) == row_score(r, a)) b++;
    return b;
}

int rank_run_by_id(const rank_rows *r, size_t a, size_t b)
{
    if (b - a < 2) return 0;
    rank_ent *e = malloc((b - a) * sizeof *e);
    if (!e) return -1;
    char *base = (char *)r->base + a * r->size;
    for (size_t i = 0; i < b - a; i++) rank_set(&e[i], r->id_of(base + i * r->size), row_score(r, a + i), i);
    rank_sort(e, b - a);
    int rc = rank_apply(base, b - a, r->size, e);
    free(e);
    return rc;
}
