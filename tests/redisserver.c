/* redisserver.c: redis-server for tests (redisserver.h). */
#include "redisserver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &n) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

int redis_cli(const redis_srv *r, char *out, size_t n, const char *fmt, ...)
{
    char args[2048], cmd[2400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "redis-cli -h 127.0.0.1 -p %d %s 2>&1", r->port, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[1024] = "";
    if (!fgets(line, sizeof line, p)) line[0] = '\0';
    char rest[1024];
    while (fgets(rest, sizeof rest, p)) {}
    int st = pclose(p);
    line[strcspn(line, "\n")] = '\0';
    if (out) snprintf(out, n, "%s", line);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int spawn(redis_srv *r, const char *const *extra)
{
    char port[16];
    snprintf(port, sizeof port, "%d", r->port);
    const char *argv[64] = {"redis-server", "--port", port, "--bind", "127.0.0.1", "--dir", r->dir,
                            "--save", "", "--daemonize", "no", "--logfile", "redis.log"};
    int argc = 13;
    for (int i = 0; extra && extra[i] && argc < 62; i++) argv[argc++] = extra[i];
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execvp("redis-server", (char *const *)argv);
        _exit(127);
    }
    r->pid = pid;
    for (int i = 0; i < 100; i++) { /* 5 s */
        char pong[64];
        if (redis_cli(r, pong, sizeof pong, "PING") == 0 && strcmp(pong, "PONG") == 0) return 0;
        if (strstr(pong, "NOAUTH")) return 0; /* up, with a password */
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            r->pid = 0;
            return -1;
        }
        struct timespec t = {0, 50 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    return -1;
}

int redis_start(redis_srv *r, const char *const *extra)
{
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "/tmp/clarity-redis-XXXXXX");
    if (!mkdtemp(r->dir)) return -1;
    r->port = free_port();
    if (r->port <= 0) return -1;
    snprintf(r->url, sizeof r->url, "redis://127.0.0.1:%d", r->port);
    return spawn(r, extra);
}

static void kill_wait(redis_srv *r)
{
    if (r->pid <= 0) return;
    kill(r->pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
        int st;
        if (waitpid(r->pid, &st, WNOHANG) == r->pid) {
            r->pid = 0;
            return;
        }
        struct timespec t = {0, 20 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    r->pid = 0;
}

void redis_stop(redis_srv *r, int keep_dir)
{
    kill_wait(r);
    if (!keep_dir && r->dir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
        if (system(cmd) != 0) {}
    }
}

int redis_restart(redis_srv *r, const char *const *extra)
{
    kill_wait(r);
    return spawn(r, extra);
}
