// abi.test.mjs: the koffi binding against include/clarity.h and libclarity.so,
// the OpenClaw message mapping, and the plugin entry against a stand-in API.
// Fast (seconds); run before the OpenClaw end-to-end test.
//   CLARITY_PLUGIN=/abs/path/libclarity.so node --test abi.test.mjs

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";

import { checkLayout, defineTypes, LP64_LAYOUT, openClarity, RC } from "../src/ffi.js";
import {
  buildClarityConfig,
  GRAPH_WAIT_MS,
  currentTurn,
  hostHasBeforeAgentStart,
  resolveLibrary,
  sessionOf,
  applyActions,
  toClarityMessages,
  toContextMessages,
} from "../src/map.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ADAPTER = path.resolve(HERE, "..");
const REPO = path.resolve(ADAPTER, "..", "..");
// koffi of the test packages (install-deps.sh puts them in CLARITY_OC_DEPS),
// else the plugin's own.
const DEPS = process.env.CLARITY_OC_DEPS;
const koffi = createRequire(DEPS ? path.join(DEPS, "package.json") : path.join(ADAPTER, "package.json"))("koffi");

const LIB = process.env.CLARITY_PLUGIN || path.join(REPO, "build", "libclarity.so");
if (!fs.existsSync(LIB)) throw new Error(`libclarity.so not found at ${LIB}: build it (make) or set CLARITY_PLUGIN`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "clarity-oc-abi-"));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

v8.setFlagsFromString("--expose-gc");
const gc = globalThis.gc ?? vm.runInNewContext("gc");

const memory = () => ({ storage: { backend: "memory" } });
const quiet = () => {};

// ---- layout ------------------------------------------------------------------

test("koffi struct layouts equal the C compiler's for include/clarity.h", () => {
  const T = defineTypes(koffi);
  const structs = Object.fromEntries(Object.entries(LP64_LAYOUT).map(([k, v]) => [k, Object.keys(v.offsets)]));
  const lines = [
    "#include <stdio.h>",
    "#include <stddef.h>",
    "#include <clarity.h>",
    "int main(void) {",
    '  printf("{");',
  ];
  let first = true;
  for (const [name, members] of Object.entries(structs)) {
    const parts = members.map((m) => `\\"${m}\\": %zu`).join(", ");
    const args = members.map((m) => `offsetof(${name}, ${m})`).join(", ");
    lines.push(
      `  printf("${first ? "" : ","}\\"${name}\\": {\\"size\\": %zu, \\"offsets\\": {${parts}}}", sizeof(${name}), ${args});`,
    );
    first = false;
  }
  lines.push('  printf("}\\n");', "  return 0;", "}");
  const src = path.join(tmp, "layout.c");
  const exe = path.join(tmp, "layout");
  fs.writeFileSync(src, lines.join("\n"));
  execFileSync(process.env.CC || "cc", ["-std=c11", "-I", path.join(REPO, "include"), "-o", exe, src]);
  const c = JSON.parse(execFileSync(exe, { encoding: "utf8" }));
  for (const [name, want] of Object.entries(c)) {
    assert.equal(koffi.sizeof(T[name]), want.size, `sizeof(${name})`);
    for (const [m, off] of Object.entries(want.offsets))
      assert.equal(koffi.offsetof(T[name], m), off, `offsetof(${name}, ${m})`);
    if (koffi.sizeof("void *") === 8) assert.deepEqual(want, LP64_LAYOUT[name], `LP64 table for ${name}`);
  }
  for (const ev of Object.values(T.events)) assert.equal(koffi.sizeof(ev), c.clarity_event.size);
  assert.equal(checkLayout(koffi, T), koffi.sizeof("void *") === 8);
});

// ---- the binding against libclarity.so -----------------------------------------

