/* test_assemble.c: CLARITY_EV_ASSEMBLE through the ABI: every rule of what
 * the model sees (engine/assemble.c). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhost.h"

static th_host h;

static void open_cfg(const char *cfg)
{
    char *err = NULL;
    cr_assert_eq(th_open(&h, cfg, 0, &err), 0, "%s", err ? err : "");
}

static void teardown(void) { th_close(&h); }
TestSuite(assemble, .fini = teardown, .timeout = 60);

/* A transcript under construction. */
typedef struct conv {
    clarity_ctx_message m[64];
    char ids[64][16], texts[64][256];
    size_t n;
} conv;

static clarity_ctx_message *add(conv *c, const char *role, const char *text, int64_t tokens)
{
    clarity_ctx_message *m = &c->m[c->n];
    memset(m, 0, sizeof *m);
    m->struct_size = sizeof *m;
    snprintf(c->ids[c->n], sizeof c->ids[c->n], "m%zu", c->n);
    snprintf(c->texts[c->n], sizeof c->texts[c->n], "%s", text);
    m->id = c->ids[c->n];
    m->role = role;
    m->text = c->texts[c->n];
    m->text_len = strlen(c->texts[c->n]);
    m->tokens = tokens;
    c->n++;
    return m;
}

/* An agent step: a Read of path and its output of `tokens` tokens. */
static void step(conv *c, const char *path, int64_t tokens, const char *callid)
{
    static char args[64][128];
    clarity_ctx_message *call = add(c, "assistant", "", 20);
    snprintf(args[c->n - 1], sizeof args[0], "{\"file_path\":\"%s\"}", path);
    call->tool_name = "Read";
    call->tool_args_json = args[c->n - 1];
    call->tool_call_id = callid;
    char out[200];
    snprintf(out, sizeof out, "contents of %s", path);
    clarity_ctx_message *res = add(c, "tool", out, tokens);
    res->tool_name = "Read";
    res->tool_call_id = callid;
}

/* Assembles; returns the parsed result. */
static json_t *assemble(conv *c, int64_t budget, size_t cur, uint32_t flags, char **raw)
{
    clarity_assemble p = {sizeof p, "s", c->m, c->n, budget, cur, flags};
    clarity_event ev = {sizeof ev, CLARITY_EV_ASSEMBLE, 1, &p};
    clarity_result r = {.struct_size = sizeof r};
    int rc = h.p.on_event(h.p.self, &ev, &r);
    cr_assert_eq(rc, CLARITY_OK, "assemble: %d %s", rc, r.error ? r.error : "");
    json_t *j = json_loadb(r.data, r.len, 0, NULL);
    cr_assert_not_null(j, "not JSON: %s", r.data);
    if (raw) *raw = strdup(r.data);
    h.p.release(h.p.self, &r);
    return j;
}

/* The action for message index i, or NULL (kept verbatim). */
static json_t *action(json_t *res, size_t i)
{
    size_t k;
    json_t *a;
    json_array_foreach(json_object_get(res, "actions"), k, a)
        if ((size_t)json_integer_value(json_object_get(a, "index")) == i) return a;
    return NULL;
}

static int64_t num(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

/* A long session: a prompt, then 8 steps reading files of 1000 tokens. */
static void long_session(conv *c)
{
    static const char *const calls[] = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"};
    add(c, "system", "You are a coding agent.", 30);
    add(c, "user", "Fix the login bug in src/auth/session.py", 40);
    for (int i = 0; i < 8; i++) {
        char path[64];
        snprintf(path, sizeof path, "src/mod%d/file%d.py", i, i);
        step(c, path, 1000, calls[i]);
    }
}

Test(assemble, no_budget_changes_nothing)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"}}");
    conv c = {0};
    long_session(&c);
    json_t *r = assemble(&c, 0, c.n, 0, NULL);
    cr_assert_eq(json_array_size(json_object_get(r, "actions")), 0);
    cr_assert_eq(num(r, "tokensBefore"), num(r, "tokensAfter"));
    cr_assert(json_is_true(json_object_get(r, "met")));
    json_decref(r);
}

/* assemble.maxTokens caps the budget: with no budget from the host it is
 * the budget, and a larger host budget is lowered to it. */
