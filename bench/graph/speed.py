#!/usr/bin/env python3
"""Build and query speed of the code graph on one repository.

    python3 bench/graph/speed.py REPO BASE NEXT --clarity build/clarity [--clarity other/clarity]
        [--runs 3] [--prompts prompts.txt] [--repeat 500]

REPO is a scratch clone (its .clarity/ is rebuilt); BASE and NEXT are two
commits, NEXT one commit after BASE.  For each clarity binary, interleaved
run by run: the full build (cold cache), the refresh from BASE to NEXT
(the BASE cache restored each time), the no-op refresh, each with wall
time, user+sys CPU, peak RSS and the 1-minute load average before the run.
With --prompts (one prompt a line), the warm query p50/p99 over --repeat
runs of each prompt inside one process (`clarity predict --repeat`),
--runs times (--rt: under SCHED_FIFO, so that other jobs on a shared
machine do not preempt a query: on a loaded machine the p99 of 500 runs
otherwise measures 4 ms scheduler slices).  Prints one JSON line per measurement and a summary.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run(cmd, cwd=None):
    """(wall s, cpu s, peak RSS KB of the children so far, stdout)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr))
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu, p.stdout


def peak_rss(cmd):
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True)
    return int(p.stderr.strip().splitlines()[-1])


def git(repo, *args):
    subprocess.run(["git", "-C", repo] + list(args), check=True, capture_output=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("repo")
    ap.add_argument("base")
    ap.add_argument("next")
    ap.add_argument("--clarity", action="append", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--prompts")
    ap.add_argument("--repeat", type=int, default=500)
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--rt", action="store_true",
                    help="run the queries under SCHED_FIFO (chrt -f 10): other jobs on a shared "
                         "machine cannot preempt them, so p99 shows the query, not the scheduler")
    a = ap.parse_args()
    repo = os.path.abspath(a.repo)
    cache = os.path.join(repo, ".clarity")
    res = {c: {"full": [], "full_cpu": [], "rss": [], "commit": [], "noop": []} for c in a.clarity}
    saved = {}
    if not a.skip_build:
        for c in a.clarity:  # a BASE cache per binary, restored before each refresh
            git(repo, "checkout", "-q", a.base)
            shutil.rmtree(cache, ignore_errors=True)
            run([c, "graph", "build", repo, "--json"])
            d = "/tmp/speed-cache-%d" % abs(hash(c))
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(cache, d)
            saved[c] = d
        for i in range(a.runs):
            for c in a.clarity:
                git(repo, "checkout", "-q", a.next)
                shutil.rmtree(cache, ignore_errors=True)
                l = load1()
                w, cpu, out = run([c, "graph", "build", repo, "--json"])
                res[c]["full"].append(w)
                res[c]["full_cpu"].append(cpu)
                print(json.dumps({"clarity": c, "what": "full", "wall_s": round(w, 3),
                                  "cpu_s": round(cpu, 3), "load": l,
                                  "build": json.loads(out)}), flush=True)
                shutil.rmtree(cache, ignore_errors=True)
                res[c]["rss"].append(peak_rss([c, "graph", "build", repo, "--json"]))
                # BASE -> NEXT
                git(repo, "checkout", "-q", a.base)
                shutil.rmtree(cache, ignore_errors=True)
                shutil.copytree(saved[c], cache)
                git(repo, "checkout", "-q", a.next)
                l = load1()
                w, cpu, out = run([c, "graph", "build", repo, "--json"])
                res[c]["commit"].append(w * 1000)
                print(json.dumps({"clarity": c, "what": "one commit", "wall_ms": round(w * 1000, 1),
                                  "load": l, "build": json.loads(out)}), flush=True)
                for _ in range(3):
                    l = load1()
                    w, cpu, out = run([c, "graph", "build", repo, "--json"])
                    res[c]["noop"].append(w * 1000)
                    print(json.dumps({"clarity": c, "what": "no-op", "wall_ms": round(w * 1000, 1),
                                      "load": l}), flush=True)
        for c in a.clarity:
            r = res[c]
            print("%s: full build median %.2f s wall (min %.2f), %.2f s CPU, peak RSS %d MB; "
                  "one commit median %.0f ms (min %.0f); no-op median %.0f ms (min %.0f)"
                  % (c, statistics.median(r["full"]), min(r["full"]), statistics.median(r["full_cpu"]),
                     max(r["rss"]) // 1024, statistics.median(r["commit"]), min(r["commit"]),
                     statistics.median(r["noop"]), min(r["noop"])))
    if a.prompts:
        git(repo, "checkout", "-q", a.next)
        c = a.clarity[0]
        run([c, "graph", "build", repo, "--json"])
        with open(a.prompts, newline="\n") as f:
            prompts = [l.strip() for l in f.read().split("\n") if l.strip()]
        # a prompt that starts with '-' would read as an option
        prompts = [" " + p if p.startswith("-") else p for p in prompts]
        p50s, p99s = [], []
        for i in range(a.runs):
            for p in prompts:
                l = load1()
                rt = ["chrt", "-f", "10"] if a.rt else []
                _, _, out = run(rt + [c, "predict", repo, p, "--repeat", str(a.repeat), "--json"])
                j = json.loads(out)
                p50s.append(j["p50"])
                p99s.append(j["p99"])
                print(json.dumps({"what": "query", "p50": j["p50"], "p99": j["p99"], "load": l}),
                      flush=True)
        p99s.sort()
        print("query over %d prompts x %d runs x %d repeats: median p50 %.3f ms, p99 per prompt: "
              "median %.3f ms, 90th pct %.3f ms, max %.3f ms"
              % (len(prompts), a.runs, a.repeat, statistics.median(p50s), statistics.median(p99s),
                 p99s[int(len(p99s) * 0.9)], p99s[-1]))


if __name__ == "__main__":
    main()
