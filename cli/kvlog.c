/* kvlog.c: the write-ahead log of the reference host's kv (see kvlog.h). */
#include "kvlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REC_MAGIC 0x4b564c31u /* "KVL1" */
#define REC_HEADER 12         /* magic, payload length, CRC-32 of the payload */
#define REC_MAX ((uint32_t)1 << 30)

struct kvlog {
    int fd;
    char *path;
    off_t size; /* bytes of whole records */
};

/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), table made once. */
static uint32_t crc32(const unsigned char *p, size_t n)
{
    static uint32_t table[256];
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static void put_u32(buf *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    buf_append(b, (const char *)x, 4);
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_bytes(buf *b, const char *s, size_t n)
{
    put_u32(b, (uint32_t)n);
    buf_append(b, s, n);
}

void kvlog_add(buf *batch, const char *ns, const char *key, const char *val, size_t len)
{
    buf_putc(batch, val ? KVLOG_PUT : KVLOG_DEL);
    put_bytes(batch, ns, strlen(ns));
    put_bytes(batch, key, strlen(key));
    if (val) put_bytes(batch, val, len);
}

int kvlog_open(const char *path, off_t valid, kvlog **out, char **err)
{
    *out = NULL;
    kvlog *l = calloc(1, sizeof *l);
    if (!l || !(l->path = util_strdup(path))) {
        free(l);
        *err = util_strdup("out of memory");
        return -1;
    }
    l->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    struct stat st;
    if (l->fd < 0 || fstat(l->fd, &st) != 0) {
        *err = util_format("%s: %s", path, strerror(errno));
        kvlog_close(l);
        return -1;
    }
    if (st.st_size > valid && ftruncate(l->fd, valid) != 0) {
        *err = util_format("%s: %s", path, strerror(errno));
        kvlog_close(l);
        return -1;
    }
    l->size = valid;
    *out = l;
    return 0;
}

void kvlog_close(kvlog *l)
{
    if (!l) return;
    if (l->fd >= 0) close(l->fd);
    free(l->path);
    free(l);
}

/* Writes all of p at off, retrying short writes. */
static int pwrite_all(int fd, const char *p, size_t n, off_t off)
{
    while (n) {
        ssize_t w = pwrite(fd, p, n, off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
        off += w;
    }
    return 0;
}

int kvlog_append(kvlog *l, const buf *batch, int sync)
{
    if (!batch->len) return 0;
    if (batch->len > REC_MAX) {
        errno = EFBIG;
        return -1;
    }
    buf rec;
    buf_init(&rec);
    put_u32(&rec, REC_MAGIC);
    put_u32(&rec, (uint32_t)batch->len);
    put_u32(&rec, crc32((const unsigned char *)batch->p, batch->len));
    buf_append(&rec, batch->p, batch->len);
    int rc = -1;
    /* One write at the end of the whole records: a torn tail left by a
     * crash is overwritten, and a reader stops at it. */
    if (!buf_failed(&rec) && pwrite_all(l->fd, rec.p, rec.len, l->size) == 0 &&
        (!sync || fdatasync(l->fd) == 0)) {
        l->size += (off_t)rec.len;
        rc = 0;
    }
    buf_free(&rec);
    return rc;
}

int kvlog_reset(kvlog *l)
{
    if (ftruncate(l->fd, 0) != 0) return -1;
    l->size = 0;
    return 0;
}

off_t kvlog_size(const kvlog *l) { return l->size; }

/* One op of a payload; *p advances.  -1 when malformed. */
static int next_op(const unsigned char **p, const unsigned char *end, kvlog_op *op)
{
    if (*p >= end) return -1;
    op->type = **p;
    (*p)++;
    const char **field[3] = {&op->ns, &op->key, &op->val};
    size_t *lens[3] = {&op->nslen, &op->keylen, &op->vallen};
    int nf = op->type == KVLOG_PUT ? 3 : op->type == KVLOG_DEL ? 2 : 0;
    if (!nf) return -1;
    op->val = NULL;
    op->vallen = 0;
    for (int i = 0; i < nf; i++) {
        if (end - *p < 4) return -1;
        uint32_t n = get_u32(*p);
        *p += 4;
        if ((size_t)(end - *p) < n) return -1;
        *field[i] = (const char *)*p;
        *lens[i] = n;
        *p += n;
    }
    return 0;
}

int kvlog_replay(const char *path, kvlog_apply_fn apply, void *ud, off_t *valid, char **err)
{
    *valid = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        *err = util_format("%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    unsigned char hdr[REC_HEADER];
    off_t off = 0;
    buf pl;
    buf_init(&pl);
    for (;;) {
        if (pread(fd, hdr, REC_HEADER, off) != REC_HEADER || get_u32(hdr) != REC_MAGIC) break;
        uint32_t n = get_u32(hdr + 4), crc = get_u32(hdr + 8);
        buf_reset(&pl);
        if (n > REC_MAX || buf_reserve(&pl, n) != 0) break;
        if (pread(fd, pl.p, n, off + REC_HEADER) != (ssize_t)n) break; /* torn tail */
        if (crc32((const unsigned char *)pl.p, n) != crc) break;
        const unsigned char *p = (const unsigned char *)pl.p, *end = p + n;
        kvlog_op op;
        while (p < end) {
            if (next_op(&p, end, &op) != 0) {
                *err = util_format("%s: malformed record at byte %lld", path, (long long)off);
                rc = -1;
                break;
            }
            if (apply(ud, &op) != 0) {
                *err = util_format("%s: out of memory replaying the log", path);
                rc = -1;
                break;
            }
        }
        if (rc) break;
        off += REC_HEADER + (off_t)n;
        *valid = off;
    }
    buf_free(&pl);
    close(fd);
    return rc;
}
