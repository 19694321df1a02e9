# mk/layout.mk: the layout's one rule that a machine can check: no file of
# the product calls into a file that calls it back (tests/layout_check.py;
# CONTRIBUTING.md gives the order).
EXTRA_CHECKS += layout-check

.PHONY: layout-check
layout-check:
	python3 tests/layout_check.py .
