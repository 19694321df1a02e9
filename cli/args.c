/* args.c: the one command-line parser of clarity.
 *
 * Two tables drive it: the options below (every option of every
 * subcommand: name, letter, argument, help) and the subcommands
 * (cli/main.c: name, arguments, which options each takes).  Options may
 * stand before or after the subcommand and its arguments, as --name VALUE,
 * --name=VALUE or -x VALUE; "--" ends them.  An option a subcommand does
 * not take is a usage error naming both.  The usage text is printed from
 * the same tables.
 *
 * Adding an option: an id in cli.h (CLI_O_*), an entry here, where it goes
 * in struct cli (apply()), and its bit in the subcommands that take it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifndef CLARITY_VERSION
#define CLARITY_VERSION "0.0.0"
#endif

/* The options every subcommand takes. */
enum { O_CONFIG, O_STATE, O_PLUGIN, O_HOST_KV, O_STORE, O_VERBOSE, O_QUIET, O_HELP, O_VERSION, O_GLOBAL };
_Static_assert((int)O_GLOBAL == (int)CLI_O_JSON, "the global options come first");

typedef struct cli_option {
    const char *name; /* --name */
    char letter;      /* -x, or 0 */
    const char *arg;  /* the argument's name, NULL: a flag */
    const char *help;
} cli_option;

static const cli_option options[CLI_O__COUNT] = {
    [O_CONFIG] = {"config", 0, "FILE", "plugin configuration (JSON); eval: one column per --config"},
    [O_STATE] = {"state", 0, "DB",
                 "state database (storage.path); default $CLARITY_STATE, else\n"
                 "$XDG_STATE_HOME/clarity/clarity.db, else\n"
                 "~/.local/state/clarity/clarity.db"},
    [O_PLUGIN] = {"plugin", 0, "PATH",
                  "the plugin; default $CLARITY_PLUGIN, else libclarity.so next to\n"
                  "this program, else ../lib/libclarity.so relative to it"},
    [O_HOST_KV] = {"host-kv", 0, "FILE",
                   "persist through the host's kv service, kept in FILE (JSON)\n"
                   "instead of the plugin's SQLite store"},
    [O_STORE] = {"store", 0, "URL",
                 "keep the state on Redis (storage.backend redis):\n"
                 "redis://[user:password@]host[:port][/db] or unix:///path"},
    [O_VERBOSE] = {"verbose", 'v', NULL, "log debug messages to stderr"},
    [O_QUIET] = {"quiet", 'q', NULL, "log errors only"},
    [O_HELP] = {"help", 'h', NULL, "this text"},
    [O_VERSION] = {"version", 'V', NULL, "print the version"},
    [CLI_O_JSON] = {"json", 0, NULL, "print JSON"},
    [CLI_O_SESSION] = {"session", 0, "S", "the session (default \"default\")"},
    [CLI_O_WORKSPACE] = {"workspace", 0, "DIR", "the workspace directory"},
    [CLI_O_HTML] = {"html", 0, "FILE", "also write an HTML report with charts"},
    [CLI_O_HORIZON] = {"horizon", 'H', "N", "future-use horizon in turns (default 5)"},
    [CLI_O_PROJECT] = {"project", 0, "DIR", "the project whose .claude/ is changed (default: .)"},
    [CLI_O_USER] = {"user", 0, NULL, "change ~/.claude instead"},
    [CLI_O_UNINSTALL] = {"uninstall", 0, NULL, "remove what install added"},
    [CLI_O_REGEX] = {"regex", 0, NULL, "parse with the PCRE2 patterns, not tree-sitter"},
    [CLI_O_MAX_COMMITS] = {"max-commits", 0, "N", "the newest N commits (default 10,000; 0: all)"},
    [CLI_O_NO_LEARN] = {"no-learn", 0, NULL, "do not train the learned fusion"},
    [CLI_O_K] = {"k", 'k', "N", "how many files (default 10)"},
    [CLI_O_REPEAT] = {"repeat", 0, "N", "run the query N times, report p50/p99 (benchmarks)"},
    [CLI_O_NO_REFRESH] = {"no-refresh", 0, NULL, "answer from a stale graph as it is (and warn)"},
    [CLI_O_BUDGET] = {"budget", 0, "N|F",
                      "token budget of each turn's assembly: N tokens, or a share\n"
                      "F (0 < F <= 1) of the session's whole transcript (of the\n"
                      "transcript so far when reading stdin)"},
    [CLI_O_REPOS] = {"repos", 0, "DIR",
                     "a session whose meta names repo and base_commit runs in a clone of\n"
                     "DIR/<owner>/<name> (or DIR/<owner>+<name>/repo) at that commit,\n"
                     "with its code graph built, as in a user's workspace"},
    [CLI_O_LEVEL] = {"level", 0, "N", "0: the public contract (default), 1: every symbol, 2: the content"},
    [CLI_O_FILE] = {"file", 0, "PATH", "the definition in this file (a name defined in several)"},
    [CLI_O_DEPTH] = {"depth", 0, "N", "callers of callers down to N levels (default 3, at most 10)"},
    [CLI_O_REPO_CACHE] = {"repo-cache", 0, "DIR",
                          "where --repos keeps those clones (default\n"
                          "$XDG_CACHE_HOME/clarity/eval-repos, else ~/.cache/...)"},
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("clarity: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n(clarity --help for usage)\n", stderr);
    return EXIT_USAGE;
}

