/* extract.c: the extractor (compiled patterns), reporting with
 * de-duplication and exclusions, extract_strip_own and extract_mentions.
 * Reference candidates live in candidates.c, paths in normalize.c. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../include/clarity.h"
#include "../tracker/tracker.h"
#include "../util/lit.h"
#include "../util/memfind.h"
#include "classify.h"
#include "wordbatch.h"
#include "internal.h"
#include "stopwords.h"

#define MATCH_LIMIT 1000000u
#define DEPTH_LIMIT 10000u
#define RE_FLAGS (PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C)

/* Project names: CamelCase compounds by PCRE2 (possessive, bounded
 * repeats: no backtracking, no runaway on hostile input); hyphenated
 * lowercase names ("focus-engine") by ex_next_hyphen_name(), a byte scan
 * with exactly the semantics of
 *   (?<![\w/.-])[a-z]++(?:-[a-z]++){1,32}+(?![\w/-]|\.\w)
 * which as a regex is tried at every lowercase word of the prompt (it has
 * no literal to start from) and dominated the cost of extraction. */
static const char RE_PROJECT[] = "\\b[A-Z][a-z]++(?:[A-Z][a-z]++){1,32}+\\b";

/* ------------------------------------------------------------ lifecycle */

static void set_err(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(char **err, const char *fmt, ...)
{
    if (!err) return;
    va_list ap;
    va_start(ap, fmt);
    free(*err);
    *err = util_vformat(fmt, ap);
    va_end(ap);
}

/* Compiles and JIT-compiles pat; key names it in the error message. */
static int compile(const char *pat, size_t n, pcre2_code **out, char **err, const char *key)
{
    int ec;
    PCRE2_SIZE eo;
    *out = pcre2_compile((PCRE2_SPTR)pat, n, RE_FLAGS, &ec, &eo, NULL);
    if (!*out) {
        if (ec == PCRE2_ERROR_HEAP_FAILED) {
            set_err(err, "%s: out of memory", key);
            return CLARITY_ENOMEM;
        }
        PCRE2_UCHAR msg[256];
        if (pcre2_get_error_message(ec, msg, sizeof msg) < 0) strcpy((char *)msg, "invalid pattern");
        set_err(err, "%s: %s at offset %zu", key, (const char *)msg, (size_t)eo);
        return CLARITY_ECONFIG;
    }
    /* Without JIT (unsupported CPU, no memory) pcre2_match() interprets. */
    (void)pcre2_jit_compile(*out, PCRE2_JIT_COMPLETE);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether a configured tool name may be n bytes long. */
static inline int tool_len(const extractor *ex, size_t n) { return n < 64 && (ex->tool_lens >> n & 1); }

/* Whether a configured tool name may be n bytes long and start with t[0]:
 * the screen most words fail before the table is probed. */
static int tool_may_be(const extractor *ex, const char *t, size_t n)
{
    unsigned char c0 = (unsigned char)t[0];
    return tool_len(ex, n) && (ex->tool_first[c0 >> 6] >> (c0 & 63) & 1);
}

/* Whether a word of n bytes may be counted as a keyword. */
static inline int keyword_len(const extractor *ex, size_t n)
{
    return ex->keywords && ex->max_keywords > 0 && n >= (size_t)ex->min_len;
}

/* The word t[0, n) is a configured tool name; h = ex_word_hash(t, n). */
static inline int is_tool_word_h(const extractor *ex, const char *t, size_t n, uint32_t h)
{
    for (size_t i = h & ex->tool_mask;; i = (i + 1) & ex->tool_mask) {
        uint16_t v = ex->tool_slots[i];
        if (!v) return 0;
        const char *w = ex->tool_words[v - 1];
        if (strncmp(w, t, n) == 0 && !w[n]) return 1;
    }
}

/* Whether the word t[0..n) is one of the plain-word tool names. */
static int is_tool_word(const extractor *ex, const char *t, size_t n)
{
    return tool_may_be(ex, t, n) && is_tool_word_h(ex, t, n, ex_word_hash(t, n));
}

/* Whether every configured tool name is a plain word (of fewer than 64
 * bytes), and how many names there are. */
static int tools_plain(const clarity_config *cfg, size_t *n)
{
    int plain = 1;
    *n = 0;
    for (size_t i = 0; i < cfg->extraction.n_tools && i < CFG_MAX_TOOLS; i++) {
        const char *t = cfg->extraction.tools[i];
        if (!t || !*t) continue;
        size_t l = strlen(t);
        for (size_t k = 0; k < l; k++) plain &= ex_is_word((unsigned char)t[k]) != 0;
        plain &= l < 64;
        ++*n;
    }
    return plain;
}

/* The configured tool names as one regex (ex->re_tools): the names are
 * whole words, with every ASCII punctuation escaped. */
static int compile_tools_regex(extractor *ex, const clarity_config *cfg, char **err)
{
    buf b;
    buf_init(&b);
    size_t n = 0;
    buf_puts(&b, "(?<![A-Za-z0-9_])(?:");
    for (size_t i = 0; i < cfg->extraction.n_tools && i < CFG_MAX_TOOLS; i++) {
        const char *t = cfg->extraction.tools[i];
        if (!t || !*t) continue;
        if (n++) buf_putc(&b, '|');
        for (const char *c = t; *c; c++) {
            unsigned char u = (unsigned char)*c;
            if (u < 0x80 && !ex_is_word(u)) buf_putc(&b, '\\');
            buf_putc(&b, *c);
        }
    }
    buf_puts(&b, ")(?![A-Za-z0-9_])");
    int rc = buf_failed(&b) ? CLARITY_ENOMEM : compile(b.p, b.len, &ex->re_tools, err, "extraction.tools");
    buf_free(&b);
    return rc;
}

/* The configured tool names as an exact-match table of words when all are
 * plain words (the defaults), else as a regex.  Only one is built: a
 * regex's compile and JIT cost a hook process (Claude Code runs one per
 * event) a fifth of its work, for a pattern the table makes unused. */
static int compile_tools(extractor *ex, const clarity_config *cfg, char **err)
{
    size_t words;
    if (!tools_plain(cfg, &words)) return compile_tools_regex(ex, cfg, err);
    if (!words) return 0;
    ex->tool_words = calloc(words, sizeof *ex->tool_words);
    if (!ex->tool_words) return CLARITY_ENOMEM;
    for (size_t i = 0; i < cfg->extraction.n_tools && i < CFG_MAX_TOOLS; i++) {
        const char *t = cfg->extraction.tools[i];
        if (!t || !*t) continue;
        if (!(ex->tool_words[ex->n_tool_words++] = util_strdup(t))) return CLARITY_ENOMEM;
        ex->tool_lens |= (uint64_t)1 << strlen(t);
        ex->tool_first[(unsigned char)t[0] >> 6] |= (uint64_t)1 << ((unsigned char)t[0] & 63);
    }
    qsort(ex->tool_words, ex->n_tool_words, sizeof *ex->tool_words, cmp_str);
    size_t slots = 16;
    while (slots < ex->n_tool_words * 2) slots *= 2;
    if (!(ex->tool_slots = calloc(slots, sizeof *ex->tool_slots))) return CLARITY_ENOMEM;
    ex->tool_mask = slots - 1;
    for (size_t k = 0; k < ex->n_tool_words; k++) {
        const char *w = ex->tool_words[k];
        size_t i = ex_word_hash(w, strlen(w)) & ex->tool_mask;
        while (ex->tool_slots[i]) {
            if (strcmp(ex->tool_words[ex->tool_slots[i] - 1], w) == 0) break; /* a repeated name */
            i = (i + 1) & ex->tool_mask;
        }
        if (!ex->tool_slots[i]) ex->tool_slots[i] = (uint16_t)(k + 1);
    }
    return 0;
}

struct ex_park {
    _Atomic(ex_emitter *) slot[EX_PARK_SLOTS];
};
static void park_free(ex_park *pk);

static uint64_t make_seed(const void *p)
{
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)p;
    }
    return s;
}

