/* block.c: the [CLARITY CONTEXT] block: the progress signal, the
 * best-scored items, the likely edit targets, the kept items a compaction
 * summary lost. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compact.h"
#include "engine.h"
#include "hints.h"
#include "progress.h"

typedef struct top_entry {
    item *it;
    double score;
} top_entry;

static int better(const top_entry *a, const top_entry *b)
{
    if (a->score != b->score) return a->score > b->score;
    return strcmp(a->it->id, b->it->id) < 0;
}

/* "<mark> [anchor ]<id, at most 400 bytes> (<score, %.0f>)\n" into line;
 * its length.  Without printf for the usual scores: this runs for every
 * line of every block. */
static size_t item_line(char *line, size_t cap, const char *mark, const item *it, double score)
{
    if (!(score > -1e15 && score < 1e15)) {
        int len = snprintf(line, cap, "%s %s%.*s (%.0f)\n", mark, it->anchored ? "\xE2\x9A\x93 " : "", 400,
                           it->id, score);
        return len < 0 ? 0 : (size_t)len < cap ? (size_t)len : cap - 1;
    }
    size_t n = 0, ml = strlen(mark), il = strnlen(it->id, 400);
    memcpy(line, mark, ml);
    n = ml;
    line[n++] = ' ';
    if (it->anchored) {
        memcpy(line + n, "\xE2\x9A\x93 ", 4);
        n += 4;
    }
    memcpy(line + n, it->id, il);
    n += il;
    line[n++] = ' ';
    line[n++] = '(';
    /* %.0f rounds to nearest, ties to even, as nearbyint() does */
    long long v = (long long)nearbyint(score);
    char d[24];
    size_t nd = 0;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do d[nd++] = (char)('0' + u % 10); while ((u /= 10) != 0);
    if (v < 0 || (v == 0 && signbit(score))) line[n++] = '-';
    while (nd) line[n++] = d[--nd];
    line[n++] = ')';
    line[n++] = '\n';
    line[n] = '\0';
    return n;
}

/* Whether a score of at most `most` stays out of the k best so far
 * (top[0, n), best first), or under the minimum. */
static int out_of_reach(const clarity_config *c, double most, size_t n, size_t k, const top_entry *top)
{
    return most < c->context.min_score || most <= 0 || (n == k && most < top[n - 1].score);
}

/* it into the k best so far (top[0, *n), best first) when it belongs. */
static void consider(engine *e, session *s, item *it, double pred_max, size_t k, top_entry *top, size_t *n)
{
    const clarity_config *c = &e->cfg;
    if (it->pruned) return;
    /* an item whose bound cannot reach the k-th best (or the minimum) is
     * not even scored */
    double ub = scorer_bound(c, &e->tables, it, s->t.current_turn, pred_max);
    if (out_of_reach(c, ub, *n, k, top)) return;
    score_breakdown b;
    engine_score(e, s, it, s->t.current_turn, &b);
    if (b.score < c->context.min_score || b.score <= 0) return;
    top_entry cand = {it, b.score};
    if (*n == k && !better(&cand, &top[*n - 1])) return;
    size_t pos = *n < k ? (*n)++ : k - 1;
    while (pos > 0 && better(&cand, &top[pos - 1])) {
        top[pos] = top[pos - 1];
        pos--;
    }
    top[pos] = cand;
}

/* The k best items into top (best first); their count.  With the rank
 * index the items come highest turn-free bound first, and the walk stops
 * at the first that cannot reach the k-th best: no later one can.  A walk
 * that runs out of entries stops as well when no item below the index's
 * floor can reach it; else the index is rebuilt whole and walked again.
 * Without it (a short session, or no memory for it) every item is bounded.
 * The k best are the same either way: ties are broken by id. */
