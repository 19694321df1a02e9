#include "namefilter.h"

#include <stdlib.h>
#include <string.h>

int name_filter_reset(name_filter *f, size_t expected)
{
    size_t want = 4096;
    while (want < expected * 16 && want < ((size_t)1 << 34)) want <<= 1;
    if (want != f->nbits) {
        uint64_t *b = calloc(want / 64, sizeof *b);
        if (!b) {
            name_filter_free(f);
            return -1;
        }
        free(f->bits);
        f->bits = b;
        f->nbits = want;
    } else {
        memset(f->bits, 0, want / 8);
    }
    f->n = 0;
    return 0;
}

void name_filter_add(name_filter *f, const char *s, size_t n)
{
    if (!f->nbits) return;
    uint64_t h = name_hash(s, n);
    size_t m = f->nbits - 1;
    size_t a = (size_t)h & m, b = (size_t)(h >> 32) & m;
    f->bits[a >> 6] |= (uint64_t)1 << (a & 63);
    f->bits[b >> 6] |= (uint64_t)1 << (b & 63);
    f->n++;
}

void name_filter_free(name_filter *f)
{
    free(f->bits);
    f->bits = NULL;
    f->nbits = 0;
    f->n = 0;
}
