/* install.c: `clarity install claude-code [--project DIR | --user] [--uninstall]`.
 *
 * Merges clarity's hook entries into .claude/settings.json (DIR, default the
 * current directory) or ~/.claude/settings.json (--user) and writes the
 * /clarity slash command (.claude/commands/clarity.md).  Every other setting
 * and hook is kept.  Our entries are the command hooks whose command runs a
 * program named "clarity" with "hook" as its first argument; installing
 * first removes them, so running it again changes nothing, and --uninstall
 * removes exactly those (and the command file when we wrote it).  The
 * command is the absolute path of this clarity binary, followed by the
 * --config/--state/--plugin/--host-kv options given to install.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../util/buf.h"
#include "../../util/fs.h"
#include "claude_code.h"

#define MARKER "# managed by `clarity install claude-code`"

static const struct {
    const char *event, *matcher;
    int timeout;
} ours[] = {
    {"UserPromptSubmit", NULL, 10},
    {"PostToolUse", "Read|Edit|Write|MultiEdit|NotebookEdit|Bash", 10},
    {"Stop", NULL, 30},
    {"SubagentStop", NULL, 30},
    {"PreCompact", NULL, 30},
    {"PostCompact", NULL, 10},
    {"SessionStart", "compact", 10},
    {"SessionEnd", NULL, 10},
};

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("clarity install: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return EXIT_FAIL;
}

/* ---- shell words ------------------------------------------------------------ */

static void shell_quote(buf *b, const char *s)
{
    int plain = *s != '\0';
    for (const char *p = s; *p; p++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+=:,@%", *p))
            plain = 0;
    if (plain) {
        buf_puts(b, s);
        return;
    }
    buf_putc(b, '\'');
    for (const char *p = s; *p; p++) {
        if (*p == '\'') buf_puts(b, "'\\''");
        else buf_putc(b, *p);
    }
    buf_putc(b, '\'');
}

/* The first two words of a POSIX shell command (quotes and backslashes
 * undone; enough to recognize our own command). */
static int first_words(const char *cmd, buf *w0, buf *w1)
{
    buf *w[2] = {w0, w1};
    const char *p = cmd;
    for (int k = 0; k < 2; k++) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) return k;
        while (*p && *p != ' ' && *p != '\t' && *p != ';' && *p != '&' && *p != '|') {
            if (*p == '\'') {
                const char *e = strchr(p + 1, '\'');
                if (!e) return k;
                buf_append(w[k], p + 1, (size_t)(e - p - 1));
                p = e + 1;
            } else if (*p == '"') {
                for (p++; *p && *p != '"'; p++) {
                    if (*p == '\\' && p[1]) p++;
                    buf_putc(w[k], *p);
                }
                if (*p) p++;
            } else {
                if (*p == '\\' && p[1]) p++;
                buf_putc(w[k], *p++);
            }
        }
        buf_putc(w[k], '\0');
        w[k]->len--;
    }
    return 2;
}

static int is_ours(json_t *hook)
{
    const char *cmd = json_string_value(json_object_get(hook, "command"));
    if (!cmd) return 0;
    buf w0, w1;
    buf_init(&w0);
    buf_init(&w1);
    int n = first_words(cmd, &w0, &w1);
    int r = 0;
    if (n == 2 && w0.p && w1.p) {
        const char *base = strrchr(w0.p, '/');
        base = base ? base + 1 : w0.p;
        r = strcmp(base, "clarity") == 0 && strcmp(w1.p, "hook") == 0;
    }
    buf_free(&w0);
    buf_free(&w1);
    return r;
}

/* ---- settings --------------------------------------------------------------- */

/* Removes our hook entries; returns how many. */
static size_t remove_ours(json_t *settings)
{
    json_t *hooks = json_object_get(settings, "hooks");
    if (!json_is_object(hooks)) return 0;
    size_t removed = 0;
    const char *event;
    json_t *groups;
    void *it_tmp;
    json_object_foreach_safe(hooks, it_tmp, event, groups)
    {
        if (!json_is_array(groups)) continue;
        size_t before = removed;
        for (size_t g = json_array_size(groups); g-- > 0;) {
            json_t *list = json_object_get(json_array_get(groups, g), "hooks");
            if (!json_is_array(list)) continue;
            size_t mine = 0;
            for (size_t i = json_array_size(list); i-- > 0;) {
                if (!is_ours(json_array_get(list, i))) continue;
                json_array_remove(list, i);
                mine++;
            }
            removed += mine;
            if (mine && json_array_size(list) == 0) json_array_remove(groups, g);
        }
        if (removed > before && json_array_size(groups) == 0) json_object_del(hooks, event);
    }
    if (removed && json_object_size(hooks) == 0) json_object_del(settings, "hooks");
    return removed;
}

