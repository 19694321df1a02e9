/* index.c: the query index of a repository, loaded from its graph cache.
 *
 * Files with their symbols; import edges both ways (CSR); BM25F postings
 * over five fields (path segments, symbol names, import names, callee
 * names, the words of the file's content: identifiers, comments and
 * docstrings, counted at build time; a cache without them, from before,
 * has them read from the working tree), with per-field lengths;
 * import in-degree centrality.  Co-change
 * partners are read from SQLite on first use per file and kept.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "index.h"
#include "../util/namefilter.h"
#include "../util/radix.h"


typedef struct triple {
    uint32_t term, doc;
    uint16_t cnt;
    uint8_t field;
} triple;

typedef struct tok_ctx {
    graph_index *g;
    triple *t;
    size_t n, cap;
    uint32_t doc;
    uint8_t field;
    int oom;
    /* content: term ids of one file, counted before they become triples */
    int collect;
    uint32_t *ids;
    size_t nids, capids;
    /* names seen before (tok_memo): memo_s[i] the name, memo_slot its
     * table (as the terms'), mids[memo_span[i][0], + memo_span[i][1]) its
     * terms */
    int record;
    uint32_t *mids;
    size_t nmids, capmids;
    char **memo_s;
    uint32_t (*memo_span)[2], *memo_slot;
    size_t memo_n, memo_cap_s, memo_cap;
} tok_ctx;

/* The tables of the terms and of tok_memo's names: ids of strings s[],
 * open addressing (GI_TERM_EMPTY in a free slot, at most half the slots
 * used), a hash of the text eight bytes a step, probed linearly (it
 * replaced a uthash table, whose entries, a malloc each, were most of a
 * snapshot's load and free, and whose out-of-memory dropped entries
 * silently). */
static uint64_t str_hash(const char *s, size_t n) { return name_mix_bytes(NAME_HASH_SEED, s, n); }

/* The slot of k[0, n) (hash h): its id's, or the free one where it would go. */
static uint32_t *str_find(char *const *s, uint32_t *slot, size_t cap, const char *k, size_t n, uint64_t h)
{
    size_t m = cap - 1;
    for (size_t j = (size_t)h & m;; j = (j + 1) & m) {
        uint32_t id = slot[j];
        if (id == GI_TERM_EMPTY || (strncmp(s[id], k, n) == 0 && s[id][n] == '\0')) return &slot[j];
    }
}

/* Room in a table of n strings for one more (rehashed at half full); -1
 * out of memory. */
static int str_reserve(char *const *s, size_t n, uint32_t **slot, size_t *cap)
{
    if ((n + 1) * 2 <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 1024;
    while ((n + 1) * 2 > c) c *= 2;
    uint32_t *v = malloc(c * sizeof *v);
    if (!v) return -1;
    memset(v, 0xff, c * sizeof *v); /* GI_TERM_EMPTY */
    for (size_t id = 0; id < n; id++) {
        size_t len = strlen(s[id]);
        *str_find(s, v, c, s[id], len, str_hash(s[id], len)) = (uint32_t)id;
    }
    free(*slot);
    *slot = v;
    *cap = c;
    return 0;
}

/* Room for one more string in an array of them; -1 out of memory. */
static int str_push_room(char ***s, size_t n, size_t *cap)
{
    if (n < *cap) return 0;
    size_t c = *cap ? *cap * 2 : 4096;
    char **v = realloc(*s, c * sizeof *v);
    if (!v) return -1;
    *s = v;
    *cap = c;
    return 0;
}

static uint32_t *term_find(const graph_index *g, const char *s, size_t n, uint64_t h)
{
    return str_find(g->term_s, g->term_slot, g->term_cap, s, n, h);
}

int32_t gi_term_id(const graph_index *g, const char *s, size_t n)
{
    if (!g->term_cap) return -1;
    uint32_t id = *term_find(g, s, n, str_hash(s, n));
    return id == GI_TERM_EMPTY ? -1 : (int32_t)id;
}

static int push_triple(tok_ctx *c, uint32_t term, uint16_t cnt)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 65536;
        triple *t = realloc(c->t, cap * sizeof *t);
        if (!t) {
            c->oom = 1;
            return 1;
        }
        c->t = t;
        c->cap = cap;
    }
    c->t[c->n++] = (triple){term, c->doc, cnt, c->field};
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int on_tok(void *ud, const char *s, size_t n);

/* A file under a documentation, example, benchmark or release directory. */
static int aux_path(const char *path)
{
    static const char *const dirs[] = {"doc", "docs", "example", "examples", "bench",
                                       "benchmark", "benchmarks", "release"};
    for (const char *p = path; p && *p;) {
        const char *e = strchr(p, '/');
        if (!e) break; /* the file name itself */
        for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
            if ((size_t)(e - p) == strlen(dirs[i]) && strncmp(p, dirs[i], (size_t)(e - p)) == 0)
                return 1;
        p = e + 1;
    }
    return 0;
}

