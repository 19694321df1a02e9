/* test_extract.c: extract/ (mentions, candidates, paths, lookup forms). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../extract/extract.h"
#include "../extract/internal.h"
#include "../extract/stopwords.h"
#include "../include/clarity.h"
#include "../tracker/tracker.h"
#include "../util/buf.h"

/* ------------------------------------------------------------ helpers */

static const char *const TOOLS[] = {"read",      "write",  "edit",    "exec",          "browser",
                                    "web_search", "web_fetch", "memory_search", "recall",
                                    "reflect",   "tts",    "subagents", "process",     "nodes",
                                    "message",   "canvas", "Read",    "Edit",          "Write",
                                    "Bash",      "Grep",   "Glob"};

/* A config built by hand (config.c is another module).  Strings are not
 * owned: never pass it to config_free(). */
static void make_cfg(clarity_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < sizeof TOOLS / sizeof TOOLS[0]; i++) c->extraction.tools[i] = (char *)TOOLS[i];
    c->extraction.n_tools = sizeof TOOLS / sizeof TOOLS[0];
    c->extraction.min_word_length = 5;
    c->extraction.max_keywords_per_message = 8;
    c->extraction.projects = c->extraction.tool_names = c->extraction.memory_files = 1;
    c->extraction.source_files = c->extraction.keywords = 1;
}

static void add_custom(clarity_config *c, const char *name, const char *pat)
{
    c->extraction.custom[c->extraction.n_custom].name = (char *)name;
    c->extraction.custom[c->extraction.n_custom].pattern = (char *)pat;
    c->extraction.n_custom++;
}

typedef struct col {
    size_t n, cap;
    char **ids;
    int *cats;
    size_t stop_after; /* 0 = never stop */
} col;

static int collect(void *ud, const char *id, int cat)
{
    col *c = ud;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->ids = realloc(c->ids, c->cap * sizeof *c->ids);
        c->cats = realloc(c->cats, c->cap * sizeof *c->cats);
        cr_assert(c->ids && c->cats);
    }
    c->ids[c->n] = strdup(id);
    c->cats[c->n] = cat;
    c->n++;
    return c->stop_after && c->n >= c->stop_after;
}

static void col_free(col *c)
{
    for (size_t i = 0; i < c->n; i++) free(c->ids[i]);
    free(c->ids);
    free(c->cats);
    free(c);
}

static col *col_new(void)
{
    col *c = calloc(1, sizeof *c);
    cr_assert_not_null(c);
    return c;
}

static long idx(const col *c, const char *id)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->ids[i], id) == 0) return (long)i;
    return -1;
}

static int has(const col *c, const char *id) { return idx(c, id) >= 0; }

/* The ids as one string, for assertion messages. */
static const char *dump(const col *c)
{
    static __thread char s[4096];
    s[0] = '\0';
    for (size_t i = 0; i < c->n && strlen(s) + strlen(c->ids[i]) + 2 < sizeof s; i++) {
        strcat(s, c->ids[i]);
        strcat(s, " ");
    }
    return s;
}

static extractor *new_ex(const clarity_config *cfg)
{
    extractor *ex = NULL;
    char *err = NULL;
    int rc = extract_new(cfg, &ex, &err);
    cr_assert_eq(rc, CLARITY_OK, "extract_new: %s", err ? err : "?");
    cr_assert_null(err);
    cr_assert_not_null(ex);
    return ex;
}

static extractor *default_ex(void)
{
    clarity_config cfg;
    make_cfg(&cfg);
    return new_ex(&cfg);
}

static col *mentions(const extractor *ex, const char *text, const char *ws)
{
    col *c = col_new();
    cr_assert_eq(extract_mentions(ex, text, strlen(text), ws, collect, c), CLARITY_OK);
    return c;
}

static col *candidates(const extractor *ex, const char *text, const char *ws)
{
    col *c = col_new();
    cr_assert_eq(extract_candidates(ex, text, strlen(text), ws, collect, c), CLARITY_OK);
    return c;
}

/* ----------------------------------------------------------- mentions */

Test(mentions, project_camelcase)
{
    extractor *ex = default_ex();
    col *c = mentions(ex, "Working on ClaraCore with OpenClaw, not on Claracore or CLARA.", NULL);
    cr_assert_eq(c->n, 2, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "claracore");
    cr_assert_eq(c->cats[0], CAT_PROJECT);
    cr_assert_str_eq(c->ids[1], "openclaw");
    col_free(c);
    extract_free(ex);
}

Test(mentions, project_hyphenated_not_in_paths)
{
    extractor *ex = default_ex();
    col *c = mentions(ex, "the focus-engine is slow; see src/auth-service/x.ts and my-lib.py.", NULL);
    cr_assert(has(c, "focus_engine"));
    cr_assert_eq(c->cats[idx(c, "focus_engine")], CAT_PROJECT);
    cr_assert(has(c, "file:src/auth-service/x.ts"));
    cr_assert(has(c, "file:my-lib.py"));
    cr_assert(!has(c, "auth_service"));
    cr_assert(!has(c, "my_lib"));
    col_free(c);
    c = mentions(ex, "I shipped focus-engine.", NULL); /* a sentence end is not a path */
    cr_assert_eq(c->n, 1, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "focus_engine");
    col_free(c);
    extract_free(ex);
}

Test(mentions, tools_whole_words_case_sensitive)
{
    extractor *ex = default_ex();
    col *c = mentions(ex, "I already used web_search, then Bash and READ; webxsearch no", NULL);
    cr_assert_eq(c->n, 2, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "tool:web_search");
    cr_assert_eq(c->cats[0], CAT_TOOL);
    cr_assert_str_eq(c->ids[1], "tool:bash");
    col_free(c);
    c = mentions(ex, "Read it, then read it again", NULL); /* Read and read: one id */
    cr_assert_eq(c->n, 1, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "tool:read");
    col_free(c);
    extract_free(ex);
}

/* A tool name that is no plain word ("web-search", "mcp.fetch") goes
 * through the tools regex, compiled at extract_new; plain-word names (the
 * defaults) use the word table alone, and no regex is compiled for them. */
Test(mentions, tools_not_plain_words_take_the_regex_and_plain_ones_none)
{
    extractor *ex = default_ex();
    cr_assert_null(ex->re_tools, "plain-word names compiled a regex");
    cr_assert_not_null(ex->tool_words);
    extract_free(ex);

    clarity_config cfg;
    make_cfg(&cfg);
    static char *odd[] = {"web-search", "mcp.fetch", "Read"};
    for (size_t i = 0; i < 3; i++) cfg.extraction.tools[i] = odd[i];
    cfg.extraction.n_tools = 3;
    ex = new_ex(&cfg);
    cr_assert_not_null(ex->re_tools);
    cr_assert_null(ex->tool_words);
    col *c = mentions(ex, "use web-search, then mcp.fetch and Read; web-searching and xmcp.fetch no", NULL);
    const char *want[] = {"tool:web-search", "tool:mcp.fetch", "tool:read"};
    size_t tools = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->cats[i] != CAT_TOOL) continue;
        cr_assert(tools < 3, "got: %s", dump(c));
        cr_assert_str_eq(c->ids[i], want[tools], "got: %s", dump(c));
        tools++;
    }
    cr_assert_eq(tools, 3, "got: %s", dump(c));
    col_free(c);
    extract_free(ex);
}

/* The reference passes' CamelCase regex is compiled at their first call,
 * not at extract_new; threads that make that first call together all get
 * the passes' answer (one compile is installed, the others freed). */
typedef struct ref_arg {
    const extractor *ex;
    pthread_barrier_t *go;
    char *out;
    int rc;
} ref_arg;

static int log_ref(void *ud, const char *id, int cat)
{
    buf *b = ud;
    buf_printf(b, "%d%s|", cat, id);
    return 0;
}

static void *ref_main(void *p)
{
    ref_arg *a = p;
    const char *t = "ClaraCore and FocusEngine use web_search on src/a.ts; SOUL.md refactoring";
    buf b;
    buf_init(&b);
    pthread_barrier_wait(a->go);
    a->rc = extract_mentions_reference(a->ex, t, strlen(t), "/ws", log_ref, &b);
    a->out = buf_steal(&b, NULL);
    return NULL;
}

Test(mentions, the_reference_regex_is_compiled_at_first_use_once)
{
    for (int round = 0; round < 20; round++) {
        extractor *ex = default_ex();
        cr_assert_null(atomic_load(&ex->re_project), "compiled at extract_new");
        enum { N = 4 };
        pthread_t th[N];
        ref_arg a[N];
        pthread_barrier_t go;
        cr_assert_eq(pthread_barrier_init(&go, NULL, N), 0);
        for (int i = 0; i < N; i++) {
            a[i] = (ref_arg){ex, &go, NULL, -1};
            cr_assert_eq(pthread_create(&th[i], NULL, ref_main, &a[i]), 0);
        }
        for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
        pthread_barrier_destroy(&go);
        cr_assert_not_null(atomic_load(&ex->re_project));
        for (int i = 0; i < N; i++) {
            cr_assert_eq(a[i].rc, CLARITY_OK);
            cr_assert_not_null(a[i].out);
            cr_assert(strstr(a[i].out, "claracore|") && strstr(a[i].out, "focusengine|"), "%s", a[i].out);
            cr_assert_str_eq(a[i].out, a[0].out);
        }
        for (int i = 0; i < N; i++) free(a[i].out);
        extract_free(ex);
    }
}

