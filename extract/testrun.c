/* testrun.c: test runners' summary lines and failing test names (testrun.h).
 *
 * One pass over the lines; each line is cleaned (colours and carriage
 * returns dropped, at most LINE_MAX bytes kept: summary lines are short)
 * and tried against each runner's shapes.  A summary is a line made only
 * of "N word" counts with the runner's own words and separators, so prose
 * that happens to say "2 passed" is not one.
 */
#include "testrun.h"
#include "../util/endian.h"
#include "../util/memfind.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define LINE_MAX 1024
#define MAX_PAIRS 12
#define COUNT_MAX 1000000000000LL /* counts saturate here: no suite is larger */

typedef struct pair {
    int64_t n;
    char word[16];
} pair;

typedef struct scan {
    testrun *out;
    int runner;       /* the first summary recognised decides the runner */
    int64_t passed, failed, skipped;
    int summaries;    /* cargo and go add several */
    int64_t ut_ran;   /* unittest: "Ran N tests" seen (-1 when not) */
    int mocha_failing; /* inside mocha's list of failures */
    char mocha_name[TESTRUN_NAME_MAX]; /* "1) suite" + its lines up to one ending in ':' */
    int mocha_open;
    int go_tests;     /* "--- PASS/FAIL" lines: counted instead of packages */
    int64_t go_pass, go_fail, go_pkg_ok, go_pkg_fail;
} scan;

const char *testrun_runner_name(int runner)
{
    static const char *const names[] = {"none", "pytest", "unittest", "jest", "vitest",
                                        "go",   "cargo",  "mocha",    "plain"};
    return runner >= 0 && runner <= TR_PLAIN ? names[runner] : "none";
}

/* Where p[0, n) holds its first ESC, CR or NUL (n when none): eight bytes
 * at a time. */
static size_t first_special(const char *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x = util_load_le64(p + i);
        uint64_t m = util_bytes_eq(x, 0) | util_bytes_eq(x, 0x1b) | util_bytes_eq(x, '\r');
        if (m) return i + (size_t)__builtin_ctzll(m) / 8;
    }
    for (; i < n; i++)
        if (p[i] == 0x1b || p[i] == '\r' || p[i] == '\0') return i;
    return n;
}

#ifndef TESTRUN_NO_PREFILTER
/* The length of the line at p (up to the first '\n' of p[0, n), or n),
 * and in *dirty whether a byte clean_line drops (ESC, CR, NUL) comes
 * before its end: one pass over the line where finding its end and then
 * its bytes to clean took two.  SSE2 sixteen bytes at a time, else eight
 * (util_bytes_eq's lowest set bit is exact: a special at or past the
 * newline cannot make one before it). */
static size_t line_end(const char *p, size_t n, int *dirty)
{
    size_t i = 0;
    int d = 0;
#ifdef __SSE2__
    const __m128i nl = _mm_set1_epi8('\n'), esc = _mm_set1_epi8(0x1b), cr = _mm_set1_epi8('\r');
    for (; i + 16 <= n; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        unsigned e = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, nl));
        unsigned sp = (unsigned)_mm_movemask_epi8(_mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(x, esc), _mm_cmpeq_epi8(x, cr)), _mm_cmpeq_epi8(x, _mm_setzero_si128())));
        if (e) {
            unsigned k = (unsigned)__builtin_ctz(e);
            *dirty = d || (sp & ((1u << k) - 1)) != 0;
            return i + k;
        }
        d |= sp != 0;
    }
#endif
    for (; i + 8 <= n; i += 8) {
        uint64_t x = util_load_le64(p + i);
        uint64_t e = util_bytes_eq(x, '\n');
        uint64_t sp = util_bytes_eq(x, 0) | util_bytes_eq(x, 0x1b) | util_bytes_eq(x, '\r');
        if (e) {
            unsigned k = (unsigned)__builtin_ctzll(e) / 8;
            *dirty = d || (sp && (unsigned)__builtin_ctzll(sp) / 8 < k);
            return i + k;
        }
        d |= sp != 0;
    }
    for (; i < n && p[i] != '\n'; i++) d |= p[i] == 0x1b || p[i] == '\r' || p[i] == '\0';
    *dirty = d;
    return i;
}
#endif

/* The line without ANSI escape sequences and carriage returns: the bytes
 * before the first of those copied as they are (most lines: all of them). */
