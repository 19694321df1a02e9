#!/usr/bin/env python3
"""Commit-history benchmark for `clarity predict`.

usage: history.py MIRROR_GIT_DIR BASE_REF [--clarity BUILD/clarity] [--limit N]
                  [--weights JSON] [--grid FILE] [--out FILE]

Checks BASE_REF out in a scratch clone, builds the graph there once, then for
each later non-merge commit (oldest first, on the first-parent line of the
mirror's HEAD) predicts its changed non-test source files from its subject
line, with a conventional-commit prefix "type(scope):" and a trailing
"(#123)" removed.  Commits that change no non-test source file (docs,
package.json, tests only) are not scored.  Reports hit@5 (some changed file
in the top 5), recall@5 and MRR.  --grid FILE ({"name": {weights}, ...})
scores each weight setting as well, on the same graph.
"""
import argparse, json, os, re, subprocess, sys, tempfile

CODE = re.compile(r"\.(py|pyi|js|jsx|mjs|cjs|ts|mts|cts|tsx|go|rs|java|c|h)$")
TEST = re.compile(r"(^|/)(test|tests|testing|__tests__|spec|e2e)/|(^|/)test_[^/]*$|_test\.[a-z]+$|"
                  r"\.(test|spec)\.[a-z]+$|conftest\.py$")

def sh(*a):
    return subprocess.run(a, check=True, capture_output=True, text=True).stdout

def clean(subject):
    s = re.sub(r"^\s*[A-Za-z]+(\([^)]*\))?!?:\s*", "", subject)
    return re.sub(r"\s*\(#\d+\)\s*$", "", s)

class Score:
    def __init__(self):
        self.n = self.hits = 0; self.recall = self.mrr = 0.0
    def add(self, top, gold):
        ranks = [top.index(g) + 1 for g in gold if g in top]
        top5 = [g for g in gold if g in top[:5]]
        self.n += 1
        self.hits += 1 if top5 else 0
        self.recall += len(top5) / len(gold)
        self.mrr += 1.0 / min(ranks) if ranks else 0.0
    def summary(self):
        n = max(self.n, 1)
        return {"commits": self.n, "hit@5": round(self.hits / n, 3),
                "recall@5": round(self.recall / n, 3), "mrr": round(self.mrr / n, 3)}

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mirror"); ap.add_argument("base")
    ap.add_argument("--clarity", default="build/clarity")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--weights", default="")
    ap.add_argument("--grid", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    wt = tempfile.mkdtemp(prefix="clarity-history-")
    sh("git", "clone", "-q", "--shared", "--no-checkout", a.mirror, wt)
    sh("git", "-C", wt, "checkout", "-q", "-f", a.base)
    build = json.loads(sh(a.clarity, "graph", "build", wt, "--json"))
    log = sh("git", "-C", wt, "log", "--reverse", "--no-merges", "--first-parent",
             "--format=%x01%H%x02%s", "--name-only", "--no-renames", f"{a.base}..origin/HEAD")
    grid = json.load(open(a.grid)) if a.grid else {}
    names = list(grid)
    base = Score(); gs = {nm: Score() for nm in names}; per = []
    for block in log.split("\x01")[1:]:
        head, _, files = block.partition("\n")
        sha, _, subject = head.partition("\x02")
        gold = [f for f in files.split("\n") if f and CODE.search(f) and not TEST.search(f)]
        if not gold:
            continue
        if a.limit and base.n >= a.limit:
            break
        params = {"repo": wt, "prompt": clean(subject), "k": 10}
        if a.weights:
            params["weights"] = json.loads(a.weights)
        if names:
            params["weightSets"] = [grid[nm] for nm in names]
        out = subprocess.run([a.clarity, "rpc", "clarity.predict", json.dumps(params)],
                             capture_output=True, text=True)
        try:
            res = json.loads(out.stdout)
            top = [f["path"] for f in res["files"]]
            runs = res.get("runs", [])
        except Exception:
            top = []; runs = []
        base.add(top, gold)
        for i, nm in enumerate(names):
            gs[nm].add(runs[i] if i < len(runs) else [], gold)
        per.append({"sha": sha[:10], "prompt": clean(subject), "gold": gold, "top5": top[:5]})
    summary = {"base": a.base, **base.summary(), "build": build}
    print(json.dumps(summary))
    for nm in names:
        print(json.dumps({"setting": nm, **gs[nm].summary()}))
    if a.out:
        json.dump({"summary": summary, "grid": {nm: {"weights": grid[nm], **gs[nm].summary()}
                                                for nm in names},
                   "commits": per}, open(a.out, "w"), indent=1)
    subprocess.run(["rm", "-rf", wt])

if __name__ == "__main__":
    main()
