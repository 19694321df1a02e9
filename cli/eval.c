/* eval.c: `clarity eval`, the corpus replayed once per config.
 *
 * Each config runs in a fresh plugin instance whose config is the file's
 * object with storage.backend forced to "memory" (storage.path dropped), so
 * no state database is opened.  The turns are fed by replay_run (replay.h);
 * after each agent_end the session's clarity.getScores is snapshotted, and
 * when the session ends its snapshots are scored (evalmetrics.c).  The
 * baselines are computed on the first config's snapshots.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/buf.h"
#include "eval.h"
#include "evalbudget.h"
#include "evalrepos.h"
#include "jsonconv.h"
#include "replay.h"

typedef struct eval_run {
    cli *c;
    const char *config_name;
    ev_session cur;
    ev_acc acc;
    eb_session bcur; /* --budget: the session's assemblies */
    eb_acc bacc;
    size_t sessions, turns;
    evr *repos; /* --repos: the sessions' workspaces (shared by the runs) */
    eval_progress prog;
    int failed, oom;
} eval_run;

/* ---- callbacks ------------------------------------------------------------ */

static void run_error(eval_run *run, const char *session, const char *fmt, const char *what)
{
    if (run->failed++ >= 5) return; /* the first few are enough */
    if (isatty(STDERR_FILENO)) fputs("\r\033[K", stderr); /* over the progress bar */
    fprintf(stderr, "clarity: eval [%s] session %s: ", run->config_name, session);
    fprintf(stderr, fmt, what);
    fputc('\n', stderr);
}

/* method {"session": session} through the plugin: its rc, and *out the
 * parsed answer (NULL unless CLARITY_OK); *why the error text otherwise
 * (malloc()ed). */
static int session_rpc(eval_run *run, const char *method, const char *session, json_t **out, char **why)
{
    json_t *params = json_pack("{s:s}", "session", session);
    char *p = params ? json_compact(params) : NULL;
    json_decref(params);
    clarity_result res;
    int rc = p ? loader_rpc(&run->c->L, method, p, &res) : CLARITY_ENOMEM;
    free(p);
    *out = rc == CLARITY_OK ? result_json(&res) : NULL;
    *why = rc == CLARITY_OK ? NULL : strdup(loader_errtext(&run->c->L, rc, &res));
    loader_release(&run->c->L, &res);
    return rc;
}

/* The session's items now (clarity.getScores; none when clarity has not
 * made the session: nothing was tracked yet).  Returns 0, or -1 (reported). */
static int snapshot(eval_run *run, const char *session, int64_t turn, ev_snap *snap)
{
    json_t *j;
    char *why;
    int rc = session_rpc(run, "clarity.getScores", session, &j, &why);
    if (rc != CLARITY_OK && rc != CLARITY_ENOTFOUND) {
        run_error(run, session, "clarity.getScores: %s", why ? why : "out of memory");
        free(why);
        return -1;
    }
    free(why);
    /* unknown session: nothing tracked yet, no session made */
    json_t *items = rc == CLARITY_OK ? json_incref(json_object_get(j, "items")) : json_array();
    int bad = !items || ev_snap_from_json(snap, turn, items) != 0;
    if (bad && rc == CLARITY_OK) run_error(run, session, "%s", "clarity.getScores: unexpected answer");
    else if (bad) run->oom = 1;
    json_decref(items);
    json_decref(j);
    return bad ? -1 : 0;
}

static void on_turn(void *ud, const char *session, int64_t turn)
{
    eval_run *run = ud;
    run->turns++;
    ev_snap snap;
    if (snapshot(run, session, turn, &snap) == 0 && ev_session_push(&run->cur, &snap) != 0) {
        ev_snap_free(&snap);
        run->oom = 1;
    }
}

static const char *workspace_of(void *ud, const char *session)
{
    eval_run *run = ud;
    return evr_workspace(run->repos, run->c, session);
}

/* The first turn's block, and what was tracked when it was made (the
 * baselines' block). */
