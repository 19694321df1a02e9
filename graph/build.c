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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "index.h"

#define MAX_FILE_BYTES (1024 * 1024)

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

static int exec_sql(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static int cmp_strp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The statements a build uses, prepared once. */
enum {
    S_UPSERT_FILE, S_TOUCH_FILE, S_DEL_SYMBOLS, S_DEL_IMPORTS, S_DEL_CALLS, S_DEL_WORDS,
    S_DEL_FILE, S_ADD_SYMBOL, S_ADD_IMPORT, S_ADD_CALL, S_PUT_WORDS, S__COUNT
};
static const char *const build_sql[S__COUNT] = {
    [S_UPSERT_FILE] = "INSERT OR REPLACE INTO files(path, lang, is_test, size, mtime, hash, "
                      "parsed_with, id) VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
    [S_TOUCH_FILE] = "UPDATE files SET size = ?, mtime = ? WHERE id = ?",
    [S_DEL_SYMBOLS] = "DELETE FROM symbols WHERE file_id = ?",
    [S_DEL_IMPORTS] = "DELETE FROM imports WHERE file_id = ?",
    [S_DEL_CALLS] = "DELETE FROM calls WHERE file_id = ?",
    [S_DEL_WORDS] = "DELETE FROM words WHERE file_id = ?",
    [S_DEL_FILE] = "DELETE FROM files WHERE id = ?",
    [S_ADD_SYMBOL] = "INSERT INTO symbols(file_id, name, kind, exported, line, end_line) "
                     "VALUES(?, ?, ?, ?, ?, ?)",
    [S_ADD_IMPORT] = "INSERT INTO imports(file_id, spec, target) VALUES(?, ?, ?)",
    [S_ADD_CALL] = "INSERT INTO calls(file_id, name, line) VALUES(?, ?, ?)",
    [S_PUT_WORDS] = "INSERT OR REPLACE INTO words(file_id, n, data) VALUES(?, ?, ?)",
};

/* Steps a bound statement to completion and resets it. */
static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_reset(st);
    return rc;
}

/* Runs one of the "... WHERE (file_)id = ?" statements for id. */
static int by_id(sqlite3_stmt *st, int64_t id)
{
    sqlite3_bind_int64(st, 1, id);
    return step_done(st);
}

static int write_symbols(sqlite3_stmt *is, const gfile *f, int64_t id)
{
    for (size_t i = 0; i < f->n_syms; i++) {
        const gsym *s = &f->syms[i];
        sqlite3_bind_int64(is, 1, id);
        sqlite3_bind_text(is, 2, s->name, -1, SQLITE_STATIC);
        sqlite3_bind_int(is, 3, s->kind);
        sqlite3_bind_int(is, 4, s->exported);
        sqlite3_bind_int(is, 5, (int)s->line);
        sqlite3_bind_int(is, 6, (int)s->end_line);
        if (step_done(is) != 0) return -1;
    }
    return 0;
}

static int write_refs(sqlite3_stmt *ii, sqlite3_stmt *ic, const gfile *f, int64_t id)
{
    for (size_t i = 0; i < f->n_imports; i++) {
        sqlite3_bind_int64(ii, 1, id);
        sqlite3_bind_text(ii, 2, f->imports[i].spec, -1, SQLITE_STATIC);
        sqlite3_bind_null(ii, 3); /* resolved afterwards */
        if (step_done(ii) != 0) return -1;
    }
    for (size_t i = 0; i < f->n_calls; i++) {
        sqlite3_bind_int64(ic, 1, id);
        sqlite3_bind_text(ic, 2, f->calls[i].name, -1, SQLITE_STATIC);
        sqlite3_bind_int(ic, 3, (int)f->calls[i].line);
        if (step_done(ic) != 0) return -1;
    }
    return 0;
}