static int add_ours(json_t *settings, const char *command)
{
    json_t *hooks = json_object_get(settings, "hooks");
    if (!hooks) {
        hooks = json_object();
        if (!hooks || json_object_set_new(settings, "hooks", hooks) != 0) return -1;
    }
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++) {
        json_t *groups = json_object_get(hooks, ours[i].event);
        if (!groups) {
            groups = json_array();
            if (!groups || json_object_set_new(hooks, ours[i].event, groups) != 0) return -1;
        }
        json_t *group = json_pack("{s:[{s:s,s:s,s:i}]}", "hooks", "type", "command", "command",
                                  command, "timeout", ours[i].timeout);
        if (!group) return -1;
        if (ours[i].matcher) {
            /* matcher first, as the documentation writes it */
            json_t *g2 = json_pack("{s:s,s:O}", "matcher", ours[i].matcher, "hooks",
                                   json_object_get(group, "hooks"));
            json_decref(group);
            group = g2;
            if (!group) return -1;
        }
        if (json_array_append_new(groups, group) != 0) return -1;
    }
    return 0;
}

static char *join(const char *a, const char *b)
{
    buf x;
    buf_init(&x);
    buf_printf(&x, "%s/%s", a, b);
    return buf_steal(&x, NULL);
}

/* An option's path made absolute (the hooks run in other directories). */
static char *abs_path(const char *p)
{
    if (p[0] == '/') return util_strdup(p);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return NULL;
    return join(cwd, p);
}

/* "<this clarity> <sub> [options]" with every word quoted as needed. */
static char *command_line(cli *c, const char *sub)
{
    char *exe = realpath("/proc/self/exe", NULL);
    if (!exe) return NULL;
    buf b;
    buf_init(&b);
    shell_quote(&b, exe);
    free(exe);
    buf_printf(&b, " %s", sub);
    const char *opts[][2] = {{"--config", c->config_path},
                             {"--state", c->state_path},
                             {"--plugin", c->plugin_path},
                             {"--host-kv", c->kv_path}};
    for (size_t i = 0; i < 4; i++) {
        if (!opts[i][1]) continue;
        char *a = abs_path(opts[i][1]);
        if (!a) {
            buf_free(&b);
            return NULL;
        }
        buf_printf(&b, " %s ", opts[i][0]);
        shell_quote(&b, a);
        free(a);
    }
    return buf_steal(&b, NULL);
}

