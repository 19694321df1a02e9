#!/usr/bin/env python3
"""crashtest.py: kill -9 during a `clarity serve` replay, per backend (make crashtest).

Real sessions (dev-sessions.jsonl from $CLARITY_SHARED/data, else the demo
conversation) stream through `clarity serve` as hook.before_agent_start +
hook.agent_end per turn, pipelined.  At a random moment the server is killed
with SIGKILL and restarted on the same state.  After every kill:
  - the store is intact (SQLite: PRAGMA integrity_check; the host kv: it
    loads);
  - every acknowledged turn is there: each session's currentTurn is the number
    of its acknowledged turns, or one more when the turn in flight had
    committed before the kill (then it counts as done, and is not resent);
  - every item of those sessions equals a serial replay of the same turns in a
    reference server on the memory store (counts, turns, anchors, score).
Every COMPACT_EVERY-th turn ends with hook.before_compaction (tight pruning
settings on both servers), so kills land in compactions and their records
too; a turn's acknowledgement is then the compaction's answer.
Backends: sqlite, sqlite-exclusive (storage.exclusive), hostkv, redis (a
redis-server this script starts on 127.0.0.1 at a free port, appendfsync
always; `clarity serve --store`).

  tests/crashtest.py --clarity build/clarity [--kills 200] [--seconds 900]
                     [--backend sqlite,sqlite-exclusive,hostkv,redis] [--corpus FILE] [--seed N]
                     [--snapshot-every N]
"""
import argparse, json, os, random, shutil, signal, socket, sqlite3, subprocess, sys, tempfile, threading, time

COMPACT_EVERY = 5
PRUNING = {"targetContextItems": 5, "maxContextItems": 10}  # compactions prune much

ITEM_FIELDS = ("id", "mentionCount", "referenceCount", "firstSeenTurn", "lastMentionTurn",
               "lastReferenceTurn", "anchored", "tier", "pruned", "score")


def load_turns(path):
    """The corpus as a list of (session, [messages]) turns in file order."""
    turns, cur, key = [], None, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            o = json.loads(line)
            if "meta" in o or "turn" not in o:
                continue
            k = (o["session"], o["turn"])
            if k != key:
                cur = {"session": o["session"], "prompt": [], "messages": []}
                turns.append(cur)
                key = k
            if o.get("role") == "user":
                cur["prompt"].append(o.get("text", ""))
            else:
                m = {"role": o.get("role", "assistant"), "text": o.get("text", "")}
                if o.get("tool_name"):
                    m["tool_name"] = o["tool_name"]
                if o.get("tool_args") is not None:
                    m["tool_args"] = o["tool_args"]
                cur["messages"].append(m)
    return turns


def default_corpus():
    """dev-sessions.jsonl from $CLARITY_SHARED/data (or ../shared), else the demo."""
    shared = os.environ.get("CLARITY_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
    cand = os.path.join(shared, "data", "dev-sessions.jsonl")
    return cand if os.path.exists(cand) else os.path.join(os.path.dirname(__file__), "..", "examples",
                                                          "demo.jsonl")


def compacts(index):
    """Whether turn `index` of the corpus ends with a compaction."""
    return index % COMPACT_EVERY == COMPACT_EVERY - 1


def base_of(index):
    """The first request id of turn `index` (three ids a turn)."""
    return 3 * index + 3


def ack_of(index):
    """The id whose answer acknowledges turn `index`: its last request."""
    return base_of(index) + (2 if compacts(index) else 1)


def compaction(turn, rid):
    return {"jsonrpc": "2.0", "id": rid, "method": "hook.before_compaction",
            "params": {"session": turn["session"]}}


def requests_of(turn, index, with_compaction=True):
    s, base_id = turn["session"], base_of(index)
    before = {"jsonrpc": "2.0", "id": base_id, "method": "hook.before_agent_start",
              "params": {"session": s, "prompt": "\n\n".join(turn["prompt"])}}
    end = {"jsonrpc": "2.0", "id": base_id + 1, "method": "hook.agent_end",
           "params": {"session": s, "messages": turn["messages"]}}
    out = [before, end]
    if with_compaction and compacts(index):
        out.append(compaction(turn, base_id + 2))
    return "".join(json.dumps(o) + "\n" for o in out)


class RedisServer:
    """redis-server on 127.0.0.1 at a free port, its files in dir."""

    def __init__(self, dir, extra=("--appendonly", "yes", "--appendfsync", "always")):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.url = "redis://127.0.0.1:%d" % self.port
        self.p = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                   "--dir", dir, "--save", "", "--logfile", "redis.log"] + list(extra),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if self.cli("PING") == "PONG":
                return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def cli(self, *args):
        r = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(self.port)] + list(args),
                           capture_output=True, text=True)
        return r.stdout.strip()

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=10)


