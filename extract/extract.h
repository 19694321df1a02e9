/* extract.h: entity extraction (the built-in categories by one walk over
 * the words of the text; PCRE2 with JIT and match limits for configured
 * patterns; invalid UTF-8 tolerated) and the id normalization shared by
 * mentions, references and user lookups.
 *
 * Ids per category:
 *   project  plain lowercase, '-' -> '_'     ClaraCore -> claracore, focus-engine -> focus_engine
 *   tool     "tool:" + lowercase             web_search -> tool:web_search, Bash -> tool:bash
 *   file     "file:" + path                  memory/doc files lowercased (file:soul.md);
 *                                            source paths keep their case, made relative
 *                                            to the workspace when it is known
 *   keyword  "keyword:" + lowercase word     keyword:refactoring
 *   custom   "<name>:" + lowercase match
 * An extractor is immutable after extract_new() and may be shared by threads.
 */
#ifndef EXTRACT_EXTRACT_H
#define EXTRACT_EXTRACT_H

#include <stddef.h>
#include <string.h>

#include "../config/config.h"
#include "../util/buf.h"
#include "../util/namefilter.h"

typedef struct extractor extractor;

/* Called once per distinct id.  id is NUL-terminated and valid only during
 * the call.  Return non-zero to stop. */
typedef int (*extract_cb)(void *ud, const char *id, int category);

/* Compiles every pattern of cfg.  On failure returns CLARITY_ECONFIG or
 * CLARITY_ENOMEM and sets *err (malloc()ed) naming the pattern, PCRE2's
 * message and the offset. */
int extract_new(const clarity_config *cfg, extractor **out, char **err);
void extract_free(extractor *ex);

/* Copies text into out without the blocks clarity injected itself
 * ("[CLARITY CONTEXT]" ... "[/CLARITY CONTEXT]", or to the next blank line
 * when the end marker was cut off).  A block between two bytes of a token
 * leaves a newline, so that it does not join them into one. */
void extract_strip_own(const char *text, size_t len, buf *out);
#define EXTRACT_OWN_OPEN "[CLARITY CONTEXT]"
#define EXTRACT_OWN_CLOSE "[/CLARITY CONTEXT]"
#define EXTRACT_OWN_OPEN_LEN (sizeof EXTRACT_OWN_OPEN - 1)
/* Where the first such block starts in text[0, len), or NULL. */
const char *extract_find_own(const char *text, size_t len);
/* The text without those blocks in *out, *out_len: text itself when it
 * holds none (prompts can be 64 MiB and almost never do: no copy), else
 * extract_strip_own's copy in scratch.  CLARITY_OK or CLARITY_ENOMEM. */
int extract_without_own(const char *text, size_t len, buf *scratch, const char **out, size_t *out_len);

/* Mentions in a user prompt: every distinct id of every enabled category,
 * excluded ids dropped, keywords capped per message.  Text may hold NUL
 * bytes and invalid UTF-8.  workspace may be NULL.  Deterministic order.
 * Returns 0, CLARITY_ENOMEM, or CLARITY_ERR when a match limit was hit
 * (ids found so far were still reported). */
int extract_mentions(const extractor *ex, const char *text, size_t len, const char *workspace,
                     extract_cb cb, void *ud);

/* The same by separate passes and PCRE2 for CamelCase (how it was done
 * before the one-pass scan): the reference the differential fuzzer checks
 * extract_mentions against. */
int extract_mentions_reference(const extractor *ex, const char *text, size_t len, const char *workspace,
                               extract_cb cb, void *ud);

/* Reference candidates: every id that some word, path or name in text could
 * stand for, with word-boundary semantics (a token must equal the item's
 * name, not merely contain it).  The caller looks each up in its table; the
 * cost is linear in the text, independent of the number of tracked items. */
int extract_candidates(const extractor *ex, const char *text, size_t len, const char *workspace,
                       extract_cb cb, void *ud);

/* The forms a whole word stands for (extract_word_cb). */
enum { EXTRACT_FORM_PROJECT = 1, EXTRACT_FORM_TOOL = 2, EXTRACT_FORM_KEYWORD = 4 };
#define EXTRACT_WORD_MAX 64 /* longer words stand for nothing */
#define EXTRACT_FORM_ID_MAX (sizeof "keyword:" - 1 + EXTRACT_WORD_MAX)

