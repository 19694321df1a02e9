/* fuzz_prompt: what the ranking reads of a prompt (graph/prompt.c) and its
 * tokens (graph/tokenize.c) on arbitrary bytes.
 * Invariants: no crash; the cleaned text keeps the length and every
 * newline; a token is non-empty and at most 64 bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/internal.h"

static int check(void *ud, const char *tok, size_t n)
{
    (void)ud;
    if (n == 0 || n > 64 || !tok) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *out = malloc(size ? size : 1);
    if (!out) return 0;
    const char *in = (const char *)data;
    if (graph_prompt_clean(in, size, out) != size) abort();
    for (size_t i = 0; i < size; i++)
        if ((in[i] == '\n') != (out[i] == '\n')) abort();
    graph_tokenize(out, size, 0, check, NULL);
    graph_tokenize(in, size, 1, check, NULL);
    free(out);
    return 0;
}
