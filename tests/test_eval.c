/* test_eval.c: `clarity eval`.  The metric code (cli/evalmetrics.c) on
 * hand-made sessions under tests/fixtures/eval/ whose expected values were
 * computed by hand (see each fixture's "_comment"), the budget metrics
 * (cli/evalbudget.c) on a hand-made session, then the CLI end to end on a
 * tiny turns corpus.  Run from the repository root; CLARITY_BUILD
 * names the build directory (default "build"). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../cli/evalbudget.h"
#include "../cli/evalmetrics.h"
#include "clihelp.h"
#include "gitrepo.h"
#include "runproc.h"

#define FIX "tests/fixtures/eval/"
#define TIMEOUT_MS 60000
#define EPS 1e-9

static json_t *load_fixture(const char *name)
{
    json_error_t je;
    json_t *j = json_load_file(name, 0, &je);
    cr_assert_not_null(j, "%s:%d: %s", name, je.line, je.text);
    return j;
}

static int rank_index(const char *name)
{
    for (int r = 0; r < EV_NRANK; r++)
        if (strcmp(ev_rank_names[r], name) == 0) return r;
    cr_assert_fail("unknown ranking %s", name);
    return -1;
}

/* Builds the sessions of a fixture and accumulates them. */
static void accumulate(json_t *fx, int horizon, ev_acc *acc)
{
    ev_acc_init(acc);
    size_t i;
    json_t *js;
    json_array_foreach(json_object_get(fx, "sessions"), i, js) {
        ev_session s;
        ev_session_init(&s);
        size_t k;
        json_t *snap;
        json_array_foreach(json_object_get(js, "snapshots"), k, snap) {
            ev_snap sn;
            cr_assert_eq(ev_snap_from_json(&sn, json_integer_value(json_object_get(snap, "turn")),
                                           json_object_get(snap, "items")),
                         0, "session %zu snapshot %zu", i, k);
            cr_assert_eq(ev_session_push(&s, &sn), 0);
        }
        cr_assert_eq(ev_session_meta(&s, json_object_get(js, "meta")), 0);
        cr_assert_eq(ev_acc_add(acc, &s, horizon), 0);
        ev_session_free(&s);
    }
}

TestSuite(evalmetrics);

Test(evalmetrics, rankings_order_as_specified)
{
    json_t *fx = load_fixture(FIX "rankings.json");
    ev_snap s;
    cr_assert_eq(ev_snap_from_json(&s, 1, json_object_get(fx, "items")), 0);
    size_t order[16];
    const char *key;
    json_t *want;
    json_object_foreach(json_object_get(fx, "expected"), key, want) {
        int r = rank_index(key);
        cr_assert_eq(json_array_size(want), s.n);
        ev_snap_rank(&s, r, order);
        for (size_t i = 0; i < s.n; i++)
            cr_expect_str_eq(s.items[order[i]].id, json_string_value(json_array_get(want, i)),
                             "%s ranking, position %zu", key, i + 1);
    }
    cr_expect_not_null(ev_snap_find(&s, "e"));
    cr_expect_eq(ev_snap_find(&s, "e")->score, 20.5);
    cr_expect_null(ev_snap_find(&s, "zz"));
    ev_snap_free(&s);
    json_decref(fx);
}

static void check_recall_case(json_t *fx, json_t *c)
{
    int h = (int)json_integer_value(json_object_get(c, "horizon"));
    ev_acc acc;
    accumulate(fx, h, &acc);
    cr_expect_eq(acc.sessions, 2);
    cr_expect_eq(acc.turns, 6);
    const char *key;
    json_t *want;
    json_object_foreach(json_object_get(c, "expected"), key, want) {
        ev_metrics m;
        ev_acc_metrics(&acc, rank_index(key), &m);
        cr_expect_eq(m.recall_turns, (size_t)json_integer_value(json_object_get(c, "recall_turns")),
                     "H=%d", h);
        for (int k = 0; k < EV_NK; k++)
            cr_expect(fabs(m.recall[k] - json_real_value(json_array_get(want, (size_t)k))) < EPS,
                      "H=%d %s recall@%d: got %.10f, want %.10f", h, key, ev_ks[k], m.recall[k],
                      json_real_value(json_array_get(want, (size_t)k)));
        cr_expect_eq(m.gold_pairs, 0);
        cr_expect_eq(m.gold_tracked_pairs, 0);
    }
    ev_acc_free(&acc);
}

Test(evalmetrics, recall_at_k_on_hand_made_sessions)
{
    json_t *fx = load_fixture(FIX "recall.json");
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(fx, "cases"), i, c) check_recall_case(fx, c);
    json_decref(fx);
}

