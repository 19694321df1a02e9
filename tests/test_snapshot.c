/* test_snapshot.c: the loaded index saved next to the graph cache
 * (graph/snapshot.c): a build saves it, graph_index_open loads it into the
 * index graph_index_load builds from the cache, and a snapshot that is
 * damaged, of another build, or made while no build had completed is
 * never used; a build that cannot unstamp the cache does not change it. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../graph/graph.h"
#include "../graph/index.h"
#include "../graph/internal.h"
#include "../util/fs.h"
#include "gitrepo.h"
#include "graphdb.h"
#include "runproc.h"

static char *repo;

static void setup(void)
{
    repo = gitrepo_new("clarity-snapshot-test");
    cr_assert_not_null(repo);
    cr_assert_eq(gitrepo_write(repo, "pkg/__init__.py", ""), 0);
    cr_assert_eq(gitrepo_write(repo, "pkg/models.py", "class Request:\n    def send(self):\n        pass\n"), 0);
    cr_assert_eq(gitrepo_write(repo, "pkg/api.py",
                               "from .models import Request\n\ndef get(url):\n    return Request().send()\n"),
                 0);
    cr_assert_eq(gitrepo_write(repo, "tests/test_api.py", "from pkg.api import get\n\ndef test_get():\n    get('x')\n"),
                 0);
    cr_assert_eq(gitrepo_commit(repo, 1600000000, "init"), 0);
    cr_assert_eq(gitrepo_write(repo, "pkg/api.py",
                               "from .models import Request\n\ndef get(url, timeout=3):\n    return Request().send()\n"),
                 0);
    cr_assert_eq(gitrepo_write(repo, "pkg/models.py", "class Request:\n    def send(self, timeout):\n        pass\n"), 0);
    cr_assert_eq(gitrepo_commit(repo, 1600000100, "timeouts"), 0);
}

static void teardown(void)
{
    if (repo) runproc_rmtree(repo);
    free(repo);
    repo = NULL;
}

TestSuite(snapshot, .init = setup, .fini = teardown);

/* A build of dir (cache_only: graph_build_cache, which loads and saves no
 * index); its return code, *err its message. */
static int build_of(const char *dir, int cache_only, char **err)
{
    graph_build_opts o = {GRAPH_PARSER_AUTO, 0, 0, NULL, 0};
    graph_build_stats st;
    *err = NULL;
    return cache_only ? graph_build_cache(dir, &o, &st, err) : graph_build(dir, &o, &st, err);
}

static void build(void)
{
    char *err;
    cr_assert_eq(build_of(repo, 0, &err), 0, "%s", err ? err : "");
}

static char *snap_path(void)
{
    char *p = runproc_join(repo, ".clarity/graph.db-index");
    cr_assert_not_null(p);
    return p;
}

static graph_index *open_index(void)
{
    graph_index *g = NULL;
    char *err = NULL;
    cr_assert_eq(graph_index_open(repo, NULL, &g, &err), 0, "%s", err ? err : "");
    return g;
}

static graph_index *load_index(void)
{
    graph_index *g = NULL;
    char *err = NULL;
    cr_assert_eq(graph_index_load(repo, NULL, &g, &err), 0, "%s", err ? err : "");
    return g;
}

#define SAME_ARRAY(a, b, n) cr_assert_eq(memcmp((a), (b), (n) * sizeof *(a)), 0, "%s differs", #a)

