/* snapshot.c: a loaded index saved next to its cache (<graph.db>-index),
 * so that the next process loads it in milliseconds.
 *
 * Loading from graph.db reads every file, symbol, import, call and word
 * row and tokenizes the names: a billion instructions for sympy, paid by
 * every Claude Code prompt (a process per hook).  The snapshot holds what
 * that load computes (paths, symbols, terms, postings, import graph,
 * priors, definitions); the rest (the model's text, the resolver, the
 * statements) is made as on any load.
 *
 * It is only used for the cache it was made from: its header carries the
 * build stamp (gi_build_stamp: a hash of the meta values, among them
 * build_id, which every build removes first and sets anew when it ends),
 * and a build that is under way or failed leaves no build_id, so nothing
 * is saved or used until one completes.  Native byte order and sizes,
 * checked by the header; a checksum over the payload, and every count and
 * index range-checked, so a torn or foreign file is refused, never
 * trusted: the caller then loads from graph.db.
 *
 * A file that passed every check is sealed (<graph.db>-index.seal: its
 * inode, size, times and header), and a load that finds it unchanged since
 * skips the checks that read the whole file (the checksum, the terms'
 * table, the postings): a prompt reads the postings of a few terms, and
 * the checks read 6 MB of sympy's 9 MB on every prompt's process.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../util/fs.h"

#include "index.h"

#define SNAP_MAGIC "CLRGIX08" /* its digits change with the layout, the checksum or the terms' hash */
#define SNAP_ENDIAN 0x01020304u
#define SNAP_ALIGN 8 /* of the arrays a load uses in place, from the file's start */
/* the largest counts a snapshot may give (a repository of a million files) */
#define SNAP_MAX_N ((uint64_t)1 << 24)
#define SNAP_MAX_ITEMS ((uint64_t)1 << 32)

typedef struct snap_hdr {
    char magic[8];
    uint32_t endian, posting_size;
    uint64_t stamp, bytes, sum;
} snap_hdr;
_Static_assert(sizeof(snap_hdr) == GI_SNAPSHOT_HEADER, "the header's size is part of the format");

static const char *const stamp_keys[] = {"build_id", "built_at", "head", "index_mtime", "schema",
                                         "cochange_head", "fusion"};

uint64_t gi_build_stamp(sqlite3 *db)
{
    enum { NK = sizeof stamp_keys / sizeof *stamp_keys };
    char *v[NK];
    if (graph_db_metas(db, stamp_keys, NK, v) != 0) return 0;
    uint64_t h = 0;
    if (v[0] && *v[0]) { /* build_id: none while a build is under way or failed */
        buf b; /* each key and its value, NUL-terminated */
        buf_init(&b);
        for (size_t k = 0; k < NK; k++) {
            buf_append(&b, stamp_keys[k], strlen(stamp_keys[k]) + 1);
            buf_append(&b, v[k] ? v[k] : "", v[k] ? strlen(v[k]) + 1 : 0);
        }
        h = buf_failed(&b) ? 0 : graph_fnv64(b.p, b.len);
        buf_free(&b);
    }
    for (size_t k = 0; k < NK; k++) free(v[k]);
    return h;
}

/* The payload's checksum: two lanes of eight bytes a step, so that the
 * multiplications overlap (an 8 MB snapshot in about 5 million
 * instructions). */
static uint64_t sum_step(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    return h << 31 | h >> 33;
}

uint64_t gi_snapshot_sum(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        uint64_t w[2];
        memcpy(w, p + i, 16);
        a = sum_step(a, w[0]);
        b = sum_step(b, w[1]);
    }
    for (; i < n; i++) a = sum_step(a, p[i]);
    return sum_step(a, b) ^ (uint64_t)n;
}

static char *snap_path(const graph_index *g) { return util_format("%s-index", g->db_path); }
/* The seal (below) of the snapshot at snap: one file name for the load
 * that writes it and gi_snapshot_write, which removes it. */
static char *seal_path(const char *snap) { return util_format("%s.seal", snap); }

/* ---------------------------------------------------------------- save */

