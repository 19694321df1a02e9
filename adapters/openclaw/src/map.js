// map.js: OpenClaw shapes -> clarity shapes.  Pure functions, no koffi.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";

// Keys of the plugin config that belong to this adapter, not to clarity.
export const ADAPTER_KEYS = ["libraryPath"];

// The text of an OpenClaw/pi message content: a string or an array of blocks.
export function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const parts = [];
  for (const b of content) {
    if (typeof b === "string") parts.push(b);
    else if (b && typeof b === "object" && b.type === "text" && typeof b.text === "string") parts.push(b.text);
  }
  return parts.join("\n");
}

function isRealUserMessage(m) {
  return m && typeof m === "object" && m.role === "user" && !m.runtimeContextCarrier;
}

// The messages of the turn that just ended: from the last user message on.
// OpenClaw's agent_end carries the whole session transcript; clarity counts
// references per turn, so older turns must not be replayed every time.
export function currentTurn(messages) {
  if (!Array.isArray(messages)) return [];
  for (let i = messages.length - 1; i >= 0; i--) if (isRealUserMessage(messages[i])) return messages.slice(i);
  return messages.slice();
}

function toolArgs(v) {
  if (v == null) return null;
  if (typeof v === "string") {
    // OpenAI-style arguments are a JSON string already; clarity wants an object.
    try {
      const o = JSON.parse(v);
      return o && typeof o === "object" && !Array.isArray(o) ? o : { value: o };
    } catch {
      return { value: v };
    }
  }
  if (typeof v === "object" && !Array.isArray(v)) return v;
  return { value: v };
}

// OpenClaw messages -> clarity_message objects ({role, text, toolName, toolArgs}).
//   user        -> user, text
//   assistant   -> assistant with its text blocks joined, then one assistant
//                  message per tool call (tool_name + tool_args_json)
//   toolResult  -> tool, text of the result, tool_name
export function toClarityMessages(messages) {
  const out = [];
  if (!Array.isArray(messages)) return out;
  for (const m of messages) {
    if (!m || typeof m !== "object") continue;
    const role = m.role;
    if (role === "user" || role === "system") {
      const text = contentText(m.content);
      if (text) out.push({ role, text });
    } else if (role === "assistant") {
      const text = contentText(m.content);
      if (text) out.push({ role: "assistant", text });
      if (Array.isArray(m.content)) {
        for (const b of m.content) {
          if (!b || typeof b !== "object") continue;
          if (b.type === "toolCall" || b.type === "tool_use" || b.type === "tool_call")
            out.push({ role: "assistant", text: "", toolName: String(b.name ?? ""), toolArgs: toolArgs(b.arguments ?? b.input ?? b.args) });
        }
      }
      if (Array.isArray(m.tool_calls)) {
        for (const c of m.tool_calls) {
          const f = c?.function ?? c;
          if (f?.name) out.push({ role: "assistant", text: "", toolName: String(f.name), toolArgs: toolArgs(f.arguments) });
        }
      }
    } else if (role === "toolResult" || role === "tool") {
      out.push({ role: "tool", text: contentText(m.content), toolName: m.toolName ?? m.name ?? null });
    }
  }
  return out;
}

// The clarity session for a hook or command context: OpenClaw's stable
// session key ("agent:main:main"), else the ephemeral session id.
export function sessionOf(ctx, event) {
  const pick = (...vs) => vs.find((v) => typeof v === "string" && v.length > 0);
  return pick(ctx?.sessionKey, event?.sessionKey, ctx?.sessionId, event?.sessionId) ?? null;
}

// The OpenClaw state dir: the host's resolver, else $OPENCLAW_STATE_DIR,
// else ~/.openclaw.
export function openclawStateDir(api, env = process.env) {
  try {
    const d = api?.runtime?.state?.resolveStateDir?.();
    if (typeof d === "string" && d) return d;
  } catch {
    /* fall through */
  }
  if (env.OPENCLAW_STATE_DIR) return env.OPENCLAW_STATE_DIR;
  return path.join(env.HOME || os.homedir(), ".openclaw");
}

function expandHome(p, env) {
  if (p === "~") return env.HOME || os.homedir();
  if (p.startsWith("~/")) return path.join(env.HOME || os.homedir(), p.slice(2));
  return p;
}

// How long a prompt waits for a workspace's code graph to load unless the
// config says (prediction.loadWaitMs): the gateway lives long, so a larger
// graph loads behind the first prompt and serves the next ones (clarity's
// own default, -1, waits for it: right for a process per hook).
export const GRAPH_WAIT_MS = 1000;

// The plugin config (plugins.entries.clarity.config) -> clarity's config.
// Adapter keys are removed; storage.path defaults to
// <state dir>/clarity/clarity.db, and a relative path is taken relative to
// <state dir>/clarity.  The directory is created.
export function buildClarityConfig(pluginConfig, stateDir, env = process.env) {
  const cfg = pluginConfig && typeof pluginConfig === "object" ? structuredClone(pluginConfig) : {};
  for (const k of ADAPTER_KEYS) delete cfg[k];
  if (cfg.prediction === undefined) cfg.prediction = {};
  if (cfg.prediction && typeof cfg.prediction === "object" && cfg.prediction.loadWaitMs === undefined)
    cfg.prediction.loadWaitMs = GRAPH_WAIT_MS;
  const backend = cfg.storage?.backend ?? "auto";
  if (backend === "auto" || backend === "sqlite") {
    const base = path.join(stateDir, "clarity");
    let p = cfg.storage?.path;
    if (typeof p !== "string" || p === "") p = path.join(base, "clarity.db");
    p = expandHome(p, env);
    if (!path.isAbsolute(p)) p = path.join(base, p);
    fs.mkdirSync(path.dirname(p), { recursive: true, mode: 0o700 });
    cfg.storage = { ...(cfg.storage ?? {}), path: p };
  }
  return cfg;
}

