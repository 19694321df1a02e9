/* buf.h: a growable byte buffer, always NUL-terminated.
 * Allocation failure is sticky: once set, appends are no-ops and
 * buf_failed() reports it, so callers check once at the end. */
#ifndef UTIL_BUF_H
#define UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

typedef struct buf {
    char *p;    /* owned; NUL-terminated when len > 0 or after any append */
    size_t len; /* bytes used, excluding the NUL */
    size_t cap;
    int oom;
} buf;

void buf_init(buf *b);
void buf_free(buf *b);
void buf_reset(buf *b); /* len = 0, keeps the allocation */
/* The out-of-line part of buf_reserve: grows the allocation. */
int buf_grow(buf *b, size_t extra);
/* Room for extra more bytes and the NUL: 0, or -1 (sticky oom).  Inline,
 * with the appends below: ids are built from a few appends each, many per
 * turn, and room is nearly always there. */
static inline int buf_reserve(buf *b, size_t extra)
{
    if (!b->oom && b->cap > b->len && extra < b->cap - b->len) return 0;
    return buf_grow(b, extra);
}

static inline void buf_append(buf *b, const char *s, size_t n)
{
    if (buf_reserve(b, n) != 0) return;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static inline void buf_puts(buf *b, const char *s) { buf_append(b, s, strlen(s)); }
static inline void buf_putc(buf *b, char c) { buf_append(b, &c, 1); }
void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(buf *b, const char *fmt, va_list ap);
/* Appends a decimal integer (no printf: this runs per item per turn). */
void buf_put_i64(buf *b, long long v);
void buf_put_u64(buf *b, unsigned long long v);
/* Appends v as printf's "%.3f" writes it, without printf for the values
 * scores take (0 to 10^6; others through printf). */
void buf_put_f3(buf *b, double v);
/* Appends s as a JSON string literal with quotes (invalid UTF-8 bytes become U+FFFD). */
void buf_json_str(buf *b, const char *s, size_t n);
/* Transfers ownership of the bytes to the caller (never NULL unless oom). */
char *buf_steal(buf *b, size_t *len);
static inline int buf_failed(const buf *b) { return b->oom; }

/* A new malloc()ed string formatted as by printf, or NULL. */
char *util_format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *util_vformat(const char *fmt, va_list ap);
/* Duplicates n bytes into a new NUL-terminated string, or NULL. */
char *util_strndup(const char *s, size_t n);
char *util_strdup(const char *s);
/* Length of the longest valid UTF-8 prefix of s[0..n) that does not split a
 * character; used to cut text at a budget without breaking a code point. */
size_t util_utf8_cut(const char *s, size_t n);

#endif
