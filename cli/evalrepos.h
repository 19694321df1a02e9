/* evalrepos.h: workspaces for `clarity eval --repos DIR` (evalrepos.c). */
#ifndef CLI_EVALREPOS_H
#define CLI_EVALREPOS_H

#include <stddef.h>

#include "cli.h"

typedef struct evr evr;

/* repos_dir and cache_dir must outlive the object. */
evr *evr_new(const char *repos_dir, const char *cache_dir);
void evr_free(evr *r);
/* Reads the corpus's meta lines: the sessions naming "repo" (owner/name)
 * and "base_commit".  Returns 0, or -1 (unreadable file, out of memory). */
int evr_scan(evr *r, const char *corpus);
/* Sessions with a repository and a commit in the corpus. */
size_t evr_count(const evr *r);
/* The workspace of a session: its clone at the base commit with the graph
 * built (prepared on first use through c's plugin), or NULL (no
 * repository, or it could not be prepared: said on stderr once). */
const char *evr_workspace(evr *r, cli *c, const char *session);
/* Sessions whose workspace is ready. */
size_t evr_prepared(const evr *r);

#endif