int extract_new(const clarity_config *cfg, extractor **out, char **err)
{
    if (err) *err = NULL;
    if (!out) return CLARITY_ERR;
    *out = NULL;
    if (!cfg) return CLARITY_ERR;
    extractor *ex = calloc(1, sizeof *ex);
    if (!ex) return CLARITY_ENOMEM;
    const __typeof__(cfg->extraction) *x = &cfg->extraction;
    ex->min_len = x->min_word_length > 0 ? x->min_word_length : 1;
    ex->max_keywords = x->max_keywords_per_message > 0 ? x->max_keywords_per_message : 0;
    ex->projects = x->projects;
    ex->tool_names = x->tool_names;
    ex->memory_files = x->memory_files;
    ex->source_files = x->source_files;
    ex->keywords = x->keywords;
    ex->seed = make_seed(ex);
    ex->avx2 = ex_cpu_avx2();
    ex->keep_programs = 1;
    if (!(ex->park = calloc(1, sizeof *ex->park))) {
        free(ex);
        return CLARITY_ENOMEM;
    }
    (void)stopword_count(); /* builds the table now rather than on a hot path */

    int rc = CLARITY_ENOMEM;
    ex->mctx = pcre2_match_context_create(NULL);
    if (!ex->mctx) goto fail;
    pcre2_set_match_limit(ex->mctx, MATCH_LIMIT);
    pcre2_set_depth_limit(ex->mctx, DEPTH_LIMIT);
    if ((rc = compile_tools(ex, cfg, err))) goto fail;
    /* the word lengths the mention scan may drop unread (short_skip) */
    for (unsigned n = 1; n <= 3; n++) {
        if (!keyword_len(ex, n) && !(ex->tool_names && ex->tool_words && tool_len(ex, n)))
            ex->short_skip |= 1u << n;
    }

    char key[64];
    for (size_t i = 0; i < x->n_custom && i < CFG_MAX_PATTERNS; i++) {
        const cfg_pattern *cp = &x->custom[i];
        if (!cp->name || !*cp->name) {
            set_err(err, "extraction.customPatterns[%zu].name: must be a non-empty string", i);
            rc = CLARITY_ECONFIG;
            goto fail;
        }
        if (!cp->pattern) {
            set_err(err, "extraction.customPatterns[%zu].pattern: must be a string", i);
            rc = CLARITY_ECONFIG;
            goto fail;
        }
        ex->custom_name[i] = util_strdup(cp->name);
        if (!ex->custom_name[i]) {
            rc = CLARITY_ENOMEM;
            goto fail;
        }
        ex->n_custom = i + 1;
        snprintf(key, sizeof key, "extraction.customPatterns[%zu].pattern", i);
        if ((rc = compile(cp->pattern, PCRE2_ZERO_TERMINATED, &ex->custom[i], err, key))) goto fail;
    }
    for (size_t i = 0; i < x->n_exclude && i < CFG_MAX_PATTERNS; i++) {
        snprintf(key, sizeof key, "extraction.exclude[%zu]", i);
        if (!x->exclude[i]) {
            set_err(err, "%s: must be a string", key);
            rc = CLARITY_ECONFIG;
            goto fail;
        }
        ex->n_exclude = i + 1;
        if ((rc = compile(x->exclude[i], PCRE2_ZERO_TERMINATED, &ex->exclude[i], err, key)))
            goto fail;
    }
    *out = ex;
    return 0;
fail:
    extract_free(ex);
    return rc;
}

void extract_free(extractor *ex)
{
    if (!ex) return;
    pcre2_code_free(atomic_load_explicit(&ex->re_project, memory_order_acquire));
    for (size_t i = 0; i < ex->n_tool_words; i++) free(ex->tool_words[i]);
    free(ex->tool_words);
    free(ex->tool_slots);
    pcre2_code_free(ex->re_tools);
    for (size_t i = 0; i < ex->n_custom; i++) {
        free(ex->custom_name[i]);
        pcre2_code_free(ex->custom[i]);
    }
    for (size_t i = 0; i < ex->n_exclude; i++) pcre2_code_free(ex->exclude[i]);
    pcre2_match_context_free(ex->mctx);
    park_free(ex->park);
    free(ex);
}

/* ------------------------------------------------------------- matching */

int ex_next_match(const extractor *ex, const pcre2_code *re, const char *s, size_t len,
                  size_t *pos, pcre2_match_data *md, size_t *ms, size_t *me)
{
    while (*pos <= len) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, len, *pos, 0, md, ex->mctx);
        if (rc == PCRE2_ERROR_NOMATCH) return 0;
        if (rc == PCRE2_ERROR_NOMEMORY) return CLARITY_ENOMEM;
        if (rc < 0) return CLARITY_ERR; /* match/depth/heap/JIT stack limit */
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t a = ov[0], b = ov[1];
        if (b > a && b > *pos) {
            *ms = a;
            *me = b;
            *pos = b;
            return 1;
        }
        /* empty match: move on by one character */
        size_t p = (a > *pos ? a : *pos) + 1;
        while (p < len && ((unsigned char)s[p] & 0xC0) == 0x80) p++;
        *pos = p;
    }
    return 0;
}

/* ------------------------------------------------------------ reporting */

void ex_em_error(ex_emitter *e, int rc)
{
    if (rc == CLARITY_ENOMEM) {
        e->rc = CLARITY_ENOMEM;
        e->stop = 1;
    } else if (rc < 0 && e->rc == 0) {
        e->rc = CLARITY_ERR;
    }
}

/* A parked emitter, or NULL when none is free (another call holds each). */
static ex_emitter *park_take(ex_park *pk)
{
    for (int i = 0; pk && i < EX_PARK_SLOTS; i++) {
        if (!atomic_load_explicit(&pk->slot[i], memory_order_relaxed)) continue;
        ex_emitter *e = atomic_exchange_explicit(&pk->slot[i], NULL, memory_order_acquire);
        if (e) return e;
    }
    return NULL;
}

/* Parks e; 0 when every slot is taken. */
static int park_put(ex_park *pk, ex_emitter *e)
{
    for (int i = 0; pk && i < EX_PARK_SLOTS; i++) {
        ex_emitter *none = NULL;
        if (atomic_compare_exchange_strong_explicit(&pk->slot[i], &none, e, memory_order_release,
                                                    memory_order_relaxed))
            return 1;
    }
    return 0;
}

