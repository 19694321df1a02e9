/* api.c: the clarity.graphBuild / clarity.predict / clarity.graphStatus
 * RPC methods, and the code intelligence methods' dispatch (intel.c), on
 * an engine's cache of loaded graphs (cache.c).  A use checks, at most
 * every few seconds, whether the cache is stale (HEAD moved, the git index
 * changed) and then refreshes it incrementally and reloads.
 */
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../include/clarity.h"
#include "cache.h"

static double mono_msf(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Names of the learned fusion's features, in gf_features order. */
static const char *const feat_names[GF_NFEAT] = {
    "bias",       "lexical", "mention", "path",  "symbol", "content", "graph",
    "cochange", "centrality", "churn", "size", "aux", "package", "defines"};

/* explain: each file also gets "features" (what the learned fusion sees;
 * the index's per-query arrays must hold this prompt's stages). */
static void hits_json(graph_index *g, const graph_hit *hits, size_t n, int explain, buf *out)
{
    buf_puts(out, "{\"files\":[");
    for (size_t i = 0; i < n; i++) {
        const char *p = g->paths[hits[i].file];
        buf_puts(out, i ? ",{\"path\":" : "{\"path\":");
        buf_json_str(out, p, strlen(p));
        buf_printf(out, ",\"score\":%.4f,\"symbols\":[", hits[i].score);
        const gsym *syms[5];
        size_t ns = graph_file_symbols(g, hits[i].file, syms, 5);
        for (size_t j = 0; j < ns; j++) {
            buf_puts(out, j ? ",{\"name\":" : "{\"name\":");
            buf_json_str(out, syms[j]->name, strlen(syms[j]->name));
            buf_printf(out, ",\"line\":%u}", syms[j]->line);
        }
        buf_putc(out, ']');
        if (explain) {
            double x[GF_NFEAT];
            gf_features(g, hits[i].file, NULL, x);
            buf_puts(out, ",\"features\":{");
            for (int j = 1; j < GF_NFEAT; j++)
                buf_printf(out, "%s\"%s\":%.6g", j > 1 ? "," : "", feat_names[j], x[j]);
            buf_putc(out, '}');
        }
        buf_putc(out, '}');
    }
    buf_putc(out, ']');
}

static const char *const field_names[GRAPH_FIELDS] = {"Path", "Symbol", "Import", "Call",
                                                      "Content"};

/* Weights from a JSON object over the defaults; -1 on an unknown key. */
static int weights_obj(json_t *o, graph_weights *w)
{
    graph_weights_default(w);
    if (!o) return 0;
    if (!json_is_object(o)) return -1;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        if (!json_is_number(v)) return -1;
        double x = json_number_value(v);
        int known = 1;
        if (strcmp(k, "lexical") == 0) w->lexical = x;
        else if (strcmp(k, "graph") == 0) w->graph = x;
        else if (strcmp(k, "cochange") == 0) w->cochange = x;
        else if (strcmp(k, "mention") == 0) w->mention = x;
        else if (strcmp(k, "centrality") == 0) w->centrality = x;
        else if (strcmp(k, "seeds") == 0) w->seed_count = x;
        else if (strcmp(k, "hopDecay") == 0) w->hop_decay = x;
        else if (strcmp(k, "hops") == 0) w->hops = (int)x;
        else if (strcmp(k, "calls") == 0) w->use_calls = x != 0;
        else if (strcmp(k, "contentBm25") == 0) w->content_bm25 = x;
        else if (strcmp(k, "testProxy") == 0) w->test_proxy = x;
        else if (strcmp(k, "churn") == 0) w->churn = x;
        else if (strcmp(k, "mentionPackage") == 0) w->mention_package = x;
        else if (strcmp(k, "aux") == 0) w->aux = x;
        else if (strcmp(k, "learned") == 0) w->learned = x;
        else if (strcmp(k, "code") == 0) w->code = x;
        else if (strcmp(k, "clean") == 0) w->clean = x;
        else known = 0;
        /* field weights and b: wPath, bPath, wSymbol, ... wContent, bContent */
        for (int f = 0; !known && f < GRAPH_FIELDS; f++) {
            if ((k[0] == 'w' || k[0] == 'b') && strcmp(k + 1, field_names[f]) == 0) {
                if (k[0] == 'w') w->field_w[f] = x;
                else w->field_b[f] = x;
                known = 1;
            }
        }
        if (!known) return -1;
    }
    return 0;
}

