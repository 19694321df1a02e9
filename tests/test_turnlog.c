/* test_turnlog.c: the binary item form of turn-log records and snapshot
 * rows (engine/turnlog.c): what is written reads back the same at every
 * edge of every range, the version 1 form of earlier releases still reads,
 * records' version 3 form reads back against any record turn and time,
 * and bytes out of range or cut short are refused with the field named. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/turnlog.h"

static item *new_item(int history_length)
{
    item *it = calloc(1, sizeof *it + (size_t)history_length * sizeof it->history[0]);
    cr_assert_not_null(it);
    return it;
}

static void items_free(item *a, item *b)
{
    free(a->anchor_reason);
    free(b->anchor_reason);
    free(a);
    free(b);
}

static void same_item(const item *a, const item *b, const char *what)
{
    cr_assert_eq(a->category, b->category, "%s: category", what);
    cr_assert_eq(a->tier, b->tier, "%s: tier", what);
    cr_assert_eq(a->anchored, b->anchored, "%s: anchored", what);
    cr_assert_eq(a->pruned, b->pruned, "%s: pruned", what);
    cr_assert_eq(a->mention_count, b->mention_count, "%s: mentions", what);
    cr_assert_eq(a->reference_count, b->reference_count, "%s: references", what);
    cr_assert_eq(a->first_seen_turn, b->first_seen_turn, "%s: first seen", what);
    cr_assert_eq(a->last_mention_turn, b->last_mention_turn, "%s: last mention", what);
    cr_assert_eq(a->last_reference_turn, b->last_reference_turn, "%s: last reference", what);
    cr_assert_eq(a->pruned_turn, b->pruned_turn, "%s: pruned turn", what);
    cr_assert_eq(a->anchor_at_ms, b->anchor_at_ms, "%s: anchor time", what);
    cr_assert_eq(a->created_at_ms, b->created_at_ms, "%s: created", what);
    cr_assert_str_eq(a->anchor_reason ? a->anchor_reason : "", b->anchor_reason ? b->anchor_reason : "",
                     "%s: reason", what);
    int64_t ha[ITEM_HISTORY_MAX], hb[ITEM_HISTORY_MAX];
    size_t na = tracker_history(a, ha, ITEM_HISTORY_MAX), nb = tracker_history(b, hb, ITEM_HISTORY_MAX);
    cr_assert_eq(na, nb, "%s: history length", what);
    for (size_t i = 0; i < na; i++) cr_assert_eq(ha[i], hb[i], "%s: history[%zu]", what, i);
}

static int64_t pick(int64_t lo, int64_t hi)
{
    switch (rand() % 4) {
    case 0: return lo;
    case 1: return hi;
    case 2: return lo + rand() % 200;
    default: return lo + (int64_t)(((uint64_t)rand() << 31 ^ (uint64_t)rand()) % (uint64_t)(hi - lo + 1));
    }
}

/* An item with every field at a random value of its range, edges often;
 * its history pushed through t in any order. */
static item *random_item(tracker *t)
{
    const int64_t T = TRACKER_TURN_MAX, C = TRACKER_COUNT_MAX;
    item *a = new_item(ITEM_HISTORY_MAX);
    a->category = (int8_t)(rand() % CAT__COUNT);
    a->tier = (int8_t)(rand() % TIER__COUNT);
    a->anchored = rand() % 2;
    a->pruned = rand() % 2;
    a->mention_count = pick(0, C);
    a->reference_count = pick(0, C);
    a->first_seen_turn = pick(0, T);
    a->last_mention_turn = pick(0, T);
    a->last_reference_turn = pick(-1, T);
    a->pruned_turn = pick(-1, T);
    a->anchor_at_ms = pick(0, C);
    a->created_at_ms = pick(0, C);
    if (rand() % 3 == 0) {
        size_t n = (size_t)(rand() % 300);
        a->anchor_reason = malloc(n + 1);
        for (size_t i = 0; i < n; i++) a->anchor_reason[i] = (char)('a' + rand() % 26);
        a->anchor_reason[n] = '\0';
    }
    int nh = rand() % (ITEM_HISTORY_MAX + 1);
    for (int i = 0; i < nh; i++) tracker_history_push(t, a, pick(0, T));
    return a;
}

