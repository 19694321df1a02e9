/* wordbatch.h: the two tests a scan runs first on the words that start in
 * a 64-byte block, in the forms that run on AVX2 and BMI2 CPUs: the name
 * filter's first word test (name_filter_word_may) for all of them at once,
 * and the memo's test (ex_memo_hits) with its loop written out.
 *
 * The filtered scan (candidates.c) tests each word of a block before
 * anything else; most fail, so the test is most of what prose costs.  One
 * at a time (ex_word_misses) it is about 23 instructions a word: a length,
 * a load, the key, a multiply, a dependent load of the bitmap.  With AVX2
 * (ex_word_misses_avx2) the starts and run ends are listed first (about
 * 10 a word), then eight words go through the same steps in lanes (their
 * keys in 32-bit lanes, the slot's 64-bit multiply in 64-bit ones), the
 * text and the bitmap read with gathers (about 35 a batch).  A block of
 * prose holds about five such words, so the gain is small: 0.2 % of the
 * replay's instructions, 0.9 % of the dense turn's, and no change in time
 * (bench/HISTORY.md, fourteenth session).  The lanes compute exactly
 * name_word_slot, so the two give the same bits (tests/test_prefilter.c
 * compares them on random blocks).
 *
 * The memo's test (ex_memo_hits) was batched the same way, four 16-byte
 * keys at a time: 8 instructions a word fewer, but the dense turn's reply
 * took 40 % longer (one long chain of gathers a batch, where the words'
 * loads one at a time overlap), so it stays one word at a time. */
#ifndef EXTRACT_WORDBATCH_H
#define EXTRACT_WORDBATCH_H

#include "classify.h"

/* The starts among `cand` (bits of the 64-byte block at t, whose word
 * bits are `word`, the next block's `next_word`; each with eight bytes of
 * text from it) of words no name can equal (name_filter_word_may).  A
 * word of 63 bytes or more is left to the scan. */
static inline __attribute__((always_inline)) uint64_t ex_word_misses(const name_filter *nf, const char *t,
                                                                     uint64_t cand, uint64_t word,
                                                                     uint64_t next_word)
{
    /* the filter's fields in locals, and no branch but the loop's */
    if (!nf->nbits) return 0; /* no filter: every word may name an item */
    const uint64_t *wb = nf->wbits;
    const unsigned shift = nf->wshift;
    uint64_t out = 0, nonword = ~word;
    unsigned last = ex_take_straddler(&cand, word);
    while (cand) {
        unsigned bit = (unsigned)__builtin_ctzll(cand);
        cand &= cand - 1;
        out |= (name_word_bit(wb, shift, name_load8(t + bit), ex_len_in_block(nonword, bit)) ^ 1) << bit;
    }
    if (last < 64) {
        size_t n = ex_word_len(nonword, ~next_word, last);
        out |= ((name_word_bit(wb, shift, name_load8(t + last), n) ^ 1) & (n < 63)) << last;
    }
    return out;
}

/* A block's memo test (ex_memo_hits, or ex_memo_hits_bmi2 below), a
 * constant argument of the scans. */
typedef uint64_t ex_memo_hits_fn(const ex_memo *m, const char *t, uint64_t cand, uint64_t word, uint64_t next_word,
                                 int counted);

#if EX_AVX2
/* The runs of `word` that start at cand's bits (each a start of a run,
 * none reaching bit 63): their first byte in pos[], the byte after them
 * in end[], in order; their count (at most 32: runs are apart).  Eight
 * zero bytes follow in each, which the batches read past the count. */
static inline __attribute__((always_inline)) size_t ex_list_runs(uint64_t cand, uint64_t word, uint8_t pos[40],
                                                                 uint8_t end[40])
{
    /* adding a run's first bit carries through it to the byte after it */
    uint64_t after = (word + cand) & ~word;
    size_t k = 0;
    for (; cand; k++, cand &= cand - 1, after &= after - 1) {
        pos[k] = (uint8_t)__builtin_ctzll(cand);
        end[k] = (uint8_t)__builtin_ctzll(after);
    }
    memset(pos + k, 0, 8);
    memset(end + k, 0, 8);
    return k;
}

/* ex_word_misses (candidates.c) with the words but the straddler in
 * batches of eight: the starts among cand of words the filter's word bits
 * say no name can equal.  cand's words have eight bytes of text from their
 * start (the gather reads four). */
