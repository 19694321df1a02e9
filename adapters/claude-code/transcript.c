/* transcript.c: a Claude Code transcript (JSONL) as the turn's messages:
 * the assistant's text and tool calls, and the tools' results (role "tool",
 * read by the progress signal for test runs). */
#include "transcript.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../util/buf.h"

#define MAX_READ ((long long)32 << 20)

static char *errno_msg(const char *path)
{
    buf b;
    buf_init(&b);
    buf_printf(&b, "%s: %s", path, strerror(errno));
    return buf_steal(&b, NULL);
}

/* A user line that starts a turn: a typed prompt, not a tool result, not a
 * meta line Claude Code adds on its own. */
static int is_prompt(json_t *line, json_t *msg)
{
    if (json_is_true(json_object_get(line, "isMeta"))) return 0;
    json_t *content = json_object_get(msg, "content");
    if (json_is_string(content)) return 1;
    if (!json_is_array(content)) return 0;
    size_t i;
    json_t *b;
    json_array_foreach(content, i, b)
    {
        const char *t = json_string_value(json_object_get(b, "type"));
        if (t && strcmp(t, "tool_result") == 0) return 0;
    }
    return json_array_size(content) > 0;
}

static int push_role(msgvec *mv, const char *role, const char *text, size_t tlen, const char *tool,
                     json_t *input)
{
    json_t *m = json_object();
    if (!m) return -1;
    json_object_set_new(m, "role", json_string(role));
    json_object_set_new(m, "text", json_string_lossy(text ? text : "", text ? tlen : 0));
    if (tool) json_object_set_new(m, "tool_name", json_string_lossy(tool, strlen(tool)));
    if (input && json_is_object(input)) json_object_set(m, "tool_args", input);
    const char *why;
    int rc = msgvec_push_json(mv, m, &why);
    json_decref(m);
    return rc;
}

static int push(msgvec *mv, const char *text, size_t tlen, const char *tool, json_t *input)
{
    return push_role(mv, "assistant", text, tlen, tool, input);
}

/* The text of a tool_result block: a string, or text blocks joined. */
static int push_result(msgvec *mv, json_t *block)
{
    json_t *c = json_object_get(block, "content");
    if (json_is_string(c)) return push_role(mv, "tool", json_string_value(c), json_string_length(c), NULL, NULL);
    buf b;
    buf_init(&b);
    size_t i;
    json_t *part;
    json_array_foreach(c, i, part)
    {
        json_t *t = json_object_get(part, "text");
        if (!json_is_string(t)) continue;
        if (b.len) buf_putc(&b, '\n');
        buf_append(&b, json_string_value(t), json_string_length(t));
    }
    int rc = buf_failed(&b) ? -1 : b.len ? push_role(mv, "tool", b.p, b.len, NULL, NULL) : 0;
    buf_free(&b);
    return rc;
}

/* A user line holding tool results. */
static int take_results(json_t *msg, msgvec *mv)
{
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(msg, "content"), i, b)
    {
        const char *t = json_string_value(json_object_get(b, "type"));
        if (t && strcmp(t, "tool_result") == 0 && push_result(mv, b) != 0) return -1;
    }
    return 0;
}

/* One transcript line; *reset is set when it is a prompt. */
static int take_line(json_t *line, int flags, msgvec *mv, size_t *last_text, int *reset)
{
    if (!json_is_object(line)) return 0;
    if (!(flags & TRANSCRIPT_SIDECHAIN) && json_is_true(json_object_get(line, "isSidechain")))
        return 0;
    const char *type = json_string_value(json_object_get(line, "type"));
    json_t *msg = json_object_get(line, "message");
    if (!type || !json_is_object(msg)) return 0;
    if (strcmp(type, "user") == 0) {
        if (is_prompt(line, msg)) *reset = 1;
        else if (!json_is_true(json_object_get(line, "isMeta"))) return take_results(msg, mv);
        return 0;
    }
    if (strcmp(type, "assistant") != 0) return 0;
    json_t *content = json_object_get(msg, "content");
    if (json_is_string(content)) {
        *last_text = mv->n;
        return push(mv, json_string_value(content), json_string_length(content), NULL, NULL);
    }
    size_t i;
    json_t *b;
    json_array_foreach(content, i, b)
    {
        const char *bt = json_string_value(json_object_get(b, "type"));
        if (!bt) continue;
        if (strcmp(bt, "text") == 0) {
            json_t *t = json_object_get(b, "text");
            if (!json_is_string(t) || json_string_length(t) == 0) continue;
            *last_text = mv->n;
            if (push(mv, json_string_value(t), json_string_length(t), NULL, NULL) != 0) return -1;
        } else if (strcmp(bt, "tool_use") == 0) {
            const char *name = json_string_value(json_object_get(b, "name"));
            if (name && push(mv, "", 0, name, json_object_get(b, "input")) != 0) return -1;
        }
    }
    return 0;
}

int transcript_collect(const char *path, long long start, int flags, msgvec *mv,
                       long long *end, size_t *last_text, char **err)
{
    size_t lt = (size_t)-1;
    if (last_text) *last_text = lt;
    *end = start;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *err = errno_msg(path);
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        *err = errno_msg(path);
        close(fd);
        return -1;
    }
    long long size = (long long)sb.st_size;
    if (start > size) {
        close(fd);
        return 1;
    }
    long long from = start;
    int skip_partial = 0;
    if (size - from > MAX_READ) {
        from = size - MAX_READ;
        skip_partial = 1;
    }
    size_t n = (size_t)(size - from);
    char *data = malloc(n + 1);
    if (!data) {
        close(fd);
        *err = util_strdup("out of memory");
        return -1;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, data + got, n - got, (off_t)(from + (long long)got));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    msgvec turn; /* this call's messages; a prompt starts it over */
    msgvec_init(&turn);
    size_t pos = 0;
    if (skip_partial) {
        char *nl = memchr(data, '\n', got);
        pos = nl ? (size_t)(nl - data) + 1 : got;
    }
    int rc = 0;
    while (pos < got && rc == 0) {
        char *nl = memchr(data + pos, '\n', got - pos);
        if (!nl) break; /* a line still being written: next time */
        size_t len = (size_t)(nl - (data + pos));
        json_t *line = len ? json_loadb(data + pos, len, 0, NULL) : NULL;
        int reset = 0;
        if (line && take_line(line, flags, &turn, &lt, &reset) != 0) rc = -1;
        json_decref(line);
        if (reset && (flags & TRANSCRIPT_SINCE_PROMPT)) {
            msgvec_clear(&turn);
            lt = (size_t)-1;
        }
        pos = (size_t)(nl - data) + 1;
    }
    size_t base = mv->n;
    for (size_t i = 0; rc == 0 && i < turn.n; i++)
        if (msgvec_push_from(mv, &turn, i) != 0) rc = -1;
    if (lt != (size_t)-1) lt += base;
    msgvec_free(&turn);
    free(data);
    *end = from + (long long)pos;
    if (last_text) *last_text = lt;
    if (rc != 0) *err = util_strdup("out of memory");
    return rc;
}
