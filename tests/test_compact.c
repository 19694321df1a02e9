/* test_compact.c: the keep list, the re-injection after a compaction
 * (engine/compact.c) and the trimming of tool outputs (engine/trim.c),
 * through the ABI's RPC. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/buf.h"
#include "testhost.h"

static th_host h;

static void open_mem(void)
{
    char *err = NULL;
    cr_assert_eq(th_open(&h, "{\"storage\":{\"backend\":\"memory\"}}", 0, &err), 0, "%s", err ? err : "");
}

static void teardown(void) { th_close(&h); }
TestSuite(compact, .init = open_mem, .fini = teardown, .timeout = 60);

static json_t *rpc_ok(const char *method, const char *params)
{
    json_t *out = NULL;
    int rc = th_rpc(&h, method, params, &out);
    cr_assert_eq(rc, CLARITY_OK, "%s %s: %d %s", method, params, rc, out ? json_dumps(out, 0) : "");
    cr_assert_not_null(out);
    return out;
}

static void rpc_bad(const char *method, const char *params, const char *needle)
{
    json_t *out = NULL;
    int rc = th_rpc(&h, method, params, &out);
    cr_assert_neq(rc, CLARITY_OK, "%s %s succeeded", method, params);
    const char *msg = json_string_value(json_object_get(out, "message"));
    cr_assert(msg && strstr(msg, needle), "%s %s: message %s lacks %s", method, params, msg, needle);
    json_decref(out);
}

/* A session that talks about ClaraCore, src/auth/session.ts and src/db/pool.ts, and
 * anchors FocusEngine. */
static void session(void)
{
    const char *p = "Fix ClaraCore's login in src/auth/session.ts; check src/db/pool.ts";
    cr_assert_eq(th_before(&h, "s", NULL, p, strlen(p), NULL), CLARITY_OK);
    cr_assert_eq(th_end(&h, "s", "ClaraCore: src/auth/session.ts is fixed", NULL, NULL), CLARITY_OK);
    cr_assert_eq(th_cmd(&h, "s", "/clarity anchor FocusEngine", NULL, NULL), CLARITY_OK);
}

static int has(json_t *arr, const char *id)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *s = json_is_string(v) ? json_string_value(v) : json_string_value(json_object_get(v, "id"));
        if (s && strcmp(s, id) == 0) return 1;
    }
    return 0;
}

Test(compact, keep_list_anchored_first_then_by_score)
{
    session();
    json_t *r = rpc_ok("clarity.keepList", "{\"session\":\"s\"}");
    json_t *items = json_object_get(r, "items");
    cr_assert_geq(json_array_size(items), 3);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 0), "id")), "focusengine");
    cr_assert(json_is_true(json_object_get(json_array_get(items, 0), "anchored")));
    for (size_t i = 2; i < json_array_size(items); i++)
        cr_assert_geq(json_real_value(json_object_get(json_array_get(items, i - 1), "score")),
                      json_real_value(json_object_get(json_array_get(items, i), "score")));
    const char *text = json_string_value(json_object_get(r, "text"));
    cr_assert(strncmp(text, "Keep these (clarity", 19) == 0, "%s", text);
    cr_assert_not_null(strstr(text, "\n- focusengine (anchored)\n"), "%s", text);
    cr_assert_not_null(strstr(text, "\n- file:src/auth/session.ts\n"), "%s", text);
    json_decref(r);
    r = rpc_ok("clarity.keepList", "{\"session\":\"s\",\"limit\":1}");
    cr_assert_eq(json_array_size(json_object_get(r, "items")), 1);
    json_decref(r);
    r = rpc_ok("clarity.keepList", "{\"session\":\"s\",\"limit\":0}");
    cr_assert_str_eq(json_string_value(json_object_get(r, "text")), "");
    json_decref(r);
    rpc_bad("clarity.keepList", "{\"session\":\"s\",\"limit\":51}", "\"limit\" must be an integer in 0..50");
    rpc_bad("clarity.keepList", "{\"session\":\"nobody\"}", "unknown session: nobody");
    rpc_bad("clarity.keepList", "{}", "missing required param \"session\"");
}