/* The content field of one file from the working tree (a cache built
 * before the words table): its words, counted per term. */
static void content_field(tok_ctx *c, const char *repo, const char *path, char *data)
{
    char full[4096];
    if (snprintf(full, sizeof full, "%s/%s", repo, path) >= (int)sizeof full) return;
    FILE *f = fopen(full, "rb");
    if (!f) return;
    size_t len = fread(data, 1, GI_CONTENT_MAX, f);
    fclose(f);
    c->field = GI_CONTENT;
    c->collect = 1;
    c->nids = 0;
    graph_tokenize(data, len, 0, on_tok, c);
    c->collect = 0;
    if (c->nids > 1) qsort(c->ids, c->nids, sizeof *c->ids, cmp_u32);
    for (size_t i = 0; i < c->nids && !c->oom;) {
        size_t j = i;
        while (j < c->nids && c->ids[j] == c->ids[i]) j++;
        push_triple(c, c->ids[i], (uint16_t)(j - i < 65535 ? j - i : 65535));
        i = j;
    }
}

/* The id of a word's term, added when new; -1 out of memory. */
static int32_t term_of(graph_index *g, const char *s, size_t n)
{
    if (str_reserve(g->term_s, g->n_terms, &g->term_slot, &g->term_cap) != 0) return -1;
    uint32_t *slot = term_find(g, s, n, str_hash(s, n));
    if (*slot != GI_TERM_EMPTY) return (int32_t)*slot;
    char *copy = str_push_room(&g->term_s, g->n_terms, &g->term_s_cap) == 0 ? util_strndup(s, n) : NULL;
    if (!copy) return -1;
    g->term_s[g->n_terms] = copy;
    *slot = (uint32_t)g->n_terms;
    return (int32_t)g->n_terms++;
}

/* Appends id to a growing array; -1 out of memory. */
static int push_id(uint32_t **v, size_t *n, size_t *cap, uint32_t id)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 4096;
        uint32_t *a = realloc(*v, c * sizeof *a);
        if (!a) return -1;
        *v = a;
        *cap = c;
    }
    (*v)[(*n)++] = id;
    return 0;
}

/* free(p), unless p points into the mapped snapshot. */
static void free_owned(const graph_index *g, void *p)
{
    uintptr_t m = (uintptr_t)g->snap_map, q = (uintptr_t)p;
    if (!m || q < m || q > m + g->snap_len) free(p);
}

int gi_set_terms(graph_index *g, char **s, size_t n, uint32_t *slot, size_t cap)
{
    if (g->n_terms) {
        free(s);
        free_owned(g, slot);
        return -1;
    }
    g->term_s = s;
    g->term_s_cap = n ? n : 1;
    g->n_terms = n;
    /* the caller checked a given table: ids below n, at most half the slots used */
    g->term_slot = slot;
    g->term_cap = slot ? cap : 0;
    return slot ? 0 : str_reserve(g->term_s, n, &g->term_slot, &g->term_cap);
}

int gi_terms_by_id(const graph_index *g, const char **out)
{
    for (size_t id = 0; id < g->n_terms; id++) out[id] = g->term_s[id];
    return 0;
}

static int on_tok(void *ud, const char *s, size_t n)
{
    tok_ctx *c = ud;
    graph_index *g = c->g;
    int32_t id = term_of(g, s, n);
    if (id < 0 || (c->record && push_id(&c->mids, &c->nmids, &c->capmids, (uint32_t)id) != 0)) {
        c->oom = 1;
        return 1;
    }
    g->flen[c->field][c->doc] += 1.0f;
    if (c->collect) {
        if (push_id(&c->ids, &c->nids, &c->capids, (uint32_t)id) != 0) {
            c->oom = 1;
            return 1;
        }
        return 0;
    }
    return push_triple(c, (uint32_t)id, 1);
}

/* graph_tokenize of a name into the current doc and field, each distinct
 * name tokenized once: symbol, import and callee names repeat across
 * files (sympy: 134k of them, 46k distinct), and a repeat takes its terms
 * from the first, in the same order, so the index is the same. */
