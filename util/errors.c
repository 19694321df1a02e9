/* errors.c: the names of the ABI's return codes, for the plugin's
 * strerror and for hosts that speak of a code the plugin did not name. */
#include "errors.h"

#include "../include/clarity.h"

const char *util_rc_name(int rc)
{
    switch (rc) {
    case CLARITY_OK: return "ok";
    case CLARITY_ERR: return "internal error";
    case CLARITY_EINVAL: return "invalid argument";
    case CLARITY_ENOMEM: return "out of memory";
    case CLARITY_ENOTFOUND: return "not found";
    case CLARITY_DECLINED: return "declined";
    case CLARITY_EVERSION: return "version mismatch";
    case CLARITY_ESTORE: return "store error";
    case CLARITY_ECONFIG: return "configuration refused";
    default: return "unknown error";
    }
}