static void on_block(void *ud, const char *session, int64_t turn, const char *block, size_t len)
{
    eval_run *run = ud;
    if (run->cur.n || run->cur.block1) return;
    ev_snap pre;
    if (snapshot(run, session, turn, &pre) != 0) return;
    if (ev_session_block1(&run->cur, block, len, &pre) != 0) run->oom = 1;
}

static void on_meta(void *ud, const char *session, json_t *meta)
{
    eval_run *run = ud;
    if (ev_session_meta(&run->cur, meta) != 0) run->oom = 1;
}

/* The session's test runs (clarity.progress) into run->prog: re-runs with
 * no edit, and the longest run of runs not beating the best so far. */
static void add_progress(eval_run *run, const char *session)
{
    json_t *j;
    char *why;
    session_rpc(run, "clarity.progress", session, &j, &why); /* unknown session: no runs */
    free(why);
    json_t *runs = json_object_get(j, "runs"), *r;
    size_t i, n = json_array_size(runs);
    eval_progress *g = &run->prog;
    if (n) g->sessions_with_runs++;
    g->runs += n;
    double best = -1;
    int64_t streak = 0, longest = 0, last_turn = -1;
    json_array_foreach(runs, i, r) {
        double passed = (double)json_integer_value(json_object_get(r, "passed"));
        double total = passed + (double)json_integer_value(json_object_get(r, "failed"));
        double frac = total > 0 ? passed / total : 0;
        if (frac > best + 1e-12) best = frac, streak = 0;
        else if (++streak > longest) longest = streak;
        if (json_is_false(json_object_get(r, "editsSincePrevious"))) {
            int64_t turn = json_integer_value(json_object_get(r, "turn"));
            g->reruns_no_edit++;
            g->turns_rerun += turn != last_turn;
            last_turn = turn;
        }
    }
    if (longest > g->longest_streak) g->longest_streak = longest;
    g->sessions_streak3 += longest >= 3;
    json_decref(j);
}

static void on_session_end(void *ud, const char *session)
{
    eval_run *run = ud;
    add_progress(run, session);
    run->sessions++;
    if (ev_acc_add(&run->acc, &run->cur, run->c->horizon) != 0) run->oom = 1;
    eb_session_score(&run->bacc, &run->bcur, &run->cur, run->c->horizon);
    eb_session_clear(&run->bcur);
    ev_session_clear(&run->cur);
}

static void on_assembled(void *ud, const char *session, int64_t turn, const clarity_ctx_message *msgs,
                         size_t n, json_t *result)
{
    eval_run *run = ud;
    int64_t budget = json_integer_value(json_object_get(result, "budget"));
    if (eb_turn_add(&run->bcur, turn, msgs, n, result, budget) != 0) run->oom = 1;
}

/* ---- configs -------------------------------------------------------------- */

/* "dir/strict.json" -> "strict" (malloc()ed). */
static char *config_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 5 && strcmp(b + n - 5, ".json") == 0) n -= 5;
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, b, n);
        s[n] = '\0';
    }
    return s;
}

/* The config text for one column, or NULL (reported). */
static char *column_config(const char *path)
{
    json_t *root;
    if (path) {
        json_error_t je;
        root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
        if (!root) {
            fprintf(stderr, "clarity: %s:%d:%d: %s\n", path, je.line, je.column, je.text);
            return NULL;
        }
        if (!json_is_object(root)) {
            fprintf(stderr, "clarity: %s: the configuration must be a JSON object\n", path);
            json_decref(root);
            return NULL;
        }
    } else {
        root = json_object();
    }
    json_t *storage = json_object_get(root, "storage");
    if (storage && !json_is_object(storage)) {
        fprintf(stderr, "clarity: %s: storage: must be an object\n", path);
        json_decref(root);
        return NULL;
    }
    if (!storage) json_object_set_new(root, "storage", storage = json_object());
    json_object_set_new(storage, "backend", json_string("memory"));
    json_object_del(storage, "path");
    char *text = json_compact(root);
    json_decref(root);
    return text;
}

