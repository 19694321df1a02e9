/* model.c: the learned fusion at query time (train.c fits it).
 *
 * A repository's stored model (meta "fusion", format GF_FORMAT: enabled,
 * commits, held out, MRR default/learned, then GF_NFEAT weights) re-ranks
 * the default ranking's best GF_POOL files by a logistic model over their
 * features: graph_predict is the default stages of query.c, then this.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

void gf_features(const graph_index *g, uint32_t d, const gi_excl *ex, double *x)
{
    x[0] = 1.0;
    x[1] = g->lex[d];
    x[2] = g->mention[d];
    for (int s = 0; s < 3; s++) x[3 + s] = g->fld_mx[s] > 0 ? g->fld[s][d] / g->fld_mx[s] : 0;
    x[6] = fmin(g->act[d], 1.0);
    x[7] = fmin(g->cosc[d], 1.0);
    x[8] = g->central[d];
    double ch = g->churn[d];
    for (size_t i = 0; ex && i < ex->n; i++)
        if (ex->files[i] == d && g->churn_mx > 0)
            ch = log1p(fmax(g->co_total[d] - ex->w, 0)) / g->churn_mx;
    x[9] = ch;
    x[10] = g->size_mx > 0 ? log1p(g->flen[GI_CONTENT][d]) / g->size_mx : 0;
    x[11] = g->aux[d];
    x[12] = gi_is_package(g->paths[d]);
    x[13] = g->defines[d];
}

double gf_logit(const double *beta, const double *x)
{
    double z = 0;
    for (int j = 0; j < GF_NFEAT; j++) z += beta[j] * x[j];
    return z;
}

void gf_parse(const char *s, gi_fusion *f)
{
    memset(f, 0, sizeof *f);
    if (!s || strncmp(s, GF_FORMAT " ", sizeof GF_FORMAT) != 0) return;
    const char *p = s + sizeof GF_FORMAT;
    char *e;
    double v[5 + GF_NFEAT];
    for (int i = 0; i < 5 + GF_NFEAT; i++) {
        v[i] = strtod(p, &e);
        if (e == p || !isfinite(v[i])) return; /* malformed: the defaults */
        p = e;
    }
    f->info.commits = (int)v[1];
    f->info.valid = (int)v[2];
    f->info.mrr_default = v[3];
    f->info.mrr_learned = v[4];
    memcpy(f->beta, v + 5, sizeof f->beta);
    f->info.enabled = v[0] == 1;
}

int gf_format(const gi_fusion *f, char *out, size_t n)
{
    int l = snprintf(out, n, GF_FORMAT " %d %d %d %.6f %.6f", f->info.enabled, f->info.commits,
                     f->info.valid, f->info.mrr_default, f->info.mrr_learned);
    for (int j = 0; j < GF_NFEAT && l > 0 && (size_t)l < n; j++)
        l += snprintf(out + l, n - (size_t)l, " %.17g", f->info.enabled ? f->beta[j] : 0.0);
    return l > 0 && (size_t)l < n ? 0 : -1;
}

/* The index's stored model, parsed on first use. */
static const gi_fusion *model_of(graph_index *g)
{
    if (!g->fus_parsed) {
        gf_parse(g->fus_meta, &g->fus);
        g->fus_parsed = 1;
    }
    return &g->fus;
}

static int cmp_hit(const void *a, const void *b)
{
    const graph_hit *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->file < y->file ? -1 : x->file > y->file;
}

size_t graph_predict(graph_index *g, const graph_weights *w, const char *prompt, size_t len,
                     graph_hit *out, size_t k)
{
    if (g->n == 0 || k == 0) return 0;
    const gi_fusion *fus = model_of(g);
    int learned = w->learned > 0 && fus->info.enabled;
    gi_stages(g, w, prompt, len, NULL, learned);
    if (!learned) return gi_top(g, g->final, out, k);
    /* the learned fusion re-ranks the default's best GF_POOL (or k) files */
    size_t m = k > GF_POOL ? k : GF_POOL;
    graph_hit *pool = malloc(m * sizeof *pool);
    if (!pool) return gi_top(g, g->final, out, k);
    size_t np = gi_top(g, g->final, pool, m);
    double x[GF_NFEAT];
    for (size_t i = 0; i < np; i++) {
        gf_features(g, pool[i].file, NULL, x);
        pool[i].score = 1.0 / (1.0 + exp(-gf_logit(fus->beta, x)));
    }
    qsort(pool, np, sizeof *pool, cmp_hit);
    if (np > k) np = k;
    memcpy(out, pool, np * sizeof *out);
    free(pool);
    return np;
}
