/* persist.c: a session's state in the kv store.
 *
 * Namespace "clarity:s:<session>".  The snapshot: key "meta" holds
 * {"v":1,"currentTurn","lastPersistAt","workspace","seq","every",...} and key
 * "i:<item id>" one item (turnlog.h's binary row; JSON in earlier
 * versions).  A turn appends one record of its deltas (the items it
 * changed, the ids it evicted, the turn) under "l:<slot>", one store write;
 * every storage.snapshotEvery records, and when a session ends, the items
 * changed since the snapshot are folded into their rows with the meta in one
 * transaction.  Restore = snapshot + the records above its seq, in order, so
 * after a crash the store holds exactly the turns whose agent_end returned.
 * A process that restores records appends to them when its snapshotEvery
 * is the meta's "every" (the slots are seq % every), and folds them first
 * otherwise.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "compact.h"
#include "progress.h"
#include "turnlog.h"

#define PERSIST_VERSION 1

/* A number of the state: an integer (or an integral real, as JavaScript
 * writes them) in lo..hi.  Absent: def.  Returns 0, or -1 with *err
 * malloc()ed naming where and what. */
static int get_num(json_t *o, const char *k, int64_t lo, int64_t hi, int64_t def, int64_t *out,
                   const char *where, char **err)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    double d = json_is_integer(v) ? (double)json_integer_value(v) : json_is_real(v) ? json_real_value(v) : NAN;
    if (json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi) {
        *out = (int64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_real(v) && d == floor(d) && d >= (double)lo && d <= (double)hi) {
        *out = (int64_t)d;
        return 0;
    }
    if (json_is_integer(v))
        *err = util_format("%s: \"%s\" must be an integer in %lld..%lld, got %lld", where, k,
                           (long long)lo, (long long)hi, (long long)json_integer_value(v));
    else
        *err = util_format("%s: \"%s\" must be an integer in %lld..%lld", where, k, (long long)lo,
                           (long long)hi);
    return -1;
}

/* Our short key, else the legacy name (the original plugin's shape). */
static const char *key_of(json_t *o, const char *ours, const char *legacy)
{
    return json_object_get(o, ours) || !legacy ? ours : legacy;
}

/* A flag: a boolean, or 0/1. */
static int get_flag(json_t *o, const char *k, int *out, const char *where, char **err)
{
    json_t *v = json_object_get(o, k);
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return 0;
    }
    int64_t x;
    if (get_num(o, k, 0, 1, 0, &x, where, err) != 0) return -1;
    *out = (int)x;
    return 0;
}

static int item_category(json_t *o, const char *id)
{
    json_t *cv = json_object_get(o, "cat");
    int cat = json_is_integer(cv) ? (int)json_integer_value(cv) : -1;
    if (cat < 0 || cat >= CAT__COUNT) {
        cat = tracker_category_from_name(json_string_value(json_object_get(o, "category")));
        if (cat < 0) cat = tracker_category_of_id(id);
    }
    return cat;
}

static int item_tier(json_t *o)
{
    json_t *tv = json_object_get(o, "tier");
    int tier = json_is_integer(tv) ? (int)json_integer_value(tv) : -1;
    if (tier < 0 || tier >= TIER__COUNT) {
        tier = json_is_string(tv) ? tracker_tier_from_name(json_string_value(tv)) : -1;
        if (tier < 0) tier = TIER_NORMAL;
    }
    return tier;
}

/* The mention history, oldest first; every turn in range. */
static int item_history(tracker *t, item *it, json_t *o, const char *where, char **err)
{
    const char *k = key_of(o, "h", "mentionHistory");
    json_t *h = json_object_get(o, k);
    it->hist_len = it->hist_head = 0;
    size_t i;
    json_t *v;
    json_array_foreach(h, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > TRACKER_TURN_MAX) {
            *err = util_format("%s: \"%s\"[%zu] must be a turn in 0..%d", where, k, i, TRACKER_TURN_MAX);
            return -1;
        }
        tracker_history_push(t, it, (int64_t)json_integer_value(v));
    }
    return 0;
}

/* Fills an item's fields from our stored form or the legacy form.  Values
 * out of their bounds refuse the whole item: 0, or -1 with *err. */
static int item_from_json(tracker *t, item *it, json_t *o, const char *where, char **err)
{
    const int64_t T = TRACKER_TURN_MAX, C = TRACKER_COUNT_MAX;
    int64_t m, r, lm, f, lr, at, pt, c;
    int anchored, pruned;
    if (get_num(o, key_of(o, "m", "mentionCount"), 0, C, 0, &m, where, err) ||
        get_num(o, key_of(o, "r", "referenceCount"), 0, C, 0, &r, where, err) ||
        get_num(o, key_of(o, "lm", "lastMentionTurn"), 0, T, 0, &lm, where, err) ||
        get_num(o, key_of(o, "f", "firstSeenTurn"), 0, T, lm, &f, where, err) ||
        get_num(o, key_of(o, "lr", "lastReferenceTurn"), -1, T, -1, &lr, where, err) ||
        get_num(o, key_of(o, "at", "anchorSetAt"), 0, C, 0, &at, where, err) ||
        get_num(o, "pt", -1, T, -1, &pt, where, err) ||
        get_num(o, key_of(o, "c", "createdAt"), 0, C, 0, &c, where, err) ||
        get_flag(o, key_of(o, "a", "anchored"), &anchored, where, err) ||
        get_flag(o, key_of(o, "p", "pruned"), &pruned, where, err))
        return -1;
    it->category = (int8_t)item_category(o, it->id);
    it->tier = (int8_t)item_tier(o);
    it->mention_count = m;
    it->reference_count = r;
    it->last_mention_turn = lm;
    it->first_seen_turn = f;
    it->last_reference_turn = lr;
    it->anchored = (uint8_t)anchored;
    it->anchor_at_ms = at;
    it->pruned = (uint8_t)pruned;
    it->pruned_turn = pt;
    it->created_at_ms = c;
    const char *ar = json_string_value(json_object_get(o, "ar"));
    if (!ar) ar = json_string_value(json_object_get(o, "anchorReason"));
    free(it->anchor_reason);
    it->anchor_reason = ar ? strdup(ar) : NULL;
    return item_history(t, it, o, where, err);
}

typedef struct load_ctx {
    engine *e;
    session *s;
    int rc;
    char where[160]; /* "session <id>: stored item", formatted once per load */
} load_ctx;

/* A binary row (turnlog.h): 0, or -1 with *err. */
static int item_from_row(tracker *t, item *it, const char *val, size_t len, const char *where, char **err)
{
    tl_reader r;
    int binary = tl_row_reader(&r, val, len) == 0;
    if (binary && tl_get_item(&r, t, it) == 0 && r.p == r.end) return 0;
    *err = util_format("%s: \"%s\" is out of range or cut short", where,
                       binary ? (r.what ? r.what : "length") : "format");
    return -1;
}

