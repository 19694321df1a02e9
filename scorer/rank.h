/* rank.h: the one score order of items, used wherever items are ranked
 * (the pruner, the score views, the compaction keep list, the item cap):
 * score descending, ties by id ascending (strcmp order).
 *
 * Each entry carries the first 24 bytes of its id as three big-endian
 * integers.  Small arrays: a merge sort with the comparison inlined.
 * Large ones: a most-significant-byte radix sort of the score's bits then
 * the id's bytes, which skips the bytes a bucket shares (scores tie in long
 * runs: they are functions of a few small counters). */
#ifndef SCORER_RANK_H
#define SCORER_RANK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
static inline uint64_t rank_desc_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    if (d == 0) u = 0; /* -0.0 == 0.0 */
    u = (u >> 63) ? ~u : u | (uint64_t)1 << 63;
    return ~u;
}
/* Below this many keys the merge sort beats the radix sort. */
#define RANK_RADIX_MIN 512
/* The indices 0..n-1 of score[] into order[] by score descending (NaN as
 * -infinity), equal scores in index order.  For callers that need ids in
 * order only within some runs of equal scores (the pruner).  Returns 0, or
 * -1 without memory. */
int rank_by_score(const double *score, size_t n, uint32_t *order);
/* base[i] = base[order[i]] for i < n, in place (order is used up: it ends
 * as the identity); tmp holds one element. */
void rank_permute(void *base, size_t n, size_t size, uint32_t *order, void *tmp);
/* Puts base[0..n) (elements of `size` bytes) in the order of the sorted
 * r: element r[i].idx goes to position i (in place; r's idx fields are
 * used up).  Returns 0, or -1 without memory (base is then unchanged). */
int rank_apply(void *base, size_t n, size_t size, rank_ent *r);

/* Records of `size` bytes in an array, each with its score (a double) at
 * byte score_at; id_of names a record.  Sorting by score alone and then
 * by id only the runs of equal scores a caller reads in order (the
 * pruner's caps, a top-k view) is most of a full sort's cost saved on
 * large sessions. */
typedef struct rank_rows {
    void *base;
    size_t n, size, score_at;
    const char *(*id_of)(const void *row);
} rank_rows;
/* Puts the rows in score order (rank_by_score), equal scores in the order
 * they were.  Returns 0, or -1 without memory (rows unchanged). */
int rank_rows_by_score(const rank_rows *r);
/* The end of the run of equal scores that starts at row a. */
size_t rank_run_end(const rank_rows *r, size_t a);
/* Puts rows [a, b), of equal scores, in id order.  0, or -1 without
 * memory. */
int rank_run_by_id(const rank_rows *r, size_t a, size_t b);

#endif
