/* test_graph.c: the code graph (graph/): tokenizer, parsers per language
 * (tree-sitter and the PCRE2 fallback), BM25F against hand-computed
 * values, co-change on a synthetic git repository, incremental refresh,
 * and the predict/graphBuild RPC methods. */
#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/graph.h"
#include "../util/buf.h"
#include "../graph/index.h"
#include "../graph/internal.h"
#include "../include/clarity.h"
#include "gitrepo.h"
#include "graphdb.h"
#include "runproc.h"

/* ---- helpers ----------------------------------------------------------- */

typedef struct toks {
    char s[64][40];
    int n;
} toks;

static int collect(void *ud, const char *t, size_t n)
{
    toks *k = ud;
    if (k->n < 64) snprintf(k->s[k->n++], 40, "%.*s", (int)n, t);
    return 0;
}

static int has_tok(const toks *k, const char *t)
{
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->s[i], t) == 0) return 1;
    return 0;
}

static gfile parse(const char *path, const char *src, int parser)
{
    gfile f;
    memset(&f, 0, sizeof f);
    f.path = (char *)path;
    f.lang = graph_lang_of_path(path);
    graph_parser_ctx *p = graph_parser_new(parser);
    cr_assert_not_null(p);
    cr_assert_eq(graph_parse_file(p, &f, src, strlen(src)), 0);
    graph_parser_free(p);
    return f;
}

static const gsym *sym(const gfile *f, const char *name)
{
    for (size_t i = 0; i < f->n_syms; i++)
        if (strcmp(f->syms[i].name, name) == 0) return &f->syms[i];
    return NULL;
}

static int has_import(const gfile *f, const char *spec)
{
    for (size_t i = 0; i < f->n_imports; i++)
        if (strcmp(f->imports[i].spec, spec) == 0) return 1;
    return 0;
}

static int has_call(const gfile *f, const char *name)
{
    for (size_t i = 0; i < f->n_calls; i++)
        if (strcmp(f->calls[i].name, name) == 0) return 1;
    return 0;
}

static char *tmpdir;

#define sh(...) cr_assert_eq(gitrepo_sh(tmpdir, __VA_ARGS__), 0, "failed: " __VA_ARGS__)

static void write_file(const char *rel, const char *text)
{
    cr_assert_eq(gitrepo_write(tmpdir, rel, text), 0, "write %s", rel);
}

/* A commit at a fixed date (seconds since the epoch). */
static void commit(long when, const char *msg)
{
    cr_assert_eq(gitrepo_commit(tmpdir, when, msg), 0, "commit %s", msg);
}

/* tmpdir's graph built with the default options (its stats in *st when
 * given), and its index loaded. */
static graph_index *build_and_load(graph_build_stats *st)
{
    graph_build_opts o = {GRAPH_PARSER_AUTO, 0, 0, NULL, 0};
    graph_build_stats own;
    char *err = NULL;
    cr_assert_eq(graph_build(tmpdir, &o, st ? st : &own, &err), 0, "%s", err ? err : "");
    graph_index *g;
    cr_assert_eq(graph_index_load(tmpdir, NULL, &g, &err), 0, "%s", err ? err : "");
    return g;
}

static void setup_repo(void)
{
    tmpdir = gitrepo_new("clarity-graph-test");
    cr_assert_not_null(tmpdir);
}

