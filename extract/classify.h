/* classify.h: the byte classes of up to 64 bytes as bit masks (bit i is
 * byte i), so scanners find word and token boundaries with bit scans
 * instead of a table lookup and a branch per byte.  AVX2 where the running
 * CPU has it (extractor.avx2, chosen once), else SSE2 where the compiler
 * targets it (every x86-64), else a table loop; all give the same masks as
 * ex_ctype (tests/test_prefilter.c checks each). */
#ifndef EXTRACT_CLASSIFY_H
#define EXTRACT_CLASSIFY_H

#include <stdint.h>
#include <string.h>

#include "internal.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define EX_AVX2 1
#else
#define EX_AVX2 0
#endif

typedef struct ex_cls {
    uint64_t word;  /* [A-Za-z0-9_] */
    uint64_t path;  /* [A-Za-z0-9_./~@+-] (ex_is_path_char) */
    uint64_t dot;   /* '.' */
    uint64_t slash; /* '/' */
    uint64_t open;  /* '[': where an own block may start (extract_strip_own) */
} ex_cls;

#ifdef __SSE2__
/* The word bytes ([A-Za-z0-9_]) of the sixteen bytes v, as 0xff bytes. */
static inline __attribute__((always_inline)) __m128i ex_word16(__m128i v)
{
    __m128i low = _mm_or_si128(v, _mm_set1_epi8(0x20));
    /* signed compares: bytes >= 0x80 are negative and fall outside */
    __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(low, _mm_set1_epi8('a' - 1)),
                                   _mm_cmplt_epi8(low, _mm_set1_epi8('z' + 1)));
    __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                  _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
    return _mm_or_si128(_mm_or_si128(letter, digit), _mm_cmpeq_epi8(v, _mm_set1_epi8('_')));
}

static inline __attribute__((always_inline)) void ex_classify16(const unsigned char *p, unsigned sh, ex_cls *c,
                                                                int open)
{
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i word = ex_word16(v);
    __m128i dot = _mm_cmpeq_epi8(v, _mm_set1_epi8('.'));
    __m128i slash = _mm_cmpeq_epi8(v, _mm_set1_epi8('/'));
    __m128i other = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('~')),
                                              _mm_cmpeq_epi8(v, _mm_set1_epi8('@'))),
                                 _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('+')),
                                              _mm_cmpeq_epi8(v, _mm_set1_epi8('-'))));
    __m128i path = _mm_or_si128(_mm_or_si128(word, other), _mm_or_si128(dot, slash));
    c->word |= (uint64_t)(unsigned)_mm_movemask_epi8(word) << sh;
    if (open) c->open |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('['))) << sh;
    c->path |= (uint64_t)(unsigned)_mm_movemask_epi8(path) << sh;
    c->dot |= (uint64_t)(unsigned)_mm_movemask_epi8(dot) << sh;
    c->slash |= (uint64_t)(unsigned)_mm_movemask_epi8(slash) << sh;
}
#endif

/* The classes of p[0..n), n <= 64; the bits past n are 0.  '[' only with
 * `open` (a constant: the scans that do not need it do not compute it). */
static inline __attribute__((always_inline)) void ex_classify_with(const char *p, size_t n, ex_cls *c, int open)
{
    c->word = c->path = c->dot = c->slash = c->open = 0;
#ifdef __SSE2__
    if (n == 64) {
        for (unsigned k = 0; k < 64; k += 16) ex_classify16((const unsigned char *)p + k, k, c, open);
        return;
    }
    unsigned char pad[64] = {0};
    memcpy(pad, p, n);
    for (unsigned k = 0; k < n; k += 16) ex_classify16(pad + k, k, c, open);
#else
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)p[i], t = ex_ctype[b];
        c->word |= (uint64_t)(t & EX_WORD ? 1 : 0) << i;
        c->path |= (uint64_t)(t & EX_PATH ? 1 : 0) << i;
        c->dot |= (uint64_t)(b == '.') << i;
        c->slash |= (uint64_t)(b == '/') << i;
        if (open) c->open |= (uint64_t)(b == '[') << i;
    }
