/* stress.c: the concurrency tests under ThreadSanitizer (`make tsan`).
 *
 * Criterion cannot start under TSan, so this is a plain program: it loads
 * the TSan build of libclarity.so through the ABI (tests/testhost.c) and
 *   1. runs tests/test_concurrency.c's scenario (8 threads each driving the
 *      same 16 sessions, on SQLite and on the host's kv, 4 resident), with
 *      sessions ended while in use and a snapshot every 4 records (folds on
 *      the worker thread racing the turns), and checks every turn counted
 *      once;
 *   2. runs 16 threads x 64 sessions, each thread owning its sessions, with
 *      forced eviction (8 resident), then replays the same turns serially
 *      in a second instance and requires identical scores;
 *   3. prompts from 4 threads on a workspace with a code graph, on a host
 *      that never waits for it to load (prediction.loadWaitMs 0) and
 *      refreshes it (autoRefresh), while a fifth thread rebuilds it and
 *      asks clarity.predict: the loader thread's index swaps race the
 *      prompts' reads; the predictions must come.
 * Exit status 0 when every check held; TSan reports make it non-zero
 * (TSAN_OPTIONS=halt_on_error=1 exitcode=66).
 *
 *   stress [--quick]      (--quick: fewer turns, for make check)
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testhost.h"

static int failures;
static int turns_per_session = 12;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "stress: FAIL %s:%d: ", __FILE__, __LINE__);                      \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fputc('\n', stderr);                                                              \
            __atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);                               \
        }                                                                                     \
    } while (0)

/* ---- 1. every thread drives every session ---------------------------------- */

enum { SHARED_THREADS = 8, SHARED_SESSIONS = 16 };
static th_host shared;
static int shared_turns = 10;

static void *shared_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    char sid[32], prompt[128];
    for (int t = 0; t < shared_turns; t++)
        for (int s = 0; s < SHARED_SESSIONS; s++) {
            snprintf(sid, sizeof sid, "s%02d", s);
            snprintf(prompt, sizeof prompt, "ClaraCore thread%d turn%d on src/t%d.ts", id, t, id);
            CHECK(th_before(&shared, sid, NULL, prompt, strlen(prompt), NULL) == 0, "before %s", sid);
            CHECK(th_end(&shared, sid, "ClaraCore done", "Read", "{\"file_path\":\"src/shared.ts\"}") == 0,
                  "end %s", sid);
            if (t % 5 == 0) CHECK(th_rpc(&shared, "clarity.getScores", "{\"session\":\"s00\"}", NULL) == 0, "rpc");
            /* ended while other threads still use it: its fold (the
             * worker's, on SQLite) races their turns */
            if (t % 3 == 1 && s % SHARED_THREADS == id) CHECK(th_session_end(&shared, sid) == 0, "session_end %s", sid);
        }
    return NULL;
}

static void shared_sessions(const char *cfg, int with_kv, const char *what)
{
    char *err = NULL;
    if (th_open(&shared, cfg, with_kv, &err) != 0) {
        CHECK(0, "open (%s): %s", what, err ? err : "");
        free(err);
        return;
    }
    pthread_t th[SHARED_THREADS];
    for (int i = 0; i < SHARED_THREADS; i++) pthread_create(&th[i], NULL, shared_worker, (void *)(intptr_t)i);
    for (int i = 0; i < SHARED_THREADS; i++) pthread_join(th[i], NULL);
    for (int s = 0; s < SHARED_SESSIONS; s++) {
        char params[64];
        snprintf(params, sizeof params, "{\"session\":\"s%02d\"}", s);
        json_t *j = NULL;
        CHECK(th_rpc(&shared, "clarity.getScores", params, &j) == 0, "scores s%02d", s);
        CHECK(json_integer_value(json_object_get(j, "currentTurn")) == SHARED_THREADS * shared_turns,
              "%s: s%02d turn %lld, expected %d", what, s,
              (long long)json_integer_value(json_object_get(j, "currentTurn")), SHARED_THREADS * shared_turns);
        json_decref(j);
    }
    th_close(&shared);
    printf("stress: %d threads x %d shared sessions x %d turns on %s: ok\n", SHARED_THREADS,
           SHARED_SESSIONS, shared_turns, what);
}

