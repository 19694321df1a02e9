/* Slash commands and RPC methods, with their errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "../util/buf.h"
#include "testhost.h"

static th_host h;
static void setup(void)
{
    cr_assert_eq(th_open(&h, "{\"storage\":{\"backend\":\"memory\"}}", 0, NULL), 0);
    const char *p = "ClaraCore uses focus-engine; see SOUL.md and run web_search";
    cr_assert_eq(th_before(&h, "s", NULL, p, strlen(p), NULL), 0);
    cr_assert_eq(th_end(&h, "s", "ClaraCore looks fine", NULL, NULL), 0);
}
static void teardown(void) { th_close(&h); }
TestSuite(rpc, .init = setup, .fini = teardown);

static void expect_error(const char *method, const char *params, int rc, int code, const char *needle)
{
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, method, params, &j), rc, "%s %s", method, params);
    cr_assert_not_null(j, "error answer must be JSON");
    cr_assert_eq(json_integer_value(json_object_get(j, "code")), code, "%s", json_dumps(j, 0));
    const char *msg = json_string_value(json_object_get(j, "message"));
    cr_assert_not_null(msg);
    cr_assert_not_null(strstr(msg, needle), "message \"%s\" lacks \"%s\"", msg, needle);
    json_decref(j);
}

Test(rpc, get_scores_shape_and_order)
{
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.getScores", "{\"session\":\"s\"}", &j), 0);
    cr_assert_str_eq(json_string_value(json_object_get(j, "session")), "s");
    cr_assert_eq(json_integer_value(json_object_get(j, "currentTurn")), 1);
    json_t *items = json_object_get(j, "items");
    cr_assert_gt(json_array_size(items), 3);
    double prev = 1e18;
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        double s = json_real_value(json_object_get(it, "score"));
        cr_assert_leq(s, prev, "items must be sorted by score");
        prev = s;
        json_t *b = json_object_get(it, "breakdown");
        const char *keys[] = {"frequency", "recency", "utility", "stalenessPenalty", "anchor"};
        for (size_t k = 0; k < 5; k++) cr_assert(json_is_number(json_object_get(b, keys[k])), "%s", keys[k]);
        cr_assert(json_is_string(json_object_get(it, "category")));
        cr_assert(json_is_integer(json_object_get(it, "mentionCount")));
        cr_assert(json_is_integer(json_object_get(it, "referenceCount")));
        cr_assert(json_is_integer(json_object_get(it, "lastMentionTurn")));
        cr_assert(json_is_boolean(json_object_get(it, "anchored")));
        cr_assert(json_is_string(json_object_get(it, "tier")));
    }
    /* claracore was referenced: frequency 3 + recency (1 - 1/4) * 80 (d=1)
     * + utility 15 = 78, the top item */
    json_t *top = json_array_get(items, 0);
    cr_assert_str_eq(json_string_value(json_object_get(top, "id")), "claracore");
    cr_assert_float_eq(json_real_value(json_object_get(top, "score")), 78.0, 1e-9);
    json_decref(j);
}

Test(rpc, anchor_finds_items_by_their_written_name)
{
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.anchor", "{\"session\":\"s\",\"itemId\":\"ClaraCore\"}", &j), 0);
    cr_assert_str_eq(json_string_value(json_object_get(j, "itemId")), "claracore");
    cr_assert(json_is_false(json_object_get(j, "created")));
    json_decref(j);
    cr_assert_eq(th_rpc(&h, "clarity.anchor", "{\"session\":\"s\",\"itemId\":\"focus-engine\",\"reason\":\"core\"}", &j), 0);
    cr_assert_str_eq(json_string_value(json_object_get(j, "itemId")), "focus_engine");
    json_decref(j);
    cr_assert_eq(th_rpc(&h, "clarity.anchor", "{\"session\":\"s\",\"itemId\":\"web_search\"}", &j), 0);
    cr_assert_str_eq(json_string_value(json_object_get(j, "itemId")), "tool:web_search");
    json_decref(j);
    cr_assert_eq(th_rpc(&h, "clarity.getState", "{\"session\":\"s\"}", &j), 0);
    size_t i;
    json_t *it;
    int seen = 0;
    json_array_foreach(json_object_get(j, "items"), i, it)
    {
        if (!strcmp(json_string_value(json_object_get(it, "id")), "focus_engine")) {
            cr_assert(json_is_true(json_object_get(it, "anchored")));
            cr_assert_str_eq(json_string_value(json_object_get(it, "anchorReason")), "core");
            seen = 1;
        }
    }
    cr_assert(seen);
    json_decref(j);
    cr_assert_eq(th_rpc(&h, "clarity.unanchor", "{\"session\":\"s\",\"itemId\":\"ClaraCore\"}", &j), 0);
    cr_assert(json_is_false(json_object_get(j, "anchored")));
    json_decref(j);
}

