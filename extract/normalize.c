/* normalize.c: path normalization, file-id classification and the string
 * set used for de-duplication and keyword counting. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../include/clarity.h"
#include "classify.h"
#include "internal.h"
#include "../util/endian.h"
#include "../util/memfind.h"

int ex_cpu_avx2(void)
{
#if EX_AVX2
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
           __builtin_cpu_supports("popcnt");
#else
    return 0;
#endif
}

/* ---------------------------------------------------------------- ex_sset */

#define W (EX_WORD | EX_PATH)
const unsigned char ex_ctype[256] = {
    ['.'] = EX_PATH, ['/'] = EX_PATH, ['~'] = EX_PATH, ['@'] = EX_PATH, ['+'] = EX_PATH,
    ['-'] = EX_PATH, ['_'] = W,
    ['0'] = W, ['1'] = W, ['2'] = W, ['3'] = W, ['4'] = W, ['5'] = W, ['6'] = W, ['7'] = W,
    ['8'] = W, ['9'] = W,
    ['a'] = W, ['b'] = W, ['c'] = W, ['d'] = W, ['e'] = W, ['f'] = W, ['g'] = W, ['h'] = W,
    ['i'] = W, ['j'] = W, ['k'] = W, ['l'] = W, ['m'] = W, ['n'] = W, ['o'] = W, ['p'] = W,
    ['q'] = W, ['r'] = W, ['s'] = W, ['t'] = W, ['u'] = W, ['v'] = W, ['w'] = W, ['x'] = W,
    ['y'] = W, ['z'] = W,
    ['A'] = W, ['B'] = W, ['C'] = W, ['D'] = W, ['E'] = W, ['F'] = W, ['G'] = W, ['H'] = W,
    ['I'] = W, ['J'] = W, ['K'] = W, ['L'] = W, ['M'] = W, ['N'] = W, ['O'] = W, ['P'] = W,
    ['Q'] = W, ['R'] = W, ['S'] = W, ['T'] = W, ['U'] = W, ['V'] = W, ['W'] = W, ['X'] = W,
    ['Y'] = W, ['Z'] = W,
};
#undef W

void ex_sset_init(ex_sset *s, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->seed = seed;
    buf_init(&s->arena);
}

void ex_sset_free(ex_sset *s)
{
    free(s->slots);
    free(s->ents);
    buf_free(&s->arena);
    memset(s, 0, sizeof *s);
}

void ex_sset_clear(ex_sset *s)
{
    /* Nothing is ever deleted, so each key sits at or after its home slot:
     * looking forward for its index finds it even once earlier keys'
     * slots are cleared.  O(keys), not O(slots). */
    for (size_t i = 0; i < s->n; i++) {
        size_t j = s->ents[i].hash & (s->nslots - 1);
        while (s->slots[j] != (uint32_t)(i + 1)) j = (j + 1) & (s->nslots - 1);
        s->slots[j] = 0;
    }
    s->n = 0;
    buf_reset(&s->arena);
}

static int ex_sset_grow(ex_sset *s)
{
    size_t ns = s->nslots ? s->nslots * 2 : 64;
    uint32_t *slots = calloc(ns, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < s->n; i++) {
        size_t j = s->ents[i].hash & (ns - 1);
        while (slots[j]) j = (j + 1) & (ns - 1);
        slots[j] = (uint32_t)(i + 1);
    }
    free(s->slots);
    s->slots = slots;
    s->nslots = ns;
    return 0;
}

int ex_sset_add(ex_sset *s, const char *k, size_t n)
{
    return ex_sset_add_h(s, k, n, ex_sset_hash_bytes(s->seed, k, n));
}

int ex_sset_add_h(ex_sset *s, const char *k, size_t n, uint32_t h)
{
    size_t at;
    return ex_sset_add_at(s, k, n, h, &at);
}