static void put(buf *b, const void *p, size_t n) { buf_append(b, p, n); }
/* Zeros up to the next multiple of SNAP_ALIGN from the file's start: an
 * array a load uses in place (take_view) starts there. */
static void put_align(buf *b)
{
    static const char zero[SNAP_ALIGN];
    put(b, zero, (SNAP_ALIGN - b->len % SNAP_ALIGN) % SNAP_ALIGN);
}
/* An array a load uses in place, aligned. */
static void put_view(buf *b, const void *p, size_t n)
{
    put_align(b);
    put(b, p, n);
}
static void put_u64(buf *b, uint64_t v) { put(b, &v, sizeof v); }
/* n strings, NUL-terminated, after their total length, then where each
 * starts (format 08: a load had to find every NUL, 118,000 strings for
 * sympy, to know it). */
static void put_strings(buf *b, const char *(*at)(const void *ud, size_t i), const void *ud, size_t n)
{
    buf tmp;
    buf_init(&tmp);
    uint32_t *off = malloc((n ? n : 1) * sizeof *off);
    for (size_t i = 0; off && i < n; i++) {
        const char *s = at(ud, i);
        if (tmp.len > UINT32_MAX) break;
        off[i] = (uint32_t)tmp.len;
        buf_append(&tmp, s, strlen(s) + 1);
    }
    if (!off || buf_failed(&tmp) || tmp.len > UINT32_MAX) b->oom = 1;
    put_u64(b, tmp.len);
    put(b, tmp.p, tmp.len);
    if (off) put_view(b, off, n * sizeof *off);
    free(off);
    buf_free(&tmp);
}

static const char *path_at(const void *g, size_t i) { return ((const graph_index *)g)->paths[i]; }
static const char *sym_at(const void *g, size_t i) { return ((const graph_index *)g)->syms[i].name; }
static const char *str_at(const void *v, size_t i) { return ((const char *const *)v)[i]; }

/* The symbol a definition names: its name is borrowed from one of its
 * file's symbols. */
static uint32_t def_sym(const graph_index *g, const gi_def *d)
{
    for (uint32_t k = g->sym_off[d->file]; k < g->sym_off[d->file + 1]; k++)
        if (g->syms[k].name == d->name) return k;
    return UINT32_MAX;
}

/* The parts of a fixed size for n files, in their order in the file:
 * saved and read back alike.  Returns how many. */
typedef struct span {
    void *p;
    size_t bytes;
} span;
enum { N_FIXED = 10 + GI_FIELDS };
static size_t fixed_parts(const graph_index *g, size_t n, span *s)
{
    size_t k = 0;
    s[k++] = (span){(void *)g->avglen, sizeof g->avglen};
    s[k++] = (span){(void *)&g->churn_mx, sizeof g->churn_mx};
    s[k++] = (span){(void *)&g->size_mx, sizeof g->size_mx};
    s[k++] = (span){g->is_test, n};
    s[k++] = (span){g->lang, n};
    s[k++] = (span){g->aux, n};
    s[k++] = (span){g->sym_off, (n + 1) * sizeof *g->sym_off};
    for (int f = 0; f < GI_FIELDS; f++) s[k++] = (span){g->flen[f], n * sizeof(float)};
    s[k++] = (span){g->co_total, n * sizeof(double)};
    s[k++] = (span){g->central, n * sizeof(double)};
    s[k++] = (span){g->churn, n * sizeof(double)};
    return k;
}

/* Every file's co-change partners (format 07), as gi_cochange reads them
 * from graph.db on a prompt: 20 files' queries were a sixth of a sympy
 * prompt's process.  Their total, then offsets, ids and weights.  None
 * saved when a file's could not all be read. */
static void put_cochange(graph_index *g, buf *b)
{
    size_t n = g->n;
    uint32_t *off = malloc((n + 1) * sizeof *off);
    if (!off || !g->co_stmt) {
        free(off);
        b->oom = 1;
        return;
    }
    off[0] = 0;
    for (size_t d = 0; d < n; d++) off[d + 1] = off[d] + gi_cochange(g, (uint32_t)d)->n;
    if (g->co_short) b->oom = 1;
    put_u64(b, off[n]);
    put_view(b, off, (n + 1) * sizeof *off);
    put_align(b);
    for (size_t d = 0; d < n; d++) put(b, g->co[d].ids, g->co[d].n * sizeof *g->co[d].ids);
    put_align(b);
    for (size_t d = 0; d < n; d++) put(b, g->co[d].w, g->co[d].n * sizeof *g->co[d].w);
    free(off);
}

