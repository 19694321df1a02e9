/* kvlog.h: the write-ahead log that makes the reference host's kv
 * (--host-kv FILE) durable per committed batch.
 *
 * FILE holds a snapshot (JSON, written by atomic rename); FILE.log holds
 * the batches committed since, one record each: "KVL1", the payload's
 * length and CRC-32 (little-endian u32), then its ops (a byte PUT or DEL,
 * then u32-length-prefixed namespace, key and, for PUT, value).  A record
 * is one write at the end of the valid records, so a kill -9 leaves at
 * worst a torn last record, which the reader stops at and the next append
 * overwrites.  Ops set absolute values: replaying a record twice (a crash
 * between a snapshot's rename and the log's reset) changes nothing.
 */
#ifndef CLI_KVLOG_H
#define CLI_KVLOG_H

#include <stddef.h>
#include <sys/types.h>

#include "../util/buf.h"

enum { KVLOG_PUT = 1, KVLOG_DEL = 2 };

typedef struct kvlog_op {
    int type; /* KVLOG_PUT or KVLOG_DEL */
    const char *ns, *key, *val; /* not NUL-terminated; valid during the callback */
    size_t nslen, keylen, vallen;
} kvlog_op;

typedef struct kvlog kvlog;

/* Adds one op to a batch being built (val NULL: a delete). */
void kvlog_add(buf *batch, const char *ns, const char *key, const char *val, size_t len);

/* Applies every whole record of the log at path, in order; a missing log
 * is empty.  *valid gets the length of the whole records (what follows is
 * a torn tail).  apply returns non-zero to fail.  0, or -1 with *err
 * malloc()ed. */
typedef int (*kvlog_apply_fn)(void *ud, const kvlog_op *op);
int kvlog_replay(const char *path, kvlog_apply_fn apply, void *ud, off_t *valid, char **err);

/* Opens (creates) the log for appending after its first `valid` bytes (a
 * torn tail beyond them is cut).  0, or -1 with *err malloc()ed. */
int kvlog_open(const char *path, off_t valid, kvlog **out, char **err);
/* Appends a batch as one record; with sync, fdatasync()s it.  0 or -1
 * (errno set). */
int kvlog_append(kvlog *l, const buf *batch, int sync);
/* Empties the log (after a snapshot holds everything).  0 or -1. */
int kvlog_reset(kvlog *l);
off_t kvlog_size(const kvlog *l);
void kvlog_close(kvlog *l);

#endif
