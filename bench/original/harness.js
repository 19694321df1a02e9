#!/usr/bin/env node
// harness.js: times the original JavaScript Clarity plugin on the same turn
// stream clarity replays (bench/clarity_bench gen-stream), and scores the
// conformance grid with the original's RelevanceScorer.
//
//   node harness.js stream --stream FILE.jsonl --out OUT.json [--original DIR]
//   node harness.js conformance --grid GRID.json --out OUT.json [--original DIR]
//
// DIR is the original's extensions/clarity directory (index.js, lib/...);
// it can also come from the environment variable CLARITY_ORIGINAL_DIR.
// Without it the harness writes {"skipped": true, "reason": ...} and exits 0.
//
// Two wirings of the original are timed per turn:
//  - "original-v2": what its index.js registers.  register(api) is called
//    with a fake api that records the api.on handlers; before_agent_start
//    and agent_end are then invoked with events shaped as index.js reads
//    them ({messages: [{role, content}]}).  The tracker is the lib/v2
//    V2ContextTracker, the pruner lib/pruner.js.
//  - "original-v1": lib/context-tracker.js driven the way the same hooks
//    would drive it (trackMentions + scored top items before the turn; the
//    per-item reference loop and advanceTurn after it).
// Both get their starting items through the original's own restore path:
// a kv (the "memory" plugin's api.kv that index.js looks up) preloaded
// with the state the original persists.  kv.set serializes with
// JSON.stringify, the least any durable kv does.
"use strict";

const fs = require("fs");
const path = require("path");

function parseArgs(argv) {
  const a = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith("--")) a[argv[i].slice(2)] = argv[i + 1] && !argv[i + 1].startsWith("--") ? argv[++i] : true;
    else a._.push(argv[i]);
  }
  return a;
}

function originalDir(args) {
  const dir = args.original || process.env.CLARITY_ORIGINAL_DIR;
  if (!dir) return { dir: null, reason: "no original plugin given (--original DIR or CLARITY_ORIGINAL_DIR)" };
  if (!fs.existsSync(path.join(dir, "index.js")) || !fs.existsSync(path.join(dir, "lib", "relevance-scorer.js")))
    return { dir: null, reason: `${dir} does not hold the original extensions/clarity (index.js, lib/)` };
  return { dir: path.resolve(dir), reason: null };
}

function writeJSON(file, obj) {
  fs.writeFileSync(file, JSON.stringify(obj, null, 1) + "\n");
}

function skip(args, what, reason) {
  process.stderr.write(`original: ${what} skipped: ${reason}\n`);
  if (args.out) writeJSON(args.out, { skipped: true, reason });
  process.exit(0);
}

function stats(v) {
  const s = [...v].sort((x, y) => x - y);
  const n = s.length;
  if (!n) return { p50us: 0, p99us: 0, meanus: 0, minus: 0, maxus: 0, n: 0 };
  const p50 = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  const k = Math.ceil(n * 0.99);
  return {
    p50us: p50,
    p99us: s[Math.max(0, k - 1)],
    meanus: s.reduce((x, y) => x + y, 0) / n,
    minus: s[0],
    maxus: s[n - 1],
    n,
  };
}

const us = (t0, t1) => Number(t1 - t0) / 1e3;

// ---- the stream ----------------------------------------------------------

function readStream(file) {
  const lines = fs.readFileSync(file, "utf8").split("\n");
  const out = { header: null, items: [], turns: [] };
  for (const line of lines) {
    if (!line) continue;
    const o = JSON.parse(line);
    if (o.kind === "header") out.header = o;
    else if (o.kind === "item") out.items.push(o);
    else if (o.kind === "turn") out.turns.push(o);
  }
  return out;
}

function mentionHistory(it) {
  const n = Math.min(it.mentionCount, 20);
  const h = [];
  for (let k = n - 1; k >= 0; k--) h.push(Math.max(0, it.lastMentionTurn - k));
  return h;
}

