/* test_fusion.c: the learned fusion (graph/train.c, graph/model.c) and code-shaped query
 * terms (graph/query.c): the logistic regression against closed-form
 * optima, training on a synthetic repository's history (fallback on a
 * short one, retraining cadence, --no-learn), the re-ranking a stored
 * model makes, the training commit taken back out of the history
 * features, the weight of terms written as code, and what of a prompt is
 * read (template comments and environment dumps blanked). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/index.h"
#include "../graph/internal.h"
#include "gitrepo.h"
#include "graphdb.h"
#include "runproc.h"

static char *dir;

static void setup(void)
{
    dir = gitrepo_new("clarity-fusion-test");
    cr_assert_not_null(dir);
}

static void teardown(void)
{
    if (dir) runproc_rmtree(dir);
    free(dir);
    dir = NULL;
}

TestSuite(fusion, .init = setup, .fini = teardown, .timeout = 120);

static void put(const char *rel, const char *text)
{
    cr_assert_eq(gitrepo_write(dir, rel, text), 0);
}

static void commit_at(long when, const char *msg)
{
    cr_assert_eq(gitrepo_commit(dir, when, msg), 0, "commit %s", msg);
}

static graph_build_stats build(int no_learn)
{
    graph_build_opts o = {GRAPH_PARSER_AUTO, 0, 0, NULL, no_learn};
    graph_build_stats st;
    char *err = NULL;
    cr_assert_eq(graph_build(dir, &o, &st, &err), 0, "%s", err ? err : "");
    return st;
}

/* ---- the regression ---- */

/* With only the bias (no shrinkage on it) the optimum is the log-odds of
 * the base rate; a feature that separates gets a positive weight, which
 * the L2 penalty keeps finite: at the optimum the gradient is zero. */
Test(fusion, fit_meets_the_closed_form_optimum)
{
    enum { N = 40 };
    double X[N * GF_NFEAT];
    uint8_t y[N];
    memset(X, 0, sizeof X);
    for (int i = 0; i < N; i++) {
        X[i * GF_NFEAT] = 1.0;
        y[i] = i % 4 == 0; /* 10 of 40 */
    }
    double beta[GF_NFEAT];
    cr_assert_eq(gf_fit(X, y, N, 1.0, beta), 0);
    cr_assert_float_eq(beta[0], log(10.0 / 30.0), 1e-4);
    for (int j = 1; j < GF_NFEAT; j++) cr_assert_float_eq(beta[j], 0.0, 1e-12);

    for (int i = 0; i < N; i++) X[i * GF_NFEAT + 1] = y[i] ? 1.0 : 0.0; /* separable */
    cr_assert_eq(gf_fit(X, y, N, 1.0, beta), 0);
    cr_assert_gt(beta[1], 1.0);
    double g0 = 0, g1 = 0; /* the penalized gradient vanishes */
    for (int i = 0; i < N; i++) {
        double p = 1.0 / (1.0 + exp(-gf_logit(beta, X + i * GF_NFEAT)));
        g0 += y[i] - p;
        g1 += (y[i] - p) * X[i * GF_NFEAT + 1];
    }
    cr_assert_float_eq(g0 - 1e-6 * beta[0], 0.0, 1e-6);
    cr_assert_float_eq(g1 - 1.0 * beta[1], 0.0, 1e-6);
}

/* A stored model: the format tag, enabled, commits, held out, the two
 * MRRs, then nbeta weights (beta[j] = first + j), or "nan" at the end. */
static const char *model(const char *tag, int nbeta, double first, int nan_last)
{
    static char v[1024];
    int l = snprintf(v, sizeof v, "%s 1 50 12 0.5 0.6", tag);
    for (int j = 0; j < nbeta; j++)
        l += snprintf(v + l, sizeof v - (size_t)l, nan_last && j == nbeta - 1 ? " nan" : " %g",
                      first + j);
    return v;
}

