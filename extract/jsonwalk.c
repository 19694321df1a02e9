/* jsonwalk.c: the string values of a tool call's JSON arguments, in one
 * pass without building a tree (ex_json_strings in internal.h).
 *
 * It must see exactly what the jansson walk in candidates.c sees, which
 * stays the reference: whatever this scanner is not certain to read the
 * same way (a \u escape, a byte above 0x7f, a number jansson might refuse
 * for its size, a repeated key, deep nesting, a long object) makes it
 * answer EX_JSON_UNSURE and the caller parses with jansson.  Tool
 * arguments are almost always plain ASCII and take the fast path. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "../include/clarity.h"
#include "../util/endian.h"
#include "../util/memfind.h"
#include "internal.h"

#define JW_MAX_DEPTH 64
#define JW_MAX_KEYS 32 /* members per object checked for repeats */

typedef struct jw {
    const char *p, *end;
    ex_json_strs *out; /* the strings found */
    int unsure;
} jw;

static void ws(jw *w)
{
    while (w->p < w->end && (*w->p == ' ' || *w->p == '\t' || *w->p == '\n' || *w->p == '\r')) w->p++;
}

#ifdef __SSE2__
/* How many of the sixteen bytes at p are plain, up to the first that is
 * not: a signed compare with 0x20 takes the bytes above 0x7f as well. */
static inline unsigned plain16(const char *p)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i quote = _mm_cmpeq_epi8(x, _mm_set1_epi8('"')), slash = _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'));
    __m128i m = _mm_or_si128(_mm_or_si128(quote, slash), _mm_cmplt_epi8(x, _mm_set1_epi8(0x20)));
    unsigned bits = (unsigned)_mm_movemask_epi8(m);
    return bits ? (unsigned)__builtin_ctz(bits) : 16;
}
#endif

/* The first byte at or after p that is not plain ('"', '\\', below 0x20
 * or above 0x7f), sixteen bytes at a time, then eight; or the place where
 * fewer than eight are left, for the caller to take one at a time. */
static inline const char *plain_run(const char *p, const char *end)
{
#ifdef __SSE2__
    for (; end - p >= 16; p += 16) {
        unsigned k = plain16(p);
        if (k < 16) return p + k;
    }
#endif
    for (; end - p >= 8; p += 8) {
        uint64_t x = util_load_le64(p);
        uint64_t m = util_bytes_below(x, 0x20) | util_bytes_eq(x, '"') | util_bytes_eq(x, '\\') |
                     (x & UTIL_BYTES_HIGH);
        if (m) return p + __builtin_ctzll(m) / 8;
    }
    return p;
}

/* A string at w->p ('"'): its raw span [*s, *e) between the quotes and
 * whether it holds escapes.  0, -1 invalid, -2 unsure. */
static int str(jw *w, const char **s, const char **e, int *esc)
{
    const char *p = w->p + 1;
    *s = p;
    *esc = 0;
    for (; p < w->end; p++) {
        p = plain_run(p, w->end);
        if (p >= w->end) break;
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            *e = p;
            w->p = p + 1;
            return 0;
        }
        if (c < 0x20) return -1;
        if (c >= 0x80) return -2;
        if (c == '\\') {
            if (++p >= w->end) return -1;
            switch (*p) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': *esc = 1; break;
            case 'u': return -2;
            default: return -1;
            }
        }
    }
    return -1;
}

/* A number: JSON's grammar; anything jansson could refuse for its size
 * (exponents, fractions with many digits, long integers) is unsure. */
static int num(jw *w)
{
    const char *p = w->p, *d;
    if (p < w->end && *p == '-') p++;
    d = p;
    if (p < w->end && *p == '0') p++;
    else if (p < w->end && *p >= '1' && *p <= '9')
        while (p < w->end && *p >= '0' && *p <= '9') p++;
    else return -1;
    int digits = (int)(p - d);
    if (p < w->end && *p == '.') {
        const char *f = ++p;
        while (p < w->end && *p >= '0' && *p <= '9') p++;
        if (p == f) return -1;
        digits += (int)(p - f);
    }
    if (p < w->end && (*p == 'e' || *p == 'E')) return -2;
    if (digits > 15) return -2;
    w->p = p;
    return 0;
}

static int lit(jw *w, const char *word, size_t n)
{
    if ((size_t)(w->end - w->p) < n || memcmp(w->p, word, n) != 0) return -1;
    w->p += n;
    return 0;
}