static int load_item(void *ud, const char *key, const char *val, size_t len)
{
    load_ctx *c = ud;
    json_t *o = NULL;
    if (len && val[0] == '{') { /* the JSON rows of earlier versions */
        json_error_t jerr;
        o = json_loadb(val, len, 0, &jerr);
        if (!json_is_object(o)) {
            engine_log(c->e, CLARITY_LOG_WARN, "clarity: session %s: skipping unreadable item %s",
                       c->s->id, key);
            json_decref(o);
            return 0;
        }
    }
    size_t had = c->s->t.count;
    item *it = tracker_touch(&c->s->t, key + 2, CAT_PROJECT, 0);
    if (!it) {
        json_decref(o);
        c->rc = CLARITY_ENOMEM;
        return 1;
    }
    if (c->s->t.count == had) { /* there already: cannot happen in a kv store (keys are unique) */
        json_decref(o);
        return 0;
    }
    char *err = NULL;
    int bad = o ? item_from_json(&c->s->t, it, o, c->where, &err)
                : item_from_row(&c->s->t, it, val, len, c->where, &err);
    if (bad) {
        /* a corrupted or hand-edited row is never trusted: left out, and
         * left in the store as it is */
        engine_log(c->e, CLARITY_LOG_ERROR, "clarity: %s; the item (row %.150s) is left out",
                   err ? err : c->where, key);
        tracker_discard(&c->s->t, it);
    }
    free(err);
    json_decref(o);
    return 0;
}

/* The meta's JSON parts (workspace, turn keys, re-injected items, test
 * runs), from the snapshot's meta or a turn-log record's. */
static void meta_apply(engine *e, session *s, json_t *meta, const char *where)
{
    size_t ki;
    json_t *kv;
    s->t.n_turn_keys = 0;
    json_array_foreach(json_object_get(meta, "turnKeys"), ki, kv) {
        const char *hex = json_string_value(kv);
        char *end;
        unsigned long long h = hex ? strtoull(hex, &end, 16) : 0;
        if (hex && *hex && !*end && strlen(hex) == 16) {
            s->t.turn_keys[s->t.n_turn_keys % TRACKER_TURN_KEYS] = (uint64_t)h;
            s->t.n_turn_keys++;
        }
    }
    compact_reinject_clear(s);
    json_t *re = json_object_get(meta, "reinject");
    json_array_foreach(json_object_get(re, "ids"), ki, kv)
        if (json_is_string(kv) && compact_reinject_add(s, json_string_value(kv)) != CLARITY_OK) break;
    s->reinject_shown = s->n_reinject && json_is_true(json_object_get(re, "shown"));
    char *perr = NULL;
    if (progress_load(e, s, json_object_get(meta, "progress"), &perr) == CLARITY_ESTORE)
        engine_log(e, CLARITY_LOG_ERROR, "clarity: %s: %s (the test-run history is dropped)", where, perr);
    free(perr);
    const char *ws = json_string_value(json_object_get(meta, "workspace"));
    free(s->workspace);
    s->workspace = ws ? strdup(ws) : NULL;
}

/* ---- the turn log on load ---------------------------------------------- */

typedef struct rec {
    uint64_t seq;
    char *p;
    size_t n;
} rec;

typedef struct log_ctx {
    rec *v;
    size_t n, cap;
    uint64_t above; /* the snapshot's seq: records at or below are stale */
    int oom, stale;
} log_ctx;

static int collect_rec(void *ud, const char *key, const char *val, size_t len)
{
    (void)key;
    log_ctx *c = ud;
    tl_reader r = tl_reader_over(val, len, 0);
    tl_header h;
    if (tl_get_header(&r, &h) != 0) return 0; /* reported when applied */
    if (h.seq <= c->above) return c->stale = 1, 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        rec *v = realloc(c->v, cap * sizeof *v);
        if (!v) return c->oom = 1;
        c->v = v;
        c->cap = cap;
    }
    char *p = malloc(len ? len : 1);
    if (!p) return c->oom = 1;
    memcpy(p, val, len);
    c->v[c->n++] = (rec){h.seq, p, len};
    return 0;
}

static int cmp_rec(const void *a, const void *b)
{
    uint64_t x = ((const rec *)a)->seq, y = ((const rec *)b)->seq;
    return (x > y) - (x < y);
}

/* Room for extra more ids removed since the snapshot: 0 or -1. */
static int snap_del_reserve(session *s, size_t extra)
{
    while (s->cap_snap_del - s->n_snap_del < extra) {
        size_t cap = s->cap_snap_del ? s->cap_snap_del * 2 : 16;
        char **v = realloc(s->snap_del, cap * sizeof *v);
        if (!v) return -1;
        s->snap_del = v;
        s->cap_snap_del = cap;
    }
    return 0;
}

static int snap_del_add(session *s, char *id)
{
    if (snap_del_reserve(s, 1) != 0) return -1;
    s->snap_del[s->n_snap_del++] = id;
    return 0;
}

/* A record's pruned section: each id's item is pruned at its turn.  An id
 * the session does not hold is passed over (the item it named is gone
 * either way). */
static int rec_pruned(session *s, tl_reader *r, const tl_header *h, int apply)
{
    uint32_t n;
    if (tl_get_u32(r, &n, "pruned") != 0) return -1;
    for (uint32_t i = 0; i < n; i++) {
        const char *id;
        uint32_t idn;
        int64_t turn;
        if (tl_get_pruned(r, &id, &idn, h->turn, &turn) != 0) return -1;
        item *it = apply ? tracker_find_n(&s->t, id, idn) : NULL;
        if (!it) continue;
        it->pruned = 1;
        it->pruned_turn = turn;
        it->snap_dirty = 1;
    }
    return 0;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return (x > y) - (x < y);
}

/* A record's kept section (turnlog.h): every item neither pruned nor
 * listed is pruned at its turn.  A listed id the session does not hold is
 * passed over. */
static int rec_kept(session *s, tl_reader *r, const tl_header *h, int apply)
{
    uint32_t n;
    int64_t turn;
    if (tl_get_u32(r, &n, "kept") != 0 || tl_get_turn_back(r, h->turn, &turn, "keptTurn") != 0) return -1;
    if (n > (size_t)(r->end - r->p) / 2) return r->what = "kept", -1; /* an id takes 2 bytes or more */
    item **kept = NULL;
    if (apply && n && !(kept = malloc((size_t)n * sizeof *kept))) return -2;
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *id;
        uint32_t idn;
        if (tl_get_id(r, &id, &idn, "kept id") != 0 || idn == 0 || memchr(id, '\0', idn)) {
            free(kept);
            return r->what = "kept id", -1;
        }
        item *it = apply ? tracker_find_n(&s->t, id, idn) : NULL;
        if (it) kept[k++] = it;
    }
    if (!apply) return 0;
    if (k) qsort(kept, k, sizeof *kept, cmp_ptr); /* (none kept: kept may be NULL) */
    for (item *it = s->t.items; it; it = it->hh.next) {
        if (it->pruned || (k && bsearch(&it, kept, k, sizeof *kept, cmp_ptr))) continue;
        it->pruned = 1;
        it->pruned_turn = turn;
        it->snap_dirty = 1;
    }
    free(kept);
    return 0;
}