Test(fusion, parse_rejects_malformed_values)
{
    gi_fusion f;
    gf_parse(model(GF_FORMAT, GF_NFEAT, 1, 0), &f);
    cr_assert(f.info.enabled);
    cr_assert_eq(f.info.commits, 50);
    cr_assert_eq(f.info.valid, 12);
    cr_assert_float_eq(f.beta[GF_NFEAT - 1], (double)GF_NFEAT, 1e-12);
    gf_parse(model(GF_FORMAT, GF_NFEAT + 3, 1, 0), &f); /* extra text after: ignored */
    cr_assert(f.info.enabled);
    /* too few weights, a NaN, another format (other features): not used */
    const char *bad[] = {NULL, "", GF_FORMAT " 1 50 12 0.5 0.6", GF_FORMAT " 1 50 12 0.5 0.6 1 2 3"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gf_parse(bad[i], &f);
        cr_assert_not(f.info.enabled, "%s", bad[i] ? bad[i] : "NULL");
    }
    gf_parse(model(GF_FORMAT, GF_NFEAT - 1, 1, 0), &f);
    cr_assert_not(f.info.enabled);
    gf_parse(model(GF_FORMAT, GF_NFEAT, 1, 1), &f);
    cr_assert_not(f.info.enabled);
    gf_parse(model("v1", GF_NFEAT, 1, 0), &f);
    cr_assert_not(f.info.enabled);
    gf_parse(model("v99", GF_NFEAT, 1, 0), &f);
    cr_assert_not(f.info.enabled);
}

/* ---- training on a repository's history ---- */

static const char *const topics[][2] = {
    {"parser.py", "parse token grammar"}, {"render.py", "render template html"},
    {"cache.py", "cache evict expire"},   {"auth.py", "login password session"},
    {"network.py", "socket retry timeout"},
};

static void history(int commits)
{
    for (int i = 0; i < 5; i++) {
        char body[256];
        snprintf(body, sizeof body, "# %s\ndef f%d():\n    return 0\n", topics[i][1], i);
        put(topics[i][0], body);
    }
    commit_at(1600000000, "initial import");
    for (int c = 0; c < commits; c++) {
        int t = c % 5;
        char body[512], msg[128];
        snprintf(body, sizeof body, "# %s\ndef f%d():\n    return %d\n", topics[t][1], t, c + 1);
        put(topics[t][0], body);
        const char *w = topics[t][1];
        snprintf(msg, sizeof msg, "improve %.*s handling, step %d", (int)strcspn(w, " "), w, c);
        commit_at(1600000000 + 1000L * (c + 1), msg);
    }
}

Test(fusion, trains_on_history_then_waits_for_enough_new_commits)
{
    history(60);
    graph_build_stats st = build(0);
    cr_assert(st.trained);
    cr_assert_geq(st.fusion.commits, 40, "usable commits %d", st.fusion.commits);
    char *m = graphdb_meta(dir, "fusion");
    cr_assert_not_null(m);
    gi_fusion f;
    gf_parse(m, &f);
    cr_assert_eq(f.info.commits, st.fusion.commits);
    cr_assert_eq(f.info.valid, f.info.commits / 4); /* the newest quarter is held out */
    cr_assert_eq(f.info.enabled, st.fusion.enabled);
    free(m);

    /* one more commit: kept, counted as pending */
    put("cache.py", "# cache evict expire\ndef f2():\n    return 99\n");
    commit_at(1600100000, "tune cache eviction");
    st = build(0);
    cr_assert_not(st.trained);
    m = graphdb_meta(dir, "fusion_pending");
    cr_assert_str_eq(m, "1");
    free(m);
}

Test(fusion, short_history_keeps_the_defaults)
{
    history(6);
    graph_build_stats st = build(0);
    cr_assert(st.trained);
    cr_assert_not(st.fusion.enabled);
    char *m = graphdb_meta(dir, "fusion");
    gi_fusion f;
    gf_parse(m, &f);
    free(m);
    cr_assert_not(f.info.enabled);
    cr_assert_lt(f.info.commits, 40);
    /* the index loads without a model: learned or not, the same ranking */
    graph_index *g;
    char *err = NULL;
    cr_assert_eq(graph_index_load(dir, NULL, &g, &err), 0, "%s", err ? err : "");
    graph_weights w;
    graph_weights_default(&w);
    graph_hit a[5], b[5];
    const char *q = "cache eviction expires too early";
    size_t na = graph_predict(g, &w, q, strlen(q), a, 5);
    w.learned = 0;
    size_t nb = graph_predict(g, &w, q, strlen(q), b, 5);
    cr_assert_eq(na, nb);
    for (size_t i = 0; i < na; i++) {
        cr_assert_eq(a[i].file, b[i].file);
        cr_assert_float_eq(a[i].score, b[i].score, 1e-12);
    }
    graph_index_free(g);
}