#endif
}
static inline void ex_classify(const char *p, size_t n, ex_cls *c) { ex_classify_with(p, n, c, 0); }
static inline void ex_classify_open(const char *p, size_t n, ex_cls *c) { ex_classify_with(p, n, c, 1); }


#if EX_AVX2
/* The classes of the 32 bytes at p (ex_classify_avx2's tables), into c's
 * bits sh to sh + 31. */
__attribute__((target("avx2,bmi,bmi2"), always_inline)) static inline void
ex_classify32_avx2(const char *p, __m256i lo_t, __m256i hi_t, unsigned sh, ex_cls *c, int open)
{
    const __m256i nib = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
    __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i cl = _mm256_and_si256(_mm256_shuffle_epi8(lo_t, _mm256_and_si256(v, nib)),
                                  _mm256_shuffle_epi8(hi_t, _mm256_and_si256(_mm256_srli_epi16(v, 4), nib)));
    uint32_t w = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(cl, nib), zero));
    uint32_t pa = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(cl, _mm256_set1_epi8(0x3f)), zero));
    uint32_t d = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(cl, 1)); /* bit 6 to each byte's top */
    uint32_t sl = (uint32_t)_mm256_movemask_epi8(cl);
    c->word |= (uint64_t)w << sh;
    if (open) c->open |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('['))) << sh;
    c->path |= (uint64_t)pa << sh;
    c->dot |= (uint64_t)d << sh;
    c->slash |= (uint64_t)sl << sh;
}

/* With AVX2, a byte's classes are two table lookups on its nibbles
 * (vpshufb), ANDed: bits 0-3 word bytes (0-9; A-O a-o; P-Z p-z; '_'), 4
 * "+-./", 5 "@~" (and, harmlessly, some letters), 6 '.', 7 '/'; bytes of
 * 0x80 and up have a zero high-nibble entry.  Word is bits 0-3, path bits
 * 0-5.  About 40 instructions per 64 bytes instead of some 200. */
__attribute__((target("avx2,bmi,bmi2"), always_inline)) static inline void
ex_classify_avx2_with(const char *p, size_t n, ex_cls *c, int open)
{
    unsigned char pad[64];
    if (n < 64) {
        memset(pad, 0, sizeof pad);
        memcpy(pad, p, n);
        p = (const char *)pad;
    }
#define LO_ 0x25, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x06, 0x12, 0x02, 0x12, 0x72, (char)0x9a
#define HI_ 0, 0, (char)0xd0, 0x01, 0x22, 0x0c, 0x02, 0x24, 0, 0, 0, 0, 0, 0, 0, 0
    const __m256i lo_t = _mm256_setr_epi8(LO_, LO_), hi_t = _mm256_setr_epi8(HI_, HI_);
#undef LO_
#undef HI_
    /* Each half's masks straight into the 64-bit ones, in registers: masks
     * stored as 32-bit halves and read back whole stall store forwarding
     * (two stores, one load), which cost this loop 8 % of the scan's time. */
    c->word = c->path = c->dot = c->slash = c->open = 0;
    ex_classify32_avx2(p, lo_t, hi_t, 0, c, open);
    ex_classify32_avx2(p + 32, lo_t, hi_t, 32, c, open);
}
__attribute__((target("avx2,bmi,bmi2"), always_inline)) static inline void ex_classify_avx2(const char *p, size_t n,
                                                                                          ex_cls *c)
{
    ex_classify_avx2_with(p, n, c, 0);
}
__attribute__((target("avx2,bmi,bmi2"), always_inline)) static inline void
ex_classify_open_avx2(const char *p, size_t n, ex_cls *c)
{
    ex_classify_avx2_with(p, n, c, 1);
}
#endif

/* A classifier, for scan loops compiled once per instruction set with it
 * inlined (a constant argument of an always_inline body). */
typedef void ex_classify_fn(const char *p, size_t n, ex_cls *c);

/* The classes of the block at t + at of a text of len bytes, all zero past
 * its end.  The scans classify each block one ahead of the one they work
 * on: a word or token running into the next block ends by its bits. */
static inline __attribute__((always_inline)) void ex_classify_at(ex_classify_fn *classify, const char *t, size_t len,
                                                                 size_t at, ex_cls *c)
{
    if (at < len) classify(t + at, len - at < 64 ? len - at : 64, c);
    else *c = (ex_cls){0};
}