static void payload(graph_index *g, buf *b)
{
    size_t n = g->n, np = g->post_off[g->n_terms];
    uint64_t counts[] = {n, g->n_syms, g->n_terms, np, g->out_off[n], g->in_off[n], g->n_defs};
    put(b, counts, sizeof counts);
    span parts[N_FIXED];
    for (size_t i = 0, m = fixed_parts(g, n, parts); i < m; i++) put(b, parts[i].p, parts[i].bytes);
    put_strings(b, path_at, g, n);
    put_strings(b, sym_at, g, g->n_syms);
    for (size_t k = 0; k < g->n_syms; k++) {
        uint8_t ke[2] = {g->syms[k].kind, g->syms[k].exported};
        uint32_t le[2] = {g->syms[k].line, g->syms[k].end_line};
        put(b, ke, sizeof ke);
        put(b, le, sizeof le);
    }
    put_view(b, g->sym_term, g->n_syms * sizeof *g->sym_term);
    /* the terms in id order */
    const char **terms = calloc(g->n_terms ? g->n_terms : 1, sizeof *terms);
    if (!terms || gi_terms_by_id(g, terms) != 0) {
        free(terms);
        b->oom = 1; /* nothing is saved */
        return;
    }
    put_strings(b, str_at, terms, g->n_terms);
    free(terms);
    /* their table as it is: a load takes it instead of hashing them all */
    put_u64(b, g->term_cap);
    put_view(b, g->term_slot, g->term_cap * sizeof *g->term_slot);
    put_view(b, g->post_off, (g->n_terms + 1) * sizeof *g->post_off);
    /* whole structs, their padding zeroed, so that a load uses them in place */
    put_align(b);
    for (size_t k = 0; k < np; k++) {
        gi_posting p;
        memset(&p, 0, sizeof p);
        p.doc = g->post[k].doc;
        memcpy(p.tf, g->post[k].tf, sizeof p.tf);
        put(b, &p, sizeof p);
    }
    put_view(b, g->out_off, (n + 1) * sizeof *g->out_off);
    put_view(b, g->out, g->out_off[n] * sizeof *g->out);
    put_view(b, g->in_off, (n + 1) * sizeof *g->in_off);
    put_view(b, g->in, g->in_off[n] * sizeof *g->in);
    for (size_t k = 0; k < g->n_defs; k++) {
        uint32_t v[2] = {def_sym(g, &g->defs[k]), g->defs[k].file};
        put(b, v, sizeof v);
    }
    put_cochange(g, b);
}

/* b: a header's room, then the payload.  The header is filled in and the
 * whole written to path in place of what is there: 0, or -1 (nothing
 * written).  Not synced: a cache, and a torn file fails its checksum. */
static int write_snapshot(const char *path, uint64_t stamp, buf *b)
{
    if (buf_failed(b) || b->len < sizeof(snap_hdr)) return -1;
    snap_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, SNAP_MAGIC, sizeof h.magic);
    h.endian = SNAP_ENDIAN;
    h.posting_size = (uint32_t)sizeof(gi_posting);
    h.stamp = stamp;
    h.bytes = b->len - sizeof h;
    h.sum = gi_snapshot_sum(b->p + sizeof h, b->len - sizeof h);
    memcpy(b->p, &h, sizeof h);
    /* read-only: a load maps the file and uses it in place, so it must be
     * replaced (a rename, as here), never written over; `cp` and a shell's
     * `>` then refuse to (but for root) */
    return util_write_file_atomic(path, b->p, b->len, 0444, 0);
}

