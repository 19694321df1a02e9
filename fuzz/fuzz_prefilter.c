/* fuzz_prefilter: the differential check of the reference prefilter.
 * Input: names to track, a 0x00 byte, then the text.  Every candidate form
 * of each name is tracked; the candidates the filtered scan (64-byte
 * classified blocks, word hashes read eight bytes at a time) reports that
 * name a tracked item must be exactly those the unfiltered scan reports,
 * in the same order.  The text is copied to a buffer of its exact size, so
 * a read past its end is an ASan error.  A short text is compared again
 * repeated past 512 bytes, where the scan keeps a memo of decided words.
 * The filtered scan runs with each byte classifier the CPU has (AVX2, SSE2),
 * and with whole words' forms through the word callback, and with the path
 * programs earlier inputs left, which the unfiltered scan does not use.  The scan that
 * leaves out clarity's own blocks as it goes must report what the filtered
 * scan of the stripped copy does.  The text's tokens, each a tool call's
 * path argument, give the same files from the kept programs as from each
 * path normalized afresh. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../extract/extract.h"
#include "../extract/internal.h"
#include "../tracker/tracker.h"
#include "../util/buf.h"

typedef struct hits {
    tracker *t;
    buf log;
} hits;

static int track(void *ud, const char *id, int category)
{
    tracker_touch(ud, id, category, 0);
    return 0;
}

static int collect(void *ud, const char *id, int category)
{
    hits *h = ud;
    if (tracker_find(h->t, id)) buf_append(&h->log, id, strlen(id) + 1);
    return 0;
}

/* The word path: each tracked id of a word's forms, once. */
static int collect_id_once(void *ud, const char *id, int category)
{
    hits *h = ud;
    size_t n = strlen(id) + 1;
    for (size_t i = 0; i < h->log.len;) {
        size_t l = strlen(h->log.p + i) + 1;
        if (l == n && memcmp(h->log.p + i, id, n) == 0) return 0;
        i += l;
    }
    return collect(ud, id, category);
}

static int collect_word(void *ud, const char *w, size_t n, unsigned forms)
{
    static const char *const pre[] = {"", "tool:", "keyword:"};
    char id[8 + EXTRACT_WORD_MAX + 1];
    if (n < 1 || n > EXTRACT_WORD_MAX || !forms || (forms & ~7u)) abort();
    for (int k = 0; k < 3; k++)
        if (forms >> k & 1) {
            size_t p = strlen(pre[k]);
            memcpy(id, pre[k], p);
            memcpy(id + p, w, n);
            id[p + n] = '\0';
            collect_id_once(ud, id, 0);
        }
    return 0;
}

/* Whether two scans returned the same and logged the same ids in order. */
static int same(int rx, const hits *x, int ry, const hits *y)
{
    return rx == ry && x->log.len == y->log.len && (!x->log.len || memcmp(x->log.p, y->log.p, x->log.len) == 0);
}

