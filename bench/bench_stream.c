/* bench_stream.c: the turn stream shared with the original plugin's
 * harness (bench/original/harness.js), and clarity's replay of it.
 *
 * A stream is JSONL:
 *   {"kind":"header","items":N,"turns":T,"currentTurn":10,"promptBytes":..,"replyBytes":..,
 *    "density":32,"workspace":"/ws"}
 *   {"kind":"item","i":0,"cat":"project","text":"ProjAbcdeCore","mentionCount":1,
 *    "referenceCount":0,"lastMentionTurn":10}                        (N lines)
 *   {"kind":"turn","turn":0,"prompt":"...","reply":"...","toolName":"Read",
 *    "toolArgs":"{\"file_path\":\"/ws/docs/abcde.md\"}"}             (T lines)
 * Each implementation maps an item to its own id scheme: clarity
 * "projabcdecore" / "file:docs/abcde.md".
 */
#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define SESSION "stream"

int mode_gen_stream(int argc, char **argv)
{
    uint64_t items = 1000;
    long turns = 100;
    size_t prompt_bytes = 4096, reply_bytes = 16384;
    int density = 32;
    const char *out = NULL;
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--items")) items = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--turns")) turns = atol(argv[++i]);
        else if (!strcmp(argv[i], "--prompt")) prompt_bytes = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reply")) reply_bytes = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--density")) density = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--out")) out = argv[++i];
    }
    if (!out || items < 2) {
        fprintf(stderr, "usage: clarity_bench gen-stream --items N --turns T --out FILE\n");
        return 2;
    }
    FILE *f = fopen(out, "w");
    if (!f) {
        perror(out);
        return 1;
    }
    const int64_t turn0 = 10;
    fprintf(f, "{\"kind\":\"header\",\"items\":%llu,\"turns\":%ld,\"currentTurn\":%lld,\"promptBytes\":%zu,"
               "\"replyBytes\":%zu,\"density\":%d,\"workspace\":\"/ws\"}\n",
            (unsigned long long)items, turns, (long long)turn0, prompt_bytes, reply_bytes, density);
    char text[64];
    for (uint64_t i = 0; i < items; i++) {
        item_text(text, sizeof text, i);
        int64_t last = turn0 - (int64_t)(i % 12);
        fprintf(f, "{\"kind\":\"item\",\"i\":%llu,\"cat\":\"%s\",\"text\":\"%s\",\"mentionCount\":%llu,"
                   "\"referenceCount\":%llu,\"lastMentionTurn\":%lld}\n",
                (unsigned long long)i, item_kind(i) == ITEM_PROJECT ? "project" : "file", text,
                (unsigned long long)(1 + i % 5), (unsigned long long)(i % 3),
                (long long)(last < 0 ? 0 : last));
    }
    brng r;
    rng_seed(&r, 0x57EA3u + items);
    char *p = malloc(prompt_bytes + 128), *q = malloc(reply_bytes + 128), args[128], path[64];
    for (long t = 0; t < turns; t++) {
        gen_text(&r, p, prompt_bytes, items, density);
        gen_text(&r, q, reply_bytes, items, density);
        item_text(path, sizeof path, ((uint64_t)rng_next(&r) % (items / 2)) * 2 + 1);
        snprintf(args, sizeof args, "{\"file_path\":\"/ws/%s\"}", path);
        fprintf(f, "{\"kind\":\"turn\",\"turn\":%ld,\"prompt\":", t);
        json_str(f, p);
        fputs(",\"reply\":", f);
        json_str(f, q);
        fputs(",\"toolName\":\"Read\",\"toolArgs\":", f);
        json_str(f, args);
        fputs("}\n", f);
    }
    free(p);
    free(q);
    fclose(f);
    return 0;
}

typedef struct sturn {
    char *prompt, *reply, *tool_name, *tool_args;
    size_t plen, rlen;
} sturn;

static char *dupstr(json_t *o, const char *k, size_t *len)
{
    json_t *v = json_object_get(o, k);
    const char *s = json_string_value(v);
    if (!s) return NULL;
    size_t l = json_string_length(v);
    if (len) *len = l;
    char *d = malloc(l + 1);
    memcpy(d, s, l + 1);
    return d;
}