test("hooks, commands and RPC round-trip through libclarity.so", () => {
  const logs = [];
  const c = openClarity({ koffi, libraryPath: LIB, config: memory(), log: (l, m) => logs.push([l, m]) });
  try {
    assert.equal(c.name, "clarity");
    const block = c.beforeAgentStart({
      session: "s",
      workspace: "/home/me/proj",
      prompt: "Refactor ClaraCore: the bug in src/auth/session.ts",
    });
    assert.match(block, /^\[CLARITY CONTEXT\]\n/);
    assert.match(block, /claracore/);
    assert.match(block, /\[\/CLARITY CONTEXT\]\n$/);
    c.agentEnd({
      session: "s",
      messages: [
        { role: "user", text: "Refactor ClaraCore" },
        { role: "assistant", text: "ClaraCore needs a change." },
        { role: "assistant", text: "", toolName: "read", toolArgs: { path: "/home/me/proj/src/auth/token.ts" } },
        { role: "tool", text: "export const x = 1", toolName: "read" },
      ],
    });
    const scores = c.rpc("clarity.getScores", { session: "s" });
    assert.equal(scores.rc, RC.OK);
    assert.equal(scores.result.currentTurn, 1);
    const byId = Object.fromEntries(scores.result.items.map((i) => [i.id, i]));
    assert.equal(byId.claracore.referenceCount, 1, "assistant text is a reference");
    assert.equal(byId["file:src/auth/token.ts"]?.referenceCount, 1, "a tool call's path argument is tracked");
    assert.equal(byId["tool:read"]?.referenceCount ?? 0, 0, "tool:read was never mentioned, so it is not created");

    assert.deepEqual(c.command("s", "/clarity anchor ClaraCore"), { rc: RC.OK, text: "Anchored: claracore\n" });
    assert.equal(c.command("s", "/status").rc, RC.DECLINED);
    const bad = c.rpc("clarity.getScores", { session: "nope" });
    assert.equal(bad.rc, RC.ENOTFOUND);
    assert.equal(bad.error.code, -32001);
    assert.match(bad.error.message, /unknown session/);
    assert.equal(c.rpc("clarity.bogus", {}).error.code, -32601);
    assert.equal(c.rpc("clarity.getScores", "{not json").error.code, -32602);

    const report = c.beforeCompaction({ session: "s", messageCount: 12, tokenCount: 3456 });
    assert.match(report, /^\[CLARITY PRUNE REPORT\]/);
    assert.match(report, /12 messages, 3456 tokens/);
    c.sessionEnd({ session: "s", reason: "test" });
    assert.ok(logs.some(([l, m]) => l === "info" && /session s ended \(test\)/.test(m)), "host->log reaches JS");
  } finally {
    c.unload();
  }
  c.unload(); // idempotent
  assert.throws(() => c.command("s", "/clarity"), /unloaded/);
});

test("text is passed as pointer + length: NUL bytes and UTF-8 survive", () => {
  const c = openClarity({ koffi, libraryPath: LIB, config: memory(), log: quiet });
  try {
    const block = c.beforeAgentStart({ session: "n", prompt: "Ünïcode first\u0000then FocusEngine after a NUL" });
    assert.match(block, /focusengine/, "text after the NUL byte was read");
  } finally {
    c.unload();
  }
});

test("a refused config names the key; a missing library says where it looked", () => {
  assert.throws(
    () => openClarity({ koffi, libraryPath: LIB, config: { scoring: { halfLife: -1 } }, log: quiet }),
    (e) => e.rc === RC.ECONFIG && /scoring\.halfLife/.test(e.message),
  );
  assert.throws(
    () => openClarity({ koffi, libraryPath: path.join(tmp, "nope.so"), config: memory(), log: quiet }),
    /cannot load .*nope\.so/,
  );
});

test("the library stays mapped after its handle is garbage-collected", async () => {
  // koffi dlcloses a library whose handle is collected; the plugin table's
  // function pointers must outlive any such collection.
  const c = openClarity({ koffi, libraryPath: LIB, config: memory(), log: quiet });
  try {
    for (let i = 0; i < 400; i++) {
      c.beforeAgentStart({ session: `g${i % 4}`, prompt: `ClaraCore turn ${i} with some padding text` });
      c.agentEnd({ session: `g${i % 4}`, messages: [{ role: "assistant", text: `ClaraCore ${i}` }] });
      if (i % 40 === 0) {
        gc();
        await new Promise((r) => setImmediate(r));
      }
    }
    assert.equal(c.rpc("clarity.getScores", { session: "g0" }).result.currentTurn, 100);
  } finally {
    c.unload();
  }
});

test("SQLite state persists across unload and reopen", () => {
  const db = path.join(tmp, "persist.db");
  const cfg = { storage: { path: db } };
  let c = openClarity({ koffi, libraryPath: LIB, config: cfg, log: quiet });
  c.beforeAgentStart({ session: "p", prompt: "Working on ClaraCore" });
  c.agentEnd({ session: "p", messages: [] });
  c.command("p", "/clarity anchor FocusEngine");
  c.unload();
  c = openClarity({ koffi, libraryPath: LIB, config: cfg, log: quiet });
  try {
    const r = c.rpc("clarity.getScores", { session: "p" }).result;
    assert.equal(r.currentTurn, 1);
    assert.ok(r.items.find((i) => i.id === "focusengine" && i.anchored));
    assert.ok(r.items.find((i) => i.id === "claracore"));
  } finally {
    c.unload();
  }
});

