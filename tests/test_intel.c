/* test_intel.c: code intelligence from the graph (graph/intel.c) through
 * the ABI, on a repository made by the test: zoom level 0 and 1 per
 * language (Python with __all__, TypeScript, JavaScript, Go, Rust, Java, C),
 * a directory, level 2; impact with fan-in, a cycle and an ambiguous name;
 * co-change on a made-up history; paths that leave the repository; no
 * graph; the co-change hint in the block after an edit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gitrepo.h"
#include "runproc.h"
#include "testhost.h"

static char *repo;
static th_host h;

static void put(const char *rel, const char *text) { cr_assert_eq(gitrepo_write(repo, rel, text), 0, "%s", rel); }

static void setup(void)
{
    repo = gitrepo_new("clarity-intel-test");
    cr_assert_not_null(repo);
    put("pkg/core.py", "\"\"\"Core.\"\"\"\n__all__ = [\"Parser\", \"parse\"]\n\n\nclass Parser:\n"
                       "    \"\"\"Parses things.\"\"\"\n\n    def parse(self, text):\n        \"\"\"Parse text.\"\"\"\n"
                       "        return helper(text)\n\n    def _internal(self):\n        pass\n\n\n"
                       "def parse(text):\n    \"\"\"Module-level parse.\"\"\"\n    return Parser().parse(text)\n\n\n"
                       "def helper(text):\n    return text\n\n\ndef _private():\n    pass\n");
    put("src/api.ts", "/** Adds two numbers. */\nexport function add(a: number, b: number): number {\n"
                      "  return a + b;\n}\n\nfunction hidden(): void {}\n\nexport class Store {\n"
                      "  get(key: string): string {\n    return key;\n  }\n"
                      "  private drop(key: string): void {}\n}\n");
    put("js/index.js", "// Greets someone.\nexport function greet(name) {\n  return 'hi ' + name;\n}\n\n"
                       "function secret() {\n  return 1;\n}\n");
    put("go/lib.go", "package lib\n\n// Sum adds two ints.\nfunc Sum(a, b int) int {\n\treturn a + b\n}\n\n"
                     "func sub(a, b int) int {\n\treturn a - b\n}\n");
    put("rs/lib.rs", "/// Doubles x.\npub fn double(x: i32) -> i32 {\n    x * 2\n}\n\nfn inner() -> i32 {\n    1\n}\n");
    put("java/Shape.java", "public class Shape {\n    /** The area. */\n    public int area() {\n        return 1;\n"
                           "    }\n\n    private int secret() {\n        return 2;\n    }\n}\n");
    put("c/util.h", "/* Clamp v into [lo, hi]. */\nint clamp(int v, int lo, int hi);\n");
    put("c/util.c", "#include \"util.h\"\n\nstatic int helper2(int v) {\n    return v;\n}\n\n"
                    "int clamp(int v, int lo, int hi) {\n    return v < lo ? lo : v > hi ? hi : helper2(v);\n}\n");
    /* impact: fan-in, a cycle, an ambiguous name */
    put("imp/__init__.py", "");
    put("imp/a.py", "def target():\n    pass\n\n\ndef caller1():\n    target()\n\n\ndef dup():\n    pass\n");
    put("imp/b.py", "from imp.a import target\n\n\ndef caller2():\n    target()\n\n\ndef top():\n    caller2()\n\n\n"
                    "def dup():\n    pass\n");
    put("imp/c.py", "from imp.a import target\n\n\ndef cyc1():\n    cyc2()\n    target()\n\n\ndef cyc2():\n    cyc1()\n");
    cr_assert_eq(gitrepo_commit(repo, 1700000000, "init"), 0);
    /* co-change: imp/a.py with imp/b.py three times, with imp/c.py once */
    const char *with[] = {"imp/b.py", "imp/b.py", "imp/c.py", "imp/b.py"};
    for (int i = 0; i < 4; i++) {
        char line[64];
        snprintf(line, sizeof line, "\n\n# change %d\n", i);
        char *pa = runproc_join(repo, "imp/a.py"), *pb = runproc_join(repo, with[i]);
        FILE *f = fopen(pa, "a");
        fputs(line, f);
        fclose(f);
        f = fopen(pb, "a");
        fputs(line, f);
        fclose(f);
        free(pa), free(pb);
        cr_assert_eq(gitrepo_commit(repo, 1700000100 + 100 * i, "change"), 0);
    }
    char *err = NULL;
    cr_assert_eq(th_open(&h, "{\"storage\":{\"backend\":\"memory\"}}", 0, &err), 0, "%s", err ? err : "");
    char params[4200];
    snprintf(params, sizeof params, "{\"repo\":\"%s\"}", repo);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.graphBuild", params, &j), 0);
    json_decref(j);
}

