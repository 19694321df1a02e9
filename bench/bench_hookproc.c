/* bench_hookproc.c: a Claude Code hook process, whole.
 *
 * Claude Code runs `clarity hook` once per event: the process starts, loads
 * libclarity.so and its libraries, opens the SQLite store, restores the
 * session, answers and exits.  Per session size (items already tracked),
 * this times a turn's UserPromptSubmit, PostToolUse (a Read, which only
 * records the call) and Stop processes from fork to exit,
 * and /bin/true spawned the same way (the floor no hook can go under), in
 * alternation, so the three share the machine's state.  Each Stop follows a
 * new turn appended to the transcript, as in a session.  The CLI is the one
 * next to the plugin (--cli PATH otherwise).  --vs SO runs the same
 * processes with another build of the plugin (and --vs-cli PATH's CLI, else
 * the same) in the same alternation, its own state seeded the same: two
 * builds side by side in one run.
 *
 *   clarity_bench [--smoke] hookproc [--cli PATH] [--vs SO [--vs-cli PATH]]
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define SESSION "hookproc"

/* Runs argv with stdin from `in` (a path), stdout and stderr to /dev/null;
 * its wall time in µs, or -1 when it could not run or failed. */
static double run_us(char *const argv[], const char *in)
{
    uint64_t t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fd = open(in, O_RDONLY), null = open("/dev/null", O_WRONLY);
        if (fd < 0 || null < 0) _exit(126);
        dup2(fd, 0);
        dup2(null, 1);
        dup2(null, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    return (double)(now_ns() - t0) / 1e3;
}

static void write_file(const char *path, const char *mode, const char *text)
{
    FILE *f = fopen(path, mode);
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "hookproc: cannot write %s\n", path);
        exit(1);
    }
}

/* One user line and one assistant line of Claude Code's transcript; the
 * assistant's text (reply) names two seeded items. */
static void append_turn(const char *transcript, int turn, const char *reply)
{
    char line[2048];
    snprintf(line, sizeof line,
             "{\"type\":\"user\",\"uuid\":\"u-%d\",\"message\":{\"role\":\"user\",\"content\":\"turn %d: go on\"}}\n"
             "{\"type\":\"assistant\",\"uuid\":\"a-%d\",\"message\":{\"role\":\"assistant\",\"content\":"
             "[{\"type\":\"text\",\"text\":\"%s\"}],\"stop_reason\":\"end_turn\"}}\n",
             turn, turn, turn, reply);
    write_file(transcript, "a", line);
}

/* The processes did the hooks' work: each Stop ended a turn (currentTurn,
 * from 10 for an imported session, 0 for a new one, went up by one per
 * Stop), so the times above are of turns, not of early exits. */
static int check_turns(const char *so, const char *cfg, long from, int runs)
{
    bplug b;
    bp_open_lib(&b, so);
    bp_init(&b, cfg);
    char *stats = NULL;
    int rc = bp_rpc(&b, "clarity.stats", "{\"session\":\"" SESSION "\"}", &stats);
    const char *at = stats ? strstr(stats, "\"currentTurn\":") : NULL;
    long turn = at ? strtol(at + strlen("\"currentTurn\":"), NULL, 10) : -1;
    bp_unload(&b);
    if (rc != 0 || turn < from + runs) {
        fprintf(stderr, "hookproc: the Stop processes ended %ld turns of %d (%s)\n", turn - from, runs,
                stats ? stats : "no stats");
        free(stats);
        return 1;
    }
    free(stats);
    return 0;
}

static const char *arg_of(int argc, char **argv, const char *name)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) return argv[i + 1];
    return NULL;
}

static void cli_path(char *out, size_t cap, int argc, char **argv)
{
    const char *given = arg_of(argc, argv, "--cli");
    const char *slash = strrchr(g_plugin_path, '/');
    if (given) snprintf(out, cap, "%s", given);
    else if (slash) snprintf(out, cap, "%.*s/clarity", (int)(slash - g_plugin_path), g_plugin_path);
    else snprintf(out, cap, "./clarity");
}

/* One build's processes over one session size: its files and times. */
typedef struct side {
    const char *so, *cli;
    char dir[600], state[700], cfg[1024], cfg_file[700], transcript[700], ev_prompt[700], ev_tool[700],
        ev_stop[700];
    double *prompt, *tool, *stop;
} side;

/* A directory next to a fresh database path, the state in it, the session
 * seeded with n items, the prompt event naming two of them. */