int ex_sset_add_at(ex_sset *s, const char *k, size_t n, uint32_t h, size_t *at)
{
    if (n > UINT32_MAX) return -2;
    if ((s->n + 1) * 2 > s->nslots && ex_sset_grow(s) != 0) return -1;
    size_t j = h & (s->nslots - 1);
    while (s->slots[j]) {
        ex_sset_ent *e = &s->ents[s->slots[j] - 1];
        if (e->hash == h && e->len == n && memcmp(s->arena.p + e->off, k, n) == 0) {
            if (e->count < UINT32_MAX) e->count++;
            *at = s->slots[j] - 1;
            return 0;
        }
        j = (j + 1) & (s->nslots - 1);
    }
    if (s->n >= EX_MAX_DISTINCT) return -2;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 32;
        ex_sset_ent *ne = realloc(s->ents, nc * sizeof *ne);
        if (!ne) return -1;
        s->ents = ne;
        s->cap = nc;
    }
    size_t off = s->arena.len;
    if (buf_reserve(&s->arena, n + 1) != 0) return -1;
    memcpy(s->arena.p + off, k, n);
    s->arena.p[off + n] = '\0';
    s->arena.len += n + 1;
    s->arena.p[s->arena.len] = '\0'; /* the buf invariant (reserved above) */
    s->ents[s->n] = (ex_sset_ent){off, (uint32_t)n, h, 1, (uint32_t)s->n};
    s->slots[j] = (uint32_t)(s->n + 1);
    *at = s->n++;
    return 1;
}

/* ---------------------------------------------------------------- ex_memo */

/* The bytes of a lane in memory order that hold the first m (0..8) bytes. */
#define KEEP(m) ((m) >= 8 ? ~0ull : UTIL_BIG_ENDIAN ? ~0ull << 1 << (63 - 8 * ((m) & 7)) : ~0ull >> 1 >> (63 - 8 * ((m) & 7)))
#define KEEP_HI(n) KEEP((n) > 8 ? (n) - 8 : 0)
const uint64_t ex_memo_keep[2][EX_MEMO_MAX + 1] = {
    {KEEP(0), KEEP(1), KEEP(2), KEEP(3), KEEP(4), KEEP(5), KEEP(6), KEEP(7), KEEP(8), KEEP(9), KEEP(10), KEEP(11),
     KEEP(12), KEEP(13), KEEP(14), KEEP(15), KEEP(16)},
    {KEEP_HI(0), KEEP_HI(1), KEEP_HI(2), KEEP_HI(3), KEEP_HI(4), KEEP_HI(5), KEEP_HI(6), KEEP_HI(7), KEEP_HI(8),
     KEEP_HI(9), KEEP_HI(10), KEEP_HI(11), KEEP_HI(12), KEEP_HI(13), KEEP_HI(14), KEEP_HI(15), KEEP_HI(16)}};

void ex_memo_init(ex_memo *m, size_t len, int with_val, ex_memo_store *st)
{
    m->key = NULL;
    m->val = m->cnt = NULL;
    m->shift = 64;
    if (len < EX_MEMO_MIN_TEXT) return;
    /* about one slot per 16 bytes of text (a word in two or three, so that
     * distinct words seldom share a slot), 2,048 (32 KiB of keys) to
     * EX_MEMO_SLOTS_MAX slots: a prompt of a few KiB names a hundred
     * distinct words or more, and at one slot per 16 bytes (256 for 4 KiB)
     * they took each other's slots; a bigger table costs nothing to reset
     * (only the used slots are cleared) */
    unsigned bits = 11;
    while (((size_t)1 << bits) < EX_MEMO_SLOTS_MAX && ((size_t)16 << bits) < len) bits++;
    size_t slots = (size_t)1 << bits;
    if (st->cap < slots) { /* grown whole: a new table is all zero */
        ex_memo_store_free(st);
        st->key = calloc(slots, sizeof *st->key);
        st->used = malloc(slots * sizeof *st->used);
        if (!st->key || !st->used) {
            ex_memo_store_free(st);
            return;
        }
        st->cap = slots;
    }
    for (size_t i = 0; i < st->nused; i++) st->key[st->used[i]][0] = st->key[st->used[i]][1] = 0;
    st->nused = 0;
    /* val is read only where a key was put; cnt is all zero */
    if (with_val && !st->val) {
        st->val = malloc(st->cap * sizeof *st->val);
        st->cnt = calloc(st->cap, sizeof *st->cnt);
        if (!st->val || !st->cnt) {
            free(st->val);
            free(st->cnt);
            st->val = st->cnt = NULL;
            return;
        }
    }
    m->key = st->key;
    m->val = with_val ? st->val : NULL;
    m->cnt = with_val ? st->cnt : NULL;
    m->shift = 64 - bits;
    m->st = st;
}

void ex_memo_flush(const ex_memo *m, ex_sset *counts)
{
    if (!m->key || !m->cnt) return;
    for (size_t i = 0; i < m->st->nused; i++) ex_memo_flush_slot(m, m->st->used[i], counts);
}

