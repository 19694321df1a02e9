#!/usr/bin/env python3
"""The SWE-agent marshmallow-1867 sessions of dev-sessions.jsonl, ready for
`clarity eval --repos`: each session's meta gains the repository's base
commit for that SWE-bench case and the file the agent edited as gold, and
the agent's absolute paths under its sandbox (/marshmallow-code__marshmallow/)
become relative to the repository, as they would be in a user's workspace.

usage: marshmallow_sessions.py [IN] > marshmallow.jsonl
       clarity eval marshmallow.jsonl --repos DIR   (DIR holds marshmallow-code/marshmallow)
"""
import json
import os
import sys

CASE = "marshmallow-code__marshmallow-1867"
BASE_COMMIT = "bfd2593d4b416122e30cdefe0c72d322ef471611"  # SWE-bench's base for the case
SANDBOX = "/marshmallow-code__marshmallow/"


def relative(v):
    if isinstance(v, str):
        return v.replace(SANDBOX, "")
    if isinstance(v, dict):
        return {k: relative(x) for k, x in v.items()}
    if isinstance(v, list):
        return [relative(x) for x in v]
    return v


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = argv[1] if len(argv) > 1 else os.path.join(root, "..", "shared", "data", "dev-sessions.jsonl")
    n = 0
    with open(src) as f:
        for line in f:
            o = json.loads(line)
            if CASE not in o.get("session", ""):
                continue
            if "meta" in o:
                m = o["meta"]
                m["base_commit"] = BASE_COMMIT
                m["gold_files"] = m.get("gold_files") or m.get("edited_files")
                n += 1
            else:
                for k in ("text", "tool_args"):
                    if k in o:
                        o[k] = relative(o[k])
            sys.stdout.write(json.dumps(o) + "\n")
    print(f"{n} sessions of {CASE}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
