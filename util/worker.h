/* worker.h: one background thread that runs queued jobs in order.
 *
 * The engine folds sessions' turn logs on it (engine.c), off the hooks'
 * threads.  The thread starts with the first job; worker_free runs what is
 * queued, then joins it.  The queue's mutex is a leaf: a job runs without
 * it, so a job may take any lock, and a caller may push while holding one.
 */
#ifndef UTIL_WORKER_H
#define UTIL_WORKER_H

typedef struct worker worker;
typedef void (*worker_fn)(void *ud, void *arg);

/* A worker that runs fn(ud, arg) for each pushed arg.  NULL when out of
 * memory. */
worker *worker_new(worker_fn fn, void *ud);
/* Queues arg: 0, or -1 when the job cannot run (out of memory, the thread
 * cannot start, the worker is stopping): the caller does the work itself. */
int worker_push(worker *w, void *arg);
/* Runs what is queued, stops the thread and frees the worker. */
void worker_free(worker *w);

#endif