Test(evalmetrics, gold_ranks_before_the_first_edit)
{
    json_t *fx = load_fixture(FIX "gold.json");
    json_t *exp = json_object_get(fx, "expected");
    ev_acc acc;
    accumulate(fx, (int)json_integer_value(json_object_get(fx, "horizon")), &acc);
    cr_expect_eq(acc.sessions, (size_t)json_integer_value(json_object_get(exp, "sessions")));
    cr_expect_eq(acc.turns, (size_t)json_integer_value(json_object_get(exp, "turns")));
    const char *key;
    json_t *want;
    json_object_foreach(json_object_get(exp, "gold_rank_median"), key, want) {
        ev_metrics m;
        ev_acc_metrics(&acc, rank_index(key), &m);
        cr_expect_eq(m.gold_pairs, (size_t)json_integer_value(json_object_get(exp, "gold_pairs")));
        cr_expect_eq(m.gold_tracked_pairs,
                     (size_t)json_integer_value(json_object_get(exp, "gold_tracked_pairs")));
        cr_expect(fabs(m.gold_tracked - json_real_value(json_object_get(exp, "gold_tracked"))) < EPS,
                  "gold_tracked %f", m.gold_tracked);
        cr_expect(fabs(m.gold_rank_median - json_real_value(want)) < EPS,
                  "%s gold rank median: got %g, want %g", key, m.gold_rank_median,
                  json_real_value(want));
    }
    ev_acc_free(&acc);
    json_decref(fx);
}

Test(evalmetrics, median)
{
    double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2}, one[] = {7};
    cr_expect_eq(ev_median(odd, 3), 3);
    cr_expect_eq(ev_median(even, 4), 2.5);
    cr_expect_eq(ev_median(one, 1), 7);
    cr_expect_eq(ev_median(NULL, 0), 0);
}

/* ---- eval --budget: evidence recall, tokens kept, cache breaks ------------ */

/* A message of `tokens` tokens (ASCII: 4 bytes each) starting with words. */
static clarity_ctx_message eb_msg_of(const char *role, const char *words, int tokens, char *store)
{
    size_t n = (size_t)tokens * 4;
    memset(store, ' ', n);
    memcpy(store, words, strlen(words));
    store[n] = '\0';
    clarity_ctx_message m = {.struct_size = sizeof m, .id = "x", .role = role, .text = store,
                             .text_len = n, .tokens = -1};
    return m;
}

static void eb_snap(ev_session *s, int64_t turn, const char *items_json)
{
    json_t *items = json_loads(items_json, 0, NULL);
    ev_snap sn;
    cr_assert_eq(ev_snap_from_json(&sn, turn, items), 0);
    cr_assert_eq(ev_session_push(s, &sn), 0);
    json_decref(items);
}

/* Messages (tokens): m0 user "fix app" (10), m1 call "read util" (40), m2
 * output "util code helper" (400), m3 call "read db" (40), m4 output "db
 * code" (400); at turn 4 also m5 "done" (40).  Budget 500.
 *   turn 3 (m0..m4, 890 tokens): recency keeps m0 and the newest that fit,
 *   m4 m3 (450); fresh_tail keeps the last 3 steps (all, 890); clarity's
 *   answer stubs m2 (530 sent) with util in its block (anchored).
 *   turn 4 (m0..m5, 930): recency m0 m5 m4 m3 (490), no break; fresh_tail
 *   all; clarity stubs m2 and m4 (130 sent): a break.
 * Items used at turn 3 (H = 1): util (newest evidence m2: clarity by its
 * block, fresh_tail), db (m4: all), app (m0: all), helper (m2: fresh_tail
 * only); nothing used at turn 4.  Recall: clarity 3/4, recency 2/4,
 * fresh_tail 4/4.  Tokens kept: clarity (530/890 + 130/930) / 2, recency
 * (450/890 + 490/930) / 2, fresh_tail 1.  Breaks per turn: 1/2, 0, 0.
 * Over budget: clarity 1 turn (530), fresh_tail 2, recency 0. */
