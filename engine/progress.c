/* progress.c: the progress signal.  Every test run recognised in a tool
 * output (extract/testrun.c) is kept per session with the files edited
 * since the previous run; from them a moving average of the pass fraction,
 * the best so far, a no-improvement streak and the turn since which all
 * tests pass.  The block says, in a line or two, what an agent stuck in a
 * loop should hear: tests re-run with no edit, no improvement for a while,
 * or that everything passes.  Failing tests are mentioned as items
 * "test:<name>" so they stay in view while they fail. */
#include "progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../util/buf.h"
#include "../util/lit.h"

static void run_free(progress_run *r)
{
    free(r->command);
    for (size_t i = 0; i < r->n_failing; i++) free(r->failing[i]);
    free(r->failing);
    memset(r, 0, sizeof *r);
}

void progress_free(progress *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) run_free(&p->runs[i]);
    free(p->runs);
    free(p);
}

static progress *progress_new(void)
{
    progress *p = calloc(1, sizeof *p);
    if (p) p->green_since = -1;
    return p;
}

int progress_note_edit(session *s)
{
    if (s->progress) s->progress->edited = 1; /* before any run: nothing to compare */
    return CLARITY_OK;
}

/* Whether name is one of the n names of list, whatever its case.  The
 * lengths first: this runs on every tool call of every turn, and a name
 * usually has the length of none or one of them. */
static int name_in(const char *name, size_t len, const util_lit *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i].n == len && !strncasecmp(name, list[i].s, len)) return 1;
    return 0;
}
#define NAME_IN(name, len, list) name_in(name, len, list, sizeof list / sizeof *list)

int progress_is_edit(const char *tool_name, const char *args_json)
{
    static const util_lit editors[] = {UTIL_LIT("edit"),           UTIL_LIT("multiedit"),   UTIL_LIT("write"),
                                       UTIL_LIT("notebookedit"),   UTIL_LIT("apply_patch"), UTIL_LIT("create_file"),
                                       UTIL_LIT("edit_file"),      UTIL_LIT("write_file"),  UTIL_LIT("replace_in_file"),
                                       UTIL_LIT("patch")};
    static const util_lit views_too[] = {UTIL_LIT("str_replace_editor"), UTIL_LIT("str_replace_based_edit_tool")};
    if (!tool_name) return 0;
    size_t len = strlen(tool_name);
    if (NAME_IN(tool_name, len, editors)) return 1;
    if (NAME_IN(tool_name, len, views_too)) {
        /* one tool for viewing and editing: its "command" says which */
        static const char *const key[] = {"command"};
        buf cmd;
        buf_init(&cmd);
        int edit = extract_json_member(args_json, key, 1, &cmd) == 1 && strcmp(cmd.p, "view") != 0;
        buf_free(&cmd);
        return edit;
    }
    return 0;
}

static char *dup_cut(const char *s, size_t max);

char *progress_command(const char *tool_name, const char *args_json)
{
    static const util_lit shells[] = {UTIL_LIT("bash"),        UTIL_LIT("shell"),           UTIL_LIT("exec"),
                                      UTIL_LIT("terminal"),    UTIL_LIT("run_command"),     UTIL_LIT("execute_command"),
                                      UTIL_LIT("run_terminal_cmd"), UTIL_LIT("local_shell")};
    if (!tool_name) return NULL;
    if (NAME_IN(tool_name, strlen(tool_name), shells) && args_json) { /* the command line, not the tool's name */
        static const char *const keys[] = {"command", "cmd"};
        buf cmd;
        buf_init(&cmd);
        char *out = extract_json_member(args_json, keys, 2, &cmd) == 1 ? dup_cut(cmd.p, PROGRESS_COMMAND_MAX) : NULL;
        buf_free(&cmd);
        if (out) return out;
    }
    return dup_cut(tool_name, PROGRESS_COMMAND_MAX);
}

