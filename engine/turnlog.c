/* turnlog.c: the binary item form, snapshot rows and turn-log records
 * (layouts in turnlog.h).  Writers append fixed-width little-endian
 * fields; readers check every bound and range, since stored bytes come
 * from outside. */
#include <stdlib.h>
#include <string.h>

#include "turnlog.h"
#include "../util/endian.h"

#define TL_REASON_MAX (1u << 20)
#define TL_ITEM_FIXED (4 + 8 * 8) /* form 1 up to the reason */
#define TL_VAR_MAX 10             /* bytes of a 64-bit varint */
#define TL_HEADER (4 + 3 * 8)

/* Little-endian fields, one load or store each. */
static void put_u64(unsigned char *p, uint64_t v)
{
    v = util_le64(v);
    memcpy(p, &v, 8);
}

static uint64_t get_u64(const unsigned char *p) { return util_load_le64(p); }

static unsigned char *put_u32p(unsigned char *p, uint32_t v)
{
    v = util_le32(v);
    memcpy(p, &v, 4);
    return p + 4;
}

void tl_put_u32(buf *out, uint32_t v)
{
    unsigned char b[4];
    put_u32p(b, v);
    buf_append(out, (const char *)b, 4);
}

void tl_patch_u32(buf *out, size_t at, uint32_t v)
{
    if (!buf_failed(out) && at + 4 <= out->len) put_u32p((unsigned char *)out->p + at, v);
}

void tl_put_bytes(buf *out, const char *s, size_t n)
{
    tl_put_u32(out, (uint32_t)n);
    buf_append(out, s, n);
}

/* Written in place after one reserve: this runs for every item a turn
 * touches. */
