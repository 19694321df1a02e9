/* internal.h: what the files of extract/ share (not part of the module API). */
#ifndef EXTRACT_INTERNAL_H
#define EXTRACT_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../util/buf.h"
#include "../util/namefilter.h"
#include "extract.h"
#include "tokprog.h"

/* Bounds that keep pathological input (64 MiB prompts, base64 blobs) cheap. */
#define EX_MAX_WORD EXTRACT_WORD_MAX /* longer [A-Za-z0-9_] runs are never keywords/names */
#define EX_MAX_PATH 1024    /* longer path-like tokens are not file names */
#define EX_MAX_ID 1024      /* longer custom-pattern matches are dropped */
#define EX_MAX_DISTINCT (1u << 20) /* distinct keys counted per call */

/* Emitters parked between calls (extract.c); taken and given back with
 * atomic exchanges, so concurrent calls never share one. */
#define EX_PARK_SLOTS 4
typedef struct ex_park ex_park;

struct extractor {
    ex_park *park;
    int min_len, max_keywords;
    int projects, tool_names, memory_files, source_files, keywords;
    uint64_t seed;
    pcre2_match_context *mctx;
    pcre2_code *_Atomic re_project; /* CamelCase, at the reference passes' first use (project_re) */
    pcre2_code *re_tools;           /* configured tool names when one is no plain word, else NULL */
    /* The same names as an exact-match table of words, used instead of the
     * regex when every name is a plain word (the common case). */
    char **tool_words;
    size_t n_tool_words;
    uint16_t *tool_slots;   /* open addressing over tool_words (index + 1), by ex_word_hash */
    size_t tool_mask;       /* slots - 1 */
    uint64_t tool_lens;     /* bit n set: some name has length n (< 64) */
    uint64_t tool_first[4]; /* bit c set: some name starts with byte c */
    /* bit n (1 to 3) set: a word of n bytes is no keyword (shorter than
     * min_len, or none counted), no tool name (none that long) and no
     * CamelCase name (which takes 4): the mention scan drops it unread */
    unsigned short_skip;
    int avx2;               /* scans classify bytes with AVX2 (classify.h); tests may clear it */
    int keep_programs;      /* emitters keep path programs across calls (tokprog.h); tests may clear it */
    size_t n_custom;
    char *custom_name[CFG_MAX_PATTERNS];
    pcre2_code *custom[CFG_MAX_PATTERNS];
    size_t n_exclude;
    pcre2_code *exclude[CFG_MAX_PATTERNS];
};

/* ---- string set / counter (normalize.c) ----
 * Open addressing over an arena; entries keep insertion order. */
typedef struct ex_sset_ent {
    size_t off;     /* key offset in the arena */
    uint32_t len;   /* key length */
    uint32_t hash;
    uint32_t count; /* times added */
    uint32_t first; /* insertion index (first occurrence) */
} ex_sset_ent;

typedef struct ex_sset {
    uint64_t seed;
    uint32_t *slots; /* entry index + 1, 0 = empty */
    size_t nslots;
    ex_sset_ent *ents;
    size_t n, cap;
    buf arena;
} ex_sset;

void ex_sset_init(ex_sset *s, uint64_t seed);
void ex_sset_free(ex_sset *s);
/* Empties the set and keeps its memory (clears only the slots in use). */
void ex_sset_clear(ex_sset *s);
/* Adds key (or bumps its count).  Returns 1 when new, 0 when already there,
 * -1 on allocation failure or when the set is full (EX_MAX_DISTINCT). */
int ex_sset_add(ex_sset *s, const char *k, size_t n);
/* The same with the key's hash given (ex_sset_hash_lanes below). */
int ex_sset_add_h(ex_sset *s, const char *k, size_t n, uint32_t h);
/* The same, with the key's entry index in *at when it returns 0 or 1. */
int ex_sset_add_at(ex_sset *s, const char *k, size_t n, uint32_t h, size_t *at);
static inline const char *ex_sset_key(const ex_sset *s, size_t i) { return s->arena.p + s->ents[i].off; }