Test(assemble, max_tokens_caps_the_budget)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"},\"assemble\":{\"maxTokens\":9000}}");
    conv c = {0};
    long_session(&c); /* 8,230 tokens > 0.85 x 9,000 */
    json_t *r = assemble(&c, 0, c.n, 0, NULL);
    cr_assert(json_is_true(json_object_get(r, "changed")), "no budget from the host: maxTokens ignored");
    cr_assert_leq(num(r, "tokensAfter"), (int64_t)(0.6 * 9000));
    json_decref(r);
    th_close(&h);
    open_cfg("{\"storage\":{\"backend\":\"memory\"},\"assemble\":{\"maxTokens\":9000}}");
    r = assemble(&c, 1000000, c.n, 0, NULL);
    cr_assert(json_is_true(json_object_get(r, "changed")), "a larger host budget was not lowered");
    json_decref(r);
    th_close(&h);
    open_cfg("{\"storage\":{\"backend\":\"memory\"},\"assemble\":{\"maxTokens\":1000000}}");
    r = assemble(&c, 0, c.n, 0, NULL);
    cr_assert_eq(json_array_size(json_object_get(r, "actions")), 0, "a cap above the transcript stubbed");
    json_decref(r);
}

/* Under the high water mark nothing changes; above it one batch stubs the
 * oldest, coldest tool outputs down to the low water mark. */
Test(assemble, water_marks)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"}}");
    conv c = {0};
    long_session(&c); /* 8,230 tokens */
    json_t *r = assemble(&c, 10000, c.n, 0, NULL);
    cr_assert_eq(json_array_size(json_object_get(r, "actions")), 0, "stubbed under the high water mark");
    json_decref(r);
    r = assemble(&c, 9000, c.n, 0, NULL); /* 8,230 > 0.85 x 9,000 */
    cr_assert(json_is_true(json_object_get(r, "changed")));
    cr_assert_leq(num(r, "tokensAfter"), (int64_t)(0.6 * 9000), "not down to the low water mark: %lld",
                  (long long)num(r, "tokensAfter"));
    cr_assert_not_null(action(r, 3), "the oldest tool output was not stubbed");
    json_t *a = action(r, 3);
    cr_assert_str_eq(json_string_value(json_object_get(a, "action")), "stub");
    const char *text = json_string_value(json_object_get(a, "text"));
    cr_assert(strstr(text, "1,000 tokens of Read output about src/mod0/file0.py elided") &&
              strstr(text, "/clarity anchor file:src/mod0/file0.py keeps it"), "%s", text);
    json_decref(r);
}

/* Never touched: system, user messages (when the rest suffices), the turn
 * in progress, the last protectRecentTurns turns. */
Test(assemble, protected_messages)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"},\"assemble\":{\"protectShare\":1}}");
    conv c = {0};
    long_session(&c);
    size_t cur = c.n - 2; /* the last step is the turn in progress */
    json_t *r = assemble(&c, 4000, cur, 0, NULL);
    cr_assert_null(action(r, 0), "the system message was touched");
    cr_assert_null(action(r, 1), "the user message was touched while tool outputs remained");
    for (size_t i = c.n - 8; i < c.n; i++) /* the last three steps and the current one */
        cr_assert_null(action(r, i), "a recent message (%zu) was touched", i);
    cr_assert_not_null(action(r, 3));
    json_decref(r);
}

/* The budget cannot be met without touching what is protected: said so,
 * and the user message stays (stubbing it would not meet the budget). */
Test(assemble, unmeetable_budget_is_reported)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"},\"assemble\":{\"protectShare\":1,\"stubMinTokens\":1}}");
    conv c = {0};
    long_session(&c);
    json_t *r = assemble(&c, 500, c.n - 2, 0, NULL);
    cr_assert(json_is_false(json_object_get(r, "met")), "a 500-token budget was 'met'");
    cr_assert_gt(num(r, "tokensAfter"), 500);
    cr_assert_null(action(r, 1), "the user message was stubbed although that cannot meet the budget");
    cr_assert_null(action(r, 0), "the system message was touched");
    cr_assert_not_null(action(r, 3), "best effort: the old tool outputs stay in");
    json_decref(r);
}

/* A user message is stubbed only when nothing else meets the budget and
 * stubbing it does. */
Test(assemble, user_messages_only_when_that_meets_the_budget)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"},\"assemble\":{\"protectRecentTurns\":1}}");
    conv c = {0};
    long_session(&c);
    c.m[1].tokens = 3000; /* a long task statement */
    json_t *r = assemble(&c, 2000, c.n, 0, NULL);
    cr_assert(json_is_true(json_object_get(r, "met")), "after %lld", (long long)num(r, "tokensAfter"));
    cr_assert_not_null(action(r, 1), "the user message was kept although only stubbing it meets the budget");
    json_decref(r);
    th_close(&h);
    open_cfg("{\"storage\":{\"backend\":\"memory\"},\"assemble\":{\"protectRecentTurns\":1}}");
    r = assemble(&c, 1000, c.n, 0, NULL);
    cr_assert(json_is_false(json_object_get(r, "met")));
    cr_assert_null(action(r, 1), "the user message was stubbed for a budget it cannot meet");
    cr_assert_not_null(action(r, 3));
    json_decref(r);
    th_close(&h);
    open_cfg("{\"storage\":{\"backend\":\"memory\"},\"assemble\":{\"protectRecentTurns\":1}}");
    r = assemble(&c, 5000, c.n, 0, NULL); /* the outputs alone meet it, not the low water mark */
    cr_assert(json_is_true(json_object_get(r, "met")));
    cr_assert_gt(num(r, "tokensAfter"), 3000);
    cr_assert_null(action(r, 1), "the user message was stubbed although the budget was met without it");
    json_decref(r);
}

