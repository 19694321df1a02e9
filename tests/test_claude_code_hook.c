/* test_claude_code_hook.c: `clarity hook`, the Claude Code adapter, on recorded hook
 * payloads (tests/fixtures/claude/, written from the hooks documentation)
 * and a transcript in Claude Code's JSONL format. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../util/buf.h"
#include "clihelp.h"

#define SESSION "cc-fixture-1"

static char *tmp, *db, *transcript, *statefile;

static void setup(void)
{
    tmp = runproc_mkdtemp("clarity-hook-test");
    cr_assert_not_null(tmp);
    char *dir = runproc_join(tmp, "state");
    cr_assert_eq(mkdir(dir, 0700), 0);
    db = runproc_join(dir, "clarity.db");
    statefile = runproc_join(dir, "claude-code/" SESSION ".json");
    free(dir);
    transcript = runproc_join(tmp, "transcript.jsonl");
    clihelp_copy("tests/fixtures/claude/transcript.jsonl", transcript);
}

static void teardown(void)
{
    if (tmp) runproc_rmtree(tmp);
    free(tmp), free(db), free(transcript), free(statefile);
    tmp = db = transcript = statefile = NULL;
}

TestSuite(hook, .init = setup, .fini = teardown, .timeout = 120);

/* Runs `clarity hook` on a fixture; asserts exit 0. */
static void hook(const char *fixture, runproc_result *r)
{
    char *in = clihelp_fixture(fixture, transcript);
    const char *argv[] = {"hook", "--state", db, NULL};
    clihelp_run(r, in, NULL, argv);
    free(in);
    cr_assert_eq(r->status, 0, "%s: exit %d, stderr:\n%s", fixture, r->status, r->err);
}

static void hook_quiet(const char *fixture)
{
    runproc_result r;
    hook(fixture, &r);
    cr_assert_str_empty(r.out, "%s printed: %s", fixture, r.out);
    runproc_free(&r);
}

/* Runs `clarity hook` with argv on the event in; asserts that it exits 0
 * and prints nothing, and that stderr says needle (why it did nothing). */
static void expect_refused(const char *in, const char *const *argv, const char *needle)
{
    runproc_result r;
    clihelp_run(&r, in, NULL, argv);
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    cr_assert_str_empty(r.out, "printed %s", r.out);
    cr_assert_not_null(strstr(r.err, needle), "stderr lacks \"%s\": %s", needle, r.err);
    runproc_free(&r);
}

static json_t *scores(void)
{
    runproc_result r;
    const char *argv[] = {"rpc", "clarity.getScores", "{\"session\":\"" SESSION "\"}", "--state", db, NULL};
    clihelp_run(&r, NULL, NULL, argv);
    cr_assert_eq(r.status, 0, "getScores: %s %s", r.out, r.err);
    json_t *j = clihelp_json(r.out);
    runproc_free(&r);
    return j;
}

static json_t *item(json_t *s, const char *id)
{
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(s, "items"), i, it)
    {
        if (strcmp(json_string_value(json_object_get(it, "id")), id) == 0) return it;
    }
    return NULL;
}