Test(turnlog, items_read_back_as_written_at_every_range_edge)
{
    tracker t;
    tracker_init(&t, ITEM_HISTORY_MAX);
    srand(3);
    for (int round = 0; round < 3000; round++) {
        item *a = random_item(&t), *b = new_item(ITEM_HISTORY_MAX);
        buf out;
        buf_init(&out);
        tl_put_row(&out, a);
        cr_assert(!buf_failed(&out));
        cr_assert_eq((unsigned char)out.p[0], TL_ROW_V2);
        tl_reader r;
        cr_assert_eq(tl_row_reader(&r, out.p, out.len), 0);
        cr_assert_eq(tl_get_item(&r, &t, b), 0, "round %d: %s", round, r.what ? r.what : "?");
        cr_assert(r.p == r.end, "round %d: bytes left over", round);
        char what[32];
        snprintf(what, sizeof what, "round %d", round);
        same_item(a, b, what);
        buf_free(&out);
        items_free(a, b);
    }
    tracker_free(&t);
}

static void put_le(buf *b, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) buf_putc(b, (char)(v >> (8 * i)));
}

/* A snapshot row as version 1 wrote it (fixed-width little-endian). */
static void v1_row(buf *b, const item *a, const int32_t *hist, int nh)
{
    buf_putc(b, TL_ROW_V1);
    buf_putc(b, (char)a->category);
    buf_putc(b, (char)a->tier);
    buf_putc(b, (char)((a->anchored ? 1 : 0) | (a->pruned ? 2 : 0)));
    buf_putc(b, (char)nh);
    const int64_t f[8] = {a->mention_count,     a->reference_count, a->first_seen_turn,
                          a->last_mention_turn, a->last_reference_turn, a->pruned_turn,
                          a->anchor_at_ms,      a->created_at_ms};
    for (int i = 0; i < 8; i++) put_le(b, (uint64_t)f[i], 8);
    size_t rn = a->anchor_reason ? strlen(a->anchor_reason) : 0;
    put_le(b, rn, 4);
    buf_append(b, a->anchor_reason ? a->anchor_reason : "", rn);
    for (int i = 0; i < nh; i++) put_le(b, (uint32_t)hist[i], 4);
}

Test(turnlog, version_1_rows_still_read)
{
    tracker t;
    tracker_init(&t, 8);
    item *a = new_item(8), *b = new_item(8);
    a->category = CAT_FILE;
    a->tier = 1;
    a->anchored = 1;
    a->mention_count = 123456789012LL;
    a->reference_count = 7;
    a->first_seen_turn = 3;
    a->last_mention_turn = 40;
    a->last_reference_turn = -1;
    a->pruned_turn = -1;
    a->anchor_at_ms = 1732000000000LL;
    a->created_at_ms = 1731000000000LL;
    a->anchor_reason = strdup("pinned by the user");
    const int32_t hist[] = {5, 9, 9, 40};
    for (int i = 0; i < 4; i++) tracker_history_push(&t, a, hist[i]);
    buf row;
    buf_init(&row);
    v1_row(&row, a, hist, 4);
    tl_reader r;
    cr_assert_eq(tl_row_reader(&r, row.p, row.len), 0);
    cr_assert_eq(r.form, 1);
    cr_assert_eq(tl_get_item(&r, &t, b), 0, "%s", r.what ? r.what : "?");
    cr_assert(r.p == r.end);
    same_item(a, b, "v1 row");
    /* the same item now takes far fewer bytes */
    buf v2;
    buf_init(&v2);
    tl_put_row(&v2, a);
    cr_assert_lt(v2.len * 2, row.len, "v2 %zu bytes, v1 %zu", v2.len, row.len);
    buf_free(&v2);
    buf_free(&row);
    items_free(a, b);
    tracker_free(&t);
}

/* Decodes an item with r; returns the field the reader refused, NULL
 * when it read the item and nothing is left. */
static const char *refusal(tl_reader *r)
{
    static tracker t;
    static int ready;
    if (!ready) tracker_init(&t, ITEM_HISTORY_MAX), ready = 1;
    item *it = new_item(ITEM_HISTORY_MAX);
    int rc = tl_get_item(r, &t, it);
    free(it->anchor_reason);
    free(it);
    if (rc == 0) return r->p == r->end ? NULL : "trailing";
    return r->what ? r->what : "?";
}

/* Decodes bytes as a version 2 row. */
static const char *refused(const unsigned char *bytes, size_t n)
{
    tl_reader r;
    cr_assert_eq(tl_row_reader(&r, (const char *)bytes, n), 0);
    return refusal(&r);
}

