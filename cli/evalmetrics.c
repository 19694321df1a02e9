/* evalmetrics.c: recall@K of the future-use set and gold-file ranks for
 * clarity's ranking and the LRU and frequency baselines (evalmetrics.h). */
#include "evalmetrics.h"

#include <stdlib.h>
#include <string.h>

const int ev_ks[EV_NK] = {5, 10, 20};
const char *const ev_rank_names[EV_NRANK] = {"clarity", "lru", "frequency"};

/* ---- snapshots ------------------------------------------------------------ */

static int cmp_id(const void *a, const void *b)
{
    const ev_item *x = *(const ev_item *const *)a, *y = *(const ev_item *const *)b;
    return strcmp(x->id, y->id);
}

void ev_snap_free(ev_snap *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->items[i].id);
    free(s->items);
    free(s->by_id);
    memset(s, 0, sizeof *s);
}

static int int_field(const json_t *o, const char *key, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) return -1;
    *out = (int64_t)json_integer_value(v);
    return 0;
}

int ev_snap_from_json(ev_snap *s, int64_t turn, const json_t *items)
{
    memset(s, 0, sizeof *s);
    s->turn = turn;
    if (!json_is_array(items)) return -1;
    size_t n = json_array_size(items);
    s->items = calloc(n ? n : 1, sizeof *s->items);
    s->by_id = calloc(n ? n : 1, sizeof *s->by_id);
    if (!s->items || !s->by_id) goto fail;
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(items, i);
        ev_item *it = &s->items[i];
        const char *id = json_string_value(json_object_get(o, "id"));
        json_t *score = json_object_get(o, "score");
        if (!id || !json_is_number(score) || int_field(o, "mentionCount", &it->mentions) ||
            int_field(o, "referenceCount", &it->refs) ||
            int_field(o, "lastMentionTurn", &it->last_mention))
            goto fail;
        it->score = json_number_value(score);
        it->id = strdup(id);
        if (!it->id) goto fail;
        s->n++;
        s->by_id[i] = it;
    }
    qsort(s->by_id, s->n, sizeof *s->by_id, cmp_id);
    return 0;
fail:
    ev_snap_free(s);
    s->turn = turn;
    return -1;
}

const ev_item *ev_snap_find(const ev_snap *s, const char *id)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->by_id[mid]->id, id);
        if (c == 0) return s->by_id[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* ---- rankings ------------------------------------------------------------- */

static int cmp_lru(const void *a, const void *b)
{
    const ev_item *x = *(const ev_item *const *)a, *y = *(const ev_item *const *)b;
    if (x->last_mention != y->last_mention) return x->last_mention > y->last_mention ? -1 : 1;
    return strcmp(x->id, y->id);
}

static int cmp_freq(const void *a, const void *b)
{
    const ev_item *x = *(const ev_item *const *)a, *y = *(const ev_item *const *)b;
    if (x->mentions != y->mentions) return x->mentions > y->mentions ? -1 : 1;
    return cmp_lru(a, b);
}

void ev_snap_rank(const ev_snap *s, int ranking, size_t *order)
{
    if (ranking == EV_CLARITY || s->n == 0) {
        for (size_t i = 0; i < s->n; i++) order[i] = i;
        return;
    }
    /* by_id is a scratch copy of the pointers here: sort a fresh one. */
    ev_item **tmp = malloc(s->n * sizeof *tmp);
    if (!tmp) { /* keep going with the clarity order rather than fail */
        for (size_t i = 0; i < s->n; i++) order[i] = i;
        return;
    }
    memcpy(tmp, s->by_id, s->n * sizeof *tmp);
    qsort(tmp, s->n, sizeof *tmp, ranking == EV_LRU ? cmp_lru : cmp_freq);
    for (size_t i = 0; i < s->n; i++) order[i] = (size_t)(tmp[i] - s->items);
    free(tmp);
}

/* ---- sessions ------------------------------------------------------------- */

void ev_session_init(ev_session *s)
{
    memset(s, 0, sizeof *s);
    s->first_edit = -1;
}

int ev_session_push(ev_session *s, ev_snap *snap)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        ev_snap *v = realloc(s->snaps, cap * sizeof *v);
        if (!v) return -1;
        s->snaps = v;
        s->cap = cap;
    }
    s->snaps[s->n++] = *snap;
    memset(snap, 0, sizeof *snap);
    return 0;
}

