/* build.c: builds or refreshes a repository's graph cache.
 *
 *   1. list the files (git ls-files: tracked and untracked-not-ignored) of
 *      the languages we parse;
 *   2. a file whose size and mtime match the cache is kept; otherwise its
 *      content is hashed, and only a changed hash re-parses it;
 *   3. imports are resolved to files (all of them when the file set
 *      changed, else only the re-parsed files');
 *   4. co-change reads only the commits since the last build (git log runs
 *      on a thread from before step 2 on);
 *   5. one transaction writes it all.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "index.h"

#define MAX_FILE_BYTES (1024 * 1024)
/* the content field counts the words of a file's first 512 KB (as the
 * query index did when it read the working tree: GI_CONTENT_MAX) */
#define CONTENT_BYTES (512 * 1024)

typedef struct old_file {
    char *path;
    int64_t id, size, mtime;
    uint64_t hash;
    int seen;
    UT_hash_handle hh;
} old_file;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

char *graph_db_path(const char *repo)
{
    buf b;
    buf_init(&b);
    buf_printf(&b, "%s/.clarity/graph.db", repo);
    return buf_steal(&b, NULL);
}

static void progress(int on, const char *what, size_t i, size_t n)
{
    if (!on || n == 0) return;
    if (i != n && i % 64 != 0) return;
    int width = 30, done = (int)((double)i / (double)n * width);
    fprintf(stderr, "\r%-10s [%.*s%*s] %3d%% %zu/%zu", what, done,
            "##############################", width - done, "", (int)(100.0 * i / n), i, n);
    if (i == n) fputc('\n', stderr);
}

/* The first max bytes of a regular file (malloc'ed), or NULL. */
static char *read_head(const char *repo, const char *path, size_t max, size_t *len)
{
    char full[4200];
    snprintf(full, sizeof full, "%s/%s", repo, path);
    FILE *f = fopen(full, "rb");
    if (!f) return NULL;
    char *p = malloc(max + 1);
    size_t got = p ? fread(p, 1, max, f) : 0;
    fclose(f);
    if (p) p[got] = '\0';
    *len = got;
    return p;
}

static char *read_file(const char *repo, const char *path, size_t *len)
{
    char full[4200];
    snprintf(full, sizeof full, "%s/%s", repo, path);
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE_BYTES) {
        close(fd);
        return NULL;
    }
    char *p = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (p && got < (size_t)st.st_size) {
        ssize_t r = read(fd, p + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (p) p[got] = '\0';
    *len = got;
    return p;
}

/* ---- the content field, counted per file ---- */

typedef struct word_acc {
    buf arena;     /* the words, NUL-terminated, one after another */
    uint32_t *off; /* their offsets in arena */
    size_t n, cap;
    int oom;
} word_acc;

static int on_word(void *ud, const char *s, size_t n)
{
    word_acc *a = ud;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 4096;
        uint32_t *o = realloc(a->off, cap * sizeof *o);
        if (!o) {
            a->oom = 1;
            return 1;
        }
        a->off = o;
        a->cap = cap;
    }
    if (a->arena.len > UINT32_MAX - n - 1) {
        a->oom = 1;
        return 1;
    }
    a->off[a->n++] = (uint32_t)a->arena.len;
    buf_append(&a->arena, s, n);
    buf_putc(&a->arena, '\0');
    return 0;
}

/* qsort has no context argument: the arena of the calling thread */
static __thread const char *tl_base;

static int cmp_word(const void *x, const void *y)
{
    return strcmp(tl_base + *(const uint32_t *)x, tl_base + *(const uint32_t *)y);
}

/* The words of src through the query tokenizer, counted: distinct words in
 * byte order, each NUL-terminated and followed by its count (LEB128), into
 * out; *total = the words with repeats.  Returns 0, -1 out of memory. */