static void tok_memo(tok_ctx *c, const char *s, size_t n)
{
    if (c->oom) return;
    if (str_reserve(c->memo_s, c->memo_n, &c->memo_slot, &c->memo_cap) != 0) {
        c->oom = 1;
        return;
    }
    uint32_t *slot = str_find(c->memo_s, c->memo_slot, c->memo_cap, s, n, str_hash(s, n));
    if (*slot != GI_TERM_EMPTY) {
        uint32_t off = c->memo_span[*slot][0], cnt = c->memo_span[*slot][1];
        for (uint32_t k = 0; k < cnt && !c->oom; k++)
            if (push_triple(c, c->mids[off + k], 1) != 0) c->oom = 1;
        c->g->flen[c->field][c->doc] += (float)cnt;
        return;
    }
    size_t off = c->nmids, i = c->memo_n, cap = c->memo_cap_s;
    c->record = 1;
    graph_tokenize(s, n, 0, on_tok, c);
    c->record = 0;
    char *copy = NULL;
    if (!c->oom && str_push_room(&c->memo_s, i, &c->memo_cap_s) == 0) {
        /* the spans grow with the names */
        uint32_t(*sp)[2] = cap == c->memo_cap_s ? c->memo_span : realloc(c->memo_span, c->memo_cap_s * sizeof *sp);
        if (sp) c->memo_span = sp;
        copy = sp ? util_strndup(s, n) : NULL;
    }
    if (!copy) {
        c->oom = 1;
        return;
    }
    c->memo_s[i] = copy;
    c->memo_span[i][0] = (uint32_t)off;
    c->memo_span[i][1] = (uint32_t)(c->nmids - off);
    *slot = (uint32_t)i;
    c->memo_n++;
}

static void tok_memo_free(tok_ctx *c)
{
    for (size_t i = 0; i < c->memo_n; i++) free(c->memo_s[i]);
    free(c->memo_s);
    free(c->memo_span);
    free(c->memo_slot);
    free(c->mids);
}

/* The content fields from the cache's words table (see db.c).  Returns 1
 * when the table is there (a cache from before it has none), 0 when not,
 * -1 out of memory or on a malformed row. */
