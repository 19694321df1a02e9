/* statepath.c: the default state database of the plugin and the CLI. */
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "errors.h"
#include "fs.h"

/* The user's home: $HOME when absolute, else the password database's. */
static const char *home_dir(void)
{
    const char *home = getenv("HOME");
    if (home && home[0] == '/') return home;
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}

char *util_default_state_path(char **err)
{
    *err = NULL;
    const char *env = getenv("CLARITY_STATE"), *xdg = getenv("XDG_STATE_HOME"), *home;
    char *path;
    if (env && *env) path = util_strdup(env);
    else if (xdg && xdg[0] == '/') path = util_format("%s/clarity/clarity.db", xdg);
    else if ((home = home_dir())) path = util_format("%s/.local/state/clarity/clarity.db", home);
    else {
        *err = util_strdup("no home directory for the default state database: set "
                           "storage.path or CLARITY_STATE (--state DB for the CLI)");
        return NULL;
    }
    if (!path) {
        *err = util_strdup("out of memory");
        return NULL;
    }
    if (util_mkdir_parents(path, 0700) != 0) {
        *err = util_format("cannot create the directory of %s: %s", path, strerror(errno));
        free(path);
        return NULL;
    }
    return path;
}
