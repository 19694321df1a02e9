/* cochange.c: git co-change pairs.
 *
 * Reads `git log --name-only` (only the commits not read yet, unless the
 * history was rewritten) on a thread started before the build parses,
 * adding each commit up as its record arrives (the output is never held
 * whole: sympy's is 100 MB), and for each commit that touches between 1 and
 * GRAPH_MAX_COMMIT_FILES files adds, for its code files and for each pair
 * of them, one commit and a weight w = noise * 2^((t - T0) / halfLife).
 * Weights grow with time instead of decaying, so adding newer commits never
 * rewrites older ones; what a query uses are ratios (the decayed Jaccard
 * w_ab / (w_a + w_b - w_ab)), in which the reference time cancels.  noise is
 * 0.25 for formatting, lint, merge, release and version-bump commits.
 * Merge commits list no files and are skipped.  The whole pair table is
 * kept (between files that exist at the build).
 */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "internal.h"

#define T0 1.6e9

typedef struct pentry {
    const char *path;
    uint32_t idx;
    UT_hash_handle hh;
} pentry;

typedef struct pair_tab {
    uint64_t *key; /* (a+1) << 32 | (b+1), 0 = empty */
    uint32_t *n;
    double *w;
    size_t cap, count;
} pair_tab;

static int pair_add(pair_tab *t, uint32_t a, uint32_t b, double w)
{
    if ((t->count + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        pair_tab nt = {calloc(cap, sizeof(uint64_t)), calloc(cap, sizeof(uint32_t)),
                       calloc(cap, sizeof(double)), cap, t->count};
        if (!nt.key || !nt.n || !nt.w) {
            free(nt.key);
            free(nt.n);
            free(nt.w);
            return -1;
        }
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->key[i]) continue;
            size_t j = (t->key[i] * 0x9E3779B97F4A7C15ULL) >> 20 & (cap - 1);
            while (nt.key[j]) j = (j + 1) & (cap - 1);
            nt.key[j] = t->key[i];
            nt.n[j] = t->n[i];
            nt.w[j] = t->w[i];
        }
        free(t->key);
        free(t->n);
        free(t->w);
        *t = nt;
    }
    uint64_t k = ((uint64_t)(a + 1) << 32) | (uint64_t)(b + 1);
    size_t j = (k * 0x9E3779B97F4A7C15ULL) >> 20 & (t->cap - 1);
    while (t->key[j] && t->key[j] != k) j = (j + 1) & (t->cap - 1);
    if (!t->key[j]) {
        t->key[j] = k;
        t->count++;
    }
    t->n[j]++;
    t->w[j] += w;
    return 0;
}

double graph_commit_noise(const char *s, size_t n)
{
    char low[96];
    size_t l = n < sizeof low - 1 ? n : sizeof low - 1;
    for (size_t i = 0; i < l; i++) low[i] = (char)tolower((unsigned char)s[i]);
    low[l] = '\0';
    static const char *const words[] = {"format", "reformat", "style", "lint", "black", "isort",
                                        "prettier", "merge", "release", "bump", "version",
                                        "chore(release)", "chore(deps)", "typo", "whitespace"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        size_t wl = strlen(words[i]);
        if (strncmp(low, words[i], wl) == 0) return 0.25;
        /* conventional commits: "style: ...", "chore(release): ..." */
        const char *c = strstr(low, ": ");
        if (c && (size_t)(c - low) < 24 && strncmp(low, words[i], wl) == 0) return 0.25;
    }
    if (low[0] == 'v' && isdigit((unsigned char)low[1])) return 0.25; /* "v1.2.3" */
    return 1.0;
}

double graph_commit_weight(double t, double noise)
{
    return noise * exp2((t - T0) / GRAPH_HALF_LIFE_S);
}

struct graph_history {
    char *head;      /* NULL: no commits */
    int nothing_new; /* the cache has read up to head */
    int full;        /* the pair table is rebuilt from scratch */
    const char *repo;
    char maxarg[32], range[200];
    int git_rc;
    pthread_t th;
    int started;     /* th runs git log */
    /* what the commits add up to, per file (index in paths) and pair */
    char **paths;
    size_t n;
    pentry *map, *ents;
    uint32_t *fn;
    double *fw;
    pair_tab pt;
    size_t commits;
    int oom;
    buf carry; /* the unfinished record of the stream */
};

/* One record of git log's output: "\x01<hash> <time>\x02<subject>\n" and
 * the changed paths, one a line, up to the next record. */
