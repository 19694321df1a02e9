# mk/reliability.mk: the reliability campaign (issue 10), in the repository.
#   make tsan        the library and the concurrency stress under
#                    ThreadSanitizer (tests/tsan/stress.c; Criterion cannot
#                    start under TSan); TSAN_ARGS=--quick for the short run
#   make crashtest   kill -9 during a `clarity serve` replay, per backend
#                    (tests/crashtest.py); CRASH_KILLS (default 200) kills per
#                    backend, CRASH_SECONDS bounds each backend's time
# make check runs tsan whole (seconds) and crashtest with 20 kills per backend.
EXTRA_CHECKS += tsan crashtest-quick
TSAN_BUILD ?= build-tsan
CRASH_KILLS ?= 200
CRASH_SECONDS ?= 900
# every backend this build has: redis when hiredis and redis-server are here
CRASH_BACKENDS ?= sqlite,sqlite-exclusive,hostkv$(if $(and $(filter -DCLARITY_WITH_REDIS,$(XCFLAGS)),$(shell command -v redis-server)),$(comma)redis)
comma := ,

.PHONY: tsan tsan-quick crashtest crashtest-quick
$(TSAN_BUILD)/tsan_stress: tests/tsan/stress.c tests/testhost.c tests/testhost.h include/clarity.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=thread $(WARN) -Iinclude -o $@ \
	  tests/tsan/stress.c tests/testhost.c $(shell pkg-config --cflags --libs jansson) -ldl -lpthread

tsan: $(TSAN_BUILD)/tsan_stress
	$(MAKE) BUILD=$(TSAN_BUILD) TSAN=1 $(TSAN_BUILD)/libclarity.so
	CLARITY_BUILD=$(TSAN_BUILD) TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" \
	  $(TSAN_BUILD)/tsan_stress $(TSAN_ARGS)

tsan-quick:
	$(MAKE) tsan TSAN_ARGS=--quick

crashtest: all
	python3 tests/crashtest.py --clarity $(abspath $(CLI)) --kills $(CRASH_KILLS) \
	  --seconds $(CRASH_SECONDS) --backend $(CRASH_BACKENDS) $(CRASH_ARGS)

crashtest-quick: all
	python3 tests/crashtest.py --clarity $(abspath $(CLI)) --kills 20 --seconds 300 \
	  --backend $(CRASH_BACKENDS)