/* Writes one re-parsed file: its row, symbols, imports, calls and words. */
static int write_file(sqlite3 *db, sqlite3_stmt **st, gfile *f, int64_t old_id, const buf *words,
                      uint32_t n_words)
{
    int64_t id = old_id;
    if (id > 0 && (by_id(st[S_DEL_SYMBOLS], id) != 0 || by_id(st[S_DEL_IMPORTS], id) != 0 ||
                   by_id(st[S_DEL_CALLS], id) != 0))
        return -1;
    sqlite3_stmt *up = st[S_UPSERT_FILE];
    sqlite3_bind_text(up, 1, f->path, -1, SQLITE_STATIC);
    sqlite3_bind_int(up, 2, f->lang);
    sqlite3_bind_int(up, 3, f->is_test);
    sqlite3_bind_int64(up, 4, f->size);
    sqlite3_bind_int64(up, 5, f->mtime_ns);
    sqlite3_bind_int64(up, 6, (int64_t)f->hash);
    sqlite3_bind_int(up, 7, f->parsed_with);
    if (id > 0) sqlite3_bind_int64(up, 8, id);
    else sqlite3_bind_null(up, 8);
    if (step_done(up) != 0) return -1;
    if (id <= 0) id = sqlite3_last_insert_rowid(db);
    f->db_id = id;
    if (write_symbols(st[S_ADD_SYMBOL], f, id) != 0 ||
        write_refs(st[S_ADD_IMPORT], st[S_ADD_CALL], f, id) != 0)
        return -1;
    sqlite3_stmt *iw = st[S_PUT_WORDS];
    sqlite3_bind_int64(iw, 1, id);
    sqlite3_bind_int64(iw, 2, n_words);
    sqlite3_bind_blob(iw, 3, words->len ? words->p : "", (int)words->len, SQLITE_STATIC);
    return step_done(iw);
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

/* One build: what its phases share. */
typedef struct builder {
    const char *repo;
    const graph_build_opts *o;
    graph_build_stats *st;
    char **err;
    sqlite3 *db;
    int full, bar;
    char parser_s[8];
    int64_t index_mt;        /* the git index's mtime as the build started */
    char **paths;            /* the files, sorted */
    size_t n;
    int64_t *ids;            /* their cache rows */
    int *langs;              /* their languages; negative: re-parsed this build */
    old_file *old;           /* the cache's files before the build */
    graph_history *hist;     /* git log, read on its thread */
    sqlite3_stmt *stm[S__COUNT];
    int set_changed;         /* files came or went */
    buf needles;             /* their words (needles_of) */
    double t_ls, t_parse, t_imp;
} builder;

/* Opens (creates) the cache; a schema or parser change empties it. */
static int open_cache(builder *b)
{
    char *dbp = b->o->db_path ? util_strdup(b->o->db_path) : graph_db_path(b->repo);
    if (!dbp || graph_db_open(dbp, 1, &b->db, b->err) != 0) {
        free(dbp);
        return -1;
    }
    free(dbp);
    snprintf(b->parser_s, sizeof b->parser_s, "%d", b->o->parser);
    char *ver = graph_db_meta(b->db, "schema"), *par = graph_db_meta(b->db, "parser");
    int rc = 0;
    if (!ver || strcmp(ver, GRAPH_SCHEMA_VERSION) != 0 || !par || strcmp(par, b->parser_s) != 0) {
        b->full = 1;
        rc = exec_sql(b->db, "BEGIN; DELETE FROM files; DELETE FROM symbols; DELETE FROM imports;"
                             "DELETE FROM calls; DELETE FROM words; DELETE FROM cochange; "
                             "DELETE FROM commit_files; DELETE FROM meta; COMMIT;");
    }
    free(ver);
    free(par);
    return rc;
}

/* 1. the files git knows (tracked, and untracked but not ignored) in the
 * languages we parse, sorted. */
static int list_files(builder *b)
{
    buf ls;
    buf_init(&ls);
    const char *lsargs[] = {"ls-files", "-z", "--cached", "--others", "--exclude-standard", NULL};
    if (graph_git(b->repo, lsargs, &ls) != 0) {
        buf_free(&ls);
        *b->err = util_strdup("not a git repository (git ls-files failed)");
        return -1;
    }
    int rc = 0;
    size_t cap = 0;
    for (size_t off = 0; rc == 0 && off < ls.len;) {
        const char *p = ls.p + off;
        size_t l = strnlen(p, ls.len - off);
        off += l + 1;
        if (l == 0 || strncmp(p, ".clarity/", 9) == 0 || graph_lang_of_path(p) == LANG_NONE) continue;
        if (b->n == cap) {
            cap = cap ? cap * 2 : 256;
            char **np = realloc(b->paths, cap * sizeof *np);
            if (!np) {
                rc = -1;
                break;
            }
            b->paths = np;
        }
        if (b->n > 0 && strcmp(b->paths[b->n - 1], p) == 0) continue; /* unmerged entries repeat */
        if (!(b->paths[b->n] = util_strndup(p, l))) rc = -1;
        else b->n++;
    }
    buf_free(&ls);
    if (rc == 0 && b->n > 1) qsort(b->paths, b->n, sizeof *b->paths, cmp_strp);
    return rc;
}

/* 2. the files the cache holds, by path; none: a full build. */
static int load_cached_files(builder *b)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(b->db, "SELECT id, path, size, mtime, hash FROM files", -1, &q, NULL) !=
        SQLITE_OK)
        return -1;
    int rc = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
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
        HASH_ADD_KEYPTR(hh, b->old, of->path, strlen(of->path), of);
    }
    sqlite3_finalize(q);
    if (!b->old) b->full = 1;
    return rc;
}