Test(rpc, errors_are_json_rpc_objects)
{
    expect_error("clarity.anchor", "{\"session\":\"s\"}", CLARITY_EINVAL, -32602, "itemId");
    expect_error("clarity.getScores", "{}", CLARITY_EINVAL, -32602, "session");
    expect_error("clarity.getScores", "{\"session\": 5}", CLARITY_EINVAL, -32602, "session");
    expect_error("clarity.getScores", "{\"session\":", CLARITY_EINVAL, -32602, "invalid JSON");
    expect_error("clarity.getScores", "[1,2]", CLARITY_EINVAL, -32602, "object");
    expect_error("clarity.nope", "{}", CLARITY_ENOTFOUND, -32601, "clarity.nope");
    expect_error("clarity.getScores", "{\"session\":\"ghost\"}", CLARITY_ENOTFOUND, -32001, "ghost");
    expect_error("clarity.unanchor", "{\"session\":\"s\",\"itemId\":\"NoSuchThing\"}", CLARITY_ENOTFOUND, -32002, "NoSuchThing");
    expect_error("clarity.setTier", "{\"session\":\"s\",\"itemId\":\"ClaraCore\",\"tier\":\"gold\"}", CLARITY_EINVAL, -32602, "gold");
    expect_error("clarity.importState", "{\"session\":\"s\",\"state\":{\"items\":[{\"mentionCount\":1}]}}", CLARITY_EINVAL, -32602, "items[0]");
    /* a failed call leaves the state as it was */
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.stats", "{\"session\":\"s\"}", &j), 0);
    cr_assert_eq(json_integer_value(json_object_get(j, "anchoredItems")), 0);
    cr_assert_eq(json_integer_value(json_object_get(j, "currentTurn")), 1);
    json_decref(j);
}

Test(rpc, prune_dry_run_changes_nothing)
{
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.prune", "{\"session\":\"s\",\"dryRun\":true}", &j), 0);
    cr_assert(json_is_false(json_object_get(j, "applied")));
    cr_assert(json_is_string(json_object_get(j, "report")));
    cr_assert(json_is_array(json_object_get(j, "decisions")));
    json_decref(j);
}

Test(rpc, config_shows_the_effective_config)
{
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.config", "{\"session\":\"s\"}", &j), 0);
    json_t *sc = json_object_get(j, "scoring");
    cr_assert_float_eq(json_number_value(json_object_get(sc, "halfLife")), 5.0, 1e-9);
    cr_assert_float_eq(json_number_value(json_object_get(sc, "anchorBonus")), 100.0, 1e-9);
    cr_assert_eq(json_number_value(json_object_get(json_object_get(j, "pruning"), "maxContextItems")), 50);
    json_decref(j);
}

/* A section of the config: the same object with that section's settings
 * only, each as the whole config has it (a hook process asks for
 * "storage" alone). */
Test(rpc, config_section_is_that_part_of_the_whole)
{
    json_t *all = NULL, *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.config", "{}", &all), 0);
    cr_assert_eq(th_rpc(&h, "clarity.config", "{\"section\":\"storage\"}", &j), 0);
    cr_assert_eq(json_object_size(j), 1, "%s", json_dumps(j, 0));
    json_t *st = json_object_get(j, "storage");
    cr_assert(json_is_object(st));
    cr_assert_str_eq(json_string_value(json_object_get(st, "backend")), "memory");
    cr_assert(json_equal(st, json_object_get(all, "storage")), "%s", json_dumps(j, 0));
    json_decref(j);
    cr_assert_eq(th_rpc(&h, "clarity.config", "{\"section\":\"scoring\"}", &j), 0);
    cr_assert_eq(json_object_size(j), 1);
    cr_assert(json_equal(json_object_get(j, "scoring"), json_object_get(all, "scoring")));
    json_decref(j);
    json_decref(all);
    /* a key's first segment only: neither a leaf nor a part of a name */
    expect_error("clarity.config", "{\"section\":\"nope\"}", CLARITY_EINVAL, -32602, "unknown config section: nope");
    expect_error("clarity.config", "{\"section\":\"storage.backend\"}", CLARITY_EINVAL, -32602, "storage.backend");
    expect_error("clarity.config", "{\"section\":\"stor\"}", CLARITY_EINVAL, -32602, "stor");
    expect_error("clarity.config", "{\"section\":7}", CLARITY_EINVAL, -32602, "section");
}

