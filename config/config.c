/* config.c: the configuration as one table of settings.
 *
 * Every setting is one entry of `settings` below (after Redis's config.c):
 * its dotted key, its type, where it lives in clarity_config, its default,
 * its bounds.  The entry drives the defaults (config_defaults), strict
 * parsing and validation (config_parse: unknown keys, wrong types, values
 * out of range refused with a message naming the dotted key), printing
 * (config_to_json, in table order) and freeing.  Sections are the key's
 * prefixes ("pruning.tierMultipliers.low" lives in two nested objects).
 *
 * Adding a setting: the struct member in config.h, one entry here (a
 * number: CT_NUM with its bounds; a choice: CT_ENUM with its names; a list
 * or another shape: a type with parse/print/reset callbacks), and a line in
 * the README's Config section.  tests/test_config.c round-trips every entry
 * of the table, so a new one is tested without further work.
 *
 * Parsing works on a private copy that starts from the defaults and is only
 * handed to the caller once every key has been validated, so a refused
 * config never leaves a half-applied struct behind.
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

#define NF(t) (sizeof(t) / sizeof((t)[0]))

static const char *const default_tools[] = {
    "read",    "write", "edit",      "exec",  "browser", "web_search",    "web_fetch",
    "memory_search", "recall", "reflect", "tts",  "subagents", "process", "nodes",
    "message", "canvas", "Read",    "Edit",  "Write",   "Bash",          "Grep",
    "Glob",
};

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
    static const char *const reserved[] = {"tool", "file", "keyword", "project", "test"};
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

/* A list of regexes into v[0..*n) (replacing it). */
static int parse_regexes(pctx *p, const char *path, json_t *arr, char **v, size_t *n)
{
    if (!json_is_array(arr)) return fail_type(p, path, "an array", arr);
    size_t m = json_array_size(arr);
    if (m > CFG_MAX_PATTERNS)
        return fail(p, CLARITY_ECONFIG, path, "at most %d entries, got %zu", CFG_MAX_PATTERNS, m);
    char sub[160];
    for (size_t i = 0; i < m; i++) {
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        char *s = NULL;
        if (take_regex(p, sub, json_array_get(arr, i), &s)) return p->rc;
        v[(*n)++] = s;
    }
    return 0;
}

static int parse_exclude(pctx *p, const char *path, json_t *arr)
{
    return parse_regexes(p, path, arr, p->cfg->extraction.exclude, &p->cfg->extraction.n_exclude);
}

static int parse_keep(pctx *p, const char *path, json_t *arr)
{
    return parse_regexes(p, path, arr, p->cfg->assemble.keep, &p->cfg->assemble.n_keep);
}


/* ------------------------------------------------------- list settings */

static void free_tools(clarity_config *c)
{
    for (size_t i = 0; i < c->extraction.n_tools && i < CFG_MAX_TOOLS; i++) {
        free(c->extraction.tools[i]);
        c->extraction.tools[i] = NULL;
    }
    c->extraction.n_tools = 0;
}

static int default_tools_fn(clarity_config *c)
{
    for (size_t i = 0; i < NF(default_tools); i++) {
        char *s = util_strdup(default_tools[i]);
        if (!s) return -1;
        c->extraction.tools[c->extraction.n_tools++] = s;
    }
    return 0;
}