/* The end of the word starting at t[p], bit `bit` of the block c (the
 * next block nx): from the two blocks' word bits, further bytes (a word of
 * 63 or more) one at a time. */
static inline size_t ex_word_end(const char *t, size_t len, size_t p, unsigned bit, const ex_cls *c,
                                 const ex_cls *nx)
{
    size_t end = p + ex_word_len(~c->word, ~nx->word, bit);
    if (end - p == 63)
        while (end < len && ex_is_word((unsigned char)t[end])) end++;
    return end;
}

/* The maximal runs of word bytes of t[0, n), in order, from 64 bytes'
 * word bits at a time: a few instructions a word where a byte loop took
 * about five a byte (a token's words, candidates.c).  room: the bytes
 * readable from t (n or more): a piece of sixteen with them is read in
 * place, a shorter one through a padded copy. */
typedef struct ex_word_runs {
    const char *t;
    size_t n, room;
    size_t k;   /* the chunk w came from starts at t + k */
    uint64_t w; /* its word bits not returned yet */
} ex_word_runs;

/* The word bits of p[0, m) (m <= 64; room bytes readable from p, room >= m),
 * sixteen bytes at a time: a token is mostly shorter than a block. */
static inline uint64_t ex_word_bits(const char *p, size_t m, size_t room)
{
    uint64_t w = 0;
#ifdef __SSE2__
    for (size_t j = 0; j < m; j += 16) {
        unsigned char pad[16];
        const unsigned char *q = (const unsigned char *)p + j;
        if (room - j < 16) {
            memset(pad, 0, sizeof pad);
            memcpy(pad, q, room - j);
            q = pad;
        }
        __m128i word = ex_word16(_mm_loadu_si128((const __m128i *)(const void *)q));
        w |= (uint64_t)(unsigned)_mm_movemask_epi8(word) << j;
    }
#else
    (void)room;
    for (size_t i = 0; i < m; i++) w |= (uint64_t)(ex_is_word((unsigned char)p[i]) ? 1 : 0) << i;
#endif
    return m == 64 ? w : w & (((uint64_t)1 << m) - 1);
}

static inline uint64_t ex_word_runs_chunk(const ex_word_runs *r, size_t k)
{
    return ex_word_bits(r->t + k, r->n - k < 64 ? r->n - k : 64, r->room - k);
}

static inline void ex_word_runs_init(ex_word_runs *r, const char *t, size_t n, size_t room)
{
    *r = (ex_word_runs){t, n, room, 0, 0};
    if (n) r->w = ex_word_runs_chunk(r, 0);
}

/* The next run as [*a, *b): 1, or 0 when there is none. */
static inline int ex_word_runs_next(ex_word_runs *r, size_t *a, size_t *b)
{
    while (!r->w) {
        r->k += 64;
        if (r->k >= r->n) return 0;
        r->w = ex_word_runs_chunk(r, r->k);
    }
    unsigned s = (unsigned)__builtin_ctzll(r->w);
    uint64_t rest = ~(r->w >> s); /* its zero bits from 0: the run */
    *a = r->k + s;
    if (rest && s + (unsigned)__builtin_ctzll(rest) < 64) {
        unsigned len = (unsigned)__builtin_ctzll(rest);
        r->w &= ~((((uint64_t)1 << len) - 1) << s);
        *b = *a + len;
        return 1;
    }
    /* the run reaches the chunk's end: its end is in a later chunk (a
     * partial chunk's bits past n are 0, so only a full one gets here) */
    for (;;) {
        r->k += 64;
        if (r->k >= r->n) {
            r->w = 0;
            *b = r->n;
            return 1;
        }
        uint64_t w = ex_word_runs_chunk(r, r->k);
        if (w == ~(uint64_t)0) continue;
        unsigned e = (unsigned)__builtin_ctzll(~w);
        r->w = w & (~(uint64_t)0 << e); /* e < 64 */
        *b = r->k + e;
        return 1;
    }
}

/* Whether this CPU runs ex_classify_avx2 (normalize.c). */
int ex_cpu_avx2(void);

#endif
