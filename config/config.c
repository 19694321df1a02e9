/* config.c: defaults, strict JSON parsing and validation, JSON dump.
 *
 * Parsing works on a private copy that starts from the defaults and is only
 * handed to the caller once every key has been validated, so a refused
 * config never leaves a half-applied struct behind.  Every message names the
 * full dotted key ("extraction.customPatterns[1].pattern") and the problem.
 */
#include "config.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "../include/clarity.h"
#include "../tracker/tracker.h"
#include "../util/buf.h"

_Static_assert(TIER__COUNT == 4, "pruning.tier_mult has one slot per enum item_tier");

/* ---------------------------------------------------------------- defaults */

static const char *const default_tools[] = {
    "read",    "write", "edit",      "exec",  "browser", "web_search",    "web_fetch",
    "memory_search", "recall", "reflect", "tts",  "subagents", "process", "nodes",
    "message", "canvas", "Read",    "Edit",  "Write",   "Bash",          "Grep",
    "Glob",
};

void config_free(clarity_config *cfg)
{
    if (!cfg) return;
    for (size_t i = 0; i < cfg->extraction.n_tools && i < CFG_MAX_TOOLS; i++)
        free(cfg->extraction.tools[i]);
    for (size_t i = 0; i < cfg->extraction.n_custom && i < CFG_MAX_PATTERNS; i++) {
        free(cfg->extraction.custom[i].name);
        free(cfg->extraction.custom[i].pattern);
    }
    for (size_t i = 0; i < cfg->extraction.n_exclude && i < CFG_MAX_PATTERNS; i++)
        free(cfg->extraction.exclude[i]);
    free(cfg->storage.path);
    memset(cfg, 0, sizeof *cfg);
}

int config_defaults(clarity_config *cfg)
{
    if (!cfg) return -1;
    memset(cfg, 0, sizeof *cfg);
    cfg->enabled = 1;
    cfg->strict_mode = 0;

    cfg->scoring.half_life = 5;
    cfg->scoring.recency_window = 3;
    cfg->scoring.recency_bonus = 20;
    cfg->scoring.reference_weight = 15;
    cfg->scoring.frequency_scale = 10;
    cfg->scoring.anchor_bonus = 100;

    cfg->pruning.prune_threshold = 8;
    cfg->pruning.strict_preserve_threshold = 25;
    cfg->pruning.max_items_per_category = 20;
    cfg->pruning.target_context_items = 30;
    cfg->pruning.max_context_items = 50;
    cfg->pruning.min_mentions_preserve = 3;
    cfg->pruning.tier_mult[TIER_ESSENTIAL] = 2.0;
    cfg->pruning.tier_mult[TIER_HIGH] = 1.5;
    cfg->pruning.tier_mult[TIER_NORMAL] = 1.0;
    cfg->pruning.tier_mult[TIER_LOW] = 0.8;

    for (size_t i = 0; i < sizeof default_tools / sizeof default_tools[0]; i++) {
        char *s = util_strdup(default_tools[i]);
        if (!s) {
            config_free(cfg);
            return -1;
        }
        cfg->extraction.tools[cfg->extraction.n_tools++] = s;
    }
    cfg->extraction.min_word_length = 5;
    cfg->extraction.max_keywords_per_message = 8;
    cfg->extraction.projects = 1;
    cfg->extraction.tool_names = 1;
    cfg->extraction.memory_files = 1;
    cfg->extraction.source_files = 1;
    cfg->extraction.keywords = 1;

    cfg->context.max_chars = 1500;
    cfg->context.max_items = 10;
    cfg->context.min_score = 1;
    cfg->context.high_score = 40;
    cfg->context.mid_score = 15;

    cfg->storage.backend = CFG_STORE_AUTO;
    cfg->storage.path = NULL;
    cfg->storage.max_resident_sessions = 256;

    cfg->limits.max_tracked_items = 5000;
    cfg->limits.max_prompt_bytes = (size_t)64 * 1024 * 1024;
    cfg->limits.history_length = 16;

    cfg->prediction.enabled = 1;
    cfg->prediction.weight = 30;
    cfg->prediction.max_targets = 3;
    cfg->prediction.min_score = 0.25;
    cfg->prediction.max_files = 20;
    cfg->prediction.auto_refresh = 0;
    return 0;
}

/* ----------------------------------------------------------------- helpers */

/* Shortest %.Ng (N = 15..17) that reads back as exactly v. */
static int real_precision(double v)
{
    char tmp[64];
    for (int p = 15; p < 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*g", p, v);
        if (strtod(tmp, NULL) == v) return p;
    }
    return 17;
}

