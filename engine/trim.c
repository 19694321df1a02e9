/* trim.c: an oversized tool output cut to toolOutput.maxChars before the
 * model sees it (Claude Code's PostToolUse can replace an output).
 *
 * Kept: the first headLines and last tailLines lines (each within 40 % of
 * the budget), then every line between them that names a hot item (tracked,
 * not pruned, anchored or scoring at least pruning.pruneThreshold), in
 * order, while the budget lasts.  Each run of elided lines becomes one
 * marker line, and a last line says what was kept and why, so the model
 * knows the output is partial and how to see the rest.  A line longer than
 * a twentieth of the budget is cut too.  Matching is case-insensitive
 * substring search of the items' names (a file also by its base name):
 * lines rarely say an item's id, and a hook must stay fast on megabytes.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trim.h"

typedef struct needle {
    char *s; /* lower case */
    size_t n;
} needle;

typedef struct span {
    size_t off, len;
} span;

static void needles_free(needle *v, size_t n)
{
    for (size_t i = 0; i < n; i++) free(v[i].s);
    free(v);
}

static int needle_add(needle **v, size_t *n, size_t *cap, const char *s, size_t len)
{
    if (len < 3) return 0; /* "a", "io": everywhere */
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        needle *nv = realloc(*v, c * sizeof *nv);
        if (!nv) return -1;
        *v = nv;
        *cap = c;
    }
    char *p = malloc(len + 1);
    if (!p) return -1;
    for (size_t i = 0; i < len; i++) p[i] = (char)tolower((unsigned char)s[i]);
    p[len] = 0;
    (*v)[(*n)++] = (needle){p, len};
    return 0;
}

/* The names of the session's hot items. */
static int hot_needles(engine *e, session *s, needle **out, size_t *n_out)
{
    needle *v = NULL;
    size_t n = 0, cap = 0;
    *out = NULL;
    *n_out = 0;
    if (!s) return CLARITY_OK;
    for (item *it = s->t.items; it; it = it->hh.next) {
        if (it->pruned) continue;
        score_breakdown b;
        engine_score(e, s, it, s->t.current_turn, &b);
        if (!it->anchored && b.score < e->cfg.pruning.prune_threshold) continue;
        int cat = tracker_category_of_id(it->id);
        const char *name = it->id, *colon = strchr(it->id, ':');
        if (cat != CAT_PROJECT && colon) name = colon + 1;
        if (needle_add(&v, &n, &cap, name, strlen(name)) != 0) goto oom;
        const char *base = cat == CAT_FILE ? strrchr(name, '/') : NULL;
        if (base && strlen(base + 1) >= 5 && strchr(base + 1, '.') &&
            needle_add(&v, &n, &cap, base + 1, strlen(base + 1)) != 0)
            goto oom;
    }
    *out = v;
    *n_out = n;
    return CLARITY_OK;
oom:
    needles_free(v, n);
    return CLARITY_ENOMEM;
}

/* Marks the lines (by index) of lower that contain a needle. */
static void mark_hot(const char *lower, const span *lines, size_t nl, const needle *nd, size_t nn,
                     unsigned char *hot)
{
    size_t len = nl ? lines[nl - 1].off + lines[nl - 1].len : 0;
    for (size_t k = 0; k < nn; k++) {
        size_t line = 0, at = 0;
        while (at < len) {
            const char *p = memmem(lower + at, len - at, nd[k].s, nd[k].n);
            if (!p) break;
            size_t off = (size_t)(p - lower);
            while (line + 1 < nl && lines[line + 1].off <= off) line++; /* lines are sorted */
            hot[line] = 1;
            at = line + 1 < nl ? lines[line + 1].off : len; /* next line */
        }
    }
}

/* The lines of text, without their newlines. */
static span *split_lines(const char *text, size_t len, size_t *n)
{
    size_t cap = 64, k = 0;
    span *v = malloc(cap * sizeof *v);
    if (!v) return NULL;
    size_t start = 0;
    while (start < len || (start == len && k == 0)) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - text) : len;
        if (k == cap) {
            span *nv = realloc(v, (cap *= 2) * sizeof *nv);
            if (!nv) {
                free(v);
                return NULL;
            }
            v = nv;
        }
        v[k++] = (span){start, end - start};
        start = end + 1;
        if (!nl) break;
    }
    *n = k;
    return v;
}

static size_t kept_len(const span *l, size_t cap) { return (l->len < cap ? l->len : cap) + 1; }

