/* compact.c: clarity around a host's compaction.
 *
 * Before it: the keep list, the items a summary must not lose (anchored
 * first, then by score), one line each, for the summarizer's instructions.
 * After it: the kept items the summary does not name are re-injected once,
 * in the next [CLARITY CONTEXT] block, so that what mattered survives a
 * summary that forgot it.  The list waits in the session's meta (hosts such
 * as Claude Code run each hook in a new process).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "compact.h"
#include "../scorer/rank.h"

typedef struct kept {
    item *it;
    double score;
} kept;

/* v[0..n) in the score order; 0 or -1 without memory. */
static int rank_kept(kept *v, size_t n)
{
    if (n < 2) return 0;
    rank_ent *r = malloc(n * sizeof *r);
    if (!r) return -1;
    for (size_t i = 0; i < n; i++) rank_set(&r[i], v[i].it->id, v[i].score, i);
    rank_sort(r, n);
    int rc = rank_apply(v, n, sizeof *v, r);
    free(r);
    return rc;
}

/* The keep list: unpruned items scoring above 0, anchored first, at most
 * max.  *out is malloc()ed (NULL when empty). */
static int keep_list(engine *e, session *s, size_t max, kept **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (max == 0 || s->t.count == 0) return CLARITY_OK;
    kept *v = malloc(s->t.count * sizeof *v);
    if (!v) return CLARITY_ENOMEM;
    /* anchored items first (from the front), the others from the back */
    size_t k = 0, back = s->t.count;
    for (item *it = s->t.items; it; it = it->hh.next) {
        if (it->pruned) continue;
        score_breakdown b;
        engine_score(e, s, it, s->t.current_turn, &b);
        if (b.score <= 0 && !it->anchored) continue;
        if (it->anchored) v[k++] = (kept){it, b.score};
        else v[--back] = (kept){it, b.score};
    }
    size_t rest = s->t.count - back;
    memmove(v + k, v + back, rest * sizeof *v);
    if (rank_kept(v, k) != 0 || rank_kept(v + k, rest) != 0) {
        free(v);
        return CLARITY_ENOMEM;
    }
    k += rest;
    *out = v;
    *n = k < max ? k : max;
    return CLARITY_OK;
}

int compact_keep_json(engine *e, session *s, size_t max, buf *out)
{
    kept *v;
    size_t n;
    int rc = keep_list(e, s, max, &v, &n);
    if (rc != CLARITY_OK) return rc;
    buf_puts(out, "{\"session\":");
    buf_json_str(out, s->id, strlen(s->id));
    buf_puts(out, ",\"items\":[");
    for (size_t i = 0; i < n; i++) {
        buf_puts(out, i ? ",{\"id\":" : "{\"id\":");
        buf_json_str(out, v[i].it->id, strlen(v[i].it->id));
        buf_printf(out, ",\"score\":%.4f,\"anchored\":%s}", v[i].score,
                   v[i].it->anchored ? "true" : "false");
    }
    buf_puts(out, "],\"text\":");
    buf text;
    buf_init(&text);
    if (n) {
        buf_puts(&text, COMPACT_KEEP_HEAD "\n");
        for (size_t i = 0; i < n; i++)
            buf_printf(&text, "- %s%s\n", v[i].it->id, v[i].it->anchored ? " (anchored)" : "");
    }
    buf_json_str(out, text.p ? text.p : "", text.len);
    buf_free(&text);
    buf_putc(out, '}');
    free(v);
    return buf_failed(out) ? CLARITY_ENOMEM : CLARITY_OK;
}

/* Case-insensitive search of needle (n bytes) in hay. */
static int contains(const char *hay, size_t len, const char *needle, size_t n)
{
    if (n == 0 || n > len) return 0;
    for (size_t i = 0; i + n <= len; i++) {
        if (tolower((unsigned char)hay[i]) != tolower((unsigned char)needle[0])) continue;
        size_t j = 1;
        while (j < n && tolower((unsigned char)hay[i + j]) == tolower((unsigned char)needle[j])) j++;
        if (j == n) return 1;
    }
    return 0;
}

/* Whether a summary names an item: its name without the category prefix,
 * for a file also its base name (a summary says "session.ts"). */
