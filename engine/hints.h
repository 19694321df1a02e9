/* hints.h: co-change hints after an edit (hints.c). */
#ifndef ENGINE_HINTS_H
#define ENGINE_HINTS_H

#include "engine.h"

#define HINTS_EDITED_MAX 8

/* agent_end: a tool call that edits files (args_json names the file). */
void hints_note_edit(session *s, const char *args_json);
/* agent_end, after the scan: the hint lines for what the turn edited (or
 * none), from the workspace's graph. */
void hints_update(engine *e, session *s);
/* The lines for the block, as far as max_len bytes go. */
void hints_block_lines(const session *s, buf *out, size_t max_len);
void hints_clear(session *s);

#endif
