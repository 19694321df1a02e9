/* commands.c: the /clarity slash commands (text in, text out). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/assemble.h"
#include "../engine/progress.h"
#include "gateway.h"

static const char help_text[] =
    "Clarity: relevance-based context for this session\n"
    "  /clarity                     status and top items\n"
    "  /clarity scores [N]          score table (id, category, score, breakdown)\n"
    "  /clarity context             what the last assembly elided, and why\n"
    "  /clarity progress            the test runs seen, their trend and streak\n"
    "  /clarity anchor <item> [-- reason]  always keep <item> in context\n"
    "  /clarity unanchor <item>     remove the anchor\n"
    "  /clarity tier <item> <essential|high|normal|low>\n"
    "  /clarity prune [--dry-run]   decide keep/prune now and show the report\n"
    "  /clarity stats               statistics\n"
    "  /clarity config              effective configuration\n"
    "  /clarity help                this text\n"
    "Items are named as they are written: ClaraCore, focus-engine, web_search,\n"
    "src/auth/session.ts, or with their id prefix (tool:, file:, keyword:).\n";

static void status(engine *e, session *s, buf *out)
{
    scored_item *v;
    size_t n = view_sorted(e, s, 0, 10, &v);
    if (n == (size_t)-1) {
        out->oom = 1;
        return;
    }
    size_t anchored = 0;
    for (item *it = s->t.items; it; it = it->hh.next) anchored += it->anchored != 0;
    buf_printf(out, "Clarity: relevance-based context (session %s)\n", s->id);
    buf_printf(out, "Status: %s, strict mode %s, store %s\n",
               e->cfg.enabled ? "enabled" : "disabled", e->cfg.strict_mode ? "on" : "off",
               store_backend_name(e->st));
    buf_printf(out, "Turn %lld, %zu items tracked (%zu active), %zu anchored\n",
               (long long)s->t.current_turn, s->t.count, n, anchored);
    if (n) buf_puts(out, "Top items:\n");
    for (size_t i = 0; i < n && i < 10; i++)
        buf_printf(out, "  %s%s  %.1f  (%lld mentions, %lld references)\n",
                   v[i].it->anchored ? "\xE2\x9A\x93 " : "", v[i].it->id, v[i].b.score,
                   (long long)v[i].it->mention_count, (long long)v[i].it->reference_count);
    buf_puts(out, "Commands: scores, context, progress, anchor <item>, unanchor <item>, tier, prune, stats, config, help\n");
    free(v);
}

/* N of "/clarity scores N": digits only, 1..100000.  0, or -1. */
static int scores_limit(const char *arg, size_t *out)
{
    size_t v = 0, n = 0;
    for (; arg[n] >= '0' && arg[n] <= '9' && n < 7; n++) v = v * 10 + (size_t)(arg[n] - '0');
    if (n == 0 || arg[n] || v < 1 || v > 100000) return -1;
    *out = v;
    return 0;
}

static void scores(engine *e, session *s, size_t limit, buf *out)
{
    scored_item *v;
    size_t n = view_sorted(e, s, 0, limit, &v);
    if (n == (size_t)-1) {
        out->oom = 1;
        return;
    }
    buf_printf(out, "Clarity scores, session %s, turn %lld (%zu items)\n", s->id,
               (long long)s->t.current_turn, n);
    buf_printf(out, "%-40s %-8s %7s %6s %6s %6s %6s %6s %6s %5s %5s %-9s\n", "id", "category",
               "score", "freq", "recent", "util", "stale", "anchor", "pred", "ment", "refs", "tier");
    for (size_t i = 0; i < n && i < limit; i++) {
        const item *it = v[i].it;
        const score_breakdown *b = &v[i].b;
        buf_printf(out, "%-40.*s %-8s %7.1f %6.1f %6.1f %6.1f %6.1f %6.1f %6.1f %5lld %5lld %-9s\n",
                   40, it->id, tracker_category_name(it->category), b->score, b->frequency,
                   b->recency, b->utility, b->staleness, b->anchor, b->prediction,
                   (long long)it->mention_count, (long long)it->reference_count,
                   tracker_tier_name(it->tier));
    }
    if (n > limit) buf_printf(out, "... and %zu more\n", n - limit);
    free(v);
}