Test(mentions, memory_files)
{
    extractor *ex = default_ex();
    col *c = mentions(ex, "Check SOUL.md and memory/active-context.md, then docs/api/Guide.md.", NULL);
    cr_assert_eq(c->n, 3, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "file:soul.md");
    cr_assert_eq(c->cats[0], CAT_FILE);
    cr_assert_str_eq(c->ids[1], "file:memory/active-context.md");
    cr_assert_str_eq(c->ids[2], "file:docs/api/guide.md");
    col_free(c);
    extract_free(ex);
}

Test(mentions, source_files)
{
    extractor *ex = default_ex();
    col *c = mentions(ex,
                      "Change src/auth/session.ts, ./lib/a.py and utils.go; see "
                      "https://example.com/app.js and notes.txt",
                      NULL);
    cr_assert_eq(c->n, 3, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "file:src/auth/session.ts");
    cr_assert_eq(c->cats[0], CAT_FILE);
    cr_assert_str_eq(c->ids[1], "file:lib/a.py");
    cr_assert_str_eq(c->ids[2], "file:utils.go");
    col_free(c);
    extract_free(ex);
}

Test(mentions, absolute_path_made_relative)
{
    extractor *ex = default_ex();
    col *c = mentions(ex, "open /home/u/proj/src/x.c and /etc/app/conf.yaml", "/home/u/proj/");
    cr_assert_eq(c->n, 2, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "file:src/x.c");
    cr_assert_str_eq(c->ids[1], "file:/etc/app/conf.yaml");
    col_free(c);
    c = mentions(ex, "open /home/u/proj/src/x.c", NULL);
    cr_assert_eq(c->n, 1, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "file:/home/u/proj/src/x.c");
    col_free(c);
    extract_free(ex);
}

Test(mentions, keywords_frequency_and_length)
{
    extractor *ex = default_ex();
    const char *t = "refactoring parser refactoring parser refactoring; "
                    "internationalization once. session session session session "
                    "12345 12345 12345 tiny tiny tiny";
    col *c = mentions(ex, t, NULL);
    cr_assert_eq(c->n, 2, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "keyword:refactoring"); /* count 3 before count 1 */
    cr_assert_eq(c->cats[0], CAT_KEYWORD);
    cr_assert_str_eq(c->ids[1], "keyword:internationalization");
    col_free(c);
    extract_free(ex);
}

Test(mentions, keywords_cap_and_order)
{
    extractor *ex = default_ex();
    char t[2048] = "";
    const char *w[] = {"alpha", "bravo", "charlie", "delta", "echoo", "foxtrot",
                       "golfy", "hotel", "india", "juliet"};
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 10; i++) {
            strcat(t, w[i]);
            strcat(t, " ");
        }
    strcat(t, "juliet juliet"); /* juliet: 5 times, first */
    col *c = mentions(ex, t, NULL);
    cr_assert_eq(c->n, 8, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "keyword:juliet");
    cr_assert_str_eq(c->ids[1], "keyword:alpha");
    cr_assert_str_eq(c->ids[7], "keyword:golfy");
    cr_assert(!has(c, "keyword:hotel"));
    col_free(c);
    extract_free(ex);
}

Test(mentions, stopwords)
{
    cr_assert(stopword_is("session", 7));
    cr_assert(stopword_is("because", 7));
    cr_assert(stopword_is("response", 8));
    cr_assert(!stopword_is("refactoring", 11));
    cr_assert(!stopword_is("sessions_x", 10));
    cr_assert_gt(stopword_count(), 300);
    /* words of one, two and more lanes, and their near misses */
    cr_assert(stopword_is("configuration", 13));
    cr_assert(stopword_is("instructions", 12));
    cr_assert(stopword_is("a", 1) || stopword_is("the", 3));
    cr_assert(!stopword_is("configuratio", 12));
    cr_assert(!stopword_is("configurationx", 14));
    cr_assert(!stopword_is("Session", 7), "the comparison is exact (callers lowercase)");
    cr_assert(!stopword_is("sessio", 6));
    extractor *ex = default_ex();
    col *c = mentions(ex, "Model model MODEL prompt prompt prompt context context context", NULL);
    cr_assert_eq(c->n, 0, "got: %s", dump(c));
    col_free(c);
    extract_free(ex);
}

Test(mentions, custom_patterns)
{
    clarity_config cfg;
    make_cfg(&cfg);
    add_custom(&cfg, "ticket", "JIRA-\\d+");
    extractor *ex = new_ex(&cfg);
    col *c = mentions(ex, "fix JIRA-123 and JIRA-7, again JIRA-123", NULL);
    cr_assert_eq(c->n, 2, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "ticket:jira-123");
    cr_assert_eq(c->cats[0], CAT_CUSTOM);
    cr_assert_str_eq(c->ids[1], "ticket:jira-7");
    col_free(c);
    extract_free(ex);
}

Test(mentions, bad_custom_pattern)
{
    clarity_config cfg;
    make_cfg(&cfg);
    add_custom(&cfg, "a", "x+");
    add_custom(&cfg, "b", "y");
    add_custom(&cfg, "c", "(abc");
    extractor *ex = (extractor *)1;
    char *err = NULL;
    cr_assert_eq(extract_new(&cfg, &ex, &err), CLARITY_ECONFIG);
    cr_assert_null(ex);
    cr_assert_not_null(err);
    cr_assert(strstr(err, "extraction.customPatterns[2].pattern") != NULL, "%s", err);
    cr_assert(strstr(err, "missing closing parenthesis") != NULL, "%s", err);
    cr_assert(strstr(err, "offset 4") != NULL, "%s", err);
    free(err);

    make_cfg(&cfg);
    cfg.extraction.exclude[0] = (char *)"[z-a]";
    cfg.extraction.n_exclude = 1;
    err = NULL;
    cr_assert_eq(extract_new(&cfg, &ex, &err), CLARITY_ECONFIG);
    cr_assert(strstr(err, "extraction.exclude[0]") && strstr(err, "offset"), "%s", err);
    free(err);
}

/* Only the best maxKeywords are put in order; when some of them emit
 * nothing (excluded here), the next best follow, in order. */
Test(mentions, keywords_past_excluded_ones_come_in_order)
{
    clarity_config cfg;
    make_cfg(&cfg);
    cfg.extraction.exclude[0] = (char *)"^keyword:(alpha|bravo|charlie)$";
    cfg.extraction.n_exclude = 1;
    extractor *ex = new_ex(&cfg);
    static const char *const w[] = {"limas", "kilos",   "juliet", "india", "hotel", "golfy",
                                    "foxtrot", "echoo", "delta",  "charlie", "bravo", "alpha"};
    char t[4096] = "";
    for (int i = 0; i < 12; i++) /* limas 3 times ... alpha 14 times */
        for (int r = 0; r < 3 + i; r++) {
            strcat(t, w[i]);
            strcat(t, " ");
        }
    col *c = mentions(ex, t, NULL);
    cr_assert_eq(c->n, 8, "got: %s", dump(c));
    static const char *const want[] = {"keyword:delta", "keyword:echoo", "keyword:foxtrot", "keyword:golfy",
                                       "keyword:hotel", "keyword:india", "keyword:juliet",  "keyword:kilos"};
    for (int i = 0; i < 8; i++) cr_assert_str_eq(c->ids[i], want[i], "at %d, got: %s", i, dump(c));
    col_free(c);
    extract_free(ex);
}

Test(mentions, exclusions)
{
    clarity_config cfg;
    make_cfg(&cfg);
    cfg.extraction.exclude[0] = (char *)"^keyword:secret";
    cfg.extraction.exclude[1] = (char *)"^tool:exec$";
    cfg.extraction.n_exclude = 2;
    extractor *ex = new_ex(&cfg);
    col *c = mentions(ex,
                      "exec edit claude-sonnet gpt-turbo GithubCopilot secretive secretive secretive "
                      "copilotish copilotish copilotish keepword keepword keepword",
                      NULL);
    cr_assert_eq(c->n, 2, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "tool:edit");
    cr_assert_str_eq(c->ids[1], "keyword:keepword");
    col_free(c);
    extract_free(ex);
}

/* Each built-in rule (model and provider names are never items), and
 * names that only come near one. */
Test(mentions, builtin_exclusions_each_rule)
{
    clarity_config cfg;
    make_cfg(&cfg);
    extractor *ex = new_ex(&cfg);
    col *c = mentions(ex,
                      "claude-code gpt-4o github-copilot GithubCopilot SonnetRunner OpusMagnum HaikuBot "
                      "claudette claudette claudette gptish gptish gptish "
                      "clauDe-x gp-tool son-net opu-s haik-u github-copi GitHubPilot KeyWordish keepword keepword keepword",
                      NULL);
    cr_assert_eq(c->n, 8, "got: %s", dump(c));
    const char *want[] = {"gp_tool", "son_net", "opu_s", "haik_u", "github_copi", "githubpilot", "keywordish",
                          "keyword:keepword"};
    for (size_t i = 0; i < 8; i++) cr_assert_str_eq(c->ids[i], want[i], "got: %s", dump(c));
    col_free(c);
    extract_free(ex);
}

