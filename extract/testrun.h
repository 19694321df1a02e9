/* testrun.h: test runs recognised in a tool's output (testrun.c).
 *
 * A run counts only when a runner's summary line is recognised: pytest
 * ("== 3 failed, 41 passed in 1.2s =="), unittest ("Ran 44 tests" then
 * "OK" or "FAILED (failures=3)"), Jest ("Tests: 3 failed, 41 passed, 44
 * total"), Vitest ("Tests  3 failed | 41 passed (44)"), Go ("ok"/"FAIL"
 * package lines), cargo ("test result: ..."), Mocha ("41 passing (2s)"),
 * and the plain "N passed, N failed" line.  Anything else is not a run:
 * an unknown format is ignored, never guessed at.  Colours (ANSI escape
 * sequences) and carriage returns are ignored; a log cut before its
 * summary is not a run.
 */
#ifndef EXTRACT_TESTRUN_H
#define EXTRACT_TESTRUN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TESTRUN_MAX_FAILING 16 /* failing names kept per run */
#define TESTRUN_NAME_MAX 128   /* bytes of a name, NUL included */

enum testrun_runner {
    TR_NONE = 0,
    TR_PYTEST,
    TR_UNITTEST,
    TR_JEST,
    TR_VITEST,
    TR_GO,
    TR_CARGO,
    TR_MOCHA,
    TR_PLAIN
};

/* A slot of failing holds its name up to its NUL; the slots from
 * n_failing on, and the bytes past a name's NUL, are not written (compare
 * runs with testrun_equal, not memcmp). */
typedef struct testrun {
    int runner;             /* enum testrun_runner */
    int64_t passed, failed; /* failed includes errors */
    int64_t skipped;
    size_t n_failing;       /* distinct names, in order of appearance */
    char failing[TESTRUN_MAX_FAILING][TESTRUN_NAME_MAX];
} testrun;

/* Whether two runs say the same: counts, runner and names. */
static inline int testrun_equal(const testrun *a, const testrun *b)
{
    if (a->runner != b->runner || a->passed != b->passed || a->failed != b->failed ||
        a->skipped != b->skipped || a->n_failing != b->n_failing)
        return 0;
    for (size_t i = 0; i < a->n_failing; i++)
        if (strcmp(a->failing[i], b->failing[i]) != 0) return 0;
    return 1;
}

/* Reads text (any bytes).  Returns 1 and fills out when a run was
 * recognised with at least one test passed or failed, else 0. */
int testrun_parse(const char *text, size_t len, testrun *out);
const char *testrun_runner_name(int runner);

#endif
