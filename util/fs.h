/* fs.h: small file-system helpers shared by the plugin and the CLI. */
#ifndef UTIL_FS_H
#define UTIL_FS_H

#include <stdio.h>
#include <sys/types.h>

/* Creates dir and any missing parents with mode.  0, or -1 with errno. */
int util_mkdirs(const char *dir, mode_t mode);
/* Creates the directories above path (not path itself).  0, or -1 with errno. */
int util_mkdir_parents(const char *path, mode_t mode);
/* Reads a stream to its end into a malloc()ed, NUL-terminated buffer
 * (*len excludes the NUL).  NULL with errno set on a read error, on OOM,
 * or (EFBIG) when it holds more than max bytes. */
char *util_read_stream(FILE *f, size_t max, size_t *len);
/* The same for a file by path ("-" is stdin). */
char *util_read_file(const char *path, size_t max, size_t *len);
/* Writes data[0, n) to path through a temporary file beside it renamed
 * over it, so that a reader sees the old file or the new one, never a
 * part; mode is the new file's.  durable: synced before the rename (a
 * cache that checks itself needs not be).  0, or -1 with errno (nothing
 * left behind). */
int util_write_file_atomic(const char *path, const void *data, size_t n, mode_t mode, int durable);

#endif
