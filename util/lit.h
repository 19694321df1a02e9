/* lit.h: a string literal with its length, known when compiled, for the
 * fixed name lists that hot paths compare against (a length compare first,
 * then the bytes: no strlen per name per call). */
#ifndef UTIL_LIT_H
#define UTIL_LIT_H

#include <stddef.h>

typedef struct util_lit {
    const char *s;
    size_t n;
} util_lit;

#define UTIL_LIT(s) {s, sizeof s - 1}

#endif
