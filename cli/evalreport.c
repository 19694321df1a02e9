/* evalreport.c: the self-contained HTML report of `clarity eval`: the
 * summary table and one inline SVG bar chart per metric (configs first,
 * then the baselines, each bar labelled with its value). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "eval.h"

#define NMETRICS 5
#define CH_W 520 /* at least; wider with many columns */
#define CH_H 300
#define SLOT_MIN 64 /* px per bar */
#define PAD_L 64
#define PAD_R 16
#define PAD_T 48
#define PAD_B 64
#define PAD_B_ROT 96 /* rotated column names */

typedef struct metric_def {
    const char *title, *axis;
    int percent; /* value is a fraction shown as % */
} metric_def;

static const metric_def METRICS[NMETRICS] = {
    {"recall@5", "recall (%)", 1},
    {"recall@10", "recall (%)", 1},
    {"recall@20", "recall (%)", 1},
    {"gold rank median (lower is better)", "median rank", 0},
    {"gold files tracked", "tracked (%)", 1},
};

/* The value of metric k for a column; 0 when it has none. */
static int metric_value(const ev_metrics *m, int k, double *v)
{
    if (k < EV_NK) {
        *v = 100 * m->recall[k];
        return m->recall_turns > 0;
    }
    if (k == 3) {
        *v = m->gold_rank_median;
        return m->gold_tracked_pairs > 0;
    }
    *v = 100 * m->gold_tracked;
    return m->gold_pairs > 0;
}

static void esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* The smallest 1, 2 or 5 x 10^k at or above v (v > 0); no libm needed. */
static double nice_ceil(double v)
{
    double p = 1;
    while (p > v) p /= 10;
    while (p * 10 <= v) p *= 10;
    static const double steps[] = {1, 2, 5, 10};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i] * p >= v - 1e-9) return steps[i] * p;
    return 10 * p;
}

static void chart(FILE *f, const eval_report *r, int k)
{
    const metric_def *d = &METRICS[k];
    double top = 100;
    if (!d->percent) {
        double mx = 0, v;
        for (size_t i = 0; i < r->ncols; i++)
            if (metric_value(&r->cols[i].m, k, &v) && v > mx) mx = v;
        top = mx > 0 ? nice_ceil(mx) : 1;
    }
    size_t nconf = 0, longest = 0;
    for (size_t i = 0; i < r->ncols; i++) {
        nconf += !r->cols[i].baseline;
        if (strlen(r->cols[i].name) > longest) longest = strlen(r->cols[i].name);
    }
    double slots = (double)r->ncols + (nconf && nconf < r->ncols ? 0.6 : 0); /* group gap */
    int W = CH_W;
    if (PAD_L + PAD_R + slots * SLOT_MIN > W) W = PAD_L + PAD_R + (int)(slots * SLOT_MIN);
    int pw = W - PAD_L - PAD_R;
    double slot = pw / slots, bw = slot * 0.62;
    int rotate = (double)longest * 7 > slot - 4; /* ~7 px per character at 12px */
    int H = rotate ? CH_H - PAD_B + PAD_B_ROT : CH_H;
    int ph = CH_H - PAD_T - PAD_B;

    fprintf(f, "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", W, H, W, H);
    esc(f, d->title);
    fprintf(f, "\">\n<text x=\"%d\" y=\"22\" class=\"title\">", W / 2);
    esc(f, d->title);
    fputs("</text>\n", f);
    /* grid and y ticks */
    for (int t = 0; t <= 5; t++) {
        double val = top * t / 5;
        double y = PAD_T + ph - ph * (double)t / 5;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" class=\"%s\"/>\n", PAD_L, y,
                W - PAD_R, y, t ? "grid" : "axis");
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"tick\">%g</text>\n", PAD_L - 6, y + 4, val);
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"axis\"/>\n", PAD_L, PAD_T,
            PAD_L, PAD_T + ph);
    fprintf(f, "<text transform=\"translate(16 %d) rotate(-90)\" class=\"alabel\">", PAD_T + ph / 2);
    esc(f, d->axis);
    fputs("</text>\n", f);
    /* bars */
    double x = PAD_L;
    for (size_t i = 0; i < r->ncols; i++) {
        const eval_column *col = &r->cols[i];
        if (col->baseline && i == nconf && nconf) x += slot * 0.6;
        double cx = x + slot / 2, v;
        int has = metric_value(&col->m, k, &v);
        double h = has ? ph * (v > top ? 1 : v / top) : 0;
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"%s\">"
                "<title>", cx - bw / 2, PAD_T + ph - h, bw, h, col->baseline ? "base" : "conf");
        esc(f, col->name);
        fputs("</title></rect>\n", f);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"val\">", cx, PAD_T + ph - h - 5);
        if (!has) fputs("n/a", f);
        else if (d->percent) fprintf(f, "%.1f%%", v);
        else fprintf(f, "%.1f", v);
        fputs("</text>\n", f);
        if (rotate)
            fprintf(f, "<text transform=\"translate(%.1f %d) rotate(-35)\" class=\"xr\">", cx + 4,
                    PAD_T + ph + 14);
        else
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"xl\">", cx, PAD_T + ph + 18);
        esc(f, col->name);
        fputs("</text>\n", f);
        x += slot;
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"alabel\">config (blue) / baseline (grey)</text>\n",
            PAD_L + pw / 2, H - 12);
    fputs("</svg></figure>\n", f);
}

