/*
 * clarity.h: the gateway ABI of libclarity.so.
 *
 * One shared object, one exported symbol: clarity_plugin_init().  A host
 * gateway dlopen()s the plugin, fills a clarity_host table with the services
 * it lends (logging, clock, optionally a key-value store), and receives a
 * clarity_plugin table of entry points.  Everything crosses this boundary as
 * plain C: size-prefixed structs, NUL-terminated UTF-8 strings (or pointer +
 * length where stated), integer return codes.
 *
 * Versioning (after sqlite3ext.h and redismodule.h)
 *   - CLARITY_ABI_VERSION changes only on an incompatible change.  The plugin
 *     refuses a host whose abi_version differs.
 *   - Every struct starts with uint32_t struct_size.  Members are only ever
 *     appended.  A reader uses a member only when the writer's struct_size
 *     covers it (CLARITY_HAS_MEMBER); an absent member reads as NULL/0.
 *   - Events carry {id, version}.  An event id the plugin does not know, or a
 *     payload version newer than it understands, is answered with
 *     CLARITY_DECLINED ("not mine, pass it on"), never an error.
 *
 * Threading
 *   All plugin entry points may be called from several threads at once.
 *   Calls for one session are serialized inside the plugin; calls for
 *   different sessions run in parallel.  Host services (log, clock, kv) may
 *   therefore be called concurrently and must be thread-safe.
 *
 * Ownership
 *   - Everything the host passes in stays owned by the host and need only
 *     live for the duration of the call.
 *   - Everything the plugin returns in a clarity_result is owned by the
 *     plugin until the host passes that result to plugin->release().
 *   - Strings the plugin returns from strerror() are static.
 *   - Values the host returns from kv_get() are owned by the host and are
 *     handed back through kv_free() once the plugin is done with them.
 */
#ifndef CLARITY_H
#define CLARITY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLARITY_ABI_VERSION 1

#if defined(_WIN32)
#define CLARITY_EXPORT __declspec(dllexport)
#else
#define CLARITY_EXPORT __attribute__((visibility("default")))
#endif

/* True when a struct written with size `s->struct_size` contains `member`. */
#define CLARITY_HAS_MEMBER(s, type, member)                                     \
    ((s) != NULL && (s)->struct_size >= offsetof(type, member) + sizeof(((type *)0)->member))

/* Return codes.  Negative values are errors; plugin->strerror() names them. */
enum clarity_rc {
    CLARITY_OK = 0,
    CLARITY_ERR = -1,       /* internal error; message in result.error */
    CLARITY_EINVAL = -2,    /* bad argument: malformed JSON, missing field... */
    CLARITY_ENOMEM = -3,    /* allocation failed; state left unchanged */
    CLARITY_ENOTFOUND = -4, /* unknown session, item or method */
    CLARITY_DECLINED = -5,  /* event or command not handled by this plugin */
    CLARITY_EVERSION = -6,  /* ABI or payload version mismatch */
    CLARITY_ESTORE = -7,    /* persistence failed; in-memory state kept */
    CLARITY_ECONFIG = -8    /* configuration refused */
};

/* Log levels for host->log. */
enum clarity_log_level {
    CLARITY_LOG_DEBUG = 0,
    CLARITY_LOG_INFO = 1,
    CLARITY_LOG_WARN = 2,
    CLARITY_LOG_ERROR = 3
};

/* Callback for kv_iter: return 0 to continue, non-zero to stop early.
 * key and val are owned by the host and valid only during the callback. */
typedef int (*clarity_kv_iter_cb)(void *cbud, const char *key, const char *val, size_t len);

/*
 * Services the host lends the plugin.  Any member may be NULL.
 * When the four kv_get/kv_put/kv_del/kv_iter members are all present the
 * plugin persists through them (unless its config says otherwise);
 * otherwise it uses its embedded SQLite store.
 */
typedef struct clarity_host {
    uint32_t struct_size; /* sizeof(clarity_host) as the host compiled it */
    uint32_t abi_version; /* CLARITY_ABI_VERSION */
    void *ud;             /* handed back as the first argument of every service */

    /* msg is NUL-terminated, owned by the plugin, valid during the call. */
    void (*log)(void *ud, int level, const char *msg);
    /* Wall clock in milliseconds since the Unix epoch. */
    int64_t (*now_ms)(void *ud);

    /* Key-value store.  Return CLARITY_OK, CLARITY_ENOTFOUND (get/del of a
     * missing key) or another negative code.  On CLARITY_OK, kv_get stores a
     * host-owned buffer in *val (not necessarily NUL-terminated) that the
     * plugin releases with kv_free. */
    int (*kv_get)(void *ud, const char *ns, const char *key, char **val, size_t *len);
    int (*kv_put)(void *ud, const char *ns, const char *key, const char *val, size_t len);
    int (*kv_del)(void *ud, const char *ns, const char *key);
    void (*kv_free)(void *ud, char *val);
    /* Visit every key of namespace ns that starts with prefix ("" = all). */
    int (*kv_iter)(void *ud, const char *ns, const char *prefix, clarity_kv_iter_cb cb, void *cbud);

    /* Optional batching: the plugin brackets the writes of one turn with
     * kv_begin/kv_commit so a host can make them atomic.  kv_rollback is
     * called instead of kv_commit when a write failed. */
    int (*kv_begin)(void *ud);
    int (*kv_commit)(void *ud);
    int (*kv_rollback)(void *ud);

    /* Since 0.2: CLARITY_HOST_* bits (none when the host's table ends
     * before this member). */
    uint32_t flags;
    /* New members go here, and only here. */
} clarity_host;