static void teardown(void)
{
    th_close(&h);
    if (repo) runproc_rmtree(repo);
    free(repo);
    repo = NULL;
}

TestSuite(intel, .init = setup, .fini = teardown, .timeout = 60);

static json_t *rpc(const char *method, const char *fmt, const char *a, const char *b)
{
    char params[8192];
    snprintf(params, sizeof params, fmt, repo, a, b);
    json_t *j = NULL;
    int rc = th_rpc(&h, method, params, &j);
    cr_assert_eq(rc, 0, "%s %s: %s", method, params, j ? json_dumps(j, 0) : "");
    return j;
}

static json_t *zoom(const char *path, int level)
{
    char lv[8];
    snprintf(lv, sizeof lv, "%d", level);
    return rpc("clarity.zoom", "{\"repo\":\"%s\",\"path\":\"%s\",\"level\":%s}", path, lv);
}

/* The names of a symbol list ("a,b,c"), children in brackets. */
static void names(json_t *syms, char *out, size_t n)
{
    size_t i;
    json_t *s;
    json_array_foreach(syms, i, s) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%s", len && out[len - 1] != '[' ? "," : "",
                 json_string_value(json_object_get(s, "name")));
        json_t *kids = json_object_get(s, "children");
        if (kids) {
            len = strlen(out);
            snprintf(out + len, n - len, "[");
            names(kids, out, n);
            len = strlen(out);
            snprintf(out + len, n - len, "]");
        }
    }
}

static void expect_names(const char *path, int level, const char *want)
{
    json_t *j = zoom(path, level);
    char got[1024] = "";
    names(json_object_get(j, "symbols"), got, sizeof got);
    cr_expect_str_eq(got, want, "%s level %d: %s", path, level, json_dumps(j, 0));
    json_decref(j);
}

static json_t *find(json_t *syms, const char *name)
{
    size_t i;
    json_t *s;
    json_array_foreach(syms, i, s) if (strcmp(json_string_value(json_object_get(s, "name")), name) == 0) return s;
    return NULL;
}

Test(intel, zoom_python_honours_all_and_hides_private_members)
{
    expect_names("pkg/core.py", 0, "Parser[parse],parse");
    expect_names("pkg/core.py", 1, "__all__,Parser[parse,_internal],parse,helper,_private");
    json_t *j = zoom("pkg/core.py", 0);
    json_t *p = find(json_object_get(j, "symbols"), "parse");
    cr_assert_not_null(p);
    cr_expect_str_eq(json_string_value(json_object_get(p, "signature")), "def parse(text):");
    cr_expect_str_eq(json_string_value(json_object_get(p, "doc")), "Module-level parse.");
    cr_expect_str_eq(json_string_value(json_object_get(p, "kind")), "function");
    cr_expect_eq(json_integer_value(json_object_get(p, "line")), 16);
    json_t *cls = find(json_object_get(j, "symbols"), "Parser");
    cr_expect_str_eq(json_string_value(json_object_get(cls, "doc")), "Parses things.");
    cr_expect(json_is_false(json_object_get(j, "truncated")));
    json_decref(j);
}

Test(intel, zoom_other_languages)
{
    expect_names("src/api.ts", 0, "add,Store[get]");
    expect_names("js/index.js", 0, "greet");
    expect_names("go/lib.go", 0, "Sum");
    expect_names("rs/lib.rs", 0, "double");
    expect_names("java/Shape.java", 0, "Shape[area]");
    expect_names("c/util.h", 0, "clamp");
    expect_names("c/util.c", 0, "clamp");
    expect_names("go/lib.go", 1, "Sum,sub");
    json_t *j = zoom("src/api.ts", 0);
    json_t *add = find(json_object_get(j, "symbols"), "add");
    cr_expect_str_eq(json_string_value(json_object_get(add, "signature")),
                     "export function add(a: number, b: number): number");
    cr_expect_str_eq(json_string_value(json_object_get(add, "doc")), "Adds two numbers.");
    json_decref(j);
    j = zoom("go/lib.go", 0);
    cr_expect_str_eq(json_string_value(json_object_get(find(json_object_get(j, "symbols"), "Sum"), "doc")),
                     "Sum adds two ints.");
    json_decref(j);
    j = zoom("rs/lib.rs", 0);
    cr_expect_str_eq(json_string_value(json_object_get(find(json_object_get(j, "symbols"), "double"), "doc")),
                     "Doubles x.");
    json_decref(j);
}