/* Frees what an emitter owns past its call. */
static void em_release(ex_emitter *e)
{
    ex_sset_free(&e->seen);
    ex_sset_free(&e->tokens);
    ex_sset_free(&e->counts);
    ex_wset_free(&e->words);
    free(e->tools.v);
    free(e->camel.v);
    free(e->paths.v);
    ex_memo_store_free(&e->memo);
    buf_free(&e->id);
    buf_free(&e->np);
    buf_free(&e->prog);
    ex_tp_free(&e->tp);
    free(e->ws_in);
    free(e->ws_norm);
    e->ws_in = e->ws_norm = NULL;
    pcre2_match_data_free(e->md);
    e->md = NULL;
}

/* Memory a parked emitter may keep: a call over a huge text gives back
 * what it grew beyond this rather than holding it for every later call. */
#define KEEP_SLOTS (1u << 16)
#define KEEP_BYTES ((size_t)1 << 20)
#define KEEP_SPANS 4096

static void sset_reuse(ex_sset *s, uint64_t seed)
{
    if (s->nslots > KEEP_SLOTS || s->arena.cap > KEEP_BYTES || buf_failed(&s->arena)) {
        ex_sset_free(s);
        ex_sset_init(s, seed);
    } else {
        ex_sset_clear(s);
    }
}

static void buf_reuse(buf *b)
{
    if (b->cap > KEEP_BYTES || buf_failed(b)) {
        buf_free(b);
        buf_init(b);
    } else {
        buf_reset(b);
    }
}

static void spans_reuse(ex_spans *s)
{
    if (s->cap > KEEP_SPANS) {
        free(s->v);
        s->v = NULL;
        s->cap = 0;
    }
    s->n = 0;
}

/* Empties what e keeps between calls, within the KEEP_ bounds. */
static void em_clear(ex_emitter *e)
{
    uint64_t seed = e->ex->seed;
    sset_reuse(&e->seen, seed);
    sset_reuse(&e->tokens, seed);
    sset_reuse(&e->counts, seed);
    if (e->words.nslots > KEEP_SLOTS) {
        ex_wset_free(&e->words);
        ex_wset_init(&e->words, seed);
    } else {
        ex_wset_clear(&e->words);
    }
    spans_reuse(&e->tools);
    spans_reuse(&e->camel);
    spans_reuse(&e->paths);
    buf_reuse(&e->id);
    buf_reuse(&e->np);
    buf_reuse(&e->prog);
}

/* e's workspace for this call: the normal form of ws, kept from the call
 * before when ws is the same (a session's calls all give one).  -1
 * without memory. */
static int use_workspace(ex_emitter *e, const char *ws)
{
    e->ws = NULL;
    e->wslen = 0;
    if (!ws || ws[0] != '/') return 0; /* no workspace to make paths relative to */
    if (!e->ws_in || strcmp(e->ws_in, ws) != 0) {
        int oom;
        char *norm = ex_norm_workspace(ws, &oom), *in = norm ? strdup(ws) : NULL;
        if (!in) {
            free(norm);
            return -1;
        }
        free(e->ws_in);
        free(e->ws_norm);
        e->ws_in = in;
        e->ws_norm = norm;
        e->ws_norm_len = strlen(norm);
        e->ws_norm_key = ex_tp_ws_key(e->ex->seed, norm, e->ws_norm_len);
    }
    e->ws = e->ws_norm;
    e->wslen = e->ws_norm_len;
    return 0;
}

ex_emitter *ex_em_open(const extractor *ex, const char *workspace, extract_cb cb, void *ud, int filter)
{
    ex_emitter *e = park_take(ex->park); /* cleared when it was parked */
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e) return NULL;
        ex_sset_init(&e->seen, ex->seed);
        ex_sset_init(&e->tokens, ex->seed);
        ex_sset_init(&e->counts, ex->seed);
        ex_wset_init(&e->words, ex->seed);
        buf_init(&e->id);
        buf_init(&e->np);
        buf_init(&e->prog);
    }
    e->ex = ex;
    e->cb = cb;
    e->ud = ud;
    e->filter = filter;
    e->nf = NULL;
    e->word = NULL;
    e->path_done = NULL;
    e->stop = 0;
    e->rc = 0;
    if (!e->md) e->md = pcre2_match_data_create(1, NULL);
    if (!e->md || use_workspace(e, workspace) != 0) {
        em_release(e);
        free(e);
        return NULL;
    }
    return e;
}

int ex_em_close(ex_emitter *e)
{
    int rc = e->rc;
    em_clear(e);
    e->cb = NULL;
    e->ud = NULL;
    e->ws = NULL;
    if (park_put(e->ex->park, e)) return rc;
    em_release(e);
    free(e);
    return rc;
}

/* Frees the parked emitters (extract_free: no call is running). */
static void park_free(ex_park *pk)
{
    if (!pk) return;
    for (int i = 0; i < EX_PARK_SLOTS; i++) {
        ex_emitter *e = atomic_exchange(&pk->slot[i], NULL);
        if (e) {
            em_release(e);
            free(e);
        }
    }
    free(pk);
}

#define HAS_PREFIX(id, n, lit) ((n) >= sizeof lit - 1 && memcmp(id, lit, sizeof lit - 1) == 0)
#define IS_WORD(id, n, lit) ((n) == sizeof lit - 1 && memcmp(id, lit, sizeof lit - 1) == 0)

/* Model and provider names are never items.  Led by the first byte: this
 * runs for every id a turn emits, and few start as these names do. */
static int builtin_excluded(const char *id, size_t n)
{
    static const util_lit kw[] = {UTIL_LIT("claude"), UTIL_LIT("sonnet"), UTIL_LIT("opus"),
                                  UTIL_LIT("haiku"),  UTIL_LIT("gpt"),    UTIL_LIT("copilot")};
    if (n == 0) return 0;
    switch (id[0]) {
    case 'c': return HAS_PREFIX(id, n, "claude_") || IS_WORD(id, n, "claude");
    case 'g':
        return HAS_PREFIX(id, n, "gpt_") || IS_WORD(id, n, "gpt") || HAS_PREFIX(id, n, "github_copilot") ||
               HAS_PREFIX(id, n, "githubcopilot");
    case 's': return HAS_PREFIX(id, n, "sonnet");
    case 'o': return HAS_PREFIX(id, n, "opus");
    case 'h': return HAS_PREFIX(id, n, "haiku");
    case 'k':
        if (!HAS_PREFIX(id, n, "keyword:")) return 0;
        for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
            if (util_memfind(id + 8, n - 8, kw[i].s, kw[i].n)) return 1;
        return 0;
    default: return 0;
    }
}
#undef HAS_PREFIX
#undef IS_WORD

