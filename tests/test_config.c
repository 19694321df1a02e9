/* test_config.c: defaults, parsing, validation messages, JSON round trip. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../include/clarity.h"
#include "../tracker/tracker.h"

/* Parses json expecting success; returns the config. */
static clarity_config parse_ok(const char *json)
{
    clarity_config c;
    char *err = (char *)1;
    int rc = config_parse(&c, json, &err);
    cr_assert_eq(rc, CLARITY_OK, "config_parse(%s) = %d: %s", json ? json : "NULL", rc,
                 err ? err : "(null)");
    cr_assert_null(err);
    return c;
}

/* Parses json expecting CLARITY_ECONFIG and a message containing each of the
 * given fragments (NULL-terminated). */
static void parse_bad(const char *json, ...)
{
    clarity_config c;
    memset(&c, 0xAB, sizeof c);
    char *err = NULL;
    int rc = config_parse(&c, json, &err);
    cr_assert_eq(rc, CLARITY_ECONFIG, "config_parse(%s) = %d, expected ECONFIG", json, rc);
    cr_assert_not_null(err, "no message for %s", json);
    va_list ap;
    va_start(ap, json);
    for (const char *frag; (frag = va_arg(ap, const char *)) != NULL;)
        cr_assert_not_null(strstr(err, frag), "message \"%s\" lacks \"%s\" (input %s)", err, frag,
                           json);
    va_end(ap);
    /* left freed: zeroed, and config_free is safe (twice) */
    cr_assert_eq(c.extraction.n_tools, 0);
    cr_assert_null(c.extraction.tools[0]);
    cr_assert_null(c.storage.path);
    cr_assert_eq(c.enabled, 0);
    config_free(&c);
    config_free(&c);
    free(err);
}

