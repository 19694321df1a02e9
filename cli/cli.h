/* cli.h: what the subcommands of the reference gateway share.
 *
 * cli/main.c holds the table of subcommands (cli/'s own and the
 * adapters'); cli/args.c parses every command line against it and the
 * table of options, and prints the usage from them. */
#ifndef CLI_CLI_H
#define CLI_CLI_H

/* The largest config, import or params file the CLI reads. */
#define CLI_MAX_FILE ((size_t)1 << 30)

#include <signal.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "hostsvc.h"
#include "loader.h"

/* Exit codes. */
enum {
    EXIT_OK = 0,
    EXIT_FAIL = 1,        /* bad input lines, I/O, plugin not loadable, config refused */
    EXIT_PLUGIN = 2,      /* the plugin answered a cmd/rpc/export/import with an error */
    EXIT_USAGE = 64,      /* bad command line (EX_USAGE) */
    EXIT_INTERRUPTED = 130
};

typedef struct cli {
    /* options every subcommand takes */
    const char *config_path, *state_path, *plugin_path, *kv_path;
    const char *store_url; /* --store: storage.backend redis at this URL */
    long level, depth;     /* zoom --level, impact --depth */
    const char *file;      /* impact --file */
    int log_level; /* CLARITY_LOG_*: -v debug, -q errors only */
    /* options of some subcommands (cli/args.c says which) */
    const char *session;   /* --session; NULL when not given */
    const char *workspace; /* --workspace, made absolute; NULL when not given */
    int json;
    const char **configs;  /* eval: every --config in order */
    int n_configs;
    const char *html_path;
    int horizon;
    const char *install_project; /* install: --project DIR, --user, --uninstall */
    int install_user, uninstall;
    int regex, no_learn, no_refresh; /* graph build, predict */
    long max_commits, k, repeat;     /* -1: not given */
    int64_t budget_abs;  /* --budget N: tokens; 0: not given */
    double budget_frac;  /* --budget F (0 < F <= 1): a share of the transcript */
    const char *repos, *repo_cache; /* eval --repos DIR [--repo-cache DIR] */
    /* runtime */
    hostsvc *hs;
    loader L;
    const struct cli_command *cmd; /* the subcommand running */
    uint32_t host_flags; /* CLARITY_HOST_* the plugin is loaded with (the hook: brief) */
    char *config_json; /* the config handed to the plugin (cli_config), built once */
} cli;

/* How long a prompt of a long-lived command (serve, mcp) waits for a code
 * graph to load (prediction.loadWaitMs) unless the config says: a graph
 * loading longer serves the prompts after it. */
#define CLI_GRAPH_WAIT_MS 1000

/* What a subcommand needs before it runs. */
enum cli_needs {
    NEEDS_NOTHING, /* runs on its own (install) */
    NEEDS_HOST,    /* host services only (eval loads its own plugins) */
    NEEDS_PLUGIN,  /* the plugin, with --config and the state store */
    NEEDS_GRAPH,   /* the plugin on a memory store: the graph has its own cache */
    NEEDS_PLUGIN_LATER /* host services; the command loads the plugin (cli_load_plugin) when
                          it needs it: a hook event that only records a call never does */
};

/* A subcommand; run gets its positional arguments. */
typedef struct cli_command {
    const char *name;
    const char *usage;   /* its arguments, as the usage shows them */
    int min_args, max_args;
    const char *arg_error; /* the message when the count is wrong */
    uint32_t options;    /* bits (1u << CLI_O_*) of the options it takes besides the global ones */
    int needs;           /* enum cli_needs */
    int quiet_failure;   /* a failure to start exits 0 (a hook never fails the user's turn) */
    int (*run)(cli *c, char **args, int n);
    const char *help;    /* one or more lines */
    int long_lived;      /* serves many turns: a prompt does not wait long for a code graph to load */
} cli_command;

/* The options that some subcommands take. */
enum {
    CLI_O_JSON = 9, CLI_O_SESSION, CLI_O_WORKSPACE, CLI_O_HTML, CLI_O_HORIZON, CLI_O_PROJECT,
    CLI_O_USER, CLI_O_UNINSTALL, CLI_O_REGEX, CLI_O_MAX_COMMITS, CLI_O_NO_LEARN, CLI_O_K,
    CLI_O_REPEAT, CLI_O_NO_REFRESH, CLI_O_BUDGET, CLI_O_REPOS, CLI_O_REPO_CACHE, CLI_O_LEVEL, CLI_O_FILE, CLI_O_DEPTH, CLI_O__COUNT
};
#define CLI_OPT(o) (1u << (o))

/* args.c: parses argv against the commands (options may come before or
 * after the subcommand and its arguments; "--" ends them).  pos and
 * c->configs must have room for argc entries.  On success returns -1:
 * *cmd is what to run, pos[0] its name and pos[1..*nargs] its arguments;
 * otherwise the exit status (help and version printed: 0; a usage error
 * said on stderr: EXIT_USAGE). */
int cli_parse(int argc, char **argv, const cli_command *cmds, size_t ncmds, cli *c, char **pos,
              const cli_command **cmd, int *nargs);
/* The usage text, generated from the tables. */
void cli_usage(FILE *f, const cli_command *cmds, size_t ncmds);

/* plugin.c: the config JSON text handed to the plugin (--config with
 * storage.path from --state or the default state path), built at the first
 * call and kept in c->config_json; NULL on error (said on stderr). */
const char *cli_config(cli *c);
/* Loads the plugin for c->cmd with that config, unless it is loaded: 0, or
 * -1 said on stderr.  run() unloads it after the command. */
int cli_load_plugin(cli *c);

/* basic.c: the subcommands that are one plugin call. */
int cli_run_cmd(cli *c, char **args, int n);
int cli_run_rpc(cli *c, char **args, int n);
int cli_run_export(cli *c, char **args, int n);
int cli_run_import(cli *c, char **args, int n);

/* Set by SIGINT/SIGTERM; the loops stop at the next line. */
extern volatile sig_atomic_t cli_stop;

/* clarity replay FILE|- [--json] [--session S] [--workspace DIR] */
int cli_replay(cli *c, const char *path);
/* clarity serve: newline-delimited JSON-RPC 2.0 on stdin/stdout. */
int cli_serve(cli *c);

#endif