Test(rpc, export_and_import_in_the_original_shape)
{
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.exportState", "{\"session\":\"s\"}", &j), 0);
    cr_assert_str_eq(json_string_value(json_object_get(j, "namespace")), "clarity");
    cr_assert_str_eq(json_string_value(json_object_get(j, "key")), "clarity:relevance_state");
    json_t *v = json_object_get(j, "value");
    cr_assert_eq(json_integer_value(json_object_get(v, "currentTurn")), 1);
    json_t *first = json_array_get(json_object_get(v, "items"), 0);
    const char *keys[] = {"id", "mentionCount", "referenceCount", "lastMentionTurn", "anchored", "createdAt"};
    for (size_t k = 0; k < 6; k++) cr_assert_not_null(json_object_get(first, keys[k]), "%s", keys[k]);
    /* import into another session: same scores */
    json_t *params = json_pack("{s:s, s:O}", "session", "copy", "state", v);
    char *ps = json_dumps(params, 0);
    json_t *r = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.importState", ps, &r), 0);
    cr_assert_eq(json_integer_value(json_object_get(r, "items")), json_array_size(json_object_get(v, "items")));
    json_t *a = NULL, *b = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.getScores", "{\"session\":\"s\"}", &a), 0);
    cr_assert_eq(th_rpc(&h, "clarity.getScores", "{\"session\":\"copy\"}", &b), 0);
    json_object_set_new(a, "session", json_string("copy"));
    cr_assert(json_equal(a, b), "imported scores differ");
    /* a hand-written state of the original plugin imports too */
    const char *orig = "{\"session\":\"orig\",\"state\":{\"currentTurn\":7,\"lastPersistAt\":1700000000000,"
                       "\"items\":[{\"id\":\"tool:exec\",\"mentionCount\":4,\"referenceCount\":2,"
                       "\"lastMentionTurn\":6,\"anchored\":true,\"createdAt\":1}]}}";
    json_t *o = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.importState", orig, &o), 0);
    json_decref(o);
    cr_assert_eq(th_rpc(&h, "clarity.getScores", "{\"session\":\"orig\"}", &o), 0);
    json_t *it = th_item(o, "tool:exec");
    cr_assert_not_null(it);
    /* log2(5)*3 + (1 - 1/4)*80 + 2*15 + 100 (the default weights) */
    cr_assert_float_eq(json_real_value(json_object_get(it, "score")), 6.966 + 60 + 30 + 100, 1e-3);
    json_decref(o);
    json_decref(a);
    json_decref(b);
    json_decref(r);
    free(ps);
    json_decref(params);
    json_decref(j);
}

Test(rpc, slash_commands)
{
    char *out = NULL, *err = NULL;
    cr_assert_eq(th_cmd(&h, "s", "/clarity", &out, NULL), 0);
    cr_assert_not_null(strstr(out, "Turn 1"), "%s", out);
    cr_assert_not_null(strstr(out, "claracore"));
    free(out);
    cr_assert_eq(th_cmd(&h, "s", "/clarity scores", &out, NULL), 0);
    cr_assert_not_null(strstr(out, "stale"), "%s", out);
    cr_assert_not_null(strstr(out, "claracore"));
    free(out);
    cr_assert_eq(th_cmd(&h, "s", "/clarity anchor ClaraCore -- the main project", &out, NULL), 0);
    cr_assert_str_eq(out, "Anchored: claracore\n");
    free(out);
    cr_assert_eq(th_cmd(&h, "s", "/clarity unanchor ClaraCore", &out, NULL), 0);
    cr_assert_str_eq(out, "Unanchored: claracore\n");
    free(out);
    cr_assert_eq(th_cmd(&h, "s", "/clarity tier SOUL.md essential", &out, NULL), 0);
    cr_assert_str_eq(out, "Tier of file:soul.md: essential\n");
    free(out);
    cr_assert_eq(th_cmd(&h, "s", "/clarity stats", &out, NULL), 0);
    cr_assert_not_null(strstr(out, "halfLife 5"), "%s", out);
    free(out);
    cr_assert_eq(th_cmd(&h, "s", "/clarity config", &out, NULL), 0);
    cr_assert_not_null(strstr(out, "\"strictMode\""), "%s", out);
    free(out);
    cr_assert_eq(th_cmd(&h, "s", "/clarity help", &out, NULL), 0);
    cr_assert_not_null(strstr(out, "/clarity anchor <item>"));
    free(out);
    cr_assert_eq(th_cmd(&h, "s", "/clarity prune", &out, NULL), 0);
    cr_assert_not_null(strstr(out, "[CLARITY PRUNE REPORT]"));
    free(out);
    cr_assert_eq(th_cmd(&h, "s", "/clarity frobnicate", &out, &err), CLARITY_EINVAL);
    cr_assert_not_null(strstr(err, "frobnicate"));
    free(out);
    free(err);
    cr_assert_eq(th_cmd(&h, "s", "/clarity unanchor Nothing", &out, &err), CLARITY_ENOTFOUND);
    cr_assert_not_null(strstr(err, "unknown item"));
    free(out);
    free(err);
    cr_assert_eq(th_cmd(&h, "s", "/clarity anchor", &out, &err), CLARITY_EINVAL);
    cr_assert_not_null(strstr(err, "usage"));
    free(out);
    free(err);
}

