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
#include "hostsvc.h"
#include "loader.h"

static const char usage[] =
    "usage: clarity graph build REPO [--regex] [--max-commits N] [--no-learn] [--json]\n"
    "                           [--plugin PATH]\n"
    "       clarity predict REPO \"prompt\" [-k N] [--json] [--repeat N] [--no-refresh]\n"
    "                       [--plugin PATH]\n";

static int call(const char *plugin, const char *method, json_t *params, json_t **out)
{
    hostsvc *hs = NULL;
    char *err = NULL;
    loader L;
    memset(&L, 0, sizeof L);
    if (hostsvc_new(CLARITY_LOG_WARN, NULL, &hs, &err) != 0) {
        fprintf(stderr, "clarity: %s\n", err ? err : "host services");
        free(err);
        return EXIT_FAIL;
    }
    clarity_host host;
    hostsvc_fill(hs, &host);
    if (loader_open(&L, plugin, &host, "{\"storage\":{\"backend\":\"memory\"}}", &err) != 0) {
        fprintf(stderr, "clarity: %s\n", err ? err : "cannot load the plugin");
        free(err);
        hostsvc_free(hs);
        return EXIT_FAIL;
    }
    char *p = json_dumps(params, JSON_COMPACT);
    clarity_result res;
    int rc = p ? loader_rpc(&L, method, p, &res) : CLARITY_ENOMEM;
    free(p);
    int ex = EXIT_OK;
    if (rc < 0) {
        fprintf(stderr, "clarity: %s: %s\n", method, loader_errtext(&L, rc, &res));
        ex = EXIT_PLUGIN;
    } else {
        *out = res.data ? json_loads(res.data, 0, NULL) : NULL;
        if (!*out) ex = EXIT_PLUGIN;
    }
    loader_release(&L, &res);
    loader_close(&L);
    hostsvc_free(hs);
    return ex;
}

static int positive(const char *s, long max, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 0 || v > max) return -1;
    *out = v;
    return 0;
}

int graphcmd_main(int argc, char **argv)
{
    const char *plugin = NULL, *args[3] = {0};
    int nargs = 0, json = 0, regex = 0, no_refresh = 0, no_learn = 0;
    long k = 10, max_commits = -1, repeat = 0;
    int predict = strcmp(argv[1], "predict") == 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) json = 1;
        else if (strcmp(a, "--regex") == 0 && !predict) regex = 1;
        else if (strcmp(a, "--no-learn") == 0 && !predict) no_learn = 1;
        else if (strcmp(a, "--no-refresh") == 0 && predict) no_refresh = 1;
        else if ((strcmp(a, "-k") == 0 || strcmp(a, "--k") == 0) && predict && i + 1 < argc) {
            if (positive(argv[++i], 1000, &k) != 0 || k == 0) {
                fprintf(stderr, "clarity: -k needs a number in 1..1000\n%s", usage);
                return EXIT_USAGE;
            }
        } else if (strcmp(a, "--repeat") == 0 && predict && i + 1 < argc) {
            if (positive(argv[++i], 100000, &repeat) != 0) return EXIT_USAGE;
        } else if (strcmp(a, "--max-commits") == 0 && !predict && i + 1 < argc) {
            if (positive(argv[++i], 100000000, &max_commits) != 0) return EXIT_USAGE;
        } else if (strcmp(a, "--plugin") == 0 && i + 1 < argc) {
            plugin = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "clarity: unknown option %s\n%s", a, usage);
            return EXIT_USAGE;
        } else if (nargs < 3) {
            args[nargs++] = a;
        } else {
            fputs(usage, stderr);
            return EXIT_USAGE;
        }
    }
    json_t *params = json_object(), *out = NULL;
    int ex;
    if (predict) {
        if (nargs != 2) {
            fputs(usage, stderr);
            json_decref(params);
            return EXIT_USAGE;
        }
        json_object_set_new(params, "repo", json_string(args[0]));
        json_object_set_new(params, "prompt", json_string(args[1]));
        json_object_set_new(params, "k", json_integer(k));
        if (repeat > 1) json_object_set_new(params, "repeat", json_integer(repeat));
        if (no_refresh) json_object_set_new(params, "refresh", json_false());
        ex = call(plugin, "clarity.predict", params, &out);
        json_t *rf = ex == EXIT_OK ? json_object_get(out, "refreshed") : NULL;
        if (rf)
            fprintf(stderr, "clarity: the graph was stale: refreshed (%lld files parsed, %lld "
                            "commits read, %.0f ms)\n",
                    (long long)json_integer_value(json_object_get(rf, "parsed")),
                    (long long)json_integer_value(json_object_get(rf, "commits")),
                    json_real_value(json_object_get(rf, "ms")));
        if (ex == EXIT_OK && json_is_true(json_object_get(out, "stale")))
            fprintf(stderr, "clarity: warning: the graph of %s is stale (HEAD moved or files "
                            "changed since it was built); run `clarity graph build %s`\n",
                    args[0], args[0]);
        if (ex == EXIT_OK && json) {
            char *s = json_dumps(out, JSON_COMPACT);
            if (s) puts(s);
            free(s);
        } else if (ex == EXIT_OK) {
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
    } else {
        if (nargs != 2 || strcmp(args[0], "build") != 0) {
            fputs(usage, stderr);
            json_decref(params);
            return EXIT_USAGE;
        }
        json_object_set_new(params, "repo", json_string(args[1]));
        if (regex) json_object_set_new(params, "parser", json_string("regex"));
        if (no_learn) json_object_set_new(params, "learn", json_false());
        if (max_commits >= 0) json_object_set_new(params, "maxCommits", json_integer(max_commits));
        json_object_set_new(params, "progress", json_boolean(isatty(2)));
        ex = call(plugin, "clarity.graphBuild", params, &out);
        if (ex == EXIT_OK) {
            if (json) {
                char *s = json_dumps(out, JSON_COMPACT);
                if (s) puts(s);
                free(s);
            } else {
                printf("%s graph of %s: %lld files (%lld parsed, %lld removed), %lld symbols, "
                       "%lld/%lld imports resolved, %lld commits read, %lld co-change pairs, "
                       "%.0f ms\n",
                       json_is_true(json_object_get(out, "full")) ? "built" : "refreshed", args[1],
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
                           json_is_true(json_object_get(fu, "enabled"))
                               ? "used for predictions"
                               : "not better, predictions keep the defaults");
            }
        }
    }
    json_decref(out);
    json_decref(params);
    return ex;
}
