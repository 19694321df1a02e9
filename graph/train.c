/* train.c: fits the learned, per-repository fusion of the ranking's features
 * (model.c uses it).
 *
 * The default ranking adds its features (BM25F, mentions, priors) with
 * fixed weights.  A repository's own history says how they should mix
 * there: its recent commits are prompts (the message) with known answers
 * (the files changed).  At build time the newest GF_LOG non-merge commits
 * that change 1..GF_MAX_FILES indexed source files are ranked by the
 * default fusion; the best GF_POOL files of each (the changed ones and the
 * hard negatives that outranked them) become rows of an L2-regularized
 * logistic regression (penalty 10), fitted by Newton's method (IRLS).  The history
 * features were counted with the commit itself, so its own weight is taken
 * back out of churn and co-change for its rows.
 *
 * Kept only where it helps: the model is first fitted on the older 3/4 of
 * the commits and compared with the default ranking on the newest 1/4
 * (MRR of the first changed file); if it does not beat it, or fewer than
 * GF_MIN commits are usable, queries keep the defaults.  Otherwise it is
 * refitted on all of them and stored in the cache (meta "fusion"), and
 * graph_predict re-ranks the default's best GF_POOL files by it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

/* (overridable at compile time, for the benchmarks' experiments) */
#ifndef GF_LOG
#define GF_LOG 600      /* newest commits looked at */
#endif
#ifndef GF_MAX_FILES
#define GF_MAX_FILES 8  /* a commit changing more files says little about a message */
#endif
#ifndef GF_MIN_FILES
#define GF_MIN_FILES 1  /* 2: multi-file commits only (measured: bench/graph/README.md) */
#endif
#define GF_MIN 40       /* usable commits needed to train */
#ifndef GF_MSG_MAX
#define GF_MSG_MAX 2048 /* bytes of a commit message used as the prompt */
#endif
#ifndef GF_SUBJECT_ONLY
#define GF_SUBJECT_ONLY 0 /* 1: the subject line alone */
#endif
/* L2 penalties tried (not on the bias); with several, the one best on the
 * held-out commits is kept.  10 alone: on the SWE-bench dev set 1 / 10 /
 * 30 / 100 gave Acc@5 0.757 / 0.775 / 0.757 / 0.746 and choosing among
 * {1, 10, 100} per repository 0.763, at three times the training time
 * (bench/graph/README.md). */
#ifdef GF_LAMBDA
static const double gf_lambdas[] = {GF_LAMBDA};
#else
static const double gf_lambdas[] = {10.0};
#endif

/* ---- logistic regression ---- */

/* Solves a x = b (n x n, row-major) in place by Gaussian elimination with
 * partial pivoting; -1 when singular. */
static int solve(double *a, double *b, int n)
{
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(a[r * n + c]) > fabs(a[p * n + c])) p = r;
        if (fabs(a[p * n + c]) < 1e-12) return -1;
        if (p != c) {
            for (int k = 0; k < n; k++) {
                double t = a[c * n + k];
                a[c * n + k] = a[p * n + k];
                a[p * n + k] = t;
            }
            double t = b[c];
            b[c] = b[p];
            b[p] = t;
        }
        for (int r = c + 1; r < n; r++) {
            double f = a[r * n + c] / a[c * n + c];
            for (int k = c; k < n; k++) a[r * n + k] -= f * a[c * n + k];
            b[r] -= f * b[c];
        }
    }
    for (int c = n - 1; c >= 0; c--) {
        for (int k = c + 1; k < n; k++) b[c] -= a[c * n + k] * b[k];
        b[c] /= a[c * n + c];
    }
    return 0;
}

int gf_fit(const double *X, const uint8_t *y, size_t rows, double lambda, double *beta)
{
    enum { F = GF_NFEAT };
    memset(beta, 0, F * sizeof *beta);
    double h[F * F], g[F];
    for (int it = 0; it < 50; it++) {
        memset(h, 0, sizeof h);
        memset(g, 0, sizeof g);
        for (size_t i = 0; i < rows; i++) {
            const double *x = X + i * F;
            double p = 1.0 / (1.0 + exp(-gf_logit(beta, x)));
            double r = (double)y[i] - p, wt = p * (1.0 - p);
            for (int a = 0; a < F; a++) {
                g[a] += r * x[a];
                if (x[a] == 0) continue;
                for (int b = a; b < F; b++) h[a * F + b] += wt * x[a] * x[b];
            }
        }
        for (int a = 0; a < F; a++) {
            for (int b = 0; b < a; b++) h[a * F + b] = h[b * F + a];
            double l = a ? lambda : 1e-6; /* the bias is not shrunk */
            h[a * F + a] += l;
            g[a] -= l * beta[a];
        }
        if (solve(h, g, F) != 0) return -1;
        double step = 0;
        for (int a = 0; a < F; a++) {
            beta[a] += g[a];
            step = fmax(step, fabs(g[a]));
        }
        if (step < 1e-9) break;
    }
    for (int a = 0; a < F; a++)
        if (!isfinite(beta[a])) return -1;
    return 0;
}

