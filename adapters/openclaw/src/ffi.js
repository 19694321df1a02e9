// ffi.js: libclarity.so through koffi, modelled member by member on
// include/clarity.h.  Every struct starts with struct_size, which is set to
// koffi's sizeof of the JS definition (the size "as the host compiled it");
// on 64-bit Linux those sizes are checked against the C layout below, and
// test/abi.test.mjs checks every offset against the C compiler.
//
// All calls are synchronous on the calling (JS) thread: the plugin's work per
// call is microseconds, and host->log is then always invoked on the JS thread.
// Every clarity_result is handed back to plugin->release().

export const CLARITY_ABI_VERSION = 1;

export const RC = Object.freeze({
  OK: 0,
  ERR: -1,
  EINVAL: -2,
  ENOMEM: -3,
  ENOTFOUND: -4,
  DECLINED: -5,
  EVERSION: -6,
  ESTORE: -7,
  ECONFIG: -8,
});

export const EVENT = Object.freeze({
  BEFORE_AGENT_START: 1,
  AGENT_END: 2,
  BEFORE_COMPACTION: 3,
  SESSION_END: 4,
  ASSEMBLE: 5,
});

export const ASSEMBLE_MAY_DROP = 1;

export const LOG_LEVELS = ["debug", "info", "warn", "error"];

// sizeof / offsetof on LP64 (x86-64, aarch64 Linux), as the C compiler lays
// the structs out.  Checked at load time when pointers are 8 bytes.
export const LP64_LAYOUT = Object.freeze({
  clarity_host: {
    size: 104,
    offsets: { struct_size: 0, abi_version: 4, ud: 8, log: 16, now_ms: 24, kv_get: 32, kv_put: 40,
      kv_del: 48, kv_free: 56, kv_iter: 64, kv_begin: 72, kv_commit: 80, kv_rollback: 88, flags: 96 },
  },
  clarity_message: {
    size: 48,
    offsets: { struct_size: 0, role: 8, text: 16, text_len: 24, tool_name: 32, tool_args_json: 40 },
  },
  clarity_before_agent_start: {
    size: 56,
    offsets: { struct_size: 0, session_id: 8, workspace_dir: 16, prompt: 24, prompt_len: 32,
      messages: 40, n_messages: 48 },
  },
  clarity_agent_end: {
    size: 56,
    offsets: { struct_size: 0, session_id: 8, messages: 16, n_messages: 24, success: 32, turn_key: 40,
      workspace_dir: 48 },
  },
  clarity_ctx_message: {
    size: 72,
    offsets: { struct_size: 0, id: 8, role: 16, text: 24, text_len: 32, tool_name: 40,
      tool_args_json: 48, tool_call_id: 56, tokens: 64 },
  },
  clarity_assemble: {
    size: 56,
    offsets: { struct_size: 0, session_id: 8, messages: 16, n_messages: 24, token_budget: 32,
      current_turn_start: 40, flags: 48 },
  },
  clarity_before_compaction: {
    size: 32,
    offsets: { struct_size: 0, session_id: 8, message_count: 16, token_count: 24 },
  },
  clarity_session_end: {
    size: 24,
    offsets: { struct_size: 0, session_id: 8, reason: 16 },
  },
  clarity_event: {
    size: 24,
    offsets: { struct_size: 0, id: 4, version: 8, data: 16 },
  },
  clarity_result: {
    size: 32,
    offsets: { struct_size: 0, data: 8, len: 16, error: 24 },
  },
  clarity_plugin: {
    size: 80,
    offsets: { struct_size: 0, abi_version: 4, name: 8, version: 16, self: 24, on_event: 32,
      command: 40, rpc: 48, release: 56, strerror: 64, unload: 72 },
  },
});

const typeCache = new WeakMap();

