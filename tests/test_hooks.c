/* Hooks through dlopen: mentions, the context block, references, turns,
 * compaction, bad input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "testhost.h"

#define MEM "{\"storage\":{\"backend\":\"memory\"}}"

static th_host h;
static void setup(void) { cr_assert_eq(th_open(&h, MEM, 0, NULL), 0); }
static void teardown(void) { th_close(&h); }
TestSuite(hooks, .init = setup, .fini = teardown);

static json_t *scores(const char *session)
{
    char params[256];
    snprintf(params, sizeof params, "{\"session\":\"%s\"}", session);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.getScores", params, &j), 0);
    cr_assert_not_null(j);
    return j;
}

static int64_t ival(json_t *item, const char *k) { return json_integer_value(json_object_get(item, k)); }

Test(hooks, prompt_mentions_become_items_and_block)
{
    const char *prompt = "Refactor ClaraCore and focus-engine: use web_search, then read "
                         "memory/active-context.md, SOUL.md and src/auth/session.ts";
    char *block = NULL;
    cr_assert_eq(th_before(&h, "s1", NULL, prompt, strlen(prompt), &block), 0);
    cr_assert_not_null(block);
    cr_assert(strncmp(block, "[CLARITY CONTEXT]\n", 18) == 0, "block: %s", block);
    cr_assert_not_null(strstr(block, "[/CLARITY CONTEXT]"));
    /* one fresh mention: frequency 3 + recency 80 = 83 (the "use" model's
     * default weights) -> the high marker with the default thresholds */
    cr_assert_not_null(strstr(block, "\xE2\x97\x8F claracore (83)"), "block: %s", block);
    free(block);
    json_t *j = scores("s1");
    const char *ids[] = {"claracore", "focus_engine", "tool:web_search", "tool:read",
                         "file:memory/active-context.md", "file:soul.md", "file:src/auth/session.ts"};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        json_t *it = th_item(j, ids[i]);
        cr_assert_not_null(it, "missing %s", ids[i]);
        cr_assert_eq(ival(it, "mentionCount"), 1);
        cr_assert_eq(ival(it, "lastMentionTurn"), 0);
    }
    cr_assert_str_eq(json_string_value(json_object_get(th_item(j, "claracore"), "category")), "project");
    cr_assert_str_eq(json_string_value(json_object_get(th_item(j, "file:soul.md"), "category")), "file");
    json_decref(j);
}

Test(hooks, references_count_whole_words_and_tool_args)
{
    const char *prompt = "Look at ClaraCore and src/auth/session.ts please, and use web_search";
    cr_assert_eq(th_before(&h, "s", "/ws", prompt, strlen(prompt), NULL), 0);
    /* "claracores" and "web_searching" must not count: word boundaries */
    cr_assert_eq(th_end(&h, "s", "I checked claracores and web_searching is off. ClaraCore is fine.",
                        "Read", "{\"file_path\":\"/ws/src/auth/session.ts\"}"), 0);
    json_t *j = scores("s");
    cr_assert_eq(json_integer_value(json_object_get(j, "currentTurn")), 1);
    cr_assert_eq(ival(th_item(j, "claracore"), "referenceCount"), 1);
    cr_assert_eq(ival(th_item(j, "file:src/auth/session.ts"), "referenceCount"), 1);
    cr_assert_eq(ival(th_item(j, "tool:web_search"), "referenceCount"), 0);
    json_decref(j);
}

Test(hooks, tool_files_become_tracked_items)
{
    cr_assert_eq(th_end(&h, "s", "done", "Edit", "{\"file_path\":\"/ws/lib/x.py\"}"), 0);
    json_t *j = scores("s");
    json_t *it = th_item(j, "file:/ws/lib/x.py");
    cr_assert_not_null(it, "no workspace known: the path stays absolute");
    cr_assert_eq(ival(it, "referenceCount"), 1);
    cr_assert_eq(ival(it, "mentionCount"), 0);
    json_decref(j);
}

Test(hooks, scores_follow_the_formula_over_turns)
{
    const char *p = "ClaraCore";
    cr_assert_eq(th_before(&h, "s", NULL, p, strlen(p), NULL), 0);
    for (int i = 0; i < 4; i++) cr_assert_eq(th_end(&h, "s", "ok", NULL, NULL), 0);
    /* d = 4: frequency 3 (one mention, default scale 3), recency 0,
     * staleness (1 - 0.5^(1/5)) * 3 */
    json_t *j = scores("s");
    json_t *it = th_item(j, "claracore");
    json_t *b = json_object_get(it, "breakdown");
    cr_assert_float_eq(json_real_value(json_object_get(b, "frequency")), 3.0, 1e-3);
    cr_assert_float_eq(json_real_value(json_object_get(b, "recency")), 0.0, 1e-3);
    cr_assert_float_eq(json_real_value(json_object_get(b, "stalenessPenalty")), 0.388, 1e-3);
    cr_assert_float_eq(json_real_value(json_object_get(it, "score")), 2.612, 1e-3);
    json_decref(j);
}

