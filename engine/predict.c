/* predict.c: file predictions blended into the session (issue 3).
 *
 * When the session's workspace is a repository with a code graph
 * (<workspace>/.clarity/graph.db, made by `clarity graph build` or the
 * clarity.graphBuild RPC), before_agent_start asks graph/ to rank the
 * repository's files for the prompt.  Predictions normalized to the best
 * file (1.0) and at least prediction.minScore are kept per session in a
 * small map "file:<path>" -> prediction, so engine_score adds
 * prediction x prediction.weight to a tracked file item in O(1).  The best
 * predicted files that are not tracked yet (or pruned) become the context
 * block's "Likely edit targets" lines, with their key symbols.
 *
 * The graph is loaded once per repository and kept (graph/cache.c), on
 * the cache's loader thread: a prompt waits for it at most
 * prediction.loadWaitMs.  A hook never builds one.  Not persisted: the
 * next prompt recomputes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/graph.h"
#include "engine.h"

#undef uthash_nonfatal_oom
#define uthash_nonfatal_oom(obj) (oom = 1)

typedef struct pred_ent {
    char *id; /* "file:<path>", owned, hash key */
    double score;
    UT_hash_handle hh;
} pred_ent;

void predict_clear(session *s)
{
    pred_ent *p, *tmp;
    HASH_ITER(hh, s->pred, p, tmp)
    {
        HASH_DEL(s->pred, p);
        free(p->id);
        free(p);
    }
    s->pred = NULL;
    for (size_t i = 0; i < s->n_pred_targets; i++) free(s->pred_targets[i]);
    free(s->pred_targets);
    s->pred_targets = NULL;
    s->n_pred_targets = 0;
}

double predict_term(const engine *e, const session *s, const item *it)
{
    if (!s->pred || it->category != CAT_FILE) return 0.0;
    pred_ent *p;
    HASH_FIND_STR(s->pred, it->id, p);
    return p ? p->score * e->cfg.prediction.weight : 0.0;
}

double predict_term_max(const engine *e, const session *s)
{
    double m = 0.0;
    for (pred_ent *p = s->pred; p; p = p->hh.next)
        if (p->score * e->cfg.prediction.weight > m) m = p->score * e->cfg.prediction.weight;
    return m;
}

typedef struct pctx {
    engine *e;
    session *s;
    size_t max_targets;
    int oom;
} pctx;

static void on_pred(void *ud, const graph_pred *gp)
{
    pctx *c = ud;
    session *s = c->s;
    if (c->oom || gp->score < c->e->cfg.prediction.min_score) return;
    size_t pl = strlen(gp->path);
    pred_ent *p = malloc(sizeof *p);
    char *id = p ? malloc(pl + 6) : NULL;
    if (!id) {
        free(p);
        c->oom = 1;
        return;
    }
    memcpy(id, "file:", 5);
    memcpy(id + 5, gp->path, pl + 1);
    pred_ent *dup;
    HASH_FIND_STR(s->pred, id, dup);
    if (dup) { /* cannot happen (paths are unique); keep the first */
        free(id);
        free(p);
        return;
    }
    p->id = id;
    p->score = gp->score;
    int oom = 0;
    HASH_ADD_KEYPTR(hh, s->pred, p->id, pl + 5, p);
    if (oom) {
        free(id);
        free(p);
        c->oom = 1;
        return;
    }
    if (s->n_pred_targets >= c->max_targets) return;
    item *it = tracker_find(&s->t, id);
    if (it && !it->pruned) return; /* tracked: it gets the prediction term instead */
    buf line;
    buf_init(&line);
    buf_puts(&line, "\xE2\x86\x92 "); /* → */
    buf_append(&line, gp->path, pl < 300 ? pl : 300);
    if (gp->symbols && *gp->symbols) {
        buf_puts(&line, ": ");
        buf_puts(&line, gp->symbols);
    }
    char *text = buf_steal(&line, NULL);
    buf_free(&line);
    if (!text) {
        c->oom = 1;
        return;
    }
    s->pred_targets[s->n_pred_targets++] = text;
}

/* The workspace has a graph: one stat, so sessions without one pay next
 * to nothing. */
void predict_update(engine *e, session *s, const char *text, size_t len)
{
    predict_clear(s);
    const clarity_config *c = &e->cfg;
    if (!c->prediction.enabled || !s->workspace || !*s->workspace ||
        len == 0 || !graph_engine_has_graph(e->graphs, s->workspace))
        return;
    pctx pc = {e, s, (size_t)c->prediction.max_targets, 0};
    if (pc.max_targets) {
        s->pred_targets = calloc(pc.max_targets, sizeof *s->pred_targets);
        if (!s->pred_targets) return;
    }
    int n = graph_engine_predict(e->graphs, s->workspace, c->prediction.auto_refresh,
                                 c->prediction.load_wait_ms, text, len,
                                 (size_t)c->prediction.max_files, on_pred, &pc);
    if (pc.oom) {
        engine_log(e, CLARITY_LOG_WARN, "clarity: session %s: out of memory in file predictions",
                   s->id);
        predict_clear(s);
        return;
    }
    if (n < 0)
        engine_log(e, CLARITY_LOG_DEBUG, "clarity: session %s: no code graph loaded (yet) for %s", s->id,
                   s->workspace);
}

/* The item's score with the session's prediction term. */
void engine_score(const engine *e, const session *s, const item *it, int64_t turn,
                  score_breakdown *out)
{
    double prediction = s && s->pred ? predict_term(e, s, it) : 0.0;
    scorer_score_with(&e->cfg, &e->tables, it, turn, prediction, out);
}