// The koffi type definitions.  Type names are prefixed so that two copies of
// this module (say, after a plugin reload) can share one koffi instance.
export function defineTypes(koffi) {
  const cached = typeCache.get(koffi);
  if (cached) return cached;
  const P = "clarity_oc_v1_";
  const fnptr = "void *"; // function pointers are decoded with koffi.decode(ptr, proto)

  const log_fn = koffi.proto(`void ${P}log_fn(void *ud, int level, const char *msg)`);

  const clarity_host = koffi.struct(`${P}host`, {
    struct_size: "uint32_t",
    abi_version: "uint32_t",
    ud: "void *",
    log: koffi.pointer(log_fn),
    now_ms: fnptr,
    kv_get: fnptr,
    kv_put: fnptr,
    kv_del: fnptr,
    kv_free: fnptr,
    kv_iter: fnptr,
    kv_begin: fnptr,
    kv_commit: fnptr,
    kv_rollback: fnptr,
    flags: "uint32_t",
  });

  // text is pointer + length (it may hold NUL bytes): the adapter passes a
  // Buffer there, and text_len is its byte length.
  const clarity_message = koffi.struct(`${P}message`, {
    struct_size: "uint32_t",
    role: "const char *",
    text: "const char *",
    text_len: "size_t",
    tool_name: "const char *",
    tool_args_json: "const char *",
  });

  const clarity_before_agent_start = koffi.struct(`${P}before_agent_start`, {
    struct_size: "uint32_t",
    session_id: "const char *",
    workspace_dir: "const char *",
    prompt: "const char *",
    prompt_len: "size_t",
    messages: koffi.pointer(clarity_message),
    n_messages: "size_t",
  });

  const clarity_agent_end = koffi.struct(`${P}agent_end`, {
    struct_size: "uint32_t",
    session_id: "const char *",
    messages: koffi.pointer(clarity_message),
    n_messages: "size_t",
    success: "int",
    turn_key: "const char *",
    workspace_dir: "const char *",
  });

  const clarity_ctx_message = koffi.struct(`${P}ctx_message`, {
    struct_size: "uint32_t",
    id: "const char *",
    role: "const char *",
    text: "const char *",
    text_len: "size_t",
    tool_name: "const char *",
    tool_args_json: "const char *",
    tool_call_id: "const char *",
    tokens: "int64_t",
  });

  const clarity_assemble = koffi.struct(`${P}assemble`, {
    struct_size: "uint32_t",
    session_id: "const char *",
    messages: koffi.pointer(clarity_ctx_message),
    n_messages: "size_t",
    token_budget: "int64_t",
    current_turn_start: "size_t",
    flags: "uint32_t",
  });

  const clarity_before_compaction = koffi.struct(`${P}before_compaction`, {
    struct_size: "uint32_t",
    session_id: "const char *",
    message_count: "int64_t",
    token_count: "int64_t",
  });

  const clarity_session_end = koffi.struct(`${P}session_end`, {
    struct_size: "uint32_t",
    session_id: "const char *",
    reason: "const char *",
  });

  // clarity_event.data is `const void *`.  One event struct per payload type
  // lets koffi marshal the payload (and its message array) behind the pointer;
  // all four have the layout of clarity_event.
  const eventOf = (name, payload) =>
    koffi.struct(`${P}event_${name}`, {
      struct_size: "uint32_t",
      id: "uint32_t",
      version: "uint32_t",
      data: koffi.pointer(payload),
    });
  const clarity_event = koffi.struct(`${P}event`, {
    struct_size: "uint32_t",
    id: "uint32_t",
    version: "uint32_t",
    data: "const void *",
  });
  const events = {
    before_agent_start: eventOf("before_agent_start", clarity_before_agent_start),
    agent_end: eventOf("agent_end", clarity_agent_end),
    before_compaction: eventOf("before_compaction", clarity_before_compaction),
    session_end: eventOf("session_end", clarity_session_end),
    assemble: eventOf("assemble", clarity_assemble),
  };

  // data and error stay raw pointers: the plugin owns them until release(),
  // which must see the very same pointers.
  const clarity_result = koffi.struct(`${P}result`, {
    struct_size: "uint32_t",
    data: "void *",
    len: "size_t",
    error: "void *",
  });

  const clarity_plugin = koffi.struct(`${P}plugin`, {
    struct_size: "uint32_t",
    abi_version: "uint32_t",
    name: "const char *",
    version: "const char *",
    self: "void *",
    on_event: fnptr,
    command: fnptr,
    rpc: fnptr,
    release: fnptr,
    strerror: fnptr,
    unload: fnptr,
  });

  const R = koffi.pointer(clarity_result);
  const protos = {
    on_event: Object.fromEntries(
      Object.entries(events).map(([name, ev]) => [
        name,
        koffi.proto(`${P}on_event_${name}_fn`, "int", ["void *", koffi.pointer(ev), koffi.inout(R)]),
      ]),
    ),
    command: koffi.proto(`${P}command_fn`, "int", ["void *", "const char *", "const char *", koffi.inout(R)]),
    rpc: koffi.proto(`${P}rpc_fn`, "int", ["void *", "const char *", "const char *", koffi.inout(R)]),
    release: koffi.proto(`${P}release_fn`, "void", ["void *", koffi.inout(R)]),
    strerror: koffi.proto(`${P}strerror_fn`, "const char *", ["int"]),
    unload: koffi.proto(`${P}unload_fn`, "void", ["void *"]),
  };

  const types = {
    log_fn,
    clarity_host,
    clarity_message,
    clarity_before_agent_start,
    clarity_agent_end,
    clarity_ctx_message,
    clarity_assemble,
    clarity_before_compaction,
    clarity_session_end,
    clarity_event,
    clarity_result,
    clarity_plugin,
    events,
    protos,
  };
  typeCache.set(koffi, types);
  return types;
}