Test(hooks, mention_counts_once_per_turn_and_block_is_deterministic)
{
    const char *p = "ClaraCore ClaraCore focus-engine";
    char *b1 = NULL, *b2 = NULL;
    cr_assert_eq(th_before(&h, "s", NULL, p, strlen(p), &b1), 0);
    cr_assert_eq(th_before(&h, "s", NULL, p, strlen(p), &b2), 0);
    cr_assert_str_eq(b1, b2);
    /* equal scores: ordered by id */
    cr_assert(strstr(b1, "claracore") < strstr(b1, "focus_engine"));
    free(b1);
    free(b2);
    json_t *j = scores("s");
    cr_assert_eq(ival(th_item(j, "claracore"), "mentionCount"), 1);
    json_decref(j);
}

Test(hooks, own_block_is_not_fed_back)
{
    const char *p1 = "Working on ClaraCore";
    char *block = NULL;
    cr_assert_eq(th_before(&h, "s", NULL, p1, strlen(p1), &block), 0);
    cr_assert_eq(th_end(&h, "s", "ok", NULL, NULL), 0);
    char prompt[4096];
    snprintf(prompt, sizeof prompt, "%snow about focus-engine", block);
    free(block);
    cr_assert_eq(th_before(&h, "s", NULL, prompt, strlen(prompt), NULL), 0);
    json_t *j = scores("s");
    cr_assert_eq(ival(th_item(j, "claracore"), "mentionCount"), 1);
    cr_assert_eq(ival(th_item(j, "focus_engine"), "mentionCount"), 1);
    json_decref(j);
}

Test(hooks, block_respects_character_budget)
{
    th_close(&h);
    cr_assert_eq(th_open(&h, "{\"storage\":{\"backend\":\"memory\"},\"context\":{\"maxChars\":100,\"maxItems\":50}}", 0, NULL), 0);
    const char *p = "AlphaOne BetaTwo GammaThree DeltaFour EpsilonFive ZetaSix EtaSeven ThetaEight";
    char *block = NULL;
    cr_assert_eq(th_before(&h, "s", NULL, p, strlen(p), &block), 0);
    cr_assert_not_null(block);
    cr_assert_leq(strlen(block), 100, "block of %zu chars: %s", strlen(block), block);
    cr_assert_not_null(strstr(block, "[/CLARITY CONTEXT]"));
    free(block);
}

Test(hooks, anchored_items_carry_the_anchor_mark)
{
    const char *p = "ClaraCore";
    cr_assert_eq(th_before(&h, "s", NULL, p, strlen(p), NULL), 0);
    cr_assert_eq(th_cmd(&h, "s", "/clarity anchor ClaraCore", NULL, NULL), 0);
    char *block = NULL;
    cr_assert_eq(th_before(&h, "s", NULL, "", 0, &block), 0);
    cr_assert_not_null(strstr(block, "\xE2\x97\x8F \xE2\x9A\x93 claracore (183)"), "block: %s", block);
    free(block);
}

Test(hooks, compaction_prunes_and_reports)
{
    char prompt[256];
    for (int i = 0; i < 40; i++) {
        snprintf(prompt, sizeof prompt, "Topic%cxample%c and Topic%cxtra", 'A' + i % 26, 'a' + i / 26, 'A' + i % 26);
        cr_assert_eq(th_before(&h, "s", NULL, prompt, strlen(prompt), NULL), 0);
        cr_assert_eq(th_end(&h, "s", "ok", NULL, NULL), 0);
    }
    char *report = NULL;
    cr_assert_eq(th_compact(&h, "s", &report), 0);
    cr_assert_not_null(strstr(report, "[CLARITY PRUNE REPORT]"), "%s", report);
    cr_assert_not_null(strstr(report, "Pruned:"), "%s", report);
    cr_assert_not_null(strstr(report, "Conversation at compaction: 10 messages, 1000 tokens"));
    free(report);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.stats", "{\"session\":\"s\"}", &j), 0);
    cr_assert_gt(json_integer_value(json_object_get(j, "prunedItems")), 0);
    json_decref(j);
}

