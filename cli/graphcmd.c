/* graphcmd.c: `clarity graph build REPO` and `clarity predict REPO "prompt"`.
 *
 * Thin: both load the plugin (in-memory session store; the graph has its
 * own cache in the repository) and call its RPC methods clarity.graphBuild
 * and clarity.predict, so every host gets the same functionality.
 *
 *   clarity graph build REPO [--regex] [--max-commits N] [--no-learn] [--json]
 *   clarity predict REPO "prompt" [-k N] [--json] [--repeat N] [--no-refresh]
 *
 * --max-commits N reads the newest N commits (default 10,000; 0: the whole
 * history).  predict refreshes a stale graph first (and says so on stderr); with
 * --no-refresh it answers from the graph as it is and warns that it is
 * stale.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "graphcmd.h"

int graphcmd_call(cli *c, const char *method, json_t *params, json_t **out)
{
    char *p = json_dumps(params, JSON_COMPACT);
    clarity_result res;
    int rc = p ? loader_rpc(&c->L, method, p, &res) : CLARITY_ENOMEM;
    free(p);
    int ex = EXIT_OK;
    if (rc < 0) {
        fprintf(stderr, "clarity: %s: %s\n", method, loader_errtext(&c->L, rc, &res));
        ex = EXIT_PLUGIN;
    } else {
        *out = res.data ? json_loads(res.data, 0, NULL) : NULL;
        if (!*out) ex = EXIT_PLUGIN;
    }
    loader_release(&c->L, &res);
    return ex;
}

static void print_json(json_t *out)
{
    char *s = json_dumps(out, JSON_COMPACT);
    if (s) puts(s);
    free(s);
}

static void print_files(json_t *out)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(out, "files"), i, f) {
        printf("%6.3f  %s", json_real_value(json_object_get(f, "score")),
               json_string_value(json_object_get(f, "path")));
        size_t j;
        json_t *s;
        json_array_foreach(json_object_get(f, "symbols"), j, s)
            printf("%s%s:%lld", j ? ", " : "  ", json_string_value(json_object_get(s, "name")),
                   (long long)json_integer_value(json_object_get(s, "line")));
        putchar('\n');
    }
    printf("(%.2f ms)\n", json_real_value(json_object_get(out, "ms")));
}

/* What a refresh or a stale graph means for the answer, on stderr. */
static void say_staleness(json_t *out, const char *repo)
{
    json_t *rf = json_object_get(out, "refreshed");
    if (rf)
        fprintf(stderr, "clarity: the graph was stale: refreshed (%lld files parsed, %lld "
                        "commits read, %.0f ms)\n",
                (long long)json_integer_value(json_object_get(rf, "parsed")),
                (long long)json_integer_value(json_object_get(rf, "commits")),
                json_real_value(json_object_get(rf, "ms")));
    if (json_is_true(json_object_get(out, "stale")))
        fprintf(stderr, "clarity: warning: the graph of %s is stale (HEAD moved or files "
                        "changed since it was built); run `clarity graph build %s`\n",
                repo, repo);
}

int cli_predict(cli *c, char **args, int n)
{
    (void)n;
    json_t *params = json_pack("{s:s,s:s,s:I}", "repo", args[0], "prompt", args[1], "k",
                               (json_int_t)(c->k > 0 ? c->k : 10)),
           *out = NULL;
    if (!params) return EXIT_FAIL;
    if (c->repeat > 1) json_object_set_new(params, "repeat", json_integer(c->repeat));
    if (c->no_refresh) json_object_set_new(params, "refresh", json_false());
    int ex = graphcmd_call(c, "clarity.predict", params, &out);
    if (ex == EXIT_OK) {
        say_staleness(out, args[0]);
        if (c->json) print_json(out);
        else print_files(out);
    }
    json_decref(out);
    json_decref(params);
    return ex;
}

static void print_build(json_t *out, const char *repo)
{
    printf("%s graph of %s: %lld files (%lld parsed, %lld removed), %lld symbols, "
           "%lld/%lld imports resolved, %lld commits read, %lld co-change pairs, %.0f ms\n",
           json_is_true(json_object_get(out, "full")) ? "built" : "refreshed", repo,
           (long long)json_integer_value(json_object_get(out, "files")),
           (long long)json_integer_value(json_object_get(out, "parsed")),
           (long long)json_integer_value(json_object_get(out, "removed")),
           (long long)json_integer_value(json_object_get(out, "symbols")),
           (long long)json_integer_value(json_object_get(out, "resolved")),
           (long long)json_integer_value(json_object_get(out, "imports")),
           (long long)json_integer_value(json_object_get(out, "commits")),
           (long long)json_integer_value(json_object_get(out, "pairs")),
           json_real_value(json_object_get(out, "ms")));
    json_t *fu = json_object_get(out, "fusion");
    if (fu)
        printf("learned fusion: trained on %lld commits; on the newest %lld, MRR %.3f "
               "with the defaults, %.3f learned: %s\n",
               (long long)json_integer_value(json_object_get(fu, "commits")),
               (long long)json_integer_value(json_object_get(fu, "heldOut")),
               json_real_value(json_object_get(fu, "mrrDefault")),
               json_real_value(json_object_get(fu, "mrrLearned")),
               json_is_true(json_object_get(fu, "enabled")) ? "used for predictions"
                                                            : "not better, predictions keep the defaults");
}

int cli_graph(cli *c, char **args, int n)
{
    (void)n;
    if (strcmp(args[0], "build") != 0) {
        fprintf(stderr, "clarity: unknown graph command '%s' (clarity graph build REPO)\n", args[0]);
        return EXIT_USAGE;
    }
    json_t *params = json_pack("{s:s,s:b}", "repo", args[1], "progress", isatty(2)), *out = NULL;
    if (!params) return EXIT_FAIL;
    if (c->regex) json_object_set_new(params, "parser", json_string("regex"));
    if (c->no_learn) json_object_set_new(params, "learn", json_false());
    if (c->max_commits >= 0) json_object_set_new(params, "maxCommits", json_integer(c->max_commits));
    int ex = graphcmd_call(c, "clarity.graphBuild", params, &out);
    if (ex == EXIT_OK && c->json) print_json(out);
    else if (ex == EXIT_OK) print_build(out, args[1]);
    json_decref(out);
    json_decref(params);
    return ex;
}