/* ---- 2. owned sessions, forced eviction, against a serial run -------------- */

enum { OWN_THREADS = 16, OWN_SESSIONS = 64 };
static th_host owned;

/* The deterministic turns of session s. */
static void session_turn(th_host *h, int s, int t)
{
    char sid[32], prompt[256], reply[128], args[128];
    snprintf(sid, sizeof sid, "own%02d", s);
    snprintf(prompt, sizeof prompt, "Turn %d: look at ClaraCore, src/mod%d/file%d.ts and FocusEngine%d",
             t, s % 7, t % 5, t % 3);
    snprintf(reply, sizeof reply, "Done with src/mod%d/file%d.ts and claracore", s % 7, (t + 1) % 5);
    snprintf(args, sizeof args, "{\"file_path\":\"src/mod%d/file%d.ts\"}", s % 7, t % 4);
    CHECK(th_before(h, sid, NULL, prompt, strlen(prompt), NULL) == 0, "before %s", sid);
    CHECK(th_end(h, sid, reply, "Read", args) == 0, "end %s", sid);
}

static void *owned_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    /* the thread's sessions, interleaved turn by turn */
    for (int t = 0; t < turns_per_session; t++)
        for (int s = id; s < OWN_SESSIONS; s += OWN_THREADS) session_turn(&owned, s, t);
    return NULL;
}

static char *scores_of(th_host *h, int s)
{
    char params[64];
    snprintf(params, sizeof params, "{\"session\":\"own%02d\"}", s);
    json_t *j = NULL;
    if (th_rpc(h, "clarity.getScores", params, &j) != 0) return NULL;
    char *out = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    return out;
}

static void owned_sessions(const char *dir)
{
    char cfg[600];
    snprintf(cfg, sizeof cfg,
             "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s/par.db\",\"maxResidentSessions\":8,"
             "\"snapshotEvery\":4}}",
             dir);
    char *err = NULL;
    if (th_open(&owned, cfg, 0, &err) != 0) {
        CHECK(0, "open: %s", err ? err : "");
        return;
    }
    pthread_t th[OWN_THREADS];
    for (int i = 0; i < OWN_THREADS; i++) pthread_create(&th[i], NULL, owned_worker, (void *)(intptr_t)i);
    for (int i = 0; i < OWN_THREADS; i++) pthread_join(th[i], NULL);
    th_host serial;
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s/ser.db\"}}", dir);
    if (th_open(&serial, cfg, 0, &err) != 0) {
        CHECK(0, "open serial: %s", err ? err : "");
        th_close(&owned);
        return;
    }
    for (int s = 0; s < OWN_SESSIONS; s++)
        for (int t = 0; t < turns_per_session; t++) session_turn(&serial, s, t);
    int same = 0;
    for (int s = 0; s < OWN_SESSIONS; s++) {
        char *a = scores_of(&owned, s), *b = scores_of(&serial, s);
        CHECK(a && b && strcmp(a, b) == 0, "own%02d differs from the serial run:\n  %s\n  %s", s,
              a ? a : "(none)", b ? b : "(none)");
        same += a && b && strcmp(a, b) == 0;
        free(a);
        free(b);
    }
    th_close(&serial);
    th_close(&owned);
    printf("stress: %d threads x %d sessions x %d turns, 8 resident: %d/%d sessions equal to a "
           "serial run\n",
           OWN_THREADS, OWN_SESSIONS, turns_per_session, same, OWN_SESSIONS);
}

/* ---- 3. code graphs loaded behind the prompts -------------------------------- */

enum { GRAPH_THREADS = 4 };
static th_host graphs;
static char graph_repo[128];
static int graph_rounds = 40;
static const char graph_prompt[] = "login fails in the session store";

static void *graph_prompter(void *arg)
{
    char sid[32];
    snprintf(sid, sizeof sid, "g%d", (int)(intptr_t)arg);
    for (int i = 0; i < graph_rounds; i++) {
        char *block = NULL;
        CHECK(th_before(&graphs, sid, graph_repo, graph_prompt, strlen(graph_prompt), &block) == 0,
              "before %s", sid);
        free(block);
        usleep(2000);
    }
    return NULL;
}