// ---- OpenClaw -> clarity mapping -------------------------------------------------

test("agent_end messages: the current turn only, tool calls as clarity messages", () => {
  const transcript = [
    { role: "user", content: "old turn about OldProject", timestamp: 1 },
    { role: "assistant", content: [{ type: "text", text: "OldProject done" }], timestamp: 2 },
    { role: "user", content: [{ type: "text", text: "Fix ClaraCore" }], timestamp: 3 },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "hmm" },
        { type: "text", text: "Reading it." },
        { type: "toolCall", id: "c1", name: "read", arguments: { path: "src/a.ts" } },
      ],
      timestamp: 4,
    },
    { role: "toolResult", toolCallId: "c1", toolName: "read", content: [{ type: "text", text: "code" }], isError: false },
    { role: "user", content: "runtime context", runtimeContextCarrier: true },
    {
      role: "assistant",
      content: "Done with ClaraCore",
      tool_calls: [{ id: "x", type: "function", function: { name: "exec", arguments: '{"command":"ls src"}' } }],
    },
  ];
  const turn = currentTurn(transcript);
  assert.equal(turn.length, 5);
  assert.deepEqual(toClarityMessages(turn), [
    { role: "user", text: "Fix ClaraCore" },
    { role: "assistant", text: "Reading it." },
    { role: "assistant", text: "", toolName: "read", toolArgs: { path: "src/a.ts" } },
    { role: "tool", text: "code", toolName: "read" },
    { role: "user", text: "runtime context" },
    { role: "assistant", text: "Done with ClaraCore" },
    { role: "assistant", text: "", toolName: "exec", toolArgs: { command: "ls src" } },
  ]);
  assert.deepEqual(currentTurn(undefined), []);
});

test("session, config, library path and host version helpers", () => {
  assert.equal(sessionOf({ sessionKey: "agent:main:main", sessionId: "u" }), "agent:main:main");
  assert.equal(sessionOf({ sessionId: "u" }), "u");
  assert.equal(sessionOf({}, { sessionKey: "k" }), "k");
  assert.equal(sessionOf({}), null);

  const state = path.join(tmp, "state");
  const cfg = buildClarityConfig({ libraryPath: "/x.so", context: { maxItems: 3 } }, state);
  assert.deepEqual(cfg, {
    context: { maxItems: 3 },
    prediction: { loadWaitMs: GRAPH_WAIT_MS },
    storage: { path: path.join(state, "clarity", "clarity.db") },
  });
  assert.ok(fs.existsSync(path.join(state, "clarity")));
  assert.equal(buildClarityConfig({ storage: { path: "x/y.db" } }, state).storage.path, path.join(state, "clarity", "x", "y.db"));
  assert.equal(buildClarityConfig({ storage: { path: "~/c.db" } }, state, { HOME: "/h" }).storage.path, "/h/c.db");
  assert.deepEqual(buildClarityConfig({ storage: { backend: "memory" } }, state), {
    prediction: { loadWaitMs: GRAPH_WAIT_MS },
    storage: { backend: "memory" },
  });
  // the gateway's bound on the wait for a code graph, unless the config says
  assert.equal(GRAPH_WAIT_MS, 1000);
  assert.equal(buildClarityConfig({ prediction: { loadWaitMs: -1, weight: 2 } }, state).prediction.loadWaitMs, -1);
  assert.equal(buildClarityConfig({ prediction: { weight: 2 } }, state).prediction.weight, 2);

  const pkg = path.join(tmp, "pkg");
  fs.mkdirSync(path.join(pkg, "lib"), { recursive: true });
  assert.equal(resolveLibrary({ libraryPath: "/cfg.so", env: { CLARITY_PLUGIN: "/env.so" }, pkgDir: pkg }).path, "/cfg.so");
  assert.equal(resolveLibrary({ env: { CLARITY_PLUGIN: "/env.so" }, pkgDir: pkg }).path, "/env.so");
  fs.writeFileSync(path.join(pkg, "lib", "libclarity.so"), "");
  assert.equal(resolveLibrary({ env: {}, pkgDir: pkg }).path, path.join(pkg, "lib", "libclarity.so"));
  assert.equal(resolveLibrary({ env: {}, pkgDir: path.join(ADAPTER) }).path !== undefined, true);

  assert.equal(hostHasBeforeAgentStart("2026.9.6"), false);
  assert.equal(hostHasBeforeAgentStart("2026.8.1"), false);
  assert.equal(hostHasBeforeAgentStart("2026.7.35"), true);
  assert.equal(hostHasBeforeAgentStart("2026.4.27"), true);
  assert.equal(hostHasBeforeAgentStart(undefined), false);
});

