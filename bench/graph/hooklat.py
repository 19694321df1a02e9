#!/usr/bin/env python3
"""What a code graph costs a long-lived gateway's prompts.

    python3 bench/graph/hooklat.py REPO --clarity build/clarity [--clarity other/clarity]
        [--runs 3] [--prompt TEXT] [--touch PATH] [--json FILE]

REPO is a scratch clone with a graph (`clarity graph build REPO`); the run
commits to it and resets the commit afterwards.  For each clarity binary,
interleaved run by run, through `clarity serve` (one process per run, the
memory store):

  first    the first prompt on the workspace, for prediction.loadWaitMs
           -1 (wait for the graph), 0 (never) and 1000 (serve's default):
           its latency and how many files it predicted;
  refresh  autoRefresh on: a prompt every 0.25 s for 8 s, with a commit to
           --touch after 2 s; the latency of the slowest prompt after the
           first (the refresh's and reload's, when they run in the prompt)
           and the median;
  hook     Claude Code's UserPromptSubmit hook, a process per prompt
           (`clarity hook` with the event on stdin), five times: its wall
           time, process start to exit, and the files it predicted.

The -1 rows give no loadWaitMs (the default), so a binary from before the
setting runs them; it refuses the config with 0 or 1000, and its rows
say so.  Prints a table and, with --json,
writes every measurement.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PROMPT = "fix the bug in the parser when the input is empty"


def git(repo, *args):
    subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True)


class Serve:
    def __init__(self, clarity, config):
        self.f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(config, self.f)
        self.f.close()
        self.p = subprocess.Popen([clarity, "serve", "--config", self.f.name], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.id = 0

    def prompt(self, ws, text):
        """(ms, predicted files) of one before_agent_start, or None when refused."""
        self.id += 1
        req = {"jsonrpc": "2.0", "id": self.id, "method": "hook.before_agent_start",
               "params": {"session": "bench", "workspace": ws, "prompt": text}}
        t0 = time.perf_counter()
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        ms = (time.perf_counter() - t0) * 1e3
        if not line:
            return None
        block = json.loads(line).get("result", {}).get("prependContext", "")
        return ms, block.count("\u2192")

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        self.p.wait()
        os.unlink(self.f.name)


def first_prompt(clarity, repo, wait, text):
    pred = {} if wait == -1 else {"loadWaitMs": wait}  # -1: the default (a binary before the key has it)
    s = Serve(clarity, {"storage": {"backend": "memory"}, "prediction": pred})
    r = s.prompt(repo, text)
    s.close()
    return r


def refresh(clarity, repo, touch, text, seconds=8.0, commit_at=2.0):
    s = Serve(clarity, {"storage": {"backend": "memory"}, "prediction": {"autoRefresh": True}})
    lat, t0, committed = [], time.monotonic(), False
    while time.monotonic() - t0 < seconds:
        if not committed and time.monotonic() - t0 >= commit_at:
            with open(os.path.join(repo, touch), "a") as f:
                f.write("\n")
            git(repo, "commit", "-qam", "hooklat: touch")
            committed = True
        r = s.prompt(repo, text)
        if r is None:
            break
        lat.append(r[0])
        time.sleep(0.25)
    s.close()
    if committed:
        git(repo, "reset", "-q", "--hard", "HEAD~1")
    later = lat[1:]
    return {"first": lat[0] if lat else None, "max": max(later) if later else None,
            "median": statistics.median(later) if later else None, "prompts": len(lat)}


def hook(clarity, repo, text, times=5):
    """(median ms, predicted files) of `clarity hook` UserPromptSubmit processes."""
    event = json.dumps({"session_id": "hooklat", "transcript_path": os.path.join(repo, "none.jsonl"),
                        "cwd": repo, "hook_event_name": "UserPromptSubmit", "prompt": text})
    ms, files = [], 0
    with tempfile.TemporaryDirectory() as d:
        for _ in range(times):
            t0 = time.perf_counter()
            p = subprocess.run([clarity, "hook", "--state", os.path.join(d, "state.db")], input=event,
                               capture_output=True, text=True)
            ms.append((time.perf_counter() - t0) * 1e3)
            files = p.stdout.count("\u2192") + p.stdout.count("\\u2192")
    return statistics.median(ms), files


def default_touch(repo):
    out = subprocess.run(["git", "-C", repo, "ls-files"], capture_output=True, text=True, check=True).stdout
    for p in out.splitlines():
        if p.endswith((".py", ".ts", ".js", ".c", ".go", ".rs")):
            return p
    sys.exit("no source file to touch in %s: give --touch" % repo)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo")
    ap.add_argument("--clarity", action="append", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--prompt", default=PROMPT)
    ap.add_argument("--touch")
    ap.add_argument("--json")
    a = ap.parse_args()
    repo = os.path.realpath(a.repo)
    if not os.path.exists(os.path.join(repo, ".clarity", "graph.db")):
        sys.exit("%s has no graph: run clarity graph build %s first" % (repo, repo))
    touch = a.touch or default_touch(repo)
    rows = []
    for run in range(a.runs):
        for cl in a.clarity:
            subprocess.run([cl, "graph", "build", repo], check=True, capture_output=True)
            for wait in (-1, 0, 1000):
                r = first_prompt(cl, repo, wait, a.prompt)
                rows.append({"clarity": cl, "run": run, "what": "first", "loadWaitMs": wait,
                             "ms": r[0] if r else None, "predicted": r[1] if r else None})
                print("run %d %s first prompt, loadWaitMs %5d: %s" % (
                    run + 1, cl, wait, "refused" if not r else "%.1f ms, %d files" % r), file=sys.stderr)
            ms, files = hook(cl, repo, a.prompt)
            rows.append({"clarity": cl, "run": run, "what": "hook", "ms": ms, "predicted": files})
            print("run %d %s Claude Code prompt hook: %.1f ms, %d files" % (run + 1, cl, ms, files),
                  file=sys.stderr)
            r = refresh(cl, repo, touch, a.prompt)
            rows.append({"clarity": cl, "run": run, "what": "refresh", **r})
            print("run %d %s autoRefresh around a commit: slowest later prompt %.1f ms, median %.2f ms" % (
                run + 1, cl, r["max"] or 0, r["median"] or 0), file=sys.stderr)
    print("\n| clarity | first prompt, wait -1 | wait 0 | wait 1000 | slowest prompt after a commit "
          "(autoRefresh) | median prompt | Claude Code prompt hook |")
    print("|---|---|---|---|---|---|---|")
    for cl in a.clarity:
        def med(what, key, **kw):
            v = [r[key] for r in rows if r["clarity"] == cl and r["what"] == what and r.get(key) is not None
                 and all(r.get(k) == x for k, x in kw.items())]
            return statistics.median(v) if v else None

        def cell(wait):
            ms, n = med("first", "ms", loadWaitMs=wait), med("first", "predicted", loadWaitMs=wait)
            return "refused" if ms is None else "%.1f ms (%d files)" % (ms, n)

        print("| %s | %s | %s | %s | %.1f ms | %.2f ms | %.1f ms (%d files) |" % (
            cl, cell(-1), cell(0), cell(1000), med("refresh", "max") or 0, med("refresh", "median") or 0,
            med("hook", "ms") or 0, med("hook", "predicted") or 0))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"repo": repo, "prompt": a.prompt, "touch": touch, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
