/* evalrepos.c: `clarity eval --repos DIR`: a session whose meta names its
 * repository ("owner/name") and base commit replays in a workspace as a
 * user's would be: a clone of the repository at that commit with its code
 * graph built, so the hooks predict files exactly as in a user's session.
 *
 * The clone is CACHE/<owner>+<name>/<commit> (git clone --shared of the
 * repository found under DIR, then a checkout of the commit); it and its
 * graph are kept and reused by later configs and runs.  A new commit of a
 * repository starts from the graph of the previous one it built (files are
 * re-parsed only where their content differs), so a corpus of many commits
 * of one repository costs incremental builds, not full ones.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../util/buf.h"
#include "../util/fs.h"
#include "evalrepos.h"
#include "jsonconv.h"

extern char **environ;

typedef struct evr_session {
    char *session, *repo, *commit;
    char *workspace; /* once prepared; NULL before or when it failed */
    int tried;
} evr_session;

struct evr {
    const char *repos, *cache;
    evr_session *v;
    size_t n, cap;
    /* the last graph built per repository: a new commit starts from it */
    char **last_repo, **last_db;
    size_t n_last;
};

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_hex40(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) return 0;
    return n >= 7 && n <= 64;
}

/* owner/name with no "..", no leading dot, one slash. */
static int valid_repo(const char *r)
{
    const char *slash = strchr(r, '/');
    if (!slash || slash == r || !slash[1] || strchr(slash + 1, '/') || strstr(r, "..") || r[0] == '.')
        return 0;
    for (const char *p = r; *p; p++)
        if (!(*p == '/' || *p == '-' || *p == '_' || *p == '.' || (*p >= '0' && *p <= '9') ||
              (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
            return 0;
    return 1;
}

evr *evr_new(const char *repos_dir, const char *cache_dir)
{
    evr *r = calloc(1, sizeof *r);
    if (r) {
        r->repos = repos_dir;
        r->cache = cache_dir;
    }
    return r;
}

void evr_free(evr *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].session);
        free(r->v[i].repo);
        free(r->v[i].commit);
        free(r->v[i].workspace);
    }
    for (size_t i = 0; i < r->n_last; i++) {
        free(r->last_repo[i]);
        free(r->last_db[i]);
    }
    free(r->last_repo);
    free(r->last_db);
    free(r->v);
    free(r);
}

static int add(evr *r, const char *session, const char *repo, const char *commit)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        evr_session *v = realloc(r->v, cap * sizeof *v);
        if (!v) return -1;
        r->v = v;
        r->cap = cap;
    }
    evr_session *s = &r->v[r->n];
    memset(s, 0, sizeof *s);
    s->session = strdup(session);
    s->repo = strdup(repo);
    s->commit = strdup(commit);
    if (!s->session || !s->repo || !s->commit) {
        free(s->session), free(s->repo), free(s->commit);
        return -1;
    }
    r->n++;
    return 0;
}

int evr_scan(evr *r, const char *corpus)
{
    FILE *f = strcmp(corpus, "-") == 0 ? NULL : fopen(corpus, "r");
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, f) > 0) {
        if (!strstr(line, "\"meta\"")) continue; /* turn lines: not parsed twice */
        json_t *o = json_loads(line, 0, NULL);
        json_t *meta = json_object_get(o, "meta");
        const char *sid = json_string_value(json_object_get(o, "session"));
        const char *repo = json_string_value(json_object_get(meta, "repo"));
        const char *commit = json_string_value(json_object_get(meta, "base_commit"));
        if (sid && repo && commit && valid_repo(repo) && is_hex40(commit))
            rc = add(r, sid, repo, commit);
        json_decref(o);
    }
    free(line);
    fclose(f);
    return rc;
}

size_t evr_count(const evr *r) { return r ? r->n : 0; }

/* Runs git with argv; stdout into out (when given), stderr discarded.
 * Returns its exit status, or -1. */
