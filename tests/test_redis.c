/* test_redis.c: the Redis backend against a real redis-server (Debian's),
 * started by each test on 127.0.0.1 at a free port in a temporary
 * directory: round trip and restore, export/import, the fence between two
 * stores, two plugin instances sharing sessions (each turn on either),
 * concurrent writers through two instances (no turn lost or counted
 * twice), the server stopped and restarted (nothing acknowledged lost with
 * appendfsync always), and bad URLs, a wrong password, a key of another
 * type under the prefix. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../store/store.h"
#include "redisserver.h"
#include "testhost.h"

#ifndef CLARITY_WITH_REDIS

Test(redis, refused_without_hiredis)
{
    th_host h;
    char *err = NULL;
    int rc = th_open(&h, "{\"storage\":{\"backend\":\"redis\",\"url\":\"redis://127.0.0.1\"}}", 0, &err);
    cr_assert_eq(rc, CLARITY_ECONFIG);
    cr_assert(err && strstr(err, "needs clarity built with hiredis"), "%s", err ? err : "");
    free(err);
    fprintf(stderr, "test_redis: built without hiredis (libhiredis-dev): only the refusal is tested\n");
}

#else

static redis_srv srv;

static void start(const char *const *extra)
{
    if (redis_start(&srv, extra) != 0)
        cr_assert_fail("redis-server could not be started (apt-get install redis-server)");
}

static void stop(void) { redis_stop(&srv, 0); }

/* An instance on the server under key prefix, with a command timeout of
 * timeout_ms. */
static void open_with_timeout(th_host *h, const char *prefix, const char *extra, int timeout_ms)
{
    char cfg[1024], *err = NULL;
    snprintf(cfg, sizeof cfg,
             "{\"storage\":{\"backend\":\"redis\",\"url\":\"%s\",\"keyPrefix\":\"%s\",\"timeoutMs\":%d}%s}",
             srv.url, prefix, timeout_ms, extra ? extra : "");
    cr_assert_eq(th_open(h, cfg, 0, &err), 0, "%s", err ? err : "");
}

static void open_on(th_host *h, const char *prefix, const char *extra) { open_with_timeout(h, prefix, extra, 500); }

static void turn(th_host *h, const char *session, const char *prompt, const char *reply)
{
    cr_assert_eq(th_before(h, session, "/ws", prompt, strlen(prompt), NULL), 0, "%s", h->last_error);
    cr_assert_eq(th_end(h, session, reply, "Read", "{\"file_path\":\"/ws/src/app.py\"}"), 0, "%s",
                 h->last_error);
}

static json_t *scores(th_host *h, const char *session)
{
    char params[256];
    snprintf(params, sizeof params, "{\"session\":\"%s\"}", session);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(h, "clarity.getScores", params, &j), 0, "getScores %s", session);
    json_object_del(j, "session");
    return j;
}

static long long current_turn(th_host *h, const char *session)
{
    json_t *j = scores(h, session);
    long long t = json_integer_value(json_object_get(j, "currentTurn"));
    json_decref(j);
    return t;
}

TestSuite(redis, .fini = stop, .timeout = 120);

Test(redis, round_trip_restore_and_commands)
{
    start(NULL);
    th_host h;
    open_on(&h, "t1:", NULL);
    turn(&h, "s", "Refactor ClaraCore and focus-engine", "Reading ClaraCore first");
    turn(&h, "s", "Now ClaraCore tests", "done with ClaraCore");
    json_t *before = scores(&h, "s");
    cr_assert_eq(json_integer_value(json_object_get(before, "currentTurn")), 2);
    th_close(&h);
    /* the state lives in one hash per session */
    char out[256];
    cr_assert_eq(redis_cli(&srv, out, sizeof out, "TYPE t1:clarity:s:s"), 0);
    cr_expect_str_eq(out, "hash");
    open_on(&h, "t1:", NULL);
    json_t *after = scores(&h, "s");
    cr_expect(json_equal(before, after), "scores differ after a restore");
    char *text = NULL, *err = NULL;
    cr_assert_eq(th_cmd(&h, "s", "/clarity", &text, &err), 0, "%s", err ? err : "");
    cr_expect_not_null(strstr(text, "store redis"), "%s", text);
    free(text);
    cr_assert_eq(th_cmd(&h, "s", "/clarity anchor ClaraCore", &text, &err), 0);
    free(text);
    /* export and import in the original plugin's shape */
    json_t *ex = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.exportState", "{\"session\":\"s\"}", &ex), 0);
    json_t *p = json_pack("{s:s, s:O}", "session", "copy", "state", json_object_get(ex, "value"));
    char *ps = json_dumps(p, 0);
    json_t *r = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.importState", ps, &r), 0, "%s", json_dumps(r, 0));
    json_t *a = scores(&h, "s"), *b = scores(&h, "copy");
    cr_expect(json_equal(a, b), "imported scores differ");
    th_close(&h);
    /* a second instance reads what the first wrote */
    open_on(&h, "t1:", NULL);
    json_t *c = scores(&h, "copy");
    cr_expect(json_equal(b, c), "the import did not persist");
    th_close(&h);
    json_decref(before), json_decref(after), json_decref(ex), json_decref(p), json_decref(r);
    json_decref(a), json_decref(b), json_decref(c);
    free(ps);
}