/* An integer option in lo..hi, or a usage error. */
static int number(const char *name, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return usage_error("--%s needs a number in %ld..%ld, got '%s'", name, lo, hi, v);
    *out = x;
    return 0;
}

/* --budget: a whole number of tokens, or a share in (0, 1]. */
static int budget(cli *c, const char *v)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x > 0) || (x > 1 && x != (double)(int64_t)x) || x > 1e12)
        return usage_error("--budget needs a number of tokens or a share in (0, 1], got '%s'", v);
    if (x <= 1) c->budget_frac = x;
    else c->budget_abs = (int64_t)x;
    return 0;
}

/* Stores an option's value in c.  0, or EXIT_USAGE. */
static int apply(cli *c, int id, const char *v)
{
    long x;
    switch (id) {
    case O_CONFIG: c->config_path = c->configs[c->n_configs++] = v; return 0;
    case O_STATE: c->state_path = v; return 0;
    case O_PLUGIN: c->plugin_path = v; return 0;
    case O_HOST_KV: c->kv_path = v; return 0;
    case O_STORE:
        if (strncmp(v, "redis://", 8) != 0 && strncmp(v, "unix://", 7) != 0)
            return usage_error("--store needs a redis:// or unix:// URL, got '%s'", v);
        c->store_url = v;
        return 0;
    case O_VERBOSE: c->log_level = CLARITY_LOG_DEBUG; return 0;
    case O_QUIET: c->log_level = CLARITY_LOG_ERROR; return 0;
    case CLI_O_JSON: c->json = 1; return 0;
    case CLI_O_SESSION:
        if (!*v) return usage_error("--session needs a non-empty name");
        c->session = v;
        return 0;
    case CLI_O_WORKSPACE: c->workspace = v; return 0;
    case CLI_O_HTML: c->html_path = v; return 0;
    case CLI_O_HORIZON:
        if (number("horizon", v, 1, 1000, &x)) return EXIT_USAGE;
        c->horizon = (int)x;
        return 0;
    case CLI_O_PROJECT: c->install_project = v; return 0;
    case CLI_O_USER: c->install_user = 1; return 0;
    case CLI_O_UNINSTALL: c->uninstall = 1; return 0;
    case CLI_O_REGEX: c->regex = 1; return 0;
    case CLI_O_MAX_COMMITS: return number("max-commits", v, 0, 100000000, &c->max_commits) ? EXIT_USAGE : 0;
    case CLI_O_NO_LEARN: c->no_learn = 1; return 0;
    case CLI_O_K: return number("k", v, 1, 1000, &c->k) ? EXIT_USAGE : 0;
    case CLI_O_REPEAT: return number("repeat", v, 0, 100000, &c->repeat) ? EXIT_USAGE : 0;
    case CLI_O_NO_REFRESH: c->no_refresh = 1; return 0;
    case CLI_O_BUDGET: return budget(c, v);
    case CLI_O_REPOS: c->repos = v; return 0;
    case CLI_O_REPO_CACHE: c->repo_cache = v; return 0;
    case CLI_O_LEVEL: return number("level", v, 0, 2, &c->level) ? EXIT_USAGE : 0;
    case CLI_O_FILE: c->file = v; return 0;
    case CLI_O_DEPTH: return number("depth", v, 1, 10, &c->depth) ? EXIT_USAGE : 0;
    }
    return 0;
}

/* The option spelled a (after its dashes), or -1; *value: an inline
 * "--name=value". */
static int find_option(const char *a, const char **value)
{
    *value = NULL;
    if (a[0] == '-' && a[1] == '-') {
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        for (int i = 0; i < CLI_O__COUNT; i++)
            if (strlen(options[i].name) == n && strncmp(options[i].name, name, n) == 0) {
                if (eq) *value = eq + 1;
                return i;
            }
        return -1;
    }
    for (int i = 0; i < CLI_O__COUNT; i++)
        if (options[i].letter && a[1] == options[i].letter) {
            if (a[2]) *value = a + 2; /* -k5 */
            return i;
        }
    return -1;
}