Test(mentions, short_pattern_ids_dropped)
{
    clarity_config cfg;
    make_cfg(&cfg);
    cfg.extraction.min_word_length = 6;
    add_custom(&cfg, "t", "#\\d+");
    extractor *ex = new_ex(&cfg);
    col *c = mentions(ex, "x-y abc-d abcd-efg #1 #1234", NULL);
    cr_assert_eq(c->n, 2, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "abcd_efg");
    cr_assert_str_eq(c->ids[1], "t:#1234");
    col_free(c);
    extract_free(ex);
}

Test(mentions, category_order_dedup_and_switches)
{
    clarity_config cfg;
    make_cfg(&cfg);
    add_custom(&cfg, "ticket", "JIRA-\\d+");
    extractor *ex = new_ex(&cfg);
    const char *t = "JIRA-1 ClaraCore src/a.ts SOUL.md web_search pipeline pipeline pipeline "
                    "ClaraCore web_search";
    col *c = mentions(ex, t, NULL);
    cr_assert_eq(c->n, 6, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "tool:web_search");
    cr_assert_str_eq(c->ids[1], "file:soul.md");
    cr_assert_str_eq(c->ids[2], "file:src/a.ts");
    cr_assert_str_eq(c->ids[3], "claracore");
    cr_assert_str_eq(c->ids[4], "ticket:jira-1");
    cr_assert_str_eq(c->ids[5], "keyword:pipeline");
    col_free(c);
    extract_free(ex);

    cfg.extraction.projects = cfg.extraction.tool_names = cfg.extraction.keywords = 0;
    cfg.extraction.memory_files = 0;
    ex = new_ex(&cfg);
    c = mentions(ex, t, NULL);
    cr_assert_eq(c->n, 2, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "file:src/a.ts");
    cr_assert_str_eq(c->ids[1], "ticket:jira-1");
    col_free(c);
    extract_free(ex);
}

Test(mentions, callback_stops)
{
    extractor *ex = default_ex();
    col *c = col_new();
    c->stop_after = 1;
    cr_assert_eq(extract_mentions(ex, "web_search Bash ClaraCore", 25, NULL, collect, c), CLARITY_OK);
    cr_assert_eq(c->n, 1, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "tool:web_search");
    col_free(c);
    extract_free(ex);
}

Test(mentions, invalid_utf8_and_nul)
{
    extractor *ex = default_ex();
    static const char t[] = "\xff\xfe broken \xc3( \0 ClaraCore \xe2\x82 SOUL.md \xed\xa0\x80 "
                            "\xc3( src/b.ts tool web_search \x80\x80";
    col *c = col_new();
    cr_assert_eq(extract_mentions(ex, t, sizeof t - 1, NULL, collect, c), CLARITY_OK);
    cr_assert(has(c, "claracore"));
    cr_assert(has(c, "file:soul.md"));
    cr_assert(has(c, "tool:web_search"));
    cr_assert(has(c, "file:src/b.ts"));
    col_free(c);
    c = col_new();
    cr_assert_eq(extract_candidates(ex, t, sizeof t - 1, NULL, collect, c), CLARITY_OK);
    cr_assert(has(c, "claracore"));
    cr_assert(has(c, "tool:web_search"));
    col_free(c);
    extract_free(ex);
}

Test(mentions, text_bounded_by_len)
{
    extractor *ex = default_ex();
    col *c = col_new();
    const char *t = "ClaraCore OpenClaw";
    cr_assert_eq(extract_mentions(ex, t, 9, NULL, collect, c), CLARITY_OK);
    cr_assert_eq(c->n, 1, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "claracore");
    col_free(c);
    extract_free(ex);
}

Test(mentions, large_input, .timeout = 60)
{
    clarity_config cfg;
    make_cfg(&cfg);
    add_custom(&cfg, "ticket", "JIRA-\\d+");
    extractor *ex = new_ex(&cfg);
    size_t n = 8u << 20;
    char *t = malloc(n);
    cr_assert_not_null(t);
    uint32_t s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        unsigned r = (s >> 16) & 0xff;
        t[i] = r < 40 ? ' ' : r < 44 ? '/' : r < 48 ? '.' : r < 52 ? '-' : r < 54 ? '\0'
             : r < 58 ? (char)(0x80 | (r & 0x3f)) : (char)('a' + r % 26);
    }
    memcpy(t + n - 40, " ClaraCore src/end.ts web_search JIRA-9 ", 40);
    col *c = col_new();
    c->stop_after = 0;
    int rc = extract_mentions(ex, t, n, "/ws", collect, c);
    cr_assert_eq(rc, CLARITY_OK);
    cr_assert(has(c, "claracore"));
    cr_assert(has(c, "file:src/end.ts"));
    cr_assert(has(c, "tool:web_search"));
    cr_assert(has(c, "ticket:jira-9"));
    col_free(c);
    c = col_new();
    /* candidates over-report; just run through */
    rc = extract_candidates(ex, t, n, "/ws", collect, c);
    cr_assert_eq(rc, CLARITY_OK);
    cr_assert_gt(c->n, 0);
    col_free(c);
    free(t);
    extract_free(ex);
}

Test(mentions, match_limit_reports_error_and_keeps_results, .timeout = 60)
{
    clarity_config cfg;
    make_cfg(&cfg);
    add_custom(&cfg, "evil", "(a|aa)+$");
    add_custom(&cfg, "ok", "OK-\\d");
    extractor *ex = new_ex(&cfg);
    char t[256];
    memset(t, 'a', sizeof t);
    memcpy(t, "ClaraCore OK-1 ", 15);
    t[sizeof t - 1] = 'b';
    col *c = col_new();
    cr_assert_eq(extract_mentions(ex, t, sizeof t, NULL, collect, c), CLARITY_ERR);
    cr_assert(has(c, "claracore"));
    cr_assert(has(c, "ok:ok-1"));
    col_free(c);
    extract_free(ex);
}

typedef struct thr_arg {
    const extractor *ex;
    int ok;
} thr_arg;

static void *thr_main(void *p)
{
    thr_arg *a = p;
    a->ok = 1;
    for (int i = 0; i < 200; i++) {
        col *c = calloc(1, sizeof *c);
        const char *t = "ClaraCore web_search src/a.ts SOUL.md refactoring refactoring refactoring";
        int rc = extract_mentions(a->ex, t, strlen(t), NULL, collect, c);
        if (rc != 0 || c->n != 5 || strcmp(c->ids[4], "keyword:refactoring") != 0) a->ok = 0;
        col_free(c);
    }
    return NULL;
}

Test(mentions, shared_by_threads)
{
    extractor *ex = default_ex();
    pthread_t th[4];
    thr_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i].ex = ex;
        cr_assert_eq(pthread_create(&th[i], NULL, thr_main, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert(args[i].ok);
    }
    extract_free(ex);
}

/* ---------------------------------------------------------- strip_own */

Test(strip_own, with_end_marker)
{
    const char *t = "before\n[CLARITY CONTEXT]\nitems: a, b\n[/CLARITY CONTEXT]\nafter "
                    "[CLARITY CONTEXT]x[/CLARITY CONTEXT]end";
    buf b;
    buf_init(&b);
    extract_strip_own(t, strlen(t), &b);
    cr_assert_str_eq(b.p, "before\n\nafter end");
    buf_free(&b);
}

/* A block between two bytes of a token (here "src/app" and ".py") does
 * not join them into "src/app.py", a name the text never wrote: a newline
 * stays in its place.  Between a token and a separator nothing stays. */
Test(strip_own, a_block_inside_a_token_leaves_a_newline)
{
    buf b;
    buf_init(&b);
    const char *t = "see src/app[CLARITY CONTEXT]\nx\n[/CLARITY CONTEXT].py now";
    extract_strip_own(t, strlen(t), &b);
    cr_assert_str_eq(b.p, "see src/app\n.py now");
    buf_reset(&b);
    t = "ab[CLARITY CONTEXT]x[/CLARITY CONTEXT][CLARITY CONTEXT]y[/CLARITY CONTEXT]cd";
    extract_strip_own(t, strlen(t), &b);
    cr_assert_str_eq(b.p, "ab\ncd", "two blocks in a row leave one newline");
    buf_reset(&b);
    t = "ab[CLARITY CONTEXT]cut\n\ncd";
    extract_strip_own(t, strlen(t), &b);
    cr_assert_str_eq(b.p, "ab\ncd", "a block cut off, to its blank line");
    buf_reset(&b);
    t = "ab [CLARITY CONTEXT]x[/CLARITY CONTEXT]cd";
    extract_strip_own(t, strlen(t), &b);
    cr_assert_str_eq(b.p, "ab cd");
    buf_reset(&b);
    buf_puts(&b, "kept"); /* appended to: what was there is no byte of this text */
    t = "[CLARITY CONTEXT]x[/CLARITY CONTEXT]cd";
    extract_strip_own(t, strlen(t), &b);
    cr_assert_str_eq(b.p, "keptcd");
    buf_free(&b);
}