static long long num(json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

/* Asserts that the session is at turn `turn` and tracks id with one
 * reference (what, for the message). */
static void expect_one_reference(const char *id, long long turn, const char *what)
{
    json_t *s = scores();
    cr_assert_eq(num(s, "currentTurn"), turn, "%s", what);
    json_t *it = item(s, id);
    cr_assert_not_null(it, "%s: %s is not tracked", what, id);
    cr_assert_eq(num(it, "referenceCount"), 1, "%s: %s", what, id);
    json_decref(s);
}

/* The additionalContext of a hook answer for event; asserts the shape. */
static const char *context_of(json_t *out, const char *event)
{
    json_t *h = json_object_get(out, "hookSpecificOutput");
    cr_assert(json_is_object(h), "no hookSpecificOutput");
    cr_assert_str_eq(json_string_value(json_object_get(h, "hookEventName")), event);
    const char *ctx = json_string_value(json_object_get(h, "additionalContext"));
    cr_assert_not_null(ctx);
    return ctx;
}

Test(hook, user_prompt_submit_answers_with_the_block)
{
    runproc_result r;
    hook("user_prompt_submit.json", &r);
    json_t *out = clihelp_json(r.out);
    const char *ctx = context_of(out, "UserPromptSubmit");
    cr_assert(strncmp(ctx, "[CLARITY CONTEXT]\n", 18) == 0, "%s", ctx);
    cr_assert_not_null(strstr(ctx, "claracore"), "%s", ctx);
    cr_assert_not_null(strstr(ctx, "file:src/auth/session.ts"), "workspace-relative: %s", ctx);
    cr_assert_not_null(strstr(ctx, "[/CLARITY CONTEXT]\n"));
    json_decref(out);
    runproc_free(&r);
}

Test(hook, post_tool_use_is_remembered_until_stop)
{
    hook_quiet("post_tool_use_read.json");
    char *st = clihelp_read(statefile);
    cr_assert_not_null(st, "no hook state at %s", statefile);
    json_t *j = clihelp_json(st);
    free(st);
    json_t *pending = json_object_get(j, "pending");
    cr_assert_eq(json_array_size(pending), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(pending, 0), "tool_name")), "Read");
    json_decref(j);

    /* not a turn: the session has no turn yet (or does not exist) */
    runproc_result r;
    const char *argv[] = {"rpc", "clarity.getScores", "{\"session\":\"" SESSION "\"}", "--state", db, NULL};
    clihelp_run(&r, NULL, NULL, argv);
    cr_assert(r.status != 0 || strstr(r.out, "\"currentTurn\":0"), "PostToolUse advanced the turn: %s", r.out);
    runproc_free(&r);

    hook_quiet("stop.json");
    expect_one_reference("file:src/db/pool.ts", 1, "the PostToolUse file");
    st = clihelp_read(statefile);
    j = clihelp_json(st);
    free(st);
    cr_assert_eq(json_array_size(json_object_get(j, "pending")), 0, "pending not cleared");
    json_decref(j);
}

/* A file tool's PostToolUse records the call without the plugin (Claude
 * Code runs a process per tool call; loading the plugin was most of it):
 * with a --plugin that cannot load it is still recorded, quietly, in the
 * same hook state, and the next Stop with the plugin takes it.  A prompt
 * with that --plugin is refused as before. */
Test(hook, post_tool_use_of_a_file_tool_needs_no_plugin)
{
    char *in = clihelp_fixture("post_tool_use_read.json", transcript);
    const char *argv[] = {"hook", "--state", db, "--plugin", "/nonexistent/libclarity.so", NULL};
    runproc_result r;
    clihelp_run(&r, in, NULL, argv);
    free(in);
    cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    cr_assert_str_empty(r.out);
    cr_assert_str_empty(r.err, "the plugin was looked for: %s", r.err);
    runproc_free(&r);
    char *st = clihelp_read(statefile);
    cr_assert_not_null(st, "no hook state at %s", statefile);
    json_t *j = clihelp_json(st);
    free(st);
    cr_assert_eq(json_array_size(json_object_get(j, "pending")), 1);
    json_decref(j);

    in = clihelp_fixture("user_prompt_submit.json", transcript);
    expect_refused(in, argv, "/nonexistent/libclarity.so");
    free(in);

    hook_quiet("stop.json");
    expect_one_reference("file:src/db/pool.ts", 1, "the call recorded without the plugin");
}

Test(hook, post_tool_use_ignores_non_file_tools)
{
    hook_quiet("post_tool_use_bash.json");
    char *st = clihelp_read(statefile);
    cr_assert(st == NULL || strstr(st, "Bash") == NULL, "recorded a Bash call: %s", st);
    free(st);
}

