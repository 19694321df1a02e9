/* store.h: the key-value store clarity persists to.
 *
 * Three backends behind one interface:
 *   sqlite  an embedded SQLite file: WAL, synchronous=NORMAL (a kill -9
 *           never loses a committed transaction and never corrupts the file),
 *           prepared statements prepared once and reused, explicit
 *           transactions so one turn is one commit;
 *   host    the kv services of the host's clarity_host table;
 *   memory  a process-local table (tests, or hosts that want no persistence).
 * A store is shared by all sessions of a plugin and serializes its calls
 * with its own mutex; begin..commit pairs are held by one caller at a time
 * (store_begin takes the lock, store_commit/store_rollback release it).
 */
#ifndef STORE_STORE_H
#define STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "../include/clarity.h"

typedef struct store store;

/* Visits one key.  key/val are valid only during the call; val is not
 * NUL-terminated.  Return non-zero to stop. */
typedef int (*store_iter_cb)(void *ud, const char *key, const char *val, size_t len);

/* Opens the SQLite backend at path (created when absent).  flags:
 * STORE_SQLITE_SYNC_FULL for synchronous=FULL (every commit fsync'ed: it
 * survives a power loss too, at the cost of a disk flush per turn).  On
 * failure returns CLARITY_ESTORE with *err malloc()ed. */
#define STORE_SQLITE_SYNC_FULL 1
/* STORE_SQLITE_EXCLUSIVE: this process alone opens the file, for as long as
 * the store is open (another one waits 5 s and fails); commits take no
 * lock by system call. */
#define STORE_SQLITE_EXCLUSIVE 2
int store_open_sqlite(const char *path, int flags, store **out, char **err);
/* Wraps the host's kv services; host must stay valid for the store's life. */
int store_open_host(const clarity_host *host, store **out, char **err);
int store_open_memory(store **out, char **err);
void store_close(store *s);
const char *store_backend_name(const store *s);

/* Outside a transaction each call is atomic on its own.  Inside one
 * (between store_begin and store_commit) they become part of it. */
int store_get(store *s, const char *ns, const char *key, char **val, size_t *len); /* *val: free() */
int store_put(store *s, const char *ns, const char *key, const char *val, size_t len);
int store_del(store *s, const char *ns, const char *key);
/* Deletes every key of ns (used when a session is reset or re-imported). */
int store_del_ns(store *s, const char *ns);
int store_iter(store *s, const char *ns, const char *prefix, store_iter_cb cb, void *ud);

int store_begin(store *s);
int store_commit(store *s);
void store_rollback(store *s);
/* Between two transactions of a long run of them (a fold's chunks): lets
 * a thread that has waited 3 ms for the store have it first (the caller
 * waits up to ~1 ms for it). */
void store_yield(store *s);
/* Reads between these two see one state of the store, whatever other
 * processes commit meanwhile (SQLite: a read transaction).  A session's
 * load reads its meta, rows and records apart; a fold committed between
 * them would leave it an old snapshot and none of the records the new one
 * covers.  Holds the store's mutex like a transaction; no writes inside. */
int store_begin_read(store *s);
void store_end_read(store *s);

/* ---- stores shared by several processes (Redis) ----
 * A namespace carries a version the backend bumps on every fenced commit.
 * store_version reads it (0 before the first); store_fence, inside a
 * transaction, makes its commit conditional: it succeeds only while the
 * version is still expect, and sets it to next.  A commit that lost
 * answers STORE_ECONFLICT and writes nothing.  Backends one process owns
 * (SQLite, the host's kv, memory) answer CLARITY_DECLINED to both. */
#define STORE_ECONFLICT (-100) /* internal: never returned through the ABI */
int store_version(store *s, const char *ns, uint64_t *out);
int store_fence(store *s, const char *ns, uint64_t expect, uint64_t next);

/* Opens the Redis backend (store_redis.c): url redis://[user:password@]
 * host[:port][/db] or unix:///path[?db=N], keys "<prefix><ns>" (hashes),
 * every round trip bounded by timeout_ms.  A server that cannot be reached
 * is not an error here: calls fail with CLARITY_ESTORE and the Redis error
 * until it comes back (reconnecting with backoff).  A malformed url is
 * CLARITY_ECONFIG with *err naming it. */
int store_open_redis(const char *url, const char *prefix, int timeout_ms, store **out, char **err);

/* The SQLite backend's WAL checkpoints (for tests and benchmarks): how
 * many the background thread ran, in how many of those the WAL held
 * frames copied into the database (a run that copies nothing is one that
 * could not run), how many a commit ran on its own thread because the WAL
 * outgrew the hard bound (a stall in that hook), whether the background
 * thread has one asked for or running, and whether it was started (at the
 * first checkpoint needed); and how many slot-row reservations the thread
 * made (store/sqlite_ring.h).  CLARITY_DECLINED for the other backends. */
typedef struct store_ckpt_stats {
    unsigned long background, background_copied, on_commit;
    unsigned long reservations; /* slot-row reservations made (sqlite_ring.h) */
    int busy;
    int thread;
} store_ckpt_stats;
int store_sqlite_ckpt_stats(store *s, store_ckpt_stats *out);

/* Turn-log slot keys (engine/turnlog.h): "l:" and four lower-case hex
 * digits of the slot, NUL-terminated in 7 bytes.  A backend may keep them
 * apart from the other keys (SQLite: store/sqlite_ring.h). */
void store_slot_key(char key[7], unsigned slot);
/* The slot of a slot key (0..65535), or -1 when key is none. */
int store_slot_of(const char *key);
/* Whether some slot key starts with prefix. */
int store_slot_prefix(const char *prefix);

/* Whether the backend rewrites a key in place more cheaply than it writes
 * one it deleted (SQLite: a turn-log slot's page is rewritten where it is,
 * one WAL frame, where a new row allocates a page and rewrites the
 * freelist, the header and the parent).  The engine then leaves the slots
 * of folded records, stale, for later turns to overwrite, and deletes
 * them at the next snapshot it writes itself (persist.c). */
int store_reuses_slots(const store *s);

/* Last error text of the store (static or store-owned), for messages. */
const char *store_errmsg(const store *s);

#endif
