#!/usr/bin/env python3
"""cluster.py: several `clarity serve --store redis://...` processes share
sessions, as gateways behind a load balancer do (make cluster-test).

Real sessions (dev-sessions.jsonl, else the demo) are spread over SESSIONS
session ids; each request of a session (before_agent_start, then
agent_end, turn after turn, in order: a gateway serves one session's hooks
one after the other) goes to a process picked at random, while the other
sessions' requests run concurrently on all processes.  At the end every
session's scores, read from any process, must equal a serial replay of the
same turns by one process on the memory store: no turn lost, none counted
twice, whatever the interleaving.

  tests/cluster.py --clarity build/clarity [--procs 4] [--sessions 64]
                   [--turns 8] [--corpus FILE] [--seed N]
"""
import argparse, json, os, random, shutil, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from crashtest import RedisServer, Server, default_corpus, load_turns, requests_of, scores  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clarity", required=True)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--turns", type=int, default=8, help="turns per session")
    ap.add_argument("--corpus")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    pool = load_turns(args.corpus or default_corpus())
    rng = random.Random(args.seed)
    # session k replays a run of consecutive turns of the corpus, renamed
    plan = {}
    for k in range(args.sessions):
        start = rng.randrange(0, max(1, len(pool) - args.turns))
        sid = "cluster-%02d" % k
        plan[sid] = [dict(t, session=sid) for t in pool[start:start + args.turns]]
    tmp = tempfile.mkdtemp(prefix="clarity-cluster-")
    redis = RedisServer(tmp)
    with open(os.path.join(tmp, "mem.json"), "w") as f:
        json.dump({"storage": {"backend": "memory"}}, f)
    procs = [Server(args.clarity, ["--store", redis.url]) for _ in range(args.procs)]
    ref = Server(args.clarity, ["--config", os.path.join(tmp, "mem.json")])
    t0 = time.time()
    try:
        # each session's requests in order; one in flight per session
        queue = {s: [json.loads(l) for t in turns for l in requests_of(t, 0).splitlines()]
                 for s, turns in plan.items()}
        nxt, rid = {s: 0 for s in plan}, 1
        inflight = {}  # session -> (process index, request id)
        sent = 0
        total = sum(len(q) for q in queue.values())
        while sent < total or inflight:
            for s in list(inflight):
                p, r = inflight[s]
                with procs[p].lock:
                    a = procs[p].acks.pop(r, None)
                if a is None:
                    continue
                if "error" in a:
                    raise AssertionError("session %s: %s" % (s, a["error"]))
                del inflight[s]
            ready = [s for s in plan if s not in inflight and nxt[s] < len(queue[s])]
            rng.shuffle(ready)
            for s in ready:
                o = queue[s][nxt[s]]
                nxt[s] += 1
                p = rng.randrange(args.procs)
                o["id"] = rid
                procs[p].send(json.dumps(o) + "\n")
                inflight[s] = (p, rid)
                rid += 1
                sent += 1
            time.sleep(0.0005)
        elapsed = time.time() - t0
        # the serial reference
        for s, turns in plan.items():
            for t in turns:
                for line in requests_of(t, 0).splitlines():
                    o = json.loads(line)
                    rid += 1
                    ref.call(o["method"], o["params"], rid)
        bad = 0
        for s in plan:
            rid += 2
            got = scores(procs[rng.randrange(args.procs)], s, rid)
            want = scores(ref, s, rid + 1)
            if got != want:
                bad += 1
                if bad <= 3:
                    print("cluster: session %s differs from the serial replay:\n  %s\n  %s" % (s, got, want))
        turns = sum(len(t) for t in plan.values())
        print("cluster: %d processes, %d sessions, %d turns (%d requests) in %.1f s: %s"
              % (args.procs, args.sessions, turns, total, elapsed,
                 "every session equals the serial replay" if not bad else "%d sessions differ" % bad))
        return 1 if bad else 0
    finally:
        for p in procs:
            p.stop()
        ref.stop()
        redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
