/* tokens.h: a cheap, deterministic token estimate: ASCII at 4 bytes a token
 * (the usual ratio of BPE tokenizers on English and code), every other
 * character a token of its own (CJK and most symbols are).  The plugin,
 * the CLI and the eval baselines all use this one. */
#ifndef UTIL_TOKENS_H
#define UTIL_TOKENS_H

#include <stddef.h>
#include <stdint.h>

int64_t util_estimate_tokens(const char *s, size_t n);

#endif