int gi_snapshot_save(graph_index *g, uint64_t stamp)
{
    buf b;
    buf_init(&b);
    snap_hdr room;
    memset(&room, 0, sizeof room);
    put(&b, &room, sizeof room);
    payload(g, &b);
    char *path = snap_path(g);
    int rc = path ? write_snapshot(path, stamp, &b) : -1;
    buf_free(&b);
    free(path);
    return rc;
}

int gi_snapshot_write(const char *path, uint64_t stamp, const void *payload_bytes, size_t n)
{
    char *sp = seal_path(path);
    if (sp) unlink(sp); /* a file written here is checked whole */
    free(sp);
    buf b;
    buf_init(&b);
    snap_hdr room;
    memset(&room, 0, sizeof room);
    put(&b, &room, sizeof room);
    put(&b, payload_bytes, n);
    int rc = write_snapshot(path, stamp, &b);
    buf_free(&b);
    return rc;
}

/* ---------------------------------------------------------------- seal */

/* What a load that checked the snapshot whole saw: the file (any write or
 * chmod moves its ctime, and a replacement is another inode) and its
 * header (two files that share the rest, an inode reused within a clock
 * tick, still differ in their checksum). */
typedef struct snap_seal {
    char magic[8];
    uint64_t dev, ino, size;
    int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
    uint64_t stamp, sum;
} snap_seal;
#define SEAL_MAGIC "CLRSEAL1"


static void seal_of(snap_seal *s, const struct stat *st, const snap_hdr *h)
{
    memset(s, 0, sizeof *s);
    memcpy(s->magic, SEAL_MAGIC, sizeof s->magic);
    s->dev = (uint64_t)st->st_dev;
    s->ino = (uint64_t)st->st_ino;
    s->size = (uint64_t)st->st_size;
    s->mtime_s = (int64_t)st->st_mtim.tv_sec;
    s->mtime_ns = (int64_t)st->st_mtim.tv_nsec;
    s->ctime_s = (int64_t)st->st_ctim.tv_sec;
    s->ctime_ns = (int64_t)st->st_ctim.tv_nsec;
    s->stamp = h->stamp;
    s->sum = h->sum;
}

/* Whether the seal next to the snapshot at snap is the one of this file
 * (st) and header. */
static int sealed(const char *snap, const struct stat *st, const snap_hdr *h)
{
    char *path = seal_path(snap);
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    free(path);
    if (fd < 0) return 0;
    snap_seal have, want;
    ssize_t r = read(fd, &have, sizeof have);
    close(fd);
    seal_of(&want, st, h);
    return r == (ssize_t)sizeof have && memcmp(&have, &want, sizeof want) == 0;
}

int64_t gi_seal_min_age_ms = 2000;

/* Seals a snapshot that passed every check; a seal that cannot be written
 * only leaves the next load to check again.  Only a file whose ctime is
 * gi_seal_min_age_ms old: a file system may keep times to a clock tick
 * (or a second), and a write within the tick of its last change would
 * leave them as they were; past that, any write moves them. */
static void seal(const char *snap, const struct stat *st, const snap_hdr *h)
{
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) return;
    int64_t age_ms = ((int64_t)now.tv_sec - (int64_t)st->st_ctim.tv_sec) * 1000 +
                     ((int64_t)now.tv_nsec - (int64_t)st->st_ctim.tv_nsec) / 1000000;
    if (age_ms < gi_seal_min_age_ms) return;
    snap_seal s;
    seal_of(&s, st, h);
    char *path = seal_path(snap);
    if (path) util_write_file_atomic(path, &s, sizeof s, 0644, 0);
    free(path);
}

/* ---------------------------------------------------------------- load */

/* The pages of an array just allocated, which the load writes whole,
 * mapped in one call (Linux 5.14; elsewhere, or refused, they fault one
 * by one as before): sympy's symbols, definitions and string pointers are
 * 2.5 MB, 620 faults of a prompt's 1,100. */
static void prefault(void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + n) & ~(page - 1);
    if (b > a) (void)madvise((void *)a, b - a, MADV_POPULATE_WRITE);
#else
    (void)p, (void)n;
#endif
}

typedef struct cursor {
    const unsigned char *p;
    size_t left;
    int bad;
} cursor;

