#!/usr/bin/env python3
"""Two builds of the library timed side by side, in alternating runs: the
way to see a time change of a few percent on shared, noisy cores, where
two runs of one build differ by more than that.

Each pair runs bench_turn once with library A and once with library B (the
order alternates from pair to pair, so a drift of the machine's speed
favours neither), pinned to one core with taskset when it is available,
and takes each run's turn p50 and its two hooks' p50s. It prints every
pair, the medians, and in how many pairs B was faster; --json writes the
same.

  python3 ab.py --bench-turn BUILD/bench_turn A.so B.so [--pairs N]
                [--items N] [--turns N] [--store memory|sqlite] [--cpu K]
                [--density N] [--json FILE] [--smoke]

--density N is bench_turn's: one token in N names an item (32 by default;
1000 is prose that names little, where most words fail the first test).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def run_once(args, lib, tmp):
    """One bench_turn run of lib: its {turn, before, end} p50s in µs."""
    out = os.path.join(tmp, "run.json")
    cmd = [args.bench_turn, "--plugin", lib, "--items", str(args.items), "--turns", str(args.turns),
           "--store", args.store, "--dir", tmp, "--json", out]
    if args.density:
        cmd += ["--density", str(args.density)]
    if args.cpu is not None:
        cmd = ["taskset", "-c", str(args.cpu)] + cmd
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode,
                                                   r.stderr.decode(errors="replace")[-400:]))
    with open(out) as f:
        res = json.load(f)["results"][0]
    return {"turn": res["turn"]["p50us"], "before": res["beforeAgentStart"]["p50us"],
            "end": res["agentEnd"]["p50us"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="library A (the reference)")
    ap.add_argument("b", help="library B (the change)")
    ap.add_argument("--bench-turn", required=True)
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--store", choices=("memory", "sqlite"), default="memory")
    ap.add_argument("--cpu", type=int, default=None, help="core to pin to (default: the last; none without taskset)")
    ap.add_argument("--density", type=int, default=0, help="bench_turn's --density (default: its own)")
    ap.add_argument("--json", default="")
    ap.add_argument("--smoke", action="store_true", help="2 pairs of 20 turns at 40 items")
    args = ap.parse_args()
    if args.smoke:
        args.pairs, args.items, args.turns = 2, 40, 20
    if args.pairs < 1 or args.items < 1 or args.turns < 1 or args.density < 0:
        ap.error("--pairs, --items and --turns must be at least 1, --density at least 0")
    for lib in (args.a, args.b, args.bench_turn):
        if not os.path.exists(lib):
            ap.error("not found: " + lib)
    if shutil.which("taskset") is None:
        if args.cpu is not None:
            ap.error("--cpu needs taskset")
        sys.stderr.write("ab: taskset not found: runs are not pinned\n")
    elif args.cpu is None:
        args.cpu = (os.cpu_count() or 1) - 1

    runs = {"a": [], "b": []}
    with tempfile.TemporaryDirectory(prefix="clarity-ab-") as tmp:
        print("ab: %d pairs, bench_turn --items %d --turns %d --store %s%s%s"
              % (args.pairs, args.items, args.turns, args.store,
                 " --density %d" % args.density if args.density else "",
                 ", pinned to core %d" % args.cpu if args.cpu is not None else ""))
        print("%5s %12s %12s %9s" % ("pair", "A turn p50", "B turn p50", "B / A"))
        for i in range(args.pairs):
            order = ("a", "b") if i % 2 == 0 else ("b", "a")
            got = {}
            for side in order:
                got[side] = run_once(args, args.a if side == "a" else args.b, tmp)
                runs[side].append(got[side])
            print("%5d %9.1f µs %9.1f µs %9.3f" % (i + 1, got["a"]["turn"], got["b"]["turn"],
                                                 got["b"]["turn"] / got["a"]["turn"]))
    med = {side: {k: statistics.median(r[k] for r in runs[side]) for k in ("turn", "before", "end")}
           for side in runs}
    faster = sum(1 for x, y in zip(runs["a"], runs["b"]) if y["turn"] < x["turn"])
    print("median  A: turn %.1f µs (before %.1f, end %.1f)" % (med["a"]["turn"], med["a"]["before"], med["a"]["end"]))
    print("median  B: turn %.1f µs (before %.1f, end %.1f)" % (med["b"]["turn"], med["b"]["before"], med["b"]["end"]))
    print("B / A %.3f (medians); B faster in %d of %d pairs" % (med["b"]["turn"] / med["a"]["turn"], faster, args.pairs))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"a": args.a, "b": args.b, "items": args.items, "turns": args.turns, "store": args.store,
                       "cpu": args.cpu, "pairs": [{"a": x, "b": y} for x, y in zip(runs["a"], runs["b"])],
                       "median": med, "bFasterPairs": faster}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