static int excluded(ex_emitter *e, const char *id, size_t n)
{
    if (builtin_excluded(id, n)) return 1;
    for (size_t i = 0; i < e->ex->n_exclude; i++) {
        int rc = pcre2_match(e->ex->exclude[i], (PCRE2_SPTR)id, n, 0, 0, e->md, e->ex->mctx);
        if (rc >= 0) return 1;
        if (rc != PCRE2_ERROR_NOMATCH)
            ex_em_error(e, rc == PCRE2_ERROR_NOMEMORY ? CLARITY_ENOMEM : CLARITY_ERR);
    }
    return 0;
}

/* The rest of ex_em_emit and ex_em_emit_hashed: an id that passed the
 * filter, reported when it is new and not excluded. */
static int em_report(ex_emitter *e, const char *id, size_t n, int cat, uint32_t set_hash)
{
    int r = ex_sset_add_h(&e->seen, id, n, set_hash);
    if (r == -1) {
        ex_em_error(e, CLARITY_ENOMEM);
        return -1;
    }
    if (r != 1) return 0; /* seen before (or the set is full) */
    const char *key = ex_sset_key(&e->seen, e->seen.n - 1);
    if (e->filter && excluded(e, key, n)) return e->stop ? -1 : 0;
    if (e->cb(e->ud, key, cat)) {
        e->stop = 1;
        return -1;
    }
    return 1;
}

int ex_em_emit(ex_emitter *e, const char *id, size_t n, int cat, int pattern_id)
{
    if (e->stop) return -1;
    /* candidates: an id no tracked item has is dropped before the set */
    if (e->nf && !name_filter_test_id(e->nf, id, n)) return 0;
    if (n == 0 || memchr(id, '\0', n)) return 0;
    if (e->filter && pattern_id && n < (size_t)e->ex->min_len) return 0;
    return em_report(e, id, n, cat, ex_sset_hash_bytes(e->seen.seed, id, n));
}

int ex_em_emit_hashed(ex_emitter *e, const char *id, size_t n, int cat, uint64_t id_hash, uint32_t set_hash)
{
    if (e->stop) return -1;
    if (e->nf && !name_filter_test_idhash(e->nf, id_hash)) return 0;
    return em_report(e, id, n, cat, set_hash);
}

int ex_em_emit_file(ex_emitter *e, const ex_file_ref *ref)
{
    if (e->stop) return -1;
    if (e->filter && ref->n < (size_t)e->ex->min_len) return 0;
    return ex_em_emit_hashed(e, ref->id, ref->n, CAT_FILE, ref->id_hash, ref->set_hash);
}

int ex_em_emit_scratch(ex_emitter *e, int cat, int pattern_id)
{
    if (buf_failed(&e->id)) {
        ex_em_error(e, CLARITY_ENOMEM);
        return -1;
    }
    int r = ex_em_emit(e, e->id.p, e->id.len, cat, pattern_id);
    buf_reset(&e->id);
    return r;
}

/* ------------------------------------------------------------ strip_own */

const char *extract_find_own(const char *text, size_t len)
{
    return text ? util_memfind(text, len, EXTRACT_OWN_OPEN, EXTRACT_OWN_OPEN_LEN) : NULL;
}

int extract_without_own(const char *text, size_t len, buf *scratch, const char **out, size_t *out_len)
{
    if (!extract_find_own(text, len)) {
        *out = text;
        *out_len = len;
        return CLARITY_OK;
    }
    extract_strip_own(text, len, scratch);
    if (buf_failed(scratch)) return CLARITY_ENOMEM;
    *out = scratch->p ? scratch->p : "";
    *out_len = scratch->len;
    return CLARITY_OK;
}

void extract_strip_own(const char *text, size_t len, buf *out)
{
    static const char END[] = EXTRACT_OWN_CLOSE;
    if (!text || !out) return;
    size_t pos = 0, start = out->len;
    int no_end = 0;
    while (pos < len) {
        const char *b = extract_find_own(text + pos, len - pos);
        if (!b) break;
        size_t bs = (size_t)(b - text), after = bs + EXTRACT_OWN_OPEN_LEN;
        buf_append(out, text + pos, bs - pos);
        const char *e = no_end ? NULL : util_memfind(text + after, len - after, END, sizeof END - 1);
        if (e) {
            pos = (size_t)(e - text) + sizeof END - 1;
        } else {
            no_end = 1; /* none further on either */
            const char *bl = memmem(text + after, len - after, "\n\n", 2);
            pos = bl ? (size_t)(bl - text) + 2 : len;
        }
        if (out->len > start && pos < len && ex_is_path_char((unsigned char)out->p[out->len - 1]) &&
            ex_is_path_char((unsigned char)text[pos]))
            buf_putc(out, '\n');
    }
    if (pos < len) buf_append(out, text + pos, len - pos);
    else buf_append(out, "", 0);
}

/* ------------------------------------------------------------- mentions */

/* "tool:" + the lowercase word, a mention. */
static int emit_tool(ex_emitter *e, const char *w, size_t n)
{
    buf_puts(&e->id, "tool:");
    ex_append_lower(&e->id, w, n);
    return ex_em_emit_scratch(e, CAT_TOOL, 1);
}

/* A project name t[a, b): lowercase, '-' -> '_'. */
static int emit_project(ex_emitter *e, const char *t, size_t a, size_t b)
{
    if (b - a > EX_MAX_ID) return 0;
    ex_append_lower(&e->id, t + a, b - a);
    for (size_t i = 0; i < e->id.len; i++)
        if (e->id.p[i] == '-') e->id.p[i] = '_';
    return ex_em_emit_scratch(e, CAT_PROJECT, 1);
}

/* Counts the word w[0..n) (n <= EX_MAX_WORD, its lowercase lanes loaded)
 * as a keyword when it may be one: long enough, not all digits, not a
 * stopword.  0 with *kw its entry index + 1 (0 when not counted), or -1
 * out of memory. */
static inline int count_keyword_lanes(const extractor *ex, ex_sset *counts, const char *w, size_t n,
                                      const ex_lanes *low, uint32_t *kw)
{
    *kw = 0;
    if (n < (size_t)ex->min_len) return 0;
    if (w[0] >= '0' && w[0] <= '9') { /* only such a word can be all digits */
        size_t k = 1;
        while (k < n && w[k] >= '0' && w[k] <= '9') k++;
        if (k == n) return 0;
    }
    if (n <= STOPWORD_MAX && stopword_is_lanes(low->v, n, ex_lanes_mix(NAME_HASH_SEED, low, n))) return 0;
    size_t at;
    int r = ex_sset_add_at(counts, low->b, n, ex_sset_hash_lanes(counts->seed, low, n), &at);
    if (r >= 0) *kw = (uint32_t)at + 1;
    return r == -1 ? -1 : 0;
}

/* The same for a word not loaded yet (the reference passes). */
static int count_keyword(const extractor *ex, ex_sset *counts, const char *w, size_t n)
{
    if (n > EX_MAX_WORD) return 0;
    ex_lanes raw, low;
    ex_word_lanes(w, n, 0, n, &raw, &low);
    uint32_t kw;
    return count_keyword_lanes(ex, counts, w, n, &low, &kw);
}