static const void *take(cursor *c, size_t n)
{
    if (c->bad || n > c->left) {
        c->bad = 1;
        return NULL;
    }
    const void *r = c->p;
    c->p += n;
    c->left -= n;
    return r;
}

/* n items of size sz where they are (the mapped file, which the index
 * keeps: graph_index_free does not free them), after the zeros that
 * align them (put_view); NULL and c->bad when the zeros or the items are
 * not there. */
static void *take_view(cursor *c, size_t n, size_t sz)
{
    size_t pad = (SNAP_ALIGN - (uintptr_t)c->p % SNAP_ALIGN) % SNAP_ALIGN;
    const unsigned char *z = take(c, pad);
    for (size_t i = 0; z && i < pad; i++)
        if (z[i]) c->bad = 1;
    const void *v = take(c, n * sz);
    return c->bad ? NULL : (void *)(uintptr_t)v; /* (mapped copy-on-write: see gi_snapshot_load) */
}

static void take_into(cursor *c, void *dst, size_t n)
{
    const void *src = take(c, n);
    if (src) memcpy(dst, src, n);
}

/* n strings after their total length and where each starts
 * (put_strings), used where they are mapped (graph_index_free does not
 * free them), with out[i] pointing at each.  The pool's last byte is a
 * NUL and every start lies in it, so each is a string that ends there or
 * before, whatever the file holds; anything else is refused (c->bad). */
static void take_pool(cursor *c, size_t n, char **out)
{
    uint64_t bytes = 0;
    take_into(c, &bytes, sizeof bytes);
    char *pool = bytes <= c->left ? (char *)(uintptr_t)take(c, (size_t)bytes) : NULL;
    const uint32_t *off = pool ? take_view(c, n, sizeof *off) : NULL;
    if (!off || (n > 0) != (bytes > 0) || (bytes > 0 && pool[bytes - 1] != '\0')) {
        c->bad = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (off[i] >= bytes) {
            c->bad = 1;
            return;
        }
        out[i] = pool + off[i];
    }
}

/* A terms table's size: a power of two the file holds, over twice the terms. */
static int terms_table_ok(const cursor *c, uint64_t cap, size_t nt)
{
    return cap >= 2 && (cap & (cap - 1)) == 0 && cap >= 2 * (uint64_t)nt && cap <= c->left / sizeof(uint32_t);
}

/* Every slot free or a term's id, at most half of them used: a lookup
 * then always ends (at a free slot), whatever the file holds. */
static int slots_ok(const uint32_t *slot, size_t cap, size_t nt)
{
    size_t used = 0;
    for (size_t j = 0; j < cap; j++) {
        if (slot[j] == GI_TERM_EMPTY) continue;
        if (slot[j] >= nt) return 0;
        used++;
    }
    return used <= cap / 2;
}

/* Whether v[0, n] rises from 0 to at most max. */
static int offsets_ok(const uint32_t *v, size_t n, uint64_t max)
{
    if (v[0] != 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (v[i + 1] < v[i]) return 0;
    return v[n] <= max;
}

static int below(const uint32_t *v, size_t n, uint64_t max)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] >= max) return 0;
    return 1;
}

/* The co-change section: each file's partners where they are mapped
 * (graph_index_free does not free them), every id a file and every
 * weight a finite number. */
static int read_cochange(graph_index *g, cursor *c)
{
    uint64_t total = 0;
    take_into(c, &total, sizeof total);
    size_t n = g->n;
    if (c->bad || total > SNAP_MAX_ITEMS) return -1;
    const uint32_t *off = take_view(c, n + 1, sizeof *off);
    uint32_t *ids = take_view(c, (size_t)total, sizeof *ids);
    float *w = take_view(c, (size_t)total, sizeof *w);
    if (c->bad || !offsets_ok(off, n, total) || off[n] != total || !below(ids, (size_t)total, n)) return -1;
    for (size_t e = 0; e < total; e++)
        if (!(w[e] - w[e] == 0)) return -1; /* NaN or an infinity */
    for (size_t d = 0; d < n; d++) g->co[d] = (gi_partners){ids + off[d], w + off[d], off[d + 1] - off[d], 1};
    return 0;
}

