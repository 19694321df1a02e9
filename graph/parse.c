/* parse.c: symbols, imports and call sites of one source file.
 *
 * With a tree-sitter grammar (graph/grammars.h) a per-language query
 * captures definitions (@def.<kind> around @name), imports (@import,
 * Python's whole from-import statement as @import.from, Rust's `mod x;` as
 * @import.mod, require("x") as @require.fn + @require.arg) and callees
 * (@call).  Without one (or with GRAPH_PARSER_REGEX) line-anchored PCRE2
 * patterns find top-level definitions and imports; Python definitions get
 * their end line from indentation.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <pcre2.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <tree_sitter/api.h>

#include "grammars.h"
#include "graph.h"

#define MAX_FILE_SYMS 20000
#define MAX_FILE_CALLS 20000

/* ---- queries ------------------------------------------------------------ */

static const char q_python[] =
    "(module (function_definition name: (identifier) @name) @def.function)\n"
    "(module (decorated_definition definition: (function_definition name: (identifier) @name)) "
    "@def.function)\n"
    "(module (class_definition name: (identifier) @name) @def.class)\n"
    "(module (decorated_definition definition: (class_definition name: (identifier) @name)) "
    "@def.class)\n"
    "(class_definition body: (block (function_definition name: (identifier) @name) @def.method))\n"
    "(class_definition body: (block (decorated_definition definition: (function_definition name: "
    "(identifier) @name)) @def.method))\n"
    "(module (expression_statement (assignment left: (identifier) @name)) @def.variable)\n"
    "(import_statement name: (dotted_name) @import)\n"
    "(import_statement name: (aliased_import name: (dotted_name) @import))\n"
    "(import_from_statement) @import.from\n"
    "(call function: (identifier) @call)\n"
    "(call function: (attribute attribute: (identifier) @call))\n";

static const char q_js_common[] =
    "(program (function_declaration name: (identifier) @name) @def.function)\n"
    "(program (generator_function_declaration name: (identifier) @name) @def.function)\n"
    "(program (class_declaration name: (_) @name) @def.class)\n"
    "(program (lexical_declaration (variable_declarator name: (identifier) @name)) @def.variable)\n"
    "(program (variable_declaration (variable_declarator name: (identifier) @name)) @def.variable)\n"
    "(export_statement declaration: (function_declaration name: (identifier) @name) @def.function) "
    "@export\n"
    "(export_statement declaration: (generator_function_declaration name: (identifier) @name) "
    "@def.function) @export\n"
    "(export_statement declaration: (class_declaration name: (_) @name) @def.class) @export\n"
    "(export_statement declaration: (lexical_declaration (variable_declarator name: (identifier) "
    "@name)) @def.variable) @export\n"
    "(method_definition name: (_) @name) @def.method\n"
    "(import_statement source: (string (string_fragment) @import))\n"
    "(export_statement source: (string (string_fragment) @import))\n"
    "(call_expression function: (identifier) @require.fn arguments: (arguments (string "
    "(string_fragment) @require.arg)))\n"
    "(call_expression function: (identifier) @call)\n"
    "(call_expression function: (member_expression property: (property_identifier) @call))\n";

static const char q_ts_extra[] =
    "(program (interface_declaration name: (_) @name) @def.type)\n"
    "(program (type_alias_declaration name: (_) @name) @def.type)\n"
    "(program (enum_declaration name: (_) @name) @def.type)\n"
    "(program (abstract_class_declaration name: (_) @name) @def.class)\n"
    "(export_statement declaration: (interface_declaration name: (_) @name) @def.type) @export\n"
    "(export_statement declaration: (type_alias_declaration name: (_) @name) @def.type) @export\n"
    "(export_statement declaration: (enum_declaration name: (_) @name) @def.type) @export\n"
    "(export_statement declaration: (abstract_class_declaration name: (_) @name) @def.class) "
    "@export\n";

static const char q_go[] =
    "(function_declaration name: (identifier) @name) @def.function\n"
    "(method_declaration name: (field_identifier) @name) @def.method\n"
    "(type_declaration (type_spec name: (type_identifier) @name) @def.type)\n"
    "(source_file (const_declaration (const_spec name: (identifier) @name) @def.variable))\n"
    "(source_file (var_declaration (var_spec name: (identifier) @name) @def.variable))\n"
    "(import_spec path: (interpreted_string_literal) @import)\n"
    "(call_expression function: (identifier) @call)\n"
    "(call_expression function: (selector_expression field: (field_identifier) @call))\n";

