/* tokprog.c: the emitter's store of path programs (layout in tokprog.h). */
#include <stdlib.h>
#include <string.h>

#include "../util/namefilter.h"
#include "tokprog.h"

/* Whether e holds a path whose bytes are intact: less than the ring's
 * size was written after them. */
static int live(const ex_tp_store *s, const ex_tp_ent *e) { return e->keylen && s->head - e->at <= EX_TP_RING; }

/* Whether e is for a path of hash h, n bytes and workspace ws. */
static int keyed(const ex_tp_ent *e, size_t n, uint32_t h, uint64_t ws)
{
    return e->hash == h && e->keylen == n && e->ws == ws;
}

/* The program entry e keeps for the path t[0, n) (hash h) of workspace
 * ws, or NULL. */
static const unsigned char *entry_prog(const ex_tp_store *s, const ex_tp_ent *e, const char *t, size_t n, uint32_t h,
                                       uint64_t ws)
{
    if (!keyed(e, n, h, ws) || !live(s, e)) return NULL;
    const unsigned char *key = s->ring + e->at % EX_TP_RING;
    return memcmp(key, t, n) == 0 ? key + n : NULL;
}

/* The two entries of h's set. */
static size_t set_of(uint32_t h) { return h & (EX_TP_INDEX - 2); }

const unsigned char *ex_tp_find(const ex_tp_store *s, const char *t, size_t n, uint32_t h, uint64_t ws)
{
    if (!s->index) return NULL;
    const ex_tp_ent *e = &s->index[set_of(h)];
    const unsigned char *p = entry_prog(s, &e[0], t, n, h, ws);
    return p ? p : entry_prog(s, &e[1], t, n, h, ws);
}

void ex_tp_keep(ex_tp_store *s, const char *t, size_t n, uint32_t h, uint64_t ws, const unsigned char *prog,
                size_t len)
{
    size_t need = n + len;
    if (n == 0 || need > EX_TP_MAX) return;
    if (!s->index) {
        s->index = calloc(EX_TP_INDEX, sizeof *s->index);
        s->ring = malloc(EX_TP_RING);
        if (!s->index || !s->ring) {
            ex_tp_free(s);
            return;
        }
    }
    /* kept whole: one that would run past the ring's end starts over at its start */
    uint64_t off = s->head % EX_TP_RING;
    if (off + need > EX_TP_RING) s->head += EX_TP_RING - off;
    uint64_t at = s->head;
    s->head += need;
    unsigned char *p = s->ring + at % EX_TP_RING;
    memcpy(p, t, n);
    memcpy(p + n, prog, len);
    /* over the entry of the same hash, length and workspace if the set has
     * one (this path's, gone stale, or a colliding path's), else into an
     * empty or stale entry, else over the older of the two */
    ex_tp_ent *e = &s->index[set_of(h)];
    size_t v;
    if (keyed(&e[0], n, h, ws)) v = 0;
    else if (keyed(&e[1], n, h, ws)) v = 1;
    else if (!live(s, &e[0])) v = 0;
    else if (!live(s, &e[1])) v = 1;
    else v = e[1].at < e[0].at;
    e[v] = (ex_tp_ent){at, ws, h, (uint32_t)n};
}

void ex_tp_free(ex_tp_store *s)
{
    free(s->index);
    free(s->ring);
    memset(s, 0, sizeof *s);
}

uint64_t ex_tp_ws_key(uint64_t seed, const char *ws, size_t n)
{
    if (!ws) return 0;
    return name_mix_bytes(seed ^ (0x452821e638d01377ull + n), ws, n) | 1;
}