static int count_key(void *ud, const char *key, const char *val, size_t len)
{
    (void)val, (void)len;
    cr_expect_neq(key[0], '~', "the version field was listed");
    ++*(int *)ud;
    return 0;
}

/* The store's fence: a commit conditional on the namespace's version. */
Test(redis, fence_refuses_a_stale_commit)
{
    start(NULL);
    store *x, *y;
    char *err = NULL;
    cr_assert_eq(store_open_redis(srv.url, "f:", 500, &x, &err), CLARITY_OK, "%s", err);
    cr_assert_eq(store_open_redis(srv.url, "f:", 500, &y, &err), CLARITY_OK, "%s", err);
    uint64_t vx, vy;
    cr_assert_eq(store_version(x, "ns", &vx), CLARITY_OK);
    cr_assert_eq(store_version(y, "ns", &vy), CLARITY_OK);
    cr_assert_eq(vx, 0);
    cr_assert_eq(store_begin(x), CLARITY_OK);
    cr_assert_eq(store_put(x, "ns", "k", "from x", 6), CLARITY_OK);
    cr_assert_eq(store_fence(x, "ns", vx, vx + 1), CLARITY_OK);
    cr_assert_eq(store_commit(x), CLARITY_OK);
    /* y read version 0 too: its commit loses, and writes nothing */
    cr_assert_eq(store_begin(y), CLARITY_OK);
    cr_assert_eq(store_put(y, "ns", "k", "from y", 6), CLARITY_OK);
    cr_assert_eq(store_put(y, "ns", "k2", "y only", 6), CLARITY_OK);
    cr_assert_eq(store_fence(y, "ns", vy, vy + 1), CLARITY_OK);
    cr_assert_eq(store_commit(y), STORE_ECONFLICT, "%s", store_errmsg(y));
    char *val;
    size_t len;
    cr_assert_eq(store_get(y, "ns", "k", &val, &len), CLARITY_OK);
    cr_expect(len == 6 && memcmp(val, "from x", 6) == 0);
    free(val);
    cr_expect_eq(store_get(y, "ns", "k2", &val, &len), CLARITY_ENOTFOUND);
    cr_assert_eq(store_version(y, "ns", &vy), CLARITY_OK);
    cr_expect_eq(vy, 1);
    /* reads inside a transaction see its own writes; iteration skips the version */
    cr_assert_eq(store_begin(y), CLARITY_OK);
    cr_assert_eq(store_put(y, "ns", "i:a", "1", 1), CLARITY_OK);
    cr_assert_eq(store_get(y, "ns", "i:a", &val, &len), CLARITY_OK);
    free(val);
    cr_assert_eq(store_fence(y, "ns", vy, vy + 1), CLARITY_OK);
    cr_assert_eq(store_commit(y), CLARITY_OK);
    int n = 0;
    cr_assert_eq(store_iter(x, "ns", "", count_key, &n), CLARITY_OK);
    cr_expect_eq(n, 2, "k and i:a (the version field is not a key)");
    n = 0;
    cr_assert_eq(store_iter(x, "ns", "i:", count_key, &n), CLARITY_OK);
    cr_expect_eq(n, 1);
    store_close(x);
    store_close(y);
}

