/* The reference prefilter must never hide a tracked item: for random texts
 * and random tracked sets, the filtered candidates that name a tracked item
 * are exactly the unfiltered ones that do. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../config/config.h"
#include "../extract/classify.h"
#include "../extract/extract.h"
#include "../extract/internal.h"
#include "../extract/wordbatch.h"
#include "../tracker/tracker.h"
#include "../util/buf.h"
#include "testengine.h"

typedef struct hits {
    tracker *t;
    char **ids;
    size_t n;
} hits;

static int collect(void *ud, const char *id, int category)
{
    hits *h = ud;
    if (!tracker_find(h->t, id)) return 0;
    h->ids = realloc(h->ids, (h->n + 1) * sizeof *h->ids);
    h->ids[h->n++] = strdup(id);
    return 0;
}

/* The word path (extract_word_cb): the forms' ids that are tracked, each
 * kept once (a word may come more than once), so the list compares with
 * the id path's. */
static int collect_once(hits *h, const char *id)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->ids[i], id) == 0) return 0;
    return collect(h, id, 0);
}

static int collect_word(void *ud, const char *w, size_t n, unsigned forms)
{
    char id[80];
    cr_assert(n >= 1 && n <= EXTRACT_WORD_MAX && forms && !(forms & ~7u));
    for (size_t i = 0; i < n; i++) cr_assert(!(w[i] >= 'A' && w[i] <= 'Z'), "word not lowercase");
    static const char *const pre[] = {"", "tool:", "keyword:"};
    for (int k = 0; k < 3; k++)
        if (forms >> k & 1) {
            snprintf(id, sizeof id, "%s%.*s", pre[k], (int)n, w);
            collect_once(ud, id);
        }
    return 0;
}

/* Collects the word path's ids the id callback reports (deduplicated the
 * same way). */
static int collect_id_once(void *ud, const char *id, int category) { return collect_once(ud, id); }

static int track(void *ud, const char *id, int category)
{
    tracker_touch(ud, id, category, 0);
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void hits_free(hits *h)
{
    for (size_t i = 0; i < h->n; i++) free(h->ids[i]);
    free(h->ids);
}

static const char *const pieces[] = {
    "ClaraCore", "focus-engine", "focus", "engine", "web_search", "Read", "src/auth/session.ts",
    "/ws/src/auth/session.ts", "./lib/x.py", "SOUL.md", "memory/active-context.md", "refactoring",
    "the", "and", "e.g.", "end.", "a-b-c", "x--y", "Focus-Engine", "http://example.com/a.ts",
    "session.ts", "docs/guide.md", "--flag", "state.", "na\xc3\xafve", "\xff", "(src/a.c)", "key:value"};
#define NP (sizeof pieces / sizeof *pieces)

static extractor *default_extractor(clarity_config *cfg)
{
    char *err = NULL;
    cr_assert_eq(config_parse(cfg, NULL, &err), 0);
    extractor *ex;
    cr_assert_eq(extract_new(cfg, &ex, &err), 0);
    return ex;
}

/* The filtered scan of text reports exactly the tracked ids the unfiltered
 * one reports (in the same order, or as sets when sorted).  Returns how many. */
static size_t same_hits(extractor *ex, tracker *t, const char *text, size_t len, int sorted, const char *what)
{
    /* the reference: the unfiltered scan, every path's forms built afresh
     * (the filtered scans below run the programs earlier calls kept) */
    hits all = {t, NULL, 0};
    ex->keep_programs = 0;
    extract_candidates(ex, text, len, "/ws", collect, &all);
    ex->keep_programs = 1;
    if (sorted && all.n) qsort(all.ids, all.n, sizeof *all.ids, cmp);
    /* the filtered scan with each byte classifier this CPU runs, words'
     * forms as ids and through the word callback */
    int avx2 = ex->avx2;
    for (int simd = 0; simd <= avx2; simd++)
        for (int words = 0; words < 2; words++) {
            ex->avx2 = simd;
            hits filtered = {t, NULL, 0};
            extract_filter f = {&t->names, words ? collect_word : NULL};
            extract_candidates_filtered(ex, text, len, "/ws", &f, words ? collect_id_once : collect, &filtered);
            if (sorted && filtered.n) qsort(filtered.ids, filtered.n, sizeof *filtered.ids, cmp);
            cr_assert_eq(filtered.n, all.n, "%s (avx2 %d, words %d): %zu filtered vs %zu unfiltered hits in \"%.*s\"",
                         what, simd, words, filtered.n, all.n, (int)len, text);
            for (size_t i = 0; i < all.n; i++)
                cr_assert_str_eq(filtered.ids[i], all.ids[i], "%s (avx2 %d, words %d), hit %zu", what, simd, words,
                                 i);
            hits_free(&filtered);
        }
    size_t n = all.n;
    hits_free(&all);
    return n;
}

/* same_hits in text order for one round of a random test, whose tracker
 * and text it then frees. */
static size_t round_hits(extractor *ex, tracker *t, char *text, size_t len, int round)
{
    char what[32];
    snprintf(what, sizeof what, "round %d", round);
    size_t n = same_hits(ex, t, text, len, 0, what);
    tracker_free(t);
    free(text);
    return n;
}

Test(prefilter, filtered_candidates_equal_unfiltered_on_tracked_items)
{
    clarity_config cfg;
    extractor *ex = default_extractor(&cfg);
    srand(7);
    for (int round = 0; round < 300; round++) {
        tracker t;
        tracker_init(&t, 16);
        /* every candidate form of a random subset of the pieces is tracked */
        for (size_t k = 0; k < NP; k++)
            if (rand() % 3 == 0) extract_candidates(ex, pieces[k], strlen(pieces[k]), "/ws", track, &t);
        char text[1024];
        size_t off = 0;
        for (int w = 0; w < 30 && off < sizeof text - 64; w++)
            off += (size_t)snprintf(text + off, sizeof text - off, "%s%s", pieces[rand() % NP],
                                    (rand() % 4) ? " " : "\n");
        cr_assert_gt(t.count, 0);
        char what[32];
        snprintf(what, sizeof what, "round %d", round);
        same_hits(ex, &t, text, off, 1, what);
        tracker_free(&t);
    }
    extract_free(ex);
    config_free(&cfg);
}

/* A tracker whose filter is not built (deferred while an import runs, or
 * given up for want of memory) passes every name: the filtered scan then
 * reports what the unfiltered one does. */
Test(prefilter, a_filter_not_built_passes_everything)
{
    clarity_config cfg;
    extractor *ex = default_extractor(&cfg);
    tracker t;
    tracker_init(&t, 16);
    for (size_t k = 0; k < NP; k += 2) extract_candidates(ex, pieces[k], strlen(pieces[k]), "/ws", track, &t);
    tracker_defer_names(&t);
    cr_assert_eq(t.names.nbits, 0);
    char text[2048];
    size_t off = 0;
    for (size_t k = 0; k < NP && off < sizeof text - 64; k++)
        off += (size_t)snprintf(text + off, sizeof text - off, "%s %s/x.py ", pieces[k], pieces[k]);
    cr_assert_gt(same_hits(ex, &t, text, off, 0, "deferred filter"), 0);
    tracker_free(&t);
    extract_free(ex);
    config_free(&cfg);
}

/* A load leaves the filter deferred (only the reference scans read it, and
 * a Claude Code prompt's process never scans): items added meanwhile do
 * not build it, and the first read builds it with every item, once. */
Test(prefilter, a_deferred_filter_is_built_at_its_first_read)
{
    tracker t;
    tracker_init(&t, 16);
    tracker_defer_names(&t);
    char id[32];
    for (int i = 0; i < 300; i++) {
        snprintf(id, sizeof id, i % 2 ? "keyword:word%04d" : "proj%04dcore", i);
        tracker_touch(&t, id, i % 2 ? CAT_KEYWORD : CAT_PROJECT, 0);
    }
    cr_assert_eq(t.names.nbits, 0, "adding items built the deferred filter");
    const name_filter *nf = tracker_names(&t);
    cr_assert_gt(nf->nbits, 0, "the first read did not build the filter");
    cr_assert_eq(t.names_deferred, 0);
    for (int i = 0; i < 300; i++) {
        snprintf(id, sizeof id, i % 2 ? "word%04d" : "proj%04dcore", i);
        cr_assert(name_filter_test(nf, id, strlen(id)), "%s is not in the filter", id);
    }
    const uint64_t *bits = nf->bits;
    cr_assert_eq(tracker_names(&t)->bits, bits, "a second read built it again");
    tracker_free(&t);
}

static engine *engine_on(const char *db)
{
    char cfg[300];
    snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"}}", db);
    return testengine_open(cfg);
}