/* The id of one form (an EXTRACT_FORM_ bit) of the lowercase word w[0..n):
 * w, "tool:" w or "keyword:" w, into out (EXTRACT_FORM_ID_MAX bytes, not
 * NUL-terminated).  Returns its length.  Inline: every tracked word of a
 * reply goes through it. */
static inline size_t extract_form_id(unsigned form, const char *w, size_t n, char *out)
{
    static const char pre[3][8] = {"", "tool:", "keyword:"}; /* by form >> 1 */
    static const unsigned char len[3] = {0, 5, 8};
    memcpy(out, pre[form >> 1], 8); /* one 8-byte store; the word overwrites the rest */
    memcpy(out + len[form >> 1], w, n);
    return len[form >> 1] + n;
}

/* A whole word of the text that passed the filter, lowercase (w[0..n), not
 * NUL-terminated, n <= EXTRACT_WORD_MAX), with the forms it may stand for
 * whose ids pass the filter too (at least one): the project id w, "tool:"
 * w and, when the word may be a keyword, "keyword:" w.  A caller with a
 * table looks those ids up itself instead
 * of receiving each through extract_cb: no id is built or deduplicated
 * for it.  The same word may come more than once, and a form may also
 * come as an id (a hyphen run's project form "a_b" is the word a_b's);
 * the caller's lookups must not mind.  Non-zero stops the scan. */
typedef int (*extract_word_cb)(void *ud, const char *w, size_t n, unsigned forms);

/* What a filtered scan filters by. */
typedef struct extract_filter {
    const name_filter *names; /* the tracker's filter of the bare names it holds */
    extract_word_cb word;     /* NULL: a word's forms come to extract_cb as ids */
} extract_filter;

/* The same, reporting only candidates whose bare name passes f->names;
 * f NULL (or f->names NULL) passes everything.  Custom-pattern candidates
 * are not filtered. */
int extract_candidates_filtered(const extractor *ex, const char *text, size_t len,
                                const char *workspace, const extract_filter *f, extract_cb cb,
                                void *ud);
/* extract_candidates_filtered of what extract_strip_own leaves of text,
 * without making that copy unless a block is there: the scan itself finds
 * where one starts. */
int extract_candidates_stripped(const extractor *ex, const char *text, size_t len, const char *workspace,
                                const extract_filter *f, extract_cb cb, void *ud);

/* Same for a tool call's JSON arguments: visits every string value; values
 * of path-like keys (file_path, path, file_paths[], notebook_path...) are
 * reported as file ids.  Malformed JSON is scanned as plain text. */
int extract_candidates_json(const extractor *ex, const char *json, const char *workspace,
                            extract_cb cb, void *ud);
/* File ids named by path-like keys of a tool call's JSON arguments only
 * (what the agent concretely touched). */
int extract_tool_files(const extractor *ex, const char *json, const char *workspace,
                       extract_cb cb, void *ud);

/* Both of the above for one tool call, its arguments parsed once:
 * extract_tool_files' ids to on_file, then extract_candidates_json's to
 * on_candidate (and f->word), filtered by f as extract_candidates_filtered
 * is (f NULL: all). */
int extract_tool_call(const extractor *ex, const char *json, const char *workspace,
                      const extract_filter *f, extract_cb on_file, extract_cb on_candidate, void *ud);

/* The string value of a member of a tool call's JSON arguments (a
 * top-level object): of the first of keys[0, n_keys) that the object holds
 * as a string, what jansson's json_object_get would give, read without
 * building a tree when the document allows (jsonwalk.c).  1 with the value
 * in *out (reset first), 0 when there is none (or no JSON object),
 * CLARITY_ENOMEM. */
int extract_json_member(const char *json, const char *const *keys, size_t n_keys, buf *out);

/* Candidate ids for a name typed by a user (/clarity anchor ClaraCore):
 * the name as an id if it already has a known prefix, then its project,
 * file, tool and keyword forms.  Reported in that order of preference. */
int extract_lookup_forms(const extractor *ex, const char *name, const char *workspace,
                         extract_cb cb, void *ud);

/* Normalizes a file path: strips "./", resolves "." and ".." segments,
 * makes an absolute path under workspace relative.  Returns a malloc()ed
 * string or NULL. */
char *extract_normalize_path(const char *path, size_t len, const char *workspace);

#endif
