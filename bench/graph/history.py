#!/usr/bin/env python3
"""Commit-history benchmark for `clarity predict`.

usage: history.py MIRROR_GIT_DIR BASE_REF [--clarity BUILD/clarity] [--limit N]
                  [--weights JSON] [--out FILE]

Checks BASE_REF out in a scratch clone, builds the graph there once, then for
each later non-merge commit (oldest first, on the first-parent line of the
mirror's HEAD) predicts its changed non-test source files from its subject
line, with a conventional-commit prefix "type(scope):" and a trailing
"(#123)" removed.  Commits that change no non-test source file (docs,
package.json, tests only) are not scored.  Reports hit@5 (some changed file
in the top 5), recall@5 and MRR.
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

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mirror"); ap.add_argument("base")
    ap.add_argument("--clarity", default="build/clarity")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--weights", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    wt = tempfile.mkdtemp(prefix="clarity-history-")
    sh("git", "clone", "-q", "--shared", "--no-checkout", a.mirror, wt)
    sh("git", "-C", wt, "checkout", "-q", "-f", a.base)
    build = json.loads(sh(a.clarity, "graph", "build", wt, "--json"))
    log = sh("git", "-C", wt, "log", "--reverse", "--no-merges", "--first-parent",
             "--format=%x01%H%x02%s", "--name-only", "--no-renames", f"{a.base}..origin/HEAD")
    n = hits = 0; recall = mrr = 0.0; per = []
    for block in log.split("\x01")[1:]:
        head, _, files = block.partition("\n")
        sha, _, subject = head.partition("\x02")
        gold = [f for f in files.split("\n") if f and CODE.search(f) and not TEST.search(f)]
        if not gold:
            continue
        if a.limit and n >= a.limit:
            break
        params = {"repo": wt, "prompt": clean(subject), "k": 10}
        if a.weights:
            params["weights"] = json.loads(a.weights)
        out = subprocess.run([a.clarity, "rpc", "clarity.predict", json.dumps(params)],
                             capture_output=True, text=True)
        try:
            top = [f["path"] for f in json.loads(out.stdout)["files"]]
        except Exception:
            top = []
        ranks = [top.index(g) + 1 for g in gold if g in top]
        top5 = [g for g in gold if g in top[:5]]
        n += 1
        hits += 1 if top5 else 0
        recall += len(top5) / len(gold)
        mrr += 1.0 / min(ranks) if ranks else 0.0
        per.append({"sha": sha[:10], "prompt": clean(subject), "gold": gold, "top5": top[:5]})
    summary = {"base": a.base, "commits": n, "hit@5": round(hits / max(n, 1), 3),
               "recall@5": round(recall / max(n, 1), 3), "mrr": round(mrr / max(n, 1), 3),
               "build": build}
    print(json.dumps(summary))
    if a.out:
        json.dump({"summary": summary, "commits": per}, open(a.out, "w"), indent=1)
    subprocess.run(["rm", "-rf", wt])

if __name__ == "__main__":
    main()