static void put_num(buf *b, double v) { buf_printf(b, "%.*g", real_precision(v), v); }

/* Appends user text for a message: control bytes become '?', long text is
 * cut (on a UTF-8 boundary) with "...".  ascii_only also masks bytes >= 0x80
 * (for text that may hold invalid UTF-8, such as jansson's error text). */
static void put_text(buf *b, const char *s, size_t n, int ascii_only)
{
    const size_t max = 64;
    int cut = 0;
    if (n > max) {
        n = ascii_only ? max : util_utf8_cut(s, max);
        cut = 1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        buf_putc(b, (c < 0x20 || c == 0x7f || (ascii_only && c >= 0x80)) ? '?' : (char)c);
    }
    if (cut) buf_puts(b, "...");
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER:
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "unknown";
}

typedef struct pctx {
    clarity_config *cfg;
    char *err; /* first message, malloc()ed */
    int rc;    /* CLARITY_OK until the first failure */
} pctx;

/* Records the first failure: "<path>: <fmt...>".  Returns rc. */
static int failb(pctx *p, int rc, buf *msg)
{
    if (p->rc == CLARITY_OK) {
        p->rc = buf_failed(msg) ? CLARITY_ENOMEM : rc;
        p->err = buf_steal(msg, NULL);
    }
    buf_free(msg);
    return p->rc;
}

static int fail(pctx *p, int rc, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(pctx *p, int rc, const char *path, const char *fmt, ...)
{
    buf m;
    buf_init(&m);
    buf_puts(&m, path);
    buf_puts(&m, ": ");
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&m, fmt, ap);
    va_end(ap);
    return failb(p, rc, &m);
}

static int fail_oom(pctx *p) { return fail(p, CLARITY_ENOMEM, "config", "out of memory"); }

static int fail_type(pctx *p, const char *path, const char *expected, const json_t *v)
{
    return fail(p, CLARITY_ECONFIG, path, "expected %s, got %s", expected, type_name(v));
}

static int fail_unknown(pctx *p, const char *prefix, const char *key)
{
    buf m;
    buf_init(&m);
    if (prefix && *prefix) {
        buf_puts(&m, prefix);
        buf_putc(&m, '.');
    }
    put_text(&m, key, strlen(key), 0);
    buf_puts(&m, ": unknown key");
    return failb(p, CLARITY_ECONFIG, &m);
}

/* Joins prefix and key into out ("scoring" + "halfLife"). */
static const char *join(char *out, size_t n, const char *prefix, const char *key)
{
    if (prefix && *prefix) snprintf(out, n, "%s.%s", prefix, key);
    else snprintf(out, n, "%s", key);
    return out;
}

/* ------------------------------------------------------ scalar field table */

enum fkind { F_BOOL, F_INT, F_SIZE, F_NUM, F_NUM_INT };

typedef struct field {
    const char *key;
    int kind;
    size_t off;
    double lo, hi;
    int lo_excl; /* value must be > lo rather than >= lo */
    int hi_open; /* hi is only the storage bound; say "<= hi" not "between" */
} field;

#define CO(m) offsetof(clarity_config, m)
#define NOHI HUGE_VAL

/* Checks v against f's range; returns 0 or fails. */
static int check_range(pctx *p, const char *path, const field *f, double v)
{
    int bad_lo = f->lo_excl ? !(v > f->lo) : !(v >= f->lo);
    int bad_hi = !(v <= f->hi);
    if (!bad_lo && !bad_hi) return 0;
    buf m;
    buf_init(&m);
    buf_puts(&m, path);
    buf_puts(&m, ": must be ");
    if (f->hi != NOHI && !f->hi_open) {
        buf_puts(&m, "between ");
        put_num(&m, f->lo);
        buf_puts(&m, " and ");
        put_num(&m, f->hi);
    } else if (bad_lo) {
        buf_puts(&m, f->lo_excl ? "> " : ">= ");
        put_num(&m, f->lo);
    } else {
        buf_puts(&m, "<= ");
        put_num(&m, f->hi);
    }
    buf_puts(&m, ", got ");
    put_num(&m, v);
    return failb(p, CLARITY_ECONFIG, &m);
}