static size_t clean_line(const char *p, size_t n, char *out)
{
    size_t k = first_special(p, n < LINE_MAX - 1 ? n : LINE_MAX - 1);
    memcpy(out, p, k);
    for (size_t i = k; i < n && k < LINE_MAX - 1; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == 0x1b) { /* CSI: ESC [ params final-byte; other escapes: 2 bytes */
            if (i + 1 < n && p[i + 1] == '[') {
                i += 2;
                while (i < n && !((unsigned char)p[i] >= 0x40 && (unsigned char)p[i] <= 0x7e)) i++;
            } else {
                i++;
            }
            continue;
        }
        if (c == '\r' || c == '\0') continue;
        out[k++] = (char)c;
    }
    while (k && (out[k - 1] == ' ' || out[k - 1] == '\t')) k--;
    out[k] = '\0';
    return k;
}

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

/* s begins with the string literal lit (its first byte tested inline:
 * most lines fail there). */
#define starts(s, lit) ((s)[0] == (lit)[0] && strncmp((s), (lit), sizeof(lit) - 1) == 0)

static int64_t num(const char **s)
{
    int64_t v = 0;
    while (isdigit((unsigned char)**s)) {
        v = v * 10 + (**s - '0');
        if (v > COUNT_MAX) v = COUNT_MAX;
        (*s)++;
    }
    return v;
}

/* a + b for counts in [0, COUNT_MAX], saturating */
static int64_t add(int64_t a, int64_t b) { return a + b > COUNT_MAX ? COUNT_MAX : a + b; }

/* The words of the summaries a line may begin with a count of (pytest -q,
 * the plain "N passed, N failed" line, Mocha's): may_matter lets a line
 * that starts "N <one of them>" through. */
#define PYTEST_WORDS "passed failed error errors skipped xfailed xpassed warning warnings deselected rerun"
#define PLAIN_WORDS "passed failed fail failures errors error skipped"
#define MOCHA_WORDS "passing failing pending"

/* Whether word (n bytes) is one of words (space-separated): every place
 * it occurs is tried ("fail" first occurs inside "failed"). */
static int in_words(const char *words, const char *word, size_t n)
{
    for (const char *hit = strstr(words, word); hit; hit = strstr(hit + 1, word))
        if ((hit == words || hit[-1] == ' ') && (hit[n] == ' ' || hit[n] == '\0')) return 1;
    return 0;
}

/* "N word" pairs separated by any of seps (and spaces) up to end, stopping
 * at stop (when given).  Returns the count, or -1 when anything else is
 * there or a word is not in words (a space-separated list). */
static int pairs_of(const char *s, const char *end, const char *seps, const char *words, pair *out)
{
    int n = 0;
    for (;;) {
        while (s < end && (*s == ' ' || *s == '\t' || strchr(seps, *s))) s++;
        if (s >= end) break;
        if (!isdigit((unsigned char)*s) || n == MAX_PAIRS) return -1;
        out[n].n = num(&s);
        if (s >= end || *s != ' ') return -1;
        s++;
        size_t w = 0;
        while (s + w < end && isalpha((unsigned char)s[w])) w++;
        if (w == 0 || w >= sizeof out[n].word) return -1;
        memcpy(out[n].word, s, w);
        out[n].word[w] = '\0';
        s += w;
        if (!in_words(words, out[n].word, w)) return -1;
        n++;
    }
    return n;
}

static int64_t count_of(const pair *p, int n, const char *word)
{
    int64_t v = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(p[i].word, word) == 0) v = add(v, p[i].n);
    return v;
}

static int has(const pair *p, int n, const char *word)
{
    for (int i = 0; i < n; i++)
        if (strcmp(p[i].word, word) == 0) return 1;
    return 0;
}

static void add_name(scan *sc, const char *name, size_t len)
{
    testrun *o = sc->out;
    while (len && (name[len - 1] == ' ' || name[len - 1] == ':')) len--;
    if (len == 0 || o->n_failing == TESTRUN_MAX_FAILING) return;
    if (len >= TESTRUN_NAME_MAX) { /* cut, not inside a UTF-8 character */
        len = TESTRUN_NAME_MAX - 1;
        while (len && ((unsigned char)name[len] & 0xC0) == 0x80) len--;
        if (len == 0) return;
    }
    for (size_t i = 0; i < o->n_failing; i++)
        if (strncmp(o->failing[i], name, len) == 0 && o->failing[i][len] == '\0') return;
    memcpy(o->failing[o->n_failing], name, len);
    o->failing[o->n_failing][len] = '\0';
    o->n_failing++;
}

