#include "namefilter.h"

#include <stdlib.h>
#include <string.h>

int name_filter_reset(name_filter *f, size_t expected)
{
    size_t want = 4096;
    while (want < expected * 16 && want < ((size_t)1 << 34)) want <<= 1;
    if (want != f->nbits) {
        uint64_t *b = calloc(want / 64, sizeof *b), *ib = calloc(want / 64, sizeof *ib);
        if (!b || !ib) {
            free(b);
            free(ib);
            name_filter_free(f);
            return -1;
        }
        free(f->bits);
        free(f->idbits);
        f->bits = b;
        f->idbits = ib;
        f->nbits = want;
    } else {
        memset(f->bits, 0, want / 8);
        memset(f->idbits, 0, want / 8);
    }
    f->n = 0;
    return 0;
}

static void set_bits(uint64_t *bits, size_t nbits, uint64_t h)
{
    size_t m = nbits - 1;
    size_t a = (size_t)h & m, b = (size_t)(h >> 32) & m;
    bits[a >> 6] |= (uint64_t)1 << (a & 63);
    bits[b >> 6] |= (uint64_t)1 << (b & 63);
}

void name_filter_add(name_filter *f, const char *name, size_t n, const char *id, size_t id_n)
{
    if (!f->nbits) return;
    set_bits(f->bits, f->nbits, name_hash(name, n));
    set_bits(f->idbits, f->nbits, name_id_hash(id, id_n));
    f->n++;
}

void name_filter_free(name_filter *f)
{
    free(f->bits);
    free(f->idbits);
    f->bits = NULL;
    f->idbits = NULL;
    f->nbits = 0;
    f->n = 0;
}
