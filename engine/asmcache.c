/* asmcache.c: what each host message carries, computed once per id, and
 * the stubs in force, persisted with the session (see assemble.h). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "../util/tokens.h"
#include "asm_impl.h"

#undef uthash_nonfatal_oom
#define uthash_nonfatal_oom(obj) (oom = 1)

struct asm_keep {
    pcre2_code **re;
    size_t n;
};

uint64_t asm_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

int asm_keep_new(const char *const *patterns, size_t n, asm_keep **out, char **err)
{
    *out = NULL;
    if (n == 0) return CLARITY_OK;
    asm_keep *k = calloc(1, sizeof *k);
    if (!k || !(k->re = calloc(n, sizeof *k->re))) {
        free(k);
        return CLARITY_ENOMEM;
    }
    for (size_t i = 0; i < n; i++, k->n++) {
        int code;
        PCRE2_SIZE off;
        k->re[i] = pcre2_compile((PCRE2_SPTR)patterns[i], PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C, &code,
                                 &off, NULL);
        if (!k->re[i]) {
            *err = util_format("assemble.keep[%zu]: does not compile (PCRE2 error %d)", i, code);
            asm_keep_free(k);
            return CLARITY_ECONFIG;
        }
        pcre2_jit_compile(k->re[i], PCRE2_JIT_COMPLETE); /* interpreted when JIT is unavailable */
    }
    *out = k;
    return CLARITY_OK;
}

void asm_keep_free(asm_keep *k)
{
    if (!k) return;
    for (size_t i = 0; i < k->n; i++) pcre2_code_free(k->re[i]);
    free(k->re);
    free(k);
}

/* Whether text matches one of the keep patterns (match limits bound a
 * pathological pattern; a failed match keeps nothing). */
static int keep_match(const asm_keep *k, const char *text, size_t len)
{
    if (!k || !text || !len) return 0;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    int hit = 0;
    if (md && mc) {
        pcre2_set_match_limit(mc, 100000);
        for (size_t i = 0; i < k->n && !hit; i++)
            hit = pcre2_match(k->re[i], (PCRE2_SPTR)text, len, 0, 0, md, mc) >= 0;
    }
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
    return hit;
}

/* ---- candidates ---------------------------------------------------------- */

typedef struct cand_ctx {
    uint64_t *v;
    size_t n, cap;
    char *file; /* the first file a tool call names */
    int oom;
} cand_ctx;

static int on_cand(void *ud, const char *id, int category)
{
    cand_ctx *c = ud;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        uint64_t *v = realloc(c->v, cap * sizeof *v);
        if (!v) {
            c->oom = 1;
            return 1;
        }
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = asm_hash(id, strlen(id));
    return 0;
}

static int on_file(void *ud, const char *id, int category)
{
    cand_ctx *c = ud;
    if (!c->file && !(c->file = strdup(id))) c->oom = 1;
    return on_cand(ud, id, category);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int asm_has(const amsg *m, uint64_t h)
{
    size_t lo = 0, hi = m->n_cands;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->cands[mid] < h) lo = mid + 1;
        else hi = mid;
    }
    return lo < m->n_cands && m->cands[lo] == h;
}

/* Whether a message changed under its id: its role, length, the ends of
 * its text, its arguments and tool.  Hosts keep ids stable for a content;
 * sampling keeps a call on a long transcript from re-reading every byte. */
static uint64_t fingerprint(const clarity_ctx_message *m)
{
    uint64_t h = asm_hash(m->role, strlen(m->role));
    size_t n = m->text ? m->text_len : 0, k = n < 256 ? n : 256;
    h ^= (uint64_t)n * 0x9E3779B97F4A7C15ULL;
    if (n) h ^= asm_hash(m->text, k) * 31 ^ asm_hash(m->text + n - k, k) * 37;
    if (m->tool_args_json) h ^= asm_hash(m->tool_args_json, strlen(m->tool_args_json)) * 131;
    if (m->tool_name) h ^= asm_hash(m->tool_name, strlen(m->tool_name)) * 1031;
    return h;
}

