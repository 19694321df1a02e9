/* intel.c: code intelligence from the graph cache: zoom (a file's or a
 * directory's public contract), impact (the transitive callers of a
 * symbol) and co-change (the files that change with a file).
 *
 * Every answer comes from <repo>/.clarity/graph.db (api.c refreshes it
 * first when the repository moved, as for predictions) and, for signatures and doc
 * comments, from the source file itself.  Calls are resolved by name and
 * imports, not types: a call of N from file F reaches the definition of N
 * in F, in a file F imports, or the only file that defines N.
 *
 * Paths are confined to the repository: absolute paths elsewhere, ".."
 * segments and symlinks that leave it are refused.
 */
#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../include/clarity.h"
#include "../util/fs.h"
#include "internal.h"

#define ZOOM_MAX_BYTES (256 * 1024) /* level 2 shows at most this much */
#define SIG_MAX_LINES 8
#define DOC_MAX 600
#define IMPACT_MAX_NODES 400
#define IMPACT_MAX_SITES 4000  /* resolved call sites expanded in all */
#define IMPACT_MAX_ROWS 20000  /* call sites read in all: bounds names called everywhere (eval, __new__) */

/* ---- the repository and its paths ------------------------------------- */

/* The canonical repository and its graph (api.c refreshed it when due).  On a
 * missing graph the answer is the structured graph_unavailable object in
 * out and 1 is returned; -1 with *msg on failure; 0 ok. */
static int open_graph(const char *repo_in, char **repo, sqlite3 **db, buf *out, char **msg)
{
    *repo = NULL;
    *db = NULL;
    char *r = realpath(repo_in, NULL);
    if (!r) {
        *msg = util_format("repo %s: no such directory", repo_in);
        return -1;
    }
    char *dbp = graph_db_path(r);
    struct stat sb;
    if (!dbp || stat(dbp, &sb) != 0) {
        buf_puts(out, "{\"error\":\"graph_unavailable\",\"message\":");
        char m[PATH_MAX + 64];
        snprintf(m, sizeof m, "no code graph for %s: run clarity graph build %s", r, r);
        buf_json_str(out, m, strlen(m));
        buf_puts(out, ",\"repo\":");
        buf_json_str(out, r, strlen(r));
        buf_putc(out, '}');
        free(dbp);
        free(r);
        return 1;
    }
    char *err = NULL;
    if (graph_db_open(dbp, 0, db, &err) != 0) {
        *msg = err;
        free(dbp);
        free(r);
        return -1;
    }
    free(dbp);
    *repo = r;
    return 0;
}

/* path (relative to repo, or absolute inside it) as a clean relative path;
 * NULL with *msg when it leaves the repository.  "" is the root.  With
 * may_be_gone, a path that no longer exists (co-change history) passes the
 * syntactic checks alone: nothing is read from it. */
static char *confine(const char *repo, const char *path, int may_be_gone, char **msg)
{
    size_t rl = strlen(repo);
    const char *p = path;
    if (*p == '/') {
        if (strncmp(p, repo, rl) != 0 || (p[rl] && p[rl] != '/')) {
            *msg = util_format("path %s is outside the repository %s", path, repo);
            return NULL;
        }
        p += rl;
    }
    while (*p == '/' || (p[0] == '.' && p[1] == '/')) p += *p == '/' ? 1 : 2;
    char *rel = util_strdup(p);
    if (!rel) return NULL;
    size_t n = strlen(rel);
    while (n && rel[n - 1] == '/') rel[--n] = '\0';
    if (strcmp(rel, ".") == 0) rel[0] = '\0';
    for (const char *s = rel; *s;) { /* no ".." segment */
        const char *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == 2 && s[0] == '.' && s[1] == '.') {
            *msg = util_format("path %s leaves the repository (..)", path);
            free(rel);
            return NULL;
        }
        s += len + (e != NULL);
    }
    char *full = util_format("%s/%s", repo, rel), *real = full ? realpath(full, NULL) : NULL;
    struct stat lsb;
    if (!real && may_be_gone && full && lstat(full, &lsb) != 0) {
        free(full);
        return rel;
    }
    if (!real) {
        *msg = util_format("path %s: no such file or directory in %s", path, repo);
        free(full), free(rel);
        return NULL;
    }
    if (strncmp(real, repo, rl) != 0 || (real[rl] && real[rl] != '/')) {
        *msg = util_format("path %s leaves the repository through a symlink", path);
        free(full), free(real), free(rel);
        return NULL;
    }
    free(full);
    free(real);
    return rel;
}

/* ---- zoom -------------------------------------------------------------- */

typedef struct zsym {
    char *name;
    int kind, exported;
    int line, end_line;
} zsym;

