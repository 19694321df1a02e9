/* fuzz_testrun: test-run recognition (extract/testrun.c) on arbitrary bytes.
 * Invariants: no crash; a recognised run has a runner, counts >= 0 with at
 * least one test, at most TESTRUN_MAX_FAILING distinct non-empty names
 * shorter than TESTRUN_NAME_MAX; an unrecognised one names nothing; the
 * same bytes give the same answer, and the same as the parser without its
 * line prefilter (every line through the whole path). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../extract/testrun.h"

#define TESTRUN_NO_PREFILTER
#define testrun_parse testrun_parse_whole
#define testrun_runner_name testrun_runner_name_whole
#include "../extract/testrun.c"
#undef testrun_parse
#undef testrun_runner_name

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static testrun a, b;
    int ra = testrun_parse((const char *)data, size, &a);
    int rb = testrun_parse((const char *)data, size, &b);
    if (ra != rb || !testrun_equal(&a, &b)) abort();
    rb = testrun_parse_whole((const char *)data, size, &b);
    if (ra != rb || !testrun_equal(&a, &b)) abort();
    if (!ra) {
        if (a.runner != TR_NONE || a.n_failing != 0) abort();
        return 0;
    }
    if (a.runner <= TR_NONE || a.runner > TR_PLAIN) abort();
    if (a.passed < 0 || a.failed < 0 || a.skipped < 0 || a.passed + a.failed <= 0) abort();
    if (a.n_failing > TESTRUN_MAX_FAILING) abort();
    for (size_t i = 0; i < a.n_failing; i++) {
        size_t n = strnlen(a.failing[i], TESTRUN_NAME_MAX);
        if (n == 0 || n == TESTRUN_NAME_MAX) abort();
        for (size_t k = 0; k < i; k++)
            if (strcmp(a.failing[i], a.failing[k]) == 0) abort();
    }
    return 0;
}
