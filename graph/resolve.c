/* resolve.c: import specs to repository files.
 *
 * Two maps over the file list: exact paths, and every '/'-segment suffix of
 * every path (a suffix shared by two files is ambiguous and answers -2).
 * Directories get suffix entries too ("dir:" prefix) for Go packages.
 *   Python   dotted modules, relative levels; "from a.b import c" tries
 *            a/b/c.py first, then a/b.py; src/ and lib/ layouts.
 *   JS/TS    relative specifiers with extensions and index files; ".js"
 *            specifiers also find the ".ts" source.
 *   Go       the package directory whose path ends the import path.
 *   Rust     mod x; (x.rs, x/mod.rs), use crate::/super::/self:: paths.
 *   Java     package.Class -> package/Class.java.
 *   C        #include "x.h" relative to the file, then by suffix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "internal.h"

typedef struct rentry {
    char *key;
    int32_t file;
    UT_hash_handle hh;
} rentry;

struct graph_resolver {
    rentry *exact;
    rentry *suffix;
    char **paths;
    size_t n;
    int oom;
};

static void put(graph_resolver *r, rentry **map, const char *key, size_t n, int32_t file)
{
    rentry *e;
    HASH_FIND(hh, *map, key, n, e);
    if (e) {
        if (e->file != file) e->file = -2;
        return;
    }
    e = malloc(sizeof *e);
    char *k = e ? util_strndup(key, n) : NULL;
    if (!k) {
        free(e);
        r->oom = 1;
        return;
    }
    e->key = k;
    e->file = file;
    HASH_ADD_KEYPTR(hh, *map, e->key, n, e);
}

static int32_t get(rentry *map, const char *key)
{
    rentry *e;
    HASH_FIND(hh, map, key, strlen(key), e);
    return e ? e->file : -1;
}

graph_resolver *graph_resolver_new(char **paths, size_t n)
{
    graph_resolver *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->paths = paths;
    r->n = n;
    char tmp[1100];
    for (size_t i = 0; i < n && !r->oom; i++) {
        const char *p = paths[i];
        size_t len = strlen(p);
        put(r, &r->exact, p, len, (int32_t)i);
        for (const char *s = p; s; s = strchr(s, '/'), s = s ? s + 1 : NULL)
            put(r, &r->suffix, s, len - (size_t)(s - p), (int32_t)i);
        /* directory suffixes, for Go packages: the first non-test file wins */
        if (graph_lang_of_path(p) == LANG_GO && !graph_is_test_path(p)) {
            const char *slash = strrchr(p, '/');
            size_t dl = slash ? (size_t)(slash - p) : 0;
            for (size_t s = 0; s <= dl && dl + 5 < sizeof tmp;) {
                int l = snprintf(tmp, sizeof tmp, "dir:%.*s", (int)(dl - s), p + s);
                rentry *e;
                HASH_FIND(hh, r->suffix, tmp, (size_t)l, e);
                if (!e) put(r, &r->suffix, tmp, (size_t)l, (int32_t)i);
                const char *nx = memchr(p + s, '/', dl - s);
                if (!nx) break;
                s = (size_t)(nx - p) + 1;
            }
        }
    }
    if (r->oom) {
        graph_resolver_free(r);
        return NULL;
    }
    return r;
}

void graph_resolver_free(graph_resolver *r)
{
    if (!r) return;
    rentry *e, *t;
    HASH_ITER(hh, r->exact, e, t) {
        HASH_DEL(r->exact, e);
        free(e->key);
        free(e);
    }
    HASH_ITER(hh, r->suffix, e, t) {
        HASH_DEL(r->suffix, e);
        free(e->key);
        free(e);
    }
    free(r);
}

int32_t graph_resolver_suffix(graph_resolver *r, const char *suffix)
{
    int32_t f = get(r->exact, suffix);
    return f >= 0 ? f : get(r->suffix, suffix);
}

/* Normalizes a/./b/../c in place. */
static void norm_path(char *p)
{
    char *segs[128];
    size_t n = 0;
    char *save = NULL;
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", p);
    for (char *s = strtok_r(copy, "/", &save); s && n < 128; s = strtok_r(NULL, "/", &save)) {
        if (strcmp(s, ".") == 0 || !*s) continue;
        if (strcmp(s, "..") == 0) {
            if (n) n--;
            continue;
        }
        segs[n++] = s;
    }
    char out[1024];
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int l = snprintf(out + o, sizeof out - o, "%s%s", i ? "/" : "", segs[i]);
        if (l < 0 || (size_t)l >= sizeof out - o) break;
        o += (size_t)l;
    }
    out[o] = '\0';
    strcpy(p, out);
}

static size_t dir_len(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? (size_t)(s - path) : 0;
}