static void free_gold(ev_session *s)
{
    for (size_t i = 0; i < s->n_gold; i++) free(s->gold[i]);
    free(s->gold);
    s->gold = NULL;
    s->n_gold = 0;
}

int ev_session_meta(ev_session *s, const json_t *meta)
{
    free_gold(s);
    s->first_edit = -1;
    json_t *fe = json_object_get(meta, "first_edit_turn");
    if (json_is_integer(fe)) s->first_edit = (int64_t)json_integer_value(fe);
    json_t *gold = json_object_get(meta, "gold_files");
    size_t n = json_array_size(gold);
    if (n == 0) return 0;
    s->gold = calloc(n, sizeof *s->gold);
    if (!s->gold) return -1;
    for (size_t i = 0; i < n; i++) {
        const char *p = json_string_value(json_array_get(gold, i));
        if (!p || !*p) continue;
        size_t len = strlen(p);
        char *id = malloc(len + 6);
        if (!id) {
            free_gold(s);
            return -1;
        }
        memcpy(id, "file:", 5);
        memcpy(id + 5, p, len + 1);
        int dup = 0;
        for (size_t k = 0; k < s->n_gold && !dup; k++) dup = strcmp(s->gold[k], id) == 0;
        if (dup) free(id);
        else s->gold[s->n_gold++] = id;
    }
    return 0;
}

int ev_session_block1(ev_session *s, const char *block, size_t len, ev_snap *pre)
{
    free(s->block1);
    if (s->has_pre1) ev_snap_free(&s->pre1);
    s->block1 = malloc(len + 1);
    s->has_pre1 = 1;
    s->pre1 = *pre;
    memset(pre, 0, sizeof *pre);
    if (!s->block1) return -1;
    memcpy(s->block1, block, len);
    s->block1[len] = '\0';
    return 0;
}

void ev_session_clear(ev_session *s)
{
    free(s->block1);
    s->block1 = NULL;
    if (s->has_pre1) ev_snap_free(&s->pre1);
    s->has_pre1 = 0;
    for (size_t i = 0; i < s->n; i++) ev_snap_free(&s->snaps[i]);
    s->n = 0;
    free_gold(s);
    s->first_edit = -1;
}

void ev_session_free(ev_session *s)
{
    ev_session_clear(s);
    free(s->snaps);
    ev_session_init(s);
}

/* ---- accumulation --------------------------------------------------------- */

void ev_acc_init(ev_acc *a) { memset(a, 0, sizeof *a); }

void ev_acc_free(ev_acc *a)
{
    for (int r = 0; r < EV_NRANK; r++) {
        free(a->ranks[r]);
        free(a->top5_turn[r]);
    }
    memset(a, 0, sizeof *a);
}

static int push_ranks(ev_acc *a, const size_t rank[EV_NRANK])
{
    if (a->n_ranks == a->cap_ranks) {
        size_t cap = a->cap_ranks ? a->cap_ranks * 2 : 64;
        for (int r = 0; r < EV_NRANK; r++) {
            double *v = realloc(a->ranks[r], cap * sizeof *v);
            if (!v) return -1;
            a->ranks[r] = v;
        }
        a->cap_ranks = cap;
    }
    for (int r = 0; r < EV_NRANK; r++) a->ranks[r][a->n_ranks] = (double)rank[r];
    a->n_ranks++;
    return 0;
}

/* used[k] = 1 when item k of snapshot i is mentioned or referenced again in
 * a snapshot of turns t+1..t+H; returns how many are. */
static size_t future_use(const ev_session *s, size_t i, int horizon, unsigned char *used)
{
    const ev_snap *cur = &s->snaps[i];
    memset(used, 0, cur->n);
    size_t nf = 0;
    for (size_t j = i + 1; j < s->n && s->snaps[j].turn - cur->turn <= horizon; j++) {
        const ev_snap *later = &s->snaps[j];
        if (later->turn <= cur->turn) continue;
        for (size_t k = 0; k < cur->n; k++) {
            if (used[k]) continue;
            const ev_item *it = &cur->items[k];
            const ev_item *o = ev_snap_find(later, it->id);
            if (o && (o->mentions > it->mentions || o->refs > it->refs)) {
                used[k] = 1;
                nf++;
            }
        }
    }
    return nf;
}