Test(fusion, no_learn_trains_nothing)
{
    history(50);
    graph_build_stats st = build(1);
    cr_assert_not(st.trained);
    cr_assert_null(graphdb_meta(dir, "fusion"));
    /* a model trained before is dropped by a build that does not learn */
    cr_assert_eq(gitrepo_sh(dir, "rm -rf .clarity"), 0);
    st = build(0);
    cr_assert(st.trained);
    char *m = graphdb_meta(dir, "fusion");
    cr_assert_not_null(m);
    free(m);
    st = build(1);
    cr_assert_null(graphdb_meta(dir, "fusion"));
}

/* A stored model re-ranks the default's pool: one that only values size
 * puts the largest matching file first, whatever its lexical rank. */
Test(fusion, a_stored_model_reranks_the_pool)
{
    put("small.py", "# walrus\ndef walrus():\n    pass\n");
    put("large.py", "# walrus\n# alpha bravo charlie delta echo foxtrot golf hotel india\n"
                    "# juliet kilo lima mike november oscar papa quebec romeo sierra\n"
                    "def other():\n    pass\n");
    commit_at(1600000000, "initial");
    build(1);
    graph_index *g;
    char *err = NULL;
    cr_assert_eq(graph_index_load(dir, NULL, &g, &err), 0);
    graph_weights w;
    graph_weights_default(&w);
    graph_hit h[2];
    cr_assert_eq(graph_predict(g, &w, "walrus", 6, h, 2), 2);
    cr_assert_str_eq(graph_index_path(g, h[0].file), "small.py");
    graph_index_free(g);

    /* bias 0, size 10: p = sigmoid(10 * size) */
    char m[512];
    int l = snprintf(m, sizeof m, "%s 1 100 25 0.5 0.6", GF_FORMAT);
    for (int j = 0; j < GF_NFEAT; j++) l += snprintf(m + l, sizeof m - (size_t)l, j == 10 ? " 10" : " 0");
    graphdb_set_meta(dir, "fusion", m);
    cr_assert_eq(graph_index_load(dir, NULL, &g, &err), 0);
    cr_assert_eq(graph_predict(g, &w, "walrus", 6, h, 2), 2);
    cr_assert_str_eq(graph_index_path(g, h[0].file), "large.py");
    cr_assert_gt(h[0].score, h[1].score);
    cr_assert_leq(h[0].score, 1.0);
    /* "learned": 0 keeps the default order */
    w.learned = 0;
    cr_assert_eq(graph_predict(g, &w, "walrus", 6, h, 2), 2);
    cr_assert_str_eq(graph_index_path(g, h[0].file), "small.py");
    graph_index_free(g);
}

/* A training commit's own weight is taken back out of churn: the file it
 * changed looks as it did before it. */
Test(fusion, training_commit_leaves_churn)
{
    history(10);
    build(1);
    graph_index *g;
    char *err = NULL;
    cr_assert_eq(graph_index_load(dir, NULL, &g, &err), 0);
    graph_weights w;
    graph_weights_default(&w);
    uint32_t f = (uint32_t)graph_index_find(g, "auth.py");
    /* the last commit changed network.py (step 9), at 1600010000 */
    uint32_t last = (uint32_t)graph_index_find(g, "network.py");
    gi_excl ex = {&last, 1, graph_commit_weight(1600010000.0, 1.0)};
    const char *q = "socket retry login";
    gi_stages(g, &w, q, strlen(q), &ex, 1);
    double with[GF_NFEAT], without[GF_NFEAT], other[GF_NFEAT], other_ex[GF_NFEAT];
    gf_features(g, last, NULL, with);
    gf_features(g, last, &ex, without);
    gf_features(g, f, NULL, other);
    gf_features(g, f, &ex, other_ex);
    /* network.py: the initial commit, step 4 and step 9 */
    double w0 = graph_commit_weight(1600000000.0, 1.0), w5 = graph_commit_weight(1600005000.0, 1.0);
    cr_assert_float_eq(with[9], log1p(w0 + w5 + ex.w) / g->churn_mx, 1e-9);
    cr_assert_float_eq(without[9], log1p(w0 + w5) / g->churn_mx, 1e-9);
    cr_assert_lt(without[9], with[9]);
    cr_assert_float_eq(other_ex[9], other[9], 1e-12); /* other files unchanged */
    graph_index_free(g);
}

/* ---- code-shaped query terms ---- */

/* BM25F is linear in a term's query weight: a term written as code
 * (snake_case, camelCase, a call, `backticks`, a dotted name) counts
 * w->code times; prose terms are unchanged. */