/* A session restored from its store, or imported, leaves the filter to its
 * first read. */
Test(prefilter, a_restored_session_builds_its_filter_when_first_read)
{
    char db[] = "/tmp/clarity-prefilter-XXXXXX";
    int fd = mkstemp(db);
    cr_assert_geq(fd, 0);
    close(fd);
    engine *e = engine_on(db);
    session *s;
    cr_assert_eq(engine_acquire(e, "s", 1, &s), CLARITY_OK);
    tracker_touch(&s->t, "proj0001core", CAT_PROJECT, 0);
    tracker_touch(&s->t, "keyword:parser", CAT_KEYWORD, 0);
    cr_assert_eq(persist_flush(e, s), CLARITY_OK);
    engine_release(e, s);
    engine_free(e);

    e = engine_on(db);
    cr_assert_eq(engine_acquire(e, "s", 0, &s), CLARITY_OK);
    cr_assert_eq(s->t.count, 2, "the session was not restored");
    cr_assert(s->t.names_deferred && s->t.names.nbits == 0, "the load built the filter");
    const name_filter *nf = tracker_names(&s->t);
    cr_assert(name_filter_test(nf, "proj0001core", 12) && name_filter_test(nf, "parser", 6));
    /* an import is a load too */
    char *err = NULL;
    cr_assert_eq(persist_import_legacy(e, s, "{\"currentTurn\":3,\"items\":[{\"id\":\"proj0002core\"}]}", &err),
                 CLARITY_OK, "%s", err ? err : "");
    cr_assert(s->t.names_deferred && s->t.names.nbits == 0, "the import built the filter");
    cr_assert(name_filter_test(tracker_names(&s->t), "proj0002core", 12));
    engine_release(e, s);
    engine_free(e);
    char side[64];
    const char *ext[] = {"", "-wal", "-shm"};
    for (int k = 0; k < 3; k++) {
        snprintf(side, sizeof side, "%s%s", db, ext[k]);
        remove(side);
    }
}

/* An agent_end of session sid: one assistant message, with a Read of
 * args when given. */
static void end_turn(engine *e, const char *sid, const char *text, const char *args)
{
    clarity_message m = {sizeof m, "assistant", text, strlen(text), args ? "Read" : NULL, args};
    clarity_agent_end p = {sizeof p, sid, &m, 1, 1, NULL, NULL};
    clarity_event ev = {sizeof ev, CLARITY_EV_AGENT_END, 1, &p};
    buf out;
    buf_init(&out);
    char *err = NULL;
    cr_assert_eq(hooks_on_event(e, &ev, &out, &err), CLARITY_OK, "%s", err ? err : "");
    buf_free(&out);
}

static int64_t refs_of(tracker *t, const char *id)
{
    item *it = tracker_find(t, id);
    return it ? it->reference_count : -1;
}

/* A brief host's process (CLARITY_HOST_BRIEF: a Claude Code hook) scans a
 * restored session's short texts without building the session's name
 * filter, until what it scanned so would have paid for the build (8 bytes
 * an item); what its turns count is the same.  Another host builds the
 * filter for the first text. */
Test(prefilter, a_brief_host_builds_a_restored_sessions_filter_only_once_it_pays)
{
    enum { N = 1000 };
    for (int brief = 0; brief < 2; brief++) {
        engine *e = testengine_open_flags("{\"storage\":{\"backend\":\"memory\"}}", brief ? CLARITY_HOST_BRIEF : 0);
        session *s;
        cr_assert_eq(engine_acquire(e, "s", 1, &s), CLARITY_OK);
        buf imp;
        buf_init(&imp);
        buf_puts(&imp, "{\"currentTurn\":3,\"items\":[");
        for (int i = 0; i < N; i++)
            buf_printf(&imp, "%s{\"id\":\"%s%04d%s\"}", i ? "," : "", i % 2 ? "file:src/m" : "proj", i,
                       i % 2 ? ".ts" : "core");
        buf_puts(&imp, "]}");
        char *err = NULL;
        cr_assert_eq(persist_import_legacy(e, s, imp.p, &err), CLARITY_OK, "%s", err ? err : "");
        buf_free(&imp);
        cr_assert(s->t.names_deferred && s->t.count == N);
        engine_release(e, s);

        end_turn(e, "s", "Proj0008Core and src/m0007.ts are done; the rest waits.", "{\"file_path\":\"src/m0009.ts\"}");
        cr_assert_eq(engine_acquire(e, "s", 0, &s), CLARITY_OK);
        cr_assert_eq(refs_of(&s->t, "proj0008core"), 1);
        cr_assert_eq(refs_of(&s->t, "file:src/m0007.ts"), 1);
        cr_assert_eq(refs_of(&s->t, "file:src/m0009.ts"), 1, "the tool call's file");
        cr_assert_eq(refs_of(&s->t, "proj0010core"), 0);
        cr_assert_eq(s->t.names_deferred, brief, "%s",
                     brief ? "a brief host built the filter for a short text" : "the filter was not built for the turn");
        engine_release(e, s);

        /* two texts, each under 8 bytes an item, together over: the
         * filter waits through the first, and is built for the second */
        for (int k = 0; k < 2; k++) {
            buf text;
            buf_init(&text);
            while (text.len < (k ? N * 3 : N * 6)) buf_puts(&text, "nothing tracked in these words at all; ");
            buf_printf(&text, "then proj%04dcore.", 10 + 2 * k);
            end_turn(e, "s", text.p, NULL);
            buf_free(&text);
            cr_assert_eq(engine_acquire(e, "s", 0, &s), CLARITY_OK);
            cr_assert_eq(refs_of(&s->t, k ? "proj0012core" : "proj0010core"), 1);
            if (brief && !k) cr_assert(s->t.names_deferred, "built before the texts paid for it");
            if (k) cr_assert_eq(s->t.names_deferred, 0, "the filter was not built once the texts paid for it");
            engine_release(e, s);
        }
        engine_free(e);
    }
}