// The ids the original gives the stream's items.
function v2Entity(it) {
  const lower = it.text.toLowerCase();
  if (it.cat === "project")
    return { id: `project:${lower}`, type: "project", name: it.text, normalized: lower };
  const normalized = lower.replace(/[\/\.\-]/g, "_");
  return { id: `file:${normalized}`, type: "file", name: it.text, normalized };
}

function v1Id(it) {
  const lower = it.text.toLowerCase();
  return it.cat === "project" ? lower.replace(/-/g, "_") : `file:${lower}`;
}

function makeKv(preload) {
  const data = new Map(Object.entries(preload));
  let writes = 0;
  return {
    kv: {
      get(ns, key, def) {
        const v = data.get(`${ns}/${key}`);
        return v === undefined ? def : JSON.parse(v);
      },
      set(ns, key, value) {
        data.set(`${ns}/${key}`, JSON.stringify(value));
        writes++;
      },
    },
    writes: () => writes,
  };
}

function makeApi(kv) {
  const handlers = {};
  const methods = {};
  const noop = () => {};
  const api = {
    pluginConfig: {},
    logger: { info: noop, warn: noop, debug: noop, error: noop },
    getPlugin: (name) => (name === "memory" ? { api: { kv } } : null),
    on: (name, fn) => {
      handlers[name] = fn;
    },
    registerCommand: noop,
    registerGatewayMethod: (name, fn) => {
      methods[name] = fn;
    },
  };
  return { api, handlers, methods };
}

async function callMethod(methods, name, params) {
  let result;
  await methods[name]({ params: params || {}, respond: (ok, r) => (result = r) });
  return result;
}

async function runV2(dir, stream, warmup) {
  const now = Date.now();
  const entities = stream.items.map((it) => {
    const e = v2Entity(it);
    return {
      ...e,
      mentionCount: it.mentionCount,
      firstMentionTurn: Math.max(0, it.lastMentionTurn - it.mentionCount),
      lastMentionTurn: it.lastMentionTurn,
      mentionHistory: mentionHistory(it),
      tfidfScore: 0,
      recencyScore: 0,
      anchorBonus: 0,
      relationshipScore: 0,
      totalScore: 0,
      relationships: [],
      contexts: [],
      isAnchor: false,
    };
  });
  const items = stream.items.map((it) => ({
    id: v2Entity(it).id,
    mentionCount: it.mentionCount,
    referenceCount: it.referenceCount,
    lastMentionTurn: it.lastMentionTurn,
    lastReferenceTurn: 0,
    anchored: false,
    createdAt: now,
  }));
  const state = { currentTurn: stream.header.currentTurn, lastPersistAt: now, entities, relationships: [], items };
  const { kv, writes } = makeKv({ "clarity/v2_state": JSON.stringify(state) });
  const plugin = require(path.join(dir, "index.js"));
  const { api, handlers, methods } = makeApi(kv);
  plugin.register(api);
  if (!handlers.before_agent_start || !handlers.agent_end) throw new Error("index.js registered no hooks");
  const loaded = (await callMethod(methods, "clarity.stats")).totalItems;
  if (loaded !== stream.items.length) throw new Error(`original-v2 restored ${loaded} of ${stream.items.length} items`);
  const tb = [], te = [], tt = [];
  let injected = 0;
  for (let i = 0; i < stream.turns.length; i++) {
    const t = stream.turns[i];
    const user = { role: "user", content: t.prompt };
    const t0 = process.hrtime.bigint();
    const r = await handlers.before_agent_start({ messages: [user] }, {});
    const t1 = process.hrtime.bigint();
    await handlers.agent_end({ messages: [user, { role: "assistant", content: t.reply }], success: true }, {});
    const t2 = process.hrtime.bigint();
    if (r && r.prependContext) injected++;
    if (i < warmup && stream.turns.length > warmup * 2) continue;
    tb.push(us(t0, t1));
    te.push(us(t1, t2));
    tt.push(us(t0, t2));
  }
  const st = await callMethod(methods, "clarity.stats");
  return {
    implementation: "original-v2",
    wiring: "index.js register(api): lib/v2 V2ContextTracker + lib/pruner.js",
    items: stream.items.length,
    turns: tt.length,
    finalItems: st.totalItems,
    contextInjected: injected,
    kvWrites: writes(),
    before: stats(tb),
    end: stats(te),
    turn: stats(tt),
  };
}

