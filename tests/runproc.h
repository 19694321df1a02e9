/* runproc.h: run a program with some stdin, capture stdout, stderr and the
 * exit status (test support; libc only). */
#ifndef TESTS_RUNPROC_H
#define TESTS_RUNPROC_H

#include <stddef.h>

typedef struct runproc_result {
    char *out; /* NUL-terminated captured stdout (never NULL after success) */
    size_t out_len;
    char *err; /* NUL-terminated captured stderr */
    size_t err_len;
    int status;    /* exit code, 128 + signal number when killed, -1 unknown */
    int timed_out; /* killed after timeout_ms */
} runproc_result;

/* Runs argv (argv[0] is searched in PATH when it has no '/') with env_extra
 * ("NAME=value" strings, NULL-terminated, may be NULL) added to the
 * environment.  stdin_data (may be NULL: empty stdin) is written to the
 * child's stdin, which is then closed.  timeout_ms 0 = no limit.  Returns 0,
 * or -1 when the process could not be started (out is zeroed). */
int runproc(const char *const argv[], const char *const env_extra[], const char *stdin_data,
            size_t stdin_len, int timeout_ms, runproc_result *out);
void runproc_free(runproc_result *r);

/* A fresh directory under $TMPDIR (or /tmp), malloc()ed, or NULL. */
char *runproc_mkdtemp(const char *prefix);
/* Removes a directory and everything in it (no symlinks followed). */
void runproc_rmtree(const char *dir);
/* Writes a file; returns 0 or -1. */
int runproc_write_file(const char *path, const char *text);
/* malloc()ed "a/b", or NULL. */
char *runproc_join(const char *a, const char *b);

#endif
