/* graphcmd.h: the graph and predict subcommands of the clarity CLI. */
#ifndef CLI_GRAPHCMD_H
#define CLI_GRAPHCMD_H

#include <jansson.h>

#include "cli.h"

/* Calls method on the loaded plugin with params; *out gets the answer
 * (NULL on failure, said on stderr).  An EXIT_* code. */
int graphcmd_call(cli *c, const char *method, json_t *params, json_t **out);
/* clarity graph build REPO [--regex] [--max-commits N] [--no-learn] [--json] */
int cli_graph(cli *c, char **args, int n);
/* clarity predict REPO PROMPT [-k N] [--json] [--repeat N] [--no-refresh] */
int cli_predict(cli *c, char **args, int n);

#endif
