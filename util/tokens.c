/* tokens.c: the token estimate clarity uses when a host gives no count. */
#include "tokens.h"

int64_t util_estimate_tokens(const char *s, size_t n)
{
    size_t ascii = 0, other = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) ascii++;
        else if ((c & 0xc0) != 0x80) other++; /* a character's first byte */
    }
    return (int64_t)((ascii + 3) / 4 + other);
}
