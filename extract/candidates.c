/* candidates.c: reference candidates in assistant text and tool-call
 * arguments, and the lookup forms of a user-typed name.  One linear pass
 * over the tokens of the text; every id a token could stand for is
 * reported once. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../include/clarity.h"
#include "../tracker/tracker.h"
#include "../util/endian.h"
#include "../util/lit.h"
#include "../util/memfind.h"
#include "classify.h"
#include "internal.h"
#include "stopwords.h"
#include "tokprog.h"
#include "wordbatch.h"

#define JSON_MAX_PATH 4096

#define is_path_char(c) ex_is_path_char((unsigned char)(c))

/* prefix + lowercase(s), '-' -> '_' when snake. */
static int emit_lower(ex_emitter *e, const char *prefix, const char *s, size_t n, int snake, int cat)
{
    buf_puts(&e->id, prefix);
    size_t from = e->id.len;
    ex_append_lower(&e->id, s, n);
    if (snake && !buf_failed(&e->id))
        for (size_t i = from; i < e->id.len; i++)
            if (e->id.p[i] == '-') e->id.p[i] = '_';
    return ex_em_emit_scratch(e, cat, 0);
}

static int has_upper(const char *s, size_t n)
{
    int up = 0;
    for (size_t i = 0; i < n; i++) up |= s[i] >= 'A' && s[i] <= 'Z';
    return up;
}

/* Whether the n bytes of the lanes are all digits: eight at a time.  A
 * byte's value xor '0' is 0-9 for a digit; adding 0x80 - 10 to its low
 * seven bits sets the top bit for any other (no carry leaves the byte),
 * and a byte from 0x80 up has the top bit already.  Past n, lanes are
 * padded with '0'. */
static int lanes_all_digits(const ex_lanes *l, size_t n)
{
    for (size_t k = 0; k * 8 < n; k++) {
        uint64_t keep = n - k * 8 < 8 ? ex_lane_mask(n - k * 8) : ~(uint64_t)0;
        uint64_t y = ((l->v[k] & keep) | (UTIL_BYTES_ONE * '0' & ~keep)) ^ (UTIL_BYTES_ONE * '0');
        if ((((y & ~UTIL_BYTES_HIGH) + UTIL_BYTES_ONE * (0x80 - 10)) | y) & UTIL_BYTES_HIGH) return 0;
    }
    return 1;
}

/* Whether the word (lowercase lanes, name hash h) may be a keyword: long
 * enough, not all digits, not a stopword. */
static int may_be_keyword(const ex_emitter *e, const ex_lanes *low, size_t n, uint64_t h)
{
    if (n < (size_t)e->ex->min_len) return 0;
    return !lanes_all_digits(low, n) && !stopword_is_lanes(low->v, n, h);
}

/* Word forms: project (lowercase), tool, keyword, of the word whose
 * lowercase lanes and name hash h its scan has (it passed the name
 * filter).  Each form's id is tested against the filter of ids from h
 * alone (name_id_mix), so only the forms that may be tracked, usually one,
 * go on: to the caller's word callback when there is one, else built and
 * reported as ids.  The keyword form's own tests run after its filter. */
static int emit_word_lanes(ex_emitter *e, const ex_lanes *low, size_t n, uint64_t h)
{
    unsigned forms = 0;
    if (name_filter_test_idhash(e->nf, name_id_mix(h, NAME_FORM_OTHER))) forms |= EXTRACT_FORM_PROJECT;
    if (name_filter_test_idhash(e->nf, name_id_mix(h, NAME_FORM_TOOL))) forms |= EXTRACT_FORM_TOOL;
    if (name_filter_test_idhash(e->nf, name_id_mix(h, NAME_FORM_KEYWORD)) && may_be_keyword(e, low, n, h))
        forms |= EXTRACT_FORM_KEYWORD;
    if (!forms) return 0;
    if (e->word) {
        if (e->stop) return -1;
        if (e->word(e->ud, low->b, n, forms)) {
            e->stop = 1;
            return -1;
        }
        return 0;
    }
    static const int cat[] = {CAT_PROJECT, CAT_TOOL, CAT_KEYWORD}; /* by form bit */
    char id[EXTRACT_FORM_ID_MAX];
    for (unsigned k = 0; k < 3; k++)
        if ((forms >> k & 1) && ex_em_emit(e, id, extract_form_id(1u << k, low->b, n, id), cat[k], 0) < 0)
            return -1;
    return 0;
}

/* ---- path programs (tokprog.h) ---- */

static void pg_u32(buf *pg, uint32_t v) { buf_append(pg, (const char *)&v, 4); }
static void pg_u64(buf *pg, uint64_t v) { buf_append(pg, (const char *)&v, 8); }

/* A count written as 0 before what it counts was appended. */
static void pg_patch(buf *pg, size_t at, uint32_t v)
{
    if (!buf_failed(pg)) memcpy(pg->p + at, &v, 4);
}

/* An id of the program: its two hashes (ex_em_emit_hashed), its length,
 * then its bytes (those of id; an id holding a NUL, which a report would
 * drop, is left out). */
static void pg_id(const ex_emitter *e, buf *pg, const buf *id, uint32_t *count)
{
    if (buf_failed(id) || !id->len || memchr(id->p, '\0', id->len) || buf_reserve(pg, 16 + id->len) != 0) return;
    uint64_t idh = name_id_hash(id->p, id->len);
    uint32_t f[2] = {ex_sset_hash_bytes(e->seen.seed, id->p, id->len), (uint32_t)id->len};
    char *at = pg->p + pg->len;
    memcpy(at, &idh, 8);
    memcpy(at + 8, f, 8);
    memcpy(at + 16, id->p, id->len);
    pg->len += 16 + id->len;
    pg->p[pg->len] = '\0';
    (*count)++;
}

