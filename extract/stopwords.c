/* stopwords.c: the keyword stopword list and its O(1) lookup table. */
#include "stopwords.h"
#include "../util/namefilter.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

static const char *const STOPWORDS[] = {
    /* English function words */
    "a", "about", "above", "across", "after", "afterwards", "again", "against", "all",
    "almost", "alone", "along", "already", "also", "although", "always", "am", "among",
    "amongst", "an", "and", "another", "any", "anybody", "anyhow", "anyone", "anything",
    "anyway", "anyways", "anywhere", "are", "aren", "around", "as", "at", "be", "became",
    "because", "become", "becomes", "been", "before", "beforehand", "behind", "being",
    "below", "beside", "besides", "between", "beyond", "both", "but", "by", "can", "cannot",
    "could", "couldn", "did", "didn", "do", "does", "doesn", "doing", "done", "don", "down",
    "during", "each", "either", "else", "elsewhere", "enough", "even", "ever", "every",
    "everybody", "everyone", "everything", "everywhere", "except", "few", "for", "from",
    "further", "furthermore", "had", "hadn", "has", "hasn", "have", "haven", "having", "he",
    "hence", "her", "here", "hereby", "herein", "hers", "herself", "him", "himself", "his",
    "how", "however", "i", "if", "in", "indeed", "instead", "into", "is", "isn", "it", "its",
    "itself", "just", "least", "less", "lest", "like", "likely", "may", "maybe", "me",
    "meanwhile", "might", "mine", "more", "moreover", "most", "mostly", "much", "must", "my",
    "myself", "namely", "neither", "never", "nevertheless", "no", "nobody", "none", "noone",
    "nor", "not", "nothing", "now", "nowhere", "of", "off", "often", "on", "once", "one",
    "only", "onto", "or", "other", "others", "otherwise", "ought", "our", "ours",
    "ourselves", "out", "over", "own", "per", "perhaps", "please", "quite", "rather",
    "really", "same", "shall", "shan", "she", "should", "shouldn", "since", "so", "some",
    "somebody", "somehow", "someone", "something", "sometime", "sometimes", "somewhat",
    "somewhere", "still", "such", "than", "that", "the", "their", "theirs", "them",
    "themselves", "then", "thence", "there", "thereafter", "thereby", "therefore",
    "therein", "thereupon", "these", "they", "this", "those", "though", "through",
    "throughout", "thru", "thus", "to", "together", "too", "toward", "towards", "under",
    "unless", "until", "up", "upon", "us", "very", "via", "was", "wasn", "we", "well",
    "were", "weren", "what", "whatever", "when", "whence", "whenever", "where",
    "whereafter", "whereas", "whereby", "wherein", "whereupon", "wherever", "whether",
    "which", "while", "whither", "who", "whoever", "whole", "whom", "whose", "why", "will",
    "with", "within", "without", "won", "would", "wouldn", "yet", "you", "your", "yours",
    "yourself", "yourselves",
    /* everyday verbs, adverbs and adjectives */
    "able", "actually", "add", "added", "adding", "again", "allow", "allows", "another",
    "answer", "appear", "appears", "apply", "asked", "asking", "available", "away", "back",
    "basically", "better", "big", "bring", "build", "called", "came", "certain",
    "certainly", "change", "changed", "changes", "check", "checked", "checking", "clear",
    "clearly", "come", "comes", "coming", "consider", "continue", "correct", "correctly",
    "create", "created", "creating", "current", "currently", "definitely", "describe",
    "different", "easy", "enable", "ensure", "entire", "especially", "exactly", "example",
    "examples", "existing", "explain", "fine", "first", "fixed", "following", "found",
    "full", "fully", "generally", "get", "gets", "getting", "give", "given", "gives",
    "going", "gone", "good", "got", "great", "handle", "happen", "happens", "help",
    "helpful", "hello", "important", "include", "included", "includes", "including",
    "instead", "keep", "kind", "know", "known", "last", "later", "latest", "let", "lets",
    "little", "look", "looking", "looks", "lot", "lots", "made", "main", "make", "makes",
    "making", "many", "mean", "means", "mentioned", "need", "needed", "needs", "new",
    "next", "nice", "note", "notes", "number", "okay", "old", "open", "order", "original",
    "part", "possible", "pretty", "previous", "previously", "probably", "problem",
    "problems", "proper", "properly", "provide", "provided", "provides", "put", "question",
    "questions", "quick", "quickly", "ready", "reason", "recent", "recently", "regarding",
    "related", "remove", "removed", "right", "run", "running", "said", "say", "says",
    "second", "see", "seem", "seems", "seen", "set", "several", "show", "shown", "shows",
    "similar", "simple", "simply", "small", "specific", "start", "started", "stuff",
    "sure", "take", "takes", "taking", "tell", "thank", "thanks", "thing", "things",
    "think", "thought", "time", "times", "today", "tomorrow", "tried", "true", "false",
    "try", "trying", "turn", "understand", "update", "updated", "updates", "updating",
    "use", "used", "useful", "uses", "using", "usually", "want", "wanted", "wants", "way",
    "ways", "went", "whole", "work", "worked", "working", "works", "write", "writing",
    "written", "wrong", "yeah", "yes", "yesterday",
    /* agent / LLM / programming jargon */
    "agent", "agents", "argument", "arguments", "array", "assistant", "boolean", "call",
    "calls", "chat", "code", "command", "commands", "completion", "config",
    "configuration", "content", "context", "conversation", "data", "debug", "default",
    "defaults", "directory", "error", "errors", "event", "events", "file", "files",
    "folder", "function", "functions", "gateway", "handler", "history", "input", "inputs",
    "instruction", "instructions", "integer", "item", "items", "json", "line", "lines",
    "list", "memory", "message", "messages", "method", "model", "models", "module",
    "null", "number", "object", "option", "options", "output", "outputs", "parameter",
    "parameters", "path", "paths", "plugin", "plugins", "project", "projects", "prompt",
    "prompts", "provider", "providers", "query", "request", "requests", "response",
    "responses", "result", "results", "return", "returns", "role", "script", "session",
    "sessions", "setting", "settings", "status", "step", "steps", "string", "strings",
    "summary", "system", "task", "tasks", "temperature", "test", "tests", "text", "thread",
    "token", "tokens", "tool", "tools", "turn", "turns", "type", "types", "undefined",
    "user", "users", "value", "values", "variable", "version", "workspace",
};