Test(prefilter, filter_rejects_most_untracked_words)
{
    tracker t;
    tracker_init(&t, 16);
    char id[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(id, sizeof id, "keyword:word%04d", i);
        tracker_touch(&t, id, CAT_KEYWORD, 0);
    }
    cr_assert(name_filter_test(&t.names, "word0007", 8));
    cr_assert(name_filter_test(&t.names, "WORD0007", 8), "case-insensitive");
    int passed = 0;
    for (int i = 0; i < 10000; i++) {
        snprintf(id, sizeof id, "other%05d", i);
        passed += name_filter_test(&t.names, id, strlen(id));
    }
    cr_assert_lt(passed, 200, "false positive rate %d/10000 too high", passed);
    tracker_free(&t);
}

/* Random text from an alphabet of word, path and separator bytes, in a
 * buffer of its exact size: words cross the 64-byte blocks of the
 * classified scan, runs of dots and hyphens appear, and a read past the
 * end is an ASan error. */
Test(prefilter, filtered_candidates_equal_unfiltered_on_random_text)
{
    clarity_config cfg;
    extractor *ex = default_extractor(&cfg);
    static const char alpha[] = "abAB01_-./ ~@+:\n\xc3";
    srand(11);
    size_t total = 0;
    for (int round = 0; round < 400; round++) {
        size_t len = (size_t)(rand() % 700);
        char *text = malloc(len ? len : 1);
        for (size_t i = 0; i < len; i++) text[i] = alpha[rand() % (sizeof alpha - 1)];
        tracker t;
        tracker_init(&t, 16);
        /* track the forms of a few slices of the text itself */
        for (int k = 0; k < 6 && len; k++) {
            size_t a = (size_t)rand() % len, n = 1 + (size_t)rand() % 12;
            if (a + n > len) n = len - a;
            extract_candidates(ex, text + a, n, "/ws", track, &t);
        }
        total += round_hits(ex, &t, text, len, round);
    }
    cr_assert_gt(total, 2000, "only %zu hits: the texts name too little to compare", total);
    extract_free(ex);
    config_free(&cfg);
}

/* Words that repeat, as prose and code repeat them, in texts long enough
 * for the scan's memo of decided words: case variants, words that share a
 * first 8 or 16 bytes, words longer than the memo keeps, words ending a
 * sentence, joined by '-', inside paths and at the very end of the buffer
 * (its exact size, so the memo's 16-byte reads past a word stay inside it
 * or are an ASan error). */
static const char *const vocab[] = {
    "config", "Config", "CONFIG", "configs", "config_", "configuration", "configurations",
    "configurationsX", "configurationsXY", "configurationsXYZ", "session", "Session", "sessions",
    "focus", "engine", "focus-engine", "ClaraCore", "claracore", "done.", "end..", "x", "ab", "abcdefgh",
    "abcdefghi", "abcdefghijklmnop", "abcdefghijklmnopq", "src/auth/session.ts", "session.ts", "SOUL.md",
    "web_search", "-config", "config-", "@config", "config@x", "~/config", "config/", "a.config", "12345",
    "the", "and", "Read", "read"};
#define NV (sizeof vocab / sizeof *vocab)

Test(prefilter, filtered_candidates_equal_unfiltered_on_long_repetitive_text)
{
    clarity_config cfg;
    extractor *ex = default_extractor(&cfg);
    static const char *const seps[] = {" ", " ", " ", "\n", ", ", "(", ")", ": ", "\"", "\t"};
    srand(13);
    size_t total = 0;
    for (int round = 0; round < 120; round++) {
        size_t want = 512 + (size_t)(rand() % 6000);
        char *text = malloc(want + 64);
        size_t len = 0;
        while (len < want) {
            const char *w = vocab[rand() % NV], *sep = seps[rand() % (sizeof seps / sizeof *seps)];
            memcpy(text + len, w, strlen(w));
            len += strlen(w);
            memcpy(text + len, sep, strlen(sep));
            len += strlen(sep);
        }
        if (rand() % 2) len -= 1; /* sometimes a word ends the text */
        char *exact = malloc(len);
        memcpy(exact, text, len);
        free(text);
        tracker t;
        tracker_init(&t, 16);
        /* a third of the words tracked, or a few: the scan then meets
         * mostly repeats it has decided, or mostly words no name equals,
         * and runs its memo or its first word test first (candidates.c,
         * EX_ORDER_SAMPLE) */
        int one_in = round % 2 ? 3 : 14;
        for (size_t k = 0; k < NV; k++)
            if (rand() % one_in == 0) extract_candidates(ex, vocab[k], strlen(vocab[k]), "/ws", track, &t);
        /* a hyphen run tracked without its words: only the run's last word
         * can find it, so that word must be looked at inside the run even
         * when the memo has it alone */
        if (rand() % 2) tracker_touch(&t, "focus_engine", CAT_PROJECT, 0);
        total += round_hits(ex, &t, exact, len, round);
    }
    cr_assert_gt(total, 2000, "only %zu hits: the texts name too little to compare", total);
    extract_free(ex);
    config_free(&cfg);
}

/* A long text names thousands of distinct words: the memo grows to its
 * largest (EX_MEMO_SLOTS_MAX slots) and evicts all along, and the next
 * short text reuses the grown store.  The hits stay the unfiltered scan's. */