/* The program of the path p[0, n) into pg: its normalized form and that
 * form's name hash, which the filter is asked about first (the tails'
 * hashes, asked when it fails, are left to the run: most runs stop at the
 * first); then its file ids: the canonical id, the normalized path, the
 * lowercase form of a .md path and, for a path that stayed absolute, its
 * tails.  -1 without memory. */
static int pg_compile(ex_emitter *e, const char *p, size_t n, buf *pg)
{
    buf *np = &e->np, *id = &e->id; /* the emitter's: no allocation per path */
    buf_reset(pg);
    buf_reset(np);
    ex_norm_path(p, n, e->ws, e->wslen, np);
    if (buf_failed(np)) return -1;
    const char *s = np->p;
    size_t len = np->len;
    pg_u32(pg, (uint32_t)len);
    buf_append(pg, s, len);
    pg_u64(pg, name_hash(s, len));
    size_t at = pg->len;
    uint32_t count = 0;
    pg_u32(pg, FILE_NONE);
    pg_u32(pg, 0);
    buf_reset(id);
    int kind = ex_file_id(s, len, id);
    if (kind != FILE_NONE) {
        /* the canonical id is most often "file:" + the path itself */
        int same = id->len == 5 + len && memcmp(id->p + 5, s, len) == 0;
        pg_id(e, pg, id, &count);
        if (count == 1) pg_patch(pg, at, (uint32_t)kind); /* the first id is the canonical one */
        if (!same) {
            buf_reset(id);
            buf_puts(id, "file:");
            buf_append(id, s, len);
            pg_id(e, pg, id, &count);
        }
        /* one of the two above unless the path has an uppercase letter */
        if (ex_has_md_ext(s, len) && has_upper(s, len)) {
            buf_reset(id);
            buf_puts(id, "file:");
            ex_append_lower(id, s, len);
            pg_id(e, pg, id, &count);
        }
        if (len > 0 && s[0] == '/')
            for (size_t i = 1; i + 1 < len; i++)
                if (s[i] == '/') {
                    buf_reset(id);
                    buf_puts(id, "file:");
                    buf_append(id, s + i + 1, len - i - 1);
                    pg_id(e, pg, id, &count);
                }
    }
    int failed = buf_failed(id) || buf_failed(pg);
    buf_reset(id);
    pg_patch(pg, at + 4, count);
    return failed ? -1 : 0;
}

static uint32_t rd32(const unsigned char **p)
{
    uint32_t v;
    memcpy(&v, *p, 4);
    *p += 4;
    return v;
}

/* Whether the filter may hold the normalized path np[0, n) (name hash
 * h) or one of its tails: an absolute path may be tracked relative to an
 * unknown workspace, and a memory file's id is its name or its memory/ or
 * docs/ tail in any folder. */
static int path_may_match(const name_filter *nf, const char *np, size_t n, uint64_t h)
{
    if (name_filter_test_hash(nf, h)) return 1;
    for (size_t i = 0; i + 1 < n; i++)
        if (np[i] == '/' && name_filter_test(nf, np + i + 1, n - i - 1)) return 1;
    return 0;
}

/* Runs a path program against this call's filter: its ids, when the
 * filter may hold the path.  -1 when the scan must stop. */
static int pg_run(ex_emitter *e, const unsigned char *p)
{
    uint32_t len = rd32(&p);
    const char *np = (const char *)p;
    p += len;
    uint64_t h;
    memcpy(&h, p, 8);
    p += 8;
    if (!path_may_match(e->nf, np, len, h)) return 0;
    p += 4; /* the kind */
    uint32_t ids = rd32(&p);
    for (uint32_t j = 0; j < ids; j++) {
        uint64_t idh;
        memcpy(&idh, p, 8);
        p += 8;
        uint32_t sh = rd32(&p), l = rd32(&p);
        if (ex_em_emit_hashed(e, (const char *)p, l, CAT_FILE, idh, sh) < 0) return -1;
        p += l;
    }
    return 0;
}

/* The program of the path p[0, n) (hash h, ex_sset_hash_bytes): the one
 * kept from an earlier call when there is one, else built and kept.  NULL
 * without memory (e's error is set). */
static const unsigned char *path_program(ex_emitter *e, const char *p, size_t n, uint32_t h)
{
    int keep = e->ex->keep_programs;
    uint64_t ws = e->ws ? e->ws_norm_key : 0; /* the programs of this call's workspace */
    const unsigned char *prog = keep ? ex_tp_find(&e->tp, p, n, h, ws) : NULL;
    if (!prog) {
        if (pg_compile(e, p, n, &e->prog) < 0) {
            ex_em_error(e, CLARITY_ENOMEM);
            return NULL;
        }
        prog = (const unsigned char *)e->prog.p;
        if (keep) ex_tp_keep(&e->tp, p, n, h, ws, prog, e->prog.len);
    }
    return prog;
}

/* The file ids of the path p[0, n) (hash h).  -1 when the scan must stop. */
static int emit_path_forms(ex_emitter *e, const char *p, size_t n, uint32_t h)
{
    const unsigned char *prog = path_program(e, p, n, h);
    return prog ? pg_run(e, prog) : -1;
}

/* The canonical id of a program's path into *ref: 1, or 0 when there is
 * none. */