static int content_from_cache(tok_ctx *c, sqlite3 *db, const int32_t *byid, int64_t maxid)
{
    /* a cache written by a build from before the table may still have
     * one, left behind by a newer build: only this schema's counts count */
    char *ver = graph_db_meta(db, "schema");
    int ours = ver && strcmp(ver, GRAPH_SCHEMA_VERSION) == 0;
    free(ver);
    sqlite3_stmt *st;
    if (!ours ||
        sqlite3_prepare_v2(db, "SELECT file_id, n, data FROM words", -1, &st, NULL) != SQLITE_OK)
        return 0;
    graph_index *g = c->g;
    int rc = 1;
    c->field = GI_CONTENT;
    while (rc == 1 && sqlite3_step(st) == SQLITE_ROW) {
        int64_t fid = sqlite3_column_int64(st, 0);
        if (fid < 0 || fid > maxid || byid[fid] < 0) continue;
        c->doc = (uint32_t)byid[fid];
        g->flen[GI_CONTENT][c->doc] = (float)sqlite3_column_int64(st, 1);
        const char *p = sqlite3_column_blob(st, 2);
        size_t len = (size_t)sqlite3_column_bytes(st, 2);
        for (size_t k = 0; p && k < len && rc == 1;) {
            const char *w = p + k;
            const char *nul = memchr(w, '\0', len - k);
            if (!nul) {
                rc = -1;
                break;
            }
            size_t wl = (size_t)(nul - w);
            k += wl + 1;
            uint64_t cnt = 0;
            int shift = 0;
            for (;;) {
                if (k >= len || shift > 56) {
                    rc = -1;
                    break;
                }
                unsigned char b = (unsigned char)p[k++];
                cnt |= (uint64_t)(b & 0x7f) << shift;
                shift += 7;
                if (!(b & 0x80)) break;
            }
            if (rc != 1) break;
            int32_t id = term_of(g, w, wl);
            if (id < 0 || push_triple(c, (uint32_t)id, (uint16_t)(cnt < 65535 ? cnt : 65535)) != 0) rc = -1;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

static int cmp_triple(const void *a, const void *b)
{
    const triple *x = a, *y = b;
    if (x->term != y->term) return x->term < y->term ? -1 : 1;
    if (x->doc != y->doc) return x->doc < y->doc ? -1 : 1;
    return (int)x->field - (int)y->field;
}

/* The triples by (term, doc, field): a radix sort of the three packed in
 * one key (a load's tens of thousands of triples took qsort a fifth of
 * the load), qsort when they do not fit 64 bits or memory is short. */
static void sort_triples(tok_ctx *tc)
{
    size_t n = tc->n;
    unsigned dbits = 1, tbits = 1;
    while (dbits < 32 && ((uint64_t)1 << dbits) <= tc->g->n) dbits++;
    while (tbits < 32 && ((uint64_t)1 << tbits) <= tc->g->n_terms) tbits++;
    uint64_t *k = dbits + tbits + 8 <= 64 && n <= UINT32_MAX ? malloc(n * sizeof *k) : NULL;
    uint32_t *x = k ? malloc(2 * n * sizeof *x) : NULL, *order = NULL;
    triple *out = x ? malloc(n * sizeof *out) : NULL;
    if (out) {
        for (size_t i = 0; i < n; i++) {
            const triple *t = &tc->t[i];
            k[i] = (uint64_t)t->term << (dbits + 8) | (uint64_t)t->doc << 8 | t->field;
        }
        order = util_radix_order(k, x, n);
    }
    if (order) {
        for (size_t i = 0; i < n; i++) out[i] = tc->t[order[i]];
        free(tc->t);
        tc->t = out;
        tc->cap = n;
        out = NULL;
    } else {
        qsort(tc->t, n, sizeof *tc->t, cmp_triple);
    }
    free(k);
    free(x);
    free(out);
}

static char *dup_col(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return util_strdup(t ? (const char *)t : "");
}

/* CSR from an edge list (src, dst), deduplicated. */
static int csr(size_t n, const uint32_t *src, const uint32_t *dst, size_t m, uint32_t **off_out,
               uint32_t **adj_out)
{
    uint32_t *off = calloc(n + 1, sizeof *off), *adj = malloc(sizeof *adj * (m ? m : 1));
    if (!off || !adj) {
        free(off);
        free(adj);
        return -1;
    }
    for (size_t i = 0; i < m; i++) off[src[i] + 1]++;
    for (size_t i = 0; i < n; i++) off[i + 1] += off[i];
    uint32_t *pos = malloc(sizeof *pos * (n ? n : 1));
    if (!pos) {
        free(off);
        free(adj);
        return -1;
    }
    memcpy(pos, off, sizeof *pos * n);
    for (size_t i = 0; i < m; i++) adj[pos[src[i]]++] = dst[i];
    free(pos);
    /* dedupe within each row (rows are short) */
    uint32_t w = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t a = off[i], b = off[i + 1];
        off[i] = w;
        for (uint32_t j = a; j < b; j++) {
            int dup = 0;
            for (uint32_t k = off[i]; k < w; k++)
                if (adj[k] == adj[j]) dup = 1;
            if (!dup) adj[w++] = adj[j];
        }
    }
    off[n] = w;
    *off_out = off;
    *adj_out = adj;
    return 0;
}

static int cmp_def(const void *a, const void *b)
{
    const gi_def *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->file > y->file) - (x->file < y->file);
}

/* What the phases of a load share: the file row ids mapped to indexes,
 * and the (term, doc, field) triples the postings are made of. */
typedef struct loader {
    graph_index *g;
    sqlite3 *db;
    int32_t *byid; /* files.id -> index, -1 when absent */
    int64_t maxid;
    tok_ctx tc;
} loader;

/* The index of a file row id, or -1. */
static int32_t file_of(const loader *l, int64_t fid)
{
    return fid < 0 || fid > l->maxid ? -1 : l->byid[fid];
}

int gi_alloc_arrays(graph_index *g, size_t n)
{
    g->paths = calloc(n + 1, sizeof *g->paths);
    g->is_test = calloc(n + 1, 1);
    g->lang = calloc(n + 1, 1);
    g->sym_off = calloc(n + 1, sizeof *g->sym_off);
    for (int f = 0; f < GI_FIELDS; f++) g->flen[f] = calloc(n + 1, sizeof(float));
    g->co = calloc(n + 1, sizeof *g->co);
    double **dbl[] = {&g->co_total, &g->act, &g->lex, &g->tmp, &g->final, &g->mention, &g->cosc,
                      &g->clex, &g->central, &g->churn, &g->fld[0], &g->fld[1], &g->fld[2],
                      &g->defines};
    int ok = g->paths && g->is_test && g->lang && g->sym_off && g->co;
    for (size_t i = 0; i < sizeof dbl / sizeof *dbl; i++) ok &= (*dbl[i] = calloc(n + 1, sizeof(double))) != NULL;
    for (int f = 0; f < GI_FIELDS; f++) ok &= g->flen[f] != NULL;
    g->aux = calloc(n + 1, 1);
    return ok && g->aux ? 0 : -1;
}

/* The files, sorted by path; their row ids mapped. */
static int load_files(loader *l)
{
    graph_index *g = l->g;
    sqlite3_stmt *st;
    int rc = -1;
    if (sqlite3_prepare_v2(l->db, "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM files", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        g->n = (size_t)sqlite3_column_int64(st, 0);
        l->maxid = sqlite3_column_int64(st, 1);
        rc = 0;
    }
    sqlite3_finalize(st);
    if (rc != 0 || l->maxid < 0 || gi_alloc_arrays(g, g->n) != 0) return -1;
    if (!(l->byid = malloc(sizeof *l->byid * (size_t)(l->maxid + 1)))) return -1;
    for (int64_t i = 0; i <= l->maxid; i++) l->byid[i] = -1;
    if (sqlite3_prepare_v2(l->db, "SELECT id, path, lang, is_test FROM files ORDER BY path", -1,
                           &st, NULL) != SQLITE_OK)
        return -1;
    size_t i = 0;
    while (rc == 0 && i < g->n && sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id >= 0 && id <= l->maxid) l->byid[id] = (int32_t)i;
        if (!(g->paths[i] = dup_col(st, 1))) rc = -1;
        g->lang[i] = (uint8_t)sqlite3_column_int(st, 2);
        g->is_test[i] = (uint8_t)sqlite3_column_int(st, 3);
        g->aux[i] = (uint8_t)(g->paths[i] && aux_path(g->paths[i]));
        i++;
    }
    sqlite3_finalize(st);
    g->n = i;
    return rc;
}

/* The symbols, grouped by file (CSR in sym_off). */
static int load_symbols(loader *l)
{
    graph_index *g = l->g;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT file_id, name, kind, exported, line, end_line FROM symbols",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    gsym *tmp_syms = NULL;
    uint32_t *tmp_file = NULL;
    size_t ns = 0, cs = 0, n = g->n;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int32_t d = file_of(l, sqlite3_column_int64(st, 0));
        if (d < 0) continue;
        if (ns == cs) {
            cs = cs ? cs * 2 : 4096;
            gsym *a = realloc(tmp_syms, cs * sizeof *a);
            uint32_t *b = a ? realloc(tmp_file, cs * sizeof *b) : NULL;
            if (a) tmp_syms = a;
            if (!a || !b) {
                rc = -1;
                break;
            }
            tmp_file = b;
        }
        gsym s = {dup_col(st, 1), (uint8_t)sqlite3_column_int(st, 2),
                  (uint8_t)sqlite3_column_int(st, 3), (uint32_t)sqlite3_column_int(st, 4),
                  (uint32_t)sqlite3_column_int(st, 5)};
        if (!s.name) rc = -1;
        tmp_syms[ns] = s;
        tmp_file[ns++] = (uint32_t)d;
    }
    sqlite3_finalize(st);
    uint32_t *pos = rc == 0 ? malloc(sizeof *pos * (n ? n : 1)) : NULL;
    g->syms = pos ? malloc(sizeof *g->syms * (ns ? ns : 1)) : NULL;
    if (!g->syms) {
        for (size_t k = 0; k < ns; k++) free(tmp_syms[k].name);
        rc = -1;
    } else {
        for (size_t k = 0; k < ns; k++) g->sym_off[tmp_file[k] + 1]++;
        for (size_t k = 0; k < n; k++) g->sym_off[k + 1] += g->sym_off[k];
        for (size_t k = 0; k < n; k++) pos[k] = g->sym_off[k];
        for (size_t k = 0; k < ns; k++) g->syms[pos[tmp_file[k]]++] = tmp_syms[k];
        g->n_syms = ns;
    }
    free(pos);
    free(tmp_syms);
    free(tmp_file);
    return rc;
}