Test(prefilter, filtered_candidates_equal_unfiltered_on_a_long_text_of_many_names)
{
    clarity_config cfg;
    extractor *ex = default_extractor(&cfg);
    srand(17);
    size_t total = 0;
    for (int round = 0; round < 3; round++) {
        size_t want = round == 1 ? 4000 : 320 * 1024;
        char *text = malloc(want + 64);
        size_t len = 0;
        tracker t;
        tracker_init(&t, 16);
        while (len < want) {
            int r = rand();
            if (r % 3 == 0) {
                len += (size_t)sprintf(text + len, "Name%05dPart ", r / 3 % 20000);
            } else {
                const char *w = vocab[r % NV];
                memcpy(text + len, w, strlen(w));
                len += strlen(w);
                text[len++] = r % 7 ? ' ' : '\n';
            }
        }
        for (int k = 0; k < 20000; k += 1 + rand() % 4) {
            char id[32];
            snprintf(id, sizeof id, "name%05dpart", k);
            tracker_touch(&t, id, CAT_PROJECT, 0);
        }
        for (size_t k = 0; k < NV; k += 3) extract_candidates(ex, vocab[k], strlen(vocab[k]), "/ws", track, &t);
        total += round_hits(ex, &t, text, len, round);
    }
    cr_assert_gt(total, 5000, "only %zu hits: the texts name too little to compare", total);
    extract_free(ex);
    config_free(&cfg);
}

#if EX_AVX2
__attribute__((target("avx2,bmi,bmi2"))) static void classify_avx2(const char *p, size_t n, ex_cls *c, int open)
{
    if (open) ex_classify_open_avx2(p, n, c);
    else ex_classify_avx2(p, n, c);
}
#endif

/* The classes of p[0..n) by the SSE2 (or table) classifier, or by AVX2;
 * '[' with them when open. */
static void classify_with(int avx2, int open, const char *p, size_t n, ex_cls *c)
{
#if EX_AVX2
    if (avx2) {
        classify_avx2(p, n, c, open);
        return;
    }
#endif
    if (open) ex_classify_open(p, n, c);
    else ex_classify(p, n, c);
}

Test(prefilter, block_classes_equal_the_byte_table)
{
    srand(5);
    unsigned char p[64];
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)(rand() % 65);
        for (size_t i = 0; i < 64; i++) p[i] = (unsigned char)(round < 4 ? round * 64 + (int)i : rand());
        for (int simd = 0; simd <= ex_cpu_avx2(); simd++)
            for (int open = 0; open <= 1; open++) {
                ex_cls c;
                classify_with(simd, open, (const char *)p, n, &c);
                for (size_t i = 0; i < 64; i++) {
                    int in = i < n;
                    cr_assert_eq((int)(c.word >> i & 1), in && ex_is_word(p[i]), "byte 0x%02x, avx2 %d", p[i], simd);
                    cr_assert_eq((int)(c.path >> i & 1), in && ex_is_path_char(p[i]), "byte 0x%02x, avx2 %d", p[i],
                                 simd);
                    cr_assert_eq((int)(c.dot >> i & 1), in && p[i] == '.', "byte 0x%02x, avx2 %d", p[i], simd);
                    cr_assert_eq((int)(c.slash >> i & 1), in && p[i] == '/', "byte 0x%02x, avx2 %d", p[i], simd);
                    cr_assert_eq((int)(c.open >> i & 1), open && in && p[i] == '[', "byte 0x%02x, avx2 %d, open %d",
                                 p[i], simd, open);
                }
            }
    }
}

/* A token's words as the word runs iterator gives them, against a byte
 * loop: texts of word bytes, path bytes, other bytes and high bytes in
 * runs of every length around the 64-byte chunks, read in place (room to
 * spare) and through the padded copy (room = n). */
Test(prefilter, word_runs_equal_the_byte_loop)
{
    static const char alphabet[] = "aZ_09-./~@+ \n\x80\xff[";
    srand(23);
    char *t = malloc(400 + 64);
    cr_assert(t);
    size_t total = 0;
    for (int round = 0; round < 6000; round++) {
        size_t n = (size_t)(rand() % 400), room = n + (round & 1 ? (size_t)(rand() % 65) : 0);
        int bias = rand() % 4; /* 0: mostly word bytes, with runs past 64 and 128 */
        for (size_t i = 0; i < room; i++) {
            int r = rand();
            t[i] = (bias == 0 && r % 97) || (bias && r % 3) ? "aZ_09"[r % 5] : alphabet[r % (sizeof alphabet - 1)];
        }
        ex_word_runs it;
        ex_word_runs_init(&it, t, n, room);
        size_t i = 0, a, b;
        for (;;) {
            while (i < n && !ex_is_word((unsigned char)t[i])) i++;
            if (i == n) break;
            size_t ea = i;
            while (i < n && ex_is_word((unsigned char)t[i])) i++;
            cr_assert_eq(ex_word_runs_next(&it, &a, &b), 1, "round %d: the run at %zu is missing", round, ea);
            cr_assert(a == ea && b == i, "round %d: run [%zu, %zu), expected [%zu, %zu)", round, a, b, ea, i);
            total++;
        }
        cr_assert_eq(ex_word_runs_next(&it, &a, &b), 0, "round %d: a run past the last, at %zu", round, a);
    }
    cr_assert_gt(total, 50000);
    free(t);
}

#if EX_AVX2
__attribute__((target("avx2,bmi,bmi2"))) static uint64_t misses_avx2(const name_filter *f, const char *t, uint64_t cand,
                                                                      uint64_t word, uint64_t next_word)
{
    return ex_word_misses_avx2(f, t, cand, word, next_word);
}
#endif

/* The first word test of a block's words, one at a time and in batches,
 * against name_filter_word_may word by word: filters of three sizes
 * holding names of 1 to 20 bytes, blocks of words of every length (some
 * the names, in other cases; runs into the next block and past it), any
 * subset of the starts. */
