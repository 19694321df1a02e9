/* classify.h: the byte classes of up to 64 bytes as bit masks (bit i is
 * byte i), so scanners find word and token boundaries with bit scans
 * instead of a table lookup and a branch per byte.  SSE2 where the
 * compiler targets it (every x86-64), a table loop elsewhere; both give
 * the same masks as ex_ctype (tests/test_prefilter.c checks it). */
#ifndef EXTRACT_CLASSIFY_H
#define EXTRACT_CLASSIFY_H

#include <stdint.h>
#include <string.h>

#include "internal.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef struct ex_cls {
    uint64_t word;  /* [A-Za-z0-9_] */
    uint64_t path;  /* [A-Za-z0-9_./~@+-] (ex_is_path_char) */
    uint64_t dot;   /* '.' */
    uint64_t slash; /* '/' */
} ex_cls;

#ifdef __SSE2__
static inline void ex_classify16(const unsigned char *p, unsigned sh, ex_cls *c)
{
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i low = _mm_or_si128(v, _mm_set1_epi8(0x20));
    /* signed compares: bytes >= 0x80 are negative and fall outside */
    __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(low, _mm_set1_epi8('a' - 1)),
                                   _mm_cmplt_epi8(low, _mm_set1_epi8('z' + 1)));
    __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                  _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
    __m128i word = _mm_or_si128(_mm_or_si128(letter, digit), _mm_cmpeq_epi8(v, _mm_set1_epi8('_')));
    __m128i dot = _mm_cmpeq_epi8(v, _mm_set1_epi8('.'));
    __m128i slash = _mm_cmpeq_epi8(v, _mm_set1_epi8('/'));
    __m128i other = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('~')),
                                              _mm_cmpeq_epi8(v, _mm_set1_epi8('@'))),
                                 _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('+')),
                                              _mm_cmpeq_epi8(v, _mm_set1_epi8('-'))));
    __m128i path = _mm_or_si128(_mm_or_si128(word, other), _mm_or_si128(dot, slash));
    c->word |= (uint64_t)(unsigned)_mm_movemask_epi8(word) << sh;
    c->path |= (uint64_t)(unsigned)_mm_movemask_epi8(path) << sh;
    c->dot |= (uint64_t)(unsigned)_mm_movemask_epi8(dot) << sh;
    c->slash |= (uint64_t)(unsigned)_mm_movemask_epi8(slash) << sh;
}
#endif

/* The classes of p[0..n), n <= 64; the bits past n are 0. */
static inline void ex_classify(const char *p, size_t n, ex_cls *c)
{
    c->word = c->path = c->dot = c->slash = 0;
#ifdef __SSE2__
    if (n == 64) {
        for (unsigned k = 0; k < 64; k += 16) ex_classify16((const unsigned char *)p + k, k, c);
        return;
    }
    unsigned char pad[64] = {0};
    memcpy(pad, p, n);
    for (unsigned k = 0; k < n; k += 16) ex_classify16(pad + k, k, c);
#else
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)p[i], t = ex_ctype[b];
        c->word |= (uint64_t)(t & EX_WORD ? 1 : 0) << i;
        c->path |= (uint64_t)(t & EX_PATH ? 1 : 0) << i;
        c->dot |= (uint64_t)(b == '.') << i;
        c->slash |= (uint64_t)(b == '/') << i;
    }
#endif
}

#endif
