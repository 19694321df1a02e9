/* persist.c: a session's state in the kv store.
 *
 * Namespace "clarity:s:<session>"; key "meta" holds
 * {"v":1,"currentTurn","lastPersistAt","workspace"}; key "i:<item id>" holds
 * one item as compact JSON.  A turn writes only the items it changed, the
 * ids it evicted and the meta record, in one transaction, so after a crash
 * the store holds exactly the turns whose agent_end returned.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "compact.h"
#include "progress.h"

#define PERSIST_VERSION 1

static void field(buf *out, const char *key, long long v)
{
    buf_puts(out, key);
    buf_put_i64(out, v);
}

void persist_item_json(const item *it, buf *out)
{
    field(out, "{\"cat\":", it->category);
    field(out, ",\"tier\":", it->tier);
    field(out, ",\"m\":", (long long)it->mention_count);
    field(out, ",\"r\":", (long long)it->reference_count);
    field(out, ",\"f\":", (long long)it->first_seen_turn);
    field(out, ",\"lm\":", (long long)it->last_mention_turn);
    field(out, ",\"lr\":", (long long)it->last_reference_turn);
    field(out, ",\"a\":", it->anchored);
    field(out, ",\"at\":", (long long)it->anchor_at_ms);
    field(out, ",\"p\":", it->pruned);
    field(out, ",\"pt\":", (long long)it->pruned_turn);
    field(out, ",\"c\":", (long long)it->created_at_ms);
    if (it->anchor_reason) {
        buf_puts(out, ",\"ar\":");
        buf_json_str(out, it->anchor_reason, strlen(it->anchor_reason));
    }
    int64_t h[ITEM_HISTORY_MAX];
    size_t n = tracker_history(it, h, ITEM_HISTORY_MAX);
    buf_puts(out, ",\"h\":[");
    /* oldest first, so a reload can push them back in order */
    for (size_t i = 0; i < n; i++) {
        if (i) buf_putc(out, ',');
        buf_put_i64(out, (long long)h[n - 1 - i]);
    }
    buf_puts(out, "]}");
}

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
} load_ctx;

static int load_item(void *ud, const char *key, const char *val, size_t len)
{
    load_ctx *c = ud;
    json_error_t jerr;
    json_t *o = json_loadb(val, len, 0, &jerr);
    if (!json_is_object(o)) {
        engine_log(c->e, CLARITY_LOG_WARN, "clarity: session %s: skipping unreadable item %s",
                   c->s->id, key);
        json_decref(o);
        return 0;
    }
    if (tracker_find(&c->s->t, key + 2)) { /* cannot happen in a kv store: keys are unique */
        json_decref(o);
        return 0;
    }
    item *it = tracker_touch(&c->s->t, key + 2, CAT_PROJECT, 0);
    if (!it) {
        json_decref(o);
        c->rc = CLARITY_ENOMEM;
        return 1;
    }
    char where[300], *err = NULL;
    snprintf(where, sizeof where, "session %.100s: stored item %.150s", c->s->id, key);
    if (item_from_json(&c->s->t, it, o, where, &err) != 0) {
        /* a corrupted or hand-edited row is never trusted: left out, and
         * left in the store as it is */
        engine_log(c->e, CLARITY_LOG_ERROR, "clarity: %s; the item is left out", err ? err : where);
        tracker_discard(&c->s->t, it);
    }
    free(err);
    json_decref(o);
    return 0;
}

int persist_load(engine *e, session *s)
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
        if (s->exists_in_store) { /* erased by another process since */
            tracker_free(&s->t);
            tracker_init(&s->t, e->cfg.limits.history_length);
        }
        s->exists_in_store = 0;
        return CLARITY_OK;
    }
    if (rc != CLARITY_OK) return rc;
    json_error_t jerr;
    json_t *meta = json_loadb(val, len, 0, &jerr);
    free(val);
    tracker_free(&s->t);
    tracker_init(&s->t, e->cfg.limits.history_length);
    char where[200], *err = NULL;
    snprintf(where, sizeof where, "session %.100s: stored meta", s->id);
    int64_t turn = 0, persisted = 0;
    if (!json_is_object(meta) ||
        get_num(meta, "currentTurn", 0, TRACKER_TURN_MAX, 0, &turn, where, &err) ||
        get_num(meta, "lastPersistAt", 0, TRACKER_COUNT_MAX, 0, &persisted, where, &err)) {
        /* the session's turn cannot be trusted: the session is refused */
        engine_log(e, CLARITY_LOG_ERROR, "clarity: %s", err ? err : "session: unreadable stored meta");
        free(err);
        json_decref(meta);
        return CLARITY_ESTORE;
    }
    s->t.current_turn = turn;
    s->t.last_persist_ms = persisted;
    size_t ki;
    json_t *kv;
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
    json_decref(meta);
    load_ctx c = {e, s, CLARITY_OK};
    rc = store_iter(e->st, s->ns, "i:", load_item, &c);
    if (rc == CLARITY_OK) rc = c.rc;
    if (rc != CLARITY_OK) {
        tracker_free(&s->t);
        tracker_init(&s->t, e->cfg.limits.history_length);
        return rc;
    }
    tracker_rebuild_names(&s->t); /* categories were set after insertion */
    tracker_clear_dirty(&s->t);
    s->exists_in_store = 1;
    return CLARITY_OK;
}

