/* evalbudget.c: evidence recall under a token budget (see evalbudget.h). */
#include "evalbudget.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/tokens.h"

const char *const eb_policy_names[EB_NPOL] = {"clarity", "recency", "fresh_tail"};

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 32;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * size);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static char *lower_copy(const clarity_ctx_message *m, size_t *len)
{
    size_t a = m->text ? m->text_len : 0, b = m->tool_args_json ? strlen(m->tool_args_json) : 0;
    char *s = malloc(a + b + 2);
    if (!s) return NULL;
    for (size_t i = 0; i < a; i++) s[i] = (char)tolower((unsigned char)m->text[i]);
    s[a] = '\n';
    for (size_t i = 0; i < b; i++) s[a + 1 + i] = (char)tolower((unsigned char)m->tool_args_json[i]);
    s[a + b + 1] = '\0';
    *len = a + b + 1;
    return s;
}

/* Copies the messages not seen before. */
static int add_messages(eb_session *s, const clarity_ctx_message *msgs, size_t n)
{
    if (grow((void **)&s->m, &s->capm, n, sizeof *s->m)) return -1;
    for (size_t i = s->nm; i < n; i++) {
        const clarity_ctx_message *m = &msgs[i];
        eb_msg *x = &s->m[i];
        x->tokens = util_estimate_tokens(m->text ? m->text : "", m->text ? m->text_len : 0) +
                    (m->tool_args_json ? util_estimate_tokens(m->tool_args_json, strlen(m->tool_args_json)) : 0);
        x->user = strcmp(m->role, "user") == 0;
        int opens = x->user || (strcmp(m->role, "assistant") == 0 && i > 0 && strcmp(msgs[i - 1].role, "tool") == 0);
        x->step = (i ? s->m[i - 1].step : 0) + opens;
        if (!(x->low = lower_copy(m, &x->len))) return -1;
        s->nm = i + 1;
    }
    return 0;
}

/* The newest messages that fit, after the forced ones (kept[] set). */
static int64_t fill_newest(const eb_session *s, size_t n, int64_t budget, uint8_t *kept)
{
    int64_t used = 0;
    for (size_t i = 0; i < n; i++) used += kept[i] ? s->m[i].tokens : 0;
    for (size_t i = n; i-- > 0;) {
        if (kept[i]) continue;
        if (used + s->m[i].tokens > budget) break;
        kept[i] = 1;
        used += s->m[i].tokens;
    }
    return used;
}

static void baselines(eb_session *s, eb_turn *t, int64_t budget)
{
    size_t n = t->n;
    for (size_t i = 0; i < n; i++) t->kept[EB_RECENCY][i] = s->m[i].user;
    t->after[EB_RECENCY] = budget > 0 ? fill_newest(s, n, budget, t->kept[EB_RECENCY]) : t->full;
    int64_t last = n ? s->m[n - 1].step : 0;
    for (size_t i = 0; i < n; i++) t->kept[EB_FRESH][i] = s->m[i].step > last - EB_FRESH_STEPS;
    t->after[EB_FRESH] = budget > 0 ? fill_newest(s, n, budget, t->kept[EB_FRESH]) : t->full;
    if (budget <= 0)
        for (int p = EB_RECENCY; p <= EB_FRESH; p++) memset(t->kept[p], 1, n);
}

static int clarity_side(eb_turn *t, const json_t *result)
{
    memset(t->kept[EB_CLARITY], 1, t->n);
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(result, "actions"), i, a) {
        json_int_t k = json_integer_value(json_object_get(a, "index"));
        if (k >= 0 && (size_t)k < t->n) t->kept[EB_CLARITY][k] = 0;
    }
    t->after[EB_CLARITY] = json_integer_value(json_object_get(result, "tokensAfter"));
    /* the block's items: "<mark> [⚓ ]<id> (<score>)" lines */
    const char *block = json_string_value(json_object_get(result, "block"));
    for (const char *l = block; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        const char *sp = memchr(l, ' ', len), *paren = NULL;
        for (const char *q = l + len; q > l; q--)
            if (q[-1] == '(') {
                paren = q - 1;
                break;
            }
        if (sp && paren && paren > sp + 1 && l[0] != '[') {
            const char *id = sp + 1;
            if (!strncmp(id, "\xE2\x9A\x93 ", 4)) id += 4; /* ⚓ */
            char **nb = realloc(t->block, (t->n_block + 1) * sizeof *nb);
            if (!nb) return -1;
            t->block = nb;
            if (!(t->block[t->n_block] = strndup(id, (size_t)(paren - 1 - id)))) return -1;
            t->n_block++;
        }
        l = e ? e + 1 : l + len;
    }
    return 0;
}

