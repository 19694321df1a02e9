#include "fs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

char *util_read_stream(FILE *f, size_t max, size_t *len)
{
    size_t cap = 65536, n = 0, got;
    char *p = malloc(cap + 1);
    if (!p) return NULL;
    while ((got = fread(p + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n > max) {
            free(p);
            errno = EFBIG;
            return NULL;
        }
        if (n == cap) {
            char *q = realloc(p, (cap *= 2) + 1);
            if (!q) {
                free(p);
                errno = ENOMEM;
                return NULL;
            }
            p = q;
        }
    }
    if (ferror(f)) {
        int saved = errno;
        free(p);
        errno = saved ? saved : EIO;
        return NULL;
    }
    p[n] = 0;
    if (len) *len = n;
    return p;
}

char *util_read_file(const char *path, size_t max, size_t *len)
{
    if (strcmp(path, "-") == 0) return util_read_stream(stdin, max, len);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *p = util_read_stream(f, max, len);
    int saved = errno;
    fclose(f);
    errno = saved;
    return p;
}

int util_write_file_atomic(const char *path, const void *data, size_t n, mode_t mode, int durable)
{
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 8);
    if (!tmp) return -1;
    memcpy(tmp, path, pl);
    memcpy(tmp + pl, ".XXXXXX", 8);
    int fd = mkstemp(tmp), rc = -1;
    if (fd >= 0) {
        const char *p = data;
        size_t off = 0;
        while (off < n) {
            ssize_t w = write(fd, p + off, n - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break;
            off += (size_t)w;
        }
        rc = off == n && fchmod(fd, mode) == 0 && (!durable || fsync(fd) == 0) ? 0 : -1;
        if (close(fd) != 0) rc = -1;
        if (rc == 0 && rename(tmp, path) != 0) rc = -1;
        if (rc != 0) {
            int e = errno;
            unlink(tmp);
            errno = e;
        }
    }
    free(tmp);
    return rc;
}
