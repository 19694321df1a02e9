/* fuzz_extract: mentions and reference candidates on arbitrary bytes.
 * Invariants: no crash, every reported id is non-empty NUL-terminated text;
 * extract_tool_call reports exactly what extract_tool_files then
 * extract_candidates_json report, in the same order; extract_json_member
 * gives what jansson's json_object_get gives. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../extract/extract.h"

static extractor *ex;

static int check(void *ud, const char *id, int category)
{
    if (!id[0] || category < 0 || category > 4) abort();
    if (ud) { /* a log of what was reported */
        buf *b = ud;
        buf_putc(b, (char)('0' + category));
        buf_append(b, id, strlen(id) + 1);
    }
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
    buf two, one;
    buf_init(&two);
    buf_init(&one);
    extract_tool_files(ex, s, "/ws", check, &two);
    extract_candidates_json(ex, s, "/ws", check, &two);
    extract_tool_call(ex, s, "/ws", NULL, check, check, &one);
    if (two.len != one.len || (two.len && memcmp(two.p, one.p, two.len) != 0)) abort();
    buf_free(&two);
    buf_free(&one);
    static const char *const keys[] = {"file_path", "path", "command"};
    json_t *root = json_loads(s, 0, NULL);
    for (size_t first = 0; first < 3; first++) {
        const char *want = NULL;
        for (size_t k = first; k < 3 && !want; k++) want = json_string_value(json_object_get(root, keys[k]));
        buf m;
        buf_init(&m);
        int got = extract_json_member(s, keys + first, 3 - first, &m);
        if (got != (want != NULL) || (want && strcmp(m.p, want) != 0)) abort();
        buf_free(&m);
    }
    json_decref(root);
    extract_lookup_forms(ex, s, "/ws", check, NULL);
    free(extract_normalize_path(s, strlen(s), "/ws"));
    free(s);
    return 0;
}