static const char *kind_name(int k)
{
    static const char *const names[SYM__COUNT] = {"function", "class", "method", "variable",
                                                  "type", "module", "macro"};
    return k >= 0 && k < SYM__COUNT ? names[k] : "symbol";
}

/* The file's lines: an array of pointers into text (NUL-terminated lines). */
typedef struct lines {
    char *text;
    char **v;
    int n;
} lines;

static int lines_read(const char *path, lines *l)
{
    memset(l, 0, sizeof *l);
    size_t len;
    l->text = util_read_file(path, 64u << 20, &len);
    if (!l->text) return -1;
    int cap = 64;
    l->v = malloc((size_t)cap * sizeof *l->v);
    if (!l->v) return -1;
    for (char *p = l->text; p && *p;) {
        if (l->n == cap) {
            char **v = realloc(l->v, (size_t)(cap *= 2) * sizeof *v);
            if (!v) return -1;
            l->v = v;
        }
        l->v[l->n++] = p;
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        p = nl ? nl + 1 : NULL;
    }
    return 0;
}

static void lines_free(lines *l)
{
    free(l->text);
    free(l->v);
}

static const char *ltrim(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

/* The signature: the symbol's first lines up to the body ("{", or ":" at
 * the end of a Python line), at most SIG_MAX_LINES, joined by spaces. */
static void signature(const lines *l, int lang, int kind, int line, buf *out)
{
    int max = kind == SYM_VARIABLE ? 1 : SIG_MAX_LINES; /* an assignment: its first line */
    for (int i = line - 1; i >= 0 && i < l->n && i < line - 1 + max; i++) {
        const char *s = ltrim(l->v[i]);
        size_t n = strlen(s);
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\r')) n--;
        const char *brace = lang == LANG_PYTHON ? NULL : memchr(s, '{', n);
        size_t take = brace ? (size_t)(brace - s) : n;
        while (take && s[take - 1] == ' ') take--;
        if (out->len) buf_putc(out, ' ');
        buf_append(out, s, take);
        if (brace || (n && (s[n - 1] == ';' || (lang == LANG_PYTHON && s[n - 1] == ':')))) break;
        if (lang == LANG_C && s[0] == '#' && !(n && s[n - 1] == '\\')) break; /* a macro */
    }
}

/* The doc comment: Python's docstring after the signature; elsewhere the
 * comment lines right above the symbol. */
static void doc_comment(const lines *l, int lang, int kind, int line, buf *out)
{
    if (lang == LANG_PYTHON) {
        if (kind == SYM_VARIABLE) return; /* no docstring of its own */
        int i = line - 1;
        while (i < l->n && i < line - 1 + SIG_MAX_LINES) {
            const char *s = l->v[i++];
            size_t n = strlen(s);
            while (n && (s[n - 1] == ' ' || s[n - 1] == '\r')) n--;
            if (n && s[n - 1] == ':') break;
        }
        if (i >= l->n) return;
        const char *s = ltrim(l->v[i]);
        if (strncmp(s, "\"\"\"", 3) != 0 && strncmp(s, "'''", 3) != 0) return;
        char q[4] = {s[0], s[0], s[0], 0};
        s += 3;
        for (int k = 0; i + k < l->n && k < 20 && out->len < DOC_MAX; k++) {
            const char *t = k ? ltrim(l->v[i + k]) : s, *end = strstr(t, q);
            if (out->len && *t) buf_putc(out, ' ');
            buf_append(out, t, end ? (size_t)(end - t) : strlen(t));
            if (end) break;
        }
        return;
    }
    int first = line - 1;
    while (first > 0 && line - first <= 20) {
        const char *s = ltrim(l->v[first - 1]);
        if (strncmp(s, "//", 2) == 0 || strncmp(s, "/*", 2) == 0 || s[0] == '*' ||
            (strncmp(s, "#[", 2) != 0 && lang == LANG_RUST && strncmp(s, "///", 3) == 0))
            first--;
        else
            break;
    }
    for (int i = first; i < line - 1 && out->len < DOC_MAX; i++) {
        const char *s = ltrim(l->v[i]);
        while (*s == '/' || *s == '*' || *s == '!') s++;
        s = ltrim(s);
        size_t n = strlen(s);
        while (n && (s[n - 1] == '/' || s[n - 1] == '*' || s[n - 1] == ' ')) n--;
        if (!n) continue;
        if (out->len) buf_putc(out, ' ');
        buf_append(out, s, n);
    }
}

/* Python's __all__ = ["a", "b"]: the names, or NULL when absent. */
static char *python_all(const lines *l)
{
    for (int i = 0; i < l->n; i++) {
        if (strncmp(l->v[i], "__all__", 7) != 0) continue;
        buf b;
        buf_init(&b);
        buf_putc(&b, '|');
        for (int k = i; k < l->n && k < i + 200; k++) {
            const char *s = l->v[k];
            for (const char *q = s; (q = strpbrk(q, "\"'")) != NULL;) {
                const char *e = strchr(q + 1, *q);
                if (!e) break;
                buf_append(&b, q + 1, (size_t)(e - q - 1));
                buf_putc(&b, '|');
                q = e + 1;
            }
            if (strchr(s, ']') || strchr(s, ')')) break;
        }
        return buf_steal(&b, NULL);
    }
    return NULL;
}

static int is_public(int lang, const zsym *s, const char *all)
{
    if (lang == LANG_PYTHON) {
        if (all && s->kind != SYM_METHOD) {
            char key[300];
            snprintf(key, sizeof key, "|%s|", s->name);
            return strstr(all, key) != NULL;
        }
        return s->name[0] != '_' || (strncmp(s->name, "__", 2) == 0 && strlen(s->name) > 4 &&
                                      strcmp(s->name + strlen(s->name) - 2, "__") == 0);
    }
    return s->exported;
}

/* A class member: TypeScript/JavaScript members are public unless marked
 * private or protected (or named #x); elsewhere as the language says. */
static int member_public(int lang, const zsym *s, const lines *l)
{
    if ((lang == LANG_TS || lang == LANG_TSX || lang == LANG_JS) && s->line >= 1 && s->line <= l->n) {
        const char *t = ltrim(l->v[s->line - 1]);
        return !(strncmp(t, "private ", 8) == 0 || strncmp(t, "protected ", 10) == 0 || t[0] == '#' ||
                 s->name[0] == '#');
    }
    return is_public(lang, s, NULL);
}

static int file_id(sqlite3 *db, const char *rel, int *lang)
{
    sqlite3_stmt *st;
    int id = -1;
    if (sqlite3_prepare_v2(db, "SELECT id, lang FROM files WHERE path = ?", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, rel, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
        id = sqlite3_column_int(st, 0);
        *lang = sqlite3_column_int(st, 1);
    }
    sqlite3_finalize(st);
    return id;
}

static size_t file_syms(sqlite3 *db, int fid, zsym **out)
{
    sqlite3_stmt *st;
    *out = NULL;
    if (sqlite3_prepare_v2(db, "SELECT name, kind, exported, line, end_line FROM symbols WHERE file_id = ? "
                               "ORDER BY line, end_line DESC", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int(st, 1, fid);
    size_t n = 0, cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            zsym *v = realloc(*out, (cap = cap ? cap * 2 : 32) * sizeof *v);
            if (!v) break;
            *out = v;
        }
        zsym *z = &(*out)[n];
        z->name = util_strdup((const char *)sqlite3_column_text(st, 0));
        if (!z->name) break;
        z->kind = sqlite3_column_int(st, 1);
        z->exported = sqlite3_column_int(st, 2);
        z->line = sqlite3_column_int(st, 3);
        z->end_line = sqlite3_column_int(st, 4);
        n++;
    }
    sqlite3_finalize(st);
    return n;
}

static void syms_free(zsym *v, size_t n)
{
    for (size_t i = 0; i < n; i++) free(v[i].name);
    free(v);
}

/* One symbol as JSON, and its members (inside its lines) when a class. */
static size_t zoom_sym(const zsym *v, size_t n, size_t i, int level, int lang, const char *all,
                       const lines *l, json_t *arr)
{
    const zsym *s = &v[i];
    buf sig, doc;
    buf_init(&sig);
    buf_init(&doc);
    signature(l, lang, s->kind, s->line, &sig);
    doc_comment(l, lang, s->kind, s->line, &doc);
    int pub = s->kind == SYM_METHOD ? member_public(lang, s, l) : is_public(lang, s, all);
    json_t *o = json_pack("{s:s,s:s,s:s%,s:s%,s:b,s:i}", "name", s->name, "kind", kind_name(s->kind),
                          "signature", sig.p ? sig.p : "", sig.len, "doc", doc.p ? doc.p : "", doc.len,
                          "exported", pub, "line", s->line);
    buf_free(&sig);
    buf_free(&doc);
    size_t k = i + 1;
    if (o && (s->kind == SYM_CLASS || s->kind == SYM_TYPE)) {
        json_t *kids = json_array();
        while (k < n && v[k].line <= s->end_line && v[k].line > s->line) {
            if (level >= 1 || member_public(lang, &v[k], l)) k = zoom_sym(v, n, k, level, lang, NULL, l, kids);
            else k++;
        }
        if (json_array_size(kids)) json_object_set_new(o, "children", kids);
        else json_decref(kids);
    }
    if (o) json_array_append_new(arr, o);
    return k;
}

/* The symbols of one file at level 0 or 1 (NULL when the file is unknown). */
static json_t *zoom_file(sqlite3 *db, const char *repo, const char *rel, int level)
{
    int lang = 0, fid = file_id(db, rel, &lang);
    if (fid < 0) return NULL;
    zsym *v;
    size_t n = file_syms(db, fid, &v);
    char *full = util_format("%s/%s", repo, rel);
    lines l;
    int ok = full && lines_read(full, &l) == 0;
    free(full);
    json_t *arr = json_array();
    if (ok) {
        char *all = lang == LANG_PYTHON ? python_all(&l) : NULL;
        for (size_t i = 0; i < n;) {
            int top = 1; /* members come with their class */
            for (size_t k = 0; k < i && top; k++)
                if ((v[k].kind == SYM_CLASS || v[k].kind == SYM_TYPE) && v[i].line > v[k].line &&
                    v[i].line <= v[k].end_line)
                    top = 0;
            if (top && (level >= 1 || is_public(lang, &v[i], all)))
                i = zoom_sym(v, n, i, level, lang, all, &l, arr);
            else
                i++;
        }
        free(all);
    }
    if (ok) lines_free(&l);
    syms_free(v, n);
    return arr;
}

static int zoom(sqlite3 *db, const char *repo, const char *rel, int level, buf *out, char **msg)
{
    char *full = util_format("%s/%s", repo, rel);
    struct stat sb;
    int dir = full && stat(full, &sb) == 0 && S_ISDIR(sb.st_mode);
    json_t *o = json_pack("{s:s,s:i}", "path", rel, "level", level);
    int truncated = 0;
    if (!dir && level == 2) {
        size_t len;
        char *text = util_read_file(full, 64u << 20, &len);
        if (!text) {
            *msg = util_format("%s: cannot read it", rel);
            free(full);
            json_decref(o);
            return CLARITY_EINVAL;
        }
        truncated = len > ZOOM_MAX_BYTES;
        json_object_set_new(o, "content", json_stringn_nocheck(text, truncated ? ZOOM_MAX_BYTES : len));
        free(text);
    } else if (!dir) {
        json_t *syms = zoom_file(db, repo, rel, level);
        if (!syms) {
            *msg = util_format("%s is not a source file the graph knows", rel);
            free(full);
            json_decref(o);
            return CLARITY_EINVAL;
        }
        json_object_set_new(o, "symbols", syms);
    } else { /* level 0 of each file directly in it */
        sqlite3_stmt *st;
        json_t *files = json_array();
        if (sqlite3_prepare_v2(db, "SELECT path FROM files WHERE path LIKE ? ESCAPE '\\' ORDER BY path", -1,
                               &st, NULL) == SQLITE_OK) {
            buf pat;
            buf_init(&pat);
            for (const char *p = rel; *p; p++) {
                if (*p == '%' || *p == '_' || *p == '\\') buf_putc(&pat, '\\');
                buf_putc(&pat, *p);
            }
            buf_puts(&pat, *rel ? "/%" : "%");
            sqlite3_bind_text(st, 1, pat.p, (int)pat.len, SQLITE_TRANSIENT);
            buf_free(&pat);
            size_t skip = *rel ? strlen(rel) + 1 : 0;
            while (sqlite3_step(st) == SQLITE_ROW) {
                const char *p = (const char *)sqlite3_column_text(st, 0);
                if (strchr(p + skip, '/')) continue; /* not recursive */
                json_t *syms = zoom_file(db, repo, p, 0);
                if (syms && json_array_size(syms))
                    json_array_append_new(files, json_pack("{s:s,s:o}", "path", p, "symbols", syms));
                else
                    json_decref(syms);
            }
            sqlite3_finalize(st);
        }
        json_object_set_new(o, "symbols", json_array());
        json_object_set_new(o, "files", files);
    }
    free(full);
    json_object_set_new(o, "truncated", json_boolean(truncated));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s) return CLARITY_ENOMEM;
    buf_puts(out, s);
    free(s);
    return CLARITY_OK;
}

/* ---- impact -------------------------------------------------------------- */

typedef struct inode {
    int file, line;   /* the caller's definition (or the call site at module level) */
    char *name, *path;
} inode;

static int prep(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
    return sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK ? 0 : -1;
}

typedef struct impact_ctx {
    sqlite3 *db;
    sqlite3_stmt *calls, *encl, *imports, *defs, *path;
    inode *seen;
    size_t n_seen, cap_seen;
    int truncated;
    size_t sites;      /* resolved call sites looked at so far */
    size_t rows;       /* call sites read so far */
    char **paths;      /* file id -> path, read once */
    size_t n_paths;
    struct fmap *maps; /* per file: the innermost definition around each line */
    size_t n_maps, cap_maps;
} impact_ctx;

/* A file's definitions (functions, methods, variables holding one) and,
 * per line, the index of the innermost one around it (-1: module level);
 * built once per file, so a call site's caller is an array lookup. */
typedef struct fmap {
    int file, n, lines;
    char **name;
    int *start;
    int *at; /* lines + 1 entries */
} fmap;

static void fmap_free(fmap *m)
{
    for (int i = 0; i < m->n; i++) free(m->name[i]);
    free(m->name), free(m->start), free(m->at);
}

static fmap *fmap_of(impact_ctx *c, int file)
{
    for (size_t i = 0; i < c->n_maps; i++)
        if (c->maps[i].file == file) return &c->maps[i];
    if (c->n_maps == c->cap_maps) {
        fmap *v = realloc(c->maps, (c->cap_maps = c->cap_maps ? c->cap_maps * 2 : 16) * sizeof *v);
        if (!v) return NULL;
        c->maps = v;
    }
    fmap *m = &c->maps[c->n_maps];
    memset(m, 0, sizeof *m);
    m->file = file;
    sqlite3_stmt *st;
    if (prep(c->db, "SELECT name, line, end_line FROM symbols WHERE file_id = ? AND kind IN (0, 2, 3) "
                    "ORDER BY line, end_line DESC", &st) != 0)
        return NULL;
    sqlite3_bind_int(st, 1, file);
    int cap = 0, *end = NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (m->n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nm = realloc(m->name, (size_t)cap * sizeof *nm);
            int *sv = nm ? realloc(m->start, (size_t)cap * sizeof *sv) : NULL;
            int *ev = sv ? realloc(end, (size_t)cap * sizeof *ev) : NULL;
            if (nm) m->name = nm;
            if (sv) m->start = sv;
            if (ev) end = ev;
            if (!ev) break;
        }
        m->name[m->n] = util_strdup((const char *)sqlite3_column_text(st, 0));
        m->start[m->n] = sqlite3_column_int(st, 1);
        end[m->n] = sqlite3_column_int(st, 2);
        if (end[m->n] > m->lines) m->lines = end[m->n];
        m->n++;
    }
    sqlite3_finalize(st);
    if (m->lines > 5000000) m->lines = 5000000;
    m->at = malloc(((size_t)m->lines + 1) * sizeof *m->at);
    if (m->at) {
        for (int l = 0; l <= m->lines; l++) m->at[l] = -1;
        /* outer definitions come first: inner ones overwrite their lines */
        for (int i = 0; i < m->n; i++)
            for (int l = m->start[i]; l <= end[i] && l <= m->lines; l++)
                if (l >= 0) m->at[l] = i;
    }
    free(end);
    c->n_maps++;
    return m;
}