Test(turnlog, out_of_range_or_cut_short_is_refused_by_name)
{
    /* header: row v2, category 0, tier 0, flags 0, 1 history entry */
    const unsigned char ok[] = {TL_ROW_V2, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    cr_assert_null(refused(ok, sizeof ok));
    /* a count one past TRACKER_COUNT_MAX */
    unsigned char big[32] = {TL_ROW_V2, 0, 0, 0, 0};
    size_t n = 5;
    uint64_t v = (uint64_t)TRACKER_COUNT_MAX + 1;
    for (; v >= 0x80; v >>= 7) big[n++] = (unsigned char)(v | 0x80);
    big[n++] = (unsigned char)v;
    cr_assert_str_eq(refused(big, n), "mentionCount");
    /* a varint longer than 64 bits */
    unsigned char longvar[20] = {TL_ROW_V2, 0, 0, 0, 0};
    for (int i = 5; i < 16; i++) longvar[i] = 0xff;
    longvar[16] = 0x01;
    cr_assert_str_eq(refused(longvar, 17), "mentionCount");
    /* cut short inside the numbers, and inside the reason */
    cr_assert_str_eq(refused(ok, 8), "lastMentionTurn");
    const unsigned char reason[] = {TL_ROW_V2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, 'a', 'b'};
    cr_assert_str_eq(refused(reason, sizeof reason), "anchorReason");
    /* a history difference that goes below turn 0 */
    const unsigned char neg[] = {TL_ROW_V2, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    cr_assert_str_eq(refused(neg, sizeof neg), "history");
    /* a category past the last */
    const unsigned char cat[] = {TL_ROW_V2, CAT__COUNT, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    cr_assert_str_eq(refused(cat, sizeof cat), "category");
}

Test(turnlog, record_versions_1_to_3_read_and_others_are_refused)
{
    for (int v = 0; v <= 4; v++) {
        unsigned char h[28] = {TL_REC_MAGIC, (unsigned char)v, 0, 0, 1};
        tl_reader r = tl_reader_over(h, sizeof h, 0);
        tl_header hd;
        int rc = tl_get_header(&r, &hd);
        if (v >= 1 && v <= 3) {
            cr_assert_eq(rc, 0, "version %d", v);
            cr_assert_eq(r.form, v);
        } else {
            cr_assert_neq(rc, 0, "version %d read", v);
        }
    }
}

/* A record of one item (version 3): header, id, form against the
 * header's turn and time; read back through the header. */
static void rec_round_trip(tracker *t, const item *a, const tl_header *h, const char *what)
{
    buf out;
    buf_init(&out);
    tl_put_header(&out, h);
    tl_put_rec_item(&out, a, h);
    cr_assert(!buf_failed(&out));
    tl_reader r = tl_reader_over(out.p, out.len, 0);
    tl_header hd;
    cr_assert_eq(tl_get_header(&r, &hd), 0, "%s: %s", what, r.what ? r.what : "?");
    cr_assert_eq(r.form, 3);
    const char *id;
    uint32_t idn;
    cr_assert_eq(tl_get_id(&r, &id, &idn, "id"), 0, "%s: id", what);
    cr_assert_eq(idn, strlen(a->id));
    cr_assert_eq(memcmp(id, a->id, idn), 0);
    item *b = new_item(ITEM_HISTORY_MAX);
    cr_assert_eq(tl_get_item(&r, t, b), 0, "%s: %s", what, r.what ? r.what : "?");
    cr_assert(r.p == r.end, "%s: bytes left over", what);
    same_item(a, b, what);
    free(b->anchor_reason);
    free(b);
    buf_free(&out);
}

/* Version 3 stores turns and times against the record's: every value a
 * field may hold reads back, whatever the record's turn and time, the
 * ones far from them too. */
Test(turnlog, version_3_items_read_back_against_any_record_turn)
{
    tracker t;
    tracker_init(&t, ITEM_HISTORY_MAX);
    const int64_t T = TRACKER_TURN_MAX, C = TRACKER_COUNT_MAX;
    char id[] = "file:src/auth/session.ts";
    srand(5);
    for (int round = 0; round < 3000; round++) {
        item *a = random_item(&t);
        a->id = id;
        tl_header h = {0, 1 + (uint64_t)(rand() % 1000), pick(0, T), pick(0, C)};
        char what[32];
        snprintf(what, sizeof what, "round %d", round);
        rec_round_trip(&t, a, &h, what);
        free(a->anchor_reason);
        free(a);
    }
    tracker_free(&t);
}

/* The point of version 3: an item of this turn takes a byte per turn
 * field, and its creation time a few, where version 2 took more. */
Test(turnlog, version_3_items_of_the_current_turn_are_smaller)
{
    tracker t;
    tracker_init(&t, 8);
    item *a = new_item(8);
    char id[] = "keyword:word0012";
    a->id = id;
    a->mention_count = 3;
    a->reference_count = 40;
    a->first_seen_turn = 1200;
    a->last_mention_turn = 1990;
    a->last_reference_turn = 2000;
    a->pruned_turn = -1;
    a->created_at_ms = 1764000000000LL;
    for (int i = 0; i < 8; i++) tracker_history_push(&t, a, 1990 + i);
    tl_header h = {0, 9, 2000, 1764000900000LL};
    buf v2, v3;
    buf_init(&v2);
    buf_init(&v3);
    tl_put_bytes(&v2, id, strlen(id));
    tl_put_item(&v2, a);
    tl_put_rec_item(&v3, a, &h);
    /* saved: 3 in the id's length, 2 in the byte that packs category, tier
     * and flags, 3 in the creation time, 1 each in the last mention, the
     * last reference and the newest history entry */
    cr_assert_leq(v3.len + 11, v2.len, "version 3 %zu bytes, version 2 %zu", v3.len, v2.len);
    rec_round_trip(&t, a, &h, "current turn");
    /* an item imported without a creation time: one byte for it, where
     * its difference from the record's time would take six (8 saved: all
     * the above but the creation time's 3) */
    a->created_at_ms = 0;
    buf_reset(&v3);
    tl_put_rec_item(&v3, a, &h);
    buf_reset(&v2);
    tl_put_bytes(&v2, id, strlen(id));
    tl_put_item(&v2, a);
    cr_assert_leq(v3.len + 8, v2.len, "version 3 %zu bytes, version 2 %zu", v3.len, v2.len);
    rec_round_trip(&t, a, &h, "no creation time");
    buf_free(&v2);
    buf_free(&v3);
    free(a);
    tracker_free(&t);
}

/* Decodes bytes as a version 3 item against turn 10 and time 1000. */
static const char *refused_v3(const unsigned char *bytes, size_t n)
{
    tl_reader r = tl_reader_over(bytes, n, 3);
    r.turn = 10;
    r.persisted = 1000;
    return refusal(&r);
}

Test(turnlog, version_3_out_of_range_is_refused_by_name)
{
    /* category, tier and flags 0 in one byte, one history entry; counts
     * 1, 0; first seen at turn 0, last mention this turn; no reference,
     * not pruned, not anchored; no creation time; no reason; the history
     * entry: this turn */
    const unsigned char ok[] = {0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    cr_assert_null(refused_v3(ok, sizeof ok));
    /* the packed byte: category 6 (past the last), tier 3 and flags 3 (the
     * last of each), a bit past the flags */
    const unsigned char cat[] = {6, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    cr_assert_str_eq(refused_v3(cat, sizeof cat), "category");
    const unsigned char last[] = {5 | 3 << 3 | 3 << 5, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    cr_assert_null(refused_v3(last, sizeof last));
    const unsigned char bit7[] = {0x80, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    cr_assert_str_eq(refused_v3(bit7, sizeof bit7), "flags");
    /* last mention 11 turns before turn 10 (zigzag 22) */
    const unsigned char before0[] = {0, 0, 1, 0, 0, 22, 0, 0, 0, 0, 0};
    cr_assert_str_eq(refused_v3(before0, sizeof before0), "lastMentionTurn");
    /* last reference: 1 + zigzag of 12 before turn 10 */
    const unsigned char ref[] = {0, 0, 1, 0, 0, 0, 25, 0, 0, 0, 0};
    cr_assert_str_eq(refused_v3(ref, sizeof ref), "lastReferenceTurn");
    /* created 1001 ms before time 1000 (1 + zigzag 2002 = 0xd3 0x0f) */
    const unsigned char created[] = {0, 0, 1, 0, 0, 0, 0, 0, 0, 0xd3, 0x0f, 0};
    cr_assert_str_eq(refused_v3(created, sizeof created), "createdAt");
    /* a history entry 11 turns before turn 10 */
    const unsigned char hist[] = {0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 22};
    cr_assert_str_eq(refused_v3(hist, sizeof hist), "history");
    /* a difference no two stored numbers can have */
    unsigned char huge[24] = {0, 0, 1, 0, 0};
    size_t n = 5;
    for (int i = 0; i < 9; i++) huge[n++] = 0xff;
    huge[n++] = 0x01;
    cr_assert_str_eq(refused_v3(huge, n), "lastMentionTurn");
    /* cut short in its first two bytes */
    cr_assert_str_eq(refused_v3(ok, 1), "item");
}

/* A record's pruned section: an id and its pruned turn as a difference
 * from the record's turn; what is out of range is refused by name. */
Test(turnlog, pruned_entries_round_trip_and_bad_ones_are_refused)
{
    item *it = new_item(4);
    char id[] = "file:src/a.ts";
    it->id = id;
    buf b;
    buf_init(&b);
    it->pruned_turn = 7;
    tl_put_pruned(&b, it, 7);
    it->pruned_turn = 0;
    tl_put_pruned(&b, it, 300); /* a difference of two varint bytes */
    cr_assert(!buf_failed(&b));
    tl_reader r = tl_reader_over(b.p, b.len, 3);
    const char *s;
    uint32_t n;
    int64_t turn = -1;
    cr_assert_eq(tl_get_pruned(&r, &s, &n, 7, &turn), 0, "%s", r.what ? r.what : "?");
    cr_assert_eq(n, strlen(id));
    cr_assert_eq(memcmp(s, id, n), 0);
    cr_assert_eq(turn, 7);
    cr_assert_eq(tl_get_pruned(&r, &s, &n, 300, &turn), 0, "%s", r.what ? r.what : "?");
    cr_assert_eq(turn, 0);
    cr_assert(r.p == r.end);
    /* the same bytes read against an earlier record turn: before turn 0 */
    r = tl_reader_over(b.p, b.len, 3);
    cr_assert_eq(tl_get_pruned(&r, &s, &n, 7, &turn), 0);
    cr_assert_neq(tl_get_pruned(&r, &s, &n, 299, &turn), 0);
    cr_assert_str_eq(r.what, "prunedTurn");
    /* cut short: in the id (its length is one varint byte), then before the turn */
    r = tl_reader_over(b.p, 3, 3);
    cr_assert_neq(tl_get_pruned(&r, &s, &n, 7, &turn), 0);
    cr_assert_str_eq(r.what, "pruned id");
    r = tl_reader_over(b.p, 1 + strlen(id), 3);
    cr_assert_neq(tl_get_pruned(&r, &s, &n, 7, &turn), 0);
    cr_assert_str_eq(r.what, "prunedTurn");
    /* an empty id, and one holding a NUL */
    const unsigned char empty[] = {0, 0};
    r = tl_reader_over(empty, sizeof empty, 3);
    cr_assert_neq(tl_get_pruned(&r, &s, &n, 7, &turn), 0);
    cr_assert_str_eq(r.what, "pruned id");
    const unsigned char nul[] = {2, 'a', 0, 0};
    r = tl_reader_over(nul, sizeof nul, 3);
    cr_assert_neq(tl_get_pruned(&r, &s, &n, 7, &turn), 0);
    cr_assert_str_eq(r.what, "pruned id");
    /* version 2 wrote the id's length as a u32: still read */
    const unsigned char v2[] = {13, 0, 0, 0, 'f', 'i', 'l', 'e', ':', 's', 'r', 'c', '/', 'a', '.', 't', 's', 0};
    r = tl_reader_over(v2, sizeof v2, 2);
    cr_assert_eq(tl_get_pruned(&r, &s, &n, 7, &turn), 0, "%s", r.what ? r.what : "?");
    cr_assert_eq(n, strlen(id));
    cr_assert_eq(turn, 7);
    cr_assert(r.p == r.end);
    buf_free(&b);
    free(it);
}

/* A record's touched section: its turn as a difference from the
 * record's, then per id whether it was mentioned and referenced in that
 * turn and its counts; what is out of range is refused by name. */
Test(turnlog, touched_entries_round_trip_and_bad_ones_are_refused)
{
    item *it = new_item(4);
    char id[] = "ClaraCore";
    it->id = id;
    buf b;
    buf_init(&b);
    tl_put_var(&b, 300); /* the section's turn: 300 before the record's */
    it->mention_count = 3;
    it->reference_count = 0;
    it->last_mention_turn = 9;
    it->last_reference_turn = -1;
    tl_put_touched(&b, it, 9);
    it->mention_count = TRACKER_COUNT_MAX;
    it->reference_count = 200;
    it->last_reference_turn = 9;
    it->last_mention_turn = 4;
    tl_put_touched(&b, it, 9);
    cr_assert(!buf_failed(&b));
    tl_reader r = tl_reader_over(b.p, b.len, 3);
    const char *s;
    uint32_t n;
    unsigned bits;
    int64_t turn, m, k;
    cr_assert_eq(tl_get_turn_back(&r, 309, &turn, "touchTurn"), 0);
    cr_assert_eq(turn, 9);
    cr_assert_eq(tl_get_touched(&r, &s, &n, &bits, &m, &k), 0, "%s", r.what ? r.what : "?");
    cr_assert(n == strlen(id) && memcmp(s, id, n) == 0);
    cr_assert(bits == 1 && m == 3 && k == 0, "bits %u, counts %lld %lld", bits, (long long)m, (long long)k);
    cr_assert_eq(tl_get_touched(&r, &s, &n, &bits, &m, &k), 0, "%s", r.what ? r.what : "?");
    cr_assert(bits == 2 && m == TRACKER_COUNT_MAX && k == 200);
    cr_assert(r.p == r.end);
    /* the section's turn before turn 0 */
    r = tl_reader_over(b.p, b.len, 3);
    cr_assert_neq(tl_get_turn_back(&r, 299, &turn, "touchTurn"), 0);
    cr_assert_str_eq(r.what, "touchTurn");
    /* cut short after the id, and in the counts */
    size_t first = 2; /* the section's turn (two varint bytes) */
    r = tl_reader_over(b.p + first, 1 + strlen(id), 3);
    cr_assert_neq(tl_get_touched(&r, &s, &n, &bits, &m, &k), 0);
    cr_assert_str_eq(r.what, "touched");
    r = tl_reader_over(b.p + first, 2 + strlen(id), 3);
    cr_assert_neq(tl_get_touched(&r, &s, &n, &bits, &m, &k), 0);
    cr_assert_str_eq(r.what, "mentionCount");
    /* unknown bits, counts past the limit, an empty id */
    const unsigned char badbits[] = {1, 'a', 4, 0, 0};
    r = tl_reader_over(badbits, sizeof badbits, 3);
    cr_assert_neq(tl_get_touched(&r, &s, &n, &bits, &m, &k), 0);
    cr_assert_str_eq(r.what, "touched");
    buf over;
    buf_init(&over);
    const unsigned char head[] = {1, 'a', 1};
    buf_append(&over, (const char *)head, sizeof head);
    tl_put_var(&over, (uint64_t)TRACKER_COUNT_MAX + 1);
    tl_put_var(&over, 0);
    r = tl_reader_over(over.p, over.len, 3);
    cr_assert_neq(tl_get_touched(&r, &s, &n, &bits, &m, &k), 0);
    cr_assert_str_eq(r.what, "mentionCount");
    buf_reset(&over);
    buf_append(&over, (const char *)head, sizeof head);
    tl_put_var(&over, 0);
    tl_put_var(&over, (uint64_t)TRACKER_COUNT_MAX + 1);
    r = tl_reader_over(over.p, over.len, 3);
    cr_assert_neq(tl_get_touched(&r, &s, &n, &bits, &m, &k), 0);
    cr_assert_str_eq(r.what, "referenceCount");
    const unsigned char empty[] = {0, 1, 0, 0};
    r = tl_reader_over(empty, sizeof empty, 3);
    cr_assert_neq(tl_get_touched(&r, &s, &n, &bits, &m, &k), 0);
    cr_assert_str_eq(r.what, "touched id");
    buf_free(&over);
    buf_free(&b);
    free(it);
}

Test(turnlog, a_header_with_the_pruned_touched_and_kept_flags_reads_and_unknown_flags_do_not)
{
    for (unsigned f = 0; f <= 32; f++) {
        unsigned char h[28] = {TL_REC_MAGIC, TL_REC_VERSION, (unsigned char)f, 0, 1};
        tl_reader r = tl_reader_over(h, sizeof h, 0);
        tl_header hd;
        int rc = tl_get_header(&r, &hd);
        if (f <= (TL_REC_META | TL_REC_PRUNED | TL_REC_TOUCHED | TL_REC_KEPT)) {
            cr_assert_eq(rc, 0, "flags %u", f);
            cr_assert_eq(hd.flags, f);
        } else {
            cr_assert_neq(rc, 0, "flags %u read", f);
        }
    }
}