/* Reads a message: tokens, candidates, its tool call's file, keep. */
static int read_message(engine *e, session *s, amsg *a, const clarity_ctx_message *m)
{
    cand_ctx c = {0};
    const char *text = m->text ? m->text : "";
    size_t len = m->text ? m->text_len : 0;
    if (len) extract_candidates(e->ex, text, len, s->workspace, on_cand, &c);
    if (m->tool_args_json) extract_tool_call(e->ex, m->tool_args_json, s->workspace, NULL, on_file, on_cand, &c);
    if (c.oom) {
        free(c.v);
        free(c.file);
        return -1;
    }
    if (c.n > 1) qsort(c.v, c.n, sizeof *c.v, cmp_u64);
    size_t w = 0;
    for (size_t i = 0; i < c.n; i++)
        if (w == 0 || c.v[w - 1] != c.v[i]) c.v[w++] = c.v[i];
    free(a->cands);
    free(a->file);
    a->cands = c.v;
    a->n_cands = w;
    a->file = c.file;
    a->arg_tokens = m->tool_args_json ? util_estimate_tokens(m->tool_args_json, strlen(m->tool_args_json)) : 0;
    a->tokens = m->tokens >= 0 ? m->tokens : util_estimate_tokens(text, len) + a->arg_tokens;
    a->keep = keep_match(e->asm_keep, text, len) ||
              (m->tool_args_json && keep_match(e->asm_keep, m->tool_args_json, strlen(m->tool_args_json)));
    a->fp = fingerprint(m);
    return 0;
}

amsg *asm_message(engine *e, session *s, const clarity_ctx_message *m, uint64_t gen, int *dup)
{
    asm_state *st = s->asm_;
    amsg *a;
    HASH_FIND_STR(st->msgs, m->id, a);
    *dup = a && a->seen == gen;
    if (*dup) return NULL;
    if (a && a->fp == fingerprint(m) && (m->tokens < 0 || a->tokens == m->tokens)) {
        a->seen = gen;
        return a;
    }
    if (!a) {
        int oom = 0;
        a = calloc(1, sizeof *a);
        if (!a || !(a->id = strdup(m->id))) {
            free(a);
            return NULL;
        }
        HASH_ADD_KEYPTR(hh, st->msgs, a->id, strlen(a->id), a);
        if (oom) {
            free(a->id);
            free(a);
            return NULL;
        }
    }
    if (read_message(e, s, a, m) != 0) return NULL;
    a->seen = gen;
    return a;
}

void asm_stub_free(astub *t)
{
    free(t->id);
    free(t->item);
    free(t->text);
    free(t);
}

void asm_forget_unseen(asm_state *st)
{
    amsg *a, *tmp;
    HASH_ITER(hh, st->msgs, a, tmp) {
        if (a->seen == st->gen) continue;
        astub *t;
        HASH_FIND_STR(st->stubs, a->id, t);
        if (t) {
            HASH_DEL(st->stubs, t);
            asm_stub_free(t);
        }
        HASH_DEL(st->msgs, a);
        free(a->id);
        free(a->cands);
        free(a->file);
        free(a);
    }
}

void asm_state_free(asm_state *st)
{
    if (!st) return;
    st->gen++;
    asm_forget_unseen(st); /* every message is unseen now */
    astub *t, *tmp;
    HASH_ITER(hh, st->stubs, t, tmp) {
        HASH_DEL(st->stubs, t);
        asm_stub_free(t);
    }
    buf_free(&st->last);
    free(st);
}

/* ---- persistence ----------------------------------------------------------- */