static int prepare_statements(builder *b)
{
    for (int k = 0; k < S__COUNT; k++)
        if (sqlite3_prepare_v2(b->db, build_sql[k], -1, &b->stm[k], NULL) != SQLITE_OK) return -1;
    b->ids = calloc(b->n ? b->n : 1, sizeof *b->ids);
    b->langs = calloc(b->n ? b->n : 1, sizeof *b->langs);
    return b->ids && b->langs ? 0 : -1;
}

static void job_free(parse_job *jb)
{
    graph_file_clear(&jb->f);
    buf_free(&jb->words);
    free(jb->head);
    free(jb->src);
}

/* Parses the batch and writes it in order. */
static int flush_batch(builder *b, parse_job *jobs, size_t nj)
{
    int rc = graph_parse_batch(b->o->parser, jobs, nj);
    for (size_t j = 0; j < nj; j++) {
        parse_job *jb = &jobs[j];
        if (rc == 0)
            rc = write_file(b->db, b->stm, &jb->f, jb->old_id, &jb->words, jb->n_words);
        b->st->parsed++;
        b->st->symbols += jb->f.n_syms;
        b->st->calls += jb->f.n_calls;
        b->ids[jb->idx] = jb->f.db_id;
        b->langs[jb->idx] = -jb->f.lang;
        job_free(jb);
    }
    return rc;
}

/* File i: kept when its size and mtime (or, touched, its content hash)
 * match the cache; otherwise a job to re-parse it (*jb filled, returns 1).
 * Returns 0 when kept, -1 on failure. */
