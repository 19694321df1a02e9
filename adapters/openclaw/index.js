// clarity for OpenClaw: loads libclarity.so with koffi and maps OpenClaw's
// plugin hooks, the /clarity command and clarity.* gateway methods onto the
// clarity ABI (include/clarity.h).
//
//   before_prompt_build (before_agent_start on hosts < 2026.8.1)
//                         -> CLARITY_EV_BEFORE_AGENT_START, returns prependContext
//   agent_end           -> CLARITY_EV_AGENT_END (the turn's messages, tool calls included)
//   before_compaction   -> CLARITY_EV_BEFORE_COMPACTION (prune report to the log)
//   session_end         -> CLARITY_EV_SESSION_END
//   /clarity <args>     -> plugin->command("/clarity <args>")
//   clarity.<method>    -> plugin->rpc
// and, on OpenClaw >= 2026.9 with plugins.slots.contextEngine = "clarity",
// a context engine:
//   assemble            -> CLARITY_EV_ASSEMBLE (stale tool output stubbed)
//   commitTurn          -> CLARITY_EV_AGENT_END with the advancement key
//                          (counted once, also across restarts)
//   compact             -> the runtime's summarizer, with clarity's keep list
//
// The clarity session is OpenClaw's session key (for example agent:main:main).

import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { openClarity } from "./src/ffi.js";
import { acquireEngine, currentEngine, engineTurns, newGeneration, releaseEngine, shutdownEngine } from "./src/shared.js";
import {
  applyActions,
  buildClarityConfig,
  currentTurn,
  toContextMessages,
  hostHasBeforeAgentStart,
  openclawStateDir,
  resolveLibrary,
  sessionOf,
  toClarityMessages,
} from "./src/map.js";

const PKG_DIR = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

// clarity.* methods and the operator scope each needs.
export const RPC_METHODS = Object.freeze({
  "clarity.getScores": "operator.read",
  "clarity.getState": "operator.read",
  "clarity.stats": "operator.read",
  "clarity.config": "operator.read",
  "clarity.exportState": "operator.read",
  "clarity.anchor": "operator.write",
  "clarity.unanchor": "operator.write",
  "clarity.setTier": "operator.write",
  "clarity.prune": "operator.write",
  "clarity.importState": "operator.write",
  "clarity.context": "operator.read",
  "clarity.keepList": "operator.read",
  "clarity.compacted": "operator.write",
  "clarity.trimOutput": "operator.read",
});

// Static guidance for the system prompt (static: it is part of the cached
// prefix).  The per-turn block stays in before_prompt_build.
export const SYSTEM_PROMPT_ADDITION =
  "Context note (clarity): some older tool outputs in this conversation may be replaced by a " +
  "short \"[clarity: ...]\" line that says what was elided and why. If you need one again, run " +
  "the tool again or ask; \"/clarity anchor <item>\" keeps an item's messages verbatim.";

function loadKoffi() {
  try {
    return require("koffi");
  } catch (e) {
    throw new Error(`clarity: cannot load koffi (${e.message}); run \`npm install --omit=dev\` in ${PKG_DIR}`);
  }
}

function firstLine(s) {
  const t = String(s ?? "").trim();
  const i = t.indexOf("\n");
  return i < 0 ? t : t.slice(0, i);
}

function gatewayError(rc, err) {
  // clarity's JSON-RPC codes -> OpenClaw error shape; the original code is kept in details.
  const code = err?.code;
  const unavailable = code === -32003 || code === -32603 || code == null;
  return {
    code: unavailable ? "UNAVAILABLE" : "INVALID_REQUEST",
    message: String(err?.message ?? `clarity error ${rc}`),
    details: { clarityCode: code ?? null, rc },
  };
}