Test(strip_own, without_end_marker)
{
    const char *t = "hello\n[CLARITY CONTEXT]\nitems: a\nmore\n\nquestion ClaraCore";
    buf b;
    buf_init(&b);
    extract_strip_own(t, strlen(t), &b);
    cr_assert_str_eq(b.p, "hello\nquestion ClaraCore");
    buf_reset(&b);
    t = "hi [CLARITY CONTEXT] cut off";
    extract_strip_own(t, strlen(t), &b);
    cr_assert_str_eq(b.p, "hi ");
    buf_reset(&b);
    extract_strip_own("plain", 5, &b);
    cr_assert_str_eq(b.p, "plain");
    buf_free(&b);
}

/* --------------------------------------------------------- candidates */

Test(candidates, word_boundaries)
{
    extractor *ex = default_ex();
    col *c = candidates(ex, "I updated focus-engine and src/auth/session.ts using web_search already", NULL);
    cr_assert(has(c, "focus_engine"));
    cr_assert(has(c, "file:src/auth/session.ts"));
    cr_assert(has(c, "tool:web_search"));
    cr_assert(has(c, "keyword:updated") == 0); /* a stopword */
    cr_assert(!has(c, "tool:read"));
    cr_assert(!has(c, "tool:web"));
    cr_assert(!has(c, "file:session.ts"));
    cr_assert_eq(c->cats[idx(c, "focus_engine")], CAT_PROJECT);
    cr_assert_eq(c->cats[idx(c, "file:src/auth/session.ts")], CAT_FILE);
    col_free(c);
    extract_free(ex);
}

Test(candidates, forms)
{
    clarity_config cfg;
    make_cfg(&cfg);
    add_custom(&cfg, "ticket", "JIRA-\\d+");
    extractor *ex = new_ex(&cfg);
    col *c = candidates(ex, "ClaraCore focus_engine SOUL.md /ws/lib/x.py JIRA-42 Bash Bash", "/ws");
    cr_assert(has(c, "claracore"));
    cr_assert(has(c, "tool:claracore"));
    cr_assert(has(c, "keyword:claracore"));
    cr_assert(has(c, "focus_engine"));
    cr_assert(has(c, "file:soul.md"));
    cr_assert(has(c, "file:lib/x.py"));
    cr_assert(has(c, "ticket:jira-42"));
    cr_assert(has(c, "tool:bash"));
    for (size_t i = 0; i < c->n; i++)
        for (size_t j = i + 1; j < c->n; j++) cr_assert_str_neq(c->ids[i], c->ids[j]);
    col_free(c);
    c = candidates(ex, "see /elsewhere/src/a.ts", "/ws"); /* tails of unresolved paths */
    cr_assert(has(c, "file:/elsewhere/src/a.ts"));
    cr_assert(has(c, "file:src/a.ts"));
    col_free(c);
    extract_free(ex);
}

Test(candidates, json)
{
    extractor *ex = default_ex();
    col *c = col_new();
    cr_assert_eq(extract_candidates_json(ex, "{\"file_path\":\"/ws/src/a.ts\",\"command\":\"grep ClaraCore\"}",
                                         "/ws", collect, c),
                 CLARITY_OK);
    cr_assert(has(c, "file:src/a.ts"));
    cr_assert(has(c, "claracore"));
    cr_assert(!has(c, "file:/ws/src/a.ts"));
    col_free(c);

    c = col_new();
    cr_assert_eq(extract_candidates_json(ex, "{\"args\":{\"files\":[\"docs/x\",\"README.md\"]},\"n\":3}",
                                         NULL, collect, c),
                 CLARITY_OK);
    cr_assert(has(c, "file:docs/x")); /* a path key: reported even without extension */
    cr_assert(has(c, "file:readme.md"));
    col_free(c);

    c = col_new(); /* malformed: scanned as text */
    cr_assert_eq(extract_candidates_json(ex, "{\"path\": src/b.go ClaraCore", NULL, collect, c),
                 CLARITY_OK);
    cr_assert(has(c, "file:src/b.go"));
    cr_assert(has(c, "claracore"));
    col_free(c);
    extract_free(ex);
}

Test(candidates, tool_files)
{
    extractor *ex = default_ex();
    col *c = col_new();
    const char *j = "{\"file_path\":\"/ws/./src//a.ts\",\"content\":\"see b.ts\","
                    "\"edits\":[{\"path\":\"/ws/SOUL.md\"}],\"paths\":[\"lib/c.py\",7]}";
    cr_assert_eq(extract_tool_files(ex, j, "/ws/", collect, c), CLARITY_OK);
    cr_assert_eq(c->n, 3, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "file:src/a.ts");
    cr_assert_eq(c->cats[0], CAT_FILE);
    cr_assert_str_eq(c->ids[1], "file:soul.md");
    cr_assert_str_eq(c->ids[2], "file:lib/c.py");
    col_free(c);
    c = col_new();
    cr_assert_eq(extract_tool_files(ex, "not json /ws/a.ts", "/ws", collect, c), CLARITY_OK);
    cr_assert_eq(c->n, 0, "got: %s", dump(c));
    col_free(c);
    extract_free(ex);
}

/* extract_tool_call reads the arguments without jansson when it can; what
 * it reports must be exactly what the jansson walks report, in order: the
 * tool files, then the candidates.  Each row is a shape the one-pass reader
 * takes, or one it must hand to jansson. */
Test(candidates, tool_call_equals_the_jansson_walks)
{
    static const char *const docs[] = {
        "{\"file_path\":\"/ws/src/a.ts\",\"command\":\"grep ClaraCore\"}",
        "{\"args\":{\"files\":[\"docs/x\",\"README.md\"]},\"n\":3,\"f\":-0.5,\"ok\":true,\"z\":null}",
        "{\"old_string\":\"a\\\"b\\\\c\\/d\\n\\tClaraCore\",\"path\":\"src\\/b.go\"}",
        "{\"path\":\"src/a.ts\",\"path\":\"src/b.ts\"}",          /* a repeated key: jansson keeps one */
        "{\"p\\u0061th\":\"src/c.ts\",\"x\":\"\\u00e9t\\u00e9 focus-engine\"}",
        "{\"file_path\":\"/ws/caf\xc3\xa9.md\"}",                  /* non-ASCII */
        "{\"n\":123456789012345678901234567890,\"file\":\"a.py\"}", /* an integer jansson refuses */
        "{\"n\":1e999,\"file\":\"a.py\"}",
        "{\"n\":01,\"file\":\"a.py\"}",                             /* invalid: scanned as text */
        "{\"path\": src/b.go ClaraCore",
        "[\"src/x.py\",{\"paths\":[\"lib/y.py\",[\"lib/z.py\"]]}]",
        "\"just a string naming SOUL.md\"",
        "  {\"file_path\" : \"MEMORY.md\" , \"edits\" : [ ] , \"o\" : { } }  ",
        "{\"a\":\"x\"} trailing",
        "",
        "{\"ctl\":\"a\x01b\"}",
        "{\"deep\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"src/d.ts\"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
    };
    extractor *ex = default_ex();
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        col *two = col_new(), *one = col_new();
        cr_assert_eq(extract_tool_files(ex, docs[i], "/ws", collect, two), CLARITY_OK);
        cr_assert_eq(extract_candidates_json(ex, docs[i], "/ws", collect, two), CLARITY_OK);
        cr_assert_eq(extract_tool_call(ex, docs[i], "/ws", NULL, collect, collect, one), CLARITY_OK);
        char *a = strdup(dump(two));
        cr_assert_str_eq(dump(one), a, "document %zu: %s", i, docs[i]);
        free(a);
        col_free(two);
        col_free(one);
    }
    extract_free(ex);
}

/* The same for documents of 1 to 80 strings: the reader keeps a call's
 * first strings in an array of its own and moves them to the heap past
 * EX_JSON_LOCAL; every string, the first and the last included, must come
 * out in order either way. */