Test(prefilter, word_batches_equal_the_one_at_a_time_test)
{
    static const char wordc[] = "aZq_09xYk", other[] = " .-/\n\x80[";
    srand(31);
    enum { NN = 300 };
    char names[NN][24];
    size_t total = 0, missed = 0, batched = 0;
    const size_t sizes[] = {16, 4096, (size_t)1 << 20};
    for (size_t si = 0; si < 3; si++) {
        name_filter f = {0};
        cr_assert_eq(name_filter_reset(&f, sizes[si]), 0);
        for (int i = 0; i < NN; i++) {
            size_t n = 1 + (size_t)(rand() % 20);
            for (size_t k = 0; k < n; k++) names[i][k] = wordc[rand() % (sizeof wordc - 1)];
            names[i][n] = '\0';
            name_filter_add(&f, names[i], n, names[i], n);
        }
        char t[64 * 3];
        for (int round = 0; round < 20000; round++) {
            /* short words (up to 32 a block), long ones, names in any case */
            int shape = rand() % 4;
            for (size_t i = 0; i < sizeof t;) {
                if (shape == 3 && rand() % 3 == 0) {
                    const char *nm = names[rand() % NN];
                    for (size_t k = 0; nm[k] && i < sizeof t; k++, i++)
                        t[i] = rand() % 2 || (nm[k] | 0x20) < 'a' || (nm[k] | 0x20) > 'z' ? nm[k] : (char)(nm[k] ^ 0x20);
                    if (i < sizeof t) t[i++] = ' ';
                    continue;
                }
                size_t run = shape == 0 ? 1 + (size_t)(rand() % 2) : 1 + (size_t)(rand() % (shape == 1 ? 90 : 12));
                for (size_t k = 0; k < run && i < sizeof t; k++) t[i++] = wordc[rand() % (sizeof wordc - 1)];
                if (i < sizeof t) t[i++] = other[rand() % (sizeof other - 1)];
            }
            uint64_t word = 0, next = 0;
            for (int i = 0; i < 64; i++) {
                word |= (uint64_t)ex_is_word((unsigned char)t[i]) << i;
                next |= (uint64_t)ex_is_word((unsigned char)t[64 + i]) << i;
            }
            int carry = rand() % 2 && ex_is_word((unsigned char)t[0]); /* a word from the block before */
            uint64_t starts = word & ~((word << 1) | (uint64_t)carry);
            uint64_t cand = starts & ((uint64_t)rand() << 33 ^ (uint64_t)rand() << 11 ^ (uint64_t)rand() ^
                                      (rand() % 3 ? ~(uint64_t)0 : 0));
            uint64_t want = 0;
            for (uint64_t c = cand; c; c &= c - 1) {
                unsigned bit = (unsigned)__builtin_ctzll(c);
                size_t n = 0;
                while (bit + n < 128 && ex_is_word((unsigned char)t[bit + n])) n++;
                int straddles = bit + n >= 64;
                int miss = !(straddles && n >= 63) && !name_filter_word_may(&f, name_load8(t + bit), n);
                want |= (uint64_t)miss << bit;
                missed += (size_t)miss;
                total++;
            }
            uint64_t one = ex_word_misses(&f, t, cand, word, next);
            cr_assert_eq(one, want, "size %zu, round %d: one at a time %#llx, expected %#llx", sizes[si], round,
                         (unsigned long long)one, (unsigned long long)want);
#if EX_AVX2
            if (ex_cpu_avx2()) {
                uint64_t many = misses_avx2(&f, t, cand, word, next);
                cr_assert_eq(many, want, "size %zu, round %d: batched %#llx, expected %#llx", sizes[si], round,
                             (unsigned long long)many, (unsigned long long)want);
                batched++;
            }
#endif
        }
        name_filter_free(&f);
    }
    /* both outcomes are common, and every batch count is reached */
    cr_assert_gt(missed, total / 5, "%zu of %zu words missed", missed, total);
    cr_assert_lt(missed, total - total / 5, "%zu of %zu words missed", missed, total);
    if (ex_cpu_avx2()) cr_assert_eq(batched, 60000);
}

#if EX_AVX2
__attribute__((target("avx2,bmi,bmi2"))) static uint64_t hits_bmi2(const ex_memo *m, const char *t, uint64_t cand,
                                                                   uint64_t word, uint64_t next_word, int counted)
{
    return ex_memo_hits_bmi2(m, t, cand, word, next_word, counted);
}
#endif

/* The memo's test of a block's words, the C loop and the loop written out
 * (wordbatch.h), on random blocks: words of 1 to 20 bytes (some in the
 * memo, some sharing a slot's first 8 bytes with one that is), any subset
 * of the starts; the same hits, and the same counts added to the slots. */
Test(prefilter, memo_hits_written_out_equal_the_c_loop)
{
#if EX_AVX2
    if (!ex_cpu_avx2()) cr_skip_test("no AVX2 and BMI2 here: the loop written out runs only where they are");
    static const char wordc[] = "aZq_09xYk", other[] = " .-/\n[";
    srand(57);
    enum { NW = 40 };
    char words[NW][24];
    for (int i = 0; i < NW; i++) { /* every length twice; some share the first 8 bytes of the word before */
        size_t n = 1 + (size_t)(i % 20), shared = i % 8 == 1 ? strlen(words[i - 1]) : 0;
        for (size_t k = 0; k < n; k++) words[i][k] = k < 8 && k < shared ? words[i - 1][k] : wordc[rand() % 9];
        words[i][n] = '\0';
    }
    ex_memo_store st = {0};
    ex_memo m;
    ex_memo_init(&m, 4096, 1, &st);
    cr_assert_not_null(m.key);
    size_t slots = (size_t)1 << (64 - m.shift);
    uint32_t *before = malloc(slots * sizeof *before);
    cr_assert_not_null(before);
    size_t total = 0, hit = 0;
    char t[64 * 3 + 16];
    memset(t, ' ', sizeof t);
    for (int round = 0; round < 20000; round++) {
        for (size_t i = 0; i < 64 * 3;) {
            const char *w = words[rand() % NW];
            char tmp[24];
            if (rand() % 4 == 0) { /* a word the memo never holds */
                size_t n = 1 + (size_t)(rand() % 20);
                for (size_t k = 0; k < n; k++) tmp[k] = wordc[rand() % 9];
                tmp[n] = '\0';
                w = tmp;
            }
            for (size_t k = 0; w[k] && i < 64 * 3; k++) t[i++] = w[k];
            if (i < 64 * 3) t[i++] = other[rand() % 6];
        }
        /* some of the vocabulary in the memo, with counts under way */
        for (int k = 0; k < 8; k++) {
            const char *w = words[rand() % NW];
            size_t n = strlen(w);
            if (n > EX_MEMO_MAX) continue;
            char pad[32] = {0};
            memcpy(pad, w, n);
            uint64_t key[2];
            size_t slot = ex_memo_slot(&m, pad, 0, n, key);
            ex_memo_put(&m, slot, key);
            m.cnt[slot] = (uint32_t)(rand() % 5);
        }
        uint64_t word = 0, next = 0;
        for (int i = 0; i < 64; i++) {
            word |= (uint64_t)ex_is_word((unsigned char)t[i]) << i;
            next |= (uint64_t)ex_is_word((unsigned char)t[64 + i]) << i;
        }
        uint64_t starts = word & ~(word << 1);
        uint64_t cand = starts & ((uint64_t)rand() << 33 ^ (uint64_t)rand() << 11 ^ (uint64_t)rand() ^
                                  (rand() % 3 ? ~(uint64_t)0 : 0));
        for (int counted = 0; counted <= 1; counted++) {
            memcpy(before, m.cnt, slots * sizeof *before);
            uint64_t want = ex_memo_hits(&m, t, cand, word, next, counted);
            uint32_t *after_c = malloc(slots * sizeof *after_c);
            cr_assert_not_null(after_c);
            memcpy(after_c, m.cnt, slots * sizeof *after_c);
            memcpy(m.cnt, before, slots * sizeof *before);
            uint64_t got = hits_bmi2(&m, t, cand, word, next, counted);
            cr_assert_eq(got, want, "round %d, counted %d: %#llx written out, %#llx in C", round, counted,
                         (unsigned long long)got, (unsigned long long)want);
            cr_assert_eq(memcmp(after_c, m.cnt, slots * sizeof *after_c), 0, "round %d, counted %d: counts differ",
                         round, counted);
            if (!counted) {
                memcpy(m.cnt, before, slots * sizeof *before);
                cr_assert_eq(memcmp(after_c, before, slots * sizeof *before), 0, "uncounted hits changed a count");
            }
            free(after_c);
            total += (size_t)__builtin_popcountll(cand);
            hit += (size_t)__builtin_popcountll(want);
        }
        if (round % 64 == 63) ex_memo_init(&m, 4096, 1, &st); /* the memo emptied now and then */
    }
    /* both outcomes are common */
    cr_assert_gt(hit, total / 5, "%zu of %zu words hit", hit, total);
    cr_assert_lt(hit, total - total / 5, "%zu of %zu words hit", hit, total);
    free(before);
    ex_memo_store_free(&st);
#else
    cr_skip_test("not an x86-64 build: no loop written out to compare");
#endif
}

