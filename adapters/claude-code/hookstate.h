/* hookstate.h: what `clarity hook` remembers between two Claude Code hook
 * processes of one session.
 *
 * One small JSON file per session, <dir>/claude-code/<session>.json, next to
 * the state database (dirname of storage.path; of the --host-kv file; else
 * $TMPDIR/clarity-<uid>):
 *   {"v": 1, "transcript": "<path>", "offset": <bytes>,
 *    "pending": [{"tool_name": "Read", "tool_input": {...}, "tool_use_id": "..."}],
 *    "stopPending": true, "lastMessage": "..."}
 * "transcript"/"offset": where the previous Stop stopped reading the
 * transcript (a turn is what was appended after it).  "pending": file tool
 * calls seen by PostToolUse since the previous Stop; the next Stop sends
 * them with its agent_end.  "stopPending": a Stop found no readable
 * transcript (Claude Code may write it only after the hook ran), so the
 * turn did not advance; the next hook of the session completes it first,
 * with "lastMessage" (that Stop's last_assistant_message).  The file is locked (flock) while a hook works
 * on it, so parallel PostToolUse hooks do not lose entries.
 */
#ifndef CLAUDE_CODE_HOOKSTATE_H
#define CLAUDE_CODE_HOOKSTATE_H

#include <jansson.h>

#include "../../cli/cli.h"

typedef struct hookstate {
    int fd;           /* the locked file, -1 when not open */
    char *path;       /* owned */
    char *transcript; /* owned, NULL when unknown */
    long long offset; /* -1 when unknown */
    json_t *pending;  /* array, owned */
    int stop_pending; /* a Stop was deferred: its turn is still to be ended */
    char *last_message; /* owned, NULL: the deferred Stop's last_assistant_message */
} hookstate;

/* The directory for the state files (…/claude-code), malloc()ed, from the
 * plugin's effective config (clarity.config) and the CLI options. */
char *hookstate_dir(cli *c);

/* Creates the directory when needed, opens and locks the session's file and
 * loads it (a missing or unreadable file is an empty state).  Returns 0, or
 * -1 with *err malloc()ed. */
int hookstate_open(hookstate *st, const char *dir, const char *session, char **err);
/* Rewrites the file.  Returns 0 or -1 (errno set). */
int hookstate_save(hookstate *st);
/* Unlocks, closes and frees; safe on a zeroed or failed state. */
void hookstate_close(hookstate *st);

/* A file name for a session id: [A-Za-z0-9._-] kept, anything else %XX. */
char *hookstate_filename(const char *session);

#endif