/* ---- short words already seen (normalize.c) ----
 * A word of at most 8 bytes is its one lane (ex_lanes below) and its
 * length, so a set of them compares two integers instead of calling
 * memcmp: the reference scan asks it once per word of the text. */
typedef struct ex_wset {
    uint64_t seed;
    uint64_t *lanes; /* the lane, or 0 for an empty slot (no word is all NUL) */
    uint8_t *lens;
    size_t n, nslots;
    unsigned shift; /* 64 - log2(nslots) */
} ex_wset;

void ex_wset_init(ex_wset *w, uint64_t seed);
void ex_wset_free(ex_wset *w);
/* Empties the set and keeps its memory. */
void ex_wset_clear(ex_wset *w);
/* Doubles the table: 0, -1 on allocation failure, -2 when full. */
int ex_wset_grow(ex_wset *w);

/* The product's top bits: they depend on every bit of the lane.  Low
 * bits (masked, even folded with the high half) depend on the lane's low
 * bytes and few more, and words that share their first five bytes
 * ("word0123", "word0456") then shared a slot and probed long chains. */
static inline size_t ex_wset_slot(const ex_wset *w, uint64_t lane)
{
    return (size_t)(((lane ^ w->seed) * 0x9e3779b97f4a7c15ull) >> w->shift);
}

/* Adds the word (lane in memory order, 1 <= n <= 8).  Returns 1 when new,
 * 0 when already there, -1 on allocation failure, -2 when full
 * (EX_MAX_DISTINCT: the caller goes on without deduplicating).  Inline:
 * it runs once per word of the text. */
static inline int ex_wset_add(ex_wset *w, uint64_t lane, size_t n)
{
    if ((w->n + 1) * 2 > w->nslots) {
        int r = ex_wset_grow(w);
        if (r != 0) return r;
    }
    size_t j = ex_wset_slot(w, lane);
    while (w->lanes[j]) {
        if (w->lanes[j] == lane && w->lens[j] == n) return 0;
        j = (j + 1) & (w->nslots - 1);
    }
    w->lanes[j] = lane;
    w->lens[j] = (uint8_t)n;
    w->n++;
    return 1;
}

/* ---- the words a scan has decided (normalize.c) ----
 * Text repeats its words, and what a scan does with a word depends only
 * on its bytes, so a scan decides each distinct word once and finds the
 * decision again by the word itself: its first 16 bytes, zero-padded,
 * compared whole (words hold no NUL, so the padding tells lengths apart).
 * Direct-mapped: a collision replaces the older word, which is then only
 * decided again.  Per call, sized by the text. */
typedef struct ex_memo {
    uint64_t (*key)[2]; /* NULL: no memo (short text or no memory) */
    uint32_t *val;      /* the scan's decision per slot, when it keeps one */
    uint32_t *cnt;      /* with val: the slot's repeats not yet added to its keyword (ex_memo_flush) */
    unsigned shift;     /* 64 - log2(slots) */
    struct ex_memo_store *st; /* where the slots this call fills are listed */
} ex_memo;

#define EX_MEMO_MAX 16 /* longest word the memo keeps */
/* Texts shorter than this are scanned without a memo (it would not pay). */
#define EX_MEMO_MIN_TEXT 512

/* At most 16,384 slots (448 KiB with the values and counts), for texts of 256 KiB
 * and more: a long text names many distinct things (thousands of tracked
 * items), and a smaller direct-mapped memo would keep evicting them. */
#define EX_MEMO_SLOTS_MAX 16384

/* Where a call's memos live: kept with the emitter (ex_emitter.memo) and
 * grown to the largest memo a call has needed, so a call seldom allocates.
 * The keys are all zero between calls but for the slots the last call
 * filled, which the next call clears first (where clearing the whole
 * table would write up to 256 KiB). */
typedef struct ex_memo_store {
    uint64_t (*key)[2];
    uint32_t *val, *cnt; /* cnt: all zero between calls, as the keys */
    uint32_t *used; /* the slots the last call filled */
    size_t nused;
    size_t cap; /* slots allocated in key and used (and val and cnt, when set) */
} ex_memo_store;

