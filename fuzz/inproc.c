/* inproc.c: see inproc.h. */
#include "inproc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile sig_atomic_t cli_stop = 0;

int clarity_plugin_init(const clarity_host *host, const char *config_json, clarity_plugin *out,
                        char **errmsg);

/* The in-process plugin's config, and the plugin fz_cli loaded (cli/plugin.c
 * holds the CLI's own, which build and load them). */
#define FZ_CONFIG "{\"storage\":{\"backend\":\"memory\"}}"
const char *cli_config(cli *c)
{
    (void)c;
    return FZ_CONFIG;
}

int cli_load_plugin(cli *c) { return c->L.ready ? 0 : -1; }

cli *fz_cli(void)
{
    static cli c;
    static int ready;
    if (ready) return &c;
    memset(&c, 0, sizeof c);
    c.log_level = CLARITY_LOG_ERROR + 1; /* silent */
    char *err = NULL;
    if (hostsvc_new(c.log_level, NULL, &c.hs, &err) != 0) abort();
    clarity_host host;
    hostsvc_fill(c.hs, &host);
    c.L.p.struct_size = sizeof c.L.p;
    if (clarity_plugin_init(&host, FZ_CONFIG, &c.L.p, &err) != 0) abort();
    c.L.ready = 1;
    c.L.path = strdup("(in process)");
    if (!freopen("/dev/null", "w", stdout)) abort();
    ready = 1;
    return &c;
}

void fz_stdin(const void *data, size_t size)
{
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/clarity-fuzz-stdin-%d", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    if (!freopen(path, "rb", stdin)) abort();
    unlink(path); /* stdin keeps it open; nothing is left in /tmp */
}