int eb_turn_add(eb_session *s, int64_t turn, const clarity_ctx_message *msgs, size_t n,
                const json_t *result, int64_t budget)
{
    if (add_messages(s, msgs, n) || grow((void **)&s->t, &s->capt, s->nt + 1, sizeof *s->t)) return -1;
    eb_turn *t = &s->t[s->nt];
    memset(t, 0, sizeof *t);
    t->turn = turn;
    t->n = n;
    t->budget = budget;
    for (size_t i = 0; i < n; i++) t->full += s->m[i].tokens;
    for (int p = 0; p < EB_NPOL; p++)
        if (!(t->kept[p] = calloc(n ? n : 1, 1))) return -1;
    s->nt++;
    baselines(s, t, budget);
    return clarity_side(t, result);
}

void eb_session_clear(eb_session *s)
{
    for (size_t i = 0; i < s->nm; i++) free(s->m[i].low);
    for (size_t i = 0; i < s->nt; i++) {
        for (int p = 0; p < EB_NPOL; p++) free(s->t[i].kept[p]);
        for (size_t k = 0; k < s->t[i].n_block; k++) free(s->t[i].block[k]);
        free(s->t[i].block);
    }
    free(s->m);
    free(s->t);
    memset(s, 0, sizeof *s);
}

static int word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Whether the lowered text names the item (its name after the category
 * prefix, as a whole word or path). */
static int names(const eb_msg *m, const char *id)
{
    const char *colon = strchr(id, ':');
    const char *name = colon && colon - id < 16 ? colon + 1 : id;
    size_t n = strlen(name);
    char low[512];
    if (n == 0 || n >= sizeof low) return 0;
    for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)name[i]);
    low[n] = '\0';
    for (const char *p = m->low; (p = memmem(p, m->len - (size_t)(p - m->low), low, n)); p++) {
        int before = p > m->low && word_char(p[-1]) && word_char(low[0]);
        int after = p + n < m->low + m->len && word_char(p[n]) && word_char(low[n - 1]);
        if (!before && !after) return 1;
    }
    return 0;
}

static const ev_snap *snap_at(const ev_session *s, int64_t turn)
{
    const ev_snap *best = NULL;
    for (size_t i = 0; i < s->n; i++)
        if (s->snaps[i].turn <= turn) best = &s->snaps[i];
    return best;
}

/* Whether the item (as of the horizon's end) was used since turn t-1. */
static int used(const ev_session *snaps, const ev_item *it, int64_t t)
{
    const ev_snap *prev = snap_at(snaps, t - 1);
    const ev_item *p = prev ? ev_snap_find(prev, it->id) : NULL;
    int64_t before = p ? p->mentions + p->refs : 0;
    return it->mentions + it->refs > before;
}

static int in_block(const eb_turn *t, const char *id)
{
    for (size_t i = 0; i < t->n_block; i++)
        if (strcmp(t->block[i], id) == 0) return 1;
    return 0;
}

static void score_turn(eb_acc *a, const eb_session *s, const eb_turn *t, const ev_session *snaps,
                       int horizon)
{
    /* the snapshot at the end of the horizon, and every item used by then */
    const ev_snap *end = snap_at(snaps, t->turn + horizon - 1);
    if (!end || end->turn < t->turn) return;
    for (size_t k = 0; k < end->n; k++) {
        const ev_item *it = &end->items[k];
        if (!used(snaps, it, t->turn)) continue;
        size_t e = t->n;
        while (e-- > 0 && !names(&s->m[e], it->id)) {
        }
        if (e == (size_t)-1) continue; /* no evidence before the turn */
        a->pairs++;
        for (int p = 0; p < EB_NPOL; p++)
            a->retained[p] += t->kept[p][e] || (p == EB_CLARITY && in_block(t, it->id));
    }
}

