/* persist.c: a session's state in the kv store.
 *
 * Namespace "clarity:s:<session>"; key "meta" holds
 * {"v":1,"currentTurn","lastPersistAt","workspace"}; key "i:<item id>" holds
 * one item as compact JSON.  A turn writes only the items it changed, the
 * ids it evicted and the meta record, in one transaction, so after a crash
 * the store holds exactly the turns whose agent_end returned.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

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

static int64_t jint(json_t *o, const char *k, int64_t def)
{
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
    if (json_is_real(v)) return (int64_t)json_real_value(v);
    if (json_is_boolean(v)) return json_is_true(v);
    return def;
}

/* Fills an item's fields from our stored form or the legacy form. */
static void item_from_json(tracker *t, item *it, json_t *o)
{
    int cat = (int)jint(o, "cat", -1);
    if (cat < 0 || cat >= CAT__COUNT) {
        cat = tracker_category_from_name(json_string_value(json_object_get(o, "category")));
        if (cat < 0) cat = tracker_category_of_id(it->id);
    }
    it->category = (int8_t)cat;
    int tier = (int)jint(o, "tier", -1);
    if (tier < 0 || tier >= TIER__COUNT) {
        json_t *tv = json_object_get(o, "tier");
        tier = json_is_string(tv) ? tracker_tier_from_name(json_string_value(tv)) : -1;
        if (tier < 0) tier = TIER_NORMAL;
    }
    it->tier = (int8_t)tier;
    it->mention_count = jint(o, "m", jint(o, "mentionCount", 0));
    it->reference_count = jint(o, "r", jint(o, "referenceCount", 0));
    it->last_mention_turn = jint(o, "lm", jint(o, "lastMentionTurn", 0));
    it->first_seen_turn = jint(o, "f", jint(o, "firstSeenTurn", it->last_mention_turn));
    it->last_reference_turn = jint(o, "lr", jint(o, "lastReferenceTurn", -1));
    it->anchored = jint(o, "a", jint(o, "anchored", 0)) != 0;
    it->anchor_at_ms = jint(o, "at", jint(o, "anchorSetAt", 0));
    it->pruned = jint(o, "p", jint(o, "pruned", 0)) != 0;
    it->pruned_turn = jint(o, "pt", -1);
    it->created_at_ms = jint(o, "c", jint(o, "createdAt", 0));
    if (it->mention_count < 0) it->mention_count = 0;
    if (it->reference_count < 0) it->reference_count = 0;
    const char *ar = json_string_value(json_object_get(o, "ar"));
    if (!ar) ar = json_string_value(json_object_get(o, "anchorReason"));
    free(it->anchor_reason);
    it->anchor_reason = ar ? strdup(ar) : NULL;
    it->hist_len = it->hist_head = 0;
    json_t *h = json_object_get(o, "h");
    if (!h) h = json_object_get(o, "mentionHistory");
    size_t i;
    json_t *v;
    json_array_foreach(h, i, v)
    {
        if (json_is_integer(v)) tracker_history_push(t, it, (int64_t)json_integer_value(v));
    }
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
    item *it = tracker_touch(&c->s->t, key + 2, CAT_PROJECT, 0);
    if (!it) {
        json_decref(o);
        c->rc = CLARITY_ENOMEM;
        return 1;
    }
    item_from_json(&c->s->t, it, o);
    json_decref(o);
    return 0;
}

int persist_load(engine *e, session *s)
{
    char *val = NULL;
    size_t len = 0;
    int rc = store_get(e->st, s->ns, "meta", &val, &len);
    if (rc == CLARITY_ENOTFOUND) {
        s->exists_in_store = 0;
        return CLARITY_OK;
    }
    if (rc != CLARITY_OK) return rc;
    json_error_t jerr;
    json_t *meta = json_loadb(val, len, 0, &jerr);
    free(val);
    tracker_free(&s->t);
    tracker_init(&s->t, e->cfg.limits.history_length);
    if (json_is_object(meta)) {
        s->t.current_turn = jint(meta, "currentTurn", 0);
        s->t.last_persist_ms = jint(meta, "lastPersistAt", 0);
        const char *ws = json_string_value(json_object_get(meta, "workspace"));
        free(s->workspace);
        s->workspace = ws ? strdup(ws) : NULL;
    }
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
    if (rc == CLARITY_OK) rc = store_commit(e->st);
    else if (began) store_rollback(e->st);
    buf_free(&b);
    buf_free(&key);
    if (rc != CLARITY_OK) {
        t->last_persist_ms = prev_persist; /* dirty state kept: retried next turn */
        return rc == CLARITY_ENOMEM ? rc : CLARITY_ESTORE;
    }
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
    fresh.current_turn = jint(st, "currentTurn", 0);
    fresh.last_persist_ms = jint(st, "lastPersistAt", 0);
    size_t i;
    json_t *o;
    int rc = CLARITY_OK;
    json_array_foreach(items, i, o)
    {
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
        item_from_json(&fresh, it, o);
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
    if (rc == CLARITY_OK) rc = store_commit(e->st);
    else if (began) store_rollback(e->st);
    if (rc != CLARITY_OK) {
        tracker_free(&s->t);
        s->t = old;
        *err = msg("state: could not be written to the store");
        return CLARITY_ESTORE;
    }
    tracker_free(&old);
    tracker_clear_dirty(&s->t);
    s->exists_in_store = 1;
    return CLARITY_OK;
}
