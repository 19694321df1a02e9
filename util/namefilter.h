/* namefilter.h: a Bloom filter over the bare names of tracked items.
 *
 * Reference detection tokenizes the agent's text; without a filter every
 * word would become three or four candidate ids, each built, deduplicated
 * and looked up.  The tracker keeps this filter of the names it holds
 * ("claracore", "web_search", "src/auth/session.ts", "refactoring"), so a
 * word that names nothing tracked costs one hash and two bit tests.
 * Names hash case-insensitively with '-' folded to '_', the same folding
 * the id normalization applies, so the filter never rejects a real match.
 */
#ifndef UTIL_NAMEFILTER_H
#define UTIL_NAMEFILTER_H

#include <stddef.h>
#include <stdint.h>

typedef struct name_filter {
    uint64_t *bits;
    size_t nbits; /* power of two, or 0 when unallocated */
    size_t n;     /* names added since the last reset */
} name_filter;

static inline uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 'A' && c <= 'Z') c = (unsigned char)(c + 32);
        else if (c == '-') c = '_';
        h = (h ^ c) * 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

static inline int name_filter_test_hash(const name_filter *f, uint64_t h)
{
    if (!f || !f->nbits) return 1; /* no filter: everything may match */
    size_t m = f->nbits - 1;
    size_t a = (size_t)h & m, b = (size_t)(h >> 32) & m;
    return (f->bits[a >> 6] >> (a & 63) & 1) && (f->bits[b >> 6] >> (b & 63) & 1);
}

static inline int name_filter_test(const name_filter *f, const char *s, size_t n)
{
    return name_filter_test_hash(f, name_hash(s, n));
}

/* Sizes the filter for `expected` names (16 bits each) and clears it.
 * Returns 0, or -1 on allocation failure (the filter then passes everything). */
int name_filter_reset(name_filter *f, size_t expected);
void name_filter_add(name_filter *f, const char *s, size_t n);
void name_filter_free(name_filter *f);

#endif