/* A memo for a text of len bytes in st's memory, with a decision per word
 * when with_val, or none (m->key NULL) when the text is short or memory is
 * short: the scan is then only slower. */
void ex_memo_init(ex_memo *m, size_t len, int with_val, ex_memo_store *st);
void ex_memo_store_free(ex_memo_store *st);

/* Hidden: a reference from the scans is then a PC-relative address, not a
 * load from the GOT in every loop that masks a word.  Lane-major: a word's
 * two masks are at one index from one base (no multiply by 16). */
extern const uint64_t ex_memo_keep[2][EX_MEMO_MAX + 1] __attribute__((visibility("hidden")));

/* Bit i: a word starting at byte base + i of a text of len bytes has need
 * bytes of text from its start (ex_room), or the 16 bytes the memo reads
 * (ex_memo_room; none without a memo). */
static inline uint64_t ex_room(size_t base, size_t len, size_t need)
{
    if (base + need > len) return 0;
    size_t room = len - need - base + 1; /* the positions that have it */
    return room >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << room) - 1;
}
static inline uint64_t ex_memo_room(const ex_memo *m, size_t base, size_t len)
{
    return m->key ? ex_room(base, len, 16) : 0;
}

/* The key of the word t[a, a + n) (1 <= n <= EX_MEMO_MAX, a + 16 <= its
 * text's length) in k, and its slot. */
static inline size_t ex_memo_slot(const ex_memo *m, const char *t, size_t a, size_t n, uint64_t k[2])
{
    uint64_t x, y;
    memcpy(&x, t + a, 8);
    memcpy(&y, t + a + 8, 8);
    k[0] = x & ex_memo_keep[0][n];
    k[1] = y & ex_memo_keep[1][n];
    /* the slot from the first 8 bytes: words that share them only share a slot */
    return (size_t)((k[0] * 0x9e3779b97f4a7c15ull) >> m->shift);
}

static inline int ex_memo_has(const ex_memo *m, size_t slot, const uint64_t k[2])
{
    return ((m->key[slot][0] ^ k[0]) | (m->key[slot][1] ^ k[1])) == 0; /* one branch, not two */
}

/* A word's repeats are counted in its slot (one add per repeat, where
 * moving its keyword's count was a chain of three dependent loads), and
 * added to the keyword when the slot takes another word and when the scan
 * ends: the slot's value is the word's entry in counts + 1, or 0 when it
 * is no keyword.  The slot's count is then 0 again. */
static inline void ex_memo_flush_slot(const ex_memo *m, size_t slot, ex_sset *counts)
{
    uint32_t n = m->cnt[slot], at = m->val[slot];
    if (!n) return;
    m->cnt[slot] = 0;
    if (!at) return;
    uint64_t c = (uint64_t)counts->ents[at - 1].count + n;
    counts->ents[at - 1].count = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
}
/* Every slot's repeats into counts, at the end of a scan (normalize.c). */
void ex_memo_flush(const ex_memo *m, ex_sset *counts);

/* The length of the word starting at bit `bit` of a 64-byte block whose
 * non-word bits are `nonword`, the next block's being `next_nonword` (all
 * ones past the text): a word running into the next block ends there.
 * 63 stands for 63 or more. */
static inline size_t ex_word_len(uint64_t nonword, uint64_t next_nonword, unsigned bit)
{
    /* the next block's bits above the block's own (none when bit is 0) */
    uint64_t from = (nonword >> bit) | ((next_nonword << 1) << (63 - bit));
    return (size_t)__builtin_ctzll(from | (uint64_t)1 << 63);
}

/* The length of the word starting at bit `bit` of a block whose non-word
 * bits are `nonword`, within the block (63 when it runs to its end). */
static inline size_t ex_len_in_block(uint64_t nonword, unsigned bit)
{
    return (size_t)__builtin_ctzll((nonword >> bit) | (uint64_t)1 << 63);
}

/* The start of the word that runs into the next block, among `cand` (a
 * block's word starts, whose word bits are `word`): taken out of *cand and
 * returned, or 64 when there is none.  Its length needs the next block's
 * bits; a word before it is done with its block's alone (the loops below
 * test it on its own after theirs, so no other word pays for that). */