#define N_STOPWORDS (sizeof STOPWORDS / sizeof STOPWORDS[0])
#define TABLE_SIZE 2048u /* power of two, > 2 * N_STOPWORDS */

static uint16_t table[TABLE_SIZE]; /* index + 1 into STOPWORDS, 0 = empty */
static uint8_t lens[N_STOPWORDS];  /* strlen of each: compared before the bytes */
/* each word's bytes as lanes in memory order, zero-padded: a lookup
 * compares integers (a word of up to 8 bytes is one compare) */
static uint64_t lanes[N_STOPWORDS][STOPWORD_MAX / 8];
static size_t n_distinct;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Whether the word with lanes l (memory order, zero-padded) is entry k. */
static int same(size_t k, const uint64_t *l, size_t n)
{
    if (lens[k] != n) return 0;
    for (size_t j = 0; j * 8 < n; j++)
        if (lanes[k][j] != l[j]) return 0;
    return 1;
}

/* Slot holding the word, or the empty slot where it would go; h = name_hash(w). */
static uint32_t find_slot(const uint64_t *l, size_t n, uint64_t h)
{
    uint32_t i = (uint32_t)h & (TABLE_SIZE - 1);
    for (;;) {
        uint16_t v = table[i];
        if (v == 0 || same(v - 1u, l, n)) return i;
        i = (i + 1) & (TABLE_SIZE - 1);
    }
}

/* The lanes of w[0, n) (n <= STOPWORD_MAX). */
static void lanes_of(const char *w, size_t n, uint64_t *l)
{
    memset(l, 0, STOPWORD_MAX);
    memcpy(l, w, n);
}

static void build(void)
{
    _Static_assert(TABLE_SIZE > 2 * N_STOPWORDS, "stopword table too small");
    for (size_t k = 0; k < N_STOPWORDS; k++) {
        size_t n = strlen(STOPWORDS[k]);
        lens[k] = (uint8_t)(n <= STOPWORD_MAX ? n : 0); /* (none is longer) */
        lanes_of(STOPWORDS[k], lens[k], lanes[k]);
    }
    for (size_t k = 0; k < N_STOPWORDS; k++) {
        if (!lens[k]) continue;
        uint32_t i = find_slot(lanes[k], lens[k], name_hash(STOPWORDS[k], lens[k]));
        if (table[i] == 0) {
            table[i] = (uint16_t)(k + 1);
            n_distinct++;
        }
    }
}

int stopword_is(const char *w, size_t n)
{
    if (n == 0 || n > STOPWORD_MAX) return 0;
    uint64_t l[STOPWORD_MAX / 8];
    lanes_of(w, n, l);
    return stopword_is_lanes(l, n, name_hash(w, n));
}

int stopword_is_lanes(const uint64_t *l, size_t n, uint64_t h)
{
    if (n == 0 || n > STOPWORD_MAX) return 0;
    pthread_once(&once, build);
    return table[find_slot(l, n, h)] != 0;
}

size_t stopword_count(void)
{
    pthread_once(&once, build);
    return n_distinct;
}