/* The scans of s[0, len) repeated reps times, in a buffer of its exact size. */
static void compare(extractor *ex, tracker *t, const char *s, size_t len, size_t reps)
{
    char *text = malloc(len * reps ? len * reps : 1);
    if (!text) abort();
    for (size_t i = 0; i < reps; i++) memcpy(text + i * len, s, len);
    hits a = {t, {0}};
    buf_init(&a.log);
    /* the reference builds every path's forms afresh; the filtered scans
     * below run the path programs kept from earlier inputs, built under
     * other filters (extract/tokprog.h) */
    ex->keep_programs = 0;
    int ra = extract_candidates(ex, text, len * reps, "/ws", collect, &a);
    ex->keep_programs = 1;
    /* the filtered scan with each byte classifier this CPU runs; and
     * without clarity's own blocks: the scan that finds them itself (on a
     * text of any length) reports what the filtered scan of the stripped
     * copy does */
    buf stripped;
    buf_init(&stripped);
    extract_strip_own(text, len * reps, &stripped);
    if (buf_failed(&stripped)) abort();
    int avx2 = ex->avx2;
    for (int simd = 0; simd <= avx2; simd++) {
        ex->avx2 = simd;
        hits f = {t, {0}}, r = {t, {0}}, o = {t, {0}};
        buf_init(&f.log);
        buf_init(&r.log);
        buf_init(&o.log);
        extract_filter ef = {&t->names, NULL};
        int rf = extract_candidates_filtered(ex, text, len * reps, "/ws", &ef, collect, &f);
        if (!same(rf, &f, ra, &a)) abort();
        int rr = extract_candidates_filtered(ex, stripped.p ? stripped.p : "", stripped.len, "/ws", &ef, collect, &r);
        int ro = ex_candidates_stripped(ex, text, len * reps, "/ws", &ef, collect, &o, 0);
        if (!same(rr, &r, ro, &o)) abort();
        buf_free(&f.log);
        buf_free(&r.log);
        buf_free(&o.log);
    }
    buf_free(&stripped);
    /* whole words through the word callback: the same ids, first
     * occurrences in the same order */
    hits w = {t, {0}};
    buf_init(&w.log);
    extract_filter ew = {&t->names, collect_word};
    int rw = extract_candidates_filtered(ex, text, len * reps, "/ws", &ew, collect_id_once, &w);
    if (!same(rw, &w, ra, &a)) abort();
    buf_free(&w.log);
    buf_free(&a.log);
    free(text);
}

static int log_all(void *ud, const char *id, int category)
{
    buf *b = ud;
    buf_putc(b, (char)('0' + category));
    buf_append(b, id, strlen(id) + 1);
    return 0;
}

/* Each space-separated token of s[0, len) (the first 32) as a tool
 * call's path argument: the files pass, which takes canonical ids from the
 * programs the scans above kept, reports what normalizing each afresh
 * does. */
static void compare_tool_files(extractor *ex, const char *s, size_t len)
{
    size_t pos = 0;
    for (int k = 0; k < 32 && pos < len; k++) {
        while (pos < len && (s[pos] == ' ' || s[pos] == '\n')) pos++;
        size_t a = pos;
        while (pos < len && s[pos] != ' ' && s[pos] != '\n') pos++;
        if (pos == a) break;
        json_t *o = json_pack("{s:s%}", "file_path", s + a, pos - a);
        if (!o) continue; /* not UTF-8: jansson takes no such string */
        char *doc = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        if (!doc) abort();
        buf want, got;
        buf_init(&want);
        buf_init(&got);
        ex->keep_programs = 0;
        int rw = extract_tool_files(ex, doc, "/ws", log_all, &want);
        ex->keep_programs = 1;
        int rg = extract_tool_files(ex, doc, "/ws", log_all, &got);
        if (rw != rg || want.len != got.len || (want.len && memcmp(want.p, got.p, want.len) != 0)) abort();
        buf_free(&want);
        buf_free(&got);
        free(doc);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static extractor *ex;
    if (!ex) {
        clarity_config cfg;
        char *err = NULL;
        if (config_parse(&cfg, NULL, &err) != 0 || extract_new(&cfg, &ex, &err) != 0) abort();
        config_free(&cfg);
    }
    const uint8_t *sep = memchr(data, 0, size);
    if (!sep) return 0;
    tracker t;
    tracker_init(&t, 16);
    /* names: lines of the first part */
    for (const uint8_t *p = data; p < sep;) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(sep - p));
        size_t n = (size_t)((nl ? nl : sep) - p);
        if (n) extract_candidates(ex, (const char *)p, n, "/ws", track, &t);
        p += n + 1;
    }
    size_t len = size - (size_t)(sep - data) - 1;
    size_t reps = len > 0 && len < 512 ? 600 / len + 1 : 1;
    compare(ex, &t, (const char *)sep + 1, len, 1);
    if (reps > 1) compare(ex, &t, (const char *)sep + 1, len, reps);
    compare_tool_files(ex, (const char *)sep + 1, len);
    tracker_free(&t);
    return 0;
}
