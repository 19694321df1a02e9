/* fuzz_config: arbitrary JSON as a config.  Invariants: either accepted
 * (and its effective config round-trips) or refused with a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../include/clarity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    clarity_config cfg;
    char *err = NULL;
    int rc = config_parse(&cfg, s, &err);
    if (rc == CLARITY_OK) {
        char *json = config_to_json(&cfg);
        clarity_config again;
        char *err2 = NULL;
        if (!json || config_parse(&again, json, &err2) != CLARITY_OK) abort();
        config_free(&again);
        free(json);
        config_free(&cfg);
    } else if (rc == CLARITY_ECONFIG && (!err || !*err)) {
        abort();
    }
    free(err);
    free(s);
    return 0;
}