static int weights_from(json_t *params, graph_weights *w)
{
    return weights_obj(json_object_get(params, "weights"), w);
}

/* Checks the params of clarity.predict; weights into *w.  CLARITY_OK or
 * CLARITY_EINVAL with *msg. */
static int predict_params(json_t *params, graph_weights *w, size_t *k, int *repeat, char **msg)
{
    const char *repo = json_string_value(json_object_get(params, "repo"));
    const char *prompt = json_string_value(json_object_get(params, "prompt"));
    json_t *kj = json_object_get(params, "k");
    const char *bad = NULL;
    if (!repo || !*repo || !prompt) bad = "clarity.predict needs \"repo\" and \"prompt\" (strings)";
    else if (kj && !(json_is_integer(kj) && json_integer_value(kj) > 0 && json_integer_value(kj) <= 1000))
        bad = "param \"k\" must be an integer in 1..1000";
    else if (weights_from(params, w) != 0)
        bad = "param \"weights\" must be an object of known numeric weights";
    /* benchmarks: "weightSets": [{...}, ...] ranks once per set on the same
     * loaded index and answers "runs": [[path, ...], ...] as well */
    json_t *sets = json_object_get(params, "weightSets");
    if (!bad && sets && !json_is_array(sets)) bad = "param \"weightSets\" must be an array of weight objects";
    for (size_t i = 0; !bad && sets && i < json_array_size(sets); i++) {
        graph_weights t;
        if (weights_obj(json_array_get(sets, i), &t) != 0)
            bad = "param \"weightSets\" must be an array of weight objects";
    }
    if (bad) {
        *msg = util_strdup(bad);
        return CLARITY_EINVAL;
    }
    *k = kj ? (size_t)json_integer_value(kj) : 10;
    *repeat = 1;
    json_t *rj = json_object_get(params, "repeat"); /* benchmarks: run the query N times */
    if (json_is_integer(rj) && json_integer_value(rj) > 1 && json_integer_value(rj) <= 100000)
        *repeat = (int)json_integer_value(rj);
    return CLARITY_OK;
}

