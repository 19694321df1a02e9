/* fuzz_serve: arbitrary bytes as `clarity serve`'s stdin: the JSON-RPC
 * framing (lines, batches, ids, notifications) and every method, through
 * cli/serve.c with the plugin in process.  Invariant: no crash, no leak,
 * no sanitizer report. */
#include <stdint.h>

#include "inproc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cli *c = fz_cli();
    fz_stdin(data, size);
    cli_serve(c);
    return 0;
}