/* Every file's path by id, in one query (a node needs its file's). */
static void load_paths(impact_ctx *c)
{
    sqlite3_stmt *st;
    int64_t max = 0;
    if (prep(c->db, "SELECT max(id) FROM files", &st) == 0) {
        if (sqlite3_step(st) == SQLITE_ROW) max = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    if (max <= 0 || max > 10000000 || !(c->paths = calloc((size_t)max + 1, sizeof *c->paths))) return;
    c->n_paths = (size_t)max + 1;
    if (prep(c->db, "SELECT id, path FROM files", &st) != 0) return;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id >= 0 && (size_t)id < c->n_paths)
            c->paths[id] = util_strdup((const char *)sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
}


static char *path_of(impact_ctx *c, int fid)
{
    if (fid >= 0 && (size_t)fid < c->n_paths && c->paths[fid]) return util_strdup(c->paths[fid]);
    sqlite3_reset(c->path);
    sqlite3_bind_int(c->path, 1, fid);
    return sqlite3_step(c->path) == SQLITE_ROW ? util_strdup((const char *)sqlite3_column_text(c->path, 0))
                                               : util_strdup("?");
}

/* How a call of name from file f reaches the definition in file d: "same
 * file", "import", "unique name", or NULL (it does not). */
static const char *resolves(impact_ctx *c, int f, int d, int ndefs)
{
    if (f == d) return "same file";
    sqlite3_reset(c->imports);
    sqlite3_bind_int(c->imports, 1, f);
    sqlite3_bind_int(c->imports, 2, d);
    if (sqlite3_step(c->imports) == SQLITE_ROW) return "import";
    return ndefs == 1 ? "unique name" : NULL;
}

static int defs_count(impact_ctx *c, const char *name)
{
    sqlite3_reset(c->defs);
    sqlite3_bind_text(c->defs, 1, name, -1, SQLITE_TRANSIENT);
    return sqlite3_step(c->defs) == SQLITE_ROW ? sqlite3_column_int(c->defs, 0) : 0;
}

/* 1 when (file, line, name) was expanded already (a cycle or a fan-in). */
static int seen(impact_ctx *c, int file, int line, const char *name)
{
    for (size_t i = 0; i < c->n_seen; i++)
        if (c->seen[i].file == file && c->seen[i].line == line && strcmp(c->seen[i].name, name) == 0) return 1;
    if (c->n_seen == c->cap_seen) {
        inode *v = realloc(c->seen, (c->cap_seen = c->cap_seen ? c->cap_seen * 2 : 64) * sizeof *v);
        if (!v) return 1;
        c->seen = v;
    }
    c->seen[c->n_seen++] = (inode){file, line, util_strdup(name), NULL};
    return 0;
}

/* The callers of name defined in file d, to depth levels. */
static json_t *callers(impact_ctx *c, const char *name, int d, int depth)
{
    json_t *arr = json_array();
    if (depth <= 0 || !arr) return arr;
    int ndefs = defs_count(c, name);
    /* the call sites, collected first: the statement is reused below */
    typedef struct site { int file, line; } site;
    site *sites = NULL;
    size_t n = 0, cap = 0;
    sqlite3_reset(c->calls);
    sqlite3_bind_text(c->calls, 1, name, -1, SQLITE_TRANSIENT);
    while (sqlite3_step(c->calls) == SQLITE_ROW) {
        if (++c->rows > IMPACT_MAX_ROWS) {
            c->truncated = 1;
            break;
        }
        if (n == cap) {
            site *v = realloc(sites, (cap = cap ? cap * 2 : 32) * sizeof *v);
            if (!v) break;
            sites = v;
        }
        sites[n++] = (site){sqlite3_column_int(c->calls, 0), sqlite3_column_int(c->calls, 1)};
    }
    int last_file = -1;
    const char *last_via = NULL; /* sites come by file: one import lookup per file */
    for (size_t i = 0; i < n; i++) {
        const char *via = sites[i].file == last_file ? last_via : resolves(c, sites[i].file, d, ndefs);
        last_file = sites[i].file;
        last_via = via;
        if (!via) continue;
        if (c->n_seen >= IMPACT_MAX_NODES || ++c->sites > IMPACT_MAX_SITES) {
            c->truncated = 1;
            break;
        }
        fmap *fm = fmap_of(c, sites[i].file); /* the innermost definition around the call */
        char *caller = NULL;
        int cline = sites[i].line;
        int k = fm && fm->at && sites[i].line >= 0 && sites[i].line <= fm->lines ? fm->at[sites[i].line] : -1;
        if (k >= 0) {
            caller = util_strdup(fm->name[k]);
            cline = fm->start[k];
        }
        const char *cname = caller ? caller : "<module>";
        char *p = path_of(c, sites[i].file);
        json_t *same = NULL; /* the caller already listed here: one more call line */
        size_t ai;
        json_t *an;
        json_array_foreach(arr, ai, an) {
            if (json_integer_value(json_object_get(an, "line")) == cline &&
                strcmp(json_string_value(json_object_get(an, "name")), cname) == 0 &&
                strcmp(json_string_value(json_object_get(an, "path")), p ? p : "?") == 0)
                same = an;
        }
        if (same) {
            json_array_append_new(json_object_get(same, "callLines"), json_integer(sites[i].line));
            free(p);
            free(caller);
            continue;
        }
        int again = seen(c, sites[i].file, cline, cname);
        json_t *node = json_pack("{s:s,s:s,s:i,s:i,s:[i],s:s}", "name", cname, "path", p ? p : "?", "line",
                                 cline, "callLine", sites[i].line, "callLines", sites[i].line, "via", via);
        if (node && again) json_object_set_new(node, "seen", json_true()); /* expanded elsewhere */
        else if (node && caller) json_object_set_new(node, "callers", callers(c, caller, sites[i].file, depth - 1));
        if (node) json_array_append_new(arr, node);
        free(p);
        free(caller);
    }
    free(sites);
    return arr;
}

static int impact(sqlite3 *db, const char *symbol, const char *file_rel, int depth, buf *out, char **msg)
{
    /* graphs built before these indexes get them on first use */
    sqlite3_exec(db, "CREATE INDEX IF NOT EXISTS calls_name ON calls(name);"
                     "CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name)", NULL, NULL, NULL);
    sqlite3_stmt *st;
    if (prep(db, "SELECT s.file_id, f.path, s.line, s.kind FROM symbols s JOIN files f ON f.id = s.file_id "
                 "WHERE s.name = ? AND s.kind IN (0, 1, 2, 3, 6) ORDER BY f.path, s.line", &st) != 0)
        return CLARITY_ESTORE;
    sqlite3_bind_text(st, 1, symbol, -1, SQLITE_STATIC);
    json_t *cands = json_array();
    int d = -1, dline = 0;
    char *dpath = NULL;
    size_t files = 0;
    int last_file = -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int fid = sqlite3_column_int(st, 0);
        const char *p = (const char *)sqlite3_column_text(st, 1);
        if (file_rel && strcmp(p, file_rel) != 0) continue;
        if (fid != last_file) files++, last_file = fid;
        json_array_append_new(cands, json_pack("{s:s,s:i,s:s}", "path", p, "line", sqlite3_column_int(st, 2),
                                               "kind", kind_name(sqlite3_column_int(st, 3))));
        if (d < 0) {
            d = fid;
            dline = sqlite3_column_int(st, 2);
            dpath = util_strdup(p);
        }
    }
    sqlite3_finalize(st);
    json_t *o;
    if (d < 0) {
        json_decref(cands);
        *msg = util_format("no definition of %s%s%s in the graph", symbol, file_rel ? " in " : "",
                           file_rel ? file_rel : "");
        return CLARITY_EINVAL;
    }
    if (files > 1) { /* ambiguous: the candidates, not a guess */
        o = json_pack("{s:s,s:b,s:o,s:s}", "symbol", symbol, "ambiguous", 1, "candidates", cands, "hint",
                      "several files define it: pass file (--file PATH) to pick one");
    } else {
        json_decref(cands);
        impact_ctx c = {db, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 0};
        int ok = prep(db, "SELECT file_id, line FROM calls WHERE name = ? ORDER BY file_id, line", &c.calls) == 0 &&
                 /* the innermost function, method, or variable holding one (const f = () => ...) */
                 prep(db, "SELECT name, line FROM symbols WHERE file_id = ? AND kind IN (0, 2, 3) AND line <= ?2 "
                          "AND end_line >= ?2 ORDER BY line DESC LIMIT 1", &c.encl) == 0 &&
                 prep(db, "SELECT 1 FROM imports WHERE file_id = ? AND target = ? LIMIT 1", &c.imports) == 0 &&
                 prep(db, "SELECT count(DISTINCT file_id) FROM symbols WHERE name = ? AND kind IN (0, 1, 2, 3, 6)",
                      &c.defs) == 0 &&
                 prep(db, "SELECT path FROM files WHERE id = ?", &c.path) == 0;
        if (ok) load_paths(&c);
        json_t *tree = ok ? callers(&c, symbol, d, depth) : NULL;
        o = json_pack("{s:s,s:{s:s,s:i},s:i,s:s,s:o*,s:b,s:i}", "symbol", symbol, "definition", "path",
                      dpath, "line", dline, "depth", depth, "resolution",
                      "by name through the files' imports, same file, or a name defined once; no types",
                      "callers", tree, "truncated", c.truncated, "nodes", (int)c.n_seen);
        for (size_t i = 0; i < c.n_seen; i++) free(c.seen[i].name);
        free(c.seen);
        for (size_t i = 0; i < c.n_paths; i++) free(c.paths[i]);
        free(c.paths);
        for (size_t i = 0; i < c.n_maps; i++) fmap_free(&c.maps[i]);
        free(c.maps);
        sqlite3_finalize(c.calls), sqlite3_finalize(c.encl), sqlite3_finalize(c.imports);
        sqlite3_finalize(c.defs), sqlite3_finalize(c.path);
    }
    free(dpath);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s) return CLARITY_ENOMEM;
    buf_puts(out, s);
    free(s);
    return CLARITY_OK;
}

