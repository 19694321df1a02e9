/* hostsvc.h: the services the reference gateway lends the plugin.
 *
 *   log     to stderr, "clarity: <level>: <msg>", filtered by a threshold
 *           (CLARITY_LOG_WARN by default, DEBUG with --verbose, ERROR with
 *           --quiet).
 *   now_ms  CLOCK_REALTIME in milliseconds.
 *   kv      optional (--host-kv FILE): an in-memory uthash table guarded by
 *           a mutex.  FILE is a snapshot, written atomically (temp file +
 *           fsync + rename) by hostsvc_save() at exit and whenever the log
 *           outgrows it; FILE.log (kvlog.h) gets every committed batch (a
 *           kv_commit, or a put/del outside one) before the call returns,
 *           so a kill -9 loses nothing acknowledged, as with the plugin's
 *           SQLite store (WAL, synchronous=NORMAL: written, not fsync'd per
 *           turn; a torn last record is ignored).  A batch the log cannot
 *           take is undone and the commit fails.  FILE.lock keeps a second
 *           process out while one has the kv open.  Snapshot shape:
 *           {"<ns>": {"<key>": "<value>" | {"base64": "<bytes>"}}}; values
 *           that are not valid UTF-8 use the base64 form.
 *           kv_begin/kv_commit/kv_rollback keep a per-thread undo log so a
 *           failed turn is rolled back.
 *           Without --host-kv the kv members stay NULL and the plugin uses
 *           its embedded SQLite store.
 */
#ifndef CLI_HOSTSVC_H
#define CLI_HOSTSVC_H

#include <stdarg.h>

#include "../include/clarity.h"

typedef struct hostsvc hostsvc;

/* Creates the services.  kv_path NULL = no host kv.  A missing kv file is
 * an empty store; a malformed one is an error (nothing is overwritten).
 * Returns 0, or -1 with *err malloc()ed. */
int hostsvc_new(int log_threshold, const char *kv_path, hostsvc **out, char **err);
/* Fills a clarity_host table (struct_size, abi_version, ud and services). */
void hostsvc_fill(hostsvc *h, clarity_host *host);
/* Writes the kv file when it changed (or does not exist yet).  Returns 0,
 * or -1 with a message already logged. */
int hostsvc_save(hostsvc *h);
void hostsvc_free(hostsvc *h);

/* Host-side logging through the same threshold. */
void hostsvc_log(hostsvc *h, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int hostsvc_log_enabled(const hostsvc *h, int level);

#endif
