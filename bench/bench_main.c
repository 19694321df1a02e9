/* clarity_bench: the benchmark driver behind `make bench`.
 *
 *   clarity_bench [--plugin SO] [--out DIR] [--tmp DIR] [--smoke] MODE [ARGS]
 *
 * Modes (each writes DIR/<mode>.json; see bench/README section in the
 * top-level README and bench/Makefile for how they are chained):
 *   hooks        before_agent_start + agent_end per turn: items x text size
 *                (--items N --bytes B [--turns T]: that one cell)
 *   prune        scoring + prune (dry run RPC, before_compaction) vs items
 *   persist      per-turn cost of the SQLite store against the memory store
 *   restore      reload of a session with N items from SQLite: first call
 *   memory       bytes per tracked item (heap in use and RSS deltas)
 *   rss          RSS sampled every 10k turns over 1M turns
 *   gen-stream   write a deterministic turn stream (JSONL) for the comparison
 *   stream       replay a turn stream through clarity, time each hook
 *   conformance  clarity's scores for a grid of item stats (compared by node)
 *   assemble     CLARITY_EV_ASSEMBLE on a 200-message, ~300k-token transcript
 *   hookproc     a Claude Code hook process (`clarity hook`) from fork to exit:
 *                UserPromptSubmit and Stop against /bin/true, per session size
 * --smoke shrinks every mode to a few seconds; nothing is asserted on time.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
} modes[] = {
    {"hooks", mode_hooks},       {"prune", mode_prune},     {"persist", mode_persist},
    {"restore", mode_restore},   {"memory", mode_memory},   {"rss", mode_rss},
    {"gen-stream", mode_gen_stream}, {"stream", mode_stream}, {"conformance", mode_conformance},
    {"assemble", mode_assemble}, {"hookproc", mode_hookproc},
};

static int usage(void)
{
    fprintf(stderr, "usage: clarity_bench [--plugin SO] [--out DIR] [--tmp DIR] [--smoke] MODE [ARGS]\n"
                    "modes:");
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) fprintf(stderr, " %s", modes[i].name);
    fputc('\n', stderr);
    return 2;
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--plugin") && i + 1 < argc) g_plugin_path = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) g_out_dir = argv[++i];
        else if (!strcmp(argv[i], "--tmp") && i + 1 < argc) g_tmp_dir = argv[++i];
        else if (!strcmp(argv[i], "--smoke")) g_smoke = 1;
        else return usage();
    }
    if (i >= argc) return usage();
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
        if (!strcmp(argv[i], modes[m].name)) return modes[m].fn(argc - i, argv + i);
    return usage();
}