// Where libclarity.so is: plugin config libraryPath, else $CLARITY_PLUGIN
// (both explicit: used as given), else the package's lib/, the repository's
// build/, then the usual install prefixes.
export function resolveLibrary({ libraryPath, env = process.env, pkgDir }) {
  if (typeof libraryPath === "string" && libraryPath)
    return { path: path.resolve(expandHome(libraryPath, env)), tried: [], source: "config libraryPath" };
  if (env.CLARITY_PLUGIN) return { path: path.resolve(env.CLARITY_PLUGIN), tried: [], source: "$CLARITY_PLUGIN" };
  const candidates = [
    path.join(pkgDir, "lib", "libclarity.so"),
    path.resolve(pkgDir, "..", "..", "build", "libclarity.so"),
    "/usr/local/lib/libclarity.so",
    "/usr/lib/libclarity.so",
  ];
  for (const c of candidates) if (fs.existsSync(c)) return { path: c, tried: candidates, source: "search" };
  return { path: null, tried: candidates, source: "search" };
}

// "2026.7.35" -> [2026, 7, 35]; null when it does not parse.
export function parseHostVersion(v) {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(String(v ?? ""));
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

// OpenClaw removed the legacy before_agent_start plugin hook in 2026.8.1;
// earlier releases still dispatch it (2026.4.x runs it once per turn and
// merges its result into prompt building).
export function hostHasBeforeAgentStart(version) {
  const v = parseHostVersion(version);
  if (!v) return false;
  const cut = [2026, 8, 1];
  for (let i = 0; i < 3; i++) if (v[i] !== cut[i]) return v[i] < cut[i];
  return false;
}

// ---- the context engine (CLARITY_EV_ASSEMBLE) ------------------------------

// A short stable hash of a string (FNV-1a over UTF-16 units), base 36.
function hash36(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(36);
}

function toolCallsOf(m) {
  const calls = [];
  if (Array.isArray(m?.content))
    for (const b of m.content)
      if (b && typeof b === "object" && (b.type === "toolCall" || b.type === "tool_use" || b.type === "tool_call"))
        calls.push({ id: b.id ?? null, name: String(b.name ?? ""), args: toolArgs(b.arguments ?? b.input ?? b.args) });
  if (Array.isArray(m?.tool_calls))
    for (const c of m.tool_calls) {
      const f = c?.function ?? c;
      if (f?.name) calls.push({ id: c.id ?? null, name: String(f.name), args: toolArgs(f.arguments) });
    }
  return calls;
}

// OpenClaw's messages -> clarity_ctx_message objects, one per message (so
// the actions map back by index).  The id is the message's place and a hash
// of its content: stable while the transcript only grows, new when the host
// rewrites history (a compaction).
export function toContextMessages(messages) {
  const out = [];
  if (!Array.isArray(messages)) return out;
  messages.forEach((m, i) => {
    const role0 = m?.role;
    const role = role0 === "toolResult" || role0 === "tool" ? "tool" : role0 === "assistant" ? "assistant" : role0 === "system" ? "system" : "user";
    const text = contentText(m?.content);
    const calls = role === "assistant" ? toolCallsOf(m) : [];
    const args = calls.length === 1 ? calls[0].args : calls.length ? { calls: calls.map((c) => ({ name: c.name, args: c.args })) } : null;
    const callId = role === "tool" ? (m?.toolCallId ?? m?.tool_call_id ?? null) : calls[0]?.id ?? null;
    const toolName = role === "tool" ? (m?.toolName ?? m?.name ?? null) : calls[0]?.name ?? null;
    const sig = `${role}\u0000${text}\u0000${args ? JSON.stringify(args) : ""}\u0000${callId ?? ""}`;
    out.push({ id: `${i}:${hash36(sig)}`, role, text, toolName, toolArgs: args, toolCallId: callId, tokens: -1 });
  });
  return out;
}

// The messages with clarity's actions applied: a stubbed message keeps its
// role, tool call id and tool name, its content becomes the stub (a tool
// call keeps its calls, their arguments elided).  Messages without an action
// are returned as they are (the same objects).
export function applyActions(messages, actions) {
  if (!Array.isArray(actions) || actions.length === 0) return messages;
  const out = messages.slice();
  for (const a of actions) {
    const i = a?.index;
    if (!Number.isInteger(i) || i < 0 || i >= out.length || a.action !== "stub") continue;
    const m = out[i];
    const stub = String(a.text ?? "");
    if (m.role === "assistant" && Array.isArray(m.content)) {
      const content = [{ type: "text", text: stub }];
      for (const b of m.content)
        if (b && typeof b === "object" && (b.type === "toolCall" || b.type === "tool_use" || b.type === "tool_call"))
          content.push({ ...b, arguments: { elided: "clarity" } });
      out[i] = { ...m, content };
    } else if (typeof m.content === "string") {
      out[i] = { ...m, content: stub };
    } else {
      out[i] = { ...m, content: [{ type: "text", text: stub }] };
    }
  }
  return out;
}
