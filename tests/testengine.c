/* testengine.c: see testengine.h. */
#include "testengine.h"

#include <criterion/criterion.h>
#include <string.h>

static void quiet(void *ud, int level, const char *msg) { (void)ud, (void)level, (void)msg; }
static int64_t clock0(void *ud) { return (void)ud, 1700000000000; }

engine *testengine_open(const char *config_json) { return testengine_open_flags(config_json, 0); }

engine *testengine_open_flags(const char *config_json, uint32_t flags)
{
    clarity_host h;
    memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    h.abi_version = CLARITY_ABI_VERSION;
    h.log = quiet;
    h.now_ms = clock0;
    h.flags = flags;
    engine *e = NULL;
    char *err = NULL;
    cr_assert_eq(engine_new(&h, config_json, &e, &err), CLARITY_OK, "%s", err ? err : "");
    return e;
}
