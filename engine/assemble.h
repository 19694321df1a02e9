/* assemble.h: what the model sees (CLARITY_EV_ASSEMBLE).  Internal.
 *
 * Per session: a cache of what each host message carries (asmcache.c: its
 * tokens, the ids it could name, the file its tool call names), and the
 * decisions in force (which messages are stubbed, with the stub text fixed
 * when decided, so that between two batches the output is byte-identical
 * and a prompt cache holds).  assemble.c makes the decisions:
 *
 *   never touched   system messages, the turn in progress, the newest
 *                   turn before it, the older of the last
 *                   assemble.protectRecentTurns turns as far as they fit in
 *                   assemble.protectShare of the budget, messages carrying
 *                   an anchored item or matching assemble.keep; user
 *                   messages unless nothing else meets the budget and
 *                   stubbing them does;
 *   water marks     nothing changes until the assembled size passes
 *                   highWater x budget; then one batch stubs down to
 *                   lowWater x budget, coldest first: tool results (and
 *                   long tool-call arguments) whose items are all pruned or
 *                   below pruning.pruneThreshold, by score; then the other
 *                   tool results and arguments, long assistant texts, and
 *                   last the user messages;
 *   revival         a stubbed message comes back verbatim when its item is
 *                   mentioned again, or anchored.
 * The decisions persist with the session (key "asm"), so a restart does not
 * break the prompt cache.
 */
#ifndef ENGINE_ASSEMBLE_H
#define ENGINE_ASSEMBLE_H

#include <stdint.h>

#include "../util/buf.h"

struct engine;
struct session;
typedef struct asm_state asm_state;
typedef struct asm_keep asm_keep;

/* assemble.keep compiled (NULL when the list is empty).  0, or
 * CLARITY_ECONFIG/ENOMEM with *err malloc()ed. */
int asm_keep_new(const char *const *patterns, size_t n, asm_keep **out, char **err);
void asm_keep_free(asm_keep *k);

/* CLARITY_EV_ASSEMBLE: the result JSON (clarity.h) appended to out. */
int assemble_event(struct engine *e, const void *payload, buf *out, char **err);
/* The last assembly of the session, for /clarity context (text) and
 * clarity.context (JSON: the result without the block). */
void assemble_report_text(struct session *s, buf *out);
void assemble_report_json(struct session *s, buf *out);
void asm_state_free(asm_state *st);

#endif
