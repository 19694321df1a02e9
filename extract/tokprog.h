/* tokprog.h: path programs, and the emitter's store of them (tokprog.c).
 *
 * The file ids a path-like token stands for (candidates.c,
 * emit_path_forms) depend on its bytes and on the call's workspace, and
 * which of them are emitted depends on the name filter's answers, which
 * change as items are tracked.  Normalizing the path and building its ids
 * costs about a thousand instructions; finding a kept program and asking
 * the filter, about 150.
 * So the first is done once into a program: what to ask the filter
 * about and the ids to emit when it passes, with their hashes.  Running it emits
 * exactly what building the forms afresh did, and the emitter keeps
 * programs from call to call, since an agent names the same files turn
 * after turn.
 *
 * Program (host byte order; written and read only in this process):
 *   u32 length and the bytes of the normalized path, then its u64 name
 *       hash (the filter holding it or one of its tails opens the ids)
 *   u32 the path's kind (ex_file_id; FILE_NONE also when its canonical
 *       id is not the first id: the files passes take that one alone)
 *   u32 ids, each its u64 name_id_hash, its u32 ex_sset_hash_bytes, u32
 *       length and its bytes (CAT_FILE)
 */
#ifndef EXTRACT_TOKPROG_H
#define EXTRACT_TOKPROG_H

#include <stddef.h>
#include <stdint.h>

/* The store: a ring of path bytes and programs, found through an index
 * by the path's hash, two entries a set.  With 2,048 entries of one, the
 * paths of a session that shared an entry took it from each other, each
 * build pushing the ring round: a 1,000-item stream (about 740 distinct
 * paths) built 6 of a turn's 36 path tokens again, where it now builds
 * 2.5, nearly all first sights (`make -C bench compare`).  A new
 * program overwrites the oldest bytes, and an index entry whose bytes
 * were overwritten is stale (its start is more than the ring's size behind
 * the ring's head).
 * Allocated on first use (224 KiB); an emitter without memory for it
 * builds every path's forms again. */
#define EX_TP_INDEX 4096             /* entries (power of two) */
#define EX_TP_RING ((size_t)1 << 17) /* bytes of paths and programs */
#define EX_TP_MAX (EX_TP_RING / 16)  /* larger ones are not kept */

typedef struct ex_tp_ent {
    uint64_t at;      /* where its path starts, counted from the ring's first byte ever written */
    uint64_t ws;      /* the workspace it was built for (ex_tp_ws_key) */
    uint32_t hash;    /* the path's hash (ex_sset_hash_bytes) */
    uint32_t keylen;  /* path bytes, its program after them; 0: an empty entry */
} ex_tp_ent;

typedef struct ex_tp_store {
    ex_tp_ent *index;
    unsigned char *ring;
    uint64_t head; /* where the next path goes, in ring-lifetime bytes */
} ex_tp_store;

/* The program kept for the path t[0, n) (hash h) in the workspace of key
 * ws, or NULL. */
const unsigned char *ex_tp_find(const ex_tp_store *s, const char *t, size_t n, uint32_t h, uint64_t ws);
/* Starts loading the index entry of hash h into the caches. */
static inline void ex_tp_prefetch(const ex_tp_store *s, uint32_t h)
{
    if (s->index) __builtin_prefetch(&s->index[h & (EX_TP_INDEX - 1)]);
}
/* Keeps prog[0, len) as the path's program (nothing when it is too large
 * or there is no memory). */
void ex_tp_keep(ex_tp_store *s, const char *t, size_t n, uint32_t h, uint64_t ws, const unsigned char *prog,
                size_t len);
void ex_tp_free(ex_tp_store *s);

/* The key of a normalized workspace (NULL: none): a program built for one
 * is run only for the same one.  64 bits of a seeded hash, 0 for none. */
uint64_t ex_tp_ws_key(uint64_t seed, const char *ws, size_t n);

#endif
