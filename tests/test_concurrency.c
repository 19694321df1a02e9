/* Many threads, many sessions: per-session serialization, no lost turns. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testhost.h"

#define THREADS 8
#define SESSIONS 16
#define TURNS 25

static th_host h;

typedef struct worker {
    int id;
    int failures;
} worker;

static void *run(void *arg)
{
    worker *w = arg;
    char sid[32], prompt[256];
    for (int t = 0; t < TURNS; t++) {
        for (int s = 0; s < SESSIONS; s++) {
            /* every thread drives every session: calls for one session race */
            snprintf(sid, sizeof sid, "s%02d", s);
            snprintf(prompt, sizeof prompt, "ClaraCore thread%d turn%d on src/t%d.ts", w->id, t, w->id);
            if (th_before(&h, sid, NULL, prompt, strlen(prompt), NULL) != 0) w->failures++;
            if (th_end(&h, sid, "ClaraCore done", "Read", "{\"file_path\":\"src/shared.ts\"}") != 0)
                w->failures++;
            if (t % 5 == 0 && th_rpc(&h, "clarity.getScores", "{\"session\":\"s00\"}", NULL) != 0)
                w->failures++;
        }
    }
    return NULL;
}

static void hammer(const char *cfg, int with_kv)
{
    cr_assert_eq(th_open(&h, cfg, with_kv, NULL), 0);
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){i, 0};
        pthread_create(&th[i], NULL, run, &w[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(w[i].failures, 0, "thread %d had %d failed calls", i, w[i].failures);
    }
    /* every agent_end advanced its session's turn exactly once */
    for (int s = 0; s < SESSIONS; s++) {
        char params[64];
        snprintf(params, sizeof params, "{\"session\":\"s%02d\"}", s);
        json_t *j = NULL;
        cr_assert_eq(th_rpc(&h, "clarity.getScores", params, &j), 0);
        cr_assert_eq(json_integer_value(json_object_get(j, "currentTurn")), THREADS * TURNS);
        json_t *ref = th_item(j, "file:src/shared.ts");
        cr_assert_not_null(ref);
        cr_assert_eq(json_integer_value(json_object_get(ref, "referenceCount")), THREADS * TURNS);
        json_decref(j);
    }
    th_close(&h);
}

Test(concurrency, threads_and_sessions_on_sqlite, .timeout = 240)
{
    char cfg[512];
    char *db = th_tmp_path(".db");
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"maxResidentSessions\":4}}", db);
    hammer(cfg, 0);
    th_unlink_db(db);
}

Test(concurrency, threads_and_sessions_on_host_kv, .timeout = 240)
{
    hammer("{\"storage\":{\"maxResidentSessions\":4}}", 1);
}