static unsigned char fold_byte(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return (unsigned char)(c + 32);
    return c == '-' ? '_' : c;
}

Test(prefilter, eight_lane_fold_equals_the_byte_fold)
{
    srand(9);
    for (int round = 0; round < 20000; round++) {
        unsigned char b[8];
        for (int k = 0; k < 8; k++) b[k] = (unsigned char)(round < 32 ? round * 8 + k : rand());
        uint64_t x = name_load8((const char *)b), f = name_fold8(x);
        for (int k = 0; k < 8; k++) cr_assert_eq((unsigned char)(f >> (8 * k)), fold_byte(b[k]), "byte 0x%02x", b[k]);
    }
    cr_assert_eq(name_hash("Focus-Engine", 12), name_hash("focus_engine", 12));
    cr_assert_eq(name_hash("SRC/Auth/Session.TS-x", 21), name_hash("src/auth/session.ts_x", 21));
    cr_assert_neq(name_hash("focus", 5), name_hash("focus ", 6));
}

/* A memory file's id is its name ("file:soul.md") or its memory/ or docs/
 * tail, whatever folder the text puts it in: the filter must let the
 * tails of relative paths through too (found by fuzz_prefilter). */
Test(prefilter, memory_files_inside_relative_paths_pass_the_filter)
{
    clarity_config cfg;
    extractor *ex = default_extractor(&cfg);
    tracker t;
    tracker_init(&t, 16);
    tracker_touch(&t, "file:soul.md", CAT_FILE, 0);
    tracker_touch(&t, "file:memory/active-context.md", CAT_FILE, 0);
    tracker_touch(&t, "file:docs/guide.md", CAT_FILE, 0);
    const char *text = "Clare/ws/SOUL.md, notes/memory/active-context.md and web/docs/guide.md";
    cr_assert_eq(same_hits(ex, &t, text, strlen(text), 0, "memory files"), 3,
                 "the unfiltered scan finds the three files");
    tracker_free(&t);
    extract_free(ex);
    config_free(&cfg);
}

/* Ids no text yields but a store or an import may hold (keyword forms of
 * stopwords, of digits and of words under the minimum length): the
 * filter lets them through, and the scan must still not report them. */
Test(prefilter, tracked_ids_the_forms_never_yield_stay_unreported)
{
    clarity_config cfg;
    extractor *ex = default_extractor(&cfg);
    tracker t;
    tracker_init(&t, 16);
    static const char *const ids[] = {"keyword:the", "keyword:12345", "keyword:ab", "keyword:because",
                                      "keyword:parser", "tool:the", "the"};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
        tracker_touch(&t, ids[i], tracker_category_of_id(ids[i]), 0);
    const char *text = "The 12345 ab because parser THE Parser";
    hits h = {&t, NULL, 0};
    extract_filter f = {&t.names, NULL};
    extract_candidates_filtered(ex, text, strlen(text), "/ws", &f, collect, &h);
    qsort(h.ids, h.n, sizeof *h.ids, cmp);
    cr_assert_eq(h.n, 3, "got %zu ids", h.n);
    cr_assert_str_eq(h.ids[0], "keyword:parser");
    cr_assert_str_eq(h.ids[1], "the");
    cr_assert_str_eq(h.ids[2], "tool:the");
    hits_free(&h);
    same_hits(ex, &t, text, strlen(text), 0, "forms never yielded");
    tracker_free(&t);
    extract_free(ex);
    config_free(&cfg);
}

/* Hits of the filtered scan of what extract_strip_own leaves of text, by
 * the scan that finds the blocks itself (extract_candidates_stripped, and
 * ex_candidates_stripped with every text scanned that way) against the
 * filtered scan of the stripped copy; with each byte classifier.  Returns
 * the reference's hits. */
static size_t same_stripped_hits(extractor *ex, tracker *t, const char *text, size_t len, const char *what)
{
    buf s;
    buf_init(&s);
    extract_strip_own(text, len, &s);
    cr_assert(!buf_failed(&s));
    size_t n = 0;
    int avx2 = ex->avx2;
    for (int simd = 0; simd <= avx2; simd++) {
        ex->avx2 = simd;
        extract_filter f = {&t->names, NULL};
        hits ref = {t, NULL, 0};
        extract_candidates_filtered(ex, s.p ? s.p : "", s.len, "/ws", &f, collect, &ref);
        for (int way = 0; way < 2; way++) {
            hits got = {t, NULL, 0};
            if (way) ex_candidates_stripped(ex, text, len, "/ws", &f, collect, &got, 0);
            else extract_candidates_stripped(ex, text, len, "/ws", &f, collect, &got);
            cr_assert_eq(got.n, ref.n, "%s (avx2 %d, in scan %d): %zu hits against %zu of the stripped copy", what,
                         simd, way, got.n, ref.n);
            for (size_t i = 0; i < ref.n; i++)
                cr_assert_str_eq(got.ids[i], ref.ids[i], "%s (avx2 %d, in scan %d), hit %zu", what, simd, way, i);
            hits_free(&got);
        }
        n = ref.n;
        hits_free(&ref);
    }
    ex->avx2 = avx2;
    buf_free(&s);
    return n;
}

/* Texts of tracked names, own blocks whole and cut off, stray '[' and
 * markers, blank lines, with and without separators between them (a
 * block between two path bytes; a marker across a 64-byte block), in
 * buffers of their exact size; a few past EX_OWN_IN_SCAN. */
