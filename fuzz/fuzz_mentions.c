/* fuzz_mentions: the differential check of the one-pass mention scanner.
 * extract_mentions (one walk over the words, CamelCase by byte tests) must
 * report exactly what extract_mentions_reference (the earlier separate
 * passes, CamelCase by PCRE2) reports: the same ids, categories and order,
 * and the same return code.  The first byte picks one of several configs
 * (defaults, short keywords, few keywords, custom patterns and exclusions,
 * categories off, a tool list of plain words) so each branch is compared.
 * A short input is compared again repeated past 512 bytes, where the scan
 * keeps a memo of the words it has decided. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../extract/extract.h"
#include "../extract/internal.h"

static const char *const CONFIGS[] = {
    "{}",
    "{\"extraction\":{\"minWordLength\":1,\"maxKeywordsPerMessage\":50}}",
    "{\"extraction\":{\"maxKeywordsPerMessage\":1,\"customPatterns\":[{\"name\":\"ticket\",\"pattern\":\"\\\\b[A-Z]{2,}-\\\\d+\\\\b\"}],"
    "\"exclude\":[\"^keyword:t\",\"^tool:e\",\"^file:src/x\"]}}",
    "{\"extraction\":{\"projects\":false,\"keywords\":false}}",
    "{\"extraction\":{\"toolNames\":false,\"memoryFiles\":false,\"sourceFiles\":true,\"maxKeywordsPerMessage\":0}}",
    "{\"extraction\":{\"tools\":[\"Bash\",\"web_search\",\"x\",\"Read\",\"read\"]}}",
};
#define N_CONFIGS (sizeof CONFIGS / sizeof *CONFIGS)

static int log_id(void *ud, const char *id, int category)
{
    buf *b = ud;
    buf_putc(b, (char)('0' + category));
    buf_append(b, id, strlen(id) + 1);
    return 0;
}

static void compare(extractor *x, const char *text, size_t len)
{
    buf ref;
    buf_init(&ref);
    int rr = extract_mentions_reference(x, text, len, "/ws", log_id, &ref);
    /* the scan with each byte classifier this CPU runs (AVX2, SSE2) */
    int avx2 = x->avx2;
    for (int simd = 0; simd <= avx2; simd++) {
        x->avx2 = simd;
        buf fast;
        buf_init(&fast);
        int rf = extract_mentions(x, text, len, "/ws", log_id, &fast);
        if (rf != rr || fast.len != ref.len || (fast.len && memcmp(fast.p, ref.p, fast.len) != 0)) abort();
        buf_free(&fast);
    }
    buf_free(&ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static extractor *ex[N_CONFIGS];
    if (!ex[0]) {
        for (size_t i = 0; i < N_CONFIGS; i++) {
            clarity_config cfg;
            char *err = NULL;
            if (config_parse(&cfg, CONFIGS[i], &err) != 0 || extract_new(&cfg, &ex[i], &err) != 0) abort();
            config_free(&cfg);
        }
    }
    if (size < 1) return 0;
    extractor *x = ex[data[0] % N_CONFIGS];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    compare(x, text, len);
    if (len > 0 && len < 512) { /* the text repeated, in a buffer of its exact size */
        size_t reps = 600 / len + 1;
        char *rep = malloc(len * reps);
        if (!rep) abort();
        for (size_t i = 0; i < reps; i++) memcpy(rep + i * len, text, len);
        compare(x, rep, len * reps);
        free(rep);
    }
    return 0;
}