static json_t *print_tools(const clarity_config *c)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < c->extraction.n_tools; i++)
        if (json_array_append_new(a, json_string(c->extraction.tools[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static void free_custom(clarity_config *c)
{
    for (size_t i = 0; i < c->extraction.n_custom && i < CFG_MAX_PATTERNS; i++) {
        free(c->extraction.custom[i].name);
        free(c->extraction.custom[i].pattern);
        c->extraction.custom[i].name = c->extraction.custom[i].pattern = NULL;
    }
    c->extraction.n_custom = 0;
}

static json_t *print_custom(const clarity_config *c)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < c->extraction.n_custom; i++) {
        const cfg_pattern *cp = &c->extraction.custom[i];
        json_t *e = json_pack("{s:s,s:s}", "name", cp->name ? cp->name : "", "pattern",
                              cp->pattern ? cp->pattern : "");
        if (!e || json_array_append_new(a, e)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static void free_strings(char **v, size_t *n)
{
    for (size_t i = 0; i < *n && i < CFG_MAX_PATTERNS; i++) {
        free(v[i]);
        v[i] = NULL;
    }
    *n = 0;
}

static json_t *print_strings(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_string(v[i] ? v[i] : ""))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static void free_exclude(clarity_config *c) { free_strings(c->extraction.exclude, &c->extraction.n_exclude); }
static json_t *print_exclude(const clarity_config *c)
{
    return print_strings(c->extraction.exclude, c->extraction.n_exclude);
}
static void free_keep(clarity_config *c) { free_strings(c->assemble.keep, &c->assemble.n_keep); }
static json_t *print_keep(const clarity_config *c)
{
    return print_strings(c->assemble.keep, c->assemble.n_keep);
}

/* ------------------------------------------------------------ the table */

struct cfg_list_ops {
    int (*parse)(pctx *p, const char *path, json_t *v); /* replaces the list */
    json_t *(*print)(const clarity_config *c);          /* new reference, NULL out of memory */
    void (*reset)(clarity_config *c);                   /* frees the list, leaves it empty */
    int (*defaults)(clarity_config *c);                 /* NULL: empty by default */
};

static const char *const backend_names[] = {"auto", "sqlite", "host", "memory", "redis", NULL};
static const char *const scoring_models[] = {"use", "original", NULL};
static const char *const sync_names[] = {"normal", "full", NULL};

#define CO(m) offsetof(clarity_config, m)
#define NOHI HUGE_VAL
#define BOOL(k, m, d) {k, CT_BOOL, CO(m), d, 0, 0, 0, NULL, NULL}
#define NUM(k, m, d, lo, hi, fl) {k, CT_NUM, CO(m), d, lo, hi, fl, NULL, NULL}
#define NUMI(k, m, d, lo, hi, fl) {k, CT_NUM_INT, CO(m), d, lo, hi, fl, NULL, NULL}
#define INT(k, m, d, lo, hi, fl) {k, CT_INT, CO(m), d, lo, hi, fl, NULL, NULL}
#define SIZE(k, m, d, lo, hi) {k, CT_SIZE, CO(m), d, lo, hi, 0, NULL, NULL}
#define LIST(k, ops) {k, CT_LIST, 0, 0, 0, 0, 0, NULL, &ops}

static const struct cfg_list_ops tools_ops = {parse_tools, print_tools, free_tools, default_tools_fn};
static const struct cfg_list_ops custom_ops = {parse_custom, print_custom, free_custom, NULL};
static const struct cfg_list_ops exclude_ops = {parse_exclude, print_exclude, free_exclude, NULL};
static const struct cfg_list_ops keep_ops = {parse_keep, print_keep, free_keep, NULL};

/* Every setting, in the order the effective config prints them. */
static const cfg_entry settings[] = {
    BOOL("enabled", enabled, 1),
    BOOL("strictMode", strict_mode, 0),
    {"scoring.model", CT_ENUM, CO(scoring.model), CFG_SCORING_USE, 0, 0, 0, scoring_models, NULL},
    NUM("scoring.halfLife", scoring.half_life, 5, 0, NOHI, CF_LO_EXCL),
    NUMI("scoring.recencyWindow", scoring.recency_window, 3, 0, INT_MAX, CF_HI_OPEN),
    NUM("scoring.recencyBonus", scoring.recency_bonus, 80, 0, NOHI, 0),
    NUM("scoring.referenceWeight", scoring.reference_weight, 15, 0, NOHI, 0),
    NUM("scoring.frequencyScale", scoring.frequency_scale, 3, 0, NOHI, 0),
    NUM("scoring.anchorBonus", scoring.anchor_bonus, 100, 0, NOHI, 0),
    NUM("pruning.pruneThreshold", pruning.prune_threshold, 8, 0, NOHI, 0),
    NUM("pruning.strictModePreserveThreshold", pruning.strict_preserve_threshold, 25, 0, NOHI, 0),
    INT("pruning.maxItemsPerCategory", pruning.max_items_per_category, 20, 1, INT_MAX, CF_HI_OPEN),
    INT("pruning.targetContextItems", pruning.target_context_items, 30, 0, INT_MAX, CF_HI_OPEN),
    INT("pruning.maxContextItems", pruning.max_context_items, 50, 1, INT_MAX, CF_HI_OPEN),
    INT("pruning.minMentionsPreserve", pruning.min_mentions_preserve, 3, 1, INT_MAX, CF_HI_OPEN),
    NUM("pruning.tierMultipliers.essential", pruning.tier_mult[TIER_ESSENTIAL], 2.0, 0, NOHI, 0),
    NUM("pruning.tierMultipliers.high", pruning.tier_mult[TIER_HIGH], 1.5, 0, NOHI, 0),
    NUM("pruning.tierMultipliers.normal", pruning.tier_mult[TIER_NORMAL], 1.0, 0, NOHI, 0),
    NUM("pruning.tierMultipliers.low", pruning.tier_mult[TIER_LOW], 0.8, 0, NOHI, 0),
    LIST("extraction.tools", tools_ops),
    INT("extraction.minWordLength", extraction.min_word_length, 5, 1, 64, 0),
    INT("extraction.maxKeywordsPerMessage", extraction.max_keywords_per_message, 8, 0, 64, 0),
    BOOL("extraction.projects", extraction.projects, 1),
    BOOL("extraction.toolNames", extraction.tool_names, 1),
    BOOL("extraction.memoryFiles", extraction.memory_files, 1),
    BOOL("extraction.sourceFiles", extraction.source_files, 1),
    BOOL("extraction.keywords", extraction.keywords, 1),
    LIST("extraction.customPatterns", custom_ops),
    LIST("extraction.exclude", exclude_ops),
    INT("context.maxChars", context.max_chars, 1500, 64, 1000000, 0),
    INT("context.maxItems", context.max_items, 10, 0, 1000, 0),
    NUM("context.minScore", context.min_score, 1, 0, NOHI, 0),
    NUM("context.highScore", context.high_score, 40, 0, NOHI, 0),
    NUM("context.midScore", context.mid_score, 15, 0, NOHI, 0),
    {"storage.backend", CT_ENUM, CO(storage.backend), CFG_STORE_AUTO, 0, 0, 0, backend_names, NULL},
    {"storage.path", CT_PATH, CO(storage.path), 0, 1, 4096, 0, NULL, NULL},
    INT("storage.maxResidentSessions", storage.max_resident_sessions, 256, 1, 1000000, 0),
    {"storage.url", CT_PATH, CO(storage.url), 0, 1, 4096, 0, NULL, NULL},
    {"storage.keyPrefix", CT_PATH, CO(storage.key_prefix), 0, 1, 256, 0, NULL, NULL},
    INT("storage.timeoutMs", storage.timeout_ms, 1000, 1, 600000, 0),
    INT("storage.snapshotEvery", storage.snapshot_every, 256, 1, CFG_SNAPSHOT_EVERY_MAX, 0),
    INT("storage.foldChunk", storage.fold_chunk, 128, 1, 1 << 20, 0),
    {"storage.synchronous", CT_ENUM, CO(storage.synchronous), CFG_SYNC_NORMAL, 0, 0, 0, sync_names, NULL},
    BOOL("storage.exclusive", storage.exclusive, 0),
    INT("limits.maxTrackedItems", limits.max_tracked_items, 5000, 10, 10000000, 0),
    SIZE("limits.maxPromptBytes", limits.max_prompt_bytes, 64.0 * 1024 * 1024, 1024, 1073741824.0),
    INT("limits.historyLength", limits.history_length, 16, 1, ITEM_HISTORY_MAX, 0),
    BOOL("prediction.enabled", prediction.enabled, 1),
    NUM("prediction.weight", prediction.weight, 30, 0, NOHI, 0),
    INT("prediction.maxTargets", prediction.max_targets, 5, 0, 20, 0),
    NUM("prediction.minScore", prediction.min_score, 0.1, 0, 1, 0),
    INT("prediction.maxFiles", prediction.max_files, 20, 1, 1000, 0),
    BOOL("prediction.autoRefresh", prediction.auto_refresh, 0),
    INT("prediction.loadWaitMs", prediction.load_wait_ms, -1, -1, 600000, 0),
    BOOL("assemble.enabled", assemble.enabled, 1),
    INT("assemble.protectRecentTurns", assemble.protect_recent_turns, 3, 0, 1000, 0),
    NUM("assemble.protectShare", assemble.protect_share, 0.5, 0, 1, 0),
    NUM("assemble.highWater", assemble.high_water, 0.85, 0, 1, CF_LO_EXCL),
    NUM("assemble.lowWater", assemble.low_water, 0.6, 0, 1, CF_LO_EXCL),
    INT("assemble.stubMinTokens", assemble.stub_min_tokens, 64, 0, 1000000, 0),
    INT("assemble.argsMinTokens", assemble.args_min_tokens, 512, 1, 1000000, 0),
    {"assemble.maxTokens", CT_I64, CO(assemble.max_tokens), 0, 0, 1e12, 0, NULL, NULL},
    LIST("assemble.keep", keep_ops),
    INT("toolOutput.maxChars", tool_output.max_chars, CFG_TOOL_OUTPUT_MAX_CHARS, CFG_TOOL_OUTPUT_MAX_CHARS_MIN,
        CFG_TOOL_OUTPUT_MAX_CHARS_MAX, 0),
    INT("toolOutput.headLines", tool_output.head_lines, 40, 0, 100000, 0),
    INT("toolOutput.tailLines", tool_output.tail_lines, 40, 0, 100000, 0),
    BOOL("progress.enabled", progress.enabled, 1),
    NUM("progress.emaAlpha", progress.ema_alpha, 0.3, 0, 1, CF_LO_EXCL),
    INT("progress.streakRuns", progress.streak_runs, 3, 1, 1000, 0),
    INT("progress.historyRuns", progress.history_runs, 20, 1, 200, 0),
    INT("progress.blockNames", progress.block_names, 3, 0, 16, 0),
    BOOL("codeintel.cochangeHints", codeintel.cochange_hints, 1),
    INT("codeintel.maxHints", codeintel.max_hints, 3, 0, 10, 0),
};

const cfg_entry *config_table(size_t *n)
{
    *n = NF(settings);
    return settings;
}

/* ------------------------------------------------------ defaults, free */

void config_free(clarity_config *cfg)
{
    if (!cfg) return;
    for (size_t i = 0; i < NF(settings); i++) {
        const cfg_entry *e = &settings[i];
        if (e->type == CT_LIST) e->list->reset(cfg);
        else if (e->type == CT_PATH) free(*(char **)((char *)cfg + e->off));
    }
    memset(cfg, 0, sizeof *cfg);
}

int config_defaults(clarity_config *cfg)
{
    if (!cfg) return -1;
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NF(settings); i++) {
        const cfg_entry *e = &settings[i];
        char *at = (char *)cfg + e->off;
        switch (e->type) {
        case CT_BOOL:
        case CT_INT:
        case CT_ENUM: *(int *)at = (int)e->def; break;
        case CT_SIZE: *(size_t *)at = (size_t)e->def; break;
    case CT_I64: *(int64_t *)at = (int64_t)e->def; break;
        case CT_NUM:
        case CT_NUM_INT: *(double *)at = e->def; break;
        case CT_PATH: *(char **)at = NULL; break;
        case CT_LIST:
            if (e->list->defaults && e->list->defaults(cfg) != 0) {
                config_free(cfg);
                return -1;
            }
            break;
        }
    }
    return 0;
}

/* ----------------------------------------------------------- parsing */

/* Checks v against e's range; returns 0 or fails. */
static int check_range(pctx *p, const char *path, const cfg_entry *e, double v)
{
    int bad_lo = (e->flags & CF_LO_EXCL) ? !(v > e->lo) : !(v >= e->lo);
    int bad_hi = !(v <= e->hi);
    if (!bad_lo && !bad_hi) return 0;
    buf m;
    buf_init(&m);
    buf_puts(&m, path);
    buf_puts(&m, ": must be ");
    if (e->hi != NOHI && !(e->flags & CF_HI_OPEN)) {
        buf_puts(&m, "between ");
        put_num(&m, e->lo);
        buf_puts(&m, " and ");
        put_num(&m, e->hi);
    } else if (bad_lo) {
        buf_puts(&m, (e->flags & CF_LO_EXCL) ? "> " : ">= ");
        put_num(&m, e->lo);
    } else {
        buf_puts(&m, "<= ");
        put_num(&m, e->hi);
    }
    buf_puts(&m, ", got ");
    put_num(&m, v);
    return failb(p, CLARITY_ECONFIG, &m);
}

static int set_number(pctx *p, const char *path, const cfg_entry *e, const json_t *v)
{
    char *at = (char *)p->cfg + e->off;
    int want_int = e->type != CT_NUM;
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
    if (check_range(p, path, e, d)) return p->rc;
    if (e->type == CT_INT) *(int *)at = (int)d;
    else if (e->type == CT_SIZE) *(size_t *)at = json_is_integer(v) ? (size_t)json_integer_value(v) : (size_t)d;
    else if (e->type == CT_I64) *(int64_t *)at = json_is_integer(v) ? (int64_t)json_integer_value(v) : (int64_t)d;
    else *(double *)at = d;
    return 0;
}

/* One of e->names, as its index. */
static int set_enum(pctx *p, const char *path, const cfg_entry *e, const json_t *v)
{
    if (!json_is_string(v)) return fail_type(p, path, "a string", v);
    for (int i = 0; e->names[i]; i++) {
        if (strcmp(json_string_value(v), e->names[i]) == 0 && json_string_length(v) == strlen(e->names[i])) {
            *(int *)((char *)p->cfg + e->off) = i;
            return 0;
        }
    }
    buf what;
    buf_init(&what);
    buf_puts(&what, "must be one of ");
    for (int i = 0; e->names[i]; i++) buf_printf(&what, "%s\"%s\"", i ? ", " : "", e->names[i]);
    int rc = buf_failed(&what) ? fail_oom(p) : fail_string(p, path, what.p, v);
    buf_free(&what);
    return rc;
}

/* A string of lo..hi bytes, or null (the default). */
static int set_path(pctx *p, const char *path, const cfg_entry *e, const json_t *v)
{
    char **at = (char **)((char *)p->cfg + e->off);
    if (json_is_null(v)) {
        free(*at);
        *at = NULL;
        return 0;
    }
    if (!json_is_string(v)) return fail_type(p, path, "a string or null", v);
    size_t n = json_string_length(v);
    if (n < (size_t)e->lo || n > (size_t)e->hi)
        return fail(p, CLARITY_ECONFIG, path, "must be %.0f to %.0f bytes long, got %zu", e->lo,
                    e->hi, n);
    char *s = util_strndup(json_string_value(v), n);
    if (!s) return fail_oom(p);
    free(*at);
    *at = s;
    return 0;
}

static int set_entry(pctx *p, const char *path, const cfg_entry *e, json_t *v)
{
    switch (e->type) {
    case CT_BOOL:
        if (!json_is_boolean(v)) return fail_type(p, path, "a boolean", v);
        *(int *)((char *)p->cfg + e->off) = json_is_true(v) ? 1 : 0;
        return 0;
    case CT_ENUM: return set_enum(p, path, e, v);
    case CT_PATH: return set_path(p, path, e, v);
    case CT_LIST: return e->list->parse(p, path, v);
    default: return set_number(p, path, e, v);
    }
}

/* The entry whose key is path, or NULL; *section: some key lies below path. */
static const cfg_entry *find_entry(const char *path, int *section)
{
    size_t n = strlen(path);
    *section = 0;
    for (size_t i = 0; i < NF(settings); i++) {
        const char *k = settings[i].key;
        if (strcmp(k, path) == 0) return &settings[i];
        if (strncmp(k, path, n) == 0 && k[n] == '.') *section = 1;
    }
    return NULL;
}

static int parse_object(pctx *p, const char *path, json_t *obj)
{
    if (!json_is_object(obj)) return fail_type(p, path, "an object", obj);
    const char *key;
    json_t *v;
    char sub[160];
    json_object_foreach(obj, key, v) {
        join(sub, sizeof sub, path, key);
        int section;
        const cfg_entry *e = strlen(key) < 64 ? find_entry(sub, &section) : (section = 0, NULL);
        if (e) {
            if (set_entry(p, sub, e, v)) return p->rc;
        } else if (section) {
            if (parse_object(p, sub, v)) return p->rc;
        } else {
            return fail_unknown(p, path, key);
        }
    }
    return 0;
}

static int all_space(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') return 0;
    return 1;
}

/* scoring.model "original" is the original plugin's formula with its
 * default weights: the two that differ from the "use" model's defaults
 * take the original values unless the config sets them. */
static void original_weights(clarity_config *c, const json_t *root)
{
    if (c->scoring.model != CFG_SCORING_ORIGINAL) return;
    const json_t *sc = json_object_get(root, "scoring");
    if (!json_object_get(sc, "recencyBonus")) c->scoring.recency_bonus = 20;
    if (!json_object_get(sc, "frequencyScale")) c->scoring.frequency_scale = 10;
}

/* The Redis backend needs its URL, and a build with hiredis; a URL names
 * its scheme (the rest is checked when the store connects). */
static void check_storage(pctx *p, const clarity_config *c)
{
    const char *url = c->storage.url;
    if (url && strncmp(url, "redis://", 8) != 0 && strncmp(url, "unix://", 7) != 0) {
        fail(p, CLARITY_ECONFIG, "storage.url", "must start with redis:// or unix://, got \"%.60s\"", url);
        return;
    }
    if (c->storage.backend != CFG_STORE_REDIS) return;
#ifndef CLARITY_WITH_REDIS
    fail(p, CLARITY_ECONFIG, "storage.backend",
         "\"redis\" needs clarity built with hiredis (install libhiredis-dev and rebuild)");
#else
    if (!url) fail(p, CLARITY_ECONFIG, "storage.url", "required with storage.backend \"redis\"");
#endif
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
            parse_object(&p, "", root);
            original_weights(&tmp, root);
        }
        json_decref(root);
    }
    if (p.rc == CLARITY_OK && tmp.assemble.low_water >= tmp.assemble.high_water)
        fail(&p, CLARITY_ECONFIG, "assemble.lowWater", "must be below assemble.highWater (%g), got %g",
             tmp.assemble.high_water, tmp.assemble.low_water);
    if (p.rc == CLARITY_OK) check_storage(&p, &tmp);
    if (p.rc != CLARITY_OK) {
        config_free(&tmp);
        if (err) *err = p.err;
        else free(p.err);
        return p.rc;
    }
    *cfg = tmp;
    return CLARITY_OK;
}

/* ----------------------------------------------------------- printing */

/* The JSON value of an entry; NULL when it cannot be printed. */
static json_t *entry_json(const clarity_config *cfg, const cfg_entry *e)
{
    const char *at = (const char *)cfg + e->off;
    switch (e->type) {
    case CT_BOOL: return json_boolean(*(const int *)at != 0);
    case CT_INT: return json_integer(*(const int *)at);
    case CT_SIZE: return json_integer((json_int_t) * (const size_t *)at);
    case CT_I64: return json_integer((json_int_t) * (const int64_t *)at);
    case CT_NUM:
    case CT_NUM_INT: return isfinite(*(const double *)at) ? json_real(*(const double *)at) : NULL;
    case CT_ENUM: {
        int v = *(const int *)at, n = 0;
        while (e->names[n]) n++;
        return v >= 0 && v < n ? json_string(e->names[v]) : NULL;
    }
    case CT_PATH: return *(char *const *)at ? json_string(*(char *const *)at) : json_null();
    case CT_LIST: return e->list->print(cfg);
    }
    return NULL;
}

/* The object for the dotted section of key in root (created in order). */
static json_t *section_of(json_t *root, const char *key, const char **leaf)
{
    json_t *o = root;
    const char *k = key, *dot;
    char seg[64];
    while (o && (dot = strchr(k, '.'))) {
        size_t n = (size_t)(dot - k) < sizeof seg ? (size_t)(dot - k) : sizeof seg - 1;
        memcpy(seg, k, n);
        seg[n] = '\0';
        json_t *next = json_object_get(o, seg);
        if (!next) {
            next = json_object();
            if (!next || json_object_set_new(o, seg, next) != 0) return NULL;
        }
        o = json_is_object(next) ? next : NULL;
        k = dot + 1;
    }
    *leaf = k;
    return o;
}

static int dump_to_buf(const char *s, size_t n, void *ud)
{
    buf *b = ud;
    buf_append(b, s, n);
    return buf_failed(b) ? -1 : 0;
}

/* The precision that prints every real of cfg so it reads back exactly. */
static int real_prec(const clarity_config *cfg)
{
    int prec = 15;
    for (size_t i = 0; i < NF(settings); i++) {
        const cfg_entry *e = &settings[i];
        if (e->type != CT_NUM && e->type != CT_NUM_INT) continue;
        int r = real_precision(*(const double *)((const char *)cfg + e->off));
        if (r > prec) prec = r;
    }
    return prec;
}

/* Whether key lies under the section s[0, n) ("storage" holds
 * "storage.path"); every key does under an empty one. */
static int in_section(const char *key, const char *s, size_t n)
{
    return n == 0 || (strncmp(key, s, n) == 0 && key[n] == '.');
}

int config_has_section(const char *section)
{
    size_t n = section ? strlen(section) : 0;
    for (size_t i = 0; n && i < NF(settings); i++)
        if (in_section(settings[i].key, section, n)) return 1;
    return 0;
}

char *config_to_json(const clarity_config *cfg) { return config_section_json(cfg, NULL); }

char *config_section_json(const clarity_config *cfg, const char *section)
{
    size_t sn = section ? strlen(section) : 0;
    if (!cfg || cfg->extraction.n_tools > CFG_MAX_TOOLS ||
        cfg->extraction.n_custom > CFG_MAX_PATTERNS || cfg->extraction.n_exclude > CFG_MAX_PATTERNS)
        return NULL;
    json_t *root = json_object();
    int bad = !root;
    for (size_t i = 0; !bad && i < NF(settings); i++) {
        if (!in_section(settings[i].key, section, sn)) continue;
        const char *leaf;
        json_t *sec = section_of(root, settings[i].key, &leaf);
        json_t *v = sec ? entry_json(cfg, &settings[i]) : NULL;
        if (!v || json_object_set_new(sec, leaf, v) != 0) bad = 1;
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
                                       JSON_REAL_PRECISION(real_prec(cfg))) == 0 &&
        !buf_failed(&b))
        out = buf_steal(&b, NULL);
    buf_free(&b);
    json_decref(root);
    return out;
}
