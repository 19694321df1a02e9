#include "namefilter.h"

#include <stdlib.h>
#include <string.h>

#define K3(n) ((n) >= 3 ? 0xffffffu : (1u << (8 * ((n) & 3))) - 1) /* (& 3: no shift past the width where unused) */
#define K3x8(n) K3(n), K3(n + 1), K3(n + 2), K3(n + 3), K3(n + 4), K3(n + 5), K3(n + 6), K3(n + 7)
const uint32_t name_keep3[64] = {K3x8(0),  K3x8(8),  K3x8(16), K3x8(24),
                                 K3x8(32), K3x8(40), K3x8(48), K3x8(56)};
#undef K3x8
#undef K3

int name_filter_reset(name_filter *f, size_t expected)
{
    size_t want = 4096;
    while (want < expected * 16 && want < ((size_t)1 << 34)) want <<= 1;
    size_t words = want / 64;
    if (want != f->nbits) {
        /* the three bitmaps in one allocation */
        uint64_t *b = calloc(3 * words, sizeof *b);
        if (!b) {
            name_filter_free(f);
            return -1;
        }
        free(f->bits);
        f->bits = b;
        f->idbits = b + words;
        f->wbits = b + 2 * words;
        f->nbits = want;
        f->wshift = 64 - (unsigned)__builtin_ctzll(want);
    } else {
        memset(f->bits, 0, 3 * words * sizeof *f->bits);
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
    uint64_t h = name_hash(name, n);
    /* an id hashes as its name after its prefix (name_id_hash): when that
     * is the bare name, as for tools and keywords, its hash is h */
    size_t skip;
    unsigned form = name_id_form(id, id_n, &skip);
    int same = id + skip == name && id_n - skip == n;
    set_bits(f->bits, f->nbits, h);
    set_bits(f->idbits, f->nbits, name_id_mix(same ? h : name_hash(id + skip, id_n - skip), form));
    if (n < 64) { /* longer names are no word of a text */
        size_t w = name_word_slot(name_fold8(util_load_le_tail(name, n < 3 ? n : 3)), n, f->wshift);
        f->wbits[w >> 6] |= (uint64_t)1 << (w & 63);
    }
    f->n++;
}

void name_filter_free(name_filter *f)
{
    free(f->bits); /* the three bitmaps' one allocation */
    f->bits = NULL;
    f->idbits = NULL;
    f->wbits = NULL;
    f->nbits = 0;
    f->n = 0;
}