static const char q_rust[] =
    "(function_item name: (identifier) @name) @def.function\n"
    "(struct_item name: (type_identifier) @name) @def.class\n"
    "(enum_item name: (type_identifier) @name) @def.type\n"
    "(trait_item name: (type_identifier) @name) @def.type\n"
    "(type_item name: (type_identifier) @name) @def.type\n"
    "(const_item name: (identifier) @name) @def.variable\n"
    "(static_item name: (identifier) @name) @def.variable\n"
    "(macro_definition name: (identifier) @name) @def.macro\n"
    "(mod_item name: (identifier) @name body: (_)) @def.module\n"
    "(mod_item name: (identifier) @import.mod !body)\n"
    "(use_declaration argument: (_) @import)\n"
    "(call_expression function: (identifier) @call)\n"
    "(call_expression function: (scoped_identifier name: (identifier) @call))\n"
    "(call_expression function: (field_expression field: (field_identifier) @call))\n";

static const char q_java[] =
    "(class_declaration name: (identifier) @name) @def.class\n"
    "(interface_declaration name: (identifier) @name) @def.type\n"
    "(enum_declaration name: (identifier) @name) @def.type\n"
    "(record_declaration name: (identifier) @name) @def.class\n"
    "(method_declaration name: (identifier) @name) @def.method\n"
    "(import_declaration (scoped_identifier) @import)\n"
    "(method_invocation name: (identifier) @call)\n"
    "(object_creation_expression type: (type_identifier) @call)\n";

static const char q_c[] =
    "(translation_unit (function_definition declarator: (function_declarator declarator: "
    "(identifier) @name)) @def.function)\n"
    "(translation_unit (function_definition declarator: (pointer_declarator declarator: "
    "(function_declarator declarator: (identifier) @name))) @def.function)\n"
    "(translation_unit (declaration declarator: (function_declarator declarator: (identifier) "
    "@name)) @def.function)\n"
    "(translation_unit (declaration declarator: (pointer_declarator declarator: "
    "(function_declarator declarator: (identifier) @name))) @def.function)\n"
    "(struct_specifier name: (type_identifier) @name body: (_)) @def.class\n"
    "(type_definition declarator: (type_identifier) @name) @def.type\n"
    "(preproc_def name: (identifier) @name) @def.macro\n"
    "(preproc_function_def name: (identifier) @name) @def.macro\n"
    "(preproc_include path: (string_literal) @import)\n"
    "(call_expression function: (identifier) @call)\n";

static const char *grammar_name(int lang)
{
    switch (lang) {
    case LANG_PYTHON: return "python";
    case LANG_JS: return "javascript";
    case LANG_TS: return "typescript";
    case LANG_TSX: return "tsx";
    case LANG_GO: return "go";
    case LANG_RUST: return "rust";
    case LANG_JAVA: return "java";
    case LANG_C: return "c";
    default: return NULL;
    }
}

static const TSLanguage *grammar_of(int lang)
{
    const char *name = grammar_name(lang);
    if (!name) return NULL;
    for (const graph_grammar *g = graph_grammar_table; g->name; g++) {
        if (strcmp(g->name, name) == 0) {
            const TSLanguage *l = g->language();
            uint32_t v = ts_language_version(l);
            if (v < TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION || v > TREE_SITTER_LANGUAGE_VERSION)
                return NULL;
            return l;
        }
    }
    return NULL;
}

int graph_has_grammar(int lang) { return grammar_of(lang) != NULL; }

/* ---- regex fallback --------------------------------------------------- */

enum { RX_DEF, RX_IMPORT, RX_PYFROM };

typedef struct rx_pat {
    int lang;
    int type;
    int kind;  /* for RX_DEF */
    int group; /* the name / spec */
    int export_group; /* a group that, when set, marks it exported (0 = by language rule) */
    const char *re;
} rx_pat;