Test(hook, stop_takes_the_last_turn_of_the_transcript)
{
    runproc_result r;
    hook("user_prompt_submit.json", &r);
    runproc_free(&r);
    hook_quiet("stop.json");
    json_t *s = scores();
    cr_assert_eq(num(s, "currentTurn"), 1);
    json_t *sess = item(s, "file:src/auth/session.ts"), *tok = item(s, "file:src/auth/token.ts");
    cr_assert_not_null(sess);
    cr_assert_not_null(tok, "the Edit tool_use of the turn is not tracked");
    cr_assert_eq(num(sess, "referenceCount"), 1);
    cr_assert_eq(num(tok, "referenceCount"), 1);
    cr_assert_null(item(s, "file:src/legacy/old.ts"), "a tool_use of an earlier turn was counted");
    cr_assert_null(item(s, "file:src/sidechain/skip.ts"), "a sidechain line was counted");
    cr_assert_null(item(s, "file:src/thinking/ignored.ts"), "a thinking block was counted");
    json_decref(s);

    /* the next turn: only what the transcript gained since */
    clihelp_append("tests/fixtures/claude/transcript_turn3.jsonl", transcript);
    hook_quiet("stop_turn3.json");
    s = scores();
    cr_assert_eq(num(s, "currentTurn"), 2);
    json_t *routes = item(s, "file:src/api/routes.ts");
    cr_assert_not_null(routes, "the Write of the new turn is not tracked");
    cr_assert_eq(num(routes, "referenceCount"), 1);
    cr_assert_eq(num(item(s, "file:src/auth/token.ts"), "referenceCount"), 1,
                 "the previous turn was read again");
    json_decref(s);
    char *st = clihelp_read(statefile);
    json_t *j = clihelp_json(st);
    free(st);
    struct stat sb;
    cr_assert_eq(stat(transcript, &sb), 0);
    cr_assert_eq(num(j, "offset"), (long long)sb.st_size);
    cr_assert_str_eq(json_string_value(json_object_get(j, "transcript")), transcript);
    json_decref(j);
}

/* The tools' results reach the engine too: two pytest runs in one turn,
 * the second with no edit in between, show in clarity.progress. */
Test(hook, stop_reads_test_runs_from_tool_results)
{
    runproc_result r;
    hook("user_prompt_submit.json", &r);
    runproc_free(&r);
    hook_quiet("stop.json");
    clihelp_append("tests/fixtures/claude/transcript_tests.jsonl", transcript);
    hook_quiet("stop_tests.json");
    const char *argv[] = {"rpc", "clarity.progress", "{\"session\":\"" SESSION "\"}", "--state", db, NULL};
    clihelp_run(&r, NULL, NULL, argv);
    cr_assert_eq(r.status, 0, "progress: %s %s", r.out, r.err);
    json_t *j = clihelp_json(r.out);
    runproc_free(&r);
    json_t *runs = json_object_get(j, "runs");
    cr_assert_eq(json_array_size(runs), 2, "runs: %s", json_dumps(j, 0));
    json_t *second = json_array_get(runs, 1);
    cr_expect_str_eq(json_string_value(json_object_get(second, "command")), "pytest -q tests");
    cr_expect_eq(num(second, "passed"), 3);
    cr_expect_eq(num(second, "failed"), 1);
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(second, "failing"), 0)), "test_wire");
    cr_expect(json_is_false(json_object_get(second, "editsSincePrevious")));
    json_decref(j);
    json_t *s = scores();
    cr_expect_not_null(item(s, "test:test_wire"), "the failing test is not an item");
    json_decref(s);
}

/* What detached Stops said (their stderr): stop.log next to the states. */
static char *stop_log(void)
{
    char *dir = runproc_join(tmp, "state/claude-code/stop.log");
    char *text = clihelp_read(dir);
    free(dir);
    return text ? text : strdup("");
}

/* Waits until no hook of the session holds its hook state: a Stop whose
 * transcript was not complete left its turn to a detached child, which
 * holds the state's lock until it has exited.  Its stderr went to
 * stop.log: under ASan and UBSan a report lands there, and fails here. */
static void wait_for_hooks(void)
{
    int fd = open(statefile, O_RDWR);
    cr_assert_geq(fd, 0, "no hook state at %s", statefile);
    cr_assert_eq(flock(fd, LOCK_EX), 0);
    close(fd);
    char *said = stop_log();
    cr_assert(!strstr(said, "Sanitizer") && !strstr(said, "runtime error"), "a detached Stop: %s", said);
    free(said);
}

