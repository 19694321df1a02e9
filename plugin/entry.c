/* entry.c: the ABI glue, and the only exported symbol. */
#include <stdlib.h>
#include <string.h>

#include "../gateway/gateway.h"
#include "../engine/engine.h"
#include "../util/errors.h"

/* Moves b (and err) into the host's result, whatever the outcome. */
static int finish(clarity_result *out, buf *b, char *err, int rc)
{
    if (!out) {
        buf_free(b);
        free(err);
        return rc;
    }
    size_t len = 0;
    char *data = buf_steal(b, &len);
    if (!data && rc == CLARITY_OK) rc = CLARITY_ENOMEM;
    if (rc != CLARITY_OK && rc != CLARITY_DECLINED && !err) err = strdup(util_rc_name(rc));
    out->data = data;
    out->len = data ? len : 0;
    if (CLARITY_HAS_MEMBER(out, clarity_result, error)) out->error = err;
    else free(err);
    return rc;
}

static void reset_result(clarity_result *out)
{
    if (!out) return;
    out->data = NULL;
    out->len = 0;
    if (CLARITY_HAS_MEMBER(out, clarity_result, error)) out->error = NULL;
}

static int api_on_event(void *self, const clarity_event *ev, clarity_result *out)
{
    reset_result(out);
    buf b;
    buf_init(&b);
    char *err = NULL;
    int rc = hooks_on_event(self, ev, &b, &err);
    return finish(out, &b, err, rc);
}

static int api_command(void *self, const char *session_id, const char *line, clarity_result *out)
{
    reset_result(out);
    buf b;
    buf_init(&b);
    char *err = NULL;
    int rc = gateway_command(self, session_id, line, &b, &err);
    return finish(out, &b, err, rc);
}

static int api_rpc(void *self, const char *method, const char *params, clarity_result *out)
{
    reset_result(out);
    buf b;
    buf_init(&b);
    char *err = NULL;
    int rc = gateway_rpc(self, method, params, &b, &err);
    return finish(out, &b, err, rc);
}

static void api_release(void *self, clarity_result *r)
{
    if (!r) return;
    free(r->data);
    r->data = NULL;
    r->len = 0;
    if (CLARITY_HAS_MEMBER(r, clarity_result, error)) {
        free(r->error);
        r->error = NULL;
    }
}

static void api_unload(void *self) { engine_free(self); }

static void set_err(char **errmsg, char *msg)
{
    if (errmsg) *errmsg = msg;
    else free(msg);
}

CLARITY_EXPORT int clarity_plugin_init(const clarity_host *host, const char *config_json,
                                       clarity_plugin *out, char **errmsg)
{
    if (errmsg) *errmsg = NULL;
    if (!host || !out) {
        set_err(errmsg, strdup("clarity_plugin_init: host and out are required"));
        return CLARITY_EINVAL;
    }
    if (host->abi_version != CLARITY_ABI_VERSION ||
        host->struct_size < offsetof(clarity_host, kv_get)) {
        set_err(errmsg, strdup("clarity_plugin_init: host ABI version or table size not supported "
                               "(this plugin speaks ABI 1)"));
        return CLARITY_EVERSION;
    }
    if (out->struct_size < offsetof(clarity_plugin, unload) + sizeof out->unload) {
        set_err(errmsg, strdup("clarity_plugin_init: out->struct_size too small for ABI 1"));
        return CLARITY_EVERSION;
    }
    engine *e = NULL;
    char *err = NULL;
    int rc = engine_new(host, config_json, &e, &err);
    if (rc != CLARITY_OK) {
        set_err(errmsg, err ? err : strdup(util_rc_name(rc)));
        return rc;
    }
    /* Fill only what the host's struct can hold (it may be older). */
    clarity_plugin p;
    memset(&p, 0, sizeof p);
    p.struct_size = out->struct_size < sizeof p ? out->struct_size : (uint32_t)sizeof p;
    p.abi_version = CLARITY_ABI_VERSION;
    p.name = "clarity";
    p.version = CLARITY_VERSION;
    p.self = e;
    p.on_event = api_on_event;
    p.command = api_command;
    p.rpc = api_rpc;
    p.release = api_release;
    p.strerror = util_rc_name;
    p.unload = api_unload;
    memcpy(out, &p, p.struct_size);
    return CLARITY_OK;
}
