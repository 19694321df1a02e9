/* graphcmd.h: the graph and predict subcommands of the clarity CLI. */
#ifndef CLI_GRAPHCMD_H
#define CLI_GRAPHCMD_H

/* argv[1] is "graph" or "predict"; returns the exit status. */
int graphcmd_main(int argc, char **argv);

#endif