/* A prompt, then a Stop whose transcript (named `name`, in tmp) is not
 * written yet, its child waiting up to wait_ms for it: the Stop's process
 * prints nothing, on stdout or stderr.  Returns the fixture transcript's
 * path, which the test frees. */
static char *stop_before_transcript(const char *name, const char *wait_ms)
{
    setenv("CLARITY_STOP_WAIT_MS", wait_ms, 1);
    char *real = transcript;
    transcript = runproc_join(tmp, name);
    runproc_result r;
    hook("user_prompt_submit.json", &r);
    runproc_free(&r);
    hook("stop.json", &r);
    cr_assert_str_empty(r.out);
    cr_assert_str_empty(r.err, "the Stop's process said: %s", r.err);
    runproc_free(&r);
    return real;
}

/* Claude Code 2.1.x may write the transcript after the Stop hook started: a
 * Stop that cannot read it does not advance the turn (it says so, in
 * stop.log: the hook returned at once and its child waited), and the next
 * hook of the session ends that turn first, exactly once. */
Test(hook, stop_without_transcript_defers_the_turn_to_the_next_hook)
{
    char *real = stop_before_transcript("later.jsonl", "60");
    runproc_result r;
    wait_for_hooks();
    char *said = stop_log();
    cr_assert_not_null(strstr(said, "later.jsonl"), "no warning about the transcript: %s", said);
    cr_assert_not_null(strstr(said, "pending"), "the warning does not say the turn waits: %s", said);
    free(said);
    json_t *s = scores();
    cr_assert_eq(num(s, "currentTurn"), 0, "a Stop without its transcript advanced the turn");
    json_decref(s);

    /* the transcript arrives; the next prompt ends the pending turn from it */
    clihelp_copy("tests/fixtures/claude/transcript.jsonl", transcript);
    hook("user_prompt_submit.json", &r);
    runproc_free(&r);
    s = scores();
    cr_assert_eq(num(s, "currentTurn"), 1);
    cr_assert_eq(num(item(s, "file:src/auth/token.ts"), "referenceCount"), 1,
                 "the deferred turn did not read the transcript");
    json_decref(s);

    /* the next Stop reads only what came after: nothing is counted twice */
    clihelp_append("tests/fixtures/claude/transcript_turn3.jsonl", transcript);
    hook_quiet("stop_turn3.json");
    s = scores();
    cr_assert_eq(num(s, "currentTurn"), 2);
    cr_assert_eq(num(item(s, "file:src/auth/token.ts"), "referenceCount"), 1, "counted twice");
    cr_assert_eq(num(item(s, "file:src/api/routes.ts"), "referenceCount"), 1);
    json_decref(s);
    free(real);
}

Test(hook, a_transcript_that_never_comes_ends_the_turn_at_the_next_hook)
{
    free(transcript);
    transcript = runproc_join(tmp, "missing.jsonl");
    runproc_result r;
    hook("user_prompt_submit.json", &r);
    runproc_free(&r);
    hook("stop.json", &r);
    runproc_free(&r);
    hook("session_end.json", &r);
    cr_assert_not_null(strstr(r.err, "missing.jsonl"), "no warning: %s", r.err);
    runproc_free(&r);
    wait_for_hooks();
    json_t *s = scores();
    cr_assert_eq(num(s, "currentTurn"), 1, "the pending turn was lost");
    cr_assert_eq(num(item(s, "file:src/auth/session.ts"), "referenceCount"), 1,
                 "the deferred last_assistant_message was not used");
    json_decref(s);
    char *st = clihelp_read(statefile);
    json_t *j = clihelp_json(st);
    free(st);
    cr_assert(json_object_get(j, "stopPending") == NULL, "still pending after SessionEnd");
    json_decref(j);
}

/* The transcript is written after the Stop hook started: the hook returns
 * before it comes (the transcript is written only once the hook's process
 * has exited), and the child it left waits for it and ends the turn. */
