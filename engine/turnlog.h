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
 * Snapshot row "i:<id>": the byte TL_ROW_V2 (or TL_ROW_V1), then the item
 * form of that version.  A row that starts with '{' is the JSON form of
 * earlier versions (still read).
 *
 * Record "l:<slot>" (store_slot_key; slot = seq mod storage.snapshotEvery):
 *   u8 'L', u8 version (2; 1 read: its items in form 1), u8 flags (1: meta
 *   JSON follows), u8 0
 *   u64 seq, i64 current turn, i64 last persist time (ms)
 *   [u32 length, the meta JSON as the "meta" row holds it]
 *   u32 items, each: u32 id length, id, item form
 *   u32 deleted ids, each: u32 length, id
 *   [flag 2: u32 pruned ids, each: u32 length, id, varint of the record's
 *    turn minus the item's pruned turn]
 * An item whose only change since the last record is that a compaction
 * pruned it is written in the last section: a large session's compaction
 * prunes most of its items, and their full forms were most of its cost.
 * Builds before the section refuse a record with flag 2 ("header").
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
#define TL_REC_VERSION 2
#define TL_REC_META 1
#define TL_REC_PRUNED 2

/* Appends the item form of it. */
void tl_put_item(buf *out, const item *it);
/* Appends a snapshot row: TL_ROW_V2 + the item form. */
void tl_put_row(buf *out, const item *it);

/* A reader over stored bytes; every read checks the bounds. */
typedef struct tl_reader {
    const unsigned char *p, *end;
    const char *what; /* the first field found bad, for the message */
    int form;         /* the item form its items are in: 1 or 2 (0 reads as 2) */
} tl_reader;

/* Starts a reader over a snapshot row (its version byte included): 0, or
 * -1 when the row is not a binary one. */
int tl_row_reader(tl_reader *r, const char *val, size_t len);

/* Reads an item form into it (its id and hash linkage untouched; history
 * pushed through t).  0, or -1 with r->what naming the bad field. */
int tl_get_item(tl_reader *r, tracker *t, item *it);
/* Reads a u32 length and that many bytes: a pointer into the record. */
int tl_get_bytes(tl_reader *r, const char **s, uint32_t *n, const char *what);
int tl_get_u32(tl_reader *r, uint32_t *v, const char *what);

/* Appends a pruned-section entry: its id and turn - its pruned turn. */
void tl_put_pruned(buf *out, const item *it, int64_t turn);
/* Reads one: the id (a pointer into the record) and the pruned turn,
 * checked to be in 0..turn.  0, or -1 with r->what set. */
int tl_get_pruned(tl_reader *r, const char **id, uint32_t *idn, int64_t turn, int64_t *pruned_turn);

/* Record header. */
typedef struct tl_header {
    unsigned flags;
    uint64_t seq;
    int64_t turn, persisted;
} tl_header;

void tl_put_header(buf *out, const tl_header *h);
int tl_get_header(tl_reader *r, tl_header *h);
void tl_put_u32(buf *out, uint32_t v);
/* Overwrites the u32 at out->p + at (a count or length written as 0
 * before what it counts was appended). */
void tl_patch_u32(buf *out, size_t at, uint32_t v);
void tl_put_bytes(buf *out, const char *s, size_t n);


#endif
