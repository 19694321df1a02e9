#!/usr/bin/env python3
"""SWE-bench cases as one-turn `clarity eval` sessions.

Each case (instance_id, repo, base_commit, problem_statement, gold_files)
becomes a session whose only turn is the issue as the user's prompt, and a
meta line naming the repository, the commit and the files the fix changed:
`clarity eval --repos DIR` replays it in a clone at that commit with the
code graph built, so `gold_in_block_turn1` says how often the first block
clarity shows names every file the fix edits among its first five.

usage: swebench_sessions.py [IN] > corpus.jsonl
  IN defaults to ../shared/data/swebench-dev.jsonl from the project root.
"""
import json
import os
import sys


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = argv[1] if len(argv) > 1 else os.path.join(root, "..", "shared", "data", "swebench-dev.jsonl")
    out = sys.stdout
    n = 0
    with open(src) as f:
        for line in f:
            if not line.strip():
                continue
            case = json.loads(line)
            sid = case["instance_id"]
            out.write(json.dumps({"session": sid, "turn": 1, "role": "user",
                                  "text": case["problem_statement"]}) + "\n")
            out.write(json.dumps({"session": sid, "meta": {
                "repo": case["repo"], "base_commit": case["base_commit"],
                "gold_files": case["gold_files"], "first_edit_turn": 2, "n_turns": 1}}) + "\n")
            n += 1
    print(f"{n} sessions from {src}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