static int file_ref(const unsigned char *prog, ex_file_ref *ref)
{
    uint32_t len = rd32(&prog);
    prog += len + 8; /* the normalized path and its hash */
    ref->kind = (int)rd32(&prog);
    if (ref->kind == FILE_NONE || rd32(&prog) == 0) return 0;
    memcpy(&ref->id_hash, prog, 8);
    prog += 8;
    ref->set_hash = rd32(&prog);
    ref->n = rd32(&prog);
    ref->id = (const char *)prog;
    return 1;
}

int ex_path_file(ex_emitter *e, const char *p, size_t n, uint32_t h, ex_file_ref *ref)
{
    const unsigned char *prog = path_program(e, p, n, h);
    return prog ? file_ref(prog, ref) : -1;
}

/* The same for a word inside a token, whose lanes are loaded here; room:
 * the bytes readable from w (the first test reads eight). */
static int emit_word(ex_emitter *e, const char *w, size_t n, size_t room)
{
    if (n > EX_MAX_WORD) return 0;
    if (room >= 8 && !name_filter_word_may(e->nf, name_load8(w), n)) return 0;
    ex_lanes raw, low;
    ex_word_lanes(w, n, 0, n, &raw, &low);
    uint64_t h = ex_lanes_mix(NAME_HASH_SEED, &low, n);
    if (e->nf && !name_filter_test_hash(e->nf, h)) return 0;
    return emit_word_lanes(e, &low, n, h);
}

/* Hyphen runs ("focus-engine" -> focus_engine, tool:focus-engine). */
static int emit_run(ex_emitter *e, const char *s, size_t n)
{
    if (n > EX_MAX_ID) return 0;
    if (e->nf && !name_filter_test(e->nf, s, n)) return 0;
    if (emit_lower(e, "", s, n, 1, CAT_PROJECT) < 0 || emit_lower(e, "tool:", s, n, 0, CAT_TOOL) < 0)
        return -1;
    return 0;
}

/* The token t[0, n) (hash h, ex_sset_hash_bytes, but for a URL); room:
 * the bytes readable from t (n or more). */
static int process_token(ex_emitter *e, const char *t, size_t n, size_t room, int url, uint32_t h)
{
    size_t whole = n;
    while (n > 0 && t[n - 1] == '.') n--;
    if (n == 0) return 0;
    /* whether it holds a '.' and a '/': eight bytes at a time (tokens of
     * code and logs run long) */
    uint64_t dots = 0, slashes = 0;
    for (size_t k = 0; k < n; k += 8) { /* the tail zero-padded: a 0 is neither */
        uint64_t x = k + 8 <= n ? util_load_le64(t + k) : util_load_le_tail(t + k, n - k);
        dots |= util_bytes_eq(x, '.');
        slashes |= util_bytes_eq(x, '/');
    }
    int dot = dots != 0, slash = slashes != 0;
    /* a tool argument under a path key had its forms emitted whole */
    int path_emitted = t == e->path_done && n == e->path_done_n;
    if (!url && !path_emitted && n <= EX_MAX_PATH && (slash || (dot && ex_has_file_ext(t, n))) &&
        emit_path_forms(e, t, n, n == whole ? h : ex_sset_hash_bytes(e->tokens.seed, t, n)) < 0)
        return -1;
    size_t run_start = 0, run_words = 0, a, i;
    ex_word_runs words;
    ex_word_runs_init(&words, t, n, room);
    while (ex_word_runs_next(&words, &a, &i)) {
        if (emit_word(e, t + a, i - a, room - a) < 0) return -1;
        if (run_words == 0 || a == 0 || t[a - 1] != '-' || (a >= 2 && !ex_is_word((unsigned char)t[a - 2])))
            run_start = a, run_words = 0;
        run_words++;
        int continues = i + 1 < n && t[i] == '-' && ex_is_word((unsigned char)t[i + 1]);
        if (!continues && run_words >= 2 && emit_run(e, t + run_start, i - run_start) < 0) return -1;
    }
    return 0;
}

/* The name hash of the word t[a, b) (b - a <= EX_MAX_WORD): name_hash()
 * of the same bytes, from its lanes (internal.h), which *low keeps. */
static inline __attribute__((always_inline)) uint64_t word_hash(const char *t, size_t len, size_t a, size_t b,
                                                                 ex_lanes *low)
{
    if (b - a <= 8 && a + 8 <= len) { /* most words: one lane */
        uint64_t x;
        memcpy(&x, t + a, 8);
        low->v[0] = name_fold_upper8(x & ex_lane_mask(b - a));
        return name_hash_end(name_hash_step(NAME_HASH_SEED, util_le64(low->v[0])));
    }
    ex_lanes raw;
    ex_word_lanes(t, len, a, b - a, &raw, low);
    return ex_lanes_mix(NAME_HASH_SEED, low, b - a);
}

/* A word t[wstart, end) may name a tracked item: the word itself or, when a
 * '-' joins it to the words before it ("focus-engine"), the run up to
 * here.  Runs are rare in prose, so the run start is found by walking back
 * only when one exists (it stops at the token's start: '-' and word bytes
 * are path bytes). */
static int word_may_match(const name_filter *nf, const char *t, size_t len, size_t wstart, size_t end)
{
    ex_lanes low;
    int hit = end - wstart <= EX_MAX_WORD && name_filter_test_hash(nf, word_hash(t, len, wstart, end, &low));
    if (wstart >= 2 && t[wstart - 1] == '-' && ex_is_word((unsigned char)t[wstart - 2])) {
        size_t j = wstart;
        while (j >= 2 && t[j - 1] == '-' && ex_is_word((unsigned char)t[j - 2])) {
            j--;
            while (j > 0 && ex_is_word((unsigned char)t[j - 1])) j--;
        }
        hit |= name_filter_test(nf, t + j, end - j);
    }
    return hit;
}