/* Each turn of a session on either of two instances: the result equals a
 * single instance's. */
Test(redis, two_instances_share_sessions)
{
    start(NULL);
    th_host a, b, one;
    open_on(&a, "t3:", NULL);
    open_on(&b, "t3:", NULL);
    open_on(&one, "t3serial:", NULL);
    const char *prompts[] = {"Refactor ClaraCore", "focus-engine next, and src/app.py", "ClaraCore again",
                             "web_search for docs", "back to focus-engine"};
    for (int i = 0; i < 10; i++) {
        const char *p = prompts[i % 5];
        th_host *h = (i * 7 + 3) % 3 == 0 ? &a : &b; /* before on one... */
        th_host *g = (i % 2) ? &a : &b;              /* ...agent_end on another */
        cr_assert_eq(th_before(h, "s", "/ws", p, strlen(p), NULL), 0);
        cr_assert_eq(th_end(g, "s", "ok, ClaraCore", "Read", "{\"file_path\":\"/ws/src/app.py\"}"), 0);
        turn(&one, "s", p, "ok, ClaraCore");
    }
    json_t *x = scores(&a, "s"), *y = scores(&b, "s"), *z = scores(&one, "s");
    cr_expect_eq(json_integer_value(json_object_get(x, "currentTurn")), 10);
    cr_expect(json_equal(x, y), "the instances disagree");
    cr_expect(json_equal(x, z), "shared: %s\nserial: %s", json_dumps(x, 0), json_dumps(z, 0));
    json_decref(x), json_decref(y), json_decref(z);
    th_close(&a), th_close(&b), th_close(&one);
}

typedef struct writer {
    th_host *h;
    int seed, done[8], failed;
} writer;

static void *write_turns(void *arg)
{
    writer *w = arg;
    unsigned s = (unsigned)w->seed;
    for (int i = 0; i < 40; i++) {
        char session[16];
        int k = (int)(rand_r(&s) % 8);
        snprintf(session, sizeof session, "c%d", k);
        if (th_end(w->h, session, "ClaraCore", NULL, NULL) == 0) w->done[k]++;
        else w->failed++;
    }
    return NULL;
}

/* 2 instances x 3 threads, 8 sessions: every acknowledged agent_end is
 * counted exactly once, whatever the interleaving (commits that lose the
 * fence reload and run again).  Rounds of 240 turns run until some commit
 * has lost the fence (a fast turn may not race in one round), at most 25. */
Test(redis, concurrent_writers_lose_no_turn)
{
    start(NULL);
    th_host h[2];
    open_on(&h[0], "t4:", NULL);
    open_on(&h[1], "t4:", NULL);
    for (int i = 0; i < 2; i++) snprintf(h[i].count_match, sizeof h[i].count_match, "committed first");
    writer w[6];
    memset(w, 0, sizeof w);
    int rounds = 0;
    while (rounds < 25 && (rounds == 0 || h[0].matched_lines + h[1].matched_lines == 0)) {
        pthread_t t[6];
        for (int i = 0; i < 6; i++) {
            w[i].h = &h[i % 2];
            w[i].seed = 17 + i + 6 * rounds;
            pthread_create(&t[i], NULL, write_turns, &w[i]);
        }
        for (int i = 0; i < 6; i++) pthread_join(t[i], NULL);
        rounds++;
    }
    int total = 0;
    for (int k = 0; k < 8; k++) {
        int want = 0;
        for (int i = 0; i < 6; i++) want += w[i].done[k];
        total += want;
        char session[16];
        snprintf(session, sizeof session, "c%d", k);
        th_host fresh;
        open_on(&fresh, "t4:", NULL);
        cr_expect_eq(current_turn(&fresh, session), want, "session %s", session);
        th_close(&fresh);
    }
    int failed = 0;
    for (int i = 0; i < 6; i++) failed += w[i].failed;
    cr_expect_eq(failed, 0, "%d turns refused", failed);
    cr_expect_eq(total, 240 * rounds);
    /* the fence did its work: some commits lost and were run again */
    int retried = h[0].matched_lines + h[1].matched_lines;
    cr_expect_gt(retried, 0, "no commit ever lost in %d rounds: the test did not race", rounds);
    fprintf(stderr,
            "test_redis: %d turns through 2 instances x 3 threads, %d commits lost the fence and ran again\n",
            240 * rounds, retried);
    th_close(&h[0]), th_close(&h[1]);
}