Test(evalbudget, recall_tokens_and_breaks_by_hand)
{
    static char txt[6][2048];
    clarity_ctx_message m[6] = {
        eb_msg_of("user", "fix app", 10, txt[0]),        eb_msg_of("assistant", "read util", 40, txt[1]),
        eb_msg_of("tool", "util code helper", 400, txt[2]), eb_msg_of("assistant", "read db", 40, txt[3]),
        eb_msg_of("tool", "db code", 400, txt[4]),       eb_msg_of("assistant", "done", 40, txt[5]),
    };
    eb_session bs = {0};
    json_t *r3 = json_loads("{\"tokensAfter\":530,\"actions\":[{\"index\":2}],\"block\":"
                            "\"[CLARITY CONTEXT]\\n\\u25cf \\u2693 keyword:util (40)\\n"
                            "\\u25cf keyword:app (30)\\n[/CLARITY CONTEXT]\"}", 0, NULL);
    json_t *r4 = json_loads("{\"tokensAfter\":130,\"actions\":[{\"index\":2},{\"index\":4}],\"block\":\"\"}",
                            0, NULL);
    cr_assert(r3 && r4);
    cr_assert_eq(eb_turn_add(&bs, 3, m, 5, r3, 500), 0);
    cr_assert_eq(eb_turn_add(&bs, 4, m, 6, r4, 500), 0);
    cr_assert_eq(bs.t[0].full, 890);
    cr_assert_eq(bs.t[0].after[EB_RECENCY], 450);
    cr_assert_eq(bs.t[1].after[EB_RECENCY], 490);
    ev_session snaps;
    ev_session_init(&snaps);
    const char *before = "[{\"id\":\"keyword:util\",\"score\":1,\"mentionCount\":1,\"referenceCount\":0,\"lastMentionTurn\":1},"
                         "{\"id\":\"keyword:db\",\"score\":1,\"mentionCount\":1,\"referenceCount\":0,\"lastMentionTurn\":1},"
                         "{\"id\":\"keyword:app\",\"score\":1,\"mentionCount\":1,\"referenceCount\":0,\"lastMentionTurn\":1},"
                         "{\"id\":\"keyword:helper\",\"score\":1,\"mentionCount\":1,\"referenceCount\":0,\"lastMentionTurn\":1},"
                         "{\"id\":\"keyword:zzz\",\"score\":1,\"mentionCount\":1,\"referenceCount\":0,\"lastMentionTurn\":1}]";
    const char *after = "[{\"id\":\"keyword:util\",\"score\":1,\"mentionCount\":1,\"referenceCount\":1,\"lastMentionTurn\":1},"
                        "{\"id\":\"keyword:db\",\"score\":1,\"mentionCount\":1,\"referenceCount\":1,\"lastMentionTurn\":1},"
                        "{\"id\":\"keyword:app\",\"score\":1,\"mentionCount\":2,\"referenceCount\":0,\"lastMentionTurn\":3},"
                        "{\"id\":\"keyword:helper\",\"score\":1,\"mentionCount\":1,\"referenceCount\":1,\"lastMentionTurn\":1},"
                        "{\"id\":\"keyword:zzz\",\"score\":1,\"mentionCount\":1,\"referenceCount\":1,\"lastMentionTurn\":1}]";
    eb_snap(&snaps, 2, before);
    eb_snap(&snaps, 3, after);
    eb_snap(&snaps, 4, after);
    eb_acc a = {0};
    eb_session_score(&a, &bs, &snaps, 1);
    cr_assert_eq(a.pairs, 4, "zzz has no evidence; got %g pairs", a.pairs);
    cr_expect_float_eq(a.retained[EB_CLARITY] / a.pairs, 0.75, EPS);
    cr_expect_float_eq(a.retained[EB_RECENCY] / a.pairs, 0.5, EPS);
    cr_expect_float_eq(a.retained[EB_FRESH] / a.pairs, 1.0, EPS);
    cr_expect_float_eq(a.kept_sum[EB_CLARITY] / 2, (530.0 / 890 + 130.0 / 930) / 2, EPS);
    cr_expect_float_eq(a.kept_sum[EB_RECENCY] / 2, (450.0 / 890 + 490.0 / 930) / 2, EPS);
    cr_expect_float_eq(a.kept_sum[EB_FRESH] / 2, 1.0, EPS);
    cr_expect_float_eq(a.breaks[EB_CLARITY], 1, EPS);
    cr_expect_float_eq(a.breaks[EB_RECENCY], 0, EPS);
    cr_expect_float_eq(a.breaks[EB_FRESH], 0, EPS);
    cr_expect_float_eq(a.over[EB_CLARITY], 1, EPS);
    cr_expect_float_eq(a.over[EB_RECENCY], 0, EPS);
    cr_expect_float_eq(a.over[EB_FRESH], 2, EPS);
    json_t *pj = eb_policy_json(&a, EB_RECENCY);
    cr_expect_eq(json_object_size(pj), 3);
    cr_expect_float_eq(json_real_value(json_object_get(pj, "evidence_recall")), 0.5, EPS);
    cr_expect_float_eq(json_real_value(json_object_get(pj, "cache_breaks_per_turn")), 0, EPS);
    json_decref(pj);
    json_decref(r3);
    json_decref(r4);
    eb_session_clear(&bs);
    ev_session_free(&snaps);
}

