#!/usr/bin/env python3
"""Draws the issue -> files results of bench/graph/swebench.py as an SVG.

    python3 bench/graph/plot.py OUT.svg RESULT.json[:SETTING]=LABEL ...

Each argument is one ranking: a --out file of swebench.py, optionally one
of its --grid settings (without: the run's own default weights), and the
label to show.  Bars: Acc@1/3/5/10 and MRR per ranking; dashed lines: the
Acc@5 target (0.80) and the plain BM25 reference of the data README (0.56).
"""
import json, sys
from xml.sax.saxutils import escape

METRICS = ["acc@1", "acc@3", "acc@5", "acc@10", "mrr"]
COLORS = ["#9ecae1", "#6baed6", "#2171b5", "#08519c", "#fd8d3c"]


def load(spec):
    src, _, label = spec.partition("=")
    path, _, setting = src.partition(":")
    d = json.load(open(path))
    row = d["grid"][setting] if setting else d["summary"]
    return label or setting or path, {m: row[m] for m in METRICS}, row.get("n")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = [load(s) for s in sys.argv[2:]]
    W, H, left, top, bottom, right = 980, 380, 60, 40, 80, 150
    ph = H - top - bottom
    gw = (W - left - right) / len(rows)
    bw = gw * 0.8 / len(METRICS)
    y = lambda v: top + ph * (1 - v)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="20" font-size="14">Issue -> files, SWE-bench dev set '
           f'(n = {rows[0][2]}): all gold files in the top k</text>']
    for t in range(0, 11, 2):
        v = t / 10
        out.append(f'<line x1="{left}" x2="{W - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                   f'stroke="#eee"/><text x="{left - 8}" y="{y(v) + 4:.1f}" '
                   f'text-anchor="end">{v:.1f}</text>')
    for v, what in ((0.80, "target Acc@5 0.80"), (0.562, "plain BM25 Acc@5 0.56")):
        out.append(f'<line x1="{left}" x2="{W - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                   f'stroke="#c00" stroke-dasharray="5,4"/><text x="{W - right + 6}" '
                   f'y="{y(v) + 4:.1f}" fill="#c00">{what}</text>')
    for i, (label, vals, _) in enumerate(rows):
        x0 = left + i * gw + gw * 0.1
        for j, m in enumerate(METRICS):
            v = vals[m]
            x = x0 + j * bw
            out.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bw - 2:.1f}" '
                       f'height="{ph * v:.1f}" fill="{COLORS[j]}"><title>{escape(label)} '
                       f'{m} {v:.3f}</title></rect>')
            out.append(f'<text x="{x + bw / 2 - 1:.1f}" y="{y(v) - 3:.1f}" font-size="9" '
                       f'text-anchor="middle">{v:.2f}</text>')
        words, line = label.split(), ""
        lines = []
        for w in words:
            if len(line) + len(w) > int(gw / 6):
                lines.append(line)
                line = w
            else:
                line = (line + " " + w).strip()
        lines.append(line)
        for k, ln in enumerate(lines[:4]):
            out.append(f'<text x="{x0 + gw * 0.4:.1f}" y="{H - bottom + 16 + 13 * k}" '
                       f'text-anchor="middle">{escape(ln)}</text>')
    for j, m in enumerate(METRICS):
        out.append(f'<rect x="{left + j * 80}" y="{H - 22}" width="10" height="10" '
                   f'fill="{COLORS[j]}"/><text x="{left + j * 80 + 14}" y="{H - 13}">{m}</text>')
    out.append("</svg>")
    open(sys.argv[1], "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
