/* main.c: clarity, the reference gateway for libclarity.so.
 *
 * The table of subcommands (cli/'s own and the adapters'), and what every
 * run does around one: parse the command line (cli/args.c), lend the host
 * services, load the plugin with its config (cli/plugin.c; the hook loads
 * it itself when an event needs it), run, unload.
 *
 * Adding a subcommand: a handler (int run(cli *, char **args, int n)) and
 * one entry in `commands` below; its options are bits of CLI_OPT().
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../adapters/claude-code/claude_code.h"
#include "../adapters/mcp/mcp.h"
#include "../util/buf.h"
#include "../util/errors.h"
#include "cli.h"
#include "../util/fs.h"
#include "eval.h"
#include "graphcmd.h"
#include "intelcmd.h"
#include "hostsvc.h"
#include "jsonconv.h"
#include "loader.h"

volatile sig_atomic_t cli_stop = 0;

static int run_replay(cli *c, char **args, int n) { (void)n; return cli_replay(c, args[0]); }
static int run_serve(cli *c, char **args, int n) { (void)args, (void)n; return cli_serve(c); }
static int run_hook(cli *c, char **args, int n) { (void)args, (void)n; return cli_hook(c); }
static int run_mcp(cli *c, char **args, int n) { (void)args, (void)n; return cli_mcp(c); }
static int run_install(cli *c, char **args, int n) { (void)n; return cli_install(c, args[0]); }
static int run_eval(cli *c, char **args, int n)
{
    (void)n;
    if (strcmp(args[0], "-") == 0) {
        fprintf(stderr, "clarity: eval takes one corpus file (it is read once per config)\n");
        return EXIT_USAGE;
    }
    return cli_eval(c, args[0]);
}

#define O(x) CLI_OPT(CLI_O_##x)
static const cli_command commands[] = {
    {"replay", "FILE.jsonl|-", 1, 1, "replay takes one file (or - for stdin)",
     O(JSON) | O(SESSION) | O(WORKSPACE) | O(BUDGET), NEEDS_PLUGIN, 0, run_replay,
     "replay a turns JSONL file through the hooks, printing each\n"
     "turn's context block (--json: one clarity.getScores line per\n"
     "session instead; --session: that session only; --budget: each\n"
     "turn's transcript assembled under it, as the model would see it)", 0},
    {"eval", "CORPUS.jsonl", 1, 1, "eval takes one corpus file (it is read once per config)",
     O(JSON) | O(HTML) | O(HORIZON) | O(BUDGET) | O(REPOS) | O(REPO_CACHE), NEEDS_HOST, 0, run_eval,
     "replay recorded sessions and measure relevance quality:\n"
     "recall@5/10/20 of the items used again, gold-file ranks,\n"
     "against LRU and frequency baselines (memory store only)", 0},
    {"cmd", "LINE", 1, -1, "cmd needs a command line, e.g. \"/clarity scores\"", O(SESSION),
     NEEDS_PLUGIN, 0, cli_run_cmd, "run a slash command (\"/clarity scores\"); session \"default\"", 0},
    {"rpc", "METHOD [JSON|-]", 1, 2, "rpc takes METHOD [JSON]", 0, NEEDS_PLUGIN, 0, cli_run_rpc,
     "call an RPC method (\"clarity.getScores\" '{\"session\":\"s\"}')", 0},
    {"serve", "", 0, 0, "serve takes no arguments", 0, NEEDS_PLUGIN, 0, run_serve,
     "newline-delimited JSON-RPC 2.0 on stdin/stdout", 1},
    {"hook", "", 0, 0, "hook takes no arguments", O(SESSION), NEEDS_PLUGIN_LATER, 1, run_hook,
     "one Claude Code hook event, JSON on stdin (see README)", 0},
    {"install", "claude-code", 1, 1, "install takes the host: install claude-code",
     O(PROJECT) | O(USER) | O(UNINSTALL), NEEDS_NOTHING, 0, run_install,
     "add (or remove) clarity's hooks and the /clarity command in\n"
     "DIR/.claude (default: the current directory) or ~/.claude", 0},
    {"mcp", "", 0, 0, "mcp takes no arguments", O(SESSION) | O(WORKSPACE), NEEDS_PLUGIN, 0, run_mcp,
     "MCP server on stdin/stdout with the clarity_* tools\n"
     "(clarity_predict when DIR or the session's workspace has a\n"
     "code graph)", 1},
    {"export", "", 0, 0, "export takes no arguments", O(SESSION), NEEDS_PLUGIN, 0, cli_run_export,
     "print the state of a session (clarity.exportState)", 0},
    {"import", "FILE|-", 1, 1, "import takes one file (or - for stdin)", O(SESSION), NEEDS_PLUGIN,
     0, cli_run_import,
     "replace the state of a session (clarity.importState); takes\n"
     "what export prints, or its \"value\" (the legacy shape)", 0},
    {"graph", "build REPO", 2, 2, "graph takes: graph build REPO",
     O(JSON) | O(REGEX) | O(MAX_COMMITS) | O(NO_LEARN), NEEDS_GRAPH, 0, cli_graph,
     "build or refresh REPO's code graph (REPO/.clarity/graph.db)", 0},
    {"predict", "REPO PROMPT", 2, 2, "predict takes REPO and PROMPT",
     O(JSON) | O(K) | O(REPEAT) | O(NO_REFRESH), NEEDS_GRAPH, 0, cli_predict,
     "the files PROMPT will most likely edit", 0},
    {"zoom", "REPO PATH", 2, 2, "zoom takes REPO and PATH", O(JSON) | O(LEVEL), NEEDS_GRAPH, 0, cli_zoom,
     "a file's or a directory's public contract: signatures and doc comments\n"
     "without bodies (--level 1: every symbol, 2: the file)", 0},
    {"impact", "REPO SYMBOL", 2, 2, "impact takes REPO and SYMBOL", O(JSON) | O(FILE) | O(DEPTH), NEEDS_GRAPH,
     0, cli_impact, "who calls SYMBOL, and who calls them, to --depth levels", 0},
    {"cochange", "REPO PATH", 2, 2, "cochange takes REPO and PATH", O(JSON) | O(K), NEEDS_GRAPH, 0,
     cli_cochange, "the files that change together with PATH in the git history", 0},
    {"help", "", 0, 0, "help takes no arguments", 0, NEEDS_NOTHING, 0, NULL, "this text", 0},
};
#undef O

static void on_signal(int sig)
{
    (void)sig;
    cli_stop = 1;
}

static void setup_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a blocked read returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a closed stdout is a write error, not a kill */
}

