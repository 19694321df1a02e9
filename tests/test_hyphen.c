/* The byte scan for hyphenated names must find exactly what the regex it
 * replaces finds: (?<![\w/.-])[a-z]++(?:-[a-z]++){1,32}+(?![\w/-]|\.\w) */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <criterion/criterion.h>
#include <pcre2.h>
#include <stdlib.h>

#include "../extract/internal.h"

static const char PATTERN[] = "(?<![\\w/.-])[a-z]++(?:-[a-z]++){1,32}+(?![\\w/-]|\\.\\w)";

static void compare(pcre2_code *re, pcre2_match_data *md, const char *t, size_t len)
{
    size_t pos_c = 0, ms, me, off = 0;
    for (;;) {
        int rc = pcre2_match(re, (PCRE2_SPTR)t, len, off, 0, md, NULL);
        int got = ex_next_hyphen_name(t, len, &pos_c, &ms, &me);
        if (rc < 0) {
            cr_assert_eq(got, 0, "scan found [%zu,%zu) in \"%.*s\", the regex nothing", ms, me, (int)len, t);
            return;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        cr_assert_eq(got, 1, "regex found [%zu,%zu) in \"%.*s\", the scan nothing", (size_t)ov[0],
                     (size_t)ov[1], (int)len, t);
        cr_assert(ms == ov[0] && me == ov[1], "scan [%zu,%zu) vs regex [%zu,%zu) in \"%.*s\"", ms, me,
                  (size_t)ov[0], (size_t)ov[1], (int)len, t);
        off = ov[1];
    }
}

Test(hyphen, scan_equals_regex_on_random_text)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)PATTERN, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &ec, &eo, NULL);
    cr_assert_not_null(re);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    static const char alphabet[] = "ab-ab-ab./A_1 -\xc3";
    char t[64];
    srand(11);
    for (int round = 0; round < 200000; round++) {
        size_t len = (size_t)(rand() % 40);
        for (size_t i = 0; i < len; i++) t[i] = alphabet[rand() % (sizeof alphabet - 1)];
        compare(re, md, t, len);
    }
    /* long chains: the 32-group cap */
    char chain[200];
    size_t n = 0;
    for (int g = 0; g < 40 && n + 3 < sizeof chain; g++) {
        chain[n++] = 'a';
        chain[n++] = '-';
    }
    chain[n++] = 'b';
    compare(re, md, chain, n);
    compare(re, md, "focus-engine and a-b-c. x-y.z (re-run)", 38);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
}