static void stats(engine *e, session *s, buf *out)
{
    scored_item *v;
    size_t n = view_sorted(e, s, 1, (size_t)-1, &v); /* sums in score order, as before */
    if (n == (size_t)-1) {
        out->oom = 1;
        return;
    }
    size_t by_cat[CAT__COUNT] = {0}, anchored = 0, pruned = 0;
    double mentions = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        int c = v[i].it->category >= 0 && v[i].it->category < CAT__COUNT ? v[i].it->category : CAT_CUSTOM;
        by_cat[c]++;
        anchored += v[i].it->anchored != 0;
        pruned += v[i].it->pruned != 0;
        mentions += (double)v[i].it->mention_count;
        total += v[i].b.score;
    }
    const clarity_config *c = &e->cfg;
    buf_printf(out, "Clarity statistics (session %s)\n", s->id);
    buf_printf(out, "Tracking: %zu items (cap %d), %zu anchored, %zu pruned, turn %lld\n", n,
               c->limits.max_tracked_items, anchored, pruned, (long long)s->t.current_turn);
    buf_puts(out, "By category:");
    for (int k = 0; k < CAT__COUNT; k++) buf_printf(out, " %s=%zu", tracker_category_name(k), by_cat[k]);
    buf_printf(out, "\nAverage mentions/item: %.1f, average score: %.1f\n",
               n ? mentions / (double)n : 0, n ? total / (double)n : 0);
    buf_printf(out,
               "Scoring: halfLife %g, recencyWindow %g, recencyBonus %g, referenceWeight %g, "
               "frequencyScale %g, anchorBonus %g\n",
               c->scoring.half_life, c->scoring.recency_window, c->scoring.recency_bonus,
               c->scoring.reference_weight, c->scoring.frequency_scale, c->scoring.anchor_bonus);
    buf_printf(out, "Store: %s\n", store_backend_name(e->st));
    store_ckpt_stats ck;
    if (store_sqlite_ckpt_stats(e->st, &ck) == CLARITY_OK)
        buf_printf(out, "WAL checkpoints: %lu in the background (%lu of them copying frames), %lu by a commit\n",
                   ck.background, ck.background_copied, ck.on_commit);
    free(v);
}

/* Splits "anchor ClaraCore -- reason text" into name and reason. */
static char *split_reason(char *arg, char **reason)
{
    *reason = NULL;
    char *sep = strstr(arg, " -- ");
    if (sep) {
        *sep = '\0';
        *reason = sep + 4;
    }
    size_t n = strlen(arg);
    while (n && isspace((unsigned char)arg[n - 1])) arg[--n] = '\0';
    return arg;
}

static int anchor_cmd(engine *e, session *s, char *arg, int anchor, buf *out, char **err)
{
    char *reason;
    char *name = split_reason(arg, &reason);
    if (!*name) {
        *err = strdup(anchor ? "usage: /clarity anchor <item> [-- reason]" : "usage: /clarity unanchor <item>");
        return CLARITY_EINVAL;
    }
    char *id = NULL;
    item *it = view_lookup(e, s, name, &id);
    int rc = CLARITY_OK;
    if (!it && !anchor) {
        size_t n = strlen(name) + 64;
        *err = malloc(n);
        if (*err) snprintf(*err, n, "unknown item: %s (see /clarity scores)", name);
        rc = CLARITY_ENOTFOUND;
    } else if (!it && !id) {
        *err = strdup("not a valid item name");
        rc = CLARITY_EINVAL;
    } else {
        if (!it) it = tracker_touch(&s->t, id, tracker_category_of_id(id), engine_now_ms(e));
        if (!it) {
            rc = CLARITY_ENOMEM;
        } else {
            if (anchor) tracker_anchor(&s->t, it, reason && *reason ? reason : "user-command", engine_now_ms(e));
            else tracker_unanchor(&s->t, it);
            rc = persist_flush(e, s);
            buf_printf(out, "%s: %s\n", anchor ? "Anchored" : "Unanchored", it->id);
            if (rc != CLARITY_OK) *err = strdup("the change is kept in memory but could not be persisted");
        }
    }
    free(id);
    return rc;
}

