/* asm_impl.h: the per-session state of assemble.c and asmcache.c. */
#ifndef ENGINE_ASM_IMPL_H
#define ENGINE_ASM_IMPL_H

#include <stdint.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "../include/clarity.h"
#include "assemble.h"
#include "engine.h"

/* What clarity found in one host message (computed once per id and
 * content). */
typedef struct amsg {
    char *id;           /* host id; owned, hash key */
    uint64_t fp;        /* fingerprint of role, text, arguments: a change re-reads it */
    int64_t tokens;     /* of the content as the host sent it */
    int64_t arg_tokens; /* of the tool-call arguments */
    uint64_t *cands;    /* sorted hashes of every id the message could name */
    size_t n_cands;
    char *file;         /* the file its tool call names ("file:..."), or NULL */
    int keep;           /* matches assemble.keep */
    uint64_t seen;      /* the last call (generation) that held it */
    UT_hash_handle hh;
} amsg;

/* A decision in force: this message is replaced by text. */
typedef struct astub {
    char *id;      /* host id; owned, hash key */
    char *item;    /* the item it was about, or NULL */
    int64_t turn;  /* the session's turn when decided */
    int64_t mentions; /* the item's mentionCount then (0: untracked): one more revives */
    int64_t tokens; /* of the original */
    uint64_t fp;   /* the original's fingerprint (0: unknown, stored before 0.2) */
    double score;
    char *text;    /* the replacement, fixed when decided */
    int drop;      /* dropped rather than stubbed */
    UT_hash_handle hh;
} astub;

struct asm_state {
    amsg *msgs;
    astub *stubs;
    uint64_t gen;
    int64_t batch;
    int loaded;    /* the stubs were read from the store */
    buf last;      /* the last result, without the block */
};

/* ---- asmcache.c ---- */
uint64_t asm_hash(const char *s, size_t n);
/* The cached message for m (read when new or changed); NULL out of memory,
 * or with *dup set when this call (gen) already had a message of that id. */
amsg *asm_message(engine *e, session *s, const clarity_ctx_message *m, uint64_t gen, int *dup);
/* Forgets messages the last call did not hold, and their stubs. */
void asm_forget_unseen(asm_state *st);
int asm_has(const amsg *m, uint64_t h);
/* The session's state, created and loaded from the store on first use. */
asm_state *asm_state_of(engine *e, session *s);
/* Writes the stubs in force (key "asm" of the session). */
int asm_save(engine *e, session *s);
void asm_stub_free(astub *t);

#endif
