/* evalmetrics.h: relevance-quality metrics of `clarity eval`, independent of
 * the plugin (libc + jansson), so they can be tested on hand-made sessions.
 *
 * A session is a list of snapshots, one per turn, each the items tracked
 * after that turn's agent_end with their counts and score (what
 * clarity.getScores returns).  For a horizon H and a snapshot at turn t:
 *   F(t)        the items of snapshot t whose mentionCount or referenceCount
 *               is higher in some snapshot of a turn in t+1..t+H;
 *   recall@K(t) |topK(t) ∩ F(t)| / |F(t)|, for turns with non-empty F(t),
 *               averaged over such turns across sessions (macro over turns);
 *   gold rank   for sessions with gold files: at each turn before
 *               first_edit_turn (every turn when the agent never edits), the
 *               1-based rank of each gold file's item "file:<path>"; the
 *               median over the pairs where it is tracked, and the fraction
 *               of pairs where it is tracked; MRR: the mean of 1/rank over
 *               the pairs (0 when untracked);
 *   top-5 turn  per (session, gold file): the first snapshot turn that has
 *               it in the top 5; the median over the pairs that get there,
 *               and the share that do;
 *   block t1    per session with gold files: all of them among the first 5
 *               files of the turn-1 block (clarity: the block's text, its
 *               items and likely edit targets in order; a baseline: its
 *               ranking of the items tracked after the first prompt).
 * Rankings: clarity = the snapshot's order (getScores: score desc, id asc);
 * lru = lastMentionTurn desc, id asc; frequency = mentionCount desc,
 * lastMentionTurn desc, id asc.
 */
#ifndef CLI_EVALMETRICS_H
#define CLI_EVALMETRICS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum { EV_CLARITY, EV_LRU, EV_FREQ, EV_NRANK };
#define EV_NK 3
extern const int ev_ks[EV_NK];             /* 5, 10, 20 */
extern const char *const ev_rank_names[EV_NRANK]; /* "clarity", "lru", "frequency" */

typedef struct ev_item {
    char *id;
    double score;
    int64_t mentions, refs, last_mention;
} ev_item;

typedef struct ev_snap {
    int64_t turn;
    ev_item *items; /* in clarity's ranking order */
    size_t n;
    ev_item **by_id; /* the items sorted by id, for lookups */
} ev_snap;

typedef struct ev_session {
    ev_snap *snaps; /* in turn order */
    size_t n, cap;
    char **gold; /* item ids "file:<path>", or NULL */
    size_t n_gold;
    int64_t first_edit; /* -1: the agent never edits */
    char *block1;       /* the first turn's block (malloc()ed), or NULL */
    ev_snap pre1;       /* the items tracked when it was made */
    int has_pre1;
} ev_session;

typedef struct ev_acc {
    size_t sessions, turns;
    size_t recall_turns; /* turns with non-empty F */
    double recall_sum[EV_NRANK][EV_NK];
    size_t gold_pairs;     /* (turn, gold file) pairs */
    double *ranks[EV_NRANK]; /* ranks of the tracked pairs */
    size_t n_ranks, cap_ranks;
    double rr_sum[EV_NRANK]; /* sum of 1/rank over the gold pairs */
    size_t top5_pairs;       /* (session, gold file) pairs */
    double *top5_turn[EV_NRANK]; /* first turn in the top 5, per pair that gets there */
    size_t n_top5[EV_NRANK], cap_top5[EV_NRANK];
    size_t block_sessions;   /* sessions with gold files and a turn-1 block */
    size_t block_hits[EV_NRANK];
} ev_acc;

typedef struct ev_metrics {
    double recall[EV_NK]; /* 0..1; meaningless when recall_turns == 0 */
    size_t recall_turns;
    double gold_rank_median; /* meaningful when gold_tracked_pairs > 0 */
    double gold_tracked;     /* fraction; meaningful when gold_pairs > 0 */
    size_t gold_pairs, gold_tracked_pairs;
    double gold_mrr;              /* meaningful when gold_pairs > 0 */
    double gold_top5_turn_median; /* meaningful when gold_top5_reached_pairs > 0 */
    double gold_top5_reached;     /* fraction of top5_pairs */
    size_t gold_top5_pairs, gold_top5_reached_pairs;
    double gold_in_block_turn1;   /* fraction of block_sessions */
    size_t block_sessions;
} ev_metrics;

/* A snapshot from getScores' "items" array (objects with id, score,
 * mentionCount, referenceCount, lastMentionTurn), in that order.  Returns 0,
 * or -1 (malformed or out of memory; s is left empty). */
int ev_snap_from_json(ev_snap *s, int64_t turn, const json_t *items);
void ev_snap_free(ev_snap *s);
/* The item with that id, or NULL. */
const ev_item *ev_snap_find(const ev_snap *s, const char *id);
/* Fills order[0..n) with the item indices of s in the given ranking. */
void ev_snap_rank(const ev_snap *s, int ranking, size_t *order);

void ev_session_init(ev_session *s);
/* Appends a snapshot, taking over what it holds (*snap is zeroed). */
int ev_session_push(ev_session *s, ev_snap *snap);
/* Reads gold_files (array of paths, or null) and first_edit_turn (integer
 * or null) from a meta object.  Returns 0, or -1 on out of memory. */
int ev_session_meta(ev_session *s, const json_t *meta);
/* The first turn's block and the items tracked when it was made (the
 * text is copied; *pre is taken over and zeroed).  Returns 0 or -1. */
int ev_session_block1(ev_session *s, const char *block, size_t len, ev_snap *pre);
/* Empties the session for reuse. */
void ev_session_clear(ev_session *s);
void ev_session_free(ev_session *s);

void ev_acc_init(ev_acc *a);
/* Adds one session's turns.  horizon >= 1.  Returns 0, or -1 on out of
 * memory. */
int ev_acc_add(ev_acc *a, const ev_session *s, int horizon);
/* The metrics of one ranking (sorts that ranking's ranks in place). */
void ev_acc_metrics(ev_acc *a, int ranking, ev_metrics *out);
void ev_acc_free(ev_acc *a);

/* Median of v[0..n) (sorts v); the mean of the two middle values for even
 * n; 0 for n == 0. */
double ev_median(double *v, size_t n);

#endif
