/* main.c: clarity, the reference gateway for libclarity.so.
 *
 * Parses the command line, builds the plugin config (--config FILE with
 * storage.path set from --state or the default state path), lends the host
 * services, loads the plugin and dispatches to a subcommand.  Options may
 * appear before or after the subcommand and its arguments; "--" ends them.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/buf.h"
#include "../util/errors.h"
#include "../util/fs.h"
#include "../adapters/claude-code/claude_code.h"
#include "../adapters/mcp/mcp.h"
#include "cli.h"
#include "graphcmd.h"
#include "eval.h"
#include "hostsvc.h"
#include "jsonconv.h"
#include "loader.h"

#ifndef CLARITY_VERSION
#define CLARITY_VERSION "0.0.0"
#endif

volatile sig_atomic_t cli_stop = 0;

static const char usage_text[] =
    "usage: clarity [options] <command> [args]\n"
    "\n"
    "commands:\n"
    "  replay FILE.jsonl|-      replay a turns JSONL file through the hooks, printing each\n"
    "                           turn's context block\n"
    "      --json               print nothing per turn; one clarity.getScores line per session\n"
    "      --session S          replay only session S\n"
    "      --workspace DIR      workspace directory passed with before_agent_start\n"
    "  eval CORPUS.jsonl        replay recorded sessions and measure relevance quality:\n"
    "                           recall@5/10/20 of the items used again, gold-file ranks,\n"
    "                           against LRU and frequency baselines (memory store only)\n"
    "      --config FILE        a config column; repeat for a matrix (default: \"default\")\n"
    "      --json               print one JSON object instead of the table\n"
    "      --html FILE          also write an HTML report with charts\n"
    "      -H, --horizon N      future-use horizon in turns (default 5)\n"
    "  cmd [--session S] LINE   run a slash command (\"/clarity scores\"); session \"default\"\n"
    "  rpc METHOD [JSON|-]      call an RPC method (\"clarity.getScores\" '{\"session\":\"s\"}')\n"
    "  serve                    newline-delimited JSON-RPC 2.0 on stdin/stdout\n"
    "  hook [--session S]       one Claude Code hook event, JSON on stdin (see README)\n"
    "  install claude-code [--project DIR | --user] [--uninstall]\n"
    "                           add (or remove) clarity's hooks and the /clarity command in\n"
    "                           DIR/.claude (default: the current directory) or ~/.claude\n"
    "  mcp [--session S] [--workspace DIR]  MCP server on stdin/stdout with the clarity_*\n"
    "                           tools (clarity_predict when DIR or the session's workspace\n"
    "                           has a code graph)\n"
    "  export [--session S]     print the state of a session (clarity.exportState)\n"
    "  import [--session S] FILE|-  replace the state of a session (clarity.importState); takes\n"
    "                           what export prints, or its \"value\" (the legacy shape)\n"
    "  graph build REPO         build or refresh REPO's code graph (REPO/.clarity/graph.db)\n"
    "  predict REPO PROMPT [-k N] [--json]  the files PROMPT will most likely edit\n"
    "  help                     this text\n"
    "\n"
    "options:\n"
    "  --config FILE            plugin configuration (JSON)\n"
    "  --state DB               state database (storage.path); default $CLARITY_STATE, else\n"
    "                           $XDG_STATE_HOME/clarity/clarity.db, else\n"
    "                           ~/.local/state/clarity/clarity.db\n"
    "  --plugin PATH            the plugin; default $CLARITY_PLUGIN, else libclarity.so next to\n"
    "                           this program, else ../lib/libclarity.so relative to it\n"
    "  --host-kv FILE           persist through the host's kv service, kept in FILE (JSON)\n"
    "                           instead of the plugin's SQLite store\n"
    "  -v, --verbose            log debug messages to stderr\n"
    "  -q, --quiet              log errors only\n"
    "  -h, --help               this text\n"
    "  -V, --version            print the version\n"
    "\n"
    "exit status: 0 ok, 1 failure (bad input, plugin not loadable, config refused),\n"
    "2 the plugin answered with an error, 64 usage error, 130 interrupted.\n";

enum {
    OPT_CONFIG = 256,
    OPT_STATE,
    OPT_PLUGIN,
    OPT_HOST_KV,
    OPT_JSON,
    OPT_SESSION,
    OPT_WORKSPACE,
    OPT_HTML
};

enum { OPT_PROJECT = 320, OPT_USER, OPT_UNINSTALL }; /* install */