// ---- the plugin entry against a stand-in OpenClaw API ----------------------------

function fakeApi({ version = "2026.9.6", pluginConfig } = {}) {
  const api = {
    id: "clarity",
    pluginConfig: pluginConfig ?? { libraryPath: LIB, storage: { backend: "memory" } },
    runtime: { version, state: { resolveStateDir: () => path.join(tmp, "oc-state") } },
    logger: { lines: [], info(m) { this.lines.push(["info", m]); }, warn(m) { this.lines.push(["warn", m]); },
      error(m) { this.lines.push(["error", m]); }, debug() {} },
    hooks: {},
    commands: {},
    methods: {},
    lifecycles: [],
    on(name, handler) {
      (this.hooks[name] ??= []).push(handler);
    },
    registerCommand(def) {
      this.commands[def.name] = def;
    },
    registerGatewayMethod(name, handler, opts) {
      this.methods[name] = { handler, opts };
    },
    engines: {},
    registerContextEngine(id, factory) {
      this.engines[id] = factory;
    },
    lifecycle: {
      registerRuntimeLifecycle(l) {
        api.lifecycles.push(l);
      },
    },
  };
  return api;
}

function call(api, method, params) {
  let out;
  api.methods[method].handler({ params, respond: (ok, payload, error) => (out = { ok, payload, error }) });
  return out;
}

test("the plugin registers hooks, /clarity and clarity.* and drives the engine", async () => {
  const { default: plugin, RPC_METHODS } = await import("../index.js");
  const api = fakeApi();
  plugin.register(api);
  try {
    assert.deepEqual(Object.keys(api.hooks).sort(), [
      "agent_end", "before_compaction", "before_prompt_build", "gateway_stop", "session_end",
    ]);
    assert.deepEqual(Object.keys(api.methods).sort(), Object.keys(RPC_METHODS).sort());
    assert.equal(api.methods["clarity.getScores"].opts.scope, "operator.read");
    assert.equal(api.methods["clarity.anchor"].opts.scope, "operator.write");
    assert.equal(api.commands.clarity.acceptsArgs, true);

    const ctx = { sessionKey: "agent:main:main", sessionId: "uuid-1", runId: "r1", workspaceDir: "/w" };
    const r = api.hooks.before_prompt_build[0]({ prompt: "Work on ClaraCore now", messages: [] }, ctx);
    assert.match(r.prependContext, /\[CLARITY CONTEXT\][^]*claracore/);
    // a prompt rebuild within the same run gets the same block
    assert.deepEqual(api.hooks.before_prompt_build[0]({ prompt: "Work on ClaraCore now", messages: [] }, ctx), r);
    api.hooks.agent_end[0](
      { messages: [{ role: "user", content: "Work on ClaraCore now" }, { role: "assistant", content: [{ type: "text", text: "ClaraCore ok" }] }], success: true },
      ctx,
    );

    const reply = await api.commands.clarity.handler({ sessionKey: "agent:main:main", args: "anchor FocusEngine", commandBody: "/clarity anchor FocusEngine" });
    assert.equal(reply.text, "Anchored: focusengine\n");
    const help = await api.commands.clarity.handler({ sessionKey: "agent:main:main", args: "", commandBody: "/clarity" });
    assert.match(help.text, /Clarity/);

    const ok = call(api, "clarity.getScores", { session: "agent:main:main" });
    assert.equal(ok.ok, true);
    assert.equal(ok.payload.currentTurn, 1);
    assert.ok(ok.payload.items.find((i) => i.id === "focusengine" && i.anchored));
    assert.ok(ok.payload.items.find((i) => i.id === "claracore" && i.referenceCount === 1));
    const err = call(api, "clarity.getScores", { session: "nobody" });
    assert.equal(err.ok, false);
    assert.equal(err.payload, null);
    assert.equal(err.error.code, "INVALID_REQUEST");
    assert.match(err.error.message, /unknown session: nobody/);
    assert.equal(err.error.details.clarityCode, -32001);

    // a second registration (OpenClaw registers gateway methods and hooks
    // separately) sees the same engine and sessions
    const api2 = fakeApi();
    plugin.register(api2);
    assert.equal(call(api2, "clarity.getScores", { session: "agent:main:main" }).payload.currentTurn, 1);

    api.hooks.before_compaction[0]({ messageCount: 4, tokenCount: 100 }, ctx);
    assert.ok(api.logger.lines.some(([, m]) => /before_compaction agent:main:main: kept \d+, pruned \d+/.test(m)));
    api.hooks.session_end[0]({ sessionId: "uuid-1", sessionKey: "agent:main:main", messageCount: 2, reason: "idle" }, { sessionId: "uuid-1", sessionKey: "agent:main:main" });
    assert.ok(!api.logger.lines.some(([l]) => l === "error"), JSON.stringify(api.logger.lines));
  } finally {
    api.hooks.gateway_stop[0]({ reason: "test" });
  }
});