/* The payload into g; with `whole`, the checks that read all of the
 * terms' table and the postings too (a sealed file passed them). */
static int read_payload(graph_index *g, cursor *c, int whole)
{
    uint64_t k[7]; /* n, syms, terms, postings, out, in, defs */
    take_into(c, k, sizeof k);
    if (c->bad || k[0] > SNAP_MAX_N || k[1] > SNAP_MAX_ITEMS || k[2] >= SNAP_MAX_ITEMS ||
        k[3] > SNAP_MAX_ITEMS || k[4] > SNAP_MAX_ITEMS || k[5] > SNAP_MAX_ITEMS || k[6] != k[1])
        return -1;
    size_t n = (size_t)k[0], ns = (size_t)k[1], nt = (size_t)k[2], np = (size_t)k[3];
    g->n = n;
    if (gi_alloc_arrays(g, n) != 0) return -1;
    span parts[N_FIXED];
    for (size_t i = 0, m = fixed_parts(g, n, parts); i < m; i++) take_into(c, parts[i].p, parts[i].bytes);
    take_pool(c, n, g->paths);
    /* what the rest needs at the least (a name's NUL, kind, lines, term
     * and definition; a term's NUL; a posting), checked before anything
     * is allocated for it */
    if (c->bad || !offsets_ok(g->sym_off, n, ns) || g->sym_off[n] != ns ||
        (uint64_t)ns * 23 + nt + (uint64_t)np * sizeof(gi_posting) > c->left)
        return -1;
    g->syms = calloc(ns ? ns : 1, sizeof *g->syms);
    if (!g->syms) return -1;
    prefault(g->syms, ns * sizeof *g->syms);
    g->n_syms = ns;
    char **names = malloc(ns * sizeof *names + 1);
    if (!names) return -1;
    prefault(names, ns * sizeof *names);
    take_pool(c, ns, names);
    /* each symbol's kind, export flag and lines (ten bytes), taken at once
     * (a take per field was most of a load's own time) */
    const unsigned char *kl = c->bad ? NULL : take(c, ns * 10);
    for (size_t i = 0; kl && i < ns; i++) {
        uint32_t le[2];
        memcpy(le, kl + 10 * i + 2, sizeof le);
        g->syms[i] = (gsym){names[i], kl[10 * i], kl[10 * i + 1], le[0], le[1]};
    }
    free(names);
    g->sym_term = take_view(c, ns, sizeof *g->sym_term);
    char **terms = malloc(nt * sizeof *terms + 1); /* the index's, by gi_set_terms */
    if (!terms) return -1;
    prefault(terms, nt * sizeof *terms);
    take_pool(c, nt, terms);
    uint64_t cap = 0;
    take_into(c, &cap, sizeof cap);
    uint32_t *slot = NULL;
    if (c->bad || (cap == 0 && nt == 0)) {
        /* no terms, no table (one is made) */
    } else if (!terms_table_ok(c, cap, nt) || !(slot = take_view(c, (size_t)cap, sizeof *slot)) ||
               (whole && !slots_ok(slot, (size_t)cap, nt))) {
        c->bad = 1;
        slot = NULL; /* (in the mapping) */
    }
    if (c->bad) free(terms);
    else if (gi_set_terms(g, terms, nt, slot, (size_t)cap) != 0) c->bad = 1;
    g->post_off = take_view(c, nt + 1, sizeof *g->post_off);
    if (c->bad || g->n_terms != nt || !offsets_ok(g->post_off, nt, np) || g->post_off[nt] != np) return -1;
    for (size_t i = 0; i < ns; i++)
        if (g->sym_term[i] < -1 || g->sym_term[i] >= (int32_t)nt) return -1;
    g->post = take_view(c, np, sizeof *g->post);
    for (size_t i = 0; whole && i < np && !c->bad; i++)
        if (g->post[i].doc >= n) c->bad = 1;
    g->out_off = take_view(c, n + 1, sizeof *g->out_off);
    g->out = take_view(c, (size_t)k[4], sizeof *g->out);
    g->in_off = take_view(c, n + 1, sizeof *g->in_off);
    g->in = take_view(c, (size_t)k[5], sizeof *g->in);
    if (c->bad || !offsets_ok(g->out_off, n, k[4]) || g->out_off[n] != k[4] || !below(g->out, (size_t)k[4], n) ||
        !offsets_ok(g->in_off, n, k[5]) || g->in_off[n] != k[5] || !below(g->in, (size_t)k[5], n))
        return -1;
    g->defs = malloc((ns ? ns : 1) * sizeof *g->defs);
    if (!g->defs) return -1;
    prefault(g->defs, ns * sizeof *g->defs);
    const unsigned char *dv = c->bad ? NULL : take(c, ns * 8); /* a symbol and its file each */
    for (size_t i = 0; dv && i < ns; i++) {
        uint32_t v[2];
        memcpy(v, dv + 8 * i, sizeof v);
        if (v[0] >= ns || v[1] >= n || v[0] < g->sym_off[v[1]] || v[0] >= g->sym_off[v[1] + 1]) return -1;
        g->defs[i] = (gi_def){g->syms[v[0]].name, v[1]};
    }
    g->n_defs = ns;
    return read_cochange(g, c) != 0 || c->bad || c->left ? -1 : 0;
}