/* With appendfsync always, nothing acknowledged is lost across a Redis
 * restart; while it is down a turn fails with the Redis error within the
 * timeout, its state is kept and goes out with the next turn. */
Test(redis, server_down_and_back)
{
    const char *aof[] = {"--appendonly", "yes", "--appendfsync", "always", NULL};
    start(aof);
    th_host h;
    /* a server just restarted with fsync always can take longer than
     * 500 ms over a command on a loaded machine (one CI run): the timeout
     * is no part of what this tests, a refused connection fails at once */
    open_with_timeout(&h, "t5:", NULL, 3000);
    for (int i = 0; i < 3; i++) turn(&h, "s", "ClaraCore work", "ClaraCore ok");
    redis_stop(&srv, 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = th_end(&h, "s", "ClaraCore while down", NULL, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_expect_eq(rc, CLARITY_ESTORE);
    cr_expect(strstr(th_event_error(), "redis:") != NULL, "error: %s", th_event_error());
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_expect(secs < 5, "a dead server held the hook %.1f s", secs);
    cr_assert_eq(redis_restart(&srv, aof), 0);
    /* the backoff lets the next call through after at most 2 s */
    struct timespec pause = {2, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
    turn(&h, "s", "ClaraCore after", "ClaraCore fine");
    th_close(&h);
    redis_stop(&srv, 1);
    cr_assert_eq(redis_restart(&srv, aof), 0);
    open_with_timeout(&h, "t5:", NULL, 3000);
    cr_expect_eq(current_turn(&h, "s"), 5, "3 + the one kept while down + 1");
    th_close(&h);
}

Test(redis, bad_url_password_and_foreign_keys)
{
    const char *pw[] = {"--requirepass", "s3cret", NULL};
    start(pw);
    th_host h;
    char *err = NULL;
    cr_expect_eq(th_open(&h, "{\"storage\":{\"backend\":\"redis\",\"url\":\"redis://127.0.0.1:99999\"}}", 0, &err),
                 CLARITY_ECONFIG);
    cr_expect(err && strstr(err, "storage.url: the port must be 1..65535"), "%s", err ? err : "");
    free(err);
    err = NULL;
    cr_expect_eq(th_open(&h, "{\"storage\":{\"backend\":\"redis\",\"url\":\"unix://relative.sock\"}}", 0, &err),
                 CLARITY_ECONFIG);
    cr_expect(err && strstr(err, "absolute socket path"), "%s", err ? err : "");
    free(err);
    /* a wrong password: the hook fails and says why */
    char cfg[512];
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"redis\",\"url\":\"redis://:wrong@127.0.0.1:%d\"}}",
             srv.port);
    cr_assert_eq(th_open(&h, cfg, 0, NULL), 0);
    cr_expect_eq(th_end(&h, "s", "x", NULL, NULL), CLARITY_ESTORE);
    cr_expect(strstr(th_event_error(), "AUTH") != NULL, "error: %s", th_event_error());
    th_close(&h);
    /* the right one works; a key of another type under the prefix is an
     * error naming it, and it is left as it was */
    snprintf(cfg, sizeof cfg,
             "{\"storage\":{\"backend\":\"redis\",\"url\":\"redis://:s3cret@127.0.0.1:%d\",\"keyPrefix\":\"w:\"}}",
             srv.port);
    cr_assert_eq(th_open(&h, cfg, 0, NULL), 0);
    turn(&h, "ok", "ClaraCore", "ClaraCore");
    char out[256];
    cr_assert_eq(redis_cli(&srv, out, sizeof out, "-a s3cret --no-auth-warning SET w:clarity:s:taken keep"), 0);
    int rc = th_before(&h, "taken", NULL, "ClaraCore", 9, NULL);
    cr_expect_eq(rc, CLARITY_ESTORE);
    cr_expect(strstr(th_event_error(), "WRONGTYPE") != NULL, "error: %s", th_event_error());
    redis_cli(&srv, out, sizeof out, "-a s3cret --no-auth-warning GET w:clarity:s:taken");
    cr_expect_str_eq(out, "keep");
    th_close(&h);
}

#endif
