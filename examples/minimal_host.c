/* minimal_host.c: the smallest complete clarity host.
 *
 *   cc -std=c11 -Iinclude -o minimal_host examples/minimal_host.c -ldl
 *   ./minimal_host [path/to/libclarity.so]      (default ./build/libclarity.so)
 *
 * Loads the plugin, asks for the context block of a prompt, reports the
 * agent's turn, runs "/clarity scores" and unloads.  State stays in memory
 * (storage.backend "memory"), so running it leaves no files behind.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clarity.h"

static void host_log(void *ud, int level, const char *msg)
{
    (void)ud;
    if (level >= CLARITY_LOG_WARN) fprintf(stderr, "clarity: %s\n", msg);
}

static int64_t host_now_ms(void *ud)
{
    (void)ud;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Prints a result (or its error) and hands it back to the plugin. */
static int show(const clarity_plugin *p, const char *what, int rc, clarity_result *r)
{
    if (rc != CLARITY_OK)
        fprintf(stderr, "%s failed: %s\n", what,
                r->error ? r->error : p->strerror ? p->strerror(rc) : "error");
    else
        printf("== %s\n%s\n", what, r->data && *r->data ? r->data : "(empty)");
    p->release(p->self, r);
    return rc == CLARITY_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "./build/libclarity.so";
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    clarity_plugin_init_fn init;
    void *sym = dlsym(dl, CLARITY_PLUGIN_INIT_SYMBOL);
    if (!sym) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        dlclose(dl);
        return 1;
    }
    memcpy(&init, &sym, sizeof init); /* POSIX: object pointer -> function pointer */

    /* Services lent to the plugin; no kv, so it uses its own store. */
    clarity_host host = {0};
    host.struct_size = sizeof host;
    host.abi_version = CLARITY_ABI_VERSION;
    host.log = host_log;
    host.now_ms = host_now_ms;

    clarity_plugin p = {0};
    p.struct_size = sizeof p;
    char *err = NULL;
    int rc = init(&host, "{\"storage\":{\"backend\":\"memory\"}}", &p, &err);
    if (rc != CLARITY_OK) {
        fprintf(stderr, "init: %s\n", err ? err : "refused");
        free(err);
        dlclose(dl);
        return 1;
    }
    printf("loaded %s %s\n", p.name, p.version);

    const char *session = "minimal";
    const char *prompt = "Let's continue the ClaraCore refactor: fix the expiry check in "
                         "src/auth/session.ts for focus-engine.";
    int fails = 0;

    /* 1. Before the agent runs: the block to prepend to the prompt. */
    clarity_before_agent_start bas = {0};
    bas.struct_size = sizeof bas;
    bas.session_id = session;
    bas.prompt = prompt;
    bas.prompt_len = strlen(prompt);
    clarity_event ev = {0};
    ev.struct_size = sizeof ev;
    ev.id = CLARITY_EV_BEFORE_AGENT_START;
    ev.version = 1;
    ev.data = &bas;
    clarity_result res = {0};
    res.struct_size = sizeof res;
    fails += show(&p, "before_agent_start", p.on_event(p.self, &ev, &res), &res);

    /* 2. After the agent ran: what it said and which tools it used. */
    const char *text = "Opened src/auth/session.ts; the TTL check compares createdAt.";
    clarity_message msg = {0};
    msg.struct_size = sizeof msg;
    msg.role = "assistant";
    msg.text = text;
    msg.text_len = strlen(text);
    msg.tool_name = "Read";
    msg.tool_args_json = "{\"file_path\":\"src/auth/session.ts\"}";
    clarity_agent_end ae = {0};
    ae.struct_size = sizeof ae;
    ae.session_id = session;
    ae.messages = &msg;
    ae.n_messages = 1;
    ae.success = 1;
    ev.id = CLARITY_EV_AGENT_END;
    ev.data = &ae;
    res = (clarity_result){.struct_size = sizeof res};
    fails += show(&p, "agent_end", p.on_event(p.self, &ev, &res), &res);

    /* 3. A slash command typed by the user. */
    res = (clarity_result){.struct_size = sizeof res};
    fails += show(&p, "/clarity scores", p.command(p.self, session, "/clarity scores", &res), &res);

    p.unload(p.self);
    dlclose(dl);
    return fails ? 1 : 0;
}