static const rx_pat rx_pats[] = {
    {LANG_PYTHON, RX_DEF, SYM_FUNCTION, 1, 0, "^(?:async[ \\t]+)?def[ \\t]+(\\w+)"},
    {LANG_PYTHON, RX_DEF, SYM_CLASS, 1, 0, "^class[ \\t]+(\\w+)"},
    {LANG_PYTHON, RX_DEF, SYM_METHOD, 1, 0, "^[ \\t]{1,8}(?:async[ \\t]+)?def[ \\t]+(\\w+)"},
    {LANG_PYTHON, RX_DEF, SYM_VARIABLE, 1, 0, "^([A-Za-z_]\\w*)[ \\t]*(?::[^=\\n]*)?=[^=]"},
    {LANG_PYTHON, RX_IMPORT, 0, 1, 0, "^[ \\t]*import[ \\t]+([\\w.]+)"},
    {LANG_PYTHON, RX_PYFROM, 0, 1, 0,
     "^[ \\t]*from[ \\t]+(\\.*[\\w.]*)[ \\t]+import[ \\t]+(?:\\(([^)]*)\\)|([\\w, \\t]+))"},
    {LANG_JS, RX_DEF, SYM_FUNCTION, 2, 1,
     "^(export[ \\t]+)?(?:default[ \\t]+)?(?:async[ \\t]+)?function\\*?[ \\t]+(\\w+)"},
    {LANG_JS, RX_DEF, SYM_CLASS, 2, 1,
     "^(export[ \\t]+)?(?:default[ \\t]+)?(?:abstract[ \\t]+)?class[ \\t]+(\\w+)"},
    {LANG_JS, RX_DEF, SYM_VARIABLE, 2, 1, "^(export[ \\t]+)?(?:const|let|var)[ \\t]+(\\w+)"},
    {LANG_JS, RX_DEF, SYM_TYPE, 2, 1,
     "^(export[ \\t]+)?(?:declare[ \\t]+)?(?:interface|type|enum)[ \\t]+(\\w+)"},
    {LANG_JS, RX_IMPORT, 0, 1, 0, "(?:from|import)[ \\t]+['\"]([^'\"\\n]+)['\"]"},
    {LANG_JS, RX_IMPORT, 0, 1, 0, "\\brequire\\([ \\t]*['\"]([^'\"\\n]+)['\"][ \\t]*\\)"},
    {LANG_GO, RX_DEF, SYM_FUNCTION, 1, 0, "^func[ \\t]+(?:\\([^)]*\\)[ \\t]*)?(\\w+)"},
    {LANG_GO, RX_DEF, SYM_TYPE, 1, 0, "^type[ \\t]+(\\w+)"},
    {LANG_GO, RX_IMPORT, 0, 1, 0, "^[ \\t]*(?:import[ \\t]+)?(?:\\w+[ \\t]+)?\"([\\w./-]+)\"[ \\t]*$"},
    {LANG_RUST, RX_DEF, SYM_FUNCTION, 2, 1,
     "^[ \\t]*(pub(?:\\([^)]*\\))?[ \\t]+)?(?:const[ \\t]+)?(?:async[ \\t]+)?(?:unsafe[ \\t]+)?"
     "fn[ \\t]+(\\w+)"},
    {LANG_RUST, RX_DEF, SYM_CLASS, 2, 1, "^[ \\t]*(pub(?:\\([^)]*\\))?[ \\t]+)?struct[ \\t]+(\\w+)"},
    {LANG_RUST, RX_DEF, SYM_TYPE, 2, 1,
     "^[ \\t]*(pub(?:\\([^)]*\\))?[ \\t]+)?(?:enum|trait|type)[ \\t]+(\\w+)"},
    {LANG_RUST, RX_IMPORT, 0, 1, 0, "^[ \\t]*(?:pub(?:\\([^)]*\\))?[ \\t]+)?use[ \\t]+([^;]+);"},
    {LANG_RUST, RX_IMPORT, 0, 1, 0, "^[ \\t]*(?:pub(?:\\([^)]*\\))?[ \\t]+)?mod[ \\t]+(\\w+)[ \\t]*;"},
    {LANG_JAVA, RX_DEF, SYM_CLASS, 2, 1,
     "^[ \\t]*(public[ \\t]+)?(?:(?:abstract|final|static|private|protected)[ \\t]+)*"
     "(?:class|record)[ \\t]+(\\w+)"},
    {LANG_JAVA, RX_DEF, SYM_TYPE, 2, 1,
     "^[ \\t]*(public[ \\t]+)?(?:(?:abstract|static|private|protected)[ \\t]+)*"
     "(?:interface|enum)[ \\t]+(\\w+)"},
    {LANG_JAVA, RX_DEF, SYM_METHOD, 2, 1,
     "^[ \\t]+(public[ \\t]+)?(?:(?:protected|private|static|final|abstract|synchronized)[ \\t]+)*"
     "[\\w<>\\[\\],.? ]+[ \\t]+(\\w+)[ \\t]*\\([^)]*\\)[ \\t]*(?:throws[ \\t][^{;]*)?(?:\\{|$)"},
    {LANG_JAVA, RX_IMPORT, 0, 1, 0, "^import[ \\t]+(?:static[ \\t]+)?([\\w.]+)"},
    {LANG_C, RX_DEF, SYM_FUNCTION, 2, 0,
     "^(static[ \\t]+)?(?:inline[ \\t]+)?[A-Za-z_][\\w \\t\\*]*?[ \\t\\*](\\w+)[ \\t]*\\([^)]*\\)[ \\t]*(?:\\{|$)"},
    {LANG_C, RX_DEF, SYM_CLASS, 1, 0, "^(?:typedef[ \\t]+)?struct[ \\t]+(\\w+)[ \\t]*\\{"},
    {LANG_C, RX_DEF, SYM_MACRO, 1, 0, "^#[ \\t]*define[ \\t]+(\\w+)"},
    {LANG_C, RX_IMPORT, 0, 1, 0, "^#[ \\t]*include[ \\t]+\"([^\"]+)\""},
};
#define N_RX (sizeof rx_pats / sizeof *rx_pats)