int mode_stream(int argc, char **argv)
{
    const char *path = NULL, *backend = "memory", *name = NULL;
    int warmup = 3;
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--stream")) path = argv[++i];
        else if (!strcmp(argv[i], "--backend")) backend = argv[++i];
        else if (!strcmp(argv[i], "--name")) name = argv[++i];
        else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[++i]);
    }
    if (!path || !name) {
        fprintf(stderr, "usage: clarity_bench stream --stream FILE --name OUT.json [--backend memory|sqlite|exclusive]\n");
        return 2;
    }
    FILE *in = fopen(path, "r");
    if (!in) {
        perror(path);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    long long n_items = 0, cur_turn = 0;
    size_t icap = 1 << 16, ioff = 0;
    char *items = malloc(icap);
    items[0] = '\0';
    sturn *turns = NULL;
    size_t n_turns = 0, turns_cap = 0;
    while ((got = getline(&line, &cap, in)) > 0) {
        json_error_t jerr;
        json_t *o = json_loadb(line, (size_t)got, 0, &jerr);
        if (!o) {
            fprintf(stderr, "%s: %s\n", path, jerr.text);
            return 1;
        }
        const char *kind = json_string_value(json_object_get(o, "kind"));
        if (kind && !strcmp(kind, "header")) {
            cur_turn = json_integer_value(json_object_get(o, "currentTurn"));
        } else if (kind && !strcmp(kind, "item")) {
            const char *cat = json_string_value(json_object_get(o, "cat"));
            const char *text = json_string_value(json_object_get(o, "text"));
            char id[128];
            snprintf(id, sizeof id, "%s%s", cat && !strcmp(cat, "file") ? "file:" : "", text);
            for (char *c = id; *c; c++) *c = (char)tolower((unsigned char)*c);
            if (ioff + 256 > icap) items = realloc(items, icap *= 2);
            ioff += (size_t)snprintf(items + ioff, icap - ioff,
                                     "%s{\"id\":\"%s\",\"mentionCount\":%lld,\"referenceCount\":%lld,"
                                     "\"lastMentionTurn\":%lld}",
                                     n_items ? "," : "", id,
                                     (long long)json_integer_value(json_object_get(o, "mentionCount")),
                                     (long long)json_integer_value(json_object_get(o, "referenceCount")),
                                     (long long)json_integer_value(json_object_get(o, "lastMentionTurn")));
            n_items++;
        } else if (kind && !strcmp(kind, "turn")) {
            if (n_turns == turns_cap) turns = realloc(turns, (turns_cap = turns_cap ? turns_cap * 2 : 64) * sizeof *turns);
            sturn *t = &turns[n_turns++];
            t->prompt = dupstr(o, "prompt", &t->plen);
            t->reply = dupstr(o, "reply", &t->rlen);
            t->tool_name = dupstr(o, "toolName", NULL);
            t->tool_args = dupstr(o, "toolArgs", NULL);
        }
        json_decref(o);
    }
    free(line);
    fclose(in);

    char cfg[700], db[512] = "";
    long long cap_items = n_items * 2 + 1000 > 5000 ? n_items * 2 + 1000 : 5000;
    if (!strcmp(backend, "sqlite") || !strcmp(backend, "exclusive")) {
        tmp_db(db, sizeof db, "stream");
        snprintf(cfg, sizeof cfg,
                 "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\",\"exclusive\":%s},\"limits\":{\"maxTrackedItems\":%lld}}",
                 db, strcmp(backend, "exclusive") ? "false" : "true", cap_items);
    } else {
        snprintf(cfg, sizeof cfg, "{\"storage\":{\"backend\":\"memory\"},\"limits\":{\"maxTrackedItems\":%lld}}",
                 cap_items);
    }
    bplug b;
    bp_open_lib(&b, g_plugin_path);
    bp_init(&b, cfg);
    bp_import(&b, SESSION, cur_turn, items);
    free(items);
    double *tb = malloc((n_turns + 1) * sizeof(double)), *te = malloc((n_turns + 1) * sizeof(double)),
           *tt = malloc((n_turns + 1) * sizeof(double));
    size_t n = 0;
    for (size_t i = 0; i < n_turns; i++) {
        sturn *t = &turns[i];
        uint64_t t0 = now_ns();
        int rc = bp_before(&b, SESSION, t->prompt, t->plen);
        uint64_t t1 = now_ns();
        rc |= bp_end(&b, SESSION, t->reply, t->rlen, t->tool_name, t->tool_args);
        uint64_t t2 = now_ns();
        if (rc != CLARITY_OK) return 1;
        if ((int)i < warmup && n_turns > (size_t)warmup * 2) continue;
        tb[n] = (double)(t1 - t0) / 1e3;
        te[n] = (double)(t2 - t1) / 1e3;
        tt[n] = (double)(t2 - t0) / 1e3;
        n++;
    }
    char *out = NULL;
    bp_rpc(&b, "clarity.stats", "{\"session\":\"" SESSION "\"}", &out);
    const char *p = out ? strstr(out, "\"totalItems\":") : NULL;
    long long final_items = p ? atoll(p + 13) : -1;
    free(out);
    bp_unload(&b);
    if (*db) rm_db(db);
    bstats sb = stats_of(tb, n), se = stats_of(te, n), st = stats_of(tt, n);
    FILE *f = open_out(name);
    fprintf(f, "{\"implementation\":\"clarity\",\"store\":\"%s\",\"items\":%lld,\"turns\":%zu,\"finalItems\":%lld",
            backend, n_items, n, final_items);
    json_stats(f, "before", &sb, 1);
    json_stats(f, "end", &se, 1);
    json_stats(f, "turn", &st, 1);
    fprintf(f, "}\n");
    fclose(f);
    fprintf(stderr, "stream clarity/%-6s %6lld items: before p50 %8.1f us, end p50 %8.1f us, turn p50 %8.1f us p99 %8.1f us\n",
            backend, n_items, sb.p50, se.p50, st.p50, st.p99);
    for (size_t i = 0; i < n_turns; i++) {
        free(turns[i].prompt);
        free(turns[i].reply);
        free(turns[i].tool_name);
        free(turns[i].tool_args);
    }
    free(turns);
    free(tb);
    free(te);
    free(tt);
    return 0;
}
