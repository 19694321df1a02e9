// run-e2e.mjs: clarity inside the real OpenClaw gateway (npm package
// `openclaw`), with a mock OpenAI-compatible model on 127.0.0.1 and HOME in a
// temporary directory.  Proves:
//   1. the [CLARITY CONTEXT] block reaches the model request (before_prompt_build)
//   2. agent_end maps the turn's messages, tool calls included (a file only a
//      tool call touched is tracked, and shows up in the next turn's block)
//   3. "/clarity anchor FocusEngine" sent with chat.send anchors it, without a model call
//   4. `openclaw gateway call clarity.getScores` returns the scores (and errors are errors)
//   5. `openclaw sessions compact` fires before_compaction (the configured pruner runs)
//   6. the state survives a gateway restart and feeds the next prompt
//   7. as the context engine (plugins.slots.contextEngine = "clarity", set by
//      the install): a big tool output of an older turn reaches a later model
//      request as a "[clarity: ...]" stub, an anchored file's output stays
//      verbatim, the compaction's summarizer gets clarity's keep list, and
//      OpenClaw never degrades or quarantines the engine
//
//   node run-e2e.mjs --lib /abs/path/libclarity.so --deps DIR [--keep] [--timeout S]
// Needs Node 24 (the `node` npm package in this folder provides it) and the
// npm packages of this folder and of the plugin folder (make e2e-openclaw
// installs both).  Loopback only; bounded by --timeout (default 900 s).