/* Every array the queries read, compared. */
static void assert_same(graph_index *a, graph_index *b)
{
    size_t n = a->n;
    cr_assert_eq(n, b->n);
    cr_assert_gt(n, 0);
    for (size_t i = 0; i < n; i++) cr_assert_str_eq(a->paths[i], b->paths[i]);
    SAME_ARRAY(a->is_test, b->is_test, n);
    SAME_ARRAY(a->lang, b->lang, n);
    SAME_ARRAY(a->aux, b->aux, n);
    SAME_ARRAY(a->sym_off, b->sym_off, n + 1);
    for (int f = 0; f < GI_FIELDS; f++) SAME_ARRAY(a->flen[f], b->flen[f], n);
    SAME_ARRAY(a->avglen, b->avglen, (size_t)GI_FIELDS);
    SAME_ARRAY(a->co_total, b->co_total, n);
    SAME_ARRAY(a->central, b->central, n);
    SAME_ARRAY(a->churn, b->churn, n);
    cr_assert_eq(a->churn_mx, b->churn_mx);
    cr_assert_eq(a->size_mx, b->size_mx);
    cr_assert_eq(a->n_syms, b->n_syms);
    cr_assert_gt(a->n_syms, 0);
    for (size_t k = 0; k < a->n_syms; k++) {
        cr_assert_str_eq(a->syms[k].name, b->syms[k].name);
        cr_assert_eq(a->syms[k].kind, b->syms[k].kind);
        cr_assert_eq(a->syms[k].exported, b->syms[k].exported);
        cr_assert_eq(a->syms[k].line, b->syms[k].line);
        cr_assert_eq(a->syms[k].end_line, b->syms[k].end_line);
    }
    SAME_ARRAY(a->sym_term, b->sym_term, a->n_syms);
    cr_assert_eq(a->n_terms, b->n_terms);
    const char **ta = calloc(a->n_terms, sizeof *ta), **tb = calloc(b->n_terms, sizeof *tb);
    cr_assert(ta && tb);
    cr_assert_eq(gi_terms_by_id(a, ta), 0);
    cr_assert_eq(gi_terms_by_id(b, tb), 0);
    for (size_t t = 0; t < a->n_terms; t++) cr_assert_str_eq(ta[t], tb[t]);
    free(ta);
    free(tb);
    SAME_ARRAY(a->post_off, b->post_off, a->n_terms + 1);
    for (uint32_t k = 0; k < a->post_off[a->n_terms]; k++) {
        cr_assert_eq(a->post[k].doc, b->post[k].doc);
        SAME_ARRAY(a->post[k].tf, b->post[k].tf, (size_t)GI_FIELDS);
    }
    SAME_ARRAY(a->out_off, b->out_off, n + 1);
    SAME_ARRAY(a->out, b->out, a->out_off[n]);
    SAME_ARRAY(a->in_off, b->in_off, n + 1);
    SAME_ARRAY(a->in, b->in, a->in_off[n]);
    cr_assert_eq(a->n_defs, b->n_defs);
    for (size_t k = 0; k < a->n_defs; k++) {
        cr_assert_str_eq(a->defs[k].name, b->defs[k].name);
        cr_assert_eq(a->defs[k].file, b->defs[k].file);
    }
    /* co-change partners: a snapshot's saved, a cache's read on first use */
    for (uint32_t d = 0; d < a->n; d++) {
        const gi_partners *pa = gi_cochange(a, d), *pb = gi_cochange(b, d);
        cr_assert_eq(pa->n, pb->n, "file %u: %u partners against %u", d, pa->n, pb->n);
        if (!pa->n) continue; /* (a file without partners may have no arrays) */
        SAME_ARRAY(pa->ids, pb->ids, (size_t)pa->n);
        SAME_ARRAY(pa->w, pb->w, (size_t)pa->n);
    }
}

/* How many co-change partners the files have in all (the comparison above
 * is not vacuous). */
static size_t partners(graph_index *g)
{
    size_t k = 0;
    for (uint32_t d = 0; d < g->n; d++) k += gi_cochange(g, d)->n;
    return k;
}