Test(intel, zoom_directory_and_content)
{
    json_t *j = zoom("imp", 0);
    json_t *files = json_object_get(j, "files");
    cr_assert_eq(json_array_size(files), 3, "%s", json_dumps(j, 0)); /* __init__.py has nothing public */
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(files, 0), "path")), "imp/a.py");
    json_decref(j);
    j = zoom("go/lib.go", 2);
    cr_expect_not_null(strstr(json_string_value(json_object_get(j, "content")), "func sub("));
    json_decref(j);
}

Test(intel, paths_stay_in_the_repository)
{
    const char *bad[] = {"../etc/passwd", "/etc/passwd", "pkg/../../x", "nope.py"};
    const char *why[] = {"leaves the repository", "outside the repository", "leaves the repository", "no such file"};
    for (int i = 0; i < 4; i++) {
        char params[4400];
        snprintf(params, sizeof params, "{\"repo\":\"%s\",\"path\":\"%s\",\"level\":2}", repo, bad[i]);
        json_t *j = NULL;
        cr_expect_neq(th_rpc(&h, "clarity.zoom", params, &j), 0, "%s accepted", bad[i]);
        cr_expect(strstr(json_string_value(json_object_get(j, "message")), why[i]) != NULL, "%s: %s", bad[i],
                  json_dumps(j, 0));
        json_decref(j);
    }
    char *link = runproc_join(repo, "out");
    cr_assert_eq(symlink("/etc", link), 0);
    free(link);
    json_t *j = NULL;
    char params[4400];
    snprintf(params, sizeof params, "{\"repo\":\"%s\",\"path\":\"out/passwd\",\"level\":2}", repo);
    cr_expect_neq(th_rpc(&h, "clarity.zoom", params, &j), 0);
    cr_expect(strstr(json_string_value(json_object_get(j, "message")), "symlink") != NULL, "%s", json_dumps(j, 0));
    json_decref(j);
}

Test(intel, no_graph_is_a_structured_answer)
{
    char *other = runproc_mkdtemp("clarity-intel-nograph");
    char params[4400];
    snprintf(params, sizeof params, "{\"repo\":\"%s\",\"path\":\"x.py\"}", other);
    json_t *j = NULL;
    cr_assert_eq(th_rpc(&h, "clarity.cochange", params, &j), 0);
    cr_expect_str_eq(json_string_value(json_object_get(j, "error")), "graph_unavailable");
    cr_expect(strstr(json_string_value(json_object_get(j, "message")), "run clarity graph build") != NULL);
    json_decref(j);
    runproc_rmtree(other);
    free(other);
}

/* The callers' tree of imp.a.target: caller1 (same file), caller2 (imports
 * it) <- top, cyc1 (imports it) <- cyc2 <- cyc1 again (shown once). */
Test(intel, impact_fan_in_cycle_and_ambiguity)
{
    json_t *j = rpc("clarity.impact", "{\"repo\":\"%s\",\"symbol\":\"%s\",\"depth\":%s}", "target", "4");
    json_t *c = json_object_get(j, "callers");
    cr_assert_eq(json_array_size(c), 3, "%s", json_dumps(j, 0));
    json_t *c1 = find(c, "caller1"), *c2 = find(c, "caller2"), *y1 = find(c, "cyc1");
    cr_assert(c1 && c2 && y1, "%s", json_dumps(j, 0));
    cr_expect_str_eq(json_string_value(json_object_get(c1, "via")), "same file");
    cr_expect_str_eq(json_string_value(json_object_get(c2, "via")), "import");
    cr_expect_str_eq(json_string_value(json_object_get(c2, "path")), "imp/b.py");
    json_t *top = find(json_object_get(c2, "callers"), "top");
    cr_expect_not_null(top, "%s", json_dumps(c2, 0));
    json_t *y2 = find(json_object_get(y1, "callers"), "cyc2");
    cr_assert_not_null(y2, "%s", json_dumps(y1, 0));
    json_t *again = find(json_object_get(y2, "callers"), "cyc1");
    cr_assert_not_null(again, "%s", json_dumps(y2, 0));
    cr_expect(json_is_true(json_object_get(again, "seen")), "the cycle was expanded again");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(j, "definition"), "path")), "imp/a.py");
    json_decref(j);
    /* depth 1: the direct callers only */
    j = rpc("clarity.impact", "{\"repo\":\"%s\",\"symbol\":\"%s\",\"depth\":%s}", "target", "1");
    cr_expect_eq(json_array_size(json_object_get(find(json_object_get(j, "callers"), "caller2"), "callers")), 0);
    json_decref(j);
    /* ambiguous: candidates, and --file picks one */
    j = rpc("clarity.impact", "{\"repo\":\"%s\",\"symbol\":\"%s\"%s}", "dup", "");
    cr_expect(json_is_true(json_object_get(j, "ambiguous")), "%s", json_dumps(j, 0));
    cr_expect_eq(json_array_size(json_object_get(j, "candidates")), 2);
    json_decref(j);
    j = rpc("clarity.impact", "{\"repo\":\"%s\",\"symbol\":\"%s\",\"file\":\"%s\"}", "dup", "imp/b.py");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(j, "definition"), "path")), "imp/b.py");
    json_decref(j);
}