static inline unsigned ex_take_straddler(uint64_t *cand, uint64_t word)
{
    if (!(word >> 63)) return 64;
    uint64_t nonword = ~word;
    unsigned s = nonword ? 64u - (unsigned)__builtin_clzll(nonword) : 0;
    if (!(*cand >> s & 1)) return 64;
    *cand ^= (uint64_t)1 << s;
    return s;
}

/* The memo's test of the word t[bit, bit + n) (n <= EX_MEMO_MAX, 16 bytes
 * readable from t + bit): the hit as bit `bit` of the result, counted in
 * its slot when `counted`.  No branch on the outcome: hits and misses come
 * in no order. */
static inline __attribute__((always_inline)) uint64_t ex_memo_hit_at(const ex_memo *at, const char *t, unsigned bit,
                                                                     size_t n, int counted)
{
    uint64_t key[2];
    size_t slot = ex_memo_slot(at, t, bit, n, key);
    uint64_t hit = (uint64_t)ex_memo_has(at, slot, key);
    if (counted) at->cnt[slot] += (uint32_t)hit;
    return hit << bit;
}

/* The memo's test of the block's straddler at bit `last` (ex_take_straddler;
 * 64: none), whose length needs the next block's bits. */
static inline __attribute__((always_inline)) uint64_t ex_memo_hit_last(const ex_memo *at, const char *t, unsigned last,
                                                                       uint64_t nonword, uint64_t next_word,
                                                                       int counted)
{
    if (last >= 64) return 0;
    size_t n = ex_word_len(nonword, ~next_word, last);
    return n <= EX_MEMO_MAX ? ex_memo_hit_at(at, t, last, n, counted) : 0;
}

/* The starts among `cand` (bits of a 64-byte block at t whose word bits
 * are `word`, the next block's `next_word`; each with the 16 bytes the
 * memo reads) of words the memo has decided.  Most words of a text are
 * such repeats, so a scan runs this first over each block, with a handful
 * of values live, and its general loop visits only the rest (a word
 * decided earlier in the same block is still found there).  When counted,
 * each hit is a repeat in its slot's count (ex_memo_flush_slot).  The
 * AVX2 scans run the same loop written out (ex_memo_hits_bmi2,
 * wordbatch.h). */
static inline __attribute__((always_inline)) uint64_t ex_memo_hits(const ex_memo *m, const char *t, uint64_t cand,
                                                                   uint64_t word, uint64_t next_word, int counted)
{
    /* the memo's fields in locals: a count's store could alias them */
    const ex_memo at = *m;
    uint64_t hits = 0, nonword = ~word;
    unsigned last = ex_take_straddler(&cand, word);
    while (cand) {
        unsigned bit = (unsigned)__builtin_ctzll(cand);
        cand &= cand - 1;
        size_t n = ex_len_in_block(nonword, bit);
        if (__builtin_expect(n <= EX_MEMO_MAX, 1)) hits |= ex_memo_hit_at(&at, t, bit, n, counted);
    }
    return hits | ex_memo_hit_last(&at, t, last, nonword, next_word, counted);
}

static inline void ex_memo_put(ex_memo *m, size_t slot, const uint64_t k[2])
{
    /* a word starts with a word byte, so a filled slot's first lane is not 0 */
    if (!m->key[slot][0]) m->st->used[m->st->nused++] = (uint32_t)slot;
    m->key[slot][0] = k[0];
    m->key[slot][1] = k[1];
}

/* ---- paths and ids (normalize.c) ---- */
/* Byte classes, as a table: the scanners test every byte of every prompt. */
enum { EX_WORD = 1, EX_PATH = 2 };
extern const unsigned char ex_ctype[256];
/* [A-Za-z0-9_] */
static inline int ex_is_word(unsigned char c) { return ex_ctype[c] & EX_WORD; }
/* Characters of path-like tokens: [A-Za-z0-9_./~@+-]. */
static inline int ex_is_path_char(unsigned char c) { return ex_ctype[c] & EX_PATH; }

