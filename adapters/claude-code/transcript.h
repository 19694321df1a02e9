/* transcript.h: the assistant side of a Claude Code transcript.
 *
 * A transcript is JSONL; the lines that matter here are
 *   {"type": "assistant", "message": {"role": "assistant", "content": [
 *       {"type": "text", "text": "..."},
 *       {"type": "tool_use", "id": "toolu_…", "name": "Read", "input": {...}}]}, ...}
 *   {"type": "user", "message": {"role": "user", "content": "..." | [blocks]}, ...}
 * (one content block per line as Claude Code streams them; other line types,
 * "isSidechain": true lines and thinking blocks are skipped).  Each text
 * block becomes an assistant message, each tool_use block an assistant
 * message with tool_name and tool_args (its input) and an empty text.
 */
#ifndef CLAUDE_CODE_TRANSCRIPT_H
#define CLAUDE_CODE_TRANSCRIPT_H

#include "../../cli/jsonconv.h"

enum {
    /* keep only what follows the last real user prompt (a user line that is
     * neither a tool result nor meta) of the lines read: for a transcript
     * without a remembered offset, and for a subagent's transcript */
    TRANSCRIPT_SINCE_PROMPT = 1,
    /* also take "isSidechain": true lines (a subagent's own transcript is
     * all sidechain) */
    TRANSCRIPT_SIDECHAIN = 2
};

/* Reads the complete lines of the transcript at path from byte start on and
 * appends their assistant messages to mv.
 *   flags         TRANSCRIPT_* bits
 *   *end          receives the offset just past the last complete line
 *   *last_text    (may be NULL) receives the index in mv of the last text
 *                 message appended, or (size_t)-1
 * Reads at most the last 32 MiB.  When start is past the end of the file
 * (a rewritten transcript) it returns 1 without reading: the caller starts
 * over.  Returns 0, 1, or -1 with *err malloc()ed (the file cannot be
 * read). */
int transcript_collect(const char *path, long long start, int flags, msgvec *mv,
                       long long *end, size_t *last_text, char **err);

#endif
