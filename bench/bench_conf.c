/* bench_conf.c: clarity's scores for a grid of item stats.
 *
 * For each scoring config, every combination of mentionCount,
 * referenceCount, age (currentTurn - lastMentionTurn) and anchored is
 * imported with clarity.importState and read back with clarity.getScores.
 * The grid, the configs and clarity's answers go to conformance-grid.json;
 * bench/original/harness.js feeds the same stats to the original's
 * RelevanceScorer and compares.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define SESSION "conf"

static const struct {
    const char *name, *scoring, *note;
    int expect_equal;
} configs[] = {
    {"defaults", "{}", "both sides' built-in defaults", 1},
    {"index.js scoring", "{\"halfLife\":5,\"recencyWindow\":3,\"recencyBonus\":20,\"referenceWeight\":15,"
                         "\"frequencyScale\":10,\"anchorBonus\":5}",
     "the scoring block of the original index.js DEFAULT_CONFIG", 1},
    {"custom", "{\"halfLife\":2.5,\"recencyWindow\":5,\"recencyBonus\":30,\"referenceWeight\":7,"
               "\"frequencyScale\":12,\"anchorBonus\":40}",
     "non-default values everywhere", 1},
    {"zeros", "{\"anchorBonus\":0,\"referenceWeight\":0}",
     "0 is a value for clarity; the original's `config.x || default` turns it into the default", 0},
};

static const int64_t mentions[] = {0, 1, 2, 3, 5, 8, 20, 100, 1000};
static const int64_t refs[] = {0, 1, 2, 5, 30};
static const int64_t ages[] = {-2, 0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 40, 100};
#define N_OF(a) (sizeof a / sizeof *a)
#define CURRENT_TURN 200

int mode_conformance(int argc, char **argv)
{
    bplug b;
    bp_open_lib(&b, g_plugin_path);
    FILE *f = open_out("conformance-grid.json");
    fprintf(f, "{\"currentTurn\":%d,\"configs\":[", CURRENT_TURN);
    size_t total = 0;
    for (size_t c = 0; c < N_OF(configs); c++) {
        char cfg[512];
        /* the original formula (scoring.model "original"): recency from the last mention */
        snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"memory\"},\"scoring\":%.*s%s\"model\":\"original\"}}",
                 (int)strlen(configs[c].scoring) - 1, configs[c].scoring,
                 strlen(configs[c].scoring) > 2 ? "," : "");
        bp_init(&b, cfg);
        size_t cap = 1 << 20, off = 0;
        char *items = malloc(cap);
        items[0] = '\0';
        size_t n = 0;
        for (size_t m = 0; m < N_OF(mentions); m++)
            for (size_t r = 0; r < N_OF(refs); r++)
                for (size_t a = 0; a < N_OF(ages); a++)
                    for (int anch = 0; anch < 2; anch++) {
                        off += (size_t)snprintf(items + off, cap - off,
                                                "%s{\"id\":\"c%05zu\",\"mentionCount\":%lld,\"referenceCount\":%lld,"
                                                "\"lastMentionTurn\":%lld,\"anchored\":%s}",
                                                n ? "," : "", n, (long long)mentions[m], (long long)refs[r],
                                                (long long)(CURRENT_TURN - ages[a]), anch ? "true" : "false");
                        n++;
                    }
        bp_import(&b, SESSION, CURRENT_TURN, items);
        char *out = NULL;
        if (bp_rpc(&b, "clarity.getScores", "{\"session\":\"" SESSION "\",\"includePruned\":true}", &out) != CLARITY_OK)
            return 1;
        json_error_t jerr;
        json_t *root = json_loads(out, 0, &jerr);
        json_t *arr = json_object_get(root, "items");
        /* index clarity's answers by id */
        json_t **by = calloc(n, sizeof *by);
        size_t k;
        json_t *it;
        json_array_foreach(arr, k, it)
        {
            const char *id = json_string_value(json_object_get(it, "id"));
            size_t idx = id ? strtoul(id + 1, NULL, 10) : n;
            if (idx < n) by[idx] = it;
        }
        fprintf(f, "%s{\"name\":\"%s\",\"scoring\":%s,\"note\":", c ? "," : "", configs[c].name, configs[c].scoring);
        json_str(f, configs[c].note);
        fprintf(f, ",\"expectEqual\":%s,\"cases\":[", configs[c].expect_equal ? "true" : "false");
        n = 0;
        for (size_t m = 0; m < N_OF(mentions); m++)
            for (size_t r = 0; r < N_OF(refs); r++)
                for (size_t a = 0; a < N_OF(ages); a++)
                    for (int anch = 0; anch < 2; anch++) {
                        json_t *x = by[n];
                        json_t *bd = json_object_get(x, "breakdown");
                        if (!x) {
                            fprintf(stderr, "conformance: c%05zu missing from getScores\n", n);
                            return 1;
                        }
                        fprintf(f,
                                "%s{\"id\":\"c%05zu\",\"mentionCount\":%lld,\"referenceCount\":%lld,"
                                "\"lastMentionTurn\":%lld,\"anchored\":%s,\"clarity\":{\"score\":%.17g,"
                                "\"frequency\":%.17g,\"recency\":%.17g,\"utility\":%.17g,\"stalenessPenalty\":%.17g,"
                                "\"anchor\":%.17g}}",
                                n ? "," : "", n, (long long)mentions[m], (long long)refs[r],
                                (long long)(CURRENT_TURN - ages[a]), anch ? "true" : "false",
                                json_number_value(json_object_get(x, "score")),
                                json_number_value(json_object_get(bd, "frequency")),
                                json_number_value(json_object_get(bd, "recency")),
                                json_number_value(json_object_get(bd, "utility")),
                                json_number_value(json_object_get(bd, "stalenessPenalty")),
                                json_number_value(json_object_get(bd, "anchor")));
                        n++;
                    }
        fprintf(f, "]}");
        total += n;
        free(by);
        json_decref(root);
        free(out);
        free(items);
        bp_unload(&b);
    }
    fprintf(f, "]}\n");
    fclose(f);
    fprintf(stderr, "conformance: clarity scored %zu cases in %zu configs\n", total, N_OF(configs));
    return 0;
}