/* Whether the '.' at t[p] is followed, inside its token, by a byte other
 * than '.'; *q is where the look stopped. */
static int dot_continues(const char *t, size_t len, size_t p, size_t *q)
{
    size_t i = p + 1;
    while (i < len && t[i] == '.') i++;
    *q = i;
    return i < len && is_path_char((unsigned char)t[i]);
}

/* The token t[a, i) was found: expand it into candidate ids.  Returns -1
 * when the scan must stop. */
static int expand_token(ex_emitter *e, const char *t, size_t len, size_t a, size_t i)
{
    int url = a > 0 && t[a - 1] == ':' && i - a >= 2 && t[a] == '/' && t[a + 1] == '/';
    uint32_t h = 0; /* a URL's is not needed: it has no path forms */
    /* A token's forms depend only on its bytes: expand each distinct token
     * once per call (agents repeat the names they work on). */
    if (!url) {
        h = ex_sset_hash_bytes(e->tokens.seed, t + a, i - a);
        /* a path's program is looked up after the deduplication: its index
         * entry is mostly out of the caches by the next turn */
        ex_tp_prefetch(&e->tp, h);
        int r = ex_sset_add_h(&e->tokens, t + a, i - a, h);
        if (r == 0) return 0;
        if (r == -1) {
            ex_em_error(e, CLARITY_ENOMEM);
            return -1;
        }
    }
    return process_token(e, t + a, i - a, len - a, url, h) < 0 ? -1 : 0;
}

/* single_word's word that passed the name filter: deduplicated by its
 * lowercase form, then its word forms.  Out of line: most words stop at
 * the filter. */
static int single_word_hit(ex_emitter *e, const ex_lanes *low, size_t n, uint64_t h) __attribute__((noinline));
static int single_word_hit(ex_emitter *e, const ex_lanes *low, size_t n, uint64_t h)
{
    int r = n <= 8 ? ex_wset_add(&e->words, low->v[0], n)
                   : ex_sset_add_h(&e->tokens, low->b, n, ex_sset_hash_lanes(e->tokens.seed, low, n));
    if (r == -1) {
        ex_em_error(e, CLARITY_ENOMEM);
        return -1;
    }
    if (r == 0) return 1;
    /* a lone word is a token of one word: process_token would only emit
     * its word forms */
    return emit_word_lanes(e, low, n, h) < 0 ? -1 : 1;
}

/* The word t[p, end) is a whole token, but for trailing dots ("done."),
 * the common case in prose: its forms depend only on its lowercase form,
 * which is what it is deduplicated by.  Returns 1 when it was dealt with
 * (*done advanced), 0 when the token is more than a word, -1 to stop.
 * Inlined in the scan: it runs for each word the memo has not decided. */
static inline __attribute__((always_inline)) int single_word(ex_emitter *e, const char *t, size_t len, size_t p,
                                                             size_t end, size_t *done)
{
    if (p > 0 && is_path_char((unsigned char)t[p - 1])) return 0;
    size_t q = end;
    while (q < len && t[q] == '.') q++;
    if (q < len && is_path_char((unsigned char)t[q])) return 0;
    *done = q;
    size_t n = end - p;
    if (n > EX_MAX_WORD) return 1; /* no form of it is a name */
    ex_lanes low;
    uint64_t h = word_hash(t, len, p, end, &low);
    if (!name_filter_test_hash(e->nf, h)) return 1;
    return single_word_hit(e, &low, n, h);
}

/* Which of the memo and the first word test a filtered scan runs first
 * on a block: the test while it samples the text's first bytes, then the
 * test again when it failed at least 3 words in 4 there, else the memo. */
enum { EX_SAMPLING, EX_MISSES_FIRST, EX_MEMO_FIRST };
#define EX_ORDER_SAMPLE 512

/* With a filter of the tracked names, most tokens name nothing: the text is
 * classified 64 bytes at a time and only what could matter is looked at.
 * A token is expanded when one of its words, or one of its hyphen runs,
 * passes the filter, or when it holds a '/' or a '.' followed by more
 * token (a path; its forms are checked after normalization).  Triggers are
 * taken in text order, so tokens are expanded in the order the unfiltered
 * scan expands them. */
/* Where the first own block (extract_strip_own) starts among the '['
 * bytes `open` of the block at base of t[0, len), or SIZE_MAX. */
static size_t own_block_at(const char *t, size_t len, size_t base, uint64_t open)
{
    for (; open; open &= open - 1) {
        size_t p = base + (size_t)__builtin_ctzll(open);
        if (len - p >= EXTRACT_OWN_OPEN_LEN && memcmp(t + p, EXTRACT_OWN_OPEN, EXTRACT_OWN_OPEN_LEN) == 0) return p;
    }
    return SIZE_MAX;
}

/* A block's first word test (wordbatch.h), one word at a time or in batches. */
typedef uint64_t ex_misses_fn(const name_filter *nf, const char *t, uint64_t cand, uint64_t word,
                              uint64_t next_word);

/* The scan, with the classifier and the first word test as constant
 * arguments: each caller below is compiled for its instruction set with
 * both inlined.  With `own` it looks for clarity's own blocks as it goes
 * and stops before the first: it returns where that starts, or len.
 * Nothing it did before depends on the block: '[' ends every token. */