static void summary(scan *sc, int runner, int64_t passed, int64_t failed, int64_t skipped)
{
    if (sc->runner && sc->runner != runner) return; /* another runner's output came first */
    sc->runner = runner;
    sc->passed = add(sc->passed, passed);
    sc->failed = add(sc->failed, failed);
    sc->skipped = add(sc->skipped, skipped);
    sc->summaries++;
}

/* pytest: "==== 3 failed, 41 passed, 2 errors in 1.23s ====" (also -q's
 * bare form, and "in 61.2s (0:01:01)"). */
static int pytest_summary(scan *sc, const char *l)
{
    while (*l == '=' || *l == ' ') l++;
    const char *in = strstr(l, " in ");
    if (!in) return 0;
    const char *t = in + 4;
    if (!isdigit((unsigned char)*t)) return 0;
    while (isdigit((unsigned char)*t) || *t == '.') t++;
    if (*t != 's') return 0;
    pair p[MAX_PAIRS];
    int n = pairs_of(l, in, ",",
                     PYTEST_WORDS,
                     p);
    if (n <= 0 || !(has(p, n, "passed") || has(p, n, "failed") || has(p, n, "error") || has(p, n, "errors")))
        return 0;
    summary(sc, TR_PYTEST, count_of(p, n, "passed") + count_of(p, n, "xfailed"),
            count_of(p, n, "failed") + count_of(p, n, "error") + count_of(p, n, "errors") +
                count_of(p, n, "xpassed"),
            count_of(p, n, "skipped"));
    return 1;
}

/* unittest: "Ran 44 tests in 0.1s", later "OK (skipped=1)" or
 * "FAILED (failures=2, errors=1)". */
static int unittest_line(scan *sc, const char *l)
{
    if (starts(l, "Ran ") && isdigit((unsigned char)l[4])) {
        const char *s = l + 4;
        int64_t n = num(&s);
        if (starts(s, " tests in ") || starts(s, " test in ")) sc->ut_ran = n;
        return 1;
    }
    if (sc->ut_ran < 0) return 0;
    int64_t fail = 0, skip = 0;
    const char *rest;
    if (strcmp(l, "OK") == 0) rest = NULL;
    else if (starts(l, "OK (")) rest = l + 4;
    else if (starts(l, "FAILED (")) rest = l + 8;
    else return 0;
    for (const char *s = rest; s && *s && *s != ')';) { /* key=N, ... */
        const char *eq = strchr(s, '=');
        if (!eq) break;
        const char *v = eq + 1;
        int64_t k = num(&v);
        if (starts(s, "failures=") || starts(s, "errors=") || starts(s, "unexpected successes=")) fail += k;
        else if (starts(s, "skipped=")) skip += k;
        s = v;
        while (*s == ',' || *s == ' ') s++;
    }
    int64_t run = sc->ut_ran;
    sc->ut_ran = -1;
    summary(sc, TR_UNITTEST, run - fail - skip > 0 ? run - fail - skip : 0, fail, skip);
    return 1;
}

/* Jest: "Tests:       3 failed, 41 passed, 44 total". */
static int jest_summary(scan *sc, const char *l)
{
    if (!starts(l, "Tests:")) return 0;
    pair p[MAX_PAIRS];
    int n = pairs_of(l + 6, l + strlen(l), ",", "failed passed skipped todo pending total", p);
    if (n <= 0 || !has(p, n, "total")) return 0;
    summary(sc, TR_JEST, count_of(p, n, "passed"), count_of(p, n, "failed"),
            count_of(p, n, "skipped") + count_of(p, n, "todo") + count_of(p, n, "pending"));
    return 1;
}

/* Vitest: "Tests  3 failed | 41 passed (44)". */
static int vitest_summary(scan *sc, const char *l)
{
    if (!starts(l, "Tests ") || l[strlen(l) - 1] != ')') return 0;
    const char *open = strrchr(l, '(');
    if (!open || !isdigit((unsigned char)open[1])) return 0;
    pair p[MAX_PAIRS];
    int n = pairs_of(l + 6, open, "|", "failed passed skipped todo", p);
    if (n <= 0) return 0;
    summary(sc, TR_VITEST, count_of(p, n, "passed"), count_of(p, n, "failed"),
            count_of(p, n, "skipped") + count_of(p, n, "todo"));
    return 1;
}

/* cargo: "test result: FAILED. 41 passed; 3 failed; 0 ignored; ..." (one
 * per test binary: added up). */
