/* fuzz_state: state from outside.  The first byte picks:
 *   < 128  the bytes are a clarity.importState "state" value;
 *   else   the bytes are a stored row: the session's "meta" (bit 0), a
 *          turn-log record "l:0001" (bit 1), else an item row "i:x" (binary
 *          or JSON), in a host kv the plugin then loads.
 * Invariants: no crash; an accepted state exports with every number within
 * the bounds of tracker.h (turns 0..2^31-1, counts and times 0..2^53-1). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/clarity.h"

int clarity_plugin_init(const clarity_host *host, const char *config_json, clarity_plugin *out,
                        char **errmsg);

/* A one-session kv whose rows the harness sets. */
static char *row_meta, *row_item, *row_rec;
static size_t len_meta, len_item, len_rec;

static int kv_get(void *ud, const char *ns, const char *key, char **val, size_t *len)
{
    (void)ud, (void)ns;
    char *src = strcmp(key, "meta") == 0 ? row_meta : strcmp(key, "i:x") == 0 ? row_item
              : strcmp(key, "l:0001") == 0 ? row_rec : NULL;
    size_t n = strcmp(key, "meta") == 0 ? len_meta : strcmp(key, "i:x") == 0 ? len_item : len_rec;
    if (!src) return CLARITY_ENOTFOUND;
    *val = malloc(n + 1);
    if (!*val) return CLARITY_ENOMEM;
    memcpy(*val, src, n);
    *len = n;
    return CLARITY_OK;
}
static int kv_put(void *ud, const char *ns, const char *key, const char *val, size_t len)
{
    (void)ud, (void)ns, (void)key, (void)val, (void)len;
    return CLARITY_OK;
}
static int kv_del(void *ud, const char *ns, const char *key)
{
    (void)ud, (void)ns, (void)key;
    return CLARITY_OK;
}
static void kv_free(void *ud, char *v) { (void)ud, free(v); }
static int kv_iter(void *ud, const char *ns, const char *prefix, clarity_kv_iter_cb cb, void *cbud)
{
    (void)ud, (void)ns;
    if (row_item && strncmp("i:x", prefix, strlen(prefix)) == 0) cb(cbud, "i:x", row_item, len_item);
    if (row_rec && strncmp("l:0001", prefix, strlen(prefix)) == 0) cb(cbud, "l:0001", row_rec, len_rec);
    return CLARITY_OK;
}

static void check_bounds(json_t *v)
{
    const double turn_max = 2147483647.0, count_max = 9007199254740991.0;
    json_t *st = json_object_get(v, "value");
    double t = json_number_value(json_object_get(st, "currentTurn"));
    if (t < 0 || t > turn_max) abort();
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(st, "items"), i, it) {
        const char *k[] = {"mentionCount", "referenceCount", "createdAt"};
        for (int j = 0; j < 3; j++) {
            double x = json_number_value(json_object_get(it, k[j]));
            if (x < 0 || x > count_max) abort();
        }
        double lm = json_number_value(json_object_get(it, "lastMentionTurn"));
        if (lm < 0 || lm > turn_max) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static clarity_plugin mem, kv;
    if (!mem.self) {
        clarity_host h = {.struct_size = sizeof h, .abi_version = CLARITY_ABI_VERSION};
        mem.struct_size = kv.struct_size = sizeof mem;
        char *err = NULL;
        if (clarity_plugin_init(&h, "{\"storage\":{\"backend\":\"memory\"}}", &mem, &err) != 0) abort();
        h.kv_get = kv_get, h.kv_put = kv_put, h.kv_del = kv_del, h.kv_free = kv_free, h.kv_iter = kv_iter;
        if (clarity_plugin_init(&h, "{\"storage\":{\"backend\":\"host\",\"maxResidentSessions\":1}}",
                                &kv, &err) != 0)
            abort();
    }
    clarity_result r = {.struct_size = sizeof r};
    if (data[0] < 128) {
        json_t *state = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY, NULL);
        json_t *params = json_pack("{s:s,s:o?}", "session", "fz", "state", state);
        char *p = params ? json_dumps(params, JSON_COMPACT) : NULL;
        json_decref(params);
        if (p && mem.rpc(mem.self, "clarity.importState", p, &r) == CLARITY_OK) {
            mem.release(mem.self, &r);
            if (mem.rpc(mem.self, "clarity.exportState", "{\"session\":\"fz\"}", &r) != CLARITY_OK) abort();
            json_t *ex = json_loadb(r.data, r.len, 0, NULL);
            if (!ex) abort();
            check_bounds(ex);
            json_decref(ex);
            mem.release(mem.self, &r);
            if (mem.rpc(mem.self, "clarity.getScores", "{\"session\":\"fz\"}", &r) != CLARITY_OK) abort();
        }
        mem.release(mem.self, &r);
        free(p);
    } else {
        static char meta_ok[] = "{\"v\":1,\"currentTurn\":3}";
        int is_meta = data[0] & 1, is_rec = !is_meta && (data[0] & 2);
        row_meta = is_meta ? (char *)data + 1 : meta_ok;
        len_meta = is_meta ? size - 1 : sizeof meta_ok - 1;
        row_item = is_meta || is_rec ? NULL : (char *)data + 1;
        len_item = size - 1;
        row_rec = is_rec ? (char *)data + 1 : NULL;
        len_rec = size - 1;
        /* a fresh session each time: the one resident before is evicted */
        static unsigned n;
        char params[64];
        snprintf(params, sizeof params, "{\"session\":\"fz%u\"}", n++);
        if (kv.rpc(kv.self, "clarity.exportState", params, &r) == CLARITY_OK) {
            json_t *ex = json_loadb(r.data, r.len, 0, NULL);
            if (!ex) abort();
            check_bounds(ex);
            json_decref(ex);
        }
        kv.release(kv.self, &r);
    }
    return 0;
}
