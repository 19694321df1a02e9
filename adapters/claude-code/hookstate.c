/* hookstate.c: per-session state of the Claude Code hooks (see hookstate.h). */
#include "hookstate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../util/buf.h"
#include "../../util/fs.h"
#include "../../cli/jsonconv.h"

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return util_strdup(".");
    if (slash == path) return util_strdup("/");
    return util_strndup(path, (size_t)(slash - path));
}

/* From the config the CLI hands the plugin (cli_config): the plugin's
 * effective storage.backend and storage.path are those, or its "auto"
 * default, so no plugin need be loaded to find the state's directory. */
char *hookstate_dir(cli *c)
{
    char *base = NULL;
    const char *text = cli_config(c);
    json_t *cfg = text ? json_loads(text, 0, NULL) : NULL;
    if (cfg) {
        json_t *storage = json_object_get(cfg, "storage");
        const char *backend = json_string_value(json_object_get(storage, "backend"));
        const char *path = json_string_value(json_object_get(storage, "path"));
        int file = !backend || strcmp(backend, "auto") == 0 || strcmp(backend, "sqlite") == 0;
        if (c->kv_path && (!backend || strcmp(backend, "auto") == 0 || strcmp(backend, "host") == 0))
            base = dir_of(c->kv_path);
        else if (file && path && *path)
            base = dir_of(path);
        json_decref(cfg);
    }
    buf b;
    buf_init(&b);
    if (base) {
        buf_printf(&b, "%s/claude-code", base);
    } else {
        const char *tmp = getenv("TMPDIR");
        buf_printf(&b, "%s/clarity-%u/claude-code", tmp && *tmp ? tmp : "/tmp", (unsigned)getuid());
    }
    free(base);
    return buf_steal(&b, NULL);
}

char *hookstate_filename(const char *session)
{
    buf b;
    buf_init(&b);
    for (const unsigned char *p = (const unsigned char *)session; *p; p++) {
        int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                 *p == '-' || *p == '_' || (*p == '.' && p != (const unsigned char *)session);
        if (ok) buf_putc(&b, (char)*p);
        else buf_printf(&b, "%%%02X", *p);
    }
    buf_puts(&b, ".json");
    return buf_steal(&b, NULL);
}

static char *errf2(const char *what, const char *path)
{
    buf b;
    buf_init(&b);
    buf_printf(&b, "%s %s: %s", what, path, strerror(errno));
    return buf_steal(&b, NULL);
}

static void load(hookstate *st)
{
    struct stat sb;
    if (fstat(st->fd, &sb) != 0 || sb.st_size <= 0 || sb.st_size > (16 << 20)) return;
    char *text = malloc((size_t)sb.st_size);
    if (!text) return;
    ssize_t n = pread(st->fd, text, (size_t)sb.st_size, 0);
    json_t *root = n > 0 ? json_loadb(text, (size_t)n, 0, NULL) : NULL;
    free(text);
    if (!json_is_object(root)) {
        json_decref(root); /* unreadable: start over */
        return;
    }
    const char *t = json_string_value(json_object_get(root, "transcript"));
    json_t *off = json_object_get(root, "offset");
    if (t && json_is_integer(off) && json_integer_value(off) >= 0) {
        st->transcript = util_strdup(t);
        st->offset = st->transcript ? (long long)json_integer_value(off) : -1;
    }
    json_t *pend = json_object_get(root, "pending");
    if (json_is_array(pend)) {
        json_decref(st->pending);
        st->pending = json_incref(pend);
    }
    st->stop_pending = json_is_true(json_object_get(root, "stopPending"));
    const char *last = json_string_value(json_object_get(root, "lastMessage"));
    if (st->stop_pending && last) st->last_message = util_strdup(last);
    json_decref(root);
}

int hookstate_open(hookstate *st, const char *dir, const char *session, char **err)
{
    memset(st, 0, sizeof *st);
    st->fd = -1;
    st->offset = -1;
    st->pending = json_array();
    char *name = hookstate_filename(session);
    if (!st->pending || !name) {
        free(name);
        *err = util_strdup("out of memory");
        return -1;
    }
    buf b;
    buf_init(&b);
    buf_printf(&b, "%s/%s", dir, name);
    free(name);
    st->path = buf_steal(&b, NULL);
    if (!st->path) {
        *err = util_strdup("out of memory");
        return -1;
    }
    if (util_mkdirs(dir, 0700) != 0) {
        *err = errf2("cannot create", dir);
        return -1;
    }
    st->fd = open(st->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (st->fd < 0) {
        *err = errf2("cannot open", st->path);
        return -1;
    }
    while (flock(st->fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            *err = errf2("cannot lock", st->path);
            return -1;
        }
    }
    load(st);
    return 0;
}

int hookstate_save(hookstate *st)
{
    if (st->fd < 0) {
        errno = EBADF;
        return -1;
    }
    json_t *root = json_object();
    if (!root) return -1;
    json_object_set_new(root, "v", json_integer(1));
    if (st->transcript && st->offset >= 0) {
        json_object_set_new(root, "transcript", json_string(st->transcript));
        json_object_set_new(root, "offset", json_integer(st->offset));
    }
    json_object_set_new(root, "pending", st->pending ? json_incref(st->pending) : json_array());
    if (st->stop_pending) {
        json_object_set_new(root, "stopPending", json_true());
        if (st->last_message) json_object_set_new(root, "lastMessage",
                                json_string_lossy(st->last_message, strlen(st->last_message)));
    }
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!text) return -1;
    size_t len = strlen(text);
    int rc = ftruncate(st->fd, 0) == 0 && pwrite(st->fd, text, len, 0) == (ssize_t)len ? 0 : -1;
    free(text);
    return rc;
}

void hookstate_close(hookstate *st)
{
    if (st->fd >= 0) close(st->fd); /* releases the lock */
    st->fd = -1;
    free(st->path);
    free(st->transcript);
    free(st->last_message);
    json_decref(st->pending);
    st->path = st->transcript = st->last_message = NULL;
    st->pending = NULL;
}