Test(evalmetrics, snapshot_rejects_malformed_items)
{
    static const char *const bad[] = {
        "{}",
        "[{\"score\": 1, \"mentionCount\": 0, \"referenceCount\": 0, \"lastMentionTurn\": 0}]",
        "[{\"id\": \"a\", \"mentionCount\": 0, \"referenceCount\": 0, \"lastMentionTurn\": 0}]",
        "[{\"id\": \"a\", \"score\": 1, \"mentionCount\": \"x\", \"referenceCount\": 0, "
        "\"lastMentionTurn\": 0}]",
        "[{\"id\": \"a\", \"score\": 1, \"mentionCount\": 0, \"referenceCount\": 0}]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        cr_assert_not_null(j);
        ev_snap s;
        cr_expect_eq(ev_snap_from_json(&s, 1, j), -1, "accepted %s", bad[i]);
        cr_expect_eq(s.n, 0);
        ev_snap_free(&s);
        json_decref(j);
    }
    /* An empty session and an empty snapshot add nothing. */
    ev_acc acc;
    ev_acc_init(&acc);
    ev_session s;
    ev_session_init(&s);
    cr_expect_eq(ev_acc_add(&acc, &s, 5), 0);
    ev_snap sn;
    json_t *empty = json_array();
    cr_assert_eq(ev_snap_from_json(&sn, 1, empty), 0);
    cr_assert_eq(ev_session_push(&s, &sn), 0);
    cr_expect_eq(ev_acc_add(&acc, &s, 5), 0);
    ev_metrics m;
    ev_acc_metrics(&acc, EV_CLARITY, &m);
    cr_expect_eq(acc.sessions, 2);
    cr_expect_eq(acc.turns, 1);
    cr_expect_eq(m.recall_turns, 0);
    cr_expect_eq(m.gold_pairs, 0);
    json_decref(empty);
    ev_session_free(&s);
    ev_acc_free(&acc);
}

/* ---- the CLI ------------------------------------------------------------- */

static char *tmpdir;

static void setup(void)
{
    tmpdir = runproc_mkdtemp("clarity-eval-test");
    cr_assert_not_null(tmpdir);
}

static void teardown(void)
{
    if (tmpdir) runproc_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

TestSuite(eval_cli, .init = setup, .fini = teardown, .timeout = 120);

static const char *build_dir(void)
{
    const char *b = getenv("CLARITY_BUILD");
    return b && *b ? b : "build";
}

/* Runs the CLI (arguments NULL-terminated) with CLARITY_STATE pointing into
 * the temporary directory, so a write to the state db would show. */
static void run_cli(runproc_result *r, ...)
{
    const char *argv[64];
    char *exe = runproc_join(build_dir(), "clarity");
    char *state = runproc_join(tmpdir, "state.db");
    cr_assert(exe && state);
    char env_state[4200];
    snprintf(env_state, sizeof env_state, "CLARITY_STATE=%s", state);
    const char *env[] = {env_state, NULL};
    int n = 0;
    argv[n++] = exe;
    va_list ap;
    va_start(ap, r);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && n < 63) argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    int rc = runproc(argv, env, NULL, 0, TIMEOUT_MS, r);
    cr_assert_eq(rc, 0, "could not run the CLI");
    cr_assert_not(r->timed_out, "the CLI timed out; stderr:\n%s", r->err);
    struct stat st;
    cr_expect_neq(stat(state, &st), 0, "eval created the state db %s", state);
    free(exe);
    free(state);
}

static void expect_metrics(json_t *o, const char *where, const double want[9])
{
    static const char *keys[] = {"recall@5",         "recall@10",
                                 "recall@20",        "gold_rank_median",
                                 "gold_tracked",     "gold_mrr",
                                 "gold_top5_turn_median", "gold_top5_reached",
                                 "gold_in_block_turn1"};
    cr_assert(json_is_object(o), "%s: not an object", where);
    cr_expect_eq(json_object_size(o), 9, "%s: keys", where);
    for (int i = 0; i < 9; i++) {
        json_t *v = json_object_get(o, keys[i]);
        cr_assert(json_is_number(v), "%s.%s: not a number", where, keys[i]);
        cr_expect(fabs(json_number_value(v) - want[i]) < 1e-6, "%s.%s: got %.10f, want %.10f",
                  where, keys[i], json_number_value(v), want[i]);
    }
}