/* Compiled queries are shared by every parser context of the process:
 * compiling Python's takes longer than parsing a typical changed file (it
 * was 8 % of a one-commit refresh, once per parse thread).  A TSQuery is
 * read-only once made; each context has its own cursor.  They are freed by
 * graph_parse_release when no context is alive. */
static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static TSQuery *q_shared[LANG__COUNT];
static int q_shared_tried[LANG__COUNT];
static int q_users;

struct graph_parser_ctx {
    int parser;
    TSParser *ts;
    TSQueryCursor *cur;
    TSQuery *q[LANG__COUNT]; /* borrowed from q_shared */
    int q_tried[LANG__COUNT];
    pcre2_code *rx[N_RX];
    pcre2_match_data *md;
};

graph_parser_ctx *graph_parser_new(int parser)
{
    graph_parser_ctx *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->parser = parser;
    p->md = pcre2_match_data_create(16, NULL);
    if (!p->md) {
        free(p);
        return NULL;
    }
    pthread_mutex_lock(&q_mu);
    q_users++;
    pthread_mutex_unlock(&q_mu);
    return p;
}

void graph_parse_release(void)
{
    pthread_mutex_lock(&q_mu);
    for (int i = 0; q_users == 0 && i < LANG__COUNT; i++) {
        if (q_shared[i]) ts_query_delete(q_shared[i]);
        q_shared[i] = NULL;
        q_shared_tried[i] = 0;
    }
    pthread_mutex_unlock(&q_mu);
}

void graph_parser_free(graph_parser_ctx *p)
{
    if (!p) return;
    pthread_mutex_lock(&q_mu);
    q_users--;
    pthread_mutex_unlock(&q_mu);
    if (p->cur) ts_query_cursor_delete(p->cur);
    if (p->ts) ts_parser_delete(p->ts);
    for (size_t i = 0; i < N_RX; i++) pcre2_code_free(p->rx[i]);
    pcre2_match_data_free(p->md);
    free(p);
}

void graph_file_clear(gfile *f)
{
    for (size_t i = 0; i < f->n_syms; i++) free(f->syms[i].name);
    for (size_t i = 0; i < f->n_imports; i++) free(f->imports[i].spec);
    for (size_t i = 0; i < f->n_calls; i++) free(f->calls[i].name);
    free(f->syms);
    free(f->imports);
    free(f->calls);
    f->syms = NULL;
    f->imports = NULL;
    f->calls = NULL;
    f->n_syms = f->cap_syms = f->n_imports = f->cap_imports = f->n_calls = f->cap_calls = 0;
}