static void teardown_repo(void)
{
    if (tmpdir) runproc_rmtree(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

/* ---- tokenizer ------------------------------------------------------- */

Test(graph_tokenize, splits_identifiers_and_keeps_compounds)
{
    toks k = {0};
    const char *s = "getUserName parse_http_header HTTPServer the authentication db2sql";
    graph_tokenize(s, strlen(s), 0, collect, &k);
    cr_assert(has_tok(&k, "user") && has_tok(&k, "name") && has_tok(&k, "getusername"));
    cr_assert(!has_tok(&k, "get"), "stopword kept");
    cr_assert(has_tok(&k, "parse") && has_tok(&k, "header") && has_tok(&k, "parsehttpheader"));
    cr_assert(has_tok(&k, "server") && has_tok(&k, "httpserver"));
    cr_assert(!has_tok(&k, "the"));
    cr_assert(has_tok(&k, "auth"), "synonym authentication -> auth");
    cr_assert(has_tok(&k, "sql"));
}

Test(graph_tokenize, plurals_and_synonyms_meet)
{
    toks a = {0}, b = {0};
    graph_tokenize("databases", 9, 0, collect, &a);
    graph_tokenize("db", 2, 0, collect, &b);
    cr_assert_eq(a.n, 1);
    cr_assert_str_eq(a.s[0], b.s[0]);
    toks c = {0};
    graph_tokenize("queries matrices", 16, 0, collect, &c);
    cr_assert(has_tok(&c, "query") && has_tok(&c, "matrix"));
}

/* ---- parsers ------------------------------------------------------------ */

static const char py_src[] = "import os\n"
                             "from .models import Request, Response as R\n"
                             "from ..util import helpers\n"
                             "\n"
                             "LIMIT = 10\n"
                             "\n"
                             "class Session(Base):\n"
                             "    def send(self, req):\n"
                             "        return adapter.send(req)\n"
                             "\n"
                             "    def _private(self):\n"
                             "        pass\n"
                             "\n"
                             "@decorator\n"
                             "def request(method, url):\n"
                             "    s = Session()\n"
                             "    return s.send(method)\n"
                             "\n"
                             "def _helper():\n"
                             "    pass\n";

static void check_python(const gfile *f, int full)
{
    const gsym *s = sym(f, "Session");
    cr_assert_not_null(s);
    cr_assert_eq(s->kind, SYM_CLASS);
    cr_assert_eq(s->line, 7);
    cr_assert_eq(s->end_line, 12);
    cr_assert(s->exported);
    const gsym *r = sym(f, "request");
    cr_assert_not_null(r);
    cr_assert_eq(r->kind, SYM_FUNCTION);
    cr_assert(r->line == 14 || r->line == 15, "line %u", r->line);
    cr_assert_eq(r->end_line, 17);
    cr_assert_not_null(sym(f, "send"));
    cr_assert_eq(sym(f, "send")->kind, SYM_METHOD);
    cr_assert_not(sym(f, "_helper")->exported);
    cr_assert_not_null(sym(f, "LIMIT"));
    cr_assert(has_import(f, "os"));
    cr_assert(has_import(f, ".models.Request"));
    cr_assert(has_import(f, ".models.Response"));
    cr_assert(has_import(f, "..util.helpers"));
    if (full) {
        cr_assert(has_call(f, "Session"));
        cr_assert(has_call(f, "send"));
    }
}

Test(graph_parse, python_tree_sitter)
{
    cr_assert(graph_has_grammar(LANG_PYTHON), "the python grammar was not built in");
    gfile f = parse("pkg/sessions.py", py_src, GRAPH_PARSER_AUTO);
    cr_assert_eq(f.parsed_with, 1);
    check_python(&f, 1);
    graph_file_clear(&f);
}

Test(graph_parse, python_regex_fallback)
{
    gfile f = parse("pkg/sessions.py", py_src, GRAPH_PARSER_REGEX);
    cr_assert_eq(f.parsed_with, 2);
    check_python(&f, 0);
    graph_file_clear(&f);
}

static const char ts_src[] = "import { Hono } from './hono'\n"
                             "import type { Env } from \"./types.js\"\n"
                             "export { cors } from './middleware/cors'\n"
                             "const fs = require('fs')\n"
                             "\n"
                             "export class Router<T> {\n"
                             "  add(method: string, path: string) { return this.match(path) }\n"
                             "}\n"
                             "export function createApp(): Hono {\n"
                             "  return new Hono()\n"
                             "}\n"
                             "export interface Options { strict: boolean }\n"
                             "export type Handler = () => void\n"
                             "const internal = 1\n";

static void check_ts(const gfile *f)
{
    cr_assert_not_null(sym(f, "Router"));
    cr_assert_eq(sym(f, "Router")->kind, SYM_CLASS);
    cr_assert(sym(f, "Router")->exported);
    cr_assert_eq(sym(f, "Router")->line, 6);
    cr_assert_not_null(sym(f, "createApp"));
    cr_assert(sym(f, "createApp")->exported);
    cr_assert_not_null(sym(f, "Options"));
    cr_assert_not_null(sym(f, "Handler"));
    cr_assert_not_null(sym(f, "internal"));
    cr_assert_not(sym(f, "internal")->exported);
    cr_assert(has_import(f, "./hono"));
    cr_assert(has_import(f, "./types.js"));
    cr_assert(has_import(f, "./middleware/cors"));
    cr_assert(has_import(f, "fs"));
}

Test(graph_parse, typescript_both_parsers)
{
    gfile f = parse("src/app.ts", ts_src, GRAPH_PARSER_AUTO);
    cr_assert_eq(f.parsed_with, 1);
    check_ts(&f);
    cr_assert(has_call(&f, "match"));
    cr_assert_not_null(sym(&f, "add"));
    graph_file_clear(&f);
    f = parse("src/app.ts", ts_src, GRAPH_PARSER_REGEX);
    check_ts(&f);
    graph_file_clear(&f);
    f = parse("src/app.js", "export function a() { b() }\nclass C {}\n", GRAPH_PARSER_AUTO);
    cr_assert_eq(f.parsed_with, 1);
    cr_assert(sym(&f, "a")->exported);
    cr_assert_not(sym(&f, "C")->exported);
    cr_assert(has_call(&f, "b"));
    graph_file_clear(&f);
}

Test(graph_parse, go_rust_java_c)
{
    static const char go[] = "package srv\n\nimport (\n\t\"fmt\"\n\tlog \"example.com/x/log\"\n)\n\n"
                             "type Server struct{}\n\nfunc (s *Server) Start() error {\n"
                             "\treturn fmt.Errorf(\"x\")\n}\n\nfunc helper() {}\n";
    static const char rs[] = "use crate::config::Config;\nmod routes;\n\npub struct App { x: u32 }\n"
                             "pub fn run(c: Config) { serve(c) }\nfn private() {}\n";
    static const char java[] = "package com.acme;\n\nimport com.acme.util.Strings;\n\n"
                               "public class Service {\n    public void start() { Strings.trim(\"\"); }\n}\n";
    static const char c[] = "#include \"util/buf.h\"\n#include <stdio.h>\n#define MAX 4\n"
                            "struct node { int v; };\nstatic int helper(void) { return 0; }\n"
                            "int api_call(int x) { return helper(); }\n";
    for (int parser = 0; parser < 2; parser++) {
        gfile f = parse("srv/server.go", go, parser);
        cr_assert_not_null(sym(&f, "Server"));
        cr_assert_not_null(sym(&f, "Start"));
        cr_assert(sym(&f, "Start")->exported);
        cr_assert_not(sym(&f, "helper")->exported);
        cr_assert(has_import(&f, "fmt") && has_import(&f, "example.com/x/log"));
        graph_file_clear(&f);

        f = parse("src/app.rs", rs, parser);
        cr_assert_not_null(sym(&f, "App"));
        cr_assert(sym(&f, "run")->exported);
        cr_assert_not(sym(&f, "private")->exported);
        cr_assert(has_import(&f, "crate::config::Config"));
        cr_assert(has_import(&f, "mod routes"));
        graph_file_clear(&f);

        f = parse("src/com/acme/Service.java", java, parser);
        cr_assert_not_null(sym(&f, "Service"));
        cr_assert(sym(&f, "Service")->exported);
        cr_assert_not_null(sym(&f, "start"));
        cr_assert(has_import(&f, "com.acme.util.Strings"));
        graph_file_clear(&f);

        f = parse("src/api.c", c, parser);
        cr_assert_not_null(sym(&f, "api_call"));
        cr_assert(sym(&f, "api_call")->exported);
        cr_assert_not_null(sym(&f, "helper"));
        cr_assert_not(sym(&f, "helper")->exported);
        cr_assert_not_null(sym(&f, "MAX"));
        cr_assert_not_null(sym(&f, "node"));
        cr_assert(has_import(&f, "util/buf.h"));
        cr_assert_not(has_import(&f, "stdio.h"));
        graph_file_clear(&f);
    }
}

Test(graph_parse, test_files)
{
    cr_assert(graph_is_test_path("tests/test_api.py"));
    cr_assert(graph_is_test_path("src/foo_test.go"));
    cr_assert(graph_is_test_path("src/router.test.ts"));
    cr_assert(graph_is_test_path("pkg/tests/helpers.py"));
    cr_assert_not(graph_is_test_path("src/contest.py"));
    cr_assert_not(graph_is_test_path("src/latest/x.py"));
}

/* ---- repository-level: build, BM25F, co-change, refresh ---------------- */

TestSuite(graph_repo, .init = setup_repo, .fini = teardown_repo, .timeout = 120);

Test(graph_repo, bm25f_matches_hand_computed_values)
{
    write_file("src/auth/session.py", "def login_user():\n    pass\n");
    write_file("lib/db.py", "import os\n\ndef connect():\n    pass\n");
    commit(1600000000, "init");
    graph_build_stats st;
    graph_index *g = build_and_load(&st);
    cr_assert_eq(st.files, 2);
    int s = graph_index_find(g, "src/auth/session.py"), d = graph_index_find(g, "lib/db.py");
    cr_assert(s >= 0 && d >= 0);
    graph_weights w;
    graph_weights_default(&w);
    w.use_calls = 0;
    w.field_w[4] = 0; /* path, symbol and import fields only (content below) */
    double lex[2];
    /* "login": symbol field of session.py only (tokens login, user,
     * loginuser: length 3; db.py: connect, length 1; average 2).
     * idf = ln(1 + (2 - 1 + 0.5) / (1 + 0.5)) = ln 2
     * tf~ = 1.0 * 1 / (1 - 0.4 + 0.4 * 3 / 2) = 1 / 1.2
     * score = ln 2 * tf~ / (1.2 + tf~) */
    graph_lexical(g, &w, "login", 5, lex);
    double tf = 1.0 / 1.2, want = log(2.0) * tf / (1.2 + tf);
    cr_assert_float_eq(lex[s], want, 1e-9, "login: %.9f vs %.9f", lex[s], want);
    cr_assert_float_eq(lex[d], 0.0, 1e-12);
    /* "auth session": path field (src auth session: 3; lib db: 2; avg 2.5),
     * weight 2.0, b 0.3: tf~ = 2 / (0.7 + 0.3 * 3 / 2.5) per term */
    graph_lexical(g, &w, "auth session", 12, lex);
    double tp = 2.0 / (0.7 + 0.3 * 3.0 / 2.5), wp = 2 * log(2.0) * tp / (1.2 + tp);
    cr_assert_float_eq(lex[s], wp, 1e-9, "auth session: %.9f vs %.9f", lex[s], wp);
    /* "os": the import field of db.py (length 1, avg 0.5), weight 0.5, b 0.5 */
    graph_lexical(g, &w, "os", 2, lex);
    double ti = 0.5 / (0.5 + 0.5 * 1 / 0.5), wi = log(2.0) * ti / (1.2 + ti);
    cr_assert_float_eq(lex[d], wi, 1e-9, "os: %.9f vs %.9f", lex[d], wi);
    graph_hit hits[2];
    size_t n = graph_predict(g, &w, "the login of a user", 18, hits, 2);
    cr_assert_geq(n, 1);
    cr_assert_eq(hits[0].file, (uint32_t)s);
    /* the content field alone (weight 1, b 0.75): session.py's words are
     * login user loginuser pass (4; "def" is a stopword), db.py's os
     * connect pass (3; "import" is one too); average 3.5.  With only the
     * content weighted, df counts the content field: "login" 1 file,
     * "pass" 2 files. */
    for (int f = 0; f < GRAPH_FIELDS; f++) w.field_w[f] = 0;
    w.field_w[4] = 1.0;
    w.field_b[4] = 0.75;
    graph_lexical(g, &w, "login", 5, lex);
    double tc = 1.0 / (0.25 + 0.75 * 4 / 3.5), wc = log(2.0) * tc / (1.2 + tc);
    cr_assert_float_eq(lex[s], wc, 1e-9, "content login: %.9f vs %.9f", lex[s], wc);
    cr_assert_float_eq(lex[d], 0.0, 1e-12);
    graph_lexical(g, &w, "pass", 4, lex);
    double idp = log(1.0 + 0.5 / 2.5);
    double ts_ = 1.0 / (0.25 + 0.75 * 4 / 3.5), td = 1.0 / (0.25 + 0.75 * 3 / 3.5);
    cr_assert_float_eq(lex[s], idp * ts_ / (1.2 + ts_), 1e-9);
    cr_assert_float_eq(lex[d], idp * td / (1.2 + td), 1e-9);
    /* "login connect": content and symbol fields together (symbol weight
     * 1, b 0.4; session.py's symbol field login user loginuser = 3, db.py's
     * connect = 1, average 2): tf~ sums over the fields before saturation */
    w.field_w[1] = 1.0;
    graph_lexical(g, &w, "login connect", 13, lex);
    double tsl = 1.0 / (0.6 + 0.4 * 3 / 2.0) + tc;
    double tdc = 1.0 / (0.6 + 0.4 * 1 / 2.0) + 1.0 / (0.25 + 0.75 * 3 / 3.5);
    cr_assert_float_eq(lex[s], log(2.0) * tsl / (1.2 + tsl), 1e-9);
    cr_assert_float_eq(lex[d], log(2.0) * tdc / (1.2 + tdc), 1e-9);
    graph_index_free(g);
}

/* The call field counts a callee once per file, however many sites call
 * it and however the rows of files interleave (a refresh appends a
 * changed file's rows after the others). */
Test(graph_repo, a_callee_counts_once_per_file)
{
    write_file("src/a.py", "def run():\n    fetch()\n    store()\n    fetch()\n    fetch()\n");
    write_file("src/b.py", "def go():\n    fetch()\n");
    commit(1600000000, "init");
    graph_build_opts o = {GRAPH_PARSER_AUTO, 0, 0, NULL, 0};
    graph_build_stats st;
    char *err = NULL;
    cr_assert_eq(graph_build(tmpdir, &o, &st, &err), 0, "%s", err ? err : "");
    write_file("src/a.py", "def run():\n    fetch()\n    fetch()\n    store()\n");
    commit(1600000100, "edit a");
    cr_assert_eq(graph_build(tmpdir, &o, &st, &err), 0, "%s", err ? err : "");
    cr_assert_eq(graphdb_int(tmpdir, "SELECT COUNT(*) FROM calls WHERE name = 'fetch'"), 3);
    graph_index *g;
    cr_assert_eq(graph_index_load(tmpdir, NULL, &g, &err), 0, "%s", err ? err : "");
    int32_t t = gi_term_id(g, "fetch", 5);
    cr_assert_geq(t, 0);
    int a = graph_index_find(g, "src/a.py"), b = graph_index_find(g, "src/b.py");
    int seen = 0;
    for (uint32_t k = g->post_off[t]; k < g->post_off[t + 1]; k++) {
        const gi_posting *p = &g->post[k];
        cr_assert(p->doc == (uint32_t)a || p->doc == (uint32_t)b);
        cr_assert_eq(p->tf[GI_CALL], 1, "doc %u: %u", p->doc, p->tf[GI_CALL]);
        seen |= p->doc == (uint32_t)a ? 1 : 2;
    }
    cr_assert_eq(seen, 3);
    /* postings in (term, doc) order: each term's docs ascending */
    for (size_t u = 0; u < g->n_terms; u++)
        for (uint32_t k = g->post_off[u] + 1; k < g->post_off[u + 1]; k++)
            cr_assert_lt(g->post[k - 1].doc, g->post[k].doc);
    graph_index_free(g);
}

static double score_of(const graph_hit *h, size_t n, int file)
{
    for (size_t i = 0; i < n; i++)
        if (h[i].file == (uint32_t)file) return h[i].score;
    return 0;
}

Test(graph_repo, package_mentions_and_doc_files_count_less)
{
    write_file("pkg/sub/__init__.py", "X = 1\n");
    write_file("pkg/sub/impl.py", "def run_impl():\n    pass\n");
    write_file("docs/impl.py", "def run_impl():\n    pass\n");
    commit(1600000000, "init");
    graph_index *g = build_and_load(NULL);
    int init = graph_index_find(g, "pkg/sub/__init__.py"), doc = graph_index_find(g, "docs/impl.py");
    cr_assert(init >= 0 && doc >= 0);
    graph_weights w;
    graph_weights_default(&w);
    graph_hit h[3];
    /* "pkg.sub" names the package: its __init__.py gets mention_package */
    static const char p1[] = "see pkg.sub";
    w.mention_package = 1.0;
    size_t n = graph_predict(g, &w, p1, sizeof p1 - 1, h, 3);
    double full = score_of(h, n, init);
    w.mention_package = 0.2;
    n = graph_predict(g, &w, p1, sizeof p1 - 1, h, 3);
    cr_assert_float_eq(full - score_of(h, n, init), 0.8 * w.mention, 1e-9);
    /* a file under docs/ keeps the aux share of its score */
    static const char p2[] = "run_impl";
    w.aux = 1.0;
    n = graph_predict(g, &w, p2, sizeof p2 - 1, h, 3);
    full = score_of(h, n, doc);
    cr_assert_gt(full, 0);
    w.aux = 0.3;
    n = graph_predict(g, &w, p2, sizeof p2 - 1, h, 3);
    cr_assert_float_eq(score_of(h, n, doc), 0.3 * full, 1e-9);
    graph_index_free(g);
}

Test(graph_repo, cochange_pairs_skip_big_commits_and_refresh_incrementally)
{
    write_file("a.py", "def a(): pass\n");
    write_file("b.py", "def b(): pass\n");
    write_file("c.py", "def c(): pass\n");
    commit(1600000000, "one");
    write_file("a.py", "def a(): return 1\n");
    write_file("b.py", "def b(): return 1\n");
    commit(1600001000, "two");
    write_file("a.py", "def a(): return 2\n");
    write_file("c.py", "def c(): return 2\n");
    commit(1600002000, "three");
    /* 31 files: says nothing about pairs */
    for (int i = 0; i < 30; i++) {
        char p[32];
        snprintf(p, sizeof p, "x%02d.py", i);
        write_file(p, "X = 1\n");
    }
    write_file("a.py", "def a(): return 3\n");
    commit(1600003000, "big");
    write_file("a.py", "def a(): return 4\n");
    write_file("b.py", "def b(): return 4\n");
    commit(1600004000, "style: reformat");

    graph_build_opts o = {GRAPH_PARSER_AUTO, 0, 0, NULL, 0};
    graph_build_stats st;
    char *err = NULL;
    cr_assert_eq(graph_build(tmpdir, &o, &st, &err), 0, "%s", err ? err : "");
    cr_assert(st.full);
    cr_assert_eq(st.files, 33);
    cr_assert_eq(st.commits_read, 4, "commits %zu", st.commits_read);
    char db[4200];
    snprintf(db, sizeof db, "%s/.clarity/graph.db", tmpdir);
    cr_assert_eq(graphdb_int(tmpdir, "SELECT n FROM cochange WHERE a = 'a.py' AND b = 'b.py'"), 3);
    cr_assert_eq(graphdb_int(tmpdir, "SELECT n FROM cochange WHERE a = 'a.py' AND b = 'c.py'"), 2);
    cr_assert_eq(graphdb_int(tmpdir, "SELECT COUNT(*) FROM cochange WHERE b LIKE 'x%'"), 0);
    cr_assert_eq(graphdb_int(tmpdir, "SELECT n FROM commit_files WHERE path = 'a.py'"), 4);
    /* the formatting commit counts a quarter: w(a,b) = w1 + w2 + w5 / 4 */
    double w1 = exp2((1600000000 - 1.6e9) / (180.0 * 86400)), w2 = exp2(1000 / (180.0 * 86400)),
           w5 = exp2(4000 / (180.0 * 86400)) * 0.25;
    sqlite3 *h;
    sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(h, "SELECT w FROM cochange WHERE a = 'a.py' AND b = 'b.py'", -1, &q, NULL);
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    cr_assert_float_eq(sqlite3_column_double(q, 0), w1 + w2 + w5, 1e-9);
    sqlite3_finalize(q);
    sqlite3_close(h);

    cr_assert_eq(graph_is_stale(tmpdir, NULL), 0);
    /* nothing changed: nothing parsed, no commit read */
    cr_assert_eq(graph_build(tmpdir, &o, &st, &err), 0);
    cr_assert_not(st.full);
    cr_assert_eq(st.parsed, 0);
    cr_assert_eq(st.commits_read, 0);
    /* one commit: one file re-parsed, one commit read */
    write_file("b.py", "def b(): return 5\ndef b2(): pass\n");
    write_file("a.py", "def a(): return 5\n");
    commit(1600005000, "five");
    cr_assert_eq(graph_is_stale(tmpdir, NULL), 1);
    cr_assert_eq(graph_build(tmpdir, &o, &st, &err), 0, "%s", err ? err : "");
    cr_assert_not(st.full);
    cr_assert_eq(st.parsed, 2, "parsed %zu", st.parsed);
    cr_assert_eq(st.commits_read, 1);
    cr_assert_eq(graphdb_int(tmpdir, "SELECT n FROM cochange WHERE a = 'a.py' AND b = 'b.py'"), 4);
    cr_assert_eq(graphdb_int(tmpdir, "SELECT COUNT(*) FROM symbols s JOIN files f ON f.id = s.file_id "
                        "WHERE f.path = 'b.py'"),
                 2);
    /* a removed file leaves the graph */
    sh("git rm -q c.py");
    commit(1600006000, "rm");
    cr_assert_eq(graph_build(tmpdir, &o, &st, &err), 0);
    cr_assert_eq(st.removed, 1);
    cr_assert_eq(graphdb_int(tmpdir, "SELECT COUNT(*) FROM files WHERE path = 'c.py'"), 0);
}

/* The content field comes from the cache, counted when a file is parsed:
 * an edit not yet built changes nothing, a refresh re-counts only the
 * re-parsed file, a removed file's words go; a cache whose schema is not
 * this build's has its words read from the working tree. */
Test(graph_repo, content_words_are_counted_at_build_time)
{
    write_file("a.py", "# walrus walrus zebra\ndef f(): pass\n");
    write_file("b.py", "# zebra\ndef g(): pass\n");
    write_file("c.py", "# okapi\ndef h(): pass\n");
    commit(1600000000, "init");
    graph_build_opts o = {GRAPH_PARSER_AUTO, 0, 0, NULL, 0};
    graph_build_stats st;
    char *err = NULL;
    cr_assert_eq(graph_build(tmpdir, &o, &st, &err), 0, "%s", err ? err : "");
    char db[4200];
    snprintf(db, sizeof db, "%s/.clarity/graph.db", tmpdir);
    cr_assert_eq(graphdb_int(tmpdir, "SELECT COUNT(*) FROM words"), 3);
    /* a.py: walrus walrus zebra pass ("def" a stopword, "f" one letter) */
    cr_assert_eq(graphdb_int(tmpdir, "SELECT w.n FROM words w JOIN files f ON f.id = w.file_id "
                        "WHERE f.path = 'a.py'"),
                 4);
    graph_weights w;
    graph_weights_default(&w);
    for (int f = 0; f < GRAPH_FIELDS; f++) w.field_w[f] = 0;
    w.field_w[4] = 1.0;
    w.field_b[4] = 0.75;
    double lex[3];
    /* edited, not built: the built words still count */
    write_file("a.py", "# giraffe\ndef f(): pass\n");
    graph_index *g;
    cr_assert_eq(graph_index_load(tmpdir, NULL, &g, &err), 0, "%s", err ? err : "");
    int a = graph_index_find(g, "a.py"), b = graph_index_find(g, "b.py");
    cr_assert(a >= 0 && b >= 0);
    /* "walrus": a.py only, tf 2, lengths a 4, b 2, c 2 (average 8/3) */
    graph_lexical(g, &w, "walrus", 6, lex);
    double idf = log(1.0 + 2.5 / 1.5), t = 2.0 / (0.25 + 0.75 * 4 / (8.0 / 3));
    cr_assert_float_eq(lex[a], idf * t / (1.2 + t), 1e-9, "walrus %.9f", lex[a]);
    cr_assert_float_eq(lex[b], 0.0, 1e-12);
    graph_lexical(g, &w, "giraffe", 7, lex);
    cr_assert_float_eq(lex[a], 0.0, 1e-12);
    graph_index_free(g);
    /* built: a.py re-counted (giraffe pass: 2 words), the others kept */
    cr_assert_eq(graph_build(tmpdir, &o, &st, &err), 0, "%s", err ? err : "");
    cr_assert_eq(st.parsed, 1);
    cr_assert_eq(graph_index_load(tmpdir, NULL, &g, &err), 0, "%s", err ? err : "");
    graph_lexical(g, &w, "giraffe", 7, lex);
    double t2 = 1.0 / (0.25 + 0.75 * 2 / 2.0); /* lengths 2, 2, 2 */
    cr_assert_float_eq(lex[a], idf * t2 / (1.2 + t2), 1e-9, "giraffe %.9f", lex[a]);
    graph_lexical(g, &w, "walrus", 6, lex);
    cr_assert_float_eq(lex[a], 0.0, 1e-12);
    graph_lexical(g, &w, "zebra", 5, lex);
    cr_assert_gt(lex[b], 0.0);
    graph_index_free(g);
    /* removed: its words go */
    sh("git rm -q c.py");
    commit(1600001000, "rm");
    cr_assert_eq(graph_build(tmpdir, &o, &st, &err), 0, "%s", err ? err : "");
    cr_assert_eq(graphdb_int(tmpdir, "SELECT COUNT(*) FROM words"), 2);
    /* another schema's cache (an older build wrote it): the words table is
     * not used, the working tree is read */
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h,
                              "UPDATE meta SET value = '1' WHERE key = 'schema';"
                              "UPDATE words SET data = X'6b6f616c610001', n = 1",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(h);
    write_file("b.py", "# ibex\ndef g(): pass\n");
    cr_assert_eq(graph_index_load(tmpdir, NULL, &g, &err), 0, "%s", err ? err : "");
    b = graph_index_find(g, "b.py");
    graph_lexical(g, &w, "ibex", 4, lex);
    cr_assert_gt(lex[b], 0.0);
    graph_lexical(g, &w, "koala", 5, lex);
    cr_assert_float_eq(lex[b], 0.0, 1e-12);
    graph_index_free(g);
    /* the same rows under this schema: read from the table */
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h, "UPDATE meta SET value = '" GRAPH_SCHEMA_VERSION "' WHERE key = 'schema'",
                              NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(h);
    cr_assert_eq(graph_index_load(tmpdir, NULL, &g, &err), 0, "%s", err ? err : "");
    graph_lexical(g, &w, "koala", 5, lex);
    cr_assert_gt(lex[b], 0.0);
    graph_lexical(g, &w, "ibex", 4, lex);
    cr_assert_float_eq(lex[b], 0.0, 1e-12);
    graph_index_free(g);
    /* a malformed row (no count after the word): the load fails */
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h, "UPDATE words SET data = X'6b6f616c6100'", NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(h);
    cr_assert_neq(graph_index_load(tmpdir, NULL, &g, &err), 0);
    free(err);
}

/* A file too large to parse (over 1 MB) still has the words of its first
 * 512 KB in the content field. */
Test(graph_repo, content_words_of_a_large_file)
{
    size_t big = 1100 * 1024;
    char *text = malloc(big + 1);
    cr_assert_not_null(text);
    memset(text, ' ', big);
    memcpy(text, "# narwhal\n", 10);
    memcpy(text + 600 * 1024, "# quokka\n", 9);
    text[big] = '\0';
    write_file("big.py", text);
    free(text);
    write_file("small.py", "# okapi\n");
    commit(1600000000, "init");
    graph_index *g = build_and_load(NULL);
    int b = graph_index_find(g, "big.py");
    cr_assert(b >= 0);
    graph_weights w;
    graph_weights_default(&w);
    for (int f = 0; f < GRAPH_FIELDS; f++) w.field_w[f] = 0;
    w.field_w[4] = 1.0;
    double lex[2];
    graph_lexical(g, &w, "narwhal", 7, lex);
    cr_assert_gt(lex[b], 0.0);
    graph_lexical(g, &w, "quokka", 6, lex);
    cr_assert_float_eq(lex[b], 0.0, 1e-12);
    graph_index_free(g);
}

Test(graph_repo, imports_resolve_and_propagate)
{
    write_file("pkg/__init__.py", "");
    write_file("pkg/models.py", "class Request:\n    pass\n");
    write_file("pkg/api.py", "from .models import Request\nfrom pkg import sessions\n\n"
                             "def get(url):\n    return Request()\n");
    write_file("pkg/sessions.py", "import pkg.models\n\nclass Session:\n    pass\n");
    write_file("tests/test_api.py", "from pkg.api import get\n\ndef test_get():\n    get('x')\n");
    write_file("web/app.ts", "import { x } from './util'\nexport const y = x\n");
    write_file("web/util.ts", "export const x = 1\n");
    commit(1600000000, "init");
    graph_build_opts o = {GRAPH_PARSER_AUTO, 0, 0, NULL, 0};
    graph_build_stats st;
    char *err = NULL;
    cr_assert_eq(graph_build(tmpdir, &o, &st, &err), 0, "%s", err ? err : "");
    char db[4200];
    snprintf(db, sizeof db, "%s/.clarity/graph.db", tmpdir);
    cr_assert_eq(graphdb_int(tmpdir, "SELECT COUNT(*) FROM imports i JOIN files f ON f.id = i.file_id JOIN files "
                        "t ON t.id = i.target WHERE f.path = 'pkg/api.py' AND t.path = "
                        "'pkg/models.py'"),
                 1);
    cr_assert_eq(graphdb_int(tmpdir, "SELECT COUNT(*) FROM imports i JOIN files f ON f.id = i.file_id JOIN files "
                        "t ON t.id = i.target WHERE f.path = 'pkg/api.py' AND t.path = "
                        "'pkg/sessions.py'"),
                 1);
    cr_assert_eq(graphdb_int(tmpdir, "SELECT COUNT(*) FROM imports i JOIN files f ON f.id = i.file_id JOIN files "
                        "t ON t.id = i.target WHERE f.path = 'web/app.ts' AND t.path = "
                        "'web/util.ts'"),
                 1);
    graph_index *g;
    cr_assert_eq(graph_index_load(tmpdir, NULL, &g, &err), 0);
    graph_weights w;
    graph_weights_default(&w);
    graph_hit hits[8];
    /* the test file matches "test_get" best; it is never predicted, and its
     * score goes to what it imports */
    size_t n = graph_predict(g, &w, "test_get fails", 14, hits, 8);
    cr_assert_geq(n, 1);
    cr_assert_str_eq(graph_index_path(g, hits[0].file), "pkg/api.py");
    for (size_t i = 0; i < n; i++)
        cr_assert_str_neq(graph_index_path(g, hits[i].file), "tests/test_api.py");
    /* a traceback path names the file */
    const char *tb = "File \"/home/u/proj/pkg/sessions.py\", line 3, in <module>";
    n = graph_predict(g, &w, tb, strlen(tb), hits, 8);
    cr_assert_str_eq(graph_index_path(g, hits[0].file), "pkg/sessions.py");
    /* deterministic */
    graph_hit again[8];
    size_t m = graph_predict(g, &w, tb, strlen(tb), again, 8);
    cr_assert_eq(m, n);
    for (size_t i = 0; i < n; i++) cr_assert_eq(hits[i].file, again[i].file);
    graph_index_free(g);
}

/* ---- the CLI on a fixture repository ------------------------------------ */

/* Spreading activation: every file a hop reaches gets activation, also
 * past the first 512 (which alone spread it further).  A hub importing
 * 600 modules reached them all in one hop, and the ones past 512 used to
 * get none. */
Test(graph_repo, activation_reaches_every_file_of_a_wide_hop, .timeout = 120)
{
    enum { MODS = 600 };
    buf hub;
    buf_init(&hub);
    for (int i = 0; i < MODS; i++) {
        char rel[64], text[64];
        snprintf(rel, sizeof rel, "mods/m%03d.py", i);
        snprintf(text, sizeof text, "def f%03d():\n    pass\n", i);
        write_file(rel, text);
        buf_printf(&hub, "from mods import m%03d\n", i);
    }
    write_file("mods/__init__.py", "");
    write_file("hubcenter.py", hub.p);
    buf_free(&hub);
    commit(1600000000, "hub");
    graph_index *g = build_and_load(NULL);
    int hubf = graph_index_find(g, "hubcenter.py");
    cr_assert_geq(hubf, 0);
    cr_assert_eq(g->out_off[hubf + 1] - g->out_off[hubf], MODS, "the hub's imports did not resolve");
    graph_weights w;
    graph_weights_default(&w);
    const char *q = "hubcenter";
    gi_stages(g, &w, q, strlen(q), NULL, 1);
    int reached = 0;
    for (int i = 0; i < MODS; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "mods/m%03d.py", i);
        int d = graph_index_find(g, rel);
        cr_assert_geq(d, 0);
        reached += g->act[d] > 0;
    }
    cr_assert_eq(reached, MODS, "%d of the hub's %d modules got activation", reached, MODS);
    graph_index_free(g);
}

Test(graph_repo, cli_build_and_predict)
{
    write_file("src/auth/session.py", "class SessionStore:\n    def login(self):\n        pass\n");
    write_file("src/db/pool.py", "def connect():\n    pass\n");
    commit(1600000000, "init");
    const char *b = getenv("CLARITY_BUILD");
    char exe[4096];
    snprintf(exe, sizeof exe, "%s/clarity", b && *b ? b : "build");
    runproc_result r;
    const char *argv1[] = {exe, "graph", "build", tmpdir, NULL};
    cr_assert_eq(runproc(argv1, NULL, NULL, 0, 60000, &r), 0);
    cr_assert_eq(r.status, 0, "graph build: %s", r.err ? r.err : "");
    cr_assert_not_null(strstr(r.out, "2 files"), "%s", r.out);
    runproc_free(&r);
    const char *argv2[] = {exe, "predict", tmpdir, "login fails in the session store", "-k", "1",
                           "--json", NULL};
    cr_assert_eq(runproc(argv2, NULL, NULL, 0, 60000, &r), 0);
    cr_assert_eq(r.status, 0, "predict: %s", r.err ? r.err : "");
    cr_assert_not_null(strstr(r.out, "{\"files\":[{\"path\":\"src/auth/session.py\",\"score\":"),
                       "%s", r.out);
    /* symbols matching the prompt first, then exported definitions */
    cr_assert_not_null(strstr(r.out, "\"symbols\":[{\"name\":\"login\",\"line\":2},"
                                     "{\"name\":\"SessionStore\",\"line\":1}]"),
                       "%s", r.out);
    cr_assert_not_null(strstr(r.out, "\"ms\":"), "%s", r.out);
    cr_assert_null(strstr(r.out, "pool.py"), "-k 1 returned more: %s", r.out);
    runproc_free(&r);
    const char *argv3[] = {exe, "predict", tmpdir, NULL};
    cr_assert_eq(runproc(argv3, NULL, NULL, 0, 60000, &r), 0);
    cr_assert_eq(r.status, 64);
    runproc_free(&r);
    /* the cache's directory ignores itself: git sees nothing new */
    cr_assert_eq(gitrepo_sh(tmpdir, "test -z \"$(git status --porcelain)\""), 0,
                 "the build left files git would show");
}