/* getScores with a limit orders by id only the runs of equal scores it
 * shows: its items must be the head of the full listing (ties by id).
 * The session's 2,000 projects arrive over 40 turns in an order unlike
 * their ids', and share a few scores. */
Test(rpc, get_scores_limit_is_the_head_of_the_full_order)
{
    buf p;
    buf_init(&p);
    for (int turn = 0; turn < 40; turn++) {
        p.len = 0;
        for (int k = 0; k < 50; k++) {
            unsigned j = (unsigned)(turn * 50 + k) * 7919u % 2000u;
            buf_printf(&p, "Zq%c%c%cCore ", 'a' + j % 26, 'a' + j / 26 % 26, 'a' + j / 676);
        }
        cr_assert_eq(th_before(&h, "ties", NULL, p.p, p.len, NULL), 0);
        cr_assert_eq(th_end(&h, "ties", "ok", NULL, NULL), 0);
    }
    buf_free(&p);
    json_t *all = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.getScores", "{\"session\":\"ties\"}", &all), 0);
    json_t *items = json_object_get(all, "items");
    cr_assert_geq(json_array_size(items), 1000);
    size_t ties = 0;
    for (size_t i = 1; i < json_array_size(items); i++) { /* the full order: score desc, then id */
        json_t *a = json_array_get(items, i - 1), *b = json_array_get(items, i);
        double sa = json_real_value(json_object_get(a, "score")), sb = json_real_value(json_object_get(b, "score"));
        cr_assert(sa > sb || (sa == sb && strcmp(json_string_value(json_object_get(a, "id")),
                                                 json_string_value(json_object_get(b, "id"))) < 0),
                  "position %zu", i);
        ties += sa == sb;
    }
    cr_assert_gt(ties, 900, "the session must have long runs of equal scores");
    static const int limits[] = {1, 7, 10, 250, 1500};
    for (size_t k = 0; k < sizeof limits / sizeof *limits; k++) {
        char params[64];
        snprintf(params, sizeof params, "{\"session\":\"ties\",\"limit\":%d}", limits[k]);
        json_t *top = NULL;
        cr_assert_eq(th_rpc(&h, "clarity.getScores", params, &top), 0);
        json_t *ti = json_object_get(top, "items");
        cr_assert_eq(json_array_size(ti), (size_t)limits[k]);
        for (int i = 0; i < limits[k]; i++)
            cr_assert_str_eq(json_string_value(json_object_get(json_array_get(ti, (size_t)i), "id")),
                             json_string_value(json_object_get(json_array_get(items, (size_t)i), "id")),
                             "limit %d, position %d", limits[k], i);
        json_decref(top);
    }
    json_decref(all);
}

/* A session without items exports its turn and an empty list.  (Exporting
 * one after a restore gave qsort a NULL array: fuzz_state's seed
 * corpus/state/meta_every.bin replays it under UBSan.) */
Test(rpc, export_of_a_session_without_items)
{
    json_t *r = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.importState", "{\"session\":\"empty\",\"state\":{\"currentTurn\":3,\"items\":[]}}", &r), 0);
    json_decref(r);
    r = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.exportState", "{\"session\":\"empty\"}", &r), 0);
    json_t *items = json_object_get(json_object_get(r, "value"), "items");
    cr_assert(json_is_array(items) && json_array_size(items) == 0, "%s", json_dumps(r, 0));
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(r, "value"), "currentTurn")), 3);
    json_decref(r);
}
