/* cache.h: an engine's loaded code graphs (cache.c), for the RPC methods
 * of api.c.  The hooks' side of the cache is in graph.h (graph_engine_*). */
#ifndef GRAPH_CACHE_H
#define GRAPH_CACHE_H

#include "index.h"

typedef struct centry centry;

/* What gcache_acquire found and did. */
typedef struct acq_info {
    int stale;     /* the index is older than the repository (last check) */
    int refreshed; /* this call refreshed the cache: st */
    graph_build_stats st;
} acq_info;

/* The locked entry of repo with a loaded index, or NULL (message in *err,
 * or none when repo has no graph and !build_if_missing).  Waits for a
 * background load of repo first.  A stale cache (checked at most every
 * GRAPH_RECHECK_MS) is refreshed first unless !refresh; a missing one is
 * built when build_if_missing.  Runs on the calling thread: an RPC call
 * is a question the caller waits for. */
centry *gcache_acquire(graph_cache *gc, const char *repo, int build_if_missing, int refresh, char **err,
                       acq_info *ai);
/* The entry's index; valid until gcache_release. */
graph_index *gcache_index(const centry *c);
void gcache_release(graph_cache *gc, centry *c);
/* graph_build of repo (canonical) through the cache: its loaded index is
 * dropped (the next use loads the new one) and no workspace is remembered
 * as having no graph. */
int gcache_build(graph_cache *gc, const char *repo, const graph_build_opts *o, graph_build_stats *st,
                 char **err);
/* An incremental refresh of repo when it has a graph, its staleness check
 * is due (the clock predictions use) and it is stale; nothing is loaded. */
void gcache_refresh_if_due(graph_cache *gc, const char *repo);
/* repo made absolute with its links resolved, else a copy (malloc'ed). */
char *gcache_canon(const char *repo);

#endif