/* Replays the corpus with one config; fills *acc.  Returns an EXIT_* code. */
static int run_column(cli *c, const char *path, const char *cfg_path, const char *name,
                      replay_hooks *hooks, eval_run *run)
{
    char *config = column_config(cfg_path);
    if (!config) return EXIT_FAIL;
    clarity_host host;
    hostsvc_fill(c->hs, &host);
    char *err = NULL;
    memset(&c->L, 0, sizeof c->L);
    int rc = loader_open(&c->L, c->plugin_path, &host, config, &err);
    free(config);
    if (rc != 0) {
        fprintf(stderr, "clarity: %s: %s\n", cfg_path ? cfg_path : name,
                err ? err : "cannot load the plugin");
        free(err);
        return EXIT_FAIL;
    }
    run->c = c;
    run->config_name = name;
    hooks->ud = run;
    int ex = replay_run(c, path, hooks);
    loader_close(&c->L);
    memset(&c->L, 0, sizeof c->L);
    if (run->oom) {
        fprintf(stderr, "clarity: eval: out of memory\n");
        return EXIT_FAIL;
    }
    if (ex == EXIT_OK && run->failed) ex = EXIT_FAIL;
    return ex;
}

static int near(double a, double b) { return a - b < 1e-12 && b - a < 1e-12; }

static int same_metrics(const ev_metrics *a, const ev_metrics *b)
{
    for (int k = 0; k < EV_NK; k++)
        if (!near(a->recall[k], b->recall[k])) return 0;
    return a->recall_turns == b->recall_turns && a->gold_pairs == b->gold_pairs &&
           a->gold_tracked_pairs == b->gold_tracked_pairs &&
           near(a->gold_rank_median, b->gold_rank_median);
}

/* --budget with --html: the first config and the baselines at budgets
 * 10 %, 20 %, ... 100 % (one replay each), drawn as recall against budget. */
static int budget_sweep(cli *c, const char *path, const char *cfg_path, const char *name)
{
    eb_point pts[10];
    int ex = EXIT_OK;
    double keep_frac = c->budget_frac;
    int64_t keep_abs = c->budget_abs;
    c->budget_abs = 0;
    for (int k = 0; k < 10 && ex == EXIT_OK; k++) {
        eval_run run;
        memset(&run, 0, sizeof run);
        ev_session_init(&run.cur);
        ev_acc_init(&run.acc);
        c->budget_frac = (k + 1) / 10.0;
        replay_hooks hooks = {.on_turn = on_turn, .on_meta = on_meta, .on_session_end = on_session_end,
                              .on_assembled = on_assembled};
        ex = run_column(c, path, cfg_path, name, &hooks, &run);
        pts[k].budget = c->budget_frac;
        for (int p = 0; p < EB_NPOL; p++) {
            pts[k].recall[p] = run.bacc.pairs > 0 ? run.bacc.retained[p] / run.bacc.pairs : 0;
            pts[k].kept[p] = run.bacc.turns ? run.bacc.kept_sum[p] / (double)run.bacc.turns : 0;
        }
        ev_session_free(&run.cur);
        ev_acc_free(&run.acc);
        eb_session_clear(&run.bcur);
        if (isatty(STDERR_FILENO)) fprintf(stderr, "\rbudget sweep: %d/10", k + 1);
    }
    if (isatty(STDERR_FILENO)) fputs("\r\033[K", stderr);
    c->budget_frac = keep_frac;
    c->budget_abs = keep_abs;
    if (ex == EXIT_OK && eb_report_html(c->html_path, path, name, pts, 10) != 0) {
        fprintf(stderr, "clarity: %s: %s\n", c->html_path, strerror(errno));
        ex = EXIT_FAIL;
    }
    return ex;
}