/* Expected values, by hand from the original formula (scoring.model
 * "original", and referenceWeight 0 for noref), H = 2:
 * s1: items app (mentioned), util, db (touched by tool calls).  Every
 *   turn has at most 3 items, so every recall is 1 (4 turns with F).
 *   Clarity's order after turns 1..3: util app | db util app | util db app
 *   (scores 30 25 | 30 25 20 | 35 25 15); gold app and db before turn 4:
 *   ranks 2 | 3 1 | 3 2 -> median 2; db untracked at turn 1 -> 5/6.
 *   lru: app util | db app util | same -> 1 2 1 2 1 -> 1; frequency: app
 *   first, then db -> 1 1 2 1 2 -> 1.  noref: app 25 util 15 | app 20 db
 *   15 util 10 | app 15 db 10 util 5 -> 1 1 2 1 2 -> 1.
 * s2: a1..a7 mentioned; a7 referenced at turns 1 and 3, a6 at 2 and 4.
 *   F(1) = {a6, a7}, F(2) = {a6, a7}, F(3) = {a6}.  Clarity ranks the
 *   referenced ones first: @5 1/2, 1, 1; lru and frequency (all ties, by
 *   id) a1..a5 first: @5 0, 0, 0; noref: all tied, as lru.  @10 all 1.
 * recall@5 over 7 turns: default (4 + 2.5) / 7, others 4 / 7.
 * MRR over s1's 6 pairs (untracked counts 0): base (1/2 + 1/3 + 1 + 1/3 +
 *   1/2) / 6 = 4/9; the others (1 + 1/2 + 1/2 + 1 + 1) / 6 = 2/3.
 * Every list has at most 3 items, so each gold file is in the top 5 from
 *   the first turn it is tracked: app 1, db 2 -> median 1.5, reached 1.
 * s1's first block names app only, and gold is {app, db}: 0. */
Test(eval_cli, json_matrix_on_a_tiny_corpus)
{
    runproc_result r;
    run_cli(&r, "eval", FIX "corpus.jsonl", "--json", "-H", "2", "--config", FIX "base.json",
            "--config", FIX "noref.json", NULL);
    cr_assert_eq(r.status, 0, "status %d; stderr:\n%s", r.status, r.err);
    json_error_t je;
    json_t *j = json_loadb(r.out, r.out_len, 0, &je);
    cr_assert_not_null(j, "not one JSON value (%s): %s", je.text, r.out);
    cr_assert(json_is_object(j));
    cr_expect_eq(json_object_size(j), 5);
    cr_expect_eq(json_integer_value(json_object_get(j, "sessions")), 2);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(j, "progress"), "runs")), 0);
    cr_expect_eq(json_integer_value(json_object_get(j, "turns")), 9);
    json_t *configs = json_object_get(j, "configs"), *base = json_object_get(j, "baselines");
    cr_assert(json_is_object(configs) && json_is_object(base));
    cr_expect_eq(json_object_size(configs), 2);
    cr_expect_eq(json_object_size(base), 2);
    /* configs keep the order of --config */
    void *it = json_object_iter(configs);
    cr_assert_not_null(it);
    cr_expect_str_eq(json_object_iter_key(it), "base");
    const double want_base[9] = {6.5 / 7, 1, 1, 2, 5.0 / 6, 4.0 / 9, 1.5, 1, 0};
    const double want_other[9] = {4.0 / 7, 1, 1, 1, 5.0 / 6, 2.0 / 3, 1.5, 1, 0};
    expect_metrics(json_object_get(configs, "base"), "base", want_base);
    expect_metrics(json_object_get(configs, "noref"), "noref", want_other);
    expect_metrics(json_object_get(base, "lru"), "lru", want_other);
    expect_metrics(json_object_get(base, "frequency"), "frequency", want_other);
    json_decref(j);
    runproc_free(&r);
}

/* gold_in_block_turn1: every gold file among the first five files of the
 * first prompt's block (clarity) or of the ranking after that prompt
 * (baselines).  s3's prompt names its gold file, s4's does not: 1/2. */
