/* sqlite_ring.c: the turn-log slots of the SQLite backend (sqlite_ring.h). */
#include <stdlib.h>
#include <string.h>

#include "../util/buf.h"
#include "sqlite_ring.h"
#include "store.h"

#define SLOT_BITS 16
#define NSID_MAX (INT64_MAX >> SLOT_BITS)
#define LEN_BYTES 4 /* the value's length, u32 little-endian, ahead of it */
/* Bytes a cell's payload keeps for its record header (the blob's serial
 * type) below SQLite's most a leaf holds of one row (page - 35). */
#define CELL_SLACK 16
#define SLOT_GLOB "'l:[0-9a-f][0-9a-f][0-9a-f][0-9a-f]'"
#define RESERVE_SQL "INSERT OR IGNORE INTO ring(id, val) VALUES(?1, ?2)"
/* The ring's statements, prepared where first used (ready): a hook's
 * process uses a few of them, and preparing each is a parse. */
#define NS_GET_SQL "SELECT id FROM nsid WHERE ns=?1"
#define NS_ADD_SQL "INSERT INTO nsid(ns) VALUES(?1)"
#define GET_SQL "SELECT val FROM ring WHERE id=?1"
#define SIZE_SQL "SELECT length(val) FROM ring WHERE id=?1"
#define PUT_SQL "INSERT OR REPLACE INTO ring(id, val) VALUES(?1, ?2)"
#define UPD_SQL "UPDATE ring SET val=?2 WHERE id=?1"
#define DEL_SQL "DELETE FROM ring WHERE id=?1"
#define DEL_NS_SQL "DELETE FROM ring WHERE id BETWEEN ?1 AND ?2"
#define ITER_SQL "SELECT id, val FROM ring WHERE id BETWEEN ?1 AND ?2 ORDER BY id"

const char *const sq_ring_schema[2] = {
    "CREATE TABLE IF NOT EXISTS nsid(id INTEGER PRIMARY KEY, ns TEXT NOT NULL UNIQUE)",
    "CREATE TABLE IF NOT EXISTS ring(id INTEGER PRIMARY KEY, val BLOB NOT NULL)",
};

static int prep(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
    return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
}

/* A leaf's room for one row, less the slack (F below). */
static size_t leaf_room(const sq_ring *r) { return r->page - 35 - CELL_SLACK; }

/* The stored size of a value of len bytes: its length and bytes padded to
 * the first size class that holds them: eighths of a leaf's room for one
 * row (F = leaf_room; small records share leaves), the whole
 * of it, then F + k (page - 4), whole overflow pages.  Values of one class
 * have cells of one size, which SQLite rewrites where they are (one WAL
 * frame a page). */
static size_t cell_size(const sq_ring *r, size_t len)
{
    size_t first = leaf_room(r), more = r->page - 4, need = len + LEN_BYTES, q = first / 8;
    if (need <= first) return need <= 7 * q ? (need + q - 1) / q * q : first;
    return first + (need - first + more - 1) / more * more;
}

/* The cell of a new row for a value of len bytes (class size), or of a row
 * the value outgrew: room for twice the value, up to a leaf's whole room.
 * A slot's records vary from turn to turn, and a cell that must grow moves:
 * its leaf splits, and the commit writes the leaf, a new one, their parent
 * and the header page, where a rewrite in place writes one. */
static size_t cell_new(const sq_ring *r, size_t len, size_t size)
{
    size_t room = leaf_room(r);
    if (size >= room) return size;
    size_t more = cell_size(r, 2 * len);
    return more < room ? more : room;
}

/* The cell of a value in r->cell: its length, its bytes, zeros to size.
 * The buffer is kept zero past the last value's end (r->cell_end), so only
 * what that one left past this one's end is cleared. */
static int fill_cell(sq_ring *r, const void *val, size_t len, size_t size)
{
    if (size > r->cell_cap) {
        unsigned char *c = realloc(r->cell, size);
        if (!c) return SQLITE_NOMEM;
        memset(c + r->cell_cap, 0, size - r->cell_cap);
        r->cell = c;
        r->cell_cap = size;
    }
    unsigned char *c = r->cell;
    for (int i = 0; i < LEN_BYTES; i++) c[i] = (unsigned char)(len >> (8 * i));
    if (len) memcpy(c + LEN_BYTES, val, len);
    size_t end = LEN_BYTES + len;
    if (r->cell_end > end) memset(c + end, 0, r->cell_end - end);
    r->cell_end = end;
    return SQLITE_OK;
}

