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
#include <stdlib.h>
#include <string.h>

#include "graph.h"

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

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char **sorted_stop;
static size_t n_stop;
static synonym sorted_syn[sizeof synonyms / sizeof *synonyms];

static int cmp_syn(const void *a, const void *b)
{
    return strcmp(((const synonym *)a)->from, ((const synonym *)b)->from);
}

static void init_stopwords(void)
{
    static const char *copy[sizeof stopwords / sizeof *stopwords];
    /* Benign race: every thread writes the same sorted content. */
    if (__atomic_load_n(&sorted_stop, __ATOMIC_ACQUIRE)) return;
    const char *tmp[sizeof stopwords / sizeof *stopwords];
    memcpy(tmp, stopwords, sizeof stopwords);
    qsort(tmp, sizeof tmp / sizeof *tmp, sizeof *tmp, cmp_str);
    size_t n = 0;
    for (size_t i = 0; i < sizeof tmp / sizeof *tmp; i++)
        if (n == 0 || strcmp(copy[n - 1], tmp[i]) != 0) copy[n++] = tmp[i];
    n_stop = n;
    /* sorted aside, then copied: a racing thread writes the same bytes */
    synonym syn[sizeof synonyms / sizeof *synonyms];
    memcpy(syn, synonyms, sizeof synonyms);
    qsort(syn, sizeof syn / sizeof *syn, sizeof *syn, cmp_syn);
    memcpy(sorted_syn, syn, sizeof syn);
    __atomic_store_n(&sorted_stop, copy, __ATOMIC_RELEASE);
}

static int is_stop(const char *w)
{
    const char **hit = bsearch(&w, sorted_stop, n_stop, sizeof *sorted_stop, cmp_str);
    return hit != NULL;
}

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
    synonym key = {w, NULL};
    const synonym *hit =
        bsearch(&key, sorted_syn, sizeof synonyms / sizeof *synonyms, sizeof *sorted_syn, cmp_syn);
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
    if (!keep_stop && is_stop(w)) return 0;
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
    init_stopwords();
    size_t i = 0;
    while (i < len) {
        while (i < len && !is_word((unsigned char)text[i])) i++;
        size_t start = i;
        while (i < len && is_word((unsigned char)text[i])) i++;
        if (i > start && i - start <= 128 && word(text + start, i - start, keep_stop, cb, ud)) return;
    }
}