/* A record's touched section (turnlog.h): each entry applied to its id's
 * item (tl_apply_touched).  An id the session does not hold is passed
 * over, as in the pruned section. */
static int rec_touched(session *s, tl_reader *r, const tl_header *h, int apply)
{
    uint32_t n;
    int64_t turn;
    if (tl_get_u32(r, &n, "touched") != 0 || tl_get_turn_back(r, h->turn, &turn, "touchTurn") != 0) return -1;
    for (uint32_t i = 0; i < n; i++) {
        const char *id;
        uint32_t idn;
        unsigned bits;
        int64_t mentions, references;
        if (tl_get_touched(r, &id, &idn, &bits, &mentions, &references) != 0) return -1;
        item *it = apply ? tracker_find_n(&s->t, id, idn) : NULL;
        if (!it) continue;
        tl_apply_touched(&s->t, it, bits, mentions, references, turn);
        it->snap_dirty = 1;
    }
    return 0;
}

/* Checks (apply 0) or applies (apply 1) one record.  Returns 0, -1 with
 * r->what naming what is wrong, or -2 out of memory. */
static int rec_walk(engine *e, session *s, tl_reader *r, int apply, const char *where)
{
    tl_header h;
    if (tl_get_header(r, &h) != 0) return -1;
    if (h.flags & TL_REC_META) {
        const char *m;
        uint32_t mn;
        if (tl_get_bytes(r, &m, &mn, "meta") != 0) return -1;
        json_error_t jerr;
        json_t *meta = json_loadb(m, mn, 0, &jerr);
        int ok = json_is_object(meta);
        if (ok && apply) meta_apply(e, s, meta, where);
        json_decref(meta);
        if (!ok) return r->what = "meta", -1;
    }
    if (apply) {
        s->t.current_turn = h.turn;
        s->t.last_persist_ms = h.persisted;
    }
    if (h.flags & TL_REC_KEPT) {
        int krc = rec_kept(s, r, &h, apply);
        if (krc != 0) return krc;
    }
    uint32_t n;
    if (tl_get_u32(r, &n, "items") != 0) return -1;
    /* the check reads items into a scratch one */
    item *scratch = apply ? NULL : calloc(1, sizeof *scratch + ITEM_HISTORY_MAX * sizeof scratch->history[0]);
    if (!apply && !scratch) return -2;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        const char *id;
        uint32_t idn;
        if (tl_get_id(r, &id, &idn, "id") != 0 || idn == 0 || memchr(id, '\0', idn)) {
            r->what = "id";
            rc = -1;
            break;
        }
        if (!apply) {
            rc = tl_get_item(r, &s->t, scratch);
            continue;
        }
        char *k = util_strndup(id, idn);
        item *it = k ? tracker_touch(&s->t, k, CAT_PROJECT, 0) : NULL;
        free(k);
        if (!it) rc = -2;
        else if (tl_get_item(r, &s->t, it) != 0) rc = -1; /* checked before: cannot happen */
        else it->snap_dirty = 1;
    }
    if (scratch) free(scratch->anchor_reason);
    free(scratch);
    if (rc == 0 && tl_get_u32(r, &n, "deleted") != 0) rc = -1;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        const char *id;
        uint32_t idn;
        if (tl_get_id(r, &id, &idn, "deleted id") != 0 || idn == 0 || memchr(id, '\0', idn)) {
            r->what = "deleted id";
            rc = -1;
        } else if (apply) {
            char *k = util_strndup(id, idn);
            if (!k) {
                rc = -2;
                break;
            }
            item *it = tracker_find(&s->t, k);
            if (it) tracker_discard(&s->t, it);
            if (snap_del_add(s, k) != 0) {
                free(k);
                rc = -2;
            }
        }
    }
    if (rc == 0 && (h.flags & TL_REC_PRUNED)) rc = rec_pruned(s, r, &h, apply);
    if (rc == 0 && (h.flags & TL_REC_TOUCHED)) rc = rec_touched(s, r, &h, apply);
    if (rc == 0 && r->p != r->end) r->what = "length", rc = -1;
    return rc;
}

/* Replays the records above the snapshot, in order, up to the first gap or
 * bad record (reported; what follows it cannot be applied in order). */
static int load_log(engine *e, session *s, const char *where)
{
    log_ctx c = {NULL, 0, 0, s->snap_seq, 0, 0};
    int rc = store_iter(e->st, s->ns, "l:", collect_rec, &c);
    s->stale_slots |= c.stale;
    if (rc == CLARITY_OK && c.oom) rc = CLARITY_ENOMEM;
    if (rc == CLARITY_OK && c.n) qsort(c.v, c.n, sizeof *c.v, cmp_rec);
    for (size_t i = 0; rc == CLARITY_OK && i < c.n; i++) {
        if (c.v[i].seq != s->log_seq + 1) {
            engine_log(e, CLARITY_LOG_ERROR, "clarity: %s: turn-log record %llu is missing; "
                       "the %zu records after it are not applied", where,
                       (unsigned long long)s->log_seq + 1, c.n - i);
            break;
        }
        tl_reader r = tl_reader_over(c.v[i].p, c.v[i].n, 0);
        int w = rec_walk(e, s, &r, 0, where);
        if (w == 0) {
            r = tl_reader_over(c.v[i].p, c.v[i].n, 0);
            w = rec_walk(e, s, &r, 1, where);
        }
        if (w == -2) rc = CLARITY_ENOMEM;
        if (w == -1) {
            engine_log(e, CLARITY_LOG_ERROR, "clarity: %s: turn-log record %llu: \"%s\" is out of range "
                       "or cut short; it and the %zu after it are not applied", where,
                       (unsigned long long)c.v[i].seq, r.what ? r.what : "?", c.n - i - 1);
            break;
        }
        if (w == 0) s->log_seq = c.v[i].seq;
    }
    for (size_t i = 0; i < c.n; i++) free(c.v[i].p);
    free(c.v);
    return rc;
}

void persist_session_free(session *s)
{
    for (size_t i = 0; i < s->n_snap_del; i++) free(s->snap_del[i]);
    free(s->snap_del);
    s->snap_del = NULL;
    s->n_snap_del = s->cap_snap_del = 0;
    buf_free(&s->logbuf);
    buf_free(&s->prunebuf);
    buf_free(&s->touchbuf);
}

static void reset_state(engine *e, session *s)
{
    tracker_free(&s->t);
    tracker_init(&s->t, e->cfg.limits.history_length);
    persist_session_free(s);
    s->log_seq = s->snap_seq = 0;
    s->log_writer = 0;
}

/* The meta's state format: 0 when this build reads it, else -1 with *err
 * (malloc()ed).  A newer format is refused rather than read as far as it
 * looks familiar: its items may lie where this build does not look, and a
 * write from here would fold a partial state over it.  No "v": format 1. */