__attribute__((target("avx2,bmi,bmi2"), always_inline)) static inline uint64_t
ex_word_misses_avx2(const name_filter *nf, const char *t, uint64_t cand, uint64_t word, uint64_t next_word)
{
    if (!nf->nbits) return 0;
    uint64_t out = 0;
    unsigned last = ex_take_straddler(&cand, word);
    if (cand) {
        uint8_t pos[40], end[40];
        size_t k = ex_list_runs(cand, word, pos, end);
        const __m128i shift = _mm_cvtsi32_si128((int)nf->wshift);
        const __m256i three = _mm256_set1_epi32(3);
        /* name_word_slot's multiply by 0x9e3779b97f4a7c15 of a key below
         * 2^32, from its two 32-bit halves (AVX2 has no 64-bit multiply):
         * in 64-bit lanes */
        const __m256i mlo = _mm256_set1_epi64x(0x7f4a7c15), mhi = _mm256_set1_epi64x(0x9e3779b9);
        const __m256i low31 = _mm256_set1_epi32(31);
        const uint64_t *wb = nf->wbits;
        uint64_t may = 0;
        for (size_t j = 0; j < k; j += 8) {
            __m256i p = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(pos + j)));
            __m256i n = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(end + j))), p);
            __m256i lane = _mm256_i32gather_epi32((const int *)(const void *)t, p, 1);
            /* name_keep3[n]: the word's first min(n, 3) bytes */
            __m256i drop = _mm256_slli_epi32(_mm256_sub_epi32(three, _mm256_min_epu32(n, three)), 3);
            __m256i keep = _mm256_srlv_epi32(_mm256_set1_epi32(0xffffff), drop);
            __m256i key = _mm256_and_si256(_mm256_or_si256(lane, _mm256_set1_epi32(0x202020)), keep);
            key = _mm256_or_si256(key, _mm256_slli_epi32(n, 24));
            /* the slots (below 2^32) of the even words and of the odd ones,
             * then back in one 32-bit lane each */
            __m256i se = _mm256_add_epi64(_mm256_mul_epu32(key, mlo), _mm256_slli_epi64(_mm256_mul_epu32(key, mhi), 32));
            __m256i ko = _mm256_srli_epi64(key, 32);
            __m256i so = _mm256_add_epi64(_mm256_mul_epu32(ko, mlo), _mm256_slli_epi64(_mm256_mul_epu32(ko, mhi), 32));
            __m256i slot = _mm256_or_si256(_mm256_srl_epi64(se, shift), _mm256_slli_epi64(_mm256_srl_epi64(so, shift), 32));
            /* the slot's bit of the bitmap, read as 32-bit words (x86 is
             * little-endian: bit s of the 64-bit words is bit s % 32 of
             * 32-bit word s / 32), moved to the lane's sign */
            __m256i w = _mm256_i32gather_epi32((const int *)(const void *)wb, _mm256_srli_epi32(slot, 5), 4);
            w = _mm256_sllv_epi32(w, _mm256_sub_epi32(low31, _mm256_and_si256(slot, low31)));
            may |= (uint64_t)(unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(w)) << j;
        }
        /* the k words' bits, back at their starts */
        out = _pdep_u64(~may, cand);
    }
    if (last < 64) {
        size_t n = ex_word_len(~word, ~next_word, last);
        out |= ((name_word_bit(nf->wbits, nf->wshift, name_load8(t + last), n) ^ 1) & (n < 63)) << last;
    }
    return out;
}

/* ex_memo_hits (internal.h) with its loop written out, for the scans that
 * run on a CPU with BMI1 and BMI2 (those compiled for AVX2, which
 * ex_cpu_avx2 selects only on one).  GCC's code for the C loop took 26 to
 * 28 instructions a word inside the large scans it is inlined in: short of
 * registers, it rebuilt the two 64-bit constants, zero-extended the bit and
 * cleared tzcnt's output for every word.  Written out it takes 21, or 23
 * when counted.  The steps are ex_memo_hit_at's:
 * - the length from the block's non-word bits: every word left in cand
 *   ends inside the block once the straddler is out, so the shifted bits
 *   are never all zero;
 * - the two lanes masked to it (ex_memo_keep), the slot from the first,
 *   the slot's key compared whole;
 * - the hit set at the word's bit without a branch on the outcome (hits and
 *   misses come in no order) and, when counted, added to the slot's count.
 * The test prefilter::memo_hits_written_out_equal_the_c_loop compares the
 * two on random blocks. */