static char *absolute_dir(const char *dir)
{
    char *r = realpath(dir, NULL);
    if (r) return r;
    if (dir[0] == '/') return util_strdup(dir);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return NULL;
    buf b;
    buf_init(&b);
    buf_printf(&b, "%s/%s", cwd, dir);
    return buf_steal(&b, NULL);
}


/* Host services, plugin, the command, unload.  Returns the exit status. */
static int run(cli *c, const cli_command *k, char **args, int n)
{
    c->cmd = k;
    if (k->needs == NEEDS_NOTHING) return k->run(c, args, n);
    setup_signals();
    char *err = NULL;
    int fail = k->quiet_failure ? EXIT_OK : EXIT_FAIL;
    if (hostsvc_new(c->log_level, c->kv_path, &c->hs, &err) != 0) {
        fprintf(stderr, "clarity: %s\n", err ? err : "out of memory");
        free(err);
        return fail;
    }
    int ex = fail;
    char *workspace = NULL;
    if (c->workspace && !(workspace = absolute_dir(c->workspace))) {
        fprintf(stderr, "clarity: %s: %s\n", c->workspace, strerror(errno));
    } else if (k->needs == NEEDS_HOST) {
        ex = k->run(c, args, n);
    } else {
        c->workspace = workspace;
        if (k->needs == NEEDS_PLUGIN_LATER || cli_load_plugin(c) == 0) ex = k->run(c, args, n);
        loader_close(&c->L); /* plugin->unload flushes every session; nothing when none loaded */
    }
    free(c->config_json);
    c->config_json = NULL;
    if (fflush(stdout) != 0 && ex == EXIT_OK) ex = EXIT_FAIL;
    if (hostsvc_save(c->hs) != 0 && ex == EXIT_OK) ex = EXIT_FAIL;
    hostsvc_free(c->hs);
    free(workspace);
    return ex;
}

int main(int argc, char **argv)
{
    cli c;
    memset(&c, 0, sizeof c);
    c.log_level = CLARITY_LOG_WARN;
    c.max_commits = c.k = c.repeat = -1;
    const char *configs[argc > 0 ? argc : 1];
    char *pos[argc > 0 ? argc : 1];
    c.configs = configs;
    const cli_command *k;
    int n;
    int ex = cli_parse(argc, argv, commands, sizeof commands / sizeof *commands, &c, pos, &k, &n);
    if (ex >= 0) return ex;
    if (!k->run) { /* help */
        cli_usage(stdout, commands, sizeof commands / sizeof *commands);
        return EXIT_OK;
    }
    return run(&c, k, pos + 1, n);
}