static int load_stub(asm_state *st, json_t *o)
{
    const char *id = json_string_value(json_object_get(o, "id"));
    const char *text = json_string_value(json_object_get(o, "text"));
    const char *about = json_string_value(json_object_get(o, "item"));
    json_t *turn = json_object_get(o, "turn"), *tok = json_object_get(o, "tokens");
    if (!id || !text || !json_is_integer(turn) || !json_is_integer(tok) ||
        json_integer_value(turn) < 0 || json_integer_value(turn) > TRACKER_TURN_MAX ||
        json_integer_value(tok) < 0 || json_integer_value(tok) > TRACKER_COUNT_MAX)
        return -1; /* a bad row is left out: its message is shown verbatim */
    astub *t = calloc(1, sizeof *t);
    if (!t) return -1;
    t->id = strdup(id);
    t->text = strdup(text);
    t->item = about ? strdup(about) : NULL;
    t->turn = json_integer_value(turn);
    json_t *men = json_object_get(o, "m");
    t->mentions = json_is_integer(men) && json_integer_value(men) >= -1 ? json_integer_value(men) : -1;
    t->tokens = json_integer_value(tok);
    t->score = json_number_value(json_object_get(o, "score"));
    t->drop = json_is_true(json_object_get(o, "drop"));
    const char *fp = json_string_value(json_object_get(o, "fp"));
    t->fp = fp ? strtoull(fp, NULL, 16) : 0;
    int oom = 0;
    if (t->id && t->text && (!about || t->item)) HASH_ADD_KEYPTR(hh, st->stubs, t->id, strlen(t->id), t);
    if (!t->id || !t->text || (about && !t->item) || oom) {
        asm_stub_free(t);
        return -1;
    }
    return 0;
}

asm_state *asm_state_of(engine *e, session *s)
{
    if (!s->asm_) {
        s->asm_ = calloc(1, sizeof *s->asm_);
        if (!s->asm_) return NULL;
        buf_init(&s->asm_->last);
    }
    asm_state *st = s->asm_;
    if (st->loaded) return st;
    st->loaded = 1;
    char *val = NULL;
    size_t len = 0;
    if (store_get(e->st, s->ns, "asm", &val, &len) != CLARITY_OK) return st;
    json_t *root = json_loadb(val, len, 0, NULL);
    free(val);
    json_t *b = json_object_get(root, "batch");
    if (json_is_integer(b) && json_integer_value(b) >= 0) st->batch = json_integer_value(b);
    size_t i;
    json_t *o;
    size_t bad = 0;
    json_array_foreach(json_object_get(root, "stubs"), i, o) bad += load_stub(st, o) != 0;
    if (bad)
        engine_log(e, CLARITY_LOG_ERROR, "clarity: session %s: %zu stored stub(s) refused", s->id, bad);
    json_decref(root);
    return st;
}

int asm_save(engine *e, session *s)
{
    asm_state *st = s->asm_;
    buf b;
    buf_init(&b);
    buf_printf(&b, "{\"batch\":%lld,\"stubs\":[", (long long)st->batch);
    int first = 1;
    for (astub *t = st->stubs; t; t = t->hh.next) {
        buf_puts(&b, first ? "{\"id\":" : ",{\"id\":");
        first = 0;
        buf_json_str(&b, t->id, strlen(t->id));
        if (t->item) {
            buf_puts(&b, ",\"item\":");
            buf_json_str(&b, t->item, strlen(t->item));
        }
        buf_printf(&b, ",\"turn\":%lld,\"m\":%lld,\"tokens\":%lld,\"score\":%.3f,\"drop\":%s,"
                       "\"fp\":\"%016llx\",\"text\":",
                   (long long)t->turn, (long long)t->mentions, (long long)t->tokens, t->score,
                   t->drop ? "true" : "false", (unsigned long long)t->fp);
        buf_json_str(&b, t->text, strlen(t->text));
        buf_putc(&b, '}');
    }
    buf_puts(&b, "]}");
    int rc = buf_failed(&b) ? CLARITY_ENOMEM : store_put(e->st, s->ns, "asm", b.p, b.len);
    buf_free(&b);
    return rc;
}