int sq_ring_open(sq_ring *r, sqlite3 *db)
{
    memset(r, 0, sizeof *r);
    r->db = db;
    r->page = 4096;
    sqlite3_stmt *ps = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &ps, NULL);
    if (rc == SQLITE_OK && sqlite3_step(ps) == SQLITE_ROW) {
        sqlite3_int64 v = sqlite3_column_int64(ps, 0);
        if (v >= 512 && v <= 65536) r->page = (size_t)v;
    }
    sqlite3_finalize(ps);
    if (rc != SQLITE_OK) return rc;
    /* the two every restore uses, now: they also tell a file whose tables
     * went missing (the open then makes them again) */
    if ((rc = prep(db, NS_GET_SQL, &r->ns_get)) || (rc = prep(db, ITER_SQL, &r->iter))) return rc;
    return SQLITE_OK;
}

/* *st, prepared from sql on first use: SQLITE_OK or the prepare's error. */
static int ready(sq_ring *r, sqlite3_stmt **st, const char *sql)
{
    return *st ? SQLITE_OK : prep(r->db, sql, st);
}

static void forget_cells(struct sq_ring_ns *c)
{
    free(c->cells);
    c->cells = NULL;
    c->ncells = 0;
}

static void forget(sq_ring *r)
{
    for (size_t i = 0; i < SQ_RING_CACHE; i++) {
        free(r->cache[i].ns);
        r->cache[i].ns = NULL;
        forget_cells(&r->cache[i]);
    }
    r->tentative = 0;
}

/* The size of the cell written in slot (0: not known). */
static size_t cell_known(const struct sq_ring_ns *c, int slot)
{
    return c && (size_t)slot < c->ncells ? c->cells[slot] : 0;
}

/* Remembers the size of the cell written in slot (0: not known); a hint,
 * so an allocation failure only forgets it. */
static void cell_note(struct sq_ring_ns *c, int slot, size_t size)
{
    if (!c) return;
    if ((size_t)slot >= c->ncells) {
        if (!size) return;
        size_t n = (size_t)slot + 1 < 64 ? 64 : (size_t)slot + 1;
        uint32_t *p = realloc(c->cells, n * sizeof *p);
        if (!p) return;
        memset(p + c->ncells, 0, (n - c->ncells) * sizeof *p);
        c->cells = p;
        c->ncells = n;
    }
    c->cells[slot] = size <= UINT32_MAX ? (uint32_t)size : 0;
}

void sq_ring_close(sq_ring *r)
{
    sqlite3_stmt **all[] = {&r->ns_get, &r->ns_add, &r->get,    &r->size, &r->put,
                            &r->upd,    &r->del,    &r->del_ns, &r->iter, &r->res};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        sqlite3_finalize(*all[i]);
        *all[i] = NULL;
    }
    forget(r);
    free(r->cell);
    r->cell = NULL;
    r->cell_cap = r->cell_end = 0;
}

void sq_ring_rollback(sq_ring *r)
{
    if (r->tentative) forget(r);
    for (size_t i = 0; i < SQ_RING_CACHE; i++) forget_cells(&r->cache[i]);
}

void sq_ring_committed(sq_ring *r) { r->tentative = 0; }

static void reset(sqlite3_stmt *st)
{
    if (!st) return; /* never prepared (ready) */
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

static size_t cache_at(const char *ns)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)ns; *p; p++) h = (h ^ *p) * 16777619u;
    return h % SQ_RING_CACHE;
}

/* ns's number: SQLITE_ROW with *id, SQLITE_DONE when it has none (and add
 * is 0), or an error.  With add, a namespace without one gets one.
 * *ent (when ent): its cache entry, or NULL. */