import { execFile, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { messageText, MODEL_ID, startMockModel } from "./mock-model.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ADAPTER = path.resolve(HERE, "..");
const SESSION = "agent:main:main";

// ---- arguments, preconditions -------------------------------------------------

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const LIB = path.resolve(opt("--lib", process.env.CLARITY_PLUGIN ?? path.join(ADAPTER, "..", "..", "build", "libclarity.so")));
const KEEP = argv.includes("--keep");
// where install-deps.sh put openclaw and node@24 (outside the plugin folder)
const DEPS = path.resolve(opt("--deps", process.env.CLARITY_OC_DEPS ?? path.join(ADAPTER, "..", "..", "build", "openclaw-e2e")));
const BIN = path.join(DEPS, "node_modules", ".bin");
const OPENCLAW = path.join(BIN, "openclaw");
const TOTAL_TIMEOUT_S = Number(opt("--timeout", process.env.E2E_TIMEOUT_S ?? 900));

const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
const say = (msg) => console.log(`[e2e-openclaw ${elapsed()}] ${msg}`);

class Fail extends Error {}
function need(cond, msg) {
  if (!cond) throw new Fail(msg);
}

function preflight() {
  need(Number(process.versions.node.split(".")[0]) >= 24,
    `needs Node 24+, this is ${process.version}: run with ${path.join(BIN, "node")} (npm package node@24)`);
  need(fs.existsSync(LIB), `libclarity.so not found at ${LIB} (build it with make, or pass --lib)`);
  need(fs.existsSync(OPENCLAW), `openclaw not installed in ${DEPS}: run test/install-deps.sh ${DEPS} (make e2e-openclaw does)`);
  need(fs.existsSync(path.join(ADAPTER, "node_modules", "koffi")),
    `the plugin's koffi is not installed: run \`npm ci\` in ${ADAPTER} (make e2e-openclaw does)`);
}

// ---- the sandbox ----------------------------------------------------------------

const ROOT = fs.mkdtempSync(path.join(os.tmpdir(), "clarity-oc-e2e-"));
const HOME = path.join(ROOT, "home");
const STATE = path.join(HOME, ".openclaw");
const WORKSPACE = path.join(STATE, "workspace");
const TMP = path.join(ROOT, "tmp");
for (const d of [HOME, STATE, TMP, path.join(WORKSPACE, "src", "auth")]) fs.mkdirSync(d, { recursive: true });
fs.writeFileSync(path.join(WORKSPACE, "src", "auth", "token.ts"), "export function refreshToken() { return 'e2e'; }\n");
// two big documents (about 6,000 tokens each) for the context-engine turns
fs.mkdirSync(path.join(WORKSPACE, "docs"), { recursive: true });
const bigDoc = (tag) => Array.from({ length: 300 }, (_, i) => `${tag} line ${i}: the session cache notes, kept in full here.`).join("\n") + "\n";
fs.writeFileSync(path.join(WORKSPACE, "docs", "big-a.md"), bigDoc("BIG-A"));
fs.writeFileSync(path.join(WORKSPACE, "docs", "big-b.md"), bigDoc("BIG-B"));

const TOKEN = `e2e-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
const env = {
  PATH: `${BIN}:${process.env.PATH ?? "/usr/bin:/bin"}`,
  HOME,
  TMPDIR: TMP,
  XDG_CONFIG_HOME: path.join(HOME, ".config"),
  XDG_STATE_HOME: path.join(HOME, ".local", "state"),
  XDG_CACHE_HOME: path.join(HOME, ".cache"),
  XDG_DATA_HOME: path.join(HOME, ".local", "share"),
  LANG: "C.UTF-8",
  CI: "true",
  NO_COLOR: "1",
  FORCE_COLOR: "0",
  // loopback only: no update checks, no mDNS, no helper downloads
  OPENCLAW_NO_AUTO_UPDATE: "1",
  OPENCLAW_DISABLE_BONJOUR: "1",
  OPENCLAW_OFFLINE: "1",
  OPENCLAW_SKIP_CHANNELS: "1",
};

// ---- helpers ----------------------------------------------------------------------

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Runs the openclaw CLI; resolves {code, stdout, stderr}.
function openclaw(args, { timeoutMs = 180000 } = {}) {
  return new Promise((resolve) => {
    execFile(OPENCLAW, args, { env, cwd: HOME, timeout: timeoutMs, maxBuffer: 64 << 20, killSignal: "SIGKILL" },
      (err, stdout, stderr) => {
        resolve({ code: err ? (err.code ?? err.signal ?? 1) : 0, stdout: String(stdout), stderr: String(stderr), killed: !!err?.killed });
      });
  });
}

function parseJson(text, what) {
  const s = text.trim();
  try {
    return JSON.parse(s);
  } catch {
    const i = s.indexOf("{");
    if (i >= 0) {
      try {
        return JSON.parse(s.slice(i));
      } catch {
        /* fall through */
      }
    }
    throw new Fail(`${what}: output is not JSON:\n${s.slice(0, 2000)}`);
  }
}

async function openclawJson(args, what) {
  const r = await openclaw(args);
  if (r.code !== 0)
    throw new Fail(`${what}: \`openclaw ${args.join(" ")}\` exited ${r.code}${r.killed ? " (timed out)" : ""}\n${r.stdout}${r.stderr}`.slice(0, 4000));
  return parseJson(r.stdout, what);
}

async function gatewayCall(method, params, what = method) {
  return openclawJson(["gateway", "call", method, "--params", JSON.stringify(params), "--json", "--timeout", "60000"], what);
}

async function waitFor(what, fn, { timeoutMs = 180000, everyMs = 1000 } = {}) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > end) throw new Fail(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
    await sleep(everyMs);
  }
}

