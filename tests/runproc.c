/* runproc.c: fork/exec with captured stdio for the CLI tests (libc only). */
#include "runproc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct sink {
    char *p;
    size_t len, cap;
} sink;

static int sink_add(sink *s, const char *d, size_t n)
{
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n + 1) cap *= 2;
        char *p = realloc(s->p, cap);
        if (!p) return -1;
        s->p = p;
        s->cap = cap;
    }
    memcpy(s->p + s->len, d, n);
    s->len += n;
    s->p[s->len] = '\0';
    return 0;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

int runproc(const char *const argv[], const char *const env_extra[], const char *stdin_data,
            size_t stdin_len, int timeout_ms, runproc_result *out)
{
    memset(out, 0, sizeof *out);
    out->status = -1;
    int in[2] = {-1, -1}, o[2] = {-1, -1}, e[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(o, O_CLOEXEC) != 0 || pipe2(e, O_CLOEXEC) != 0) {
        close_fd(&in[0]), close_fd(&in[1]), close_fd(&o[0]), close_fd(&o[1]);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close_fd(&in[0]), close_fd(&in[1]), close_fd(&o[0]), close_fd(&o[1]);
        close_fd(&e[0]), close_fd(&e[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(o[1], 1);
        dup2(e[1], 2);
        signal(SIGPIPE, SIG_DFL);
        for (size_t i = 0; env_extra && env_extra[i]; i++) putenv((char *)env_extra[i]);
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "runproc: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close_fd(&in[0]);
    close_fd(&o[1]);
    close_fd(&e[1]);
    /* The child may exit before reading its stdin: no SIGPIPE for us. */
    struct sigaction ign, old;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old);
    fcntl(in[1], F_SETFL, O_NONBLOCK);

    sink so = {0}, se = {0};
    size_t written = 0;
    if (!stdin_data || stdin_len == 0) close_fd(&in[1]);
    int64_t deadline = timeout_ms > 0 ? mono_ms() + timeout_ms : 0;
    int oom = 0;
    while (o[0] >= 0 || e[0] >= 0) {
        struct pollfd pf[3];
        int n = 0, io = -1, ie = -1, ii = -1;
        if (o[0] >= 0) io = n, pf[n++] = (struct pollfd){.fd = o[0], .events = POLLIN};
        if (e[0] >= 0) ie = n, pf[n++] = (struct pollfd){.fd = e[0], .events = POLLIN};
        if (in[1] >= 0) ii = n, pf[n++] = (struct pollfd){.fd = in[1], .events = POLLOUT};
        int wait_ms = -1;
        if (deadline) {
            int64_t left = deadline - mono_ms();
            if (left <= 0) {
                kill(pid, SIGKILL);
                out->timed_out = 1;
                break;
            }
            wait_ms = left > 1000 ? 1000 : (int)left;
        }
        int r = poll(pf, (nfds_t)n, wait_ms);
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        char chunk[65536];
        if (io >= 0 && pf[io].revents) {
            ssize_t k = read(o[0], chunk, sizeof chunk);
            if (k > 0) oom |= sink_add(&so, chunk, (size_t)k);
            else if (k == 0 || errno != EINTR) close_fd(&o[0]);
        }
        if (ie >= 0 && pf[ie].revents) {
            ssize_t k = read(e[0], chunk, sizeof chunk);
            if (k > 0) oom |= sink_add(&se, chunk, (size_t)k);
            else if (k == 0 || errno != EINTR) close_fd(&e[0]);
        }
        if (ii >= 0 && pf[ii].revents) {
            if (pf[ii].revents & (POLLERR | POLLHUP)) {
                close_fd(&in[1]);
            } else {
                ssize_t k = write(in[1], stdin_data + written, stdin_len - written);
                if (k > 0) written += (size_t)k;
                else if (k < 0 && errno != EAGAIN && errno != EINTR) close_fd(&in[1]);
                if (written == stdin_len) close_fd(&in[1]);
            }
        }
    }
    close_fd(&in[1]);
    close_fd(&o[0]);
    close_fd(&e[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    sigaction(SIGPIPE, &old, NULL);
    if (WIFEXITED(st)) out->status = WEXITSTATUS(st);
    else if (WIFSIGNALED(st)) out->status = 128 + WTERMSIG(st);
    if (!so.p) oom |= sink_add(&so, "", 0);
    if (!se.p) oom |= sink_add(&se, "", 0);
    out->out = so.p;
    out->out_len = so.len;
    out->err = se.p;
    out->err_len = se.len;
    if (oom) {
        runproc_free(out);
        return -1;
    }
    return 0;
}

void runproc_free(runproc_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
    r->out_len = r->err_len = 0;
}

char *runproc_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 2);
    if (!p) return NULL;
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
    return p;
}

char *runproc_mkdtemp(const char *prefix)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    size_t n = strlen(tmp) + strlen(prefix) + 16;
    char *p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s/%s-XXXXXX", tmp, prefix);
    if (!mkdtemp(p)) {
        free(p);
        return NULL;
    }
    return p;
}

void runproc_rmtree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            char *p = runproc_join(dir, de->d_name);
            if (!p) continue;
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) runproc_rmtree(p);
            else unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

int runproc_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    size_t n = strlen(text);
    int rc = fwrite(text, 1, n, f) == n ? 0 : -1;
    if (fclose(f) != 0) rc = -1;
    return rc;
}