Test(candidates, tool_call_equals_the_jansson_walks_with_many_strings)
{
    extractor *ex = default_ex();
    buf doc, member;
    buf_init(&doc);
    buf_init(&member);
    for (int n = 1; n <= 80; n++) {
        /* n - 1 paths in an array, then one more string after it */
        buf_reset(&doc);
        buf_puts(&doc, "{\"file_paths\":[");
        for (int i = 0; i + 1 < n; i++) buf_printf(&doc, "%s\"src/m%d/Part%d.ts\"", i ? "," : "", i, i);
        buf_printf(&doc, "],\"command\":\"grep Last%dCore\"}", n);
        buf_putc(&doc, '\0');
        col *two = col_new(), *one = col_new();
        cr_assert_eq(extract_tool_files(ex, doc.p, "/ws", collect, two), CLARITY_OK);
        cr_assert_eq(extract_candidates_json(ex, doc.p, "/ws", collect, two), CLARITY_OK);
        cr_assert_eq(extract_tool_call(ex, doc.p, "/ws", NULL, collect, collect, one), CLARITY_OK);
        /* id by id (dump() cuts long lists) */
        cr_assert_eq(one->n, two->n, "%d strings: %zu ids against %zu", n, one->n, two->n);
        for (size_t i = 0; i < one->n; i++)
            cr_assert(strcmp(one->ids[i], two->ids[i]) == 0 && one->cats[i] == two->cats[i],
                      "%d strings, id %zu: %s against %s", n, i, one->ids[i], two->ids[i]);
        char first[32], last[32]; /* the first path's file and the last string's word */
        snprintf(first, sizeof first, "file:src/m0/Part0.ts");
        snprintf(last, sizeof last, "last%dcore", n);
        cr_assert(n == 1 || has(one, first), "%d strings: no %s", n, first);
        cr_assert(has(one, last), "%d strings: no %s", n, last);
        col_free(two);
        col_free(one);
        /* the member after them, read the same way */
        static const char *const keys[] = {"command"};
        cr_assert_eq(extract_json_member(doc.p, keys, 1, &member), 1);
        char want[64];
        snprintf(want, sizeof want, "grep Last%dCore", n);
        cr_assert(member.len == strlen(want) && memcmp(member.p, want, member.len) == 0, "%d strings", n);
    }
    buf_free(&doc);
    buf_free(&member);
    extract_free(ex);
}

/* The same with one byte the reader must stop at ('"' and '\\' escaped, a
 * \n escape, a control byte, a byte above 0x7f) at every place of strings
 * from 1 to 40 bytes: the reader takes plain bytes sixteen and eight at a
 * time, and each stop must fall where jansson's does. */
Test(candidates, tool_call_equals_the_jansson_walks_at_every_stop)
{
    static const char *const stops[] = {"\\\"", "\\\\", "\\n", "\x01", "\xc3\xa9"};
    extractor *ex = default_ex();
    char doc[256], body[64];
    for (size_t k = 0; k < sizeof stops / sizeof *stops; k++)
        for (int n = 1; n <= 40; n++)
            for (int at = 0; at <= n; at++) {
                /* words and a path around the stop: "src/a.py ClaraCore ..." */
                static const char fill[] = "src/a.py ClaraCore focus-engine lib/b.ts x";
                snprintf(body, sizeof body, "%.*s%s%.*s", at, fill, stops[k], n - at, fill + at);
                snprintf(doc, sizeof doc, "{\"command\":\"%s\",\"file_path\":\"%s\"}", body, body);
                col *two = col_new(), *one = col_new();
                cr_assert_eq(extract_tool_files(ex, doc, "/ws", collect, two), CLARITY_OK);
                cr_assert_eq(extract_candidates_json(ex, doc, "/ws", collect, two), CLARITY_OK);
                cr_assert_eq(extract_tool_call(ex, doc, "/ws", NULL, collect, collect, one), CLARITY_OK);
                char *a = strdup(dump(two));
                cr_assert_str_eq(dump(one), a, "stop %zu, %d bytes, at %d: %s", k, n, at, doc);
                free(a);
                col_free(two);
                col_free(one);
            }
    extract_free(ex);
}

/* The one-pass scan against the earlier passes on real text: every text of
 * the recorded sessions (dev-sessions.jsonl from $CLARITY_SHARED/data or
 * ../shared/data, else the demo conversation), under configs that turn
 * each branch on and off, gives the same ids in the same order.  fuzz_mentions
 * does the same on random bytes. */
static int log_id(void *ud, const char *id, int cat)
{
    char **s = ud;
    size_t n = *s ? strlen(*s) : 0, l = strlen(id);
    *s = realloc(*s, n + l + 4);
    cr_assert_not_null(*s);
    (*s)[n] = (char)('0' + cat);
    memcpy(*s + n + 1, id, l);
    (*s)[n + 1 + l] = '|';
    (*s)[n + 2 + l] = '\0';
    return 0;
}

/* One extractor per config. */
static void extractors_of(const char *const *cfgs, int n, extractor **ex)
{
    for (int k = 0; k < n; k++) {
        clarity_config c;
        char *err = NULL;
        cr_assert_eq(config_parse(&c, cfgs[k], &err), 0, "%s", err ? err : "");
        cr_assert_eq(extract_new(&c, &ex[k], &err), 0, "%s", err ? err : "");
        config_free(&c);
    }
}

/* The one-pass scan of text reports what the passes report; returns
 * whether it reported anything. */
static int same_mentions(extractor *ex, const char *t, size_t len, const char *what)
{
    char *b = NULL;
    int rb = extract_mentions_reference(ex, t, len, "/ws", log_id, &b);
    int any = b && strlen(b) > 0;
    /* the scan with each byte classifier this CPU runs */
    int avx2 = ex->avx2;
    for (int simd = 0; simd <= avx2; simd++) {
        ex->avx2 = simd;
        char *a = NULL;
        int ra = extract_mentions(ex, t, len, "/ws", log_id, &a);
        cr_assert_eq(ra, rb, "%s (avx2 %d)", what, simd);
        cr_assert_str_eq(a ? a : "", b ? b : "", "%s (avx2 %d) differs", what, simd);
        free(a);
    }
    free(b);
    return any;
}

