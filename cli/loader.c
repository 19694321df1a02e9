/* loader.c: dlopen() libclarity.so and call it through the public ABI. */
#include "loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/buf.h"
#include "../util/errors.h"

/* A name without '/' is taken from the working directory when it is there;
 * otherwise dlopen() searches the library path. */
static char *explicit_candidate(const char *p)
{
    if (!strchr(p, '/') && access(p, F_OK) == 0) return util_format("./%s", p);
    return util_strdup(p);
}

static char *exe_dir(void)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return NULL;
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    if (!slash) return NULL;
    if (slash == path) slash++;
    *slash = '\0';
    return util_strdup(path);
}

char *loader_find(const char *explicit_path, char **err)
{
    *err = NULL;
    if (explicit_path && *explicit_path) return explicit_candidate(explicit_path);
    const char *env = getenv("CLARITY_PLUGIN");
    if (env && *env) return explicit_candidate(env);

    char *dir = exe_dir();
    if (!dir) {
        *err = util_format("cannot locate libclarity.so: /proc/self/exe is unreadable; "
                   "use --plugin PATH or set CLARITY_PLUGIN");
        return NULL;
    }
    const char *sep = strcmp(dir, "/") == 0 ? "" : "/";
    char *a = util_format("%s%slibclarity.so", dir, sep);
    char *b = util_format("%s%s../lib/libclarity.so", dir, sep);
    free(dir);
    char *found = NULL;
    if (a && access(a, F_OK) == 0) found = a, a = NULL;
    else if (b && access(b, F_OK) == 0) found = b, b = NULL;
    if (!found)
        *err = util_format("cannot find libclarity.so (tried %s and %s); use --plugin PATH or set "
                   "CLARITY_PLUGIN",
                   a ? a : "?", b ? b : "?");
    free(a);
    free(b);
    return found;
}

const char *loader_strerror(const loader *L, int rc)
{
    if (L && L->ready && L->p.strerror) {
        const char *s = L->p.strerror(rc);
        if (s && *s) return s;
    }
    return util_rc_name(rc);
}

const char *loader_errtext(const loader *L, int rc, const clarity_result *r)
{
    if (r && r->error && *r->error) return r->error;
    return loader_strerror(L, rc);
}

int loader_open(loader *L, const char *explicit_path, const clarity_host *host,
                const char *config_json, char **err)
{
    memset(L, 0, sizeof *L);
    *err = NULL;
    L->path = loader_find(explicit_path, err);
    if (!L->path) return -1;

    dlerror();
    /* Lazy: a hook's process calls a few dozen of the library's ~240
     * imported functions, and binding all at load was 4 % of its
     * instructions.  Nothing goes unresolved later: the library is linked
     * with --no-undefined, and a missing symbol version fails here. */
    L->dl = dlopen(L->path, RTLD_LAZY | RTLD_LOCAL);
    if (!L->dl) {
        const char *e = dlerror();
        *err = util_format("cannot load plugin %s: %s", L->path, e ? e : "dlopen failed");
        loader_close(L);
        return -1;
    }
    /* POSIX: a void * from dlsym may be converted to a function pointer. */
    void *sym = dlsym(L->dl, CLARITY_PLUGIN_INIT_SYMBOL);
    if (!sym) {
        const char *e = dlerror();
        *err = util_format("%s is not a clarity plugin: %s", L->path, e ? e : "no " CLARITY_PLUGIN_INIT_SYMBOL);
        loader_close(L);
        return -1;
    }
    clarity_plugin_init_fn init;
    memcpy(&init, &sym, sizeof init);

    memset(&L->p, 0, sizeof L->p);
    L->p.struct_size = sizeof L->p;
    char *msg = NULL;
    int rc = init(host, config_json, &L->p, &msg);
    if (rc != CLARITY_OK) {
        *err = util_format("plugin %s refused to start (%s): %s", L->path, util_rc_name(rc),
                   msg && *msg ? msg : "no message");
        free(msg);
        loader_close(L);
        return -1;
    }
    free(msg);
    L->ready = 1;
    if (L->p.abi_version != CLARITY_ABI_VERSION) {
        *err = util_format("plugin %s speaks ABI %u, this host speaks ABI %d", L->path,
                   (unsigned)L->p.abi_version, CLARITY_ABI_VERSION);
        loader_close(L);
        return -1;
    }
    if (!L->p.on_event || !L->p.command || !L->p.rpc || !L->p.release || !L->p.unload) {
        *err = util_format("plugin %s lacks a mandatory entry point", L->path);
        if (!L->p.unload) L->ready = 0;
        loader_close(L);
        return -1;
    }
    return 0;
}

void loader_close(loader *L)
{
    if (!L) return;
    if (L->ready && L->p.unload) L->p.unload(L->p.self);
    L->ready = 0;
    if (L->dl) dlclose(L->dl);
    L->dl = NULL;
    free(L->path);
    L->path = NULL;
}

static void result_init(clarity_result *out)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
}

int loader_event(loader *L, uint32_t id, const void *payload, clarity_result *out)
{
    result_init(out);
    if (!L->ready || !L->p.on_event) return CLARITY_DECLINED;
    clarity_event ev;
    memset(&ev, 0, sizeof ev);
    ev.struct_size = sizeof ev;
    ev.id = id;
    ev.version = 1;
    ev.data = payload;
    return L->p.on_event(L->p.self, &ev, out);
}

int loader_command(loader *L, const char *session, const char *line, clarity_result *out)
{
    result_init(out);
    if (!L->ready || !L->p.command) return CLARITY_DECLINED;
    return L->p.command(L->p.self, session, line, out);
}

int loader_rpc(loader *L, const char *method, const char *params_json, clarity_result *out)
{
    result_init(out);
    if (!L->ready || !L->p.rpc) return CLARITY_DECLINED;
    return L->p.rpc(L->p.self, method, params_json, out);
}

void loader_release(loader *L, clarity_result *r)
{
    if (L->ready && L->p.release) L->p.release(L->p.self, r);
    r->data = NULL;
    r->error = NULL;
    r->len = 0;
}
