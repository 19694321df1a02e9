/* cli.h: what the subcommands of the reference gateway share. */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <signal.h>

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
    /* options */
    const char *config_path, *state_path, *plugin_path, *kv_path;
    const char *session;   /* --session; NULL when not given */
    const char *workspace; /* --workspace, made absolute; NULL when not given */
    int json;
    /* eval: every --config in order, --html, -H */
    const char **configs;
    int n_configs;
    const char *html_path;
    int horizon;
    /* install: --project DIR, --user, --uninstall */
    const char *install_project;
    int install_user, uninstall;
    /* runtime */
    hostsvc *hs;
    loader L;
} cli;

/* Set by SIGINT/SIGTERM; the loops stop at the next line. */
extern volatile sig_atomic_t cli_stop;

/* clarity replay FILE|- [--json] [--session S] [--workspace DIR] */
int cli_replay(cli *c, const char *path);
/* clarity serve: newline-delimited JSON-RPC 2.0 on stdin/stdout. */
int cli_serve(cli *c);

#endif