static int cargo_summary(scan *sc, const char *l)
{
    const char *s;
    if (starts(l, "test result: ok.")) s = l + 16;
    else if (starts(l, "test result: FAILED.")) s = l + 20;
    else return 0;
    /* "...; 0 measured; 0 filtered out; finished in 0.00s": counts up to
     * the "filtered out" one */
    const char *end = strstr(s, " filtered out");
    if (!end) end = s + strlen(s);
    while (end > s && end[-1] != ';') end--;
    pair p[MAX_PAIRS];
    int n = pairs_of(s, end, ";", "passed failed ignored measured", p);
    if (n <= 0 || !has(p, n, "passed")) return 0;
    summary(sc, TR_CARGO, count_of(p, n, "passed"), count_of(p, n, "failed"), count_of(p, n, "ignored"));
    return 1;
}

/* Mocha writes a failure's title over several lines, the last ending in
 * ':': "1) Array", "#indexOf()", "finds the first match:". */
static void mocha_name(scan *sc, const char *part)
{
    size_t have = strlen(sc->mocha_name), n = strlen(part);
    if (!sc->mocha_open) have = 0;
    if (have && have + 1 < sizeof sc->mocha_name) sc->mocha_name[have++] = ' ';
    if (have + n >= sizeof sc->mocha_name) n = sizeof sc->mocha_name - 1 - have;
    memcpy(sc->mocha_name + have, part, n);
    sc->mocha_name[have + n] = '\0';
    sc->mocha_open = 1;
    if (n && part[strlen(part) - 1] == ':') {
        add_name(sc, sc->mocha_name, strlen(sc->mocha_name));
        sc->mocha_open = 0;
    }
}

/* Mocha: "41 passing (2s)", "3 failing", "2 pending". */
static int mocha_line(scan *sc, const char *l)
{
    if (!isdigit((unsigned char)*l)) return 0;
    const char *s = l;
    int64_t n = num(&s);
    if (starts(s, " passing (") && s[strlen(s) - 1] == ')') {
        summary(sc, TR_MOCHA, n, 0, 0);
        return 1;
    }
    if (sc->runner != TR_MOCHA) return 0;
    if (strcmp(s, " failing") == 0) {
        sc->failed = add(sc->failed, n);
        sc->mocha_failing = 1;
        return 1;
    }
    if (strcmp(s, " pending") == 0) {
        sc->skipped = add(sc->skipped, n);
        return 1;
    }
    if (sc->mocha_failing && s[0] == ')' && s[1] == ' ') { /* "1) suite" */
        mocha_name(sc, s + 2);
        return 1;
    }
    return 0;
}

/* Go: "ok  \tpkg\t0.01s", "FAIL\tpkg\t0.02s", "--- FAIL: TestX (0.00s)". */
static int go_line(scan *sc, const char *l, const char *trimmed)
{
    if (starts(trimmed, "--- FAIL: ") || starts(trimmed, "--- PASS: ")) {
        int fail = trimmed[4] == 'F';
        const char *name = trimmed + 10;
        size_t k = strcspn(name, " (");
        if (fail) add_name(sc, name, k);
        if (trimmed == l) { /* top-level tests only; subtests are indented */
            sc->go_tests = 1;
            if (fail) sc->go_fail++;
            else sc->go_pass++;
        }
        return 1;
    }
    int ok = starts(l, "ok ") || starts(l, "ok\t");
    int fail = starts(l, "FAIL ") || starts(l, "FAIL\t");
    if (!ok && !fail) return 0;
    const char *s = skip_ws(l + (ok ? 2 : 4));
    size_t pkg = strcspn(s, " \t");
    if (pkg == 0 || s[pkg] == '\0') return 0;
    const char *t = skip_ws(s + pkg);
    int dur = isdigit((unsigned char)*t);
    while (isdigit((unsigned char)*t) || *t == '.') t++;
    if (!((dur && *t == 's') || starts(t, "(cached)") || starts(t, "[build failed]") ||
          starts(t, "[setup failed]")))
        return 0;
    if (sc->runner && sc->runner != TR_GO) return 0;
    sc->runner = TR_GO;
    if (ok) sc->go_pkg_ok++;
    else sc->go_pkg_fail++;
    sc->summaries++;
    return 1;
}

/* A line that is only "N passed" and "N failed" counts (",", ".", ";", "|"
 * between them), after an optional "Label:". */