/* BM25F: the path, symbol and content fields of every file. */
static int load_fields(loader *l)
{
    graph_index *g = l->g;
    tok_ctx *tc = &l->tc;
    int cached = content_from_cache(tc, l->db, l->byid, l->maxid);
    if (cached < 0) return -1;
    char *content = !cached ? malloc(GI_CONTENT_MAX) : NULL;
    if (!cached && !content) return -1;
    for (size_t d = 0; d < g->n && !tc->oom; d++) {
        tc->doc = (uint32_t)d;
        tc->field = GI_PATH;
        char p[1024];
        snprintf(p, sizeof p, "%s", g->paths[d]);
        char *dot = strrchr(p, '.');
        if (dot && !strchr(dot, '/')) *dot = '\0';
        for (char *c = p; *c; c++)
            if (*c == '/' || *c == '-' || *c == '.') *c = ' ';
        graph_tokenize(p, strlen(p), 0, on_tok, tc);
        tc->field = GI_SYMBOL;
        for (uint32_t k = g->sym_off[d]; k < g->sym_off[d + 1] && !tc->oom; k++)
            tok_memo(tc, g->syms[k].name, strlen(g->syms[k].name));
        if (!cached) content_field(tc, g->repo, g->paths[d], content);
    }
    free(content);
    return tc->oom ? -1 : 0;
}

typedef struct edges {
    uint32_t *src, *dst;
    size_t n, cap;
} edges;

static int push_edge(edges *e, uint32_t a, uint32_t b)
{
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 4096;
        uint32_t *x = realloc(e->src, e->cap * sizeof *x);
        if (x) e->src = x;
        uint32_t *y = x ? realloc(e->dst, e->cap * sizeof *y) : NULL;
        if (!y) return -1;
        e->dst = y;
    }
    e->src[e->n] = a;
    e->dst[e->n++] = b;
    return 0;
}

/* The (file, name) pairs of the calls table met so far (load_refs): open
 * addressing by hash, each with its name to compare. */
