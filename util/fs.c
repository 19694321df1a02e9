#include "fs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* mkdir on every prefix of p ending before a '/', and on p itself when
 * whole is set; existing directories are fine. */
static int mkdirs(const char *p, mode_t mode, int whole)
{
    char *c = strdup(p);
    if (!c) return -1;
    int rc = 0;
    for (char *s = c + 1; *s && rc == 0; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(c, mode) != 0 && errno != EEXIST) rc = -1;
        *s = '/';
    }
    if (rc == 0 && whole && mkdir(c, mode) != 0 && errno != EEXIST) rc = -1;
    int saved = errno;
    free(c);
    errno = saved;
    return rc;
}

int util_mkdirs(const char *dir, mode_t mode) { return mkdirs(dir, mode, 1); }

int util_mkdir_parents(const char *path, mode_t mode) { return mkdirs(path, mode, 0); }