static int plain_summary(scan *sc, const char *l)
{
    const char *colon = strchr(l, ':');
    if (colon && colon - l < 24 && !isdigit((unsigned char)*l)) l = colon + 1;
    pair p[MAX_PAIRS];
    int n = pairs_of(l, l + strlen(l), ",.;|", PLAIN_WORDS, p);
    if (n <= 0 || !has(p, n, "passed") || !(has(p, n, "failed") || has(p, n, "fail"))) return 0;
    summary(sc, TR_PLAIN, count_of(p, n, "passed"),
            count_of(p, n, "failed") + count_of(p, n, "fail") + count_of(p, n, "failures") +
                count_of(p, n, "errors") + count_of(p, n, "error"),
            count_of(p, n, "skipped"));
    return 1;
}

/* Failing names of pytest, unittest, cargo, Jest and Vitest. */
static void failing_name(scan *sc, const char *l)
{
    const char *s = l;
    if (starts(s, "* ") && (starts(s + 2, "FAILED ") || starts(s + 2, "ERROR ")) && !strstr(s, "::")) {
        /* moatless's test tool: "* FAILED path name>" ("path>": the module) */
        const char *path = strchr(s + 2, ' ') + 1, *sp = strchr(path, ' ');
        size_t k = sp ? strlen(sp + 1) : 0;
        if (k > 1 && sp[k] == '>' && !memchr(sp + 1, ' ', k)) add_name(sc, sp + 1, k - 1);
        return;
    }
    if (starts(s, "* ")) s += 2;
    if (starts(s, "FAILED ") || (starts(s, "ERROR ") && strstr(s, "::"))) {
        s = strchr(s, ' ') + 1;
        size_t k = strcspn(s, " ");
        const char *last = s;
        for (const char *c = s; c + 1 < s + k; c++)
            if (c[0] == ':' && c[1] == ':') last = c + 2;
        if (strstr(s, "::") && last < s + k) add_name(sc, last, (size_t)(s + k - last));
        return;
    }
    if (starts(s, "FAIL: ") || starts(s, "ERROR: ")) { /* unittest */
        s = strchr(s, ' ') + 1;
        add_name(sc, s, strcspn(s, " "));
        return;
    }
    if (starts(s, "test ")) { /* cargo: "test a::b ... FAILED" */
        const char *dots = strstr(s, " ... FAILED");
        if (dots && dots > s + 5 && dots[11] == '\0') add_name(sc, s + 5, (size_t)(dots - s - 5));
        return;
    }
    const char *t = skip_ws(s);
    if (starts(t, "\xE2\x97\x8F ") && !strstr(t, "Test suite failed to run")) { /* Jest: "● a › b" */
        add_name(sc, t + 4, strlen(t + 4));
        return;
    }
    if (starts(t, "FAIL ") && strstr(t, " > ")) { /* Vitest: "FAIL  a.test.ts > suite > name" */
        const char *last = t;
        for (const char *c = t; (c = strstr(c, " > ")) != NULL; c += 3) last = c + 3;
        add_name(sc, last, strlen(last));
    }
}

#ifndef TESTRUN_NO_PREFILTER /* the tests' oracle is this file without it */
/* p[0, n) begins with the string literal lit. */
#define raw_starts(p, n, lit) ((n) >= sizeof(lit) - 1 && memcmp((p), (lit), sizeof(lit) - 1) == 0)

/* A line that begins with a count is a summary's or Mocha's: "N word" with
 * a word some summary counts, or "N) title".  (Numbered lines of code are
 * neither, and tool outputs hold many.) */
static int count_line(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && isdigit((unsigned char)p[i])) i++;
    if (i < n && p[i] == ')') return 1;
    if (i + 1 >= n || p[i] != ' ') return 0;
    size_t w = ++i;
    while (i < n && isalpha((unsigned char)p[i])) i++;
    char word[16];
    if (i == w || i - w >= sizeof word) return 0;
    memcpy(word, p + w, i - w);
    word[i - w] = '\0';
    return in_words(PYTEST_WORDS " " PLAIN_WORDS " " MOCHA_WORDS, word, i - w);
}

/* Whether the shapes below could match the line p[0, n), cleaned, or raw
 * when it holds no byte clean_line drops and fits in LINE_MAX: its trimmed
 * form must begin as a shape begins (a count, a separator, a runner's word)
 * or be "Label: N ...".  Most lines of a tool's output are none; raw ones
 * skip the copy too. */