static int set_field(pctx *p, const char *path, const field *f, const json_t *v)
{
    char *base = (char *)p->cfg + f->off;
    if (f->kind == F_BOOL) {
        if (!json_is_boolean(v)) return fail_type(p, path, "a boolean", v);
        *(int *)base = json_is_true(v) ? 1 : 0;
        return 0;
    }
    int want_int = f->kind != F_NUM;
    if (!json_is_number(v)) return fail_type(p, path, want_int ? "an integer" : "a number", v);
    double d;
    if (json_is_integer(v)) {
        d = (double)json_integer_value(v);
    } else {
        d = json_real_value(v);
        if (!isfinite(d)) return fail(p, CLARITY_ECONFIG, path, "must be a finite number");
        if (want_int && d != floor(d)) {
            buf m;
            buf_init(&m);
            buf_puts(&m, path);
            buf_puts(&m, ": must be an integer, got ");
            put_num(&m, d);
            return failb(p, CLARITY_ECONFIG, &m);
        }
    }
    if (check_range(p, path, f, d)) return p->rc;
    switch (f->kind) {
    case F_INT: *(int *)base = (int)d; break;
    case F_SIZE:
        *(size_t *)base = json_is_integer(v) ? (size_t)json_integer_value(v) : (size_t)d;
        break;
    default: *(double *)base = d; break;
    }
    return 0;
}

static const field *find_field(const field *t, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].key, key) == 0) return &t[i];
    return NULL;
}

static const field scoring_fields[] = {
    {"halfLife", F_NUM, CO(scoring.half_life), 0, NOHI, 1, 0},
    {"recencyWindow", F_NUM_INT, CO(scoring.recency_window), 0, INT_MAX, 0, 1},
    {"recencyBonus", F_NUM, CO(scoring.recency_bonus), 0, NOHI, 0, 0},
    {"referenceWeight", F_NUM, CO(scoring.reference_weight), 0, NOHI, 0, 0},
    {"frequencyScale", F_NUM, CO(scoring.frequency_scale), 0, NOHI, 0, 0},
    {"anchorBonus", F_NUM, CO(scoring.anchor_bonus), 0, NOHI, 0, 0},
};

static const field pruning_fields[] = {
    {"pruneThreshold", F_NUM, CO(pruning.prune_threshold), 0, NOHI, 0, 0},
    {"strictModePreserveThreshold", F_NUM, CO(pruning.strict_preserve_threshold), 0, NOHI, 0, 0},
    {"maxItemsPerCategory", F_INT, CO(pruning.max_items_per_category), 1, INT_MAX, 0, 1},
    {"targetContextItems", F_INT, CO(pruning.target_context_items), 0, INT_MAX, 0, 1},
    {"maxContextItems", F_INT, CO(pruning.max_context_items), 1, INT_MAX, 0, 1},
    {"minMentionsPreserve", F_INT, CO(pruning.min_mentions_preserve), 1, INT_MAX, 0, 1},
};

static const field tier_fields[] = {
    {"essential", F_NUM, CO(pruning.tier_mult[TIER_ESSENTIAL]), 0, NOHI, 0, 0},
    {"high", F_NUM, CO(pruning.tier_mult[TIER_HIGH]), 0, NOHI, 0, 0},
    {"normal", F_NUM, CO(pruning.tier_mult[TIER_NORMAL]), 0, NOHI, 0, 0},
    {"low", F_NUM, CO(pruning.tier_mult[TIER_LOW]), 0, NOHI, 0, 0},
};

static const field extraction_fields[] = {
    {"minWordLength", F_INT, CO(extraction.min_word_length), 1, 64, 0, 0},
    {"maxKeywordsPerMessage", F_INT, CO(extraction.max_keywords_per_message), 0, 64, 0, 0},
    {"projects", F_BOOL, CO(extraction.projects), 0, 0, 0, 0},
    {"toolNames", F_BOOL, CO(extraction.tool_names), 0, 0, 0, 0},
    {"memoryFiles", F_BOOL, CO(extraction.memory_files), 0, 0, 0, 0},
    {"sourceFiles", F_BOOL, CO(extraction.source_files), 0, 0, 0, 0},
    {"keywords", F_BOOL, CO(extraction.keywords), 0, 0, 0, 0},
};

static const field context_fields[] = {
    {"maxChars", F_INT, CO(context.max_chars), 64, 1000000, 0, 0},
    {"maxItems", F_INT, CO(context.max_items), 0, 1000, 0, 0},
    {"minScore", F_NUM, CO(context.min_score), 0, NOHI, 0, 0},
    {"highScore", F_NUM, CO(context.high_score), 0, NOHI, 0, 0},
    {"midScore", F_NUM, CO(context.mid_score), 0, NOHI, 0, 0},
};