Test(mentions, one_pass_scan_equals_the_passes_on_real_text, .timeout = 120)
{
    static const char *const cfgs[] = {
        "{}",
        "{\"extraction\":{\"minWordLength\":1,\"maxKeywordsPerMessage\":64}}",
        "{\"extraction\":{\"customPatterns\":[{\"name\":\"ticket\",\"pattern\":\"\\\\b[A-Z]{2,}-\\\\d+\\\\b\"}],"
        "\"exclude\":[\"^keyword:t\",\"^file:src\"]}}",
        "{\"extraction\":{\"tools\":[\"Bash\",\"Read\",\"Edit\",\"open\",\"edit\",\"find_file\"]}}",
    };
    char path[1024];
    const char *sh = getenv("CLARITY_SHARED");
    snprintf(path, sizeof path, "%s/data/dev-sessions.jsonl", sh ? sh : "../shared");
    FILE *f = fopen(path, "r");
    if (!f) f = fopen("examples/demo.jsonl", "r");
    cr_assert_not_null(f, "no corpus to compare on");
    extractor *ex[4];
    extractors_of(cfgs, 4, ex);
    char *line = NULL;
    size_t cap = 0, texts = 0, ids = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        const char *t = json_string_value(json_object_get(o, "text"));
        if (t) {
            texts++;
            for (int k = 0; k < 4; k++) {
                char what[64];
                snprintf(what, sizeof what, "config %d, text %zu", k, texts);
                ids += (size_t)same_mentions(ex[k], t, strlen(t), what);
            }
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    for (int k = 0; k < 4; k++) extract_free(ex[k]);
    cr_assert_gt(texts, 10);
    cr_assert_gt(ids, 10, "the texts named nothing: the comparison proved nothing");
}

/* The scan leaves a path token unnormalized when its last component has
 * no md or code extension: normalization must not be able to give it one.
 * Tokens whose last component goes or changes in normalization (a
 * trailing '/', "." and "..", trailing dots, the workspace itself, a
 * doubled '/') each next to a file the same token would name, alone and
 * in a sentence, against the passes, which normalize every token. */
Test(mentions, path_tokens_the_scan_skips_name_no_file)
{
    static const char *const tokens[] = {
        "src/auth.py/", "src/auth.py/.", "src/auth.py/..", "src/auth.py//", "src/auth.py/./",
        "docs/guide.md/", "docs/guide.md/../", "memory/notes.md/.", "SOUL.md/", "/ws/SOUL.md/",
        "/ws", "/ws/", "/ws/.", "/ws/..", "/ws/src/..", "a/b/../c.py", "a/b/../c", "a/b/./c.ts",
        "np.array", "e.g.", "1.2.3", "self.assertEqual", "lib.so", "a.md.bak", "x.PY", "X.Md",
        "..", "...", "./", "../", ".py", "/.py", "a/.py", "src//main.c", "src//main", "~/docs/x.md",
        "v1.0/", "v1.0/.", "README.md..", "Makefile", "dir.d/file", "dir.py/file", "dir.py/file.",
    };
    static const char *const cfgs[] = {"{}"};
    extractor *ex;
    extractors_of(cfgs, 1, &ex);
    size_t files = 0;
    for (size_t i = 0; i < sizeof tokens / sizeof *tokens; i++) {
        char text[256];
        for (int shape = 0; shape < 2; shape++) {
            snprintf(text, sizeof text, shape ? "Look at %s then fix it" : "%s", tokens[i]);
            char what[300];
            snprintf(what, sizeof what, "'%s'", text);
            char *b = NULL;
            extract_mentions_reference(ex, text, strlen(text), "/ws", log_id, &b);
            files += b && strstr(b, "file:") != NULL;
            free(b);
            same_mentions(ex, text, strlen(text), what);
        }
    }
    cr_assert_gt(files, 20, "only %zu texts named a file: the cases prove little", files);
    extract_free(ex);
}

/* Long texts of repeated words, where the scan decides each distinct word
 * once (its memo) and counts the repeats: keyword counts and their order,
 * tool names and CamelCase names must come out as the passes give them.
 * Each text is in a buffer of its exact size (the memo reads 16 bytes from
 * a word's start). */
Test(mentions, one_pass_scan_equals_the_passes_on_long_repetitive_text, .timeout = 120)
{
    /* the last four: words of 1 to 3 bytes the scan drops unread (the
     * extractor's short_skip) or must read, as tools and keywords decide */
    static const char *const cfgs[] = {
        "{}",
        "{\"extraction\":{\"minWordLength\":1,\"maxKeywordsPerMessage\":64}}",
        "{\"extraction\":{\"tools\":[\"Bash\",\"Read\",\"Edit\",\"open\",\"edit\",\"find_file\"]}}",
        "{\"extraction\":{\"tools\":[\"x\",\"ls\",\"tts\"],\"minWordLength\":4}}",
        "{\"extraction\":{\"tools\":[\"ab\"],\"minWordLength\":3}}",
        "{\"extraction\":{\"tools\":[\"x\"]}}",
        "{\"extraction\":{\"keywords\":false}}",
    };
    enum { NCFG = sizeof cfgs / sizeof *cfgs };
    static const char *const vocab[] = {
        "config", "Config", "CONFIG", "configs", "configuration", "configurationsXY", "configurationsXYZ",
        "ClaraCore", "ClaraCoreEngine", "claracore", "Read", "read", "Edit", "find_file", "open", "Bash",
        "session", "sessions", "Session", "a", "ab", "abcdefgh", "abcdefghi", "abcdefghijklmnop",
        "abcdefghijklmnopq", "12345", "x1", "the", "and", "focus-engine", "src/auth/session.ts",
        "SOUL.md", "memory/notes.md", "Config.", "refactoring", "refactorings", "x", "X", "ls", "Ls",
        "tts", "Tts", "AB", "go"};
    static const char *const seps[] = {" ", " ", " ", "\n", ", ", "(", ")", ". ", "-", "/"};
    extractor *ex[NCFG];
    extractors_of(cfgs, NCFG, ex);
    cr_assert_eq(ex[0]->short_skip, 6u, "the defaults skip words of 1 and 2 bytes");
    cr_assert_eq(ex[3]->short_skip, 0u);
    cr_assert_eq(ex[4]->short_skip, 2u);
    cr_assert_eq(ex[5]->short_skip, 12u);
    srand(17);
    size_t ids = 0;
    for (int round = 0; round < 150; round++) {
        /* a few words of the vocabulary, most of them many times */
        size_t nv = 2 + (size_t)rand() % (sizeof vocab / sizeof *vocab - 2);
        size_t want = 512 + (size_t)(rand() % 5000), len = 0;
        char *text = malloc(want + 64);
        while (len < want) {
            const char *w = vocab[(size_t)rand() % nv], *sep = seps[rand() % (sizeof seps / sizeof *seps)];
            memcpy(text + len, w, strlen(w));
            len += strlen(w);
            memcpy(text + len, sep, strlen(sep));
            len += strlen(sep);
        }
        len -= (size_t)(rand() % 2);
        char *exact = malloc(len);
        memcpy(exact, text, len);
        free(text);
        for (int k = 0; k < NCFG; k++) {
            char what[64];
            snprintf(what, sizeof what, "config %d, round %d", k, round);
            ids += (size_t)same_mentions(ex[k], exact, len, what);
        }
        free(exact);
    }
    for (int k = 0; k < NCFG; k++) extract_free(ex[k]);
    cr_assert_gt(ids, 300, "the texts named nothing: the comparison proved nothing");
}

/* A token is a path when it holds a '/' anywhere, or a '.' before a file
 * extension: found wherever the byte falls against the eight-byte steps
 * the token is read in, and in tokens of every length up to 40. */
Test(candidates, a_path_byte_anywhere_in_the_token)
{
    clarity_config cfg;
    make_cfg(&cfg);
    extractor *ex = new_ex(&cfg);
    char tok[64], id[80];
    for (int n = 2; n <= 40; n++) {
        for (int p = 1; p < n - 1; p++) {
            memset(tok, 'q', (size_t)n);
            tok[p] = '/';
            tok[n] = '\0';
            col *c = candidates(ex, tok, NULL);
            snprintf(id, sizeof id, "file:%s", tok);
            cr_assert(has(c, id), "'/' at %d of %d: got %s", p, n, dump(c));
            col_free(c);
        }
        memset(tok, 'q', (size_t)n);
        strcpy(tok + n, ".py"); /* the dot at n, the token n + 3 long */
        col *c = candidates(ex, tok, NULL);
        snprintf(id, sizeof id, "file:%s", tok);
        cr_assert(has(c, id), "'.' at %d: got %s", n, dump(c));
        col_free(c);
        memset(tok, 'q', (size_t)n);
        tok[n] = '\0';
        c = candidates(ex, tok, NULL);
        for (size_t i = 0; i < c->n; i++) cr_assert(strncmp(c->ids[i], "file:", 5) != 0, "no path in %s", tok);
        col_free(c);
    }
    extract_free(ex);
}

/* An emitter keeps the last workspace it was given, normalized, for the
 * next call: a call with another workspace, or none, must not use it. */
Test(candidates, each_call_with_its_own_workspace)
{
    clarity_config cfg;
    make_cfg(&cfg);
    extractor *ex = new_ex(&cfg);
    static const struct {
        const char *ws, *want;
    } calls[] = {{"/ws1", "file:src/a.py"}, {"/ws1/", "file:src/a.py"}, {"/ws2", "file:/ws1/src/a.py"},
                 {NULL, "file:/ws1/src/a.py"}, {"/ws1/./", "file:src/a.py"}, {"relative", "file:/ws1/src/a.py"},
                 {"/", "file:ws1/src/a.py"}, {"/ws1", "file:src/a.py"}};
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
            col *c = candidates(ex, "see /ws1/src/a.py", calls[i].ws);
            cr_assert(has(c, calls[i].want), "workspace %s: got %s", calls[i].ws ? calls[i].ws : "NULL", dump(c));
            col_free(c);
        }
    extract_free(ex);
}

/* A word of digits only is no keyword; one other byte anywhere in it, at
 * every place of words up to 20 bytes (lanes of eight), makes it one. */
Test(candidates, keywords_not_all_digits)
{
    clarity_config cfg;
    make_cfg(&cfg);
    extractor *ex = new_ex(&cfg);
    char w[32], id[48];
    for (int n = cfg.extraction.min_word_length > 0 ? cfg.extraction.min_word_length : 1; n <= 20; n++) {
        for (int k = 0; k < n; k++) w[k] = (char)('0' + (k * 7 + n) % 10);
        w[n] = '\0';
        col *c = candidates(ex, w, NULL);
        snprintf(id, sizeof id, "keyword:%s", w);
        cr_assert(!has(c, id), "%s: got %s", w, dump(c));
        col_free(c);
        for (int p = 0; p < n; p++) {
            char keep = w[p];
            for (const char *o = "x_Z"; *o; o++) {
                w[p] = *o;
                c = candidates(ex, w, NULL);
                snprintf(id, sizeof id, "keyword:%s", w);
                for (char *q = id; *q; q++) *q = (char)tolower((unsigned char)*q);
                cr_assert(has(c, id), "%s: got %s", w, dump(c));
                col_free(c);
            }
            w[p] = keep;
        }
    }
    extract_free(ex);
}

/* The extensions a path token is known by (code and .md), whatever comes
 * before them, and names near them. */
