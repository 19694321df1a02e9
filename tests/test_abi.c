/* The ABI: one exported symbol, versioning, size-prefixed structs, declines. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testhost.h"

Test(abi, exports_only_the_entry_point)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s' | awk '$2 ~ /^[TDBRVW]$/ {print $3}'",
             th_build_path("libclarity.so"));
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    char line[256];
    int n = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        /* linker-provided section markers are not ours */
        if (!strcmp(line, "_init") || !strcmp(line, "_fini") || !strcmp(line, "_edata") ||
            !strcmp(line, "_end") || !strcmp(line, "__bss_start"))
            continue;
        n++;
        if (strcmp(line, "clarity_plugin_init") == 0) found = 1;
        else cr_log_error("unexpected export: %s", line);
    }
    pclose(f);
    cr_assert(found, "clarity_plugin_init is not exported");
    cr_assert_eq(n, 1, "the .so exports %d symbols, expected 1", n);
}

/* Lines of cmd's output containing any of the words. */
static int lines_with(const char *cmd, const char *const *words)
{
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f, "%s", cmd);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        for (const char *const *w = words; *w; w++) {
            if (strstr(line, *w)) {
                cr_log_info("%s", line);
                n++;
                break;
            }
        }
    }
    cr_assert_eq(pclose(f), 0, "%s failed", cmd);
    return n;
}

/* The .so carries SQLite, PCRE2, tree-sitter and hiredis inside (the
 * Makefile's STATIC_DEPS=1, the default): it needs none of their shared
 * libraries and binds no symbol of theirs at load, so a hook process
 * skips those lookups and a host's own SQLite cannot answer its calls.
 * Built with STATIC_DEPS=0, it needs SQLite's and PCRE2's. */
Test(abi, carries_its_libraries_inside)
{
    static const char *const libs[] = {"libsqlite3", "libpcre2-8", "libtree-sitter", "libhiredis", NULL};
    static const char *const syms[] = {" sqlite3_", " pcre2_", " ts_", " redis", NULL};
    char needed[4200], undef[4200];
    snprintf(needed, sizeof needed, "readelf -d '%s' | grep NEEDED", th_build_path("libclarity.so"));
    snprintf(undef, sizeof undef, "nm -D --undefined-only '%s'", th_build_path("libclarity.so"));
    int n_libs = lines_with(needed, libs), n_syms = lines_with(undef, syms);
#if CLARITY_STATIC_DEPS
    cr_assert_eq(n_libs, 0, "the .so needs %d of the libraries it should carry", n_libs);
    cr_assert_eq(n_syms, 0, "the .so imports %d of their symbols", n_syms);
#else
    static const char *const sqlite[] = {"libsqlite3", NULL}, *const open[] = {" sqlite3_open_v2", NULL};
    cr_assert_eq(lines_with(needed, sqlite), 1, "a shared build does not need libsqlite3");
    cr_assert_eq(lines_with(undef, open), 1, "a shared build does not import sqlite3_open_v2");
    cr_assert_geq(n_libs, 2);
    cr_assert_gt(n_syms, 0);
#endif
}

