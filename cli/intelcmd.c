/* intelcmd.c: `clarity zoom`, `clarity impact`, `clarity cochange`: the
 * code intelligence methods (clarity.zoom, clarity.impact,
 * clarity.cochange, graph/intel.c) from the command line.
 *
 *   clarity zoom REPO PATH [--level 0|1|2] [--json]
 *   clarity impact REPO SYMBOL [--file PATH] [--depth N] [--json]
 *   clarity cochange REPO PATH [-k N] [--json]
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "graphcmd.h"
#include "intelcmd.h"

/* Calls method; prints --json answers as they are.  A missing graph is said
 * on stderr (exit 1), an error of the plugin too (exit 2). */
static int call(cli *c, const char *method, json_t *params, json_t **out)
{
    int ex = graphcmd_call(c, method, params, out);
    if (ex != EXIT_OK) return ex;
    if (json_object_get(*out, "error")) {
        fprintf(stderr, "clarity: %s\n", json_string_value(json_object_get(*out, "message")));
        return EXIT_FAIL;
    }
    if (c->json) {
        char *s = json_dumps(*out, JSON_COMPACT);
        if (s) puts(s);
        free(s);
    }
    return EXIT_OK;
}

static void print_syms(json_t *syms, int indent)
{
    size_t i;
    json_t *s;
    json_array_foreach(syms, i, s) {
        const char *doc = json_string_value(json_object_get(s, "doc"));
        json_t *kids = json_object_get(s, "children");
        printf("%*s%s%s\n", indent, "", json_string_value(json_object_get(s, "signature")),
               kids || json_is_true(json_object_get(s, "exported")) || indent ? "" : "  (private)");
        if (doc && *doc) printf("%*s  %.200s%s\n", indent, "", doc, strlen(doc) > 200 ? "..." : "");
        const char *kind = json_string_value(json_object_get(s, "kind"));
        if (kids) print_syms(kids, indent + 4);
        else if (strcmp(kind, "function") == 0 || strcmp(kind, "method") == 0 || strcmp(kind, "class") == 0)
            printf("%*s    ...\n", indent, ""); /* the body, left out */
    }
}

int cli_zoom(cli *c, char **args, int n)
{
    (void)n;
    json_t *params = json_pack("{s:s,s:s,s:i}", "repo", args[0], "path", args[1], "level", c->level),
           *out = NULL;
    int ex = params ? call(c, "clarity.zoom", params, &out) : EXIT_FAIL;
    if (ex == EXIT_OK && !c->json) {
        json_t *content = json_object_get(out, "content"), *files = json_object_get(out, "files");
        if (content) {
            fputs(json_string_value(content), stdout);
        } else if (files) {
            size_t i;
            json_t *f;
            json_array_foreach(files, i, f) {
                printf("== %s\n", json_string_value(json_object_get(f, "path")));
                print_syms(json_object_get(f, "symbols"), 0);
            }
        } else {
            print_syms(json_object_get(out, "symbols"), 0);
        }
        if (json_is_true(json_object_get(out, "truncated"))) printf("[truncated]\n");
    }
    json_decref(out);
    json_decref(params);
    return ex;
}

static void print_callers(json_t *arr, int indent)
{
    size_t i;
    json_t *n;
    json_array_foreach(arr, i, n) {
        size_t calls = json_array_size(json_object_get(n, "callLines"));
        printf("%*s<- %s  %s:%lld (%s%s", indent, "", json_string_value(json_object_get(n, "name")),
               json_string_value(json_object_get(n, "path")),
               (long long)json_integer_value(json_object_get(n, "callLine")),
               json_string_value(json_object_get(n, "via")),
               json_is_true(json_object_get(n, "seen")) ? ", shown above" : "");
        if (calls > 1) printf(", %zu calls", calls);
        printf(")\n");
        print_callers(json_object_get(n, "callers"), indent + 3);
    }
}

int cli_impact(cli *c, char **args, int n)
{
    (void)n;
    json_t *params = json_pack("{s:s,s:s,s:i}", "repo", args[0], "symbol", args[1], "depth",
                               c->depth > 0 ? c->depth : 3),
           *out = NULL;
    if (params && c->file) json_object_set_new(params, "file", json_string(c->file));
    int ex = params ? call(c, "clarity.impact", params, &out) : EXIT_FAIL;
    if (ex == EXIT_OK && !c->json) {
        if (json_is_true(json_object_get(out, "ambiguous"))) {
            printf("%s is defined in several files; pick one with --file:\n", args[1]);
            size_t i;
            json_t *d;
            json_array_foreach(json_object_get(out, "candidates"), i, d)
                printf("  %s:%lld (%s)\n", json_string_value(json_object_get(d, "path")),
                       (long long)json_integer_value(json_object_get(d, "line")),
                       json_string_value(json_object_get(d, "kind")));
        } else {
            json_t *def = json_object_get(out, "definition");
            printf("%s  %s:%lld\n", args[1], json_string_value(json_object_get(def, "path")),
                   (long long)json_integer_value(json_object_get(def, "line")));
            print_callers(json_object_get(out, "callers"), 0);
            printf("(%lld callers to depth %lld%s; calls resolved %s)\n",
                   (long long)json_integer_value(json_object_get(out, "nodes")),
                   (long long)json_integer_value(json_object_get(out, "depth")),
                   json_is_true(json_object_get(out, "truncated")) ? ", truncated" : "",
                   json_string_value(json_object_get(out, "resolution")));
        }
    }
    json_decref(out);
    json_decref(params);
    return ex;
}

int cli_cochange(cli *c, char **args, int n)
{
    (void)n;
    json_t *params = json_pack("{s:s,s:s,s:i}", "repo", args[0], "path", args[1], "k", c->k > 0 ? c->k : 20),
           *out = NULL;
    int ex = params ? call(c, "clarity.cochange", params, &out) : EXIT_FAIL;
    if (ex == EXIT_OK && !c->json) {
        long long of = json_integer_value(json_object_get(out, "commits"));
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(out, "neighbours"), i, f)
            printf("%6.3f  %4lld/%lld  %s\n", json_real_value(json_object_get(f, "score")),
                   (long long)json_integer_value(json_object_get(f, "commits")), of,
                   json_string_value(json_object_get(f, "path")));
        if (!json_array_size(json_object_get(out, "neighbours")))
            printf("no file changes together with %s in the history read\n", args[1]);
    }
    json_decref(out);
    json_decref(params);
    return ex;
}