static int push_top5(ev_acc *a, int r, double turn)
{
    if (a->n_top5[r] == a->cap_top5[r]) {
        size_t cap = a->cap_top5[r] ? a->cap_top5[r] * 2 : 32;
        double *v = realloc(a->top5_turn[r], cap * sizeof *v);
        if (!v) return -1;
        a->top5_turn[r] = v;
        a->cap_top5[r] = cap;
    }
    a->top5_turn[r][a->n_top5[r]++] = turn;
    return 0;
}

/* The rank (1-based) of id in snapshot s under ranking r, 0 when absent;
 * order is scratch of s->n. */
static size_t rank_in(const ev_snap *s, int r, const char *id, size_t *order)
{
    const ev_item *it = ev_snap_find(s, id);
    if (!it) return 0;
    ev_snap_rank(s, r, order);
    for (size_t p = 0; p < s->n; p++)
        if (&s->items[order[p]] == it) return p + 1;
    return 0;
}

/* Per gold file, the first snapshot turn with it in the top 5. */
static int add_top5_turns(ev_acc *a, const ev_session *s, size_t *order)
{
    for (size_t g = 0; g < s->n_gold; g++) {
        a->top5_pairs++;
        for (int r = 0; r < EV_NRANK; r++) {
            for (size_t i = 0; i < s->n; i++) {
                size_t k = rank_in(&s->snaps[i], r, s->gold[g], order);
                if (k == 0 || k > 5) continue;
                if (push_top5(a, r, (double)s->snaps[i].turn) != 0) return -1;
                break;
            }
        }
    }
    return 0;
}

/* Whether every gold file is among the first 5 "file:" ids of ids[0..n). */
static int gold_in_first5(const ev_session *s, const char *const *ids, size_t n)
{
    for (size_t g = 0; g < s->n_gold; g++) {
        int found = 0;
        for (size_t i = 0, files = 0; i < n && files < 5 && !found; i++) {
            if (strncmp(ids[i], "file:", 5) != 0) continue;
            files++;
            found = strcmp(ids[i], s->gold[g]) == 0;
        }
        if (!found) return 0;
    }
    return 1;
}

/* The file ids of a block in order: "file:..." tokens of its item lines,
 * then its likely edit targets ("→ path: key symbols", one a line).  At
 * most max. */
static size_t block_files(const char *block, char ids[][512], size_t max)
{
    size_t n = 0;
    int targets = 0;
    for (const char *p = block; *p && n < max;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len >= 20 && strncmp(p, "Likely edit targets:", 20) == 0) {
            targets = 1;
        } else if (len >= 13 && strncmp(p, "Kept through ", 13) == 0) {
            break; /* re-injected after a compaction: not ranked */
        } else if (targets && len > 4 && memcmp(p, "\xE2\x86\x92 ", 4) == 0) {
            /* "→ path: symbol (line N), ..." */
            const char *path = p + 4, *end = p + len, *colon = memmem(path, (size_t)(end - path), ": ", 2);
            if (colon) end = colon;
            if (end - path < 500) snprintf(ids[n++], 512, "file:%.*s", (int)(end - path), path);
        } else if (!targets) {
            const char *f = memmem(p, len, "file:", 5);
            if (f) {
                size_t k = 0;
                while (f + k < p + len && f[k] != ' ' && k < 511) k++;
                snprintf(ids[n++], 512, "%.*s", (int)k, f);
            }
        }
        p = e ? e + 1 : p + len;
    }
    return n;
}

static void add_block1(ev_acc *a, const ev_session *s, size_t *order)
{
    if (s->n_gold == 0 || !s->block1 || !s->has_pre1) return;
    a->block_sessions++;
    char ids[32][512];
    const char *ptr[32];
    size_t n = block_files(s->block1, ids, 32);
    for (size_t i = 0; i < n; i++) ptr[i] = ids[i];
    a->block_hits[EV_CLARITY] += gold_in_first5(s, ptr, n);
    for (int r = EV_CLARITY + 1; r < EV_NRANK; r++) {
        const ev_snap *pre = &s->pre1;
        ev_snap_rank(pre, r, order);
        const char **v = malloc((pre->n ? pre->n : 1) * sizeof *v);
        if (!v) continue;
        for (size_t p = 0; p < pre->n; p++) v[p] = pre->items[order[p]].id;
        a->block_hits[r] += gold_in_first5(s, v, pre->n);
        free(v);
    }
}

