/* radix.c: see radix.h. */
#include "radix.h"

#include <stdlib.h>

uint32_t *util_radix_order(const uint64_t *k, uint32_t *x, size_t n)
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