static inline __attribute__((always_inline)) size_t scan_filtered_with(ex_emitter *e, const char *t, size_t len,
                                                                       ex_memo *memo, int own,
                                                                       ex_classify_fn *classify,
                                                                       ex_misses_fn *word_misses,
                                                                       ex_memo_hits_fn *memo_hits)
{
    size_t stop = len; /* where the blocks end: the first own block's start, when found */
    size_t done = 0; /* bytes before this are decided */
    /* without a memo (a short text) the first test is all there is */
    int order = memo->key ? EX_SAMPLING : EX_MISSES_FIRST;
    unsigned seen = 0, missed = 0; /* words the first test looked at, and failed, while sampling */
    uint64_t carry = 0, carry_p = 0; /* bit 0: the byte before the block is a word / path byte */
    /* each block classified one ahead (ex_classify_at) */
    ex_cls c, nx;
    uint64_t prev_path = 0; /* the block before's path bits */
    ex_classify_at(classify, t, len, 0, &c);
    for (size_t base = 0; base < stop && !e->stop; base += 64, prev_path = c.path, c = nx) {
        ex_classify_at(classify, t, len, base + 64, &nx);
        uint64_t starts = c.word & ~((c.word << 1) | carry);
        uint64_t after_path = (c.path << 1) | carry_p; /* bit i: byte i - 1 is a path byte */
        /* bit i: a word starting at byte i may be looked up in the memo (no
         * path byte before it, and 16 bytes of text from it) */
        uint64_t memo_ok = ex_memo_room(memo, base, len) & ~after_path;
        carry = c.word >> 63;
        carry_p = c.path >> 63;
        uint64_t trig = starts | c.slash | c.dot;
        if (done > base) trig &= done - base >= 64 ? 0 : ~(uint64_t)0 << (done - base);
        if (own && __builtin_expect(c.open != 0, 0)) {
            size_t p = own_block_at(t, len, base, c.open);
            if (p != SIZE_MAX) {
                trig &= ((uint64_t)1 << (p - base)) - 1; /* the bytes before the block */
                stop = p;
            }
        }
        /* Two cheap tests take most words out before the loop below: the
         * memo's (a repeat decided before) and the first word test
         * (name_filter_word_may: no name can equal it).  A word either
         * takes out needs nothing more: a word with no path byte before
         * it starts after every token expanded so far, so `done` needs no
         * update, and when path bytes follow, a '/', '.' or later word of
         * its token triggers the token.  Both cost about 25 instructions
         * a word.  The memo goes first where the test passes many words
         * (it holds their decisions: a text long enough for a memo
         * repeats its words), the test where it fails nearly all of them
         * (prose naming little), judged on the text's first blocks. */
        uint64_t misses = 0;
        if (order != EX_MEMO_FIRST) {
            uint64_t wm = starts & ~after_path & ex_room(base, len, 8);
            misses = word_misses(e->nf, t + base, wm, c.word, nx.word);
            trig &= ~misses;
            if (order == EX_SAMPLING) {
                seen += (unsigned)__builtin_popcountll(wm);
                missed += (unsigned)__builtin_popcountll(misses);
                if (base + 64 >= EX_ORDER_SAMPLE) order = missed * 4 >= seen * 3 ? EX_MISSES_FIRST : EX_MEMO_FIRST;
            }
        }
        trig &= ~memo_hits(memo, t + base, starts & memo_ok & ~misses, c.word, nx.word, 0);
        while (trig) {
            unsigned bit = (unsigned)__builtin_ctzll(trig);
            trig &= trig - 1;
            size_t p = base + bit;
            if (p < done) continue;
            int maybe;
            if (starts >> bit & 1) {
                size_t end = ex_word_end(t, len, p, bit, &c, &nx);
                /* A word that no path byte precedes, the common case, was
                 * decided by single_word the first time, the same way for
                 * the same bytes: the memo skips its repeats.  When path
                 * bytes follow, the rest of its token is still found: by a
                 * '/' or '.' trigger, or, for a hyphen run, from the run's
                 * last word, which a path byte precedes. */
                size_t slot = SIZE_MAX;
                uint64_t key[2] = {0, 0};
                if ((memo_ok >> bit & 1) && end - p <= EX_MEMO_MAX) {
                    slot = ex_memo_slot(memo, t, p, end - p, key);
                    if (ex_memo_has(memo, slot, key)) {
                        done = end;
                        continue;
                    }
                }
                /* A lone word (no path byte before it) no name can equal
                 * needs nothing either: the first test is cheaper than
                 * single_word's hash (texts too short for a memo are
                 * mostly such words).  If path bytes follow, a '/', '.' or
                 * later word of its token triggers the token. */
                if (!(after_path >> bit & 1) && p + 8 <= len &&
                    !name_filter_word_may(e->nf, name_load8(t + p), end - p)) {
                    if (slot != SIZE_MAX) ex_memo_put(memo, slot, key);
                    done = end;
                    continue;
                }
                int r = single_word(e, t, len, p, end, &done);
                if (slot != SIZE_MAX && r > 0) ex_memo_put(memo, slot, key);
                if (r < 0) return len;
                if (r > 0) continue;
                maybe = word_may_match(e->nf, t, len, p, end);
            } else if (t[p] == '/') {
                maybe = 1;
            } else {
                size_t q;
                maybe = dot_continues(t, len, p, &q);
                if (!maybe) done = q; /* only dots to the token's end */
            }
            if (!maybe) continue;
            /* the token's bounds from the path bits of the block and the
             * blocks on either side; further bytes one at a time */
            uint64_t below = ~c.path & (((uint64_t)1 << bit) - 1), after = ~c.path >> bit;
            size_t a = below ? base + 64 - (size_t)__builtin_clzll(below) : base;
            size_t i = after ? p + (size_t)__builtin_ctzll(after) : base + 64;
            if (!below && base > 0) {
                uint64_t r = ~prev_path; /* 0 past a text's start: none before it */
                a = r ? base - (size_t)__builtin_clzll(r) : base - 64;
                if (!r)
                    while (a > 0 && is_path_char((unsigned char)t[a - 1])) a--;
            }
            if (!after) {
                uint64_t r = ~nx.path; /* all ones past the text's end */
                i = r ? base + 64 + (size_t)__builtin_ctzll(r) : base + 128;
                if (!r)
                    while (i < len && is_path_char((unsigned char)t[i])) i++;
            }
            if (expand_token(e, t, len, a, i) < 0) return len;
            done = i;
        }
    }
    return stop;
}

