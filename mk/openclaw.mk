# mk/openclaw.mk: the OpenClaw plugin (adapters/openclaw), end to end.
# adapters/openclaw/test/install-deps.sh installs the plugin's koffi in
# adapters/openclaw/node_modules and the pinned test packages (openclaw,
# node@24 for its Node 24 binary, koffi) in $(BUILD)/openclaw-e2e, outside
# the plugin folder.  Then, under that Node 24:
#   abi.test.mjs  the koffi structs against include/clarity.h (C compiler),
#                 the binding and the plugin entry against libclarity.so
#   run-e2e.mjs   the real OpenClaw gateway with a mock model on 127.0.0.1,
#                 HOME in a temporary directory
# Unattended (CI=true, no TTY), loopback only, bounded (run-e2e: 15 min cap).
EXTRA_CHECKS += e2e-openclaw
OPENCLAW_DIR := adapters/openclaw
OPENCLAW_DEPS = $(abspath $(BUILD))/openclaw-e2e
OPENCLAW_NODE = $(OPENCLAW_DEPS)/node_modules/.bin/node

.PHONY: e2e-openclaw openclaw-deps
openclaw-deps:
	sh $(OPENCLAW_DIR)/test/install-deps.sh $(OPENCLAW_DEPS) || \
	  { echo "e2e-openclaw: installing the npm packages failed (is the npm registry reachable?)"; exit 1; }

e2e-openclaw: all openclaw-deps
	CI=true CLARITY_PLUGIN=$(abspath $(BUILD))/libclarity.so CLARITY_OC_DEPS=$(OPENCLAW_DEPS) \
	  $(OPENCLAW_NODE) --test $(OPENCLAW_DIR)/test/abi.test.mjs < /dev/null
	CI=true $(OPENCLAW_NODE) $(OPENCLAW_DIR)/test/run-e2e.mjs --lib $(abspath $(BUILD))/libclarity.so \
	  --deps $(OPENCLAW_DEPS) < /dev/null