static int add_sym(gfile *f, const char *name, size_t n, int kind, int exported, uint32_t line,
                   uint32_t end)
{
    if (n == 0 || n > 200 || f->n_syms >= MAX_FILE_SYMS) return 0;
    if (f->n_syms == f->cap_syms) {
        size_t cap = f->cap_syms ? f->cap_syms * 2 : 16;
        gsym *s = realloc(f->syms, cap * sizeof *s);
        if (!s) return -1;
        f->syms = s;
        f->cap_syms = cap;
    }
    char *copy = util_strndup(name, n);
    if (!copy) return -1;
    f->syms[f->n_syms++] = (gsym){copy, (uint8_t)kind, (uint8_t)exported, line, end};
    return 0;
}

static int add_import(gfile *f, const char *spec, size_t n)
{
    while (n && isspace((unsigned char)*spec)) spec++, n--;
    while (n && isspace((unsigned char)spec[n - 1])) n--;
    if (n == 0 || n > 400) return 0;
    if (f->n_imports == f->cap_imports) {
        size_t cap = f->cap_imports ? f->cap_imports * 2 : 16;
        gimport *s = realloc(f->imports, cap * sizeof *s);
        if (!s) return -1;
        f->imports = s;
        f->cap_imports = cap;
    }
    char *copy = util_strndup(spec, n);
    if (!copy) return -1;
    f->imports[f->n_imports++] = (gimport){copy, -1};
    return 0;
}

/* Call sites are kept once per (callee, line), via a small open hash: impact
 * (intel.c) needs every site; the index reads distinct names per file. */
typedef struct call_set {
    uint64_t *h;
    size_t cap;
} call_set;

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h | 1;
}

static int add_call(gfile *f, call_set *cs, const char *name, size_t n, uint32_t line)
{
    if (n == 0 || n > 100 || f->n_calls >= MAX_FILE_CALLS) return 0;
    if ((f->n_calls + 1) * 2 > cs->cap) {
        size_t cap = cs->cap ? cs->cap * 2 : 64;
        uint64_t *h = calloc(cap, sizeof *h);
        if (!h) return -1;
        for (size_t i = 0; i < cs->cap; i++) {
            if (!cs->h[i]) continue;
            size_t j = cs->h[i] & (cap - 1);
            while (h[j]) j = (j + 1) & (cap - 1);
            h[j] = cs->h[i];
        }
        free(cs->h);
        cs->h = h;
        cs->cap = cap;
    }
    uint64_t k = (fnv(name, n) ^ ((uint64_t)line * 0x9E3779B97F4A7C15ULL)) | 1;
    size_t j = k & (cs->cap - 1);
    while (cs->h[j]) {
        if (cs->h[j] == k) return 0;
        j = (j + 1) & (cs->cap - 1);
    }
    cs->h[j] = k;
    if (f->n_calls == f->cap_calls) {
        size_t cap = f->cap_calls ? f->cap_calls * 2 : 32;
        gcall *c = realloc(f->calls, cap * sizeof *c);
        if (!c) return -1;
        f->calls = c;
        f->cap_calls = cap;
    }
    char *copy = util_strndup(name, n);
    if (!copy) return -1;
    f->calls[f->n_calls++] = (gcall){copy, line};
    return 0;
}

/* ---- tree-sitter path ------------------------------------------------- */

static TSQuery *compile_query(int lang, const TSLanguage *L);

static TSQuery *query_for(graph_parser_ctx *p, int lang, const TSLanguage *L)
{
    if (p->q_tried[lang]) return p->q[lang];
    p->q_tried[lang] = 1;
    pthread_mutex_lock(&q_mu);
    if (!q_shared_tried[lang]) {
        q_shared_tried[lang] = 1;
        q_shared[lang] = compile_query(lang, L);
    }
    p->q[lang] = q_shared[lang];
    pthread_mutex_unlock(&q_mu);
    return p->q[lang];
}

static TSQuery *compile_query(int lang, const TSLanguage *L)
{
    TSQuery *q = NULL;
    buf src;
    buf_init(&src);
    switch (lang) {
    case LANG_PYTHON: buf_puts(&src, q_python); break;
    case LANG_JS: buf_puts(&src, q_js_common); break;
    case LANG_TS:
    case LANG_TSX:
        buf_puts(&src, q_js_common);
        buf_puts(&src, q_ts_extra);
        break;
    case LANG_GO: buf_puts(&src, q_go); break;
    case LANG_RUST: buf_puts(&src, q_rust); break;
    case LANG_JAVA: buf_puts(&src, q_java); break;
    case LANG_C: buf_puts(&src, q_c); break;
    default: break;
    }
    if (src.len && !buf_failed(&src)) {
        uint32_t off;
        TSQueryError qe;
        q = ts_query_new(L, src.p, (uint32_t)src.len, &off, &qe);
    }
    buf_free(&src);
    return q;
}

