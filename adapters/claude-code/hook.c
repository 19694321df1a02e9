/* hook.c: `clarity hook`, one Claude Code hook event per process.
 *
 * Claude Code runs the command with the event as JSON on stdin
 * (session_id, transcript_path, cwd, hook_event_name and per event prompt,
 * tool_name/tool_input, last_assistant_message, trigger, source, reason).
 * The mapping:
 *   UserPromptSubmit   before_agent_start(prompt, workspace = cwd); the block
 *                      goes back as hookSpecificOutput.additionalContext
 *   PostToolUse        a file tool (Read, Edit, Write, MultiEdit, NotebookEdit,
 *                      NotebookRead): the call is remembered in the session's
 *                      hook state and sent with the next Stop's agent_end (the
 *                      turn does not advance here; the process loads no
 *                      plugin, tool_needs_plugin)
 *                      Bash: an output over toolOutput.maxChars comes back as
 *                      hookSpecificOutput.updatedToolOutput, the same object
 *                      with stdout and stderr trimmed (clarity.trimOutput:
 *                      head, tail and the lines naming hot items); within
 *                      it, the process loads no plugin
 *   Stop               agent_end with the assistant text and tool_use blocks
 *                      the transcript gained since the previous Stop, the
 *                      remembered file tool calls and last_assistant_message;
 *                      Claude Code may write the transcript after the hook
 *                      started, so Stop polls for it briefly, and when it
 *                      still cannot be read the turn does not advance: it
 *                      stays pending and the next hook of the session
 *                      (prompt, Stop, PreCompact, SessionEnd) ends it first
 *   SubagentStop       agent_end with the subagent's transcript
 *                      (agent_transcript_path) and last_assistant_message;
 *                      skipped for Claude Code's internal subagents (an empty
 *                      agent_type, e.g. the compaction summarizer)
 *   PreCompact         before_compaction (the prune report is logged at info);
 *                      the keep list on stdout, which Claude Code 2.1 adds to
 *                      the summarizer's instructions
 *   PostCompact        clarity.compacted with compact_summary: the kept items
 *                      the summary lost come back in the next prompt's block
 *   SessionStart       source "compact": the block again, as additionalContext
 *   SessionEnd         session_end(reason)
 * Anything else is ignored.  A hook never blocks the user: every internal
 * error is a message on stderr and exit status 0 with nothing on stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../config/config.h"
#include "../../util/buf.h"
#include "../../util/fs.h"
#include "claude_code.h"
#include "hookstate.h"
#include "../../cli/jsonconv.h"
#include "transcript.h"

#define MAX_INPUT ((size_t)64 << 20)
#define MAX_CONTEXT 10000 /* Claude Code's limit for additionalContext */
#define MAX_PENDING 1000