/* --budget: evidence recall, tokens kept and cache breaks per policy. */
static int budget_report(cli *c, const char *path, eval_run *runs, char **names, size_t ncfg)
{
    json_t *configs = json_object(), *baselines = json_object();
    for (size_t i = 0; i < ncfg; i++)
        json_object_set_new(configs, names[i], eb_policy_json(&runs[i].bacc, EB_CLARITY));
    for (int p = EB_RECENCY; p < EB_NPOL; p++)
        json_object_set_new(baselines, eb_policy_names[p], eb_policy_json(&runs[0].bacc, p));
    double budget = c->budget_abs > 0 ? (double)c->budget_abs : c->budget_frac;
    json_t *j = json_pack("{s:I,s:f,s:o,s:o}", "sessions", (json_int_t)runs[0].sessions, "budget",
                          budget, "configs", configs, "baselines", baselines);
    if (!j) return EXIT_FAIL;
    if (c->json) {
        char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10));
        if (s) puts(s);
        free(s);
    } else {
        printf("clarity eval --budget %g %s: %zu sessions, %zu turns assembled, horizon %d\n\n",
               budget, path, runs[0].sessions, runs[0].bacc.turns, c->horizon);
        printf("%-14s %16s %12s %20s %12s\n", "policy", "evidence recall", "tokens kept",
               "cache breaks / turn", "over budget");
        const char *key;
        json_t *o;
        for (int pass = 0; pass < 2; pass++) {
            size_t k = 0;
            json_object_foreach(json_object_get(j, pass ? "baselines" : "configs"), key, o) {
                const eb_acc *a = pass ? &runs[0].bacc : &runs[k].bacc;
                int p = pass ? EB_RECENCY + (int)k : EB_CLARITY;
                printf("%-14s %15.1f%% %11.1f%% %20.3f %11.1f%%\n", key,
                       100 * json_number_value(json_object_get(o, "evidence_recall")),
                       100 * json_number_value(json_object_get(o, "tokens_kept")),
                       json_number_value(json_object_get(o, "cache_breaks_per_turn")),
                       a->turns ? 100 * a->over[p] / (double)a->turns : 0);
                k++;
            }
        }
        printf("\nevidence recall: the items used within %d turns whose newest earlier message was "
               "sent verbatim\n(or, for clarity, is in its block); %.0f (turn, item) pairs.  Over budget: "
               "the turns sent\nlarger than the budget (what a policy never removes did not fit).\n",
               c->horizon, runs[0].bacc.pairs);
    }
    json_decref(j);
    return EXIT_OK;
}

/* $XDG_CACHE_HOME/clarity/eval-repos, else ~/.cache/clarity/eval-repos. */
static char *default_cache(void)
{
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (x && *x == '/') return util_format("%s/clarity/eval-repos", x);
    if (home && *home == '/') return util_format("%s/.cache/clarity/eval-repos", home);
    fprintf(stderr, "clarity: eval --repos: no cache directory (set --repo-cache, XDG_CACHE_HOME or HOME)\n");
    return NULL;
}

/* The columns' names: each config's file name, or "default".  Two columns
 * of one name, or one named like a baseline, are refused. */
static int column_names(cli *c, char **names, size_t ncfg)
{
    for (size_t i = 0; i < ncfg; i++) {
        names[i] = c->n_configs ? config_name(c->configs[i]) : strdup("default");
        if (!names[i]) return EXIT_FAIL;
        int clash = strcmp(names[i], "lru") == 0 || strcmp(names[i], "frequency") == 0;
        for (size_t k = 0; k < i; k++) clash |= strcmp(names[k], names[i]) == 0;
        if (clash) {
            fprintf(stderr, "clarity: eval: two columns named \"%s\" (%s); rename the config file\n",
                    names[i], c->configs[i]);
            return EXIT_USAGE;
        }
    }
    return EXIT_OK;
}

