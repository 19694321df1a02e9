/* git.c: runs the git CLI (no shell) and collects its output. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

static int to_buf(void *ud, const char *p, size_t n)
{
    buf_append(ud, p, n);
    return 0;
}

int graph_git(const char *repo, const char *const *args, buf *out)
{
    int rc = graph_git_stream(repo, args, to_buf, out);
    return buf_failed(out) ? -1 : rc;
}

int graph_git_stream(const char *repo, const char *const *args,
                     int (*cb)(void *ud, const char *p, size_t n), void *ud)
{
    const char *argv[32];
    size_t n = 0;
    argv[n++] = "git";
    argv[n++] = "-C";
    argv[n++] = repo;
    argv[n++] = "-c";
    argv[n++] = "core.quotePath=false";
    for (size_t i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
    argv[n] = NULL;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, "git", &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return -1;
    }
    char chunk[65536];
    for (;;) {
        ssize_t r = read(fds[0], chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        if (cb(ud, chunk, (size_t)r) != 0) break;
    }
    close(fds[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

char *graph_git_line(const char *repo, const char *const *args)
{
    buf b;
    buf_init(&b);
    int rc = graph_git(repo, args, &b);
    if (rc != 0 || b.len == 0) {
        buf_free(&b);
        return NULL;
    }
    while (b.len && (b.p[b.len - 1] == '\n' || b.p[b.len - 1] == '\r')) b.len--;
    return buf_steal(&b, NULL);
}
