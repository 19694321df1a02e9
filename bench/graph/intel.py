#!/usr/bin/env python3
"""Code intelligence latency and zoom size on real repositories.

For a repository with a built graph, through one `clarity serve` (memory
store; the graph's cache is the repository's own): warm latency of
clarity.zoom on files and directories, clarity.impact at depth 3 on
functions that have callers, clarity.cochange on files with history; and
how large zoom level 0 is against the file (tokens ~ bytes / 4).  Latency
is measured by this driver around each JSON-RPC round trip, so it includes
the pipe and JSON on both sides (an upper bound of the method's own time).

usage: bench/graph/intel.py --clarity build/clarity REPO [REPO ...] [--n 200]
"""
import argparse, json, os, random, sqlite3, subprocess, sys, time


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else 0.0


class Serve:
    def __init__(self, clarity, cfg):
        self.p = subprocess.Popen([clarity, "-q", "serve", "--config", cfg], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1)
        self.id = 0

    def call(self, method, params):
        self.id += 1
        t0 = time.perf_counter()
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        ms = (time.perf_counter() - t0) * 1000
        return json.loads(line), ms

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clarity", required=True)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("repos", nargs="+")
    a = ap.parse_args()
    cfg = "/tmp/clarity-intel-bench.json"
    with open(cfg, "w") as f:
        json.dump({"storage": {"backend": "memory"}}, f)
    rng = random.Random(1)
    for repo in a.repos:
        repo = os.path.realpath(repo)
        db = sqlite3.connect(os.path.join(repo, ".clarity", "graph.db"))
        files = [r[0] for r in db.execute("SELECT path FROM files WHERE is_test = 0 ORDER BY path")]
        dirs = sorted({os.path.dirname(p) for p in files if os.path.dirname(p)})
        called = [r[0] for r in db.execute(
            "SELECT s.name FROM symbols s WHERE s.kind IN (0, 2) AND length(s.name) > 3 AND s.name IN "
            "(SELECT name FROM calls) GROUP BY s.name HAVING count(DISTINCT s.file_id) = 1")]
        hist = [r[0] for r in db.execute("SELECT path FROM commit_files WHERE n >= 5 AND path IN (SELECT path FROM files)")]
        db.close()
        s = Serve(a.clarity, cfg)
        s.call("clarity.zoom", {"repo": repo, "path": files[0]})  # warm: opens the graph once
        out = {}
        for name, method, pick in (
                ("zoom file", "clarity.zoom", lambda: {"path": rng.choice(files)}),
                ("zoom directory", "clarity.zoom", lambda: {"path": rng.choice(dirs)}),
                ("impact depth 3", "clarity.impact", lambda: {"symbol": rng.choice(called), "depth": 3}),
                ("cochange", "clarity.cochange", lambda: {"path": rng.choice(hist), "k": 20})):
            lat = []
            for _ in range(a.n):
                r, ms = s.call(method, dict(pick(), repo=repo))
                if "error" in r:
                    raise SystemExit("%s: %s" % (method, r["error"]))
                lat.append(ms)
            out[name] = (pct(lat, 0.5), pct(lat, 0.99))
        ratios, zb, fb = [], 0, 0
        for p in files:
            full = os.path.join(repo, p)
            size = os.path.getsize(full)
            if size < 200:
                continue
            r, _ = s.call("clarity.zoom", {"repo": repo, "path": p})
            z = sum(len(x.get("signature", "")) + len(x.get("doc", "")) +
                    sum(len(c.get("signature", "")) + len(c.get("doc", "")) for c in x.get("children", []))
                    for x in r["result"]["symbols"])
            ratios.append(z / size)
            zb += z
            fb += size
        s.close()
        print("%s: %d files, %d directories, %d single-definition called functions, %d files with history"
              % (repo, len(files), len(dirs), len(called), len(hist)))
        for k, (p50, p99) in out.items():
            print("  %-16s p50 %6.2f ms  p99 %6.2f ms" % (k, p50, p99))
        print("  zoom level 0 size / file size: mean %.3f per file, %.3f overall (%d files over 200 bytes)"
              % (sum(ratios) / max(1, len(ratios)), zb / max(1, fb), len(ratios)))


if __name__ == "__main__":
    main()
