/* namefilter.h: a Bloom filter over the bare names of tracked items.
 *
 * Reference detection tokenizes the agent's text; without a filter every
 * word would become three or four candidate ids, each built, deduplicated
 * and looked up.  The tracker keeps this filter of the names it holds
 * ("claracore", "web_search", "src/auth/session.ts", "refactoring"), so a
 * word that names nothing tracked costs one hash and two bit tests.
 * Names hash case-insensitively with '-' folded to '_', the same folding
 * the id normalization applies, so the filter never rejects a real match.
 * The filter lives in memory only (it is rebuilt from the items), so the
 * hash may change between versions.
 *
 * A second filter holds the items' exact ids ("tool:web_search"): a word
 * that passes stands for three or four ids, of which usually one is
 * tracked, and the others are dropped before they are deduplicated and
 * looked up.
 */
#ifndef UTIL_NAMEFILTER_H
#define UTIL_NAMEFILTER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "endian.h"
#include "memfind.h"

typedef struct name_filter {
    uint64_t *bits;   /* the names */
    uint64_t *idbits; /* the ids, as many bits */
    uint64_t *wbits;  /* the names' word keys (name_word_slot), as many bits */
    size_t nbits;     /* power of two, or 0 when unallocated */
    unsigned wshift;  /* 64 - log2(nbits) */
    size_t n;         /* names added since the last reset */
} name_filter;

/* The names hash eight bytes at a time, so that a scanner can hash a word
 * straight from the text with a few loads: name_load8() reads bytes in
 * little-endian order on every host, name_fold8() folds A-Z to a-z and '-'
 * to '_' in all eight lanes at once (SWAR), and a short tail is
 * zero-padded (names hold no NUL, so the padding cannot collide). */
#define NAME_HASH_SEED 0x243f6a8885a308d3ull

static inline uint64_t name_load8(const char *s) { return util_load_le64(s); }

/* Bytes A-Z get 0x20 added; a byte's high bit excludes it. */
static inline uint64_t name_fold_upper8(uint64_t x)
{
    const uint64_t lo7 = 0x7f7f7f7f7f7f7f7full, hi = 0x8080808080808080ull, one = 0x0101010101010101ull;
    uint64_t h7 = x & lo7;
    uint64_t upper = (h7 + one * (0x80 - 'A')) & ~(h7 + one * (0x80 - 'Z' - 1)) & ~x & hi;
    return x ^ (upper >> 2);
}

static inline uint64_t name_fold8(uint64_t x)
{
    uint64_t dash = util_bytes_eq_each(x, '-'); /* high bit set where the byte is '-' */
    return name_fold_upper8(x) ^ ((dash >> 7) * ('-' ^ '_'));
}

static inline uint64_t name_hash_step(uint64_t h, uint64_t folded)
{
    h = (h ^ folded) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}

static inline uint64_t name_hash_end(uint64_t h)
{
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

/* The same steps over raw bytes (no folding): the hash of the other
 * tables that key on text (the tracker's items, extract/'s sets). */
static inline uint64_t name_mix_bytes(uint64_t h, const char *s, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) h = name_hash_step(h, name_load8(s + i));
    if (i < n) h = name_hash_step(h, util_load_le_tail(s + i, n - i));
    return name_hash_end(h);
}

static inline uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = NAME_HASH_SEED;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) h = name_hash_step(h, name_fold8(name_load8(s + i)));
    if (i < n) h = name_hash_step(h, name_fold8(util_load_le_tail(s + i, n - i)));
    return name_hash_end(h);
}

static inline int name_filter_bits_test(const uint64_t *bits, size_t nbits, uint64_t h)
{
    size_t m = nbits - 1;
    size_t a = (size_t)h & m, b = (size_t)(h >> 32) & m;
    return (bits[a >> 6] >> (a & 63) & 1) && (bits[b >> 6] >> (b & 63) & 1);
}

static inline int name_filter_test_hash(const name_filter *f, uint64_t h)
{
    if (!f || !f->nbits) return 1; /* no filter: everything may match */
    return name_filter_bits_test(f->bits, f->nbits, h);
}

