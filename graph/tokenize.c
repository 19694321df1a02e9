/* tokenize.c: identifiers and prose into normalized search tokens.
 *
 * A word is a run of letters, digits and underscores.  It is split at
 * underscores, at lower->upper case changes ("getUser"), before the last
 * capital of an acronym ("HTTPServer" -> http, server) and between letters
 * and digits.  Parts are lowercased, lightly stemmed (plural endings),
 * mapped through a small synonym table, and dropped when they are stopwords
 * or shorter than two characters.  A word of several parts also yields the
 * parts joined ("get_user_name" and "getUserName" both -> getusername).
 */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TOK_MAX 64

static const char *const stopwords[] = {
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are",
    "arg", "args", "as", "at", "be", "because", "been", "before", "being", "below", "between",
    "both", "but", "by", "can", "cannot", "cls", "could", "def", "did", "do", "does", "doing",
    "done", "down", "during", "each", "else", "elif", "even", "expected", "few", "for", "from",
    "further", "get", "got", "had", "has", "have", "having", "he", "her", "here", "hers", "him",
    "his", "how", "however", "http", "https", "i", "if", "in", "into", "is", "it", "its",
    "itself", "just", "kwargs", "let", "like", "line", "me", "might", "more", "most", "much",
    "must", "my", "need", "new", "no", "nor", "not", "now", "of", "off", "ok", "on", "once",
    "one", "only", "or", "other", "our", "out", "over", "own", "please", "same", "see", "self",
    "set", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them",
    "then", "there", "these", "they", "thi", "this", "those", "through", "to", "too", "true",
    "false", "none", "null", "under", "until", "up", "us", "use", "used", "using", "var",
    "very", "want", "was", "way", "we", "were", "what", "when", "where", "which", "while",
    "who", "whom", "why", "will", "with", "work", "would", "www", "you", "your", "com", "org",
    "github", "py", "js", "ts", "return", "import", "const", "function", "class", "print",
    "issue", "bug", "fix", "example", "following", "would", "seem", "think", "thank",
    "hi", "hello", "make", "may", "way", "well", "yes", "version", "result", "output",
    "error", "traceback", "recent", "call", "last", "file", "code", "test", "tests",
};

typedef struct synonym {
    const char *from, *to;
} synonym;

static const synonym synonyms[] = {
    {"authentication", "auth"}, {"authenticate", "auth"}, {"authorization", "auth"},
    {"authorize", "auth"},      {"database", "db"},       {"configuration", "config"},
    {"configure", "config"},    {"cfg", "config"},        {"conf", "config"},
    {"utility", "util"},        {"utils", "util"},        {"directory", "dir"},
    {"message", "msg"},         {"initialize", "init"},   {"initialization", "init"},
    {"repository", "repo"},     {"request", "req"},       {"response", "resp"},
    {"res", "resp"},            {"environment", "env"},   {"document", "doc"},
    {"documentation", "doc"},   {"docs", "doc"},          {"func", "fn"},
    {"parameter", "param"},     {"string", "str"},
    {"implementation", "impl"}, {"specification", "spec"}, {"temporary", "tmp"},
    {"temp", "tmp"},
    {"attribute", "attr"},      {"attributes", "attr"},   {"exception", "exc"},
    {"dictionary", "dict"},     {"number", "num"},        {"integer", "int"},
    {"boolean", "bool"},        {"expression", "expr"},
    {"matrice", "matrix"},      {"matrices", "matrix"},   {"js", "javascript"},
};

/* The stopwords and synonyms in open-addressing tables (built once):
 * a part costs one hash and one compare for each, where bsearch over the
 * sorted lists cost a dozen strcmp calls (most of tokenizing a name). */
#define TAB_SIZE 512 /* a power of two, over twice the entries */
typedef struct tab_ent {
    const char *key, *to;
} tab_ent;
static tab_ent tab_stop[TAB_SIZE], tab_syn[TAB_SIZE];
static pthread_once_t tabs_once = PTHREAD_ONCE_INIT;

static size_t tab_slot(const tab_ent *t, const char *w, size_t n)
{
    size_t j = graph_fnv64(w, n) & (TAB_SIZE - 1);
    while (t[j].key && !(strncmp(t[j].key, w, n) == 0 && t[j].key[n] == '\0')) j = (j + 1) & (TAB_SIZE - 1);
    return j;
}