Test(hooks, bad_input_is_refused_and_state_unchanged)
{
    const char *p = "ClaraCore";
    cr_assert_eq(th_before(&h, "s", NULL, p, strlen(p), NULL), 0);
    /* invalid UTF-8 and NUL bytes: extracted around, never a crash */
    const char bad[] = "\xff\xfe ClaraCore \x00 focus-engine \xc3\x28 web_search";
    cr_assert_eq(th_before(&h, "s", NULL, bad, sizeof bad - 1, NULL), 0);
    json_t *j = scores("s");
    cr_assert_not_null(th_item(j, "focus_engine"), "ids after a NUL byte are still found");
    json_decref(j);
    /* a prompt beyond limits.maxPromptBytes: a clear error, no change */
    th_close(&h);
    cr_assert_eq(th_open(&h, "{\"storage\":{\"backend\":\"memory\"},\"limits\":{\"maxPromptBytes\":1024}}", 0, NULL), 0);
    char big[2048];
    memset(big, 'a', sizeof big);
    clarity_before_agent_start pl = {sizeof pl, "s", NULL, big, sizeof big, NULL, 0};
    clarity_event ev = {sizeof ev, CLARITY_EV_BEFORE_AGENT_START, 1, &pl};
    clarity_result r = {.struct_size = sizeof r};
    cr_assert_eq(h.p.on_event(h.p.self, &ev, &r), CLARITY_EINVAL);
    cr_assert_not_null(strstr(r.error, "maxPromptBytes"), "%s", r.error);
    h.p.release(h.p.self, &r);
    cr_assert_eq(th_rpc(&h, "clarity.getScores", "{\"session\":\"s\"}", NULL), CLARITY_ENOTFOUND);
}

Test(hooks, a_64_mib_prompt_is_handled, .timeout = 120)
{
    size_t n = 64u << 20;
    char *big = malloc(n);
    cr_assert_not_null(big);
    static const char words[] = "lorem ipsum ClaraCore src/auth/session.ts dolor \xff sit amet\n";
    for (size_t i = 0; i < n; i++) big[i] = words[i % (sizeof words - 1)];
    char *block = NULL;
    cr_assert_eq(th_before(&h, "big", NULL, big, n, &block), 0);
    cr_assert_not_null(strstr(block, "claracore"));
    free(block);
    free(big);
}

/* A turn's references are looked up in batches (hooks.c's ref_ctx): more
 * of them than one batch holds, a tool call's new file between them, an
 * id longer than the batch's room, and a name only the turn's last
 * message gives each count once, as one at a time. */
Test(hooks, references_in_batches_count_as_one_by_one)
{
    enum { N = 100 };
    char prompt[N * 8 + 16], text[N * 16 + 1];
    size_t pl = 0;
    for (int i = 0; i < N; i++) /* CamelCase names: fooba, foobb, ... */
        pl += (size_t)snprintf(prompt + pl, sizeof prompt - pl, "Foo%c%c ", 'B' + i / 26, 'a' + i % 26);
    memcpy(text, prompt, pl);
    memcpy(text + pl, prompt, pl); /* named twice over: counted once */
    text[2 * pl] = '\0';
    memcpy(prompt + pl, "ZetaCore", 9);
    cr_assert_eq(th_before(&h, "b", "/ws", prompt, pl + 8, NULL), 0);
    /* a file id of 3,000 bytes, more than the batch holds: a tool call's
     * path, the one way to an id that long (text's are shorter) */
    char path[3000], args[3100];
    memset(path, 'd', sizeof path);
    for (size_t i = 100; i + 1 < sizeof path; i += 100) path[i] = '/';
    strcpy(path + sizeof path - 5, ".zzz");
    snprintf(args, sizeof args, "{\"file_path\":\"/ws/%s\"}", path);
    const clarity_message msgs[] = {
        {sizeof(clarity_message), "assistant", text, strlen(text), NULL, NULL},
        {sizeof(clarity_message), "assistant", "and lib/new.py", 14, "Read",
         "{\"file_path\":\"/ws/lib/new.py\",\"note\":\"lib/new.py\"}"},
        {sizeof(clarity_message), "assistant", "", 0, "Read", args},
        {sizeof(clarity_message), "assistant", "ZetaCore it is", 14, NULL, NULL},
    };
    cr_assert_eq(th_end_msgs(&h, "b", msgs, sizeof msgs / sizeof *msgs), 0);
    json_t *j = scores("b");
    for (int i = 0; i < N; i++) {
        char id[8];
        snprintf(id, sizeof id, "foo%c%c", 'b' + i / 26, 'a' + i % 26);
        json_t *it = th_item(j, id);
        cr_assert_not_null(it, "%s", id);
        cr_assert_eq(ival(it, "referenceCount"), 1, "%s", id);
    }
    cr_assert_eq(ival(th_item(j, "file:lib/new.py"), "referenceCount"), 1);
    cr_assert_eq(ival(th_item(j, "zetacore"), "referenceCount"), 1, "named by the last message only");
    char long_id[3100];
    snprintf(long_id, sizeof long_id, "file:%s", path);
    json_t *lf = th_item(j, long_id);
    cr_assert_not_null(lf, "the tool call's file is tracked");
    cr_assert_eq(ival(lf, "referenceCount"), 1);
    json_decref(j);
}
