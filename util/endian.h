/* endian.h: fixed byte orders from native words, for the code that reads
 * eight bytes at a time (hashes, the turn log's fields, sort keys). */
#ifndef UTIL_ENDIAN_H
#define UTIL_ENDIAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define UTIL_BIG_ENDIAN 1
#else
#define UTIL_BIG_ENDIAN 0
#endif

/* A word as stored in memory <-> its little-endian value (either way). */
static inline uint64_t util_le64(uint64_t x) { return UTIL_BIG_ENDIAN ? __builtin_bswap64(x) : x; }
static inline uint32_t util_le32(uint32_t x) { return UTIL_BIG_ENDIAN ? __builtin_bswap32(x) : x; }

/* The 8 bytes at p read as a little-endian / big-endian integer. */
static inline uint64_t util_load_le64(const void *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return util_le64(x);
}

static inline uint32_t util_load_le32(const void *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return util_le32(x);
}

/* The r (0..7) bytes at p read as a little-endian integer, zero above:
 * two overlapping loads instead of a loop over the bytes (the bytes the
 * loads share are the same, so OR-ing them is exact). */
static inline uint64_t util_load_le_tail(const void *p, size_t r)
{
    const unsigned char *s = p;
    if (r >= 4) return util_load_le32(s) | (uint64_t)util_load_le32(s + r - 4) << (8 * (r - 4));
    if (r == 0) return 0;
    return s[0] | (uint64_t)s[r / 2] << (8 * (r / 2)) | (uint64_t)s[r - 1] << (8 * (r - 1));
}

static inline uint64_t util_load_be64(const void *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return UTIL_BIG_ENDIAN ? x : __builtin_bswap64(x);
}

#endif