typedef struct pair_ent {
    uint64_t h; /* 0: empty */
    int64_t fid;
    char *name;
} pair_ent;
typedef struct pairset {
    pair_ent *v;
    size_t cap, n;
} pairset;

static void pairset_free(pairset *s)
{
    for (size_t i = 0; i < s->cap; i++) free(s->v[i].name);
    free(s->v);
}

/* 1 when (fid, name) is new (now kept), 0 when met before, -1 out of memory. */
static int pairset_add(pairset *s, int64_t fid, const char *name)
{
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        pair_ent *v = calloc(cap, sizeof *v);
        if (!v) return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->v[i].h) continue;
            size_t j = s->v[i].h & (cap - 1);
            while (v[j].h) j = (j + 1) & (cap - 1);
            v[j] = s->v[i];
        }
        free(s->v);
        s->v = v;
        s->cap = cap;
    }
    uint64_t h = (graph_fnv64(name, strlen(name)) ^ (uint64_t)fid * 0x9e3779b97f4a7c15ull) | 1;
    size_t j = h & (s->cap - 1);
    for (; s->v[j].h; j = (j + 1) & (s->cap - 1))
        if (s->v[j].h == h && s->v[j].fid == fid && strcmp(s->v[j].name, name) == 0) return 0;
    if (!(s->v[j].name = util_strdup(name))) return -1;
    s->v[j].h = h;
    s->v[j].fid = fid;
    s->n++;
    return 1;
}

/* The import and call name fields; resolved imports become edges.  A
 * callee's name counts once per file, where it first occurs (the table
 * holds every call site, for impact): the rows in their order, the pairs
 * met before skipped (SQL's GROUP BY ... ORDER BY min(rowid) gave the same
 * rows at two sorts of the whole table, a quarter of a load). */
static int load_refs(loader *l, edges *e)
{
    static const char *const q2[2] = {"SELECT file_id, spec, target FROM imports",
                                      "SELECT file_id, name FROM calls ORDER BY rowid"};
    tok_ctx *tc = &l->tc;
    pairset seen = {0};
    for (int k = 0; k < 2 && !tc->oom; k++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(l->db, q2[k], -1, &st, NULL) != SQLITE_OK) {
            pairset_free(&seen);
            return -1;
        }
        tc->field = k == 0 ? GI_IMPORT : GI_CALL;
        while (!tc->oom && sqlite3_step(st) == SQLITE_ROW) {
            int64_t fid = sqlite3_column_int64(st, 0);
            int32_t d = file_of(l, fid);
            if (d < 0) continue;
            tc->doc = (uint32_t)d;
            const char *s = (const char *)sqlite3_column_text(st, 1);
            if (k == 1) {
                int r = s ? pairset_add(&seen, fid, s) : 0;
                if (r < 0) tc->oom = 1;
                if (r <= 0) continue;
            }
            if (s) tok_memo(tc, s, strlen(s));
            if (k != 0 || sqlite3_column_type(st, 2) == SQLITE_NULL) continue;
            int32_t t = file_of(l, sqlite3_column_int64(st, 2));
            if (t >= 0 && push_edge(e, (uint32_t)d, (uint32_t)t) != 0) tc->oom = 1;
        }
        sqlite3_finalize(st);
    }
    pairset_free(&seen);
    return tc->oom ? -1 : 0;
}

/* Imports and importers (CSR both ways) with their names in the fields. */
static int load_graph(loader *l)
{
    graph_index *g = l->g;
    edges e = {0};
    int rc = load_refs(l, &e);
    if (rc == 0) rc = csr(g->n, e.src, e.dst, e.n, &g->out_off, &g->out);
    if (rc == 0) rc = csr(g->n, e.dst, e.src, e.n, &g->in_off, &g->in);
    free(e.src);
    free(e.dst);
    return rc;
}

/* Postings: the (term, doc, field) triples sorted and aggregated; the
 * fields' average lengths. */
static int make_postings(loader *l)
{
    graph_index *g = l->g;
    tok_ctx *tc = &l->tc;
    if (tc->n > 1) sort_triples(tc);
    g->post_off = calloc(g->n_terms + 1, sizeof *g->post_off);
    g->post = malloc(sizeof *g->post * (tc->n ? tc->n : 1));
    if (!g->post_off || !g->post) return -1;
    size_t np = 0;
    for (size_t k = 0; k < tc->n; k++) {
        const triple *t = &tc->t[k];
        if (np == 0 || g->post[np - 1].doc != t->doc || g->post_term_last != t->term) {
            g->post[np] = (gi_posting){t->doc, {0}};
            g->post_off[t->term + 1]++;
            g->post_term_last = t->term;
            np++;
        }
        uint32_t tf = g->post[np - 1].tf[t->field] + t->cnt;
        g->post[np - 1].tf[t->field] = (uint16_t)(tf < 65535 ? tf : 65535);
    }
    for (size_t k = 0; k < g->n_terms; k++) g->post_off[k + 1] += g->post_off[k];
    for (int f = 0; f < GI_FIELDS; f++) {
        double s = 0;
        for (size_t d = 0; d < g->n; d++) s += g->flen[f][d];
        g->avglen[f] = g->n ? s / (double)g->n : 1.0;
        if (g->avglen[f] <= 0) g->avglen[f] = 1.0;
    }
    return 0;
}