static const struct option long_opts[] = {
    {"config", required_argument, NULL, OPT_CONFIG},
    {"state", required_argument, NULL, OPT_STATE},
    {"plugin", required_argument, NULL, OPT_PLUGIN},
    {"host-kv", required_argument, NULL, OPT_HOST_KV},
    {"json", no_argument, NULL, OPT_JSON},
    {"session", required_argument, NULL, OPT_SESSION},
    {"workspace", required_argument, NULL, OPT_WORKSPACE},
    {"project", required_argument, NULL, OPT_PROJECT},
    {"user", no_argument, NULL, OPT_USER},
    {"uninstall", no_argument, NULL, OPT_UNINSTALL},
    {"html", required_argument, NULL, OPT_HTML},
    {"horizon", required_argument, NULL, 'H'},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("clarity: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n(clarity --help for usage)\n", stderr);
    return EXIT_USAGE;
}

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

/* Reads a whole file ("-" = stdin); NULL with errno set on failure. */
static char *read_all(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    buf b;
    buf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(&b, chunk, n);
    int err = ferror(f) || buf_failed(&b);
    int saved = errno;
    if (f != stdin) fclose(f);
    if (err) {
        buf_free(&b);
        errno = saved ? saved : EIO;
        return NULL;
    }
    return buf_steal(&b, len);
}

/* The default state database (util_default_state_path), or NULL after
 * saying why on stderr. */
static char *default_state_path(void)
{
    char *err = NULL, *path = util_default_state_path(&err);
    if (!path) fprintf(stderr, "clarity: %s\n", err ? err : "out of memory");
    free(err);
    return path;
}

