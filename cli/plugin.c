/* plugin.c: the plugin a subcommand runs: its config (--config with
 * storage.path from --state or the default state path) and its loading.
 * main.c unloads it after the command; the Claude Code hook loads it only
 * for the events that need it and reads the config for its own state. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/buf.h"
#include "../util/fs.h"
#include "../util/errors.h"
#include "cli.h"
#include "jsonconv.h"
#include "loader.h"

/* The default state database (util_default_state_path), or NULL after
 * saying why on stderr. */
static char *default_state_path(void)
{
    char *err = NULL, *path = util_default_state_path(&err);
    if (!path) fprintf(stderr, "clarity: %s\n", err ? err : "out of memory");
    free(err);
    return path;
}

/* The config JSON text handed to the plugin, or NULL on error (reported).
 * A long-lived command's prompts wait at most CLI_GRAPH_WAIT_MS for a code
 * graph to load unless the config says (the plugin's default, -1, waits
 * for it: right for a process per hook, whose later prompts are other
 * processes). */
static char *build_config(const cli *c, int long_lived)
{
    json_t *root = NULL;
    if (c->config_path) {
        size_t len;
        char *text = util_read_file(c->config_path, CLI_MAX_FILE, &len);
        if (!text) {
            fprintf(stderr, "clarity: %s: %s\n", c->config_path, strerror(errno));
            return NULL;
        }
        json_error_t je;
        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        free(text);
        if (!root) {
            fprintf(stderr, "clarity: %s:%d:%d: %s\n", c->config_path, je.line, je.column, je.text);
            return NULL;
        }
        if (!json_is_object(root)) {
            fprintf(stderr, "clarity: %s: the configuration must be a JSON object\n", c->config_path);
            json_decref(root);
            return NULL;
        }
    } else {
        root = json_object();
        if (!root) return NULL;
    }
    json_t *storage = json_object_get(root, "storage");
    if (!storage) {
        storage = json_object();
        json_object_set_new(root, "storage", storage);
    }
    /* A storage that is not an object is left for the plugin to refuse. */
    if (json_is_object(storage) && c->store_url) {
        json_object_set_new(storage, "backend", json_string("redis"));
        json_object_set_new(storage, "url", json_string(c->store_url));
    }
    if (json_is_object(storage)) {
        const char *backend = json_string_value(json_object_get(storage, "backend"));
        int uses_file = !backend || strcmp(backend, "auto") == 0 || strcmp(backend, "sqlite") == 0;
        if (c->store_url) uses_file = 0;
        if (c->state_path) {
            json_object_set_new(storage, "path", json_string(c->state_path));
        } else if (!json_object_get(storage, "path") && uses_file &&
                   !(c->kv_path && (!backend || strcmp(backend, "auto") == 0))) {
            char *def = default_state_path();
            if (!def) {
                json_decref(root);
                return NULL;
            }
            json_object_set_new(storage, "path", json_string(def));
            free(def);
        }
        if (json_object_size(storage) == 0) json_object_del(root, "storage");
    }
    json_t *pred = json_object_get(root, "prediction");
    if (long_lived && !pred) json_object_set_new(root, "prediction", pred = json_object());
    if (long_lived && json_is_object(pred) && !json_object_get(pred, "loadWaitMs"))
        json_object_set_new(pred, "loadWaitMs", json_integer(CLI_GRAPH_WAIT_MS));
    char *out = json_compact(root);
    json_decref(root);
    return out;
}

/* The graph commands' plugin runs on a memory store (the graph has its own
 * cache), the others' with the config and state the options give. */
const char *cli_config(cli *c)
{
    const cli_command *k = c->cmd;
    if (!c->config_json)
        c->config_json = k->needs == NEEDS_GRAPH ? util_strdup("{\"storage\":{\"backend\":\"memory\"}}")
                                                 : build_config(c, k->long_lived);
    return c->config_json;
}

int cli_load_plugin(cli *c)
{
    if (c->L.ready) return 0;
    const char *config = cli_config(c);
    if (!config) return -1;
    hostsvc_log(c->hs, CLARITY_LOG_DEBUG, "config: %s", config);
    clarity_host host;
    hostsvc_fill(c->hs, &host);
    host.flags |= c->host_flags;
    char *err = NULL;
    int rc = loader_open(&c->L, c->plugin_path, &host, config, &err);
    if (rc != 0) {
        fprintf(stderr, "clarity: %s\n", err ? err : "cannot load the plugin");
        free(err);
        return -1;
    }
    hostsvc_log(c->hs, CLARITY_LOG_DEBUG, "loaded %s (%s %s)", c->L.path,
                c->L.p.name ? c->L.p.name : "?", c->L.p.version ? c->L.p.version : "?");
    return 0;
}

