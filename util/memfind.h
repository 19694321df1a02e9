/* memfind.h: the first place a short needle occurs in a long text.
 * glibc's memmem walks every byte; the texts clarity searches (a turn's
 * reply for its own block markers) rarely hold even the needle's first
 * byte, which memchr skips to with vector loads.  At most about
 * needle-length compares per byte of text, whatever the input. */
#ifndef UTIL_MEMFIND_H
#define UTIL_MEMFIND_H

#include <stddef.h>
#include <string.h>

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