static int push(jw *w, const char *ks, const char *ke, int kesc, const char *s, const char *e, int esc, int depth)
{
    ex_json_strs *o = w->out;
    if (o->n == o->cap) { /* out of the local array, or of the last allocation */
        size_t cap = o->cap * 2;
        int local = o->v == o->local;
        ex_json_str *v = local ? malloc(cap * sizeof *v) : realloc(o->v, cap * sizeof *v);
        if (!v) return -3;
        if (local) memcpy(v, o->local, sizeof o->local);
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = (ex_json_str){ks, (size_t)(ke - ks), s, (size_t)(e - s), kesc, esc, depth};
    return 0;
}

static int value(jw *w, const char *ks, const char *ke, int kesc, int depth);

static int object(jw *w, int depth)
{
    const char *keys[JW_MAX_KEYS];
    size_t klen[JW_MAX_KEYS], nk = 0;
    w->p++;
    ws(w);
    if (w->p < w->end && *w->p == '}') {
        w->p++;
        return 0;
    }
    for (;;) {
        const char *s, *e;
        int esc, r;
        if (w->p >= w->end || *w->p != '"') return -1;
        if ((r = str(w, &s, &e, &esc)) != 0) return r;
        if (esc || nk == JW_MAX_KEYS) return -2; /* repeats could hide behind escapes */
        for (size_t i = 0; i < nk; i++)
            if (klen[i] == (size_t)(e - s) && memcmp(keys[i], s, klen[i]) == 0) return -2;
        keys[nk] = s;
        klen[nk++] = (size_t)(e - s);
        ws(w);
        if (w->p >= w->end || *w->p != ':') return -1;
        w->p++;
        ws(w);
        if ((r = value(w, s, e, 0, depth + 1)) != 0) return r;
        ws(w);
        if (w->p < w->end && *w->p == ',') {
            w->p++;
            ws(w);
            continue;
        }
        if (w->p < w->end && *w->p == '}') {
            w->p++;
            return 0;
        }
        return -1;
    }
}

static int array(jw *w, const char *ks, const char *ke, int kesc, int depth)
{
    w->p++;
    ws(w);
    if (w->p < w->end && *w->p == ']') {
        w->p++;
        return 0;
    }
    for (;;) {
        int r = value(w, ks, ke, kesc, depth + 1);
        if (r != 0) return r;
        ws(w);
        if (w->p < w->end && *w->p == ',') {
            w->p++;
            ws(w);
            continue;
        }
        if (w->p < w->end && *w->p == ']') {
            w->p++;
            return 0;
        }
        return -1;
    }
}

static int value(jw *w, const char *ks, const char *ke, int kesc, int depth)
{
    if (depth > JW_MAX_DEPTH) return -2;
    if (w->p >= w->end) return -1;
    switch (*w->p) {
    case '{': return object(w, depth);
    case '[': return array(w, ks, ke, kesc, depth);
    case '"': {
        const char *s, *e;
        int esc, r = str(w, &s, &e, &esc);
        return r ? r : push(w, ks, ke, kesc, s, e, esc, depth);
    }
    case 't': return lit(w, "true", 4);
    case 'f': return lit(w, "false", 5);
    case 'n': return lit(w, "null", 4);
    default: return num(w);
    }
}

int ex_json_strings(const char *json, size_t len, ex_json_strs *out)
{
    ex_json_strs_init(out);
    jw w = {json, json + len, out, 0};
    ws(&w);
    int r = value(&w, NULL, NULL, 0, 0);
    if (r == 0) {
        ws(&w);
        if (w.p != w.end) r = -1;
    }
    if (r != 0) {
        /* invalid documents go to jansson too: its verdict decides */
        ex_json_strs_free(out);
        return r == -3 ? EX_JSON_NOMEM : EX_JSON_UNSURE;
    }
    return 0;
}

void ex_json_unescape(const char *s, size_t n, buf *out)
{
    buf_reset(out);
    if (buf_reserve(out, n) != 0) return;
    char *d = out->p;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < n) {
            switch (s[++i]) {
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            default: c = s[i]; break; /* " \ / */
            }
        }
        *d++ = c;
    }
    out->len = (size_t)(d - out->p);
    out->p[out->len] = '\0';
}

int ex_json_read(const char *json, size_t *len, ex_json_strs *s, json_t **root)
{
    *len = strlen(json);
    *root = NULL;
    int r = ex_json_strings(json, *len, s);
    if (r == EX_JSON_NOMEM) return CLARITY_ENOMEM;
    if (r == 0) return 0;
    json_error_t jerr;
    *root = json_loadb(json, *len, JSON_DECODE_ANY, &jerr);
    return 1;
}

int extract_json_member(const char *json, const char *const *keys, size_t n_keys, buf *out)
{
    buf_reset(out);
    if (!json) return 0;
    size_t len;
    ex_json_strs strs;
    json_t *root;
    int r = ex_json_read(json, &len, &strs, &root);
    if (r < 0) return r;
    if (r == 0) { /* the common case: no tree built */
        const ex_json_str *v = strs.v;
        size_t n = strs.n;
        const ex_json_str *best = NULL;
        size_t best_k = n_keys;
        for (size_t i = 0; i < n; i++) {
            if (v[i].depth != 1 || !v[i].key) continue;
            for (size_t k = 0; k < best_k; k++)
                if (v[i].key_len == strlen(keys[k]) && memcmp(v[i].key, keys[k], v[i].key_len) == 0) {
                    best = &v[i];
                    best_k = k;
                }
        }
        if (best && best->esc) ex_json_unescape(best->s, best->len, out);
        else if (best) buf_append(out, best->s, best->len);
        ex_json_strs_free(&strs);
        return buf_failed(out) ? CLARITY_ENOMEM : best != NULL;
    }
    int found = 0;
    for (size_t k = 0; k < n_keys && !found; k++) {
        json_t *m = json_object_get(root, keys[k]);
        if ((found = json_is_string(m))) buf_append(out, json_string_value(m), json_string_length(m));
    }
    json_decref(root);
    return buf_failed(out) ? CLARITY_ENOMEM : found;
}