int ev_acc_add(ev_acc *a, const ev_session *s, int horizon)
{
    size_t maxn = s->has_pre1 && s->pre1.n > 1 ? s->pre1.n : 1;
    for (size_t i = 0; i < s->n; i++)
        if (s->snaps[i].n > maxn) maxn = s->snaps[i].n;
    unsigned char *used = malloc(maxn);
    size_t *order = malloc(maxn * sizeof *order);
    size_t *rank_of[EV_NRANK] = {NULL};
    int rc = used && order ? 0 : -1;
    for (int r = 0; r < EV_NRANK && rc == 0; r++)
        if (!(rank_of[r] = malloc(maxn * sizeof *rank_of[r]))) rc = -1;

    for (size_t i = 0; i < s->n && rc == 0; i++) {
        const ev_snap *cur = &s->snaps[i];
        for (int r = 0; r < EV_NRANK; r++) {
            ev_snap_rank(cur, r, order);
            for (size_t p = 0; p < cur->n; p++) rank_of[r][order[p]] = p;
        }
        size_t nf = future_use(s, i, horizon, used);
        if (nf > 0) {
            a->recall_turns++;
            for (int r = 0; r < EV_NRANK; r++)
                for (int k = 0; k < EV_NK; k++) {
                    size_t hits = 0;
                    for (size_t x = 0; x < cur->n; x++)
                        hits += used[x] && rank_of[r][x] < (size_t)ev_ks[k];
                    a->recall_sum[r][k] += (double)hits / (double)nf;
                }
        }
        if (s->first_edit >= 0 && cur->turn >= s->first_edit) continue;
        for (size_t g = 0; g < s->n_gold && rc == 0; g++) {
            a->gold_pairs++;
            const ev_item *it = ev_snap_find(cur, s->gold[g]);
            if (!it) continue;
            size_t x = (size_t)(it - cur->items), rank[EV_NRANK];
            for (int r = 0; r < EV_NRANK; r++) {
                rank[r] = rank_of[r][x] + 1;
                a->rr_sum[r] += 1.0 / (double)rank[r];
            }
            rc = push_ranks(a, rank);
        }
    }
    if (rc == 0) rc = add_top5_turns(a, s, order);
    if (rc == 0) add_block1(a, s, order);
    if (rc == 0) {
        a->sessions++;
        a->turns += s->n;
    }
    free(used);
    free(order);
    for (int r = 0; r < EV_NRANK; r++) free(rank_of[r]);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double ev_median(double *v, size_t n)
{
    if (n == 0) return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void ev_acc_metrics(ev_acc *a, int ranking, ev_metrics *out)
{
    memset(out, 0, sizeof *out);
    out->recall_turns = a->recall_turns;
    for (int k = 0; k < EV_NK; k++)
        out->recall[k] = a->recall_turns ? a->recall_sum[ranking][k] / (double)a->recall_turns : 0;
    out->gold_pairs = a->gold_pairs;
    out->gold_tracked_pairs = a->n_ranks;
    out->gold_tracked = a->gold_pairs ? (double)a->n_ranks / (double)a->gold_pairs : 0;
    /* Sorting one ranking's array in place is harmless: the per-pair
     * correspondence between rankings is not used after accumulation. */
    out->gold_rank_median = ev_median(a->ranks[ranking], a->n_ranks);
    out->gold_mrr = a->gold_pairs ? a->rr_sum[ranking] / (double)a->gold_pairs : 0;
    out->gold_top5_pairs = a->top5_pairs;
    out->gold_top5_reached_pairs = a->n_top5[ranking];
    out->gold_top5_reached = a->top5_pairs ? (double)a->n_top5[ranking] / (double)a->top5_pairs : 0;
    out->gold_top5_turn_median = ev_median(a->top5_turn[ranking], a->n_top5[ranking]);
    out->block_sessions = a->block_sessions;
    out->gold_in_block_turn1 =
        a->block_sessions ? (double)a->block_hits[ranking] / (double)a->block_sessions : 0;
}