static void add_commit(graph_history *h, const char *c, const char *next)
{
    uint32_t cur[GRAPH_MAX_COMMIT_FILES + 1];
    const char *sp = memchr(c + 1, ' ', (size_t)(next - c - 1));
    const char *subj = memchr(c + 1, '\x02', (size_t)(next - c - 1));
    if (!sp || !subj) return;
    double t = strtod(sp + 1, NULL);
    const char *nl = memchr(subj, '\n', (size_t)(next - subj));
    if (!nl) return;
    double noise = graph_commit_noise(subj + 1, (size_t)(nl - subj - 1));
    size_t total = 0, k = 0;
    for (const char *l = nl + 1; l < next;) {
        const char *e = memchr(l, '\n', (size_t)(next - l));
        if (!e) e = next;
        if (e > l) {
            total++;
            pentry *pe;
            HASH_FIND(hh, h->map, l, (size_t)(e - l), pe);
            if (pe && k <= GRAPH_MAX_COMMIT_FILES) cur[k++] = pe->idx;
        }
        l = e + 1;
    }
    if (total == 0 || total > GRAPH_MAX_COMMIT_FILES || k == 0) return;
    h->commits++;
    double w = graph_commit_weight(t, noise);
    for (size_t i = 0; i < k; i++) {
        h->fn[cur[i]]++;
        h->fw[cur[i]] += w;
    }
    for (size_t i = 0; i < k && !h->oom; i++)
        for (size_t j = 0; j < k && !h->oom; j++)
            if (cur[i] < cur[j] && pair_add(&h->pt, cur[i], cur[j], w) != 0) h->oom = 1;
}

/* Adds the complete records of p[0..n); the tail without its end yet
 * stays in h->carry (at_end: everything is complete). */
static void add_records(graph_history *h, const char *p, size_t n, int at_end)
{
    const char *end = p + n, *c = memchr(p, '\x01', n);
    while (c && !h->oom) {
        const char *next = memchr(c + 1, '\x01', (size_t)(end - c - 1));
        if (!next && !at_end) break;
        add_commit(h, c, next ? next : end);
        c = next;
    }
    if (at_end) return;
    buf rest;
    buf_init(&rest);
    if (c) buf_append(&rest, c, (size_t)(end - c));
    if (buf_failed(&rest)) h->oom = 1;
    buf_free(&h->carry);
    h->carry = rest;
}

/* git log's output as it comes: records are added as soon as they are
 * complete, so the history is never held whole in memory. */
static int on_chunk(void *ud, const char *p, size_t n)
{
    graph_history *h = ud;
    if (h->oom) return -1;
    if (h->carry.len) {
        buf_append(&h->carry, p, n);
        if (buf_failed(&h->carry)) {
            h->oom = 1;
            return -1;
        }
        buf whole = h->carry;
        buf_init(&h->carry);
        add_records(h, whole.p, whole.len, 0);
        buf_free(&whole);
    } else {
        add_records(h, p, n, 0);
    }
    return h->oom ? -1 : 0;
}

static void *history_reader(void *arg)
{
    graph_history *h = arg;
    const char *logargs[] = {"log", "--no-renames", "--name-only", "--format=%x01%H %ct%x02%s",
                             h->maxarg, h->range, "--", NULL};
    h->git_rc = graph_git_stream(h->repo, logargs, on_chunk, h);
    if (h->git_rc == 0 && !h->oom && h->carry.len) add_records(h, h->carry.p, h->carry.len, 1);
    return NULL;
}

graph_history *graph_history_start(const char *repo, sqlite3 *db, char **paths, size_t n,
                                   int max_commits, int full)
{
    graph_history *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    buf_init(&h->carry);
    h->repo = repo;
    h->full = full;
    h->paths = paths;
    h->n = n;
    const char *rev[] = {"rev-parse", "--verify", "-q", "HEAD", NULL};
    h->head = graph_git_line(repo, rev);
    if (!h->head) return h; /* no commits yet */
    char *prev = full ? NULL : graph_db_meta(db, "cochange_head");
    if (prev && strcmp(prev, h->head) == 0) { /* nothing new */
        free(prev);
        h->nothing_new = 1;
        return h;
    }
    if (prev) {
        const char *anc[] = {"merge-base", "--is-ancestor", prev, h->head, NULL};
        buf tmp;
        buf_init(&tmp);
        int rc = graph_git(repo, anc, &tmp);
        buf_free(&tmp);
        if (rc == 0) snprintf(h->range, sizeof h->range, "%s..%s", prev, h->head);
        else h->full = 1;
    } else {
        h->full = 1;
    }
    if (h->full) snprintf(h->range, sizeof h->range, "%s", h->head);
    free(prev);
    if (max_commits == 0) max_commits = GRAPH_DEFAULT_MAX_COMMITS;
    snprintf(h->maxarg, sizeof h->maxarg, "--max-count=%d",
             max_commits > 0 ? max_commits : 2000000000);
    h->ents = calloc(n ? n : 1, sizeof *h->ents);
    h->fn = calloc(n ? n : 1, sizeof *h->fn);
    h->fw = calloc(n ? n : 1, sizeof *h->fw);
    if (!h->ents || !h->fn || !h->fw) {
        graph_history_free(h);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        h->ents[i].path = paths[i];
        h->ents[i].idx = (uint32_t)i;
        HASH_ADD_KEYPTR(hh, h->map, h->ents[i].path, strlen(h->ents[i].path), &h->ents[i]);
    }
    /* git log runs and is added up beside the parsing; without a thread,
     * at graph_cochange_update */
    h->started = pthread_create(&h->th, NULL, history_reader, h) == 0;
    return h;
}