/* x[d] /= max(x), when the max is positive; returns the max. */
static double scale_to_max(double *x, size_t n)
{
    double mx = 0;
    for (size_t d = 0; d < n; d++) mx = fmax(mx, x[d]);
    for (size_t d = 0; mx > 0 && d < n; d++) x[d] /= mx;
    return mx;
}

/* Priors: centrality (log import in-degree), churn (log decayed commit
 * weight, also the co-change Jaccard's denominators), the size scale. */
static void load_priors(loader *l)
{
    graph_index *g = l->g;
    for (size_t d = 0; d < g->n; d++)
        g->central[d] = log1p((double)(g->in_off[d + 1] - g->in_off[d]));
    scale_to_max(g->central, g->n);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db, "SELECT path, w FROM commit_files", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            int32_t d = gi_find_path(g, (const char *)sqlite3_column_text(st, 0));
            if (d >= 0) g->co_total[d] = sqlite3_column_double(st, 1);
        }
        sqlite3_finalize(st);
        for (size_t d = 0; d < g->n; d++) g->churn[d] = log1p(g->co_total[d]);
        g->churn_mx = scale_to_max(g->churn, g->n);
    }
    for (size_t d = 0; d < g->n; d++)
        g->size_mx = fmax(g->size_mx, log1p(g->flen[GI_CONTENT][d]));
}

/* Definitions by name, for the defines feature. */
/* A symbol's term: its name's, else its lowercase compound's ("getUser",
 * "get_user" -> "getuser"), else -1.  Looked up once here: a prompt's
 * targets name their files' symbols that match its terms. */
static int32_t sym_term_of(const graph_index *g, const char *name)
{
    int32_t id = gi_term_id(g, name, strlen(name));
    if (id >= 0) return id;
    char low[128];
    size_t l = 0;
    for (const char *c = name; *c && l < sizeof low - 1; c++)
        if (*c != '_') low[l++] = (char)tolower((unsigned char)*c);
    return gi_term_id(g, low, l);
}

static int load_defs(graph_index *g)
{
    g->defs = malloc(sizeof *g->defs * (g->n_syms ? g->n_syms : 1));
    g->sym_term = malloc(sizeof *g->sym_term * (g->n_syms ? g->n_syms : 1));
    if (!g->defs || !g->sym_term) return -1;
    for (size_t k = 0; k < g->n_syms; k++) g->sym_term[k] = sym_term_of(g, g->syms[k].name);
    for (size_t d = 0; d < g->n; d++)
        for (uint32_t k = g->sym_off[d]; k < g->sym_off[d + 1]; k++)
            g->defs[g->n_defs++] = (gi_def){g->syms[k].name, (uint32_t)d};
    if (g->n_defs > 1) qsort(g->defs, g->n_defs, sizeof *g->defs, cmp_def);
    return 0;
}

/* What queries read lazily: co-change partners (SQLite, on first use per
 * file) and the stored model's text.  The import resolver is made by the
 * first prompt that names a path or module (query.c). */
static int load_query_support(graph_index *g)
{
    g->fus_meta = graph_db_meta(g->db, "fusion"); /* parsed by model.c on first use */
    return sqlite3_prepare_v2(g->db,
                              "SELECT b, w FROM cochange WHERE a = ?1 UNION ALL "
                              "SELECT a, w FROM cochange WHERE b = ?1",
                              -1, &g->co_stmt, NULL) == SQLITE_OK
               ? 0
               : -1;
}

graph_index *gi_new(const char *repo, const char *db_path, char **err)
{
    graph_index *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->repo = util_strdup(repo);
    g->db_path = db_path ? util_strdup(db_path) : graph_db_path(repo);
    if (!g->repo || !g->db_path || graph_db_open(g->db_path, 0, &g->db, err) != 0) {
        graph_index_free(g);
        return NULL;
    }
    return g;
}

int gi_finish(graph_index *g)
{
    if (load_query_support(g) != 0) return -1;
    g->data_version = gi_data_version(g);
    return 0;
}