static void side_open(side *d, const char *so, const char *cli, const char *tag, uint64_t n, int runs)
{
    char db[512];
    d->so = so;
    d->cli = cli;
    tmp_db(db, sizeof db, tag);
    snprintf(d->dir, sizeof d->dir, "%s.d", db);
    mkdir(d->dir, 0700);
    snprintf(d->state, sizeof d->state, "%s/state.db", d->dir);
    /* room for the n items (limits.maxTrackedItems is 5,000 by default: a
     * larger session was cut to 4,500 at its import), in the seeding
     * instance and, through --config, in the hook processes */
    snprintf(d->cfg, sizeof d->cfg,
             "{\"storage\":{\"backend\":\"sqlite\",\"path\":\"%s\"},\"limits\":{\"maxTrackedItems\":%llu}}",
             d->state, (unsigned long long)(n * 2 + 1000));
    snprintf(d->cfg_file, sizeof d->cfg_file, "%s/config.json", d->dir);
    write_file(d->cfg_file, "w", d->cfg);
    snprintf(d->transcript, sizeof d->transcript, "%s/transcript.jsonl", d->dir);
    snprintf(d->ev_prompt, sizeof d->ev_prompt, "%s/prompt.json", d->dir);
    snprintf(d->ev_tool, sizeof d->ev_tool, "%s/tool.json", d->dir);
    snprintf(d->ev_stop, sizeof d->ev_stop, "%s/stop.json", d->dir);
    if (n) { /* the session's items, imported as a gateway would */
        bplug b;
        bp_open_lib(&b, so);
        bp_init(&b, d->cfg);
        char *items = seed_items_json(n, 10);
        bp_import(&b, SESSION, 10, items);
        free(items);
        bp_unload(&b);
    }
    write_file(d->transcript, "w", "");
    char name0[64], name1[64], text[4096];
    item_text(name0, sizeof name0, 0);
    item_text(name1, sizeof name1, n > 1 ? n - 1 : 1);
    snprintf(text, sizeof text,
             "{\"session_id\":\"" SESSION "\",\"hook_event_name\":\"UserPromptSubmit\",\"cwd\":\"%s\","
             "\"transcript_path\":\"%s\",\"prompt\":\"Look at %s and %s again, then fix the parser in "
             "src/parse.c and update README.md\"}",
             d->dir, d->transcript, name0, name1);
    write_file(d->ev_prompt, "w", text);
    item_text(name1, sizeof name1, 1); /* a doc file */
    snprintf(text, sizeof text,
             "{\"session_id\":\"" SESSION "\",\"hook_event_name\":\"PostToolUse\",\"cwd\":\"%s\","
             "\"transcript_path\":\"%s\",\"tool_name\":\"Read\",\"tool_use_id\":\"toolu_1\","
             "\"tool_input\":{\"file_path\":\"%s/%s\"},\"tool_response\":{\"type\":\"text\"}}",
             d->dir, d->transcript, d->dir, name1);
    write_file(d->ev_tool, "w", text);
    d->prompt = malloc((size_t)runs * sizeof(double));
    d->tool = malloc((size_t)runs * sizeof(double));
    d->stop = malloc((size_t)runs * sizeof(double));
}

/* Turn i of d: a new turn in the transcript, then the two processes. */
static int side_turn(side *d, int i, uint64_t n)
{
    char name0[64], name1[64], reply[512], text[4096];
    item_text(name0, sizeof name0, 0);
    item_text(name1, sizeof name1, n > 1 ? n - 1 : 1);
    snprintf(reply, sizeof reply, "Turn %d: %s is fine; %s needs the parser change.", i, name0, name1);
    append_turn(d->transcript, i, reply);
    snprintf(text, sizeof text,
             "{\"session_id\":\"" SESSION "\",\"hook_event_name\":\"Stop\",\"cwd\":\"%s\","
             "\"transcript_path\":\"%s\",\"last_assistant_message\":\"%s\"}",
             d->dir, d->transcript, reply);
    write_file(d->ev_stop, "w", text);
    char *const argv[] = {(char *)d->cli, "--plugin", (char *)d->so, "--config", d->cfg_file, "--state", d->state,
                          "hook", NULL};
    d->prompt[i] = run_us(argv, d->ev_prompt);
    d->tool[i] = run_us(argv, d->ev_tool);
    d->stop[i] = run_us(argv, d->ev_stop);
    if (d->prompt[i] < 0 || d->tool[i] < 0 || d->stop[i] < 0) {
        fprintf(stderr, "hookproc: a process failed (%s --plugin %s --state %s hook < %s)\n", d->cli, d->so,
                d->state, d->prompt[i] < 0 ? d->ev_prompt : d->tool[i] < 0 ? d->ev_tool : d->ev_stop);
        return -1;
    }
    return 0;
}