void ex_memo_store_free(ex_memo_store *st)
{
    free(st->key);
    free(st->val);
    free(st->cnt);
    free(st->used);
    memset(st, 0, sizeof *st);
}

/* ---------------------------------------------------------------- ex_wset */

void ex_wset_init(ex_wset *w, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->seed = seed;
}

void ex_wset_free(ex_wset *w)
{
    free(w->lanes);
    free(w->lens);
    memset(w, 0, sizeof *w);
}

void ex_wset_clear(ex_wset *w)
{
    if (w->n) memset(w->lanes, 0, w->nslots * sizeof *w->lanes); /* lens are read only under a lane */
    w->n = 0;
}

int ex_wset_grow(ex_wset *w)
{
    if (w->n >= EX_MAX_DISTINCT) return -2;
    size_t ns = w->nslots ? w->nslots * 2 : 256;
    uint64_t *lanes = calloc(ns, sizeof *lanes);
    uint8_t *lens = malloc(ns);
    if (!lanes || !lens) {
        free(lanes);
        free(lens);
        return -1;
    }
    ex_wset old = *w;
    w->lanes = lanes;
    w->lens = lens;
    w->nslots = ns;
    w->shift = 64u - (unsigned)__builtin_ctzll(ns);
    for (size_t i = 0; i < old.nslots; i++) {
        if (!old.lanes[i]) continue;
        size_t j = ex_wset_slot(w, old.lanes[i]);
        while (lanes[j]) j = (j + 1) & (ns - 1);
        lanes[j] = old.lanes[i];
        lens[j] = old.lens[i];
    }
    free(old.lanes);
    free(old.lens);
    return 0;
}

/* --------------------------------------------------------------- paths */