Test(eval_cli, gold_in_the_first_block)
{
    runproc_result r;
    run_cli(&r, "eval", FIX "block.jsonl", "--json", NULL);
    cr_assert_eq(r.status, 0, "status %d; stderr:\n%s", r.status, r.err);
    json_t *j = json_loadb(r.out, r.out_len, 0, NULL);
    cr_assert_not_null(j, "not JSON: %s", r.out);
    const char *where[][2] = {{"configs", "default"}, {"baselines", "lru"}, {"baselines", "frequency"}};
    for (int i = 0; i < 3; i++) {
        json_t *m = json_object_get(json_object_get(j, where[i][0]), where[i][1]);
        json_t *v = json_object_get(m, "gold_in_block_turn1");
        cr_assert(json_is_number(v), "%s: no gold_in_block_turn1", where[i][1]);
        cr_expect(fabs(json_number_value(v) - 0.5) < 1e-9, "%s: %g", where[i][1],
                  json_number_value(v));
    }
    /* after turn 1, s3's gold (mentioned) ranks 2nd behind other.py
     * (mentioned and read), s4's (read) 1st: MRR (1/2 + 1) / 2 */
    json_t *mrr = json_object_get(json_object_get(json_object_get(j, "configs"), "default"), "gold_mrr");
    cr_expect(fabs(json_number_value(mrr) - 0.75) < 1e-9, "mrr %g", json_number_value(mrr));
    json_decref(j);
    runproc_free(&r);
}

/* The HEAD commit of dir into out (41 bytes). */
static void head_of(const char *dir, char out[41])
{
    char *file = runproc_join(dir, ".head");
    cr_assert_eq(gitrepo_sh(dir, "git rev-parse HEAD > .head"), 0);
    FILE *f = fopen(file, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(out, 41, f));
    fclose(f);
    unlink(file);
    free(file);
}

/* --repos: a session naming its repository and base commit replays in a
 * clone at that commit with the code graph built, so its first block
 * names the file the issue points at among the likely edit targets, which
 * no baseline can (nothing is tracked before the agent works). */
Test(eval_cli, repos_replay_each_session_at_its_commit)
{
    char *repos = runproc_join(tmpdir, "repos"), *src = runproc_join(repos, "acme/widget");
    char *cache = runproc_join(tmpdir, "cache"), *corpus = runproc_join(tmpdir, "swe.jsonl");
    cr_assert_eq(gitrepo_sh(tmpdir, "mkdir -p repos/acme/widget && cd repos/acme/widget && git init -q ."), 0);
    cr_assert_eq(gitrepo_write(src, "widget/session.py",
                               "class SessionStore:\n    def login(self):\n        pass\n"), 0);
    cr_assert_eq(gitrepo_write(src, "widget/pool.py", "def connect():\n    pass\n"), 0);
    cr_assert_eq(gitrepo_write(src, "widget/render.py", "def draw_table(rows):\n    return rows\n"), 0);
    cr_assert_eq(gitrepo_commit(src, 1700000000, "init"), 0);
    char c1[41], c2[41];
    head_of(src, c1);
    cr_assert_eq(gitrepo_write(src, "widget/pool.py", "def connect():\n    pass\n\ndef pool_size():\n    return 3\n"), 0);
    cr_assert_eq(gitrepo_commit(src, 1700000100, "pool size"), 0);
    head_of(src, c2);
    char text[4096];
    snprintf(text, sizeof text,
             "{\"session\":\"a\",\"turn\":1,\"role\":\"user\",\"text\":\"login fails in the session store\"}\n"
             "{\"session\":\"a\",\"meta\":{\"repo\":\"acme/widget\",\"base_commit\":\"%s\","
             "\"gold_files\":[\"widget/session.py\"],\"first_edit_turn\":2,\"n_turns\":1}}\n"
             "{\"session\":\"b\",\"turn\":1,\"role\":\"user\",\"text\":\"the pool size is wrong when we connect\"}\n"
             "{\"session\":\"b\",\"meta\":{\"repo\":\"acme/widget\",\"base_commit\":\"%s\","
             "\"gold_files\":[\"widget/pool.py\"],\"first_edit_turn\":2,\"n_turns\":1}}\n"
             "{\"session\":\"c\",\"turn\":1,\"role\":\"user\",\"text\":\"draw_table drops rows\"}\n"
             "{\"session\":\"c\",\"meta\":{\"repo\":\"acme/gone\",\"base_commit\":\"%s\","
             "\"gold_files\":[\"widget/render.py\"],\"first_edit_turn\":2,\"n_turns\":1}}\n",
             c1, c2, c1);
    cr_assert_eq(runproc_write_file(corpus, text), 0);
    runproc_result r;
    run_cli(&r, "eval", corpus, "--repos", repos, "--repo-cache", cache, "--json", NULL);
    cr_assert_eq(r.status, 0, "status %d; stderr:\n%s", r.status, r.err);
    /* c's repository is not there: said, and c runs without one */
    cr_expect_not_null(strstr(r.err, "session c runs without a repository: no repository acme/gone"), "%s", r.err);
    json_t *j = json_loadb(r.out, r.out_len, 0, NULL);
    cr_assert_not_null(j, "not JSON: %s", r.out);
    json_t *def = json_object_get(json_object_get(j, "configs"), "default");
    json_t *lru = json_object_get(json_object_get(j, "baselines"), "lru");
    /* a and b find their gold file among the targets, c cannot: 2 of 3 */
    cr_expect(fabs(json_number_value(json_object_get(def, "gold_in_block_turn1")) - 2.0 / 3) < 1e-9,
              "%s", r.out);
    cr_expect(fabs(json_number_value(json_object_get(lru, "gold_in_block_turn1"))) < 1e-9, "%s", r.out);
    cr_expect_eq(json_integer_value(json_object_get(j, "with_repo")), 2, "%s", r.out);
    json_decref(j);
    /* each commit has its clone and graph, checked out at that commit */
    char path[4400];
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/acme+widget/%s/.clarity/graph.db", cache, i ? c2 : c1);
        struct stat st;
        cr_expect_eq(stat(path, &st), 0, "no %s", path);
    }
    snprintf(path, sizeof path, "%s/acme+widget/%s/widget/pool.py", cache, c1);
    struct stat st;
    cr_expect_eq(stat(path, &st), 0);
    runproc_free(&r);
    /* a second run reuses the clones and graphs */
    run_cli(&r, "eval", corpus, "--repos", repos, "--repo-cache", cache, NULL);
    cr_assert_eq(r.status, 0, "status %d; stderr:\n%s", r.status, r.err);
    cr_expect_not_null(strstr(r.out, "2 of 3 sessions ran in their repository at its base commit"), "%s", r.out);
    runproc_free(&r);
    free(repos), free(src), free(cache), free(corpus);
}

