/* evalbudget.h: `clarity eval --budget`: does the assembled context keep
 * what the agent needs next?
 *
 * Before each turn t the transcript so far is assembled under a budget B
 * (CLARITY_EV_ASSEMBLE for clarity; the baselines on the same messages):
 *   recency     user messages always, then the newest messages that fit;
 *   fresh_tail  the last steps (EB_FRESH_STEPS agent steps) always, then
 *               the newest messages that fit.
 * For every item the agent uses in turns t..t+H-1 (its mentionCount or
 * referenceCount grows), its evidence is the newest message before turn t
 * that names it (its name, case-insensitively, as a whole word or path);
 * the item is retained when that message was kept verbatim, or (clarity)
 * when the item is in the context block.  Reported per policy: evidence
 * recall (retained / pairs with evidence, over all (turn, item) pairs),
 * tokens kept (assembled / full transcript, averaged over turns) and cache
 * breaks per turn (turns at which a message sent before is sent
 * differently); the table adds the share of turns sent over the budget
 * (clarity when what it protects does not fit; fresh_tail when its tail
 * does not).  Independent of the plugin but for what it was told.
 */
#ifndef CLI_EVALBUDGET_H
#define CLI_EVALBUDGET_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../include/clarity.h"
#include "evalmetrics.h"

enum { EB_CLARITY, EB_RECENCY, EB_FRESH, EB_NPOL };
extern const char *const eb_policy_names[EB_NPOL]; /* "clarity", "recency", "fresh_tail" */
#define EB_FRESH_STEPS 3

typedef struct eb_msg {
    int64_t tokens;
    int user;
    int64_t step;  /* agent step (user message, or assistant after a tool result) */
    char *low;     /* text and tool arguments, lowercased (owned) */
    size_t len;
} eb_msg;

typedef struct eb_turn {
    int64_t turn;
    size_t n;              /* messages assembled */
    int64_t full;          /* their tokens */
    uint8_t *kept[EB_NPOL]; /* per message: sent verbatim */
    int64_t after[EB_NPOL]; /* tokens sent */
    int64_t budget;        /* given (<= 0: none) */
    char **block;          /* item ids in clarity's block */
    size_t n_block;
} eb_turn;

typedef struct eb_session {
    eb_msg *m;
    size_t nm, capm;
    eb_turn *t;
    size_t nt, capt;
} eb_session;

typedef struct eb_acc {
    double pairs, retained[EB_NPOL];
    double kept_sum[EB_NPOL], breaks[EB_NPOL];
    double over[EB_NPOL]; /* turns sent over the budget */
    size_t turns;
} eb_acc;

/* Records one assembly: the messages (their first n_seen already known are
 * not copied again), clarity's result, the budget given.  0 or -1 (out of
 * memory). */
int eb_turn_add(eb_session *s, int64_t turn, const clarity_ctx_message *msgs, size_t n,
                const json_t *result, int64_t budget);
/* Adds the session's (turn, item) pairs, using the getScores snapshots of
 * the same replay for what was used when. */
void eb_session_score(eb_acc *a, const eb_session *s, const ev_session *snaps, int horizon);
void eb_session_clear(eb_session *s);
/* One budget of a sweep: per policy, evidence recall and tokens kept. */
typedef struct eb_point {
    double budget;
    double recall[EB_NPOL], kept[EB_NPOL];
} eb_point;
/* The HTML report of a sweep: a table and an SVG chart of evidence recall
 * (solid) and tokens kept (dashed) against the budget.  0, or -1 (errno). */
int eb_report_html(const char *path, const char *corpus, const char *config, const eb_point *pts,
                   size_t n);

/* {"evidence_recall", "tokens_kept", "cache_breaks_per_turn"} of a policy. */
json_t *eb_policy_json(const eb_acc *a, int policy);

#endif