static void put_line(const char *text, const span *l, size_t cap, buf *out)
{
    if (l->len <= cap) {
        buf_append(out, text + l->off, l->len);
    } else {
        size_t k = cap;
        while (k > 0 && ((unsigned char)text[l->off + k] & 0xC0) == 0x80) k--; /* UTF-8 */
        buf_append(out, text + l->off, k);
        buf_printf(out, " [clarity: %zu more characters of this line elided]", l->len - k);
    }
    buf_putc(out, '\n');
}

static void put_gap(size_t lines, size_t chars, buf *out)
{
    buf_printf(out, "[clarity: %zu line%s elided (%zu characters)]\n", lines, lines == 1 ? "" : "s",
               chars);
}

int trim_text(engine *e, session *s, const char *text, size_t len, size_t max_chars, buf *out,
              trim_stats *st)
{
    memset(st, 0, sizeof *st);
    if (len <= max_chars) return 0;
    size_t nl;
    span *lines = split_lines(text, len, &nl);
    unsigned char *keep = lines ? calloc(nl, 1) : NULL;
    unsigned char *hot = lines ? calloc(nl, 1) : NULL;
    char *lower = malloc(len + 1);
    needle *nd = NULL;
    size_t nn = 0;
    int rc = lines && keep && hot && lower ? hot_needles(e, s, &nd, &nn) : CLARITY_ENOMEM;
    if (rc != CLARITY_OK) goto done;
    for (size_t i = 0; i < len; i++) lower[i] = (char)tolower((unsigned char)text[i]);
    mark_hot(lower, lines, nl, nd, nn, hot);

    /* the markers and the summary line fit in TRIM_RESERVE bytes */
    size_t room = max_chars > TRIM_RESERVE ? max_chars - TRIM_RESERVE : 0;
    size_t cap = room / 20 > 200 ? room / 20 : 200, used = 0, part = room * 2 / 5;
    size_t head = 0, tail = 0;
    const clarity_config *c = &e->cfg;
    for (size_t i = 0; i < nl && head < (size_t)c->tool_output.head_lines; i++) {
        if (used + kept_len(&lines[i], cap) > part) break;
        used += kept_len(&lines[i], cap);
        keep[i] = 1;
        head++;
    }
    size_t tail_used = 0;
    for (size_t i = nl; i-- > head && tail < (size_t)c->tool_output.tail_lines;) {
        if (tail_used + kept_len(&lines[i], cap) > part) break;
        tail_used += kept_len(&lines[i], cap);
        keep[i] = 1;
        tail++;
    }
    used += tail_used;
    /* a hot line may open one more gap: its marker is counted with it */
    for (size_t i = head; i < nl - tail; i++) {
        if (!hot[i]) continue;
        size_t need = kept_len(&lines[i], cap) + TRIM_GAP_MAX;
        if (used + need > room) break;
        used += need;
        keep[i] = 1;
        st->hot_lines++;
    }
    for (size_t i = 0; i < nl;) {
        if (keep[i]) {
            put_line(text, &lines[i], cap, out);
            st->lines_after++;
            i++;
            continue;
        }
        size_t j = i, chars = 0;
        while (j < nl && !keep[j]) chars += lines[j++].len + 1;
        put_gap(j - i, chars, out);
        st->lines_elided += j - i;
        i = j;
    }
    st->lines_before = nl;
    st->head_lines = head;
    st->tail_lines = tail;
    buf_printf(out,
               "[clarity: %zu of %zu lines kept (the first %zu, the last %zu, %zu naming items "
               "this session works on), cut to %zu characters (toolOutput.maxChars). Narrow the "
               "command to see the rest]\n",
               st->lines_after, nl, head, tail, st->hot_lines, max_chars);
    rc = buf_failed(out) ? CLARITY_ENOMEM : 1;
done:
    needles_free(nd, nn);
    free(lower);
    free(hot);
    free(keep);
    free(lines);
    return rc;
}

/* Splits max_chars over fields of the given sizes (water-filling: a field
 * smaller than its share keeps its size, the rest share what is left). */
void trim_budgets(const size_t *sizes, size_t n, size_t max_chars, size_t *budget)
{
    size_t left = max_chars, open = n;
    unsigned char done[TRIM_MAX_FIELDS] = {0};
    for (size_t round = 0; round < n && open; round++) {
        size_t share = left / open, progressed = 0;
        for (size_t i = 0; i < n; i++) {
            if (done[i] || sizes[i] > share) continue;
            budget[i] = sizes[i];
            left -= sizes[i];
            done[i] = 1;
            open--;
            progressed = 1;
        }
        if (!progressed) break;
    }
    for (size_t i = 0; i < n; i++)
        if (!done[i]) budget[i] = open ? left / open : 0;
}