static void *graph_builder(void *arg)
{
    (void)arg;
    char build[300], predict[400];
    snprintf(build, sizeof build, "{\"repo\":\"%s\"}", graph_repo);
    snprintf(predict, sizeof predict, "{\"repo\":\"%s\",\"prompt\":\"session login\"}", graph_repo);
    for (int i = 0; i < 3; i++) {
        CHECK(th_rpc(&graphs, "clarity.graphBuild", build, NULL) == 0, "graphBuild");
        CHECK(th_rpc(&graphs, "clarity.predict", predict, NULL) == 0, "predict");
        usleep(20000);
    }
    return NULL;
}

static void graph_loads(const char *dir)
{
    snprintf(graph_repo, sizeof graph_repo, "%s/repo", dir);
    char sh[1200];
    snprintf(sh, sizeof sh,
             "mkdir -p '%s/src' && cd '%s' && git init -q . && "
             "printf 'class SessionStore:\\n    def login(self):\\n        pass\\n' > src/session.py && "
             "printf 'def connect():\\n    pass\\n' > src/pool.py && git add -A && "
             "git -c user.name=t -c user.email=t@t commit -q -m init",
             graph_repo, graph_repo);
    if (system(sh) != 0) {
        CHECK(0, "could not make the repository");
        return;
    }
    char *err = NULL;
    if (th_open(&graphs, "{\"storage\":{\"backend\":\"memory\"},"
                         "\"prediction\":{\"autoRefresh\":true,\"loadWaitMs\":0}}", 0, &err) != 0) {
        CHECK(0, "open: %s", err ? err : "");
        return;
    }
    char build[300];
    snprintf(build, sizeof build, "{\"repo\":\"%s\"}", graph_repo);
    CHECK(th_rpc(&graphs, "clarity.graphBuild", build, NULL) == 0, "first graphBuild");
    pthread_t th[GRAPH_THREADS + 1];
    for (int i = 0; i < GRAPH_THREADS; i++) pthread_create(&th[i], NULL, graph_prompter, (void *)(intptr_t)i);
    pthread_create(&th[GRAPH_THREADS], NULL, graph_builder, NULL);
    for (int i = 0; i <= GRAPH_THREADS; i++) pthread_join(th[i], NULL);
    int predicted = 0; /* the last build's graph, loaded behind the prompts */
    for (int i = 0; i < 1500 && !predicted; i++) {
        char *block = NULL;
        th_before(&graphs, "last", graph_repo, graph_prompt, strlen(graph_prompt), &block);
        predicted = block && strstr(block, "src/session.py") != NULL;
        free(block);
        if (!predicted) usleep(20000);
    }
    CHECK(predicted, "no predictions after the graph's rebuilds");
    th_close(&graphs);
    printf("stress: %d threads x %d prompts on a code graph loaded behind them, 3 rebuilds: %s\n",
           GRAPH_THREADS, graph_rounds, predicted ? "predicted" : "no predictions");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--quick") == 0) {
        turns_per_session = 4;
        shared_turns = 3;
        graph_rounds = 15;
    }
    char dir[] = "/tmp/clarity-tsan-XXXXXX";
    if (!mkdtemp(dir)) return 2;
    char cfg[600];
    snprintf(cfg, sizeof cfg,
             "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s/shared.db\",\"maxResidentSessions\":4,"
             "\"snapshotEvery\":4}}",
             dir);
    shared_sessions(cfg, 0, "sqlite");
    shared_sessions("{\"storage\":{\"maxResidentSessions\":4,\"snapshotEvery\":4}}", 1, "the host kv");
    owned_sessions(dir);
    graph_loads(dir);
    char rm[700];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    if (system(rm) != 0) fprintf(stderr, "stress: could not remove %s\n", dir);
    if (failures) fprintf(stderr, "stress: %d check(s) failed\n", failures);
    else printf("stress: every check held\n");
    return failures ? 1 : 0;
}