/* The host runs one or two events a process and exits (Claude Code's hook
 * processes): the plugin builds nothing that only later turns of the same
 * process would repay.  A session it restores then scans a short text
 * without first building the filter of the session's names, which costs
 * more than the scan saves (about 400 instructions an item, 2.3 M in a
 * Stop hook's process with 4,500 items).  What a turn counts is the same
 * either way. */
#define CLARITY_HOST_BRIEF 1u

/* ---- events ------------------------------------------------------------ */

typedef enum clarity_event_id {
    CLARITY_EV_BEFORE_AGENT_START = 1,
    CLARITY_EV_AGENT_END = 2,
    CLARITY_EV_BEFORE_COMPACTION = 3,
    CLARITY_EV_SESSION_END = 4,
    CLARITY_EV_ASSEMBLE = 5 /* since 0.2: decide what the model sees */
} clarity_event_id;

/* One message of a conversation.  role is "user", "assistant", "tool" or
 * "system".  text may contain NUL bytes and invalid UTF-8: its length is
 * text_len.  tool_name and tool_args_json (a JSON object) may be NULL. */
typedef struct clarity_message {
    uint32_t struct_size;
    const char *role;
    const char *text;
    size_t text_len;
    const char *tool_name;
    const char *tool_args_json;
} clarity_message;

/* Payload of CLARITY_EV_BEFORE_AGENT_START, version 1.
 * Result: the text to prepend to the prompt (may be empty). */
typedef struct clarity_before_agent_start {
    uint32_t struct_size;
    const char *session_id;    /* required */
    const char *workspace_dir; /* absolute path or NULL */
    const char *prompt;        /* the user prompt; may hold NUL bytes */
    size_t prompt_len;
    const clarity_message *messages; /* recent messages, oldest first; may be NULL */
    size_t n_messages;
} clarity_before_agent_start;

/* Payload of CLARITY_EV_AGENT_END, version 1.  Result: empty on success.
 * When it returns CLARITY_OK the turn is durable.
 * turn_key (since 0.2, may be NULL): the host's id of this turn.  A turn
 * whose key the session already counted (one of its last 64) changes
 * nothing and answers "duplicate" as its data, so a host retrying after a
 * crash never counts a turn twice; the key is stored with the turn. */
typedef struct clarity_agent_end {
    uint32_t struct_size;
    const char *session_id;
    const clarity_message *messages; /* the turn's messages, incl. tool calls */
    size_t n_messages;
    int success; /* non-zero when the agent run succeeded */
    const char *turn_key;
    /* Since 0.2: the workspace, as before_agent_start's workspace_dir
     * (absolute, or NULL to keep the session's): tool inputs' absolute
     * paths are made relative to it.  A host whose process sees only the
     * turn's end (a Claude Code Stop hook) need not run a
     * before_agent_start to set it. */
    const char *workspace_dir;
} clarity_agent_end;

/* Payload of CLARITY_EV_BEFORE_COMPACTION, version 1.
 * Result: the prune report as readable text. */
typedef struct clarity_before_compaction {
    uint32_t struct_size;
    const char *session_id;
    int64_t message_count; /* -1 when unknown */
    int64_t token_count;   /* -1 when unknown */
} clarity_before_compaction;

/* Payload of CLARITY_EV_SESSION_END, version 1.  Result: empty. */
typedef struct clarity_session_end {
    uint32_t struct_size;
    const char *session_id;
    const char *reason; /* free text, may be NULL */
} clarity_session_end;

/* One message of CLARITY_EV_ASSEMBLE.  id is the host's id of the message,
 * stable across calls (clarity caches per id what it found in the text)
 * and unique within a call (a repeated id is refused: CLARITY_EINVAL).
 * role is "system", "user", "assistant" or "tool".  tool_call_id pairs a
 * tool call (an assistant message) with its result (a tool message): the
 * two are never split.  tokens: the host's count, or -1 (clarity
 * estimates).  Everything but id and role may be NULL / 0. */
typedef struct clarity_ctx_message {
    uint32_t struct_size;
    const char *id;
    const char *role;
    const char *text; /* may hold NUL bytes and invalid UTF-8 */
    size_t text_len;
    const char *tool_name;
    const char *tool_args_json;
    const char *tool_call_id;
    int64_t tokens;
} clarity_ctx_message;