Test(hook, stop_returns_at_once_and_its_turn_ends_when_the_transcript_comes)
{
    char *real = stop_before_transcript("soon.jsonl", "10000"); /* no deferral, however slow the machine */
    clihelp_copy("tests/fixtures/claude/transcript.jsonl", transcript);
    wait_for_hooks();
    json_t *s = scores();
    cr_assert_eq(num(s, "currentTurn"), 1);
    cr_assert_eq(num(item(s, "file:src/auth/token.ts"), "referenceCount"), 1,
                 "the Stop's turn did not wait for its transcript");
    json_decref(s);
    char *st = clihelp_read(statefile);
    json_t *j = clihelp_json(st);
    free(st);
    struct stat sb;
    cr_assert_eq(stat(transcript, &sb), 0);
    cr_assert_eq(num(j, "offset"), (long long)sb.st_size);
    json_decref(j);
    free(real);
}

/* The session's next prompt waits for the turn a detached Stop is ending:
 * its mentions land in the next turn (ClaraCore's last mention is turn 1),
 * not in the turn still open. */
Test(hook, the_next_prompt_waits_for_the_turn_a_stop_left_to_its_child)
{
    char *real = stop_before_transcript("soon.jsonl", "10000");
    pid_t pid = fork(); /* the transcript comes while the next prompt's process waits */
    cr_assert(pid >= 0);
    if (pid == 0) {
        struct timespec ts = {0, 150 * 1000000L};
        nanosleep(&ts, NULL);
        clihelp_copy("tests/fixtures/claude/transcript.jsonl", transcript);
        _exit(0);
    }
    runproc_result r;
    hook("user_prompt_submit.json", &r);
    runproc_free(&r);
    int status;
    waitpid(pid, &status, 0);
    json_t *s = scores();
    cr_assert_eq(num(s, "currentTurn"), 1);
    cr_assert_eq(num(item(s, "file:src/auth/token.ts"), "referenceCount"), 1);
    cr_assert_eq(num(item(s, "claracore"), "lastMentionTurn"), 1, "the prompt ran before the Stop's turn ended");
    json_decref(s);
    wait_for_hooks();
    free(real);
}

Test(hook, subagent_stop_reads_the_agent_transcript)
{
    runproc_result r;
    hook("user_prompt_submit.json", &r);
    runproc_free(&r);
    hook_quiet("subagent_stop.json");
    expect_one_reference("file:src/net/retry.ts", 1, "the subagent's tool_use");
    /* Claude Code's own subagents (compaction: empty agent_type) are not turns */
    hook_quiet("subagent_stop_internal.json");
    json_t *s = scores();
    cr_assert_eq(num(s, "currentTurn"), 1);
    cr_assert_null(item(s, "file:src/summary/only.ts"));
    json_decref(s);
}

Test(hook, pre_compact_and_session_start_compact)
{
    runproc_result r;
    hook("user_prompt_submit.json", &r);
    runproc_free(&r);
    hook_quiet("stop.json");
    /* the keep list on stdout: Claude Code adds it to the summarizer's
     * instructions */
    hook("pre_compact.json", &r);
    cr_assert(strncmp(r.out, "Keep these (clarity", 19) == 0, "%s", r.out);
    cr_assert_not_null(strstr(r.out, "\n- file:src/auth/session.ts\n"), "%s", r.out);
    runproc_free(&r);
    json_t *s = scores();
    cr_assert_eq(num(s, "currentTurn"), 1, "PreCompact is not a turn");
    json_decref(s);
    hook("session_start_compact.json", &r);
    json_t *out = clihelp_json(r.out);
    const char *ctx = context_of(out, "SessionStart");
    cr_assert_not_null(strstr(ctx, "[CLARITY CONTEXT]"));
    cr_assert_not_null(strstr(ctx, "file:src/auth/session.ts"), "%s", ctx);
    json_decref(out);
    runproc_free(&r);
    hook_quiet("session_start_startup.json");
}

/* PostCompact: the kept items the summary does not name come back in the
 * next prompt's block, until the turn that showed them ends. */
