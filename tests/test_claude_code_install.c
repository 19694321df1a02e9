/* test_claude_code_install.c: `clarity install claude-code` on settings files that
 * already hold other settings and hooks: merge, idempotence, uninstall. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clihelp.h"

static char *tmp, *proj, *settings, *command;

static void setup(void)
{
    tmp = runproc_mkdtemp("clarity-install-test");
    cr_assert_not_null(tmp);
    proj = runproc_join(tmp, "proj");
    cr_assert_eq(mkdir(proj, 0755), 0);
    char *dot = runproc_join(proj, ".claude");
    cr_assert_eq(mkdir(dot, 0755), 0);
    settings = runproc_join(dot, "settings.json");
    command = runproc_join(dot, "commands/clarity.md");
    free(dot);
}

static void teardown(void)
{
    if (tmp) runproc_rmtree(tmp);
    free(tmp), free(proj), free(settings), free(command);
    tmp = proj = settings = command = NULL;
}

TestSuite(install, .init = setup, .fini = teardown, .timeout = 60);

static int install(const char *const extra[], runproc_result *r)
{
    const char *argv[16] = {"install", "claude-code"};
    int n = 2;
    for (int i = 0; extra && extra[i]; i++) argv[n++] = extra[i];
    argv[n] = NULL;
    clihelp_run(r, NULL, NULL, argv);
    return r->status;
}

static void install_ok(const char *const extra[])
{
    runproc_result r;
    cr_assert_eq(install(extra, &r), 0, "install failed: %s%s", r.out, r.err);
    runproc_free(&r);
}

static json_t *load(const char *path)
{
    char *t = clihelp_read(path);
    cr_assert_not_null(t, "no %s", path);
    json_t *j = clihelp_json(t);
    free(t);
    return j;
}

/* Our hook entries for an event (commands naming this clarity binary). */
static int count_ours(json_t *s, const char *event, const char *exe)
{
    int n = 0;
    size_t i, k;
    json_t *g, *h;
    json_array_foreach(json_object_get(json_object_get(s, "hooks"), event), i, g)
    {
        json_array_foreach(json_object_get(g, "hooks"), k, h)
        {
            const char *cmd = json_string_value(json_object_get(h, "command"));
            if (cmd && strncmp(cmd, exe, strlen(exe)) == 0 && strstr(cmd, " hook")) n++;
        }
    }
    return n;
}

static const char *events[] = {"UserPromptSubmit", "PostToolUse", "Stop", "SubagentStop",
                               "PreCompact", "SessionStart", "SessionEnd"};

Test(install, merges_into_existing_settings_and_uninstalls_exactly_ours)
{
    clihelp_copy("tests/fixtures/claude/settings_existing.json", settings);
    json_t *before = load(settings);
    char *db = runproc_join(tmp, "st/clarity.db");
    const char *args[] = {"--project", proj, "--state", db, NULL};
    install_ok(args);
    json_t *after = load(settings);
    char *exe = clihelp_exe();
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        cr_assert_eq(count_ours(after, events[i], exe), 1, "%s", events[i]);
    /* everything else is still there */
    const char *key;
    json_t *v;
    json_object_foreach(before, key, v)
    {
        if (strcmp(key, "hooks") == 0) continue;
        cr_assert(json_equal(v, json_object_get(after, key)), "setting %s changed", key);
    }
    json_t *hooks = json_object_get(after, "hooks");
    json_t *first = json_array_get(json_object_get(hooks, "PostToolUse"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(first, "matcher")), "Edit|Write",
                     "the user's PostToolUse group moved");
    cr_assert_eq(json_array_size(json_object_get(hooks, "Notification")), 1);
    cr_assert_eq(json_array_size(json_object_get(hooks, "Stop")), 2);
    /* the command: absolute binary, absolute state path, matchers */
    json_t *ups = json_array_get(json_object_get(hooks, "UserPromptSubmit"), 0);
    const char *cmd = json_string_value(json_object_get(json_array_get(json_object_get(ups, "hooks"), 0), "command"));
    cr_assert(cmd[0] == '/' && strstr(cmd, " hook --state /"), "%s", cmd);
    cr_assert_not_null(strstr(cmd, "/st/clarity.db"), "%s", cmd);
    json_t *ss = json_array_get(json_object_get(hooks, "SessionStart"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(ss, "matcher")), "compact");
    /* the state folder exists for the hooks */
    char *sd = runproc_join(tmp, "st");
    struct stat sb;
    cr_assert(stat(sd, &sb) == 0 && S_ISDIR(sb.st_mode), "install did not create %s", sd);
    free(sd);
    /* the /clarity command */
    char *md = clihelp_read(command);
    cr_assert_not_null(md, "no %s", command);
    cr_assert(strncmp(md, "---\n", 4) == 0);
    cr_assert_not_null(strstr(md, "allowed-tools: Bash("));
    cr_assert_not_null(strstr(md, "!`"), "no bash execution line");
    cr_assert_not_null(strstr(md, " cmd --state "), "%s", md);
    cr_assert_not_null(strstr(md, "\"/clarity $ARGUMENTS\""), "%s", md);
    cr_assert_not_null(strstr(md, "${CLAUDE_SESSION_ID}"), "%s", md);
    free(md);

    /* uninstall: back to the original, the command file gone */
    const char *un[] = {"--project", proj, "--uninstall", NULL};
    install_ok(un);
    json_t *restored = load(settings);
    cr_assert(json_equal(before, restored), "uninstall did not restore the settings");
    cr_assert_eq(access(command, F_OK), -1, "the command file is still there");
    runproc_result r;
    cr_assert_eq(install(un, &r), 0);
    cr_assert_not_null(strstr(r.out, "no clarity hooks"), "%s", r.out);
    runproc_free(&r);
    json_decref(before), json_decref(after), json_decref(restored);
    free(exe), free(db);
}

