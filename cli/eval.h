/* eval.h: `clarity eval`, relevance quality of the plugin's ranking on a
 * corpus of recorded sessions (metrics in evalmetrics.h). */
#ifndef CLI_EVAL_H
#define CLI_EVAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "evalmetrics.h"

#define EVAL_DEFAULT_HORIZON 5

/* clarity eval CORPUS.jsonl [--config A.json ...] [--html FILE] [--json]
 * [-H N]: replays the corpus once per config (each a fresh plugin instance
 * on the memory store), prints the summary table, or with --json one JSON
 * object; --html also writes the report.  Returns an EXIT_* code. */
int cli_eval(cli *c, const char *path);

/* One column of the result: a config or a baseline. */
typedef struct eval_column {
    const char *name;
    int baseline;
    ev_metrics m;
} eval_column;

/* Test runs the plugin recognised (clarity.progress at each session's end). */
typedef struct eval_progress {
    size_t sessions_with_runs, runs;
    size_t reruns_no_edit;  /* runs with no edit since the previous one */
    size_t turns_rerun;     /* turns holding such a run */
    int64_t longest_streak; /* runs in a row not beating the session's best */
    size_t sessions_streak3; /* sessions with such a streak of 3 or more */
} eval_progress;

typedef struct eval_report {
    const char *corpus;
    int horizon;
    size_t sessions, turns;
    eval_column *cols; /* the configs, then "lru" and "frequency" */
    size_t ncols;
    long with_repo; /* sessions run in their repository (--repos), -1 without it */
    const eval_progress *progress; /* of the first config's replay */
} eval_report;

/* The --json object. */
json_t *eval_report_json(const eval_report *r);
/* The terminal table. */
void eval_report_print(FILE *f, const eval_report *r);
/* Writes the self-contained HTML report (evalreport.c).  Returns 0, or -1
 * with errno set. */
int eval_report_html(const eval_report *r, const char *path);

#endif