/* The summary names ClaraCore and session.ts (by its base name) but not
 * pool.ts or FocusEngine: those come back in the next prompt's block, once. */
Test(compact, the_summary_s_losses_come_back_once)
{
    session();
    json_t *r = rpc_ok("clarity.compacted",
                       "{\"session\":\"s\",\"summary\":\"We fixed CLARACORE's login; session.ts changed.\"}");
    json_t *kept = json_object_get(r, "kept"), *lost = json_object_get(r, "lost");
    cr_assert(has(kept, "claracore") && has(kept, "file:src/auth/session.ts"), "%s", json_dumps(r, 0));
    cr_assert(has(lost, "focusengine") && has(lost, "file:src/db/pool.ts"), "%s", json_dumps(r, 0));
    json_decref(r);
    char *block = NULL;
    cr_assert_eq(th_before(&h, "s", NULL, "next step", 9, &block), CLARITY_OK);
    const char *sec = strstr(block, "Kept through the compaction (its summary left them out):\n");
    cr_assert_not_null(sec, "%s", block);
    cr_assert_not_null(strstr(sec, "- focusengine ("), "%s", block);
    cr_assert_not_null(strstr(sec, "- file:src/db/pool.ts ("), "%s", block);
    cr_assert_null(strstr(sec, "- claracore"), "%s", block);
    cr_assert_not_null(strstr(sec, "[/CLARITY CONTEXT]"), "the section is inside the block: %s", block);
    free(block);
    /* shown again until the turn that showed them ends */
    cr_assert_eq(th_before(&h, "s", NULL, "next step", 9, &block), CLARITY_OK);
    cr_assert_not_null(strstr(block, "Kept through the compaction"), "%s", block);
    free(block);
    cr_assert_eq(th_end(&h, "s", "done", NULL, NULL), CLARITY_OK);
    cr_assert_eq(th_before(&h, "s", NULL, "again", 5, &block), CLARITY_OK);
    cr_assert_null(strstr(block, "Kept through the compaction"), "%s", block);
    free(block);
    rpc_bad("clarity.compacted", "{\"session\":\"s\"}", "missing required param \"summary\"");
    rpc_bad("clarity.compacted", "{\"session\":\"s\",\"summary\":7}", "\"summary\" must be a non-empty string");
}

/* The list waits in the session's meta: another process (a Claude Code
 * hook) shows it. */
Test(compact, the_losses_survive_a_restart)
{
    th_close(&h);
    char *path = strdup(th_tmp_path(".db")), cfg[512], *err = NULL;
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"}}", path);
    cr_assert_eq(th_open(&h, cfg, 0, &err), 0, "%s", err ? err : "");
    session();
    json_decref(rpc_ok("clarity.compacted", "{\"session\":\"s\",\"summary\":\"Nothing of note.\"}"));
    th_close(&h);
    cr_assert_eq(th_open(&h, cfg, 0, &err), 0, "%s", err ? err : "");
    char *block = NULL;
    cr_assert_eq(th_before(&h, "s", NULL, "go on", 5, &block), CLARITY_OK);
    cr_assert_not_null(strstr(block, "- focusengine ("), "%s", block);
    free(block);
    th_unlink_db(path);
    free(path);
}

/* ---- trimOutput ---------------------------------------------------------- */

static char *lines_text(int n, int hot_at, size_t line_len)
{
    buf b;
    buf_init(&b);
    for (int i = 0; i < n; i++) {
        if (i == hot_at) {
            buf_puts(&b, "error: src/auth/session.ts failed\n");
            continue;
        }
        size_t start = b.len;
        buf_printf(&b, "line %d ", i);
        while (b.len - start < line_len) buf_putc(&b, 'x');
        buf_putc(&b, '\n');
    }
    return buf_steal(&b, NULL);
}

static json_t *trim(const char *session_id, const char *text, long max)
{
    json_t *p = json_pack("{s:{s:s}}", "fields", "stdout", text);
    if (session_id) json_object_set_new(p, "session", json_string(session_id));
    if (max) json_object_set_new(p, "maxChars", json_integer(max));
    char *ps = json_dumps(p, JSON_COMPACT);
    json_t *r = rpc_ok("clarity.trimOutput", ps);
    free(ps);
    json_decref(p);
    return r;
}

