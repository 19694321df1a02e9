/* gitrepo.h: small git repositories made by tests (fixed identity, no
 * user or system git config, fixed commit dates). */
#ifndef TESTS_GITREPO_H
#define TESTS_GITREPO_H

/* A new temporary directory (runproc_mkdtemp) holding an empty
 * repository, or NULL.  The caller frees the path. */
char *gitrepo_new(const char *prefix);
/* Runs a shell command in dir (HOME = dir); returns its exit status. */
int gitrepo_sh(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes dir/rel (parent directories made); 0 on success. */
int gitrepo_write(const char *dir, const char *rel, const char *text);
/* Commits everything at a fixed date (seconds since the epoch); msg must
 * not contain a single quote.  Returns the exit status. */
int gitrepo_commit(const char *dir, long when, const char *msg);

#endif