Test(hook, post_compact_reinjects_what_the_summary_lost)
{
    runproc_result r;
    hook("user_prompt_submit.json", &r);
    runproc_free(&r);
    hook_quiet("stop.json");
    hook_quiet("post_compact.json");
    hook("user_prompt_submit.json", &r);
    json_t *out = clihelp_json(r.out);
    const char *ctx = context_of(out, "UserPromptSubmit");
    const char *lost = strstr(ctx, "Kept through the compaction (its summary left them out):\n");
    cr_assert_not_null(lost, "%s", ctx);
    cr_assert_not_null(strstr(lost, "- file:src/auth/session.ts ("), "%s", ctx);
    cr_assert_null(strstr(lost, "- claracore"), "the summary names ClaraCore: %s", ctx);
    cr_assert_null(strstr(lost, "token.ts"), "the summary names the token code: %s", ctx);
    json_decref(out);
    runproc_free(&r);
    hook_quiet("stop.json"); /* the turn that showed them ends */
    hook("user_prompt_submit.json", &r);
    cr_assert_null(strstr(r.out, "Kept through the compaction"), "shown again: %s", r.out);
    runproc_free(&r);
}

/* A PostToolUse payload for Bash with the given stdout. */
static char *bash_payload(const char *stdout_text, int is_image)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:{s:s},s:{s:s,s:s,s:b,s:b,s:s},s:s}", "session_id",
                          SESSION, "transcript_path", transcript, "cwd", "/home/dev/proj",
                          "hook_event_name", "PostToolUse", "tool_name", "Bash", "tool_input",
                          "command", "make test", "tool_response", "stdout", stdout_text, "stderr",
                          "warning: slow\n", "interrupted", 0, "isImage", is_image,
                          "returnCodeInterpretation", "exit 2", "tool_use_id", "toolu_big");
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

/* An oversized Bash output comes back trimmed in its own shape: head,
 * tail, the lines naming tracked items, markers; small ones are left. */
