/* none.c: the graph API of a build without graph support (the fuzz
 * harnesses, or a build that leaves graph/ out): linked instead of the
 * module, so every caller compiles against graph.h and the compiler checks
 * the signatures.  Nothing is ever predicted; the graph RPC methods are
 * unknown. */
#include <stdlib.h>

#include "../include/clarity.h"
#include "graph.h"

struct graph_cache {
    int unused;
};

graph_cache *graph_cache_new(void)
{
    return calloc(1, sizeof(graph_cache));
}

void graph_cache_free(graph_cache *gc)
{
    free(gc);
}

int graph_rpc_call(graph_cache *gc, const char *method, const char *params_json, buf *out,
                   char **msg)
{
    (void)gc, (void)method, (void)params_json, (void)out;
    *msg = util_strdup("this build of clarity has no code graph support");
    return CLARITY_ENOTFOUND;
}

int graph_engine_predict(graph_cache *gc, const char *repo, int auto_refresh, int wait_ms, const char *prompt,
                         size_t len, size_t k, graph_pred_cb cb, void *ud)
{
    (void)gc, (void)repo, (void)auto_refresh, (void)wait_ms, (void)prompt, (void)len, (void)k, (void)cb, (void)ud;
    return -1;
}

int graph_engine_cochange(graph_cache *gc, const char *repo, const char *rel, size_t k, graph_partner *out,
                          size_t *n)
{
    (void)gc, (void)repo, (void)rel, (void)k, (void)out;
    *n = 0;
    return 0;
}

int graph_engine_has_graph(graph_cache *gc, const char *repo)
{
    (void)gc, (void)repo;
    return 0;
}