/* The newest step before the turn in progress is never touched, even when
 * it alone is larger than protectShare of the budget: the model must see
 * the output of the call it just made. */
Test(assemble, the_newest_step_is_never_touched)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"}}");
    conv c = {0};
    long_session(&c);
    c.m[c.n - 1].tokens = 5000;
    json_t *r = assemble(&c, 6000, c.n, 0, NULL); /* protectShare 0.5: 3,000 tokens */
    cr_assert(json_is_true(json_object_get(r, "changed")));
    cr_assert_null(action(r, c.n - 1), "the newest tool output was stubbed");
    cr_assert_null(action(r, c.n - 2), "the newest tool call was stubbed");
    cr_assert_not_null(action(r, c.n - 3), "the step before it stayed although it is past protectShare");
    json_decref(r);
}

/* Between batches the same input gives the same bytes; a new step below
 * the high water mark only appends. */
Test(assemble, identical_between_batches)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"}}");
    conv c = {0};
    long_session(&c);
    char *a = NULL, *b = NULL;
    json_decref(assemble(&c, 9000, c.n, 0, &a));
    json_t *r = assemble(&c, 9000, c.n, 0, &b);
    cr_assert(json_is_false(json_object_get(r, "changed")));
    json_decref(r);
    /* the block is appended after the decisions; compare the decisions */
    char *pa = strstr(a, "\"actions\""), *pb = strstr(b, "\"actions\"");
    cr_assert_str_eq(strstr(a, "\"actions\""), strstr(b, "\"actions\""));
    free(a), free(b);
    (void)pa, (void)pb;
    step(&c, "src/mod9/file9.py", 100, "c9");
    r = assemble(&c, 9000, c.n, 0, NULL);
    cr_assert(json_is_false(json_object_get(r, "changed")), "a small new step changed old decisions");
    json_decref(r);
}

/* Anchoring an item brings its stubbed message back and protects it. */
Test(assemble, anchors_and_revival)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"}}");
    conv c = {0};
    long_session(&c);
    /* make the file tracked: the agent read it */
    cr_assert_eq(th_end(&h, "s", "", "Read", "{\"file_path\":\"src/mod0/file0.py\"}"), 0);
    json_t *r = assemble(&c, 4000, c.n, 0, NULL);
    cr_assert_not_null(action(r, 3));
    json_decref(r);
    cr_assert_eq(th_cmd(&h, "s", "/clarity anchor file:src/mod0/file0.py", NULL, NULL), 0);
    r = assemble(&c, 4000, c.n, 0, NULL);
    cr_assert_null(action(r, 3), "an anchored item's message stayed stubbed");
    cr_assert_null(action(r, 2), "an anchored item's tool call was touched");
    cr_assert(json_is_true(json_object_get(r, "changed")));
    json_decref(r);
}

Test(assemble, revival_on_a_new_mention)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"}}");
    conv c = {0};
    long_session(&c);
    cr_assert_eq(th_end(&h, "s", "", "Read", "{\"file_path\":\"src/mod0/file0.py\"}"), 0);
    json_t *r = assemble(&c, 4000, c.n, 0, NULL);
    cr_assert_not_null(action(r, 3));
    json_decref(r);
    const char *p = "Look at src/mod0/file0.py again";
    cr_assert_eq(th_before(&h, "s", NULL, p, strlen(p), NULL), 0);
    cr_assert_eq(th_end(&h, "s", "ok", NULL, NULL), 0);
    r = assemble(&c, 100000, c.n, 0, NULL); /* a larger budget: no new batch */
    cr_assert_null(action(r, 3), "the message did not come back after its item was mentioned");
    json_decref(r);
}

Test(assemble, keep_patterns_protect)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"},\"assemble\":{\"keep\":[\"mod0/file0\"]}}");
    conv c = {0};
    long_session(&c);
    json_t *r = assemble(&c, 9000, c.n, 0, NULL);
    cr_assert_null(action(r, 3), "a message matching assemble.keep was stubbed");
    cr_assert_not_null(action(r, 5));
    json_decref(r);
}

/* With CLARITY_ASSEMBLE_MAY_DROP a cold tool result leaves with its call:
 * a pair is never split. */
