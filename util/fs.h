/* fs.h: small file-system helpers shared by the plugin and the CLI. */
#ifndef UTIL_FS_H
#define UTIL_FS_H

#include <sys/types.h>

/* Creates dir and any missing parents with mode.  0, or -1 with errno. */
int util_mkdirs(const char *dir, mode_t mode);
/* Creates the directories above path (not path itself).  0, or -1 with errno. */
int util_mkdir_parents(const char *path, mode_t mode);

#endif