Test(install, is_idempotent)
{
    clihelp_copy("tests/fixtures/claude/settings_existing.json", settings);
    const char *args[] = {"--project", proj, NULL};
    install_ok(args);
    char *once = clihelp_read(settings), *md1 = clihelp_read(command);
    install_ok(args);
    char *twice = clihelp_read(settings), *md2 = clihelp_read(command);
    cr_assert_str_eq(once, twice, "a second install changed settings.json");
    cr_assert_str_eq(md1, md2);
    free(once), free(twice), free(md1), free(md2);
}

Test(install, creates_settings_and_user_scope)
{
    const char *args[] = {"--project", proj, NULL};
    install_ok(args);
    json_t *s = load(settings);
    cr_assert_eq(json_object_size(s), 1, "only \"hooks\" expected");
    json_decref(s);
    /* --user writes $HOME/.claude */
    char *home = runproc_join(tmp, "home");
    cr_assert_eq(mkdir(home, 0755), 0);
    char *env_home = malloc(strlen(home) + 6);
    sprintf(env_home, "HOME=%s", home);
    const char *env[] = {env_home, NULL};
    const char *argv[] = {"install", "claude-code", "--user", NULL};
    runproc_result r;
    clihelp_run(&r, NULL, env, argv);
    cr_assert_eq(r.status, 0, "%s", r.err);
    runproc_free(&r);
    char *user = runproc_join(home, ".claude/settings.json");
    s = load(user);
    char *exe = clihelp_exe();
    cr_assert_eq(count_ours(s, "Stop", exe), 1);
    json_decref(s);
    free(exe), free(user), free(env_home), free(home);
}

Test(install, refuses_broken_settings_and_keeps_foreign_files)
{
    cr_assert_eq(runproc_write_file(settings, "{\"model\": \"opus\",,}"), 0);
    const char *args[] = {"--project", proj, NULL};
    runproc_result r;
    cr_assert_eq(install(args, &r), 1);
    cr_assert_not_null(strstr(r.err, "settings.json"), "%s", r.err);
    runproc_free(&r);
    char *t = clihelp_read(settings);
    cr_assert_str_eq(t, "{\"model\": \"opus\",,}", "a broken file was overwritten");
    free(t);

    /* a /clarity command the user wrote is left alone */
    cr_assert_eq(runproc_write_file(settings, "{}"), 0);
    char *dir = runproc_join(proj, ".claude/commands");
    cr_assert_eq(mkdir(dir, 0755), 0);
    cr_assert_eq(runproc_write_file(command, "my own command\n"), 0);
    cr_assert_eq(install(args, &r), 0, "%s", r.err);
    runproc_free(&r);
    t = clihelp_read(command);
    cr_assert_str_eq(t, "my own command\n");
    free(t);
    const char *un[] = {"--project", proj, "--uninstall", NULL};
    install_ok(un);
    cr_assert_eq(access(command, F_OK), 0, "uninstall removed a file it did not write");
    free(dir);
}

Test(install, quoted_paths_are_still_recognized)
{
    char *spaced = runproc_join(tmp, "my state");
    cr_assert_eq(mkdir(spaced, 0755), 0);
    char *db = runproc_join(spaced, "it's.db");
    const char *args[] = {"--project", proj, "--state", db, NULL};
    install_ok(args);
    json_t *s = load(settings);
    json_t *g = json_array_get(json_object_get(json_object_get(s, "hooks"), "Stop"), 0);
    const char *cmd = json_string_value(json_object_get(json_array_get(json_object_get(g, "hooks"), 0), "command"));
    cr_assert_not_null(strstr(cmd, "'"), "unquoted: %s", cmd);
    json_decref(s);
    const char *un[] = {"--project", proj, "--uninstall", NULL};
    install_ok(un);
    s = load(settings);
    cr_assert_null(json_object_get(s, "hooks"), "quoted entries were not removed");
    json_decref(s);
    free(db), free(spaced);
}

Test(install, usage_errors)
{
    runproc_result r;
    const char *both[] = {"--project", proj, "--user", NULL};
    cr_assert_eq(install(both, &r), 64);
    runproc_free(&r);
    const char *missing[] = {"--project", "/nonexistent/dir", NULL};
    cr_assert_eq(install(missing, &r), 1);
    runproc_free(&r);
    const char *argv[] = {"install", "vim", NULL};
    clihelp_run(&r, NULL, NULL, argv);
    cr_assert_eq(r.status, 64);
    runproc_free(&r);
    const char *stray[] = {"cmd", "--uninstall", "/clarity", NULL};
    clihelp_run(&r, NULL, NULL, stray);
    cr_assert_eq(r.status, 64, "--uninstall outside install must be refused");
    runproc_free(&r);
}