Test(abi, refuses_other_abi_version_with_message)
{
    void *dl = dlopen(th_build_path("libclarity.so"), RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(dl);
    clarity_plugin_init_fn init = (clarity_plugin_init_fn)dlsym(dl, CLARITY_PLUGIN_INIT_SYMBOL);
    clarity_host host = {sizeof host, 99, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0};
    clarity_plugin p = {.struct_size = sizeof p};
    char *err = NULL;
    cr_assert_eq(init(&host, NULL, &p, &err), CLARITY_EVERSION);
    cr_assert_not_null(err);
    cr_assert_not_null(strstr(err, "ABI"));
    free(err);
    dlclose(dl);
}

Test(abi, older_host_tables_are_accepted)
{
    /* A host compiled before the kv members existed: only the first members. */
    void *dl = dlopen(th_build_path("libclarity.so"), RTLD_NOW | RTLD_LOCAL);
    clarity_plugin_init_fn init = (clarity_plugin_init_fn)dlsym(dl, CLARITY_PLUGIN_INIT_SYMBOL);
    clarity_host host;
    memset(&host, 0xAB, sizeof host); /* garbage beyond struct_size must not be read */
    host.struct_size = offsetof(clarity_host, kv_get);
    host.abi_version = CLARITY_ABI_VERSION;
    host.ud = NULL;
    host.log = NULL;
    host.now_ms = NULL;
    clarity_plugin p = {.struct_size = sizeof p};
    char *err = NULL;
    int rc = init(&host, "{\"storage\":{\"backend\":\"memory\"}}", &p, &err);
    cr_assert_eq(rc, CLARITY_OK, "%s", err ? err : "");
    cr_assert_eq(p.abi_version, CLARITY_ABI_VERSION);
    cr_assert_str_eq(p.name, "clarity");
    cr_assert_str_eq(p.strerror(CLARITY_ENOTFOUND), "not found");
    p.unload(p.self);
    dlclose(dl);
}

Test(abi, bad_config_is_refused_naming_the_key)
{
    th_host h;
    char *err = NULL;
    int rc = th_open(&h, "{\"scoring\":{\"halfLife\":-1}}", 0, &err);
    cr_assert_eq(rc, CLARITY_ECONFIG);
    cr_assert_not_null(err);
    cr_assert_not_null(strstr(err, "scoring.halfLife"), "message: %s", err);
    free(err);
}

Test(abi, unknown_event_and_newer_payload_are_declined)
{
    th_host h;
    cr_assert_eq(th_open(&h, "{\"storage\":{\"backend\":\"memory\"}}", 0, NULL), 0);
    clarity_before_agent_start p = {sizeof p, "s", NULL, "hello ClaraCore", 15, NULL, 0};
    clarity_event ev = {sizeof ev, 42, 1, &p};
    clarity_result r = {.struct_size = sizeof r};
    cr_assert_eq(h.p.on_event(h.p.self, &ev, &r), CLARITY_DECLINED);
    cr_assert_null(r.error);
    h.p.release(h.p.self, &r);
    ev.id = CLARITY_EV_BEFORE_AGENT_START;
    ev.version = 2;
    cr_assert_eq(h.p.on_event(h.p.self, &ev, &r), CLARITY_DECLINED);
    h.p.release(h.p.self, &r);
    /* commands for other plugins and methods outside clarity.* too */
    cr_assert_eq(th_cmd(&h, "s", "/other thing", NULL, NULL), CLARITY_DECLINED);
    cr_assert_eq(th_rpc(&h, "memory.search", "{}", NULL), CLARITY_DECLINED);
    th_close(&h);
}

Test(abi, payload_without_session_is_an_error_not_a_crash)
{
    th_host h;
    cr_assert_eq(th_open(&h, "{\"storage\":{\"backend\":\"memory\"}}", 0, NULL), 0);
    clarity_before_agent_start p = {sizeof p, NULL, NULL, "x", 1, NULL, 0};
    clarity_event ev = {sizeof ev, CLARITY_EV_BEFORE_AGENT_START, 1, &p};
    clarity_result r = {.struct_size = sizeof r};
    cr_assert_eq(h.p.on_event(h.p.self, &ev, &r), CLARITY_EINVAL);
    cr_assert_not_null(r.error);
    cr_assert_not_null(strstr(r.error, "session_id"));
    h.p.release(h.p.self, &r);
    h.p.release(h.p.self, &r); /* releasing twice is harmless */
    ev.data = NULL;
    cr_assert_eq(h.p.on_event(h.p.self, &ev, &r), CLARITY_EINVAL);
    h.p.release(h.p.self, &r);
    th_close(&h);
}