// Throws when koffi's layout of a struct differs from the C layout.
export function checkLayout(koffi, types = defineTypes(koffi)) {
  if (koffi.sizeof("void *") !== 8) return false; // only LP64 is tabulated
  const problems = [];
  for (const [name, want] of Object.entries(LP64_LAYOUT)) {
    const t = types[name];
    if (koffi.sizeof(t) !== want.size)
      problems.push(`sizeof(${name}) is ${koffi.sizeof(t)} in JS, ${want.size} in C`);
    for (const [member, off] of Object.entries(want.offsets)) {
      const got = koffi.offsetof(t, member);
      if (got !== off) problems.push(`offsetof(${name}, ${member}) is ${got} in JS, ${off} in C`);
    }
  }
  for (const [name, ev] of Object.entries(types.events)) {
    if (koffi.sizeof(ev) !== LP64_LAYOUT.clarity_event.size)
      problems.push(`event struct for ${name} is ${koffi.sizeof(ev)} bytes`);
  }
  if (problems.length) throw new Error(`clarity: koffi struct layout differs from clarity.h: ${problems.join("; ")}`);
  return true;
}

function utf8(s) {
  return s == null ? null : String(s);
}

function bytes(s) {
  if (s == null) return null;
  if (Buffer.isBuffer(s)) return s;
  if (s instanceof Uint8Array) return Buffer.from(s.buffer, s.byteOffset, s.byteLength);
  return Buffer.from(String(s), "utf8");
}

// A clarity_message array from plain objects {role, text, toolName, toolArgs}.
// toolArgs may be an object (serialized here) or a JSON string.
export function toMessages(T, list) {
  if (!Array.isArray(list) || list.length === 0) return { array: null, n: 0 };
  const array = list.map((m) => messageFields(m, T.sizes.clarity_message));
  return { array, n: array.length };
}

// The fields clarity_message and clarity_ctx_message share, from {role,
// text, toolName, toolArgs}; toolArgs that cannot be serialized are left out.
function messageFields(m, structSize) {
  const text = bytes(m.text ?? "");
  let args = m.toolArgs ?? null;
  if (args != null && typeof args !== "string") {
    try {
      args = JSON.stringify(args);
    } catch {
      args = null;
    }
  }
  return {
    struct_size: structSize,
    role: utf8(m.role ?? "user"),
    text,
    text_len: text.length,
    tool_name: utf8(m.toolName ?? null),
    tool_args_json: args,
  };
}

