/* query.c: ranks a repository's files for a prompt.
 *
 *  lexical   BM25F (k1 1.2) over path segments (weight 2.0, b 0.3), symbol
 *            names (1.0, 0.4), import names (0.5, 0.5), callee names
 *            (0.3, 0.5) and the file's content words (see the defaults);
 *            global IDF over the weighted fields; query terms weighted by
 *            1 + log(qtf), times `code` when the prompt writes the term as
 *            code; optionally fused with a plain BM25 over the content.  A test file's score is lent to the files it imports
 *            (test -> source proxy).
 *  mention   the prompt names the file: a path (tracebacks) or a dotted
 *            module (a package's __init__.py / index.* / mod.rs counts less).
 *  graph     spreading activation from the best seeds over imports and
 *            importers, `hops` hops, each keeping `hop_decay`.
 *  cochange  activation from the seeds over co-change partners (decayed
 *            Jaccard), one hop.
 *  centrality  log import in-degree.
 *  churn     a prior: log of the file's time-decayed commit weight.
 * The priors (centrality, churn) only add to files with evidence.
 * Files under doc(s)/, example(s)/, bench(mark)(s)/ and release/ keep a
 * share (aux) of their score.
 * The fused score is the weighted sum; test files are never predicted;
 * ties break by path, so results are deterministic.  When the repository
 * has a learned fusion, model.c re-ranks the best GF_POOL files
 * (graph_predict).
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

static const double K1 = 1.2;
static const double FW[GI_FIELDS] = {2.0, 1.0, 0.5, 0.3, 0.1};
static const double FB[GI_FIELDS] = {0.3, 0.4, 0.5, 0.5, 0.75};
/* b of the separate content BM25 */
static const double CB = 0.75;

void graph_weights_default(graph_weights *w)
{
    w->lexical = 1.0;
    w->mention = 1.0;
    /* Propagation over imports and co-change partners: off by default; no
     * weight tried helped on both benchmarks (SWE-bench dev, hono history;
     * bench/graph/README.md). */
    w->graph = 0;
    w->cochange = 0;
    w->centrality = 0.05;
    w->seed_count = 20;
    w->hop_decay = 0.5;
    w->hops = 3;
    w->use_calls = 1;
    for (int f = 0; f < GI_FIELDS; f++) {
        w->field_w[f] = FW[f];
        w->field_b[f] = FB[f];
    }
    w->content_bm25 = 0;
    w->test_proxy = 0.5;
    w->churn = 0.2;
    w->mention_package = 0.2;
    w->aux = 0.3;
    /* the learned fusion where it won on the repository's held-out
     * commits, and terms written as code counted twice: together Acc@5
     * 0.675 -> 0.734 on the SWE-bench dev set, hono hit@5 0.632 -> 0.607
     * (bench/graph/README.md, fifth round) */
    w->learned = 1;
    w->code = 2;
    w->clean = 1;
}

typedef struct qctx {
    graph_index *g;
    int oom;
    int code; /* the word being tokenized is code-shaped */
} qctx;