static unsigned char *put_var(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* The range of each of the eight numbers; stored (forms 1, 2) as value - lo. */
static const int64_t field_lo[8] = {0, 0, 0, 0, -1, -1, 0, 0};
static const int64_t field_hi[8] = {TRACKER_COUNT_MAX, TRACKER_COUNT_MAX, TRACKER_TURN_MAX, TRACKER_TURN_MAX,
                                    TRACKER_TURN_MAX,  TRACKER_TURN_MAX,  TRACKER_COUNT_MAX, TRACKER_COUNT_MAX};

/* Form 3's recent turns and times: the zigzag of ref - v, where ref is
 * the record's turn or time, so the usual values (this turn, a few turns
 * ago, a creation this session) take a byte or three; an optional one
 * (v == none) is 0 and any other 1 + that. */
static uint64_t rel_opt(int64_t ref, int64_t v, int64_t none) { return v == none ? 0 : 1 + zigzag(ref - v); }

/* The item form of it: version 2, or version 3 against the record's turn
 * T and time P (rec). */
static void put_item_form(buf *out, const item *it, const tl_header *rec)
{
    int64_t h[ITEM_HISTORY_MAX];
    size_t nh = tracker_history(it, h, ITEM_HISTORY_MAX);
    size_t rn = it->anchor_reason ? strlen(it->anchor_reason) : 0;
    size_t most = 4 + 9 * TL_VAR_MAX + rn + TL_VAR_MAX * nh;
    if (buf_reserve(out, most) != 0) return;
    unsigned char *p = (unsigned char *)out->p + out->len, *start = p;
    unsigned flags = (it->anchored ? 1u : 0u) | (it->pruned ? 2u : 0u);
    if (rec) { /* category, tier and flags in one byte, then the history length */
        *p++ = (unsigned char)((unsigned)it->category | (unsigned)it->tier << 3 | flags << 5);
    } else {
        *p++ = (unsigned char)it->category;
        *p++ = (unsigned char)it->tier;
        *p++ = (unsigned char)flags;
    }
    *p++ = (unsigned char)nh;
    p = put_var(p, (uint64_t)it->mention_count);
    p = put_var(p, (uint64_t)it->reference_count);
    if (rec) {
        int64_t T = rec->turn, P = rec->persisted;
        p = put_var(p, (uint64_t)it->first_seen_turn); /* often long ago: as form 2 */
        p = put_var(p, zigzag(T - it->last_mention_turn));
        p = put_var(p, rel_opt(T, it->last_reference_turn, -1));
        p = put_var(p, rel_opt(T, it->pruned_turn, -1));
        p = put_var(p, rel_opt(P, it->anchor_at_ms, 0));
        p = put_var(p, rel_opt(P, it->created_at_ms, 0)); /* 0: imported without one */
    } else {
        const int64_t f[6] = {it->first_seen_turn,     it->last_mention_turn, it->last_reference_turn,
                              it->pruned_turn,         it->anchor_at_ms,      it->created_at_ms};
        for (int i = 0; i < 6; i++) p = put_var(p, (uint64_t)(f[i] - field_lo[i + 2]));
    }
    p = put_var(p, rn);
    if (rn) memcpy(p, it->anchor_reason, rn);
    p += rn;
    /* the history (h: newest first): form 3 newest first, each against the
     * one after it (the first against the record's turn); form 2 oldest
     * first, each against the one before it (the first against 0) */
    int64_t prev = rec ? rec->turn : 0;
    for (size_t i = 0; i < nh; i++) {
        int64_t v = rec ? h[i] : h[nh - 1 - i];
        p = put_var(p, zigzag(rec ? prev - v : v - prev));
        prev = v;
    }
    out->len += (size_t)(p - start);
    out->p[out->len] = '\0';
}

void tl_put_item(buf *out, const item *it) { put_item_form(out, it, NULL); }

void tl_put_id(buf *out, const char *s, size_t n)
{
    if (buf_reserve(out, TL_VAR_MAX + n) != 0) return;
    unsigned char *p = put_var((unsigned char *)out->p + out->len, n);
    memcpy(p, s, n);
    out->len = (size_t)(p + n - (unsigned char *)out->p);
    out->p[out->len] = '\0';
}

void tl_put_rec_item(buf *out, const item *it, const tl_header *rec)
{
    tl_put_id(out, it->id, tracker_id_len(it));
    put_item_form(out, it, rec);
}

void tl_put_row(buf *out, const item *it)
{
    buf_putc(out, TL_ROW_V2);
    tl_put_item(out, it);
}

int tl_row_reader(tl_reader *r, const char *val, size_t len)
{
    const unsigned char *v = (const unsigned char *)val;
    *r = tl_reader_over(v + 1, len ? len - 1 : 0, len ? (v[0] == TL_ROW_V2 ? 2 : v[0] == TL_ROW_V1 ? 1 : 0) : 0);
    return r->form ? 0 : -1;
}

static int need(tl_reader *r, size_t n, const char *what)
{
    if ((size_t)(r->end - r->p) >= n) return 0;
    r->what = what;
    return -1;
}

int tl_get_u32(tl_reader *r, uint32_t *v, const char *what)
{
    if (need(r, 4, what)) return -1;
    memcpy(v, r->p, 4);
    *v = util_le32(*v);
    r->p += 4;
    return 0;
}

int tl_get_bytes(tl_reader *r, const char **s, uint32_t *n, const char *what)
{
    if (tl_get_u32(r, n, what) || need(r, *n, what)) return -1;
    *s = (const char *)r->p;
    r->p += *n;
    return 0;
}

static int in_range(tl_reader *r, int64_t v, int64_t lo, int64_t hi, const char *what)
{
    if (v >= lo && v <= hi) return 0;
    r->what = what;
    return -1;
}

static int get_var_long(tl_reader *r, uint64_t *v, const char *what);

/* An unsigned LEB128 varint of at most 64 bits.  Most stored numbers are
 * under 128: one byte, read inline. */
static inline int get_var(tl_reader *r, uint64_t *v, const char *what)
{
    if (r->p < r->end && *r->p < 0x80) {
        *v = *r->p++;
        return 0;
    }
    return get_var_long(r, v, what);
}

static int get_var_long(tl_reader *r, uint64_t *v, const char *what)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) break;
        unsigned char b = *r->p++;
        if (shift == 63 && b > 1) break; /* more than 64 bits */
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    r->what = what;
    return -1;
}