static int tier_cmd(engine *e, session *s, char *arg, buf *out, char **err)
{
    char *sp = strrchr(arg, ' ');
    int tier = sp ? tracker_tier_from_name(sp + 1) : -1;
    if (tier < 0) {
        *err = strdup("usage: /clarity tier <item> <essential|high|normal|low>");
        return CLARITY_EINVAL;
    }
    *sp = '\0';
    item *it = view_lookup(e, s, arg, NULL);
    if (!it) {
        *err = strdup("unknown item (see /clarity scores)");
        return CLARITY_ENOTFOUND;
    }
    tracker_set_tier(&s->t, it, tier);
    buf_printf(out, "Tier of %s: %s\n", it->id, tracker_tier_name(tier));
    return persist_flush(e, s);
}

static int prune_cmd(engine *e, session *s, const char *arg, buf *out)
{
    int dry = strcmp(arg, "--dry-run") == 0;
    prune_result r;
    int rc = pruner_decide(&e->cfg, &e->tables, &s->t, e->cfg.strict_mode, &r);
    if (rc != CLARITY_OK) return rc;
    if (!dry) pruner_apply(&s->t, &r);
    pruner_report(&r, !dry, e->cfg.strict_mode, out);
    pruner_result_free(&r);
    return dry ? CLARITY_OK : persist_flush(e, s);
}

int gateway_command(engine *e, const char *session_id, const char *line, buf *out, char **err)
{
    if (!line) return CLARITY_DECLINED;
    while (isspace((unsigned char)*line)) line++;
    if (strncmp(line, "/clarity", 8) != 0 || (line[8] && !isspace((unsigned char)line[8])))
        return CLARITY_DECLINED;
    char *copy = strdup(line + 8);
    if (!copy) return CLARITY_ENOMEM;
    char *p = copy;
    while (isspace((unsigned char)*p)) p++;
    size_t n = strlen(p);
    while (n && isspace((unsigned char)p[n - 1])) p[--n] = '\0';
    char *arg = p + strcspn(p, " \t");
    if (*arg) *arg++ = '\0';
    while (isspace((unsigned char)*arg)) arg++;

    int rc = CLARITY_OK;
    if (strcmp(p, "help") == 0) {
        buf_puts(out, help_text);
        goto done;
    }
    if (strcmp(p, "config") == 0) {
        char *json = config_to_json(&e->cfg);
        if (!json) rc = CLARITY_ENOMEM;
        else buf_printf(out, "Clarity effective configuration:\n%s\n", json);
        free(json);
        goto done;
    }
    static const char *const known[] = {"", "scores", "anchor", "unanchor", "tier", "prune", "stats",
                                        "context", "progress"};
    int ok = 0;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) ok |= strcmp(p, known[i]) == 0;
    if (!ok) {
        size_t m = strlen(p) + 64;
        *err = malloc(m);
        if (*err) snprintf(*err, m, "unknown subcommand \"%s\" (try /clarity help)", p);
        rc = CLARITY_EINVAL;
        goto done;
    }
    size_t limit = 50;
    if (strcmp(p, "scores") == 0 && *arg && scores_limit(arg, &limit) != 0) {
        *err = util_format("usage: /clarity scores [N]: N must be a whole number from 1 to 100000, "
                           "got \"%.40s\"", arg);
        rc = CLARITY_EINVAL;
        goto done;
    }
    session *s;
    rc = engine_acquire(e, session_id && *session_id ? session_id : "default", 1, &s);
    if (rc != CLARITY_OK) goto done;
    if (!*p) status(e, s, out);
    else if (strcmp(p, "scores") == 0) scores(e, s, limit, out);
    else if (strcmp(p, "stats") == 0) stats(e, s, out);
    else if (strcmp(p, "context") == 0) assemble_report_text(s, out);
    else if (strcmp(p, "progress") == 0) progress_text(e, s, out);
    else if (strcmp(p, "anchor") == 0) rc = anchor_cmd(e, s, arg, 1, out, err);
    else if (strcmp(p, "unanchor") == 0) rc = anchor_cmd(e, s, arg, 0, out, err);
    else if (strcmp(p, "tier") == 0) rc = tier_cmd(e, s, arg, out, err);
    else if (strcmp(p, "prune") == 0) rc = prune_cmd(e, s, arg, out);
    engine_release(e, s);
done:
    free(copy);
    if (rc == CLARITY_OK && buf_failed(out)) rc = CLARITY_ENOMEM;
    return rc;
}