/* ---- co-change ------------------------------------------------------------ */

int graph_partner_stmts(sqlite3 *db, sqlite3_stmt *st[2])
{
    st[0] = st[1] = NULL;
    if (prep(db, "SELECT n, w FROM commit_files WHERE path = ?", &st[0]) == 0 &&
        prep(db, "SELECT b, n, w FROM cochange WHERE a = ?1 UNION ALL SELECT a, n, w FROM cochange WHERE b = ?1 "
                 "ORDER BY 3 DESC, 2 DESC, 1 LIMIT ?2", &st[1]) == 0)
        return 0;
    sqlite3_finalize(st[0]);
    st[0] = NULL;
    return -1;
}

int graph_partners_run(sqlite3_stmt *const st[2], const char *rel, size_t k, graph_partner *out, size_t *n_out)
{
    *n_out = 0;
    int64_t of = 0;
    double wof = 0;
    sqlite3_bind_text(st[0], 1, rel, -1, SQLITE_STATIC);
    if (sqlite3_step(st[0]) == SQLITE_ROW) {
        of = sqlite3_column_int64(st[0], 0);
        wof = sqlite3_column_double(st[0], 1);
    }
    sqlite3_reset(st[0]);
    if (of <= 0 || wof <= 0) return 0;
    sqlite3_bind_text(st[1], 1, rel, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st[1], 2, (sqlite3_int64)k);
    while (*n_out < k && sqlite3_step(st[1]) == SQLITE_ROW) {
        graph_partner *p = &out[*n_out];
        snprintf(p->path, sizeof p->path, "%s", (const char *)sqlite3_column_text(st[1], 0));
        p->commits = sqlite3_column_int64(st[1], 1);
        p->of = of;
        p->score = sqlite3_column_double(st[1], 2) / wof;
        if (p->score > 1) p->score = 1;
        (*n_out)++;
    }
    sqlite3_reset(st[1]);
    return 0;
}