static int consider_file(builder *b, size_t i, parse_job *jb)
{
    const char *path = b->paths[i];
    char full_path[4200];
    snprintf(full_path, sizeof full_path, "%s/%s", b->repo, path);
    struct stat sb;
    old_file *of;
    HASH_FIND(hh, b->old, path, strlen(path), of);
    int lang = graph_lang_of_path(path);
    b->langs[i] = lang;
    if (of) of->seen = 1;
    if (stat(full_path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        b->ids[i] = of ? of->id : -1;
        return 0;
    }
    int64_t mt = (int64_t)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
    if (of && of->size == sb.st_size && of->mtime == mt) {
        b->ids[i] = of->id;
        return 0;
    }
    size_t len = 0;
    char *src = read_file(b->repo, path, &len);
    uint64_t h = src ? graph_fnv64(src, len) : 0;
    if (of && of->hash == h) { /* touched, same content */
        b->ids[i] = of->id;
        free(src);
        sqlite3_stmt *t = b->stm[S_TOUCH_FILE];
        sqlite3_bind_int64(t, 1, sb.st_size);
        sqlite3_bind_int64(t, 2, mt);
        sqlite3_bind_int64(t, 3, of->id);
        return step_done(t);
    }
    memset(jb, 0, sizeof *jb);
    buf_init(&jb->words);
    jb->idx = i;
    jb->old_id = of ? of->id : 0;
    jb->src = src;
    jb->len = len;
    if (!src && sb.st_size > MAX_FILE_BYTES) /* words as the query index read them */
        jb->head = read_head(b->repo, path, GRAPH_CONTENT_BYTES, &jb->head_len);
    jb->f.path = b->paths[i];
    jb->f.lang = lang;
    jb->f.is_test = graph_is_test_path(path);
    jb->f.size = sb.st_size;
    jb->f.mtime_ns = mt;
    jb->f.hash = h;
    if (!of) {
        b->set_changed = 1;
        needles_of(path, &b->needles);
    }
    return 1;
}

/* Every file: kept, or re-parsed in batches parsed by several threads and
 * written in order by this one. */
static int scan_files(builder *b)
{
    parse_job *jobs = calloc(GRAPH_PARSE_BATCH, sizeof *jobs);
    if (!jobs) return -1;
    int rc = 0;
    size_t nj = 0;
    for (size_t i = 0; i < b->n && rc == 0; i++) {
        progress(b->bar, "parsing", i + 1, b->n);
        rc = consider_file(b, i, &jobs[nj]);
        if (rc == 1) {
            rc = 0;
            if (++nj == GRAPH_PARSE_BATCH) {
                rc = flush_batch(b, jobs, nj);
                nj = 0;
            }
        }
    }
    if (rc == 0) rc = flush_batch(b, jobs, nj);
    else
        for (size_t j = 0; j < nj; j++) job_free(&jobs[j]);
    free(jobs);
    return rc;
}

/* The cache's files that are gone from the repository. */
static int remove_gone(builder *b)
{
    static const int dels[] = {S_DEL_FILE, S_DEL_SYMBOLS, S_DEL_IMPORTS, S_DEL_CALLS, S_DEL_WORDS};
    int rc = 0;
    old_file *of, *tmp;
    HASH_ITER(hh, b->old, of, tmp) {
        if (rc == 0 && !of->seen) {
            for (size_t k = 0; k < sizeof dels / sizeof *dels && rc == 0; k++)
                rc = by_id(b->stm[dels[k]], of->id);
            b->st->removed++;
            b->set_changed = 1;
            needles_of(of->path, &b->needles);
        }
        HASH_DEL(b->old, of);
        free(of->path);
        free(of);
    }
    return rc;
}

/* 3. imports: all of them on a full build or when many files came or
 * went, else those a change can affect. */
static int resolve(builder *b)
{
    if (!b->set_changed && !b->st->parsed) return 0;
    graph_resolver *r = graph_resolver_new(b->paths, b->n);
    if (!r) return -1;
    int all = b->full || (b->set_changed && (buf_failed(&b->needles) || b->needles.len > 4096));
    int rc = resolve_imports(b->db, r, b->paths, b->ids, b->langs, b->n, all,
                             b->set_changed && !all ? b->needles.p : NULL, b->needles.len,
                             &b->st->resolved, &b->st->imports);
    graph_resolver_free(r);
    return rc;
}

/* 4. co-change from the commits git log streamed meanwhile. */
static int update_history(builder *b)
{
    progress(b->bar, "history", 0, 1);
    int rc;
    if (exec_sql(b->db, "BEGIN") != 0 ||
        graph_cochange_update(b->hist, b->db, &b->st->commits_read, &b->st->pairs, b->err) != 0) {
        exec_sql(b->db, "ROLLBACK");
        rc = -1;
    } else {
        rc = exec_sql(b->db, "COMMIT");
    }
    progress(b->bar, "history", 1, 1);
    return rc;
}

static int write_meta(builder *b)
{
    const char *head = graph_history_head(b->hist);
    char stamp[32], imt[32];
    snprintf(stamp, sizeof stamp, "%lld", (long long)time(NULL));
    snprintf(imt, sizeof imt, "%lld", (long long)b->index_mt);
    if (graph_db_set_meta(b->db, "schema", GRAPH_SCHEMA_VERSION) != 0 ||
        graph_db_set_meta(b->db, "parser", b->parser_s) != 0 ||
        graph_db_set_meta(b->db, "head", head ? head : "") != 0 ||
        graph_db_set_meta(b->db, "built_at", stamp) != 0 ||
        graph_db_set_meta(b->db, "index_mtime", imt) != 0)
        return -1;
    return 0;
}

/* Files (1-3) in one transaction. */
static int update_files(builder *b)
{
    if (prepare_statements(b) != 0 || exec_sql(b->db, "BEGIN") != 0) return -1;
    int rc = scan_files(b);
    b->t_parse = now_ms();
    if (rc == 0) rc = remove_gone(b);
    if (rc == 0) rc = resolve(b);
    if (rc == 0) return exec_sql(b->db, "COMMIT");
    exec_sql(b->db, "ROLLBACK");
    return -1;
}

static void builder_free(builder *b)
{
    for (int k = 0; k < S__COUNT; k++) sqlite3_finalize(b->stm[k]);
    graph_history_free(b->hist);
    sqlite3_close(b->db);
    old_file *of, *tmp;
    HASH_ITER(hh, b->old, of, tmp) {
        HASH_DEL(b->old, of);
        free(of->path);
        free(of);
    }
    for (size_t i = 0; i < b->n; i++) free(b->paths[i]);
    free(b->paths);
    free(b->ids);
    free(b->langs);
    buf_free(&b->needles);
}

int graph_build_cache(const char *repo, const graph_build_opts *o, graph_build_stats *st,
                      char **err)
{
    double t0 = now_ms();
    memset(st, 0, sizeof *st);
    *err = NULL;
    builder b = {.repo = repo, .o = o, .st = st, .err = err, .bar = o->progress && isatty(2)};
    buf_init(&b.needles);
    int rc = open_cache(&b);
    /* the git index as the build starts: a later change of it (add,
     * checkout, commit, reset) makes the cache stale (graph_is_stale) */
    b.index_mt = index_mtime_ns(repo);
    if (rc == 0) rc = list_files(&b);
    b.t_ls = now_ms();
    if (rc == 0) rc = load_cached_files(&b);
    if (rc == 0) { /* the history is read by git while we parse */
        b.hist = graph_history_start(repo, b.db, b.paths, b.n, o->max_commits, b.full);
        if (!b.hist) rc = -1;
    }
    if (rc == 0) rc = update_files(&b);
    b.t_imp = now_ms();
    if (rc == 0) rc = update_history(&b);
    if (rc == 0) rc = write_meta(&b);
    st->files = b.n;
    st->full = b.full;
    st->ms = now_ms() - t0;
    if (rc != 0 && !*err) *err = util_strdup(b.db ? sqlite3_errmsg(b.db) : "out of memory");
    if (getenv("CLARITY_GRAPH_TIMING"))
        fprintf(stderr, "graph build: ls %.1f ms, stat+parse %.1f, imports %.1f, history+meta %.1f\n",
                b.t_ls - t0, b.t_parse - b.t_ls, b.t_imp - b.t_parse, now_ms() - b.t_imp);
    builder_free(&b);
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
