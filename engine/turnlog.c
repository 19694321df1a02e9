/* turnlog.c: the binary item form, snapshot rows and turn-log records
 * (layouts in turnlog.h).  Writers append fixed-width little-endian
 * fields; readers check every bound and range, since stored bytes come
 * from outside. */
#include <stdlib.h>
#include <string.h>

#include "turnlog.h"
#include "../util/endian.h"

#define TL_REASON_MAX (1u << 20)
#define TL_ITEM_FIXED (4 + 8 * 8) /* the item form up to the reason */
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
void tl_put_item(buf *out, const item *it)
{
    int64_t h[ITEM_HISTORY_MAX];
    size_t nh = tracker_history(it, h, ITEM_HISTORY_MAX);
    size_t rn = it->anchor_reason ? strlen(it->anchor_reason) : 0;
    size_t size = TL_ITEM_FIXED + 4 + rn + 4 * nh;
    if (buf_reserve(out, size) != 0) return;
    unsigned char *p = (unsigned char *)out->p + out->len;
    p[0] = (unsigned char)it->category;
    p[1] = (unsigned char)it->tier;
    p[2] = (unsigned char)((it->anchored ? 1 : 0) | (it->pruned ? 2 : 0));
    p[3] = (unsigned char)nh;
    const int64_t f[8] = {it->mention_count,       it->reference_count, it->first_seen_turn,
                          it->last_mention_turn,   it->last_reference_turn, it->pruned_turn,
                          it->anchor_at_ms,        it->created_at_ms};
    for (int i = 0; i < 8; i++) put_u64(p + 4 + 8 * i, (uint64_t)f[i]);
    p = put_u32p(p + TL_ITEM_FIXED, (uint32_t)rn);
    if (rn) memcpy(p, it->anchor_reason, rn);
    p += rn;
    for (size_t i = 0; i < nh; i++) p = put_u32p(p, (uint32_t)h[nh - 1 - i]); /* oldest first */
    out->len += size;
    out->p[out->len] = '\0';
}

void tl_put_row(buf *out, const item *it)
{
    buf_putc(out, TL_ROW_V1);
    tl_put_item(out, it);
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

int tl_get_item(tl_reader *r, tracker *t, item *it)
{
    static const char *const names[8] = {"mentionCount",     "referenceCount", "firstSeenTurn",
                                         "lastMentionTurn",  "lastReferenceTurn", "prunedTurn",
                                         "anchorSetAt",      "createdAt"};
    const int64_t T = TRACKER_TURN_MAX, C = TRACKER_COUNT_MAX;
    const int64_t lo[8] = {0, 0, 0, 0, -1, -1, 0, 0}, hi[8] = {C, C, T, T, T, T, C, C};
    if (need(r, TL_ITEM_FIXED, "item")) return -1;
    const unsigned char *b = r->p;
    int64_t f[8];
    for (int i = 0; i < 8; i++) {
        f[i] = (int64_t)get_u64(b + 4 + 8 * i);
        if (in_range(r, f[i], lo[i], hi[i], names[i])) return -1;
    }
    if (in_range(r, b[0], 0, CAT__COUNT - 1, "category") || in_range(r, b[1], 0, TIER__COUNT - 1, "tier") ||
        in_range(r, b[2], 0, 3, "flags") || in_range(r, b[3], 0, ITEM_HISTORY_MAX, "history"))
        return -1;
    r->p += TL_ITEM_FIXED;
    const char *reason;
    uint32_t rn;
    if (tl_get_bytes(r, &reason, &rn, "anchorReason")) return -1;
    if (rn > TL_REASON_MAX || memchr(reason, '\0', rn)) {
        r->what = "anchorReason";
        return -1;
    }
    int32_t hist[ITEM_HISTORY_MAX];
    for (unsigned i = 0; i < b[3]; i++) {
        uint32_t v;
        if (tl_get_u32(r, &v, "history") || in_range(r, (int64_t)v, 0, T, "history")) return -1;
        hist[i] = (int32_t)v;
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
    it->category = (int8_t)b[0];
    it->tier = (int8_t)b[1];
    it->anchored = b[2] & 1;
    it->pruned = (b[2] >> 1) & 1;
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
    for (unsigned i = 0; i < b[3]; i++) tracker_history_push(t, it, hist[i]);
    return 0;
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
    if (b[0] != TL_REC_MAGIC || b[1] != TL_REC_VERSION || b[2] > TL_REC_META) {
        r->what = "header";
        return -1;
    }
    h->flags = b[2];
    h->seq = get_u64(b + 4);
    h->turn = (int64_t)get_u64(b + 12);
    h->persisted = (int64_t)get_u64(b + 20);
    r->p += TL_HEADER;
    if (h->seq == 0 || h->seq > (uint64_t)TRACKER_COUNT_MAX) {
        r->what = "seq";
        return -1;
    }
    return in_range(r, h->turn, 0, TRACKER_TURN_MAX, "currentTurn") ||
                   in_range(r, h->persisted, 0, TRACKER_COUNT_MAX, "lastPersistAt")
               ? -1
               : 0;
}

void tl_slot_key(char key[7], unsigned slot)
{
    static const char hex[] = "0123456789abcdef";
    key[0] = 'l';
    key[1] = ':';
    for (int i = 0; i < 4; i++) key[2 + i] = hex[(slot >> (12 - 4 * i)) & 15];
    key[6] = '\0';
}