static int content_words(const char *src, size_t len, buf *out, uint32_t *total)
{
    word_acc a = {{0}, NULL, 0, 0, 0};
    buf_init(&a.arena);
    *total = 0;
    graph_tokenize(src, len < CONTENT_BYTES ? len : CONTENT_BYTES, 0, on_word, &a);
    int rc = a.oom || buf_failed(&a.arena) ? -1 : 0;
    if (rc == 0 && a.n > 1) {
        tl_base = a.arena.p;
        qsort(a.off, a.n, sizeof *a.off, cmp_word);
    }
    for (size_t i = 0; rc == 0 && i < a.n;) {
        const char *w = a.arena.p + a.off[i];
        size_t j = i + 1;
        while (j < a.n && strcmp(a.arena.p + a.off[j], w) == 0) j++;
        buf_append(out, w, strlen(w) + 1);
        uint64_t c = j - i;
        do {
            unsigned char b = (unsigned char)(c & 0x7f);
            c >>= 7;
            buf_putc(out, (char)(c ? b | 0x80 : b));
        } while (c);
        *total += (uint32_t)(j - i);
        i = j;
    }
    if (buf_failed(out)) rc = -1;
    buf_free(&a.arena);
    free(a.off);
    return rc;
}

/* ---- parsing in parallel ---- */

#define PARSE_BATCH 512
#define PARSE_THREADS_MAX 8

typedef struct parse_job {
    size_t idx;     /* in the file list */
    int64_t old_id; /* cache row to replace, 0 = new file */
    char *src;      /* NULL when unreadable: recorded without symbols */
    size_t len;
    char *head;     /* a file too large to parse: its first CONTENT_BYTES, for its words */
    size_t head_len;
    gfile f;
    buf words;      /* the content field: see db.c, table words */
    uint32_t n_words;
    int rc;
} parse_job;

typedef struct parse_pool {
    parse_job *jobs;
    size_t *order; /* jobs by size, largest first (NULL: in order) */
    size_t n;
    size_t next; /* atomic */
    int parser;
    int failed;  /* atomic: a parser context could not be made */
} parse_pool;