/* d's figures on stderr and as a cell of the JSON; its files removed. */
static void side_close(side *d, FILE *out, const bstats *floor, uint64_t n, int runs, int first)
{
    bstats sp = stats_of(d->prompt, (size_t)runs), stl = stats_of(d->tool, (size_t)runs),
           ss = stats_of(d->stop, (size_t)runs);
    fprintf(stderr,
            "hookproc: %6llu items, %s: UserPromptSubmit p50 %.2f ms (p99 %.2f), PostToolUse Read %.2f ms (%.2f), "
            "Stop %.2f ms (%.2f); /bin/true %.2f ms\n",
            (unsigned long long)n, d->so, sp.p50 / 1e3, sp.p99 / 1e3, stl.p50 / 1e3, stl.p99 / 1e3, ss.p50 / 1e3,
            ss.p99 / 1e3, floor->p50 / 1e3);
    fprintf(out, "%s{\"items\":%llu,\"plugin\":", first ? "" : ",", (unsigned long long)n);
    json_str(out, d->so);
    json_stats(out, "floor", floor, 1);
    json_stats(out, "prompt", &sp, 1);
    json_stats(out, "tool", &stl, 1);
    json_stats(out, "stop", &ss, 1);
    fputc('}', out);
    free(d->prompt), free(d->tool), free(d->stop);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
    if (system(cmd) != 0) fprintf(stderr, "hookproc: could not remove %s\n", d->dir);
}

int mode_hookproc(int argc, char **argv)
{
    char cli[1024];
    cli_path(cli, sizeof cli, argc, argv);
    if (access(cli, X_OK) != 0) {
        fprintf(stderr, "hookproc: no CLI at %s (--cli PATH)\n", cli);
        return 1;
    }
    const char *sos[2] = {g_plugin_path, arg_of(argc, argv, "--vs")};
    const char *clis[2] = {cli, arg_of(argc, argv, "--vs-cli")};
    if (!clis[1]) clis[1] = cli;
    if (sos[1] && access(clis[1], X_OK) != 0) {
        fprintf(stderr, "hookproc: no CLI at %s (--vs-cli PATH)\n", clis[1]);
        return 1;
    }
    int n_sides = sos[1] ? 2 : 1;
    static const uint64_t full[] = {0, 1000, 10000}, smoke[] = {0, 100};
    const uint64_t *sizes = g_smoke ? smoke : full;
    size_t n_sizes = g_smoke ? 2 : 3;
    int runs = g_smoke ? 10 : 200;
    FILE *out = open_out("hookproc.json");
    fprintf(out, "{\"runs\":%d,\"cells\":[", runs);
    double *t_true = malloc((size_t)runs * sizeof(double));
    char *const a_true[] = {"/bin/true", NULL};
    int progress = tty_progress(), first = 1;
    for (size_t k = 0; k < n_sizes; k++) {
        uint64_t n = sizes[k];
        side d[2];
        for (int s = 0; s < n_sides; s++) side_open(&d[s], sos[s], clis[s], s ? "hookproc-vs" : "hookproc", n, runs);
        for (int i = 0; i < runs; i++) {
            if ((t_true[i] = run_us(a_true, d[0].ev_prompt)) < 0) return 1;
            for (int s = 0; s < n_sides; s++) /* the builds' order alternates */
                if (side_turn(&d[(s + i) % n_sides], i, n) != 0) return 1;
            if (progress && i % 20 == 0)
                fprintf(stderr, "\rhookproc: %llu items, run %d/%d ", (unsigned long long)n, i, runs);
        }
        if (progress) fputc('\r', stderr);
        bstats st = stats_of(t_true, (size_t)runs);
        for (int s = 0; s < n_sides; s++) {
            if (check_turns(d[s].so, d[s].cfg, n ? 10 : 0, runs) != 0) return 1;
            side_close(&d[s], out, &st, n, runs, first);
            first = 0;
        }
    }
    fprintf(out, "]}\n");
    fclose(out);
    free(t_true);
    return 0;
}