/* ---- training data from the history ---- */

typedef struct tcommit {
    double t, w;
    uint32_t files[GF_MAX_FILES];
    size_t nf;
    const char *msg;
    size_t len;
} tcommit;

typedef struct tset {
    tcommit *c;
    size_t n, cap;
} tset;

/* One record of `git log --format=%x01%ct%x02%B%x03 --name-only`. */
static void add_record(const graph_index *g, tset *ts, const char *r, const char *end)
{
    const char *m = memchr(r, '\x02', (size_t)(end - r));
    const char *me = m ? memchr(m, '\x03', (size_t)(end - m)) : NULL;
    if (!me) return;
    tcommit c = {.t = strtod(r + 1, NULL), .msg = m + 1, .len = (size_t)(me - m - 1)};
    const char *nl = memchr(c.msg, '\n', c.len);
    double noise = graph_commit_noise(c.msg, nl ? (size_t)(nl - c.msg) : c.len);
    if (noise < 1.0) return; /* formatting, merge, release: no task behind them */
    if (GF_SUBJECT_ONLY && nl) c.len = (size_t)(nl - c.msg);
    if (c.len > GF_MSG_MAX) c.len = GF_MSG_MAX;
    size_t total = 0;
    char path[4096];
    for (const char *l = me + 1; l < end;) {
        const char *e = memchr(l, '\n', (size_t)(end - l));
        if (!e) e = end;
        size_t pl = (size_t)(e - l);
        if (pl && pl < sizeof path) {
            total++;
            memcpy(path, l, pl);
            path[pl] = '\0';
            int32_t d = gi_find_path(g, path);
            if (d >= 0 && !g->is_test[d]) {
                if (c.nf == GF_MAX_FILES) return;
                c.files[c.nf++] = (uint32_t)d;
            }
        }
        l = e + 1;
    }
    if (c.nf < GF_MIN_FILES || c.nf == 0 || total > GRAPH_MAX_COMMIT_FILES) return;
    c.w = graph_commit_weight(c.t, noise);
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? ts->cap * 2 : 64;
        tcommit *nc = realloc(ts->c, cap * sizeof *nc);
        if (!nc) return;
        ts->c = nc;
        ts->cap = cap;
    }
    ts->c[ts->n++] = c;
}

/* Rows of one commit: the default's best GF_POOL files (in its order),
 * labelled by whether the commit changed them.  Returns the number of
 * rows, 0 when no changed file made the pool. */
static size_t commit_rows(graph_index *g, const graph_weights *w, const tcommit *c, double *X,
                          uint8_t *y)
{
    gi_excl ex = {c->files, c->nf, c->w};
    gi_stages(g, w, c->msg, c->len, &ex, 1);
    graph_hit pool[GF_POOL];
    size_t np = gi_top(g, g->final, pool, GF_POOL), pos = 0;
    for (size_t i = 0; i < np; i++) {
        gf_features(g, pool[i].file, &ex, X + i * GF_NFEAT);
        y[i] = 0;
        for (size_t j = 0; j < c->nf; j++) y[i] |= c->files[j] == pool[i].file;
        pos += y[i];
    }
    return pos ? np : 0;
}

/* Reciprocal rank of the first changed file when the rows are ordered by
 * beta (NULL: in their given, default order; ties by that order). */
static double rr(const double *X, const uint8_t *y, size_t n, const double *beta)
{
    double best = 0;
    for (size_t i = 0; i < n; i++) {
        if (!y[i]) continue;
        if (!beta) return 1.0 / (double)(i + 1);
        double zi = gf_logit(beta, X + i * GF_NFEAT);
        size_t rank = 1;
        for (size_t j = 0; j < n; j++) {
            double zj = gf_logit(beta, X + j * GF_NFEAT);
            rank += zj > zi || (zj == zi && j < i);
        }
        best = fmax(best, 1.0 / (double)rank);
    }
    return best;
}