class Backend:
    def __init__(self, name, tmp, snapshot_every):
        self.name, self.tmp = name, tmp
        # a short turn log: snapshots fold often, so kills land in folds too
        self.cfg = os.path.join(tmp, "store.json")
        with open(self.cfg, "w") as f:
            # and folds in chunks of two rows, so kills land between them
            storage = {"snapshotEvery": snapshot_every, "foldChunk": 2}
            if name == "sqlite-exclusive":
                storage["exclusive"] = True  # the WAL index in the killed process's heap
            json.dump({"storage": storage, "pruning": PRUNING}, f)
        self.db = os.path.join(tmp, "state.db")
        self.kv = os.path.join(tmp, "kv.json")
        self.redis = RedisServer(tmp) if name == "redis" else None
        self.prompt_commits = name == "redis"  # before_agent_start commits in a shared store

    def args(self):
        if self.name in ("sqlite", "sqlite-exclusive"):
            return ["--config", self.cfg, "--state", self.db]
        if self.name == "hostkv":
            return ["--config", self.cfg, "--host-kv", self.kv, "--state", self.db]
        if self.name == "redis":
            return ["--config", self.cfg, "--store", self.redis.url]
        raise ValueError(self.name)

    def reset(self):
        for p in (self.db, self.db + "-wal", self.db + "-shm", self.kv, self.kv + ".log"):
            if os.path.exists(p):
                os.unlink(p)
        if self.redis:
            self.redis.cli("FLUSHALL")

    def close(self):
        if self.redis:
            self.redis.stop()

    def integrity(self):
        """None when intact, else what is wrong."""
        if self.redis:
            return None if self.redis.cli("PING") == "PONG" else "redis-server is not answering"
        if self.name.startswith("sqlite") and os.path.exists(self.db):
            c = sqlite3.connect(self.db)
            try:
                r = c.execute("PRAGMA integrity_check").fetchone()[0]
            finally:
                c.close()
            return None if r == "ok" else "integrity_check: " + r
        return None