Test(intel, cochange_ranks_partners)
{
    json_t *j = rpc("clarity.cochange", "{\"repo\":\"%s\",\"path\":\"%s\"%s}", "imp/a.py", "");
    json_t *n = json_object_get(j, "neighbours");
    cr_assert_geq(json_array_size(n), 2, "%s", json_dumps(j, 0));
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(n, 0), "path")), "imp/b.py");
    /* the first commit made every file: 4 and 2 shared */
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(n, 0), "commits")), 4);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(n, 1), "path")), "imp/c.py");
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(n, 1), "commits")), 2);
    cr_expect_eq(json_integer_value(json_object_get(j, "commits")), 5); /* init + 4 changes */
    double s0 = json_number_value(json_object_get(json_array_get(n, 0), "score"));
    double s1 = json_number_value(json_object_get(json_array_get(n, 1), "score"));
    cr_expect(s0 > s1 && s0 <= 1, "%g %g", s0, s1);
    json_decref(j);
}

/* The block after the message edit (an Edit), in a session on a host
 * reopened with cfg (malloc'ed, never NULL). */
static char *block_after_edit(const char *cfg, const clarity_message *edit)
{
    th_close(&h);
    cr_assert_eq(th_open(&h, cfg, 0, NULL), 0);
    char *b = NULL;
    cr_assert_eq(th_before(&h, "s", repo, "fix target", 10, NULL), 0);
    cr_assert_eq(th_end_msgs(&h, "s", edit, 1), 0);
    cr_assert_eq(th_before(&h, "s", repo, "go on", 5, &b), 0);
    return b ? b : strdup("");
}

/* After an Edit of imp/a.py, the next block names imp/b.py (4 shared
 * commits of 5), and imp/c.py (2) only while the session has not used it. */
Test(intel, cochange_hint_after_an_edit)
{
    cr_assert_eq(th_before(&h, "s", repo, "fix target", 10, NULL), 0);
    char args[4400];
    snprintf(args, sizeof args, "{\"file_path\":\"%s/imp/a.py\",\"old_string\":\"a\",\"new_string\":\"b\"}", repo);
    clarity_message m = {sizeof m, "assistant", "editing", 7, "Edit", args};
    cr_assert_eq(th_end_msgs(&h, "s", &m, 1), 0);
    char *b = NULL;
    cr_assert_eq(th_before(&h, "s", repo, "go on", 5, &b), 0);
    cr_expect_not_null(strstr(b, "\xE2\x86\x94 imp/b.py changes with imp/a.py in 4 of 5 commits\n"), "%s", b);
    cr_expect_not_null(strstr(b, "\xE2\x86\x94 imp/c.py changes with imp/a.py in 2 of 5 commits\n"), "%s", b);
    free(b);
    /* once the session read imp/c.py, an edit hints imp/b.py alone */
    char rargs[4400];
    snprintf(rargs, sizeof rargs, "{\"file_path\":\"%s/imp/c.py\"}", repo);
    clarity_message two[2] = {{sizeof m, "assistant", "", 0, "Read", rargs}, m};
    cr_assert_eq(th_end_msgs(&h, "s", two, 2), 0);
    cr_assert_eq(th_before(&h, "s", repo, "next", 4, &b), 0);
    cr_expect_not_null(strstr(b, "imp/b.py changes with imp/a.py"), "%s", b);
    cr_expect_null(strstr(b, "imp/c.py changes"), "%s", b);
    free(b);
    /* the next turn without an edit: no hint */
    cr_assert_eq(th_end(&h, "s", "reading", "Read", NULL), 0);
    cr_assert_eq(th_before(&h, "s", repo, "and now", 7, &b), 0);
    cr_expect_null(strstr(b, "\xE2\x86\x94"), "%s", b);
    free(b);
    /* without predictions no index is loaded: the hint opens the cache */
    b = block_after_edit("{\"storage\":{\"backend\":\"memory\"},\"prediction\":{\"enabled\":false}}", &m);
    cr_expect_not_null(strstr(b, "\xE2\x86\x94 imp/b.py changes with imp/a.py in 4 of 5 commits\n"), "%s", b);
    free(b);
    /* the switch */
    b = block_after_edit("{\"storage\":{\"backend\":\"memory\"},\"codeintel\":{\"cochangeHints\":false}}", &m);
    cr_expect_null(strstr(b, "\xE2\x86\x94"), "%s", b);
    free(b);
}
