/* errors.h: one home for what the plugin and the CLI share about errors
 * and defaults, so the two never disagree. */
#ifndef UTIL_ERRORS_H
#define UTIL_ERRORS_H

/* Static text for a CLARITY_* return code ("store error"). */
const char *util_rc_name(int rc);

/* The default state database: $CLARITY_STATE, else
 * $XDG_STATE_HOME/clarity/clarity.db (an absolute XDG_STATE_HOME), else
 * <home>/.local/state/clarity/clarity.db with <home> from $HOME (absolute)
 * or, without it, the user's entry in the password database.  The parent
 * directory is created (0700).  Returns the path (malloc()ed, caller
 * frees), or NULL with *err malloc()ed: no home directory, or the
 * directory cannot be made. */
char *util_default_state_path(char **err);

#endif