static int may_matter(const scan *sc, const char *p, size_t n)
{
    if (sc->mocha_open) return 1; /* every line goes on the title */
    while (n && (*p == ' ' || *p == '\t')) p++, n--;
    if (n == 0) return 0;
    switch ((unsigned char)p[0]) {
    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        return count_line(p, n); /* no label before a count: nothing else */
    case '=': case ',': case '.': case ';': case '|': { /* pytest's rule, separators */
        size_t i = 0;
        while (i < n && (p[i] == '=' || p[i] == ',' || p[i] == '.' || p[i] == ';' || p[i] == '|' ||
                         p[i] == ' ' || p[i] == '\t'))
            i++;
        if (i < n && isdigit((unsigned char)p[i])) return 1;
        break;
    }
    case '*': if (raw_starts(p, n, "* ")) return 1; break;
    case '-': if (raw_starts(p, n, "--- ")) return 1; break;
    case 'o': if (raw_starts(p, n, "ok")) return 1; break;
    case 'O': if (raw_starts(p, n, "OK")) return 1; break;
    case 'F': if (raw_starts(p, n, "FAIL")) return 1; break;
    case 'R': if (raw_starts(p, n, "Ran ")) return 1; break;
    case 'T': if (raw_starts(p, n, "Tests")) return 1; break;
    case 't': if (raw_starts(p, n, "test ")) return 1; break;
    case 'E': if (raw_starts(p, n, "ERROR")) return 1; break;
    case 0xE2: if (raw_starts(p, n, "\xE2\x97\x8F")) return 1; break;
    }
    /* plain_summary's "Label: N passed, ...": its first ':' within 24 bytes */
    const char *colon = memchr(p, ':', n < 24 ? n : 24);
    if (!colon) return 0;
    const char *s = colon + 1, *end = p + n;
    while (s < end && (*s == ' ' || *s == '\t' || *s == ',' || *s == '.' || *s == ';' || *s == '|')) s++;
    return s < end && isdigit((unsigned char)*s);
}
#endif

/* One line; tested: may_matter already said yes to its raw bytes. */
static void line(scan *sc, const char *raw, size_t n, int tested)
{
    char l[LINE_MAX];
    size_t k = clean_line(raw, n, l);
    if (k == 0) return;
#ifndef TESTRUN_NO_PREFILTER
    if (!tested && !may_matter(sc, l, k)) return;
#else
    (void)tested;
#endif
    const char *t = skip_ws(l);
    if (go_line(sc, l, t)) return;
    if (mocha_line(sc, t)) return;
    if (sc->mocha_open) {
        mocha_name(sc, t);
        return;
    }
    if (pytest_summary(sc, t) || unittest_line(sc, t) || jest_summary(sc, t) || vitest_summary(sc, t) ||
        cargo_summary(sc, t))
        return;
    failing_name(sc, l);
    if (!sc->runner || sc->runner == TR_PLAIN) plain_summary(sc, t);
}

int testrun_parse(const char *text, size_t len, testrun *out)
{
    /* the counts and no name: the 2 KB of name slots are written as names
     * come (testrun.h), not cleared for every tool output */
    out->runner = TR_NONE;
    out->passed = out->failed = out->skipped = 0;
    out->n_failing = 0;
    scan sc;
    memset(&sc, 0, sizeof sc);
    sc.out = out;
    sc.ut_ran = -1;
    for (size_t i = 0; i < len;) {
        int tested = 0;
#ifndef TESTRUN_NO_PREFILTER
        int dirty;
        size_t n = line_end(text + i, len - i, &dirty);
        /* a line with no byte to clean is tested as it is, without a copy;
         * one with bytes to clean is tested once cleaned */
        if (n < LINE_MAX - 1 && !dirty) {
            if (!may_matter(&sc, text + i, n)) {
                i += n + 1;
                continue;
            }
            tested = 1;
        }
#else
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
#endif
        line(&sc, text + i, n, tested);
        i += n + 1;
    }
    if (sc.runner == TR_GO) {
        sc.passed = sc.go_tests ? sc.go_pass : sc.go_pkg_ok;
        sc.failed = sc.go_tests ? sc.go_fail : sc.go_pkg_fail;
    }
    if (!sc.runner || sc.passed + sc.failed <= 0) {
        out->n_failing = 0;
        return 0;
    }
    out->runner = sc.runner;
    out->passed = sc.passed;
    out->failed = sc.failed;
    out->skipped = sc.skipped;
    return 1;
}