static const cli_command *find_command(const cli_command *cmds, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cmds[i].name, name) == 0) return &cmds[i];
    return NULL;
}

/* Splits argv into options (applied, seen[] set) and positionals. */
static int scan(int argc, char **argv, cli *c, int *seen, char **pos, int *npos)
{
    int dashdash = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (dashdash || a[0] != '-' || !a[1]) {
            pos[(*npos)++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            dashdash = 1;
            continue;
        }
        const char *v;
        int id = find_option(a, &v);
        if (id < 0) return usage_error("unknown option %s", a);
        const cli_option *o = &options[id];
        if (o->arg && !v) {
            if (i + 1 >= argc) return usage_error("option %s needs an argument", a);
            v = argv[++i];
        } else if (!o->arg && v) {
            return usage_error("option --%s takes no argument", o->name);
        }
        if (apply(c, id, v)) return EXIT_USAGE;
        seen[id] = 1;
    }
    return 0;
}

int cli_parse(int argc, char **argv, const cli_command *cmds, size_t ncmds, cli *c, char **pos,
              const cli_command **cmd, int *nargs)
{
    int seen[CLI_O__COUNT] = {0}, npos = 0;
    int ex = scan(argc, argv, c, seen, pos, &npos);
    if (!ex && (seen[O_HELP] || (npos > 0 && strcmp(pos[0], "help") == 0))) {
        cli_usage(stdout, cmds, ncmds);
        ex = EXIT_OK + 1000; /* done */
    } else if (!ex && seen[O_VERSION]) {
        printf("clarity %s (plugin ABI %d)\n", CLARITY_VERSION, CLARITY_ABI_VERSION);
        ex = EXIT_OK + 1000;
    } else if (!ex && npos == 0) {
        cli_usage(stderr, cmds, ncmds);
        ex = EXIT_USAGE;
    }
    const cli_command *k = !ex ? find_command(cmds, ncmds, pos[0]) : NULL;
    if (!ex && !k) ex = usage_error("unknown command '%s'", pos[0]);
    for (int i = O_GLOBAL; !ex && i < CLI_O__COUNT; i++)
        if (seen[i] && !(k->options & CLI_OPT(i)))
            ex = usage_error("--%s is not an option of %s", options[i].name, k->name);
    if (!ex && (npos - 1 < k->min_args || (k->max_args >= 0 && npos - 1 > k->max_args)))
        ex = usage_error("%s", k->arg_error);
    if (ex) return ex == EXIT_OK + 1000 ? EXIT_OK : ex;
    *cmd = k;
    *nargs = npos - 1;
    return -1;
}

/* Prints text with every line after the first indented by indent. */
static void put_lines(FILE *f, const char *text, int indent)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (p != text) fprintf(f, "\n%*s", indent, "");
        fwrite(p, 1, n, f);
        p += n + (nl ? 1 : 0);
    }
    fputc('\n', f);
}

static void put_option(FILE *f, int i, int indent)
{
    const cli_option *o = &options[i];
    char head[64];
    if (o->letter)
        snprintf(head, sizeof head, "-%c, --%s%s%s", o->letter, o->name, o->arg ? " " : "",
                 o->arg ? o->arg : "");
    else
        snprintf(head, sizeof head, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    fprintf(f, "%*s%-*s", indent, "", 27 - indent, head);
    if ((int)strlen(head) > 26 - indent) fprintf(f, "\n%27s", "");
    put_lines(f, o->help, 27);
}

void cli_usage(FILE *f, const cli_command *cmds, size_t ncmds)
{
    fputs("usage: clarity [options] <command> [args]\n\ncommands:\n", f);
    for (size_t i = 0; i < ncmds; i++) {
        char head[96];
        snprintf(head, sizeof head, "%s%s%s", cmds[i].name, *cmds[i].usage ? " " : "", cmds[i].usage);
        fprintf(f, "  %-25s", head);
        if (strlen(head) > 24) fprintf(f, "\n%27s", "");
        put_lines(f, cmds[i].help, 27);
        for (int o = O_GLOBAL; o < CLI_O__COUNT; o++)
            if (cmds[i].options & CLI_OPT(o)) put_option(f, o, 6);
    }
    fputs("\noptions (every command):\n", f);
    for (int o = 0; o < O_GLOBAL; o++) put_option(f, o, 2);
    fputs("\nexit status: 0 ok, 1 failure (bad input, plugin not loadable, config refused),\n"
          "2 the plugin answered with an error, 64 usage error, 130 interrupted.\n",
          f);
}
