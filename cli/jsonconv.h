/* jsonconv.h: jansson values <-> ABI structs for the reference gateway.
 *
 * A JSON message is {"role": "user"|"assistant"|"tool"|"system",
 * "text"?: string, "tool_name"?: string|null, "tool_args"?: object|string|null}.
 * tool_args becomes tool_args_json: an object is dumped compact, a string
 * is passed through as already-encoded JSON.
 */
#ifndef CLI_JSONCONV_H
#define CLI_JSONCONV_H

#include <jansson.h>
#include <stddef.h>

#include "../include/clarity.h"
#include "loader.h"

/* A clarity_message array whose strings point into referenced jansson
 * values (kept alive by the vector) or into owned tool_args dumps. */
typedef struct msgvec {
    clarity_message *v;
    json_t **refs; /* one reference per message */
    char **args;   /* owned tool_args dumps, or NULL */
    size_t n, cap;
} msgvec;

void msgvec_init(msgvec *m);
void msgvec_clear(msgvec *m); /* drops the messages, keeps the allocation */
void msgvec_free(msgvec *m);
/* Exchanges the contents of two vectors. */
void msgvec_swap(msgvec *a, msgvec *b);

/* Appends one message object.  Returns 0, or -1 with *err pointing to a
 * static description ("role: must be one of ..."); -1 with *err NULL on
 * allocation failure. */
int msgvec_push_json(msgvec *m, json_t *msg, const char **err);
/* Appends a copy of an existing message of another vector (shares refs). */
int msgvec_push_from(msgvec *m, const msgvec *src, size_t i);
/* Appends every element of a JSON array; on error *err_index is the bad
 * element's index. */
int msgvec_push_array(msgvec *m, json_t *arr, size_t *err_index, const char **err);

/* The reverse direction: a JSON array of message objects (for logs). */
json_t *msgs_to_json(const clarity_message *v, size_t n);

/* A JSON string from bytes that may be invalid UTF-8 (replaced by U+FFFD). */
json_t *json_string_lossy(const char *s, size_t n);
/* A JSON-RPC 2.0 response: {"jsonrpc","id","error"} when error is given,
 * else {"jsonrpc","id","result"} (null when result is NULL).  id is
 * borrowed (NULL = null); result and error are stolen. */
json_t *jsonrpc_response(json_t *id, json_t *result, json_t *error);
/* Writes resp as one line of newline-delimited JSON-RPC on stdout and
 * flushes (serve and mcp frame their answers so).  0, or -1 when stdout
 * failed or out of memory; resp stays the caller's. */
int jsonrpc_emit(json_t *resp);

/* A plugin result's data parsed as JSON (any value), or NULL. */
json_t *result_json(const clarity_result *r);

/* The JSON-RPC error object for a failed plugin call: the plugin's data
 * when it is an object with "code" and "message", else
 * {"code": -32601 (declined) | -32000, "message": error text}. */
json_t *rpc_error_object(const loader *L, int rc, const clarity_result *r);

/* Compact one-line dump, malloc()ed, or NULL. */
char *json_compact(const json_t *v);

#endif