static void pass_tools(ex_emitter *e, const char *t, size_t len)
{
    if (e->ex->tool_words) {
        /* Same matches as the regex (whole ASCII words), by table lookup. */
        for (size_t i = 0; i < len && !e->stop;) {
            if (!ex_is_word((unsigned char)t[i])) {
                i++;
                continue;
            }
            size_t a = i;
            while (i < len && ex_is_word((unsigned char)t[i])) i++;
            if (is_tool_word(e->ex, t + a, i - a) && emit_tool(e, t + a, i - a) < 0) return;
        }
        return;
    }
    size_t pos = 0, ms, me;
    int r;
    while ((r = ex_next_match(e->ex, e->ex->re_tools, t, len, &pos, e->md, &ms, &me)) == 1)
        if (emit_tool(e, t + ms, me - ms) < 0) return;
    ex_em_error(e, r);
}

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* The next path-like token at or after *pos: a maximal run of
 * [A-Za-z0-9_./~@+-] that holds a '.' or a '/'.  A byte scan rather than a
 * regex: the pattern has no literal to anchor on, and this runs over every
 * prompt.  Returns 1 with [*ms, *me), or 0 at the end. */
static int next_path_token(const char *t, size_t len, size_t *pos, size_t *ms, size_t *me)
{
    size_t i = *pos;
    while (i < len) {
        while (i < len && !ex_is_path_char((unsigned char)t[i])) i++;
        size_t a = i;
        int special = 0;
        for (; i < len && ex_is_path_char((unsigned char)t[i]); i++) special |= t[i] == '.' || t[i] == '/';
        if (special) {
            *ms = a;
            *me = *pos = i;
            return 1;
        }
    }
    *pos = len;
    return 0;
}

/* One path token t[ms, me): memory files reported now, source files
 * appended to pending.  0, or -1 to stop. */
static int file_token(ex_emitter *e, const char *t, size_t ms, size_t me, buf *np, buf *pending)
{
    const extractor *ex = e->ex;
    size_t n = me - ms;
    while (n > 0 && t[ms + n - 1] == '.') n--;
    if (n == 0 || n > EX_MAX_PATH) return 0;
    buf_reset(np);
    ex_norm_path(t + ms, n, e->ws, e->wslen, np);
    if (buf_failed(np)) return -1;
    int kind = ex_file_id(np->p, np->len, &e->id);
    int r = 0;
    if (kind == FILE_MEMORY && ex->memory_files) {
        if (ex_em_emit_scratch(e, CAT_FILE, 1) < 0) r = -1;
    } else if (kind == FILE_SOURCE && ex->source_files) {
        buf_append(pending, e->id.p, e->id.len + 1);
    }
    buf_reset(&e->id);
    return r;
}

static void emit_pending(ex_emitter *e, buf *pending)
{
    for (size_t i = 0; i < pending->len && !e->stop;) {
        size_t l = strlen(pending->p + i);
        ex_em_emit(e, pending->p + i, l, CAT_FILE, 1);
        i += l + 1;
    }
}

/* Memory files are reported as found, source files after them. */
static void pass_files(ex_emitter *e, const char *t, size_t len)
{
    buf np, pending;
    buf_init(&np);
    buf_init(&pending);
    size_t pos = 0, ms, me;
    int r;
    while ((r = next_path_token(t, len, &pos, &ms, &me)) == 1) {
        if (ms > 0 && t[ms - 1] == ':' && me - ms >= 2 && t[ms] == '/' && t[ms + 1] == '/') {
            while (pos < len && !is_space((unsigned char)t[pos])) pos++; /* a URL */
            continue;
        }
        if (file_token(e, t, ms, me, &np, &pending) != 0) break;
    }
    if (buf_failed(&np) || buf_failed(&pending)) r = CLARITY_ENOMEM;
    ex_em_error(e, r);
    emit_pending(e, &pending);
    buf_free(&np);
    buf_free(&pending);
}

static int is_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }

int ex_next_hyphen_name(const char *t, size_t len, size_t *pos, size_t *ms, size_t *me)
{
    size_t i = *pos;
    while (i < len) {
        const char *d = memchr(t + i, '-', len - i);
        if (!d) break;
        size_t h = (size_t)(d - t), a = h;
        /* t[i - 1] is never a lowercase letter that continues into t[i]
         * (i follows a match, a failed chain or a '-'), so the run stops at i */
        while (a > i && is_lower((unsigned char)t[a - 1])) a--;
        if (a == h) {
            i = h + 1;
            continue;
        }
        size_t j = h;
        int groups = 0;
        while (groups < 32 && j + 1 < len && t[j] == '-' && is_lower((unsigned char)t[j + 1])) {
            j++;
            while (j < len && is_lower((unsigned char)t[j])) j++;
            groups++;
        }
        unsigned char before = a > 0 ? (unsigned char)t[a - 1] : 0;
        int ok = groups > 0 && !(a > 0 && (ex_is_word(before) || before == '/' || before == '.' ||
                                           before == '-'));
        if (ok && j < len) {
            unsigned char c = (unsigned char)t[j];
            if (ex_is_word(c) || c == '/' || c == '-') ok = 0;
            else if (c == '.' && j + 1 < len && ex_is_word((unsigned char)t[j + 1])) ok = 0;
        }
        if (ok) {
            *ms = a;
            *me = *pos = j;
            return 1;
        }
        /* every later start inside this chain fails the look-behind */
        i = j > h ? j : h + 1;
    }
    *pos = len;
    return 0;
}

/* RE_PROJECT, compiled at its first use: only the reference passes run it
 * (the one-pass scan finds CamelCase words itself), so a process that never
 * takes that path never pays its compile and JIT.  Extractors are shared
 * by threads: the first compile installed wins.  NULL: out of memory. */
static const pcre2_code *project_re(const extractor *ex)
{
    extractor *m = (extractor *)ex; /* calloc'ed: only this field is set here */
    pcre2_code *re = atomic_load_explicit(&m->re_project, memory_order_acquire);
    if (re) return re;
    if (compile(RE_PROJECT, sizeof RE_PROJECT - 1, &re, NULL, "projects") != 0) return NULL;
    pcre2_code *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&m->re_project, &none, re, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        pcre2_code_free(re);
        re = none; /* another thread's */
    }
    return re;
}

static void pass_projects(ex_emitter *e, const char *t, size_t len)
{
    const pcre2_code *re = project_re(e->ex);
    if (!re) {
        ex_em_error(e, CLARITY_ENOMEM);
        return;
    }
    /* Two match streams (CamelCase, hyphenated), consumed in text order. */
    size_t pos[2] = {0, 0}, ms[2], me[2];
    int r[2];
    r[0] = ex_next_match(e->ex, re, t, len, &pos[0], e->md, &ms[0], &me[0]);
    r[1] = ex_next_hyphen_name(t, len, &pos[1], &ms[1], &me[1]);
    while (r[0] == 1 || r[1] == 1) {
        int k = r[0] == 1 && (r[1] != 1 || ms[0] <= ms[1]) ? 0 : 1;
        if (emit_project(e, t, ms[k], me[k]) < 0) return;
        if (k == 0) r[0] = ex_next_match(e->ex, re, t, len, &pos[0], e->md, &ms[0], &me[0]);
        else r[1] = ex_next_hyphen_name(t, len, &pos[1], &ms[1], &me[1]);
    }
    ex_em_error(e, r[0]);
}