static int ns_id(sq_ring *r, const char *ns, int add, int64_t *id, struct sq_ring_ns **ent)
{
    size_t at = cache_at(ns);
    if (ent) *ent = NULL;
    if (r->cache[at].ns && strcmp(r->cache[at].ns, ns) == 0) {
        *id = r->cache[at].id;
        if (ent) *ent = &r->cache[at];
        return SQLITE_ROW;
    }
    int made = 0; /* a new number: none of its slots exists */
    int rc = ready(r, &r->ns_get, NS_GET_SQL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(r->ns_get, 1, ns, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_step(r->ns_get);
    if (rc == SQLITE_ROW) *id = sqlite3_column_int64(r->ns_get, 0);
    reset(r->ns_get);
    if (rc == SQLITE_DONE && add) {
        rc = ready(r, &r->ns_add, NS_ADD_SQL);
        if (rc == SQLITE_OK) rc = sqlite3_bind_text(r->ns_add, 1, ns, -1, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_step(r->ns_add);
        reset(r->ns_add);
        if (rc == SQLITE_DONE) {
            *id = sqlite3_last_insert_rowid(r->db);
            if (!sqlite3_get_autocommit(r->db)) r->tentative = 1;
            rc = SQLITE_ROW;
            made = 1;
        }
    }
    if (rc != SQLITE_ROW) return rc;
    /* a number the file did not write (numbers are small) is refused */
    if (*id < 1 || *id > NSID_MAX) return SQLITE_CORRUPT;
    char *copy = strdup(ns);
    if (copy) { /* else only not cached */
        free(r->cache[at].ns);
        forget_cells(&r->cache[at]);
        r->cache[at].ns = copy;
        r->cache[at].id = *id;
        r->cache[at].fresh = made ? 0 : -1;
        r->cache[at].asked = -1;
        if (ent) *ent = &r->cache[at];
    }
    return SQLITE_ROW;
}

/* Whether a stored cell is a reservation. */
static int reserved(const void *cell, size_t n)
{
    const unsigned char *c = cell;
    return n >= LEN_BYTES + SQ_RING_RESERVED_LEN && !(c[0] | c[1] | c[2] | c[3]) &&
           memcmp(c + LEN_BYTES, SQ_RING_RESERVED, SQ_RING_RESERVED_LEN) == 0;
}

/* The value inside a stored cell: 0, or -1 when its length does not fit. */
static int unpad(const void *cell, size_t n, const char **p, size_t *len)
{
    if (n < LEN_BYTES) return -1;
    const unsigned char *c = cell;
    uint32_t l = (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
    if (l > n - LEN_BYTES) return -1;
    *p = (const char *)c + LEN_BYTES;
    *len = l;
    return 0;
}

int sq_ring_get(sq_ring *r, const char *ns, int slot, const char **val, size_t *len)
{
    int64_t id;
    int rc = ns_id(r, ns, 0, &id, NULL);
    if (rc != SQLITE_ROW) return rc;
    rc = ready(r, &r->get, GET_SQL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(r->get, 1, id << SLOT_BITS | slot);
    if (rc == SQLITE_OK) rc = sqlite3_step(r->get);
    if (rc == SQLITE_ROW) {
        const void *c = sqlite3_column_blob(r->get, 0);
        size_t n = (size_t)sqlite3_column_bytes(r->get, 0);
        if (!c && n) rc = SQLITE_NOMEM;
        else if (reserved(c, n)) rc = SQLITE_DONE;
        else if (unpad(c, n, val, len) != 0) rc = SQ_RING_BAD;
    }
    if (rc != SQLITE_ROW) reset(r->get);
    return rc;
}

void sq_ring_get_done(sq_ring *r) { reset(r->get); }

/* Makes req's rows that do not exist, with st (RESERVE_SQL on db) inside
 * db's open write transaction, each the reservation `cell` (req->size
 * bytes).  Bit j of *made: slot req->slot + j was made.  SQLITE_OK or an
 * error. */
static int insert_reserved(sqlite3 *db, sqlite3_stmt *st, const sq_ring_req *req, const unsigned char *cell,
                           uint32_t *made)
{
    int rc = SQLITE_OK;
    for (int j = 0; rc == SQLITE_OK && j < req->n; j++) {
        rc = sqlite3_bind_int64(st, 1, req->id << SLOT_BITS | (req->slot + j));
        if (rc == SQLITE_OK) rc = sqlite3_bind_blob64(st, 2, cell, (sqlite3_uint64)req->size, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_step(st);
        reset(st);
        if (rc == SQLITE_DONE) {
            if (sqlite3_changes(db) > 0) *made |= (uint32_t)1 << j;
            rc = SQLITE_OK;
        }
    }
    return rc;
}

/* Notes in c the rows of req that `made` says were made (bit j: slot
 * req->slot + j) and that the range's slots all have rows now. */
static void note_made(struct sq_ring_ns *c, const sq_ring_req *req, uint32_t made)
{
    for (int j = 0; j < req->n; j++)
        if ((made >> j & 1) && !cell_known(c, req->slot + j)) cell_note(c, req->slot + j, req->size);
    if (c->fresh >= 0 && c->fresh < req->slot + req->n) c->fresh = req->slot + req->n;
}

/* Whether a new row of a cell of `size` bytes in slot is followed by
 * reservations (sqlite_ring.h): a row a leaf holds alone, whose next
 * slot's row this connection does not know of. */
static int wants_reservations(const sq_ring *r, const struct sq_ring_ns *ent, int slot, size_t size,
                              sq_ring_ahead ahead)
{
    size_t room = leaf_room(r);
    return ent && ahead != SQ_AHEAD_NONE && size > room / 2 && size <= room && slot + 1 < (1 << SLOT_BITS) &&
           !cell_known(ent, slot + 1);
}

/* After slot's new row: the next slots' rows, made here (itself) or asked
 * of the store's thread. */
static int reserve_after(sq_ring *r, struct sq_ring_ns *ent, int64_t id, int slot, int itself)
{
    int n = (1 << SLOT_BITS) - (slot + 1);
    size_t room = leaf_room(r);
    /* a leaf's whole room: the next records, of any size a leaf holds
     * alone, rewrite it in place (sq_ring_put keeps a cell up to twice a
     * value's size) */
    if (!itself) {
        r->req = (sq_ring_req){id, slot + 1, n < SQ_RING_AHEAD ? n : SQ_RING_AHEAD, room};
        r->req_pending = 1;
        ent->asked = slot + 1;
        return SQLITE_DONE;
    }
    ent->asked = -1;
    sq_ring_req req = {id, slot + 1, n < SQ_RING_INLINE ? n : SQ_RING_INLINE, room};
    uint32_t made = 0;
    /* the reservation in r->cell: length 0, then the marker */
    if (fill_cell(r, NULL, 0, room) != SQLITE_OK) return SQLITE_NOMEM;
    memcpy(r->cell + LEN_BYTES, SQ_RING_RESERVED, SQ_RING_RESERVED_LEN);
    r->cell_end = LEN_BYTES + SQ_RING_RESERVED_LEN;
    int rc = ready(r, &r->res, RESERVE_SQL);
    if (rc == SQLITE_OK) rc = insert_reserved(r->db, r->res, &req, r->cell, &made);
    if (rc != SQLITE_OK) return rc;
    note_made(ent, &req, made);
    return SQLITE_DONE;
}

/* Writes the cell in r->cell (size bytes) as slot key's row: updated
 * where the row is known to exist (old), else inserted.  *inserted: a
 * row was inserted.  SQLITE_DONE or an error. */
static int write_row(sq_ring *r, sqlite3_int64 key, size_t size, size_t old, int *inserted)
{
    /* an existing row is updated: SQLite rewrites a cell of the same size
     * in place, overflow pages included, where INSERT OR REPLACE frees them
     * and allocates new ones */
    int rc = SQLITE_DONE;
    for (int k = old ? 0 : 1; k < 2; k++) {
        sqlite3_stmt **st = k ? &r->put : &r->upd;
        rc = ready(r, st, k ? PUT_SQL : UPD_SQL);
        if (rc == SQLITE_OK) rc = sqlite3_bind_int64(*st, 1, key);
        if (rc == SQLITE_OK) rc = sqlite3_bind_blob64(*st, 2, r->cell, (sqlite3_uint64)size, SQLITE_STATIC);
        if (rc == SQLITE_OK) rc = sqlite3_step(*st);
        reset(*st);
        *inserted = k;
        if (rc != SQLITE_DONE || sqlite3_changes(r->db) > 0) break; /* else gone since: inserted */
    }
    return rc;
}

int sq_ring_put(sq_ring *r, const char *ns, int slot, const void *val, size_t len, sq_ring_ahead ahead)
{
    int64_t id;
    struct sq_ring_ns *ent;
    int rc = ns_id(r, ns, 1, &id, &ent);
    if (rc != SQLITE_ROW) return rc;
    if (len > UINT32_MAX - r->page * 2) return SQLITE_TOOBIG;
    sqlite3_int64 key = id << SLOT_BITS | slot;
    size_t size = cell_size(r, len), old = cell_known(ent, slot);
    /* the slot's cell as it is, when it holds the value and is not more
     * than twice what it needs (sizes near a class's edge would move the
     * cell between classes, a reallocation each time); not looked for in
     * a namespace this connection numbered and has not filled so far (a
     * new session's first records), nor where this connection wrote it */
    int absent = ent && ent->fresh >= 0 && slot >= ent->fresh;
    if (!absent && !old) {
        rc = ready(r, &r->size, SIZE_SQL);
        if (rc == SQLITE_OK) rc = sqlite3_bind_int64(r->size, 1, key);
        if (rc == SQLITE_OK && (rc = sqlite3_step(r->size)) == SQLITE_ROW)
            old = (size_t)sqlite3_column_int64(r->size, 0);
        reset(r->size);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) return rc;
    }
    if (old >= size && old <= 2 * size + r->page) size = old;
    else size = cell_new(r, len, size);
    if (fill_cell(r, val, len, size) != SQLITE_OK) return SQLITE_NOMEM;
    /* the put makes the rows ahead itself where the store's thread does
     * not (SQ_AHEAD_SELF), or did not make the last ask before this
     * slot's put (turns back to back; the next new row asks again, so the
     * thread takes over once turns have pauses).  A row and the rows it
     * makes are one transaction: outside the store's, one of their own. */
    int reserve = !old && wants_reservations(r, ent, slot, size, ahead);
    int itself = reserve && (ahead == SQ_AHEAD_SELF || slot == ent->asked);
    int own = itself && sqlite3_get_autocommit(r->db);
    if (own && (rc = sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL)) != SQLITE_OK) return rc;
    int inserted = 0;
    rc = write_row(r, key, size, old, &inserted);
    if (rc == SQLITE_DONE && absent) ent->fresh = slot + 1;
    cell_note(ent, slot, rc == SQLITE_DONE ? size : 0);
    if (rc == SQLITE_DONE && inserted && reserve) rc = reserve_after(r, ent, id, slot, itself);
    if (own) {
        if (rc == SQLITE_DONE) rc = sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
        else sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
        if (rc == SQLITE_OK) rc = SQLITE_DONE;
        else {
            if (!sqlite3_get_autocommit(r->db)) sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
            sq_ring_rollback(r);
        }
    }
    return rc;
}

int sq_ring_del(sq_ring *r, const char *ns, int slot)
{
    int64_t id;
    struct sq_ring_ns *ent;
    int rc = ns_id(r, ns, 0, &id, &ent);
    if (rc != SQLITE_ROW) return rc;
    cell_note(ent, slot, 0);
    rc = ready(r, &r->del, DEL_SQL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(r->del, 1, id << SLOT_BITS | slot);
    if (rc == SQLITE_OK) rc = sqlite3_step(r->del);
    reset(r->del);
    return rc;
}

/* Binds ns's id range to st's ?1 and ?2. */
static int bind_range(sqlite3_stmt *st, int64_t id)
{
    int rc = sqlite3_bind_int64(st, 1, id << SLOT_BITS);
    return rc == SQLITE_OK ? sqlite3_bind_int64(st, 2, id << SLOT_BITS | ((1 << SLOT_BITS) - 1)) : rc;
}

int sq_ring_del_ns(sq_ring *r, const char *ns)
{
    int64_t id;
    struct sq_ring_ns *ent;
    int rc = ns_id(r, ns, 0, &id, &ent);
    if (rc != SQLITE_ROW) return rc;
    if (ent) forget_cells(ent);
    rc = ready(r, &r->del_ns, DEL_NS_SQL);
    if (rc == SQLITE_OK) rc = bind_range(r->del_ns, id);
    if (rc == SQLITE_OK) rc = sqlite3_step(r->del_ns);
    reset(r->del_ns);
    return rc;
}

typedef struct slot_row {
    int slot;
    size_t off, len;
} slot_row;

/* ns's slot rows starting with prefix, read into rows and vals. */
static int read_slots(sq_ring *r, int64_t id, const char *prefix, slot_row **rows, size_t *n, buf *vals,
                      int *bad)
{
    size_t cap = 0, plen = strlen(prefix);
    int rc = ready(r, &r->iter, ITER_SQL);
    if (rc == SQLITE_OK) rc = bind_range(r->iter, id);
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if ((rc = sqlite3_step(r->iter)) != SQLITE_ROW) break;
        int slot = (int)(sqlite3_column_int64(r->iter, 0) & ((1 << SLOT_BITS) - 1));
        char key[7];
        store_slot_key(key, slot);
        if (memcmp(key, prefix, plen) != 0) continue;
        const void *c = sqlite3_column_blob(r->iter, 1);
        size_t cn = (size_t)sqlite3_column_bytes(r->iter, 1), vn = 0;
        const char *v = NULL;
        if (!c && cn) rc = SQLITE_NOMEM;
        else if (reserved(c, cn)) continue;
        else if (unpad(c, cn, &v, &vn) != 0) rc = SQ_RING_BAD, *bad = slot;
        if (rc == SQLITE_ROW && *n == cap) {
            cap = cap ? 2 * cap : 16;
            slot_row *p = realloc(*rows, cap * sizeof *p);
            if (p) *rows = p;
            else rc = SQLITE_NOMEM;
        }
        if (rc != SQLITE_ROW) break;
        (*rows)[(*n)++] = (slot_row){slot, vals->len, vn};
        buf_append(vals, v ? v : "", vn);
        if (buf_failed(vals)) rc = SQLITE_NOMEM;
    }
    reset(r->iter);
    return rc;
}

int sq_ring_iter(sq_ring *r, const char *ns, const char *prefix, sq_ring_cb cb, void *ud, int *stopped, int *bad)
{
    *stopped = 0;
    *bad = -1;
    if (!store_slot_prefix(prefix)) return SQLITE_DONE;
    int64_t id;
    int rc = ns_id(r, ns, 0, &id, NULL);
    if (rc != SQLITE_ROW) return rc;
    slot_row *rows = NULL;
    size_t n = 0;
    buf vals;
    buf_init(&vals);
    rc = read_slots(r, id, prefix, &rows, &n, &vals, bad);
    for (size_t i = 0; rc == SQLITE_DONE && i < n; i++) {
        char key[7];
        store_slot_key(key, rows[i].slot);
        if (cb(ud, key, vals.p ? vals.p + rows[i].off : "", rows[i].len)) {
            *stopped = 1;
            break;
        }
    }
    free(rows);
    buf_free(&vals);
    return rc;
}

int sq_ring_migrate(sq_ring *r)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(r->db, "SELECT ns, key, val FROM kv WHERE key GLOB " SLOT_GLOB, -1, &st, NULL);
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if ((rc = sqlite3_step(st)) != SQLITE_ROW) break;
        const char *ns = (const char *)sqlite3_column_text(st, 0);
        const char *key = (const char *)sqlite3_column_text(st, 1);
        const void *v = sqlite3_column_blob(st, 2);
        size_t vn = (size_t)sqlite3_column_bytes(st, 2); /* stored unpadded in kv */
        if (!ns || !key || (!v && vn)) rc = SQLITE_NOMEM;
        else {
            /* (the rows moved are the slots there are: none made ahead) */
            if ((rc = sq_ring_put(r, ns, store_slot_of(key), v, vn, SQ_AHEAD_NONE)) == SQLITE_DONE) rc = SQLITE_ROW;
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return rc;
    rc = sqlite3_exec(r->db, "DELETE FROM kv WHERE key GLOB " SLOT_GLOB, NULL, NULL, NULL);
    return rc == SQLITE_OK ? SQLITE_DONE : rc;
}

int sq_ring_take_request(sq_ring *r, sq_ring_req *out)
{
    if (!r->req_pending) return 0;
    *out = r->req;
    r->req_pending = 0;
    return 1;
}

uint32_t sq_ring_reserve(sqlite3 *db, sqlite3_stmt **st, const sq_ring_req *req)
{
    if (!*st && prep(db, RESERVE_SQL, st) != SQLITE_OK) return 0;
    unsigned char *cell = calloc(1, req->size);
    if (!cell) return 0;
    memcpy(cell + LEN_BYTES, SQ_RING_RESERVED, SQ_RING_RESERVED_LEN); /* length 0 before it */
    uint32_t mask = 0;
    int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = insert_reserved(db, *st, req, cell, &mask);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        mask = 0;
    }
    free(cell);
    return mask;
}

void sq_ring_note_reserved(sq_ring *r, const sq_ring_req *req, uint32_t made)
{
    for (size_t i = 0; i < SQ_RING_CACHE; i++) {
        struct sq_ring_ns *c = &r->cache[i];
        if (!c->ns || c->id != req->id) continue;
        note_made(c, req, made);
    }
}