Test(hook, bash_output_over_max_chars_is_trimmed)
{
    runproc_result r;
    hook("user_prompt_submit.json", &r); /* tracks file:src/auth/session.ts */
    runproc_free(&r);
    buf big;
    buf_init(&big);
    for (int i = 0; i < 6000; i++) {
        if (i == 3000) buf_puts(&big, "FAIL src/auth/session.ts:42 expected a token\n");
        else buf_printf(&big, "ok %d - test case number %d passed quietly\n", i, i);
    }
    char *in = bash_payload(big.p, 0);
    const char *argv[] = {"hook", "--state", db, NULL};
    clihelp_run(&r, in, NULL, argv);
    free(in);
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *out = clihelp_json(r.out);
    json_t *h = json_object_get(out, "hookSpecificOutput");
    cr_assert_str_eq(json_string_value(json_object_get(h, "hookEventName")), "PostToolUse");
    json_t *upd = json_object_get(h, "updatedToolOutput");
    const char *so = json_string_value(json_object_get(upd, "stdout"));
    cr_assert_not_null(so, "%s", r.out);
    cr_assert_leq(strlen(so) + strlen(json_string_value(json_object_get(upd, "stderr"))), 20000);
    cr_assert(strncmp(so, "ok 0 - ", 7) == 0, "the head is gone: %.200s", so);
    cr_assert_not_null(strstr(so, "\nFAIL src/auth/session.ts:42 expected a token\n"), "the hot line is gone");
    cr_assert_not_null(strstr(so, "ok 5999 - "), "the tail is gone");
    cr_assert_not_null(strstr(so, " lines elided ("), "no marker");
    cr_assert_not_null(strstr(so, "[clarity: "), "no summary line");
    cr_assert_str_eq(json_string_value(json_object_get(upd, "stderr")), "warning: slow\n");
    cr_assert(json_is_false(json_object_get(upd, "interrupted")));
    cr_assert_str_eq(json_string_value(json_object_get(upd, "returnCodeInterpretation")), "exit 2",
                     "the output's other fields must stay");
    json_decref(out);
    runproc_free(&r);

    /* Claude Code saved the whole output to a file (stdout holds its first
     * part): the whole output is trimmed, the file is named, and the saved
     * output fields go (Claude Code would show its own preview instead) */
    char *saved = runproc_join(tmp, "saved-output.txt");
    cr_assert_eq(runproc_write_file(saved, big.p), 0);
    char *first = bash_payload("ok 0 - test case number 0 passed quietly\n", 0);
    json_t *o = json_loads(first, 0, NULL);
    free(first);
    json_t *resp = json_object_get(o, "tool_response");
    json_object_set_new(resp, "persistedOutputPath", json_string(saved));
    json_object_set_new(resp, "persistedOutputSize", json_integer((json_int_t)big.len));
    in = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    clihelp_run(&r, in, NULL, argv);
    free(in);
    out = clihelp_json(r.out);
    upd = json_object_get(json_object_get(out, "hookSpecificOutput"), "updatedToolOutput");
    so = json_string_value(json_object_get(upd, "stdout"));
    cr_assert_not_null(so, "%s", r.out);
    cr_assert_not_null(strstr(so, "\nFAIL src/auth/session.ts:42 expected a token\n"), "not the whole output");
    cr_assert_not_null(strstr(so, "ok 5999 - "), "not the whole output");
    char note[600];
    snprintf(note, sizeof note, "[clarity: the whole output (%zu characters) is in %s]\n", big.len, saved);
    cr_assert_not_null(strstr(so, note), "%s", so + strlen(so) - 300);
    cr_assert_null(json_object_get(upd, "persistedOutputPath"));
    cr_assert_null(json_object_get(upd, "persistedOutputSize"));
    json_decref(out);
    runproc_free(&r);
    free(saved);

    /* an image, or an output under the limit: nothing printed */
    in = bash_payload(big.p, 1);
    clihelp_run(&r, in, NULL, argv);
    free(in);
    cr_assert_str_empty(r.out, "an image output was rewritten: %.200s", r.out);
    runproc_free(&r);
    in = bash_payload("short output\n", 0);
    clihelp_run(&r, in, NULL, argv);
    free(in);
    cr_assert_str_empty(r.out, "a small output was rewritten: %.200s", r.out);
    runproc_free(&r);
    buf_free(&big);
}

/* A Bash output no longer than toolOutput.maxChars is not trimmed: its
 * process loads no plugin (a --plugin that cannot load stays silent),
 * while a longer one tries to.  The limit is the config's: with
 * maxChars 1000 a 1,500-byte output is trimmed; a limit out of range
 * loads the plugin, which refuses it and says why. */
Test(hook, bash_output_within_the_limit_needs_no_plugin)
{
    const char *bad[] = {"hook", "--state", db, "--plugin", "/nonexistent/libclarity.so", NULL};
    runproc_result r;
    char *in = bash_payload("short output\n", 0);
    clihelp_run(&r, in, NULL, bad);
    free(in);
    cr_assert_eq(r.status, 0);
    cr_assert_str_empty(r.err, "the plugin was looked for: %s", r.err);
    runproc_free(&r);
    buf big;
    buf_init(&big);
    while (big.len <= 20000) buf_puts(&big, "ok - a test case passed quietly\n");
    in = bash_payload(big.p, 0);
    expect_refused(in, bad, "/nonexistent/libclarity.so"); /* over the limit: the plugin is looked for */
    free(in);

    buf mid;
    buf_init(&mid);
    for (int i = 0; mid.len <= 1500; i++) buf_printf(&mid, "line %d of a middling output\n", i);
    char *cfg = runproc_join(tmp, "small-limit.json"), *odd = runproc_join(tmp, "odd-limit.json");
    cr_assert_eq(runproc_write_file(cfg, "{\"toolOutput\":{\"maxChars\":1000}}"), 0);
    cr_assert_eq(runproc_write_file(odd, "{\"toolOutput\":{\"maxChars\":5}}"), 0);
    const char *small[] = {"hook", "--state", db, "--config", cfg, NULL};
    in = bash_payload(mid.p, 0);
    clihelp_run(&r, in, NULL, small);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "updatedToolOutput"), "not trimmed to the config's 1000: %s", r.err);
    runproc_free(&r);
    const char *refused[] = {"hook", "--state", db, "--config", odd, NULL};
    expect_refused(in, refused, "maxChars"); /* a limit out of range is said */
    free(in);
    free(cfg), free(odd);
    buf_free(&mid);
    buf_free(&big);
}