void ex_pass_custom(ex_emitter *e, const char *t, size_t len, int pattern_id)
{
    for (size_t k = 0; k < e->ex->n_custom && !e->stop; k++) {
        size_t pos = 0, ms, me;
        int r;
        while ((r = ex_next_match(e->ex, e->ex->custom[k], t, len, &pos, e->md, &ms, &me)) == 1) {
            if (me - ms > EX_MAX_ID) continue;
            buf_puts(&e->id, e->ex->custom_name[k]);
            buf_putc(&e->id, ':');
            ex_append_lower(&e->id, t + ms, me - ms);
            if (ex_em_emit_scratch(e, CAT_CUSTOM, pattern_id) < 0) return;
        }
        ex_em_error(e, r);
    }
}

typedef struct kw_rank {
    uint32_t count, first;
    size_t idx;
} kw_rank;

static int kw_cmp(const void *pa, const void *pb)
{
    const kw_rank *a = pa, *b = pb;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

static void emit_keywords(ex_emitter *e, ex_sset *counts);

static void pass_keywords(ex_emitter *e, const char *t, size_t len)
{
    const extractor *ex = e->ex;
    if (ex->max_keywords <= 0) return;
    int oom = 0;
    for (size_t i = 0; i < len && !oom;) {
        if (!ex_is_word((unsigned char)t[i])) {
            i++;
            continue;
        }
        size_t a = i;
        while (i < len && ex_is_word((unsigned char)t[i])) i++;
        oom = count_keyword(ex, &e->counts, t + a, i - a) != 0;
    }
    if (oom) ex_em_error(e, CLARITY_ENOMEM);
    else emit_keywords(e, &e->counts);
}

/* ------------------------------------------------- mentions in one pass */

static int spans_add(ex_spans *s, size_t at, size_t n)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        ex_span *v = realloc(s->v, cap * sizeof *v);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (ex_span){(uint32_t)at, (uint32_t)n};
    return 0;
}

/* Whether the word is ([A-Z][a-z]+){2,33}: as a maximal run of word
 * characters it then has the \b on both sides RE_PROJECT asks for. */
static int is_camel(const char *w, size_t n)
{
    size_t i = 0;
    int groups = 0;
    while (i < n) {
        if (w[i] < 'A' || w[i] > 'Z') return 0;
        size_t a = ++i;
        while (i < n && w[i] >= 'a' && w[i] <= 'z') i++;
        if (i == a) return 0;
        groups++;
    }
    return groups >= 2 && groups <= 33;
}

/* One word t[a, a + n) of the scan: tool name, CamelCase name, keyword
 * (*kw as count_keyword_lanes gives it). */
static int scan_word(const extractor *ex, const char *t, size_t len, size_t a, size_t n, ex_spans *tools,
                     ex_spans *camel, ex_sset *counts, uint32_t *kw)
{
    *kw = 0;
    int camel_may = ex->projects && t[a] >= 'A' && t[a] <= 'Z';
    if (n > EX_MAX_WORD) /* never a keyword; the tool table has no such name */
        return camel_may && n <= EX_MAX_ID && is_camel(t + a, n) && spans_add(camel, a, n) != 0 ? -1 : 0;
    int tool_may = ex->tool_names && ex->tool_words && tool_may_be(ex, t + a, n);
    int kw_may = keyword_len(ex, n);
    /* a short word in lower case ("the", "is", "of"), most of a prompt's
     * first words: none of the three, and no lanes to load */
    if (!tool_may && !camel_may && !kw_may) return 0;
    /* the word's lanes, loaded once: every hash below comes from them */
    ex_lanes raw, low;
    ex_word_lanes(t, len, a, n, &raw, &low);
    if (tool_may && is_tool_word_h(ex, t + a, n, (uint32_t)ex_lanes_mix(EX_TOOL_SEED, &raw, n)) &&
        spans_add(tools, a, n) != 0)
        return -1;
    if (camel_may && is_camel(t + a, n) && spans_add(camel, a, n) != 0) return -1;
    if (kw_may && count_keyword_lanes(ex, counts, t + a, n, &low, kw) != 0) return -1;
    return 0;
}

/* The word passes of mentions in one walk over the text, classified 64
 * bytes at a time (classify.h): the tool names (word-table case),
 * CamelCase project names and keyword counts of each word, and the path
 * tokens (maximal runs of path bytes holding a '.' or a '/'), each kept in
 * text order for the emission below. */
/* What block_paths reads of a block's classes and the next block's, as
 * values: a scan that passed its classes by address had to keep them in
 * memory, and copied them there for every block. */
typedef struct ex_block_paths {
    uint64_t special, path;           /* the block's '.' and '/' bytes, its path bytes */
    uint64_t next_special, next_path; /* the same of the next block */
} ex_block_paths;

/* The run of ones x starts with at bit 0 (the next block's leading path
 * bytes, for its path bits). */
static inline uint64_t low_run(uint64_t x) { return x & ~(x + 1); }

/* The path tokens (maximal runs of path bytes) that start in the block at
 * base and hold a '.' or a '/', added to paths in text order.  Led by the
 * block's few '.' and '/' bytes rather than by every token start: a run
 * holding one starts at the last run start at or before it, or, when
 * there is none, began in an earlier block, which dealt with it (runs are
 * contiguous, so no gap can lie between that start and the byte).  A run
 * that starts here and runs past the block is looked at to its end, as
 * the earlier block did for this one. */
static int block_paths_at(const char *t, size_t len, size_t base, ex_block_paths b, uint64_t ts, ex_spans *paths)
{
    uint64_t special = b.special, sp = special;
    while (sp) {
        unsigned k = (unsigned)__builtin_ctzll(sp);
        uint64_t before = ts & (k == 63 ? ~(uint64_t)0 : ((uint64_t)2 << k) - 1); /* starts at 0..k */
        if (!before) { /* its run began in an earlier block */
            sp &= sp - 1;
            continue;
        }
        unsigned s = 63u - (unsigned)__builtin_clzll(before);
        uint64_t rest = ~b.path >> s;
        if (!rest) break; /* the run runs past the block: below */
        unsigned e = s + (unsigned)__builtin_ctzll(rest);
        if (spans_add(paths, base + s, e - s) != 0) return -1;
        sp &= e >= 64 ? 0 : ~(uint64_t)0 << e;
    }
    /* the run holding the block's last byte, when it starts in the block:
     * its end from the next block's bits (nx), or, when it runs past that
     * block too, one byte at a time */
    if (!(b.path >> 63) || !ts) return 0;
    unsigned s = 63u - (unsigned)__builtin_clzll(ts);
    int has = (special >> s) != 0;
    size_t e = base + 64;
    uint64_t lead = low_run(b.next_path);
    if (lead != ~(uint64_t)0) {
        e += (size_t)__builtin_ctzll(~lead);
        has |= (b.next_special & lead) != 0;
    } else {
        for (; e < len && ex_is_path_char((unsigned char)t[e]); e++) has |= t[e] == '.' || t[e] == '/';
    }
    return has && spans_add(paths, base + s, e - (base + s)) != 0 ? -1 : 0;
}