/* Test runs over a corpus: p1 runs pytest five times: turns 2 and 3 re-run
 * with no edit, turn 4 after an edit, turn 5 (all green) with none since
 * turn 4's run; runs 2..4 do not beat the first (a streak of 3).  p2's
 * "passed" is prose, not a run.  Of 6 turns, 3 re-ran tests with no edit. */
Test(eval_cli, test_runs_over_a_corpus)
{
    runproc_result r;
    run_cli(&r, "eval", FIX "progress.jsonl", "--json", NULL);
    cr_assert_eq(r.status, 0, "status %d; stderr:\n%s", r.status, r.err);
    json_t *j = json_loadb(r.out, r.out_len, 0, NULL);
    cr_assert_not_null(j, "not JSON: %s", r.out);
    json_t *p = json_object_get(j, "progress");
    cr_expect_eq(json_integer_value(json_object_get(p, "sessions_with_runs")), 1, "%s", r.out);
    cr_expect_eq(json_integer_value(json_object_get(p, "runs")), 5);
    cr_expect_eq(json_integer_value(json_object_get(p, "reruns_without_edit")), 3, "%s", r.out);
    cr_expect(fabs(json_number_value(json_object_get(p, "turn_share_rerun_without_edit")) - 3.0 / 6) < 1e-9,
              "%s", r.out);
    cr_expect_eq(json_integer_value(json_object_get(p, "longest_no_improvement_streak")), 3);
    cr_expect_eq(json_integer_value(json_object_get(p, "sessions_streak_3_or_more")), 1);
    json_decref(j);
    runproc_free(&r);
    run_cli(&r, "eval", FIX "progress.jsonl", NULL);
    cr_expect_not_null(strstr(r.out, "test runs recognised: 5 in 1 sessions; 3 re-run with no edit"), "%s", r.out);
    runproc_free(&r);
}

Test(eval_cli, table_and_html_report)
{
    char *html = runproc_join(tmpdir, "report.html");
    runproc_result r;
    run_cli(&r, "eval", FIX "corpus.jsonl", "--html", html, NULL);
    cr_assert_eq(r.status, 0, "status %d; stderr:\n%s", r.status, r.err);
    const char *rows[] = {"recall@5", "recall@10", "recall@20", "gold rank median", "gold tracked",
                          "default", "lru", "frequency", "2 sessions, 9 turns"};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        cr_expect_not_null(strstr(r.out, rows[i]), "no \"%s\" in:\n%s", rows[i], r.out);
    /* H = 5 (default): s1 F(1) = {util, app}; recall@5 = (4 + 2.5) / 7 */
    cr_expect_not_null(strstr(r.out, "92.9%"), "%s", r.out);
    FILE *f = fopen(html, "r");
    cr_assert_not_null(f, "no HTML report");
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cr_expect_not_null(strstr(buf, "<!DOCTYPE html>"));
    cr_expect_not_null(strstr(buf, "<table>"));
    size_t charts = 0;
    for (const char *p = buf; (p = strstr(p, "<svg")) != NULL; p++) charts++;
    cr_expect_eq(charts, 5, "one chart per metric");
    cr_expect_null(strstr(buf, "<script"), "self-contained, no scripts");
    runproc_free(&r);
    free(html);
}

