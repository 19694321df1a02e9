/* testengine.h: an engine of the library's own code (not the .so) for the
 * tests that reach inside it, with a quiet log and a fixed clock. */
#ifndef TESTS_TESTENGINE_H
#define TESTS_TESTENGINE_H

#include "../engine/engine.h"

/* engine_new with config_json; fails the running test when it refuses. */
engine *testengine_open(const char *config_json);
/* The same for a host with those CLARITY_HOST_* flags. */
engine *testengine_open_flags(const char *config_json, uint32_t flags);

#endif