static void tab_put(tab_ent *t, const char *key, const char *to)
{
    size_t j = tab_slot(t, key, strlen(key));
    t[j] = (tab_ent){key, to}; /* a repeated key: the same entry again */
}

static void init_tables(void)
{
    for (size_t i = 0; i < sizeof stopwords / sizeof *stopwords; i++) tab_put(tab_stop, stopwords[i], NULL);
    for (size_t i = 0; i < sizeof synonyms / sizeof *synonyms; i++)
        tab_put(tab_syn, synonyms[i].from, synonyms[i].to);
}

/* The entry of w[0, n) in t, or NULL. */
static const tab_ent *tab_get(const tab_ent *t, const char *w, size_t n)
{
    const tab_ent *e = &t[tab_slot(t, w, n)];
    return e->key ? e : NULL;
}

static int is_stop(const char *w, size_t n) { return tab_get(tab_stop, w, n) != NULL; }

/* In place: plural endings, then synonyms.  Returns the new length. */
static size_t normalize(char *w, size_t n)
{
    if (n > 4 && strcmp(w + n - 3, "ies") == 0) {
        w[n - 3] = 'y';
        n -= 2;
    } else if (n > 4 && (strcmp(w + n - 4, "sses") == 0 || strcmp(w + n - 4, "ches") == 0 ||
                         strcmp(w + n - 4, "shes") == 0 || strcmp(w + n - 3, "xes") == 0)) {
        n -= 2;
    } else if (n > 3 && w[n - 1] == 's' && w[n - 2] != 's' && w[n - 2] != 'u' && w[n - 2] != 'i') {
        n -= 1;
    }
    w[n] = '\0';
    const tab_ent *hit = tab_get(tab_syn, w, n);
    if (hit) {
        n = strlen(hit->to);
        memcpy(w, hit->to, n + 1);
    }
    return n;
}

static int emit(char *w, size_t n, int keep_stop, graph_token_cb cb, void *ud)
{
    w[n] = '\0';
    n = normalize(w, n);
    if (n < 2) return 0;
    if (!keep_stop && is_stop(w, n)) return 0;
    if (n == 2 && isdigit((unsigned char)w[0])) return 0;
    return cb(ud, w, n);
}

static int is_word(unsigned char c) { return isalnum(c) || c == '_' || c >= 0x80; }

/* One word: its parts, then the joined form when there are several. */
static int word(const char *s, size_t n, int keep_stop, graph_token_cb cb, void *ud)
{
    char part[TOK_MAX + 1], joined[TOK_MAX + 1];
    size_t pl = 0, jl = 0, parts = 0;
    int all_digits = 1;
    for (size_t i = 0; i <= n; i++) {
        int boundary = i == n;
        unsigned char c = i < n ? (unsigned char)s[i] : 0;
        if (!boundary && i > 0) {
            unsigned char p = (unsigned char)s[i - 1];
            if (c == '_') boundary = 1;
            else if (islower(p) && isupper(c)) boundary = 1;
            else if (isupper(p) && isupper(c) && i + 1 < n && islower((unsigned char)s[i + 1]))
                boundary = 1;
            else if (isalpha(p) && isdigit(c)) boundary = 1;
            else if (isdigit(p) && isalpha(c)) boundary = 1;
        }
        if (boundary && pl) {
            char tmp[TOK_MAX + 1];
            memcpy(tmp, part, pl);
            if (!all_digits || pl > 2) {
                if (emit(tmp, pl, keep_stop, cb, ud)) return 1;
            }
            parts++;
            pl = 0;
            all_digits = 1;
        }
        if (i == n) break;
        if (c == '_') continue;
        if (pl < TOK_MAX) part[pl++] = (char)tolower(c);
        if (jl < TOK_MAX) joined[jl++] = (char)tolower(c);
        if (!isdigit(c)) all_digits = 0;
    }
    if (parts > 1 && jl >= 4 && jl < TOK_MAX) {
        joined[jl] = '\0';
        if (cb(ud, joined, jl)) return 1;
    }
    return 0;
}

void graph_tokenize(const char *text, size_t len, int keep_stop, graph_token_cb cb, void *ud)
{
    pthread_once(&tabs_once, init_tables);
    size_t i = 0;
    while (i < len) {
        while (i < len && !is_word((unsigned char)text[i])) i++;
        size_t start = i;
        while (i < len && is_word((unsigned char)text[i])) i++;
        if (i > start && i - start <= 128 && word(text + start, i - start, keep_stop, cb, ud)) return;
    }
}
