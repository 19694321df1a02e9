/* stopwords.h: words never reported as keywords (English function words,
 * everyday verbs and adjectives, and agent/LLM jargon).
 *
 * Lookup is O(1): an open-addressing table built once (pthread_once) from a
 * static list, without allocation; safe to call from any thread.
 */
#ifndef EXTRACT_STOPWORDS_H
#define EXTRACT_STOPWORDS_H

#include <stddef.h>
#include <stdint.h>

#define STOPWORD_MAX 32 /* no stopword is longer */

/* Non-zero when the n bytes at w (lowercase ASCII expected; the comparison
 * is exact) are a stopword. */
int stopword_is(const char *w, size_t n);
/* The same for a word given as lanes: its bytes in memory order, zero
 * past n, STOPWORD_MAX / 8 of them readable; h = name_hash() of it. */
int stopword_is_lanes(const uint64_t *lanes, size_t n, uint64_t h);

/* Number of distinct stopwords in the list. */
size_t stopword_count(void);

#endif