static int meta_version(json_t *meta, const char *where, char **err)
{
    int64_t v;
    if (get_num(meta, "v", 1, INT32_MAX, 1, &v, where, err) != 0) return -1;
    if (v <= PERSIST_VERSION) return 0;
    *err = util_format("%s: state format %lld is newer than this build reads (%d): the session is left "
                       "as it is; a newer clarity reads it",
                       where, (long long)v, PERSIST_VERSION);
    return -1;
}

static int load_once(engine *e, session *s)
{
    char *val = NULL;
    size_t len = 0;
    /* the version first: a commit landing while we read makes our state
     * newer than it, and our next commit's fence fails (safe); the other
     * order could pass a fence with stale state */
    uint64_t version = 0;
    int rc = store_version(e->st, s->ns, &version);
    if (rc != CLARITY_OK && rc != CLARITY_DECLINED) return rc;
    s->versioned = rc == CLARITY_OK;
    s->version = version;
    rc = store_get(e->st, s->ns, "meta", &val, &len);
    if (rc == CLARITY_ENOTFOUND) {
        if (s->exists_in_store) reset_state(e, s); /* erased by another process since */
        s->exists_in_store = 0;
        return CLARITY_OK;
    }
    if (rc != CLARITY_OK) return rc;
    json_error_t jerr;
    json_t *meta = json_loadb(val, len, 0, &jerr);
    free(val);
    reset_state(e, s);
    char where[200], *err = NULL;
    snprintf(where, sizeof where, "session %.100s: stored meta", s->id);
    int64_t turn = 0, persisted = 0, seq = 0, every = 0;
    if (!json_is_object(meta) || meta_version(meta, where, &err) ||
        get_num(meta, "currentTurn", 0, TRACKER_TURN_MAX, 0, &turn, where, &err) ||
        get_num(meta, "lastPersistAt", 0, TRACKER_COUNT_MAX, 0, &persisted, where, &err) ||
        get_num(meta, "seq", 0, TRACKER_COUNT_MAX, 0, &seq, where, &err) ||
        get_num(meta, "every", 0, CFG_SNAPSHOT_EVERY_MAX, 0, &every, where, &err)) {
        /* the session's turn cannot be trusted: the session is refused */
        engine_log(e, CLARITY_LOG_ERROR, "clarity: %s", err ? err : "session: unreadable stored meta");
        free(err);
        json_decref(meta);
        return CLARITY_ESTORE;
    }
    s->t.current_turn = turn;
    s->t.last_persist_ms = persisted;
    s->log_seq = s->snap_seq = (uint64_t)seq;
    s->log_every = (unsigned)every;
    meta_apply(e, s, meta, where);
    json_decref(meta);
    tracker_defer_names(&s->t); /* built by the first reference scan (tracker_names) */
    load_ctx c = {e, s, CLARITY_OK, {0}};
    snprintf(c.where, sizeof c.where, "session %.100s: stored item", s->id);
    rc = store_iter(e->st, s->ns, "i:", load_item, &c);
    if (rc == CLARITY_OK) rc = c.rc;
    snprintf(where, sizeof where, "session %.100s", s->id);
    if (rc == CLARITY_OK) rc = load_log(e, s, where);
    if (rc != CLARITY_OK) {
        reset_state(e, s);
        return rc;
    }
    tracker_clear_dirty(&s->t);
    s->exists_in_store = 1;
    return CLARITY_OK;
}

/* The meta, the rows and the records are read apart: in one read snapshot
 * of the store, or a fold another process commits between them leaves an
 * old snapshot and none of the records the new one covers (turns lost from
 * the loaded state).  A shared store (Redis) has no such snapshot: the
 * load is taken again while the namespace's version moved under it. */
int persist_load(engine *e, session *s)
{
    for (int tries = 0;; tries++) {
        int rc = store_begin_read(e->st);
        if (rc != CLARITY_OK) return rc;
        rc = load_once(e, s);
        store_end_read(e->st);
        uint64_t now = 0;
        if (rc != CLARITY_OK || !s->versioned || tries == 8 ||
            store_version(e->st, s->ns, &now) != CLARITY_OK || now == s->version)
            return rc; /* after 8 tries, the next commit's fence catches it */
    }
}

/* The meta row's JSON; its "seq" is the last record the snapshot covers,
 * its "every" the snapshotEvery of the records that follow it. */
static void meta_json(const engine *e, const session *s, uint64_t seq, buf *b)
{
    /* without printf: a turn that changes the meta writes it */
    buf_puts(b, "{\"v\":");
    buf_put_i64(b, PERSIST_VERSION);
    buf_puts(b, ",\"currentTurn\":");
    buf_put_i64(b, (long long)s->t.current_turn);
    buf_puts(b, ",\"lastPersistAt\":");
    buf_put_i64(b, (long long)s->t.last_persist_ms);
    buf_puts(b, ",\"seq\":");
    buf_put_u64(b, (unsigned long long)seq);
    buf_puts(b, ",\"every\":");
    buf_put_i64(b, e->cfg.storage.snapshot_every);
    buf_puts(b, ",\"workspace\":");
    if (s->workspace) buf_json_str(b, s->workspace, strlen(s->workspace));
    else buf_puts(b, "null");
    size_t n = s->t.n_turn_keys < TRACKER_TURN_KEYS ? s->t.n_turn_keys : TRACKER_TURN_KEYS;
    if (n) { /* oldest first, as hex: JSON numbers would lose bits */
        buf_puts(b, ",\"turnKeys\":[");
        for (size_t i = 0; i < n; i++) { /* ,"%016llx" without printf: every meta row has them */
            static const char hex[] = "0123456789abcdef";
            uint64_t key = s->t.turn_keys[(s->t.n_turn_keys - n + i) % TRACKER_TURN_KEYS];
            char q[19];
            q[0] = '"';
            for (int d = 0; d < 16; d++) q[1 + d] = hex[key >> (60 - 4 * d) & 15];
            q[17] = '"';
            if (i) buf_putc(b, ',');
            buf_append(b, q, 18);
        }
        buf_putc(b, ']');
    }
    if (s->n_reinject) {
        buf_puts(b, ",\"reinject\":{\"ids\":[");
        for (size_t i = 0; i < s->n_reinject; i++) {
            if (i) buf_putc(b, ',');
            buf_json_str(b, s->reinject[i], strlen(s->reinject[i]));
        }
        buf_puts(b, s->reinject_shown ? "],\"shown\":true}" : "],\"shown\":false}");
    }
    if (s->progress) {
        buf_puts(b, ",\"progress\":");
        progress_json(s, 0, b);
    }
    buf_putc(b, '}');
}

static int put_meta(engine *e, session *s, buf *b)
{
    buf_reset(b);
    meta_json(e, s, s->log_seq, b);
    if (buf_failed(b)) return CLARITY_ENOMEM;
    return store_put(e->st, s->ns, "meta", b->p, b->len);
}