static int str_eq(const char *a, const char *b)
{
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

/* Field-by-field equality of two configs (strings compared by value). */
static int cfg_equal(const clarity_config *a, const clarity_config *b)
{
    if (a->enabled != b->enabled || a->strict_mode != b->strict_mode) return 0;
    if (memcmp(&a->scoring, &b->scoring, sizeof a->scoring) != 0) return 0;
    if (memcmp(&a->pruning, &b->pruning, sizeof a->pruning) != 0) return 0;
    const __typeof__(a->extraction) *x = &a->extraction, *y = &b->extraction;
    if (x->n_tools != y->n_tools || x->n_custom != y->n_custom || x->n_exclude != y->n_exclude)
        return 0;
    for (size_t i = 0; i < x->n_tools; i++)
        if (!str_eq(x->tools[i], y->tools[i])) return 0;
    for (size_t i = 0; i < x->n_custom; i++)
        if (!str_eq(x->custom[i].name, y->custom[i].name) ||
            !str_eq(x->custom[i].pattern, y->custom[i].pattern))
            return 0;
    for (size_t i = 0; i < x->n_exclude; i++)
        if (!str_eq(x->exclude[i], y->exclude[i])) return 0;
    if (x->min_word_length != y->min_word_length ||
        x->max_keywords_per_message != y->max_keywords_per_message ||
        x->projects != y->projects || x->tool_names != y->tool_names ||
        x->memory_files != y->memory_files || x->source_files != y->source_files ||
        x->keywords != y->keywords)
        return 0;
    if (memcmp(&a->context, &b->context, sizeof a->context) != 0) return 0;
    if (a->storage.backend != b->storage.backend ||
        a->storage.max_resident_sessions != b->storage.max_resident_sessions ||
        !str_eq(a->storage.path, b->storage.path))
        return 0;
    return memcmp(&a->limits, &b->limits, sizeof a->limits) == 0 &&
           memcmp(&a->prediction, &b->prediction, sizeof a->prediction) == 0;
}

static void assert_defaults(const clarity_config *c)
{
    cr_assert_eq(c->enabled, 1);
    cr_assert_eq(c->strict_mode, 0);
    cr_assert_float_eq(c->scoring.half_life, 5.0, 1e-12);
    cr_assert_float_eq(c->scoring.recency_window, 3.0, 1e-12);
    cr_assert_eq(c->scoring.model, CFG_SCORING_USE);
    cr_assert_float_eq(c->scoring.recency_bonus, 80.0, 1e-12);
    cr_assert_float_eq(c->scoring.reference_weight, 15.0, 1e-12);
    cr_assert_float_eq(c->scoring.frequency_scale, 3.0, 1e-12);
    cr_assert_float_eq(c->scoring.anchor_bonus, 100.0, 1e-12);
    cr_assert_float_eq(c->pruning.prune_threshold, 8.0, 1e-12);
    /* five targets down to a tenth of the best (measured: README, Evaluating relevance) */
    cr_assert_eq(c->prediction.max_targets, 5);
    cr_assert_float_eq(c->prediction.min_score, 0.1, 1e-12);
    cr_assert_eq(c->progress.enabled, 1);
    cr_assert_float_eq(c->progress.ema_alpha, 0.3, 1e-12);
    cr_assert_eq(c->progress.streak_runs, 3);
    cr_assert_float_eq(c->pruning.strict_preserve_threshold, 25.0, 1e-12);
    cr_assert_eq(c->pruning.max_items_per_category, 20);
    cr_assert_eq(c->pruning.target_context_items, 30);
    cr_assert_eq(c->pruning.max_context_items, 50);
    cr_assert_eq(c->pruning.min_mentions_preserve, 3);
    cr_assert_float_eq(c->pruning.tier_mult[TIER_ESSENTIAL], 2.0, 1e-12);
    cr_assert_float_eq(c->pruning.tier_mult[TIER_HIGH], 1.5, 1e-12);
    cr_assert_float_eq(c->pruning.tier_mult[TIER_NORMAL], 1.0, 1e-12);
    cr_assert_float_eq(c->pruning.tier_mult[TIER_LOW], 0.8, 1e-12);
    static const char *tools[] = {"read",      "write",   "edit",   "exec",    "browser",
                                  "web_search", "web_fetch", "memory_search", "recall",
                                  "reflect",   "tts",     "subagents", "process", "nodes",
                                  "message",   "canvas",  "Read",   "Edit",    "Write",
                                  "Bash",      "Grep",    "Glob"};
    cr_assert_eq(c->extraction.n_tools, 22);
    for (size_t i = 0; i < 22; i++) cr_assert_str_eq(c->extraction.tools[i], tools[i]);
    cr_assert_null(c->extraction.tools[22]);
    cr_assert_eq(c->extraction.min_word_length, 5);
    cr_assert_eq(c->extraction.max_keywords_per_message, 8);
    cr_assert_eq(c->extraction.projects, 1);
    cr_assert_eq(c->extraction.tool_names, 1);
    cr_assert_eq(c->extraction.memory_files, 1);
    cr_assert_eq(c->extraction.source_files, 1);
    cr_assert_eq(c->extraction.keywords, 1);
    cr_assert_eq(c->extraction.n_custom, 0);
    cr_assert_eq(c->extraction.n_exclude, 0);
    cr_assert_eq(c->context.max_chars, 1500);
    cr_assert_eq(c->context.max_items, 10);
    cr_assert_float_eq(c->context.min_score, 1.0, 1e-12);
    cr_assert_float_eq(c->context.high_score, 40.0, 1e-12);
    cr_assert_float_eq(c->context.mid_score, 15.0, 1e-12);
    cr_assert_eq(c->storage.backend, CFG_STORE_AUTO);
    cr_assert_null(c->storage.path);
    cr_assert_eq(c->storage.max_resident_sessions, 256);
    cr_assert_eq(c->limits.max_tracked_items, 5000);
    cr_assert_eq(c->limits.max_prompt_bytes, (size_t)67108864);
    cr_assert_eq(c->limits.history_length, 16);
}

Test(config, defaults)
{
    clarity_config c;
    cr_assert_eq(config_defaults(&c), 0);
    assert_defaults(&c);
    /* tools are owned copies, not the static table */
    c.extraction.tools[0][0] = 'R';
    cr_assert_str_eq(c.extraction.tools[0], "Read");
    config_free(&c);
    cr_assert_eq(c.extraction.n_tools, 0);
    cr_assert_null(c.extraction.tools[0]);
    config_free(&c); /* idempotent */
    config_free(NULL);
}

Test(config, null_and_empty_give_defaults)
{
    clarity_config c = parse_ok(NULL);
    assert_defaults(&c);
    config_free(&c);
    c = parse_ok("");
    assert_defaults(&c);
    config_free(&c);
    c = parse_ok("{}");
    assert_defaults(&c);
    config_free(&c);
    c = parse_ok(" \n\t ");
    assert_defaults(&c);
    config_free(&c);
}

Test(config, null_err_pointer_is_allowed)
{
    clarity_config c;
    cr_assert_eq(config_parse(&c, "{\"enabled\":1}", NULL), CLARITY_ECONFIG);
    cr_assert_eq(config_parse(&c, "{\"enabled\":false}", NULL), CLARITY_OK);
    cr_assert_eq(c.enabled, 0);
    config_free(&c);
}

static const char *full_json =
    "{\"enabled\":false,\"strictMode\":true,"
    "\"scoring\":{\"halfLife\":2.5,\"recencyWindow\":4,\"recencyBonus\":12.5,"
    "\"referenceWeight\":7,\"frequencyScale\":3.25,\"anchorBonus\":250},"
    "\"pruning\":{\"pruneThreshold\":4.5,\"strictModePreserveThreshold\":30,"
    "\"maxItemsPerCategory\":7,\"targetContextItems\":0,\"maxContextItems\":9,"
    "\"minMentionsPreserve\":2,"
    "\"tierMultipliers\":{\"essential\":3,\"high\":1.25,\"normal\":0.5,\"low\":0}},"
    "\"extraction\":{\"tools\":[\"grep\",\"my-tool_2\"],\"minWordLength\":3,"
    "\"maxKeywordsPerMessage\":0,\"projects\":false,\"toolNames\":false,"
    "\"memoryFiles\":false,\"sourceFiles\":false,\"keywords\":false,"
    "\"customPatterns\":[{\"name\":\"ticket\",\"pattern\":\"JIRA-\\\\d+\"},"
    "{\"pattern\":\"\\\\bPR#\\\\d+\",\"name\":\"pull_req2\"}],"
    "\"exclude\":[\"^keyword:foo\",\"^tool:tts$\"]},"
    "\"context\":{\"maxChars\":64,\"maxItems\":0,\"minScore\":0,\"highScore\":50.5,"
    "\"midScore\":20},"
    "\"storage\":{\"backend\":\"sqlite\",\"path\":\"/var/lib/clarity/état.db\","
    "\"maxResidentSessions\":1},"
    "\"limits\":{\"maxTrackedItems\":10,\"maxPromptBytes\":1024,\"historyLength\":32}}";

static void assert_full(const clarity_config *c)
{
    cr_assert_eq(c->enabled, 0);
    cr_assert_eq(c->strict_mode, 1);
    cr_assert_float_eq(c->scoring.half_life, 2.5, 1e-12);
    cr_assert_float_eq(c->scoring.recency_window, 4.0, 1e-12);
    cr_assert_float_eq(c->scoring.recency_bonus, 12.5, 1e-12);
    cr_assert_float_eq(c->scoring.reference_weight, 7.0, 1e-12);
    cr_assert_float_eq(c->scoring.frequency_scale, 3.25, 1e-12);
    cr_assert_float_eq(c->scoring.anchor_bonus, 250.0, 1e-12);
    cr_assert_float_eq(c->pruning.prune_threshold, 4.5, 1e-12);
    cr_assert_float_eq(c->pruning.strict_preserve_threshold, 30.0, 1e-12);
    cr_assert_eq(c->pruning.max_items_per_category, 7);
    cr_assert_eq(c->pruning.target_context_items, 0);
    cr_assert_eq(c->pruning.max_context_items, 9);
    cr_assert_eq(c->pruning.min_mentions_preserve, 2);
    cr_assert_float_eq(c->pruning.tier_mult[TIER_ESSENTIAL], 3.0, 1e-12);
    cr_assert_float_eq(c->pruning.tier_mult[TIER_HIGH], 1.25, 1e-12);
    cr_assert_float_eq(c->pruning.tier_mult[TIER_NORMAL], 0.5, 1e-12);
    cr_assert_float_eq(c->pruning.tier_mult[TIER_LOW], 0.0, 1e-12);
    cr_assert_eq(c->extraction.n_tools, 2);
    cr_assert_str_eq(c->extraction.tools[0], "grep");
    cr_assert_str_eq(c->extraction.tools[1], "my-tool_2");
    cr_assert_null(c->extraction.tools[2]);
    cr_assert_eq(c->extraction.min_word_length, 3);
    cr_assert_eq(c->extraction.max_keywords_per_message, 0);
    cr_assert_eq(c->extraction.projects, 0);
    cr_assert_eq(c->extraction.tool_names, 0);
    cr_assert_eq(c->extraction.memory_files, 0);
    cr_assert_eq(c->extraction.source_files, 0);
    cr_assert_eq(c->extraction.keywords, 0);
    cr_assert_eq(c->extraction.n_custom, 2);
    cr_assert_str_eq(c->extraction.custom[0].name, "ticket");
    cr_assert_str_eq(c->extraction.custom[0].pattern, "JIRA-\\d+");
    cr_assert_str_eq(c->extraction.custom[1].name, "pull_req2");
    cr_assert_str_eq(c->extraction.custom[1].pattern, "\\bPR#\\d+");
    cr_assert_eq(c->extraction.n_exclude, 2);
    cr_assert_str_eq(c->extraction.exclude[0], "^keyword:foo");
    cr_assert_str_eq(c->extraction.exclude[1], "^tool:tts$");
    cr_assert_eq(c->context.max_chars, 64);
    cr_assert_eq(c->context.max_items, 0);
    cr_assert_float_eq(c->context.min_score, 0.0, 1e-12);
    cr_assert_float_eq(c->context.high_score, 50.5, 1e-12);
    cr_assert_float_eq(c->context.mid_score, 20.0, 1e-12);
    cr_assert_eq(c->storage.backend, CFG_STORE_SQLITE);
    cr_assert_str_eq(c->storage.path, "/var/lib/clarity/état.db");
    cr_assert_eq(c->storage.max_resident_sessions, 1);
    cr_assert_eq(c->limits.max_tracked_items, 10);
    cr_assert_eq(c->limits.max_prompt_bytes, (size_t)1024);
    cr_assert_eq(c->limits.history_length, 32);
}

Test(config, full_override)
{
    clarity_config c = parse_ok(full_json);
    assert_full(&c);
    config_free(&c);
    cr_assert_eq(c.extraction.n_custom, 0);
    cr_assert_null(c.extraction.custom[0].name);
    cr_assert_null(c.storage.path);
}

Test(config, partial_override_keeps_other_defaults)
{
    clarity_config c = parse_ok("{\"scoring\":{\"halfLife\":9},\"pruning\":{\"tierMultipliers\":"
                                "{\"low\":0.25}},\"storage\":{\"backend\":\"memory\"}}");
    cr_assert_float_eq(c.scoring.half_life, 9.0, 1e-12);
    cr_assert_float_eq(c.scoring.recency_bonus, 80.0, 1e-12);
    cr_assert_float_eq(c.pruning.tier_mult[TIER_LOW], 0.25, 1e-12);
    cr_assert_float_eq(c.pruning.tier_mult[TIER_ESSENTIAL], 2.0, 1e-12);
    cr_assert_eq(c.storage.backend, CFG_STORE_MEMORY);
    cr_assert_eq(c.extraction.n_tools, 22);
    cr_assert_str_eq(c.extraction.tools[21], "Glob");
    config_free(&c);
    c = parse_ok("{\"storage\":{\"backend\":\"host\",\"path\":null}}");
    cr_assert_eq(c.storage.backend, CFG_STORE_HOST);
    cr_assert_null(c.storage.path);
    config_free(&c);
}

Test(config, tools_list_replaces_defaults)
{
    clarity_config c = parse_ok("{\"extraction\":{\"tools\":[\"alpha\",\"Beta-2\",\"c_3\"]}}");
    cr_assert_eq(c.extraction.n_tools, 3);
    cr_assert_str_eq(c.extraction.tools[0], "alpha");
    cr_assert_str_eq(c.extraction.tools[1], "Beta-2");
    cr_assert_str_eq(c.extraction.tools[2], "c_3");
    cr_assert_null(c.extraction.tools[3]);
    config_free(&c);

    c = parse_ok("{\"extraction\":{\"tools\":[]}}");
    cr_assert_eq(c.extraction.n_tools, 0);
    cr_assert_null(c.extraction.tools[0]);
    config_free(&c);
}

Test(config, tools_limit)
{
    /* exactly CFG_MAX_TOOLS is fine, one more is refused */
    char json[8192];
    size_t n = (size_t)snprintf(json, sizeof json, "{\"extraction\":{\"tools\":[");
    for (int i = 0; i < CFG_MAX_TOOLS; i++)
        n += (size_t)snprintf(json + n, sizeof json - n, "%s\"t%d\"", i ? "," : "", i);
    snprintf(json + n, sizeof json - n, "]}}");
    clarity_config c = parse_ok(json);
    cr_assert_eq(c.extraction.n_tools, (size_t)CFG_MAX_TOOLS);
    cr_assert_str_eq(c.extraction.tools[CFG_MAX_TOOLS - 1], "t127");
    config_free(&c);
    snprintf(json + n, sizeof json - n, ",\"x\"]}}");
    parse_bad(json, "extraction.tools: at most 128 entries, got 129", NULL);
}

Test(config, integers_given_as_reals)
{
    clarity_config c = parse_ok("{\"extraction\":{\"minWordLength\":3.0},"
                                "\"scoring\":{\"recencyWindow\":2.0},"
                                "\"limits\":{\"maxPromptBytes\":2048.0,\"historyLength\":1e1}}");
    cr_assert_eq(c.extraction.min_word_length, 3);
    cr_assert_float_eq(c.scoring.recency_window, 2.0, 1e-12);
    cr_assert_eq(c.limits.max_prompt_bytes, (size_t)2048);
    cr_assert_eq(c.limits.history_length, 10);
    config_free(&c);
    parse_bad("{\"extraction\":{\"minWordLength\":3.5}}",
              "extraction.minWordLength: must be an integer, got 3.5", NULL);
    parse_bad("{\"scoring\":{\"recencyWindow\":1.5}}",
              "scoring.recencyWindow: must be an integer, got 1.5", NULL);
    parse_bad("{\"limits\":{\"historyLength\":16.25}}", "limits.historyLength", "integer", NULL);
}

Test(config, unknown_keys)
{
    parse_bad("{\"scoring\":{\"halfLif\":5}}", "scoring.halfLif: unknown key", NULL);
    parse_bad("{\"bogus\":1}", "bogus: unknown key", NULL);
    parse_bad("{\"$schema\":\"x\"}", "$schema: unknown key", NULL);
    parse_bad("{\"pruning\":{\"tierMultipliers\":{\"medium\":1}}}",
              "pruning.tierMultipliers.medium: unknown key", NULL);
    parse_bad("{\"extraction\":{\"customPatterns\":[{\"name\":\"a\",\"pattern\":\"x\","
              "\"flags\":\"i\"}]}}",
              "extraction.customPatterns[0].flags: unknown key", NULL);
    parse_bad("{\"storage\":{\"file\":\"x\"}}", "storage.file: unknown key", NULL);
    parse_bad("{\"limits\":{\"maxItems\":1}}", "limits.maxItems: unknown key", NULL);
    parse_bad("{\"context\":{\"max_chars\":100}}", "context.max_chars: unknown key", NULL);
    /* control characters in a key are masked in the message */
    parse_bad("{\"scoring\":{\"a\\nb\":1}}", "scoring.a?b: unknown key", NULL);
}

Test(config, wrong_types)
{
    parse_bad("{\"strictMode\":\"yes\"}", "strictMode: expected a boolean, got string", NULL);
    parse_bad("{\"enabled\":1}", "enabled: expected a boolean, got number", NULL);
    parse_bad("{\"scoring\":[]}", "scoring: expected an object, got array", NULL);
    parse_bad("{\"scoring\":{\"halfLife\":\"5\"}}",
              "scoring.halfLife: expected a number, got string", NULL);
    parse_bad("{\"pruning\":{\"maxContextItems\":null}}",
              "pruning.maxContextItems: expected an integer, got null", NULL);
    parse_bad("{\"pruning\":{\"tierMultipliers\":[1,2]}}",
              "pruning.tierMultipliers: expected an object, got array", NULL);
    parse_bad("{\"pruning\":{\"tierMultipliers\":{\"high\":true}}}",
              "pruning.tierMultipliers.high: expected a number, got boolean", NULL);
    parse_bad("{\"extraction\":{\"tools\":\"read\"}}",
              "extraction.tools: expected an array, got string", NULL);
    parse_bad("{\"extraction\":{\"tools\":[\"read\",5]}}",
              "extraction.tools[1]: expected a string, got number", NULL);
    parse_bad("{\"extraction\":{\"keywords\":0}}",
              "extraction.keywords: expected a boolean, got number", NULL);
    parse_bad("{\"extraction\":{\"customPatterns\":[\"x\"]}}",
              "extraction.customPatterns[0]: expected an object, got string", NULL);
    parse_bad("{\"extraction\":{\"customPatterns\":[{\"name\":1,\"pattern\":\"x\"}]}}",
              "extraction.customPatterns[0].name: expected a string, got number", NULL);
    parse_bad("{\"extraction\":{\"exclude\":[null]}}",
              "extraction.exclude[0]: expected a string, got null", NULL);
    parse_bad("{\"storage\":{\"backend\":1}}", "storage.backend: expected a string, got number",
              NULL);
    parse_bad("{\"storage\":{\"path\":false}}",
              "storage.path: expected a string or null, got boolean", NULL);
    parse_bad("{\"limits\":{\"maxPromptBytes\":\"64M\"}}",
              "limits.maxPromptBytes: expected an integer, got string", NULL);
}

Test(config, out_of_range)
{
    parse_bad("{\"scoring\":{\"halfLife\":-1}}", "scoring.halfLife: must be > 0, got -1", NULL);
    parse_bad("{\"scoring\":{\"halfLife\":0}}", "scoring.halfLife: must be > 0, got 0", NULL);
    parse_bad("{\"scoring\":{\"recencyWindow\":-2}}",
              "scoring.recencyWindow: must be >= 0, got -2", NULL);
    parse_bad("{\"scoring\":{\"recencyBonus\":-0.5}}",
              "scoring.recencyBonus: must be >= 0, got -0.5", NULL);
    parse_bad("{\"scoring\":{\"referenceWeight\":-3}}", "scoring.referenceWeight: must be >= 0",
              NULL);
    parse_bad("{\"scoring\":{\"frequencyScale\":-3}}", "scoring.frequencyScale: must be >= 0",
              NULL);
    parse_bad("{\"scoring\":{\"anchorBonus\":-3}}", "scoring.anchorBonus: must be >= 0", NULL);
    parse_bad("{\"pruning\":{\"pruneThreshold\":-1}}", "pruning.pruneThreshold: must be >= 0",
              NULL);
    parse_bad("{\"pruning\":{\"strictModePreserveThreshold\":-1}}",
              "pruning.strictModePreserveThreshold: must be >= 0", NULL);
    parse_bad("{\"pruning\":{\"maxItemsPerCategory\":0}}",
              "pruning.maxItemsPerCategory: must be >= 1, got 0", NULL);
    parse_bad("{\"pruning\":{\"targetContextItems\":-1}}",
              "pruning.targetContextItems: must be >= 0, got -1", NULL);
    parse_bad("{\"pruning\":{\"maxContextItems\":0}}",
              "pruning.maxContextItems: must be >= 1, got 0", NULL);
    parse_bad("{\"pruning\":{\"minMentionsPreserve\":0}}",
              "pruning.minMentionsPreserve: must be >= 1, got 0", NULL);
    parse_bad("{\"pruning\":{\"maxContextItems\":3000000000}}",
              "pruning.maxContextItems: must be <= 2147483647, got 3000000000", NULL);
    parse_bad("{\"pruning\":{\"tierMultipliers\":{\"low\":-0.1}}}",
              "pruning.tierMultipliers.low: must be >= 0, got -0.1", NULL);
    parse_bad("{\"extraction\":{\"minWordLength\":0}}",
              "extraction.minWordLength: must be between 1 and 64, got 0", NULL);
    parse_bad("{\"extraction\":{\"minWordLength\":65}}",
              "extraction.minWordLength: must be between 1 and 64, got 65", NULL);
    parse_bad("{\"extraction\":{\"maxKeywordsPerMessage\":65}}",
              "extraction.maxKeywordsPerMessage: must be between 0 and 64, got 65", NULL);
    parse_bad("{\"context\":{\"maxChars\":63}}",
              "context.maxChars: must be between 64 and 1000000, got 63", NULL);
    parse_bad("{\"context\":{\"maxChars\":1000001}}", "context.maxChars: must be between", NULL);
    parse_bad("{\"context\":{\"maxItems\":1001}}",
              "context.maxItems: must be between 0 and 1000, got 1001", NULL);
    parse_bad("{\"context\":{\"minScore\":-1}}", "context.minScore: must be >= 0", NULL);
    parse_bad("{\"context\":{\"highScore\":-1}}", "context.highScore: must be >= 0", NULL);
    parse_bad("{\"context\":{\"midScore\":-1}}", "context.midScore: must be >= 0", NULL);
    parse_bad("{\"storage\":{\"maxResidentSessions\":0}}",
              "storage.maxResidentSessions: must be between 1 and 1000000, got 0", NULL);
    parse_bad("{\"limits\":{\"maxTrackedItems\":9}}",
              "limits.maxTrackedItems: must be between 10 and 10000000, got 9", NULL);
    parse_bad("{\"limits\":{\"maxPromptBytes\":1023}}",
              "limits.maxPromptBytes: must be between 1024 and 1073741824, got 1023", NULL);
    parse_bad("{\"limits\":{\"maxPromptBytes\":1073741825}}", "limits.maxPromptBytes", NULL);
    parse_bad("{\"limits\":{\"historyLength\":0}}",
              "limits.historyLength: must be between 1 and 32, got 0", NULL);
    parse_bad("{\"limits\":{\"historyLength\":33}}",
              "limits.historyLength: must be between 1 and 32, got 33", NULL);
    parse_bad("{\"limits\":{\"maxTrackedItems\":1e300}}", "limits.maxTrackedItems",
              "got 1e+300", NULL);
}

Test(config, range_boundaries_accepted)
{
    clarity_config c = parse_ok(
        "{\"scoring\":{\"halfLife\":1e-9,\"recencyWindow\":0},"
        "\"extraction\":{\"minWordLength\":64,\"maxKeywordsPerMessage\":64},"
        "\"context\":{\"maxChars\":1000000,\"maxItems\":1000},"
        "\"storage\":{\"maxResidentSessions\":1000000},"
        "\"limits\":{\"maxTrackedItems\":10000000,\"maxPromptBytes\":1073741824,"
        "\"historyLength\":1}}");
    cr_assert_float_eq(c.scoring.half_life, 1e-9, 1e-20);
    cr_assert_float_eq(c.scoring.recency_window, 0.0, 1e-12);
    cr_assert_eq(c.extraction.min_word_length, 64);
    cr_assert_eq(c.extraction.max_keywords_per_message, 64);
    cr_assert_eq(c.context.max_chars, 1000000);
    cr_assert_eq(c.context.max_items, 1000);
    cr_assert_eq(c.storage.max_resident_sessions, 1000000);
    cr_assert_eq(c.limits.max_tracked_items, 10000000);
    cr_assert_eq(c.limits.max_prompt_bytes, (size_t)1073741824);
    cr_assert_eq(c.limits.history_length, 1);
    config_free(&c);
}

Test(config, invalid_json_and_top_level)
{
    parse_bad("{\"enabled\":}", "config: invalid JSON at line 1, column 12:", NULL);
    parse_bad("{\n  \"enabled\": tru\n}", "config: invalid JSON at line 2,", NULL);
    parse_bad("{\"a\":1", "config: invalid JSON at line 1,", NULL);
    parse_bad("{\"enabled\":true,\"enabled\":false}", "config: invalid JSON", "duplicate", NULL);
    parse_bad("{\"enabled\":true} x", "config: invalid JSON", NULL);
    parse_bad("[1,2]", "config: top level must be a JSON object, got array", NULL);
    parse_bad("42", "config: top level must be a JSON object, got number", NULL);
    parse_bad("\"x\"", "config: top level must be a JSON object, got string", NULL);
    parse_bad("null", "config: top level must be a JSON object, got null", NULL);
    /* invalid UTF-8 is a JSON error; the message stays ASCII */
    parse_bad("{\"storage\":{\"path\":\"\xff\"}}", "config: invalid JSON", NULL);
}

Test(config, bad_regex)
{
    parse_bad("{\"extraction\":{\"customPatterns\":[{\"name\":\"t\",\"pattern\":\"(abc\"}]}}",
              "extraction.customPatterns[0].pattern: missing closing parenthesis at offset 4",
              NULL);
    parse_bad("{\"extraction\":{\"customPatterns\":[{\"name\":\"ok\",\"pattern\":\"a\"},"
              "{\"name\":\"t\",\"pattern\":\"a[b\"}]}}",
              "extraction.customPatterns[1].pattern: ", "offset 3", NULL);
    parse_bad("{\"extraction\":{\"exclude\":[\"^ok$\",\"x{2,1}\"]}}",
              "extraction.exclude[1]: ", "at offset ", NULL);
    parse_bad("{\"extraction\":{\"exclude\":[\"*a\"]}}", "extraction.exclude[0]: ",
              "quantifier does not follow a repeatable item at offset 0", NULL);
    parse_bad("{\"extraction\":{\"exclude\":[\"\"]}}",
              "extraction.exclude[0]: must be a non-empty regex", NULL);
    /* UTF mode is on: \x{100} is a valid code point, a lone surrogate is not */
    clarity_config c = parse_ok("{\"extraction\":{\"exclude\":[\"\\\\x{100}\", \"é+\"]}}");
    cr_assert_eq(c.extraction.n_exclude, 2);
    cr_assert_str_eq(c.extraction.exclude[1], "é+");
    config_free(&c);
    parse_bad("{\"extraction\":{\"exclude\":[\"\\\\x{d800}\"]}}", "extraction.exclude[0]: ",
              "offset", NULL);
}

Test(config, custom_pattern_names)
{
    parse_bad("{\"extraction\":{\"customPatterns\":[{\"name\":\"Ticket\",\"pattern\":\"x\"}]}}",
              "extraction.customPatterns[0].name: must match [a-z][a-z0-9_]*", "\"Ticket\"",
              NULL);
    parse_bad("{\"extraction\":{\"customPatterns\":[{\"name\":\"9a\",\"pattern\":\"x\"}]}}",
              "extraction.customPatterns[0].name: must match", NULL);
    parse_bad("{\"extraction\":{\"customPatterns\":[{\"name\":\"a-b\",\"pattern\":\"x\"}]}}",
              "extraction.customPatterns[0].name: must match", NULL);
    parse_bad("{\"extraction\":{\"customPatterns\":[{\"name\":\"\",\"pattern\":\"x\"}]}}",
              "extraction.customPatterns[0].name: must match", NULL);
    static const char *reserved[] = {"tool", "file", "keyword", "project"};
    for (size_t i = 0; i < 4; i++) {
        char json[200], want[100];
        snprintf(json, sizeof json,
                 "{\"extraction\":{\"customPatterns\":[{\"name\":\"%s\",\"pattern\":\"x\"}]}}",
                 reserved[i]);
        snprintf(want, sizeof want, "extraction.customPatterns[0].name: \"%s\" is reserved",
                 reserved[i]);
        parse_bad(json, want, NULL);
    }
    parse_bad("{\"extraction\":{\"customPatterns\":[{\"name\":\"a\",\"pattern\":\"x\"},"
              "{\"name\":\"a\",\"pattern\":\"y\"}]}}",
              "extraction.customPatterns[1].name: duplicate name \"a\"", NULL);
    parse_bad("{\"extraction\":{\"customPatterns\":[{\"pattern\":\"x\"}]}}",
              "extraction.customPatterns[0].name: missing required key", NULL);
    parse_bad("{\"extraction\":{\"customPatterns\":[{\"name\":\"a\"}]}}",
              "extraction.customPatterns[0].pattern: missing required key", NULL);
    parse_bad("{\"extraction\":{\"customPatterns\":[{\"name\":\"a\",\"pattern\":\"\"}]}}",
              "extraction.customPatterns[0].pattern: must be a non-empty regex", NULL);
    /* names like "tools" or "files" are not reserved */
    clarity_config c = parse_ok("{\"extraction\":{\"customPatterns\":[{\"name\":\"tools\","
                                "\"pattern\":\"x\"},{\"name\":\"a_1\",\"pattern\":\"y\"}]}}");
    cr_assert_eq(c.extraction.n_custom, 2);
    cr_assert_str_eq(c.extraction.custom[0].name, "tools");
    cr_assert_str_eq(c.extraction.custom[1].name, "a_1");
    cr_assert_str_eq(c.extraction.custom[1].pattern, "y");
    config_free(&c);
}

Test(config, pattern_count_limits)
{
    char json[16384];
    size_t n = (size_t)snprintf(json, sizeof json, "{\"extraction\":{\"exclude\":[");
    for (int i = 0; i <= CFG_MAX_PATTERNS; i++)
        n += (size_t)snprintf(json + n, sizeof json - n, "%s\"x%d\"", i ? "," : "", i);
    snprintf(json + n, sizeof json - n, "]}}");
    parse_bad(json, "extraction.exclude: at most 64 entries, got 65", NULL);

    n = (size_t)snprintf(json, sizeof json, "{\"extraction\":{\"customPatterns\":[");
    for (int i = 0; i < CFG_MAX_PATTERNS; i++)
        n += (size_t)snprintf(json + n, sizeof json - n,
                              "%s{\"name\":\"p%d\",\"pattern\":\"x%d\"}", i ? "," : "", i, i);
    snprintf(json + n, sizeof json - n, "]}}");
    clarity_config c = parse_ok(json);
    cr_assert_eq(c.extraction.n_custom, (size_t)CFG_MAX_PATTERNS);
    cr_assert_str_eq(c.extraction.custom[63].name, "p63");
    cr_assert_str_eq(c.extraction.custom[63].pattern, "x63");
    config_free(&c);
    snprintf(json + n, sizeof json - n, ",{\"name\":\"z\",\"pattern\":\"z\"}]}}");
    parse_bad(json, "extraction.customPatterns: at most 64 entries, got 65", NULL);
}

Test(config, tool_names_validated)
{
    parse_bad("{\"extraction\":{\"tools\":[\"read\",\"\"]}}",
              "extraction.tools[1]: must be a non-empty name of [A-Za-z0-9_-], got \"\"", NULL);
    parse_bad("{\"extraction\":{\"tools\":[\"a b\"]}}", "extraction.tools[0]: must be",
              "got \"a b\"", NULL);
    parse_bad("{\"extraction\":{\"tools\":[\"tool:x\"]}}", "extraction.tools[0]: must be", NULL);
    parse_bad("{\"extraction\":{\"tools\":[\"é\"]}}", "extraction.tools[0]: must be", NULL);
}

Test(config, storage_values)
{
    parse_bad("{\"storage\":{\"backend\":\"mongo\"}}",
              "storage.backend: must be one of \"auto\", \"sqlite\", \"host\", \"memory\", \"redis\", "
              "got \"mongo\"",
              NULL);
    parse_bad("{\"storage\":{\"url\":\"http://x\"}}",
              "storage.url: must start with redis:// or unix://, got \"http://x\"", NULL);
#ifdef CLARITY_WITH_REDIS
    parse_bad("{\"storage\":{\"backend\":\"redis\"}}",
              "storage.url: required with storage.backend \"redis\"", NULL);
    clarity_config r = parse_ok("{\"storage\":{\"backend\":\"redis\",\"url\":\"redis://h:1/2\","
                                "\"keyPrefix\":\"app:\",\"timeoutMs\":250}}");
    cr_assert_eq(r.storage.backend, CFG_STORE_REDIS);
    cr_assert_str_eq(r.storage.url, "redis://h:1/2");
    cr_assert_str_eq(r.storage.key_prefix, "app:");
    cr_assert_eq(r.storage.timeout_ms, 250);
    config_free(&r);
#else
    parse_bad("{\"storage\":{\"backend\":\"redis\",\"url\":\"redis://h\"}}",
              "storage.backend: \"redis\" needs clarity built with hiredis", NULL);
#endif
    parse_bad("{\"storage\":{\"backend\":\"SQLite\"}}", "storage.backend: must be one of", NULL);
    parse_bad("{\"storage\":{\"path\":\"\"}}", "storage.path: must be 1 to 4096 bytes long, got 0",
              NULL);
    parse_bad("{\"storage\":{\"exclusive\":\"yes\"}}", "storage.exclusive: expected a boolean, got string", NULL);
    clarity_config x = parse_ok("{\"storage\":{\"exclusive\":true}}");
    cr_assert_eq(x.storage.exclusive, 1);
    config_free(&x);
    clarity_config c = parse_ok("{\"storage\":{\"backend\":\"auto\",\"path\":\"x.db\"}}");
    cr_assert_eq(c.storage.exclusive, 0); /* the default: the file is shared */
    cr_assert_eq(c.storage.backend, CFG_STORE_AUTO);
    cr_assert_str_eq(c.storage.path, "x.db");
    config_free(&c);
    cr_assert_null(c.storage.path);
}

/* "original" is the original plugin's formula with its weights: the two
 * weights whose defaults differ between the models follow the model unless
 * the config sets them */
Test(config, scoring_model_original_takes_its_weights)
{
    clarity_config c = parse_ok("{\"scoring\":{\"model\":\"original\"}}");
    cr_assert_eq(c.scoring.model, CFG_SCORING_ORIGINAL);
    cr_assert_float_eq(c.scoring.recency_bonus, 20.0, 1e-12);
    cr_assert_float_eq(c.scoring.frequency_scale, 10.0, 1e-12);
    config_free(&c);
    c = parse_ok("{\"scoring\":{\"model\":\"original\",\"recencyBonus\":50}}");
    cr_assert_float_eq(c.scoring.recency_bonus, 50.0, 1e-12);
    cr_assert_float_eq(c.scoring.frequency_scale, 10.0, 1e-12);
    config_free(&c);
    c = parse_ok("{\"scoring\":{\"model\":\"use\"}}");
    cr_assert_eq(c.scoring.model, CFG_SCORING_USE);
    cr_assert_float_eq(c.scoring.recency_bonus, 80.0, 1e-12);
    cr_assert_float_eq(c.scoring.frequency_scale, 3.0, 1e-12);
    config_free(&c);
    parse_bad("{\"scoring\":{\"model\":\"recent\"}}",
              "scoring.model: must be one of \"use\", \"original\", got \"recent\"", NULL);
}

Test(config, long_values_truncated_in_message)
{
    char json[600];
    char name[300];
    memset(name, 'A', 299);
    name[299] = '\0';
    snprintf(json, sizeof json, "{\"storage\":{\"backend\":\"%s\"}}", name);
    clarity_config c;
    char *err = NULL;
    cr_assert_eq(config_parse(&c, json, &err), CLARITY_ECONFIG);
    cr_assert_not_null(strstr(err, "storage.backend: must be one of"));
    cr_assert_not_null(strstr(err, "...\""));
    cr_assert_lt(strlen(err), 200);
    free(err);
}

Test(config, round_trip_defaults)
{
    clarity_config d;
    cr_assert_eq(config_defaults(&d), 0);
    char *js = config_to_json(&d);
    cr_assert_not_null(js);
    /* camelCase keys, null path, compact */
    cr_assert_not_null(strstr(js, "\"halfLife\":5.0"));
    cr_assert_not_null(strstr(js, "\"low\":0.8"));
    cr_assert_not_null(strstr(js, "\"path\":null"));
    cr_assert_not_null(strstr(js, "\"backend\":\"auto\""));
    cr_assert_not_null(strstr(js, "\"maxPromptBytes\":67108864"));
    cr_assert_not_null(strstr(js, "\"strictModePreserveThreshold\":25.0"));
    cr_assert_not_null(strstr(js, "\"customPatterns\":[]"));
    cr_assert_not_null(strstr(js, "\"tools\":[\"read\",\"write\","));
    cr_assert_null(strchr(js, '\n'));
    clarity_config r = parse_ok(js);
    cr_assert(cfg_equal(&d, &r), "round trip differs: %s", js);
    free(js);
    config_free(&r);
    config_free(&d);
}

Test(config, round_trip_full_and_awkward_reals)
{
    clarity_config a = parse_ok(full_json);
    a.scoring.half_life = 0.1 + 0.2; /* needs 17 digits */
    a.context.mid_score = 1e-300;
    char *js = config_to_json(&a);
    cr_assert_not_null(js);
    cr_assert_not_null(strstr(js, "\"path\":\"/var/lib/clarity/état.db\""));
    cr_assert_not_null(strstr(js, "\"backend\":\"sqlite\""));
    cr_assert_not_null(strstr(js, "{\"name\":\"ticket\",\"pattern\":\"JIRA-\\\\d+\"}"));
    clarity_config b = parse_ok(js);
    cr_assert(cfg_equal(&a, &b), "round trip differs: %s", js);
    cr_assert_eq(b.scoring.half_life, 0.1 + 0.2);
    cr_assert_eq(b.context.mid_score, 1e-300);
    b.scoring.half_life = 2.5;
    b.context.mid_score = 20;
    assert_full(&b);
    free(js);
    config_free(&a);
    config_free(&b);
}

Test(config, to_json_null_and_invalid)
{
    cr_assert_null(config_to_json(NULL));
    clarity_config c;
    cr_assert_eq(config_defaults(&c), 0);
    c.storage.backend = 7;
    cr_assert_null(config_to_json(&c));
    config_free(&c);
}

/* ---- every entry of the settings table ---------------------------------- */

/* A JSON object setting the dotted key to the JSON text val. */
static char *with_value(const char *key, const char *val)
{
    char *out = malloc(4096);
    cr_assert_not_null(out);
    size_t n = 0, depth = 0;
    const char *k = key;
    for (const char *dot; (dot = strchr(k, '.')); k = dot + 1, depth++)
        n += (size_t)snprintf(out + n, 4096 - n, "{\"%.*s\":", (int)(dot - k), k);
    n += (size_t)snprintf(out + n, 4096 - n, "{\"%s\":%s}", k, val);
    for (size_t i = 0; i < depth; i++) out[n++] = '}';
    out[n] = '\0';
    return out;
}

/* A valid value other than the default, as JSON text. */
static void non_default(const cfg_entry *e, char *v, size_t n)
{
    switch (e->type) {
    case CT_BOOL: snprintf(v, n, "%s", e->def ? "false" : "true"); break;
    case CT_ENUM: snprintf(v, n, "\"%s\"", e->names[(int)e->def + 1] ? e->names[(int)e->def + 1] : e->names[0]); break;
    case CT_PATH:
        snprintf(v, n, strcmp(e->key, "storage.url") == 0 ? "\"redis://127.0.0.1:6379/0\"" : "\"/tmp/clarity-roundtrip.db\"");
        break;
    case CT_LIST:
        if (strstr(e->key, "customPatterns")) snprintf(v, n, "[{\"name\":\"ticket\",\"pattern\":\"[A-Z]+-\\\\d+\"}]");
        else if (strstr(e->key, "exclude")) snprintf(v, n, "[\"^keyword:lorem\"]");
        else snprintf(v, n, "[\"alpha\",\"beta_2\"]");
        break;
    default: {
        /* above the default, within the bounds (midway to hi when +1 is
         * too much: a share such as highWater keeps its relations) */
        double x = e->def + 1;
        if (x > e->hi) x = e->type == CT_NUM ? (e->def + e->hi) / 2 : e->lo + ((e->flags & CF_LO_EXCL) ? 0.5 : 0);
        if (e->type != CT_NUM) x = floor(x);
        snprintf(v, n, e->type == CT_NUM ? "%.17g" : "%.0f", x);
    }
    }
}

Test(config, every_setting_round_trips_through_json)
{
    size_t n;
    const cfg_entry *t = config_table(&n);
    cr_assert(n >= 40, "the table has %zu entries", n);
    char *def = NULL;
    clarity_config d = parse_ok(NULL);
    def = config_to_json(&d);
    config_free(&d);
    for (size_t i = 0; i < n; i++) {
        char val[256];
        non_default(&t[i], val, sizeof val);
        char *json = with_value(t[i].key, val);
        clarity_config a = parse_ok(json);
        char *printed = config_to_json(&a);
        cr_assert_not_null(printed, "%s", t[i].key);
        cr_assert_str_neq(printed, def, "%s = %s did not change the effective config", t[i].key, val);
        clarity_config b = parse_ok(printed);
        char *again = config_to_json(&b);
        cr_assert_str_eq(printed, again, "%s does not read back as printed", t[i].key);
        config_free(&a);
        config_free(&b);
        free(printed);
        free(again);
        free(json);
    }
    free(def);
}

/* Each entry refuses a value of the wrong type, and a number out of its
 * bounds, with a message that names its dotted key. */
Test(config, every_setting_names_its_key_when_refused)
{
    size_t n;
    const cfg_entry *t = config_table(&n);
    for (size_t i = 0; i < n; i++) {
        const char *wrong = t[i].type == CT_BOOL || t[i].type >= CT_INT ? "{\"x\":1}" : "1";
        if (t[i].type == CT_ENUM || t[i].type == CT_LIST || t[i].type == CT_PATH) wrong = "17";
        char *json = with_value(t[i].key, wrong);
        parse_bad(json, t[i].key, NULL);
        free(json);
        if (t[i].type == CT_INT || t[i].type == CT_SIZE || t[i].type == CT_NUM || t[i].type == CT_NUM_INT || t[i].type == CT_I64) {
            char low[64];
            snprintf(low, sizeof low, "%.17g", (t[i].flags & CF_LO_EXCL) ? t[i].lo : t[i].lo - 1);
            json = with_value(t[i].key, low);
            parse_bad(json, t[i].key, "must be", NULL);
            free(json);
        }
    }
}
