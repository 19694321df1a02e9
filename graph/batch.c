/* batch.c: parses the files a build re-reads, on several threads, and
 * counts the words of their content field (the `words` table, db.c).
 * Parsing is most of a build; the build writes the results in order. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

typedef struct word_acc {
    buf arena;     /* the words, NUL-terminated, one after another */
    uint32_t *off; /* their offsets in arena */
    size_t n, cap;
    int oom;
} word_acc;

static int on_word(void *ud, const char *s, size_t n)
{
    word_acc *a = ud;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 4096;
        uint32_t *o = realloc(a->off, cap * sizeof *o);
        if (!o) {
            a->oom = 1;
            return 1;
        }
        a->off = o;
        a->cap = cap;
    }
    if (a->arena.len > UINT32_MAX - n - 1) {
        a->oom = 1;
        return 1;
    }
    a->off[a->n++] = (uint32_t)a->arena.len;
    buf_append(&a->arena, s, n);
    buf_putc(&a->arena, '\0');
    return 0;
}

/* qsort has no context argument: the arena of the calling thread */
static __thread const char *tl_base;

static int cmp_word(const void *x, const void *y)
{
    return strcmp(tl_base + *(const uint32_t *)x, tl_base + *(const uint32_t *)y);
}

/* The words of src through the query tokenizer, counted: distinct words in
 * byte order, each NUL-terminated and followed by its count (LEB128), into
 * out; *total = the words with repeats.  Returns 0, -1 out of memory. */
static int content_words(const char *src, size_t len, buf *out, uint32_t *total)
{
    word_acc a = {{0}, NULL, 0, 0, 0};
    buf_init(&a.arena);
    *total = 0;
    graph_tokenize(src, len < GRAPH_CONTENT_BYTES ? len : GRAPH_CONTENT_BYTES, 0, on_word, &a);
    int rc = a.oom || buf_failed(&a.arena) ? -1 : 0;
    if (rc == 0 && a.n > 1) {
        tl_base = a.arena.p;
        qsort(a.off, a.n, sizeof *a.off, cmp_word);
    }
    for (size_t i = 0; rc == 0 && i < a.n;) {
        const char *w = a.arena.p + a.off[i];
        size_t j = i + 1;
        while (j < a.n && strcmp(a.arena.p + a.off[j], w) == 0) j++;
        buf_append(out, w, strlen(w) + 1);
        uint64_t c = j - i;
        do {
            unsigned char b = (unsigned char)(c & 0x7f);
            c >>= 7;
            buf_putc(out, (char)(c ? b | 0x80 : b));
        } while (c);
        *total += (uint32_t)(j - i);
        i = j;
    }
    if (buf_failed(out)) rc = -1;
    buf_free(&a.arena);
    free(a.off);
    return rc;
}

/* ---- parsing in parallel ---- */

#define PARSE_THREADS_MAX 8


typedef struct parse_pool {
    parse_job *jobs;
    size_t *order; /* jobs by size, largest first (NULL: in order) */
    size_t n;
    size_t next; /* atomic */
    int parser;
    int failed;  /* atomic: a parser context could not be made */
} parse_pool;

static void *parse_worker(void *arg)
{
    parse_pool *pp = arg;
    graph_parser_ctx *pc = graph_parser_new(pp->parser);
    if (!pc) {
        __atomic_store_n(&pp->failed, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    for (;;) {
        size_t j = __atomic_fetch_add(&pp->next, 1, __ATOMIC_RELAXED);
        if (j >= pp->n) break;
        parse_job *jb = &pp->jobs[pp->order ? pp->order[j] : j];
        jb->rc = jb->src ? graph_parse_file(pc, &jb->f, jb->src, jb->len) : 0;
        const char *w = jb->src ? jb->src : jb->head;
        if (jb->rc == 0 && w &&
            content_words(w, jb->src ? jb->len : jb->head_len, &jb->words, &jb->n_words) != 0)
            jb->rc = -1;
    }
    graph_parser_free(pc);
    return NULL;
}

typedef struct job_size {
    size_t len, idx;
} job_size;

static int cmp_job_size(const void *a, const void *b)
{
    const job_size *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->idx < y->idx ? -1 : 1;
}

/* Parses the jobs with up to one thread per online CPU (PARSE_THREADS_MAX
 * at most), a thread for about every 8 files or 32 KB, whichever gives
 * more (a refresh of a few large files parses them side by side); the
 * calling thread works too; the largest files go first.  Returns 0, or -1
 * when a parse ran out of memory. */
int graph_parse_batch(int parser, parse_job *jobs, size_t n)
{
    if (n == 0) return 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = cpus > 0 ? (size_t)cpus : 1, bytes = 0;
    for (size_t j = 0; j < n; j++) bytes += jobs[j].len;
    size_t want = (n + 7) / 8, by_size = bytes / (32 * 1024) + 1;
    if (by_size > n) by_size = n;
    if (want < by_size) want = by_size;
    if (nt > PARSE_THREADS_MAX) nt = PARSE_THREADS_MAX;
    if (nt > want) nt = want;
    size_t *order = nt > 1 ? malloc(n * sizeof *order) : NULL;
    job_size *js = order ? malloc(n * sizeof *js) : NULL;
    if (js) {
        for (size_t j = 0; j < n; j++) js[j] = (job_size){jobs[j].len, j};
        qsort(js, n, sizeof *js, cmp_job_size);
        for (size_t j = 0; j < n; j++) order[j] = js[j].idx;
        free(js);
    } else {
        free(order); /* out of memory: in order */
        order = NULL;
    }
    parse_pool pp = {jobs, order, n, 0, parser, 0};
    pthread_t th[PARSE_THREADS_MAX];
    size_t started = 0;
    for (size_t t = 1; t < nt; t++)
        if (pthread_create(&th[started], NULL, parse_worker, &pp) == 0) started++;
    parse_worker(&pp);
    for (size_t t = 0; t < started; t++) pthread_join(th[t], NULL);
    free(order);
    if (pp.failed && pp.next < n) { /* no context could be made: nothing ran */
        for (size_t j = 0; j < n; j++) jobs[j].rc = -1;
    }
    for (size_t j = 0; j < n; j++)
        if (jobs[j].rc != 0) return -1;
    return 0;
}