static int cmp_time(const void *a, const void *b)
{
    const tcommit *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* The newest GF_LOG usable commits, oldest first (the newest quarter is
 * held out).  The log's text stays in *log: the commits point into it. */
static int read_commits(const char *repo, const graph_index *g, buf *log, tset *ts)
{
    char nlog[32];
    snprintf(nlog, sizeof nlog, "--max-count=%d", GF_LOG);
    const char *args[] = {"log", "--no-merges", "--no-renames", "--name-only",
                          "--format=%x01%ct%x02%B%x03", nlog, "HEAD", "--", NULL};
    if (graph_git(repo, args, log) != 0 || buf_failed(log)) return -1;
    for (const char *r = log->len ? memchr(log->p, '\x01', log->len) : NULL; r;) {
        const char *end = log->p + log->len;
        const char *next = memchr(r + 1, '\x01', (size_t)(end - r - 1));
        add_record(g, ts, r, next ? next : end);
        r = next;
    }
    if (ts->n > 1) qsort(ts->c, ts->n, sizeof *ts->c, cmp_time);
    return 0;
}

/* The training rows: commit i's rows are [off[i], off[i + 1]). */
typedef struct rowset {
    double *X;
    uint8_t *y;
    size_t *off;
    size_t rows, used; /* rows; commits with a changed file in their pool */
} rowset;

static int make_rows(graph_index *g, const tset *ts, rowset *rs)
{
    rs->X = malloc(ts->n * GF_POOL * GF_NFEAT * sizeof *rs->X + 1);
    rs->y = malloc(ts->n * GF_POOL + 1);
    rs->off = malloc((ts->n + 1) * sizeof *rs->off);
    if (!rs->X || !rs->y || !rs->off) return -1;
    graph_weights w;
    graph_weights_default(&w);
    w.learned = 0;
    for (size_t i = 0; i < ts->n; i++) {
        size_t r = commit_rows(g, &w, &ts->c[i], rs->X + rs->rows * GF_NFEAT, rs->y + rs->rows);
        if (!r) continue;
        rs->off[rs->used++] = rs->rows;
        rs->rows += r;
    }
    rs->off[rs->used] = rs->rows;
    return 0;
}

/* MRR over commits [from, to) ordered by beta (NULL: the default order);
 * *sq gets the sum of squared per-commit gains over the default. */
static double mrr(const rowset *rs, size_t from, size_t to, const double *beta, double *sq)
{
    double sum = 0;
    *sq = 0;
    for (size_t i = from; i < to; i++) {
        size_t a = rs->off[i], n = rs->off[i + 1] - a;
        double d = rr(rs->X + a * GF_NFEAT, rs->y + a, n, NULL);
        double l = beta ? rr(rs->X + a * GF_NFEAT, rs->y + a, n, beta) : d;
        sum += l;
        *sq += (l - d) * (l - d);
    }
    return to > from ? sum / (double)(to - from) : 0;
}

/* Fits on the older 3/4, compares with the defaults on the newest 1/4
 * (choosing the penalty there too; ties: the stronger one), and refits on
 * all when it wins. */
static void fit_and_validate(const rowset *rs, gi_fusion *out)
{
    size_t used = rs->used, cut = used - used / 4;
    double v = (double)(used - cut), sq;
    out->info.valid = (int)(used - cut);
    out->info.mrr_default = mrr(rs, cut, used, NULL, &sq);
    out->info.mrr_learned = 0;
    for (size_t li = 0; li < sizeof gf_lambdas / sizeof *gf_lambdas; li++) {
        double beta[GF_NFEAT];
        if (gf_fit(rs->X, rs->y, rs->off[cut], gf_lambdas[li], beta) != 0) continue;
        double ml = mrr(rs, cut, used, beta, &sq);
        if (ml < out->info.mrr_learned) continue;
        out->info.mrr_learned = ml;
        out->info.lambda = gf_lambdas[li];
        /* paired t statistic of the per-commit gain */
        double mean = ml - out->info.mrr_default;
        double var = v > 1 ? (sq - v * mean * mean) / (v - 1) : 0;
        out->info.t = var > 0 ? mean / sqrt(var / v) : 0;
    }
    out->info.enabled = out->info.mrr_learned > out->info.mrr_default &&
                        gf_fit(rs->X, rs->y, rs->rows, out->info.lambda, out->beta) == 0;
}

int graph_fusion_train(const char *repo, const char *db_path, sqlite3 *db, gi_fusion *out,
                       char **err)
{
    memset(out, 0, sizeof *out);
    graph_index *g = NULL;
    if (graph_index_load(repo, db_path, &g, err) != 0) return -1;
    buf log;
    buf_init(&log);
    tset ts = {0};
    rowset rs = {0};
    int rc = read_commits(repo, g, &log, &ts);
    if (rc == 0) rc = make_rows(g, &ts, &rs);
    out->info.commits = (int)rs.used;
    if (rc == 0 && rs.used >= GF_MIN) fit_and_validate(&rs, out);
    free(rs.X);
    free(rs.y);
    free(rs.off);
    free(ts.c);
    buf_free(&log);
    graph_index_free(g);
    if (rc != 0) {
        if (!*err) *err = util_strdup("could not read the history to train the fusion");
        return -1;
    }
    char val[64 + 26 * (5 + GF_NFEAT)];
    if (gf_format(out, val, sizeof val) != 0 || graph_db_set_meta(db, "fusion", val) != 0) {
        *err = util_strdup(sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}
