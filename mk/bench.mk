# Benchmarks: `make check` runs a tiny version of every benchmark (seconds,
# no timing asserted); `make bench` runs them at full size.
EXTRA_CHECKS += bench-smoke
.PHONY: bench-smoke
bench-smoke: all
	$(MAKE) -C bench smoke BUILD=$(abspath $(BUILD))