static const field storage_fields[] = {
    {"maxResidentSessions", F_INT, CO(storage.max_resident_sessions), 1, 1000000, 0, 0},
};

static const field limits_fields[] = {
    {"maxTrackedItems", F_INT, CO(limits.max_tracked_items), 10, 10000000, 0, 0},
    {"maxPromptBytes", F_SIZE, CO(limits.max_prompt_bytes), 1024, 1073741824.0, 0, 0},
    {"historyLength", F_INT, CO(limits.history_length), 1, ITEM_HISTORY_MAX, 0, 0},
};

static const field prediction_fields[] = {
    {"enabled", F_BOOL, CO(prediction.enabled), 0, 0, 0, 0},
    {"weight", F_NUM, CO(prediction.weight), 0, NOHI, 0, 0},
    {"maxTargets", F_INT, CO(prediction.max_targets), 0, 20, 0, 0},
    {"minScore", F_NUM, CO(prediction.min_score), 0, 1, 0, 0},
    {"maxFiles", F_INT, CO(prediction.max_files), 1, 1000, 0, 0},
    {"autoRefresh", F_BOOL, CO(prediction.auto_refresh), 0, 0, 0, 0},
};

static const field top_fields[] = {
    {"enabled", F_BOOL, CO(enabled), 0, 0, 0, 0},
    {"strictMode", F_BOOL, CO(strict_mode), 0, 0, 0, 0},
};

#define NF(t) (sizeof(t) / sizeof((t)[0]))

/* A section: table fields plus an optional handler for the other keys
 * (returns 1 when it did not recognize the key). */
typedef int (*special_fn)(pctx *p, const char *path, const char *key, json_t *v);

static int parse_section(pctx *p, const char *path, json_t *obj, const field *t, size_t n,
                         special_fn special)
{
    if (!json_is_object(obj)) return fail_type(p, path, "an object", obj);
    const char *key;
    json_t *v;
    char sub[128];
    json_object_foreach(obj, key, v) {
        const field *f = find_field(t, n, key);
        if (f) {
            if (set_field(p, join(sub, sizeof sub, path, key), f, v)) return p->rc;
            continue;
        }
        int r = special ? special(p, join(sub, sizeof sub, path, key), key, v) : 1;
        if (r < 0) return p->rc;
        if (r > 0) return fail_unknown(p, path, key);
    }
    return 0;
}

/* --------------------------------------------------------- special keys */

static int pruning_special(pctx *p, const char *path, const char *key, json_t *v)
{
    if (strcmp(key, "tierMultipliers") != 0) return 1;
    return parse_section(p, path, v, tier_fields, NF(tier_fields), NULL) ? -1 : 0;
}

static int valid_tool_name(const char *s, size_t n)
{
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static int valid_pattern_name(const char *s, size_t n)
{
    if (n == 0 || !(s[0] >= 'a' && s[0] <= 'z')) return 0;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return 0;
    }
    return 1;
}

#define CFG_MAX_PATTERN_NAME 32

static int fail_string(pctx *p, const char *path, const char *what, const json_t *v)
{
    buf m;
    buf_init(&m);
    buf_puts(&m, path);
    buf_puts(&m, ": ");
    buf_puts(&m, what);
    buf_puts(&m, ", got \"");
    put_text(&m, json_string_value(v), json_string_length(v), 0);
    buf_putc(&m, '"');
    return failb(p, CLARITY_ECONFIG, &m);
}

/* Compiles pattern as extract/ will (PCRE2_UTF); fails naming the key, the
 * PCRE2 message and the offset. */
static int check_regex(pctx *p, const char *path, const json_t *v)
{
    int code;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)json_string_value(v), json_string_length(v),
                                   PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_NEVER_BACKSLASH_C, &code, &off, NULL);
    if (re) {
        pcre2_code_free(re);
        return 0;
    }
    if (code == PCRE2_ERROR_HEAP_FAILED) return fail_oom(p);
    PCRE2_UCHAR msg[256];
    if (pcre2_get_error_message(code, msg, sizeof msg) < 0)
        snprintf((char *)msg, sizeof msg, "PCRE2 error %d", code);
    return fail(p, CLARITY_ECONFIG, path, "%s at offset %zu", (const char *)msg, (size_t)off);
}

