/* worker.c: one background thread running queued jobs in order (worker.h). */
#include "worker.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct job {
    void *arg;
    struct job *next;
} job;

struct worker {
    worker_fn fn;
    void *ud;
    pthread_mutex_t mu;
    pthread_cond_t work; /* the thread waits on it for jobs */
    job *head, *tail;
    int started, stop;
    pthread_t th;
};

static void *run(void *p)
{
    worker *w = p;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->stop) pthread_cond_wait(&w->work, &w->mu);
        job *j = w->head;
        if (!j) break; /* stopping, and nothing left */
        w->head = j->next;
        if (!w->head) w->tail = NULL;
        pthread_mutex_unlock(&w->mu);
        w->fn(w->ud, j->arg);
        free(j);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

worker *worker_new(worker_fn fn, void *ud)
{
    worker *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->fn = fn;
    w->ud = ud;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->work, NULL);
    return w;
}

int worker_push(worker *w, void *arg)
{
    job *j = malloc(sizeof *j);
    if (!j) return -1;
    j->arg = arg;
    j->next = NULL;
    pthread_mutex_lock(&w->mu);
    if (!w->started && !w->stop) w->started = pthread_create(&w->th, NULL, run, w) == 0;
    int ok = w->started && !w->stop;
    if (ok) {
        if (w->tail) w->tail->next = j;
        else w->head = j;
        w->tail = j;
        pthread_cond_signal(&w->work);
    }
    pthread_mutex_unlock(&w->mu);
    if (!ok) free(j);
    return ok ? 0 : -1;
}

void worker_free(worker *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    int started = w->started;
    pthread_cond_broadcast(&w->work);
    pthread_mutex_unlock(&w->mu);
    if (started) pthread_join(w->th, NULL);
    pthread_cond_destroy(&w->work);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
