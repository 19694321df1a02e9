/* radix.c: see radix.h. */
#include "radix.h"

#include <stdlib.h>

uint32_t *util_radix_order(const uint64_t *k, uint32_t *x, size_t n)
{
    size_t (*cnt)[256] = calloc(8, sizeof *cnt);
    if (!cnt) return NULL;
    /* the digits some key differs in from the first: only they are counted
     * and sorted on (packed keys leave their high bytes alike) */
    uint64_t vary = 0;
    for (size_t i = 1; i < n; i++) vary |= k[i] ^ k[0];
    int digit[8], nd = 0;
    for (int d = 0; d < 8; d++)
        if (vary >> (8 * d) & 255) digit[nd++] = d;
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < nd; j++) cnt[j][k[i] >> (8 * digit[j]) & 255]++;
    uint32_t *src = x, *dst = x + n;
    for (size_t i = 0; i < n; i++) src[i] = (uint32_t)i;
    for (int j = 0; j < nd; j++) {
        size_t *c = cnt[j], sum = 0;
        unsigned sh = 8u * (unsigned)digit[j];
        for (int b = 0; b < 256; b++) {
            size_t t = c[b];
            c[b] = sum;
            sum += t;
        }
        for (size_t i = 0; i < n; i++) dst[c[k[src[i]] >> sh & 255]++] = src[i];
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    free(cnt);
    return src;
}
