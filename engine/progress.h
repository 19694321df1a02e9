/* progress.h: test runs per session, their trend, and the block's lines
 * about them (progress.c). */
#ifndef ENGINE_PROGRESS_H
#define ENGINE_PROGRESS_H

#include <jansson.h>

#include "../extract/testrun.h"
#include "engine.h"

#define PROGRESS_COMMAND_MAX 200 /* bytes of a run's command kept */

typedef struct progress_run {
    int64_t turn, passed, failed;
    char *command;     /* owned, or NULL */
    char **failing;    /* owned names */
    size_t n_failing;
    int edits;         /* files edited since the previous run: 1, 0, or -1 (first run) */
} progress_run;

typedef struct progress {
    progress_run *runs; /* oldest first, at most progress.historyRuns */
    size_t n;
    int64_t total;        /* runs ever recognised */
    double ema, best;     /* pass fractions */
    int64_t best_passed, best_total, best_turn;
    int64_t streak;       /* runs since the best last improved */
    int edited;           /* an edit since the latest run */
    int64_t green_since;  /* the turn since which every test passes, or -1 */
} progress;

void progress_free(progress *p);

/* agent_end, in message order: an edit (from a tool call), then an output
 * that may hold a run, with the tool call before it (its command is read
 * only when the output is a run).  turn is the turn the messages belong to.  A run's
 * failing tests are mentioned as items "test:<name>".  Return CLARITY_OK
 * or CLARITY_ENOMEM (state unchanged). */
int progress_note_edit(session *s);
int progress_output(engine *e, session *s, int64_t turn, const char *tool_name, const char *args_json,
                    const char *text, size_t len, int *recognised);

/* What ran a tool call: a shell tool's command line, else the tool's name
 * (malloc()ed, at most PROGRESS_COMMAND_MAX bytes), or NULL. */
char *progress_command(const char *tool_name, const char *args_json);
/* Whether the tool call (name, arguments JSON) edits files. */
int progress_is_edit(const char *tool_name, const char *args_json);

/* Appends the block's progress lines (at most two) to out, none when
 * there is nothing to say or they would pass max_len bytes. */
void progress_block_lines(const engine *e, const session *s, buf *out, size_t max_len);

/* /clarity progress: the trend and the runs kept, as text. */
void progress_text(const engine *e, const session *s, buf *out);
/* {"session", "runs": [...], "ema", "best", ...}: the RPC answer and the
 * stored form (meta "progress"); with_session adds the "session" key. */
int progress_json(const session *s, int with_session, buf *out);
/* The stored form back; NULL (nothing), or a refused value: *err says
 * which (malloc()ed) and the session keeps no progress. */
int progress_load(const engine *e, session *s, const json_t *stored, char **err);

#endif