/* A non-empty string that compiles as a regex, duplicated into *out. */
static int take_regex(pctx *p, const char *path, const json_t *v, char **out)
{
    if (!json_is_string(v)) return fail_type(p, path, "a string", v);
    if (json_string_length(v) == 0)
        return fail(p, CLARITY_ECONFIG, path, "must be a non-empty regex");
    if (check_regex(p, path, v)) return p->rc;
    *out = util_strndup(json_string_value(v), json_string_length(v));
    return *out ? 0 : fail_oom(p);
}

static int parse_tools(pctx *p, const char *path, json_t *arr)
{
    clarity_config *c = p->cfg;
    if (!json_is_array(arr)) return fail_type(p, path, "an array", arr);
    size_t n = json_array_size(arr);
    if (n > CFG_MAX_TOOLS)
        return fail(p, CLARITY_ECONFIG, path, "at most %d entries, got %zu", CFG_MAX_TOOLS, n);
    for (size_t i = 0; i < c->extraction.n_tools; i++) {
        free(c->extraction.tools[i]);
        c->extraction.tools[i] = NULL;
    }
    c->extraction.n_tools = 0;
    char sub[160];
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(arr, i);
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        if (!json_is_string(e)) return fail_type(p, sub, "a string", e);
        if (!valid_tool_name(json_string_value(e), json_string_length(e)))
            return fail_string(p, sub, "must be a non-empty name of [A-Za-z0-9_-]", e);
        char *s = util_strndup(json_string_value(e), json_string_length(e));
        if (!s) return fail_oom(p);
        c->extraction.tools[c->extraction.n_tools++] = s;
    }
    return 0;
}

static int parse_custom(pctx *p, const char *path, json_t *arr)
{
    static const char *const reserved[] = {"tool", "file", "keyword", "project"};
    clarity_config *c = p->cfg;
    if (!json_is_array(arr)) return fail_type(p, path, "an array", arr);
    size_t n = json_array_size(arr);
    if (n > CFG_MAX_PATTERNS)
        return fail(p, CLARITY_ECONFIG, path, "at most %d entries, got %zu", CFG_MAX_PATTERNS,
                    n);
    char sub[160], key[200];
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(arr, i);
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        if (!json_is_object(e)) return fail_type(p, sub, "an object", e);
        const char *k;
        json_t *kv;
        json_object_foreach(e, k, kv) {
            if (strcmp(k, "name") != 0 && strcmp(k, "pattern") != 0) return fail_unknown(p, sub, k);
        }
        json_t *name = json_object_get(e, "name");
        json_t *pat = json_object_get(e, "pattern");
        join(key, sizeof key, sub, "name");
        if (!name) return fail(p, CLARITY_ECONFIG, key, "missing required key");
        if (!json_is_string(name)) return fail_type(p, key, "a string", name);
        const char *ns = json_string_value(name);
        size_t nl = json_string_length(name);
        if (!valid_pattern_name(ns, nl) || nl > CFG_MAX_PATTERN_NAME)
            return fail_string(p, key, "must match [a-z][a-z0-9_]* (at most 32 characters)",
                               name);
        for (size_t r = 0; r < NF(reserved); r++)
            if (strcmp(ns, reserved[r]) == 0)
                return fail(p, CLARITY_ECONFIG, key,
                            "\"%s\" is reserved (tool, file, keyword, project)", ns);
        for (size_t j = 0; j < c->extraction.n_custom; j++)
            if (strcmp(ns, c->extraction.custom[j].name) == 0)
                return fail(p, CLARITY_ECONFIG, key, "duplicate name \"%s\"", ns);
        join(key, sizeof key, sub, "pattern");
        if (!pat) return fail(p, CLARITY_ECONFIG, key, "missing required key");
        char *ps = NULL;
        if (take_regex(p, key, pat, &ps)) return p->rc;
        char *nd = util_strndup(ns, nl);
        if (!nd) {
            free(ps);
            return fail_oom(p);
        }
        cfg_pattern *cp = &c->extraction.custom[c->extraction.n_custom++];
        cp->name = nd;
        cp->pattern = ps;
    }
    return 0;
}

static int parse_exclude(pctx *p, const char *path, json_t *arr)
{
    clarity_config *c = p->cfg;
    if (!json_is_array(arr)) return fail_type(p, path, "an array", arr);
    size_t n = json_array_size(arr);
    if (n > CFG_MAX_PATTERNS)
        return fail(p, CLARITY_ECONFIG, path, "at most %d entries, got %zu", CFG_MAX_PATTERNS,
                    n);
    char sub[160];
    for (size_t i = 0; i < n; i++) {
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        char *s = NULL;
        if (take_regex(p, sub, json_array_get(arr, i), &s)) return p->rc;
        c->extraction.exclude[c->extraction.n_exclude++] = s;
    }
    return 0;
}