int tl_get_id(tl_reader *r, const char **s, uint32_t *n, const char *what)
{
    if (r->form <= 2) return tl_get_bytes(r, s, n, what);
    uint64_t v;
    if (get_var(r, &v, what)) return -1;
    if (v > UINT32_MAX || need(r, (size_t)v, what)) return r->what = what, -1;
    *s = (const char *)r->p;
    *n = (uint32_t)v;
    r->p += v;
    return 0;
}

static const char *const field_names[8] = {"mentionCount",    "referenceCount",    "firstSeenTurn",
                                           "lastMentionTurn", "lastReferenceTurn", "prunedTurn",
                                           "anchorSetAt",     "createdAt"};

/* The signed difference a zigzag varint holds, or -1 when it is larger
 * than any two stored numbers can differ by. */
static int unzigzag(tl_reader *r, uint64_t z, int64_t *d, const char *what)
{
    uint64_t mag = z >> 1;
    if (mag > (uint64_t)1 << 54) return r->what = what, -1;
    *d = (z & 1) ? -(int64_t)mag - 1 : (int64_t)mag;
    return 0;
}

/* A form 3 turn or time: ref minus the stored difference, in lo..hi;
 * none when opt and the varint is 0 (rel_opt). */
static int get_rel(tl_reader *r, int64_t ref, int opt, int64_t none, int64_t lo, int64_t hi, int64_t *v,
                   const char *what)
{
    uint64_t z;
    int64_t d;
    if (get_var(r, &z, what)) return -1;
    if (opt && z == 0) {
        *v = none;
        return 0;
    }
    if (unzigzag(r, z - (opt ? 1 : 0), &d, what)) return -1;
    *v = ref - d;
    return in_range(r, *v, lo, hi, what);
}

/* The eight numbers of form 2 or 3. */
static int get_numbers(tl_reader *r, int64_t f[8])
{
    const int64_t T = TRACKER_TURN_MAX, C = TRACKER_COUNT_MAX;
    int n = r->form == 3 ? 3 : 8; /* form 3: the counts and first seen as they are, the rest relative */
    for (int i = 0; i < n; i++) {
        uint64_t v;
        if (get_var(r, &v, field_names[i])) return -1;
        if (v > (uint64_t)(field_hi[i] - field_lo[i])) return r->what = field_names[i], -1;
        f[i] = (int64_t)v + field_lo[i];
    }
    if (n == 8) return 0;
    const int64_t rt = r->turn, rp = r->persisted; /* the record's turn and time */
    if (get_rel(r, rt, 0, 0, 0, T, &f[3], field_names[3])) return -1;
    if (get_rel(r, rt, 1, -1, -1, T, &f[4], field_names[4])) return -1;
    if (get_rel(r, rt, 1, -1, -1, T, &f[5], field_names[5])) return -1;
    if (get_rel(r, rp, 1, 0, 0, C, &f[6], field_names[6])) return -1;
    return get_rel(r, rp, 1, 0, 0, C, &f[7], field_names[7]);
}

/* The eight numbers, the reason and the history (oldest first in hist) of
 * any form. */
static int get_fields(tl_reader *r, int64_t f[8], const char **reason, uint32_t *rn, unsigned nh,
                      int32_t hist[])
{
    const int64_t T = TRACKER_TURN_MAX;
    if (r->form == 1) {
        if (need(r, 8 * 8, "item")) return -1;
        for (int i = 0; i < 8; i++) f[i] = (int64_t)get_u64(r->p + 8 * i);
        r->p += 8 * 8;
        for (int i = 0; i < 8; i++)
            if (in_range(r, f[i], field_lo[i], field_hi[i], field_names[i])) return -1;
        if (tl_get_bytes(r, reason, rn, "anchorReason")) return -1;
        for (unsigned i = 0; i < nh; i++) {
            uint32_t v;
            if (tl_get_u32(r, &v, "history") || in_range(r, (int64_t)v, 0, T, "history")) return -1;
            hist[i] = (int32_t)v;
        }
        return 0;
    }
    if (get_numbers(r, f)) return -1;
    uint64_t n;
    if (get_var(r, &n, "anchorReason")) return -1;
    if (n > TL_REASON_MAX || need(r, (size_t)n, "anchorReason")) return r->what = "anchorReason", -1;
    *reason = (const char *)r->p;
    *rn = (uint32_t)n;
    r->p += n;
    /* form 2: oldest first from 0, each against the one before; form 3:
     * newest first from the record's turn, each against the one after.
     * A difference that takes the turn out of 0..T is refused. */
    int newest_first = r->form == 3;
    int64_t prev = newest_first ? r->turn : 0;
    for (unsigned i = 0; i < nh; i++) {
        uint64_t z;
        int64_t d;
        if (get_var(r, &z, "history") || unzigzag(r, z, &d, "history")) return -1;
        int64_t v = newest_first ? prev - d : prev + d;
        if (in_range(r, v, 0, T, "history")) return -1;
        prev = v;
        hist[newest_first ? nh - 1 - i : i] = (int32_t)v;
    }
    return 0;
}