static int32_t try_exact(graph_resolver *r, const char *p)
{
    int32_t f = get(r->exact, p);
    return f >= 0 ? f : -1;
}

/* out = a b c.  The callers' buffers hold any three they join (rel is
 * under 1,024 bytes, the rest a dozen): no snprintf, which was a quarter
 * of a prediction's instructions through the dozen candidates a dotted
 * name of a prompt tries. */
static const char *join3(char *out, const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b);
    memcpy(out, a, la);
    memcpy(out + la, b, lb);
    memcpy(out + la + lb, c, strlen(c) + 1);
    return out;
}

static int32_t py_module(graph_resolver *r, const char *rel, int allow_suffix)
{
    char tmp[1100]; /* a prefix (7), rel (< 1,024), a suffix (12) */
    static const char *const prefixes[] = {"", "src/", "lib/", "python/"};
    for (size_t k = 0; k < 4; k++) {
        int32_t f = try_exact(r, join3(tmp, prefixes[k], rel, ".py"));
        if (f >= 0) return f;
        if ((f = try_exact(r, join3(tmp, prefixes[k], rel, "/__init__.py"))) >= 0) return f;
        if ((f = try_exact(r, join3(tmp, prefixes[k], rel, ".pyi"))) >= 0) return f;
    }
    if (!allow_suffix || !strchr(rel, '/')) return -1;
    int32_t f = get(r->suffix, join3(tmp, "", rel, ".py"));
    if (f >= 0) return f;
    f = get(r->suffix, join3(tmp, "", rel, "/__init__.py"));
    return f >= 0 ? f : -1;
}

static int32_t resolve_python(graph_resolver *r, const char *from, const char *spec)
{
    char rel[1024];
    size_t dots = 0;
    while (spec[dots] == '.') dots++;
    const char *rest = spec + dots;
    size_t o = 0;
    if (dots) {
        size_t dl = dir_len(from);
        char base[1024];
        snprintf(base, sizeof base, "%.*s", (int)dl, from);
        for (size_t i = 1; i < dots; i++) {
            char *s = strrchr(base, '/');
            if (s) *s = '\0';
            else base[0] = '\0';
        }
        o = (size_t)snprintf(rel, sizeof rel, "%s%s", base, base[0] && *rest ? "/" : "");
        if (o >= sizeof rel) return -1;
    }
    snprintf(rel + o, sizeof rel - o, "%s", rest);
    for (char *c = rel + o; *c; c++)
        if (*c == '.') *c = '/';
    if (!rel[0]) return -1;
    for (int strip = 0; strip < 2; strip++) {
        int32_t f = py_module(r, rel, !dots);
        if (f >= 0) return f;
        char *s = strrchr(rel, '/');
        if (!s || (dots && (size_t)(s - rel) < o - 1)) break;
        *s = '\0';
    }
    if (dots && rel[0] && !*rest) {
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%s/__init__.py", rel);
        return try_exact(r, tmp);
    }
    return -1;
}