int graph_index_load(const char *repo, const char *db_path, graph_index **out, char **err)
{
    *out = NULL;
    graph_index *g = gi_new(repo, db_path, err);
    if (!g) return -1;
    loader l = {.g = g, .db = g->db};
    l.tc.g = g;
    int rc = load_files(&l);
    if (rc == 0) rc = load_symbols(&l);
    if (rc == 0) rc = load_fields(&l);
    if (rc == 0) rc = load_graph(&l);
    if (rc == 0) rc = make_postings(&l);
    if (rc == 0) load_priors(&l);
    if (rc == 0) rc = load_defs(g);
    if (rc == 0) rc = gi_finish(g);
    free(l.byid);
    free(l.tc.t);
    free(l.tc.ids);
    tok_memo_free(&l.tc);
    if (rc != 0) {
        if (!*err) *err = util_strdup("could not load the graph cache");
        graph_index_free(g);
        return -1;
    }
    *out = g;
    return 0;
}

int32_t gi_find_path(const graph_index *g, const char *path)
{
    if (!path) return -1;
    size_t lo = 0, hi = g->n;
    while (lo < hi) { /* paths are sorted (ORDER BY path: byte order) */
        size_t mid = (lo + hi) / 2;
        int c = strcmp(g->paths[mid], path);
        if (c == 0) return (int32_t)mid;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

int graph_index_find(const graph_index *g, const char *path) { return gi_find_path(g, path); }

int64_t gi_data_version(graph_index *g)
{
    int64_t v = -1;
    if (!g->dv_stmt && sqlite3_prepare_v2(g->db, "PRAGMA data_version", -1, &g->dv_stmt, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(g->dv_stmt) == SQLITE_ROW) v = sqlite3_column_int64(g->dv_stmt, 0);
    sqlite3_reset(g->dv_stmt);
    return v;
}

const gi_partners *gi_cochange(graph_index *g, uint32_t d)
{
    gi_partners *p = &g->co[d];
    if (p->loaded) return p;
    p->loaded = 1;
    sqlite3_stmt *st = g->co_stmt;
    sqlite3_bind_text(st, 1, g->paths[d], -1, SQLITE_STATIC);
    size_t cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int32_t o = gi_find_path(g, (const char *)sqlite3_column_text(st, 0));
        if (o < 0) continue;
        double wab = sqlite3_column_double(st, 1);
        double den = g->co_total[d] + g->co_total[o] - wab;
        if (den <= 0) continue;
        if (p->n == cap) {
            cap = cap ? cap * 2 : 16;
            uint32_t *a = realloc(p->ids, cap * sizeof *a);
            if (a) p->ids = a;
            float *b = a ? realloc(p->w, cap * sizeof *b) : NULL;
            if (!a || !b) {
                g->co_short = 1;
                break;
            }
            p->w = b;
        }
        p->ids[p->n] = (uint32_t)o;
        p->w[p->n++] = (float)(wab / den);
    }
    sqlite3_reset(st);
    return p;
}

void graph_index_free(graph_index *g)
{
    if (!g) return;
    /* from a snapshot, the strings are in its mapping */
    for (size_t i = 0; i < g->n && g->paths && !g->snap_map; i++) free(g->paths[i]);
    for (size_t i = 0; i < g->n_syms && !g->snap_map; i++) free(g->syms[i].name);
    for (size_t i = 0; i < g->n_terms && !g->snap_map; i++) free(g->term_s[i]);
    free(g->term_s);
    free_owned(g, g->term_slot);
    for (size_t i = 0; g->co && i < g->n; i++) {
        free_owned(g, g->co[i].ids); /* a snapshot's are in its mapping */
        free_owned(g, g->co[i].w);
    }
    for (int f = 0; f < GI_FIELDS; f++) free(g->flen[f]);
    sqlite3_finalize(g->co_stmt);
    sqlite3_finalize(g->dv_stmt);
    sqlite3_finalize(g->partners[0]);
    sqlite3_finalize(g->partners[1]);
    sqlite3_close(g->db);
    graph_resolver_free(g->res);
    free(g->paths);
    free(g->is_test);
    free(g->lang);
    free(g->syms);
    free(g->sym_off);
    free_owned(g, g->sym_term);
    free_owned(g, g->post_off);
    free_owned(g, g->post);
    free_owned(g, g->out_off);
    free_owned(g, g->out);
    free_owned(g, g->in_off);
    free_owned(g, g->in);
    free(g->co);
    free(g->co_total);
    free(g->central);
    free(g->churn);
    free(g->aux);
    for (int f = 0; f < 3; f++) free(g->fld[f]);
    free(g->defines);
    free(g->defs);
    free(g->act);
    free(g->lex);
    free(g->tmp);
    free(g->final);
    free(g->mention);
    free(g->cosc);
    free(g->clex);
    free(g->qterms);
    free(g->qwt);
    free(g->ptext);
    free(g->fus_meta);
    free(g->repo);
    free(g->db_path);
    if (g->snap_map) munmap(g->snap_map, g->snap_len);
    free(g);
}

size_t graph_index_files(const graph_index *g) { return g->n; }
const char *graph_index_path(const graph_index *g, size_t file) { return g->paths[file]; }
