/* graphdb.h: reading and writing a repository's graph cache
 * (<repo>/.clarity/graph.db) in tests; they fail the running test on a
 * SQLite error. */
#ifndef TESTS_GRAPHDB_H
#define TESTS_GRAPHDB_H

/* The first column of the first row of sql, as an integer; -1 when no row. */
long long graphdb_int(const char *repo, const char *sql);
/* meta[key] (malloc'ed; the caller frees), or NULL. */
char *graphdb_meta(const char *repo, const char *key);
void graphdb_set_meta(const char *repo, const char *key, const char *value);
/* Runs sql (statements without rows) on the cache. */
void graphdb_exec(const char *repo, const char *sql);

#endif
