/* mcp.h: the MCP server (mcp.c) and its tools (mcp_tools.c). */
#ifndef ADAPTERS_MCP_H
#define ADAPTERS_MCP_H

#include <jansson.h>

#include "../../cli/cli.h"

#define MCP_PROTOCOL_VERSION "2025-11-25"

enum {
    MCP_PARSE_ERROR = -32700,
    MCP_INVALID_REQUEST = -32600,
    MCP_METHOD_NOT_FOUND = -32601,
    MCP_INVALID_PARAMS = -32602,
    MCP_INTERNAL_ERROR = -32603
};

typedef struct mcp_server {
    cli *c;
    const char *session; /* default session: --session, else "default" */
    int initialized;
    int graph; /* -1 unknown, 0 no code graph, 1 a code graph answers */
} mcp_server;

typedef struct mcp_tool mcp_tool;

/* clarity mcp: an MCP server on stdin/stdout (mcp.c); the CLI dispatches here. */
int cli_mcp(cli *c);

/* {"tools": [...]}: every tool whose preconditions hold. */
json_t *mcp_tools_list(mcp_server *s);
/* The listed tool of that name, or NULL. */
const mcp_tool *mcp_tool_find(mcp_server *s, const char *name);
/* A CallToolResult: {content: [{type: "text", text}], structuredContent,
 * isError?}.  args may be NULL.  NULL only on allocation failure. */
json_t *mcp_tool_call(mcp_server *s, const mcp_tool *t, json_t *args);

#endif