/* Each scan twice, with `own` a constant: the scan that does not look for
 * own blocks does not classify '[' either. */
static size_t scan_filtered(ex_emitter *e, const char *t, size_t len, ex_memo *memo, int own)
{
    return own ? scan_filtered_with(e, t, len, memo, 1, ex_classify_open, ex_word_misses, ex_memo_hits)
               : scan_filtered_with(e, t, len, memo, 0, ex_classify, ex_word_misses, ex_memo_hits);
}

#if EX_AVX2
__attribute__((target("avx2,bmi,bmi2,popcnt"))) static size_t scan_filtered_avx2(ex_emitter *e, const char *t,
                                                                                 size_t len, ex_memo *memo, int own)
{
    return own ? scan_filtered_with(e, t, len, memo, 1, ex_classify_open_avx2, ex_word_misses_avx2,
                                    ex_memo_hits_bmi2)
               : scan_filtered_with(e, t, len, memo, 0, ex_classify_avx2, ex_word_misses_avx2, ex_memo_hits_bmi2);
}
#endif

/* The filtered scan of t[0, len) but for custom patterns; with `own`, up
 * to its first own block: where that starts, or len. */
static size_t scan_tokens_filtered(ex_emitter *e, const char *t, size_t len, int own)
{
    ex_memo memo;
    ex_memo_init(&memo, len, 0, &e->memo);
#if EX_AVX2
    if (e->ex->avx2) return scan_filtered_avx2(e, t, len, &memo, own);
#endif
    return scan_filtered(e, t, len, &memo, own);
}

/* The scan of t[0, len)'s tokens (filtered when the emitter has a
 * filter), without custom patterns. */
static void scan_tokens(ex_emitter *e, const char *t, size_t len)
{
    if (e->nf && e->nf->nbits) {
        scan_tokens_filtered(e, t, len, 0);
        return;
    }
    for (size_t i = 0; i < len && !e->stop;) {
        if (!is_path_char((unsigned char)t[i])) {
            i++;
            continue;
        }
        size_t a = i;
        while (i < len && is_path_char((unsigned char)t[i])) i++;
        if (expand_token(e, t, len, a, i) < 0) return;
    }
}

static void scan_text(ex_emitter *e, const char *t, size_t len)
{
    scan_tokens(e, t, len);
    if (!e->stop) ex_pass_custom(e, t, len, 0);
}

/* scan_text of what extract_strip_own leaves of t.  A long text's filtered
 * scan finds the first own block itself: a pass over the text before the
 * scan read it from memory once more (5 % of the scan of 16 MiB); a text
 * the caches hold is searched first, which costs less than the scan's
 * compare per byte.  The stripped text is t's bytes up to that block, so
 * the scan goes on from there in the stripped copy (most texts have no
 * block, and no copy is made). */
static void scan_text_stripped(ex_emitter *e, const char *t, size_t len, size_t in_scan_min)
{
    size_t at = 0; /* t[0, at) is scanned */
    if (e->nf && e->nf->nbits && len > in_scan_min) {
        at = scan_tokens_filtered(e, t, len, 1);
        if (e->stop) return;
        if (at == len) {
            ex_pass_custom(e, t, len, 0);
            return;
        }
    }
    buf scratch;
    buf_init(&scratch);
    const char *s;
    size_t n;
    if (extract_without_own(t, len, &scratch, &s, &n) != CLARITY_OK) {
        ex_em_error(e, CLARITY_ENOMEM);
    } else { /* s[0, at) is t[0, at) */
        scan_tokens(e, s + at, n - at);
        if (!e->stop) ex_pass_custom(e, s, n, 0);
    }
    buf_free(&scratch);
}

/* A filtered scan's filter on its emitter. */
static void set_filter(ex_emitter *e, const extract_filter *f)
{
    if (!f || !f->names) return;
    e->nf = f->names;
    e->word = f->word;
}

int extract_candidates_filtered(const extractor *ex, const char *text, size_t len,
                                const char *workspace, const extract_filter *f, extract_cb cb,
                                void *ud)
{
    if (!ex || !cb) return CLARITY_ERR;
    ex_emitter *e = ex_em_open(ex, workspace, cb, ud, 0);
    if (!e) return CLARITY_ENOMEM;
    set_filter(e, f);
    if (text) scan_text(e, text, len);
    return ex_em_close(e);
}

int ex_candidates_stripped(const extractor *ex, const char *text, size_t len, const char *workspace,
                           const extract_filter *f, extract_cb cb, void *ud, size_t in_scan_min)
{
    if (!ex || !cb) return CLARITY_ERR;
    ex_emitter *e = ex_em_open(ex, workspace, cb, ud, 0);
    if (!e) return CLARITY_ENOMEM;
    set_filter(e, f);
    if (text) scan_text_stripped(e, text, len, in_scan_min);
    return ex_em_close(e);
}

