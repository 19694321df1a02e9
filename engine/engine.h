/* engine.h: the plugin instance behind the ABI: config, extractor, store
 * and the registry of sessions.  Internal to libclarity.so.
 *
 * Locking: reg_mu guards the registry (the hash of sessions, refs, LRU
 * stamps).  Each session has its own mutex, held for the whole of a hook,
 * command or RPC on it, so calls for one session are serialized and calls
 * for different sessions run in parallel.  Lock order: reg_mu is never held
 * while waiting for a session mutex.
 */
#ifndef ENGINE_ENGINE_H
#define ENGINE_ENGINE_H

#include <pthread.h>
#include <stdint.h>

#include "../config/config.h"
#include "../extract/extract.h"
#include "../graph/graph.h"
#include "../include/clarity.h"
#include "../scorer/scorer.h"
#include "../store/store.h"
#include "../tracker/tracker.h"
#include "../util/buf.h"
#include "rankidx.h"


typedef struct session {
    char *id;  /* owned, hash key */
    char *ns;  /* owned: store namespace of this session */
    char *workspace; /* owned or NULL: last workspace the host told us */
    pthread_mutex_t mu;
    /* persist.c: the worker's fold writes its rows in chunks with mu
     * released between them; folding is set meanwhile (under mu), and
     * fold_cv tells the end to what waits for it.  fold_from: the records
     * after it whose slots that fold deletes or has yet to cover (a turn's
     * record that would take one of those slots waits for the fold) */
    int folding;
    uint64_t fold_from;
    pthread_cond_t fold_cv;
    int refs;            /* guarded by engine.reg_mu */
    uint64_t last_used;  /* guarded by engine.reg_mu: LRU stamp */
    int loaded;          /* state read from the store */
    int exists_in_store; /* store holds a meta record */
    int unload;          /* leave memory at the last release (session_end) */
    tracker t;
    /* File predictions of the latest prompt (predict.c), not persisted:
     * "file:<path>" -> normalized prediction, and the block's lines for the
     * predicted files not tracked yet. */
    struct pred_ent *pred;
    char **pred_targets;
    size_t n_pred_targets;
    struct asm_state *asm_; /* what the model sees (assemble.c); NULL until used */
    /* Kept items the last compaction's summary lost (compact.c): shown in
     * the blocks until a turn that showed them ends; stored in the meta. */
    char **reinject;
    size_t n_reinject;
    int reinject_shown;
    struct progress *progress; /* test runs (progress.c); NULL until the first; stored in the meta */
    rankidx rank; /* the items by score bound, for the block (rankidx.c); not persisted */
    /* Files the latest turn edited, and the co-change hints they gave
     * (hints.c): shown in the blocks until the next turn ends. */
    char **edited;
    size_t n_edited;
    char **hints;
    size_t n_hints;
    /* A store shared by several processes (Redis): the namespace version
     * this state was loaded at; a commit is fenced on it (persist.c). */
    uint64_t version;
    int versioned;
    /* The turn log (persist.c, turnlog.h): the seq of the last record
     * written, the seq the stored snapshot covers, the ids removed since
     * that snapshot (their rows go at the next fold), whether this
     * process wrote records since the snapshot, and the record buffer kept
     * between turns.  log_every is the storage.snapshotEvery the records
     * above the snapshot take their slots by (the meta's "every"; 0 when
     * an earlier version wrote it): a process with the same one appends to
     * a log another wrote, another one folds it first.  stale_slots: slots
     * of records the snapshot covers may still be stored (a fold on a
     * store that reuses slots left them, or a load found some), so a
     * snapshot deletes all; slots_left: this process's fold left them, so
     * a fold at the session's end or the shutdown writes a snapshot even
     * when nothing changed since. */
    uint64_t log_seq, snap_seq;
    char **snap_del;
    size_t n_snap_del, cap_snap_del;
    int log_writer, stale_slots, slots_left;
    unsigned log_every;
    buf logbuf;
    buf prunebuf; /* persist.c: a record's pruned section, being built */
    buf touchbuf; /* ... and its touched section */
    /* Folds off the hook's thread (engine.c): fold_queued and fold_at are
     * set under engine.reg_mu (fold_at is read by the queued fold, which it
     * stays the same for), fold_wanted (persist.c: the log is long) under mu.
     * fold_leave (under mu): the queued fold is the long log's, which may
     * leave its slots for the turns to rewrite (persist_fold_worker takes
     * and clears it); a session's end or eviction queues one that does not. */
    int fold_queued, fold_wanted, fold_leave;
    int64_t fold_at;          /* the time the fold stamps as lastPersistAt */
    /* hooks.c: bytes of text scanned without the name filter while it
     * waited to be built (a brief host's restored session) */
    size_t names_rent;
    UT_hash_handle hh;
} session;