static int put_row(engine *e, session *s, const item *it, buf *b, buf *key)
{
    buf_reset(b);
    buf_reset(key);
    tl_put_row(b, it);
    buf_puts(key, "i:");
    buf_puts(key, it->id);
    if (buf_failed(b) || buf_failed(key)) return CLARITY_ENOMEM;
    return store_put(e->st, s->ns, key->p, b->p, b->len);
}

static int del_row(engine *e, session *s, const char *id, buf *key)
{
    buf_reset(key);
    buf_puts(key, "i:");
    buf_puts(key, id);
    return buf_failed(key) ? CLARITY_ENOMEM : store_del(e->st, s->ns, key->p);
}

/* In a shared store, the commit holds only while nobody else committed
 * the session since we loaded it. */
static int fence(engine *e, session *s)
{
    if (!s->versioned) return CLARITY_OK;
    return store_fence(e->st, s->ns, s->version, s->version + 1);
}

/* The storage.snapshotEvery the records above the snapshot took their
 * slots by (ours when the meta did not say). */
static unsigned slots_every(const engine *e, const session *s)
{
    return s->log_every ? s->log_every : (unsigned)e->cfg.storage.snapshot_every;
}

/* Records another process wrote under another storage.snapshotEvery than
 * ours: folded before anything is appended. */
static int foreign_log(const engine *e, const session *s)
{
    return !s->log_writer && s->log_seq > s->snap_seq && s->log_every != (unsigned)e->cfg.storage.snapshot_every;
}

/* The log holds storage.snapshotEvery records: the next one would take
 * the slot of one the snapshot does not cover. */
static int log_full(const engine *e, const session *s)
{
    return s->log_seq - s->snap_seq >= (uint64_t)e->cfg.storage.snapshot_every;
}

/* Where a snapshot's deletion of slots starts: after the records it
 * covers, or at 0 when stale ones may be left (del_slots then takes the
 * last snapshotEvery seqs, which hold every slot once). */
static uint64_t del_from(const session *s) { return s->stale_slots ? 0 : s->snap_seq; }

/* Deletes the slots of records from + 1 .. seq, taken by every (inside the
 * fold's transaction: the snapshot covers them, they would only take room). */
static int del_slots(engine *e, session *s, uint64_t from, uint64_t seq, unsigned every)
{
    int rc = CLARITY_OK;
    uint64_t n_rec = seq - from < every ? seq - from : every;
    for (uint64_t q = seq; rc == CLARITY_OK && n_rec > 0; q--, n_rec--) {
        char slot[7];
        store_slot_key(slot, (unsigned)(q % every));
        rc = store_del(e->st, s->ns, slot);
        if (rc == CLARITY_ENOTFOUND) rc = CLARITY_OK;
    }
    return rc;
}

/* The snapshot: the rows of the items changed since the last one, the
 * removed ids, the meta; one transaction. */
static int write_snapshot(engine *e, session *s)
{
    tracker *t = &s->t;
    buf b, key;
    buf_init(&b);
    buf_init(&key);
    int rc = store_begin(e->st);
    int began = rc == CLARITY_OK;
    /* removals first: an id removed and tracked again has a row to write */
    for (size_t i = 0; rc == CLARITY_OK && i < s->n_snap_del; i++) rc = del_row(e, s, s->snap_del[i], &key);
    for (size_t i = 0; rc == CLARITY_OK && i < t->n_deleted; i++) rc = del_row(e, s, t->deleted[i], &key);
    for (item *it = t->items; rc == CLARITY_OK && it; it = it->hh.next)
        if (it->snap_dirty || it->dirty || !s->exists_in_store) rc = put_row(e, s, it, &b, &key);
    if (rc == CLARITY_OK) rc = del_slots(e, s, del_from(s), s->log_seq, slots_every(e, s));
    if (rc == CLARITY_OK) rc = put_meta(e, s, &b);
    if (rc == CLARITY_OK) rc = fence(e, s);
    if (rc == CLARITY_OK) rc = store_commit(e->st);
    else if (began) store_rollback(e->st);
    buf_free(&b);
    buf_free(&key);
    if (rc != CLARITY_OK) return rc;
    for (item *it = t->items; it; it = it->hh.next) it->snap_dirty = 0;
    for (size_t i = 0; i < s->n_snap_del; i++) free(s->snap_del[i]);
    s->n_snap_del = 0;
    s->snap_seq = s->log_seq;
    s->log_writer = 0;
    s->stale_slots = s->slots_left = 0;
    s->log_every = (unsigned)e->cfg.storage.snapshot_every;
    return CLARITY_OK;
}

#define PERSIST_BUF_KEEP (256u * 1024) /* the record buffers a session keeps between turns */

/* Writes the record b as turn-log slot seq; with the meta of an empty
 * snapshot for a new session (first), and fenced in a shared store. */
static int put_record(engine *e, session *s, const buf *b, uint64_t seq, int first)
{
    char key[7];
    unsigned every = (unsigned)e->cfg.storage.snapshot_every;
    store_slot_key(key, (unsigned)(seq % every));
    int rc;
    if (s->versioned || first) {
        rc = store_begin(e->st);
        int began = rc == CLARITY_OK;
        if (rc == CLARITY_OK) rc = store_put(e->st, s->ns, key, b->p, b->len);
        if (rc == CLARITY_OK && first) { /* the snapshot: no row yet, seq 0 */
            buf m;
            buf_init(&m);
            meta_json(e, s, s->snap_seq, &m);
            rc = buf_failed(&m) ? CLARITY_ENOMEM : store_put(e->st, s->ns, "meta", m.p, m.len);
            buf_free(&m);
        }
        if (rc == CLARITY_OK) rc = fence(e, s);
        if (rc == CLARITY_OK) rc = store_commit(e->st);
        else if (began) store_rollback(e->st);
    } else {
        rc = store_put(e->st, s->ns, key, b->p, b->len); /* atomic on its own */
    }
    return rc;
}

/* One record of what changed since the last flush, one store write.  For a
 * session the store does not hold yet (first), the record holds every item,
 * and the meta row of an empty snapshot goes with it in one transaction:
 * a new session's first turn writes two keys, not a row per item. */
