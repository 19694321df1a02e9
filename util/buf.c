#include "buf.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(buf *b) { memset(b, 0, sizeof *b); }

void buf_free(buf *b)
{
    free(b->p);
    buf_init(b);
}

void buf_reset(buf *b)
{
    b->len = 0;
    if (b->p) b->p[0] = '\0';
}

int buf_grow(buf *b, size_t extra)
{
    if (b->oom) return -1;
    if (extra > SIZE_MAX - b->len - 1) {
        b->oom = 1;
        return -1;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Formats into the room the buffer has (at least PRINTF_ROOM bytes): the
 * second pass, after growing, only for a longer text. */
#define PRINTF_ROOM 64

void buf_vprintf(buf *b, const char *fmt, va_list ap)
{
    if (buf_reserve(b, PRINTF_ROOM) != 0) return;
    va_list cp;
    va_copy(cp, ap);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->p + b->len, room, fmt, cp);
    va_end(cp);
    if (n >= 0 && (size_t)n >= room) {
        if (buf_reserve(b, (size_t)n) != 0) {
            b->p[b->len] = '\0';
            return;
        }
        n = vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    }
    if (n < 0) {
        b->oom = 1;
        b->p[b->len] = '\0';
        return;
    }
    b->len += (size_t)n;
}

void buf_printf(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

static void put_decimal(buf *b, unsigned long long u, int neg)
{
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (neg) tmp[--i] = '-';
    buf_append(b, tmp + i, sizeof tmp - i);
}

void buf_put_i64(buf *b, long long v)
{
    put_decimal(b, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v, v < 0);
}

void buf_put_u64(buf *b, unsigned long long v) { put_decimal(b, v, 0); }

void buf_put_f3(buf *b, double v)
{
    /* v * 1000 is within 2^-23 of its exact value below 10^6: its
     * fraction then tells the rounding unless it is within 10^-6 of a
     * half, which printf settles (round half to even on the exact value) */
    if (v < 1e6 && v >= 0 && !signbit(v)) { /* (printf writes -0.000 for -0) */
        double x = v * 1000.0, r = floor(x), f = x - r;
        if (fabs(f - 0.5) > 1e-6) {
            unsigned long long u = (unsigned long long)r + (f > 0.5);
            char tmp[4] = {'.', (char)('0' + u / 100 % 10), (char)('0' + u / 10 % 10), (char)('0' + u % 10)};
            put_decimal(b, u / 1000, 0);
            buf_append(b, tmp, 4);
            return;
        }
    }
    buf_printf(b, "%.3f", v);
}

/* Length of a valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, min = 0x10000;
    else return 0;
    if (len > n) return 0;
    unsigned cp = c & (0xFF >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

void buf_json_str(buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    buf_putc(b, '"');
    size_t i = 0;
    while (i < n) {
        unsigned c = u[i];
        if (c >= 0x80) {
            size_t l = utf8_seq(u + i, n - i);
            if (l == 0) {
                buf_puts(b, "\\ufffd");
                i++;
            } else {
                buf_append(b, s + i, l);
                i += l;
            }
            continue;
        }
        switch (c) {
        case '"': buf_puts(b, "\\\""); break;
        case '\\': buf_puts(b, "\\\\"); break;
        case '\n': buf_puts(b, "\\n"); break;
        case '\r': buf_puts(b, "\\r"); break;
        case '\t': buf_puts(b, "\\t"); break;
        default:
            if (c < 0x20) {
                char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                buf_append(b, e, 6);
            } else {
                buf_putc(b, (char)c);
            }
        }
        i++;
    }
    buf_putc(b, '"');
}

char *buf_steal(buf *b, size_t *len)
{
    if (b->oom) {
        buf_free(b);
        if (len) *len = 0;
        return NULL;
    }
    if (!b->p && buf_reserve(b, 0) != 0) return NULL;
    if (!b->p) return NULL;
    b->p[b->len] = '\0';
    char *p = b->p;
    if (len) *len = b->len;
    buf_init(b);
    return p;
}

char *util_vformat(const char *fmt, va_list ap)
{
    buf b;
    buf_init(&b);
    buf_vprintf(&b, fmt, ap);
    return buf_steal(&b, NULL);
}

char *util_format(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = util_vformat(fmt, ap);
    va_end(ap);
    return s;
}

char *util_strndup(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *util_strdup(const char *s) { return s ? util_strndup(s, strlen(s)) : NULL; }

size_t util_utf8_cut(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t l = utf8_seq(u + i, n - i);
        if (l == 0) break;
        i += l;
    }
    return i;
}