typedef struct engine {
    clarity_host host; /* copy, zero-extended to our size */
    clarity_config cfg;
    extractor *ex;
    store *st;
    pthread_mutex_t reg_mu;
    session *sessions;
    session *last; /* the session the last acquire found (engine_acquire) */
    size_t n_sessions;
    uint64_t clock; /* LRU stamps */
    scorer_tables tables; /* for the per-turn scans */
    graph_cache *graphs;  /* owned: the code graphs this engine loaded */
    struct asm_keep *asm_keep; /* owned: assemble.keep compiled, or NULL */
    /* The thread that folds sessions' logs (engine.c), for the stores the
     * plugin owns; NULL with the host's kv (or without memory): folds are
     * the hooks' then. */
    struct worker *folds;
    char fold_err[256];        /* the last failed fold, logged by a hook; reg_mu */
} engine;

/* ---- hostcall.c ---- */
void engine_log(const engine *e, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int64_t engine_now_ms(const engine *e);

/* ---- engine.c ---- */
int engine_new(const clarity_host *host, const char *config_json, engine **out, char **err);
void engine_free(engine *e);

/* Finds (or, with create, makes) a session, loads its state, and returns it
 * locked.  CLARITY_ENOTFOUND when !create and the session is unknown both in
 * memory and in the store. */
int engine_acquire(engine *e, const char *session_id, int create, session **out);
/* Unlocks; may evict idle sessions beyond storage.maxResidentSessions. */
void engine_release(engine *e, session *s);

/* Queues a fold of s's turn log into its snapshot for the worker thread
 * (s locked by the caller, who holds a reference; the queue takes another).
 * The worker folds between s's turns, calls no host service (a host's kv,
 * log and clock may only be usable on the threads it calls the plugin on:
 * the fold's time is taken here, a failure is logged by the next hook), and
 * lets s go when it was leaving memory.  Returns 1 when queued (or already),
 * 0 when the caller must fold itself: the store is the host's, or the
 * worker cannot take it. */
int engine_fold_later(engine *e, session *s);

/* predict.c: fast score using the precomputed tables (same values as
 * scorer_score), plus the prediction term of a file item the session's
 * latest prompt predicts (s may be NULL: no prediction). */
void engine_score(const engine *e, const session *s, const item *it, int64_t turn,
                  score_breakdown *out);
/* Evicts the lowest-scoring unanchored items when the session holds more
 * than limits.maxTrackedItems (down to 90% of it, so the scan amortizes). */
void engine_enforce_cap(engine *e, session *s);

/* ---- persist.c ---- */
int persist_load(engine *e, session *s);
/* Persists what changed since the last flush as one turn-log record (one
 * store write), or folds into the snapshot every storage.snapshotEvery
 * records; either is one transaction.  Past 7/8 of that many records it
 * sets s->fold_wanted, and the release queues the fold for the worker
 * (engine.c), so the turns rarely fold. */
int persist_flush(engine *e, session *s);
/* The same, always folding: the store then holds a snapshot and no live
 * record (session end, eviction, unload). */
int persist_fold(engine *e, session *s);
/* The worker's fold, stamped with the time given (the worker calls no host
 * service, the clock included); s->mu held, and released and taken again
 * inside: the rows go in transactions of storage.foldChunk rows, the
 * session's turns going on between them, and the meta that makes them the
 * snapshot last.  A shared store (Redis) folds in one fenced transaction,
 * as persist_fold. */
int persist_fold_worker(engine *e, session *s, int64_t now);
/* Frees the turn-log bookkeeping of a session. */
void persist_session_free(session *s);
/* Erases a session's stored state (used by import). */
int persist_erase(engine *e, session *s);
/* The original plugin's storage shape:
 * {currentTurn, lastPersistAt, items:[{id, mentionCount, referenceCount,
 *  lastMentionTurn, anchored, createdAt}]} */
void persist_legacy_json(const session *s, buf *out);
/* Replaces the session's state by a value in the legacy shape (or our own
 * richer item fields when present).  On error the state is unchanged. */
int persist_import_legacy(engine *e, session *s, const char *json, char **err);

/* ---- predict.c: file predictions from the workspace's code graph ---- */
/* Replaces the session's predictions by those for the prompt text when
 * prediction.enabled and the workspace has a graph (.clarity/graph.db). */
void predict_update(engine *e, session *s, const char *text, size_t len);
/* The prediction term of an item: normalized prediction * weight, or 0. */
double predict_term(const engine *e, const session *s, const item *it);
/* The largest prediction term of the session's files (0 without predictions). */
double predict_term_max(const engine *e, const session *s);
void predict_clear(session *s);

/* ---- assemble.c: see assemble.h ---- */

/* ---- hooks.c ---- */
int hooks_on_event(engine *e, const clarity_event *ev, buf *out, char **err);
/* The [CLARITY CONTEXT] block for a session's current state. */
/* block.c: appends the session's context block to out (nothing when
 * nothing fits or nothing scores). */
#define BLOCK_OPEN EXTRACT_OWN_OPEN /* what extraction leaves out */
#define BLOCK_CLOSE EXTRACT_OWN_CLOSE
void block_write(engine *e, session *s, buf *out);
/* The same without the rank index: every item bounded (tests compare). */
void block_write_scan(engine *e, session *s, buf *out);

#endif