void ex_append_lower(buf *b, const char *s, size_t n)
{
    if (buf_reserve(b, n) != 0) return;
    char *d = b->p + b->len;
    if (n >= 8) { /* eight bytes at a time; the last lane overlaps (folding twice is folding once) */
        for (size_t i = 0; i + 8 <= n; i += 8) {
            uint64_t x = name_fold_upper8(name_load8(s + i));
            x = util_le64(x);
            memcpy(d + i, &x, 8);
        }
        uint64_t x = util_le64(name_fold_upper8(name_load8(s + n - 8)));
        memcpy(d + n - 8, &x, 8);
    } else {
        for (size_t i = 0; i < n; i++) {
            char c = s[i];
            d[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
        }
    }
    b->len += n;
    b->p[b->len] = '\0';
}

/* Whether a component may start at p[i] of a normal path: one is there
 * (not empty) and it is neither "." nor "..". */
static int component_ok(const char *p, size_t n, size_t i)
{
    if (i == n || p[i] == '/') return 0;
    return !(p[i] == '.' && (i + 1 == n || p[i + 1] == '/' || (p[i + 1] == '.' && (i + 2 == n || p[i + 2] == '/'))));
}

/* Whether the path p[0, n) is its own normal form: no empty, "." or ".."
 * component and no '/' at the end.  Most paths a text or a tool call
 * names are, and are then copied whole rather than a component at a
 * time.  The '/' bytes are found eight at a time. */
static int is_normal_path(const char *p, size_t n)
{
    if (n == 0 || p[n - 1] == '/') return 0;
    if (p[0] != '/' && !component_ok(p, n, 0)) return 0;
    for (size_t k = 0; k < n; k += 8) {
        /* the tail zero-padded: a 0 is no '/' */
        uint64_t sl = util_bytes_eq_each(k + 8 <= n ? util_load_le64(p + k) : util_load_le_tail(p + k, n - k), '/');
        for (; sl; sl &= sl - 1)
            if (!component_ok(p, n, k + (size_t)__builtin_ctzll(sl) / 8 + 1)) return 0;
    }
    return 1;
}

/* The components of p[0, n) (absolute when abs) to out from start:
 * empty and "." ones dropped, ".." taking the one before it. */
static void norm_components(const char *p, size_t n, int abs, size_t start, buf *out)
{
    size_t base = start + (abs ? 1 : 0); /* where the first component goes */
    size_t ncomp = 0, ndotdot = 0;       /* components written, leading ".." among them */
    if (abs) buf_putc(out, '/');
    size_t i = 0;
    while (i < n) {
        while (i < n && p[i] == '/') i++;
        size_t a = i;
        while (i < n && p[i] != '/') i++;
        size_t cl = i - a;
        if (cl == 0 || (cl == 1 && p[a] == '.')) continue;
        if (cl == 2 && p[a] == '.' && p[a + 1] == '.') {
            if (ncomp > ndotdot) { /* drop the last real component */
                size_t e = out->len;
                while (e > base && out->p[e - 1] != '/') e--;
                out->len = e > base ? e - 1 : base;
                out->p[out->len] = '\0';
                ncomp--;
                continue;
            }
            if (abs) continue; /* never above the root */
            ndotdot++;
        }
        if (out->len > base) buf_putc(out, '/');
        buf_append(out, p + a, cl);
        ncomp++;
    }
}

void ex_norm_path(const char *p, size_t n, const char *ws, size_t wslen, buf *out)
{
    const char *nul = memchr(p, '\0', n);
    if (nul) n = (size_t)(nul - p);
    size_t start = out->len;
    int abs = n > 0 && p[0] == '/';
    if (is_normal_path(p, n)) buf_append(out, p, n);
    else norm_components(p, n, abs, start, out);
    if (buf_failed(out)) return;
    if (out->len == start) buf_putc(out, '.');
    if (!abs || !ws || wslen == 0) return;
    /* make it relative when under the workspace (component-wise) */
    char *np = out->p + start;
    size_t nl = out->len - start;
    size_t skip = 0;
    if (wslen == 1) { /* workspace is "/" */
        skip = 1;
    } else if (nl >= wslen && memcmp(np, ws, wslen) == 0) {
        if (nl == wslen) skip = wslen;
        else if (np[wslen] == '/') skip = wslen + 1;
    }
    if (!skip) return;
    memmove(np, np + skip, nl - skip);
    out->len -= skip;
    out->p[out->len] = '\0';
    if (out->len == start) buf_putc(out, '.');
}

char *ex_norm_workspace(const char *ws, int *oom)
{
    *oom = 0;
    if (!ws || ws[0] != '/') return NULL;
    buf b;
    buf_init(&b);
    ex_norm_path(ws, strlen(ws), NULL, 0, &b);
    char *r = buf_steal(&b, NULL);
    if (!r) *oom = 1;
    return r;
}

char *extract_normalize_path(const char *path, size_t len, const char *workspace)
{
    if (!path) return NULL;
    int oom;
    char *ws = ex_norm_workspace(workspace, &oom);
    if (oom) return NULL;
    buf b;
    buf_init(&b);
    ex_norm_path(path, len, ws, ws ? strlen(ws) : 0, &b);
    free(ws);
    return buf_steal(&b, NULL);
}

static const char *const CODE_EXT[] = {
    "c",    "h",    "cc",   "cpp",  "hpp",   "cxx",   "py",     "pyi",   "ts",    "tsx",
    "js",   "jsx",  "mjs",  "cjs",  "go",    "rs",    "java",   "kt",    "kts",   "rb",
    "php",  "cs",   "swift", "m",   "mm",    "scala", "sh",     "bash",  "zsh",   "lua",
    "sql",  "json", "yaml", "yml",  "toml",  "css",   "scss",   "html",  "vue",   "svelte",
    "proto", "gradle", "cmake", "mk",
};

/* The extension of the last path component (after its last '.', with a
 * non-empty stem) when it is at most EXT_MAX bytes long, else NULL: no
 * longer one is known (CODE_EXT, "md").  The last EXT_MAX + 1 bytes in
 * one load: asked about every token holding a '.' of every turn
 * ("self.assertEqual" too). */
#define EXT_MAX 6
_Static_assert(EXT_MAX + 1 == 7, "file_ext looks at the last 7 bytes: an eight-byte load less its first");
static const char *file_ext(const char *p, size_t n, size_t *elen)
{
    /* the last '.' or '/' among the last EXT_MAX + 1 bytes, found in one
     * eight-byte load (its first byte left out when there are more) */
    uint64_t x = n >= 8 ? util_load_le64(p + n - 8) : util_load_le_tail(p, n);
    uint64_t hit = util_bytes_eq_each(x, '.') | util_bytes_eq_each(x, '/');
    if (n >= 8) hit &= ~(uint64_t)0xff;
    if (!hit) return NULL; /* none, or an extension longer than EXT_MAX */
    size_t k = (63 - (size_t)__builtin_clzll(hit)) / 8;
    size_t d = (n >= 8 ? n - 8 : 0) + k + 1; /* one past it */
    /* an empty stem is "/.x", ".x" or a '.' before */
    if (p[d - 1] != '.' || d == n || d < 2 || p[d - 2] == '/') return NULL;
    *elen = n - d;
    return p + d;
}

/* An extension of at most 6 bytes packed into an integer, lowercased
 * (memory order: its bytes hold no 0, so lengths cannot collide). */
static uint64_t pack_ext(const char *e, size_t n) { return name_fold_upper8(util_load_le_tail(e, n)); }

/* The code extensions by packed value, open-addressed: a probe is a
 * multiply and one or two compares, where a binary search over 44 took
 * six calls of a comparison function. */
#define CODE_EXT_SLOTS 128
static uint64_t code_ext_slot[CODE_EXT_SLOTS];
static pthread_once_t code_ext_once = PTHREAD_ONCE_INIT;

static size_t code_ext_home(uint64_t v) { return (size_t)((v * 0x9e3779b97f4a7c15ull) >> 57); }

static void code_ext_init(void)
{
    for (size_t k = 0; k < sizeof CODE_EXT / sizeof CODE_EXT[0]; k++) {
        uint64_t v = pack_ext(CODE_EXT[k], strlen(CODE_EXT[k]));
        size_t i = code_ext_home(v);
        while (code_ext_slot[i] && code_ext_slot[i] != v) i = (i + 1) % CODE_EXT_SLOTS;
        code_ext_slot[i] = v;
    }
}

static int code_ext_packed(const char *e, size_t el)
{
    if (el > EXT_MAX) return 0;
    pthread_once(&code_ext_once, code_ext_init);
    uint64_t v = pack_ext(e, el);
    for (size_t i = code_ext_home(v); code_ext_slot[i]; i = (i + 1) % CODE_EXT_SLOTS)
        if (code_ext_slot[i] == v) return 1;
    return 0;
}

static int is_md_ext(const char *e, size_t el) { return e && el == 2 && e[0] == 'm' && e[1] == 'd'; }

int ex_has_file_ext(const char *p, size_t n)
{
    size_t el = 0;
    const char *e = file_ext(p, n, &el);
    return e && (is_md_ext(e, el) || code_ext_packed(e, el));
}

int ex_has_md_ext(const char *p, size_t n)
{
    size_t el = 0;
    const char *e = file_ext(p, n, &el);
    return is_md_ext(e, el);
}

static int starts_with(const char *p, size_t n, const char *pre)
{
    size_t l = strlen(pre);
    return n >= l && memcmp(p, pre, l) == 0;
}

/* SOUL.md style: [A-Z][A-Z0-9_-]*\.md */
static int upper_md_name(const char *p, size_t n)
{
    if (n < 4 || !(p[0] >= 'A' && p[0] <= 'Z')) return 0;
    for (size_t i = 1; i < n - 3; i++) {
        char c = p[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return 0;
    }
    return 1;
}

int ex_file_id(const char *np, size_t n, buf *out)
{
    if (n == 0 || (n == 1 && (np[0] == '.' || np[0] == '/'))) return FILE_NONE;
    size_t el = 0;
    const char *ext = file_ext(np, n, &el);
    if (is_md_ext(ext, el)) {
        if (starts_with(np, n, "memory/") || starts_with(np, n, "docs/")) {
            buf_puts(out, "file:");
            ex_append_lower(out, np, n);
            return FILE_MEMORY;
        }
        /* a memory/ or docs/ folder deeper in an absolute or outside path */
        for (size_t i = n; i-- > 0;) {
            if (np[i] != '/') continue;
            if (starts_with(np + i, n - i, "/memory/") || starts_with(np + i, n - i, "/docs/")) {
                buf_puts(out, "file:");
                ex_append_lower(out, np + i + 1, n - i - 1);
                return FILE_MEMORY;
            }
        }
        size_t b = n;
        while (b > 0 && np[b - 1] != '/') b--;
        if (upper_md_name(np + b, n - b)) {
            buf_puts(out, "file:");
            ex_append_lower(out, np + b, n - b);
            return FILE_MEMORY;
        }
    }
    buf_puts(out, "file:");
    buf_append(out, np, n);
    return ext && code_ext_packed(ext, el) ? FILE_SOURCE : FILE_OTHER;
}
