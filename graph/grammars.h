/* grammars.h: the tree-sitter grammars compiled into the library.
 * scripts/grammars.sh generates the table (BUILD/grammars/grammars.c) from
 * the grammars that fetched and compiled; a build without it (the fuzz
 * harnesses) sees no table and parses with the PCRE2 patterns only. */
#ifndef GRAPH_GRAMMARS_H
#define GRAPH_GRAMMARS_H

struct TSLanguage;

typedef struct graph_grammar {
    const char *name; /* python, javascript, typescript, tsx, go, rust, java, c */
    const struct TSLanguage *(*language)(void);
} graph_grammar;

/* Terminated by {NULL, NULL}. */
extern const graph_grammar graph_grammar_table[];

#endif