int tl_get_item(tl_reader *r, tracker *t, item *it)
{
    /* form 3 packs category (bits 0-2), tier (3-4) and flags (5-6) in
     * one byte; the earlier forms give each a byte */
    int packed = r->form == 3;
    if (need(r, packed ? 2 : 4, "item")) return -1;
    const unsigned char *b = r->p;
    unsigned cat = packed ? b[0] & 7u : b[0], tier = packed ? b[0] >> 3 & 3u : b[1],
             flags = packed ? b[0] >> 5 : b[2], nh = packed ? b[1] : b[3];
    if (in_range(r, cat, 0, CAT__COUNT - 1, "category") || in_range(r, tier, 0, TIER__COUNT - 1, "tier") ||
        in_range(r, flags, 0, 3, "flags") || in_range(r, nh, 0, ITEM_HISTORY_MAX, "history"))
        return -1;
    r->p += packed ? 2 : 4;
    int64_t f[8];
    const char *reason;
    uint32_t rn;
    int32_t hist[ITEM_HISTORY_MAX];
    if (get_fields(r, f, &reason, &rn, nh, hist)) return -1;
    if (rn > TL_REASON_MAX || memchr(reason, '\0', rn)) {
        r->what = "anchorReason";
        return -1;
    }
    char *ar = NULL;
    if (rn) {
        ar = malloc(rn + 1);
        if (!ar) {
            r->what = "memory";
            return -1;
        }
        memcpy(ar, reason, rn);
        ar[rn] = '\0';
    }
    it->category = (int8_t)cat;
    it->tier = (int8_t)tier;
    it->anchored = flags & 1;
    it->pruned = (flags >> 1) & 1;
    it->mention_count = f[0];
    it->reference_count = f[1];
    it->first_seen_turn = f[2];
    it->last_mention_turn = f[3];
    it->last_reference_turn = f[4];
    it->pruned_turn = f[5];
    it->anchor_at_ms = f[6];
    it->created_at_ms = f[7];
    free(it->anchor_reason);
    it->anchor_reason = ar;
    it->hist_len = it->hist_head = 0;
    for (unsigned i = 0; i < nh; i++) tracker_history_push(t, it, hist[i]);
    return 0;
}

void tl_put_var(buf *out, uint64_t v)
{
    if (buf_reserve(out, TL_VAR_MAX) != 0) return;
    unsigned char *p = put_var((unsigned char *)out->p + out->len, v);
    out->len = (size_t)(p - (unsigned char *)out->p);
    out->p[out->len] = '\0';
}

int tl_get_turn_back(tl_reader *r, int64_t turn, int64_t *v, const char *what)
{
    uint64_t d;
    if (get_var(r, &d, what) != 0) return -1;
    if (d > (uint64_t)turn) return r->what = what, -1;
    *v = turn - (int64_t)d;
    return 0;
}

void tl_put_pruned(buf *out, const item *it, int64_t turn)
{
    tl_put_id(out, it->id, tracker_id_len(it));
    tl_put_var(out, (uint64_t)(turn - it->pruned_turn));
}