static int node_text_eq(TSNode n, const char *src, const char *word)
{
    uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
    size_t l = strlen(word);
    return b - a == l && memcmp(src + a, word, l) == 0;
}

static int ts_exported(int lang, TSNode def, const char *src, const char *name, int marked)
{
    switch (lang) {
    case LANG_PYTHON: return name[0] != '_';
    case LANG_GO: return isupper((unsigned char)name[0]) != 0;
    case LANG_JS:
    case LANG_TS:
    case LANG_TSX: return marked;
    case LANG_RUST: {
        uint32_t n = ts_node_named_child_count(def);
        for (uint32_t i = 0; i < n && i < 3; i++) {
            TSNode c = ts_node_named_child(def, i);
            if (strcmp(ts_node_type(c), "visibility_modifier") == 0) return 1;
        }
        return 0;
    }
    case LANG_JAVA: {
        TSNode c = ts_node_named_child(def, 0);
        if (!ts_node_is_null(c) && strcmp(ts_node_type(c), "modifiers") == 0) {
            uint32_t a = ts_node_start_byte(c), b = ts_node_end_byte(c);
            return memmem(src + a, b - a, "public", 6) != NULL;
        }
        return 0;
    }
    case LANG_C: {
        uint32_t a = ts_node_start_byte(def);
        return strncmp(src + a, "static", 6) != 0;
    }
    default: return 1;
    }
}

/* from X import a, b as c: imports "X.a", "X.b" (resolution falls back to X). */
static int python_from(gfile *f, TSNode stmt, const char *src)
{
    TSNode mod = ts_node_child_by_field_name(stmt, "module_name", 11);
    if (ts_node_is_null(mod)) return 0;
    uint32_t ma = ts_node_start_byte(mod), mb = ts_node_end_byte(mod);
    TSTreeCursor cur = ts_tree_cursor_new(stmt);
    int rc = 0, names = 0;
    char tmp[512];
    if (ts_tree_cursor_goto_first_child(&cur)) {
        do {
            const char *field = ts_tree_cursor_current_field_name(&cur);
            if (!field || strcmp(field, "name") != 0) continue;
            TSNode n = ts_tree_cursor_current_node(&cur);
            if (strcmp(ts_node_type(n), "aliased_import") == 0)
                n = ts_node_child_by_field_name(n, "name", 4);
            if (ts_node_is_null(n)) continue;
            uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
            int len = snprintf(tmp, sizeof tmp, "%.*s%s%.*s", (int)(mb - ma), src + ma,
                               src[mb - 1] == '.' ? "" : ".", (int)(b - a), src + a);
            if (len > 0 && (size_t)len < sizeof tmp && add_import(f, tmp, (size_t)len)) rc = -1;
            names++;
        } while (rc == 0 && ts_tree_cursor_goto_next_sibling(&cur));
    }
    ts_tree_cursor_delete(&cur);
    if (rc == 0 && names == 0) rc = add_import(f, src + ma, mb - ma); /* from x import * */
    return rc;
}

