/* fuzz_rpc: arbitrary RPC params, command lines and hook text against one
 * engine (memory store).  The first byte picks the entry point. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../include/clarity.h"

int clarity_plugin_init(const clarity_host *host, const char *config_json, clarity_plugin *out,
                        char **errmsg);

static clarity_plugin p;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const methods[] = {
        "clarity.getScores", "clarity.anchor",     "clarity.unanchor",  "clarity.prune",
        "clarity.stats",     "clarity.setTier",    "clarity.getState",  "clarity.importState",
        "clarity.context",   "clarity.keepList",   "clarity.compacted", "clarity.trimOutput"};
    enum { N_METHODS = sizeof methods / sizeof *methods };
    if (!p.self) {
        clarity_host h = {.struct_size = sizeof h, .abi_version = CLARITY_ABI_VERSION};
        p.struct_size = sizeof p;
        char *err = NULL;
        if (clarity_plugin_init(&h, "{\"storage\":{\"backend\":\"memory\"}}", &p, &err) != 0) abort();
    }
    if (size < 1) return 0;
    char *s = malloc(size);
    if (!s) return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    clarity_result r = {.struct_size = sizeof r};
    unsigned sel = data[0];
    if (sel < 128) {
        p.rpc(p.self, methods[sel % N_METHODS], s, &r);
    } else if (sel < 192) {
        p.command(p.self, "fz", s, &r);
    } else {
        clarity_before_agent_start b = {sizeof b, "fz", "/ws", s, size - 1, NULL, 0};
        clarity_event ev = {sizeof ev, CLARITY_EV_BEFORE_AGENT_START, 1, &b};
        p.on_event(p.self, &ev, &r);
        p.release(p.self, &r);
        clarity_message m = {sizeof m, "assistant", s, size - 1, "Read", s};
        clarity_agent_end e = {sizeof e, "fz", &m, 1, 1, NULL, NULL};
        ev = (clarity_event){sizeof ev, CLARITY_EV_AGENT_END, 1, &e};
        p.on_event(p.self, &ev, &r);
    }
    p.release(p.self, &r);
    free(s);
    return 0;
}