/* --repos: the sessions' repositories, read from the corpus's meta lines. */
static int open_repos(cli *c, const char *path, evr **repos, char **cache)
{
    *cache = c->repo_cache ? strdup(c->repo_cache) : default_cache();
    *repos = *cache ? evr_new(c->repos, *cache) : NULL;
    if (!*repos || evr_scan(*repos, path) != 0) {
        fprintf(stderr, "clarity: eval --repos: cannot read the sessions' repositories from %s\n", path);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

/* One replay of the corpus per config.  *partial is set when lines were
 * refused but the rest ran. */
static int run_columns(cli *c, const char *path, eval_run *runs, char **names, size_t ncfg,
                       evr *repos, int *partial)
{
    int progress = isatty(STDERR_FILENO), ex = EXIT_OK;
    size_t per = progress ? replay_count_sessions(path, c->session) : 0;
    for (size_t i = 0; i < ncfg && ex == EXIT_OK; i++) {
        ev_session_init(&runs[i].cur);
        ev_acc_init(&runs[i].acc);
        char label[200];
        snprintf(label, sizeof label, "sessions [%s]", names[i]);
        runs[i].repos = repos;
        replay_hooks hooks = {.on_turn = on_turn, .on_meta = on_meta,
                              .on_session_end = on_session_end, .on_block = on_block,
                              .workspace = repos ? workspace_of : NULL,
                              .on_assembled = c->budget_abs > 0 || c->budget_frac > 0 ? on_assembled : NULL,
                              .progress = progress,
                              .done_before = per * i, .total = per * ncfg, .label = label};
        int rc = run_column(c, path, c->n_configs ? c->configs[i] : NULL, names[i], &hooks,
                            &runs[i]);
        if (rc == EXIT_INTERRUPTED || cli_stop) ex = EXIT_INTERRUPTED;
        else if (rc != EXIT_OK && (runs[i].oom || runs[i].sessions == 0)) ex = rc;
        else if (rc != EXIT_OK) *partial = rc; /* bad lines: report them, still show the rest */
    }
    if (progress && per) fputs("\r\033[K", stderr);
    return ex;
}

/* The relevance table (or JSON, or HTML): each config, then the baselines
 * as the first config's replay saw them. */
static int metrics_report(cli *c, const char *path, eval_run *runs, char **names, size_t ncfg,
                          eval_column *cols, const evr *repos)
{
    int ex = EXIT_OK;
    eval_report rep = {path, c->horizon, runs[0].sessions, runs[0].turns, cols, ncfg + 2,
                       repos ? (long)evr_prepared(repos) : -1, &runs[0].prog};
    for (size_t i = 0; i < ncfg; i++) {
        cols[i].name = names[i];
        ev_acc_metrics(&runs[i].acc, EV_CLARITY, &cols[i].m);
    }
    for (int b = EV_LRU; b <= EV_FREQ; b++) {
        eval_column *col = &cols[ncfg + (size_t)(b - EV_LRU)];
        col->name = ev_rank_names[b];
        col->baseline = 1;
        ev_acc_metrics(&runs[0].acc, b, &col->m);
        for (size_t i = 1; i < ncfg; i++) {
            ev_metrics other;
            ev_acc_metrics(&runs[i].acc, b, &other);
            if (!same_metrics(&other, &col->m))
                fprintf(stderr, "clarity: eval: note: the %s baseline differs under config %s "
                        "(its extraction differs); the table shows it for %s\n",
                        col->name, names[i], names[0]);
        }
    }
    if (c->json) {
        json_t *j = eval_report_json(&rep);
        char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
        if (s) puts(s);
        else ex = EXIT_FAIL;
        free(s);
        json_decref(j);
    } else {
        eval_report_print(stdout, &rep);
    }
    if (c->html_path) {
        if (eval_report_html(&rep, c->html_path) != 0) {
            fprintf(stderr, "clarity: %s: %s\n", c->html_path, strerror(errno));
            ex = EXIT_FAIL;
        } else if (!c->json) {
            printf("\nHTML report: %s\n", c->html_path);
        }
    }
    return ex;
}

int cli_eval(cli *c, const char *path)
{
    if (strcmp(path, "-") == 0) {
        fprintf(stderr, "clarity: eval reads the corpus once per config: give a file, not -\n");
        return EXIT_USAGE;
    }
    FILE *probe = fopen(path, "r");
    if (!probe) {
        fprintf(stderr, "clarity: %s: %s\n", path, strerror(errno));
        return EXIT_FAIL;
    }
    fclose(probe);
    if (c->horizon <= 0) c->horizon = EVAL_DEFAULT_HORIZON;

    size_t ncfg = c->n_configs > 0 ? (size_t)c->n_configs : 1;
    eval_column *cols = calloc(ncfg + 2, sizeof *cols);
    char **names = calloc(ncfg, sizeof *names);
    eval_run *runs = calloc(ncfg, sizeof *runs);
    int ex = cols && names && runs ? EXIT_OK : EXIT_FAIL, partial = EXIT_OK;
    evr *repos = NULL;
    char *cache = NULL;
    if (ex == EXIT_OK) ex = column_names(c, names, ncfg);
    if (ex == EXIT_OK && c->repos) ex = open_repos(c, path, &repos, &cache);
    if (ex == EXIT_OK) ex = run_columns(c, path, runs, names, ncfg, repos, &partial);
    if (ex == EXIT_OK && (c->budget_abs > 0 || c->budget_frac > 0)) {
        ex = budget_report(c, path, runs, names, ncfg);
        if (ex == EXIT_OK && c->html_path) {
            ex = budget_sweep(c, path, c->n_configs ? c->configs[0] : NULL, names[0]);
            if (ex == EXIT_OK && !c->json) printf("\nHTML report: %s\n", c->html_path);
        }
    } else if (ex == EXIT_OK) {
        ex = metrics_report(c, path, runs, names, ncfg, cols, repos);
    }
    if (ex == EXIT_OK) ex = partial;
    for (size_t i = 0; runs && i < ncfg; i++) {
        ev_session_free(&runs[i].cur);
        ev_acc_free(&runs[i].acc);
        eb_session_clear(&runs[i].bcur);
    }
    for (size_t i = 0; names && i < ncfg; i++) free(names[i]);
    evr_free(repos);
    free(cache);
    free(names);
    free(runs);
    free(cols);
    return ex;
}

/* ---- output --------------------------------------------------------------- */

static json_t *num_or_null(int ok, double v) { return ok ? json_real(v) : json_null(); }

static json_t *metrics_json(const ev_metrics *m)
{
    json_t *o = json_object();
    const char *keys[EV_NK] = {"recall@5", "recall@10", "recall@20"};
    for (int k = 0; k < EV_NK; k++)
        json_object_set_new(o, keys[k], num_or_null(m->recall_turns > 0, m->recall[k]));
    json_object_set_new(o, "gold_rank_median",
                        num_or_null(m->gold_tracked_pairs > 0, m->gold_rank_median));
    json_object_set_new(o, "gold_tracked", num_or_null(m->gold_pairs > 0, m->gold_tracked));
    json_object_set_new(o, "gold_mrr", num_or_null(m->gold_pairs > 0, m->gold_mrr));
    json_object_set_new(o, "gold_top5_turn_median",
                        num_or_null(m->gold_top5_reached_pairs > 0, m->gold_top5_turn_median));
    json_object_set_new(o, "gold_top5_reached", num_or_null(m->gold_top5_pairs > 0, m->gold_top5_reached));
    json_object_set_new(o, "gold_in_block_turn1",
                        num_or_null(m->block_sessions > 0, m->gold_in_block_turn1));
    return o;
}

json_t *eval_report_json(const eval_report *r)
{
    json_t *configs = json_object(), *baselines = json_object();
    for (size_t i = 0; i < r->ncols; i++)
        json_object_set_new(r->cols[i].baseline ? baselines : configs, r->cols[i].name,
                            metrics_json(&r->cols[i].m));
    json_t *o = json_pack("{s:I,s:I,s:o,s:o}", "sessions", (json_int_t)r->sessions, "turns",
                          (json_int_t)r->turns, "configs", configs, "baselines", baselines);
    if (o && r->with_repo >= 0) json_object_set_new(o, "with_repo", json_integer(r->with_repo));
    const eval_progress *g = r->progress;
    if (o && g)
        json_object_set_new(
            o, "progress",
            json_pack("{s:I,s:I,s:I,s:f,s:I,s:I}", "sessions_with_runs", (json_int_t)g->sessions_with_runs,
                      "runs", (json_int_t)g->runs, "reruns_without_edit", (json_int_t)g->reruns_no_edit,
                      "turn_share_rerun_without_edit", r->turns ? (double)g->turns_rerun / (double)r->turns : 0.0,
                      "longest_no_improvement_streak", (json_int_t)g->longest_streak,
                      "sessions_streak_3_or_more", (json_int_t)g->sessions_streak3));
    return o;
}

void eval_report_print(FILE *f, const eval_report *r)
{
    const ev_metrics *m0 = r->ncols ? &r->cols[0].m : NULL;
    fprintf(f, "clarity eval %s: %zu sessions, %zu turns, horizon %d\n", r->corpus, r->sessions,
            r->turns, r->horizon);
    if (m0)
        fprintf(f, "recall over %zu turns with a non-empty future-use set; gold ranks over %zu "
                "(turn, gold file) pairs before the first edit\n\n",
                m0->recall_turns, m0->gold_pairs);
    int w = 10;
    for (size_t i = 0; i < r->ncols; i++)
        if ((int)strlen(r->cols[i].name) + 2 > w) w = (int)strlen(r->cols[i].name) + 2;
    fprintf(f, "%-18s", "metric");
    for (size_t i = 0; i < r->ncols; i++) fprintf(f, "%*s", w, r->cols[i].name);
    fputc('\n', f);
    static const char *const rows[] = {"recall@5",       "recall@10",         "recall@20",
                                       "gold rank median", "gold tracked",      "gold MRR",
                                       "gold top-5 turn",  "gold reaches top 5", "gold in block t1"};
    for (int row = 0; row < 9; row++) {
        fprintf(f, "%-18s", rows[row]);
        for (size_t i = 0; i < r->ncols; i++) {
            const ev_metrics *m = &r->cols[i].m;
            char cell[64];
            if (row < EV_NK && m->recall_turns)
                snprintf(cell, sizeof cell, "%.1f%%", 100 * m->recall[row]);
            else if (row == 3 && m->gold_tracked_pairs)
                snprintf(cell, sizeof cell, "%.1f", m->gold_rank_median);
            else if (row == 4 && m->gold_pairs)
                snprintf(cell, sizeof cell, "%.1f%%", 100 * m->gold_tracked);
            else if (row == 5 && m->gold_pairs)
                snprintf(cell, sizeof cell, "%.3f", m->gold_mrr);
            else if (row == 6 && m->gold_top5_reached_pairs)
                snprintf(cell, sizeof cell, "%.1f", m->gold_top5_turn_median);
            else if (row == 7 && m->gold_top5_pairs)
                snprintf(cell, sizeof cell, "%.1f%%", 100 * m->gold_top5_reached);
            else if (row == 8 && m->block_sessions)
                snprintf(cell, sizeof cell, "%.1f%%", 100 * m->gold_in_block_turn1);
            else
                snprintf(cell, sizeof cell, "-");
            fprintf(f, "%*s", w, cell);
        }
        fputc('\n', f);
    }
    fprintf(f, "\nrecall@K: share of the items used again within %d turns that the ranking "
            "puts in its top K\n(macro over turns); gold rank: median 1-based rank of the "
            "gold files before the first edit\n(lower is better), MRR the mean of 1/rank "
            "(0 when untracked); top-5 turn: the median turn a\ngold file first enters the "
            "top 5 (of those that do); in block t1: the sessions whose gold\nfiles are all "
            "among the first 5 files of the turn-1 block.\n", r->horizon);
    if (r->with_repo >= 0)
        fprintf(f, "%ld of %zu sessions ran in their repository at its base commit (--repos).\n",
                r->with_repo, r->sessions);
    const eval_progress *g = r->progress;
    if (g)
        fprintf(f, "test runs recognised: %zu in %zu sessions; %zu re-run with no edit since the "
                "previous run (%.1f%% of turns);\nlongest run of runs without improvement %lld, "
                "%zu sessions with 3 or more.\n", g->runs, g->sessions_with_runs, g->reruns_no_edit,
                r->turns ? 100.0 * (double)g->turns_rerun / (double)r->turns : 0.0,
                (long long)g->longest_streak, g->sessions_streak3);
}