Test(normalize, file_extensions)
{
    static const struct {
        const char *p;
        int code, md;
    } cases[] = {
        {"a.py", 1, 0},          {"src/a.py", 1, 0},        {"a.svelte", 1, 0},   {"dir.x/a.gradle", 1, 0},
        {"a.PY", 1, 0},          {"NOTES.md", 1, 1},        {"docs/x.md", 1, 1},  {"a..py", 1, 0},
        {".py", 0, 0},           {"x/.py", 0, 0},           {"a.", 0, 0},         {"a.py/", 0, 0},
        {"a.py.orig", 0, 0},     {"a.sveltex", 0, 0},       {"a.xsvelte", 0, 0},  {"self.assertEqual", 0, 0},
        {"abcdefgh.ts", 1, 0},   {"a.mdx", 0, 0},           {"a.m", 1, 0},        {"py", 0, 0},
        {"x.averylongext.py", 1, 0}, {"a/b.c/d", 0, 0},     {"md", 0, 0},         {"a.md.py", 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t n = strlen(cases[i].p);
        cr_assert_eq(ex_has_file_ext(cases[i].p, n), cases[i].code, "%s", cases[i].p);
        cr_assert_eq(ex_has_md_ext(cases[i].p, n), cases[i].md, "%s", cases[i].p);
    }
}

/* The same at every length around the eight bytes the extension is read
 * from: random stems of word bytes, '.', '/' and '-' before endings whose
 * answer is known, against a walk back to the last '.' or '/'. */
Test(normalize, file_extensions_at_every_length)
{
    static const char *const code[] = {"c", "py", "PY", "ts", "json", "swift", "svelte", "gradle", "cmake", "md"};
    static const char *const other[] = {"so", "bak", "MD", "xyz", "pyc", "jsonx", "gradlex", "x", "mdx", ""};
    static const char stem_bytes[] = "ab_Z9./-";
    srand(41);
    char p[64];
    size_t yes = 0;
    for (int round = 0; round < 20000; round++) {
        int known = rand() % 2;
        const char *ext = known ? code[rand() % 10] : other[rand() % 10];
        size_t sl = (size_t)(rand() % 20), n = 0;
        for (size_t i = 0; i < sl; i++) p[n++] = stem_bytes[rand() % (sizeof stem_bytes - 1)];
        if (rand() % 4) p[n++] = '.'; /* else the stem's own last '.' or none */
        memcpy(p + n, ext, strlen(ext));
        n += strlen(ext);
        if (n == 0) continue;
        /* the reference: the last '.' or '/', with at most 6 bytes after it,
         * a '.' with a stem before it that is not a '/' */
        size_t d = n;
        while (d > 0 && p[d - 1] != '.' && p[d - 1] != '/') d--;
        int want = 0, md = 0;
        if (d >= 2 && p[d - 1] == '.' && d < n && n - d <= 6 && p[d - 2] != '/') {
            const char *e = p + d;
            size_t el = n - d;
            md = el == 2 && e[0] == 'm' && e[1] == 'd';
            for (int k = 0; k < 10; k++)
                if (strlen(code[k]) == el && strncasecmp(code[k], e, el) == 0 && strcmp(code[k], "md") != 0) want = 1;
            want |= md;
            /* an ending from neither list (a stem's tail) has no known answer */
            int listed = want;
            for (int k = 0; k < 10; k++)
                if (strlen(other[k]) == el && strcmp(other[k], e) == 0) listed = 1;
            if (!listed) continue;
        }
        yes += (size_t)want;
        cr_assert_eq(ex_has_file_ext(p, n), want, "'%.*s'", (int)n, p);
        cr_assert_eq(ex_has_md_ext(p, n), md, "'%.*s'", (int)n, p);
    }
    cr_assert_gt(yes, 3000);
}

/* ------------------------------------------------------ normalize_path */

static void norm_is(const char *in, const char *ws, const char *want)
{
    char *p = extract_normalize_path(in, strlen(in), ws);
    cr_assert_not_null(p);
    cr_assert_str_eq(p, want, "normalize(%s, %s) = %s, want %s", in, ws ? ws : "NULL", p, want);
    free(p);
}

Test(normalize, paths)
{
    norm_is("./lib/a.py", NULL, "lib/a.py");
    norm_is("src//auth/./x/../session.ts", NULL, "src/auth/session.ts");
    norm_is("src/auth/", NULL, "src/auth");
    norm_is("../up/a.c", NULL, "../up/a.c");
    norm_is("a/../../b.c", NULL, "../b.c");
    norm_is("/../etc/x.c", NULL, "/etc/x.c");
    norm_is("/", NULL, "/");
    norm_is("./", NULL, ".");
    norm_is("/home/u/proj/src/x.c", "/home/u/proj", "src/x.c");
    norm_is("/home/u/proj/src/x.c", "/home/u/proj/", "src/x.c");
    norm_is("/home/u/proj/../proj/src/x.c", "/home/u//proj", "src/x.c");
    norm_is("/home/u/project/x.c", "/home/u/proj", "/home/u/project/x.c");
    norm_is("/home/u/proj", "/home/u/proj", ".");
    norm_is("src/x.c", "/home/u/proj", "src/x.c");
    norm_is("/a/b.c", "/", "a/b.c");
    char *p = extract_normalize_path("src/a.ts/extra", 8, NULL);
    cr_assert_str_eq(p, "src/a.ts");
    free(p);
}

/* A second normalizer, written apart for the test below: the components
 * split on '/', empty and "." ones dropped, ".." taking back a real one
 * (at the root, dropped), then the workspace's prefix taken off. */
static void norm_reference(const char *in, const char *ws, char *out)
{
    char comp[64][64];
    int n = 0, ups = 0, abs = in[0] == '/';
    for (const char *s = in; *s;) {
        while (*s == '/') s++;
        const char *a = s;
        while (*s && *s != '/') s++;
        size_t l = (size_t)(s - a);
        if (l == 0 || (l == 1 && a[0] == '.')) continue;
        if (l == 2 && a[0] == '.' && a[1] == '.') {
            if (n > ups) { n--; continue; }
            if (abs) continue;
            ups++;
        }
        memcpy(comp[n], a, l);
        comp[n++][l] = '\0';
    }
    out[0] = '\0';
    if (abs) strcat(out, "/");
    for (int i = 0; i < n; i++) {
        if (i) strcat(out, "/");
        strcat(out, comp[i]);
    }
    if (!out[0]) strcpy(out, ".");
    if (!abs || !ws) return;
    char w[64];
    norm_reference(ws, NULL, w);
    size_t wl = strlen(w), ol = strlen(out);
    size_t skip = wl == 1 ? 1 : ol >= wl && !memcmp(out, w, wl) ? (ol == wl ? wl : out[wl] == '/' ? wl + 1 : 0) : 0;
    memmove(out, out + skip, ol - skip + 1);
    if (!out[0]) strcpy(out, ".");
}

/* Every path of up to 9 bytes over "a", ".", "/" (and a few workspaces):
 * the paths already normal (copied whole) and the others (rebuilt) give
 * what the second normalizer gives. */
Test(normalize, every_short_path_as_a_second_normalizer_does)
{
    static const char alpha[] = "a./";
    static const char *const wss[] = {NULL, "/a", "/", "/a/./a/"};
    char in[16], want[64];
    size_t checked = 0, normal = 0;
    for (int len = 1; len <= 9; len++) {
        int total = 1;
        for (int k = 0; k < len; k++) total *= 3;
        for (int code = 0; code < total; code++) {
            for (int k = 0, c = code; k < len; k++, c /= 3) in[k] = alpha[c % 3];
            in[len] = '\0';
            for (size_t w = 0; w < sizeof wss / sizeof *wss; w++) {
                char *got = extract_normalize_path(in, (size_t)len, wss[w]);
                cr_assert_not_null(got);
                norm_reference(in, wss[w], want);
                cr_assert_str_eq(got, want, "normalize(%s, %s)", in, wss[w] ? wss[w] : "NULL");
                normal += w == 0 && strcmp(got, in) == 0;
                free(got);
                checked++;
            }
        }
    }
    cr_assert_gt(normal, 1000, "few paths were already normal: the copy went untested");
    cr_assert_gt(checked, 100000);
}

/* -------------------------------------------------------- lookup forms */

Test(lookup, order_and_prefixes)
{
    clarity_config cfg;
    make_cfg(&cfg);
    add_custom(&cfg, "ticket", "JIRA-\\d+");
    extractor *ex = new_ex(&cfg);
    col *c = col_new();
    cr_assert_eq(extract_lookup_forms(ex, " ClaraCore ", NULL, collect, c), CLARITY_OK);
    cr_assert_eq(c->n, 3, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "claracore");
    cr_assert_eq(c->cats[0], CAT_PROJECT);
    cr_assert_str_eq(c->ids[1], "tool:claracore");
    cr_assert_eq(c->cats[1], CAT_TOOL);
    cr_assert_str_eq(c->ids[2], "keyword:claracore");
    cr_assert_eq(c->cats[2], CAT_KEYWORD);
    col_free(c);

    c = col_new();
    extract_lookup_forms(ex, "SOUL.md", NULL, collect, c);
    cr_assert_eq(c->n, 5, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "soul.md");
    cr_assert_str_eq(c->ids[1], "file:SOUL.md");
    cr_assert_str_eq(c->ids[2], "file:soul.md");
    cr_assert_str_eq(c->ids[3], "tool:soul.md");
    cr_assert_str_eq(c->ids[4], "keyword:soul.md");
    col_free(c);

    c = col_new();
    extract_lookup_forms(ex, "focus-engine", NULL, collect, c);
    cr_assert_str_eq(c->ids[0], "focus_engine");
    cr_assert_str_eq(c->ids[1], "tool:focus-engine");
    col_free(c);

    c = col_new();
    extract_lookup_forms(ex, "/ws/./src/a.ts", "/ws", collect, c);
    cr_assert_str_eq(c->ids[1], "file:src/a.ts");
    col_free(c);

    c = col_new();
    extract_lookup_forms(ex, "tool:web_search", NULL, collect, c);
    cr_assert_eq(c->n, 1, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "tool:web_search");
    cr_assert_eq(c->cats[0], CAT_TOOL);
    col_free(c);

    c = col_new();
    extract_lookup_forms(ex, "file:/ws/lib/../src/b.py", "/ws", collect, c);
    cr_assert_eq(c->n, 1, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "file:src/b.py");
    col_free(c);

    c = col_new();
    extract_lookup_forms(ex, "ticket:jira-5", NULL, collect, c);
    cr_assert_eq(c->n, 1, "got: %s", dump(c));
    cr_assert_str_eq(c->ids[0], "ticket:jira-5");
    cr_assert_eq(c->cats[0], CAT_CUSTOM);
    col_free(c);

    c = col_new(); /* unknown prefix: an ordinary name */
    extract_lookup_forms(ex, "foo:bar", NULL, collect, c);
    cr_assert_str_eq(c->ids[0], "foo:bar");
    cr_assert_eq(c->cats[0], CAT_PROJECT);
    col_free(c);
    extract_free(ex);
}

/* -------------------------------------------------------------- reuse */

/* An extractor keeps each call's sets and buffers for the next call
 * (cleared, within bounds).  A call must give what it gives on a fresh
 * extractor whatever came before: calls over texts of every size, one
 * that grew its sets past what is kept, and one its callback stopped
 * half-way. */
typedef struct stopper {
    int left;
} stopper;

static int stop_soon(void *ud, const char *id, int cat)
{
    stopper *s = ud;
    return --s->left <= 0;
}

/* log_id into a buf: the large round reports some 100,000 ids */
static int buf_id(void *ud, const char *id, int cat)
{
    buf_putc(ud, (char)('0' + cat));
    buf_puts(ud, id);
    buf_putc(ud, '|');
    return 0;
}

static int track_id(void *ud, const char *id, int cat)
{
    tracker_touch(ud, id, cat, 0);
    return 0;
}

/* Every kind of call on text, logged into out[0..4). */
static void all_calls(const extractor *ex, const char *t, size_t len, const char *json, const name_filter *nf,
                      buf out[4])
{
    for (int k = 0; k < 4; k++) buf_init(&out[k]);
    cr_assert_eq(extract_mentions(ex, t, len, "/ws", buf_id, &out[0]), 0);
    cr_assert_eq(extract_candidates(ex, t, len, "/ws", buf_id, &out[1]), 0);
    extract_filter f = {nf, NULL};
    cr_assert_eq(extract_candidates_filtered(ex, t, len, "/ws", &f, buf_id, &out[2]), 0);
    cr_assert_eq(extract_tool_call(ex, json, "/ws", &f, buf_id, buf_id, &out[3]), 0);
    for (int k = 0; k < 4; k++) cr_assert(!buf_failed(&out[k]));
}

Test(reuse, a_call_does_not_depend_on_the_calls_before_it, .timeout = 120)
{
    static const char *const pieces[] = {
        "ClaraCore", "focus-engine", "focus", "Engine", "web_search", "Read", "src/auth/session.ts",
        "/ws/src/auth/session.ts", "./lib/x.py", "SOUL.md", "memory/active-context.md", "refactoring",
        "refactorings", "the", "and", "e.g.", "end.", "a-b-c", "docs/guide.md", "--flag", "state.",
        "(src/a.c)", "key:value", "exec", "BrowserTabState", "x1", "Word0001", "word0001"};
    const size_t np = sizeof pieces / sizeof *pieces;
    static const char *const cfgs[] = {"{}", "{\"extraction\":{\"minWordLength\":1,\"maxKeywordsPerMessage\":64,"
                                             "\"customPatterns\":[{\"name\":\"ticket\",\"pattern\":\"[A-Z]+-\\\\d+\"}]}}"};
    extractor *warm[2];
    extractors_of(cfgs, 2, warm);
    tracker t;
    tracker_init(&t, 16);
    for (size_t i = 0; i < np; i += 2) extract_candidates(warm[0], pieces[i], strlen(pieces[i]), "/ws", track_id, &t);

    size_t cap = 1u << 20;
    char *text = malloc(cap), *json = malloc(cap + 64);
    cr_assert(text && json);
    unsigned rng = 7;
    for (int round = 0; round < 48; round++) {
        size_t len = 0;
        if (round == 20) { /* many distinct words: the sets grow past what is kept */
            for (int i = 0; len + 40 < cap; i++) len += (size_t)sprintf(text + len, "w%06dx TIX-%d ", i, i);
        } else {
            size_t want = round % 3 == 0 ? 40 : round % 3 == 1 ? 900 : 6000;
            while (len + 40 < want) {
                rng = rng * 1103515245u + 12345u;
                const char *p = pieces[(rng >> 8) % np];
                len += (size_t)sprintf(text + len, "%s%s", p, (rng >> 20) % 5 ? " " : "\n");
            }
        }
        text[len] = '\0';
        snprintf(json, cap + 64, "{\"file_path\":\"%s\",\"content\":\"%.*s\"}", pieces[round % 8],
                 (int)(len < 2000 ? len : 2000), text);
        for (char *q = json + 20; *q; q++)
            if (*q == '\n') *q = ' ';
        for (int k = 0; k < 2; k++) {
            buf a[4], b[4];
            all_calls(warm[k], text, len, json, &t.names, a);
            extractor *fresh;
            extractors_of(cfgs + k, 1, &fresh);
            all_calls(fresh, text, len, json, &t.names, b);
            extract_free(fresh);
            for (int c = 0; c < 4; c++) {
                cr_assert(a[c].len == b[c].len && (!a[c].len || memcmp(a[c].p, b[c].p, a[c].len) == 0),
                          "round %d, config %d, call %d: %zu and %zu bytes of ids", round, k, c, a[c].len,
                          b[c].len);
                buf_free(&a[c]);
                buf_free(&b[c]);
            }
            /* a call stopped early leaves its sets half-filled */
            stopper s = {1 + round % 4};
            extract_mentions(warm[k], text, len, "/ws", stop_soon, &s);
            s.left = 2;
            extract_candidates(warm[k], text, len, "/ws", stop_soon, &s);
        }
    }
    free(text);
    free(json);
    tracker_free(&t);
    for (int k = 0; k < 2; k++) extract_free(warm[k]);
}

/* What jansson gives for the first of keys the document holds as a string
 * member (a copy; NULL when none): the oracle of extract_json_member. */
static char *member_by_jansson(const char *json, const char *const *keys, size_t nk)
{
    json_t *root = json_loads(json, 0, NULL);
    char *val = NULL;
    for (size_t k = 0; k < nk && !val; k++) {
        json_t *m = json_object_get(root, keys[k]);
        if (json_is_string(m)) val = strdup(json_string_value(m));
    }
    json_decref(root);
    return val;
}

/* A tool call's member without a tree: the value jansson gives, for the
 * first key present, only at the top level; escapes decoded; documents the
 * scanner is unsure of (\u escapes, non-ASCII, repeated keys, bad JSON)
 * decided by jansson. */
Test(extract, a_member_of_tool_arguments_is_what_jansson_reads)
{
    static const char *const docs[] = {
        "{\"file_path\":\"src/a.py\",\"old_str\":\"x\"}",
        "{\"path\":\"b.py\",\"file_path\":\"a.py\"}",
        "{\"file_path\":\"a.py\",\"path\":\"b.py\"}",
        "{\"edits\":{\"file_path\":\"nested.py\"},\"path\":\"top.py\"}",
        "{\"edits\":[{\"file_path\":\"nested.py\"}]}",
        "{\"file_path\":[\"in an array\"],\"path\":\"p.py\"}",
        "{\"file_path\":7,\"filePath\":\"camel.py\"}",
        "{\"file_path\":\"tab\\there \\\"quoted\\\" back\\\\slash\"}",
        "{\"file_path\":\"\\u00e9t\\u00e9.py\"}",
        "{\"file_path\":\"caf\xc3\xa9.py\"}",
        "{\"file_path\":\"first.py\",\"file_path\":\"second.py\"}",
        "{\"file_path\":\"unterminated.py\"",
        "[\"file_path\",\"a.py\"]",
        "\"file_path\"",
        "{}",
        "",
        "{\"command\":\"view\",\"path\":\"/ws/x.py\"}",
        "{\"cmd\":\"pytest -q\"}",
        "{\"command\":\"\",\"cmd\":\"make\"}",
        "  {  \"path\" :  \"spaced.py\"  }  ",
    };
    static const char *const keys[] = {"file_path", "path", "notebook_path", "filePath", "command", "cmd"};
    buf out;
    buf_init(&out);
    for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++)
        for (size_t first = 0; first < 6; first++) /* every suffix of the key list */
            for (size_t nk = 1; first + nk <= 6; nk++) {
                char *want = member_by_jansson(docs[d], keys + first, nk);
                int got = extract_json_member(docs[d], keys + first, nk, &out);
                cr_assert_eq(got, want != NULL, "%s, keys %zu+%zu: %d, jansson %d", docs[d], first, nk, got,
                             want != NULL);
                if (want) cr_assert_str_eq(out.p, want, "%s, keys %zu+%zu", docs[d], first, nk);
                free(want);
            }
    const char *k1[] = {"file_path"};
    cr_assert_eq(extract_json_member("{\"edits\":{\"file_path\":\"n.py\"}}", k1, 1, &out), 0, "a nested member");
    cr_assert_eq(extract_json_member("{\"file_path\":\"a\\nb\"}", k1, 1, &out), 1);
    cr_assert_str_eq(out.p, "a\nb");
    cr_assert_eq(extract_json_member(NULL, k1, 1, &out), 0);
    buf_free(&out);
}