static void *parse_worker(void *arg)
{
    parse_pool *pp = arg;
    graph_parser_ctx *pc = graph_parser_new(pp->parser);
    if (!pc) {
        __atomic_store_n(&pp->failed, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    for (;;) {
        size_t j = __atomic_fetch_add(&pp->next, 1, __ATOMIC_RELAXED);
        if (j >= pp->n) break;
        parse_job *jb = &pp->jobs[pp->order ? pp->order[j] : j];
        jb->rc = jb->src ? graph_parse_file(pc, &jb->f, jb->src, jb->len) : 0;
        const char *w = jb->src ? jb->src : jb->head;
        if (jb->rc == 0 && w &&
            content_words(w, jb->src ? jb->len : jb->head_len, &jb->words, &jb->n_words) != 0)
            jb->rc = -1;
    }
    graph_parser_free(pc);
    return NULL;
}

typedef struct job_size {
    size_t len, idx;
} job_size;

static int cmp_job_size(const void *a, const void *b)
{
    const job_size *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->idx < y->idx ? -1 : 1;
}

/* Parses the jobs with up to one thread per online CPU (PARSE_THREADS_MAX
 * at most), a thread for about every 8 files or 32 KB, whichever gives
 * more (a refresh of a few large files parses them side by side); the
 * calling thread works too; the largest files go first.  Returns 0, or -1
 * when a parse ran out of memory. */
static int parse_batch(int parser, parse_job *jobs, size_t n)
{
    if (n == 0) return 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = cpus > 0 ? (size_t)cpus : 1, bytes = 0;
    for (size_t j = 0; j < n; j++) bytes += jobs[j].len;
    size_t want = (n + 7) / 8, by_size = bytes / (32 * 1024) + 1;
    if (by_size > n) by_size = n;
    if (want < by_size) want = by_size;
    if (nt > PARSE_THREADS_MAX) nt = PARSE_THREADS_MAX;
    if (nt > want) nt = want;
    size_t *order = nt > 1 ? malloc(n * sizeof *order) : NULL;
    job_size *js = order ? malloc(n * sizeof *js) : NULL;
    if (js) {
        for (size_t j = 0; j < n; j++) js[j] = (job_size){jobs[j].len, j};
        qsort(js, n, sizeof *js, cmp_job_size);
        for (size_t j = 0; j < n; j++) order[j] = js[j].idx;
        free(js);
    } else {
        free(order); /* out of memory: in order */
        order = NULL;
    }
    parse_pool pp = {jobs, order, n, 0, parser, 0};
    pthread_t th[PARSE_THREADS_MAX];
    size_t started = 0;
    for (size_t t = 1; t < nt; t++)
        if (pthread_create(&th[started], NULL, parse_worker, &pp) == 0) started++;
    parse_worker(&pp);
    for (size_t t = 0; t < started; t++) pthread_join(th[t], NULL);
    free(order);
    if (pp.failed && pp.next < n) { /* no context could be made: nothing ran */
        for (size_t j = 0; j < n; j++) jobs[j].rc = -1;
    }
    for (size_t j = 0; j < n; j++)
        if (jobs[j].rc != 0) return -1;
    return 0;
}

static int exec_sql(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static int cmp_strp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Writes one re-parsed file: its row, symbols, imports, calls and words. */
static int write_file(sqlite3 *db, sqlite3_stmt **st, gfile *f, int64_t old_id, const buf *words,
                      uint32_t n_words)
{
    sqlite3_stmt *up = st[0], *ds = st[1], *di = st[2], *dc = st[3], *is = st[4], *ii = st[5],
                 *ic = st[6];
    int64_t id = old_id;
    if (id > 0) {
        for (int k = 1; k <= 3; k++) {
            sqlite3_bind_int64(st[k], 1, id);
            if (sqlite3_step(st[k]) != SQLITE_DONE) return -1;
            sqlite3_reset(st[k]);
        }
    }
    sqlite3_bind_text(up, 1, f->path, -1, SQLITE_STATIC);
    sqlite3_bind_int(up, 2, f->lang);
    sqlite3_bind_int(up, 3, f->is_test);
    sqlite3_bind_int64(up, 4, f->size);
    sqlite3_bind_int64(up, 5, f->mtime_ns);
    sqlite3_bind_int64(up, 6, (int64_t)f->hash);
    sqlite3_bind_int(up, 7, f->parsed_with);
    if (id > 0) sqlite3_bind_int64(up, 8, id);
    else sqlite3_bind_null(up, 8);
    if (sqlite3_step(up) != SQLITE_DONE) return -1;
    sqlite3_reset(up);
    if (id <= 0) id = sqlite3_last_insert_rowid(db);
    f->db_id = id;
    (void)ds;
    (void)di;
    (void)dc;
    for (size_t i = 0; i < f->n_syms; i++) {
        gsym *s = &f->syms[i];
        sqlite3_bind_int64(is, 1, id);
        sqlite3_bind_text(is, 2, s->name, -1, SQLITE_STATIC);
        sqlite3_bind_int(is, 3, s->kind);
        sqlite3_bind_int(is, 4, s->exported);
        sqlite3_bind_int(is, 5, (int)s->line);
        sqlite3_bind_int(is, 6, (int)s->end_line);
        if (sqlite3_step(is) != SQLITE_DONE) return -1;
        sqlite3_reset(is);
    }
    for (size_t i = 0; i < f->n_imports; i++) {
        sqlite3_bind_int64(ii, 1, id);
        sqlite3_bind_text(ii, 2, f->imports[i].spec, -1, SQLITE_STATIC);
        sqlite3_bind_null(ii, 3); /* resolved afterwards */
        if (sqlite3_step(ii) != SQLITE_DONE) return -1;
        sqlite3_reset(ii);
    }
    for (size_t i = 0; i < f->n_calls; i++) {
        sqlite3_bind_int64(ic, 1, id);
        sqlite3_bind_text(ic, 2, f->calls[i].name, -1, SQLITE_STATIC);
        sqlite3_bind_int(ic, 3, (int)f->calls[i].line);
        if (sqlite3_step(ic) != SQLITE_DONE) return -1;
        sqlite3_reset(ic);
    }
    sqlite3_stmt *iw = st[7];
    sqlite3_bind_int64(iw, 1, id);
    sqlite3_bind_int64(iw, 2, n_words);
    sqlite3_bind_blob(iw, 3, words->len ? words->p : "", (int)words->len, SQLITE_STATIC);
    if (sqlite3_step(iw) != SQLITE_DONE) return -1;
    sqlite3_reset(iw);
    return 0;
}

/* Words an import that can name a file must contain: its base name up to
 * the first '.' ("x" of x.py, x.d.ts) and, for a file that stands for its
 * directory (a/b/__init__.py, x/index.ts, x/mod.rs, lib.rs, main.rs, any Go
 * file), the directory's name.  Every resolver rule (resolve.c) maps a spec
 * to a file whose base name or, for those, directory name is written in
 * the spec, except relative specs made of dots and slashes only ("from ..
 * import x", "./"), which are always re-resolved.  Appends the words to the
 * JSON array in b. */
/* Appends the words an import must contain to name path: its base name
 * without extension and, for a file that stands for its directory, the
 * directory's name; each NUL-terminated. */
static void needles_of(const char *path, buf *b)
{
    const char *base = strrchr(path, '/');
    const char *bn = base ? base + 1 : path;
    const char *dot = strchr(bn, '.');
    size_t bl = dot ? (size_t)(dot - bn) : strlen(bn);
    buf_append(b, bn, bl);
    buf_putc(b, '\0');
    static const char *const pkg[] = {"__init__", "index", "mod", "lib", "main"};
    int dir = graph_lang_of_path(path) == LANG_GO;
    for (size_t k = 0; k < sizeof pkg / sizeof *pkg && !dir; k++)
        dir = strlen(pkg[k]) == bl && strncmp(bn, pkg[k], bl) == 0;
    if (base && dir) {
        const char *d = base;
        while (d > path && d[-1] != '/') d--;
        buf_append(b, d, (size_t)(base - d));
        buf_putc(b, '\0');
    }
}

/* Whether an import must be looked at again when files came or went: its
 * spec contains one of the needles, or is relative without a name. */
static int spec_affected(const char *spec, const char *needles, size_t len)
{
    const char *s = spec;
    while (*s == '.' || *s == '/') s++;
    if (!*s) return 1;
    for (const char *w = needles; w < needles + len; w += strlen(w) + 1)
        if (*w && strstr(spec, w)) return 1;
    return 0;
}

/* Resolves imports and writes the targets that changed.  all: every import
 * (a full build); else the unresolved imports of the re-parsed files
 * (langs[i] < 0) and, when files came or went (needles, nlen bytes: their
 * words, see needles_of), the imports affected (spec_affected).  The
 * filter runs here, not in SQL: one pass over the rows. */
static int resolve_imports(sqlite3 *db, graph_resolver *r, char **paths, int64_t *ids,
                           int *langs, size_t n, int all, const char *needles, size_t nlen,
                           size_t *resolved, size_t *imports)
{
    sqlite3_stmt *sel, *upd;
    if (sqlite3_prepare_v2(db, "SELECT rowid, file_id, spec, target FROM imports", -1, &sel,
                           NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_prepare_v2(db, "UPDATE imports SET target = ? WHERE rowid = ?", -1, &upd, NULL) !=
        SQLITE_OK) {
        sqlite3_finalize(sel);
        return -1;
    }
    int rc = 0;
    /* db id -> index in paths; ids are ascending in insertion order but
     * not dense: binary search a sorted copy */
    typedef struct idmap {
        int64_t id;
        uint32_t idx;
    } idmap;
    idmap *m = malloc(sizeof *m * (n ? n : 1));
    if (!m) rc = -1;
    for (size_t i = 0; i < n && rc == 0; i++) m[i] = (idmap){ids[i], (uint32_t)i};
    for (size_t i = 1; i < n && rc == 0; i++) { /* insertion sort on nearly sorted ids */
        idmap x = m[i];
        size_t j = i;
        while (j > 0 && m[j - 1].id > x.id) {
            m[j] = m[j - 1];
            j--;
        }
        m[j] = x;
    }
    while (rc == 0 && sqlite3_step(sel) == SQLITE_ROW) {
        int64_t rowid = sqlite3_column_int64(sel, 0), fid = sqlite3_column_int64(sel, 1);
        const char *spec = (const char *)sqlite3_column_text(sel, 2);
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (m[mid].id < fid) lo = mid + 1;
            else hi = mid;
        }
        if (lo >= n || m[lo].id != fid) continue;
        uint32_t from = m[lo].idx;
        int unresolved = sqlite3_column_type(sel, 3) == SQLITE_NULL;
        if (!all && !(unresolved && langs[from] < 0) &&
            !(needles && spec_affected(spec ? spec : "", needles, nlen)))
            continue;
        if (!spec) continue;
        int lang = langs[from] < 0 ? -langs[from] : langs[from];
        int32_t t = graph_resolve(r, paths[from], lang, spec);
        (*imports)++;
        int64_t old_target = sqlite3_column_type(sel, 3) == SQLITE_NULL ? -1
                                                                          : sqlite3_column_int64(sel, 3);
        int64_t new_target = t >= 0 && (uint32_t)t != from ? ids[t] : -1;
        if (new_target >= 0) (*resolved)++;
        /* most imports resolve as before when a few files come or go:
         * write only the changed ones */
        if (new_target == old_target) continue;
        if (new_target >= 0) sqlite3_bind_int64(upd, 1, new_target);
        else sqlite3_bind_null(upd, 1);
        sqlite3_bind_int64(upd, 2, rowid);
        if (sqlite3_step(upd) != SQLITE_DONE) rc = -1;
        sqlite3_reset(upd);
    }
    free(m);
    sqlite3_finalize(sel);
    sqlite3_finalize(upd);
    return rc;
}

/* Modification time (ns) of the repository's git index, or -1.  <repo>/.git
 * is tried first (no process); worktrees and other layouts ask git. */
static int64_t index_mtime_ns(const char *repo)
{
    char ip[4200];
    struct stat sb;
    snprintf(ip, sizeof ip, "%s/.git", repo);
    if (stat(ip, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(ip, sizeof ip, "%s/.git/index", repo);
    } else {
        const char *gd[] = {"rev-parse", "--git-dir", NULL};
        char *gitdir = graph_git_line(repo, gd);
        if (!gitdir) return -1;
        if (gitdir[0] == '/') snprintf(ip, sizeof ip, "%s/index", gitdir);
        else snprintf(ip, sizeof ip, "%s/%s/index", repo, gitdir);
        free(gitdir);
    }
    if (stat(ip, &sb) != 0) return -1;
    return (int64_t)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
}

int graph_build(const char *repo, const graph_build_opts *o, graph_build_stats *st, char **err)
{
    double t0 = now_ms();
    memset(st, 0, sizeof *st);
    *err = NULL;
    char *dbp = o->db_path ? util_strdup(o->db_path) : graph_db_path(repo);
    sqlite3 *db = NULL;
    if (!dbp || graph_db_open(dbp, 1, &db, err) != 0) {
        free(dbp);
        if (!*err) *err = util_strdup("out of memory");
        return -1;
    }
    free(dbp);
    int rc = 0, full = 0;
    char parser_s[8];
    snprintf(parser_s, sizeof parser_s, "%d", o->parser);
    char *ver = graph_db_meta(db, "schema"), *par = graph_db_meta(db, "parser");
    if (!ver || strcmp(ver, GRAPH_SCHEMA_VERSION) != 0 || !par || strcmp(par, parser_s) != 0) {
        full = 1;
        rc = exec_sql(db, "BEGIN; DELETE FROM files; DELETE FROM symbols; DELETE FROM imports;"
                          "DELETE FROM calls; DELETE FROM words; DELETE FROM cochange; DELETE FROM commit_files;"
                          "DELETE FROM meta; COMMIT;");
    }
    free(ver);
    free(par);

    /* the git index as the build starts: a later change of it (add,
     * checkout, commit, reset) makes the cache stale (graph_is_stale) */
    int64_t index_mt = index_mtime_ns(repo);
    /* 1. the file list */
    buf ls;
    buf_init(&ls);
    const char *lsargs[] = {"ls-files", "-z", "--cached", "--others", "--exclude-standard", NULL};
    if (rc == 0 && graph_git(repo, lsargs, &ls) != 0) {
        *err = util_strdup("not a git repository (git ls-files failed)");
        rc = -1;
    }
    char **paths = NULL;
    size_t n = 0, cap = 0;
    for (size_t off = 0; rc == 0 && off < ls.len;) {
        const char *p = ls.p + off;
        size_t l = strnlen(p, ls.len - off);
        off += l + 1;
        if (l == 0 || strncmp(p, ".clarity/", 9) == 0 || graph_lang_of_path(p) == LANG_NONE) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            char **np = realloc(paths, cap * sizeof *np);
            if (!np) {
                rc = -1;
                break;
            }
            paths = np;
        }
        if (n > 0 && strcmp(paths[n - 1], p) == 0) continue; /* unmerged entries repeat */
        if (!(paths[n] = util_strndup(p, l))) rc = -1;
        else n++;
    }
    buf_free(&ls);
    if (rc == 0 && n > 1) qsort(paths, n, sizeof *paths, cmp_strp);

    double t_ls = now_ms();
    /* 2. the cache's files */
    old_file *old = NULL;
    sqlite3_stmt *q = NULL;
    if (rc == 0 && sqlite3_prepare_v2(db, "SELECT id, path, size, mtime, hash FROM files", -1, &q,
                                      NULL) != SQLITE_OK)
        rc = -1;
    while (rc == 0 && sqlite3_step(q) == SQLITE_ROW) {
        old_file *of = calloc(1, sizeof *of);
        if (!of || !(of->path = util_strdup((const char *)sqlite3_column_text(q, 1)))) {
            free(of);
            rc = -1;
            break;
        }
        of->id = sqlite3_column_int64(q, 0);
        of->size = sqlite3_column_int64(q, 2);
        of->mtime = sqlite3_column_int64(q, 3);
        of->hash = (uint64_t)sqlite3_column_int64(q, 4);
        HASH_ADD_KEYPTR(hh, old, of->path, strlen(of->path), of);
    }
    sqlite3_finalize(q);
    if (!old) full = 1;
    /* the history is read by git while we parse */
    graph_history *hist =
        rc == 0 ? graph_history_start(repo, db, paths, n, o->max_commits, full) : NULL;
    if (rc == 0 && !hist) rc = -1;

    int64_t *ids = calloc(n ? n : 1, sizeof *ids);
    int *langs = calloc(n ? n : 1, sizeof *langs); /* negative: re-parsed this build */
    if (!ids || !langs) rc = -1;
    static const char *const sqls[8] = {
        "INSERT OR REPLACE INTO files(path, lang, is_test, size, mtime, hash, parsed_with, id) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
        "DELETE FROM symbols WHERE file_id = ?",
        "DELETE FROM imports WHERE file_id = ?",
        "DELETE FROM calls WHERE file_id = ?",
        "INSERT INTO symbols(file_id, name, kind, exported, line, end_line) VALUES(?, ?, ?, ?, ?, ?)",
        "INSERT INTO imports(file_id, spec, target) VALUES(?, ?, ?)",
        "INSERT INTO calls(file_id, name, line) VALUES(?, ?, ?)",
        "INSERT OR REPLACE INTO words(file_id, n, data) VALUES(?, ?, ?)",
    };
    sqlite3_stmt *stm[8] = {0};
    for (int k = 0; k < 8 && rc == 0; k++)
        if (sqlite3_prepare_v2(db, sqls[k], -1, &stm[k], NULL) != SQLITE_OK) rc = -1;
    sqlite3_stmt *touch = NULL;
    if (rc == 0 && sqlite3_prepare_v2(db, "UPDATE files SET size = ?, mtime = ? WHERE id = ?", -1,
                                      &touch, NULL) != SQLITE_OK)
        rc = -1;
    if (rc == 0) rc = exec_sql(db, "BEGIN");
    int set_changed = 0;
    buf needles; /* words of the files that came or went (needles_of) */
    buf_init(&needles);
    int bar = o->progress && isatty(2);
    /* Files to re-parse are collected in batches, parsed by several threads
     * (parsing is most of a build), then written in order by this one. */
    parse_job *jobs = rc == 0 ? calloc(PARSE_BATCH, sizeof *jobs) : NULL;
    if (rc == 0 && !jobs) rc = -1;
    size_t nj = 0;
    for (size_t i = 0; i <= n && rc == 0; i++) {
        if (i == n || nj == PARSE_BATCH) { /* flush the batch */
            if (parse_batch(o->parser, jobs, nj) != 0) rc = -1;
            for (size_t j = 0; j < nj; j++) {
                parse_job *jb = &jobs[j];
                if (rc == 0) rc = write_file(db, stm, &jb->f, jb->old_id, &jb->words, jb->n_words);
                st->parsed++;
                st->symbols += jb->f.n_syms;
                st->calls += jb->f.n_calls;
                ids[jb->idx] = jb->f.db_id;
                langs[jb->idx] = -jb->f.lang;
                graph_file_clear(&jb->f);
                buf_free(&jb->words);
                free(jb->head);
                free(jb->src);
            }
            nj = 0;
            if (i == n) break;
        }
        progress(bar, "parsing", i + 1, n);
        char full_path[4200];
        snprintf(full_path, sizeof full_path, "%s/%s", repo, paths[i]);
        struct stat sb;
        old_file *of;
        HASH_FIND(hh, old, paths[i], strlen(paths[i]), of);
        int lang = graph_lang_of_path(paths[i]);
        langs[i] = lang;
        if (stat(full_path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            ids[i] = of ? of->id : -1;
            if (of) of->seen = 1;
            continue;
        }
        int64_t mt = (int64_t)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
        if (of) of->seen = 1;
        if (of && of->size == sb.st_size && of->mtime == mt) {
            ids[i] = of->id;
            continue;
        }
        size_t len = 0;
        char *src = read_file(repo, paths[i], &len);
        uint64_t h = src ? graph_fnv64(src, len) : 0;
        if (of && of->hash == h) { /* touched, same content */
            ids[i] = of->id;
            sqlite3_bind_int64(touch, 1, sb.st_size);
            sqlite3_bind_int64(touch, 2, mt);
            sqlite3_bind_int64(touch, 3, of->id);
            if (sqlite3_step(touch) != SQLITE_DONE) rc = -1;
            sqlite3_reset(touch);
            free(src);
            continue;
        }
        parse_job *jb = &jobs[nj++];
        memset(jb, 0, sizeof *jb);
        buf_init(&jb->words);
        jb->idx = i;
        jb->old_id = of ? of->id : 0;
        jb->src = src;
        jb->len = len;
        if (!src && sb.st_size > MAX_FILE_BYTES) /* words as the query index read them */
            jb->head = read_head(repo, paths[i], CONTENT_BYTES, &jb->head_len);
        jb->f.path = paths[i];
        jb->f.lang = lang;
        jb->f.is_test = graph_is_test_path(paths[i]);
        jb->f.size = sb.st_size;
        jb->f.mtime_ns = mt;
        jb->f.hash = h;
        if (!of) {
            set_changed = 1;
            needles_of(paths[i], &needles);
        }
    }
    for (size_t j = 0; j < nj; j++) { /* after a failure */
        graph_file_clear(&jobs[j].f);
        buf_free(&jobs[j].words);
        free(jobs[j].head);
        free(jobs[j].src);
    }
    free(jobs);
    for (int k = 0; k < 8; k++) sqlite3_finalize(stm[k]);
    sqlite3_finalize(touch);

    double t_parse = now_ms();
    /* removed files */
    old_file *of, *tmp;
    sqlite3_stmt *del = NULL;
    if (rc == 0 && sqlite3_prepare_v2(db,
                                      "DELETE FROM files WHERE id = ?1; DELETE FROM symbols WHERE "
                                      "file_id = ?1;",
                                      -1, &del, NULL) != SQLITE_OK)
        rc = -1;
    HASH_ITER(hh, old, of, tmp) {
        if (rc == 0 && !of->seen) {
            static const char *const dq[5] = {"DELETE FROM files WHERE id = ?",
                                              "DELETE FROM symbols WHERE file_id = ?",
                                              "DELETE FROM imports WHERE file_id = ?",
                                              "DELETE FROM calls WHERE file_id = ?",
                                              "DELETE FROM words WHERE file_id = ?"};
            for (int k = 0; k < 5 && rc == 0; k++) {
                sqlite3_stmt *d;
                if (sqlite3_prepare_v2(db, dq[k], -1, &d, NULL) != SQLITE_OK) {
                    rc = -1;
                    break;
                }
                sqlite3_bind_int64(d, 1, of->id);
                if (sqlite3_step(d) != SQLITE_DONE) rc = -1;
                sqlite3_finalize(d);
            }
            st->removed++;
            set_changed = 1;
            needles_of(of->path, &needles);
        }
        HASH_DEL(old, of);
        free(of->path);
        free(of);
    }
    sqlite3_finalize(del);

    /* 3. imports */
    if (rc == 0 && (set_changed || st->parsed)) {
        graph_resolver *r = graph_resolver_new(paths, n);
        if (!r) rc = -1;
        else {
            /* many files came or went: resolving all imports is as cheap */
            int all = full || (set_changed && (buf_failed(&needles) || needles.len > 4096));
            rc = resolve_imports(db, r, paths, ids, langs, n, all,
                                 set_changed && !all ? needles.p : NULL, needles.len, &st->resolved,
                                 &st->imports);
        }
        graph_resolver_free(r);
    }
    buf_free(&needles);
    if (rc == 0) rc = exec_sql(db, "COMMIT");
    else exec_sql(db, "ROLLBACK");

    double t_imp = now_ms();
    /* 4. co-change */
    if (rc == 0) {
        progress(bar, "history", 0, 1);
        if (exec_sql(db, "BEGIN") != 0 ||
            graph_cochange_update(hist, db, &st->commits_read, &st->pairs, err) != 0) {
            exec_sql(db, "ROLLBACK");
            rc = -1;
        } else {
            rc = exec_sql(db, "COMMIT");
        }
        progress(bar, "history", 1, 1);
    }
    if (rc == 0) {
        const char *head = graph_history_head(hist);
        char stamp[32], imt[32];
        snprintf(stamp, sizeof stamp, "%lld", (long long)time(NULL));
        snprintf(imt, sizeof imt, "%lld", (long long)index_mt);
        if (graph_db_set_meta(db, "schema", GRAPH_SCHEMA_VERSION) != 0 ||
            graph_db_set_meta(db, "parser", parser_s) != 0 ||
            graph_db_set_meta(db, "head", head ? head : "") != 0 ||
            graph_db_set_meta(db, "built_at", stamp) != 0 ||
            graph_db_set_meta(db, "index_mtime", imt) != 0)
            rc = -1;
    }
    /* 5. the learned fusion: on a full build, or once enough new commits
     * came in since it was trained */
    if (rc == 0 && !o->no_learn && graph_history_head(hist)) {
        char *fu = graph_db_meta(db, "fusion"), *pend = graph_db_meta(db, "fusion_pending");
        long long pending = (pend ? atoll(pend) : 0) + (long long)st->commits_read;
        /* a model of another format version (other features) is retrained */
        int train = full || !fu || strncmp(fu, GF_FORMAT " ", sizeof GF_FORMAT) != 0 ||
                    pending >= GRAPH_RETRAIN_COMMITS;
        free(fu);
        free(pend);
        char num[32];
        snprintf(num, sizeof num, "%lld", train ? 0 : pending);
        if (train) {
            double t1 = now_ms();
            gi_fusion fus;
            char *ferr = NULL;
            char *path = o->db_path ? util_strdup(o->db_path) : graph_db_path(repo);
            /* a failed training keeps the build (queries use the defaults) */
            if (path && graph_fusion_train(repo, path, db, &fus, &ferr) == 0) {
                st->trained = 1;
                st->fusion = fus.info;
            }
            free(ferr);
            free(path);
            st->fusion_ms = now_ms() - t1;
        }
        if (graph_db_set_meta(db, "fusion_pending", num) != 0) rc = -1;
    }
    /* without learning, a model trained before goes too: the defaults rank */
    if (rc == 0 && o->no_learn)
        rc = exec_sql(db, "DELETE FROM meta WHERE key IN ('fusion', 'fusion_pending')");
    graph_history_free(hist);
    if (rc != 0 && !*err) *err = util_strdup(sqlite3_errmsg(db));
    sqlite3_close(db);
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
    free(ids);
    free(langs);
    st->files = n;
    st->full = full;
    st->ms = now_ms() - t0;
    if (getenv("CLARITY_GRAPH_TIMING")) {
        struct rusage self, kids;
        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &kids);
        fprintf(stderr,
                "graph build: ls %.1f ms, stat+parse %.1f, imports %.1f, history+meta %.1f (of which "
                "fusion %.1f); peak RSS %ld MB (git %ld MB)\n",
                t_ls - t0, t_parse - t_ls, t_imp - t_parse, now_ms() - t_imp, st->fusion_ms,
                self.ru_maxrss / 1024,
                kids.ru_maxrss / 1024);
    }
    return rc;
}

int graph_is_stale(const char *repo, const char *db_path)
{
    char *dbp = db_path ? util_strdup(db_path) : graph_db_path(repo);
    if (!dbp) return -1;
    struct stat sb;
    if (stat(dbp, &sb) != 0) {
        free(dbp);
        return -1;
    }
    sqlite3 *db;
    char *err = NULL;
    int rc = graph_db_open(dbp, 0, &db, &err);
    free(dbp);
    free(err);
    if (rc != 0) return -1;
    char *head = graph_db_meta(db, "head"), *built = graph_db_meta(db, "built_at");
    char *imt = graph_db_meta(db, "index_mtime");
    sqlite3_close(db);
    const char *rev[] = {"rev-parse", "--verify", "-q", "HEAD", NULL};
    char *now = graph_git_line(repo, rev);
    int stale = !head || strcmp(head, now ? now : "") != 0;
    /* the index changes with every add, checkout and commit: compared to
     * its time when the build started (ns), else (older caches) to the
     * build's time in seconds */
    if (!stale) {
        int64_t mt = index_mtime_ns(repo);
        if (imt && *imt) stale = mt != (int64_t)atoll(imt);
        else if (built) stale = mt >= 0 && mt / 1000000000LL > atoll(built);
    }
    free(imt);
    free(head);
    free(built);
    free(now);
    return stale;
}