static int write_record(engine *e, session *s, int first)
{
    tracker *t = &s->t;
    /* room to remember the removals before anything is written */
    if (snap_del_reserve(s, t->n_deleted) != 0) return CLARITY_ENOMEM;
    buf *b = &s->logbuf;
    buf_reset(b);
    tl_header h = {t->meta_dirty ? TL_REC_META : 0, s->log_seq + 1, t->current_turn, t->last_persist_ms};
    tl_put_header(b, &h);
    if (t->meta_dirty) {
        size_t at = b->len;
        tl_put_u32(b, 0);
        meta_json(e, s, h.seq, b);
        tl_patch_u32(b, at, (uint32_t)(b->len - at - 4));
    }
    if (t->bulk && !first) { /* (a first record holds every item whole) */
        b->p[2] |= TL_REC_KEPT;
        tl_put_u32(b, (uint32_t)t->n_bulk_kept);
        tl_put_var(b, (uint64_t)(h.turn - t->bulk_turn));
        for (size_t i = 0; i < t->n_bulk_kept; i++)
            tl_put_id(b, t->bulk_kept[i]->id, tracker_id_len(t->bulk_kept[i]));
    }
    size_t count_at = b->len;
    uint32_t n = 0, n_pruned = 0, n_touched = 0;
    tl_put_u32(b, 0);
    buf *pb = &s->prunebuf, *tb = &s->touchbuf; /* the pruned-only and touched-only items, appended at the end */
    buf_reset(pb);
    buf_reset(tb);
    /* touched-only items go as such when all were touched in one turn */
    int touch_one = t->touch_state == 1 && t->touch_turn <= h.turn;
    /* One walk: a compaction's 100,000 items are as many cache misses.
     * snap_dirty is set, and dirty cleared, here rather than after the
     * write succeeds: a failed write marks the list dirty again (below),
     * and a row written again at the fold is harmless. */
    if (first) {
        for (item *it = t->items; it; it = it->hh.next, n++) {
            tl_put_rec_item(b, it, &h);
            it->snap_dirty = 1;
        }
    } else {
        for (item *it = t->dirty; it; it = it->dirty_next) {
            /* (a pruned turn past the record's, from an import, goes whole) */
            if (it->dirty == ITEM_DIRTY_PRUNED && it->pruned_turn >= 0 && it->pruned_turn <= h.turn) {
                tl_put_pruned(pb, it, h.turn);
                n_pruned++;
            } else if (it->dirty == ITEM_DIRTY_TOUCHED && touch_one) {
                tl_put_touched(tb, it, t->touch_turn);
                n_touched++;
            } else {
                tl_put_rec_item(b, it, &h);
                n++;
            }
            it->snap_dirty = 1;
            it->dirty = 0;
        }
    }
    tl_patch_u32(b, count_at, n);
    tl_put_u32(b, (uint32_t)t->n_deleted);
    for (size_t i = 0; i < t->n_deleted; i++) tl_put_id(b, t->deleted[i], strlen(t->deleted[i]));
    if (n_pruned && !buf_failed(b)) {
        b->p[2] |= TL_REC_PRUNED; /* the header's flags */
        tl_put_u32(b, n_pruned);
        buf_append(b, pb->p, pb->len);
    }
    if (n_touched && !buf_failed(b)) {
        b->p[2] |= TL_REC_TOUCHED;
        tl_put_u32(b, n_touched);
        tl_put_var(b, (uint64_t)(h.turn - t->touch_turn));
        buf_append(b, tb->p, tb->len);
    }
    t->touch_state = 0; /* the list is taken: written, or whole next time */
    int rc = buf_failed(b) || buf_failed(pb) || buf_failed(tb) ? CLARITY_ENOMEM : CLARITY_OK;
    if (rc == CLARITY_OK) rc = put_record(e, s, b, h.seq, first);
    if (rc != CLARITY_OK) {
        if (rc == CLARITY_ENOMEM) buf_free(b), buf_free(pb), buf_free(tb);
        if (!first) /* whole forms next time */
            for (item *it = t->dirty; it; it = it->dirty_next) it->dirty = ITEM_DIRTY;
        return rc;
    }
    if (!first) t->dirty = NULL; /* its items' flags were cleared above */
    /* a compaction's record can be megabytes: not kept for every session */
    if (b->cap > PERSIST_BUF_KEEP) buf_free(b);
    if (pb->cap > PERSIST_BUF_KEEP) buf_free(pb);
    if (tb->cap > PERSIST_BUF_KEEP) buf_free(tb);
    for (size_t i = 0; i < t->n_deleted; i++) s->snap_del[s->n_snap_del++] = t->deleted[i];
    t->n_deleted = 0; /* the ids moved to snap_del */
    s->log_seq = h.seq;
    s->log_writer = 1;
    if (first) s->log_every = (unsigned)e->cfg.storage.snapshot_every; /* with the meta of its empty snapshot */
    return CLARITY_OK;
}

/* Waits (s->mu held) for the worker's chunked fold in progress to end. */
static void wait_fold(session *s)
{
    while (s->folding) pthread_cond_wait(&s->fold_cv, &s->mu);
}

static int flush(engine *e, session *s, int fold, int64_t now)
{
    tracker *t = &s->t;
    /* A chunked fold in progress covers the records up to its seq and
     * deletes the slots of those after fold_from (all the slots, when
     * covered ones may have been left): a fold waits for it, and so does a
     * record that would take one of those slots */
    if (s->folding && (fold || s->log_seq - s->fold_from >= (uint64_t)e->cfg.storage.snapshot_every)) wait_fold(s);
    int changed = t->dirty || t->bulk || t->meta_dirty || t->turn_dirty || t->n_deleted;
    /* a session this process only read is never written, not even folded */
    /* (but a fold that left its slots has them to delete) */
    if (!changed && s->exists_in_store && (!fold || (!s->log_writer && !s->slots_left))) return CLARITY_OK;
    /* records another process wrote are appended to when their slots
     * follow our storage.snapshotEvery, and folded first when not */
    if (foreign_log(e, s) || log_full(e, s)) fold = 1;
    int64_t prev_persist = t->last_persist_ms;
    t->last_persist_ms = now;
    int rc = fold ? write_snapshot(e, s) : write_record(e, s, !s->exists_in_store);
    if (rc != CLARITY_OK) {
        t->last_persist_ms = prev_persist; /* dirty state kept: retried next turn */
        tracker_bulk_spill(t);             /* a bulk prune's items by their ids */
        return rc == CLARITY_ENOMEM || rc == STORE_ECONFLICT ? rc : CLARITY_ESTORE;
    }
    if (s->versioned) s->version++;
    tracker_clear_dirty(t);
    s->exists_in_store = 1;
    return CLARITY_OK;
}

int persist_flush(engine *e, session *s)
{
    int rc = flush(e, s, 0, engine_now_ms(e));
    /* near the most records between snapshots, the worker folds them
     * (between turns: the release queues it); at the full count, the turn
     * does (above) */
    uint64_t every = (uint64_t)e->cfg.storage.snapshot_every;
    if (rc == CLARITY_OK && s->log_seq - s->snap_seq >= every - every / 8) s->fold_wanted = 1;
    return rc;
}

int persist_fold(engine *e, session *s)
{
    return flush(e, s, 1, engine_now_ms(e));
}

/* ---- the worker's fold, in chunks --------------------------------------- */

typedef struct fold_row {
    size_t key, val, vlen; /* offsets into the fold's buffer: "i:<id>" NUL, row bytes */
} fold_row;