static char *dup_cut(const char *s, size_t max)
{
    if (!s) return NULL;
    size_t n = strlen(s);
    if (n > max) n = util_utf8_cut(s, max);
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* A run from a parse; NULL members where memory ran out of it. */
static int run_make(progress_run *r, int64_t turn, const char *command, const testrun *tr, int edits)
{
    memset(r, 0, sizeof *r);
    r->turn = turn;
    r->passed = tr->passed;
    r->failed = tr->failed;
    r->edits = edits;
    if (command && !(r->command = dup_cut(command, PROGRESS_COMMAND_MAX))) return CLARITY_ENOMEM;
    if (tr->n_failing) {
        r->failing = calloc(tr->n_failing, sizeof *r->failing);
        if (!r->failing) return run_free(r), CLARITY_ENOMEM;
        for (size_t i = 0; i < tr->n_failing; i++) {
            if (!(r->failing[i] = strdup(tr->failing[i]))) return run_free(r), CLARITY_ENOMEM;
            r->n_failing++;
        }
    }
    return CLARITY_OK;
}

/* The trend after one more run of pass fraction frac. */
static void advance(const engine *e, progress *p, const progress_run *r)
{
    double total = (double)(r->passed + r->failed), frac = r->passed / total;
    double a = e->cfg.progress.ema_alpha;
    p->ema = p->total == 0 ? frac : a * frac + (1 - a) * p->ema;
    if (p->total == 0 || frac > p->best + 1e-12) {
        p->best = frac;
        p->best_passed = r->passed;
        p->best_total = r->passed + r->failed;
        p->best_turn = r->turn;
        p->streak = 0;
    } else {
        p->streak++;
    }
    if (r->failed > 0) p->green_since = -1;
    else if (p->green_since < 0) p->green_since = r->turn;
    p->edited = 0;
    p->total++;
}

static int push_run(const engine *e, progress *p, progress_run *r)
{
    size_t max = (size_t)e->cfg.progress.history_runs;
    if (p->n == max) { /* the oldest goes */
        run_free(&p->runs[0]);
        memmove(p->runs, p->runs + 1, (p->n - 1) * sizeof *p->runs);
        p->n--;
    } else {
        progress_run *v = realloc(p->runs, (p->n + 1) * sizeof *v);
        if (!v) return CLARITY_ENOMEM;
        p->runs = v;
    }
    p->runs[p->n++] = *r;
    return CLARITY_OK;
}

static void mention_failing(engine *e, session *s, const testrun *tr)
{
    int64_t now = engine_now_ms(e);
    char id[TESTRUN_NAME_MAX + 8];
    for (size_t i = 0; i < tr->n_failing; i++) {
        snprintf(id, sizeof id, "test:%s", tr->failing[i]);
        tracker_mention(&s->t, id, CAT_TEST, now); /* out of memory: the item is skipped */
    }
}

int progress_output(engine *e, session *s, int64_t turn, const char *tool_name, const char *args_json,
                    const char *text, size_t len, int *recognised)
{
    *recognised = 0;
    testrun tr;
    if (!e->cfg.progress.enabled || !text || !testrun_parse(text, len, &tr)) return CLARITY_OK;
    if (!s->progress && !(s->progress = progress_new())) return CLARITY_ENOMEM;
    progress *p = s->progress;
    progress_run r;
    char *command = progress_command(tool_name, args_json); /* only for a run: its arguments parsed here */
    int rc = run_make(&r, turn, command, &tr, p->total ? p->edited : -1);
    free(command);
    if (rc != CLARITY_OK) return CLARITY_ENOMEM;
    if (push_run(e, p, &r) != CLARITY_OK) {
        run_free(&r);
        return CLARITY_ENOMEM;
    }
    advance(e, p, &r);
    mention_failing(e, s, &tr);
    s->t.meta_dirty = 1;
    *recognised = 1;
    return CLARITY_OK;
}

/* ---- the block ------------------------------------------------------- */

static int same_failures(const progress_run *a, const progress_run *b)
{
    if (a->failed != b->failed || a->n_failing != b->n_failing) return 0;
    for (size_t i = 0; i < a->n_failing; i++)
        if (strcmp(a->failing[i], b->failing[i]) != 0) return 0;
    return 1;
}

static void names(const engine *e, const progress_run *r, buf *out)
{
    size_t k = (size_t)e->cfg.progress.block_names;
    if (k == 0 || r->n_failing == 0) return;
    buf_puts(out, " (");
    for (size_t i = 0; i < r->n_failing && i < k; i++) buf_printf(out, "%s%.80s", i ? ", " : "", r->failing[i]);
    buf_puts(out, r->n_failing > k || (int64_t)r->n_failing < r->failed ? ", \xE2\x80\xA6)" : ")");
}

void progress_block_lines(const engine *e, const session *s, buf *out, size_t max_len)
{
    const progress *p = s->progress;
    if (!e->cfg.progress.enabled || !p || p->n == 0) return;
    const progress_run *last = &p->runs[p->n - 1];
    size_t start = out->len;
    if (last->failed == 0) {
        buf_printf(out, "\xE2\x9C\x94 all %lld tests pass since turn %lld\n", (long long)last->passed,
                   (long long)p->green_since);
    } else {
        if (p->n >= 2 && last->edits == 0) { /* ⟳ */
            buf_printf(out, "\xE2\x9F\xB3 tests re-run with no edit since the last run: %s%lld failure%s",
                       same_failures(last, &p->runs[p->n - 2]) ? "same " : "", (long long)last->failed,
                       last->failed == 1 ? "" : "s");
            names(e, last, out);
            buf_putc(out, '\n');
        }
        if (p->streak >= e->cfg.progress.streak_runs)
            buf_printf(out, "no improvement in %lld runs (best %lld/%lld at turn %lld)\n",
                       (long long)p->streak, (long long)p->best_passed, (long long)p->best_total,
                       (long long)p->best_turn);
    }
    if (out->len - start > max_len) out->len = start; /* all or nothing */
}

/* ---- JSON: the RPC answer and the stored form -------------------------- */

int progress_json(const session *s, int with_session, buf *out)
{
    const progress *p = s->progress;
    buf_putc(out, '{');
    if (with_session) {
        buf_puts(out, "\"session\":");
        buf_json_str(out, s->id, strlen(s->id));
        buf_putc(out, ',');
    }
    buf_puts(out, "\"runs\":[");
    for (size_t i = 0; p && i < p->n; i++) {
        const progress_run *r = &p->runs[i];
        buf_printf(out, "%s{\"turn\":%lld,\"command\":", i ? "," : "", (long long)r->turn);
        if (r->command) buf_json_str(out, r->command, strlen(r->command));
        else buf_puts(out, "null");
        buf_printf(out, ",\"passed\":%lld,\"failed\":%lld,\"failing\":[", (long long)r->passed,
                   (long long)r->failed);
        for (size_t k = 0; k < r->n_failing; k++) {
            if (k) buf_putc(out, ',');
            buf_json_str(out, r->failing[k], strlen(r->failing[k]));
        }
        buf_printf(out, "],\"editsSincePrevious\":%s}",
                   r->edits < 0 ? "null" : r->edits ? "true" : "false");
    }
    buf_putc(out, ']');
    if (p && p->total) {
        buf_printf(out, ",\"totalRuns\":%lld,\"ema\":%.6g,\"best\":%.6g,\"bestPassed\":%lld,"
                        "\"bestTotal\":%lld,\"bestTurn\":%lld,\"noImprovementStreak\":%lld,"
                        "\"editedSinceLastRun\":%s,\"allPassSinceTurn\":",
                   (long long)p->total, p->ema, p->best, (long long)p->best_passed,
                   (long long)p->best_total, (long long)p->best_turn, (long long)p->streak,
                   p->edited ? "true" : "false");
        if (p->green_since >= 0) buf_printf(out, "%lld", (long long)p->green_since);
        else buf_puts(out, "null");
    } else {
        buf_puts(out, ",\"totalRuns\":0,\"ema\":null,\"best\":null,\"noImprovementStreak\":0");
    }
    buf_putc(out, '}');
    return buf_failed(out) ? CLARITY_ENOMEM : CLARITY_OK;
}

/* An integer member in [lo, hi]; 0, or -1 with *err naming it. */
static int get_int(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out, char **err)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        *err = util_format("progress.%s must be an integer in %lld..%lld", key, (long long)lo,
                           (long long)hi);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

static int get_frac(const json_t *o, const char *key, double *out, char **err)
{
    json_t *v = json_object_get(o, key);
    double d = json_number_value(v);
    if (!json_is_number(v) || !(d >= 0 && d <= 1)) {
        *err = util_format("progress.%s must be a number in 0..1", key);
        return -1;
    }
    *out = d;
    return 0;
}

static int load_run(const json_t *o, progress_run *r, char **err)
{
    memset(r, 0, sizeof *r);
    int64_t turn, passed, failed;
    if (!json_is_object(o) || get_int(o, "turn", 0, TRACKER_TURN_MAX, &turn, err) ||
        get_int(o, "passed", 0, TRACKER_COUNT_MAX, &passed, err) ||
        get_int(o, "failed", 0, TRACKER_COUNT_MAX, &failed, err))
        return *err ? -1 : (*err = util_format("progress.runs: an entry is not an object"), -1);
    if (passed + failed == 0) return *err = util_format("progress.runs: a run of no tests"), -1;
    r->turn = turn, r->passed = passed, r->failed = failed;
    json_t *e = json_object_get(o, "editsSincePrevious");
    r->edits = json_is_boolean(e) ? json_is_true(e) : -1;
    const json_t *f = json_object_get(o, "failing");
    size_t n = json_array_size(f), i;
    if (n > TESTRUN_MAX_FAILING) return *err = util_format("progress.runs: too many failing names"), -1;
    const char *cmd = json_string_value(json_object_get(o, "command"));
    if (cmd && !(r->command = dup_cut(cmd, PROGRESS_COMMAND_MAX))) return -1;
    r->failing = n ? calloc(n, sizeof *r->failing) : NULL;
    if (n && !r->failing) return run_free(r), -1;
    json_t *v;
    json_array_foreach(f, i, v) {
        const char *name = json_string_value(v);
        if (!name || strlen(name) >= TESTRUN_NAME_MAX) {
            run_free(r);
            return *err = util_format("progress.runs: a failing name is not a string of under %d bytes",
                                      TESTRUN_NAME_MAX), -1;
        }
        if (!(r->failing[r->n_failing] = strdup(name))) return run_free(r), -1;
        r->n_failing++;
    }
    return 0;
}

int progress_load(const engine *e, session *s, const json_t *stored, char **err)
{
    *err = NULL;
    progress_free(s->progress);
    s->progress = NULL;
    if (!stored || json_is_null(stored)) return CLARITY_OK;
    progress *p = progress_new();
    if (!p) return CLARITY_ENOMEM;
    int64_t total = 0, streak = 0, bt = 0, bp = 0, btot = 0;
    const json_t *runs = json_object_get(stored, "runs");
    int bad = 0;
    if (!json_is_object(stored) || !json_is_array(runs)) {
        *err = util_format("progress must be an object with a runs array");
        bad = 1;
    }
    if (!bad) bad = get_int(stored, "totalRuns", 0, TRACKER_COUNT_MAX, &total, err);
    if (!bad && total > 0)
        bad = get_frac(stored, "ema", &p->ema, err) || get_frac(stored, "best", &p->best, err) ||
              get_int(stored, "noImprovementStreak", 0, total, &streak, err) ||
              get_int(stored, "bestTurn", 0, TRACKER_TURN_MAX, &bt, err) ||
              get_int(stored, "bestPassed", 0, TRACKER_COUNT_MAX, &bp, err) ||
              get_int(stored, "bestTotal", 0, TRACKER_COUNT_MAX, &btot, err);
    size_t n = json_array_size(runs), i;
    if (!bad && (n > (size_t)total || n > 200)) {
        *err = util_format("progress.runs: %zu runs, more than totalRuns (%lld)", n, (long long)total);
        bad = 1;
    }
    if (!bad && n && !(p->runs = calloc(n, sizeof *p->runs))) bad = 1;
    json_t *v;
    json_array_foreach(runs, i, v) {
        if (bad || load_run(v, &p->runs[p->n], err) != 0) {
            bad = 1;
            break;
        }
        p->n++;
    }
    if (bad) {
        progress_free(p);
        if (!*err) return CLARITY_ENOMEM;
        return CLARITY_ESTORE;
    }
    int64_t green = -1;
    json_t *g = json_object_get(stored, "allPassSinceTurn");
    if (json_is_integer(g) && json_integer_value(g) >= 0 && json_integer_value(g) <= TRACKER_TURN_MAX)
        green = json_integer_value(g);
    p->total = total, p->streak = streak, p->best_turn = bt, p->best_passed = bp, p->best_total = btot;
    p->green_since = green;
    p->edited = json_is_true(json_object_get(stored, "editedSinceLastRun"));
    /* keep at most what the config keeps now */
    while (p->n > (size_t)e->cfg.progress.history_runs) {
        run_free(&p->runs[0]);
        memmove(p->runs, p->runs + 1, (p->n - 1) * sizeof *p->runs);
        p->n--;
    }
    s->progress = p;
    return CLARITY_OK;
}

/* ---- /clarity progress -------------------------------------------------- */

void progress_text(const engine *e, const session *s, buf *out)
{
    const progress *p = s->progress;
    if (!e->cfg.progress.enabled) buf_puts(out, "The progress signal is off (progress.enabled).\n");
    if (!p || p->total == 0) {
        buf_puts(out, "No test run recognised in this session yet (pytest, unittest, Jest, Vitest, "
                      "go test, cargo test, Mocha, or a \"N passed, N failed\" line).\n");
        return;
    }
    const progress_run *last = &p->runs[p->n - 1];
    buf_printf(out, "Test runs: %lld; pass rate now %lld/%lld, moving average %.2f, best %lld/%lld at turn %lld\n",
               (long long)p->total, (long long)last->passed, (long long)(last->passed + last->failed),
               p->ema, (long long)p->best_passed, (long long)p->best_total, (long long)p->best_turn);
    if (p->green_since >= 0) buf_printf(out, "All tests pass since turn %lld\n", (long long)p->green_since);
    else buf_printf(out, "No improvement in %lld run%s; %s since the latest run\n", (long long)p->streak,
                    p->streak == 1 ? "" : "s", p->edited ? "files edited" : "no edit");
    buf_puts(out, "  turn  passed  failed  edits  command\n");
    for (size_t i = 0; i < p->n; i++) {
        const progress_run *r = &p->runs[i];
        buf_printf(out, "%6lld %7lld %7lld  %-5s  %.60s\n", (long long)r->turn, (long long)r->passed,
                   (long long)r->failed, r->edits < 0 ? "-" : r->edits ? "yes" : "no",
                   r->command ? r->command : "?");
    }
    if (last->n_failing) {
        buf_puts(out, "Failing now:");
        for (size_t i = 0; i < last->n_failing; i++) buf_printf(out, "%s %s", i ? "," : "", last->failing[i]);
        buf_putc(out, '\n');
    }
}