/* block_paths_at where the block may hold a path token's start: a block
 * with no '.' or '/' only when its last run of path bytes starts in it and
 * runs into the next block, finding one in that block's leading path
 * bytes (or running through the whole block: maybe further on).  Most
 * blocks of prose have neither, and the scan calls no function for them. */
static inline __attribute__((always_inline)) int block_paths(const char *t, size_t len, size_t base,
                                                             ex_block_paths b, uint64_t ts, ex_spans *paths)
{
    uint64_t lead = low_run(b.next_path);
    if (!b.special && !((b.path >> 63) && ts && ((b.next_special & lead) || lead == ~(uint64_t)0))) return 0;
    return block_paths_at(t, len, base, b, ts, paths);
}

/* The starts among `starts` (of the word runs of a block, whose word
 * bits are `word`, the next block's `next`) of words of n bytes for the
 * bits n (1 to 3) of lens: the lengths at least 2, 3 and 4 from the bits
 * one, two and three bytes on.  The usual lens (words of 1 and 2 bytes:
 * the defaults) take one mask. */
static inline __attribute__((always_inline)) uint64_t short_words(uint64_t word, uint64_t next, uint64_t starts,
                                                                  unsigned lens)
{
    uint64_t ge2 = starts & (word >> 1 | next << 63);
    uint64_t ge3 = ge2 & (word >> 2 | next << 62);
    if (lens == 6) return starts & ~ge3;
    uint64_t ge4 = ge3 & (word >> 3 | next << 61);
    uint64_t out = 0;
    if (lens & 2) out |= starts & ~ge2;
    if (lens & 4) out |= ge2 & ~ge3;
    if (lens & 8) out |= ge3 & ~ge4;
    return out;
}

