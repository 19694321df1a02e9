/* claude_code.h: clarity inside Claude Code, the subcommands the CLI
 * dispatches to (cli/main.c).  hook.c turns one hook event into plugin
 * calls; install.c writes the hooks into Claude Code's settings. */
#ifndef ADAPTERS_CLAUDE_CODE_H
#define ADAPTERS_CLAUDE_CODE_H

#include "../../cli/cli.h"

/* clarity hook: one Claude Code hook event on stdin (hook.c); always 0. */
int cli_hook(cli *c);
/* clarity install claude-code [--project DIR | --user] [--uninstall] (install.c);
 * runs without the plugin. */
int cli_install(cli *c, const char *host);

#endif
