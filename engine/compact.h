/* compact.h: the keep list before a host's compaction, and the kept items
 * its summary lost, re-injected in the next block (compact.c). */
#ifndef ENGINE_COMPACT_H
#define ENGINE_COMPACT_H

#include "engine.h"

#define COMPACT_KEEP_MAX 50     /* items in a keep list, and re-injected */
#define COMPACT_KEEP_DEFAULT 15
#define COMPACT_KEEP_HEAD \
    "Keep these (clarity, by relevance to the session; keep their facts, names and decisions in the summary):"
#define COMPACT_LOST_HEAD "Kept through the compaction (its summary left them out):"

/* {"session", "items": [{"id", "score", "anchored"}], "text"}: the keep
 * list of at most max items, and as lines for a summarizer ("" if none). */
int compact_keep_json(engine *e, session *s, size_t max, buf *out);

/* After a compaction whose summary is given: the keep list's items the
 * summary does not name wait for the next block (replacing any earlier
 * list).  Appends {"session", "kept": [ids], "lost": [ids]}. */
int compact_after(engine *e, session *s, const char *summary, size_t len, size_t max, buf *out);

/* Appends the re-injected items' lines (at most budget bytes) to a block;
 * returns the bytes appended. */
size_t compact_block_lines(engine *e, session *s, size_t budget, buf *out);

/* The list in the session (loaded from, and stored with, its meta). */
int compact_reinject_add(session *s, const char *id);
void compact_reinject_clear(session *s);

#endif