class Server:
    """A `clarity serve` whose answers a reader thread collects by id."""

    def __init__(self, clarity, args):
        self.p = subprocess.Popen([clarity, "-q", "serve"] + args, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.acks, self.lock = {}, threading.Lock()
        self.t = threading.Thread(target=self.read, daemon=True)
        self.t.start()

    def read(self):
        for line in self.p.stdout:
            try:
                o = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.acks[o.get("id")] = o

    def send(self, text):
        try:
            self.p.stdin.write(text.encode())
            self.p.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def call(self, method, params, rid, timeout=30):
        self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n")
        end = time.time() + timeout
        while time.time() < end:
            with self.lock:
                if rid in self.acks:
                    return self.acks.pop(rid)
            time.sleep(0.001)
        raise RuntimeError("no answer to %s" % method)

    def kill9(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait()
        self.t.join(timeout=5)

    def stop(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait(timeout=30)


def scores(server, session, rid):
    r = server.call("clarity.getScores", {"session": session, "includePruned": True}, rid)
    if "error" in r:
        return None
    res = r["result"]
    items = sorted(({k: (round(i[k], 6) if isinstance(i[k], float) else i[k]) for k in ITEM_FIELDS}
                    for i in res["items"]), key=lambda i: i["id"])
    return res["currentTurn"], items


def run_backend(args, name, turns):
    tmp = tempfile.mkdtemp(prefix="clarity-crash-%s-" % name)
    be = Backend(name, tmp, args.snapshot_every)
    with open(os.path.join(tmp, "mem.json"), "w") as f:
        json.dump({"storage": {"backend": "memory"}, "pruning": PRUNING}, f)
    ref = Server(args.clarity, ["--config", os.path.join(tmp, "mem.json")])
    rng = random.Random(args.seed)
    done = 0           # turns committed (acknowledged, or found committed)
    acked_per = {}     # session -> turns of it committed
    kills = checked_turns = pruned_checked = 0
    rid = 10 ** 6
    t0 = time.time()
    try:
        while kills < args.kills and time.time() - t0 < args.seconds:
            if done >= len(turns):
                done, acked_per = 0, {}   # start over on fresh state
                be.reset()
                ref.stop()
                ref = Server(args.clarity, ["--config", os.path.join(tmp, "mem.json")])
            srv = Server(args.clarity, be.args())
            window = turns[done:done + rng.randint(1, 40)]
            ids = []
            for i, t in enumerate(window):
                ids.append(ack_of(done + i))
                srv.send(requests_of(t, done + i))
            time.sleep(rng.uniform(0.0, 0.15))
            srv.kill9()
            kills += 1
            # acknowledged turns: their agent_end answered ok, in order
            acked = 0
            for aid in ids:
                a = srv.acks.get(aid)
                if not a or "error" in a:
                    break
                acked += 1
            bad = be.integrity()
            if bad:
                raise AssertionError("%s: after kill %d: %s" % (name, kills, bad))
            chk = Server(args.clarity, be.args())
            # the turn after the acknowledged ones may have committed unanswered
            # (and of a turn that compacts, its compaction may or may not have)
            unsure = None
            touched = {}
            for i, t in enumerate(window[:acked + 1]):
                touched.setdefault(t["session"], 0)
                if i < acked:
                    touched[t["session"]] += 1
            for s in touched:
                rid += 1
                got = scores(chk, s, rid)
                want = acked_per.get(s, 0) + touched[s]
                turn = got[0] if got else 0
                inflight = acked < len(window) and window[acked]["session"] == s
                if turn == want + 1 and inflight:
                    if compacts(done + acked):
                        unsure = done + acked
                    acked += 1
                    touched[s] += 1
                elif turn != want:
                    raise AssertionError("%s: after kill %d session %s: turn %d, acknowledged %d"
                                         % (name, kills, s, turn, want))
            # the reference replays the committed turns; then every item matches
            for i, t in enumerate(window[:acked]):
                for line in requests_of(t, done + i, done + i != unsure).splitlines():
                    o = json.loads(line)
                    ref.call(o["method"], o["params"], o["id"])
                acked_per[t["session"]] = acked_per.get(t["session"], 0) + 1
            for s in touched:
                rid += 1
                a = scores(chk, s, rid)
                rid += 1
                b = scores(ref, s, rid)
                inflight = window[acked] if acked < len(window) else None
                if a != b and be.prompt_commits and inflight and inflight["session"] == s:
                    # a shared store commits the prompt's mentions at before_agent_start (its
                    # agent_end may go to another process): the turn in flight may have left
                    # them; the reference takes that prompt too (mentions count once a turn,
                    # so its later replay with the resent turn changes nothing)
                    before = json.loads(requests_of(inflight, 0).splitlines()[0])
                    rid += 1
                    ref.call(before["method"], before["params"], rid)
                    rid += 1
                    b = scores(ref, s, rid)
                if a != b and unsure is not None and turns[unsure]["session"] == s:
                    # its compaction had committed too: so does the reference's
                    rid += 1
                    ref.call("hook.before_compaction", {"session": s}, rid)
                    rid += 1
                    b = scores(ref, s, rid)
                pruned_checked += sum(1 for i in (a[1] if a else []) if i["pruned"])
                if a != b:
                    raise AssertionError("%s: after kill %d session %s differs from the serial "
                                         "replay:\n  %s\n  %s" % (name, kills, s, a, b))
            chk.stop()
            done += acked
            checked_turns += acked
            if sys.stderr.isatty():
                sys.stderr.write("\r%s: %d/%d kills, %d turns acknowledged and checked" %
                                 (name, kills, args.kills, checked_turns))
        if sys.stderr.isatty():
            sys.stderr.write("\n")
    finally:
        ref.stop()
        be.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return kills, checked_turns, pruned_checked, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clarity", required=True)
    ap.add_argument("--kills", type=int, default=int(os.environ.get("CRASH_KILLS", 200)))
    ap.add_argument("--seconds", type=float, default=900)
    ap.add_argument("--backend", default="sqlite,hostkv")
    ap.add_argument("--corpus")
    ap.add_argument("--snapshot-every", type=int, default=4,
                    help="storage.snapshotEvery of the killed servers (default 4: folds land under kills)")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("CRASH_SEED", 1)))
    args = ap.parse_args()
    corpus = args.corpus or default_corpus()
    turns = load_turns(corpus)
    print("crashtest: %d turns from %s" % (len(turns), corpus))
    failed = 0
    for name in args.backend.split(","):
        try:
            k, n, p, s = run_backend(args, name, turns)
            print("crashtest %s: %d kills, %d acknowledged turns, 0 lost, store intact after every "
                  "kill; %d pruned items checked (%.0f s)" % (name, k, n, p, s))
        except AssertionError as e:
            print("crashtest: FAIL %s" % e)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