static size_t best_items(engine *e, session *s, size_t k, top_entry *top, int use_index)
{
    const clarity_config *c = &e->cfg;
    size_t n = 0;
    if (k == 0) return 0;
    double pred_max = predict_term_max(e, s);
    rankidx *x = &s->rank;
    if (use_index && s->t.count >= RANKIDX_MIN_ITEMS && rankidx_sync(x, c, &e->tables, &s->t) == 0) {
        for (;;) {
            rankidx_iter ri = {.x = x};
            size_t read = 0;
            const rank_slot *sl;
            n = 0;
            while ((sl = rankidx_next(&ri)) && !out_of_reach(c, scorer_bound_of_core(sl->core, pred_max), n, k, top)) {
                consider(e, s, sl->it, pred_max, k, top, &n);
                read++;
            }
            rankidx_walked(x, read);
            if (sl || x->floor == -INFINITY) return n;
            /* the items below the floor score at most what one at it could */
            if (out_of_reach(c, scorer_bound_of_core(x->floor, pred_max), n, k, top)) return n;
            if (rankidx_deepen(x, c, &e->tables, &s->t) != 0) break;
        }
        n = 0; /* no memory for the index: every item bounded */
    }
    for (item *it = s->t.items; it; it = it->hh.next) consider(e, s, it, pred_max, k, top, &n);
    return n;
}

static void block_emit(engine *e, session *s, buf *out, int use_index)
{
    const clarity_config *c = &e->cfg;
    size_t k = (size_t)c->context.max_items;
    int with_progress = s->progress && e->cfg.progress.enabled;
    if (k == 0 && s->n_pred_targets == 0 && s->n_reinject == 0 && !with_progress && !s->n_hints) return;
    top_entry stack_top[32];
    top_entry *top = k <= 32 ? stack_top : malloc(k * sizeof *top);
    if (!top) return;
    size_t n = best_items(e, s, k, top, use_index);
    if (n == 0 && s->n_pred_targets == 0 && s->n_reinject == 0 && !with_progress && !s->n_hints) goto done;
    size_t budget = (size_t)c->context.max_chars;
    size_t start = out->len;
    /* 512 bytes at once rather than the doublings from 64: a usual block
     * holds a few hundred.  Not the whole budget: 1 KiB or more is a
     * large-bin request to glibc's malloc, which first consolidates its
     * fast bins (about 170 instructions a turn on the replay); a full block
     * doubles once or twice. */
    buf_reserve(out, budget < 511 ? budget : 511);
    buf_puts(out, BLOCK_OPEN "\n");
    size_t closing = sizeof(BLOCK_CLOSE "\n") - 1;
    /* the progress signal first: it is short, and it is what an agent in a
     * loop most needs to read */
    if (with_progress && budget > out->len - start + closing)
        progress_block_lines(e, s, out, budget - (out->len - start) - closing);
    char line[512];
    for (size_t i = 0; i < n; i++) {
        const char *mark = top[i].score >= c->context.high_score  ? "\xE2\x97\x8F" /* ● */
                           : top[i].score >= c->context.mid_score ? "\xE2\x97\x90" /* ◐ */
                                                                  : "\xE2\x97\x8B"; /* ○ */
        size_t l = item_line(line, sizeof line, mark, top[i].it, top[i].score);
        if (out->len - start + l + closing > budget) break;
        buf_append(out, line, l);
    }
    /* predicted files not tracked yet (predict.c), as far as the budget goes */
    static const char head[] = "Likely edit targets:\n";
    for (size_t i = 0; i < s->n_pred_targets; i++) {
        size_t l = strlen(s->pred_targets[i]);
        size_t need = l + 1 + (i == 0 ? sizeof head - 1 : 0);
        if (out->len - start + need + closing > budget) break;
        if (i == 0) buf_puts(out, head);
        buf_append(out, s->pred_targets[i], l);
        buf_putc(out, '\n');
    }
    size_t used = out->len - start + closing;
    if (used < budget) hints_block_lines(s, out, budget - used);
    used = out->len - start + closing;
    if (used < budget) compact_block_lines(e, s, budget - used, out);
    if (out->len - start == sizeof(BLOCK_OPEN "\n") - 1) { /* nothing fit */
        out->len = start;
        goto done;
    }
    buf_puts(out, BLOCK_CLOSE "\n");
done:
    if (top != stack_top) free(top);
}

void block_write(engine *e, session *s, buf *out) { block_emit(e, s, out, 1); }

void block_write_scan(engine *e, session *s, buf *out) { block_emit(e, s, out, 0); }
