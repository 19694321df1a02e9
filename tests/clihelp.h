/* clihelp.h: running the clarity CLI from the adapter tests (test_hook.c,
 * test_install.c, test_mcp.c).  The build directory comes from
 * $CLARITY_BUILD (default "build"); tests run from the repository root. */
#ifndef TESTS_CLIHELP_H
#define TESTS_CLIHELP_H

#include <jansson.h>

#include "runproc.h"

/* Runs <build>/clarity with argv (NULL-terminated, without argv[0]), stdin
 * text (may be NULL) and extra environment ("NAME=value", NULL-terminated,
 * may be NULL).  Asserts that it ran and did not time out. */
void clihelp_run(runproc_result *r, const char *in, const char *const env[], const char *const argv[]);
/* The absolute path of <build>/clarity, malloc()ed. */
char *clihelp_exe(void);
/* Parses JSON text; asserts. */
json_t *clihelp_json(const char *text);
/* A whole file, malloc()ed (NULL when missing). */
char *clihelp_read(const char *path);
/* tests/fixtures/claude/<name> with "@FIXTURES@" replaced by that folder's
 * absolute path and "@TRANSCRIPT@" by transcript (may be NULL); asserts. */
char *clihelp_fixture(const char *name, const char *transcript);
/* Copies a file; asserts. */
void clihelp_copy(const char *from, const char *to);
/* Appends a file to another; asserts. */
void clihelp_append(const char *from, const char *to);

#endif
