// report.mjs: merges bench/out/*.json into results.json and renders
// report.html with static SVG charts (Vega-Lite, rendered by node; no script
// in the page).  Without the npm packages (make -C bench deps) the page has
// the tables only.
//   node report.mjs OUTDIR
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";

const outDir = process.argv[2] || "out";
const here = path.dirname(new URL(import.meta.url).pathname);

function load(name) {
  const p = path.join(outDir, name);
  return fs.existsSync(p) ? JSON.parse(fs.readFileSync(p, "utf8")) : null;
}

function loadAll(prefix) {
  return fs
    .readdirSync(outDir)
    .filter((f) => f.startsWith(prefix) && f.endsWith(".json"))
    .map((f) => load(f));
}

function git(args) {
  try {
    return execFileSync("git", args, { cwd: here, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}

const cpu = (() => {
  try {
    const m = fs.readFileSync("/proc/cpuinfo", "utf8").match(/model name\s*:\s*(.*)/);
    return m ? m[1] : os.cpus()[0]?.model;
  } catch {
    return os.cpus()[0]?.model;
  }
})();

// ---- merge ---------------------------------------------------------------

const hooks = load("hooks.json");
const prune = load("prune.json");
const persist = load("persist.json");
const restore = load("restore.json");
const memory = ["sqlite", "memory"].map((b) => load(`memory-${b}.json`)).filter(Boolean);
const rss = load("rss.json");
const conformance = load("conformance.json");
const benchTurn = load("bench_turn.json");
const benchTurnNewSession = load("bench_turn_new.json"); // a session's first 250 turns
const instr = load("instr.json"); // instructions per turn, callgrind (instr.py)
const hookproc = load("hookproc.json"); // a Claude Code hook process, fork to exit

const compare = [];
{
  const counts = new Set(
    fs.readdirSync(outDir).map((f) => f.match(/^compare-clarity-\w+-(\d+)\.json$/)).filter(Boolean).map((m) => Number(m[1])),
  );
  for (const n of [...counts].sort((a, b) => a - b)) {
    const entry = { items: n, clarity: {}, original: null };
    for (const store of ["memory", "sqlite", "exclusive"]) entry.clarity[store] = load(`compare-clarity-${store}-${n}.json`);
    entry.original = load(`compare-original-${n}.json`);
    entry.ratios = [];
    if (entry.original && !entry.original.skipped) {
      for (const o of entry.original.results)
        for (const store of ["memory", "sqlite", "exclusive"]) {
          const c = entry.clarity[store];
          if (!c) continue;
          for (const hook of ["before", "end", "turn"])
            entry.ratios.push({
              original: o.implementation,
              clarityStore: store,
              hook,
              originalP50us: o[hook].p50us,
              clarityP50us: c[hook].p50us,
              ratioP50: o[hook].p50us / c[hook].p50us,
              ratioP99: o[hook].p99us / c[hook].p99us,
            });
        }
    }
    compare.push(entry);
  }
}

const results = {
  meta: {
    date: new Date().toISOString(),
    host: os.hostname(),
    cpu,
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    loadAverage: os.loadavg(),
    commit: git(["rev-parse", "--short", "HEAD"]),
    dirty: git(["status", "--porcelain", "--untracked-files=no"]) ? true : false,
    node: process.version,
    kind: process.env.BENCH_KIND || "full",
    plugin: process.env.BENCH_PLUGIN || null,
  },
  hooks,
  prune,
  persist,
  restore,
  memory,
  rss,
  compare,
  conformance,
  benchTurn,
  benchTurnNewSession,
  instr,
  hookproc,
};
fs.writeFileSync(path.join(outDir, "results.json"), JSON.stringify(results, null, 1) + "\n");

// ---- charts --------------------------------------------------------------

let vega = null, vl = null;
try {
  vega = await import("vega");
  vl = await import("vega-lite");
} catch {
  vega = null;
}

const fmtBytes = (b) => (b >= 1 << 20 ? `${b / (1 << 20)} MiB` : b >= 1024 ? `${b / 1024} KiB` : `${b} B`);
const num = (x, d = 1) => (x === undefined || x === null || Number.isNaN(x) ? "–" : Number(x).toFixed(d));
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

async function chart(spec) {
  if (!vega) return `<p class="note">(chart skipped: run <code>make -C bench deps</code> for the chart packages)</p>`;
  const full = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    width: 460,
    height: 260,
    config: { font: "sans-serif", axis: { labelFontSize: 11, titleFontSize: 12 }, legend: { labelFontSize: 11, labelLimit: 260 } },
    ...spec,
  };
  const view = new vega.View(vega.parse(vl.compile(full).spec), { renderer: "none" });
  const svg = await view.toSVG();
  view.finalize();
  return `<div class="chart">${svg}</div>`;
}

function table(head, rows) {
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join("")}</tr>`)
    .join("")}</tbody></table>`;
}

const sections = [];
const headline = [];

if (hooks) {
  const data = [];
  for (const c of hooks.cells) {
    data.push({ items: c.items, size: fmtBytes(c.bytes), bytes: c.bytes, stat: "p50", us: c.turn.p50us });
    data.push({ items: c.items, size: fmtBytes(c.bytes), bytes: c.bytes, stat: "p99", us: c.turn.p99us });
  }
  const sizeOrder = [...new Set(hooks.cells.map((c) => c.bytes))].sort((a, b) => a - b).map(fmtBytes);
  const lat = await chart({
    title: "Turn latency (before_agent_start + agent_end) against tracked items",
    data: { values: data },
    mark: { type: "line", point: true },
    encoding: {
      x: { field: "items", type: "quantitative", scale: { type: "log" }, title: "tracked items" },
      y: { field: "us", type: "quantitative", scale: { type: "log" }, title: "µs per turn" },
      color: { field: "size", type: "nominal", sort: sizeOrder, title: "prompt = reply size" },
      strokeDash: { field: "stat", type: "nominal", title: "" },
    },
  });
  const tp = [];
  for (const c of hooks.cells) {
    tp.push({ items: c.items, bytes: c.bytes, path: "prompt (before_agent_start)", mbps: c.promptMBps });
    tp.push({ items: c.items, bytes: c.bytes, path: "reply (agent_end)", mbps: c.replyMBps });
  }
  const minItems = Math.min(...hooks.cells.map((c) => c.items));
  const thr = await chart({
    title: `Extraction throughput against text size (${minItems} tracked items, p50)`,
    data: { values: tp.filter((d) => d.items === minItems) },
    mark: { type: "line", point: true },
    encoding: {
      x: { field: "bytes", type: "quantitative", scale: { type: "log", base: 2 }, title: "text size (bytes)" },
      y: { field: "mbps", type: "quantitative", title: "MB/s" },
      color: { field: "path", type: "nominal", title: "" },
    },
  });
  sections.push(`<h2 id="hooks">Hook path</h2>
<p>Each turn is one <code>before_agent_start</code> (the prompt) and one <code>agent_end</code> (an assistant reply of the same size plus a <code>Read</code> tool call), through the ABI, on the memory store so that only the hooks are timed (the store's cost is below). One token in ${hooks.density} names a tracked item. Fewer turns for the large sizes (see <i>n</i>).</p>
${lat}${thr}
${table(
  ["items", "size", "n", "before p50 µs", "before p99 µs", "end p50 µs", "end p99 µs", "turn p50 µs", "turn p99 µs", "prompt MB/s", "reply MB/s"],
  hooks.cells.map((c) => [
    c.items, fmtBytes(c.bytes), c.turn.n, num(c.before.p50us), num(c.before.p99us), num(c.end.p50us), num(c.end.p99us),
    num(c.turn.p50us), num(c.turn.p99us), num(c.promptMBps), num(c.replyMBps),
  ]),
)}`);
  for (const n of [1000, 10000]) {
    const c = hooks.cells.find((x) => x.items === n && x.bytes === 16384) || hooks.cells.find((x) => x.items === n);
    if (c) headline.push(`${n} items, ${fmtBytes(c.bytes)} prompt + reply: turn p50 <b>${num(c.turn.p50us)} µs</b>, p99 ${num(c.turn.p99us)} µs`);
  }
  const big = hooks.cells.filter((c) => c.items === minItems).sort((a, b) => b.bytes - a.bytes)[0];
  if (big) headline.push(`extraction at ${fmtBytes(big.bytes)}: prompt path <b>${num(big.promptMBps)} MB/s</b>, reply path <b>${num(big.replyMBps)} MB/s</b>`);
}

if (prune) {
  const data = [];
  for (const p of prune.points) {
    data.push({ items: p.items, what: "prune dry run (RPC)", us: p.pruneDryRun.p50us, ns: p.pruneNsPerItem });
    data.push({ items: p.items, what: "getScores top 10 (RPC)", us: p.getScoresTop10.p50us, ns: p.scoresNsPerItem });
    data.push({ items: p.items, what: "before_compaction", us: p.compactionUs, ns: p.compactionNsPerItem });
  }
  const c1 = await chart({
    title: "Scoring + prune time against items",
    data: { values: data },
    mark: { type: "line", point: true },
    encoding: {
      x: { field: "items", type: "quantitative", scale: { type: "log" }, title: "tracked items" },
      y: { field: "us", type: "quantitative", scale: { type: "log" }, title: "µs (p50)" },
      color: { field: "what", type: "nominal", title: "" },
    },
  });
  const c2 = await chart({
    title: "Cost per item (flat = linear)",
    data: { values: data },
    mark: { type: "line", point: true },
    encoding: {
      x: { field: "items", type: "quantitative", scale: { type: "log" }, title: "tracked items" },
      y: { field: "ns", type: "quantitative", title: "ns per item", scale: { zero: true } },
      color: { field: "what", type: "nominal", title: "" },
    },
  });
  const first = prune.points[0], last = prune.points[prune.points.length - 1];
  const growth = last.pruneNsPerItem / first.pruneNsPerItem;
  // log-log slope of time against items: 1 = linear
  const slope = (a, b) => Math.log(b / a) / Math.log(last.items / first.items);
  const sPrune = slope(first.pruneDryRun.p50us, last.pruneDryRun.p50us);
  const sScores = slope(first.getScoresTop10.p50us, last.getScoresTop10.p50us);
  const sComp = slope(first.compactionUs, last.compactionUs);
  sections.push(`<h2 id="prune">Scoring and pruning</h2>
<p><code>clarity.prune</code> with <code>dryRun</code> scores every item, sorts by adjusted score and decides (the JSON answer lists every decision); <code>getScores</code> with <code>limit 10</code> scores and sorts; <code>before_compaction</code> applies the prune and persists the changed items (one call). From ${first.items} to ${last.items} items (×${last.items / first.items}) the dry run's cost per item changes ×${num(growth, 2)}. Fitted growth (log-log slope, 1 = linear): prune dry run n^${num(sPrune, 2)}, getScores n^${num(sScores, 2)}, before_compaction n^${num(sComp, 2)}${Math.max(sPrune, sScores, sComp) <= 1.15 ? " — linear up to the n log n sort" : " — above linear at large n: the sort of all items plus cache misses once the table outgrows the caches"}.</p>
${c1}${c2}
${table(
  ["items", "reps", "prune dry run p50 µs", "ns/item", "getScores p50 µs", "ns/item", "before_compaction µs", "ns/item"],
  prune.points.map((p) => [p.items, p.reps, num(p.pruneDryRun.p50us), num(p.pruneNsPerItem), num(p.getScoresTop10.p50us), num(p.scoresNsPerItem), num(p.compactionUs), num(p.compactionNsPerItem)]),
)}`);
  headline.push(`prune dry run: ${num(first.pruneNsPerItem, 0)} ns/item at ${first.items} items, ${num(last.pruneNsPerItem, 0)} ns/item at ${last.items} (time ∝ n^${num(sPrune, 2)})`);
}

if (persist) {
  const data = persist.points.map((p) => ({ group: `${p.items} items, ${p.shape}`, store: p.store, us: p.turn.p50us, p99: p.turn.p99us }));
  const c = await chart({
    title: "Per-turn cost by store (p50)",
    data: { values: data },
    mark: "bar",
    encoding: {
      x: { field: "group", type: "nominal", title: "" , axis: { labelAngle: 0 } },
      xOffset: { field: "store" },
      y: { field: "us", type: "quantitative", title: "µs per turn (p50)" },
      color: { field: "store", type: "nominal", title: "store" },
    },
  });
  const rows = [];
  for (let i = 0; i < persist.points.length; i += 2) {
    const m = persist.points[i], s = persist.points[i + 1];
    rows.push([m.items, `${m.shape} (${fmtBytes(m.promptBytes)} / ${fmtBytes(m.replyBytes)})`, num(m.turn.p50us), num(s.turn.p50us),
      `<b>${num(s.turn.p50us - m.turn.p50us)}</b>`, num(m.turn.p99us), num(s.turn.p99us), num(s.end.p50us - m.end.p50us),
      s.floorCommit ? `${num(s.floorCommit.p50us)} (${Math.round(s.floorRecordBytes)} B` +
        (s.floorCellBytes ? ` in a ${Math.round(s.floorCellBytes)} B cell)` : ")") : "—"]);
    if (m.shape === "small" && m.items === 1000) headline.push(`SQLite persistence: +${num(s.turn.p50us - m.turn.p50us)} µs per turn at p50 (1000 items, small turn)`);
  }
  sections.push(`<h2 id="persist">Persistence per turn</h2>
<p>The same turns on the memory store and on SQLite (WAL, <code>synchronous=NORMAL</code>, file in <code>${esc(persist.tmpDir)}</code>): <code>agent_end</code> writes one turn-log record of the items the turn changed, one transaction. ${persist.turns} turns each.</p>
${c}
<p>The last column is SQLite alone: on the same file, one transaction per turn rewriting a turn-log slot's row with a cell of the plugin's mean cell size (the record padded to its size class, as <code>store/sqlite_ring.c</code> keeps it), BEGIN to COMMIT. It is the least a durable SQLite turn of that size can cost on this disk.</p>
${table(["items", "turn", "memory p50 µs", "sqlite p50 µs", "sqlite − memory µs", "memory p99 µs", "sqlite p99 µs", "agent_end Δ p50 µs", "SQLite alone: commit p50 µs (record)"], rows)}`);
}

if (restore) {
  const c = await chart({
    title: "Session restore from SQLite: first call after a reload",
    data: { values: restore.points.map((p) => ({ items: p.items, ms: p.firstCall.p50us / 1000 })) },
    mark: { type: "line", point: true },
    encoding: {
      x: { field: "items", type: "quantitative", scale: { type: "log" }, title: "items in the session" },
      y: { field: "ms", type: "quantitative", scale: { type: "log" }, title: "ms (p50)" },
    },
  });
  sections.push(`<h2 id="restore">Session restore</h2>
<p>A session with N items is written to SQLite, the plugin unloaded; then, ${restore.reps} times: <code>clarity_plugin_init</code> on the same file, and a first <code>before_agent_start</code> (1 KiB prompt) that loads the session from the store.</p>
${c}
${table(["items", "db bytes", "init p50 µs", "first call p50 ms", "ns/item", "next call p50 µs"],
  restore.points.map((p) => [p.items, p.dbBytes, num(p.init.p50us), num(p.firstCall.p50us / 1000, 2), num(p.firstCallNsPerItem, 0), num(p.warmCall.p50us)]))}`);
  const p = restore.points.find((x) => x.items === 10000) || restore.points[restore.points.length - 1];
  headline.push(`restore of ${p.items} items from SQLite: first call <b>${num(p.firstCall.p50us / 1000, 1)} ms</b>`);
}

if (hookproc) {
  const ms = (us) => num(us / 1000, 2);
  const c = await chart({
    title: "A Claude Code hook process, fork to exit (p50)",
    data: {
      values: hookproc.cells.flatMap((x) => [
        { items: x.items, hook: `UserPromptSubmit ${x.plugin}`, ms: x.prompt.p50us / 1000 },
        { items: x.items, hook: `PostToolUse (Read) ${x.plugin}`, ms: x.tool.p50us / 1000 },
        { items: x.items, hook: `Stop ${x.plugin}`, ms: x.stop.p50us / 1000 },
      ]),
    },
    mark: { type: "line", point: true },
    encoding: {
      x: { field: "items", type: "ordinal", title: "items in the session" },
      y: { field: "ms", type: "quantitative", title: "ms (p50)" },
      color: { field: "hook", type: "nominal" },
    },
  });
  sections.push(`<h2 id="hookproc">A Claude Code hook process</h2>
<p><code>clarity hook</code> as Claude Code runs it, one process per event: fork, exec, the library and its libraries loaded, the store opened, the session restored, the hook, the exit. ${hookproc.runs} turns of a <code>UserPromptSubmit</code>, a <code>PostToolUse</code> of a Read (which records the call and loads no plugin) and a <code>Stop</code> (after a new turn in the transcript), in alternation with <code>/bin/true</code> spawned the same way: the floor no hook process goes under.</p>
${c}
${table(["items", "plugin", "/bin/true p50 ms", "UserPromptSubmit p50 ms", "p99 ms", "PostToolUse p50 ms", "p99 ms", "Stop p50 ms", "p99 ms"],
  hookproc.cells.map((x) => [x.items, esc(x.plugin), ms(x.floor.p50us), `<b>${ms(x.prompt.p50us)}</b>`, ms(x.prompt.p99us), `<b>${ms(x.tool.p50us)}</b>`, ms(x.tool.p99us), `<b>${ms(x.stop.p50us)}</b>`, ms(x.stop.p99us)]))}`);
  const x = hookproc.cells.find((y) => y.items === 1000) || hookproc.cells[0];
  headline.push(`a Claude Code hook process at ${x.items} items: <b>${ms(x.prompt.p50us)} ms</b> (/bin/true ${ms(x.floor.p50us)} ms)`);
}

if (memory.length) {
  sections.push(`<h2 id="memory">Bytes per tracked item</h2>
<p>Items added through the hooks (prompts that name new items), heap in use (<code>mallinfo2</code>) and RSS before and after, divided by the items added. The memory store keeps its own copy of every persisted item; SQLite's page cache is bounded.</p>
${table(["store", "items added", "heap bytes / item", "RSS bytes / item", "peak RSS MiB"],
  memory.map((m) => [m.store, m.itemsAdded, `<b>${num(m.heapBytesPerItem, 0)}</b>`, num(m.rssBytesPerItem, 0), num(m.hwmKB / 1024)]))}`);
  const s = memory.find((m) => m.store === "sqlite") || memory[0];
  headline.push(`memory: <b>${num(s.heapBytesPerItem, 0)} bytes per tracked item</b> (heap, ${s.store} store)`);
}

if (rss) {
  const data = [];
  for (const s of rss.samples) {
    data.push({ turn: s.turn, series: "RSS", mib: s.rssKB / 1024 });
    data.push({ turn: s.turn, series: "heap in use", mib: s.heapBytes / 2 ** 20 });
  }
  const c = await chart({
    title: `RSS over ${rss.turns.toLocaleString("en")} turns (sampled every ${rss.every.toLocaleString("en")})`,
    width: 700,
    data: { values: data },
    mark: { type: "line" },
    encoding: {
      x: { field: "turn", type: "quantitative", title: "turn" },
      y: { field: "mib", type: "quantitative", title: "MiB", scale: { zero: true } },
      color: { field: "series", type: "nominal", title: "" },
    },
  });
  sections.push(`<h2 id="rss">RSS over a long session</h2>
<p>${rss.turns.toLocaleString("en")} turns on one SQLite session (file in <code>${esc(rss.dbDir)}</code>; limits.maxTrackedItems ${rss.maxTrackedItems}), ${rss.promptBytes} B prompts that also name one new item each, ${rss.replyBytes} B replies: the table fills up and keeps evicting. Verdict from the sample at 10% of the run to the end: RSS ${num(rss.rssMinKB / 1024)}–${num(rss.rssMaxKB / 1024)} MiB, growth ${rss.growthKB} kB, peak ${num(rss.hwmKB / 1024)} MiB: <b>${rss.flat ? "flat" : "NOT flat"}</b>. ${num(rss.seconds, 0)} s in all, turn p50 ${num(rss.turn.p50us)} µs, p99 ${num(rss.turn.p99us)} µs.</p>
${c}`);
  headline.push(`RSS over ${rss.turns.toLocaleString("en")} turns: <b>${rss.flat ? "flat" : "NOT flat"}</b> (${num(rss.rssMinKB / 1024)}–${num(rss.rssMaxKB / 1024)} MiB after warm-up, peak ${num(rss.hwmKB / 1024)} MiB)`);
}

{
  const withOrig = compare.filter((c) => c.original && !c.original.skipped);
  let body;
  if (!compare.length) body = "<p>Not run.</p>";
  else if (!withOrig.length) {
    const reason = compare.find((c) => c.original)?.original?.reason || "the node harness did not run";
    body = `<p class="note">The original plugin was not available: ${esc(reason)}. Set <code>CLARITY_ORIGINAL_DIR</code> to its <code>extensions/clarity</code> directory.</p>`;
  } else {
    const data = [];
    for (const c of withOrig)
      for (const r of c.ratios)
        if (r.clarityStore === "sqlite") data.push({ items: String(c.items), hook: r.hook, original: r.original, ratio: r.ratioP50 });
    const ch = await chart({
      title: "How many times faster clarity (SQLite store) is than the original, p50",
      data: { values: data },
      facet: { column: { field: "original", type: "nominal", title: "" } },
      spec: {
        width: 300,
        height: 240,
        mark: "bar",
        encoding: {
          x: { field: "items", type: "nominal", sort: withOrig.map((c) => String(c.items)), title: "tracked items", axis: { labelAngle: 0 } },
          xOffset: { field: "hook", sort: ["before", "end", "turn"] },
          y: { field: "ratio", type: "quantitative", scale: { type: "log", domainMin: 1 }, title: "original ÷ clarity" },
          // a log axis has no zero: bars start at ×1
          y2: { datum: 1 },
          color: { field: "hook", type: "nominal", sort: ["before", "end", "turn"], title: "" },
        },
      },
    });
    const rows = [];
    for (const c of withOrig) {
      const impls = [
        ...c.original.results.map((o) => [o.implementation, o]),
        ["clarity memory", c.clarity.memory],
        ["clarity sqlite", c.clarity.sqlite],
        ["clarity sqlite (storage.exclusive)", c.clarity.exclusive],
      ];
      for (const [name, r] of impls)
        if (r) rows.push([c.items, name, r.turn.n, num(r.before.p50us), num(r.end.p50us), `<b>${num(r.turn.p50us)}</b>`, num(r.turn.p99us), r.finalItems]);
    }
    const rrows = [];
    for (const c of withOrig)
      for (const o of ["original-v2", "original-v1"])
        for (const store of ["sqlite", "exclusive", "memory"]) {
          const get = (h) => c.ratios.find((r) => r.original === o && r.clarityStore === store && r.hook === h);
          if (!get("turn")) continue;
          rrows.push([c.items, o, `clarity ${store}`, `×${num(get("before").ratioP50, 0)}`, `×${num(get("end").ratioP50, 0)}`, `<b>×${num(get("turn").ratioP50, 0)}</b>`, `×${num(get("turn").ratioP99, 0)}`]);
        }
    body = `<p>The same stream (a JSONL file written once: the seeded items, then per turn a 4 KiB prompt, a 16 KiB reply and a <code>Read</code> tool call) replayed in one run by clarity (through the ABI) and by the original under node ${esc(withOrig[0].original.node)} (<code>bench/original/harness.js</code>). <i>original-v2</i> is what the original's <code>index.js</code> registers (lib/v2 tracker + lib/pruner.js), called through its <code>api.on</code> handlers; <i>original-v1</i> is lib/context-tracker.js driven the way those hooks drive a tracker. Ratios are original ÷ clarity; the first turns are warm-up.</p>
${ch}
${table(["items", "original", "against", "before_agent_start", "agent_end", "turn p50", "turn p99"], rrows)}
${table(["items", "implementation", "turns", "before p50 µs", "end p50 µs", "turn p50 µs", "turn p99 µs", "items after"], rows)}`;
    for (const c of withOrig) {
      const r = c.ratios.find((x) => x.original === "original-v2" && x.clarityStore === "sqlite" && x.hook === "turn");
      if (r) headline.push(`vs the original (index.js wiring) at ${c.items} items: <b>×${num(r.ratioP50, 0)}</b> per turn (${num(r.originalP50us / 1000, 1)} ms → ${num(r.clarityP50us, 0)} µs)`);
    }
  }
  sections.push(`<h2 id="compare">Side by side with the original plugin</h2>${body}`);
}

{
  let body;
  if (!instr) body = "<p>Not run.</p>";
  else if (instr.skipped) body = `<p class="note">Skipped: ${esc(instr.reason)}.</p>`;
  else {
    const perTurn = instr.cases.filter((c) => c.perTurn != null);
    const proc = instr.cases.find((c) => c.name === "hook-process");
    const rows = perTurn.map((c) => [
      esc(c.name),
      c.store,
      c.items ?? esc(c.data),
      c.turns,
      num(c.instructions / 1e6, 2),
      `<b>${num(c.perTurn / 1e3, 1)}</b>`,
      c.outputMd5 ? `<code>${c.outputMd5.slice(0, 8)}…</code>` : "",
    ]);
    body = `<p>Instructions counted by ${esc(instr.valgrind)} (callgrind) inside <code>hooks_on_event</code> only, divided by the <code>agent_end</code> calls of the same run: figures that the machine's load does not move (<code>bench/instr.py</code>). <i>dense</i> is <code>bench_turn</code>'s turn (a 4 KiB prompt, a 16 KiB reply, a tool call); <i>replay</i> is <code>clarity replay</code> of the recorded sessions, whose output hash tells a change of cost from a change of answers.${instr.replaySkipped ? ` Replay: ${esc(instr.replaySkipped)}.` : ""}</p>
${table(["case", "store", "items / data", "turns", "instructions (M)", "per turn (k)", "replay output md5"], rows)}${proc ? `
<p>A whole <code>clarity hook</code> process (a <code>UserPromptSubmit</code> on a small session, Claude Code's one process per event; everything counted, the loader's work included): <b>${num(proc.instructions / 1e6, 2)} M</b> instructions.</p>` : ""}`;
    // where each case's turn spends them (instr.py's PHASES; "-": none in that case)
    const split = instr.cases.filter((c) => c.perTurnByPart);
    if (split.length) {
      const parts = Object.keys(split[0].perTurnByPart);
      const partRows = parts.map((p) => [esc(p), ...split.map((c) => {
        const v = c.perTurnByPart[p];
        return v == null ? "-" : `${num(v / 1e3, 1)} <small>(${num((100 * v) / c.perTurn, 0)} %)</small>`;
      })]);
      // one bar a case, its parts' shares in the table's order (the cases'
      // totals differ tenfold: shares, with each total in its label)
      const label = (c) => `${c.name} (${num(c.perTurn / 1e3, 1)} k)`;
      const values = split.flatMap((c) => parts.filter((p) => c.perTurnByPart[p] != null)
        .map((p) => ({ case: label(c), part: p, k: c.perTurnByPart[p] / 1e3, order: parts.indexOf(p) })));
      const c = await chart({
        title: "Instructions per turn, share of each part (callgrind)",
        data: { values },
        mark: "bar",
        encoding: {
          y: { field: "case", type: "nominal", title: "", sort: split.map(label), axis: { labelLimit: 260 } },
          x: { field: "k", type: "quantitative", title: "share of the turn's instructions", stack: "normalize", axis: { format: "%" } },
          color: { field: "part", type: "nominal", title: "part", sort: parts },
          order: { field: "order", type: "quantitative" },
        },
      });
      body += `<p>Where a turn's instructions go, k a turn: each part is the inclusive cost of the function that does it (<code>instr.py</code>'s <code>PHASES</code>); <i>other</i> is the rest of the hooks.</p>
${c}
${table(["part", ...split.map((c) => esc(c.name))], partRows)}`;
    }
    const d = instr.cases.find((c) => c.name.startsWith("dense-memory"));
    const r = instr.cases.find((c) => c.name === "replay-memory");
    if (d) headline.push(`dense turn: <b>${num(d.perTurn / 1e3, 0)} k</b> instructions (callgrind, memory store, ${d.items} items)`);
    if (r) headline.push(`recorded sessions: <b>${num(r.perTurn / 1e3, 1)} k</b> instructions a turn (callgrind, memory store; target ≤ 20 k)`);
  }
  sections.push(`<h2 id="instr">Instructions per turn</h2>${body}`);
}

{
  let body;
  if (!conformance) body = "<p>Not run.</p>";
  else if (conformance.skipped) body = `<p class="note">Skipped: ${esc(conformance.reason)}.</p>`;
  else {
    body = `<p>Every combination of mentionCount, referenceCount, age and anchored, imported into clarity with <code>clarity.importState</code> and read back with <code>clarity.getScores</code>, against the original's <code>${esc(conformance.scorer)}</code> on the same stats. Equal means |Δscore| ≤ 0.0005 (clarity prints 3 decimals) and every term within the original's 1-decimal rounding. See <code>bench/CONFORMANCE.md</code> for where clarity differs on purpose.</p>
${table(["config", "cases", "max |Δ|", "score mismatches", "expected", "result"],
  conformance.configs.map((c) => [esc(c.name), c.cases, c.maxAbsDiff.toExponential(2), c.mismatches, c.expectEqual ? "equal" : "different", c.equal === c.expectEqual ? "✔" : "✘"]))}`;
    const eq = conformance.configs.filter((c) => c.expectEqual);
    headline.push(`conformance: ${eq.reduce((s, c) => s + c.cases, 0)} cases equal to the original's scorer within rounding (max |Δ| ${Math.max(...eq.map((c) => c.maxAbsDiff)).toExponential(1)})`);
  }
  sections.push(`<h2 id="conformance">Score conformance</h2>${body}`);
}

const m = results.meta;
const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>clarity benchmarks</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;line-height:1.45;padding:0 1em}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:1em 0;font-size:.88em} th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right}
th{background:#f4f4f4} td:first-child,th:first-child{text-align:left}
.chart{display:inline-block;margin:.5em 1em .5em 0;vertical-align:top} .note{color:#8a5a00}
.meta{color:#555;font-size:.9em} ul.head li{margin:.2em 0} code{background:#f4f4f4;padding:0 .2em}
</style></head><body>
<h1>clarity benchmarks</h1>
<p class="meta">${esc(m.date)} · ${esc(m.kind)} run · commit ${esc(m.commit || "?")}${m.dirty ? " (+ local changes)" : ""} · ${esc(m.cpu || "?")}, ${m.cores} cores, ${m.memoryGiB} GiB · load average ${m.loadAverage.map((x) => x.toFixed(1)).join(" ")} · node ${esc(m.node)}</p>
<p class="meta">Rerun with <code>make bench</code> (this page: <code>bench/out/report.html</code>, the data: <code>bench/out/results.json</code>).</p>
<h2>Headline</h2><ul class="head">${headline.map((h) => `<li>${h}</li>`).join("")}</ul>
${sections.join("\n")}
</body></html>
`;
fs.writeFileSync(path.join(outDir, "report.html"), html);
process.stderr.write(`report: ${path.join(outDir, "report.html")} and results.json${vega ? "" : " (no charts: make -C bench deps)"}\n`);