const stripAnsi = (s) => s.replace(/\x1b\[[0-9;]*m/g, "");

// ---- the mock model ------------------------------------------------------------------

const TURN_RE = /E2E-TURN-(\d+)/;

function turnOf(body) {
  const msgs = body.messages ?? [];
  for (let i = msgs.length - 1; i >= 0; i--) {
    if (msgs[i].role !== "user") continue;
    const m = TURN_RE.exec(messageText(msgs[i]));
    if (m) return { turn: Number(m[1]), index: i, text: messageText(msgs[i]) };
  }
  return null;
}

function script(body) {
  const sys = messageText((body.messages ?? []).find((m) => m.role === "system"));
  if (/context summarization assistant/i.test(sys)) return { text: "## Summary\nThe user and the assistant worked on ClaraCore's login bug." };
  const t = turnOf(body);
  if (!t) return { text: "ok" };
  const after = body.messages.slice(t.index + 1);
  const toolDone = after.some((m) => m.role === "tool");
  if (t.turn === 1 && !toolDone) return { toolCall: { name: "read", arguments: { path: "src/auth/token.ts" } } };
  if (t.turn === 1) return { text: "I read the token code: ClaraCore refreshes the session too late. E2E-DONE-1" };
  // turns 4..6 read one file each (the context-engine step)
  const reads = { 4: "docs/big-a.md", 5: "docs/big-b.md", 6: "src/auth/token.ts" };
  if (reads[t.turn] && !toolDone) return { toolCall: { name: "read", arguments: { path: reads[t.turn] } } };
  return { text: `Noted for ClaraCore. E2E-DONE-${t.turn}` };
}

// The [CLARITY CONTEXT] block in the request of turn n (its first request).
function contextBlockOf(requests, n) {
  const req = requests.find((b) => turnOf(b)?.turn === n);
  if (!req) return null;
  const text = turnOf(req).text;
  const m = /\[CLARITY CONTEXT\]\n([^]*?)\[\/CLARITY CONTEXT\]/.exec(text);
  return { block: m ? m[0] : null, text };
}

// ---- the gateway ---------------------------------------------------------------------------

let gateway = null;
let gatewayLogPath = null;

function startGateway(port, label) {
  gatewayLogPath = path.join(ROOT, `gateway-${label}.log`);
  const out = fs.openSync(gatewayLogPath, "w");
  const child = spawn(OPENCLAW, ["gateway", "run", "--port", String(port), "--bind", "loopback"], {
    env,
    cwd: HOME,
    stdio: ["ignore", out, out],
    detached: true,
  });
  fs.closeSync(out);
  const g = { child, exited: null, port, log: gatewayLogPath };
  child.on("exit", (code, signal) => (g.exited = { code, signal }));
  gateway = g;
  return g;
}

const gatewayLog = (g = gateway) => (g ? stripAnsi(fs.readFileSync(g.log, "utf8")) : "");

function portOpen(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port });
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

async function waitGatewayReady(g) {
  await waitFor("the gateway to be ready", async () => {
    if (g.exited) throw new Fail(`the gateway exited (${JSON.stringify(g.exited)}) during startup`);
    return /\[gateway\] ready/.test(gatewayLog(g)) && (await portOpen(g.port));
  }, { timeoutMs: 300000 });
}

async function stopGateway(g, { timeoutMs = 60000 } = {}) {
  if (!g || g.exited) return;
  try {
    process.kill(-g.child.pid, "SIGTERM");
  } catch {
    /* gone */
  }
  const end = Date.now() + timeoutMs;
  while (!g.exited && Date.now() < end) await sleep(200);
  if (!g.exited) {
    try {
      process.kill(-g.child.pid, "SIGKILL");
    } catch {
      /* gone */
    }
    await sleep(500);
  }
  // the process group may hold helpers (spawn broker): end them too
  try {
    process.kill(-g.child.pid, "SIGKILL");
  } catch {
    /* none left */
  }
}

// ---- the test ---------------------------------------------------------------------------------

const results = [];
async function step(name, fn) {
  const s = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    say(`ok   ${name} (${((Date.now() - s) / 1000).toFixed(1)}s)`);
  } catch (e) {
    results.push({ name, ok: false });
    say(`FAIL ${name}`);
    throw e;
  }
}

async function sendChat(message, key) {
  const r = await gatewayCall("chat.send", { sessionKey: SESSION, message, idempotencyKey: key }, `chat.send ${JSON.stringify(message)}`);
  need(r.status === "started" || r.runId, `chat.send was not accepted: ${JSON.stringify(r)}`);
  return r;
}

async function scores(extra = {}) {
  return gatewayCall("clarity.getScores", { session: SESSION, ...extra }, "clarity.getScores");
}

const itemsById = (r) => Object.fromEntries((r.items ?? []).map((i) => [i.id, i]));

