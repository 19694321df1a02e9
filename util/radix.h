/* radix.h: a stable LSD radix sort of indices by 64-bit keys, for the
 * large arrays whose comparison sorts cost most (a session's scores, a
 * rank index rebuilt, a code graph's postings). */
#ifndef UTIL_RADIX_H
#define UTIL_RADIX_H

#include <stddef.h>
#include <stdint.h>

/* The indices 0..n-1 sorted by k ascending, equal keys in index order
 * (8-bit digits; a pass is skipped where every key has the same digit),
 * through x (2n entries).  Returns where the sorted indices are (x or
 * x + n), or NULL without memory. */
uint32_t *util_radix_order(const uint64_t *k, uint32_t *x, size_t n);

#endif
