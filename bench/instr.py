#!/usr/bin/env python3
"""Instructions per turn, counted by callgrind: the figures of issue 12
that must not depend on the machine's load.

Each case runs under valgrind --tool=callgrind, collecting only inside
hooks_on_event (the hooks' own work: no process start, no seeding import,
no text generation), and divides the instructions by the agent_end calls
counted in the same profile:

  dense-memory-1000    bench_turn --items 1000 --turns 150 --store memory
  dense-sqlite-1000    the same on SQLite (WAL, synchronous=normal)
  dense-memory-10000   bench_turn --items 10000 --turns 150 --store memory
  replay-memory        clarity replay DATA (dev-sessions.jsonl), memory store
  replay-sqlite        the same on SQLite
  hook-process         one whole `clarity hook` process (UserPromptSubmit), per
                       process rather than per turn

Each case's instructions are also split by the part of a turn that spent
them (PHASES: the inclusive cost of the function that does that part; the
rest is "other"), so that a change shows where it landed.

The replay's output is hashed (md5) so that a change of instructions can be
told from a change of what the hooks answer.  The replay cases are skipped
when DATA is missing (it lives outside the repository).

  python3 instr.py --build DIR [--data FILE] [--out FILE] [--tmp DIR] [--smoke]
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


# The parts of a turn, each the function that does it (none calls another).
PHASES = [
    ("prompt: mentions", "extract_mentions"),
    ("prompt: context block", "block_write"),
    ("reply text", "extract_candidates_stripped"),
    ("tool calls", "extract_tool_call"),
    ("tool output: progress signal", "progress_output"),
    ("persistence", "persist_flush"),
    ("session lookup and creation", "engine_acquire"),
]


def read_profile(path):
    """From a callgrind output file: the instructions collected, the
    agent_end calls, and the inclusive instructions of each PHASES part:
    the costs callgrind gives calls of its function (a call from itself, a
    recursion or its own inlined copy, is not counted twice); None for one
    never called (the case has no such part, or the build inlined it)."""
    want = {fn for _, fn in PHASES}
    ids, cur, callee, pending = {}, None, None, False
    total, turns, cost, seen = None, 0, {fn: 0 for fn in want}, set()
    with open(path) as f:
        for line in f:
            if line.startswith("totals:"):
                total = int(line.split()[1])
                continue
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if m:
                kind, ident, name = m.groups()
                if name:
                    ids[ident] = name
                if kind == "fn":
                    cur, callee = ids.get(ident), None
                else:
                    callee = ids.get(ident)
                continue
            if line.startswith("calls="):
                if callee == "agent_end":
                    turns += int(line.split()[0][len("calls="):])
                pending = True
                continue
            if pending:  # the line after calls=: the call's inclusive cost
                pending = False
                if callee in want and cur != callee:
                    cost[callee] += int(line.split()[-1])
                    seen.add(callee)
    phases = {label: (cost[fn] if fn in seen else None) for label, fn in PHASES}
    return total, turns, phases


def callgrind(cmd, tmp, label):
    """Runs cmd under callgrind; (instructions, turns, stdout bytes, phases)."""
    out = os.path.join(tmp, "callgrind." + label)
    full = ["valgrind", "--tool=callgrind", "--toggle-collect=hooks_on_event",
            "--callgrind-out-file=" + out] + cmd
    t0 = time.time()
    r = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (label, r.returncode, r.stderr.decode(errors="replace")[-600:]))
    total, turns, phases = read_profile(out)
    os.unlink(out)
    if not total or not turns:
        raise RuntimeError("%s: no instructions or no agent_end calls in the profile" % label)
    log("instr: %-20s %8.3f M instructions, %5d turns, %9.1f k a turn (%.0f s)"
        % (label, total / 1e6, turns, total / turns / 1e3, time.time() - t0))
    known = sum(v for v in phases.values() if v is not None)
    if known > total:  # a part counted twice: PHASES holds a function another calls
        raise RuntimeError("%s: the parts' %d instructions exceed the total %d" % (label, known, total))
    split = {k: (v / turns if v is not None else None) for k, v in phases.items()}
    split["other"] = (total - known) / turns
    log("instr:   " + ", ".join("%s %s" % (k, "-" if v is None else "%.1f k" % (v / 1e3))
                                for k, v in split.items()))
    return total, turns, r.stdout, split


def hook_process(cli, so, tmp):
    """Instructions of one whole `clarity hook` process (Claude Code runs one
    per event: loading the library and its libraries, opening the store,
    restoring the session, the hook, the exit), for a UserPromptSubmit on a
    session an earlier process made.  Nothing is toggled: all of it counts."""
    state = os.path.join(tmp, "hook-state.db")
    event = os.path.join(tmp, "hook-event.json")
    with open(event, "w") as f:
        json.dump({"session_id": "instr", "hook_event_name": "UserPromptSubmit", "cwd": tmp,
                   "transcript_path": os.path.join(tmp, "none.jsonl"),
                   "prompt": "fix the parser in src/parse.c and update README.md"}, f)
    cmd = [cli, "--plugin", so, "--state", state, "hook"]
    for _ in range(2):  # the session and its store exist before the measured one
        with open(event) as f:
            subprocess.run(cmd, stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    out = os.path.join(tmp, "callgrind.hook")
    with open(event) as f:
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + cmd, stdin=f,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0 or b"additionalContext" not in r.stdout:
        raise RuntimeError("hook-process failed (%d): %s" % (r.returncode, r.stderr.decode(errors="replace")[-600:]))
    total = None
    with open(out) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
    os.unlink(out)
    log("instr: %-20s %8.3f M instructions a process" % ("hook-process", total / 1e6))
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--data", default="")
    ap.add_argument("--out", default="out/instr.json")
    ap.add_argument("--tmp", default=tempfile.gettempdir())
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()

    so = os.path.abspath(os.path.join(a.build, "libclarity.so"))
    bench_turn = os.path.abspath(os.path.join(a.build, "bench_turn"))
    cli = os.path.abspath(os.path.join(a.build, "clarity"))
    result = {"kind": "smoke" if a.smoke else "full", "cases": []}
    if not shutil.which("valgrind"):
        result.update(skipped=True, reason="valgrind not found (apt-get install valgrind)")
        log("instr: valgrind not found; instruction counts skipped")
    else:
        v = subprocess.run(["valgrind", "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
        result["valgrind"] = v
        tmp = tempfile.mkdtemp(prefix="clarity-instr-", dir=a.tmp)
        try:
            run_cases(a, result, tmp, so, bench_turn, cli)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    return 0


def run_cases(a, result, tmp, so, bench_turn, cli):
    items, turns = (100, 8) if a.smoke else (1000, 150)
    dense = [("dense-memory-%d" % items, items, "memory")]
    dense.append(("dense-sqlite-%d" % items, items, "sqlite"))
    if not a.smoke:
        dense.append(("dense-memory-10000", 10000, "memory"))
    for label, n, store in dense:
        cmd = [bench_turn, "--plugin", so, "--items", str(n), "--turns", str(turns), "--store", store,
               "--dir", tmp]
        total, t, _, split = callgrind(cmd, tmp, label)
        result["cases"].append({"name": label, "items": n, "store": store, "instructions": total,
                                "turns": t, "perTurn": total / t, "perTurnByPart": split})
    if os.path.exists(cli):
        result["cases"].append({"name": "hook-process", "instructions": hook_process(cli, so, tmp)})
    data = a.data
    if a.smoke and data and os.path.exists(data):
        # the first sessions only: a smoke run checks that the case works
        small = os.path.join(tmp, "replay-smoke.jsonl")
        with open(data) as src, open(small, "w") as dst:
            for i, line in enumerate(src):
                if i >= 60:
                    break
                dst.write(line)
        data = small
    if not os.path.exists(cli):
        result["replaySkipped"] = "no CLI at %s (make all)" % cli
        log("instr: replay skipped: " + result["replaySkipped"])
        return
    if not data or not os.path.exists(data):
        result["replaySkipped"] = "no data file (--data %s)" % (a.data or "-")
        log("instr: replay skipped: " + result["replaySkipped"])
        return
    for store in ("memory", "sqlite"):
        cfg = os.path.join(tmp, "config-%s.json" % store)
        storage = {"backend": "memory"} if store == "memory" else \
            {"backend": "sqlite", "path": os.path.join(tmp, "replay.db")}
        with open(cfg, "w") as f:
            json.dump({"storage": storage}, f)
        label = "replay-" + store
        total, t, out, split = callgrind([cli, "--config", cfg, "replay", data], tmp, label)
        result["cases"].append({"name": label, "store": store, "data": os.path.basename(a.data),
                                "instructions": total, "turns": t, "perTurn": total / t,
                                "perTurnByPart": split, "outputMd5": hashlib.md5(out).hexdigest()})


if __name__ == "__main__":
    sys.exit(main())