/* What a chunked fold writes, taken under the session's mutex. */
typedef struct fold_plan {
    buf bytes; /* keys and rows */
    fold_row *rows;
    size_t n_rows;
    char **del; /* the ids removed since the snapshot (s->snap_del's first n_del) */
    size_t n_del;
    buf meta;         /* the meta of the snapshot at seq */
    uint64_t seq, from; /* it covers records from + 1 .. seq (slots deleted from from + 1) */
    unsigned every;   /* the snapshotEvery those records took their slots by */
    int leave;        /* the covered slots stay (plan_take) */
} fold_plan;

static void plan_free(fold_plan *p)
{
    buf_free(&p->bytes);
    buf_free(&p->meta);
    free(p->rows);
    free(p->del);
}

/* The rows of the items changed since the snapshot, the removed ids and
 * the meta at the last record.  0, or -1 out of memory (nothing changed). */
static int plan_take(engine *e, session *s, fold_plan *p, int may_leave)
{
    memset(p, 0, sizeof *p);
    size_t cap = 0;
    for (item *it = s->t.items; it; it = it->hh.next) {
        if (!it->snap_dirty) continue;
        if (p->n_rows == cap) {
            cap = cap ? 2 * cap : 64;
            fold_row *r = realloc(p->rows, cap * sizeof *r);
            if (!r) return -1;
            p->rows = r;
        }
        fold_row *r = &p->rows[p->n_rows++];
        r->key = p->bytes.len;
        buf_puts(&p->bytes, "i:");
        buf_puts(&p->bytes, it->id);
        buf_putc(&p->bytes, '\0');
        r->val = p->bytes.len;
        tl_put_row(&p->bytes, it);
        r->vlen = p->bytes.len - r->val;
    }
    p->n_del = s->n_snap_del;
    if (p->n_del && !(p->del = malloc(p->n_del * sizeof *p->del))) return -1;
    if (p->n_del) memcpy(p->del, s->snap_del, p->n_del * sizeof *p->del);
    p->seq = s->log_seq;
    p->every = slots_every(e, s);
    /* On a store that reuses slots (store_reuses_slots) the covered slots
     * stay, stale, for the turns to rewrite in place: only in a long log's
     * fold (may_leave; a session's end or eviction leaves no turns to do
     * it), and not when the turns take slots by another snapshotEvery.
     * Slots left stale before go with the rest. */
    p->leave = may_leave && store_reuses_slots(e->st) && p->every == (unsigned)e->cfg.storage.snapshot_every;
    p->from = p->leave ? s->snap_seq : del_from(s);
    meta_json(e, s, p->seq, &p->meta);
    return buf_failed(&p->bytes) || buf_failed(&p->meta) ? -1 : 0;
}

/* The keys of two rows, in the fold's buffer `bytes`. */
static int row_cmp(const void *a, const void *b, void *bytes)
{
    return strcmp((const char *)bytes + ((const fold_row *)a)->key, (const char *)bytes + ((const fold_row *)b)->key);
}

/* The rows in key order, the order a store keeps them in (SQLite's kv
 * table is clustered on its key): each chunk then rewrites a few
 * neighbouring pages.  In the items' order, every chunk of a large
 * session's fold touched pages all over the table, and wrote them all:
 * 10,000 items folded 5,388 WAL pages in 600 dense turns.  Sorted outside
 * the session's mutex (s->mu not held): the plan is the worker's own. */
static void plan_sort(fold_plan *p)
{
    if (p->n_rows > 1) qsort_r(p->rows, p->n_rows, sizeof *p->rows, row_cmp, p->bytes.p);
}

/* Writes the plan (s->mu not held): removals, then rows, chunk rows to a
 * transaction; last, in one, the slots of the records it covers go and
 * the meta makes it the snapshot.  A crash in between leaves rows newer
 * than the meta: harmless, since a record holds its items' whole state,
 * and replaying the records above the meta's seq in order ends where the
 * session was.  The covered slots may stay (p->leave). */
static int plan_write(engine *e, session *s, const fold_plan *p, size_t chunk)
{
    buf key;
    buf_init(&key);
    int rc = CLARITY_OK;
    size_t d = 0, i = 0;
    while (rc == CLARITY_OK && (d < p->n_del || i < p->n_rows)) {
        store_yield(e->st); /* a turn waiting to commit goes between two chunks */
        rc = store_begin(e->st);
        if (rc != CLARITY_OK) break;
        for (size_t k = 0; rc == CLARITY_OK && k < chunk && (d < p->n_del || i < p->n_rows); k++) {
            if (d < p->n_del) rc = del_row(e, s, p->del[d++], &key);
            else rc = store_put(e->st, s->ns, p->bytes.p + p->rows[i].key, p->bytes.p + p->rows[i].val,
                                p->rows[i].vlen), i++;
        }
        if (rc == CLARITY_OK) rc = store_commit(e->st);
        else store_rollback(e->st);
    }
    if (rc == CLARITY_OK) {
        store_yield(e->st);
        rc = store_begin(e->st);
    }
    if (rc == CLARITY_OK) {
        if (!p->leave) rc = del_slots(e, s, p->from, p->seq, p->every);
        if (rc == CLARITY_OK) rc = store_put(e->st, s->ns, "meta", p->meta.p, p->meta.len);
        if (rc == CLARITY_OK) rc = store_commit(e->st);
        else store_rollback(e->st);
    }
    buf_free(&key);
    return rc;
}

int persist_fold_worker(engine *e, session *s, int64_t now)
{
    int may_leave = s->fold_leave; /* a long log's fold (engine.h) */
    s->fold_leave = 0;
    if (s->versioned || !s->exists_in_store || foreign_log(e, s)) return flush(e, s, 1, now);
    /* what the turns changed since the last record goes in one first: the
     * fold covers records only */
    int rc = flush(e, s, 0, now);
    if (rc != CLARITY_OK) return rc;
    if (s->log_seq == s->snap_seq) /* (or that flush folded) */
        return s->slots_left && !may_leave ? flush(e, s, 1, now) : rc; /* an ending session's slots go */
    fold_plan p;
    if (plan_take(e, s, &p, may_leave) != 0) {
        plan_free(&p);
        return flush(e, s, 1, now); /* in one transaction, then */
    }
    for (item *it = s->t.items; it; it = it->hh.next) it->snap_dirty = 0; /* in the plan */
    s->folding = 1;
    s->fold_from = p.from;
    pthread_mutex_unlock(&s->mu);
    plan_sort(&p);
    rc = plan_write(e, s, &p, (size_t)e->cfg.storage.fold_chunk);
    pthread_mutex_lock(&s->mu);
    if (rc == CLARITY_OK) {
        s->stale_slots = s->slots_left = p.leave;
        if (p.n_del) { /* the removals made since stay */
            for (size_t i = 0; i < p.n_del; i++) free(s->snap_del[i]);
            memmove(s->snap_del, s->snap_del + p.n_del, (s->n_snap_del - p.n_del) * sizeof *s->snap_del);
            s->n_snap_del -= p.n_del;
        }
        s->snap_seq = p.seq;
        s->log_every = (unsigned)e->cfg.storage.snapshot_every;
        s->log_writer = s->log_seq > p.seq; /* the records turns wrote meanwhile */
    } else {
        /* the rows written stay harmless; the next fold writes every row */
        for (item *it = s->t.items; it; it = it->hh.next) it->snap_dirty = 1;
    }
    s->folding = 0;
    pthread_cond_broadcast(&s->fold_cv);
    plan_free(&p);
    return rc == CLARITY_ENOMEM || rc == STORE_ECONFLICT || rc == CLARITY_OK ? rc : CLARITY_ESTORE;
}