/* ---- hashing eight bytes at a time ----
 * Every hash of extract/ runs over 8-byte lanes (name_load8 order, the
 * tail zero-padded; util/namefilter.h), so a scanner that has loaded a
 * word's lanes once derives each of its hashes from them in a few
 * instructions: ex_lanes_mix() of a word's lanes equals name_mix_bytes()
 * of its bytes. */
/* A word of at most EX_MAX_WORD bytes as lanes in memory order (so .b is
 * its bytes), zero past n: as written, and folded to lowercase. */
typedef union ex_lanes {
    uint64_t v[EX_MAX_WORD / 8];
    char b[EX_MAX_WORD];
} ex_lanes;

static inline uint64_t ex_lanes_mix(uint64_t h, const ex_lanes *l, size_t n)
{
    for (size_t k = 0; k * 8 < n; k++) h = name_hash_step(h, util_le64(l->v[k]));
    return name_hash_end(h);
}

/* The first m (1..8) bytes of a lane in memory order. */
static inline uint64_t ex_lane_mask(size_t m)
{
    return UTIL_BIG_ENDIAN ? ~(uint64_t)0 << (64 - 8 * m) : ~(uint64_t)0 >> (64 - 8 * m);
}

/* Loads the word t[a, a + n) (1 <= n <= EX_MAX_WORD, inside t[0, len)). */
static inline void ex_word_lanes(const char *t, size_t len, size_t a, size_t n, ex_lanes *raw, ex_lanes *low)
{
    for (size_t k = 0; k * 8 < n; k++) {
        size_t o = a + k * 8, m = n - k * 8;
        uint64_t x = 0;
        if (o + 8 <= len) memcpy(&x, t + o, 8);
        else memcpy(&x, t + o, len - o);
        if (m < 8) x &= ex_lane_mask(m);
        raw->v[k] = x;
        low->v[k] = name_fold_upper8(x);
    }
}

#define EX_TOOL_SEED 0x13198a2e03707344ull

/* The tool-name table's hash (case-sensitive). */
static inline uint32_t ex_word_hash(const char *w, size_t n)
{
    return (uint32_t)name_mix_bytes(EX_TOOL_SEED, w, n);
}

/* The string set's hash of a key, from its bytes or from a word's lanes;
 * seeded per extractor so that a text cannot be built offline to collide. */
static inline uint32_t ex_sset_hash_bytes(uint64_t seed, const char *k, size_t n)
{
    return (uint32_t)name_mix_bytes(seed ^ (0xcbf29ce484222325ull + n), k, n);
}

static inline uint32_t ex_sset_hash_lanes(uint64_t seed, const ex_lanes *l, size_t n)
{
    return (uint32_t)ex_lanes_mix(seed ^ (0xcbf29ce484222325ull + n), l, n);
}

/* Appends the ASCII-lowercased bytes. */
void ex_append_lower(buf *b, const char *s, size_t n);
/* Normalizes path into out (appended).  ws is an already normalized
 * absolute workspace or NULL. */
void ex_norm_path(const char *p, size_t n, const char *ws, size_t wslen, buf *out);
/* Normalized workspace (malloc()ed) or NULL when ws is NULL, empty or relative.
 * *oom is set when allocation failed. */
char *ex_norm_workspace(const char *ws, int *oom);
/* Non-zero when the file name ends with one of the code extensions or
 * with .md: a dotted token that may name a file. */
int ex_has_file_ext(const char *p, size_t n);
int ex_has_md_ext(const char *p, size_t n);

enum { FILE_NONE = 0, FILE_MEMORY, FILE_SOURCE, FILE_OTHER };
/* Classifies the normalized path np and appends its canonical id
 * ("file:..."; memory/doc files lowercased) to out.  FILE_OTHER: any other
 * path, appended as is (used for tool-call paths).  FILE_NONE: nothing. */
int ex_file_id(const char *np, size_t n, buf *out);

/* ---- reporting (extract.c) ---- */
/* A word's span in the text, and a growable list of them. */
typedef struct ex_span {
    uint32_t at, n;
} ex_span;
typedef struct ex_spans {
    ex_span *v;
    size_t n, cap;
} ex_spans;