typedef struct hook {
    cli *c;
    json_t *in;
    const char *event, *session, *cwd, *transcript;
    long long limit; /* toolOutput.maxChars as the plugin has it (bash_limit); -1 before it is read */
    /* A Stop (stop_needs_plugin): the session's hook state, opened and
     * locked before the plugin loads (held; fd -1 when not), and whether
     * this process left the turn to a detached child (detached). */
    hookstate held;
    int detached;
} hook;

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("clarity hook: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Runs an event; a block (when out is non-NULL) is appended to out. */
static int event(hook *h, uint32_t id, const void *payload, buf *out)
{
    clarity_result res;
    int rc = loader_event(&h->c->L, id, payload, &res);
    if (rc < 0 && rc != CLARITY_DECLINED)
        warn("%s: %s", h->event, loader_errtext(&h->c->L, rc, &res));
    else if (rc == CLARITY_OK && out && res.data)
        buf_append(out, res.data, res.len);
    loader_release(&h->c->L, &res);
    return rc;
}

/* Calls an RPC method; returns its parsed result, or NULL (warned). */
static json_t *rpc(hook *h, const char *method, json_t *params)
{
    char *p = json_dumps(params, JSON_COMPACT);
    clarity_result res;
    int rc = p ? loader_rpc(&h->c->L, method, p, &res) : CLARITY_ENOMEM;
    free(p);
    json_t *out = NULL;
    if (rc == CLARITY_OK) out = json_loadb(res.data ? res.data : "", res.len, 0, NULL);
    /* a session clarity never saw (no prompt yet) has nothing to say */
    if (!out && rc != CLARITY_ENOTFOUND)
        warn("%s: %s: %s", h->event, method, loader_errtext(&h->c->L, rc, &res));
    loader_release(&h->c->L, &res);
    return out;
}

static int before_agent_start(hook *h, const char *prompt, size_t len, buf *out)
{
    clarity_before_agent_start p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.session_id = h->session;
    p.workspace_dir = h->cwd;
    p.prompt = prompt;
    p.prompt_len = len;
    return event(h, CLARITY_EV_BEFORE_AGENT_START, &p, out);
}

/* Prints {"hookSpecificOutput": {"hookEventName", "additionalContext"}}; a
 * block over the limit is cut at a line and closed again. */
static void emit_context(const char *name, buf *block)
{
    if (!block->len) return;
    static const char close_tag[] = "[/CLARITY CONTEXT]\n";
    if (block->len > MAX_CONTEXT) {
        size_t keep = MAX_CONTEXT - (sizeof close_tag - 1);
        while (keep > 0 && block->p[keep - 1] != '\n') keep--;
        block->len = keep;
        buf_puts(block, close_tag);
    }
    json_t *o = json_pack("{s:{s:s,s:o}}", "hookSpecificOutput", "hookEventName", name,
                          "additionalContext", json_string_lossy(block->p, block->len));
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (s) printf("%s\n", s);
    else warn("out of memory");
    free(s);
    json_decref(o);
}

/* ---- events ------------------------------------------------------------- */

static void complete_deferred(hook *h);

static void on_prompt(hook *h)
{
    complete_deferred(h);
    json_t *p = json_object_get(h->in, "prompt");
    if (p && !json_is_string(p)) { /* said, and nothing done: Claude Code goes on */
        warn("UserPromptSubmit: \"prompt\" is not a string (%s); the prompt is not read",
             json_is_number(p) ? "a number" : "another type");
        return;
    }
    buf block;
    buf_init(&block);
    if (before_agent_start(h, json_string_value(p) ? json_string_value(p) : "",
                           json_string_length(p), &block) == CLARITY_OK)
        emit_context("UserPromptSubmit", &block);
    buf_free(&block);
}

static void on_session_start(hook *h)
{
    const char *source = str(h->in, "source");
    if (!source || strcmp(source, "compact") != 0) return;
    buf block;
    buf_init(&block);
    if (before_agent_start(h, "", 0, &block) == CLARITY_OK) emit_context("SessionStart", &block);
    buf_free(&block);
}

static int is_file_tool(const char *name)
{
    static const char *const tools[] = {"Read", "Edit", "Write", "MultiEdit", "NotebookEdit",
                                        "NotebookRead", NULL};
    for (int i = 0; name && tools[i]; i++)
        if (strcmp(name, tools[i]) == 0) return 1;
    return 0;
}

static int open_state(hook *h, hookstate *st)
{
    memset(st, 0, sizeof *st);
    st->fd = -1;
    st->offset = -1;
    char *dir = hookstate_dir(h->c);
    char *err = NULL;
    int rc = dir ? hookstate_open(st, dir, h->session, &err) : -1;
    if (rc != 0) {
        warn("hook state: %s", err ? err : "out of memory");
        hookstate_close(st);
    }
    free(err);
    free(dir);
    return rc;
}

/* The whole output Claude Code saved to a file when it was too large for
 * the result (persistedOutputPath; stdout then holds its first part), or
 * NULL. */
static json_t *persisted_output(json_t *resp, const char **path)
{
    *path = str(resp, "persistedOutputPath");
    struct stat sb;
    if (!*path || stat(*path, &sb) != 0 || !S_ISREG(sb.st_mode) || (size_t)sb.st_size > MAX_INPUT)
        return NULL;
    size_t len;
    char *text = util_read_file(*path, MAX_INPUT, &len);
    json_t *s = text ? json_string_lossy(text, len) : NULL;
    free(text);
    return s;
}

/* The Bash response's object, stdout and stderr (either may be no string):
 * 1, or 0 when it is not a text output trim_bash handles. */
static int bash_output(hook *h, json_t **resp, json_t **out, json_t **err)
{
    *resp = json_object_get(h->in, "tool_response");
    *out = json_object_get(*resp, "stdout");
    *err = json_object_get(*resp, "stderr");
    return json_is_object(*resp) && json_is_string(*out) && !json_is_true(json_object_get(*resp, "isImage"));
}

/* Bash's output {stdout, stderr, interrupted, isImage, ...} over
 * toolOutput.maxChars: the same object with its text fields trimmed, as
 * updatedToolOutput.  When Claude Code saved the whole output to a file,
 * the whole output is trimmed instead of its first part, and the file's
 * path is named in stdout (the saved-output fields go: with them Claude
 * Code would show its own 2 KB preview).  Other tools' shapes are not
 * known: left alone. */
static void trim_bash(hook *h)
{
    json_t *resp, *out, *err;
    if (!bash_output(h, &resp, &out, &err)) return;
    const char *saved;
    json_t *whole = persisted_output(resp, &saved);
    json_t *fields = json_pack("{s:O}", "stdout", whole ? whole : out);
    if (fields && json_is_string(err)) json_object_set(fields, "stderr", err);
    json_t *params = fields ? json_pack("{s:s,s:o}", "session", h->session, "fields", fields) : NULL;
    json_t *r = params ? rpc(h, "clarity.trimOutput", params) : NULL;
    json_decref(params);
    if (r && json_is_true(json_object_get(r, "trimmed"))) {
        json_t *upd = json_deep_copy(resp);
        json_object_update_existing(upd, json_object_get(r, "fields"));
        if (whole) {
            buf note;
            buf_init(&note);
            json_t *cut = json_object_get(upd, "stdout");
            buf_append(&note, json_string_value(cut), json_string_length(cut));
            buf_printf(&note, "[clarity: the whole output (%zu characters) is in %s]\n",
                       json_string_length(whole), saved);
            json_object_set_new(upd, "stdout", json_string_lossy(note.p, note.len));
            buf_free(&note);
            json_object_del(upd, "persistedOutputPath");
            json_object_del(upd, "persistedOutputSize");
        }
        json_t *o = upd ? json_pack("{s:{s:s,s:o}}", "hookSpecificOutput", "hookEventName",
                                    "PostToolUse", "updatedToolOutput", upd)
                        : NULL;
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (s) printf("%s\n", s);
        else warn("out of memory");
        free(s);
        json_decref(o);
    }
    json_decref(r);
    json_decref(whole);
}

/* The toolOutput.maxChars the plugin runs with: the config's (what the CLI
 * hands it) or the default; 0 when the config's is no integer in range (the
 * plugin refuses the config: let it say so). */
static size_t bash_limit(hook *h)
{
    if (h->limit < 0) {
        const char *text = cli_config(h->c);
        json_t *cfg = text ? json_loads(text, 0, NULL) : NULL;
        json_t *v = json_object_get(json_object_get(cfg, "toolOutput"), "maxChars");
        long long n = !cfg ? 0 : !v ? CFG_TOOL_OUTPUT_MAX_CHARS : json_is_integer(v) ? json_integer_value(v) : 0;
        json_decref(cfg);
        h->limit = n >= CFG_TOOL_OUTPUT_MAX_CHARS_MIN && n <= CFG_TOOL_OUTPUT_MAX_CHARS_MAX ? n : 0;
    }
    return (size_t)h->limit;
}

/* Whether trim_bash may trim this Bash output: one saved to a file, or
 * whose stdout and stderr are longer together than the limit
 * (clarity.trimOutput compares their bytes). */
static int bash_may_trim(hook *h)
{
    json_t *resp, *out, *err;
    if (!bash_output(h, &resp, &out, &err)) return 0; /* trim_bash leaves it alone */
    if (str(resp, "persistedOutputPath")) return 1;
    size_t total = json_string_length(out) + (json_is_string(err) ? json_string_length(err) : 0);
    size_t limit = bash_limit(h);
    return limit == 0 || total > limit;
}

static void on_tool(hook *h)
{
    const char *tool = str(h->in, "tool_name");
    json_t *input = json_object_get(h->in, "tool_input");
    if (tool && strcmp(tool, "Bash") == 0 && bash_may_trim(h)) trim_bash(h);
    if (!is_file_tool(tool) || !json_is_object(input)) return;
    hookstate st;
    if (open_state(h, &st) == 0) {
        if (json_array_size(st.pending) >= MAX_PENDING) json_array_remove(st.pending, 0);
        json_t *e = json_pack("{s:s,s:O}", "tool_name", tool, "tool_input", input);
        const char *id = str(h->in, "tool_use_id");
        if (e && id) json_object_set_new(e, "tool_use_id", json_string(id));
        if (!e || json_array_append_new(st.pending, e) != 0 || hookstate_save(&st) != 0)
            warn("hook state %s: cannot record the %s call: %s", st.path, tool, strerror(errno));
    }
    hookstate_close(&st);
}

static int push_tool(msgvec *mv, const char *tool, json_t *input)
{
    json_t *m = json_pack("{s:s,s:s,s:s,s:O}", "role", "assistant", "text", "", "tool_name", tool,
                          "tool_args", input);
    const char *why;
    int rc = m ? msgvec_push_json(mv, m, &why) : -1;
    json_decref(m);
    return rc;
}

/* True when the message at index last_text of mv is text (a string). */
static int ends_with(const msgvec *mv, size_t last_text, const char *text, size_t len)
{
    return last_text < mv->n && mv->v[last_text].text_len == len &&
           memcmp(mv->v[last_text].text, text, len) == 0;
}

/* The last assistant message, unless the transcript already ended with it. */
static int push_last(msgvec *mv, size_t last_text, const char *text, size_t len)
{
    if (!text || len == 0 || ends_with(mv, last_text, text, len)) return 0;
    json_t *m = json_pack("{s:s,s:o}", "role", "assistant", "text", json_string_lossy(text, len));
    const char *why;
    int rc = m ? msgvec_push_json(mv, m, &why) : -1;
    json_decref(m);
    return rc;
}

static int agent_end(hook *h, msgvec *mv)
{
    clarity_agent_end p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.session_id = h->session;
    /* absolute paths in tool inputs become repository-relative even when
     * the hooks were installed in the middle of a session (no prompt's
     * process set the workspace) */
    p.workspace_dir = h->cwd;
    p.messages = mv->n ? mv->v : NULL;
    p.n_messages = mv->n;
    p.success = 1;
    return event(h, CLARITY_EV_AGENT_END, &p, NULL);
}

/* Claude Code may write the turn's transcript lines only after the Stop hook
 * has started (2.1.x writes it asynchronously): a Stop polls this long for
 * the transcript to exist and end with last_assistant_message
 * ($CLARITY_STOP_WAIT_MS overrides it: a slow disk, or 0 for the fuzzer). */
#define STOP_WAIT_MS 400
#define STOP_POLL_MS 20

static int stop_wait_ms(void)
{
    const char *v = getenv("CLARITY_STOP_WAIT_MS");
    char *end;
    long ms = v && *v ? strtol(v, &end, 10) : -1;
    return v && *v && !*end && ms >= 0 && ms <= 10000 ? (int)ms : STOP_WAIT_MS;
}

/* Reads what the transcript gained since the state's offset into mv.
 * Returns 0, or -1 when it cannot be read (*why malloc()ed). */
static int collect_turn(hook *h, const hookstate *st, msgvec *mv, long long *end,
                        size_t *last_text, char **why)
{
    int resume = st->transcript && st->offset >= 0 && strcmp(st->transcript, h->transcript) == 0;
    int rc = transcript_collect(h->transcript, resume ? st->offset : 0,
                                resume ? 0 : TRANSCRIPT_SINCE_PROMPT, mv, end, last_text, why);
    if (rc == 1) /* rewritten since: read the last turn again */
        rc = transcript_collect(h->transcript, 0, TRANSCRIPT_SINCE_PROMPT, mv, end, last_text, why);
    return rc < 0 ? -1 : 0;
}

/* Collects the turn into mv (cleared first); *complete: it was read and
 * ends with the last assistant message (when there is one). */
static int collect_turn_once(hook *h, const hookstate *st, const char *last, size_t last_len, msgvec *mv,
                             long long *end, size_t *last_text, char **why, int *complete)
{
    free(*why);
    *why = NULL;
    msgvec_clear(mv);
    *end = -1;
    *last_text = (size_t)-1;
    int rc = collect_turn(h, st, mv, end, last_text, why);
    *complete = rc == 0 && (!last || !last_len || ends_with(mv, *last_text, last, last_len));
    return rc;
}

/* Collects the turn; with wait, polls (bounded) until the transcript can be
 * read and ends with the last assistant message. */
static int collect_turn_wait(hook *h, const hookstate *st, const char *last, size_t last_len,
                             int wait, msgvec *mv, long long *end, size_t *last_text, char **why)
{
    int bound = stop_wait_ms();
    for (int waited = 0;; waited += STOP_POLL_MS) {
        int complete;
        int rc = collect_turn_once(h, st, last, last_len, mv, end, last_text, why, &complete);
        if (complete || !wait || waited >= bound) return rc;
        struct timespec ts = {0, STOP_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* Ends a turn: the transcript since the offset, the recorded tool calls and
 * the last assistant message go to agent_end, and the state moves past them.
 * With defer (a Stop), an unreadable transcript does not end the turn: it is
 * left pending for the next hook of the session.  Without it (that next
 * hook), the turn ends with what was recorded. */
static void end_turn(hook *h, hookstate *st, const char *last, size_t last_len, int defer)
{
    msgvec mv;
    msgvec_init(&mv);
    long long end = -1;
    size_t last_text = (size_t)-1;
    int readable = 1;
    if (h->transcript && *h->transcript) {
        char *why = NULL;
        readable = collect_turn_wait(h, st, last, last_len, defer, &mv, &end, &last_text, &why) == 0;
        if (!readable && defer)
            warn("transcript %s; the turn stays pending until the next hook of the session",
                 why ? why : "unreadable");
        else if (!readable)
            warn("transcript %s; the pending turn ends without it", why ? why : "unreadable");
        free(why);
    }
    if (!readable && defer) {
        if (st->fd >= 0) {
            st->stop_pending = 1;
            free(st->last_message);
            st->last_message = last && last_len ? util_strndup(last, last_len) : NULL;
            if (hookstate_save(st) != 0) warn("hook state %s: %s", st->path, strerror(errno));
        }
        msgvec_free(&mv);
        return;
    }
    size_t i;
    json_t *e;
    json_array_foreach(st->pending, i, e)
    {
        const char *tool = str(e, "tool_name");
        json_t *input = json_object_get(e, "tool_input");
        if (tool && json_is_object(input)) push_tool(&mv, tool, input);
    }
    push_last(&mv, last_text, last, last_len);
    if (agent_end(h, &mv) == CLARITY_OK && st->fd >= 0) {
        if (end >= 0) {
            free(st->transcript);
            st->transcript = util_strdup(h->transcript);
            st->offset = st->transcript ? end : -1;
        }
        json_array_clear(st->pending);
        st->stop_pending = 0;
        free(st->last_message);
        st->last_message = NULL;
        if (hookstate_save(st) != 0) warn("hook state %s: %s", st->path, strerror(errno));
    }
    msgvec_free(&mv);
}

/* A turn whose Stop was deferred ends before anything else happens in the
 * session (a prompt, a compaction, the session's end, the next Stop). */
static void end_pending(hook *h, hookstate *st)
{
    if (st->fd < 0 || !st->stop_pending) return;
    const char *last = st->last_message;
    end_turn(h, st, last, last ? strlen(last) : 0, 0);
}

static void complete_deferred(hook *h)
{
    hookstate st;
    if (open_state(h, &st) == 0) end_pending(h, &st);
    hookstate_close(&st);
}

static void on_stop(hook *h)
{
    if (h->detached) return; /* the child ends the turn */
    hookstate st;
    if (h->held.fd >= 0) { /* locked before the plugin loaded, maybe by the parent */
        st = h->held;
        h->held = (hookstate){.fd = -1};
    } else {
        open_state(h, &st); /* without it: the last turn of the transcript, no pending calls */
    }
    end_pending(h, &st);
    json_t *last = json_object_get(h->in, "last_assistant_message");
    end_turn(h, &st, json_string_value(last), json_string_length(last), 1);
    hookstate_close(&st);
}

/* Whether the transcript already ends with the Stop's last message (one
 * read, no wait), or there is nothing to wait for. */
static int stop_transcript_ready(hook *h, const hookstate *st)
{
    json_t *last = json_object_get(h->in, "last_assistant_message");
    if (!h->transcript || !*h->transcript) return 1;
    msgvec mv;
    msgvec_init(&mv);
    long long end;
    size_t last_text;
    char *why = NULL;
    int ready;
    collect_turn_once(h, st, json_string_value(last), json_string_length(last), &mv, &end, &last_text, &why,
                      &ready);
    free(why);
    msgvec_free(&mv);
    return ready;
}

/* Where a detached Stop says what it has to say (stop_needs_plugin): a
 * log next to the hook states, started over past 64 KiB. */
#define STOP_LOG "stop.log"
#define STOP_LOG_MAX (64 * 1024)

static void detached_streams(hook *h)
{
    int null = open("/dev/null", O_RDWR);
    char *dir = hookstate_dir(h->c);
    buf path;
    buf_init(&path);
    if (dir) buf_printf(&path, "%s/" STOP_LOG, dir);
    int log = dir && !buf_failed(&path) ? open(path.p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;
    struct stat sb;
    if (log >= 0 && fstat(log, &sb) == 0 && sb.st_size > STOP_LOG_MAX && ftruncate(log, 0) != 0) {
        close(log);
        log = -1;
    }
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    if (log >= 0 || null >= 0) dup2(log >= 0 ? log : null, 2);
    if (null > 2) close(null);
    if (log > 2) close(log);
    buf_free(&path);
    free(dir);
}

/* Claude Code starts the Stop hook before it writes the turn's last lines
 * to the transcript, and waits for the hook: the wait for them (20 to 80 ms
 * in the end-to-end test, 2.1.330) held up the user's turn.  When the
 * transcript does not end with the turn yet, a child in a session of its
 * own waits and ends the turn, and the hook returns at once.  Its standard
 * streams are not Claude Code's pipes (nothing waits for them): stdin and
 * stdout on /dev/null, stderr on stop.log in the hook states' folder.  The
 * session's hook state is locked first and the child inherits the lock:
 * the session's next hook (a prompt) waits for the turn to end, as it did.
 * The fork comes before the plugin and its store are loaded.  Returns
 * whether this process runs the Stop (the child, or a Stop that needs no
 * wait, or one that could not fork), and so needs the plugin. */
static int stop_needs_plugin(hook *h)
{
    if (stop_wait_ms() == 0 || open_state(h, &h->held) != 0) return 1;
    if (stop_transcript_ready(h, &h->held)) return 1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 1; /* waits here, as before */
    if (pid > 0) {
        hookstate_close(&h->held); /* the child's copy keeps the lock */
        h->detached = 1;
        return 0;
    }
    setsid();
    detached_streams(h);
    /* the lock stays until the process has exited (a copy of the file
     * description no one closes): what waits for the session's hooks
     * waits for this one's shutdown too */
    (void)dup(h->held.fd);
    return 1;
}

static void on_subagent_stop(hook *h)
{
    json_t *type = json_object_get(h->in, "agent_type");
    if (json_is_string(type) && json_string_length(type) == 0) return; /* internal subagent */
    const char *path = str(h->in, "agent_transcript_path");
    msgvec mv;
    msgvec_init(&mv);
    size_t last_text = (size_t)-1;
    if (path && *path) {
        long long end;
        char *err = NULL;
        if (transcript_collect(path, 0, TRANSCRIPT_SINCE_PROMPT | TRANSCRIPT_SIDECHAIN, &mv, &end,
                               &last_text, &err) < 0)
            warn("subagent transcript %s", err ? err : "unreadable");
        free(err);
    }
    json_t *last = json_object_get(h->in, "last_assistant_message");
    push_last(&mv, last_text, json_string_value(last), json_string_length(last));
    agent_end(h, &mv);
    msgvec_free(&mv);
}

static void on_pre_compact(hook *h)
{
    complete_deferred(h);
    clarity_before_compaction p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.session_id = h->session;
    p.message_count = -1;
    p.token_count = -1;
    buf report;
    buf_init(&report);
    if (event(h, CLARITY_EV_BEFORE_COMPACTION, &p, &report) == CLARITY_OK && report.len)
        hostsvc_log(h->c->hs, CLARITY_LOG_INFO, "compaction (%s): %.*s",
                    str(h->in, "trigger") ? str(h->in, "trigger") : "?", (int)report.len, report.p);
    buf_free(&report);
    /* Claude Code 2.1 adds a PreCompact hook's stdout to the compaction's
     * custom instructions (undocumented: the e2e test pins the version) */
    json_t *params = json_pack("{s:s}", "session", h->session);
    json_t *r = params ? rpc(h, "clarity.keepList", params) : NULL;
    const char *text = json_string_value(json_object_get(r, "text"));
    if (text && *text) fputs(text, stdout);
    json_decref(params);
    json_decref(r);
}

static void on_post_compact(hook *h)
{
    const char *summary = str(h->in, "compact_summary");
    if (!summary || !*summary) return;
    json_t *params = json_pack("{s:s,s:s}", "session", h->session, "summary", summary);
    json_t *r = params ? rpc(h, "clarity.compacted", params) : NULL;
    size_t lost = json_array_size(json_object_get(r, "lost"));
    if (r)
        hostsvc_log(h->c->hs, CLARITY_LOG_INFO, "compaction: the summary lost %zu kept item(s); "
                    "the next block re-injects them", lost);
    json_decref(params);
    json_decref(r);
}

static void on_session_end(hook *h)
{
    complete_deferred(h);
    clarity_session_end p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.session_id = h->session;
    p.reason = str(h->in, "reason");
    event(h, CLARITY_EV_SESSION_END, &p, NULL);
}

/* ---- entry ---------------------------------------------------------------- */

/* A PostToolUse needs the plugin only for a Bash output it may trim: a
 * file tool's call is only recorded in the session's hook state, another
 * tool's is left alone.  Claude Code runs one process per tool call, and
 * loading the plugin and opening its store were most of such a process. */
static int tool_needs_plugin(hook *h)
{
    const char *tool = str(h->in, "tool_name");
    return tool && strcmp(tool, "Bash") == 0 && bash_may_trim(h);
}

/* The events the hook answers; needs NULL: the event always needs the
 * plugin loaded.  Any other event is ignored, without the plugin. */
static const struct {
    const char *name;
    void (*run)(hook *h);
    int (*needs)(hook *h);
} events[] = {
    {"UserPromptSubmit", on_prompt, NULL},   {"PostToolUse", on_tool, tool_needs_plugin},
    {"Stop", on_stop, stop_needs_plugin},    {"SubagentStop", on_subagent_stop, NULL},
    {"PreCompact", on_pre_compact, NULL},    {"PostCompact", on_post_compact, NULL},
    {"SessionStart", on_session_start, NULL}, {"SessionEnd", on_session_end, NULL},
};

int cli_hook(cli *c)
{
    size_t len = 0;
    char *text = util_read_stream(stdin, MAX_INPUT, &len);
    if (!text) {
        warn("cannot read the event from stdin (or it exceeds %zu bytes)", MAX_INPUT);
        return EXIT_OK;
    }
    json_error_t je;
    json_t *in = json_loadb(text, len, 0, &je);
    free(text);
    if (!json_is_object(in)) {
        warn("the event on stdin is not a JSON object (%s)", in ? "wrong type" : je.text);
        json_decref(in);
        return EXIT_OK;
    }
    hook h = {.c = c, .in = in, .limit = -1, .held = {.fd = -1}};
    c->host_flags |= CLARITY_HOST_BRIEF; /* a process per event */
    h.event = str(in, "hook_event_name");
    h.session = c->session ? c->session : str(in, "session_id");
    h.cwd = str(in, "cwd");
    h.transcript = str(in, "transcript_path");
    if (h.cwd && h.cwd[0] != '/') h.cwd = NULL;
    size_t k = 0;
    while (h.event && k < sizeof events / sizeof *events && strcmp(h.event, events[k].name) != 0) k++;
    if (!h.event || !h.session || !*h.session) {
        warn("the event lacks hook_event_name or session_id");
    } else if (k == sizeof events / sizeof *events) {
        hostsvc_log(c->hs, CLARITY_LOG_DEBUG, "hook: %s ignored", h.event);
    } else if ((!events[k].needs || events[k].needs(&h)) && cli_load_plugin(c) != 0) {
        /* said on stderr; a hook never fails the user's turn */
    } else {
        events[k].run(&h);
    }
    if (h.held.fd >= 0) hookstate_close(&h.held); /* (the plugin did not load) */
    json_decref(in);
    return EXIT_OK;
}
