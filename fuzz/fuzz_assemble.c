/* fuzz_assemble: arbitrary transcripts for CLARITY_EV_ASSEMBLE.  The bytes
 * become messages (a byte of role, call pairing and size, then text up to a
 * '\x1e' separator), a budget, the turn start and the flags.  Invariants:
 * no crash; the system messages, the turn in progress and the newest turn
 * before it are never touched; a dropped message's pair is
 * dropped too; assembling the same transcript again right away changes
 * nothing; the output is deterministic (two sessions fed the same inputs
 * answer byte for byte the same). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/clarity.h"

int clarity_plugin_init(const clarity_host *host, const char *config_json, clarity_plugin *out,
                        char **errmsg);

#define MAXM 48

static const char *const roles[] = {"system", "user", "assistant", "tool"};

/* Assembles for session sid; *raw (malloc()ed) gets the answer's bytes. */
static json_t *run(clarity_plugin *p, clarity_assemble *a, const char *sid, char **raw)
{
    a->session_id = sid;
    clarity_event ev = {sizeof ev, CLARITY_EV_ASSEMBLE, 1, a};
    clarity_result r = {.struct_size = sizeof r};
    json_t *j = NULL;
    *raw = NULL;
    if (p->on_event(p->self, &ev, &r) == CLARITY_OK) {
        j = json_loadb(r.data, r.len, 0, NULL);
        if (!j || !(*raw = strdup(r.data))) abort();
    }
    p->release(p->self, &r);
    return j;
}

/* The first turn never touched: the newest one before the turn in
 * progress.  A turn opens at a user message and at an assistant message
 * after a tool result (each agent step). */
static int64_t first_protected_turn(const clarity_ctx_message *m, size_t n, size_t cur, int64_t *turn)
{
    int64_t t = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(m[i].role, "user") || (!strcmp(m[i].role, "assistant") && i && !strcmp(m[i - 1].role, "tool")))
            t++;
        turn[i] = t;
    }
    return (cur < n ? turn[cur] : t + 1) - 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static clarity_plugin p;
    if (!p.self) {
        clarity_host h = {.struct_size = sizeof h, .abi_version = CLARITY_ABI_VERSION};
        p.struct_size = sizeof p;
        char *err = NULL;
        if (clarity_plugin_init(&h, "{\"storage\":{\"backend\":\"memory\"},\"assemble\":"
                                    "{\"stubMinTokens\":1,\"protectRecentTurns\":1}}",
                                &p, &err) != 0)
            abort();
    }
    if (size < 4) return 0;
    clarity_ctx_message m[MAXM];
    char ids[MAXM][16], calls[MAXM][16];
    size_t n = 0, pos = 4;
    while (pos < size && n < MAXM) {
        uint8_t b = data[pos++];
        const char *text = (const char *)data + pos;
        const char *end = memchr(text, 0x1e, size - pos);
        size_t len = end ? (size_t)(end - text) : size - pos;
        pos += len + (end ? 1 : 0);
        memset(&m[n], 0, sizeof m[n]);
        m[n].struct_size = sizeof m[n];
        snprintf(ids[n], sizeof ids[n], "m%zu", n);
        m[n].id = ids[n];
        m[n].role = roles[b & 3];
        m[n].text = text;
        m[n].text_len = len;
        m[n].tokens = b & 0x80 ? (int64_t)(b >> 4 & 7) * 300 : -1;
        if (b & 0x10) {
            snprintf(calls[n], sizeof calls[n], "c%zu", (b & 3) == 3 && n ? n - 1 : n);
            m[n].tool_call_id = calls[n];
            m[n].tool_name = "Read";
            if ((b & 3) == 2) m[n].tool_args_json = "{\"file_path\":\"src/x.py\"}";
        }
        n++;
    }
    clarity_assemble a = {sizeof a, "fz", m, n, (int64_t)data[0] * 40, n ? data[1] % (n + 1) : 0,
                          data[2] & 1 ? CLARITY_ASSEMBLE_MAY_DROP : 0};
    char *raw, *raw_b;
    json_t *first = run(&p, &a, "fa", &raw), *twin = run(&p, &a, "fb", &raw_b);
    if (!first != !twin || (raw && strcmp(raw, raw_b) != 0)) abort(); /* deterministic */
    json_decref(twin);
    free(raw_b);
    free(raw);
    if (!first) return 0;
    int64_t turn[MAXM], recent = first_protected_turn(m, n, a.current_turn_start, turn);
    size_t k;
    json_t *act;
    json_array_foreach(json_object_get(first, "actions"), k, act) {
        json_int_t i = json_integer_value(json_object_get(act, "index"));
        if (i < 0 || (size_t)i >= n) abort();
        if (strcmp(m[i].role, "system") == 0 || (size_t)i >= a.current_turn_start || turn[i] >= recent)
            abort();
        if (!strcmp(json_string_value(json_object_get(act, "action")), "drop")) {
            /* its pair (same call id) must be dropped too */
            for (size_t j = 0; j < n; j++) {
                if ((json_int_t)j == i || !m[j].tool_call_id || !m[i].tool_call_id ||
                    strcmp(m[j].tool_call_id, m[i].tool_call_id) != 0)
                    continue;
                size_t q;
                json_t *o;
                int found = 0;
                json_array_foreach(json_object_get(first, "actions"), q, o)
                    found |= json_integer_value(json_object_get(o, "index")) == (json_int_t)j &&
                             !strcmp(json_string_value(json_object_get(o, "action")), "drop");
                if (!found && strcmp(m[j].role, m[i].role) != 0) abort();
            }
        }
    }
    json_t *second = run(&p, &a, "fa", &raw);
    free(raw);
    if (!second || json_is_true(json_object_get(second, "changed")) ||
        !json_equal(json_object_get(first, "actions"), json_object_get(second, "actions")))
        abort();
    json_decref(run(&p, &a, "fb", &raw)); /* keeps the twin's state equal */
    free(raw);
    json_decref(first);
    json_decref(second);
    return 0;
}