// The hook bodies of index.js, on the v1 ContextTracker.
async function runV1(dir, stream, warmup) {
  const ContextTracker = require(path.join(dir, "lib", "context-tracker.js"));
  const now = Date.now();
  const items = stream.items.map((it) => ({
    id: v1Id(it),
    mentionCount: it.mentionCount,
    referenceCount: it.referenceCount,
    lastMentionTurn: it.lastMentionTurn,
    lastReferenceTurn: 0,
    anchored: false,
    createdAt: now,
    mentionHistory: mentionHistory(it),
  }));
  const state = { currentTurn: stream.header.currentTurn, lastPersistAt: now, items };
  const { kv, writes } = makeKv({ "clarity/relevance_state": JSON.stringify(state) });
  // index.js's DEFAULT_CONFIG blocks, as it would hand them to the v1 tracker
  const tracker = new ContextTracker({
    kv,
    namespace: "clarity",
    scorerConfig: { halfLife: 5, recencyWindow: 3, recencyBonus: 20, referenceWeight: 15, frequencyScale: 10, anchorBonus: 5 },
    extractorConfig: { minWordLength: 5, maxKeywordsPerMessage: 8, extractProjects: true, extractTools: true, extractMemoryFiles: true, customPatterns: [] },
    persistInterval: 10,
  });
  if (!tracker.load() || tracker._items.size !== stream.items.length)
    throw new Error(`original-v1 restored ${tracker._items.size} of ${stream.items.length} items`);
  const before = (userText) => {
    const mentioned = tracker.trackMentions(userText);
    const scored = tracker.getScoredItems();
    const topItems = scored.filter((i) => i.finalScore >= 15).slice(0, 8);
    const lines = ["[CLARITY CONTEXT]"];
    if (topItems.length > 0) {
      lines.push("High-relevance context:");
      for (const item of topItems) {
        const anchorMark = item.metadata.anchored ? "⚓ " : "";
        const d = item.metadata.turnsSinceLastMention;
        const recency = d <= 1 ? "●" : d <= 3 ? "◐" : "○";
        lines.push(`  ${recency} ${anchorMark}${item.id} (${Math.round(item.finalScore)})`);
      }
    }
    if (mentioned.length > 0) lines.push(`Tracked mentions: ${mentioned.slice(0, 5).join(", ")}`);
    return topItems.length > 0 ? { prependContext: lines.join("\n") + "\n" } : undefined;
  };
  const end = (assistantText) => {
    const scored = tracker.getScoredItems();
    for (const item of scored) {
      const itemName = item.id.replace(/^(project|tool|file|keyword):/, "");
      if (assistantText.toLowerCase().includes(itemName.toLowerCase()))
        tracker.trackReference(item.id, assistantText.slice(0, 100));
    }
    tracker.advanceTurn();
  };
  const tb = [], te = [], tt = [];
  for (let i = 0; i < stream.turns.length; i++) {
    const t = stream.turns[i];
    const t0 = process.hrtime.bigint();
    before(t.prompt);
    const t1 = process.hrtime.bigint();
    end(t.reply);
    const t2 = process.hrtime.bigint();
    if (i < warmup && stream.turns.length > warmup * 2) continue;
    tb.push(us(t0, t1));
    te.push(us(t1, t2));
    tt.push(us(t0, t2));
  }
  return {
    implementation: "original-v1",
    wiring: "lib/context-tracker.js + lib/relevance-scorer.js, driven like index.js's hooks",
    items: stream.items.length,
    turns: tt.length,
    finalItems: tracker._items.size,
    kvWrites: writes(),
    before: stats(tb),
    end: stats(te),
    turn: stats(tt),
  };
}

