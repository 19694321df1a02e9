/* clihelp.c: see clihelp.h. */
#include "clihelp.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURES "tests/fixtures/claude"

char *clihelp_exe(void)
{
    const char *b = getenv("CLARITY_BUILD");
    char *rel = runproc_join(b && *b ? b : "build", "clarity");
    cr_assert_not_null(rel);
    char *abs = realpath(rel, NULL);
    cr_assert_not_null(abs, "no %s: build first", rel);
    free(rel);
    return abs;
}

void clihelp_run(runproc_result *r, const char *in, const char *const env[], const char *const argv[])
{
    const char *full[64];
    char *exe = clihelp_exe();
    int n = 0;
    full[n++] = exe;
    for (int i = 0; argv[i] && n < 63; i++) full[n++] = argv[i];
    full[n] = NULL;
    int rc = runproc(full, env, in, in ? strlen(in) : 0, 60000, r);
    free(exe);
    cr_assert_eq(rc, 0, "could not run the CLI");
    cr_assert_not(r->timed_out, "the CLI timed out; stderr:\n%s", r->err);
}

json_t *clihelp_json(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    cr_assert_not_null(j, "not JSON (%s): %.400s", je.text, text);
    return j;
}

char *clihelp_read(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *p = malloc(cap);
    size_t k;
    while (p && (k = fread(p + len, 1, cap - len - 1, f)) > 0) {
        len += k;
        if (cap - len < 2) {
            char *q = realloc(p, cap *= 2);
            if (!q) free(p);
            p = q;
        }
    }
    fclose(f);
    if (p) p[len] = '\0';
    return p;
}

static char *replace_all(char *s, const char *what, const char *with)
{
    size_t lw = strlen(what), lr = strlen(with);
    char *at;
    while ((at = strstr(s, what)) != NULL) {
        size_t pre = (size_t)(at - s), rest = strlen(at + lw);
        char *n = malloc(pre + lr + rest + 1);
        cr_assert_not_null(n);
        memcpy(n, s, pre);
        memcpy(n + pre, with, lr);
        memcpy(n + pre + lr, at + lw, rest + 1);
        free(s);
        s = n;
    }
    return s;
}

char *clihelp_fixture(const char *name, const char *transcript)
{
    char *path = runproc_join(FIXTURES, name);
    char *text = clihelp_read(path);
    cr_assert_not_null(text, "missing fixture %s", path);
    free(path);
    char *dir = realpath(FIXTURES, NULL);
    cr_assert_not_null(dir);
    text = replace_all(text, "@FIXTURES@", dir);
    text = replace_all(text, "@TRANSCRIPT@", transcript ? transcript : "");
    free(dir);
    return text;
}

void clihelp_copy(const char *from, const char *to)
{
    char *t = clihelp_read(from);
    cr_assert_not_null(t, "cannot read %s", from);
    cr_assert_eq(runproc_write_file(to, t), 0, "cannot write %s", to);
    free(t);
}

void clihelp_append(const char *from, const char *to)
{
    char *t = clihelp_read(from);
    cr_assert_not_null(t, "cannot read %s", from);
    FILE *f = fopen(to, "ab");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(t, 1, strlen(t), f), strlen(t));
    fclose(f);
    free(t);
}
