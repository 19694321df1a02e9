#!/usr/bin/env python3
"""Issue -> files benchmark for `clarity predict`.

usage: swebench.py DEV.jsonl MIRRORS_DIR [--clarity BUILD/clarity] [--repos a,b]
                   [--limit N] [--weights JSON] [--grid FILE] [--regex] [--out FILE]

For each instance {instance_id, repo, base_commit, problem_statement,
gold_files}: checks base_commit out in a per-repository scratch clone
(git clone --shared of MIRRORS_DIR/<owner>+<name>/repo, under $TMPDIR),
lets `clarity predict` build or refresh the graph there, predicts from the
problem statement, and scores Acc@1/3/5/10 (all gold files in the top k)
and MRR (reciprocal rank of the first gold file).

--grid FILE (a JSON object {"name": {weights}, ...}) also ranks every
instance under each weight setting on the same checkout and loaded graph
(one `clarity.predict` call with "weightSets"), and reports each setting's
scores: tuning costs one pass over the checkouts.
"""
import argparse, json, os, subprocess, sys, tempfile, time

def sh(*a, **kw):
    return subprocess.run(a, check=True, capture_output=True, text=True, **kw).stdout

KS = [1, 3, 5, 10]

class Score:
    def __init__(self):
        self.acc = {k: 0 for k in KS}; self.mrr = 0.0; self.n = 0
    def add(self, files, gold):
        ranks = [files.index(g) + 1 if g in files else None for g in gold]
        for k in KS:
            if all(x is not None and x <= k for x in ranks):
                self.acc[k] += 1
        found = [x for x in ranks if x]
        self.mrr += 1.0 / min(found) if found else 0.0
        self.n += 1
        return ranks
    def summary(self):
        n = max(self.n, 1)
        return {"n": self.n, **{f"acc@{k}": round(self.acc[k] / n, 3) for k in KS},
                "mrr": round(self.mrr / n, 3)}

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dev"); ap.add_argument("mirrors")
    ap.add_argument("--clarity", default="build/clarity")
    ap.add_argument("--repos", default="")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--weights", default="")
    ap.add_argument("--grid", default="")
    ap.add_argument("--regex", action="store_true")
    ap.add_argument("--out", default="")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "clarity-swebench"))
    a = ap.parse_args()
    rows = [json.loads(l) for l in open(a.dev)]
    if a.repos:
        keep = set(a.repos.split(","))
        rows = [r for r in rows if r["repo"].split("/")[1] in keep or r["repo"] in keep]
    # commit order per repository: checkouts move forward, refreshes stay incremental
    os.makedirs(a.work, exist_ok=True)
    order = {}
    for r in rows:
        order.setdefault(r["repo"], []).append(r)
    grid = json.load(open(a.grid)) if a.grid else {}
    names = list(grid)
    base = Score(); gs = {nm: Score() for nm in names}; lat = []; per = []; n = 0
    for repo, items in order.items():
        mirror = os.path.join(a.mirrors, repo.replace("/", "+"), "repo")
        wt = os.path.join(a.work, repo.replace("/", "+"))
        if not os.path.isdir(wt):
            sh("git", "clone", "-q", "--shared", "--no-checkout", mirror, wt)
        for r in items:
            r["_t"] = int(sh("git", "-C", wt, "show", "-s", "--format=%ct", r["base_commit"]).strip())
        items.sort(key=lambda r: r["_t"])
        for r in items:
            if a.limit and n >= a.limit:
                break
            co = subprocess.run(["git", "-C", wt, "checkout", "-q", "-f", r["base_commit"]],
                                capture_output=True, text=True)
            if co.returncode != 0:  # a blob the mirror lacks (large data file): HEAD still moves
                head = sh("git", "-C", wt, "rev-parse", "HEAD").strip()
                if head != r["base_commit"]:
                    raise SystemExit(f"checkout {r['base_commit']} failed: {co.stderr[:300]}")
                print("checkout incomplete:", co.stderr.strip()[:200], file=sys.stderr)
            if a.regex:
                sh(a.clarity, "graph", "build", wt, "--regex")
            params = {"repo": wt, "prompt": r["problem_statement"], "k": 10}
            if a.weights:
                params["weights"] = json.loads(a.weights)
            if names:
                params["weightSets"] = [grid[nm] for nm in names]
            t0 = time.time()
            out = subprocess.run([a.clarity, "rpc", "clarity.predict", json.dumps(params)],
                                 capture_output=True, text=True)
            wall = time.time() - t0
            try:
                res = json.loads(out.stdout)
                files = [f["path"] for f in res["files"]]
                runs = res.get("runs", [])
                lat.append(res["ms"])
            except Exception:
                print("predict failed:", r["instance_id"], out.stderr[:300], file=sys.stderr)
                files = []; runs = []
            gold = r["gold_files"]
            ranks = base.add(files, gold)
            n += 1
            row = {"id": r["instance_id"], "gold": gold, "top": files[:5], "ranks": ranks,
                   "wall_s": round(wall, 2)}
            if names:
                row["grid"] = {nm: gs[nm].add(runs[i] if i < len(runs) else [], gold)
                               for i, nm in enumerate(names)}
            per.append(row)
            print(f"{r['instance_id']:40s} ranks={ranks} wall={wall:.1f}s", file=sys.stderr)
    lat.sort()
    summary = {**base.summary(),
               "query_ms_p50": lat[len(lat) // 2] if lat else None,
               "query_ms_max": lat[-1] if lat else None,
               "weights": a.weights or "default", "parser": "regex" if a.regex else "auto"}
    print(json.dumps(summary))
    for nm in names:
        print(json.dumps({"setting": nm, **gs[nm].summary()}))
    if a.out:
        json.dump({"summary": summary, "grid": {nm: {"weights": grid[nm], **gs[nm].summary()}
                                                for nm in names},
                   "instances": per}, open(a.out, "w"), indent=1)

if __name__ == "__main__":
    main()