/* A call's state.  Its sets, buffers and lists outlive the call: finishing
 * clears them and parks the emitter with its extractor, and the next call
 * takes it back (ex_em_open), so a warm turn allocates nothing. */
typedef struct ex_emitter {
    const extractor *ex;
    extract_cb cb;
    void *ud;
    ex_sset seen;
    ex_sset tokens;        /* candidates: tokens already expanded in this call */
    ex_wset words;         /* ... and the whole-word ones of up to 8 bytes, lowercase */
    ex_sset counts;        /* mentions: keyword counts */
    ex_spans tools, camel, paths; /* mentions: what the one-pass scan found */
    ex_memo_store memo;
    buf id;                /* scratch for building ids */
    buf np;                /* scratch for a normalized path */
    buf prog;              /* scratch for a path program */
    ex_tp_store tp;        /* path programs of earlier calls (tokprog.h) */
    pcre2_match_data *md;  /* group 0 only; shared by all patterns of a call */
    char *ws;              /* this call's normalized workspace (ws_norm) or NULL */
    size_t wslen;
    char *ws_in, *ws_norm; /* the last workspace given and its normal form, kept for the next call */
    size_t ws_norm_len;
    uint64_t ws_norm_key;  /* ex_tp_ws_key of ws_norm: the programs' key for this call's ws when it is set */
    int filter;            /* mentions: drop short pattern ids and excluded ids */
    const name_filter *nf; /* candidates: skip names no tracked item has */
    extract_word_cb word;  /* candidates: whole words' forms go here (extract.h) */
    const char *path_done; /* candidates: a string whose path forms were just emitted */
    size_t path_done_n;
    int stop;              /* the callback asked to stop, or out of memory */
    int rc;                /* sticky CLARITY_ENOMEM / CLARITY_ERR */
} ex_emitter;

/* An emitter for one call: a parked one, with the sets, buffers and
 * normalized workspace of an earlier call, or a new one.  NULL without
 * memory. */
ex_emitter *ex_em_open(const extractor *ex, const char *workspace, extract_cb cb, void *ud, int filter);
/* Ends e's call (parks e, or frees it when every slot is taken); returns
 * e->rc (0 when all went well). */
int ex_em_close(ex_emitter *e);
/* Reports id once per call.  pattern_id: subject to the min-length rule.
 * Returns 1 when reported, 0 when dropped or already seen, -1 when
 * processing must stop (e->stop). */
int ex_em_emit(ex_emitter *e, const char *id, size_t n, int cat, int pattern_id);
/* The same for an id known to hold no NUL, of pattern_id 0, with its
 * hashes given: name_id_hash(id) and ex_sset_hash_bytes(ex->seed, id). */
int ex_em_emit_hashed(ex_emitter *e, const char *id, size_t n, int cat, uint64_t id_hash, uint32_t set_hash);
/* A path's canonical file id, from its program (ex_path_file). */
typedef struct ex_file_ref {
    const char *id; /* not NUL-terminated; valid until e's next program is built or kept */
    size_t n;
    uint64_t id_hash;  /* name_id_hash(id) */
    uint32_t set_hash; /* ex_sset_hash_bytes(ex->seed, id) */
    int kind;          /* FILE_MEMORY, FILE_SOURCE or FILE_OTHER */
} ex_file_ref;
/* What ex_file_id gives for the path p[0, n) normalized in e's workspace
 * (h: its ex_sset_hash_bytes), from the path's program (candidates.c), so
 * a path met before is not normalized again: 1 with *ref set, 0 when it
 * names no file, -1 when the scan must stop (no memory). */
int ex_path_file(ex_emitter *e, const char *p, size_t n, uint32_t h, ex_file_ref *ref);
/* ex_em_emit(e, ref->id, ref->n, CAT_FILE, 1) with the hashes known. */
int ex_em_emit_file(ex_emitter *e, const ex_file_ref *ref);
/* Emits e->id (the scratch buffer) and resets it. */
int ex_em_emit_scratch(ex_emitter *e, int cat, int pattern_id);
/* Records a matching error code into e->rc (ENOMEM also stops). */
void ex_em_error(ex_emitter *e, int rc);