Test(fusion, code_shaped_terms_weigh_more)
{
    put("a.py", "def render_page():\n    pass\n");
    put("b.py", "def walrus():\n    pass\n");
    commit_at(1600000000, "initial");
    build(1);
    graph_index *g;
    char *err = NULL;
    cr_assert_eq(graph_index_load(dir, NULL, &g, &err), 0);
    size_t n = graph_index_files(g);
    int a = graph_index_find(g, "a.py"), b = graph_index_find(g, "b.py");
    double *s1 = calloc(n, sizeof *s1), *s2 = calloc(n, sizeof *s2);
    graph_weights w;
    graph_weights_default(&w);
    const char *forms[] = {"calls render_page twice, and the walrus",
                           "calls `page` twice, and the walrus", "calls page() twice, and the walrus",
                           "calls obj.page twice, and the walrus",
                           "calls renderPage twice, and the walrus"};
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        w.code = 1;
        graph_lexical(g, &w, forms[i], strlen(forms[i]), s1);
        w.code = 2;
        graph_lexical(g, &w, forms[i], strlen(forms[i]), s2);
        cr_assert_gt(s1[a], 0, "%s", forms[i]);
        cr_assert_float_eq(s2[a], 2 * s1[a], 1e-9, "%s", forms[i]);
        cr_assert_float_eq(s2[b], s1[b], 1e-12, "%s", forms[i]); /* prose: walrus */
    }
    /* the same words as prose are not boosted */
    const char *prose = "the page renders twice, and the walrus";
    w.code = 1;
    graph_lexical(g, &w, prose, strlen(prose), s1);
    w.code = 2;
    graph_lexical(g, &w, prose, strlen(prose), s2);
    cr_assert_float_eq(s2[a], s1[a], 1e-12);
    free(s1);
    free(s2);
    graph_index_free(g);
}

/* ---- the prompt as read ---- */

Test(prompt, blanks_comments_and_environment_dumps)
{
    const char *in = "<!-- Please include a minimal example -->\n"
                     "xr.where drops attrs\n"
                     "INSTALLED VERSIONS\n"
                     "python: 3.8.5 (default, Sep  4 2020)\n"
                     "netCDF4: 1.5.4\n"
                     "cftime: None\n"
                     "pandas==1.3.0\n"
                     "numpy>=1.21\n"
                     "  - scipy 1.7.1\n"
                     "Version 2 of the API: keep_attrs\n"
                     "<!-- unterminated";
    size_t n = strlen(in);
    char out[1024];
    cr_assert_eq(graph_prompt_clean(in, n, out), n);
    out[n] = '\0';
    cr_assert_not_null(strstr(out, "xr.where drops attrs\n"));
    cr_assert_not_null(strstr(out, "INSTALLED VERSIONS\n"));
    cr_assert_not_null(strstr(out, "Version 2 of the API: keep_attrs\n")); /* prose stays */
    const char *gone[] = {"Please", "python", "netCDF4", "cftime", "pandas", "numpy", "scipy",
                          "unterminated"};
    for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
        cr_assert_null(strstr(out, gone[i]), "%s left in:\n%s", gone[i], out);
    /* same length, same lines */
    size_t lines_in = 0, lines_out = 0;
    for (size_t i = 0; i < n; i++) {
        lines_in += in[i] == '\n';
        lines_out += out[i] == '\n';
    }
    cr_assert_eq(lines_in, lines_out);
}

/* What a dump names does not rank: with the dump, the backend named in
 * it comes first; cleaned (the default), the file the issue is about. */
Test(prompt, an_environment_dump_does_not_rank_its_packages, .init = setup, .fini = teardown)
{
    put("core/computation.py", "def where(cond, x, y):\n    return apply_ufunc(cond)\n");
    put("backends/netcdf4_backend.py", "import netCDF4\n\ndef open_netcdf4():\n    pass\n");
    commit_at(1600000000, "initial");
    build(1);
    graph_index *g;
    char *err = NULL;
    cr_assert_eq(graph_index_load(dir, NULL, &g, &err), 0);
    graph_weights w;
    graph_weights_default(&w);
    const char *q = "apply_ufunc loses attributes\nnetCDF4: 1.5.4\nnetcdf4: 1.5.4\nnetcdf4-python: 1.5\n";
    graph_hit h[2];
    cr_assert_geq(graph_predict(g, &w, q, strlen(q), h, 2), 1);
    cr_assert_str_eq(graph_index_path(g, h[0].file), "core/computation.py");
    w.clean = 0;
    cr_assert_eq(graph_predict(g, &w, q, strlen(q), h, 2), 2);
    cr_assert_str_eq(graph_index_path(g, h[0].file), "backends/netcdf4_backend.py");
    graph_index_free(g);
}