static int32_t resolve_js(graph_resolver *r, const char *from, const char *spec)
{
    if (spec[0] != '.') return -1;
    char p[1024], tmp[1100];
    snprintf(p, sizeof p, "%.*s/%s", (int)dir_len(from), from, spec);
    norm_path(p);
    int32_t f = try_exact(r, p);
    if (f >= 0) return f;
    static const char *const exts[] = {".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".d.ts"};
    size_t pl = strlen(p);
    static const char *const jsx[] = {".js", ".jsx", ".mjs", ".cjs"};
    for (size_t j = 0; j < 4; j++) { /* ESM TypeScript: "./x.js" names x.ts */
        size_t el = strlen(jsx[j]);
        if (pl > el && strcmp(p + pl - el, jsx[j]) == 0) {
            for (size_t k = 0; k < 3; k++) {
                snprintf(tmp, sizeof tmp, "%.*s%s", (int)(pl - el), p, exts[k]);
                if ((f = try_exact(r, tmp)) >= 0) return f;
            }
        }
    }
    for (size_t k = 0; k < sizeof exts / sizeof *exts; k++) {
        snprintf(tmp, sizeof tmp, "%s%s", p, exts[k]);
        if ((f = try_exact(r, tmp)) >= 0) return f;
    }
    for (size_t k = 0; k < sizeof exts / sizeof *exts; k++) {
        snprintf(tmp, sizeof tmp, "%s/index%s", p, exts[k]);
        if ((f = try_exact(r, tmp)) >= 0) return f;
    }
    return -1;
}

static int32_t resolve_go(graph_resolver *r, const char *spec)
{
    char tmp[1100];
    for (const char *s = spec; s; s = strchr(s, '/'), s = s ? s + 1 : NULL) {
        snprintf(tmp, sizeof tmp, "dir:%s", s);
        int32_t f = get(r->suffix, tmp);
        if (f >= 0) return f;
    }
    return -1;
}

static int32_t resolve_rust(graph_resolver *r, const char *from, const char *spec)
{
    char base[1024], tmp[1100];
    size_t dl = dir_len(from);
    const char *bn = from + (dl ? dl + 1 : 0);
    int is_root = strcmp(bn, "mod.rs") == 0 || strcmp(bn, "lib.rs") == 0 || strcmp(bn, "main.rs") == 0;
    if (strncmp(spec, "mod ", 4) == 0) {
        if (is_root) snprintf(base, sizeof base, "%.*s", (int)dl, from);
        else snprintf(base, sizeof base, "%.*s", (int)(strlen(from) - 3), from);
        snprintf(tmp, sizeof tmp, "%s%s%s.rs", base, base[0] ? "/" : "", spec + 4);
        int32_t f = try_exact(r, tmp);
        if (f >= 0) return f;
        snprintf(tmp, sizeof tmp, "%s%s%s/mod.rs", base, base[0] ? "/" : "", spec + 4);
        return try_exact(r, tmp);
    }
    char segs[1024];
    snprintf(segs, sizeof segs, "%s", spec);
    char *brace = strchr(segs, '{');
    if (brace) *brace = '\0';
    /* the crate root: the nearest enclosing "src" directory */
    if (strncmp(segs, "crate::", 7) == 0) {
        const char *src = NULL;
        for (const char *s = from; (s = strstr(s, "src/")) != NULL; s++)
            if (s == from || s[-1] == '/') src = s;
        snprintf(base, sizeof base, "%.*s", src ? (int)(src - from + 3) : 0, from);
        memmove(segs, segs + 7, strlen(segs + 7) + 1);
    } else if (strncmp(segs, "super::", 7) == 0 || strncmp(segs, "self::", 6) == 0) {
        int sup = segs[1] == 'u';
        if (is_root) snprintf(base, sizeof base, "%.*s", (int)dl, from);
        else snprintf(base, sizeof base, "%.*s", (int)(strlen(from) - 3), from);
        if (sup) {
            char *s = strrchr(base, '/');
            if (s) *s = '\0';
            else base[0] = '\0';
        }
        size_t skip = sup ? 7 : 6;
        memmove(segs, segs + skip, strlen(segs + skip) + 1);
    } else {
        return -1;
    }
    char path[1024];
    size_t o = (size_t)snprintf(path, sizeof path, "%s", base);
    for (char *s = segs; *s && o < sizeof path - 4;) {
        char *e = strstr(s, "::");
        size_t l = e ? (size_t)(e - s) : strlen(s);
        if (l == 0) break;
        o += (size_t)snprintf(path + o, sizeof path - o, "%s%.*s", o ? "/" : "", (int)l, s);
        s = e ? e + 2 : s + l;
    }
    /* longest existing module prefix */
    while (strlen(path) > strlen(base)) {
        snprintf(tmp, sizeof tmp, "%s.rs", path);
        int32_t f = try_exact(r, tmp);
        if (f >= 0) return f;
        snprintf(tmp, sizeof tmp, "%s/mod.rs", path);
        if ((f = try_exact(r, tmp)) >= 0) return f;
        char *s = strrchr(path, '/');
        if (!s) break;
        *s = '\0';
    }
    return -1;
}

static int32_t resolve_java(graph_resolver *r, const char *spec)
{
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s", spec);
    for (char *c = tmp; *c; c++)
        if (*c == '.') *c = '/';
    strncat(tmp, ".java", sizeof tmp - strlen(tmp) - 1);
    int32_t f = graph_resolver_suffix(r, tmp);
    return f >= 0 ? f : -1;
}

static int32_t resolve_c(graph_resolver *r, const char *from, const char *spec)
{
    char p[1100];
    snprintf(p, sizeof p, "%.*s%s%s", (int)dir_len(from), from, dir_len(from) ? "/" : "", spec);
    norm_path(p);
    int32_t f = try_exact(r, p);
    if (f >= 0) return f;
    f = graph_resolver_suffix(r, spec);
    return f >= 0 ? f : -1;
}

int32_t graph_resolve(graph_resolver *r, const char *from, int lang, const char *spec)
{
    if (!spec || !*spec || strlen(spec) > 900) return -1;
    switch (lang) {
    case LANG_PYTHON: return resolve_python(r, from, spec);
    case LANG_JS:
    case LANG_TS:
    case LANG_TSX: return resolve_js(r, from, spec);
    case LANG_GO: return resolve_go(r, spec);
    case LANG_RUST: return resolve_rust(r, from, spec);
    case LANG_JAVA: return resolve_java(r, spec);
    case LANG_C: return resolve_c(r, from, spec);
    default: return -1;
    }
}