static int extraction_special(pctx *p, const char *path, const char *key, json_t *v)
{
    int r;
    if (strcmp(key, "tools") == 0) r = parse_tools(p, path, v);
    else if (strcmp(key, "customPatterns") == 0) r = parse_custom(p, path, v);
    else if (strcmp(key, "exclude") == 0) r = parse_exclude(p, path, v);
    else return 1;
    return r ? -1 : 0;
}

static const char *const backend_names[] = {"auto", "sqlite", "host", "memory"};

static int storage_special(pctx *p, const char *path, const char *key, json_t *v)
{
    clarity_config *c = p->cfg;
    if (strcmp(key, "backend") == 0) {
        if (!json_is_string(v)) {
            fail_type(p, path, "a string", v);
            return -1;
        }
        for (size_t i = 0; i < NF(backend_names); i++) {
            if (strcmp(json_string_value(v), backend_names[i]) == 0 &&
                json_string_length(v) == strlen(backend_names[i])) {
                c->storage.backend = (int)i;
                return 0;
            }
        }
        fail_string(p, path, "must be one of \"auto\", \"sqlite\", \"host\", \"memory\"", v);
        return -1;
    }
    if (strcmp(key, "path") == 0) {
        if (json_is_null(v)) {
            free(c->storage.path);
            c->storage.path = NULL;
            return 0;
        }
        if (!json_is_string(v)) {
            fail_type(p, path, "a string or null", v);
            return -1;
        }
        size_t n = json_string_length(v);
        if (n == 0 || n > 4096) {
            fail(p, CLARITY_ECONFIG, path, "must be 1 to 4096 bytes long, got %zu", n);
            return -1;
        }
        char *s = util_strndup(json_string_value(v), n);
        if (!s) {
            fail_oom(p);
            return -1;
        }
        free(c->storage.path);
        c->storage.path = s;
        return 0;
    }
    return 1;
}

static int top_special(pctx *p, const char *path, const char *key, json_t *v)
{
    int r;
    if (strcmp(key, "scoring") == 0)
        r = parse_section(p, path, v, scoring_fields, NF(scoring_fields), NULL);
    else if (strcmp(key, "pruning") == 0)
        r = parse_section(p, path, v, pruning_fields, NF(pruning_fields), pruning_special);
    else if (strcmp(key, "extraction") == 0)
        r = parse_section(p, path, v, extraction_fields, NF(extraction_fields),
                          extraction_special);
    else if (strcmp(key, "context") == 0)
        r = parse_section(p, path, v, context_fields, NF(context_fields), NULL);
    else if (strcmp(key, "storage") == 0)
        r = parse_section(p, path, v, storage_fields, NF(storage_fields), storage_special);
    else if (strcmp(key, "limits") == 0)
        r = parse_section(p, path, v, limits_fields, NF(limits_fields), NULL);
    else if (strcmp(key, "prediction") == 0)
        r = parse_section(p, path, v, prediction_fields, NF(prediction_fields), NULL);
    else return 1;
    return r ? -1 : 0;
}

/* -------------------------------------------------------------- parse */

static int all_space(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') return 0;
    return 1;
}

