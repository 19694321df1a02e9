/* trim.h: oversized tool outputs cut to a budget, keeping head, tail and
 * the lines that name the session's hot items (trim.c). */
#ifndef ENGINE_TRIM_H
#define ENGINE_TRIM_H

#include "engine.h"

#define TRIM_MAX_FIELDS 8  /* text fields of one output (stdout, stderr...) */
#define TRIM_RESERVE 400   /* bytes for the summary line and the markers */
#define TRIM_GAP_MAX 64    /* one "[clarity: N lines elided (M characters)]" */

typedef struct trim_stats {
    size_t lines_before, lines_after, lines_elided;
    size_t head_lines, tail_lines, hot_lines;
} trim_stats;

/* When len exceeds max_chars (>= 1000), appends the trimmed text (at most
 * max_chars bytes) to out and returns 1; returns 0 and appends nothing
 * when it fits; CLARITY_ENOMEM.  s (locked, may be NULL) gives the hot
 * items. */
int trim_text(engine *e, session *s, const char *text, size_t len, size_t max_chars, buf *out,
              trim_stats *st);

/* Splits max_chars over n <= TRIM_MAX_FIELDS fields of the given sizes. */
void trim_budgets(const size_t *sizes, size_t n, size_t max_chars, size_t *budget);

#endif