int tl_get_pruned(tl_reader *r, const char **id, uint32_t *idn, int64_t turn, int64_t *pruned_turn)
{
    if (tl_get_id(r, id, idn, "pruned id") != 0) return -1;
    if (*idn == 0 || memchr(*id, '\0', *idn)) return r->what = "pruned id", -1;
    return tl_get_turn_back(r, turn, pruned_turn, "prunedTurn");
}

void tl_put_touched(buf *out, const item *it, int64_t touch_turn)
{
    tl_put_id(out, it->id, tracker_id_len(it));
    if (buf_reserve(out, 1 + 2 * TL_VAR_MAX) != 0) return;
    unsigned char *p = (unsigned char *)out->p + out->len;
    *p++ = (unsigned char)((it->last_mention_turn == touch_turn ? 1u : 0u) |
                           (it->last_reference_turn == touch_turn ? 2u : 0u));
    p = put_var(p, (uint64_t)it->mention_count);
    p = put_var(p, (uint64_t)it->reference_count);
    out->len = (size_t)(p - (unsigned char *)out->p);
    out->p[out->len] = '\0';
}

int tl_get_touched(tl_reader *r, const char **id, uint32_t *idn, unsigned *bits, int64_t *mentions,
                   int64_t *references)
{
    uint64_t m, n;
    if (tl_get_id(r, id, idn, "touched id") != 0) return -1;
    if (*idn == 0 || memchr(*id, '\0', *idn)) return r->what = "touched id", -1;
    if (need(r, 1, "touched")) return -1;
    *bits = *r->p++;
    if (*bits > 3) return r->what = "touched", -1;
    if (get_var(r, &m, "mentionCount") != 0 || get_var(r, &n, "referenceCount") != 0) return -1;
    if (m > (uint64_t)TRACKER_COUNT_MAX) return r->what = "mentionCount", -1;
    if (n > (uint64_t)TRACKER_COUNT_MAX) return r->what = "referenceCount", -1;
    *mentions = (int64_t)m;
    *references = (int64_t)n;
    return 0;
}

void tl_apply_touched(tracker *t, item *it, unsigned bits, int64_t mentions, int64_t references, int64_t turn)
{
    if (bits & 1) {
        if (mentions > it->mention_count) tracker_history_push(t, it, turn);
        it->last_mention_turn = turn;
    }
    if (bits & 2) it->last_reference_turn = turn;
    if (mentions > it->mention_count) it->mention_count = mentions;
    if (references > it->reference_count) it->reference_count = references;
    it->pruned = 0;
    it->pruned_turn = -1;
}

void tl_put_header(buf *out, const tl_header *h)
{
    unsigned char b[TL_HEADER] = {TL_REC_MAGIC, TL_REC_VERSION, (unsigned char)h->flags, 0};
    put_u64(b + 4, h->seq);
    put_u64(b + 12, (uint64_t)h->turn);
    put_u64(b + 20, (uint64_t)h->persisted);
    buf_append(out, (const char *)b, sizeof b);
}

int tl_get_header(tl_reader *r, tl_header *h)
{
    if (need(r, TL_HEADER, "header")) return -1;
    const unsigned char *b = r->p;
    if (b[0] != TL_REC_MAGIC || b[1] < 1 || b[1] > TL_REC_VERSION ||
        b[2] > (TL_REC_META | TL_REC_PRUNED | TL_REC_TOUCHED | TL_REC_KEPT)) {
        r->what = "header";
        return -1;
    }
    r->form = b[1]; /* record version n holds items in form n */
    h->flags = b[2];
    h->seq = get_u64(b + 4);
    h->turn = (int64_t)get_u64(b + 12);
    h->persisted = (int64_t)get_u64(b + 20);
    r->p += TL_HEADER;
    r->turn = h->turn; /* what form 3 stores its turns and times against */
    r->persisted = h->persisted;
    if (h->seq == 0 || h->seq > (uint64_t)TRACKER_COUNT_MAX) {
        r->what = "seq";
        return -1;
    }
    return in_range(r, h->turn, 0, TRACKER_TURN_MAX, "currentTurn") ||
                   in_range(r, h->persisted, 0, TRACKER_COUNT_MAX, "lastPersistAt")
               ? -1
               : 0;
}