const plugin = {
  id: "clarity",
  name: "Clarity",
  description:
    "Relevance engine: tracks what a session talks about and uses, prepends a [CLARITY CONTEXT] block, prunes at compaction.",

  register(api) {
    const logger = api.logger ?? console;
    const pluginConfig = api.pluginConfig ?? {};
    const gen = newGeneration();
    let openError = null; // why the engine could not be opened
    let openErrorAt = 0; // retried after OPEN_RETRY_MS, not on every turn
    const OPEN_RETRY_MS = 30000;

    const lib = resolveLibrary({ libraryPath: pluginConfig.libraryPath, pkgDir: PKG_DIR });
    if (!lib.path)
      logger.error(
        `clarity: libclarity.so not found; set plugins.entries.clarity.config.libraryPath or CLARITY_PLUGIN (looked in ${lib.tried.join(", ")})`,
      );

    const clarityLog = (level, msg) => {
      const f = logger[level] ?? logger.info;
      f?.call(logger, msg);
    };

    // The process-wide engine (src/shared.js), opened on first use.
    function clarity() {
      if (openError && Date.now() - openErrorAt < OPEN_RETRY_MS) throw openError;
      openError = null;
      try {
        if (!lib.path) throw new Error(`clarity: libclarity.so not found (looked in ${lib.tried.join(", ")})`);
        const config = buildClarityConfig(pluginConfig, openclawStateDir(api));
        const key = `${lib.path}\u0000${JSON.stringify(config)}`;
        return acquireEngine(
          gen,
          key,
          () => {
            const koffi = loadKoffi();
            const e = openClarity({ koffi, libraryPath: lib.path, config, log: clarityLog });
            logger.info(
              `clarity: ${e.name} ${e.version} loaded from ${lib.path}; state ${config.storage?.path ?? config.storage?.backend ?? "default"}`,
            );
            return e;
          },
          () => logger.info("clarity: config changed; flushing and reopening"),
        );
      } catch (e) {
        openError = e instanceof Error ? e : new Error(String(e));
        openErrorAt = Date.now();
        logger.error(openError.message);
        throw openError;
      }
    }

    // Runs fn against the engine; a hook never throws into OpenClaw.
    function guarded(what, fn) {
      try {
        return fn(clarity());
      } catch (e) {
        if (e !== openError) logger.error(`clarity: ${what}: ${e?.message ?? e}`);
        return undefined;
      }
    }

    // --- prompt context -----------------------------------------------------
    // Hosts before 2026.8.1 dispatch both before_agent_start and
    // before_prompt_build for one run and merge their results: the block is
    // computed once per (session, run, prompt) and handed to the first hook;
    // the same hook asking again (a prompt rebuild) gets it again, the other
    // hook gets nothing.
    const served = new Map(); // key -> {hook, text, at}
    const SERVED_MAX = 256;
    const NO_RUN_WINDOW_MS = 5000;

    function contextFor(hook, event, ctx) {
      const session = sessionOf(ctx, event);
      if (!session) return undefined;
      const prompt =
        typeof event?.currentUserMessage === "string" && event.currentUserMessage
          ? event.currentUserMessage
          : typeof event?.prompt === "string"
            ? event.prompt
            : "";
      const key = `${session}\u0000${ctx?.runId ?? ""}\u0000${prompt}`;
      const now = Date.now();
      const prev = served.get(key);
      if (prev && (ctx?.runId || now - prev.at < NO_RUN_WINDOW_MS)) {
        if (prev.hook !== hook) return undefined;
        return prev.text ? { prependContext: prev.text } : undefined;
      }
      const text = guarded(hook, (c) =>
        c.beforeAgentStart({ session, workspace: ctx?.workspaceDir ?? null, prompt }),
      );
      if (text === undefined) return undefined;
      served.set(key, { hook, text, at: now });
      while (served.size > SERVED_MAX) served.delete(served.keys().next().value);
      return text ? { prependContext: text } : undefined;
    }

    api.on("before_prompt_build", (event, ctx) => contextFor("before_prompt_build", event, ctx));

    const hostVersion = api.runtime?.version;
    if (hostHasBeforeAgentStart(hostVersion))
      api.on("before_agent_start", (event, ctx) => contextFor("before_agent_start", event, ctx));

    // --- turn end, compaction, session end ----------------------------------
    // Sessions whose current turn runs through the context engine: its
    // commitTurn counts the turn (once per advancement key), not agent_end.
    // The mark is taken by assemble and dropped by agent_end, whichever of
    // agent_end and commitTurn comes first (src/shared.js: process-wide).
    const engineTurn = engineTurns();

    api.on("agent_end", (event, ctx) => {
      const session = sessionOf(ctx, event);
      if (!session) return;
      if (engineTurn.delete(session)) return; // commitTurn counts it
      const messages = toClarityMessages(currentTurn(event?.messages));
      guarded("agent_end", (c) => c.agentEnd({ session, messages, success: event?.success !== false }));
    });

    api.on("before_compaction", (event, ctx) => {
      const session = sessionOf(ctx, event);
      if (!session) return;
      const report = guarded("before_compaction", (c) =>
        c.beforeCompaction({ session, messageCount: event?.messageCount, tokenCount: event?.tokenCount }),
      );
      if (report !== undefined) {
        const pruned = /^Pruning: (\d+)/m.exec(report)?.[1] ?? "?";
        const kept = /^Keeping: (\d+)/m.exec(report)?.[1] ?? "?";
        logger.info(`clarity: before_compaction ${session}: kept ${kept}, pruned ${pruned}`);
        logger.debug?.(report);
      }
    });

    api.on("session_end", (event, ctx) => {
      const session = sessionOf(ctx, event);
      if (!session || !currentEngine()) return; // nothing loaded, nothing to flush
      guarded("session_end", (c) => c.sessionEnd({ session, reason: event?.reason ?? null }));
    });

    const report = (what, f) => {
      try {
        if (f()) logger.info(`clarity: unloaded (${what})`);
      } catch (e) {
        logger.error(`clarity: unload: ${e?.message ?? e}`);
      }
    };
    api.on("gateway_stop", () => report("gateway stop", shutdownEngine));
    const lifecycle = api.lifecycle?.registerRuntimeLifecycle ?? api.registerRuntimeLifecycle;
    lifecycle?.call(api.lifecycle ?? api, {
      id: "clarity-engine",
      description: "flushes and closes libclarity.so",
      dispose: () => report("dispose", () => releaseEngine(gen)),
      cleanup: ({ reason }) => {
        if (reason === "disable" || reason === "restart") report(reason, () => releaseEngine(gen));
      },
    });

    // --- the context engine ----------------------------------------------------
    const engineSession = (p) => p?.sessionKey || p?.sessionId || null;
    if (typeof api.registerContextEngine === "function")
      api.registerContextEngine("clarity", () => ({
        info: {
          id: "clarity",
          name: "Clarity",
          version: "0.2.0",
          ownsCompaction: false,
          acceptedHostParams: ["sessionKey", "runtimeContext"],
          transcriptSemantics: {
            currentTurnFence: "before-current-turn-entry-v1",
            turnAdvancementIdempotency: "atomic-idempotent-v1",
          },
        },
        async ingest() {
          return { ingested: true }; // clarity learns from committed turns
        },
        async assemble(params) {
          const messages = Array.isArray(params?.messages) ? params.messages : [];
          const session = engineSession(params);
          if (!session) return { messages, estimatedTokens: 0 };
          const ctxMessages = toContextMessages(messages);
          const r = guarded("assemble", (c) =>
            c.assemble({ session, messages: ctxMessages, tokenBudget: params?.tokenBudget ?? 0 }),
          );
          engineTurn.add(session);
          if (!r) return { messages, estimatedTokens: 0, systemPromptAddition: SYSTEM_PROMPT_ADDITION };
          if (r.changed)
            logger.info(`clarity: assemble ${session}: ${r.tokensBefore} -> ${r.tokensAfter} tokens (budget ${r.budget}), ${r.actions.length} stubbed`);
          return {
            messages: applyActions(messages, r.actions),
            estimatedTokens: r.tokensAfter,
            systemPromptAddition: SYSTEM_PROMPT_ADDITION,
          };
        },
        async commitTurn(params) {
          const session = engineSession(params);
          const key = params?.advancementKey;
          if (!session || !key) return { status: "committed" };
          const messages = toClarityMessages(currentTurn(params?.messages));
          const dup = guarded("commitTurn", (c) => c.agentEnd({ session, messages, success: true, turnKey: key }));
          return { status: dup === "duplicate" ? "duplicate" : "committed" };
        },
        async compact(params) {
          const session = engineSession(params);
          // the keep list (anchored items first, then by score) for the summarizer
          const kl = session ? guarded("compact", (c) => c.rpc("clarity.keepList", { session }))?.result : null;
          const keep = kl?.text ?? "";
          const customInstructions = [params?.customInstructions, keep].filter((s) => s).join("\n\n");
          logger.info(`clarity: compact ${session}: keep list of ${kl?.items?.length ?? 0} items`);
          let sdk;
          try {
            sdk = await import("openclaw/plugin-sdk/core");
          } catch (e) {
            logger.error(`clarity: compact: the runtime's compaction is unavailable (${e.message})`);
            return { ok: false, compacted: false, reason: "clarity: openclaw/plugin-sdk/core unavailable" };
          }
          const result = await sdk.delegateCompactionToRuntime({ ...params, customInstructions });
          // the kept items the summary lost come back in the next prompt's block
          const summary = result?.result?.summary;
          if (session && typeof summary === "string" && summary) {
            const r = guarded("compacted", (c) => c.rpc("clarity.compacted", { session, summary }));
            const lost = r?.result?.lost ?? [];
            if (lost.length) logger.info(`clarity: compact ${session}: the summary lost ${lost.join(", ")}; the next block re-injects them`);
          }
          return result;
        },
      }));

    // --- /clarity -------------------------------------------------------------
    api.registerCommand({
      name: "clarity",
      description: "Clarity relevance scores: /clarity [scores|anchor|unanchor|tier|prune|stats|config|help]",
      acceptsArgs: true,
      requireAuth: true,
      handler: (ctx) => {
        const session = sessionOf(ctx);
        if (!session) return { text: "clarity: this command needs a session" };
        const args = typeof ctx.args === "string" ? ctx.args.trim() : "";
        const line = args ? `/clarity ${args}` : "/clarity";
        let c;
        try {
          c = clarity();
        } catch (e) {
          return { text: e.message };
        }
        try {
          const r = c.command(session, line);
          if (r.error) return { text: `clarity: ${firstLine(r.text) || r.error}` };
          return { text: r.text || "clarity: no output" };
        } catch (e) {
          return { text: `clarity: ${e.message}` };
        }
      },
    });

    // --- clarity.* gateway methods --------------------------------------------
    for (const [method, scope] of Object.entries(RPC_METHODS)) {
      api.registerGatewayMethod(
        method,
        ({ params, respond }) => {
          let c;
          try {
            c = clarity();
          } catch (e) {
            respond(false, null, { code: "UNAVAILABLE", message: e.message });
            return;
          }
          let r;
          try {
            r = c.rpc(method, params ?? {});
          } catch (e) {
            respond(false, null, { code: "UNAVAILABLE", message: `clarity: ${e.message}` });
            return;
          }
          if (r.error) respond(false, null, gatewayError(r.rc, r.error));
          else respond(true, r.result);
        },
        { scope },
      );
    }
  },
};

export default plugin;