int graph_cochange_partners(sqlite3 *db, const char *rel, size_t k, graph_partner *out, size_t *n_out)
{
    sqlite3_stmt *st[2];
    *n_out = 0;
    if (graph_partner_stmts(db, st) != 0) return -1;
    int rc = graph_partners_run(st, rel, k, out, n_out);
    sqlite3_finalize(st[0]);
    sqlite3_finalize(st[1]);
    return rc;
}

static int cochange(sqlite3 *db, const char *rel, int k, buf *out)
{
    graph_partner *v = calloc((size_t)k, sizeof *v);
    size_t n = 0;
    if (!v || graph_cochange_partners(db, rel, (size_t)k, v, &n) != 0) {
        free(v);
        return v ? CLARITY_ESTORE : CLARITY_ENOMEM;
    }
    buf_puts(out, "{\"path\":");
    buf_json_str(out, rel, strlen(rel));
    buf_printf(out, ",\"commits\":%lld,\"neighbours\":[", (long long)(n ? v[0].of : 0));
    for (size_t i = 0; i < n; i++) {
        buf_printf(out, "%s{\"path\":", i ? "," : "");
        buf_json_str(out, v[i].path, strlen(v[i].path));
        buf_printf(out, ",\"score\":%.4f,\"commits\":%lld}", v[i].score, (long long)v[i].commits);
    }
    buf_puts(out, "]}");
    free(v);
    return buf_failed(out) ? CLARITY_ENOMEM : CLARITY_OK;
}