int config_parse(clarity_config *cfg, const char *json, char **err)
{
    if (err) *err = NULL;
    pctx p = {0};
    clarity_config tmp;
    if (!cfg) {
        if (err) *err = util_strdup("config: no config struct given");
        return CLARITY_ECONFIG;
    }
    memset(cfg, 0, sizeof *cfg);
    if (config_defaults(&tmp) != 0) {
        if (err) *err = util_strdup("config: out of memory");
        return CLARITY_ENOMEM;
    }
    p.cfg = &tmp;

    if (json && !all_space(json)) {
        json_error_t je;
        json_t *root = json_loads(json, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
        if (!root && json_error_code(&je) == json_error_out_of_memory) {
            fail_oom(&p);
        } else if (!root) {
            buf m;
            buf_init(&m);
            buf_printf(&m, "config: invalid JSON at line %d, column %d: ", je.line, je.column);
            put_text(&m, je.text, strnlen(je.text, sizeof je.text), 1);
            failb(&p, CLARITY_ECONFIG, &m);
        } else if (!json_is_object(root)) {
            fail(&p, CLARITY_ECONFIG, "config", "top level must be a JSON object, got %s",
                 type_name(root));
        } else {
            parse_section(&p, "", root, top_fields, NF(top_fields), top_special);
        }
        json_decref(root);
    }

    if (p.rc != CLARITY_OK) {
        config_free(&tmp);
        if (err) *err = p.err;
        else free(p.err);
        return p.rc;
    }
    *cfg = tmp;
    return CLARITY_OK;
}

/* -------------------------------------------------------------- to_json */

static void put(json_t *o, const char *k, json_t *v, int *bad)
{
    if (json_object_set_new(o, k, v) != 0) *bad = 1; /* also fails (and is safe) on v == NULL */
}

static json_t *obj_new(json_t *parent, const char *k, int *bad)
{
    json_t *o = json_object();
    if (!o) {
        *bad = 1;
        return NULL;
    }
    json_incref(o);
    put(parent, k, o, bad);
    if (*bad) {
        json_decref(o);
        return NULL;
    }
    json_decref(o); /* parent holds it now */
    return o;
}

static int dump_to_buf(const char *s, size_t n, void *ud)
{
    buf *b = ud;
    buf_append(b, s, n);
    return buf_failed(b) ? -1 : 0;
}

static json_t *b2j(int v) { return json_boolean(v != 0); }

char *config_to_json(const clarity_config *cfg)
{
    if (!cfg || cfg->storage.backend < 0 || cfg->storage.backend >= (int)NF(backend_names) ||
        cfg->extraction.n_tools > CFG_MAX_TOOLS || cfg->extraction.n_custom > CFG_MAX_PATTERNS ||
        cfg->extraction.n_exclude > CFG_MAX_PATTERNS)
        return NULL;
    const double reals[] = {
        cfg->scoring.half_life,         cfg->scoring.recency_window,
        cfg->scoring.recency_bonus,     cfg->scoring.reference_weight,
        cfg->scoring.frequency_scale,   cfg->scoring.anchor_bonus,
        cfg->pruning.prune_threshold,   cfg->pruning.strict_preserve_threshold,
        cfg->pruning.tier_mult[0],      cfg->pruning.tier_mult[1],
        cfg->pruning.tier_mult[2],      cfg->pruning.tier_mult[3],
        cfg->context.min_score,         cfg->context.high_score,
        cfg->context.mid_score,         cfg->prediction.weight,
        cfg->prediction.min_score,
    };
    int prec = 15;
    for (size_t i = 0; i < NF(reals); i++) {
        if (!isfinite(reals[i])) return NULL;
        int r = real_precision(reals[i]);
        if (r > prec) prec = r;
    }

    int bad = 0;
    json_t *root = json_object();
    if (!root) return NULL;
    put(root, "enabled", b2j(cfg->enabled), &bad);
    put(root, "strictMode", b2j(cfg->strict_mode), &bad);

    json_t *s = obj_new(root, "scoring", &bad);
    if (s) {
        put(s, "halfLife", json_real(cfg->scoring.half_life), &bad);
        put(s, "recencyWindow", json_real(cfg->scoring.recency_window), &bad);
        put(s, "recencyBonus", json_real(cfg->scoring.recency_bonus), &bad);
        put(s, "referenceWeight", json_real(cfg->scoring.reference_weight), &bad);
        put(s, "frequencyScale", json_real(cfg->scoring.frequency_scale), &bad);
        put(s, "anchorBonus", json_real(cfg->scoring.anchor_bonus), &bad);
    }

    json_t *pr = obj_new(root, "pruning", &bad);
    if (pr) {
        put(pr, "pruneThreshold", json_real(cfg->pruning.prune_threshold), &bad);
        put(pr, "strictModePreserveThreshold", json_real(cfg->pruning.strict_preserve_threshold),
            &bad);
        put(pr, "maxItemsPerCategory", json_integer(cfg->pruning.max_items_per_category), &bad);
        put(pr, "targetContextItems", json_integer(cfg->pruning.target_context_items), &bad);
        put(pr, "maxContextItems", json_integer(cfg->pruning.max_context_items), &bad);
        put(pr, "minMentionsPreserve", json_integer(cfg->pruning.min_mentions_preserve), &bad);
        json_t *t = obj_new(pr, "tierMultipliers", &bad);
        if (t) {
            put(t, "essential", json_real(cfg->pruning.tier_mult[TIER_ESSENTIAL]), &bad);
            put(t, "high", json_real(cfg->pruning.tier_mult[TIER_HIGH]), &bad);
            put(t, "normal", json_real(cfg->pruning.tier_mult[TIER_NORMAL]), &bad);
            put(t, "low", json_real(cfg->pruning.tier_mult[TIER_LOW]), &bad);
        }
    }

    json_t *ex = obj_new(root, "extraction", &bad);
    if (ex) {
        json_t *tools = json_array();
        for (size_t i = 0; tools && i < cfg->extraction.n_tools; i++)
            if (json_array_append_new(tools, json_string(cfg->extraction.tools[i]))) bad = 1;
        put(ex, "tools", tools, &bad);
        put(ex, "minWordLength", json_integer(cfg->extraction.min_word_length), &bad);
        put(ex, "maxKeywordsPerMessage", json_integer(cfg->extraction.max_keywords_per_message),
            &bad);
        put(ex, "projects", b2j(cfg->extraction.projects), &bad);
        put(ex, "toolNames", b2j(cfg->extraction.tool_names), &bad);
        put(ex, "memoryFiles", b2j(cfg->extraction.memory_files), &bad);
        put(ex, "sourceFiles", b2j(cfg->extraction.source_files), &bad);
        put(ex, "keywords", b2j(cfg->extraction.keywords), &bad);
        json_t *cp = json_array();
        for (size_t i = 0; cp && i < cfg->extraction.n_custom; i++) {
            const cfg_pattern *c = &cfg->extraction.custom[i];
            json_t *e = json_object();
            if (!e || json_array_append_new(cp, e)) {
                bad = 1;
                break;
            }
            put(e, "name", json_string(c->name ? c->name : ""), &bad);
            put(e, "pattern", json_string(c->pattern ? c->pattern : ""), &bad);
        }
        put(ex, "customPatterns", cp, &bad);
        json_t *xs = json_array();
        for (size_t i = 0; xs && i < cfg->extraction.n_exclude; i++)
            if (json_array_append_new(xs, json_string(cfg->extraction.exclude[i]
                                                          ? cfg->extraction.exclude[i]
                                                          : "")))
                bad = 1;
        put(ex, "exclude", xs, &bad);
    }

    json_t *cx = obj_new(root, "context", &bad);
    if (cx) {
        put(cx, "maxChars", json_integer(cfg->context.max_chars), &bad);
        put(cx, "maxItems", json_integer(cfg->context.max_items), &bad);
        put(cx, "minScore", json_real(cfg->context.min_score), &bad);
        put(cx, "highScore", json_real(cfg->context.high_score), &bad);
        put(cx, "midScore", json_real(cfg->context.mid_score), &bad);
    }

    json_t *st = obj_new(root, "storage", &bad);
    if (st) {
        put(st, "backend", json_string(backend_names[cfg->storage.backend]), &bad);
        put(st, "path", cfg->storage.path ? json_string(cfg->storage.path) : json_null(), &bad);
        put(st, "maxResidentSessions", json_integer(cfg->storage.max_resident_sessions), &bad);
    }

    json_t *li = obj_new(root, "limits", &bad);
    if (li) {
        put(li, "maxTrackedItems", json_integer(cfg->limits.max_tracked_items), &bad);
        put(li, "maxPromptBytes", json_integer((json_int_t)cfg->limits.max_prompt_bytes), &bad);
        put(li, "historyLength", json_integer(cfg->limits.history_length), &bad);
    }

    json_t *pd = obj_new(root, "prediction", &bad);
    if (pd) {
        put(pd, "enabled", b2j(cfg->prediction.enabled), &bad);
        put(pd, "weight", json_real(cfg->prediction.weight), &bad);
        put(pd, "maxTargets", json_integer(cfg->prediction.max_targets), &bad);
        put(pd, "minScore", json_real(cfg->prediction.min_score), &bad);
        put(pd, "maxFiles", json_integer(cfg->prediction.max_files), &bad);
        put(pd, "autoRefresh", b2j(cfg->prediction.auto_refresh), &bad);
    }

    /* Dumped through a callback into a buf rather than json_dumps(): jansson
     * 2.14 ignores a failed append while writing an object key, so a
     * transient allocation failure inside json_dumps() can yield a corrupt
     * string reported as success; buf's sticky failure flag cannot.  The
     * result is also plain malloc() memory whatever allocator jansson uses. */
    buf b;
    buf_init(&b);
    char *out = NULL;
    if (!bad && json_dump_callback(root, dump_to_buf, &b,
                                   JSON_COMPACT | JSON_PRESERVE_ORDER |
                                       JSON_REAL_PRECISION(prec)) == 0 &&
        !buf_failed(&b))
        out = buf_steal(&b, NULL);
    buf_free(&b);
    json_decref(root);
    return out;
}