async function waitTurn(mock, n) {
  await waitFor(`the model's final reply of turn ${n}`, async () => {
    if (gateway.exited) throw new Fail(`the gateway exited (${JSON.stringify(gateway.exited)})`);
    return mock.replies.some((r) => r.includes(`E2E-DONE-${n}`));
  }, { timeoutMs: 240000 });
  // agent_end runs after the reply; wait until clarity has counted the turn
  return waitFor(`clarity to record turn ${n} (agent_end)`, async () => {
    const r = await scores();
    return r.currentTurn >= n ? r : null;
  }, { timeoutMs: 120000, everyMs: 500 });
}

async function main() {
  preflight();
  const watchdog = setTimeout(() => {
    console.error(`[e2e-openclaw] FAIL: the whole test exceeded ${TOTAL_TIMEOUT_S}s`);
    cleanup().finally(() => process.exit(2));
  }, TOTAL_TIMEOUT_S * 1000);
  watchdog.unref();

  const replies = [];
  const mockServer = await startMockModel({
    script: (body, i) => {
      const r = script(body, i);
      replies.push(r.text ?? `tool:${r.toolCall?.name}`);
      return r;
    },
  });
  const mock = { ...mockServer, replies };
  cleanupFns.push(() => mockServer.close());
  const gwPort = await freePort();
  say(`sandbox ${ROOT}; mock model ${mock.url}; gateway port ${gwPort}; libclarity ${LIB}`);

  // -- config, plugin install --
  const config = {
    gateway: { mode: "local", port: gwPort, bind: "loopback", auth: { mode: "token", token: TOKEN } },
    update: { checkOnStart: false },
    discovery: { mdns: { mode: "off" } },
    models: {
      mode: "merge",
      catalogRefresh: { enabled: false },
      providers: {
        mock: {
          baseUrl: mock.url,
          apiKey: "mock-local",
          api: "openai-completions",
          models: [{ id: MODEL_ID, name: "Mock", reasoning: false, input: ["text"],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 128000, maxTokens: 4096 }],
        },
      },
    },
    agents: { defaults: { model: { primary: `mock/${MODEL_ID}` }, workspace: WORKSPACE, heartbeat: { every: "0m" } } },
  };
  fs.writeFileSync(path.join(STATE, "openclaw.json"), JSON.stringify(config, null, 2));

  await step("openclaw plugins install -l adapters/openclaw", async () => {
    const r = await openclaw(["plugins", "install", "-l", ADAPTER, "--force", "--accept-capabilities"]);
    need(r.code === 0, `plugins install exited ${r.code}:\n${r.stdout}${r.stderr}`);
    const cfg = JSON.parse(fs.readFileSync(path.join(STATE, "openclaw.json"), "utf8"));
    need(cfg.plugins?.entries?.clarity, `plugins.entries.clarity missing after install:\n${JSON.stringify(cfg.plugins)}`);
    need(cfg.plugins?.slots?.contextEngine === "clarity",
      `the install did not select clarity as the context engine: ${JSON.stringify(cfg.plugins?.slots)}`);
    cfg.plugins.entries.clarity.hooks = { allowConversationAccess: true };
    // the plugin config is clarity's config; libraryPath is the adapter's.
    // The pruning settings make compaction prune every unanchored item, so
    // its effect is visible in the scores.
    cfg.plugins.entries.clarity.config = {
      libraryPath: LIB,
      pruning: { pruneThreshold: 1000, targetContextItems: 0, minMentionsPreserve: 1000 },
      context: { maxItems: 8 },
      // a small window, so that the two big documents overflow it
      assemble: { maxTokens: 8000 },
    };
    fs.writeFileSync(path.join(STATE, "openclaw.json"), JSON.stringify(cfg, null, 2));
  });

  await step("gateway starts with the plugin", async () => {
    const g = startGateway(gwPort, "1");
    await waitGatewayReady(g);
    need(!/clarity: libclarity\.so not found/.test(gatewayLog(g)), `the plugin did not find libclarity.so:\n${gatewayLog(g).slice(-3000)}`);
  });

  // -- 1, 2: context block, agent_end with a tool call --
  let s1;
  await step("turn 1: [CLARITY CONTEXT] reaches the model; agent_end records the tool call", async () => {
    await sendChat("E2E-TURN-1: Let's fix the login bug in ClaraCore, starting from src/auth/session.ts", "e2e-turn-1");
    s1 = await waitTurn(mock, 1);
    const c = contextBlockOf(mock.requests, 1);
    need(c, "no model request carried turn 1");
    need(c.block, `the model request of turn 1 has no [CLARITY CONTEXT] block; its user message was:\n${c.text.slice(0, 1500)}`);
    need(/claracore/.test(c.block) && /file:src\/auth\/session\.ts/.test(c.block),
      `the turn-1 block lacks the prompt's items:\n${c.block}`);
    need(c.text.indexOf("[CLARITY CONTEXT]") < c.text.indexOf("E2E-TURN-1"), "the block is not prepended to the prompt");
    say(`turn 1 block as the model saw it:\n${c.block}`);
    const toolReq = mock.requests.find((b) => turnOf(b)?.turn === 1 && b.messages.some((m) => m.role === "tool"));
    need(toolReq, "the model never saw the result of its read tool call");
    const it = itemsById(s1);
    need(it.claracore?.referenceCount >= 1, `claracore has no reference from the assistant's reply: ${JSON.stringify(it.claracore)}`);
    const tok = it["file:src/auth/token.ts"];
    need(tok && tok.referenceCount >= 1 && tok.mentionCount === 0,
      `the file only the read tool call touched is not tracked as referenced: ${JSON.stringify(tok)}\nitems: ${Object.keys(it).join(", ")}`);
  });

  await step("turn 2: the block carries what turn 1 learned", async () => {
    await sendChat("E2E-TURN-2: does ClaraCore also need a token refresh?", "e2e-turn-2");
    await waitTurn(mock, 2);
    const c = contextBlockOf(mock.requests, 2);
    need(c?.block, `turn 2's request has no block:\n${c?.text?.slice(0, 1500)}`);
    need(/file:src\/auth\/token\.ts/.test(c.block), `turn 2's block lacks the file turn 1's tool call read:\n${c.block}`);
    need(/[●◐○] claracore \(\d+\)/.test(c.block), `turn 2's block lacks claracore:\n${c.block}`);
    say(`turn 2 block:\n${c.block}`);
  });

  // -- 3: /clarity anchor through chat.send --
  await step("/clarity anchor FocusEngine via chat.send anchors it (no model call)", async () => {
    const before = mock.requests.length;
    await sendChat("/clarity anchor FocusEngine", "e2e-anchor");
    const hist = await waitFor("the /clarity reply in chat.history", async () => {
      const h = await gatewayCall("chat.history", { sessionKey: SESSION, limit: 10 }, "chat.history");
      const texts = (h.messages ?? []).filter((m) => m.role === "assistant").map((m) => (typeof m.content === "string" ? m.content : (m.content ?? []).map((b) => b?.text ?? "").join("")));
      return texts.find((t) => /Anchored: focusengine/.test(t)) ? texts : null;
    }, { timeoutMs: 120000, everyMs: 1000 });
    need(hist, "no reply");
    need(mock.requests.length === before, `the command reached the model (${mock.requests.length - before} requests)`);
  });

  // -- 4: gateway call clarity.getScores --
  await step("openclaw gateway call clarity.getScores returns the scores", async () => {
    const r = await scores({ limit: 20 });
    need(r.session === SESSION && r.currentTurn === 2, `unexpected header: ${JSON.stringify({ session: r.session, currentTurn: r.currentTurn })}`);
    const it = itemsById(r);
    need(it.focusengine?.anchored === true && it.focusengine.breakdown?.anchor > 0, `focusengine is not anchored: ${JSON.stringify(it.focusengine)}`);
    for (const id of ["claracore", "file:src/auth/session.ts", "file:src/auth/token.ts"])
      need(it[id] && typeof it[id].score === "number" && it[id].breakdown, `item ${id} missing or without a score: ${JSON.stringify(it[id])}`);
    const sorted = r.items.map((i) => i.score);
    need(sorted.every((v, i) => i === 0 || sorted[i - 1] >= v), `items are not sorted by score: ${sorted}`);
    const cfg = await gatewayCall("clarity.config", {}, "clarity.config");
    need(cfg.pruning?.pruneThreshold === 1000 && cfg.context?.maxItems === 8,
      `the plugin config did not reach clarity: ${JSON.stringify({ pruning: cfg.pruning, context: cfg.context })}`);
    need(cfg.storage?.path === path.join(STATE, "clarity", "clarity.db"), `unexpected state path ${cfg.storage?.path}`);
    need(cfg.prediction?.loadWaitMs === 1000, `the gateway's wait for a code graph: ${JSON.stringify(cfg.prediction)}`);
    need(fs.existsSync(cfg.storage.path), `no database at ${cfg.storage.path}`);
    const bad = await openclaw(["gateway", "call", "clarity.getScores", "--params", JSON.stringify({ session: "nobody" }), "--json"]);
    need(bad.code !== 0 && /unknown session: nobody/.test(bad.stdout + bad.stderr),
      `an unknown session should fail with clarity's message; got exit ${bad.code}:\n${bad.stdout}${bad.stderr}`);
  });

  // -- 5: compaction --
  await step("openclaw sessions compact fires before_compaction", async () => {
    // anchored outside the chat, so the summary cannot name it
    await gatewayCall("clarity.anchor", { session: SESSION, itemId: "file:docs/release-plan.md" }, "clarity.anchor");
    const r = await openclawJson(["sessions", "compact", SESSION, "--json"], "sessions compact");
    need(r.ok === true, `sessions compact failed: ${JSON.stringify(r)}`);
    await waitFor("the before_compaction line in the gateway log", async () =>
      /clarity: before_compaction agent:main:main: kept \d+, pruned [1-9]\d*/.test(gatewayLog()), { timeoutMs: 60000 });
    const it = itemsById(await scores({ includePruned: true }));
    need(it.claracore?.pruned === true, `claracore should be pruned by the compaction: ${JSON.stringify(it.claracore)}`);
    need(it.focusengine?.anchored && !it.focusengine.pruned, `the anchored item must be kept: ${JSON.stringify(it.focusengine)}`);
    const summ = mock.requests.find((b) => /context summarization assistant/i.test(messageText(b.messages?.find((m) => m.role === "system"))));
    need(summ, "the compaction never asked the model for a summary");
    const all = JSON.stringify(summ.messages);
    need(/Keep these \(clarity/.test(all) && /focusengine \(anchored\)/.test(all),
      `the summarizer's request lacks clarity's keep list:\n${all.slice(0, 3000)}`);
    // the summary does not name the release plan: the next block re-injects it
    need(/clarity: compact agent:main:main: the summary lost file:docs\/release-plan\.md/.test(gatewayLog()),
      `no re-injection after the compaction:\n${gatewayLog().split("\n").filter((l) => /clarity/.test(l)).join("\n")}`);
  });

  // -- 6: restart --
  await step("state survives a gateway restart and feeds the next prompt", async () => {
    const g1 = gateway;
    await stopGateway(g1);
    need(g1.exited, "the gateway did not stop");
    need(/clarity: unloaded \(gateway stop\)/.test(gatewayLog(g1)), `no clean clarity unload at gateway stop:\n${gatewayLog(g1).slice(-2000)}`);
    const g2 = startGateway(gwPort, "2");
    await waitGatewayReady(g2);
    const it = itemsById(await scores({ includePruned: true }));
    need(it.focusengine?.anchored === true, `the anchor did not survive the restart: ${JSON.stringify(it.focusengine)}`);
    need(it.claracore?.pruned === true && it["file:src/auth/token.ts"], `tracked items did not survive the restart: ${Object.keys(it)}`);
    await sendChat("E2E-TURN-3: back to ClaraCore after the restart", "e2e-turn-3");
    const s3 = await waitTurn(mock, 3);
    need(s3.currentTurn === 3, `turn counter after restart: ${s3.currentTurn}`);
    const c = contextBlockOf(mock.requests, 3);
    need(c?.block && /⚓ focusengine/.test(c.block), `turn 3's block lacks the anchored item from before the restart:\n${c?.block ?? c?.text}`);
    need(/claracore/.test(c.block), `a new mention should revive claracore:\n${c.block}`);
    need(/Kept through the compaction \(its summary left them out\):\n- file:docs\/release-plan\.md \(/.test(c.block),
      `turn 3's block does not re-inject what the summary lost:\n${c.block}`);
    say(`turn 3 block (after the restart):\n${c.block}`);
    need(itemsById(s3).claracore?.pruned === false, "claracore was not revived by its new mention");
  });

  // -- 7: the context engine decides what the model sees --
  await step("context engine: an old big output is stubbed, an anchored one stays verbatim", async () => {
    for (const n of [4, 5]) {
      await sendChat(`E2E-TURN-${n}: read the cache notes`, `e2e-turn-${n}`);
      await waitTurn(mock, n);
    }
    await sendChat("/clarity anchor file:docs/big-b.md", "e2e-anchor-b");
    await waitFor("the anchor of docs/big-b.md", async () =>
      itemsById(await scores({ limit: 50 }))["file:docs/big-b.md"]?.anchored === true, { timeoutMs: 120000 });
    for (const n of [6, 7]) {
      await sendChat(`E2E-TURN-${n}: what next for ClaraCore?`, `e2e-turn-${n}`);
      await waitTurn(mock, n);
    }
    const req = mock.requests.find((b) => turnOf(b)?.turn === 7);
    need(req, "no model request carried turn 7");
    const texts = req.messages.map(messageText);
    const stub = texts.find((t) => /\[clarity:/.test(t) && /docs\/big-a\.md/.test(t));
    need(stub, `turn 7's request has no stub for docs/big-a.md:\n${texts.map((t) => t.slice(0, 160)).join("\n")}`);
    need(!texts.some((t) => /BIG-A line 299/.test(t)), "docs/big-a.md reached turn 7's request verbatim");
    need(texts.some((t) => /BIG-B line 0:/.test(t) && /BIG-B line 299:/.test(t)), "the anchored docs/big-b.md was not kept verbatim");
    say(`turn 7 saw docs/big-a.md as: ${stub.slice(0, 300)}`);
    need(/clarity: assemble agent:main:main: \d+ -> \d+ tokens/.test(gatewayLog()), "no assemble line in the gateway log");
    const logs = ["1", "2"].map((l) => stripAnsi(fs.readFileSync(path.join(ROOT, `gateway-${l}.log`), "utf8"))).join("\n");
    need(!/\[context-engine\][^\n]*(degraded to|quarantin|falling back)/.test(logs),
      `OpenClaw degraded or quarantined the engine:\n${logs.split("\n").filter((l) => /context-engine/.test(l)).join("\n")}`);
    const s7 = await scores({ limit: 5 });
    need(s7.currentTurn === 7, `each turn is counted once through commitTurn: currentTurn ${s7.currentTurn}`);
  });
}

const cleanupFns = [];
async function cleanup() {
  await stopGateway(gateway);
  for (const f of cleanupFns.splice(0)) {
    try {
      await f();
    } catch {
      /* best effort */
    }
  }
  if (!KEEP) fs.rmSync(ROOT, { recursive: true, force: true });
}

let failed = false;
try {
  await main();
} catch (e) {
  failed = true;
  console.error(`\n[e2e-openclaw] FAIL: ${e instanceof Fail ? e.message : e?.stack ?? e}`);
  if (gateway) {
    console.error(`\n--- gateway log (${gateway.log}), last 60 lines ---`);
    console.error(gatewayLog().split("\n").slice(-60).join("\n"));
  }
  console.error(`(sandbox ${KEEP ? "kept" : "removed"}: ${ROOT}; rerun with --keep to inspect it)`);
} finally {
  await cleanup();
}
const passed = results.filter((r) => r.ok).length;
const nfail = results.filter((r) => !r.ok).length + (failed && results.every((r) => r.ok) ? 1 : 0);
say("done");
console.log(`e2e-openclaw: ${passed} passed, ${nfail} failed`);
process.exit(failed ? 1 : 0);
