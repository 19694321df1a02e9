#!/usr/bin/env python3
"""Where a function's time goes, from `perf script` output of a run
recorded with call graphs (perf record --call-graph dwarf).

For each root function named on the command line: the samples whose stack
holds it, then the share of each function it calls directly (inclusive:
everything below that callee), and below each callee worth --min percent
its own callees, down to --depth levels; every share is of the root's
samples.  Callgrind counts instructions;
this shows time, which branch mispredictions and cache misses move without
moving the instruction count.

    perf script -i perf.data | python3 perf_children.py agent_end before_agent_start
"""
import argparse
import collections
import re
import sys

OFFSET = re.compile(r"\+0x[0-9a-f]+$")


def read_stacks(lines):
    """Each sample's stack, innermost frame first, as function names."""
    stacks, cur, in_sample = [], [], False
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if cur:
                stacks.append(cur)
            cur, in_sample = [], False
            continue
        if line[0] not in " \t":  # the sample's header line
            cur, in_sample = [], True
            continue
        parts = line.split()
        if in_sample and len(parts) >= 2:
            cur.append(OFFSET.sub("", parts[1]))
    if cur:
        stacks.append(cur)
    return stacks


def callees(stacks, path):
    """Samples under the call path (outermost first), and per direct callee
    of its last function the samples under it ('(self)' when none)."""
    n, per = 0, collections.Counter()
    for s in stacks:
        outer = s[::-1]
        try:
            i = outer.index(path[0])
        except ValueError:
            continue
        ok = True
        for name in path[1:]:  # each step of the path a direct call
            i += 1
            if i >= len(outer) or outer[i] != name:
                ok = False
                break
        if not ok:
            continue
        n += 1
        per[outer[i + 1] if i + 1 < len(outer) else "(self)"] += 1
    return n, per


def show(stacks, path, total, depth, min_pct, indent, out):
    _, per = callees(stacks, path)
    for name, k in per.most_common():
        pct = 100.0 * k / total
        if pct < min_pct:
            break
        out.write(f"{indent}{pct:5.1f}%  {name}\n")
        if depth > 1 and name != "(self)":
            show(stacks, path + [name], total, depth - 1, min_pct, indent + "    ", out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="+", help="functions to break down")
    ap.add_argument("--depth", type=int, default=2, help="levels of callees (default 2)")
    ap.add_argument("--min", type=float, default=3.0, help="hide callees under this percent (default 3)")
    a = ap.parse_args()
    stacks = read_stacks(sys.stdin)
    if not stacks:
        sys.exit("perf_children: no samples with call stacks on stdin")
    for root in a.roots:
        n, _ = callees(stacks, [root])
        sys.stdout.write(f"{root}: {n} of {len(stacks)} samples\n")
        if n:
            show(stacks, [root], n, a.depth, a.min, "    ", sys.stdout)


if __name__ == "__main__":
    main()