static const char *field(json_t *r) { return json_string_value(json_object_get(json_object_get(r, "fields"), "stdout")); }

Test(compact, trim_keeps_head_tail_and_hot_lines_within_the_budget)
{
    session();
    char *text = lines_text(5000, 2500, 40);
    json_t *r = trim("s", text, 0);
    cr_assert(json_is_true(json_object_get(r, "trimmed")));
    const char *t = field(r);
    cr_assert_leq(strlen(t), 20000);
    cr_assert(strncmp(t, "line 0 ", 7) == 0);
    cr_assert_not_null(strstr(t, "\nline 39 "), "40 head lines");
    cr_assert_null(strstr(t, "\nline 40 "), "more than 40 head lines");
    cr_assert_not_null(strstr(t, "\nerror: src/auth/session.ts failed\n"), "the hot line");
    cr_assert_not_null(strstr(t, "\nline 4999 "), "the tail");
    cr_assert_not_null(strstr(t, "[clarity: 2460 lines elided ("), "%s", t);
    cr_assert_not_null(strstr(t, "[clarity: 81 of 5000 lines kept (the first 40, the last 40, 1 naming"), "%s",
                       strstr(t, "[clarity: 81") ? "" : t + strlen(t) - 300);
    json_decref(r);
    /* without a session: head and tail only */
    r = trim(NULL, text, 0);
    cr_assert_null(strstr(field(r), "error: src/auth"), "a hot line without a session");
    json_decref(r);
    free(text);
}

Test(compact, trim_respects_any_budget_and_cuts_long_lines)
{
    /* lines of 5,000 bytes: head and tail cannot hold 40 of them */
    char *text = lines_text(200, -1, 5000);
    for (long max = 1000; max <= 64000; max = max * 3 / 2) {
        json_t *r = trim(NULL, text, max);
        const char *t = field(r);
        cr_assert_leq((long)strlen(t), max, "budget %ld: %zu bytes", max, strlen(t));
        cr_assert_not_null(strstr(t, "more characters of this line elided]"), "budget %ld", max);
        json_decref(r);
    }
    free(text);
    /* one huge line without a newline, multi-byte characters cut whole */
    buf b;
    buf_init(&b);
    for (int i = 0; i < 30000; i++) buf_puts(&b, "\xC3\xA9"); /* é */
    json_t *r = trim(NULL, b.p, 0);
    const char *t = field(r);
    cr_assert_not_null(t, "invalid UTF-8 in the answer");
    cr_assert_leq(strlen(t), 20000);
    json_decref(r);
    buf_free(&b);
    /* under the budget: unchanged */
    r = trim(NULL, "small\n", 0);
    cr_assert(json_is_false(json_object_get(r, "trimmed")));
    cr_assert_str_eq(field(r), "small\n");
    json_decref(r);
}

Test(compact, trim_shares_the_budget_between_fields)
{
    char *big = lines_text(3000, -1, 40);
    json_t *p = json_pack("{s:{s:s,s:s,s:s}}", "fields", "stdout", big, "stderr", "one warning\n", "other",
                          big);
    char *ps = json_dumps(p, JSON_COMPACT);
    json_t *r = rpc_ok("clarity.trimOutput", ps);
    json_t *f = json_object_get(r, "fields");
    cr_assert_str_eq(json_string_value(json_object_get(f, "stderr")), "one warning\n", "a small field is cut");
    size_t total = 0;
    const char *k;
    json_t *v;
    json_object_foreach(f, k, v) total += json_string_length(v);
    cr_assert_leq(total, 20000);
    free(ps);
    json_decref(p);
    json_decref(r);
    free(big);
    rpc_bad("clarity.trimOutput", "{}", "param \"fields\" must be an object of 1..8 strings");
    rpc_bad("clarity.trimOutput", "{\"fields\":{\"a\":1}}", "fields.a must be a string");
    rpc_bad("clarity.trimOutput", "{\"fields\":{\"a\":\"x\"},\"maxChars\":999}",
            "\"maxChars\" must be an integer in 1000..100000000");
}