Test(hook, session_end_and_other_events_are_quiet)
{
    runproc_result r;
    hook("user_prompt_submit.json", &r);
    runproc_free(&r);
    hook_quiet("stop.json");
    hook_quiet("session_end.json");
    hook_quiet("notification.json");
    json_t *s = scores(); /* persisted */
    cr_assert_not_null(item(s, "claracore"));
    json_decref(s);
}

Test(hook, errors_never_block_the_user)
{
    const char *inputs[] = {"not json", "[1,2]", "{\"hook_event_name\":\"Stop\"}",
                            "{\"session_id\":\"x\"}", ""};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        runproc_result r;
        const char *argv[] = {"hook", "--state", db, NULL};
        clihelp_run(&r, inputs[i], NULL, argv);
        cr_assert_eq(r.status, 0, "input %zu: exit %d", i, r.status);
        cr_assert_str_empty(r.out, "input %zu printed %s", i, r.out);
        cr_assert_not_null(strstr(r.err, "clarity"), "input %zu: no message on stderr", i);
        runproc_free(&r);
    }
    /* a plugin that cannot load, a state database that cannot open */
    char *in = clihelp_fixture("user_prompt_submit.json", transcript);
    const char *bad_plugin[] = {"hook", "--state", db, "--plugin", "/nonexistent/libclarity.so", NULL};
    const char *bad_state[] = {"hook", "--state", "/proc/no/such/dir/clarity.db", NULL};
    const char *const *cases[] = {bad_plugin, bad_state};
    for (int k = 0; k < 2; k++) {
        runproc_result r;
        clihelp_run(&r, in, NULL, cases[k]);
        cr_assert_eq(r.status, 0, "case %d: exit %d (%s)", k, r.status, r.err);
        cr_assert_str_empty(r.out);
        cr_assert(r.err_len > 0, "case %d: silent failure", k);
        runproc_free(&r);
    }
    free(in);
}

Test(hook, additional_context_stays_under_10000_characters)
{
    /* a config that allows a huge block, and several hundred long file names */
    char *cfg = runproc_join(tmp, "big.json");
    cr_assert_eq(runproc_write_file(cfg, "{\"context\":{\"maxChars\":1000000,\"maxItems\":1000}}"), 0);
    size_t cap = 1 << 20, len = 0;
    char *prompt = malloc(cap);
    cr_assert_not_null(prompt);
    len += (size_t)snprintf(prompt, cap, "{\"session_id\":\"big\",\"cwd\":\"/home/dev/proj\","
                                         "\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"Look at");
    for (int i = 0; i < 400; i++)
        len += (size_t)snprintf(prompt + len, cap - len,
                                " src/a_rather_long_directory_name/with_nested_parts/module_%03d/component_%03d.ts", i, i);
    snprintf(prompt + len, cap - len, "\"}");
    runproc_result r;
    const char *argv[] = {"hook", "--state", db, "--config", cfg, NULL};
    clihelp_run(&r, prompt, NULL, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *out = clihelp_json(r.out);
    const char *ctx = context_of(out, "UserPromptSubmit");
    size_t chars = 0;
    for (const unsigned char *p = (const unsigned char *)ctx; *p; p++) chars += (*p & 0xc0) != 0x80;
    cr_assert(chars <= 10000, "%zu characters", chars);
    cr_assert(chars > 5000, "the block was cut too much: %zu", chars);
    size_t n = strlen(ctx);
    cr_assert(n > 19 && strcmp(ctx + n - 19, "[/CLARITY CONTEXT]\n") == 0, "not closed: ...%s", ctx + n - 40);
    json_decref(out);
    runproc_free(&r);
    free(prompt);
    free(cfg);
}