/* The same files, scores and key symbols for a prompt. */
static void assert_same_predictions(graph_index *a, graph_index *b, const char *prompt)
{
    graph_weights w;
    graph_weights_default(&w);
    graph_hit ha[10], hb[10];
    size_t na = graph_predict(a, &w, prompt, strlen(prompt), ha, 10);
    size_t nb = graph_predict(b, &w, prompt, strlen(prompt), hb, 10);
    cr_assert_eq(na, nb);
    cr_assert_gt(na, 0, "no prediction for %s", prompt);
    for (size_t i = 0; i < na; i++) {
        cr_assert_eq(ha[i].file, hb[i].file);
        cr_assert_eq(ha[i].score, hb[i].score);
        const gsym *sa[3], *sb[3];
        size_t ka = graph_file_symbols(a, ha[i].file, sa, 3), kb = graph_file_symbols(b, hb[i].file, sb, 3);
        cr_assert_eq(ka, kb);
        for (size_t j = 0; j < ka; j++) cr_assert_str_eq(sa[j]->name, sb[j]->name);
    }
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* The snapshot is saved read-only (a load maps it): the tests that damage
 * it in place make it writable first. */
static void writable(const char *path) { cr_assert_eq(chmod(path, 0644), 0); }

/* Rewrites the snapshot with bytes [at, at + n) of its payload replaced
 * by v and the checksum made right again: a file whose checksum holds but
 * whose contents do not. */
static void patch_payload(const char *path, size_t at, const void *v, size_t n)
{
    size_t len;
    char *data = util_read_file(path, 1 << 26, &len);
    cr_assert_not_null(data);
    cr_assert_gt(len, GI_SNAPSHOT_HEADER + at + n);
    memcpy(data + GI_SNAPSHOT_HEADER + at, v, n);
    uint64_t sum = gi_snapshot_sum(data + GI_SNAPSHOT_HEADER, len - GI_SNAPSHOT_HEADER);
    memcpy(data + GI_SNAPSHOT_HEADER - sizeof sum, &sum, sizeof sum);
    writable(path);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
    free(data);
}

Test(snapshot, a_build_saves_one_that_loads_as_the_cache_does)
{
    build();
    char *snap = snap_path();
    cr_assert_gt(file_size(snap), GI_SNAPSHOT_HEADER, "the build saved no snapshot");
    struct stat st;
    cr_assert_eq(stat(snap, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0444, "the snapshot, which a load maps, is writable (%o)", st.st_mode & 0777);
    graph_index *fast = open_index(), *slow = load_index();
    /* the largest arrays used where the file is mapped, not copied */
    cr_assert_not_null(fast->snap_map, "the snapshot was not mapped");
    cr_assert_gt(partners(slow), 0, "the test repository has no co-change");
    cr_assert(fast->n == 0 || fast->co[0].loaded, "the co-change partners were not in the snapshot");
    cr_assert(fast->n_terms == 0 || ((const char *)fast->post >= (const char *)fast->snap_map &&
                                     (const char *)fast->post < (const char *)fast->snap_map + fast->snap_len),
              "the postings were copied out of the mapping");
    assert_same(fast, slow);
    assert_same_predictions(fast, slow, "the request send timeout in pkg/api.py");
    assert_same_predictions(fast, slow, "get fails with a Request");
    graph_index_free(slow);
    graph_index_free(fast);
    /* it is what opens: with the symbols table gone the cache cannot load,
     * yet the index opens, and ranks as before */
    graphdb_exec(repo, "DROP TABLE symbols");
    char *err = NULL;
    graph_index *none = NULL;
    cr_assert_neq(graph_index_load(repo, NULL, &none, &err), 0, "the cache still loads");
    free(err);
    graph_index *g = open_index();
    cr_assert_geq(graph_index_find(g, "pkg/models.py"), 0);
    graph_index_free(g);
    free(snap);
}

Test(snapshot, a_damaged_one_is_not_used_and_is_saved_again)
{
    build();
    char *snap = snap_path();
    long full = file_size(snap);
    graph_index *slow = load_index();
    /* cut short */
    writable(snap);
    cr_assert_eq(truncate(snap, full / 2), 0);
    graph_index *g = open_index();
    assert_same(g, slow);
    graph_index_free(g);
    cr_assert_eq(file_size(snap), full, "not saved again");
    /* a byte past the payload, then no byte at all (the file is mapped:
     * its size is read, not found by reading to the end) */
    writable(snap);
    FILE *f = fopen(snap, "ab");
    cr_assert_not_null(f);
    fputc('x', f);
    fclose(f);
    g = open_index();
    assert_same(g, slow);
    graph_index_free(g);
    cr_assert_eq(file_size(snap), full, "not saved again after a trailing byte");
    writable(snap);
    cr_assert_eq(truncate(snap, 0), 0);
    g = open_index();
    assert_same(g, slow);
    graph_index_free(g);
    cr_assert_eq(file_size(snap), full, "not saved again after it was emptied");
    /* a byte changed: the checksum fails */
    writable(snap);
    f = fopen(snap, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, full / 3, SEEK_SET), 0);
    int c = fgetc(f);
    cr_assert_eq(fseek(f, full / 3, SEEK_SET), 0);
    fputc(c ^ 0x5a, f);
    fclose(f);
    g = open_index();
    assert_same(g, slow);
    graph_index_free(g);
    /* checksums that hold over counts that do not: more files than paths,
     * and more than any repository has */
    uint64_t n = slow->n + 1;
    patch_payload(snap, 0, &n, sizeof n);
    g = open_index();
    assert_same(g, slow);
    graph_index_free(g);
    n = (uint64_t)1 << 40;
    patch_payload(snap, 0, &n, sizeof n);
    g = open_index();
    assert_same(g, slow);
    graph_index_free(g);
    /* the postings' total past what the file holds */
    uint64_t np = (uint64_t)1 << 31;
    patch_payload(snap, 3 * sizeof np, &np, sizeof np);
    g = open_index();
    assert_same(g, slow);
    graph_index_free(g);
    graph_index_free(slow);
    free(snap);
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

/* A snapshot that passed every check is sealed, once its ctime is old
 * enough that a later write must move it; a load that finds it unchanged
 * since skips the checks that read it whole, and any change (a chmod, a
 * byte written in place, another file renamed over it) has it checked
 * whole again. */
Test(snapshot, a_checked_one_is_sealed_and_checked_whole_again_once_changed)
{
    build();
    char *snap = snap_path(), *sealp = util_format("%s.seal", snap);
    graph_index *slow = load_index();
    /* just saved: checked whole, and not sealed yet */
    graph_index *g = open_index();
    cr_assert_not_null(g->snap_map);
    cr_assert_eq(g->snap_sealed, 0);
    graph_index_free(g);
    cr_assert(!exists(sealp), "a file younger than the ctime margin was sealed");
    g = open_index();
    cr_assert_eq(g->snap_sealed, 0, "a fresh file's checks were skipped");
    graph_index_free(g);

    gi_seal_min_age_ms = 0;
    usleep(50000); /* past a clock tick of the file's save: a change below moves its ctime */
    g = open_index();
    cr_assert_eq(g->snap_sealed, 0);
    graph_index_free(g);
    cr_assert(exists(sealp), "a file that passed every check was not sealed");
    g = open_index();
    cr_assert_eq(g->snap_sealed, 1, "the sealed file was checked whole again");
    assert_same(g, slow);
    assert_same_predictions(g, slow, "the request send timeout in pkg/api.py");
    graph_index_free(g);

    /* a chmod: checked whole, sealed again */
    writable(snap);
    g = open_index();
    cr_assert_eq(g->snap_sealed, 0, "a file changed since its seal was trusted");
    graph_index_free(g);
    g = open_index();
    cr_assert_eq(g->snap_sealed, 1);
    graph_index_free(g);

    /* a posting's file out of range, the checksum made right again: the
     * whole check (which a seal would skip) refuses it */
    usleep(50000);
    size_t len;
    char *data = util_read_file(snap, 1 << 26, &len);
    cr_assert_not_null(data);
    uint64_t k[7];
    memcpy(k, data + GI_SNAPSHOT_HEADER, sizeof k);
    cr_assert_gt(k[3], 0, "no postings to damage");
    free(data);
    graph_index *fast = open_index(); /* sealed: where its postings lie */
    cr_assert_eq(fast->snap_sealed, 1);
    size_t post_at = (size_t)((const char *)fast->post - (const char *)fast->snap_map) - GI_SNAPSHOT_HEADER;
    graph_index_free(fast);
    uint32_t bad = (uint32_t)slow->n + 7;
    patch_payload(snap, post_at, &bad, sizeof bad);
    g = open_index();
    cr_assert_eq(g->snap_map, NULL, "a posting out of range was used (the seal was trusted)");
    assert_same(g, slow);
    graph_index_free(g);

    /* another file renamed over a sealed one: checked whole */
    g = open_index(); /* saved again just now: old enough at margin 0 */
    graph_index_free(g);
    g = open_index();
    cr_assert_eq(g->snap_sealed, 1);
    graph_index_free(g);
    char *copy = util_format("%s.copy", snap);
    size_t n;
    char *bytes = util_read_file(snap, 1 << 26, &n);
    cr_assert_not_null(bytes);
    cr_assert_eq(util_write_file_atomic(copy, bytes, n, 0444, 0), 0);
    free(bytes);
    cr_assert_eq(rename(copy, snap), 0);
    g = open_index();
    cr_assert_eq(g->snap_sealed, 0, "the seal of a file was taken for another");
    assert_same(g, slow);
    graph_index_free(g);

    graph_index_free(slow);
    free(copy), free(sealp), free(snap);
}

Test(snapshot, one_of_another_build_is_not_used)
{
    build();
    char *snap = snap_path();
    size_t len;
    char *old = util_read_file(snap, 1 << 26, &len);
    cr_assert_not_null(old);
    cr_assert_eq(gitrepo_write(repo, "pkg/retry.py", "def backoff(n):\n    return 2 ** n\n"), 0);
    cr_assert_eq(gitrepo_commit(repo, 1600000200, "retry"), 0);
    build();
    /* the first build's snapshot back in place */
    writable(snap);
    FILE *f = fopen(snap, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(old, 1, len, f), len);
    fclose(f);
    graph_index *g = open_index(), *slow = load_index();
    cr_assert_geq(graph_index_find(g, "pkg/retry.py"), 0, "the old build's snapshot was used");
    assert_same(g, slow);
    graph_index_free(g);
    graph_index_free(slow);
    free(old);
    free(snap);
}

/* A build removes build_id when it starts and sets a new one when it
 * completes: meanwhile (or after one that failed) nothing is saved or
 * used. */
Test(snapshot, none_is_saved_or_used_while_no_build_has_completed)
{
    build();
    char *snap = snap_path();
    graphdb_exec(repo, "DELETE FROM meta WHERE key = 'build_id'");
    /* the snapshot that is there is not used */
    cr_assert_eq(gitrepo_write(repo, "pkg/extra.py", "def extra():\n    pass\n"), 0);
    cr_assert_eq(gitrepo_commit(repo, 1600000300, "extra"), 0);
    char *err;
    cr_assert_eq(build_of(repo, 1, &err), 0, "%s", err ? err : ""); /* no build_id set */
    graph_index *g = open_index();
    cr_assert_geq(graph_index_find(g, "pkg/extra.py"), 0, "a snapshot was used without a build_id");
    graph_index_free(g);
    /* and none is saved */
    cr_assert_eq(unlink(snap), 0);
    g = open_index();
    graph_index_free(g);
    cr_assert_lt(file_size(snap), 0, "a snapshot was saved without a build_id");
    /* the next completed build stamps and saves again */
    build();
    cr_assert_gt(file_size(snap), GI_SNAPSHOT_HEADER);
    free(snap);
}

/* A build that cannot remove the stamp (another connection holds the
 * cache locked past the busy timeout) changes nothing and says why: its
 * changes would otherwise be read from the old build's snapshot. */
Test(snapshot, a_cache_that_cannot_be_unstamped_is_not_rebuilt, .timeout = 60)
{
    build();
    char *db = runproc_join(repo, ".clarity/graph.db");
    char *before = graphdb_meta(repo, "build_id");
    cr_assert_not_null(before);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    cr_assert_eq(gitrepo_write(repo, "pkg/late.py", "def late():\n    pass\n"), 0);
    cr_assert_eq(gitrepo_commit(repo, 1600000400, "late"), 0);
    char *err;
    cr_assert_neq(build_of(repo, 0, &err), 0, "the build ran on a locked cache");
    cr_assert_not_null(err);
    cr_assert_not_null(strstr(err, "build stamp"), "%s", err);
    free(err);
    cr_assert_eq(sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    char *after = graphdb_meta(repo, "build_id");
    cr_assert_str_eq(before, after);
    cr_assert_eq(graphdb_int(repo, "SELECT COUNT(*) FROM files WHERE path = 'pkg/late.py'"), 0);
    free(before);
    free(after);
    free(db);
}

/* A repository with nothing to index (no source file) has a snapshot too,
 * and it is what opens. */
Test(snapshot, one_of_an_empty_index_is_used)
{
    char *empty = gitrepo_new("clarity-snapshot-empty");
    cr_assert_not_null(empty);
    cr_assert_eq(gitrepo_write(empty, "README.txt", "nothing to parse\n"), 0);
    cr_assert_eq(gitrepo_commit(empty, 1600000000, "init"), 0);
    char *err;
    cr_assert_eq(build_of(empty, 0, &err), 0, "%s", err ? err : "");
    graphdb_exec(empty, "DROP TABLE files");
    graph_index *g = NULL;
    cr_assert_eq(graph_index_open(empty, NULL, &g, &err), 0, "the snapshot was not used: %s", err ? err : "");
    cr_assert_eq(g->n, 0);
    cr_assert_eq(gi_term_id(g, "anything", 8), -1);
    graph_index_free(g);
    runproc_rmtree(empty);
    free(empty);
}
