/* turnlog.h: the binary forms of a session's stored state (persist.c).
 *
 * A turn is persisted as one record of its deltas, the "turn log"; every
 * storage.snapshotEvery records (and at session end) the changed items are
 * folded into one row per item.  Both use the item form below, which costs
 * a few stores to write and a few loads to read (the JSON rows it replaces
 * cost ~20,000 instructions per item to write and ~7 µs to read back).
 *
 * Item form, version 2 (written; every number range-checked when read):
 *   u8 category, u8 tier, u8 flags (1 anchored, 2 pruned), u8 history length
 *   varints (unsigned LEB128) of mention count, reference count, first seen,
 *       last mention, last reference + 1, pruned turn + 1, anchor time,
 *       creation time
 *   varint anchor reason length, reason bytes (no NUL)
 *   history turns, oldest first: each the zigzag varint of its difference
 *       from the one before (the first from 0)
 * A dense turn's record is then about a third of version 1's, and SQLite
 * writes a record of a page or two instead of a chain of overflow pages.
 * Item form, version 1 (read): the same bytes, with the eight numbers as
 * i64 little-endian, the reason length as u32 and the history as i32.
 * Item form, version 3 (records only; snapshot rows stay in form 2): as
 *   form 2, but category, tier and flags packed in one byte (bits 0-2,
 *   3-4, 5-6; bit 7 clear) before the history length, and the turns and
 *   times that are usually recent each stored as the zigzag varint of the
 *   record's turn (or time) minus it:
 *   last mention; last reference and pruned turn 0 for -1, else 1 + that;
 *   anchor and creation times 0 for 0, else 1 + that (against the
 *   record's time); and the history newest first, each the zigzag of the
 *   turn after it minus it (the first's "after" is the record's turn).
 *   First seen stays as in form 2 (often long ago).  A turn's items then
 *   take a byte per recent turn where form 2 took two or three.
 * Snapshot row "i:<id>": the byte TL_ROW_V2 (or TL_ROW_V1), then the item
 * form of that version.  A row that starts with '{' is the JSON form of
 * earlier versions (still read).
 *
 * Record "l:<slot>" (store_slot_key; slot = seq mod storage.snapshotEvery):
 *   u8 'L', u8 version (3; 1 and 2 read: their items in form 1 and 2),
 *   u8 flags (1: meta JSON follows), u8 0
 *   u64 seq, i64 current turn, i64 last persist time (ms)
 *   [u32 length, the meta JSON as the "meta" row holds it]
 *   [flag 8: u32 kept ids, the varint of the record's turn minus the
 *    prune's turn, then each: id length, id]
 *   u32 items, each: id length, id, item form of the record's version
 *   u32 deleted ids, each: id length, id
 *   [flag 2: u32 pruned ids, each: id length, id, varint of the record's
 *    turn minus the item's pruned turn]
 * An id length is a varint in version 3, a u32 before (tl_get_id).  The
 * version 3 form and lengths take the dense benchmark's record of 88
 * items from 4.3 KB to 3.5 KB, under a 4 KiB page: nine of its commits
 * in ten write one WAL frame instead of two.
 * An item whose only change since the last record is that a compaction
 * pruned it is written in the pruned section: a large session's compaction
 * prunes most of its items, and their full forms were most of its cost.
 * Builds before the section refuse a record with flag 2 ("header").
 * A compaction that prunes most of a large session's items and keeps a
 * few (tracker_bulk_begin) writes the kept ones in the kept section
 * instead: every item the session holds before the record that is neither
 * pruned nor kept is pruned at the prune's turn.  It is applied before the
 * record's other sections, which write the items changed otherwise as
 * they are (an item created since the last record, pruned or not, is
 * whole in it).  Replayed onto rows a fold wrote after the record, it may
 * prune an item created or revived after it: the record that did so sets
 * it again, as for the other sections.  Builds before the section refuse
 * flag 8 ("header").
 *   [flag 4: u32 touched ids, the varint of the record's turn minus the
 *    turn they were touched in, then each: id length, id, u8 (1: mentioned,
 *    2: referenced in that turn), varints of its mention and reference
 *    counts]
 * An item whose only changes since the last record are a mention or a
 * reference in one turn (ITEM_DIRTY_TOUCHED: a turn's usual item) is
 * written in the touched section, its counts and no more: about a tenth
 * of its whole form's cost.  Its entry is applied as set values, so that
 * replaying it onto a row the fold wrote after it (a crash between a
 * fold's chunks) ends where the session was, as whole forms do: the
 * counts only grow (the larger is kept), the history takes the turn only
 * when the mention count grows (a mention at the count's limit is written
 * whole), and the turns it sets are set again by any later record that
 * changed them.  Builds before the section refuse flag 4 ("header").
 * Records at or below the snapshot's seq are stale slots and ignored.  A
 * new session's first record holds every item, and the meta row written
 * with it is that of an empty snapshot (seq 0).
 */