Test(prefilter, stripped_candidates_equal_those_of_the_stripped_copy)
{
    clarity_config cfg;
    extractor *ex = default_extractor(&cfg);
    static const char *const parts[] = {
        "[CLARITY CONTEXT]", "[CLARITY CONTEXT]\n", "[/CLARITY CONTEXT]", "[/CLARITY CONTEXT]\n", "\n\n", "[",
        "[CLARITY CONTEX", "CLARITY CONTEXT]", "a[i]", "[x]", "src/auth/session.ts", "ClaraCore", "focus-engine",
        "config", "session", "SOUL.md", "the", "and", "web_search", "x.py"};
    static const char *const seps[] = {" ", "", "\n", ", ", "/", "."};
    srand(19);
    size_t total = 0, with_block = 0;
    for (int round = 0; round < 300; round++) {
        size_t want = round % 100 == 99 ? EX_OWN_IN_SCAN + 4096 : (size_t)(rand() % 3000);
        char *text = malloc(want + 64);
        size_t len = 0;
        while (len < want) {
            const char *p = parts[rand() % (sizeof parts / sizeof *parts)];
            const char *sep = seps[rand() % (sizeof seps / sizeof *seps)];
            memcpy(text + len, p, strlen(p));
            len += strlen(p);
            memcpy(text + len, sep, strlen(sep));
            len += strlen(sep);
        }
        char *exact = malloc(len ? len : 1);
        memcpy(exact, text, len);
        free(text);
        tracker t;
        tracker_init(&t, 16);
        for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
            if (rand() % 2) extract_candidates(ex, parts[k], strlen(parts[k]), "/ws", track, &t);
        with_block += extract_find_own(exact, len) != NULL;
        char what[32];
        snprintf(what, sizeof what, "round %d", round);
        total += same_stripped_hits(ex, &t, exact, len, what);
        tracker_free(&t);
        free(exact);
    }
    cr_assert_gt(with_block, 200, "only %zu texts hold a block", with_block);
    cr_assert_gt(total, 2000, "only %zu hits: the texts name too little to compare", total);
    extract_free(ex);
    config_free(&cfg);
}

/* The tracked ids a filtered scan of text reports with workspace ws, in
 * order, joined by spaces into out. */
static void hits_of(extractor *ex, tracker *t, const char *text, const char *ws, char *out, size_t cap)
{
    hits h = {t, NULL, 0};
    extract_filter f = {&t->names, NULL};
    cr_assert_eq(extract_candidates_filtered(ex, text, strlen(text), ws, &f, collect, &h), 0);
    out[0] = '\0';
    for (size_t i = 0; i < h.n; i++) {
        size_t at = strlen(out);
        snprintf(out + at, cap - at, "%s%s", i ? " " : "", h.ids[i]);
    }
    hits_free(&h);
}

/* A path's program (extract/tokprog.h) is built once and run again by
 * later calls: what it emits must follow the filter of each call (an item
 * tracked since), and a program built for one workspace must not serve
 * another.  Each answer is checked against a new extractor's, which has
 * no programs yet. */
Test(prefilter, path_programs_follow_the_filter_and_the_workspace)
{
    clarity_config cfg;
    extractor *ex = default_extractor(&cfg);
    const char *text = "see /w1/src/a.ts, lib/b.py and ./docs/Guide.md";
    char got[512], fresh[512];
    tracker t;
    tracker_init(&t, 16);
    tracker_touch(&t, "file:other.ts", CAT_FILE, 0);
    hits_of(ex, &t, text, "/w1", got, sizeof got);
    cr_assert_str_eq(got, "", "nothing tracked yet is reported");
    tracker_touch(&t, "file:src/a.ts", CAT_FILE, 0);
    tracker_touch(&t, "file:lib/b.py", CAT_FILE, 0);
    tracker_touch(&t, "file:docs/guide.md", CAT_FILE, 0);
    tracker_touch(&t, "file:/w1/src/a.ts", CAT_FILE, 0);
    /* the same paths again: their programs now meet a filter that passes */
    hits_of(ex, &t, text, "/w1", got, sizeof got);
    cr_assert_str_eq(got, "file:src/a.ts file:lib/b.py file:docs/guide.md");
    /* in another workspace the first path stays absolute: its own id, then
     * its tails */
    hits_of(ex, &t, text, "/w2", got, sizeof got);
    cr_assert_str_eq(got, "file:/w1/src/a.ts file:src/a.ts file:lib/b.py file:docs/guide.md");
    for (int k = 0; k < 3; k++) {
        const char *ws = k == 1 ? "/w2" : k == 2 ? NULL : "/w1";
        hits_of(ex, &t, text, ws, got, sizeof got);
        extractor *ex2 = default_extractor(&cfg);
        hits_of(ex2, &t, text, ws, fresh, sizeof fresh);
        extract_free(ex2);
        cr_assert_str_eq(got, fresh, "workspace %s: the kept programs differ from a new extractor's",
                         ws ? ws : "(none)");
    }
    tracker_free(&t);
    extract_free(ex);
    config_free(&cfg);
}

/* The store behind the programs: found by the path's bytes, hash and
 * workspace alone; the oldest overwritten as the ring goes round. */
Test(prefilter, the_path_store_keeps_its_newest_programs)
{
    ex_tp_store s = {0};
    cr_assert_null(ex_tp_find(&s, "a", 1, 1, 0), "an empty store finds nothing");
    char key[16];
    unsigned char prog[200];
    memset(prog, 'p', sizeof prog);
    /* keys of 8 bytes, programs of 200, each hash its own index entry: the
     * ring holds the last EX_TP_RING / 208 of them, give or take the one
     * skipped where the ring wraps */
    const uint32_t n = 1500, held = (uint32_t)(EX_TP_RING / (8 + sizeof prog));
    cr_assert_lt(n, EX_TP_INDEX);
    cr_assert_lt(held + 2, n);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(key, sizeof key, "k%07u", i);
        prog[0] = (unsigned char)i;
        ex_tp_keep(&s, key, 8, i, 7, prog, sizeof prog);
    }
    cr_assert_not_null(s.index, "the store was allocated");
    for (uint32_t i = 0; i < n; i++) {
        snprintf(key, sizeof key, "k%07u", i);
        const unsigned char *p = ex_tp_find(&s, key, 8, i, 7);
        if (i + held < n + 1) {
            if (i + held + 1 < n) cr_assert_null(p, "program %u was overwritten", i);
            continue;
        }
        cr_assert_not_null(p, "program %u, of the last ring's worth, is found", i);
        cr_assert_eq(p[0], (unsigned char)i, "program %u is its own", i);
        cr_assert_eq(p[1], 'p');
        cr_assert_null(ex_tp_find(&s, key, 8, i, 8), "a program is for its own workspace");
        cr_assert_null(ex_tp_find(&s, key, 7, i, 7), "... and its own length");
        key[1] ^= 1;
        cr_assert_null(ex_tp_find(&s, key, 8, i, 7), "... and its own bytes, whatever the hash");
    }
    /* a set holds two paths: a third in a full set takes the older's
     * entry, and that one is built again */
    ex_tp_keep(&s, "other", 5, n - 1 + EX_TP_INDEX, 7, prog, 10);
    snprintf(key, sizeof key, "k%07u", n - 1);
    cr_assert_not_null(ex_tp_find(&s, key, 8, n - 1, 7), "the newer of the set stays");
    snprintf(key, sizeof key, "k%07u", n - 2);
    cr_assert_null(ex_tp_find(&s, key, 8, n - 2, 7), "the older of the set went");
    cr_assert_not_null(ex_tp_find(&s, "other", 5, n - 1 + EX_TP_INDEX, 7));
    /* a program larger than EX_TP_MAX is not kept */
    static unsigned char big[EX_TP_MAX + 1];
    ex_tp_keep(&s, "big", 3, 5, 7, big, sizeof big);
    cr_assert_null(ex_tp_find(&s, "big", 3, 5, 7));
    ex_tp_free(&s);
}

