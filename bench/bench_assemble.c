/* bench_assemble.c: the cost of CLARITY_EV_ASSEMBLE (clarity_bench assemble).
 *
 * A transcript of 200 messages and about 300,000 tokens (a user prompt, then
 * agent steps: a Read call and a tool output of ~6 KB, text from the seeded
 * generator naming tracked items), assembled under a budget of 30 % of it:
 *   cold         the first call of a fresh plugin (every message read);
 *   incremental  the next calls, each with one new step appended (what a
 *                host does before every model call);
 *   repeat       the same transcript again (nothing new).
 * Writes out/assemble.json.  Nothing is asserted on time here. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct transcript {
    clarity_ctx_message *m;
    char (*ids)[16], (*calls)[16], (*args)[64];
    char **text;
    size_t n;
} transcript;

static void build(transcript *t, size_t n, size_t step_bytes)
{
    t->m = calloc(n, sizeof *t->m);
    t->ids = calloc(n, sizeof *t->ids);
    t->calls = calloc(n, sizeof *t->calls);
    t->args = calloc(n, sizeof *t->args);
    t->text = calloc(n, sizeof *t->text);
    brng r;
    rng_seed(&r, 42);
    for (size_t i = 0; i < n; i++) {
        clarity_ctx_message *m = &t->m[i];
        m->struct_size = sizeof *m;
        snprintf(t->ids[i], sizeof t->ids[i], "m%zu", i);
        m->id = t->ids[i];
        m->tokens = -1;
        size_t len = i == 0 ? 2000 : i % 2 ? 200 : step_bytes;
        t->text[i] = malloc(len + 64);
        m->text_len = gen_text(&r, t->text[i], len, 1000, 32);
        m->text = t->text[i];
        m->role = i == 0 ? "user" : i % 2 ? "assistant" : "tool";
        if (i > 0) {
            snprintf(t->calls[i], sizeof t->calls[i], "c%zu", i % 2 ? i : i - 1);
            m->tool_call_id = t->calls[i];
            m->tool_name = "Read";
        }
        if (i % 2) {
            snprintf(t->args[i], sizeof t->args[i], "{\"file_path\":\"docs/f%zu.md\"}", i);
            m->tool_args_json = t->args[i];
        }
    }
    t->n = n;
}

static double call(bplug *b, transcript *t, size_t n, int64_t budget)
{
    clarity_assemble a = {sizeof a, "bench", t->m, n, budget, n, 0};
    clarity_event ev = {sizeof ev, CLARITY_EV_ASSEMBLE, 1, &a};
    clarity_result r = {.struct_size = sizeof r};
    uint64_t t0 = now_ns();
    int rc = b->p.on_event(b->p.self, &ev, &r);
    double us = (double)(now_ns() - t0) / 1e3;
    if (rc != CLARITY_OK) {
        fprintf(stderr, "assemble: %d %s\n", rc, r.error ? r.error : "");
        exit(1);
    }
    b->p.release(b->p.self, &r);
    return us;
}

int mode_assemble(int argc, char **argv)
{
    (void)argc, (void)argv;
    size_t n = g_smoke ? 40 : 200, steps = g_smoke ? 5 : 100;
    size_t bytes = g_smoke ? 2000 : 12000; /* ~3,000 tokens per tool output */
    transcript t;
    build(&t, n + 2 * steps, bytes);
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) total += (int64_t)t.m[i].text_len / 4;
    bplug b;
    bp_open_lib(&b, g_plugin_path);
    bp_init(&b, "{\"storage\":{\"backend\":\"memory\"}}");
    /* the items the text names are tracked, as in a real session */
    char *seed = seed_items_json(1000, 100);
    bp_import(&b, "bench", 100, seed);
    free(seed);
    int64_t budget = total * 3 / 10;
    double cold = call(&b, &t, n, budget);
    double *inc = calloc(steps, sizeof *inc), *rep = calloc(steps, sizeof *rep);
    for (size_t s = 0; s < steps; s++) {
        inc[s] = call(&b, &t, n + 2 * (s + 1), budget);
        rep[s] = call(&b, &t, n + 2 * (s + 1), budget);
    }
    bstats si = stats_of(inc, steps), sr = stats_of(rep, steps);
    printf("assemble: %zu messages, ~%lld tokens, budget %lld: cold %.0f us, incremental p50 %.0f us "
           "p99 %.0f us, repeat p50 %.0f us\n",
           n, (long long)total, (long long)budget, cold, si.p50, si.p99, sr.p50);
    FILE *f = open_out("assemble.json");
    fprintf(f, "{\"messages\":%zu,\"tokens\":%lld,\"budget\":%lld,\"cold_us\":%.1f,", n,
            (long long)total, (long long)budget, cold);
    json_stats(f, "incremental_us", &si, 1);
    json_stats(f, "repeat_us", &sr, 0);
    fputs("}\n", f);
    fclose(f);
    bp_unload(&b);
    free(inc);
    free(rep);
    return 0;
}