#ifndef ENGINE_TURNLOG_H
#define ENGINE_TURNLOG_H

#include <stddef.h>
#include <stdint.h>

#include "../tracker/tracker.h"
#include "../util/buf.h"

#define TL_ROW_V1 0x01
#define TL_ROW_V2 0x02
#define TL_REC_MAGIC 'L'
#define TL_REC_VERSION 3
#define TL_REC_META 1
#define TL_REC_PRUNED 2
#define TL_REC_TOUCHED 4
#define TL_REC_KEPT 8

/* Appends the item form (version 2) of it. */
void tl_put_item(buf *out, const item *it);
/* Appends a snapshot row: TL_ROW_V2 + the item form. */
void tl_put_row(buf *out, const item *it);

/* A reader over stored bytes; every read checks the bounds. */
typedef struct tl_reader {
    const unsigned char *p, *end;
    const char *what; /* the first field found bad, for the message */
    int form;         /* the item form its items are in: 1, 2 or 3 (0 reads as 2) */
    int64_t turn, persisted; /* form 3's reference turn and time: its record's (tl_get_header) */
} tl_reader;

/* A reader over the n bytes at p whose items are in the given form (0
 * until a record's header or a row's version byte says). */
static inline tl_reader tl_reader_over(const void *p, size_t n, int form)
{
    const unsigned char *b = p;
    return (tl_reader){b, b + n, NULL, form, 0, 0};
}

/* Starts a reader over a snapshot row (its version byte included): 0, or
 * -1 when the row is not a binary one. */
int tl_row_reader(tl_reader *r, const char *val, size_t len);

/* Reads an item form into it (its id and hash linkage untouched; history
 * pushed through t).  0, or -1 with r->what naming the bad field. */
int tl_get_item(tl_reader *r, tracker *t, item *it);
/* Reads a u32 length and that many bytes: a pointer into the record. */
int tl_get_bytes(tl_reader *r, const char **s, uint32_t *n, const char *what);
/* Reads a record's id: its length as the reader's form writes it (u32 up
 * to form 2, a varint in form 3), then its bytes. */
int tl_get_id(tl_reader *r, const char **s, uint32_t *n, const char *what);
int tl_get_u32(tl_reader *r, uint32_t *v, const char *what);

/* Appends a pruned-section entry (version 3): its id and turn - its
 * pruned turn. */
void tl_put_pruned(buf *out, const item *it, int64_t turn);
/* Reads one: the id (a pointer into the record) and the pruned turn,
 * checked to be in 0..turn.  0, or -1 with r->what set. */
int tl_get_pruned(tl_reader *r, const char **id, uint32_t *idn, int64_t turn, int64_t *pruned_turn);

/* Appends a touched-section entry: its id, whether it was mentioned (1)
 * and referenced (2) in the touch turn, and its two counts. */
void tl_put_touched(buf *out, const item *it, int64_t touch_turn);
/* Appends an unsigned varint (the touched and kept sections' turns). */
void tl_put_var(buf *out, uint64_t v);
/* Reads a section's turn, written as the record's turn minus it (a
 * varint), checked to be in 0..turn.  0, or -1 with r->what set to what. */
int tl_get_turn_back(tl_reader *r, int64_t turn, int64_t *v, const char *what);
/* Reads one entry: the id (a pointer into the record), its bits (1, 2)
 * and counts, each range-checked.  0, or -1 with r->what set. */
int tl_get_touched(tl_reader *r, const char **id, uint32_t *idn, unsigned *bits, int64_t *mentions,
                   int64_t *references);

/* Applies a touched entry read for it in a section of the given turn:
 * its counts (the larger of each), the turn as its last mention (bits 1)
 * and last reference (2) turn, a history entry of the turn when its
 * mention count grew, and not pruned (turnlog.h's comment above says why
 * set values). */
void tl_apply_touched(tracker *t, item *it, unsigned bits, int64_t mentions, int64_t references, int64_t turn);

/* Record header. */
typedef struct tl_header {
    unsigned flags;
    uint64_t seq;
    int64_t turn, persisted;
} tl_header;

void tl_put_header(buf *out, const tl_header *h);
/* Appends a record's item (version 3): its id and its form against the
 * record's turn and time. */
void tl_put_rec_item(buf *out, const item *it, const tl_header *rec);
/* Appends an id as version 3 records hold it (a varint length first). */
void tl_put_id(buf *out, const char *s, size_t n);
int tl_get_header(tl_reader *r, tl_header *h);
void tl_put_u32(buf *out, uint32_t v);
/* Overwrites the u32 at out->p + at (a count or length written as 0
 * before what it counts was appended). */
void tl_patch_u32(buf *out, size_t at, uint32_t v);
void tl_put_bytes(buf *out, const char *s, size_t n);


#endif
