# mk/claude-code.mk: clarity inside Claude Code (adapters/claude-code): the
# `clarity hook` and `clarity install` code compiled into the CLI, and its
# end-to-end test against the real Claude Code CLI (e2e.mjs + a mock
# Messages API on 127.0.0.1).
# Installs the pinned @anthropic-ai/claude-code (its native binary comes in
# the platform package; install scripts are not needed) and runs the test
# against $(CLI).  Unattended: no TTY, nothing leaves loopback.
CLAUDE_CODE_DIR := adapters/claude-code
CLI_DIRS += $(CLAUDE_CODE_DIR)
EXTRA_CHECKS += e2e-claude-code

.PHONY: e2e-claude-code
$(CLAUDE_CODE_DIR)/node_modules/.clarity-stamp: $(CLAUDE_CODE_DIR)/package.json $(CLAUDE_CODE_DIR)/package-lock.json
	@command -v node >/dev/null && command -v npm >/dev/null || \
	  { echo "e2e-claude-code: node and npm are required (apt-get install nodejs npm)"; exit 1; }
	cd $(CLAUDE_CODE_DIR) && npm ci --ignore-scripts --no-audit --no-fund || \
	  { echo "e2e-claude-code: npm ci failed in $(CLAUDE_CODE_DIR) (is the npm registry reachable?)"; exit 1; }
	@touch $@

e2e-claude-code: $(SO) $(CLI) $(CLAUDE_CODE_DIR)/node_modules/.clarity-stamp
	CI=true node $(CLAUDE_CODE_DIR)/e2e.mjs --clarity $(abspath $(CLI)) < /dev/null