/* ,"runs":[[path, ...], ...]: one ranking per weight set. */
static void weight_set_runs(graph_index *g, json_t *sets, const char *prompt, graph_hit *hits,
                            size_t k, buf *out)
{
    buf_puts(out, ",\"runs\":[");
    for (size_t i = 0; i < json_array_size(sets); i++) {
        graph_weights t;
        weights_obj(json_array_get(sets, i), &t);
        size_t m = graph_predict(g, &t, prompt, strlen(prompt), hits, k);
        buf_puts(out, i ? ",[" : "[");
        for (size_t j = 0; j < m; j++) {
            if (j) buf_putc(out, ',');
            const char *p = graph_index_path(g, hits[j].file);
            buf_json_str(out, p, strlen(p));
        }
        buf_putc(out, ']');
    }
    buf_putc(out, ']');
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ,"p50","p99" of the latencies (sorted in place). */
static void latency_json(double *lat, int n, buf *out)
{
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    int p99 = (int)(n * 0.99) < n ? (int)(n * 0.99) : n - 1;
    buf_printf(out, ",\"p50\":%.3f,\"p99\":%.3f", lat[n / 2], lat[p99]);
}

static void refreshed_json(const acq_info *ai, buf *out)
{
    buf_printf(out, ",\"stale\":%s", ai->stale ? "true" : "false");
    if (ai->refreshed)
        buf_printf(out, ",\"refreshed\":{\"full\":%s,\"parsed\":%zu,\"removed\":%zu,\"commits\":%zu,"
                        "\"ms\":%.1f}",
                   ai->st.full ? "true" : "false", ai->st.parsed, ai->st.removed,
                   ai->st.commits_read, ai->st.ms);
}

static int predict(graph_cache *gc, json_t *params, buf *out, char **msg)
{
    graph_weights w;
    size_t k;
    int repeat;
    int rc = predict_params(params, &w, &k, &repeat, msg);
    if (rc != CLARITY_OK) return rc;
    const char *repo = json_string_value(json_object_get(params, "repo"));
    const char *prompt = json_string_value(json_object_get(params, "prompt"));
    acq_info ai;
    /* "refresh": false answers from the cache as it is, "stale" says so */
    centry *c = gcache_acquire(gc, repo, 1, !json_is_false(json_object_get(params, "refresh")), msg, &ai);
    if (!c) {
        if (!*msg) *msg = util_strdup("no graph for this repository");
        return CLARITY_ERR;
    }
    graph_hit *hits = malloc(sizeof *hits * k);
    double *lat = calloc((size_t)repeat, sizeof *lat);
    if (!hits || !lat) {
        free(hits);
        free(lat);
        gcache_release(gc, c);
        return CLARITY_ENOMEM;
    }
    graph_index *g = gcache_index(c);
    size_t n = 0;
    for (int r = 0; r < repeat; r++) {
        double t0 = mono_msf();
        n = graph_predict(g, &w, prompt, strlen(prompt), hits, k);
        lat[r] = mono_msf() - t0;
    }
    int explain = json_is_true(json_object_get(params, "explain"));
    if (explain) gi_stages(g, &w, prompt, strlen(prompt), NULL, 1);
    hits_json(g, hits, n, explain, out);
    buf_printf(out, ",\"ms\":%.3f", lat[repeat - 1]);
    json_t *sets = json_object_get(params, "weightSets");
    if (sets) weight_set_runs(g, sets, prompt, hits, k, out);
    if (repeat > 1) latency_json(lat, repeat, out);
    refreshed_json(&ai, out);
    buf_putc(out, '}');
    free(hits);
    free(lat);
    gcache_release(gc, c);
    return CLARITY_OK;
}

/* ,"fusion":{enabled, commits, heldOut, mrrDefault, mrrLearned -- the
 * caller adds what else it knows and the closing brace. */
static void fusion_json(buf *out, const graph_fusion_info *f)
{
    buf_printf(out,
               ",\"fusion\":{\"enabled\":%s,\"commits\":%d,\"heldOut\":%d,\"mrrDefault\":%.4f,"
               "\"mrrLearned\":%.4f",
               f->enabled ? "true" : "false", f->commits, f->valid, f->mrr_default,
               f->mrr_learned);
}

static int build(graph_cache *gc, json_t *params, buf *out, char **msg)
{
    const char *repo = json_string_value(json_object_get(params, "repo"));
    if (!repo || !*repo) {
        *msg = util_strdup("clarity.graphBuild needs \"repo\" (a string)");
        return CLARITY_EINVAL;
    }
    graph_build_opts o = {GRAPH_PARSER_AUTO, 0, 0, NULL, 0};
    const char *parser = json_string_value(json_object_get(params, "parser"));
    if (parser && strcmp(parser, "regex") == 0) o.parser = GRAPH_PARSER_REGEX;
    else if (parser && strcmp(parser, "auto") != 0) {
        *msg = util_strdup("param \"parser\" must be \"auto\" or \"regex\"");
        return CLARITY_EINVAL;
    }
    /* maxCommits: the newest commits read (0: all of them; default 10,000) */
    json_t *mc = json_object_get(params, "maxCommits");
    if (mc && !(json_is_integer(mc) && json_integer_value(mc) >= 0 &&
                json_integer_value(mc) < INT_MAX)) {
        *msg = util_strdup("param \"maxCommits\" must be an integer >= 0 (0: the whole history)");
        return CLARITY_EINVAL;
    }
    if (mc) o.max_commits = json_integer_value(mc) == 0 ? -1 : (int)json_integer_value(mc);
    o.progress = json_is_true(json_object_get(params, "progress"));
    o.no_learn = json_is_false(json_object_get(params, "learn"));
    char *r = gcache_canon(repo);
    if (!r) return CLARITY_ENOMEM;
    graph_build_stats st;
    int rc = gcache_build(gc, r, &o, &st, msg);
    free(r);
    if (rc != 0) return CLARITY_ERR;
    int ts = 0;
    for (int l = 1; l < LANG__COUNT; l++) ts += graph_has_grammar(l);
    buf_printf(out,
               "{\"ok\":true,\"full\":%s,\"files\":%zu,\"parsed\":%zu,\"removed\":%zu,"
               "\"symbols\":%zu,\"imports\":%zu,\"resolved\":%zu,\"calls\":%zu,"
               "\"commits\":%zu,\"pairs\":%zu,\"grammars\":%d,\"ms\":%.1f",
               st.full ? "true" : "false", st.files, st.parsed, st.removed, st.symbols, st.imports,
               st.resolved, st.calls, st.commits_read, st.pairs, ts, st.ms);
    if (st.trained) {
        fusion_json(out, &st.fusion);
        buf_printf(out, ",\"t\":%.2f,\"lambda\":%g,\"ms\":%.1f}", st.fusion.t, st.fusion.lambda,
                   st.fusion_ms);
    }
    buf_putc(out, '}');
    return CLARITY_OK;
}

/* A meta value printed as a JSON number: digits only, else null. */
static const char *num_or_null(const char *v)
{
    if (!v || !*v || strlen(v) > 20) return "null";
    for (const char *p = v; *p; p++)
        if (*p < '0' || *p > '9') return "null";
    return v;
}

static int64_t count_rows(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* clarity.graphStatus {repo} -> {available, repo, files, symbols, commits,
 * stale, builtAt}: what the cache holds, without loading or building it.
 * commits: the commits read for co-change; builtAt: Unix seconds. */
static int status(json_t *params, buf *out, char **msg)
{
    const char *repo = json_string_value(json_object_get(params, "repo"));
    if (!repo || !*repo) {
        buf_puts(out, "{\"available\":false}");
        return CLARITY_OK;
    }
    char *r = gcache_canon(repo), *dbp = r ? graph_db_path(r) : NULL;
    if (!dbp) {
        free(r);
        return CLARITY_ENOMEM;
    }
    struct stat sb;
    sqlite3 *db = NULL;
    char *err = NULL;
    int have = stat(dbp, &sb) == 0 && S_ISREG(sb.st_mode) && graph_db_open(dbp, 0, &db, &err) == 0;
    free(err);
    buf_printf(out, "{\"available\":%s,\"repo\":", have ? "true" : "false");
    buf_json_str(out, r, strlen(r));
    if (have) {
        char *built = graph_db_meta(db, "built_at"), *commits = graph_db_meta(db, "commits");
        char *fu = graph_db_meta(db, "fusion");
        gi_fusion fus;
        gf_parse(fu, &fus);
        int64_t files = count_rows(db, "SELECT count(*) FROM files");
        int64_t syms = count_rows(db, "SELECT count(*) FROM symbols");
        sqlite3_close(db);
        int stale = graph_is_stale(r, dbp);
        buf_printf(out, ",\"files\":%lld,\"symbols\":%lld,\"commits\":%s,\"stale\":%s,\"builtAt\":%s",
                   (long long)files, (long long)syms, num_or_null(commits),
                   stale != 0 ? "true" : "false", num_or_null(built));
        if (fu) {
            fusion_json(out, &fus.info);
            buf_putc(out, '}');
        } else {
            buf_puts(out, ",\"fusion\":null");
        }
        free(fu);
        free(built);
        free(commits);
    }
    buf_putc(out, '}');
    free(dbp);
    free(r);
    return CLARITY_OK;
}

/* Called by gateway/rpc.c for clarity.graphBuild, clarity.predict,
 * clarity.graphStatus and the code intelligence methods. */
int graph_rpc_call(graph_cache *gc, const char *method, const char *params_json, buf *out,
                   char **msg)
{
    json_error_t je;
    json_t *params = params_json && *params_json ? json_loads(params_json, 0, &je) : json_object();
    if (!json_is_object(params)) {
        json_decref(params);
        *msg = util_strdup("params must be a JSON object");
        return CLARITY_EINVAL;
    }
    int rc;
    if (strcmp(method, "clarity.predict") == 0) rc = predict(gc, params, out, msg);
    else if (strcmp(method, "clarity.graphBuild") == 0) rc = build(gc, params, out, msg);
    else if (strcmp(method, "clarity.graphStatus") == 0) rc = status(params, out, msg);
    else if (strcmp(method, "clarity.zoom") == 0 || strcmp(method, "clarity.impact") == 0 ||
             strcmp(method, "clarity.cochange") == 0) {
        const char *repo = json_string_value(json_object_get(params, "repo"));
        if (repo) gcache_refresh_if_due(gc, repo); /* as predictions do: the same per-repository check */
        rc = graph_intel_call(method, params, out, msg);
    }
    else rc = CLARITY_ENOTFOUND;
    json_decref(params);
    return rc;
}
