/* rank.c: the score order (rank.h). */
#include "rank.h"
#include "../util/endian.h"

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

uint64_t rank_desc_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    if (d == 0) u = 0; /* -0.0 == 0.0 */
    u = (u >> 63) ? ~u : u | (uint64_t)1 << 63;
    return ~u;
}

uint32_t *rank_radix(const uint64_t *k, uint32_t *x, size_t n)
{
    size_t (*cnt)[256] = calloc(8, sizeof *cnt);
    if (!cnt) return NULL;
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++) cnt[d][k[i] >> (8 * d) & 255]++;
    uint32_t *src = x, *dst = x + n;
    for (size_t i = 0; i < n; i++) src[i] = (uint32_t)i;
    for (int d = 0; d < 8 && n; d++) {
        size_t *c = cnt[d], sum = 0;
        if (c[k[0] >> (8 * d) & 255] == n) continue; /* one digit for all */
        for (int b = 0; b < 256; b++) {
            size_t t = c[b];
            c[b] = sum;
            sum += t;
        }
        for (size_t i = 0; i < n; i++) dst[c[k[src[i]] >> (8 * d) & 255]++] = src[i];
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    free(cnt);
    return src;
}

/* Large arrays: the radix sort of the indices by score, then each run of
 * equal scores sorted by id.  Returns the sorted indices (x or x + n), or
 * NULL without memory. */
static uint32_t *radix_idx(const rank_ent *v, uint32_t *x, size_t n)
{
    uint64_t *k = malloc(n * sizeof *k);
    if (!k) return NULL;
    for (size_t i = 0; i < n; i++) k[i] = rank_desc_bits(v[i].score);
    uint32_t *src = rank_radix(k, x, n);
    if (!src) {
        free(k);
        return NULL;
    }
    uint32_t *dst = src == x ? x + n : x; /* free scratch */
    for (size_t a = 0; a < n;) { /* runs of equal scores, by id */
        size_t b = a + 1;
        while (b < n && k[src[b]] == k[src[a]]) b++;
        if (b - a > 1) {
            uint32_t *r = sort_idx(v, src + a, dst + a, b - a);
            if (r != src + a) memcpy(src + a, r, (b - a) * sizeof *r);
        }
        a = b;
    }
    free(k);
    return src;
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
    for (size_t i = 0; i < n; i++) { /* v[i] = v[src[i]], one cycle at a time */
        if (src[i] == i) continue;
        rank_ent t = v[i];
        size_t j = i;
        for (;;) {
            size_t k = src[j];
            src[j] = (uint32_t)j;
            if (k == i) {
                v[j] = t;
                break;
            }
            v[j] = v[k];
            j = k;
        }
    }
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
