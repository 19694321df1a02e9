/* hostcall.c: the services the host lends the engine (log, clock), with
 * their fallbacks; every other engine file may use them. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "engine.h"

void engine_log(const engine *e, int level, const char *fmt, ...)
{
    if (!e->host.log) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    e->host.log(e->host.ud, level, msg);
}

int64_t engine_now_ms(const engine *e)
{
    if (e->host.now_ms) return e->host.now_ms(e->host.ud);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
