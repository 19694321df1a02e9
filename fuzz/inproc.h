/* inproc.h: the reference host's code (cli/, adapters/) driven in-process
 * by a fuzz harness: the plugin is linked into the harness, so the loader
 * is filled from clarity_plugin_init instead of dlopen. */
#ifndef FUZZ_INPROC_H
#define FUZZ_INPROC_H

#include <stddef.h>

#include "../cli/cli.h"

/* A cli with the plugin loaded on a memory store (made once). */
cli *fz_cli(void);
/* Points stdin at the bytes (through a temp file) and stdout at /dev/null. */
void fz_stdin(const void *data, size_t size);

#endif
