/* sqlite_ring.h: where the SQLite backend keeps turn-log slots.
 *
 * A session writes one turn-log record per turn under a slot key, "l:" and
 * four lowercase hex digits (engine/turnlog.h), replacing the record a
 * snapshotEvery turns older.  In the kv table (WITHOUT ROWID) a row keeps
 * about 1 KB of its value in the leaf and the rest in an overflow chain, so
 * replacing a 4 KB record rewrote a leaf, an overflow page, the freelist
 * and the header: 3.5 WAL frames a commit.  Here slots are rows of a rowid
 * table, ring(id INTEGER PRIMARY KEY, val BLOB), where a value up to 4 KB
 * stays in its leaf and a replacement rewrites that leaf alone (1.2 frames
 * a commit, half the time; bench/ "SQLite alone").
 *
 * A value is stored after its length (u32) and padded with zeros to a
 * size class: a quarter to the whole of a leaf's room for one row, then
 * whole overflow pages.  A new row's cell (and one a value outgrew) takes
 * the class of twice its value, up to a leaf's room: a slot's records vary
 * from turn to turn, and a cell that must grow moves.
 * A record replaced by one of the same class has a cell of the same size,
 * which SQLite rewrites where it is: one WAL frame a page, no page freed
 * or allocated (which rewrites the freelist, the header and the parent).
 * A turn-log slot's page is thus reused rather than freed, which is why
 * the backend asks the engine to leave stale slots in place (store.h,
 * store_reuses_slots): a deleted slot would be a new row again.
 *
 * id = nsid << 16 | slot, the namespace numbered once in nsid(id, ns):
 * rows are never deleted from nsid, so a number, once committed, names the
 * same namespace for every process and can be cached.  A number inserted
 * in a write transaction that rolls back is forgotten with it.
 *
 * The other keys stay in kv; store_sqlite.c routes each call by its key.
 * Called with the store's mutex held, like the backend. */
#ifndef STORE_SQLITE_RING_H
#define STORE_SQLITE_RING_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define SQ_RING_CACHE 64 /* namespaces whose numbers are kept (direct-mapped) */
#define SQ_RING_AHEAD 16 /* slots reserved at a time (at most 32) */
#define SQ_RING_INLINE 4 /* ... by a put itself (reservations, below) */
/* A reservation's cell: its length (0, u32), then this marker. */
#define SQ_RING_RESERVED "\xffreserv"
#define SQ_RING_RESERVED_LEN 8

typedef struct sq_ring {
    sqlite3 *db;
    sqlite3_stmt *ns_get, *ns_add, *get, *size, *put, *upd, *del, *del_ns, *iter, *res;
    size_t page;             /* the file's page size */
    unsigned char *cell;     /* a padded value being written, zero past cell_end */
    size_t cell_cap, cell_end;
    struct sq_ring_ns {
        char *ns;
        int64_t id;
        int fresh; /* slots from this one on are known absent (-1: none known) */
        int asked; /* the first slot this connection last asked to be reserved (-1: none) */
        /* the cell size this connection last wrote in each slot, 0 when
         * not known (a hint: another process may have written since, and a
         * rewrite of another size is only not in place) */
        uint32_t *cells;
        size_t ncells;
    } cache[SQ_RING_CACHE];
    int tentative;  /* a number was inserted in the open write transaction */
    int req_pending; /* req holds a reservation asked for (sq_ring_take_request) */
    struct sq_ring_req {
        int64_t id;  /* the namespace's number */
        int slot, n; /* slots slot .. slot + n - 1 */
        size_t size; /* the cell size to reserve */
    } req;
} sq_ring;
typedef struct sq_ring_req sq_ring_req;

/* The schema the ring needs (run in the open's schema transaction). */
extern const char *const sq_ring_schema[2];

/* Reads the file's page size and prepares the statements a restore
 * uses (the others where first used): SQLITE_OK or SQLite's error (a
 * table missing among them). */
int sq_ring_open(sq_ring *r, sqlite3 *db);
void sq_ring_close(sq_ring *r);
/* A write transaction ended without committing: numbers it inserted go,
 * and the cell sizes it wrote are forgotten. */
