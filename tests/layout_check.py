#!/usr/bin/env python3
"""layout_check.py: no file of the product calls into a file that calls it
back, directly or around a loop (CONTRIBUTING.md: dependencies flow one way).

An edge A -> B when A's code names a function that B defines without
`static`.  Reads the C files of the library's modules, the CLI and the
adapters (not tests, benchmarks or fuzz harnesses).  Prints each cycle with
the calls that make it and exits 1, or prints the edge count and exits 0.

usage: python3 tests/layout_check.py [ROOT]
"""
import os
import re
import sys

DIRS = ["util", "config", "tracker", "scorer", "pruner", "extract", "store", "graph",
        "engine", "gateway", "plugin", "cli", "adapters"]
DEF = re.compile(r"^(static\s+)?(?:inline\s+)?[A-Za-z_][\w\s\*]*?\b([A-Za-z_]\w*)\s*\(([^;]*)$")
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
NOISE = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'", re.S)


def sources(root):
    for d in DIRS:
        for base, dirs, files in os.walk(os.path.join(root, d)):
            dirs[:] = [x for x in dirs if x not in ("node_modules", "build")]
            for f in sorted(files):
                if f.endswith(".c"):
                    yield os.path.relpath(os.path.join(base, f), root)


def definitions(root, files):
    """name -> file for every non-static function defined at column 0."""
    defs = {}
    for f in files:
        lines = open(os.path.join(root, f), errors="replace").read().split("\n")
        for i, line in enumerate(lines):
            m = DEF.match(line)
            if not m or m.group(1) or line.startswith(("typedef", "struct", "#", "return", "extern")):
                continue
            # a definition when its body's "{" comes before any ";" (prototypes end in ";")
            ahead = "\n".join(lines[i:i + 8])
            brace, semi = ahead.find("{"), ahead.find(";")
            if brace >= 0 and (semi < 0 or brace < semi):
                defs.setdefault(m.group(2), f)
    return defs


def edges(root, files, defs):
    out = {}
    for f in files:
        text = NOISE.sub("", open(os.path.join(root, f), errors="replace").read())
        for m in CALL.finditer(text):
            g = defs.get(m.group(1))
            if g and g != f:
                out.setdefault(f, {}).setdefault(g, set()).add(m.group(1))
    return out


def cycles(graph):
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def self_test():
    """The check finds a made-up cycle and passes its one-way version."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "util"))
        a = "int a_one(void)\n{\n    return b_two() + 1;\n}\n"
        b = "int b_two(void)\n{\n    return %s;\n}\n"
        open(os.path.join(d, "util", "a.c"), "w").write(a)
        open(os.path.join(d, "util", "b.c"), "w").write(b % "a_one()")
        files = list(sources(d))
        if cycles(edges(d, files, definitions(d, files))) != [["util/a.c", "util/b.c"]]:
            return "the cycle util/a.c <-> util/b.c was not found"
        open(os.path.join(d, "util", "b.c"), "w").write(b % "2")
        if cycles(edges(d, files, definitions(d, files))):
            return "a one-way call was reported as a cycle"
    return None


def main():
    err = self_test()
    if err:
        print("layout-check: self-test failed: " + err)
        return 2
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    files = list(sources(root))
    graph = edges(root, files, definitions(root, files))
    found = cycles(graph)
    n = sum(len(v) for v in graph.values())
    if not found:
        print(f"layout-check: {len(files)} files, {n} caller -> callee edges, no cycle")
        return 0
    for comp in found:
        print("layout-check: a cycle among " + ", ".join(comp))
        for a in comp:
            for b, names in sorted(graph.get(a, {}).items()):
                if b in comp:
                    print(f"  {a} -> {b} ({', '.join(sorted(names))})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
