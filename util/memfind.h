/* memfind.h: the first place a short needle, or a byte of a kind, occurs
 * in a long text.
 * glibc's memmem walks every byte; the texts clarity searches (a turn's
 * reply for its own block markers) rarely hold even the needle's first
 * byte, which memchr skips to with vector loads.  At most about
 * needle-length compares per byte of text, whatever the input. */
#ifndef UTIL_MEMFIND_H
#define UTIL_MEMFIND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Eight bytes at once (a little-endian load, util_load_le64): the high bit
 * of each byte that equals c, or is below c (c <= 0x80; bytes from 0x80 up
 * never count), is set.  A borrow may set bits above a true one, never
 * below: only the lowest set bit is exact, so ctz / 8 finds the first such
 * byte. */
#define UTIL_BYTES_ONE 0x0101010101010101ull
#define UTIL_BYTES_HIGH 0x8080808080808080ull

static inline uint64_t util_bytes_below(uint64_t x, unsigned char c)
{
    return (x - UTIL_BYTES_ONE * c) & ~x & UTIL_BYTES_HIGH;
}

static inline uint64_t util_bytes_eq(uint64_t x, unsigned char c)
{
    return util_bytes_below(x ^ (UTIL_BYTES_ONE * c), 1);
}

/* The high bit of every byte of x that equals c, each one exact (where
 * util_bytes_eq is exact for the lowest only): a byte's low seven bits
 * plus 0x7f carry into its high bit unless all are zero, and no carry
 * leaves the byte.  For walking all of them with ctz. */
static inline uint64_t util_bytes_eq_each(uint64_t x, unsigned char c)
{
    const uint64_t lo7 = ~UTIL_BYTES_HIGH;
    uint64_t y = x ^ (UTIL_BYTES_ONE * c);
    return ~(((y & lo7) + lo7) | y) & UTIL_BYTES_HIGH;
}

static inline const char *util_memfind(const char *h, size_t n, const char *nd, size_t m)
{
    if (m == 0) return h;
    while (n >= m) {
        const char *p = memchr(h, nd[0], n - m + 1);
        if (!p) return NULL;
        if (memcmp(p + 1, nd + 1, m - 1) == 0) return p;
        n -= (size_t)(p + 1 - h);
        h = p + 1;
    }
    return NULL;
}

#endif