/* Paths whose hashes share their index bits are both kept (with one
 * entry a hash, the second took the first's), a path kept again takes its
 * own entry, not the other path's, and entries go stale as the ring goes
 * round. */
Test(prefilter, the_path_store_keeps_two_paths_a_set)
{
    ex_tp_store s = {0};
    unsigned char prog[16];
    memset(prog, 'q', sizeof prog);
    const uint32_t h = 12, h2 = 12 + EX_TP_INDEX; /* the same index bits */
    ex_tp_keep(&s, "src/a.c", 7, h, 7, prog, sizeof prog);
    ex_tp_keep(&s, "src/b.c", 7, h2, 7, prog, sizeof prog);
    cr_assert_not_null(ex_tp_find(&s, "src/a.c", 7, h, 7), "the first of the set");
    cr_assert_not_null(ex_tp_find(&s, "src/b.c", 7, h2, 7), "the second of the set");
    cr_assert_null(ex_tp_find(&s, "src/b.c", 7, h, 7), "a path is found under its own hash only");
    /* b.c, the newer, kept again: over its own entry, so a.c stays */
    ex_tp_keep(&s, "src/b.c", 7, h2, 7, prog, sizeof prog);
    cr_assert_not_null(ex_tp_find(&s, "src/a.c", 7, h, 7), "kept again, b.c took its own entry");
    cr_assert_not_null(ex_tp_find(&s, "src/b.c", 7, h2, 7));
    /* the ring goes round with paths of other sets: both go stale */
    static unsigned char big[EX_TP_MAX - 7]; /* with its 7-byte path, the largest kept */
    char key[16];
    for (uint32_t i = 0; i < 2 * EX_TP_RING / EX_TP_MAX; i++) {
        snprintf(key, sizeof key, "f%06u", i);
        ex_tp_keep(&s, key, 7, 100 + 2 * (i % 8), 7, big, sizeof big);
        cr_assert_not_null(ex_tp_find(&s, key, 7, 100 + 2 * (i % 8), 7), "filler %u kept", i);
    }
    cr_assert_null(ex_tp_find(&s, "src/a.c", 7, h, 7), "stale once the ring went round");
    cr_assert_null(ex_tp_find(&s, "src/b.c", 7, h2, 7));
    ex_tp_keep(&s, "src/a.c", 7, h, 7, prog, sizeof prog);
    ex_tp_keep(&s, "src/b.c", 7, h2, 7, prog, sizeof prog);
    cr_assert_not_null(ex_tp_find(&s, "src/a.c", 7, h, 7), "built again, both kept");
    cr_assert_not_null(ex_tp_find(&s, "src/b.c", 7, h2, 7));
    ex_tp_free(&s);
}

/* The ids and categories extract_tool_files reports for doc, as
 * "<category>:<id> " into out. */
static int log_all(void *ud, const char *id, int category)
{
    buf *b = ud;
    buf_printf(b, "%d:%s ", category, id);
    return 0;
}

static void tool_files_of(extractor *ex, const char *doc, const char *ws, int keep, char *out, size_t cap)
{
    buf b;
    buf_init(&b);
    ex->keep_programs = keep;
    cr_assert_eq(extract_tool_files(ex, doc, ws, log_all, &b), 0);
    ex->keep_programs = 1;
    cr_assert(!buf_failed(&b) && b.len < cap);
    snprintf(out, cap, "%s", b.p ? b.p : "");
    buf_free(&b);
}

/* The files pass of a tool call takes each path's canonical id from its
 * program, which the candidates pass over the same call (or an earlier
 * call, under any filter) built: the same ids, kinds and order as
 * normalizing each path afresh, in every workspace. */
Test(prefilter, tool_files_from_programs_equal_each_path_normalized)
{
    clarity_config cfg;
    extractor *ex = default_extractor(&cfg);
    static const char *const paths[] = {
        "src/auth/session.ts", "/ws/src/auth/session.ts", "/w2/lib/x.py", "./lib/x.py", "../up/y.go",
        "SOUL.md", "memory/Active-Context.md", "/ws/docs/Guide.md", "/elsewhere/docs/guide.md", "notes.txt",
        "Makefile", "a.ts.", "no-extension", "/", ".", "src//a.c", "session.ts", "x\\y.c"};
    static const char *const keys[] = {"file_path", "path", "paths", "command", "filePath"};
    static const char *const spaces[] = {"/ws", "/w2", NULL};
    tracker t;
    tracker_init(&t, 16);
    tracker_touch(&t, "file:src/auth/session.ts", CAT_FILE, 0);
    char got[2048], want[2048], doc[512];
    srand(11);
    size_t reported = 0;
    for (int round = 0; round < 400; round++) {
        const char *ws = spaces[rand() % 3];
        const char *key = keys[rand() % 5];
        const char *p = paths[rand() % (sizeof paths / sizeof *paths)];
        const char *q = paths[rand() % (sizeof paths / sizeof *paths)];
        json_t *o = json_object();
        if (rand() % 2) json_object_set_new(o, key, json_pack("[ss]", p, q));
        else json_object_set_new(o, key, json_string(p));
        json_object_set_new(o, "path", json_string(q));
        char *s = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        snprintf(doc, sizeof doc, "%s", s);
        free(s);
        /* now and then the candidates pass first, filtered or not, which
         * builds and keeps the programs the files pass then runs */
        if (rand() % 2) {
            hits h = {&t, NULL, 0};
            extract_filter f = {&t.names, NULL};
            if (rand() % 2) extract_candidates_filtered(ex, doc, strlen(doc), ws, &f, collect, &h);
            else extract_candidates_json(ex, doc, ws, collect, &h);
            hits_free(&h);
        }
        tool_files_of(ex, doc, ws, 0, want, sizeof want);
        tool_files_of(ex, doc, ws, 1, got, sizeof got);
        cr_assert_str_eq(got, want, "round %d, workspace %s: %s", round, ws ? ws : "(none)", doc);
        reported += strlen(want) > 0;
    }
    cr_assert_gt(reported, 200, "most documents name files (%zu of 400)", reported);
    /* what the reference gives, for the record */
    tool_files_of(ex, "{\"file_path\":\"/ws/src/a.ts\",\"path\":\"memory/Active-Context.md\"}", "/ws", 1, got,
                  sizeof got);
    cr_assert_str_eq(got, "2:file:src/a.ts 2:file:memory/active-context.md ");
    tracker_free(&t);
    extract_free(ex);
    config_free(&cfg);
}
