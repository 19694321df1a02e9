/* lang.c: languages by file extension, test files, names. */
#include <string.h>
#include <strings.h>

#include "graph.h"

int graph_lang_of_path(const char *path)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return LANG_NONE;
    dot++;
    static const struct { const char *ext; int lang; } map[] = {
        {"py", LANG_PYTHON}, {"pyi", LANG_PYTHON}, {"js", LANG_JS},   {"jsx", LANG_JS},
        {"mjs", LANG_JS},    {"cjs", LANG_JS},     {"ts", LANG_TS},   {"mts", LANG_TS},
        {"cts", LANG_TS},    {"tsx", LANG_TSX},    {"go", LANG_GO},   {"rs", LANG_RUST},
        {"java", LANG_JAVA}, {"c", LANG_C},        {"h", LANG_C},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(dot, map[i].ext) == 0) return map[i].lang;
    return LANG_NONE;
}

static int has_segment(const char *path, const char *seg)
{
    size_t n = strlen(seg);
    for (const char *p = path; (p = strstr(p, seg)) != NULL; p++) {
        if ((p == path || p[-1] == '/') && p[n] == '/') return 1;
    }
    return 0;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Tests, fixtures and benchmarks of the usual layouts. */
int graph_is_test_path(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (has_segment(path, "test") || has_segment(path, "tests") || has_segment(path, "testing") ||
        has_segment(path, "__tests__") || has_segment(path, "spec") || has_segment(path, "e2e"))
        return 1;
    if (strncmp(base, "test_", 5) == 0 || strcmp(base, "conftest.py") == 0) return 1;
    const char *dot = strrchr(base, '.');
    size_t stem = dot ? (size_t)(dot - base) : strlen(base);
    if (stem > 5 && strncmp(base + stem - 5, "_test", 5) == 0) return 1;
    if (strstr(base, ".test.") || strstr(base, ".spec.")) return 1;
    if (ends_with(base, "Test.java") || ends_with(base, "Tests.java")) return 1;
    return 0;
}
