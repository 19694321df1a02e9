// shared.js: one clarity engine per process.
//
// OpenClaw may register a plugin more than once in one process (the gateway
// method handlers and the agent hooks can come from different registrations,
// and a config change registers the plugin again).  clarity keeps sessions
// in memory, so every registration must talk to the same engine: otherwise an
// anchor set through clarity.anchor would be invisible to the hooks and two
// engines would overwrite each other's rows in the same database.
//
// The slot holds the engine opened for the newest registration's config.  An
// older registration uses whatever engine is there; a newer one with a
// different config flushes and replaces it.

const SLOT = Symbol.for("clarity.openclaw.engine.v1");

function state() {
  let s = globalThis[SLOT];
  if (!s) {
    s = { engine: null, key: null, gen: 0, owner: 0, users: new Set(), exitHook: false };
    globalThis[SLOT] = s;
  }
  return s;
}

// A new registration generation (call once per register()).
export function newGeneration() {
  return ++state().gen;
}

// The shared engine for registration `gen` whose config key is `key`;
// open() creates one when needed.
export function acquireEngine(gen, key, open, onReplace) {
  const s = state();
  if (s.engine?.alive && (s.key === key || s.owner > gen)) {
    s.users.add(gen);
    return s.engine;
  }
  if (s.engine?.alive) {
    onReplace?.(s.engine);
    try {
      s.engine.unload();
    } catch {
      /* reported by the caller's logger through onReplace */
    }
  }
  s.engine = null;
  const engine = open();
  s.engine = engine;
  s.key = key;
  s.owner = gen;
  s.users = new Set([gen]);
  if (!s.exitHook) {
    s.exitHook = true;
    // Every agent_end is already durable; this flushes what commands changed.
    process.once("exit", () => {
      try {
        state().engine?.unload();
      } catch {
        /* exiting */
      }
    });
  }
  return engine;
}

// Registration `gen` is done with the engine; the last one out unloads it.
// Returns true when it was unloaded.
export function releaseEngine(gen) {
  const s = state();
  s.users.delete(gen);
  if (s.users.size > 0 || !s.engine?.alive) return false;
  s.engine.unload();
  s.engine = null;
  s.key = null;
  return true;
}

// Unloads the engine whoever uses it (gateway stop).
export function shutdownEngine() {
  const s = state();
  const e = s.engine;
  s.engine = null;
  s.key = null;
  s.users.clear();
  if (e?.alive) {
    e.unload();
    return true;
  }
  return false;
}

export function currentEngine() {
  const e = state().engine;
  return e?.alive ? e : null;
}

// Sessions whose current turn runs through the context engine (marked by
// assemble, cleared by agent_end).  Process-wide for the same reason as the
// engine: assemble and agent_end may reach different registrations.
const TURNS = Symbol.for("clarity.openclaw.engineTurns.v1");
export function engineTurns() {
  globalThis[TURNS] ??= new Set();
  return globalThis[TURNS];
}