/* The file mapped rather than read, and its largest arrays (postings,
 * imports, the symbols' terms, the terms' table) and its strings (paths,
 * symbol names, terms) used where they are mapped: read() copied
 * it into a buffer, and the arrays were copied again, every page of both
 * a fresh page of the process to fault in and zero (a 9 MB snapshot is
 * 2,300 of them), where a mapping's pages are the page cache's own.  The
 * index keeps the mapping (g->snap_map; graph_index_free unmaps it), once
 * the header and the checksum hold.  Mapped copy-on-write: nothing writes
 * a loaded index's arrays, and a write would only copy its page.  The file
 * is replaced by a rename, never rewritten in place (it is saved
 * read-only), so the mapped one does not change under the index.
 * load_at: gi_snapshot_load of the snapshot at path. */
static int load_at(graph_index *g, const char *path, uint64_t stamp)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(snap_hdr) && (uint64_t)st.st_size < ((uint64_t)1 << 34))
        map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return -1;
    size_t size = (size_t)st.st_size;
    snap_hdr h;
    memcpy(&h, map, sizeof h);
    const unsigned char *data = (const unsigned char *)map + sizeof h;
    int ok = memcmp(h.magic, SNAP_MAGIC, sizeof h.magic) == 0 && h.endian == SNAP_ENDIAN &&
             h.posting_size == sizeof(gi_posting) && h.stamp == stamp && h.bytes == size - sizeof h;
    int whole = ok && !sealed(path, &st, &h);
    if (!ok || (whole && gi_snapshot_sum(data, (size_t)h.bytes) != h.sum)) {
        munmap(map, size);
        return -1;
    }
    g->snap_map = map;
    g->snap_len = size;
    g->snap_sealed = !whole;
    cursor c = {data, (size_t)h.bytes, 0};
    if (read_payload(g, &c, whole) != 0) return -1;
    if (whole) seal(path, &st, &h);
    return 0;
}

int gi_snapshot_load(graph_index *g, uint64_t stamp)
{
    if (g->snap_map) return -1; /* (loaded once) */
    char *path = snap_path(g);
    int rc = path ? load_at(g, path, stamp) : -1;
    free(path);
    return rc;
}

int graph_index_open(const char *repo, const char *db_path, graph_index **out, char **err)
{
    *out = NULL;
    graph_index *g = gi_new(repo, db_path, err);
    if (!g) return -1;
    uint64_t stamp = gi_build_stamp(g->db);
    if (stamp && gi_snapshot_load(g, stamp) == 0 && gi_finish(g) == 0) {
        *out = g;
        return 0;
    }
    graph_index_free(g);
    if (graph_index_load(repo, db_path, out, err) != 0) return -1;
    /* saved when no build ran during the load (the stamp held) */
    if (stamp && gi_build_stamp((*out)->db) == stamp) gi_snapshot_save(*out, stamp);
    return 0;
}
