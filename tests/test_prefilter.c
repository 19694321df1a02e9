/* The reference prefilter must never hide a tracked item: for random texts
 * and random tracked sets, the filtered candidates that name a tracked item
 * are exactly the unfiltered ones that do. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "../config/config.h"
#include "../extract/extract.h"
#include "../tracker/tracker.h"

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

Test(prefilter, filtered_candidates_equal_unfiltered_on_tracked_items)
{
    clarity_config cfg;
    char *err = NULL;
    cr_assert_eq(config_parse(&cfg, NULL, &err), 0);
    extractor *ex;
    cr_assert_eq(extract_new(&cfg, &ex, &err), 0);
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
        hits filtered = {&t, NULL, 0}, all = {&t, NULL, 0};
        extract_candidates_filtered(ex, text, off, "/ws", &t.names, collect, &filtered);
        extract_candidates(ex, text, off, "/ws", collect, &all);
        cr_assert_gt(t.count, 0);
        qsort(filtered.ids, filtered.n, sizeof *filtered.ids, cmp);
        qsort(all.ids, all.n, sizeof *all.ids, cmp);
        cr_assert_eq(filtered.n, all.n, "round %d: %zu filtered vs %zu unfiltered hits in \"%s\"",
                     round, filtered.n, all.n, text);
        for (size_t i = 0; i < all.n; i++) cr_assert_str_eq(filtered.ids[i], all.ids[i]);
        hits_free(&filtered);
        hits_free(&all);
        tracker_free(&t);
    }
    extract_free(ex);
    config_free(&cfg);
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
