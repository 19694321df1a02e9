/* intelcmd.h: the code intelligence subcommands of the clarity CLI. */
#ifndef CLI_INTELCMD_H
#define CLI_INTELCMD_H

#include "cli.h"

/* clarity zoom REPO PATH [--level 0|1|2] [--json] */
int cli_zoom(cli *c, char **args, int n);
/* clarity impact REPO SYMBOL [--file PATH] [--depth N] [--json] */
int cli_impact(cli *c, char **args, int n);
/* clarity cochange REPO PATH [-k N] [--json] */
int cli_cochange(cli *c, char **args, int n);

#endif
