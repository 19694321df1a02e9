/* fuzz_extract: mentions and reference candidates on arbitrary bytes.
 * Invariants: no crash, every reported id is non-empty NUL-terminated text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../extract/extract.h"

static extractor *ex;

static int check(void *ud, const char *id, int category)
{
    (void)ud;
    if (!id[0] || category < 0 || category > 4) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ex) {
        clarity_config cfg;
        char *err = NULL;
        if (config_parse(&cfg, "{\"extraction\":{\"customPatterns\":[{\"name\":\"ticket\","
                               "\"pattern\":\"\\\\b[A-Z]{2,}-\\\\d+\\\\b\"}]}}", &err) != 0 ||
            extract_new(&cfg, &ex, &err) != 0)
            abort();
        config_free(&cfg);
    }
    const char *text = (const char *)data;
    extract_mentions(ex, text, size, "/ws", check, NULL);
    extract_candidates(ex, text, size, "/ws", check, NULL);
    buf b;
    buf_init(&b);
    extract_strip_own(text, size, &b);
    if (b.len > size) abort();
    buf_free(&b);
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    extract_candidates_json(ex, s, "/ws", check, NULL);
    extract_tool_files(ex, s, NULL, check, NULL);
    extract_lookup_forms(ex, s, "/ws", check, NULL);
    free(extract_normalize_path(s, strlen(s), "/ws"));
    free(s);
    return 0;
}