Test(assemble, pairs_never_split)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"}}");
    conv c = {0};
    long_session(&c);
    json_t *r = assemble(&c, 9000, c.n, CLARITY_ASSEMBLE_MAY_DROP, NULL);
    size_t drops = 0;
    for (size_t i = 0; i < c.n; i++) {
        json_t *a = action(r, i);
        if (!a || strcmp(json_string_value(json_object_get(a, "action")), "drop") != 0) continue;
        drops++;
        const char *call = c.m[i].tool_call_id;
        cr_assert_not_null(call);
        for (size_t j = 0; j < c.n; j++) {
            if (j == i || !c.m[j].tool_call_id || strcmp(c.m[j].tool_call_id, call) != 0) continue;
            json_t *b = action(r, j);
            cr_assert(b && strcmp(json_string_value(json_object_get(b, "action")), "drop") == 0,
                      "message %zu dropped without its pair %zu", i, j);
        }
    }
    cr_assert_gt(drops, 0, "nothing dropped although the host allows it");
    json_decref(r);
}

/* The decisions persist: a restart gives the same assembly. */
Test(assemble, decisions_survive_a_restart)
{
    char *db = th_tmp_path(".db"), cfg[600];
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"}}", db);
    open_cfg(cfg);
    conv c = {0};
    long_session(&c);
    cr_assert_eq(th_end(&h, "s", "", NULL, NULL), 0);
    char *a = NULL, *b = NULL;
    json_decref(assemble(&c, 9000, c.n, 0, &a));
    th_close(&h);
    open_cfg(cfg);
    json_t *r = assemble(&c, 9000, c.n, 0, &b);
    cr_assert(json_is_false(json_object_get(r, "changed")), "the restart changed the decisions");
    json_decref(r);
    cr_assert_str_eq(strstr(a, "\"actions\""), strstr(b, "\"actions\""));
    free(a), free(b);
    th_unlink_db(db);
}

/* A decision is about a content: a message whose content changed under its
 * id comes back verbatim (also after a restart). */
Test(assemble, new_content_under_an_id_is_not_stubbed)
{
    char *db = th_tmp_path(".db"), cfg[600];
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"}}", db);
    open_cfg(cfg);
    conv c = {0};
    long_session(&c);
    json_t *r = assemble(&c, 9000, c.n, 0, NULL);
    cr_assert_not_null(action(r, 3));
    json_decref(r);
    th_close(&h);
    open_cfg(cfg);
    snprintf(c.texts[3], sizeof c.texts[3], "other contents of src/mod0/file0.py");
    c.m[3].text_len = strlen(c.texts[3]);
    r = assemble(&c, 100000, c.n, 0, NULL); /* no new batch */
    cr_assert_null(action(r, 3), "a stub decided on other content stayed");
    cr_assert(json_is_true(json_object_get(r, "changed")));
    cr_assert_not_null(action(r, 5), "the other decisions went with it");
    json_decref(r);
    th_unlink_db(db);
}

Test(assemble, bad_payloads)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"}}");
    conv c = {0};
    add(&c, "user", "hello", 5);
    c.m[0].id = NULL;
    clarity_assemble p = {sizeof p, "s", c.m, c.n, 100, 1, 0};
    clarity_event ev = {sizeof ev, CLARITY_EV_ASSEMBLE, 1, &p};
    clarity_result r = {.struct_size = sizeof r};
    cr_assert_eq(h.p.on_event(h.p.self, &ev, &r), CLARITY_EINVAL);
    cr_assert(r.error && strstr(r.error, "id"), "%s", r.error ? r.error : "");
    h.p.release(h.p.self, &r);
    ev.version = 2;
    cr_assert_eq(h.p.on_event(h.p.self, &ev, &r), CLARITY_DECLINED);
    h.p.release(h.p.self, &r);
    /* one id twice in a call */
    add(&c, "user", "again", 5);
    c.m[0].id = c.m[1].id;
    p.n_messages = 2;
    ev.version = 1;
    cr_assert_eq(h.p.on_event(h.p.self, &ev, &r), CLARITY_EINVAL);
    cr_assert(r.error && strstr(r.error, "\"m1\" is used twice"), "%s", r.error ? r.error : "");
    h.p.release(h.p.self, &r);
}

/* clarity.context and /clarity context show the last assembly. */
Test(assemble, context_report)
{
    open_cfg("{\"storage\":{\"backend\":\"memory\"}}");
    conv c = {0};
    long_session(&c);
    json_decref(assemble(&c, 9000, c.n, 0, NULL));
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.context", "{\"session\":\"s\"}", &j), 0);
    json_t *last = json_object_get(j, "last");
    cr_assert(json_array_size(json_object_get(last, "actions")) > 0);
    cr_assert_eq(num(last, "tokensBefore"), 8230);
    json_decref(j);
    char *text = NULL;
    cr_assert_eq(th_cmd(&h, "s", "/clarity context", &text, NULL), 0);
    cr_assert(strstr(text, "8230 tokens ->") && strstr(text, "file:src/mod0/file0.py"), "%s", text);
    free(text);
}
