#!/usr/bin/env python3
"""chart_turn.py: per-turn time against tracked items, clarity (memory and
SQLite stores, SQLite with storage.exclusive) and the original plugin, from
one `make -C bench compare` run.

  python3 bench/chart_turn.py [--out-dir bench/out] [--svg FILE] [--commit SHA]

Reads compare-clarity-memory-N.json, compare-clarity-sqlite-N.json,
compare-clarity-exclusive-N.json (when there) and compare-original-N.json for every N found; writes a standalone SVG (log-log
axes, p50 per turn, whiskers to p99) and prints the table with the ratios.
No dependencies beyond Python's standard library.
"""
import argparse, glob, json, math, os, re, sys

SERIES = [("clarity, memory store", "#1f77b4"), ("clarity, SQLite", "#2ca02c"),
          ("original (index.js wiring)", "#d62728"), ("clarity, SQLite exclusive", "#9467bd")]
STORE_SERIES = {"memory": 0, "sqlite": 1, "exclusive": 3}


def load(out_dir):
    rows = {}
    for path in glob.glob(os.path.join(out_dir, "compare-*-*.json")):
        m = re.search(r"compare-(clarity-memory|clarity-sqlite|clarity-exclusive|original)-(\d+)\.json$", path)
        if not m:
            continue
        with open(path) as f:
            d = json.load(f)
        n = int(m.group(2))
        if m.group(1) == "original":
            if d.get("skipped"):
                continue
            d = next((r for r in d["results"] if r["implementation"] == "original-v2"), None)
            if not d:
                continue
            key = SERIES[2][0]
        else:
            key = SERIES[STORE_SERIES[m.group(1).split("-", 1)[1]]][0]
        rows.setdefault(n, {})[key] = (d["turn"]["p50us"], d["turn"]["p99us"])
    return dict(sorted(rows.items()))


def svg(rows, title):
    W, H, L, R, T, B = 720, 440, 80, 230, 50, 60
    xs = list(rows)
    ys = [v for r in rows.values() for p in r.values() for v in p]
    x0, x1 = math.log10(min(xs)) - 0.15, math.log10(max(xs)) + 0.15
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    px = lambda x: L + (math.log10(x) - x0) / (x1 - x0) * (W - L - R)
    py = lambda y: H - B - (math.log10(y) - y0) / (y1 - y0) * (H - T - B)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L}" y="24" font-size="14" font-weight="bold">{title}</text>']
    for e in range(y0, y1 + 1):
        y = py(10 ** e)
        label = f"{10 ** e:g} µs" if e < 3 else f"{10 ** (e - 3):g} ms"
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    for x in xs:
        o.append(f'<text x="{px(x):.1f}" y="{H - B + 18}" text-anchor="middle">{x:,}</text>')
    o.append(f'<text x="{(L + W - R) / 2}" y="{H - 18}" text-anchor="middle">tracked items (log)</text>')
    o.append(f'<text x="18" y="{(T + H - B) / 2}" transform="rotate(-90 18 {(T + H - B) / 2})" '
             f'text-anchor="middle">time per turn, p50 (whisker: p99), log</text>')
    for i, (name, color) in enumerate(SERIES):
        pts = [(x, rows[x][name]) for x in xs if name in rows[x]]
        if not pts:
            continue
        path = " ".join(f"{'M' if k == 0 else 'L'}{px(x):.1f},{py(p50):.1f}" for k, (x, (p50, _)) in enumerate(pts))
        o.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, (p50, p99) in pts:
            o.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{py(p50):.1f}" y2="{py(p99):.1f}" stroke="{color}"/>')
            o.append(f'<circle cx="{px(x):.1f}" cy="{py(p50):.1f}" r="4" fill="{color}"/>')
        ly = T + 20 + 22 * i
        o.append(f'<rect x="{W - R + 16}" y="{ly - 9}" width="12" height="12" fill="{color}"/>')
        o.append(f'<text x="{W - R + 34}" y="{ly + 1}">{name}</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(__file__), "out"))
    ap.add_argument("--svg", default=None)
    ap.add_argument("--commit", default="")
    a = ap.parse_args()
    rows = load(a.out_dir)
    if not rows:
        sys.exit(f"chart_turn: no compare-*.json in {a.out_dir} (make -C bench compare)")
    print(f"{'items':>8} {'memory p50':>12} {'SQLite p50':>12} {'excl. p50':>12} {'original p50':>13}"
          f" {'x (SQLite)':>11} {'x (excl.)':>11} {'x (memory)':>11}")
    for n, r in rows.items():
        m, q, o, x = (r.get(s[0], (float('nan'),))[0] for s in SERIES)
        print(f"{n:>8} {m:>10.0f}us {q:>10.0f}us {x:>10.0f}us {o:>11.0f}us {o / q:>11.1f} {o / x:>11.1f} {o / m:>11.1f}")
    if a.svg:
        title = "Per-turn time, 4 KiB prompt + 16 KiB reply" + (f" (commit {a.commit})" if a.commit else "")
        with open(a.svg, "w") as f:
            f.write(svg(rows, title))
        print(f"chart: {a.svg}")


if __name__ == "__main__":
    main()