/* ---- the RPC methods ------------------------------------------------------ */

static int int_arg(json_t *p, const char *key, int def, int lo, int hi, int *out, char **msg)
{
    json_t *v = json_object_get(p, key);
    *out = def;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        *msg = util_format("param \"%s\" must be an integer in %d..%d", key, lo, hi);
        return -1;
    }
    *out = (int)json_integer_value(v);
    return 0;
}

static const char *str_arg(json_t *p, const char *key, int required, char **msg)
{
    json_t *v = json_object_get(p, key);
    if ((!v || json_is_null(v)) && !required) return NULL;
    if (!json_is_string(v) || json_string_length(v) == 0) {
        *msg = util_format("param \"%s\" must be a non-empty string", key);
        return NULL;
    }
    return json_string_value(v);
}

int graph_intel_call(const char *method, json_t *params, buf *out, char **msg)
{
    int is_zoom = strcmp(method, "clarity.zoom") == 0, is_impact = strcmp(method, "clarity.impact") == 0;
    const char *repo_in = str_arg(params, "repo", 1, msg);
    if (!repo_in) return CLARITY_EINVAL;
    const char *target = str_arg(params, is_impact ? "symbol" : "path", 1, msg);
    if (!target) return CLARITY_EINVAL;
    const char *file = is_impact ? str_arg(params, "file", 0, msg) : NULL;
    if (*msg) return CLARITY_EINVAL;
    int level = 0, depth = 3, k = 20;
    if ((is_zoom && int_arg(params, "level", 0, 0, 2, &level, msg) != 0) ||
        (is_impact && int_arg(params, "depth", 3, 1, 10, &depth, msg) != 0) ||
        (!is_zoom && !is_impact && int_arg(params, "k", 20, 1, 1000, &k, msg) != 0))
        return CLARITY_EINVAL;
    char *repo;
    sqlite3 *db;
    int g = open_graph(repo_in, &repo, &db, out, msg);
    if (g != 0) return g > 0 ? CLARITY_OK : CLARITY_EINVAL;
    char *rel = NULL;
    int rc = CLARITY_OK;
    if (!is_impact || file) {
        rel = confine(repo, is_impact ? file : target, !is_zoom && !is_impact, msg);
        if (!rel) rc = *msg ? CLARITY_EINVAL : CLARITY_ENOMEM;
    }
    if (rc == CLARITY_OK) {
        if (is_zoom) rc = zoom(db, repo, rel, level, out, msg);
        else if (is_impact) rc = impact(db, target, rel, depth, out, msg);
        else rc = cochange(db, rel, k, out);
    }
    free(rel);
    free(repo);
    sqlite3_close(db);
    return rc;
}