static int parse_ts(graph_parser_ctx *p, gfile *f, const char *src, size_t len, const TSLanguage *L)
{
    if (!p->ts && !(p->ts = ts_parser_new())) return -1;
    if (!p->cur && !(p->cur = ts_query_cursor_new())) return -1;
    TSQuery *q = query_for(p, f->lang, L);
    if (!q || !ts_parser_set_language(p->ts, L)) return 1; /* regex instead */
    ts_parser_set_timeout_micros(p->ts, 2000000);
    TSTree *tree = ts_parser_parse_string(p->ts, NULL, src, (uint32_t)len);
    if (!tree) {
        ts_parser_reset(p->ts);
        return 1;
    }
    ts_query_cursor_exec(p->cur, q, ts_tree_root_node(tree));
    TSQueryMatch m;
    call_set cs = {NULL, 0};
    int rc = 0;
    while (rc == 0 && ts_query_cursor_next_match(p->cur, &m)) {
        TSNode def = {0}, name = {0}, req_fn = {0}, req_arg = {0};
        int kind = -1, have_def = 0, have_name = 0, marked = 0, req = 0;
        for (uint16_t i = 0; i < m.capture_count && rc == 0; i++) {
            uint32_t cl;
            const char *cn = ts_query_capture_name_for_id(q, m.captures[i].index, &cl);
            TSNode n = m.captures[i].node;
            uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
            if (strncmp(cn, "def.", 4) == 0) {
                def = n;
                have_def = 1;
                const char *k = cn + 4;
                kind = strcmp(k, "class") == 0      ? SYM_CLASS
                       : strcmp(k, "method") == 0   ? SYM_METHOD
                       : strcmp(k, "variable") == 0 ? SYM_VARIABLE
                       : strcmp(k, "type") == 0     ? SYM_TYPE
                       : strcmp(k, "module") == 0   ? SYM_MODULE
                       : strcmp(k, "macro") == 0    ? SYM_MACRO
                                                    : SYM_FUNCTION;
            } else if (strcmp(cn, "name") == 0) {
                name = n;
                have_name = 1;
            } else if (strcmp(cn, "export") == 0) {
                marked = 1;
            } else if (strcmp(cn, "import") == 0 || strcmp(cn, "import.mod") == 0) {
                if (f->lang == LANG_GO || f->lang == LANG_C) {
                    if (b - a >= 2) rc = add_import(f, src + a + 1, b - a - 2);
                } else if (cn[6] == '.') {
                    char tmp[256];
                    int l = snprintf(tmp, sizeof tmp, "mod %.*s", (int)(b - a), src + a);
                    if (l > 0 && (size_t)l < sizeof tmp) rc = add_import(f, tmp, (size_t)l);
                } else {
                    rc = add_import(f, src + a, b - a);
                }
            } else if (strcmp(cn, "import.from") == 0) {
                rc = python_from(f, n, src);
            } else if (strcmp(cn, "require.fn") == 0) {
                req_fn = n;
                req |= 1;
            } else if (strcmp(cn, "require.arg") == 0) {
                req_arg = n;
                req |= 2;
            } else if (strcmp(cn, "call") == 0) {
                rc = add_call(f, &cs, src + a, b - a, ts_node_start_point(n).row + 1);
            }
        }
        if (rc == 0 && req == 3 && node_text_eq(req_fn, src, "require")) {
            uint32_t a = ts_node_start_byte(req_arg), b = ts_node_end_byte(req_arg);
            rc = add_import(f, src + a, b - a);
        }
        if (rc == 0 && have_def && have_name) {
            uint32_t a = ts_node_start_byte(name), b = ts_node_end_byte(name);
            char nm[201];
            size_t l = b - a < 200 ? b - a : 200;
            memcpy(nm, src + a, l);
            nm[l] = '\0';
            rc = add_sym(f, nm, l, kind, ts_exported(f->lang, def, src, nm, marked),
                         ts_node_start_point(def).row + 1, ts_node_end_point(def).row + 1);
        }
    }
    free(cs.h);
    ts_tree_delete(tree);
    return rc;
}

/* ---- regex path ------------------------------------------------------- */

static int rx_lang(int lang) { return lang == LANG_TS || lang == LANG_TSX ? LANG_JS : lang; }

static uint32_t python_end(const char *src, size_t len, size_t def_off)
{
    size_t ls = def_off;
    while (ls > 0 && src[ls - 1] != '\n') ls--;
    size_t indent = 0;
    while (ls + indent < len && (src[ls + indent] == ' ' || src[ls + indent] == '\t')) indent++;
    size_t i = def_off;
    uint32_t line = 0, last = 0;
    while (i < len && src[i] != '\n') i++;
    while (i < len) {
        i++; /* past '\n' */
        line++;
        size_t j = i, ind = 0;
        while (j < len && (src[j] == ' ' || src[j] == '\t')) j++, ind++;
        if (j >= len) break;
        if (src[j] != '\n' && src[j] != '#') {
            if (ind <= indent && src[j] != ')' && src[j] != ']') break;
            last = line;
        }
        i = j;
        while (i < len && src[i] != '\n') i++;
    }
    return last;
}