static int update_settings(const char *path, const char *command, int uninstall)
{
    json_t *settings;
    mode_t mode = 0644;
    struct stat sb;
    if (stat(path, &sb) == 0) {
        mode = sb.st_mode & 07777;
        json_error_t je;
        settings = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
        if (!settings)
            return fail("%s:%d:%d: %s (not changed)", path, je.line, je.column, je.text);
        if (!json_is_object(settings)) {
            json_decref(settings);
            return fail("%s: not a JSON object (not changed)", path);
        }
        json_t *hooks = json_object_get(settings, "hooks");
        if (hooks && !json_is_object(hooks)) {
            json_decref(settings);
            return fail("%s: \"hooks\" is not an object (not changed)", path);
        }
    } else if (errno == ENOENT) {
        if (uninstall) {
            printf("clarity: %s does not exist: nothing to remove\n", path);
            return EXIT_OK;
        }
        settings = json_object();
    } else {
        return fail("%s: %s", path, strerror(errno));
    }
    size_t removed = remove_ours(settings);
    int rc = EXIT_OK;
    if (!uninstall && add_ours(settings, command) != 0) rc = fail("out of memory");
    char *text = rc == EXIT_OK ? json_dumps(settings, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(settings);
    if (rc != EXIT_OK) return rc;
    if (!text) return fail("out of memory");
    buf out;
    buf_init(&out);
    buf_printf(&out, "%s\n", text);
    free(text);
    if (buf_failed(&out)) {
        rc = fail("out of memory");
    } else if (uninstall && removed == 0) {
        printf("clarity: no clarity hooks in %s\n", path);
    } else if (util_mkdir_parents(path, 0755) != 0 || util_write_file_atomic(path, out.p, out.len, mode, 1) != 0) {
        rc = fail("cannot write %s: %s", path, strerror(errno));
    } else if (uninstall) {
        printf("clarity: removed %zu clarity hook%s from %s\n", removed, removed == 1 ? "" : "s", path);
    } else {
        printf("clarity: hooks UserPromptSubmit, PostToolUse, Stop, SubagentStop, PreCompact, "
               "PostCompact, SessionStart, SessionEnd -> %s\n  command: %s\n", path, command);
    }
    buf_free(&out);
    return rc;
}

/* ---- the /clarity slash command ------------------------------------------ */

static int file_is_ours(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? -1 : 0;
    char line[512];
    int r = 0;
    while (!r && fgets(line, sizeof line, f)) r = strncmp(line, MARKER, sizeof MARKER - 1) == 0;
    fclose(f);
    return r;
}

static int update_command(const char *path, cli *c, int uninstall)
{
    int mine = file_is_ours(path);
    if (uninstall) {
        if (mine == 1 && unlink(path) != 0) return fail("cannot remove %s: %s", path, strerror(errno));
        if (mine == 1) printf("clarity: removed %s\n", path);
        return EXIT_OK;
    }
    if (mine == 0) {
        fprintf(stderr, "clarity install: %s exists and was not written by clarity: left as is\n",
                path);
        return EXIT_OK;
    }
    char *cmd = command_line(c, "cmd");
    char *exe = realpath("/proc/self/exe", NULL);
    if (!cmd || !exe) {
        free(cmd);
        free(exe);
        return fail("cannot find this program's path: %s", strerror(errno));
    }
    buf b;
    buf_init(&b);
    buf_puts(&b, "---\n"
                 "description: Clarity relevance engine - scores, anchors, pruning (/clarity help)\n"
                 "argument-hint: \"[scores [N] | anchor <item> | unanchor <item> | "
                 "tier <item> <tier> | prune [--dry-run] | stats | config | help]\"\n"
                 "allowed-tools: Bash(");
    shell_quote(&b, exe);
    buf_puts(&b, " cmd:*)\n" MARKER "; --uninstall removes this file\n---\n");
    buf_printf(&b, "!`%s --session \"${CLAUDE_SESSION_ID}\" -- \"/clarity $ARGUMENTS\"`\n\n", cmd);
    buf_puts(&b, "Show the output above to the user exactly as it is, in a code block, "
                 "with no commentary.\n");
    free(cmd);
    free(exe);
    int rc = EXIT_OK;
    if (buf_failed(&b)) rc = fail("out of memory");
    else if (util_mkdir_parents(path, 0755) != 0 || util_write_file_atomic(path, b.p, b.len, 0644, 1) != 0)
        rc = fail("cannot write %s: %s", path, strerror(errno));
    else printf("clarity: slash command /clarity -> %s\n", path);
    buf_free(&b);
    return rc;
}

int cli_install(cli *c, const char *host)
{
    if (strcmp(host, "claude-code") != 0)
        return fail("unknown host '%s' (known: claude-code)", host), EXIT_USAGE;
    if (c->install_user && c->install_project)
        return fail("--user and --project exclude each other"), EXIT_USAGE;
    char *base = NULL;
    if (c->install_user) {
        const char *home = getenv("HOME");
        if (!home || home[0] != '/') return fail("--user: $HOME is not set");
        base = join(home, ".claude");
    } else {
        const char *arg = c->install_project ? c->install_project : ".";
        char *dir = realpath(arg, NULL);
        if (!dir) dir = abs_path(arg);
        struct stat sb;
        if (!dir || stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            int rc = fail("%s: not a directory", c->install_project ? c->install_project : ".");
            free(dir);
            return rc;
        }
        base = join(dir, ".claude");
        free(dir);
    }
    char *settings = base ? join(base, "settings.json") : NULL;
    char *command = base ? join(base, "commands/clarity.md") : NULL;
    char *hook_cmd = command_line(c, "hook");
    int rc;
    if (c->state_path && !c->uninstall) { /* the hooks run with it: its folder must exist */
        char *st = abs_path(c->state_path);
        if (!st || util_mkdir_parents(st, 0755) != 0)
            fprintf(stderr, "clarity install: cannot create the folder of %s: %s\n", c->state_path,
                    strerror(errno));
        free(st);
    }
    if (!settings || !command || !hook_cmd) rc = fail("cannot find this program's path: %s", strerror(errno));
    else {
        rc = update_settings(settings, hook_cmd, c->uninstall);
        if (rc == EXIT_OK) rc = update_command(command, c, c->uninstall);
    }
    free(base);
    free(settings);
    free(command);
    free(hook_cmd);
    return rc;
}
