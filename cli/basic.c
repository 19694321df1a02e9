/* basic.c: the subcommands that are one plugin call: cmd, rpc, export and
 * import. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/buf.h"
#include "cli.h"
#include "../util/fs.h"
#include "jsonconv.h"



static void print_data(const clarity_result *r)
{
    if (!r->data || !r->len) return;
    fwrite(r->data, 1, r->len, stdout);
    if (r->data[r->len - 1] != '\n') putchar('\n');
}

static int do_cmd(cli *c, const char *line)
{
    clarity_result res;
    int rc = loader_command(&c->L, c->session ? c->session : "default", line, &res);
    int ex = EXIT_OK;
    if (rc == CLARITY_DECLINED) {
        fprintf(stderr, "clarity: not a /clarity command: %s\n", line);
        ex = EXIT_PLUGIN;
    } else if (rc < 0) {
        fprintf(stderr, "clarity: %s\n", loader_errtext(&c->L, rc, &res));
        ex = EXIT_PLUGIN;
    } else {
        print_data(&res);
    }
    loader_release(&c->L, &res);
    return ex;
}

/* Calls a method and prints its JSON (or the error JSON) on stdout. */
static int do_rpc(cli *c, const char *method, const char *params)
{
    clarity_result res;
    int rc = loader_rpc(&c->L, method, params, &res);
    int ex = EXIT_OK;
    if (rc < 0) {
        json_t *e = rc == CLARITY_DECLINED
                        ? json_pack("{s:i,s:s+}", "code", -32601, "message", "Method not found: ", method)
                        : rpc_error_object(&c->L, rc, &res);
        char *s = e ? json_compact(e) : NULL;
        puts(s ? s : "{\"code\":-32000,\"message\":\"out of memory\"}");
        fprintf(stderr, "clarity: %s: %s\n", method,
                rc == CLARITY_DECLINED ? "method not found" : loader_errtext(&c->L, rc, &res));
        free(s);
        json_decref(e);
        ex = EXIT_PLUGIN;
    } else if (res.data) {
        print_data(&res);
    } else {
        puts("null");
    }
    loader_release(&c->L, &res);
    return ex;
}

static char *session_params(const char *session, json_t *state)
{
    json_t *o = json_pack("{s:s}", "session", session);
    if (o && state) json_object_set(o, "state", state);
    char *s = o ? json_compact(o) : NULL;
    json_decref(o);
    return s;
}

static int do_import(cli *c, const char *path)
{
    size_t len;
    char *text = util_read_file(path, CLI_MAX_FILE, &len);
    if (!text) {
        fprintf(stderr, "clarity: %s: %s\n", path, strerror(errno));
        return EXIT_FAIL;
    }
    json_error_t je;
    json_t *state = json_loadb(text, len, 0, &je);
    free(text);
    if (!state) {
        fprintf(stderr, "clarity: %s:%d:%d: %s\n", strcmp(path, "-") ? path : "<stdin>", je.line,
                je.column, je.text);
        return EXIT_FAIL;
    }
    /* What `clarity export` prints is an envelope {namespace, key, session,
     * value}; clarity.importState takes the value (the legacy shape). */
    json_t *value = json_object_get(state, "value");
    if (json_is_object(value) && !json_object_get(state, "items")) {
        json_incref(value);
        json_decref(state);
        state = value;
    }
    char *params = session_params(c->session ? c->session : "default", state);
    json_decref(state);
    if (!params) return EXIT_FAIL;
    int ex = do_rpc(c, "clarity.importState", params);
    free(params);
    return ex;
}


int cli_run_cmd(cli *c, char **args, int n)
{
    buf line;
    buf_init(&line);
    for (int i = 0; i < n; i++) {
        if (i) buf_putc(&line, ' ');
        buf_puts(&line, args[i]);
    }
    int ex = buf_failed(&line) ? EXIT_FAIL : do_cmd(c, line.p);
    buf_free(&line);
    return ex;
}

int cli_run_rpc(cli *c, char **args, int n)
{
    const char *params = n > 1 ? args[1] : "{}";
    char *owned = NULL;
    if (strcmp(params, "-") == 0) {
        owned = util_read_file("-", CLI_MAX_FILE, NULL);
        if (!owned) {
            fprintf(stderr, "clarity: <stdin>: %s\n", strerror(errno));
            return EXIT_FAIL;
        }
        params = owned;
    }
    int ex = do_rpc(c, args[0], params);
    free(owned);
    return ex;
}

int cli_run_export(cli *c, char **args, int n)
{
    (void)args, (void)n;
    char *params = session_params(c->session ? c->session : "default", NULL);
    int ex = params ? do_rpc(c, "clarity.exportState", params) : EXIT_FAIL;
    free(params);
    return ex;
}

int cli_run_import(cli *c, char **args, int n)
{
    (void)n;
    return do_import(c, args[0]);
}