// koffi unloads (dlclose) a library when its handle is garbage-collected,
// which would unmap the plugin under the function pointers decoded from its
// table.  Loaded libraries are therefore kept for the life of the process.
const LIBS = Symbol.for("clarity.openclaw.libraries.v1");

function loadLibrary(koffi, T, libraryPath) {
  const perKoffi = (globalThis[LIBS] ??= new WeakMap());
  let libs = perKoffi.get(koffi);
  if (!libs) perKoffi.set(koffi, (libs = new Map()));
  const cacheKey = libraryPath;
  const hit = libs.get(cacheKey);
  if (hit) return hit;
  let lib;
  try {
    lib = koffi.load(libraryPath);
  } catch (e) {
    throw new ClarityError(`clarity: cannot load ${libraryPath}: ${e.message}`, RC.ERR);
  }
  let init;
  try {
    init = lib.func("clarity_plugin_init", "int", [
      koffi.pointer(T.clarity_host),
      "const char *",
      koffi.inout(koffi.pointer(T.clarity_plugin)),
      koffi.out(koffi.pointer("void *")),
    ]);
  } catch (e) {
    throw new ClarityError(`clarity: ${libraryPath} has no clarity_plugin_init: ${e.message}`, RC.ERR);
  }
  const libc = koffi.load("libc.so.6");
  const cfree = libc.func("void free(void *p)");
  const entry = { lib, libc, init, cfree };
  libs.set(cacheKey, entry);
  return entry;
}

export class ClarityError extends Error {
  constructor(message, rc, data) {
    super(message);
    this.name = "ClarityError";
    this.rc = rc;
    this.data = data;
  }
}

