/* gitrepo.c: see gitrepo.h. */
#include "gitrepo.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runproc.h"

int gitrepo_sh(const char *dir, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[9000];
    snprintf(full, sizeof full,
             "cd '%s' && export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t "
             "GIT_COMMITTER_EMAIL=t@t GIT_CONFIG_NOSYSTEM=1 HOME='%s' && (%s) >/dev/null 2>&1",
             dir, dir, cmd);
    return system(full);
}

int gitrepo_write(const char *dir, const char *rel, const char *text)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    char mk[4200];
    snprintf(mk, sizeof mk, "mkdir -p '%s'", p);
    if (system(mk) != 0) return -1;
    *slash = '/';
    FILE *f = fopen(p, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

int gitrepo_commit(const char *dir, long when, const char *msg)
{
    return gitrepo_sh(dir,
                      "git add -A && GIT_AUTHOR_DATE='@%ld +0000' GIT_COMMITTER_DATE='@%ld +0000' "
                      "git commit -q -m '%s'",
                      when, when, msg);
}

char *gitrepo_new(const char *prefix)
{
    char *dir = runproc_mkdtemp(prefix);
    if (dir && gitrepo_sh(dir, "git init -q .") != 0) {
        free(dir);
        return NULL;
    }
    return dir;
}