int extract_candidates_stripped(const extractor *ex, const char *text, size_t len, const char *workspace,
                                const extract_filter *f, extract_cb cb, void *ud)
{
    return ex_candidates_stripped(ex, text, len, workspace, f, cb, ud, EX_OWN_IN_SCAN);
}

int extract_candidates(const extractor *ex, const char *text, size_t len, const char *workspace,
                       extract_cb cb, void *ud)
{
    return extract_candidates_filtered(ex, text, len, workspace, NULL, cb, ud);
}

/* ----------------------------------------------------------------- JSON */

static int is_path_key_n(const char *k, size_t n)
{
    static const util_lit keys[] = {UTIL_LIT("file_path"),   UTIL_LIT("path"),       UTIL_LIT("filePath"),
                                    UTIL_LIT("notebook_path"), UTIL_LIT("filename"), UTIL_LIT("file"),
                                    UTIL_LIT("target_file"), UTIL_LIT("file_paths"), UTIL_LIT("paths"),
                                    UTIL_LIT("files")};
    if (!k) return 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (keys[i].n == n && memcmp(k, keys[i].s, n) == 0) return 1;
    return 0;
}

static int is_path_key(const char *k)
{
    return k && is_path_key_n(k, strlen(k));
}

/* The files pass of one path-key string, normalizing it here: what the
 * programs' canonical ids must equal (tests and fuzz_prefilter clear
 * extractor.keep_programs to compare). */
static void file_afresh(ex_emitter *e, const char *s, size_t n)
{
    buf_reset(&e->np);
    ex_norm_path(s, n, e->ws, e->wslen, &e->np);
    if (buf_failed(&e->np)) {
        ex_em_error(e, CLARITY_ENOMEM);
        return;
    }
    int kind = ex_file_id(e->np.p, e->np.len, &e->id);
    int on = kind == FILE_MEMORY ? e->ex->memory_files : e->ex->source_files;
    if (kind != FILE_NONE && on) ex_em_emit_scratch(e, CAT_FILE, 1);
    buf_reset(&e->id);
}

/* One string value s[0..n) under a member named by a path-like key or not. */
static void visit_string(ex_emitter *e, const char *s, size_t n, int path_key, int files_only)
{
    int pathy = path_key && n > 0 && n <= JSON_MAX_PATH && !memchr(s, '\0', n);
    uint32_t h = pathy ? ex_sset_hash_bytes(e->tokens.seed, s, n) : 0;
    if (files_only) {
        if (pathy && e->ex->keep_programs) {
            /* the canonical id from the path's program, which the
             * candidates pass over the same call runs next */
            ex_file_ref f;
            if (ex_path_file(e, s, n, h, &f) == 1 &&
                (f.kind == FILE_MEMORY ? e->ex->memory_files : e->ex->source_files))
                ex_em_emit_file(e, &f);
        } else if (pathy) {
            file_afresh(e, s, n); /* the reference the tests compare with */
        }
        return;
    }
    if (pathy && emit_path_forms(e, s, n, h) < 0) return;
    /* the scan would find the path again when it is the string's one
     * token, and emit the same ids (a call reports each id once) */
    e->path_done = pathy ? s : NULL;
    e->path_done_n = n;
    scan_text(e, s, n);
    e->path_done = NULL;
}

/* files_only: extract_tool_files (canonical ids, category flags and
 * exclusions apply); otherwise every form plus the text candidates. */
static void walk(ex_emitter *e, json_t *v, const char *key, int files_only)
{
    if (e->stop) return;
    if (json_is_object(v)) {
        const char *k;
        json_t *val;
        json_object_foreach(v, k, val) walk(e, val, k, files_only);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *val;
        json_array_foreach(v, i, val) walk(e, val, key, files_only);
    } else if (json_is_string(v)) {
        visit_string(e, json_string_value(v), json_string_length(v), is_path_key(key), files_only);
    }
}

/* Walks a parsed document (or, when it did not parse, scans the raw text
 * for candidates) with one emitter. */
static int walk_with(const extractor *ex, json_t *root, const char *json, size_t len,
                     const char *workspace, const extract_filter *f, extract_cb cb, void *ud,
                     int files_only)
{
    ex_emitter *e = ex_em_open(ex, workspace, cb, ud, files_only);
    if (!e) return CLARITY_ENOMEM;
    set_filter(e, f);
    if (root) walk(e, root, NULL, files_only);
    else if (!files_only) scan_text(e, json, len);
    return ex_em_close(e);
}

static int run_json(const extractor *ex, const char *json, const char *workspace, extract_cb cb, void *ud,
                    int files_only)
{
    if (!ex || !cb) return CLARITY_ERR;
    if (!json) return 0;
    size_t len = strlen(json);
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_DECODE_ANY, &jerr);
    int rc = walk_with(ex, root, json, len, workspace, NULL, cb, ud, files_only);
    json_decref(root);
    return rc;
}

int extract_candidates_json(const extractor *ex, const char *json, const char *workspace,
                            extract_cb cb, void *ud)
{
    return run_json(ex, json, workspace, cb, ud, 0);
}

int extract_tool_files(const extractor *ex, const char *json, const char *workspace,
                       extract_cb cb, void *ud)
{
    return run_json(ex, json, workspace, cb, ud, 1);
}