_Static_assert(EX_MEMO_MAX == 16, "ex_memo_hits_bmi2 compares the length with 16");
/* The two loops' shared parts (operands named as in ex_memo_hits_bmi2):
 * the head takes a word's bit and length (a word past EX_MEMO_MAX goes to
 * the tail), its two lanes masked to it, and its slot in %[s]; the tail
 * drops the word's bit and loops while one is left. */
#define EX_MEMO_ASM_HEAD                                                                                           \
    "1:\n\t"                                                                                                      \
    "tzcnt %[cand], %[bit]\n\t"                                                                                   \
    "shrx %[bit], %[nonword], %[n]\n\t"                                                                           \
    "tzcnt %[n], %[n]\n\t"                                                                                        \
    "cmp $16, %[n]\n\t"                                                                                           \
    "ja 2f\n\t"                                                                                                   \
    "mov (%[t],%[bit]), %[x]\n\t"                                                                                 \
    "and (%[keep],%[n],8), %[x]\n\t"                                                                              \
    "mov 8(%[t],%[bit]), %[y]\n\t"                                                                                \
    "and %c[hi](%[keep],%[n],8), %[y]\n\t"                                                                        \
    "movabs $0x9e3779b97f4a7c15, %[s]\n\t"                                                                        \
    "imul %[x], %[s]\n\t"                                                                                         \
    "shrx %[shift], %[s], %[s]\n\t"
#define EX_MEMO_ASM_TAIL                                                                                           \
    "2:\n\t"                                                                                                      \
    "blsr %[cand], %[cand]\n\t"                                                                                   \
    "jnz 1b"
#define EX_MEMO_ASM_OUT                                                                                            \
    [cand] "+r"(cand), [hits] "+r"(hits), [bit] "=&r"(bit), [n] "=&r"(n), [x] "=&r"(x), [y] "=&r"(y), [s] "=&r"(s)
#define EX_MEMO_ASM_IN                                                                                             \
    [nonword] "r"(nonword), [t] "r"(t), [keep] "r"(ex_memo_keep), [hi] "i"(sizeof ex_memo_keep[0]),               \
        [shift] "r"(shift), [keys] "r"(at.key)

static inline __attribute__((always_inline)) uint64_t ex_memo_hits_bmi2(const ex_memo *m, const char *t,
                                                                        uint64_t cand, uint64_t word,
                                                                        uint64_t next_word, int counted)
{
    const ex_memo at = *m;
    uint64_t hits = 0, nonword = ~word;
    unsigned last = ex_take_straddler(&cand, word);
    if (cand) {
        uint64_t bit, n, x, y, s, shift = at.shift;
        if (counted) /* the slot kept for its count; the hit as 0 or 1 */
            __asm__(EX_MEMO_ASM_HEAD "lea (%[s],%[s]), %[n]\n\t" /* the slot's key: 16 bytes a slot */
                                     "xor (%[keys],%[n],8), %[x]\n\t"
                                     "xor 8(%[keys],%[n],8), %[y]\n\t"
                                     "xor %k[n], %k[n]\n\t"
                                     "or %[x], %[y]\n\t"
                                     "sete %b[n]\n\t"
                                     "add %k[n], (%[cnt],%[s],4)\n\t"
                                     "shlx %[bit], %[n], %[n]\n\t"
                                     "or %[n], %[hits]\n\t" EX_MEMO_ASM_TAIL
                    : EX_MEMO_ASM_OUT
                    : EX_MEMO_ASM_IN, [cnt] "r"(at.cnt)
                    : "cc", "memory");
        else /* the hit's bit set by a conditional move */
            __asm__(EX_MEMO_ASM_HEAD "shl $4, %[s]\n\t" /* the slot's key: 16 bytes a slot */
                                     "xor (%[keys],%[s]), %[x]\n\t"
                                     "xor 8(%[keys],%[s]), %[y]\n\t"
                                     "mov %[hits], %[n]\n\t"
                                     "bts %[bit], %[n]\n\t"
                                     "or %[x], %[y]\n\t"
                                     "cmovz %[n], %[hits]\n\t" EX_MEMO_ASM_TAIL
                    : EX_MEMO_ASM_OUT
                    : EX_MEMO_ASM_IN
                    : "cc", "memory");
    }
    return hits | ex_memo_hit_last(&at, t, last, nonword, next_word, counted);
}
#undef EX_MEMO_ASM_HEAD
#undef EX_MEMO_ASM_TAIL
#undef EX_MEMO_ASM_OUT
#undef EX_MEMO_ASM_IN
#endif

#endif