// An OpenClaw transcript: a prompt, then `n` reads of big files.
function bigHistory(n) {
  const msgs = [{ role: "user", content: "Fix ClaraCore's cache" }];
  for (let i = 0; i < n; i++) {
    msgs.push({ role: "assistant", content: [{ type: "toolCall", id: `c${i}`, name: "read", arguments: { path: `docs/f${i}.md` } }] });
    msgs.push({ role: "toolResult", toolCallId: `c${i}`, toolName: "read", content: [{ type: "text", text: `F${i} `.repeat(4000) }] });
    msgs.push({ role: "user", content: `next ${i}` });
  }
  return msgs;
}

test("the context engine: assemble stubs old outputs, commitTurn counts a turn once, compact passes the keep list", async () => {
  const { default: plugin, SYSTEM_PROMPT_ADDITION } = await import("../index.js");
  const api = fakeApi();
  plugin.register(api);
  try {
    const engine = api.engines.clarity();
    assert.equal(engine.info.id, "clarity");
    assert.equal(engine.info.ownsCompaction, false);
    assert.deepEqual(engine.info.transcriptSemantics, {
      currentTurnFence: "before-current-turn-entry-v1", turnAdvancementIdempotency: "atomic-idempotent-v1" });
    const session = "agent:main:ce";
    api.hooks.before_prompt_build[0]({ prompt: "Fix ClaraCore's cache", messages: [] }, { sessionKey: session, runId: "r1" });
    const history = bigHistory(6);
    const big = await engine.assemble({ sessionKey: session, messages: history, tokenBudget: 1000000 });
    assert.equal(big.messages, history, "a budget that fits changes nothing (the same array)");
    assert.equal(big.systemPromptAddition, SYSTEM_PROMPT_ADDITION);
    const small = await engine.assemble({ sessionKey: session, messages: history, tokenBudget: 12000 });
    assert.ok(small.estimatedTokens <= 12000, `over budget: ${small.estimatedTokens}`);
    const stubbed = small.messages.filter((m, i) => m !== history[i]);
    assert.ok(stubbed.length >= 1, "nothing stubbed");
    for (const m of stubbed) {
      assert.equal(m.role, "toolResult", "only tool outputs go under this budget");
      assert.match(m.content[0].text, /^\[clarity: [\d,]+ tokens of read output about docs\/f\d\.md elided/);
      assert.ok(m.toolCallId, "the stub keeps its tool call id");
    }
    assert.equal(small.messages.at(-1), history.at(-1), "the newest messages are untouched");
    assert.equal(history[2].content[0].text.startsWith("F0 "), true, "the host's messages are not modified");

    // commitTurn: once per advancement key; agent_end of that turn is not counted again
    const turn = [{ role: "user", content: "Fix ClaraCore's cache" }, { role: "assistant", content: [{ type: "text", text: "ClaraCore ok" }] }];
    assert.deepEqual(await engine.commitTurn({ sessionKey: session, advancementKey: "k1", messages: turn }), { status: "committed" });
    api.hooks.agent_end[0]({ messages: turn, success: true }, { sessionKey: session });
    assert.deepEqual(await engine.commitTurn({ sessionKey: session, advancementKey: "k1", messages: turn }), { status: "duplicate" });
    assert.equal(call(api, "clarity.getScores", { session }).payload.currentTurn, 1);
    // a turn the engine did not assemble (the legacy path) is counted by agent_end
    api.hooks.agent_end[0]({ messages: turn, success: true }, { sessionKey: session });
    assert.equal(call(api, "clarity.getScores", { session }).payload.currentTurn, 2);

    const ctx = call(api, "clarity.context", { session });
    assert.equal(ctx.ok, true, JSON.stringify(ctx));

    // compact: the runtime's compaction, with the keep list in its instructions
    const c = await engine.compact({ sessionKey: session, sessionId: "x", sessionFile: path.join(tmp, "none.jsonl"), tokenBudget: 1000 });
    assert.ok(api.logger.lines.some(([, m]) => /clarity: compact agent:main:ce: keep list of [1-9]\d* items/.test(m)), JSON.stringify(api.logger.lines));
    // outside OpenClaw the runtime's compaction cannot be imported: a clear
    // refusal, not a throw (the e2e test runs the real one)
    assert.deepEqual(c, { ok: false, compacted: false, reason: "clarity: openclaw/plugin-sdk/core unavailable" });
  } finally {
    api.hooks.gateway_stop[0]({ reason: "test" });
  }
});

test("context messages: stable ids while the transcript grows, stubs keep the message's shape", () => {
  const h = bigHistory(2);
  const a = toContextMessages(h);
  const b = toContextMessages([...h, { role: "user", content: "more" }]);
  assert.deepEqual(b.slice(0, a.length).map((m) => m.id), a.map((m) => m.id));
  assert.equal(a[1].role, "assistant");
  assert.equal(a[1].toolName, "read");
  assert.deepEqual(a[1].toolArgs, { path: "docs/f0.md" });
  assert.equal(a[2].role, "tool");
  assert.equal(a[2].toolCallId, "c0");
  const edited = toContextMessages([h[0], h[1], { ...h[2], content: [{ type: "text", text: "other" }] }]);
  assert.notEqual(edited[2].id, a[2].id, "new content under the same place gets a new id");

  const out = applyActions(h, [{ index: 1, action: "stub", text: "[clarity: call]" }, { index: 2, action: "stub", text: "[clarity: out]" },
    { index: 99, action: "stub", text: "x" }, { index: 3, action: "drop" }]);
  assert.equal(out.length, h.length);
  assert.deepEqual(out[1].content[0], { type: "text", text: "[clarity: call]" });
  assert.equal(out[1].content[1].id, "c0", "the tool call stays (its result refers to it)");
  assert.deepEqual(out[2], { ...h[2], content: [{ type: "text", text: "[clarity: out]" }] });
  assert.equal(out[3], h[3]);
});

test("hosts before 2026.8.1: before_agent_start too, and the block is prepended once", async () => {
  const { default: plugin } = await import("../index.js");
  const api = fakeApi({ version: "2026.7.35" });
  plugin.register(api);
  try {
    assert.ok(api.hooks.before_agent_start, "before_agent_start registered");
    const ctx = { sessionKey: "old", runId: "r9" };
    const ev = { prompt: "Talk about ClaraCore", messages: [] };
    const a = api.hooks.before_agent_start[0](ev, ctx);
    const b = api.hooks.before_prompt_build[0](ev, ctx);
    assert.match(a.prependContext, /claracore/);
    assert.equal(b, undefined, "the other hook of the same run adds nothing");
    assert.deepEqual(api.hooks.before_agent_start[0](ev, ctx), a, "a rebuild by the same hook gets the block again");
  } finally {
    api.hooks.gateway_stop[0]({});
  }
});

test("a missing library is reported, not thrown into OpenClaw", async () => {
  const { default: plugin } = await import("../index.js");
  const api = fakeApi({ pluginConfig: { libraryPath: path.join(tmp, "missing.so") } });
  plugin.register(api);
  assert.equal(api.hooks.before_prompt_build[0]({ prompt: "x" }, { sessionKey: "k" }), undefined);
  const r = await api.commands.clarity.handler({ sessionKey: "k", args: "" });
  assert.match(r.text, /cannot load .*missing\.so/);
  const e = call(api, "clarity.stats", { session: "k" });
  assert.equal(e.ok, false);
  assert.equal(e.error.code, "UNAVAILABLE");
  assert.ok(api.logger.lines.some(([l, m]) => l === "error" && /missing\.so/.test(m)));
});
