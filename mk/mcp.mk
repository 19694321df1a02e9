# mk/mcp.mk: the MCP server (adapters/mcp: `clarity mcp`, compiled into the
# CLI) and its end-to-end test, driven by the official MCP TypeScript SDK
# client over stdio (adapters/mcp/e2e.mjs, @modelcontextprotocol/sdk pinned).
MCP_E2E_DIR := adapters/mcp
CLI_DIRS += $(MCP_E2E_DIR)
EXTRA_CHECKS += e2e-mcp

.PHONY: e2e-mcp
$(MCP_E2E_DIR)/node_modules/.clarity-stamp: $(MCP_E2E_DIR)/package.json $(MCP_E2E_DIR)/package-lock.json
	@command -v node >/dev/null && command -v npm >/dev/null || \
	  { echo "e2e-mcp: node and npm are required (apt-get install nodejs npm)"; exit 1; }
	cd $(MCP_E2E_DIR) && npm ci --ignore-scripts --no-audit --no-fund || \
	  { echo "e2e-mcp: npm ci failed in $(MCP_E2E_DIR) (is the npm registry reachable?)"; exit 1; }
	@touch $@

e2e-mcp: $(SO) $(CLI) $(MCP_E2E_DIR)/node_modules/.clarity-stamp
	node $(MCP_E2E_DIR)/e2e.mjs --clarity $(abspath $(CLI)) < /dev/null
