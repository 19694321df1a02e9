/* redisserver.h: a real redis-server for tests, on 127.0.0.1 at a free
 * port with its own temporary directory, stopped at the end. */
#ifndef TESTS_REDISSERVER_H
#define TESTS_REDISSERVER_H

#include <sys/types.h>

typedef struct redis_srv {
    pid_t pid;
    int port;
    char dir[256];
    char url[128]; /* redis://127.0.0.1:<port> */
} redis_srv;

/* Starts redis-server with extra "--name value" arguments (NULL-terminated,
 * may be NULL); waits until it answers PING.  0, or -1 (no redis-server on
 * PATH, or it did not come up within 5 s). */
int redis_start(redis_srv *r, const char *const *extra);
/* Stops it (SIGTERM, then SIGKILL) and keeps the directory when keep_dir. */
void redis_stop(redis_srv *r, int keep_dir);
/* Restarts on the same port and directory. */
int redis_restart(redis_srv *r, const char *const *extra);
/* Runs one command through redis-cli; the first line of its output into
 * out.  Returns its exit status. */
int redis_cli(const redis_srv *r, char *out, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