/* ---- matching (extract.c) ---- */
/* Next hyphenated lowercase name at or after *pos, with the semantics of
 * (?<![\w/.-])[a-z]++(?:-[a-z]++){1,32}+(?![\w/-]|\.\w): 1 with [*ms, *me)
 * and *pos advanced, or 0 at the end. */
int ex_next_hyphen_name(const char *t, size_t len, size_t *pos, size_t *ms, size_t *me);
/* Reports "<name>:" + lowercase(match) for every match of every custom
 * pattern; pattern_id as for ex_em_emit. */
void ex_pass_custom(ex_emitter *e, const char *t, size_t len, int pattern_id);

/* extract_candidates_stripped, whose filtered scan finds the own blocks
 * itself in a text longer than in_scan_min bytes (EX_OWN_IN_SCAN: one
 * the caches do not hold; tests give 0, to check that scan on short texts). */
#define EX_OWN_IN_SCAN ((size_t)256 * 1024)
int ex_candidates_stripped(const extractor *ex, const char *text, size_t len, const char *workspace,
                           const extract_filter *f, extract_cb cb, void *ud, size_t in_scan_min);
/* Next match of re in s[0..len) from *pos: 1 with [*ms, *me), 0 at the end,
 * or CLARITY_ERR / CLARITY_ENOMEM.  Skips empty matches. */
int ex_next_match(const extractor *ex, const pcre2_code *re, const char *s, size_t len,
                  size_t *pos, pcre2_match_data *md, size_t *ms, size_t *me);

/* ---- tool-call arguments without a tree (jsonwalk.c) ---- */
typedef struct ex_json_str {
    const char *key;  /* raw span of the member key, NULL at the top level */
    size_t key_len;
    const char *s;    /* raw span of the string value (between the quotes) */
    size_t len;
    int key_esc, esc; /* the spans hold escapes (ex_json_unescape) */
    int depth;        /* 1: a member of the top-level object (or the document) */
} ex_json_str;
enum { EX_JSON_UNSURE = 1, EX_JSON_NOMEM = 2 };
/* The strings of one document: v[0, n), in `local` while they fit (a tool
 * call's arguments hold a few: no allocation), else malloc()ed.  Lives
 * where it was declared (v may point into it); ex_json_strs_free after. */
#define EX_JSON_LOCAL 16
typedef struct ex_json_strs {
    ex_json_str *v;
    size_t n, cap;
    ex_json_str local[EX_JSON_LOCAL];
} ex_json_strs;
static inline void ex_json_strs_init(ex_json_strs *s)
{
    s->v = s->local;
    s->n = 0;
    s->cap = EX_JSON_LOCAL;
}
static inline void ex_json_strs_free(ex_json_strs *s)
{
    if (s->v != s->local) free(s->v);
    ex_json_strs_init(s);
}
/* The string values of a JSON document in document order, each with the
 * key of the member it belongs to (array elements inherit it), into *out
 * (set up here; spans point into json): 0, EX_JSON_UNSURE when jansson
 * must decide (escapes other than the simple ones, non-ASCII bytes,
 * numbers it might refuse, repeated keys, deep nesting, invalid JSON),
 * EX_JSON_NOMEM.  *out needs ex_json_strs_free whatever it returns. */
int ex_json_strings(const char *json, size_t len, ex_json_strs *out);
struct json_t;
/* A NUL-terminated JSON text (*len its length) read for its strings: 0 with
 * ex_json_strings' strings in *s, 1 with *root jansson's tree of it (NULL
 * when it is not JSON; json_decref it) where the scanner is unsure, or
 * CLARITY_ENOMEM.  *s needs ex_json_strs_free whatever it returns. */
int ex_json_read(const char *json, size_t *len, ex_json_strs *s, struct json_t **root);
/* The decoded text of a span with simple escapes (\" \\ \/ \b \f \n \r \t). */
void ex_json_unescape(const char *s, size_t n, buf *out);

#endif