/* The strings ex_json_strings found, visited as walk() visits them. */
static int visit_strings(const extractor *ex, const ex_json_str *v, size_t n, const char *workspace,
                         const extract_filter *f, extract_cb cb, void *ud, int files_only)
{
    if (files_only) { /* files come only from strings under path keys: none, no emitter */
        size_t i = 0;
        while (i < n && !is_path_key_n(v[i].key, v[i].key_len)) i++;
        if (i == n) return 0;
    }
    ex_emitter *e = ex_em_open(ex, workspace, cb, ud, files_only);
    if (!e) return CLARITY_ENOMEM;
    set_filter(e, f);
    buf dec;
    buf_init(&dec);
    for (size_t i = 0; i < n && !e->stop; i++) {
        const char *s = v[i].s;
        size_t len = v[i].len;
        if (v[i].esc) {
            ex_json_unescape(s, len, &dec);
            if (buf_failed(&dec)) {
                ex_em_error(e, CLARITY_ENOMEM);
                break;
            }
            s = dec.p;
            len = dec.len;
        }
        visit_string(e, s, len, is_path_key_n(v[i].key, v[i].key_len), files_only);
    }
    buf_free(&dec);
    return ex_em_close(e);
}

int extract_tool_call(const extractor *ex, const char *json, const char *workspace,
                      const extract_filter *f, extract_cb on_file, extract_cb on_candidate, void *ud)
{
    if (!ex || !on_file || !on_candidate) return CLARITY_ERR;
    if (!json) return 0;
    size_t len;
    ex_json_strs v;
    json_t *root;
    int jr = ex_json_read(json, &len, &v, &root);
    if (jr < 0) return jr;
    if (jr == 0) { /* the common case: no tree built */
        int rc = visit_strings(ex, v.v, v.n, workspace, NULL, on_file, ud, 1);
        int rc2 = visit_strings(ex, v.v, v.n, workspace, f, on_candidate, ud, 0);
        ex_json_strs_free(&v);
        return rc ? rc : rc2;
    }
    int rc = walk_with(ex, root, json, len, workspace, NULL, on_file, ud, 1);
    int rc2 = walk_with(ex, root, json, len, workspace, f, on_candidate, ud, 0);
    json_decref(root);
    return rc ? rc : rc2;
}

/* --------------------------------------------------------- lookup forms */

int extract_lookup_forms(const extractor *ex, const char *name, const char *workspace,
                         extract_cb cb, void *ud)
{
    if (!ex || !cb) return CLARITY_ERR;
    if (!name) return 0;
    while (*name == ' ' || (*name >= '\t' && *name <= '\r')) name++;
    size_t n = strlen(name);
    while (n > 0 && (name[n - 1] == ' ' || (name[n - 1] >= '\t' && name[n - 1] <= '\r'))) n--;
    if (n == 0) return 0;
    ex_emitter *e = ex_em_open(ex, workspace, cb, ud, 0);
    if (!e) return CLARITY_ENOMEM;

    const char *colon = memchr(name, ':', n);
    int cat = -1;
    if (colon) {
        size_t pl = (size_t)(colon - name);
        if (pl == 4 && memcmp(name, "tool", 4) == 0) cat = CAT_TOOL;
        else if (pl == 4 && memcmp(name, "file", 4) == 0) cat = CAT_FILE;
        else if (pl == 7 && memcmp(name, "keyword", 7) == 0) cat = CAT_KEYWORD;
        for (size_t k = 0; cat < 0 && k < ex->n_custom; k++)
            if (strlen(ex->custom_name[k]) == pl && memcmp(ex->custom_name[k], name, pl) == 0)
                cat = CAT_CUSTOM;
    }
    if (cat == CAT_FILE) {
        const char *p = colon + 1;
        size_t pn = n - (size_t)(p - name);
        buf np;
        buf_init(&np);
        ex_norm_path(p, pn, e->ws, e->wslen, &np);
        if (buf_failed(&np)) {
            ex_em_error(e, CLARITY_ENOMEM);
        } else {
            buf_puts(&e->id, "file:");
            buf_append(&e->id, np.p, np.len);
            if (ex_em_emit_scratch(e, CAT_FILE, 0) >= 0 && ex_file_id(np.p, np.len, &e->id) != FILE_NONE)
                ex_em_emit_scratch(e, CAT_FILE, 0);
            buf_reset(&e->id);
        }
        buf_free(&np);
    } else if (cat >= 0) {
        ex_em_emit(e, name, n, cat, 0);
    } else {
        int pathy = memchr(name, '/', n) || memchr(name, '.', n);
        if (emit_lower(e, "", name, n, 1, CAT_PROJECT) >= 0 && pathy) {
            buf np;
            buf_init(&np);
            ex_norm_path(name, n, e->ws, e->wslen, &np);
            if (buf_failed(&np)) {
                ex_em_error(e, CLARITY_ENOMEM);
            } else {
                buf_puts(&e->id, "file:");
                buf_append(&e->id, np.p, np.len);
                if (ex_em_emit_scratch(e, CAT_FILE, 0) >= 0 && ex_has_md_ext(np.p, np.len) &&
                    emit_lower(e, "file:", np.p, np.len, 0, CAT_FILE) >= 0 &&
                    ex_file_id(np.p, np.len, &e->id) == FILE_MEMORY)
                    ex_em_emit_scratch(e, CAT_FILE, 0);
                buf_reset(&e->id);
            }
            buf_free(&np);
        }
        if (!e->stop && emit_lower(e, "tool:", name, n, 0, CAT_TOOL) >= 0)
            emit_lower(e, "keyword:", name, n, 0, CAT_KEYWORD);
    }
    return ex_em_close(e);
}
