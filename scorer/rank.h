/* rank.h: the one score order of items, used wherever items are ranked
 * (the pruner, the score views, the compaction keep list, the item cap):
 * score descending, ties by id ascending (strcmp order).
 *
 * Sorting 100,000 items with qsort() and a strcmp() tie-break took tens of
 * milliseconds; here each entry carries the first 24 bytes of its id as
 * three big-endian integers, so almost every comparison is a few integer
 * compares, and a merge sort with the comparison inlined does the rest. */
#ifndef SCORER_RANK_H
#define SCORER_RANK_H

#include <stddef.h>
#include <stdint.h>

typedef struct rank_ent {
    double score;       /* NaN ranks as -infinity */
    uint64_t key[3];    /* the id's bytes 0-23, big-endian, zero-padded */
    const char *id;     /* borrowed; compared past byte 24 only when needed */
    size_t idx;         /* the caller's index */
} rank_ent;

/* Fills e for the item named id (NUL-terminated, borrowed until the sort). */
void rank_set(rank_ent *e, const char *id, double score, size_t idx);
/* Sorts v[0..n) into the score order.  Never fails: without memory for
 * the merge buffer it falls back to qsort() with the same order. */
void rank_sort(rank_ent *v, size_t n);
/* The score as an integer that sorts ascending when the scores sort
 * descending (IEEE order: the sign bit of positives flipped, every bit of
 * negatives; then complemented; -0 is 0). */
uint64_t rank_desc_bits(double d);
/* Below this many keys the merge sort beats the radix sort. */
#define RANK_RADIX_MIN 512
/* A stable LSD radix sort (8-bit digits, a pass skipped where every key
 * has the same digit) of the indices 0..n-1 by k ascending, through x
 * (2n entries).  Returns where the sorted indices are (x or x + n), or
 * NULL without memory. */
uint32_t *rank_radix(const uint64_t *k, uint32_t *x, size_t n);
/* Puts base[0..n) (elements of `size` bytes) in the order of the sorted
 * r: element r[i].idx goes to position i (in place; r's idx fields are
 * used up).  Returns 0, or -1 without memory (base is then unchanged). */
int rank_apply(void *base, size_t n, size_t size, rank_ent *r);

#endif