static int git(char *const argv[], buf *out)
{
    int fds[2] = {-1, -1};
    if (out && pipe(fds) != 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    if (out) {
        posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
    } else {
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    }
    pid_t pid;
    int rc = posix_spawnp(&pid, "git", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (out) {
        close(fds[1]);
        char chunk[4096];
        ssize_t k;
        while (rc == 0 && (k = read(fds[0], chunk, sizeof chunk)) > 0) buf_append(out, chunk, (size_t)k);
        close(fds[0]);
    }
    if (rc != 0) return -1;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The repository of owner/name under DIR: DIR/owner/name, or the mirror
 * layout DIR/owner+name/repo, or DIR/owner+name.  malloc()ed, or NULL. */
static char *source_of(const evr *r, const char *repo)
{
    char flat[300];
    snprintf(flat, sizeof flat, "%s", repo);
    *strchr(flat, '/') = '+';
    const char *forms[] = {"%s/%s", "%s/%s/repo", "%s/%s"};
    const char *names[] = {repo, flat, flat};
    for (int i = 0; i < 3; i++) {
        char *p = util_format(forms[i], r->repos, names[i]);
        if (p && is_dir(p)) return p;
        free(p);
    }
    return NULL;
}

static int head_is(const char *dir, const char *commit)
{
    buf out;
    buf_init(&out);
    char *argv[] = {"git", "-C", (char *)dir, "rev-parse", "HEAD", NULL};
    int ok = git(argv, &out) == 0 && out.len >= strlen(commit) &&
             strncmp(out.p, commit, strlen(commit)) == 0;
    buf_free(&out);
    return ok;
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char chunk[65536];
    size_t k;
    int rc = in && out ? 0 : -1;
    while (rc == 0 && (k = fread(chunk, 1, sizeof chunk, in)) > 0)
        if (fwrite(chunk, 1, k, out) != k) rc = -1;
    if (in && ferror(in)) rc = -1;
    if (in) fclose(in);
    if (out && fclose(out) != 0) rc = -1;
    return rc;
}

static const char *last_db(const evr *r, const char *repo)
{
    for (size_t i = 0; i < r->n_last; i++)
        if (strcmp(r->last_repo[i], repo) == 0) return r->last_db[i];
    return NULL;
}

static void set_last_db(evr *r, const char *repo, const char *db)
{
    for (size_t i = 0; i < r->n_last; i++)
        if (strcmp(r->last_repo[i], repo) == 0) {
            char *d = strdup(db);
            if (d) free(r->last_db[i]), r->last_db[i] = d;
            return;
        }
    char **a = realloc(r->last_repo, (r->n_last + 1) * sizeof *a);
    if (a) r->last_repo = a;
    char **b = a ? realloc(r->last_db, (r->n_last + 1) * sizeof *b) : NULL;
    if (b) r->last_db = b;
    if (!a || !b) return;
    r->last_repo[r->n_last] = strdup(repo);
    r->last_db[r->n_last] = strdup(db);
    if (r->last_repo[r->n_last] && r->last_db[r->n_last]) r->n_last++;
}

/* Clones and checks out s->commit into dir unless it is there. */
static int checkout(const char *src, const char *dir, const char *commit, char **why)
{
    if (is_dir(dir) && head_is(dir, commit)) return 0;
    if (!is_dir(dir)) {
        if (util_mkdir_parents(dir, 0755) != 0) {
            *why = util_format("cannot create %s: %s", dir, strerror(errno));
            return -1;
        }
        char *argv[] = {"git", "clone", "-q", "--shared", "--no-checkout", (char *)src, (char *)dir, NULL};
        if (git(argv, NULL) != 0) {
            *why = util_format("git clone --shared %s failed", src);
            return -1;
        }
    }
    char *argv[] = {"git", "-C", (char *)dir, "checkout", "-q", "-f", (char *)commit, NULL};
    git(argv, NULL); /* a blob the mirror lacks fails it, yet HEAD moves: checked next */
    if (!head_is(dir, commit)) {
        *why = util_format("commit %s is not in %s", commit, src);
        return -1;
    }
    return 0;
}

/* Builds (or refreshes) dir's graph through the loaded plugin. */
static int build_graph(cli *c, const char *dir, char **why)
{
    json_t *params = json_pack("{s:s}", "repo", dir);
    char *p = params ? json_compact(params) : NULL;
    json_decref(params);
    clarity_result res;
    int rc = p ? loader_rpc(&c->L, "clarity.graphBuild", p, &res) : CLARITY_ENOMEM;
    free(p);
    if (rc != CLARITY_OK) *why = util_format("graph build: %s", loader_errtext(&c->L, rc, &res));
    loader_release(&c->L, &res);
    return rc == CLARITY_OK ? 0 : -1;
}

static int prepare(evr *r, cli *c, evr_session *s, char **why)
{
    char *src = source_of(r, s->repo);
    if (!src) {
        *why = util_format("no repository %s under %s (DIR/%s or DIR/owner+name/repo)", s->repo,
                           r->repos, s->repo);
        return -1;
    }
    char flat[300];
    snprintf(flat, sizeof flat, "%s", s->repo);
    *strchr(flat, '/') = '+';
    char *dir = util_format("%s/%s/%s", r->cache, flat, s->commit);
    char *db = dir ? util_format("%s/.clarity/graph.db", dir) : NULL;
    int rc = dir && db ? checkout(src, dir, s->commit, why) : -1;
    struct stat sb;
    if (rc == 0 && stat(db, &sb) != 0 && last_db(r, s->repo)) {
        /* start from the previous commit's graph: an incremental build */
        if (util_mkdir_parents(db, 0755) == 0) copy_file(last_db(r, s->repo), db);
    }
    if (rc == 0) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (isatty(STDERR_FILENO)) fputs("\r\033[K", stderr);
        fprintf(stderr, "clarity: eval: graph of %s at %.12s ...", s->repo, s->commit);
        fflush(stderr);
        rc = build_graph(c, dir, why);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        fprintf(stderr, " %.1f s\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    }
    if (rc == 0) {
        set_last_db(r, s->repo, db);
        s->workspace = dir;
        dir = NULL;
    }
    free(src);
    free(dir);
    free(db);
    return rc;
}

const char *evr_workspace(evr *r, cli *c, const char *session)
{
    if (!r) return NULL;
    for (size_t i = 0; i < r->n; i++) {
        evr_session *s = &r->v[i];
        if (strcmp(s->session, session) != 0) continue;
        if (!s->tried) {
            s->tried = 1;
            /* the same repository and commit as an earlier session: shared */
            for (size_t k = 0; k < i && !s->workspace; k++)
                if (r->v[k].workspace && strcmp(r->v[k].repo, s->repo) == 0 &&
                    strcmp(r->v[k].commit, s->commit) == 0)
                    s->workspace = strdup(r->v[k].workspace);
            char *why = NULL;
            if (!s->workspace && prepare(r, c, s, &why) != 0) {
                if (isatty(STDERR_FILENO)) fputs("\r\033[K", stderr);
                fprintf(stderr, "clarity: eval: session %s runs without a repository: %s\n", session,
                        why ? why : "out of memory");
            }
            free(why);
        }
        return s->workspace;
    }
    return NULL;
}

size_t evr_prepared(const evr *r)
{
    size_t n = 0;
    for (size_t i = 0; r && i < r->n; i++) n += r->v[i].workspace != NULL;
    return n;
}
