# clarity eval: the metric code (cli/evalmetrics.c, cli/evalbudget.c) is
# unit-tested without the plugin, so tests/test_eval links it besides the
# usual test support.
$(BUILD)/tests/test_eval: $(BUILD)/obj/cli/evalmetrics.o $(BUILD)/obj/cli/evalbudget.o
$(BUILD)/tests/test_eval: TEST_SUP_OBJ += $(BUILD)/obj/cli/evalmetrics.o $(BUILD)/obj/cli/evalbudget.o