static inline __attribute__((always_inline)) int scan_words_body(const extractor *ex, const char *t, size_t len,
                                                                 ex_spans *tools, ex_spans *camel, ex_sset *counts,
                                                                 ex_spans *paths, ex_memo *memo,
                                                                 ex_classify_fn *classify, ex_memo_hits_fn *memo_hits)
{
    int path_on = ex->memory_files || ex->source_files;
    uint64_t carry_w = 0, carry_p = 0; /* bit 0: the byte before the block is a word / path byte */
    /* each block classified one ahead (ex_classify_at) */
    ex_cls c, nx;
    ex_classify_at(classify, t, len, 0, &c);
    for (size_t base = 0; base < len; base += 64, c = nx) {
        ex_classify_at(classify, t, len, base + 64, &nx);
        uint64_t ws = c.word & ~((c.word << 1) | carry_w), ts = c.path & ~((c.path << 1) | carry_p);
        carry_w = c.word >> 63;
        carry_p = c.path >> 63;
        uint64_t memo_ok = ex_memo_room(memo, base, len);
        if (path_on &&
            block_paths(t, len, base, (ex_block_paths){c.dot | c.slash, c.path, nx.dot | nx.slash, nx.path}, ts,
                        paths) != 0)
            return -1;
        if (ex->short_skip) ws &= ~short_words(c.word, nx.word, ws, ex->short_skip);
        /* repeats the memo has decided are counted first; the loop looks at
         * the other words */
        ws &= ~memo_hits(memo, t + base, ws & memo_ok, c.word, nx.word, 1);
        while (ws) {
            unsigned bit = (unsigned)__builtin_ctzll(ws);
            ws &= ws - 1;
            size_t p = base + bit;
            size_t e = ex_word_end(t, len, p, bit, &c, &nx);
            uint32_t kw;
            if ((memo_ok >> bit & 1) && e - p <= EX_MEMO_MAX) {
                uint64_t key[2];
                size_t slot = ex_memo_slot(memo, t, p, e - p, key);
                if (ex_memo_has(memo, slot, key)) { /* decided earlier in this block */
                    memo->cnt[slot]++;
                    continue;
                }
                if (scan_word(ex, t, len, p, e - p, tools, camel, counts, &kw) != 0) return -1;
                ex_memo_flush_slot(memo, slot, counts); /* the word the slot held */
                ex_memo_put(memo, slot, key);
                memo->val[slot] = kw;
            } else if (scan_word(ex, t, len, p, e - p, tools, camel, counts, &kw) != 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* The scan, then the repeats its memo's slots still count added to their
 * keywords: the slots' counts are all zero again for the next call, even
 * when the scan stopped. */
static inline __attribute__((always_inline)) int scan_words_with(const extractor *ex, const char *t, size_t len,
                                                                 ex_spans *tools, ex_spans *camel, ex_sset *counts,
                                                                 ex_spans *paths, ex_memo *memo,
                                                                 ex_classify_fn *classify,
                                                                 ex_memo_hits_fn *memo_hits)
{
    int rc = scan_words_body(ex, t, len, tools, camel, counts, paths, memo, classify, memo_hits);
    ex_memo_flush(memo, counts);
    return rc;
}

/* Compiled for each instruction set, with its classifier inlined. */
static int scan_words_sse(const extractor *ex, const char *t, size_t len, ex_spans *tools, ex_spans *camel,
                          ex_sset *counts, ex_spans *paths, ex_memo *memo)
{
    return scan_words_with(ex, t, len, tools, camel, counts, paths, memo, ex_classify, ex_memo_hits);
}

#if EX_AVX2
__attribute__((target("avx2,bmi,bmi2"))) static int scan_words_avx2(const extractor *ex, const char *t, size_t len,
                                                                    ex_spans *tools, ex_spans *camel,
                                                                    ex_sset *counts, ex_spans *paths, ex_memo *memo)
{
    return scan_words_with(ex, t, len, tools, camel, counts, paths, memo, ex_classify_avx2, ex_memo_hits_bmi2);
}
#endif

/* The word passes of mentions in one walk over the text (scan_words_with). */
static int scan_words(const extractor *ex, const char *t, size_t len, ex_spans *tools, ex_spans *camel,
                      ex_sset *counts, ex_spans *paths, ex_memo *memo)
{
#if EX_AVX2
    if (ex->avx2) return scan_words_avx2(ex, t, len, tools, camel, counts, paths, memo);
#endif
    return scan_words_sse(ex, t, len, tools, camel, counts, paths, memo);
}

/* Puts the k best of q[0, n) (kw_cmp order) first, in order, keeping q a
 * permutation; every entry past k is no better than q[k - 1].  O(n) for a
 * prompt's many words and its few keywords, where a sort is O(n log n). */
static void kw_top(kw_rank *q, size_t n, size_t k)
{
    qsort(q, k, sizeof *q, kw_cmp);
    for (size_t i = k; i < n; i++) {
        if (kw_cmp(&q[i], &q[k - 1]) >= 0) continue;
        kw_rank in = q[i];
        q[i] = q[k - 1]; /* the k-th leaves the top for the slot in came from */
        size_t j = k - 1;
        for (; j > 0 && kw_cmp(&in, &q[j - 1]) < 0; j--) q[j] = q[j - 1];
        q[j] = in;
    }
}

/* Emits the keywords of counts: seen 3 times or 12 bytes long, most
 * frequent first, then first seen; at most max_keywords.  Only the best
 * max_keywords are ordered, unless some of them emit nothing (seen as
 * another id, excluded): then the rest are sorted and the walk goes on. */
static void emit_keywords(ex_emitter *e, ex_sset *counts)
{
    size_t nq = 0, max = (size_t)e->ex->max_keywords;
    kw_rank *q = malloc((counts->n ? counts->n : 1) * sizeof *q);
    if (!q) {
        ex_em_error(e, CLARITY_ENOMEM);
        return;
    }
    for (size_t i = 0; i < counts->n; i++) {
        const ex_sset_ent *en = &counts->ents[i];
        if (en->count >= 3 || en->len >= 12) q[nq++] = (kw_rank){en->count, en->first, i};
    }
    size_t ordered = nq > max && max > 0 ? max : nq;
    if (ordered < nq) kw_top(q, nq, ordered);
    else qsort(q, nq, sizeof *q, kw_cmp);
    size_t kept = 0;
    for (size_t i = 0; i < nq && kept < max; i++) {
        if (i == ordered) { /* the top ran out: order the rest */
            qsort(q + i, nq - i, sizeof *q, kw_cmp);
            ordered = nq;
        }
        buf_puts(&e->id, "keyword:");
        buf_append(&e->id, ex_sset_key(counts, q[i].idx), counts->ents[q[i].idx].len);
        int r = ex_em_emit_scratch(e, CAT_KEYWORD, 0);
        if (r < 0) break;
        kept += (size_t)r;
    }
    free(q);
}

/* Whether the path token p[0, n) may name a file.  One whose last
 * component is a name (it ends in neither '/' nor '.', file_token's trim)
 * keeps that name through normalization, and a file needs an md or code
 * extension on it: without one it is no file and is not normalized (most
 * of a prompt's dotted tokens: np.array, e.g., 1.2.3).  pass_files, the
 * reference, normalizes every token. */
static int may_be_file(const char *p, size_t n)
{
    while (n > 0 && p[n - 1] == '.') n--;
    return n == 0 || p[n - 1] == '/' || ex_has_file_ext(p, n);
}

/* Files: the path tokens the scan found, as pass_files takes them (a URL
 * hides the tokens up to the next white space). */
static void emit_files(ex_emitter *e, const char *t, size_t len, const ex_spans *paths)
{
    buf np, pending;
    buf_init(&np);
    buf_init(&pending);
    size_t skip = 0;
    int r = 0;
    for (size_t k = 0; k < paths->n && r == 0; k++) {
        size_t ms = paths->v[k].at, me = ms + paths->v[k].n;
        if (ms < skip) continue;
        if (ms > 0 && t[ms - 1] == ':' && me - ms >= 2 && t[ms] == '/' && t[ms + 1] == '/') {
            for (skip = me; skip < len && !is_space((unsigned char)t[skip]);) skip++; /* a URL */
            continue;
        }
        /* a token's ids depend only on its bytes: a repeat adds nothing
         * (prompts name the files they are about again and again); a set
         * that cannot take it (full, no memory) only stops deduplicating.
         * The extension first: it takes out more than the set would (a
         * prompt's dotted words are mostly new; a file is repeated). */
        if (may_be_file(t + ms, me - ms) && ex_sset_add(&e->tokens, t + ms, me - ms) != 0)
            r = file_token(e, t, ms, me, &np, &pending);
    }
    if (buf_failed(&np) || buf_failed(&pending)) ex_em_error(e, CLARITY_ENOMEM);
    emit_pending(e, &pending);
    buf_free(&np);
    buf_free(&pending);
}

/* Projects: the CamelCase words and the hyphenated names, in text order. */
static void emit_projects(ex_emitter *e, const char *t, size_t len, const ex_spans *camel)
{
    size_t pos = 0, ms, me, k = 0;
    int h = ex_next_hyphen_name(t, len, &pos, &ms, &me);
    while (k < camel->n || h == 1) {
        int take_camel = k < camel->n && (h != 1 || camel->v[k].at <= ms);
        size_t a = take_camel ? camel->v[k].at : ms, b = take_camel ? a + camel->v[k].n : me;
        if (emit_project(e, t, a, b) < 0) return;
        if (take_camel) k++;
        else h = ex_next_hyphen_name(t, len, &pos, &ms, &me);
    }
}

int extract_mentions(const extractor *ex, const char *text, size_t len, const char *workspace,
                     extract_cb cb, void *ud)
{
    if (!ex || !cb) return CLARITY_ERR;
    if (!text) len = 0;
    /* tool names that are not plain words need their regex: the passes */
    if (ex->tool_names && ex->re_tools && !ex->tool_words)
        return extract_mentions_reference(ex, text, len, workspace, cb, ud);
    ex_emitter *e = ex_em_open(ex, workspace, cb, ud, 1);
    if (!e) return CLARITY_ENOMEM;
    ex_memo memo;
    ex_memo_init(&memo, len, 1, &e->memo);
    if (scan_words(ex, text, len, &e->tools, &e->camel, &e->counts, &e->paths, &memo) != 0) {
        ex_em_error(e, CLARITY_ENOMEM);
    } else {
        /* the order of the passes: tools, files, projects, custom, keywords */
        for (size_t i = 0; i < e->tools.n && !e->stop; i++)
            emit_tool(e, text + e->tools.v[i].at, e->tools.v[i].n);
        if (!e->stop && (ex->memory_files || ex->source_files)) emit_files(e, text, len, &e->paths);
        if (!e->stop && ex->projects) emit_projects(e, text, len, &e->camel);
        if (!e->stop) ex_pass_custom(e, text, len, 1);
        if (!e->stop && ex->keywords && ex->max_keywords > 0) emit_keywords(e, &e->counts);
    }
    return ex_em_close(e);
}

/* The passes one by one, with PCRE2 for CamelCase: what extract_mentions
 * gave before its one-pass scan, kept as the reference the differential
 * fuzzer (fuzz_mentions) compares it with, and used when a tool name is
 * not a plain word. */
int extract_mentions_reference(const extractor *ex, const char *text, size_t len, const char *workspace,
                               extract_cb cb, void *ud)
{
    if (!ex || !cb) return CLARITY_ERR;
    if (!text) len = 0;
    ex_emitter *e = ex_em_open(ex, workspace, cb, ud, 1);
    if (!e) return CLARITY_ENOMEM;
    if (ex->tool_names && (ex->re_tools || ex->tool_words)) pass_tools(e, text, len);
    if (!e->stop && (ex->memory_files || ex->source_files)) pass_files(e, text, len);
    if (!e->stop && ex->projects) pass_projects(e, text, len);
    if (!e->stop) ex_pass_custom(e, text, len, 1);
    if (!e->stop && ex->keywords) pass_keywords(e, text, len);
    return ex_em_close(e);
}
