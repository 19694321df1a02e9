# mk/redis.mk: the Redis store backend (store/store_redis.c) when hiredis is
# installed (libhiredis-dev); without it, storage.backend "redis" is refused
# with a config error.  `make check` runs tests/test_redis.c against a real
# redis-server the tests start on 127.0.0.1 (skipped, loudly, without one).
ifneq ($(shell pkg-config --exists hiredis 2>/dev/null && echo yes),)
XCFLAGS += -DCLARITY_WITH_REDIS $(shell pkg-config --cflags hiredis)
LDLIBS += $(shell pkg-config --libs hiredis)
endif

# 4 `clarity serve --store` processes x 64 sessions against one Redis, each
# request of a session to a random process: equal to a serial replay.
ifneq ($(and $(filter -DCLARITY_WITH_REDIS,$(XCFLAGS)),$(shell command -v redis-server)),)
EXTRA_CHECKS += cluster-test
endif
.PHONY: cluster-test
cluster-test: all
	python3 tests/cluster.py --clarity $(abspath $(CLI)) $(CLUSTER_ARGS)