/* --budget --json: exactly the documented object.  A budget larger than
 * any transcript removes nothing: every policy keeps all, breaks nothing. */
Test(eval_cli, budget_json_shape)
{
    runproc_result r;
    run_cli(&r, "eval", FIX "corpus.jsonl", "--budget", "1000000", "--json", NULL);
    cr_assert_eq(r.status, 0, "status %d; stderr:\n%s", r.status, r.err);
    json_t *j = json_loadb(r.out, r.out_len, 0, NULL);
    cr_assert_not_null(j, "not JSON: %s", r.out);
    cr_expect_eq(json_object_size(j), 4);
    cr_expect_eq(json_integer_value(json_object_get(j, "sessions")), 2);
    cr_expect_float_eq(json_number_value(json_object_get(j, "budget")), 1000000, EPS);
    json_t *configs = json_object_get(j, "configs"), *base = json_object_get(j, "baselines");
    cr_assert_eq(json_object_size(configs), 1);
    cr_assert_eq(json_object_size(base), 2);
    json_t *all[3] = {json_object_get(configs, "default"), json_object_get(base, "recency"),
                      json_object_get(base, "fresh_tail")};
    for (int i = 0; i < 3; i++) {
        cr_assert(json_is_object(all[i]) && json_object_size(all[i]) == 3, "policy %d", i);
        cr_expect_float_eq(json_number_value(json_object_get(all[i], "evidence_recall")), 1, EPS);
        cr_expect_float_eq(json_number_value(json_object_get(all[i], "tokens_kept")), 1, EPS);
        cr_expect_float_eq(json_number_value(json_object_get(all[i], "cache_breaks_per_turn")), 0, EPS);
    }
    json_decref(j);
    runproc_free(&r);
}

/* --budget F --html: the table, and recall against budget 10..100 %. */
Test(eval_cli, budget_table_and_sweep)
{
    char *html = runproc_join(tmpdir, "budget.html");
    runproc_result r;
    run_cli(&r, "eval", FIX "corpus.jsonl", "--budget", "0.3", "--html", html, NULL);
    cr_assert_eq(r.status, 0, "status %d; stderr:\n%s", r.status, r.err);
    const char *rows[] = {"evidence recall", "tokens kept", "cache breaks / turn", "default", "recency",
                          "fresh_tail"};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        cr_expect_not_null(strstr(r.out, rows[i]), "no \"%s\" in:\n%s", rows[i], r.out);
    char *page = clihelp_read(html);
    cr_assert_not_null(page, "no HTML report");
    cr_expect_not_null(strstr(page, "<svg"));
    cr_expect_not_null(strstr(page, "<td>10%</td>"), "the sweep starts at 10 %%");
    cr_expect_not_null(strstr(page, "<td>100%</td>"), "the sweep ends at 100 %%");
    free(page);
    runproc_free(&r);
    free(html);
}

Test(eval_cli, usage_errors)
{
    runproc_result r;
    run_cli(&r, "eval", NULL);
    cr_expect_eq(r.status, 64);
    runproc_free(&r);
    run_cli(&r, "eval", "-", NULL);
    cr_expect_eq(r.status, 64);
    runproc_free(&r);
    run_cli(&r, "eval", FIX "corpus.jsonl", "-H", "0", NULL);
    cr_expect_eq(r.status, 64);
    runproc_free(&r);
    run_cli(&r, "replay", FIX "corpus.jsonl", "--html", "x.html", NULL);
    cr_expect_eq(r.status, 64);
    runproc_free(&r);
    run_cli(&r, "eval", FIX "corpus.jsonl", "--config", FIX "base.json", "--config",
            FIX "base.json", NULL);
    cr_expect_eq(r.status, 64, "two columns with one name; stderr:\n%s", r.err);
    runproc_free(&r);
    run_cli(&r, "eval", FIX "no-such-corpus.jsonl", NULL);
    cr_expect_eq(r.status, 1);
    runproc_free(&r);
}