static int on_qtok(void *ud, const char *s, size_t n)
{
    qctx *c = ud;
    graph_index *g = c->g;
    int32_t id = gi_term_id(g, s, n);
    if (id < 0) return 0;
    if (g->n_qterms == g->cap_qterms) {
        size_t cap = g->cap_qterms ? g->cap_qterms * 2 : 256;
        int32_t *q = realloc(g->qterms, cap * sizeof *q);
        if (!q) {
            c->oom = 1;
            return 1;
        }
        g->qterms = q;
        g->cap_qterms = cap;
    }
    g->qterms[g->n_qterms++] = (int32_t)((uint32_t)id << 1 | (uint32_t)c->code);
    return 0;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

static int is_word(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* A word that reads as code: snake_case, camelCase, a call "name(", part
 * of a dotted name, or inside `backticks`. */
static int code_shaped(const char *s, size_t len, size_t a, size_t b, int tick)
{
    if (tick || (b < len && s[b] == '(')) return 1;
    if ((a > 0 && s[a - 1] == '.' && a > 1 && is_word(s[a - 2])) ||
        (b + 1 < len && s[b] == '.' && isalpha((unsigned char)s[b + 1])))
        return 1;
    for (size_t i = a; i < b; i++) {
        if (s[i] == '_' && i > a && i + 1 < b) return 1;
        if (i > a && islower((unsigned char)s[i - 1]) && isupper((unsigned char)s[i])) return 1;
    }
    return 0;
}

/* The next word (letters, digits, '_') of s from *pos on: s[*a, *pos) when
 * it returns 1; *tick flips at each backtick passed.  0 at the end. */
static int next_word(const char *s, size_t len, size_t *pos, size_t *a, int *tick)
{
    size_t i = *pos;
    while (i < len && !is_word(s[i])) *tick ^= s[i++] == '`';
    *a = i;
    while (i < len && is_word(s[i])) i++;
    *pos = i;
    return i > *a;
}

/* The first definition named s[0..n) in g->defs, or g->n_defs. */
static size_t first_def(const graph_index *g, const char *s, size_t n)
{
    size_t lo = 0, hi = g->n_defs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *d = g->defs[mid].name;
        int c = strncmp(d, s, n);
        if (c == 0 && d[n] != '\0') c = 1; /* d is longer: after s */
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* g->defines: for each distinct name of 3+ characters the prompt writes as
 * code, each file defining it gets 1 / (files defining it); at most 1. */
static void defines(graph_index *g, const char *s, size_t len)
{
    memset(g->defines, 0, g->n * sizeof *g->defines);
    size_t seen[64], nseen = 0; /* first_def of the names counted */
    int tick = 0;
    for (size_t i = 0, a; next_word(s, len, &i, &a, &tick);) {
        if (i - a < 3 || !code_shaped(s, len, a, i, tick)) continue;
        size_t f = first_def(g, s + a, i - a), e = f;
        while (e < g->n_defs && strncmp(g->defs[e].name, s + a, i - a) == 0 &&
               g->defs[e].name[i - a] == '\0')
            e++;
        if (e == f) continue;
        int dup = 0;
        for (size_t k = 0; k < nseen && !dup; k++) dup = seen[k] == f;
        if (dup) continue;
        if (nseen < sizeof seen / sizeof *seen) seen[nseen++] = f;
        size_t files = 0; /* distinct files (sorted by file within a name) */
        for (size_t k = f; k < e; k++) files += k == f || g->defs[k].file != g->defs[k - 1].file;
        for (size_t k = f; k < e; k++)
            if (k == f || g->defs[k].file != g->defs[k - 1].file)
                g->defines[g->defs[k].file] =
                    fmin(1.0, g->defines[g->defs[k].file] + 1.0 / (double)files);
    }
}

/* The prompt's terms: g->qterms (distinct term ids, sorted) and g->qwt,
 * each term's weight 1 + log(occurrences), times w->code when one of its
 * occurrences is code-shaped. */
static void query_terms(graph_index *g, const graph_weights *w, const char *s, size_t len)
{
    g->n_qterms = 0;
    qctx qc = {g, 0, 0};
    int tick = 0;
    for (size_t i = 0, a; !qc.oom && next_word(s, len, &i, &a, &tick);) {
        qc.code = w->code != 1.0 && code_shaped(s, len, a, i, tick);
        graph_tokenize(s + a, i - a, 0, on_qtok, &qc);
    }
    if (g->n_qterms > 1) qsort(g->qterms, g->n_qterms, sizeof *g->qterms, cmp_i32);
    if (g->cap_qwt < g->cap_qterms) {
        double *q = realloc(g->qwt, g->cap_qterms * sizeof *q);
        if (!q) {
            g->n_qterms = 0;
            return;
        }
        g->qwt = q;
        g->cap_qwt = g->cap_qterms;
    }
    size_t u = 0;
    for (size_t i = 0; i < g->n_qterms;) {
        int32_t t = (int32_t)((uint32_t)g->qterms[i] >> 1);
        size_t j = i;
        int code = 0;
        while (j < g->n_qterms && (int32_t)((uint32_t)g->qterms[j] >> 1) == t)
            code |= g->qterms[j++] & 1;
        g->qwt[u] = (1.0 + log((double)(j - i))) * (code ? w->code : 1.0);
        g->qterms[u++] = t;
        i = j;
    }
    g->n_qterms = u;
}

/* BM25F into g->lex over the fields of non-zero weight (a term's document
 * frequency counts the files that hold it in one of those fields), and,
 * when w->content_bm25 > 0, plain BM25 over the content field alone into
 * g->clex. */
static void bm25f(graph_index *g, const graph_weights *w, int feats)
{
    static const int solo[3] = {GI_PATH, GI_SYMBOL, GI_CONTENT};
    double N = (double)g->n;
    double fw[GI_FIELDS];
    for (int f = 0; f < GI_FIELDS; f++) fw[f] = w->field_w[f] > 0 ? w->field_w[f] : 0;
    if (!w->use_calls) fw[GI_CALL] = 0;
    for (size_t i = 0; i < g->n_qterms; i++) {
        int32_t t = g->qterms[i];
        double qw = g->qwt[i];
        uint32_t a = g->post_off[t], b = g->post_off[t + 1];
        double df = 0, dfc = 0;
        for (uint32_t k = a; k < b; k++) {
            const gi_posting *p = &g->post[k];
            for (int f = 0; f < GI_FIELDS; f++)
                if (fw[f] > 0 && p->tf[f]) {
                    df++;
                    break;
                }
            dfc += p->tf[GI_CONTENT] != 0;
        }
        if (df > 0) {
            double idf = log(1.0 + (N - df + 0.5) / (df + 0.5));
            for (uint32_t k = a; k < b; k++) {
                const gi_posting *p = &g->post[k];
                double tf = 0;
                for (int f = 0; f < GI_FIELDS; f++) {
                    if (!p->tf[f] || fw[f] == 0) continue;
                    double bf = w->field_b[f];
                    double norm = 1.0 - bf + bf * g->flen[f][p->doc] / g->avglen[f];
                    tf += fw[f] * p->tf[f] / norm;
                }
                if (tf > 0) g->lex[p->doc] += qw * idf * tf / (K1 + tf);
                for (int s = 0; feats && s < 3; s++) { /* each field alone */
                    int f = solo[s];
                    if (!p->tf[f]) continue;
                    double bf = w->field_b[f];
                    double t1 = p->tf[f] / (1.0 - bf + bf * g->flen[f][p->doc] / g->avglen[f]);
                    g->fld[s][p->doc] += qw * idf * t1 / (K1 + t1);
                }
            }
        }
        if (w->content_bm25 > 0 && dfc > 0) {
            double idf = log(1.0 + (N - dfc + 0.5) / (dfc + 0.5));
            for (uint32_t k = a; k < b; k++) {
                const gi_posting *p = &g->post[k];
                double tf = p->tf[GI_CONTENT];
                if (tf == 0) continue;
                double norm = 1.0 - CB + CB * g->flen[GI_CONTENT][p->doc] / g->avglen[GI_CONTENT];
                g->clex[p->doc] += qw * idf * tf * (K1 + 1) / (tf + K1 * norm);
            }
        }
    }
}

/* A package's own file (__init__.py, index.js/ts, mod.rs): naming the
 * package says less about the file than naming a module does. */
int gi_is_package(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return strcmp(b, "__init__.py") == 0 || strncmp(b, "index.", 6) == 0 ||
           strcmp(b, "mod.rs") == 0;
}

/* Paths and dotted modules the prompt names. */
static void mentions(graph_index *g, const graph_weights *w, const char *s, size_t len)
{
    size_t i = 0;
    char tok[512];
    while (i < len) {
        while (i < len && !(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '/' || s[i] == '.'))
            i++;
        size_t a = i;
        int slash = 0, dot = 0;
        while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '/' || s[i] == '.' ||
                           s[i] == '-')) {
            slash |= s[i] == '/';
            dot |= s[i] == '.';
            i++;
        }
        size_t b = i;
        while (b > a && (s[b - 1] == '.' || s[b - 1] == '/')) b--;
        if (b - a < 4 || b - a >= sizeof tok || !(slash || dot)) continue;
        /* the resolver, made for the first prompt that names a path or a
         * module (a process per prompt mostly has none to resolve; 8 M
         * instructions for sympy); out of memory, the prompt names none */
        if (!g->res && !(g->res = graph_resolver_new(g->paths, g->n))) return;
        memcpy(tok, s + a, b - a);
        tok[b - a] = '\0';
        int32_t f = -1;
        if (graph_lang_of_path(tok) != LANG_NONE) {
            for (char *p = tok; p && *p && f < 0; p = strchr(p, '/'), p = p ? p + 1 : NULL) {
                f = graph_resolver_suffix(g->res, p);
                if (f == -2) break;
            }
        } else if (dot && !slash) {
            f = graph_resolve(g->res, "", LANG_PYTHON, tok);
        }
        if (f >= 0) {
            double m = gi_is_package(g->paths[f]) ? w->mention_package : 1.0;
            g->mention[f] = fmax(g->mention[f], m);
        }
    }
}

/* Top k of score[] among the candidates (non-test unless tests), into out. */
static size_t top_k(const graph_index *g, const double *score, int tests, graph_hit *out, size_t k)
{
    if (k == 0) return 0;
    size_t n = 0;
    for (uint32_t d = 0; d < g->n; d++) {
        if (score[d] <= 0 || (!tests && g->is_test[d])) continue;
        if (n == k && !(score[d] > out[n - 1].score ||
                        (score[d] == out[n - 1].score && d < out[n - 1].file)))
            continue;
        size_t pos = n < k ? n++ : k - 1;
        while (pos > 0 && (score[d] > out[pos - 1].score ||
                           (score[d] == out[pos - 1].score && d < out[pos - 1].file))) {
            out[pos] = out[pos - 1];
            pos--;
        }
        out[pos] = (graph_hit){d, score[d]};
    }
    return n;
}

void graph_lexical(graph_index *g, const graph_weights *w, const char *prompt, size_t len,
                   double *out)
{
    memset(g->lex, 0, g->n * sizeof *g->lex);
    memset(g->clex, 0, g->n * sizeof *g->clex);
    query_terms(g, w, prompt, len);
    bm25f(g, w, 0);
    memcpy(out, g->lex, g->n * sizeof *out);
}

size_t gi_top(const graph_index *g, const double *score, graph_hit *out, size_t k)
{
    return top_k(g, score, 0, out, k);
}

static int excluded(const gi_excl *ex, uint32_t d)
{
    for (size_t i = 0; ex && i < ex->n; i++)
        if (ex->files[i] == d) return 1;
    return 0;
}

/* Co-change Jaccard of s and d without the training commit's own weight. */
static double jaccard_without(const graph_index *g, uint32_t s, uint32_t d, double j,
                              const gi_excl *ex)
{
    if (!excluded(ex, s) || !excluded(ex, d)) return j;
    double ts = g->co_total[s], td = g->co_total[d];
    double wab = j * (ts + td) / (1.0 + j) - ex->w;
    double den = (ts - ex->w) + (td - ex->w) - wab;
    return wab > 0 && den > 0 ? wab / den : 0;
}

/* Zeroes the per-query arrays. */
static void reset_scratch(graph_index *g, int feats)
{
    size_t n = g->n;
    double *arr[] = {g->lex, g->mention, g->act, g->cosc, g->tmp, g->clex};
    for (size_t i = 0; i < sizeof arr / sizeof *arr; i++) memset(arr[i], 0, n * sizeof(double));
    for (int s = 0; feats && s < 3; s++) memset(g->fld[s], 0, n * sizeof *g->fld[s]);
}

/* The prompt as read: HTML comments and environment dumps blanked (into
 * g->ptext) when w->clean; else as given. */
static const char *prompt_as_read(graph_index *g, const graph_weights *w, const char *prompt,
                                  size_t *len)
{
    if (w->clean <= 0 || !*len) return prompt;
    if (g->cap_ptext < *len) {
        char *p = realloc(g->ptext, *len);
        if (!p) return prompt;
        g->ptext = p;
        g->cap_ptext = *len;
    }
    *len = graph_prompt_clean(prompt, *len, g->ptext);
    return g->ptext;
}

/* Lexical evidence into g->lex (scaled to max 1 over non-test files, the
 * test -> source proxy applied) and the base score into g->final. */
static void lexical_stage(graph_index *g, const graph_weights *w)
{
    size_t n = g->n;
    if (w->content_bm25 > 0) { /* fuse the separate content BM25, each scaled to max 1 */
        double ml = 0, mc = 0;
        for (uint32_t d = 0; d < n; d++) {
            ml = fmax(ml, g->lex[d]);
            mc = fmax(mc, g->clex[d]);
        }
        for (uint32_t d = 0; d < n; d++)
            g->lex[d] = (ml > 0 ? g->lex[d] / ml : 0) +
                        (mc > 0 ? w->content_bm25 * g->clex[d] / mc : 0);
    }
    /* test -> source proxy: a test lends a share of its score to what it imports */
    for (uint32_t d = 0; w->test_proxy > 0 && d < n; d++) {
        if (!g->is_test[d] || g->lex[d] <= 0) continue;
        for (uint32_t e = g->out_off[d]; e < g->out_off[d + 1]; e++) {
            uint32_t t = g->out[e];
            if (!g->is_test[t]) g->tmp[t] = fmax(g->tmp[t], w->test_proxy * g->lex[d]);
        }
    }
    double mx = 0;
    for (uint32_t d = 0; d < n; d++) {
        if (g->is_test[d]) continue;
        g->lex[d] = fmax(g->lex[d], g->tmp[d]);
        if (g->lex[d] > mx) mx = g->lex[d];
    }
    for (uint32_t d = 0; d < n; d++) {
        double lx = mx > 0 && !g->is_test[d] ? g->lex[d] / mx : 0;
        g->lex[d] = lx;
        g->final[d] = w->lexical * lx + w->mention * g->mention[d];
    }
}

/* Spreading activation from the seeds (scores relative to top) over
 * imports and importers, w->hops hops, into g->act. */
static void propagate(graph_index *g, const graph_weights *w, const graph_hit *seeds, size_t ns,
                      double top)
{
    size_t n = g->n;
    memset(g->tmp, 0, n * sizeof *g->tmp);
    for (size_t s = 0; s < ns; s++) g->tmp[seeds[s].file] = seeds[s].score / top;
    double *cur = g->tmp, *acc = g->act;
    /* every file a hop reaches gets its activation; the first 512 of them
     * (in the order reached) spread it on */
    uint32_t frontier[512], nf = 0;
    for (size_t s = 0; s < ns; s++) frontier[nf++] = seeds[s].file;
    double *nxt = calloc(n, sizeof *nxt);
    uint32_t *reached = malloc((n ? n : 1) * sizeof *reached);
    for (int h = 0; nxt && reached && h < w->hops && nf; h++) {
        uint32_t nr = 0;
        for (uint32_t fi = 0; fi < nf; fi++) {
            uint32_t u = frontier[fi];
            double au = cur[u];
            if (au <= 1e-6) continue;
            for (int dir = 0; dir < 2; dir++) {
                const uint32_t *off = dir ? g->in_off : g->out_off;
                const uint32_t *adj = dir ? g->in : g->out;
                uint32_t a = off[u], b = off[u + 1];
                if (b == a) continue;
                double share = w->hop_decay * au / sqrt((double)(b - a));
                for (uint32_t e = a; e < b; e++) {
                    uint32_t v = adj[e];
                    if (nxt[v] == 0) reached[nr++] = v;
                    nxt[v] += share;
                }
            }
        }
        for (uint32_t fi = 0; fi < nf; fi++) cur[frontier[fi]] = 0;
        nf = nr < 512 ? nr : 512;
        for (uint32_t k = 0; k < nr; k++) {
            uint32_t v = reached[k];
            acc[v] += nxt[v];
            if (k < nf) {
                cur[v] = nxt[v];
                frontier[k] = v;
            }
            nxt[v] = 0;
        }
    }
    for (uint32_t fi = 0; fi < nf; fi++) g->tmp[frontier[fi]] = 0;
    free(nxt);
    free(reached);
}

/* Activation from the seeds over their co-change partners, into g->cosc. */
static void cochange_stage(graph_index *g, const graph_hit *seeds, size_t ns, double top,
                           const gi_excl *ex)
{
    for (size_t s = 0; s < ns; s++) {
        uint32_t f = seeds[s].file;
        const gi_partners *p = gi_cochange(g, f);
        double as = seeds[s].score / top;
        for (uint32_t e = 0; e < p->n; e++)
            g->cosc[p->ids[e]] += as * jaccard_without(g, f, p->ids[e], p->w[e], ex);
    }
}

/* The fused score: graph and co-change activation, the priors for files
 * with evidence, the aux factor. */
static void fuse(graph_index *g, const graph_weights *w)
{
    for (uint32_t d = 0; d < g->n; d++) {
        g->final[d] += w->graph * fmin(g->act[d], 1.0) + w->cochange * fmin(g->cosc[d], 1.0);
        if (g->final[d] > 0) g->final[d] += w->centrality * g->central[d] + w->churn * g->churn[d];
        if (g->aux[d]) g->final[d] *= w->aux;
    }
}

void gi_stages(graph_index *g, const graph_weights *w, const char *prompt, size_t len,
               const gi_excl *ex, int feats)
{
    reset_scratch(g, feats);
    prompt = prompt_as_read(g, w, prompt, &len);
    query_terms(g, w, prompt, len);
    if (feats) defines(g, prompt, len);
    bm25f(g, w, feats);
    mentions(g, w, prompt, len);
    lexical_stage(g, w);
    size_t ns = (size_t)w->seed_count;
    if (ns > 64) ns = 64;
    graph_hit seeds[64];
    ns = top_k(g, g->final, 0, seeds, ns);
    double top = ns ? seeds[0].score : 0;
    if ((w->graph > 0 || feats) && top > 0) propagate(g, w, seeds, ns, top);
    if ((w->cochange > 0 || feats) && top > 0) cochange_stage(g, seeds, ns, top, ex);
    fuse(g, w);
    for (int s = 0; feats && s < 3; s++) {
        g->fld_mx[s] = 0;
        for (uint32_t d = 0; d < g->n; d++)
            if (!g->is_test[d] && g->fld[s][d] > g->fld_mx[s]) g->fld_mx[s] = g->fld[s][d];
    }
}

/* Whether a symbol of s's name and line is among out[0, n): C's
 * "typedef struct x {...} x;" defines x twice on one line (the tag and
 * the type), which a list of names would show twice. */
static int listed(const gsym *const *out, size_t n, const gsym *s)
{
    for (size_t i = 0; i < n; i++)
        if (out[i]->line == s->line && strcmp(out[i]->name, s->name) == 0) return 1;
    return 0;
}

/* Key symbols: those whose name matches a query term first, then exported
 * classes and functions, in line order; each name and line once. */
size_t graph_file_symbols(const graph_index *g, uint32_t file, const gsym **out, size_t max)
{
    size_t n = 0;
    uint32_t a = g->sym_off[file], b = g->sym_off[file + 1];
    for (int pass = 0; pass < 2 && n < max; pass++) {
        for (uint32_t i = a; i < b && n < max; i++) {
            const gsym *s = &g->syms[i];
            int32_t id = g->sym_term[i];
            int match = id >= 0 && g->qterms &&
                        bsearch(&id, g->qterms, g->n_qterms, sizeof *g->qterms, cmp_i32) != NULL;
            int key = s->exported && (s->kind == SYM_CLASS || s->kind == SYM_FUNCTION ||
                                      s->kind == SYM_TYPE);
            int want = pass == 0 ? match : !match && key;
            if (!want || listed(out, n, s)) continue;
            out[n++] = s;
        }
    }
    return n;
}