/* The host may drop messages (not only replace their content). */
#define CLARITY_ASSEMBLE_MAY_DROP 1u

/* Payload of CLARITY_EV_ASSEMBLE, version 1: the messages the host is
 * about to send to the model, oldest first.  current_turn_start: index of
 * the first message of the turn in progress (messages from there on are
 * never touched).  token_budget <= 0: no budget (nothing is removed).
 *
 * Result (data, JSON, owned by the plugin until release):
 *   {"tokensBefore": n, "tokensAfter": n, "budget": n, "met": bool,
 *    "batch": n, "changed": bool,
 *    "actions": [{"index": i, "id": "<host id>", "action": "stub"|"drop",
 *                 "text": "<replacement content>", "tokens": n,
 *                 "item": "<id>", "score": x}, ...],
 *    "block": "[CLARITY CONTEXT]..."}
 * Only messages that change are listed (every other one is kept verbatim);
 * "text" is present for "stub".  "met": false when the budget cannot be
 * met without touching what is protected.  "batch" counts the decisions:
 * it moves (and "changed" is true) only when clarity changed what it
 * removes, so between batches the same messages give byte-identical
 * output and a prompt cache stays valid.  A host that does not send this
 * event sees no change in any other event. */
typedef struct clarity_assemble {
    uint32_t struct_size;
    const char *session_id;
    const clarity_ctx_message *messages;
    size_t n_messages;
    int64_t token_budget;
    size_t current_turn_start;
    uint32_t flags; /* CLARITY_ASSEMBLE_* */
} clarity_assemble;

typedef struct clarity_event {
    uint32_t struct_size;
    uint32_t id;      /* clarity_event_id */
    uint32_t version; /* payload version; 1 for every payload above */
    const void *data; /* points to the payload struct for id */
} clarity_event;

/* ---- results ----------------------------------------------------------- */

/* Filled by the plugin; the host zero-initializes it and sets struct_size.
 * data: NUL-terminated text or JSON (len excludes the NUL), or NULL.
 * error: NUL-terminated message when the call failed, or NULL.
 * Both are owned by the plugin until plugin->release(self, result), which
 * frees them and resets the pointers.  Releasing twice is harmless. */
typedef struct clarity_result {
    uint32_t struct_size;
    char *data;
    size_t len;
    char *error;
} clarity_result;

/* ---- the plugin -------------------------------------------------------- */

typedef struct clarity_plugin {
    uint32_t struct_size; /* set by the host: sizeof(clarity_plugin) it knows */
    uint32_t abi_version; /* set by the plugin */
    const char *name;     /* static strings */
    const char *version;
    void *self; /* opaque; first argument of every entry point */

    /* Deliver a hook event.  Unknown id or newer version: CLARITY_DECLINED. */
    int (*on_event)(void *self, const clarity_event *ev, clarity_result *out);
    /* A slash command line such as "/clarity scores" for a session.
     * Lines that do not start with "/clarity": CLARITY_DECLINED.
     * Result data: text for the user. */
    int (*command)(void *self, const char *session_id, const char *line, clarity_result *out);
    /* An RPC method such as "clarity.getScores" with JSON params (an object,
     * usually with "session").  Result data: JSON.  On error data holds a
     * JSON-RPC style {"code": n, "message": "..."} and error the message.
     * Methods outside "clarity.*": CLARITY_DECLINED. */
    int (*rpc)(void *self, const char *method, const char *params_json, clarity_result *out);
    /* Free what a result holds.  Safe on a zeroed result. */
    void (*release)(void *self, clarity_result *r);
    /* Static text for a return code. */
    const char *(*strerror)(int rc);
    /* Flush every session to the store and free everything.  self is
     * invalid afterwards.  The host must not call other entry points
     * concurrently with unload. */
    void (*unload)(void *self);
    /* New members go here, and only here. */
} clarity_plugin;

/*
 * The only exported symbol.
 *   host        services lent by the host (copied; may be freed after return
 *               except host->ud, which must outlive the plugin).
 *   config_json the plugin configuration as a JSON object, or NULL/"" for
 *               defaults.  Refused with CLARITY_ECONFIG naming the bad key.
 *   out         host-allocated, with out->struct_size set; filled on success.
 *   errmsg      on failure, set to a malloc()ed message the host frees with
 *               free(); NULL on success.  May itself be NULL.
 */
typedef int (*clarity_plugin_init_fn)(const clarity_host *host, const char *config_json,
                                      clarity_plugin *out, char **errmsg);
CLARITY_EXPORT int clarity_plugin_init(const clarity_host *host, const char *config_json,
                                       clarity_plugin *out, char **errmsg);

#define CLARITY_PLUGIN_INIT_SYMBOL "clarity_plugin_init"

#ifdef __cplusplus
}
#endif
#endif /* CLARITY_H */