/* The config JSON text handed to the plugin, or NULL on error (reported). */
static char *build_config(const cli *c)
{
    json_t *root = NULL;
    if (c->config_path) {
        size_t len;
        char *text = read_all(c->config_path, &len);
        if (!text) {
            fprintf(stderr, "clarity: %s: %s\n", c->config_path, strerror(errno));
            return NULL;
        }
        json_error_t je;
        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        free(text);
        if (!root) {
            fprintf(stderr, "clarity: %s:%d:%d: %s\n", c->config_path, je.line, je.column, je.text);
            return NULL;
        }
        if (!json_is_object(root)) {
            fprintf(stderr, "clarity: %s: the configuration must be a JSON object\n", c->config_path);
            json_decref(root);
            return NULL;
        }
    } else {
        root = json_object();
        if (!root) return NULL;
    }
    json_t *storage = json_object_get(root, "storage");
    if (!storage) {
        storage = json_object();
        json_object_set_new(root, "storage", storage);
    }
    /* A storage that is not an object is left for the plugin to refuse. */
    if (json_is_object(storage)) {
        const char *backend = json_string_value(json_object_get(storage, "backend"));
        int uses_file = !backend || strcmp(backend, "auto") == 0 || strcmp(backend, "sqlite") == 0;
        if (c->state_path) {
            json_object_set_new(storage, "path", json_string(c->state_path));
        } else if (!json_object_get(storage, "path") && uses_file &&
                   !(c->kv_path && (!backend || strcmp(backend, "auto") == 0))) {
            char *def = default_state_path();
            if (!def) {
                json_decref(root);
                return NULL;
            }
            json_object_set_new(storage, "path", json_string(def));
            free(def);
        }
        if (json_object_size(storage) == 0) json_object_del(root, "storage");
    }
    char *out = json_compact(root);
    json_decref(root);
    return out;
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

/* ---- subcommands ------------------------------------------------------------ */

static void print_data(const clarity_result *r)
{
    if (!r->data || !r->len) return;
    fwrite(r->data, 1, r->len, stdout);
    if (r->data[r->len - 1] != '\n') putchar('\n');
}

static int do_cmd(cli *c, const char *line)
{
    clarity_result res;
    int rc = loader_command(&c->L, c->session ? c->session : "default", line, &res);
    int ex = EXIT_OK;
    if (rc == CLARITY_DECLINED) {
        fprintf(stderr, "clarity: not a /clarity command: %s\n", line);
        ex = EXIT_PLUGIN;
    } else if (rc < 0) {
        fprintf(stderr, "clarity: %s\n", loader_errtext(&c->L, rc, &res));
        ex = EXIT_PLUGIN;
    } else {
        print_data(&res);
    }
    loader_release(&c->L, &res);
    return ex;
}

/* Calls a method and prints its JSON (or the error JSON) on stdout. */
static int do_rpc(cli *c, const char *method, const char *params)
{
    clarity_result res;
    int rc = loader_rpc(&c->L, method, params, &res);
    int ex = EXIT_OK;
    if (rc < 0) {
        json_t *e = rc == CLARITY_DECLINED
                        ? json_pack("{s:i,s:s+}", "code", -32601, "message", "Method not found: ", method)
                        : rpc_error_object(&c->L, rc, &res);
        char *s = e ? json_compact(e) : NULL;
        puts(s ? s : "{\"code\":-32000,\"message\":\"out of memory\"}");
        fprintf(stderr, "clarity: %s: %s\n", method,
                rc == CLARITY_DECLINED ? "method not found" : loader_errtext(&c->L, rc, &res));
        free(s);
        json_decref(e);
        ex = EXIT_PLUGIN;
    } else if (res.data) {
        print_data(&res);
    } else {
        puts("null");
    }
    loader_release(&c->L, &res);
    return ex;
}

static char *session_params(const char *session, json_t *state)
{
    json_t *o = json_pack("{s:s}", "session", session);
    if (o && state) json_object_set(o, "state", state);
    char *s = o ? json_compact(o) : NULL;
    json_decref(o);
    return s;
}

static int do_import(cli *c, const char *path)
{
    size_t len;
    char *text = read_all(path, &len);
    if (!text) {
        fprintf(stderr, "clarity: %s: %s\n", path, strerror(errno));
        return EXIT_FAIL;
    }
    json_error_t je;
    json_t *state = json_loadb(text, len, 0, &je);
    free(text);
    if (!state) {
        fprintf(stderr, "clarity: %s:%d:%d: %s\n", strcmp(path, "-") ? path : "<stdin>", je.line,
                je.column, je.text);
        return EXIT_FAIL;
    }
    /* What `clarity export` prints is an envelope {namespace, key, session,
     * value}; clarity.importState takes the value (the legacy shape). */
    json_t *value = json_object_get(state, "value");
    if (json_is_object(value) && !json_object_get(state, "items")) {
        json_incref(value);
        json_decref(state);
        state = value;
    }
    char *params = session_params(c->session ? c->session : "default", state);
    json_decref(state);
    if (!params) return EXIT_FAIL;
    int ex = do_rpc(c, "clarity.importState", params);
    free(params);
    return ex;
}

/* ---- main ----------------------------------------------------------------- */

typedef enum { C_NONE, C_REPLAY, C_CMD, C_RPC, C_SERVE, C_EXPORT, C_IMPORT, C_HELP, C_EVAL, C_HOOK, C_INSTALL, C_MCP } command;

int main(int argc, char **argv)
{
    /* graph build / predict parse their own arguments (cli/graphcmd.c) */
    if (argc >= 2 && (strcmp(argv[1], "graph") == 0 || strcmp(argv[1], "predict") == 0))
        return graphcmd_main(argc, argv);
    cli c;
    memset(&c, 0, sizeof c);
    int threshold = CLARITY_LOG_WARN;
    int seen_json = 0, seen_session = 0, seen_workspace = 0, seen_install = 0;
    const char *workspace_arg = NULL;
    const char *config_list[argc > 0 ? argc : 1]; /* every --config, for eval */
    const char *horizon_arg = NULL;
    c.configs = config_list;

    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":vqhVH:", long_opts, NULL)) != -1) {
        switch (opt) {
        case OPT_CONFIG: c.config_path = config_list[c.n_configs++] = optarg; break;
        case OPT_STATE: c.state_path = optarg; break;
        case OPT_PLUGIN: c.plugin_path = optarg; break;
        case OPT_HOST_KV: c.kv_path = optarg; break;
        case OPT_JSON: c.json = seen_json = 1; break;
        case OPT_SESSION: c.session = optarg, seen_session = 1; break;
        case OPT_WORKSPACE: workspace_arg = optarg, seen_workspace = 1; break;
        case OPT_PROJECT: c.install_project = optarg, seen_install = 1; break;
        case OPT_USER: c.install_user = seen_install = 1; break;
        case OPT_UNINSTALL: c.uninstall = seen_install = 1; break;
        case OPT_HTML: c.html_path = optarg; break;
        case 'H': horizon_arg = optarg; break;
        case 'v': threshold = CLARITY_LOG_DEBUG; break;
        case 'q': threshold = CLARITY_LOG_ERROR; break;
        case 'h': fputs(usage_text, stdout); return EXIT_OK;
        case 'V':
            printf("clarity %s (plugin ABI %d)\n", CLARITY_VERSION, CLARITY_ABI_VERSION);
            return EXIT_OK;
        case ':': return usage_error("option %s needs an argument", argv[optind - 1]);
        default:
            if (optopt && optopt < 256) return usage_error("unknown option -%c", optopt);
            return usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    char **pos = argv + optind;
    int npos = argc - optind;
    if (npos == 0) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *name = pos[0];
    pos++, npos--;
    command cmd = C_NONE;
    if (strcmp(name, "replay") == 0) cmd = C_REPLAY;
    else if (strcmp(name, "cmd") == 0) cmd = C_CMD;
    else if (strcmp(name, "rpc") == 0) cmd = C_RPC;
    else if (strcmp(name, "serve") == 0) cmd = C_SERVE;
    else if (strcmp(name, "export") == 0) cmd = C_EXPORT;
    else if (strcmp(name, "import") == 0) cmd = C_IMPORT;
    else if (strcmp(name, "help") == 0) cmd = C_HELP;
    else if (strcmp(name, "hook") == 0) cmd = C_HOOK;
    else if (strcmp(name, "install") == 0) cmd = C_INSTALL;
    else if (strcmp(name, "mcp") == 0) cmd = C_MCP;
    else if (strcmp(name, "eval") == 0) cmd = C_EVAL;
    else return usage_error("unknown command '%s'", name);

    if (cmd == C_HELP) {
        fputs(usage_text, stdout);
        return EXIT_OK;
    }
    if (seen_json && cmd != C_REPLAY && cmd != C_EVAL)
        return usage_error("--json applies to replay and eval only");
    if ((c.html_path || horizon_arg) && cmd != C_EVAL)
        return usage_error("%s applies to eval only", c.html_path ? "--html" : "--horizon");
    if (horizon_arg) {
        char *end;
        errno = 0;
        long h = strtol(horizon_arg, &end, 10);
        if (errno || end == horizon_arg || *end || h < 1 || h > 1000)
            return usage_error("--horizon needs a number of turns in 1..1000, got '%s'", horizon_arg);
        c.horizon = (int)h;
    }
    if (seen_workspace && cmd != C_REPLAY && cmd != C_MCP)
        return usage_error("--workspace applies to replay and mcp only");
    if (seen_session && (cmd == C_RPC || cmd == C_SERVE))
        return usage_error("--session does not apply to %s (pass the session in the params)", name);
    if (c.session && !*c.session) return usage_error("--session needs a non-empty name");
    if (seen_install && cmd != C_INSTALL)
        return usage_error("--project, --user and --uninstall apply to install only");
    switch (cmd) {
    case C_REPLAY:
        if (npos != 1) return usage_error("replay takes one file (or - for stdin)");
        break;
    case C_EVAL:
        if (npos != 1 || strcmp(pos[0], "-") == 0)
            return usage_error("eval takes one corpus file (it is read once per config)");
        break;
    case C_CMD:
        if (npos < 1) return usage_error("cmd needs a command line, e.g. \"/clarity scores\"");
        break;
    case C_RPC:
        if (npos < 1 || npos > 2) return usage_error("rpc takes METHOD [JSON]");
        break;
    case C_SERVE:
    case C_EXPORT:
        if (npos != 0) return usage_error("%s takes no arguments", name);
        break;
    case C_IMPORT:
        if (npos != 1) return usage_error("import takes one file (or - for stdin)");
        break;
    case C_HOOK:
    case C_MCP:
        if (npos != 0) return usage_error("%s takes no arguments", name);
        break;
    case C_INSTALL:
        if (npos != 1) return usage_error("install takes the host: install claude-code");
        break;
    default: break;
    }

    if (cmd == C_INSTALL) return cli_install(&c, pos[0]); /* needs no plugin */
    setup_signals();
    char *err = NULL;
    if (hostsvc_new(threshold, c.kv_path, &c.hs, &err) != 0) {
        fprintf(stderr, "clarity: %s\n", err ? err : "out of memory");
        free(err);
        return cmd == C_HOOK ? EXIT_OK : EXIT_FAIL; /* a hook never fails the user's turn */
    }
    if (cmd == C_EVAL) { /* one plugin per config, on the memory store: no state db */
        int ex = cli_eval(&c, pos[0]);
        if (fflush(stdout) != 0 && ex == EXIT_OK) ex = EXIT_FAIL;
        hostsvc_free(c.hs);
        return ex;
    }
    char *workspace = NULL;
    if (workspace_arg) {
        workspace = absolute_dir(workspace_arg);
        if (!workspace) {
            fprintf(stderr, "clarity: %s: %s\n", workspace_arg, strerror(errno));
            hostsvc_free(c.hs);
            return EXIT_FAIL;
        }
        c.workspace = workspace;
    }
    char *config = build_config(&c);
    if (!config) {
        free(workspace);
        hostsvc_free(c.hs);
        return cmd == C_HOOK ? EXIT_OK : EXIT_FAIL;
    }
    hostsvc_log(c.hs, CLARITY_LOG_DEBUG, "config: %s", config);

    clarity_host host;
    hostsvc_fill(c.hs, &host);
    if (loader_open(&c.L, c.plugin_path, &host, config, &err) != 0) {
        fprintf(stderr, "clarity: %s\n", err ? err : "cannot load the plugin");
        free(err);
        free(config);
        free(workspace);
        hostsvc_free(c.hs);
        return cmd == C_HOOK ? EXIT_OK : EXIT_FAIL;
    }
    free(config);
    hostsvc_log(c.hs, CLARITY_LOG_DEBUG, "loaded %s (%s %s)", c.L.path,
                c.L.p.name ? c.L.p.name : "?", c.L.p.version ? c.L.p.version : "?");

    int ex = EXIT_OK;
    char *owned = NULL;
    switch (cmd) {
    case C_REPLAY: ex = cli_replay(&c, pos[0]); break;
    case C_CMD: {
        buf line;
        buf_init(&line);
        for (int i = 0; i < npos; i++) {
            if (i) buf_putc(&line, ' ');
            buf_puts(&line, pos[i]);
        }
        ex = buf_failed(&line) ? EXIT_FAIL : do_cmd(&c, line.p);
        buf_free(&line);
        break;
    }
    case C_RPC: {
        const char *params = npos > 1 ? pos[1] : "{}";
        if (strcmp(params, "-") == 0) {
            owned = read_all("-", NULL);
            if (!owned) {
                fprintf(stderr, "clarity: <stdin>: %s\n", strerror(errno));
                ex = EXIT_FAIL;
                break;
            }
            params = owned;
        }
        ex = do_rpc(&c, pos[0], params);
        break;
    }
    case C_SERVE: ex = cli_serve(&c); break;
    case C_HOOK: ex = cli_hook(&c); break;
    case C_MCP: ex = cli_mcp(&c); break;
    case C_EXPORT: {
        owned = session_params(c.session ? c.session : "default", NULL);
        ex = owned ? do_rpc(&c, "clarity.exportState", owned) : EXIT_FAIL;
        break;
    }
    case C_IMPORT: ex = do_import(&c, pos[0]); break;
    default: break;
    }
    free(owned);
    if (fflush(stdout) != 0 && ex == EXIT_OK) ex = EXIT_FAIL;

    loader_close(&c.L); /* plugin->unload flushes every session */
    if (hostsvc_save(c.hs) != 0 && ex == EXIT_OK) ex = EXIT_FAIL;
    hostsvc_free(c.hs);
    free(workspace);
    return ex;
}