static int named(const char *summary, size_t len, const char *id)
{
    const char *name = id;
    int cat = tracker_category_of_id(id);
    if (cat != CAT_PROJECT) {
        const char *colon = strchr(id, ':');
        name = colon ? colon + 1 : id;
    }
    if (contains(summary, len, name, strlen(name))) return 1;
    if (cat == CAT_FILE) {
        const char *base = strrchr(name, '/');
        if (base && contains(summary, len, base + 1, strlen(base + 1))) return 1;
    }
    /* keywords and projects are often written with spaces or dashes */
    if (strchr(name, '_') || strchr(name, '-')) {
        char alt[256];
        size_t n = strlen(name) < sizeof alt - 1 ? strlen(name) : sizeof alt - 1;
        for (size_t i = 0; i < n; i++) alt[i] = name[i] == '_' || name[i] == '-' ? ' ' : name[i];
        alt[n] = 0;
        if (contains(summary, len, alt, n)) return 1;
    }
    return 0;
}

void compact_reinject_clear(session *s)
{
    s->reinject_shown = 0;
    for (size_t i = 0; i < s->n_reinject; i++) free(s->reinject[i]);
    free(s->reinject);
    s->reinject = NULL;
    s->n_reinject = 0;
}

int compact_reinject_add(session *s, const char *id)
{
    if (s->n_reinject >= COMPACT_KEEP_MAX || strlen(id) > 512) return CLARITY_EINVAL;
    char **v = realloc(s->reinject, (s->n_reinject + 1) * sizeof *v);
    if (!v) return CLARITY_ENOMEM;
    s->reinject = v;
    if (!(v[s->n_reinject] = strdup(id))) return CLARITY_ENOMEM;
    s->n_reinject++;
    return CLARITY_OK;
}

int compact_after(engine *e, session *s, const char *summary, size_t len, size_t max, buf *out)
{
    kept *v;
    size_t n;
    int rc = keep_list(e, s, max, &v, &n);
    if (rc != CLARITY_OK) return rc;
    compact_reinject_clear(s);
    s->reinject_shown = 0;
    buf_puts(out, "{\"session\":");
    buf_json_str(out, s->id, strlen(s->id));
    buf_puts(out, ",\"kept\":[");
    size_t nk = 0;
    for (size_t i = 0; i < n; i++) {
        if (!named(summary, len, v[i].it->id)) continue;
        buf_puts(out, nk++ ? "," : "");
        buf_json_str(out, v[i].it->id, strlen(v[i].it->id));
    }
    buf_puts(out, "],\"lost\":[");
    for (size_t i = 0; i < n && rc == CLARITY_OK; i++) {
        if (named(summary, len, v[i].it->id)) continue;
        buf_puts(out, s->n_reinject ? "," : "");
        buf_json_str(out, v[i].it->id, strlen(v[i].it->id));
        rc = compact_reinject_add(s, v[i].it->id);
    }
    buf_puts(out, "]}");
    free(v);
    s->t.meta_dirty = 1;
    if (rc != CLARITY_OK) compact_reinject_clear(s);
    return rc != CLARITY_OK ? rc : buf_failed(out) ? CLARITY_ENOMEM : CLARITY_OK;
}

size_t compact_block_lines(engine *e, session *s, size_t budget, buf *out)
{
    if (s->n_reinject == 0) return 0;
    size_t start = out->len;
    buf_puts(out, COMPACT_LOST_HEAD "\n");
    for (size_t i = 0; i < s->n_reinject; i++) {
        item *it = tracker_find(&s->t, s->reinject[i]);
        if (!it || it->pruned) continue;
        size_t before = out->len;
        int64_t last = it->last_reference_turn > it->last_mention_turn ? it->last_reference_turn
                                                                        : it->last_mention_turn;
        buf_printf(out, "- %s (%lld mention(s), %lld use(s), last in turn %lld)\n", it->id,
                   (long long)it->mention_count, (long long)it->reference_count, (long long)last);
        if (out->len - start > budget) {
            out->len = before;
            break;
        }
    }
    if (out->len - start == sizeof(COMPACT_LOST_HEAD)) out->len = start; /* all gone since */
    (void)e;
    return out->len - start;
}