int persist_erase(engine *e, session *s)
{
    return store_del_ns(e->st, s->ns);
}

static int cmp_item_id(const void *a, const void *b)
{
    return strcmp((*(item *const *)a)->id, (*(item *const *)b)->id);
}

void persist_legacy_json(const session *s, buf *out)
{
    const tracker *t = &s->t;
    item **v = t->count ? malloc(t->count * sizeof *v) : NULL;
    if (t->count && !v) {
        out->oom = 1;
        return;
    }
    size_t n = 0;
    for (item *it = t->items; it; it = it->hh.next) v[n++] = it;
    if (n > 1) qsort(v, n, sizeof *v, cmp_item_id); /* v is NULL without items */
    buf_printf(out, "{\"currentTurn\":%lld,\"lastPersistAt\":%lld,\"items\":[",
               (long long)t->current_turn, (long long)t->last_persist_ms);
    for (size_t i = 0; i < n; i++) {
        const item *it = v[i];
        buf_puts(out, i ? ",{\"id\":" : "{\"id\":");
        buf_json_str(out, it->id, tracker_id_len(it));
        buf_printf(out,
                   ",\"mentionCount\":%lld,\"referenceCount\":%lld,\"lastMentionTurn\":%lld,"
                   "\"anchored\":%s,\"createdAt\":%lld,\"category\":\"%s\",\"tier\":\"%s\","
                   "\"firstSeenTurn\":%lld,\"lastReferenceTurn\":%lld,\"pruned\":%s",
                   (long long)it->mention_count, (long long)it->reference_count,
                   (long long)it->last_mention_turn, it->anchored ? "true" : "false",
                   (long long)it->created_at_ms, tracker_category_name(it->category),
                   tracker_tier_name(it->tier), (long long)it->first_seen_turn,
                   (long long)it->last_reference_turn, it->pruned ? "true" : "false");
        if (it->anchor_reason) {
            buf_puts(out, ",\"anchorReason\":");
            buf_json_str(out, it->anchor_reason, strlen(it->anchor_reason));
        }
        buf_putc(out, '}');
    }
    buf_puts(out, "]}");
    free(v);
}

static char *msg(const char *s)
{
    return strdup(s);
}

int persist_import_legacy(engine *e, session *s, const char *json, char **err)
{
    wait_fold(s); /* it rewrites the whole namespace */
    json_error_t jerr;
    json_t *root = json_loads(json, 0, &jerr);
    if (!json_is_object(root)) {
        json_decref(root);
        *err = msg("state: expected an object {currentTurn, items: [...]}");
        return CLARITY_EINVAL;
    }
    /* Accept the kv envelope {namespace, key, value} as well. */
    json_t *value = json_object_get(root, "value");
    json_t *st = json_is_object(value) ? value : root;
    json_t *items = json_object_get(st, "items");
    json_t *turn = json_object_get(st, "currentTurn");
    if (!json_is_array(items) || (turn && !json_is_number(turn))) {
        json_decref(root);
        *err = msg("state: \"items\" must be an array and \"currentTurn\" a number");
        return CLARITY_EINVAL;
    }
    tracker fresh;
    tracker_init(&fresh, e->cfg.limits.history_length);
    tracker_defer_names(&fresh); /* built by the first reference scan (tracker_names) */
    int rc = CLARITY_OK;
    if (get_num(st, "currentTurn", 0, TRACKER_TURN_MAX, 0, &fresh.current_turn, "state", err) ||
        get_num(st, "lastPersistAt", 0, TRACKER_COUNT_MAX, 0, &fresh.last_persist_ms, "state", err))
        rc = CLARITY_EINVAL;
    size_t i;
    json_t *o;
    json_array_foreach(items, i, o)
    {
        if (rc != CLARITY_OK) break;
        const char *id = json_string_value(json_object_get(o, "id"));
        if (!json_is_object(o) || !id || !*id) {
            char m[96];
            snprintf(m, sizeof m, "state: items[%zu] needs a non-empty string \"id\"", i);
            *err = msg(m);
            rc = CLARITY_EINVAL;
            break;
        }
        item *it = tracker_touch(&fresh, id, tracker_category_of_id(id), 0);
        if (!it) {
            rc = CLARITY_ENOMEM;
            break;
        }
        char where[64];
        snprintf(where, sizeof where, "state: items[%zu]", i);
        if (item_from_json(&fresh, it, o, where, err) != 0) rc = CLARITY_EINVAL;
    }
    json_decref(root);
    if (rc != CLARITY_OK) {
        tracker_free(&fresh);
        return rc;
    }
    /* Swap in, then write everything in one transaction; restore on failure. */
    tracker old = s->t;
    s->t = fresh;
    for (item *it = s->t.items; it; it = it->hh.next) tracker_mark_dirty(&s->t, it);
    s->t.meta_dirty = 1;
    rc = store_begin(e->st);
    int began = rc == CLARITY_OK;
    if (rc == CLARITY_OK) rc = persist_erase(e, s);
    if (rc == CLARITY_OK) {
        /* Written here rather than by persist_flush so that the erase and
         * the new state share one transaction. */
        buf b, key;
        buf_init(&b);
        buf_init(&key);
        for (item *it = s->t.dirty; rc == CLARITY_OK && it; it = it->dirty_next)
            rc = put_row(e, s, it, &b, &key);
        if (rc == CLARITY_OK) rc = put_meta(e, s, &b);
        buf_free(&b);
        buf_free(&key);
    }
    if (rc == CLARITY_OK) rc = fence(e, s);
    if (rc == CLARITY_OK) rc = store_commit(e->st);
    else if (began) store_rollback(e->st);
    if (rc != CLARITY_OK) {
        tracker_free(&s->t);
        s->t = old;
        *err = msg(rc == STORE_ECONFLICT ? "state: another process changed the session meanwhile; "
                                           "import again"
                                         : "state: could not be written to the store");
        return CLARITY_ESTORE;
    }
    if (s->versioned) s->version++;
    tracker_free(&old);
    tracker_clear_dirty(&s->t);
    /* the erase took the turn log with it: the snapshot is all there is */
    for (size_t k = 0; k < s->n_snap_del; k++) free(s->snap_del[k]);
    s->n_snap_del = 0;
    s->snap_seq = s->log_seq;
    s->exists_in_store = 1;
    return CLARITY_OK;
}