// Opens libclarity.so and initializes the plugin.
//   koffi        the koffi module
//   libraryPath  path of libclarity.so
//   config       clarity's config as a JSON string (or object)
//   log(level, message)  receives host->log calls (level: "debug".."error")
export function openClarity({ koffi, libraryPath, config, log }) {
  const T = defineTypes(koffi);
  checkLayout(koffi, T);
  T.sizes ??= Object.freeze(
    Object.fromEntries(
      ["clarity_host", "clarity_message", "clarity_before_agent_start", "clarity_agent_end",
        "clarity_ctx_message", "clarity_assemble", "clarity_before_compaction",
        "clarity_session_end", "clarity_event", "clarity_result", "clarity_plugin"].map((n) => [
        n,
        koffi.sizeof(T[n]),
      ]),
    ),
  );

  const { lib, init, cfree } = loadLibrary(koffi, T, libraryPath);

  // host->log may be called during init and unload, so it lives as long as
  // the plugin.  A throwing logger must not unwind into C.
  const logCb = koffi.register((_ud, level, msg) => {
    try {
      log?.(LOG_LEVELS[level] ?? "info", msg ?? "");
    } catch {
      /* never into C */
    }
  }, koffi.pointer(T.log_fn));

  const host = {
    struct_size: T.sizes.clarity_host,
    abi_version: CLARITY_ABI_VERSION,
    ud: null,
    log: logCb,
    now_ms: null,
    kv_get: null,
    kv_put: null,
    kv_del: null,
    kv_free: null,
    kv_iter: null,
    kv_begin: null,
    kv_commit: null,
    kv_rollback: null,
    flags: 0, // a gateway serves many turns: not CLARITY_HOST_BRIEF
  };
  const out = {
    struct_size: T.sizes.clarity_plugin,
    abi_version: 0,
    name: null,
    version: null,
    self: null,
    on_event: null,
    command: null,
    rpc: null,
    release: null,
    strerror: null,
    unload: null,
  };
  const errOut = [null];
  const cfg = config == null ? null : typeof config === "string" ? config : JSON.stringify(config);
  const rc = init(host, cfg, out, errOut);
  if (rc !== RC.OK) {
    let msg = `clarity_plugin_init returned ${rc}`;
    if (errOut[0]) {
      msg = koffi.decode.string(errOut[0]) ?? msg;
      cfree(errOut[0]);
    }
    koffi.unregister(logCb);
    throw new ClarityError(`clarity: ${msg}`, rc);
  }
  if (out.abi_version !== CLARITY_ABI_VERSION) {
    koffi.unregister(logCb);
    throw new ClarityError(
      `clarity: ${libraryPath} speaks ABI ${out.abi_version}, this adapter speaks ${CLARITY_ABI_VERSION}`,
      RC.EVERSION,
    );
  }
  for (const m of ["on_event", "command", "rpc", "release", "strerror", "unload"]) {
    if (!out[m]) {
      koffi.unregister(logCb);
      throw new ClarityError(`clarity: plugin table has no ${m}`, RC.ERR);
    }
  }

  const self = out.self;
  const fn = {
    on_event: Object.fromEntries(
      Object.entries(T.protos.on_event).map(([k, p]) => [k, koffi.decode(out.on_event, p)]),
    ),
    command: koffi.decode(out.command, T.protos.command),
    rpc: koffi.decode(out.rpc, T.protos.rpc),
    release: koffi.decode(out.release, T.protos.release),
    strerror: koffi.decode(out.strerror, T.protos.strerror),
    unload: koffi.decode(out.unload, T.protos.unload),
  };
  let alive = true;

  const newResult = () => ({ struct_size: T.sizes.clarity_result, data: null, len: 0, error: null });

  // Copies a result out of plugin memory, then releases it.
  function take(r) {
    try {
      const text = r.data && Number(r.len) > 0 ? koffi.decode.string(r.data, Number(r.len)) : "";
      const error = r.error ? koffi.decode.string(r.error) : null;
      return { text, error };
    } finally {
      fn.release(self, r);
    }
  }

  function live() {
    if (!alive) throw new ClarityError("clarity: the plugin was unloaded", RC.ERR);
  }

  function strerror(rc) {
    try {
      return fn.strerror(rc) ?? `error ${rc}`;
    } catch {
      return `error ${rc}`;
    }
  }

  function fail(what, rc, res) {
    const msg = res.error || res.text || strerror(rc);
    return new ClarityError(`clarity: ${what}: ${msg}`, rc, res.text);
  }

  function event(name, id, payload) {
    live();
    const r = newResult();
    const ev = { struct_size: T.sizes.clarity_event, id, version: 1, data: payload };
    const rc = fn.on_event[name](self, ev, r);
    const res = take(r);
    if (rc === RC.DECLINED) return { rc, text: "" };
    if (rc !== RC.OK) throw fail(name, rc, res);
    return { rc, text: res.text };
  }

  return {
    name: out.name,
    version: out.version,
    libraryPath,
    library: lib, // keeps the handle reachable (see loadLibrary)

    // -> the text to prepend to the prompt ("" when nothing is relevant yet)
    beforeAgentStart({ session, workspace = null, prompt = "", messages = null }) {
      const p = bytes(prompt ?? "");
      const m = toMessages(T, messages);
      return event("before_agent_start", EVENT.BEFORE_AGENT_START, {
        struct_size: T.sizes.clarity_before_agent_start,
        session_id: String(session),
        workspace_dir: workspace ? String(workspace) : null,
        prompt: p,
        prompt_len: p.length,
        messages: m.array,
        n_messages: m.n,
      }).text;
    },

    // -> "duplicate" when turnKey was counted before (a retried turn), else ""
    agentEnd({ session, messages, success = true, turnKey = null, workspace = null }) {
      const m = toMessages(T, messages);
      return event("agent_end", EVENT.AGENT_END, {
        struct_size: T.sizes.clarity_agent_end,
        session_id: String(session),
        messages: m.array,
        n_messages: m.n,
        success: success ? 1 : 0,
        turn_key: turnKey == null ? null : String(turnKey),
        workspace_dir: workspace ? String(workspace) : null,
      }).text;
    },

    // -> the parsed result (include/clarity.h, CLARITY_EV_ASSEMBLE), or null
    // when the plugin declines.  messages: [{id, role, text, toolName,
    // toolArgs, toolCallId, tokens}].
    assemble({ session, messages, tokenBudget = 0, currentTurnStart = null, mayDrop = false }) {
      const list = Array.isArray(messages) ? messages : [];
      const array = list.map((m) => ({
        ...messageFields(m, T.sizes.clarity_ctx_message),
        id: String(m.id),
        tool_call_id: utf8(m.toolCallId ?? null),
        tokens: Number.isFinite(m.tokens) && m.tokens >= 0 ? Math.trunc(m.tokens) : -1,
      }));
      const budget = Number.isFinite(tokenBudget) && tokenBudget > 0 ? Math.trunc(tokenBudget) : 0;
      const r = event("assemble", EVENT.ASSEMBLE, {
        struct_size: T.sizes.clarity_assemble,
        session_id: String(session),
        messages: array.length ? array : null,
        n_messages: array.length,
        token_budget: budget,
        current_turn_start: currentTurnStart == null ? array.length : Math.max(0, Math.trunc(currentTurnStart)),
        flags: mayDrop ? ASSEMBLE_MAY_DROP : 0,
      });
      return r.rc === RC.DECLINED || !r.text ? null : JSON.parse(r.text);
    },

    // -> the prune report
    beforeCompaction({ session, messageCount = -1, tokenCount = -1 }) {
      const num = (v) => (Number.isFinite(v) && v >= 0 ? Math.trunc(v) : -1);
      return event("before_compaction", EVENT.BEFORE_COMPACTION, {
        struct_size: T.sizes.clarity_before_compaction,
        session_id: String(session),
        message_count: num(messageCount),
        token_count: num(tokenCount),
      }).text;
    },

    sessionEnd({ session, reason = null }) {
      event("session_end", EVENT.SESSION_END, {
        struct_size: T.sizes.clarity_session_end,
        session_id: String(session),
        reason: reason == null ? null : String(reason),
      });
    },

    // -> {rc, text}; rc DECLINED when the line is not a /clarity command
    command(session, line) {
      live();
      const r = newResult();
      const rc = fn.command(self, String(session), String(line), r);
      const res = take(r);
      if (rc === RC.OK || rc === RC.DECLINED) return { rc, text: res.text };
      return { rc, text: res.text, error: res.error || strerror(rc) };
    },

    // -> {rc, result} on success, {rc, error: {code, message}} otherwise
    rpc(method, params) {
      live();
      const r = newResult();
      const json = typeof params === "string" ? params : JSON.stringify(params ?? {});
      const rc = fn.rpc(self, String(method), json, r);
      const res = take(r);
      if (rc === RC.OK) {
        try {
          return { rc, result: res.text ? JSON.parse(res.text) : null };
        } catch (e) {
          return { rc: RC.ERR, error: { code: -32603, message: `clarity: bad JSON from ${method}: ${e.message}` } };
        }
      }
      let error = null;
      try {
        error = res.text ? JSON.parse(res.text) : null;
      } catch {
        error = null;
      }
      if (!error || typeof error !== "object")
        error = { code: rc === RC.DECLINED ? -32601 : -32603, message: res.error || strerror(rc) };
      if (!error.message) error.message = res.error || strerror(rc);
      return { rc, error };
    },

    strerror,

    // Flushes every session and frees the plugin.  Idempotent.
    unload() {
      if (!alive) return;
      alive = false;
      try {
        fn.unload(self);
      } finally {
        koffi.unregister(logCb);
      }
    },

    get alive() {
      return alive;
    },
  };
}