static int parse_rx(graph_parser_ctx *p, gfile *f, const char *src, size_t len)
{
    int lang = rx_lang(f->lang);
    int rc = 0;
    for (size_t k = 0; k < N_RX && rc == 0; k++) {
        const rx_pat *pt = &rx_pats[k];
        if (pt->lang != lang) continue;
        if (!p->rx[k]) {
            int e;
            PCRE2_SIZE eo;
            p->rx[k] = pcre2_compile((PCRE2_SPTR)pt->re, PCRE2_ZERO_TERMINATED,
                                     PCRE2_MULTILINE | PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &e, &eo,
                                     NULL);
            if (!p->rx[k]) continue;
            pcre2_jit_compile(p->rx[k], PCRE2_JIT_COMPLETE);
        }
        size_t off = 0, line_off = 0;
        uint32_t line = 1;
        while (off <= len && rc == 0) {
            int m = pcre2_match(p->rx[k], (PCRE2_SPTR)src, len, off, 0, p->md, NULL);
            if (m < 0) break;
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(p->md);
            for (; line_off < ov[0]; line_off++)
                if (src[line_off] == '\n') line++;
            size_t a = ov[2 * pt->group], b = ov[2 * pt->group + 1];
            if (a != PCRE2_UNSET && b > a) {
                if (pt->type == RX_DEF) {
                    char nm[201];
                    size_t l = b - a < 200 ? b - a : 200;
                    memcpy(nm, src + a, l);
                    nm[l] = '\0';
                    int exp;
                    if (pt->export_group)
                        exp = ov[2 * pt->export_group] != PCRE2_UNSET;
                    else if (lang == LANG_PYTHON) exp = nm[0] != '_';
                    else if (lang == LANG_GO) exp = isupper((unsigned char)nm[0]) != 0;
                    else if (lang == LANG_C) exp = ov[2] == PCRE2_UNSET;
                    else exp = 1;
                    uint32_t end = line;
                    if (lang == LANG_PYTHON && pt->kind != SYM_VARIABLE)
                        end = line + python_end(src, len, a);
                    rc = add_sym(f, nm, l, pt->kind, exp, line, end);
                } else if (pt->type == RX_IMPORT) {
                    if (strstr(pt->re, "mod[ ")) {
                        char tmp[256];
                        int l = snprintf(tmp, sizeof tmp, "mod %.*s", (int)(b - a), src + a);
                        if (l > 0 && (size_t)l < sizeof tmp) rc = add_import(f, tmp, (size_t)l);
                    } else {
                        rc = add_import(f, src + a, b - a);
                    }
                } else { /* RX_PYFROM */
                    size_t na = ov[4] != PCRE2_UNSET ? ov[4] : ov[6];
                    size_t nb = ov[4] != PCRE2_UNSET ? ov[5] : ov[7];
                    if (na == PCRE2_UNSET) na = nb = 0;
                    char tmp[512];
                    int any = 0;
                    for (size_t i = na; i < nb && rc == 0;) {
                        while (i < nb && !(isalnum((unsigned char)src[i]) || src[i] == '_')) i++;
                        size_t s = i;
                        while (i < nb && (isalnum((unsigned char)src[i]) || src[i] == '_')) i++;
                        if (i == s) break;
                        if (i - s == 2 && memcmp(src + s, "as", 2) == 0) { /* skip alias */
                            while (i < nb && !(isalnum((unsigned char)src[i]) || src[i] == '_')) i++;
                            while (i < nb && (isalnum((unsigned char)src[i]) || src[i] == '_')) i++;
                            continue;
                        }
                        int l = snprintf(tmp, sizeof tmp, "%.*s%s%.*s", (int)(b - a), src + a,
                                         src[b - 1] == '.' ? "" : ".", (int)(i - s), src + s);
                        if (l > 0 && (size_t)l < sizeof tmp) rc = add_import(f, tmp, (size_t)l);
                        any = 1;
                    }
                    if (rc == 0 && !any) rc = add_import(f, src + a, b - a);
                }
            }
            off = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
        }
    }
    return rc;
}

int graph_parse_file(graph_parser_ctx *p, gfile *f, const char *src, size_t len)
{
    graph_file_clear(f);
    f->parsed_with = 0;
    if (f->lang == LANG_NONE) return 0;
    const TSLanguage *L = p->parser == GRAPH_PARSER_AUTO ? grammar_of(f->lang) : NULL;
    if (L) {
        int rc = parse_ts(p, f, src, len, L);
        if (rc < 0) return -1;
        if (rc == 0) {
            f->parsed_with = 1;
            return 0;
        }
        graph_file_clear(f);
    }
    f->parsed_with = 2;
    return parse_rx(p, f, src, len) < 0 ? -1 : 0;
}