static void table(FILE *f, const eval_report *r)
{
    fputs("<table>\n<tr><th>metric</th>", f);
    for (size_t i = 0; i < r->ncols; i++) {
        fprintf(f, "<th class=\"%s\">", r->cols[i].baseline ? "base" : "conf");
        esc(f, r->cols[i].name);
        fputs("</th>", f);
    }
    fputs("</tr>\n", f);
    for (int k = 0; k < NMETRICS; k++) {
        fputs("<tr><td>", f);
        esc(f, METRICS[k].title);
        fputs("</td>", f);
        for (size_t i = 0; i < r->ncols; i++) {
            double v;
            if (!metric_value(&r->cols[i].m, k, &v)) fputs("<td>n/a</td>", f);
            else if (METRICS[k].percent) fprintf(f, "<td>%.1f%%</td>", v);
            else fprintf(f, "<td>%.1f</td>", v);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

int eval_report_html(const eval_report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<title>clarity eval</title>\n<style>\n"
          "body{font-family:system-ui,sans-serif;margin:24px;color:#222;background:#fff}\n"
          "h1{font-size:20px;margin:0 0 4px}p{margin:4px 0;color:#555}\n"
          "table{border-collapse:collapse;margin:16px 0}\n"
          "th,td{border:1px solid #ccc;padding:4px 10px;text-align:right;white-space:nowrap}\n"
          "td:first-child,th:first-child{text-align:left}\n"
          "th.conf{background:#dbe8f7}th.base{background:#eee}\n"
          ".charts{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0}\n"
          "svg{border:1px solid #ddd;background:#fff}\n"
          "svg text{font-size:12px;fill:#333}\n"
          "svg .title{font-size:14px;font-weight:600;text-anchor:middle}\n"
          "svg .tick{text-anchor:end;fill:#666}svg .val{text-anchor:middle;font-weight:600}\n"
          "svg .xl{text-anchor:middle}svg .xr{text-anchor:end}svg .alabel{text-anchor:middle;fill:#555}\n"
          "svg .grid{stroke:#e6e6e6}svg .axis{stroke:#888}\n"
          "svg rect.conf{fill:#3b78c4}svg rect.base{fill:#9a9a9a}\n"
          "</style></head><body>\n<h1>clarity eval</h1>\n<p>corpus <code>", f);
    esc(f, r->corpus);
    fprintf(f, "</code>: %zu sessions, %zu turns, horizon H = %d</p>\n", r->sessions, r->turns,
            r->horizon);
    if (r->ncols)
        fprintf(f, "<p>recall@K: share of the items used again (mentioned or referenced) within "
                "the next %d turns that the ranking puts in its top K, averaged over the %zu "
                "turns where such items exist. Gold rank: median 1-based rank of the files the "
                "fix changed, over %zu (turn, file) pairs before the first edit, where the file "
                "is tracked.</p>\n", r->horizon, r->cols[0].m.recall_turns, r->cols[0].m.gold_pairs);
    table(f, r);
    fputs("<div class=\"charts\">\n", f);
    for (int k = 0; k < NMETRICS; k++) chart(f, r, k);
    fputs("</div>\n</body></html>\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        if (!errno) errno = EIO;
        return -1;
    }
    return 0;
}
