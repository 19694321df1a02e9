/* bench_rss.c: RSS over one million turns on the default (SQLite) store.
 *
 * Small prompts (about 256 B) and replies (about 768 B) name known items,
 * and every prompt also names one brand-new item, so the item table fills up
 * to limits.maxTrackedItems (2000 here, --cap N) and then keeps evicting:
 * the steady state of a long session.  The Makefile puts this SQLite file
 * on tmpfs when it can: the soak measures memory, not the disk.  RSS and heap in use are sampled every
 * `every` turns; the verdict compares the last sample with the one taken
 * once the table is full (10% into the run).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define SESSION "rss"

int mode_rss(int argc, char **argv)
{
    long turns = g_smoke ? 5000 : 1000000;
    long every = g_smoke ? 500 : 10000;
    long cap = 2000; /* limits.maxTrackedItems: small enough that 1M turns take minutes */
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--turns")) turns = atol(argv[++i]);
        else if (!strcmp(argv[i], "--every")) every = atol(argv[++i]);
        else if (!strcmp(argv[i], "--cap")) cap = atol(argv[++i]);
    }
    if (every < 1) every = 1;
    const uint64_t known = 1000;
    bplug b;
    bp_open_lib(&b, g_plugin_path);
    char db[512], cfg[700];
    tmp_db(db, sizeof db, "rss");
    snprintf(cfg, sizeof cfg,
             "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"},\"limits\":{\"maxTrackedItems\":%ld}}",
             db, cap);
    bp_init(&b, cfg);
    char *items = seed_items_json(known, 10);
    bp_import(&b, SESSION, 10, items);
    free(items);

    /* Latencies go to a log histogram (1% buckets): an array of every
     * turn would itself grow RSS by 4-8 bytes a turn as it is touched. */
    enum { NB = 2400 };
    static uint32_t hist[NB];
    double lat_sum = 0, lat_min = 1e300, lat_max = 0;
    size_t n_samples = (size_t)(turns / every) + 2;
    long *s_turn = calloc(n_samples, sizeof *s_turn), *s_rss = calloc(n_samples, sizeof *s_rss);
    size_t *s_heap = calloc(n_samples, sizeof *s_heap);
    long long *s_items = calloc(n_samples, sizeof *s_items);
    size_t ns = 0;
    brng r;
    rng_seed(&r, 0x755u);
    char prompt[512], reply[1024], args[128], path[64];
    int progress = tty_progress();
    uint64_t start = now_ns();
    for (long t = 0; t <= turns; t++) {
        if (t % every == 0) {
            char *out = NULL;
            bp_rpc(&b, "clarity.stats", "{\"session\":\"" SESSION "\"}", &out);
            const char *p = out ? strstr(out, "\"totalItems\":") : NULL;
            s_items[ns] = p ? atoll(p + 13) : -1;
            free(out);
            s_turn[ns] = t;
            s_rss[ns] = rss_kb();
            s_heap[ns] = heap_in_use();
            ns++;
            if (progress) {
                double el = (double)(now_ns() - start) / 1e9;
                fprintf(stderr, "\rrss: turn %ld/%ld  RSS %ld kB  items %lld  %.0f s", t, turns,
                        s_rss[ns - 1], s_items[ns - 1], el);
            }
        }
        if (t == turns) break;
        size_t pl = gen_text(&r, prompt, 256, known, 16);
        pl += (size_t)item_text(prompt + pl, sizeof prompt - pl, known + (uint64_t)t);
        size_t rl = gen_text(&r, reply, 768, known, 32);
        item_text(path, sizeof path, (uint64_t)(rng_next(&r) % (known / 2)) * 2 + 1);
        snprintf(args, sizeof args, "{\"file_path\":\"/ws/%s\"}", path);
        uint64_t t0 = now_ns();
        int rc = bp_before(&b, SESSION, prompt, pl);
        rc |= bp_end(&b, SESSION, reply, rl, t % 4 ? NULL : "Read", t % 4 ? NULL : args);
        double l = (double)(now_ns() - t0) / 1e3;
        int bkt = l > 1 ? (int)(log(l) / log(1.01)) : 0;
        hist[bkt < NB ? bkt : NB - 1]++;
        lat_sum += l;
        if (l < lat_min) lat_min = l;
        if (l > lat_max) lat_max = l;
        if (rc != CLARITY_OK) {
            fprintf(stderr, "\nrss: turn %ld failed\n", t);
            return 1;
        }
    }
    double secs = (double)(now_ns() - start) / 1e9;
    if (progress) fputc('\n', stderr);

    /* verdict: from the sample at 10% (table full, caches warm) to the end */
    size_t base = ns / 10;
    long lo = s_rss[base], hi = s_rss[base];
    for (size_t i = base; i < ns; i++) {
        if (s_rss[i] < lo) lo = s_rss[i];
        if (s_rss[i] > hi) hi = s_rss[i];
    }
    long growth = s_rss[ns - 1] - s_rss[base];
    int flat = growth <= 4096 && (double)growth <= 0.05 * (double)s_rss[base];
    bstats st = {0, 0, lat_sum / (double)turns, lat_min, lat_max, (size_t)turns};
    {
        long acc = 0;
        int got50 = 0;
        for (int k = 0; k < NB; k++) {
            acc += hist[k];
            double v = pow(1.01, k + 0.5); /* bucket middle */
            if (!got50 && acc * 2 >= turns) st.p50 = v, got50 = 1;
            if ((double)acc >= 0.99 * (double)turns) {
                st.p99 = v;
                break;
            }
        }
    }

    FILE *f = open_out("rss.json");
    fprintf(f, "{\"store\":\"sqlite\",\"maxTrackedItems\":%ld,\"dbDir\":", cap);
    json_str(f, g_tmp_dir);
    fprintf(f, ",\"turns\":%ld,\"every\":%ld,\"seconds\":%.1f,\"promptBytes\":256,"
               "\"replyBytes\":768,\"hwmKB\":%ld,\"baseSample\":%zu,\"rssMinKB\":%ld,\"rssMaxKB\":%ld,"
               "\"growthKB\":%ld,\"flat\":%s",
            turns, every, secs, hwm_kb(), base, lo, hi, growth, flat ? "true" : "false");
    json_stats(f, "turn", &st, 1);
    fprintf(f, ",\"samples\":[");
    for (size_t i = 0; i < ns; i++)
        fprintf(f, "%s{\"turn\":%ld,\"rssKB\":%ld,\"heapBytes\":%zu,\"items\":%lld}", i ? "," : "",
                s_turn[i], s_rss[i], s_heap[i], s_items[i]);
    fprintf(f, "]}\n");
    fclose(f);
    fprintf(stderr, "rss: %ld turns in %.1f s (turn p50 %.1f us p99 %.1f us): RSS %ld..%ld kB after warm-up, "
                    "growth %ld kB, peak %ld kB: %s\n",
            turns, secs, st.p50, st.p99, lo, hi, growth, hwm_kb(), flat ? "flat" : "NOT flat");
    bp_unload(&b);
    rm_db(db);
    free(s_turn);
    free(s_rss);
    free(s_heap);
    free(s_items);
    return 0;
}
