/* gateway.h: slash commands and RPC methods over an engine.
 * Both write their answer into out (text for commands, JSON for RPC) and,
 * on failure, a malloc()ed message into *err.  RPC failures also put a
 * JSON-RPC style {"code": n, "message": "..."} object in out. */
#ifndef GATEWAY_GATEWAY_H
#define GATEWAY_GATEWAY_H

#include "../engine/engine.h"
#include "../pruner/pruner.h"

/* JSON-RPC error codes used in RPC answers. */
enum {
    RPC_INVALID_REQUEST = -32600,
    RPC_METHOD_NOT_FOUND = -32601,
    RPC_INVALID_PARAMS = -32602,
    RPC_INTERNAL = -32603,
    RPC_UNKNOWN_SESSION = -32001,
    RPC_UNKNOWN_ITEM = -32002,
    RPC_STORE = -32003
};

int gateway_command(engine *e, const char *session_id, const char *line, buf *out, char **err);
int gateway_rpc(engine *e, const char *method, const char *params_json, buf *out, char **err);

/* ---- views.c: what commands and RPC both show ---- */

typedef struct scored_item {
    item *it;
    score_breakdown b;
} scored_item;

/* All items (pruned ones too when include_pruned), by score desc then id
 * for the first `exact` of them (at least: whole runs of equal scores);
 * past those, equal scores stay in tracker order.  (size_t)-1 orders all.
 * *v is malloc()ed; returns the count, or (size_t)-1 on allocation failure. */
size_t view_sorted(engine *e, session *s, int include_pruned, size_t exact, scored_item **v);
void view_scores_json(engine *e, session *s, size_t limit, int include_pruned, buf *out);
void view_state_json(engine *e, session *s, buf *out);
void view_stats_json(engine *e, session *s, buf *out);
void view_prune_json(const prune_result *r, const char *session_id, int applied, int strict,
                     buf *out);
/* Resolves a user-typed name to an existing item (NULL when none) and the
 * id it would get if created (into *canonical, malloc()ed). */
item *view_lookup(engine *e, session *s, const char *name, char **canonical);

#endif