/* ---- how much history a build reads ---- */

Test(fusion, history_depth_default_cap_and_whole)
{
    history(10); /* 11 commits */
    graph_build_opts o = {GRAPH_PARSER_AUTO, 3, 0, NULL, 1};
    graph_build_stats st;
    char *err = NULL;
    cr_assert_eq(graph_build(dir, &o, &st, &err), 0);
    cr_assert_eq(st.commits_read, 3);
    cr_assert_eq(gitrepo_sh(dir, "rm -rf .clarity"), 0);
    o.max_commits = 0; /* the default cap (10,000) */
    cr_assert_eq(graph_build(dir, &o, &st, &err), 0);
    cr_assert_eq(st.commits_read, 11);
    cr_assert_eq(gitrepo_sh(dir, "rm -rf .clarity"), 0);
    o.max_commits = -1; /* all */
    cr_assert_eq(graph_build(dir, &o, &st, &err), 0);
    cr_assert_eq(st.commits_read, 11);

    /* the RPC: 0 is the whole history, a negative count is an error */
    buf out;
    buf_init(&out);
    char params[4300], *msg = NULL;
    snprintf(params, sizeof params, "{\"repo\":\"%s\",\"maxCommits\":-1}", dir);
    graph_cache *gc = graph_cache_new();
    cr_assert_not_null(gc);
    cr_assert_neq(graph_rpc_call(gc, "clarity.graphBuild", params, &out, &msg), 0);
    cr_assert_not_null(msg);
    cr_assert_not_null(strstr(msg, "maxCommits"), "%s", msg);
    free(msg);
    msg = NULL;
    cr_assert_eq(gitrepo_sh(dir, "rm -rf .clarity"), 0);
    snprintf(params, sizeof params, "{\"repo\":\"%s\",\"maxCommits\":0,\"learn\":false}", dir);
    buf_reset(&out);
    cr_assert_eq(graph_rpc_call(gc, "clarity.graphBuild", params, &out, &msg), 0, "%s", msg);
    buf_putc(&out, '\0');
    cr_assert_not_null(strstr(out.p, "\"commits\":11"), "%s", out.p);
    cr_assert_null(strstr(out.p, "fusion"), "%s", out.p);
    buf_free(&out);
    graph_cache_free(gc);
}

/* defines: a name the prompt writes as code, defined in a file, counts
 * 1 / (files defining it) there; prose and short names count nothing. */
Test(fusion, defines_names_written_as_code)
{
    put("a.py", "def apply_ufunc():\n    pass\n");
    put("b.py", "def apply_ufunc():\n    pass\n\nclass Engine:\n    pass\n");
    put("c.py", "def where_clause():\n    pass\n\ndef ab():\n    pass\n");
    commit_at(1600000000, "initial");
    build(1);
    graph_index *g;
    char *err = NULL;
    cr_assert_eq(graph_index_load(dir, NULL, &g, &err), 0);
    graph_weights w;
    graph_weights_default(&w);
    int a = graph_index_find(g, "a.py"), b = graph_index_find(g, "b.py"),
        c = graph_index_find(g, "c.py");
    const char *q = "`apply_ufunc` and where_clause() fail, apply_ufunc again; ab() too";
    gi_stages(g, &w, q, strlen(q), NULL, 1);
    cr_assert_float_eq(g->defines[a], 0.5, 1e-12);
    cr_assert_float_eq(g->defines[b], 0.5, 1e-12);
    cr_assert_float_eq(g->defines[c], 1.0, 1e-12); /* "ab" is too short */
    double x[GF_NFEAT];
    gf_features(g, (uint32_t)c, NULL, x);
    cr_assert_float_eq(x[13], 1.0, 1e-12);
    const char *prose = "apply ufunc and the where clause of the engine";
    gi_stages(g, &w, prose, strlen(prose), NULL, 1);
    for (int d = 0; d < 3; d++) cr_assert_float_eq(g->defines[d], 0.0, 1e-12);
    const char *cls = "Engine.run() and Engine";
    gi_stages(g, &w, cls, strlen(cls), NULL, 1);
    cr_assert_float_eq(g->defines[b], 1.0, 1e-12);
    graph_index_free(g);
}