async function modeStream(args) {
  const { dir, reason } = originalDir(args);
  if (!dir) skip(args, "comparison", reason);
  const stream = readStream(args.stream);
  const warmup = Number(args.warmup || 3);
  const v2 = await runV2(dir, stream, warmup);
  const v1 = await runV1(dir, stream, warmup);
  const out = { node: process.version, originalDir: dir, items: stream.items.length, results: [v2, v1] };
  writeJSON(args.out, out);
  for (const r of [v2, v1])
    process.stderr.write(
      `stream ${r.implementation} ${String(r.items).padStart(6)} items: before p50 ${r.before.p50us.toFixed(1)} us, ` +
        `end p50 ${r.end.p50us.toFixed(1)} us, turn p50 ${r.turn.p50us.toFixed(1)} us p99 ${r.turn.p99us.toFixed(1)} us\n`,
    );
}

// ---- conformance ---------------------------------------------------------

function modeConformance(args) {
  const { dir, reason } = originalDir(args);
  if (!dir) skip(args, "conformance check", reason);
  const RelevanceScorer = require(path.join(dir, "lib", "relevance-scorer.js"));
  const grid = JSON.parse(fs.readFileSync(args.grid, "utf8"));
  const out = { originalDir: dir, scorer: "lib/relevance-scorer.js", currentTurn: grid.currentTurn, configs: [] };
  let unexpected = 0;
  for (const cfg of grid.configs) {
    const scorer = new RelevanceScorer(cfg.scoring);
    let maxAbs = 0, mismatches = 0, termMismatches = 0;
    const examples = [];
    for (const c of cfg.cases) {
      const o = scorer.calculateScore(
        { id: c.id, mentionCount: c.mentionCount, referenceCount: c.referenceCount, lastMentionTurn: c.lastMentionTurn, anchored: c.anchored },
        grid.currentTurn,
      );
      const d = Math.abs(o.finalScore - c.clarity.score);
      maxAbs = Math.max(maxAbs, d);
      // clarity prints 3 decimals: equal "within rounding" means |d| <= 0.0005
      if (d > 0.0005 + 1e-9) {
        mismatches++;
        if (examples.length < 5) examples.push({ ...c, original: o.finalScore });
      }
      // the original rounds its breakdown to 1 decimal
      const b = o.breakdown;
      const terms = [
        [b.frequency, c.clarity.frequency],
        [b.recency, c.clarity.recency],
        [b.utility, c.clarity.utility],
        [b.stalenessPenalty, c.clarity.stalenessPenalty],
        [b.anchor, c.clarity.anchor],
      ];
      if (terms.some(([x, y]) => Math.abs(x - y) > 0.05 + 1e-9)) termMismatches++;
    }
    const equal = mismatches === 0 && termMismatches === 0;
    if (equal !== cfg.expectEqual) unexpected++;
    out.configs.push({
      name: cfg.name,
      scoring: cfg.scoring,
      note: cfg.note,
      expectEqual: cfg.expectEqual,
      cases: cfg.cases.length,
      maxAbsDiff: maxAbs,
      mismatches,
      termMismatches,
      equal,
      examples,
    });
    process.stderr.write(
      `conformance ${cfg.name}: ${cfg.cases.length} cases, max |diff| ${maxAbs.toExponential(2)}, ` +
        `${mismatches} score / ${termMismatches} term mismatches (${cfg.expectEqual ? "expected equal" : "expected to differ"})\n`,
    );
  }
  out.ok = unexpected === 0;
  writeJSON(args.out, out);
  if (!out.ok) {
    process.stderr.write("conformance: a config did not behave as expected\n");
    process.exit(1);
  }
}

const args = parseArgs(process.argv.slice(2));
const mode = args._[0];
if (mode === "stream" && args.stream && args.out) modeStream(args).catch((e) => {
  process.stderr.write(`harness: ${e.stack || e}\n`);
  process.exit(1);
});
else if (mode === "conformance" && args.grid && args.out) modeConformance(args);
else {
  process.stderr.write("usage: node harness.js stream --stream FILE --out OUT [--original DIR]\n" +
    "       node harness.js conformance --grid GRID --out OUT [--original DIR]\n");
  process.exit(2);
}