static int put_meta(engine *e, session *s, buf *b)
{
    buf_reset(b);
    buf_printf(b, "{\"v\":%d,\"currentTurn\":%lld,\"lastPersistAt\":%lld,\"workspace\":",
               PERSIST_VERSION, (long long)s->t.current_turn, (long long)s->t.last_persist_ms);
    if (s->workspace) buf_json_str(b, s->workspace, strlen(s->workspace));
    else buf_puts(b, "null");
    size_t n = s->t.n_turn_keys < TRACKER_TURN_KEYS ? s->t.n_turn_keys : TRACKER_TURN_KEYS;
    if (n) { /* oldest first, as hex: JSON numbers would lose bits */
        buf_puts(b, ",\"turnKeys\":[");
        for (size_t i = 0; i < n; i++) {
            size_t k = (s->t.n_turn_keys - n + i) % TRACKER_TURN_KEYS;
            buf_printf(b, "%s\"%016llx\"", i ? "," : "", (unsigned long long)s->t.turn_keys[k]);
        }
        buf_putc(b, ']');
    }
    if (s->n_reinject) {
        buf_puts(b, ",\"reinject\":{\"ids\":[");
        for (size_t i = 0; i < s->n_reinject; i++) {
            if (i) buf_putc(b, ',');
            buf_json_str(b, s->reinject[i], strlen(s->reinject[i]));
        }
        buf_printf(b, "],\"shown\":%s}", s->reinject_shown ? "true" : "false");
    }
    if (s->progress) {
        buf_puts(b, ",\"progress\":");
        progress_json(s, 0, b);
    }
    buf_putc(b, '}');
    if (buf_failed(b)) return CLARITY_ENOMEM;
    return store_put(e->st, s->ns, "meta", b->p, b->len);
}

static int put_item(engine *e, session *s, const item *it, buf *b, buf *key)
{
    buf_reset(b);
    buf_reset(key);
    persist_item_json(it, b);
    buf_puts(key, "i:");
    buf_puts(key, it->id);
    if (buf_failed(b) || buf_failed(key)) return CLARITY_ENOMEM;
    return store_put(e->st, s->ns, key->p, b->p, b->len);
}

/* In a shared store, the commit holds only while nobody else committed
 * the session since we loaded it. */
static int fence(engine *e, session *s)
{
    if (!s->versioned) return CLARITY_OK;
    return store_fence(e->st, s->ns, s->version, s->version + 1);
}

int persist_flush(engine *e, session *s)
{
    tracker *t = &s->t;
    if (!t->dirty && !t->meta_dirty && t->n_deleted == 0 && s->exists_in_store) return CLARITY_OK;
    buf b, key;
    buf_init(&b);
    buf_init(&key);
    int64_t prev_persist = t->last_persist_ms;
    t->last_persist_ms = engine_now_ms(e);
    int rc = store_begin(e->st);
    int began = rc == CLARITY_OK;
    for (item *it = t->dirty; rc == CLARITY_OK && it; it = it->dirty_next)
        rc = put_item(e, s, it, &b, &key);
    for (size_t i = 0; rc == CLARITY_OK && i < t->n_deleted; i++) {
        buf_reset(&key);
        buf_puts(&key, "i:");
        buf_puts(&key, t->deleted[i]);
        rc = buf_failed(&key) ? CLARITY_ENOMEM : store_del(e->st, s->ns, key.p);
    }
    if (rc == CLARITY_OK) rc = put_meta(e, s, &b);
    if (rc == CLARITY_OK) rc = fence(e, s);
    if (rc == CLARITY_OK) rc = store_commit(e->st);
    else if (began) store_rollback(e->st);
    buf_free(&b);
    buf_free(&key);
    if (rc != CLARITY_OK) {
        t->last_persist_ms = prev_persist; /* dirty state kept: retried next turn */
        return rc == CLARITY_ENOMEM || rc == STORE_ECONFLICT ? rc : CLARITY_ESTORE;
    }
    if (s->versioned) s->version++;
    tracker_clear_dirty(t);
    s->exists_in_store = 1;
    return CLARITY_OK;
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
    qsort(v, n, sizeof *v, cmp_item_id);
    buf_printf(out, "{\"currentTurn\":%lld,\"lastPersistAt\":%lld,\"items\":[",
               (long long)t->current_turn, (long long)t->last_persist_ms);
    for (size_t i = 0; i < n; i++) {
        const item *it = v[i];
        buf_puts(out, i ? ",{\"id\":" : "{\"id\":");
        buf_json_str(out, it->id, strlen(it->id));
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
    tracker_rebuild_names(&fresh);
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
            rc = put_item(e, s, it, &b, &key);
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
    s->exists_in_store = 1;
    return CLARITY_OK;
}