void sq_ring_rollback(sq_ring *r);
/* ... or committed: they stay. */
void sq_ring_committed(sq_ring *r);

/* A stored value whose length does not fit its cell (a damaged file). */
#define SQ_RING_BAD (-1)

/* The value of slot in ns: SQLITE_ROW with *val, *len pointing into the
 * row (valid until sq_ring_get_done), SQLITE_DONE when there is none,
 * SQ_RING_BAD, or an error. */
int sq_ring_get(sq_ring *r, const char *ns, int slot, const char **val, size_t *len);
void sq_ring_get_done(sq_ring *r);
/* What a put that makes a new row does about the next slots' rows
 * (reservations, below). */
typedef enum sq_ring_ahead {
    SQ_AHEAD_NONE, /* nothing (a migration: the rows moved are the slots there are) */
    SQ_AHEAD_SELF, /* makes them itself: no thread will */
    SQ_AHEAD_ASK,  /* asks the store's thread, unless it did not make the last ask in time */
} sq_ring_ahead;
/* SQLITE_DONE on success, else an error. */
int sq_ring_put(sq_ring *r, const char *ns, int slot, const void *val, size_t len, sq_ring_ahead ahead);
int sq_ring_del(sq_ring *r, const char *ns, int slot);
int sq_ring_del_ns(sq_ring *r, const char *ns);

/* Visits ns's slots whose keys start with prefix, in slot order.  The rows
 * are read first and the statement reset before cb runs, so cb may use the
 * store.  Returns SQLITE_DONE, SQLITE_NOMEM, SQ_RING_BAD (*bad: the slot),
 * or SQLite's error; *stopped is set when cb asked to stop. */
typedef int (*sq_ring_cb)(void *ud, const char *key, const char *val, size_t len);
int sq_ring_iter(sq_ring *r, const char *ns, const char *prefix, sq_ring_cb cb, void *ud, int *stopped,
                 int *bad);

/* Moves the slot rows of kv (written by a schema version 1 file) into the
 * ring: SQLITE_DONE or an error.  Inside the open's schema transaction. */
int sq_ring_migrate(sq_ring *r);

/* ---- reservations ----
 * A new row of a value a leaf holds alone makes the file grow: the commit
 * writes the row's leaf, its parent and the header page, 3 WAL frames
 * where rewriting a row in place writes 1, and until a session's ring
 * wraps (snapshotEvery records; most sessions end before) every record is
 * a new row.  So such a put asks (sq_ring_take_request) for the rows of
 * the next SQ_RING_AHEAD slots to be made ahead, on another connection
 * between turns (store_sqlite.c), holding a reservation: a cell of the
 * same size with length 0, then a marker.  get and iter take a
 * reservation for no value (to a version without them it is an empty
 * record, which a restore skips), and the next records rewrite the rows in
 * place once the connection knows them (sq_ring_note_reserved).
 * Where no thread makes them (a hook's process, a process's first
 * commits: SQ_AHEAD_SELF), or an ask was not made before its slot's put
 * (turns back to back, with no pause for the thread), the put makes the
 * next SQ_RING_INLINE rows itself, in its own transaction: that commit
 * writes SQ_RING_INLINE frames more, and the records after it one each.
 * The new row after those asks the thread again (it may have a pause by
 * then): back to back, of six commits one writes three frames (it
 * asks), one seven (it makes the rows), four one. */

/* The reservation the last put asked for, taken: 1, or 0 when none. */
int sq_ring_take_request(sq_ring *r, sq_ring_req *out);
/* Makes req's rows that do not exist, on db (another connection than the
 * ring's), in one write transaction; *st is its statement, prepared on
 * first use (the caller finalizes it).  Bit j of the result: slot
 * req->slot + j was made (0 as well when it failed: nothing was). */
uint32_t sq_ring_reserve(sqlite3 *db, sqlite3_stmt **st, const sq_ring_req *req);
/* Tells the ring's connection which rows sq_ring_reserve made, so that
 * its next puts there rewrite them in place. */
void sq_ring_note_reserved(sq_ring *r, const sq_ring_req *req, uint32_t made);

#endif
