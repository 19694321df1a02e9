/* replay.h: the replay loop of `clarity replay`, reusable by other
 * subcommands (`clarity eval`) through per-turn callbacks. */
#ifndef CLI_REPLAY_H
#define CLI_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

struct json_t;

/* Callbacks of replay_run.  Any of them may be NULL.  When hooks are given
 * the replay prints nothing on stdout (no context blocks, no --json lines);
 * errors still go to stderr. */
typedef struct replay_hooks {
    void *ud;
    /* After a turn's agent_end returned (whatever it returned). */
    void (*on_turn)(void *ud, const char *session, int64_t turn);
    /* A meta line of the current session, before its session_end. */
    void (*on_meta)(void *ud, const char *session, struct json_t *meta);
    /* After a session's session_end. */
    void (*on_session_end)(void *ud, const char *session);
    /* Before a turn's before_agent_start, when set: the transcript so far
     * was assembled (CLARITY_EV_ASSEMBLE, budget from --budget); result is
     * the event's JSON answer. */
    void (*on_assembled)(void *ud, const char *session, int64_t turn,
                         const clarity_ctx_message *msgs, size_t n, struct json_t *result);
    /* After a turn's before_agent_start: the block it returned ("" when
     * none). */
    void (*on_block)(void *ud, const char *session, int64_t turn, const char *block, size_t len);
    /* The workspace directory of a session, asked once before its first
     * turn; NULL: the CLI's --workspace. */
    const char *(*workspace)(void *ud, const char *session);
    /* Progress bar on stderr: shown when progress is non-zero, as
     * "[###   ] (done_before + sessions done)/total label". */
    int progress;
    size_t done_before, total;
    const char *label;
} replay_hooks;

/* Replays FILE ("-" = stdin) through c->L, calling the hooks (may be NULL:
 * then it behaves as `clarity replay`).  Returns an EXIT_* code. */
int replay_run(cli *c, const char *path, const replay_hooks *hooks);

/* The number of sessions in a turns file (c->session filter applied when
 * filter is non-NULL); 0 when it cannot be read. */
size_t replay_count_sessions(const char *path, const char *filter);

#endif