static inline int name_filter_test(const name_filter *f, const char *s, size_t n)
{
    return name_filter_test_hash(f, name_hash(s, n));
}

/* A cheaper first test for a lone word of a text (a run of [A-Za-z0-9_]):
 * its length and first three bytes (fewer when it is shorter), each with
 * 0x20 set, which a name's first bytes give too once folded (A-Z to a-z,
 * '-' to '_'), since 0x20 joins the cases and a word holds no '-'.  A
 * word that equals a name as the name hash folds has the name's key, so a
 * clear bit means no name; one bit per name.  lane: the eight bytes from
 * the word's start, little-endian (name_load8); 1 <= n < 64. */
extern const uint32_t name_keep3[64] __attribute__((visibility("hidden"))); /* n -> its min(n, 3) bytes */
static inline size_t name_word_slot(uint64_t lane, size_t n, unsigned shift)
{
    uint64_t k = ((lane | 0x202020u) & name_keep3[n]) | (uint64_t)n << 24;
    return (size_t)((k * 0x9e3779b97f4a7c15ull) >> shift);
}
/* The word's bit in wbits (0 or 1), for a scan that holds the filter's
 * fields in registers; name_filter_word_may below checks the filter. */
static inline uint64_t name_word_bit(const uint64_t *wbits, unsigned shift, uint64_t lane, size_t n)
{
    size_t s = name_word_slot(lane, n, shift);
    return wbits[s >> 6] >> (s & 63) & 1;
}
static inline int name_filter_word_may(const name_filter *f, uint64_t lane, size_t n)
{
    if (!f || !f->nbits || n >= 64) return 1; /* no filter: everything may match */
    return (int)name_word_bit(f->wbits, f->wshift, lane, n);
}
/* An id hashes as its form and the name hash of its name: "tool:" x is
 * (NAME_FORM_TOOL, x), "keyword:" x (NAME_FORM_KEYWORD, x), any other id
 * (NAME_FORM_OTHER, the id).  So a scanner holding a word's name hash
 * tests the word's project, tool and keyword ids without building them.
 * (Folding makes ids that differ only in case or '-'/'_' share bits: a
 * false positive, which a filter may give.) */
enum { NAME_FORM_OTHER, NAME_FORM_TOOL, NAME_FORM_KEYWORD };

static inline uint64_t name_id_mix(uint64_t name_h, unsigned form)
{
    return name_hash_end(name_h ^ (0x13198a2e03707344ull * (form + 1)));
}

/* An id's form, and in *skip the length of its prefix ("tool:",
 * "keyword:", or none): the name hashed is the rest. */
static inline unsigned name_id_form(const char *id, size_t n, size_t *skip)
{
    if (n > 5 && memcmp(id, "tool:", 5) == 0) return *skip = 5, NAME_FORM_TOOL;
    if (n > 8 && memcmp(id, "keyword:", 8) == 0) return *skip = 8, NAME_FORM_KEYWORD;
    return *skip = 0, NAME_FORM_OTHER;
}

static inline uint64_t name_id_hash(const char *id, size_t n)
{
    size_t skip;
    unsigned form = name_id_form(id, n, &skip);
    return name_id_mix(name_hash(id + skip, n - skip), form);
}

/* Whether an id of this hash (name_id_hash, name_id_mix) may be held. */
static inline int name_filter_test_idhash(const name_filter *f, uint64_t h)
{
    if (!f || !f->nbits) return 1;
    return name_filter_bits_test(f->idbits, f->nbits, h);
}

static inline int name_filter_test_id(const name_filter *f, const char *id, size_t n)
{
    return name_filter_test_idhash(f, name_id_hash(id, n));
}

/* Sizes the filter for `expected` names (16 bits each) and clears it.
 * Returns 0, or -1 on allocation failure (the filter then passes everything). */
int name_filter_reset(name_filter *f, size_t expected);
/* Adds an item: its bare name and its id. */
void name_filter_add(name_filter *f, const char *name, size_t n, const char *id, size_t id_n);
void name_filter_free(name_filter *f);

#endif
