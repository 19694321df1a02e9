/* loader.h: finding, loading and calling libclarity.so through the ABI.
 *
 * Search order for the plugin:
 *   1. --plugin PATH
 *   2. $CLARITY_PLUGIN
 *   3. libclarity.so in the directory of the executable (/proc/self/exe)
 *   4. ../lib/libclarity.so relative to that directory (installed layout)
 * A bare name without '/' in 1 or 2 means the file in the working directory
 * when it exists there, else the dynamic linker's search path.
 */
#ifndef CLI_LOADER_H
#define CLI_LOADER_H

#include <stdint.h>

#include "../include/clarity.h"

typedef struct loader {
    void *dl;       /* dlopen handle */
    char *path;     /* what was loaded (owned) */
    clarity_plugin p;
    int ready;      /* init succeeded; unload pending */
} loader;

/* The path to load, malloc()ed, or NULL with *err malloc()ed. */
char *loader_find(const char *explicit_path, char **err);

/* Finds, dlopen()s (RTLD_LAZY | RTLD_LOCAL) and initializes the plugin with
 * config_json (may be NULL).  Checks the ABI version and the mandatory entry
 * points.  Returns 0, or -1 with *err malloc()ed (the plugin's own errmsg
 * when init refused, e.g. a config key). */
int loader_open(loader *L, const char *explicit_path, const clarity_host *host,
                const char *config_json, char **err);
/* plugin->unload (when ready) then dlclose; safe on a zeroed loader. */
void loader_close(loader *L);

/* Thin wrappers: zero-initialize out, set struct_size, call the entry point
 * (CLARITY_DECLINED when it is missing). */
int loader_event(loader *L, uint32_t id, const void *payload, clarity_result *out);
int loader_command(loader *L, const char *session, const char *line, clarity_result *out);
int loader_rpc(loader *L, const char *method, const char *params_json, clarity_result *out);
void loader_release(loader *L, clarity_result *r);

/* Name of a return code: the plugin's strerror when loaded, else ours. */
const char *loader_strerror(const loader *L, int rc);
/* The message of a failed call: out->error when set, else the rc name. */
const char *loader_errtext(const loader *L, int rc, const clarity_result *r);

#endif