void eb_session_score(eb_acc *a, const eb_session *s, const ev_session *snaps, int horizon)
{
    for (size_t i = 0; i < s->nt; i++) {
        const eb_turn *t = &s->t[i];
        score_turn(a, s, t, snaps, horizon);
        a->turns++;
        for (int p = 0; p < EB_NPOL; p++) {
            a->kept_sum[p] += t->full > 0 ? (double)t->after[p] / (double)t->full : 1.0;
            a->over[p] += t->budget > 0 && t->after[p] > t->budget;
            if (i == 0) continue;
            const eb_turn *prev = &s->t[i - 1];
            for (size_t m = 0; m < prev->n && m < t->n; m++)
                if (prev->kept[p][m] != t->kept[p][m]) {
                    a->breaks[p]++;
                    break;
                }
        }
    }
}

json_t *eb_policy_json(const eb_acc *a, int p)
{
    json_t *o = json_object();
    json_object_set_new(o, "evidence_recall", a->pairs > 0 ? json_real(a->retained[p] / a->pairs) : json_null());
    json_object_set_new(o, "tokens_kept", a->turns ? json_real(a->kept_sum[p] / (double)a->turns) : json_null());
    json_object_set_new(o, "cache_breaks_per_turn", a->turns ? json_real(a->breaks[p] / (double)a->turns) : json_null());
    return o;
}

/* ---- the sweep's HTML report ------------------------------------------- */

static const char *const colors[EB_NPOL] = {"#3b78c4", "#9a9a9a", "#d08a2c"};

static void polyline(FILE *f, const eb_point *pts, size_t n, int p, int kept, int x0, int y0, int w,
                     int h)
{
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", colors[p],
            kept ? " stroke-dasharray=\"5 4\"" : "");
    for (size_t i = 0; i < n; i++) {
        double v = kept ? pts[i].kept[p] : pts[i].recall[p];
        fprintf(f, "%.1f,%.1f ", x0 + w * pts[i].budget, y0 + h - h * v);
    }
    fputs("\"/>\n", f);
}

int eb_report_html(const char *path, const char *corpus, const char *config, const eb_point *pts,
                   size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    const int W = 640, H = 380, x0 = 56, y0 = 40, w = W - x0 - 24, h = H - y0 - 60;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>clarity eval "
          "--budget</title>\n<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222}"
          "table{border-collapse:collapse;margin:16px 0}th,td{border:1px solid #ccc;padding:4px 10px;"
          "text-align:right}svg{border:1px solid #ddd}svg text{font-size:12px;fill:#333}</style>"
          "</head><body>\n<h1>Evidence recall against the token budget</h1>\n<p>corpus <code>", f);
    fputs(corpus, f);
    fprintf(f, "</code>, config <code>%s</code>. Evidence recall: the items used in the next "
               "turns whose newest earlier message was sent verbatim (or, for clarity, is in its "
               "block). Solid: evidence recall; dashed: tokens kept.</p>\n", config);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n", W, H);
    for (int t = 0; t <= 10; t += 2) {
        double y = y0 + h - h * t / 10.0, x = x0 + w * t / 10.0;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e6e6e6\"/>"
                   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d%%</text>\n",
                x0, y, x0 + w, y, x0 - 6, y + 4, t * 10);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d%%</text>\n", x, y0 + h + 18, t * 10);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">budget (share of the session's transcript)</text>\n",
            x0 + w / 2, y0 + h + 40);
    for (int p = 0; p < EB_NPOL; p++) {
        polyline(f, pts, n, p, 0, x0, y0, w, h);
        polyline(f, pts, n, p, 1, x0, y0, w, h);
        fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"%s\" style=\"fill:%s\">%s</text>\n", x0 + 10 + 140 * p,
                y0 - 14, colors[p], colors[p], p == EB_CLARITY ? config : eb_policy_names[p]);
    }
    fputs("</svg>\n<table><tr><th>budget</th>", f);
    for (int p = 0; p < EB_NPOL; p++) fprintf(f, "<th>%s recall</th><th>kept</th>", p == EB_CLARITY ? config : eb_policy_names[p]);
    fputs("</tr>\n", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "<tr><td>%.0f%%</td>", 100 * pts[i].budget);
        for (int p = 0; p < EB_NPOL; p++)
            fprintf(f, "<td>%.1f%%</td><td>%.1f%%</td>", 100 * pts[i].recall[p], 100 * pts[i].kept[p]);
        fputs("</tr>\n", f);
    }
    fputs("</table>\n</body></html>\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return -1;
    return 0;
}