const char *graph_history_head(const graph_history *h)
{
    return h ? h->head : NULL;
}

void graph_history_free(graph_history *h)
{
    if (!h) return;
    if (h->started) pthread_join(h->th, NULL);
    buf_free(&h->carry);
    HASH_CLEAR(hh, h->map);
    free(h->ents);
    free(h->fn);
    free(h->fw);
    free(h->pt.key);
    free(h->pt.n);
    free(h->pt.w);
    free(h->head);
    free(h);
}

int graph_cochange_update(graph_history *h, sqlite3 *db, size_t *commits, size_t *pairs,
                          char **err)
{
    *commits = *pairs = 0;
    if (!h->head || h->nothing_new) return 0;
    if (h->started) {
        pthread_join(h->th, NULL);
        h->started = 0;
    } else {
        history_reader(h);
    }
    if (h->git_rc != 0 || h->oom) {
        *err = util_strdup(h->oom ? "out of memory" : "git log failed");
        return -1;
    }
    int full = h->full, rc = 0;
    const char *head = h->head;
    char **paths = h->paths;
    size_t n = h->n;
    uint32_t *fn = h->fn;
    double *fw = h->fw;
    pair_tab pt = h->pt;
    *commits = h->commits;

    if (rc == 0 && full)
        rc = sqlite3_exec(db, "DELETE FROM cochange; DELETE FROM commit_files;", NULL, NULL, NULL) ==
                     SQLITE_OK
                 ? 0
                 : -1;
    sqlite3_stmt *sf = NULL, *sp2 = NULL;
    if (rc == 0 &&
        (sqlite3_prepare_v2(db,
                            "INSERT INTO commit_files(path, n, w) VALUES(?, ?, ?) ON CONFLICT(path) "
                            "DO UPDATE SET n = n + excluded.n, w = w + excluded.w",
                            -1, &sf, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(db,
                            "INSERT INTO cochange(a, b, n, w) VALUES(?, ?, ?, ?) ON CONFLICT(a, b) "
                            "DO UPDATE SET n = n + excluded.n, w = w + excluded.w",
                            -1, &sp2, NULL) != SQLITE_OK))
        rc = -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!fn[i]) continue;
        sqlite3_bind_text(sf, 1, paths[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(sf, 2, fn[i]);
        sqlite3_bind_double(sf, 3, fw[i]);
        if (sqlite3_step(sf) != SQLITE_DONE) rc = -1;
        sqlite3_reset(sf);
    }
    for (size_t i = 0; i < pt.cap && rc == 0; i++) {
        if (!pt.key[i]) continue;
        uint32_t a = (uint32_t)(pt.key[i] >> 32) - 1, b = (uint32_t)(pt.key[i] & 0xffffffffu) - 1;
        const char *pa = paths[a], *pb = paths[b];
        if (strcmp(pa, pb) > 0) {
            const char *x = pa;
            pa = pb;
            pb = x;
        }
        sqlite3_bind_text(sp2, 1, pa, -1, SQLITE_STATIC);
        sqlite3_bind_text(sp2, 2, pb, -1, SQLITE_STATIC);
        sqlite3_bind_int64(sp2, 3, pt.n[i]);
        sqlite3_bind_double(sp2, 4, pt.w[i]);
        if (sqlite3_step(sp2) != SQLITE_DONE) rc = -1;
        sqlite3_reset(sp2);
    }
    *pairs = pt.count;
    sqlite3_finalize(sf);
    sqlite3_finalize(sp2);
    if (rc == 0) rc = graph_db_set_meta(db, "cochange_head", head);
    if (rc == 0) { /* commits read so far, for clarity.graphStatus */
        char *was = full ? NULL : graph_db_meta(db, "commits");
        char num[32];
        snprintf(num, sizeof num, "%lld", (was ? atoll(was) : 0) + (long long)*commits);
        free(was);
        rc = graph_db_set_meta(db, "commits", num);
    }
    if (rc != 0 && !*err) *err = util_strdup(sqlite3_errmsg(db));
    return rc;
}
